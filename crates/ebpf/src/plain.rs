//! The plain eBPF interpreter: a model of the kernel's `___bpf_prog_run()`
//! (kernel/bpf/core.c, Linux 6.18, as introduced in 3.15) running a
//! converted seccomp filter, for measuring what the extended form costs
//! when it is interpreted the kernel's way (the `ebpf-plain` engine).
//! [`crate::Vm`] answers "how fast can the converted program run" (it
//! pre-decodes and fuses); this answers "what did the kernel's eBPF
//! interpreter cost".
//!
//! What it keeps of the kernel's loop: the raw `struct bpf_insn` array, one
//! indirect jump per executed instruction through a 256-entry table indexed
//! by the opcode (the kernel's `jumptable[insn->code]` with computed
//! `goto`; here a table of function pointers), eleven 64-bit registers, a
//! 512-byte stack, and loads straight from the context (`DST = *(SIZE *)
//! (SRC + off)`), with no call per load.
//!
//! # Deviations
//! - Addresses are modelled: `r1` holds [`CTX_BASE`], `r10` the top of a
//!   512-byte stack at [`STACK_BASE`], and each load or store checks that
//!   it falls inside one of the two (the kernel trusts the verifier or the
//!   converter and dereferences the pointer). A miss is [`PlainError::Fault`].
//! - Helper calls, `ld_imm64`, atomics, `BPF_END`, `movsx`/`ldsx` and
//!   tail calls are not modelled: the converted seccomp subset uses none of
//!   them, and [`PlainProgram::new`] refuses a program that does.
//! - Every jump must go forward (true of every converted program), so a run
//!   ends within the program's length without a step budget.

use crate::insn::{Insn, Pc};
use crate::interp::{CTX_BASE, STACK_BASE, STACK_SIZE};
use crate::op::{AluOp, JmpCond};
use crate::opcode::*;

/// Why the plain interpreter refuses or stops a program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlainError {
    #[error("pc {pc}: opcode {code:#04x} is outside the converted-seccomp subset the plain interpreter models")]
    Unsupported { pc: Pc, code: u8 },
    #[error("pc {pc}: the plain interpreter takes forward jumps inside the program only")]
    Jump { pc: Pc },
    #[error("pc {pc}: access of {size} bytes at {addr:#x} is outside the context and the stack")]
    Fault { pc: Pc, addr: u64, size: usize },
    #[error("pc {pc}: execution fell off the end of the program")]
    FellOffEnd { pc: Pc },
}

/// The machine state of one run.
struct Machine<'d> {
    regs: [u64; 11],
    ctx: &'d [u8; 64],
    stack: [u8; STACK_SIZE],
    /// Address of a faulting access (`u64::MAX` when none).
    fault: (u64, usize),
}

/// What a handler tells the loop: go to `pc + 1 + delta`, or stop.
const STOP: isize = isize::MIN;
const FAULT: isize = isize::MIN + 1;

type Handler = fn(&mut Machine<'_>, Insn) -> isize;

/// A converted program checked for the plain interpreter.
#[derive(Debug, Clone)]
pub struct PlainProgram {
    insns: Vec<Insn>,
}

impl PlainProgram {
    /// Checks that every opcode is one the model handles and every jump
    /// goes forward inside the program.
    pub fn new(insns: &[Insn]) -> Result<PlainProgram, PlainError> {
        for (pc, insn) in insns.iter().enumerate() {
            if !supported(insn.code) {
                return Err(PlainError::Unsupported { pc: Pc(pc), code: insn.code });
            }
            let class = insn.code & 0x07;
            if (class == BPF_JMP || class == BPF_JMP32) && insn.code != EXIT {
                let delta = if insn.code == (BPF_JMP32 | BPF_JA) { insn.imm } else { i32::from(insn.off) };
                let target = pc as i64 + 1 + i64::from(delta);
                if delta < 0 || target >= insns.len() as i64 {
                    return Err(PlainError::Jump { pc: Pc(pc) });
                }
            }
        }
        Ok(PlainProgram { insns: insns.to_vec() })
    }

    /// Runs the program on `struct seccomp_data` and returns the low 32 bits
    /// of `r0`, as `bpf_prog_run()` does for seccomp.
    ///
    /// Mirrors `___bpf_prog_run()` (kernel/bpf/core.c, Linux 6.18).
    ///
    /// # Deviations
    /// Those of the module.
    pub fn run_seccomp(&self, data: &[u8; 64]) -> Result<u32, PlainError> {
        self.run_counted(data).map(|(r, _)| r)
    }

    /// [`PlainProgram::run_seccomp`] with the number of instructions executed.
    pub fn run_counted(&self, data: &[u8; 64]) -> Result<(u32, u64), PlainError> {
        let mut m = Machine { regs: [0; 11], ctx: data, stack: [0; STACK_SIZE], fault: (0, 0) };
        m.regs[1] = CTX_BASE;
        m.regs[10] = STACK_BASE + STACK_SIZE as u64;
        let mut pc = 0usize;
        let mut steps = 0u64;
        loop {
            let Some(&insn) = self.insns.get(pc) else {
                return Err(PlainError::FellOffEnd { pc: Pc(pc) });
            };
            steps += 1;
            let handler = JUMPTABLE.get(usize::from(insn.code)).copied().flatten().unwrap_or(bad);
            match handler(&mut m, insn) {
                STOP => return Ok((m.regs[0] as u32, steps)),
                FAULT => return Err(PlainError::Fault { pc: Pc(pc), addr: m.fault.0, size: m.fault.1 }),
                delta => pc = pc.wrapping_add(1).wrapping_add_signed(delta),
            }
        }
    }
}

fn supported(code: u8) -> bool {
    JUMPTABLE.get(usize::from(code)).is_some_and(Option::is_some)
}

#[inline(always)]
fn dst(insn: Insn) -> usize {
    usize::from(insn.regs & 0x0f).min(10)
}

#[inline(always)]
fn src(insn: Insn) -> usize {
    usize::from(insn.regs >> 4).min(10)
}

#[inline(always)]
fn reg(m: &Machine<'_>, r: usize) -> u64 {
    m.regs.get(r).copied().unwrap_or(0)
}

#[inline(always)]
fn set(m: &mut Machine<'_>, r: usize, v: u64) {
    if let Some(slot) = m.regs.get_mut(r) {
        *slot = v;
    }
}

fn bad(_: &mut Machine<'_>, _: Insn) -> isize {
    FAULT
}

/// `ALU64_*` / `ALU_*` (K or X): `DST = DST op SRC` at the width.
fn alu<const W64: bool, const X: bool, const OP: u8>(m: &mut Machine<'_>, insn: Insn) -> isize {
    let Some(op) = alu_op(OP, insn.off) else { return FAULT };
    let d = dst(insn);
    let s = if X { reg(m, src(insn)) } else { insn.imm as i64 as u64 };
    let v = if W64 {
        let s = if op.is_shift() { s & 63 } else { s };
        op.eval64(reg(m, d), s)
    } else {
        let s = if op.is_shift() { s & 31 } else { s };
        u64::from(op.eval32(reg(m, d) as u32, s as u32))
    };
    set(m, d, v);
    0
}

#[inline(always)]
fn alu_op(bits: u8, off: i16) -> Option<AluOp> {
    Some(match (bits, off) {
        (BPF_ADD, _) => AluOp::Add,
        (BPF_SUB, _) => AluOp::Sub,
        (BPF_MUL, _) => AluOp::Mul,
        (BPF_DIV, 0) => AluOp::Div,
        (BPF_DIV, 1) => AluOp::SDiv,
        (BPF_OR, _) => AluOp::Or,
        (BPF_AND, _) => AluOp::And,
        (BPF_LSH, _) => AluOp::Lsh,
        (BPF_RSH, _) => AluOp::Rsh,
        (BPF_MOD, 0) => AluOp::Mod,
        (BPF_MOD, 1) => AluOp::SMod,
        (BPF_XOR, _) => AluOp::Xor,
        (BPF_MOV, 0) => AluOp::Mov,
        (BPF_ARSH, _) => AluOp::Arsh,
        _ => return None,
    })
}

/// `ALU64_NEG` / `ALU_NEG`.
fn neg<const W64: bool>(m: &mut Machine<'_>, insn: Insn) -> isize {
    let d = dst(insn);
    let v = reg(m, d);
    set(m, d, if W64 { v.wrapping_neg() } else { u64::from((v as u32).wrapping_neg()) });
    0
}

/// `JMP_*` / `JMP32_*` (K or X): `if (DST cond SRC) insn += off`.
fn jmp<const W64: bool, const X: bool, const COND: u8>(m: &mut Machine<'_>, insn: Insn) -> isize {
    let Some(cond) = jmp_cond(COND) else { return FAULT };
    let a = reg(m, dst(insn));
    let b = if X { reg(m, src(insn)) } else { insn.imm as i64 as u64 };
    let taken = if W64 { cond.eval64(a, b) } else { cond.eval32(a as u32, b as u32) };
    if taken {
        insn.off as isize
    } else {
        0
    }
}

#[inline(always)]
fn jmp_cond(bits: u8) -> Option<JmpCond> {
    Some(match bits {
        BPF_JEQ => JmpCond::Eq,
        BPF_JNE => JmpCond::Ne,
        BPF_JGT => JmpCond::Gt,
        BPF_JLT => JmpCond::Lt,
        BPF_JGE => JmpCond::Ge,
        BPF_JLE => JmpCond::Le,
        BPF_JSGT => JmpCond::Sgt,
        BPF_JSLT => JmpCond::Slt,
        BPF_JSGE => JmpCond::Sge,
        BPF_JSLE => JmpCond::Sle,
        BPF_JSET => JmpCond::Set,
        _ => return None,
    })
}

/// `JMP_JA`: `insn += off`.
fn ja(_: &mut Machine<'_>, insn: Insn) -> isize {
    insn.off as isize
}

/// `JMP32_JA` (`gotol`): `insn += imm`.
fn ja32(_: &mut Machine<'_>, insn: Insn) -> isize {
    insn.imm as isize
}

/// `JMP_EXIT`.
fn exit(_: &mut Machine<'_>, _: Insn) -> isize {
    STOP
}

/// The bytes behind `[addr, addr + size)`: the context (read-only) or the stack.
#[inline(always)]
fn load_bytes<const N: usize>(m: &Machine<'_>, addr: u64) -> Option<[u8; N]> {
    let ctx = addr.wrapping_sub(CTX_BASE);
    if ctx < 64 {
        let at = ctx as usize;
        return m.ctx.get(at..at + N).and_then(|b| b.try_into().ok());
    }
    let st = addr.wrapping_sub(STACK_BASE);
    if st < STACK_SIZE as u64 {
        let at = st as usize;
        return m.stack.get(at..at + N).and_then(|b| b.try_into().ok());
    }
    None
}

/// `LDX_MEM_{B,H,W,DW}`: `DST = *(SIZE *)(SRC + off)`.
fn ldx<const N: usize>(m: &mut Machine<'_>, insn: Insn) -> isize {
    let addr = reg(m, src(insn)).wrapping_add(insn.off as i64 as u64);
    let v = match N {
        1 => load_bytes::<1>(m, addr).map(|b| u64::from(b[0])),
        2 => load_bytes::<2>(m, addr).map(|b| u64::from(u16::from_ne_bytes(b))),
        4 => load_bytes::<4>(m, addr).map(|b| u64::from(u32::from_ne_bytes(b))),
        _ => load_bytes::<8>(m, addr).map(u64::from_ne_bytes),
    };
    match v {
        Some(v) => {
            set(m, dst(insn), v);
            0
        }
        None => {
            m.fault = (addr, N);
            FAULT
        }
    }
}

/// Stores `v` (its low `N` bytes) at `addr`, on the stack only.
#[inline(always)]
fn store<const N: usize>(m: &mut Machine<'_>, addr: u64, v: u64) -> isize {
    let st = addr.wrapping_sub(STACK_BASE);
    let at = st as usize;
    let bytes = v.to_ne_bytes();
    match (m.stack.get_mut(at..at + N), bytes.get(..N)) {
        (Some(slot), Some(b)) if st < STACK_SIZE as u64 => {
            slot.copy_from_slice(b);
            0
        }
        _ => {
            m.fault = (addr, N);
            FAULT
        }
    }
}

/// `STX_MEM_*`: `*(SIZE *)(DST + off) = SRC`.
fn stx<const N: usize>(m: &mut Machine<'_>, insn: Insn) -> isize {
    let addr = reg(m, dst(insn)).wrapping_add(insn.off as i64 as u64);
    store::<N>(m, addr, reg(m, src(insn)))
}

/// `ST_MEM_*`: `*(SIZE *)(DST + off) = IMM`.
fn st<const N: usize>(m: &mut Machine<'_>, insn: Insn) -> isize {
    let addr = reg(m, dst(insn)).wrapping_add(insn.off as i64 as u64);
    store::<N>(m, addr, insn.imm as i64 as u64)
}

macro_rules! alu_rows {
    ($t:ident, $($op:ident),*) => {$(
        $t[(BPF_ALU64 | $op | BPF_K) as usize] = Some(alu::<true, false, $op>);
        $t[(BPF_ALU64 | $op | BPF_X) as usize] = Some(alu::<true, true, $op>);
        $t[(BPF_ALU | $op | BPF_K) as usize] = Some(alu::<false, false, $op>);
        $t[(BPF_ALU | $op | BPF_X) as usize] = Some(alu::<false, true, $op>);
    )*};
}

macro_rules! jmp_rows {
    ($t:ident, $($cond:ident),*) => {$(
        $t[(BPF_JMP | $cond | BPF_K) as usize] = Some(jmp::<true, false, $cond>);
        $t[(BPF_JMP | $cond | BPF_X) as usize] = Some(jmp::<true, true, $cond>);
        $t[(BPF_JMP32 | $cond | BPF_K) as usize] = Some(jmp::<false, false, $cond>);
        $t[(BPF_JMP32 | $cond | BPF_X) as usize] = Some(jmp::<false, true, $cond>);
    )*};
}

/// `jumptable[]` of `___bpf_prog_run()`: one handler per opcode, `None`
/// (the kernel's `default_label`) for the rest.
// Built at compile time: every index is a constant below 256.
#[allow(clippy::indexing_slicing)]
const fn jumptable() -> [Option<Handler>; 256] {
    let mut t: [Option<Handler>; 256] = [None; 256];
    alu_rows!(
        t, BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_OR, BPF_AND, BPF_LSH, BPF_RSH, BPF_MOD, BPF_XOR, BPF_MOV, BPF_ARSH
    );
    t[(BPF_ALU64 | BPF_NEG) as usize] = Some(neg::<true>);
    t[(BPF_ALU | BPF_NEG) as usize] = Some(neg::<false>);
    jmp_rows!(
        t, BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JLT, BPF_JGE, BPF_JLE, BPF_JSGT, BPF_JSLT, BPF_JSGE, BPF_JSLE, BPF_JSET
    );
    t[(BPF_JMP | BPF_JA) as usize] = Some(ja);
    t[(BPF_JMP32 | BPF_JA) as usize] = Some(ja32);
    t[EXIT as usize] = Some(exit);
    t[(BPF_LDX | BPF_MEM | BPF_B) as usize] = Some(ldx::<1>);
    t[(BPF_LDX | BPF_MEM | BPF_H) as usize] = Some(ldx::<2>);
    t[(BPF_LDX | BPF_MEM | BPF_W) as usize] = Some(ldx::<4>);
    t[(BPF_LDX | BPF_MEM | BPF_DW) as usize] = Some(ldx::<8>);
    t[(BPF_STX | BPF_MEM | BPF_B) as usize] = Some(stx::<1>);
    t[(BPF_STX | BPF_MEM | BPF_H) as usize] = Some(stx::<2>);
    t[(BPF_STX | BPF_MEM | BPF_W) as usize] = Some(stx::<4>);
    t[(BPF_STX | BPF_MEM | BPF_DW) as usize] = Some(stx::<8>);
    t[(BPF_ST | BPF_MEM | BPF_B) as usize] = Some(st::<1>);
    t[(BPF_ST | BPF_MEM | BPF_H) as usize] = Some(st::<2>);
    t[(BPF_ST | BPF_MEM | BPF_W) as usize] = Some(st::<4>);
    t[(BPF_ST | BPF_MEM | BPF_DW) as usize] = Some(st::<8>);
    t
}

static JUMPTABLE: [Option<Handler>; 256] = jumptable();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_a_converted_shape_and_counts() {
        // r6 = r1; w0 = *(u32 *)(r6 + 0); if w0 == 7 goto +1; w0 = 0; exit; w0 = 5 (stack round trip); exit
        let prog = [
            Insn { code: BPF_ALU64 | BPF_MOV | BPF_X, regs: 0x16, off: 0, imm: 0 },
            Insn { code: BPF_LDX | BPF_MEM | BPF_W, regs: 0x60, off: 0, imm: 0 },
            Insn { code: BPF_JMP | BPF_JEQ | BPF_K, regs: 0x00, off: 2, imm: 7 },
            Insn { code: BPF_ALU | BPF_MOV | BPF_K, regs: 0x00, off: 0, imm: 0 },
            Insn { code: EXIT, regs: 0, off: 0, imm: 0 },
            Insn { code: BPF_ST | BPF_MEM | BPF_W, regs: 0x0a, off: -4, imm: 5 },
            Insn { code: BPF_LDX | BPF_MEM | BPF_W, regs: 0xa0, off: -4, imm: 0 },
            Insn { code: EXIT, regs: 0, off: 0, imm: 0 },
        ];
        let p = PlainProgram::new(&prog).unwrap();
        let mut data = [0u8; 64];
        assert_eq!(p.run_counted(&data).unwrap(), (0, 5));
        data[0] = 7;
        assert_eq!(p.run_counted(&data).unwrap(), (5, 6));
    }

    #[test]
    fn refuses_what_it_does_not_model_and_faults_outside_memory() {
        let back = [Insn { code: BPF_JMP | BPF_JA, regs: 0, off: -1, imm: 0 }];
        assert!(matches!(PlainProgram::new(&back), Err(PlainError::Jump { .. })));
        let call = [Insn { code: BPF_JMP | BPF_CALL, regs: 0, off: 0, imm: 1 }];
        assert!(matches!(PlainProgram::new(&call), Err(PlainError::Unsupported { .. })));
        let wild = [
            Insn { code: BPF_LDX | BPF_MEM | BPF_W, regs: 0x10, off: 62, imm: 0 },
            Insn { code: EXIT, regs: 0, off: 0, imm: 0 },
        ];
        let p = PlainProgram::new(&wild).unwrap();
        assert!(matches!(p.run_seccomp(&[0; 64]), Err(PlainError::Fault { size: 4, .. })));
    }
}
