//! A 3000-packet capture of our own (testdata/pcap/capture3000.pcap): the
//! packets, drawn from a fixed seed, and the libpcap savefile bytes. The
//! committed file is this module's output (`crates/integration/tests/capture.rs`
//! checks it and rewrites it with `UPDATE_EXPECT=1`), so the capture is
//! reproducible from code.
//!
//! Shapes: Ethernet II with no tag, one 802.1Q tag or an 802.1ad + 802.1Q
//! pair; IPv4 (with and without options; first, middle and last fragments;
//! DF) and IPv6 (plain, with a hop-by-hop header, with a fragment header);
//! TCP (common ports, every flag combination), UDP (DNS, DHCP, NTP, mDNS,
//! random), ICMP and ICMPv6 (echo, unreachable, random types), GRE, ARP and
//! an LLDP-like frame; about one packet in seven captured short (cut at a
//! header boundary, inside one, or at a snap length of 64/96), so the wire
//! length exceeds the captured bytes.

use crate::rng::{below, pick, SplitMix64};

/// Packets in the capture.
pub const PACKETS: usize = 3000;
/// The seed the capture is drawn from.
pub const SEED: u64 = 0x0ca9_7e30_0017;
/// The savefile's snap length (tcpdump's default).
pub const SNAPLEN: u32 = 262_144;

/// One captured packet: the bytes kept and the length on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub data: Vec<u8>,
    pub wire_len: u32,
}

/// The capture's packets, in order.
pub fn packets() -> Vec<Packet> {
    let mut rng = SplitMix64::new(SEED);
    let mut next = move || rng.next_u64();
    (0..PACKETS).map(|_| packet(&mut next)).collect()
}

/// The libpcap savefile of [`packets`]: little-endian, microsecond
/// timestamps (10 ms apart from 2026-12-01 00:00:00 UTC), link type
/// Ethernet (1), snap length [`SNAPLEN`].
pub fn pcap() -> Vec<u8> {
    let records: Vec<_> =
        packets().into_iter().map(|p| test_data::pcap::Record { data: p.data, wire_len: p.wire_len }).collect();
    test_data::pcap::write_with(&records, SNAPLEN, |i| {
        let usec = i as u64 * 10_000;
        (1_796_083_200u32 + (usec / 1_000_000) as u32, (usec % 1_000_000) as u32)
    })
}

type Next<'a> = &'a mut dyn FnMut() -> u64;

fn packet(next: Next<'_>) -> Packet {
    let frame = match below(next, 40) {
        0..=1 => arp(next),
        2 => ether_frame(0x88cc, &{
            let n = 8 + below(next, 40);
            bytes(next, n)
        }),
        _ => {
            let (ethertype, payload) = ip(next);
            match below(next, 10) {
                0 | 1 => tagged(next, &[0x8100], ethertype, &payload),
                2 => tagged(next, &[0x88a8, 0x8100], ethertype, &payload),
                _ => ether_frame(ethertype, &payload),
            }
        }
    };
    let wire_len = frame.len() as u32;
    let keep = match below(next, 7) {
        0 => match below(next, 4) {
            0 => below(next, frame.len() + 1),
            1 => pick(next, &[14, 18, 22, 34, 38, 54], 14).min(frame.len()),
            _ => pick(next, &[64, 96], 64).min(frame.len()),
        },
        _ => frame.len(),
    };
    let mut data = frame;
    data.truncate(keep);
    Packet { data, wire_len }
}

fn bytes(next: Next<'_>, n: usize) -> Vec<u8> {
    (0..n).map(|_| next() as u8).collect()
}

/// An Ethernet II frame between two fixed locally administered addresses.
pub(crate) fn ether_frame(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    p.extend(ethertype.to_be_bytes());
    p.extend(payload);
    p
}

/// Tags `tpids` (outermost first), each with a random VLAN id, then `ethertype`.
fn tagged(next: Next<'_>, tpids: &[u16], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut p = ether_frame(0, &[]);
    p.truncate(12);
    for &tpid in tpids {
        p.extend(tpid.to_be_bytes());
        let tci = (pick(next, &[0u16, 3, 5], 0) << 13) | pick(next, &[1u16, 5, 100, 4094], 5);
        p.extend(tci.to_be_bytes());
    }
    p.extend(ethertype.to_be_bytes());
    p.extend(payload);
    p
}

fn arp(next: Next<'_>) -> Vec<u8> {
    let op = pick(next, &[1u16, 2], 1);
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend(op.to_be_bytes());
    a.extend([0x02, 0, 0, 0, 0, 2, 10, 0, 0, 2, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1 + below(next, 3) as u8]);
    ether_frame(0x0806, &a)
}

/// An IP packet: (ethertype, bytes).
fn ip(next: Next<'_>) -> (u16, Vec<u8>) {
    let (proto, l4) = transport(next);
    if below(next, 5) < 3 {
        (0x0800, ipv4(next, proto, &l4))
    } else {
        let proto = if proto == 1 { 58 } else { proto };
        let l4 = if proto == 58 { icmp(next, true) } else { l4 };
        (0x86dd, ipv6(next, proto, &l4))
    }
}

fn transport(next: Next<'_>) -> (u8, Vec<u8>) {
    match below(next, 20) {
        0..=8 => (6, tcp(next)),
        9..=15 => (17, udp(next)),
        16..=18 => (1, icmp(next, false)),
        _ => (47, {
            let mut g = vec![0, 0, 0x08, 0x00];
            g.extend(bytes(next, 20));
            g
        }),
    }
}

fn port(next: Next<'_>, common: &[u16]) -> u16 {
    if below(next, 3) == 0 {
        1024 + below(next, 64_000) as u16
    } else {
        pick(next, common, 80)
    }
}

fn tcp(next: Next<'_>) -> Vec<u8> {
    const PORTS: [u16; 8] = [22, 80, 443, 25, 8080, 1234, 1999, 2000];
    let (sport, dport) = (port(next, &PORTS), port(next, &PORTS));
    let mut t = Vec::new();
    t.extend(sport.to_be_bytes());
    t.extend(dport.to_be_bytes());
    t.extend((next() as u32).to_be_bytes());
    t.extend((next() as u32).to_be_bytes());
    let flags = pick(next, &[0x02u8, 0x12, 0x10, 0x18, 0x11, 0x04, 0x14, 0x01, 0x29, 0x3f], 0x10);
    t.extend([0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    let n = below(next, 64);
    t.extend(bytes(next, n));
    t
}

fn udp(next: Next<'_>) -> Vec<u8> {
    const PORTS: [u16; 6] = [53, 67, 68, 123, 5353, 1900];
    let n = below(next, 64);
    let payload = bytes(next, n);
    let mut u = Vec::new();
    u.extend(port(next, &PORTS).to_be_bytes());
    u.extend(port(next, &PORTS).to_be_bytes());
    u.extend(((8 + payload.len()) as u16).to_be_bytes());
    u.extend([0, 0]);
    u.extend(payload);
    u
}

fn icmp(next: Next<'_>, v6: bool) -> Vec<u8> {
    let kind = if v6 { pick(next, &[128u8, 129, 1, 135, 136], 128) } else { pick(next, &[8u8, 0, 3, 11, 13], 8) };
    let mut i = vec![kind, below(next, 4) as u8, 0, 0, 0, 1, 0, below(next, 200) as u8];
    let n = below(next, 56);
    i.extend(bytes(next, n));
    i
}

fn ipv4(next: Next<'_>, proto: u8, payload: &[u8]) -> Vec<u8> {
    let options = if below(next, 8) == 0 { 4 * (1 + below(next, 2)) } else { 0 };
    // flags/fragment offset: none, DF, first fragment (MF), middle, last.
    let frag = match below(next, 10) {
        0 => 0x2000,
        1 => 0x2000 | (1 + below(next, 200) as u16),
        2 => 1 + below(next, 200) as u16,
        3..=5 => 0x4000,
        _ => 0,
    };
    let total = (20 + options + payload.len()) as u16;
    let mut h = vec![0x45 + (options / 4) as u8, 0];
    h.extend(total.to_be_bytes());
    h.extend((next() as u16).to_be_bytes());
    h.extend(frag.to_be_bytes());
    h.extend([64, proto, 0, 0]);
    h.extend([pick(next, &[10u8, 192], 10), 0, 0, 1 + below(next, 4) as u8]);
    h.extend([pick(next, &[10u8, 192, 224], 10), 0, 0, 1 + below(next, 4) as u8]);
    h.extend(std::iter::repeat_n(1u8, options));
    h.extend(payload);
    h
}

fn ipv6(next: Next<'_>, proto: u8, payload: &[u8]) -> Vec<u8> {
    let (first, ext) = match below(next, 10) {
        // Hop-by-hop options (PadN), then the transport header.
        0 => (0u8, vec![proto, 0, 1, 4, 0, 0, 0, 0]),
        // A fragment header: first fragment (offset 0, M set) or a later one.
        1 => (44, {
            let off: u16 = if below(next, 2) == 0 { 1 } else { 0 };
            let mut f = vec![proto, 0];
            f.extend(((off * 8) << 3 | 1).to_be_bytes());
            f.extend((next() as u32).to_be_bytes());
            f
        }),
        _ => (proto, Vec::new()),
    };
    let mut h = vec![0x60, 0, 0, 0];
    h.extend(((ext.len() + payload.len()) as u16).to_be_bytes());
    h.extend([first, 64]);
    h.extend([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 + below(next, 3) as u8]);
    h.extend([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 + below(next, 3) as u8]);
    h.extend(ext);
    h.extend(payload);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capture_has_every_shape() {
        let p = packets();
        assert_eq!(p.len(), PACKETS);
        let et = |d: &[u8]| d.get(12..14).map(|b| u16::from_be_bytes([b[0], b[1]]));
        let count = |f: &dyn Fn(&Packet) -> bool| p.iter().filter(|x| f(x)).count();
        assert!(count(&|x| et(&x.data) == Some(0x0800)) > 1000);
        assert!(count(&|x| et(&x.data) == Some(0x86dd)) > 600);
        assert!(count(&|x| et(&x.data) == Some(0x8100)) > 200);
        assert!(count(&|x| et(&x.data) == Some(0x88a8)) > 50);
        assert!(count(&|x| et(&x.data) == Some(0x0806)) > 50);
        assert!(count(&|x| (x.data.len() as u32) < x.wire_len) > 300, "truncated captures");
        // IPv4 fragments with a non-zero offset, untagged.
        assert!(
            count(&|x| et(&x.data) == Some(0x0800)
                && x.data.get(20..22).is_some_and(|f| u16::from_be_bytes([f[0], f[1]]) & 0x1fff != 0))
                > 100
        );
        // IPv6 fragment headers, untagged.
        assert!(count(&|x| et(&x.data) == Some(0x86dd) && x.data.get(20) == Some(&44)) > 30);
        assert_eq!(pcap(), pcap(), "deterministic");
    }
}
