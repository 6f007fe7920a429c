//! Loading an eBPF program: structural checks (`check`), then
//! pre-decoding into the general interpreter's internal form (`ir`: one
//! `Step` per slot) and load-time superinstructions (`fuse`).
//!
//! [`crate::vm::Program::load`] is the only way to make a program; it runs
//! these checks first, so every engine ([`crate::exec`]) relies on
//! everything checked here and none decodes at run time.
//!
//! # Invariants enforced at load
//!
//! Every one is reported as a [`LoadError`] naming the offending `pc`:
//! - the program is not empty and has at most [`MAX_INSNS`] slots;
//! - every opcode is one the kernel's interpreter (or RFC 9669) defines: see
//!   [`OpError::UnknownOpcode`]; the verifier-internal `JCOND` (may_goto),
//!   `BPF_TAIL_CALL`, `BPF_CALL_ARGS` and `BPF_PROBE_*` encodings are refused;
//! - every register a used field names is `r0`..=`r10`, and no instruction
//!   writes `r10` (the frame pointer), including atomic fetches into `src`;
//! - `ld_imm64` has its second slot, whose `code`, registers and `off` are 0,
//!   and no jump or call lands on that second slot;
//! - jump and local-call targets lie inside the program;
//! - helper calls name an id registered in the [`Helpers`] given to `load`;
//! - sub-fields with a meaning are valid: `off` of DIV/MOD is 0 or 1, `off` of
//!   `MOV X` is 0, 8, 16 (or 32 for ALU64), `imm` of END is 16/32/64, `imm` of
//!   an atomic is one of the defined operations for its size.
//!
//! Fields that RFC 9669 reserves (must be zero) are ignored by default,
//! because converted cBPF carries the kernel's junk in them (`src = r7` and
//! `imm = k` on ALU instructions whatever their source); with
//! [`LoadOptions::strict`] they are checked as RFC 9669 §3 requires.
//!
//! Falling off the end of the program is not checked here (the verifier
//! would); the interpreter reports it as an error when it happens.

pub(crate) mod check;
pub(crate) mod fuse;
pub(crate) mod ir;

use crate::abi::helpers::{HelperFn, Helpers};
use crate::isa::insn::{Insn, Pc};
use crate::isa::op::{self as isa, OpError};
use crate::load::check::Decoder;
use crate::load::ir::{ChainEntry, EqEntry, LoadCmp, Step, StepKind, ZERO_REG};

/// Largest program accepted, in slots (the verifier's
/// `BPF_COMPLEXITY_LIMIT_INSNS`).
pub const MAX_INSNS: usize = 1_000_000;

/// How strictly [`crate::vm::Program::load`] checks reserved fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Reject non-zero reserved fields as RFC 9669 §3 defines them (and the
    /// non-RFC `callx` and pseudo `ld_imm64` forms). Off by default, because
    /// converted cBPF carries the kernel's copied junk in those fields.
    pub strict: bool,
    /// Fuse runs of compare-and-branch instructions on one register into a
    /// single dispatch (still executing every instruction's semantics in
    /// order). On by default; off is useful to measure the gain. Off also
    /// turns off the dedicated executor for converted seccomp filters
    /// (`crate::exec::seccomp`), so every run takes the general path.
    pub no_superinstructions: bool,
}

/// Why a program was refused at load time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    #[error("empty program: no instructions")]
    Empty,
    #[error("program has {len} instructions, more than the limit of {max}")]
    TooLong { len: usize, max: usize },
    /// The instruction does not decode ([`OpError`]: the opcode, offset,
    /// immediate or call kind it carries, or a broken `ld_imm64` pair; for
    /// a bad second slot, `pc` is that slot's).
    #[error("pc {pc}: {op}")]
    Decode { pc: Pc, op: OpError },
    #[error("pc {pc}: invalid register r{reg}")]
    BadRegister { pc: Pc, reg: u8 },
    #[error("pc {pc}: instruction writes the read-only frame pointer r10")]
    WritesFramePointer { pc: Pc },
    #[error("pc {pc}: jump target {target} is outside the program")]
    JumpOutOfRange { pc: Pc, target: i64 },
    #[error("pc {pc}: jump target {target} is the second slot of an ld_imm64")]
    JumpIntoLdImm64 { pc: Pc, target: usize },
    #[error("pc {pc}: call to unknown helper {id}")]
    UnknownHelper { pc: Pc, id: i32 },
    #[error("pc {pc}: reserved field {field} is not zero")]
    ReservedField { pc: Pc, field: &'static str },
}

/// A program after the structural checks, pre-decoded (and, unless
/// [`LoadOptions::no_superinstructions`], fused): what the general
/// interpreter ([`crate::exec::general`]) runs.
#[derive(Debug, Clone)]
pub(crate) struct Decoded {
    pub(crate) steps: Box<[Step]>,
    pub(crate) chain: Box<[ChainEntry]>,
    pub(crate) eq: Box<[EqEntry]>,
    pub(crate) load_cmp: Box<[LoadCmp]>,
    pub(crate) helpers: Box<[(i32, HelperFn)]>,
    /// Number of pcs whose step is a superinstruction.
    pub(crate) fused: usize,
}

/// Checks `insns` (see the module docs for every rule) and pre-decodes
/// them; `helpers` resolves `call imm` helper ids.
pub(crate) fn decode(insns: &[Insn], opts: &LoadOptions, helpers: &Helpers) -> Result<Decoded, LoadError> {
    if insns.is_empty() {
        return Err(LoadError::Empty);
    }
    if insns.len() > MAX_INSNS {
        return Err(LoadError::TooLong { len: insns.len(), max: MAX_INSNS });
    }
    let len = insns.len();
    // Second slots of ld_imm64, and broken pairs refused before any other
    // check, as the verifier's resolve_pseudo_ldimm64() does before
    // do_check() reads an instruction's fields.
    let mut second = vec![false; len];
    let mut i = 0;
    while let Some(&insn) = insns.get(i) {
        if isa::Op::is_wide(insn) {
            match isa::Op::decode_at(insns, i) {
                Err(op @ OpError::IncompleteLdImm64) => return Err(LoadError::Decode { pc: Pc(i), op }),
                Err(op @ OpError::BadLdImm64SecondSlot) => return Err(LoadError::Decode { pc: Pc(i + 1), op }),
                _ => {}
            }
            if let Some(s) = second.get_mut(i + 1) {
                *s = true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    let table: Box<[(i32, HelperFn)]> = helpers.entries().to_vec().into_boxed_slice();
    let cx = Decoder { insns, second: &second, opts, helpers: &table };
    let mut steps = Vec::with_capacity(len);
    for (pc, insn) in insns.iter().enumerate() {
        if second.get(pc).copied().unwrap_or(false) {
            // Never executed: jumps cannot land here and ld_imm64 skips it.
            steps.push(Step { kind: StepKind::Ja, dst: 0, src: ZERO_REG, size: 0, a: pc as u32 + 1, imm: 0 });
            continue;
        }
        steps.push(cx.decode(pc, *insn)?);
    }
    let mut decoded = Decoded {
        steps: steps.into_boxed_slice(),
        chain: Box::new([]),
        eq: Box::new([]),
        load_cmp: Box::new([]),
        helpers: table,
        fused: 0,
    };
    if !opts.no_superinstructions {
        fuse::fuse(&mut decoded);
    }
    Ok(decoded)
}
