//! Socket filters and packets for the socket-engine suites: the classic
//! programs of testdata/convert's `socket_*` filetests, a few
//! `tcpdump -dd`-shaped programs, packets of every common shape (Ethernet,
//! 802.1Q, IPv4/IPv6, TCP/UDP/ICMP, fragments), and a seeded generator of
//! random (not always valid) socket filters over those shapes.

use cbpf::Insn;

use crate::rng::{below, pick, SplitMix64};

/// Every `socket_*.txt` filetest's classic program (read by
/// `test_data::filetest`), by file stem, plus [`tcpdump_filters`].
pub fn socket_filters() -> Result<Vec<(String, Vec<Insn>)>, String> {
    let dir = test_data::paths::testdata().join("convert");
    let mut out = Vec::new();
    for path in test_data::paths::files_ending(&dir, ".txt")? {
        let Some(name) = path.file_stem().and_then(|n| n.to_str()).filter(|n| n.starts_with("socket_")) else {
            continue;
        };
        let test = test_data::filetest::parse(&test_data::paths::read_text(&path)?)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let insns = test.insns.into_iter().map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect();
        out.push((name.to_owned(), insns));
    }
    out.extend(tcpdump_filters()?);
    Ok(out)
}

fn s(code: u16, k: u32) -> Insn {
    Insn::stmt(code, k)
}

fn j(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn::jump(code, k, jt, jf)
}

/// Programs in the shape `tcpdump -dd` prints (our own encodings of the
/// expressions named; snap length 262144), from
/// testdata/socket/tcpdump.txt (`filter NAME`, then the program in the
/// filetests' syntax, read by `test_data::filetest`).
pub fn tcpdump_filters() -> Result<Vec<(String, Vec<Insn>)>, String> {
    let text = include_str!("../../../testdata/socket/tcpdump.txt");
    let mut out = Vec::new();
    for section in text.split("\nfilter ").skip(1) {
        let (head, body) = section.split_once('\n').unwrap_or((section, ""));
        let name = head.split(';').next().unwrap_or("").trim().to_string();
        let program = test_data::filetest::parse(body).map_err(|e| format!("tcpdump.txt, filter {name}: {e}"))?;
        let insns = program.insns.into_iter().map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect();
        out.push((name, insns));
    }
    Ok(out)
}

fn ether(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    crate::capture::ether_frame(ethertype, payload)
}

fn ipv4(proto: u8, frag: u16, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut h = vec![0x45, 0];
    h.extend(total.to_be_bytes());
    h.extend([0x12, 0x34]);
    h.extend(frag.to_be_bytes());
    h.extend([64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    h.extend(payload);
    h
}

fn ipv6(next: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend((payload.len() as u16).to_be_bytes());
    h.extend([next, 64]);
    h.extend([0xfd; 16]);
    h.extend([0xfe; 16]);
    h.extend(payload);
    h
}

fn tcp(sport: u16, dport: u16) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend(sport.to_be_bytes());
    t.extend(dport.to_be_bytes());
    t.extend([0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend([0xab; 24]);
    t
}

fn udp(sport: u16, dport: u16) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend(sport.to_be_bytes());
    u.extend(dport.to_be_bytes());
    u.extend(40u16.to_be_bytes());
    u.extend([0, 0]);
    u.extend([0xcd; 32]);
    u
}

fn icmp() -> Vec<u8> {
    let mut i = vec![8, 0, 0, 0, 0, 1, 0, 1];
    i.extend([0x5a; 56]);
    i
}

/// Whole frames of every shape, named.
pub fn packets() -> Vec<(&'static str, Vec<u8>)> {
    let vlan = |inner: u16, payload: &[u8]| {
        let mut tag = vec![0x00, 0x05];
        tag.extend(inner.to_be_bytes());
        tag.extend(payload);
        ether(0x8100, &tag)
    };
    vec![
        ("eth-ipv4-tcp-22", ether(0x0800, &ipv4(6, 0, &tcp(40000, 22)))),
        ("eth-ipv4-tcp-80", ether(0x0800, &ipv4(6, 0x4000, &tcp(22, 80)))),
        ("eth-ipv4-udp-53", ether(0x0800, &ipv4(17, 0, &udp(5353, 53)))),
        ("eth-ipv4-udp-frag", ether(0x0800, &ipv4(17, 0x2001, &udp(53, 53)))),
        ("eth-ipv4-icmp", ether(0x0800, &ipv4(1, 0, &icmp()))),
        ("eth-ipv6-tcp-22", ether(0x86dd, &ipv6(6, &tcp(22, 1234)))),
        ("eth-ipv6-udp", ether(0x86dd, &ipv6(17, &udp(1, 53)))),
        ("eth-ipv6-icmp6", ether(0x86dd, &ipv6(58, &icmp()))),
        ("eth-vlan-ipv4-udp", vlan(0x0800, &ipv4(17, 0, &udp(53, 53)))),
        ("eth-vlan-ipv6-tcp", vlan(0x86dd, &ipv6(6, &tcp(22, 22)))),
        ("eth-arp", ether(0x0806, &[0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1])),
        ("eth-header-only", ether(0x0800, &[])),
        ("runt-4", vec![1, 2, 3, 4]),
    ]
}

/// The byte counts to cut a packet of `len` bytes at: the whole packet and
/// captures cut inside the Ethernet, IP and transport headers.
pub fn capture_lengths(len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = [0, 1, 13, 14, 20, 23, 24, 34, 38, 54, 60].into_iter().filter(|&c| c < len).collect();
    cuts.push(len);
    cuts
}

/// The skb metadata `bpfconv run` gives a received Ethernet frame (see
/// `SkbArgs` in the CLI), on which the kernel engine's values agree.
pub fn skb_of(data: &[u8]) -> cbpf::Skb<'_> {
    let mut skb = cbpf::Skb::test_bpf(data);
    skb.protocol = match (data.get(12), data.get(13)) {
        (Some(&hi), Some(&lo)) => u16::from_be_bytes([hi, lo]),
        _ => 0x0800,
    };
    skb.pkt_type = 0;
    skb.dev = Some(cbpf::NetDevice { ifindex: 1, hatype: 1 });
    skb.mark = 0;
    skb.queue_mapping = 0;
    skb.rxhash = 0;
    skb.vlan_tci = 0;
    skb.vlan_proto = 0;
    skb
}

/// A random classic socket filter of 2 to `max` instructions over the packet
/// shapes of [`packets`]: packet loads (absolute, indexed, `SKF_NET_OFF` and
/// `SKF_LL_OFF` relative, `ldx msh`), `len`, every ancillary load, every ALU
/// op in K and X form, forward conditional jumps and `ja`, `tax`/`txa`,
/// ending in `ret a` or `ret #k`. Not every result is valid (the caller
/// validates); unlike [`crate::gen`], invalid programs are the point here
/// (the kernel must refuse exactly what we refuse).
pub fn random_program(rng: &mut SplitMix64, max: usize) -> Vec<Insn> {
    const SIZES: [u16; 3] = [0x00, 0x08, 0x10]; // W, H, B
    const ALU: [u16; 11] = [0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x90, 0xa0, 0x80];
    const JMP: [u16; 4] = [0x10, 0x20, 0x30, 0x40]; // jeq jgt jge jset
    let mut next = || rng.next_u64();
    let next = &mut next;
    let len = 2 + below(next, max.saturating_sub(1));
    let mut p = Vec::with_capacity(len);
    for pc in 0..len - 1 {
        let left = len - 2 - pc; // instructions a jump may skip
        let size = pick(next, &SIZES, 0);
        let insn = match below(next, 16) {
            0..=2 => s(0x20 | size, below(next, 72) as u32),
            3 => s(0x40 | size, below(next, 40) as u32),
            4 => s(0x20 | size, SKF_NET + below(next, 44) as u32),
            5 => s(0x20 | size, SKF_LL + below(next, 20) as u32),
            6 => s(0xb1, below(next, 40) as u32),
            7 => s(0x80 | (below(next, 2) as u16), 0),
            8 => s(0x20 | size, 0xffff_f000 + 4 * below(next, 16) as u32),
            9 => {
                let op = pick(next, &ALU, 0);
                let k = match op {
                    0x60 | 0x70 => below(next, 32) as u32,
                    0x30 | 0x90 => 1 + below(next, 300) as u32,
                    _ => interesting(next),
                };
                s(0x04 | op | if below(next, 3) == 0 && op != 0x80 { 0x08 } else { 0 }, k)
            }
            10 => s(if below(next, 2) == 0 { 0x07 } else { 0x87 }, 0),
            11 => s(if below(next, 2) == 0 { 0x00 } else { 0x01 }, interesting(next)),
            12 if left > 0 => s(0x05, below(next, left + 1) as u32),
            12..=14 if left > 0 => {
                let op = pick(next, &JMP, 0) | if below(next, 4) == 0 { 0x08 } else { 0 };
                let jt = below(next, left.min(255) + 1) as u8;
                let jf = below(next, left.min(255) + 1) as u8;
                j(0x05 | op, interesting(next), jt, jf)
            }
            _ => s(0x06, interesting(next)),
        };
        p.push(insn);
    }
    p.push(if below(next, 2) == 0 { s(0x16, 0) } else { s(0x06, interesting(next)) });
    p
}

/// `SKF_NET_OFF` and `SKF_LL_OFF` as unsigned offsets.
const SKF_NET: u32 = 0xfff0_0000;
const SKF_LL: u32 = 0xffe0_0000;

/// Constants that meet the packet shapes' fields and the edges of 32 bits.
fn interesting(next: &mut impl FnMut() -> u64) -> u32 {
    const K: [u32; 14] = [0, 1, 2, 6, 17, 22, 53, 64, 0x800, 0x86dd, 0x8100, 0x1fff, 0x7fff_ffff, 0xffff_ffff];
    if below(next, 3) == 0 {
        let bits = next() as u32;
        bits >> below(next, 32)
    } else {
        pick(next, &K, 0)
    }
}
