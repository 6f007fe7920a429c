//! The kernel's user API as classic programs see it, in one place: the
//! seccomp constants, the `AUDIT_ARCH_*` values, the `#[repr(C)]` mirror
//! of `struct seccomp_data` ([`seccomp_data`]) and the socket buffer a
//! socket filter reads ([`skb`]). Below `validate` and every engine.
//!
//! Every crate that names a `SECCOMP_RET_*` action, an `AUDIT_ARCH_*` value or
//! a `struct seccomp_data` offset imports it from here (`seccomp::action` and
//! `seccomp::arch` re-export these). They live in `cbpf` because it is the
//! crate every other one depends on, the kernel crate included: it needs them
//! without the seccomp model.

pub mod seccomp_data;
pub mod skb;

pub use seccomp_data::{SeccompData, SECCOMP_DATA_SIZE};
pub use skb::{NetDevice, Skb};

/// include/uapi/linux/seccomp.h (Linux 6.18): filter return values and the
/// `struct seccomp_data` layout.
pub mod seccomp {
    /// Defines each `SECCOMP_RET_*` constant and [`RETS`], the table of them
    /// by C name, from one list.
    macro_rules! seccomp_rets {
        ($($(#[$doc:meta])* $name:ident = $value:literal,)*) => {
            $($(#[$doc])* pub const $name: u32 = $value;)*
            /// Every `SECCOMP_RET_*` seccomp.h defines (but the alias
            /// `SECCOMP_RET_KILL`), by its C name.
            pub const RETS: &[(&str, u32)] = &[$((stringify!($name), $name)),*];
        };
    }

    seccomp_rets! {
        /// `SECCOMP_RET_KILL_PROCESS`.
        SECCOMP_RET_KILL_PROCESS = 0x8000_0000,
        /// `SECCOMP_RET_KILL_THREAD` (= `SECCOMP_RET_KILL`).
        SECCOMP_RET_KILL_THREAD = 0x0000_0000,
        /// `SECCOMP_RET_TRAP`.
        SECCOMP_RET_TRAP = 0x0003_0000,
        /// `SECCOMP_RET_ERRNO`.
        SECCOMP_RET_ERRNO = 0x0005_0000,
        /// `SECCOMP_RET_USER_NOTIF`.
        SECCOMP_RET_USER_NOTIF = 0x7fc0_0000,
        /// `SECCOMP_RET_TRACE`.
        SECCOMP_RET_TRACE = 0x7ff0_0000,
        /// `SECCOMP_RET_LOG`.
        SECCOMP_RET_LOG = 0x7ffc_0000,
        /// `SECCOMP_RET_ALLOW`.
        SECCOMP_RET_ALLOW = 0x7fff_0000,
        /// `SECCOMP_RET_ACTION_FULL`: the action bits.
        SECCOMP_RET_ACTION_FULL = 0xffff_0000,
        /// `SECCOMP_RET_ACTION` (legacy: masks off bit 31).
        SECCOMP_RET_ACTION = 0x7fff_0000,
        /// `SECCOMP_RET_DATA`: the data bits.
        SECCOMP_RET_DATA = 0x0000_ffff,
    }

    // The layout has one home, the `#[repr(C)]` mirror of the struct.
    use super::seccomp_data::SeccompData;
    use std::mem::{offset_of, size_of};

    /// `sizeof(struct seccomp_data)`: 64.
    pub const SECCOMP_DATA_SIZE: u32 = size_of::<SeccompData>() as u32;
    /// `offsetof(struct seccomp_data, nr)`: 0.
    pub const OFFSET_NR: u32 = offset_of!(SeccompData, nr) as u32;
    /// `offsetof(struct seccomp_data, arch)`: 4.
    pub const OFFSET_ARCH: u32 = offset_of!(SeccompData, arch) as u32;
    /// `offsetof(struct seccomp_data, instruction_pointer)`: 8.
    pub const OFFSET_IP: u32 = offset_of!(SeccompData, instruction_pointer) as u32;
    /// `offsetof(struct seccomp_data, args)`: 16.
    pub const OFFSET_ARGS: u32 = offset_of!(SeccompData, args) as u32;
}

/// include/uapi/linux/elf-em.h (Linux 6.18): the ELF machine numbers the
/// `AUDIT_ARCH_*` values are built from.
pub mod elf_em {
    /// Defines each `EM_*` constant from one list.
    macro_rules! elf_machines {
        ($($name:ident = $value:literal, $what:literal;)*) => {
            $(
                #[doc = concat!("`", stringify!($name), "` (", $what, ").")]
                pub const $name: u32 = $value;
            )*
        };
    }

    elf_machines! {
        EM_SPARC = 2, "SPARC";
        EM_386 = 3, "Intel 80386";
        EM_68K = 4, "Motorola 68000";
        EM_MIPS = 8, "MIPS R3000";
        EM_PARISC = 15, "HP PA-RISC";
        EM_PPC = 20, "PowerPC";
        EM_PPC64 = 21, "PowerPC64";
        EM_S390 = 22, "IBM S/390";
        EM_ARM = 40, "ARM 32-bit";
        EM_SH = 42, "SuperH";
        EM_SPARCV9 = 43, "SPARC v9 64-bit";
        EM_H8_300 = 46, "Renesas H8/300";
        EM_IA_64 = 50, "HP/Intel IA-64";
        EM_X86_64 = 62, "AMD x86-64";
        EM_CRIS = 76, "Axis CRIS";
        EM_M32R = 88, "Renesas M32R";
        EM_OPENRISC = 92, "OpenRISC";
        EM_ARCOMPACT = 93, "ARCompact";
        EM_XTENSA = 94, "Tensilica Xtensa";
        EM_UNICORE = 110, "UniCore-32";
        EM_ALTERA_NIOS2 = 113, "Altera Nios II";
        EM_TI_C6000 = 140, "TI C6X DSPs";
        EM_HEXAGON = 164, "QUALCOMM Hexagon";
        EM_NDS32 = 167, "Andes NDS32";
        EM_AARCH64 = 183, "ARM 64-bit";
        EM_TILEPRO = 188, "Tilera TILEPro";
        EM_MICROBLAZE = 189, "Xilinx MicroBlaze";
        EM_TILEGX = 191, "Tilera TILE-Gx";
        EM_ARCV2 = 195, "ARCv2 cores";
        EM_RISCV = 243, "RISC-V";
        EM_CSKY = 252, "C-SKY";
        EM_LOONGARCH = 258, "LoongArch";
        EM_FRV = 0x5441, "Fujitsu FR-V";
        EM_ALPHA = 0x9026, "Alpha";
    }
}

/// include/uapi/linux/audit.h (Linux 6.18): the `AUDIT_ARCH_*` values a filter
/// reads in `seccomp_data.arch`, built as audit.h builds them:
/// `EM_* | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE` (plus
/// `__AUDIT_ARCH_CONVENTION_MIPS64_N32` for n32).
pub mod audit {
    use super::elf_em::*;

    /// `__AUDIT_ARCH_64BIT`.
    pub const AUDIT_ARCH_64BIT: u32 = 0x8000_0000;
    /// `__AUDIT_ARCH_LE`.
    pub const AUDIT_ARCH_LE: u32 = 0x4000_0000;
    /// `__AUDIT_ARCH_CONVENTION_MIPS64_N32`.
    pub const AUDIT_ARCH_CONVENTION_MIPS64_N32: u32 = 0x2000_0000;

    // Each row below names its word size and byte order; audit.h leaves a
    // flag out where it is clear (`AUDIT_ARCH_ARMEB` is `(EM_ARM)`), which
    // W32 and BE spell out as zero.
    const W64: u32 = AUDIT_ARCH_64BIT;
    const W32: u32 = 0;
    const LE: u32 = AUDIT_ARCH_LE;
    const BE: u32 = 0;
    const N32: u32 = AUDIT_ARCH_CONVENTION_MIPS64_N32;

    /// Defines each `AUDIT_ARCH_*` constant and [`ARCHES`], the table of
    /// them by C name, from one list.
    macro_rules! audit_arches {
        ($($name:ident = $value:expr,)*) => {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub const $name: u32 = $value;
            )*
            /// Every `AUDIT_ARCH_*` audit.h defines, by its C name (what the C
            /// reader resolves).
            pub const ARCHES: &[(&str, u32)] = &[$((stringify!($name), $name)),*];
        };
    }

    audit_arches! {
        AUDIT_ARCH_AARCH64 = EM_AARCH64 | W64 | LE,
        AUDIT_ARCH_ALPHA = EM_ALPHA | W64 | LE,
        AUDIT_ARCH_ARCOMPACT = EM_ARCOMPACT | W32 | LE,
        AUDIT_ARCH_ARCOMPACTBE = EM_ARCOMPACT | W32 | BE,
        AUDIT_ARCH_ARCV2 = EM_ARCV2 | W32 | LE,
        AUDIT_ARCH_ARCV2BE = EM_ARCV2 | W32 | BE,
        AUDIT_ARCH_ARM = EM_ARM | W32 | LE,
        AUDIT_ARCH_ARMEB = EM_ARM | W32 | BE,
        AUDIT_ARCH_C6X = EM_TI_C6000 | W32 | LE,
        AUDIT_ARCH_C6XBE = EM_TI_C6000 | W32 | BE,
        AUDIT_ARCH_CRIS = EM_CRIS | W32 | LE,
        AUDIT_ARCH_CSKY = EM_CSKY | W32 | LE,
        AUDIT_ARCH_FRV = EM_FRV | W32 | BE,
        AUDIT_ARCH_H8300 = EM_H8_300 | W32 | BE,
        AUDIT_ARCH_HEXAGON = EM_HEXAGON | W32 | BE,
        AUDIT_ARCH_I386 = EM_386 | W32 | LE,
        AUDIT_ARCH_IA64 = EM_IA_64 | W64 | LE,
        AUDIT_ARCH_M32R = EM_M32R | W32 | BE,
        AUDIT_ARCH_M68K = EM_68K | W32 | BE,
        AUDIT_ARCH_MICROBLAZE = EM_MICROBLAZE | W32 | BE,
        AUDIT_ARCH_MIPS = EM_MIPS | W32 | BE,
        AUDIT_ARCH_MIPSEL = EM_MIPS | W32 | LE,
        AUDIT_ARCH_MIPS64 = EM_MIPS | W64 | BE,
        AUDIT_ARCH_MIPS64N32 = EM_MIPS | W64 | BE | N32,
        AUDIT_ARCH_MIPSEL64 = EM_MIPS | W64 | LE,
        AUDIT_ARCH_MIPSEL64N32 = EM_MIPS | W64 | LE | N32,
        AUDIT_ARCH_NDS32 = EM_NDS32 | W32 | LE,
        AUDIT_ARCH_NDS32BE = EM_NDS32 | W32 | BE,
        AUDIT_ARCH_NIOS2 = EM_ALTERA_NIOS2 | W32 | LE,
        AUDIT_ARCH_OPENRISC = EM_OPENRISC | W32 | BE,
        AUDIT_ARCH_PARISC = EM_PARISC | W32 | BE,
        AUDIT_ARCH_PARISC64 = EM_PARISC | W64 | BE,
        AUDIT_ARCH_PPC = EM_PPC | W32 | BE,
        AUDIT_ARCH_PPC64 = EM_PPC64 | W64 | BE,
        AUDIT_ARCH_PPC64LE = EM_PPC64 | W64 | LE,
        AUDIT_ARCH_RISCV32 = EM_RISCV | W32 | LE,
        AUDIT_ARCH_RISCV64 = EM_RISCV | W64 | LE,
        AUDIT_ARCH_S390 = EM_S390 | W32 | BE,
        AUDIT_ARCH_S390X = EM_S390 | W64 | BE,
        AUDIT_ARCH_SH = EM_SH | W32 | BE,
        AUDIT_ARCH_SHEL = EM_SH | W32 | LE,
        AUDIT_ARCH_SH64 = EM_SH | W64 | BE,
        AUDIT_ARCH_SHEL64 = EM_SH | W64 | LE,
        AUDIT_ARCH_SPARC = EM_SPARC | W32 | BE,
        AUDIT_ARCH_SPARC64 = EM_SPARCV9 | W64 | BE,
        AUDIT_ARCH_TILEGX = EM_TILEGX | W64 | LE,
        AUDIT_ARCH_TILEGX32 = EM_TILEGX | W32 | LE,
        AUDIT_ARCH_TILEPRO = EM_TILEPRO | W32 | LE,
        AUDIT_ARCH_UNICORE = EM_UNICORE | W32 | LE,
        AUDIT_ARCH_X86_64 = EM_X86_64 | W64 | LE,
        AUDIT_ARCH_XTENSA = EM_XTENSA | W32 | BE,
        AUDIT_ARCH_LOONGARCH32 = EM_LOONGARCH | W32 | LE,
        AUDIT_ARCH_LOONGARCH64 = EM_LOONGARCH | W64 | LE,
    }

    /// `AUDIT_ARCH_PPC | __AUDIT_ARCH_LE`: the compat arch of a little-endian
    /// powerpc kernel (`SECCOMP_ARCH_COMPAT` in arch/powerpc/include/asm/seccomp.h,
    /// not in audit.h).
    pub const AUDIT_ARCH_PPCLE: u32 = EM_PPC | W32 | LE;
}

/// arch/x86/include/uapi/asm/unistd.h and the x86_64 syscall table: the
/// numbers seccomp treats specially on x86_64.
pub mod x86_64 {
    /// `__X32_SYSCALL_BIT`: set in `nr` by x32 callers (arch `AUDIT_ARCH_X86_64`).
    pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    /// `__NR_uretprobe` on x86_64 (arch/x86/entry/syscalls/syscall_64.tbl).
    pub const NR_URETPROBE: u32 = 335;
    /// `__NR_uprobe` on x86_64.
    pub const NR_UPROBE: u32 = 336;
}

#[cfg(test)]
mod tests {
    use super::seccomp::*;

    /// The layout derived from the mirror is the one seccomp.h declares.
    #[test]
    fn seccomp_data_layout_is_the_kernels() {
        assert_eq!((SECCOMP_DATA_SIZE, OFFSET_NR, OFFSET_ARCH, OFFSET_IP, OFFSET_ARGS), (64, 0, 4, 8, 16));
    }
}
