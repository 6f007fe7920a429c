//! The reference program: a [`Meaning`] transcribed as a classic seccomp
//! filter, one test per thing the meaning says, so that it can be checked
//! against [`Meaning::eval`] on inputs and compared with any other filter
//! by `equiv`.
//!
//! ```text
//! ld [4]; per arch value: jeq #ARCH, 0, 1; ja ARCH     then ret #other_arches
//! ARCH:   ld [0]; per part but the last: jge #next, 1, 0; ja PART
//! PART:   ret #k (an unlisted ABI), or ja VIEW
//! VIEW:   ld [0]; per chunk of 120 syscalls: jeq #nr, T (each), ja NEXT,
//!         T: ret #K (first rule unconditional) or ja RULES; NEXT: ...  then ret #default
//! RULES:  the syscall's rules in order (see rule_chain), then ret #default;
//!         a run of rules differing in one compared value as lists (see value_list)
//! ```
//!
//! Every conditional jump stays within a rule or a run of a list; `ja`
//! carries the long ones.

use std::collections::BTreeMap;

use cbpf::opcode::{ALU_AND_K, JMP_JEQ_K, JMP_JGE_K, JMP_JGT_K, LD_W_ABS};
use cbpf::Insn;
use seccomp::data::{OFFSET_ARCH, OFFSET_NR};
use seccomp::Arch;

use super::code::{Code, Label, To, Unreachable};
use super::{arg_offsets, Cond, Meaning, PartKind, Rule, Syscall, View, Width};
use crate::rules::CmpOp;

/// The reference program of `m` (user form; validate it before running).
pub fn program(m: &Meaning) -> Result<Vec<Insn>, Unreachable> {
    let mut c = Code::default();
    c.stmt(LD_W_ABS, OFFSET_ARCH);
    let arch_labels: Vec<_> = m.arches.iter().map(|_| c.label()).collect();
    for (a, l) in m.arches.iter().zip(&arch_labels) {
        jump_if_eq(&mut c, a.audit_arch, *l);
    }
    c.ret(m.other_arches);
    for (a, l) in m.arches.iter().zip(arch_labels) {
        c.bind(l);
        c.stmt(LD_W_ABS, OFFSET_NR);
        let part_labels: Vec<_> = a.parts.iter().map(|_| c.label()).collect();
        for (i, pl) in part_labels.iter().enumerate() {
            match a.parts.get(i + 1) {
                Some(next) => {
                    let past = c.label();
                    c.cond(JMP_JGE_K, next.first, To::Label(past), To::Next);
                    c.ja(*pl);
                    c.bind(past);
                }
                None => c.ja(*pl),
            }
        }
        let view_labels: Vec<_> = a.views.iter().map(|_| c.label()).collect();
        for (p, pl) in a.parts.iter().zip(part_labels) {
            c.bind(pl);
            match p.kind {
                PartKind::Action(k) => c.ret(k),
                PartKind::View(v) => match view_labels.get(v) {
                    Some(vl) => c.ja(*vl),
                    None => c.ret(m.other_arches),
                },
            }
        }
        for (view, vl) in a.views.iter().zip(view_labels) {
            c.bind(vl);
            view_code(&mut c, view);
        }
    }
    c.finish()
}

/// Syscalls tested per chunk: each `jeq` reaches the chunk's end, where
/// every target it may have (a `ret` or a `ja`) sits, within 255.
const CHUNK: usize = 120;

/// One view: its syscalls in chunks of `jeq #nr, T` whose targets `T` sit
/// at the chunk's end (`ret #K` for a syscall whose first rule has no
/// condition, `ja RULES` otherwise), then `ret #default`; then each
/// syscall's rules.
fn view_code(c: &mut Code, view: &View) {
    c.stmt(LD_W_ABS, OFFSET_NR);
    let syscalls: Vec<(&u32, &Syscall)> = view.syscalls.iter().collect();
    let mut bodies: Vec<(Label, &Syscall)> = Vec::new();
    for chunk in syscalls.chunks(CHUNK) {
        let next = c.label();
        let mut targets: Vec<(Target, Label)> = Vec::new();
        let mut jumps = Vec::new();
        for &(nr, s) in chunk {
            let target = match s.rules.first() {
                Some(r) if r.conds.is_empty() => Target::Ret(r.action),
                None => Target::Ret(view.default),
                Some(_) => {
                    let body = c.label();
                    bodies.push((body, s));
                    Target::Rules(body)
                }
            };
            let l = match targets.iter().find(|(t, _)| *t == target) {
                Some(&(_, l)) => l,
                None => {
                    let l = c.label();
                    targets.push((target, l));
                    l
                }
            };
            jumps.push((*nr, l));
        }
        for (nr, l) in jumps {
            c.cond(JMP_JEQ_K, nr, To::Label(l), To::Next);
        }
        c.ja(next);
        for (t, l) in targets {
            c.bind(l);
            match t {
                Target::Ret(k) => c.ret(k),
                Target::Rules(body) => c.ja(body),
            }
        }
        c.bind(next);
    }
    c.ret(view.default);
    for (body, s) in bodies {
        c.bind(body);
        rule_chain(c, view.arch, &s.rules, view.default);
    }
}

/// Where a chunk's `jeq` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Ret(u32),
    Rules(Label),
}

/// `jeq #k, 0, 1; ja to`: A == k goes to `to`, however far.
fn jump_if_eq(c: &mut Code, k: u32, to: Label) {
    let past = c.label();
    c.cond(JMP_JEQ_K, k, To::Next, To::Label(past));
    c.ja(to);
    c.bind(past);
}

/// The rules of one syscall as a first-match chain: each rule's
/// conditions in order, a failed one jumping to the next rule, all held
/// `ret #action`; after the last rule `ret #default`. Loads every word it
/// compares (`ld [k]`), so it needs nothing in A or X at entry. A run of
/// rules that each hold for one value of the same argument, where the
/// same other conditions hold, and have the same action (an allow-list of
/// `ioctl` requests) is one list of those values ([`value_list`]): the
/// rules of a run may be tested in any order, since whichever of them
/// matches first gives the same action.
pub(crate) fn rule_chain(c: &mut Code, arch: Arch, rules: &[Rule], default: u32) {
    let mut rest = rules;
    while let Some(r) = rest.first() {
        let run = rest.iter().take_while(|o| same_list(r, o)).count();
        if run >= 2 {
            let (list, after) = rest.split_at(run);
            value_list(c, arch, list);
            rest = after;
            continue;
        }
        let fail = c.label();
        for cond in &r.conds {
            test(c, arch, cond, To::Label(fail));
        }
        c.ret(r.action);
        c.bind(fail);
        rest = rest.get(1..).unwrap_or_default();
    }
    c.ret(default);
}

/// A rule's listed condition (its last `SCMP_CMP_EQ`) and the others, in
/// order: what a [`value_list`] tests once for its run, then lists.
fn listed(r: &Rule) -> Option<(&Cond, Vec<&Cond>)> {
    let at = r.conds.iter().rposition(|c| c.cmp.op == CmpOp::Eq)?;
    let rest = r.conds.iter().enumerate().filter(|&(i, _)| i != at).map(|(_, c)| c).collect();
    Some((r.conds.get(at)?, rest))
}

/// Whether `a` and `b` are two members of one [`value_list`]: each holds
/// for one value (`SCMP_CMP_EQ`) of the same argument at the same width
/// where the same other conditions hold, with the same action (runc's
/// multiplexed `socketcall` rules: `args[0] == SYS_SETSOCKOPT` and one
/// value of `args[2]`).
fn same_list(a: &Rule, b: &Rule) -> bool {
    match (listed(a), listed(b)) {
        (Some((x, rest_a)), Some((y, rest_b))) => {
            (x.cmp.index, x.width) == (y.cmp.index, y.width) && rest_a == rest_b && a.action == b.action
        }
        _ => false,
    }
}

/// Values per run of a [`value_list`]: each `jeq` reaches the run's
/// `ret`, within 255.
const LIST_RUN: usize = 250;

/// `rules` (of one [`same_list`] run): the conditions they share (a
/// failed one jumping past the run: `ja END`), then lists of the low
/// words compared, one per high word (64-bit compares: `ld hi; jeq #vh, 1,
/// 0; ja NEXT` before it): `ld lo`, then runs of `jeq #v, RET` ending in
/// `RET: ret #action`, the run's last miss jumping over it; a miss of
/// every value falls through to what follows the rules. One `jeq` a value,
/// where the rule-by-rule chain takes five or more.
fn value_list(c: &mut Code, arch: Arch, rules: &[Rule]) {
    let Some((first, shared)) = rules.first().and_then(listed) else { return };
    let action = rules.first().map_or(0, |r| r.action);
    let end = c.label();
    if !shared.is_empty() {
        let (fail, pass) = (c.label(), c.label());
        for cond in shared {
            test(c, arch, cond, To::Label(fail));
        }
        c.ja(pass);
        c.bind(fail);
        c.ja(end);
        c.bind(pass);
    }
    let (hi_off, lo_off) = arg_offsets(arch, first.cmp.index);
    let max = first.width.max();
    let wide = first.width == Width::Bits64;
    let mut by_high: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for v in rules.iter().filter_map(listed).map(|(cond, _)| cond.cmp.value & max) {
        by_high.entry((v >> 32) as u32).or_default().push(v as u32);
    }
    for (vh, lows) in by_high {
        let next = c.label();
        if wide {
            c.stmt(LD_W_ABS, hi_off);
            let same = c.label();
            c.cond(JMP_JEQ_K, vh, To::Label(same), To::Next);
            c.ja(next);
            c.bind(same);
        }
        c.stmt(LD_W_ABS, lo_off);
        for run in lows.chunks(LIST_RUN) {
            let (hit, past) = (c.label(), c.label());
            for (i, &vl) in run.iter().enumerate() {
                let miss = if i + 1 == run.len() { To::Label(past) } else { To::Next };
                c.cond(JMP_JEQ_K, vl, To::Label(hit), miss);
            }
            c.bind(hit);
            c.ret(action);
            c.bind(past);
        }
        c.bind(next);
    }
    c.bind(end);
}

/// Falls through when `cond` holds, jumps to `fail` when not.
fn test(c: &mut Code, arch: Arch, cond: &Cond, fail: To) {
    let (hi_off, lo_off) = arg_offsets(arch, cond.cmp.index);
    let max = cond.width.max();
    let (v, d) = (cond.cmp.value & max, cond.cmp.value_two & max);
    let (vh, vl) = ((v >> 32) as u32, v as u32);
    let pass = c.label();
    let ok = To::Label(pass);
    let wide = cond.width == Width::Bits64;
    match cond.cmp.op {
        CmpOp::MaskedEq => {
            let d = d & v;
            let (dh, dl) = ((d >> 32) as u32, d as u32);
            for (use_it, off, m, want) in [(wide && vh != 0, hi_off, vh, dh), (vl != 0, lo_off, vl, dl)] {
                if use_it {
                    c.stmt(LD_W_ABS, off);
                    if m != u32::MAX {
                        c.stmt(ALU_AND_K, m);
                    }
                    c.cond(JMP_JEQ_K, want, To::Next, fail);
                }
            }
        }
        op => {
            if wide {
                // The high word decides unless it equals the constant's.
                c.stmt(LD_W_ABS, hi_off);
                match op {
                    CmpOp::Eq => c.cond(JMP_JEQ_K, vh, To::Next, fail),
                    CmpOp::Ne => c.cond(JMP_JEQ_K, vh, To::Next, ok),
                    CmpOp::Gt | CmpOp::Ge => {
                        c.cond(JMP_JGT_K, vh, ok, To::Next);
                        c.cond(JMP_JEQ_K, vh, To::Next, fail);
                    }
                    _ => {
                        c.cond(JMP_JGT_K, vh, fail, To::Next);
                        c.cond(JMP_JEQ_K, vh, To::Next, ok);
                    }
                }
            }
            c.stmt(LD_W_ABS, lo_off);
            match op {
                CmpOp::Eq => c.cond(JMP_JEQ_K, vl, To::Next, fail),
                CmpOp::Ne => c.cond(JMP_JEQ_K, vl, fail, To::Next),
                CmpOp::Gt => c.cond(JMP_JGT_K, vl, To::Next, fail),
                CmpOp::Ge => c.cond(JMP_JGE_K, vl, To::Next, fail),
                CmpOp::Lt => c.cond(JMP_JGE_K, vl, fail, To::Next),
                _ => c.cond(JMP_JGT_K, vl, fail, To::Next),
            }
        }
    }
    c.bind(pass);
}
