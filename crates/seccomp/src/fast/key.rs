//! Second-level dispatch of a residual program on a *key field*.
//!
//! A residual that checks one argument against many constants
//! (libseccomp's `chdir(A0 == 0) ... chdir(A0 == 99)` rules, each
//! `ld [16]; jeq #i, ...`) still walks every rule at run time. When a
//! `struct seccomp_data` word is only ever *compared for equality* with
//! constants, every value outside the set `K` of those constants takes the
//! same path: the program cannot tell them apart. So the residual is
//! specialised once more ([`super::specialize`] with a [`KeyFact`]): once
//! per `k` in `K` with the word known to be `k`, and once with the word
//! known to be none of `K` (each `jeq #k` on it is false). Evaluation reads
//! the word, finds it in the sorted `K` (binary search, nothing allocated)
//! and continues with that specialisation, which is usually a handful of
//! instructions or a constant.
//!
//! [`find_key`] decides which word, if any: a may-analysis over the
//! forward-only program tracks which words A may hold; any use of such an
//! A other than `jeq #k` (ALU, `neg`, `tax`, `st`, `ret a`, any other
//! comparison, a comparison with X) disqualifies the word. `nr` and `arch`
//! are never keys (the first level already fixed them).
//!
//! Soundness does not rest on the analysis: each specialisation only uses
//! a fact that holds for the inputs routed to it (the word equals `k`, or
//! differs from every member of `K`). The analysis only guarantees that
//! the "other" specialisation no longer depends on the word at all.

use cbpf::{JmpOp, Op, Program, Src};

use crate::data::{OFFSET_ARCH, OFFSET_NR};

pub(crate) use super::specialize::KeyFact;

/// Fewest `jeq #k` on a word (over all paths) for keying to pay.
pub const MIN_KEY_COMPARES: usize = 4;

/// Deepest nesting of keyed dispatch (a key inside a key's specialisation).
pub const MAX_KEY_DEPTH: u32 = 2;

/// Words of `struct seccomp_data` (64 bytes).
const WORDS: usize = 16;

/// The chosen key field of a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    /// Byte offset of the word in `struct seccomp_data`.
    pub(crate) offset: u32,
    /// Every constant it is compared with, ascending, distinct.
    pub(crate) constants: Vec<u32>,
}

/// The word compared for equality most often (at least
/// [`MIN_KEY_COMPARES`] times) and never used otherwise, if any.
pub(crate) fn find_key(program: &Program) -> Option<Key> {
    let insns = program.insns();
    let n = insns.len();
    // Per pc: bit w set when A may hold word w on some path reaching pc.
    let mut may: Vec<u16> = vec![0; n];
    let mut disqualified: u16 = bit(OFFSET_NR) | bit(OFFSET_ARCH);
    let mut compares = [0usize; WORDS];
    let mut constants: [Vec<u32>; WORDS] = Default::default();
    for (pc, insn) in insns.iter().enumerate() {
        let a = may.get(pc).copied().unwrap_or(0);
        let op = insn.op()?;
        let mut flow = |to: usize, set: u16| {
            if let Some(m) = may.get_mut(to) {
                *m |= set;
            }
        };
        match op {
            Op::LdxAbsSeccomp { k } => flow(pc + 1, bit(k)),
            Op::LdImm { .. } | Op::LdMem { .. } | Op::Txa => flow(pc + 1, 0),
            Op::LdxImm { .. } | Op::LdxMem { .. } | Op::Stx { .. } => flow(pc + 1, a),
            Op::St { .. } | Op::Tax => {
                disqualified |= a;
                flow(pc + 1, a);
            }
            Op::Alu { .. } | Op::Neg => {
                disqualified |= a;
                flow(pc + 1, 0);
            }
            Op::Ja { k } => flow(pc + 1 + k as usize, a),
            Op::Jmp { op: cmp, src, k, jt, jf } => {
                if let (JmpOp::Jeq, Src::K) = (cmp, src) {
                    for w in words(a) {
                        if let (Some(c), Some(ks)) = (compares.get_mut(w), constants.get_mut(w)) {
                            *c += 1;
                            ks.push(k);
                        }
                    }
                } else {
                    disqualified |= a;
                }
                flow(pc + 1 + usize::from(jt), a);
                flow(pc + 1 + usize::from(jf), a);
            }
            Op::RetA => disqualified |= a,
            Op::RetK { .. } => {}
            // Never in a validated seccomp program.
            Op::LdAbs { .. } | Op::LdInd { .. } | Op::LdLen | Op::LdxLen | Op::LdxMsh { .. } => return None,
        }
    }
    let best = (0..WORDS)
        .filter(|&w| disqualified & (1 << w) == 0)
        .filter(|&w| compares.get(w).is_some_and(|&c| c >= MIN_KEY_COMPARES))
        .max_by_key(|&w| (compares.get(w).copied().unwrap_or(0), std::cmp::Reverse(w)))?;
    let mut ks = std::mem::take(constants.get_mut(best)?);
    ks.sort_unstable();
    ks.dedup();
    Some(Key { offset: best as u32 * 4, constants: ks })
}

/// The bit of the word at byte `offset` (aligned and in range after
/// `seccomp_check_filter()`).
fn bit(offset: u32) -> u16 {
    1 << ((offset / 4) as usize % WORDS)
}

fn words(set: u16) -> impl Iterator<Item = usize> {
    (0..WORDS).filter(move |w| set & (1 << w) != 0)
}
