//! Planning a compare tree over ranges of a value (`nr`, `arch`, or a
//! switch's masked word): the fewest conditional jumps with no path longer
//! than a depth bound.
//!
//! Two kinds of node: `jge #b` splits the ranges at a boundary (a balanced
//! search), and a chain of `jeq #k` picks lone values off a background
//! (what libseccomp's linear filters are, and what a lone denied syscall
//! in an allow-list needs: one compare where a split needs two). A
//! dynamic program over the contiguous runs of ranges finds, for each run
//! and depth left, the cheapest mix; runs with a single outcome cost
//! nothing. It is cubic in the ranges, so past [`DP_MAX`] ranges the tree
//! splits in the middle until the parts are small enough, and all the
//! plans of one layout share a budget of work ([`Work`]): past it, every
//! part splits in the middle too, down to parts that are one chain within
//! the depth left (lone values on a background: an allow-list of
//! thousands of argument values costs a compare a value and the splits
//! above its chains).

/// Most ranges planned by the dynamic program at once.
pub const DP_MAX: usize = 192;

/// Levels a plan may add to the balanced tree's `ceil(log2 ranges)`.
pub const DEPTH_SLACK: usize = 2;

/// The split candidates the dynamic programs of one layout may weigh
/// ([`Work`]). Measured (release build, AMD EPYC): a candidate costs about
/// 60 x86 instructions, so the budget is a few tenths of a second. Docker's
/// default profile (testdata/profiles/docker_like) plans 169 and 118
/// ranges in 10.5 million, the most of every testdata filter (Chromium's
/// 4.3 million, the others below 1.3); a generated filter whose `ret A`
/// gives each of its 4471 nr ranges a value of its own
/// (fuzz/regressions/optimize) weighed about 145 million, 1.3 s in
/// `optimize`, before there was a budget: 0.3 s with it.
pub const MAX_DP_WORK: u64 = 1 << 25;

/// What is left of [`MAX_DP_WORK`] for the plans of one layout, and
/// whether a plan found too little (it then split in the middle, as past
/// [`DP_MAX`]: every value still goes where it must, over more compares).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    left: u64,
    spent: bool,
}

impl Default for Work {
    fn default() -> Self {
        Work { left: MAX_DP_WORK, spent: false }
    }
}

impl Work {
    /// Whether some plan split in the middle for want of budget.
    pub fn spent(&self) -> bool {
        self.spent
    }

    /// Takes the work of a dynamic program over `n` ranges within `depth`
    /// levels ([`dp_work`]), if that much is left.
    fn take(&mut self, n: usize, depth: usize) -> bool {
        match self.left.checked_sub(dp_work(n, depth)) {
            Some(left) => {
                self.left = left;
                true
            }
            None => {
                self.spent = true;
                false
            }
        }
    }
}

/// The split candidates the dynamic program over `n` ranges within `depth`
/// levels weighs at most: at each depth from 1, every run of `L >= 2`
/// ranges tries its `L - 1` splits, `(n + 1) n (n - 1) / 6` in all (about
/// `n^3 / 6`); its pruning weighs fewer. The one-pass chains cost `n^2`
/// times the targets, below that.
fn dp_work(n: usize, depth: usize) -> u64 {
    let n = n as u64;
    ((n + 1).saturating_mul(n).saturating_mul(n.saturating_sub(1)) / 6).saturating_mul(depth as u64)
}

/// A planned tree over `(start, target)` ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan<T> {
    /// Every value goes here.
    Leaf(T),
    /// `jge #bound, right, left`.
    Split { bound: u32, left: Box<Plan<T>>, right: Box<Plan<T>> },
    /// `jeq #k` for each exception, in order; the rest go to `background`.
    Chain { background: T, exceptions: Vec<(u32, T)> },
}

/// The plan for `ranges` (ascending starts, neighbours differ, the first
/// at the lowest value): the fewest compares with every path at most
/// `ceil(log2 n) +` [`DEPTH_SLACK`] deep. No ranges: `Leaf(empty)`.
/// `work` is what the layout's plans may still weigh; a plan past it
/// splits in the middle.
pub fn plan<T: Copy + Eq>(ranges: &[(u32, T)], empty: T, work: &mut Work) -> Plan<T> {
    plan_within(ranges, depth_bound(ranges.len()), empty, work, WHOLE)
}

/// How deep a plan of `n` ranges may go: the balanced tree's
/// `ceil(log2 n)` and [`DEPTH_SLACK`].
fn depth_bound(n: usize) -> usize {
    (usize::BITS - n.saturating_sub(1).leading_zeros()) as usize + DEPTH_SLACK
}

/// Where the last range of a whole word ends (exclusive).
const WHOLE: u64 = 1 << 32;

/// [`plan`] of a part whose last range ends before `end`.
fn plan_within<T: Copy + Eq>(ranges: &[(u32, T)], depth: usize, empty: T, work: &mut Work, end: u64) -> Plan<T> {
    match ranges {
        [] => Plan::Leaf(empty),
        [(_, t)] => Plan::Leaf(*t),
        _ if ranges.len() > DP_MAX || depth == 0 || !work.take(ranges.len(), depth) => {
            if let Some(chain) = chain_within(ranges, depth, end) {
                return chain;
            }
            let mid = ranges.len() / 2;
            let (left, right) = ranges.split_at(mid);
            let bound = right.first().map_or(0, |&(b, _)| b);
            Plan::Split {
                bound,
                left: Box::new(plan_within(left, depth.saturating_sub(1), empty, work, u64::from(bound))),
                right: Box::new(plan_within(right, depth.saturating_sub(1), empty, work, end)),
            }
        }
        _ => Dp::new(ranges, depth, empty).plan(0, ranges.len(), depth),
    }
}

/// `ranges` (the last ending before `end`) as one chain of `jeq`s when it
/// is one ([`Dp::chain`]'s rule) with at most `depth` exceptions: where
/// the dynamic program does not plan, a part of lone values on a
/// background (an allow-list of thousands of argument values: 4,001
/// ranges) costs one compare a value rather than the two of splits in the
/// middle. Linear in the ranges, and tried only where a chain could fit
/// (at most `2 * depth + 1` ranges).
fn chain_within<T: Copy + Eq>(ranges: &[(u32, T)], depth: usize, end: u64) -> Option<Plan<T>> {
    if ranges.len() > 2 * depth + 1 {
        return None;
    }
    let mut scan = ChainScan::default();
    let mut chain = None;
    for (r, &(_, t)) in ranges.iter().enumerate() {
        chain = scan.push(t, width(ranges, r, end) > 1);
    }
    let (background, k) = chain?;
    (k as usize <= depth).then(|| Plan::Chain {
        background,
        exceptions: ranges.iter().copied().filter(|&(_, t)| t != background).collect(),
    })
}

/// The balanced split of `ranges`, in the middle at every level (what a
/// run the dynamic program finds no plan for within its depth gets).
fn halved<T: Copy + Eq>(ranges: &[(u32, T)], empty: T) -> Plan<T> {
    plan_within(ranges, 0, empty, &mut Work { left: 0, spent: false }, WHOLE)
}

/// `(compares, depth)` of the cheapest plan of a run, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Chain,
    Split(usize),
    Impossible,
}

struct Dp<'r, T> {
    ranges: &'r [(u32, T)],
    empty: T,
    /// `memo[(i * (n + 1) + j) * (depth + 1) + d]`: cost, depth used, how.
    memo: Vec<Option<(u32, u32, Choice)>>,
    /// `chains[i * (n + 1) + j]`: [`Dp::chain`] of the run `i..j`, for
    /// every run, found in one pass per `i` ([`chains`]).
    chains: Vec<Option<(T, u32)>>,
    n: usize,
    depth: usize,
}

impl<'r, T: Copy + Eq> Dp<'r, T> {
    fn new(ranges: &'r [(u32, T)], depth: usize, empty: T) -> Self {
        let n = ranges.len();
        let chains = chains(ranges);
        Dp { ranges, empty, memo: vec![None; (n + 1) * (n + 1) * (depth + 1)], chains, n, depth }
    }

    /// The background of a chain over ranges `i..j` and its exceptions'
    /// count: every range of more than one value must be the background;
    /// with none, the most common target is (ties: the one seen last).
    fn chain(&self, i: usize, j: usize) -> Option<(T, u32)> {
        self.chains.get(i * (self.n + 1) + j).copied().flatten()
    }

    fn slot(&self, i: usize, j: usize, d: usize) -> usize {
        (i * (self.n + 1) + j) * (self.depth + 1) + d
    }

    /// `(compares, depth used, how)` of the cheapest plan of `i..j` within
    /// `d` levels.
    fn best(&mut self, i: usize, j: usize, d: usize) -> (u32, u32, Choice) {
        let slot = self.slot(i, j, d);
        if let Some(Some(known)) = self.memo.get(slot) {
            return *known;
        }
        // A lone range is a chain of no exceptions: a leaf.
        let mut best = match self.chain(i, j) {
            Some((_, k)) if k as usize <= d => (k, k, Choice::Chain),
            _ => (u32::MAX, u32::MAX, Choice::Impossible),
        };
        if d > 0 {
            for m in (i..j).skip(1) {
                let (lc, ld, l) = self.best(i, m, d - 1);
                // A left part as costly as the best so far cannot win.
                if l == Choice::Impossible || lc >= best.0 {
                    continue;
                }
                let (rc, rd, r) = self.best(m, j, d - 1);
                if r == Choice::Impossible {
                    continue;
                }
                let cand = (1 + lc + rc, 1 + ld.max(rd), Choice::Split(m));
                if (cand.0, cand.1) < (best.0, best.1) {
                    best = cand;
                }
            }
        }
        if let Some(s) = self.memo.get_mut(slot) {
            *s = Some(best);
        }
        best
    }

    fn plan(&mut self, i: usize, j: usize, d: usize) -> Plan<T> {
        match self.best(i, j, d).2 {
            Choice::Split(m) => Plan::Split {
                bound: self.ranges.get(m).map_or(0, |&(b, _)| b),
                left: Box::new(self.plan(i, m, d.saturating_sub(1))),
                right: Box::new(self.plan(m, j, d.saturating_sub(1))),
            },
            Choice::Chain => match self.chain(i, j) {
                Some((background, 0)) => Plan::Leaf(background),
                Some((background, _)) => Plan::Chain {
                    background,
                    exceptions: (i..j)
                        .filter_map(|r| self.ranges.get(r).copied())
                        .filter(|&(_, t)| t != background)
                        .collect(),
                },
                None => halved(self.ranges.get(i..j).unwrap_or_default(), self.empty),
            },
            // Never chosen for a run the balanced split fits in `d`.
            Choice::Impossible => halved(self.ranges.get(i..j).unwrap_or_default(), self.empty),
        }
    }
}

/// Every run's chain ([`Dp::chain`]): for each start `i`, the runs `i..j`
/// in growing `j`, each range updating the counts of its target, so all
/// `n^2 / 2` runs cost `O(n^2 * targets)` rather than a scan each (a
/// filter of thousands of lone values, 192 ranges a plan, made that scan
/// the whole of `optimize`'s time: seconds).
fn chains<T: Copy + Eq>(ranges: &[(u32, T)]) -> Vec<Option<(T, u32)>> {
    let n = ranges.len();
    let mut out = vec![None; (n + 1) * (n + 1)];
    for i in 0..n {
        let mut scan = ChainScan::default();
        for (r, &(_, t)) in ranges.iter().enumerate().skip(i) {
            if let Some(slot) = out.get_mut(i * (n + 1) + r + 1) {
                *slot = scan.push(t, width(ranges, r, WHOLE) > 1);
            }
        }
    }
    out
}

/// How many values range `r` of `ranges` holds (the last to `end`).
fn width<T>(ranges: &[(u32, T)], r: usize, end: u64) -> u64 {
    let start = ranges.get(r).map_or(0, |&(s, _)| u64::from(s));
    let next = ranges.get(r + 1).map_or(end, |&(s, _)| u64::from(s));
    next.saturating_sub(start)
}

/// A run of ranges read as a chain one range at a time ([`Dp::chain`]'s
/// rule): every range of more than one value must be the background; with
/// none, the most common target is (ties: the one seen last).
struct ChainScan<T> {
    /// Per target: how many ranges of the run go there.
    counts: Vec<(T, u32)>,
    /// The first wide range's target, and whether another wide range goes
    /// elsewhere (then no longer run is a chain).
    wide: Option<T>,
    conflict: bool,
    /// The most common target, the latest seen among equals: the range
    /// just added is the latest, so it wins any tie it makes.
    common: Option<(T, u32)>,
    len: u32,
}

impl<T> Default for ChainScan<T> {
    fn default() -> Self {
        ChainScan { counts: Vec::new(), wide: None, conflict: false, common: None, len: 0 }
    }
}

impl<T: Copy + Eq> ChainScan<T> {
    /// Adds a range going to `t` (`wide`: of more than one value): the
    /// run's chain so far, its background and exception count.
    fn push(&mut self, t: T, wide: bool) -> Option<(T, u32)> {
        self.len += 1;
        let count = match self.counts.iter_mut().find(|(u, _)| *u == t) {
            Some((_, c)) => {
                *c += 1;
                *c
            }
            None => {
                self.counts.push((t, 1));
                1
            }
        };
        if self.common.is_none_or(|(_, best)| count >= best) {
            self.common = Some((t, count));
        }
        if wide {
            match self.wide {
                None => self.wide = Some(t),
                Some(b) if b != t => self.conflict = true,
                Some(_) => {}
            }
        }
        match (self.conflict, self.wide) {
            (true, _) => None,
            (false, Some(b)) => {
                let of_b = self.counts.iter().find(|(u, _)| *u == b).map_or(0, |&(_, c)| c);
                Some((b, self.len - of_b))
            }
            (false, None) => self.common.map(|(b, c)| (b, self.len - c)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use test_data::rng::Rng;

    use super::*;

    /// The target of `v` under a plan.
    fn walk<T: Copy>(plan: &Plan<T>, v: u32) -> T {
        match plan {
            Plan::Leaf(t) => *t,
            Plan::Split { bound, left, right } => walk(if v >= *bound { right } else { left }, v),
            Plan::Chain { background, exceptions } => {
                exceptions.iter().find(|&&(k, _)| k == v).map_or(*background, |&(_, t)| t)
            }
        }
    }

    fn cost<T>(plan: &Plan<T>) -> (usize, usize) {
        match plan {
            Plan::Leaf(_) => (0, 0),
            Plan::Split { left, right, .. } => {
                let (l, r) = (cost(left), cost(right));
                (1 + l.0 + r.0, 1 + l.1.max(r.1))
            }
            Plan::Chain { exceptions, .. } => (exceptions.len(), exceptions.len()),
        }
    }

    fn target_of(ranges: &[(u32, u32)], v: u32) -> u32 {
        ranges.iter().rev().find(|&&(s, _)| s <= v).unwrap().1
    }

    #[test]
    fn plans_keep_every_value_and_the_depth_bound() {
        // An allow-list (ALLOW = 1) of scattered numbers on KILL (0), a lone
        // denied one inside a run, and a few wide ranges.
        let allowed =
            |v: u32| (v < 60 && v != 40) || [63u32, 65, 70, 71, 90, 100, 101, 102, 200, 250, 299].contains(&v);
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for v in 0..400u32 {
            let t = u32::from(allowed(v));
            if ranges.last().is_none_or(|&(_, last)| last != t) {
                ranges.push((v, t));
            }
        }
        ranges.push((0x4000_0000, 2));
        let plan = plan(&ranges, 9, &mut Work::default());
        let (compares, depth) = cost(&plan);
        let n = ranges.len();
        let bound = (usize::BITS - (n - 1).leading_zeros()) as usize + DEPTH_SLACK;
        assert!(depth <= bound, "{depth} > {bound}");
        // Fewer compares than the balanced tree's n - 1.
        assert!(compares < n - 1, "{compares} of {}", n - 1);
        for &(s, _) in &ranges {
            for v in [s.wrapping_sub(1), s, s.wrapping_add(1)] {
                assert_eq!(walk(&plan, v), target_of(&ranges, v), "value {v}");
            }
        }
    }

    #[test]
    fn large_inputs_split_in_the_middle_then_plan() {
        let ranges: Vec<(u32, u32)> = (0..1000u32).map(|i| (i * 3, i % 3)).collect();
        let plan = plan(&ranges, 9, &mut Work::default());
        for v in 0..3100 {
            assert_eq!(walk(&plan, v), target_of(&ranges, v), "value {v}");
        }
    }

    /// The plans of one layout share [`MAX_DP_WORK`]: once it is spent, a
    /// plan splits in the middle (the balanced tree, `n - 1` compares)
    /// where its dynamic program would have found fewer compares, and
    /// every value still goes where it must. Without a budget a filter
    /// whose `ret A` gave each of 4471 nr ranges a value of its own cost
    /// `optimize` 1.3 s (fuzz/regressions/optimize).
    #[test]
    fn a_spent_budget_splits_in_the_middle_and_keeps_every_value() {
        // An allow-list (1) of every third number on KILL (0): a chain
        // of lone values, about half the balanced tree's compares.
        let ranges: Vec<(u32, u32)> = (0..120u32).map(|i| (i, u32::from(i % 3 == 0))).collect();
        let (n, depth) = (ranges.len(), 7 + DEPTH_SLACK);
        let mut full = Work::default();
        let planned = plan(&ranges, 9, &mut full);
        assert!(!full.spent());
        assert_eq!(full.left, MAX_DP_WORK - dp_work(n, depth));
        // A budget one short of this plan's work, and one that a first plan
        // spent: both split in the middle.
        let mut short = Work { left: dp_work(n, depth) - 1, spent: false };
        let halved_once = plan(&ranges, 9, &mut short);
        assert!(short.spent());
        let mut shared = Work { left: dp_work(n, depth), spent: false };
        assert_eq!(plan(&ranges, 9, &mut shared), planned);
        assert!(!shared.spent());
        let halved_twice = plan(&ranges, 9, &mut shared);
        assert!(shared.spent());
        for halved in [&halved_once, &halved_twice] {
            // The halves may still be planned from what is left: fewer
            // compares than the balanced tree is allowed, not more.
            let (planned_compares, _) = cost(&planned);
            let (compares, tree_depth) = cost(halved);
            assert!(compares > planned_compares, "{compares} <= {planned_compares}");
            assert!(compares < n && tree_depth <= depth, "{compares}, depth {tree_depth}");
            for v in 0..130 {
                assert_eq!(walk(halved, v), target_of(&ranges, v), "value {v}");
            }
        }
    }

    /// Past the budget (and past [`DP_MAX`]), a part that is lone values on
    /// a background is a chain once it fits the depth left: 2,000 lone
    /// values (4,001 ranges) cost one compare a value and the splits above
    /// the chains, not the balanced tree's 4,000, within the same depth
    /// bound; every value still goes where it must.
    #[test]
    fn past_the_budget_lone_values_become_chains() {
        let mut ranges: Vec<(u32, u32)> = vec![(0, 0)];
        for i in 1..=2000u32 {
            ranges.extend([(10 * i, 1), (10 * i + 1, 0)]);
        }
        let n = ranges.len();
        let mut spent = Work { left: 0, spent: false };
        let plan = plan(&ranges, 9, &mut spent);
        let (compares, depth) = cost(&plan);
        let bound = (usize::BITS - (n - 1).leading_zeros()) as usize + DEPTH_SLACK;
        assert!(depth <= bound, "{depth} > {bound}");
        // 2,000 `jeq`s and the 511 splits above 512 chains of about four
        // (the balanced tree: 4,000; chains that took a part's last range
        // for a wide one: 3,220).
        assert!(compares <= 2000 + 512, "{compares}");
        for v in 0..20_020 {
            assert_eq!(walk(&plan, v), target_of(&ranges, v), "value {v}");
        }
    }

    /// Up to `most` pseudo-random ranges from 0, neighbours differing: lone
    /// values and wide ranges, 1 to 4 targets (ties for the most common
    /// included).
    fn random_ranges(rng: &mut Rng, most: usize) -> Vec<(u32, u32)> {
        let n = 1 + rng.below(most);
        let targets = 1 + rng.below(4);
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        let mut start = 0u32;
        for _ in 0..n {
            let t = rng.below(targets) as u32;
            if ranges.last().is_some_and(|&(_, last)| last == t) {
                continue;
            }
            ranges.push((start, t));
            start += if rng.below(3) == 0 { 2 + rng.below(5) as u32 } else { 1 };
        }
        ranges
    }

    /// The seed of the range lists of every test here.
    const SEED: u64 = 0x2545_f491_4f6c_dd1d;

    /// The cheapest `(compares, depth)` of a plan of the run `i..j` within
    /// `d` levels, by plain recursion over every plan: the run's chain
    /// ([`chain_by_scan`], a lone range's costing nothing) if it fits, or
    /// a split anywhere, one compare and one level above its halves. What
    /// [`Dp::best`] must find, memo and pruning aside.
    fn cheapest(ranges: &[(u32, u32)], i: usize, j: usize, d: usize) -> Option<(usize, usize)> {
        let chain = chain_by_scan(ranges, i, j).map(|(_, k)| (k as usize, k as usize)).filter(|&(k, _)| k <= d);
        let splits = (i + 1..j).filter(|_| d > 0).filter_map(|m| {
            let (l, r) = (cheapest(ranges, i, m, d - 1)?, cheapest(ranges, m, j, d - 1)?);
            Some((1 + l.0 + r.0, 1 + l.1.max(r.1)))
        });
        chain.into_iter().chain(splits).min()
    }

    /// The dynamic program against every plan, on small random range lists
    /// at every depth from none to past the bound: the same cheapest
    /// `(compares, depth)` (or none within the depth), a plan that has them
    /// and sends every value where it must; and [`plan`] is the cheapest
    /// within [`depth_bound`].
    #[test]
    fn the_dynamic_program_finds_the_cheapest_plan() {
        let mut rng = Rng(SEED);
        let (mut runs, mut impossible) = (0, 0);
        for _ in 0..300 {
            let ranges = random_ranges(&mut rng, 12);
            let n = ranges.len();
            for d in 0..=depth_bound(n) + 1 {
                let mut dp = Dp::new(&ranges, d, 99);
                let (compares, depth, how) = dp.best(0, n, d);
                let expected = cheapest(&ranges, 0, n, d);
                if how == Choice::Impossible {
                    assert_eq!(expected, None, "{ranges:?} within {d}");
                    impossible += 1;
                    continue;
                }
                assert_eq!(Some((compares as usize, depth as usize)), expected, "{ranges:?} within {d}");
                let planned = dp.plan(0, n, d);
                assert_eq!(cost(&planned), (compares as usize, depth as usize), "{planned:?}");
                for &(s, _) in &ranges {
                    for v in [s.wrapping_sub(1), s, s + 1] {
                        assert_eq!(walk(&planned, v), target_of(&ranges, v), "{ranges:?} within {d}: {v}");
                    }
                }
                runs += 1;
            }
            let planned = plan(&ranges, 99, &mut Work::default());
            assert_eq!(Some(cost(&planned)), cheapest(&ranges, 0, n, depth_bound(n)), "{ranges:?}");
        }
        assert!(runs > 1000 && impossible > 100, "{runs} planned, {impossible} impossible");
    }

    /// `ceil(log2 n)` levels, the balanced tree's, and the slack.
    #[test]
    fn the_depth_bound_is_the_balanced_trees_and_the_slack() {
        for n in 0..=4097usize {
            let balanced = (0..).find(|&b| 1usize << b >= n).unwrap();
            assert_eq!(depth_bound(n), balanced + DEPTH_SLACK, "{n}");
        }
    }

    /// [`dp_work`] is the candidates the dynamic program weighs without
    /// pruning, counted: at each depth from 1, the `n - L + 1` runs of
    /// each length `L >= 2` try `L - 1` splits each.
    #[test]
    fn the_work_of_a_plan_counts_its_candidates() {
        for n in 0..=DP_MAX as u64 {
            let splits: u64 = (2..=n).map(|l| (n - l + 1) * (l - 1)).sum();
            for depth in 0..=12 {
                assert_eq!(dp_work(n as usize, depth), splits * depth as u64, "{n} ranges within {depth}");
            }
        }
    }

    /// No ranges is the empty target's leaf, and a lone range (where a tree
    /// split in the middle ends) its target's leaf, never a chain of no
    /// exceptions.
    #[test]
    fn no_ranges_and_lone_ranges_are_leaves() {
        let mut spent = Work { left: 0, spent: true };
        assert_eq!(plan::<u32>(&[], 7, &mut Work::default()), Plan::Leaf(7));
        assert_eq!(plan::<u32>(&[], 7, &mut spent), Plan::Leaf(7));
        assert_eq!(plan(&[(0, 3)], 7, &mut spent), Plan::Leaf(3));
        let leaf = |t| Box::new(Plan::Leaf(t));
        assert_eq!(halved(&[(0, 1), (5, 2)], 7), Plan::Split { bound: 5, left: leaf(1), right: leaf(2) });
        assert_eq!(
            halved(&[(0, 1), (5, 2), (9, 1)], 7),
            Plan::Split {
                bound: 5,
                left: leaf(1),
                right: Box::new(Plan::Split { bound: 9, left: leaf(2), right: leaf(1) })
            }
        );
    }

    /// Past the budget, a part of exactly `2 * depth + 1` ranges, `depth`
    /// lone values on a background, is one chain; one more exception, or a
    /// level less, and it splits in the middle.
    #[test]
    fn a_part_of_as_many_lone_values_as_levels_left_is_a_chain() {
        for depth in 1..=6u32 {
            let mut ranges = vec![(0u32, 0u32)];
            for i in 1..=depth {
                ranges.extend([(10 * i, 1), (10 * i + 1, 0)]);
            }
            let spent = || Work { left: 0, spent: true };
            let exceptions: Vec<(u32, u32)> = (1..=depth).map(|i| (10 * i, 1)).collect();
            let chain = Plan::Chain { background: 0, exceptions };
            let d = depth as usize;
            assert_eq!(plan_within(&ranges, d, 9, &mut spent(), WHOLE), chain, "depth {depth}");
            assert!(matches!(plan_within(&ranges, d - 1, 9, &mut spent(), WHOLE), Plan::Split { .. }), "depth {depth}");
            ranges.extend([(10 * depth + 5, 1), (10 * depth + 6, 0)]);
            let longer = plan_within(&ranges, d, 9, &mut spent(), WHOLE);
            assert!(matches!(longer, Plan::Split { .. }), "depth {depth}: {longer:?}");
        }
    }

    /// Past [`DP_MAX`] ranges a tree splits in the middle before any
    /// dynamic program, budget or not; at [`DP_MAX`] the dynamic program
    /// plans the whole (here: a split nearer the start).
    #[test]
    fn past_dp_max_ranges_the_tree_splits_in_the_middle() {
        let lone_values = |n: u32| -> Vec<(u32, u32)> {
            (0..n).map(|i| (if i % 2 == 0 { 10 * i } else { 10 * i - 9 }, i % 2)).collect()
        };
        let at_most = lone_values(DP_MAX as u32);
        let whole = Dp::new(&at_most, depth_bound(DP_MAX), 9).plan(0, DP_MAX, depth_bound(DP_MAX));
        let Plan::Split { bound, .. } = whole else { panic!("{whole:?}") };
        assert_ne!(bound, at_most[DP_MAX / 2].0);
        assert_eq!(plan(&at_most, 9, &mut Work::default()), whole);
        let past = lone_values(DP_MAX as u32 + 1);
        let mid = past.len() / 2;
        let mut work = Work::default();
        let Plan::Split { bound, .. } = plan(&past, 9, &mut work) else { panic!() };
        assert_eq!(bound, past[mid].0);
        assert!(!work.spent());
    }

    /// [`Dp::chain`] by its definition, one scan of the run: what
    /// [`chains`] must equal for every run.
    fn chain_by_scan(ranges: &[(u32, u32)], i: usize, j: usize) -> Option<(u32, u32)> {
        let width = |r: usize| {
            let end = ranges.get(r + 1).map_or(1u64 << 32, |&(s, _)| u64::from(s));
            end - u64::from(ranges[r].0)
        };
        let target = |r: usize| ranges[r].1;
        let background = match (i..j).find(|&r| width(r) > 1).map(target) {
            Some(b) if (i..j).any(|r| width(r) > 1 && target(r) != b) => return None,
            Some(b) => b,
            None => {
                let count = |t: u32| (i..j).filter(|&r| target(r) == t).count();
                // `max_by_key` keeps the last of equal maxima.
                (i..j).map(target).max_by_key(|&t| count(t))?
            }
        };
        Some((background, (i..j).filter(|&r| target(r) != background).count() as u32))
    }

    #[test]
    fn the_one_pass_chains_equal_a_scan_of_every_run() {
        // Deterministic pseudo-random range lists: lone values and wide
        // ranges, 1 to 4 targets (ties for the most common target
        // included), lengths up to 40.
        let mut rng = Rng(SEED);
        let mut checked = 0;
        for _ in 0..400 {
            let ranges = random_ranges(&mut rng, 40);
            let table = chains(&ranges);
            let m = ranges.len();
            for i in 0..m {
                for j in i + 1..=m {
                    assert_eq!(table[i * (m + 1) + j], chain_by_scan(&ranges, i, j), "{ranges:?} {i}..{j}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }
}
