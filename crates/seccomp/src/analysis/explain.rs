//! The policy a filter implements, as data: per action, the syscall numbers
//! that always get it and, for the others, the branch conditions under which
//! they do. Formatting is the caller's business.

use cbpf::Program;

use super::domain::{Env, Val};
use super::paths::{explore, Cond, Limits};
use super::{ActionResult, AnalysisError, Analyzer};

/// The paths of one syscall number that end in the same result.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NrPaths {
    pub nr: u32,
    /// One conjunction of conditions per feasible path; the result is
    /// produced when any of them holds. Only undecided branches appear.
    pub paths: Vec<Vec<Cond>>,
    /// The exploration hit its limit: there may be more paths (and results)
    /// than listed.
    pub truncated: bool,
}

/// Everything known about one action value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionRules {
    /// The full 32-bit return value.
    pub action: u32,
    /// Numbers that get it whatever the arguments (ascending).
    pub always: Vec<u32>,
    /// Numbers that get it under conditions.
    pub when: Vec<NrPaths>,
}

/// A filter's policy for one arch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    pub arch: u32,
    /// One entry per action value the examined numbers can get, ascending.
    pub actions: Vec<ActionRules>,
    /// Paths that return a computed value (`ret a`), per number.
    pub computed: Vec<NrPaths>,
}

impl Policy {
    fn rules(&mut self, action: u32) -> &mut ActionRules {
        let i = match self.actions.binary_search_by_key(&action, |r| r.action) {
            Ok(i) => i,
            Err(i) => {
                self.actions.insert(i, ActionRules { action, always: Vec::new(), when: Vec::new() });
                i
            }
        };
        // `i` is the position found or just filled by the insert above.
        #[allow(clippy::indexing_slicing)]
        &mut self.actions[i]
    }
}

/// Limits of the exploration of one dependent number.
const EXPLAIN_LIMITS: Limits = Limits { max_steps: 1 << 18, max_paths: 2048 };

/// The policy of `prog` on `arch` over the syscall numbers `nrs`.
///
/// Numbers with a constant action (as [`super::analyze`] promises) are
/// listed under [`ActionRules::always`]; for each other number the feasible
/// paths are enumerated (up to a limit) and grouped by the value they return.
pub fn explain(prog: &Program, arch: u32, nrs: impl IntoIterator<Item = u32>) -> Result<Policy, AnalysisError> {
    let mut analyzer = Analyzer::new(prog)?;
    let mut policy = Policy { arch, actions: Vec::new(), computed: Vec::new() };
    for nr in nrs {
        if let ActionResult::Constant(v) = analyzer.result(arch, nr) {
            let always = &mut policy.rules(v).always;
            if let Err(i) = always.binary_search(&nr) {
                always.insert(i, nr);
            }
            continue;
        }
        let env = Env { nr: Some(nr), arch: Some(arch), layout_arch: arch };
        let mut by_value: Vec<(Option<u32>, Vec<Vec<Cond>>)> = Vec::new();
        let complete = explore(analyzer.ops(), &env, true, EXPLAIN_LIMITS, |end| {
            let key = match end.ret {
                Val::Known(v) => Some(v),
                _ => None,
            };
            let conds = end.conds.to_vec();
            match by_value.iter_mut().find(|(k, _)| *k == key) {
                Some((_, paths)) => paths.push(conds),
                None => by_value.push((key, vec![conds])),
            }
        });
        if by_value.is_empty() {
            // The limit struck before any path ended: say so rather than
            // silently dropping the number.
            policy.computed.push(NrPaths { nr, paths: Vec::new(), truncated: true });
        }
        for (key, paths) in by_value {
            let entry = NrPaths { nr, paths, truncated: !complete };
            match key {
                Some(v) => policy.rules(v).when.push(entry),
                None => policy.computed.push(entry),
            }
        }
    }
    Ok(policy)
}
