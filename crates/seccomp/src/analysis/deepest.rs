//! The input that runs the most classic instructions: what `bpfconv bench`
//! times as a filter's "deepest" input.
//!
//! Per (arch, nr) the path exploration ([`super::paths::explore`]) visits
//! every feasible path with `nr` and `arch` concrete; each path's
//! [`Facts`] (what its undecided branches said about the arguments and the
//! instruction pointer) give an input that takes it, and the plain classic
//! interpreter ([`cbpf::trace_seccomp`]) counts what that input
//! really executes. The longest real run wins, so the answer is always an
//! input and its true path length; where the facts miss a relation
//! (arithmetic on arguments), the input may take a shorter path than the one
//! explored, and a deeper input may exist.

use cbpf::{Mode, Op, Program, SeccompData};

use super::paths::{explore, Limits, Outcome};
use super::{AnalysisError, Budget, BudgetKind};
use crate::domain::{Env, Facts, Field};

/// An input and the classic instructions it executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deepest {
    /// The system call.
    pub data: SeccompData,
    /// Classic instructions executed on it, the return included.
    pub path: u64,
}

/// Paths explored per (arch, nr); past it the longest input so far stands.
const PATHS_PER_CLASS: usize = 1 << 12;

/// Abstract instructions per (arch, nr), as the analysis' refinement.
const STEPS_PER_CLASS: usize = 1 << 16;

/// The input with the longest classic path among one input per feasible
/// path of each `(arch, nr)` in `classes` (the first of equals); `None`
/// when `classes` is empty. Every abstract step and every instruction the
/// interpreter runs draws on `budget`'s steps.
pub fn deepest_input_in(
    prog: &Program,
    classes: impl IntoIterator<Item = (u32, u32)>,
    budget: &mut Budget,
) -> Result<Option<Deepest>, AnalysisError> {
    if prog.mode() != Mode::Seccomp {
        return Err(AnalysisError::NotSeccomp { mode: prog.mode() });
    }
    let ops: Vec<Option<Op>> = prog.insns().iter().map(|i| i.op()).collect();
    let mut best: Option<Deepest> = None;
    for (arch, nr) in classes {
        let env = Env::new(Some(nr), Some(arch), arch);
        let limits = Limits { max_steps: STEPS_PER_CLASS, max_paths: PATHS_PER_CLASS };
        // The concrete runs are charged after the exploration (which holds
        // the step counter); they stop at what it has left.
        let left = budget.steps.max.saturating_sub(budget.steps.used);
        let mut ran = 0u64;
        let outcome = explore(&ops, &env, limits, &mut budget.steps, |end| {
            let data = input_of(end.facts, arch, nr);
            let mut path = 0u64;
            if cbpf::trace_seccomp(prog, &data.to_bytes(), |_| path += 1).is_err() {
                // Only a socket program fails here; the mode is checked above.
                return true;
            }
            ran = ran.saturating_add(path);
            if best.is_none_or(|b| path > b.path) {
                best = Some(Deepest { data, path });
            }
            ran <= left
        });
        budget.charge_steps(ran)?;
        match outcome {
            Outcome::Exhausted | Outcome::Stopped => return Err(budget.exhausted(BudgetKind::Steps)),
            Outcome::Complete | Outcome::Truncated => {}
        }
    }
    Ok(best)
}

/// A call of `nr` on `arch` whose other words satisfy `facts` where a
/// simple choice does: 0, else the facts' witness, else the smallest value
/// with the required bits.
fn input_of(facts: &Facts, arch: u32, nr: u32) -> SeccompData {
    crate::domain::data_of_fields(arch, |field| match field {
        Field::Nr => nr,
        Field::Arch => arch,
        _ => value_of(facts, field),
    })
}

/// A value of `field` that `facts` admit, if one of the simple choices is.
fn value_of(facts: &Facts, field: Field) -> u32 {
    let (min, max, ones, zeros) = facts.bounds(field);
    let with_bits = (min | ones) & !zeros;
    [Some(0), facts.witness(field), Some(with_bits), Some(max & !zeros), Some(min)]
        .into_iter()
        .flatten()
        .find(|&v| facts.admits(field, v))
        .unwrap_or(min)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use cbpf::uapi::audit::AUDIT_ARCH_X86_64;

    /// A seccomp program from bpf_asm text.
    fn program(text: &str) -> Program {
        let insns = cbpf::text::parse(text.as_bytes(), cbpf::text::Format::Asm).unwrap();
        cbpf::validate(&insns, Mode::Seccomp).unwrap()
    }

    /// `mmap` (9) takes its longest path only when `args[2].lo & 0x4` is
    /// clear and `args[3].lo == 0x22`: the deepest input must pass both
    /// checks, which args = 0 does not (it stops at the second).
    #[test]
    fn the_deepest_input_passes_the_argument_checks() {
        let prog = program(
            "ld [0]\n jeq #9, mmap, deny\n \
             mmap: ld [32]\n and #4\n jeq #0, flags, deny\n \
             flags: ld [40]\n jeq #0x22, allow, deny\n \
             allow: ld #0x7fff0000\n ret a\n \
             deny: ret #0\n",
        );
        let mut budget = Budget::default();
        let deepest = deepest_input_in(&prog, [(AUDIT_ARCH_X86_64, 9)], &mut budget).unwrap().unwrap();
        assert_eq!(deepest.path, 9);
        assert_eq!(deepest.data.args[2] & 4, 0);
        assert_eq!(deepest.data.args[3] as u32, 0x22);
        assert_eq!(deepest.data.nr, 9);
        // Its path is what the interpreter counts.
        let mut n = 0;
        cbpf::trace_seccomp(&prog, &deepest.data.to_bytes(), |_| n += 1).unwrap();
        assert_eq!(n, deepest.path);
        assert!(budget.steps_used() >= 8);
    }

    /// Of several classes the longest wins; a budget too small says so.
    #[test]
    fn classes_compete_and_the_budget_binds() {
        let prog = program("ld [0]\n jeq #1, one, other\n other: ret #0\n one: ld [16]\n jgt #10, big, small\n small: ret #1\n big: ret #2\n");
        let classes = [(AUDIT_ARCH_X86_64, 0), (AUDIT_ARCH_X86_64, 1)];
        let deepest = deepest_input_in(&prog, classes, &mut Budget::default()).unwrap().unwrap();
        assert_eq!((deepest.data.nr, deepest.path), (1, 5));
        let err = deepest_input_in(&prog, classes, &mut Budget::new(4, 1, 1)).unwrap_err();
        assert!(matches!(err, AnalysisError::Budget { kind: BudgetKind::Steps, .. }), "{err}");
    }
}
