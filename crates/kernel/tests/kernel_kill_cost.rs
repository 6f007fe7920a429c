//! Issue 13, finding 11: killing inputs on the kernel engine. A filter that
//! divides by zero kills on every input; 2000 such inputs must all come back
//! as `Action(0)` (the kernel's real verdict) and leave no child behind.
//! Speed is measured with the release CLI, not asserted here. Under outer
//! seccomp filters (a container's) a kill cannot be attributed to the
//! filter run, and is reported so.

#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use cbpf::Insn;
use kernel::{run_vectors, seccomp_available, Input, KernelError, Outcome, Unobservable, AUDIT_ARCH_X86_64};
use test_data::require::{self, Need};

/// `ld #0; tax; ld #1; div x; ret a`.
fn div_by_zero() -> Vec<Insn> {
    vec![Insn::stmt(0x00, 0), Insn::stmt(0x07, 0), Insn::stmt(0x00, 1), Insn::stmt(0x3c, 0), Insn::stmt(0x16, 0)]
}

/// Children of this process that are zombies (or any state), from /proc.
fn children_of_self() -> Vec<(i32, char)> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
        let mut fields = rest.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid: i32 = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        if ppid == me {
            out.push((pid, state));
        }
    }
    out
}

/// Both tests look at this process's children: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The kernel's run of `inputs` on `filter`, or `None` where the OS refuses
/// fork or seccomp (`test_data::require`'s skip, or failure under CI).
fn kernel_run(test: &str, filter: &[Insn], inputs: &[Input]) -> Option<Vec<Outcome>> {
    require::have(test, Need::Kernel, seccomp_available())?;
    match run_vectors(filter, inputs) {
        Ok(o) => Some(o),
        Err(e @ (KernelError::Os { .. } | KernelError::SeccompUnavailable { .. })) => {
            require::missing(test, Need::Kernel, format_args!("the OS refuses fork/seccomp here: {e}"));
            None
        }
        Err(e) => panic!("kernel run failed: {e}"),
    }
}

#[test]
fn many_killing_vectors_are_exact_and_reaped() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let filter = div_by_zero();
    let mut inputs: Vec<Input> =
        (0..2000).map(|i| Input { arch: AUDIT_ARCH_X86_64, nr: i % 300, args: [i as u64; 6], ip: 0 }).collect();
    // An unobservable input in the middle keeps its place.
    inputs.insert(1000, Input { arch: 0x4000_0028, nr: 1, args: [0; 6], ip: 0 });
    let Some(outcomes) = kernel_run("many_killing_vectors_are_exact_and_reaped", &filter, &inputs) else { return };
    assert_eq!(outcomes.len(), inputs.len());
    for (n, o) in outcomes.iter().enumerate() {
        if n == 1000 {
            assert!(matches!(o, Outcome::NotObservable(_)), "input {n}: {o:?}");
        } else if o != &Outcome::Action(0) {
            // Under outer seccomp filters a kill cannot be attributed.
            assert!(matches!(o, Outcome::NotObservable(kernel::Unobservable::OuterFilters)), "input {n}: {o:?}");
        }
    }
    let left = children_of_self();
    assert!(left.is_empty(), "children left behind: {left:?}");
}

/// nr == 1 -> ret ALLOW; else divide by zero (a kill).
fn allow_1_else_kill() -> Vec<Insn> {
    let mut filter = vec![Insn::stmt(0x20, 0), Insn::jump(0x15, 1, 0, 1), Insn::stmt(0x06, 0x7fff_0000)];
    filter.extend(div_by_zero());
    filter
}

#[test]
fn kills_mixed_with_returns_keep_order() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let filter = allow_1_else_kill();
    let inputs: Vec<Input> =
        (0..600).map(|i| Input { arch: AUDIT_ARCH_X86_64, nr: i % 3, args: [0; 6], ip: 0 }).collect();
    let Some(outcomes) = kernel_run("kills_mixed_with_returns_keep_order", &filter, &inputs) else { return };
    for (input, o) in inputs.iter().zip(&outcomes) {
        let want = if input.nr == 1 { Outcome::Action(0x7fff_0000) } else { Outcome::Action(0) };
        if o != &want {
            assert!(matches!(o, Outcome::NotObservable(kernel::Unobservable::OuterFilters)), "nr {}: {o:?}", input.nr);
        }
    }
    assert!(children_of_self().is_empty());
}

/// Set in the copy of this test binary that runs under an outer filter.
const UNDER_OUTER_FILTER: &str = "BPFCONV_TEST_UNDER_OUTER_FILTER";
/// What that copy prints once its assertions hold (a copy that ran no test
/// would also exit 0).
const OUTER_CHECKED: &str = "outer filter: kills not attributed";
/// The distribution's Python, which has libseccomp (python3-seccomp).
const PYTHON: &str = "/usr/bin/python3";

/// Run under an outer seccomp filter (an ALLOW-all one loaded by the
/// distribution's libseccomp, then this test binary executed again), the
/// engine reports a kill as `OuterFilters`: the kernel runs every filter of
/// the stack and the child's death by SIGSYS may come from any of them.
/// Returns are still exact.
#[test]
fn kills_under_outer_filters_are_not_attributed() {
    const TEST: &str = "kills_under_outer_filters_are_not_attributed";
    let inputs = [1, 2, 1].map(|nr| Input { arch: AUDIT_ARCH_X86_64, nr, args: [0; 6], ip: 0 });
    if std::env::var_os(UNDER_OUTER_FILTER).is_some() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(status.lines().any(|l| l.split_whitespace().eq(["Seccomp:", "2"])), "no outer filter:\n{status}");
        let outcomes = run_vectors(&allow_1_else_kill(), &inputs).unwrap();
        let allow = Outcome::Action(0x7fff_0000);
        assert_eq!(outcomes, [allow.clone(), Outcome::NotObservable(Unobservable::OuterFilters), allow]);
        println!("{OUTER_CHECKED}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if require::have(TEST, Need::Kernel, seccomp_available()).is_none() {
        return;
    }
    let probe = match std::process::Command::new(PYTHON).args(["-c", "import seccomp"]).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("{PYTHON} cannot import seccomp: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("{PYTHON}: {e}")),
    };
    if require::have(TEST, Need::Libseccomp, probe).is_none() {
        return;
    }
    let script =
        "import os, sys, seccomp\nseccomp.SyscallFilter(seccomp.ALLOW).load()\nos.execv(sys.argv[1], sys.argv[1:])";
    let out = std::process::Command::new(PYTHON)
        .args(["-c", script])
        .arg(std::env::current_exe().unwrap())
        .args([TEST, "--exact", "--nocapture"])
        .env(UNDER_OUTER_FILTER, "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains(OUTER_CHECKED), "{stdout}\n{stderr}");
}
