#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The kernel's constant-action cache (`seccomp_cache_prepare_bitmap`), one
//! small filter per rule of its emulator `seccomp_is_const_allow()`, with the
//! expected bitmaps worked out from kernel/seccomp.c (Linux 6.18); then the
//! libseccomp filters of testdata/filters.

use cbpf::opcode::*;
use cbpf::{validate, Insn, Mode};
use seccomp::analysis::{analyze, ActionResult};
use seccomp::cache::{
    chain_cache_allow, kernel_cache_allow, seccomp_is_const_allow, ActionCache, CacheBitmap, CacheConfig,
    AUDIT_ARCH_I386, AUDIT_ARCH_X86_64, SECCOMP_RET_ALLOW,
};

const ALLOW: u32 = SECCOMP_RET_ALLOW;
const KILL: u32 = 0;
use seccomp::action::SECCOMP_RET_LOG as LOG;
const AARCH64: u32 = 0xc000_00b7;
/// A bitmap size covering 335/336 and everything libseccomp compares.
const NR_COUNT: u32 = 470;

mod common;
use common::{j, load, s};

/// `ld [0]; jOP k; ret ALLOW; ret KILL`.
fn nr_test(code: u16, k: u32) -> Vec<Insn> {
    vec![s(LD_W_ABS, 0), j(code, k, 0, 1), s(RET_K, ALLOW), s(RET_K, KILL)]
}

/// The bitmap for native x86_64, numbers below 8 only (the uprobe exception
/// at 335/336 is tested separately).
fn low_bits(prog: &[Insn]) -> Vec<u32> {
    // Every case must be a program the kernel accepts.
    validate(prog, Mode::Seccomp).unwrap_or_else(|e| panic!("invalid test filter {prog:?}: {e}"));
    kernel_cache_allow(prog, AUDIT_ARCH_X86_64, NR_COUNT, AUDIT_ARCH_X86_64)
        .allowed()
        .into_iter()
        .filter(|&nr| nr < 8)
        .collect()
}

#[test]
fn emulator_rules() {
    let all: Vec<u32> = (0..8).collect();
    let cases: Vec<(&str, Vec<Insn>, Vec<u32>)> = vec![
        ("ld nr, jeq", nr_test(JMP_JEQ_K, 3), vec![3]),
        ("jgt k", nr_test(JMP_JGT_K, 4), vec![5, 6, 7]),
        ("jge k", nr_test(JMP_JGE_K, 4), vec![4, 5, 6, 7]),
        ("jset k", nr_test(JMP_JSET_K, 2), vec![2, 3, 6, 7]),
        (
            "ld arch",
            vec![s(LD_W_ABS, 4), j(JMP_JEQ_K, AUDIT_ARCH_X86_64, 0, 1), s(RET_K, ALLOW), s(RET_K, KILL)],
            all.clone(),
        ),
        (
            "ld arch, other arch",
            vec![s(LD_W_ABS, 4), j(JMP_JEQ_K, AUDIT_ARCH_I386, 0, 1), s(RET_K, ALLOW), s(RET_K, KILL)],
            vec![],
        ),
        ("ld args gives up even when every path allows", vec![s(LD_W_ABS, 16), s(RET_K, ALLOW)], vec![]),
        ("ld ip gives up", vec![s(LD_W_ABS, 8), s(RET_K, ALLOW)], vec![]),
        (
            "ld args only on other numbers' paths",
            vec![s(LD_W_ABS, 0), j(JMP_JEQ_K, 3, 0, 1), s(RET_K, ALLOW), s(LD_W_ABS, 16), s(RET_K, ALLOW)],
            vec![3],
        ),
        (
            "ja",
            vec![s(LD_W_ABS, 0), s(JMP_JA, 1), s(RET_K, ALLOW), j(JMP_JEQ_K, 2, 0, 1), s(RET_K, ALLOW), s(RET_K, KILL)],
            vec![2],
        ),
        (
            "and k masks",
            vec![s(LD_W_ABS, 0), s(ALU_AND_K, 6), j(JMP_JEQ_K, 4, 0, 1), s(RET_K, ALLOW), s(RET_K, KILL)],
            vec![4, 5],
        ),
        ("ret ALLOW", vec![s(RET_K, ALLOW)], all.clone()),
        ("ret ALLOW with data", vec![s(RET_K, ALLOW | 1)], vec![]),
        ("ret LOG", vec![s(RET_K, LOG)], vec![]),
        ("ret a gives up", vec![s(LD_W_ABS, 0), s(RET_A, 0)], vec![]),
        ("ld imm gives up", vec![s(LD_IMM, ALLOW), s(RET_A, 0)], vec![]),
        ("ld len gives up", vec![s(LD_W_LEN, 0), s(RET_K, ALLOW)], vec![]),
        ("ldx imm gives up", vec![s(LDX_IMM, 3), s(RET_K, ALLOW)], vec![]),
        ("jeq x gives up", vec![s(LD_W_ABS, 0), j(JMP_JEQ_X, 0, 0, 1), s(RET_K, ALLOW), s(RET_K, KILL)], vec![]),
        ("jset x gives up", vec![s(LD_W_ABS, 0), j(JMP_JSET_X, 0, 0, 1), s(RET_K, KILL), s(RET_K, ALLOW)], vec![]),
        ("or k gives up", vec![s(LD_W_ABS, 0), s(ALU_OR_K, 0), s(RET_K, ALLOW)], vec![]),
        ("add k gives up", vec![s(LD_W_ABS, 0), s(ALU_ADD_K, 0), s(RET_K, ALLOW)], vec![]),
        ("and x gives up", vec![s(LD_W_ABS, 0), s(ALU_AND_X, 0), s(RET_K, ALLOW)], vec![]),
        ("neg gives up", vec![s(LD_W_ABS, 0), s(ALU_NEG, 0), s(RET_K, ALLOW)], vec![]),
        ("st gives up", vec![s(ST, 0), s(RET_K, ALLOW)], vec![]),
        ("ld mem gives up", vec![s(ST, 0), s(LD_MEM, 0), s(RET_K, ALLOW)], vec![]),
        ("tax gives up", vec![s(MISC_TAX, 0), s(RET_K, ALLOW)], vec![]),
        ("txa gives up", vec![s(MISC_TXA, 0), s(RET_K, ALLOW)], vec![]),
        (
            "give-up only on a path not taken",
            vec![s(LD_W_ABS, 0), j(JMP_JGE_K, 4, 1, 0), s(RET_K, ALLOW), s(MISC_TAX, 0), s(RET_K, ALLOW)],
            vec![0, 1, 2, 3],
        ),
    ];
    let mut failures = Vec::new();
    for (name, prog, expected) in &cases {
        let got = low_bits(prog);
        if &got != expected {
            failures.push(format!("{name}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn uprobe_exception_only_for_native_x86_64() {
    let kill_all = [s(RET_K, KILL)];
    let gives_up = [s(LD_W_ABS, 16), s(RET_K, KILL)];
    for prog in [&kill_all[..], &gives_up[..]] {
        let native = kernel_cache_allow(prog, AUDIT_ARCH_X86_64, NR_COUNT, AUDIT_ARCH_X86_64);
        assert_eq!(native.allowed(), vec![335, 336]);
        let compat = kernel_cache_allow(prog, AUDIT_ARCH_I386, NR_COUNT, AUDIT_ARCH_X86_64);
        assert_eq!(compat.allowed(), Vec::<u32>::new());
        let arm64 = kernel_cache_allow(prog, AARCH64, NR_COUNT, AARCH64);
        assert_eq!(arm64.allowed(), Vec::<u32>::new());
    }
    // A bitmap too small to hold them holds nothing.
    assert!(kernel_cache_allow(&kill_all, AUDIT_ARCH_X86_64, 335, AUDIT_ARCH_X86_64).allowed().is_empty());
    assert!(seccomp_is_const_allow(&kill_all, 336, AUDIT_ARCH_X86_64, AUDIT_ARCH_X86_64));
    assert!(!seccomp_is_const_allow(&kill_all, 337, AUDIT_ARCH_X86_64, AUDIT_ARCH_X86_64));
}

#[test]
fn chains_and_lookup() {
    // Older filter allows 1..=3, newer allows 2..=4: the chain allows 2, 3.
    let older = [s(LD_W_ABS, 0), j(JMP_JGE_K, 1, 0, 2), j(JMP_JGT_K, 3, 1, 0), s(RET_K, ALLOW), s(RET_K, KILL)];
    let newer = [s(LD_W_ABS, 0), j(JMP_JGE_K, 2, 0, 2), j(JMP_JGT_K, 4, 1, 0), s(RET_K, ALLOW), s(RET_K, KILL)];
    let n = 16;
    let x = AUDIT_ARCH_X86_64;
    assert_eq!(kernel_cache_allow(&older, x, n, x).allowed(), vec![1, 2, 3]);
    assert_eq!(kernel_cache_allow(&newer, x, n, x).allowed(), vec![2, 3, 4]);
    assert_eq!(chain_cache_allow(&[&older, &newer], x, n, x).allowed(), vec![2, 3]);
    assert_eq!(chain_cache_allow(&[&newer, &older], x, n, x).allowed(), vec![2, 3]);
    assert_eq!(chain_cache_allow(&[], x, n, x), CacheBitmap::full(n));

    let config = CacheConfig { native_arch: x, native_nr: n, compat: Some((AUDIT_ARCH_I386, 8)) };
    let first = ActionCache::prepare(&older, None, config);
    let second = ActionCache::prepare(&newer, Some(&first), config);
    assert!(second.check_allow(x, 2));
    assert!(!second.check_allow(x, 4));
    assert!(!second.check_allow(x, -1));
    assert!(!second.check_allow(x, 16));
    assert!(second.check_allow(AUDIT_ARCH_I386, 3));
    assert!(!second.check_allow(AUDIT_ARCH_I386, 8));
    assert!(!second.check_allow(AARCH64, 2), "unknown arch is a miss");

    let native_only = CacheConfig { native_arch: AARCH64, native_nr: n, compat: None };
    let cache = ActionCache::prepare(&[s(RET_K, ALLOW)], None, native_only);
    assert!(cache.check_allow(0x1234, 5), "a native-only kernel does not look at arch");
    assert!(cache.allow_compat.is_none());

    let mut full = CacheBitmap::full(65);
    assert_eq!(full.allowed().len(), 65);
    assert!(!full.test(65));
    full = CacheBitmap::full(0);
    assert!(full.allowed().is_empty());
}

/// `bitmap_fill(bitmap, NR)`: exactly the numbers `0..NR`, whatever `NR` is
/// modulo the word size (x86_64's NR_syscalls is a multiple of 64 on some
/// kernels, i386's is not).
#[test]
fn a_full_bitmap_is_every_number_below_its_size() {
    for n in [1, 2, 63, 64, 65, 127, 128, 129, 191, 192, 470, 512] {
        let full = CacheBitmap::full(n);
        assert_eq!(full.nr_count(), n);
        assert_eq!(full.allowed(), (0..n).collect::<Vec<u32>>(), "NR {n}");
        assert!(full.check_allow(n as i32 - 1) && !full.check_allow(n as i32), "NR {n}");
    }
}

const FILTERS: [&str; 12] = [
    "allow306_default",
    "allow306_end",
    "allow306_front",
    "allow306_middle",
    "allow306_opt2",
    "long_jumps_large",
    "long_jumps_large_opt2",
    "long_jumps_short",
    "long_jumps_short_opt2",
    "seed_fast",
    "seed_slow",
    "seed_slow_opt2",
];

#[test]
fn allow306_filters_cache_0_to_305() {
    // libseccomp's allow-list filters only use ld [0]/[4], jeq/jge/jgt #k and
    // ret #k: the emulator follows them all the way, so every allowed number
    // is cached, plus the uprobe exception.
    let mut expected: Vec<u32> = (0..=305).collect();
    expected.extend([335, 336]);
    for name in FILTERS.iter().filter(|n| n.starts_with("allow306")) {
        let prog = load(name);
        let native = kernel_cache_allow(prog.original(), AUDIT_ARCH_X86_64, NR_COUNT, AUDIT_ARCH_X86_64);
        assert_eq!(native.allowed(), expected, "{name}");
        let compat = kernel_cache_allow(prog.original(), AUDIT_ARCH_I386, NR_COUNT, AUDIT_ARCH_X86_64);
        assert!(compat.allowed().is_empty(), "{name}: i386 is rejected by the arch check");
    }
}

#[test]
fn long_jumps_filters_do_not_cache_argument_checks() {
    for name in ["long_jumps_large", "long_jumps_large_opt2"] {
        let allowed =
            kernel_cache_allow(load(name).original(), AUDIT_ARCH_X86_64, NR_COUNT, AUDIT_ARCH_X86_64).allowed();
        // brk and close are allowed outright; chdir (80) only for some args.
        assert_eq!(allowed, vec![3, 12, 335, 336], "{name}");
    }
    for name in ["long_jumps_short", "long_jumps_short_opt2"] {
        let allowed =
            kernel_cache_allow(load(name).original(), AUDIT_ARCH_X86_64, NR_COUNT, AUDIT_ARCH_X86_64).allowed();
        assert_eq!(allowed, vec![3, 12, 335, 336], "{name}");
    }
}

/// Whatever the kernel caches, our analysis must prove constant ALLOW
/// (the emulator is a weaker version of the same reasoning); the uprobe
/// exception is the kernel's policy, not the filter's.
#[test]
fn cached_numbers_are_constant_allow_for_the_analysis() {
    let mut failures = Vec::new();
    for name in FILTERS {
        let prog = load(name);
        let cached = kernel_cache_allow(prog.original(), AUDIT_ARCH_X86_64, NR_COUNT, AUDIT_ARCH_X86_64).allowed();
        let cached: Vec<u32> = cached.into_iter().filter(|nr| *nr != 335 && *nr != 336).collect();
        for entry in analyze(&prog, AUDIT_ARCH_X86_64, cached).unwrap() {
            if entry.result != ActionResult::Constant(ALLOW) {
                failures.push(format!("{name}: nr {} cached but analysis says {:?}", entry.nr, entry.result));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
