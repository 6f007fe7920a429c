//! The whole filter, read once: which arches it handles, what every other
//! arch gets, and per arch view and syscall number (or run of numbers
//! without a name) what it returns, from `seccomp::analysis::explain_in`.

use std::collections::BTreeMap;

use cbpf::JmpOp;
use cbpf::{Op, Program};
use seccomp::analysis::{self, AnalysisError, Analyzer, Budget, Cond, Field, NrClasses, PolicyEvent, Returned};
use seccomp::arch::X32_SYSCALL_BIT;
use seccomp::Arch;

use crate::rules::{self, ArgBox, Inexpressible};

/// What one (arch, nr) returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// This value whatever the arguments and instruction pointer.
    Constant(u32),
    /// Per path, the value returned (a constant, or the expression `ret A`
    /// returns) and the undecided conditions; `truncated`: more paths than
    /// explored.
    Paths { paths: Vec<(Returned, Vec<Cond>)>, truncated: bool },
}

/// One ABI as a profile names it: an arch value and, on x86_64, which half
/// of the numbers (x32's have bit 30 set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    pub arch: Arch,
    /// Numbers of this view: `lo..=hi`.
    pub lo: u32,
    pub hi: u32,
}

impl View {
    /// Does libseccomp pass 64-bit arguments on this ABI (test both words)?
    pub fn wide(&self) -> bool {
        crate::abi::libseccomp_args_64(self.arch)
    }

    /// The name of `nr` in this view's table (x32's numbers carry bit 30).
    pub fn name(&self, nr: u32) -> Option<&'static str> {
        self.arch.syscalls()?.name(nr)
    }
}

/// What a number (or run of unnamed numbers) of a view returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Index into [`Reading::views`].
    pub view: usize,
    /// The syscall's name, `None` for numbers no table names.
    pub name: Option<&'static str>,
    /// The numbers: one, or a run of unnamed ones.
    pub lo: u32,
    pub hi: u32,
    pub behaviour: Behaviour,
}

/// A filter read as a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The arch views the filter handles (something other than
    /// [`Reading::other_arches`] on some number), in the order the filter
    /// compares their arch values.
    pub views: Vec<View>,
    /// What every arch value the filter does not compare gets, when it is
    /// one constant (proved: `arch` is tested by comparisons with
    /// constants only, and every run of other values was examined).
    pub other_arches: Option<u32>,
    /// The most common constant action of the unnamed numbers of the
    /// handled views: what a profile's `defaultAction` would be.
    pub default: Option<u32>,
    /// Named numbers, then runs of unnamed ones, per view.
    pub entries: Vec<Entry>,
    /// Every number of every handled view is covered (numbers are tested
    /// only by order comparisons, so unnamed runs stand for their class);
    /// false: only table numbers and compared numbers were examined.
    pub complete: bool,
    /// When not complete: the first pc where `nr` reaches more than a
    /// comparison with a constant (`None` for a bit test of `nr`).
    pub nr_pc: Option<usize>,
    /// The first `ret A` (a computed return value), if any.
    pub ret_a: Option<usize>,
}

/// `explain_in` over `nrs`, collected per number.
fn behaviours(
    prog: &Program,
    arch: u32,
    nrs: &[u32],
    budget: &mut Budget,
) -> Result<BTreeMap<u32, Behaviour>, AnalysisError> {
    let mut out: BTreeMap<u32, Behaviour> = BTreeMap::new();
    analysis::explain_in(prog, arch, nrs.iter().copied(), budget, |event| {
        match event {
            PolicyEvent::Action { action: Some(a), always } => {
                for nr in always {
                    out.insert(*nr, Behaviour::Constant(a));
                }
            }
            PolicyEvent::Action { action: None, .. } => {}
            PolicyEvent::Path { returns, nr, conds } => {
                let entry = out.entry(nr).or_insert(Behaviour::Paths { paths: Vec::new(), truncated: false });
                if let Behaviour::Paths { paths, .. } = entry {
                    paths.push((returns.clone(), conds.to_vec()));
                }
            }
            PolicyEvent::Truncated { nr, .. } => {
                let entry = out.entry(nr).or_insert(Behaviour::Paths { paths: Vec::new(), truncated: true });
                if let Behaviour::Paths { truncated, .. } = entry {
                    *truncated = true;
                }
            }
        }
        Ok::<(), AnalysisError>(())
    })?;
    Ok(out)
}

/// The views an arch value can hold: x86_64 and x32 share one.
fn views_of(arch: u32) -> Vec<View> {
    match Arch::from_audit_arch(arch) {
        Arch::X86_64 => vec![
            View { arch: Arch::X86_64, lo: 0, hi: X32_SYSCALL_BIT - 1 },
            View { arch: Arch::X32, lo: X32_SYSCALL_BIT, hi: u32::MAX },
        ],
        a => vec![View { arch: a, lo: 0, hi: u32::MAX }],
    }
}

/// Reads `prog` (validated in seccomp mode) as a policy, drawing on `budget`.
pub fn read(prog: &Program, budget: &mut Budget) -> Result<Reading, AnalysisError> {
    let arches = analysis::compared_arches(prog)?;
    // An arch value the filter never compares stands for every such arch.
    let other = (0..=u32::MAX).find(|v| arches.binary_search(v).is_err()).unwrap_or(0);
    let ret_a = prog.insns().iter().position(|i| matches!(i.op(), Some(Op::RetA)));
    let mut complete = true;
    let mut nr_pc: Option<usize> = None;

    let mut examine = |arch: u32, budget: &mut Budget| -> Result<(Vec<u32>, BTreeMap<u32, Behaviour>), AnalysisError> {
        let views = views_of(arch);
        let reps = analysis::nr_representatives(prog, arch)?;
        let mut nrs: Vec<u32> = Vec::new();
        for v in &views {
            nrs.push(v.lo);
            if let Some(t) = v.arch.syscalls() {
                nrs.extend(t.iter().map(|(nr, _)| nr));
            }
        }
        match &reps {
            Some(r) => nrs.extend(r),
            None => {
                complete = false;
                if nr_pc.is_none() {
                    nr_pc = Analyzer::new(prog)?.field_other_use(Some(arch), Field::Nr)?;
                }
                nrs.extend(analysis::compared_nrs(prog, arch)?);
            }
        }
        nrs.sort_unstable();
        nrs.dedup();
        let found = behaviours(prog, arch, &nrs, budget)?;
        // Run starts: the representatives and the views' first numbers.
        let mut starts: Vec<u32> = reps.unwrap_or_default();
        starts.extend(views.iter().map(|v| v.lo));
        starts.sort_unstable();
        starts.dedup();
        Ok((starts, found))
    };

    // The arch values the filter does not compare: when it tests `arch`
    // only with `jeq`, one stands for all; with order tests, one per run
    // the constants cut; with anything else, none does.
    let (others, sure) = match Analyzer::new(prog)?.field_classes(None, Field::Arch)? {
        NrClasses::Tests(t) if t.iter().all(|&(op, _, _)| op == JmpOp::Jeq) => (vec![other], true),
        c => match c.representatives() {
            Some(reps) => (reps.into_iter().filter(|v| arches.binary_search(v).is_err()).collect(), true),
            None => (vec![other], false),
        },
    };
    let mut seen: Vec<Behaviour> = Vec::new();
    for value in others {
        let (_, found) = examine(value, budget)?;
        for b in found.into_values() {
            if !seen.contains(&b) {
                seen.push(b);
            }
        }
    }
    let other_arches = match seen.as_slice() {
        [Behaviour::Constant(u)] if sure => Some(*u),
        _ => None,
    };

    let mut views: Vec<View> = Vec::new();
    let mut entries: Vec<Entry> = Vec::new();
    for &arch in &arches {
        let (starts, found) = examine(arch, budget)?;
        for view in views_of(arch) {
            let in_view = |nr: &u32| (view.lo..=view.hi).contains(nr);
            let table: Vec<u32> = view
                .arch
                .syscalls()
                .map(|t| t.iter().map(|(nr, _)| nr).filter(|nr| in_view(nr)).collect())
                .unwrap_or_default();
            // Handled: a syscall of the view's table gets something else
            // than an unchecked arch. (Numbers alone do not count: a
            // libseccomp filter without x32 lets nr -1 through on x86_64.)
            let probe: Vec<&u32> =
                if table.is_empty() { found.keys().filter(|nr| in_view(nr)).collect() } else { table.iter().collect() };
            let handled = probe
                .into_iter()
                .filter_map(|nr| found.get(nr))
                .any(|b| other_arches.is_none_or(|u| *b != Behaviour::Constant(u)));
            if !handled {
                continue;
            }
            let index = views.len();
            views.push(view);
            for &nr in &table {
                if let Some(b) = found.get(&nr) {
                    entries.push(Entry { view: index, name: view.name(nr), lo: nr, hi: nr, behaviour: b.clone() });
                }
            }
            let mut sorted = table.clone();
            sorted.sort_unstable();
            // Unnamed numbers: each run between starts, minus the table.
            let starts: Vec<u32> = starts.iter().copied().filter(in_view).collect();
            for (i, &s) in starts.iter().enumerate() {
                let end = starts.get(i + 1).map_or(view.hi, |n| n - 1);
                let Some(b) = found.get(&s) else { continue };
                let mut lo = u64::from(s);
                for &t in sorted.iter().filter(|t| (s..=end).contains(*t)) {
                    if u64::from(t) > lo {
                        entries.push(Entry { view: index, name: None, lo: lo as u32, hi: t - 1, behaviour: b.clone() });
                    }
                    lo = u64::from(t) + 1;
                }
                if lo <= u64::from(end) {
                    entries.push(Entry { view: index, name: None, lo: lo as u32, hi: end, behaviour: b.clone() });
                }
            }
        }
    }
    // The default: the constant action most unnamed numbers get.
    let mut weight: BTreeMap<u32, u64> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.name.is_none()) {
        if let Behaviour::Constant(a) = e.behaviour {
            *weight.entry(a).or_default() += u64::from(e.hi - e.lo) + 1;
        }
    }
    if weight.is_empty() {
        for e in &entries {
            if let Behaviour::Constant(a) = e.behaviour {
                *weight.entry(a).or_default() += 1;
            }
        }
    }
    let default = weight.iter().max_by_key(|(a, w)| (**w, std::cmp::Reverse(**a))).map(|(a, _)| *a);
    Ok(Reading { views, other_arches, default, entries, complete, nr_pc, ret_a })
}

/// One conditional outcome of a number: a box of argument comparisons, or
/// the raw conditions of a path that has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clause {
    Box(Box<ArgBox>),
    Raw { conds: Vec<Cond>, why: Inexpressible },
}

/// Per value returned (constants first, then each computed expression),
/// the clauses under which `b` returns it, merged; the constant `skip` is
/// left out (the default: everything else).
pub fn clauses(b: &Behaviour, wide: bool, skip: Option<u32>) -> BTreeMap<Returned, Vec<Clause>> {
    let mut out: BTreeMap<Returned, Vec<Clause>> = BTreeMap::new();
    let Behaviour::Paths { paths, .. } = b else { return out };
    let mut boxes: BTreeMap<Returned, Vec<ArgBox>> = BTreeMap::new();
    for (returns, conds) in paths {
        if skip.is_some() && returns.action() == skip {
            continue;
        }
        match rules::path_box(conds, wide) {
            Ok(Some(b)) => boxes.entry(returns.clone()).or_default().push(b),
            Ok(None) => {}
            Err(why) => out.entry(returns.clone()).or_default().push(Clause::Raw { conds: conds.clone(), why }),
        }
    }
    for (action, list) in boxes {
        out.entry(action).or_default().extend(rules::merge(list).into_iter().map(|b| Clause::Box(Box::new(b))));
    }
    // Where that took more than one box (or a path had none): the masked
    // reading of all the value's paths, when it applies, in one clause.
    for (returns, list) in out.iter_mut() {
        if matches!(list.as_slice(), [Clause::Box(_)]) {
            continue;
        }
        let mine: Vec<&[Cond]> =
            paths.iter().filter(|(r, _)| r == returns).map(|(_, conds)| conds.as_slice()).collect();
        if let Some(b) = rules::masked_union(&mine, wide) {
            *list = vec![Clause::Box(Box::new(b))];
        }
    }
    out
}
