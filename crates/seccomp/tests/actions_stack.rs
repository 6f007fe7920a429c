#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Actions, precedence (SPEC §5.2) and filter chains (SPEC §5.3).

use proptest::prelude::*;
use seccomp::action::*;
use seccomp::stack::{combine, evaluate_stack, evaluate_stack_cached, Stack};
use seccomp::SeccompData;

/// The eight actions as values, most restrictive first, per SPEC §5.2.
const RANKED: [u32; 8] = [
    0x8000_0000, // KILL_PROCESS
    0x0000_0000, // KILL_THREAD
    0x0003_0000, // TRAP
    0x0005_0000, // ERRNO
    0x7fc0_0000, // USER_NOTIF
    0x7ff0_0000, // TRACE
    0x7ffc_0000, // LOG
    0x7fff_0000, // ALLOW
];

#[test]
fn precedence_table_every_pair() {
    for (i, &a) in RANKED.iter().enumerate() {
        for (j, &b) in RANKED.iter().enumerate() {
            let (a, b) = (Action::from_u32(a), Action::from_u32(b));
            assert_eq!(a.wins_over(b), i < j, "{a} vs {b}");
            // Two-filter chains in both orders pick the more restrictive one.
            let want = if i <= j { a } else { b };
            assert_eq!(Action::from_u32(combine([a.to_u32(), b.to_u32()])).rank(), want.rank(), "{a},{b}");
        }
    }
    assert_eq!(Action::PRECEDENCE.map(Action::to_u32), RANKED);
}

#[test]
fn unknown_actions_rank_by_signed_value_and_act_as_kill_process() {
    // 0x80010000 is less negative than KILL_PROCESS but below KILL_THREAD;
    // 0x7ffe0000 sits between LOG and ALLOW.
    let odd = [0x0001_0000u32, 0x7ffe_0000, 0x8001_0000, 0xffff_0000, 0x0004_0000];
    for u in odd {
        assert_eq!(Action::from_u32(u), Action::Unknown(u));
        assert_eq!(Outcome::of(u), Outcome::KillProcess, "{u:#x}");
        for &known in &RANKED {
            let want_unknown = action_only(u) < action_only(known);
            assert_eq!(Action::from_u32(u).wins_over(Action::from_u32(known)), want_unknown, "{u:#x} vs {known:#x}");
        }
    }
    assert!(Action::Unknown(0x8001_0000).wins_over(Action::KillThread));
    assert!(!Action::Unknown(0x8001_0000).wins_over(Action::KillProcess));
    assert!(Action::Unknown(0x7ffe_0000).wins_over(Action::Allow));
    assert!(!Action::Unknown(0x7ffe_0000).wins_over(Action::Log));
    assert_eq!(combine([0x7fff_0000, 0x7ffe_0000]), 0x7ffe_0000);
}

#[test]
fn outcome_follows_seccomp_filter_cases() {
    assert_eq!(Outcome::of(0x0005_ffff), Outcome::Errno(4095));
    assert_eq!(Outcome::of(0x0005_0001), Outcome::Errno(1));
    assert_eq!(Outcome::of(0x0003_0009), Outcome::Trap(9));
    assert_eq!(Outcome::of(0x7ff0_0005), Outcome::Trace(5));
    assert_eq!(Outcome::of(0x7fc0_0000), Outcome::UserNotif);
    assert_eq!(Outcome::of(0x7ffc_0000), Outcome::Log);
    assert_eq!(Outcome::of(0x7fff_1234), Outcome::Allow);
    assert_eq!(Outcome::of(0x0000_0042), Outcome::KillThread);
    assert_eq!(Outcome::of(0x8000_0042), Outcome::KillProcess);
}

#[test]
fn parses_other_spellings() {
    for (text, v) in [
        ("allow", 0x7fff_0000),
        ("SCMP_ACT_ALLOW", 0x7fff_0000),
        ("SECCOMP_RET_ALLOW", 0x7fff_0000),
        ("KILL", 0),
        ("SCMP_ACT_KILL", 0),
        ("SCMP_ACT_KILL_PROCESS", 0x8000_0000),
        ("SCMP_ACT_ERRNO(1)", 0x0005_0001),
        ("errno(0x10)", 0x0005_0010),
        ("TRAP", 0x0003_0000),
        ("SCMP_ACT_TRACE(5)", 0x7ff0_0005),
        ("NOTIFY", 0x7fc0_0000),
        ("SCMP_ACT_LOG", 0x7ffc_0000),
        ("0x7fff0001", 0x7fff_0001),
        ("2147418112", 0x7fff_0000),
    ] {
        assert_eq!(text.parse::<Action>().unwrap().to_u32(), v, "{text}");
    }
    for bad in ["", "ALLOWED", "ERRNO(70000)", "ALLOW(1)", "ERRNO(1", "0x1_0000_0000"] {
        assert!(bad.parse::<Action>().is_err(), "{bad}");
    }
}

#[test]
fn chain_ties_keep_newest_data_and_allow_data_is_dropped() {
    // Newest first: ERRNO(1) (newest) and ERRNO(2) tie; the newest wins.
    assert_eq!(combine([0x0005_0001, 0x0005_0002]), 0x0005_0001);
    assert_eq!(combine([0x0005_0002, 0x0005_0001]), 0x0005_0002);
    // ALLOW with data: the initial ALLOW is never replaced by an equal rank.
    assert_eq!(combine([0x7fff_0001]), 0x7fff_0000);
    assert_eq!(combine([0x7fff_0001, 0x7fff_0002]), 0x7fff_0000);
    // LOG vs ALLOW: LOG wins.
    assert_eq!(combine([0x7fff_0000, 0x7ffc_0000]), 0x7ffc_0000);
    // Empty list: KILL_PROCESS.
    assert_eq!(combine(std::iter::empty()), 0x8000_0000);
}

#[test]
fn generic_engine_api_and_chain_order() {
    // "Filters" here are the constant they return.
    let filters = [0x0005_0001u32, 0x7fff_0000, 0x0005_0002];
    let data = SeccompData::new(0xc000_003e, 39);
    let mut calls = Vec::new();
    let got = evaluate_stack(&filters, &data, |f, d| {
        calls.push(*f);
        assert_eq!(d.nr, 39);
        *f
    });
    assert_eq!(got, 0x0005_0001);
    assert_eq!(calls, filters, "every filter runs, newest first");
    let cached = evaluate_stack_cached(&filters, &data, |_, _| true, |_, _| panic!("cache hit runs nothing"));
    assert_eq!(cached, 0x7fff_0000);
    let mut chain = Stack::new();
    chain.attach(0x0005_0002u32); // oldest
    chain.attach(0x0005_0001u32); // newest
    assert_eq!(chain.newest_first().copied().collect::<Vec<_>>(), [0x0005_0001, 0x0005_0002]);
    assert_eq!(chain.evaluate(&data, |f, _| *f), 0x0005_0001);
}

proptest! {
    #[test]
    fn action_round_trips(v in any::<u32>()) {
        let a = Action::from_u32(v);
        prop_assert_eq!(a.to_u32(), v);
        prop_assert_eq!(a.to_string().parse::<Action>().unwrap(), a);
    }

    #[test]
    fn combine_is_the_min_by_signed_rank_keeping_the_first(results in proptest::collection::vec(any::<u32>(), 1..6)) {
        let got = combine(results.iter().copied());
        let best = results.iter().map(|&r| action_only(r)).min().unwrap();
        if best < action_only(0x7fff_0000) {
            let first = results.iter().copied().find(|&r| action_only(r) == best).unwrap();
            prop_assert_eq!(got, first);
        } else {
            prop_assert_eq!(got, 0x7fff_0000);
        }
    }
}
