//! Owned inputs: [`SocketInput`], the one owned copy of a classic
//! [`cbpf::Skb`] that generators keep and mismatch reports print.

use std::fmt;

use cbpf::{NetDevice, Skb};

/// An owned [`cbpf::Skb`]: a packet and its `sk_buff` fields, kept by
/// generators and mismatch reports.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SocketInput {
    /// All packet bytes: the linear area, then the paged data.
    pub data: Vec<u8>,
    /// Bytes of `data` in the linear area.
    pub headlen: usize,
    /// `ntohs(skb->protocol)`.
    pub protocol: u16,
    /// `skb->pkt_type`.
    pub pkt_type: u8,
    /// `skb->dev`.
    pub dev: Option<NetDevice>,
    /// `skb->mark`.
    pub mark: u32,
    /// `skb->queue_mapping`.
    pub queue_mapping: u16,
    /// `skb->hash`.
    pub rxhash: u32,
    /// `skb->vlan_tci`.
    pub vlan_tci: u16,
    /// `ntohs(skb->vlan_proto)`.
    pub vlan_proto: u16,
    /// `SKF_AD_CPU`.
    pub cpu: u32,
    /// `SKF_AD_RANDOM`.
    pub random: u32,
    /// `skb_network_offset()`.
    pub network_offset: usize,
    /// `skb_mac_offset()`, `None` when unset.
    pub mac_offset: Option<usize>,
}

impl SocketInput {
    /// A linear packet with lib/test_bpf.c's field values ([`Skb::test_bpf`]).
    pub fn test_bpf(data: Vec<u8>) -> Self {
        let mut input = SocketInput::from_skb(&Skb::test_bpf(&[]));
        input.headlen = data.len();
        input.network_offset = data.len().min(14);
        input.data = data;
        input
    }

    /// Copies a classic socket buffer.
    pub fn from_skb(skb: &Skb<'_>) -> Self {
        SocketInput {
            data: skb.data.to_vec(),
            headlen: skb.headlen,
            protocol: skb.protocol,
            pkt_type: skb.pkt_type,
            dev: skb.dev,
            mark: skb.mark,
            queue_mapping: skb.queue_mapping,
            rxhash: skb.rxhash,
            vlan_tci: skb.vlan_tci,
            vlan_proto: skb.vlan_proto,
            cpu: skb.cpu,
            random: skb.random,
            network_offset: skb.network_offset,
            mac_offset: skb.mac_offset,
        }
    }

    /// The classic view, borrowing the packet.
    pub fn skb(&self) -> Skb<'_> {
        Skb {
            data: &self.data,
            headlen: self.headlen,
            protocol: self.protocol,
            pkt_type: self.pkt_type,
            dev: self.dev,
            mark: self.mark,
            queue_mapping: self.queue_mapping,
            rxhash: self.rxhash,
            vlan_tci: self.vlan_tci,
            vlan_proto: self.vlan_proto,
            cpu: self.cpu,
            random: self.random,
            network_offset: self.network_offset,
            mac_offset: self.mac_offset,
            wire_len: None,
        }
    }
}

impl fmt::Display for SocketInput {
    /// `packet=HEX` (the filetests' run syntax), then every field that
    /// differs from lib/test_bpf.c's values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("packet=")?;
        for b in &self.data {
            write!(f, "{b:02x}")?;
        }
        let base = SocketInput::test_bpf(self.data.clone());
        if self.headlen != base.headlen {
            write!(f, " headlen={}", self.headlen)?;
        }
        if self.network_offset != base.network_offset {
            write!(f, " network_offset={}", self.network_offset)?;
        }
        if self.mac_offset != base.mac_offset {
            write!(f, " mac_offset={:?}", self.mac_offset)?;
        }
        if self.protocol != base.protocol {
            write!(f, " protocol={:#06x}", self.protocol)?;
        }
        if self.pkt_type != base.pkt_type {
            write!(f, " pkt_type={}", self.pkt_type)?;
        }
        if self.dev != base.dev {
            write!(f, " dev={:?}", self.dev)?;
        }
        if self.mark != base.mark {
            write!(f, " mark={:#x}", self.mark)?;
        }
        if self.queue_mapping != base.queue_mapping {
            write!(f, " queue_mapping={}", self.queue_mapping)?;
        }
        if self.rxhash != base.rxhash {
            write!(f, " rxhash={:#x}", self.rxhash)?;
        }
        if self.vlan_tci != base.vlan_tci {
            write!(f, " vlan_tci={:#x}", self.vlan_tci)?;
        }
        if self.vlan_proto != base.vlan_proto {
            write!(f, " vlan_proto={:#06x}", self.vlan_proto)?;
        }
        if self.cpu != base.cpu {
            write!(f, " cpu={}", self.cpu)?;
        }
        if self.random != base.random {
            write!(f, " random={:#x}", self.random)?;
        }
        Ok(())
    }
}
