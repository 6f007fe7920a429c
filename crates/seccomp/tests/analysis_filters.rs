#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The constant-action analysis on the libseccomp filters of testdata/filters,
//! checked against their kernel-checked vectors, plus explain and audit.

use std::collections::HashMap;

use seccomp::analysis::{
    analyze, audit, compared_arches, compared_nrs, explain, ActionResult, Analyzer, Field, FindingKind, Operand,
    Relation,
};

use seccomp::action::SECCOMP_RET_ALLOW as ALLOW;
use seccomp::arch::AUDIT_ARCH_X86_64 as X86_64;
const KILL_THREAD: u32 = 0;

mod common;
use common::{filter_names, load};

/// (arch, nr, action) of every vector of `NAME.vectors.jsonl` and
/// `NAME.sim_only.jsonl`.
fn vectors(name: &str) -> Vec<(u32, u32, u32)> {
    common::vectors(name).into_iter().map(|(_, d, action)| (d.arch, d.nr as u32, action)).collect()
}

#[test]
fn constant_promises_match_every_vector() {
    let mut failures = Vec::new();
    let mut checked = 0usize;
    let mut promised = 0usize;
    for name in filter_names() {
        let prog = load(&name);
        let mut analyzer = Analyzer::new(&prog).unwrap();
        let mut memo: HashMap<(u32, u32), ActionResult> = HashMap::new();
        for (arch, nr, action) in vectors(&name) {
            checked += 1;
            let result = memo.entry((arch, nr)).or_insert_with(|| analyzer.result(arch, nr));
            match result {
                ActionResult::Constant(v) => {
                    promised += 1;
                    if *v != action {
                        failures.push(format!(
                            "{name}: arch {arch:#x} nr {nr:#x}: promised {v:#x}, vector says {action:#x}"
                        ));
                    }
                }
                // Only the filters with argument rules may depend on
                // more than arch and nr.
                ActionResult::Depends(deps) if !common::has_argument_rules(&name) => {
                    failures.push(format!("{name}: arch {arch:#x} nr {nr:#x}: no promise (depends on {deps:?})"));
                }
                ActionResult::Depends(_) => {}
            }
        }
    }
    eprintln!("{checked} vectors, {promised} covered by a constant promise");
    assert!(checked > 20_000, "only {checked} vectors read");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn allow306_every_x86_64_number_is_constant() {
    let mut failures = Vec::new();
    for name in filter_names().iter().filter(|n| n.starts_with("allow306")) {
        let prog = load(name);
        let mut nrs: Vec<u32> = (0..=460).collect();
        nrs.extend(compared_nrs(&prog, X86_64).unwrap());
        for entry in analyze(&prog, X86_64, nrs).unwrap() {
            // libseccomp: x32 numbers are killed, except -1 which (like any
            // number not allowed) gets the default ERRNO(EPERM).
            let expected = match entry.nr {
                0..=305 => ALLOW,
                u32::MAX => 0x0005_0001,
                0x4000_0000.. => KILL_THREAD,
                _ => 0x0005_0001,
            };
            match entry.result {
                ActionResult::Constant(v) if v == expected => {}
                other => failures.push(format!("{name}: nr {:#x}: expected {expected:#x}, got {other:?}", entry.nr)),
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn compared_constants() {
    let prog = load("seed_fast");
    assert_eq!(compared_arches(&prog).unwrap(), vec![X86_64]);
    // The x32 range check, the -1 check and getppid.
    assert_eq!(compared_nrs(&prog, X86_64).unwrap(), vec![110, 0x4000_0000, u32::MAX]);
    assert_eq!(compared_nrs(&prog, 0x4000_0003).unwrap(), Vec::<u32>::new());
    let mut nrs = compared_nrs(&load("allow306_default"), X86_64).unwrap();
    nrs.retain(|&n| n < 0x4000_0000);
    assert_eq!(nrs, (0..=305).collect::<Vec<u32>>());
}

#[test]
fn long_jumps_chdir_depends_on_its_three_arguments() {
    for name in ["long_jumps_large", "long_jumps_large_opt2"] {
        let prog = load(name);
        let entries = analyze(&prog, X86_64, [3, 12, 80]).unwrap();
        assert_eq!(entries[0].result, ActionResult::Constant(ALLOW), "{name}: close");
        assert_eq!(entries[1].result, ActionResult::Constant(ALLOW), "{name}: brk");
        let ActionResult::Depends(deps) = &entries[2].result else { panic!("{name}: chdir is constant") };
        // The high halves appear because libseccomp compares 64-bit values.
        for f in [Field::ArgLo(0), Field::ArgHi(0), Field::ArgLo(1), Field::ArgLo(2), Field::ArgHi(2)] {
            assert!(deps.contains(&f), "{name}: chdir deps {deps:?} lack {f}");
        }
        assert!(!deps.iter().any(|f| matches!(f, Field::IpLo | Field::IpHi | Field::ArgLo(3..) | Field::ArgHi(3..))));
    }
}

#[test]
fn explain_long_jumps_lists_chdir_conditions() {
    let prog = load("long_jumps_large");
    let policy = explain(&prog, X86_64, [3, 12, 80, 110]).unwrap();
    let allow = policy.actions.iter().find(|r| r.action == ALLOW).expect("allow rules");
    assert_eq!(allow.always, vec![3, 12]);
    let chdir = allow.when.iter().find(|p| p.nr == 80).expect("chdir allowed under conditions");
    assert!(!chdir.truncated);
    // 100 rules chdir(A0 == i, A1 != 0, A2 < SSIZE_MAX), i = 0..99: every
    // allowing path pins args[0].lo to one i.
    let mut pinned: Vec<u32> = chdir
        .paths
        .iter()
        .filter_map(|path| {
            path.iter().find_map(|c| match (&c.lhs, c.rel, &c.rhs) {
                (Operand::Field(Field::ArgLo(0)), Relation::Eq, Operand::Const(k)) => Some(*k),
                _ => None,
            })
        })
        .collect();
    pinned.sort_unstable();
    pinned.dedup();
    assert_eq!(pinned, (0..100).collect::<Vec<u32>>());
    let example = chdir.paths[0].iter().map(ToString::to_string).collect::<Vec<_>>().join(" && ");
    assert!(example.contains("args[0].lo == "), "{example}");
    let kill = policy.actions.iter().find(|r| r.action == KILL_THREAD).expect("kill rules");
    assert_eq!(kill.always, vec![110]);
    assert!(kill.when.iter().any(|p| p.nr == 80));
}

#[test]
fn audit_of_libseccomp_filters_finds_no_structural_problems() {
    let mut failures = Vec::new();
    for name in filter_names() {
        for finding in audit(&load(&name)).unwrap() {
            match finding.kind {
                // OpenSSH's x86_64 filter has no x32 test: every x32
                // number misses its `jeq`s and gets the default KILL.
                FindingKind::X32NotHandled { .. } if name == "sshd_preauth" => {}
                // allow306 allows 0..=305, which does not include io_uring,
                // and libseccomp checks arch and x32 first.
                FindingKind::NoArchCheck
                | FindingKind::X32NotHandled { .. }
                | FindingKind::DefaultAllow { .. }
                | FindingKind::RetA
                | FindingKind::IoUringOpen { .. } => failures.push(format!("{name}: {finding}")),
                // libseccomp ends allow306_* with a `ret KILL` nothing jumps
                // to (checked by hand: no jump targets it, the insn before is
                // a ret); every other instruction is reachable.
                FindingKind::Unreachable { count: 1 }
                    if name.starts_with("allow306") && finding.pc.map(|p| p.0 + 1) == Some(load(&name).len()) => {}
                FindingKind::Unreachable { .. } => failures.push(format!("{name}: {finding}")),
                _ => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn analyze_whole_table_of_largest_filter() {
    // No timing assertion; the figure is printed for the report.
    let prog = load("long_jumps_large_opt2");
    let start = std::time::Instant::now();
    let entries = analyze(&prog, X86_64, 0..=460).unwrap();
    eprintln!("long_jumps_large_opt2 ({} insns): 461 numbers in {:?}", prog.len(), start.elapsed());
    let dependent = entries.iter().filter(|e| matches!(e.result, ActionResult::Depends(_))).count();
    // 0..=100 except brk (12) and close (3): the "A0 != 0" syscalls,
    // chdir (80) among them.
    assert_eq!(dependent, 99);
}
