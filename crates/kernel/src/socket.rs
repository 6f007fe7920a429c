//! The running kernel as the judge of socket filters: does
//! `SO_ATTACH_FILTER` accept this classic program?
//!
//! `sk_attach_filter()` (net/core/filter.c) copies the program, runs
//! `bpf_check_classic()`, converts it (`bpf_prepare_filter()` →
//! `bpf_migrate_filter()` → `bpf_convert_filter()`, EINVAL on a jump the
//! eBPF form cannot encode) and only then charges the converted program
//! to the socket's option memory (`sk_filter_charge()`, ENOMEM past
//! `net.core.optmem_max`). [`attach`] reports which of those refused.
//!
//! [`SocketFilter`] then runs an attached filter on packets: each one is
//! sent as a datagram over an `AF_UNIX` `SOCK_DGRAM` socketpair whose
//! receiving end holds the filter; `unix_dgram_sendmsg()` (net/unix/af_unix.c)
//! runs `sk_filter()` → `sk_filter_trim_cap(sk, skb, 1)` (net/core/filter.c)
//! on the receiver before queueing, which drops the datagram when the
//! filter returns 0 and otherwise trims it to `max(1, ret)` bytes
//! (`pskb_trim()` only shortens). A non-blocking `recv(MSG_TRUNC)` reads
//! back the kept length, or finds nothing (dropped).
//!
//! # The `sk_buff` the filter sees on this path
//!
//! `sock_alloc_send_pskb()` builds a fresh skb and `unix_dgram_sendmsg()`
//! copies the datagram into it; nothing on the way sets a device or a
//! header, so the filter sees ([`unix_dgram_skb`] is this model):
//!
//! | field | value | classic loads that read it |
//! |---|---|---|
//! | `len` | the datagram's length | `ld len`, `ldx len` |
//! | linear data | the whole datagram (linear up to `SKB_MAX_ALLOC`, about 16 KiB; [`LINEAR_MAX`]) | packet loads, `SKF_AD_NLATTR*` |
//! | `protocol` | 0 (never set) | `SKF_AD_PROTOCOL`, `SKF_AD_PAY_OFFSET` |
//! | `pkt_type` | 0, `PACKET_HOST` (zeroed at allocation) | `SKF_AD_PKTTYPE` |
//! | `dev` | NULL: the IFINDEX/HATYPE sequence exits returning A | `SKF_AD_IFINDEX`, `SKF_AD_HATYPE` |
//! | `mark`, `queue_mapping`, `hash` | 0 | `SKF_AD_MARK`, `SKF_AD_QUEUE`, `SKF_AD_RXHASH` |
//! | `vlan_all` | 0: no tag, TPID 0 | `SKF_AD_VLAN_TAG`, `_TAG_PRESENT`, `_TPID` |
//! | network header | `skb->data` (offset 0: `network_header` is zeroed and `data == head`) | `SKF_NET_OFF` loads, `SKF_AD_PAY_OFFSET` |
//! | MAC header | unset (`~0`): every `SKF_LL_OFF` load fails | `SKF_LL_OFF` loads |
//! | CPU, random | whatever `raw_smp_processor_id()` / `get_random_u32()` give | `SKF_AD_CPU`, `SKF_AD_RANDOM` |
//!
//! A packet whose verdict depends on any of these fields with another value
//! (a protocol of 0x0800, a device, a network header at 14, a wire length
//! longer than the bytes, paged data) cannot be reproduced here:
//! [`unobservable`] finds such packets by running the classic interpreter's
//! trace on the caller's model and looking at every metadata-reading load
//! it executes (the loads and the values they would read, not a static scan:
//! `ld [x + k]` reaches `SKF_NET_OFF` only for some X).

use cbpf::opcode::*;
use cbpf::{Insn, Op, Program, Skb};

use crate::sys::{self, DatagramPair};

/// What `SO_ATTACH_FILTER` said of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// Attached (to a fresh socket, closed again at once).
    Accepted,
    /// Converted, then refused for the memory it needs: more than
    /// `net.core.optmem_max` (ENOMEM). The program itself is valid.
    OverOptmem,
    /// Refused by validation or conversion (EINVAL, or another errno).
    Rejected { errno: i32 },
}

/// Attaches `prog` to a fresh `AF_UNIX` datagram socket and says how the
/// kernel answered. `Err` only when no socket could be made.
pub fn attach(prog: &[Insn]) -> Result<Attach, crate::KernelError> {
    // The receiving end of a fresh pair; the sender closes with it.
    let pair = DatagramPair::new().map_err(|errno| crate::KernelError::Os { op: "socketpair", errno })?;
    Ok(match pair.receiver.attach_filter(&sys::to_sock_filters(prog)) {
        Ok(()) => Attach::Accepted,
        Err(libc::ENOMEM) => Attach::OverOptmem,
        Err(errno) => Attach::Rejected { errno },
    })
}

/// `net.core.optmem_max`, if readable.
pub fn optmem_max() -> Option<u64> {
    std::fs::read_to_string(sys::OPTMEM_MAX).ok()?.trim().parse().ok()
}

/// Longest datagram the `AF_UNIX` path keeps linear: `unix_dgram_sendmsg()`
/// puts only what exceeds `SKB_MAX_ALLOC` (`SKB_WITH_OVERHEAD(PAGE_SIZE <<
/// 2)`, 16 KiB less the `skb_shared_info`) into page fragments. A round,
/// lower bound: longer packets are not judged where linearity matters.
pub const LINEAR_MAX: usize = 15 * 1024;

/// The `sk_buff` a filter on the receiving end of an `AF_UNIX` datagram
/// socketpair sees for `data` (see the module docs). `cpu` and `random`
/// are 0 here, but the kernel's are unknown: [`unobservable`] refuses
/// packets whose verdict reads them.
pub fn unix_dgram_skb(data: &[u8]) -> Skb<'_> {
    Skb {
        data,
        headlen: data.len(),
        protocol: 0,
        pkt_type: 0,
        dev: None,
        mark: 0,
        queue_mapping: 0,
        rxhash: 0,
        vlan_tci: 0,
        vlan_proto: 0,
        cpu: 0,
        random: 0,
        network_offset: 0,
        mac_offset: None,
        wire_len: None,
    }
}

/// Why the kernel engine cannot reproduce `program`'s verdict on `skb`, or
/// `None` when it can: the classic interpreter traces `program` on `skb`
/// and every executed load that reads metadata is compared with what the
/// same load reads on [`unix_dgram_skb`]`(skb.data)`. `SKF_AD_CPU` and
/// `SKF_AD_RANDOM` are never reproducible; `ld len` is not when
/// `skb.wire_len` differs from the bytes; the nlattr loads are not when
/// `skb` has paged data or is longer than [`LINEAR_MAX`].
pub fn unobservable(program: &Program, skb: &Skb<'_>) -> Option<String> {
    unobservable_on(program, skb, &unix_dgram_skb(skb.data), "the AF_UNIX path")
}

/// Why a kernel path that runs `program` on `theirs` (the same bytes as
/// `skb`, its own metadata; named `path` in the reason) cannot reproduce
/// its verdict on `skb`, or `None` when it can: as [`unobservable`] for
/// any path (the eBPF door's test runs have their own skb,
/// [`crate::bpf::test_run_skb`]).
pub fn unobservable_on(program: &Program, skb: &Skb<'_>, theirs: &Skb<'_>, path: &str) -> Option<String> {
    let mut why: Option<String> = None;
    let traced = cbpf::trace_socket(program, skb, |step| {
        if why.is_none() {
            why = step_reads_other_metadata(step.insn, step.x, skb, theirs, path);
        }
    });
    match traced {
        Ok(_) => why,
        Err(e) => Some(format!("the classic interpreter cannot run it: {e}")),
    }
}

/// What differs for one executed instruction (`x` is X before it).
fn step_reads_other_metadata(insn: Insn, x: u32, skb: &Skb<'_>, kernel: &Skb<'_>, path: &str) -> Option<String> {
    let differs = |what: &str, ours: String, theirs: String| {
        (ours != theirs).then(|| format!("the filter reads {what}: {ours} here, {theirs} on {path}"))
    };
    match Op::from_insn(insn)? {
        Op::LdLen | Op::LdxLen => {
            let len = |s: &Skb<'_>| s.wire_len.map_or(s.data.len() as u64, u64::from);
            differs("skb->len", len(skb).to_string(), len(kernel).to_string())
        }
        // convert_bpf_extensions() takes exactly the ancillary offsets (any
        // size; bpf_check_classic() refuses every other `ld [k]` from
        // SKF_AD_OFF up); any other negative `ld [k]` is an ordinary load.
        Op::LdAbs { k, .. } if cbpf::validate::is_ancillary(k) => ancillary(k - SKF_AD_OFF, skb, kernel, path),
        Op::LdAbs { k, .. } | Op::LdxMsh { k } => negative_offset(k, skb, kernel, path),
        Op::LdInd { k, .. } => negative_offset(x.wrapping_add(k), skb, kernel, path),
        _ => None,
    }
}

/// An `ld [k]` (or `[x + k]`) at a negative offset: relative to the network
/// header (`SKF_NET_OFF` up) or the MAC header (`SKF_LL_OFF` up), as
/// `bpf_skb_load_helper_convert_offset()` resolves it. Offsets below
/// `SKF_LL_OFF` fail whatever the skb.
fn negative_offset(k: u32, skb: &Skb<'_>, kernel: &Skb<'_>, path: &str) -> Option<String> {
    if (k as i32) >= 0 {
        return None;
    }
    if k >= SKF_NET_OFF {
        return (skb.network_offset != kernel.network_offset).then(|| {
            format!(
                "the filter loads relative to the network header: at {} here, at {} on {path}",
                skb.network_offset, kernel.network_offset
            )
        });
    }
    if k >= SKF_LL_OFF {
        let at = |m: Option<usize>| m.map_or("unset".to_string(), |m| format!("at {m}"));
        return (skb.mac_offset != kernel.mac_offset).then(|| {
            format!(
                "the filter loads relative to the MAC header: {} here, {} on {path}",
                at(skb.mac_offset),
                at(kernel.mac_offset)
            )
        });
    }
    None
}

/// An ancillary load `SKF_AD_OFF + which`; `None` when it reads the same
/// on both skbs.
fn ancillary(which: u32, skb: &Skb<'_>, kernel: &Skb<'_>, path: &str) -> Option<String> {
    let differs = |what: &str, ours: String, theirs: String| {
        (ours != theirs).then(|| format!("the filter reads {what}: {ours} here, {theirs} on {path}"))
    };
    match which {
        SKF_AD_PROTOCOL => {
            differs("skb->protocol", format!("{:#06x}", skb.protocol), format!("{:#06x}", kernel.protocol))
        }
        SKF_AD_PKTTYPE => differs("skb->pkt_type", skb.pkt_type.to_string(), kernel.pkt_type.to_string()),
        SKF_AD_IFINDEX | SKF_AD_HATYPE => differs("skb->dev", format!("{:?}", skb.dev), format!("{:?}", kernel.dev)),
        SKF_AD_MARK => differs("skb->mark", skb.mark.to_string(), kernel.mark.to_string()),
        SKF_AD_QUEUE => differs("skb->queue_mapping", skb.queue_mapping.to_string(), kernel.queue_mapping.to_string()),
        SKF_AD_RXHASH => differs("skb->hash", skb.rxhash.to_string(), kernel.rxhash.to_string()),
        SKF_AD_VLAN_TAG | SKF_AD_VLAN_TAG_PRESENT | SKF_AD_VLAN_TPID => differs(
            "the VLAN tag",
            format!("tci {:#x} tpid {:#x}", skb.vlan_tci, skb.vlan_proto),
            format!("tci {:#x} tpid {:#x}", kernel.vlan_tci, kernel.vlan_proto),
        ),
        SKF_AD_PAY_OFFSET => differs(
            "the payload offset (skb_get_poff())",
            skb.payload_offset().to_string(),
            kernel.payload_offset().to_string(),
        ),
        SKF_AD_NLATTR | SKF_AD_NLATTR_NEST => {
            if skb.headlen < skb.data.len() {
                Some(format!("the filter reads netlink attributes of a packet with paged data; {path}'s is linear"))
            } else if skb.data.len() > LINEAR_MAX {
                Some(format!(
                    "the filter reads netlink attributes of a {}-byte packet; {path} may page past {LINEAR_MAX}",
                    skb.data.len()
                ))
            } else {
                None
            }
        }
        SKF_AD_CPU => Some("the filter reads SKF_AD_CPU, the CPU it runs on".into()),
        SKF_AD_RANDOM => Some("the filter reads SKF_AD_RANDOM".into()),
        _ => None,
    }
}

/// What the kernel did with one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Dropped: the filter returned 0.
    Dropped,
    /// Queued with `kept` of its `len` bytes: the filter returned `kept`
    /// when `kept < len`, any value `>= len` when `kept == len` (and any
    /// non-zero value for an empty datagram).
    Kept { kept: u32, len: u32 },
    /// The datagram could not be sent (e.g. `EMSGSIZE` past the socket's
    /// send buffer); the filter did not run.
    NotSent { errno: i32 },
}

impl Delivery {
    /// Whether a filter returning `ret` on a `len`-byte packet gives this
    /// delivery (`sk_filter_trim_cap()` with cap 1).
    pub fn agrees_with(self, ret: u32) -> bool {
        match self {
            Delivery::Dropped => ret == 0,
            Delivery::Kept { kept, len } => ret != 0 && ret.min(len) == kept,
            Delivery::NotSent { .. } => false,
        }
    }
}

/// A classic filter attached to the receiving end of an `AF_UNIX`
/// datagram socketpair, ready to judge packets.
#[derive(Debug)]
pub struct SocketFilter {
    pair: DatagramPair,
}

impl SocketFilter {
    /// Attaches `prog` with `SO_ATTACH_FILTER`. The kernel's refusal is
    /// [`crate::KernelError::FilterRejected`] with its errno (EINVAL from
    /// validation or conversion, ENOMEM past `net.core.optmem_max`).
    pub fn attach(prog: &[Insn]) -> Result<SocketFilter, crate::KernelError> {
        let pair = DatagramPair::new().map_err(|errno| crate::KernelError::Os { op: "socketpair", errno })?;
        pair.receiver
            .attach_filter(&sys::to_sock_filters(prog))
            .map_err(|errno| crate::KernelError::FilterRejected { errno, len: prog.len() })?;
        Ok(SocketFilter { pair })
    }

    /// Sends `packet` through the filter and reports what arrived.
    pub fn deliver(&self, packet: &[u8]) -> Result<Delivery, crate::KernelError> {
        let len =
            u32::try_from(packet.len()).map_err(|_| crate::KernelError::Os { op: "send", errno: libc::EMSGSIZE })?;
        match self.pair.send(packet) {
            Ok(_) => {}
            Err(errno) => return Ok(Delivery::NotSent { errno }),
        }
        match self.pair.recv_len().map_err(|errno| crate::KernelError::Os { op: "recv", errno })? {
            None => Ok(Delivery::Dropped),
            Some(kept) => Ok(Delivery::Kept { kept: u32::try_from(kept).unwrap_or(u32::MAX), len }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `insns` validated as a socket filter.
    fn socket(insns: &[Insn]) -> Program {
        match cbpf::validate(insns, cbpf::Mode::Socket) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    /// `ld [k]; ret a`.
    fn load(k: u32) -> Program {
        socket(&[Insn::stmt(LD_W_ABS, k), Insn::stmt(RET_A, 0)])
    }

    /// An IPv4/TCP frame of 40 bytes from its network header.
    const IPV4_TCP: [u8; 40] = {
        let mut p = [0u8; 40];
        p[0] = 0x45;
        p[9] = 6;
        p
    };

    /// What `unobservable` says of `program` on the AF_UNIX path's own skb
    /// changed by `change`.
    fn changed(program: &Program, data: &[u8], change: impl FnOnce(&mut Skb<'_>)) -> Option<String> {
        let mut skb = unix_dgram_skb(data);
        change(&mut skb);
        unobservable(program, &skb)
    }

    /// Each metadata load is unobservable exactly when the field it reads
    /// differs from the AF_UNIX path's, and says which.
    #[test]
    fn a_load_of_other_metadata_is_named() {
        let data = [0u8; 64];
        type Change = fn(&mut Skb<'_>);
        let cases: [(u32, Change, &str); 12] = [
            (SKF_AD_PROTOCOL, |s| s.protocol = 0x0800, "skb->protocol: 0x0800 here, 0x0000 on the AF_UNIX path"),
            (SKF_AD_PKTTYPE, |s| s.pkt_type = 3, "skb->pkt_type: 3 here, 0 on"),
            (SKF_AD_IFINDEX, |s| s.dev = Some(cbpf::NetDevice { ifindex: 1, hatype: 772 }), "skb->dev"),
            (SKF_AD_HATYPE, |s| s.dev = Some(cbpf::NetDevice { ifindex: 1, hatype: 772 }), "skb->dev"),
            (SKF_AD_MARK, |s| s.mark = 9, "skb->mark: 9 here, 0 on"),
            (SKF_AD_QUEUE, |s| s.queue_mapping = 2, "skb->queue_mapping: 2 here"),
            (SKF_AD_RXHASH, |s| s.rxhash = 5, "skb->hash: 5 here"),
            (SKF_AD_VLAN_TAG, |s| s.vlan_tci = 7, "the VLAN tag: tci 0x7 tpid 0x0 here"),
            (SKF_AD_VLAN_TAG_PRESENT, |s| s.vlan_proto = 0x8100, "the VLAN tag"),
            (SKF_AD_VLAN_TPID, |s| s.vlan_tci = 1, "the VLAN tag"),
            (SKF_AD_PAY_OFFSET, |s| s.protocol = 0x0800, "the payload offset (skb_get_poff()): 40 here, 0 on"),
            (SKF_AD_MARK, |s| s.wire_len = Some(100), ""),
        ];
        for (which, change, reason) in cases {
            let program = load(SKF_AD_OFF + which);
            let data: &[u8] = if which == SKF_AD_PAY_OFFSET { &IPV4_TCP } else { &data };
            assert_eq!(changed(&program, data, |_| {}), None, "ad {which}: the path's own skb");
            match changed(&program, data, change) {
                Some(why) if !reason.is_empty() => assert!(why.contains(reason), "ad {which}: {why}"),
                None if reason.is_empty() => {}
                other => panic!("ad {which}: {other:?}"),
            }
        }
        // `ld len` reads the wire length where one is given.
        let len = socket(&[Insn::stmt(LD_W_LEN, 0), Insn::stmt(RET_A, 0)]);
        let ldx_len = socket(&[Insn::stmt(LDX_W_LEN, 0), Insn::stmt(RET_A, 0)]);
        for program in [&len, &ldx_len] {
            assert_eq!(changed(program, &data, |_| {}), None);
            assert_eq!(changed(program, &data, |s| s.wire_len = Some(64)), None);
            let why = changed(program, &data, |s| s.wire_len = Some(100));
            assert_eq!(why.as_deref(), Some("the filter reads skb->len: 100 here, 64 on the AF_UNIX path"));
        }
        // SKF_AD_CPU and SKF_AD_RANDOM are never reproducible.
        for which in [SKF_AD_CPU, SKF_AD_RANDOM] {
            assert!(changed(&load(SKF_AD_OFF + which), &data, |_| {}).is_some(), "ad {which}");
        }
        // A packet load reads no metadata.
        assert_eq!(changed(&load(0), &data, |s| s.mark = 1), None);
    }

    /// Netlink attributes are searched in the linear data: a packet with
    /// paged data, or longer than the path keeps linear, is not reproduced.
    #[test]
    fn netlink_attributes_need_a_linear_packet() {
        let nlattr = |which| {
            socket(&[
                Insn::stmt(LDX_IMM, 1),
                Insn::stmt(LD_IMM, 0),
                Insn::stmt(LD_W_ABS, SKF_AD_OFF + which),
                Insn::stmt(RET_A, 0),
            ])
        };
        let longest = vec![0u8; LINEAR_MAX];
        let longer = vec![0u8; LINEAR_MAX + 1];
        for which in [SKF_AD_NLATTR, SKF_AD_NLATTR_NEST] {
            let program = nlattr(which);
            assert_eq!(changed(&program, &longest, |_| {}), None);
            let why = changed(&program, &longer, |_| {}).unwrap_or_default();
            assert!(why.contains("15361-byte packet; the AF_UNIX path may page past 15360"), "{why}");
            let why = changed(&program, &longest, |s| s.headlen = 100).unwrap_or_default();
            assert!(why.contains("paged data"), "{why}");
        }
    }

    /// Loads below 0 are relative to the network header from `SKF_NET_OFF`
    /// up (to just below the ancillary offsets) and to the MAC header from
    /// `SKF_LL_OFF` up; below `SKF_LL_OFF` a load fails anywhere.
    #[test]
    fn negative_offsets_are_relative_to_a_header() {
        let data = [0u8; 64];
        let net = |s: &mut Skb<'_>| s.network_offset = 14;
        let mac = |s: &mut Skb<'_>| s.mac_offset = Some(0);
        for k in [SKF_NET_OFF, SKF_NET_OFF + 3, SKF_AD_OFF - 4] {
            let why = changed(&load(k), &data, net).unwrap_or_default();
            assert!(why.contains("network header: at 14 here, at 0 on"), "{k:#x}: {why}");
            assert_eq!(changed(&load(k), &data, mac), None, "{k:#x}");
        }
        for k in [SKF_LL_OFF, SKF_NET_OFF - 4] {
            let why = changed(&load(k), &data, mac).unwrap_or_default();
            assert!(why.contains("MAC header: at 0 here, unset on"), "{k:#x}: {why}");
            assert_eq!(changed(&load(k), &data, net), None, "{k:#x}");
        }
        assert_eq!(changed(&load(SKF_LL_OFF - 4), &data, |s| (net(s), mac(s)).1), None);
        // `ld [x + k]` where X brings it to the network header, and
        // `ldx 4*([k]&0xf)` at a negative offset.
        let ind = socket(&[Insn::stmt(LDX_IMM, 16), Insn::stmt(LD_B_IND, SKF_NET_OFF - 16), Insn::stmt(RET_A, 0)]);
        assert!(changed(&ind, &data, net).is_some_and(|w| w.contains("network header")));
        let ind_positive = socket(&[Insn::stmt(LDX_IMM, 16), Insn::stmt(LD_B_IND, 0), Insn::stmt(RET_A, 0)]);
        assert_eq!(changed(&ind_positive, &data, net), None);
        let msh = socket(&[Insn::stmt(LDX_B_MSH, SKF_NET_OFF), Insn::stmt(RET_A, 0)]);
        assert!(changed(&msh, &data, net).is_some_and(|w| w.contains("network header")));
    }

    /// `sk_filter_trim_cap()` with cap 1: 0 drops, anything else keeps
    /// `min(ret, len)` bytes, at least one.
    #[test]
    fn a_delivery_agrees_with_the_values_that_give_it() {
        assert!(Delivery::Dropped.agrees_with(0));
        assert!(!Delivery::Dropped.agrees_with(1));
        let part = Delivery::Kept { kept: 5, len: 10 };
        assert!(part.agrees_with(5) && !part.agrees_with(4) && !part.agrees_with(6) && !part.agrees_with(0));
        let whole = Delivery::Kept { kept: 10, len: 10 };
        assert!(whole.agrees_with(10) && whole.agrees_with(11) && whole.agrees_with(u32::MAX) && !whole.agrees_with(9));
        let empty = Delivery::Kept { kept: 0, len: 0 };
        assert!(empty.agrees_with(1) && !empty.agrees_with(0));
        assert!(!Delivery::NotSent { errno: libc::EMSGSIZE }.agrees_with(0));
    }
}
