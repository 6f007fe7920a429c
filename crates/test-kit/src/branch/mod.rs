//! Inputs that reach every branch: [`branch_inputs`] (seccomp) and
//! [`branch_packets`] (socket) run a forward data flow over the program to
//! learn which field `A` (or `X`) holds at each comparison with a constant,
//! then build inputs with that field at `K - 1`, `K` and `K + 1` (and around
//! AND masks), combined with what the path to the comparison has already
//! tested (the arch, the syscall number, earlier argument checks); plus
//! seeded random inputs.
//!
//! The two sides differ in their abstract domain:
//! - seccomp filters run on [`seccomp::domain`](::seccomp::domain), the one domain over
//!   `struct seccomp_data` words that analysis and the fast engine's
//!   specialisation use (its [`step`](::seccomp::domain::step),
//!   [`Cmp`](::seccomp::domain::Cmp) and path [`Facts`](::seccomp::domain::Facts));
//! - socket filters keep a small domain of their own (`branch/socket.rs`): their
//!   fields are packet bytes at any offset and size, ancillary values and
//!   the length, which `seccomp::domain` does not model and should not
//!   (its `Field` is one of 16 words so that a set of fields is a `u16`,
//!   and the analysis and the fast build copy states of fixed size on
//!   their hot paths).

use std::collections::HashSet;

use cbpf::Program;

mod seccomp;
mod socket;

pub use self::seccomp::branch_inputs;
pub use self::socket::branch_packets;

/// At most this many witness paths are kept per pc.
const MAX_WITNESSES: usize = 3;

/// Seed of the random part of the generated inputs.
const INPUT_SEED: u64 = 0x0bad_5eed_cafe_f00d;

/// Random inputs added to the branch-reaching ones.
const RANDOM_INPUTS: usize = 32;

/// Outcomes of conditional jumps that no input can take, as `(pc, taken)`:
/// the program's own earlier comparisons rule them out (the leaves of
/// libseccomp's binary trees, where every value of the range is handled) or
/// the jump is unreachable. Conservative: an outcome not listed may still be
/// impossible (only comparisons of loaded fields with constants are
/// tracked).
pub fn impossible_outcomes(program: &Program) -> Vec<(cbpf::Pc, bool)> {
    let impossible = match program.mode() {
        cbpf::Mode::Seccomp => self::seccomp::analyse(program).impossible,
        cbpf::Mode::Socket => self::socket::analyse(program.insns()).impossible,
    };
    impossible.into_iter().map(|(pc, taken)| (cbpf::Pc(pc), taken)).collect()
}

/// A state that two paths meeting at a pc merge into.
trait Join {
    /// Merges `other` into `self`.
    fn join(&mut self, other: &Self);
}

/// One forward pass over a classic program of `len` instructions (its
/// jumps go forward, so a pc's state is complete when the pass reaches
/// it): `visit(pc, state, flow)` gets the joined state of the paths that
/// reach `pc` (`None` when none does) and hands states on with
/// `flow(target, state)`.
fn forward<P: Join>(len: usize, entry: P, mut visit: impl FnMut(usize, Option<P>, &mut dyn FnMut(usize, P))) {
    let mut states: Vec<Option<P>> = (0..len).map(|_| None).collect();
    if let Some(first) = states.first_mut() {
        *first = Some(entry);
    }
    for pc in 0..len {
        let state = states.get_mut(pc).and_then(Option::take);
        let mut flow = |target: usize, p: P| {
            if let Some(slot) = states.get_mut(target) {
                match slot {
                    Some(existing) => existing.join(&p),
                    None => *slot = Some(p),
                }
            }
        };
        visit(pc, state, &mut flow);
    }
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

/// What one path to a comparison tested about the fields, as the choice of
/// values asks it.
trait PathFacts<F> {
    /// `(lo, hi, a value allowed)` of `f` when the path tested it.
    fn edges(&self, f: F) -> Option<[u32; 3]>;
    /// Could `f` hold `v` on the path?
    fn admits(&self, f: F, v: u32) -> bool;
}

/// One comparison of a (possibly masked) field with a constant.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Compare<F, W> {
    field: F,
    mask: u32,
    k: u32,
    /// What each witness path to the comparison tested.
    witnesses: Vec<W>,
}

impl<F: Copy, W: PathFacts<F>> Compare<F, W> {
    /// Values to give the compared field on the path of `witness`: around
    /// `K` (and the mask), plus the edges of what the path allows when it
    /// tested the field; only those the path allows, when there are any.
    fn values(&self, witness: &W) -> Vec<u32> {
        let mut v = candidates(self.k, self.mask);
        v.extend(witness.edges(self.field).into_iter().flatten());
        let (inside, outside): (Vec<u32>, Vec<u32>) = v.into_iter().partition(|&x| witness.admits(self.field, x));
        if inside.is_empty() {
            outside
        } else {
            inside
        }
    }
}

/// Pushes `item` unless already present (keeps generation order).
fn push_unique<T: Clone + Eq + std::hash::Hash>(seen: &mut HashSet<T>, out: &mut Vec<T>, item: T) {
    if seen.insert(item.clone()) {
        out.push(item);
    }
}
