//! Every pair of layouts of one policy in testdata is proved equal; pairs
//! of different policies differ, with a counterexample the classic
//! interpreter confirms (`check` re-runs it; here it is re-run again).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use cbpf::{Mode, Program};
use equiv::{check_with_stats, Compare, Options, Side, SideRunner, Verdict};

fn load(rel: &str) -> Program {
    let path = format!("{}/../../testdata/{rel}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    cbpf::validate(&cbpf::raw::decode(&bytes).unwrap(), Mode::Seccomp).unwrap()
}

/// The policies of testdata and their layouts.
const POLICIES: &[&[&str]] = &[
    &[
        "filters/allow306_front.bpf",
        "filters/allow306_middle.bpf",
        "filters/allow306_end.bpf",
        "filters/allow306_default.bpf",
        "filters/allow306_opt2.bpf",
    ],
    &["filters/long_jumps_large.bpf", "filters/long_jumps_large_opt2.bpf"],
    &["filters/long_jumps_short.bpf", "filters/long_jumps_short_opt2.bpf"],
    &["filters/seed_slow.bpf", "filters/seed_slow_opt2.bpf"],
    &["profiles/docker_like.bpf", "profiles/docker_like_opt2.bpf"],
];

#[test]
fn layouts_of_one_policy_are_equal() {
    for policy in POLICIES {
        for (i, a) in policy.iter().enumerate() {
            for b in &policy[i + 1..] {
                let (pa, pb) = (load(a), load(b));
                let (v, stats) = check_with_stats(Side::single(&pa), Side::single(&pb), &Options::default()).unwrap();
                assert_eq!(v, Verdict::Equal, "{a} vs {b} ({stats:?})");
            }
        }
    }
}

#[test]
fn different_policies_differ_with_confirmed_counterexamples() {
    let all: Vec<&str> = POLICIES.iter().map(|p| p[0]).chain(["filters/seed_fast.bpf"]).collect();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            let (pa, pb) = (load(a), load(b));
            let (ra, rb) = (SideRunner::new(Side::single(&pa)), SideRunner::new(Side::single(&pb)));
            for compare in [Compare::Value, Compare::Action] {
                for all_classes in [false, true] {
                    let options = Options { compare, all: all_classes, ..Options::default() };
                    let (v, stats) = check_with_stats(Side::single(&pa), Side::single(&pb), &options).unwrap();
                    let Verdict::Differ(cexs) = v else { panic!("{a} vs {b}: equal ({stats:?})") };
                    assert!(!cexs.is_empty());
                    assert!(all_classes || cexs.len() == 1);
                    let mask = if compare == Compare::Value { u32::MAX } else { 0xffff_0000 };
                    for c in cexs {
                        let (l, r) = (ra.value(&c.data), rb.value(&c.data));
                        assert_eq!((l, r), (c.left, c.right), "{a} vs {b}");
                        assert_ne!(l & mask, r & mask, "{a} vs {b}: {c:?}");
                    }
                }
            }
        }
    }
}
