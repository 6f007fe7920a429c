//! The argument-check trees as x86-64 code ([`native::Trees`]), where the
//! host allows it: what the tables walk as a chain of dependent loads (one
//! table names the next) runs as compares and branches the CPU predicts.
//!
//! Only the trees: the (arch, nr) lookup stays in Rust. Measured on this
//! project's machines, a lookup made native too (the arch as a switch, each
//! arch's numbers as a jump table) cost a constant entry twice what the
//! Rust lookup does (Chromium's `getpid`: 3.7 against 1.7 ns), the jump
//! table's indirect jump and the call on every input; a tree pays the call
//! only when there is one.
//!
//! One node per switch, in the tables' order: a switch names only earlier
//! ones, so every jump between nodes is backward, as [`native`] requires.

use super::switch_table::{Guard, SwitchTable};
use super::Slot;

/// A leaf's high half: 0 for a constant (the low half), 1 for a residual's
/// index.
const RESIDUAL: u64 = 1 << 32;

/// The trees as code: node `j` is switch `j`.
#[derive(Debug)]
pub(super) struct NativeCode {
    trees: native::Trees,
}

impl NativeCode {
    /// Compiles `switches` with their `guards`.
    pub(super) fn build(switches: &[SwitchTable], guards: &[Guard]) -> Result<NativeCode, native::NativeError> {
        let nodes: Vec<native::Node> = switches
            .iter()
            .zip(guards)
            .map(|(t, g)| native::Node {
                guard: t.guarded.then_some(native::Guard {
                    offset: g.offset,
                    mask: g.mask,
                    value: g.value,
                    other: target(g.other),
                }),
                offset: t.offset,
                mask: t.mask,
                starts: t.starts.to_vec(),
                targets: t.slots.iter().map(|&s| target(s)).collect(),
            })
            .collect();
        Ok(NativeCode { trees: native::Trees::compile(&nodes)? })
    }

    /// The constant or residual switch `j`'s tree ends in for `bytes`.
    #[inline(always)]
    pub(super) fn eval(&self, j: u32, bytes: &[u8; native::DATA_SIZE]) -> Slot {
        match self.trees.eval(j, bytes) {
            Some(v) if v >> 32 == 0 => Slot::Action(v as u32),
            Some(v) => Slot::Residual(v as u32),
            // No such switch cannot happen (the slot named it); the whole
            // filter would still answer exactly.
            None => Slot::Residual(0),
        }
    }

    pub(super) fn code_len(&self) -> usize {
        self.trees.code_len()
    }
}

/// A slot as a target: a switch is the node of the same index, the rest
/// leaves.
fn target(slot: Slot) -> native::Target {
    match slot {
        Slot::Action(v) => native::Target::Leaf(u64::from(v)),
        Slot::Residual(i) => native::Target::Leaf(RESIDUAL | u64::from(i)),
        Slot::Switch(c) => native::Target::Node(c),
    }
}
