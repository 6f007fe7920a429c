//! The general eBPF interpreter: the semantics of the kernel's
//! `___bpf_prog_run()` (kernel/bpf/core.c, Linux 6.18) and RFC 9669, over
//! the pre-decoded [`Step`]s of [`crate::load`], memory-safe by
//! construction (every access goes through the run's
//! [`Memory`] regions, [`crate::abi::region`]).
//!
//! The stack is not cleared between runs (the kernel's is uninitialised
//! too); it belongs to the [`Vm`](crate::vm::Vm), so a run never reads
//! another `Vm`'s data.
//!
//! # Semantics chosen where the kernel and RFC 9669 could differ
//!
//! - Shift amounts are masked to 31/63 for both K and X forms (RFC 9669). The
//!   kernel masks only X; its verifier rejects out-of-range K, so the two
//!   agree on every program the kernel would run.
//! - Division and modulo by zero follow the verifier's `do_misc_fixups()`:
//!   `x / 0 = 0`, `x % 0 = x` (ALU32: the zero-extended low half); signed
//!   `MIN / -1 = MIN`, `x % -1 = 0`.
//! - Legacy `LD|ABS` / `LD|IND` (removed from the interpreter in 4.18) run with
//!   their pre-4.18 meaning: a big-endian read of the run's socket buffer at
//!   `imm` (ABS) or `(s32)(src + imm)` (IND), negative offsets through
//!   `SKF_NET_OFF`/`SKF_LL_OFF`; a failed read (or a run without a socket
//!   buffer) ends the program, returning 0. The buffer is the run's
//!   [`SkbContext`], not whatever `r6` points to.
//! - Local calls (`call` with src = 1) get a fresh 512-byte frame (`r10`
//!   moves down by 512) and find `r6`..`r9` restored on return, as RFC 9669
//!   requires; at most [`MAX_FRAMES`] frames are live.
//! - `callx` (`call` with the X bit; not in RFC 9669, accepted unless strict)
//!   calls the helper whose id is in `dst`.
//! - Steps: every executed instruction slot counts one (an `ld_imm64` two);
//!   the count is exact and is compared with the budget at every taken jump,
//!   call, return and exit, so a run that would exceed the budget fails
//!   (at the latest one straight-line stretch after crossing it).
//!
//! # Speed
//!
//! Instructions are decoded once at load ([`crate::load`]) into 16-byte steps whose
//! K and X forms share one handler (`operand = regs[src] | imm`, with K forms
//! reading an always-zero register). The loop is a plain, safe
//! `loop { match }` (no `unsafe`, no reliance on tail calls). Load-time
//! superinstructions cut dispatches on the shapes converted seccomp filters
//! are made of, each still executing every covered instruction's semantics
//! in program order (and counting every covered instruction as a step):
//! runs of compare-and-branch on one register (`Chain`, and `EqChain` for
//! `if rX == K` stretches, a tight scan of 16..32-byte entries), a `w0 = ld`
//! fused with the compares that follow it (`LoadChain`, `LoadJ*`),
//! `r0 = K; exit`, and the converter's 3-instruction prologue; and single
//! load-compare pairs are linked along both their edges (`LoadCmpRun`), so
//! a seccomp filter's rule-after-rule argument checks run as one loop.
//! Instructions
//! covered by a superinstruction keep their own ops, so jumps into the
//! middle of one behave as before. `LoadOptions::no_superinstructions`
//! turns the fusion off (tests check both agree, results and step counts).
//!
//! A run allocates nothing.

use crate::abi::error::{Access, ExecError};
use crate::abi::memory::Memory;
use crate::abi::region::{MAX_FRAMES, STACK_BASE, STACK_SIZE, STACK_TOTAL};
use crate::isa::insn::Pc;
use crate::isa::op::{AluOp, AtomicOp, JmpCond};
use crate::load::ir::{EqEntry, StepKind};
use crate::load::Decoded;

/// A caller's frame of a local call: where to return and its `r6`..`r9`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Frame {
    ret: usize,
    saved: [u64; 4],
}

/// Sets up the registers (`r1`, `r2` as given, `r10` at the top of the
/// stack, the rest zero) and runs `prog`.
#[inline(always)]
pub(crate) fn run(
    prog: &Decoded,
    mut mem: Memory<'_>,
    [r1, r2]: [u64; 2],
    frames: &mut [Frame; MAX_FRAMES],
    budget: u64,
    executed: &mut u64,
) -> Result<u64, ExecError> {
    let mut regs = [0u64; 16];
    regs[1] = r1;
    regs[2] = r2;
    regs[10] = STACK_BASE + STACK_TOTAL as u64;
    // A forward-only program executes at most `len` steps: no budget checks.
    // (A copy of the loop without budget checks for forward-only programs
    // was measured: 4% fewer instructions on long filters, 7% more on short
    // ones, from the larger entry code; not kept.)
    execute(prog, &mut regs, &mut mem, frames, budget, executed)
}

#[cold]
#[inline(never)]
fn fault(pc: usize, addr: u64, size: usize, access: Access, mem: &Memory<'_>) -> ExecError {
    let region = addr >> 32;
    if access == Access::Store && (region == 1 || region == 2) && mem.bytes(addr, size).is_some() {
        ExecError::ReadOnly { pc: Pc(pc), addr, size }
    } else {
        ExecError::OutOfBounds { pc: Pc(pc), addr, size, access }
    }
}

#[inline(always)]
fn mem_off(a: u32) -> u64 {
    a as i32 as i64 as u64
}

/// Mirrors `___bpf_prog_run()` in kernel/bpf/core.c (Linux 6.18), case
/// order following the opcode groups of `BPF_INSN_MAP` (ALU, ALU64, END,
/// JMP, JMP32, CALL/EXIT, LD/LDX/ST/STX, atomics).
///
/// # Deviations
/// Memory accesses are bounds-checked against regions (the kernel trusts
/// the verifier); shift K is masked; local calls, `callx`, legacy
/// `LD|ABS/IND` and the step budget are as described in the module docs.
/// The result is the whole 64-bit `r0`.
// Indexing: `regs` is `[u64; 16]` and every register index is masked with
// `& 15`; `prog.helpers[op.a]` and `prog.chain[a..imm]` are validated by
// `Program::load` (and use `get` anyway where a failure has a meaning).
#[allow(clippy::indexing_slicing)]
fn execute(
    prog: &Decoded,
    regs: &mut [u64; 16],
    mem: &mut Memory<'_>,
    frames: &mut [Frame; MAX_FRAMES],
    budget: u64,
    executed_out: &mut u64,
) -> Result<u64, ExecError> {
    let ops = &prog.steps[..];
    let mut pc: usize = 0;
    // First pc of the current straight-line stretch: executed instructions
    // are accounted a stretch at a time, when control leaves it.
    let mut seg: usize = 0;
    let mut executed: u64 = 0;
    let mut depth: usize = 0;

    macro_rules! account {
        () => {{
            executed = executed.wrapping_add(pc.wrapping_sub(seg) as u64 + 1);
            if executed > budget {
                return Err(ExecError::StepBudgetExceeded { pc: Pc(pc), budget });
            }
        }};
    }
    macro_rules! jump {
        ($label:lifetime, $target:expr) => {{
            account!();
            pc = $target as usize;
            seg = pc;
            continue $label;
        }};
    }
    macro_rules! finish {
        ($v:expr) => {{
            account!();
            *executed_out = executed;
            return Ok($v);
        }};
    }
    macro_rules! load {
        ($n:literal, $addr:expr) => {{
            let addr: u64 = $addr;
            match mem.read::<$n>(addr) {
                Some(b) => b,
                None => return Err(fault(pc, addr, $n, Access::Load, mem)),
            }
        }};
    }
    macro_rules! store {
        ($n:literal, $addr:expr, $bytes:expr) => {{
            let addr: u64 = $addr;
            match mem.slot::<$n>(addr) {
                Some(s) => *s = $bytes,
                None => return Err(fault(pc, addr, $n, Access::Store, mem)),
            }
        }};
    }

    // A run of `[mov rW, v;] if x <cond> v goto t` elements (x never written
    // inside the run): each element's register write, then its compare, in
    // program order; on no match, continue after the last element.
    macro_rules! chain {
        ($label:lifetime, $x:expr, $run:expr) => {{
            let x: u64 = $x;
            for e in $run {
                regs[(e.write_reg & 15) as usize] = e.write_val;
                if ((((x & e.mask) ^ e.flip).wrapping_sub(e.lo)) <= e.span) != e.negate {
                    pc = e.jump_pc as usize;
                    jump!($label, e.target)
                }
                pc = e.jump_pc as usize;
            }
        }};
    }
    // A run of `[mov rW, K;] if x == K goto t` (JMP64), in program order;
    // rW's final value is stored when control leaves (see `EqEntry`).
    macro_rules! eq_chain {
        ($label:lifetime, $x:expr, $run:expr) => {{
            let x: u64 = $x;
            let run: &[EqEntry] = $run;
            for e in run {
                if x == e.value {
                    regs[(e.wreg & 15) as usize] = e.wval;
                    pc = e.jump_pc as usize;
                    jump!($label, e.target)
                }
            }
            // Nothing taken: continue after the last element.
            if let Some(last) = run.last() {
                regs[(last.wreg & 15) as usize] = last.wval;
                pc = last.jump_pc as usize;
            }
        }};
    }
    // The run of `table` a chain op names: entries `a` up to the low half
    // of `imm` (in range: the loader made them).
    macro_rules! run {
        ($table:ident, $op:expr) => {
            prog.$table.get($op.a as usize..$op.imm as u32 as usize).unwrap_or_default()
        };
    }

    // `wD = *(u32 *)(rS + off); if rD <cond> K goto a` (see `StepKind::LoadJeq`).
    macro_rules! load_jcc {
        ($label:lifetime, $op:expr, $d:expr, $s:expr, |$x:ident, $v:ident| $cond:expr) => {{
            let off = (($op.imm >> 32) as u16 as i16) as i64 as u64;
            let $x = u64::from(u32::from_le_bytes(load!(4, regs[$s].wrapping_add(off))));
            regs[$d] = $x;
            pc += 1;
            let $v = $op.imm as u32 as i32 as i64 as u64;
            if $cond {
                jump!($label, $op.a)
            }
        }};
    }

    'run: loop {
        let Some(&op) = ops.get(pc) else {
            return Err(ExecError::FellOffEnd { pc: Pc(pc) });
        };
        let d = (op.dst & 15) as usize;
        let s = (op.src & 15) as usize;
        match op.kind {
            // ALU64 (K and X share: operand = regs[src] | imm); binary
            // operations evaluate as the op table says (`AluOp::eval64`).
            StepKind::Add64 => regs[d] = AluOp::Add.eval64(regs[d], regs[s] | op.imm),
            StepKind::Sub64 => regs[d] = AluOp::Sub.eval64(regs[d], regs[s] | op.imm),
            StepKind::Mul64 => regs[d] = AluOp::Mul.eval64(regs[d], regs[s] | op.imm),
            StepKind::Div64 => regs[d] = AluOp::Div.eval64(regs[d], regs[s] | op.imm),
            StepKind::SDiv64 => regs[d] = AluOp::SDiv.eval64(regs[d], regs[s] | op.imm),
            StepKind::Or64 => regs[d] = AluOp::Or.eval64(regs[d], regs[s] | op.imm),
            StepKind::And64 => regs[d] = AluOp::And.eval64(regs[d], regs[s] | op.imm),
            StepKind::Lsh64 => regs[d] = AluOp::Lsh.eval64(regs[d], regs[s] | op.imm),
            StepKind::Rsh64 => regs[d] = AluOp::Rsh.eval64(regs[d], regs[s] | op.imm),
            StepKind::Neg64 => regs[d] = regs[d].wrapping_neg(),
            StepKind::Mod64 => regs[d] = AluOp::Mod.eval64(regs[d], regs[s] | op.imm),
            StepKind::SMod64 => regs[d] = AluOp::SMod.eval64(regs[d], regs[s] | op.imm),
            StepKind::Xor64 => regs[d] = AluOp::Xor.eval64(regs[d], regs[s] | op.imm),
            StepKind::Mov64 => regs[d] = AluOp::Mov.eval64(regs[d], regs[s] | op.imm),
            StepKind::MovSx64B => regs[d] = regs[s] as i8 as i64 as u64,
            StepKind::MovSx64H => regs[d] = regs[s] as i16 as i64 as u64,
            StepKind::MovSx64W => regs[d] = regs[s] as i32 as i64 as u64,
            StepKind::Arsh64 => regs[d] = AluOp::Arsh.eval64(regs[d], regs[s] | op.imm),
            StepKind::Bswap16 => regs[d] = u64::from((regs[d] as u16).swap_bytes()),
            StepKind::Bswap32 => regs[d] = u64::from((regs[d] as u32).swap_bytes()),
            StepKind::Bswap64 => regs[d] = regs[d].swap_bytes(),
            // ALU32: operate on the low halves, zero-extend the result
            // (`AluOp::eval32`).
            StepKind::Add32 => regs[d] = u64::from(AluOp::Add.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::Sub32 => regs[d] = u64::from(AluOp::Sub.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::Mul32 => regs[d] = u64::from(AluOp::Mul.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::Div32 => regs[d] = u64::from(AluOp::Div.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::SDiv32 => regs[d] = u64::from(AluOp::SDiv.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::Or32 => regs[d] = u64::from(AluOp::Or.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::And32 => regs[d] = u64::from(AluOp::And.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::Lsh32 => regs[d] = u64::from(AluOp::Lsh.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::Rsh32 => regs[d] = u64::from(AluOp::Rsh.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::Neg32 => regs[d] = u64::from((regs[d] as u32).wrapping_neg()),
            StepKind::Mod32 => regs[d] = u64::from(AluOp::Mod.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::SMod32 => regs[d] = u64::from(AluOp::SMod.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::Xor32 => regs[d] = u64::from(AluOp::Xor.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::Mov32 => regs[d] = u64::from(AluOp::Mov.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            StepKind::MovSx32B => regs[d] = u64::from(regs[s] as i8 as i32 as u32),
            StepKind::MovSx32H => regs[d] = u64::from(regs[s] as i16 as i32 as u32),
            StepKind::Arsh32 => regs[d] = u64::from(AluOp::Arsh.eval32(regs[d] as u32, (regs[s] | op.imm) as u32)),
            // END: host (little-endian) <-> LE truncates, <-> BE swaps.
            StepKind::Le16 => regs[d] = u64::from(regs[d] as u16),
            StepKind::Le32 => regs[d] = u64::from(regs[d] as u32),
            StepKind::Le64 => {}
            StepKind::Be16 => regs[d] = u64::from((regs[d] as u16).swap_bytes()),
            StepKind::Be32 => regs[d] = u64::from((regs[d] as u32).swap_bytes()),
            StepKind::Be64 => regs[d] = regs[d].swap_bytes(),
            // JMP: 64-bit compares, K sign-extended at load (`JmpCond::eval64`).
            StepKind::Ja => jump!('run, op.a),
            StepKind::Jeq64 => {
                if JmpCond::Eq.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jgt64 => {
                if JmpCond::Gt.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jge64 => {
                if JmpCond::Ge.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jset64 => {
                if JmpCond::Set.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jne64 => {
                if JmpCond::Ne.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jsgt64 => {
                if JmpCond::Sgt.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jsge64 => {
                if JmpCond::Sge.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jlt64 => {
                if JmpCond::Lt.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jle64 => {
                if JmpCond::Le.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jslt64 => {
                if JmpCond::Slt.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jsle64 => {
                if JmpCond::Sle.eval64(regs[d], regs[s] | op.imm) {
                    jump!('run, op.a)
                }
            }
            // JMP32: compare the low halves (`JmpCond::eval32`).
            StepKind::Jeq32 => {
                if JmpCond::Eq.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jgt32 => {
                if JmpCond::Gt.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jge32 => {
                if JmpCond::Ge.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jset32 => {
                if JmpCond::Set.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jne32 => {
                if JmpCond::Ne.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jsgt32 => {
                if JmpCond::Sgt.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jsge32 => {
                if JmpCond::Sge.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jlt32 => {
                if JmpCond::Lt.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jle32 => {
                if JmpCond::Le.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jslt32 => {
                if JmpCond::Slt.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Jsle32 => {
                if JmpCond::Sle.eval32(regs[d] as u32, (regs[s] | op.imm) as u32) {
                    jump!('run, op.a)
                }
            }
            StepKind::Chain => {
                let x = regs[d];
                chain!('run, x, run!(chain, op));
            }
            StepKind::EqChain => {
                let x = regs[d];
                eq_chain!('run, x, run!(eq, op));
            }
            StepKind::LoadChain => {
                let x = u64::from(u32::from_le_bytes(load!(4, regs[s].wrapping_add(mem_off((op.imm >> 32) as u32)))));
                regs[d] = x;
                chain!('run, x, run!(chain, op));
            }
            StepKind::LoadEqChain => {
                let x = u64::from(u32::from_le_bytes(load!(4, regs[s].wrapping_add(mem_off((op.imm >> 32) as u32)))));
                regs[d] = x;
                eq_chain!('run, x, run!(eq, op));
            }
            StepKind::LoadJeq => load_jcc!('run, op, d, s, |x, v| x == v),
            StepKind::LoadJne => load_jcc!('run, op, d, s, |x, v| x != v),
            StepKind::LoadJgt => load_jcc!('run, op, d, s, |x, v| x > v),
            StepKind::LoadJge => load_jcc!('run, op, d, s, |x, v| x >= v),
            StepKind::LoadJlt => load_jcc!('run, op, d, s, |x, v| x < v),
            StepKind::LoadJle => load_jcc!('run, op, d, s, |x, v| x <= v),
            StepKind::LoadCmpRun => {
                // Linked load-and-compare pairs (see `LoadCmp`): each pair
                // loads, writes rD, compares, then follows its taken or
                // fall-through edge to the next pair without a dispatch.
                let mut k = op.a as usize;
                while let Some(e) = prog.load_cmp.get(k) {
                    pc = e.pc as usize;
                    let x = u64::from(u32::from_le_bytes(load!(4, regs[(e.src & 15) as usize].wrapping_add(e.off))));
                    regs[(e.dst & 15) as usize] = x;
                    if (x.wrapping_sub(e.lo) <= e.span) != e.negate {
                        pc += 1;
                        account!();
                        pc = e.taken as usize;
                        seg = pc;
                        k = e.taken_next as usize;
                    } else {
                        pc += 2;
                        k = e.fall_next as usize;
                    }
                }
                // The next pc is not a pair: dispatch it.
                continue 'run;
            }
            StepKind::RetImm => {
                regs[0] = op.imm;
                pc += 1;
                if depth == 0 {
                    finish!(regs[0])
                }
                // A local function's exit: the `exit` op at pc returns.
                continue 'run;
            }
            StepKind::Prologue => {
                regs[d] = 0;
                regs[s] = 0;
                regs[(op.size & 15) as usize] = regs[(op.a & 15) as usize];
                pc += 3;
                continue 'run;
            }
            StepKind::Call => {
                let (id, f) = prog.helpers[op.a as usize];
                match f(mem, [regs[1], regs[2], regs[3], regs[4], regs[5]]) {
                    Ok(v) => regs[0] = v,
                    Err(source) => return Err(ExecError::Helper { pc: Pc(pc), id: i64::from(id), source }),
                }
            }
            StepKind::Callx => {
                let id = regs[d];
                let found = i32::try_from(id).ok().and_then(|id| prog.helpers.iter().find(|(i, _)| *i == id));
                let Some(&(id, f)) = found else {
                    return Err(ExecError::UnknownHelper { pc: Pc(pc), id });
                };
                match f(mem, [regs[1], regs[2], regs[3], regs[4], regs[5]]) {
                    Ok(v) => regs[0] = v,
                    Err(source) => return Err(ExecError::Helper { pc: Pc(pc), id: i64::from(id), source }),
                }
            }
            StepKind::CallLocal => {
                let Some(frame) = frames.get_mut(depth).filter(|_| depth + 1 < MAX_FRAMES) else {
                    return Err(ExecError::CallDepthExceeded { pc: Pc(pc), max: MAX_FRAMES });
                };
                *frame = Frame { ret: pc + 1, saved: [regs[6], regs[7], regs[8], regs[9]] };
                depth += 1;
                regs[10] = regs[10].wrapping_sub(STACK_SIZE as u64);
                mem.stack_lo = mem.stack_lo.saturating_sub(STACK_SIZE);
                jump!('run, op.a)
            }
            StepKind::Exit => {
                if depth == 0 {
                    finish!(regs[0])
                }
                depth -= 1;
                let f = frames.get(depth).copied().unwrap_or_default();
                regs[6] = f.saved[0];
                regs[7] = f.saved[1];
                regs[8] = f.saved[2];
                regs[9] = f.saved[3];
                regs[10] = regs[10].wrapping_add(STACK_SIZE as u64);
                mem.stack_lo += STACK_SIZE;
                jump!('run, f.ret)
            }
            StepKind::LdImm64 => {
                regs[d] = op.imm;
                pc += 2;
                continue 'run;
            }
            StepKind::LdAbs | StepKind::LdInd => {
                // Pre-4.18 `LD_ABS_*` / `LD_IND_*`: off = (int)(IMM + SRC).
                let off = (op.imm as u32).wrapping_add(regs[s] as u32) as i32;
                match mem.skb.and_then(|skb| skb.header_pointer(off, usize::from(op.size))) {
                    Some(v) => regs[0] = u64::from(v),
                    None => finish!(0),
                }
            }
            StepKind::LdxB => regs[d] = u64::from(load!(1, regs[s].wrapping_add(mem_off(op.a)))[0]),
            StepKind::LdxH => regs[d] = u64::from(u16::from_le_bytes(load!(2, regs[s].wrapping_add(mem_off(op.a))))),
            StepKind::LdxW => regs[d] = u64::from(u32::from_le_bytes(load!(4, regs[s].wrapping_add(mem_off(op.a))))),
            StepKind::LdxDw => regs[d] = u64::from_le_bytes(load!(8, regs[s].wrapping_add(mem_off(op.a)))),
            StepKind::LdxSb => regs[d] = load!(1, regs[s].wrapping_add(mem_off(op.a)))[0] as i8 as i64 as u64,
            StepKind::LdxSh => {
                regs[d] = i16::from_le_bytes(load!(2, regs[s].wrapping_add(mem_off(op.a)))) as i64 as u64;
            }
            StepKind::LdxSw => {
                regs[d] = i32::from_le_bytes(load!(4, regs[s].wrapping_add(mem_off(op.a)))) as i64 as u64;
            }
            StepKind::StB => store!(1, regs[d].wrapping_add(mem_off(op.a)), [(regs[s] | op.imm) as u8]),
            StepKind::StH => store!(2, regs[d].wrapping_add(mem_off(op.a)), ((regs[s] | op.imm) as u16).to_le_bytes()),
            StepKind::StW => store!(4, regs[d].wrapping_add(mem_off(op.a)), ((regs[s] | op.imm) as u32).to_le_bytes()),
            StepKind::StDw => store!(8, regs[d].wrapping_add(mem_off(op.a)), (regs[s] | op.imm).to_le_bytes()),
            StepKind::Atomic => {
                let addr = regs[d].wrapping_add(mem_off(op.a));
                let code = op.imm as i32;
                if op.size == 4 {
                    let Some(slot) = mem.slot::<4>(addr) else {
                        return Err(fault(pc, addr, 4, Access::Store, mem));
                    };
                    let old = u32::from_le_bytes(*slot);
                    let v = regs[s] as u32;
                    let new = atomic_value(code, u64::from(old), u64::from(v), regs[0] & 0xffff_ffff) as u32;
                    *slot = new.to_le_bytes();
                    atomic_writeback(code, regs, s, u64::from(old));
                } else {
                    let Some(slot) = mem.slot::<8>(addr) else {
                        return Err(fault(pc, addr, 8, Access::Store, mem));
                    };
                    let old = u64::from_le_bytes(*slot);
                    let new = atomic_value(code, old, regs[s], regs[0]);
                    *slot = new.to_le_bytes();
                    atomic_writeback(code, regs, s, old);
                }
            }
            StepKind::LoadAcq => {
                let addr = regs[s].wrapping_add(mem_off(op.a));
                regs[d] = match op.size {
                    1 => u64::from(load!(1, addr)[0]),
                    2 => u64::from(u16::from_le_bytes(load!(2, addr))),
                    4 => u64::from(u32::from_le_bytes(load!(4, addr))),
                    _ => u64::from_le_bytes(load!(8, addr)),
                };
            }
            StepKind::StoreRel => {
                let addr = regs[d].wrapping_add(mem_off(op.a));
                let v = regs[s];
                match op.size {
                    1 => store!(1, addr, [v as u8]),
                    2 => store!(2, addr, (v as u16).to_le_bytes()),
                    4 => store!(4, addr, (v as u32).to_le_bytes()),
                    _ => store!(8, addr, v.to_le_bytes()),
                }
            }
        }
        pc += 1;
    }
}

/// New memory value of an atomic read-modify-write (`cmp` = `r0`, already
/// truncated for 32-bit operations): the op table's ALU evaluation for
/// ADD/AND/OR/XOR.
#[inline(always)]
fn atomic_value(code: i32, old: u64, v: u64, cmp: u64) -> u64 {
    match AtomicOp::from_bits(code) {
        Some(AtomicOp::Xchg) => v,
        Some(AtomicOp::Cmpxchg) | None => {
            if old == cmp {
                v
            } else {
                old
            }
        }
        Some(op) => op.alu().map_or(v, |alu| alu.eval64(old, v)),
    }
}

/// Register effects of an atomic: FETCH and XCHG load the old value into
/// `src`, CMPXCHG into `r0` (zero-extended for 32-bit operations).
#[inline(always)]
#[allow(clippy::indexing_slicing)] // s = src & 15 < 16 = regs.len()
fn atomic_writeback(code: i32, regs: &mut [u64; 16], s: usize, old: u64) {
    match AtomicOp::from_bits(code) {
        Some(AtomicOp::Cmpxchg) => regs[0] = old,
        Some(op) if op.fetches() => regs[s & 15] = old,
        _ => {}
    }
}
