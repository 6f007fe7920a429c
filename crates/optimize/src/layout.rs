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

use std::collections::HashMap;

use cbpf::opcode::{JMP_JA, JMP_JEQ_K, JMP_JGE_K, LDX_IMM, LD_IMM, LD_W_ABS, RET_K};
use cbpf::Insn;
use seccomp::action::SECCOMP_RET_KILL_PROCESS;
use seccomp::data::{OFFSET_ARCH, OFFSET_NR};
use seccomp::fast::{Outcome, Partition, PartitionResidual, Ranges};

/// Where a jump may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    /// A `ret #k` (any copy).
    Ret(u32),
    /// The entry of residual `i`.
    Residual(usize),
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
    /// Landings made (second and later `ret` copies, and `ja`s).
    pub landings: usize,
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

    /// A balanced tree over `ranges` (non-empty, ascending, neighbours
    /// differ), the value compared (`nr`, or `arch`) in A.
    fn tree(&mut self, ranges: &[(u32, Target)], depth: &mut usize, level: usize) -> Target {
        *depth = (*depth).max(level);
        if ranges.len() <= PEEL_MAX {
            if let Some((k, inside, rest)) = peel(ranges) {
                let rest = self.tree(&rest, depth, level + 1);
                return self.cond(JMP_JEQ_K, k, inside, rest);
            }
        }
        match ranges {
            [] => Target::Ret(SECCOMP_RET_KILL_PROCESS),
            [(_, t)] => *t,
            _ => {
                let mid = ranges.len() / 2;
                let (left, right) = ranges.split_at(mid);
                let bound = right.first().map_or(0, |&(b, _)| b);
                let r = self.tree(right, depth, level + 1);
                let l = self.tree(left, depth, level + 1);
                self.cond(JMP_JGE_K, bound, r, l)
            }
        }
    }

    /// The nr dispatch of one arch: `ld [0]` and the tree, or a leaf.
    fn block(&mut self, ranges: &Ranges, depth: &mut usize) -> Target {
        let targets: TargetRanges = ranges.iter().map(|&(start, o)| (start, leaf(o))).collect();
        let root = self.tree(&targets, depth, 0);
        match root {
            Target::At(p) if p + 1 == self.next() => Target::At(self.push(Insn::stmt(LD_W_ABS, OFFSET_NR))),
            leaf => leaf,
        }
    }
}

/// Subtrees of at most this many ranges test a lone number with `jeq`
/// first ([`peel`]): fewer compares, at most `PEEL_MAX / 2` more levels.
const PEEL_MAX: usize = 5;

/// A lone number between two ranges with the same outcome: `(k, its
/// outcome, the ranges with it merged into its neighbours)`.
fn peel(ranges: &[(u32, Target)]) -> Option<(u32, Target, TargetRanges)> {
    let i = (1..ranges.len().saturating_sub(1)).find(|&i| {
        let (Some(before), Some(&(k, _)), Some(after)) = (ranges.get(i - 1), ranges.get(i), ranges.get(i + 1)) else {
            return false;
        };
        before.1 == after.1 && k.checked_add(1) == Some(after.0)
    })?;
    let &(k, inside) = ranges.get(i)?;
    let rest = ranges.iter().enumerate().filter(|&(j, _)| j != i && j != i + 1).map(|(_, &r)| r).collect();
    Some((k, inside, rest))
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
    }
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
}

/// Lays `partition` out as a classic program (user form, not validated):
/// for every input, the program returns what the partition's outcome for
/// its (arch, nr) gives.
pub fn emit(partition: &Partition) -> (Vec<Insn>, LayoutStats) {
    let mut e = Emitter { rev: Vec::new(), near: HashMap::new(), residual_at: HashMap::new(), landings: 0 };
    let mut stats = LayoutStats::default();
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
    // The last block using each residual (usize::MAX: only the dispatch).
    let mut last_user: HashMap<usize, usize> = HashMap::new();
    if let Outcome::Residual(i) = partition.other_arches {
        last_user.insert(i, usize::MAX);
    }
    for (b, ranges) in blocks.iter().enumerate() {
        for &(_, o) in ranges.iter() {
            if let Outcome::Residual(i) = o {
                let user = last_user.entry(i).or_insert(b);
                if *user == usize::MAX || *user < b {
                    *user = b;
                }
            }
        }
    }
    let emit_residuals_of = |e: &mut Emitter, user: usize| {
        let mut mine: Vec<usize> = last_user.iter().filter(|&(_, &u)| u == user).map(|(&i, _)| i).collect();
        mine.sort_unstable();
        for i in mine {
            if let Some(r) = partition.residuals.get(i) {
                e.residual(i, r);
            }
        }
    };
    let mut block_targets = vec![Target::Ret(SECCOMP_RET_KILL_PROCESS); blocks.len()];
    for (b, ranges) in blocks.iter().enumerate().rev() {
        emit_residuals_of(&mut e, b);
        let target = e.block(ranges, &mut stats.tree_depth);
        if let Some(slot) = block_targets.get_mut(b) {
            *slot = target;
        }
    }
    let entry = match &partition.any_arch {
        Some(_) => block_targets.first().copied().unwrap_or(Target::Ret(SECCOMP_RET_KILL_PROCESS)),
        None => {
            emit_residuals_of(&mut e, usize::MAX);
            let other = leaf(partition.other_arches);
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
                Target::At(p) if p + 1 == e.next() => Target::At(e.push(Insn::stmt(LD_W_ABS, OFFSET_ARCH))),
                leaf => leaf,
            }
        }
    };
    // The entry must be the first instruction.
    let first = e.next().checked_sub(1);
    match entry {
        Target::At(p) if Some(p) == first => {}
        Target::Residual(i) if e.residual_at.get(&i).copied() == first => {}
        Target::Ret(k) => {
            e.push(Insn::stmt(RET_K, k));
        }
        t => {
            e.land(t);
        }
    }
    stats.landings = e.landings;
    e.rev.reverse();
    (e.rev, stats)
}
