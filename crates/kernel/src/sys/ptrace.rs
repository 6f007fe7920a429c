//! The ptrace requests the dump needs, on one tracee.

use super::errno;

/// `PTRACE_SECCOMP_GET_FILTER` (include/uapi/linux/ptrace.h); not in libc.
const PTRACE_SECCOMP_GET_FILTER: libc::c_uint = 0x420c;

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
