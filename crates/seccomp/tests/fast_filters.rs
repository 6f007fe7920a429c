#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The fast engine on the libseccomp filters of testdata/filters: the same
//! action as the classic interpreter on every kernel-checked and simulated
//! vector, and on a sweep of (arch, nr, args) around every table; table
//! shapes (constants, residual sizes); stacks of filters.

use cbpf::{validate, Insn, Interp, Mode, Program, SeccompData};
use seccomp::fast::{Entry, FastFilter, FastStack};
use seccomp::stack::combine;

use seccomp::action::SECCOMP_RET_ALLOW as ALLOW;
use seccomp::arch::{AUDIT_ARCH_I386 as I386, AUDIT_ARCH_X86_64 as X86_64, X32_SYSCALL_BIT as X32_BIT};
const AARCH64: u32 = 0xc000_00b7;
const EPERM: u32 = 0x0005_0001;

mod common;
use common::{filter_names, load, vectors};

#[test]
fn fast_matches_the_interpreter_on_every_vector() {
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for name in filter_names() {
        let prog = load(&name);
        let interp = Interp::new(&prog);
        let fast = FastFilter::build(&prog).unwrap();
        let stats = fast.stats();
        eprintln!("{name}: {} insns, {stats:?}", prog.len());
        if stats.whole_filter_entries != 0 {
            failures.push(format!("{name}: {} entries fell back to the whole filter", stats.whole_filter_entries));
        }
        for (at, data, action) in vectors(&name) {
            checked += 1;
            let want = interp.run_seccomp(&data.to_bytes()).unwrap();
            let got = fast.eval(&data);
            let got_bytes = fast.eval_bytes(&data.to_bytes());
            if got != want || got_bytes != want || want != action {
                failures.push(format!(
                    "{at}: fast {got:#x} (bytes {got_bytes:#x}), interpreter {want:#x}, vector {action:#x}"
                ));
            }
        }
    }
    eprintln!("{checked} vectors");
    assert!(checked > 20_000, "only {checked} vectors read");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Inputs around every table: each arch the filters name, i386/aarch64 and
/// unknown arches (the lowest and highest values too); every number up to past the x86_64 table, x32 numbers,
/// negatives; arguments that satisfy and break long_jumps' chdir rules.
fn sweep() -> Vec<SeccompData> {
    let mut nrs: Vec<i32> = (0..600).collect();
    nrs.extend([-1, -2, i32::MIN, i32::MAX, 0x3fff_ffff, 1023, 1024, 4096]);
    nrs.extend([0, 1, 12, 80, 110, 305, 306, 0x200].map(|n| (n | X32_BIT) as i32));
    let args_sets: [[u64; 6]; 5] = [
        [0; 6],
        [5, 1, 7, 0, 0, 0],
        [99, 1, 0x7fff_ffff_ffff_fffe, 0, 0, 0],
        [5, 0, 7, 0, 0, 0],
        [100, 1, u64::MAX, 3, 4, 5],
    ];
    let mut out = Vec::new();
    for arch in [X86_64, I386, AARCH64, 0x1234_5678, 0, u32::MAX] {
        for &nr in &nrs {
            for (i, args) in args_sets.iter().enumerate() {
                // Full argument sets only where arguments matter.
                if i > 0 && !(nr == 80 || nr % 7 == 0) {
                    continue;
                }
                out.push(SeccompData { nr, arch, instruction_pointer: 0x7f00_0000_1000, args: *args });
            }
        }
    }
    out
}

#[test]
fn fast_matches_the_interpreter_on_a_sweep_of_every_table() {
    let inputs = sweep();
    let mut failures = Vec::new();
    for name in filter_names() {
        let prog = load(&name);
        let interp = Interp::new(&prog);
        let fast = FastFilter::build(&prog).unwrap();
        // The trees as native code (where the host allows it; the switch
        // test says when it does not) and as tables.
        let tables = fast.clone().without_native();
        for data in &inputs {
            let want = interp.run_seccomp(&data.to_bytes()).unwrap();
            let got = [
                fast.eval(data),
                fast.eval_bytes(&data.to_bytes()),
                tables.eval(data),
                tables.eval_bytes(&data.to_bytes()),
            ];
            if got != [want; 4] {
                failures.push(format!(
                    "{name}: {data:x?}: fast {got:x?} (native, bytes, tables, bytes), interpreter {want:#x}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn allow306_is_a_constant_for_every_x86_64_number() {
    for name in ["allow306_default", "allow306_front", "allow306_middle", "allow306_end", "allow306_opt2"] {
        let fast = FastFilter::build(&load(name)).unwrap();
        let stats = fast.stats();
        assert_eq!(stats.residual_entries, 0, "{name}: {stats:?}");
        assert_eq!(stats.arches, 1, "{name}: {stats:?}");
        for nr in 0..470 {
            let want = if nr <= 305 { ALLOW } else { EPERM };
            assert_eq!(fast.entry(X86_64, nr), Entry::Action(want), "{name}: nr {nr}");
        }
        assert_eq!(fast.entry(X86_64, X32_BIT), Entry::Action(0), "{name}: x32");
        assert_eq!(fast.entry(X86_64, u32::MAX), Entry::Action(EPERM), "{name}: -1");
    }
}

#[test]
fn long_jumps_residuals_keep_only_argument_checks() {
    let prog = load("long_jumps_large");
    let fast = FastFilter::build(&prog).unwrap();
    for (nr, what) in [(12, "brk"), (3, "close")] {
        assert_eq!(fast.entry(X86_64, nr), Entry::Action(ALLOW), "{what}");
    }
    let Entry::Residual(chdir) = fast.entry(X86_64, 80) else { panic!("chdir is not a residual") };
    // No residual loads nr or arch: both are folded.
    let loads_nr_or_arch = |p: &Program| p.original().iter().any(|i| i.code == 0x20 && i.k < 8);
    assert!(!loads_nr_or_arch(chdir), "chdir residual still loads nr/arch");
    // Only chdir's 100 rules remain, not the other 100 syscalls' checks.
    assert!(chdir.len() < prog.len(), "chdir residual {} of {} insns", chdir.len(), prog.len());
    // The 100 syscalls with `A0 != 0` share one residual program.
    let mut shared: Vec<Vec<Insn>> = Vec::new();
    for nr in 0..470 {
        if let Entry::Residual(p) = fast.entry(X86_64, nr) {
            assert!(!loads_nr_or_arch(p), "nr {nr}");
            if !shared.contains(&p.original().to_vec()) {
                shared.push(p.original().to_vec());
            }
        }
    }
    assert!(shared.len() <= 3, "{} distinct residuals", shared.len());
    let stats = fast.stats();
    eprintln!("long_jumps_large: {stats:?}, chdir residual {} insns", chdir.len());
    assert!(stats.residual_entries + stats.switch_entries >= 99, "{stats:?}");
}

#[test]
fn chains_combine_as_the_kernel_does() {
    let names = ["allow306_default", "seed_fast", "long_jumps_large", "allow306_end"];
    let progs: Vec<Program> = names.iter().map(|n| load(n)).collect();
    let interps: Vec<Interp> = progs.iter().map(Interp::new).collect();
    let inputs = sweep();
    let mut failures = Vec::new();
    // Every stack of 1..=3 of these filters, newest first.
    let mut stacks: Vec<Vec<usize>> = Vec::new();
    for a in 0..names.len() {
        stacks.push(vec![a]);
        for b in 0..names.len() {
            stacks.push(vec![a, b]);
            stacks.push(vec![a, b, (a + b + 1) % names.len()]);
        }
    }
    for stack in &stacks {
        let chain = FastStack::build(&stack.iter().map(|&i| progs[i].clone()).collect::<Vec<_>>()).unwrap();
        for data in &inputs {
            let want = combine(stack.iter().map(|&i| interps[i].run_seccomp(&data.to_bytes()).unwrap()));
            let got = chain.eval(data);
            if got != want {
                let stack: Vec<&str> = stack.iter().map(|&i| names[i]).collect();
                failures.push(format!("{stack:?}: {data:x?}: fast chain {got:#x}, interpreters {want:#x}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    // seed_fast over allow306: getppid is ALLOW in both, the rest mostly
    // constant kills or errnos: one lookup answers.
    let chain = FastStack::build(&[progs[1].clone(), progs[0].clone()]).unwrap();
    assert!(chain.constant_entries() >= 470, "{}", chain.constant_entries());
    assert_eq!(FastStack::build(&[]).unwrap().eval(&SeccompData::default()), 0x8000_0000);
}

#[test]
fn tables_cover_the_arches_the_analysis_finds() {
    for name in filter_names() {
        let prog = load(&name);
        let fast = FastFilter::build(&prog).unwrap();
        let mut arches: Vec<u32> = fast.arches().collect();
        arches.sort_unstable();
        assert_eq!(arches, seccomp::analysis::compared_arches(&prog).unwrap(), "{name}");
        // Every number the filter compares nr with has an entry that is not
        // the arch-wide fallback, so it is answered by one lookup when
        // constant.
        for arch in arches {
            for nr in seccomp::analysis::compared_nrs(&prog, arch).unwrap() {
                let data = SeccompData { nr: nr as i32, arch, ..SeccompData::default() };
                let want = Interp::new(&prog).run_seccomp(&data.to_bytes()).unwrap();
                match fast.entry(arch, nr) {
                    Entry::Action(v) => assert_eq!(v, want, "{name}: nr {nr:#x}"),
                    Entry::Residual(p) => assert!(p.len() < prog.len(), "{name}: nr {nr:#x} runs the whole filter"),
                }
            }
        }
    }
}

#[test]
fn socket_filters_are_refused() {
    let prog = validate(&[Insn::stmt(0x06, 0xffff)], Mode::Socket).unwrap();
    assert!(FastFilter::build(&prog).is_err());
}

/// `data` with the `struct seccomp_data` word at byte `offset` set to `v`
/// (host byte order, as `ld [offset]` reads it).
fn with_word(mut data: SeccompData, offset: u32, v: u32) -> SeccompData {
    let set = |w: &mut u64| {
        let mut b = w.to_ne_bytes();
        let at = (offset % 8) as usize;
        b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        *w = u64::from_ne_bytes(b);
    };
    match offset / 4 {
        0 => data.nr = v as i32,
        1 => data.arch = v,
        2 | 3 => set(&mut data.instruction_pointer),
        w => set(&mut data.args[(w as usize - 4) / 2]),
    }
    data
}

/// Every entry whose residual is a tree, on the values around each run
/// start of its first switch (the masked word at `s - 1`, `s`, `s + 1`,
/// with the bits outside the mask clear and set) over a few argument sets:
/// the same as the interpreter, with the switches run as native code and
/// walked as tables.
#[test]
fn switch_dispatch_matches_the_interpreter_around_every_run_start() {
    const TEST: &str = "switch_dispatch_matches_the_interpreter_around_every_run_start";
    let mut native_filters = 0usize;
    let bases: [[u64; 6]; 4] =
        [[0; 6], [0, 1, 0, 0, 0, 0], [42, 1, 7, 0, 0, 0], [u64::MAX, 0, 0x7fff_ffff_ffff_ffff, 1, 2, 3]];
    let mut failures = Vec::new();
    let mut switch_entries = 0usize;
    let mut checked = 0usize;
    for name in filter_names() {
        let prog = load(&name);
        let interp = Interp::new(&prog);
        let fast = FastFilter::build(&prog).unwrap();
        // The switches as native code (where the host allows it) and as
        // tables: both against the interpreter.
        if let Some(why) = fast.native_refusal() {
            test_data::require::missing(TEST, test_data::require::Need::Native, format!("{name}: {why}"));
        } else {
            assert_eq!(fast.stats().native_code_bytes > 0, fast.stats().switches > 0, "{name}: native code");
        }
        native_filters += usize::from(fast.stats().native_code_bytes > 0);
        let tables = fast.clone().without_native();
        let mut seen: Vec<&Program> = Vec::new();
        for arch in fast.arches().collect::<Vec<_>>() {
            for nr in (0..1024).chain(seccomp::analysis::compared_nrs(&prog, arch).unwrap()) {
                let Some((offset, mask, starts)) = fast.switch(arch, nr) else { continue };
                switch_entries += 1;
                // Entries sharing a residual share its tree: check one.
                let Entry::Residual(residual) = fast.entry(arch, nr) else { panic!("{name}: switch of a constant") };
                if seen.iter().any(|&p| std::ptr::eq(p, residual)) {
                    continue;
                }
                seen.push(residual);
                assert!((8..64).contains(&offset) && offset % 4 == 0, "{name}: switch offset {offset}");
                assert!(starts.first() == Some(&0), "{name}: runs do not start at 0");
                assert!(starts.windows(2).all(|w| w[0] < w[1]), "{name}: starts not ascending");
                for args in bases {
                    let base = SeccompData { nr: nr as i32, arch, instruction_pointer: 0x7f00_0000_1000, args };
                    for &s in starts {
                        for v in [s.wrapping_sub(1), s, s.wrapping_add(1)] {
                            for word in [v & mask, v | !mask] {
                                let data = with_word(base, offset, word);
                                checked += 1;
                                let want = interp.run_seccomp(&data.to_bytes()).unwrap();
                                let (got, got_bytes) = (fast.eval(&data), fast.eval_bytes(&data.to_bytes()));
                                let (walked, walked_bytes) = (tables.eval(&data), tables.eval_bytes(&data.to_bytes()));
                                if [got, got_bytes, walked, walked_bytes] != [want; 4] {
                                    failures.push(format!(
                                        "{name}: {data:x?}: fast {got:#x} (bytes {got_bytes:#x}, tables {walked:#x} / \
                                         {walked_bytes:#x}), interpreter {want:#x}"
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("{switch_entries} entries with trees, {checked} inputs, {native_filters} filters with native trees");
    // chdir and the A0 != 0 rules of both long_jumps_large filters, the
    // sandboxes' argument rules.
    assert!(switch_entries >= 100, "only {switch_entries} entries with trees");
    assert!(checked >= 2_000, "only {checked} inputs");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// long_jumps' chdir rules `chdir(A0 == i, A1 != 0, A2 < SSIZE_MAX)` are a
/// tree: every chdir call ends in a constant, the 100 values of A0 one run
/// of args[0]'s low word, never the 1100 instructions of the chdir residual.
#[test]
fn long_jumps_chdir_is_a_tree_of_constants() {
    for name in ["long_jumps_large", "long_jumps_large_opt2"] {
        let prog = load(name);
        let fast = FastFilter::build(&prog).unwrap();
        let interp = Interp::new(&prog);
        assert!(fast.switch(X86_64, 80).is_some(), "{name}: chdir is no tree");
        let Entry::Residual(whole) = fast.entry(X86_64, 80) else { panic!("{name}: chdir is constant") };
        assert!(whole.len() > 1000, "{name}: {}", whole.len());
        for a0 in [0u64, 1, 42, 99, 100, 1 << 32, u64::MAX] {
            for a1 in [0u64, 1, 1 << 32] {
                for a2 in [0u64, 7, 0x7fff_ffff_ffff_fffe, 0x7fff_ffff_ffff_ffff, u64::MAX] {
                    let args = [a0, a1, a2, 0, 0, 0];
                    let data = SeccompData { nr: 80, arch: X86_64, instruction_pointer: 0, args };
                    let want = interp.run_seccomp(&data.to_bytes()).unwrap();
                    assert_eq!(fast.resolved_entry(&data), Entry::Action(want), "{name}: {args:x?}");
                }
            }
        }
        let stats = fast.stats();
        // chdir and the 98 other syscalls with `A0 != 0` run no residual.
        assert!(stats.switches >= 5 && stats.switch_entries >= 99, "{name}: {stats:?}");
        assert_eq!(stats.residual_entries, 0, "{name}: {stats:?}");
    }
}

fn x86_64_rules(rules: &[Insn]) -> Program {
    // ld [4]; jeq #x86_64, 0, kill; ld [0]; jeq #80, 0, allow; <rules>; allow; kill
    let len = 4 + rules.len() + 2;
    let mut insns = vec![
        Insn::stmt(0x20, 4),
        Insn::jump(0x15, X86_64, 0, (len - 3) as u8),
        Insn::stmt(0x20, 0),
        Insn::jump(0x15, 80, 0, (len - 5) as u8),
    ];
    insns.extend_from_slice(rules);
    insns.extend([Insn::stmt(0x06, ALLOW), Insn::stmt(0x06, 0)]);
    validate(&insns, Mode::Seccomp).unwrap()
}

/// `ld [16]; jeq #1 .. #6` returning errnos, then `tail`, falling through
/// to the filter's ALLOW (`tail` must end by falling through).
fn args0_rules(tail: &[Insn]) -> Vec<Insn> {
    let mut rules = vec![Insn::stmt(0x20, 16)];
    for k in 1..=6u32 {
        rules.push(Insn::jump(0x15, k, 0, 1));
        rules.push(Insn::stmt(0x06, 0x0005_0000 | k));
    }
    rules.extend_from_slice(tail);
    rules
}

fn check_against_interp(prog: &Program, fast: &FastFilter, what: &str) {
    let interp = Interp::new(prog);
    for v in (0..=10u32).chain([0x7f, 0x80, 0x81, u32::MAX]) {
        for hi in [0u64, 1] {
            let data = SeccompData {
                nr: 80,
                arch: X86_64,
                instruction_pointer: 0,
                args: [hi << 32 | u64::from(v), 0, 0, 0, 0, 0],
            };
            assert_eq!(fast.eval(&data), interp.run_seccomp(&data.to_bytes()).unwrap(), "{what}: {data:x?}");
        }
    }
}

#[test]
fn a_word_compared_with_constants_is_a_switch() {
    let lo = if cfg!(target_endian = "little") { 16 } else { 20 };
    for (what, tail) in [
        ("jeq only", Vec::new()),
        // ... ld [16]; jgt #0x80, 0, 1; ret ERRNO(99): runs, not just values
        ("jgt", vec![Insn::stmt(0x20, 16), Insn::jump(0x25, 0x80, 0, 1), Insn::stmt(0x06, 0x0005_0063)]),
    ] {
        let prog = x86_64_rules(&args0_rules(&tail));
        let fast = FastFilter::build(&prog).unwrap();
        let Some((offset, mask, starts)) = fast.switch(X86_64, 80) else { panic!("{what}: no switch") };
        assert_eq!((offset, mask), (lo, u32::MAX), "{what}");
        let mut want: Vec<u32> = (0..=7).collect();
        if what == "jgt" {
            want.push(0x81);
        }
        assert_eq!(starts, &want[..], "{what}");
        check_against_interp(&prog, &fast, what);
    }
}

/// A word tested with several masks (OpenSSH's `mmap` rule: no bit outside
/// PROT_READ|WRITE|EXEC, and not WRITE and EXEC together; a masked order
/// comparison beside a masked `jeq`) is one switch on the union of the
/// masks, found by fixing its bits: every value ends in a constant, the
/// interpreter's.
#[test]
fn a_word_tested_with_several_masks_is_a_switch_on_their_bits() {
    let lo = if cfg!(target_endian = "little") { 16 } else { 20 };
    // `ld [16]; and #mask; <jump>; ret ERRNO(errno)` per test: the jump
    // skips the ret when the test passes.
    let masked_test = |mask: u32, jump: Insn, errno: u32| {
        [Insn::stmt(0x20, 16), Insn::stmt(0x54, mask), jump, Insn::stmt(0x06, 0x0005_0000 | errno)]
    };
    let cases = [
        // prot & ~7 == 0, then prot & (WRITE|EXEC) != WRITE|EXEC.
        (
            "mmap prot",
            [masked_test(0xffff_fff8, Insn::jump(0x15, 0, 1, 0), 1), masked_test(6, Insn::jump(0x15, 6, 0, 1), 2)],
            0xffff_fffe,
        ),
        // A high byte of 0x12, then a low byte above 0x40.
        (
            "jgt beside jeq",
            [
                masked_test(0xff00, Insn::jump(0x15, 0x1200, 1, 0), 3),
                masked_test(0xff, Insn::jump(0x25, 0x40, 1, 0), 4),
            ],
            0xffff,
        ),
    ];
    for (what, tests, union) in cases {
        let prog = x86_64_rules(&tests.concat());
        let fast = FastFilter::build(&prog).unwrap();
        let Some((offset, mask, starts)) = fast.switch(X86_64, 80) else { panic!("{what}: no switch") };
        assert_eq!((offset, mask), (lo, union), "{what}");
        assert!(starts.len() >= 2, "{what}: {starts:x?}");
        let special = (0..=0x40).chain([0x1000, 0x1001, 0x1005, 0x1100, 0x1105, u32::MAX]);
        every_args0_value_ends_in_the_interpreters_constant(&prog, &fast, what, special);
    }
}

/// A word compared whole with `jeq` beside narrower masked tests
/// (Chromium's `clone`: the thread flags exactly, else cases of `flags &
/// (CLONE_VM | CLONE_THREAD)`): the `jeq` constants are runs of their own
/// on the whole word, every other value one child switched on the narrower
/// masks' bits. Every value ends in a constant, the interpreter's: no
/// residual leaf.
#[test]
fn whole_word_jeqs_beside_narrower_masks_are_peeled() {
    let lo = if cfg!(target_endian = "little") { 16 } else { 20 };
    let whole_jeq = |k: u32, ret: u32| [Insn::stmt(0x20, 16), Insn::jump(0x15, k, 0, 1), Insn::stmt(0x06, ret)];
    // `ld [16]; and #mask; jeq #k; ret ERRNO(errno)`: the errno when equal.
    let masked_eq = |mask: u32, k: u32, errno: u32| {
        [Insn::stmt(0x20, 16), Insn::stmt(0x54, mask), Insn::jump(0x15, k, 0, 1), Insn::stmt(0x06, 0x0005_0000 | errno)]
    };
    let otherwise = [Insn::stmt(0x06, 0x0005_0009)];
    let cases = [
        (
            "chromium clone",
            [&whole_jeq(0x3d_0f00, ALLOW)[..], &masked_eq(0x1_0100, 0, 1), &masked_eq(0x4100, 0x4100, 2), &otherwise]
                .concat(),
            vec![0, 0x3d_0f00, 0x3d_0f01],
        ),
        (
            "both ends",
            [&whole_jeq(0, 0x0005_0005)[..], &whole_jeq(u32::MAX, 0x0005_0006), &masked_eq(3, 1, 7), &otherwise]
                .concat(),
            vec![0, 1, u32::MAX],
        ),
    ];
    for (what, rules, want_starts) in cases {
        let prog = x86_64_rules(&rules);
        let fast = FastFilter::build(&prog).unwrap();
        let Some((offset, mask, starts)) = fast.switch(X86_64, 80) else { panic!("{what}: no switch") };
        assert_eq!((offset, mask, starts), (lo, u32::MAX, &want_starts[..]), "{what}");
        let around = want_starts.iter().flat_map(|&s| [s.wrapping_sub(1), s, s.wrapping_add(1)]);
        let special = (0..=0x20).chain([0x100, 0x4100, 0x1_0000, 0x1_0100, 0x3d_4f00, 0x3c_0f00]).chain(around);
        every_args0_value_ends_in_the_interpreters_constant(&prog, &fast, what, special);
    }
}

/// For `special` values of args[0]'s low word, every single bit set and
/// clear, and 2000 pseudo-random ones (nr 80 on x86_64): the tree ends in a
/// constant (no residual leaf), the interpreter's, and `eval_bytes` agrees.
fn every_args0_value_ends_in_the_interpreters_constant(
    prog: &Program,
    fast: &FastFilter,
    what: &str,
    special: impl Iterator<Item = u32>,
) {
    let interp = Interp::new(prog);
    let mut seed = 0x1234_5678_u32;
    let mut random = || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        seed
    };
    let bits = (0..32).flat_map(|i| [1u32 << i, !(1u32 << i)]);
    let values: Vec<u32> = special.chain(bits).chain((0..2000).map(|_| random())).collect();
    for v in values {
        let data = SeccompData { nr: 80, arch: X86_64, instruction_pointer: 0, args: [u64::from(v), 0, 0, 0, 0, 0] };
        let want = interp.run_seccomp(&data.to_bytes()).unwrap();
        assert_eq!(fast.resolved_entry(&data), Entry::Action(want), "{what}: {v:#x}");
        assert_eq!(fast.eval_bytes(&data.to_bytes()), want, "{what}: {v:#x}");
    }
}

/// A word returned with `ret a` is no switch: the residual runs.
#[test]
fn a_word_returned_is_not_a_switch() {
    // ... ld [16]; jeq #0x80, 0, 1; ret ALLOW; ld [16]; ret a — the last
    // rule ends the program, so the filter's own ALLOW is unreachable.
    let tail = vec![
        Insn::stmt(0x20, 16),
        Insn::jump(0x15, 0x80, 0, 1),
        Insn::stmt(0x06, ALLOW),
        Insn::stmt(0x20, 16),
        Insn::stmt(0x16, 0),
    ];
    let prog = x86_64_rules(&args0_rules(&tail));
    let fast = FastFilter::build(&prog).unwrap();
    assert_eq!(fast.switch(X86_64, 80), None);
    check_against_interp(&prog, &fast, "ret a");
}

/// A filter that never loads `arch` (seccomp_benchmark's `ld [16]; ret ALLOW`,
/// an nr-only allow-list) gets one table for every arch: constant entries,
/// and the interpreter's answer on arches it never names.
#[test]
fn arch_free_filters_share_one_table_for_every_arch() {
    let progs = [
        vec![Insn::stmt(0x20, 16), Insn::stmt(0x06, 0x7fff_0000)],
        vec![
            Insn::stmt(0x20, 0),
            Insn::jump(0x15, 39, 0, 1),
            Insn::stmt(0x06, 0x7fff_0000),
            Insn::stmt(0x06, 0x0005_0001),
        ],
    ];
    for insns in progs {
        let prog = validate(&insns, Mode::Seccomp).unwrap();
        let fast = FastFilter::build(&prog).unwrap();
        let interp = Interp::new(&prog);
        for arch in [0xc000_003e_u32, 0x4000_0003, 0xc000_00b7, 0x1234_5678] {
            for nr in [0, 38, 39, 40, 500, 0x4000_0027, u32::MAX] {
                let data = SeccompData { nr: nr as i32, arch, instruction_pointer: 7, args: [1, 2, 3, 4, 5, 6] };
                let want = interp.run_seccomp(&data.to_bytes()).unwrap();
                assert_eq!(fast.eval(&data), want, "arch {arch:#x} nr {nr}");
                if nr < 64 {
                    assert!(
                        matches!(fast.entry(arch, nr), Entry::Action(_)),
                        "arch {arch:#x} nr {nr} should be a constant"
                    );
                }
            }
        }
    }
}

/// The kernel's `check_load_and_stores()` lets the state before a `ret` flow
/// into the next instruction (SPEC §2.3). Here the unreachable `ja` at 7
/// resets it in the original; the residual for an unknown `nr` drops that
/// `ja`, so `ret a` (whose block never stores `M[k]`) directly precedes the
/// `ldx M[k]` block, and without a repair the kernel's check rejects a
/// residual whose every path stores first (fuzz regression
/// `fast_equiv/arch_free_residual_fails_validation`).
#[test]
fn residuals_keep_the_kernels_load_store_verdict_after_a_ret() {
    // The first, a middle and the last scratch word: the repair stores
    // the word it is about.
    for k in [0, 5, 15] {
        let insns = [
            Insn::stmt(0x20, 0),         // 0: ld [0]
            Insn::jump(0x25, 8, 3, 0),   // 1: jgt #8, 5, 2
            Insn::stmt(0x02, k),         // 2: st M[k]
            Insn::jump(0x25, 100, 4, 0), // 3: jgt #100, 8, 4
            Insn::stmt(0x06, 1),         // 4: ret #1
            Insn::stmt(0x20, 16),        // 5: ld [16]
            Insn::stmt(0x16, 0),         // 6: ret a
            Insn::stmt(0x05, 3),         // 7: ja 11 (unreachable)
            Insn::stmt(0x61, k),         // 8: ldx M[k]
            Insn::stmt(0x87, 0),         // 9: txa
            Insn::stmt(0x16, 0),         // 10: ret a
            Insn::stmt(0x06, 2),         // 11: ret #2
        ];
        let prog = validate(&insns, Mode::Seccomp).unwrap();
        let fast = FastFilter::build(&prog).unwrap();
        assert_eq!(fast.stats().whole_filter_entries, 0, "M[{k}]: {:?}", fast.stats());
        check_against_interp(&prog, &fast, "ret fall-through");
        let interp = Interp::new(&prog);
        for nr in [0u32, 7, 8, 9, 100, 101, 5000, 0x4000_0000, u32::MAX] {
            let data = SeccompData { nr: nr as i32, arch: X86_64, instruction_pointer: 0x77, args: [0; 6] };
            assert_eq!(fast.eval(&data), interp.run_seccomp(&data.to_bytes()).unwrap(), "M[{k}] nr {nr}");
        }
    }
}

/// A stack's combined table holds the numbers past the dense part that a
/// filter compares (x32 numbers) with their own answers, and the stack
/// keeps its filters, newest first.
#[test]
fn a_stack_answers_numbers_past_its_dense_part() {
    let filter = |x32: u32, hit: u32, other: u32| {
        let insns = [
            Insn::stmt(0x20, 4),
            Insn::jump(0x15, X86_64, 1, 0),
            Insn::stmt(0x06, 0),
            Insn::stmt(0x20, 0),
            Insn::jump(0x35, 0x4000_0000, 0, 3), // below the x32 numbers: `other`
            Insn::jump(0x35, x32, 0, 1),
            Insn::jump(0x35, x32 + 1, 0, 2), // exactly `x32`: `hit`
            Insn::stmt(0x06, EPERM),
            Insn::stmt(0x06, other),
            Insn::stmt(0x06, hit),
        ];
        validate(&insns, Mode::Seccomp).unwrap()
    };
    let (newer, older) = (filter(X32_BIT | 2, 0x0005_0002, ALLOW), filter(X32_BIT | 7, 0x0005_0007, ALLOW));
    let stack = FastStack::build(&[newer.clone(), older.clone()]).unwrap();
    assert_eq!(stack.filters().len(), 2);
    let interps = [Interp::new(&newer), Interp::new(&older)];
    for nr in [
        0,
        1,
        2,
        7,
        600,
        X32_BIT - 1,
        X32_BIT,
        X32_BIT | 1,
        X32_BIT | 2,
        X32_BIT | 3,
        X32_BIT | 7,
        X32_BIT | 8,
        u32::MAX,
    ] {
        let data = SeccompData { nr: nr as i32, arch: X86_64, ..Default::default() };
        let want = combine(interps.iter().map(|i| i.run_seccomp(&data.to_bytes()).unwrap()));
        assert_eq!(stack.eval(&data), want, "nr {nr:#x}");
    }
}
