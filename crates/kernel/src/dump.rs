//! Reading the seccomp filters of a live process back out of the kernel
//! (`PTRACE_SECCOMP_GET_FILTER`), and a helper process that carries known
//! filters, for tests and demonstrations.

use std::time::{Duration, Instant};

use cbpf::Insn;

use crate::child;
use crate::errno_text;
use crate::sys::{self, get, ptrace, put, Exit};
use crate::KernelError;

/// How long the target may take to reach the ptrace stop.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Why filters could not be read from a process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DumpError {
    #[error("invalid pid {pid}")]
    InvalidPid { pid: i32 },
    #[error("no process {pid}")]
    NoSuchProcess { pid: i32 },
    #[error("process {pid} has exited (a zombie not yet reaped by its parent): it has no filters to read")]
    Zombie { pid: i32 },
    #[error("permission denied: {op} on process {pid}: {hint}")]
    Permission { pid: i32, op: &'static str, hint: &'static str },
    #[error("process {pid} is already traced by process {tracer}")]
    AlreadyTraced { pid: i32, tracer: i32 },
    #[error("process {pid} cannot be traced: {}", errno_text(*.errno))]
    NotTraceable { pid: i32, errno: i32 },
    #[error("process {pid} is in seccomp strict mode, which has no filters")]
    StrictMode { pid: i32 },
    #[error("filter {index} of process {pid} has no classic program to read back")]
    NoClassicProgram { pid: i32, index: usize },
    #[error("this kernel cannot read filters back (needs CONFIG_SECCOMP_FILTER and CONFIG_CHECKPOINT_RESTORE)")]
    Unsupported,
    #[error("process {pid} did not stop within {timeout:?}")]
    StopTimeout { pid: i32, timeout: Duration },
    #[error("{op} on process {pid} failed: {}", errno_text(*.errno))]
    Os { pid: i32, op: &'static str, errno: i32 },
}

const HINT_PTRACE: &str = "attaching needs CAP_SYS_PTRACE or the same user, and kernel.yama.ptrace_scope may forbid it";
const HINT_GET_FILTER: &str =
    "reading filters needs CAP_SYS_ADMIN, and the reading process must not itself be under seccomp";

/// The seccomp filters of process `pid`, oldest first (the first one
/// installed is element 0), each exactly as it was passed to the kernel.
///
/// Attaches with `PTRACE_SEIZE`, stops the target with `PTRACE_INTERRUPT`,
/// reads index 0, 1, ... with `PTRACE_SECCOMP_GET_FILTER` until `ENOENT`,
/// and detaches. Mirrors the index semantics of `get_nth_filter()` in
/// kernel/seccomp.c (Linux 6.18): the kernel counts the chain and walks
/// `count - index - 1` steps back from the newest filter, so index 0 is the
/// oldest; because new filters are appended at the newest end, the indices
/// already read stay valid while we read.
///
/// A process without filters gives an empty list.
///
/// # Deviations
///
/// Filters shared through `SECCOMP_FILTER_FLAG_TSYNC` or inherited across
/// fork appear once per process, as in the kernel; nothing marks which
/// were inherited.
pub fn dump_filters(pid: i32) -> Result<Vec<Vec<Insn>>, DumpError> {
    if pid <= 0 {
        return Err(DumpError::InvalidPid { pid });
    }
    if pid == sys::getpid() {
        return Err(DumpError::NotTraceable { pid, errno: libc::EPERM });
    }
    if is_zombie(pid) {
        return Err(DumpError::Zombie { pid });
    }
    if let Err(errno) = ptrace::seize(pid) {
        if is_zombie(pid) {
            return Err(DumpError::Zombie { pid });
        }
        return Err(match errno {
            libc::ESRCH => DumpError::NoSuchProcess { pid },
            libc::EPERM => match tracer_of(pid) {
                Some(tracer) if tracer != 0 => DumpError::AlreadyTraced { pid, tracer },
                _ => DumpError::Permission { pid, op: "PTRACE_SEIZE", hint: HINT_PTRACE },
            },
            errno => DumpError::NotTraceable { pid, errno },
        });
    }
    let result = stop_and_read(pid);
    // The tracee must be released on every path; a detach failure after the
    // tracee died is of no interest.
    let _ = ptrace::detach(pid);
    result
}

fn stop_and_read(pid: i32) -> Result<Vec<Vec<Insn>>, DumpError> {
    ptrace::interrupt(pid).map_err(|errno| match errno {
        libc::ESRCH => DumpError::NoSuchProcess { pid },
        errno => DumpError::Os { pid, op: "PTRACE_INTERRUPT", errno },
    })?;
    let deadline = Instant::now() + STOP_TIMEOUT;
    loop {
        match ptrace::poll_stop(pid) {
            Ok(Some(true)) => break,
            Ok(Some(false)) => return Err(DumpError::NoSuchProcess { pid }),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_micros(200)),
            Ok(None) => return Err(DumpError::StopTimeout { pid, timeout: STOP_TIMEOUT }),
            Err(libc::ECHILD) => return Err(DumpError::NoSuchProcess { pid }),
            Err(errno) => return Err(DumpError::Os { pid, op: "waitpid", errno }),
        }
    }
    let mut filters = Vec::new();
    for index in 0.. {
        let len = match ptrace::get_filter(pid, index, None) {
            Ok(len) => len,
            Err(libc::ENOENT) => break,
            // get_nth_filter(): not in filter mode; with mode 0, no filters.
            Err(libc::EINVAL) if index == 0 && seccomp_mode_of(pid) == Some(0) => break,
            Err(errno) => return Err(get_filter_error(pid, index, errno)),
        };
        let mut buf = vec![libc::sock_filter { code: 0, jt: 0, jf: 0, k: 0 }; len];
        let copied =
            ptrace::get_filter(pid, index, Some(&mut buf)).map_err(|errno| get_filter_error(pid, index, errno))?;
        buf.truncate(copied);
        filters.push(buf.iter().map(|f| Insn { code: f.code, jt: f.jt, jf: f.jf, k: f.k }).collect());
    }
    Ok(filters)
}

fn get_filter_error(pid: i32, index: usize, errno: i32) -> DumpError {
    match errno {
        libc::EACCES | libc::EPERM => {
            DumpError::Permission { pid, op: "PTRACE_SECCOMP_GET_FILTER", hint: HINT_GET_FILTER }
        }
        // get_nth_filter(): the task is not in filter mode.
        libc::EINVAL if index == 0 => match seccomp_mode_of(pid) {
            Some(1) => DumpError::StrictMode { pid },
            _ => DumpError::Os { pid, op: "PTRACE_SECCOMP_GET_FILTER", errno },
        },
        libc::EMEDIUMTYPE => DumpError::NoClassicProgram { pid, index },
        libc::EIO => DumpError::Unsupported,
        libc::ESRCH => DumpError::NoSuchProcess { pid },
        errno => DumpError::Os { pid, op: "PTRACE_SECCOMP_GET_FILTER", errno },
    }
}

fn status_field(pid: i32, field: &str) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.trim().parse().ok())
}

/// `State: Z` (or `X`) in /proc/PID/status: the process has exited.
fn is_zombie(pid: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    status
        .lines()
        .find_map(|l| l.strip_prefix("State:"))
        .is_some_and(|v| matches!(v.trim_start().chars().next(), Some('Z' | 'X')))
}

fn tracer_of(pid: i32) -> Option<i32> {
    status_field(pid, "TracerPid:")
}

fn seccomp_mode_of(pid: i32) -> Option<i32> {
    status_field(pid, "Seccomp:")
}

/// A child process that installed the given filters (oldest first) and then
/// sleeps until dropped (SIGKILLed and reaped on drop). The filters must
/// let `pause` through.
#[derive(Debug)]
pub struct FilteredProcess {
    pid: i32,
}

impl FilteredProcess {
    /// Forks the child and waits until its filters are installed.
    pub fn spawn(filters: &[Vec<Insn>]) -> Result<Self, KernelError> {
        crate::engine::seccomp_available()?;
        let progs: Vec<Vec<libc::sock_filter>> = filters.iter().map(|f| sys::to_sock_filters(f)).collect();
        // words[0] = installed, [1] = errno.
        let shared = child::shared_results(2)?;
        let words = shared.words();
        let child = || -> i32 {
            sys::harden_child(true);
            if let Err((step, e)) = sys::enter_filters(progs.iter().map(Vec::as_slice)) {
                put(words, 1, e as u64);
                return step.code();
            }
            put(words, 0, 1);
            loop {
                sys::pause();
            }
        };
        // SAFETY: async-signal-safe closure (prctl, setrlimit, seccomp,
        // pause, shared atomics), all data prepared before the fork.
        let pid = unsafe { sys::fork_child(child) }.map_err(|errno| KernelError::Os { op: "fork", errno })?;
        let process = FilteredProcess { pid };
        let deadline = Instant::now() + STOP_TIMEOUT;
        while get(words, 0) != 1 {
            match sys::wait_child(pid, Duration::from_millis(1)) {
                Ok(None) => {}
                Ok(Some(Exit::Failed(_))) => {
                    return Err(KernelError::FilterRejected { errno: get(words, 1) as i32, len: 0 })
                }
                Ok(Some(Exit::Code(code))) => return Err(KernelError::ChildExit { code }),
                Ok(Some(Exit::Signal(signal))) => return Err(KernelError::ChildDied { signal }),
                Err(errno) => return Err(KernelError::Os { op: "waitpid", errno }),
            }
            if Instant::now() > deadline {
                return Err(KernelError::Timeout { timeout: STOP_TIMEOUT });
            }
        }
        Ok(process)
    }

    /// The child's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }
}

impl Drop for FilteredProcess {
    fn drop(&mut self) {
        sys::kill_child(self.pid);
    }
}

#[cfg(test)]
mod zombie_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;

    #[test]
    fn a_zombie_is_reported_as_exited() {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Not waited for: once it exits it stays a zombie until `child` is reaped.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !is_zombie(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(is_zombie(pid));
        assert_eq!(dump_filters(pid), Err(DumpError::Zombie { pid }));
        let mut child = child;
        child.wait().unwrap();
    }
}
