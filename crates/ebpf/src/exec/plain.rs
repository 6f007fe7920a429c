//! The plain eBPF interpreter: a model of the kernel's `___bpf_prog_run()`
//! (kernel/bpf/core.c, Linux 6.18, as introduced in 3.15) running a
//! converted seccomp filter, for measuring what the extended form costs
//! when it is interpreted the kernel's way (the `ebpf-plain` engine).
//! [`crate::Vm`] answers "how fast can the converted program run" (it
//! pre-decodes and fuses); this answers "what did the kernel's eBPF
//! interpreter cost".
//!
//! What it keeps of the kernel's loop: the raw `struct bpf_insn` array, one
//! indirect jump per executed instruction on the raw opcode (the kernel's
//! `goto *jumptable[insn->code]`; here one `match` on the code, which the
//! compiler turns into a jump table), eleven 64-bit registers and a 512-byte
//! stack as locals, and loads straight from the context (`DST = *(SIZE *)
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
//! - The kernel's computed `goto` repeats the dispatch at the end of every
//!   handler (threaded code); a Rust `match` has one dispatch site.
//! - Little-endian hosts (x86-64, the kernel engine's host); loads read
//!   native order there.
//! - Every jump must go forward (true of every converted program), so a run
//!   ends within the program's length without a step budget.

use crate::abi::region::{CTX_BASE, STACK_BASE, STACK_SIZE};
use crate::isa::insn::{Insn, Pc};
use crate::isa::op::{AluOp, JmpCond};
use crate::isa::opcode::*;

/// Why the plain interpreter refuses or stops a program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlainError {
    #[error("pc {pc}: opcode {code:#04x} is outside the converted-seccomp subset the plain interpreter models")]
    Unsupported { pc: Pc, code: u8 },
    #[error("pc {pc}: opcode {code:#04x} with off {off} is outside the converted-seccomp subset the plain interpreter models")]
    UnsupportedOffset { pc: Pc, code: u8, off: i16 },
    #[error("pc {pc}: the plain interpreter takes forward jumps inside the program only")]
    Jump { pc: Pc },
    #[error("pc {pc}: access of {size} bytes at {addr:#x} is outside the context and the stack")]
    Fault { pc: Pc, addr: u64, size: usize },
    #[error("pc {pc}: execution fell off the end of the program")]
    FellOffEnd { pc: Pc },
}

/// What a handler tells the loop: go to `pc + 1 + delta`, or stop.
const STOP: isize = isize::MIN;
const FAULT: isize = isize::MIN + 1;

/// Defines each opcode constant the loop matches and `SUPPORTED`, the
/// list of them all, from one list (so the two cannot drift apart): an ALU
/// op in its four forms (64/32-bit, K/X), a jump condition in its four
/// (JMP/JMP32, K/X), a size in its three memory forms, then the rest.
macro_rules! handled_opcodes {
    (
        alu { $($aop:ident => $a64k:ident $a64x:ident $a32k:ident $a32x:ident;)* }
        jmp { $($jop:ident => $j64k:ident $j64x:ident $j32k:ident $j32x:ident;)* }
        mem { $($size:ident => $ldx:ident $stx:ident $st:ident;)* }
        other { $($name:ident = $code:expr;)* }
    ) => {
        $(
            const $a64k: u8 = BPF_ALU64 | $aop | BPF_K;
            const $a64x: u8 = BPF_ALU64 | $aop | BPF_X;
            const $a32k: u8 = BPF_ALU | $aop | BPF_K;
            const $a32x: u8 = BPF_ALU | $aop | BPF_X;
        )*
        $(
            const $j64k: u8 = BPF_JMP | $jop | BPF_K;
            const $j64x: u8 = BPF_JMP | $jop | BPF_X;
            const $j32k: u8 = BPF_JMP32 | $jop | BPF_K;
            const $j32x: u8 = BPF_JMP32 | $jop | BPF_X;
        )*
        $(
            const $ldx: u8 = BPF_LDX | BPF_MEM | $size;
            const $stx: u8 = BPF_STX | BPF_MEM | $size;
            const $st: u8 = BPF_ST | BPF_MEM | $size;
        )*
        $(const $name: u8 = $code;)*
        /// Every opcode the loop handles (the others are the kernel's `default_label`).
        const SUPPORTED: &[u8] = &[
            $($a64k, $a64x, $a32k, $a32x,)*
            $($j64k, $j64x, $j32k, $j32x,)*
            $($ldx, $stx, $st,)*
            $($name),*
        ];
    };
}

// The opcodes `___bpf_prog_run()`'s `BPF_INSN_MAP` handles that a converted
// seccomp filter may use (and their relatives of the same families).
handled_opcodes! {
    alu {
        BPF_ADD => ALU64_ADD_K ALU64_ADD_X ALU_ADD_K ALU_ADD_X;
        BPF_SUB => ALU64_SUB_K ALU64_SUB_X ALU_SUB_K ALU_SUB_X;
        BPF_MUL => ALU64_MUL_K ALU64_MUL_X ALU_MUL_K ALU_MUL_X;
        BPF_DIV => ALU64_DIV_K ALU64_DIV_X ALU_DIV_K ALU_DIV_X;
        BPF_OR => ALU64_OR_K ALU64_OR_X ALU_OR_K ALU_OR_X;
        BPF_AND => ALU64_AND_K ALU64_AND_X ALU_AND_K ALU_AND_X;
        BPF_LSH => ALU64_LSH_K ALU64_LSH_X ALU_LSH_K ALU_LSH_X;
        BPF_RSH => ALU64_RSH_K ALU64_RSH_X ALU_RSH_K ALU_RSH_X;
        BPF_MOD => ALU64_MOD_K ALU64_MOD_X ALU_MOD_K ALU_MOD_X;
        BPF_XOR => ALU64_XOR_K ALU64_XOR_X ALU_XOR_K ALU_XOR_X;
        BPF_MOV => ALU64_MOV_K ALU64_MOV_X ALU_MOV_K ALU_MOV_X;
        BPF_ARSH => ALU64_ARSH_K ALU64_ARSH_X ALU_ARSH_K ALU_ARSH_X;
    }
    jmp {
        BPF_JEQ => JMP_JEQ_K JMP_JEQ_X JMP32_JEQ_K JMP32_JEQ_X;
        BPF_JNE => JMP_JNE_K JMP_JNE_X JMP32_JNE_K JMP32_JNE_X;
        BPF_JGT => JMP_JGT_K JMP_JGT_X JMP32_JGT_K JMP32_JGT_X;
        BPF_JLT => JMP_JLT_K JMP_JLT_X JMP32_JLT_K JMP32_JLT_X;
        BPF_JGE => JMP_JGE_K JMP_JGE_X JMP32_JGE_K JMP32_JGE_X;
        BPF_JLE => JMP_JLE_K JMP_JLE_X JMP32_JLE_K JMP32_JLE_X;
        BPF_JSGT => JMP_JSGT_K JMP_JSGT_X JMP32_JSGT_K JMP32_JSGT_X;
        BPF_JSLT => JMP_JSLT_K JMP_JSLT_X JMP32_JSLT_K JMP32_JSLT_X;
        BPF_JSGE => JMP_JSGE_K JMP_JSGE_X JMP32_JSGE_K JMP32_JSGE_X;
        BPF_JSLE => JMP_JSLE_K JMP_JSLE_X JMP32_JSLE_K JMP32_JSLE_X;
        BPF_JSET => JMP_JSET_K JMP_JSET_X JMP32_JSET_K JMP32_JSET_X;
    }
    mem {
        BPF_B => LDX_MEM_B STX_MEM_B ST_MEM_B;
        BPF_H => LDX_MEM_H STX_MEM_H ST_MEM_H;
        BPF_W => LDX_MEM_W STX_MEM_W ST_MEM_W;
        BPF_DW => LDX_MEM_DW STX_MEM_DW ST_MEM_DW;
    }
    other {
        ALU64_NEG = BPF_ALU64 | BPF_NEG;
        ALU_NEG = BPF_ALU | BPF_NEG;
        JMP_JA = BPF_JMP | BPF_JA;
        JMP32_JA = BPF_JMP32 | BPF_JA;
        JMP_EXIT = BPF_JMP | BPF_EXIT;
    }
}

/// A converted program checked for the plain interpreter.
#[derive(Debug, Clone)]
pub struct PlainProgram {
    insns: Vec<Insn>,
}

impl PlainProgram {
    /// Checks that every opcode is one the model handles (an ALU `off`
    /// included: `movsx` shares `mov`'s opcode) and every jump goes forward
    /// inside the program.
    pub fn new(insns: &[Insn]) -> Result<PlainProgram, PlainError> {
        for (pc, insn) in insns.iter().enumerate() {
            let class = insn.code & 0x07;
            let is_alu = class == BPF_ALU || class == BPF_ALU64;
            if !SUPPORTED.contains(&insn.code) {
                return Err(PlainError::Unsupported { pc: Pc(pc), code: insn.code });
            }
            if is_alu && insn.code & 0xf0 != BPF_NEG && alu_op(insn.code & 0xf0, insn.off).is_none() {
                return Err(PlainError::UnsupportedOffset { pc: Pc(pc), code: insn.code, off: insn.off });
            }
            if (class == BPF_JMP || class == BPF_JMP32) && insn.code != JMP_EXIT {
                let delta = if insn.code == JMP32_JA { insn.imm } else { i32::from(insn.off) };
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
        self.run::<false>(data).map(|(r, _)| r)
    }

    /// [`PlainProgram::run_seccomp`] with the number of instructions executed.
    pub fn run_counted(&self, data: &[u8; 64]) -> Result<(u32, u64), PlainError> {
        self.run::<true>(data)
    }

    /// The loop: fetch, one `match` on the raw opcode (a jump table),
    /// the handler, the next pc.
    #[inline(always)]
    fn run<const COUNT: bool>(&self, data: &[u8; 64]) -> Result<(u32, u64), PlainError> {
        // Sixteen slots (r0-r10 and five never used) so that a register field
        // (4 bits) indexes them without a bounds check, as the kernel's array does.
        let mut regs = [0u64; 16];
        let mut stack = [0u8; STACK_SIZE];
        regs[1] = CTX_BASE;
        regs[10] = STACK_BASE + STACK_SIZE as u64;
        let mut pc = 0usize;
        let mut steps = 0u64;
        loop {
            let Some(&insn) = self.insns.get(pc) else {
                return Err(PlainError::FellOffEnd { pc: Pc(pc) });
            };
            if COUNT {
                steps += 1;
            }
            let delta: isize = match insn.code {
                ALU64_ADD_K => alu::<true, false, BPF_ADD>(&mut regs, insn),
                ALU64_ADD_X => alu::<true, true, BPF_ADD>(&mut regs, insn),
                ALU_ADD_K => alu::<false, false, BPF_ADD>(&mut regs, insn),
                ALU_ADD_X => alu::<false, true, BPF_ADD>(&mut regs, insn),
                ALU64_SUB_K => alu::<true, false, BPF_SUB>(&mut regs, insn),
                ALU64_SUB_X => alu::<true, true, BPF_SUB>(&mut regs, insn),
                ALU_SUB_K => alu::<false, false, BPF_SUB>(&mut regs, insn),
                ALU_SUB_X => alu::<false, true, BPF_SUB>(&mut regs, insn),
                ALU64_MUL_K => alu::<true, false, BPF_MUL>(&mut regs, insn),
                ALU64_MUL_X => alu::<true, true, BPF_MUL>(&mut regs, insn),
                ALU_MUL_K => alu::<false, false, BPF_MUL>(&mut regs, insn),
                ALU_MUL_X => alu::<false, true, BPF_MUL>(&mut regs, insn),
                ALU64_DIV_K => alu::<true, false, BPF_DIV>(&mut regs, insn),
                ALU64_DIV_X => alu::<true, true, BPF_DIV>(&mut regs, insn),
                ALU_DIV_K => alu::<false, false, BPF_DIV>(&mut regs, insn),
                ALU_DIV_X => alu::<false, true, BPF_DIV>(&mut regs, insn),
                ALU64_OR_K => alu::<true, false, BPF_OR>(&mut regs, insn),
                ALU64_OR_X => alu::<true, true, BPF_OR>(&mut regs, insn),
                ALU_OR_K => alu::<false, false, BPF_OR>(&mut regs, insn),
                ALU_OR_X => alu::<false, true, BPF_OR>(&mut regs, insn),
                ALU64_AND_K => alu::<true, false, BPF_AND>(&mut regs, insn),
                ALU64_AND_X => alu::<true, true, BPF_AND>(&mut regs, insn),
                ALU_AND_K => alu::<false, false, BPF_AND>(&mut regs, insn),
                ALU_AND_X => alu::<false, true, BPF_AND>(&mut regs, insn),
                ALU64_LSH_K => alu::<true, false, BPF_LSH>(&mut regs, insn),
                ALU64_LSH_X => alu::<true, true, BPF_LSH>(&mut regs, insn),
                ALU_LSH_K => alu::<false, false, BPF_LSH>(&mut regs, insn),
                ALU_LSH_X => alu::<false, true, BPF_LSH>(&mut regs, insn),
                ALU64_RSH_K => alu::<true, false, BPF_RSH>(&mut regs, insn),
                ALU64_RSH_X => alu::<true, true, BPF_RSH>(&mut regs, insn),
                ALU_RSH_K => alu::<false, false, BPF_RSH>(&mut regs, insn),
                ALU_RSH_X => alu::<false, true, BPF_RSH>(&mut regs, insn),
                ALU64_MOD_K => alu::<true, false, BPF_MOD>(&mut regs, insn),
                ALU64_MOD_X => alu::<true, true, BPF_MOD>(&mut regs, insn),
                ALU_MOD_K => alu::<false, false, BPF_MOD>(&mut regs, insn),
                ALU_MOD_X => alu::<false, true, BPF_MOD>(&mut regs, insn),
                ALU64_XOR_K => alu::<true, false, BPF_XOR>(&mut regs, insn),
                ALU64_XOR_X => alu::<true, true, BPF_XOR>(&mut regs, insn),
                ALU_XOR_K => alu::<false, false, BPF_XOR>(&mut regs, insn),
                ALU_XOR_X => alu::<false, true, BPF_XOR>(&mut regs, insn),
                ALU64_MOV_K => alu::<true, false, BPF_MOV>(&mut regs, insn),
                ALU64_MOV_X => alu::<true, true, BPF_MOV>(&mut regs, insn),
                ALU_MOV_K => alu::<false, false, BPF_MOV>(&mut regs, insn),
                ALU_MOV_X => alu::<false, true, BPF_MOV>(&mut regs, insn),
                ALU64_ARSH_K => alu::<true, false, BPF_ARSH>(&mut regs, insn),
                ALU64_ARSH_X => alu::<true, true, BPF_ARSH>(&mut regs, insn),
                ALU_ARSH_K => alu::<false, false, BPF_ARSH>(&mut regs, insn),
                ALU_ARSH_X => alu::<false, true, BPF_ARSH>(&mut regs, insn),
                ALU64_NEG => neg::<true>(&mut regs, insn),
                ALU_NEG => neg::<false>(&mut regs, insn),
                JMP_JEQ_K => jmp::<true, false, BPF_JEQ>(&regs, insn),
                JMP_JEQ_X => jmp::<true, true, BPF_JEQ>(&regs, insn),
                JMP32_JEQ_K => jmp::<false, false, BPF_JEQ>(&regs, insn),
                JMP32_JEQ_X => jmp::<false, true, BPF_JEQ>(&regs, insn),
                JMP_JNE_K => jmp::<true, false, BPF_JNE>(&regs, insn),
                JMP_JNE_X => jmp::<true, true, BPF_JNE>(&regs, insn),
                JMP32_JNE_K => jmp::<false, false, BPF_JNE>(&regs, insn),
                JMP32_JNE_X => jmp::<false, true, BPF_JNE>(&regs, insn),
                JMP_JGT_K => jmp::<true, false, BPF_JGT>(&regs, insn),
                JMP_JGT_X => jmp::<true, true, BPF_JGT>(&regs, insn),
                JMP32_JGT_K => jmp::<false, false, BPF_JGT>(&regs, insn),
                JMP32_JGT_X => jmp::<false, true, BPF_JGT>(&regs, insn),
                JMP_JLT_K => jmp::<true, false, BPF_JLT>(&regs, insn),
                JMP_JLT_X => jmp::<true, true, BPF_JLT>(&regs, insn),
                JMP32_JLT_K => jmp::<false, false, BPF_JLT>(&regs, insn),
                JMP32_JLT_X => jmp::<false, true, BPF_JLT>(&regs, insn),
                JMP_JGE_K => jmp::<true, false, BPF_JGE>(&regs, insn),
                JMP_JGE_X => jmp::<true, true, BPF_JGE>(&regs, insn),
                JMP32_JGE_K => jmp::<false, false, BPF_JGE>(&regs, insn),
                JMP32_JGE_X => jmp::<false, true, BPF_JGE>(&regs, insn),
                JMP_JLE_K => jmp::<true, false, BPF_JLE>(&regs, insn),
                JMP_JLE_X => jmp::<true, true, BPF_JLE>(&regs, insn),
                JMP32_JLE_K => jmp::<false, false, BPF_JLE>(&regs, insn),
                JMP32_JLE_X => jmp::<false, true, BPF_JLE>(&regs, insn),
                JMP_JSGT_K => jmp::<true, false, BPF_JSGT>(&regs, insn),
                JMP_JSGT_X => jmp::<true, true, BPF_JSGT>(&regs, insn),
                JMP32_JSGT_K => jmp::<false, false, BPF_JSGT>(&regs, insn),
                JMP32_JSGT_X => jmp::<false, true, BPF_JSGT>(&regs, insn),
                JMP_JSLT_K => jmp::<true, false, BPF_JSLT>(&regs, insn),
                JMP_JSLT_X => jmp::<true, true, BPF_JSLT>(&regs, insn),
                JMP32_JSLT_K => jmp::<false, false, BPF_JSLT>(&regs, insn),
                JMP32_JSLT_X => jmp::<false, true, BPF_JSLT>(&regs, insn),
                JMP_JSGE_K => jmp::<true, false, BPF_JSGE>(&regs, insn),
                JMP_JSGE_X => jmp::<true, true, BPF_JSGE>(&regs, insn),
                JMP32_JSGE_K => jmp::<false, false, BPF_JSGE>(&regs, insn),
                JMP32_JSGE_X => jmp::<false, true, BPF_JSGE>(&regs, insn),
                JMP_JSLE_K => jmp::<true, false, BPF_JSLE>(&regs, insn),
                JMP_JSLE_X => jmp::<true, true, BPF_JSLE>(&regs, insn),
                JMP32_JSLE_K => jmp::<false, false, BPF_JSLE>(&regs, insn),
                JMP32_JSLE_X => jmp::<false, true, BPF_JSLE>(&regs, insn),
                JMP_JSET_K => jmp::<true, false, BPF_JSET>(&regs, insn),
                JMP_JSET_X => jmp::<true, true, BPF_JSET>(&regs, insn),
                JMP32_JSET_K => jmp::<false, false, BPF_JSET>(&regs, insn),
                JMP32_JSET_X => jmp::<false, true, BPF_JSET>(&regs, insn),
                JMP_JA => insn.off as isize,
                JMP32_JA => insn.imm as isize,
                JMP_EXIT => STOP,
                LDX_MEM_B => ldx::<1>(&mut regs, data, &stack, insn),
                LDX_MEM_H => ldx::<2>(&mut regs, data, &stack, insn),
                LDX_MEM_W => ldx::<4>(&mut regs, data, &stack, insn),
                LDX_MEM_DW => ldx::<8>(&mut regs, data, &stack, insn),
                STX_MEM_B => store::<1>(&regs, &mut stack, insn, reg(&regs, src(insn))),
                STX_MEM_H => store::<2>(&regs, &mut stack, insn, reg(&regs, src(insn))),
                STX_MEM_W => store::<4>(&regs, &mut stack, insn, reg(&regs, src(insn))),
                STX_MEM_DW => store::<8>(&regs, &mut stack, insn, reg(&regs, src(insn))),
                ST_MEM_B => store::<1>(&regs, &mut stack, insn, insn.imm as i64 as u64),
                ST_MEM_H => store::<2>(&regs, &mut stack, insn, insn.imm as i64 as u64),
                ST_MEM_W => store::<4>(&regs, &mut stack, insn, insn.imm as i64 as u64),
                ST_MEM_DW => store::<8>(&regs, &mut stack, insn, insn.imm as i64 as u64),
                _ => FAULT,
            };
            match delta {
                STOP => return Ok((regs[0] as u32, steps)),
                FAULT => {
                    let (addr, size) = fault_of(&regs, insn);
                    return Err(PlainError::Fault { pc: Pc(pc), addr, size });
                }
                delta => pc = pc.wrapping_add(1).wrapping_add_signed(delta),
            }
        }
    }
}

/// The access a faulting load or store tried.
fn fault_of(regs: &[u64; 16], insn: Insn) -> (u64, usize) {
    let base = if insn.code & 0x07 == BPF_LDX { reg(regs, src(insn)) } else { reg(regs, dst(insn)) };
    let size = match insn.code & 0x18 {
        BPF_B => 1,
        BPF_H => 2,
        BPF_W => 4,
        _ => 8,
    };
    (base.wrapping_add(insn.off as i64 as u64), size)
}

#[inline(always)]
fn dst(insn: Insn) -> usize {
    usize::from(insn.regs & 0x0f)
}

#[inline(always)]
fn src(insn: Insn) -> usize {
    usize::from(insn.regs >> 4)
}

#[inline(always)]
fn reg(regs: &[u64; 16], r: usize) -> u64 {
    regs.get(r & 15).copied().unwrap_or(0)
}

#[inline(always)]
fn set(regs: &mut [u64; 16], r: usize, v: u64) {
    if let Some(slot) = regs.get_mut(r & 15) {
        *slot = v;
    }
}

/// `ALU64_*` / `ALU_*` (K or X): `DST = DST op SRC` at the width.
#[inline(always)]
fn alu<const W64: bool, const X: bool, const OP: u8>(regs: &mut [u64; 16], insn: Insn) -> isize {
    let Some(op) = alu_op(OP, insn.off) else { return FAULT };
    let d = dst(insn);
    let s = if X { reg(regs, src(insn)) } else { insn.imm as i64 as u64 };
    // The evaluations take shift amounts modulo the width, as the kernel's
    // `SRC & 63` / `& 31` do.
    let v = if W64 { op.eval64(reg(regs, d), s) } else { u64::from(op.eval32(reg(regs, d) as u32, s as u32)) };
    set(regs, d, v);
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
#[inline(always)]
fn neg<const W64: bool>(regs: &mut [u64; 16], insn: Insn) -> isize {
    let d = dst(insn);
    let v = reg(regs, d);
    set(regs, d, if W64 { v.wrapping_neg() } else { u64::from((v as u32).wrapping_neg()) });
    0
}

/// `JMP_*` / `JMP32_*` (K or X): `if (DST cond SRC) insn += off`.
#[inline(always)]
fn jmp<const W64: bool, const X: bool, const COND: u8>(regs: &[u64; 16], insn: Insn) -> isize {
    let Some(cond) = jmp_cond(COND) else { return FAULT };
    let a = reg(regs, dst(insn));
    let b = if X { reg(regs, src(insn)) } else { insn.imm as i64 as u64 };
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

/// `N` bytes at `at` of `mem`, native order, zero-extended.
#[inline(always)]
fn read<const N: usize>(mem: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    let b = mem.get(at..at.checked_add(N)?)?;
    let mut word = [0u8; 8];
    // Little-endian hosts only: the low N bytes of the word are the value.
    word.get_mut(..N)?.copy_from_slice(b);
    Some(u64::from_le_bytes(word))
}

/// `LDX_MEM_{B,H,W,DW}`: `DST = *(SIZE *)(SRC + off)`, from the context
/// (read-only) or the stack.
#[inline(always)]
fn ldx<const N: usize>(regs: &mut [u64; 16], data: &[u8; 64], stack: &[u8; STACK_SIZE], insn: Insn) -> isize {
    let addr = reg(regs, src(insn)).wrapping_add(insn.off as i64 as u64);
    let ctx = addr.wrapping_sub(CTX_BASE);
    let v = if ctx < 64 { read::<N>(data, ctx) } else { read::<N>(stack, addr.wrapping_sub(STACK_BASE)) };
    match v {
        Some(v) => {
            set(regs, dst(insn), v);
            0
        }
        None => FAULT,
    }
}

/// `STX_MEM_*` / `ST_MEM_*`: `*(SIZE *)(DST + off) = v`, on the stack only.
#[inline(always)]
fn store<const N: usize>(regs: &[u64; 16], stack: &mut [u8; STACK_SIZE], insn: Insn, v: u64) -> isize {
    let addr = reg(regs, dst(insn)).wrapping_add(insn.off as i64 as u64).wrapping_sub(STACK_BASE);
    let Ok(at) = usize::try_from(addr) else { return FAULT };
    let bytes = v.to_le_bytes();
    match (at.checked_add(N).and_then(|end| stack.get_mut(at..end)), bytes.get(..N)) {
        (Some(slot), Some(b)) => {
            slot.copy_from_slice(b);
            0
        }
        _ => FAULT,
    }
}

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
