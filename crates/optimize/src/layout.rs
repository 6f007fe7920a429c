//! Code generation: a [`Partition`] laid out as one classic program.
//!
//! ```text
//! ld [4]                          arch dispatch (only if the filter loads arch)
//! jeq #ARCH_1, block_1, next      one per arch, in the filter's order;
//! ...                             the last one's false edge: other arches
//!                                 (more than 4 arches: a tree like nr's)
//! block_i: ld [0]                 nr dispatch of one arch
//!          jge #b, right, left    a balanced tree over the range starts
//!          jeq #k, in, out        (a lone number between two equal ranges)
//!          ...                    leaves: `ret #K` or a residual's entry
//! residuals                       each after the last block that uses it
//! ```
//!
//! The program is built from its end ("reverse emission"), so every jump
//! target exists when the jump is written and its distance is known. A
//! conditional jump whose target is more than 255 instructions away gets a
//! landing right after it: a copy of the `ret #K` it wants, or a `ja` (32-bit
//! reach) to the block or residual; later jumps in reach reuse the nearest
//! landing. Only `ld [0]`, `ld [4]`, `jeq`/`jge #k`, `ja` and `ret #k` lie on
//! the way to a constant leaf: the shapes `seccomp_is_const_allow()` follows.
//!
//! A residual expects what a filter finds at its start: A = X = 0. The
//! dispatch never writes X; a residual that reads A before writing it
//! ([`PartitionResidual::reads_a`]) is entered through `ld #0`.
//!
//! A residual grown into a tree ([`Switch`]) is laid out as the tree when
//! that is no longer than the residual, or always when depth is preferred
//! ([`Prefer`], [`Choice`]): per switch `ld [k]`,
//! then `jset #bits` for a two-run split of masked bits (`(w & m) >= 2^j`
//! is `w & (m >> j << j) != 0`), else `and #m` (unless the mask is the
//! whole word) and the same balanced tree of `jge`/`jeq` as `nr`'s over
//! the run starts; children after their parent.

use std::collections::{HashMap, HashSet};

use cbpf::opcode::{ALU_AND_K, JMP_JA, JMP_JEQ_K, JMP_JGE_K, JMP_JSET_K, LDX_IMM, LD_IMM, LD_W_ABS, RET_K};
use cbpf::Insn;
use seccomp::action::SECCOMP_RET_KILL_PROCESS;
use seccomp::data::{OFFSET_ARCH, OFFSET_NR};
use seccomp::fast::{Outcome, Partition, PartitionResidual, Ranges, Switch};

use crate::plan::{Plan, Work};

/// Where a jump may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    /// A `ret #k` (any copy).
    Ret(u32),
    /// The entry of residual `i`.
    Residual(usize),
    /// The entry (`ld [k]`) of switch `i`.
    Switch(usize),
    /// The instruction at this position from the end.
    At(usize),
}

/// The program under construction, last instruction first.
struct Emitter {
    rev: Vec<Insn>,
    /// The nearest instruction (from the front) that is or leads to each
    /// target: the target itself, a `ret` copy or a `ja` landing.
    near: HashMap<Target, usize>,
    /// Where each residual really starts.
    residual_at: HashMap<usize, usize>,
    /// Where each switch really starts.
    switch_at: HashMap<usize, usize>,
    /// Landings made (second and later `ret` copies, and `ja`s).
    pub landings: usize,
    /// What the trees' plans may still weigh.
    work: Work,
}

/// `(first value, where to go)`, ascending: a tree's leaves.
type TargetRanges = Vec<(u32, Target)>;

/// Longest forward jump of a conditional jump.
const MAX_COND: usize = u8::MAX as usize;

impl Emitter {
    /// Position from the end of the next instruction pushed.
    fn next(&self) -> usize {
        self.rev.len()
    }

    fn push(&mut self, insn: Insn) -> usize {
        self.rev.push(insn);
        self.rev.len() - 1
    }

    /// The offset from the next instruction to `t`, if a landing is in reach.
    fn offset(&self, t: Target) -> Option<u8> {
        let at = match t {
            Target::At(p) => *self.near.get(&t).unwrap_or(&p),
            _ => *self.near.get(&t)?,
        };
        let dist = self.next().checked_sub(at + 1)?;
        if dist <= MAX_COND {
            u8::try_from(dist).ok()
        } else {
            None
        }
    }

    /// Makes `t` reachable from the next instruction.
    fn land(&mut self, t: Target) {
        let real = match t {
            Target::Ret(k) => {
                let at = self.push(Insn::stmt(RET_K, k));
                if self.near.insert(t, at).is_some() {
                    self.landings += 1;
                }
                return;
            }
            Target::Residual(i) => self.residual_at.get(&i).copied(),
            Target::Switch(i) => self.switch_at.get(&i).copied(),
            Target::At(p) => Some(p),
        };
        // Residuals are emitted before any jump to them; a missing one
        // would be a bug of this module: return KILL rather than panic.
        let at = match real {
            Some(real) => {
                let dist = self.next() - real - 1;
                self.push(Insn::stmt(JMP_JA, dist as u32))
            }
            None => self.push(Insn::stmt(RET_K, SECCOMP_RET_KILL_PROCESS)),
        };
        self.near.insert(t, at);
        self.landings += 1;
    }

    /// `code #k, t, f`; returns its position.
    fn cond(&mut self, code: u16, k: u32, t: Target, f: Target) -> Target {
        // At most one landing per edge: a landing is adjacent, in reach.
        for _ in 0..3 {
            match (self.offset(t), self.offset(f)) {
                (Some(jt), Some(jf)) => return Target::At(self.push(Insn::jump(code, k, jt, jf))),
                (None, _) => self.land(t),
                (_, None) => self.land(f),
            }
        }
        Target::At(self.push(Insn::stmt(RET_K, SECCOMP_RET_KILL_PROCESS)))
    }

    /// Residual `i` (behind `ld #0` if it reads A at entry).
    fn residual(&mut self, i: usize, r: &PartitionResidual) {
        if self.residual_at.contains_key(&i) {
            return;
        }
        for &insn in r.program.original().iter().rev() {
            self.push(insn);
        }
        if r.reads_x {
            // The dispatch never writes X: it is still 0 here. Kept
            // explicit for the whole filter, which may read it.
            self.push(Insn::stmt(LDX_IMM, 0));
        }
        if r.reads_a {
            self.push(Insn::stmt(LD_IMM, 0));
        }
        let at = self.next() - 1;
        self.residual_at.insert(i, at);
        self.near.insert(Target::Residual(i), at);
    }

    /// Switch `i` and everything under it (children first, so each sits
    /// after its parent), unless already laid out.
    fn switch(&mut self, i: usize, partition: &Partition, choice: &Choice) {
        if self.switch_at.contains_key(&i) {
            return;
        }
        let Some(s) = partition.switches.get(i) else { return };
        for &(_, child) in &s.ranges {
            self.child(choice.outcome(child, partition), partition, choice);
        }
        let targets: TargetRanges =
            s.ranges.iter().map(|&(start, o)| (start, leaf(choice.outcome(o, partition)))).collect();
        let mut level = 0;
        match jset_bits(s) {
            Some(bits) => {
                let (low, high) = match targets.as_slice() {
                    [(_, low), (_, high)] => (*low, *high),
                    _ => (Target::Ret(SECCOMP_RET_KILL_PROCESS), Target::Ret(SECCOMP_RET_KILL_PROCESS)),
                };
                self.cond(JMP_JSET_K, bits, high, low);
            }
            None => {
                self.tree(&targets, &mut level, 0);
                if s.mask != u32::MAX {
                    self.push(Insn::stmt(ALU_AND_K, s.mask));
                }
            }
        }
        let at = self.push(Insn::stmt(LD_W_ABS, s.offset));
        self.switch_at.insert(i, at);
        self.near.insert(Target::Switch(i), at);
    }

    /// Lays out what `o` needs: a residual or a switch (a constant needs
    /// nothing before its jumps).
    fn child(&mut self, o: Outcome, partition: &Partition, choice: &Choice) {
        match o {
            Outcome::Action(_) => {}
            Outcome::Residual(i) => {
                if let Some(r) = partition.residuals.get(i) {
                    self.residual(i, r);
                }
            }
            Outcome::Switch(i) => self.switch(i, partition, choice),
        }
    }

    /// A tree over `ranges` (non-empty, ascending, neighbours differ), the
    /// value compared (`nr`, `arch`, or a switch's word) in A: the fewest
    /// compares within a depth bound ([`plan`](crate::plan)).
    fn tree(&mut self, ranges: &[(u32, Target)], depth: &mut usize, level: usize) -> Target {
        let plan = crate::plan::plan(ranges, Target::Ret(SECCOMP_RET_KILL_PROCESS), &mut self.work);
        self.lay_out(&plan, depth, level)
    }

    fn lay_out(&mut self, plan: &Plan<Target>, depth: &mut usize, level: usize) -> Target {
        match plan {
            Plan::Leaf(t) => {
                *depth = (*depth).max(level);
                *t
            }
            Plan::Split { bound, left, right } => {
                let r = self.lay_out(right, depth, level + 1);
                let l = self.lay_out(left, depth, level + 1);
                self.cond(JMP_JGE_K, *bound, r, l)
            }
            Plan::Chain { background, exceptions } => {
                *depth = (*depth).max(level + exceptions.len());
                exceptions.iter().rev().fold(*background, |rest, &(k, t)| self.cond(JMP_JEQ_K, k, t, rest))
            }
        }
    }

    /// The nr dispatch of one arch: `ld [0]` and the tree, or a leaf.
    fn block(&mut self, ranges: &Ranges, depth: &mut usize) -> Target {
        let targets: TargetRanges = ranges.iter().map(|&(start, o)| (start, leaf(o))).collect();
        match self.tree(&targets, depth, 0) {
            // A tree's root is the compare laid out last: `ld` goes before it.
            Target::At(p) => {
                debug_assert_eq!(p + 1, self.next(), "a tree's root is laid out last");
                Target::At(self.push(Insn::stmt(LD_W_ABS, OFFSET_NR)))
            }
            leaf => leaf,
        }
    }
}

/// Arches dispatched by a chain of `jeq` in the filter's order (the first
/// arch costs one compare); more get a tree over their values.
const ARCH_CHAIN_MAX: usize = 4;

/// Appends the range `(start, t)` to ascending `ranges`: a range starting
/// where the last one does replaces it, and one with the last one's target
/// continues it.
fn push_target(ranges: &mut TargetRanges, start: u32, t: Target) {
    if ranges.last().is_some_and(|&(s, _)| s == start) {
        ranges.pop();
    }
    if ranges.last().is_none_or(|&(_, last)| last != t) {
        ranges.push((start, t));
    }
}

fn leaf(o: Outcome) -> Target {
    match o {
        Outcome::Action(k) => Target::Ret(k),
        Outcome::Residual(i) => Target::Residual(i),
        Outcome::Switch(i) => Target::Switch(i),
    }
}

/// The bits of a `jset` that makes a switch's two-run split of masked bits:
/// `(w & m) >= 2^j` is `w & (m >> j << j) != 0`, one compare and no `and`
/// (`jset #0` where `m` has no bit from `j` up: never, as `w & m` never
/// reaches `2^j`). A whole word keeps its `jge #2^j`, as short.
fn jset_bits(s: &Switch) -> Option<u32> {
    match s.ranges.as_slice() {
        [(0, _), (c, _)] if s.mask != u32::MAX && c.is_power_of_two() => Some(s.mask & !(c - 1)),
        _ => None,
    }
}

/// What a layout favours where an argument tree is longer than the
/// residual it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prefer {
    /// The fewest instructions: a switch is laid out as a tree only where
    /// the tree is no longer than its residual.
    #[default]
    Size,
    /// The shortest paths: every switch is laid out as its tree (an
    /// allow-list of n requests, one `jeq` each in libseccomp's layout,
    /// becomes a tree of about log2(n) compares that takes more
    /// instructions than the list).
    Depth,
}

/// Which switches are laid out as trees: with [`Prefer::Size`] those whose
/// tree (every switch and residual leaf under it once) is no longer than
/// the residual it stands for, with [`Prefer::Depth`] all. The others are
/// laid out as that residual.
#[derive(Debug, Default)]
struct Choice {
    trees: HashSet<usize>,
}

impl Choice {
    fn of(partition: &Partition, prefer: Prefer) -> Choice {
        let mut choice = Choice::default();
        // Children come before parents: sizes are known bottom-up.
        for (i, s) in partition.switches.iter().enumerate() {
            let tree_wins = match prefer {
                Prefer::Depth => true,
                Prefer::Size => {
                    let mut seen = HashSet::new();
                    choice.tree_cost(i, partition, &mut seen) <= residual_cost(partition, s.residual)
                }
            };
            if tree_wins {
                choice.trees.insert(i);
            }
        }
        choice
    }

    /// What is laid out for `o`.
    fn outcome(&self, o: Outcome, partition: &Partition) -> Outcome {
        match o {
            Outcome::Switch(i) if !self.trees.contains(&i) => {
                partition.switches.get(i).map_or(o, |s| Outcome::Residual(s.residual))
            }
            o => o,
        }
    }

    /// Instructions switch `i` lays out, counting what `seen` has not.
    fn tree_cost(&self, i: usize, partition: &Partition, seen: &mut HashSet<Outcome>) -> usize {
        if !seen.insert(Outcome::Switch(i)) {
            return 0;
        }
        let Some(s) = partition.switches.get(i) else { return 0 };
        let own = if jset_bits(s).is_some() { 2 } else { 1 + usize::from(s.mask != u32::MAX) + s.ranges.len() - 1 };
        let mut cost = own;
        for &(_, child) in &s.ranges {
            cost += match self.outcome(child, partition) {
                Outcome::Action(_) => 0,
                o @ Outcome::Residual(r) => {
                    if seen.insert(o) {
                        residual_cost(partition, r)
                    } else {
                        0
                    }
                }
                Outcome::Switch(j) => self.tree_cost(j, partition, seen),
            };
        }
        cost
    }
}

/// Instructions residual `i` lays out (its entry `ld #0`/`ldx #0` too).
fn residual_cost(partition: &Partition, i: usize) -> usize {
    partition.residuals.get(i).map_or(0, |r| r.program.len() + usize::from(r.reads_a) + usize::from(r.reads_x))
}

/// Figures of one layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LayoutStats {
    /// Distinct nr dispatch blocks (arches with identical ranges share one).
    pub blocks: usize,
    /// Ranges over all blocks.
    pub ranges: usize,
    /// Deepest leaf of any nr tree, in compares.
    pub tree_depth: usize,
    /// `ret` copies (beyond the first of each value) and `ja` landings
    /// added for jumps past 255.
    pub landings: usize,
    /// Switches laid out as trees.
    pub switches: usize,
    /// Instructions of the residual programs laid out (tree leaves and
    /// residuals no tree replaced).
    pub residual_insns: usize,
    /// Whether the trees' plans ran out of their budget of work
    /// (`plan::MAX_DP_WORK` split candidates): some tree was then split in the
    /// middle, over more compares than its plan would have made.
    pub plan_budget_spent: bool,
}

impl LayoutStats {
    /// What a caller says when the trees' plans ran out of their budget
    /// (`None` when they did not): the output is still exact.
    pub fn budget_note(&self) -> Option<String> {
        self.plan_budget_spent.then(|| {
            format!(
                "the tree planner spent its budget ({} split candidates): some tree is split in the middle, \
                 over more compares than a plan would make",
                crate::plan::MAX_DP_WORK
            )
        })
    }
}

/// Lays `partition` out as a classic program (user form, not validated):
/// for every input, the program returns what the partition's outcome for
/// its (arch, nr) gives. Argument trees as [`Prefer::Size`] chooses.
pub fn emit(partition: &Partition) -> (Vec<Insn>, LayoutStats) {
    emit_preferring(partition, Prefer::Size)
}

/// [`emit`], with the argument trees [`Prefer`] chooses.
pub fn emit_preferring(partition: &Partition, prefer: Prefer) -> (Vec<Insn>, LayoutStats) {
    let mut e = Emitter {
        rev: Vec::new(),
        near: HashMap::new(),
        residual_at: HashMap::new(),
        switch_at: HashMap::new(),
        landings: 0,
        work: Work::default(),
    };
    let mut stats = LayoutStats::default();
    let choice = Choice::of(partition, prefer);
    // Distinct blocks in program order, and each arch's block.
    let mut blocks: Vec<&Ranges> = Vec::new();
    let mut block_of: Vec<usize> = Vec::new();
    let all: Vec<&Ranges> = match &partition.any_arch {
        Some(r) => vec![r],
        None => partition.arches.iter().map(|a| &a.ranges).collect(),
    };
    for ranges in &all {
        let i = blocks.iter().position(|b| b == ranges).unwrap_or_else(|| {
            blocks.push(ranges);
            blocks.len() - 1
        });
        block_of.push(i);
    }
    stats.blocks = blocks.len();
    stats.ranges = blocks.iter().map(|b| b.len()).sum();
    // The last block using each residual or switch (usize::MAX: only the
    // dispatch, which comes before every block). Blocks are taken in
    // program order, so the last to claim one is its last user.
    let mut last_user: HashMap<Outcome, usize> = HashMap::new();
    let other_arches = choice.outcome(partition.other_arches, partition);
    if !matches!(other_arches, Outcome::Action(_)) {
        last_user.insert(other_arches, usize::MAX);
    }
    for (b, ranges) in blocks.iter().enumerate() {
        for &(_, o) in ranges.iter() {
            let o = choice.outcome(o, partition);
            if !matches!(o, Outcome::Action(_)) {
                last_user.insert(o, b);
            }
        }
    }
    let emit_residuals_of = |e: &mut Emitter, user: usize| {
        let mut mine: Vec<Outcome> = last_user.iter().filter(|&(_, &u)| u == user).map(|(&o, _)| o).collect();
        mine.sort_unstable_by_key(|o| match *o {
            Outcome::Residual(i) => (0, i),
            Outcome::Switch(i) => (1, i),
            Outcome::Action(_) => (2, 0),
        });
        for o in mine {
            e.child(o, partition, &choice);
        }
    };
    let mut block_targets = vec![Target::Ret(SECCOMP_RET_KILL_PROCESS); blocks.len()];
    for (b, ranges) in blocks.iter().enumerate().rev() {
        emit_residuals_of(&mut e, b);
        let ranges: Ranges = ranges.iter().map(|&(start, o)| (start, choice.outcome(o, partition))).collect();
        let target = e.block(&ranges, &mut stats.tree_depth);
        if let Some(slot) = block_targets.get_mut(b) {
            *slot = target;
        }
    }
    let entry = match &partition.any_arch {
        Some(_) => block_targets.first().copied().unwrap_or(Target::Ret(SECCOMP_RET_KILL_PROCESS)),
        None => {
            emit_residuals_of(&mut e, usize::MAX);
            let other = leaf(other_arches);
            let block = |a: usize| {
                block_of
                    .get(a)
                    .and_then(|&b| block_targets.get(b))
                    .copied()
                    .unwrap_or(Target::Ret(SECCOMP_RET_KILL_PROCESS))
            };
            let next = if partition.arches.len() <= ARCH_CHAIN_MAX {
                let mut next = other;
                for (a, arch) in partition.arches.iter().enumerate().rev() {
                    next = e.cond(JMP_JEQ_K, arch.arch, block(a), next);
                }
                next
            } else {
                // Many arches: a tree over the arch values, like nr's.
                let mut by_value: Vec<(u32, Target)> =
                    partition.arches.iter().enumerate().map(|(a, arch)| (arch.arch, block(a))).collect();
                by_value.sort_by_key(|&(v, _)| v);
                let mut ranges: TargetRanges = vec![(0, other)];
                for (v, t) in by_value {
                    push_target(&mut ranges, v, t);
                    if let Some(after) = v.checked_add(1) {
                        push_target(&mut ranges, after, other);
                    }
                }
                let mut arch_depth = 0;
                e.tree(&ranges, &mut arch_depth, 0)
            };
            match next {
                Target::At(p) => {
                    debug_assert_eq!(p + 1, e.next(), "the arch dispatch's root is laid out last");
                    Target::At(e.push(Insn::stmt(LD_W_ABS, OFFSET_ARCH)))
                }
                leaf => leaf,
            }
        }
    };
    // The entry is the first instruction: a constant's `ret`, or what was
    // laid out last (the dispatch's `ld`, or the one block's lone residual
    // or switch, each laid out just before its user).
    let first = e.next().checked_sub(1);
    match entry {
        Target::Ret(k) => {
            e.push(Insn::stmt(RET_K, k));
        }
        Target::At(p) => debug_assert_eq!(Some(p), first, "the dispatch is laid out last"),
        Target::Residual(i) => debug_assert_eq!(e.residual_at.get(&i).copied(), first, "a lone residual is last"),
        Target::Switch(i) => debug_assert_eq!(e.switch_at.get(&i).copied(), first, "a lone switch is last"),
    }
    stats.landings = e.landings;
    stats.plan_budget_spent = e.work.spent();
    stats.switches = e.switch_at.len();
    stats.residual_insns =
        e.residual_at.keys().map(|&i| partition.residuals.get(i).map_or(0, |r| r.program.len())).sum();
    e.rev.reverse();
    (e.rev, stats)
}
