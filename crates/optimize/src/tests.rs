//! Unit tests of the crate's figures, checks and choice of layout: the
//! longest path, the cache's ALLOWs an output must keep, what `Stats` and
//! `KeptInput` print, and which layout `Prefer::Depth` hands out at each of
//! its bounds (as long as the input, as deep, `BPF_MAXINSNS`).

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
    // As long as the input: the layout is taken.
    assert_eq!((stats.kept_input, stats.output_insns), (None, 9));
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

/// `body` for syscall `nr` only: `jeq #nr` past it (over a `ja` when it is
/// longer than a jump offset reaches), falling through to what follows.
fn guarded(nr: u32, body: Vec<Insn>) -> Vec<Insn> {
    let mut insns = match u8::try_from(body.len()) {
        Ok(skip) => vec![Insn::jump(0x15, nr, 0, skip)],
        Err(_) => vec![Insn::jump(0x15, nr, 1, 0), Insn::stmt(0x05, body.len() as u32)],
    };
    insns.extend(body);
    insns
}

/// `args[0].lo` compared with `values` one `jeq` each, libseccomp's
/// allow-list: ALLOW on a match, else ERRNO(1). In runs of 200, each but
/// the last followed by `ja` over a `ret ALLOW` of its own, so every
/// offset fits.
fn allow_list(values: &[u32]) -> Vec<Insn> {
    let mut body = vec![Insn::stmt(0x20, 16)];
    let runs: Vec<&[u32]> = values.chunks(200).collect();
    for (r, run) in runs.iter().enumerate() {
        let n = run.len();
        body.extend(run.iter().enumerate().map(|(i, &v)| Insn::jump(0x15, v, (n - i) as u8, 0)));
        let miss = if r + 1 == runs.len() { Insn::stmt(0x06, 0x0005_0001) } else { Insn::stmt(0x05, 1) };
        body.extend([miss, Insn::stmt(0x06, ALLOW)]);
    }
    body
}

/// `args[0].lo + steps` compared with 5: arithmetic, so no tree; a long
/// path the layout cannot shorten.
fn arithmetic(steps: u32) -> Vec<Insn> {
    let mut body = vec![Insn::stmt(0x20, 16)];
    body.extend((0..steps).map(|_| Insn::stmt(0x04, 1)));
    body.extend([Insn::jump(0x15, 5, 0, 1), Insn::stmt(0x06, ALLOW), Insn::stmt(0x06, 0x0005_0002)]);
    body
}

/// An x86_64 filter of `blocks`, ALLOW for every other syscall.
fn filter(blocks: impl IntoIterator<Item = Vec<Insn>>) -> Program {
    let mut insns = x86_64_head();
    insns.extend(blocks.into_iter().flatten());
    insns.push(Insn::stmt(0x06, ALLOW));
    seccomp(&insns)
}

/// The layout `prefer` gives `input` after the passes, before any choice
/// between layouts: its length and longest path.
fn laid_out(input: &Program, prefer: Prefer) -> (usize, usize) {
    let partition = Partition::build(input, &mut Budget::default(), usize::MAX).unwrap();
    let (mut insns, _) = layout::emit_preferring(&partition, prefer);
    passes::run(&mut insns);
    (insns.len(), longest_path(&insns))
}

fn stats_preferring(input: &Program, prefer: Prefer) -> Stats {
    build_preferring(input, &mut Budget::default(), prefer).unwrap().stats
}

fn step_values(n: u32, step: u32, base: u32) -> Vec<u32> {
    (0..n).map(|i| base + i * step).collect()
}

/// A depth layout no longer than the input is taken even where it is no
/// shallower: one as long as the input (the size-first layout is one
/// longer, so `Prefer::Size` takes the depth layout as well), and one
/// shorter than the input and than the size-first layout.
#[test]
fn depth_preferred_takes_a_layout_no_longer_than_the_input() {
    // Four values of `getpid`'s argument; every other syscall shares the
    // list's `ret ALLOW`.
    let list = allow_list(&step_values(4, 3, 0));
    let mut insns = x86_64_head();
    insns.push(Insn::jump(0x15, 39, 0, (list.len() - 1) as u8));
    insns.extend(list.iter().copied());
    let as_long = seccomp(&insns);
    let (input_len, input_path) = (as_long.len(), longest_path(as_long.original()));
    assert_eq!(laid_out(&as_long, Prefer::Depth), (input_len, input_path));
    assert_eq!(laid_out(&as_long, Prefer::Size).0, input_len + 1);
    let depth = stats_preferring(&as_long, Prefer::Depth);
    assert_eq!((depth.kept_input, depth.output_insns), (None, input_len), "{depth:?}");
    // Preferring size takes it too: the residual layout `Choice` priced
    // as shorter comes out one longer after the passes.
    let size = stats_preferring(&as_long, Prefer::Size);
    assert_eq!((size.kept_input, size.output_insns, size.layout.switches), (None, input_len, depth.layout.switches));

    // The same list before a `ret ALLOW` of the filter's own.
    let shorter = filter([guarded(39, list)]);
    let (depth_len, depth_path) = laid_out(&shorter, Prefer::Depth);
    assert_eq!((depth_len + 1, depth_path), (shorter.len(), longest_path(shorter.original())));
    assert_eq!(laid_out(&shorter, Prefer::Size).0, shorter.len());
    let depth = stats_preferring(&shorter, Prefer::Depth);
    assert_eq!((depth.kept_input, depth.output_insns), (None, depth_len), "{depth:?}");
}

/// A depth layout longer than the input and no shallower (the longest
/// path is the arithmetic's, which no tree shortens) gives way to the
/// size-first layout.
#[test]
fn depth_preferred_gives_way_when_longer_and_no_shallower() {
    let input = filter([guarded(1, arithmetic(20)), guarded(39, allow_list(&step_values(14, 3, 0)))]);
    let input_path = longest_path(input.original());
    let (depth_len, depth_path) = laid_out(&input, Prefer::Depth);
    assert_eq!((depth_len, depth_path), (input.len() + 1, input_path));
    let size = laid_out(&input, Prefer::Size);
    assert!(size.0 <= input.len(), "{size:?}");
    let depth = stats_preferring(&input, Prefer::Depth);
    assert_eq!(depth, stats_preferring(&input, Prefer::Size));
    assert_eq!((depth.kept_input, depth.output_insns, depth.depth_layout_too_long), (None, size.0, None));
}

/// A shallower depth layout is taken up to `BPF_MAXINSNS` instructions
/// and not one past it (where the size-first layout is taken and the
/// length refused is reported). Five allow-lists of about 700 values: the
/// last list's length is found so the depth layout is exactly 4,096 (each
/// value adds one instruction there).
#[test]
fn depth_preferred_is_bounded_by_bpf_maxinsns() {
    let lists = |last: u32| {
        filter((0..5u32).map(|nr| {
            let n = if nr == 4 { last } else { 700 };
            guarded(nr, allow_list(&step_values(n, 3, nr * 100_000)))
        }))
    };
    let first_guess = 600;
    let (guess_len, _) = laid_out(&lists(first_guess), Prefer::Depth);
    let last = first_guess + (BPF_MAXINSNS - guess_len) as u32;
    let (at_most, one_past) = (lists(last), lists(last + 1));
    for (input, len) in [(&at_most, BPF_MAXINSNS), (&one_past, BPF_MAXINSNS + 1)] {
        let (depth_len, depth_path) = laid_out(input, Prefer::Depth);
        assert_eq!(depth_len, len);
        assert!(input.len() < BPF_MAXINSNS && depth_path < longest_path(input.original()));
    }

    let taken = stats_preferring(&at_most, Prefer::Depth);
    assert_eq!((taken.kept_input, taken.depth_layout_too_long, taken.output_insns), (None, None, BPF_MAXINSNS));
    let refused = stats_preferring(&one_past, Prefer::Depth);
    assert_eq!(refused.depth_layout_too_long, Some(BPF_MAXINSNS + 1));
    let size = stats_preferring(&one_past, Prefer::Size);
    assert_eq!((refused.kept_input, refused.output_insns), (None, size.output_insns));
}
