//! `analyze --explain`'s policy text (`policy::read` + `explain_lines`)
//! never prints an opaque operand (`f(…)`): every computed value is the
//! expression the filter computes. Checked on every testdata filter and
//! profile, and on generated seccomp programs (`test_kit::gen::seeded`),
//! which must also stay within the run's budget or stop with the typed
//! budget error. (That the printed expressions mean what the filter does
//! is `crates/seccomp/tests/analysis_proptest.rs`, on the interpreter.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use cbpf::raw::Endian;
use cbpf::{Mode, Program};
use policy::read::Behaviour;
use seccomp::analysis::{self, AnalysisError, Budget, Operand, PolicyEvent};
use seccomp::arch::AUDIT_ARCH_X86_64 as X86_64;
use test_kit::corpus;

/// The policy text of `prog`, and how many conditions compare an
/// expression; or the budget error.
fn explain(prog: &Program, budget: &mut Budget) -> Result<(Vec<String>, usize), AnalysisError> {
    let reading = policy::read(prog, budget)?;
    let exprs = reading
        .entries
        .iter()
        .filter_map(|e| match &e.behaviour {
            Behaviour::Paths { paths, .. } => Some(paths),
            Behaviour::Constant(_) => None,
        })
        .flatten()
        .flat_map(|(_, conds)| conds)
        .filter(|c| matches!(c.lhs, Operand::Expr(_)) || matches!(c.rhs, Operand::Expr(_)))
        .count();
    Ok((policy::explain_lines(&reading), exprs))
}

fn assert_readable(name: &str, lines: &[String]) {
    for l in lines {
        assert!(!l.contains("f("), "{name}: an opaque operand in `{l}`");
    }
}

#[test]
fn no_testdata_filter_explains_to_an_opaque_operand() {
    let mut progs: Vec<(String, Program)> =
        corpus::filters().unwrap().into_iter().map(|f| (f.name.clone(), f.program)).collect();
    let profiles = corpus::testdata().join("profiles");
    for entry in std::fs::read_dir(&profiles).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let prog = match path.extension().and_then(|e| e.to_str()) {
            // Little-endian, or big-endian as libseccomp writes s390x's.
            Some("bpf") => [Endian::Little, Endian::Big]
                .into_iter()
                .find_map(|e| cbpf::validate(&cbpf::raw::decode_endian(&bytes, e).ok()?, Mode::Seccomp).ok()),
            Some("asm") => cbpf::validate(&cbpf::text::parse_auto(&bytes).unwrap().1, Mode::Seccomp).ok(),
            _ => continue,
        };
        let prog = prog.unwrap_or_else(|| panic!("{}: no valid seccomp filter", path.display()));
        progs.push((path.display().to_string(), prog));
    }
    let mut exprs = 0;
    for (name, prog) in &progs {
        match explain(prog, &mut Budget::default()) {
            Ok((lines, n)) => {
                assert_readable(name, &lines);
                exprs += n;
            }
            Err(e) => assert!(matches!(e, AnalysisError::Budget { .. }), "{name}: {e}"),
        }
    }
    // profiles/alu.asm compares computed values on every conditional path.
    assert!(exprs >= 7, "{exprs} conditions on expressions");
}

/// Every path `explain_in` reports for `prog` on x86_64 (the numbers it
/// compares, and 0..4), as text; how many compare an expression.
fn paths_text(prog: &Program, budget: &mut Budget) -> Result<(Vec<String>, usize), AnalysisError> {
    let mut nrs = analysis::compared_nrs(prog, X86_64)?;
    nrs.extend(0..4);
    nrs.sort_unstable();
    nrs.dedup();
    let (mut lines, mut exprs) = (Vec::new(), 0);
    analysis::explain_in(prog, X86_64, nrs, budget, |event| {
        if let PolicyEvent::Path { conds, .. } = event {
            exprs +=
                conds.iter().filter(|c| matches!(c.lhs, Operand::Expr(_)) || matches!(c.rhs, Operand::Expr(_))).count();
            lines.push(conds.iter().map(ToString::to_string).collect::<Vec<_>>().join(" && "));
        }
        Ok::<(), AnalysisError>(())
    })?;
    Ok((lines, exprs))
}

#[test]
fn generated_programs_explain_readably_within_budget() {
    let small = || Budget::new(Budget::DEFAULT_STEPS / 16, Budget::DEFAULT_PATHS / 16, Budget::DEFAULT_CONDS / 16);
    let (mut exprs, mut budget_errors, mut read) = (0, 0, 0);
    for seed in 0..300u64 {
        let g = test_kit::gen::seeded(seed, Mode::Seccomp).unwrap();
        let mut budget = small().with_max_expr_nodes(1 << 12);
        let both = explain(&g.program, &mut budget).and_then(|(mut lines, n)| {
            let (more, m) = paths_text(&g.program, &mut budget)?;
            lines.extend(more);
            Ok((lines, n + m))
        });
        match both {
            Ok((lines, n)) => {
                assert_readable(&format!("seed {seed}"), &lines);
                exprs += n;
                read += 1;
            }
            Err(AnalysisError::Budget { .. }) => budget_errors += 1,
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    eprintln!("{read} read, {budget_errors} stopped by the budget, {exprs} conditions on expressions");
    assert!(read > 200, "{read} of 300 read");
    assert!(exprs > 0, "the generator made no condition on a computed value");
}
