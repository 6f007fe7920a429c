//! Named constants the C reader understands, with their values as the
//! Linux UAPI headers define them (Linux 6.18): include/uapi/linux/
//! {bpf_common.h, filter.h, seccomp.h, audit.h, elf-em.h} and
//! include/uapi/asm-generic/errno{-base,}.h.
//!
//! Values are `i64` because C spells some of them as negative `int`s
//! (`SKF_AD_OFF` is `-0x1000`).

use crate::uapi::audit::*;
use crate::uapi::seccomp::*;

/// `__AUDIT_ARCH_64BIT`.
const A64: i64 = AUDIT_ARCH_64BIT as i64;
/// `__AUDIT_ARCH_LE`.
const LE: i64 = AUDIT_ARCH_LE as i64;
/// `__AUDIT_ARCH_CONVENTION_MIPS64_N32`.
const N32: i64 = AUDIT_ARCH_CONVENTION_MIPS64_N32 as i64;

// ELF machine numbers (include/uapi/linux/elf-em.h) used by AUDIT_ARCH_*.
const EM_SPARC: i64 = 2;
const EM_68K: i64 = 4;
const EM_PARISC: i64 = 15;
const EM_SH: i64 = 42;
const EM_SPARCV9: i64 = 43;
const EM_H8_300: i64 = 46;
const EM_IA_64: i64 = 50;
const EM_CRIS: i64 = 76;
const EM_M32R: i64 = 88;
const EM_OPENRISC: i64 = 92;
const EM_ARCOMPACT: i64 = 93;
const EM_XTENSA: i64 = 94;
const EM_UNICORE: i64 = 110;
const EM_ALTERA_NIOS2: i64 = 113;
const EM_TI_C6000: i64 = 140;
const EM_HEXAGON: i64 = 164;
const EM_NDS32: i64 = 167;
const EM_TILEPRO: i64 = 188;
const EM_MICROBLAZE: i64 = 189;
const EM_TILEGX: i64 = 191;
const EM_ARCV2: i64 = 195;
const EM_CSKY: i64 = 252;
const EM_LOONGARCH: i64 = 258;
const EM_FRV: i64 = 0x5441;
const EM_ALPHA: i64 = 0x9026;

/// Every name the C reader resolves, with its value.
pub(crate) const SYMBOLS: &[(&str, i64)] = &[
    // include/uapi/linux/bpf_common.h
    ("BPF_LD", 0x00),
    ("BPF_LDX", 0x01),
    ("BPF_ST", 0x02),
    ("BPF_STX", 0x03),
    ("BPF_ALU", 0x04),
    ("BPF_JMP", 0x05),
    ("BPF_RET", 0x06),
    ("BPF_MISC", 0x07),
    ("BPF_W", 0x00),
    ("BPF_H", 0x08),
    ("BPF_B", 0x10),
    ("BPF_IMM", 0x00),
    ("BPF_ABS", 0x20),
    ("BPF_IND", 0x40),
    ("BPF_MEM", 0x60),
    ("BPF_LEN", 0x80),
    ("BPF_MSH", 0xa0),
    ("BPF_ADD", 0x00),
    ("BPF_SUB", 0x10),
    ("BPF_MUL", 0x20),
    ("BPF_DIV", 0x30),
    ("BPF_OR", 0x40),
    ("BPF_AND", 0x50),
    ("BPF_LSH", 0x60),
    ("BPF_RSH", 0x70),
    ("BPF_NEG", 0x80),
    ("BPF_MOD", 0x90),
    ("BPF_XOR", 0xa0),
    ("BPF_JA", 0x00),
    ("BPF_JEQ", 0x10),
    ("BPF_JGT", 0x20),
    ("BPF_JGE", 0x30),
    ("BPF_JSET", 0x40),
    ("BPF_K", 0x00),
    ("BPF_X", 0x08),
    ("BPF_MAXINSNS", 4096),
    // include/uapi/linux/filter.h
    ("BPF_A", 0x10),
    ("BPF_TAX", 0x00),
    ("BPF_TXA", 0x80),
    ("BPF_MEMWORDS", 16),
    ("BPF_MAJOR_VERSION", 1),
    ("BPF_MINOR_VERSION", 1),
    ("SKF_AD_OFF", -0x1000),
    ("SKF_AD_PROTOCOL", 0),
    ("SKF_AD_PKTTYPE", 4),
    ("SKF_AD_IFINDEX", 8),
    ("SKF_AD_NLATTR", 12),
    ("SKF_AD_NLATTR_NEST", 16),
    ("SKF_AD_MARK", 20),
    ("SKF_AD_QUEUE", 24),
    ("SKF_AD_HATYPE", 28),
    ("SKF_AD_RXHASH", 32),
    ("SKF_AD_CPU", 36),
    ("SKF_AD_ALU_XOR_X", 40),
    ("SKF_AD_VLAN_TAG", 44),
    ("SKF_AD_VLAN_TAG_PRESENT", 48),
    ("SKF_AD_PAY_OFFSET", 52),
    ("SKF_AD_RANDOM", 56),
    ("SKF_AD_VLAN_TPID", 60),
    ("SKF_AD_MAX", 64),
    ("SKF_NET_OFF", -0x10_0000),
    ("SKF_LL_OFF", -0x20_0000),
    ("BPF_NET_OFF", -0x10_0000),
    ("BPF_LL_OFF", -0x20_0000),
    // include/uapi/linux/seccomp.h (the rest, spelled as in Rust, in SECCOMP_SYMBOLS)
    ("SECCOMP_RET_KILL", SECCOMP_RET_KILL_THREAD as i64),
    // include/uapi/linux/audit.h (the arches crate::uapi::audit names are in AUDIT_SYMBOLS)
    ("__AUDIT_ARCH_64BIT", A64),
    ("__AUDIT_ARCH_LE", LE),
    ("__AUDIT_ARCH_CONVENTION_MIPS64_N32", N32),
    ("AUDIT_ARCH_ALPHA", EM_ALPHA | A64 | LE),
    ("AUDIT_ARCH_ARCOMPACT", EM_ARCOMPACT | LE),
    ("AUDIT_ARCH_ARCOMPACTBE", EM_ARCOMPACT),
    ("AUDIT_ARCH_ARCV2", EM_ARCV2 | LE),
    ("AUDIT_ARCH_ARCV2BE", EM_ARCV2),
    ("AUDIT_ARCH_C6X", EM_TI_C6000 | LE),
    ("AUDIT_ARCH_C6XBE", EM_TI_C6000),
    ("AUDIT_ARCH_CRIS", EM_CRIS | LE),
    ("AUDIT_ARCH_CSKY", EM_CSKY | LE),
    ("AUDIT_ARCH_FRV", EM_FRV),
    ("AUDIT_ARCH_H8300", EM_H8_300),
    ("AUDIT_ARCH_HEXAGON", EM_HEXAGON),
    ("AUDIT_ARCH_IA64", EM_IA_64 | A64 | LE),
    ("AUDIT_ARCH_LOONGARCH32", EM_LOONGARCH | LE),
    ("AUDIT_ARCH_M32R", EM_M32R),
    ("AUDIT_ARCH_M68K", EM_68K),
    ("AUDIT_ARCH_MICROBLAZE", EM_MICROBLAZE),
    ("AUDIT_ARCH_NDS32", EM_NDS32 | LE),
    ("AUDIT_ARCH_NDS32BE", EM_NDS32),
    ("AUDIT_ARCH_NIOS2", EM_ALTERA_NIOS2 | LE),
    ("AUDIT_ARCH_OPENRISC", EM_OPENRISC),
    ("AUDIT_ARCH_PARISC", EM_PARISC),
    ("AUDIT_ARCH_PARISC64", EM_PARISC | A64),
    ("AUDIT_ARCH_SH", EM_SH),
    ("AUDIT_ARCH_SHEL", EM_SH | LE),
    ("AUDIT_ARCH_SH64", EM_SH | A64),
    ("AUDIT_ARCH_SHEL64", EM_SH | A64 | LE),
    ("AUDIT_ARCH_SPARC", EM_SPARC),
    ("AUDIT_ARCH_SPARC64", EM_SPARCV9 | A64),
    ("AUDIT_ARCH_TILEGX", EM_TILEGX | A64 | LE),
    ("AUDIT_ARCH_TILEGX32", EM_TILEGX | LE),
    ("AUDIT_ARCH_TILEPRO", EM_TILEPRO | LE),
    ("AUDIT_ARCH_UNICORE", EM_UNICORE | LE),
    ("AUDIT_ARCH_XTENSA", EM_XTENSA),
    // include/uapi/asm-generic/errno-base.h and errno.h (the values of
    // x86, arm, arm64, riscv, s390, powerpc, loongarch; alpha, mips,
    // parisc and sparc number some differently).
    ("EPERM", 1),
    ("ENOENT", 2),
    ("ESRCH", 3),
    ("EINTR", 4),
    ("EIO", 5),
    ("ENXIO", 6),
    ("E2BIG", 7),
    ("ENOEXEC", 8),
    ("EBADF", 9),
    ("ECHILD", 10),
    ("EAGAIN", 11),
    ("ENOMEM", 12),
    ("EACCES", 13),
    ("EFAULT", 14),
    ("ENOTBLK", 15),
    ("EBUSY", 16),
    ("EEXIST", 17),
    ("EXDEV", 18),
    ("ENODEV", 19),
    ("ENOTDIR", 20),
    ("EISDIR", 21),
    ("EINVAL", 22),
    ("ENFILE", 23),
    ("EMFILE", 24),
    ("ENOTTY", 25),
    ("ETXTBSY", 26),
    ("EFBIG", 27),
    ("ENOSPC", 28),
    ("ESPIPE", 29),
    ("EROFS", 30),
    ("EMLINK", 31),
    ("EPIPE", 32),
    ("EDOM", 33),
    ("ERANGE", 34),
    ("ENOSYS", 38),
    ("EOPNOTSUPP", 95),
];

/// `(name, value)` pairs for constants whose Rust name is their C name.
macro_rules! same_name {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), $name as i64)),*]
    };
}

/// include/uapi/linux/seccomp.h, from [`crate::uapi::seccomp`].
#[rustfmt::skip]
const SECCOMP_SYMBOLS: &[(&str, i64)] = same_name![
    SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP, SECCOMP_RET_ERRNO,
    SECCOMP_RET_USER_NOTIF, SECCOMP_RET_TRACE, SECCOMP_RET_LOG, SECCOMP_RET_ALLOW,
    SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ACTION, SECCOMP_RET_DATA,
];

/// include/uapi/linux/audit.h: the arches with a home in [`crate::uapi::audit`].
#[rustfmt::skip]
const AUDIT_SYMBOLS: &[(&str, i64)] = same_name![
    AUDIT_ARCH_AARCH64, AUDIT_ARCH_ARM, AUDIT_ARCH_ARMEB, AUDIT_ARCH_I386, AUDIT_ARCH_LOONGARCH64,
    AUDIT_ARCH_MIPS, AUDIT_ARCH_MIPSEL, AUDIT_ARCH_MIPS64, AUDIT_ARCH_MIPS64N32, AUDIT_ARCH_MIPSEL64,
    AUDIT_ARCH_MIPSEL64N32, AUDIT_ARCH_PPC, AUDIT_ARCH_PPC64, AUDIT_ARCH_PPC64LE, AUDIT_ARCH_RISCV32,
    AUDIT_ARCH_RISCV64, AUDIT_ARCH_S390, AUDIT_ARCH_S390X, AUDIT_ARCH_X86_64, AUDIT_ARCH_M68K,
    AUDIT_ARCH_PARISC, AUDIT_ARCH_PARISC64, AUDIT_ARCH_SH, AUDIT_ARCH_SHEL,
];

/// The value of a named constant.
pub(crate) fn lookup(name: &str) -> Option<i64> {
    SYMBOLS.iter().chain(SECCOMP_SYMBOLS).chain(AUDIT_SYMBOLS).find(|&&(n, _)| n == name).map(|&(_, v)| v)
}

/// `offsetof(struct seccomp_data, FIELD)` for the scalar fields; `args` is
/// handled by the caller (`16 + 8 * i`).
pub(crate) fn seccomp_data_offset(field: &str) -> Option<i64> {
    match field {
        "nr" => Some(OFFSET_NR.into()),
        "arch" => Some(OFFSET_ARCH.into()),
        "instruction_pointer" => Some(OFFSET_IP.into()),
        "args" => Some(OFFSET_ARGS.into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C names of the arches with a numeric home in `uapi::audit`
    /// resolve to that home's value.
    #[test]
    fn audit_arch_symbols_agree_with_uapi() {
        let uapi = [
            ("AUDIT_ARCH_X86_64", AUDIT_ARCH_X86_64),
            ("AUDIT_ARCH_I386", AUDIT_ARCH_I386),
            ("AUDIT_ARCH_AARCH64", AUDIT_ARCH_AARCH64),
            ("AUDIT_ARCH_ARM", AUDIT_ARCH_ARM),
            ("AUDIT_ARCH_ARMEB", AUDIT_ARCH_ARMEB),
            ("AUDIT_ARCH_RISCV64", AUDIT_ARCH_RISCV64),
            ("AUDIT_ARCH_RISCV32", AUDIT_ARCH_RISCV32),
            ("AUDIT_ARCH_S390X", AUDIT_ARCH_S390X),
            ("AUDIT_ARCH_S390", AUDIT_ARCH_S390),
            ("AUDIT_ARCH_PPC64LE", AUDIT_ARCH_PPC64LE),
            ("AUDIT_ARCH_PPC64", AUDIT_ARCH_PPC64),
            ("AUDIT_ARCH_PPC", AUDIT_ARCH_PPC),
            ("AUDIT_ARCH_MIPS", AUDIT_ARCH_MIPS),
            ("AUDIT_ARCH_MIPSEL", AUDIT_ARCH_MIPSEL),
            ("AUDIT_ARCH_MIPS64", AUDIT_ARCH_MIPS64),
            ("AUDIT_ARCH_MIPSEL64", AUDIT_ARCH_MIPSEL64),
            ("AUDIT_ARCH_MIPS64N32", AUDIT_ARCH_MIPS64N32),
            ("AUDIT_ARCH_MIPSEL64N32", AUDIT_ARCH_MIPSEL64N32),
            ("AUDIT_ARCH_LOONGARCH64", AUDIT_ARCH_LOONGARCH64),
            ("AUDIT_ARCH_M68K", AUDIT_ARCH_M68K),
            ("AUDIT_ARCH_PARISC", AUDIT_ARCH_PARISC),
            ("AUDIT_ARCH_PARISC64", AUDIT_ARCH_PARISC64),
            ("AUDIT_ARCH_SH", AUDIT_ARCH_SH),
            ("AUDIT_ARCH_SHEL", AUDIT_ARCH_SHEL),
        ];
        for (name, value) in uapi {
            assert_eq!(lookup(name), Some(i64::from(value)), "{name}");
        }
    }
}
