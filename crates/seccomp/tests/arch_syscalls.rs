#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Arch parsing (FORMATS.md §2) and the generated syscall tables.

use seccomp::arch::{cache_arches, Arch};
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
        (Arch::X86_64, "clone3", 435),
        (Arch::X86_64, "openat2", 437),
        (Arch::X86_64, "uretprobe", 335),
        (Arch::X86_64, "uprobe", 336),
        (Arch::X86_64, "mseal", 462),
        (Arch::X86_64, "file_setattr", 469),
        (Arch::I386, "getppid", 64),
        (Arch::I386, "socketcall", 102),
        (Arch::I386, "mseal", 462),
        (Arch::Aarch64, "getppid", 173),
        (Arch::Aarch64, "renameat", 38),
        (Arch::Aarch64, "getrlimit", 163),
        (Arch::Aarch64, "memfd_secret", 447),
        (Arch::Aarch64, "fstat", 80),
        (Arch::Riscv64, "riscv_hwprobe", 258),
        (Arch::Riscv64, "getppid", 173),
        (Arch::X32, "read", 0x4000_0000),
        (Arch::X32, "rt_sigaction", 0x4000_0200),
        (Arch::X32, "execve", 0x4000_0208),
        (Arch::X32, "getppid", 0x4000_006e),
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
    // ABI selection: x86_64 has no x32-only slots, x32 has no 64-only ones,
    // aarch64 has no 32-bit-only calls and no arch-private ones of others.
    assert_eq!(syscalls::name(Arch::X86_64, 512), None);
    assert_eq!(syscalls::number(Arch::X32, "rt_sigaction"), Some(0x4000_0200));
    assert_eq!(syscalls::name(Arch::X32, 0x4000_000d), None);
    assert_eq!(syscalls::number(Arch::Aarch64, "fcntl64"), None);
    assert_eq!(syscalls::number(Arch::Aarch64, "riscv_hwprobe"), None);
    assert_eq!(syscalls::number(Arch::Riscv32, "clock_gettime64"), Some(403));
    assert_eq!(syscalls::number(Arch::Riscv32, "getrlimit"), None);
    // 470 (listns) came after 6.18.
    assert_eq!(syscalls::name(Arch::X86_64, 470), None);
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
    }
}

#[test]
fn cache_pairs() {
    let x = cache_arches(Arch::X86_64).unwrap();
    assert_eq!(x.native.arch, Arch::X86_64);
    assert_eq!(x.native.nr, Some(470));
    assert_eq!(x.compat.unwrap().arch, Arch::I386);
    assert_eq!(x.compat.unwrap().nr, Some(470));
    let a = cache_arches(Arch::Aarch64).unwrap();
    assert_eq!((a.native.arch, a.compat.unwrap().arch), (Arch::Aarch64, Arch::Arm));
    assert_eq!(a.native.nr, Some(470));
    assert_eq!(cache_arches(Arch::Riscv64).unwrap().compat, None);
    let p = cache_arches(Arch::Ppc64le).unwrap();
    assert_eq!(p.compat.unwrap().arch.audit_arch(), 0x4000_0014);
    assert_eq!(cache_arches(Arch::S390x).unwrap().compat.unwrap().arch, Arch::S390);
    assert_eq!(cache_arches(Arch::Mips), None);
}
