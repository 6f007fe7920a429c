//! The kernel's constant-action cache (`struct action_cache`, YiFei Zhu, v5.11).
//!
//! When a filter is attached, `seccomp_cache_prepare()` (kernel/seccomp.c)
//! emulates the filter's *original* classic code once per syscall number with
//! only `nr` and `arch` known, and marks in a bitmap every number for which
//! the filter certainly returns exactly `SECCOMP_RET_ALLOW`. At syscall time
//! `seccomp_run_filters()` consults the newest filter's bitmap first and, on a
//! hit, allows the call without running any filter.
//!
//! This module reproduces that computation bit for bit, including every place
//! where the kernel's tiny emulator gives up (so a number our own
//! [`crate::analysis`] proves constant-ALLOW may still be missing here: the
//! kernel would run the filter for it). It works on plain `u32` AUDIT_ARCH
//! values and syscall numbers so it does not depend on any table.
//!
//! The emulator (`seccomp_is_const_allow()`) keeps one register and knows only:
//!
//! | instruction | effect |
//! |---|---|
//! | `ld [0]` / `ld [4]` (`LD|W|ABS`, 0x20) | register = `nr` / `arch`; any other offset: give up |
//! | `ret #k` (0x06) | result: `k == SECCOMP_RET_ALLOW` exactly |
//! | `ja k` (0x05) | jump |
//! | `jeq/jgt/jge/jset #k` (0x15/0x25/0x35/0x45) | evaluate on the register, jump |
//! | `and #k` (0x54) | register &= k |
//! | anything else (`ret a`, X forms, other ALU, `ld #k`, `ld len`, `M[]`, `tax`, ...) | give up |
//!
//! "Give up" means "not cacheable": the bit is cleared and the kernel runs the
//! filters for that number.

use cbpf::opcode::{ALU_AND_K, JMP_JA, JMP_JEQ_K, JMP_JGE_K, JMP_JGT_K, JMP_JSET_K, LD_W_ABS, RET_K};
use cbpf::Insn;

pub use crate::action::SECCOMP_RET_ALLOW;
/// `AUDIT_ARCH_X86_64` is the only native arch whose kernel defines
/// `__NR_uretprobe` / `__NR_uprobe`; `AUDIT_ARCH_I386` is `SECCOMP_ARCH_COMPAT`
/// of an x86_64 kernel.
pub use crate::arch::{AUDIT_ARCH_I386, AUDIT_ARCH_X86_64};
/// `__NR_uprobe` on x86_64.
pub use cbpf::uapi::x86_64::NR_UPROBE as X86_64_NR_UPROBE;
/// `__NR_uretprobe` on x86_64.
pub use cbpf::uapi::x86_64::NR_URETPROBE as X86_64_NR_URETPROBE;

use crate::arch::Arch;
use crate::data::{OFFSET_ARCH as SECCOMP_DATA_ARCH, OFFSET_NR as SECCOMP_DATA_NR};
use crate::syscalls;

/// One `DECLARE_BITMAP(allow_*, SECCOMP_ARCH_*_NR)`: bit `nr` set means the
/// filter chain always allows `nr` and the kernel skips the filters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheBitmap {
    nr_count: u32,
    words: Vec<u64>,
}

impl CacheBitmap {
    /// `bitmap_fill()`: every number in `0..nr_count` allowed ("before any
    /// filters, all syscalls are always allowed").
    pub fn full(nr_count: u32) -> Self {
        let mut words = vec![u64::MAX; (nr_count as usize).div_ceil(64)];
        let tail = nr_count % 64;
        if tail != 0 {
            if let Some(last) = words.last_mut() {
                *last = (1u64 << tail) - 1;
            }
        }
        CacheBitmap { nr_count, words }
    }

    /// The bitmap's size, `SECCOMP_ARCH_*_NR`.
    pub fn nr_count(&self) -> u32 {
        self.nr_count
    }

    /// `test_bit(nr)`; false for numbers outside `0..nr_count`.
    pub fn test(&self, nr: u32) -> bool {
        if nr >= self.nr_count {
            return false;
        }
        self.words.get((nr / 64) as usize).is_some_and(|w| w & (1u64 << (nr % 64)) != 0)
    }

    /// `__clear_bit(nr)`.
    fn clear(&mut self, nr: u32) {
        if let Some(w) = self.words.get_mut((nr / 64) as usize) {
            *w &= !(1u64 << (nr % 64));
        }
    }

    /// The always-allowed numbers, ascending.
    pub fn allowed(&self) -> Vec<u32> {
        (0..self.nr_count).filter(|&nr| self.test(nr)).collect()
    }

    /// Mirrors `seccomp_cache_check_allow_bitmap()` in kernel/seccomp.c
    /// (Linux 6.18): `nr` is the signed `int nr` of `struct seccomp_data`;
    /// negative or too large numbers are never cached.
    ///
    /// # Deviations
    /// None (`array_index_nospec` is a speculation barrier, not a semantic).
    pub fn check_allow(&self, nr: i32) -> bool {
        u32::try_from(nr).is_ok_and(|nr| self.test(nr))
    }
}

/// Mirrors `seccomp_uprobe_exception()` in kernel/seccomp.c (Linux 6.18):
/// on an x86_64 kernel the uretprobe (335) and uprobe (336) syscalls of the
/// native arch are reported constant-allow whatever the filter says.
///
/// `native_arch` is the kernel's `SECCOMP_ARCH_NATIVE`; only x86_64 defines
/// `__NR_uretprobe` / `__NR_uprobe`, and there `SECCOMP_ARCH_COMPAT` exists,
/// so the exception also requires `arch == SECCOMP_ARCH_NATIVE`.
///
/// # Deviations
/// The kernel decides "which kernel" at compile time; here it is the
/// `native_arch` argument. An x86_64 kernel built without `CONFIG_COMPAT`
/// skips the arch test, which changes nothing because it only ever prepares
/// the native bitmap.
pub fn seccomp_uprobe_exception(nr: u32, arch: u32, native_arch: u32) -> bool {
    native_arch == AUDIT_ARCH_X86_64 && arch == native_arch && (nr == X86_64_NR_URETPROBE || nr == X86_64_NR_UPROBE)
}

/// Mirrors `seccomp_is_const_allow()` in kernel/seccomp.c (Linux 6.18): does
/// the filter certainly return exactly `SECCOMP_RET_ALLOW` for `{nr, arch}`
/// whatever the arguments and instruction pointer?
///
/// `original` must be the program as the user gave it (the kernel's
/// `orig_prog`, [`cbpf::Program::original`]), not the rewritten one: the
/// emulator recognises `LD|W|ABS` (0x20), not the internal 0x21.
///
/// # Deviations
/// None for programs that passed validation. For other input the kernel
/// never runs it; here a jump past the end, like falling off the end (the
/// kernel's `WARN_ON(1)`), answers false instead of reading out of bounds.
pub fn seccomp_is_const_allow(original: &[Insn], nr: u32, arch: u32, native_arch: u32) -> bool {
    if seccomp_uprobe_exception(nr, arch, native_arch) {
        return true;
    }
    let mut reg_value: u32 = 0;
    let mut pc: usize = 0;
    while let Some(insn) = original.get(pc) {
        let k = insn.k;
        match insn.code {
            LD_W_ABS => match k {
                SECCOMP_DATA_NR => reg_value = nr,
                SECCOMP_DATA_ARCH => reg_value = arch,
                // Can't optimize (non-constant value load).
                _ => return false,
            },
            // Reached return with constant values only.
            RET_K => return k == SECCOMP_RET_ALLOW,
            JMP_JA => pc = pc.saturating_add(k as usize),
            JMP_JEQ_K | JMP_JGE_K | JMP_JGT_K | JMP_JSET_K => {
                let op_res = match insn.code {
                    JMP_JEQ_K => reg_value == k,
                    JMP_JGE_K => reg_value >= k,
                    JMP_JGT_K => reg_value > k,
                    _ => reg_value & k != 0,
                };
                pc += usize::from(if op_res { insn.jt } else { insn.jf });
            }
            ALU_AND_K => reg_value &= k,
            // Can't optimize (unknown insn).
            _ => return false,
        }
        pc = pc.saturating_add(1);
    }
    // Ran off the end of the filter.
    false
}

/// Mirrors `seccomp_cache_prepare_bitmap()` in kernel/seccomp.c (Linux 6.18):
/// the bitmap of one arch for a filter attached on top of `prev` (the bitmap
/// of the filter it is attached to, `None` for the first filter).
///
/// Starts from a copy of `prev` (or all ones) and clears every still-set bit
/// whose number [`seccomp_is_const_allow`] does not prove allowed, so the
/// newest filter's bitmap is the AND over the whole chain.
///
/// # Deviations
/// The kernel sizes `prev` and the new bitmap identically
/// (`SECCOMP_ARCH_*_NR`); here a `prev` of another size contributes only the
/// numbers it covers (missing ones count as not allowed).
pub fn seccomp_cache_prepare_bitmap(
    original: &[Insn],
    prev: Option<&CacheBitmap>,
    nr_count: u32,
    arch: u32,
    native_arch: u32,
) -> CacheBitmap {
    let mut bitmap = CacheBitmap::full(nr_count);
    if let Some(prev) = prev {
        // The new filter must be as restrictive as the last.
        for nr in 0..nr_count {
            if !prev.test(nr) {
                bitmap.clear(nr);
            }
        }
    }
    for nr in 0..nr_count {
        // No bitmap change: not a cacheable action.
        if !bitmap.test(nr) {
            continue;
        }
        // No bitmap change: continue to always allow.
        if seccomp_is_const_allow(original, nr, arch, native_arch) {
            continue;
        }
        // Not a cacheable action: always run filters.
        bitmap.clear(nr);
    }
    bitmap
}

/// The bitmap the kernel computes for a single filter (no previous filter):
/// [`seccomp_cache_prepare_bitmap`] with `prev = None`.
///
/// `arch` is the arch being prepared (`SECCOMP_ARCH_NATIVE` or
/// `SECCOMP_ARCH_COMPAT`), `nr_count` its `SECCOMP_ARCH_*_NR`, and
/// `native_arch` the kernel's `SECCOMP_ARCH_NATIVE` (it decides
/// [`seccomp_uprobe_exception`]).
pub fn kernel_cache_allow(original: &[Insn], arch: u32, nr_count: u32, native_arch: u32) -> CacheBitmap {
    seccomp_cache_prepare_bitmap(original, None, nr_count, arch, native_arch)
}

/// The newest filter's bitmap for a chain of filters attached in order
/// (`chain[0]` first, the last element newest), as the kernel builds it one
/// attach at a time. An empty chain gives the all-ones bitmap the kernel
/// would start from (a task without filters runs none).
pub fn chain_cache_allow(chain: &[&[Insn]], arch: u32, nr_count: u32, native_arch: u32) -> CacheBitmap {
    let mut bitmap: Option<CacheBitmap> = None;
    for original in chain {
        bitmap = Some(seccomp_cache_prepare_bitmap(original, bitmap.as_ref(), nr_count, arch, native_arch));
    }
    bitmap.unwrap_or_else(|| CacheBitmap::full(nr_count))
}

/// What a kernel build defines for the cache (`arch/*/include/asm/seccomp.h`):
/// `SECCOMP_ARCH_NATIVE{,_NR}` and, where it exists, `SECCOMP_ARCH_COMPAT{,_NR}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheConfig {
    /// `SECCOMP_ARCH_NATIVE`.
    pub native_arch: u32,
    /// `SECCOMP_ARCH_NATIVE_NR`.
    pub native_nr: u32,
    /// `(SECCOMP_ARCH_COMPAT, SECCOMP_ARCH_COMPAT_NR)`.
    pub compat: Option<(u32, u32)>,
}

/// Mirror of `struct action_cache`: the native bitmap and, on kernels with a
/// compat arch, the compat one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionCache {
    config: CacheConfig,
    /// `allow_native`.
    pub allow_native: CacheBitmap,
    /// `allow_compat`, present iff the config has a compat arch.
    pub allow_compat: Option<CacheBitmap>,
}

impl ActionCache {
    /// Mirrors `seccomp_cache_prepare()` in kernel/seccomp.c (Linux 6.18): the
    /// cache of a filter attached on top of a filter whose cache is `prev`.
    ///
    /// # Deviations
    /// A `prev` built for another config contributes only the bitmaps and
    /// numbers it has (see [`seccomp_cache_prepare_bitmap`]).
    pub fn prepare(original: &[Insn], prev: Option<&ActionCache>, config: CacheConfig) -> Self {
        let allow_native = seccomp_cache_prepare_bitmap(
            original,
            prev.map(|p| &p.allow_native),
            config.native_nr,
            config.native_arch,
            config.native_arch,
        );
        let allow_compat = config.compat.map(|(arch, nr_count)| {
            let prev_compat = prev.and_then(|p| p.allow_compat.as_ref());
            match (prev, prev_compat) {
                // A previous cache without a compat bitmap: nothing in it is
                // known allowed for the compat arch.
                (Some(_), None) => CacheBitmap { nr_count, words: vec![0; (nr_count as usize).div_ceil(64)] },
                (_, prev_compat) => {
                    seccomp_cache_prepare_bitmap(original, prev_compat, nr_count, arch, config.native_arch)
                }
            }
        });
        ActionCache { config, allow_native, allow_compat }
    }

    /// The config this cache was built for.
    pub fn config(&self) -> CacheConfig {
        self.config
    }

    /// Mirrors `seccomp_cache_check_allow()` in kernel/seccomp.c (Linux 6.18):
    /// may `seccomp_run_filters()` return ALLOW without running the filters?
    /// A native-only kernel does not look at `arch`; with a compat arch, any
    /// other arch is a `WARN_ON_ONCE` and a miss.
    ///
    /// # Deviations
    /// None.
    pub fn check_allow(&self, arch: u32, nr: i32) -> bool {
        match (self.config.compat, &self.allow_compat) {
            (None, _) => self.allow_native.check_allow(nr),
            (Some((compat_arch, _)), compat) => {
                if arch == self.config.native_arch {
                    self.allow_native.check_allow(nr)
                } else if arch == compat_arch {
                    compat.as_ref().is_some_and(|b| b.check_allow(nr))
                } else {
                    false
                }
            }
        }
    }
}

// Which arches a kernel's cache covers and how large each bitmap is: a
// fact of the kernel's asm/seccomp.h, computed from the syscall tables
// (here rather than in `arch`, which stays below `syscalls`).

/// One arch the seccomp cache covers, with its bitmap size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheArch {
    /// `SECCOMP_ARCH_NATIVE` / `SECCOMP_ARCH_COMPAT`.
    pub arch: Arch,
    /// `SECCOMP_ARCH_NATIVE_NR` / `SECCOMP_ARCH_COMPAT_NR` (the syscall
    /// table size, highest number + 1), when we have that table.
    pub nr: Option<u32>,
}

/// The arches a kernel's seccomp cache keeps bitmaps for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheArches {
    pub native: CacheArch,
    pub compat: Option<CacheArch>,
}

/// The seccomp cache arches of a kernel built for `kernel`, with the bitmap
/// size of each.
///
/// Mirrors `SECCOMP_ARCH_NATIVE(_NR)` / `SECCOMP_ARCH_COMPAT(_NR)` in
/// arch/{x86,arm64,arm,riscv,s390,powerpc,loongarch,m68k,parisc,sh}/include/asm/seccomp.h
/// (Linux 6.18):
///
/// | kernel | native, `_NR` | compat, `_NR` |
/// |---|---|---|
/// | x86_64 | X86_64, `NR_syscalls` | I386, `IA32_NR_syscalls` |
/// | i386 | I386, `NR_syscalls` | none |
/// | arm64 | AARCH64, `NR_syscalls` | ARM, `__NR_compat32_syscalls` |
/// | arm | ARM, `NR_syscalls` (padded) | none |
/// | riscv | RISCV64 or RISCV32, `NR_syscalls` | none |
/// | s390 | S390X, `NR_syscalls` | S390, the same `NR_syscalls` |
/// | powerpc64 | PPC64(LE), `NR_syscalls` | PPC(LE), the same `NR_syscalls` |
/// | powerpc32 | PPC, `NR_syscalls` | none |
/// | loongarch | LOONGARCH64, `NR_syscalls` | none |
/// | m68k | M68K, `NR_syscalls` | none |
/// | parisc64 | PARISC64, `NR_syscalls` | PARISC, the same `NR_syscalls` |
/// | parisc | PARISC, `NR_syscalls` | none |
/// | sh | SH \| LE when little-endian (libseccomp's `sh`; `sheb` else), `NR_syscalls` | none |
///
/// Any other arch (mips, which has sparse syscall numbers, big-endian arm,
/// ...) → `None` (no cache).
///
/// # Deviations
/// x32 is given as the x86_64 kernel: its numbers are ≥ 0x40000000, outside
/// the bitmap. `nr` is always `Some` for the arches above (every one has a
/// generated table).
pub fn cache_arches(kernel: Arch) -> Option<CacheArches> {
    let nr = |arch: Arch| syscalls::table(arch).map(|t| t.nr_syscalls);
    let ca = |arch: Arch, nr: Option<u32>| CacheArch { arch, nr };
    let (native, compat) = match kernel {
        Arch::X86_64 | Arch::X32 => (Arch::X86_64, Some(ca(Arch::I386, nr(Arch::I386)))),
        Arch::I386 => (Arch::I386, None),
        Arch::Aarch64 => (Arch::Aarch64, Some(ca(Arch::Arm, Some(syscalls::arm64_compat_nr_syscalls())))),
        Arch::Arm => (Arch::Arm, None),
        Arch::Riscv64 => (Arch::Riscv64, None),
        Arch::Riscv32 => (Arch::Riscv32, None),
        Arch::S390x => (Arch::S390x, Some(ca(Arch::S390, nr(Arch::S390x)))),
        Arch::Ppc64le => (Arch::Ppc64le, Some(ca(Arch::Ppcle, nr(Arch::Ppc64le)))),
        Arch::Ppc64 => (Arch::Ppc64, Some(ca(Arch::Ppc, nr(Arch::Ppc64)))),
        Arch::Ppc => (Arch::Ppc, None),
        Arch::Loongarch64 => (Arch::Loongarch64, None),
        // arch/m68k/include/asm/seccomp.h: native only.
        Arch::M68k => (Arch::M68k, None),
        // arch/parisc/include/asm/seccomp.h: a 64-bit kernel's compat NR
        // is its own NR_syscalls, as on s390.
        Arch::Parisc64 => (Arch::Parisc64, Some(ca(Arch::Parisc, nr(Arch::Parisc64)))),
        Arch::Parisc => (Arch::Parisc, None),
        // arch/sh/include/asm/seccomp.h: AUDIT_ARCH_SH | LE when little-endian.
        Arch::Sh => (Arch::Sh, None),
        Arch::Sheb => (Arch::Sheb, None),
        _ => return None,
    };
    Some(CacheArches { native: ca(native, nr(native)), compat })
}
