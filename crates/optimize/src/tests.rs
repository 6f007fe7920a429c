//! Unit tests of the crate's figures and checks: the longest path, the
//! cache's ALLOWs an output must keep, what `Stats` and `KeptInput` print.

use super::*;

const ALLOW: u32 = 0x7fff_0000;
const X86_64: u32 = 0xc000_003e;

fn seccomp(insns: &[Insn]) -> Program {
    cbpf::validate(insns, Mode::Seccomp).unwrap()
}

/// `ld arch`, other arches KILL, `ld nr`: the head of an x86_64 filter.
fn x86_64_head() -> Vec<Insn> {
    vec![Insn::stmt(0x20, 4), Insn::jump(0x15, X86_64, 1, 0), Insn::stmt(0x06, 0), Insn::stmt(0x20, 0)]
}

/// The longest path takes the longer edge of every jump, feasible or not,
/// and follows `ja` by its offset.
#[test]
fn the_longest_path_follows_the_longer_edge() {
    let insns = [
        Insn::stmt(0x20, 0),           // 0: ld [0]
        Insn::jump(0x15, 1, 0, 3),     // 1: jeq #1, 2, 5
        Insn::stmt(0x05, 1),           // 2: ja 4
        Insn::stmt(0x06, 0),           // 3: ret (skipped)
        Insn::stmt(0x06, ALLOW),       // 4: ret
        Insn::jump(0x15, 2, 1, 0),     // 5: jeq #2, 7, 6
        Insn::stmt(0x00, 3),           // 6: ld #3
        Insn::stmt(0x06, 0x0005_0001), // 7: ret
    ];
    // 0 1 5 6 7 is longer than 0 1 2 4.
    assert_eq!(longest_path(&insns), 5);
    assert_eq!(longest_path(&insns[..1]), 1);
    assert_eq!(longest_path(&[Insn::stmt(0x06, 0)]), 1);
    assert_eq!(longest_path(&[]), 0);
    // A `ja` over more than its successor: 0 1 (ja) 3.
    let ja = [Insn::stmt(0x20, 0), Insn::stmt(0x05, 2), Insn::stmt(0x00, 1), Insn::stmt(0x00, 2), Insn::stmt(0x06, 0)];
    assert_eq!(longest_path(&ja), 3);
}

/// The first (arch, nr) the input's cache allows and the output's does
/// not, in the input's arches (x86_64 and i386 when it names none); none
/// when the output allows at least as much.
#[test]
fn cache_lost_names_the_first_allow_the_output_drops() {
    let allow_all = seccomp(&[Insn::stmt(0x06, ALLOW)]);
    // x86_64 filter: KILL getpid (39) and nr 5, ALLOW the rest.
    let kill = |nrs: &[u32]| {
        let mut insns = x86_64_head();
        for &nr in nrs {
            insns.push(Insn::jump(0x15, nr, 0, 1));
            insns.push(Insn::stmt(0x06, 0));
        }
        insns.push(Insn::stmt(0x06, ALLOW));
        seccomp(&insns)
    };
    let (some, more) = (kill(&[39]), kill(&[39, 5]));
    assert_eq!(cache_lost(&some, &some), None);
    assert_eq!(cache_lost(&more, &some), None);
    assert_eq!(cache_lost(&some, &more), Some((X86_64, 5)));
    // The input names no arch: x86_64 first, then i386.
    assert_eq!(cache_lost(&allow_all, &some), Some((X86_64, 39)));
    assert_eq!(cache_lost(&allow_all, &allow_all), None);
    let only_x86_64 =
        seccomp(&[Insn::stmt(0x20, 4), Insn::jump(0x15, X86_64, 0, 1), Insn::stmt(0x06, ALLOW), Insn::stmt(0x06, 0)]);
    assert_eq!(cache_lost(&allow_all, &only_x86_64), Some((seccomp::arch::AUDIT_ARCH_I386, 0)));
}

/// What `bpfconv optimize` prints of a run.
#[test]
fn figures_print_as_the_cli_shows_them() {
    assert_eq!(KeptInput::Larger { output: 12 }.to_string(), "the optimised layout has 12 instructions");
    assert_eq!(KeptInput::Residuals.to_string(), "its residual programs alone are longer");
    let stats = Stats {
        input_insns: 9,
        output_insns: 7,
        input_longest_path: 6,
        output_longest_path: 4,
        arches: 1,
        ..Stats::default()
    };
    let shown = stats.to_string();
    assert!(shown.starts_with("instructions 9 -> 7, longest path 6 -> 4, arches 1,"), "{shown}");
}

/// The figures of a run: the input's size and longest path, the distinct
/// residual (`getpid`'s argument check, four instructions) and the
/// output's figures.
#[test]
fn build_reports_the_inputs_figures() {
    let mut insns = x86_64_head();
    insns.extend([
        Insn::jump(0x15, 39, 0, 3),
        Insn::stmt(0x20, 16),
        Insn::jump(0x15, 1, 0, 1),
        Insn::stmt(0x06, 0x0005_0001),
        Insn::stmt(0x06, ALLOW),
    ]);
    let input = seccomp(&insns);
    let built = build(&input, &mut Budget::default()).unwrap();
    let stats = built.stats;
    assert_eq!((stats.input_insns, stats.input_longest_path), (9, 7));
    assert_eq!((stats.arches, stats.residuals, stats.residual_insns), (1, 1, 4));
    assert_eq!(stats.output_insns, built.program.len());
    assert_eq!(stats.output_longest_path, longest_path(built.program.original()));
}

/// Preferring depth takes a layout longer than the input when it is
/// shallower (an argument compared with twenty values in a row becomes a
/// search); preferring size keeps the shorter one.
#[test]
fn depth_preferred_takes_a_longer_shallower_layout() {
    let mut insns = x86_64_head();
    insns.extend([Insn::jump(0x15, 39, 0, 41), Insn::stmt(0x20, 16)]);
    for v in 0..20 {
        insns.extend([Insn::jump(0x15, v * 3, 0, 1), Insn::stmt(0x06, 0x0005_0000 | v)]);
    }
    insns.push(Insn::stmt(0x06, ALLOW));
    let input = seccomp(&insns);
    let depth = build_preferring(&input, &mut Budget::default(), Prefer::Depth).unwrap().stats;
    let size = build_preferring(&input, &mut Budget::default(), Prefer::Size).unwrap().stats;
    assert_eq!((depth.kept_input, depth.depth_layout_too_long), (None, None));
    assert!(depth.output_insns > depth.input_insns, "{depth:?}");
    assert!(depth.output_longest_path < depth.input_longest_path, "{depth:?}");
    assert!(size.output_insns <= size.input_insns, "{size:?}");
}
