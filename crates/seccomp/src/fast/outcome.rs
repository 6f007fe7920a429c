//! What a partition or a tree leaf leads to: a constant, a residual
//! program or a switch. Below both `partition` and `tree`, which hand
//! these to each other.

use cbpf::Program;

/// What the filter does for a range of (arch, nr), or for a run of a
/// word's values in a [`Switch`](super::Switch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Returns this value whatever the arguments and instruction pointer.
    Action(u32),
    /// Runs [`Partition::residuals`](super::Partition::residuals)`[i]`.
    Residual(usize),
    /// Decides on a word first: [`Partition::switches`](super::Partition::switches)`[i]`, the tree of
    /// a residual ([`super::tree`]).
    Switch(usize),
}

/// A residual program of a [`Partition`](super::Partition).
#[derive(Debug, Clone)]
pub struct Residual {
    /// Validated in seccomp mode; [`Program::original`] is what to emit.
    pub program: Program,
    /// It reads A before writing it, so it needs A == 0 at entry.
    pub reads_a: bool,
    /// It reads X before writing it, so it needs X == 0 at entry.
    pub reads_x: bool,
}
