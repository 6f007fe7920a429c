//! Jumps past what a run already knows: the context words whose value is
//! the same on every path to a pc, and the compares and reloads they
//! settle ([`thread`]), for both instruction sets ([`Flow`]).
//!
//! libseccomp and OpenSSH test an argument inside a rule for one system
//! call and, when it misses, reload the number and test it again against
//! the same constant (OpenSSH's rounds of `ld [0]; jeq #futex; ld [24]; and
//! #M; jeq #op`), or against every later rule's (libseccomp). Behind `jeq
//! #nr` taken the number is known, so the reload and each of those compares
//! go one way only. A jump to such a reload may go straight to where they
//! lead. That changes nothing a run computes: the context does not change
//! during a run, compares change no register, and the reload's value is
//! overwritten where the jump lands (a load, a value set without reading
//! it, or an end that does not return it). Only the instructions executed
//! differ: [`thread`] says how many a threaded jump jumps over, so that
//! an interpreter that counts them can add those it did not execute.
//!
//! Cost: one pass in program order for the facts (jumps only go forward,
//! so a pc's predecessors are all done when it is reached), one backward
//! pass for the jumps, at most [`SETTLE_STEPS`] compares per load.

use crate::{Code, Compare};

/// Context words the facts track (`struct seccomp_data`: 64 bytes); a
/// load of a higher word is a load of an unknown value.
pub const WORDS: usize = 16;

/// Compares followed from one reload ([`thread`]): bounds the work at this
/// many steps per instruction (libseccomp's linear filters settle one
/// compare per later rule; past the bound, the reload keeps its op).
pub const SETTLE_STEPS: usize = 64;

/// What an instruction that starts no compare ([`Code::compare`]) does
/// with the chain's value (A, r0) and where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Loads context word `.0` into the value, then `pc + 1`.
    Load(u8),
    /// Sets the value without reading it (to no context word), then `pc + 1`.
    Set,
    /// Leaves the value as it is, then `pc + 1` (stores, other registers).
    Keep,
    /// Changes the value, reading it (ALU on A), then `pc + 1`.
    Change,
    /// Goes to the pc, the value as it is (`ja`).
    Jump(usize),
    /// Goes to one of the two pcs, the value as it is, on a condition the
    /// facts do not follow (a compare with a register).
    Branch(usize, usize),
    /// Ends the run, returning the value (`ret a`, `exit`) or not (`ret #k`).
    End {
        /// Whether the value is returned.
        reads: bool,
    },
    /// Anything else (not an instruction of the form the facts read): where
    /// it may go is unknown, so nothing in the program is threaded.
    Opaque,
}

impl Effect {
    /// Whether a run that reaches this instruction never reads the value it
    /// arrived with.
    fn overwrites(self) -> bool {
        matches!(self, Effect::Load(_) | Effect::Set | Effect::End { reads: false })
    }
}

/// A program as the facts see it: [`Code`] for the compares, and the
/// effect of every other instruction.
pub trait Flow: Code {
    /// What the instruction at `pc` does when it starts no compare.
    fn effect(&self, pc: usize) -> Effect;
}

/// What holds on every path to a pc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Facts {
    /// The context word the value holds, unchanged since its load.
    value: Option<u8>,
    /// Bit `w` set: word `w` is `words[w]`.
    known: u16,
    words: [u32; WORDS],
}

impl Facts {
    const START: Facts = Facts { value: None, known: 0, words: [0; WORDS] };

    fn word(&self, w: u8) -> Option<u32> {
        let bit = 1u16.checked_shl(u32::from(w))?;
        if self.known & bit == 0 {
            return None;
        }
        self.words.get(usize::from(w)).copied()
    }

    /// The value, if it holds a known word.
    fn value(&self) -> Option<u32> {
        self.word(self.value?)
    }

    fn learn(&mut self, w: u8, x: u32) {
        if let (Some(bit), Some(slot)) = (1u16.checked_shl(u32::from(w)), self.words.get_mut(usize::from(w))) {
            self.known |= bit;
            *slot = x;
        }
    }

    /// What holds on both `self`'s paths and `other`'s.
    fn join(&mut self, other: &Facts) {
        if self.value != other.value {
            self.value = None;
        }
        for (w, (mine, theirs)) in self.words.iter().zip(&other.words).enumerate() {
            if mine != theirs || other.known & (1 << w) == 0 {
                self.known &= !(1 << w);
            }
        }
    }
}

/// Whether compare `c` is true for the value `x`.
fn outcome(c: &Compare, x: u32) -> bool {
    c.cond.eval(u64::from(x), c.value)
}

/// Where compare `c` goes for `x`, with the instructions its jump jumps
/// over.
fn settle(c: &Compare, x: u32) -> (usize, u32) {
    let to = if outcome(c, x) { c.taken } else { c.fall };
    (to, to.saturating_sub(c.jump_pc + 1) as u32)
}

/// Per pc, the facts of every run that reaches it (`None`: none does).
/// A compare on a known value flows along its one outcome; `==` taken (or
/// `!=` not taken) teaches that the value's word is the constant. `None`
/// for a program with an [`Effect::Opaque`] instruction.
fn facts(prog: &impl Flow, len: usize) -> Option<Vec<Option<Facts>>> {
    let mut at: Vec<Option<Facts>> = vec![None; len];
    if let Some(start) = at.first_mut() {
        *start = Some(Facts::START);
    }
    let flow = |at: &mut [Option<Facts>], to: usize, facts: Facts| match at.get_mut(to) {
        Some(Some(old)) => old.join(&facts),
        Some(slot) => *slot = Some(facts),
        None => {}
    };
    for pc in 0..len {
        let Some(Some(here)) = at.get(pc).copied() else { continue };
        if let Some(c) = prog.compare(pc) {
            if let Some(x) = here.value() {
                flow(&mut at, settle(&c, x).0, here);
                continue;
            }
            let (mut on_taken, mut on_fall) = (here, here);
            if let (Some(w), Ok(k)) = (here.value, u32::try_from(c.value)) {
                match c.cond {
                    crate::Cond::Eq => on_taken.learn(w, k),
                    crate::Cond::Ne => on_fall.learn(w, k),
                    _ => {}
                }
            }
            flow(&mut at, c.taken, on_taken);
            flow(&mut at, c.fall, on_fall);
            continue;
        }
        let next = pc + 1;
        match prog.effect(pc) {
            // A word past `WORDS` is never known (`Facts::word`).
            Effect::Load(w) => flow(&mut at, next, Facts { value: Some(w), ..here }),
            Effect::Set | Effect::Change => flow(&mut at, next, Facts { value: None, ..here }),
            Effect::Keep => flow(&mut at, next, here),
            Effect::Jump(to) => flow(&mut at, to, here),
            Effect::Branch(one, other) => {
                flow(&mut at, one, here);
                flow(&mut at, other, here);
            }
            Effect::End { .. } => {}
            Effect::Opaque => return None,
        }
    }
    Some(at)
}

/// Per pc, where a jump to it may go instead, with the instructions that
/// way jumps over: past `ja`s; past a compare whose value is known there
/// (every path to it holds the same word, of known value); past a load of
/// a known word and the compares that value settles, when the value is
/// overwritten where they lead ([`Effect`]). Otherwise the pc itself.
///
/// From the landing pc on, a run computes what it would have from `pc`
/// (module docs); it executes `landing - pc - over` fewer instructions
/// than the way through them.
pub fn thread(prog: &impl Flow, len: usize) -> Vec<(usize, u32)> {
    let mut out: Vec<(usize, u32)> = (0..len).map(|pc| (pc, 0)).collect();
    let Some(facts) = facts(prog, len) else { return out };
    let resolved = |out: &[(usize, u32)], pc: usize| out.get(pc).copied().unwrap_or((pc, 0));
    for pc in (0..len).rev() {
        let here = facts.get(pc).copied().flatten();
        let landing = if let Some(c) = prog.compare(pc) {
            let Some(x) = here.and_then(|f| f.value()) else { continue };
            let (to, over) = settle(&c, x);
            let (end, more) = resolved(&out, to);
            (end, over.saturating_add(more))
        } else {
            match prog.effect(pc) {
                Effect::Jump(to) => {
                    let (end, more) = resolved(&out, to);
                    (end, (to.saturating_sub(pc + 1) as u32).saturating_add(more))
                }
                Effect::Load(w) => {
                    let Some(x) = here.and_then(|f| f.word(w)) else { continue };
                    let (mut at, mut over) = (pc + 1, 0u32);
                    for _ in 0..SETTLE_STEPS {
                        let (end, more) = resolved(&out, at);
                        over = over.saturating_add(more);
                        let Some(c) = prog.compare(end) else {
                            at = end;
                            break;
                        };
                        let (to, jumped) = settle(&c, x);
                        (at, over) = (to, over.saturating_add(jumped));
                    }
                    if prog.compare(at).is_some() || !prog.effect(at).overwrites() {
                        continue;
                    }
                    (at, over)
                }
                _ => continue,
            }
        };
        if let Some(slot) = out.get_mut(pc) {
            *slot = landing;
        }
    }
    out
}

#[cfg(test)]
mod tests;
