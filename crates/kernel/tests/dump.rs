#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! `dump_filters` on processes it cannot read: one another tracer holds,
//! one in seccomp strict mode, a kernel thread; and `FilteredProcess`
//! leaving nothing behind. The other process is Python's ctypes (the
//! distribution's `/usr/bin/python3`). Where ptrace is refused the test
//! says so through `test_data::require` (a visible skip, a failure under
//! `CI=true` with `BPFCONV_REQUIRE=ptrace`, as `.ci/run` sets).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use kernel::{dump_filters, seccomp_available, DumpError, FilteredProcess};
use test_data::require::{self, Need};

const PYTHON: &str = "/usr/bin/python3";

/// `script` run by Python with `args`, its stdin and stdout piped; the
/// first line it prints.
fn python(script: &str, args: &[String]) -> (Child, BufReader<ChildStdout>, String) {
    let mut child = Command::new(PYTHON)
        .args(["-c", script])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{PYTHON}: {e}"));
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    (child, out, line.trim().to_string())
}

/// A field of /proc/PID/status.
fn status(pid: i32, field: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines().find_map(|l| l.strip_prefix(field)).map(|v| v.trim().to_string())
}

fn ptrace_here(test: &str) -> bool {
    require::have(test, Need::Kernel, seccomp_available()).is_some()
}

#[test]
fn a_process_another_tracer_holds_names_the_tracer() {
    const TEST: &str = "a_process_another_tracer_holds_names_the_tracer";
    if !ptrace_here(TEST) {
        return;
    }
    let target = FilteredProcess::spawn(&[]).unwrap();
    let seize = "import ctypes, sys\n\
                 libc = ctypes.CDLL(None, use_errno=True)\n\
                 r = libc.ptrace(0x4206, int(sys.argv[1]), None, None)\n\
                 print('seized' if r == 0 else f'errno {ctypes.get_errno()}', flush=True)\n\
                 sys.stdin.read()";
    let (mut tracer, _out, said) = python(seize, &[target.pid().to_string()]);
    if said != "seized" {
        tracer.kill().unwrap();
        tracer.wait().unwrap();
        return require::missing(TEST, Need::Ptrace, format_args!("PTRACE_SEIZE from Python: {said}"));
    }
    let tracer_pid = tracer.id() as i32;
    assert_eq!(dump_filters(target.pid()), Err(DumpError::AlreadyTraced { pid: target.pid(), tracer: tracer_pid }));
    drop(tracer.stdin.take());
    tracer.wait().unwrap();
    // Released by its tracer, the process can be read.
    assert_eq!(dump_filters(target.pid()), Ok(vec![]));
}

#[test]
fn a_process_in_strict_mode_has_no_filters_to_read() {
    const TEST: &str = "a_process_in_strict_mode_has_no_filters_to_read";
    if !ptrace_here(TEST) {
        return;
    }
    // prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT), then read(2) until stdin
    // closes and exit(2): the only calls strict mode allows.
    let strict = "import ctypes, sys\n\
                  libc = ctypes.CDLL(None, use_errno=True)\n\
                  buf = ctypes.create_string_buffer(1)\n\
                  print('entering', flush=True)\n\
                  libc.prctl(22, 1, 0, 0, 0)\n\
                  libc.read(0, buf, 1)\n\
                  libc.syscall(60, 0)";
    let (mut child, _out, said) = python(strict, &[]);
    assert_eq!(said, "entering");
    let pid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(10);
    while status(pid, "Seccomp:").as_deref() != Some("1") {
        assert!(Instant::now() < deadline, "{pid} never entered strict mode");
        std::thread::sleep(Duration::from_millis(2));
    }
    let dumped = dump_filters(pid);
    child.stdin.take().unwrap().write_all(b"x").unwrap();
    child.wait().unwrap();
    match dumped {
        Err(e @ DumpError::Permission { .. }) => require::missing(TEST, Need::Ptrace, e),
        other => assert_eq!(other, Err(DumpError::StrictMode { pid })),
    }
}

#[test]
fn a_kernel_thread_cannot_be_traced() {
    const TEST: &str = "a_kernel_thread_cannot_be_traced";
    if !ptrace_here(TEST) {
        return;
    }
    // kthreadd, or any kernel thread /proc shows.
    let kthread = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .find(|&pid| status(pid, "Kthread:").as_deref() == Some("1"));
    let Some(pid) = kthread else {
        return require::missing(TEST, Need::Ptrace, "no kernel thread is visible in /proc");
    };
    assert!(
        matches!(dump_filters(pid), Err(DumpError::Permission { op: "PTRACE_SEIZE", .. })),
        "{pid}: {:?}",
        dump_filters(pid)
    );
}

#[test]
fn a_filtered_process_is_gone_once_dropped() {
    const TEST: &str = "a_filtered_process_is_gone_once_dropped";
    if !ptrace_here(TEST) {
        return;
    }
    let process = FilteredProcess::spawn(&[]).unwrap();
    let pid = process.pid();
    assert_eq!(status(pid, "PPid:"), Some(std::process::id().to_string()));
    drop(process);
    // Killed and reaped: no /proc entry, not even a zombie's (unless the
    // pid was taken again at once by a process not ours).
    assert_ne!(status(pid, "PPid:"), Some(std::process::id().to_string()));
}
