//! `seccomp::fast::Partition`: every (arch, nr) of a sweep gets, from its
//! range's outcome (the constant, the residual run on the same input, or
//! the tree followed on its words, each switch's stand-in residual too),
//! the value the classic interpreter gives the whole filter; ranges cover
//! `0..=u32::MAX`, ascending, neighbours differ. On the testdata filters
//! (cut at classes) and on hand-made filters that take the other paths:
//! a `jset` of a low bit and arithmetic on `nr` (cut per table number), no `arch` load
//! (one partition for every arch), and a residual for unnamed arches.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use cbpf::{Interp, Program, SeccompData};
use common::asm;
use seccomp::fast::{Cut, Outcome, Partition, PartitionError, Ranges};

const X86_64: u32 = 0xc000_003e;
const I386: u32 = 0x4000_0003;

fn outcome(ranges: &Ranges, nr: u32) -> Outcome {
    let i = ranges.partition_point(|&(start, _)| start <= nr);
    ranges[i - 1].1
}

/// Checks `p`'s partition on a sweep; returns it.
fn check(name: &str, p: &Program) -> Partition {
    let part = Partition::build(p, &mut Default::default(), 1 << 20).unwrap();
    agrees(name, p, &part);
    part
}

/// Checks that `part` gives what `p` gives on a sweep.
fn agrees(name: &str, p: &Program, part: &Partition) {
    let whole = Interp::new(p);
    let residuals: Vec<Interp> = part.residuals.iter().map(|r| Interp::new(&r.program)).collect();
    let all: Vec<(Option<u32>, &Ranges)> = match &part.any_arch {
        Some(r) => vec![(None, r)],
        None => part.arches.iter().map(|a| (Some(a.arch), &a.ranges)).collect(),
    };
    for (_, ranges) in &all {
        assert_eq!(ranges[0].0, 0, "{name}");
        assert!(ranges.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 != w[1].1), "{name}: {ranges:?}");
    }
    let args =
        [[0u64; 6], [1, 2, 3, 4, 5, 6], [0x28, 0, 0, 0, 0, 0], [u64::MAX; 6], [0x7e02_0000, 1, 0x10000, 0, 0, 9]];
    let mut arches: Vec<u32> = part.arches.iter().map(|a| a.arch).collect();
    arches.extend([X86_64, I386, 0, 0x1234]);
    let mut nrs: Vec<u32> = (0..700).chain([u32::MAX, u32::MAX - 1, 0x3fff_ffff]).collect();
    nrs.extend(0x4000_0000..0x4000_0000 + 400);
    for &arch in &arches {
        let outcome_of =
            |nr: u32| match part.any_arch.as_ref().or(part.arches.iter().find(|a| a.arch == arch).map(|a| &a.ranges)) {
                Some(ranges) => outcome(ranges, nr),
                None => part.other_arches,
            };
        for &nr in &nrs {
            let o = outcome_of(nr);
            for a in &args {
                let d = SeccompData { nr: nr as i32, arch, instruction_pointer: 0x1000, args: *a }.to_bytes();
                let want = whole.run_seccomp(&d).unwrap();
                // A switch is followed on the input's words; the residual it
                // stands for must agree too.
                let mut at = o;
                let got = loop {
                    match at {
                        Outcome::Action(v) => break v,
                        Outcome::Residual(i) => break residuals[i].run_seccomp(&d).unwrap(),
                        Outcome::Switch(j) => {
                            let s = &part.switches[j];
                            let stand_in = residuals[s.residual].run_seccomp(&d).unwrap();
                            assert_eq!(stand_in, want, "{name}: arch {arch:#x} nr {nr:#x} args {a:?}: switch {j}");
                            let word = u32::from_ne_bytes(d[s.offset as usize..][..4].try_into().unwrap());
                            at = s.child(word);
                        }
                    }
                };
                assert_eq!(got, want, "{name}: arch {arch:#x} nr {nr:#x} args {a:?}: {o:?}");
            }
        }
    }
}

/// `part` as a code generator without trees would make it: every switch
/// replaced by the residual it stands for, no switches.
fn without_trees(part: &Partition) -> Partition {
    let stand_in = |o: Outcome| match o {
        Outcome::Switch(j) => Outcome::Residual(part.switches[j].residual),
        o => o,
    };
    let mut bare = part.clone();
    for a in &mut bare.arches {
        a.ranges.iter_mut().for_each(|(_, o)| *o = stand_in(*o));
    }
    if let Some(r) = bare.any_arch.as_mut() {
        r.iter_mut().for_each(|(_, o)| *o = stand_in(*o));
    }
    bare.other_arches = stand_in(bare.other_arches);
    bare.switches.clear();
    bare
}

#[test]
fn grow_trees_grows_a_bare_partition_back_into_trees() {
    let mut grown_switches = 0;
    for name in common::filter_names() {
        let p = common::load(&name);
        let part = Partition::build(&p, &mut Default::default(), 1 << 20).unwrap();
        let mut bare = without_trees(&part);
        bare.grow_trees();
        agrees(&name, &p, &bare);
        let reached = bare.arches.iter().flat_map(|a| &a.ranges).filter(|(_, o)| matches!(o, Outcome::Switch(_)));
        // Every root the build made is grown again (perhaps more: the
        // bare partition's leaves are grown too).
        assert!(bare.switches.len() >= part.switches.len(), "{name}");
        grown_switches += reached.count();
    }
    assert!(grown_switches > 0);
}

#[test]
fn testdata_filters_partition_at_classes() {
    for name in common::filter_names() {
        let part = check(&name, &common::load(&name));
        // Chromium's compiler tests the x32 bit of nr with `jset`: four
        // runs of numbers, classes too.
        assert!(part.arches.iter().all(|a| a.cut == Cut::Classes), "{name}");
    }
}

#[test]
fn jset_or_arithmetic_on_nr_cut_per_table_number() {
    let jset = |bit: u32| {
        asm(&format!(
            r"
                ld [4]
                jeq #0xc000003e, x86_64
                ret #0
        x86_64: ld [0]
                jset #{bit:#x}, kill
                jeq #2, allow
                ret #0x50001
        allow:  ret #0x7fff0000
        kill:   ret #0x80000000
        "
        ))
    };
    // A low bit alternates too often to cut runs; the x32 bit makes four.
    let part = check("jset #4", &jset(4));
    assert_eq!(part.arches[0].cut, Cut::Table);
    let part = check("jset #0x40000000", &jset(0x4000_0000));
    assert_eq!(part.arches[0].cut, Cut::Classes);
    let arith = asm(r"
                ld [0]
                add #1                      ; A = nr + 1
                jeq #60, allow, args        ; nr == 59
        allow:  ret #0x7fff0000
        args:   ld [16]
                jeq #7, echo, errno
        echo:   ret a                       ; 7
        errno:  ret #0x50002
        ");
    let part = check("nr + 1", &arith);
    let ranges = part.any_arch.as_ref().expect("no arch load: one partition");
    assert!(part.arches.is_empty());
    assert_eq!(outcome(ranges, 59), Outcome::Action(0x7fff_0000));
}

#[test]
fn unnamed_arches_get_the_filter_specialised_on_none_of_them() {
    // x86_64 and i386 named; any other arch reaches an argument check.
    let p = asm(r"
                ld [4]
                jeq #0xc000003e, nr
                jeq #0x40000003, nr
                ja nr                       ; a no-op
        nr:     ld [0]
                jeq #1, allow, args
        allow:  ret #0x7fff0000
        args:   ld [16]
                jeq #0x28, errno, kill
        errno:  ret #0x50001
        kill:   ret #0
        ");
    let part = check("unnamed", &p);
    assert_eq!(part.arches.iter().map(|a| a.arch).collect::<Vec<_>>(), vec![X86_64, I386]);
    // The argument check: a tree over args[0].lo.
    assert!(matches!(part.other_arches, Outcome::Switch(_)), "{:?}", part.other_arches);
}

/// `max_insns` bounds the instructions of the distinct residuals the
/// ranges need: a filter with an argument check is refused under 0 with
/// the typed error naming the limit, built at the least limit that holds
/// its residuals (their instructions, exactly), and refused one below.
#[test]
fn the_residual_bound_refuses_one_instruction_short() {
    let p = asm(r"
                ld [4]
                jeq #0xc000003e, nr, kill
        nr:     ld [0]
                jeq #1, allow, args
        allow:  ret #0x7fff0000
        args:   ld [16]
                add #1
                jeq #0x29, errno, kill
        errno:  ret #0x50001
        kill:   ret #0
        ");
    let build = |max: usize| Partition::build(&p, &mut Default::default(), max);
    let refused = |max: usize| matches!(build(max), Err(PartitionError::ResidualInsns { limit }) if limit == max);
    assert!(refused(0));
    // The least limit that builds (a partition point: every larger one
    // does too).
    let least = (0..1 << 12).collect::<Vec<usize>>().partition_point(|&m| build(m).is_err());
    assert!(refused(least - 1));
    let part = build(least).unwrap();
    agrees("bounded", &p, &part);
    // That limit is exactly what the ranges' distinct residuals hold (a
    // switch's: the residual it stands for).
    let mut needed: Vec<usize> = part.arches[0]
        .ranges
        .iter()
        .map(|&(_, o)| o)
        .chain([part.other_arches])
        .filter_map(|o| match o {
            Outcome::Residual(i) => Some(i),
            Outcome::Switch(j) => Some(part.switches[j].residual),
            Outcome::Action(_) => None,
        })
        .collect();
    needed.sort_unstable();
    needed.dedup();
    assert_eq!(least, needed.iter().map(|&i| part.residuals[i].program.len()).sum::<usize>());
}

/// Cut per table number, a compared number past the table (an x32
/// number) is a range of its own, and the numbers between the table and it
/// run the filter specialised on the arch alone, as every other number.
#[test]
fn a_number_past_the_table_is_a_range_of_its_own() {
    let p = asm(r"
                ld [4]
                jeq #0xc000003e, x86_64
                ret #0
        x86_64: ld [0]
                jset #4, kill
                jeq #2, allow
                jeq #0x40000002, allow
                ret #0x50001
        allow:  ret #0x7fff0000
        kill:   ret #0x80000000
        ");
    let part = check("x32 number past the table", &p);
    assert_eq!(part.arches[0].cut, Cut::Table);
    let ranges = &part.arches[0].ranges;
    assert_eq!(outcome(ranges, 0x4000_0002), Outcome::Action(0x7fff_0000));
    // Past the table and before the x32 number: the arch-only residual.
    assert!(!matches!(outcome(ranges, 0x3fff_ffff), Outcome::Action(_)), "{ranges:?}");
}
