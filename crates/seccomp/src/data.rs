//! `struct seccomp_data` (include/uapi/linux/seccomp.h): what a seccomp
//! filter reads.
//!
//! 64 bytes in host byte order; the kernel does no byte swapping. Every
//! engine in this workspace models a little-endian host, so [`SeccompData::to_bytes`]
//! writes the host's byte order, little-endian here (the low half of `args[i]` at `16 + 8*i`, the high
//! half at `20 + 8*i`; see SPEC §5.1).

/// Size of `struct seccomp_data` in bytes; `ld len` in a seccomp filter reads this.
pub const SECCOMP_DATA_SIZE: usize = cbpf::uapi::seccomp::SECCOMP_DATA_SIZE as usize;
pub use cbpf::uapi::seccomp::{OFFSET_ARCH, OFFSET_ARGS, OFFSET_IP, OFFSET_NR};

/// Mirror of `struct seccomp_data`: the one definition lives in the classic
/// interpreter ([`cbpf::SeccompData`]), which runs filters on it.
pub use cbpf::SeccompData;
