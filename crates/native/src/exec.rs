//! Encoded trees mapped executable, and the call into them: the crate's
//! only `unsafe`. The mapping is written once, then made read-only and
//! executable (never writable and executable at once), and unmapped on
//! drop.

use crate::encode::Encoded;
use crate::{NativeError, DATA_SIZE};

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) use linux::Code;

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub(crate) use elsewhere::Code;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod linux {
    use super::*;
    use std::ptr::NonNull;

    /// A tree's code as the System V ABI calls it: the input's address in,
    /// the leaf out.
    type Entry = extern "sysv64" fn(*const u8) -> u64;

    pub(crate) struct Code {
        /// The mapping: `mapped` bytes, the first `len` the code.
        base: NonNull<u8>,
        mapped: usize,
        len: usize,
        /// Each node's first byte, below `len`.
        entries: Box<[u32]>,
    }

    // SAFETY: the mapping is never written after `map` returns and is
    // owned by this value alone (unmapped on drop); calling the code only
    // reads it and the caller's input, so threads may share and move it.
    unsafe impl Send for Code {}
    // SAFETY: as for Send: nothing mutates the mapping after `map`.
    unsafe impl Sync for Code {}

    impl Code {
        pub(crate) fn map(encoded: Encoded) -> Result<Code, NativeError> {
            let Encoded { bytes, entries } = encoded;
            let page = 4096;
            let mapped = bytes.len().max(1).div_ceil(page) * page;
            // SAFETY: a fresh private anonymous mapping with no address
            // hint: it touches no memory Rust knows of; failure is checked.
            let raw = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    mapped,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if raw == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error().into());
            }
            let Some(base) = NonNull::new(raw.cast::<u8>()) else {
                return Err(NativeError::Unsupported);
            };
            // Owns the mapping from here: an early return unmaps it.
            let code = Code { base, mapped, len: bytes.len(), entries };
            // SAFETY: the mapping is `mapped` ≥ `bytes.len()` bytes, writable,
            // and no other pointer to it exists.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), code.base.as_ptr(), bytes.len()) };
            // SAFETY: the whole mapping made read-only and executable; the
            // result is checked.
            let protected = unsafe { libc::mprotect(raw, mapped, libc::PROT_READ | libc::PROT_EXEC) };
            if protected != 0 {
                return Err(std::io::Error::last_os_error().into());
            }
            Ok(code)
        }

        #[inline]
        pub(crate) fn call(&self, node: u32, data: &[u8; DATA_SIZE]) -> Option<u64> {
            let entry = *self.entries.get(node as usize)? as usize;
            // SAFETY: `entry` is below `len` (encode), inside the mapping.
            // What starts there is `encode`'s code for a checked node, a
            // function of the `Entry` type: it reads only 4-byte words at
            // offsets below 64 from its argument (here 64 readable bytes),
            // writes no memory, uses only rax and rdi (caller-saved in the
            // System V ABI), no stack, and ends in `ret` after jumps only to
            // earlier nodes, so it returns.
            let run = unsafe { std::mem::transmute::<*const u8, Entry>(self.base.as_ptr().add(entry)) };
            Some(run(data.as_ptr()))
        }

        pub(crate) fn len(&self) -> usize {
            self.len
        }
    }

    impl Drop for Code {
        fn drop(&mut self) {
            // SAFETY: `base` and `mapped` are the mapping `map` made, owned
            // by this value; no reference into it outlives it (calls return
            // before `drop` can run).
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.mapped) };
        }
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod elsewhere {
    use super::*;

    /// Never made: other hosts keep their tables.
    pub(crate) struct Code(());

    impl Code {
        pub(crate) fn map(_: Encoded) -> Result<Code, NativeError> {
            Err(NativeError::Unsupported)
        }

        pub(crate) fn call(&self, _: u32, _: &[u8; DATA_SIZE]) -> Option<u64> {
            None
        }

        pub(crate) fn len(&self) -> usize {
            0
        }
    }
}
