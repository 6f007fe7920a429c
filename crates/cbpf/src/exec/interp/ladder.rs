//! 32-bit argument ladders ([`chain::ladder`]: Chromium's check of an
//! argument's two words before each of several `==`) as one op: the first
//! round's load becomes a [`Step::Ladder`], which checks the words once
//! and scans the keys ([`chain::ladder::Ladders`], shared with the eBPF
//! executor). The other rounds keep their ops, for jumps that land on
//! them.

use chain::ladder::Ladders;

use super::compile::{Classic, Step, DEAD};

/// The ladders of `code` (outcomes: raw pcs, for `compile::route_returns`
/// to route), each first round's op replaced. Runs before the routing and
/// `compile::link_chains`, so that no chain links into a ladder's start.
pub(super) fn build(code: &Classic<'_>, ops: &mut [Step]) -> Ladders<u16> {
    let ladders = Ladders::build(code, code.insns.len(), |pc| u16::try_from(pc).ok().filter(|&t| t != DEAD));
    for (i, ladder) in ladders.all().iter().enumerate() {
        let Ok(index) = u16::try_from(i) else { break };
        // Whatever op the start had (its load, fused with what follows):
        // the ladder's op runs everything from there.
        if let Some(op) = ops.get_mut(ladder.start) {
            *op = Step::Ladder { hi: ladder.hi, lo: ladder.lo, ladder: index };
        }
    }
    ladders
}

/// Where ladder `ladder` leaves to with `hi` and `lo` in the argument's
/// words (a routed pc), and the value `A` holds there.
#[inline(always)]
pub(super) fn exit(ladders: &Ladders<u16>, ladder: u16, hi: u32, lo: u32) -> (usize, u32) {
    ladders.exit(usize::from(ladder), hi, lo).map_or((usize::from(DEAD), 0), |(to, a)| (usize::from(to), a))
}

#[cfg(test)]
mod tests {
    use crate::insn::Insn;
    use crate::opcode::*;
    use crate::validate::{validate, Mode};

    use super::super::Interp;
    use super::Step;
    use test_data::rng::Rng;

    /// `struct seccomp_data` with `arch` (the test programs' entry
    /// selector) and `args[1]` as its high and low words.
    fn data(arch: u32, hi: u32, lo: u32) -> [u8; 64] {
        let mut d = [0u8; 64];
        d[4..8].copy_from_slice(&arch.to_ne_bytes());
        d[24..28].copy_from_slice(&lo.to_ne_bytes());
        d[28..32].copy_from_slice(&hi.to_ne_bytes());
        d
    }

    /// A filter that enters one of `entries` (pcs of `body`, which starts
    /// after them) by the `arch` word's value, then `body` (relative
    /// targets), then `ret A`; returns it and the pc `body` starts at.
    fn entered(body: &[Insn], entries: &[usize]) -> (Vec<Insn>, usize) {
        let head = 1 + entries.len();
        let mut insns = vec![Insn::stmt(LD_W_ABS, 4)];
        for (i, &e) in entries.iter().enumerate() {
            let pc = 1 + i;
            let to = head + e;
            // The last selector falls through to the body's start too.
            insns.push(Insn::jump(JMP_JEQ_K, i as u32, (to - pc - 1) as u8, 0));
        }
        insns.extend_from_slice(body);
        insns.push(Insn::stmt(RET_A, 0));
        (insns, head)
    }

    /// One round of Chromium's check over `args[1]` (words 28 and 24), its
    /// hit `hit` and miss `miss` instructions past its end, rejects
    /// `reject` past it.
    fn round(key: u32, hit: u8, miss: u8, reject: u8) -> [Insn; 7] {
        [
            Insn::stmt(LD_W_ABS, 28),
            Insn::jump(JMP_JEQ_K, 0, 3, 0),
            Insn::jump(JMP_JEQ_K, 0xffff_ffff, 0, reject + 4),
            Insn::stmt(LD_W_ABS, 24),
            Insn::jump(JMP_JSET_K, 0x8000_0000, 0, reject + 2),
            Insn::stmt(LD_W_ABS, 24),
            Insn::jump(JMP_JEQ_K, key, hit, miss),
        ]
    }

    #[test]
    fn argument_ladders_run_as_the_trace_from_every_entry() {
        let mut rng = Rng(0x1d87_2b41_9c3e_55a7);
        let mut ladders = 0;
        for case in 0..300 {
            // Rounds, then three ends: `ret A` (hits), `ret #k` (misses),
            // `ret A` again (rejects), some hits elsewhere.
            let n = 1 + rng.below(9);
            let keys: Vec<u32> =
                (0..n).map(|_| [0, 1, 3, 0x8000_0000, u32::MAX, rng.next_u64() as u32][rng.below(6)]).collect();
            let mut body = Vec::new();
            for (i, &k) in keys.iter().enumerate() {
                let left = 7 * (n - i - 1);
                let hit = if rng.below(4) == 0 { 7 } else { left };
                let miss = if i + 1 == n { left + 1 } else { 0 };
                body.extend(round(k, hit.min(left) as u8, miss as u8, (left + 2) as u8));
            }
            body.extend([Insn::stmt(RET_A, 0), Insn::stmt(RET_K, 0x0005_0001 + case), Insn::stmt(RET_A, 0)]);
            // Entries: the ladder's start, a later round, the middle of
            // the first round's check and its comparison.
            let mut entries = vec![0, 3, 5];
            if n > 1 {
                entries.push(7 * rng.below(n));
            }
            let (insns, head) = entered(&body, &entries);
            let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
            let laddered = matches!(interp.ops[head], Step::Ladder { .. });
            assert_eq!(laddered, n >= chain::ladder::MIN_ROUNDS, "{}", interp.chain_listing());
            ladders += usize::from(laddered);
            let mut los: Vec<u32> = vec![0, 2, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, u32::MAX];
            los.extend(keys.iter().flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)]));
            for e in 0..entries.len() as u32 {
                for hi in [0, 1, 0x8000_0000, u32::MAX - 1, u32::MAX] {
                    for &lo in &los {
                        let d = data(e, hi, lo);
                        let want = interp.trace_seccomp(&d, |_| {}).unwrap();
                        let got = interp.run_seccomp(&d).unwrap();
                        assert_eq!(got, want, "entry {e} hi={hi:#x} lo={lo:#x}\n{}", interp.chain_listing());
                    }
                }
            }
        }
        assert!(ladders > 200, "only {ladders} ladders");
    }

    #[test]
    fn chromiums_fcntl_rule_is_one_op() {
        let keys = [3u32, 1, 0x40a, 2, 6, 7, 5, 0, 0x406];
        let n = keys.len();
        let mut body = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            let left = 7 * (n - i - 1);
            body.extend(round(k, left as u8, if i + 1 == n { 1 } else { 0 }, (left + 2) as u8));
        }
        body.extend([Insn::stmt(RET_K, 0x7fff_0000), Insn::stmt(RET_K, 0x0003_0001), Insn::stmt(RET_K, 0)]);
        let (insns, head) = entered(&body, &[0]);
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let listing = interp.chain_listing();
        assert_eq!(interp.ops[head], Step::Ladder { hi: 28, lo: 24, ladder: 0 }, "{listing}");
        assert!(
            listing.contains("ladder #0 @2: 9 rounds, reject ret 0x0, miss ret 0x30001\n  == 0x3 -> ret 0x7fff0000\n"),
            "{listing}"
        );
        for (hi, lo, want) in [
            (0, 0x40a, 0x7fff_0000),
            (u32::MAX, 0x8000_0000, 0x0003_0001),
            (0, 0x8000_0000, 0x0003_0001),
            (u32::MAX, 7, 0),
            (1, 7, 0),
        ] {
            assert_eq!(interp.run_seccomp(&data(0, hi, lo)), Ok(want), "hi={hi:#x} lo={lo:#x}");
        }
    }
}
