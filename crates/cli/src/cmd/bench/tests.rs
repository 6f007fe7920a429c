//! What `bench`'s runs through the binary cannot pin (`tests/bench.rs`
//! checks a report's shape and consistency, not its numbers): the timing
//! plan and arithmetic, the names and choice of inputs, the kernel's
//! checks and columns (these need seccomp filters in forked children), and
//! the report's exact text and JSON for figures chosen here.

use cbpf::uapi::audit::{AUDIT_ARCH_I386, AUDIT_ARCH_X86_64};
use serde_json::Value;

use super::inputs::{input_name, optimized_paths, seccomp_input, vector_inputs};
use super::kernel::{difference, kernel_check, kernel_columns, kernel_iterations, syscall_samples};
use super::*;

const ALLOW: u32 = cbpf::uapi::seccomp::SECCOMP_RET_ALLOW;

fn stats(median: f64, min: f64, max: f64, samples: usize) -> Stats {
    Stats { median, min, max, samples }
}

fn measured(cell: &Cell) -> Stats {
    match cell {
        Cell::Measured(s) => *s,
        Cell::Unavailable(why) => panic!("not measured: {why}"),
    }
}

fn unavailable(cell: &Cell) -> &str {
    match cell {
        Cell::Measured(s) => panic!("measured: {s:?}"),
        Cell::Unavailable(why) => why,
    }
}

fn prepared(asm: &str) -> Prepared {
    let insns = cbpf::text::parse(asm.as_bytes(), cbpf::Format::Asm).unwrap();
    Prepared::new(cbpf::validate(&insns, cbpf::Mode::Seccomp).unwrap()).unwrap()
}

/// `prepared`'s inputs with the classic interpreter's answers.
fn inputs_of(prepared: &Prepared, datas: &[cbpf::SeccompData]) -> Vec<Input> {
    let interp = cbpf::Interp::new(prepared.program());
    let ebpf = engine::load_ebpf(prepared.converted()).unwrap();
    let mut vm = ebpf::Vm::new();
    datas.iter().map(|d| seccomp_input(&interp, &mut vm, &ebpf, format!("nr {}", d.nr), *d).unwrap()).collect()
}

fn x86_64(nr: i32) -> cbpf::SeccompData {
    cbpf::SeccompData { nr, arch: AUDIT_ARCH_X86_64, instruction_pointer: 0, args: [0; 6] }
}

/// `nr == -1` is refused with ERRNO(1), every other number allowed.
const MINUS_ONE_REFUSED: &str = "ld [0]\njeq #-1, bad, ok\nbad: ret #0x50001\nok: ret #0x7fff0000\n";

#[test]
fn plan_fits_the_time() {
    let (rounds, sample) = plan(2.0, 100);
    assert_eq!(rounds, ROUNDS);
    assert!(sample.as_secs_f64() * (rounds * 100) as f64 <= 2.0);
    let (rounds, sample) = plan(0.001, 10_000);
    assert_eq!((rounds, sample), (5, MIN_SAMPLE));
}

#[test]
fn plan_shortens_the_rounds_before_the_samples() {
    // 100 cells in 10 ms: 11 rounds would make samples of 8.8 µs, below
    // 5 * MIN_SAMPLE; 9 rounds make them 10.75 µs.
    assert_eq!(plan(0.01, 100), (9, Duration::from_secs_f64(0.01 / (100.0 * 9.3))));
}

#[test]
fn only_runs_of_a_second_or_more_get_a_progress_bar() {
    assert_eq!(progress(10, 0.999).length(), None);
    assert_eq!(progress(10, 1.0).length(), Some(10));
}

#[test]
fn the_deepest_input_is_the_first_of_the_longest_paths() {
    let p = prepared(MINUS_ONE_REFUSED);
    let mut inputs = inputs_of(&p, &[x86_64(1), x86_64(2), x86_64(3), x86_64(4)]);
    for (input, path) in inputs.iter_mut().zip([3, 7, 5, 7]) {
        input.cbpf_path = path;
    }
    assert_eq!(deepest(&inputs), 1);
    assert_eq!(deepest(&[]), 0);
}

#[test]
fn the_rounds_made_are_those_of_a_live_cell() {
    // A dead lane's cells have no samples; the loop stopped after 4 rounds.
    let samples = vec![vec![Vec::new(), Vec::new()], vec![vec![1.0; 4], vec![2.0; 4]]];
    assert_eq!(rounds_made(&samples, 11), 4);
    assert_eq!(rounds_made(&[vec![Vec::new()]], 11), 11);
}

#[test]
fn the_grid_has_a_slot_per_input_and_the_mix_and_times_live_lanes_only() {
    let p = prepared(MINUS_ONE_REFUSED);
    let mut datas = [x86_64(1).to_bytes(), x86_64(2).to_bytes(), x86_64(3).to_bytes()];
    let engine = engine::SeccompEngine::new(EngineKind::Cbpf, &p).unwrap();
    let mut lanes = [(EngineKind::Cbpf, Ok(engine)), (EngineKind::RbpfJit, Err("refused".to_string()))];
    let grid = Lanes { lanes: &mut lanes, inputs: &mut datas[..] };
    assert_eq!((grid.lanes(), grid.slots()), (2, 4));
    assert_eq!([grid.evals(0), grid.evals(2), grid.evals(3)], [1, 1, 3]);
    assert!(grid.live(0));
    assert!(!grid.live(1));
    assert!(!grid.live(2));
}

#[test]
fn a_seccomp_bar_counts_cells_and_kernel_tasks_over_both_times() {
    let schedule = Schedule::new(0.6, 1, 1);
    assert_eq!(seccomp::progress_of(&schedule, 4, 0.6, true).length(), Some(schedule.steps() + 4));
    // 0.6 s without the kernel: no bar.
    assert_eq!(seccomp::progress_of(&schedule, 0, 0.6, false).length(), None);
}

#[test]
fn the_call_floor_is_one_cell_over_every_input() {
    let mut datas = [x86_64(1).to_bytes(), x86_64(2).to_bytes(), x86_64(3).to_bytes()];
    let floor = seccomp::CallFloor(&mut datas);
    assert_eq!((floor.lanes(), floor.slots(), floor.evals(0)), (1, 1, 3));
    assert!(floor.live(0));
}

#[test]
fn a_schedule_times_every_live_engine_on_each_input_and_the_mix() {
    let s = Schedule::new(2.0, 2, 3);
    assert_eq!((s.rounds, s.cells, s.steps()), (ROUNDS, 8, 8 * ROUNDS as u64));
    assert_eq!((s.rounds, s.sample), plan(2.0, 8));
    // No live engine: nothing to time.
    assert_eq!(Schedule::new(2.0, 0, 3).steps(), 0);
}

#[test]
fn a_slot_is_one_input_and_the_last_slot_their_mix() {
    assert_eq!(slot_range(0, 3), 0..1);
    assert_eq!(slot_range(2, 3), 2..3);
    assert_eq!(slot_range(3, 3), 0..3);
}

#[test]
fn a_kernel_jit_measurement_fits_three_rounds_in_the_time_within_bounds() {
    // 3 ms over 3 rounds of the harness and 4 inputs: 200 µs each.
    assert_eq!(jit::measurement(0.003, 4), 0.003 / 15.0);
    assert_eq!(jit::measurement(1.0, 4), 0.001);
    assert_eq!(jit::measurement(1e-4, 4), 50e-6);
}

#[test]
fn kernel_jit_makes_the_rounds_asked_and_at_least_three_within_the_time() {
    use jit::more_rounds;
    // (done, asked, elapsed, time)
    assert!(more_rounds(3, 4, 0.5, 1.0));
    assert!(!more_rounds(4, 4, 0.5, 1.0));
    // At least three, past the time too.
    assert!(more_rounds(2, 1, 5.0, 1.0));
    assert!(!more_rounds(3, 1, 0.5, 1.0));
    // Past the minimum, the time stops it (at its very end too).
    assert!(!more_rounds(3, 11, 1.0, 1.0));
    assert!(!more_rounds(3, 11, 2.0, 1.0));
}

#[test]
fn a_hook_target_makes_the_rounds_its_time_allows() {
    // Sizing took 3 ms: 1 ms a test run, 3 a round of two inputs and the
    // baseline, so 24 ms hold 8 rounds.
    assert_eq!(jit::hook_rounds(0.024, 0.003, 2), 8);
    assert_eq!(jit::hook_rounds(1.0, 0.003, 2), ROUNDS);
    assert_eq!(jit::hook_rounds(0.001, 0.003, 2), 3);
    assert_eq!(jit::above(25, 10.5), 14.5);
}

#[test]
fn a_kernel_jit_mix_sample_is_the_mean_of_its_round() {
    assert_eq!(jit::mean_ns(&[(0, 3.0), (0, 5.0), (1, 10.0)]), 6.0);
    assert_eq!(jit::mean_ns(&[]), 0.0);
}

#[test]
fn names_say_arch_and_syscall() {
    assert_eq!(input_name(AUDIT_ARCH_X86_64, 0), "x86_64:read");
    assert_eq!(input_name(AUDIT_ARCH_X86_64, 0x4000_0000), "x32:read");
    assert_eq!(input_name(AUDIT_ARCH_X86_64, 0x4000_0000 | 600), "x86_64:#1073742424");
    assert_eq!(input_name(AUDIT_ARCH_I386, 1), "i386:exit");
    assert_eq!(input_name(0x1234, 5), "0x1234:#5");
}

#[test]
fn kernel_iterations_share_the_time_among_the_tasks_within_bounds() {
    // 2 s over 4 tasks: 0.5 s each, six loops of calls of about 300 ns.
    assert_eq!(kernel_iterations(2.0, 4), 277_777);
    assert_eq!(kernel_iterations(0.01, 4), 1_388);
    // No task counts as one; the bounds hold at both ends.
    assert_eq!(kernel_iterations(0.5, 0), 277_777);
    assert_eq!(kernel_iterations(2.0, 1), 500_000);
    assert_eq!(kernel_iterations(1e-6, 1), 200);
}

#[test]
fn a_difference_is_taken_from_the_baselines_median() {
    let d = measured(&difference(&[10.0, 12.0, 14.0, 11.0, 13.0], &[1.0, 2.0, 30.0]));
    assert_eq!((d.median, d.min, d.max, d.samples), (10.0, 8.0, 12.0, 5));
    assert_eq!(unavailable(&difference(&[1.0], &[])), "no samples");
    assert_eq!(unavailable(&difference(&[], &[1.0])), "no samples");
}

#[test]
fn a_kernel_mix_is_the_mean_of_the_timed_inputs() {
    let cells = [
        Cell::Measured(stats(10.0, 8.0, 12.0, 5)),
        Cell::Unavailable("foreign arch".into()),
        Cell::Measured(stats(20.0, 16.0, 30.0, 3)),
    ];
    let m = measured(&kernel_mix(&cells));
    assert_eq!((m.median, m.min, m.max, m.samples), (15.0, 12.0, 21.0, 3));
    assert_eq!(unavailable(&kernel_mix(&cells[1..2])), "no input timed in the kernel");
}

#[test]
fn vectors_are_named_by_their_line_and_blank_lines_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.jsonl");
    let line = |nr: i32| format!(r#"{{"arch":3221225534,"nr":{nr},"ip":0,"args":[1,0,0,0,0,0],"action":0}}"#);
    std::fs::write(&path, format!("\u{feff}{}\n\n  \n{}\n", line(39), line(-1))).unwrap();
    let path = path.to_str().unwrap();
    // The filter read from stdin does not stop a file of vectors.
    let got = vector_inputs(path, true).unwrap();
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["line 1", "line 4"]);
    assert_eq!((got[0].1.nr, got[1].1.nr, got[1].1.arch, got[1].1.args[0]), (39, -1, AUDIT_ARCH_X86_64, 1));
    // A bad line is named by its number in the file.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, format!("{}\n\n[]\n", line(39))).unwrap();
    let err = vector_inputs(bad.to_str().unwrap(), false).unwrap_err();
    assert!(err.message.ends_with("bad.jsonl: line 3: expected a JSON object"), "{}", err.message);
    let both = vector_inputs("-", true).unwrap_err();
    assert_eq!(both.code, 2, "{}", both.message);
    assert!(both.message.contains("cannot both be read from stdin"), "{}", both.message);
}

#[test]
fn optimised_paths_come_from_the_optimised_filter_or_not_at_all() {
    // Two equal tests of nr: optimize drops one.
    let p = prepared("ld [0]\njeq #1, allow, l2\nl2: jeq #1, allow, l3\nl3: jeq #2, allow, kill\nallow: ret #0x7fff0000\nkill: ret #0\n");
    let mut inputs = inputs_of(&p, &[x86_64(2), x86_64(3)]);
    assert_eq!(inputs[0].cbpf_path, 5);
    let len = optimized_paths(&p, &mut inputs).unwrap();
    assert!(len < p.program().len(), "{len}");
    for i in &inputs {
        assert!(i.optimized_path.unwrap() < i.cbpf_path, "{i:?}");
    }
    // The action is the number itself: optimize keeps the input, so there
    // is no optimised filter to show.
    let p = prepared("ld [0]\nret a\n");
    let mut inputs = inputs_of(&p, &[x86_64(2)]);
    assert_eq!(optimized_paths(&p, &mut inputs), None);
    assert_eq!(inputs[0].optimized_path, None);
}

/// `bench`'s arguments from its command line (`args` after `bench`).
fn bench_args(args: &[&str]) -> BenchArgs {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }
    <Cli as clap::Parser>::parse_from(std::iter::once("bench").chain(args.iter().copied())).bench
}

#[test]
fn kernel_jit_checks_every_answer_and_makes_the_rounds_asked() {
    if !bpf_here("kernel_jit_checks_every_answer_and_makes_the_rounds_asked") {
        return;
    }
    let p = prepared(MINUS_ONE_REFUSED);
    let mut inputs = inputs_of(&p, &[x86_64(-1), x86_64(39)]);
    // Time enough for many rounds: the rounds asked (at least 3) stop it.
    let args = bench_args(&["f.bpf", "--time", "0.5"]);
    let bar = indicatif::ProgressBar::hidden();
    for (asked, made) in [(1, 3), (4, 4)] {
        let (column, summary) = jit::seccomp_column(&p, &inputs, &args, asked, &bar).unwrap();
        assert_eq!(summary.rounds, made);
        assert_eq!(column.cells.len(), 3);
        assert!(column.cells.iter().all(|c| measured(c).samples == made), "{column:?}");
    }
    inputs[1].ret = 0;
    let err = jit::seccomp_column(&p, &inputs, &args, 3, &bar).unwrap_err();
    let want = "engine kernel-jit returns 0x7fff0000 on input nr 39, the classic interpreter 0x00000000";
    assert!(err.message.contains(want), "{}", err.message);
}

#[test]
fn kernel_jit_checks_every_packet_on_every_hook_target() {
    if !bpf_here("kernel_jit_checks_every_packet_on_every_hook_target") {
        return;
    }
    let insns = cbpf::text::parse(b"ldh [12]\njeq #0x800, acc, drop\nacc: ret #-1\ndrop: ret #0\n", cbpf::Format::Asm);
    let p = Prepared::new(cbpf::validate(&insns.unwrap(), cbpf::Mode::Socket).unwrap()).unwrap();
    let mut ip = vec![0u8; 60];
    ip[12] = 0x08;
    let mut inputs = vec![Input {
        name: "packet 0".to_string(),
        data: cbpf::SeccompData::default(),
        packet: ip,
        ret: u32::MAX,
        cbpf_path: 3,
        ebpf_path: 8,
        optimized_path: None,
    }];
    let columns = jit::socket_columns(&p, &inputs, 0.01).unwrap();
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["kernel-jit:xdp", "kernel-jit:tc", "kernel-jit:socket"]);
    for c in &columns {
        assert_eq!(c.cells.len(), 2, "{c:?}");
        let packet = measured(&c.cells[0]);
        assert!(packet.samples >= 3, "{c:?}");
        assert_eq!(measured(&c.cells[1]), packet, "one packet: the mix is its figure");
    }
    inputs[0].ret = 0;
    let err = jit::socket_columns(&p, &inputs, 0.01).unwrap_err();
    let want = "engine kernel-jit:xdp returns 4294967295 on input packet 0, the classic interpreter 0";
    assert!(err.message.contains(want), "{}", err.message);
}

/// Whether this host loads and test-runs eBPF programs (bpf(2)).
fn bpf_here(test: &str) -> bool {
    test_data::require::have(test, test_data::require::Need::Bpf, ::kernel::bpf::available()).is_some()
}

/// Whether this host runs seccomp filters in forked children (a visible
/// skip where it does not; a failure under CI).
fn kernel_here(test: &str) -> bool {
    test_data::require::have(test, test_data::require::Need::Kernel, ::kernel::seccomp_available()).is_some()
}

#[test]
fn the_kernel_times_native_calls_it_answers_as_the_interpreter_does() {
    if !kernel_here("the_kernel_times_native_calls_it_answers_as_the_interpreter_does") {
        return;
    }
    let p = prepared(MINUS_ONE_REFUSED);
    let mut inputs = inputs_of(&p, &[x86_64(-1), x86_64(39), x86_64(40), x86_64(0x4000_0000)]);
    let mut i386 = x86_64(20);
    i386.arch = AUDIT_ARCH_I386;
    inputs.extend(inputs_of(&p, &[i386]));
    // An answer the kernel does not give: not timed.
    inputs[2].ret = 0;
    let checked = kernel_check(&p, &inputs);
    // -1 is negative, not an x32 number, though bit 30 is set.
    assert_eq!(checked[0], Ok(()));
    assert_eq!(checked[1], Ok(()));
    let wrong = checked[2].as_ref().unwrap_err();
    assert!(wrong.contains("the kernel returns 0x7fff0000, the classic interpreter 0x00000000: not timed"), "{wrong}");
    for refused in &checked[3..] {
        assert!(refused.as_ref().unwrap_err().contains("native x86_64 system calls only"), "{refused:?}");
    }
}

#[test]
fn kernel_samples_are_five_per_call() {
    if !kernel_here("kernel_samples_are_five_per_call") {
        return;
    }
    const GETPPID: u32 = 110;
    let samples = syscall_samples(&[], GETPPID, [0; 6], 200).unwrap();
    assert_eq!(samples.len(), 5, "{samples:?}");
    assert!(samples.iter().all(|s| s.is_finite() && *s > 0.0), "{samples:?}");
}

#[test]
fn kernel_columns_show_the_cache_where_it_skips_the_filter() {
    if !kernel_here("kernel_columns_show_the_cache_where_it_skips_the_filter") {
        return;
    }
    let p = prepared(MINUS_ONE_REFUSED);
    let mut inputs = inputs_of(&p, &[x86_64(-1), x86_64(39), x86_64(40)]);
    inputs[2].data.arch = AUDIT_ARCH_I386;
    let usable = kernel_check(&p, &inputs);
    let (installed, forced, hit) = kernel_columns(&p, &inputs, &usable, 200, &indicatif::ProgressBar::hidden());
    assert_eq!((installed.name.as_str(), forced.name.as_str()), ("kernel", KERNEL_FORCED));
    let hit = measured(&hit);
    // An input, then the mix.
    assert_eq!(installed.cells.len(), 4);
    assert_eq!(forced.cells.len(), 4);
    // Every number but -1 is allowed whatever the arguments: the cache
    // skips the filter for 39, so the installed filter costs what a hit does.
    assert_eq!(installed.cached, [Some(false), Some(true), None, None]);
    assert_eq!(forced.cached, installed.cached);
    let (minus_one, forced_39) = (measured(&forced.cells[0]), measured(&forced.cells[1]));
    assert_eq!(measured(&installed.cells[0]), minus_one);
    assert_eq!(measured(&installed.cells[1]), hit);
    assert_ne!(forced_39, hit);
    assert!(unavailable(&installed.cells[2]).contains("native x86_64"));
    assert_eq!(measured(&forced.cells[3]).samples, 5);
}

/// A run's results as `bench` would gather them, with figures chosen so
/// each sits on a different side of the report's rules: two inputs (the
/// second the deepest), every kind of column and note.
fn results() -> Results {
    let input = |name: &str, nr: i32, ret: u32, cbpf_path: u64, ebpf_path: u64, optimized_path: Option<u64>| Input {
        name: name.to_string(),
        data: cbpf::SeccompData { args: [nr as u64, 0, 0, 0, 0, 7], instruction_pointer: 9, ..x86_64(nr) },
        packet: Vec::new(),
        ret,
        cbpf_path,
        ebpf_path,
        optimized_path,
    };
    let column =
        |name: &str, cells: Vec<Cell>, cached: Vec<Option<bool>>| Column { name: name.to_string(), cells, cached };
    let m = |median: f64| Cell::Measured(stats(median, median - 1.0, median + 2.0, 11));
    let no_page = || Cell::Unavailable("no executable page".to_string());
    Results {
        file: "f.bpf".to_string(),
        mode: cbpf::Mode::Seccomp,
        insns: 6,
        ebpf_insns: 14,
        inputs: vec![
            input("x86_64:read", 0, ALLOW, 3, 8, Some(2)),
            input("x86_64:write", 1, 0x0005_0001, 5, 11, Some(3)),
        ],
        deepest: 1,
        rounds: 11,
        columns: vec![
            column("cbpf", vec![m(9.996), m(10.0), m(-3.5)], Vec::new()),
            column("rbpf-jit", vec![no_page(), no_page(), Cell::Unavailable("no mix".to_string())], Vec::new()),
            column("kernel", vec![m(40.0), m(120.25)], vec![Some(true), Some(false), None]),
            column(KERNEL_FORCED, vec![m(80.0), m(120.25), m(100.125)], vec![Some(true), Some(false), None]),
        ],
        cache_hit: Some(m(40.0)),
        kernel_iterations: 4629,
        jit: Some(jit::JitSummary {
            rounds: 5,
            baseline: m(30.0),
            copies: Some(16),
            cycled_mix: m(1.5),
            cycle_inputs: Some(1),
        }),
        optimized_insns: Some(5),
        fast: Some(FastForm { switches: 2, native_code_bytes: 0, native_refusal: Some("not x86-64".to_string()) }),
        call_floor: Some(stats(2.25, 2.0, 3.0, 11)),
    }
}

/// The report of [`results`] against the files in `tests/data`:
/// `UPDATE_EXPECT=1` rewrites them (read the diff: every figure, note and
/// field there follows from `results`' numbers by the report's rules).
#[test]
fn the_report_of_a_run_matches_its_golden_files() {
    let r = results();
    let json = serde_json::to_string_pretty(&report::json(&r)).unwrap() + "\n";
    for (name, got) in [("txt", report::text(&r)), ("json", json)] {
        let path = format!("{}/tests/data/bench_report.{name}", env!("CARGO_MANIFEST_DIR"));
        if std::env::var_os("UPDATE_EXPECT").is_some() {
            std::fs::write(&path, &got).unwrap();
        }
        let want = std::fs::read_to_string(&path).unwrap();
        assert_eq!(got, want, "{path}: UPDATE_EXPECT=1 cargo test -p bpfconv-cli --bin bpfconv bench:: blesses");
    }
}

#[test]
fn the_chart_draws_each_engine_but_the_installed_kernel_in_its_own_colour() {
    use timing::plot::Series;
    let r = results();
    let forced = EngineKind::ALL.len();
    // rbpf-jit has no figure, `kernel` is not drawn, and the cbpf mix's
    // negative figure has no place on a logarithmic axis.
    assert_eq!(
        report::series(&r),
        [
            Series { name: "cbpf".into(), points: vec![(0.0, 9.996), (1.0, 10.0)], color: 0 },
            Series {
                name: KERNEL_FORCED.into(),
                points: vec![(0.0, 80.0), (1.0, 120.25), (2.0, 100.125)],
                color: forced
            },
        ]
    );
    // A median of 0 ns has no place there either.
    let mut zero = r;
    zero.columns[0].cells[2] = Cell::Measured(stats(0.0, -1.0, 1.0, 11));
    assert_eq!(report::series(&zero), report::series(&results()));
    let svg = report::svg(&zero).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("f.bpf: cost per input"), "{svg}");
}

#[test]
fn the_report_says_what_was_not_measured_or_not_made() {
    let mut r = results();
    r.optimized_insns = None;
    r.fast = Some(FastForm { switches: 2, native_code_bytes: 120, native_refusal: None });
    r.cache_hit = Some(Cell::Unavailable("no getppid".into()));
    if let Some(jit) = &mut r.jit {
        jit.baseline = Cell::Unavailable("no harness".into());
        jit.cycled_mix = Cell::Unavailable("no cycling harness".into());
        jit.copies = None;
    }
    let text = report::text(&r);
    for line in [
        "opt#: no optimised filter (see the note above).",
        "fast: its 2 argument-check switches ran as x86-64 code (120 bytes), compares and branches.",
        "kernel-jit, inputs in turn: unavailable (no cycling harness).",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    assert!(text.contains("(getppid under an always-allow filter minus getppid unfiltered)."), "{text}");
    assert!(text.contains(" measured in the same round, divided by 1; median of 5 rounds;"), "{text}");
    let doc = report::json(&r);
    assert!(doc.get("optimized_insns").is_none(), "{doc}");
    assert_eq!(doc["kernel"]["cache_hit_ns"], Value::Null);
    assert_eq!(doc["kernel_jit"]["baseline_ns"], Value::Null);
    assert_eq!(doc["kernel_jit"]["copies"], Value::Null);
    assert_eq!(doc["kernel_jit"]["cycled_mix"]["unavailable"], "no cycling harness");
    assert_eq!(doc["fast"]["native_refusal"], Value::Null);
    // A kernel-jit that never ran a round says nothing in the text.
    if let Some(jit) = &mut r.jit {
        jit.rounds = 0;
    }
    let text = report::text(&r);
    assert!(!text.lines().any(|l| l.starts_with("kernel-jit")), "{text}");
    // A filter without argument switches: nothing about `fast`.
    r.fast = Some(FastForm { switches: 0, native_code_bytes: 0, native_refusal: None });
    assert!(!report::text(&r).contains("fast:"));
}

#[test]
fn a_socket_report_names_results_as_numbers_and_inputs_without_seccomp_fields() {
    let mut r = results();
    r.mode = cbpf::Mode::Socket;
    r.optimized_insns = None;
    r.inputs.truncate(1);
    r.inputs[0].optimized_path = None;
    r.inputs[0].ret = 65_535;
    r.deepest = 0;
    r.columns.truncate(1);
    (r.cache_hit, r.jit, r.fast, r.call_floor) = (None, None, None, None);
    let text = report::text(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "f.bpf: socket filter, 6 classic / 14 eBPF instructions, 1 inputs, median of 11 rounds (ns per evaluation)"
    );
    assert_eq!(lines[2], "x86_64:read            65535        3       8       -    10.00");
    assert_eq!(lines[4], "mix (1 inputs)         -          3.0     8.0       -     10.0");
    assert_eq!(lines.len(), 6, "{text}");
    let doc = report::json(&r);
    let input = doc["inputs"][0].as_object().unwrap();
    let mut fields: Vec<&str> = input.keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["cbpf_path", "ebpf_path", "input", "ret"]);
    for absent in ["kernel", "kernel_jit", "fast", "call_floor_ns", "optimized_insns"] {
        assert!(doc.get(absent).is_none(), "{absent}: {doc}");
    }
}
