//! Partial evaluation of a seccomp filter with `arch` and/or `nr` known.
//!
//! Three passes over the forward-only classic DAG, each linear in the
//! instructions reachable under the given (arch, nr):
//!
//! 1. **Forward** (abstract interpretation in pc order, over the one
//!    abstract domain of [`crate::domain`] with [`domain::step`] as the
//!    transfer function): A, X and `M[0..16]` are each `Known(u32)`, an
//!    exact copy of a word, or unknown. Loads of a known `nr`/`arch`, `ld #k`,
//!    ALU on known operands, `tax`/`txa`, `st`/`ld M[]` of known values fold;
//!    a conditional jump on known operands follows one edge only; the true
//!    edge of `jeq` teaches that A equals the constant. States of paths that
//!    meet are joined (equal constants stay known). Every reachable `ret`
//!    (and every `div x` that may divide by zero, which returns 0) adds a
//!    possible result: when all of them are one known value the entry is a
//!    constant action and the other passes are skipped. With A known, a
//!    run of libseccomp-style `jeq #k, L, 0` dispatch instructions is left
//!    by one binary search ([`Run`]) instead of one step per syscall: that
//!    keeps a whole syscall table's build linear in table size plus program
//!    size. Registers also remember when they hold a `struct seccomp_data`
//!    word exactly, which is how the constants `nr` and `arch` are compared
//!    with are found.
//! 2. **Backward** (liveness over the pruned graph): which registers a kept
//!    instruction still reads at run time. An instruction whose result was
//!    folded is deleted, unless its register is live after it: then it
//!    becomes `ld #c` / `ldx #c` (or stays a `st`/`stx` of a materialised
//!    register). Pure instructions whose result is dead are deleted too.
//!    `land[pc]` is where control that reaches `pc` actually goes next: the
//!    first kept instruction, following decided jumps ("jump threading").
//! 3. **Layout**: the kept instructions in their original order; a `ja` is
//!    inserted only where a fall-through would otherwise land on the wrong
//!    instruction, and each insertion stands for a decided jump that was in
//!    that gap, so every forward distance only shrinks. Jump threading can
//!    lengthen a conditional jump past 255; then the layout is redone with
//!    decided jumps kept as `ja` in place unless falling through lands at
//!    the same instruction (no threading): every deleted instruction then
//!    falls through, no `ja` is inserted, and each distance is at most the
//!    original one. After a `ret`, unreachable `st M[k]` may be inserted so
//!    that the kernel's linear load/store check accepts the residual
//!    ([`Specializer::ret_fallthrough_repair`]); a layout they push past a
//!    jump's reach falls back to the whole filter, which is counted.
//!
//! The same passes specialise a residual on a key field
//! ([`Specializer::specialize_key`], the trees of [`super::tree`]): its
//! loads fold to a known value, its `jeq` with constants it is known to
//! differ from are false, or the comparisons its known bits decide
//! ([`crate::domain::Facts::decide`]) are folded.
//!
//! The result is a classic program in user form (seccomp loads as
//! `ld [k]`, 0x20) that the caller validates with [`cbpf::validate`].

use cbpf::opcode::*;
use cbpf::{AluOp, Insn, JmpOp, Op, Program, Src};

use crate::arch::AUDIT_ARCH_X86_64;
use crate::domain::{self, Cmp, Env, Field, State, Step, Val};

/// The byte order the specialiser names words in. It works on offsets and
/// any byte order maps them one to one onto [`Field`]s, so one fixed layout
/// serves every arch.
const LAYOUT_ARCH: u32 = AUDIT_ARCH_X86_64;

/// Register indices in the liveness bitmasks: A, X, then `M[0..16]`.
const A: u32 = 0;
const X: u32 = 1;

fn mem_reg(k: u32) -> u32 {
    2 + (k & 15)
}

const fn bit(reg: u32) -> u32 {
    1 << reg
}

/// What the forward pass decided for one reachable instruction.
#[derive(Debug, Clone, Copy)]
enum Plan {
    /// Control goes to this pc (a decided branch, `ja`, or `pc + 1`).
    Goto(u16),
    /// The result in A or X (`reg`) is known; at run time only
    /// `materialize` (`ld #k` or `ldx #k`, which reads nothing) is needed,
    /// and only if `reg` is live afterwards.
    Known { reg: u32, materialize: Insn },
    /// Kept straight-line instruction; `pure` ones may be deleted when
    /// nothing reads what they write.
    Step { insn: Insn, uses: u32, defs: u32, pure: bool },
    /// Kept conditional jump to absolute pcs `t` / `f`.
    Cond { insn: Insn, uses: u32, t: u16, f: u16 },
    /// Kept return.
    Ret { insn: Insn, uses: u32 },
}

/// What a kept instruction becomes in the layout.
#[derive(Debug, Clone, Copy)]
enum Emit {
    /// Deleted.
    None,
    /// Straight-line: falls through to `land[pc + 1]`.
    Fall(Insn),
    /// Conditional jump to the kept pcs `t` / `f`.
    Cond(Insn, u16, u16),
    /// `ja` to the kept pc (only without jump threading).
    Ja(u16),
    /// Return.
    Ret(Insn),
}

/// One slot of the residual layout.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// The kept instruction at this original pc.
    At(u16),
    /// An inserted `ja` to the kept instruction at this original pc.
    Ja(u16),
    /// An inserted, unreachable `st M[k]` right after a `ret`
    /// ([`Specializer::ret_fallthrough_repair`]).
    Store(u32),
}

/// What is known about a key field (one `struct seccomp_data` word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyFact {
    /// The word is this value: its loads fold to it.
    Equals(u32),
    /// The word is none of these (ascending): `jeq #k` on it, `k` among
    /// them, is false.
    NoneOf(Vec<u32>),
    /// The bits of `ones` are set in the word, those of `zeros` clear (the
    /// rest unknown): a comparison these bits decide
    /// ([`domain::Facts::decide`]) is folded, the word itself is not.
    Bits { ones: u32, zeros: u32 },
}

impl KeyFact {
    /// The path facts `Bits` stands for, on the word at `offset`.
    fn known_bits(&self, offset: u32) -> Option<domain::Facts> {
        match *self {
            KeyFact::Bits { ones, zeros } => {
                Field::from_offset(offset, LAYOUT_ARCH).map(|f| domain::Facts::with_bits(f, ones, zeros))
            }
            KeyFact::Equals(_) | KeyFact::NoneOf(_) => None,
        }
    }
}

/// Everything known about the input of one specialisation.
#[derive(Debug, Clone, Copy)]
struct Facts<'a> {
    /// The known words, as the domain's loads see them.
    env: Env,
    /// The key field, when it is none of these constants (ascending).
    none_of: Option<(Field, &'a [u32])>,
    /// Known bits of the key field ([`KeyFact::Bits`]).
    bits: Option<&'a domain::Facts>,
}

impl<'a> Facts<'a> {
    fn new(
        arch: Option<u32>,
        nr: Option<u32>,
        key: Option<(u32, &'a KeyFact)>,
        bits: Option<&'a domain::Facts>,
    ) -> Facts<'a> {
        let mut env = Env::new(nr, arch, LAYOUT_ARCH);
        let mut none_of = None;
        if let Some((offset, fact)) = key {
            if let Some(field) = Field::from_offset(offset, LAYOUT_ARCH) {
                match fact {
                    KeyFact::Equals(v) => env.word = Some((field, *v)),
                    KeyFact::NoneOf(ks) => none_of = Some((field, ks.as_slice())),
                    KeyFact::Bits { .. } => {}
                }
            }
        }
        Facts { env, none_of, bits }
    }
}

/// What a filter does for one specialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Specialized<'a> {
    /// Always this value.
    Action(u32),
    /// Run this program (user form, not yet validated).
    Residual(&'a [Insn]),
    /// The filter cannot be specialised (an instruction a validated seccomp
    /// filter cannot contain); run the whole filter.
    Whole,
}

/// The set of values the reachable returns can give.
#[derive(Debug, Clone, Copy, Default)]
struct Results {
    first: Option<u32>,
    varies: bool,
}

impl Results {
    fn add(&mut self, value: Option<u32>) {
        // A first known value after an unknown one is kept too: `varies`
        // already rules the set out as a constant.
        match (value, self.first) {
            (Some(v), None) => self.first = Some(v),
            (Some(v), Some(f)) if v == f => {}
            _ => self.varies = true,
        }
    }

    fn constant(self) -> Option<u32> {
        if self.varies {
            None
        } else {
            self.first
        }
    }
}

/// Reusable specialiser for one program: decoded once, scratch buffers
/// reused across (arch, nr), so a whole syscall table allocates only for
/// the residual programs it returns.
#[derive(Debug)]
pub(crate) struct Specializer {
    ops: Vec<Option<Op>>,
    /// Per pc: the [`Run`] it belongs to, or [`NO_RUN`].
    run_of: Vec<u32>,
    runs: Vec<Run>,
    /// `(k, pc, target)` of every run member, each run's slice sorted.
    run_keys: Vec<RunKey>,
    /// Which field's compared constants to collect (nr or arch).
    watch: Option<Field>,
    compared: Vec<u32>,
    /// Bit `pc`: some state is waiting in `pending[pc]`.
    has: Vec<u64>,
    pending: Vec<State>,
    plans: Vec<Plan>,
    /// Reachable pcs, ascending.
    visited: Vec<u16>,
    live: Vec<u32>,
    land: Vec<u16>,
    emit: Vec<Emit>,
    new_index: Vec<u32>,
    slots: Vec<Slot>,
    out: Vec<Insn>,
    /// What the last specialisation gave ([`Specializer::last`]).
    last: Last,
}

/// The kind of the last [`Specialized`], its residual left in `out`.
#[derive(Debug, Clone, Copy)]
enum Last {
    Action(u32),
    Residual,
    Whole,
}

/// Marks a pc outside every [`Run`].
const NO_RUN: u32 = u32::MAX;

/// Fewest members worth a [`Run`].
const MIN_RUN: usize = 4;

/// A run of consecutive `jeq #k, L, 0` (the shape of libseccomp's syscall
/// dispatch), possibly ended by a two-way `jeq #k, L, M`. With A known,
/// where control leaves the run from any member is one binary search in
/// `run_keys[keys]` instead of a step per member.
#[derive(Debug, Clone)]
struct Run {
    keys: std::ops::Range<usize>,
    /// Where control goes when no member matches.
    then: u16,
}

/// `(k, pc, true target)` of a run member; sorted, the first member with
/// key `k` at or after a pc is one binary search away.
type RunKey = (u32, u16, u16);

/// A run member: `jeq #k` that jumps on equality and, unless it ends the
/// run, falls through otherwise. Returns `(k, true target, ends run)`.
fn run_member(pc: usize, op: Option<Op>) -> Option<(u32, u16, Option<u16>)> {
    match op? {
        Op::Jmp { op: JmpOp::Jeq, src: Src::K, k, jt, jf } if jt > 0 => {
            let t = (pc + 1 + usize::from(jt)) as u16;
            let f = (jf > 0).then_some((pc + 1 + usize::from(jf)) as u16);
            Some((k, t, f))
        }
        _ => None,
    }
}

/// Finds the [`Run`]s of a program.
fn find_runs(ops: &[Option<Op>]) -> (Vec<u32>, Vec<Run>, Vec<RunKey>) {
    let mut run_of = vec![NO_RUN; ops.len()];
    let mut runs = Vec::new();
    let mut keys: Vec<RunKey> = Vec::new();
    let mut pc = 0;
    while pc < ops.len() {
        let start = pc;
        let first_key = keys.len();
        let mut then = None;
        while let Some((k, t, ends)) = run_member(pc, ops.get(pc).copied().flatten()) {
            keys.push((k, pc as u16, t));
            pc += 1;
            if let Some(f) = ends {
                then = Some(f);
                break;
            }
        }
        if pc - start < MIN_RUN {
            keys.truncate(first_key);
            pc = start + 1;
            continue;
        }
        let then = then.unwrap_or(pc as u16);
        if let Some(slice) = keys.get_mut(first_key..) {
            slice.sort_unstable();
        }
        let id = runs.len() as u32;
        for slot in run_of.get_mut(start..pc).into_iter().flatten() {
            *slot = id;
        }
        runs.push(Run { keys: first_key..keys.len(), then });
    }
    (run_of, runs, keys)
}

/// The layout failed: a conditional jump would need an offset above 255
/// (only possible with jump threading), or a broken invariant.
#[derive(Debug)]
struct LayoutFailed;

impl Specializer {
    /// Decodes `program.insns()` (the seccomp-rewritten form).
    pub(crate) fn new(program: &Program) -> Self {
        let ops: Vec<Option<Op>> = program.insns().iter().map(|i| i.op()).collect();
        let n = ops.len();
        let (run_of, runs, run_keys) = find_runs(&ops);
        Specializer {
            ops,
            run_of,
            runs,
            run_keys,
            watch: None,
            compared: Vec::new(),
            has: vec![0; n.div_ceil(64) + 1],
            pending: vec![State::entry(); n],
            plans: vec![Plan::Goto(0); n],
            visited: Vec::with_capacity(n),
            live: vec![0; n + 1],
            land: vec![0; n + 1],
            emit: vec![Emit::None; n],
            new_index: vec![0; n],
            slots: Vec::with_capacity(n),
            out: Vec::with_capacity(n),
            last: Last::Whole,
        }
    }

    /// Like [`Specializer::specialize`], also returning every constant a
    /// reachable conditional jump compares the field at `offset` itself
    /// with (either operand order), ascending.
    pub(crate) fn specialize_watching(
        &mut self,
        arch: Option<u32>,
        nr: Option<u32>,
        offset: u32,
    ) -> (Vec<u32>, Specialized<'_>) {
        self.watch = Field::from_offset(offset, LAYOUT_ARCH);
        self.compared.clear();
        let found = self.forward(arch, nr, None);
        self.watch = None;
        let mut compared = std::mem::take(&mut self.compared);
        compared.sort_unstable();
        compared.dedup();
        (compared, self.finish(found))
    }

    /// Whether the last residual returned reads A or X before writing them
    /// (`(a, x)`): it then relies on both being 0 at its entry, as they are
    /// when a filter starts (the converted program clears them), so a
    /// caller that jumps into it with another A must first clear A.
    pub(crate) fn entry_reads(&self) -> (bool, bool) {
        let live = self.live_at(0);
        (live & bit(A) != 0, live & bit(X) != 0)
    }

    /// Instructions the last forward pass visited (its work).
    pub(crate) fn last_work(&self) -> usize {
        self.visited.len()
    }

    /// The filter with `seccomp_data.arch` and `.nr` fixed where given.
    pub(crate) fn specialize(&mut self, arch: Option<u32>, nr: Option<u32>) -> Specialized<'_> {
        let found = self.forward(arch, nr, None);
        self.finish(found)
    }

    /// The program with what `fact` says about the `struct seccomp_data`
    /// word at `offset` (a key field, [`super::key`]).
    pub(crate) fn specialize_key(&mut self, offset: u32, fact: &KeyFact) -> Specialized<'_> {
        let found = self.forward(None, None, Some((offset, fact)));
        self.finish(found)
    }

    fn finish(&mut self, results: Option<Results>) -> Specialized<'_> {
        self.last = self.settle(results);
        self.last()
    }

    fn settle(&mut self, results: Option<Results>) -> Last {
        let Some(results) = results else { return Last::Whole };
        if let Some(v) = results.constant() {
            return Last::Action(v);
        }
        for threading in [true, false] {
            self.backward(threading);
            if self.layout().is_ok() {
                return Last::Residual;
            }
        }
        Last::Whole
    }

    /// What the last specialisation gave (again).
    pub(crate) fn last(&self) -> Specialized<'_> {
        match self.last {
            Last::Action(v) => Specialized::Action(v),
            Last::Residual => Specialized::Residual(&self.out),
            Last::Whole => Specialized::Whole,
        }
    }

    // ------------------------------------------------------------ forward

    #[inline(always)]
    fn deposit(&mut self, pc: u16, state: &State) {
        let (word, b) = (usize::from(pc) / 64, 1u64 << (pc % 64));
        let (Some(w), Some(slot)) = (self.has.get_mut(word), self.pending.get_mut(usize::from(pc))) else { return };
        if *w & b != 0 {
            slot.join(state);
        } else {
            slot.assign(state);
            *w |= b;
        }
    }

    /// The lowest pc `>= from` with a waiting state.
    #[inline(always)]
    fn next_pending(&self, from: usize) -> Option<usize> {
        self.pending_within(from, usize::MAX)
    }

    /// The lowest pc in `from..=to` with a waiting state: a step with one
    /// successor `to` asks only up to it. (Scanning to the end of the
    /// program instead made every such step cost a pass over the whole
    /// bit set when nothing waits: measured, two thirds of the fast
    /// build's time on a 4096-instruction filter of one long `jeq` prefix,
    /// fuzz/regressions/bounded_work.)
    #[inline(always)]
    fn pending_within(&self, from: usize, to: usize) -> Option<usize> {
        super::bits::lowest_set(&self.has, from, to)
    }

    /// Takes the waiting state at `pc`: `state` becomes it, or (`join`)
    /// is joined with it. In place, without copying the state twice.
    #[inline(always)]
    fn take_into(&mut self, pc: usize, state: &mut State, join: bool) {
        if let Some(w) = self.has.get_mut(pc / 64) {
            *w &= !(1u64 << (pc % 64));
        }
        match self.pending.get(pc) {
            Some(waiting) if join => state.join(waiting),
            Some(waiting) => state.assign(waiting),
            None if join => state.join(&State::entry()),
            None => *state = State::entry(),
        }
    }

    /// Pass 1. `None` when an instruction has no seccomp meaning (impossible
    /// for a validated seccomp program); the pending bits are then cleared.
    fn forward(&mut self, arch: Option<u32>, nr: Option<u32>, key: Option<(u32, &KeyFact)>) -> Option<Results> {
        self.visited.clear();
        let mut results = Results::default();
        let mut state = State::entry();
        let bits = key.and_then(|(offset, fact)| fact.known_bits(offset));
        let facts = Facts::new(arch, nr, key, bits.as_ref());
        let mut pc = 0usize;
        let n = self.ops.len();
        loop {
            let op = match self.ops.get(pc) {
                Some(Some(op)) => *op,
                _ => {
                    self.has.iter_mut().for_each(|w| *w = 0);
                    return None;
                }
            };
            let pc16 = pc as u16; // pc < 4096
            self.visited.push(pc16);
            let skipped = match (state.a, self.run_of.get(pc)) {
                (Val::Known(a), Some(&run)) if run != NO_RUN => {
                    self.run_exit(run, a, pc16).map(|t| (Plan::Goto(t), Next::One(t)))
                }
                _ => None,
            };
            let stepped = match skipped {
                Some(s) => Some(s),
                None => {
                    let watch = self.watch.map(|offset| (offset, &mut self.compared));
                    step(pc16, op, &mut state, facts, &mut results, watch)
                }
            };
            let Some((plan, next)) = stepped else {
                self.has.iter_mut().for_each(|w| *w = 0);
                return None;
            };
            if let Some(p) = self.plans.get_mut(pc) {
                *p = plan;
            }
            // Where to continue: the single successor with the running
            // state when no waiting state comes before it.
            let resume = match next {
                Next::One(s) => {
                    let s = usize::from(s);
                    if s >= n || s <= pc {
                        // Impossible after validation: jumps go forward and
                        // the last instruction is a ret. Never loop.
                        self.has.iter_mut().for_each(|w| *w = 0);
                        return None;
                    }
                    match self.pending_within(pc + 1, s) {
                        Some(p) if p < s => {
                            self.deposit(s as u16, &state);
                            Some(p)
                        }
                        Some(p) if p == s => {
                            self.take_into(s, &mut state, true);
                            pc = s;
                            continue;
                        }
                        _ => {
                            pc = s;
                            continue;
                        }
                    }
                }
                Next::Two { t, cmp, f } => {
                    self.deposit(f, &state);
                    // The running state is replaced below: refine it in place.
                    state.assume(cmp, true);
                    self.deposit(t, &state);
                    self.next_pending(pc + 1)
                }
                Next::End => self.next_pending(pc + 1),
            };
            match resume {
                Some(p) => {
                    self.take_into(p, &mut state, false);
                    pc = p;
                }
                None => return Some(results),
            }
        }
    }

    /// Where control leaves run `run`, entered at `from` with A == `a`.
    #[inline(always)]
    fn run_exit(&self, run: u32, a: u32, from: u16) -> Option<u16> {
        let run = self.runs.get(run as usize)?;
        let keys = self.run_keys.get(run.keys.clone())?;
        let i = keys.partition_point(|&(k, pc, _)| (k, pc) < (a, from));
        match keys.get(i) {
            Some(&(k, _, target)) if k == a => Some(target),
            _ => Some(run.then),
        }
    }

    // ------------------------------------------------------------ backward

    fn live_at(&self, pc: u16) -> u32 {
        self.live.get(usize::from(pc)).copied().unwrap_or(0)
    }

    fn land_at(&self, pc: u16) -> u16 {
        self.land.get(usize::from(pc)).copied().unwrap_or(pc)
    }

    /// Pass 2: liveness, deletions, materialisations and landing pcs.
    fn backward(&mut self, threading: bool) {
        for i in (0..self.visited.len()).rev() {
            let Some(&pc) = self.visited.get(i) else { continue };
            let next = pc + 1;
            let Some(&plan) = self.plans.get(usize::from(pc)) else { continue };
            // A decided jump to `t`: threaded (deleted, control lands where
            // `t` lands), or without threading deleted only when falling
            // through would land at the same place, else kept as `ja`.
            let jump = |this: &Self, t: u16| {
                let dest = this.land_at(t);
                let falls_there = this.visited.get(i + 1) == Some(&next) && this.land_at(next) == dest;
                if t == next || threading || falls_there {
                    (this.live_at(t), dest, Emit::None)
                } else {
                    (this.live_at(t), pc, Emit::Ja(t))
                }
            };
            let (live, land, emit) = match plan {
                Plan::Goto(t) => jump(self, t),
                Plan::Known { reg, materialize } => {
                    let out = self.live_at(next);
                    if out & bit(reg) != 0 {
                        (out & !bit(reg), pc, Emit::Fall(materialize))
                    } else {
                        (out, self.land_at(next), Emit::None)
                    }
                }
                Plan::Step { insn, uses, defs, pure } => {
                    let out = self.live_at(next);
                    if pure && out & defs == 0 {
                        (out, self.land_at(next), Emit::None)
                    } else {
                        ((out & !defs) | uses, pc, Emit::Fall(insn))
                    }
                }
                Plan::Cond { insn, uses, t, f } => {
                    let (lt, lf) = (self.land_at(t), self.land_at(f));
                    if lt == lf {
                        jump(self, t)
                    } else {
                        (self.live_at(t) | self.live_at(f) | uses, pc, Emit::Cond(insn, lt, lf))
                    }
                }
                Plan::Ret { insn, uses } => (uses, pc, Emit::Ret(insn)),
            };
            let p = usize::from(pc);
            if let (Some(l), Some(d), Some(e)) = (self.live.get_mut(p), self.land.get_mut(p), self.emit.get_mut(p)) {
                *l = live;
                *d = land;
                *e = emit;
            }
        }
    }

    // ------------------------------------------------------------ layout

    fn index_of(&self, pc: u16) -> u32 {
        self.new_index.get(usize::from(pc)).copied().unwrap_or(0)
    }

    /// The scratch slots whose state must be repaired after each `ret` that
    /// is followed by more code: those a kept instruction both stores and
    /// loads.
    ///
    /// `check_load_and_stores()` in net/core/filter.c (Linux 6.18) walks the
    /// program linearly and does not reset its "written" set after a `ret`
    /// (SPEC §2.3): the state at the end of the block before a `ret` flows
    /// into the next instruction, which in a residual is always a jump
    /// target reached only by jumps. Deleting decided jumps (which do reset
    /// the set) can make a `ret` directly precede a block that loads `M[k]`
    /// while that `ret`'s block never stored it: the kernel's check then
    /// rejects a program whose every real path stores before it loads. An
    /// unreachable `st M[k]` after the `ret` for each such `k` restores the
    /// original's verdict without changing any run (found by the
    /// `fast_equiv` fuzz target, regression `arch_free_residual_fails_validation`).
    fn ret_fallthrough_repair(&self) -> u32 {
        let (mut stored, mut loaded) = (0u32, 0u32);
        for &pc in &self.visited {
            if let Some(Emit::Fall(insn)) = self.emit.get(usize::from(pc)) {
                let slot = 1u32.checked_shl(insn.k).unwrap_or(0);
                match insn.op() {
                    Some(Op::St { .. } | Op::Stx { .. }) => stored |= slot,
                    Some(Op::LdMem { .. } | Op::LdxMem { .. }) => loaded |= slot,
                    _ => {}
                }
            }
        }
        stored & loaded
    }

    /// Pass 3: the residual program into `self.out`.
    fn layout(&mut self) -> Result<(), LayoutFailed> {
        self.slots.clear();
        self.out.clear();
        let repair = self.ret_fallthrough_repair();
        let mut after_ret = false;
        let mut expected = Some(self.land_at(0));
        for &pc in &self.visited {
            let emit = self.emit.get(usize::from(pc)).copied().unwrap_or(Emit::None);
            if matches!(emit, Emit::None) {
                continue;
            }
            if after_ret {
                self.slots.extend((0..16).filter(|k| repair & (1 << k) != 0).map(Slot::Store));
            }
            after_ret = matches!(emit, Emit::Ret(_));
            match expected {
                Some(e) if e == pc => {}
                Some(e) if e > pc => self.slots.push(Slot::Ja(e)),
                Some(_) => return Err(LayoutFailed),
                None => {}
            }
            if let Some(ix) = self.new_index.get_mut(usize::from(pc)) {
                *ix = self.slots.len() as u32;
            }
            self.slots.push(Slot::At(pc));
            expected = match emit {
                Emit::Fall(_) => Some(self.land.get(usize::from(pc) + 1).copied().ok_or(LayoutFailed)?),
                _ => None,
            };
        }
        if expected.is_some() {
            return Err(LayoutFailed);
        }
        for (i, slot) in self.slots.iter().enumerate() {
            let i = i as u32;
            let dist = |to: u16| self.index_of(to).checked_sub(i + 1).ok_or(LayoutFailed);
            let insn = match *slot {
                Slot::Ja(to) => Insn::stmt(JMP_JA, dist(to)?),
                Slot::Store(k) => Insn::stmt(ST, k),
                Slot::At(pc) => match self.emit.get(usize::from(pc)).copied().unwrap_or(Emit::None) {
                    Emit::Fall(insn) | Emit::Ret(insn) => insn,
                    Emit::Ja(t) => Insn::stmt(JMP_JA, dist(self.land_at(t))?),
                    Emit::Cond(insn, t, f) => {
                        let jt = u8::try_from(dist(t)?).map_err(|_| LayoutFailed)?;
                        let jf = u8::try_from(dist(f)?).map_err(|_| LayoutFailed)?;
                        Insn { jt, jf, ..insn }
                    }
                    Emit::None => return Err(LayoutFailed),
                },
            };
            self.out.push(insn);
        }
        Ok(())
    }
}

/// Where control goes after one instruction.
enum Next {
    One(u16),
    /// Both edges of `cmp`: `t` when it holds, `f` otherwise.
    Two {
        t: u16,
        cmp: Cmp,
        f: u16,
    },
    End,
}

/// `op` (an ALU instruction) with X as its operand.
fn alu_insn(op: Op, k: u32) -> Insn {
    match op {
        Op::Alu { op, .. } => Insn::stmt(BPF_ALU | op.bits() | BPF_X, k),
        other => other.to_insn(),
    }
}

/// `jeq` of the key field with a constant it is known to differ from.
fn excluded(cmp: Cmp, none_of: Option<(Field, &[u32])>) -> Option<bool> {
    match (cmp.op, cmp.lhs, cmp.rhs, none_of) {
        (JmpOp::Jeq, Val::Exact(f), Val::Known(b), Some((key, ks))) if f == key => {
            ks.binary_search(&b).is_ok().then_some(false)
        }
        _ => None,
    }
}

/// One instruction of the forward pass: the domain's transfer function
/// ([`domain::step`]) updates `state`; this records possible results and
/// says what to keep and where control goes.
///
/// # Deviations
/// None: every folded value is the value on every concrete path (the
/// domain's semantics are the converted program's, SPEC §1.4).
#[inline(always)]
fn step(
    pc: u16,
    op: Op,
    s: &mut State,
    facts: Facts<'_>,
    results: &mut Results,
    watch: Option<(Field, &mut Vec<u32>)>,
) -> Option<(Plan, Next)> {
    let next = pc + 1;
    let known = |reg: u32, v: u32| {
        let materialize = match reg {
            X => Insn::stmt(LDX_IMM, v),
            _ => Insn::stmt(LD_IMM, v),
        };
        Plan::Known { reg, materialize }
    };
    let keep = |insn: Insn, uses: u32, defs: u32| Plan::Step { insn, uses, defs, pure: true };
    let ret = |results: &mut Results, v: Val| {
        results.add(v.known());
        let plan = match v {
            Val::Known(k) => Plan::Ret { insn: Insn::stmt(RET_K, k), uses: 0 },
            _ => Plan::Ret { insn: Insn::stmt(RET_A, 0), uses: bit(A) },
        };
        Some((plan, Next::End))
    };
    let plan = match op {
        // Packet loads never survive seccomp_check_filter(); `len` was
        // rewritten to `#64`. Refuse rather than guess.
        Op::LdAbs { .. } | Op::LdInd { .. } | Op::LdLen | Op::LdxLen | Op::LdxMsh { .. } => {
            return Some((Plan::Goto(next), Next::One(u16::MAX)));
        }
        Op::Jmp { op: cmp, src, k, jt, jf } => {
            // The comparison is recorded even when both edges meet, which
            // the domain's step reports as a plain goto.
            let c = Cmp::of(cmp, src, k, s);
            if let Some((field, found)) = watch {
                found.extend(c.constant_against(field));
            }
            let (t, f) = (next + u16::from(jt), next + u16::from(jf));
            let decided = c
                .decided()
                .or_else(|| excluded(c, facts.none_of))
                .or_else(|| facts.bits.and_then(|known| known.decide(c)));
            if let Some(taken) = decided.or((t == f).then_some(true)) {
                let to = if taken { t } else { f };
                return Some((Plan::Goto(to), Next::One(to)));
            }
            let (insn, uses) = match c.rhs {
                Val::Known(b) => (Insn::jump(BPF_JMP | cmp.bits() | BPF_K, b, jt, jf), bit(A)),
                _ => (Insn::jump(BPF_JMP | cmp.bits() | BPF_X, 0, jt, jf), bit(A) | bit(X)),
            };
            return Some((Plan::Cond { insn, uses, t, f }, Next::Two { t, cmp: c, f }));
        }
        _ => match domain::step(usize::from(pc), Some(op), s, &facts.env) {
            Step::Return(v) => return ret(results, v),
            Step::Goto(to) if matches!(op, Op::Ja { .. }) => {
                // k < len - pc - 1 (bpf_check_classic), so this fits in u16.
                let to = to as u16;
                return Some((Plan::Goto(to), Next::One(to)));
            }
            // `div x` / `mod x` with an X that may be zero: kept, and it may
            // return 0.
            Step::DivByX { .. } => {
                results.add(Some(0));
                Plan::Step { insn: alu_insn(op, 0), uses: bit(A) | bit(X), defs: bit(A), pure: false }
            }
            // Only conditional jumps branch, and they are handled above.
            Step::Branch { .. } => return None,
            Step::Goto(_) => straight_line(op, s, known, keep),
        },
    };
    Some((plan, Next::One(next)))
}

/// The plan of a straight-line instruction from the state after it: fold
/// what became known, keep the rest with known operands substituted.
#[inline(always)]
fn straight_line(op: Op, s: &State, known: impl Fn(u32, u32) -> Plan, keep: impl Fn(Insn, u32, u32) -> Plan) -> Plan {
    match op {
        Op::LdImm { k } => known(A, k),
        Op::LdxImm { k } => known(X, k),
        Op::LdMem { k } => s.a.known().map_or_else(|| keep(op.to_insn(), bit(mem_reg(k)), bit(A)), |v| known(A, v)),
        Op::LdxMem { k } => s.x.known().map_or_else(|| keep(op.to_insn(), bit(mem_reg(k)), bit(X)), |v| known(X, v)),
        // A store stays a store, of a known value or not: kept where its
        // word is loaded at run time.
        Op::St { k } | Op::Stx { k } => {
            let src = if matches!(op, Op::St { .. }) { A } else { X };
            keep(op.to_insn(), bit(src), bit(mem_reg(k)))
        }
        Op::LdxAbsSeccomp { k } => {
            s.a.known().map_or_else(|| keep(Insn::stmt(LD_W_ABS, k), 0, bit(A)), |v| known(A, v))
        }
        Op::Alu { op: alu, src, k } => {
            let operand = match src {
                Src::K => Some(k),
                Src::X => s.x.known(),
            };
            match (s.a, operand) {
                (Val::Known(v), _) => known(A, v),
                (_, Some(b)) => {
                    let b = if matches!(alu, AluOp::Lsh | AluOp::Rsh) { b & 31 } else { b };
                    keep(Insn::stmt(BPF_ALU | alu.bits() | BPF_K, b), bit(A), bit(A))
                }
                (_, None) => Plan::Step { insn: alu_insn(op, 0), uses: bit(A) | bit(X), defs: bit(A), pure: true },
            }
        }
        Op::Neg => s.a.known().map_or_else(|| keep(Insn::stmt(ALU_NEG, 0), bit(A), bit(A)), |v| known(A, v)),
        Op::Tax => s.x.known().map_or_else(|| keep(op.to_insn(), bit(A), bit(X)), |v| known(X, v)),
        Op::Txa => s.a.known().map_or_else(|| keep(op.to_insn(), bit(X), bit(A)), |v| known(A, v)),
        // Jumps, returns and packet loads are planned by the caller.
        Op::LdAbs { .. }
        | Op::LdInd { .. }
        | Op::LdLen
        | Op::LdxLen
        | Op::LdxMsh { .. }
        | Op::Ja { .. }
        | Op::Jmp { .. }
        | Op::RetK { .. }
        | Op::RetA => Plan::Goto(0),
    }
}
