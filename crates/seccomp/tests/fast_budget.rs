#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The fast engine's build is bounded by a global budget (issue 13, finding
//! 2): filters that compare `arch` with many constants, or nest key tables,
//! build quickly, answer exactly as the classic interpreter, and count what
//! fell back (`budget_fallback_entries`) or shared a table.

use std::time::{Duration, Instant};

use cbpf::{validate, Insn, Interp, Mode, SeccompData};
use seccomp::fast::FastFilter;

const LD: u16 = 0x20;
const JEQ: u16 = 0x15;
const JGE: u16 = 0x35;
const JA: u16 = 0x05;
const RET: u16 = 0x06;

fn arch_const(i: usize) -> u32 {
    0x4000_0000 | (i as u32).wrapping_mul(7).wrapping_add(1)
}

/// `ld arch`; per arch `jeq #c_i, 0, 1; ja body[i % 8]`; `ret KILL`; eight
/// bodies comparing nr and then arch again.
fn many_arches(n: usize) -> Vec<Insn> {
    let bodies = 1 + 2 * n + 1;
    let mut p = vec![Insn::stmt(LD, 4)];
    for i in 0..n {
        p.push(Insn::jump(JEQ, arch_const(i), 0, 1));
        let pc = p.len();
        p.push(Insn::stmt(JA, (bodies + (i % 8) * 6 - (pc + 1)) as u32));
    }
    p.push(Insn::stmt(RET, 0));
    for b in 0..8u32 {
        p.extend([
            Insn::stmt(LD, 0),
            Insn::jump(JEQ, b, 3, 0),
            Insn::stmt(LD, 4),
            Insn::jump(JGE, arch_const(n / 2), 0, 1),
            Insn::stmt(RET, 0x0005_0001),
            Insn::stmt(RET, 0x7fff_0000),
        ]);
    }
    p
}

/// `ld arch`; per arch `jeq #c_i, 0, 1; ja its body`, each body
/// distinct: `ld nr` and `per` keys `jeq #j; ret ERRNO(i, j)`.
fn distinct_arches(n: usize, per: usize) -> Vec<Insn> {
    let table_len = 1 + 2 * per + 1;
    let tables = 2 * n + 2;
    let mut p = vec![Insn::stmt(LD, 4)];
    for i in 0..n {
        p.push(Insn::jump(JEQ, arch_const(i), 0, 1));
        let pc = p.len();
        p.push(Insn::stmt(JA, (tables + i * table_len - (pc + 1)) as u32));
    }
    p.push(Insn::stmt(RET, 0x7fff_0000));
    for i in 0..n {
        p.push(Insn::stmt(LD, 0));
        for j in 0..per {
            p.push(Insn::jump(JEQ, j as u32, 0, 1));
            p.push(Insn::stmt(RET, 0x0005_0000 | (((i * per + j) as u32) & 0xfff)));
        }
        p.push(Insn::stmt(RET, 0));
    }
    p
}

/// One syscall's rules on two arguments: `keys` pairs `(a0 == i, a1 == j)`
/// on a 24-wide grid, two levels of key tables.
fn two_level_keyed(keys: usize) -> Vec<Insn> {
    let mut p = vec![Insn::stmt(LD, 0), Insn::jump(JEQ, 1, 1, 0), Insn::stmt(RET, 0x7fff_0000)];
    for r in 0..keys {
        let (i, j) = ((r / 24) as u32, (r % 24) as u32);
        p.extend([
            Insn::stmt(LD, 16),
            Insn::jump(JEQ, i, 0, 3),
            Insn::stmt(LD, 24),
            Insn::jump(JEQ, j, 0, 1),
            Insn::stmt(RET, 0x0005_0000 | (r as u32 & 0xfff)),
        ]);
    }
    p.push(Insn::stmt(RET, 0));
    p
}

fn check(name: &str, insns: &[Insn], arches: &[u32], nrs: &[i32], args: &[[u64; 6]]) -> seccomp::fast::FastStats {
    let prog = validate(insns, Mode::Seccomp).unwrap();
    let start = Instant::now();
    let fast = FastFilter::build(&prog).unwrap();
    let took = start.elapsed();
    let stats = fast.stats();
    eprintln!("{name}: {} insns, built in {took:?}, {stats:?}", insns.len());
    // Debug builds are far slower than the release goal (~1 s); this only
    // guards against the blow-up.
    assert!(took < Duration::from_secs(120), "{name}: build took {took:?}");
    assert_eq!(stats.whole_filter_entries, 0, "{name}");
    let interp = Interp::new(&prog);
    let mut checked = 0;
    for &arch in arches {
        for &nr in nrs {
            for &a in args {
                let data = SeccompData { nr, arch, instruction_pointer: 0x1000, args: a };
                let want = interp.run_seccomp(&data.to_bytes()).unwrap();
                assert_eq!(fast.eval(&data), want, "{name}: arch {arch:#x} nr {nr} args {a:?}");
                assert_eq!(fast.eval_bytes(&data.to_bytes()), want, "{name}: bytes arch {arch:#x} nr {nr}");
                checked += 1;
            }
        }
    }
    assert!(checked > 0);
    stats
}

fn arch_sample(n: usize) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n).map(arch_const).collect();
    v.extend([0xc000_003e, 0x4000_0003, 0, u32::MAX, arch_const(n)]);
    v
}

#[test]
fn many_arches_1000_and_1900_build_and_match() {
    let nrs: Vec<i32> = (0..10).chain([63, 64, 500, -1]).collect();
    for n in [1000, 1900] {
        let stats = check(&format!("many_arches_{n}"), &many_arches(n), &arch_sample(n), &nrs, &[[0; 6]]);
        // The filter tells the arches apart only by body (8) and by the
        // `jge`: the rest share tables.
        assert!(stats.shared_arches > 0, "{stats:?}");
    }
}

#[test]
fn distinct_arches_past_the_budget_fall_back_exactly() {
    // 1900 arches, each with its own body: every arch is distinguished.
    let n = 600;
    let insns = distinct_arches(n, 1);
    assert!(insns.len() <= 4096);
    let nrs: Vec<i32> = (0..4).chain([63, 64, 500, -1]).collect();
    check("distinct_arches_1000", &insns, &arch_sample(n), &nrs, &[[0; 6]]);
    let (n, per) = (100, 12);
    let insns = distinct_arches(n, per);
    assert!(insns.len() <= 4096, "{}", insns.len());
    let nrs: Vec<i32> = (0..14).chain([63, 64, 500, -1]).collect();
    check("distinct_arches_150x12", &insns, &arch_sample(n), &nrs, &[[0; 6]]);
}

#[test]
fn two_level_keyed_580_builds_and_matches() {
    let insns = two_level_keyed(580);
    let mut args: Vec<[u64; 6]> = Vec::new();
    for i in (0..26).step_by(3) {
        for j in 0..26 {
            args.push([i, j, 0, 0, 0, 0]);
        }
    }
    args.push([u64::MAX, 1 << 32, 0, 0, 0, 0]);
    let stats = check("two_level_keyed_580", &insns, &[0xc000_003e, 0x4000_0003], &[0, 1, 2, 400], &args);
    assert!(stats.switches > 0, "{stats:?}");
}

/// A filter whose every (arch, nr) work exceeds the budget still answers
/// exactly, and the fallback is counted.
#[test]
fn budget_fallback_is_counted() {
    // 540 distinct arches x 64-entry tables x ~1900 steps: past the step
    // budget.
    let n = 540;
    let insns = distinct_arches(n, 1);
    let insns: Vec<Insn> = {
        // Pad each specialisation's work: a long prefix of arg tests that
        // nothing settles but every path walks.
        let mut p = Vec::new();
        for i in 0..400u32 {
            p.push(Insn::stmt(LD, 16 + 4 * (i % 12)));
            p.push(Insn::jump(JEQ, i, 0, 0));
        }
        // Make the prefix's jumps fall through (jt = jf = 0 is decided).
        p.extend(insns);
        p
    };
    assert!(insns.len() <= 4096, "{}", insns.len());
    let nrs: Vec<i32> = vec![0, 1, 63, 64, -1];
    let stats = check("padded_distinct_arches", &insns, &arch_sample(n), &nrs, &[[0; 6], [5; 6]]);
    eprintln!("{stats:?}");
    assert!(stats.budget_fallback_entries > 0, "{stats:?}");
}

/// `ioctl` (16) allowed for `values` of `args[1].lo` as libseccomp lays
/// out an allow-list ([`test_data::programs::allow_list`]), everything else
/// allowed, other arches killed.
fn ioctl_allow_list(values: &[u32]) -> Vec<Insn> {
    let list = test_data::programs::AllowList {
        nr: Some(16),
        arg: 1,
        high_zero: false,
        run: test_data::programs::COMPACT_RUN,
        values,
    };
    let raw = test_data::programs::allow_list(&list);
    raw.into_iter().map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect()
}

/// A 3,000-request allow-list is a tree in the fast engine: the cut of
/// `args[1].lo` into its 6,001 runs is past the plain bound (runs times the
/// residual's 3,000 instructions, 18M steps against the build's 8M), and
/// priced by a sample at a few steps a run (the specialiser's binary search
/// over a `jeq` run) it is made. Every request and its neighbours answer as
/// the classic interpreter does.
#[test]
fn an_allow_list_of_3000_requests_is_a_tree() {
    let values: Vec<u32> = (0..3000u32).map(|i| 0x5400 + 7 * i).collect();
    let insns = ioctl_allow_list(&values);
    assert!(insns.len() <= 4096, "{}", insns.len());
    let mut args: Vec<[u64; 6]> = Vec::new();
    for &v in values.iter().step_by(7).chain([values[0], values[2999]].iter()) {
        for w in [v - 1, v, v + 1] {
            args.push([0, u64::from(w), 0, 0, 0, 0]);
        }
    }
    args.push([0, (1 << 32) | u64::from(values[5]), 0, 0, 0, 0]);
    let stats = check("ioctl_allow_list_3000", &insns, &[0xc000_003e, 0x4000_0003], &[16, 17], &args);
    assert!(stats.switch_ranges > 2 * 3000, "{stats:?}");
    assert_eq!(stats.budget_fallback_entries, 0, "{stats:?}");
}
