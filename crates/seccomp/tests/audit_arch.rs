#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Our `AUDIT_ARCH_*` values against Linux 6.18's include/uapi/linux/audit.h
//! (its `#define`s evaluated into testdata/uapi/audit_arch.txt, with
//! provenance there), and every arch libseccomp 2.6 knows has a name, a
//! value and a syscall table here.

use std::collections::BTreeMap;

use seccomp::arch::{Arch, AUDIT_ARCH_LE, AUDIT_ARCH_PPC};

fn header() -> BTreeMap<String, u32> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/uapi/audit_arch.txt");
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next().unwrap().to_string();
            let value = u32::from_str_radix(w.next().unwrap().trim_start_matches("0x"), 16).unwrap();
            (name, value)
        })
        .collect()
}

/// The header's name for an arch's value: `AUDIT_ARCH_<NAME>`, except where
/// libseccomp's name differs (`sh` is `SHEL`, `sheb` is `SH`); x32 reports
/// x86_64's, and ppcle has none (the header says audit does not support it).
fn header_name(arch: Arch) -> Option<String> {
    Some(match arch {
        Arch::X32 | Arch::Ppcle => return None,
        Arch::Sh => "AUDIT_ARCH_SHEL".into(),
        Arch::Sheb => "AUDIT_ARCH_SH".into(),
        a => format!("AUDIT_ARCH_{}", a.name().unwrap().to_ascii_uppercase()),
    })
}

#[test]
fn every_arch_value_is_the_headers() {
    let header = header();
    assert_eq!(header.len(), 53, "the 6.18 header defines 53 AUDIT_ARCH_* values");
    for arch in Arch::ALL {
        match header_name(arch) {
            Some(name) => {
                let want = header.get(&name).unwrap_or_else(|| panic!("{arch}: no {name} in audit.h"));
                assert_eq!(arch.audit_arch(), *want, "{arch} ({name})");
            }
            None if arch == Arch::Ppcle => {
                assert_eq!(arch.audit_arch(), AUDIT_ARCH_PPC | AUDIT_ARCH_LE);
                assert!(!header.values().any(|&v| v == arch.audit_arch()), "ppcle's value has a header name now");
            }
            None => assert_eq!(arch.audit_arch(), Arch::X86_64.audit_arch()),
        }
    }
    // Values the header defines that we name map back to one Arch.
    for (name, value) in &header {
        if let Some(arch) = Arch::ALL.into_iter().find(|a| header_name(*a).as_deref() == Some(name.as_str())) {
            assert_eq!(Arch::from_audit_arch(*value), arch, "{name}");
        }
    }
}

/// libseccomp 2.6's architecture names (`seccomp_arch_resolve_name()`;
/// `x86` is i386 there): each parses, has its header value, a syscall table
/// from the kernel's own `.tbl` files, and round-trips through its name.
#[test]
fn every_libseccomp_arch_has_a_table() {
    let names = [
        "x86",
        "x86_64",
        "x32",
        "arm",
        "aarch64",
        "loongarch64",
        "m68k",
        "mips",
        "mipsel",
        "mips64",
        "mipsel64",
        "mips64n32",
        "mipsel64n32",
        "parisc",
        "parisc64",
        "ppc",
        "ppc64",
        "ppc64le",
        "riscv64",
        "s390",
        "s390x",
        "sh",
        "sheb",
    ];
    for name in names {
        let arch: Arch = name.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        let table = arch.syscalls().unwrap_or_else(|| panic!("{name}: no syscall table"));
        assert!(table.nr_syscalls > 400, "{name}: {}", table.nr_syscalls);
        assert!(seccomp::syscalls::number(arch, "openat").is_some(), "{name}: no openat");
    }
    // Spot checks against the .tbl files (m68k, parisc, sh: no offsets).
    for (arch, call, nr) in [
        (Arch::M68k, "atomic_cmpxchg_32", 335),
        (Arch::M68k, "file_setattr", 469),
        (Arch::Parisc, "time", 13),
        (Arch::Parisc64, "time", 13),
        (Arch::Parisc64, "cacheflush", 356),
        (Arch::Sh, "cacheflush", 123),
        (Arch::Sheb, "cacheflush", 123),
    ] {
        assert_eq!(seccomp::syscalls::number(arch, call), Some(nr), "{arch} {call}");
    }
    // parisc64 has none of the 32-bit-only `*_time64` calls; both ABIs end
    // at 469, so NR_syscalls is 470 for each.
    assert!(seccomp::syscalls::number(Arch::Parisc, "clock_gettime64").is_some());
    assert_eq!(seccomp::syscalls::number(Arch::Parisc64, "clock_gettime64"), None);
    assert_eq!(Arch::Parisc64.syscalls().unwrap().nr_syscalls, 470);
    let c = seccomp::cache::cache_arches(Arch::Parisc64).unwrap();
    assert_eq!((c.compat.unwrap().arch, c.compat.unwrap().nr), (Arch::Parisc, Some(470)));
}
