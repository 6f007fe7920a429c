//! `optimize::lay_out` on hand-made partitions: residuals that read A or X
//! at entry see 0 there (not `nr` or `arch`), jumps past 255 reach their
//! targets through landings, unnamed arches get their outcome, only
//! `ld [0]`/`ld [4]`, `jeq`/`jge #k`, `ja` and `ret #k` lead to a constant,
//! and switches (argument trees) send each value of their word, masked,
//! to its run's child, or are laid out as the residual they stand for
//! when that is shorter (at the boundary: a tree no longer than its
//! residual wins). And the shapes: residuals after their last user, the
//! layout's figures exactly, a lone residual or switch as the entry, a
//! `jset` only at a power of two of masked bits.

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

/// `ret #k` as the residual a range or a switch stands for.
fn ret(k: u32) -> PartitionResidual {
    residual(&[Insn::stmt(0x06, k)], false, false)
}

/// A residual of `len` instructions (`ld [16]`s, then `ret #k`).
fn long_ret(len: usize, k: u32) -> PartitionResidual {
    let mut insns = vec![Insn::stmt(0x20, 16); len - 1];
    insns.push(Insn::stmt(0x06, k));
    residual(&insns, false, false)
}

const I386: u32 = 0x4000_0003;

/// A partition of x86_64's and i386's ranges, in that order.
fn x86_64_and_i386(
    x86_64: Vec<(u32, Outcome)>,
    i386: Vec<(u32, Outcome)>,
    other_arches: Outcome,
    residuals: Vec<PartitionResidual>,
) -> Partition {
    let arch = |arch, ranges| ArchPartition { arch, ranges, cut: Cut::Classes };
    Partition {
        arches: vec![arch(X86_64, x86_64), arch(I386, i386)],
        any_arch: None,
        other_arches,
        residuals,
        switches: Vec::new(),
    }
}

/// A residual used by two arches' blocks, and one used by a block and by
/// the outcome of unnamed arches, are each laid out after their last user
/// (classic jumps only go forward): every arch reaches them.
#[test]
fn residuals_shared_by_blocks_and_the_dispatch_follow_their_last_user() {
    let partition = x86_64_and_i386(
        vec![(0, Outcome::Residual(0)), (10, Outcome::Action(ALLOW)), (20, Outcome::Residual(1))],
        vec![(0, Outcome::Action(ALLOW)), (5, Outcome::Residual(0)), (6, Outcome::Action(0))],
        Outcome::Residual(1),
        vec![ret(100), ret(200)],
    );
    let (insns, stats) = optimize::lay_out(&partition);
    assert_eq!((stats.blocks, stats.landings), (2, 0), "{stats:?}");
    let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
    let run =
        |arch: u32, nr: i32| interp.run_seccomp(&SeccompData { nr, arch, ..Default::default() }.to_bytes()).unwrap();
    let listing = cbpf::text::print_asm(&insns);
    for (arch, nr, want) in
        [(X86_64, 0, 100), (X86_64, 9, 100), (X86_64, 10, ALLOW), (X86_64, 20, 200), (I386, 4, ALLOW)]
            .into_iter()
            .chain([(I386, 5, 100), (I386, 6, 0), (0xc000_00b7, 5, 200), (0, 20, 200)])
    {
        assert_eq!(run(arch, nr), want, "arch {arch:#x} nr {nr}\n{listing}");
    }
}

/// The layout's figures, exactly: x86_64's tree of four ranges is two
/// levels deep (`jge #9`, then `jeq #3` on a background of ALLOW), and
/// each jump past 255 instructions gets a landing: x86_64's tree a copy of
/// the `ret #ALLOW` laid out after i386's tree, over x86_64's
/// 300-instruction residual, and the arch dispatch a `ja` to i386's block.
#[test]
fn layout_figures_count_tree_levels_and_ret_copies() {
    let partition = x86_64_and_i386(
        vec![
            (0, Outcome::Action(ALLOW)),
            (3, Outcome::Residual(0)),
            (4, Outcome::Action(ALLOW)),
            (9, Outcome::Action(1)),
        ],
        vec![(0, Outcome::Action(ALLOW)), (7, Outcome::Action(2))],
        Outcome::Action(0),
        vec![long_ret(300, 100)],
    );
    let (insns, stats) = optimize::lay_out(&partition);
    let listing = cbpf::text::print_asm(&insns);
    assert_eq!((stats.tree_depth, stats.landings, stats.ranges), (2, 2, 6), "{stats:?}\n{listing}");
    assert_eq!(insns.iter().filter(|i| i.code == 0x06 && i.k == ALLOW).count(), 2, "{listing}");
    assert_eq!(insns.iter().filter(|i| i.code == 0x05).count(), 1, "{listing}");
    let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
    let run =
        |arch: u32, nr: i32| interp.run_seccomp(&SeccompData { nr, arch, ..Default::default() }.to_bytes()).unwrap();
    for (nr, want) in [(0, ALLOW), (2, ALLOW), (3, 100), (4, ALLOW), (8, ALLOW), (9, 1)] {
        assert_eq!(run(X86_64, nr), want, "nr {nr}\n{listing}");
    }
    assert_eq!((run(I386, 6), run(I386, 7)), (ALLOW, 2));
    // The mirror image: `jge #9`, then `jeq #12` on ALLOW on its right.
    let right_deep = Partition {
        arches: vec![ArchPartition {
            arch: X86_64,
            ranges: vec![
                (0, Outcome::Action(1)),
                (9, Outcome::Action(ALLOW)),
                (12, Outcome::Residual(0)),
                (13, Outcome::Action(ALLOW)),
            ],
            cut: Cut::Classes,
        }],
        residuals: vec![ret(100)],
        ..partition
    };
    let (insns, stats) = optimize::lay_out(&right_deep);
    assert_eq!((stats.tree_depth, stats.landings), (2, 0), "{stats:?}\n{}", cbpf::text::print_asm(&insns));
}

/// A filter whose entry is a residual or a switch (one block, one range;
/// or no arch named and unnamed arches sent to it) starts with it: no
/// `ja` in front, exactly its instructions and the `ret`s it leads to.
#[test]
fn a_lone_residual_or_switch_is_the_programs_start() {
    use seccomp::fast::Switch;
    let lone = |any_arch: Option<Vec<(u32, Outcome)>>, other: Outcome| Partition {
        arches: Vec::new(),
        any_arch,
        other_arches: other,
        residuals: vec![long_ret(3, 100), long_ret(9, 200)],
        switches: vec![Switch {
            offset: 16,
            mask: 0xff,
            ranges: vec![(0, Outcome::Action(ALLOW)), (7, Outcome::Residual(0)), (8, Outcome::Action(0))],
            residual: 1,
        }],
    };
    // The switch: `ld [16]`, `and #0xff`, two compares, its residual
    // child's 3, `ret #ALLOW` and `ret #0`.
    for (partition, len) in [
        (lone(Some(vec![(0, Outcome::Residual(0))]), Outcome::Action(0)), 3),
        (lone(None, Outcome::Residual(0)), 3),
        (lone(Some(vec![(0, Outcome::Switch(0))]), Outcome::Action(0)), 9),
        (lone(None, Outcome::Switch(0)), 9),
    ] {
        let (insns, stats) = optimize::lay_out(&partition);
        let listing = cbpf::text::print_asm(&insns);
        assert_eq!((insns.len(), stats.landings), (len, 0), "{listing}");
        assert_ne!(insns[0].code, 0x05, "{listing}");
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let run = |arg: u64| {
            let d = SeccompData { nr: 1, arch: X86_64, args: [arg, 0, 0, 0, 0, 0], ..Default::default() };
            interp.run_seccomp(&d.to_bytes()).unwrap()
        };
        if len == 3 {
            assert_eq!(run(7), 100, "{listing}");
        } else {
            let got = [run(0), run(6), run(7), run(0x107), run(8), run(0xff)];
            assert_eq!(got, [ALLOW, ALLOW, 100, 100, 0, 0], "{listing}");
        }
    }
}

/// A switch of two runs split at a power of two of masked bits is one
/// `jset` of the mask's bits from there up (no `and`), for any value of the
/// word's other bits; split elsewhere it is `and` and `jge`; on the whole
/// word it stays `jge`.
#[test]
fn two_run_switches_are_a_jset_only_at_a_power_of_two_of_masked_bits() {
    use seccomp::fast::Switch;
    let two_runs = |mask: u32, split: u32| Partition {
        arches: Vec::new(),
        any_arch: Some(vec![(0, Outcome::Switch(0))]),
        other_arches: Outcome::Action(0),
        residuals: vec![long_ret(20, 7)],
        switches: vec![Switch {
            offset: 16,
            mask,
            ranges: vec![(0, Outcome::Action(ALLOW)), (split, Outcome::Action(1))],
            residual: 0,
        }],
    };
    for (mask, split, code, k) in [
        (0x0000_0f0c, 0x100, 0x45, 0x0000_0f00), // jset #0xf00
        (0x0000_0f0c, 0x4, 0x45, 0x0000_0f0c),
        (0x0000_0f0c, 0x108, 0x35, 0x108), // and #0xf0c; jge #0x108
        (0x0000_0f0c, 0x30c, 0x35, 0x30c),
        (u32::MAX, 0x100, 0x35, 0x100), // jge #0x100
    ] {
        let (insns, _) = optimize::lay_out(&two_runs(mask, split));
        let listing = cbpf::text::print_asm(&insns);
        let compares: Vec<(u16, u32)> = insns.iter().filter(|i| i.code & 0x07 == 0x05).map(|i| (i.code, i.k)).collect();
        assert_eq!(compares, [(code, k)], "mask {mask:#x} split {split:#x}\n{listing}");
        let ands = insns.iter().filter(|i| i.code == 0x54).count();
        assert_eq!(ands, usize::from(code == 0x35 && mask != u32::MAX), "{listing}");
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        for word in [0u32, 0x4, 0xc, 0xf0, 0x100, 0x108, 0x30b, 0x30c, 0x800, 0xffff_f0f3, 0xffff_ffff, 0x1234_5678] {
            let d = SeccompData { nr: 1, arch: X86_64, args: [u64::from(word), 0, 0, 0, 0, 0], ..Default::default() };
            let want = if word & mask >= split { 1 } else { ALLOW };
            assert_eq!(interp.run_seccomp(&d.to_bytes()).unwrap(), want, "word {word:#x}\n{listing}");
        }
    }
}

/// With the size-first rule a switch is laid out as its tree exactly when
/// that takes no more instructions than the residual it stands for: `ld`,
/// `and` unless the mask is the whole word, a compare per run but one (or
/// `ld` and one `jset`), and each residual (with its entry `ld #0`,
/// `ldx #0`) or switch under it once; `ret`s are not counted.
#[test]
fn size_first_lays_out_a_tree_no_longer_than_its_residual() {
    use seccomp::fast::Switch;
    let ret_a = Insn::stmt(0x16, 0);
    // Each case: the switches (the first the filter's), the residuals
    // after the stand-in's, and what the first tree costs.
    let cases: Vec<(&str, Vec<Switch>, Vec<PartitionResidual>, usize)> = vec![
        (
            "jset",
            vec![Switch {
                offset: 16,
                mask: 0xf0,
                ranges: vec![(0, Outcome::Action(ALLOW)), (0x10, Outcome::Action(1))],
                residual: 0,
            }],
            Vec::new(),
            2,
        ),
        (
            "whole word, three runs",
            vec![Switch {
                offset: 16,
                mask: u32::MAX,
                ranges: vec![(0, Outcome::Action(ALLOW)), (5, Outcome::Action(1)), (9, Outcome::Action(2))],
                residual: 0,
            }],
            Vec::new(),
            3,
        ),
        (
            // ld, and, 2 compares; residual 1 (2 and its ld #0, ldx #0)
            // under two runs, counted once; switch 0 (ld, jset).
            "masked, three runs, a residual twice and a switch",
            vec![
                Switch {
                    offset: 24,
                    mask: 0xf0,
                    ranges: vec![(0, Outcome::Action(ALLOW)), (0x10, Outcome::Action(1))],
                    residual: 2,
                },
                Switch {
                    offset: 16,
                    mask: 0xff,
                    ranges: vec![(0, Outcome::Residual(1)), (3, Outcome::Switch(0)), (4, Outcome::Residual(1))],
                    residual: 0,
                },
            ],
            vec![residual(&[Insn::stmt(0x07, 0), ret_a], true, true), long_ret(50, 3)],
            10,
        ),
    ];
    for (name, switches, rest, cost) in cases {
        let top = switches.len() - 1;
        for stand_in in [cost - 1, cost] {
            let mut residuals = vec![long_ret(stand_in, 9)];
            residuals.extend(rest.iter().cloned());
            let partition = Partition {
                arches: Vec::new(),
                any_arch: Some(vec![(0, Outcome::Switch(top))]),
                other_arches: Outcome::Action(0),
                residuals,
                switches: switches.clone(),
            };
            let (insns, stats) = optimize::lay_out(&partition);
            let tree = stats.switches > 0;
            assert_eq!(tree, stand_in >= cost, "{name}: a stand-in of {stand_in}\n{}", cbpf::text::print_asm(&insns));
            validate(&insns, Mode::Seccomp).unwrap();
        }
    }
}
