#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The AF_UNIX path against the running kernel: each classic load of
//! metadata, run by the classic interpreter on [`unix_dgram_skb`], gives
//! what `SocketFilter` delivers (the filter returns the value read plus
//! one, so the datagram's kept length shows it). Where the kernel refuses
//! `SO_ATTACH_FILTER` the test says so through `test_data::require` (a
//! visible skip, a failure under `CI=true`).

use cbpf::opcode::*;
use cbpf::{Insn, Interp, Mode};
use kernel::socket::{attach, optmem_max, unix_dgram_skb, unobservable, Attach, Delivery, SocketFilter};
use test_data::require::{self, Need};

/// `prefix`, then `add #1; ret a`.
fn plus_one(prefix: &[Insn]) -> Vec<Insn> {
    let mut p = prefix.to_vec();
    p.extend([Insn::stmt(ALU_ADD_K, 1), Insn::stmt(RET_A, 0)]);
    p
}

fn ancillary(which: u32) -> Vec<Insn> {
    plus_one(&[Insn::stmt(LD_W_ABS, SKF_AD_OFF + which)])
}

/// Every metadata a classic filter can read on this path, and packet loads
/// relative to the headers.
fn programs() -> Vec<(&'static str, Vec<Insn>)> {
    vec![
        ("ld len", plus_one(&[Insn::stmt(LD_W_LEN, 0)])),
        ("ldx len", plus_one(&[Insn::stmt(LDX_W_LEN, 0), Insn::stmt(MISC_TXA, 0)])),
        ("protocol", ancillary(SKF_AD_PROTOCOL)),
        ("pkt_type", ancillary(SKF_AD_PKTTYPE)),
        // No device: the load ends the filter returning A (7).
        ("ifindex", plus_one(&[Insn::stmt(LD_IMM, 7), Insn::stmt(LD_W_ABS, SKF_AD_OFF + SKF_AD_IFINDEX)])),
        ("hatype", plus_one(&[Insn::stmt(LD_IMM, 7), Insn::stmt(LD_W_ABS, SKF_AD_OFF + SKF_AD_HATYPE)])),
        ("mark", ancillary(SKF_AD_MARK)),
        ("queue", ancillary(SKF_AD_QUEUE)),
        ("rxhash", ancillary(SKF_AD_RXHASH)),
        ("vlan_tag", ancillary(SKF_AD_VLAN_TAG)),
        ("vlan_tag_present", ancillary(SKF_AD_VLAN_TAG_PRESENT)),
        ("vlan_tpid", ancillary(SKF_AD_VLAN_TPID)),
        ("pay_offset", ancillary(SKF_AD_PAY_OFFSET)),
        // Attribute type 2 from offset 4.
        (
            "nlattr",
            plus_one(&[
                Insn::stmt(LDX_IMM, 2),
                Insn::stmt(LD_IMM, 4),
                Insn::stmt(LD_W_ABS, SKF_AD_OFF + SKF_AD_NLATTR),
            ]),
        ),
        (
            "nlattr_nest",
            plus_one(&[
                Insn::stmt(LDX_IMM, 2),
                Insn::stmt(LD_IMM, 4),
                Insn::stmt(LD_W_ABS, SKF_AD_OFF + SKF_AD_NLATTR_NEST),
            ]),
        ),
        ("net header", plus_one(&[Insn::stmt(LD_B_ABS, SKF_NET_OFF + 3)])),
        ("net header, indexed", plus_one(&[Insn::stmt(LDX_IMM, 5), Insn::stmt(LD_B_IND, SKF_NET_OFF)])),
        ("mac header", plus_one(&[Insn::stmt(LD_B_ABS, SKF_LL_OFF)])),
    ]
}

/// Datagrams: one that holds netlink attributes from offset 4 (type 1,
/// then a nest of type 2 holding type 2), a short one and a one-byte one.
fn packets() -> Vec<Vec<u8>> {
    let mut nl: Vec<u8> = (0..120u8).map(|i| i.wrapping_mul(7)).collect();
    // nla_len, nla_type (little-endian), payload.
    let attrs = [[8, 0, 1, 0, 0xaa, 0xbb, 0xcc, 0xdd], [16, 0, 2, 0, 8, 0, 2, 0]];
    for (i, a) in attrs.iter().enumerate() {
        nl[4 + 8 * i..12 + 8 * i].copy_from_slice(a);
    }
    nl[20..24].copy_from_slice(&[1, 2, 3, 4]);
    vec![nl, (0..20).collect(), vec![9]]
}

#[test]
fn the_af_unix_skb_is_the_kernels() {
    const TEST: &str = "the_af_unix_skb_is_the_kernels";
    match attach(&[Insn::stmt(RET_K, 1)]) {
        Ok(Attach::Accepted) => {}
        other => return require::missing(TEST, Need::Socket, format_args!("SO_ATTACH_FILTER refused ({other:?})")),
    }
    for (name, insns) in programs() {
        let program = cbpf::validate(&insns, Mode::Socket).unwrap_or_else(|e| panic!("{name}: {e}"));
        let filter = SocketFilter::attach(&insns).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (i, packet) in packets().iter().enumerate() {
            let skb = unix_dgram_skb(packet);
            assert_eq!(unobservable(&program, &skb), None, "{name}, packet {i}");
            let ours = Interp::new(&program).run_socket(&skb).unwrap();
            let delivery = filter.deliver(packet).unwrap();
            assert!(delivery.agrees_with(ours), "{name}, packet {i}: {ours} here, {delivery:?} on the kernel");
        }
    }
    // The kernel's option memory limit, as the socket tests raise it.
    let read = std::fs::read_to_string("/proc/sys/net/core/optmem_max").ok().and_then(|s| s.trim().parse().ok());
    assert_eq!(optmem_max(), read);
    assert!(optmem_max().is_some_and(|m| m > 1));
}

/// A dropped datagram and a trimmed one.
#[test]
fn deliveries_are_drops_and_trims() {
    const TEST: &str = "deliveries_are_drops_and_trims";
    let Ok(drop) = SocketFilter::attach(&[Insn::stmt(RET_K, 0)]) else {
        return require::missing(TEST, Need::Socket, "SO_ATTACH_FILTER refused");
    };
    assert_eq!(drop.deliver(&[1, 2, 3]).unwrap(), Delivery::Dropped);
    let trim = SocketFilter::attach(&[Insn::stmt(RET_K, 2)]).unwrap();
    assert_eq!(trim.deliver(&[1, 2, 3]).unwrap(), Delivery::Kept { kept: 2, len: 3 });
    assert_eq!(trim.deliver(&[1]).unwrap(), Delivery::Kept { kept: 1, len: 1 });
}
