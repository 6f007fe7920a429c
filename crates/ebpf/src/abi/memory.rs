//! What a run sees: its [`Input`] (what `r1`, and `r2`, point at) and the
//! [`Memory`] regions (see [`crate::abi::region`]) every access goes
//! through, as the interpreter and helpers see them.

use crate::abi::region::{CTX_BASE, STACK_BASE, STACK_SIZE, STACK_TOTAL};
use crate::abi::skb::SkbContext;

/// What a run sees in `r1` (and `r2`).
#[derive(Debug)]
pub enum Input<'a> {
    /// `r1 = 0` (test_bpf's `FLAG_NO_DATA`).
    None,
    /// A read-only context, e.g. the 64-byte `struct seccomp_data`; `r1` = its address.
    Ctx(&'a [u8]),
    /// A socket buffer: `r1` = its context (layout in [`crate::abi::skb`]), whose
    /// `data` field points at the packet region.
    Skb(&'a SkbContext),
    /// Writable memory, bpf_conformance convention: `r1` = its address, `r2` = its length.
    Memory(&'a mut [u8]),
}

/// The memory regions of one run, as helpers see them.
#[derive(Debug)]
pub struct Memory<'a> {
    ctx: &'a [u8],
    packet: &'a [u8],
    stack: &'a mut [u8],
    /// Lowest stack offset the current frame may touch (moved by local
    /// calls and returns).
    pub(crate) stack_lo: usize,
    user: &'a mut [u8],
    pub(crate) skb: Option<&'a SkbContext>,
}

impl<'a> Memory<'a> {
    /// The regions of a run that starts in the top stack frame.
    #[inline(always)]
    pub(crate) fn new(
        ctx: &'a [u8],
        packet: &'a [u8],
        stack: &'a mut [u8],
        user: &'a mut [u8],
        skb: Option<&'a SkbContext>,
    ) -> Self {
        Memory { ctx, packet, stack, stack_lo: STACK_TOTAL - STACK_SIZE, user, skb }
    }

    /// Reads `N` bytes at `addr`. The context (seccomp's and the socket
    /// filter's hot case) and the stack are checked inline; the other
    /// regions out of line.
    #[inline(always)]
    pub(crate) fn read<const N: usize>(&self, addr: u64) -> Option<[u8; N]> {
        let off = addr as u32 as usize;
        let tag = addr >> 32;
        if tag == CTX_BASE >> 32 {
            return self.ctx.get(off..off + N)?.try_into().ok();
        }
        if tag == STACK_BASE >> 32 && off >= self.stack_lo {
            return self.stack.get(off..off + N)?.try_into().ok();
        }
        self.read_other(addr)
    }

    #[inline(never)]
    fn read_other<const N: usize>(&self, addr: u64) -> Option<[u8; N]> {
        let off = addr as u32 as usize;
        let region: &[u8] = match addr >> 32 {
            2 => self.packet,
            4 => self.user,
            _ => return None,
        };
        region.get(off..off + N)?.try_into().ok()
    }

    #[inline(always)]
    pub(crate) fn slot<const N: usize>(&mut self, addr: u64) -> Option<&mut [u8; N]> {
        let off = addr as u32 as usize;
        let region: &mut [u8] = match addr >> 32 {
            3 => {
                if off < self.stack_lo {
                    return None;
                }
                self.stack
            }
            4 => self.user,
            _ => return None,
        };
        region.get_mut(off..off + N)?.try_into().ok()
    }

    /// Reads `len` bytes at `addr` from any region, or `None` if they are not
    /// all inside one.
    pub fn bytes(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let off = addr as u32 as usize;
        let region: &[u8] = match addr >> 32 {
            1 => self.ctx,
            2 => self.packet,
            3 if off >= self.stack_lo => self.stack,
            4 => self.user,
            _ => return None,
        };
        region.get(off..off.checked_add(len)?)
    }

    /// Little-endian load of 1, 2, 4 or 8 bytes at `addr`.
    pub fn load(&self, addr: u64, size: usize) -> Option<u64> {
        let b = self.bytes(addr, size)?;
        let mut buf = [0u8; 8];
        buf.get_mut(..size)?.copy_from_slice(b);
        Some(u64::from_le_bytes(buf))
    }

    /// The run's socket buffer, if it has one.
    pub fn skb(&self) -> Option<&'a SkbContext> {
        self.skb
    }
}
