//! Processes: the forked or cloned child that runs a filter, the words it
//! reports through, how it ended, and what a child may call on its own
//! (raw system calls, clocks, signals), all async-signal-safe where a
//! child uses them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::attach::install_filter;
use super::errno;

/// A `MAP_SHARED` anonymous mapping of `len` zeroed 64-bit words, visible to
/// the parent and to every child forked after it was made.
///
/// Children write their results here with plain atomic stores, which need no
/// system call and so cannot be stopped by the filter under test.
#[derive(Debug)]
pub(crate) struct SharedWords {
    ptr: *mut AtomicU64,
    len: usize,
}

impl SharedWords {
    pub(crate) fn new(len: usize) -> Result<Self, i32> {
        let len = len.max(1);
        let bytes = len.checked_mul(8).ok_or(libc::ENOMEM)?;
        // SAFETY: an anonymous mapping at an address of the kernel's choice
        // touches no existing memory; the result is checked for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(errno());
        }
        Ok(SharedWords { ptr: ptr.cast(), len })
    }

    pub(crate) fn words(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is a live, page-aligned mapping of `len * 8` bytes,
        // zero-filled by the kernel (a valid AtomicU64 bit pattern); it is
        // unmapped only in Drop, which needs `&mut self`, so no borrow
        // outlives it. Cross-process sharing is sound for atomics.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// Stores `value` in word `at` of a [`SharedWords`] (nothing if out of
/// range). Async-signal-safe.
pub(crate) fn put(words: &[AtomicU64], at: usize, value: u64) {
    if let Some(w) = words.get(at) {
        w.store(value, Ordering::SeqCst);
    }
}

/// Word `at` of a [`SharedWords`] (0 if out of range).
pub(crate) fn get(words: &[AtomicU64], at: usize) -> u64 {
    words.get(at).map_or(0, |w| w.load(Ordering::SeqCst))
}

impl Drop for SharedWords {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in `new`; no reference
        // into it can exist because `words()` borrows `self`.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len * 8);
        }
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// A step of its set-up failed (its errno is in a shared word).
    Failed(Failed),
    Code(i32),
    Signal(i32),
}

/// The step of a forked child's set-up that failed. The child stores the
/// errno (or a signal) in a word of its [`SharedWords`] and exits with the
/// step's [`code`](Failed::code), which [`Exit`] decodes, so that the parent
/// can say what failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failed {
    /// `prctl(PR_SET_NO_NEW_PRIVS)`.
    NoNewPrivs,
    /// `seccomp(SECCOMP_SET_MODE_FILTER)`.
    Install,
    /// The `clone` of a worker.
    Clone,
    /// A `waitpid` on a worker.
    Wait,
    /// A worker exited with a status other than 0.
    Worker,
    /// A worker died before it started a job.
    WorkerDied,
    /// A clock could not be read under the filters.
    Clock,
}

impl Failed {
    const ALL: [Failed; 7] = [
        Failed::NoNewPrivs,
        Failed::Install,
        Failed::Clone,
        Failed::Wait,
        Failed::Worker,
        Failed::WorkerDied,
        Failed::Clock,
    ];

    /// The exit status: from 70 (`EX_SOFTWARE` in sysexits.h) up, which no
    /// child of this crate exits with otherwise.
    pub(crate) const fn code(self) -> i32 {
        70 + self as i32
    }
}

/// In a forked child: `prctl(PR_SET_NO_NEW_PRIVS)`, then installs each of
/// `progs`, newest last. Async-signal-safe.
pub(crate) fn enter_filters<'a>(progs: impl IntoIterator<Item = &'a [libc::sock_filter]>) -> Result<(), (Failed, i32)> {
    set_no_new_privs().map_err(|e| (Failed::NoNewPrivs, e))?;
    for prog in progs {
        install_filter(prog).map_err(|e| (Failed::Install, e))?;
    }
    Ok(())
}

/// Forks; the child runs `child` and `_exit`s with its return value.
///
/// # Safety
///
/// The caller may be multi-threaded, so `child` must be async-signal-safe:
/// no allocation, no locks, no panics, no stdio. Everything it needs must be
/// prepared before the call.
pub(crate) unsafe fn fork_child(child: impl FnOnce() -> i32) -> Result<i32, i32> {
    // SAFETY: fork has no memory-safety preconditions of its own; what the
    // child may do afterwards is this function's documented contract.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(errno());
    }
    if pid == 0 {
        let code = child();
        // SAFETY: _exit ends the child without running the parent's atexit
        // handlers or destructors, which must not run twice.
        unsafe { libc::_exit(code) }
    }
    Ok(pid)
}

/// A stack for [`clone_vm_vfork`] children, mapped once and reused.
#[derive(Debug)]
pub(crate) struct ChildStack {
    words: Vec<u64>,
}

impl ChildStack {
    /// A stack of `bytes` (rounded up to 16).
    pub(crate) fn new(bytes: usize) -> Self {
        ChildStack { words: vec![0; bytes.div_ceil(16) * 2] }
    }
}

extern "C" fn vm_child_trampoline(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `&mut &mut dyn FnMut` that clone_vm_vfork passed,
    // alive for the whole call because the parent is suspended (CLONE_VFORK)
    // inside that function until this child exits.
    let f = unsafe { &mut *arg.cast::<&mut dyn FnMut() -> i32>() };
    f()
}

/// `clone(CLONE_VM | CLONE_VFORK | SIGCHLD)` on `stack`: the child shares
/// this address space (no page-table copy) and runs `child` on its own
/// stack while the caller is suspended; returns the child's pid once it has
/// ended (it is then a zombie for the caller to reap). The child inherits
/// NO_NEW_PRIVS and the seccomp filters of the calling thread.
///
/// # Safety
///
/// Same contract as [`fork_child`] (async-signal-safe `child`), and `child`
/// must not touch anything on the caller's stack that the caller relies on
/// keeping (they share memory).
pub(crate) unsafe fn clone_vm_vfork(stack: &mut ChildStack, child: &mut dyn FnMut() -> i32) -> Result<i32, i32> {
    let mut f: &mut dyn FnMut() -> i32 = child;
    let top = stack.words.as_mut_ptr_range().end;
    // SAFETY: `top` is the 16-byte-aligned end of a live buffer that the
    // child uses as its stack and nothing else uses meanwhile (the caller is
    // suspended by CLONE_VFORK until the child ends); `f` outlives the child
    // for the same reason. glibc's clone runs the trampoline and then
    // SYS_exit with its return value.
    let pid = unsafe {
        libc::clone(
            vm_child_trampoline,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&mut f as *mut &mut dyn FnMut() -> i32).cast(),
        )
    };
    if pid < 0 {
        return Err(errno());
    }
    Ok(pid)
}

/// Blocking reap of child `pid` (retrying on EINTR). Async-signal-safe.
pub(crate) fn reap_blocking(pid: i32) -> Result<Exit, i32> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(decode_status(status));
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// `prctl(PR_SET_PDEATHSIG, SIGKILL)`: die with the parent. Async-signal-safe.
pub(crate) fn die_with_parent() {
    // SAFETY: integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
}

fn decode_status(status: i32) -> Exit {
    if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        let code = libc::WEXITSTATUS(status);
        Failed::ALL.into_iter().find(|f| f.code() == code).map_or(Exit::Code(code), Exit::Failed)
    }
}

/// How a child ended and the CPU time (user + system) it used in total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reaped {
    pub(crate) exit: Exit,
    pub(crate) cpu: Duration,
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(u64::try_from(tv.tv_sec).unwrap_or(0))
        + Duration::from_micros(u64::try_from(tv.tv_usec).unwrap_or(0))
}

/// Non-blocking reap: `Some(..)` once the child has ended.
fn try_reap(pid: i32) -> Result<Option<Reaped>, i32> {
    let mut status = 0;
    // SAFETY: all-zero is a valid rusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are valid out-pointers for the call.
    let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
    match r {
        0 => Ok(None),
        r if r == pid => {
            Ok(Some(Reaped { exit: decode_status(status), cpu: timeval(usage.ru_utime) + timeval(usage.ru_stime) }))
        }
        _ => Err(errno()),
    }
}

/// Waits up to `timeout` for child `pid`; `Ok(None)` on timeout (the child is
/// then still running and must be killed by the caller).
pub(crate) fn wait_child(pid: i32, timeout: Duration) -> Result<Option<Exit>, i32> {
    wait_child_usage(pid, timeout).map(|r| r.map(|r| r.exit))
}

/// [`wait_child`] that also reports the child's CPU time.
pub(crate) fn wait_child_usage(pid: i32, timeout: Duration) -> Result<Option<Reaped>, i32> {
    let deadline = Instant::now() + timeout;
    // SAFETY: pidfd_open takes two integers and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let pidfd = i32::try_from(pidfd).unwrap_or(-1);
    let result = loop {
        match try_reap(pid) {
            Ok(Some(exit)) => break Ok(Some(exit)),
            Ok(None) => {}
            Err(e) => break Err(e),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Ok(None);
        }
        if pidfd >= 0 {
            let mut pfd = libc::pollfd { fd: pidfd, events: libc::POLLIN, revents: 0 };
            let ms = i32::try_from(left.as_millis().saturating_add(1)).unwrap_or(i32::MAX);
            // SAFETY: one valid pollfd for the call's duration.
            unsafe { libc::poll(&mut pfd, 1, ms) };
        } else {
            std::thread::sleep(left.min(Duration::from_millis(1)));
        }
    };
    if pidfd >= 0 {
        // SAFETY: closes the descriptor opened above, exactly once.
        unsafe { libc::close(pidfd) };
    }
    result
}

/// SIGKILLs child `pid` and reaps it.
pub(crate) fn kill_child(pid: i32) {
    // SAFETY: signals and reaps our own child; the pid cannot be recycled
    // before the waitpid below reaps it.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
}

/// In a child: die with the parent, never dump core (a seccomp kill of the
/// last thread would otherwise produce one per killed input).
/// Async-signal-safe.
pub(crate) fn harden_child(dumpable: bool) {
    let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain integer/pointer arguments valid for the calls' duration.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        if !dumpable {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
    }
}

/// `prctl(PR_SET_NO_NEW_PRIVS, 1)`. Async-signal-safe.
pub(crate) fn set_no_new_privs() -> Result<(), i32> {
    // SAFETY: integer arguments only.
    let r = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// A raw system call with six register arguments. Async-signal-safe.
///
/// # Safety
///
/// An arbitrary system call can do anything to this process (unmap memory,
/// close descriptors): call it only in a forked child that exists to run it,
/// with pointer arguments that point at live buffers.
pub(crate) unsafe fn raw_syscall(nr: i64, a: [u64; 6]) -> i64 {
    // SAFETY: forwarded to the caller, see above.
    unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) }
}

/// `clock_gettime(clock)` in nanoseconds, `None` if the call failed.
/// Async-signal-safe.
pub(crate) fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer.
    let r = unsafe { libc::clock_gettime(clock, &mut ts) };
    if r != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// Blocks until a signal arrives. Async-signal-safe.
pub(crate) fn pause() {
    // SAFETY: no arguments.
    unsafe { libc::pause() };
}

/// `getpid()`.
pub(crate) fn getpid() -> i32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getpid() }
}

/// Restores the default SIGPIPE disposition (terminate), which the Rust
/// runtime sets to "ignore" at start-up, so a command-line tool writing into
/// a closed pipe (`bpfconv ... | head`) ends quietly like any Unix tool
/// instead of failing every later write.
pub(crate) fn default_sigpipe() {
    // SAFETY: signal(2) with SIG_DFL installs no handler code; it only changes
    // the disposition of SIGPIPE for this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
