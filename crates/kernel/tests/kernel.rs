#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The real kernel as an oracle: every kernel-checked vector of
//! testdata/filters, kills, `ret a`, unobservable inputs, dumps, benchmarks.
//! Where seccomp is unavailable each test says so through
//! `test_data::require` (a visible skip, a failure under `CI=true`).

use cbpf::Insn;
use test_data::filters::Source;
use test_data::require::{self, Need};

use kernel::{
    dump_filters, run_vectors, seccomp_attach, seccomp_available, DumpError, FilteredProcess, Input, Outcome,
    SyscallArg, Unobservable, AUDIT_ARCH_I386, AUDIT_ARCH_X86_64,
};

const ALLOW: u32 = 0x7fff_0000;
const ERRNO: u32 = 0x0005_0000;

fn available(test: &str) -> bool {
    require::have(test, Need::Kernel, seccomp_available()).is_some()
}

/// A vector: the input, the expected action and its line.
type Case = (Input, u32, usize);

/// Every filter of testdata/filters with its vectors from `source`:
/// name, program, cases.
fn filters_with(source: Source) -> Vec<(String, Vec<Insn>, Vec<Case>)> {
    let names = test_data::filters::names().unwrap();
    names
        .into_iter()
        .map(|name| {
            let insns = test_data::filters::insns(&name).unwrap();
            let filter = insns.into_iter().map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect();
            let cases = test_data::filters::vectors(&name, source)
                .unwrap()
                .into_iter()
                .map(|v| (Input { arch: v.arch, nr: v.nr, args: v.args, ip: v.ip }, v.action.unwrap(), v.line))
                .collect();
            (name, filter, cases)
        })
        .collect()
}

#[test]
fn every_kernel_checked_vector_gives_the_expected_action() {
    if !available("every_kernel_checked_vector_gives_the_expected_action") {
        return;
    }
    let files = filters_with(Source::Kernel);
    assert!(files.len() >= 12, "expected the testdata/filters suite, found {}", files.len());
    let mut failures = Vec::new();
    let (mut total, mut x32, mut i386) = (0, 0, 0);
    for (name, filter, cases) in files {
        let inputs: Vec<Input> = cases.iter().map(|(i, _, _)| *i).collect();
        let outcomes = match run_vectors(&filter, &inputs) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{name}: engine error: {e}"));
                continue;
            }
        };
        for ((input, want, line), got) in cases.iter().zip(&outcomes) {
            total += 1;
            x32 += usize::from(input.arch == AUDIT_ARCH_X86_64 && input.nr & 0x4000_0000 != 0);
            i386 += usize::from(input.arch == AUDIT_ARCH_I386);
            if *got != Outcome::Action(*want) {
                failures.push(format!(
                    "{name}.vectors.jsonl:{line}: arch {:#x} nr {} args {:x?}: want {want:#010x}, got {got:?}",
                    input.arch, input.nr, input.args
                ));
            }
        }
    }
    eprintln!("checked {total} vectors ({x32} x32, {i386} i386)");
    assert!(x32 > 0 && i386 > 0, "suite should exercise x32 and i386");
    assert!(
        failures.is_empty(),
        "{} failing vectors:\n{}",
        failures.len(),
        failures.iter().take(50).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn sim_only_vectors_are_not_observable() {
    if !available("sim_only_vectors_are_not_observable") {
        return;
    }
    let mut failures = Vec::new();
    let (mut foreign, mut uprobe) = (0, 0);
    for (name, filter, cases) in filters_with(Source::Simulator) {
        let inputs: Vec<Input> = cases.into_iter().map(|(i, _, _)| i).collect();
        let outcomes = run_vectors(&filter, &inputs).unwrap();
        for (input, got) in inputs.iter().zip(&outcomes) {
            match got {
                Outcome::NotObservable(Unobservable::ForeignArch { arch }) if *arch == input.arch => foreign += 1,
                Outcome::NotObservable(Unobservable::UprobeBypass { nr }) if *nr == input.nr => uprobe += 1,
                other => failures.push(format!("{name}: arch {:#x} nr {}: {other:?}", input.arch, input.nr)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The README promises x86_64 335/336 cases here too; the shipped files
    // have none, so those are covered by uprobe_syscalls_and_foreign_arches_...
    eprintln!("sim_only: {foreign} foreign-arch and {uprobe} uprobe cases not observable");
    assert!(foreign > 0, "no foreign-arch cases found");
}

/// A filter in bpf_asm syntax.
fn asm(text: &str) -> Vec<Insn> {
    cbpf::text::parse(text.as_bytes(), cbpf::text::Format::Asm).unwrap()
}

fn x86_64(nr: i32, args: [u64; 6]) -> Input {
    Input { arch: AUDIT_ARCH_X86_64, nr, args, ip: 0 }
}

#[test]
fn division_by_zero_kills_and_the_engine_continues() {
    if !available("division_by_zero_kills_and_the_engine_continues") {
        return;
    }
    // if nr == 39: A = A / X (X == 0) -> returns 0; else ret ERRNO(7).
    // nr 39: divide by X = 0 (kills); else ERRNO|7.
    let filter = asm("ld [0]\n jeq #39, divide, errno\n divide: div x\n ret #0x7fff0000\n errno: ret #0x50007");
    let inputs = [x86_64(1, [0; 6]), x86_64(39, [0; 6]), x86_64(2, [0; 6]), x86_64(39, [0; 6]), x86_64(3, [0; 6])];
    let got = run_vectors(&filter, &inputs).unwrap();
    assert_eq!(
        got,
        vec![
            Outcome::Action(ERRNO | 7),
            Outcome::Action(0),
            Outcome::Action(ERRNO | 7),
            Outcome::Action(0),
            Outcome::Action(ERRNO | 7),
        ]
    );
}

#[test]
fn ret_a_returns_the_full_accumulator() {
    if !available("ret_a_returns_the_full_accumulator") {
        return;
    }
    // nr == 1: ret ALLOW; else A = args[0] low half; ret a.
    let filter = asm("ld [0]\n jeq #1, allow, arg\n allow: ret #0x7fff0000\n arg: ld [16]\n ret a");
    let values = [0u64, 0x8000_0000, 0xdead_beef, 0x7fff_0001, 0xffff_ffff, 0x1_0000_0005];
    let mut inputs = vec![x86_64(1, [0; 6])];
    inputs.extend(values.iter().map(|&v| x86_64(2, [v, 0, 0, 0, 0, 0])));
    let got = run_vectors(&filter, &inputs).unwrap();
    let mut want = vec![Outcome::Action(ALLOW)];
    want.extend(values.iter().map(|&v| Outcome::Action(v as u32)));
    assert_eq!(got, want);
}

#[test]
fn i386_inputs_go_through_int80_with_32_bit_arguments() {
    if !available("i386_inputs_go_through_int80_with_32_bit_arguments") {
        return;
    }
    // arch == i386 ? ret ERRNO|args[5] low (via A) : ret ALLOW
    let filter = asm("ld [4]\n jeq #0x40000003, i386, allow\n allow: ret #0x7fff0000\n i386: ld [56]\n ret a");
    let i386 = Input { arch: AUDIT_ARCH_I386, nr: 20, args: [1, 2, 3, 4, 5, 0x1234_5678], ip: 0 };
    let wide = Input { args: [0, 0, 0, 0, 0, 1 << 40], ..i386 };
    let got = run_vectors(&filter, &[i386, x86_64(20, [0; 6]), wide]).unwrap();
    match &got[0] {
        Outcome::Action(v) => assert_eq!(*v, 0x1234_5678),
        Outcome::NotObservable(Unobservable::ChildSignal { signal }) => require::missing(
            "i386_inputs_go_through_int80_with_32_bit_arguments (i386 part)",
            Need::Int80,
            format_args!("int 0x80 killed the child (signal {signal})"),
        ),
        other => panic!("i386: {other:?}"),
    }
    assert_eq!(got[1], Outcome::Action(ALLOW));
    assert_eq!(got[2], Outcome::NotObservable(Unobservable::ArgTooWide { index: 5, value: 1 << 40 }));
}

#[test]
fn uprobe_syscalls_and_foreign_arches_are_not_observable() {
    if !available("uprobe_syscalls_and_foreign_arches_are_not_observable") {
        return;
    }
    let filter = [Insn::stmt(0x06, ALLOW)];
    let aarch64 = Input { arch: 0xc000_00b7, ..x86_64(1, [0; 6]) };
    let x32_uretprobe = x86_64(335 | 0x4000_0000, [0; 6]);
    let i386_335 = Input { arch: AUDIT_ARCH_I386, ..x86_64(335, [0; 6]) };
    let got =
        run_vectors(&filter, &[x86_64(335, [0; 6]), x86_64(336, [0; 6]), aarch64, x32_uretprobe, i386_335]).unwrap();
    assert_eq!(got[0], Outcome::NotObservable(Unobservable::UprobeBypass { nr: 335 }));
    assert_eq!(got[1], Outcome::NotObservable(Unobservable::UprobeBypass { nr: 336 }));
    assert_eq!(got[2], Outcome::NotObservable(Unobservable::ForeignArch { arch: 0xc000_00b7 }));
    // x32 and i386 numbers 335 are ordinary filtered syscalls.
    assert_eq!(got[3], Outcome::Action(ALLOW));
    assert!(matches!(got[4], Outcome::Action(ALLOW) | Outcome::NotObservable(Unobservable::ChildSignal { .. })));
}

#[test]
fn a_filter_reading_the_ip_sees_the_stub_ip() {
    if !available("a_filter_reading_the_ip_sees_the_stub_ip") {
        return;
    }
    let ips = kernel::stub_ips().unwrap();
    // ret ERRNO|1 if ip low half == stub's, else ret ALLOW... via ret a of ip low.
    let filter = [Insn::stmt(0x20, 8), Insn::stmt(0x16, 0)];
    let input = Input { ip: ips.syscall, ..x86_64(1, [0; 6]) };
    let elsewhere = Input { ip: 0x1000, ..input };
    let got = run_vectors(&filter, &[input, elsewhere]).unwrap();
    assert_eq!(got[0], Outcome::Action(ips.syscall as u32));
    assert!(matches!(got[1], Outcome::NotObservable(Unobservable::InstructionPointer { .. })));
}

/// A program fuzz-kernel generated (seccomp mode, seed 1796414114, its
/// first program), as `code jt jf k`: installed as it is, it left the
/// attach check's child unable to finish, and the check waited out its
/// 300 s timeout (stop 36's CI rehearsal).
const CHILD_NEVER_EXITS: &[(u16, u8, u8, u32)] = &[
    (7, 0, 0, 0),
    (4, 0, 0, 2147483648),
    (36, 0, 0, 2147483647),
    (29, 2, 0, 2147483648),
    (45, 3, 3, 3),
    (22, 0, 0, 0),
    (61, 3, 15, 51),
    (37, 0, 1, 256),
    (32, 0, 0, 36),
    (32, 0, 0, 32),
    (37, 4, 4, 65536),
    (6, 0, 0, 15),
    (37, 31, 31, 2147418112),
    (7, 0, 0, 0),
    (22, 0, 0, 0),
    (84, 0, 0, 2),
    (69, 0, 30, 51),
    (52, 0, 0, 4123024718),
    (164, 0, 0, 21),
    (84, 0, 0, 25),
    (12, 0, 0, 0),
    (2, 25, 119, 2),
    (32, 0, 0, 48),
    (61, 10, 4, 2534567189),
    (5, 0, 0, 3),
    (52, 0, 0, 16),
    (6, 0, 0, 2400162293),
    (32, 0, 0, 36),
    (32, 0, 0, 0),
    (6, 0, 0, 1555982956),
    (1, 0, 0, 7),
    (32, 0, 0, 32),
    (22, 0, 0, 0),
    (3, 0, 0, 4),
    (68, 0, 0, 63),
    (0, 0, 0, 2),
    (36, 0, 0, 62),
    (32, 0, 0, 44),
    (100, 0, 0, 14),
    (32, 0, 0, 20),
    (32, 0, 0, 8),
    (21, 3, 0, 27),
    (0, 0, 0, 15),
    (61, 0, 3, 14),
    (116, 0, 0, 24),
    (6, 0, 0, 2147483647),
    (100, 0, 0, 25),
    (37, 2, 0, 14),
    (52, 0, 0, 7),
    (100, 0, 0, 30),
    (32, 0, 0, 32),
    (135, 0, 0, 0),
    (32, 0, 0, 60),
    (5, 0, 0, 0),
    (6, 0, 0, 327681),
    (29, 0, 1, 2197958654),
    (116, 0, 0, 8),
    (6, 0, 0, 38),
];

/// The attach check installs the filter as it is, so the filter is in
/// force on the child's own way out. Once the child has reported the
/// install it is killed rather than waited for, so the check answers at
/// once whatever the filter does to the child's exit: every syscall
/// refused with an errno, or traced, or the program above.
#[test]
fn the_attach_check_answers_whatever_the_filter_does_to_the_child() {
    if !available("the_attach_check_answers_whatever_the_filter_does_to_the_child") {
        return;
    }
    let fuzzed: Vec<Insn> = CHILD_NEVER_EXITS.iter().map(|&(code, jt, jf, k)| Insn { code, jt, jf, k }).collect();
    let filters = [vec![Insn::stmt(0x06, ERRNO | 1)], vec![Insn::stmt(0x06, 0x7ff0_0000)], fuzzed];
    for filter in &filters {
        let t0 = std::time::Instant::now();
        let answer = seccomp_attach(filter);
        assert!(matches!(answer, Ok(kernel::socket::Attach::Accepted)), "{filter:?}: {answer:?}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "{filter:?}: {:?}", t0.elapsed());
    }
}

#[test]
fn a_filter_the_kernel_refuses_is_an_error() {
    if !available("a_filter_the_kernel_refuses_is_an_error") {
        return;
    }
    // ld [1]: misaligned seccomp_data load.
    let filter = [Insn::stmt(0x20, 1), Insn::stmt(0x06, ALLOW)];
    let err = run_vectors(&filter, &[x86_64(1, [0; 6])]).unwrap_err();
    assert!(matches!(err, kernel::KernelError::FilterRejected { errno, .. } if errno == 22), "{err:?}");
    // The attach check installs it unmodified, and is refused the same way.
    assert_eq!(seccomp_attach(&filter).unwrap(), kernel::socket::Attach::Rejected { errno: 22 });
}

#[test]
fn dump_returns_stacked_filters_oldest_first() {
    if !available("dump_returns_stacked_filters_oldest_first") {
        return;
    }
    let first = vec![Insn::stmt(0x20, 0), Insn::stmt(0x06, ALLOW)];
    let second = vec![
        Insn::stmt(0x20, 4),
        Insn::jump(0x15, AUDIT_ARCH_X86_64, 1, 0),
        Insn::stmt(0x06, 0),
        Insn::stmt(0x06, ALLOW),
    ];
    let child = FilteredProcess::spawn(&[first.clone(), second.clone()]).unwrap();
    match dump_filters(child.pid()) {
        Ok(filters) => {
            assert_eq!(filters, vec![first, second]);
            let bytes: Vec<Vec<u8>> = filters.iter().map(|f| cbpf::raw::encode(f)).collect();
            assert_eq!(bytes[1].len(), 4 * 8);
        }
        Err(e @ (DumpError::Permission { .. } | DumpError::Unsupported)) => {
            require::missing("dump_returns_stacked_filters_oldest_first", Need::Ptrace, e);
            return;
        }
        Err(e) => panic!("dump failed: {e}"),
    }
    // Dumping again works: the first dump detached cleanly.
    assert!(dump_filters(child.pid()).is_ok());
}

#[test]
fn dump_of_an_unfiltered_process_is_empty_and_errors_are_typed() {
    if !available("dump_of_an_unfiltered_process_is_empty_and_errors_are_typed") {
        return;
    }
    let child = FilteredProcess::spawn(&[]).unwrap();
    match dump_filters(child.pid()) {
        Ok(f) => assert!(f.is_empty()),
        Err(e @ DumpError::Permission { .. }) => {
            require::missing("dump_of_an_unfiltered_process_is_empty_and_errors_are_typed", Need::Ptrace, e)
        }
        Err(e) => panic!("{e}"),
    }
    assert_eq!(dump_filters(0), Err(DumpError::InvalidPid { pid: 0 }));
    assert!(matches!(dump_filters(std::process::id() as i32), Err(DumpError::NotTraceable { .. })));
    // pid_max is at most 2^22: this pid cannot exist.
    assert_eq!(dump_filters(0x7fff_fff0), Err(DumpError::NoSuchProcess { pid: 0x7fff_fff0 }));
}

#[test]
fn benchmark_primitives_report_their_samples() {
    if !available("benchmark_primitives_report_their_samples") {
        return;
    }
    const GETPPID: i64 = 110;
    let args = [SyscallArg::Value(0); 6];
    // Each sample is one run's time over its calls, whole ns and exact,
    // both from the same run; the time per call is their median.
    let consistent = |t: &kernel::SyscallTiming| {
        assert_eq!((t.samples.len(), t.samples_ns.len()), (5, 5), "{t:?}");
        for (whole, exact) in t.samples.iter().zip(&t.samples_ns) {
            let whole = whole.as_nanos() as f64;
            assert!(whole > 0.0 && *exact >= whole && *exact < whole + 1.0, "{t:?}");
        }
        let mut sorted = t.samples.clone();
        sorted.sort();
        assert_eq!(t.per_call, sorted[2], "{t:?}");
    };
    let none = kernel::time_syscalls(&[], GETPPID, args, 2000).unwrap();
    consistent(&none);
    assert_eq!(none.clock, kernel::TimingClock::ThreadCpu);
    // A filter that kills everything but getppid also kills clock_gettime:
    // the primitive must fall back to the child's rusage rather than fail.
    let only_getppid =
        vec![Insn::stmt(0x20, 0), Insn::jump(0x15, 110, 0, 1), Insn::stmt(0x06, ALLOW), Insn::stmt(0x06, 0x8000_0000)];
    // Enough calls that the second child's extra CPU time stands well
    // above the noise of starting a child.
    let t = kernel::time_syscalls(std::slice::from_ref(&only_getppid), GETPPID, args, 200_000).unwrap();
    assert_eq!(t.clock, kernel::TimingClock::ChildCpuDifference);
    consistent(&t);
    // fremovexattr(100, buffer): the classic 199 workload with a valid pointer.
    let mut xattr_args = [SyscallArg::Value(0); 6];
    xattr_args[0] = SyscallArg::Value(100);
    xattr_args[1] = SyscallArg::ZeroedBuffer;
    assert!(kernel::time_syscalls(&[], 199, xattr_args, 100).is_ok());
    // The benchmarked syscall itself being killed is an error.
    let err = kernel::time_syscalls(std::slice::from_ref(&only_getppid), 39, args, 10).unwrap_err();
    assert!(matches!(err, kernel::KernelError::BenchmarkKilled { nr: 39, .. }), "{err:?}");
    let attach = kernel::attach_time(&only_getppid).unwrap();
    assert!(attach.as_nanos() > 0);
}

/// Prints the real-kernel figures for the published tables (no assertions
/// on time): `cargo test -p bpfconv-kernel --test kernel -- --ignored --nocapture`.
#[test]
#[ignore = "prints measurements; run by hand"]
fn print_real_kernel_figures() {
    if !available("print_real_kernel_figures") {
        return;
    }
    let load = |name: &str| {
        cbpf::raw::decode(&std::fs::read(test_data::paths::filters_dir().join(format!("{name}.bpf"))).unwrap()).unwrap()
    };
    let v = |x| SyscallArg::Value(x);
    let getppid = [v(0); 6];
    let n = 200_000;
    let show = |label: &str, filters: &[Vec<Insn>], nr: i64, args: [SyscallArg; 6]| match kernel::time_syscalls(
        filters, nr, args, n,
    ) {
        Ok(t) => eprintln!("{label:<40} {:>8} ns/call ({:?})", t.per_call.as_nanos(), t.clock),
        Err(e) => eprintln!("{label:<40} {e}"),
    };
    show("getppid, no filter", &[], 110, getppid);
    show("getppid, seed_fast", &[load("seed_fast")], 110, getppid);
    show("getppid, seed_slow", &[load("seed_slow")], 110, getppid);
    show("getppid, seed_slow_opt2", &[load("seed_slow_opt2")], 110, getppid);
    let xattr = [v(100), SyscallArg::ZeroedBuffer, v(0), v(0), v(0), v(0)];
    show("199, no filter", &[], 199, xattr);
    show("199, long_jumps_short", &[load("long_jumps_short")], 199, xattr);
    show("199, long_jumps_large", &[load("long_jumps_large")], 199, xattr);
    for name in ["allow306_front", "allow306_middle", "allow306_end", "allow306_opt2"] {
        show(&format!("getppid, {name}"), &[load(name)], 110, getppid);
    }
    let bitmap = vec![Insn::stmt(0x20, 0), Insn::stmt(0x06, ALLOW)];
    let full = vec![Insn::stmt(0x20, 16), Insn::stmt(0x06, ALLOW)];
    let stack = [bitmap.clone(), bitmap.clone(), full, bitmap];
    for k in 0..=4 {
        show(&format!("getpid, {k} of bitmap,bitmap,full,bitmap"), &stack[..k], 39, getppid);
    }
    eprintln!("attach seed_slow: {:?}", kernel::attach_time(&load("seed_slow")).unwrap());
    eprintln!("attach long_jumps_large: {:?}", kernel::attach_time(&load("long_jumps_large")).unwrap());
}

#[test]
#[ignore = "prints measurements; run by hand"]
fn print_clock_comparison() {
    if !available("print_clock_comparison") {
        return;
    }
    let v = |x| SyscallArg::Value(x);
    let deny_clock =
        vec![Insn::stmt(0x20, 0), Insn::jump(0x15, 228, 0, 1), Insn::stmt(0x06, ERRNO | 1), Insn::stmt(0x06, ALLOW)];
    for _ in 0..3 {
        let a = kernel::time_syscalls(&[], 110, [v(0); 6], 200_000).unwrap();
        let b = kernel::time_syscalls(std::slice::from_ref(&deny_clock), 110, [v(0); 6], 200_000).unwrap();
        eprintln!(
            "thread-cpu {:?} {:?} | child-cpu-difference {:?} {:?}",
            a.per_call, a.samples, b.per_call, b.samples
        );
    }
}
