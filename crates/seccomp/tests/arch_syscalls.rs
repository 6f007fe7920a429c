#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Arch parsing (FORMATS.md §2) and the generated syscall tables.

use seccomp::arch::Arch;
use seccomp::cache::cache_arches;
use seccomp::syscalls;

#[test]
fn parses_the_formats_md_spellings() {
    for (text, arch, value) in [
        ("x86_64", Arch::X86_64, 0xc000_003e),
        ("i386", Arch::I386, 0x4000_0003),
        ("x32", Arch::X32, 0xc000_003e),
        ("aarch64", Arch::Aarch64, 0xc000_00b7),
        ("arm", Arch::Arm, 0x4000_0028),
        ("riscv64", Arch::Riscv64, 0xc000_00f3),
        ("s390x", Arch::S390x, 0x8000_0016),
        ("ppc64le", Arch::Ppc64le, 0xc000_0015),
        ("0xC000003E", Arch::X86_64, 0xc000_003e),
        ("3221225534", Arch::X86_64, 0xc000_003e),
        ("AUDIT_ARCH_AARCH64", Arch::Aarch64, 0xc000_00b7),
        ("arm64", Arch::Aarch64, 0xc000_00b7),
        ("amd64", Arch::X86_64, 0xc000_003e),
        ("mips64n32", Arch::Mips64n32, 0xa000_0008),
        ("mipsel64n32", Arch::Mipsel64n32, 0xe000_0008),
        ("loongarch64", Arch::Loongarch64, 0xc000_0102),
        ("0x12345678", Arch::Other(0x1234_5678), 0x1234_5678),
    ] {
        let a: Arch = text.parse().unwrap();
        assert_eq!(a, arch, "{text}");
        assert_eq!(a.audit_arch(), value, "{text}");
    }
    assert_eq!(Arch::X32.nr_bit(), 0x4000_0000);
    for bad in ["", "x86_65", "0x1_0000_0000"] {
        assert!(bad.parse::<Arch>().is_err(), "{bad}");
    }
}

#[test]
fn syscall_spot_checks() {
    let cases: &[(Arch, &str, u32)] = &[
        (Arch::X86_64, "read", 0),
        (Arch::X86_64, "getppid", 110),
        (Arch::X86_64, "security", 185),
        (Arch::X86_64, "uretprobe", 335),
        (Arch::X86_64, "uprobe", 336),
        (Arch::X86_64, "clone3", 435),
        (Arch::X86_64, "openat2", 437),
        (Arch::X86_64, "mseal", 462),
        (Arch::X86_64, "setxattrat", 463),
        (Arch::X86_64, "open_tree_attr", 467),
        (Arch::X86_64, "file_getattr", 468),
        (Arch::X86_64, "file_setattr", 469),
        (Arch::I386, "getppid", 64),
        (Arch::I386, "socketcall", 102),
        (Arch::I386, "mseal", 462),
        (Arch::I386, "file_setattr", 469),
        (Arch::X32, "read", 0x4000_0000),
        (Arch::X32, "getppid", 0x4000_006e),
        (Arch::X32, "rt_sigaction", 0x4000_0200),
        (Arch::X32, "execve", 0x4000_0000 | 520),
        (Arch::X32, "pwritev2", 0x4000_0000 | 547),
        (Arch::X32, "file_setattr", 0x4000_0000 | 469),
        (Arch::Aarch64, "getppid", 173),
        (Arch::Aarch64, "renameat", 38),
        (Arch::Aarch64, "fstat", 80),
        (Arch::Aarch64, "newfstatat", 79),
        (Arch::Aarch64, "getrlimit", 163),
        (Arch::Aarch64, "memfd_secret", 447),
        (Arch::Aarch64, "file_setattr", 469),
        (Arch::Arm, "getppid", 64),
        (Arch::Arm, "arm_fadvise64_64", 270),
        (Arch::Arm, "clone3", 435),
        (Arch::Arm, "file_setattr", 469),
        (Arch::Arm, "cacheflush", 0xf_0002),
        (Arch::Arm, "set_tls", 0xf_0005),
        (Arch::Armeb, "getppid", 64),
        (Arch::Riscv64, "getppid", 173),
        (Arch::Riscv64, "riscv_hwprobe", 258),
        (Arch::Riscv64, "riscv_flush_icache", 259),
        (Arch::Riscv64, "getrlimit", 163),
        (Arch::Riscv32, "clock_gettime64", 403),
        (Arch::S390x, "getppid", 64),
        (Arch::S390x, "exit", 1),
        (Arch::S390x, "select", 142),
        (Arch::S390x, "getuid", 199),
        (Arch::S390x, "s390_runtime_instr", 342),
        (Arch::S390x, "file_setattr", 469),
        (Arch::S390, "_newselect", 142),
        (Arch::S390, "getuid32", 199),
        (Arch::Ppc64le, "getppid", 64),
        (Arch::Ppc64le, "restart_syscall", 0),
        (Arch::Ppc64le, "clone3", 435),
        (Arch::Ppc64le, "file_setattr", 469),
        (Arch::Ppc64, "getppid", 64),
        (Arch::Ppc, "getppid", 64),
        (Arch::Ppcle, "getppid", 64),
        (Arch::Mips, "getppid", 4064),
        (Arch::Mipsel, "getppid", 4064),
        (Arch::Mips64, "read", 5000),
        (Arch::Mips64, "getppid", 5108),
        (Arch::Mips64n32, "read", 6000),
        (Arch::Loongarch64, "getppid", 173),
        (Arch::Loongarch64, "fstat", 80),
    ];
    let mut failures = Vec::new();
    for &(arch, name, nr) in cases {
        if syscalls::number(arch, name) != Some(nr) || syscalls::name(arch, nr) != Some(name) {
            failures.push(format!(
                "{arch} {name} {nr}: got {:?} / {:?}",
                syscalls::number(arch, name),
                syscalls::name(arch, nr)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn abi_selection() {
    // x86_64 has no x32-only slots; x32 has no 64-only ones.
    assert_eq!(syscalls::name(Arch::X86_64, 512), None);
    assert_eq!(syscalls::name(Arch::X32, 0x4000_000d), None);
    assert_eq!(syscalls::name(Arch::X32, 13), None);
    // aarch64: no 32-bit-only calls and no other arch's private ones.
    assert_eq!(syscalls::number(Arch::Aarch64, "fcntl64"), None);
    assert_eq!(syscalls::number(Arch::Aarch64, "fstat64"), None);
    assert_eq!(syscalls::number(Arch::Aarch64, "riscv_hwprobe"), None);
    assert_eq!(syscalls::number(Arch::Aarch64, "cacheflush"), None);
    // riscv64 has no renameat; riscv32 no getrlimit and no time32 calls.
    assert_eq!(syscalls::number(Arch::Riscv64, "renameat"), None);
    assert_eq!(syscalls::number(Arch::Riscv32, "getrlimit"), None);
    assert_eq!(syscalls::number(Arch::Riscv32, "clock_gettime"), None);
    // loongarch64: only common and 64.
    assert_eq!(syscalls::number(Arch::Loongarch64, "renameat"), None);
    assert_eq!(syscalls::number(Arch::Loongarch64, "getrlimit"), None);
    // arm EABI: no OABI-only calls.
    assert_eq!(syscalls::number(Arch::Arm, "socketcall"), None);
    assert_eq!(syscalls::number(Arch::Arm, "time"), None);
    assert_eq!(syscalls::name(Arch::Arm, 13), None);
    // s390x: no 31-bit-only calls; s390: no 64-bit-only ones.
    assert_eq!(syscalls::number(Arch::S390x, "_newselect"), None);
    assert_eq!(syscalls::number(Arch::S390x, "getuid32"), None);
    assert_eq!(syscalls::number(Arch::S390, "select"), None);
    // powerpc: no SPU-only rows, no 32-bit-only calls on ppc64.
    assert_eq!(syscalls::number(Arch::Ppc64le, "mmap2"), None);
    assert_eq!(syscalls::number(Arch::Ppc, "mmap2"), Some(192));
    // 470 (listns) came after 6.18.
    for t in syscalls::tables() {
        assert_eq!(t.number("listns"), None, "{}", t.arch);
    }
    assert_eq!(syscalls::name(Arch::X86_64, 470), None);
}

#[test]
fn every_named_arch_has_its_table() {
    for a in Arch::ALL {
        let t = syscalls::table(a).unwrap_or_else(|| panic!("{a}"));
        assert_eq!(Some(t.arch), a.name());
        assert_eq!(t.name(t.number("getppid").unwrap()), Some("getppid"), "{a}");
    }
    assert!(syscalls::table(Arch::Other(0x1234)).is_none());
    assert_eq!(syscalls::tables().len(), Arch::ALL.len());
}

#[test]
fn table_sizes_are_the_kernels() {
    for (arch, nr) in [
        (Arch::X86_64, 470),
        (Arch::I386, 470),
        (Arch::X32, 548),
        (Arch::Aarch64, 470),
        (Arch::Arm, 472),
        (Arch::Riscv64, 470),
        (Arch::Riscv32, 470),
        (Arch::S390x, 470),
        (Arch::S390, 470),
        (Arch::Ppc64le, 470),
        (Arch::Ppc, 470),
        (Arch::Mips, 4470),
        (Arch::Mips64, 5470),
        (Arch::Mips64n32, 6470),
        (Arch::Loongarch64, 470),
    ] {
        assert_eq!(syscalls::table(arch).unwrap().nr_syscalls, nr, "{arch}");
    }
}

#[test]
fn tables_are_sorted_and_consistent() {
    for t in syscalls::tables() {
        assert!(t.by_nr.windows(2).all(|w| w[0].0 < w[1].0), "{}", t.arch);
        assert!(t.by_name.windows(2).all(|w| w[0].0 < w[1].0), "{}", t.arch);
        assert_eq!(t.by_nr.len(), t.by_name.len(), "{}", t.arch);
        for &(nr, name) in t.by_nr {
            assert_eq!(t.number(name), Some(nr), "{} {name}", t.arch);
        }
        assert_eq!(t.iter().count(), t.by_nr.len(), "{}", t.arch);
    }
}

#[test]
fn cache_pairs() {
    let x = cache_arches(Arch::X86_64).unwrap();
    assert_eq!(x.native.arch, Arch::X86_64);
    assert_eq!(x.native.nr, Some(470));
    assert_eq!(x.compat.unwrap().arch, Arch::I386);
    assert_eq!(x.compat.unwrap().nr, Some(470));
    assert_eq!(cache_arches(Arch::X32), Some(x));
    let a = cache_arches(Arch::Aarch64).unwrap();
    assert_eq!((a.native.arch, a.compat.unwrap().arch), (Arch::Aarch64, Arch::Arm));
    assert_eq!(a.native.nr, Some(470));
    // __NR_compat32_syscalls is not padded like a 32-bit ARM kernel's NR_syscalls.
    assert_eq!(a.compat.unwrap().nr, Some(470));
    let arm = cache_arches(Arch::Arm).unwrap();
    assert_eq!((arm.native.nr, arm.compat), (Some(472), None));
    assert_eq!(cache_arches(Arch::Riscv64).unwrap().compat, None);
    let p = cache_arches(Arch::Ppc64le).unwrap();
    assert_eq!(p.compat.unwrap().arch.audit_arch(), 0x4000_0014);
    assert_eq!((p.native.nr, p.compat.unwrap().nr), (Some(470), Some(470)));
    let s = cache_arches(Arch::S390x).unwrap();
    assert_eq!(s.compat.unwrap().arch, Arch::S390);
    assert_eq!((s.native.nr, s.compat.unwrap().nr), (Some(470), Some(470)));
    let l = cache_arches(Arch::Loongarch64).unwrap();
    assert_eq!((l.native.arch, l.native.nr, l.compat), (Arch::Loongarch64, Some(470), None));
    assert_eq!(cache_arches(Arch::Mips), None);
    assert_eq!(cache_arches(Arch::Mips64), None);
    assert_eq!(cache_arches(Arch::Other(0x1234)), None);
}

/// Every arch against the `SECCOMP_ARCH_NATIVE` / `SECCOMP_ARCH_COMPAT`
/// pairs of each kernel's asm/seccomp.h (Linux 6.18), as listed on
/// `cache_arches`: which kernels have a cache, with which compat arch, and
/// whose compat bitmap is sized by the native `NR_syscalls`.
#[test]
fn every_kernel_arch_has_its_cache_pair() {
    use Arch::*;
    for kernel in Arch::ALL {
        let want: Option<(Arch, Option<Arch>)> = match kernel {
            X86_64 | X32 => Some((X86_64, Some(I386))),
            Aarch64 => Some((Aarch64, Some(Arm))),
            S390x => Some((S390x, Some(S390))),
            Ppc64le => Some((Ppc64le, Some(Ppcle))),
            Ppc64 => Some((Ppc64, Some(Ppc))),
            Parisc64 => Some((Parisc64, Some(Parisc))),
            I386 | Arm | Riscv64 | Riscv32 | Ppc | Loongarch64 | M68k | Parisc | Sh | Sheb => Some((kernel, None)),
            // Mips (sparse numbers), big-endian arm, the 32-bit compat ABIs, any other.
            _ => None,
        };
        let got = cache_arches(kernel);
        assert_eq!(got.map(|c| (c.native.arch, c.compat.map(|a| a.arch))), want, "{kernel:?}");
        let Some(got) = got else { continue };
        let nr = |arch: Arch| syscalls::table(arch).map(|t| t.nr_syscalls);
        assert_eq!(got.native.nr, nr(got.native.arch), "{kernel:?}");
        if matches!(kernel, S390x | Ppc64le | Ppc64 | Parisc64) {
            assert_eq!(got.compat.unwrap().nr, got.native.nr, "{kernel:?}: compat NR is the native NR_syscalls");
        }
    }
}
