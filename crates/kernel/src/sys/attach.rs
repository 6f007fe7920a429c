//! Attaching classic filters: seccomp(2) on the calling thread and
//! `SO_ATTACH_FILTER` on a socket this process owns.

use super::errno;

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
