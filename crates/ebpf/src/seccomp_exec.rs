//! A dedicated executor for converted seccomp filters.
//!
//! `bpf_convert_filter()` turns a seccomp filter into eBPF drawn from a
//! small closed set of opcodes (SPEC §4.10): ALU32 K/X, `MOV32` K/X,
//! `MOV64` X, `LDX W` from the context (`r6`) and the stack (`r10`),
//! `STX W` to the stack, `JA`, `JEQ/JNE/JGT/JGE/JLT/JLE/JSET` K and X,
//! `EXIT`, on `r0` (A), `r2` (TMP), `r7` (X), with `r6 = r1` the only use of
//! `r1`. [`compile`] recognises programs of that shape at load and resolves
//! everything the general interpreter checks at run time:
//!
//! - A, TMP and X are plain locals (64-bit: `MOV64 X` copies 64 bits, jump
//!   compares are 64-bit against the sign-extended `imm`, ALU32 results are
//!   zero-extended), so no register file and no region tables exist;
//! - context loads are words of the 64-byte `struct seccomp_data` (offsets
//!   `0..=60`, 4-aligned, proved at load), read straight from the array;
//! - the stack is a local `[u32; 16]` (`fp-64..=fp-4`, 4-aligned, proved at
//!   load); every stack read is proved at load to follow a write of the same
//!   slot on every path (the kernel's `check_load_and_stores()` guarantees
//!   it for converted cBPF), so the local never exposes its initial zeros;
//! - every jump goes forward and the last instruction is `exit`, so a run
//!   executes each instruction at most once and cannot fall off the end: no
//!   step budget (the `Vm` uses this executor only when its budget is at
//!   least the program length, so a budget can never be exceeded here);
//! - every context load is proved at load to follow `r6 = r1` on every path,
//!   so `r6` is always the context pointer where it is used and `r6 = r1`
//!   itself has nothing left to do at run time.
//!
//! Superinstructions execute every covered instruction's semantics in
//! program order: `if r0 == K` stretches of two or more (and `w2 = K; if
//! r0 == r2` elements) as one table scan, a context load fused with the
//! compare, `w2 = K; if r0 <op> r2` or `==` stretch after it, `w2 = K; if
//! r0 <op> r2`, `w0 = K; exit` and the converter's prologue. A program that
//! opens with the prologue starts at the instruction after it: its effects
//! (A = X = 0, `r6` = context) are the executor's initial state.
//!
//! Fixed cost per run is kept small: the dispatch loop is a function of
//! its own (chosen at load, with or without a local stack array depending
//! on whether the program touches the stack) returning `(r0, executed)` in
//! registers. (A mixed-condition variant of the `==` scan for `jgt`/`jge`
//! trees was measured and dropped: tree paths fall through only a few
//! compares before jumping, and the scan's setup cost more than the
//! dispatches it saved.) One write is elided: the `w2 = K` of a fused `==`
//! element, and only where a load-time liveness pass proves `r2` dead at
//! both successors of the compare (converted code always rewrites TMP
//! before reading it): a dead register's value cannot reach `r0`, the only
//! register a run returns.
//!
//! Executed-instruction counts stay exact (`Vm::executed`): with forward
//! jumps only, a run executes `exit_pc + 1` minus the instructions every
//! taken jump skipped over.

use crate::insn::{Insn, Pc};
use crate::interp::ExecError;

/// Register codes of the subset (`SOp::dst` / `SOp::src`).
const RA: u8 = 0; // r0
const RT: u8 = 1; // r2
const RX: u8 = 2; // r7
/// `SOp::src` of a K-form compare: the operand is `imm`.
const RK: u8 = 3;

/// Conditions (`SOp::aux` of the generic compare).
const EQ: u8 = 0;
const NE: u8 = 1;
const GT: u8 = 2;
const GE: u8 = 3;
const LT: u8 = 4;
const LE: u8 = 5;
const SET: u8 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    /// `r6 = r1`: resolved at load (see the module docs).
    CtxPtr,
    /// `w0 ^= w0; w7 ^= w7; r6 = r1`.
    Prologue,
    MovK,
    Mov32,
    Mov64,
    /// ALU32, K form: `aux` = operation (`code & 0xf0`).
    AluK,
    /// ALU32, X form.
    AluX,
    /// `dst = ctx word aux`.
    LdCtx,
    /// `dst = stack slot aux`.
    LdStack,
    /// `stack slot aux = src`.
    StStack,
    Ja,
    /// `if r0 <cond> imm goto target`, one kind per condition.
    JeqK,
    JneK,
    JgtK,
    JgeK,
    JltK,
    JleK,
    JsetK,
    /// Any other compare: `aux` = condition, `src` = register or [`RK`].
    Jcc,
    Exit,
    /// `w0 = imm; exit`.
    RetImm,
    /// `==` stretch on r0: entries `target..imm` of the eq table.
    EqChain,
    /// `w0 = ctx word aux`, then an `==` stretch (entries `target..imm`).
    LoadEqChain,
    /// `w0 = ctx word aux; w2 = imm; if r0 <cond> r2 goto target`.
    LdMovJeq,
    LdMovJne,
    LdMovJgt,
    LdMovJge,
    LdMovJlt,
    LdMovJle,
    LdMovJset,
    /// `w0 = ctx word aux; if r0 <cond> imm goto target`.
    LdJeq,
    LdJne,
    LdJgt,
    LdJge,
    LdJlt,
    LdJle,
    LdJset,
    /// `w2 = imm; if r0 <cond> r2 goto target`.
    MovJeq,
    MovJne,
    MovJgt,
    MovJge,
    MovJlt,
    MovJle,
    MovJset,
}

/// One compiled instruction (16 bytes): `aux` is the ALU operation, the
/// context word, the stack slot or the condition; `target` the jump target
/// or first eq entry; `imm` the (zero- or sign-extended) immediate or end
/// eq entry.
#[derive(Debug, Clone, Copy)]
struct SOp {
    kind: Kind,
    dst: u8,
    src: u8,
    aux: u8,
    target: u32,
    imm: u64,
}

/// `if r0 == value goto target` at `jump_pc`.
#[derive(Debug, Clone, Copy)]
struct EqEntry {
    value: u64,
    jump_pc: u32,
    target: u32,
}

/// A program compiled for the seccomp executor.
#[derive(Debug, Clone)]
pub(crate) struct SeccompProg {
    ops: Box<[SOp]>,
    eq: Box<[EqEntry]>,
    /// `run_with` for this program's stack use, chosen at load.
    runner: fn(&SeccompProg, &[u8; 64]) -> (u64, u64),
    /// First pc to dispatch: 3 when the program opens with the converter's
    /// prologue (`w0 ^= w0; w7 ^= w7; r6 = r1`), whose effects are the
    /// executor's initial state (A = X = 0, r6 resolved at load), else 0.
    start: u32,
}

fn reg(r: u8) -> Option<u8> {
    match r {
        0 => Some(RA),
        2 => Some(RT),
        7 => Some(RX),
        _ => None,
    }
}

fn bit(r: u8) -> u8 {
    1 << r
}

/// Stack slot of `fp + off` (slot k is `fp - 4(k+1)`), if converted code
/// could address it.
fn slot(off: i16) -> Option<u8> {
    (-64..=-4).contains(&off).then_some(())?;
    (off % 4 == 0).then_some((-(off / 4) - 1) as u8)
}

/// Per-instruction facts of the subset, before fusion.
struct Plain {
    op: SOp,
    /// Registers (bit per code) read and written.
    uses: u8,
    defs: u8,
    /// Conditional jump: both successors; `JA`: only the target; `EXIT`: none.
    falls: bool,
    jumps: bool,
}

/// Decodes one instruction of the subset, or `None` if it is outside it.
fn plain(pc: usize, insn: Insn) -> Option<Plain> {
    let mk = |kind, dst, src, aux, target, imm| SOp { kind, dst, src, aux, target, imm };
    let target = |off: i16| -> Option<u32> { (off >= 0).then(|| (pc as i64 + 1 + i64::from(off)) as u32) };
    let p = |op: SOp, uses: u8, defs: u8| Plain { op, uses, defs, falls: true, jumps: false };
    let code = insn.code;
    Some(match code {
        // ALU32 (class 0x04) but END (0xd4/0xdc) and ARSH (0xc4/0xcc).
        _ if code & 0x07 == 0x04 => {
            let opc = code & 0xf0;
            let x = code & 0x08 != 0;
            let dst = reg(insn.dst())?;
            if insn.off != 0 || matches!(opc, 0xc0 | 0xd0 | 0xe0 | 0xf0) || (opc == 0x80 && x) {
                return None;
            }
            if opc == 0xb0 {
                return Some(if x {
                    let src = reg(insn.src())?;
                    p(mk(Kind::Mov32, dst, src, 0, 0, 0), bit(src), bit(dst))
                } else {
                    p(mk(Kind::MovK, dst, 0, 0, 0, u64::from(insn.imm as u32)), 0, bit(dst))
                });
            }
            if x {
                let src = reg(insn.src())?;
                p(mk(Kind::AluX, dst, src, opc, 0, 0), bit(src) | bit(dst), bit(dst))
            } else {
                p(mk(Kind::AluK, dst, 0, opc, 0, u64::from(insn.imm as u32)), bit(dst), bit(dst))
            }
        }
        // MOV64 X: among A/TMP/X, or `r6 = r1`.
        0xbf if insn.off == 0 => {
            if insn.dst() == 6 && insn.src() == 1 {
                p(mk(Kind::CtxPtr, 0, 0, 0, 0, 0), 0, 0)
            } else {
                let (dst, src) = (reg(insn.dst())?, reg(insn.src())?);
                p(mk(Kind::Mov64, dst, src, 0, 0, 0), bit(src), bit(dst))
            }
        }
        0x61 => {
            let dst = reg(insn.dst())?;
            match insn.src() {
                6 if (0..=60).contains(&insn.off) && insn.off % 4 == 0 => {
                    p(mk(Kind::LdCtx, dst, 0, (insn.off / 4) as u8, 0, 0), 0, bit(dst))
                }
                10 => p(mk(Kind::LdStack, dst, 0, slot(insn.off)?, 0, 0), 0, bit(dst)),
                _ => return None,
            }
        }
        0x63 if insn.dst() == 10 => {
            let src = reg(insn.src())?;
            p(mk(Kind::StStack, 0, src, slot(insn.off)?, 0, 0), bit(src), 0)
        }
        0x05 => Plain { op: mk(Kind::Ja, 0, 0, 0, target(insn.off)?, 0), uses: 0, defs: 0, falls: false, jumps: true },
        0x95 => Plain { op: mk(Kind::Exit, 0, 0, 0, 0, 0), uses: bit(RA), defs: 0, falls: false, jumps: false },
        0x15 | 0x1d | 0x25 | 0x2d | 0x35 | 0x3d | 0x45 | 0x4d | 0x55 | 0x5d | 0xa5 | 0xad | 0xb5 | 0xbd => {
            let cond = match code & 0xf0 {
                0x10 => EQ,
                0x20 => GT,
                0x30 => GE,
                0x40 => SET,
                0x50 => NE,
                0xa0 => LT,
                _ => LE,
            };
            let dst = reg(insn.dst())?;
            let t = target(insn.off)?;
            let (src, imm, uses) = if code & 0x08 != 0 {
                let src = reg(insn.src())?;
                (src, 0, bit(src) | bit(dst))
            } else {
                (RK, insn.imm as i64 as u64, bit(dst))
            };
            let kind = match (dst, src, cond) {
                (RA, RK, EQ) => Kind::JeqK,
                (RA, RK, NE) => Kind::JneK,
                (RA, RK, GT) => Kind::JgtK,
                (RA, RK, GE) => Kind::JgeK,
                (RA, RK, LT) => Kind::JltK,
                (RA, RK, LE) => Kind::JleK,
                (RA, RK, SET) => Kind::JsetK,
                _ => Kind::Jcc,
            };
            Plain { op: mk(kind, dst, src, cond, t, imm), uses, defs: 0, falls: true, jumps: true }
        }
        _ => return None,
    })
}

/// Compiles `insns` (already accepted by `Program::load`) for the seccomp
/// executor, or `None` if the program is outside the subset the module docs
/// describe (the general interpreter runs it then).
pub(crate) fn compile(insns: &[Insn]) -> Option<SeccompProg> {
    let n = insns.len();
    if n == 0 || n > u32::MAX as usize / 2 || insns.last()?.code != 0x95 {
        return None;
    }
    let plains: Vec<Plain> = insns.iter().enumerate().map(|(pc, i)| plain(pc, *i)).collect::<Option<_>>()?;
    // Forward dataflow (all jumps go forward, so pc order is a topological
    // order): is `r6 = r1` done, and which stack slots are written, on every
    // path to each pc.
    let mut reached = vec![false; n];
    let mut ctx_ready = vec![true; n];
    let mut written = vec![u16::MAX; n];
    if let (Some(r), Some(c), Some(w)) = (reached.first_mut(), ctx_ready.first_mut(), written.first_mut()) {
        (*r, *c, *w) = (true, false, 0);
    }
    for (pc, p) in plains.iter().enumerate() {
        if !reached.get(pc).copied().unwrap_or(false) {
            continue;
        }
        let (mut ready, mut w) = (ctx_ready.get(pc).copied()?, written.get(pc).copied()?);
        match p.op.kind {
            Kind::CtxPtr => ready = true,
            Kind::LdCtx if !ready => return None,
            Kind::LdStack if w & (1 << p.op.aux) == 0 => return None,
            Kind::StStack => w |= 1 << p.op.aux,
            _ => {}
        }
        let succs = [p.falls.then_some(pc + 1), p.jumps.then_some(p.op.target as usize)];
        for s in succs.into_iter().flatten() {
            // In range: the last insn is exit; targets were checked by load.
            *reached.get_mut(s)? = true;
            *ctx_ready.get_mut(s)? &= ready;
            *written.get_mut(s)? &= w;
        }
    }
    // Backward liveness of A/TMP/X (reverse pc order is exact for forward jumps).
    let mut live_in = vec![0u8; n + 1];
    for pc in (0..n).rev() {
        let p = plains.get(pc)?;
        let mut out = 0;
        if p.falls {
            out |= live_in.get(pc + 1).copied()?;
        }
        if p.jumps {
            out |= live_in.get(p.op.target as usize).copied()?;
        }
        *live_in.get_mut(pc)? = p.uses | (out & !p.defs);
    }
    let live = |pc: usize| live_in.get(pc).copied().unwrap_or(0);
    let base: Vec<SOp> = plains.iter().map(|p| p.op).collect();
    let mut ops = base.clone();
    let mut eq: Vec<EqEntry> = Vec::new();

    // `==` elements on r0: `if r0 == K goto t`, or `w2 = K; if r0 == r2 goto
    // t` where r2 is dead at t and after the compare (its write elided).
    let element = |pc: usize| -> Option<(EqEntry, usize)> {
        let o = base.get(pc)?;
        if o.kind == Kind::JeqK {
            return Some((EqEntry { value: o.imm, jump_pc: pc as u32, target: o.target }, pc + 1));
        }
        let j = base.get(pc + 1)?;
        let tmp_dead = live(j.target as usize) & bit(RT) == 0 && live(pc + 2) & bit(RT) == 0;
        (o.kind == Kind::MovK
            && o.dst == RT
            && j.kind == Kind::Jcc
            && j.aux == EQ
            && j.dst == RA
            && j.src == RT
            && tmp_dead)
            .then(|| (EqEntry { value: o.imm, jump_pc: pc as u32 + 1, target: j.target }, pc + 2))
    };
    let mut pc = 0;
    while pc < n {
        let mut heads = Vec::new();
        let mut at = pc;
        let first = eq.len();
        while let Some((e, next)) = element(at) {
            heads.push(at);
            eq.push(e);
            at = next;
        }
        if heads.is_empty() {
            pc += 1;
            continue;
        }
        let end = eq.len() as u64;
        for (k, &h) in heads.iter().enumerate() {
            // The last element alone stays a plain compare (`JeqK`, or
            // `MovJeq` after the pass below): cheaper than a one-entry scan.
            let last = heads.len() - k == 1;
            if let (Some(o), false) = (ops.get_mut(h), last) {
                *o = SOp { kind: Kind::EqChain, dst: RA, src: RK, aux: 0, target: (first + k) as u32, imm: end };
            }
        }
        // A context load into r0 right before a stretch of two or more (a
        // single compare fuses with its load in the pass below).
        if let Some(l) = pc
            .checked_sub(1)
            .filter(|_| heads.len() >= 2)
            .and_then(|p| base.get(p))
            .filter(|l| l.kind == Kind::LdCtx && l.dst == RA)
        {
            if let Some(o) = ops.get_mut(pc - 1) {
                *o = SOp { kind: Kind::LoadEqChain, dst: RA, src: RK, aux: l.aux, target: first as u32, imm: end };
            }
        }
        pc = at;
    }
    for pc in 0..n {
        let (Some(&o), Some(&next)) = (base.get(pc), base.get(pc + 1)) else { continue };
        let Some(slot) = ops.get_mut(pc) else { continue };
        if slot.kind != o.kind {
            continue; // already a superinstruction
        }
        if o.kind == Kind::MovK && o.dst == RA && next.kind == Kind::Exit {
            *slot = SOp { kind: Kind::RetImm, ..o };
        } else if o.kind == Kind::LdCtx
            && o.dst == RA
            && next.kind == Kind::MovK
            && next.dst == RT
            && base.get(pc + 2).is_some_and(|j| j.kind == Kind::Jcc && j.dst == RA && j.src == RT)
        {
            let Some(j) = base.get(pc + 2) else { continue };
            let kind = match j.aux {
                EQ => Kind::LdMovJeq,
                NE => Kind::LdMovJne,
                GT => Kind::LdMovJgt,
                GE => Kind::LdMovJge,
                LT => Kind::LdMovJlt,
                LE => Kind::LdMovJle,
                _ => Kind::LdMovJset,
            };
            *slot = SOp { kind, dst: RA, src: RK, aux: o.aux, target: j.target, imm: next.imm };
        } else if o.kind == Kind::LdCtx && o.dst == RA {
            let kind = match next.kind {
                Kind::JeqK => Kind::LdJeq,
                Kind::JneK => Kind::LdJne,
                Kind::JgtK => Kind::LdJgt,
                Kind::JgeK => Kind::LdJge,
                Kind::JltK => Kind::LdJlt,
                Kind::JleK => Kind::LdJle,
                Kind::JsetK => Kind::LdJset,
                _ => continue,
            };
            *slot = SOp { kind, dst: RA, src: RK, aux: o.aux, target: next.target, imm: next.imm };
        } else if o.kind == Kind::MovK && o.dst == RT && next.kind == Kind::Jcc && next.dst == RA && next.src == RT {
            let kind = match next.aux {
                EQ => Kind::MovJeq,
                NE => Kind::MovJne,
                GT => Kind::MovJgt,
                GE => Kind::MovJge,
                LT => Kind::MovJlt,
                LE => Kind::MovJle,
                SET => Kind::MovJset,
                _ => continue,
            };
            *slot = SOp { kind, dst: RT, src: RK, aux: 0, target: next.target, imm: o.imm };
        } else if o.kind == Kind::AluX && o.aux == 0xa0 && o.dst == RA && o.src == RA {
            let third = base.get(pc + 2).map(|t| t.kind);
            if next.kind == Kind::AluX
                && next.aux == 0xa0
                && next.dst == RX
                && next.src == RX
                && third == Some(Kind::CtxPtr)
            {
                *slot = SOp { kind: Kind::Prologue, ..o };
            }
        }
    }
    let has_stack = ops.iter().any(|o| matches!(o.kind, Kind::LdStack | Kind::StStack));
    let start = if ops.first().is_some_and(|o| o.kind == Kind::Prologue) { 3 } else { 0 };
    let runner = if has_stack { SeccompProg::run_with::<16> } else { SeccompProg::run_with::<0> };
    Some(SeccompProg { ops: ops.into_boxed_slice(), eq: eq.into_boxed_slice(), start, runner })
}

/// ALU32 `op` (`code & 0xf0`) on the low halves, zero-extended. Division
/// and modulo by zero follow the verifier's `do_misc_fixups()`: `x / 0 = 0`,
/// `x % 0 = x`; shift amounts are masked to 31 as in the general
/// interpreter.
#[inline(always)]
fn alu32(op: u8, d: u64, v: u64) -> u64 {
    let (d, v) = (d as u32, v as u32);
    u64::from(match op {
        0x00 => d.wrapping_add(v),
        0x10 => d.wrapping_sub(v),
        0x20 => d.wrapping_mul(v),
        0x30 => d.checked_div(v).unwrap_or(0),
        0x40 => d | v,
        0x50 => d & v,
        0x60 => d.wrapping_shl(v),
        0x70 => d.wrapping_shr(v),
        0x80 => d.wrapping_neg(),
        0x90 => d.checked_rem(v).unwrap_or(d),
        _ => d ^ v,
    })
}

#[inline(always)]
fn test(cond: u8, x: u64, v: u64) -> bool {
    match cond {
        EQ => x == v,
        NE => x != v,
        GT => x > v,
        GE => x >= v,
        LT => x < v,
        LE => x <= v,
        _ => x & v != 0,
    }
}

/// Context word `w` (0..16) of the 64-byte `struct seccomp_data`, read
/// little-endian like every load of the general interpreter.
#[inline(always)]
#[allow(clippy::indexing_slicing)] // i = (w & 15) * 4 <= 60, so i + 3 < 64
fn word(data: &[u8; 64], w: u8) -> u64 {
    let i = usize::from(w & 15) * 4;
    u64::from(u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]))
}

impl SeccompProg {
    /// Runs the program on `data`; returns the whole `r0` and the number of
    /// instructions executed.
    ///
    /// Mirrors `___bpf_prog_run()` in kernel/bpf/core.c (Linux 6.18) on the
    /// subset of opcodes a converted seccomp filter contains.
    ///
    /// # Deviations
    /// The dead `w2 = K` writes of fused `==` elements are not performed
    /// (module docs); the stack is a fresh local (reads of unwritten slots
    /// are refused at load, so its contents are never observed), and a
    /// program without stack accesses runs without one.
    #[inline(always)]
    pub(crate) fn run(&self, data: &[u8; 64]) -> Result<(u64, u64), ExecError> {
        match (self.runner)(self, data) {
            (pc, 0) => Err(ExecError::FellOffEnd { pc: Pc(pc as usize) }),
            done => Ok(done),
        }
    }

    /// [`SeccompProg::run`] with a local stack of `SLOTS` words: 16, or 0
    /// when the program has no stack access (the stack arms are then never
    /// reached and the array costs nothing). Never inlined: as a function
    /// of its own it keeps A, X, TMP, `pc` and the op table in registers
    /// instead of sharing the register budget of its caller. Returns
    /// `(r0, executed)`, or `(pc, 0)` if it fell off the end (unreachable: a
    /// run executes at least its `exit`); two registers, not a `Result` in
    /// memory.
    #[inline(never)]
    fn run_with<const SLOTS: usize>(&self, data: &[u8; 64]) -> (u64, u64) {
        let ops = &self.ops[..];
        let eqs = &self.eq[..];
        let (mut a, mut t, mut x) = (0u64, 0u64, 0u64);
        let mut stack = [0u32; SLOTS];
        let mut pc = self.start as usize;
        // Instructions jumped over so far (see the module docs).
        let mut skipped: usize = 0;

        macro_rules! get {
            ($r:expr) => {
                match $r {
                    RA => a,
                    RT => t,
                    _ => x,
                }
            };
        }
        macro_rules! set {
            ($r:expr, $v:expr) => {{
                let v: u64 = $v;
                match $r {
                    RA => a = v,
                    RT => t = v,
                    _ => x = v,
                }
            }};
        }
        macro_rules! jump {
            ($target:expr) => {{
                let target = $target as usize;
                skipped = skipped.wrapping_add(target.wrapping_sub(pc + 1));
                pc = target;
                continue;
            }};
        }
        macro_rules! jcc {
            ($x:expr, $v:expr, $target:expr, |$l:ident, $r:ident| $cond:expr) => {{
                let ($l, $r): (u64, u64) = ($x, $v);
                if $cond {
                    jump!($target)
                }
                pc += 1;
                continue;
            }};
        }
        macro_rules! exit {
            ($at:expr) => {
                return (a, ($at as usize + 1).wrapping_sub(skipped) as u64)
            };
        }
        // `==` stretch over entries first..end on r0; falls through to the
        // instruction after the last element.
        macro_rules! eq_chain {
            ($first:expr, $end:expr) => {{
                let (first, end) = ($first as usize, $end as usize);
                let Some(stretch) = eqs.get(first..end) else {
                    // Unreachable: every stretch lies in the table (load).
                    return (pc as u64, 0);
                };
                // (`find`, not a `for` loop: `jump!` continues the outer loop.)
                if let Some(e) = stretch.iter().find(|e| e.value == a) {
                    pc = e.jump_pc as usize;
                    jump!(e.target)
                }
                pc = stretch.last().map_or(pc, |e| e.jump_pc as usize) + 1;
                continue;
            }};
        }

        loop {
            let Some(op) = ops.get(pc) else {
                // Unreachable: the last instruction is `exit` and jumps go forward.
                return (pc as u64, 0);
            };
            match op.kind {
                Kind::CtxPtr => {}
                Kind::Prologue => {
                    a = 0;
                    x = 0;
                    pc += 3;
                    continue;
                }
                Kind::MovK => set!(op.dst, op.imm),
                Kind::Mov32 => set!(op.dst, u64::from(get!(op.src) as u32)),
                Kind::Mov64 => set!(op.dst, get!(op.src)),
                Kind::AluK => set!(op.dst, alu32(op.aux, get!(op.dst), op.imm)),
                Kind::AluX => set!(op.dst, alu32(op.aux, get!(op.dst), get!(op.src))),
                Kind::LdCtx => set!(op.dst, word(data, op.aux)),
                // With SLOTS = 16 the masked index is in range (no check
                // survives); with SLOTS = 0 these arms are never reached.
                Kind::LdStack => set!(op.dst, u64::from(stack.get(usize::from(op.aux & 15)).copied().unwrap_or(0))),
                Kind::StStack => {
                    if let Some(s) = stack.get_mut(usize::from(op.aux & 15)) {
                        *s = get!(op.src) as u32;
                    }
                }
                Kind::Ja => jump!(op.target),
                Kind::JeqK => jcc!(a, op.imm, op.target, |l, r| l == r),
                Kind::JneK => jcc!(a, op.imm, op.target, |l, r| l != r),
                Kind::JgtK => jcc!(a, op.imm, op.target, |l, r| l > r),
                Kind::JgeK => jcc!(a, op.imm, op.target, |l, r| l >= r),
                Kind::JltK => jcc!(a, op.imm, op.target, |l, r| l < r),
                Kind::JleK => jcc!(a, op.imm, op.target, |l, r| l <= r),
                Kind::JsetK => jcc!(a, op.imm, op.target, |l, r| l & r != 0),
                Kind::Jcc => {
                    let v = if op.src == RK { op.imm } else { get!(op.src) };
                    jcc!(get!(op.dst), v, op.target, |l, r| test(op.aux, l, r))
                }
                Kind::Exit => exit!(pc),
                Kind::RetImm => {
                    a = op.imm;
                    exit!(pc + 1)
                }
                Kind::LdMovJeq => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l == r)
                }
                Kind::LdMovJne => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l != r)
                }
                Kind::LdMovJgt => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l > r)
                }
                Kind::LdMovJge => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l >= r)
                }
                Kind::LdMovJlt => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l < r)
                }
                Kind::LdMovJle => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l <= r)
                }
                Kind::LdMovJset => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l & r != 0)
                }
                Kind::EqChain => eq_chain!(op.target, op.imm),
                Kind::LoadEqChain => {
                    a = word(data, op.aux);
                    pc += 1;
                    eq_chain!(op.target, op.imm)
                }
                Kind::LdJeq => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l == r)
                }
                Kind::LdJne => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l != r)
                }
                Kind::LdJgt => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l > r)
                }
                Kind::LdJge => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l >= r)
                }
                Kind::LdJlt => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l < r)
                }
                Kind::LdJle => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l <= r)
                }
                Kind::LdJset => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l & r != 0)
                }
                Kind::MovJeq => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l == r)
                }
                Kind::MovJne => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l != r)
                }
                Kind::MovJgt => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l > r)
                }
                Kind::MovJge => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l >= r)
                }
                Kind::MovJlt => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l < r)
                }
                Kind::MovJle => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l <= r)
                }
                Kind::MovJset => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l & r != 0)
                }
            }
            pc += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sop_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<SOp>(), 16);
    }
}
