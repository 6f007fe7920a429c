//! Deciding one class of (arch, nr): the pieces of both sides, cut further
//! on the argument words they compare with constants before anything is
//! bit-blasted.
//!
//! Once arch and nr are fixed, what is left of each filter (its piece) is
//! a constant or a residual program, usually the syscall's argument
//! checks. Where every residual that reads a word (an argument half or an
//! instruction pointer half) only compares `word & mask` with constants,
//! one mask for all of them ([`seccomp::analysis::WordCuts`], the cut the
//! fast engine's trees make, `seccomp::fast::tree`), the union of their
//! run starts cuts the word's values into runs on which every piece
//! behaves alike, exactly as the (arch, nr) classes are cut. Each run is
//! decided by one value of it: every piece specialised on the word
//! ([`seccomp::fast::Partial::specialize_word`]) and decided in turn, a
//! word at a time. Identical problems are decided once (the memo), so the
//! runs of a word whose residuals are the same program cost one decision:
//! libseccomp's 100 rules `A0 == i && A1 != 0` leave, for each `i`, the
//! same check of `A1`.
//!
//! What no run cut can say (a word in arithmetic, two words compared, a
//! word with several masks) goes to the solver, the words fixed so far as
//! constants: an allow-list of a thousand `ioctl` requests against its
//! `jge` tree was a SAT problem the default budget could not decide, and is
//! two thousand specialisations here.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use cbpf::{Op, Program};
use seccomp::analysis::{Analyzer, Field, WordCuts};
use seccomp::arch::AUDIT_ARCH_X86_64;
use seccomp::fast::{Partial, PartialResult};

use crate::{differs, solve, EquivError, Spend};

/// The `struct seccomp_data` words fixed in a problem, by word index (byte
/// offset / 4: `nr` 0, `arch` 1, the instruction pointer 2 and 3, the
/// arguments from 4).
pub(crate) type Fixed = [Option<u32>; 16];

/// One filter's part of a class: a constant or a program (validated in
/// seccomp mode). Two programs are the same piece when they run the same
/// instructions. Shared: a piece a cut does not touch is the same program
/// in every run's problem and in the memo's keys.
#[derive(Debug, Clone)]
pub(crate) enum Piece {
    Const(u32),
    Prog(Rc<Program>),
}

impl Piece {
    /// Whether the program loads the word at `offset`.
    pub(crate) fn reads(&self, offset: u32) -> bool {
        match self {
            Piece::Const(_) => false,
            Piece::Prog(p) => p.insns().iter().any(|i| matches!(i.op(), Some(Op::LdxAbsSeccomp { k }) if k == offset)),
        }
    }
}

impl PartialEq for Piece {
    fn eq(&self, other: &Piece) -> bool {
        match (self, other) {
            (Piece::Const(a), Piece::Const(b)) => a == b,
            (Piece::Prog(a), Piece::Prog(b)) => a.insns() == b.insns(),
            _ => false,
        }
    }
}

impl Eq for Piece {}

impl Hash for Piece {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Piece::Const(v) => (0u8, v).hash(state),
            Piece::Prog(p) => (1u8, p.insns()).hash(state),
        }
    }
}

/// A problem: the pieces, and the fixed words a piece reads (a word no
/// piece reads cannot change the answer, so it is left out of the key).
type ProblemKey = (Vec<Piece>, Fixed);

/// Decides the classes of one check: the sides' pieces, their memo.
pub(crate) struct Decider {
    /// Pieces of the left side (the first `n_left` of every problem).
    pub(crate) n_left: usize,
    /// The result bits compared.
    pub(crate) mask: u32,
    /// Identical problems are decided once: `None` = equal, else an input
    /// that tells them apart (fixed words included).
    memo: HashMap<ProblemKey, Option<[u32; 16]>>,
}

impl Decider {
    pub(crate) fn new(n_left: usize, mask: u32) -> Decider {
        Decider { n_left, mask, memo: HashMap::new() }
    }

    /// Whether `pieces` give the same compared bits for every input with
    /// the words of `fixed`: `None` when they do, else an input (with
    /// those words) on which they differ. `runs` is how many runs the
    /// words cut so far multiply to.
    pub(crate) fn decide(
        &mut self,
        pieces: Vec<Piece>,
        fixed: Fixed,
        runs: u64,
        spend: &mut Spend<'_>,
    ) -> Result<Option<[u32; 16]>, EquivError> {
        let (lp, rp) = pieces.split_at(self.n_left);
        if lp == rp {
            return Ok(None);
        }
        if let (Some(l), Some(r)) = (constants(lp), constants(rp)) {
            return Ok(differs(l, r, self.mask).then(|| with_fixed([0; 16], &fixed)));
        }
        let mut key_fixed = fixed;
        for (w, slot) in key_fixed.iter_mut().enumerate() {
            if !pieces.iter().any(|p| p.reads(4 * w as u32)) {
                *slot = None;
            }
        }
        let key = (pieces, key_fixed);
        if let Some(known) = self.memo.get(&key) {
            return Ok(known.map(|words| with_fixed(words, &fixed)));
        }
        let by_runs = match cut(&key.0, &fixed, runs, spend)? {
            Some(cut) => self.decide_runs(&key.0, fixed, &cut, runs, spend)?,
            None => Err(GaveUp),
        };
        let answer = match by_runs {
            Ok(answer) => answer,
            Err(GaveUp) => solve(&key.0, self.n_left, &fixed, self.mask, spend)?.map(|words| with_fixed(words, &fixed)),
        };
        self.memo.insert(key, answer);
        Ok(answer)
    }

    /// Decides `pieces` on each of the cut's values of its word (one per
    /// run): the first input that tells them apart, if any, or
    /// [`GaveUp`] once the steps pass the cut's ceiling (or an enclosing
    /// cut's: the lower one holds inside).
    fn decide_runs(
        &mut self,
        pieces: &[Piece],
        fixed: Fixed,
        cut: &Cut,
        runs: u64,
        spend: &mut Spend<'_>,
    ) -> Result<Result<Option<[u32; 16]>, GaveUp>, EquivError> {
        let enclosing = spend.ceiling;
        spend.ceiling = enclosing.min(cut.ceiling);
        let answer = self.decide_values(pieces, fixed, cut.word, &cut.values, runs, spend);
        spend.ceiling = enclosing;
        answer
    }

    /// [`Decider::decide_runs`] within the ceiling set.
    fn decide_values(
        &mut self,
        pieces: &[Piece],
        fixed: Fixed,
        word: usize,
        values: &[u32],
        runs: u64,
        spend: &mut Spend<'_>,
    ) -> Result<Result<Option<[u32; 16]>, GaveUp>, EquivError> {
        let offset = 4 * word as u32;
        // A piece equal to an earlier one (a filter stacked on both sides)
        // is specialised once per value: `Err(i)` takes piece `i`'s.
        let mut partials: Vec<Result<Option<Partial>, usize>> = Vec::with_capacity(pieces.len());
        for (i, piece) in pieces.iter().enumerate() {
            if let Some(first) = pieces.iter().take(i).position(|p| p == piece) {
                partials.push(Err(first));
                continue;
            }
            partials.push(Ok(match piece {
                Piece::Prog(p) if piece.reads(offset) => {
                    spend.steps(p.len() as u64)?;
                    Partial::new(p).ok()
                }
                _ => None,
            }));
        }
        let runs = runs.saturating_mul(values.len() as u64);
        for &value in values {
            if spend.stats.steps > spend.ceiling {
                return Ok(Err(GaveUp));
            }
            spend.stats.word_runs += 1;
            let mut sub: Vec<Piece> = Vec::with_capacity(pieces.len());
            for (piece, partial) in pieces.iter().zip(partials.iter_mut()) {
                let specialised = match partial {
                    Err(first) => sub.get(*first).cloned().unwrap_or_else(|| piece.clone()),
                    Ok(None) => piece.clone(),
                    Ok(Some(partial)) => {
                        let s = match partial.specialize_word(offset, value) {
                            PartialResult::Constant(v) => Piece::Const(v),
                            PartialResult::Residual(r) => Piece::Prog(Rc::new(r)),
                            // Exact as it is: the word is fixed in `fixed`.
                            PartialResult::Whole => piece.clone(),
                        };
                        spend.steps(partial.last_work() as u64 + 1)?;
                        s
                    }
                };
                sub.push(specialised);
            }
            let mut sub_fixed = fixed;
            if let Some(slot) = sub_fixed.get_mut(word) {
                *slot = Some(value);
            }
            if let Some(words) = self.decide(sub, sub_fixed, runs, spend)? {
                return Ok(Ok(Some(words)));
            }
        }
        Ok(Ok(None))
    }
}

/// `words` with the fixed ones set.
fn with_fixed(mut words: [u32; 16], fixed: &Fixed) -> [u32; 16] {
    for (w, f) in words.iter_mut().zip(fixed) {
        if let Some(v) = *f {
            *w = v;
        }
    }
    words
}

/// A side's combined constant, when every piece is one.
pub(crate) fn constants(pieces: &[Piece]) -> Option<u32> {
    let values: Option<Vec<u32>> = pieces
        .iter()
        .map(|p| match p {
            Piece::Const(v) => Some(*v),
            Piece::Prog(_) => None,
        })
        .collect();
    match values?.as_slice() {
        [one] => Some(*one),
        many => Some(seccomp::stack::combine(many.iter().copied())),
    }
}

/// A cut [`Decider::decide_runs`] makes: word `word` (index), one value of
/// each of its runs, and the step count past which it gives up and leaves
/// the problem to the solver (`u64::MAX`: never).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    word: usize,
    values: Vec<u32>,
    ceiling: u64,
}

/// A cut that passed its ceiling: the problem goes to the solver.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct GaveUp;

/// Values a cut past the plain bound specialises first to price the rest
/// ([`price`]), spread evenly over its runs.
const SAMPLED_VALUES: usize = 8;

/// The word to cut `pieces` on next, with one value of each of its runs:
/// of the words not yet fixed (never `nr` or `arch`: the class fixes or
/// leaves them) that some piece reads and every piece reading it compares
/// only as `word & mask` with constants, one mask for all, the one with
/// the fewest runs, if they fit [`crate::Limits::max_word_runs`] with the
/// `runs` cut so far and their specialisations half the steps left.
/// Each scan costs the steps of the programs scanned.
///
/// A specialisation visits at most its program, so runs times the
/// distinct programs' lengths bound a cut's work (the plain bound, no
/// ceiling). Where no word fits it, the word with the fewest runs is priced
/// by specialising a few of its values ([`price`]): far less than the
/// bound where the runs are settled by the specialiser's binary search
/// over a `jeq` run (libseccomp's allow-list of 2,000 `ioctl` requests: a
/// few instructions a value against its 2,000). A priced cut gives up at
/// half the steps left, so the solver keeps the other half however the
/// sample misled. Pricing itself is bounded: at most nine times the
/// distinct programs' lengths, tried only where that is a quarter of the
/// steps left.
fn cut(pieces: &[Piece], fixed: &Fixed, runs: u64, spend: &mut Spend<'_>) -> Result<Option<Cut>, EquivError> {
    let words: Vec<usize> = (2..fixed.len())
        .filter(|&w| fixed.get(w).is_some_and(Option::is_none) && pieces.iter().any(|p| p.reads(4 * w as u32)))
        .collect();
    if words.is_empty() {
        return Ok(None);
    }
    let mut analyzers = Vec::new();
    for piece in pieces {
        let Piece::Prog(p) = piece else { continue };
        spend.steps(p.len() as u64)?;
        let unlimited = seccomp::analysis::Budget::new(u64::MAX, u64::MAX, u64::MAX);
        let Ok(analyzer) = Analyzer::with_budget(p, unlimited) else { return Ok(None) };
        analyzers.push((piece, p.len() as u64, analyzer));
    }
    let distinct = distinct_programs(pieces);
    // What one value's specialisations may cost at most, against half the
    // steps left: a cut that could spend the budget is priced first, or goes
    // to the solver, which decides identical or small circuits quickly (a
    // 2000-rule chain stacked on itself).
    let work: u64 = distinct.iter().map(|p| p.len() as u64 + 1).sum();
    let affordable = spend.room() / 2;
    let max_runs = spend.limits.max_word_runs;
    let mut best: Option<(usize, Vec<u32>)> = None;
    let mut fewest_past_bound: Option<(usize, Vec<u32>)> = None;
    for w in words {
        let offset = 4 * w as u32;
        // The layout the specialiser names words in; any fixed arch maps
        // offsets to fields one to one.
        let Some(field) = Field::from_offset(offset, AUDIT_ARCH_X86_64) else { continue };
        let mut joint: Option<WordCuts> = None;
        let mut cuttable = true;
        for (piece, len, analyzer) in analyzers.iter_mut() {
            if !piece.reads(offset) {
                continue;
            }
            spend.steps(*len)?;
            let got = analyzer.word_cuts(None, field);
            match (got, &mut joint) {
                (Ok(Some(c)), _) if c.partial || c.by_bits => cuttable = false,
                (Ok(Some(c)), None) => joint = Some(c),
                (Ok(Some(c)), Some(j)) if c.mask == j.mask => j.starts.extend(c.starts),
                _ => cuttable = false,
            }
            if !cuttable {
                break;
            }
        }
        let Some(mut joint) = joint.filter(|_| cuttable) else { continue };
        joint.starts.sort_unstable();
        joint.starts.dedup();
        let values: Vec<u32> = joint
            .starts
            .iter()
            .enumerate()
            .filter_map(|(i, &start)| {
                let end = joint.starts.get(i + 1).map_or(u32::MAX, |&next| next.wrapping_sub(1));
                joint.representative(start, end)
            })
            .collect();
        let n = values.len() as u64;
        if runs.saturating_mul(n) > max_runs {
            continue;
        }
        let slot = if n.saturating_mul(work) > affordable { &mut fewest_past_bound } else { &mut best };
        if slot.as_ref().is_none_or(|(_, b)| values.len() < b.len()) {
            *slot = Some((w, values));
        }
    }
    if let Some((word, values)) = best {
        return Ok(Some(Cut { word, values, ceiling: u64::MAX }));
    }
    // Pricing costs at most this (a specialiser per program and the
    // samples' specialisations): only where it cannot eat the budget.
    let price_bound = work.saturating_mul(SAMPLED_VALUES as u64 + 1);
    let Some((word, values)) = fewest_past_bound.filter(|_| price_bound <= spend.room() / 4) else { return Ok(None) };
    let per_value = price(&distinct, 4 * word as u32, &values, spend)?;
    let affordable = spend.room() / 2;
    if per_value.saturating_mul(values.len() as u64) > affordable {
        return Ok(None);
    }
    Ok(Some(Cut { word, values, ceiling: spend.stats.steps.saturating_add(affordable) }))
}

/// The programs among `pieces`, each once.
fn distinct_programs(pieces: &[Piece]) -> Vec<&Rc<Program>> {
    let mut distinct: Vec<&Rc<Program>> = Vec::new();
    for piece in pieces {
        if let Piece::Prog(p) = piece {
            if !distinct.iter().any(|d| d.insns() == p.insns()) {
                distinct.push(p);
            }
        }
    }
    distinct
}

/// The costliest of [`SAMPLED_VALUES`] values of the word at `offset`
/// (spread evenly over `values`): the steps its specialisations of the
/// `distinct` programs that read the word take, as
/// [`Decider::decide_runs`] charges them. Charged.
fn price(distinct: &[&Rc<Program>], offset: u32, values: &[u32], spend: &mut Spend<'_>) -> Result<u64, EquivError> {
    let mut partials = Vec::new();
    for p in distinct {
        if Piece::Prog(Rc::clone(p)).reads(offset) {
            spend.steps(p.len() as u64)?;
            partials.extend(Partial::new(p).ok());
        }
    }
    let n = values.len();
    let mut costliest = 0u64;
    for s in 0..SAMPLED_VALUES.min(n) {
        let Some(&value) = values.get(s * (n - 1) / (SAMPLED_VALUES - 1)) else { continue };
        let mut work = 0u64;
        for partial in &mut partials {
            let _ = partial.specialize_word(offset, value);
            work = work.saturating_add(partial.last_work() as u64 + 1);
        }
        spend.steps(work)?;
        costliest = costliest.max(work);
    }
    Ok(costliest)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

    use super::*;
    use crate::Limits;

    fn prog(text: &str) -> Program {
        let (_, insns) = cbpf::text::parse_auto(text.as_bytes()).unwrap();
        cbpf::validate(&insns, cbpf::Mode::Seccomp).unwrap()
    }

    /// Reads `args[0].lo` (word 4): runs {0..6}, {7}, {8..}.
    fn on_word_4() -> Program {
        prog("ld [16]\njeq #7, l1, l2\nl1: ret #1\nl2: ret #2\n")
    }

    /// Reads `args[0].hi` (word 5): runs {0}, {1..}.
    fn on_word_5() -> Program {
        prog("ld [20]\njeq #0, l1, l2\nl1: ret #1\nl2: ret #2\n")
    }

    fn spend(limits: &Limits) -> Spend<'_> {
        Spend::new(limits)
    }

    /// A cut within the plain bound: no ceiling.
    fn plain(word: usize, values: &[u32]) -> Cut {
        Cut { word, values: values.to_vec(), ceiling: u64::MAX }
    }

    /// What a cut costs, as [`Limits::max_steps`] documents it: building a
    /// specialiser for each piece that reads the word (its length), then
    /// one plus the instructions visited per specialisation; a piece that
    /// does not read the word is neither. Here the first value of word 4
    /// leaves ERRNO 2 against word 5's check, cut in turn (two scans of
    /// that piece, its specialiser, one specialisation), which differs on
    /// its first run.
    #[test]
    fn a_cut_costs_the_specialisers_and_specialisations_of_its_readers() {
        let (p4, p5) = (on_word_4(), on_word_5());
        let limits = Limits::default();
        let mut spend = spend(&limits);
        let mut decider = Decider::new(1, u32::MAX);
        let pieces = [Piece::Prog(Rc::new(p4.clone())), Piece::Prog(Rc::new(p5.clone()))];
        let found = decider.decide_runs(&pieces, [None; 16], &plain(4, &[0, 7, 8]), 1, &mut spend).unwrap();
        let words = found.expect("decided").expect("differ");
        assert_eq!((words[4], words[5]), (0, 0));
        let work = |p: &Program, offset: u32, value: u32| {
            let mut partial = Partial::new(p).unwrap();
            partial.specialize_word(offset, value);
            partial.last_work() as u64 + 1
        };
        let (l4, l5) = (p4.len() as u64, p5.len() as u64);
        let want = l4 + work(&p4, 16, 0) + 2 * l5 + l5 + work(&p5, 20, 0);
        assert_eq!(spend.stats.steps, want);
        assert_eq!((spend.stats.word_runs, spend.stats.solver_calls), (2, 0));
    }

    /// The word with the fewest runs is cut first (word 5's two before
    /// word 4's three); of words with as many runs, the first.
    #[test]
    fn the_word_with_the_fewest_runs_is_cut_first() {
        let limits = Limits::default();
        let both = prog("ld [16]\njeq #7, l1, l2\nl1: ld [20]\njeq #0, l3, l2\nl2: ret #2\nl3: ret #1\n");
        let got = cut(&[Piece::Prog(Rc::new(both))], &[None; 16], 1, &mut spend(&limits)).unwrap();
        assert_eq!(got, Some(plain(5, &[0, 1])));
        let even = prog("ld [16]\njeq #7, l1, l2\nl1: ld [20]\njeq #9, l3, l2\nl2: ret #2\nl3: ret #1\n");
        let got = cut(&[Piece::Prog(Rc::new(even))], &[None; 16], 1, &mut spend(&limits)).unwrap();
        assert_eq!(got, Some(plain(4, &[0, 7, 8])));
    }

    /// Fixed words are not cut again, even where a piece still reads one.
    #[test]
    fn a_fixed_word_is_not_cut_again() {
        let limits = Limits::default();
        let pieces = [Piece::Prog(Rc::new(on_word_4()))];
        let mut fixed: Fixed = [None; 16];
        assert_eq!(cut(&pieces, &fixed, 1, &mut spend(&limits)).unwrap(), Some(plain(4, &[0, 7, 8])));
        fixed[4] = Some(7);
        assert_eq!(cut(&pieces, &fixed, 1, &mut spend(&limits)).unwrap(), None);
    }

    /// A priced cut goes on while the steps are at its ceiling and gives up
    /// once they are past it: with the ceiling at the steps already spent,
    /// the first value is decided and the second is not; the enclosing
    /// ceiling holds again afterwards.
    #[test]
    fn a_cut_gives_up_only_past_its_ceiling() {
        let limits = Limits::default();
        let mut spend = spend(&limits);
        let mut decider = Decider::new(1, u32::MAX);
        let p = Rc::new(on_word_4());
        let pieces = [Piece::Prog(Rc::clone(&p)), Piece::Prog(p)];
        // Building the one specialiser (the other piece is the same) costs
        // the program's length: the ceiling is where the first value starts.
        let cut = Cut { word: 4, values: vec![0, 7, 8], ceiling: on_word_4().len() as u64 };
        let found = decider.decide_runs(&pieces, [None; 16], &cut, 1, &mut spend).unwrap();
        assert_eq!(found, Err(GaveUp));
        assert_eq!((spend.stats.word_runs, spend.ceiling), (1, u64::MAX));
    }

    /// Past the plain bound a cut is priced only where pricing (a
    /// specialiser and eight sampled specialisations: at most nine times
    /// the distinct programs' lengths plus one) fits a quarter of the steps
    /// left: 81 runs of a 40-constant `jeq` list, priced at a few steps a
    /// value, are then cut with a ceiling; one step less and no cut is made.
    #[test]
    fn a_cut_past_the_plain_bound_is_priced_only_where_pricing_fits_a_quarter() {
        let tests: String = (1..=40).map(|i| format!("jeq #{}, l1\n", 10 * i)).collect();
        let p = Rc::new(prog(&format!("ld [16]\n{tests}ret #2\nl1: ret #1\n")));
        let pieces = [Piece::Prog(Rc::clone(&p))];
        let (plain, scans) = plain_cut(&pieces);
        assert_eq!((plain.values.len(), plain.ceiling), (81, u64::MAX));
        let edge = scans + 36 * (p.len() as u64 + 1);
        assert_eq!((priced(&pieces, edge), priced(&pieces, edge - 1)), (true, false));
    }

    /// The cut made with no step budget to speak of (within the plain
    /// bound), and the steps its scans took.
    fn plain_cut(pieces: &[Piece]) -> (Cut, u64) {
        let unlimited = Limits { max_steps: u64::MAX, ..Limits::default() };
        let mut scanned = spend(&unlimited);
        let plain = cut(pieces, &[None; 16], 1, &mut scanned).unwrap().unwrap();
        (plain, scanned.stats.steps)
    }

    /// Whether a priced cut (one with a ceiling) is made within `max_steps`.
    fn priced(pieces: &[Piece], max_steps: u64) -> bool {
        let limits = Limits { max_steps, ..Limits::default() };
        cut(pieces, &[None; 16], 1, &mut spend(&limits)).unwrap().is_some_and(|c| c.ceiling < u64::MAX)
    }

    /// A cut past the plain bound is made when its costliest sampled value
    /// (the eight at `s * (n - 1) / 7`, each costing one plus what its
    /// specialisation visits) times the runs fits half the steps left after
    /// pricing, and not one step below. Constant `i` of 40 enters a tail of
    /// `15 * i` additions on `args[1]` through a `ja` of its own, so the
    /// sampled constants (the 6th, 23rd and 29th) cost apart; a second
    /// piece that does not read the word counts in the plain bound only.
    #[test]
    fn a_priced_cut_is_made_at_exactly_its_costliest_sample_times_the_runs() {
        let mut text = String::from("ld [16]\n");
        for i in 1..=40 {
            text.push_str(&format!("jeq #{}, j{i}, n{i}\nj{i}: ld [24]\nja t{i}\nn{i}: ", 10 * i));
        }
        text.push_str("ret #2\n");
        for k in (1..=600).rev() {
            let label = if k % 15 == 0 { format!("t{}: ", k / 15) } else { String::new() };
            text.push_str(&format!("{label}add #1\n"));
        }
        text.push_str("ret a\n");
        let p = Rc::new(prog(&text));
        let q = Rc::new(prog(&format!("ld [32]\n{}ret a\n", "add #1\n".repeat(300))));
        let pieces = [Piece::Prog(Rc::clone(&p)), Piece::Prog(q)];
        let (plain, scans) = plain_cut(&pieces);
        let n = plain.values.len();
        assert_eq!((n, plain.ceiling), (81, u64::MAX));
        let mut partial = Partial::new(&p).unwrap();
        let samples: Vec<u64> = (0..8)
            .map(|s| {
                partial.specialize_word(16, plain.values[s * (n - 1) / 7]);
                partial.last_work() as u64 + 1
            })
            .collect();
        let costliest = *samples.iter().max().unwrap();
        assert!(samples.iter().filter(|&&w| w == costliest).count() == 1, "{samples:?}");
        let priced_at = scans + p.len() as u64 + samples.iter().sum::<u64>();
        let edge = priced_at + 2 * costliest * n as u64;
        assert_eq!((priced(&pieces, edge), priced(&pieces, edge - 1)), (true, false));
    }

    /// A cut is made only when its runs times one value's work (each
    /// distinct program's length plus one: a piece stacked twice counts
    /// once) fit half the steps left once the programs are read (each
    /// program's length, a piece stacked twice read twice).
    #[test]
    fn a_cut_is_made_only_when_half_the_steps_left_pay_for_it() {
        let p = on_word_4();
        let p = Rc::new(p);
        let pieces = [Piece::Prog(Rc::clone(&p)), Piece::Prog(Rc::clone(&p))];
        let len = p.len() as u64;
        let scans = 2 * len;
        let cost = 3 * (len + 1);
        for (max_steps, cut_made) in [(scans + 2 * cost, true), (scans + 2 * cost - 2, false)] {
            let limits = Limits { max_steps, ..Limits::default() };
            let got = cut(&pieces, &[None; 16], 1, &mut spend(&limits)).unwrap();
            assert_eq!(got.is_some(), cut_made, "{max_steps}");
        }
    }
}
