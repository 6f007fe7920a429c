#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The dedicated executor for converted seccomp filters
//! (`ebpf::exec::seccomp`) against the general interpreter
//! (`LoadOptions::no_superinstructions` forces the general path): same
//! result and same executed-instruction count on every converted
//! testdata/filters vector and on random converted programs with random
//! `struct seccomp_data`; programs outside the subset fall back.

use ebpf::{ExecError, Helpers, Input, Insn, LoadOptions, Program, Vm};
use test_kit::corpus::{self, Filter};
use test_kit::SplitMix64;

const PLAIN: LoadOptions = LoadOptions { strict: false, no_superinstructions: true };

/// Runs `data` through the executor (counting, uncounted, chosen once as a
/// `SeccompRunner`, and `run` with a 64-byte context) and the general
/// interpreter; describes any difference in result or executed count (the
/// uncounted variant leaves `Vm::executed` as it was).
fn compare(fast: &Program, plain: &Program, data: &[u8; 64]) -> Option<String> {
    let (mut a, mut b) = (Vm::new(), Vm::new());
    let ra = a.run_seccomp(fast, data);
    let sa = a.executed();
    let ru = a.run_seccomp_uncounted(fast, data);
    let su = a.executed();
    let rc = a.run(fast, Input::Ctx(data));
    let sc = a.executed();
    let rr = a.seccomp_runner(fast).map(|runner| runner.run(data));
    let rb = b.run_seccomp(plain, data);
    let sb = b.executed();
    let same = ra == rb
        && ru == rb
        && rr.as_ref().is_none_or(|rr| *rr == rb)
        && rr.is_some() == fast.has_seccomp_executor()
        && sa == sb
        && su == sa
        && rc == rb.clone().map(u64::from)
        && (rb.is_err() || sc == sb);
    (!same).then(|| {
        format!(
            "executor {ra:?} ({sa} steps), uncounted {ru:?} (then {su} steps), runner {rr:?}, run {rc:?} ({sc} steps), \
             general {rb:?} ({sb} steps)"
        )
    })
}

fn converted(prog: &cbpf::Program) -> Vec<Insn> {
    convert::convert(prog, &Default::default()).unwrap().insns
}

#[test]
fn executor_matches_the_general_interpreter_on_every_filter_vector() {
    let filters = corpus::filters().unwrap();
    let (mut failures, mut runs) = (Vec::new(), 0);
    for filter in &filters {
        let name = &filter.name;
        let insns = converted(&filter.program);
        let fast = Program::load(&insns, &LoadOptions::default(), &Helpers::new()).unwrap();
        let plain = Program::load(&insns, &PLAIN, &Helpers::new()).unwrap();
        if !fast.has_seccomp_executor() {
            failures.push(format!("{name}: not compiled for the seccomp executor"));
        }
        assert!(!plain.has_seccomp_executor());
        for v in filter.vectors().unwrap() {
            runs += 1;
            if let Some(diff) = compare(&fast, &plain, &v.data.to_bytes()) {
                failures.push(format!("{name} ({:?}) line {}: {diff}", v.source, v.line));
            }
        }
    }
    println!("{} filters, {runs} vectors", filters.len());
    assert!(runs > 1000, "too few vectors: {runs}");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// A random `struct seccomp_data`: each word random, small, or one of the
/// program's constants (give or take one), so compares go both ways.
fn random_data(rng: &mut SplitMix64, consts: &[u32]) -> [u8; 64] {
    let mut d = [0u8; 64];
    for w in d.chunks_exact_mut(4) {
        let r = rng.next_u64();
        let v = match r % 4 {
            0 => (r >> 32) as u32,
            1 => (r >> 32) as u32 % 4,
            _ if consts.is_empty() => 0,
            _ => consts[(r >> 8) as usize % consts.len()].wrapping_add(((r >> 40) % 3) as u32).wrapping_sub(1),
        };
        w.copy_from_slice(&v.to_le_bytes());
    }
    d
}

#[test]
fn executor_matches_the_general_interpreter_on_random_converted_programs() {
    let mut rng = SplitMix64::new(0x5ecc_0e7e);
    let (mut failures, mut compiled, mut runs) = (Vec::new(), 0, 0);
    const PROGRAMS: usize = 3000;
    for case in 0..PROGRAMS {
        let prog = test_kit::gen::seeded(rng.next_u64(), cbpf::Mode::Seccomp).unwrap().program;
        let classic = prog.original();
        let insns = convert::convert(&prog, &Default::default()).unwrap().insns;
        let fast = Program::load(&insns, &LoadOptions::default(), &Helpers::new()).unwrap();
        let plain = Program::load(&insns, &PLAIN, &Helpers::new()).unwrap();
        compiled += usize::from(fast.has_seccomp_executor());
        let consts: Vec<u32> = classic.iter().map(|i| i.k).collect();
        for _ in 0..16 {
            runs += 1;
            let data = random_data(&mut rng, &consts);
            if let Some(diff) = compare(&fast, &plain, &data) {
                failures.push(format!(
                    "program {case} ({}), data {data:02x?}: {diff}",
                    cbpf::text::print_ddd_line(classic)
                ));
            }
        }
    }
    println!("{PROGRAMS} programs ({compiled} on the seccomp executor), {runs} runs");
    // Every converted seccomp program is in the subset.
    assert_eq!(compiled, PROGRAMS);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}

fn load(insns: &[Insn]) -> Program {
    Program::load(insns, &LoadOptions::default(), &Helpers::new()).unwrap()
}

#[test]
fn programs_outside_the_subset_fall_back_to_the_general_interpreter() {
    let mut data = [0u8; 64];
    data[0] = 7;
    let head = [i(0xac, 0, 0, 0, 0), i(0xac, 7, 7, 0, 0), i(0xbf, 6, 1, 0, 0)];
    let with = |body: &[Insn]| -> Vec<Insn> { head.iter().chain(body).copied().collect() };
    // In the subset: ctx load, stack store then load, compare, exit.
    let inside = with(&[
        i(0x61, 0, 6, 60, 0),
        i(0x63, 10, 0, -64, 0),
        i(0x61, 7, 10, -64, 0),
        i(0x61, 0, 6, 0, 0),
        i(0x1d, 0, 7, 1, 0),
        i(0x95, 0, 0, 0, 0),
        i(0xb4, 0, 0, 0, 9),
        i(0x95, 0, 0, 0, 0),
    ]);
    assert!(load(&inside).has_seccomp_executor());
    let outside: [(&str, Vec<Insn>, Result<u32, ()>); 8] = [
        // if r0 != 0 goto exit; w0 += 1; goto back (r0 = 1 after one turn).
        (
            "backward jump",
            with(&[
                i(0x61, 0, 6, 0, 0),
                i(0x55, 0, 0, 2, 0),
                i(0x04, 0, 0, 0, 1),
                i(0x05, 0, 0, -3, 0),
                i(0x95, 0, 0, 0, 0),
            ]),
            Ok(7),
        ),
        ("load from r6 + 64", with(&[i(0x61, 0, 6, 64, 0), i(0x95, 0, 0, 0, 0)]), Err(())),
        ("unaligned ctx load", with(&[i(0x61, 0, 6, 2, 0), i(0x95, 0, 0, 0, 0)]), Ok(0)),
        ("ctx load before r6 = r1", vec![i(0x61, 0, 6, 0, 0), i(0x95, 0, 0, 0, 0)], Err(())),
        ("stack read before any write", with(&[i(0x61, 0, 10, -4, 0), i(0x95, 0, 0, 0, 0)]), Ok(0)),
        ("stack below fp-64", with(&[i(0x63, 10, 0, -68, 0), i(0x61, 0, 10, -68, 0), i(0x95, 0, 0, 0, 0)]), Ok(0)),
        ("64-bit alu", with(&[i(0x61, 0, 6, 0, 0), i(0x07, 0, 0, 0, 1), i(0x95, 0, 0, 0, 0)]), Ok(8)),
        ("register r3", with(&[i(0x61, 3, 6, 0, 0), i(0xbf, 0, 3, 0, 0), i(0x95, 0, 0, 0, 0)]), Ok(7)),
    ];
    let mut failures = Vec::new();
    for (name, insns, want) in outside {
        let prog = load(&insns);
        if prog.has_seccomp_executor() || Vm::new().seccomp_runner(&prog).is_some() {
            failures.push(format!("{name}: compiled for the seccomp executor"));
        }
        let got = Vm::new().run_seccomp(&prog, &data);
        if got.clone().map_err(|_| ()) != want {
            failures.push(format!("{name}: want {want:?}, got {got:?}"));
        }
    }
    // The last instruction is not exit (a run could fall off the end).
    let falls = with(&[i(0x61, 0, 6, 0, 0), i(0x15, 0, 0, 1, 7), i(0x95, 0, 0, 0, 0), i(0xb4, 0, 0, 0, 1)]);
    let prog = load(&falls);
    if prog.has_seccomp_executor() {
        failures.push("no final exit: compiled for the seccomp executor".into());
    }
    let got = Vm::new().run_seccomp(&prog, &data);
    if !matches!(got, Err(ExecError::FellOffEnd { .. })) {
        failures.push(format!("no final exit: want FellOffEnd, got {got:?}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A step budget below the program length sends runs to the general
/// interpreter, which enforces it exactly.
#[test]
fn small_step_budgets_use_the_general_interpreter() {
    let prog = load(&converted(&Filter::load("long_jumps_large").unwrap().program));
    assert!(prog.has_seccomp_executor());
    let mut data = [0u8; 64];
    data[0] = 80;
    data[4..8].copy_from_slice(&0xc000_003eu32.to_le_bytes());
    data[24] = 1;
    let mut vm = Vm::new();
    let want = vm.run_seccomp(&prog, &data).unwrap();
    let steps = vm.executed();
    vm.set_step_budget(steps);
    assert_eq!(vm.run_seccomp(&prog, &data), Ok(want));
    // The executor is chosen only where the budget covers every instruction.
    assert!(vm.seccomp_runner(&prog).is_none());
    vm.set_step_budget(prog.len() as u64);
    assert_eq!(vm.seccomp_runner(&prog).map(|r| r.run(&data)), Some(Ok(want)));
    vm.set_step_budget(steps - 1);
    assert!(matches!(vm.run_seccomp(&prog, &data), Err(ExecError::StepBudgetExceeded { .. })));
    assert!(matches!(vm.run(&prog, Input::Ctx(&data)), Err(ExecError::StepBudgetExceeded { .. })));
}

/// A 64-byte `Input::Ctx` goes through the executor; other lengths run on
/// the general interpreter with its bounds checks.
#[test]
fn run_with_other_context_lengths_uses_the_general_interpreter() {
    let prog = load(&[i(0xac, 0, 0, 0, 0), i(0xbf, 6, 1, 0, 0), i(0x61, 0, 6, 60, 0), i(0x95, 0, 0, 0, 0)]);
    assert!(prog.has_seccomp_executor());
    let mut data = [0u8; 64];
    data[60] = 5;
    let mut vm = Vm::new();
    assert_eq!(vm.run(&prog, Input::Ctx(&data)), Ok(5));
    assert_eq!(vm.executed(), 4);
    assert!(matches!(vm.run(&prog, Input::Ctx(&data[..62])), Err(ExecError::OutOfBounds { .. })));
    let mut longer = [0u8; 80];
    longer[60] = 6;
    assert_eq!(vm.run(&prog, Input::Ctx(&longer)), Ok(6));
}

/// `w0 = ctx[k]; w2 = K; if r0 <op> r2` (fused into one op) for every
/// condition, with and without the converter's prologue (which the executor
/// starts past), on values around K; plus a lone `w2 = K; if r0 == r2`
/// after a plain `==` (a one-element stretch left unfused): results and
/// step counts equal the general interpreter's.
#[test]
fn load_mov_compare_and_short_stretches_match_the_general_interpreter() {
    let head = [i(0xac, 0, 0, 0, 0), i(0xac, 7, 7, 0, 0), i(0xbf, 6, 1, 0, 0)];
    let big = 0x8000_0010u32;
    let mut failures = Vec::new();
    let mut cases = 0;
    for code in [0x1d, 0x5d, 0x2d, 0x3d, 0xad, 0xbd, 0x4d] {
        for prologue in [true, false] {
            let mut p: Vec<Insn> = if prologue { head.to_vec() } else { vec![i(0xbf, 6, 1, 0, 0)] };
            p.extend([
                i(0x61, 0, 6, 0, 0),
                i(0xb4, 2, 0, 0, big as i32),
                i(code, 0, 2, 5, 0),
                i(0x15, 0, 0, 2, 7),
                i(0xb4, 2, 0, 0, 9),
                i(0x1d, 0, 2, 2, 0),
                i(0xbc, 0, 2, 0, 0), // w0 = w2: TMP's value is observable
                i(0x95, 0, 0, 0, 0),
                i(0xb4, 0, 0, 0, 0x7fff_0000),
                i(0x95, 0, 0, 0, 0),
            ]);
            let fast = load(&p);
            let plain = Program::load(&p, &PLAIN, &Helpers::new()).unwrap();
            assert!(fast.has_seccomp_executor(), "{code:#x}: not on the executor");
            for nr in [0, 7, 9, big - 1, big, big + 1, u32::MAX] {
                cases += 1;
                let mut data = [0u8; 64];
                data[0..4].copy_from_slice(&nr.to_le_bytes());
                if let Some(diff) = compare(&fast, &plain, &data) {
                    failures.push(format!("{code:#x} prologue {prologue} nr {nr:#x}: {diff}"));
                }
            }
        }
    }
    assert_eq!(cases, 98);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// [`compare`] of `p` on each named input (the executor must take it).
fn differences_on(name: &str, p: &[Insn], datas: &[(String, [u8; 64])]) -> Vec<String> {
    let fast = load(p);
    let plain = Program::load(p, &PLAIN, &Helpers::new()).unwrap();
    assert!(fast.has_seccomp_executor(), "{name}: not on the executor");
    datas.iter().filter_map(|(what, d)| compare(&fast, &plain, d).map(|diff| format!("{what}: {diff}"))).collect()
}

/// Both executor variants against the general interpreter on every
/// converted testdata/filters program (binary-search trees, ladders,
/// long jumps) and on random converted programs: on inputs whose
/// words are the programs' constants give or take one (so compares
/// go both ways), zero, and random.
#[test]
fn both_variants_match_the_general_interpreter_on_converted_programs() {
    let mut rng = test_kit::SplitMix64::new(0xe5_9eed);
    let inputs = |rng: &mut test_kit::SplitMix64, consts: &[u32]| -> Vec<(String, [u8; 64])> {
        (0..48)
            .map(|_| {
                let mut d = [0u8; 64];
                for w in d.chunks_exact_mut(4) {
                    let r = rng.next_u64();
                    let v = match r % 4 {
                        0 => (r >> 32) as u32,
                        1 => 0,
                        _ if consts.is_empty() => 1,
                        _ => {
                            consts[(r >> 8) as usize % consts.len()].wrapping_add((r >> 40) as u32 % 3).wrapping_sub(1)
                        }
                    };
                    w.copy_from_slice(&v.to_le_bytes());
                }
                (format!("{d:02x?}"), d)
            })
            .collect()
    };
    let mut failures = Vec::new();
    let mut programs = 0;
    for filter in corpus::filters().unwrap() {
        let consts: Vec<u32> = filter.insns.iter().map(|i| i.k).collect();
        failures.extend(differences_on(&filter.name, &converted(&filter.program), &inputs(&mut rng, &consts)));
        programs += 1;
    }
    assert!(programs >= 8, "too few filters: {programs}");
    for case in 0..400 {
        let prog = test_kit::gen::seeded(rng.next_u64(), cbpf::Mode::Seccomp).unwrap().program;
        let consts: Vec<u32> = prog.original().iter().map(|i| i.k).collect();
        failures.extend(differences_on(&format!("random {case}"), &converted(&prog), &inputs(&mut rng, &consts)));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Reloads of words a `jeq` settled (`test_data::programs::known_words`),
/// converted: the uncounted runs take jumps threaded past them
/// (`chain::known`), the counted ones keep the written jumps; both match
/// the general interpreter, results and counts, on every input whose two
/// words are below 4 (every path the constants tell apart).
#[test]
fn threaded_jumps_match_the_general_interpreter_on_known_word_programs() {
    let mut rng = test_data::rng::Rng(0x4b1d_2c3e_5f60_7182);
    let mut failures = Vec::new();
    for case in 0..20000 {
        let raw: Vec<cbpf::Insn> = test_data::programs::known_words(&mut rng)
            .into_iter()
            .map(|r| cbpf::Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k })
            .collect();
        let prog = cbpf::validate(&raw, cbpf::Mode::Seccomp).unwrap();
        let datas: Vec<(String, [u8; 64])> = (0..16u32)
            .map(|i| {
                let mut d = [0u8; 64];
                d[0..4].copy_from_slice(&(i % 4).to_le_bytes());
                d[4..8].copy_from_slice(&(i / 4).to_le_bytes());
                (format!("case {case} nr {} arch {}: {}", i % 4, i / 4, cbpf::text::print_ddd_line(&raw)), d)
            })
            .collect();
        failures.extend(differences_on(&format!("case {case}"), &converted(&prog), &datas));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
