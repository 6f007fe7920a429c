//! Pre-decoding a validated program into the interpreter's internal form.

use std::num::NonZeroU32;

use chain::{Builder, Compare, Cond, ExitTest, Leaving, Link, Record, Rules, Table, BLOCK};

use crate::insn::{AluOp, Insn, JmpOp, Op as View, Size, Src};
use crate::opcode::SKF_AD_OFF;
use crate::validate::is_ancillary;

use crate::exec::context::Ancillary;

/// Target pc for what can never be reached: past any program (at most 4096
/// instructions), so landing there ends the run with 0. Only keeps a broken
/// invariant from looping.
pub(super) const DEAD: u16 = u16::MAX;

/// The chain core's condition for a classic conditional jump.
fn cond(op: JmpOp) -> Cond {
    match op {
        JmpOp::Jeq => Cond::Eq,
        JmpOp::Jgt => Cond::Gt,
        JmpOp::Jge => Cond::Ge,
        JmpOp::Jset => Cond::Set,
    }
}

/// The exit test equivalent to "`A op k` is `outcome`" ([`ExitTest::of`]),
/// or `None` when that can never happen (`jgt #0xffffffff` true, `jge #0`
/// false, `jset #0` true).
pub(super) fn exit_test(op: JmpOp, k: u32, outcome: bool) -> Option<ExitTest> {
    ExitTest::of(cond(op), k, outcome)
}

/// The exit tests of all compare chains ([`chain::Table`]: struct of
/// arrays for the blocked scan, and one array of [`Exit`]s, array of
/// structs with one bounds check per test, for the window scans and
/// single-test chains), scanned as [`Scans`] says.
pub(super) type Chains = Table<Exit>;

/// An exit test and where it goes: the pc it leaves to, or (once
/// [`link_chains`] has run) the next range chain to scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Exit {
    pub(super) test: ExitTest,
    /// With `link == LEAVE`, the pc to go to; otherwise the index of the
    /// first test of the range chain that continues the scan.
    pub(super) target: u16,
    /// [`LEAVE`], [`SAME_A`], or the seccomp offset `k` (< 64) whose word `A`
    /// is loaded before scanning on (the continuation is a fused `ld [k]`).
    pub(super) link: u8,
}

impl Record for Exit {
    #[inline(always)]
    fn test(&self) -> ExitTest {
        self.test
    }

    fn leaving(&self) -> Leaving {
        let link = match self.link {
            LEAVE => Link::Leave,
            SAME_A => Link::Same,
            // A seccomp byte offset, 4-aligned.
            k => Link::Reload(k / 4),
        };
        Leaving { target: u64::from(self.target), link }
    }
}

/// [`Exit::link`]: the exit leaves the chain to the pc `target`. Links
/// order as reload offsets (< 64) < [`SAME_A`] < `LEAVE`, so that the run
/// loop tells them apart with one comparison each.
pub(super) const LEAVE: u8 = 128;

/// [`Exit::link`]: the scan goes on at the range chain `target` with `A`
/// unchanged.
pub(super) const SAME_A: u8 = 64;

/// What a scan that cannot happen (a window out of range) returns: a
/// leave to [`DEAD`].
static DEAD_EXIT: Exit = Exit { test: ExitTest::ALWAYS, target: DEAD, link: LEAVE };

/// The window a chain's last tests are scanned in ([`Scans::short`]):
/// those tests and the [`ExitTest::ALWAYS`] sentinel after them. Two
/// blocks, so that the binary-tree leaves of libseccomp's optimised filters
/// (up to a dozen tests below the last split) are scanned inline.
const WINDOW: usize = 2 * BLOCK;

/// The scans of [`Chains`] the run loop uses.
pub(super) trait Scans {
    /// Where the short chain starting at test `from` leaves to: the target of
    /// the first test that `a` hits in the window of [`WINDOW`] tests from
    /// `from`, which holds the chain's sentinel or a hit (the exits end with
    /// `WINDOW - 1` more sentinels, so every window is whole). The window is
    /// one bounds check and an unrolled scan; no length, no loop.
    fn short(&self, a: u32, from: usize) -> &Exit;

    /// [`Scans::short`] for a chain whose tests all have a full mask
    /// (`jeq`, `jgt`, `jge`: [`Step::RangeChain`]): the scan skips the `&`.
    /// The sentinel is a range test too (`A - 0 <= MAX`), and tests past it
    /// are never reached.
    fn short_ranges(&self, a: u32, from: usize) -> &Exit;

    /// Where the chain `from..to` leaves to: the first test that `a` hits,
    /// else the chain's sentinel (at `to`, going to its `then`).
    ///
    /// Tests are evaluated in program order; blocks of [`BLOCK`] are first
    /// checked all at once ([`Table::blocks_without_hit`]: comparisons have
    /// no side effects, so evaluating a few past the first hit changes
    /// nothing), then the block with the hit, or the fewer than `BLOCK`
    /// tests left and the sentinel, are scanned by [`Scans::short`].
    fn first_exit(&self, a: u32, from: usize, to: usize) -> &Exit;
}

impl Scans for Chains {
    #[inline(always)]
    fn short(&self, a: u32, from: usize) -> &Exit {
        self.scan_window::<WINDOW, _>(from, |t| t.hits(a), |e| e, || &DEAD_EXIT)
    }

    #[inline(always)]
    fn short_ranges(&self, a: u32, from: usize) -> &Exit {
        self.scan_window::<WINDOW, _>(from, |t| t.hits_range(a), |e| e, || &DEAD_EXIT)
    }

    // Not inlined: long chains cost far more than a call, while inlining
    // would make every run load the four arrays' bounds up front
    // (measured: a third of a short filter's instructions).
    #[inline(never)]
    fn first_exit(&self, a: u32, from: usize, to: usize) -> &Exit {
        let passed = self.blocks_without_hit(a, from, to);
        self.short(a, from + passed)
    }
}

/// Ladders ([`build_ladders`]) with fewer tests than this are left to the
/// per-rule ops.
const LONG_CHAIN: usize = 2 * BLOCK;

/// The classic program as the chain walk ([`chain::walk`]) sees it.
pub(super) struct Classic<'a> {
    pub(super) insns: &'a [Insn],
    /// [`thread_jumps`] of `insns`.
    pub(super) threaded: &'a [u16],
}

impl chain::Code for Classic<'_> {
    fn compare(&self, pc: usize) -> Option<Compare> {
        let (op, k, jt, jf) = cmp_k(self.insns.get(pc))?;
        let taken = usize::from(target(pc, u64::from(jt)));
        let fall = usize::from(target(pc, u64::from(jf)));
        Some(Compare { cond: cond(op), value: u64::from(k), jump_pc: pc, taken, fall })
    }

    fn resolve(&self, pc: usize) -> (usize, u32) {
        (usize::from(self.threaded.get(pc).copied().unwrap_or(DEAD)), 0)
    }

    fn reloads(&self, pc: usize, word: u8) -> bool {
        seccomp_load(self.insns, pc) == Some(u32::from(word))
    }

    fn loaded_word(&self, pc: usize) -> Option<u8> {
        u8::try_from(seccomp_load(self.insns, pc)?).ok()
    }
}

impl chain::known::Flow for Classic<'_> {
    fn effect(&self, pc: usize) -> chain::known::Effect {
        use chain::known::Effect;
        let to = |off: u64| usize::from(target(pc, off));
        let Some(op) = self.insns.get(pc).and_then(|insn| insn.op()) else { return Effect::Opaque };
        match op {
            View::LdxAbsSeccomp { k } => u8::try_from(k / 4).map_or(Effect::Set, Effect::Load),
            View::Alu { .. } | View::Neg => Effect::Change,
            View::Ja { k } => Effect::Jump(to(u64::from(k))),
            View::Jmp { jt, jf, .. } => Effect::Branch(to(u64::from(jt)), to(u64::from(jf))),
            View::RetK { .. } => Effect::End { reads: false },
            View::RetA => Effect::End { reads: true },
            // The other loads of A (`ld #k`, `ld M[]`, packet loads, `ld
            // len`) and `txa`.
            other if other.writes_a() => Effect::Set,
            // Stores, the loads of X, `tax`.
            _ => Effect::Keep,
        }
    }
}

/// A test's target as an [`Exit::target`] ([`DEAD`] if it is no pc).
fn pc16(pc: usize) -> u16 {
    u16::try_from(pc).unwrap_or(DEAD)
}

/// A pre-decoded classic instruction: the interpreter's own step set (the
/// ISA's typed view is [`crate::Op`], here `View`). Jump targets are absolute pcs (a
/// program has at most 4096 instructions, so `u16` holds them); 16 bytes, so
/// that single range tests fit inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    LdImm(u32),
    LdxImm(u32),
    LdMem(u8),
    LdxMem(u8),
    St(u8),
    Stx(u8),
    /// Seccomp-internal 0x21.
    LdSeccomp(u32),
    LdAbs {
        size: u8,
        k: u32,
    },
    LdInd {
        size: u8,
        k: u32,
    },
    LdLen,
    LdxLen,
    LdxMsh(u32),
    Anc(Ancillary),
    AddK(u32),
    AddX,
    SubK(u32),
    SubX,
    MulK(u32),
    MulX,
    DivK(NonZeroU32),
    DivX,
    ModK(NonZeroU32),
    ModX,
    AndK(u32),
    AndX,
    OrK(u32),
    OrX,
    XorK(u32),
    XorX,
    LshK(u32),
    LshX,
    RshK(u32),
    RshX,
    Neg,
    Tax,
    Txa,
    Ja(u16),
    JmpX {
        op: JmpOp,
        jt: u16,
        jf: u16,
    },
    /// A conditional jump on `#k` and the ones after it (a compare chain)
    /// with fewer than [`WINDOW`] tests left: go to the target of the first of
    /// `chains.exits[from..]` that hits; the chain's tests are followed by an
    /// [`ExitTest::ALWAYS`] sentinel that goes to its `then`. Here and in
    /// every chain op, an exit may link on to another range chain
    /// ([`link_chains`]).
    Chain {
        from: u16,
    },
    /// A [`Step::Chain`] whose tests are all ranges (full mask: `jeq`, `jgt`,
    /// `jge`, as in libseccomp's syscall trees), scanned without the mask.
    RangeChain {
        from: u16,
    },
    /// A compare chain of [`WINDOW`] or more tests: go to the target of the
    /// first of `chains[from..to]` that hits, else to the target of the
    /// sentinel at `to` (the chain's `then`).
    LongChain {
        from: u16,
        to: u16,
    },
    /// Seccomp `ld [k]` fused with the short compare chain after it.
    LdChain {
        k: u8,
        from: u16,
    },
    /// Seccomp `ld [k]` fused with the [`Step::RangeChain`] after it.
    LdRangeChain {
        k: u8,
        from: u16,
    },
    /// Seccomp `ld [k]`, `and #mask` and the short compare chain after
    /// them, one op: `A = word & mask`, then the chain's scan (OpenSSH's
    /// flag checks: `ld [32]; and #0xfffffff8; jeq #0`). `A` is what the
    /// two instructions leave in it, so every exit is exact.
    LdAndChain {
        k: u8,
        mask: u32,
        from: u16,
    },
    /// [`Step::LdAndChain`] for a single-test chain ([`Step::Test`],
    /// [`Step::Range`]): that test, else `then`.
    LdAndTest {
        k: u8,
        mask: u32,
        index: u16,
        then: u16,
    },
    /// Seccomp `ld [k]` fused with the long compare chain after it: right
    /// after it, or a rule ladder ([`build_ladders`]). The jumps' own pcs
    /// keep their own ops for jumps that land on them.
    LdLongChain {
        k: u8,
        from: u16,
        to: u16,
    },
    /// A [`Step::LongChain`] of `jeq #k` exits, run as the lookup table
    /// `set` ([`super::eq_set`]); with `first`, the op's first test is
    /// tried before the table.
    EqSet {
        set: u16,
        from: u16,
        to: u16,
        first: bool,
    },
    /// Seccomp `ld [k]` fused with an [`Step::EqSet`].
    LdEqSet {
        k: u8,
        set: u16,
        from: u16,
        to: u16,
        first: bool,
    },
    /// The root of a compare tree (a region of `jeq/jgt/jge #k` that
    /// branches, [`chain::RangeTrees`]): go where walking the region with
    /// `A` leaves to, found in table `tree` ([`super::tree`]).
    Tree {
        tree: u16,
    },
    /// Seccomp `ld [k]` fused with the [`Step::Tree`] after it.
    LdTree {
        k: u8,
        tree: u16,
    },
    /// The first round of a 32-bit argument ladder ([`chain::ladder`]):
    /// go where running its rounds with the words `[hi]` and `[lo]` leaves
    /// to, found in ladder `ladder` ([`super::ladder`]), with `A` the word
    /// loaded last.
    Ladder {
        hi: u8,
        lo: u8,
        ladder: u16,
    },
    /// A compare chain with a single exit test: go to its target if `A`
    /// hits test `index`, else to `then`.
    Test {
        index: u16,
        then: u16,
    },
    /// Seccomp `ld [k]` fused with the single-test chain after it.
    LdTest {
        k: u8,
        index: u16,
        then: u16,
    },
    /// A single-test chain whose test is a range (`jeq`, `jgt`, `jge`), held
    /// inline: go to `target` if `A - lo <= span` (wrapping), else `then`.
    /// The same test is `chains.exits[from]`, followed by the chain's
    /// sentinel, so that [`link_chains`] can make the op an
    /// [`Step::RangeChain`].
    Range {
        from: u16,
        lo: u32,
        span: u32,
        target: u16,
        then: u16,
    },
    /// Seccomp `ld [k]` fused with the inline single range test after it.
    LdRange {
        k: u8,
        from: u16,
        lo: u32,
        span: u32,
        target: u16,
        then: u16,
    },
    /// A [`Step::LdRange`] whose `then` is a [`Step::LdTree`], both in one
    /// op (the arch check before libseccomp's and Chromium's syscall
    /// trees, [`super::tree::fuse_entries`]): `A = [k]`, to `target` if
    /// `A - lo <= span`, else `A = [tree_k]` and the tree's search.
    LdRangeTree {
        k: u8,
        lo: u32,
        span: u32,
        target: u16,
        tree_k: u8,
        tree: u16,
    },
    RetK(u32),
    RetA,
}

/// Absolute target `pc + 1 + off`, or [`DEAD`] if it could not be a pc
/// (impossible for validated programs).
fn target(pc: usize, off: u64) -> u16 {
    u16::try_from(pc as u64 + 1 + off).unwrap_or(DEAD)
}

/// The compare fields of a conditional jump on `#k`.
fn cmp_k(insn: Option<&Insn>) -> Option<(JmpOp, u32, u8, u8)> {
    match insn?.op()? {
        View::Jmp { op, src: Src::K, k, jt, jf } => Some((op, k, jt, jf)),
        _ => None,
    }
}

/// Pre-decodes validated instructions into ops and compare chains.
///
/// A compare chain is a maximal run of consecutive `j* #k` instructions in
/// which each one either jumps out of the run or falls through to the next:
/// each outcome that leaves becomes an [`ExitTest`]; an outcome that falls
/// through adds nothing; a jump whose two outcomes both leave ends the chain
/// (its false target is the chain's `then`). Every pc in a chain gets an
/// [`Step::Chain`] starting at its own first test, so jumps into the middle of
/// a chain work. Seccomp loads before a chain are fused with it, and loads
/// that start a long rule ladder get the ladder's chain ([`build_ladders`]).
///
/// Jump targets that are `ja` instructions are replaced by where the `ja`
/// chain ends (a `ja` changes nothing but the pc).
///
/// Relies on what `validate()` checked: every code has a typed view, jumps
/// land inside the program, `M[k]` has `k < 16`, `div/mod #k` has `k != 0`,
/// shifts by `#k` have `k < 32`. An instruction that breaks this (impossible
/// through the public API) becomes `ret #0`.
pub(super) fn compile(code: &Classic<'_>) -> (Box<[Step]>, Chains) {
    let insns = code.insns;
    let via = |pc: u16| code.threaded.get(usize::from(pc)).copied().unwrap_or(DEAD);
    let mut ops = Vec::with_capacity(insns.len());
    let mut built = Builder::default();
    let mut pc = 0;
    while let Some(insn) = insns.get(pc) {
        if cmp_k(Some(insn)).is_none() {
            let op = insn.op().map_or(Step::RetK(0), |view| decode(pc, view));
            ops.push(match op {
                Step::Ja(t) => Step::Ja(via(t)),
                Step::JmpX { op, jt, jf } => Step::JmpX { op, jt: via(jt), jf: via(jf) },
                other => other,
            });
            pc += 1;
            continue;
        }
        let start = pc;
        let mut firsts = Vec::new();
        let then = loop {
            let Some((op, k, jt, jf)) = cmp_k(insns.get(pc)) else { break via(u16::try_from(pc).unwrap_or(DEAD)) };
            firsts.push(built.len());
            let (t, f) = (via(target(pc, u64::from(jt))), via(target(pc, u64::from(jf))));
            pc += 1;
            match (jt == 0, jf == 0) {
                (true, true) => {}
                (false, true) => {
                    built.push(exit_test(op, k, true), usize::from(t), 0);
                }
                (true, false) => built.push(exit_test(op, k, false), usize::from(f), 0),
                (false, false) => {
                    built.push(exit_test(op, k, true), usize::from(t), 0);
                    break f;
                }
            }
        };
        let to = u16::try_from(built.len()).unwrap_or(0);
        // The sentinel that ends the short chains among the entries.
        built.push(Some(ExitTest::ALWAYS), usize::from(then), 0);
        for (offset, first) in firsts.into_iter().enumerate() {
            let from = u16::try_from(first).unwrap_or(to);
            debug_assert_eq!(ops.len(), start + offset);
            ops.push(match usize::from(to - from) {
                0 => Step::Ja(then),
                1 => match built.tests().get(usize::from(from)) {
                    Some(&chain::Pending { test: ExitTest { mask: u32::MAX, lo, span }, target, .. }) => {
                        Step::Range { from, lo, span, target: pc16(target), then }
                    }
                    _ => Step::Test { index: from, then },
                },
                n if n < WINDOW => {
                    let tests = built.tests().get(usize::from(from)..usize::from(to)).unwrap_or_default();
                    if tests.iter().all(|exit| exit.test.mask == u32::MAX) {
                        Step::RangeChain { from }
                    } else {
                        Step::Chain { from }
                    }
                }
                _ => Step::LongChain { from, to },
            });
        }
    }
    fuse_loads(&mut ops);
    build_ladders(code, &mut ops, &mut built);
    // Whole windows for short chains near the end (see `Scans::short`).
    let chains = built.finish(WINDOW - 1, |p| Exit { test: p.test, target: pc16(p.target), link: LEAVE });
    (ops.into_boxed_slice(), chains)
}

/// Makes every jump to a `ret #k` end the run without dispatching the
/// `ret`: its target becomes `ops.len() + i`, past the ops, where
/// `rets[i] == k`; the run loop returns `rets[pc - ops.len()]` when the pc
/// leaves the ops (see `Interp::exec`). Falling through into a `ret` still
/// runs its op. Returns `rets`.
///
/// `more` are other targets to route (the outcomes of the compare trees).
///
/// Targets stay below [`DEAD`]: at most 4096 ops and 4096 returns.
pub(super) fn route_returns<'t>(
    ops: &mut [Step],
    chains: &mut Chains,
    more: impl IntoIterator<Item = &'t mut u16>,
) -> Box<[u32]> {
    let mut rets = Vec::new();
    // For each pc, its routed target (itself unless it is a `ret #k`).
    let routed: Vec<u16> = (0..ops.len())
        .map(|pc| match ops.get(pc) {
            Some(&Step::RetK(k)) => {
                let slot = u16::try_from(ops.len() + rets.len()).unwrap_or(DEAD);
                rets.push(k);
                slot
            }
            _ => u16::try_from(pc).unwrap_or(DEAD),
        })
        .collect();
    let route = |t: &mut u16| {
        if let Some(&to) = routed.get(usize::from(*t)) {
            *t = to;
        }
    };
    for op in ops.iter_mut() {
        match op {
            Step::Ja(t) => route(t),
            Step::JmpX { jt, jf, .. } => {
                route(jt);
                route(jf);
            }
            Step::Test { then, .. } | Step::LdTest { then, .. } => route(then),
            Step::Range { target, then, .. } | Step::LdRange { target, then, .. } => {
                route(target);
                route(then);
            }
            _ => {}
        }
    }
    for exit in chains.exits.iter_mut() {
        route(&mut exit.target);
    }
    for target in more {
        route(target);
    }
    rets.into_boxed_slice()
}

/// Whether every exit of the chain from test `from` leaves to a pc where
/// `ends` holds, directly or through the chains it links to.
pub(super) fn chain_ends_in(chains: &Chains, from: usize, ends: impl Fn(usize) -> bool) -> bool {
    chains.every_exit(from, |leaving| usize::try_from(leaving.target).is_ok_and(&ends))
}

/// How many exits of the chain from test `from` (through its links) leave
/// to a pc where `ends` holds, and how many to another.
pub(super) fn chain_exits(chains: &Chains, from: usize, ends: impl Fn(usize) -> bool) -> (usize, usize) {
    let (ending, other) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    chains.every_exit(from, |leaving| {
        let counter = if usize::try_from(leaving.target).is_ok_and(&ends) { &ending } else { &other };
        counter.set(counter.get() + 1);
        true
    });
    (ending.get(), other.get())
}

/// Puts a first [`Step::LdRange`]'s `ret` on its hit side, testing the
/// complement range (as `tree::fuse_entries` does), where its hit goes on
/// to an op and its miss returns (OpenSSH's `jeq ARCH, next, kill`), so
/// that `Interp::seccomp_entry_two` tests for the rare side. The same
/// inputs reach the same pcs. Runs last, on the final ops.
pub(super) fn ret_on_hit(ops: &mut [Step]) {
    let n = ops.len();
    if let Some(op) = ops.first_mut() {
        if let Step::LdRange { k, from, lo, span, target, then } = *op {
            if usize::from(then) >= n && usize::from(target) < n && span != u32::MAX {
                let (lo, span) = (lo.wrapping_add(span).wrapping_add(1), !span - 1);
                *op = Step::LdRange { k, from, lo, span, target: then, then: target };
            }
        }
    }
}

/// Links range chains: an exit (of any chain) that goes to a pc whose op is
/// a range chain ([`Step::RangeChain`], [`Step::Range`], or one of them fused
/// with a seccomp `ld [k]`) continues the scan there instead: with `A`
/// unchanged, or after loading word `k`. The run loop follows such links
/// without dispatching the op (see `Interp::exec`), so a path down
/// libseccomp's binary tree (architecture check, x32 check, the tree's
/// leaf) is one op. A [`Step::Range`] (or [`Step::LdRange`]) with a linked exit
/// becomes the equivalent [`Step::RangeChain`] (or [`Step::LdRangeChain`]), its
/// inline targets being stale.
///
/// Runs after [`route_returns`] (whose routed targets, past the ops, are
/// never linked). Links only go forward (to the op at a jump target, which
/// is past the jump), so following them always ends.
pub(super) fn link_chains(ops: &mut [Step], chains: &mut Chains) {
    let continuation = |pc: u16| match ops.get(usize::from(pc)) {
        Some(&(Step::RangeChain { from } | Step::Range { from, .. })) => Some((SAME_A, from)),
        // k < 64 by seccomp_check_filter(), below SAME_A.
        Some(&(Step::LdRangeChain { k, from } | Step::LdRange { k, from, .. })) if k < SAME_A => Some((k, from)),
        _ => None,
    };
    let mut linked = vec![false; chains.exits.len()];
    for (exit, linked) in chains.exits.iter_mut().zip(linked.iter_mut()) {
        if let Some((link, from)) = continuation(exit.target) {
            *exit = Exit { target: from, link, ..*exit };
            *linked = true;
        }
    }
    let is_linked = |i: u16| {
        let i = usize::from(i);
        linked.get(i).copied().unwrap_or(false) || linked.get(i + 1).copied().unwrap_or(false)
    };
    for op in ops.iter_mut() {
        match *op {
            Step::Range { from, .. } if is_linked(from) => *op = Step::RangeChain { from },
            Step::LdRange { k, from, .. } if is_linked(from) => *op = Step::LdRangeChain { k, from },
            _ => {}
        }
    }
}

/// For each pc, where a jump to it may go instead ([`chain::known::thread`]):
/// past `ja`s, and past reloads of a known word and the compares they
/// settle (the classic interpreter counts no instructions, so the ones
/// jumped over are not kept).
pub(super) fn thread_jumps(insns: &[Insn]) -> Vec<u16> {
    // The facts and the threading ask only `compare` and `effect`, which
    // read the instructions, not `threaded`.
    let code = Classic { insns, threaded: &[] };
    chain::known::thread(&code, insns.len()).into_iter().map(|(pc, _)| pc16(pc)).collect()
}

/// The seccomp load offset of `insns[pc]`, if it is one (0x21 after
/// `seccomp_check_filter()`'s rewrite).
pub(super) fn seccomp_load(insns: &[Insn], pc: usize) -> Option<u32> {
    match insns.get(pc)?.op()? {
        View::LdxAbsSeccomp { k } => Some(k),
        _ => None,
    }
}

/// Turns libseccomp rule ladders into compare chains entered at their
/// loads: from a seccomp `ld [k]`, follow the conditional jumps on `#k`
/// along the side that reaches another jump, directly or through another
/// `ld [k]` of the same word (which reloads the value `A` already holds, so
/// it changes nothing); every other outcome is an exit test. In
/// `ld [16]; jeq #i, 0, 9; <arg checks>; ld [16]; jeq #j, 0, 9; ...` the
/// misses continue, so one block scan runs the whole ladder.
///
/// Only the loads become [`Step::LdLongChain`] entries (each at its own first
/// test, like [`Step::Chain`]), and only with at least [`LONG_CHAIN`] tests
/// left: a jump into the middle of a rule reaches the next reload with an
/// `A` the chain knows nothing about, so those pcs keep their own ops.
fn build_ladders(code: &Classic<'_>, ops: &mut [Step], built: &mut Builder) {
    let insns = code.insns;
    // Ladders from different words may share their jumps; bound the tests
    // kept (and so the work) linearly in the program. Past the budget,
    // loads simply keep their tree nodes.
    let budget = built.len() + 2 * insns.len();
    let mut covered = vec![false; insns.len()];
    for start in 0..insns.len() {
        if covered.get(start).copied().unwrap_or(true) {
            continue;
        }
        let Some(k) = seccomp_load(insns, start) else { continue };
        let Ok(k8) = u8::try_from(k) else { continue };
        if cmp_k(insns.get(start + 1)).is_none() {
            continue;
        }
        let mark = built.len();
        // Prefer going on along the false side, libseccomp's fall-through;
        // the reloads met are the entries. The walk marks them covered.
        let rules = Rules { word: Some(k8), rejoin_detours: false, stop_at_covered: false };
        let entries = chain::walk(code, built, &mut covered, start, start + 1, rules);
        // The tests before the walk's sentinel (which leaves to `then`).
        let to = built.len().saturating_sub(1);
        if to > budget {
            built.truncate(mark);
            return;
        }
        for entry in entries {
            if to - entry.first < LONG_CHAIN {
                continue;
            }
            let (Ok(from), Ok(to)) = (u16::try_from(entry.first), u16::try_from(to)) else { continue };
            if let Some(slot) = ops.get_mut(entry.pc) {
                *slot = Step::LdLongChain { k: k8, from, to };
            }
        }
        // A ladder too short to use leaves its tests unused; drop them.
        if to - mark < LONG_CHAIN {
            built.truncate(mark);
        }
    }
}

/// Fuses each seccomp `ld [k]` that is followed by a compare chain into
/// [`Step::LdChain`], [`Step::LdRangeChain`], [`Step::LdLongChain`], [`Step::LdTest`]
/// or [`Step::LdRange`], and one followed by `and #mask` and a short chain
/// into [`Step::LdAndChain`]. The ops after the load stay for jumps that
/// land on them.
fn fuse_loads(ops: &mut [Step]) {
    for i in 1..ops.len() {
        let (Some(&Step::LdSeccomp(k)), Some(&next)) = (ops.get(i - 1), ops.get(i)) else { continue };
        // k < 64 by seccomp_check_filter().
        let Ok(k) = u8::try_from(k) else { continue };
        let fused = match (next, ops.get(i + 1)) {
            // A single test is tested alone; every short chain's tests
            // run on to its sentinel, so one scan from the first test
            // serves the others.
            (Step::AndK(mask), Some(&(Step::Test { index, then } | Step::Range { from: index, then, .. }))) => {
                Step::LdAndTest { k, mask, index, then }
            }
            (Step::AndK(mask), Some(&(Step::Chain { from } | Step::RangeChain { from }))) => {
                Step::LdAndChain { k, mask, from }
            }
            (next, _) => match next {
                Step::Chain { from } => Step::LdChain { k, from },
                Step::RangeChain { from } => Step::LdRangeChain { k, from },
                Step::LongChain { from, to } => Step::LdLongChain { k, from, to },
                Step::Test { index, then } => Step::LdTest { k, index, then },
                Step::Range { from, lo, span, target, then } => Step::LdRange { k, from, lo, span, target, then },
                _ => continue,
            },
        };
        if let Some(slot) = ops.get_mut(i - 1) {
            *slot = fused;
        }
    }
}

fn mem_index(k: u32) -> u8 {
    (k & 15) as u8
}

fn size_bytes(size: Size) -> u8 {
    size.bytes() as u8
}

fn decode(pc: usize, view: View) -> Step {
    match view {
        View::LdImm { k } => Step::LdImm(k),
        View::LdxImm { k } => Step::LdxImm(k),
        View::LdMem { k } => Step::LdMem(mem_index(k)),
        View::LdxMem { k } => Step::LdxMem(mem_index(k)),
        View::St { k } => Step::St(mem_index(k)),
        View::Stx { k } => Step::Stx(mem_index(k)),
        View::LdAbs { size, k } => {
            if is_ancillary(k) {
                Ancillary::from_offset(k - SKF_AD_OFF).map_or(Step::RetK(0), Step::Anc)
            } else {
                Step::LdAbs { size: size_bytes(size), k }
            }
        }
        View::LdInd { size, k } => Step::LdInd { size: size_bytes(size), k },
        View::LdLen => Step::LdLen,
        View::LdxLen => Step::LdxLen,
        View::LdxMsh { k } => Step::LdxMsh(k),
        View::LdxAbsSeccomp { k } => Step::LdSeccomp(k),
        View::Alu { op, src, k } => alu(op, src, k),
        View::Neg => Step::Neg,
        View::Ja { k } => Step::Ja(target(pc, u64::from(k))),
        View::Jmp { op, src: _, k: _, jt, jf } => {
            Step::JmpX { op, jt: target(pc, u64::from(jt)), jf: target(pc, u64::from(jf)) }
        }
        View::RetK { k } => Step::RetK(k),
        View::RetA => Step::RetA,
        View::Tax => Step::Tax,
        View::Txa => Step::Txa,
    }
}

fn alu(op: AluOp, src: Src, k: u32) -> Step {
    // The op's `k` form or its `x` form, as `src` says.
    let form = |with_k: Step, with_x: Step| match src {
        Src::K => with_k,
        Src::X => with_x,
    };
    // A division or modulo by the constant 0 returns 0, as one by X = 0 does
    // (never in a validated program: `bpf_check_classic()` refuses it).
    let nonzero = |op: fn(NonZeroU32) -> Step| NonZeroU32::new(k).map_or(Step::RetK(0), op);
    match op {
        AluOp::Add => form(Step::AddK(k), Step::AddX),
        AluOp::Sub => form(Step::SubK(k), Step::SubX),
        AluOp::Mul => form(Step::MulK(k), Step::MulX),
        AluOp::Div => form(nonzero(Step::DivK), Step::DivX),
        AluOp::Or => form(Step::OrK(k), Step::OrX),
        AluOp::And => form(Step::AndK(k), Step::AndX),
        AluOp::Lsh => form(Step::LshK(k), Step::LshX),
        AluOp::Rsh => form(Step::RshK(k), Step::RshX),
        AluOp::Mod => form(nonzero(Step::ModK), Step::ModX),
        AluOp::Xor => form(Step::XorK(k), Step::XorX),
    }
}

// `Step` stays 16 bytes (see its docs), checked when the crate compiles.
const _: () = assert!(std::mem::size_of::<Step>() == 16);

#[cfg(test)]
mod tests;
