#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::*;
use crate::Cond;
use test_data::rng::Rng;

/// A toy instruction set: the value `x` and two context words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Insn {
    Ld(u8),
    Cmp(Cond, u32, usize, usize),
    Ja(usize),
    /// `x = 7`.
    Set,
    /// `x += 1`.
    Change,
    /// Changes nothing the facts see (a store).
    Nop,
    /// A branch on something the facts do not see: `x` odd.
    Branch(usize),
    RetX,
    RetK(u32),
}

struct Prog(Vec<Insn>);

impl Code for Prog {
    fn compare(&self, pc: usize) -> Option<Compare> {
        match *self.0.get(pc)? {
            Insn::Cmp(cond, v, taken, fall) => Some(Compare { cond, value: u64::from(v), jump_pc: pc, taken, fall }),
            _ => None,
        }
    }
    fn resolve(&self, pc: usize) -> (usize, u32) {
        (pc, 0)
    }
    fn reloads(&self, pc: usize, word: u8) -> bool {
        self.0.get(pc) == Some(&Insn::Ld(word))
    }
}

impl Flow for Prog {
    fn effect(&self, pc: usize) -> Effect {
        match self.0.get(pc) {
            Some(&Insn::Ld(w)) => Effect::Load(w),
            Some(Insn::Set) => Effect::Set,
            Some(Insn::Change) => Effect::Change,
            Some(Insn::Nop) => Effect::Keep,
            Some(&Insn::Ja(to)) => Effect::Jump(to),
            Some(&Insn::Branch(to)) => Effect::Branch(pc + 1, to),
            Some(Insn::RetK(_)) => Effect::End { reads: false },
            Some(Insn::Cmp(..) | Insn::RetX) | None => Effect::End { reads: true },
        }
    }
}

impl Prog {
    /// A run from pc 0: what it returns and how many instructions it
    /// executes. With `threads`, every jump (and every start) goes where
    /// `thread` says, adding the instructions that way executes.
    fn run(&self, words: [u32; 2], threads: Option<&[(usize, u32)]>) -> (u32, u32) {
        let (mut pc, mut x, mut executed) = (0usize, 0u32, 0u32);
        let go = |to: usize, executed: &mut u32| match threads {
            Some(t) => {
                let (landing, over) = t[to];
                *executed += (landing - to) as u32 - over;
                landing
            }
            None => to,
        };
        pc = go(pc, &mut executed);
        loop {
            executed += 1;
            let (next, jumped) = match self.0[pc] {
                Insn::Ld(w) => {
                    x = words[usize::from(w)];
                    (pc + 1, false)
                }
                Insn::Cmp(cond, v, taken, fall) => {
                    let to = if cond.eval(u64::from(x), u64::from(v)) { taken } else { fall };
                    (to, true)
                }
                Insn::Ja(to) => (to, true),
                Insn::Set => {
                    x = 7;
                    (pc + 1, false)
                }
                Insn::Change => {
                    x = x.wrapping_add(1);
                    (pc + 1, false)
                }
                Insn::Nop => (pc + 1, false),
                Insn::Branch(to) => (if x % 2 == 1 { to } else { pc + 1 }, true),
                Insn::RetX => return (x, executed),
                Insn::RetK(k) => return (k, executed),
            };
            pc = if jumped { go(next, &mut executed) } else { next };
        }
    }
}

/// OpenSSH's rounds: the reload after a missed argument check goes to the
/// next round's argument load; the last round's, past every later rule, to
/// the default `ret`.
#[test]
fn reloads_of_a_known_word_are_passed_with_the_compares_they_settle() {
    use Insn::*;
    let prog = Prog(vec![
        Ld(0),                    // 0
        Cmp(Cond::Eq, 5, 2, 6),   // 1
        Ld(1),                    // 2
        Cmp(Cond::Eq, 1, 4, 5),   // 3
        RetK(1),                  // 4
        Ld(0),                    // 5: word 0 is 5
        Cmp(Cond::Ne, 5, 11, 7),  // 6: from 1 (word 0 not 5) and 5
        Ld(1),                    // 7
        Cmp(Cond::Eq, 2, 9, 10),  // 8
        RetK(2),                  // 9
        Ld(0),                    // 10: word 0 is 5
        Cmp(Cond::Eq, 7, 13, 12), // 11
        Cmp(Cond::Gt, 3, 14, 13), // 12
        RetK(3),                  // 13
        RetX,                     // 14
    ]);
    let t = thread(&prog, prog.0.len());
    assert_eq!(t[5], (7, 0), "the reload and its compare");
    assert_eq!(t[10], (10, 0), "`ret x` (word 0 > 3) reads the reload");
    assert_eq!((t[6], t[11]), ((6, 0), (11, 0)), "word 0 unknown where the rounds join");
    let prog = Prog([&prog.0[..14], &[RetK(4)]].concat());
    assert_eq!(thread(&prog, 15)[10], (14, 1), "two compares settled, the second jumping over one");
}

/// Joins keep a word both paths know with the same value (the reload of
/// word 1 after a branch is passed), and drop one that only one path
/// knows, keeping the others; `ja`s are passed with what they jump over.
#[test]
fn joins_keep_what_every_path_knows() {
    use Insn::*;
    let both_know = Prog(vec![
        Ld(1),                    // 0
        Cmp(Cond::Eq, 2, 2, 12),  // 1: word 1 is 2
        Ld(0),                    // 2
        Cmp(Cond::Eq, 3, 4, 12),  // 3: word 0 is 3
        Branch(7),                // 4: to 5 or 7
        Set,                      // 5
        Ja(8),                    // 6
        Change,                   // 7
        Ld(1),                    // 8: both paths know both words
        Cmp(Cond::Eq, 2, 10, 12), // 9
        RetK(1),                  // 10
        RetK(2),                  // 11
        RetK(0),                  // 12
    ]);
    let t = thread(&both_know, both_know.0.len());
    assert_eq!(t[8], (10, 0), "word 1, known on both paths");
    assert_eq!(t[6], (10, 1), "the `ja` and the reload it lands on");
    let one_knows = Prog(vec![
        Ld(0),                    // 0
        Cmp(Cond::Eq, 3, 2, 12),  // 1: word 0 is 3
        Ld(1),                    // 2
        Branch(6),                // 3: to 4 or 6
        Cmp(Cond::Eq, 2, 5, 12),  // 4: word 1 is 2, on this path only
        Ja(7),                    // 5
        Nop,                      // 6
        Ld(1),                    // 7: word 1 unknown, word 0 known
        Cmp(Cond::Eq, 2, 9, 10),  // 8
        RetK(1),                  // 9
        Ld(0),                    // 10
        Cmp(Cond::Eq, 3, 13, 12), // 11
        RetK(0),                  // 12
        RetK(5),                  // 13
    ]);
    let t = thread(&one_knows, one_knows.0.len());
    assert_eq!(t[7], (7, 0), "word 1, known on one path only");
    assert_eq!(t[10], (13, 1), "word 0, known on both");
    assert_eq!(t[5], (7, 1), "a `ja` to a reload that stays");
}

/// A reload followed by `n` compares that its value settles (each also
/// reached with the word unknown, so none is threaded on its own): the
/// reload is threaded to the end when `n` is at most [`SETTLE_STEPS`].
#[test]
fn a_reload_settles_at_most_settle_steps_compares() {
    use Insn::*;
    let prog = |n: usize| {
        let end = 3 + n;
        let mut p = vec![Ld(0), Cmp(Cond::Eq, 5, 2, 3), Ld(0)];
        p.extend((0..n).map(|i| Cmp(Cond::Eq, 100 + i as u32, end + 1, 4 + i)));
        p.extend([RetK(0), RetK(1)]);
        Prog(p)
    };
    for n in [1, SETTLE_STEPS - 1, SETTLE_STEPS] {
        let p = prog(n);
        assert_eq!(thread(&p, p.0.len())[2], (3 + n, 0), "{n} compares");
    }
    let p = prog(SETTLE_STEPS + 1);
    assert_eq!(thread(&p, p.0.len())[2], (2, 0), "past the bound");
    // 58 of them one after another (4060 instructions), each copy's jumps
    // moved to its place: each reload stops at the bound.
    let one = prog(SETTLE_STEPS + 1).0;
    let shift = |insn: Insn, by: usize| match insn {
        Cmp(cond, v, taken, fall) => Cmp(cond, v, taken + by, fall + by),
        other => other,
    };
    let len = one.len();
    let p = Prog((0..58).flat_map(|k| one.iter().map(move |&i| shift(i, k * len))).collect());
    let t = thread(&p, p.0.len());
    assert!((0..58).all(|k| t[k * len + 2] == (k * len + 2, 0)));
}

/// A random program over two words and a few constants (jumps forward),
/// mostly loads each followed by a compare, so that words are often known
/// where reloaded.
fn random_program(rng: &mut Rng) -> Prog {
    let mut p = Vec::new();
    for _ in 0..1 + rng.below(16) {
        let cond = if rng.chance(60) { *rng.pick(&[Cond::Eq, Cond::Ne]) } else { *rng.pick(&Cond::ALL) };
        // Targets as offsets from the next pc, made absolute below.
        let cmp = Insn::Cmp(cond, rng.below(4) as u32, rng.below(6), rng.below(6));
        match rng.below(10) {
            0..=4 => p.extend([Insn::Ld(rng.below(2) as u8), cmp]),
            5 => p.push(cmp),
            6 => p.push(Insn::Ja(rng.below(6))),
            7 => p.push(*rng.pick(&[Insn::Set, Insn::Change, Insn::Nop])),
            8 => p.push(Insn::Branch(rng.below(6))),
            _ if rng.chance(50) => p.push(Insn::RetX),
            _ => p.push(Insn::RetK(rng.below(4) as u32)),
        }
    }
    p.push(Insn::RetX);
    let last = p.len() - 1;
    for (pc, insn) in p.iter_mut().enumerate() {
        let to = |off: usize| (pc + 1 + off).min(last);
        *insn = match *insn {
            Insn::Cmp(cond, v, taken, fall) => Insn::Cmp(cond, v, to(taken), to(fall)),
            Insn::Ja(off) => Insn::Ja(to(off)),
            Insn::Branch(off) => Insn::Branch(to(off)),
            other => other,
        };
    }
    Prog(p)
}

/// Runs that take every threaded jump return what the plain runs return,
/// and execute as many instructions (`thread`'s counts), on every input of
/// 5000 random programs; a good share of them threads something.
#[test]
fn threaded_runs_compute_and_count_what_plain_runs_do() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut threading = 0;
    for _ in 0..5000 {
        let prog = random_program(&mut rng);
        let t = thread(&prog, prog.0.len());
        threading +=
            usize::from(t.iter().enumerate().any(|(pc, &(to, _))| to != pc && !matches!(prog.0[pc], Insn::Ja(_))));
        for words in (0..16).map(|i| [i % 4, i / 4]) {
            assert_eq!(prog.run(words, Some(&t)), prog.run(words, None), "{words:?} {:?}", prog.0);
        }
    }
    assert!(threading > 1000, "{threading} of 5000 programs thread past a compare or load");
}
