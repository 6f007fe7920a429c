#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use super::*;

/// Values around every boundary an exit test has.
const EDGES: [u32; 12] =
    [0, 1, 2, 0x3f, 0x40, 0x7fff_fffe, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, 0xffff_fffe, 0xffff_ffff, 0x1234_5678];

/// A record that is just its test and a target pc.
#[derive(Debug, Clone, Copy)]
struct Plain {
    test: ExitTest,
    target: usize,
}

impl Record for Plain {
    fn test(&self) -> ExitTest {
        self.test
    }
    fn leaving(&self) -> Leaving {
        Leaving { target: self.target as u64, link: Link::Leave }
    }
}

fn table(tests: &[(Option<ExitTest>, usize)], padding: usize) -> Table<Plain> {
    let mut b = Builder::default();
    for &(t, target) in tests {
        b.push(t, target, 0);
    }
    b.finish(padding, |p| Plain { test: p.test, target: p.target })
}

/// Every way of reading a table finds the same first hit from `from`.
fn scans(t: &Table<Plain>, x: u32, from: usize) -> [Option<usize>; 4] {
    let target = |e: Option<&Plain>| e.map(|e| e.target);
    let passed = t.blocks_without_hit(x, from, t.built());
    [
        target(t.scan_window::<16, _>(from + passed, |e| e.hits(x), Some, || None)),
        target(t.first_hit_from(x, from, Some, || None)),
        target(t.exits[from..].iter().find(|e| e.test.hits(x))),
        target(t.scan_window::<16, _>(from + (passed / BLOCK) * BLOCK, |e| e.hits(x), Some, || None)),
    ]
}

#[test]
fn exit_tests_are_exactly_the_compares() {
    let mut values: Vec<u64> = EDGES.iter().map(|&k| u64::from(k)).collect();
    // Sign-extended eBPF immediates, at and past 2^32.
    values.extend([
        1 << 32,
        0xffff_ffff_8000_0000,
        0xffff_ffff_ffff_ffff,
        0xffff_ffff_ffff_fffe,
        0xffff_ffff_0000_0040,
    ]);
    let mut failures = Vec::new();
    for cond in Cond::ALL {
        for &v in &values {
            for outcome in [true, false] {
                let wide = ExitTest::of_wide(cond, v, outcome);
                if let Ok(k) = u32::try_from(v) {
                    assert_eq!(wide, ExitTest::of(cond, k, outcome));
                }
                // The flipped arrays of a table agree with the plain test.
                let t = table(&[(wide, 1), (Some(ExitTest::ALWAYS), 2)], 15);
                for &x in &EDGES {
                    let want = cond.eval(u64::from(x), v) == outcome;
                    let got = wide.is_some_and(|t| t.hits(x));
                    let by_range = wide.and_then(ExitTest::range).map(|(lo, span)| x.wrapping_sub(lo) <= span);
                    // Every test on the whole value is a range.
                    if wide.is_some_and(|t| t.mask == u32::MAX) && by_range.is_none() {
                        failures.push(format!("{cond:?} v {v:#x} {outcome}: full mask but no range"));
                    }
                    let scanned = scans(&t, x, 0).map(|s| s == Some(1));
                    if got != want || scanned.iter().any(|&s| s != want) || by_range.is_some_and(|r| r != want) {
                        failures.push(format!("{cond:?} v {v:#x} {outcome} x {x:#x}: {got} {scanned:?} {by_range:?}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tests_that_never_hit_are_none() {
    assert_eq!(ExitTest::of(Cond::Gt, u32::MAX, true), None);
    assert_eq!(ExitTest::of(Cond::Le, u32::MAX, false), None);
    assert_eq!(ExitTest::of(Cond::Ge, 0, false), None);
    assert_eq!(ExitTest::of(Cond::Lt, 0, true), None);
    assert_eq!(ExitTest::of(Cond::Set, 0, true), None);
    assert_eq!(ExitTest::of_wide(Cond::Eq, 1 << 32, true), None);
    assert_eq!(ExitTest::of_wide(Cond::Ne, 1 << 32, true), Some(ExitTest::ALWAYS));
    assert_eq!(ExitTest::ALWAYS.range(), Some((0, u32::MAX)));
    assert_eq!(ExitTest::of(Cond::Set, 0, false).and_then(ExitTest::range), Some((0, u32::MAX)));
    assert_eq!(ExitTest::of(Cond::Set, 4, false).and_then(ExitTest::range), None);
    // `x & 0` is 0: a mask-0 test that misses 0 misses every value, and no
    // range `x - lo <= span` misses every value.
    assert_eq!(ExitTest { mask: 0, lo: 1, span: 0 }.range(), None);
}

/// 40 tests `x == i % 13` leaving to `100 + i`, then the end: whatever the
/// start and the block boundaries, the first hit in program order wins
/// (evaluating past it changes nothing), and a miss ends at the chain's
/// `always`.
#[test]
fn block_scans_find_the_first_hit_in_program_order() {
    let mut tests: Vec<(Option<ExitTest>, usize)> =
        (0..40u32).map(|i| (ExitTest::of(Cond::Eq, i % 13, true), 100 + i as usize)).collect();
    tests.push((Some(ExitTest::ALWAYS), 999));
    let t = table(&tests, 15);
    assert_eq!(t.built(), 41);
    for from in 0..40usize {
        for x in [0u32, 1, 5, 12, 13, 99] {
            let want = (from..40).find(|&i| i as u32 % 13 == x).map_or(999, |i| 100 + i);
            assert_eq!(scans(&t, x, from), [Some(want); 4], "from {from} x {x}");
            // All ranges (`==`): the scan without the mask agrees.
            let passed = t.blocks_without_hit(x, from, t.built());
            let ranges = t.scan_window::<16, _>(from + passed, |e| e.hits_range(x), |e| Some(e.target), || None);
            assert_eq!(ranges, Some(want), "from {from} x {x}");
        }
    }
    // Padding: past the table, scans say so rather than read out of range.
    assert_eq!(t.first_hit_from(0, t.exits.len(), Some, || None).map(|e| e.target), None);
    assert_eq!(t.scan_window::<16, _>(t.exits.len() - 15, |e| e.hits(0), Some, || None).map(|e| e.target), None);
    assert_eq!(t.scan_window::<16, _>(t.exits.len() - 16, |e| e.hits(0), Some, || None).map(|e| e.target), Some(999));
    assert_eq!(t.blocks_without_hit(0, 30, 10), 0);
}

#[test]
fn tests_print_as_their_condition() {
    let show = |c, k, o| ExitTest::of(c, k, o).map(|t| t.to_string());
    assert_eq!(show(Cond::Eq, 59, true).as_deref(), Some("== 0x3b"));
    assert_eq!(show(Cond::Eq, 59, false).as_deref(), Some("!= 0x3b"));
    assert_eq!(show(Cond::Gt, 9, false).as_deref(), Some("<= 0x9"));
    assert_eq!(show(Cond::Gt, 9, true).as_deref(), Some(">= 0xa"));
    assert_eq!(show(Cond::Set, 6, true).as_deref(), Some("& 0x6 != 0"));
    assert_eq!(show(Cond::Set, 6, false).as_deref(), Some("& 0x6 == 0"));
    assert_eq!(ExitTest::ALWAYS.to_string(), "always");
    assert_eq!(ExitTest { mask: u32::MAX, lo: 5, span: 3 }.to_string(), "in 0x5..=0x8");
    // Shapes no compare makes print as the test itself: a range that wraps
    // past 0xffffffff, a masked test that is neither `!= 0` nor `== 0`.
    assert_eq!(
        ExitTest { mask: u32::MAX, lo: 0xffff_fff0, span: 0x20 }.to_string(),
        "(x & 0xffffffff) - 0xfffffff0 <= 0x20"
    );
    assert_eq!(ExitTest { mask: 6, lo: 1, span: 2 }.to_string(), "(x & 0x6) - 0x1 <= 0x2");
    let t = table(&[(ExitTest::of(Cond::Eq, 2, true), 7), (Some(ExitTest::ALWAYS), 9)], 3);
    assert_eq!(t.to_string(), "   0: == 0x2                   -> pc 7\n   1: always                   -> pc 9\n");
}

/// A program of `(pc, insn)`: compares on a value, reloads of word 0,
/// jumps, returns.
#[derive(Debug, Clone, Copy)]
enum Fake {
    Cmp(Cond, u32, usize, usize),
    Reload,
    Ja(usize),
    Ret,
}

struct FakeCode(Vec<Fake>);

impl Code for FakeCode {
    fn compare(&self, pc: usize) -> Option<Compare> {
        match *self.0.get(pc)? {
            Fake::Cmp(cond, k, taken, fall) => Some(Compare { cond, value: u64::from(k), jump_pc: pc, taken, fall }),
            _ => None,
        }
    }
    fn resolve(&self, mut pc: usize) -> (usize, u32) {
        let mut skip = 0;
        while let Some(&Fake::Ja(to)) = self.0.get(pc) {
            skip += (to - pc - 1) as u32;
            pc = to;
        }
        (pc, skip)
    }
    fn reloads(&self, pc: usize, word: u8) -> bool {
        word == 0 && matches!(self.0.get(pc), Some(Fake::Reload))
    }
}

/// `rungs` rungs of `ld; jeq #i, ret, next; ret`, then a final `ret`.
fn ladder(rungs: u32) -> FakeCode {
    let mut p = Vec::new();
    for i in 0..rungs {
        let at = p.len();
        p.extend([Fake::Reload, Fake::Cmp(Cond::Eq, i, at + 2, at + 3), Fake::Ret]);
    }
    p.push(Fake::Ret);
    FakeCode(p)
}

/// A rule ladder `ld; jne #1, next; ret; ld; jne #2, next; ret; ...`: one
/// chain, entered at each load, its misses going on through the reloads.
#[test]
fn ladders_walk_through_reloads() {
    let code = ladder(3);
    let mut built = Builder::default();
    let mut covered = vec![false; 10];
    let rules = Rules { word: Some(0), ..Rules::default() };
    let entries = walk(&code, &mut built, &mut covered, 0, 1, rules);
    let at: Vec<(usize, usize)> = entries.iter().map(|e| (e.pc, e.first)).collect();
    assert_eq!(at, [(0, 0), (3, 1), (6, 2)]);
    let tests: Vec<(String, usize)> = built.tests().iter().map(|t| (t.test.to_string(), t.target)).collect();
    let want = [("== 0x0", 2), ("== 0x1", 5), ("== 0x2", 8), ("always", 9)];
    assert_eq!(tests, want.map(|(t, pc)| (t.to_string(), pc)));
    assert!(matches!(code.0.get(9), Some(Fake::Ret)));
    // Without the word, the reload ends the chain at the first rung.
    let mut built = Builder::default();
    let entries = walk(&code, &mut built, &mut [false; 10], 1, 1, Rules::default());
    assert_eq!(entries.len(), 1);
    assert_eq!(built.len(), 2);
}

/// Walks stop where an earlier walk went, when told to, and jumps past
/// `ja` are counted.
#[test]
fn walks_stop_at_covered_pcs_and_count_skips() {
    let code = FakeCode(vec![
        Fake::Cmp(Cond::Eq, 1, 5, 1), // 0
        Fake::Cmp(Cond::Gt, 9, 2, 3), // 1: true to 2, false to 3
        Fake::Ja(4),                  // 2
        Fake::Cmp(Cond::Eq, 3, 5, 4), // 3
        Fake::Ret,                    // 4
        Fake::Ret,                    // 5
    ]);
    let mut covered = vec![false; 7];
    covered[3] = true;
    let mut built = Builder::default();
    let rules = Rules { stop_at_covered: true, ..Rules::default() };
    let entries = walk(&code, &mut built, &mut covered, 0, 0, rules);
    // Entered at each compare (no word).
    assert_eq!(entries.iter().map(|e| e.pc).collect::<Vec<_>>(), [0, 1]);
    let tests: Vec<(String, usize, u32)> =
        built.tests().iter().map(|t| (t.test.to_string(), t.target, t.skip)).collect();
    // `== 1` jumps over pcs 1..=4; the `jgt` leaves on true through the
    // `ja` (pc 3 jumped over) and falls to 3 (pc 2 jumped over), which is
    // covered, so the chain leaves there.
    assert_eq!(tests[0], ("== 0x1".to_string(), 5, 4));
    assert_eq!(tests[1], (">= 0xa".to_string(), 4, 1));
    assert_eq!(tests[2], ("always".to_string(), 3, 1));
}

/// The builder's bookkeeping and the single-test lookup the interpreters
/// use between scans.
#[test]
fn builder_counts_truncates_and_single_finds_one_test() {
    let mut b = Builder::default();
    assert!(b.is_empty());
    b.push(None, 1, 0);
    assert!(b.is_empty(), "a test that never hits is not kept");
    b.push(ExitTest::of(Cond::Eq, 2, true), 7, 0);
    b.push(ExitTest::of(Cond::Gt, 9, true), 8, 0);
    assert_eq!((b.len(), b.is_empty()), (2, false));
    b.truncate(1);
    assert_eq!(b.tests().iter().map(|p| p.target).collect::<Vec<_>>(), [7]);
    let t = b.finish(0, |p| Plain { test: p.test, target: p.target });
    assert_eq!(t.single(2, 0).map(|e| e.target), Some(7));
    assert_eq!(t.single(3, 0).map(|e| e.target), None);
    assert_eq!(t.single(2, 1).map(|e| e.target), None);
}

/// `next_compare` goes through a reload only of the chain's word and only
/// onto a compare; `rejoins` looks at both sides, through `ja`.
#[test]
fn next_compare_and_rejoins() {
    let code = FakeCode(vec![
        Fake::Reload,                 // 0
        Fake::Cmp(Cond::Eq, 3, 4, 2), // 1: taken 4, false 2
        Fake::Reload,                 // 2
        Fake::Ret,                    // 3
        Fake::Cmp(Cond::Eq, 3, 5, 6), // 4
        Fake::Ja(7),                  // 5
        Fake::Ret,                    // 6
        Fake::Ret,                    // 7
    ]);
    assert_eq!(code.next_compare(0, Some(0)), Some(1));
    assert_eq!(code.next_compare(0, None), None);
    assert_eq!(code.next_compare(1, None), Some(1));
    assert_eq!(code.next_compare(2, Some(0)), None, "a reload onto a return");
    assert_eq!(code.next_compare(3, Some(0)), None, "not a reload, though a compare follows");
    assert!(code.rejoins(1, 4), "taken side");
    assert!(code.rejoins(1, 2), "false side");
    assert!(!code.rejoins(1, 3));
    assert!(code.rejoins(4, 7), "through the ja");
    assert!(!code.rejoins(4, 5), "ja resolved, not its pc");
    assert!(!code.rejoins(0, 1), "not a compare");
}

/// With `rejoin_detours`, a compare whose false side is a compare that
/// rejoins the taken side is walked along the taken side; without it, or
/// when the false side does not rejoin, along the false side. A compare
/// that goes on to compares on both sides (not a detour) is a tree node:
/// its entry and its test say so.
#[test]
fn walks_follow_the_taken_side_past_detours() {
    type Walked = (Vec<String>, Vec<(usize, bool)>);
    let walked = |fall_rejoins: bool, rejoin_detours: bool| -> Walked {
        let back = if fall_rejoins { 2 } else { 5 };
        let code = FakeCode(vec![
            Fake::Cmp(Cond::Gt, 5, 2, 1),    // 0
            Fake::Cmp(Cond::Eq, 3, back, 4), // 1: the false side, a detour if it goes to 2
            Fake::Cmp(Cond::Eq, 7, 4, 5),    // 2
            Fake::Ret,                       // 3
            Fake::Ret,                       // 4
            Fake::Ret,                       // 5
        ]);
        let mut built = Builder::default();
        let rules = Rules { rejoin_detours, ..Rules::default() };
        let entries = walk(&code, &mut built, &mut [false; 6], 0, 0, rules);
        let tests =
            built.tests().iter().map(|t| format!("{} -> {}{}", t.test, t.target, ["", " tree"][usize::from(t.tree)]));
        (tests.collect(), entries.iter().map(|e| (e.pc, e.tree)).collect())
    };
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        walked(true, true),
        (strings(&["<= 0x5 -> 1", "== 0x7 -> 4", "always -> 5"]), vec![(0, false), (2, false)])
    );
    assert_eq!(
        walked(true, false),
        (
            strings(&[">= 0x6 -> 2 tree", "!= 0x3 -> 4", "== 0x7 -> 4", "always -> 5"]),
            vec![(0, true), (1, false), (2, false)]
        )
    );
    assert_eq!(
        walked(false, true),
        (strings(&[">= 0x6 -> 2 tree", "== 0x3 -> 5", "always -> 4"]), vec![(0, true), (1, false)])
    );
}

/// With a word and `stop_at_covered`, a rung whose reload or compare
/// another walk covered ends the chain at the reload.
#[test]
fn ladders_stop_where_the_reload_or_the_compare_is_covered() {
    let code = ladder(3);
    let rules = Rules { word: Some(0), stop_at_covered: true, ..Rules::default() };
    for covered_pc in [3, 4] {
        let mut covered = vec![false; 10];
        covered[covered_pc] = true;
        let mut built = Builder::default();
        walk(&code, &mut built, &mut covered, 0, 1, rules);
        let tests: Vec<(String, usize)> = built.tests().iter().map(|t| (t.test.to_string(), t.target)).collect();
        assert_eq!(tests, [("== 0x0".to_string(), 2), ("always".to_string(), 3)], "pc {covered_pc} covered");
    }
}

/// `n` equalities on `keys` (exit i leaves to pc i), after `prefix` other
/// tests (`x > 1000 + j`, leaving to pc 1000 + j), then the sentinel
/// (pc 999).
fn eq_chain(prefix: usize, keys: &[u32]) -> Table<Plain> {
    let mut tests: Vec<(Option<ExitTest>, usize)> =
        (0..prefix).map(|j| (ExitTest::of(Cond::Gt, 1000 + j as u32, true), 1000 + j)).collect();
    tests.extend(keys.iter().enumerate().map(|(i, &k)| (ExitTest::of(Cond::Eq, k, true), i)));
    tests.push((Some(ExitTest::ALWAYS), 999));
    table(&tests, BLOCK - 1)
}

/// Table `set`'s exit for every `x` entering at test `from` is the first
/// exit a plain scan of `t` from `from` hits.
fn assert_lookup_is_scan(
    t: &Table<Plain>,
    sets: &EqSets,
    set: u16,
    from: usize,
    xs: impl IntoIterator<Item = u32>,
    context: &str,
) {
    for x in xs {
        let want = t.exits[from..].iter().find(|e| e.test.hits(x)).map(|e| e.target);
        let dead = Plain { test: ExitTest::ALWAYS, target: usize::MAX };
        assert_eq!(Some(sets.exit(t, set, x, from, &dead).target), want, "{context} from {from} x {x}");
    }
}

#[test]
fn eq_sets_answer_as_the_scan_from_every_entry() {
    let keys: Vec<u32> = (0..40).map(|i| (i * 7) % 41 + 3).collect();
    for prefix in [0, 2, 4] {
        let t = eq_chain(prefix, &keys);
        let to = prefix + keys.len();
        let sets = EqSets::build(&t, [to, to]);
        assert_eq!(sets.len(), 1);
        for from in 0..=to {
            let Some(set) = sets.set_of(from, to) else {
                panic!("prefix {prefix}: no set from {from}");
            };
            let xs = (0..60u32).chain([1000, 1001, 1003, 1004, u32::MAX]);
            assert_lookup_is_scan(&t, &sets, set, from, xs, &format!("prefix {prefix}"));
        }
    }
}

#[test]
fn eq_sets_take_a_last_inequality_before_the_sentinel() {
    // `== k_i -> i` for all keys but the last, `!= k_last -> 999`, then
    // the sentinel leaving to the last key's exit.
    let keys: Vec<u32> = (0..40).map(|i| (i * 7) % 41 + 3).collect();
    let (last, rest) = keys.split_last().unwrap();
    let mut tests: Vec<(Option<ExitTest>, usize)> =
        rest.iter().enumerate().map(|(i, &k)| (ExitTest::of(Cond::Eq, k, true), i)).collect();
    tests.push((ExitTest::of(Cond::Ne, *last, true), 999));
    tests.push((Some(ExitTest::ALWAYS), keys.len() - 1));
    let t = table(&tests, BLOCK - 1);
    let to = keys.len();
    let sets = EqSets::build(&t, [to]);
    for from in 0..to {
        let set = sets.set_of(from, to).unwrap();
        assert_lookup_is_scan(&t, &sets, set, from, 0..60u32, "");
    }
}

#[test]
fn eq_sets_take_repeated_constants_for_the_ops_from_their_start_only() {
    let keys = test_data::eq_keys::repeated();
    for prefix in [0, 2, 4] {
        let t = eq_chain(prefix, &keys);
        let to = prefix + keys.len();
        let sets = EqSets::build(&t, [to]);
        assert_eq!(sets.len(), 1, "prefix {prefix}");
        for from in 0..=to {
            match sets.set_of(from, to) {
                Some(set) => {
                    assert!(from <= prefix, "prefix {prefix}: a table from {from}, inside the run");
                    let xs = (0..60u32).chain([299, 300, 301, u32::MAX]);
                    assert_lookup_is_scan(&t, &sets, set, from, xs, &format!("prefix {prefix}"));
                }
                // Past the run's first test a later 7 or 5 would be missed.
                None => assert!(from > prefix, "prefix {prefix}: no table from {from}"),
            }
        }
    }
}

#[test]
fn eq_sets_refuse_short_runs_spread_keys_and_long_prefixes() {
    for (name, keys) in test_data::eq_keys::refused(eq_set::MIN_TESTS as u32 - 1) {
        let t = eq_chain(0, &keys);
        assert!(EqSets::build(&t, [keys.len()]).is_empty(), "{name}: {keys:?}");
    }
    let keys: Vec<u32> = (0..32).collect();
    let t = eq_chain(5, &keys);
    let sets = EqSets::build(&t, [5 + 32]);
    assert_eq!((sets.set_of(0, 37), sets.set_of(1, 37), sets.set_of(1, 36)), (None, Some(0), None));
}
