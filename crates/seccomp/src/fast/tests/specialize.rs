//! Unit tests of the specialiser (module `specialize`): what it folds,
//! what it keeps, what it costs, the residual it lays out.

use super::*;

/// A specialisation's work is the instructions its forward pass visits:
/// the path the known arch and number take, every instruction once.
#[test]
fn partial_work_is_the_instructions_visited() {
    let insns = [
        cbpf::Insn::stmt(0x20, 4),
        cbpf::Insn::jump(0x15, 0xc000_003e, 0, 3),
        cbpf::Insn::stmt(0x20, 0),
        cbpf::Insn::jump(0x15, 110, 0, 1),
        cbpf::Insn::stmt(0x06, 0x7fff_0000),
        cbpf::Insn::stmt(0x06, 0),
    ];
    let prog = cbpf::validate(&insns, Mode::Seccomp).unwrap();
    let mut partial = Partial::new(&prog).unwrap();
    let cases = [
        (Some(0xc000_003e), Some(110), PartialResult::Constant(0x7fff_0000), 5),
        (Some(0xc000_003e), Some(3), PartialResult::Constant(0), 5),
        (Some(0x4000_0003), None, PartialResult::Constant(0), 3),
    ];
    for (arch, nr, want, work) in cases {
        assert_eq!(partial.specialize(arch, nr), want, "{arch:?} {nr:?}");
        assert_eq!(partial.last_work(), work, "{arch:?} {nr:?}");
    }
    assert!(matches!(partial.specialize(Some(0xc000_003e), None), PartialResult::Residual(_)));
    assert_eq!(partial.last_work(), 6);
}

/// A constant is every reachable return giving one value: two `ret`s of
/// the same action behind an argument check are that action; two of
/// different ones, or a `ret a` of an unknown A, leave a residual.
#[test]
fn returns_of_one_value_are_a_constant() {
    const ALLOW: u32 = 0x7fff_0000;
    let filter = |second: cbpf::Insn| {
        let insns =
            [cbpf::Insn::stmt(0x20, 16), cbpf::Insn::jump(0x15, 1, 0, 1), cbpf::Insn::stmt(0x06, ALLOW), second];
        cbpf::validate(&insns, Mode::Seccomp).unwrap()
    };
    let cases = [
        (cbpf::Insn::stmt(0x06, ALLOW), Some(ALLOW)),
        (cbpf::Insn::stmt(0x06, 0), None),
        (cbpf::Insn::stmt(0x16, 0), None), // ret a: A is the argument
    ];
    for (second, want) in cases {
        let mut partial = Partial::new(&filter(second)).unwrap();
        match (partial.specialize(Some(0xc000_003e), Some(1)), want) {
            (PartialResult::Constant(v), Some(w)) => assert_eq!(v, w),
            (PartialResult::Residual(_), None) => {}
            (got, _) => panic!("{second:?}: {got:?}"),
        }
    }
}

/// With A known, a run of at least four libseccomp dispatch `jeq`s (true
/// edge taken, false edge falling through) is left in one step, not one
/// per member: a syscall table's build stays linear. Three are stepped
/// through; a `jeq` whose true edge falls through is no member.
#[test]
fn dispatch_runs_of_four_are_one_step() {
    // `ld nr`, then the members `(k, jt, jf)` (a `jt` other than 0 jumps
    // to the ERRNO), then `ret ALLOW`, `ret ERRNO`.
    type Member = (u32, u8, u8);
    let filter = |members: &[Member]| {
        let n = members.len() as u8;
        let mut insns = vec![cbpf::Insn::stmt(0x20, 0)];
        insns.extend(members.iter().enumerate().map(|(i, &(k, jt, jf))| {
            let to_errno = n - i as u8;
            cbpf::Insn::jump(0x15, k, if jt == 0 { 0 } else { to_errno }, jf)
        }));
        insns.extend([cbpf::Insn::stmt(0x06, 0x7fff_0000), cbpf::Insn::stmt(0x06, 0x0005_0001)]);
        cbpf::validate(&insns, Mode::Seccomp).unwrap()
    };
    let member = |k| (k, 1, 0);
    let cases: [(&[Member], u32, usize); 4] = [
        // `ld`, the run (one step), the `ret`.
        (&[member(1), member(2), member(3), member(4)], 9, 3),
        (&[member(1), member(2), member(3), member(4)], 3, 3),
        // Three members: each stepped.
        (&[member(1), member(2), member(3)], 9, 5),
        // The fourth `jeq`'s true edge falls through: three members again,
        // the fourth stepped too.
        (&[member(1), member(2), member(3), (4, 0, 1)], 9, 6),
    ];
    for (members, nr, work) in cases {
        let prog = filter(members);
        let mut partial = Partial::new(&prog).unwrap();
        let want = Interp::new(&prog)
            .run_seccomp(&SeccompData { nr: nr as i32, arch: 0xc000_003e, ..Default::default() }.to_bytes())
            .unwrap();
        assert_eq!(partial.specialize(Some(0xc000_003e), Some(nr)), PartialResult::Constant(want), "{members:?}");
        assert_eq!(partial.last_work(), work, "{members:?} nr {nr}");
    }
}

/// A residual that keeps a store of the entry's A (or X) before loading it
/// relies on it being 0, as at a filter's start: `entry_reads` says so,
/// and only for the register it reads.
#[test]
fn entry_reads_name_the_registers_a_residual_reads_first() {
    // `st`/`stx M[0]` of the entry's 0, then M[0] set again on one path
    // only, so the load that joins them is kept and so is the first store.
    let filter = |prefix: &[cbpf::Insn]| {
        let mut insns = prefix.to_vec();
        insns.extend([
            cbpf::Insn::stmt(0x20, 16),
            cbpf::Insn::jump(0x15, 1, 0, 1),
            cbpf::Insn::stmt(0x02, 0), // st M[0] (A == 1 here)
            cbpf::Insn::stmt(0x60, 0), // ld M[0]
            cbpf::Insn::stmt(0x16, 0), // ret a
        ]);
        cbpf::validate(&insns, Mode::Seccomp).unwrap()
    };
    let (st, stx, ld_imm) = (cbpf::Insn::stmt(0x02, 0), cbpf::Insn::stmt(0x03, 0), cbpf::Insn::stmt(0x00, 7));
    let cases: [(&[cbpf::Insn], (bool, bool)); 3] =
        [(&[st], (true, false)), (&[stx], (false, true)), (&[ld_imm, st], (false, false))];
    for (prefix, reads) in cases {
        let prog = filter(prefix);
        let mut spec = Specializer::new(&prog);
        assert!(matches!(spec.specialize(Some(0xc000_003e), Some(1)), Specialized::Residual(_)), "{prefix:?}");
        assert_eq!(spec.entry_reads(), reads, "{prefix:?}");
    }
}

/// The residual of `insns` for x86_64's number 1, and each of `args` run
/// on it and on the filter: the same answers.
fn residual_agrees(insns: &[cbpf::Insn], args: &[[u64; 6]]) -> Program {
    let prog = cbpf::validate(insns, Mode::Seccomp).unwrap();
    let PartialResult::Residual(residual) = Partial::new(&prog).unwrap().specialize(Some(0xc000_003e), Some(1)) else {
        panic!("no residual");
    };
    let (whole, part) = (Interp::new(&prog), Interp::new(&residual));
    for &args in args {
        let data = SeccompData { nr: 1, arch: 0xc000_003e, args, ..Default::default() };
        let want = whole.run_seccomp(&data.to_bytes()).unwrap();
        assert_eq!(part.run_seccomp(&data.to_bytes()).unwrap(), want, "{args:?}");
    }
    residual
}

/// Where paths meet, their states are joined: a value known on one path
/// only is not folded there (`ld #5` on one path, `ld #7` on the other,
/// then a test of A); and a path that ended (`ret`) leaves nothing behind,
/// so what the waiting path knows stays known (X is 7 on the path that
/// reaches `txa`: every return is 7, a constant).
#[test]
fn paths_that_meet_are_joined_and_ended_ones_forgotten() {
    let meet = [
        cbpf::Insn::stmt(0x20, 16),
        cbpf::Insn::jump(0x15, 1, 0, 2),
        cbpf::Insn::stmt(0x00, 5),
        cbpf::Insn::stmt(0x05, 1), // ja +1
        cbpf::Insn::stmt(0x00, 7),
        cbpf::Insn::jump(0x15, 5, 0, 1),
        cbpf::Insn::stmt(0x06, 0x7fff_0000),
        cbpf::Insn::stmt(0x06, 0x0005_0001),
    ];
    residual_agrees(&meet, &[[1, 0, 0, 0, 0, 0], [2, 0, 0, 0, 0, 0]]);
    let ended = [
        cbpf::Insn::stmt(0x01, 7), // ldx #7
        cbpf::Insn::stmt(0x20, 16),
        cbpf::Insn::jump(0x15, 1, 0, 2),
        cbpf::Insn::stmt(0x01, 5), // ldx #5
        cbpf::Insn::stmt(0x06, 7),
        cbpf::Insn::stmt(0x87, 0), // txa
        cbpf::Insn::stmt(0x16, 0), // ret a
    ];
    let prog = cbpf::validate(&ended, Mode::Seccomp).unwrap();
    assert_eq!(Partial::new(&prog).unwrap().specialize(Some(0xc000_003e), Some(1)), PartialResult::Constant(7));
}

/// A filter that is one `ret`: its constant, the forward pass ending at
/// its first instruction.
#[test]
fn a_lone_return_is_its_constant() {
    let prog = cbpf::validate(&[cbpf::Insn::stmt(0x06, 0x7fff_0000)], Mode::Seccomp).unwrap();
    let mut partial = Partial::new(&prog).unwrap();
    assert_eq!(partial.specialize(Some(0xc000_003e), None), PartialResult::Constant(0x7fff_0000));
    assert_eq!(partial.last_work(), 1);
    assert_eq!(FastFilter::build(&prog).unwrap().eval(&SeccompData::default()), 0x7fff_0000);
}

/// Liveness: a folded value is materialised only where a kept instruction
/// reads it, with what it reads live before it (the store of `M[0]` reads
/// the `ld #5` before it, so that load stays), and a store nothing loads
/// (`M[5]`) is gone. Nothing else changes: the residual is the filter less
/// that store.
#[test]
fn a_materialised_value_keeps_what_it_reads() {
    let insns = [
        cbpf::Insn::stmt(0x02, 5), // st M[5]: never loaded
        cbpf::Insn::stmt(0x20, 16),
        cbpf::Insn::stmt(0x07, 0), // tax
        cbpf::Insn::jump(0x15, 1, 0, 3),
        cbpf::Insn::stmt(0x00, 5),
        cbpf::Insn::stmt(0x02, 0), // st M[0]
        cbpf::Insn::stmt(0x05, 2), // ja +2
        cbpf::Insn::stmt(0x00, 7),
        cbpf::Insn::stmt(0x02, 0), // st M[0]
        cbpf::Insn::stmt(0x0c, 0), // add x
        cbpf::Insn::stmt(0x07, 0), // tax
        cbpf::Insn::stmt(0x60, 0), // ld M[0]
        cbpf::Insn::stmt(0x0c, 0), // add x
        cbpf::Insn::stmt(0x16, 0), // ret a
    ];
    let args: Vec<[u64; 6]> = [0, 1, 2, 0xffff_ffff].iter().map(|&a| [a, 0, 0, 0, 0, 0]).collect();
    let residual = residual_agrees(&insns, &args);
    // The `ja` threaded away and inserted again where `st M[0]` would
    // fall onto `ld #7`: the same instruction.
    assert_eq!(residual.original(), &insns[1..]);
}

/// When threading a jump would take a conditional jump past 255, the
/// residual is laid out again without threading: the decided `ja` stays,
/// and a decided jump is deleted only where falling through lands at the
/// same instruction (here `jeq #2` on the A that the path knows is 2,
/// over an `ld #3` that only the other path reaches and that nothing
/// reads).
#[test]
fn a_layout_past_reach_keeps_decided_jumps_that_do_not_fall_through() {
    const PAIRS: u32 = 130;
    let mut insns = vec![
        cbpf::Insn::stmt(0x20, 16),
        cbpf::Insn::jump(0x15, 1, 0, 1),
        cbpf::Insn::stmt(0x05, 6 + 2 * PAIRS), // ja to the last `ret`
        cbpf::Insn::jump(0x15, 2, 0, 2),
        cbpf::Insn::stmt(0x01, 5),       // ldx #5
        cbpf::Insn::jump(0x15, 2, 1, 0), // decided: A is 2
        cbpf::Insn::stmt(0x00, 3),       // ld #3: dead
        cbpf::Insn::stmt(0x87, 0),       // txa: 5, or 0
    ];
    for k in 0..PAIRS {
        insns.extend([cbpf::Insn::jump(0x15, k + 100, 0, 1), cbpf::Insn::stmt(0x06, k + 100)]);
    }
    insns.extend([cbpf::Insn::stmt(0x06, 0), cbpf::Insn::stmt(0x06, 0x7fff_0000)]);
    let args: Vec<[u64; 6]> = [0, 1, 2, 3].iter().map(|&a| [a, 0, 0, 0, 0, 0]).collect();
    let residual = residual_agrees(&insns, &args);
    // All but the decided `jeq` and the `ld #3`, and no `ja` in their place.
    let mut want = insns.clone();
    want.drain(5..7);
    want[2] = cbpf::Insn::stmt(0x05, 4 + 2 * PAIRS);
    want[3] = cbpf::Insn::jump(0x15, 2, 0, 1);
    assert_eq!(residual.original(), &want[..]);
}

/// Jump threading: a conditional jump onto a decided `ja` goes where that
/// `ja` goes, and a kept instruction whose next kept one is elsewhere gets
/// a `ja` inserted (`st M[0]` on the `ld #7` path, before `ld #5`): one
/// instruction fewer than the filter, which is what the layout without
/// threading would give.
#[test]
fn threading_skips_decided_jumps_and_inserts_the_ja_a_fall_needs() {
    let insns = [
        cbpf::Insn::stmt(0x20, 16),
        cbpf::Insn::jump(0x15, 1, 0, 1),
        cbpf::Insn::stmt(0x05, 3), // ja to `ld #5`
        cbpf::Insn::stmt(0x00, 7),
        cbpf::Insn::stmt(0x02, 0), // st M[0]
        cbpf::Insn::stmt(0x05, 2), // ja to `ld M[0]`
        cbpf::Insn::stmt(0x00, 5),
        cbpf::Insn::stmt(0x02, 0), // st M[0]
        cbpf::Insn::stmt(0x60, 0), // ld M[0]: 5 or 7
        cbpf::Insn::stmt(0x16, 0), // ret a
    ];
    let args: Vec<[u64; 6]> = [0, 1, 2].iter().map(|&a| [a, 0, 0, 0, 0, 0]).collect();
    let residual = residual_agrees(&insns, &args);
    let want = [
        cbpf::Insn::stmt(0x20, 16),
        cbpf::Insn::jump(0x15, 1, 3, 0),
        cbpf::Insn::stmt(0x00, 7),
        cbpf::Insn::stmt(0x02, 0),
        cbpf::Insn::stmt(0x05, 2),
        cbpf::Insn::stmt(0x00, 5),
        cbpf::Insn::stmt(0x02, 0),
        cbpf::Insn::stmt(0x60, 0),
        cbpf::Insn::stmt(0x16, 0),
    ];
    assert_eq!(residual.original(), &want[..]);
}
