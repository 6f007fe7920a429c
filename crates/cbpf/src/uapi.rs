//! The seccomp constants of the kernel's user API, in one place.
//!
//! Every crate that names a `SECCOMP_RET_*` action, an `AUDIT_ARCH_*` value or
//! a `struct seccomp_data` offset imports it from here (`seccomp::action` and
//! `seccomp::arch` re-export these). They live in `cbpf` because it is the
//! crate every other one depends on, the kernel crate included: it needs them
//! without the seccomp model.

/// include/uapi/linux/seccomp.h (Linux 6.18): filter return values and the
/// `struct seccomp_data` layout.
pub mod seccomp {
    /// `SECCOMP_RET_KILL_PROCESS`.
    pub const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
    /// `SECCOMP_RET_KILL_THREAD` (= `SECCOMP_RET_KILL`).
    pub const SECCOMP_RET_KILL_THREAD: u32 = 0x0000_0000;
    /// `SECCOMP_RET_TRAP`.
    pub const SECCOMP_RET_TRAP: u32 = 0x0003_0000;
    /// `SECCOMP_RET_ERRNO`.
    pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    /// `SECCOMP_RET_USER_NOTIF`.
    pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
    /// `SECCOMP_RET_TRACE`.
    pub const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
    /// `SECCOMP_RET_LOG`.
    pub const SECCOMP_RET_LOG: u32 = 0x7ffc_0000;
    /// `SECCOMP_RET_ALLOW`.
    pub const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    /// `SECCOMP_RET_ACTION_FULL`: the action bits.
    pub const SECCOMP_RET_ACTION_FULL: u32 = 0xffff_0000;
    /// `SECCOMP_RET_ACTION` (legacy: masks off bit 31).
    pub const SECCOMP_RET_ACTION: u32 = 0x7fff_0000;
    /// `SECCOMP_RET_DATA`: the data bits.
    pub const SECCOMP_RET_DATA: u32 = 0x0000_ffff;

    /// `sizeof(struct seccomp_data)`.
    pub const SECCOMP_DATA_SIZE: u32 = 64;
    /// `offsetof(struct seccomp_data, nr)`.
    pub const OFFSET_NR: u32 = 0;
    /// `offsetof(struct seccomp_data, arch)`.
    pub const OFFSET_ARCH: u32 = 4;
    /// `offsetof(struct seccomp_data, instruction_pointer)`.
    pub const OFFSET_IP: u32 = 8;
    /// `offsetof(struct seccomp_data, args)`.
    pub const OFFSET_ARGS: u32 = 16;
}

/// include/uapi/linux/audit.h (Linux 6.18): the `AUDIT_ARCH_*` values a filter
/// reads in `seccomp_data.arch`.
///
/// An `AUDIT_ARCH` is `EM_* | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE` (plus
/// `__AUDIT_ARCH_CONVENTION_MIPS64_N32` for n32).
pub mod audit {
    /// `__AUDIT_ARCH_64BIT`.
    pub const AUDIT_ARCH_64BIT: u32 = 0x8000_0000;
    /// `__AUDIT_ARCH_LE`.
    pub const AUDIT_ARCH_LE: u32 = 0x4000_0000;
    /// `__AUDIT_ARCH_CONVENTION_MIPS64_N32`.
    pub const AUDIT_ARCH_CONVENTION_MIPS64_N32: u32 = 0x2000_0000;

    /// `AUDIT_ARCH_X86_64`.
    pub const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    /// `AUDIT_ARCH_I386`.
    pub const AUDIT_ARCH_I386: u32 = 0x4000_0003;
    /// `AUDIT_ARCH_AARCH64`.
    pub const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;
    /// `AUDIT_ARCH_ARM`.
    pub const AUDIT_ARCH_ARM: u32 = 0x4000_0028;
    /// `AUDIT_ARCH_ARMEB`.
    pub const AUDIT_ARCH_ARMEB: u32 = 0x0000_0028;
    /// `AUDIT_ARCH_RISCV64`.
    pub const AUDIT_ARCH_RISCV64: u32 = 0xc000_00f3;
    /// `AUDIT_ARCH_RISCV32`.
    pub const AUDIT_ARCH_RISCV32: u32 = 0x4000_00f3;
    /// `AUDIT_ARCH_S390X`.
    pub const AUDIT_ARCH_S390X: u32 = 0x8000_0016;
    /// `AUDIT_ARCH_S390`.
    pub const AUDIT_ARCH_S390: u32 = 0x0000_0016;
    /// `AUDIT_ARCH_PPC64LE`.
    pub const AUDIT_ARCH_PPC64LE: u32 = 0xc000_0015;
    /// `AUDIT_ARCH_PPC64`.
    pub const AUDIT_ARCH_PPC64: u32 = 0x8000_0015;
    /// `AUDIT_ARCH_PPC`.
    pub const AUDIT_ARCH_PPC: u32 = 0x0000_0014;
    /// `AUDIT_ARCH_PPC | __AUDIT_ARCH_LE`: the compat arch of a little-endian
    /// powerpc kernel (`SECCOMP_ARCH_COMPAT` in arch/powerpc/include/asm/seccomp.h).
    pub const AUDIT_ARCH_PPCLE: u32 = 0x4000_0014;
    /// `AUDIT_ARCH_MIPS`.
    pub const AUDIT_ARCH_MIPS: u32 = 0x0000_0008;
    /// `AUDIT_ARCH_MIPSEL`.
    pub const AUDIT_ARCH_MIPSEL: u32 = 0x4000_0008;
    /// `AUDIT_ARCH_MIPS64`.
    pub const AUDIT_ARCH_MIPS64: u32 = 0x8000_0008;
    /// `AUDIT_ARCH_MIPSEL64`.
    pub const AUDIT_ARCH_MIPSEL64: u32 = 0xc000_0008;
    /// `AUDIT_ARCH_MIPS64N32`.
    pub const AUDIT_ARCH_MIPS64N32: u32 = 0xa000_0008;
    /// `AUDIT_ARCH_MIPSEL64N32`.
    pub const AUDIT_ARCH_MIPSEL64N32: u32 = 0xe000_0008;
    /// `AUDIT_ARCH_LOONGARCH64`.
    pub const AUDIT_ARCH_LOONGARCH64: u32 = 0xc000_0102;
    /// `AUDIT_ARCH_M68K`.
    pub const AUDIT_ARCH_M68K: u32 = 0x0000_0004;
    /// `AUDIT_ARCH_PARISC`.
    pub const AUDIT_ARCH_PARISC: u32 = 0x0000_000f;
    /// `AUDIT_ARCH_PARISC64`.
    pub const AUDIT_ARCH_PARISC64: u32 = 0x8000_000f;
    /// `AUDIT_ARCH_SH` (big-endian SuperH; libseccomp's `sheb`).
    pub const AUDIT_ARCH_SH: u32 = 0x0000_002a;
    /// `AUDIT_ARCH_SHEL` (little-endian SuperH; libseccomp's `sh`).
    pub const AUDIT_ARCH_SHEL: u32 = 0x4000_002a;
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
