//! The classic engines, over a validated [`Program`](crate::Program):
//!
//! - [`interp`]: the fast interpreter (pre-decoded ops, compare chains),
//!   the reference oracle for the converter;
//! - [`trace`]: a plain step-by-step interpreter over the raw
//!   instructions that reports each one (the fast path's check);
//! - [`plain`]: the kernel's `sk_run_filter()` of Linux 3.14, modelled
//!   for like-for-like cost.
//!
//! The contexts they read are [`crate::uapi`]'s; how a run reads them is
//! `context`'s, shared by `interp` and `trace`.

mod context;
pub mod interp;
pub mod plain;
pub mod trace;

use crate::validate::Mode;

/// Why a run could not start. A program's own outcome (a seccomp KILL, a
/// packet load out of range returning 0) is never an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The program was validated for one kernel entry point and run with the
    /// context of the other (seccomp programs contain the seccomp-only 0x21
    /// load; socket programs read packets).
    #[error("program was validated in {program} mode but run with a {context} context")]
    ModeMismatch { program: Mode, context: Mode },
}

/// Every engine's first check (the fast, plain and tracing interpreters):
/// a program validated in mode `program` runs only on a context of that
/// mode (`context`).
#[inline]
pub(crate) fn expect_mode(program: Mode, context: Mode) -> Result<(), ExecError> {
    if program == context {
        Ok(())
    } else {
        Err(ExecError::ModeMismatch { program, context })
    }
}
