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

/// [`on_x86_64`] with `test` jumping to `le` (ERRNO(1)) or `la` (ALLOW).
fn errno_when(test: &str) -> String {
    on_x86_64(&format!("{test}le: ret #0x50001\nla: ret #0x7fff0000\n"))
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

/// Options that send every class to the solver whole (no argument word is
/// cut into runs).
fn solver_only() -> Options {
    Options { limits: Limits { max_word_runs: 0, ..Limits::default() }, ..Options::default() }
}

/// The classes are the intervals the constants cut: arch {0..0xc000003d,
/// 0xc000003e, above} and, on x86_64, nr {0, 1, 2, 3, 4..}: seven. Those
/// of arch other than x86_64 and nr 0, 1 and 4.. are the same constant on
/// both sides; nr 2 and 3 leave the same two residual programs, one
/// problem, decided once: `args[0].lo` cut into its three runs {0..6, 7,
/// 8..} (each a constant on both sides), or with no cut one solver call.
#[test]
fn classes_and_problems_are_counted_once() {
    let (v, s) = stats(&policy(LEFT), &policy(RIGHT), &Options::default());
    assert_eq!(v, Verdict::Equal);
    assert_eq!((s.classes, s.constant_classes, s.solver_calls, s.word_runs), (7, 0, 0, 3));
    assert_eq!((s.symbolic_arch, s.symbolic_nr), (false, 0));
    assert!(s.clauses == 0 && s.steps > 0);
    let (v, s) = stats(&policy(LEFT), &policy(RIGHT), &solver_only());
    assert_eq!(v, Verdict::Equal);
    assert_eq!((s.classes, s.constant_classes, s.solver_calls, s.word_runs), (7, 0, 1, 0));
    assert!(s.clauses > 0);
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
    assert_eq!((s.classes, s.constant_classes, s.solver_calls), (7, 1, 0));
    // The action alone: the same on every input.
    let action = Options { compare: Compare::Action, ..Options::default() };
    assert_eq!(stats(&left, &right, &action).0, Verdict::Equal);
}

/// `nr` through arithmetic is not classified: one symbolic class on
/// x86_64, where the filter reads it, and the other arches' single classes.
#[test]
fn a_field_through_arithmetic_stays_symbolic() {
    let left = errno_when("add #1\njeq #2, le, la\n");
    let right = errno_when("jeq #1, le, la\n");
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
    let left = errno_when("jset #0x40000000, le, la\n");
    let right =
        errno_when("jge #0xc0000000, le, lmid\nlmid: jge #0x80000000, la, llow\nllow: jge #0x40000000, le, la\n");
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
    let left = errno_when("jeq #1, le, la\n");
    let right = errno_when("jgt #1, la, lone\nlone: jge #1, le, la\n");
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
    let (v, s) = stats(left, right, &solver_only());
    assert!(matches!(v, Verdict::Differ(_)));
    // What the solver was given suffices for the cone, not for the graph.
    let options = Options {
        limits: Limits { max_clauses: s.clauses, max_word_runs: 0, ..Limits::default() },
        ..Options::default()
    };
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
    let p = Piece::Prog(Rc::new(prog("ld [0]\nld [16]\nret a\n")));
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

/// The verdict, the argument runs decided and the solver calls.
fn runs_and_calls(left: &str, right: &str, options: &Options) -> (Verdict, u64, u64) {
    let (v, s) = stats(left, right, options);
    (v, s.word_runs, s.solver_calls)
}

/// Cutting an argument word finds the one value that tells the sides
/// apart (`args[0].lo >= 100` against `> 100`): the run {100} of the
/// joint starts {0, 100, 101}, decided without the solver; the solver
/// finds the same value when nothing is cut.
#[test]
fn a_cut_word_finds_the_value_between_two_bounds() {
    let left = errno_when("ld [16]\njge #100, le, la\n");
    let right = errno_when("ld [16]\njgt #100, le, la\n");
    for (options, want) in [(Options::default(), (2, 0)), (solver_only(), (0, 1))] {
        let (v, runs, calls) = runs_and_calls(&left, &right, &options);
        let Verdict::Differ(found) = v else { panic!("equal") };
        assert_eq!((found[0].data.args[0], found[0].left, found[0].right), (100, 0x50001, 0x7fff_0000));
        // The runs {0..99} and {100}; the first difference ends the check.
        assert_eq!((runs, calls), want);
    }
}

/// Words are cut one after another (the fewest runs first), and the
/// counterexample carries every word fixed on its path: `args[0] == 5`
/// then `args[1].lo == 9` against `== 8`.
#[test]
fn nested_cuts_fix_every_word_of_the_counterexample() {
    let body = |k: u32| errno_when(&format!("ld [16]\njeq #5, lnext, la\nlnext: ld [24]\njeq #{k}, le, la\n"));
    let (v, s) = stats(&body(9), &body(8), &Options::default());
    let Verdict::Differ(found) = v else { panic!("equal") };
    assert_eq!(found[0].data.args[0] as u32, 5);
    assert!(matches!(found[0].data.args[1] as u32, 8 | 9), "{:?}", found[0]);
    assert_eq!(s.solver_calls, 0);
    assert!(s.word_runs >= 3, "{s:?}");
}

/// A masked word is cut on the runs of `word & mask` when both sides use
/// one mask (`& 0xf0 == 0x50` against `>= 0x50 && <= 0x50`); with another
/// mask on one side it goes to the solver.
#[test]
fn one_mask_on_both_sides_is_cut_on_the_masked_runs() {
    let left = errno_when("ld [16]\nand #0xf0\njeq #0x50, le, la\n");
    let right = errno_when("ld [16]\nand #0xf0\njge #0x50, lhi, la\nlhi: jgt #0x50, la, le\n");
    // word & 0xf0 in {0..0x4f}, {0x50}, {0x51..}: 0, 0x50 and 0x60.
    assert_eq!(runs_and_calls(&left, &right, &Options::default()), (Verdict::Equal, 3, 0));
    let other = right.replace("and #0xf0", "and #0x1f0");
    let (v, runs, calls) = runs_and_calls(&left, &other, &Options::default());
    let Verdict::Differ(found) = v else { panic!("equal") };
    assert_eq!(found[0].data.args[0] as u32 & 0x1f0, 0x150);
    assert_eq!((runs, calls), (0, 1));
}

/// A word in arithmetic is not cut; nor is one whose runs would pass
/// [`Limits::max_word_runs`] (a cut of exactly that many is made).
#[test]
fn words_no_cut_can_say_go_to_the_solver() {
    let left = errno_when("ld [16]\nadd #1\njeq #8, le, la\n");
    let right = errno_when("ld [16]\njeq #7, le, la\n");
    assert_eq!(runs_and_calls(&left, &right, &Options::default()), (Verdict::Equal, 0, 1));
    // args[0].lo has three runs: a bound of 3 cuts it, 2 does not.
    for (max_word_runs, want) in [(3, (3, 0)), (2, (0, 1))] {
        let narrow = Options { limits: Limits { max_word_runs, ..Limits::default() }, ..Options::default() };
        assert_eq!(runs_and_calls(&policy(LEFT), &policy(RIGHT), &narrow), (Verdict::Equal, want.0, want.1));
    }
}

/// The memo's key holds a fixed word's value when a piece reads it: the
/// same pieces with `args[0].lo` fixed to 5 and then to 6 are two
/// problems (equal, then not), not one answer reused.
#[test]
fn a_fixed_word_a_piece_reads_is_part_of_the_problem() {
    let limits = Limits::default();
    let mut spend = Spend::new(&limits);
    let mut decider = class::Decider::new(1, u32::MAX);
    let pieces =
        || vec![Piece::Prog(Rc::new(prog("ld [16]\njeq #5, l1, l2\nl1: ret #1\nl2: ret #2\n"))), Piece::Const(1)];
    let fixed = |v: u32| {
        let mut f: Fixed = [None; 16];
        f[4] = Some(v);
        f
    };
    assert_eq!(decider.decide(pieces(), fixed(5), 1, &mut spend).unwrap(), None);
    let words = decider.decide(pieces(), fixed(6), 1, &mut spend).unwrap().expect("differ");
    assert_eq!(words[4], 6);
    assert_eq!(spend.stats.solver_calls, 2);
}

/// A word tested with several masks has no runs one value stands for (its
/// runs are found bit by bit, or a single bit only splits it): it goes to
/// the solver, which finds the inputs where the sides differ (never "equal"
/// from the value 0 alone).
#[test]
fn a_word_with_several_masks_is_not_cut() {
    let allow = errno_when("ja la\n");
    for test in [
        // Two masks, neither inside the other (WordCuts::by_bits).
        "ld [16]\nand #0xf\njeq #3, le, lnext\nlnext: ld [16]\nand #0xf0\njeq #0x20, le, la\n",
        // A bit beside a whole-word test (WordCuts::split_bit).
        "ld [16]\njset #1, lnext, la\nlnext: jeq #5, le, la\n",
    ] {
        let (v, runs, calls) = runs_and_calls(&errno_when(test), &allow, &Options::default());
        let Verdict::Differ(found) = v else { panic!("{test}: equal") };
        assert_eq!(found[0].left, 0x50001, "{test}");
        assert_eq!((runs, calls), (0, 1), "{test}");
    }
}

/// `args[0].lo` of every syscall checked against `values` as libseccomp
/// lays out an allow-list ([`test_data::programs::allow_list`]): runs of
/// `jeq #k, allow`, then ERRNO(1); other arches KILL.
fn allow_list(values: &[u32]) -> Program {
    let list = test_data::programs::AllowList {
        nr: None,
        arg: 0,
        high_zero: false,
        run: test_data::programs::COMPACT_RUN,
        values,
    };
    let insns: Vec<cbpf::Insn> = test_data::programs::allow_list(&list)
        .into_iter()
        .map(|r| cbpf::Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k })
        .collect();
    cbpf::validate(&insns, Mode::Seccomp).unwrap()
}

/// Two allow-lists of 3,000 `ioctl`-like requests in different orders: a
/// cut of `args[0].lo` (6,001 runs) is past the plain bound (runs times
/// the programs' 6,000 instructions: 36M steps against the 16M budget),
/// priced by its sample at a few steps a value (the specialiser's binary
/// search over a `jeq` run) and made: no solver call. A request missing on
/// one side is found the same way.
#[test]
fn a_priced_cut_decides_a_long_allow_list() {
    let values: Vec<u32> = (0..3000).map(|i| 0x5400 + 7 * i).collect();
    let mut reordered = values.clone();
    for block in reordered.chunks_mut(250) {
        block.reverse();
    }
    let left = allow_list(&values);
    let decide = |right: &Program| check_with_stats(Side::single(&left), Side::single(right), &Options::default());
    let (v, s) = decide(&allow_list(&reordered)).unwrap();
    assert_eq!(v, Verdict::Equal);
    assert_eq!(s.solver_calls, 0, "{s:?}");
    assert_eq!(s.word_runs, 2 * 3000 + 1, "{s:?}");
    let missing = reordered[1234];
    reordered[1234] = missing + 1;
    let (v, s) = decide(&allow_list(&reordered)).unwrap();
    let Verdict::Differ(found) = v else { panic!("equal") };
    assert!([missing, missing + 1].contains(&(found[0].data.args[0] as u32)), "{found:?}");
    assert_eq!(s.solver_calls, 0, "{s:?}");
}

/// A cut whose sample misleads gives up at its ceiling (half the steps
/// left when it was priced) and the solver decides with the other half:
/// every sampled value of `args[0].lo` (n = 701 runs, sampled at every
/// `2 * 350 / 7`-th, all between the constants) leaves a `ret`, every
/// constant a 1,000-instruction tail. Without the ceiling the cut would
/// pass the budget (350 tails on each side, 700,000 steps of 600,000).
#[test]
fn a_cut_whose_sample_misleads_gives_up_at_its_ceiling() {
    let values: Vec<u32> = (1..=350).map(|i| 10 * i).collect();
    let side = |values: &[u32]| {
        let mut text = String::from("ld [4]\njeq #0xc000003e, lok\nret #0x80000000\nlok: ld [16]\n");
        for (b, block) in values.chunks(200).enumerate() {
            text.extend(block.iter().map(|v| format!("jeq #{v}, t{b}\n")));
            text.push_str(&format!("ja n{b}\nt{b}: ja tail\nn{b}: "));
        }
        text + "ret #0x50001\ntail: ld [24]\n" + &"add #1\n".repeat(1000) + "ret a\n"
    };
    let mut reversed = values.clone();
    reversed.reverse();
    let limits = Limits { max_steps: 600_000, ..Limits::default() };
    let options = Options { limits, ..Options::default() };
    let (v, s) = stats(&side(&values), &side(&reversed), &options);
    assert_eq!(v, Verdict::Equal);
    assert_eq!(s.solver_calls, 1, "{s:?}");
    assert!(s.word_runs > 0 && s.word_runs < 701, "{s:?}");
    assert!(s.steps <= 600_000, "{s:?}");
}
