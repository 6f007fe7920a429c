//! The forked child's protocol, shared by the engine (`seccomp_attach`),
//! the benchmarks and the dump: results in words shared with the child,
//! one filter installed in a fresh child, a bounded wait. Below `engine`,
//! `bench` and `dump`, above `sys` (whose wrappers it calls).

use std::time::Duration;

use crate::sys::{self, get, put, Exit, Failed};
use crate::KernelError;

/// How long a one-shot child may take before it is killed.
const CHILD_TIMEOUT: Duration = Duration::from_secs(300);

/// In one fresh child: `PR_SET_NO_NEW_PRIVS`, then
/// `seccomp(SECCOMP_SET_MODE_FILTER)` of `prog`, unmodified. `Ok(Ok(ns))`
/// is the install's wall time, `Ok(Err(errno))` the errno of whichever of
/// the two refused; `Err` when the child could not be run.
pub(crate) fn install_in_child(prog: &[libc::sock_filter]) -> Result<Result<u64, i32>, KernelError> {
    // words[0] = ns, [1] = errno, [2] = done.
    let shared = shared_results(3)?;
    let words = shared.words();
    let child = || -> i32 {
        sys::harden_child(false);
        if let Err(e) = sys::set_no_new_privs() {
            put(words, 1, e as u64);
            return Failed::NoNewPrivs.code();
        }
        let t0 = sys::clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0);
        if let Err(e) = sys::install_filter(prog) {
            put(words, 1, e as u64);
            return Failed::Install.code();
        }
        let t1 = sys::clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0);
        put(words, 0, t1.saturating_sub(t0));
        put(words, 2, 1);
        0
    };
    // SAFETY: the closure is async-signal-safe: it only calls sys's
    // async-signal-safe wrappers and stores into the shared words, mapped
    // before the fork.
    let pid = unsafe { sys::fork_child(child) }.map_err(|errno| KernelError::Os { op: "fork", errno })?;
    let exit = wait_reported(pid, || get(words, 2) == 1)?;
    if get(words, 2) == 1 {
        return Ok(Ok(get(words, 0)));
    }
    let Some(exit) = exit else {
        // Unreachable: a child killed for having reported has reported.
        return Err(KernelError::Timeout { timeout: CHILD_TIMEOUT });
    };
    match exit {
        Exit::Failed(Failed::NoNewPrivs | Failed::Install) => Ok(Err(get(words, 1) as i32)),
        Exit::Failed(step) => Err(KernelError::ChildExit { code: step.code() }),
        Exit::Code(code) => Err(KernelError::ChildExit { code }),
        Exit::Signal(signal) => Err(KernelError::ChildDied { signal }),
    }
}

/// Waits at most [`CHILD_TIMEOUT`] for the install child `pid`, and kills
/// it once `reported()`: its filter is then in force on its own way out,
/// and may keep it from finishing (a fuzz-kernel program did:
/// `CHILD_NEVER_EXITS` in tests/kernel.rs; a plain errno for every syscall
/// does not, glibc's `_exit` then dies by SIGSEGV). `Ok(None)`: killed
/// after reporting.
fn wait_reported(pid: i32, reported: impl Fn() -> bool) -> Result<Option<Exit>, KernelError> {
    let deadline = std::time::Instant::now() + CHILD_TIMEOUT;
    loop {
        match sys::wait_child(pid, Duration::from_millis(5)) {
            Ok(Some(exit)) => return Ok(Some(exit)),
            Ok(None) if reported() => {
                sys::kill_child(pid);
                return Ok(None);
            }
            Ok(None) if std::time::Instant::now() >= deadline => {
                sys::kill_child(pid);
                return Err(KernelError::Timeout { timeout: CHILD_TIMEOUT });
            }
            Ok(None) => {}
            Err(errno) => {
                sys::kill_child(pid);
                return Err(KernelError::Os { op: "waitpid", errno });
            }
        }
    }
}

/// `n` words shared with a forked child, for its results.
pub(crate) fn shared_results(n: usize) -> Result<sys::SharedWords, KernelError> {
    sys::SharedWords::new(n).map_err(|errno| KernelError::Os { op: "mmap shared results", errno })
}

/// Waits at most `timeout` for child `pid`; kills it past that or when
/// waiting fails.
pub(crate) fn wait_for(pid: i32, timeout: Duration) -> Result<Exit, KernelError> {
    match sys::wait_child(pid, timeout) {
        Ok(Some(exit)) => Ok(exit),
        Ok(None) => {
            sys::kill_child(pid);
            Err(KernelError::Timeout { timeout })
        }
        Err(errno) => {
            sys::kill_child(pid);
            Err(KernelError::Os { op: "waitpid", errno })
        }
    }
}
