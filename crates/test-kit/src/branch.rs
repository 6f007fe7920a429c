//! Inputs that reach every branch: [`branch_inputs`] (seccomp) and
//! [`branch_packets`] (socket) run a small forward data flow over the
//! program to learn which field (seccomp word, packet bytes, ancillary
//! value, length) `A` holds at each comparison, then build inputs with that
//! field at `K - 1`, `K` and `K + 1` (and around AND masks), combined with
//! what the path to the comparison has already tested (the arch, the
//! syscall number, earlier argument checks); plus seeded random inputs.

use std::collections::HashSet;

use cbpf::opcode::*;
use cbpf::{Insn, NetDevice, Op, Program, SeccompData, Src};

use crate::input::SocketInput;
use crate::rng::{below, pick, SplitMix64};

/// Where a value in A or X came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Field {
    /// Seccomp-internal load of the word at this offset of `seccomp_data`.
    Seccomp(u32),
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

/// At most this many witness paths are kept per pc.
const MAX_WITNESSES: usize = 3;

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

/// One comparison of a loaded field against a constant.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Compare {
    field: Field,
    mask: u32,
    k: u32,
    /// The witness paths to the comparison.
    witnesses: Vec<Facts>,
}

impl Compare {
    /// Values to give the compared field on the path of `witness`: around
    /// `K` (and the mask), plus the edges of what the path allows; only
    /// those the path allows, when there are any.
    fn values(&self, witness: &Facts) -> Vec<u32> {
        let mut v = candidates(self.k, self.mask);
        if let Some((_, range)) = witness.iter().find(|(f, _)| *f == self.field) {
            v.extend([range.lo, range.hi, range.pick()]);
            let (inside, outside): (Vec<u32>, Vec<u32>) = v.into_iter().partition(|&x| range.contains(x));
            v = if inside.is_empty() { outside } else { inside };
        }
        v
    }
}

/// What the data flow found.
#[derive(Debug, Default)]
struct Analysis {
    /// Every comparison of a field with a constant.
    compares: Vec<Compare>,
    /// Every field loaded anywhere.
    loaded: Vec<Field>,
    /// Outcomes `(pc, taken)` of conditional jumps that no input can take:
    /// what every path to the jump tested contradicts them, or the jump is
    /// never reached.
    impossible: Vec<(usize, bool)>,
}

/// Runs the data flow over a validated program.
fn analyse(insns: &[Insn]) -> Analysis {
    let mut states: Vec<Option<State>> = vec![None; insns.len()];
    if let Some(first) = states.first_mut() {
        *first = Some(State::entry());
    }
    let mut compares = Vec::new();
    let mut loaded = Vec::new();
    let mut impossible = Vec::new();
    let flow = |states: &mut Vec<Option<State>>, target: usize, s: State| {
        if let Some(slot) = states.get_mut(target) {
            match slot {
                Some(existing) => existing.join(&s),
                None => *slot = Some(s),
            }
        }
    };
    for (pc, insn) in insns.iter().enumerate() {
        let Some(op) = insn.op() else { continue };
        let Some(mut s) = states.get_mut(pc).and_then(Option::take) else {
            if let Op::Jmp { .. } = op {
                impossible.extend([(pc, true), (pc, false)]);
            }
            continue;
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
            Op::LdxAbsSeccomp { k } => load(&mut s, Field::Seccomp(k)),
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
                    (Val::Const(a), Val::Const(b), _) => alu_const(op, a, b).map_or(Val::Unknown, Val::Const),
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
                flow(&mut states, pc + 1 + k as usize, s);
                continue;
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
                                Some(next) => flow(&mut states, target, next),
                                None => impossible.push((pc, taken)),
                            }
                        }
                        continue;
                    }
                }
                flow(&mut states, t, s.clone());
                flow(&mut states, f, s);
                continue;
            }
            Op::RetK { .. } | Op::RetA => continue,
        }
        flow(&mut states, pc + 1, s);
    }
    Analysis { compares, loaded, impossible }
}

/// Outcomes of conditional jumps that no input can take, as `(pc, taken)`:
/// the program's own earlier comparisons rule them out (the leaves of
/// libseccomp's binary trees, where every value of the range is handled) or
/// the jump is unreachable. Conservative: an outcome not listed may still be
/// impossible (only full-width comparisons of loaded fields with constants
/// are tracked).
pub fn impossible_outcomes(program: &Program) -> Vec<(cbpf::Pc, bool)> {
    analyse(program.insns()).impossible.into_iter().map(|(pc, taken)| (cbpf::Pc(pc), taken)).collect()
}

fn note(loaded: &mut Vec<Field>, field: Field) {
    if !loaded.contains(&field) {
        loaded.push(field);
    }
}

fn alu_const(op: cbpf::AluOp, a: u32, b: u32) -> Option<u32> {
    use cbpf::AluOp::*;
    Some(match op {
        Add => a.wrapping_add(b),
        Sub => a.wrapping_sub(b),
        Mul => a.wrapping_mul(b),
        Div => a.checked_div(b)?,
        Mod => a.checked_rem(b)?,
        Or => a | b,
        And => a & b,
        Xor => a ^ b,
        Lsh => a.wrapping_shl(b),
        Rsh => a.wrapping_shr(b),
    })
}

/// Values of a field around a comparison with `k` after `& mask`: `K - 1`,
/// `K`, `K + 1`, and for masks the bits outside it set, the lowest masked bit
/// flipped, all or none of the mask.
fn candidates(k: u32, mask: u32) -> Vec<u32> {
    let mut v = vec![k.wrapping_sub(1), k, k.wrapping_add(1)];
    if mask != u32::MAX {
        let low = mask & mask.wrapping_neg();
        v.extend([k | !mask, (k & mask) ^ low, 0, mask, !k]);
    }
    v
}

/// Pushes `item` unless already present (keeps generation order).
fn push_unique<T: Clone + Eq + std::hash::Hash>(seen: &mut HashSet<T>, out: &mut Vec<T>, item: T) {
    if seen.insert(item.clone()) {
        out.push(item);
    }
}

// `AUDIT_ARCH_X86_64` is the arch of inputs whose filter never tests one.
use cbpf::uapi::audit::AUDIT_ARCH_X86_64;

/// Seed of the random part of the generated inputs.
const INPUT_SEED: u64 = 0x0bad_5eed_cafe_f00d;

/// Random inputs added to the branch-reaching ones.
const RANDOM_INPUTS: usize = 32;

/// System calls that reach every branch of a seccomp filter that compares
/// `seccomp_data` words (possibly after an AND mask) with constants.
///
/// For each comparison of a word with `K`, the word is set to `K - 1`, `K`
/// and `K + 1` (and masked variants, and the edges of the range the path
/// allows), in an input whose other words satisfy what every path to the
/// comparison tested: equalities (`jeq` taken), ranges (`jgt`/`jge`) and
/// exclusions (`jeq` not taken), so argument checks see the arch and syscall
/// number that lead to them and the earlier argument checks that let them run. Then
/// `RANDOM_INPUTS` seeded random inputs built from the compared constants
/// and random words. Deterministic; duplicates removed.
pub fn branch_inputs(program: &Program) -> Vec<SeccompData> {
    let compares = analyse(program.insns()).compares;
    let default_arch =
        compares.iter().find(|c| c.field == Field::Seccomp(4) && c.mask == u32::MAX).map_or(AUDIT_ARCH_X86_64, |c| c.k);
    let base = |known: &[(Field, Range)]| {
        let mut words = [0u32; 16];
        if let Some(w) = words.get_mut(1) {
            *w = default_arch;
        }
        for (field, range) in known {
            if let Field::Seccomp(off) = field {
                if let Some(w) = words.get_mut(*off as usize / 4) {
                    *w = range.pick();
                }
            }
        }
        words
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    push_unique(&mut seen, &mut out, seccomp_from_words(&base(&[])));
    let mut pool: Vec<(usize, u32)> = Vec::new();
    for c in &compares {
        let Field::Seccomp(off) = c.field else { continue };
        let word = off as usize / 4;
        for witness in &c.witnesses {
            let mut words = base(witness);
            for v in c.values(witness) {
                if let Some(w) = words.get_mut(word) {
                    *w = v;
                }
                push_unique(&mut seen, &mut out, seccomp_from_words(&words));
                pool.push((word, v));
            }
        }
    }
    let mut rng = SplitMix64::new(INPUT_SEED ^ program.len() as u64);
    for _ in 0..RANDOM_INPUTS {
        let mut words = base(&[]);
        for w in &mut words {
            *w = match rng.next_u64() % 4 {
                0 => rng.next_u64() as u32,
                1 => 0,
                _ => *w,
            };
        }
        for _ in 0..3 {
            if let Some(&(word, v)) = pool.get(below(&mut || rng.next_u64(), pool.len())) {
                if let Some(w) = words.get_mut(word) {
                    *w = v;
                }
            }
        }
        push_unique(&mut seen, &mut out, seccomp_from_words(&words));
    }
    out
}

/// `struct seccomp_data` from its 16 native-endian words.
fn seccomp_from_words(words: &[u32; 16]) -> SeccompData {
    let mut bytes = [0u8; 64];
    for (chunk, w) in bytes.chunks_exact_mut(4).zip(words) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    let u64_at = |at: usize| {
        let mut b = [0u8; 8];
        if let Some(src) = bytes.get(at..at + 8) {
            b.copy_from_slice(src);
        }
        u64::from_ne_bytes(b)
    };
    let word = |i: usize| words.get(i).copied().unwrap_or(0);
    SeccompData {
        nr: word(0) as i32,
        arch: word(1),
        instruction_pointer: u64_at(8),
        args: [u64_at(16), u64_at(24), u64_at(32), u64_at(40), u64_at(48), u64_at(56)],
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
        Field::Seccomp(_) => false,
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
///   variants), on top of what the path tested (as for [`branch_inputs`]), in a typical
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
    use cbpf::{validate, Mode};

    #[test]
    fn data_flow_sees_masked_argument_halves_and_the_path_equalities() {
        // ld arch; jeq x86_64 else kill; ld nr; jeq 2 -> args; allow;
        // args: ld [20] (high half of args[0]); and #0xff00; jeq #0x1200 -> errno; allow
        let insns = [
            Insn::stmt(LD_W_ABS, 4),
            Insn::jump(JMP_JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
            Insn::stmt(RET_K, 0),
            Insn::stmt(LD_W_ABS, 0),
            Insn::jump(JMP_JEQ_K, 2, 1, 0),
            Insn::stmt(RET_K, 0x7fff_0000),
            Insn::stmt(LD_W_ABS, 20),
            Insn::stmt(ALU_AND_K, 0xff00),
            Insn::jump(JMP_JEQ_K, 0x1200, 0, 1),
            Insn::stmt(RET_K, 0x0005_0001),
            Insn::stmt(RET_K, 0x7fff_0000),
        ];
        let prog = validate(&insns, Mode::Seccomp).unwrap();
        let compares = analyse(prog.insns()).compares;
        let arg = compares.iter().find(|c| c.field == Field::Seccomp(20)).unwrap();
        assert_eq!((arg.mask, arg.k), (0xff00, 0x1200));
        let fact = |field| arg.witnesses[0].iter().find(|(f, _)| *f == field).map(|(_, r)| r.pick());
        assert_eq!(fact(Field::Seccomp(4)), Some(AUDIT_ARCH_X86_64));
        assert_eq!(fact(Field::Seccomp(0)), Some(2));
        let inputs = branch_inputs(&prog);
        let interp = cbpf::Interp::new(&prog);
        let results: HashSet<u32> = inputs.iter().map(|d| interp.run_seccomp(&d.to_bytes()).unwrap()).collect();
        assert_eq!(results, HashSet::from([0, 0x7fff_0000, 0x0005_0001]), "every return reached");
    }

    #[test]
    fn packets_reach_compared_bytes_and_short_lengths() {
        // ldh [SKF_NET_OFF + 2]; jgt #1000 -> 1 ; ldb [60]; jeq #7 -> 2; 3
        let insns = [
            Insn::stmt(LD_H_ABS, SKF_NET_OFF + 2),
            Insn::jump(JMP_JGT_K, 1000, 0, 1),
            Insn::stmt(RET_K, 1),
            Insn::stmt(LD_B_ABS, 60),
            Insn::jump(JMP_JEQ_K, 7, 0, 1),
            Insn::stmt(RET_K, 2),
            Insn::stmt(RET_K, 3),
        ];
        let prog = validate(&insns, Mode::Socket).unwrap();
        let interp = cbpf::Interp::new(&prog);
        let results: HashSet<u32> =
            branch_packets(&prog).iter().map(|p| interp.run_socket(&p.skb()).unwrap()).collect();
        assert_eq!(results, HashSet::from([0, 1, 2, 3]), "every return, and a failing load, reached");
    }

    #[test]
    fn impossible_outcomes_are_the_leaves_a_range_rules_out() {
        // ld nr; jgt #2 -> ret 9; jeq #0 -> ret 0; jeq #1 -> ret 1;
        // jeq #2 -> ret 2 else ret 3 (impossible: nr <= 2 and not 0, 1).
        let insns = [
            Insn::stmt(LD_W_ABS, 0),
            Insn::jump(JMP_JGT_K, 2, 7, 0),
            Insn::jump(JMP_JEQ_K, 0, 4, 0),
            Insn::jump(JMP_JEQ_K, 1, 4, 0),
            Insn::jump(JMP_JEQ_K, 2, 0, 1),
            Insn::stmt(RET_K, 2),
            Insn::stmt(RET_K, 3),
            Insn::stmt(RET_K, 0),
            Insn::stmt(RET_K, 1),
            Insn::stmt(RET_K, 9),
        ];
        let prog = validate(&insns, Mode::Seccomp).unwrap();
        assert_eq!(impossible_outcomes(&prog), [(cbpf::Pc(4), false)]);
        let interp = cbpf::Interp::new(&prog);
        let results: HashSet<u32> =
            branch_inputs(&prog).iter().map(|d| interp.run_seccomp(&d.to_bytes()).unwrap()).collect();
        assert_eq!(results, HashSet::from([0, 1, 2, 9]));
    }

    #[test]
    fn seccomp_words_round_trip() {
        let words: [u32; 16] = std::array::from_fn(|i| 0x1000_0000 * (i as u32 % 3) + i as u32);
        let bytes = seccomp_from_words(&words).to_bytes();
        for (i, chunk) in bytes.chunks_exact(4).enumerate() {
            assert_eq!(u32::from_ne_bytes(chunk.try_into().unwrap()), words[i]);
        }
    }
}
