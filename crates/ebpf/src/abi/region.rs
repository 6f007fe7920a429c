//! The memory regions of a run: where each lives in the address space the
//! program sees, and how large the stack is.
//!
//! A pointer's upper 32 bits name the region and its lower 32 bits the
//! offset, so every load, store and atomic is one bounds check against one
//! slice:
//!
//! | region | base | access |
//! |---|---|---|
//! | context (`Input::Ctx`, or the [`SkbContext`](crate::abi::skb::SkbContext) bytes) | [`CTX_BASE`] | read-only |
//! | packet, linear part (`Input::Skb`) | [`PACKET_BASE`] | read-only |
//! | stack: [`MAX_FRAMES`] frames of [`STACK_SIZE`] bytes | [`STACK_BASE`] | read-write, current frame and its callers only |
//! | user memory (`Input::Memory`) | [`MEM_BASE`] | read-write |
//!
//! Anything else (including address 0) is an
//! [`ExecError`](crate::abi::error::ExecError).

/// Base address of the context region.
pub const CTX_BASE: u64 = 1 << 32;
/// Base address of the packet region (linear part of the socket buffer).
pub const PACKET_BASE: u64 = 2 << 32;
/// Base address of the stack region; `r10` starts at `STACK_BASE + MAX_FRAMES * STACK_SIZE`.
pub const STACK_BASE: u64 = 3 << 32;
/// Base address of the user memory region (`Input::Memory`).
pub const MEM_BASE: u64 = 4 << 32;
/// Bytes of stack per frame (`MAX_BPF_STACK`).
pub const STACK_SIZE: usize = 512;
/// Most frames live at once: the main program plus 7 nested local calls
/// (`MAX_CALL_FRAMES`).
pub const MAX_FRAMES: usize = 8;

/// Bytes of stack of all frames.
pub(crate) const STACK_TOTAL: usize = MAX_FRAMES * STACK_SIZE;
/// Regions are at most 4 GiB: an offset is the low 32 bits of an address.
pub(crate) const REGION_LIMIT: usize = 1 << 32;
