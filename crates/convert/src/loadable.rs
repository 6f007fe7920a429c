//! The loadable form of a converted program: the kernel-exact conversion
//! ([`crate::convert`]) rewritten so that the eBPF verifier of Linux 6.18
//! (kernel/bpf/verifier.c) accepts it through `BPF_PROG_LOAD`, with the
//! same result on every input.
//!
//! ```text
//! Converted (bpf_convert_filter's bytes) ─► loadable() ─► Loadable { insns, pc_map }
//!                                                            └─► xdp::seccomp(): behind an XDP prologue
//! ```
//!
//! A converted classic program is never verified in the kernel: it is built
//! inside the kernel, after `bpf_check_classic()`, and handed straight to the
//! interpreter or JIT. Fed to `BPF_PROG_LOAD` as it is, the verifier refuses
//! it. Each rewrite below removes one reason, and names the verifier rule it
//! satisfies (function and message of kernel/bpf/verifier.c, Linux 6.18):
//!
//! 1. **Registers initialised instead of xor'ed.** The prologue clears A and
//!    X with `w0 ^= w0; w7 ^= w7`. At entry the verifier holds every
//!    register but r1 (the context) and r10 (the frame) as `NOT_INIT`
//!    (`init_reg_state()`), and an ALU instruction reads its destination:
//!    `check_reg_arg()` refuses with "R0 !read_ok". Every `wN ^= wN` (and
//!    `rN ^= rN`) becomes `wN = 0` (`BPF_MOV32_IMM`): `x ^ x` is 0 for every
//!    `x` and a 32-bit ALU result is zero-extended, so `rN` is 0 either way.
//!    (The division guard's `w0 ^= w0` reads an initialised r0; it is
//!    rewritten too, by the same rule, with the same result.)
//! 2. **Reserved fields zeroed.** The converter copies classic fields the
//!    eBPF instruction does not use: ALU-K instructions keep `src = r7`, the
//!    X forms of ALU and conditional jumps keep `imm = k`, `neg` keeps both.
//!    The verifier refuses non-zero unused fields: `check_alu_op()` ("BPF_ALU
//!    uses reserved fields", "BPF_NEG uses reserved fields", "BPF_MOV uses
//!    reserved fields"), `check_cond_jmp_op()` ("BPF_JMP/JMP32 uses reserved
//!    fields"), and for `ja`, `exit`, `call`, `ldx` and `stx` the checks of
//!    `do_check_insn()` ("BPF_JA uses reserved fields", ...). Every
//!    instruction is re-encoded from its [`Op`] ([`Op::encode`] writes zero
//!    in every field the op does not read); the converter's output of those
//!    last shapes is clean already, so there the re-encoding changes nothing.
//! 3. **Unreachable instructions dropped, jumps re-targeted.** A classic
//!    program may hold instructions no path reaches (libseccomp's
//!    `allow306_end`), and so does its conversion. `check_cfg()` walks every
//!    edge of the control-flow graph from the first instruction, taking both
//!    sides of every conditional jump, and refuses the program with
//!    "unreachable insn N" when an instruction was not visited. The same
//!    walk is made here ([`Op`]-level successors: fall-through unless `ja` or
//!    `exit`, plus every jump's target), the unvisited instructions are
//!    dropped and every kept jump's offset is recomputed to land on the
//!    instruction it landed on before. Offsets only shrink, so each still
//!    fits its `s16` (`check_cfg()`'s "jump out of range" cannot appear).
//!
//! Nothing else in a converted seccomp program troubles the verifier: jumps
//! only go forward (no "back-edge"), the last instruction is an `exit`
//! (`check_subprogs()`: "last insn is not an exit or jmp"; dropping
//! unreachable code keeps it so, because every reachable instruction that
//! is not an `exit` or `ja` has a reachable successor after it), stack
//! slots are written before they are read on every path
//! (`check_load_and_stores()` of the classic program guarantees it, and the
//! accesses are 4-byte aligned words at `fp - 4 .. fp - 64`: `check_stack_access()`,
//! `check_ptr_alignment()`), shifts by a constant are below 32 and
//! constant divisors are not 0 (`bpf_check_classic()` refuses the others;
//! the verifier's "invalid shift" and "div by zero"), `seccomp_data` loads
//! are aligned words inside the 64 bytes (`seccomp_check_filter()`), and the
//! returned r0 is a scalar.
//!
//! # What the loadable form means
//!
//! The program keeps the converted program's calling convention: r1 points
//! at the 64 bytes of `struct seccomp_data` (copied to r6 by the prologue)
//! and r0 at `exit` is the filter's 32-bit result. No kernel program type
//! passes a `struct seccomp_data` as its context, so a harness supplies it:
//! [`xdp::seccomp`] puts the program behind an XDP prologue whose packet
//! is the 64 bytes.
//!
//! Socket filters have no loadable form here ([`LoadableError::SocketFilter`]):
//! their conversion reads our documented socket context ([`ebpf::skb`], not
//! `struct __sk_buff`; its `data` field as a 64-bit pointer, which no
//! program type's context allows), caches `skb->data` and the head length
//! in r8/r9, and calls helpers by our ids ([`ebpf::skb::helper`]). A
//! socket program the verifier accepts needs the context re-targeted and
//! the packet guarded: that is a code generator for a hook of its own
//! (socket filter, tc, XDP), not a rewrite of the kernel's conversion.
//!
//! # Same result on every input
//!
//! The rewrite is local: the loadable form's instruction `pc_map.loadable_pc(i)`
//! is converted instruction `i` with (1) applied (an identity on results),
//! re-encoded (interpreters read only the fields an [`Op`] has, so the
//! re-encoded instruction decodes to the same [`Op`]) and, for jumps, the
//! offset changed so that the target is the image of the old target. A run
//! of the converted program visits only reachable instructions, so the run
//! of the loadable form is its image instruction by instruction: the same
//! registers and stack after each step, the same steps, the same result.
//! `crates/integration/tests/loadable.rs` checks that correspondence op by
//! op and runs both forms on every testdata vector and generated input.

pub mod xdp;

use std::ops::Range;

use cbpf::Mode;
use ebpf::op::{AluOp, Op, Operand};
use ebpf::Insn;

use crate::filter::{Converted, PcMap};

/// Why a converted program has no loadable form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadableError {
    #[error(
        "socket filters have no loadable form: their conversion reads bpfconv's socket context (ebpf::skb) \
         and calls its helper ids, which no kernel program type provides"
    )]
    SocketFilter,
    #[error("insn {pc}: {source}")]
    Decode { pc: ebpf::Pc, source: ebpf::op::OpError },
    #[error("insn {pc}: {what} never appears in a converted classic program")]
    Unsupported { pc: ebpf::Pc, what: &'static str },
    #[error("insn {pc}: jump to {target} leaves the program")]
    JumpOutside { pc: ebpf::Pc, target: i64 },
    #[error("insn {pc}: execution falls off the end of the program")]
    FallsOffEnd { pc: ebpf::Pc },
    #[error("insn {pc}: re-targeted jump offset {off} does not fit in 16 bits")]
    Offset { pc: ebpf::Pc, off: i64 },
    #[error("insn {pc}: writes r{reg}, the register the timing harness keeps the packet pointer in")]
    KeptRegister { pc: ebpf::Pc, reg: u8 },
}

/// A converted program in the form the verifier accepts (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loadable {
    /// The program: r1 = `struct seccomp_data *`, r0 at `exit` = the filter's result.
    pub insns: Vec<Insn>,
    /// Classic pc → loadable instructions, and converted ↔ loadable pcs.
    pub pc_map: LoadableMap,
    /// Bytes of stack the program uses (the conversion's `stack_depth`).
    pub stack_depth: u32,
}

/// Where each instruction went: classic pc → loadable range (through the
/// conversion's [`PcMap`]), converted pc ↔ loadable pc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadableMap {
    /// The kernel-exact conversion's map.
    converted: PcMap,
    /// `index[i]`: how many converted instructions before `i` were kept,
    /// which is the loadable pc of `i` when `i` is kept. One entry per
    /// converted instruction, plus the total.
    index: Vec<usize>,
    /// Per converted instruction: kept (reachable)?
    kept: Vec<bool>,
}

impl LoadableMap {
    /// The loadable instructions classic instruction `pc` became: an empty
    /// range when no path reaches it; `None` past the end.
    pub fn range(&self, pc: cbpf::Pc) -> Option<Range<usize>> {
        let r = self.converted.range(pc)?;
        Some(*self.index.get(r.start)?..*self.index.get(r.end)?)
    }

    /// Whether some path reaches classic instruction `pc` (its group was kept).
    pub fn reaches(&self, pc: cbpf::Pc) -> bool {
        self.range(pc).is_some_and(|r| !r.is_empty())
    }

    /// The loadable pc of converted instruction `epc`; `None` when it was
    /// dropped or past the end.
    pub fn loadable_pc(&self, epc: ebpf::Pc) -> Option<ebpf::Pc> {
        match self.kept.get(epc.0) {
            Some(true) => self.index.get(epc.0).copied().map(ebpf::Pc),
            _ => None,
        }
    }

    /// The converted instruction loadable instruction `lpc` came from.
    pub fn converted_pc(&self, lpc: ebpf::Pc) -> Option<ebpf::Pc> {
        // The kept instruction whose index is lpc: the last i with index[i] <= lpc.
        let i = self.index.partition_point(|&n| n <= lpc.0).checked_sub(1)?;
        (self.kept.get(i) == Some(&true)).then_some(ebpf::Pc(i))
    }

    /// The classic instruction loadable instruction `lpc` belongs to
    /// (`None` for the prologue and past the end).
    pub fn classic_pc(&self, lpc: ebpf::Pc) -> Option<cbpf::Pc> {
        self.converted.classic_pc(self.converted_pc(lpc)?)
    }

    /// Converted instructions dropped as unreachable.
    pub fn dropped(&self) -> usize {
        self.kept.iter().filter(|&&k| !k).count()
    }

    /// The kernel-exact conversion's map.
    pub fn converted(&self) -> &PcMap {
        &self.converted
    }
}

/// The loadable form of `converted`, a seccomp filter's conversion (`mode`
/// is the classic program's).
///
/// Rewrites the kernel-exact conversion as the module docs list, each step
/// named after the rule of kernel/bpf/verifier.c (Linux 6.18) it satisfies:
/// `check_reg_arg()` (registers initialised), `check_alu_op()` /
/// `check_cond_jmp_op()` / `do_check_insn()` (reserved fields zeroed),
/// `check_cfg()` (unreachable instructions dropped).
///
/// # Errors
/// [`LoadableError::SocketFilter`] for socket filters; the other variants
/// only for instruction streams the converter never emits.
///
/// # Deviations
/// Not a kernel function: the kernel never loads its conversions through
/// the verifier. The result equals the converted program's on every input
/// (module docs).
pub fn loadable(converted: &Converted, mode: Mode) -> Result<Loadable, LoadableError> {
    if mode == Mode::Socket {
        return Err(LoadableError::SocketFilter);
    }
    let ops = decode(&converted.insns)?;
    let kept = reachable(&ops)?;
    let mut index = Vec::with_capacity(kept.len() + 1);
    let mut n = 0;
    for &k in &kept {
        index.push(n);
        n += usize::from(k);
    }
    index.push(n);
    let mut insns = Vec::with_capacity(n);
    for (pc, (op, _)) in ops.iter().zip(&kept).enumerate().filter(|(_, (_, &k))| k) {
        let op = retarget(initialised(*op), pc, &index)?;
        insns.push(op.encode().first());
    }
    Ok(Loadable {
        insns,
        pc_map: LoadableMap { converted: converted.pc_map.clone(), index, kept },
        stack_depth: converted.stack_depth,
    })
}

/// Every instruction as its [`Op`]; the converter emits one-slot ops only
/// (a `ld_imm64` is a decode error: its second slot is not read).
fn decode(insns: &[Insn]) -> Result<Vec<Op>, LoadableError> {
    insns
        .iter()
        .enumerate()
        .map(|(pc, &insn)| {
            let op = Op::decode(insn, None).map_err(|source| LoadableError::Decode { pc: ebpf::Pc(pc), source })?;
            let what = match op {
                Op::Gotol { .. } => "gotol",
                Op::Callx { .. } => "callx",
                Op::Call { kind, .. } if kind != ebpf::op::CallKind::Helper => "a local or kfunc call",
                _ => return Ok(op),
            };
            Err(LoadableError::Unsupported { pc: ebpf::Pc(pc), what })
        })
        .collect()
}

/// Where control goes after `op` at `pc`: the fall-through and the jump
/// target, as `check_cfg()`'s `visit_insn()` pushes them (both sides of a
/// conditional jump, whatever the registers hold).
fn successors(op: &Op, pc: usize) -> [Option<i64>; 2] {
    let next = Some(pc as i64 + 1);
    let target = |off: i16| Some(pc as i64 + 1 + i64::from(off));
    match *op {
        Op::Exit => [None, None],
        Op::Ja { off } => [target(off), None],
        Op::Jmp { off, .. } => [next, target(off)],
        _ => [next, None],
    }
}

/// Which instructions a path from the first one reaches: the depth-first
/// walk of `check_cfg()` (kernel/bpf/verifier.c, Linux 6.18) without its
/// other checks, each instruction visited once.
fn reachable(ops: &[Op]) -> Result<Vec<bool>, LoadableError> {
    let mut seen = vec![false; ops.len()];
    let mut stack = vec![0usize];
    if let Some(first) = seen.first_mut() {
        *first = true;
    }
    while let Some(pc) = stack.pop() {
        let Some(op) = ops.get(pc) else { continue };
        for (i, to) in successors(op, pc).into_iter().enumerate() {
            let Some(to) = to else { continue };
            let slot = usize::try_from(to).ok().and_then(|t| seen.get_mut(t).map(|s| (t, s)));
            match slot {
                Some((_, true)) => {}
                Some((t, s)) => {
                    *s = true;
                    stack.push(t);
                }
                // The fall-through (always first) off the end; a jump out.
                None if i == 0 && !matches!(op, Op::Ja { .. }) => {
                    return Err(LoadableError::FallsOffEnd { pc: ebpf::Pc(pc) })
                }
                None => return Err(LoadableError::JumpOutside { pc: ebpf::Pc(pc), target: to }),
            }
        }
    }
    Ok(seen)
}

/// Rewrite 1: `wN ^= wN` (or `rN ^= rN`) becomes `wN = 0`, which reads no register.
fn initialised(op: Op) -> Op {
    match op {
        Op::Alu { op: AluOp::Xor, dst, src: Operand::X(src), .. } if src == dst => {
            Op::Alu { width: ebpf::op::Width::W32, op: AluOp::Mov, dst, src: Operand::K(0) }
        }
        other => other,
    }
}

/// Rewrite 3's second half: a jump's offset recomputed with the loadable
/// pcs (`index`) so it lands on the image of its old target.
fn retarget(op: Op, pc: usize, index: &[usize]) -> Result<Op, LoadableError> {
    let new_off = |off: i16| -> Result<i16, LoadableError> {
        let target = pc as i64 + 1 + i64::from(off);
        let at = |i: i64| usize::try_from(i).ok().and_then(|i| index.get(i)).map(|&n| n as i64);
        let (Some(from), Some(to)) = (at(pc as i64), at(target)) else {
            return Err(LoadableError::JumpOutside { pc: ebpf::Pc(pc), target });
        };
        let off = to - from - 1;
        i16::try_from(off).map_err(|_| LoadableError::Offset { pc: ebpf::Pc(pc), off })
    };
    Ok(match op {
        Op::Ja { off } => Op::Ja { off: new_off(off)? },
        Op::Jmp { width, cond, dst, src, off } => Op::Jmp { width, cond, dst, src, off: new_off(off)? },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{convert, Options};
    use cbpf::{validate, Insn as C};

    fn conv(insns: &[C]) -> Converted {
        convert(&validate(insns, Mode::Seccomp).unwrap(), &Options::default()).unwrap()
    }

    /// The three rewrites on a small program: the prologue's xors become
    /// moves, ALU-K's `src = r7` and JMP-X's `imm = k` are cleared, and the
    /// unreachable `ret` is dropped with the jump over it shortened.
    #[test]
    fn each_rewrite_on_a_small_program() {
        let c = conv(&[
            C::stmt(0x20, 0),           // ld [0]
            C::stmt(0x04, 5),           // add #5
            C::stmt(0x01, 9),           // ldx #9
            C::jump(0x1d, 7, 0, 1),     // jeq x (k = 7 junk), 0, 1
            C::stmt(0x05, 1),           // ja +1
            C::stmt(0x06, 1),           // ret #1 (reached by jf)
            C::stmt(0x06, 0x7fff_0000), // ret ALLOW
        ]);
        // Every instruction is reached (`ret #1` by the jeq's false branch).
        let l = loadable(&c, Mode::Seccomp).unwrap();
        assert_eq!(c.insns[0], Insn::new(0xac, 0, 0, 0, 0));
        assert_eq!(l.insns[0], Insn::new(0xb4, 0, 0, 0, 0));
        assert_eq!(l.insns[1], Insn::new(0xb4, 7, 0, 0, 0));
        assert_eq!(c.insns[4], Insn::new(0x04, 0, 7, 0, 5));
        assert_eq!(l.insns[4], Insn::new(0x04, 0, 0, 0, 5));
        // jeq x, 0, 1 became JNE X with the classic k in imm.
        assert_eq!((c.insns[6].code, c.insns[6].imm), (0x5d, 7));
        assert_eq!(l.insns[6], Insn { imm: 0, ..c.insns[6] });
        assert_eq!(l.pc_map.dropped(), 0);
        assert_eq!(l.insns.len(), c.insns.len());

        // An unreachable classic `ret` between a `ja` and its target.
        let c = conv(&[C::stmt(0x05, 1), C::stmt(0x06, 1), C::stmt(0x06, 2)]);
        let l = loadable(&c, Mode::Seccomp).unwrap();
        // w0 = 0; w7 = 0; r6 = r1; ja +0; w0 = 2; exit
        assert_eq!(c.insns[3], Insn::new(0x05, 0, 0, 2, 0));
        assert_eq!(l.insns[3], Insn::new(0x05, 0, 0, 0, 0));
        assert_eq!(l.insns.len(), c.insns.len() - 2);
        assert_eq!(l.pc_map.dropped(), 2);
        assert!(!l.pc_map.reaches(cbpf::Pc(1)));
        assert_eq!(l.pc_map.range(cbpf::Pc(1)), Some(4..4));
        assert_eq!(l.pc_map.range(cbpf::Pc(2)), Some(4..6));
        assert_eq!(l.pc_map.loadable_pc(ebpf::Pc(4)), None);
        assert_eq!(l.pc_map.loadable_pc(ebpf::Pc(6)), Some(ebpf::Pc(4)));
        assert_eq!(l.pc_map.converted_pc(ebpf::Pc(4)), Some(ebpf::Pc(6)));
        assert_eq!(l.pc_map.classic_pc(ebpf::Pc(4)), Some(cbpf::Pc(2)));
        assert_eq!(l.pc_map.classic_pc(ebpf::Pc(0)), None);
        assert_eq!(l.pc_map.classic_pc(ebpf::Pc(6)), None);
        assert_eq!(l.pc_map.range(cbpf::Pc(3)), None);
    }

    #[test]
    fn socket_filters_are_refused_with_a_reason() {
        let prog = validate(&[C::stmt(0x30, 12), C::stmt(0x16, 0)], Mode::Socket).unwrap();
        let c = convert(&prog, &Options::default()).unwrap();
        let e = loadable(&c, Mode::Socket).unwrap_err();
        assert_eq!(e, LoadableError::SocketFilter);
        assert!(e.to_string().contains("ebpf::skb"), "{e}");
    }

    /// Instruction streams the converter never emits are errors, not panics.
    #[test]
    fn foreign_streams_are_typed_errors() {
        let c = |insns: Vec<Insn>| {
            let mut c = conv(&[C::stmt(0x06, 0)]);
            c.insns = insns;
            loadable(&c, Mode::Seccomp)
        };
        let exit = Insn::new(0x95, 0, 0, 0, 0);
        assert!(matches!(c(vec![Insn::new(0xb7, 0, 0, 0, 0)]), Err(LoadableError::FallsOffEnd { .. })));
        assert!(matches!(c(vec![Insn::new(0x05, 0, 0, 5, 0), exit]), Err(LoadableError::JumpOutside { .. })));
        assert!(matches!(c(vec![Insn::new(0xff, 0, 0, 0, 0), exit]), Err(LoadableError::Decode { .. })));
        assert!(matches!(
            c(vec![Insn::new(0x18, 0, 0, 0, 0), Insn::default(), exit]),
            Err(LoadableError::Decode { .. })
        ));
        assert!(matches!(c(vec![Insn::new(0x06, 0, 0, 0, 0), exit]), Err(LoadableError::Unsupported { .. })));
        // A backward jump that loops is reachable code, kept as it is.
        let l = c(vec![Insn::new(0xb7, 0, 0, 0, 0), Insn::new(0x05, 0, 0, -2, 0), exit]).unwrap();
        assert_eq!(l.insns[1].off, -2);
        assert_eq!(l.pc_map.dropped(), 1);
    }
}
