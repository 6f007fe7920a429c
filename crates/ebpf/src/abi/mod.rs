//! The environment a program runs in, below every engine: the memory
//! regions and their addresses ([`region`]), what a run sees ([`memory`]:
//! `Input`, `Memory`), why a run stops ([`error`]), the contexts programs
//! read (`struct seccomp_data` is a plain 64-byte `Input::Ctx`; the socket
//! buffer is [`skb`]) and the helpers they call ([`helpers`]).
//!
//! Nothing here runs a program: the engines in [`crate::exec`] and the
//! front door [`crate::vm`] build on it.

pub mod error;
pub mod helpers;
pub mod memory;
pub mod region;
pub mod skb;
