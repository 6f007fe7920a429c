//! Helper functions callable with `call imm`: a registry from helper id to a
//! plain function, resolved once at load time.
//!
//! The kernel calls helpers by address (`__bpf_call_base + imm`) with the
//! `u64 (*)(u64, u64, u64, u64, u64)` ABI; here a helper receives `r1`..`r5`
//! and the run's [`Memory`] (checked access to every region and to the
//! socket buffer), and returns `r0` or a [`HelperError`].

pub mod socket;

pub use crate::abi::error::HelperError;
use crate::abi::memory::Memory;
use crate::abi::skb::helper::{
    GET_RAW_CPU_ID, SKB_GET_NLATTR, SKB_GET_NLATTR_NEST, SKB_GET_PAY_OFFSET, SKB_LOAD_16, SKB_LOAD_32, SKB_LOAD_8,
    USER_RND_U32,
};

/// A helper: `r0 = f(memory, [r1, r2, r3, r4, r5])`.
pub type HelperFn = fn(&mut Memory<'_>, [u64; 5]) -> Result<u64, HelperError>;

/// Registry of helpers by id. Later registrations of an id replace earlier ones.
#[derive(Debug, Clone, Default)]
pub struct Helpers {
    entries: Vec<(i32, HelperFn)>,
}

impl Helpers {
    /// An empty registry: programs may not call any helper.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers (or replaces) helper `id`.
    pub fn register(&mut self, id: i32, f: HelperFn) -> &mut Self {
        if let Some(slot) = self.entries.iter_mut().find(|(i, _)| *i == id) {
            slot.1 = f;
        } else {
            self.entries.push((id, f));
        }
        self
    }

    /// Builder form of [`Helpers::register`].
    pub fn with(mut self, id: i32, f: HelperFn) -> Self {
        self.register(id, f);
        self
    }

    /// The helper registered under `id`.
    pub fn get(&self, id: i32) -> Option<HelperFn> {
        self.entries.iter().find(|(i, _)| *i == id).map(|(_, f)| *f)
    }

    pub(crate) fn entries(&self) -> &[(i32, HelperFn)] {
        &self.entries
    }

    /// The eight socket-filter helpers a converted cBPF program may call,
    /// under the ids of [`crate::abi::skb::helper`] ([`socket`]).
    pub fn socket() -> Self {
        Self::new()
            .with(SKB_LOAD_8, socket::helper_skb_load_8)
            .with(SKB_LOAD_16, socket::helper_skb_load_16)
            .with(SKB_LOAD_32, socket::helper_skb_load_32)
            .with(SKB_GET_NLATTR, socket::helper_skb_get_nlattr)
            .with(SKB_GET_NLATTR_NEST, socket::helper_skb_get_nlattr_nest)
            .with(GET_RAW_CPU_ID, socket::helper_get_raw_cpu_id)
            .with(SKB_GET_PAY_OFFSET, socket::helper_skb_get_pay_offset)
            .with(USER_RND_U32, socket::helper_user_rnd_u32)
    }

    /// The helpers the bpf_conformance suite needs: helper 5 (see
    /// [`conformance_helper_5`]).
    pub fn conformance() -> Self {
        Self::new().with(CONFORMANCE_HELPER_ID, conformance_helper_5)
    }
}

/// Id of the one helper the bpf_conformance suite calls.
pub const CONFORMANCE_HELPER_ID: i32 = 5;

/// bpf_conformance's helper 5 (`call_unwind_fail.data`, `callx.data`): the
/// tests only need the call to return. uBPF's version returns `r1` and
/// unwinds when that is 0; we return `r1` and never unwind.
pub fn conformance_helper_5(_: &mut Memory<'_>, args: [u64; 5]) -> Result<u64, HelperError> {
    Ok(args[0])
}
