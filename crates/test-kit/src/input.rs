//! Owned inputs: [`SocketInput`], the one owned copy of a classic
//! [`cbpf::Skb`] that generators keep and mismatch reports print.

use std::fmt;

use cbpf::Skb;

/// An owned [`cbpf::Skb`]: the packet bytes, and the other `sk_buff`
/// fields as an [`Skb`] template whose own `data` is empty;
/// [`SocketInput::skb`] lends the whole with `data` pointing at the bytes.
/// Kept by generators and mismatch reports.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SocketInput {
    /// All packet bytes: the linear area, then the paged data.
    pub data: Vec<u8>,
    /// Every other field (`headlen`, `protocol`, ... `wire_len`); its
    /// `data` stays empty.
    pub meta: Skb<'static>,
}

impl SocketInput {
    /// A linear packet with lib/test_bpf.c's field values ([`Skb::test_bpf`]).
    pub fn test_bpf(data: Vec<u8>) -> Self {
        SocketInput { meta: Skb::test_bpf(&data).with_data(&[]), data }
    }

    /// Copies a classic socket buffer.
    pub fn from_skb(skb: &Skb<'_>) -> Self {
        SocketInput { data: skb.data.to_vec(), meta: skb.with_data(&[]) }
    }

    /// The classic view, borrowing the packet.
    pub fn skb(&self) -> Skb<'_> {
        self.meta.with_data(&self.data)
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
        if self.meta.headlen != base.meta.headlen {
            write!(f, " headlen={}", self.meta.headlen)?;
        }
        if self.meta.network_offset != base.meta.network_offset {
            write!(f, " network_offset={}", self.meta.network_offset)?;
        }
        if self.meta.mac_offset != base.meta.mac_offset {
            write!(f, " mac_offset={:?}", self.meta.mac_offset)?;
        }
        if self.meta.protocol != base.meta.protocol {
            write!(f, " protocol={:#06x}", self.meta.protocol)?;
        }
        if self.meta.pkt_type != base.meta.pkt_type {
            write!(f, " pkt_type={}", self.meta.pkt_type)?;
        }
        if self.meta.dev != base.meta.dev {
            write!(f, " dev={:?}", self.meta.dev)?;
        }
        if self.meta.mark != base.meta.mark {
            write!(f, " mark={:#x}", self.meta.mark)?;
        }
        if self.meta.queue_mapping != base.meta.queue_mapping {
            write!(f, " queue_mapping={}", self.meta.queue_mapping)?;
        }
        if self.meta.rxhash != base.meta.rxhash {
            write!(f, " rxhash={:#x}", self.meta.rxhash)?;
        }
        if self.meta.vlan_tci != base.meta.vlan_tci {
            write!(f, " vlan_tci={:#x}", self.meta.vlan_tci)?;
        }
        if self.meta.vlan_proto != base.meta.vlan_proto {
            write!(f, " vlan_proto={:#06x}", self.meta.vlan_proto)?;
        }
        if self.meta.cpu != base.meta.cpu {
            write!(f, " cpu={}", self.meta.cpu)?;
        }
        if self.meta.random != base.meta.random {
            write!(f, " random={:#x}", self.meta.random)?;
        }
        if let Some(wire_len) = self.meta.wire_len {
            write!(f, " wire_len={wire_len}")?;
        }
        Ok(())
    }
}
