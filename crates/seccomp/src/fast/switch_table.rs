//! The fast engine's argument-check trees as it runs them: each
//! [`Switch`](super::Switch) of the forest compiled into a table (the word
//! masked, its runs searched), and the guards that fuse a parent test of
//! one value into its child's table.

use super::Slot;

/// A [`Switch`](super::Switch) of the forest, compiled: the word masked,
/// then a search over the starts of its runs ([`tree`](super::tree) module).
#[derive(Debug, Clone)]
pub(super) struct SwitchTable {
    /// Byte offset of the word.
    pub(super) offset: u32,
    pub(super) mask: u32,
    /// Whether the switch has at most [`NEAR_RUNS`] runs, held in `near`
    /// and `near_slots`: a walk down a tree of such switches reads each
    /// node's own bytes, not two more arrays behind pointers per node.
    pub(super) is_near: bool,
    /// With `is_near`: `starts[1..]`, padded with `u32::MAX`.
    pub(super) near: [u32; NEAR_RUNS - 1],
    /// With `is_near`: `slots`, padded with copies of the last (a word of
    /// `u32::MAX` counts the padding and lands on one: it is in the last run).
    pub(super) near_slots: [Slot; NEAR_RUNS],
    /// Where each run of `word & mask` starts, ascending, the first 0.
    pub(super) starts: Box<[u32]>,
    /// `slots[i]` handles the run from `starts[i]`.
    pub(super) slots: Box<[Slot]>,
    /// The residual this switch stands for (what [`FastFilter::entry`](super::FastFilter::entry)
    /// shows).
    pub(super) residual: u32,
    /// Whether `FastFilter::guards` holds a test of another word to make
    /// before this switch's own (a parent switch fused in:
    /// [`fuse_guards`]). The guard itself is kept out of the table: the
    /// tables stay 96 bytes, and a walk through unguarded ones reads what
    /// it read before.
    pub(super) guarded: bool,
}

/// `word(offset) & mask == value`, else `other`: a parent switch whose
/// one single-value run leads to this switch and whose other runs all
/// answer `other` (libseccomp's test of an argument's high word before
/// its low word: `hi == 0`, else KILL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Guard {
    pub(super) offset: u32,
    pub(super) mask: u32,
    pub(super) value: u32,
    pub(super) other: Slot,
}

impl Guard {
    /// The guard of a table without one (never tested).
    pub(super) const NONE: Guard = Guard { offset: 0, mask: 0, value: 0, other: Slot::Residual(0) };
}

/// Fuses each switch whose runs are one single value leading to another
/// switch, the rest one answer (`[(0, child), (1, other)]` or `[(0, other),
/// (s, child), (s + 1, other)]`), into a copy of that child guarded by the
/// test of the value: one level of the walk instead of two. The walk's
/// cost is a chain of loads, one table to the next; a guard's load and
/// test only confirm a predicted branch, off that chain. A child that has
/// a guard already is left as it is (one guard per table). The copy stays
/// at the parent's index, so slots still only name earlier switches.
/// Returns the guard of every table ([`Guard::NONE`] where there is none).
pub(super) fn fuse_guards(tables: &mut [SwitchTable]) -> Vec<Guard> {
    let mut guards = vec![Guard::NONE; tables.len()];
    for p in 0..tables.len() {
        let Some(parent) = tables.get(p) else { continue };
        let fused = match (&*parent.starts, &*parent.slots) {
            (&[0, 1], &[Slot::Switch(c), other]) => Some((c, 0, other)),
            (&[0, s, next], &[other, Slot::Switch(c), other2]) if other == other2 && s.checked_add(1) == Some(next) => {
                Some((c, s, other))
            }
            _ => None,
        };
        let Some((c, value, other)) = fused else { continue };
        let (offset, mask, residual) = (parent.offset, parent.mask, parent.residual);
        let Some(child) = tables.get(c as usize).filter(|t| !t.guarded && (c as usize) < p) else {
            continue;
        };
        let copy = SwitchTable { guarded: true, residual, ..child.clone() };
        if let (Some(table), Some(guard)) = (tables.get_mut(p), guards.get_mut(p)) {
            *table = copy;
            *guard = Guard { offset, mask, value, other };
        }
    }
    guards
}

/// Switches with at most this many runs keep them in the switch itself
/// ([`SwitchTable::near`]).
pub(super) const NEAR_RUNS: usize = 4;

/// Switches with at most this many runs count the starts at or below the
/// word (no branch per start); longer ones binary-search.
const SWITCH_SCAN_MAX: usize = 8;

impl SwitchTable {
    #[inline(always)]
    pub(super) fn slot(&self, word: u32) -> Slot {
        let v = word & self.mask;
        // The run: how many starts past the first (0) are at or below v.
        if self.is_near {
            // Compares and selects, not a computed index: the compiler's
            // conditional moves from memory become branches in the walk's
            // loop, which the CPU predicts and runs ahead of (an index
            // makes every level wait for the word and its comparison).
            let [s1, s2, s3] = self.near;
            let [r0, r1, r2, r3] = self.near_slots;
            return if v < s1 {
                r0
            } else if v < s2 {
                r1
            } else if v < s3 {
                r2
            } else {
                r3
            };
        }
        // Wider than NEAR_RUNS (narrower ones took the path above).
        let i = match *self.starts {
            ref starts if starts.len() <= SWITCH_SCAN_MAX => {
                starts.iter().map(|&s| usize::from(s <= v)).sum::<usize>().wrapping_sub(1)
            }
            ref starts => starts.partition_point(|&s| s <= v).wrapping_sub(1),
        };
        self.slots.get(i).copied().unwrap_or(Slot::Residual(self.residual))
    }
}
