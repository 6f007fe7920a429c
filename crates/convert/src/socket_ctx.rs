//! The socket context a converted socket filter runs on, built from the
//! classic model of the same packet.
//!
//! The kernel runs a converted socket filter on the very `struct sk_buff`
//! (include/linux/skbuff.h) the classic filter would have read: the
//! conversion (`convert_bpf_extensions()` and `convert_skb_access()` in
//! net/core/filter.c) turns each `SKF_AD_*` read into a load of an
//! `sk_buff` field (or of `skb->dev`'s `struct net_device`,
//! include/linux/netdevice.h), and packet loads into calls of
//! `bpf_skb_load_helper_*()`. Here the two sides hold separate models of
//! that one buffer: [`cbpf::Skb`] for the classic interpreter and
//! [`ebpf::SkbMeta`] (the context layout of [`ebpf::skb`]) for the eBPF
//! side. [`skb_meta`] maps the first onto the second field by field, so
//! both interpreters observe the same packet; [`socket_helpers`] is the
//! helper table the converted program's calls resolve against.
//!
//! `SKF_AD_PAY_OFFSET` comes from ONE place, the classic model's flow
//! dissector ([`cbpf::Skb::payload_offset`], after `skb_get_poff()` in
//! net/core/flow_dissector.c): [`skb_meta`] stores its answer in
//! [`ebpf::SkbMeta::pay_offset`], which the eBPF helper
//! `bpf_skb_get_pay_offset()` returns.

use cbpf::Skb;

/// Our eBPF socket context for the classic model of an `sk_buff`: the same
/// packet and field values, so a converted socket filter reads what the
/// classic interpreter reads.
///
/// Field by field (names of `struct sk_buff` unless said otherwise):
/// `protocol`, `pkt_type`, `mark`, `queue_mapping`, `vlan_tci`,
/// `vlan_proto` and `hash` copy across; `dev->ifindex` and `dev->type` of
/// `struct net_device` come from [`cbpf::NetDevice`] (`None` for
/// `skb->dev == NULL`); the VLAN tag is present when `vlan_all != 0`, the
/// kernel's test since v6.2; `network_header` and `mac_header` are the
/// offsets `skb_network_offset()` and `skb_mac_offset()` return; the
/// linear length (`skb_headlen()`) is clamped to the packet.
pub fn skb_meta(skb: &Skb<'_>) -> ebpf::SkbMeta {
    ebpf::SkbMeta {
        protocol: skb.protocol,
        pkt_type: skb.pkt_type,
        ifindex: skb.dev.map(|d| d.ifindex as u32),
        hatype: skb.dev.map(|d| d.hatype).unwrap_or(0),
        mark: skb.mark,
        queue_mapping: skb.queue_mapping,
        vlan_tci: skb.vlan_tci,
        vlan_proto: skb.vlan_proto,
        vlan_present: skb.vlan_tci != 0 || skb.vlan_proto != 0,
        hash: skb.rxhash,
        cpu: skb.cpu,
        random: skb.random,
        network_header: Some(skb.network_offset as u32),
        mac_header: skb.mac_offset.map(|m| m as u32),
        headlen: Some(skb.headlen.min(skb.data.len())),
        pay_offset: skb.payload_offset(),
    }
}

/// The helpers to load converted socket filters with: [`ebpf::Helpers::socket`]
/// (its `bpf_skb_get_pay_offset()` returns the context's `pay_offset`,
/// which [`skb_meta`] fills from the classic model).
pub fn socket_helpers() -> ebpf::Helpers {
    ebpf::Helpers::socket()
}
