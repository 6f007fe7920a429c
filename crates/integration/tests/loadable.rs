#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The loadable form of a conversion (`convert::loadable`) against the
//! kernel-exact one, and against the running kernel's verifier and JIT.
//!
//! In process (no privilege needed):
//! - every seccomp filter of testdata (testdata/filters, testdata/profiles)
//!   on every vector: both forms on our general interpreter (the loadable
//!   one loaded strict about reserved fields) return the expected value in
//!   the same number of steps. Generated programs on their branch inputs
//!   (`oracle_props.rs`) and the converter filetests' runs check the
//!   loadable form through the oracle, whose `loadable` engine holds it to
//!   the same promise;
//! - the rewrite is local, checked op by op on those filters and on
//!   generated programs of every reach (long ones included): each kept
//!   instruction is its converted instruction (a self-xor as `w = 0`, a
//!   jump re-targeted to the image of its target), and the dropped ones
//!   are exactly the groups of the classic instructions no path reaches.
//!
//! Against the running kernel (without `bpf(2)`, `test_data::require`'s
//! visible skip; a failure under `CI=true`):
//! - every filter's loadable form behind the XDP harness is accepted by
//!   the verifier and answers every vector as expected, the big-endian
//!   s390x export included; generated programs answer their branch inputs
//!   as the classic interpreter does;
//! - each rewrite is needed: undone, the verifier refuses with its reason;
//! - the filter's 32-bit value comes back whole (XDP actions or not).

use cbpf::{Interp, Mode, Program, SeccompData};
use convert::loadable::{loadable, xdp, Loadable};
use convert::{convert, Converted, Options};
use ebpf::op::{AluOp, Op, Operand};
use engine::kernel_jit::KernelJit;
use test_kit::corpus;

/// A seccomp filter of testdata with its vectors `(input, expected)`.
struct Case {
    name: String,
    program: Program,
    vectors: Vec<(SeccompData, u32)>,
}

fn vectors_of(path: &std::path::Path) -> Vec<(SeccompData, u32)> {
    let text = std::fs::read_to_string(path).unwrap();
    engine::vectors::parse(&text).unwrap().into_iter().map(|v| (v.data, v.action.unwrap())).collect()
}

/// Every seccomp filter of testdata with vectors: testdata/filters (kernel
/// and simulator vectors), the Docker-sized pair and the s390x export.
fn cases() -> Vec<Case> {
    let mut out: Vec<Case> = corpus::filters()
        .unwrap()
        .into_iter()
        .map(|f| {
            let vectors = f.vectors().unwrap().into_iter().map(|v| (v.data, v.action)).collect();
            Case { name: f.name, program: f.program, vectors }
        })
        .collect();
    let profiles = corpus::testdata().join("profiles");
    let docker = vectors_of(&profiles.join("docker_like.vectors.jsonl"));
    for (name, endian, vectors) in [
        ("docker_like", cbpf::raw::Endian::Little, docker.clone()),
        ("docker_like_opt2", cbpf::raw::Endian::Little, docker),
        ("s390x", cbpf::raw::Endian::Big, vectors_of(&profiles.join("s390x.vectors.jsonl"))),
    ] {
        let bytes = std::fs::read(profiles.join(format!("{name}.bpf"))).unwrap();
        let insns = cbpf::raw::decode_endian(&bytes, endian).unwrap();
        out.push(Case { name: name.to_string(), program: cbpf::validate(&insns, Mode::Seccomp).unwrap(), vectors });
    }
    assert!(out.len() >= 16, "testdata missing: {} filters", out.len());
    out
}

fn conversion(program: &Program) -> (Converted, Loadable) {
    let converted = convert(program, &Options::kernel()).unwrap();
    let l = loadable(&converted, Mode::Seccomp).unwrap();
    (converted, l)
}

/// Both forms on our general interpreter (no superinstructions; the
/// loadable one loaded strict: no reserved field set): the same value,
/// the expected one, in the same number of steps, on every vector.
#[test]
fn every_vector_gives_the_same_value_on_both_forms() {
    let mut failures = Vec::new();
    let mut runs = 0usize;
    let helpers = convert::socket_ctx::socket_helpers();
    let mut vm = ebpf::Vm::new();
    for case in cases() {
        let (converted, l) = conversion(&case.program);
        let general = ebpf::LoadOptions { no_superinstructions: true, ..ebpf::LoadOptions::default() };
        let strict = ebpf::LoadOptions { strict: true, ..general };
        let before = ebpf::Program::load(&converted.insns, &general, &helpers).unwrap();
        let after = ebpf::Program::load(&l.insns, &strict, &helpers).unwrap();
        for (data, want) in &case.vectors {
            runs += 1;
            // Vectors are written as numbers; the filter reads them as its
            // arch's kernel lays them out.
            let bytes = data.in_kernel_order().to_bytes();
            let a = vm.run_seccomp(&before, &bytes).map(|r| (r, vm.executed()));
            let b = vm.run_seccomp(&after, &bytes).map(|r| (r, vm.executed()));
            if a != b || a.as_ref().map(|r| r.0) != Ok(*want) {
                failures.push(format!("{}: {data:?}: converted {a:?}, loadable {b:?}, expected {want:#x}", case.name));
            }
        }
    }
    assert!(runs > 25_000, "only {runs} runs");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// Classic instructions some path from the first one reaches (both sides
/// of every conditional jump): the classic graph, walked independently of
/// the rewrite's walk over eBPF instructions.
fn classic_reached(program: &Program) -> Vec<bool> {
    let insns = program.insns();
    let mut seen = vec![false; insns.len()];
    seen[0] = true;
    for pc in 0..insns.len() {
        if !seen[pc] {
            continue;
        }
        let next: Vec<usize> = match insns[pc].op() {
            Some(cbpf::Op::Ja { k }) => vec![pc + 1 + k as usize],
            Some(cbpf::Op::Jmp { jt, jf, .. }) => vec![pc + 1 + jt as usize, pc + 1 + jf as usize],
            Some(cbpf::Op::RetK { .. } | cbpf::Op::RetA) => vec![],
            _ => vec![pc + 1],
        };
        for n in next {
            seen[n] = true;
        }
    }
    seen
}

/// What `convert::loadable` promises, checked op by op: `Err` names the
/// first broken promise.
fn corresponds(program: &Program, converted: &Converted, l: &Loadable) -> Result<(), String> {
    let map = &l.pc_map;
    let reached = classic_reached(program);
    let mut kept = 0;
    for (epc, &insn) in converted.insns.iter().enumerate() {
        let classic = converted.pc_map.classic_pc(ebpf::Pc(epc));
        // The prologue is always kept; a classic instruction's group is kept
        // exactly when some path reaches it (a seccomp group has no
        // internal dead code).
        let want_kept = classic.is_none_or(|pc| reached[pc.0]);
        let Some(lpc) = map.loadable_pc(ebpf::Pc(epc)) else {
            if want_kept {
                return Err(format!("converted insn {epc} (classic {classic:?}) was dropped but is reached"));
            }
            continue;
        };
        if !want_kept {
            return Err(format!("converted insn {epc} (classic {classic:?}) is unreachable but was kept"));
        }
        if lpc.0 != kept || map.converted_pc(lpc) != Some(ebpf::Pc(epc)) || map.classic_pc(lpc) != classic {
            return Err(format!("converted insn {epc}: loadable pc {lpc:?}, expected {kept}"));
        }
        kept += 1;
        let before = Op::decode(insn, None).map_err(|e| format!("converted insn {epc}: {e}"))?;
        let after_insn = l.insns[lpc.0];
        let after = Op::decode(after_insn, None).map_err(|e| format!("loadable insn {}: {e}", lpc.0))?;
        if after.encode().first() != after_insn {
            return Err(format!("loadable insn {}: {after_insn:?} has a reserved field set", lpc.0));
        }
        let same = match (before, after) {
            (
                Op::Alu { op: AluOp::Xor, dst, src: Operand::X(src), .. },
                Op::Alu { width: ebpf::op::Width::W32, op: AluOp::Mov, dst: d2, src: Operand::K(0) },
            ) => src == dst && d2 == dst,
            (Op::Ja { off: a }, Op::Ja { off: b }) => lands(map, epc, a, lpc.0, b),
            (Op::Jmp { width, cond, dst, src, off: a }, Op::Jmp { width: w2, cond: c2, dst: d2, src: s2, off: b }) => {
                (width, cond, dst, src) == (w2, c2, d2, s2) && lands(map, epc, a, lpc.0, b)
            }
            (a, b) => a == b,
        };
        if !same {
            return Err(format!("converted insn {epc} {before:?} became {after:?} at {}", lpc.0));
        }
    }
    if kept != l.insns.len() || map.dropped() != converted.insns.len() - kept {
        return Err(format!("{kept} kept, {} loadable insns, {} dropped", l.insns.len(), map.dropped()));
    }
    for (pc, &reached) in reached.iter().enumerate() {
        let range = map.range(cbpf::Pc(pc)).unwrap();
        if range.is_empty() == reached {
            return Err(format!("classic insn {pc}: loadable range {range:?}, reached {reached}"));
        }
    }
    Ok(())
}

/// The converted jump at `epc` with offset `a` and the loadable one at
/// `lpc` with offset `b` land on the same instruction.
fn lands(map: &convert::loadable::LoadableMap, epc: usize, a: i16, lpc: usize, b: i16) -> bool {
    let target = (epc as i64 + 1 + i64::from(a)) as usize;
    map.loadable_pc(ebpf::Pc(target)) == Some(ebpf::Pc((lpc as i64 + 1 + i64::from(b)) as usize))
}

#[test]
fn the_rewrite_is_local_on_every_filter_and_generated_program() {
    let mut failures = Vec::new();
    let mut dropped = 0;
    let mut check = |name: &str, program: &Program| match convert(program, &Options::kernel()) {
        Ok(converted) => {
            let l = loadable(&converted, Mode::Seccomp).unwrap();
            dropped += l.pc_map.dropped();
            if let Err(e) = corresponds(program, &converted, &l) {
                failures.push(format!("{name}: {e}"));
            }
        }
        // Long generated programs may exceed the conversion's jump limit.
        Err(e) => assert!(name.starts_with("seed"), "{name}: {e}"),
    };
    for case in cases() {
        check(&case.name, &case.program);
    }
    for seed in 0..600u64 {
        let reach = if seed % 2 == 0 { test_kit::gen::Reach::KERNEL } else { test_kit::gen::Reach::FUZZ };
        let program = test_kit::gen::seeded_with(seed, Mode::Seccomp, &reach).unwrap().program;
        check(&format!("seed {seed}"), &program);
    }
    assert!(dropped > 0, "no program had unreachable code: the drop was never exercised");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// `Some(())` when this process can load and test-run XDP programs;
/// otherwise `test_data::require`'s skip (a failure under `CI=true`).
fn bpf_here(test: &str) -> Option<()> {
    test_data::require::have(test, test_data::require::Need::Bpf, kernel::bpf::available())
}

#[test]
fn the_verifier_accepts_every_filter_and_the_kernel_answers_every_vector() {
    let Some(()) = bpf_here("the_verifier_accepts_every_filter_and_the_kernel_answers_every_vector") else { return };
    let mut failures = Vec::new();
    let mut runs = 0usize;
    for case in cases() {
        let prepared = engine::Prepared::new(case.program.clone()).unwrap();
        let jit = match KernelJit::new(&prepared) {
            Ok(j) => j,
            Err(e) => {
                failures.push(format!("{}: {e}", case.name));
                continue;
            }
        };
        for (data, want) in &case.vectors {
            runs += 1;
            match jit.eval(data) {
                Ok(got) if got == *want => {}
                other => failures.push(format!("{}: {data:?}: got {other:?}, expected {want:#x}", case.name)),
            }
            if failures.len() > 20 {
                break;
            }
        }
    }
    assert!(runs > 25_000, "only {runs} runs");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn generated_programs_answer_as_the_classic_interpreter_in_the_kernel() {
    let Some(()) = bpf_here("generated_programs_answer_as_the_classic_interpreter_in_the_kernel") else { return };
    let mut failures = Vec::new();
    let (mut programs, mut runs) = (0, 0);
    for seed in 0..300u64 {
        let reach = if seed % 4 == 0 { test_kit::gen::Reach::KERNEL } else { test_kit::gen::Reach::FUZZ };
        let program = test_kit::gen::seeded_with(seed, Mode::Seccomp, &reach).unwrap().program;
        let Ok(prepared) = engine::Prepared::new(program.clone()) else { continue };
        let jit = match KernelJit::new(&prepared) {
            Ok(j) => j,
            Err(e) => {
                failures.push(format!("seed {seed}: {e}"));
                continue;
            }
        };
        programs += 1;
        let interp = Interp::new(&program);
        for data in test_kit::branch_inputs(&program) {
            runs += 1;
            let want = interp.run_seccomp(&data.to_bytes()).unwrap();
            match jit.eval_packet(&data.to_bytes()) {
                Ok(got) if got == want => {}
                other => {
                    failures.push(format!("seed {seed}: {data:?}: kernel {other:?}, classic {want:#x}"));
                    break;
                }
            }
        }
    }
    println!("{programs} generated programs, {runs} branch inputs through the kernel's JIT");
    assert!(programs > 250 && runs > 5_000, "{programs} programs, {runs} runs");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The verifier's reason for refusing `insns` behind the harness, or
/// `None` when it accepts them.
fn refusal(insns: Vec<ebpf::Insn>, like: &Loadable) -> Option<String> {
    let l = Loadable { insns, ..like.clone() };
    match kernel::bpf::Prog::load(kernel::bpf::ProgType::Xdp, &xdp::seccomp(&l)) {
        Ok(_) => None,
        Err(e) => Some(e.reason().unwrap_or("(no reason)").to_string()),
    }
}

/// `program`'s conversion with every rewrite but one: `undo` gets each
/// converted instruction and its rewritten form (`None` when dropped) and
/// returns what to load in its place.
fn all_but(
    program: &Program,
    undo: impl Fn(ebpf::Insn, Option<ebpf::Insn>) -> Option<ebpf::Insn>,
) -> (Vec<ebpf::Insn>, Loadable) {
    let (converted, l) = conversion(program);
    let insns = converted
        .insns
        .iter()
        .enumerate()
        .filter_map(|(epc, &c)| undo(c, l.pc_map.loadable_pc(ebpf::Pc(epc)).map(|lpc| l.insns[lpc.0])))
        .collect();
    (insns, l)
}

fn classic(text: &[(u16, u8, u8, u32)]) -> Program {
    let insns: Vec<cbpf::Insn> = text.iter().map(|&(code, jt, jf, k)| cbpf::Insn { code, jt, jf, k }).collect();
    cbpf::validate(&insns, Mode::Seccomp).unwrap()
}

/// Each rewrite is needed: undoing it alone, the verifier refuses the
/// program with the reason the module docs give (the running kernel's
/// words, `BpfError::reason`).
#[test]
fn each_rewrite_is_needed() {
    let Some(()) = bpf_here("each_rewrite_is_needed") else { return };
    let load = |name: &str| corpus::Filter::load(name).unwrap().program;
    for name in ["seed_slow", "sshd_like", "allow306_end"] {
        let (_, l) = conversion(&load(name));
        assert_eq!(refusal(l.insns.clone(), &l), None, "{name}");
    }
    // 1. The prologue's xors back: r0 is read before anything wrote it.
    let (mut insns, l) = all_but(&load("seed_slow"), |_, kept| kept);
    insns[0] = ebpf::Insn::new(0xac, 0, 0, 0, 0);
    assert_eq!(refusal(insns, &l).as_deref(), Some("R0 !read_ok"));
    // 2. The converter's junk fields back (jump offsets kept re-targeted,
    //    the xors kept as moves): sshd_like's `w0 &= -8` has src = r7; the
    //    X forms keep imm = k; neg keeps both.
    let junk_back = |c: ebpf::Insn, kept: Option<ebpf::Insn>| {
        kept.map(|k| if k.code == c.code { ebpf::Insn { regs: c.regs, imm: c.imm, ..k } } else { k })
    };
    let cases: [(Program, &str); 4] = [
        (load("sshd_like"), "BPF_ALU uses reserved fields"),
        (
            classic(&[(0x20, 0, 0, 16), (0x01, 0, 0, 5), (0x0c, 0, 0, 9), (0x16, 0, 0, 0)]),
            "BPF_ALU uses reserved fields",
        ),
        (classic(&[(0x20, 0, 0, 16), (0x84, 0, 0, 0x55), (0x16, 0, 0, 0)]), "BPF_NEG uses reserved fields"),
        (
            classic(&[(0x20, 0, 0, 16), (0x01, 0, 0, 5), (0x1d, 0, 1, 7), (0x06, 0, 0, 0), (0x06, 0, 0, 1)]),
            "BPF_JMP/JMP32 uses reserved fields",
        ),
    ];
    for (program, reason) in cases {
        let (insns, l) = all_but(&program, junk_back);
        assert_ne!(insns, l.insns, "{reason}: no junk to put back");
        assert_eq!(refusal(insns, &l).as_deref(), Some(reason));
    }
    // 3. Unreachable code kept: allow306_end's conversion with rewrites 1
    //    and 2 only (its jumps keep their offsets). The verifier names the
    //    first instruction we drop, at its pc behind the harness.
    let (insns, l) = all_but(&load("allow306_end"), |c, _| {
        Some(match Op::decode(c, None).unwrap() {
            Op::Alu { op: AluOp::Xor, dst, src: Operand::X(s), .. } if s == dst => ebpf::filter_h::mov32_imm(dst, 0),
            op => op.encode().first(),
        })
    });
    let first_dropped = (0..).find(|&i| l.pc_map.loadable_pc(ebpf::Pc(i)).is_none()).unwrap();
    assert_eq!(refusal(insns, &l), Some(format!("unreachable insn {}", xdp::PROLOGUE_LEN + first_dropped)));
}

/// `ld [16]; ret A` returns `args[0]`'s low word: every 32-bit value comes
/// back through the harness unchanged, XDP actions (`XDP_TX` = 3) or not,
/// so the verifier holds no range on an XDP program's r0.
#[test]
fn the_filter_value_comes_back_whole() {
    let Some(()) = bpf_here("the_filter_value_comes_back_whole") else { return };
    let program = cbpf::validate(&[cbpf::Insn::stmt(0x20, 16), cbpf::Insn::stmt(0x16, 0)], Mode::Seccomp).unwrap();
    let jit = KernelJit::new(&engine::Prepared::new(program).unwrap()).unwrap();
    for value in [0u32, 1, 2, 3, 4, 5, 0x7fff_0000, 0x8000_0000, 0xdead_beef, u32::MAX] {
        let data =
            SeccompData { nr: 0, arch: 0xc000_003e, instruction_pointer: 0, args: [u64::from(value), 0, 0, 0, 0, 0] };
        assert_eq!(jit.eval(&data).unwrap(), value);
    }
}

/// The timing harness (`xdp::seccomp_copies`, as `kernel_jit::Clock` loads
/// it with `xdp::copies_for`'s count) is accepted by the verifier on every
/// filter and answers every vector with the filter's value, as the single
/// harness does; its load time is printed (the verifier walks every copy).
/// So does the cycling harness, chunk by chunk ([`cycling_answers`]).
#[test]
fn the_timing_harness_answers_every_vector() {
    let Some(()) = bpf_here("the_timing_harness_answers_every_vector") else { return };
    let mut failures = Vec::new();
    let mut runs = 0usize;
    let mut copies_seen = std::collections::BTreeSet::new();
    let (mut chunks_run, mut inputs_seen) = (0usize, std::collections::BTreeSet::new());
    for case in cases() {
        let prepared = engine::Prepared::new(case.program.clone()).unwrap();
        let start = std::time::Instant::now();
        let clock = match engine::kernel_jit::Clock::new(&prepared) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{}: {e}", case.name));
                continue;
            }
        };
        let (_, l) = conversion(&case.program);
        assert_eq!(clock.copies(), xdp::copies_for(&l), "{}", case.name);
        copies_seen.insert(clock.copies());
        println!(
            "{}: {} loadable insns, {} copies, clock loaded in {:?}",
            case.name,
            l.insns.len(),
            clock.copies(),
            start.elapsed()
        );
        for (data, want) in &case.vectors {
            runs += 1;
            match clock.timed().eval(data) {
                Ok(got) if got == *want => {}
                other => failures.push(format!("{}: {data:?}: got {other:?}, expected {want:#x}", case.name)),
            }
            if failures.len() > 20 {
                break;
            }
        }
        // A round with a repeat per input (what `bench` runs): one repeat
        // per input and the same answers. The repeats come from timed
        // probes, so nothing here compares them (CI once saw the
        // baseline's probe of a 2-copy harness take 3x the filter's).
        let some: Vec<_> = case.vectors.iter().take(8).collect();
        let packets: Vec<_> = some.iter().map(|(d, _)| xdp::packet(d)).collect();
        let repeats = clock.repeats(&packets, std::time::Duration::from_micros(50)).unwrap();
        assert_eq!(repeats.packets.len(), packets.len(), "{}: {repeats:?}", case.name);
        let (_, round) = clock.round_with(&packets, &repeats).unwrap();
        for ((data, want), (got, _)) in some.iter().zip(&round) {
            if got != want {
                failures.push(format!("{}: {data:?}: round got {got:#x}, expected {want:#x}", case.name));
            }
        }
        chunks_run += cycling_answers(&case, &mut inputs_seen, &mut failures);
    }
    assert!(runs > 25_000, "only {runs} runs");
    // Short filters get 32 copies, the longest fewer.
    assert!(copies_seen.contains(&32) && copies_seen.iter().any(|&n| n < 8), "{copies_seen:?}");
    assert!(chunks_run > 100, "only {chunks_run} chunks");
    assert!(inputs_seen.contains(&xdp::MAX_CYCLE_INPUTS), "{inputs_seen:?}");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The cycling harness (`xdp::seccomp_cycle`, as `kernel_jit::CycleClock`
/// loads it) is accepted by the verifier on `case`'s filter, over
/// `MAX_CYCLE_INPUTS` inputs or, for the longest, fewer (noted in `seen`);
/// each test run over a chunk of vectors returns the filter's value on the
/// chunk's last; and the chunks go through the vectors in order, the last
/// chunk filled up from the first ones. Returns the chunks run.
fn cycling_answers(case: &Case, seen: &mut std::collections::BTreeSet<usize>, failures: &mut Vec<String>) -> usize {
    let prepared = engine::Prepared::new(case.program.clone()).unwrap();
    let start = std::time::Instant::now();
    let clock = match engine::kernel_jit::CycleClock::new(&prepared, xdp::MAX_CYCLE_INPUTS) {
        Ok(c) => c,
        Err(e) => {
            failures.push(format!("{} (cycling): {e}", case.name));
            return 0;
        }
    };
    seen.insert(clock.inputs());
    println!("{}: {} inputs per run, cycling clock loaded in {:?}", case.name, clock.inputs(), start.elapsed());
    let some: Vec<_> = case.vectors.iter().take(200).collect();
    let packets: Vec<_> = some.iter().map(|(d, _)| xdp::packet(d)).collect();
    let chunks = clock.chunks(&packets);
    assert_eq!(chunks.len(), packets.len().div_ceil(clock.inputs()), "{}", case.name);
    assert!(chunks.iter().all(|c| c.bytes.len() == clock.inputs() * xdp::PACKET_LEN), "{}", case.name);
    // Chunk k's first input is packet k * inputs; its last wraps around.
    for (k, c) in chunks.iter().enumerate() {
        let first = (k * clock.inputs()) % packets.len();
        assert_eq!(c.bytes[..xdp::PACKET_LEN], packets[first], "{}: chunk {k}", case.name);
        assert_eq!(c.last, (k * clock.inputs() + clock.inputs() - 1) % packets.len(), "{}: chunk {k}", case.name);
    }
    let repeats = clock.repeats(&chunks, std::time::Duration::from_micros(50)).unwrap();
    let (_, round) = clock.round(&chunks, &repeats).unwrap();
    for (c, (got, _)) in chunks.iter().zip(&round) {
        let (data, want) = some[c.last];
        if got != want {
            failures.push(format!("{}: chunk ending {data:?}: got {got:#x}, expected {want:#x}", case.name));
        }
    }
    chunks.len()
}
