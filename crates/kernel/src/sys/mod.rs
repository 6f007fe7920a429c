//! Every `unsafe` operation of the crate, each behind a small safe (or
//! narrowly `unsafe`) function with its `// SAFETY:` argument.
//!
//! Nothing outside this module calls libc directly: the engine, the
//! benchmark and the dump are written against these wrappers. One
//! submodule per kernel interface:
//!
//! - [`process`]: forked and cloned children, the shared words they report
//!   through, how they ended, and what a child calls on its own (raw system
//!   calls, clocks, signals);
//! - [`attach`]: classic filters onto the calling thread (seccomp(2)) and
//!   onto sockets (`SO_ATTACH_FILTER`);
//! - [`bpf`]: the `bpf(2)` commands (`BPF_PROG_LOAD`, `BPF_PROG_TEST_RUN`);
//! - [`ptrace`]: the requests the dump needs;
//! - `stub` (x86_64): the executable page whose `syscall` and `int 0x80`
//!   sit at known addresses.
//!
//! The crate calls the process and attach functions as `sys::name` (the
//! re-exports below); the other interfaces by their module.

pub(crate) mod attach;
pub(crate) mod bpf;
pub(crate) mod process;
pub(crate) mod ptrace;
#[cfg(target_arch = "x86_64")]
pub(crate) mod stub;

pub(crate) use attach::{action_available, install_filter, to_sock_filters, DatagramPair, OPTMEM_MAX};
pub(crate) use process::{
    clock_ns, clone_vm_vfork, default_sigpipe, die_with_parent, enter_filters, fork_child, get, getpid, harden_child,
    kill_child, pause, put, raw_syscall, reap_blocking, set_no_new_privs, wait_child, wait_child_usage, ChildStack,
    Exit, Failed, SharedWords,
};

/// The calling thread's `errno`.
pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}
