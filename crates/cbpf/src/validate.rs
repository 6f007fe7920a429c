//! Kernel-exact validation of classic programs.
//!
//! [`validate`] is the only way to make a [`Program`]; everything downstream
//! (converter, interpreters, analysis) relies on what it checked:
//!
//! 1. `bpf_check_basics_ok()`: 1 ..= 4096 instructions.
//! 2. `bpf_check_classic()` (net/core/filter.c), first failure wins:
//!    - every code is one of the 49 of `chk_code_allowed()`;
//!    - `div #0` / `mod #0` are rejected;
//!    - `lsh #k` / `rsh #k` with `k >= 32` are rejected;
//!    - `M[k]` accesses (`ld/ldx M[k]`, `st`, `stx`) need `k < 16`;
//!    - `ja k` lands inside the program (`k < len - pc - 1`);
//!    - conditional jumps land inside the program (`pc + 1 + jt/jf < len`);
//!    - `ld{,h,b} [k]` with `k >= SKF_AD_OFF` must name one of the 16 ancillary loads;
//!    - the last instruction is `ret #k` or `ret a`;
//!    - `check_load_and_stores()`: no `M[k]` read before a write on every path,
//!      with the kernel's quirk that `ret` does not reset the running state.
//! 3. In [`Mode::Seccomp`], `seccomp_check_filter()` (kernel/seccomp.c): only 41
//!    opcodes; `ld [k]` needs `k < 64` and `k % 4 == 0` and is rewritten to the
//!    internal `LDX|W|ABS` (0x21); `ld len` / `ldx len` become `ld #64` / `ldx #64`.

use crate::insn::{Insn, Pc};
use crate::opcode::*;

/// Which kernel entry point the program is checked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// `seccomp(SECCOMP_SET_MODE_FILTER)`: `bpf_check_classic` + `seccomp_check_filter`.
    #[default]
    Seccomp,
    /// `SO_ATTACH_FILTER`: `bpf_check_classic` only.
    Socket,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Seccomp => "seccomp",
            Mode::Socket => "socket",
        })
    }
}

/// Why the kernel would refuse a classic program. Every variant names the
/// kernel function that refuses it and, where there is one, the instruction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValidateError {
    #[error("bpf_check_basics_ok: program has no instructions")]
    Empty,
    #[error("bpf_check_basics_ok: {len} instructions exceed BPF_MAXINSNS (4096)")]
    TooLong { len: usize },
    #[error("insn {pc}: chk_code_allowed: unknown opcode {code:#06x}")]
    UnknownOpcode { pc: Pc, code: u16 },
    #[error("insn {pc}: bpf_check_classic: division or modulo by constant 0")]
    DivByZero { pc: Pc },
    #[error("insn {pc}: bpf_check_classic: shift by {k} (must be < 32)")]
    ShiftTooLarge { pc: Pc, k: u32 },
    #[error("insn {pc}: bpf_check_classic: scratch index M[{k}] out of range (must be < 16)")]
    MemIndex { pc: Pc, k: u32 },
    #[error("insn {pc}: bpf_check_classic: jump target {target} past the last instruction {last}")]
    JumpOutOfRange { pc: Pc, target: u64, last: usize },
    #[error("insn {pc}: bpf_check_classic: ancillary offset {k:#x} is not a known SKF_AD_* load")]
    BadAncillary { pc: Pc, k: u32 },
    #[error("insn {pc}: bpf_check_classic: last instruction is not ret (code {code:#06x})")]
    NoFinalRet { pc: Pc, code: u16 },
    #[error("insn {pc}: check_load_and_stores: M[{k}] may be read before it is written")]
    UninitMem { pc: Pc, k: u32 },
    #[error("insn {pc}: seccomp_check_filter: opcode {code:#06x} not allowed in seccomp filters")]
    SeccompOpcode { pc: Pc, code: u16 },
    #[error("insn {pc}: seccomp_check_filter: load offset {k} outside struct seccomp_data or not 4-byte aligned")]
    SeccompLoad { pc: Pc, k: u32 },
}

impl ValidateError {
    /// The instruction the error is about, if any.
    pub fn pc(&self) -> Option<Pc> {
        match *self {
            ValidateError::Empty | ValidateError::TooLong { .. } => None,
            ValidateError::UnknownOpcode { pc, .. }
            | ValidateError::DivByZero { pc }
            | ValidateError::ShiftTooLarge { pc, .. }
            | ValidateError::MemIndex { pc, .. }
            | ValidateError::JumpOutOfRange { pc, .. }
            | ValidateError::BadAncillary { pc, .. }
            | ValidateError::NoFinalRet { pc, .. }
            | ValidateError::UninitMem { pc, .. }
            | ValidateError::SeccompOpcode { pc, .. }
            | ValidateError::SeccompLoad { pc, .. } => Some(pc),
        }
    }
}

/// A classic program the kernel would accept. Only [`validate`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    insns: Vec<Insn>,
    original: Vec<Insn>,
    mode: Mode,
}

impl Program {
    /// The instructions as the kernel keeps them after checking: in seccomp
    /// mode with `seccomp_check_filter()`'s rewrites applied (0x20 → 0x21,
    /// `len` → `#64`). This is what the converter and interpreters run.
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// The instructions exactly as given (the kernel's `fp->orig_prog`); what
    /// the constant-action cache emulator reads, and what encoders print.
    pub fn original(&self) -> &[Insn] {
        &self.original
    }

    /// The mode the program was checked for.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Number of instructions (1 ..= 4096).
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    /// Always false: a validated program has at least one instruction.
    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }
}

/// Validates `insns` as the kernel does for `mode`.
///
/// Mirrors `bpf_prog_create_from_user()` → `bpf_check_basics_ok()` →
/// `bpf_check_classic()` → (seccomp) `seccomp_check_filter()` (Linux 6.18).
///
/// # Deviations
/// None in accept/reject decisions. Where several instructions are bad the
/// kernel reports only `-EINVAL`; we report the first, in the kernel's order.
pub fn validate(insns: &[Insn], mode: Mode) -> Result<Program, ValidateError> {
    check_basics(insns)?;
    check_classic(insns)?;
    let mut rewritten = insns.to_vec();
    if mode == Mode::Seccomp {
        seccomp_check_filter(&mut rewritten)?;
    }
    Ok(Program { insns: rewritten, original: insns.to_vec(), mode })
}

/// `bpf_check_basics_ok()` (net/core/filter.c): `1 <= len <= BPF_MAXINSNS`.
fn check_basics(insns: &[Insn]) -> Result<(), ValidateError> {
    if insns.is_empty() {
        return Err(ValidateError::Empty);
    }
    if insns.len() > BPF_MAXINSNS {
        return Err(ValidateError::TooLong { len: insns.len() });
    }
    Ok(())
}

/// `bpf_anc_helper()` recognition (include/linux/filter.h): is `k` one of the
/// 16 `SKF_AD_OFF + x` ancillary offsets?
pub fn is_ancillary(k: u32) -> bool {
    let Some(x) = k.checked_sub(SKF_AD_OFF) else { return false };
    x < SKF_AD_MAX && x % 4 == 0
}

/// `bpf_check_classic()` (net/core/filter.c), in the kernel's order of checks.
///
/// # Deviations
/// None.
fn check_classic(insns: &[Insn]) -> Result<(), ValidateError> {
    let len = insns.len();
    for (i, insn) in insns.iter().enumerate() {
        let pc = Pc(i);
        if !is_allowed(insn.code) {
            return Err(ValidateError::UnknownOpcode { pc, code: insn.code });
        }
        let k = insn.k;
        match insn.code {
            ALU_DIV_K | ALU_MOD_K if k == 0 => return Err(ValidateError::DivByZero { pc }),
            ALU_LSH_K | ALU_RSH_K if k >= 32 => return Err(ValidateError::ShiftTooLarge { pc, k }),
            LD_MEM | LDX_MEM | ST | STX if k >= BPF_MEMWORDS => return Err(ValidateError::MemIndex { pc, k }),
            // The kernel compares `k >= (u32)(flen - pc - 1)`.
            JMP_JA if u64::from(k) >= (len - i - 1) as u64 => {
                return Err(ValidateError::JumpOutOfRange { pc, target: i as u64 + 1 + u64::from(k), last: len - 1 });
            }
            JMP_JEQ_K | JMP_JEQ_X | JMP_JGE_K | JMP_JGE_X | JMP_JGT_K | JMP_JGT_X | JMP_JSET_K | JMP_JSET_X => {
                for off in [insn.jt, insn.jf] {
                    let target = i + 1 + usize::from(off);
                    if target >= len {
                        return Err(ValidateError::JumpOutOfRange { pc, target: target as u64, last: len - 1 });
                    }
                }
            }
            LD_W_ABS | LD_H_ABS | LD_B_ABS if !is_ancillary(k) && k >= SKF_AD_OFF => {
                return Err(ValidateError::BadAncillary { pc, k });
            }
            _ => {}
        }
    }
    let last_pc = len - 1;
    let last = insns.get(last_pc).copied().unwrap_or_default();
    if last.code != RET_K && last.code != RET_A {
        return Err(ValidateError::NoFinalRet { pc: Pc(last_pc), code: last.code });
    }
    check_load_and_stores(insns)
}

/// `check_load_and_stores()` (net/core/filter.c): forward data flow of which
/// scratch words are written on every path into each instruction.
///
/// # Deviations
/// None. Like the kernel, `ret` does not reset the running mask, so the state
/// falling "through" a `ret` is intersected into the next instruction.
fn check_load_and_stores(insns: &[Insn]) -> Result<(), ValidateError> {
    let mut masks = vec![0xffffu16; insns.len()];
    let mut memvalid: u16 = 0;
    for (i, insn) in insns.iter().enumerate() {
        if let Some(m) = masks.get(i) {
            memvalid &= *m;
        }
        // k < 16 for all memory instructions was checked by check_classic.
        let bit = 1u16.checked_shl(insn.k).unwrap_or(0);
        let mut and_at = |target: usize, valid: u16| {
            if let Some(m) = masks.get_mut(target) {
                *m &= valid;
            }
        };
        match insn.code {
            ST | STX => memvalid |= bit,
            LD_MEM | LDX_MEM if memvalid & bit == 0 => {
                return Err(ValidateError::UninitMem { pc: Pc(i), k: insn.k });
            }
            JMP_JA => {
                and_at(i + 1 + insn.k as usize, memvalid);
                memvalid = 0xffff;
            }
            JMP_JEQ_K | JMP_JEQ_X | JMP_JGE_K | JMP_JGE_X | JMP_JGT_K | JMP_JGT_X | JMP_JSET_K | JMP_JSET_X => {
                and_at(i + 1 + usize::from(insn.jt), memvalid);
                and_at(i + 1 + usize::from(insn.jf), memvalid);
                memvalid = 0xffff;
            }
            _ => {}
        }
    }
    Ok(())
}

/// `seccomp_check_filter()` (kernel/seccomp.c): the 41 opcodes seccomp allows,
/// rewriting loads in place.
///
/// # Deviations
/// None.
fn seccomp_check_filter(insns: &mut [Insn]) -> Result<(), ValidateError> {
    use crate::uapi::seccomp::SECCOMP_DATA_SIZE;
    for (i, insn) in insns.iter_mut().enumerate() {
        let pc = Pc(i);
        match insn.code {
            LD_W_ABS => {
                insn.code = LDX_W_ABS;
                if insn.k >= SECCOMP_DATA_SIZE || insn.k & 3 != 0 {
                    return Err(ValidateError::SeccompLoad { pc, k: insn.k });
                }
            }
            LD_W_LEN => {
                insn.code = LD_IMM;
                insn.k = SECCOMP_DATA_SIZE;
            }
            LDX_W_LEN => {
                insn.code = LDX_IMM;
                insn.k = SECCOMP_DATA_SIZE;
            }
            RET_K | RET_A | ALU_ADD_K | ALU_ADD_X | ALU_SUB_K | ALU_SUB_X | ALU_MUL_K | ALU_MUL_X | ALU_DIV_K
            | ALU_DIV_X | ALU_AND_K | ALU_AND_X | ALU_OR_K | ALU_OR_X | ALU_XOR_K | ALU_XOR_X | ALU_LSH_K
            | ALU_LSH_X | ALU_RSH_K | ALU_RSH_X | ALU_NEG | LD_IMM | LDX_IMM | MISC_TAX | MISC_TXA | LD_MEM
            | LDX_MEM | ST | STX | JMP_JA | JMP_JEQ_K | JMP_JEQ_X | JMP_JGE_K | JMP_JGE_X | JMP_JGT_K | JMP_JGT_X
            | JMP_JSET_K | JMP_JSET_X => {}
            code => return Err(ValidateError::SeccompOpcode { pc, code }),
        }
    }
    Ok(())
}
