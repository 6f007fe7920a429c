//! The running kernel as the judge of socket filters: does
//! `SO_ATTACH_FILTER` accept this classic program?
//!
//! `sk_attach_filter()` (net/core/filter.c) copies the program, runs
//! `bpf_check_classic()`, converts it (`bpf_prepare_filter()` →
//! `bpf_migrate_filter()` → `bpf_convert_filter()`, EINVAL on a jump the
//! eBPF form cannot encode) and only then charges the converted program
//! to the socket's option memory (`sk_filter_charge()`, ENOMEM past
//! `net.core.optmem_max`). [`attach`] reports which of those refused.

use cbpf::Insn;

use crate::sys::{self, OwnedSocket};

/// What `SO_ATTACH_FILTER` said of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// Attached (to a fresh socket, closed again at once).
    Accepted,
    /// Converted, then refused for the memory it needs: more than
    /// `net.core.optmem_max` (ENOMEM). The program itself is valid.
    OverOptmem,
    /// Refused by validation or conversion (EINVAL, or another errno).
    Rejected { errno: i32 },
}

/// Attaches `prog` to a fresh `AF_UNIX` datagram socket and says how the
/// kernel answered. `Err` only when no socket could be made.
pub fn attach(prog: &[Insn]) -> Result<Attach, crate::KernelError> {
    let socket = OwnedSocket::unix_datagram().map_err(|errno| crate::KernelError::Os { op: "socketpair", errno })?;
    let raw: Vec<libc::sock_filter> =
        prog.iter().map(|i| libc::sock_filter { code: i.code, jt: i.jt, jf: i.jf, k: i.k }).collect();
    Ok(match socket.attach_filter(&raw) {
        Ok(()) => Attach::Accepted,
        Err(libc::ENOMEM) => Attach::OverOptmem,
        Err(errno) => Attach::Rejected { errno },
    })
}

/// `net.core.optmem_max`, if readable.
pub fn optmem_max() -> Option<u64> {
    std::fs::read_to_string(sys::OPTMEM_MAX).ok()?.trim().parse().ok()
}
