//! Unit tests of the fast engine's tables (near switches, guards, the x32
//! window, dense sizes, what its figures count); `specialize`: the specialiser.

use super::*;

mod specialize;

#[test]
fn data_bytes_match_to_bytes() {
    let data = SeccompData {
        nr: -2,
        arch: 0xc000_003e,
        instruction_pointer: 0x1122_3344_5566_7788,
        args: [1, u64::MAX, 0x8000_0000_0000_0001, 4, 5, 0xaabb_ccdd_0000_0006],
    };
    assert_eq!(data_bytes(&data), data.to_bytes());
}

/// A switch of at most [`NEAR_RUNS`] runs answers from its own fields
/// what its run arrays answer, at every start, next to it and at the
/// ends of the word (the padding).
#[test]
fn near_switches_answer_as_their_runs() {
    for starts in [&[0u32][..], &[0, 1], &[0, 5, 0x8000_0000], &[0, 1, 2, u32::MAX], &[0, 7, 9, 100, 200]] {
        let slots: Box<[Slot]> = (0..starts.len() as u32).map(Slot::Action).collect();
        let near = switch(16, starts, &slots, 9);
        let far = SwitchTable { is_near: false, ..near.clone() };
        let words = starts.iter().flat_map(|&s| [s.wrapping_sub(1), s, s.wrapping_add(1)]).chain([0, u32::MAX]);
        for v in words {
            let want = Slot::Action(starts.iter().filter(|&&s| s <= v).count() as u32 - 1);
            assert_eq!(near.slot(v), want, "{starts:?} {v:#x}");
            assert_eq!(far.slot(v), want, "{starts:?} {v:#x}");
        }
    }
}

/// libseccomp's 64-bit comparison (`hi == 0`, then the low word) is one
/// table: the high word's switch fused into the low word's as a guard,
/// with the interpreter's answers on both sides of every boundary.
#[test]
fn a_high_word_test_is_a_guard_of_the_low_words_switch() {
    let (hi, lo) = if cfg!(target_endian = "little") { (20, 16) } else { (16, 20) };
    let insns = [
        cbpf::Insn::stmt(0x20, 4),
        cbpf::Insn::jump(0x15, 0xc000_003e, 0, 8),
        cbpf::Insn::stmt(0x20, 0),
        cbpf::Insn::jump(0x15, 80, 0, 4), // other numbers: ALLOW
        cbpf::Insn::stmt(0x20, hi),
        cbpf::Insn::jump(0x15, 0, 0, 4), // hi != 0: KILL
        cbpf::Insn::stmt(0x20, lo),
        cbpf::Insn::jump(0x25, 5, 0, 1), // lo > 5: ALLOW, else ERRNO
        cbpf::Insn::stmt(0x06, 0x7fff_0000),
        cbpf::Insn::stmt(0x06, 0x0005_0001),
        cbpf::Insn::stmt(0x06, 0),
    ];
    let prog = cbpf::validate(&insns, Mode::Seccomp).unwrap();
    let fast = FastFilter::build(&prog).unwrap();
    // The entry of nr 80 (the arch-only specialisation, for numbers past
    // the table, has a tree of its own).
    let Slot::Switch(j) = fast.slot(0xc000_003e, 80) else { panic!("no tree: {:?}", fast.switches) };
    let table = &fast.switches[j as usize];
    assert_eq!((table.offset, table.mask, &*table.starts), (lo, u32::MAX, &[0, 6][..]));
    assert!(table.guarded);
    let guard = fast.guards[j as usize];
    assert_eq!((guard.offset, guard.mask, guard.value, guard.other), (hi, u32::MAX, 0, Slot::Action(0)));
    assert_eq!(fast.switch(0xc000_003e, 80).map(|(offset, _, _)| offset), Some(lo));
    let interp = Interp::new(&prog);
    for a0 in [0u64, 5, 6, u64::from(u32::MAX), 1 << 32, (1 << 32) | 6, u64::MAX] {
        let data = SeccompData { nr: 80, arch: 0xc000_003e, args: [a0, 0, 0, 0, 0, 0], ..Default::default() };
        let want = interp.run_seccomp(&data.to_bytes()).unwrap();
        assert_eq!(fast.eval(&data), want, "{a0:#x}");
        assert_eq!(fast.eval_bytes(&data.to_bytes()), want, "{a0:#x}");
    }
}

/// x86_64 filters that compare x32 numbers or cut runs of them (order
/// comparisons only, as libseccomp's trees) get the window of them as a
/// table, with the searches' answers at every number of it.
#[test]
fn x32_numbers_told_apart_get_a_window() {
    const ALLOW: u32 = 0x7fff_0000;
    // ALLOW exactly `nr == x32`: with two `jge`s (runs) or a `jeq`.
    let filter = |x32: u32, runs: bool| {
        let test = if runs {
            [cbpf::Insn::jump(0x35, x32, 0, 2), cbpf::Insn::jump(0x35, x32 + 1, 1, 0)]
        } else {
            [cbpf::Insn::jump(0x15, 12, 2, 0), cbpf::Insn::jump(0x15, x32, 0, 1)]
        };
        let mut insns = vec![cbpf::Insn::stmt(0x20, 4), cbpf::Insn::jump(0x15, 0xc000_003e, 0, 4)];
        insns.push(cbpf::Insn::stmt(0x20, 0));
        insns.extend(test);
        insns.extend([cbpf::Insn::stmt(0x06, ALLOW), cbpf::Insn::stmt(0x06, 0)]);
        cbpf::validate(&insns, Mode::Seccomp).unwrap()
    };
    let cases = [(HIGH_BASE | 1, DENSE_LIMIT as usize), (HIGH_BASE + DENSE_LIMIT, 0), (1000, 0)];
    for ((x32, window), runs) in cases.into_iter().flat_map(|c| [(c, true), (c, false)]) {
        let prog = filter(x32, runs);
        let fast = FastFilter::build(&prog).unwrap();
        assert_eq!(fast.arches[0].high.len(), window, "{x32:#x} {runs}");
        assert!(window == 0 || fast.numbers(0xc000_003e).contains(&x32));
        let interp = Interp::new(&prog);
        for nr in (HIGH_BASE - 2..HIGH_BASE + DENSE_LIMIT + 2).chain([1000, 12, u32::MAX]) {
            let data = SeccompData { nr: nr as i32, arch: 0xc000_003e, ..Default::default() };
            let want = interp.run_seccomp(&data.to_bytes()).unwrap();
            assert_eq!(fast.eval(&data), want, "{x32:#x} {runs} nr {nr:#x}");
        }
        let data = SeccompData { nr: x32 as i32, arch: 0xc000_003e, ..Default::default() };
        assert_eq!(fast.eval(&data), ALLOW);
    }
}

/// Either reason gives the window: an x32 number compared (here by `jset`,
/// which leaves `nr` without classes, so no runs are cut); the compared
/// numbers outside the window (`-1`) stay in the sparse search.
#[test]
fn a_compared_x32_number_alone_gives_a_window() {
    const ALLOW: u32 = 0x7fff_0000;
    let insns = [
        cbpf::Insn::stmt(0x20, 4),
        cbpf::Insn::jump(0x15, 0xc000_003e, 0, 6),
        cbpf::Insn::stmt(0x20, 0),
        cbpf::Insn::jump(0x15, u32::MAX, 0, 1),
        cbpf::Insn::stmt(0x06, 0x0005_0001),
        cbpf::Insn::jump(0x45, HIGH_BASE | 0x10, 0, 1),
        cbpf::Insn::stmt(0x06, ALLOW),
        cbpf::Insn::stmt(0x06, 0x0005_0002),
        cbpf::Insn::stmt(0x06, 0),
    ];
    let prog = cbpf::validate(&insns, Mode::Seccomp).unwrap();
    let fast = FastFilter::build(&prog).unwrap();
    let table = &fast.arches[0];
    assert!(table.ranges.is_empty(), "{:?}", table.ranges);
    assert_eq!(table.high.len(), DENSE_LIMIT as usize);
    assert_eq!(&*table.sparse, &[(u32::MAX, Slot::Action(0x0005_0001))]);
    let interp = Interp::new(&prog);
    for nr in (HIGH_BASE - 2..HIGH_BASE + DENSE_LIMIT + 2).chain([0, 0x10, 1000, u32::MAX - 1, u32::MAX]) {
        let data = SeccompData { nr: nr as i32, arch: 0xc000_003e, ..Default::default() };
        let want = interp.run_seccomp(&data.to_bytes()).unwrap();
        assert_eq!(fast.eval(&data), want, "nr {nr:#x}");
    }
}

/// A residual the budget refuses, or one that does not validate, runs the
/// whole filter; each is counted once, in its own figure (the forest
/// counts the budget's refusals, `Residuals` the whole-filter entries).
#[test]
fn residuals_count_each_fallback_once() {
    let prog = cbpf::validate(&[cbpf::Insn::stmt(0x06, 0x7fff_0000)], Mode::Seccomp).unwrap();
    let mut residuals = Residuals::with_budget(&prog, 10, 3);
    assert!(residuals.affordable(10));
    residuals.charge(8);
    assert!(!residuals.affordable(3));
    assert_eq!(residuals.slot(Specialized::Action(7), FROM_START), Slot::Action(7));
    assert_eq!(residuals.slot(Specialized::Whole, FROM_START), Slot::Residual(0));
    // Unaligned and without a return: refused by the validator.
    let invalid = [cbpf::Insn::stmt(0x20, 1)];
    assert_eq!(residuals.slot(Specialized::Residual(&invalid), FROM_START), Slot::Residual(0));
    // Four instructions, three left: refused by the budget.
    let long = [
        cbpf::Insn::stmt(0x20, 16),
        cbpf::Insn::jump(0x15, 1, 0, 1),
        cbpf::Insn::stmt(0x06, 0x7fff_0000),
        cbpf::Insn::stmt(0x06, 0),
    ];
    assert_eq!(residuals.slot(Specialized::Residual(&long), FROM_START), Slot::Residual(0));
    assert_eq!(residuals.whole_filter_entries, 2);
    let (list, switches, _, budget_fallbacks) = residuals.compile();
    assert_eq!((list.len(), switches.len(), budget_fallbacks), (1, 0, 2));
}

/// The dense table: the arch's syscall table, else [`MIN_DENSE`], grown to
/// the highest compared number below [`DENSE_LIMIT`] and one past it.
#[test]
fn dense_tables_cover_compared_numbers_below_the_limit() {
    let unknown = 0x1234;
    let x86_64 = crate::syscalls::table(Arch::from_audit_arch(0xc000_003e)).unwrap().nr_syscalls;
    let cases: [(u32, &[u32], u32); 7] = [
        (unknown, &[], MIN_DENSE),
        (unknown, &[10], MIN_DENSE),
        (unknown, &[100, 7], 101),
        (unknown, &[DENSE_LIMIT - 1], DENSE_LIMIT),
        (unknown, &[DENSE_LIMIT, 5, u32::MAX], MIN_DENSE),
        (0xc000_003e, &[5, DENSE_LIMIT + 1], x86_64),
        (0xc000_003e, &[x86_64 + 10], x86_64 + 11),
    ];
    for (arch, compared, want) in cases {
        assert_eq!(dense_len(arch, compared), want, "{arch:#x} {compared:?}");
    }
}

/// Each dense and sparse entry is counted once, by what it runs: a
/// constant, a residual (two arguments compared with each other: no
/// tree), or a switch (an argument against a constant).
#[test]
fn stats_count_each_entry_by_kind() {
    const ALLOW: u32 = 0x7fff_0000;
    let insns = [
        cbpf::Insn::stmt(0x20, 4),
        cbpf::Insn::jump(0x15, 0xc000_003e, 0, 11),
        cbpf::Insn::stmt(0x20, 0),
        cbpf::Insn::jump(0x15, u32::MAX, 10, 0), // -1: ERRNO
        cbpf::Insn::jump(0x15, 5, 0, 5),
        cbpf::Insn::stmt(0x20, 24),
        cbpf::Insn::stmt(0x07, 0), // tax
        cbpf::Insn::stmt(0x20, 16),
        cbpf::Insn::jump(0x1d, 0, 6, 0), // arg 0 == arg 1: ALLOW
        cbpf::Insn::stmt(0x06, 0),
        cbpf::Insn::jump(0x15, 6, 0, 4),
        cbpf::Insn::stmt(0x20, 16),
        cbpf::Insn::jump(0x15, 1, 2, 0), // arg 0 == 1: ALLOW
        cbpf::Insn::stmt(0x06, 0),
        cbpf::Insn::stmt(0x06, 0x0005_0001),
        cbpf::Insn::stmt(0x06, ALLOW),
    ];
    let prog = cbpf::validate(&insns, Mode::Seccomp).unwrap();
    let fast = FastFilter::build(&prog).unwrap();
    let dense = crate::syscalls::table(Arch::from_audit_arch(0xc000_003e)).unwrap().nr_syscalls as usize;
    let stats = fast.stats();
    assert_eq!(
        (stats.arches, stats.entries, stats.constant_entries, stats.residual_entries, stats.switch_entries),
        (1, dense + 1, dense - 1, 1, 1),
        "{stats:?}"
    );
    assert_eq!((stats.whole_filter_entries, stats.budget_fallback_entries), (0, 0));
    // The one switch as native code where the host has it: a load, a mask,
    // compares and branches, two leaves.
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        assert_eq!(fast.native_refusal(), None);
        assert!(stats.native_code_bytes >= 16, "{stats:?}");
    } else {
        assert!(fast.native_refusal().is_some());
    }
    assert!(matches!(fast.slot(0xc000_003e, 5), Slot::Residual(_)));
    assert!(matches!(fast.slot(0xc000_003e, 6), Slot::Switch(_)));
    assert_eq!(fast.slot(0xc000_003e, u32::MAX), Slot::Action(0x0005_0001));
    let interp = Interp::new(&prog);
    for (nr, a0, a1) in [(5, 1, 1), (5, 1, 2), (6, 1, 0), (6, 2, 0), (7, 0, 0), (-1, 0, 0)] {
        let data = SeccompData { nr, arch: 0xc000_003e, args: [a0, a1, 0, 0, 0, 0], ..Default::default() };
        let want = interp.run_seccomp(&data.to_bytes()).unwrap();
        assert_eq!(fast.eval(&data), want, "{nr} {a0} {a1}");
    }
}

/// A switch of `starts` to `slots` at word `offset`, as `build` makes one.
fn switch(offset: u32, starts: &[u32], slots: &[Slot], residual: u32) -> SwitchTable {
    let last = slots.last().copied().unwrap_or(Slot::Residual(residual));
    SwitchTable {
        offset,
        mask: u32::MAX,
        is_near: (1..=NEAR_RUNS).contains(&starts.len()),
        near: std::array::from_fn(|i| starts.get(i + 1).copied().unwrap_or(u32::MAX)),
        near_slots: std::array::from_fn(|i| slots.get(i).copied().unwrap_or(last)),
        starts: starts.into(),
        slots: slots.into(),
        residual,
        guarded: false,
    }
}

/// `fuse_guards` fuses a parent whose one single-value run (first, or
/// between two runs of one answer) leads to an earlier, unguarded switch:
/// the parent becomes a guarded copy of the child that keeps its own
/// residual, with the guard of its word, mask, value and other answer. A
/// run wider than one value, two different other answers, or a child that
/// has a guard already: left as they are.
#[test]
fn fuse_guards_fuses_single_value_parents_only() {
    let (kill, allow, errno) = (Slot::Action(0), Slot::Action(0x7fff_0000), Slot::Action(0x0005_0001));
    let child = switch(16, &[0, 100], &[allow, errno], 1);
    let mut tables = vec![
        child.clone(),
        switch(20, &[0, 1], &[Slot::Switch(0), kill], 2),
        switch(20, &[0, 7, 8], &[kill, Slot::Switch(0), kill], 3),
        switch(20, &[0, 7, 10], &[kill, Slot::Switch(0), kill], 4),
        switch(20, &[0, 7, 8], &[kill, Slot::Switch(0), errno], 5),
        // Its child (1) is guarded once fused.
        switch(24, &[0, 1], &[Slot::Switch(1), kill], 6),
    ];
    let before = tables.clone();
    let guards = fuse_guards(&mut tables);
    let guard = |value| Guard { offset: 20, mask: u32::MAX, value, other: kill };
    assert_eq!(guards, [Guard::NONE, guard(0), guard(7), Guard::NONE, Guard::NONE, Guard::NONE]);
    for (p, residual) in [(1, 2), (2, 3)] {
        let t = &tables[p];
        assert!(t.guarded, "{p}");
        assert_eq!((t.offset, &*t.starts, &*t.slots, t.residual), (16, &child.starts[..], &child.slots[..], residual));
    }
    for p in [0, 3, 4, 5] {
        let (t, b) = (&tables[p], &before[p]);
        assert_eq!(
            (t.guarded, t.offset, &*t.starts, &*t.slots, t.residual),
            (false, b.offset, &*b.starts, &*b.slots, b.residual),
            "{p}"
        );
    }
}
