//! How an arch passes system call arguments, as libseccomp and the kernel
//! see it: which ABIs libseccomp compares both 32-bit words of an
//! argument on, and where each word sits in `struct seccomp_data`. Below
//! both directions of `policy` (reading a filter, compiling a profile).

use seccomp::Arch;

/// Does libseccomp test both words of an argument on this ABI (its
/// `ARCH_SIZE_64` arches; x32 and mips n32 are `ARCH_SIZE_32`)?
pub fn libseccomp_args_64(arch: Arch) -> bool {
    matches!(
        arch,
        Arch::X86_64
            | Arch::Aarch64
            | Arch::Riscv64
            | Arch::S390x
            | Arch::Ppc64le
            | Arch::Ppc64
            | Arch::Mips64
            | Arch::Mipsel64
            | Arch::Loongarch64
            | Arch::Parisc64
            | Arch::Other(_)
    )
}

/// The offsets of the high and low words of `args[index]` in `struct
/// seccomp_data` as the kernel of `arch` stores them (big-endian ABIs
/// high word first: `populate_seccomp_data()`).
pub fn arg_offsets(arch: Arch, index: u8) -> (u32, u32) {
    let base = seccomp::data::OFFSET_ARGS + 8 * u32::from(index);
    if arch.audit_arch() & seccomp::arch::AUDIT_ARCH_LE != 0 {
        (base + 4, base)
    } else {
        (base, base + 4)
    }
}
