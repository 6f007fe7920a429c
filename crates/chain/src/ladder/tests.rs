#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use super::*;
use crate::Compare;
use test_data::rng::Rng;

/// A toy program: loads of a word into `x`, compares of `x` with
/// absolute targets, `ja`, and anything else (which ends a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Insn {
    Ld(u8),
    /// The load of a compare's constant into a register (eBPF's `w2 = K`
    /// before a compare of a negative `K`): part of the compare after it.
    Mov,
    Cmp(Cond, u64, usize, usize),
    Ja(usize),
    Other,
}

#[derive(Debug)]
struct Prog(Vec<Insn>);

impl Code for Prog {
    fn compare(&self, pc: usize) -> Option<Compare> {
        let jump_pc = if self.0.get(pc) == Some(&Insn::Mov) { pc + 1 } else { pc };
        match *self.0.get(jump_pc)? {
            Insn::Cmp(cond, value, taken, fall) => Some(Compare { cond, value, jump_pc, taken, fall }),
            _ => None,
        }
    }
    /// Past `ja`s, with the instructions they jump over (as the trait
    /// says: not the `ja`s themselves).
    fn resolve(&self, mut pc: usize) -> (usize, u32) {
        let mut over = 0;
        while let Some(&Insn::Ja(to)) = self.0.get(pc) {
            over += (to - pc - 1) as u32;
            pc = to;
        }
        (pc, over)
    }
    fn reloads(&self, pc: usize, word: u8) -> bool {
        self.0.get(pc) == Some(&Insn::Ld(word))
    }
}

impl Prog {
    /// Every pc a run from `pc` visits, with `x` on arriving there, up to
    /// and including the instruction that ends it; `words[w]` is word `w`.
    fn path(&self, mut pc: usize, words: &[u32; 8]) -> Vec<(usize, u32)> {
        let mut x = 0;
        let mut out = Vec::new();
        loop {
            out.push((pc, x));
            match self.0.get(pc) {
                Some(&Insn::Ld(w)) => {
                    x = words[usize::from(w)];
                    pc += 1;
                }
                Some(&Insn::Cmp(cond, v, t, f)) => pc = if cond.eval(u64::from(x), v) { t } else { f },
                Some(&Insn::Ja(to)) => pc = to,
                Some(&Insn::Mov) => pc += 1,
                _ => return out,
            }
        }
    }

    /// Appends one round at the end (module docs) over words `hi` and
    /// `lo`, the targets absolute; returns its start.
    fn round(&mut self, hi: u8, lo: u8, key: u64, hit: usize, miss: usize, reject: usize) -> usize {
        let r = self.0.len();
        self.0.extend([
            Insn::Ld(hi),
            Insn::Cmp(Cond::Eq, 0, r + 5, r + 2),
            Insn::Cmp(Cond::Eq, 0xffff_ffff, r + 3, reject),
            Insn::Ld(lo),
            Insn::Cmp(Cond::Set, 0x8000_0000, r + 5, reject),
            Insn::Ld(lo),
            Insn::Cmp(Cond::Eq, key, hit, miss),
        ]);
        r
    }
}

/// Chromium's `fcntl` rule in miniature: `keys` rounds over words 7 and 6
/// from pc 0, each hit to `hit`, the last miss to `miss`, rejects to
/// `reject` (three `Other`s past the rounds, in that order).
fn ladder_prog(keys: &[u64]) -> (Prog, [usize; 3]) {
    let end = 7 * keys.len();
    let (hit, miss, reject) = (end, end + 1, end + 2);
    let mut p = Prog(Vec::new());
    for (i, &k) in keys.iter().enumerate() {
        let next = if i + 1 == keys.len() { miss } else { 7 * (i + 1) };
        p.round(7, 6, k, hit, next, reject);
    }
    p.0.extend([Insn::Other; 3]);
    (p, [hit, miss, reject])
}

/// The high and low words tried: around each key, and every kind of high
/// word.
fn inputs(keys: &[u32]) -> Vec<(u32, u32)> {
    let mut los: Vec<u32> = vec![0, 1, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, u32::MAX];
    for &k in keys {
        los.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]);
    }
    let his = [0, 1, 0x7fff_ffff, 0x8000_0000, u32::MAX - 1, u32::MAX];
    his.iter().flat_map(|&h| los.iter().map(move |&l| (h, l))).collect()
}

/// Every ladder of `prog` leaves where running it from its start leaves:
/// the pc, the value there, and the rounds entered on the way.
fn check(prog: &Prog, ladders: &[Ladder]) {
    // The interpreters' table of them answers alike (its outcomes: pcs).
    let table = Ladders::build(prog, prog.0.len(), Some);
    assert_eq!(table.all(), ladders);
    for (index, ladder) in ladders.iter().enumerate() {
        let keys: Vec<u32> = ladder.rounds.iter().map(|r| r.key).collect();
        let starts: Vec<usize> = ladder.rounds.iter().map(|r| r.start).collect();
        for (hi, lo) in inputs(&keys) {
            let mut words = [0u32; 8];
            (words[usize::from(ladder.hi)], words[usize::from(ladder.lo)]) = (hi, lo);
            let path = prog.path(ladder.start, &words);
            let leave = ladder.leave(hi, lo);
            let at = path.iter().position(|&(pc, _)| pc == leave.pc);
            let Some(at) = at else { panic!("hi={hi:#x} lo={lo:#x}: {leave:?} not on {path:?}\n{ladder:?}") };
            assert_eq!(path[at].1, leave.value, "hi={hi:#x} lo={lo:#x}: {leave:?}\n{ladder:?}");
            let entered = path[..at].iter().filter(|(pc, _)| starts.contains(pc)).count();
            assert_eq!(entered, leave.rounds, "hi={hi:#x} lo={lo:#x}: {leave:?}\n{ladder:?}");
            assert_eq!(at as u64, leave.executed, "hi={hi:#x} lo={lo:#x}: {leave:?}\n{ladder:?}");
            assert_eq!(leave.check, Check::of(hi, lo));
            assert_eq!(table.exit(index, hi, lo), Some((leave.pc, leave.value)));
            assert_eq!(table.leave(index, hi, lo), Some((leave.pc, leave)));
        }
    }
}

#[test]
fn chromiums_rounds_are_one_ladder_that_leaves_as_they_run() {
    let keys = [3u64, 1, 0x40a, 2, 6, 7, 5, 0, 0x406, 0x8000_0004];
    let (prog, [hit, miss, reject]) = ladder_prog(&keys);
    let ladders = find(&prog, prog.0.len());
    assert_eq!(ladders.len(), 1, "{ladders:?}");
    let l = &ladders[0];
    assert_eq!((l.start, l.hi, l.lo, l.reject, l.miss), (0, 7, 6, reject, miss));
    let want: Vec<(usize, u32, usize)> = keys.iter().enumerate().map(|(i, &k)| (7 * i, k as u32, hit)).collect();
    assert_eq!(l.rounds.iter().map(|r| (r.start, r.key, r.hit)).collect::<Vec<_>>(), want);
    check(&prog, &ladders);
    // The deepest input: a sign-extended value that is no key runs every
    // round.
    let deepest = Leave { pc: miss, value: 0x8000_0000, check: Check::Signed, rounds: 10, executed: 70 };
    assert_eq!(l.leave(u32::MAX, 0x8000_0000), deepest);
    let rejected = Leave { pc: reject, value: 5, check: Check::RejectHigh, rounds: 1, executed: 3 };
    assert_eq!(l.leave(5, 3), rejected);
}

#[test]
fn the_converted_shape_is_a_ladder_with_its_own_counts() {
    // What the eBPF converter makes of the rounds: `jeq #0xffffffff` whose
    // true side falls through as `w2 = K; if r0 != r2`, the `jset` as a
    // jump and a `ja` to its false side, negative keys loaded first.
    let keys = [3u64, 0x8000_0001, 7, 0xffff_fff0];
    let mut p = Prog(Vec::new());
    let (mut starts, mut fix) = (Vec::new(), Vec::new());
    for &k in &keys {
        let r = p.0.len();
        starts.push(r);
        p.0.extend([
            Insn::Ld(7),
            Insn::Cmp(Cond::Eq, 0, r + 8, r + 2),
            Insn::Mov,
            Insn::Cmp(Cond::Ne, 0xffff_ffff, 0, r + 4),
            Insn::Ld(6),
            Insn::Mov,
            Insn::Cmp(Cond::Set, 0x8000_0000, r + 8, r + 7),
            Insn::Ja(0),
            Insn::Ld(6),
        ]);
        if k > 0x7fff_ffff {
            p.0.push(Insn::Mov);
        }
        fix.push(p.0.len());
        p.0.push(Insn::Cmp(Cond::Eq, k, 0, 0));
    }
    let end = p.0.len();
    let (hit, miss, reject) = (end, end + 1, end + 2);
    p.0.extend([Insn::Other; 3]);
    for (i, &r) in starts.iter().enumerate() {
        p.0[r + 3] = Insn::Cmp(Cond::Ne, 0xffff_ffff, reject, r + 4);
        p.0[r + 7] = Insn::Ja(reject);
        let next = starts.get(i + 1).copied().unwrap_or(miss);
        p.0[fix[i]] = Insn::Cmp(Cond::Eq, keys[i], hit, next);
    }
    let ladders = find(&p, p.0.len());
    assert_eq!(ladders.len(), 1, "{ladders:?}");
    assert_eq!((ladders[0].reject, ladders[0].miss, ladders[0].rounds.len()), (reject, miss, 4));
    let first = ladders[0].rounds[0].costs;
    let want = Costs { zero: 4, signed: 9, reject_high: 4, reject_sign: 8, hit: 0, miss: 0 };
    assert_eq!(first, want);
    check(&p, &ladders);
}

#[test]
fn a_round_of_another_shape_ends_the_ladder() {
    // Each mutation of the third round's check: the ladder is the first
    // two rounds (the third starts a ladder of its own with the rest
    // when it is still a round).
    type Mutation = fn(&mut Vec<Insn>, usize);
    let mutations: [(&str, Mutation); 7] = [
        ("another high word", |p, r| p[r] = Insn::Ld(5)),
        // `!=` stands for `==` with its sides swapped, for no other test.
        ("a sign test of `!=`", |p, r| p[r + 4] = Insn::Cmp(Cond::Ne, 0x8000_0000, 23, r + 5)),
        ("another low word", |p, r| p[r + 5] = Insn::Ld(4)),
        ("another sign bit", |p, r| p[r + 4] = Insn::Cmp(Cond::Set, 0x4000_0000, r + 5, 23)),
        ("another reject", |p, r| p[r + 2] = Insn::Cmp(Cond::Eq, 0xffff_ffff, r + 3, 22)),
        ("a range compare", |p, r| p[r + 6] = Insn::Cmp(Cond::Ge, 9, 21, r + 7)),
        ("the sign check passing elsewhere", |p, r| p[r + 4] = Insn::Cmp(Cond::Set, 0x8000_0000, r + 6, 23)),
    ];
    for (what, mutate) in mutations {
        let (mut prog, _) = ladder_prog(&[10, 11, 12]);
        mutate(&mut prog.0, 14);
        let ladders = find(&prog, prog.0.len());
        assert_eq!(ladders.len(), 1, "{what}: {ladders:?}");
        assert_eq!(ladders[0].rounds.len(), 2, "{what}: {ladders:?}");
        assert_eq!(ladders[0].miss, 14, "{what}");
        check(&prog, &ladders);
    }
    // A single round is no ladder.
    let (prog, _) = ladder_prog(&[10]);
    assert!(find(&prog, prog.0.len()).is_empty());
}

#[test]
fn random_ladders_leave_as_they_run() {
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let mut ladders_seen = 0;
    for case in 0..500 {
        // Rounds over two of three words, each hit and miss anywhere
        // forward (another round, the end), rejects to one of two pcs,
        // `ja` trampolines on some misses; some rounds broken.
        let rounds = 1 + rng.below(8);
        let mut prog = Prog(Vec::new());
        let mut starts = Vec::new();
        for i in 0..rounds {
            let hi = if rng.below(6) == 0 { 2 } else { 7 };
            let key = [0, 1, 3, 0x8000_0000, u64::from(rng.next_u64() as u32)][rng.below(5)];
            let start = prog.round(hi, 6, key, 0, 0, 0);
            starts.push(start);
            if rng.below(8) == 0 && i + 1 < rounds {
                prog.0.push(Insn::Ja(0));
            }
            if rng.below(10) == 0 {
                prog.0[start + 4] = Insn::Cmp(Cond::Set, 0x8000_0000, start + 5, 0);
            }
        }
        let end = prog.0.len();
        prog.0.extend([Insn::Other; 4]);
        // Fix the targets: forward only.
        for (i, &s) in starts.iter().enumerate() {
            let next = starts.get(i + 1).copied().unwrap_or(end);
            let pick = |rng: &mut Rng| if rng.below(3) == 0 { end + rng.below(4) } else { next + rng.below(2) * 5 };
            let (hit, reject) = (pick(&mut rng), end + 2 + rng.below(2));
            let miss = if rng.below(5) == 0 { end + rng.below(2) } else { next };
            let miss = if prog.0.get(s + 7) == Some(&Insn::Ja(0)) {
                prog.0[s + 7] = Insn::Ja(miss);
                s + 7
            } else {
                miss
            };
            let (eq0, ones, set, cmp) = (prog.0[s + 1], prog.0[s + 2], prog.0[s + 4], prog.0[s + 6]);
            let Insn::Cmp(_, _, pass, _) = eq0 else { unreachable!() };
            let Insn::Cmp(_, _, to_set, _) = ones else { unreachable!() };
            let Insn::Cmp(c, v, set_pass, _) = set else { unreachable!() };
            let Insn::Cmp(_, key, _, _) = cmp else { unreachable!() };
            prog.0[s + 2] = Insn::Cmp(Cond::Eq, 0xffff_ffff, to_set, reject);
            prog.0[s + 4] = Insn::Cmp(c, v, set_pass, if case % 7 == 0 { end } else { reject });
            prog.0[s + 6] = Insn::Cmp(Cond::Eq, key, hit.max(s + 7), miss.max(s + 7));
            let _ = pass;
        }
        let ladders = find(&prog, prog.0.len());
        ladders_seen += ladders.len();
        for l in &ladders {
            assert!(l.rounds.len() >= MIN_ROUNDS);
            assert!(l.rounds.windows(2).all(|w| w[0].start < w[1].start), "{l:?}");
        }
        check(&prog, &ladders);
    }
    assert!(ladders_seen > 150, "only {ladders_seen} ladders");
}

#[test]
fn counts_take_every_ja_on_the_way() {
    // Two rounds with a `ja` trampoline on every edge of the first (two on
    // some): each way through the round counts the ones it runs.
    let mut p = Prog(vec![Insn::Other; 40]);
    let (hit, miss, reject) = (37, 38, 39);
    let r = 0;
    p.0[r] = Insn::Ld(7);
    p.0[r + 1] = Insn::Cmp(Cond::Eq, 0, r + 2, r + 3);
    p.0[r + 2] = Insn::Ja(r + 14); // zero -> P
    p.0[r + 3] = Insn::Ja(r + 4); // fall -> the second compare
    p.0[r + 4] = Insn::Cmp(Cond::Eq, 0xffff_ffff, r + 5, r + 12);
    p.0[r + 5] = Insn::Ja(r + 7); // -> the low word's load
    p.0[r + 7] = Insn::Ld(6);
    p.0[r + 8] = Insn::Cmp(Cond::Set, 0x8000_0000, r + 9, r + 10);
    p.0[r + 9] = Insn::Ja(r + 14); // sign -> P
    p.0[r + 10] = Insn::Ja(r + 11); // no sign -> reject, through two
    p.0[r + 11] = Insn::Ja(reject);
    p.0[r + 12] = Insn::Ja(r + 13); // high -> reject, through two
    p.0[r + 13] = Insn::Ja(reject);
    p.0[r + 14] = Insn::Ld(6);
    p.0[r + 15] = Insn::Cmp(Cond::Eq, 5, r + 16, r + 17);
    p.0[r + 16] = Insn::Ja(hit);
    p.0[r + 17] = Insn::Ja(20); // miss -> the next round
    p.round(7, 6, 9, hit, miss, reject); // at 40: moved below
    let second: Vec<Insn> = p.0.drain(40..).collect();
    for (i, insn) in second.into_iter().enumerate() {
        // Shift the second round's own targets from 40 to 20.
        p.0[20 + i] = match insn {
            Insn::Cmp(c, v, t, f) => {
                Insn::Cmp(c, v, if t >= 40 { t - 20 } else { t }, if f >= 40 { f - 20 } else { f })
            }
            other => other,
        };
    }
    let ladders = find(&p, p.0.len());
    assert_eq!(ladders.len(), 1, "{ladders:?}");
    let want = Costs { zero: 5, signed: 10, reject_high: 6, reject_sign: 9, hit: 1, miss: 1 };
    assert_eq!(ladders[0].rounds[0].costs, want);
    check(&p, &ladders);
}

#[test]
fn a_ladder_ends_at_a_backward_miss_and_at_its_size_bound() {
    // A round that misses to its own start (no program's jumps go back,
    // but the walk must still end): one round, no ladder.
    let (mut p, _) = ladder_prog(&[10, 11]);
    p.0[13] = Insn::Cmp(Cond::Eq, 11, 14, 7);
    let ladders = find(&p, p.0.len());
    assert_eq!(ladders.len(), 1);
    assert_eq!(ladders[0].rounds.len(), 2);
    let mut p = Prog(Vec::new());
    p.round(7, 6, 10, 8, 0, 9);
    p.0.extend([Insn::Other; 3]);
    assert!(find(&p, p.0.len()).is_empty());
    // Past MAX_ROUNDS rounds the ladder ends; the rest has no start.
    let keys: Vec<u64> = (0..MAX_ROUNDS as u64 + 3).collect();
    let (p, _) = ladder_prog(&keys);
    let ladders = find(&p, p.0.len());
    assert_eq!(ladders.len(), 1);
    assert_eq!(ladders[0].rounds.len(), MAX_ROUNDS);
    assert_eq!(ladders[0].miss, 7 * MAX_ROUNDS);
}

#[test]
fn the_table_lists_and_rewrites_its_outcomes() {
    let (prog, [hit, miss, reject]) = ladder_prog(&[3, 0x40a]);
    let mut table = Ladders::build(&prog, prog.0.len(), Some);
    assert!(!table.is_empty());
    assert!(Ladders::<usize>::default().is_empty());
    let want =
        format!("ladder #0 @0: 2 rounds, reject {reject}, miss {miss}\n  == 0x3 -> {hit}\n  == 0x40a -> {hit}\n");
    assert_eq!(table.listing(|t| t.to_string()), want);
    for t in table.outcomes_mut() {
        *t += 100;
    }
    assert_eq!(table.exit(0, 0, 0x40a), Some((hit + 100, 0x40a)));
    assert_eq!(table.exit(0, 0, 7), Some((miss + 100, 7)));
    assert_eq!(table.exit(0, 9, 7), Some((reject + 100, 9)));
    assert_eq!(table.exit(1, 0, 7), None);
}

/// `starts` rounds that each miss to the first of a shared tail of `tail`
/// rounds (ending in a miss), then a hit, a miss and a reject target.
fn shared_tail(starts: usize, tail: usize) -> (Prog, usize) {
    let end = 7 * (starts + tail);
    let (hit, miss, reject) = (end, end + 1, end + 2);
    let mut p = Prog(Vec::new());
    for i in 0..starts + tail {
        let next = if i < starts {
            7 * starts
        } else if i + 1 == starts + tail {
            miss
        } else {
            7 * (i + 1)
        };
        p.round(7, 6, i as u64, hit, next, reject);
    }
    p.0.extend([Insn::Other; 3]);
    (p, miss)
}

#[test]
fn ladders_that_share_a_tail_stay_within_the_total_bound() {
    // 300 rounds that each miss to the first of a tail of 300: 300 ladders
    // of 301 rounds would hold 90,300; the bound keeps whole ladders up to
    // MAX_TOTAL_ROUNDS, and the kept ones leave as they run.
    let tail = 300;
    let (p, miss) = shared_tail(300, tail);
    let ladders = find(&p, p.0.len());
    assert_eq!(ladders.len(), MAX_TOTAL_ROUNDS / (tail + 1));
    assert!(ladders.iter().all(|l| l.rounds.len() == tail + 1));
    assert!(ladders.iter().map(|l| l.rounds.len()).sum::<usize>() <= MAX_TOTAL_ROUNDS);
    // The deepest input of a kept ladder: every round of it.
    let mut words = [0u32; 8];
    (words[7], words[6]) = (u32::MAX, 0x8000_0000);
    for l in [&ladders[0], &ladders[ladders.len() - 1]] {
        let path = p.path(l.start, &words);
        let leave = l.leave(u32::MAX, 0x8000_0000);
        assert_eq!(path.last().map(|&(pc, _)| pc), Some(miss));
        assert_eq!((leave.pc, leave.executed), (miss, path.len() as u64 - 1));
    }
    // Ladders of 256 rounds fill the bound exactly: 128 are kept, all.
    let (p, _) = shared_tail(130, 255);
    let ladders = find(&p, p.0.len());
    assert_eq!(ladders.len(), MAX_TOTAL_ROUNDS / 256);
    assert_eq!(ladders.iter().map(|l| l.rounds.len()).sum::<usize>(), MAX_TOTAL_ROUNDS);
}

/// A ladder past one [`BLOCK`] of keys whose rounds each hit to a pc of
/// their own, with repeated keys: the table's blocked scan finds the
/// first equal round in every block, the padding never answers (keys
/// around every key, the last key's included, and 0, which is no key).
#[test]
fn the_table_finds_the_first_equal_round_past_the_first_block() {
    for n in [2, 7, 8, 9, 16, 17, 20] {
        // Keys 10, 11, ... with the fifth and the last repeating earlier
        // ones (the last repeats the first of the second block).
        let mut keys: Vec<u64> = (0..n as u64).map(|i| 10 + i).collect();
        if n > 5 {
            keys[5] = keys[1];
        }
        if n > 9 {
            keys[n - 1] = keys[8];
        }
        let end = 7 * n;
        let (miss, reject) = (end + n, end + n + 1);
        let mut prog = Prog(Vec::new());
        for (i, &k) in keys.iter().enumerate() {
            let next = if i + 1 == n { miss } else { 7 * (i + 1) };
            prog.round(7, 6, k, end + i, next, reject);
        }
        prog.0.extend(vec![Insn::Other; n + 2]);
        let ladders = find(&prog, prog.0.len());
        assert_eq!(ladders.len(), 1, "{n} rounds: {ladders:?}");
        check(&prog, &ladders);
        let table = Ladders::build(&prog, prog.0.len(), Some);
        for (i, &k) in keys.iter().enumerate() {
            let first = keys.iter().position(|&f| f == k).unwrap();
            assert_eq!(table.exit(0, 0, k as u32), Some((end + first, k as u32)), "{n} rounds, key {i}");
        }
        assert_eq!(table.exit(0, 0, 0), Some((miss, 0)), "{n} rounds");
    }
}
