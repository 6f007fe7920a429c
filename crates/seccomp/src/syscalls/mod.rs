//! Syscall name ↔ number tables, generated from the kernel's own tables by
//! `cargo xtask codegen` (see xtask/syscalls/README.md for provenance and
//! how each ABI's entries are selected).

use crate::arch::Arch;

mod generated;

/// One ABI's syscall table: both directions, each sorted for binary search.
#[derive(Debug)]
pub struct Table {
    /// The ABI's name, as [`Arch::name`] spells it.
    pub arch: &'static str,
    /// `NR_syscalls`: highest native number + 1 (the size of the kernel's
    /// syscall table and of its seccomp cache bitmap).
    pub nr_syscalls: u32,
    /// `(number, name)` sorted by number; x32 numbers include bit 30.
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

/// The table of `arch`, if generated (x86_64, x32, i386, aarch64, riscv64,
/// riscv32, loongarch64).
pub fn table(arch: Arch) -> Option<&'static Table> {
    Some(match arch {
        Arch::X86_64 => &generated::X86_64,
        Arch::X32 => &generated::X32,
        Arch::I386 => &generated::I386,
        Arch::Aarch64 => &generated::AARCH64,
        Arch::Riscv64 => &generated::RISCV64,
        Arch::Riscv32 => &generated::RISCV32,
        Arch::Loongarch64 => &generated::LOONGARCH64,
        _ => return None,
    })
}

/// The name of syscall `nr` of `arch`.
pub fn name(arch: Arch, nr: u32) -> Option<&'static str> {
    table(arch)?.name(nr)
}

/// The number of syscall `name` of `arch`.
pub fn number(arch: Arch, name: &str) -> Option<u32> {
    table(arch)?.number(name)
}
