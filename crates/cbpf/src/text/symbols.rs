//! Named constants the C reader understands, with their values as the
//! Linux UAPI headers define them (Linux 6.18): include/uapi/linux/
//! {bpf_common.h, filter.h, seccomp.h, audit.h, elf-em.h} and
//! include/uapi/asm-generic/errno{-base,}.h.
//!
//! Values are `i64` because C spells some of them as negative `int`s
//! (`SKF_AD_OFF` is `-0x1000`).

use crate::uapi::audit::*;
use crate::uapi::seccomp::*;

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
    // include/uapi/linux/seccomp.h (the rest are crate::uapi::seccomp::RETS)
    ("SECCOMP_RET_KILL", SECCOMP_RET_KILL_THREAD as i64),
    // include/uapi/linux/audit.h (the arches themselves are crate::uapi::audit::ARCHES)
    ("__AUDIT_ARCH_64BIT", AUDIT_ARCH_64BIT as i64),
    ("__AUDIT_ARCH_LE", AUDIT_ARCH_LE as i64),
    ("__AUDIT_ARCH_CONVENTION_MIPS64_N32", AUDIT_ARCH_CONVENTION_MIPS64_N32 as i64),
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

/// The value of a named constant.
pub(crate) fn lookup(name: &str) -> Option<i64> {
    let uapi = RETS.iter().chain(ARCHES).map(|&(n, v)| (n, i64::from(v)));
    SYMBOLS.iter().copied().chain(uapi).find(|&(n, _)| n == name).map(|(_, v)| v)
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

    /// Every arch of audit.h and return value of seccomp.h resolves to its value, and a few of them to
    /// the numbers audit.h's definitions come to (`EM_X86_64` is 62,
    /// `EM_MIPS` 8, `EM_ALPHA` 0x9026, ...).
    #[test]
    fn uapi_symbols_resolve() {
        assert!(ARCHES.len() >= 53, "{} arches", ARCHES.len());
        for &(name, value) in ARCHES.iter().chain(RETS) {
            assert_eq!(lookup(name), Some(i64::from(value)), "{name}");
        }
        let facts = [
            ("AUDIT_ARCH_X86_64", 0xc000_003e),
            ("AUDIT_ARCH_I386", 0x4000_0003),
            ("AUDIT_ARCH_ARMEB", 0x0000_0028),
            ("AUDIT_ARCH_MIPS64N32", 0xa000_0008),
            ("AUDIT_ARCH_MIPSEL64N32", 0xe000_0008),
            ("AUDIT_ARCH_SPARC64", 0x8000_002b),
            ("AUDIT_ARCH_ALPHA", 0xc000_9026),
            ("AUDIT_ARCH_FRV", 0x0000_5441),
            ("__AUDIT_ARCH_CONVENTION_MIPS64_N32", 0x2000_0000),
            ("SECCOMP_RET_KILL", 0),
            ("SECCOMP_RET_USER_NOTIF", 0x7fc0_0000),
        ];
        for (name, value) in facts {
            assert_eq!(lookup(name), Some(value), "{name}");
        }
        assert_eq!(AUDIT_ARCH_PPCLE, 0x4000_0014);
    }
}
