//! Stacks of seccomp filters (SPEC §5.3).
//!
//! A task's filters form a list from the newest (`current->seccomp.filter`)
//! to the oldest (`->prev`). Every API here takes filters **newest first**,
//! the kernel's order. [`Stack`] keeps that order for you: [`Stack::attach`]
//! pushes a new newest filter.
//!
//! The engine is a parameter (`run: FnMut(&F, &SeccompData) -> u32`), so any
//! interpreter, the converted eBPF, or the real kernel can be plugged in.

use crate::action::{action_only, SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS};
use crate::data::SeccompData;

/// Combines per-filter results given **newest first**.
///
/// Mirrors the loop of `seccomp_run_filters()` in kernel/seccomp.c (Linux
/// 6.18): start from `SECCOMP_RET_ALLOW`, replace only when
/// `ACTION_ONLY(cur) < ACTION_ONLY(ret)` (signed, strict). So the most
/// restrictive action wins, a tie keeps the newest filter's full value, and an
/// ALLOW's data is always dropped. An empty list gives KILL_PROCESS (the
/// kernel's `WARN_ON(f == NULL)` path).
///
/// # Deviations
/// The cache check before the loop is [`evaluate_stack_cached`]'s job.
pub fn combine<I: IntoIterator<Item = u32>>(results_newest_first: I) -> u32 {
    let mut ret = SECCOMP_RET_ALLOW;
    let mut any = false;
    for cur in results_newest_first {
        any = true;
        if action_only(cur) < action_only(ret) {
            ret = cur;
        }
    }
    if any {
        ret
    } else {
        SECCOMP_RET_KILL_PROCESS
    }
}

/// Runs every filter (newest first) on `data` with `run` and combines the
/// results as the kernel does ([`combine`]).
pub fn evaluate_stack<F, R>(filters_newest_first: &[F], data: &SeccompData, mut run: R) -> u32
where
    R: FnMut(&F, &SeccompData) -> u32,
{
    combine(filters_newest_first.iter().map(|f| run(f, data)))
}

/// Like [`evaluate_stack`], but first asks the newest filter's constant-action
/// cache, as `seccomp_run_filters()` does: if `cache_allows(newest, data)`,
/// the result is ALLOW and no filter runs (this is how x86_64's uretprobe and
/// uprobe syscalls escape filtering).
///
/// Mirrors `seccomp_run_filters()` in kernel/seccomp.c (Linux 6.18).
///
/// # Deviations
/// None.
pub fn evaluate_stack_cached<F, C, R>(filters_newest_first: &[F], data: &SeccompData, cache_allows: C, run: R) -> u32
where
    C: FnOnce(&F, &SeccompData) -> bool,
    R: FnMut(&F, &SeccompData) -> u32,
{
    match filters_newest_first.first() {
        None => SECCOMP_RET_KILL_PROCESS,
        Some(newest) if cache_allows(newest, data) => SECCOMP_RET_ALLOW,
        Some(_) => evaluate_stack(filters_newest_first, data, run),
    }
}

/// A filter stack in kernel order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack<F> {
    /// Oldest first internally; exposed newest first.
    oldest_first: Vec<F>,
}

impl<F> Default for Stack<F> {
    fn default() -> Self {
        Stack { oldest_first: Vec::new() }
    }
}

impl<F> Stack<F> {
    /// An empty stack.
    pub fn new() -> Self {
        Self::default()
    }

    /// Attaches `filter` as the new newest filter (what another
    /// `seccomp(SECCOMP_SET_MODE_FILTER)` call does).
    pub fn attach(&mut self, filter: F) {
        self.oldest_first.push(filter);
    }

    /// Number of filters.
    pub fn len(&self) -> usize {
        self.oldest_first.len()
    }

    /// True when no filter is attached.
    pub fn is_empty(&self) -> bool {
        self.oldest_first.is_empty()
    }

    /// The filters, newest first (the kernel's list order).
    pub fn newest_first(&self) -> impl Iterator<Item = &F> {
        self.oldest_first.iter().rev()
    }

    /// Runs the whole stack on `data` ([`combine`] of every filter's result).
    pub fn evaluate<R>(&self, data: &SeccompData, mut run: R) -> u32
    where
        R: FnMut(&F, &SeccompData) -> u32,
    {
        combine(self.newest_first().map(|f| run(f, data)))
    }
}
