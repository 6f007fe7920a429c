//! 32-bit argument ladders as one lookup, for both interpreters.
//!
//! Chromium's policy compiler (`sandbox/linux/bpf_dsl`) checks a 64-bit
//! system call argument compared as a 32-bit value before every
//! comparison: the value must be a 32-bit one, zero- or sign-extended,
//! else the filter kills. A rule that allows a few values of one argument
//! is a ladder of *rounds*, each the same check, then one `==`:
//!
//! ```text
//! R_i:  ld [hi]; jeq #0, P_i, +0          high word 0: a zero-extended value
//!       jeq #0xffffffff, +0, reject       else it must be all ones,
//!       ld [lo]; jset #0x80000000, P_i, reject   and the low word negative
//! P_i:  ld [lo]; jeq #K_i, hit_i, R_(i+1) the comparison
//! ```
//!
//! On the deepest input of such a rule (a sign-extended value that is no
//! key: Chromium's `fcntl`, 13 rounds) an interpreter runs 7 instructions a
//! round, three dispatches or chain scans, while the check's outcome is
//! the same in every round: its words do not change. So from a ladder's
//! first round the whole ladder is: the check once, then the first key
//! equal to the low word. [`find`] finds the ladders of a program over the
//! [`Code`] view both instruction sets implement (the converted program's
//! compares of `0xffffffff` and `0x80000000` load their constant into a
//! register first; [`Code::compare`] sees through that), and [`Ladder`]
//! says where a run leaves for given words ([`Ladder::leave`]), with the
//! value the run leaves in the chain's register and which rounds it ran,
//! for an interpreter that counts executed instructions.
//!
//! Only a ladder's first round is replaced; every other pc keeps its op, so
//! a jump into the middle of a ladder runs it as written.

use crate::{Code, Cond, BLOCK};

/// The low word's sign bit, which a sign-extended value has set.
const SIGN: u64 = 0x8000_0000;

/// Rounds a ladder needs (one round is the check and one compare: no
/// shorter as a lookup).
pub const MIN_ROUNDS: usize = 2;

/// Rounds a ladder may have (its keys are scanned a block at a time): a
/// 4096-instruction program has at most 585 rounds of 7 instructions.
pub const MAX_ROUNDS: usize = 1024;

/// Rounds all ladders of a program may hold together. Ladders may share
/// rounds (two rounds that miss to the same one each start a ladder with
/// its tail), so without it a program built for that stores starts times
/// tail rounds: 300 starts over a tail of 300 would be 90,000. Past it no
/// further ladder is kept (their rounds run as written).
pub const MAX_TOTAL_ROUNDS: usize = 1 << 15;

/// A ladder of rounds over one argument (module docs): `pc`s are where
/// outcomes resolve to (past `ja`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder {
    /// The first round's load of the high word: where the ladder starts.
    pub start: usize,
    /// The context word holding the argument's high half, as [`Code`]
    /// names words.
    pub hi: u8,
    /// The word holding its low half.
    pub lo: u8,
    /// Where a value that is no 32-bit one leaves to (every round's).
    pub reject: usize,
    /// Per round: its start, its key, where a value equal to the key goes.
    pub rounds: Vec<Round>,
    /// Where a value equal to no key goes (the last round's miss).
    pub miss: usize,
}

/// One round of a [`Ladder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// The load of the high word that starts it.
    pub start: usize,
    /// The key compared with the low word.
    pub key: u32,
    /// Where the low word equal to the key goes.
    pub hit: usize,
    /// Instructions a run executes in the round, per way it goes
    /// ([`Costs`]).
    pub costs: Costs,
}

/// Instructions a run executes in a round (loads, compares with the load
/// of their constant, the `ja`s they go through), for an interpreter that
/// counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Costs {
    /// From the start through the compare with the key, by a zero high
    /// word ([`Check::Zero`]).
    pub zero: u32,
    /// The same through the whole check ([`Check::Signed`]).
    pub signed: u32,
    /// From the start to the reject, for [`Check::RejectHigh`].
    pub reject_high: u32,
    /// The same for [`Check::RejectSign`].
    pub reject_sign: u32,
    /// `ja`s from the compare with the key to the hit.
    pub hit: u32,
    /// `ja`s from it to the miss.
    pub miss: u32,
}

/// How the check of a round decides, the same in every round for the same
/// words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// High word 0: to the comparison after the load of the high word and
    /// its `jeq #0`.
    Zero,
    /// High word all ones and the low word's sign set: after the whole
    /// check (both compares of the high word, the load of the low word and
    /// its `jset`).
    Signed,
    /// Neither 0 nor all ones: rejected at the second compare, the high
    /// word in the chain's register.
    RejectHigh,
    /// All ones with the sign clear: rejected at the `jset`, the low word
    /// in the register.
    RejectSign,
}

/// Where a run entering a [`Ladder`] at its start leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leave {
    /// The pc it leaves to.
    pub pc: usize,
    /// What the chain's register holds there (the last word loaded).
    pub value: u32,
    /// How the check decided (in every round the run entered).
    pub check: Check,
    /// Rounds entered: the round of the hit, or of the rejection, counts.
    pub rounds: usize,
    /// Instructions executed from the start until arriving at `pc`.
    pub executed: u64,
}

impl Check {
    /// Chromium's check of a 64-bit argument as a 32-bit value.
    pub fn of(hi: u32, lo: u32) -> Check {
        match hi {
            0 => Check::Zero,
            u32::MAX if u64::from(lo) & SIGN != 0 => Check::Signed,
            u32::MAX => Check::RejectSign,
            _ => Check::RejectHigh,
        }
    }
}

impl Ladder {
    /// Where a run from the ladder's start leaves with `hi` and `lo` in its
    /// words: exactly where running the rounds as written leaves.
    pub fn leave(&self, hi: u32, lo: u32) -> Leave {
        let check = Check::of(hi, lo);
        let first = self.rounds.first().map(|r| r.costs).unwrap_or_default();
        let (pc, value, rounds, executed) = match check {
            Check::RejectHigh => (self.reject, hi, 1, u64::from(first.reject_high)),
            Check::RejectSign => (self.reject, lo, 1, u64::from(first.reject_sign)),
            Check::Zero | Check::Signed => {
                let hit = self.rounds.iter().position(|r| r.key == lo);
                let entered = hit.map_or(self.rounds.len(), |i| i + 1);
                let mut executed = 0u64;
                for (i, r) in self.rounds.iter().take(entered).enumerate() {
                    let check = if check == Check::Zero { r.costs.zero } else { r.costs.signed };
                    let on = if hit == Some(i) { r.costs.hit } else { r.costs.miss };
                    executed += u64::from(check) + u64::from(on);
                }
                let pc = hit.and_then(|i| self.rounds.get(i)).map_or(self.miss, |r| r.hit);
                (pc, lo, entered, executed)
            }
        };
        Leave { pc, value, check, rounds, executed }
    }
}

/// One round at `pc`, as the ladder walk needs it: (high word, low word,
/// reject, the round, where a miss goes).
type Found = (u8, u8, usize, Round, usize);

/// Where execution goes on from `to` past `ja`s, and how many `ja`s it
/// executes on the way ([`Code::resolve`] gives the instructions they jump
/// over: the rest of the distance is the `ja`s themselves).
fn land(code: &impl Code, to: usize) -> Option<(usize, u32)> {
    let (at, over) = code.resolve(to);
    let jas = at.checked_sub(to)?.checked_sub(over as usize)?;
    Some((at, u32::try_from(jas).ok()?))
}

/// A compare as a round uses it: where each outcome resolves to, the
/// `ja`s on the way, and the instructions of the compare itself.
#[derive(Debug, Clone, Copy)]
struct Sides {
    taken: (usize, u32),
    fall: (usize, u32),
    len: u32,
}

/// The compare at `pc` if it is `x <cond> value`, or (for `==`) `x !=
/// value` with its outcomes swapped, as the converter writes a `jeq` whose
/// true side falls through.
fn compare(code: &impl Code, pc: usize, cond: Cond, value: Option<u64>) -> Option<(Sides, u64)> {
    let c = code.compare(pc).filter(|c| value.is_none_or(|v| c.value == v))?;
    let (taken, fall) = (land(code, c.taken)?, land(code, c.fall)?);
    let len = u32::try_from(c.jump_pc.checked_sub(pc)? + 1).ok()?;
    let sides = match c.cond {
        x if x == cond => Sides { taken, fall, len },
        Cond::Ne if cond == Cond::Eq => Sides { taken: fall, fall: taken, len },
        _ => return None,
    };
    Some((sides, c.value))
}

/// The round that starts at `pc` (module docs), if one does.
fn round(code: &impl Code, pc: usize) -> Option<Found> {
    // Cheap first: the compare after the load.
    let (zero, _) = compare(code, pc + 1, Cond::Eq, Some(0))?;
    let hi = code.loaded_word(pc)?;
    let (ones, _) = compare(code, zero.fall.0, Cond::Eq, Some(u64::from(u32::MAX)))?;
    let (signed, reject) = (ones.taken.0, ones.fall.0);
    let lo = code.loaded_word(signed)?;
    let (sign, _) = compare(code, signed + 1, Cond::Set, Some(SIGN))?;
    let pass = zero.taken.0;
    if sign.taken.0 != pass || sign.fall.0 != reject || code.loaded_word(pass) != Some(lo) {
        return None;
    }
    let (cmp, key) = compare(code, pass + 1, Cond::Eq, None)?;
    let key = u32::try_from(key).ok()?;
    // Instructions on each way through the round: loads count one.
    let high = 1 + zero.len + zero.fall.1 + ones.len;
    let low = high + ones.taken.1 + 1 + sign.len;
    let costs = Costs {
        zero: 1 + zero.len + zero.taken.1 + 1 + cmp.len,
        signed: low + sign.taken.1 + 1 + cmp.len,
        reject_high: high + ones.fall.1,
        reject_sign: low + sign.fall.1,
        hit: cmp.taken.1,
        miss: cmp.fall.1,
    };
    Some((hi, lo, reject, Round { start: pc, key, hit: cmp.taken.0, costs }, cmp.fall.0))
}

/// The ladders among the first `n` pcs of `code` (a pc past them is not
/// looked at): maximal runs of at least [`MIN_ROUNDS`] rounds of one
/// argument with one reject, each round's miss the next round's start, at
/// most [`MAX_ROUNDS`] each and [`MAX_TOTAL_ROUNDS`] together, in order of
/// their starts. A round no other round of the same argument misses to
/// starts a ladder; a round two rounds miss to is in both their ladders.
pub fn find(code: &impl Code, n: usize) -> Vec<Ladder> {
    let found: Vec<Option<Found>> = (0..n).map(|pc| round(code, pc)).collect();
    let same = |a: &Found, b: &Found| (a.0, a.1, a.2) == (b.0, b.1, b.2);
    let mut entered = vec![false; n];
    for f in found.iter().flatten() {
        if let Some(Some(next)) = found.get(f.4) {
            if same(f, next) {
                if let Some(e) = entered.get_mut(f.4) {
                    *e = true;
                }
            }
        }
    }
    let mut ladders = Vec::new();
    let mut total = 0usize;
    for (start, f) in found.iter().enumerate() {
        let Some(first) = f else { continue };
        if entered.get(start).copied().unwrap_or(true) {
            continue;
        }
        let (hi, lo, reject, _, _) = *first;
        let mut rounds = Vec::new();
        let mut at = first;
        let miss = loop {
            rounds.push(at.3);
            match found.get(at.4) {
                // Only forward misses, at most MAX_ROUNDS: the walk ends.
                Some(Some(next)) if same(at, next) && next.3.start > at.3.start && rounds.len() < MAX_ROUNDS => {
                    at = next;
                }
                _ => break at.4,
            }
        };
        if rounds.len() >= MIN_ROUNDS {
            total += rounds.len();
            if total > MAX_TOTAL_ROUNDS {
                break;
            }
            ladders.push(Ladder { start, hi, lo, reject, rounds, miss });
        }
    }
    ladders
}

/// The ladders of a program as an interpreter runs them: [`find`]'s
/// ladders, and their keys flat with each outcome in the interpreter's own
/// form `T` (a pc, an exit), for [`Ladders::exit`]'s scan.
#[derive(Debug, Clone)]
pub struct Ladders<T> {
    ladders: Box<[Ladder]>,
    spans: Box<[Span<T>]>,
    /// The keys of every ladder, in round order, each ladder's padded to a
    /// whole number of [`BLOCK`]s with its last key: a value that equals a
    /// padding key equals that last key first, so the first equal key of
    /// the padded run is the first of the rounds.
    keys: Box<[u32]>,
    /// Where each key's hit goes, parallel to `keys`.
    hits: Box<[T]>,
}

impl<T> Default for Ladders<T> {
    fn default() -> Self {
        Ladders { ladders: Box::new([]), spans: Box::new([]), keys: Box::new([]), hits: Box::new([]) }
    }
}

/// A ladder's keys (`keys[start..start + len]`, then the padding to a
/// whole number of [`BLOCK`]s) and where a miss of every key and a
/// rejected value go.
#[derive(Debug, Clone, Copy)]
struct Span<T> {
    start: u32,
    len: u32,
    miss: T,
    reject: T,
}

impl<T: Copy> Ladders<T> {
    /// The ladders among the first `n` pcs of `code` ([`find`]), each
    /// outcome pc as `outcome` gives it (a ladder with an outcome it
    /// refuses is left out).
    pub fn build(code: &impl Code, n: usize, outcome: impl Fn(usize) -> Option<T>) -> Self {
        let (mut ladders, mut spans, mut keys, mut hits) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for ladder in find(code, n) {
            let (Some(miss), Some(reject)) = (outcome(ladder.miss), outcome(ladder.reject)) else { continue };
            let Some(targets) = ladder.rounds.iter().map(|r| outcome(r.hit)).collect::<Option<Vec<T>>>() else {
                continue;
            };
            let (Some(&last_key), Some(&last_hit)) = (ladder.rounds.last().map(|r| &r.key), targets.last()) else {
                continue;
            };
            spans.push(Span { start: keys.len() as u32, len: ladder.rounds.len() as u32, miss, reject });
            keys.extend(ladder.rounds.iter().map(|r| r.key));
            hits.extend(targets);
            // At most BLOCK - 1 copies per ladder (MIN_ROUNDS or more
            // rounds each: at most 4.5 keys stored per round).
            let padded = keys.len().next_multiple_of(BLOCK);
            keys.resize(padded, last_key);
            hits.resize(padded, last_hit);
            ladders.push(ladder);
        }
        Ladders { ladders: ladders.into(), spans: spans.into(), keys: keys.into(), hits: hits.into() }
    }

    /// Every ladder, ladder `i` the `i`-th.
    pub fn all(&self) -> &[Ladder] {
        &self.ladders
    }

    /// Every outcome, for rewriting (e.g. routing pcs).
    pub fn outcomes_mut(&mut self) -> impl Iterator<Item = &mut T> {
        let ends = self.spans.iter_mut().flat_map(|s| [&mut s.miss, &mut s.reject]);
        self.hits.iter_mut().chain(ends)
    }

    /// Where ladder `ladder` leaves to with `hi` and `lo` in its words, and
    /// the value the chain's register holds there (the word loaded last):
    /// as [`Ladder::leave`], without its counts. `None` only for a ladder
    /// out of range.
    #[inline(always)]
    pub fn exit(&self, ladder: usize, hi: u32, lo: u32) -> Option<(T, u32)> {
        let span = self.spans.get(ladder)?;
        Some(match Check::of(hi, lo) {
            Check::RejectHigh => (span.reject, hi),
            Check::RejectSign => (span.reject, lo),
            Check::Zero | Check::Signed => {
                let start = span.start as usize;
                let keys = self.keys.get(start..start + (span.len as usize).next_multiple_of(BLOCK))?;
                (first_equal(keys, lo).map_or(Some(span.miss), |i| self.hits.get(start + i).copied())?, lo)
            }
        })
    }

    /// [`Ladders::exit`] with [`Ladder::leave`]'s account of the run, for
    /// an interpreter that counts executed instructions.
    pub fn leave(&self, ladder: usize, hi: u32, lo: u32) -> Option<(T, Leave)> {
        let (to, _) = self.exit(ladder, hi, lo)?;
        Some((to, self.ladders.get(ladder)?.leave(hi, lo)))
    }

    /// One line per ladder (`ladder #i @pc: n rounds, reject T, miss T`),
    /// then one per key (`== K -> T`), outcomes named by `name`.
    pub fn listing(&self, name: impl Fn(T) -> String) -> String {
        let mut out = String::new();
        for (i, (span, l)) in self.spans.iter().zip(self.ladders.iter()).enumerate() {
            let (reject, miss) = (name(span.reject), name(span.miss));
            out.push_str(&format!("ladder #{i} @{}: {} rounds, reject {reject}, miss {miss}\n", l.start, span.len));
            let range = span.start as usize..(span.start + span.len) as usize;
            let keys = self.keys.get(range.clone()).unwrap_or_default();
            for (k, &hit) in keys.iter().zip(self.hits.get(range).unwrap_or_default()) {
                out.push_str(&format!("  == {k:#x} -> {}\n", name(hit)));
            }
        }
        out
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// The index of the first of `keys` (whole [`BLOCK`]s) equal to `x`:
/// a block's 8 compares at once, one branch per block (measured:
/// Chromium's fcntl rules, 11 rounds, scanned key by key cost about 2
/// cycles a key).
#[inline(always)]
fn first_equal(keys: &[u32], x: u32) -> Option<usize> {
    if keys.first() == Some(&x) {
        return Some(0);
    }
    for (b, block) in keys.chunks_exact(BLOCK).enumerate() {
        let mut equal = [0u8; BLOCK];
        for (e, &k) in equal.iter_mut().zip(block) {
            *e = 0u8.wrapping_sub(u8::from(k == x));
        }
        let bytes = u64::from_le_bytes(equal);
        if bytes != 0 {
            return Some(b * BLOCK + (bytes.trailing_zeros() / 8) as usize);
        }
    }
    None
}

#[cfg(test)]
mod tests;
