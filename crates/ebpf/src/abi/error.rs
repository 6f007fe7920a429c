//! Why a run stops without a result: [`ExecError`] (the interpreters'),
//! [`HelperError`] (a helper's, wrapped in [`ExecError::Helper`]) and the
//! [`Access`] that faulted.

use crate::isa::insn::Pc;

/// Why a run stopped without a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    #[error("pc {pc}: {access} of {size} bytes at {addr:#x} is outside every memory region")]
    OutOfBounds { pc: Pc, addr: u64, size: usize, access: Access },
    #[error("pc {pc}: store of {size} bytes at {addr:#x} targets a read-only region")]
    ReadOnly { pc: Pc, addr: u64, size: usize },
    #[error("pc {pc}: step budget of {budget} instructions exhausted")]
    StepBudgetExceeded { pc: Pc, budget: u64 },
    #[error("pc {pc}: local call exceeds {max} stack frames")]
    CallDepthExceeded { pc: Pc, max: usize },
    #[error("pc {pc}: execution fell off the end of the program")]
    FellOffEnd { pc: Pc },
    #[error("pc {pc}: helper {id}: {source}")]
    Helper { pc: Pc, id: i64, source: HelperError },
    #[error("pc {pc}: callx to {id}, which is not a registered helper")]
    UnknownHelper { pc: Pc, id: u64 },
    #[error("input region of {len} bytes exceeds the 4 GiB region limit")]
    InputTooLarge { len: usize },
}

/// Kind of a faulting memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Load,
    Store,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Load => "load",
            Access::Store => "store",
        })
    }
}

/// Why a helper could not complete (the program stops with
/// [`ExecError::Helper`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HelperError {
    #[error("this run has no socket buffer")]
    NoSkb,
    #[error("access of {size} bytes at {addr:#x} is outside every memory region")]
    BadAccess { addr: u64, size: usize },
}
