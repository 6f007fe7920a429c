//! What a run reads from its context, shared by the fast interpreter and
//! the trace: the [`Context`] trait, the seccomp context (`struct
//! seccomp_data` as bytes) and the socket context over a
//! [`Skb`](crate::uapi::skb::Skb) with the kernel's load helpers and the 16
//! ancillary loads.

use crate::opcode::*;
use crate::uapi::seccomp_data::SECCOMP_DATA_SIZE;
use crate::uapi::skb::Skb;

/// What a run needs from its context. Implemented by the seccomp and socket
/// contexts; the run loop is monomorphised for each.
pub(super) trait Context {
    /// Seccomp-internal `LDX|W|ABS` (0x21): the native-endian word at `k`.
    fn seccomp_word(&self, k: u32) -> u32;
    /// Packet load of `size` (1, 2 or 4) bytes at the classic offset
    /// `offset`, big-endian; `None` makes the filter return 0.
    fn load(&self, size: usize, offset: i32) -> Option<u32>;
    /// `skb->len`.
    fn len(&self) -> u32;
    /// An ancillary load; `None` makes the filter return the current A.
    fn ancillary(&self, which: Ancillary, a: u32, x: u32) -> Option<u32>;
}

/// The seccomp context: `struct seccomp_data` as bytes.
pub(super) struct SeccompCtx<'a>(pub(super) &'a [u8; SECCOMP_DATA_SIZE]);

impl Context for SeccompCtx<'_> {
    #[inline(always)]
    fn seccomp_word(&self, k: u32) -> u32 {
        // seccomp_check_filter() guarantees k < 64 and k % 4 == 0, so the
        // mask changes nothing; it lets the compiler see the read in range.
        let at = (k & 60) as usize;
        match self.0.get(at..at + 4) {
            Some(&[b0, b1, b2, b3]) => u32::from_ne_bytes([b0, b1, b2, b3]),
            _ => 0,
        }
    }

    // seccomp_check_filter() rejects every packet and ancillary load, and
    // rewrites `len`; these are unreachable for seccomp-mode programs.
    fn load(&self, _size: usize, _offset: i32) -> Option<u32> {
        None
    }

    fn len(&self) -> u32 {
        SECCOMP_DATA_SIZE as u32
    }

    fn ancillary(&self, _which: Ancillary, _a: u32, _x: u32) -> Option<u32> {
        Some(0)
    }
}

/// The 16 ancillary loads (`SKF_AD_*`, include/uapi/linux/filter.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Ancillary {
    Protocol,
    PktType,
    IfIndex,
    NlAttr,
    NlAttrNest,
    Mark,
    Queue,
    HaType,
    RxHash,
    Cpu,
    AluXorX,
    VlanTag,
    VlanTagPresent,
    PayOffset,
    Random,
    VlanTpid,
}

impl Ancillary {
    /// The load at `SKF_AD_OFF + x`, if `x` names one.
    pub(super) fn from_offset(x: u32) -> Option<Self> {
        Some(match x {
            SKF_AD_PROTOCOL => Ancillary::Protocol,
            SKF_AD_PKTTYPE => Ancillary::PktType,
            SKF_AD_IFINDEX => Ancillary::IfIndex,
            SKF_AD_NLATTR => Ancillary::NlAttr,
            SKF_AD_NLATTR_NEST => Ancillary::NlAttrNest,
            SKF_AD_MARK => Ancillary::Mark,
            SKF_AD_QUEUE => Ancillary::Queue,
            SKF_AD_HATYPE => Ancillary::HaType,
            SKF_AD_RXHASH => Ancillary::RxHash,
            SKF_AD_CPU => Ancillary::Cpu,
            SKF_AD_ALU_XOR_X => Ancillary::AluXorX,
            SKF_AD_VLAN_TAG => Ancillary::VlanTag,
            SKF_AD_VLAN_TAG_PRESENT => Ancillary::VlanTagPresent,
            SKF_AD_PAY_OFFSET => Ancillary::PayOffset,
            SKF_AD_RANDOM => Ancillary::Random,
            SKF_AD_VLAN_TPID => Ancillary::VlanTpid,
            _ => return None,
        })
    }
}

/// The socket context as the run loop sees it.
pub(super) struct SocketCtx<'s, 'a> {
    skb: &'s Skb<'a>,
}

impl<'s, 'a> SocketCtx<'s, 'a> {
    pub(super) fn new(skb: &'s Skb<'a>) -> Self {
        SocketCtx { skb }
    }

    /// `bpf_skb_load_helper_convert_offset()` (net/core/filter.c, Linux
    /// 6.18): a classic offset to an offset from `skb->data`.
    ///
    /// # Deviations
    /// None. Since v6.15 (commit d4bac0288a2b, "bpf: support SKF_NET_OFF and
    /// SKF_LL_OFF on skb frags") negative offsets are converted and then read
    /// like positive ones, so they may reach paged data; before, they went
    /// through `bpf_internal_load_pointer_neg_helper()` and were limited to
    /// the linear area.
    fn convert_offset(&self, offset: i32) -> Option<usize> {
        const NET_OFF: i32 = SKF_NET_OFF as i32;
        const LL_OFF: i32 = SKF_LL_OFF as i32;
        if offset >= 0 {
            return usize::try_from(offset).ok();
        }
        // offset - SKF_NET_OFF is in [0, 0x100000): no overflow.
        if offset >= NET_OFF {
            return usize::try_from(offset - NET_OFF).ok()?.checked_add(self.skb.network_offset);
        }
        if offset >= LL_OFF {
            let mac = self.skb.mac_offset?;
            return usize::try_from(offset - LL_OFF).ok()?.checked_add(mac);
        }
        None
    }

    /// `bpf_skb_get_nlattr()` (net/core/filter.c, Linux 6.18).
    ///
    /// # Deviations
    /// None; `struct nlattr` fields are read in host byte order.
    fn nlattr(&self, a: u32, x: u32) -> u32 {
        let Some(start) = self.nlattr_at(a) else { return 0 };
        nla_find(self.skb.data, start, self.skb.data.len() - start, x).map_or(0, |at| at as u32)
    }

    /// The checks both netlink helpers open with: a linear skb, at least
    /// one `struct nlattr` long, with `A <= skb->len - sizeof(struct
    /// nlattr)`; `Some(A)` when they pass (the helpers return 0 otherwise).
    fn nlattr_at(&self, a: u32) -> Option<usize> {
        let len = self.skb.data.len();
        (!self.skb.is_nonlinear() && len >= 4 && a as usize <= len - 4).then_some(a as usize)
    }

    /// `bpf_skb_get_nlattr_nest()` (net/core/filter.c, Linux 6.18).
    ///
    /// # Deviations
    /// None; `struct nlattr` fields are read in host byte order.
    fn nlattr_nest(&self, a: u32, x: u32) -> u32 {
        let Some(start) = self.nlattr_at(a) else { return 0 };
        let (data, len) = (self.skb.data, self.skb.data.len());
        // `if (!nla_ok(nla, skb->len - a)) return 0;`
        let Some(nla_len) = nla_len_at(data, start) else { return 0 };
        if nla_len < 4 || nla_len > len - start {
            return 0;
        }
        // nla_find_nested(): search the payload of the attribute at A.
        nla_find(data, start + 4, nla_len - 4, x).map_or(0, |at| at as u32)
    }
}

/// `nla_len` of the attribute at `at` (host byte order).
fn nla_len_at(data: &[u8], at: usize) -> Option<usize> {
    match data.get(at..at.checked_add(2)?) {
        Some(&[b0, b1]) => Some(usize::from(u16::from_ne_bytes([b0, b1]))),
        _ => None,
    }
}

/// `nla_find()` (lib/nlattr.c, Linux 6.18): the offset in `data` of the first
/// attribute of type `attrtype` among those in `data[head..head + len]`.
///
/// # Deviations
/// None: `nla_ok()` (`rem >= 4 && 4 <= nla_len <= rem`), `nla_next()` (step by
/// `NLA_ALIGN(nla_len)`), `nla_type()` (type & 0x3fff) and the `int`
/// comparison with `attrtype` are kept.
fn nla_find(data: &[u8], head: usize, len: usize, attrtype: u32) -> Option<usize> {
    let wanted = attrtype as i32;
    let mut pos = head;
    let mut rem = i64::try_from(len).ok()?;
    while rem >= 4 {
        let nla_len = nla_len_at(data, pos)?;
        if nla_len < 4 || nla_len as i64 > rem {
            return None;
        }
        let ty = match data.get(pos + 2..pos + 4) {
            Some(&[b0, b1]) => u16::from_ne_bytes([b0, b1]),
            _ => return None,
        };
        if i32::from(ty & 0x3fff) == wanted {
            return Some(pos);
        }
        let total = (nla_len + 3) & !3;
        rem -= total as i64;
        pos += total;
    }
    None
}

impl Context for SocketCtx<'_, '_> {
    fn seccomp_word(&self, _k: u32) -> u32 {
        // bpf_check_classic() rejects 0x21 from users: unreachable.
        0
    }

    /// `bpf_skb_load_helper_{8,16,32}()` (net/core/filter.c, Linux 6.18), and
    /// the inline fast path `convert_bpf_ld_abs()` emits before them, which
    /// reads the same bytes.
    ///
    /// # Deviations
    /// None: the linear area and the fragments form one byte string here, so
    /// `skb_copy_bits()` and the direct read agree by construction.
    #[inline]
    fn load(&self, size: usize, offset: i32) -> Option<u32> {
        let at = self.convert_offset(offset)?;
        let bytes = self.skb.bytes(at, size)?;
        Some(match *bytes {
            [b0] => u32::from(b0),
            [b0, b1] => u32::from(u16::from_be_bytes([b0, b1])),
            [b0, b1, b2, b3] => u32::from_be_bytes([b0, b1, b2, b3]),
            _ => return None,
        })
    }

    fn len(&self) -> u32 {
        self.skb.wire_len.unwrap_or(self.skb.data.len() as u32)
    }

    /// `convert_bpf_extensions()` (net/core/filter.c, Linux 6.18), case by
    /// case in the kernel's order; `None` is the early `exit` of the
    /// IFINDEX/HATYPE sequence when `skb->dev` is NULL (returns A).
    ///
    /// # Deviations
    /// `SKF_AD_PAY_OFFSET`: see [`Skb::payload_offset`].
    fn ancillary(&self, which: Ancillary, a: u32, x: u32) -> Option<u32> {
        let skb = self.skb;
        Some(match which {
            Ancillary::Protocol => u32::from(skb.protocol),
            Ancillary::PktType => u32::from(skb.pkt_type & 7),
            Ancillary::IfIndex => skb.dev?.ifindex as u32,
            Ancillary::HaType => u32::from(skb.dev?.hatype),
            Ancillary::Mark => skb.mark,
            Ancillary::RxHash => skb.rxhash,
            Ancillary::Queue => u32::from(skb.queue_mapping),
            Ancillary::VlanTag => u32::from(skb.vlan_tci),
            Ancillary::VlanTagPresent => u32::from(skb.vlan_tci != 0 || skb.vlan_proto != 0),
            Ancillary::VlanTpid => u32::from(skb.vlan_proto),
            Ancillary::PayOffset => skb.payload_offset(),
            Ancillary::NlAttr => self.nlattr(a, x),
            Ancillary::NlAttrNest => self.nlattr_nest(a, x),
            Ancillary::Cpu => skb.cpu,
            Ancillary::Random => skb.random,
            Ancillary::AluXorX => a ^ x,
        })
    }
}
