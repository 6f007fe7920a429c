#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Arches a filter never names: they fail each of its `jeq` tests of
//! `arch` alike, so the fast engine gives them one entry, the filter
//! specialised for "`arch` is none of the compared ones". Exactness
//! against the classic interpreter on the testdata filters and on
//! hand-written arch tests that are not a plain `jeq` (ranges, `jset`,
//! masks, X operands, no arch load at all, the arch checked after `nr`).

use cbpf::{validate, Insn, Interp, Mode, Program, SeccompData};
use seccomp::fast::{Entry, FastFilter};

use seccomp::arch::{AUDIT_ARCH_I386 as I386, AUDIT_ARCH_X86_64 as X86_64};

mod common;
use common::{filter_names, j, load, s};

const ALLOW: u32 = 0x7fff_0000;
const KILL: u32 = 0x8000_0000;
const EPERM: u32 = 0x0005_0001;
const AARCH64: u32 = 0xc000_00b7;

/// Arches around the named ones and far from them.
const ARCHES: [u32; 9] = [X86_64, I386, AARCH64, 0, 1, 0x4000_0000, 0x4000_0003, 0xc000_0000, u32::MAX];

fn prog(insns: &[Insn]) -> Program {
    validate(insns, Mode::Seccomp).unwrap()
}

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

#[test]
fn plain_jeq_arch_check_is_a_constant() {
    let p = prog(&[
        s(0x20, 4),
        j(0x15, X86_64, 1, 0), // jeq #x86_64
        s(0x06, KILL),
        s(0x20, 0),
        j(0x15, 39, 0, 1),
        s(0x06, ALLOW),
        s(0x06, EPERM),
    ]);
    let fast = assert_exact("jeq", &p, &[]);
    assert_eq!(fast.entry(I386, 39), Entry::Action(KILL));
}

#[test]
fn two_named_arches_and_a_kill_for_the_rest() {
    let p = prog(&[
        s(0x20, 4),
        j(0x15, X86_64, 2, 0),
        j(0x15, I386, 4, 0), // i386: allow all
        s(0x06, KILL),
        s(0x20, 0),
        j(0x15, 39, 1, 0),
        s(0x06, EPERM),
        s(0x06, ALLOW),
    ]);
    let fast = assert_exact("two arches", &p, &[]);
    assert_eq!(fast.entry(AARCH64, 39), Entry::Action(KILL));
    assert_eq!(fast.entry(I386, 5), Entry::Action(ALLOW));
}

#[test]
fn range_and_jset_arch_tests_stay_in_the_residual() {
    // `jgt`/`jge`/`jset` on arch are not excluded by "none of": the entry
    // for unnamed arches keeps them and still answers per arch.
    let p = prog(&[
        s(0x20, 4),
        j(0x15, X86_64, 4, 0),      // jeq #x86_64 -> nr check
        j(0x25, 0x4000_0000, 0, 1), // jgt #0x40000000
        j(0x45, 0x8000_0000, 1, 0), // jset #__AUDIT_ARCH_64BIT
        s(0x06, EPERM),
        s(0x06, KILL),
        s(0x20, 0),
        j(0x15, 39, 0, 1),
        s(0x06, ALLOW),
        s(0x06, EPERM | 7),
    ]);
    let fast = assert_exact("jgt/jset", &p, &[0x4000_0001, 0x8000_0000, 0xffff_0000, 0x3fff_ffff]);
    // Unnamed arches differ from each other: a residual, not the whole filter.
    match fast.entry(I386, 39) {
        Entry::Residual(r) => assert!(r.len() < p.len(), "residual {} vs filter {}", r.len(), p.len()),
        other => panic!("expected a residual, got {other:?}"),
    }
}

#[test]
fn masked_arch_and_x_operand_tests() {
    // ld arch; and #0xfff; jeq #0x3e  (A is no longer the field itself)
    let masked = prog(&[s(0x20, 4), s(0x54, 0xfff), j(0x15, 0x3e, 1, 0), s(0x06, KILL), s(0x06, ALLOW)]);
    assert_exact("masked", &masked, &[0x4000_003e, 0x3e, 0x1003e]);
    // ldx #x86_64; ld arch; jeq x
    let x_operand = prog(&[
        s(0x01, X86_64),
        s(0x20, 4),
        j(0x1d, 0, 1, 0),
        s(0x06, KILL),
        s(0x20, 0),
        j(0x35, 100, 0, 1), // jge #100
        s(0x06, EPERM),
        s(0x06, ALLOW),
    ]);
    let fast = assert_exact("jeq x", &x_operand, &[]);
    assert_eq!(fast.entry(I386, 5), Entry::Action(KILL));
}

#[test]
fn arch_checked_after_nr_and_arch_never_loaded() {
    // The number first, the arch only for some numbers.
    let late = prog(&[
        s(0x20, 0),
        j(0x15, 39, 0, 4),
        s(0x20, 4),
        j(0x15, I386, 0, 1),
        s(0x06, EPERM),
        s(0x06, ALLOW),
        s(0x06, KILL),
    ]);
    let fast = assert_exact("late arch", &late, &[]);
    // One entry for every unnamed arch, whatever the number: the arch test
    // is gone from it, the number test stays.
    match fast.entry(AARCH64, 39) {
        Entry::Residual(r) => assert_eq!(r.len(), 4, "{:?}", r.original()),
        other => panic!("expected a residual, got {other:?}"),
    }
    // Never loads arch: every arch uses the one arch-free table.
    let blind = prog(&[s(0x20, 0), j(0x15, 39, 0, 1), s(0x06, ALLOW), s(0x06, EPERM)]);
    let fast = assert_exact("no arch", &blind, &[]);
    assert_eq!(fast.entry(0xdead_beef, 39), Entry::Action(ALLOW));
    assert_eq!(fast.entry(0xdead_beef, 40), Entry::Action(EPERM));
    // Loads arch but compares it with nothing: returns it.
    let echo = prog(&[s(0x20, 4), s(0x16, 0)]);
    assert_exact("ret arch", &echo, &[]);
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
