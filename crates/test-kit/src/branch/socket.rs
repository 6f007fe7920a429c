//! Branch-reaching socket inputs, on a small domain of their own: a field
//! is packet bytes at a classic offset, an ancillary value or the length
//! (see the parent module for why not `seccomp::domain`).

use std::collections::HashSet;

use cbpf::opcode::*;
use cbpf::{Insn, NetDevice, Op, Program, Src};

use super::{forward, push_unique, Join, PathFacts, INPUT_SEED, MAX_WITNESSES, RANDOM_INPUTS};
use crate::input::SocketInput;
use crate::rng::{below, pick, SplitMix64};

/// Where a value in A or X came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Field {
    /// Packet load of `size` bytes at classic offset `k` (may be negative).
    Packet { k: u32, size: u8 },
    /// Ancillary load `SKF_AD_OFF + x`.
    Ancillary(u32),
    /// `skb->len`.
    Len,
}

/// Abstract value of a register or scratch word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Val {
    Unknown,
    Const(u32),
    /// `field & mask`.
    Field {
        field: Field,
        mask: u32,
    },
}

impl Val {
    fn field(field: Field) -> Self {
        Val::Field { field, mask: u32::MAX }
    }
}

/// What every path to a pc has tested about a field (full-width compares
/// only): `lo <= field <= hi` and `field` is none of `ne`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Range {
    lo: u32,
    hi: u32,
    ne: Vec<u32>,
}

impl Range {
    const ALL: Range = Range { lo: 0, hi: u32::MAX, ne: Vec::new() };

    fn contains(&self, v: u32) -> bool {
        self.lo <= v && v <= self.hi && !self.ne.contains(&v)
    }

    /// A value inside the range: the smallest not excluded (or `lo` when the
    /// range is empty, i.e. the path is infeasible).
    fn pick(&self) -> u32 {
        let mut v = self.lo;
        for _ in 0..=self.ne.len() {
            if self.contains(v) {
                return v;
            }
            v = v.wrapping_add(1);
        }
        self.lo
    }

    /// No value satisfies the range.
    fn is_empty(&self) -> bool {
        if self.lo > self.hi {
            return true;
        }
        let width = u64::from(self.hi - self.lo) + 1;
        width <= self.ne.len() as u64 && (self.lo..=self.hi).all(|v| self.ne.contains(&v))
    }

    /// The smallest range holding both (exclusions both have).
    fn hull(&mut self, other: &Range) {
        self.lo = self.lo.min(other.lo);
        self.hi = self.hi.max(other.hi);
        self.ne.retain(|v| other.ne.contains(v));
    }
}

/// At most this many exclusions are kept per field.
const MAX_NE: usize = 16;

/// Facts about fields, one range per field tested.
type Facts = Vec<(Field, Range)>;

/// Adds `fact` about `field` to `facts`.
fn add_fact(facts: &mut Facts, field: Field, fact: impl FnOnce(&mut Range)) {
    match facts.iter_mut().find(|(f, _)| *f == field) {
        Some((_, range)) => fact(range),
        None => {
            let mut range = Range::ALL;
            fact(&mut range);
            facts.push((field, range));
        }
    }
}

fn feasible(facts: &Facts) -> bool {
    facts.iter().all(|(_, r)| !r.is_empty())
}

/// Machine state at a pc, plus what the paths to it have tested.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    a: Val,
    x: Val,
    mem: [Val; 16],
    /// What EVERY path to the pc has tested (ranges joined by their hull):
    /// sound, so an edge that contradicts it can never be taken.
    known: Facts,
    /// What SOME paths to the pc have tested, one fact list per path (the
    /// first few to arrive): inputs built from one of them follow that path.
    witnesses: Vec<Facts>,
}

impl State {
    fn entry() -> Self {
        State {
            a: Val::Const(0),
            x: Val::Const(0),
            mem: [Val::Unknown; 16],
            known: Vec::new(),
            witnesses: vec![Vec::new()],
        }
    }
}

impl Join for State {
    fn join(&mut self, other: &State) {
        let meet = |a: &mut Val, b: Val| {
            if *a != b {
                *a = Val::Unknown;
            }
        };
        meet(&mut self.a, other.a);
        meet(&mut self.x, other.x);
        for (m, o) in self.mem.iter_mut().zip(other.mem) {
            meet(m, o);
        }
        self.known.retain_mut(|(field, range)| match other.known.iter().find(|(f, _)| f == field) {
            Some((_, theirs)) => {
                range.hull(theirs);
                true
            }
            None => false,
        });
        for w in &other.witnesses {
            if self.witnesses.len() < MAX_WITNESSES && !self.witnesses.contains(w) {
                self.witnesses.push(w.clone());
            }
        }
    }
}

impl State {
    /// This state after an edge that tells `fact` about `field`; `None` when
    /// what every path tested rules the edge out.
    fn with_fact(&self, field: Field, fact: impl Fn(&mut Range)) -> Option<State> {
        let mut s = self.clone();
        add_fact(&mut s.known, field, &fact);
        if !feasible(&s.known) {
            return None;
        }
        for w in &mut s.witnesses {
            add_fact(w, field, &fact);
        }
        s.witnesses.retain(feasible);
        if s.witnesses.is_empty() {
            s.witnesses.push(s.known.clone());
        }
        Some(s)
    }
}

/// The facts each outcome of `A op k` adds about A's field (full width).
fn edge_facts(op: cbpf::JmpOp, k: u32, taken: bool, r: &mut Range) {
    use cbpf::JmpOp::*;
    match (op, taken) {
        (Jeq, true) => {
            r.lo = r.lo.max(k);
            r.hi = r.hi.min(k);
        }
        (Jeq, false) => {
            if r.ne.len() < MAX_NE && !r.ne.contains(&k) {
                r.ne.push(k);
            }
        }
        (Jgt, true) => r.lo = r.lo.max(k.saturating_add(1)),
        (Jgt, false) => r.hi = r.hi.min(k),
        (Jge, true) => r.lo = r.lo.max(k),
        (Jge, false) => r.hi = r.hi.min(k.saturating_sub(1)),
        (Jset, _) => {}
    }
}

impl PathFacts<Field> for Facts {
    fn edges(&self, f: Field) -> Option<[u32; 3]> {
        self.iter().find(|(g, _)| *g == f).map(|(_, range)| [range.lo, range.hi, range.pick()])
    }

    fn admits(&self, f: Field, v: u32) -> bool {
        self.iter().find(|(g, _)| *g == f).is_none_or(|(_, range)| range.contains(v))
    }
}

type Compare = super::Compare<Field, Facts>;

/// What the data flow found.
#[derive(Debug, Default)]
pub(super) struct Analysis {
    /// Every comparison of a field with a constant.
    compares: Vec<Compare>,
    /// Every field loaded anywhere.
    loaded: Vec<Field>,
    /// Outcomes `(pc, taken)` of conditional jumps that no input can take:
    /// what every path to the jump tested contradicts them, or the jump is
    /// never reached.
    pub(super) impossible: Vec<(usize, bool)>,
}

/// Runs the data flow over a validated program.
pub(super) fn analyse(insns: &[Insn]) -> Analysis {
    let mut compares = Vec::new();
    let mut loaded = Vec::new();
    let mut impossible = Vec::new();
    forward(insns.len(), State::entry(), |pc, state, flow| {
        let Some(op) = insns.get(pc).and_then(|i| i.op()) else { return };
        let Some(mut s) = state else {
            if let Op::Jmp { .. } = op {
                impossible.extend([(pc, true), (pc, false)]);
            }
            return;
        };
        let mut load = |s: &mut State, field: Field| {
            note(&mut loaded, field);
            s.a = Val::field(field);
        };
        match op {
            Op::LdImm { k } => s.a = Val::Const(k),
            Op::LdxImm { k } => s.x = Val::Const(k),
            Op::LdMem { k } => s.a = s.mem.get(k as usize).copied().unwrap_or(Val::Unknown),
            Op::LdxMem { k } => s.x = s.mem.get(k as usize).copied().unwrap_or(Val::Unknown),
            Op::St { k } => {
                if let Some(m) = s.mem.get_mut(k as usize) {
                    *m = s.a;
                }
            }
            Op::Stx { k } => {
                if let Some(m) = s.mem.get_mut(k as usize) {
                    *m = s.x;
                }
            }
            // Not in a validated socket program.
            Op::LdxAbsSeccomp { .. } => s.a = Val::Unknown,
            Op::LdAbs { size, k } => {
                if k >= SKF_AD_OFF {
                    match k - SKF_AD_OFF {
                        SKF_AD_NLATTR | SKF_AD_NLATTR_NEST | SKF_AD_ALU_XOR_X | SKF_AD_PAY_OFFSET => s.a = Val::Unknown,
                        x => load(&mut s, Field::Ancillary(x)),
                    }
                } else {
                    load(&mut s, Field::Packet { k, size: size.bytes() as u8 });
                }
            }
            Op::LdInd { size, k } => match s.x {
                Val::Const(x) => load(&mut s, Field::Packet { k: x.wrapping_add(k), size: size.bytes() as u8 }),
                _ => s.a = Val::Unknown,
            },
            Op::LdLen => load(&mut s, Field::Len),
            Op::LdxLen => {
                s.x = Val::field(Field::Len);
            }
            Op::LdxMsh { k } => {
                note(&mut loaded, Field::Packet { k, size: 1 });
                s.x = Val::Unknown;
            }
            Op::Alu { op, src, k } => {
                let operand = match src {
                    Src::K => Val::Const(k),
                    Src::X => s.x,
                };
                s.a = match (s.a, operand, op) {
                    (Val::Const(a), Val::Const(b), _) => op.eval(a, b).map_or(Val::Unknown, Val::Const),
                    (Val::Field { field, mask }, Val::Const(b), cbpf::AluOp::And) => {
                        Val::Field { field, mask: mask & b }
                    }
                    _ => Val::Unknown,
                };
            }
            Op::Neg => {
                s.a = match s.a {
                    Val::Const(a) => Val::Const(a.wrapping_neg()),
                    _ => Val::Unknown,
                }
            }
            Op::Tax => s.x = s.a,
            Op::Txa => s.a = s.x,
            Op::Ja { k } => {
                flow(pc + 1 + k as usize, s);
                return;
            }
            Op::Jmp { op, src, k, jt, jf } => {
                let operand = match src {
                    Src::K => Val::Const(k),
                    Src::X => s.x,
                };
                let compared = match (s.a, operand) {
                    (Val::Field { field, mask }, Val::Const(k)) | (Val::Const(k), Val::Field { field, mask }) => {
                        Some((field, mask, k))
                    }
                    _ => None,
                };
                let (t, f) = (pc + 1 + usize::from(jt), pc + 1 + usize::from(jf));
                if let Some((field, mask, k)) = compared {
                    compares.push(Compare { field, mask, k, witnesses: s.witnesses.clone() });
                    // Facts only for `field op k` (not `k op field`), full width.
                    if mask == u32::MAX && matches!(s.a, Val::Field { .. }) {
                        for (target, taken) in [(t, true), (f, false)] {
                            match s.with_fact(field, |r| edge_facts(op, k, taken, r)) {
                                Some(next) => flow(target, next),
                                None => impossible.push((pc, taken)),
                            }
                        }
                        return;
                    }
                }
                flow(t, s.clone());
                flow(f, s);
                return;
            }
            Op::RetK { .. } | Op::RetA => return,
        }
        flow(pc + 1, s);
    });
    Analysis { compares, loaded, impossible }
}

fn note(loaded: &mut Vec<Field>, field: Field) {
    if !loaded.contains(&field) {
        loaded.push(field);
    }
}

/// The packet every socket input starts from: Ethernet, IPv4 (20 bytes, no
/// fragment), TCP (20 bytes), 16 bytes of payload; 70 bytes.
fn base_packet() -> Vec<u8> {
    let mut p = vec![
        // Ethernet: dst, src, ETH_P_IP.
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x08, 0x00,
        // IPv4: version/ihl, tos, total length 56, id, DF, ttl 64, TCP, checksum, 10.0.0.1 -> 10.0.0.2.
        0x45, 0x00, 0x00, 0x38, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, 10, 0, 0, 1, 10, 0, 0, 2,
        // TCP: 1234 -> 80, seq, ack, doff 5, PSH|ACK, window, checksum, urgent.
        0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0,
    ];
    p.extend(b"0123456789abcdef");
    p
}

/// The same packet as IPv6 with a hop-by-hop header before UDP.
fn ipv6_packet() -> Vec<u8> {
    let mut p = vec![0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x86, 0xdd];
    // Version 6, payload length 24, next header hop-by-hop (0), hop limit 64.
    p.extend([0x60, 0, 0, 0, 0, 24, 0, 64]);
    p.extend([0xfe, 0x80].iter().chain([0u8; 13].iter()).chain([1u8].iter()));
    p.extend([0xfe, 0x80].iter().chain([0u8; 13].iter()).chain([2u8].iter()));
    // Hop-by-hop: next UDP (17), length 0 (8 bytes), padding.
    p.extend([17, 0, 1, 4, 0, 0, 0, 0]);
    // UDP 53 -> 53, length 16, checksum, 8 bytes of payload.
    p.extend([0, 53, 0, 53, 0, 16, 0, 0]);
    p.extend(b"payload!");
    p
}

/// A packet of netlink attributes (host byte order), one of them nested, for
/// `SKF_AD_NLATTR` / `SKF_AD_NLATTR_NEST`.
fn netlink_packet() -> Vec<u8> {
    let mut p = Vec::new();
    let mut attr = |len: u16, ty: u16, body: &[u8]| {
        p.extend(len.to_ne_bytes());
        p.extend(ty.to_ne_bytes());
        p.extend(body);
    };
    attr(8, 1, &[1, 2, 3, 4]);
    attr(8, 2, &[5, 6, 7, 8]);
    // A nest of two attributes (types 3 and 4).
    attr(20, 3, &[]);
    attr(8, 3, &[9, 9, 9, 9]);
    attr(8, 4, &[7, 7, 7, 7]);
    attr(5, 5, &[0xee, 0, 0, 0]);
    p
}

/// Largest packet a generated input gets (compared offsets beyond it are
/// left to the short-packet cases).
const MAX_PACKET: usize = 1 << 16;

/// Where a packet load at classic offset `k` reads in `input`, if anywhere.
fn packet_position(input: &SocketInput, k: u32) -> Option<usize> {
    let k = k as i32;
    if k >= 0 {
        return usize::try_from(k).ok();
    }
    if k >= SKF_NET_OFF as i32 {
        return usize::try_from(k - SKF_NET_OFF as i32).ok()?.checked_add(input.meta.network_offset);
    }
    if k >= SKF_LL_OFF as i32 {
        return usize::try_from(k - SKF_LL_OFF as i32).ok()?.checked_add(input.meta.mac_offset?);
    }
    None
}

/// Sets `field` to `v` in `input` (growing the packet when a load needs it);
/// false when it cannot be set.
fn set_field(input: &mut SocketInput, field: Field, v: u32) -> bool {
    match field {
        Field::Packet { k, size } => {
            let Some(pos) = packet_position(input, k) else { return false };
            let size = usize::from(size);
            let end = pos + size;
            if end > MAX_PACKET {
                return false;
            }
            if input.data.len() < end {
                input.data.resize(end, 0);
                input.meta.headlen = input.data.len();
            }
            let be = v.to_be_bytes();
            match (input.data.get_mut(pos..end), be.get(4 - size..)) {
                (Some(dst), Some(src)) => {
                    dst.copy_from_slice(src);
                    true
                }
                _ => false,
            }
        }
        Field::Len => {
            let len = v as usize;
            if len > MAX_PACKET {
                return false;
            }
            let was_linear = input.meta.headlen >= input.data.len();
            input.data.resize(len, 0);
            input.meta.headlen = if was_linear { len } else { input.meta.headlen.min(len) };
            input.meta.network_offset = input.meta.network_offset.min(len);
            true
        }
        Field::Ancillary(x) => {
            match x {
                SKF_AD_PROTOCOL => input.meta.protocol = v as u16,
                SKF_AD_PKTTYPE => input.meta.pkt_type = (v & 7) as u8,
                SKF_AD_IFINDEX => {
                    let hatype = input.meta.dev.map_or(1, |d| d.hatype);
                    input.meta.dev = Some(NetDevice { ifindex: v as i32, hatype });
                }
                SKF_AD_HATYPE => {
                    let ifindex = input.meta.dev.map_or(1, |d| d.ifindex);
                    input.meta.dev = Some(NetDevice { ifindex, hatype: v as u16 });
                }
                SKF_AD_MARK => input.meta.mark = v,
                SKF_AD_QUEUE => input.meta.queue_mapping = v as u16,
                SKF_AD_RXHASH => input.meta.rxhash = v,
                SKF_AD_CPU => input.meta.cpu = v,
                SKF_AD_RANDOM => input.meta.random = v,
                SKF_AD_VLAN_TAG => input.meta.vlan_tci = v as u16,
                SKF_AD_VLAN_TPID => input.meta.vlan_proto = v as u16,
                SKF_AD_VLAN_TAG_PRESENT => {
                    if v == 0 {
                        input.meta.vlan_tci = 0;
                        input.meta.vlan_proto = 0;
                    } else if input.meta.vlan_tci == 0 && input.meta.vlan_proto == 0 {
                        input.meta.vlan_tci = 1;
                    }
                }
                _ => return false,
            }
            true
        }
    }
}

/// Packets (with their `sk_buff` fields) that reach every branch of a socket
/// filter and every way its loads can fail.
///
/// - For each comparison of a packet byte/half/word (absolute, `SKF_NET_OFF`,
///   `SKF_LL_OFF`, or indirect with a known X), an ancillary value or the
///   length with `K`: that field at `K - 1`, `K`, `K + 1` (and masked
///   variants), on top of what the path tested (as for [`branch_inputs`](super::branch_inputs)), in a typical
///   Ethernet/IPv4/TCP packet grown to reach the field.
/// - For each loaded field: the packet cut one byte short of it and just
///   long enough, and split (linear / paged) at its first byte.
/// - Structural variants: lengths 0, 1, 13, 14, 15, 34, 54; all paged;
///   no device; no MAC header; IPv6 with an extension header; VLAN absent; a
///   netlink attribute packet.
/// - `RANDOM_INPUTS` seeded random packets and field values.
///
/// Deterministic; duplicates removed.
pub fn branch_packets(program: &Program) -> Vec<SocketInput> {
    let Analysis { compares, loaded, .. } = analyse(program.insns());
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut base = SocketInput::test_bpf(base_packet());
    // Grow the base so that every loaded field is inside it.
    for field in &loaded {
        if let Field::Packet { k, size } = *field {
            if let Some(end) = packet_position(&base, k).map(|p| p + usize::from(size)) {
                if end > base.data.len() && end <= MAX_PACKET {
                    base.data.resize(end, 0x5a);
                    base.meta.headlen = base.data.len();
                }
            }
        }
    }
    push_unique(&mut seen, &mut out, base.clone());
    let mut pool: Vec<(Field, u32)> = Vec::new();
    for c in &compares {
        for witness in &c.witnesses {
            let mut input = base.clone();
            for (field, range) in witness {
                set_field(&mut input, *field, range.pick());
            }
            for v in c.values(witness) {
                let mut variant = input.clone();
                if set_field(&mut variant, c.field, v) {
                    push_unique(&mut seen, &mut out, variant);
                    pool.push((c.field, v));
                }
            }
        }
    }
    // Loads that fail or straddle the linear/paged boundary.
    for field in &loaded {
        let Field::Packet { k, size } = *field else { continue };
        let Some(pos) = packet_position(&base, k) else { continue };
        let end = pos + usize::from(size);
        if end <= base.data.len() {
            for cut in [end - 1, end] {
                let mut short = base.clone();
                short.data.truncate(cut);
                short.meta.headlen = cut;
                push_unique(&mut seen, &mut out, short);
            }
            for headlen in [pos, pos + 1] {
                let mut paged = base.clone();
                paged.meta.headlen = headlen.min(paged.data.len());
                push_unique(&mut seen, &mut out, paged);
            }
        }
    }
    for len in [0usize, 1, 13, 14, 15, 34, 54] {
        let mut short = SocketInput::test_bpf(base.data.get(..len.min(base.data.len())).unwrap_or(&[]).to_vec());
        short.data.resize(len, 0);
        short.meta.headlen = len;
        push_unique(&mut seen, &mut out, short);
    }
    let variants: [fn(&mut SocketInput); 7] = [
        |i| i.meta.headlen = 0,
        |i| i.meta.headlen /= 2,
        |i| i.meta.dev = None,
        |i| i.meta.mac_offset = None,
        |i| {
            i.meta.vlan_tci = 0;
            i.meta.vlan_proto = 0;
        },
        |i| {
            *i = SocketInput::test_bpf(ipv6_packet());
            i.meta.protocol = 0x86dd;
            i.meta.vlan_tci = 0;
            i.meta.vlan_proto = 0;
        },
        |i| *i = SocketInput::test_bpf(netlink_packet()),
    ];
    for variant in variants {
        let mut input = base.clone();
        variant(&mut input);
        push_unique(&mut seen, &mut out, input);
    }
    let mut rng = SplitMix64::new(INPUT_SEED ^ program.len() as u64);
    for _ in 0..RANDOM_INPUTS {
        let mut input = base.clone();
        let mut next = || rng.next_u64();
        match below(&mut next, 3) {
            0 => {
                for b in &mut input.data {
                    *b = next() as u8;
                }
            }
            1 => {
                let len = below(&mut next, input.data.len() + 1);
                input.data.truncate(len);
                input.meta.headlen = len;
                input.meta.network_offset = input.meta.network_offset.min(len);
            }
            _ => input.meta.headlen = below(&mut next, input.data.len() + 1),
        }
        for _ in 0..3 {
            if let Some(&(field, v)) = pool.get(below(&mut next, pool.len())) {
                set_field(&mut input, field, v);
            }
        }
        if next() % 4 == 0 {
            input.meta.mark = next() as u32;
            input.meta.protocol = pick(&mut next, &[0x0800, 0x86dd, 0x0806, 0x8100], 0x0800);
            input.meta.pkt_type = (next() % 8) as u8;
            input.meta.cpu = next() as u32 % 64;
            input.meta.random = next() as u32;
        }
        push_unique(&mut seen, &mut out, input);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cbpf::Mode;

    #[test]
    fn packets_reach_compared_bytes_and_short_lengths() {
        // ldh [SKF_NET_OFF + 2]; jgt #1000 -> 1 ; ldb [60]; jeq #7 -> 2; 3
        let text = "ldh [0xfff00002]\n jgt #1000, r1, b60\n r1: ret #1\n b60: ldb [60]\n jeq #7, r2, r3\n \
                    r2: ret #2\n r3: ret #3";
        let prog = crate::asm_program(text, Mode::Socket).unwrap();
        let interp = cbpf::Interp::new(&prog);
        let results: HashSet<u32> =
            branch_packets(&prog).iter().map(|p| interp.run_socket(&p.skb()).unwrap()).collect();
        assert_eq!(results, HashSet::from([0, 1, 2, 3]), "every return, and a failing load, reached");
    }
}
