//! Compare trees as breakpoint tables ([`chain::RangeTrees`], shared with
//! the classic interpreter `cbpf::interp`): which ops use one. The root of
//! every region of compares of r0 with constants (`if r0 <op> K`, or
//! `w2 = K; if r0 <op> r2` with r2 dead after it, as chains take them;
//! through `ja`) that branches and that the measured `chain::Policy` says
//! pays becomes a [`Kind::Tree`](super::ops::Kind::Tree), and a load of a
//! context word into r0 right before it a
//! [`Kind::LdTree`](super::ops::Kind::LdTree): libseccomp's `--opt 2`
//! trees, walked node by node (or chain by linked chain) before, are one
//! search. The region's other compares keep their ops, for jumps that land
//! on them from elsewhere. Trees are found before chains are walked, and
//! a chain that runs into a root (or its load) ends there and leaves to
//! it, as do chain exits that land on one, rather than walk or link into
//! the root's nodes one test at a time (measured: libseccomp's x32 check
//! falling through to `allow306_opt2`'s syscall tree walked its nodes, and
//! the mix of its inputs, each a different path, ran 2.3x slower).
//!
//! Executed counts stay exact: every tree has two tables over the same
//! intervals' cuts, one whose neighbouring intervals merge when they leave
//! to the same pc (what runs that do not count search: fewer entries), and
//! one whose entries also carry the instructions the walk jumped over
//! (`chain::Leave::skip`, computed while walking each interval: a run adds
//! it to its skip count as a chain exit's). In programs with links, an
//! outcome that lands on a chain's entry links to it, as chain exits do.

use chain::{Leave, Policy, RangeTrees, Record};

use super::chains::{ChainExit, LinkedTest, Shapes, NOT_RET};

/// The bit of a [`Kind::Tree`](super::ops::Kind::Tree) op's tree index
/// that says the tree has a direct table for its small values
/// (`chain::RangeTrees::direct`), to look up there first; the other trees
/// only search. A bit of the index rather than kinds of their own:
/// measured (callgrind), the loop's code moved with two more kinds, and a
/// check of the table's own bound cost the trees without one 3%.
pub(super) const DIRECT: u32 = 1 << 31;

/// The breakpoint tables of a program's compare trees; tree `i` is the
/// `i`-th root in both.
#[derive(Debug, Clone, Default)]
pub(super) struct Trees {
    /// Intervals that leave to the same pc merged; `skip` 0: for runs that
    /// do not count.
    merged: RangeTrees<ChainExit>,
    /// Each interval with the exact count of instructions its walk jumps
    /// over from the root: for runs that count.
    counted: RangeTrees<ChainExit>,
}

impl Trees {
    /// The tables of the compare trees among the `n` pcs of `shapes` that
    /// `policy` admits (`None`: no trees), each outcome a [`ChainExit`]
    /// that ends the run where it lands on `w0 = K; exit`.
    pub(super) fn build(shapes: &Shapes<'_>, n: usize, policy: Option<Policy>) -> Trees {
        let Some(policy) = policy else { return Trees::default() };
        let exit = |leave: Leave| {
            let ret = shapes.ret_k(leave.pc).unwrap_or(NOT_RET);
            Some(ChainExit { target: u32::try_from(leave.pc).ok()?, skip: leave.skip, ret })
        };
        let merged = RangeTrees::build_with(policy, shapes, 0..n, |pc| exit(Leave { pc, skip: 0 }));
        // The same roots, each admitted already: only a budget (the
        // counted tables may have more entries) can drop one.
        let counted = RangeTrees::build_counted_with(Policy::EVERY_TREE, shapes, merged.roots().to_vec(), exit);
        if counted.roots() == merged.roots() {
            return Trees { merged, counted };
        }
        let merged = RangeTrees::build_with(Policy::EVERY_TREE, shapes, counted.roots().to_vec(), |pc| {
            exit(Leave { pc, skip: 0 })
        });
        if counted.roots() == merged.roots() {
            Trees { merged, counted }
        } else {
            Trees::default()
        }
    }

    /// Rewrites every outcome `link` gives a link for (in programs with
    /// links: an outcome that lands on a chain's entry goes on scanning
    /// it, as chain exits do).
    pub(super) fn link(&mut self, link: impl Fn(&ChainExit) -> Option<ChainExit>) {
        for table in [&mut self.merged, &mut self.counted] {
            for e in table.outcomes_mut() {
                if let Some(linked) = link(e) {
                    *e = linked;
                }
            }
        }
    }

    /// The root pc of every tree, in tree order.
    pub(super) fn roots(&self) -> &[usize] {
        self.counted.roots()
    }

    /// Whether tree `tree` answers only from the load before its root
    /// (`chain::RangeTrees::needs_load`; both tables have the same
    /// regions).
    pub(super) fn needs_load(&self, tree: usize) -> bool {
        self.counted.needs_load(tree)
    }

    /// Where tree `tree` (an index with [`DIRECT`]) leaves to for `x`: with
    /// the exact jumped-over count from the root when `COUNT`, else with
    /// the pc and return only, from the direct table first for a tree with
    /// [`DIRECT`] (the counted table, whose entries may differ, is always
    /// asked both ways). [`ChainExit::NOWHERE`] for a tree that does not
    /// exist (never: tree ops are made for the trees).
    #[inline(always)]
    pub(super) fn exit<const COUNT: bool>(&self, tree: u32, x: u32) -> ChainExit {
        let found = if COUNT {
            self.counted.outcome((tree & !DIRECT) as usize, x)
        } else if tree & DIRECT != 0 {
            self.merged.outcome((tree & !DIRECT) as usize, x)
        } else {
            self.merged.searched_outcome(tree as usize, x)
        };
        found.unwrap_or(ChainExit::NOWHERE)
    }

    /// Whether tree `tree`'s table for runs that do not count has a direct
    /// table for small values (its op's index then has [`DIRECT`]).
    pub(super) fn direct(&self, tree: usize) -> bool {
        self.merged.direct(tree)
    }

    /// One line per tree, then one per interval (`lo..=hi -> pc N`,
    /// `pc N (ret K)` or a link, `test N ...`), of the tables runs that do
    /// not count search.
    pub(super) fn listing(&self) -> String {
        // Printed as a chain test's exit is.
        self.merged.listing(|exit| LinkedTest { exit, lo: 0, span: 0, mask: 0, _pad: 0 }.leaving().to_string())
    }

    /// Outcomes of the counted tables that link to a chain.
    #[cfg(test)]
    pub(super) fn links(&self) -> usize {
        (0..self.counted.len()).flat_map(|tree| self.counted.intervals(tree)).filter(|(_, e)| e.links()).count()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.counted.is_empty()
    }
}
