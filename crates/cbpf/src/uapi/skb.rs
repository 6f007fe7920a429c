//! The socket buffer a classic socket filter reads: packet bytes and the
//! `sk_buff` fields its loads can reach, with the kernel's models of what
//! they compute (`skb_get_poff()`). How a run reads them is the
//! interpreters' ([`crate::exec`]).

/// The `net_device` fields classic ancillary loads read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NetDevice {
    /// `dev->ifindex` (`SKF_AD_IFINDEX`).
    pub ifindex: i32,
    /// `dev->type`, an `ARPHRD_*` value (`SKF_AD_HATYPE`).
    pub hatype: u16,
}

/// A packet as a socket filter sees it: a model of the `sk_buff` fields the
/// converted classic program reads.
///
/// Multi-byte fields hold host-order values (`protocol` is
/// `ntohs(skb->protocol)`, the value `SKF_AD_PROTOCOL` yields).
///
/// # Deviations
/// - The linear area starts at `skb->head` (no headroom), as in the packets
///   `lib/test_bpf.c` builds; network and MAC header offsets are therefore
///   non-negative.
/// - `SKF_AD_VLAN_TAG_PRESENT` is `vlan_tci != 0 || vlan_proto != 0`, the
///   kernel's `vlan_all != 0` since v6.2 (there is no separate
///   `vlan_present` bit any more).
/// - `SKF_AD_PAY_OFFSET` runs a small model of the flow dissector: see
///   [`Skb::payload_offset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Skb<'a> {
    /// All packet bytes, `skb->len` of them: the linear area followed by the
    /// paged fragments.
    pub data: &'a [u8],
    /// Bytes of `data` in the linear area (`skb_headlen()`); the rest is
    /// paged. Values above `data.len()` are treated as `data.len()`.
    pub headlen: usize,
    /// `ntohs(skb->protocol)`.
    pub protocol: u16,
    /// `skb->pkt_type` (3 bits).
    pub pkt_type: u8,
    /// `skb->dev`; `None` makes `SKF_AD_IFINDEX` / `SKF_AD_HATYPE` end the
    /// filter returning the current A, as the converted program does.
    pub dev: Option<NetDevice>,
    /// `skb->mark`.
    pub mark: u32,
    /// `skb->queue_mapping`.
    pub queue_mapping: u16,
    /// `skb->hash` (`SKF_AD_RXHASH`).
    pub rxhash: u32,
    /// `skb->vlan_tci` (`SKF_AD_VLAN_TAG`, returned raw).
    pub vlan_tci: u16,
    /// `ntohs(skb->vlan_proto)` (`SKF_AD_VLAN_TPID`).
    pub vlan_proto: u16,
    /// What `bpf_get_raw_cpu_id()` returns (`SKF_AD_CPU`).
    pub cpu: u32,
    /// What `bpf_user_rnd_u32()` returns (`SKF_AD_RANDOM`).
    pub random: u32,
    /// `skb_network_offset()`: where `SKF_NET_OFF` loads start.
    pub network_offset: usize,
    /// `skb_mac_offset()`, or `None` when the MAC header was never set
    /// (then `SKF_LL_OFF` loads fail).
    pub mac_offset: Option<usize>,
    /// What `ld len` / `ldx len` read when it differs from `data.len()`:
    /// libpcap's `bpf_filter()` sees the original wire length of a captured
    /// packet whose capture was cut short (`tcpdump -r` semantics). `None`
    /// (the kernel's view) reads `skb->len`, i.e. `data.len()`.
    pub wire_len: Option<u32>,
}

/// `ETH_P_IP`.
const ETH_P_IP: u16 = 0x0800;

impl<'a> Skb<'a> {
    /// A linear packet with the values `populate_skb()` in lib/test_bpf.c
    /// (Linux 6.18) gives it: MAC header at 0, network header at
    /// `min(len, 14)`, protocol and VLAN protocol `ETH_P_IP`, `pkt_type` 3,
    /// mark 0x1234aaaa, hash 0x1234aaab, queue 123, `vlan_tci` 0xffff, device
    /// with ifindex 577 and type 588; CPU and random 0.
    pub fn test_bpf(data: &'a [u8]) -> Self {
        Skb {
            data,
            headlen: data.len(),
            protocol: ETH_P_IP,
            pkt_type: 3,
            dev: Some(NetDevice { ifindex: 577, hatype: 588 }),
            mark: 0x1234_aaaa,
            queue_mapping: 123,
            rxhash: 0x1234_aaab,
            vlan_tci: 0xffff,
            vlan_proto: ETH_P_IP,
            cpu: 0,
            random: 0,
            network_offset: data.len().min(14),
            mac_offset: Some(0),
            wire_len: None,
        }
    }

    /// The same `sk_buff` fields over other packet bytes (`data`); what an
    /// owner of the bytes lends, or keeps with empty `data` as a template.
    pub fn with_data<'b>(&self, data: &'b [u8]) -> Skb<'b> {
        Skb {
            data,
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
            wire_len: self.wire_len,
        }
    }

    pub(crate) fn headlen(&self) -> usize {
        self.headlen.min(self.data.len())
    }

    pub(crate) fn is_nonlinear(&self) -> bool {
        self.headlen() < self.data.len()
    }

    /// `size` bytes at `offset`, from the linear area or the fragments alike
    /// (`skb_header_pointer()` / `skb_copy_bits()`).
    pub(crate) fn bytes(&self, offset: usize, size: usize) -> Option<&'a [u8]> {
        self.data.get(offset..offset.checked_add(size)?)
    }

    /// Payload offset for `SKF_AD_PAY_OFFSET`.
    ///
    /// Mirrors `skb_get_poff()` / `__skb_get_poff()` (net/core/flow_dissector.c,
    /// Linux 6.18) on top of a model of `skb_flow_dissect_flow_keys_basic()`.
    ///
    /// # Deviations
    /// The flow dissector is modelled only for what classic filters on plain
    /// IP traffic meet: the starting protocol (`vlan_proto` when a VLAN tag is
    /// present, else `protocol`; a hardware-accelerated 802.1Q/802.1AD tag
    /// falls back to `protocol`), IPv4 (header length, fragments) and IPv6
    /// (hop-by-hop, routing, destination-options and fragment extension
    /// headers). Every other protocol (ARP, MPLS, PPPoE, in-packet VLAN
    /// headers, ...) and every tunnel (GRE, IPIP, SIT, ...) returns 0 here,
    /// where the kernel may dissect further; attached BPF flow dissectors are
    /// not modelled.
    pub fn payload_offset(&self) -> u32 {
        match self.dissect() {
            Some((thoff, ip_proto, later_fragment)) => self.poff(thoff, ip_proto, later_fragment),
            None => 0,
        }
    }

    /// Returns `(thoff, ip_proto, is a non-first fragment)`, or `None` where
    /// the dissector reports failure.
    fn dissect(&self) -> Option<(u32, u8, bool)> {
        const ETH_P_IPV6: u16 = 0x86dd;
        const ETH_P_8021Q: u16 = 0x8100;
        const ETH_P_8021AD: u16 = 0x88a8;
        let vlan_present = self.vlan_tci != 0 || self.vlan_proto != 0;
        let mut proto = if vlan_present { self.vlan_proto } else { self.protocol };
        if matches!(proto, ETH_P_8021Q | ETH_P_8021AD) && vlan_present {
            proto = self.protocol;
        }
        let mut nhoff = self.network_offset;
        let mut later_fragment = false;
        let ip_proto = match proto {
            ETH_P_IP => {
                let iph = self.bytes(nhoff, 20)?;
                let (&ver_ihl, &protocol) = (iph.first()?, iph.get(9)?);
                let ihl = usize::from(ver_ihl & 0xf);
                if ihl < 5 {
                    return None;
                }
                nhoff += ihl * 4;
                let frag_off = u16::from_be_bytes([*iph.get(6)?, *iph.get(7)?]);
                // IP_MF | IP_OFFSET: a fragment; IP_OFFSET != 0: not the first.
                later_fragment = frag_off & 0x3fff != 0 && frag_off & 0x1fff != 0;
                protocol
            }
            ETH_P_IPV6 => {
                let ip6h = self.bytes(nhoff, 40)?;
                let mut next = *ip6h.get(6)?;
                nhoff += 40;
                // Extension headers until the first fragment stops dissection.
                loop {
                    match next {
                        0 | 43 | 60 => {
                            let opt = self.bytes(nhoff, 2)?;
                            next = *opt.first()?;
                            nhoff += (usize::from(*opt.get(1)?) + 1) << 3;
                        }
                        44 => {
                            let fh = self.bytes(nhoff, 8)?;
                            next = *fh.first()?;
                            nhoff += 8;
                            let frag_off = u16::from_be_bytes([*fh.get(2)?, *fh.get(3)?]);
                            later_fragment = frag_off & 0xfff8 != 0;
                            break;
                        }
                        _ => break,
                    }
                }
                next
            }
            _ => return None,
        };
        // key_control->thoff = min_t(u16, nhoff, skb->len)
        let thoff = nhoff.min(self.data.len()) as u16;
        Some((u32::from(thoff), ip_proto, later_fragment))
    }

    /// `__skb_get_poff()`: skip the transport header.
    fn poff(&self, thoff: u32, ip_proto: u8, later_fragment: bool) -> u32 {
        if later_fragment {
            return thoff;
        }
        let header = match ip_proto {
            // IPPROTO_TCP: max(sizeof(struct tcphdr), doff * 4)
            6 => match self.bytes(thoff as usize + 12, 1).and_then(|b| b.first()) {
                Some(&doff) => u32::from((doff & 0xf0) >> 2).max(20),
                None => return thoff,
            },
            // UDP, UDPLITE, ICMP, ICMPV6, IGMP: 8-byte headers.
            17 | 136 | 1 | 58 | 2 => 8,
            // DCCP (struct dccp_hdr), SCTP (struct sctphdr).
            33 | 132 => 12,
            _ => 0,
        };
        thoff + header
    }
}
