//! Every `unsafe` operation of the crate, each behind a small safe (or
//! narrowly `unsafe`) function with its `// SAFETY:` argument.
//!
//! Nothing outside this module calls libc directly: the engine, the
//! benchmark and the dump are written against these wrappers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// `PTRACE_SECCOMP_GET_FILTER` (include/uapi/linux/ptrace.h); not in libc.
const PTRACE_SECCOMP_GET_FILTER: libc::c_uint = 0x420c;

/// The calling thread's `errno`.
pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

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

/// The sysctl bounding a socket's option memory (attached filters included).
pub(crate) const OPTMEM_MAX: &str = "/proc/sys/net/core/optmem_max";

/// The `struct sock_filter` records the kernel's interfaces take.
pub(crate) fn to_sock_filters(filter: &[cbpf::Insn]) -> Vec<libc::sock_filter> {
    filter.iter().map(|i| libc::sock_filter { code: i.code, jt: i.jt, jf: i.jf, k: i.k }).collect()
}

/// A socket this process owns, closed on drop.
#[derive(Debug)]
pub(crate) struct OwnedSocket(i32);

impl OwnedSocket {
    /// `setsockopt(SOL_SOCKET, SO_ATTACH_FILTER, prog)`.
    pub(crate) fn attach_filter(&self, prog: &[libc::sock_filter]) -> Result<(), i32> {
        let len = u16::try_from(prog.len()).map_err(|_| libc::EINVAL)?;
        let fprog = libc::sock_fprog { len, filter: prog.as_ptr().cast_mut() };
        // SAFETY: `fprog` points at `len` initialised sock_filter entries
        // that outlive the call (the kernel copies them); the size is the
        // struct's; `self.0` is an open socket we own.
        let r = unsafe {
            libc::setsockopt(
                self.0,
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                (&fprog as *const libc::sock_fprog).cast(),
                std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(errno())
        }
    }
}

/// Both ends of `socketpair(AF_UNIX, SOCK_DGRAM)`: datagrams written to
/// `sender` are filtered by `receiver`'s filter inside the `send` call
/// (`unix_dgram_sendmsg()` runs `sk_filter()` on the peer before queueing).
#[derive(Debug)]
pub(crate) struct DatagramPair {
    pub(crate) sender: OwnedSocket,
    pub(crate) receiver: OwnedSocket,
}

impl DatagramPair {
    pub(crate) fn new() -> Result<DatagramPair, i32> {
        let mut fds = [-1i32; 2];
        // SAFETY: `fds` is a writable array of two c_ints, as socketpair(2) requires.
        let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
        if r != 0 {
            return Err(errno());
        }
        let [sender, receiver] = fds;
        Ok(DatagramPair { sender: OwnedSocket(sender), receiver: OwnedSocket(receiver) })
    }

    /// Sends `packet` as one datagram without blocking; `Ok` with the bytes
    /// the sender was told were sent (a filter's drop is not an error).
    pub(crate) fn send(&self, packet: &[u8]) -> Result<usize, i32> {
        // SAFETY: `packet` is a live buffer of `packet.len()` bytes the
        // kernel only reads; `sender` is an open socket we own.
        let r = unsafe { libc::send(self.sender.0, packet.as_ptr().cast(), packet.len(), libc::MSG_DONTWAIT) };
        usize::try_from(r).map_err(|_| errno())
    }

    /// Takes the next queued datagram without blocking: `Ok(Some(len))` its
    /// length (`MSG_TRUNC`: the datagram's, not the buffer's), `Ok(None)`
    /// when the queue is empty (`EAGAIN`).
    pub(crate) fn recv_len(&self) -> Result<Option<usize>, i32> {
        let mut byte = [0u8; 1];
        // SAFETY: `byte` is a writable buffer of the length passed;
        // `receiver` is an open socket we own.
        let r = unsafe {
            libc::recv(self.receiver.0, byte.as_mut_ptr().cast(), byte.len(), libc::MSG_DONTWAIT | libc::MSG_TRUNC)
        };
        match usize::try_from(r) {
            Ok(n) => Ok(Some(n)),
            Err(_) => match errno() {
                libc::EAGAIN => Ok(None),
                e => Err(e),
            },
        }
    }
}

impl Drop for OwnedSocket {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value owns, once.
        unsafe { libc::close(self.0) };
    }
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, 0, prog)`. Async-signal-safe.
pub(crate) fn install_filter(prog: &[libc::sock_filter]) -> Result<(), i32> {
    let len = u16::try_from(prog.len()).map_err(|_| libc::EINVAL)?;
    let fprog = libc::sock_fprog { len, filter: prog.as_ptr().cast_mut() };
    // SAFETY: `fprog` points at `len` initialised sock_filter entries that
    // outlive the call; the kernel only reads them.
    let r = unsafe {
        libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &fprog as *const libc::sock_fprog)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// `seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &action)`: `Ok` when filter mode
/// and `action` are supported.
pub(crate) fn action_available(action: u32) -> Result<(), i32> {
    // SAFETY: points at a live u32 the kernel only reads.
    let r = unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_GET_ACTION_AVAIL, 0, &action as *const u32) };
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

/// The ptrace requests the dump needs, on one tracee.
pub(crate) mod ptrace {
    use super::{errno, PTRACE_SECCOMP_GET_FILTER};

    fn request(req: libc::c_uint, pid: i32, addr: usize, data: *mut libc::c_void) -> Result<i64, i32> {
        // SAFETY: `data` is either null or a buffer the caller sized for the
        // request (see get_filter); the other requests take no pointer.
        let r = unsafe { libc::ptrace(req, pid, addr as *mut libc::c_void, data) };
        if r < 0 {
            Err(errno())
        } else {
            Ok(r)
        }
    }

    pub(crate) fn seize(pid: i32) -> Result<(), i32> {
        request(libc::PTRACE_SEIZE, pid, 0, std::ptr::null_mut()).map(|_| ())
    }

    pub(crate) fn interrupt(pid: i32) -> Result<(), i32> {
        request(libc::PTRACE_INTERRUPT, pid, 0, std::ptr::null_mut()).map(|_| ())
    }

    pub(crate) fn detach(pid: i32) -> Result<(), i32> {
        request(libc::PTRACE_DETACH, pid, 0, std::ptr::null_mut()).map(|_| ())
    }

    /// Length of filter `index` (buffer `None`) or copy it into `buf`,
    /// which must hold at least the length returned before.
    pub(crate) fn get_filter(pid: i32, index: usize, buf: Option<&mut [libc::sock_filter]>) -> Result<usize, i32> {
        let data = match buf {
            Some(b) => b.as_mut_ptr().cast(),
            None => std::ptr::null_mut(),
        };
        let n = request(PTRACE_SECCOMP_GET_FILTER, pid, index, data)?;
        usize::try_from(n).map_err(|_| libc::EINVAL)
    }

    /// Waits (non-blocking) for a ptrace stop of `pid`: `Ok(Some(true))`
    /// stopped, `Ok(Some(false))` the process ended, `Ok(None)` not yet.
    pub(crate) fn poll_stop(pid: i32) -> Result<Option<bool>, i32> {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL | libc::WNOHANG) };
        match r {
            0 => Ok(None),
            r if r == pid => Ok(Some(libc::WIFSTOPPED(status))),
            _ => Err(errno()),
        }
    }
}

/// An executable page holding the two entry stubs whose `syscall` and
/// `int 0x80` instructions sit at fixed offsets, so the
/// `instruction_pointer` the kernel reports for them is known exactly.
#[cfg(target_arch = "x86_64")]
pub(crate) mod stub {
    use super::errno;

    /// Where we ask for the page: the address the kernel-checked vectors in
    /// testdata/filters were recorded with, so their `ip` is reproduced.
    pub(crate) const PREFERRED_BASE: usize = 0x5ec0_0000_0000;
    /// Offset of the 2-byte `syscall` instruction (ip = base + 0x19).
    pub(crate) const SYSCALL_OFFSET: usize = 0x17;
    /// Offset of the 2-byte `int 0x80` instruction (ip = base + 0x11a).
    pub(crate) const INT80_OFFSET: usize = 0x118;
    const SYSCALL_ENTRY: usize = 0x40;
    const INT80_ENTRY: usize = 0x140;
    const PAGE: usize = 4096;
    const MAP_FIXED_NOREPLACE: libc::c_int = 0x10_0000;

    /// `syscall; ret` at SYSCALL_OFFSET.
    const SYSCALL_TAIL: [u8; 3] = [0x0f, 0x05, 0xc3];
    /// At SYSCALL_ENTRY, `rdi` = &StubArgs: load rax, rsi, rdx, r10, r8, r9,
    /// then rdi last, and jump back to the `syscall` at 0x17.
    const SYSCALL_HEAD: [u8; 29] = [
        0x48, 0x8b, 0x07, // mov rax, [rdi]
        0x48, 0x8b, 0x77, 0x10, // mov rsi, [rdi+0x10]
        0x48, 0x8b, 0x57, 0x18, // mov rdx, [rdi+0x18]
        0x4c, 0x8b, 0x57, 0x20, // mov r10, [rdi+0x20]
        0x4c, 0x8b, 0x47, 0x28, // mov r8,  [rdi+0x28]
        0x4c, 0x8b, 0x4f, 0x30, // mov r9,  [rdi+0x30]
        0x48, 0x8b, 0x7f, 0x08, // mov rdi, [rdi+0x08]
        0xeb, 0xba, // jmp 0x17 (0x5d - 0x46)
    ];
    /// `int 0x80; pop rbp; pop rbx; ret` at INT80_OFFSET.
    const INT80_TAIL: [u8; 5] = [0xcd, 0x80, 0x5d, 0x5b, 0xc3];
    /// At INT80_ENTRY: save rbx/rbp (callee-saved), load the 32-bit
    /// registers eax, ebx, ecx, edx, esi, ebp, edi (zero-extending), jump to
    /// the `int 0x80` at 0x118.
    const INT80_HEAD: [u8; 24] = [
        0x53, // push rbx
        0x55, // push rbp
        0x8b, 0x07, // mov eax, [rdi]
        0x8b, 0x5f, 0x08, // mov ebx, [rdi+0x08]
        0x8b, 0x4f, 0x10, // mov ecx, [rdi+0x10]
        0x8b, 0x57, 0x18, // mov edx, [rdi+0x18]
        0x8b, 0x77, 0x20, // mov esi, [rdi+0x20]
        0x8b, 0x6f, 0x30, // mov ebp, [rdi+0x30]
        0x8b, 0x7f, 0x28, // mov edi, [rdi+0x28]
        0xeb, 0xc0, // jmp 0x118 (0x158 - 0x40)
    ];

    /// Register image for one stub call: `nr` then the six arguments.
    #[derive(Debug, Clone, Copy, Default)]
    #[repr(C)]
    pub(crate) struct StubArgs {
        pub(crate) nr: u64,
        pub(crate) args: [u64; 6],
    }

    /// Which entry path (and so which `seccomp_data.arch`) to use.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Entry {
        /// `syscall`: x86_64, and x32 numbers.
        Syscall,
        /// `int 0x80`: i386 (needs IA32 emulation).
        Int80,
    }

    /// The mapped stub page. Never unmapped: children inherit it.
    #[derive(Debug)]
    pub(crate) struct StubPage {
        base: usize,
    }

    impl StubPage {
        /// Maps the page at PREFERRED_BASE if free, else anywhere.
        pub(crate) fn map() -> Result<Self, i32> {
            let base = map_page(PREFERRED_BASE as *mut libc::c_void, MAP_FIXED_NOREPLACE)
                .or_else(|_| map_page(std::ptr::null_mut(), 0))?;
            let mut page = [0xcc_u8; PAGE]; // int3 everywhere else
            let pieces: [(usize, &[u8]); 4] = [
                (SYSCALL_OFFSET, &SYSCALL_TAIL),
                (SYSCALL_ENTRY, &SYSCALL_HEAD),
                (INT80_OFFSET, &INT80_TAIL),
                (INT80_ENTRY, &INT80_HEAD),
            ];
            for (at, bytes) in pieces {
                let end = at + bytes.len();
                if let Some(dst) = page.get_mut(at..end) {
                    dst.copy_from_slice(bytes);
                }
            }
            // SAFETY: `base` is a fresh private RW mapping of PAGE bytes that
            // nothing else references; then it is made read+execute only.
            let r = unsafe {
                std::ptr::copy_nonoverlapping(page.as_ptr(), base as *mut u8, PAGE);
                libc::mprotect(base as *mut libc::c_void, PAGE, libc::PROT_READ | libc::PROT_EXEC)
            };
            if r != 0 {
                return Err(errno());
            }
            Ok(StubPage { base })
        }

        /// The `instruction_pointer` seccomp sees for the `syscall` stub.
        pub(crate) fn syscall_ip(&self) -> u64 {
            (self.base + SYSCALL_OFFSET + 2) as u64
        }

        /// The `instruction_pointer` seccomp sees for the `int 0x80` stub.
        pub(crate) fn int80_ip(&self) -> u64 {
            (self.base + INT80_OFFSET + 2) as u64
        }

        /// Issues one system call from the stub; returns the raw `rax`
        /// (for `int 0x80`, the sign-extended `eax`). Async-signal-safe.
        ///
        /// # Safety
        ///
        /// The system call runs for real unless a filter stops it: call only
        /// in a forked child whose installed filter answers every call from
        /// the stub with an ERRNO or a kill (as the engine's rewrite does).
        pub(crate) unsafe fn call(&self, entry: Entry, args: &StubArgs) -> i64 {
            let at = match entry {
                Entry::Syscall => SYSCALL_ENTRY,
                Entry::Int80 => INT80_ENTRY,
            };
            // SAFETY: the page holds, at `at`, a complete function following
            // the SysV C ABI (takes a pointer in rdi, returns in rax, saves
            // rbx/rbp, touches only caller-saved registers otherwise; the
            // kernel's syscall path clobbers only rcx/r11). The page stays
            // mapped for the life of the process.
            let raw = unsafe {
                let f: extern "C" fn(*const StubArgs) -> i64 = std::mem::transmute(self.base + at);
                f(args)
            };
            match entry {
                Entry::Syscall => raw,
                Entry::Int80 => i64::from(raw as i32),
            }
        }
    }

    fn map_page(hint: *mut libc::c_void, extra: libc::c_int) -> Result<usize, i32> {
        // SAFETY: an anonymous private mapping; with MAP_FIXED_NOREPLACE the
        // kernel refuses rather than replace an existing mapping.
        let p = unsafe {
            libc::mmap(
                hint,
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(errno());
        }
        if extra != 0 && p != hint {
            // An old kernel ignoring the flag placed it elsewhere: fine, but
            // we only keep the page we asked for on this path.
            // SAFETY: unmaps the page just mapped.
            unsafe { libc::munmap(p, PAGE) };
            return Err(libc::EEXIST);
        }
        Ok(p as usize)
    }
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

/// The two `bpf(2)` commands [`crate::bpf`] needs, over the fields of
/// `union bpf_attr` (include/uapi/linux/bpf.h) they set. The union only
/// grows at its end and the kernel zero-fills what a caller's smaller
/// `size` leaves out (`bpf_check_uarg_tail_zero()`), so each command's
/// prefix is passed on its own.
pub(crate) mod bpf {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    use super::errno;

    /// `BPF_PROG_LOAD`.
    const BPF_PROG_LOAD: libc::c_int = 5;
    /// `BPF_PROG_TEST_RUN`.
    const BPF_PROG_TEST_RUN: libc::c_int = 10;

    /// The `BPF_PROG_LOAD` prefix of `union bpf_attr`, up to `prog_name`.
    #[repr(C)]
    #[derive(Debug, Default)]
    struct ProgLoadAttr {
        prog_type: u32,
        insn_cnt: u32,
        insns: u64,
        license: u64,
        log_level: u32,
        log_size: u32,
        log_buf: u64,
        kern_version: u32,
        prog_flags: u32,
        prog_name: [u8; 16],
    }

    /// The `test` member of `union bpf_attr` (`BPF_PROG_TEST_RUN`).
    #[repr(C)]
    #[derive(Debug, Default)]
    struct TestRunAttr {
        prog_fd: u32,
        retval: u32,
        data_size_in: u32,
        data_size_out: u32,
        data_in: u64,
        data_out: u64,
        repeat: u32,
        duration: u32,
        ctx_size_in: u32,
        ctx_size_out: u32,
        ctx_in: u64,
        ctx_out: u64,
        flags: u32,
        cpu: u32,
        batch_size: u32,
        _pad: u32,
    }

    /// `bpf(cmd, attr, size_of_val(attr))`.
    ///
    /// # Safety
    ///
    /// Every pointer field of `attr` must point at a live buffer of the
    /// size its companion field gives, writable where the kernel writes.
    unsafe fn bpf<T>(cmd: libc::c_int, attr: &mut T) -> Result<i64, i32> {
        let size = std::mem::size_of::<T>() as libc::c_uint;
        // SAFETY: forwarded to the caller; `attr` itself is a live,
        // writable value of `size` bytes.
        let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, (attr as *mut T).cast::<libc::c_void>(), size) };
        if r < 0 {
            Err(errno())
        } else {
            Ok(r)
        }
    }

    /// `BPF_PROG_LOAD` of `insns` (raw `struct bpf_insn` records), with the
    /// verifier's log written to `log` when it is not empty (`log_level`
    /// 1). The kernel writes a NUL-terminated text into `log`.
    pub(crate) fn prog_load(
        prog_type: u32,
        insns: &[u8],
        license: &std::ffi::CStr,
        name: &[u8],
        log: &mut [u8],
    ) -> Result<OwnedFd, i32> {
        let insn_cnt = u32::try_from(insns.len() / 8).map_err(|_| libc::E2BIG)?;
        let log_size = u32::try_from(log.len()).map_err(|_| libc::EINVAL)?;
        let mut prog_name = [0u8; 16];
        for (to, from) in prog_name.iter_mut().take(15).zip(name) {
            *to = *from;
        }
        let mut attr = ProgLoadAttr {
            prog_type,
            insn_cnt,
            insns: insns.as_ptr() as u64,
            license: license.as_ptr() as u64,
            log_level: u32::from(log_size > 0),
            log_size,
            log_buf: if log.is_empty() { 0 } else { log.as_mut_ptr() as u64 },
            prog_name,
            ..ProgLoadAttr::default()
        };
        // SAFETY: `insns` holds `insn_cnt` records of 8 bytes, `license`
        // is NUL-terminated, `log` is writable for `log_size` bytes (or
        // null with size 0); all outlive the call.
        let fd = unsafe { bpf(BPF_PROG_LOAD, &mut attr) }?;
        let fd = i32::try_from(fd).map_err(|_| libc::EBADF)?;
        // SAFETY: a successful BPF_PROG_LOAD returns a new descriptor that
        // nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// What `BPF_PROG_TEST_RUN` reports besides the buffers it fills.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct TestRunResult {
        pub(crate) retval: u32,
        pub(crate) duration_ns: u32,
        pub(crate) data_size_out: u32,
        pub(crate) ctx_size_out: u32,
    }

    /// `BPF_PROG_TEST_RUN` of `prog` on `data_in` (and `ctx_in` when given),
    /// `repeat` times; the packet after the run is written to `data_out`,
    /// the context to `ctx_out` (when not empty).
    pub(crate) fn prog_test_run(
        prog: &OwnedFd,
        data_in: &[u8],
        data_out: &mut [u8],
        ctx_in: Option<&[u8]>,
        ctx_out: &mut [u8],
        repeat: u32,
    ) -> Result<TestRunResult, i32> {
        let len = |b: usize| u32::try_from(b).map_err(|_| libc::E2BIG);
        let mut attr = TestRunAttr {
            prog_fd: u32::try_from(prog.as_raw_fd()).map_err(|_| libc::EBADF)?,
            data_size_in: len(data_in.len())?,
            data_size_out: len(data_out.len())?,
            data_in: data_in.as_ptr() as u64,
            data_out: if data_out.is_empty() { 0 } else { data_out.as_mut_ptr() as u64 },
            repeat,
            ctx_size_in: len(ctx_in.map_or(0, <[u8]>::len))?,
            ctx_size_out: len(ctx_out.len())?,
            ctx_in: ctx_in.map_or(0, |c| c.as_ptr() as u64),
            ctx_out: if ctx_out.is_empty() { 0 } else { ctx_out.as_mut_ptr() as u64 },
            ..TestRunAttr::default()
        };
        // SAFETY: every pointer is a live buffer of the size beside it
        // (or null with size 0), the `_out` ones writable; the kernel
        // writes at most `*_size_out` bytes into them (it reports ENOSPC
        // rather than overrun a size hint); all outlive the call.
        unsafe { bpf(BPF_PROG_TEST_RUN, &mut attr) }?;
        Ok(TestRunResult {
            retval: attr.retval,
            duration_ns: attr.duration,
            data_size_out: attr.data_size_out,
            ctx_size_out: attr.ctx_size_out,
        })
    }
}
