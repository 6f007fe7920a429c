//! Compare-chain superinstructions, shared by the classic interpreter
//! (`cbpf::interp`) and the seccomp executor of the eBPF crate
//! (`ebpf::exec::seccomp`).
//!
//! A compare chain is a stretch of conditional jumps on one value `x` (A in
//! classic BPF, r0 in converted eBPF) against constants, each of which
//! either leaves the stretch or goes on to the next. Every outcome that
//! leaves is an [`ExitTest`] `(x & mask) - lo <= span` (wrapping `u32`
//! arithmetic), a uniform form for every condition, so that one tight scan
//! runs a chain of mixed comparisons without per-test dispatch; the first
//! test hit in program order decides where the chain is left.
//!
//! What is shared, and what is not. The two interpreters differ in what
//! surrounds a chain: classic programs route jumps to `ret #k` to slots
//! past the ops, the eBPF executor keeps exact executed-instruction counts
//! and ends runs at `w0 = K; exit`, and each has its own op enum and its
//! own `loop { match }` tuned for its dispatch. So this crate is not an
//! engine: it holds the pieces both build their chains from, as
//! sub-components each interpreter composes in its own way:
//!
//! - [`Cond`] and [`ExitTest`]: conditions and the exit test of each
//!   outcome ([`ExitTest::of`], [`ExitTest::of_wide`]);
//! - [`Table`]: the tests of all chains of a program, as struct-of-arrays
//!   for the blocked scan (8 tests per block, evaluated all at once: they
//!   have no side effects) plus an array of per-test records of the
//!   interpreter's own type ([`Record`]) for the scalar scans and the exits;
//! - [`Builder`]: the tests as they are found, with where each leaves to,
//!   finished into a [`Table`] with the padding that makes every scan
//!   window whole;
//! - [`walk`]: the chain walk over a small view of a program ([`Code`]:
//!   the compare at a pc, where an outcome resolves to, whether a pc
//!   reloads the word being compared, whether a pc returns a constant),
//!   following compares along the side that reaches another one, through
//!   reloads of the same word (libseccomp's rule ladders);
//! - [`Link`]: what an exit does besides going to a pc: go on scanning
//!   another (range) chain, with `x` unchanged or after a reload;
//! - [`EqSets`]: long chains of `jeq #k` exits (allow-lists) as
//!   lookup tables indexed by `x`;
//! - [`ladder`]: Chromium's 32-bit argument ladders (the same check of an
//!   argument's two words before each of several `==`) as one lookup;
//! - [`RangeTrees`]: regions that only compare `x` with constants (binary
//!   trees over the syscall number) as sorted breakpoint tables, one
//!   binary search for the whole walk;
//! - [`known`]: the context words a run is known to hold at each pc, and
//!   the jumps past the reloads and compares they settle.
//!
//! Compiled tables print ([`Table`]'s `Display`), so that chain formation
//! can be pinned by tests.

use std::fmt;

mod eq_set;
pub mod known;
pub mod ladder;
mod range_tree;

pub use eq_set::EqSets;
pub use range_tree::{
    Leave, Policy, RangeTrees, DENSE_BYTES, DENSE_MIN_LEN, MAX_DENSE_ENTRIES, MAX_ENTRIES, MAX_NODES, MAX_REGION_WALK,
    MAX_WORK, MIN_BRANCHES, MIN_DEPTH, SEARCH_MARGIN,
};

/// A condition of a conditional jump on unsigned values: classic BPF has
/// `jeq`, `jgt`, `jge`, `jset`; eBPF adds the negations `jne`, `jle`,
/// `jlt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cond {
    /// `x == v`.
    Eq,
    /// `x != v`.
    Ne,
    /// `x > v`.
    Gt,
    /// `x >= v`.
    Ge,
    /// `x < v`.
    Lt,
    /// `x <= v`.
    Le,
    /// `x & v != 0`.
    Set,
}

impl Cond {
    /// Every condition.
    pub const ALL: [Cond; 7] = [Cond::Eq, Cond::Ne, Cond::Gt, Cond::Ge, Cond::Lt, Cond::Le, Cond::Set];

    /// The condition on 64-bit unsigned values (32-bit values widen
    /// losslessly).
    #[inline(always)]
    pub fn eval(self, x: u64, v: u64) -> bool {
        match self {
            Cond::Eq => x == v,
            Cond::Ne => x != v,
            Cond::Gt => x > v,
            Cond::Ge => x >= v,
            Cond::Lt => x < v,
            Cond::Le => x <= v,
            Cond::Set => x & v != 0,
        }
    }
}

/// An exit test of a compare chain: the chain is left iff
/// `(x & mask) - lo <= span` (wrapping `u32` arithmetic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExitTest {
    /// Bits of `x` the test looks at (all of them for a range test).
    pub mask: u32,
    /// Low end of the range of `x & mask` that hits.
    pub lo: u32,
    /// Width of that range less one: `lo ..= lo + span`, wrapping.
    pub span: u32,
}

impl ExitTest {
    /// The test every `x` hits: ends each chain, so that a scan needs no
    /// length. A range test too (`x - 0 <= MAX`), so that scans without
    /// the mask stop at it.
    pub const ALWAYS: ExitTest = ExitTest { mask: 0, lo: 0, span: u32::MAX };

    /// Whether `x` hits the test.
    #[inline(always)]
    pub fn hits(self, x: u32) -> bool {
        (x & self.mask).wrapping_sub(self.lo) <= self.span
    }

    /// [`ExitTest::hits`] without the `&`: the same answer for a range
    /// test (full mask, or always hit: see [`ExitTest::range`]).
    #[inline(always)]
    pub fn hits_range(self, x: u32) -> bool {
        x.wrapping_sub(self.lo) <= self.span
    }

    /// The test as a range `x - lo <= span`, without the mask: `Some` for a
    /// full mask (`==`, `!=`, `<`, `<=`, `>`, `>=`) and for a test every
    /// value hits; `None` for a `jset` test.
    pub fn range(self) -> Option<(u32, u32)> {
        match self.mask {
            u32::MAX => Some((self.lo, self.span)),
            // `x & 0` is 0 for every x: the test hits all or nothing.
            0 if self.hits(0) => Some((0, u32::MAX)),
            _ => None,
        }
    }

    /// The exit test equivalent to "`x <cond> k` is `outcome`" on `u32`
    /// values, or `None` when that never happens (`x > 0xffffffff`,
    /// `!(x >= 0)`, `x & 0 != 0`, and their negations).
    pub fn of(cond: Cond, k: u32, outcome: bool) -> Option<ExitTest> {
        const ALL: u32 = u32::MAX;
        let t = |mask, lo, span| Some(ExitTest { mask, lo, span });
        // `!=`, `<`, `<=` are the negations of `==`, `>=`, `>`.
        let (cond, outcome) = match cond {
            Cond::Ne => (Cond::Eq, !outcome),
            Cond::Lt => (Cond::Ge, !outcome),
            Cond::Le => (Cond::Gt, !outcome),
            c => (c, outcome),
        };
        match (cond, outcome) {
            // x == k: the one value k; x != k: the ALL values from k + 1 round to k - 1.
            (Cond::Eq, true) => t(ALL, k, 0),
            (Cond::Eq, false) => t(ALL, k.wrapping_add(1), ALL - 1),
            // x > k: k + 1 ..= ALL; x <= k: 0 ..= k.
            (Cond::Gt, true) => (k != ALL).then(|| ExitTest { mask: ALL, lo: k + 1, span: ALL - k - 1 }),
            (Cond::Gt, false) => t(ALL, 0, k),
            // x >= k: k ..= ALL; x < k: 0 ..= k - 1.
            (Cond::Ge, true) => t(ALL, k, ALL - k),
            (Cond::Ge, false) => (k != 0).then(|| ExitTest { mask: ALL, lo: 0, span: k - 1 }),
            // x & k != 0: (x & k) in 1 ..= ALL; x & k == 0: (x & k) == 0.
            (_, true) => (k != 0).then_some(ExitTest { mask: k, lo: 1, span: ALL - 1 }),
            (_, false) => t(k, 0, 0),
        }
    }

    /// [`ExitTest::of`] for a 64-bit compare of an `x` known to be below
    /// 2^32 with any `v` (eBPF compares r0, which in converted seccomp code
    /// never exceeds 32 bits, with a sign-extended `imm`).
    pub fn of_wide(cond: Cond, v: u64, outcome: bool) -> Option<ExitTest> {
        match u32::try_from(v) {
            Ok(k) => ExitTest::of(cond, k, outcome),
            // v >= 2^32 > x: only the low half matters to `&`; every other
            // compare has a fixed answer.
            Err(_) => match cond {
                Cond::Set => ExitTest::of(Cond::Set, v as u32, outcome),
                Cond::Eq | Cond::Gt | Cond::Ge => (!outcome).then_some(ExitTest::ALWAYS),
                Cond::Ne | Cond::Lt | Cond::Le => outcome.then_some(ExitTest::ALWAYS),
            },
        }
    }
}

impl fmt::Display for ExitTest {
    /// The condition on `x` the test stands for, in the plainest form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ExitTest { mask, lo, span } = *self;
        match (mask, lo, span) {
            _ if mask == 0 && self.hits(0) => write!(f, "always"),
            (u32::MAX, _, 0) => write!(f, "== {lo:#x}"),
            (u32::MAX, _, s) if s == u32::MAX - 1 => write!(f, "!= {:#x}", lo.wrapping_sub(1)),
            (u32::MAX, 0, _) => write!(f, "<= {span:#x}"),
            (u32::MAX, _, _) if lo.checked_add(span) == Some(u32::MAX) => write!(f, ">= {lo:#x}"),
            (u32::MAX, _, _) if lo.checked_add(span).is_some() => {
                write!(f, "in {lo:#x}..={:#x}", lo.wrapping_add(span))
            }
            (_, 1, s) if s == u32::MAX - 1 => write!(f, "& {mask:#x} != 0"),
            (_, 0, 0) => write!(f, "& {mask:#x} == 0"),
            _ => write!(f, "(x & {mask:#x}) - {lo:#x} <= {span:#x}"),
        }
    }
}

/// What an exit does besides leaving to its target, for printing and
/// building (each interpreter encodes it in its own record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Link {
    /// Leave the chain: execution goes on at the target pc.
    Leave,
    /// Leave the chain and end the run with this value (the target is a
    /// `ret #k` / `w0 = K; exit`).
    Return(u64),
    /// Go on scanning the chain at the target test, `x` unchanged.
    Same,
    /// Go on scanning the chain at the target test after loading `x` from
    /// context word `k` (a word index: the byte offset divided by 4).
    Reload(u8),
}

/// Where an exit goes, as a [`Record`] tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Leaving {
    /// A pc for [`Link::Leave`] and [`Link::Return`], a test index for the
    /// others.
    pub target: u64,
    /// What happens there.
    pub link: Link,
}

/// An interpreter's per-test record in a [`Table`]: the test (for the
/// scalar scans) and its exit, in whatever layout the interpreter's loop
/// reads fastest.
pub trait Record {
    /// The exit test.
    fn test(&self) -> ExitTest;
    /// Where the exit goes.
    fn leaving(&self) -> Leaving;
}

/// The top bit of a `u32`, flipped in [`Table`]'s `lo` and `span` arrays.
const TOP: u32 = 1 << 31;

/// Tests per block of the blocked scans ([`Table::blocks_without_hit`],
/// [`Table::first_hit_from`]): one branch per block.
pub const BLOCK: usize = 8;

/// The exit tests of all compare chains of a program, as parallel arrays
/// (struct of arrays, so that a block of tests is a few vector
/// operations), with a record per test ([`Record`]) for the scalar scans
/// and the exits.
///
/// `lo` and `span` are stored with their top bit flipped, which turns the
/// unsigned `d <= span` into the signed compare vector units have:
/// `(x & mask) - (lo ^ 2^31)` is `d ^ 2^31`, and flipping the top bit of
/// both sides maps unsigned order onto signed order.
///
/// Every chain ends with [`ExitTest::ALWAYS`], and padding of the same
/// test follows the last chain (see [`Builder::finish`]), so that windows
/// and blocks read at any chain position stay inside the arrays and every
/// scan ends at a hit.
#[derive(Debug, Clone)]
pub struct Table<E> {
    mask: Box<[u32]>,
    lo_flipped: Box<[u32]>,
    span_flipped: Box<[i32]>,
    /// One record per test, in the order of the arrays.
    pub exits: Box<[E]>,
    /// Tests before the padding.
    built: usize,
}

impl<E> Default for Table<E> {
    fn default() -> Self {
        Table {
            mask: Box::new([]),
            lo_flipped: Box::new([]),
            span_flipped: Box::new([]),
            exits: Box::new([]),
            built: 0,
        }
    }
}

impl<E> Table<E> {
    /// Tests of the chains, without the padding.
    pub fn built(&self) -> usize {
        self.built
    }

    /// The `N` records from `from`; `None` past the end.
    ///
    /// `from` is a chain position (below the table's length), so
    /// `from + N` does not overflow and the range is one comparison with
    /// the length.
    #[inline(always)]
    pub fn window<const N: usize>(&self, from: usize) -> Option<&[E; N]> {
        self.exits.get(from..from + N)?.try_into().ok()
    }

    /// The three arrays' tests `at..at + N` (flipped `lo` and `span`);
    /// `None` past the arrays.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub fn block<const N: usize>(&self, at: usize) -> Option<(&[u32; N], &[u32; N], &[i32; N])> {
        let end = at.checked_add(N)?;
        let m = self.mask.get(at..end)?.try_into().ok()?;
        let l = self.lo_flipped.get(at..end)?.try_into().ok()?;
        let s = self.span_flipped.get(at..end)?.try_into().ok()?;
        Some((m, l, s))
    }

    /// Whether `x` hits any of tests `at..at + BLOCK`; `None` past the
    /// arrays.
    #[inline(always)]
    pub fn any_hit(&self, x: u32, at: usize) -> Option<bool> {
        let (m, l, s) = self.block::<BLOCK>(at)?;
        Some(any_hit(x, m, l, s))
    }

    /// Byte `j` (little-endian) 0xff iff `x` hits test `at + j` (`j < N`,
    /// `N <= 8`), else 0. (Bytes, not bits: this form compiles to a few
    /// vector operations.)
    #[inline(always)]
    pub fn hits<const N: usize>(&self, x: u32, at: usize) -> Option<u64> {
        let (m, l, s) = self.block::<N>(at)?;
        let mut hit = [0u8; 8];
        for (j, h) in hit.iter_mut().enumerate().take(N) {
            // j < N, the length of the three arrays.
            #[allow(clippy::indexing_slicing)]
            {
                *h = 0u8.wrapping_sub(u8::from(hits_flipped(x, m[j], l[j], s[j])));
            }
        }
        Some(u64::from_le_bytes(hit))
    }

    /// How many tests from `from` on, a whole number of blocks before `to`,
    /// `x` is known to pass (hit none of): the scan goes on from there with
    /// the rest of the chain. Blocks are checked all at once, one branch
    /// per block; `0` when `from..to` is not inside the arrays.
    #[inline(always)]
    pub fn blocks_without_hit(&self, x: u32, from: usize, to: usize) -> usize {
        let (Some(mask), Some(lo), Some(span)) =
            (self.mask.get(from..to), self.lo_flipped.get(from..to), self.span_flipped.get(from..to))
        else {
            return 0;
        };
        let blocks = mask.chunks_exact(BLOCK).zip(lo.chunks_exact(BLOCK)).zip(span.chunks_exact(BLOCK));
        let mut passed = 0;
        for ((m, l), s) in blocks {
            // Chunks of exactly BLOCK: the conversions always succeed.
            let (Ok(m), Ok(l), Ok(s)) =
                (<&[u32; BLOCK]>::try_from(m), <&[u32; BLOCK]>::try_from(l), <&[i32; BLOCK]>::try_from(s))
            else {
                break;
            };
            if any_hit(x, m, l, s) {
                break;
            }
            passed += BLOCK;
        }
        passed
    }

    /// `hit` of the record of the first test from `at` on that `x` hits:
    /// blocks of [`BLOCK`] tests, each checked at once, then the first hit
    /// of the block with one; `miss()` past the arrays (never from a chain
    /// position: every chain ends with a test that always hits, and
    /// padding follows). Continuations, as in [`Table::scan_window`].
    #[inline(always)]
    pub fn first_hit_from<'a, T>(
        &'a self,
        x: u32,
        mut at: usize,
        hit: impl FnOnce(&'a E) -> T,
        miss: impl FnOnce() -> T,
    ) -> T {
        loop {
            match self.any_hit(x, at) {
                Some(true) => break,
                Some(false) => at += BLOCK,
                None => return miss(),
            }
        }
        let Some(hits) = self.hits::<BLOCK>(x, at) else { return miss() };
        match self.exits.get(at + (hits.trailing_zeros() / 8) as usize) {
            Some(e) => hit(e),
            None => miss(),
        }
    }
}

impl<E: Record> Table<E> {
    /// Whether `ends` holds of every exit that leaves the chain from test
    /// `from` ([`Link::Leave`], [`Link::Return`]), following the exits that
    /// go on in other chains ([`Link::Same`], [`Link::Reload`]); each chain
    /// ends at its test that always hits. For an interpreter deciding, once,
    /// whether a run that starts with this chain ends in it (every exit a
    /// `ret`). Each chain is looked at once.
    pub fn every_exit(&self, from: usize, ends: impl Fn(&Leaving) -> bool) -> bool {
        let mut seen = vec![false; self.exits.len()];
        let mut pending = vec![from];
        while let Some(at) = pending.pop() {
            match seen.get_mut(at) {
                Some(s) if !*s => *s = true,
                _ => continue,
            }
            for e in self.exits.get(at..).unwrap_or_default() {
                let leaving = e.leaving();
                match leaving.link {
                    Link::Same | Link::Reload(_) => pending.push(usize::try_from(leaving.target).unwrap_or(usize::MAX)),
                    Link::Leave | Link::Return(_) if !ends(&leaving) => return false,
                    Link::Leave | Link::Return(_) => {}
                }
                if e.test().span == u32::MAX {
                    break;
                }
            }
        }
        true
    }

    /// `hit` of the record of the first of the `N` tests from `from` that
    /// `hits` (either [`ExitTest::hits`] or, for windows of range tests,
    /// [`ExitTest::hits_range`]), else `miss()` (past the end, or no hit):
    /// one bounds check and an unrolled scan of the records, no length.
    /// (Continuations, not an `Option`: the callers' paths go straight on
    /// from the hit or the miss, with no test of a returned value:
    /// measured, two instructions per scan.)
    #[inline(always)]
    pub fn scan_window<'a, const N: usize, T>(
        &'a self,
        from: usize,
        hits: impl Fn(ExitTest) -> bool,
        hit: impl FnOnce(&'a E) -> T,
        miss: impl FnOnce() -> T,
    ) -> T {
        if let Some(window) = self.window::<N>(from) {
            for e in window {
                if hits(e.test()) {
                    return hit(e);
                }
            }
        }
        miss()
    }

    /// Record `i` if `x` hits its test.
    #[inline(always)]
    pub fn single(&self, x: u32, i: usize) -> Option<&E> {
        let e = self.exits.get(i)?;
        if e.test().hits(x) {
            Some(e)
        } else {
            None
        }
    }
}

/// Whether `x` hits a test stored flipped (see [`Table`]).
#[inline(always)]
fn hits_flipped(x: u32, mask: u32, lo_flipped: u32, span_flipped: i32) -> bool {
    ((x & mask).wrapping_sub(lo_flipped) as i32) <= span_flipped
}

/// Whether `x` hits any test of a block.
#[inline(always)]
fn any_hit(x: u32, m: &[u32; BLOCK], l: &[u32; BLOCK], s: &[i32; BLOCK]) -> bool {
    let mut hit = false;
    for j in 0..BLOCK {
        // j < BLOCK, the length of the three arrays.
        #[allow(clippy::indexing_slicing)]
        {
            hit |= hits_flipped(x, m[j], l[j], s[j]);
        }
    }
    hit
}

impl fmt::Display for Leaving {
    /// `pc N`, `pc N (ret K)`, `test N`, `test N after reload of word K`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = self.target;
        match self.link {
            Link::Leave => write!(f, "pc {target}"),
            Link::Return(k) => write!(f, "pc {target} (ret {k:#x})"),
            Link::Same => write!(f, "test {target}"),
            Link::Reload(k) => write!(f, "test {target} after reload of word {k}"),
        }
    }
}

impl<E: Record> Table<E> {
    /// One line per test of the chains (padding left out):
    /// `index: test -> where`, a chain's end marked by its `always` test;
    /// `name` says where an exit goes (an interpreter may know more than
    /// its record, e.g. which pcs stand for returns).
    pub fn listing(&self, name: impl Fn(&Leaving) -> String) -> String {
        let mut out = String::new();
        for (i, e) in self.exits.iter().take(self.built).enumerate() {
            let line = format!("{i:4}: {:<24} -> {}", e.test().to_string(), name(&e.leaving()));
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

impl<E: Record> fmt::Display for Table<E> {
    /// [`Table::listing`] with each exit's own [`Leaving`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.listing(Leaving::to_string))
    }
}

/// A test as chain building finds it, with where it leaves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// The exit test.
    pub test: ExitTest,
    /// The pc the exit leaves to.
    pub target: usize,
    /// Instructions jumped over from the start of the chain's walk to
    /// `target` (for interpreters that count executed instructions).
    pub skip: u32,
    /// Whether the test is a tree node's: its compare goes on to compares
    /// on both sides, and the walk left on the taken one.
    pub tree: bool,
}

/// The tests of a program's chains as they are found; [`Builder::finish`]
/// makes the [`Table`].
#[derive(Debug, Clone, Default)]
pub struct Builder {
    tests: Vec<Pending>,
}

impl Builder {
    /// Tests so far.
    pub fn len(&self) -> usize {
        self.tests.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tests.is_empty()
    }

    /// The tests so far.
    pub fn tests(&self) -> &[Pending] {
        &self.tests
    }

    /// Appends `test` leaving to `target` (nothing for `None`, a test that
    /// never hits).
    pub fn push(&mut self, test: Option<ExitTest>, target: usize, skip: u32) {
        if let Some(test) = test {
            self.tests.push(Pending { test, target, skip, tree: false });
        }
    }

    /// Drops the tests from `len` on.
    pub fn truncate(&mut self, len: usize) {
        self.tests.truncate(len);
    }

    /// The table: the tests, then `padding` [`ExitTest::ALWAYS`] tests
    /// leaving to `usize::MAX` (so that every window of `padding + 1`
    /// tests from a chain position is whole), each record made by
    /// `record`.
    pub fn finish<E>(mut self, padding: usize, mut record: impl FnMut(&Pending) -> E) -> Table<E> {
        let built = self.tests.len();
        let pad = Pending { test: ExitTest::ALWAYS, target: usize::MAX, skip: 0, tree: false };
        self.tests.extend(std::iter::repeat_n(pad, padding));
        Table {
            mask: self.tests.iter().map(|p| p.test.mask).collect(),
            lo_flipped: self.tests.iter().map(|p| p.test.lo ^ TOP).collect(),
            span_flipped: self.tests.iter().map(|p| (p.test.span ^ TOP) as i32).collect(),
            exits: self.tests.iter().map(&mut record).collect(),
            built,
        }
    }
}

/// A compare of the chain's value with a constant, as [`Code::compare`]
/// reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compare {
    /// The condition.
    pub cond: Cond,
    /// The constant (a classic `k`, or a sign-extended eBPF `imm`).
    pub value: u64,
    /// The pc of the jump itself (a compare may start with the load of its
    /// constant into a register).
    pub jump_pc: usize,
    /// Where the true outcome goes (unresolved).
    pub taken: usize,
    /// Where the false outcome goes (unresolved).
    pub fall: usize,
}

/// What chain building needs to know of a program; both instruction sets
/// implement it over their decoded instructions.
pub trait Code {
    /// The compare of the chain's value with a constant that starts at
    /// `pc`, if one does.
    fn compare(&self, pc: usize) -> Option<Compare>;
    /// Where execution goes on from `pc` (past unconditional jumps), with
    /// the instructions those jump over.
    fn resolve(&self, pc: usize) -> (usize, u32);
    /// Whether `pc` loads context word `word` into the chain's value (a
    /// reload when the value already holds it: it changes nothing).
    fn reloads(&self, pc: usize, word: u8) -> bool;

    /// The context word `pc` loads into the chain's value, if it loads
    /// one: by default asked of [`Code::reloads`] word by word; each
    /// instruction set answers it directly.
    fn loaded_word(&self, pc: usize) -> Option<u8> {
        (0..=u8::MAX).find(|&w| self.reloads(pc, w))
    }

    /// The compare execution reaches from `pc` with the value unchanged:
    /// at `pc` itself, or (when the value is known to hold context word
    /// `word`) right after a reload of that word at `pc`.
    fn next_compare(&self, pc: usize, word: Option<u8>) -> Option<usize> {
        if self.compare(pc).is_some() {
            return Some(pc);
        }
        let word = word?;
        (self.reloads(pc, word) && self.compare(pc + 1).is_some()).then_some(pc + 1)
    }

    /// Whether the compare at `pc` goes on to `join` on at least one side:
    /// a detour that rejoins (the eBPF converter's `jge #k, jt, jf` pairs).
    fn rejoins(&self, pc: usize, join: usize) -> bool {
        self.compare(pc).is_some_and(|c| self.resolve(c.taken).0 == join || self.resolve(c.fall).0 == join)
    }
}

/// How [`walk`] forms a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rules {
    /// The context word the value is known to hold (a ladder on that
    /// word: reloads of it are walked through), or `None`.
    pub word: Option<u8>,
    /// Go on along the taken side where the false side is a detour that
    /// rejoins it.
    pub rejoin_detours: bool,
    /// End the chain at a pc another walk already covered (leaving to it).
    pub stop_at_covered: bool,
}

/// A pc where the rest of a walked chain is what execution does from
/// there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The pc.
    pub pc: usize,
    /// The chain's test at the entry (an index into the [`Builder`]).
    pub first: usize,
    /// Instructions jumped over from the walk's start to `pc`.
    pub skip: u32,
    /// Whether the entry is a tree node (its compare goes on to compares
    /// on both sides).
    pub tree: bool,
}

/// Builds the chain that starts at `entry` with the compare at `first`:
/// follows compares along the side that reaches another compare
/// ([`Code::next_compare`]; the false side where both do, unless
/// `rules.rejoin_detours` and it is a detour), each other outcome an exit
/// test, until a compare whose sides both leave (its false side is the
/// chain's end: an [`ExitTest::ALWAYS`] leaving there) or, with
/// `rules.stop_at_covered`, a pc another walk covered (the chain leaves to
/// it). Marks the pcs it goes through in `covered`.
///
/// Returns its entries: every compare for `rules.word == None`, else
/// `entry` and every reload.
pub fn walk(
    code: &impl Code,
    built: &mut Builder,
    covered: &mut [bool],
    entry: usize,
    first: usize,
    rules: Rules,
) -> Vec<Entry> {
    let mark = |covered: &mut [bool], pc: usize| {
        if let Some(c) = covered.get_mut(pc) {
            *c = true;
        }
    };
    let mut entries = vec![Entry { pc: entry, first: built.len(), skip: 0, tree: false }];
    mark(covered, entry);
    mark(covered, first);
    let (mut at, mut skip) = (first, 0u32);
    while let Some(c) = code.compare(at) {
        // Instructions an outcome jumps over, from the walk's start.
        let land = |to: usize| {
            let (pc, through) = code.resolve(to);
            (pc, skip.wrapping_add(through).wrapping_add(to.wrapping_sub(c.jump_pc + 1) as u32))
        };
        let (taken, taken_skip) = land(c.taken);
        let (fall, fall_skip) = land(c.fall);
        let (on_taken, on_fall) = (code.next_compare(taken, rules.word), code.next_compare(fall, rules.word));
        let detour = rules.rejoin_detours && on_taken.is_some() && on_fall.is_some_and(|f| code.rejoins(f, taken));
        if let Some(e) = entries.last_mut().filter(|e| e.first == built.len()) {
            e.tree = on_taken.is_some() && on_fall.is_some() && !detour;
        }
        let (next, land, land_skip) = match (on_fall, on_taken) {
            (Some(f), _) if !detour => {
                let before = built.len();
                built.push(ExitTest::of_wide(c.cond, c.value, true), taken, taken_skip);
                if let Some(t) = built.tests.get_mut(before) {
                    t.tree = on_taken.is_some();
                }
                (f, fall, fall_skip)
            }
            (_, Some(t)) => {
                built.push(ExitTest::of_wide(c.cond, c.value, false), fall, fall_skip);
                (t, taken, taken_skip)
            }
            _ => {
                built.push(ExitTest::of_wide(c.cond, c.value, true), taken, taken_skip);
                built.push(Some(ExitTest::ALWAYS), fall, fall_skip);
                return entries;
            }
        };
        skip = land_skip;
        if rules.stop_at_covered
            && (covered.get(land).copied().unwrap_or(true) || covered.get(next).copied().unwrap_or(true))
        {
            built.push(Some(ExitTest::ALWAYS), land, skip);
            return entries;
        }
        mark(covered, land);
        mark(covered, next);
        if rules.word.is_none() || land != next {
            entries.push(Entry { pc: land, first: built.len(), skip, tree: false });
        }
        at = next;
    }
    // Only for a walk that starts off a compare: walks go on to compares.
    built.push(Some(ExitTest::ALWAYS), at, skip);
    entries
}

#[cfg(test)]
mod tests;
