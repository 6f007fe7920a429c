//! Small hand-made pairs that need the solver: arithmetic on the
//! arguments, `M[]`, `jset`, `ret A`, division by zero, stacks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use cbpf::{Mode, Program};
use equiv::{check_with_stats, side_value, Compare, Options, Side, Verdict};

fn prog(text: &str) -> Program {
    let (_, insns) = cbpf::text::parse_auto(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"));
    cbpf::validate(&insns, Mode::Seccomp).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn verdict(a: &[&str], b: &[&str], compare: Compare) -> Verdict {
    let (pa, pb): (Vec<Program>, Vec<Program>) =
        (a.iter().map(|t| prog(t)).collect(), b.iter().map(|t| prog(t)).collect());
    let (l, r) = (Side::stack(&pa).unwrap(), Side::stack(&pb).unwrap());
    let options = Options { compare, all: true, ..Options::default() };
    let (v, stats) = check_with_stats(l, r, &options).unwrap();
    if let Verdict::Differ(cexs) = &v {
        for c in cexs {
            assert_eq!((side_value(l, &c.data), side_value(r, &c.data)), (c.left, c.right));
        }
    }
    eprintln!("{stats:?}");
    v
}

fn equal(a: &str, b: &str) {
    assert_eq!(verdict(&[a], &[b], Compare::Value), Verdict::Equal, "{a}\n--- vs ---\n{b}");
}

fn differ(a: &str, b: &str) -> Vec<equiv::Counterexample> {
    match verdict(&[a], &[b], Compare::Value) {
        Verdict::Differ(c) => c,
        Verdict::Equal => panic!("equal:\n{a}\n--- vs ---\n{b}"),
    }
}

#[test]
fn arithmetic_identities_are_proved() {
    equal("ld [16]\nmul #4\nret a\n", "ld [16]\nlsh #2\nret a\n");
    equal(
        "ld [16]\nadd #1\njeq #5, la, lb\nla: ret #1\nlb: ret #2\n",
        "ld [16]\njeq #4, la, lb\nla: ret #1\nlb: ret #2\n",
    );
    equal("ld [16]\nand #0xff\nret a\n", "ld [16]\nlsh #24\nrsh #24\nret a\n");
    equal("ld [16]\nneg\nneg\nret a\n", "ld [16]\nret a\n");
    equal("ld [16]\nxor #0xffffffff\nret a\n", "ld [16]\nneg\nsub #1\nret a\n");
    // Shifts by 32 or more shift by the count modulo 32.
    equal("ld [16]\nldx #33\nlsh x\nret a\n", "ld [16]\nlsh #1\nret a\n");
    equal("ld [16]\nst M[3]\nld #7\nldx M[3]\ntxa\nret a\n", "ld [16]\nret a\n");
    equal(
        "ld [20]\njset #0x80000000, la, lb\nla: ret #1\nlb: ret #2\n",
        "ld [20]\njge #0x80000000, la, lb\nla: ret #1\nlb: ret #2\n",
    );
}

#[test]
fn near_misses_are_found() {
    let c = differ(
        "ld [16]\nadd #1\njeq #5, la, lb\nla: ret #1\nlb: ret #2\n",
        "ld [16]\njeq #5, la, lb\nla: ret #1\nlb: ret #2\n",
    );
    assert!(c.iter().all(|c| c.data.args[0] as u32 == 4 || c.data.args[0] as u32 == 5), "{c:?}");
    differ("ld [16]\nmul #3\nret a\n", "ld [16]\nlsh #1\nret a\n");
    let c = differ(
        "ld [60]\njgt #0x7fffffff, la, lb\nla: ret #1\nlb: ret #2\n",
        "ld [60]\njge #0x7fffffff, la, lb\nla: ret #1\nlb: ret #2\n",
    );
    assert!(c.iter().all(|c| c.data.args[5] >> 32 == 0x7fff_ffff), "{c:?}");
}

#[test]
fn division_by_zero_returns_zero() {
    // A / X with X = args[1]: 0 when X == 0, so the pair differs only there.
    let c = differ("ld [24]\ntax\nld [16]\ndiv x\nret #0x7fff0000\n", "ret #0x7fff0000\n");
    assert!(c.iter().all(|c| c.data.args[1] as u32 == 0), "{c:?}");
    assert_eq!(c[0].left, 0);
    equal(
        "ld [24]\ntax\nld #12\ndiv x\njeq #0, lz, lnz\nlz: ret #0\nlnz: ret #0x7fff0000\n",
        "ld [24]\njeq #0, lz, l2\nl2: jgt #12, lz, lok\nlz: ret #0\nlok: ret #0x7fff0000\n",
    );
}

#[test]
fn nr_and_arch_through_arithmetic_stay_symbolic() {
    equal(
        "ld [0]\nadd #1\njeq #60, la, lb\nla: ret #0\nlb: ret #0x7fff0000\n",
        "ld [0]\njeq #59, la, lb\nla: ret #0\nlb: ret #0x7fff0000\n",
    );
    let c = differ("ld [4]\nand #0xff\nret a\n", "ld [4]\nret a\n");
    assert!(c.iter().all(|c| c.data.arch > 0xff), "{c:?}");
}

#[test]
fn stacks_combine_with_the_kernels_precedence() {
    let allow = "ret #0x7fff0000\n";
    let errno = "ld [0]\njeq #1, la, lb\nla: ret #0x50001\nlb: ret #0x7fff0000\n";
    let trap = "ld [0]\njeq #1, la, lb\nla: ret #0x30000\nlb: ret #0x7fff0000\n";
    // ERRNO beats ALLOW; the stack is the ERRNO filter.
    assert_eq!(verdict(&[allow, errno], &[errno], Compare::Value), Verdict::Equal);
    // TRAP (0x00030000) is more restrictive than ERRNO (0x00050000).
    assert_eq!(verdict(&[errno, trap], &[trap], Compare::Value), Verdict::Equal);
    assert!(matches!(verdict(&[errno, trap], &[errno], Compare::Value), Verdict::Differ(_)));
    // Data differs, action does not.
    let errno2 = "ld [0]\njeq #1, la, lb\nla: ret #0x50002\nlb: ret #0x7fff0000\n";
    assert!(matches!(verdict(&[errno], &[errno2], Compare::Value), Verdict::Differ(_)));
    assert_eq!(verdict(&[errno], &[errno2], Compare::Action), Verdict::Equal);
}

#[test]
fn prove_answers_equal_the_first_counterexample_or_why_not() {
    let errno = prog("ld [0]\njeq #1, la, lb\nla: ret #0x50001\nlb: ret #0x7fff0000\n");
    let trap = prog("ld [0]\njeq #1, la, lb\nla: ret #0x30000\nlb: ret #0x7fff0000\n");
    let options = Options::default();
    assert_eq!(equiv::prove(Side::single(&errno), Side::single(&errno), &options), Ok(()));
    match equiv::prove(Side::single(&errno), Side::single(&trap), &options) {
        Err(equiv::NotProved::Differ(c)) => assert_eq!((c.data.nr, c.left, c.right), (1, 0x50001, 0x30000)),
        other => panic!("{other:?}"),
    }
    // A budget of one step gives no verdict, said as such.
    let tight = Options { limits: equiv::Limits { max_steps: 1, ..Default::default() }, ..Options::default() };
    match equiv::prove(Side::single(&errno), Side::single(&trap), &tight) {
        Err(equiv::NotProved::Undecided(equiv::EquivError::Budget { .. })) => {}
        other => panic!("{other:?}"),
    }
}
