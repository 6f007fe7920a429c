//! The `#[repr(C)]` mirror of `struct seccomp_data`
//! (include/uapi/linux/seccomp.h): the one home of its layout
//! ([`crate::uapi::seccomp`]'s offsets are read from it).

/// Size of `struct seccomp_data` (include/uapi/linux/seccomp.h), 64: the
/// mirror's, as a length ([`crate::uapi::seccomp`] has it as a `k`).
pub const SECCOMP_DATA_SIZE: usize = std::mem::size_of::<SeccompData>();

/// Mirror of `struct seccomp_data` (include/uapi/linux/seccomp.h): what a
/// seccomp filter sees of a system call. `#[repr(C)]`, so that its size and
/// field offsets are the kernel's ([`crate::uapi::seccomp`] reads them here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct SeccompData {
    /// System call number (`int nr`; x32 calls carry bit 30).
    pub nr: i32,
    /// `AUDIT_ARCH_*` value of the calling convention.
    pub arch: u32,
    /// Address of the system call instruction.
    pub instruction_pointer: u64,
    /// System call arguments, widened to 64 bits.
    pub args: [u64; 6],
}

impl SeccompData {
    /// A call of `nr` under `arch` with zero arguments and instruction pointer.
    pub fn new(arch: u32, nr: i32) -> Self {
        SeccompData { nr, arch, instruction_pointer: 0, args: [0; 6] }
    }

    /// The 64 bytes the kernel fills in (`populate_seccomp_data()`), in host
    /// byte order: the kernel does no byte swapping, so a filter's `ld [16]`
    /// reads the low half of `args[0]` on a little-endian host.
    pub fn to_bytes(&self) -> [u8; SECCOMP_DATA_SIZE] {
        // Fixed-size array writes: this sits on every engine's per-call path.
        let mut out = [0u8; SECCOMP_DATA_SIZE];
        let (head, args) = out.split_at_mut(16);
        let (nr, rest) = head.split_at_mut(4);
        let (arch, ip) = rest.split_at_mut(4);
        nr.copy_from_slice(&self.nr.to_ne_bytes());
        arch.copy_from_slice(&self.arch.to_ne_bytes());
        ip.copy_from_slice(&self.instruction_pointer.to_ne_bytes());
        for (dst, a) in args.chunks_exact_mut(8).zip(self.args) {
            dst.copy_from_slice(&a.to_ne_bytes());
        }
        out
    }

    /// This call with its 64-bit fields in the order the kernel that made
    /// it stores them, as this host's engines read them word by word.
    /// `populate_seccomp_data()` (kernel/seccomp.c) writes
    /// `instruction_pointer` and `args[i]` in the kernel's own byte order,
    /// so on a big-endian kernel (an arch without `__AUDIT_ARCH_LE`: s390x,
    /// ppc64, ppc, mips*, m68k, parisc*, sheb, armeb) the word at `16 + 8i`
    /// is the high half of `args[i]` and the one at `+ 4` the low half; a
    /// filter exported for such an arch (libseccomp writes its loads that
    /// way) reads them there. For an arch whose byte order is not the
    /// host's the halves are swapped; otherwise the call is unchanged.
    ///
    /// # Deviations
    /// The byte order is taken from the arch value alone (its
    /// `__AUDIT_ARCH_LE` bit), which is the kernel's for every arch Linux
    /// reports.
    pub fn in_kernel_order(self) -> SeccompData {
        let kernel_le = self.arch & crate::uapi::audit::AUDIT_ARCH_LE != 0;
        if kernel_le == cfg!(target_endian = "little") {
            return self;
        }
        let swap = |v: u64| v.rotate_left(32);
        SeccompData { instruction_pointer: swap(self.instruction_pointer), args: self.args.map(swap), ..self }
    }

    /// The call whose 16 words, as `ld [4 * i]` reads them (host byte
    /// order), are `words`.
    pub fn from_words(words: &[u32; SECCOMP_DATA_SIZE / 4]) -> Self {
        let mut bytes = [0u8; SECCOMP_DATA_SIZE];
        for (chunk, w) in bytes.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&w.to_ne_bytes());
        }
        SeccompData::from_bytes(&bytes)
    }

    /// Inverse of [`SeccompData::to_bytes`].
    pub fn from_bytes(bytes: &[u8; SECCOMP_DATA_SIZE]) -> Self {
        let mut words = bytes.chunks_exact(4).map(|w| {
            let mut b = [0u8; 4];
            b.copy_from_slice(w);
            b
        });
        let mut next4 = || words.next().unwrap_or_default();
        let nr = i32::from_ne_bytes(next4());
        let arch = u32::from_ne_bytes(next4());
        let mut next8 = || {
            let (a, b) = (next4(), next4());
            u64::from_ne_bytes([a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]])
        };
        let instruction_pointer = next8();
        let mut args = [0u64; 6];
        for a in args.iter_mut() {
            *a = next8();
        }
        SeccompData { nr, arch, instruction_pointer, args }
    }

    /// The 32-bit word a seccomp `ld [offset]` reads, or `None` when `offset`
    /// is not 4-aligned and below 64 (such loads are rejected by
    /// `seccomp_check_filter()`).
    pub fn load_word(&self, offset: u32) -> Option<u32> {
        if offset % 4 != 0 {
            return None;
        }
        let start = usize::try_from(offset).ok()?;
        let w = self.to_bytes().get(start..start + 4)?.try_into().ok()?;
        Some(u32::from_ne_bytes(w))
    }
}
