#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! `optimize` on every testdata filter (testdata/filters and the Docker-like
//! profile pair): the output is proved equal by `equiv`, is never longer
//! (nor longer than libseccomp's binary tree of the same rules; a quarter of
//! its linear Docker-sized filter), runs no path longer than 32,
//! keeps the kernel's cached ALLOWs, answers every kernel-checked vector as
//! expected, and agrees with the input on branch-reaching inputs and on
//! exhaustive sweeps of `nr` per arch (classic interpreter, independent of
//! the proof); the running kernel gives the input's result on every vector.
//! Generated programs and the blow-up shapes: the layout agrees with its
//! input on branch-reaching inputs, and `equiv` never finds a difference.

use cbpf::{Interp, Mode, Program, SeccompData};
use engine::{EngineKind, Outcome, Prepared, SeccompEngine};
use seccomp::arch::{AUDIT_ARCH_I386, AUDIT_ARCH_X86_64};
use seccomp::cache::kernel_cache_allow;
use test_kit::corpus;

/// Inputs with the full return value expected for each.
type Vectors = Vec<(SeccompData, u32)>;

/// `(name, program, vectors)`.
fn inputs() -> Vec<(String, Program, Vectors)> {
    let mut out: Vec<_> = corpus::filters()
        .unwrap()
        .into_iter()
        .map(|f| {
            let vectors = f.vectors().unwrap().into_iter().map(|v| (v.data, v.action)).collect();
            (f.name, f.program, vectors)
        })
        .collect();
    let profiles = corpus::testdata().join("profiles");
    let text = std::fs::read_to_string(profiles.join("docker_like.vectors.jsonl")).unwrap();
    let vectors: Vectors =
        engine::vectors::parse(&text).unwrap().into_iter().map(|v| (v.data, v.action.unwrap())).collect();
    for name in ["docker_like", "docker_like_opt2"] {
        let insns = cbpf::raw::decode(&std::fs::read(profiles.join(format!("{name}.bpf"))).unwrap()).unwrap();
        out.push((name.to_string(), cbpf::validate(&insns, Mode::Seccomp).unwrap(), vectors.clone()));
    }
    assert!(out.len() >= 14, "testdata missing: {}", out.len());
    out
}

/// The proved output (`optimize::optimize` refuses anything `equiv` does
/// not prove equal).
fn optimized(p: &Program) -> optimize::Optimized {
    optimize::optimize(p, &Default::default()).unwrap()
}

/// The layout alone, unproved.
fn build(p: &Program) -> optimize::Optimized {
    optimize::build(p, &mut Default::default()).unwrap()
}

/// `equiv` never says the layout differs from its input (undecided within
/// its budget is allowed on generated shapes; `Equal` is counted).
fn never_differs(what: &str, input: &Program, out: &Program) -> bool {
    let verdict = equiv::check(equiv::Side::single(input), equiv::Side::single(out), &Default::default());
    match verdict {
        Ok(equiv::Verdict::Equal) => true,
        Ok(equiv::Verdict::Differ(c)) => panic!("{what}: equiv finds a difference: {c:?}"),
        Err(_) => false,
    }
}

fn run(i: &Interp, d: &SeccompData) -> u32 {
    i.run_seccomp(&d.to_bytes()).unwrap()
}

/// Numbers worth sweeping on `arch`: everything below 1100, the edges, and
/// every number the filter compares (and its neighbours).
fn numbers(p: &Program, arch: u32) -> Vec<u32> {
    let mut nrs: Vec<u32> = (0..1100).chain([u32::MAX, u32::MAX - 1, 0x3fff_ffff, 0x4000_0000, 0x8000_0000]).collect();
    for k in seccomp::analysis::compared_nrs(p, arch).unwrap() {
        nrs.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]);
    }
    for x32 in 0x4000_0000..0x4000_0000 + 600 {
        nrs.push(x32);
    }
    nrs.sort_unstable();
    nrs.dedup();
    nrs
}

/// The `_opt2` twin of `name` (libseccomp's binary tree of the same rules).
fn opt2_of<'a>(name: &str, all: &'a [(String, Program, Vectors)]) -> Option<&'a (String, Program, Vectors)> {
    let twin = format!("{name}_opt2");
    all.iter().find(|(n, _, _)| *n == twin)
}

#[test]
fn every_filter_is_optimised_smaller_and_agrees_with_its_input() {
    let mut report: Vec<String> = Vec::new();
    let all = inputs();
    for (name, input, vectors) in all.clone() {
        let out = optimized(&input);
        let s = out.stats;
        let verdict = equiv::check(equiv::Side::single(&input), equiv::Side::single(&out.program), &Default::default());
        assert_eq!(verdict, Ok(equiv::Verdict::Equal), "{name}");
        report.push(format!("{name:24} {s}"));
        eprintln!("{}", report.last().unwrap());
        // A filter already as short as its dispatch can be is kept; the
        // benchmark filters and the sandboxes must not be.
        let must_shrink =
            ["allow306", "docker_like", "long_jumps_large", "sshd_", "chromium_"].iter().any(|p| name.starts_with(p));
        assert!(!must_shrink || s.kept_input.is_none(), "{name}: input kept: {:?}", s.kept_input);
        assert!(out.program.len() <= input.len(), "{name}");
        assert!(s.output_longest_path <= s.input_longest_path, "{name}: {s:?}");
        // Flat: argument checks are trees, not chains (long_jumps_large's
        // 100 chdir rules included).
        assert!(s.output_longest_path <= 32, "{name}: {s:?}");
        // No longer than libseccomp's binary tree of the same rules.
        if let Some((_, opt2, _)) = opt2_of(&name, &all) {
            assert!(out.program.len() <= opt2.len(), "{name}: {} > opt2 {}", out.program.len(), opt2.len());
        }
        // The Docker-sized profile: at least 4x smaller than libseccomp's
        // linear output.
        if name == "docker_like" {
            assert!(4 * out.program.len() <= input.len(), "{name}: {} of {}", out.program.len(), input.len());
        }
        let (a, b) = (Interp::new(&input), Interp::new(&out.program));
        for (data, action) in &vectors {
            assert_eq!(run(&b, data), *action, "{name}: vector {data:?}");
        }
        for data in test_kit::branch::branch_inputs(&input).iter().chain(&test_kit::branch::branch_inputs(&out.program))
        {
            assert_eq!(run(&a, data), run(&b, data), "{name}: branch input {data:?}");
        }
        // Each arch the filter names, and two it does not, with arguments
        // from the vectors (the argument checks see their edge values).
        let mut arches = seccomp::analysis::compared_arches(&input).unwrap();
        arches.extend([0, 0xc000_00b7]);
        let mut shapes: Vec<SeccompData> = vectors.iter().map(|(d, _)| *d).collect();
        shapes.sort_by_key(|d| (d.args, d.instruction_pointer));
        shapes.dedup_by_key(|d| (d.args, d.instruction_pointer));
        shapes.truncate(64);
        for &arch in &arches {
            for nr in numbers(&input, arch) {
                for shape in &shapes {
                    let d = SeccompData { nr: nr as i32, arch, ..*shape };
                    assert_eq!(run(&a, &d), run(&b, &d), "{name}: arch {arch:#x} nr {nr} {d:?}");
                }
            }
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// Every (arch, nr) the kernel's cache marks ALLOW for the input is marked
/// for the output: x86_64 (native) and i386 (compat), as this kernel
/// prepares them, plus every other arch the filter names as a native.
#[test]
fn the_kernel_cache_keeps_every_allow() {
    for (name, input, _) in inputs() {
        let out = optimized(&input);
        assert_eq!(optimize::cache_lost(&input, &out.program), None, "{name}");
        let n = seccomp::syscalls::table(seccomp::Arch::X86_64).unwrap().nr_syscalls;
        for arch in [AUDIT_ARCH_X86_64, AUDIT_ARCH_I386] {
            let before = kernel_cache_allow(input.original(), arch, n, AUDIT_ARCH_X86_64);
            let after = kernel_cache_allow(out.program.original(), arch, n, AUDIT_ARCH_X86_64);
            let lost: Vec<u32> = before.allowed().into_iter().filter(|&nr| !after.test(nr)).collect();
            assert!(lost.is_empty(), "{name} arch {arch:#x}: cache lost {lost:?}");
            if arch == AUDIT_ARCH_X86_64 && name.starts_with("allow306") {
                assert!(before.allowed().len() >= 300, "{name}: the input allows {}", before.allowed().len());
            }
        }
    }
}

/// The running kernel (seccomp(2) in a forked child) accepts each output
/// and gives the input's expected result on every vector.
#[test]
fn the_kernel_runs_every_output_like_its_input() {
    let test = "the_kernel_runs_every_output_like_its_input";
    if test_data::require::have(test, test_data::require::Need::Kernel, kernel::seccomp_available()).is_none() {
        return;
    }
    let mut runs = 0usize;
    let mut unobservable = 0usize;
    for (name, input, vectors) in inputs() {
        let out = optimized(&input);
        let prepared = Prepared::new(out.program.clone()).unwrap();
        let mut engine = SeccompEngine::new(EngineKind::Kernel, &prepared).unwrap();
        let data: Vec<SeccompData> = vectors.iter().map(|(d, _)| *d).collect();
        let got = engine.eval_batch(&data).unwrap();
        for ((d, want), got) in vectors.iter().zip(got) {
            match got {
                Outcome::Action(a) => {
                    runs += 1;
                    assert_eq!(a, *want, "{name}: kernel on {d:?}");
                }
                Outcome::NotObservable(_) => unobservable += 1,
            }
        }
    }
    eprintln!("kernel: {runs} agreeing runs, {unobservable} not observable");
    assert!(runs > 10_000, "only {runs} kernel runs");
}

/// Random valid seccomp programs (`test_kit::gen::seeded`: arithmetic on
/// `nr`, scratch memory, `ret a`, X forms, several arches): the output is
/// never longer and answers every branch-reaching input of either program,
/// with each under every arch the input names and a few numbers, as the
/// input does.
#[test]
fn generated_programs_keep_their_answers() {
    let (mut optimised, mut kept, mut runs, mut proved) = (0usize, 0usize, 0usize, 0usize);
    for seed in 0..1500u64 {
        let input = test_kit::gen::seeded(seed, Mode::Seccomp).unwrap().program;
        let input = cbpf::validate(input.original(), Mode::Seccomp).unwrap();
        let out = build(&input);
        assert!(out.program.len() <= input.len(), "seed {seed}");
        if out.stats.kept_input.is_some() {
            assert_eq!(out.program.original(), input.original(), "seed {seed}");
            kept += 1;
            continue;
        }
        optimised += 1;
        proved += usize::from(never_differs(&format!("seed {seed}"), &input, &out.program));
        let (a, b) = (Interp::new(&input), Interp::new(&out.program));
        let mut arches = seccomp::analysis::compared_arches(&input).unwrap();
        arches.push(0x1234_5678);
        let mut inputs = test_kit::branch::branch_inputs(&input);
        inputs.extend(test_kit::branch::branch_inputs(&out.program));
        for base in inputs {
            for &arch in std::iter::once(&base.arch).chain(&arches) {
                for nr in [base.nr, 0, 1, 2, 3, -1, 0x4000_0000] {
                    let d = SeccompData { nr, arch, ..base };
                    runs += 1;
                    assert_eq!(
                        run(&a, &d),
                        run(&b, &d),
                        "seed {seed}: {d:?}\n{}",
                        cbpf::text::print_asm(input.original())
                    );
                }
            }
        }
    }
    eprintln!("{optimised} optimised ({proved} proved equal, the rest undecided), {kept} kept, {runs} runs");
    assert!(optimised > 100, "only {optimised} programs optimised");
    assert!(proved * 10 >= optimised * 9, "only {proved} of {optimised} proved");
}

/// The blow-up shapes of issue 13 (many arches, keyed tables, `M[]`
/// diamonds, undecided argument chains, nr prefixes): the output answers
/// every branch-reaching input of either program as the input does.
#[test]
fn blow_up_shapes_keep_their_answers() {
    for n in [28, 230, 1601] {
        for shape in fuzz_replay::blowup::Shape::all(n) {
            let input = cbpf::validate(&shape.build(), Mode::Seccomp).unwrap();
            let out = build(&input);
            assert!(out.program.len() <= input.len(), "{}", shape.name());
            never_differs(&shape.name(), &input, &out.program);
            let (a, b) = (Interp::new(&input), Interp::new(&out.program));
            let mut inputs = test_kit::branch::branch_inputs(&input);
            inputs.extend(test_kit::branch::branch_inputs(&out.program));
            for d in &inputs {
                assert_eq!(run(&a, d), run(&b, d), "{}: {d:?}", shape.name());
            }
        }
    }
}

/// `ioctl` allowed for `requests` of `args[1]` as libseccomp writes an
/// allow-list ([`test_data::programs::allow_list`]: the high half 0, then
/// one `jeq` a request on the low half, `run` of them to a `ret ALLOW`),
/// other syscalls allowed, other arches killed.
fn allow_list(requests: &[u32], run: usize) -> Program {
    let list = test_data::programs::AllowList { nr: Some(16), arg: 1, high_zero: true, run, values: requests };
    let raw = test_data::programs::allow_list(&list);
    let insns: Vec<cbpf::Insn> =
        raw.into_iter().map(|r| cbpf::Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect();
    cbpf::validate(&insns, Mode::Seccomp).unwrap()
}

/// libseccomp's compact layout: [`test_data::programs::COMPACT_RUN`]
/// requests to a `ret`.
fn compact_allow_list(requests: &[u32]) -> Program {
    allow_list(requests, test_data::programs::COMPACT_RUN)
}

/// libseccomp's compact allow-lists of 800 and 3,000 `ioctl` requests:
/// their trees take more instructions than the lists, so `optimize` keeps
/// the lists (a path of about 800); preferring depth lays the trees out,
/// proved equal (3,000: `args[1]`'s two halves cut into 2 x 6,001 runs),
/// a path of at most 32 in more instructions than the input. At 3,900
/// requests the tree would pass `BPF_MAXINSNS`: the size-first layout is
/// written, and the stats say why.
#[test]
fn preferring_depth_lays_out_the_tree_of_a_compact_allow_list() {
    for n in [800, 3000] {
        let requests: Vec<u32> = (0..n).map(|i| 0x5400 + 7 * i + i % 5).collect();
        let input = compact_allow_list(&requests);
        let by_size = optimized(&input);
        assert!(by_size.stats.output_longest_path > 800, "{}", by_size.stats);
        let options = optimize::Options { prefer: optimize::Prefer::Depth, ..Default::default() };
        let out = optimize::optimize(&input, &options).unwrap();
        let stats = out.stats;
        assert_eq!((stats.kept_input, stats.depth_layout_too_long), (None, None), "{stats}");
        assert!(stats.output_longest_path <= 32 && stats.output_insns > input.len(), "{stats}");
        let (a, b) = (Interp::new(&input), Interp::new(&out.program));
        for r in requests.iter().step_by(3).flat_map(|&r| [r - 1, r, r + 1]) {
            for hi in [0u32, 1, u32::MAX] {
                let mut d = SeccompData { nr: 16, arch: AUDIT_ARCH_X86_64, ..Default::default() };
                d.args[1] = u64::from(hi) << 32 | u64::from(r);
                assert_eq!(run(&a, &d), run(&b, &d), "request {r:#x}, high half {hi:#x}");
            }
        }
    }
    let input = compact_allow_list(&(0..3900u32).map(|i| 0x5400 + 7 * i).collect::<Vec<_>>());
    let mut budget = Default::default();
    let depth = optimize::build_preferring(&input, &mut budget, optimize::Prefer::Depth).unwrap();
    assert!(depth.stats.depth_layout_too_long.is_some_and(|n| n > 4096), "{}", depth.stats);
    assert_eq!(depth.program.original(), build(&input).program.original());
}

/// An allow-list of 800 `ioctl` requests on `args[1]`, laid out as
/// libseccomp lays one out without its compact runs (the high half 0, then
/// a `jeq` per request on the low half, each followed by its own `ret
/// ALLOW`, ERRNO past the last): `optimize` grows
/// a tree over the requests, and the proof of it concludes, because
/// `equiv` cuts `args[1].lo` into the requests' runs (the solver alone was
/// undecided from about 700 requests on). Every request, its neighbours
/// and the high half's edges answer as the input does.
#[test]
fn a_long_argument_allow_list_is_optimised_and_proved() {
    let requests: Vec<u32> = (0..800u32).map(|i| 0x5400 + 7 * i + i % 5).collect();
    let input = allow_list(&requests, 1);
    let out = optimized(&input);
    let stats = out.stats;
    assert_eq!(stats.kept_input, None, "{stats}");
    assert!(stats.output_longest_path <= 32 && stats.output_insns < input.len(), "{stats}");
    let (a, b) = (Interp::new(&input), Interp::new(&out.program));
    for r in requests.iter().flat_map(|&r| [r - 1, r, r + 1]) {
        for hi in [0u32, 1, u32::MAX] {
            let mut d = SeccompData { nr: 16, arch: AUDIT_ARCH_X86_64, ..Default::default() };
            d.args[1] = u64::from(hi) << 32 | u64::from(r);
            assert_eq!(run(&a, &d), run(&b, &d), "request {r:#x}, high half {hi:#x}");
        }
    }
}
