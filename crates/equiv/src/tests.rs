//! The check's own rules: what counts as a step and where the budgets
//! stop it, which classes it counts, which problems it solves once, and
//! the masked comparison of results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use super::*;

fn prog(text: &str) -> Program {
    let (_, insns) = cbpf::text::parse_auto(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"));
    cbpf::validate(&insns, Mode::Seccomp).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A filter for x86_64 only (other arches KILL): `ld [0]`, then `body`,
/// which may jump to `lkill`.
fn on_x86_64(body: &str) -> String {
    format!("ld [4]\njeq #0xc000003e, lok, lkill\nlok: ld [0]\n{body}lkill: ret #0x80000000\n")
}

/// The policy of [`LEFT`] and [`RIGHT`]: `nr` 1 gets ERRNO(1), the rest
/// what `middle` decides.
fn policy(middle: &str) -> String {
    on_x86_64(&format!("jeq #1, le1, ltwo\n{middle}le1: ret #0x50001\nlallow: ret #0x7fff0000\n"))
}

/// `nr` 2 and 3 get the same argument check (`args[0] == 7` gets
/// ERRNO(1)), the rest ALLOW.
const LEFT: &str = "ltwo: jeq #2, lchk, lthree\nlthree: jeq #3, lchk, lallow\nlchk: ld [16]\njeq #7, le1, lallow\n";

/// [`LEFT`] written otherwise: `nr` 2 and 3 by one range, the argument
/// check as `7 <= args[0] <= 7`.
const RIGHT: &str =
    "ltwo: jge #2, lthree, lallow\nlthree: jgt #3, lallow, lchk\nlchk: ld [16]\njge #7, lle, lallow\nlle: jgt #7, lallow, le1\n";

fn stats(left: &str, right: &str, options: &Options) -> (Verdict, Stats) {
    let (l, r) = (prog(left), prog(right));
    check_with_stats(Side::single(&l), Side::single(&r), options).unwrap()
}

/// The classes are the intervals the constants cut: arch {0..0xc000003d,
/// 0xc000003e, above} and, on x86_64, nr {0, 1, 2, 3, 4..}: seven. Those
/// of arch other than x86_64 and nr 0, 1 and 4.. are the same constant on
/// both sides; nr 2 and 3 leave the same two residual programs, one
/// problem for the solver, asked once.
#[test]
fn classes_and_problems_are_counted_once() {
    let (v, s) = stats(&policy(LEFT), &policy(RIGHT), &Options::default());
    assert_eq!(v, Verdict::Equal);
    assert_eq!((s.classes, s.constant_classes, s.solver_calls), (7, 0, 1));
    assert_eq!((s.symbolic_arch, s.symbolic_nr), (false, 0));
    assert!(s.clauses > 0 && s.steps > 0);
}

/// A class both sides answer with different constants is decided without
/// the solver and counted; with `all`, every differing class is.
#[test]
fn differing_constants_need_no_solver() {
    let (left, right) = (policy(LEFT), policy(RIGHT).replacen("le1: ret #0x50001", "le1: ret #0x50002", 1));
    let all = Options { all: true, ..Options::default() };
    let (v, s) = stats(&left, &right, &all);
    let Verdict::Differ(found) = v else { panic!("equal") };
    // nr 1 (constants), nr 2 and 3 (the argument check: one problem).
    let nrs: Vec<i32> = found.iter().map(|c| c.data.nr).collect();
    assert_eq!(nrs, [1, 2, 3]);
    assert!(found.iter().skip(1).all(|c| c.data.args[0] as u32 == 7));
    assert_eq!((s.classes, s.constant_classes, s.solver_calls), (7, 1, 1));
    // The action alone: the same on every input.
    let action = Options { compare: Compare::Action, ..Options::default() };
    assert_eq!(stats(&left, &right, &action).0, Verdict::Equal);
}

/// `nr` through arithmetic is not classified: one symbolic class on
/// x86_64, where the filter reads it, and the other arches' single classes.
#[test]
fn a_field_through_arithmetic_stays_symbolic() {
    let left = on_x86_64("add #1\njeq #2, le, la\nle: ret #0x50001\nla: ret #0x7fff0000\n");
    let right = on_x86_64("jeq #1, le, la\nle: ret #0x50001\nla: ret #0x7fff0000\n");
    let (v, s) = stats(&left, &right, &Options::default());
    assert_eq!(v, Verdict::Equal);
    assert_eq!((s.classes, s.symbolic_arch, s.symbolic_nr, s.solver_calls), (3, false, 1, 1));
    let (v, s) = stats("ld [4]\nadd #1\nret a\n", "ld [4]\nadd #1\nret a\n", &Options::default());
    assert_eq!(v, Verdict::Equal);
    assert!(s.symbolic_arch);
}

/// A `jset` of a high bit of `nr` (the x32 bit) cuts runs as an order test
/// does: the left side's bit test and the right side's `jge`s give the
/// classes {0, 2^30, 2^31, 3 * 2^30} on x86_64, and one on each other arch
/// (arch 0 and above x86_64's), none symbolic.
#[test]
fn a_high_bit_jset_of_nr_cuts_classes() {
    let left = on_x86_64("jset #0x40000000, le, la\nle: ret #0x50001\nla: ret #0x7fff0000\n");
    let right = on_x86_64(
        "jge #0xc0000000, le, lmid\nlmid: jge #0x80000000, la, llow\nllow: jge #0x40000000, le, la\n\
         le: ret #0x50001\nla: ret #0x7fff0000\n",
    );
    let (v, s) = stats(&left, &right, &Options::default());
    assert_eq!(v, Verdict::Equal);
    assert_eq!((s.classes, s.symbolic_arch, s.symbolic_nr, s.solver_calls), (6, false, 0, 0));
    let wrong = right.replacen("jge #0xc0000000", "jge #0xc0000001", 1);
    let (v, _) = stats(&left, &wrong, &Options::default());
    let Verdict::Differ(found) = v else { panic!("equal") };
    assert_eq!(found[0].data.nr as u32, 0xc000_0000);
}

/// [`Limits::max_steps`] as documented: the scans, one plus the visited
/// instructions of each filter's specialisation per class (here every
/// class is a constant on both sides, so nothing is blasted). A check that
/// spends exactly its budget answers; one step less is undecided.
#[test]
fn steps_are_counted_as_documented_and_the_budget_is_inclusive() {
    let left = on_x86_64("jeq #1, le, la\nle: ret #0x50001\nla: ret #0x7fff0000\n");
    let right = on_x86_64("jgt #1, la, lone\nlone: jge #1, le, la\nle: ret #0x50001\nla: ret #0x7fff0000\n");
    let (v, s) = stats(&left, &right, &Options::default());
    assert_eq!(v, Verdict::Equal);
    let (l, r) = (prog(&left), prog(&right));
    let total = (l.len() + r.len()) as u64;
    let arches: [u32; 3] = [0, 0xc000_003e, 0xc000_003f];
    let classes: Vec<(u32, Option<u32>)> = vec![
        (0, Some(0)),
        (0xc000_003e, Some(0)),
        (0xc000_003e, Some(1)),
        (0xc000_003e, Some(2)),
        (0xc000_003f, Some(0)),
    ];
    let mut want = (1 + arches.len() as u64) * total;
    for p in [&l, &r] {
        let mut partial = Partial::new(p).unwrap();
        for &(arch, nr) in &classes {
            assert!(matches!(partial.specialize(Some(arch), nr), PartialResult::Constant(_)));
            want += partial.last_work() as u64 + 1;
        }
    }
    assert_eq!((s.classes, s.steps), (classes.len() as u64, want));
    for (max_steps, answers) in [(want, true), (want - 1, false)] {
        let options = Options { limits: Limits { max_steps, ..Limits::default() }, ..Options::default() };
        let got = check(Side::single(&l), Side::single(&r), &options);
        match got {
            Ok(Verdict::Equal) => assert!(answers, "{max_steps}"),
            Err(EquivError::Budget { kind: BudgetKind::Steps, limit }) => {
                assert!(!answers && limit == max_steps, "{max_steps}")
            }
            other => panic!("{max_steps}: {other:?}"),
        }
    }
}

/// Every node of the circuit counts against the clause budget (three
/// clauses each), not only the cone the solver is given: the merge of X
/// at the join builds nodes no result depends on.
#[test]
fn the_clause_budget_bounds_the_whole_circuit() {
    let left = "ld [24]\njeq #1, lp, lq\nlp: ld [16]\ntax\nja ljoin\nlq: ld [20]\ntax\nljoin: ld [24]\njeq #1, lr1, lr2\nlr1: ret #1\nlr2: ret #2\n";
    let right = "ld [24]\njeq #1, lr1, lr2\nlr1: ret #1\nlr2: ret #3\n";
    let (v, s) = stats(left, right, &Options::default());
    assert!(matches!(v, Verdict::Differ(_)));
    // What the solver was given suffices for the cone, not for the graph.
    let options = Options { limits: Limits { max_clauses: s.clauses, ..Limits::default() }, ..Options::default() };
    let (l, r) = (prog(left), prog(right));
    let got = check(Side::single(&l), Side::single(&r), &options);
    assert_eq!(got, Err(EquivError::Budget { kind: BudgetKind::Clauses, limit: s.clauses }));
}

#[test]
fn budget_kinds_name_their_bound_and_flag() {
    let kinds = [BudgetKind::Steps, BudgetKind::Conflicts, BudgetKind::Clauses, BudgetKind::Propagations];
    let said: Vec<(String, &str)> = kinds.iter().map(|k| (k.to_string(), k.flag())).collect();
    assert_eq!(
        said,
        [
            ("abstract steps".to_string(), "--max-steps"),
            ("solver conflicts".to_string(), "--max-conflicts"),
            ("solver clauses".to_string(), "--max-clauses"),
            ("solver propagations".to_string(), "--max-conflicts"),
        ]
    );
    let e = EquivError::Budget { kind: BudgetKind::Clauses, limit: 9 };
    assert_eq!(e.to_string(), "undecided: more than 9 solver clauses");
}

/// The memo's key holds arch or nr only where a piece reads the word.
#[test]
fn a_piece_reads_the_words_its_program_loads() {
    let p = Piece::Prog(prog("ld [0]\nld [16]\nret a\n").insns().to_vec());
    let reads: Vec<u32> = (0..16).map(|w| 4 * w).filter(|&off| p.reads(off)).collect();
    assert_eq!(reads, [0, 16]);
    assert!(!Piece::Const(0).reads(0));
}

#[test]
fn results_differ_in_the_compared_bits_only() {
    let action = mask(Compare::Action);
    assert!(!differs(0x0005_0001, 0x0005_0002, action));
    assert!(differs(0x0005_0001, 0x0003_0001, action));
    assert!(differs(0x0005_0001, 0x0005_0002, mask(Compare::Value)));
    assert!(!differs(0x8000_0000, 0x8000_0000, mask(Compare::Value)));
    assert!(differs(0x8000_0000, 0, action));
}
