//! Our documented socket-buffer context for converted socket filters.
//!
//! The kernel's converted socket filters read `struct sk_buff` fields at
//! build-specific offsets and call helpers by address. We cannot match a
//! particular kernel build, so we fix our own layout and helper numbering
//! here; the converter (`convert` crate) emits these offsets and ids, and the
//! interpreter's socket helpers implement them with the kernel's semantics.
//!
//! Context region (`r1` on entry), little-endian, [`CTX_SIZE`] bytes:
//!
//! | offset | size | field | kernel counterpart |
//! |---|---|---|---|
//! | 0  | 8 | `data`: address of the first packet byte | `skb->data` |
//! | 8  | 4 | `len`: total bytes, linear + paged | `skb->len` |
//! | 12 | 4 | `data_len`: paged (non-linear) bytes | `skb->data_len` |
//! | 16 | 2 | `protocol`, network byte order as stored | `skb->protocol` |
//! | 18 | 1 | `pkt_type` (low 3 bits used) | `PKT_TYPE_OFFSET` bitfield |
//! | 20 | 4 | `mark` | `skb->mark` |
//! | 24 | 2 | `queue_mapping` | `skb->queue_mapping` |
//! | 26 | 2 | `vlan_tci` | `skb->vlan_tci` |
//! | 28 | 2 | `vlan_proto`, network byte order as stored | `skb->vlan_proto` |
//! | 32 | 4 | `vlan_all`: non-zero iff a VLAN tag is present | `skb->vlan_all` |
//! | 36 | 4 | `hash` | `skb->hash` |
//! | 40 | 8 | `dev`: address of the device record, or 0 for none | `skb->dev` |
//! | 48 | 4 | `network_header`: offset of the network header from `data` | `skb->network_header` |
//! | 52 | 4 | `mac_header`: offset of the MAC header from `data`, [`MAC_HEADER_UNSET`] if none | `skb->mac_header` |
//! | 56 | 4 | `cpu`: the value `SKF_AD_CPU` reads | `raw_smp_processor_id()` |
//! | 60 | 4 | `random`: the value `SKF_AD_RANDOM` reads (fixed for reproducibility) | `get_random_u32()` |
//! | 64 | 4 | device record: `ifindex` | `net_device.ifindex` |
//! | 68 | 2 | device record: `type` | `net_device.type` |
//! | 72 | 4 | `pay_offset`: what `SKF_AD_PAY_OFFSET` reads ([`SkbMeta::pay_offset`]) | `skb_get_poff(skb)` |
//! | 76 | 4 | reserved, zero | |
//!
//! The device record lives inside the context itself (at [`DEV_RECORD`]), so
//! `dev` points at `ctx + 64` when a device is present. `pay_offset` was
//! added after the device record, so no earlier offset moved.

use crate::abi::region::{CTX_BASE, PACKET_BASE};

/// Size of the context region.
pub const CTX_SIZE: usize = 80;

pub const OFF_DATA: i16 = 0;
pub const OFF_LEN: i16 = 8;
pub const OFF_DATA_LEN: i16 = 12;
pub const OFF_PROTOCOL: i16 = 16;
pub const OFF_PKT_TYPE: i16 = 18;
pub const OFF_MARK: i16 = 20;
pub const OFF_QUEUE_MAPPING: i16 = 24;
pub const OFF_VLAN_TCI: i16 = 26;
pub const OFF_VLAN_PROTO: i16 = 28;
pub const OFF_VLAN_ALL: i16 = 32;
pub const OFF_HASH: i16 = 36;
pub const OFF_DEV: i16 = 40;
pub const OFF_NETWORK_HEADER: i16 = 48;
pub const OFF_MAC_HEADER: i16 = 52;
pub const OFF_CPU: i16 = 56;
pub const OFF_RANDOM: i16 = 60;
/// Offset of the device record inside the context.
pub const DEV_RECORD: i16 = 64;
/// `net_device.ifindex`, relative to the device record.
pub const DEV_OFF_IFINDEX: i16 = 0;
/// `net_device.type`, relative to the device record.
pub const DEV_OFF_TYPE: i16 = 4;
/// The payload offset [`helper_skb_get_pay_offset`](crate::abi::helpers::socket::helper_skb_get_pay_offset) returns (a `u32`).
pub const OFF_PAY_OFFSET: i16 = 72;
/// `mac_header` value meaning "no MAC header set" (`skb_mac_header_was_set()` false).
pub const MAC_HEADER_UNSET: u32 = 0xffff;

/// Helper ids the converter emits in `call` instructions (our numbering; the
/// kernel calls these functions by address relative to `__bpf_call_base`).
pub mod helper {
    /// `bpf_skb_load_helper_8(skb, data, headlen, offset)`.
    pub const SKB_LOAD_8: i32 = 0x1001;
    /// `bpf_skb_load_helper_16(skb, data, headlen, offset)`.
    pub const SKB_LOAD_16: i32 = 0x1002;
    /// `bpf_skb_load_helper_32(skb, data, headlen, offset)`.
    pub const SKB_LOAD_32: i32 = 0x1003;
    /// `bpf_skb_get_nlattr(skb, a, x)`.
    pub const SKB_GET_NLATTR: i32 = 0x1004;
    /// `bpf_skb_get_nlattr_nest(skb, a, x)`.
    pub const SKB_GET_NLATTR_NEST: i32 = 0x1005;
    /// `bpf_get_raw_cpu_id()`.
    pub const GET_RAW_CPU_ID: i32 = 0x1006;
    /// `bpf_skb_get_pay_offset(skb)`.
    pub const SKB_GET_PAY_OFFSET: i32 = 0x1007;
    /// `bpf_user_rnd_u32()`.
    pub const USER_RND_U32: i32 = 0x1008;
}

/// `SKF_NET_OFF` (include/uapi/linux/filter.h): negative offsets from here are
/// relative to the network header.
pub const SKF_NET_OFF: i32 = -0x100000;
/// `SKF_LL_OFF`: negative offsets from here are relative to the MAC header.
pub const SKF_LL_OFF: i32 = -0x200000;
/// `-EFAULT`, what the load helpers return on a failed read.
pub const EFAULT: i64 = -14;

/// The fields of a socket buffer that a converted socket filter can observe.
///
/// [`SkbMeta::default`] gives the values of lib/test_bpf.c's `populate_skb()`
/// (SPEC §8.1), so the kernel's test expectations hold unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkbMeta {
    /// `ntohs(skb->protocol)`, e.g. 0x0800 (stored in network byte order).
    pub protocol: u16,
    /// `skb->pkt_type` (3 bits).
    pub pkt_type: u8,
    /// `skb->dev->ifindex`, or `None` for `skb->dev == NULL`.
    pub ifindex: Option<u32>,
    /// `skb->dev->type`.
    pub hatype: u16,
    pub mark: u32,
    pub queue_mapping: u16,
    pub vlan_tci: u16,
    /// `ntohs(skb->vlan_proto)` (stored in network byte order).
    pub vlan_proto: u16,
    /// Whether a VLAN tag is present (`vlan_all != 0` in 6.18).
    pub vlan_present: bool,
    pub hash: u32,
    /// What `SKF_AD_CPU` (`bpf_get_raw_cpu_id()`) returns.
    pub cpu: u32,
    /// What `SKF_AD_RANDOM` (`bpf_user_rnd_u32()`) returns.
    pub random: u32,
    /// Offset of the network header from `data`; `None` means
    /// `min(headlen, 14)`, as `populate_skb()` sets it.
    pub network_header: Option<u32>,
    /// Offset of the MAC header from `data`; `None` means "not set"
    /// (`skb_mac_header_was_set()` is false).
    pub mac_header: Option<u32>,
    /// Bytes in the linear area; the rest of the packet is paged data
    /// (reachable only through the load helpers). `None`: all linear.
    pub headlen: Option<usize>,
    /// The payload offset `skb_get_poff()` (net/core/flow_dissector.c)
    /// would return for this packet: what `SKF_AD_PAY_OFFSET`
    /// (`bpf_skb_get_pay_offset()`) reads. Computed by the caller: this
    /// crate has no flow dissector (the one model of it is
    /// `cbpf::Skb::payload_offset()`, which `convert::socket_ctx::skb_meta()`
    /// fills this from). 0 by default, which is also what the kernel
    /// returns when dissection fails.
    pub pay_offset: u32,
}

impl Default for SkbMeta {
    fn default() -> Self {
        SkbMeta {
            protocol: 0x0800,
            pkt_type: 3,
            ifindex: Some(577),
            hatype: 588,
            mark: 0x1234_aaaa,
            queue_mapping: 123,
            vlan_tci: 0xffff,
            vlan_proto: 0x0800,
            vlan_present: true,
            hash: 0x1234_aaab,
            cpu: 0,
            random: 0,
            network_header: None,
            mac_header: Some(0),
            headlen: None,
            pay_offset: 0,
        }
    }
}

/// A socket buffer ready to run a program on: the [`CTX_SIZE`]-byte context
/// (layout above) and the packet (linear part first, then paged data).
///
/// Build it once per packet; [`crate::abi::memory::Input::Skb`] borrows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkbContext {
    ctx: [u8; CTX_SIZE],
    packet: Vec<u8>,
    headlen: usize,
    meta: SkbMeta,
}

fn put(ctx: &mut [u8; CTX_SIZE], off: i16, bytes: &[u8]) {
    let start = off as usize;
    if let Some(dst) = ctx.get_mut(start..start + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

impl SkbContext {
    /// Builds the context for `packet` (linear bytes, then paged bytes past
    /// `meta.headlen`). Packets must be shorter than 4 GiB.
    pub fn new(packet: &[u8], meta: &SkbMeta) -> SkbContext {
        let headlen = meta.headlen.unwrap_or(packet.len()).min(packet.len());
        let network = meta.network_header.unwrap_or(headlen.min(14) as u32);
        let mut ctx = [0u8; CTX_SIZE];
        put(&mut ctx, OFF_DATA, &PACKET_BASE.to_le_bytes());
        put(&mut ctx, OFF_LEN, &(packet.len() as u32).to_le_bytes());
        put(&mut ctx, OFF_DATA_LEN, &((packet.len() - headlen) as u32).to_le_bytes());
        put(&mut ctx, OFF_PROTOCOL, &meta.protocol.to_be_bytes());
        put(&mut ctx, OFF_PKT_TYPE, &[meta.pkt_type & 7]);
        put(&mut ctx, OFF_MARK, &meta.mark.to_le_bytes());
        put(&mut ctx, OFF_QUEUE_MAPPING, &meta.queue_mapping.to_le_bytes());
        put(&mut ctx, OFF_VLAN_TCI, &meta.vlan_tci.to_le_bytes());
        put(&mut ctx, OFF_VLAN_PROTO, &meta.vlan_proto.to_be_bytes());
        // The kernel's vlan_all overlays {__be16 vlan_proto; u16 vlan_tci};
        // present-but-all-zero still reads as present here.
        let vlan_all = if meta.vlan_present {
            let v = u32::from(u16::from_le_bytes(meta.vlan_proto.to_be_bytes())) | (u32::from(meta.vlan_tci) << 16);
            v.max(1)
        } else {
            0
        };
        put(&mut ctx, OFF_VLAN_ALL, &vlan_all.to_le_bytes());
        put(&mut ctx, OFF_HASH, &meta.hash.to_le_bytes());
        let dev = if meta.ifindex.is_some() { CTX_BASE + DEV_RECORD as u64 } else { 0 };
        put(&mut ctx, OFF_DEV, &dev.to_le_bytes());
        put(&mut ctx, OFF_NETWORK_HEADER, &network.to_le_bytes());
        put(&mut ctx, OFF_MAC_HEADER, &meta.mac_header.unwrap_or(MAC_HEADER_UNSET).to_le_bytes());
        put(&mut ctx, OFF_CPU, &meta.cpu.to_le_bytes());
        put(&mut ctx, OFF_RANDOM, &meta.random.to_le_bytes());
        put(&mut ctx, DEV_RECORD + DEV_OFF_IFINDEX, &meta.ifindex.unwrap_or(0).to_le_bytes());
        put(&mut ctx, DEV_RECORD + DEV_OFF_TYPE, &meta.hatype.to_le_bytes());
        put(&mut ctx, OFF_PAY_OFFSET, &meta.pay_offset.to_le_bytes());
        let mut meta = meta.clone();
        meta.network_header = Some(network);
        meta.headlen = Some(headlen);
        SkbContext { ctx, packet: packet.to_vec(), headlen, meta }
    }

    /// The same packet as the kernel would hold it after a capture cut it
    /// short: `skb->len` is `wire_len`, the linear data (and any paged
    /// bytes already present) are the captured bytes, and nothing past them
    /// exists. So `ld len` reads the wire length while every load past the
    /// captured bytes fails in `skb_copy_bits()` (`-EFAULT`, and the
    /// converted filter returns 0 — libpcap's `bpf_filter()` answer for a
    /// load past the capture).
    ///
    /// `skb->data_len` becomes `wire_len - headlen`, so the converted
    /// prologue's cached headlen (`skb->len - skb->data_len`, see
    /// `convert_bpf_ld_abs()` in net/core/filter.c) is still the linear
    /// length. A `wire_len` below the linear length (a malformed record)
    /// gives `data_len` 0 and that smaller headlen; the bytes then read go
    /// through `skb_copy_bits()` instead, with the same result.
    ///
    /// # Deviations
    /// The nlattr helpers keep judging linearity and `skb->len` by the
    /// bytes present, as the classic model (`cbpf::Skb::wire_len` changes
    /// only `ld len`) does; a kernel skb with absent paged data cannot
    /// exist.
    pub fn with_wire_len(mut self, wire_len: u32) -> SkbContext {
        let data_len = wire_len.saturating_sub(self.headlen as u32);
        put(&mut self.ctx, OFF_LEN, &wire_len.to_le_bytes());
        put(&mut self.ctx, OFF_DATA_LEN, &data_len.to_le_bytes());
        self
    }

    /// The context bytes (`r1` points at them).
    pub fn ctx_bytes(&self) -> &[u8] {
        &self.ctx
    }

    /// The linear part of the packet (`skb->data`, `skb_headlen()` bytes).
    pub fn linear(&self) -> &[u8] {
        self.packet.get(..self.headlen).unwrap_or(&self.packet)
    }

    /// The whole packet, linear then paged (`skb->len` bytes).
    pub fn packet(&self) -> &[u8] {
        &self.packet
    }

    /// The metadata, with `network_header` and `headlen` resolved.
    pub fn meta(&self) -> &SkbMeta {
        &self.meta
    }

    fn network_header(&self) -> i64 {
        i64::from(self.meta.network_header.unwrap_or(0))
    }

    /// Mirrors `skb_copy_bits()` in net/core/skbuff.c (Linux 6.18) for a
    /// read of `len` bytes at `offset` into the linear + paged packet: its
    /// `offset > skb->len - len` refusal is the slice's bound (our paged
    /// data is one contiguous fragment after the linear bytes).
    ///
    /// # Deviations
    /// A negative offset fails: the kernel copies from the headroom before
    /// `skb->data`, which this context does not have. No caller here passes
    /// one: `data` is at the MAC header, so converted offsets are never
    /// negative.
    pub fn copy_bits(&self, offset: i32, len: usize) -> Option<&[u8]> {
        self.copy_bits_at(i64::from(offset), len)
    }

    /// [`SkbContext::copy_bits`] for an offset already widened to 64 bits.
    pub(crate) fn copy_bits_at(&self, offset: i64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        self.packet.get(start..start.checked_add(len)?)
    }

    /// Mirrors `bpf_skb_load_helper_convert_offset()` in net/core/filter.c
    /// (Linux 6.18, since 6.15): a classic load offset as an offset from
    /// `skb->data`. Non-negative offsets are kept; `SKF_NET_OFF + k` becomes
    /// `k + skb_network_offset()`; `SKF_LL_OFF + k` becomes
    /// `k + skb_mac_offset()` if the MAC header was set; anything else is
    /// `None` (the kernel's `INT_MIN`, answered with `-EFAULT`).
    ///
    /// # Deviations
    /// Computed in 64 bits: our header offsets are `u32` where the kernel's
    /// are 16-bit, so the sum cannot overflow (a result past the packet
    /// fails the later `skb_copy_bits()` bounds test, as in the kernel).
    pub fn load_helper_convert_offset(&self, offset: i32) -> Option<i64> {
        if offset >= 0 {
            return Some(i64::from(offset));
        }
        if offset >= SKF_NET_OFF {
            return Some(i64::from(offset) - i64::from(SKF_NET_OFF) + self.network_header());
        }
        if offset >= SKF_LL_OFF {
            let mac = self.meta.mac_header?;
            return Some(i64::from(offset) - i64::from(SKF_LL_OFF) + i64::from(mac));
        }
        None
    }

    /// Mirrors `bpf_internal_load_pointer_neg_helper()` in kernel/bpf/core.c
    /// (Linux 6.18, where only the sparc32 JIT still calls it): resolves a
    /// negative `SKF_NET_OFF`/`SKF_LL_OFF` offset to `size` bytes of the
    /// linear area, or `None`.
    ///
    /// Only the legacy eBPF `LD|ABS`/`LD|IND` path ([`SkbContext::header_pointer`])
    /// uses it. The converter's load helpers do not: since Linux 6.15 they
    /// convert negative offsets first and may then read paged data (see
    /// [`SkbContext::load_helper_convert_offset`]).
    ///
    /// # Deviations
    /// None: the pointer must lie in the linear area (offsets below
    /// `SKF_LL_OFF` give the kernel's NULL pointer, which fails the
    /// `ptr >= skb->head` test).
    pub fn load_pointer_neg(&self, k: i32, size: usize) -> Option<&[u8]> {
        let ptr = if k >= SKF_NET_OFF {
            self.network_header() + i64::from(k) - i64::from(SKF_NET_OFF)
        } else if k >= SKF_LL_OFF {
            let mac = self.meta.mac_header?;
            i64::from(mac) + i64::from(k) - i64::from(SKF_LL_OFF)
        } else {
            return None;
        };
        if ptr >= 0 && ptr + size as i64 <= self.headlen as i64 {
            self.packet.get(ptr as usize..ptr as usize + size)
        } else {
            None
        }
    }

    /// Mirrors the pre-4.18 `bpf_load_pointer()` (`skb_header_pointer()` for
    /// `k >= 0`, else the negative-offset helper) followed by the big-endian
    /// read of `LD_ABS`/`LD_IND`; `size` is 1, 2 or 4.
    ///
    /// This is the legacy eBPF `LD|ABS`/`LD|IND` instruction's historical
    /// meaning (the interpreter lost those instructions in 4.18), so negative
    /// offsets stay limited to the linear area here, unlike the 6.15+ load
    /// helpers converted programs call ([`helper_skb_load_8`](crate::abi::helpers::socket::helper_skb_load_8)).
    ///
    /// # Deviations
    /// None. (`skb_header_pointer()` reads the linear area in place when
    /// the bytes lie there and copies them with `skb_copy_bits()` when not;
    /// our packet is one contiguous buffer, so both are [`SkbContext::copy_bits`].)
    pub fn header_pointer(&self, k: i32, size: usize) -> Option<u32> {
        let bytes = if k >= 0 { self.copy_bits(k, size) } else { self.load_pointer_neg(k, size) }?;
        Some(be(bytes))
    }
}

/// The big-endian value of 1 to 4 bytes.
pub(crate) fn be(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b))
}
