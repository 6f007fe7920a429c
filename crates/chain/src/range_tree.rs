//! Compare trees as breakpoint tables, for both interpreters (each puts
//! its own op at a tree's root, or at the load before it).
//!
//! A compare tree is a region of a program that only compares the chain's
//! value `x` with constants (`==`, `>`, `>=` and their negations, and `&`
//! tests of a high mask, [`MAX_SET_BLOCKS`]),
//! each outcome going to another compare of the region or leaving it:
//! libseccomp's binary trees over the syscall number (`--opt 2`) and what
//! our `optimize` emits, including `ja` trampolines between nodes
//! ([`Code::resolve`]), shared nodes (a DAG), and reloads of the word the
//! instruction before the root loads (libseccomp's x32 check, then `ld
//! [0]` again and the tree: one region, whose table answers only for runs
//! that enter at that load, [`RangeTrees::needs_load`]). Entered at its root, the
//! region is left at a pc (its *outcome*) that depends on `x` alone, and
//! only through the comparisons `x <cond> v`: it is constant between
//! consecutive *cuts* `v` and `v + 1` of the region's constants (for each
//! `v` below 2^32; a wider constant compares the same with every `x`) and
//! the block starts of its `&` tests.
//! (Only regions that branch: chains keep their scans and lookup tables.)
//! So the region is a sorted table of the cuts, each with the outcome of
//! the interval it starts, found by walking the region on the interval's
//! first value; a run finds its interval with a binary search (branchless
//! over a power-of-two table: `log2(len)` steps, no mispredicted branch)
//! instead of interpreting each node. A table of [`DENSE_MIN_LEN`] entries
//! or more also gets a *direct* table for its small values (system call
//! numbers): the outcome of every `x` below a cut, indexed by `x`, one load
//! where the search makes `log2(len)` dependent ones.
//!
//! Budgets, so that building costs what can pay off and is cheap on any
//! program (interpreters are built often: `bench` builds one per residual
//! program of the fast engine, thousands for a 4096-instruction filter).
//! Checked from cheap facts first, before the costly walks:
//! - only roots are discovered (a compare no compare goes to), never the
//!   pcs inside a region, though every pc is a candidate;
//! - a root whose longest path (one pass over the program) has more than
//!   [`MAX_NODES`] compares is not even discovered: its region is too big
//!   (a ladder DAG of 4093 compares costs no visit, 1025 before);
//! - discovering a region stops past [`MAX_NODES`] compares (at most
//!   `2 * MAX_NODES + 1` node visits);
//! - the [`Policy`]'s shape checks (depth, branches) come before the walks;
//! - the walks cost at most `cuts * depth` steps (each of the at most
//!   `2 * compares + 1` cuts walks at most the longest path): a region
//!   where that bound passes [`MAX_REGION_WALK`] is not walked;
//! - all regions of a program together cost at most [`MAX_WORK`] steps
//!   (discovery and walks), their tables at most [`MAX_ENTRIES`] entries.
//!
//! A region past a budget gets no table: its root keeps the ops it had.
//! Worst case for a 4096-instruction program: `MAX_WORK` (2^18) node
//! visits, about a millisecond, 2^16 entries (384 KiB with `u16`
//! targets) and [`MAX_DENSE_ENTRIES`] direct entries of at most
//! [`DENSE_BYTES`] per tree.

use crate::{Code, Cond};

/// Regions with fewer compares than this on their longest path keep the
/// interpreters' chain ops: measured (`benches/engine_table.py`), the
/// classic interpreter ran long_jumps_short's tree of 4 compares deep (5
/// intervals) 1.5x slower as a search than as its linked chains (the
/// search's loads form one dependency chain; the chains' branches are
/// predicted).
pub const MIN_DEPTH: usize = 5;

/// Compares that go on to the region on both sides a region needs to be a
/// tree. One is a chain split once (libseccomp's x32 test in front of an
/// allow-list): measured, its chains' eq-set lookups beat the search on
/// the mix (allow306_default 6.2 against 6.75 ns, seed_slow 6.3 against
/// 7.2).
pub const MIN_BRANCHES: usize = 2;

/// A walk of the region costs about one dispatch per compare; the search
/// over a table of `2^s` entries costs `s` dependent steps and an entry.
/// A region gets its table only where the mean walk over its cuts is at
/// least `s + SEARCH_MARGIN` compares. Measured (`benches/engine_table.py`,
/// the classic interpreter, mix of the inputs): Chromium's syscall tree
/// (mean walk 7.1 compares, 256 entries) ran 11.1 ns walked and 14.5 as a
/// search; libseccomp's opt2 trees gain (docker_like_opt2: mean 10.4 over
/// 256 entries, 38 → 16.5 ns; allow306_opt2: 9.2 over 4, 19 → 7.3 ns).
/// A cut below a tree's direct table costs one step instead of `s`: with
/// them Chromium's tree gets its table and runs in 10.5 ns (against 14.5
/// searched), docker_like_opt2's in 11.1 (against 16.5).
pub const SEARCH_MARGIN: usize = 2;

/// Which regions get a table: the cost model, apart from the mechanism
/// (every region a policy admits answers exactly as its walk).
///
/// Both interpreters use [`Policy::default`]. The eBPF seccomp executor
/// walks a tree as linked chains (one dispatch for a whole path), cheaper
/// per compare than the classic interpreter's ops, but measured with the
/// same binary, trees off and on (`benches/engine_table.py`, ns): the
/// search still pays on the trees the policy admits (allow306_opt2 deepest
/// 15.1 → 11.8, seed_slow_opt2 deepest 14.3 → 11.2), and the tree of
/// fewest compares per search step it admits, long_jumps_large_opt2's
/// (mean walk 7.4 over 8 intervals: 3 steps), is even on the mix (15.5 →
/// 15.9, within the runs' spread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Compares the longest path of a region needs ([`MIN_DEPTH`]).
    pub min_depth: usize,
    /// Compares going on to the region on both sides it needs
    /// ([`MIN_BRANCHES`]; at least 1 in any policy: a chain that never
    /// branches keeps its scans).
    pub min_branches: usize,
    /// How many compares the mean walk must exceed the search's steps by
    /// ([`SEARCH_MARGIN`]); `None`: no cost check.
    pub search_margin: Option<usize>,
}

impl Default for Policy {
    /// The measured policy: [`MIN_DEPTH`], [`MIN_BRANCHES`],
    /// [`SEARCH_MARGIN`].
    fn default() -> Self {
        Policy { min_depth: MIN_DEPTH, min_branches: MIN_BRANCHES, search_margin: Some(SEARCH_MARGIN) }
    }
}

impl Policy {
    /// Every region that branches gets a table (within the budgets): for
    /// testing the mechanism.
    pub const EVERY_TREE: Policy = Policy { min_depth: 1, min_branches: 1, search_margin: None };

    /// Whether a region with these counts gets its table: deep enough,
    /// branching enough, and (with a margin) a mean walk over the cuts,
    /// `steps / cuts`, of at least the search's steps over a table of
    /// `intervals` entries plus the margin, a cut with a direct entry
    /// counting one step.
    fn admits(self, shape: Shape) -> bool {
        let walk_pays = self.search_margin.is_none_or(|margin| {
            let search = shape.intervals.next_power_of_two().trailing_zeros() as usize;
            let searched = shape.cuts.saturating_sub(shape.dense_cuts);
            let cost = searched
                .saturating_mul(search.saturating_add(margin))
                .saturating_add(shape.dense_cuts.saturating_mul(1 + margin));
            shape.steps >= cost
        });
        shape.depth >= self.min_depth && shape.branches >= self.min_branches.max(1) && walk_pays
    }
}

/// What a [`Policy`] looks at in a region.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Compares on the longest path.
    depth: usize,
    /// Compares going on to the region on both sides.
    branches: usize,
    /// Compares walked over all cuts.
    steps: usize,
    /// Cuts walked.
    cuts: usize,
    /// Cuts below the direct table's end: found in one step.
    dense_cuts: usize,
    /// Intervals (the table before padding).
    intervals: usize,
}

/// Compares a region may have. The largest real tree, libseccomp's opt2
/// tree of testdata/profiles/docker_like_opt2.bpf, has 737.
pub const MAX_NODES: usize = 1024;

/// Walk steps a region may cost, bounded before walking as `cuts * depth`
/// (cuts walked, compares on the longest path). Real trees are balanced:
/// docker_like_opt2's bound is 660 cuts * 12 = 7920 (6849 walked), and a
/// balanced tree of [`MAX_NODES`] compares (2049 cuts, about 11 deep)
/// stays below this cap too. What it stops is a deep region that branches
/// at every node, whose walks cost its compares squared: a ladder of 1023
/// `==` (2046 cuts, 1023 deep) cost 2^21 steps per build before the cap,
/// for one table; now a ladder of up to 181 compares is walked.
pub const MAX_REGION_WALK: usize = 1 << 16;

/// Node visits all regions of a program may cost to build (discovery and
/// walks together): 20x the busiest real program (docker_like_opt2: 12902
/// visits), about 4 regions at [`MAX_REGION_WALK`]. Reached only by
/// hostile programs, e.g. a 4096-instruction filter of 22 ladders of 181
/// compares (each a region just under [`MAX_REGION_WALK`]): the first
/// few get a table, the rest keep their ops.
pub const MAX_WORK: usize = 1 << 18;

/// Table entries all regions of a program may have.
pub const MAX_ENTRIES: usize = 1 << 16;

/// Tables with at least this many entries (three search steps or more)
/// get a direct table for their small values; smaller ones search.
pub const DENSE_MIN_LEN: usize = 8;

/// Bytes a tree's direct table may take: the values below the last cut
/// that fits (the classic interpreter's `u16` outcomes: 4096 values; the
/// eBPF executor's 16-byte exits: 512, past every x86-64 system call
/// number of Linux 6.18).
pub const DENSE_BYTES: usize = 8192;

/// Direct entries all trees of a program may have together (a table past
/// it searches all its values).
pub const MAX_DENSE_ENTRIES: usize = 1 << 15;

/// The breakpoint tables of a program's compare trees; `T` is what an
/// interpreter keeps per outcome (a pc, in its own form).
#[derive(Debug, Clone)]
pub struct RangeTrees<T> {
    /// Per tree: where its entries start, and how many there are (a power
    /// of two).
    spans: Box<[Span]>,
    /// The first value of each interval, ascending per tree; the last
    /// interval repeated up to the power of two.
    starts: Box<[u32]>,
    /// The outcome of each interval, parallel to `starts`.
    outcomes: Box<[T]>,
    /// Per tree, its direct table: the values below `len` are looked up
    /// from `start` in `dense` (a `len` of 0: none). Apart from `spans`, so
    /// that the search of a tree without one reads what it read before.
    directs: Box<[Direct]>,
    /// The outcome of each value below a tree's direct bound.
    dense: Box<[T]>,
    /// The root pc of each tree.
    roots: Box<[usize]>,
    /// Per tree, whether its region goes through a reload of its word
    /// ([`RangeTrees::needs_load`]).
    reloading: Box<[bool]>,
    /// Intervals per tree before the padding, for the listing.
    intervals: Box<[u32]>,
}

impl<T> Default for RangeTrees<T> {
    fn default() -> Self {
        RangeTrees {
            spans: Box::new([]),
            starts: Box::new([]),
            outcomes: Box::new([]),
            directs: Box::new([]),
            dense: Box::new([]),
            roots: Box::new([]),
            reloading: Box::new([]),
            intervals: Box::new([]),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
}

/// A tree's direct table: the outcomes of the values below `len`, from
/// `start` in [`RangeTrees::dense`].
#[derive(Debug, Clone, Copy)]
struct Direct {
    start: u32,
    len: u32,
}

/// Where walking a region from its root leaves it: the first pc outside
/// it, and the instructions the walk jumped over on the way (taken jumps
/// and `ja`s), for an interpreter that counts executed instructions (with
/// forward jumps, a walk from `root` to `pc` executes `pc - root - skip`
/// instructions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leave {
    /// The pc the walk leaves to.
    pub pc: usize,
    /// Instructions jumped over from the root to `pc`.
    pub skip: u32,
}

/// A compare of a region: its condition and constant, and where each
/// outcome goes (resolved past `ja`, and past a reload of the region's
/// word) with the instructions it jumps over.
#[derive(Debug, Clone, Copy)]
struct Node {
    cond: Cond,
    value: u64,
    taken: usize,
    fall: usize,
    taken_skip: u32,
    fall_skip: u32,
    /// Whether an outcome goes on through a reload of the region's word.
    reloads: bool,
}

/// A `&` test of a region splits the values into at most this many
/// aligned blocks: `x & m != 0` is constant on each block of `2^t` values
/// (`t` the trailing zeros of the mask's low 32 bits), so it adds at most
/// `MAX_SET_BLOCKS - 1` cuts. Chromium's x32 test (`jset #0x40000000`)
/// before its syscall tree makes 4 blocks; a low bit (OpenSSH's flag
/// masks) would make millions, and ends the region as any other test.
pub const MAX_SET_BLOCKS: u64 = 16;

/// The block size of a `&` test with mask `m` on 32-bit values, as a
/// power of two, if the test has at most [`MAX_SET_BLOCKS`] blocks (a mask
/// of no low bit: one block, the test is always false).
fn set_block_bits(m: u64) -> Option<u32> {
    let low = m & u64::from(u32::MAX);
    let bits = if low == 0 { 32 } else { low.trailing_zeros() };
    (1u64 << (32 - bits) <= MAX_SET_BLOCKS).then_some(bits)
}

/// The region compare at `pc`: a compare of `x` with a constant, a `&`
/// test only if its mask splits the values into few blocks
/// ([`MAX_SET_BLOCKS`]). With `word`, the context word `x` holds, an
/// outcome that lands on a reload of that word followed by a compare goes
/// on to the compare: the reload leaves `x` as it is (libseccomp's x32
/// check, `jge #0x40000000; jeq #-1`, falls into `ld [0]` and the syscall
/// tree).
fn node(code: &impl Code, pc: usize, word: Option<u8>) -> Option<Node> {
    let c = code.compare(pc).filter(|c| c.cond != Cond::Set || set_block_bits(c.value).is_some())?;
    // From the jump (after the load of its constant, if the compare has
    // one) to where the outcome resolves, past `ja`s and a reload (which
    // executes: it is no jumped-over instruction).
    let land = |to: usize| {
        let (at, through) = code.resolve(to);
        let skip = through.wrapping_add(to.wrapping_sub(c.jump_pc + 1) as u32);
        let reload = word.filter(|&w| code.compare(at).is_none() && code.reloads(at, w));
        let on = reload.map(|_| code.resolve(at + 1)).filter(|&(next, _)| code.compare(next).is_some());
        match on {
            Some((next, jumped)) => (next, skip.wrapping_add(jumped), true),
            None => (at, skip, false),
        }
    };
    let ((taken, taken_skip, r1), (fall, fall_skip, r2)) = (land(c.taken), land(c.fall));
    Some(Node { cond: c.cond, value: c.value, taken, fall, taken_skip, fall_skip, reloads: r1 || r2 })
}

/// The context word a region rooted at `root` compares: the one the
/// instruction before the root loads, if it loads one.
fn root_word(code: &impl Code, root: usize) -> Option<u8> {
    code.loaded_word(root.checked_sub(1)?)
}

/// Which neighbouring intervals share a table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Merge {
    /// Those that leave to the same pc.
    ByPc,
    /// Those that leave to the same pc having jumped over as many
    /// instructions: each entry's [`Leave::skip`] is exact.
    Counted,
}

/// Why a region has no table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    /// Too small to pay (the [`Policy`]).
    Shallow,
    /// Past a budget, or not a forward DAG: no table, the ops stay.
    Budget,
}

impl<T: Copy> RangeTrees<T> {
    /// The tables of the compare trees among `pcs` that pay under the
    /// measured [`Policy::default`] ([`RangeTrees::build_with`]).
    pub fn build(code: &impl Code, pcs: impl IntoIterator<Item = usize>, outcome: impl Fn(usize) -> Option<T>) -> Self {
        Self::build_with(Policy::default(), code, pcs, outcome)
    }

    /// The tables of the compare trees among `pcs` (the pcs of a program;
    /// a pc with no compare is skipped): one per *root*, a region compare
    /// that no region compare goes to, whose region `policy` admits (it
    /// branches: plain chains keep their scans; deep enough; its walk
    /// costs more than the search) and that fits the budgets.
    /// `outcome` is an interpreter's form of a pc a region leaves to
    /// (`None`: no table for that region).
    ///
    /// Edges must go forward (to a higher pc), as classic and converted
    /// seccomp jumps do; a region with another edge gets no table.
    pub fn build_with(
        policy: Policy,
        code: &impl Code,
        pcs: impl IntoIterator<Item = usize>,
        outcome: impl Fn(usize) -> Option<T>,
    ) -> Self {
        Self::build_merged(policy, Merge::ByPc, code, pcs, |leave: Leave| outcome(leave.pc))
    }

    /// [`RangeTrees::build_with`] for an interpreter that counts executed
    /// instructions: `outcome` gets each interval's [`Leave`], exact for
    /// every `x` of the interval (intervals that leave to the same pc
    /// through walks that jump over different counts are entries of their
    /// own, so a table may have more entries than
    /// [`RangeTrees::build_with`]'s, and a region may fit the budgets in
    /// one and not the other: compare [`RangeTrees::roots`]).
    pub fn build_counted_with(
        policy: Policy,
        code: &impl Code,
        pcs: impl IntoIterator<Item = usize>,
        outcome: impl Fn(Leave) -> Option<T>,
    ) -> Self {
        Self::build_merged(policy, Merge::Counted, code, pcs, outcome)
    }

    fn build_merged(
        policy: Policy,
        merge: Merge,
        code: &impl Code,
        pcs: impl IntoIterator<Item = usize>,
        outcome: impl Fn(Leave) -> Option<T>,
    ) -> Self {
        Self::build_merged_work(policy, merge, code, pcs, outcome).0
    }

    /// [`RangeTrees::build_merged`], and the work it cost (node visits).
    fn build_merged_work(
        policy: Policy,
        merge: Merge,
        code: &impl Code,
        pcs: impl IntoIterator<Item = usize>,
        outcome: impl Fn(Leave) -> Option<T>,
    ) -> (Self, usize) {
        let mut nodes: Vec<(usize, Node)> =
            pcs.into_iter().filter_map(|pc| Some((pc, node(code, pc, None)?))).collect();
        if !nodes.is_sorted_by_key(|&(pc, _)| pc) {
            nodes.sort_unstable_by_key(|&(pc, _)| pc);
        }
        nodes.dedup_by_key(|&mut (pc, _)| pc);
        // Per pc up to the last compare (the pcs of a program): whether a
        // compare goes to it, and the longest path from it.
        let end = nodes.last().map_or(0, |&(pc, _)| pc + 1);
        let mut inner = vec![false; end];
        for (_, n) in &nodes {
            for to in [n.taken, n.fall] {
                if let Some(slot) = inner.get_mut(to) {
                    *slot = true;
                }
            }
        }
        let depths = longest_paths(&nodes, end);
        let mut work = Work { left: MAX_WORK };
        let mut built = Built::default();
        for &(root, _) in &nodes {
            // Past MAX_NODES deep: a region too big, known without
            // discovering it (a ladder of 4093 compares would cost
            // 2 * MAX_NODES visits from its root).
            let deep = depths.get(root).is_some_and(|&d| d > MAX_NODES);
            if inner.get(root).copied().unwrap_or(false) || deep {
                continue;
            }
            // A region past a budget or too small keeps its ops.
            let _ = built.add(policy, merge, code, root, &outcome, &mut work);
        }
        (built.finish(), MAX_WORK - work.left)
    }

    /// The root pc of every tree, in tree order (tree `i` is the `i`-th).
    pub fn roots(&self) -> &[usize] {
        &self.roots
    }

    /// Whether tree `tree`'s region goes on through a reload of the word
    /// the instruction before its root loads: its table then answers only
    /// for runs that enter at that load (with the value in the word), so
    /// an interpreter puts its tree op there and not at the root, which
    /// other jumps may reach holding another value.
    pub fn needs_load(&self, tree: usize) -> bool {
        self.reloading.get(tree).copied().unwrap_or(false)
    }

    /// Number of trees.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Every outcome of every tree, for rewriting (e.g. routing pcs): the
    /// intervals' and the direct tables' alike.
    pub fn outcomes_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.outcomes.iter_mut().chain(self.dense.iter_mut())
    }

    /// The outcome of tree `tree` for `x`: exactly where walking its region
    /// from the root leaves to. `None` only for a tree out of range.
    #[inline(always)]
    pub fn outcome(&self, tree: usize, x: u32) -> Option<T> {
        let direct = self.directs.get(tree)?;
        if x < direct.len {
            return self.dense.get(direct.start as usize + x as usize).copied();
        }
        self.searched_outcome(tree, x)
    }

    /// [`RangeTrees::outcome`] for a tree without a direct table
    /// ([`RangeTrees::direct`] false), by the search alone: its runs skip
    /// the direct table's check (an interpreter gives such trees ops of
    /// their own; measured, the check cost libseccomp's small opt2 trees
    /// 3% more instructions a run). Exact for every tree and value (the
    /// search covers every interval); on a tree with a direct table only
    /// slower.
    #[inline(always)]
    pub fn searched_outcome(&self, tree: usize, x: u32) -> Option<T> {
        let span = self.spans.get(tree)?;
        let (start, len) = (span.start as usize, span.len as usize);
        let starts = self.starts.get(start..start + len)?;
        // The last entry whose start is at most x (the first starts at 0):
        // halving steps over a power-of-two length. LLVM makes each step a
        // compare and a branch. A conditional move instead
        // (`std::hint::select_unpredictable`, +7 instructions a run on
        // allow306_opt2's deepest vector) read the classic interpreter 10%
        // slower on the deepest inputs of allow306_opt2 and seed_slow_opt2
        // and the eBPF executor 11% faster on their mixes, side by side on
        // an AMD EPYC: no clear gain, and within what code placement alone
        // moves there (benches/README.md), so not kept.
        let mut at = 0;
        let mut step = len / 2;
        while step > 0 {
            let probe = at + step;
            at = if starts.get(probe).is_some_and(|&s| s <= x) { probe } else { at };
            step /= 2;
        }
        self.outcomes.get(start + at).copied()
    }

    /// Whether tree `tree` has a direct table for its small values.
    pub fn direct(&self, tree: usize) -> bool {
        self.direct_len(tree) > 0
    }

    /// The values below this have direct entries in tree `tree` (0: none).
    fn direct_len(&self, tree: usize) -> u32 {
        self.directs.get(tree).map_or(0, |d| d.len)
    }

    /// Tree `tree`'s intervals, each with its first value and outcome.
    pub fn intervals(&self, tree: usize) -> impl Iterator<Item = (u32, T)> + '_ {
        let span = self.spans.get(tree).copied().unwrap_or(Span { start: 0, len: 0 });
        let n = self.intervals.get(tree).copied().unwrap_or(0) as usize;
        let range = span.start as usize..span.start as usize + n;
        let starts = self.starts.get(range.clone()).unwrap_or_default();
        let outcomes = self.outcomes.get(range).unwrap_or_default();
        starts.iter().copied().zip(outcomes.iter().copied())
    }

    /// One line per tree (`tree #i @pc: n intervals`), then one per
    /// interval (`lo..=hi -> name(outcome)`).
    pub fn listing(&self, name: impl Fn(T) -> String) -> String {
        let mut out = String::new();
        for (tree, root) in self.roots.iter().enumerate() {
            let all: Vec<(u32, T)> = self.intervals(tree).collect();
            let dense = self.direct_len(tree);
            let direct = if dense > 0 { format!(", direct below {dense:#x}") } else { String::new() };
            out.push_str(&format!("tree #{tree} @{root}: {} intervals{direct}\n", all.len()));
            for (i, &(lo, t)) in all.iter().enumerate() {
                let hi = all.get(i + 1).map_or(u32::MAX, |&(next, _)| next - 1);
                out.push_str(&format!("  {lo:#x}..={hi:#x} -> {}\n", name(t)));
            }
        }
        out
    }
}

/// What is left of [`MAX_WORK`].
struct Work {
    left: usize,
}

impl Work {
    /// Takes `n` steps; `Err` once the budget is spent.
    fn take(&mut self, n: usize) -> Result<(), Skip> {
        self.left = self.left.checked_sub(n).ok_or(Skip::Budget)?;
        Ok(())
    }
}

/// Tables as they are built.
struct Built<T> {
    spans: Vec<Span>,
    starts: Vec<u32>,
    outcomes: Vec<T>,
    directs: Vec<Direct>,
    dense: Vec<T>,
    roots: Vec<usize>,
    reloading: Vec<bool>,
    intervals: Vec<u32>,
}

impl<T> Default for Built<T> {
    fn default() -> Self {
        Built {
            spans: Vec::new(),
            starts: Vec::new(),
            outcomes: Vec::new(),
            directs: Vec::new(),
            dense: Vec::new(),
            roots: Vec::new(),
            reloading: Vec::new(),
            intervals: Vec::new(),
        }
    }
}

impl<T: Copy> Built<T> {
    /// Adds the table of the region rooted at `root`, if it pays and fits.
    fn add(
        &mut self,
        policy: Policy,
        merge: Merge,
        code: &impl Code,
        root: usize,
        outcome: &impl Fn(Leave) -> Option<T>,
        work: &mut Work,
    ) -> Result<(), Skip> {
        let region = region(code, root, work)?;
        let (depth, branches) = (longest_path(&region), branches(&region));
        // Cheap checks first: the walks cost work.
        if depth < policy.min_depth || branches < policy.min_branches.max(1) {
            return Err(Skip::Shallow);
        }
        let cuts = cuts_of(&region);
        if cuts.len().saturating_mul(depth) > MAX_REGION_WALK {
            return Err(Skip::Budget);
        }
        let (intervals, steps) = intervals_of(&region, root, &cuts, merge, work)?;
        let dense = self.dense_below(&intervals);
        let dense_cuts = cuts.partition_point(|&c| c < dense);
        let cuts = cuts.len();
        if !policy.admits(Shape { depth, branches, steps, cuts, dense_cuts, intervals: intervals.len() }) {
            return Err(Skip::Shallow);
        }
        let len = intervals.len().next_power_of_two();
        if self.starts.len() + len > MAX_ENTRIES {
            return Err(Skip::Budget);
        }
        let mut outcomes = Vec::with_capacity(len);
        for &(_, to) in &intervals {
            outcomes.push(outcome(to).ok_or(Skip::Budget)?);
        }
        let (Some(&(last_lo, _)), Some(&last)) = (intervals.last(), outcomes.last()) else { return Err(Skip::Budget) };
        let start = self.starts.len();
        let dense_start = self.dense.len();
        // Each value below `dense`, in the interval it falls in: at or
        // past the interval's start, below the next one's.
        let mut at = 0;
        for x in 0..dense {
            while intervals.get(at + 1).is_some_and(|&(lo, _)| lo <= x) {
                at += 1;
            }
            self.dense.extend(outcomes.get(at).copied());
        }
        self.spans.push(Span { start: start as u32, len: len as u32 });
        self.directs.push(Direct { start: dense_start as u32, len: dense });
        self.intervals.push(intervals.len() as u32);
        self.roots.push(root);
        self.reloading.push(region.iter().any(|(_, n)| n.reloads));
        self.starts.extend(intervals.iter().map(|&(lo, _)| lo));
        self.outcomes.extend(outcomes);
        // Padding: the last interval again, so that the search over the
        // power of two finds it for every x at or past its start.
        self.starts.resize(start + len, last_lo);
        self.outcomes.resize(start + len, last);
        Ok(())
    }

    /// How many small values of a table over `intervals` get direct
    /// entries: those below the start of the last interval that begins
    /// within [`DENSE_BYTES`] (values from there on search), if the table
    /// is big enough to pay ([`DENSE_MIN_LEN`]) and the program's direct
    /// entries stay within [`MAX_DENSE_ENTRIES`]; else 0.
    fn dense_below<L>(&self, intervals: &[(u32, L)]) -> u32 {
        let fits = (DENSE_BYTES / std::mem::size_of::<T>().max(1)) as u32;
        if intervals.len().next_power_of_two() < DENSE_MIN_LEN {
            return 0;
        }
        let last = intervals.iter().map(|&(lo, _)| lo).take_while(|&lo| lo <= fits).last().unwrap_or(0);
        if self.dense.len() + last as usize > MAX_DENSE_ENTRIES {
            return 0;
        }
        last
    }

    fn finish(self) -> RangeTrees<T> {
        RangeTrees {
            spans: self.spans.into(),
            starts: self.starts.into(),
            outcomes: self.outcomes.into(),
            directs: self.directs.into(),
            dense: self.dense.into(),
            roots: self.roots.into(),
            reloading: self.reloading.into(),
            intervals: self.intervals.into(),
        }
    }
}

/// Intervals (first value, where the walk leaves to), compares walked
/// over all cuts.
type Walked = (Vec<(u32, Leave)>, usize);

/// The region's cuts, ascending: 0, each constant v below 2^32 and v + 1
/// (where the outcome of `==`, `>`, `>=` and their negations may change),
/// and the start of each block of a `&` test ([`set_block_bits`]). At
/// most `(2 + MAX_SET_BLOCKS) * compares + 1`.
fn cuts_of(region: &[(usize, Node)]) -> Vec<u32> {
    let mut cuts: Vec<u32> = vec![0];
    for (_, n) in region {
        if n.cond == Cond::Set {
            let Some(bits) = set_block_bits(n.value).filter(|&b| b < 32) else { continue };
            cuts.extend((1..1u64 << (32 - bits)).filter_map(|block| u32::try_from(block << bits).ok()));
        } else if let Ok(v) = u32::try_from(n.value) {
            cuts.push(v);
            cuts.extend(v.checked_add(1));
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// The intervals of the region rooted at `root` (first value, where the
/// walk leaves to; neighbours merged as `merge` says), walked from each of
/// `cuts`, with the compares walked over all cuts.
fn intervals_of(
    region: &[(usize, Node)],
    root: usize,
    cuts: &[u32],
    merge: Merge,
    work: &mut Work,
) -> Result<Walked, Skip> {
    let mut intervals: Vec<(u32, Leave)> = Vec::with_capacity(cuts.len());
    let mut steps = 0usize;
    for &lo in cuts {
        let (to, walked) = walk(region, root, lo, work)?;
        steps += walked;
        let same = |last: Leave| last.pc == to.pc && (merge == Merge::ByPc || last.skip == to.skip);
        if intervals.last().is_none_or(|&(_, last)| !same(last)) {
            intervals.push((lo, to));
        }
    }
    Ok((intervals, steps))
}

/// The region of `root`: every compare reachable from it through region
/// compares (and reloads of the word loaded right before `root`, which
/// [`RangeTrees::needs_load`] then reports), sorted by pc; `Err` past [`MAX_NODES`] or the work budget, or
/// for an edge that does not go forward.
fn region(code: &impl Code, root: usize, work: &mut Work) -> Result<Vec<(usize, Node)>, Skip> {
    let word = root_word(code, root);
    let mut seen = std::collections::HashSet::new();
    let mut found: Vec<(usize, Node)> = Vec::new();
    let mut todo = vec![root];
    while let Some(pc) = todo.pop() {
        work.take(1)?;
        if !seen.insert(pc) {
            continue;
        }
        let Some(n) = node(code, pc, word) else { continue };
        if n.taken <= pc || n.fall <= pc {
            return Err(Skip::Budget);
        }
        found.push((pc, n));
        if found.len() > MAX_NODES {
            return Err(Skip::Budget);
        }
        todo.extend([n.taken, n.fall]);
    }
    found.sort_unstable_by_key(|&(pc, _)| pc);
    Ok(found)
}

/// The region's compare at `pc`, if `pc` is in it.
fn find(region: &[(usize, Node)], pc: usize) -> Option<&Node> {
    let at = region.binary_search_by_key(&pc, |&(p, _)| p).ok()?;
    region.get(at).map(|(_, n)| n)
}

/// Compares on the longest path of the region (edges go forward, so one
/// pass from the highest pc down).
fn longest_path(region: &[(usize, Node)]) -> usize {
    let mut depth = vec![0usize; region.len()];
    for i in (0..region.len()).rev() {
        let Some(&(_, n)) = region.get(i) else { continue };
        let below = |to: usize| {
            region.binary_search_by_key(&to, |&(p, _)| p).ok().and_then(|j| depth.get(j).copied()).unwrap_or(0)
        };
        let d = 1 + below(n.taken).max(below(n.fall));
        if let Some(slot) = depth.get_mut(i) {
            *slot = d;
        }
    }
    depth.first().copied().unwrap_or(0)
}

/// Per pc below `end`: compares on the longest path from it through
/// `nodes` (sorted by pc), following forward edges only, in one pass from
/// the highest pc down (0 where no compare is). At most the longest path
/// of a region rooted there (which may also go through compares outside
/// `nodes`, and which gets no table if an edge goes backward), so more
/// than [`MAX_NODES`] means a region too big.
fn longest_paths(nodes: &[(usize, Node)], end: usize) -> Vec<usize> {
    let mut depth = vec![0usize; end];
    for &(pc, n) in nodes.iter().rev() {
        let below = |to: usize| if to > pc { depth.get(to).copied().unwrap_or(0) } else { 0 };
        let d = 1 + below(n.taken).max(below(n.fall));
        if let Some(slot) = depth.get_mut(pc) {
            *slot = d;
        }
    }
    depth
}

/// How many compares of the region go on to the region on both sides:
/// a [`Policy`] wants at least one, [`MIN_BRANCHES`] by default. None is a
/// chain, one a chain split once (chains keep their scans and lookup
/// tables, [`crate::EqSets`], which beat a search on lists of `==`).
fn branches(region: &[(usize, Node)]) -> usize {
    region.iter().filter(|(_, n)| find(region, n.taken).is_some() && find(region, n.fall).is_some()).count()
}

/// Where the region is left when entered at `root` with `x` (the first pc
/// outside it, and the instructions jumped over on the way), and the
/// compares walked. Costs one step of `work` per compare.
fn walk(region: &[(usize, Node)], root: usize, x: u32, work: &mut Work) -> Result<(Leave, usize), Skip> {
    let (mut pc, mut skip) = (root, 0u32);
    let mut steps = 0;
    while let Some(n) = find(region, pc) {
        work.take(1)?;
        steps += 1;
        let (to, jumped) =
            if n.cond.eval(u64::from(x), n.value) { (n.taken, n.taken_skip) } else { (n.fall, n.fall_skip) };
        pc = to;
        skip = skip.wrapping_add(jumped);
    }
    Ok((Leave { pc, skip }, steps))
}

#[cfg(test)]
mod tests;
