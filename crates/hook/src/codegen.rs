//! The one code generator behind every hook target and the fragment: a
//! validated classic program in, eBPF that the verifier accepts out.
//!
//! A [`Layout`] says which registers hold A, X, the packet pointers and the
//! context, where `M[]` lives on the stack, how packet bytes are read
//! (direct access behind guards, or the socket program type's `LD_ABS` /
//! `LD_IND`) and how the filter ends (return a verdict or value, or jump to
//! the end of a fragment). Per classic instruction:
//!
//! | classic | eBPF |
//! |---|---|
//! | ALU on A | the `BPF_ALU32` op on A (`div x`/`mod x`: `if wX == 0` the filter returns 0 first) |
//! | `ld [k]` (packet) | guard (if the [`GuardPlan`] puts one here), `ldx` from `data + pos`, `be16`/`be32`; socket: `LD_ABS` at `SKF_LL_OFF + k` |
//! | `ld [x + k]` | `X + k` (32-bit), its region when it may be negative, `if r > 0xffff - size` returns 0 (the verifier's bound), its own bounds check, the load; socket: `LD_IND` |
//! | `ld M[k]` / `st M[k]` | a 32-bit load/store at `fp + mem + 4k` |
//! | jumps | `BPF_JMP32` on A (and X), the false edge falling through where it can |
//! | `ret` | the verdict or value and `exit` (fragment: the result and a jump past its end) |
//! | ancillary loads | [`crate::ancillary`]'s table |
//!
//! A failing load or a division by X = 0 jumps to one `fail` block that
//! returns 0 (`XDP_DROP`/`TC_ACT_SHOT` as a verdict). In tc a guard that
//! fails on a non-linear skb first pulls the bytes into the linear area
//! (`bpf_skb_pull_data()`) and checks again, out of line.

use std::ops::Range;

use cbpf::opcode::{SKF_LL_OFF, SKF_NET_OFF};
use cbpf::{JmpOp, Op, Program, Src};
use ebpf::filter_h::{
    alu32_imm, alu32_reg, alu64_imm, alu64_reg, emit_call, endian_from_be, exit_insn, jmp32_imm, jmp32_reg, jmp_a,
    jmp_imm, jmp_reg, ld_abs, ld_ind, ldx_mem, mov32_imm, mov32_reg, mov64_reg, neg32, stx_mem,
};
use ebpf::op::{AluOp, JmpCond, Size};
use ebpf::opcode::{R0, R1, R10, R2};
use ebpf::Insn;

use crate::analysis::{self, Access, GuardPlan, MAX_PACKET_OFF, NETWORK_OFFSET};
use crate::ancillary::{self, Ancillary, Source};
use crate::{HookError, Target, Verdict};

/// How packet bytes are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Packet {
    /// Direct packet access: `start`/`end` hold `data`/`data_end`.
    Direct { start: u8, end: u8 },
    /// The socket program type's `LD_ABS`/`LD_IND` (A must be r0, the
    /// context r6; both clobber r1-r5).
    LdAbs,
}

/// How the filter ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// `exit` with the verdict or value of the classic result (A is r0).
    Return(Verdict),
    /// The result in A and a jump to the first instruction past the code.
    Jump,
}

/// The tc slow path's stack slots (8 bytes each, below `M[]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pull {
    /// Where A is kept across `bpf_skb_pull_data()`.
    pub a_slot: i16,
    /// Where an indirect load's offset is kept across it.
    pub offset_slot: i16,
}

/// Registers, stack and conventions of one generated program or fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub a: u8,
    pub x: u8,
    /// Scratch registers (dead between classic instructions).
    pub t0: u8,
    pub t1: u8,
    /// `fp` offset of `M[0]` (64 bytes up from there).
    pub mem: i16,
    pub packet: Packet,
    /// The context register (callee-saved), when the code may read it.
    pub ctx: Option<u8>,
    /// Whose context and ancillary values (`None`: a fragment, which has
    /// only the packet).
    pub target: Option<Target>,
    pub ending: Ending,
    /// Whether helpers may be called (A in r0, everything else that lives
    /// across a call in r6-r9).
    pub helpers: bool,
    /// tc: pull non-linear bytes when a guard fails.
    pub pull: Option<Pull>,
}

/// What the generator produced.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    pub insns: Vec<Insn>,
    /// The instructions each classic pc became (`None`: unreachable, not
    /// emitted).
    pub pc_map: Vec<Option<Range<usize>>>,
    /// Direct access only.
    pub guards: Option<GuardPlan>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    Pc(usize),
    Fail,
    End,
    Local(usize),
}

/// Instructions with symbolic jump targets, resolved at the end.
#[derive(Debug, Default)]
struct Asm {
    insns: Vec<Insn>,
    fixups: Vec<(usize, Label, usize)>,
    locals: Vec<Option<usize>>,
}

impl Asm {
    fn emit(&mut self, insn: Insn) {
        self.insns.push(insn);
    }

    /// Emits a jump whose offset is filled in at the end; `pc` names the
    /// classic instruction it belongs to, for errors.
    fn jump(&mut self, insn: Insn, to: Label, pc: usize) {
        self.fixups.push((self.insns.len(), to, pc));
        self.insns.push(insn);
    }

    fn label(&mut self) -> Label {
        self.locals.push(None);
        Label::Local(self.locals.len() - 1)
    }

    fn bind(&mut self, label: Label) {
        if let Label::Local(i) = label {
            if let Some(slot) = self.locals.get_mut(i) {
                *slot = Some(self.insns.len());
            }
        }
    }

    fn here(&self) -> usize {
        self.insns.len()
    }
}

/// Generates `program` in `layout`.
pub(crate) fn generate(program: &Program, layout: &Layout, prologue: &[Insn]) -> Result<Generated, HookError> {
    let ops = analysis::ops(program);
    let fails: Vec<bool> = ops.iter().map(|&op| always_fails(op, layout.packet)).collect();
    let facts = analysis::facts(&ops, &fails);
    check_ancillaries(&ops, &facts.reachable, layout)?;
    let guards = matches!(layout.packet, Packet::Direct { .. }).then(|| GuardPlan::new(&ops, &facts.reachable));
    let mut g = Gen { asm: Asm::default(), layout: *layout, slow: Vec::new(), fail_used: false };
    for &insn in prologue {
        g.asm.emit(insn);
    }
    let mut starts: Vec<Option<usize>> = vec![None; ops.len()];
    let mut pc_map: Vec<Option<Range<usize>>> = vec![None; ops.len()];
    for (pc, &op) in ops.iter().enumerate() {
        if facts.reachable.get(pc) != Some(&true) {
            continue;
        }
        let start = g.asm.here();
        if let Some(s) = starts.get_mut(pc) {
            *s = Some(start);
        }
        let guard = guards.as_ref().and_then(|p| p.guard(pc));
        let nonnegative = facts.nonnegative_index.get(pc) == Some(&true);
        let available = guards.as_ref().map_or(0, |p| p.available(pc));
        g.op(pc, op, guard, nonnegative, available)?;
        if let Some(m) = pc_map.get_mut(pc) {
            *m = Some(start..g.asm.here());
        }
    }
    // Out-of-line code: tc's slow paths, then the fail block.
    let slow = std::mem::take(&mut g.slow);
    for s in slow {
        g.emit_slow(s);
    }
    let fail = g.fail_used.then(|| g.asm.here());
    if fail.is_some() {
        match layout.ending {
            Ending::Return(verdict) => {
                g.asm.emit(mov32_imm(R0, fail_value(verdict, layout.target)));
                g.asm.emit(exit_insn());
            }
            Ending::Jump => g.asm.emit(mov32_imm(layout.a, 0)),
        }
    }
    let end = g.asm.here();
    let insns = resolve(g.asm, &starts, fail, end)?;
    Ok(Generated { insns, pc_map, guards })
}

/// The first reachable ancillary load the layout has no value for.
fn check_ancillaries(ops: &[Op], reachable: &[bool], layout: &Layout) -> Result<(), HookError> {
    for (pc, &op) in ops.iter().enumerate() {
        let Op::LdAbs { k, .. } = op else { continue };
        let Some(anc) = Ancillary::from_k(k) else { continue };
        if reachable.get(pc) != Some(&true) {
            continue;
        }
        match layout.target {
            None => match anc.source(Target::Xdp) {
                Some(Source::XorX) => {}
                _ => return Err(HookError::NotInFragment { pc, what: anc.name() }),
            },
            Some(target) => match anc.source(target) {
                None => return Err(HookError::NoValue { pc, load: anc, target }),
                Some(Source::Helper(_)) if !layout.helpers => {
                    return Err(HookError::NotInFragment { pc, what: anc.name() })
                }
                Some(_) => {}
            },
        }
    }
    Ok(())
}

/// The value the `fail` block returns: the classic 0 as a verdict or value.
fn fail_value(verdict: Verdict, target: Option<Target>) -> i32 {
    match (verdict, target) {
        (Verdict::Action, Some(t)) => t.verdict(false),
        _ => 0,
    }
}

fn resolve(asm: Asm, starts: &[Option<usize>], fail: Option<usize>, end: usize) -> Result<Vec<Insn>, HookError> {
    let Asm { mut insns, fixups, locals } = asm;
    for (at, label, pc) in fixups {
        let target = match label {
            // A jump to an instruction that emitted nothing lands on the
            // next one that did.
            Label::Pc(p) => starts.get(p..).and_then(|s| s.iter().flatten().next().copied()).unwrap_or(end),
            Label::Fail => fail.unwrap_or(end),
            Label::End => end,
            Label::Local(i) => locals.get(i).copied().flatten().unwrap_or(end),
        };
        let off = target as i64 - at as i64 - 1;
        let off = i16::try_from(off).map_err(|_| HookError::JumpTooFar { pc, distance: off })?;
        if let Some(insn) = insns.get_mut(at) {
            insn.off = off;
        }
    }
    Ok(insns)
}

/// An out-of-line tc slow path, emitted after the body.
#[derive(Debug, Clone, Copy)]
enum Slow {
    /// A constant guard of `len` bytes failed; back to `cont`.
    Guard { entry: Label, len: u32, cont: Label, pc: usize },
    /// An indirect load's check failed with its offset in `t0`; `available`
    /// bytes were checked before it.
    Indirect { entry: Label, size: u32, cont: Label, pc: usize, available: u32 },
}

struct Gen {
    asm: Asm,
    layout: Layout,
    slow: Vec<Slow>,
    fail_used: bool,
}

fn ebpf_size(size: u32) -> Size {
    match size {
        1 => Size::B,
        2 => Size::H,
        _ => Size::W,
    }
}

fn cbpf_size(size: cbpf::Size) -> u32 {
    size.bytes()
}

fn alu_op(op: cbpf::AluOp) -> AluOp {
    match op {
        cbpf::AluOp::Add => AluOp::Add,
        cbpf::AluOp::Sub => AluOp::Sub,
        cbpf::AluOp::Mul => AluOp::Mul,
        cbpf::AluOp::Div => AluOp::Div,
        cbpf::AluOp::Or => AluOp::Or,
        cbpf::AluOp::And => AluOp::And,
        cbpf::AluOp::Lsh => AluOp::Lsh,
        cbpf::AluOp::Rsh => AluOp::Rsh,
        cbpf::AluOp::Mod => AluOp::Mod,
        cbpf::AluOp::Xor => AluOp::Xor,
    }
}

/// The eBPF condition of a classic jump, and its negation where eBPF has one.
fn jmp_cond(op: JmpOp) -> (JmpCond, Option<JmpCond>) {
    match op {
        JmpOp::Jeq => (JmpCond::Eq, Some(JmpCond::Ne)),
        JmpOp::Jgt => (JmpCond::Gt, Some(JmpCond::Le)),
        JmpOp::Jge => (JmpCond::Ge, Some(JmpCond::Lt)),
        JmpOp::Jset => (JmpCond::Set, None),
    }
}

impl Gen {
    fn fail(&mut self, insn: Insn, pc: usize) {
        self.fail_used = true;
        self.asm.jump(insn, Label::Fail, pc);
    }

    fn mem_off(&self, k: u32) -> i16 {
        self.layout.mem + 4 * (k.min(15) as i16)
    }

    fn op(
        &mut self,
        pc: usize,
        op: Op,
        guard: Option<u32>,
        nonnegative: bool,
        available: u32,
    ) -> Result<(), HookError> {
        let Layout { a, x, .. } = self.layout;
        match op {
            Op::LdImm { k } => self.asm.emit(mov32_imm(a, k as i32)),
            Op::LdxImm { k } => self.asm.emit(mov32_imm(x, k as i32)),
            Op::LdMem { k } => self.asm.emit(ldx_mem(Size::W, a, R10, self.mem_off(k))),
            Op::LdxMem { k } => self.asm.emit(ldx_mem(Size::W, x, R10, self.mem_off(k))),
            Op::St { k } => self.asm.emit(stx_mem(Size::W, R10, a, self.mem_off(k))),
            Op::Stx { k } => self.asm.emit(stx_mem(Size::W, R10, x, self.mem_off(k))),
            Op::LdAbs { k, .. } if Ancillary::from_k(k).is_some() => {
                if let Some(anc) = Ancillary::from_k(k) {
                    self.ancillary(pc, anc);
                }
            }
            Op::LdAbs { size, k } => self.load_abs(pc, a, cbpf_size(size), k, op, guard),
            Op::LdxMsh { k } => self.msh(pc, k, op, guard),
            Op::LdInd { size, k } => self.load_ind(pc, cbpf_size(size), k, nonnegative, available),
            Op::LdLen => self.len(a),
            Op::LdxLen => self.len(x),
            Op::LdxAbsSeccomp { .. } => {
                return Err(HookError::Seccomp { target: self.layout.target.unwrap_or(Target::Socket) })
            }
            Op::Alu { op, src, k } => {
                let op = alu_op(op);
                match src {
                    Src::K => self.asm.emit(alu32_imm(op, a, k as i32)),
                    Src::X => {
                        if matches!(op, AluOp::Div | AluOp::Mod) {
                            self.fail(jmp32_imm(JmpCond::Eq, x, 0, 0), pc);
                        }
                        self.asm.emit(alu32_reg(op, a, x));
                    }
                }
            }
            Op::Neg => self.asm.emit(neg32(a)),
            Op::Ja { k } => {
                if k != 0 {
                    self.asm.jump(jmp_a(0), Label::Pc(pc + 1 + k as usize), pc);
                }
            }
            Op::Jmp { op, src, k, jt, jf } => self.jmp(pc, op, src, k, jt, jf),
            Op::RetK { k } => self.ret_k(pc, k),
            Op::RetA => self.ret_a(pc),
            Op::Tax => self.asm.emit(mov32_reg(x, a)),
            Op::Txa => self.asm.emit(mov32_reg(a, x)),
        }
        Ok(())
    }

    fn jmp(&mut self, pc: usize, op: JmpOp, src: Src, k: u32, jt: u8, jf: u8) {
        let a = self.layout.a;
        let (t, f) = (pc + 1 + usize::from(jt), pc + 1 + usize::from(jf));
        let (cond, negated) = jmp_cond(op);
        let test = |cond: JmpCond| match src {
            Src::K => jmp32_imm(cond, a, k as i32, 0),
            Src::X => jmp32_reg(cond, a, self.layout.x, 0),
        };
        if t == f {
            if t != pc + 1 {
                self.asm.jump(jmp_a(0), Label::Pc(t), pc);
            }
        } else if f == pc + 1 {
            self.asm.jump(test(cond), Label::Pc(t), pc);
        } else if let (true, Some(neg)) = (t == pc + 1, negated) {
            self.asm.jump(test(neg), Label::Pc(f), pc);
        } else {
            self.asm.jump(test(cond), Label::Pc(t), pc);
            self.asm.jump(jmp_a(0), Label::Pc(f), pc);
        }
    }

    fn ret_k(&mut self, pc: usize, k: u32) {
        match self.layout.ending {
            Ending::Return(verdict) => {
                let value = match (verdict, self.layout.target) {
                    (Verdict::Action, Some(t)) => t.verdict(k != 0),
                    _ => k as i32,
                };
                self.asm.emit(mov32_imm(R0, value));
                self.asm.emit(exit_insn());
            }
            Ending::Jump => {
                self.asm.emit(mov32_imm(self.layout.a, k as i32));
                self.asm.jump(jmp_a(0), Label::End, pc);
            }
        }
    }

    fn ret_a(&mut self, pc: usize) {
        match (self.layout.ending, self.layout.target) {
            (Ending::Return(Verdict::Action), Some(t)) => {
                // A == 0 is the same verdict as a failed load.
                self.fail(jmp32_imm(JmpCond::Eq, R0, 0, 0), pc);
                self.asm.emit(mov32_imm(R0, t.verdict(true)));
                self.asm.emit(exit_insn());
            }
            (Ending::Return(_), _) => self.asm.emit(exit_insn()),
            (Ending::Jump, _) => self.asm.jump(jmp_a(0), Label::End, pc),
        }
    }

    /// `ld len` / `ldx len` into `dst` (module docs of [`crate::ancillary`]).
    fn len(&mut self, dst: u8) {
        match (self.layout.packet, self.layout.target, self.layout.ctx) {
            (Packet::Direct { start, end }, None | Some(Target::Xdp), _) | (Packet::Direct { start, end }, _, None) => {
                // A pointer difference is a scalar (the verifier allows
                // pointer subtraction to CAP_PERFMON); the frame is < 4 GiB.
                self.asm.emit(mov64_reg(dst, end));
                self.asm.emit(alu64_reg(AluOp::Sub, dst, start));
                self.asm.emit(mov32_reg(dst, dst));
            }
            (_, _, Some(ctx)) => {
                self.asm.emit(ldx_mem(Size::W, dst, ctx, ancillary::SKB_LEN));
                if self.layout.target == Some(Target::Socket) {
                    self.asm.emit(alu32_imm(AluOp::Add, dst, NETWORK_OFFSET as i32));
                }
            }
            (Packet::LdAbs, _, None) => {}
        }
    }

    fn ancillary(&mut self, pc: usize, anc: Ancillary) {
        let Layout { a, x, .. } = self.layout;
        let source = anc.source(self.layout.target.unwrap_or(Target::Xdp));
        match (source, self.layout.ctx) {
            (Some(Source::SkbField { offset, swap16 }), Some(ctx)) => {
                self.asm.emit(ldx_mem(Size::W, a, ctx, offset));
                if swap16 {
                    self.asm.emit(endian_from_be(a, 16));
                }
            }
            (Some(Source::XdpField { offset, plus }), Some(ctx)) => {
                self.asm.emit(ldx_mem(Size::W, a, ctx, offset));
                if plus != 0 {
                    self.asm.emit(alu32_imm(AluOp::Add, a, plus));
                }
            }
            (Some(Source::Helper(id)), _) => self.asm.emit(emit_call(id)),
            (Some(Source::XorX), _) => self.asm.emit(alu32_reg(AluOp::Xor, a, x)),
            // check_ancillaries() refused these before anything was emitted.
            _ => self.fail(jmp_a(0), pc),
        }
    }

    /// A guard of `len` bytes before the instruction at `pc`.
    fn guard(&mut self, pc: usize, len: u32) {
        let Packet::Direct { start, end } = self.layout.packet else { return };
        let t0 = self.layout.t0;
        self.asm.emit(mov64_reg(t0, start));
        self.asm.emit(alu64_imm(AluOp::Add, t0, len as i32));
        if self.layout.pull.is_some() {
            let entry = self.asm.label();
            let cont = self.asm.label();
            self.asm.jump(jmp_reg(JmpCond::Gt, t0, end, 0), entry, pc);
            self.asm.bind(cont);
            self.slow.push(Slow::Guard { entry, len, cont, pc });
        } else {
            self.fail(jmp_reg(JmpCond::Gt, t0, end, 0), pc);
        }
    }

    /// `size` bytes at frame offset `pos` into `dst`, big-endian to host.
    fn read_fixed(&mut self, dst: u8, pos: u32, size: u32) {
        let Packet::Direct { start, .. } = self.layout.packet else { return };
        match i16::try_from(pos) {
            Ok(off) => self.asm.emit(ldx_mem(ebpf_size(size), dst, start, off)),
            Err(_) => {
                let t0 = self.layout.t0;
                self.asm.emit(mov64_reg(t0, start));
                self.asm.emit(alu64_imm(AluOp::Add, t0, pos as i32));
                self.asm.emit(ldx_mem(ebpf_size(size), dst, t0, 0));
            }
        }
        if size > 1 {
            self.asm.emit(endian_from_be(dst, 8 * size as i32));
        }
    }

    fn load_abs(&mut self, pc: usize, dst: u8, size: u32, k: u32, op: Op, guard: Option<u32>) {
        match self.layout.packet {
            Packet::Direct { .. } => match analysis::access(op) {
                Access::Fixed { pos, size } => {
                    if let Some(len) = guard {
                        self.guard(pc, len);
                    }
                    self.read_fixed(dst, pos, size);
                }
                _ => self.fail(jmp_a(0), pc),
            },
            Packet::LdAbs => match socket_imm(k) {
                Some(imm) => self.asm.emit(ld_abs(ebpf_size(size), imm)),
                None => self.fail(jmp_a(0), pc),
            },
        }
    }

    fn msh(&mut self, pc: usize, k: u32, op: Op, guard: Option<u32>) {
        let x = self.layout.x;
        match self.layout.packet {
            Packet::Direct { .. } => match analysis::access(op) {
                Access::Fixed { pos, .. } => {
                    if let Some(len) = guard {
                        self.guard(pc, len);
                    }
                    self.read_fixed(x, pos, 1);
                }
                _ => {
                    self.fail(jmp_a(0), pc);
                    return;
                }
            },
            Packet::LdAbs => {
                let Some(imm) = socket_imm(k) else {
                    self.fail(jmp_a(0), pc);
                    return;
                };
                // LD_ABS writes r0 (A) and clobbers r1-r5: A waits in t1,
                // which the socket layout puts in a callee-saved register.
                let keep = self.layout.t1;
                self.asm.emit(mov64_reg(keep, R0));
                self.asm.emit(ld_abs(Size::B, imm));
                self.asm.emit(mov32_reg(x, R0));
                self.asm.emit(mov64_reg(R0, keep));
            }
        }
        self.asm.emit(alu32_imm(AluOp::And, x, 0xf));
        self.asm.emit(alu32_imm(AluOp::Lsh, x, 2));
    }

    fn load_ind(&mut self, pc: usize, size: u32, k: u32, nonnegative: bool, available: u32) {
        let Layout { a, x, t0, t1, .. } = self.layout;
        // t0 = X + k, the classic offset (32-bit wrap).
        self.asm.emit(mov32_reg(t0, x));
        if k != 0 {
            self.asm.emit(alu32_imm(AluOp::Add, t0, k as i32));
        }
        match self.layout.packet {
            Packet::LdAbs => {
                // Negative offsets mean in eBPF what they mean in classic
                // BPF; a frame offset is read through the MAC header.
                let load = self.asm.label();
                if !nonnegative {
                    self.asm.jump(jmp32_imm(JmpCond::Slt, t0, 0, 0), load, pc);
                }
                self.fail(jmp32_imm(JmpCond::Gt, t0, (SKF_NET_OFF - SKF_LL_OFF - 1) as i32, 0), pc);
                self.asm.emit(alu32_imm(AluOp::Add, t0, SKF_LL_OFF as i32));
                self.asm.bind(load);
                self.asm.emit(ld_ind(ebpf_size(size), t0, 0));
            }
            Packet::Direct { start, end } => {
                if !nonnegative {
                    // The offset's region (analysis::frame_offset) at run time.
                    let pos = self.asm.label();
                    let net = self.asm.label();
                    self.asm.jump(jmp32_imm(JmpCond::Sge, t0, 0, 0), pos, pc);
                    self.fail(jmp32_imm(JmpCond::Slt, t0, SKF_LL_OFF as i32, 0), pc);
                    self.asm.jump(jmp32_imm(JmpCond::Sge, t0, SKF_NET_OFF as i32, 0), net, pc);
                    self.asm.emit(alu32_imm(AluOp::Sub, t0, SKF_LL_OFF as i32));
                    self.asm.jump(jmp_a(0), pos, pc);
                    self.asm.bind(net);
                    self.asm.emit(alu32_imm(AluOp::Sub, t0, (SKF_NET_OFF - NETWORK_OFFSET) as i32));
                    self.asm.bind(pos);
                }
                // The verifier's bound on the variable offset.
                self.fail(jmp_imm(JmpCond::Gt, t0, (MAX_PACKET_OFF - size) as i32, 0), pc);
                self.asm.emit(mov64_reg(t1, start));
                self.asm.emit(alu64_reg(AluOp::Add, t1, t0));
                self.asm.emit(alu64_imm(AluOp::Add, t1, size as i32));
                let cont = self.asm.label();
                if self.layout.pull.is_some() {
                    let entry = self.asm.label();
                    self.asm.jump(jmp_reg(JmpCond::Gt, t1, end, 0), entry, pc);
                    self.slow.push(Slow::Indirect { entry, size, cont, pc, available });
                } else {
                    self.fail(jmp_reg(JmpCond::Gt, t1, end, 0), pc);
                }
                self.asm.emit(alu64_imm(AluOp::Add, t1, -(size as i32)));
                self.asm.bind(cont);
                self.asm.emit(ldx_mem(ebpf_size(size), a, t1, 0));
                if size > 1 {
                    self.asm.emit(endian_from_be(a, 8 * size as i32));
                }
            }
        }
    }

    /// A tc slow path: the bytes may be in the skb's fragments. When the
    /// skb holds them, `bpf_skb_pull_data()` makes them linear and the
    /// check runs again; otherwise the filter returns 0.
    fn emit_slow(&mut self, slow: Slow) {
        let (Some(pull), Some(ctx), Packet::Direct { start, end }) =
            (self.layout.pull, self.layout.ctx, self.layout.packet)
        else {
            return;
        };
        let Layout { a, t0, t1, .. } = self.layout;
        let reload = |g: &mut Gen| {
            g.asm.emit(ldx_mem(Size::W, start, ctx, ancillary::SKB_DATA));
            g.asm.emit(ldx_mem(Size::W, end, ctx, ancillary::SKB_DATA_END));
            g.asm.emit(ldx_mem(Size::DW, a, R10, pull.a_slot));
        };
        match slow {
            Slow::Guard { entry, len, cont, pc } => {
                self.asm.bind(entry);
                self.asm.emit(ldx_mem(Size::W, t0, ctx, ancillary::SKB_LEN));
                self.fail(jmp32_imm(JmpCond::Lt, t0, len as i32, 0), pc);
                self.asm.emit(stx_mem(Size::DW, R10, a, pull.a_slot));
                self.asm.emit(mov64_reg(R1, ctx));
                self.asm.emit(mov32_imm(R2, len as i32));
                self.asm.emit(emit_call(ancillary::BPF_FUNC_SKB_PULL_DATA));
                reload(self);
                self.asm.emit(mov64_reg(t0, start));
                self.asm.emit(alu64_imm(AluOp::Add, t0, len as i32));
                self.fail(jmp_reg(JmpCond::Gt, t0, end, 0), pc);
                self.asm.jump(jmp_a(0), cont, pc);
            }
            Slow::Indirect { entry, size, cont, pc, available } => {
                self.asm.bind(entry);
                self.asm.emit(stx_mem(Size::DW, R10, t0, pull.offset_slot));
                self.asm.emit(ldx_mem(Size::W, t1, ctx, ancillary::SKB_LEN));
                self.asm.emit(alu32_imm(AluOp::Add, t0, size as i32));
                self.fail(jmp32_reg(JmpCond::Lt, t1, t0, 0), pc);
                self.asm.emit(stx_mem(Size::DW, R10, a, pull.a_slot));
                if t0 != R2 {
                    self.asm.emit(mov64_reg(R2, t0));
                }
                self.asm.emit(mov64_reg(R1, ctx));
                self.asm.emit(emit_call(ancillary::BPF_FUNC_SKB_PULL_DATA));
                reload(self);
                if available > 0 {
                    // The guards before this load covered `available`
                    // bytes; the frame still has them (pulling never
                    // shortens it), but the verifier must see it again.
                    self.asm.emit(mov64_reg(t1, start));
                    self.asm.emit(alu64_imm(AluOp::Add, t1, available as i32));
                    self.fail(jmp_reg(JmpCond::Gt, t1, end, 0), pc);
                }
                self.asm.emit(ldx_mem(Size::DW, t0, R10, pull.offset_slot));
                self.fail(jmp_imm(JmpCond::Gt, t0, (MAX_PACKET_OFF - size) as i32, 0), pc);
                self.asm.emit(mov64_reg(t1, start));
                self.asm.emit(alu64_reg(AluOp::Add, t1, t0));
                self.asm.emit(alu64_imm(AluOp::Add, t1, size as i32));
                self.fail(jmp_reg(JmpCond::Gt, t1, end, 0), pc);
                self.asm.emit(alu64_imm(AluOp::Add, t1, -(size as i32)));
                self.asm.jump(jmp_a(0), cont, pc);
            }
        }
    }
}

/// Whether the packet load `op` can never succeed in `packet`'s access:
/// the filter returns 0 there, and what follows it on that path is dead.
fn always_fails(op: Op, packet: Packet) -> bool {
    match packet {
        Packet::Direct { .. } => analysis::access(op) == Access::Never,
        Packet::LdAbs => match op {
            Op::LdAbs { k, .. } if Ancillary::from_k(k).is_none() => socket_imm(k).is_none(),
            Op::LdxMsh { k } => socket_imm(k).is_none(),
            _ => false,
        },
    }
}

/// The `LD_ABS` offset a socket program reads frame offset `k` at: through
/// the MAC header (`SKF_LL_OFF + k`), since its `skb->data` is the network
/// header; negative `k` as it is. `None`: no frame has that byte (`k` past
/// the 1 MiB the `SKF_LL_OFF` window spans).
fn socket_imm(k: u32) -> Option<i32> {
    if (k as i32) < 0 {
        Some(k as i32)
    } else if k < SKF_NET_OFF - SKF_LL_OFF {
        Some(SKF_LL_OFF.wrapping_add(k) as i32)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_offsets_go_through_the_mac_header() {
        assert_eq!(socket_imm(12), Some(-0x20_0000 + 12));
        assert_eq!(socket_imm(SKF_NET_OFF + 9), Some(-0x10_0000 + 9));
        assert_eq!(socket_imm(0x10_0000), None);
        assert_eq!(socket_imm(0xf_ffff), Some(-0x10_0001));
    }
}
