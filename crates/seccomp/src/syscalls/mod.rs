//! Syscall name ↔ number tables of Linux 6.18, generated from the kernel's
//! own `.tbl` files by `cargo xtask codegen` (see xtask/syscalls/README.md
//! for provenance and how each ABI's entries are selected). Every named
//! [`Arch`] has a table; arm's includes the private `__ARM_NR_*` calls
//! (`cacheflush` 0xf0002, ...).

use crate::arch::Arch;

// Kept byte-for-byte as `cargo xtask codegen` writes it (its drift check
// compares bytes), so rustfmt must not touch it.
#[rustfmt::skip]
mod generated;

/// One ABI's syscall table: both directions, each sorted for binary search.
#[derive(Debug)]
pub struct Table {
    /// The ABI's name, as [`Arch::name`] spells it.
    pub arch: &'static str,
    /// `NR_syscalls` of a kernel built for this ABI, as its build scripts
    /// compute it: highest number + 1 (the size of the syscall table and of
    /// the seccomp cache bitmap). arm pads it (472 in 6.18); x32 gives
    /// `X32_NR_syscalls` (548, without bit 30); mips includes `__NR_Linux`
    /// (4000/5000/6000); s390 and powerpc count both word sizes' rows.
    pub nr_syscalls: u32,
    /// `(number, name)` sorted by number; x32 numbers include bit 30, mips
    /// numbers `__NR_Linux`.
    pub by_nr: &'static [(u32, &'static str)],
    /// `(name, number)` sorted by name.
    pub by_name: &'static [(&'static str, u32)],
}

impl Table {
    /// The name of syscall `nr`.
    pub fn name(&self, nr: u32) -> Option<&'static str> {
        let i = self.by_nr.binary_search_by_key(&nr, |&(n, _)| n).ok()?;
        self.by_nr.get(i).map(|&(_, name)| name)
    }

    /// The number of syscall `name`.
    pub fn number(&self, name: &str) -> Option<u32> {
        let i = self.by_name.binary_search_by_key(&name, |&(n, _)| n).ok()?;
        self.by_name.get(i).map(|&(_, nr)| nr)
    }

    /// Every `(number, name)` in number order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &'static str)> + '_ {
        self.by_nr.iter().copied()
    }
}

/// Every generated table.
pub fn tables() -> &'static [&'static Table] {
    generated::ALL
}

/// The table of `arch`: every named arch has one; [`Arch::Other`] has none.
///
/// Byte-order twins share their data (`armeb` = `arm`, `ppc64` = `ppc64le`,
/// `ppcle` = `ppc`, `mipsel*` = `mips*`); each has its own [`Table::arch`].
pub fn table(arch: Arch) -> Option<&'static Table> {
    Some(match arch {
        Arch::X86_64 => &generated::X86_64,
        Arch::I386 => &generated::I386,
        Arch::X32 => &generated::X32,
        Arch::Aarch64 => &generated::AARCH64,
        Arch::Arm => &generated::ARM,
        Arch::Armeb => &generated::ARMEB,
        Arch::Riscv64 => &generated::RISCV64,
        Arch::Riscv32 => &generated::RISCV32,
        Arch::S390x => &generated::S390X,
        Arch::S390 => &generated::S390,
        Arch::Ppc64le => &generated::PPC64LE,
        Arch::Ppc64 => &generated::PPC64,
        Arch::Ppc => &generated::PPC,
        Arch::Ppcle => &generated::PPCLE,
        Arch::Mips => &generated::MIPS,
        Arch::Mipsel => &generated::MIPSEL,
        Arch::Mips64 => &generated::MIPS64,
        Arch::Mipsel64 => &generated::MIPSEL64,
        Arch::Mips64n32 => &generated::MIPS64N32,
        Arch::Mipsel64n32 => &generated::MIPSEL64N32,
        Arch::Loongarch64 => &generated::LOONGARCH64,
        Arch::M68k => &generated::M68K,
        Arch::Parisc64 => &generated::PARISC64,
        Arch::Parisc => &generated::PARISC,
        Arch::Sh => &generated::SH,
        Arch::Sheb => &generated::SHEB,
        Arch::Other(_) => return None,
    })
}

// Written here, not in `arch`: the tables are keyed by `Arch`, so the
// arch module stays below this one.
impl Arch {
    /// The generated syscall table of this ABI, if we have one
    /// ([`table`]).
    pub fn syscalls(self) -> Option<&'static Table> {
        table(self)
    }
}

/// `__NR_compat32_syscalls`: the size of an arm64 kernel's AArch32 syscall
/// table and compat seccomp cache bitmap (`SECCOMP_ARCH_COMPAT_NR` in
/// arch/arm64/include/asm/seccomp.h). It differs from a 32-bit ARM kernel's
/// own `NR_syscalls` ([`Table::nr_syscalls`] of `arm`), which
/// arch/arm/tools/syscallnr.sh pads to a multiple of 4.
pub(crate) fn arm64_compat_nr_syscalls() -> u32 {
    generated::ARM64_COMPAT_NR_SYSCALLS
}

/// The name of syscall `nr` of `arch`.
pub fn name(arch: Arch, nr: u32) -> Option<&'static str> {
    table(arch)?.name(nr)
}

/// The number of syscall `name` of `arch`.
pub fn number(arch: Arch, name: &str) -> Option<u32> {
    table(arch)?.number(name)
}
