//! Decision trees over the 64 bytes of `struct seccomp_data` as x86-64
//! machine code.
//!
//! The fast engine (`seccomp::fast`) walks its argument-check trees as
//! tables: each level loads the next table from the one before, a chain of
//! dependent loads that costs about 2 ns a level. The kernel's JIT runs the
//! same checks as compares and branches, which the CPU predicts and runs
//! ahead of. This crate gives a tree that form: each [`Node`] becomes a
//! load, a mask and a binary search of compares and branches ending in a
//! `ret` of its leaf or a jump to another node's code.
//!
//! ```text
//! &[Node] ─► encode (checks every node, writes x86-64) ─► exec (mmap RW, copy, mprotect RX)
//!         ─► Trees::eval(node, &[u8; 64]) ─► the leaf's u64
//! ```
//!
//! The API is safe because what runs is only ever this crate's own
//! encoding of a checked tree: it reads 4-byte words at offsets below 64
//! of the 64 bytes it is handed, jumps only to earlier nodes (so every walk
//! ends) or forward within a node, and uses no register but `rax` and its
//! argument. The only `unsafe`
//! is in `exec` (mapping the code, calling it), each block with its
//! argument.
//!
//! ```
//! use native::{Node, Target, Trees};
//! // args[0].lo (byte 16) & 0xff: below 8 → 1, from 8 → 2.
//! let node = Node { guard: None, offset: 16, mask: 0xff, starts: vec![0, 8], targets: vec![Target::Leaf(1), Target::Leaf(2)] };
//! let mut data = [0u8; 64];
//! data[16] = 9;
//! match Trees::compile(&[node]) {
//!     Ok(trees) => assert_eq!(trees.eval(0, &data), Some(2)),
//!     // Not x86-64 Linux, or the OS refused executable memory.
//!     Err(why) => eprintln!("{why}"),
//! }
//! ```

mod encode;
mod exec;

use std::fmt;

/// Size of the input every tree reads (`struct seccomp_data`).
pub const DATA_SIZE: usize = 64;

/// Most bytes of code one [`Trees`] may hold: past it, [`Trees::compile`]
/// refuses ([`NativeError::TooLarge`]) and the caller keeps its tables.
pub const MAX_CODE_BYTES: usize = 16 << 20;

/// Where a run of a node's word leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Return this value.
    Leaf(u64),
    /// Go on with node `i`, which must come before the node naming it (so
    /// every walk ends).
    Node(u32),
}

/// A test of one word made before a node's own: `word(offset) & mask ==
/// value`, else `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard {
    pub offset: u32,
    pub mask: u32,
    pub value: u32,
    pub other: Target,
}

/// The 32-bit word at byte `offset` of the input (host byte order, as
/// classic BPF's `ld [offset]` reads `struct seccomp_data`), masked, then
/// the run it falls in: a binary search of compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Tested first, when present.
    pub guard: Option<Guard>,
    /// Byte offset of the word: a multiple of 4 below [`DATA_SIZE`].
    pub offset: u32,
    pub mask: u32,
    /// Where each run of `word & mask` starts: ascending, the first 0.
    pub starts: Vec<u32>,
    /// `targets[i]` handles the run from `starts[i]`.
    pub targets: Vec<Target>,
}

/// Why a tree was not compiled.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error("native trees need x86-64 Linux")]
    Unsupported,
    #[error("node {node}: offset {offset} is not a 4-byte word inside the {DATA_SIZE}-byte input")]
    BadOffset { node: usize, offset: u32 },
    #[error("node {node}: {starts} run starts for {targets} targets")]
    RunCount { node: usize, starts: usize, targets: usize },
    #[error("node {node}: run starts are not ascending from 0")]
    BadStarts { node: usize },
    #[error("node {node}: target node {target} does not come before it")]
    ForwardTarget { node: usize, target: u32 },
    #[error("the trees need more than {MAX_CODE_BYTES} bytes of code")]
    TooLarge,
    #[error("the OS refused executable memory: {0}")]
    Os(#[from] std::io::Error),
}

/// Checked trees as executable code.
pub struct Trees {
    code: exec::Code,
}

impl Trees {
    /// Checks `nodes` and maps their code executable.
    pub fn compile(nodes: &[Node]) -> Result<Trees, NativeError> {
        let encoded = encode::encode(nodes)?;
        Ok(Trees { code: exec::Code::map(encoded)? })
    }

    /// Walks the tree from node `node` over `data`: the leaf's value
    /// (`None` when there is no such node). Allocates nothing.
    #[inline]
    pub fn eval(&self, node: u32, data: &[u8; DATA_SIZE]) -> Option<u64> {
        self.code.call(node, data)
    }

    /// Bytes of machine code.
    pub fn code_len(&self) -> usize {
        self.code.len()
    }
}

impl fmt::Debug for Trees {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trees").field("code_len", &self.code_len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
