#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Arches a filter never names: they fail each of its `jeq` tests of
//! `arch` alike, so the fast engine gives them one entry, the filter
//! specialised for "`arch` is none of the compared ones". Exactness
//! against the classic interpreter on the testdata filters and on
//! hand-written arch tests that are not a plain `jeq` (ranges, `jset`,
//! masks, X operands, no arch load at all, the arch checked after `nr`).

use cbpf::{Interp, Program, SeccompData};
use seccomp::fast::{Entry, FastFilter};

use seccomp::arch::{AUDIT_ARCH_I386 as I386, AUDIT_ARCH_X86_64 as X86_64};

mod common;
use common::{asm, filter_names, load};

const ALLOW: u32 = 0x7fff_0000;
const KILL: u32 = 0x8000_0000;
const EPERM: u32 = 0x0005_0001;
const AARCH64: u32 = 0xc000_00b7;

/// Arches around the named ones and far from them.
const ARCHES: [u32; 9] = [X86_64, I386, AARCH64, 0, 1, 0x4000_0000, 0x4000_0003, 0xc000_0000, u32::MAX];

/// `fast.eval` equals the interpreter on every arch of [`ARCHES`] (and
/// those given), numbers around the compared ones and a few argument sets;
/// returns the engine it checked.
fn assert_exact(name: &str, program: &Program, extra_arches: &[u32]) -> FastFilter {
    let interp = Interp::new(program);
    let fast = FastFilter::build(program).unwrap();
    let mut checked = 0;
    for &arch in ARCHES.iter().chain(extra_arches) {
        for nr in [0u32, 1, 2, 3, 9, 10, 11, 12, 39, 110, 231, 500, 0x4000_0001, u32::MAX] {
            for args in [[0u64; 6], [1, 2, 3, 4, 5, 6], [u64::MAX; 6], [0, 0, 4, 0, 0, 0]] {
                let data = SeccompData { nr: nr as i32, arch, instruction_pointer: 0x1000, args };
                let want = interp.run_seccomp(&data.to_bytes()).unwrap();
                assert_eq!(fast.eval(&data), want, "{name}: {data:x?}");
                assert_eq!(fast.eval_bytes(&data.to_bytes()), want, "{name}: bytes {data:x?}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 500);
    fast
}

#[test]
fn libseccomp_filters_give_unnamed_arches_one_constant() {
    for name in filter_names() {
        let program = load(&name);
        let fast = assert_exact(&name, &program, &[]);
        let interp = Interp::new(&program);
        // Their arch check is the first test: every other arch is one
        // constant, whatever the number (no run of the whole filter).
        for arch in [I386, 0x1234_5678] {
            if fast.arches().any(|a| a == arch) {
                continue;
            }
            let want = interp.run_seccomp(&SeccompData::new(arch, 0).to_bytes()).unwrap();
            for nr in [0, 12, 110, 0x4000_0000, u32::MAX] {
                assert_eq!(fast.entry(arch, nr), Entry::Action(want), "{name}: arch {arch:#x} nr {nr}");
            }
        }
    }
}

/// A hand-written filter whose arch test is exact on the fast engine: its
/// bpf_asm text, arches checked besides [`ARCHES`], and the
/// `(arch, nr, action)` entries that must be one constant.
struct Case {
    name: &'static str,
    text: &'static str,
    extra_arches: &'static [u32],
    constants: &'static [(u32, u32, u32)],
}

const CASES: &[Case] = &[
    // A plain `jeq` arch check: every other arch is the kill.
    Case {
        name: "jeq",
        text: r"
                ld [4]                      ; arch
                jeq #0xc000003e, x86_64
                ret #0x80000000
        x86_64: ld [0]                      ; nr
                jeq #39, allow, eperm
        allow:  ret #0x7fff0000
        eperm:  ret #0x50001
        ",
        extra_arches: &[],
        constants: &[(I386, 39, KILL)],
    },
    // Two named arches and a kill for the rest.
    Case {
        name: "two arches",
        text: r"
                ld [4]
                jeq #0xc000003e, x86_64
                jeq #0x40000003, allow      ; i386: allow all
                ret #0x80000000
        x86_64: ld [0]
                jeq #39, allow
                ret #0x50001
        allow:  ret #0x7fff0000
        ",
        extra_arches: &[],
        constants: &[(AARCH64, 39, KILL), (I386, 5, ALLOW)],
    },
    // A masked arch: A is no longer the field itself.
    Case {
        name: "masked",
        text: "ld [4]\n and #0xfff\n jeq #0x3e, allow\n ret #0x80000000\n allow: ret #0x7fff0000",
        extra_arches: &[0x4000_003e, 0x3e, 0x1003e],
        constants: &[],
    },
    // The arch compared with X.
    Case {
        name: "jeq x",
        text: r"
                ldx #0xc000003e
                ld [4]
                jeq x, x86_64
                ret #0x80000000
        x86_64: ld [0]
                jge #100, eperm, allow
        eperm:  ret #0x50001
        allow:  ret #0x7fff0000
        ",
        extra_arches: &[],
        constants: &[(I386, 5, KILL)],
    },
    // Never loads arch: every arch uses the one arch-free table.
    Case {
        name: "no arch",
        text: "ld [0]\n jeq #39, allow, eperm\n allow: ret #0x7fff0000\n eperm: ret #0x50001",
        extra_arches: &[],
        constants: &[(0xdead_beef, 39, ALLOW), (0xdead_beef, 40, EPERM)],
    },
    // Loads arch but compares it with nothing: returns it.
    Case { name: "ret arch", text: "ld [4]\n ret a", extra_arches: &[], constants: &[] },
];

#[test]
fn hand_written_arch_tests_are_exact_and_constant_where_expected() {
    for case in CASES {
        let fast = assert_exact(case.name, &asm(case.text), case.extra_arches);
        for &(arch, nr, action) in case.constants {
            assert_eq!(fast.entry(arch, nr), Entry::Action(action), "{}: arch {arch:#x} nr {nr}", case.name);
        }
    }
}

#[test]
fn range_and_jset_arch_tests_stay_in_the_residual() {
    // `jgt`/`jge`/`jset` on arch are not excluded by "none of": the entry
    // for unnamed arches keeps them and still answers per arch.
    let p = asm(r"
                ld [4]
                jeq #0xc000003e, x86_64
                jgt #0x40000000, high, eperm
        high:   jset #0x80000000, kill, eperm   ; __AUDIT_ARCH_64BIT
        eperm:  ret #0x50001
        kill:   ret #0x80000000
        x86_64: ld [0]
                jeq #39, allow, eperm7
        allow:  ret #0x7fff0000
        eperm7: ret #0x50007
        ");
    let fast = assert_exact("jgt/jset", &p, &[0x4000_0001, 0x8000_0000, 0xffff_0000, 0x3fff_ffff]);
    // Unnamed arches differ from each other: a residual, not the whole filter.
    match fast.entry(I386, 39) {
        Entry::Residual(r) => assert!(r.len() < p.len(), "residual {} vs filter {}", r.len(), p.len()),
        other => panic!("expected a residual, got {other:?}"),
    }
}

#[test]
fn arch_checked_after_nr() {
    // The number first, the arch only for some numbers.
    let late = asm(r"
                ld [0]                      ; nr
                jne #39, kill
                ld [4]                      ; arch
                jeq #0x40000003, eperm, allow
        eperm:  ret #0x50001
        allow:  ret #0x7fff0000
        kill:   ret #0x80000000
        ");
    let fast = assert_exact("late arch", &late, &[]);
    // One entry for every unnamed arch, whatever the number: the arch test
    // is gone from it, the number test stays.
    match fast.entry(AARCH64, 39) {
        Entry::Residual(r) => assert_eq!(r.len(), 4, "{:?}", r.original()),
        other => panic!("expected a residual, got {other:?}"),
    }
}

#[test]
fn numbers_past_the_table_are_runs_of_constants() {
    // libseccomp compares `nr` only with constants: x32 numbers, `-1` and
    // numbers past the syscall table are runs with one constant each, not
    // the arch-only residual.
    for name in ["allow306_default", "allow306_end", "seed_fast", "seed_slow", "long_jumps_short"] {
        let program = load(name);
        let fast = FastFilter::build(&program).unwrap();
        let interp = Interp::new(&program);
        for nr in [600, 5000, 0x3fff_ffff, 0x4000_0000, 0x4000_0001, 0x4000_1234, 0x7fff_ffff, u32::MAX - 1, u32::MAX] {
            let want = interp.run_seccomp(&SeccompData::new(X86_64, nr as i32).to_bytes()).unwrap();
            assert_eq!(fast.entry(X86_64, nr), Entry::Action(want), "{name}: nr {nr:#x}");
        }
    }
}
