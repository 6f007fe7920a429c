//! The readable policy `analyze --explain` prints: the default action
//! first, then per action the syscalls by name (one name for every arch
//! view that treats it alike, `x32:socket` where views differ), runs of
//! unnamed numbers as ranges, and 64-bit argument conditions; a path with
//! none (an `ip` test, a computed value) as the values of each compared
//! term ([`crate::rules::raw_texts`]); a computed return value (`ret A`)
//! as the expression returned ([`Returned`]'s text), a section of its own.

use std::collections::BTreeMap;

use seccomp::analysis::Returned;
use seccomp::Action;

use crate::read::{clauses, Behaviour, Clause, Entry, Reading};
use crate::rules::{box_text, raw_texts};

/// What one entry does, per value returned: `None` = always, else the
/// condition.
type Signature = BTreeMap<Returned, Vec<Option<String>>>;

fn signature(r: &Reading, e: &Entry) -> Signature {
    let mut sig = Signature::new();
    match &e.behaviour {
        Behaviour::Constant(a) => {
            sig.insert(Returned::Const(*a), vec![None]);
        }
        b @ Behaviour::Paths { .. } => {
            let wide = r.views.get(e.view).is_some_and(|v| v.wide());
            for (action, list) in clauses(b, wide, r.default) {
                // Paths without argument comparisons first (as sets per
                // compared term), then the boxes.
                let raw = list.iter().filter_map(|c| match c {
                    Clause::Raw { conds, .. } => Some(conds.as_slice()),
                    Clause::Box(_) => None,
                });
                let mut texts = raw_texts(raw);
                texts.extend(list.iter().filter_map(|c| match c {
                    Clause::Box(b) => Some(box_text(b)),
                    Clause::Raw { .. } => None,
                }));
                sig.insert(action, texts);
            }
        }
    }
    sig
}

fn label(r: &Reading, e: &Entry, with_view: bool) -> String {
    let view = r.views.get(e.view).map(|v| v.arch.to_string()).unwrap_or_default();
    let bit = r.views.get(e.view).map_or(0, |v| v.arch.nr_bit());
    match e.name {
        Some(n) if with_view => format!("{view}:{n}"),
        Some(n) => n.to_string(),
        None if e.lo == e.hi => format!("{view}:{}", e.lo & !bit),
        None => format!("{view}:{}-{}", e.lo & !bit, e.hi & !bit),
    }
}

/// The readable policy, line by line.
pub fn explain_lines(r: &Reading) -> Vec<String> {
    let mut out = Vec::new();
    let views: Vec<String> = r.views.iter().map(|v| v.arch.to_string()).collect();
    let others = r.other_arches.map_or("depends on the input".into(), |a| Action::from_u32(a).to_string());
    out.push(format!("arches: {}; any other arch: {others}", views.join(" ")));
    match r.default {
        Some(d) => out.push(format!("default: {} (every syscall not listed below)", Action::from_u32(d))),
        None => out.push("default: none (every number is listed)".into()),
    }
    if !r.complete {
        out.push("note: nr reaches more than comparisons with constants; only table and compared numbers shown".into());
    }
    let sigs: Vec<Signature> = r.entries.iter().map(|e| signature(r, e)).collect();
    // A name is printed bare when every view naming it does the same.
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, e) in r.entries.iter().enumerate() {
        if let Some(n) = e.name {
            by_name.entry(n).or_default().push(i);
        }
    }
    let mut labels: Vec<Option<String>> = vec![None; r.entries.len()];
    for (_, idx) in by_name {
        let first = idx.first().and_then(|i| sigs.get(*i));
        let alike = idx.iter().all(|i| sigs.get(*i) == first);
        for (k, i) in idx.iter().enumerate() {
            if let (Some(slot), Some(e)) = (labels.get_mut(*i), r.entries.get(*i)) {
                // Alike: the first view's entry speaks for all.
                *slot = if alike && k > 0 { None } else { Some(label(r, e, !alike)) };
            }
        }
    }
    for (i, e) in r.entries.iter().enumerate() {
        if e.name.is_none() {
            if let Some(slot) = labels.get_mut(i) {
                *slot = Some(label(r, e, true));
            }
        }
    }
    // Constants (ascending), then computed values.
    let mut actions: Vec<&Returned> = sigs.iter().flat_map(|s| s.keys()).collect();
    actions.sort_unstable();
    actions.dedup();
    for action in actions {
        if r.default.is_some() && action.action() == r.default {
            continue;
        }
        out.push(format!("{action}:"));
        let mut always: Vec<String> = Vec::new();
        let mut when: Vec<(String, Vec<String>)> = Vec::new();
        for (i, sig) in sigs.iter().enumerate() {
            let (Some(Some(l)), Some(texts)) = (labels.get(i), sig.get(action)) else { continue };
            let cond: Vec<String> = texts.iter().map(|t| t.clone().unwrap_or_else(|| "always".into())).collect();
            if texts.iter().any(Option::is_none) {
                always.push(l.clone());
                continue;
            }
            let cond = if cond.len() == 1 { cond.join("") } else { format!("({})", cond.join(") || (")) };
            match when.iter_mut().find(|(c, _)| *c == cond) {
                Some((_, ls)) => ls.push(l.clone()),
                None => when.push((cond, vec![l.clone()])),
            }
        }
        if !always.is_empty() {
            out.push(format!("  always: {}", always.join(" ")));
        }
        for (cond, ls) in when {
            out.push(format!("  {} when {cond}", ls.join(" ")));
        }
    }
    for (i, e) in r.entries.iter().enumerate() {
        if let (Behaviour::Paths { truncated: true, .. }, Some(Some(l))) = (&e.behaviour, labels.get(i)) {
            out.push(format!("  {l}: more paths than explored (not all shown)"));
        }
    }
    out
}
