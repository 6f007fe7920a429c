//! What the code generators need to know about a classic program before
//! they emit a byte: which instructions run at all, where each packet load
//! reads in the frame, what X may hold where an indirect load adds it, and
//! where the packet guards go ([`GuardPlan`]).
//!
//! Classic jumps only go forward (`bpf_check_classic()`), so every pass
//! here is one sweep in pc order (forward facts) or in reverse pc order
//! (facts about what follows): linear in the program's length.

use cbpf::opcode::{SKF_LL_OFF, SKF_NET_OFF};
use cbpf::{AluOp, Op, Program, Size, Src};

use crate::ancillary::Ancillary;

pub use crate::ancillary::NETWORK_OFFSET;

/// The last packet offset the verifier tracks (`MAX_PACKET_OFF` in
/// kernel/bpf/verifier.c, Linux 6.18): a bounds check of `data + L`
/// against `data_end` gives the program a range only for `L <= 0xffff`.
pub const MAX_PACKET_OFF: u32 = 0xffff;

/// Where a packet load of a direct-access hook reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The instruction reads no packet byte.
    None,
    /// `size` bytes at frame offset `pos`; `pos + size <= MAX_PACKET_OFF`.
    Fixed { pos: u32, size: u32 },
    /// The load can never succeed (its offset is in no region, or past
    /// [`MAX_PACKET_OFF`]): the filter returns 0 there.
    Never,
    /// `ld [x + k]`: the offset is known only at run time.
    Indirect { size: u32, k: u32 },
}

/// The frame offset a classic packet offset `k` names, for a hook whose
/// data starts at the MAC header with the network header
/// [`NETWORK_OFFSET`] bytes in; `None` when `k` is in no region.
///
/// Mirrors `bpf_skb_load_helper_convert_offset()` (net/core/filter.c,
/// Linux 6.18) for an skb whose MAC header is at `skb->data`.
///
/// # Deviations
/// The network header is always at [`NETWORK_OFFSET`] (an Ethernet frame;
/// the kernel's is wherever the receive path set it).
pub fn frame_offset(k: u32) -> Option<u32> {
    if (k as i32) >= 0 {
        Some(k)
    } else if k >= SKF_NET_OFF {
        Some(NETWORK_OFFSET + (k - SKF_NET_OFF))
    } else if k >= SKF_LL_OFF {
        Some(k - SKF_LL_OFF)
    } else {
        None
    }
}

fn fixed(k: u32, size: Size) -> Access {
    let size = size.bytes();
    match frame_offset(k) {
        Some(pos) if u64::from(pos) + u64::from(size) <= u64::from(MAX_PACKET_OFF) => Access::Fixed { pos, size },
        _ => Access::Never,
    }
}

/// The packet access of one instruction in a direct-access hook.
pub fn access(op: Op) -> Access {
    match op {
        Op::LdAbs { k, .. } if Ancillary::from_k(k).is_some() => Access::None,
        Op::LdAbs { size, k } => fixed(k, size),
        Op::LdxMsh { k } => fixed(k, Size::B),
        Op::LdInd { size, k } => Access::Indirect { size: size.bytes(), k },
        _ => Access::None,
    }
}

/// The classic pcs an instruction may go to next.
pub fn successors(pc: usize, op: Op) -> Successors {
    match op {
        Op::RetK { .. } | Op::RetA => Successors::None,
        Op::Ja { k } => Successors::One(pc + 1 + k as usize),
        Op::Jmp { jt, jf, .. } => Successors::Two(pc + 1 + usize::from(jt), pc + 1 + usize::from(jf)),
        _ => Successors::One(pc + 1),
    }
}

/// Up to two successor pcs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Successors {
    None,
    One(usize),
    Two(usize, usize),
}

impl Successors {
    fn for_each(self, mut f: impl FnMut(usize)) {
        match self {
            Successors::None => {}
            Successors::One(a) => f(a),
            Successors::Two(a, b) => {
                f(a);
                if b != a {
                    f(b);
                }
            }
        }
    }
}

/// The typed view of each instruction of a validated program (every one
/// has one: `validate()` refuses unknown codes).
pub(crate) fn ops(program: &Program) -> Vec<Op> {
    program.insns().iter().map(|i| i.op().unwrap_or(Op::RetK { k: 0 })).collect()
}

/// An interval of unsigned 32-bit values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    lo: u32,
    hi: u32,
}

impl Range {
    const FULL: Range = Range { lo: 0, hi: u32::MAX };

    fn exact(v: u32) -> Range {
        Range { lo: v, hi: v }
    }

    fn upto(hi: u32) -> Range {
        Range { lo: 0, hi }
    }

    fn hull(self, o: Range) -> Range {
        Range { lo: self.lo.min(o.lo), hi: self.hi.max(o.hi) }
    }

    /// `from_wide(lo, hi)`: the interval if it fits in 32 bits.
    fn from_wide(lo: u64, hi: u64) -> Range {
        match (u32::try_from(lo), u32::try_from(hi)) {
            (Ok(lo), Ok(hi)) => Range { lo, hi },
            _ => Range::FULL,
        }
    }

    /// The values of `self op b` (the program returns 0 instead of
    /// dividing by 0, so a quotient never exceeds its dividend).
    fn alu(self, op: AluOp, b: Range) -> Range {
        let (a_lo, a_hi, b_lo, b_hi) = (u64::from(self.lo), u64::from(self.hi), u64::from(b.lo), u64::from(b.hi));
        match op {
            AluOp::Add => Range::from_wide(a_lo + b_lo, a_hi + b_hi),
            AluOp::Sub if a_lo >= b_hi => Range::from_wide(a_lo - b_hi, a_hi - b_lo),
            AluOp::Mul => Range::from_wide(a_lo * b_lo, a_hi * b_hi),
            AluOp::Div if b.lo > 0 => Range { lo: self.lo / b.hi, hi: self.hi / b.lo },
            AluOp::Div => Range::upto(self.hi),
            AluOp::Mod => Range::upto(self.hi.min(b.hi.saturating_sub(1))),
            AluOp::And => Range::upto(self.hi.min(b.hi)),
            AluOp::Or | AluOp::Xor => Range::upto(ones_up_to(self.hi.max(b.hi))),
            AluOp::Lsh if b.hi < 32 => Range::from_wide(a_lo << b_lo, a_hi << b_hi),
            AluOp::Rsh if b.hi < 32 => Range { lo: self.lo >> b.hi, hi: self.hi >> b.lo },
            AluOp::Rsh => Range::upto(self.hi),
            _ => Range::FULL,
        }
    }
}

/// The smallest `2^n - 1` at least `v`.
fn ones_up_to(v: u32) -> u32 {
    if v == 0 {
        0
    } else {
        u32::MAX >> v.leading_zeros()
    }
}

/// What A, X and `M[]` may hold before an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Vals {
    a: Range,
    x: Range,
    m: [Range; 16],
}

impl Vals {
    const ENTRY: Vals = Vals { a: Range { lo: 0, hi: 0 }, x: Range { lo: 0, hi: 0 }, m: [Range::FULL; 16] };

    fn join(self, o: Vals) -> Vals {
        let mut m = self.m;
        for (slot, other) in m.iter_mut().zip(o.m) {
            *slot = slot.hull(other);
        }
        Vals { a: self.a.hull(o.a), x: self.x.hull(o.x), m }
    }

    fn step(mut self, op: Op) -> Vals {
        let load = |size: Size| match size {
            Size::B => Range::upto(0xff),
            Size::H => Range::upto(0xffff),
            Size::W => Range::FULL,
        };
        let slot = |k: u32| (k as usize).min(15);
        match op {
            Op::LdImm { k } => self.a = Range::exact(k),
            Op::LdxImm { k } => self.x = Range::exact(k),
            Op::LdMem { k } => self.a = self.m.get(slot(k)).copied().unwrap_or(Range::FULL),
            Op::LdxMem { k } => self.x = self.m.get(slot(k)).copied().unwrap_or(Range::FULL),
            Op::St { k } => {
                if let Some(m) = self.m.get_mut(slot(k)) {
                    *m = self.a;
                }
            }
            Op::Stx { k } => {
                if let Some(m) = self.m.get_mut(slot(k)) {
                    *m = self.x;
                }
            }
            Op::LdAbs { k, .. } if Ancillary::from_k(k).is_some() => self.a = Range::FULL,
            Op::LdAbs { size, .. } | Op::LdInd { size, .. } => self.a = load(size),
            Op::LdLen | Op::LdxAbsSeccomp { .. } => self.a = Range::FULL,
            Op::LdxLen => self.x = Range::FULL,
            Op::LdxMsh { .. } => self.x = Range::upto(60),
            Op::Alu { op, src, k } => {
                let b = match src {
                    Src::K => Range::exact(k),
                    Src::X => self.x,
                };
                self.a = self.a.alu(op, b);
            }
            Op::Neg => self.a = Range::FULL,
            Op::Tax => self.x = self.a,
            Op::Txa => self.a = self.x,
            Op::Ja { .. } | Op::Jmp { .. } | Op::RetK { .. } | Op::RetA => {}
        }
        self
    }
}

/// Per-pc facts of one program.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    /// Whether some path from pc 0 runs the instruction.
    pub reachable: Vec<bool>,
    /// Whether an indirect load's `X + k` is non-negative (as the
    /// signed 32-bit offset the kernel sees) on every path: then it reads
    /// the frame at `X + k` and needs no dispatch on the offset's region.
    pub nonnegative_index: Vec<bool>,
}

/// Reachability and the value ranges behind [`Facts::nonnegative_index`];
/// an instruction in `fails` always returns 0 (a load no packet satisfies)
/// and leads nowhere.
pub(crate) fn facts(ops: &[Op], fails: &[bool]) -> Facts {
    let n = ops.len();
    let mut state: Vec<Option<Vals>> = vec![None; n];
    if let Some(first) = state.first_mut() {
        *first = Some(Vals::ENTRY);
    }
    let mut nonnegative_index = vec![false; n];
    for pc in 0..n {
        let (Some(Some(vals)), Some(&op)) = (state.get(pc).copied(), ops.get(pc)) else { continue };
        if let Op::LdInd { k, .. } = op {
            if let Some(slot) = nonnegative_index.get_mut(pc) {
                *slot = u64::from(vals.x.hi) + u64::from(k) <= i32::MAX as u64;
            }
        }
        if fails.get(pc) == Some(&true) {
            continue;
        }
        let out = vals.step(op);
        successors(pc, op).for_each(|s| {
            if let Some(slot) = state.get_mut(s) {
                *slot = Some(slot.map_or(out, |old| old.join(out)));
            }
        });
    }
    Facts { reachable: state.iter().map(Option::is_some).collect(), nonnegative_index }
}

/// Where the packet guards of a direct-access hook program go, and how
/// many a packet runs.
///
/// A guard before pc `p` checks `data + L <= data_end` and returns 0 when
/// the frame is shorter (what the classic load would do). Its length `L`
/// is *anticipated*: on every path from `p`, either a load needs at least
/// `L` bytes or the filter returns 0 anyway (`ret #0`, a load that can
/// never succeed), so failing early returns what the classic program
/// would. A guard is placed only before a load whose bytes no check on
/// every path to it has covered (the *available* length, the minimum over
/// the paths in), so a dominating check covers later loads and a block
/// runs at most one guard. Indirect loads (`ld [x + k]`) keep a check each.
///
/// The scheme of cloudflare/cbpfc for comparison ([`GuardPlan::per_block`]):
/// one guard at the start of every basic block that loads, for the block's
/// largest load, and one check per indirect load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardPlan {
    /// The length checked before each pc (none where `0`).
    guard: Vec<u32>,
    /// The length every path to each pc has checked (before its guard).
    available: Vec<u32>,
    /// Per pc: the basic-block guard of the per-block scheme that starts
    /// there (`u32::MAX` for a block with a load that never succeeds).
    block: Vec<u32>,
    /// Per pc: an indirect load (one check in both schemes).
    indirect: Vec<bool>,
}

impl GuardPlan {
    /// The plan for `ops` (see the type's docs).
    pub(crate) fn new(ops: &[Op], reachable: &[bool]) -> GuardPlan {
        const INF: u64 = u64::MAX;
        let n = ops.len();
        let accesses: Vec<Access> = ops.iter().map(|&op| access(op)).collect();
        let at = |v: &[u64], pc: usize| v.get(pc).copied().unwrap_or(0);
        // Backward: the anticipated length and the largest reachable end.
        let mut ant = vec![0u64; n];
        let mut max_end = vec![0u64; n];
        for pc in (0..n).rev() {
            let (Some(&op), Some(&acc)) = (ops.get(pc), accesses.get(pc)) else { continue };
            let (after_ant, after_end) = match successors(pc, op) {
                Successors::None => (if matches!(op, Op::RetK { k: 0 }) { INF } else { 0 }, 0),
                Successors::One(s) => (at(&ant, s), at(&max_end, s)),
                Successors::Two(t, f) => (at(&ant, t).min(at(&ant, f)), at(&max_end, t).max(at(&max_end, f))),
            };
            let (a, e) = match acc {
                Access::Fixed { pos, size } => {
                    let end = u64::from(pos + size);
                    (after_ant.max(end), after_end.max(end))
                }
                Access::Never => (INF, after_end),
                Access::None | Access::Indirect { .. } => (after_ant, after_end),
            };
            if let (Some(x), Some(y)) = (ant.get_mut(pc), max_end.get_mut(pc)) {
                *x = a;
                *y = e;
            }
        }
        // Forward: the available length, and a guard where it falls short.
        let mut avail_in: Vec<Option<u64>> = vec![None; n];
        if let Some(first) = avail_in.first_mut() {
            *first = Some(0);
        }
        let mut guard = vec![0u32; n];
        for pc in 0..n {
            let (Some(Some(avail)), Some(&op), Some(true)) =
                (avail_in.get(pc).copied(), ops.get(pc), reachable.get(pc))
            else {
                continue;
            };
            if accesses.get(pc) == Some(&Access::Never) {
                continue;
            }
            let mut out = avail;
            if let Some(Access::Fixed { pos, size }) = accesses.get(pc) {
                let end = u64::from(pos + size);
                if avail < end {
                    let len = at(&ant, pc).min(at(&max_end, pc)).min(u64::from(MAX_PACKET_OFF));
                    if let Some(g) = guard.get_mut(pc) {
                        *g = len as u32;
                    }
                    out = len;
                }
            }
            successors(pc, op).for_each(|s| {
                if let Some(slot) = avail_in.get_mut(s) {
                    *slot = Some(slot.map_or(out, |old| old.min(out)));
                }
            });
        }
        // The per-block scheme: leaders, then each block's largest end.
        let mut leader = vec![false; n];
        if let Some(first) = leader.first_mut() {
            *first = true;
        }
        for (pc, &op) in ops.iter().enumerate() {
            let ends_block = matches!(op, Op::Ja { .. } | Op::Jmp { .. } | Op::RetK { .. } | Op::RetA);
            if ends_block {
                if let Some(l) = leader.get_mut(pc + 1) {
                    *l = true;
                }
            }
            successors(pc, op).for_each(|s| {
                if ends_block {
                    if let Some(l) = leader.get_mut(s) {
                        *l = true;
                    }
                }
            });
        }
        let mut block = vec![0u32; n];
        let mut start = 0;
        for pc in 0..n {
            if leader.get(pc) == Some(&true) {
                start = pc;
            }
            let need = match accesses.get(pc) {
                Some(Access::Fixed { pos, size }) => pos + size,
                Some(Access::Never) => u32::MAX,
                _ => 0,
            };
            if let Some(b) = block.get_mut(start) {
                *b = (*b).max(need);
            }
        }
        let indirect = accesses.iter().map(|a| matches!(a, Access::Indirect { .. })).collect();
        let available = avail_in.iter().map(|a| a.map_or(0, |a| a.min(u64::from(MAX_PACKET_OFF)) as u32)).collect();
        GuardPlan { guard, available, block, indirect }
    }

    /// The length the guard before `pc` checks, if there is one.
    pub fn guard(&self, pc: usize) -> Option<u32> {
        self.guard.get(pc).copied().filter(|&l| l > 0)
    }

    /// The packet length every path to `pc` has checked before it (the
    /// code after a tc slow path makes the verifier see it again: pulling
    /// data invalidates what it knew of the packet pointers).
    pub fn available(&self, pc: usize) -> u32 {
        self.available.get(pc).copied().unwrap_or(0)
    }

    /// How many guards the program has (each runs at most once a packet).
    pub fn len(&self) -> usize {
        self.guard.iter().filter(|&&l| l > 0).count()
    }

    /// Whether the program has no guard.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bounds checks a packet of `len` bytes runs when the classic
    /// program executes the pcs of `path` (in order, as the classic
    /// interpreter's trace reports them): guards and indirect loads' checks,
    /// up to the first that fails.
    pub fn executed(&self, path: &[usize], len: u32) -> usize {
        count(path, |pc| self.guard(pc), &self.indirect, len)
    }

    /// The same for the per-block scheme: a guard at every executed block
    /// that loads, plus the indirect loads' checks.
    pub fn per_block(&self, path: &[usize], len: u32) -> usize {
        count(path, |pc| self.block.get(pc).copied().filter(|&l| l > 0), &self.indirect, len)
    }
}

fn count(path: &[usize], guard: impl Fn(usize) -> Option<u32>, indirect: &[bool], len: u32) -> usize {
    let mut n = 0;
    for &pc in path {
        if let Some(need) = guard(pc) {
            n += 1;
            if len < need {
                break;
            }
        }
        if indirect.get(pc) == Some(&true) {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use cbpf::{Insn, Mode};

    fn plan(insns: &[Insn]) -> (GuardPlan, Facts) {
        let program = cbpf::validate(insns, Mode::Socket).unwrap();
        let ops = ops(&program);
        let fails: Vec<bool> = ops.iter().map(|&op| access(op) == Access::Never).collect();
        let facts = facts(&ops, &fails);
        (GuardPlan::new(&ops, &facts.reachable), facts)
    }

    #[test]
    fn frame_offsets_of_each_region() {
        assert_eq!(frame_offset(12), Some(12));
        assert_eq!(frame_offset(SKF_NET_OFF + 9), Some(23));
        assert_eq!(frame_offset(SKF_LL_OFF + 12), Some(12));
        assert_eq!(frame_offset(SKF_LL_OFF - 1), None);
        assert_eq!(frame_offset(0x8000_0000), None);
        assert_eq!(access(Op::LdAbs { size: Size::W, k: 0xfffc }), Access::Never);
        assert_eq!(access(Op::LdAbs { size: Size::W, k: 0xfffb }), Access::Fixed { pos: 0xfffb, size: 4 });
    }

    /// `ip and udp`-like: the first guard covers both loads, because the
    /// path that skips the second returns 0.
    #[test]
    fn a_guard_is_hoisted_over_a_reject() {
        let (p, _) = plan(&[
            Insn::stmt(0x28, 12),          // ldh [12]
            Insn::jump(0x15, 0x800, 0, 3), // jeq #0x800 jt 2 jf 5
            Insn::stmt(0x30, 23),          // ldb [23]
            Insn::jump(0x15, 17, 0, 1),    // jeq #17
            Insn::stmt(0x06, 0x40000),     // ret #262144
            Insn::stmt(0x06, 0),           // ret #0
        ]);
        assert_eq!(p.guard(0), Some(24));
        assert_eq!(p.guard(2), None);
        assert_eq!(p.len(), 1);
        // A 20-byte frame fails the hoisted guard: one check; the
        // per-block scheme runs two (the second fails).
        assert_eq!(p.executed(&[0, 1, 2, 3, 5], 30), 1);
        assert_eq!(p.per_block(&[0, 1, 2, 3, 5], 30), 2);
        assert_eq!(p.executed(&[0], 20), 1);
    }

    /// A path that accepts without the second load keeps the guard small.
    #[test]
    fn an_accepting_path_stops_the_hoisting() {
        let (p, _) = plan(&[
            Insn::stmt(0x28, 12),          // ldh [12]
            Insn::jump(0x15, 0x800, 0, 2), // jeq #0x800 jt 2 jf 4
            Insn::stmt(0x30, 23),          // ldb [23]
            Insn::stmt(0x16, 0),           // ret a
            Insn::stmt(0x06, 1),           // ret #1
        ]);
        assert_eq!(p.guard(0), Some(14));
        assert_eq!(p.guard(2), Some(24));
    }

    #[test]
    fn x_from_msh_is_a_nonnegative_index() {
        let (_, f) = plan(&[
            Insn::stmt(0xb1, 14),          // ldxb 4*([14]&0xf)
            Insn::stmt(0x48, 16),          // ldh [x + 16]
            Insn::stmt(0x01, 0xfff0_0000), // ldx #SKF_NET_OFF
            Insn::stmt(0x48, 2),           // ldh [x + 2]
            Insn::stmt(0x16, 0),
        ]);
        assert!(f.nonnegative_index[1]);
        assert!(!f.nonnegative_index[3]);
    }

    #[test]
    fn unreachable_instructions_are_found() {
        let (_, f) = plan(&[Insn::stmt(0x06, 0), Insn::stmt(0x06, 1)]);
        assert_eq!(f.reachable, [true, false]);
    }
}
