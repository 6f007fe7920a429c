#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Issue 13, findings 1 and 3: the analyses stay bounded on the shapes that
//! blew them up. Each run shares one [`Budget`] over every number (as the
//! CLI does); it finishes with `Ok` or with the typed budget error, never
//! exceeds the budget, and `explain` reports no more than it allows.

use std::time::{Duration, Instant};

use cbpf::opcode::*;
use cbpf::{validate, Insn, Mode, Program};
use seccomp::analysis::{
    analyze_in, audit_in, compared_nrs, explain_in, AnalysisError, Budget, BudgetKind, PolicyEvent,
};

use seccomp::action::SECCOMP_RET_ALLOW as ALLOW;
use seccomp::arch::AUDIT_ARCH_X86_64 as X86_64;
const ERRNO1: u32 = 0x0005_0001;
const ARGS: u32 = 16;
const LD_ABS_W: u16 = BPF_LD | BPF_W | BPF_ABS;
const JEQ_K: u16 = BPF_JMP | BPF_JEQ | BPF_K;
const JSET_K: u16 = BPF_JMP | BPF_JSET | BPF_K;
const RET_K: u16 = BPF_RET | BPF_K;

fn ld(k: u32) -> Insn {
    Insn::stmt(LD_ABS_W, k)
}

/// `n` argument tests on different halves where both outcomes continue
/// (the taken side skips the next load): nothing decides until the end.
/// 3n + 3 instructions.
fn undecided_chain(n: usize) -> Vec<Insn> {
    let mut p = Vec::with_capacity(3 * n + 3);
    for i in 0..n {
        p.push(ld(ARGS + 4 * (i % 12) as u32));
        let code = if i % 2 == 0 { JEQ_K } else { JSET_K };
        p.push(Insn::jump(code, i as u32 + 1, 1, 0));
        p.push(ld(ARGS + 4 * ((i + 1) % 12) as u32));
    }
    p.push(Insn::jump(JEQ_K, 7, 0, 1));
    p.push(Insn::stmt(RET_K, ALLOW));
    p.push(Insn::stmt(RET_K, ERRNO1));
    p
}

/// `ld nr`, then `m` of `jeq #(1000 + i); ret ALLOW`, then an undecided
/// chain of `n` tests that every other number reaches.
fn nr_prefix_unsettled(m: usize, n: usize) -> Vec<Insn> {
    let mut p = vec![ld(0)];
    for i in 0..m {
        p.push(Insn::jump(JEQ_K, 1000 + i as u32, 0, 1));
        p.push(Insn::stmt(RET_K, ALLOW));
    }
    p.extend(undecided_chain(n));
    p
}

fn prog(insns: &[Insn]) -> Program {
    validate(insns, Mode::Seccomp).unwrap_or_else(|e| panic!("{e}"))
}

/// The blow-up shapes of the issue, by instruction count.
fn shapes() -> Vec<(String, Program)> {
    let mut out: Vec<(String, Program)> = [9, 43, 76, 533, 1333]
        .into_iter()
        .map(|n| {
            let p = undecided_chain(n);
            (format!("undecided chain, {} insns", p.len()), prog(&p))
        })
        .collect();
    let p = nr_prefix_unsettled(1300, 436);
    assert!(p.len() <= 4096);
    out.push((format!("nr prefix + unsettled, {} insns", p.len()), prog(&p)));
    out
}

/// Small enough for a debug build, big enough for every shape to hit it.
fn test_budget() -> Budget {
    Budget::new(1 << 20, 1 << 10, 1 << 14)
}

fn ok_or_budget<T>(what: &str, r: Result<T, AnalysisError>) -> Option<BudgetKind> {
    match r {
        Ok(_) => None,
        Err(AnalysisError::Budget { kind, .. }) => Some(kind),
        Err(e) => panic!("{what}: {e}"),
    }
}

/// The numbers the CLI analyses: a syscall table's worth plus the compared ones.
fn nrs(p: &Program) -> Vec<u32> {
    let mut nrs: Vec<u32> = (0..383).collect();
    nrs.extend(compared_nrs(p, X86_64).unwrap());
    nrs.sort_unstable();
    nrs.dedup();
    nrs
}

const SLACK: u64 = 1;

#[test]
fn analyze_and_audit_stay_within_the_run_budget() {
    for (name, p) in shapes() {
        let start = Instant::now();
        let mut budget = test_budget();
        let analyzed = ok_or_budget(&name, analyze_in(&p, X86_64, nrs(&p), &mut budget));
        assert!(budget.steps_used() <= budget.max_steps + 4096, "{name}: {} steps", budget.steps_used());
        let mut budget = test_budget();
        let audited = ok_or_budget(&name, audit_in(&p, &mut budget));
        assert!(budget.steps_used() <= budget.max_steps + 4096, "{name}: {} steps", budget.steps_used());
        for kind in [analyzed, audited].into_iter().flatten() {
            assert_eq!(kind, BudgetKind::Steps, "{name}");
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{name}: {:?}", start.elapsed());
    }
}

#[test]
fn explain_streams_within_the_run_budget() {
    for (name, p) in shapes() {
        let start = Instant::now();
        let mut budget = test_budget();
        let (mut paths, mut conds, mut longest) = (0u64, 0u64, 0usize);
        let r = explain_in(&p, X86_64, nrs(&p), &mut budget, |e| {
            if let PolicyEvent::Path { conds: c, .. } = e {
                paths += 1;
                conds += c.len() as u64;
                longest = longest.max(c.len());
            }
            Ok::<(), AnalysisError>(())
        });
        let kind = ok_or_budget(&name, r);
        assert!(paths <= budget.max_paths, "{name}: {paths} paths");
        assert!(conds <= budget.max_conds, "{name}: {conds} conditions");
        assert!(longest <= p.insns().len(), "{name}");
        assert!(budget.steps_used() <= budget.max_steps + SLACK + p.insns().len() as u64, "{name}");
        // Every one of these shapes has more to say than the budget allows.
        assert!(kind.is_some(), "{name}: finished within {:?}", budget);
        assert!(start.elapsed() < Duration::from_secs(60), "{name}: {:?}", start.elapsed());
    }
}

#[test]
fn the_budget_error_names_the_flag_that_raises_it() {
    let p = prog(&undecided_chain(9));
    let mut budget = Budget::new(u64::MAX, 100, u64::MAX);
    let r = explain_in(&p, X86_64, nrs(&p), &mut budget, |_| Ok::<(), AnalysisError>(()));
    let e = r.unwrap_err();
    assert_eq!(e, AnalysisError::Budget { kind: BudgetKind::Paths, limit: 100 });
    assert!(e.to_string().contains("--max-paths"), "{e}");
    let mut budget = Budget::new(u64::MAX, u64::MAX, 50);
    let e = explain_in(&p, X86_64, nrs(&p), &mut budget, |_| Ok::<(), AnalysisError>(())).unwrap_err();
    assert!(e.to_string().contains("--max-conds"), "{e}");
    let mut budget = Budget::new(1000, u64::MAX, u64::MAX);
    let e = analyze_in(&p, X86_64, nrs(&p), &mut budget).unwrap_err();
    assert_eq!(e, AnalysisError::Budget { kind: BudgetKind::Steps, limit: 1000 });
    assert!(e.to_string().contains("--max-steps"), "{e}");
}

/// A sink error stops the stream at once and comes back unchanged.
#[test]
fn explain_stops_at_the_first_sink_error() {
    let p = prog(&undecided_chain(9));
    let mut seen = 0;
    let r = explain_in(&p, X86_64, nrs(&p), &mut Budget::default(), |e| {
        if matches!(e, PolicyEvent::Path { .. }) {
            seen += 1;
            if seen == 3 {
                return Err(AnalysisError::Budget { kind: BudgetKind::Conds, limit: 7 });
            }
        }
        Ok(())
    });
    assert_eq!(r, Err(AnalysisError::Budget { kind: BudgetKind::Conds, limit: 7 }));
    assert_eq!(seen, 3);
}

/// The default budget is the CLI's: on the 30-instruction chain `analyze`
/// still settles every number, and `explain` stops with the budget error
/// instead of printing 2048 paths for each of 383 numbers.
#[test]
fn default_budget_on_the_smallest_chain() {
    let p = prog(&undecided_chain(9));
    let mut budget = Budget::default();
    let entries = analyze_in(&p, X86_64, nrs(&p), &mut budget).unwrap();
    assert_eq!(entries.len(), 383);
    let mut conds = 0u64;
    let r = explain_in(&p, X86_64, nrs(&p), &mut budget, |e| {
        if let PolicyEvent::Path { conds: c, .. } = e {
            conds += c.len() as u64;
        }
        Ok::<(), AnalysisError>(())
    });
    assert!(matches!(r, Err(AnalysisError::Budget { .. })), "{r:?}");
    assert!(conds <= Budget::DEFAULT_CONDS);
}

/// Numbers the filter cannot tell apart share one analysis
/// (`analysis::classes`): with the CLI's default budget, plain `analyze`
/// answers every number of every shape, up to 4096 instructions, drawing
/// on the budget once per class instead of once per number.
#[test]
fn default_budget_answers_plain_analyze_on_every_shape() {
    let mut all = shapes();
    let p = undecided_chain(1364);
    all.push((format!("undecided chain, {} insns", p.len()), prog(&p)));
    for (name, p) in all {
        let mut budget = Budget::default();
        let nrs = nrs(&p);
        let entries =
            analyze_in(&p, X86_64, nrs.iter().copied(), &mut budget).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(entries.len(), nrs.len(), "{name}");
        // The numbers the prefix names are allowed outright; the rest depend
        // on arguments (the chain reads args[0..6]).
        for e in &entries {
            let expect_constant = (1000..2300).contains(&e.nr) && name.starts_with("nr prefix");
            match &e.result {
                seccomp::analysis::ActionResult::Constant(v) => {
                    assert!(expect_constant, "{name}: nr {} constant {v:#x}", e.nr);
                    assert_eq!(*v, ALLOW, "{name}: nr {}", e.nr);
                }
                seccomp::analysis::ActionResult::Depends(fields) => {
                    assert!(!expect_constant, "{name}: nr {} depends", e.nr);
                    assert!(!fields.is_empty(), "{name}: nr {}", e.nr);
                }
            }
        }
        // 384 numbers or more, at most a few classes: far below one
        // refinement per number.
        let classes = if name.starts_with("nr prefix") { 1301 } else { 1 };
        assert!(
            budget.steps_used() <= classes * ((1 << 16) + 2 * p.insns().len() as u64) + p.insns().len() as u64,
            "{name}: {} steps",
            budget.steps_used()
        );
    }
}

/// `tax; add x` repeated doubles the expression in A each time: 2000 of
/// them (4004 instructions, a tree of 2^2001 nodes) cost one node each in
/// the exploration, and explaining the compare that follows stops with
/// the expression budget, naming its flag, without building the tree; a
/// short chain fits and is charged its tree size. (Actions in ascending
/// order: ERRNO's path first.)
#[test]
fn doubling_expressions_stop_at_the_expression_budget() {
    let chain = |n: usize| {
        let mut p = vec![ld(ARGS)];
        for _ in 0..n {
            p.extend([Insn::stmt(BPF_MISC | BPF_TAX, 0), Insn::stmt(BPF_ALU | BPF_ADD | BPF_X, 0)]);
        }
        p.extend([Insn::jump(JEQ_K, 5, 0, 1), Insn::stmt(RET_K, ALLOW), Insn::stmt(RET_K, ERRNO1)]);
        prog(&p)
    };
    let p = chain(2000);
    let start = Instant::now();
    let e = explain_in(&p, X86_64, [0], &mut Budget::default(), |_| Ok::<(), AnalysisError>(())).unwrap_err();
    assert_eq!(e, AnalysisError::Budget { kind: BudgetKind::ExprNodes, limit: Budget::DEFAULT_EXPR_NODES });
    assert!(e.to_string().contains("--max-expr-nodes"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
    // 3 doublings: 15 nodes per printed condition, one per path.
    let p = chain(3);
    let mut texts = Vec::new();
    let mut budget = Budget::default().with_max_expr_nodes(30);
    explain_in(&p, X86_64, [0], &mut budget, |e| {
        if let PolicyEvent::Path { conds, .. } = e {
            texts.extend(conds.iter().map(ToString::to_string));
        }
        Ok::<(), AnalysisError>(())
    })
    .unwrap();
    assert_eq!(
        texts,
        [
            "(((args[0].lo + args[0].lo) + (args[0].lo + args[0].lo)) + ((args[0].lo + args[0].lo) + (args[0].lo + args[0].lo))) != 0x5",
            "(((args[0].lo + args[0].lo) + (args[0].lo + args[0].lo)) + ((args[0].lo + args[0].lo) + (args[0].lo + args[0].lo))) == 0x5",
        ]
    );
    let mut budget = Budget::default().with_max_expr_nodes(29);
    let e = explain_in(&p, X86_64, [0], &mut budget, |_| Ok::<(), AnalysisError>(())).unwrap_err();
    assert_eq!(e, AnalysisError::Budget { kind: BudgetKind::ExprNodes, limit: 29 });
}
