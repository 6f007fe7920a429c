//! The tracing entry point: a plain step-by-step interpreter over the raw
//! instructions that reports every executed instruction.
//!
//! Written independently of the fast path (no pre-decoding, no compare
//! runs), so the two check each other in tests.

use crate::insn::{AluOp, Insn, JmpOp, Op, Pc, Src};
use crate::opcode::SKF_AD_OFF;
use crate::validate::is_ancillary;

use crate::exec::context::{Ancillary, Context, SeccompCtx, SocketCtx};
use crate::exec::{expect_mode, ExecError};
use crate::uapi::seccomp_data::SECCOMP_DATA_SIZE;
use crate::uapi::Skb;
use crate::validate::{Mode, Program};

/// One executed instruction and the machine state before it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceStep {
    /// Where the instruction is.
    pub pc: Pc,
    /// The instruction (post-rewrite form, as run).
    pub insn: Insn,
    /// Accumulator before the instruction.
    pub a: u32,
    /// Index register before the instruction.
    pub x: u32,
    /// Scratch memory before the instruction. Words never written read 0
    /// here; the kernel leaves them uninitialised, which the checker makes
    /// unobservable.
    pub mem: [u32; 16],
}

/// [`crate::Interp::trace_seccomp`] without an [`crate::Interp`]: tracing
/// reads only the instructions, and compiling an interpreter costs far more
/// than one traced run (a check that traces each input once needs none).
pub fn trace_seccomp(
    program: &Program,
    data: &[u8; SECCOMP_DATA_SIZE],
    on_step: impl FnMut(&TraceStep),
) -> Result<u32, ExecError> {
    seccomp_steps(program.mode(), program.insns(), data, on_step)
}

/// [`crate::Interp::trace_socket`] without an [`crate::Interp`]: see
/// [`trace_seccomp`].
pub fn trace_socket(program: &Program, skb: &Skb<'_>, on_step: impl FnMut(&TraceStep)) -> Result<u32, ExecError> {
    socket_steps(program.mode(), program.insns(), skb, on_step)
}

/// `insns`, validated for `mode`, traced on a seccomp context.
pub(super) fn seccomp_steps(
    mode: Mode,
    insns: &[Insn],
    data: &[u8; SECCOMP_DATA_SIZE],
    on_step: impl FnMut(&TraceStep),
) -> Result<u32, ExecError> {
    expect_mode(mode, Mode::Seccomp)?;
    Ok(run(insns, &SeccompCtx(data), on_step))
}

/// `insns`, validated for `mode`, traced on a socket context.
pub(super) fn socket_steps(
    mode: Mode,
    insns: &[Insn],
    skb: &Skb<'_>,
    on_step: impl FnMut(&TraceStep),
) -> Result<u32, ExecError> {
    expect_mode(mode, Mode::Socket)?;
    Ok(run(insns, &SocketCtx::new(skb), on_step))
}

/// Runs `insns` on `ctx`, calling `on_step` before each instruction.
///
/// Same semantics as the fast path (`Interp::exec`); see there.
///
/// # Deviations
/// None.
pub(super) fn run<C: Context>(insns: &[Insn], ctx: &C, mut on_step: impl FnMut(&TraceStep)) -> u32 {
    let mut step = TraceStep { pc: Pc(0), insn: Insn::default(), a: 0, x: 0, mem: [0; 16] };
    let mut pc = 0usize;
    // Forward-only jumps: at most insns.len() steps.
    while let Some(&insn) = insns.get(pc) {
        step.pc = Pc(pc);
        step.insn = insn;
        on_step(&step);
        let TraceStep { a, x, .. } = step;
        let mut next = pc + 1;
        let Some(op) = insn.op() else { return 0 };
        match op {
            Op::LdImm { k } => step.a = k,
            Op::LdxImm { k } => step.x = k,
            Op::LdMem { k } => step.a = mem(&step.mem, k),
            Op::LdxMem { k } => step.x = mem(&step.mem, k),
            Op::St { k } => set_mem(&mut step.mem, k, a),
            Op::Stx { k } => set_mem(&mut step.mem, k, x),
            Op::LdAbs { size, k } if is_ancillary(k) => {
                let _ = size; // ancillary loads ignore the size
                let Some(which) = Ancillary::from_offset(k - SKF_AD_OFF) else { return 0 };
                match ctx.ancillary(which, a, x) {
                    Some(v) => step.a = v,
                    None => return a,
                }
            }
            Op::LdAbs { size, k } => match ctx.load(size.bytes() as usize, k as i32) {
                Some(v) => step.a = v,
                None => return 0,
            },
            Op::LdInd { size, k } => match ctx.load(size.bytes() as usize, x.wrapping_add(k) as i32) {
                Some(v) => step.a = v,
                None => return 0,
            },
            Op::LdLen => step.a = ctx.len(),
            Op::LdxLen => step.x = ctx.len(),
            Op::LdxMsh { k } => match ctx.load(1, k as i32) {
                Some(v) => step.x = 4 * (v & 0xf),
                None => return 0,
            },
            Op::LdxAbsSeccomp { k } => step.a = ctx.seccomp_word(k),
            Op::Alu { op, src, k } => {
                let operand = match src {
                    Src::K => k,
                    Src::X => x,
                };
                step.a = match op {
                    AluOp::Add => a.wrapping_add(operand),
                    AluOp::Sub => a.wrapping_sub(operand),
                    AluOp::Mul => a.wrapping_mul(operand),
                    AluOp::Div => match a.checked_div(operand) {
                        Some(v) => v,
                        None => return 0,
                    },
                    AluOp::Mod => match a.checked_rem(operand) {
                        Some(v) => v,
                        None => return 0,
                    },
                    AluOp::Or => a | operand,
                    AluOp::And => a & operand,
                    AluOp::Xor => a ^ operand,
                    AluOp::Lsh => a << (operand & 31),
                    AluOp::Rsh => a >> (operand & 31),
                };
            }
            Op::Neg => step.a = 0u32.wrapping_sub(a),
            Op::Ja { k } => next = pc + 1 + k as usize,
            Op::Jmp { op, src, k, jt, jf } => {
                let operand = match src {
                    Src::K => k,
                    Src::X => x,
                };
                let taken = match op {
                    JmpOp::Jeq => a == operand,
                    JmpOp::Jgt => a > operand,
                    JmpOp::Jge => a >= operand,
                    JmpOp::Jset => a & operand != 0,
                };
                next = pc + 1 + usize::from(if taken { jt } else { jf });
            }
            Op::RetK { k } => return k,
            Op::RetA => return a,
            Op::Tax => step.x = a,
            Op::Txa => step.a = x,
        }
        pc = next;
    }
    0
}

fn mem(mem: &[u32; 16], k: u32) -> u32 {
    mem.get(k as usize).copied().unwrap_or(0)
}

fn set_mem(mem: &mut [u32; 16], k: u32, v: u32) {
    if let Some(slot) = mem.get_mut(k as usize) {
        *slot = v;
    }
}
