#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use super::*;
use crate::Compare;
use test_data::rng::Rng;

/// A toy program: compares with absolute targets, `ja`, and anything else
/// (which ends a region).
#[derive(Debug, Clone, Copy)]
enum Insn {
    Cmp(Cond, u64, usize, usize),
    Ja(usize),
    /// A load of a context word into the value.
    Ld(u8),
    Other,
}

struct Prog(Vec<Insn>);

impl Code for Prog {
    fn compare(&self, pc: usize) -> Option<Compare> {
        match *self.0.get(pc)? {
            Insn::Cmp(cond, value, taken, fall) => Some(Compare { cond, value, jump_pc: pc, taken, fall }),
            _ => None,
        }
    }
    fn resolve(&self, mut pc: usize) -> (usize, u32) {
        let mut through = 0;
        while let Some(&Insn::Ja(to)) = self.0.get(pc) {
            pc = to;
            through += 1;
        }
        (pc, through)
    }
    fn reloads(&self, pc: usize, word: u8) -> bool {
        matches!(self.0.get(pc), Some(&Insn::Ld(w)) if w == word)
    }
}

/// Whether a compare belongs to a region: every range compare, and a `&`
/// test whose mask's low 32 bits have no bit below bit 28 (at most 16
/// blocks of values), written out here rather than asked of the module.
fn in_region(cond: Cond, mask: u64) -> bool {
    cond != Cond::Set || mask as u32 & 0x0fff_ffff == 0
}

impl Prog {
    /// Plain interpretation from `pc` until an instruction that is neither
    /// a region compare ([`in_region`]) nor a `ja` (or past the program).
    fn run(&self, pc: usize, x: u32) -> usize {
        run_counted(self, pc, x).pc
    }

    /// The word a region rooted at `root` holds: the one loaded right
    /// before it.
    fn word_at(&self, root: usize) -> Option<u8> {
        match self.0.get(root.checked_sub(1)?) {
            Some(&Insn::Ld(w)) => Some(w),
            _ => None,
        }
    }

    /// Whether a run from `pc` (past `ja`s) reaches a compare.
    fn compare_after(&self, mut pc: usize) -> bool {
        loop {
            match self.0.get(pc) {
                Some(Insn::Cmp(..)) => return true,
                Some(&Insn::Ja(to)) => pc = to,
                _ => return false,
            }
        }
    }

    /// The tables of every tree (the mechanism, [`Policy::EVERY_TREE`]).
    fn trees(&self) -> RangeTrees<usize> {
        self.trees_with(Policy::EVERY_TREE)
    }

    fn trees_with(&self, policy: Policy) -> RangeTrees<usize> {
        RangeTrees::build_with(policy, self, 0..self.0.len(), Some)
    }
}

/// The values the checks try: every cut of the program ±1, a few fixed
/// values and `more`.
fn values(prog: &Prog, more: &[u32]) -> Vec<u32> {
    let mut xs: Vec<u32> = vec![0, 1, 2, u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) - 1];
    xs.extend(more);
    for insn in &prog.0 {
        if let Insn::Cmp(_, v, _, _) = *insn {
            let v = v as u32;
            xs.extend([v.wrapping_sub(1), v, v.wrapping_add(1), v.wrapping_add(2)]);
        }
    }
    xs
}

/// Every tree answers as plain interpretation on [`values`].
fn check(prog: &Prog, trees: &RangeTrees<usize>, more: &[u32]) {
    let xs = values(prog, more);
    for (tree, &root) in trees.roots().iter().enumerate() {
        for &x in &xs {
            assert_eq!(trees.outcome(tree, x), Some(prog.run(root, x)), "tree {tree} @{root} x={x:#x}\n{prog:?}");
        }
    }
}

/// [`Prog::run`] with the instructions jumped over: a compare's outcome
/// skips from past the compare to its target, each `ja` (resolved past by
/// the toy [`Code::resolve`]) counts one. A reload of the word loaded
/// right before `root` leaves the value as it is: the run goes on past it
/// when a compare follows (it executes, no skip), else stops there.
fn run_counted(prog: &Prog, root: usize, x: u32) -> Leave {
    let (mut pc, mut skip) = (root, 0u32);
    let word = prog.word_at(root);
    loop {
        match prog.0.get(pc) {
            Some(&Insn::Ld(w)) if pc != root && word == Some(w) && prog.compare_after(pc + 1) => pc += 1,
            Some(&Insn::Cmp(cond, v, t, f)) if in_region(cond, v) => {
                let to = if cond.eval(u64::from(x), v) { t } else { f };
                skip += (to - pc - 1) as u32;
                pc = to;
            }
            Some(&Insn::Ja(to)) => {
                skip += 1;
                pc = to;
            }
            _ => return Leave { pc, skip },
        }
    }
}

/// Every counted tree answers as [`run_counted`] on [`values`].
fn check_counted(prog: &Prog, trees: &RangeTrees<Leave>, more: &[u32]) {
    let xs = values(prog, more);
    for (tree, &root) in trees.roots().iter().enumerate() {
        for &x in &xs {
            assert_eq!(
                trees.outcome(tree, x),
                Some(run_counted(prog, root, x)),
                "tree {tree} @{root} x={x:#x}\n{prog:?}"
            );
        }
    }
}

impl std::fmt::Debug for Prog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (pc, insn) in self.0.iter().enumerate() {
            writeln!(f, "{pc:3}: {insn:?}")?;
        }
        Ok(())
    }
}

/// A balanced binary tree over `keys` (sorted) in the shape of libseccomp's
/// `--opt 2` output: `jge` splits down to `jeq` leaves that go to `hit`
/// (past the tree) or `miss`; returns the instructions from `base`.
fn bst(keys: &[u32], base: usize, hit: usize, miss: usize, out: &mut Vec<Insn>) {
    if keys.len() == 1 {
        out.push(Insn::Cmp(Cond::Eq, u64::from(keys[0]), hit, miss));
        return;
    }
    let mid = keys.len() / 2;
    let at = out.len();
    out.push(Insn::Other); // patched below
    bst(&keys[..mid], base, hit, miss, out);
    let right = base + out.len();
    bst(&keys[mid..], base, hit, miss, out);
    out[at] = Insn::Cmp(Cond::Ge, u64::from(keys[mid]), right, base + at + 1);
}

/// `n` compares `== 2i` from `base`, each going on to the next on a miss
/// and over it on a hit (a DAG that branches), the last ones to `base + n`,
/// then an outside pc there.
fn ladder(n: usize, base: usize) -> Vec<Insn> {
    let over = |i: usize| if i + 2 < n { base + i + 2 } else { base + n };
    (0..n).map(|i| Insn::Cmp(Cond::Eq, 2 * i as u64, over(i), base + i + 1)).chain([Insn::Other]).collect()
}

#[test]
fn a_libseccomp_tree_is_one_table_that_answers_as_the_walk() {
    let keys: Vec<u32> = (0..40).map(|i| i * 3 + 1).collect();
    let mut insns = Vec::new();
    let n = 2 * keys.len() - 1;
    bst(&keys, 0, n, n + 1, &mut insns);
    insns.extend([Insn::Other, Insn::Other]);
    let prog = Prog(insns);
    let trees = prog.trees();
    assert_eq!(trees.roots(), [0]);
    assert_eq!(trees.len(), 1);
    assert!(!trees.is_empty());
    // Each key alone hits, the values between miss: 81 intervals.
    let intervals: Vec<(u32, usize)> = trees.intervals(0).collect();
    assert_eq!(intervals.len(), 2 * keys.len() + 1);
    assert_eq!(intervals[0], (0, n + 1));
    assert_eq!(intervals[1], (1, n));
    assert_eq!(intervals[2], (2, n + 1));
    assert_eq!(intervals.last(), Some(&(keys[39] + 1, n + 1)));
    check(&prog, &trees, &[]);
    for x in 0..200 {
        let want = if keys.contains(&x) { n } else { n + 1 };
        assert_eq!(trees.outcome(0, x), Some(want), "x={x}");
    }
    assert_eq!(trees.outcome(1, 0), None);
}

#[test]
fn listing_shows_each_interval() {
    // x == 1000 -> 7; x >= 10 -> 3; x > 3 -> 5; x == 0 -> 6; x >= 1 -> 7.
    let prog = Prog(vec![
        Insn::Cmp(Cond::Eq, 1000, 7, 1),
        Insn::Cmp(Cond::Ge, 10, 3, 2),
        Insn::Cmp(Cond::Gt, 3, 5, 3),
        Insn::Cmp(Cond::Eq, 0, 6, 4),
        Insn::Cmp(Cond::Ge, 1, 7, 5),
        Insn::Other,
        Insn::Other,
        Insn::Other,
    ]);
    let trees = prog.trees();
    let want =
        "tree #0 @0: 4 intervals\n  0x0..=0x0 -> 6\n  0x1..=0x3 -> 7\n  0x4..=0x9 -> 5\n  0xa..=0xffffffff -> 7\n";
    assert_eq!(trees.listing(|t| t.to_string()), want);
    check(&prog, &trees, &[]);
}

#[test]
fn random_regions_answer_as_plain_interpretation() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let conds = [Cond::Eq, Cond::Gt, Cond::Ge, Cond::Eq, Cond::Gt, Cond::Ge, Cond::Ne, Cond::Lt, Cond::Le, Cond::Set];
    let (mut tables, mut reloading) = (0, 0);
    for case in 0..3000 {
        let n = 2 + rng.below(40);
        let mut small: Vec<u64> = (0..4).map(|_| rng.next_u64() % 64).collect();
        small.extend([0, 1, 0xffff_ffff, 0xffff_fffe, 0x8000_0000, 0x7fff_ffff, 1 << 32, u64::MAX]);
        let mut insns = Vec::with_capacity(n);
        for pc in 0..n {
            // Forward targets, some past the program (outside pcs).
            let mut to = || pc + 1 + rng.below(n + 2 - pc);
            let (t, f) = (to(), to());
            insns.push(match rng.below(14) {
                0 => Insn::Ja(t),
                1 => Insn::Other,
                // Loads: before a root, the region's word; inside it, a
                // reload of that word or a load of another.
                2 | 3 => Insn::Ld(rng.below(2) as u8),
                _ => Insn::Cmp(conds[rng.below(conds.len())], small[rng.below(small.len())], t, f),
            });
        }
        let prog = Prog(insns);
        // The mechanism on most cases, the measured policy on every fourth.
        let policy = if case % 4 == 3 { Policy::default() } else { Policy::EVERY_TREE };
        let trees = prog.trees_with(policy);
        tables += trees.len();
        reloading += (0..trees.len()).filter(|&t| trees.needs_load(t)).count();
        let more: Vec<u32> = (0..16).map(|_| rng.next_u64() as u32).collect();
        check(&prog, &trees, &more);
        // Counted tables over the same roots: each interval's jumped-over
        // count is the walk's, for every x.
        let counted = RangeTrees::build_counted_with(Policy::EVERY_TREE, &prog, trees.roots().to_vec(), Some);
        assert_eq!(counted.roots(), trees.roots(), "case {case}\n{prog:?}");
        check_counted(&prog, &counted, &more);
        // Roots are exactly the region compares no region compare goes to
        // whose region the policy admits.
        let inner: Vec<usize> = (0..n)
            .filter_map(|pc| node(&prog, pc, None))
            .flat_map(|c| [c.taken, c.fall])
            .filter(|&to| node(&prog, to, None).is_some())
            .collect();
        for pc in 0..n {
            let admitted = node(&prog, pc, None).is_some()
                && !inner.contains(&pc)
                && region(&prog, pc, &mut Work { left: MAX_WORK }).is_ok_and(|r| {
                    let cuts = cuts_of(&r);
                    intervals_of(&r, pc, &cuts, Merge::ByPc, &mut Work { left: MAX_WORK }).is_ok_and(|(iv, steps)| {
                        let dense = Built::<usize>::default().dense_below(&iv);
                        let dense_cuts = cuts.iter().filter(|&&c| c < dense).count();
                        let (depth, branches, cuts) = (longest_path(&r), branches(&r), cuts.len());
                        policy.admits(Shape { depth, branches, steps, cuts, dense_cuts, intervals: iv.len() })
                    })
                });
            assert_eq!(trees.roots().contains(&pc), admitted, "case {case} pc {pc} {policy:?}\n{prog:?}");
        }
    }
    assert!(tables > 300, "only {tables} tables");
    assert!(reloading > 50, "only {reloading} tables through a reload");
}

#[test]
fn shared_nodes_and_ja_trampolines_walk_the_same() {
    // Two subtrees share node 6 (through `ja`s at 4 and 5).
    let prog = Prog(vec![
        Insn::Cmp(Cond::Gt, 100, 2, 1),          // 0
        Insn::Cmp(Cond::Eq, 7, 9, 4),            // 1
        Insn::Cmp(Cond::Ge, 200, 5, 3),          // 2
        Insn::Cmp(Cond::Eq, 150, 10, 5),         // 3
        Insn::Ja(6),                             // 4
        Insn::Ja(4),                             // 5
        Insn::Cmp(Cond::Gt, 0xffff_ffff, 9, 7),  // 6: never true
        Insn::Cmp(Cond::Ge, 0, 8, 9),            // 7: always true
        Insn::Cmp(Cond::Eq, 0xffff_ffff, 9, 10), // 8
        Insn::Other,                             // 9
        Insn::Other,                             // 10
    ]);
    let trees = prog.trees();
    assert_eq!(trees.roots(), [0]);
    check(&prog, &trees, &[]);
    assert_eq!(trees.outcome(0, 7), Some(9));
    assert_eq!(trees.outcome(0, 8), Some(10));
    assert_eq!(trees.outcome(0, 150), Some(10));
    assert_eq!(trees.outcome(0, u32::MAX), Some(9));
    assert_eq!(trees.outcome(0, u32::MAX - 1), Some(10));
}

#[test]
fn shallow_regions_and_set_tests_get_no_table() {
    // The depth rule alone.
    let depth = Policy { min_depth: MIN_DEPTH, min_branches: 1, search_margin: None };
    // Three compares deep: kept as chains.
    let three = Prog(vec![
        Insn::Cmp(Cond::Ge, 10, 2, 1),
        Insn::Cmp(Cond::Eq, 1, 3, 3),
        Insn::Cmp(Cond::Eq, 11, 3, 3),
        Insn::Cmp(Cond::Eq, 12, 4, 4),
        Insn::Other,
    ]);
    // pc 0 reaches depth 3, pc 3 is not a root (pc 1 goes to it).
    assert!(three.trees_with(depth).is_empty());
    assert_eq!(three.trees().roots(), [0]);
    // A `&` test ends the region: 4 compares, but one is a `jset`.
    let set = Prog(vec![
        Insn::Cmp(Cond::Ge, 10, 1, 1),
        Insn::Cmp(Cond::Ge, 11, 2, 2),
        Insn::Cmp(Cond::Set, 12, 3, 3),
        Insn::Cmp(Cond::Ge, 13, 4, 4),
        Insn::Other,
    ]);
    // pc 3 is a root of depth 1; pc 0 reaches depth 2.
    let trees = set.trees_with(depth);
    assert!(trees.is_empty(), "{}", trees.listing(|t| t.to_string()));
    // Exactly MIN_DEPTH compares: a table.
    let four = Prog(
        (0..MIN_DEPTH)
            .map(|i| Insn::Cmp(Cond::Gt, i as u64, i + 1, if i == 0 { 2 } else { MIN_DEPTH + 1 }))
            .chain([Insn::Other, Insn::Other])
            .collect(),
    );
    assert_eq!(four.trees_with(depth).roots(), [0]);
    check(&four, &four.trees_with(depth), &[]);
}

/// A balanced tree over `keys` (as [`bst`]) from pc 0, then its two
/// outcomes.
fn bst_prog(keys: &[u32]) -> Prog {
    let n = 2 * keys.len() - 1;
    let mut insns = Vec::new();
    bst(keys, 0, n, n + 1, &mut insns);
    insns.extend([Insn::Other, Insn::Other]);
    Prog(insns)
}

#[test]
fn the_measured_policy_drops_a_sparse_balanced_tree_of_large_values() {
    // 64 sparse keys past any direct table: 129 intervals (256 entries, 8
    // search steps), a walk of 7 compares to every one: the walk is
    // cheaper than 8 + margin.
    let keys: Vec<u32> = (0..64).map(|i| 0x10_0000 + 3 * i + 1).collect();
    let prog = bst_prog(&keys);
    assert!(prog.trees_with(Policy::default()).is_empty());
    // The margin decides: without it, a table.
    let no_margin = Policy { search_margin: None, ..Policy::default() };
    assert_eq!(prog.trees_with(no_margin).roots(), [0]);
    assert_eq!(prog.trees().intervals(0).count(), 129);
    assert_eq!(prog.trees().directs[0].len, 0);
    assert!(!prog.trees().direct(0));
}

#[test]
fn small_values_are_looked_up_directly() {
    // The same tree over small values (a syscall tree): all but the last
    // interval's values have direct entries, one step each, so the
    // measured policy keeps it (Chromium's tree, mean walk 7.1: 14.5 ns
    // mix searched, 10.9 direct).
    let keys: Vec<u32> = (0..64).map(|i| 3 * i + 1).collect();
    let prog = bst_prog(&keys);
    let trees = prog.trees_with(Policy::default());
    assert_eq!(trees.roots(), [0]);
    let last = 3 * 63 + 2;
    assert_eq!(trees.directs[0].len, last);
    assert!(trees.direct(0) && !trees.direct(1));
    assert!(trees
        .listing(|t| t.to_string())
        .starts_with(&format!("tree #0 @0: 129 intervals, direct below {last:#x}\n")));
    let every: Vec<u32> = (0..last + 8).collect();
    check(&prog, &trees, &every);
    // Rewriting the outcomes rewrites the direct entries too.
    let mut moved = prog.trees();
    for t in moved.outcomes_mut() {
        *t += 1000;
    }
    for x in every {
        assert_eq!(moved.outcome(0, x), Some(prog.run(0, x) + 1000), "x={x}");
    }
}

#[test]
fn direct_tables_end_at_a_start_within_their_bytes() {
    // Keys around the end of what DENSE_BYTES holds of `usize` outcomes:
    // the direct table ends at the last interval start within it; values
    // from there on search.
    let fits = (DENSE_BYTES / std::mem::size_of::<usize>()) as u32;
    let keys: Vec<u32> = (0..8).map(|i| fits - 8 + 3 * i).collect();
    let prog = bst_prog(&keys);
    let trees = prog.trees();
    let dense = trees.directs[0].len;
    assert!(dense <= fits && dense + 3 > fits, "{dense} of {fits}");
    assert!(trees.intervals(0).any(|(lo, _)| lo == dense));
    check(&prog, &trees, &(fits - 20..fits + 20).collect::<Vec<_>>());
    // A table of fewer than DENSE_MIN_LEN entries only searches: 4
    // intervals, two steps.
    let few = Prog(vec![
        Insn::Cmp(Cond::Ge, 10, 1, 2),
        Insn::Cmp(Cond::Gt, 20, 3, 4),
        Insn::Cmp(Cond::Gt, 5, 3, 4),
        Insn::Other,
        Insn::Other,
    ]);
    let trees = few.trees();
    assert_eq!(trees.intervals(0).count(), 4);
    assert_eq!(trees.directs[0].len, 0);
    check(&few, &trees, &(0..30).collect::<Vec<_>>());
}

#[test]
fn the_measured_policy_keeps_a_deep_walk_to_few_intervals() {
    // The same shape over 64 consecutive keys: 2 intervals (2 entries, 1
    // search step) behind a walk of 7 compares (libseccomp's opt2 trees of
    // allow-lists: allow306_opt2, mean walk 9.2 to 3 intervals).
    let keys: Vec<u32> = (100..164).collect();
    let prog = bst_prog(&keys);
    let trees = prog.trees_with(Policy::default());
    assert_eq!(trees.roots(), [0]);
    assert_eq!(trees.intervals(0).count(), 3);
    check(&prog, &trees, &[]);
}

#[test]
fn the_measured_policy_drops_a_chain_split_once() {
    // libseccomp's x32 split in front of allow-lists: `x >= 0x40000000`,
    // then one `==` chain per side, each hit to 81, each miss on to the
    // next, the last to 82.
    let mut insns = vec![Insn::Cmp(Cond::Ge, 0x4000_0000, 41, 1)];
    for side in [0u64, 0x4000_0000] {
        for i in 0..40u64 {
            let next = insns.len() + 1;
            insns.push(Insn::Cmp(Cond::Eq, side + 2 * i + 1, 81, if i == 39 { 82 } else { next }));
        }
    }
    insns.extend([Insn::Other, Insn::Other]);
    let prog = Prog(insns);
    assert!(prog.trees_with(Policy::default()).is_empty());
    // Only MIN_BRANCHES drops it: its walk is long enough to pay.
    let one_branch = Policy { min_branches: 1, ..Policy::default() };
    let trees = prog.trees_with(one_branch);
    assert_eq!(trees.roots(), [0]);
    check(&prog, &trees, &[]);
}

/// The tables of `prog` under `policy`, and the work they cost.
fn built_with_work(policy: Policy, prog: &Prog, pcs: std::ops::Range<usize>) -> (RangeTrees<usize>, usize) {
    RangeTrees::build_merged_work(policy, Merge::ByPc, prog, pcs, |l: Leave| Some(l.pc))
}

/// The largest `n` whose ladder (`2n` cuts, `n` deep) fits
/// [`MAX_REGION_WALK`].
fn largest_walked_ladder() -> usize {
    (1..).take_while(|&n| 2 * n * n <= MAX_REGION_WALK).last().unwrap()
}

#[test]
fn regions_past_the_budgets_keep_their_ops() {
    // MAX_NODES + 1 compares (a balanced tree of 513 keys: shallow, cheap
    // to walk): too big for one region. 1023 compares fit.
    let keys: Vec<u32> = (0..513).map(|i| 2 * i + 1).collect();
    assert_eq!(2 * keys.len() - 1, MAX_NODES + 1);
    assert!(bst_prog(&keys).trees().is_empty());
    let fits = bst_prog(&keys[..512]);
    let trees = fits.trees();
    assert_eq!(trees.roots(), [0]);
    check(&fits, &trees, &[]);
    // A region whose walks may cost more than MAX_REGION_WALK steps (cuts
    // times depth) is not walked: a ladder of n compares has 2n cuts and
    // is n deep.
    let n = largest_walked_ladder();
    assert_eq!(n, 181);
    let walked = Prog(ladder(n, 0));
    let trees = walked.trees();
    assert_eq!(trees.roots(), [0]);
    check(&walked, &trees, &[]);
    let (trees, work) = built_with_work(Policy::EVERY_TREE, &Prog(ladder(n + 1, 0)), 0..n + 2);
    assert!(trees.is_empty());
    assert!(work <= 2 * n + 3, "{work} visits: discovery only");
    // No outcome form for a pc: no table.
    let none: RangeTrees<usize> = RangeTrees::build(&walked, 0..n + 1, |pc| (pc != n).then_some(pc));
    assert!(none.is_empty());
    // A backward edge: no table (classic and converted jumps go forward).
    let mut back = ladder(8, 0);
    assert_eq!(Prog(back.clone()).trees().roots(), [0]);
    back[7] = Insn::Cmp(Cond::Eq, 7, 8, 6);
    assert!(Prog(back).trees().is_empty());
    // Nor a chain that never branches.
    let chain: Vec<Insn> = (0..8).map(|i| Insn::Cmp(Cond::Eq, i, 8, i as usize + 1)).chain([Insn::Other]).collect();
    assert!(Prog(chain).trees().is_empty());
}

/// `count` disjoint balanced trees over 4 `keys` (as [`bst`]: 7 compares),
/// each followed by its two outcomes.
fn disjoint_trees(keys: &[u32; 4], count: usize) -> Prog {
    let mut insns = Vec::new();
    for _ in 0..count {
        let base = insns.len();
        let mut tree = Vec::new();
        bst(keys, base, base + 7, base + 8, &mut tree);
        insns.extend(tree);
        insns.extend([Insn::Other, Insn::Other]);
    }
    Prog(insns)
}

#[test]
fn tables_share_the_entry_budget() {
    // Disjoint balanced trees of 4 keys (7 compares, 9 intervals padded to
    // 16 entries; about 40 visits each, so MAX_WORK is not what stops
    // them): only MAX_ENTRIES / 16 of them get a table.
    let prog = disjoint_trees(&[1, 3, 5, 7], MAX_ENTRIES / 16 + 2);
    let (trees, work) = built_with_work(Policy::EVERY_TREE, &prog, 0..prog.0.len());
    assert_eq!(trees.len(), MAX_ENTRIES / 16);
    assert!(work < MAX_WORK, "{work}");
    assert_eq!(trees.roots()[1], 9);
    assert_eq!(trees.intervals(0).count(), 9);
    assert_eq!(trees.outcome(MAX_ENTRIES / 16 - 1, 3), Some((MAX_ENTRIES / 16 - 1) * 9 + 7));
}

#[test]
fn direct_tables_share_their_budget() {
    // Disjoint trees over keys up to 400: each table's values below 401
    // are direct while the program's MAX_DENSE_ENTRIES last; the tables
    // past it search, and answer alike.
    let count = MAX_DENSE_ENTRIES / 401 + 3;
    let prog = disjoint_trees(&[100, 200, 300, 400], count);
    let trees = prog.trees();
    assert_eq!(trees.len(), count);
    let direct = trees.directs.iter().take_while(|d| d.len == 401).count();
    assert_eq!(direct, MAX_DENSE_ENTRIES / 401);
    assert!(trees.directs.iter().skip(direct).all(|d| d.len == 0));
    assert_eq!(trees.dense.len(), direct * 401);
    for tree in [0, direct - 1, direct, count - 1] {
        let root = trees.roots()[tree];
        for x in (0..420).chain([u32::MAX]) {
            assert_eq!(trees.outcome(tree, x), Some(prog.run(root, x)), "tree {tree} x={x}");
        }
    }
}

/// `count` disjoint ladders of `n` compares.
fn ladders(count: usize, n: usize) -> Prog {
    let mut insns = Vec::new();
    for _ in 0..count {
        let base = insns.len();
        insns.extend(ladder(n, base));
    }
    Prog(insns)
}

#[test]
fn the_work_budget_bounds_every_program() {
    // 22 disjoint ladders just under MAX_REGION_WALK (4004 instructions):
    // each costs about n^2 = 2^15 visits to walk, so MAX_WORK covers only
    // a few; the rest keep their ops.
    let n = largest_walked_ladder();
    let prog = ladders(22, n);
    let (trees, work) = built_with_work(Policy::EVERY_TREE, &prog, 0..prog.0.len());
    assert!((2..8).contains(&trees.len()), "{} trees", trees.len());
    assert!(work <= MAX_WORK, "{work}");
    check(&prog, &trees, &[]);
    let mut work = Work { left: 3 };
    assert_eq!(work.take(3), Ok(()));
    assert_eq!(work.take(1), Err(Skip::Budget));
    assert_eq!(work.left, 0);
}

/// Hostile programs of 4096 instructions, each with the most visits its
/// build may cost under the budgets.
fn hostile() -> Vec<(&'static str, Prog, usize)> {
    let discovery = |n: usize| 2 * n + 1;
    // One ladder DAG of 4095 compares: deeper than MAX_NODES, never
    // discovered.
    let one_ladder = Prog(ladder(4095, 0));
    // An unbalanced `>` chain that branches at every node: spine node i
    // goes to a leaf `==` (leaving to one of two outside pcs) or on.
    let mut chain = Vec::new();
    for i in 0..1023usize {
        let at = chain.len();
        let k = 10 * (1023 - i) as u64;
        chain.push(Insn::Cmp(Cond::Gt, k, at + 1, at + 4));
        chain.push(Insn::Cmp(Cond::Eq, k + 5, at + 2, at + 3));
        chain.extend([Insn::Other, Insn::Other]);
    }
    chain.extend([Insn::Other; 4]);
    // The same 4094 deep, the leaf shared: deeper than MAX_NODES.
    let mut deep: Vec<Insn> = (0..4094usize).map(|i| Insn::Cmp(Cond::Gt, 4094 - i as u64, 4094, i + 1)).collect();
    deep.extend([Insn::Cmp(Cond::Eq, 7, 4095, 4096), Insn::Other]);
    // Maximal sharing: every compare goes to the next two, constants all
    // distinct.
    let shared: Vec<Insn> = (0..4094usize)
        .map(|i| {
            let cond = if i % 2 == 0 { Cond::Ge } else { Cond::Gt };
            Insn::Cmp(cond, (i as u64 * 2_654_435_761) & 0xffff, i + 2, i + 1)
        })
        .chain([Insn::Other, Insn::Other])
        .collect();
    // Many roots into one big shared tail: 1024 roots (each `== r`, on to
    // the tail either way), then a ladder of 1024: each root's region is
    // too big, found after discovering MAX_NODES + 1 compares.
    let tail = 1024 * 2;
    let mut roots = Vec::new();
    for r in 0..1024u64 {
        roots.extend([Insn::Cmp(Cond::Eq, r, tail, tail + 1), Insn::Other]);
    }
    roots.extend(ladder(1024, tail));
    vec![
        ("one ladder of 4095", one_ladder, 0),
        ("unbalanced > chain, a leaf per node", Prog(chain), discovery(MAX_NODES + 1)),
        ("unbalanced > chain, 4094 deep", Prog(deep), 0),
        ("maximal sharing", Prog(shared), 0),
        ("ladders of 1023", ladders(4, 1023), 4 * discovery(1023)),
        ("ladders of 255", ladders(16, 255), 16 * discovery(255)),
        ("roots into a shared tail", Prog(roots), MAX_WORK),
        ("ladders just under the walk cap", ladders(22, largest_walked_ladder()), MAX_WORK),
    ]
}

#[test]
fn hostile_programs_cost_bounded_work() {
    for (name, prog, most) in hostile() {
        assert!(prog.0.len() <= 4096, "{name}: {} instructions", prog.0.len());
        let (trees, work) = built_with_work(Policy::EVERY_TREE, &prog, 0..prog.0.len());
        assert!(work <= most, "{name}: {work} visits, more than {most}");
        check(&prog, &trees, &[]);
        // The measured policy costs no more.
        let (_, measured) = built_with_work(Policy::default(), &prog, 0..prog.0.len());
        assert!(measured <= most, "{name}: {measured} visits under the measured policy");
    }
}

#[test]
fn outcomes_can_be_rewritten() {
    let keys: Vec<u32> = (0..16).collect();
    let mut insns = Vec::new();
    bst(&keys, 0, 31, 32, &mut insns);
    insns.extend([Insn::Other, Insn::Other]);
    let prog = Prog(insns);
    let mut trees = prog.trees();
    for t in trees.outcomes_mut() {
        *t += 100;
    }
    assert_eq!(trees.outcome(0, 3), Some(131));
    assert_eq!(trees.outcome(0, 20), Some(132));
}

#[test]
fn the_policy_counts_a_direct_cut_as_one_step() {
    // Ten cuts, a table of 9 intervals (16 entries: 4 search steps), the
    // margin 2: a direct cut costs 1 + 2, a searched one 4 + 2.
    let shape = |steps, dense_cuts| Shape { depth: 5, branches: 2, steps, cuts: 10, dense_cuts, intervals: 9 };
    let policy = Policy::default();
    assert!(!policy.admits(shape(29, 10)));
    assert!(policy.admits(shape(30, 10)));
    assert!(!policy.admits(shape(59, 0)));
    assert!(policy.admits(shape(60, 0)));
    assert!(!policy.admits(shape(44, 5)));
    assert!(policy.admits(shape(45, 5)));
}

#[test]
fn direct_tables_start_at_eight_entries_and_fill_their_budget_exactly() {
    // 7 intervals, padded to DENSE_MIN_LEN entries: a direct table.
    let seven = bst_prog(&[1, 3, 5]);
    assert_eq!(seven.trees().intervals(0).count(), 7);
    assert_eq!(seven.trees().directs[0].len, 6);
    // Trees whose direct tables are 1024 entries each (DENSE_BYTES of
    // `usize` outcomes): the first MAX_DENSE_ENTRIES / 1024 fill the
    // budget to the entry, the next searches.
    let fits = DENSE_BYTES / std::mem::size_of::<usize>();
    assert_eq!(fits, 1024);
    let full = MAX_DENSE_ENTRIES / fits;
    let prog = disjoint_trees(&[255, 511, 767, 1023], full + 1);
    let trees = prog.trees();
    assert!(trees.directs.iter().take(full).all(|d| d.len == 1024));
    assert_eq!(trees.directs[full].len, 0);
    assert_eq!(trees.dense.len(), MAX_DENSE_ENTRIES);
}

/// Chromium's head: `jset #0x40000000` (the x32 bit) to a kill, else a
/// syscall tree. With a high `&` test among its compares the region is
/// rooted at the test, one table: the tree's intervals below 2^30, then a
/// block per value of the top two bits.
#[test]
fn a_high_bit_test_before_a_tree_joins_its_table() {
    let keys: Vec<u32> = (0..20).map(|i| i * 5 + 2).collect();
    let n = 2 * keys.len() - 1;
    // pc 0: the test; the tree from pc 1; hit at 1 + n, miss at 2 + n,
    // kill at 3 + n.
    let (hit, miss, kill) = (1 + n, 2 + n, 3 + n);
    let mut insns = vec![Insn::Cmp(Cond::Set, 0x4000_0000, kill, 1)];
    let mut tree = Vec::new();
    bst(&keys, 1, hit, miss, &mut tree);
    insns.extend(tree);
    insns.extend([Insn::Other, Insn::Other, Insn::Other]);
    let prog = Prog(insns);
    let trees = prog.trees();
    assert_eq!(trees.roots(), [0]);
    let intervals: Vec<(u32, usize)> = trees.intervals(0).collect();
    // The tree's 41 intervals, its last (past the last key) cut at 2^30.
    assert_eq!(intervals.len(), 2 * keys.len() + 1 + 3);
    let top = &intervals[intervals.len() - 4..];
    assert_eq!(top, [(keys[19] + 1, miss), (0x4000_0000, kill), (0x8000_0000, miss), (0xc000_0000, kill)]);
    check(&prog, &trees, &[0x3fff_ffff, 0xbfff_ffff, 0x4000_0000 + keys[3]]);
    // The measured policy admits it too, with the tree's direct table.
    let measured = prog.trees_with(Policy::default());
    assert_eq!(measured.roots(), [0]);
    assert!(measured.direct(0));
    check(&prog, &measured, &[0x3fff_ffff, 0xbfff_ffff]);
}

/// A `&` test of a low bit (2^30 blocks) ends the region, as any test
/// outside it: the tree behind it keeps its own root. Likewise a mask one
/// bit too low for [`MAX_SET_BLOCKS`] (bit 27: 32 blocks).
#[test]
fn a_low_bit_test_stays_outside_the_table() {
    let keys: Vec<u32> = (0..20).map(|i| i * 5 + 2).collect();
    let n = 2 * keys.len() - 1;
    let prog = |mask: u64| {
        let mut insns = vec![Insn::Cmp(Cond::Set, mask, 3 + n, 1)];
        let mut tree = Vec::new();
        bst(&keys, 1, 1 + n, 2 + n, &mut tree);
        insns.extend(tree);
        insns.extend([Insn::Other, Insn::Other, Insn::Other]);
        Prog(insns)
    };
    for mask in [0x4, 0x0800_0000, 0xffff_ffff] {
        assert_eq!(prog(mask).trees().roots(), [1], "mask {mask:#x}");
    }
    // Bit 28 is the lowest that joins (16 blocks).
    let prog = prog(0x1000_0000);
    assert_eq!(prog.trees().roots(), [0]);
    assert_eq!(prog.trees().intervals(0).count(), 2 * keys.len() + 1 + 15);
    check(&prog, &prog.trees(), &[]);
}

/// libseccomp's head of an `--opt 2` filter: `ld [0]`, the x32 check
/// (`jge #0x40000000`, then `jeq #-1` or a kill), a reload of the word and
/// the syscall tree. The check's region goes on through the reload: one
/// table that says it answers only from the load; the tree behind keeps a
/// table of its own. A load of another word ends the region.
#[test]
fn a_region_goes_on_through_a_reload_of_its_word() {
    let keys: Vec<u32> = (0..20).map(|i| i * 5 + 2).collect();
    let n = 2 * keys.len() - 1;
    let (hit, miss, kill) = (4 + n, 5 + n, 6 + n);
    let prog = |reload: u8| {
        let mut insns =
            vec![Insn::Ld(0), Insn::Cmp(Cond::Ge, 0x4000_0000, 2, 3), Insn::Cmp(Cond::Eq, 0xffff_ffff, 3, kill)];
        insns.push(Insn::Ld(reload));
        let mut tree = Vec::new();
        bst(&keys, 4, hit, miss, &mut tree);
        insns.extend(tree);
        insns.extend([Insn::Other; 3]);
        Prog(insns)
    };
    let same = prog(0);
    let trees = same.trees();
    assert_eq!(trees.roots(), [1, 4]);
    assert!(trees.needs_load(0));
    assert!(!trees.needs_load(1));
    assert!(!trees.needs_load(2));
    let intervals: Vec<(u32, usize)> = trees.intervals(0).collect();
    assert_eq!(intervals.len(), 2 * keys.len() + 1 + 2);
    let top = &intervals[intervals.len() - 3..];
    assert_eq!(top, [(keys[19] + 1, miss), (0x4000_0000, kill), (0xffff_ffff, miss)]);
    check(&same, &trees, &[0x3fff_ffff, 0xffff_fffe]);
    // Counted: the reload executes (no skip); the walk from the root to a
    // leaf's outcome jumps over what it jumped over before.
    let counted = RangeTrees::build_counted_with(Policy::EVERY_TREE, &same, trees.roots().to_vec(), Some);
    check_counted(&same, &counted, &[0x3fff_ffff, 0xffff_fffe]);
    assert!(counted.needs_load(0));
    // Another word: the check's region ends at the load (and, a chain
    // that never branches, gets no table).
    let other = prog(1);
    assert_eq!(other.trees().roots(), [4]);
    assert!(!other.trees().needs_load(0));
}
