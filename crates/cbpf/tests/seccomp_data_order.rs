#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
//! `SeccompData::in_kernel_order`: a big-endian arch's call reaches a
//! filter with each 64-bit field high half first (populate_seccomp_data()
//! stores them in the kernel's byte order); little-endian arches are
//! unchanged on this (little-endian) host.

use cbpf::uapi::audit::{AUDIT_ARCH_MIPS, AUDIT_ARCH_S390X, AUDIT_ARCH_X86_64};
use cbpf::SeccompData;

#[test]
fn big_endian_arches_put_the_high_half_first() {
    let call = SeccompData {
        nr: 37,
        arch: AUDIT_ARCH_S390X,
        instruction_pointer: 0x1111_2222_3333_4444,
        args: [9, 9 << 32, 0x0102_0304_0506_0708, 0, u64::MAX, 1],
    };
    let words: Vec<u32> =
        call.in_kernel_order().to_bytes().chunks_exact(4).map(|w| u32::from_ne_bytes(w.try_into().unwrap())).collect();
    assert_eq!(&words[..2], [37, AUDIT_ARCH_S390X]);
    assert_eq!(&words[2..4], [0x1111_2222, 0x3333_4444], "ip: high half first");
    assert_eq!(&words[4..6], [0, 9], "args[0] = 9: high half 0 first, then 9");
    assert_eq!(&words[6..8], [9, 0]);
    assert_eq!(&words[8..10], [0x0102_0304, 0x0506_0708]);
    let mips = SeccompData { arch: AUDIT_ARCH_MIPS, ..call };
    assert_eq!(mips.in_kernel_order().args[0], 9 << 32);
    // Twice is the identity; little-endian arches are left alone.
    assert_eq!(call.in_kernel_order().in_kernel_order(), call);
    let x86 = SeccompData { arch: AUDIT_ARCH_X86_64, ..call };
    if cfg!(target_endian = "little") {
        assert_eq!(x86.in_kernel_order(), x86);
    }
}
