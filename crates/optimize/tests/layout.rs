//! `optimize::lay_out` on hand-made partitions: residuals that read A or X
//! at entry see 0 there (not `nr` or `arch`), jumps past 255 reach their
//! targets through landings, unnamed arches get their outcome, only
//! `ld [0]`/`ld [4]`, `jeq`/`jge #k`, `ja` and `ret #k` lead to a constant,
//! and switches (argument trees) send each value of their word, masked,
//! to its run's child, or are laid out as the residual they stand for
//! when that is shorter.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use cbpf::{validate, Insn, Interp, Mode, SeccompData};
use seccomp::fast::{ArchPartition, Cut, Outcome, Partition, PartitionResidual};

const X86_64: u32 = 0xc000_003e;
const ALLOW: u32 = 0x7fff_0000;

fn residual(insns: &[Insn], reads_a: bool, reads_x: bool) -> PartitionResidual {
    PartitionResidual { program: validate(insns, Mode::Seccomp).unwrap(), reads_a, reads_x }
}

#[test]
fn residuals_start_from_a_filters_entry_state_and_far_targets_are_reached() {
    let ret_a = Insn::stmt(0x16, 0);
    let mut long = vec![Insn::stmt(0x20, 16); 400];
    long.push(ret_a);
    // Many alternating ranges: a deep tree whose early nodes jump far.
    let mut ranges = vec![(0, Outcome::Residual(0)), (10, Outcome::Action(ALLOW)), (300, Outcome::Residual(1))];
    for i in 0..300u32 {
        let o = if i % 2 == 0 { Outcome::Action(i) } else { Outcome::Residual(3) };
        ranges.push((1000 + 2 * i, o));
    }
    let partition = Partition {
        arches: vec![ArchPartition { arch: X86_64, ranges: ranges.clone(), cut: Cut::Classes }],
        any_arch: None,
        other_arches: Outcome::Residual(2),
        residuals: vec![
            residual(&[ret_a], true, false),                      // `ret a`: 0 at a filter's start
            residual(&[Insn::stmt(0x87, 0), ret_a], false, true), // `txa; ret a`
            residual(&[Insn::stmt(0x20, 16), ret_a], false, false),
            residual(&long, false, false),
        ],
        switches: Vec::new(),
    };
    let (insns, stats) = optimize::lay_out(&partition);
    let out = validate(&insns, Mode::Seccomp).unwrap();
    assert!(stats.landings > 0, "{stats:?}");
    assert!(stats.tree_depth <= 12, "{stats:?}");
    let interp = Interp::new(&out);
    let run = |arch: u32, nr: u32| {
        let d = SeccompData { nr: nr as i32, arch, args: [0x55, 0, 0, 0, 0, 0], ..Default::default() };
        interp.run_seccomp(&d.to_bytes()).unwrap()
    };
    for nr in [0, 5, 9] {
        assert_eq!(run(X86_64, nr), 0, "nr {nr}: residual 0 must see A = 0");
    }
    assert_eq!(run(X86_64, 10), ALLOW);
    assert_eq!(run(X86_64, 300), 0, "residual 1 must see X = 0");
    for i in 0..300u32 {
        let want = if i % 2 == 0 { i } else { 0x55 };
        assert_eq!(run(X86_64, 1000 + 2 * i), want, "range {i}");
        assert_eq!(run(X86_64, 1001 + 2 * i), want, "range {i}");
    }
    assert_eq!(run(0xc000_00b7, 10), 0x55, "unnamed arch: residual 2");
    // The constant leaves are cached by the kernel's emulator.
    assert!(seccomp::cache::seccomp_is_const_allow(&insns, 10, X86_64, X86_64));
    assert!(!seccomp::cache::seccomp_is_const_allow(&insns, 5, X86_64, X86_64));
}

/// More than four arches: a tree over the arch values; each arch reaches
/// its own block, every other arch (between, below, above) the outcome for
/// unnamed arches, and the constant leaves stay cacheable.
#[test]
fn many_arches_dispatch_through_a_tree() {
    let arches: Vec<u32> = (0..10u32).map(|i| 0x4000_0000 + 7 * i).chain([0, u32::MAX]).collect();
    let partition = Partition {
        arches: arches
            .iter()
            .enumerate()
            .map(|(i, &arch)| ArchPartition {
                arch,
                // Two arches share each list: shared blocks.
                ranges: vec![(0, Outcome::Action(ALLOW)), (100 + i as u32 / 2, Outcome::Action(i as u32 / 2))],
                cut: Cut::Classes,
            })
            .collect(),
        any_arch: None,
        other_arches: Outcome::Action(0x8000_0000),
        residuals: Vec::new(),
        switches: Vec::new(),
    };
    let (insns, stats) = optimize::lay_out(&partition);
    let out = validate(&insns, Mode::Seccomp).unwrap();
    assert_eq!(stats.blocks, 6, "{stats:?}");
    assert!(optimize::longest_path(&insns) <= 12, "{}", cbpf::text::print_asm(&insns));
    let interp = Interp::new(&out);
    let run = |arch: u32, nr: u32| {
        let d = SeccompData { nr: nr as i32, arch, ..Default::default() };
        interp.run_seccomp(&d.to_bytes()).unwrap()
    };
    for (i, &arch) in arches.iter().enumerate() {
        let i = i as u32;
        assert_eq!(run(arch, 5), ALLOW, "arch {arch:#x}");
        assert_eq!(run(arch, 100 + i / 2), i / 2, "arch {arch:#x}");
        assert!(seccomp::cache::seccomp_is_const_allow(&insns, 5, arch, arch));
        for other in [arch.wrapping_add(1), arch.wrapping_sub(1)] {
            if !arches.contains(&other) {
                assert_eq!(run(other, 5), 0x8000_0000, "arch {other:#x}");
            }
        }
    }
}

/// A tree: `args[0].lo & 0xfffffe7f` in runs (an `and` and a tree), one
/// child a `jset` of masked bits on `args[1].lo`, another a residual that
/// reads A at entry; and a switch whose tree is longer than the residual
/// it stands for, laid out as that residual.
#[test]
fn switches_send_each_value_to_its_runs_child() {
    use seccomp::fast::Switch;
    const ERRNO: u32 = 0x0005_0016;
    let ret_a = Insn::stmt(0x16, 0);
    let partition = Partition {
        arches: vec![ArchPartition {
            arch: X86_64,
            ranges: vec![
                (0, Outcome::Action(ALLOW)),
                (202, Outcome::Switch(1)),
                (203, Outcome::Action(ALLOW)),
                (300, Outcome::Switch(2)),
                (301, Outcome::Action(0)),
            ],
            cut: Cut::Classes,
        }],
        any_arch: None,
        other_arches: Outcome::Action(0),
        residuals: vec![
            residual(&[ret_a], true, false),
            // What switch 1 stands for (never run: the tree is laid out,
            // as it is shorter).
            residual(&[vec![Insn::stmt(0x20, 16); 40], vec![Insn::stmt(0x06, 1)]].concat(), false, false),
            // What switch 2 stands for: one instruction, shorter than it.
            residual(&[Insn::stmt(0x06, 2)], false, false),
        ],
        switches: vec![
            // args[1].lo: no bit of 0xfffffffc set -> ALLOW, else ERRNO.
            Switch {
                offset: 24,
                mask: 0xffff_fffc,
                ranges: vec![(0, Outcome::Action(ALLOW)), (4, Outcome::Action(ERRNO))],
                residual: 1,
            },
            // args[0].lo & 0xfffffe7f: 0 -> switch 0, 1 -> residual 0
            // (returns A: 0), 9 -> ALLOW, else ERRNO.
            Switch {
                offset: 16,
                mask: 0xffff_fe7f,
                ranges: vec![
                    (0, Outcome::Switch(0)),
                    (1, Outcome::Residual(0)),
                    (2, Outcome::Action(ERRNO)),
                    (9, Outcome::Action(ALLOW)),
                    (10, Outcome::Action(ERRNO)),
                ],
                residual: 1,
            },
            Switch {
                offset: 16,
                mask: u32::MAX,
                ranges: vec![(0, Outcome::Action(3)), (1, Outcome::Action(4)), (5, Outcome::Action(5))],
                residual: 2,
            },
        ],
    };
    let (insns, stats) = optimize::lay_out(&partition);
    assert_eq!(stats.switches, 2, "{stats:?}");
    let out = validate(&insns, Mode::Seccomp).unwrap();
    let interp = Interp::new(&out);
    let run = |nr: i32, args: [u64; 6]| {
        let d = SeccompData { nr, arch: X86_64, args, ..Default::default() };
        interp.run_seccomp(&d.to_bytes()).unwrap()
    };
    for op in [0u64, 0x80, 0x100, 0x180, 0xffff_ffff_0000_0000] {
        assert_eq!(run(202, [op, 3, 0, 0, 0, 0]), ALLOW, "op {op:#x}");
        assert_eq!(run(202, [op, 4, 0, 0, 0, 0]), ERRNO, "op {op:#x}");
        assert_eq!(run(202, [op | 1, 0, 0, 0, 0, 0]), 0, "op {op:#x}: residual 0 sees A = 0");
        assert_eq!(run(202, [op | 9, 0, 0, 0, 0, 0]), ALLOW, "op {op:#x}");
        assert_eq!(run(202, [op | 8, 0, 0, 0, 0, 0]), ERRNO, "op {op:#x}");
        assert_eq!(run(202, [op | 0x8000_0009, 0, 0, 0, 0, 0]), ERRNO, "op {op:#x}");
    }
    assert_eq!(run(300, [0; 6]), 2, "switch 2 is laid out as its residual");
    assert_eq!(run(201, [0; 6]), ALLOW);
    // The `jset` of masked bits: no `and` for switch 0.
    assert!(insns.iter().any(|i| i.code == 0x45 && i.k == 0xffff_fffc), "{}", cbpf::text::print_asm(&insns));
}

/// A tree over thousands of ranges, each lone number its own value: past
/// the planner's budget (`optimize::plan::MAX_DP_WORK`) its parts are
/// split in the middle, and every number still gets its value.
#[test]
fn a_tree_split_past_the_planners_budget_keeps_every_value() {
    let errno = |i: u32| 0x0005_0000 | i;
    let mut ranges = Vec::new();
    for i in 0..1200u32 {
        ranges.push((2 * i, Outcome::Action(errno(i))));
        ranges.push((2 * i + 1, Outcome::Action(ALLOW)));
    }
    let partition = Partition {
        arches: vec![ArchPartition { arch: X86_64, ranges, cut: Cut::Classes }],
        any_arch: None,
        other_arches: Outcome::Action(0),
        residuals: Vec::new(),
        switches: Vec::new(),
    };
    let (insns, stats) = optimize::lay_out(&partition);
    assert!(stats.plan_budget_spent, "{stats:?}");
    let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
    for nr in 0..2410u32 {
        let d = SeccompData { nr: nr as i32, arch: X86_64, ..Default::default() };
        let want = if nr % 2 == 0 && nr < 2400 { errno(nr / 2) } else { ALLOW };
        assert_eq!(interp.run_seccomp(&d.to_bytes()).unwrap(), want, "nr {nr}");
    }
    // The depth bound of the plans: ceil(log2 2400) + 2.
    assert!(stats.tree_depth <= 12 + 2, "{stats:?}");
}

/// The layout's tree plans share one budget of work
/// (`optimize::plan::MAX_DP_WORK`): a filter whose `ret A` returns its
/// `nr` (libFuzzer's `planner_cubic_on_ret_nr`, a timeout before the
/// budget) has thousands of nr ranges with a value each, past what the
/// planner may weigh; its trees are split in the middle instead, and the
/// stats say so.
#[test]
fn a_layout_of_thousands_of_distinct_ranges_spends_the_planners_budget() {
    // st M[4]; or #k; ld [4]; jset #8, +4, +2; and x; jeq x, +0, +3;
    // add x; ld [60]; ld [0]; add x (14 times); ret a.
    let mut insns = vec![
        Insn::stmt(0x02, 4),
        Insn::stmt(0x44, 0x477f_a852),
        Insn::stmt(0x20, 4),
        Insn::jump(0x45, 8, 4, 2),
        Insn::stmt(0x5c, 0),
        Insn::jump(0x1d, 0, 0, 3),
        Insn::stmt(0x0c, 0),
        Insn::stmt(0x20, 60),
        Insn::stmt(0x20, 0),
    ];
    insns.extend([Insn::stmt(0x0c, 0); 14]);
    insns.push(Insn::stmt(0x16, 0));
    let program = validate(&insns, Mode::Seccomp).unwrap();
    let mut budget = seccomp::analysis::Budget::new(1 << 20, 1 << 10, 1 << 14);
    let built = optimize::build(&program, &mut budget).unwrap();
    let layout = &built.stats.layout;
    assert!(layout.ranges > 4000, "{layout:?}");
    assert!(layout.plan_budget_spent, "{layout:?}");
    assert!(layout.budget_note().is_some_and(|n| n.contains("spent its budget")));
    // Longer than the input: kept, as before the budget.
    assert!(built.stats.kept_input.is_some(), "{:?}", built.stats);
    // A filter the planner has budget for says nothing.
    let small = validate(
        &[Insn::stmt(0x20, 0), Insn::jump(0x15, 3, 0, 1), Insn::stmt(0x06, 0), Insn::stmt(0x06, ALLOW)],
        Mode::Seccomp,
    )
    .unwrap();
    let built = optimize::build(&small, &mut seccomp::analysis::Budget::new(1 << 20, 1 << 10, 1 << 14)).unwrap();
    assert!(!built.stats.layout.plan_budget_spent && built.stats.layout.budget_note().is_none());
}

/// Preferring depth takes a longer output only when it is shallower: a
/// `jset` on `nr` (every number a range of its own, a path of 2 in the
/// input) lays out longer and no shallower, so the input is kept as with
/// the size-first rule.
#[test]
fn depth_preferred_keeps_an_input_the_layout_does_not_make_shallower() {
    let jset = [Insn::stmt(0x20, 0), Insn::jump(0x45, 1, 0, 1), Insn::stmt(0x06, ALLOW), Insn::stmt(0x06, 0)];
    let program = validate(&jset, Mode::Seccomp).unwrap();
    for prefer in [optimize::Prefer::Size, optimize::Prefer::Depth] {
        let built = optimize::build_preferring(&program, &mut Default::default(), prefer).unwrap();
        let kept = built.stats.kept_input;
        assert!(matches!(kept, Some(optimize::KeptInput::Larger { output }) if output > 4), "{prefer:?}: {kept:?}");
        assert_eq!(built.program.original(), &jset[..]);
    }
}
