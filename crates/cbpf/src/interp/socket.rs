//! The socket-filter context: packet bytes and the `sk_buff` fields that
//! classic programs can read, with the kernel's load helpers.

use crate::opcode::*;

use super::Context;

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

    fn headlen(&self) -> usize {
        self.headlen.min(self.data.len())
    }

    fn is_nonlinear(&self) -> bool {
        self.headlen() < self.data.len()
    }

    /// `size` bytes at `offset`, from the linear area or the fragments alike
    /// (`skb_header_pointer()` / `skb_copy_bits()`).
    fn bytes(&self, offset: usize, size: usize) -> Option<&'a [u8]> {
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
