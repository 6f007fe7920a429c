//! Where each hook keeps the value of a classic ancillary load
//! (`ld [SKF_AD_OFF + x]`, include/uapi/linux/filter.h).
//!
//! A classic socket filter reads `struct sk_buff` fields through these
//! loads (`convert_bpf_extensions()` in net/core/filter.c, Linux 6.18). A
//! hook program reads its own context instead: `struct __sk_buff` for tc
//! and socket programs, `struct xdp_md` for XDP (include/uapi/linux/bpf.h),
//! or calls a helper. Where the hook has no such value the conversion is
//! refused with [`crate::HookError::NoValue`] naming the pc, the load and
//! the target: never an approximation.
//!
//! | load | xdp | tc | socket |
//! |---|---|---|---|
//! | `SKF_AD_PROTOCOL` | — | `__sk_buff.protocol` (byte-swapped: the field holds `skb->protocol` in network order) | same |
//! | `SKF_AD_PKTTYPE` | — | `__sk_buff.pkt_type` | same |
//! | `SKF_AD_IFINDEX` | `xdp_md.ingress_ifindex` | `__sk_buff.ifindex` | same |
//! | `SKF_AD_NLATTR`, `SKF_AD_NLATTR_NEST` | — | — | — |
//! | `SKF_AD_MARK` | — | `__sk_buff.mark` | same |
//! | `SKF_AD_QUEUE` | `xdp_md.rx_queue_index + 1` | `__sk_buff.queue_mapping` | same |
//! | `SKF_AD_HATYPE` | — | — | — |
//! | `SKF_AD_RXHASH` | — | `__sk_buff.hash` | same |
//! | `SKF_AD_CPU` | `bpf_get_smp_processor_id()` | same | same |
//! | `SKF_AD_ALU_XOR_X` | `A ^= X` | same | same |
//! | `SKF_AD_VLAN_TAG` | — | `__sk_buff.vlan_tci` | same |
//! | `SKF_AD_VLAN_TAG_PRESENT` | — | `__sk_buff.vlan_present` | same |
//! | `SKF_AD_PAY_OFFSET` | — | — | — |
//! | `SKF_AD_RANDOM` | `bpf_get_prandom_u32()` | same | same |
//! | `SKF_AD_VLAN_TPID` | — | `__sk_buff.vlan_proto` (byte-swapped) | same |
//!
//! `ld len` (`skb->len`) is `data_end - data` in XDP (the frame a program
//! without `BPF_F_XDP_HAS_FRAGS` sees is linear), `__sk_buff.len` in tc
//! (the frame from its MAC header) and `__sk_buff.len + 14` in a socket
//! program, whose `skb->data` is the network header behind a 14-byte
//! Ethernet header (see [`crate::Target::Socket`]).
//!
//! Why the refusals: XDP runs before an skb exists, so there is no
//! protocol, packet type, mark, hash or offloaded VLAN tag yet (the
//! `bpf_xdp_metadata_*` kfuncs are for device-bound programs only).
//! `dev->type` (`SKF_AD_HATYPE`), the netlink attribute search and the flow
//! dissector's payload offset have no `__sk_buff` field or helper in any
//! hook. `SKF_AD_QUEUE` in XDP: a driver that records the receive queue in
//! the skb it builds stores `queue_mapping = index + 1`
//! (`skb_record_rx_queue()`, include/linux/skbuff.h), which is what a
//! classic filter on that packet reads.

use std::fmt;

use cbpf::opcode::{
    SKF_AD_ALU_XOR_X, SKF_AD_CPU, SKF_AD_HATYPE, SKF_AD_IFINDEX, SKF_AD_MARK, SKF_AD_NLATTR, SKF_AD_NLATTR_NEST,
    SKF_AD_OFF, SKF_AD_PAY_OFFSET, SKF_AD_PKTTYPE, SKF_AD_PROTOCOL, SKF_AD_QUEUE, SKF_AD_RANDOM, SKF_AD_RXHASH,
    SKF_AD_VLAN_TAG, SKF_AD_VLAN_TAG_PRESENT, SKF_AD_VLAN_TPID,
};

use crate::Target;

/// The offset of the network header in the frame a direct-access hook
/// sees (`ETH_HLEN`): where `SKF_NET_OFF` loads start.
pub const NETWORK_OFFSET: u32 = 14;

/// One of the 16 classic ancillary loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ancillary(u32);

/// The ancillary loads in `SKF_AD_*` order, with their names.
const NAMES: [(u32, &str); 16] = [
    (SKF_AD_PROTOCOL, "SKF_AD_PROTOCOL"),
    (SKF_AD_PKTTYPE, "SKF_AD_PKTTYPE"),
    (SKF_AD_IFINDEX, "SKF_AD_IFINDEX"),
    (SKF_AD_NLATTR, "SKF_AD_NLATTR"),
    (SKF_AD_NLATTR_NEST, "SKF_AD_NLATTR_NEST"),
    (SKF_AD_MARK, "SKF_AD_MARK"),
    (SKF_AD_QUEUE, "SKF_AD_QUEUE"),
    (SKF_AD_HATYPE, "SKF_AD_HATYPE"),
    (SKF_AD_RXHASH, "SKF_AD_RXHASH"),
    (SKF_AD_CPU, "SKF_AD_CPU"),
    (SKF_AD_ALU_XOR_X, "SKF_AD_ALU_XOR_X"),
    (SKF_AD_VLAN_TAG, "SKF_AD_VLAN_TAG"),
    (SKF_AD_VLAN_TAG_PRESENT, "SKF_AD_VLAN_TAG_PRESENT"),
    (SKF_AD_PAY_OFFSET, "SKF_AD_PAY_OFFSET"),
    (SKF_AD_RANDOM, "SKF_AD_RANDOM"),
    (SKF_AD_VLAN_TPID, "SKF_AD_VLAN_TPID"),
];

impl Ancillary {
    /// The load `ld [k]` makes, when `k` is one of the 16 ancillary
    /// offsets (`bpf_anc_helper()`'s recognition, as
    /// [`cbpf::validate::is_ancillary`] has it).
    pub fn from_k(k: u32) -> Option<Ancillary> {
        cbpf::validate::is_ancillary(k).then(|| Ancillary(k.wrapping_sub(SKF_AD_OFF)))
    }

    /// Every ancillary load, in `SKF_AD_*` order.
    pub fn all() -> impl Iterator<Item = Ancillary> {
        NAMES.iter().map(|&(x, _)| Ancillary(x))
    }

    /// `x` of `SKF_AD_OFF + x`.
    pub fn offset(self) -> u32 {
        self.0
    }

    /// The `SKF_AD_*` name.
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|&&(x, _)| x == self.0).map_or("SKF_AD_?", |&(_, n)| n)
    }

    /// Where `target` keeps the value, or `None` when it has none.
    pub fn source(self, target: Target) -> Option<Source> {
        use Source::*;
        let xdp = target == Target::Xdp;
        Some(match self.0 {
            SKF_AD_PROTOCOL if !xdp => SkbField { offset: SKB_PROTOCOL, swap16: true },
            SKF_AD_PKTTYPE if !xdp => SkbField { offset: SKB_PKT_TYPE, swap16: false },
            SKF_AD_IFINDEX if xdp => XdpField { offset: XDP_INGRESS_IFINDEX, plus: 0 },
            SKF_AD_IFINDEX => SkbField { offset: SKB_IFINDEX, swap16: false },
            SKF_AD_MARK if !xdp => SkbField { offset: SKB_MARK, swap16: false },
            SKF_AD_QUEUE if xdp => XdpField { offset: XDP_RX_QUEUE_INDEX, plus: 1 },
            SKF_AD_QUEUE => SkbField { offset: SKB_QUEUE_MAPPING, swap16: false },
            SKF_AD_RXHASH if !xdp => SkbField { offset: SKB_HASH, swap16: false },
            SKF_AD_CPU => Helper(BPF_FUNC_GET_SMP_PROCESSOR_ID),
            SKF_AD_ALU_XOR_X => XorX,
            SKF_AD_VLAN_TAG if !xdp => SkbField { offset: SKB_VLAN_TCI, swap16: false },
            SKF_AD_VLAN_TAG_PRESENT if !xdp => SkbField { offset: SKB_VLAN_PRESENT, swap16: false },
            SKF_AD_RANDOM => Helper(BPF_FUNC_GET_PRANDOM_U32),
            SKF_AD_VLAN_TPID if !xdp => SkbField { offset: SKB_VLAN_PROTO, swap16: true },
            _ => return None,
        })
    }
}

impl fmt::Display for Ancillary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a hook program finds an ancillary value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A 32-bit field of `struct __sk_buff` (tc, socket); `swap16`: the
    /// field holds a `__be16` whose host-order value the load yields.
    SkbField { offset: i16, swap16: bool },
    /// A 32-bit field of `struct xdp_md`, plus a constant.
    XdpField { offset: i16, plus: i32 },
    /// The helper of this id returns it.
    Helper(i32),
    /// `A ^ X` (`SKF_AD_ALU_XOR_X` is an ALU operation, not a load).
    XorX,
}

/// The skb whose classic ancillary values are what an XDP program of this
/// crate reads from an `xdp_md` with these fields: the frame from its MAC
/// header (network header 14 bytes in), `dev->ifindex` the ingress
/// device's, `queue_mapping` the receive queue's index + 1 (the table
/// above). Fields XDP has no value for are 0 (a program reading them is
/// refused).
pub fn xdp_skb(frame: &[u8], ingress_ifindex: u32, rx_queue_index: u32) -> cbpf::Skb<'_> {
    cbpf::Skb {
        data: frame,
        headlen: frame.len(),
        protocol: 0,
        pkt_type: 0,
        dev: Some(cbpf::NetDevice { ifindex: ingress_ifindex as i32, hatype: 0 }),
        mark: 0,
        queue_mapping: rx_queue_index.wrapping_add(1) as u16,
        rxhash: 0,
        vlan_tci: 0,
        vlan_proto: 0,
        cpu: 0,
        random: 0,
        network_offset: (NETWORK_OFFSET as usize).min(frame.len()),
        mac_offset: Some(0),
        wire_len: None,
    }
}

/// `offsetof(struct __sk_buff, len)` (include/uapi/linux/bpf.h).
pub(crate) const SKB_LEN: i16 = 0;
/// `offsetof(struct __sk_buff, pkt_type)`.
const SKB_PKT_TYPE: i16 = 4;
/// `offsetof(struct __sk_buff, mark)`.
pub(crate) const SKB_MARK: i16 = 8;
/// `offsetof(struct __sk_buff, queue_mapping)`.
const SKB_QUEUE_MAPPING: i16 = 12;
/// `offsetof(struct __sk_buff, protocol)`.
const SKB_PROTOCOL: i16 = 16;
/// `offsetof(struct __sk_buff, vlan_present)`.
const SKB_VLAN_PRESENT: i16 = 20;
/// `offsetof(struct __sk_buff, vlan_tci)`.
const SKB_VLAN_TCI: i16 = 24;
/// `offsetof(struct __sk_buff, vlan_proto)`.
const SKB_VLAN_PROTO: i16 = 28;
/// `offsetof(struct __sk_buff, ifindex)`.
const SKB_IFINDEX: i16 = 40;
/// `offsetof(struct __sk_buff, hash)`.
const SKB_HASH: i16 = 68;
/// `offsetof(struct __sk_buff, data)`.
pub(crate) const SKB_DATA: i16 = 76;
/// `offsetof(struct __sk_buff, data_end)`.
pub(crate) const SKB_DATA_END: i16 = 80;
/// `offsetof(struct xdp_md, data)`.
pub(crate) const XDP_DATA: i16 = 0;
/// `offsetof(struct xdp_md, data_end)`.
pub(crate) const XDP_DATA_END: i16 = 4;
/// `offsetof(struct xdp_md, ingress_ifindex)`.
const XDP_INGRESS_IFINDEX: i16 = 12;
/// `offsetof(struct xdp_md, rx_queue_index)`.
const XDP_RX_QUEUE_INDEX: i16 = 16;

/// `BPF_FUNC_get_prandom_u32` (`enum bpf_func_id`).
pub(crate) const BPF_FUNC_GET_PRANDOM_U32: i32 = 7;
/// `BPF_FUNC_get_smp_processor_id`.
pub(crate) const BPF_FUNC_GET_SMP_PROCESSOR_ID: i32 = 8;
/// `BPF_FUNC_skb_pull_data`.
pub(crate) const BPF_FUNC_SKB_PULL_DATA: i32 = 39;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_offset_is_named_once() {
        let all: Vec<Ancillary> = Ancillary::all().collect();
        assert_eq!(all.len(), 16);
        for (i, a) in all.iter().enumerate() {
            assert_eq!(a.offset(), 4 * i as u32);
            assert_eq!(Ancillary::from_k(SKF_AD_OFF + a.offset()), Some(*a));
            assert!(a.name().starts_with("SKF_AD_"), "{a}");
        }
        assert_eq!(Ancillary::from_k(SKF_AD_OFF + 64), None);
        assert_eq!(Ancillary::from_k(SKF_AD_OFF + 2), None);
        assert_eq!(Ancillary::from_k(12), None);
    }

    /// The module's table, row by row (a change to either shows here).
    #[test]
    fn the_table_in_the_docs_is_the_code() {
        let doc = include_str!("ancillary.rs");
        for a in Ancillary::all() {
            let row = doc
                .lines()
                .find(|l| l.starts_with("//! |") && l.contains(&format!("`{}`", a.name())))
                .unwrap_or_else(|| panic!("no row for {a}"));
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            for (target, cell) in [(Target::Xdp, cells[2]), (Target::Tc, cells[3]), (Target::Socket, cells[4])] {
                assert_eq!(a.source(target).is_some(), cell != "—", "{a} in {target}: `{cell}`");
            }
        }
    }
}
