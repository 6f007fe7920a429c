//! The target bodies. Each panics, through [`fail`], exactly when a property
//! the crate docs list is broken; any other panic is a crash in the code
//! under test.

use std::fmt;

use arbitrary::Unstructured;
use cbpf::text::{self, Format};
use cbpf::{Interp, Mode, Program, SeccompData};
use convert::socket_ctx::skb_meta;
use convert::{ConvertError, Options};
use ebpf::Input as EInput;
use ebpf::{Helpers, LoadOptions, SkbContext, Vm};
use seccomp::analysis::{ActionResult, Analyzer, Field};
use test_kit::oracle::{Oracle, SetupError};

use test_kit::SocketInput;

use crate::gen::{self, Input};

/// Reports a broken property. Panicking is the interface: libFuzzer records
/// the input as a crash and the replayer's `catch_unwind` reports it.
#[allow(clippy::panic)] // the one place a fuzz check turns a finding into a crash
#[cold]
#[track_caller]
pub(crate) fn fail(what: fmt::Arguments<'_>) -> ! {
    panic!("property violated: {what}")
}

/// The classic interpreter's action on `data`: a refusal is a finding, the
/// programs the targets run are valid seccomp filters.
#[track_caller]
fn classic_seccomp(interp: &Interp, data: &[u8; 64]) -> u32 {
    match interp.run_seccomp(data) {
        Ok(v) => v,
        Err(e) => fail(format_args!("classic interpreter refused a seccomp run: {e}")),
    }
}

/// Step budget for runs of arbitrary eBPF: small enough that a loop costs
/// microseconds, large enough for every straight-line program the fuzzer
/// writes (libFuzzer's default `-max_len` of 4096 bytes is 512 slots).
const EBPF_STEP_BUDGET: u64 = 1 << 14;

// ---------------------------------------------------------------- decode_validate

/// Any bytes: [`cbpf::raw::decode`] then [`cbpf::validate()`] in both modes
/// never panic; decoding round-trips; a program that validates keeps its
/// length and original, converts, loads into the eBPF interpreter, and gives
/// the classic interpreter's answer on fixed contexts.
pub fn decode_validate(data: &[u8]) {
    let Ok(insns) = cbpf::raw::decode(data) else { return };
    if cbpf::raw::encode(&insns) != data {
        fail(format_args!("encode(decode(bytes)) differs from the bytes"));
    }
    for mode in [Mode::Seccomp, Mode::Socket] {
        let Ok(prog) = cbpf::validate(&insns, mode) else { continue };
        if prog.original() != insns.as_slice() || prog.insns().len() != insns.len() || prog.mode() != mode {
            fail(format_args!("validate({mode}) changed the program's length, original or mode"));
        }
        let inputs = match mode {
            Mode::Seccomp => fixed_seccomp_inputs(),
            _ => vec![Input::Socket(fixed_packet())],
        };
        engines_agree(&prog, &inputs);
    }
}

fn fixed_seccomp_inputs() -> Vec<Input> {
    let mut pattern = [0u8; 64];
    for (i, b) in pattern.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37).wrapping_add(1);
    }
    let mut x86_64 = [0u8; 64];
    if let Some(arch) = x86_64.get_mut(4..8) {
        arch.copy_from_slice(&0xc000_003eu32.to_ne_bytes());
    }
    vec![Input::Seccomp([0; 64]), Input::Seccomp(x86_64), Input::Seccomp(pattern)]
}

/// An IPv4/UDP-looking frame with lib/test_bpf.c's metadata.
fn fixed_packet() -> SocketInput {
    let mut data = vec![0u8; 60];
    for (i, b) in data.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(13);
    }
    for (at, v) in [(12, 0x08), (13, 0x00), (14, 0x45), (23, 17)] {
        if let Some(b) = data.get_mut(at) {
            *b = v;
        }
    }
    SocketInput::test_bpf(data)
}

// ---------------------------------------------------------------- convert_equiv

/// A generated valid program ([`gen::case`]) and contexts: the classic
/// interpreter, the converted program on our eBPF interpreter (kernel
/// shape, and legacy shape for socket filters; with and without
/// superinstructions) and, for seccomp, rbpf's interpreter all agree.
pub fn convert_equiv(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(case) = gen::case(&mut u) else { return };
    engines_agree(&case.program, &case.inputs);
}

/// The equivalence check: the project's oracle ([`test_kit::oracle::Oracle`]:
/// the classic trace interpreter against every engine, the Linux 6.18
/// conversion with and without superinstructions and, for seccomp, the fast
/// engine and rbpf's interpreter) on `inputs` and on its own
/// branch-covering inputs; then the one shape the oracle does not cover:
/// the legacy packet-load conversion of socket filters, with and without
/// superinstructions, against the classic result.
fn engines_agree(prog: &Program, inputs: &[Input]) {
    let mut oracle = match Oracle::new("fuzz", prog) {
        Ok(o) => o,
        // The one refusal a validated program can meet (a 16-bit jump
        // offset overflow), only possible for very long programs.
        Err(SetupError::Convert { source: ConvertError::JumpOffset { .. }, .. }) => return,
        Err(e) => fail(format_args!("oracle setup refused a validated program: {e}\n{}", listing(prog))),
    };
    let mut expected = Vec::with_capacity(inputs.len());
    for input in inputs {
        let r = match input {
            Input::Seccomp(d) => oracle.check_seccomp(&SeccompData::from_bytes(d)),
            Input::Socket(p) => oracle.check_socket(&p.skb()),
        };
        match r {
            Ok(v) => expected.push(v),
            Err(m) => fail(format_args!("{m}\n{}", listing(prog))),
        }
    }
    if let Err(m) = oracle.check_branches(prog) {
        fail(format_args!("{m}\n{}", listing(prog)));
    }
    if prog.mode() != Mode::Socket {
        return;
    }
    for no_superinstructions in [false, true] {
        let opts = Options::legacy();
        let out = match convert::convert(prog, &opts) {
            Ok(out) => out,
            Err(ConvertError::JumpOffset { .. }) => continue,
            Err(e) => fail(format_args!("convert({opts:?}) refused a validated program: {e}\n{}", listing(prog))),
        };
        let lo = LoadOptions { strict: false, no_superinstructions };
        let eprog = match ebpf::Program::load(&out.insns, &lo, &convert::socket_ctx::socket_helpers()) {
            Ok(p) => p,
            Err(e) => fail(format_args!("converted program ({opts:?}) does not load: {e}\n{}", listing(prog))),
        };
        let mut vm = Vm::new();
        for (input, want) in inputs.iter().zip(&expected) {
            let got = match input {
                Input::Seccomp(_) => continue,
                // The legacy shape keeps pre-4.18 semantics, where negative
                // (`SKF_NET_OFF`/`SKF_LL_OFF`) loads reach only the linear
                // area; Linux >= 6.15 also reads paged data. The two agree
                // exactly on linear packets.
                Input::Socket(p) if p.meta.headlen < p.data.len() => continue,
                Input::Socket(p) => {
                    let ctx = SkbContext::new(&p.data, &skb_meta(&p.skb()));
                    vm.run(&eprog, EInput::Skb(&ctx)).map(|r0| r0 as u32)
                }
            };
            if got.as_ref() != Ok(want) {
                fail(format_args!(
                    "classic interpreter returned {want:#x}, converted program ({opts:?}, \
                     no_superinstructions={no_superinstructions}) on the eBPF interpreter {got:x?}\n\
                     input: {input:x?}\n{}",
                    listing(prog)
                ));
            }
        }
    }
}

fn listing(prog: &Program) -> String {
    format!("program ({} mode):\n{}", prog.mode(), text::print_asm(prog.original()))
}

// ---------------------------------------------------------------- text_parse

/// Any text: every cBPF text parser (and format detection), the
/// seccomp-tools assembler, the eBPF assembler and the conformance-file
/// parser never panic; whatever parses round-trips through the printers.
pub fn text_parse(data: &[u8]) {
    let _ = text::detect(data);
    let _ = text::parse_auto(data);
    for format in [Format::Raw, Format::C, Format::Ddd, Format::Asm] {
        if let Ok(insns) = text::parse(data, format) {
            cbpf_printers_round_trip(&insns, format);
        }
    }
    let Ok(source) = std::str::from_utf8(data) else { return };
    if let Ok(insns) = ebpf::asm::assemble(source) {
        let _ = ebpf::listing::listing(&insns);
        if let Ok(back) = ebpf::disasm::disassemble(&insns) {
            let again = ebpf::asm::assemble(&back);
            if again.as_ref() != Ok(&insns) {
                fail(format_args!("eBPF assemble(disassemble(p)) != p: {again:?}\ndisassembly:\n{back}"));
            }
        }
    }
    for default_arch in [None, Some(seccomp::Arch::X86_64)] {
        let options = seccomp::asm::AsmOptions { default_arch };
        if let Ok(insns) = seccomp::asm::assemble(source, options) {
            let printed = seccomp::disasm::disasm(&insns, seccomp::disasm::DisasmOptions { default_arch });
            let again = seccomp::asm::assemble(&printed, options);
            if again.as_ref() != Ok(&insns) {
                fail(format_args!("seccomp assemble(disasm(p)) != p: {again:?}\nlisting:\n{printed}"));
            }
            let _ = seccomp::disasm::disasm_text(&insns, seccomp::disasm::DisasmOptions { default_arch });
        }
    }
    let _ = ebpf::conformance::parse(source);
}

/// `parse(print(p)) == p` for every printer whose output is an input syntax,
/// both with the format named and with the format detected.
fn cbpf_printers_round_trip(insns: &[cbpf::Insn], parsed_as: Format) {
    let _ = text::print_pcap(insns);
    let raw = cbpf::raw::encode(insns);
    let printed = [
        ("print_asm", text::print_asm(insns).into_bytes(), Format::Asm),
        ("print_c", text::print_c(insns).into_bytes(), Format::C),
        ("print_ddd", text::print_ddd(insns).into_bytes(), Format::Ddd),
        ("print_ddd_line", text::print_ddd_line(insns).into_bytes(), Format::Ddd),
        ("raw::encode", raw, Format::Raw),
    ];
    for (printer, out, format) in printed {
        let back = text::parse(&out, format);
        if back.as_deref() != Ok(insns) {
            fail(format_args!(
                "parse({format}, {printer}(p)) != p for p parsed as {parsed_as}: {back:?}\noutput:\n{}",
                String::from_utf8_lossy(&out)
            ));
        }
        if format != Format::Raw {
            let auto = text::parse_auto(&out);
            if auto.as_ref().map(|(_, p)| p.as_slice()) != Ok(insns) {
                fail(format_args!(
                    "parse_auto({printer}(p)) != p for p parsed as {parsed_as}: {auto:?}\noutput:\n{}",
                    String::from_utf8_lossy(&out)
                ));
            }
        }
    }
}

// ---------------------------------------------------------------- ebpf_exec

/// Guard bytes around the writable memory of a run; they must survive it.
const GUARD: u8 = 0xa5;
const GUARD_LEN: usize = 16;
const USER_MEM_LEN: usize = 64;

/// Arbitrary eBPF: `data[0]` picks the helpers, strictness and the input
/// kind; the rest (cut to whole instructions) is the program. Loading never
/// panics and strict loading accepts a subset; a loaded program runs within
/// a step budget without panicking, touches no byte outside the memory it
/// was given, and gives the same result, step count and memory with and
/// without superinstructions. What disassembles re-assembles to the same
/// instructions.
pub fn ebpf_exec(data: &[u8]) {
    let Some((&selector, code)) = data.split_first() else { return };
    let whole = code.len() / ebpf::insn::INSN_SIZE * ebpf::insn::INSN_SIZE;
    let Ok(insns) = ebpf::decode(code.get(..whole).unwrap_or_default()) else { return };
    let _ = ebpf::listing::listing(&insns);
    if let Ok(text) = ebpf::disasm::disassemble(&insns) {
        let again = ebpf::asm::assemble(&text);
        if again.as_ref() != Ok(&insns) {
            fail(format_args!("eBPF assemble(disassemble(p)) != p: {again:?}\ndisassembly:\n{text}"));
        }
    }
    let helpers = if selector & 1 == 0 { Helpers::socket() } else { Helpers::conformance() };
    let strict = selector & 2 != 0;
    let load = |strict, no_superinstructions| {
        ebpf::Program::load(&insns, &LoadOptions { strict, no_superinstructions }, &helpers)
    };
    let fused = load(strict, false);
    let plain = load(strict, true);
    if fused.as_ref().err() != plain.as_ref().err() {
        fail(format_args!(
            "superinstructions change loading: {:?} vs {:?}",
            fused.as_ref().err(),
            plain.as_ref().err()
        ));
    }
    if strict && fused.is_ok() && load(false, false).is_err() {
        fail(format_args!("a program that loads strictly is refused without `strict`"));
    }
    let (Ok(fused), Ok(plain)) = (fused, plain) else { return };
    let packet = fixed_packet();
    let skb = SkbContext::new(&packet.data, &skb_meta(&packet.skb()));
    let ctx: [u8; 64] = std::array::from_fn(|i| (i as u8) ^ 0x5a);
    let run = |prog: &ebpf::Program| {
        let mut buffer = [GUARD; GUARD_LEN + USER_MEM_LEN + GUARD_LEN];
        for (i, b) in buffer.iter_mut().skip(GUARD_LEN).take(USER_MEM_LEN).enumerate() {
            *b = i as u8;
        }
        let mut vm = Vm::new();
        vm.set_step_budget(EBPF_STEP_BUDGET);
        let input = match (selector >> 2) & 3 {
            0 => EInput::None,
            1 => EInput::Ctx(&ctx),
            2 => EInput::Skb(&skb),
            _ => EInput::Memory(buffer.get_mut(GUARD_LEN..GUARD_LEN + USER_MEM_LEN).unwrap_or_default()),
        };
        let result = vm.run(prog, input);
        let outside = buffer.iter().take(GUARD_LEN).chain(buffer.iter().skip(GUARD_LEN + USER_MEM_LEN));
        if outside.clone().any(|&b| b != GUARD) {
            fail(format_args!("a run wrote outside its memory region"));
        }
        (result.map(|r0| (r0, vm.executed())), buffer)
    };
    let (a, mem_a) = run(&fused);
    let (b, mem_b) = run(&plain);
    let budget = |r: &Result<(u64, u64), ebpf::ExecError>| matches!(r, Err(ebpf::ExecError::StepBudgetExceeded { .. }));
    if budget(&a) || budget(&b) {
        // Where the budget is checked may differ inside a fused chain.
        return;
    }
    if a != b || mem_a != mem_b {
        fail(format_args!("superinstructions change a run: {a:x?} vs {b:x?} (memory equal: {})", mem_a == mem_b));
    }
}

// ---------------------------------------------------------------- analysis_sound

/// Arches the analysis is asked about; s390x is big-endian (its argument
/// halves swap places).
const ARCHES: [u32; 4] = [0xc000_003e, 0x4000_0003, 0xc000_00b7, 0x8000_0016];

/// A generated valid seccomp program: for a few (arch, nr), every
/// [`ActionResult::Constant`] the analysis promises is what the classic
/// interpreter returns on random instruction pointers and arguments, and an
/// [`ActionResult::Depends`] result does not change when only fields
/// outside its list change.
pub fn analysis_sound(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(gen::Generated { program, mut pool }) = gen::program(&mut u, Mode::Seccomp) else { return };
    let mut analyzer = match Analyzer::new(&program) {
        Ok(a) => a,
        Err(e) => fail(format_args!("analysis refused a seccomp program: {e}")),
    };
    let interp = Interp::new(&program);
    let rounds = u.int_in_range(1..=3u8).unwrap_or(1);
    for _ in 0..rounds {
        let arch = if u.ratio(3u8, 4u8).unwrap_or(true) {
            u.choose(&ARCHES).copied().unwrap_or(ARCHES[0])
        } else {
            pool.value(&mut u).unwrap_or(0)
        };
        let nr = pool.value(&mut u).unwrap_or(0);
        let result = analyzer.result(arch, nr);
        let mut base: Option<([u8; 64], u32)> = None;
        for _ in 0..8 {
            let Ok(mut d) = gen::seccomp_data(&mut u, &mut pool) else { return };
            let (head, _) = d.split_at_mut(8);
            let (nr_word, arch_word) = head.split_at_mut(4);
            nr_word.copy_from_slice(&nr.to_ne_bytes());
            arch_word.copy_from_slice(&arch.to_ne_bytes());
            let got = classic_seccomp(&interp, &d);
            match &result {
                ActionResult::Constant(c) if got != *c => fail(format_args!(
                    "analysis promised {c:#x} for arch {arch:#x} nr {nr:#x}, the filter returned {got:#x}\n\
                     data: {d:x?}\n{}",
                    listing(&program)
                )),
                ActionResult::Constant(_) => {}
                ActionResult::Depends(fields) => match base {
                    None => base = Some((d, got)),
                    Some((b, want)) => {
                        // Keep every listed field of `b`, take the rest from `d`.
                        let mut mixed = d;
                        for (word, (m, o)) in mixed.chunks_exact_mut(4).zip(b.chunks_exact(4)).enumerate() {
                            let listed = Field::from_offset(4 * word as u32, arch)
                                .is_none_or(|f| matches!(f, Field::Nr | Field::Arch) || fields.contains(&f));
                            if listed {
                                m.copy_from_slice(o);
                            }
                        }
                        let again = interp.run_seccomp(&mixed).unwrap_or(want);
                        if again != want {
                            fail(format_args!(
                                "analysis says arch {arch:#x} nr {nr:#x} depends only on {fields:?}, \
                                 but changing other fields changes {want:#x} to {again:#x}\n\
                                 base: {b:x?}\nmixed: {mixed:x?}\n{}",
                                listing(&program)
                            ));
                        }
                    }
                },
            }
        }
    }
    let _ = seccomp::analysis::compared_arches(&program);
    let _ = seccomp::analysis::compared_nrs(&program, ARCHES[0]);
}

// ---------------------------------------------------------------- fast_equiv

/// A generated valid seccomp program: the fast engine
/// ([`seccomp::fast::FastFilter`]) builds without falling back to the whole
/// filter (every residual program validates), and on generated contexts,
/// with the arch often one the engine has a table for and the number
/// nudged to both sides of itself, returns what the classic interpreter
/// returns: with its argument trees run as native code (where the host
/// allows it) and walked as tables.
pub fn fast_equiv(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(gen::Generated { program, mut pool }) = gen::program(&mut u, Mode::Seccomp) else { return };
    let fast = match seccomp::fast::FastFilter::build(&program) {
        Ok(f) => f,
        Err(e) => fail(format_args!("fast engine refused a seccomp program: {e}\n{}", listing(&program))),
    };
    let stats = fast.stats();
    if stats.whole_filter_entries != 0 {
        fail(format_args!(
            "{} specialisations fell back to the whole filter (a residual failed validation): {stats:?}\n{}",
            stats.whole_filter_entries,
            listing(&program)
        ));
    }
    let arches: Vec<u32> = fast.arches().collect();
    let tables = fast.clone().without_native();
    let interp = Interp::new(&program);
    let rounds = u.int_in_range(1..=6u8).unwrap_or(1);
    for _ in 0..rounds {
        let Ok(mut d) = gen::seccomp_data(&mut u, &mut pool) else { return };
        if u.ratio(2u8, 3u8).unwrap_or(false) {
            if let (Ok(&arch), Some(word)) = (u.choose(&arches), d.get_mut(4..8)) {
                word.copy_from_slice(&arch.to_ne_bytes());
            }
        }
        let nr = d.get(0..4).and_then(|w| <[u8; 4]>::try_from(w).ok()).map_or(0, u32::from_ne_bytes);
        for delta in [0u32, 1, u32::MAX] {
            if let Some(word) = d.get_mut(0..4) {
                word.copy_from_slice(&nr.wrapping_add(delta).to_ne_bytes());
            }
            let want = classic_seccomp(&interp, &d);
            let (got, walked) = (fast.eval_bytes(&d), tables.eval_bytes(&d));
            if got != want || walked != want {
                fail(format_args!(
                    "classic interpreter returned {want:#x}, the fast engine {got:#x} (tables {walked:#x})\ndata: {d:x?}\n{}",
                    listing(&program)
                ));
            }
        }
    }
}

// ---------------------------------------------------------------- bounded_work

/// Arches `bounded_work` analyses: a native one, a compat one, and the
/// shapes' own arch constant.
const BOUNDED_ARCHES: [u32; 3] = [0xc000_003e, 0x4000_0003, 0x4000_0001];

/// A blow-up shape ([`crate::blowup`]) or a generated valid seccomp program:
/// every analysis (the constant action of every number the filter compares,
/// `explain`, `audit`, the policy reading and `decompile`) and the fast engine's build finish, each within one
/// run budget — an answer or [`AnalysisError::Budget`], never more
/// work than the budget allows — and what the fast engine builds agrees with
/// the classic interpreter on each arch and number the filter compares.
/// cargo-fuzz runs it under `-rss_limit_mb` and `-timeout` (the xtask's
/// per-target limits), which turn a blow-up into a crash.
///
/// [`AnalysisError::Budget`]: seccomp::analysis::AnalysisError::Budget
pub fn bounded_work(data: &[u8]) {
    use seccomp::analysis::{self, AnalysisError, Budget};

    let mut u = Unstructured::new(data);
    let program = if u.ratio(1u8, 2u8).unwrap_or(true) {
        let Ok(shape) = crate::blowup::shape(&mut u) else { return };
        match cbpf::validate(&shape.build(), Mode::Seccomp) {
            Ok(p) => p,
            Err(e) => fail(format_args!("blow-up shape {} does not validate: {e}", shape.name())),
        }
    } else {
        let Ok(gen::Generated { program, .. }) = gen::program(&mut u, Mode::Seccomp) else { return };
        program
    };
    let within = |what: &str, r: Result<(), AnalysisError>| match r {
        Ok(()) | Err(AnalysisError::Budget { .. }) => {}
        Err(e) => fail(format_args!("{what} failed on a valid seccomp program: {e}\n{}", listing(&program))),
    };
    // A sixteenth of the CLI's default steps: the replay runs unoptimised,
    // and a blow-up the budget misses is a blow-up at any budget.
    let small = || Budget::new(Budget::DEFAULT_STEPS / 16, Budget::DEFAULT_PATHS / 16, Budget::DEFAULT_CONDS / 16);
    let mut budget = small();
    for arch in BOUNDED_ARCHES {
        let nrs = analysis::compared_nrs(&program, arch).unwrap_or_default();
        within("analyze", analysis::analyze_in(&program, arch, nrs.iter().copied(), &mut budget).map(drop));
        within(
            "explain",
            analysis::explain_in(&program, arch, nrs.iter().copied(), &mut budget, |_| Ok::<(), AnalysisError>(())),
        );
    }
    within("audit", analysis::audit_in(&program, &mut small()).map(drop));
    // The policy reading behind `analyze --explain` and `decompile`: its
    // analysis within the budget; the profile an answer or the reason
    // there is none.
    within(
        "policy::read",
        policy::read(&program, &mut small()).map(|reading| {
            let _ = policy::explain_lines(&reading);
            let _ = policy::decompile(&reading);
        }),
    );

    let fast = match seccomp::fast::FastFilter::build(&program) {
        Ok(f) => f,
        Err(e) => fail(format_args!("fast engine refused a seccomp program: {e}\n{}", listing(&program))),
    };
    let interp = Interp::new(&program);
    let arches: Vec<u32> = fast.arches().chain(BOUNDED_ARCHES).take(64).collect();
    for arch in arches {
        let nrs = analysis::compared_nrs(&program, arch).unwrap_or_default();
        for nr in nrs.iter().copied().take(64).chain([u32::MAX]) {
            let data = SeccompData { nr: nr as i32, arch, ..SeccompData::default() };
            let want = classic_seccomp(&interp, &data.to_bytes());
            let got = fast.eval(&data);
            if got != want {
                fail(format_args!(
                    "fast engine returned {got:#x}, the classic interpreter {want:#x}, for arch {arch:#x} nr {nr:#x}\n{}",
                    listing(&program)
                ));
            }
        }
    }
}

// ---------------------------------------------------------------- equiv

/// Limits small enough that one input costs milliseconds; an input past
/// them is undecided, which is allowed (never a wrong verdict).
pub(crate) const EQUIV_LIMITS: ::equiv::Limits =
    ::equiv::Limits { max_steps: 1 << 20, max_conflicts: 1 << 12, max_clauses: 1 << 20, max_word_runs: 1 << 13 };

/// A generated valid seccomp program and a second one derived from the
/// same bytes: another generated program, a single-instruction mutation,
/// or a copy equal by construction (`ja 0` or an ALU identity inserted,
/// the fast engine's residual for one arch in front). `equiv::check` is
/// held to every engine ([`test_kit::pairs::check_pair`]): "equal" only
/// where no branch-reaching or random input tells them apart, "differ"
/// only with a counterexample every engine confirms; a copy equal by
/// construction is never reported as different.
pub fn equiv(data: &[u8]) {
    use test_kit::pairs::{self, PairOutcome};
    let mut u = Unstructured::new(data);
    let Ok(gen::Generated { program, mut pool }) = gen::program(&mut u, Mode::Seccomp) else { return };
    let kind = u.int_in_range(0..=4u8).unwrap_or(0);
    let at = u.int_in_range(0..=program.len()).unwrap_or(0);
    let c = pool.value(&mut u).unwrap_or(0);
    let insns = program.original();
    let (other, equal_by_construction) = match kind {
        0 => match gen::program(&mut u, Mode::Seccomp) {
            Ok(g) => (Some(g.program.original().to_vec()), false),
            Err(_) => return,
        },
        1 => {
            let muts = pairs::mutations(insns);
            let i = u.choose_index(muts.len().max(1)).unwrap_or(0);
            (muts.into_iter().nth(i).map(|(_, m)| m), false)
        }
        2 => (pairs::ja_padded(insns, at), true),
        3 => (pairs::alu_rewritten(insns, at, usize::from(u.arbitrary::<u8>().unwrap_or(0)), c), true),
        _ => (pairs::residual_composed(&program, c), true),
    };
    let Some(other) = other else { return };
    let Ok(other) = cbpf::validate(&other, Mode::Seccomp) else { return };
    let mut extra = Vec::new();
    for _ in 0..4 {
        let Ok(d) = gen::seccomp_data(&mut u, &mut pool) else { break };
        extra.push(SeccompData::from_bytes(&d));
    }
    let compare = if u.arbitrary().unwrap_or(false) { ::equiv::Compare::Action } else { ::equiv::Compare::Value };
    match pairs::check_pair(&program, &other, compare, EQUIV_LIMITS, &extra) {
        Ok(PairOutcome::Differ) if equal_by_construction => fail(format_args!(
            "equiv reports a difference between copies equal by construction\n{}\n---\n{}",
            listing(&program),
            listing(&other)
        )),
        Ok(_) => {}
        Err(e) => fail(format_args!("{e}\n{}\n---\n{}", listing(&program), listing(&other))),
    }
}

/// Stand-in inputs per class the `optimize` target runs at most.
const OPTIMIZE_REGION_CAP: usize = 1 << 8;

/// A generated valid seccomp program through `optimize::optimize`, whose
/// answer is held to what it promises, checked without its own code: the
/// output validates again (seccomp mode, at most `BPF_MAXINSNS`), is no
/// longer than the input unless depth is preferred (one byte after the
/// program's chooses), keeps every kernel-cached ALLOW the input has
/// (`seccomp::cache` on each input's arch and number), and returns the
/// input's value on every branch-reaching input of either program, on
/// generated inputs and, where the program only compares words with
/// constants, on the brute-force regions of every class
/// ([`test_kit::regions`]). Only a budget or an undecided proof may
/// refuse; any other refusal is a bug (`optimize` reporting its own bug is
/// still one).
pub fn optimize(data: &[u8]) {
    use ::optimize::{CheckError, OptimizeError};
    let mut u = Unstructured::new(data);
    let Ok(gen::Generated { program, mut pool }) = gen::program(&mut u, Mode::Seccomp) else { return };
    // Read after the program, so that older inputs keep their programs
    // (and prefer size, as they did).
    let prefer = if u.arbitrary().unwrap_or(false) { ::optimize::Prefer::Depth } else { ::optimize::Prefer::Size };
    let options = ::optimize::Options {
        budget: seccomp::analysis::Budget::new(1 << 20, 1 << 10, 1 << 14),
        equiv: ::equiv::Options { limits: EQUIV_LIMITS, ..Default::default() },
        prefer,
    };
    let out = match ::optimize::optimize(&program, &options) {
        Ok(out) => out.program,
        Err(OptimizeError::Analysis(_) | OptimizeError::Check(CheckError::Undecided(_))) => return,
        Err(e) => fail(format_args!("optimize refused: {e}\n{}", listing(&program))),
    };
    let fail_on = |what: fmt::Arguments<'_>| -> ! {
        fail(format_args!("{what}\ninput:\n{}\n---\noutput:\n{}", listing(&program), listing(&out)))
    };
    if let Err(e) = cbpf::validate(out.original(), Mode::Seccomp) {
        fail_on(format_args!("the output does not validate again: {e}"));
    }
    // Longer than the input only where depth is preferred.
    let may_grow = prefer == ::optimize::Prefer::Depth;
    if (out.len() > program.len() && !may_grow) || out.len() > cbpf::opcode::BPF_MAXINSNS {
        fail_on(format_args!("the output has {} instructions, the input {}", out.len(), program.len()));
    }
    let mut inputs = test_kit::branch_inputs(&program);
    inputs.extend(test_kit::branch_inputs(&out));
    for _ in 0..8 {
        let Ok(d) = gen::seccomp_data(&mut u, &mut pool) else { break };
        inputs.push(SeccompData::from_bytes(&d));
    }
    inputs.extend(test_kit::regions::region_inputs(&[&program, &out], OPTIMIZE_REGION_CAP).inputs);
    let (before, after) = (Interp::new(&program), Interp::new(&out));
    let run = |p: &Interp, d: &SeccompData| {
        p.trace_seccomp(&d.to_bytes(), |_| {}).unwrap_or_else(|e| fail(format_args!("{e}")))
    };
    for d in &inputs {
        let (l, r) = (run(&before, d), run(&after, d));
        if l != r {
            fail_on(format_args!("on {d:?} the input returns {l:#x}, the output {r:#x}"));
        }
        let (arch, nr) = (d.arch, d.nr as u32);
        let cached = |p: &Program| seccomp::cache::seccomp_is_const_allow(p.original(), nr, arch, arch);
        if cached(&program) && !cached(&out) {
            fail_on(format_args!("the kernel's cache allows nr {nr} on arch {arch:#x} for the input, not the output"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `optimize` seeds are not vacuous: most generate a program that
    /// `optimize` rewrites and proves, so the checks run.
    #[test]
    fn the_optimize_seeds_reach_a_proved_rewrite() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/seeds/optimize");
        let (mut seeds, mut rewritten) = (0, 0);
        for entry in std::fs::read_dir(dir).unwrap() {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            seeds += 1;
            let mut u = Unstructured::new(&data);
            let Ok(g) = gen::program(&mut u, Mode::Seccomp) else { continue };
            if let Ok(out) = ::optimize::optimize(&g.program, &Default::default()) {
                rewritten +=
                    usize::from(out.stats.kept_input.is_none() && out.program.original() != g.program.original());
            }
        }
        assert!(seeds >= 12 && rewritten * 2 >= seeds, "{rewritten} of {seeds} seeds rewritten");
    }

    #[test]
    fn fail_panics_with_the_property() {
        let r = std::panic::catch_unwind(|| fail(format_args!("x is {}", 1)));
        let msg = r.unwrap_err().downcast::<String>().unwrap();
        assert_eq!(*msg, "property violated: x is 1");
    }
}
