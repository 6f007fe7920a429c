//! The two `bpf(2)` commands [`crate::bpf`] needs, over the fields of
//! `union bpf_attr` (include/uapi/linux/bpf.h) they set. The union only
//! grows at its end and the kernel zero-fills what a caller's smaller
//! `size` leaves out (`bpf_check_uarg_tail_zero()`), so each command's
//! prefix is passed on its own.

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
