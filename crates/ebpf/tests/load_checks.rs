#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! `Program::load`'s structural checks, row by row: what each program is
//! refused with (the exact error, its pc and fields), by default and in
//! strict mode, where several rules break at once which one is reported,
//! and the accepted neighbours of each refusal.

use ebpf::op::{Family, OpError};
use ebpf::program::MAX_INSNS;
use ebpf::{Helpers, Insn, LoadError, LoadOptions, Pc, Program, Vm};

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}
const EXIT: Insn = Insn::new(0x95, 0, 0, 0, 0);
/// `r0 = r11`: refused for its source register wherever it stands.
const BAD_REG: Insn = Insn::new(0xbf, 0, 11, 0, 0);
const LDDW: Insn = Insn::new(0x18, 0, 0, 0, 7);
const STRICT: LoadOptions = LoadOptions { strict: true, no_superinstructions: false };

fn load(p: &[Insn], opts: &LoadOptions) -> Result<(), LoadError> {
    Program::load(p, opts, &Helpers::conformance()).map(|_| ())
}

fn decode(pc: usize, op: OpError) -> Result<(), LoadError> {
    Err(LoadError::Decode { pc: Pc(pc), op })
}

fn reserved(pc: usize, field: &'static str) -> Result<(), LoadError> {
    Err(LoadError::ReservedField { pc: Pc(pc), field })
}

/// What loading gives: accepted, or the error.
type Loaded = Result<(), LoadError>;

/// Checks every row `(what, program, by default, strict)`.
fn check(rows: &[(&str, Vec<Insn>, Loaded, Loaded)]) {
    let mut failures = Vec::new();
    for (what, p, lenient, strict) in rows {
        for (mode, opts, want) in [("default", LoadOptions::default(), lenient), ("strict", STRICT, strict)] {
            let got = load(p, &opts);
            if got != *want {
                failures.push(format!("{what} ({mode}): got {got:?}, want {want:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The verifier's `resolve_pseudo_ldimm64()` (kernel/bpf/verifier.c) walks
/// every instruction for broken `ld_imm64` pairs before `do_check()` looks
/// at any instruction's fields, so a broken pair is the error even after an
/// instruction that is wrong in another way; a bad second slot is reported
/// at that slot (`insn[1]`: code, registers and `off` must be 0).
#[test]
fn a_broken_ld_imm64_is_refused_first_at_its_slot() {
    let pair = |second: Insn| vec![BAD_REG, LDDW, second, EXIT];
    let bad_second = decode(2, OpError::BadLdImm64SecondSlot);
    let incomplete = decode(1, OpError::IncompleteLdImm64);
    check(&[
        ("missing second slot after a bad register", vec![BAD_REG, LDDW], incomplete.clone(), incomplete),
        ("second slot with a code", pair(i(0x07, 0, 0, 0, 0)), bad_second.clone(), bad_second.clone()),
        ("second slot with dst", pair(i(0, 1, 0, 0, 0)), bad_second.clone(), bad_second.clone()),
        ("second slot with src", pair(i(0, 0, 1, 0, 0)), bad_second.clone(), bad_second.clone()),
        ("second slot with off", pair(i(0, 0, 0, 1, 0)), bad_second.clone(), bad_second),
        // Its imm is the high word: a whole pair leaves the bad register.
        (
            "a whole pair",
            pair(i(0, 0, 0, 0, -1)),
            Err(LoadError::BadRegister { pc: Pc(0), reg: 11 }),
            Err(LoadError::BadRegister { pc: Pc(0), reg: 11 }),
        ),
        ("a whole pair alone", vec![LDDW, i(0, 0, 0, 0, 3), EXIT], Ok(()), Ok(())),
        // A second pair right after the first: slots 0-1 and 2-3.
        ("two pairs", vec![LDDW, i(0, 0, 0, 0, 0), LDDW, i(0, 0, 0, 0, 0), EXIT], Ok(()), Ok(())),
        (
            "a jump into a second slot",
            vec![i(0x05, 0, 0, 1, 0), LDDW, i(0, 0, 0, 0, 0), EXIT],
            Err(LoadError::JumpIntoLdImm64 { pc: Pc(0), target: 2 }),
            Err(LoadError::JumpIntoLdImm64 { pc: Pc(0), target: 2 }),
        ),
    ]);
}

/// Fields the loader judges before the opcode's variant: every STX-class
/// instruction names two registers, an ALU operation's operand, the unused
/// fields of byte swaps and calls (strict mode). An instruction that
/// breaks one of those and is also undecodable reports that one first.
#[test]
fn fields_before_the_variant_are_reported_first() {
    let atomic_w = 0xc3; // BPF_STX | BPF_ATOMIC | BPF_W
    let bad_atomic = OpError::BadImmediate { imm: 0x99, family: Family::Atomic };
    let end_le = 0xd4; // BPF_ALU | BPF_END | BPF_TO_LE
    let bad_end = OpError::BadImmediate { imm: 8, family: Family::End };
    let unknown = |code| OpError::UnknownOpcode { code, family: Family::Alu };
    let bad_call = OpError::UnsupportedCall { src: 3 };
    check(&[
        (
            "atomic with a bad base and a bad operation",
            vec![i(atomic_w, 11, 1, 0, 0x99), EXIT],
            Err(LoadError::BadRegister { pc: Pc(0), reg: 11 }),
            Err(LoadError::BadRegister { pc: Pc(0), reg: 11 }),
        ),
        (
            "atomic with a bad source and a bad operation",
            vec![i(atomic_w, 1, 12, 0, 0x99), EXIT],
            Err(LoadError::BadRegister { pc: Pc(0), reg: 12 }),
            Err(LoadError::BadRegister { pc: Pc(0), reg: 12 }),
        ),
        (
            "atomic with a bad operation",
            vec![i(atomic_w, 1, 2, 0, 0x99), EXIT],
            decode(0, bad_atomic),
            decode(0, bad_atomic),
        ),
        ("END with src and a bad width", vec![i(end_le, 0, 1, 0, 8), EXIT], decode(0, bad_end), reserved(0, "src")),
        ("END with off and a bad width", vec![i(end_le, 0, 0, 1, 8), EXIT], decode(0, bad_end), reserved(0, "off")),
        ("END with a bad width", vec![i(end_le, 0, 0, 0, 8), EXIT], decode(0, bad_end), decode(0, bad_end)),
        ("kfunc-like call with off", vec![i(0x85, 0, 3, 1, 0), EXIT], decode(0, bad_call), reserved(0, "off")),
        ("kfunc-like call with dst", vec![i(0x85, 1, 3, 0, 0), EXIT], decode(0, bad_call), reserved(0, "dst")),
        ("kfunc-like call", vec![i(0x85, 0, 3, 0, 0), EXIT], decode(0, bad_call), decode(0, bad_call)),
        // ALU64 operation 0xe0 is undefined, in either source form.
        ("unknown ALU X with imm", vec![i(0xef, 0, 1, 0, 3), EXIT], decode(0, unknown(0xef)), reserved(0, "imm")),
        (
            "unknown ALU X with a bad source",
            vec![i(0xef, 0, 11, 0, 0), EXIT],
            Err(LoadError::BadRegister { pc: Pc(0), reg: 11 }),
            Err(LoadError::BadRegister { pc: Pc(0), reg: 11 }),
        ),
        ("unknown ALU X", vec![i(0xef, 0, 1, 0, 0), EXIT], decode(0, unknown(0xef)), decode(0, unknown(0xef))),
        ("unknown ALU K with src", vec![i(0xe7, 0, 1, 0, 0), EXIT], decode(0, unknown(0xe7)), reserved(0, "src")),
        ("unknown ALU K", vec![i(0xe7, 0, 0, 0, 5), EXIT], decode(0, unknown(0xe7)), decode(0, unknown(0xe7))),
        // Outside the ALU classes no operand is judged first: may_goto
        // (JMP | 0xe0, verifier-internal) with src set is still unknown.
        (
            "may_goto with src",
            vec![i(0xe5, 0, 1, 0, 0), EXIT],
            decode(0, OpError::UnknownOpcode { code: 0xe5, family: Family::Jump }),
            decode(0, OpError::UnknownOpcode { code: 0xe5, family: Family::Jump }),
        ),
    ]);
}

/// Which registers an atomic writes (`check_atomic()`): a fetching one
/// writes its `src` (so `src` may not be r10), `cmpxchg` writes r0 and
/// leaves `src`, a plain one writes only memory.
#[test]
fn atomics_write_src_only_when_they_fetch() {
    let frame_pointer = Err(LoadError::WritesFramePointer { pc: Pc(1) });
    // r1 = r10; lock *(u64 *)(r1 - 8) op= r10
    let on_stack = |imm: i32| vec![i(0xbf, 1, 10, 0, 0), i(0xdb, 1, 10, -8, imm), i(0xb7, 0, 0, 0, 0), EXIT];
    check(&[
        ("add", on_stack(0x00), Ok(()), Ok(())),
        ("or", on_stack(0x40), Ok(()), Ok(())),
        ("fetch add", on_stack(0x01), frame_pointer.clone(), frame_pointer.clone()),
        ("fetch xor", on_stack(0xa1), frame_pointer.clone(), frame_pointer.clone()),
        ("xchg", on_stack(0xe1), frame_pointer.clone(), frame_pointer),
        ("cmpxchg", on_stack(0xf1), Ok(()), Ok(())),
    ]);
}

/// The verifier's `BPF_COMPLEXITY_LIMIT_INSNS`: a program of exactly
/// [`MAX_INSNS`] slots loads, one more is refused before any slot is read.
#[test]
fn the_length_limit_is_exact() {
    let mut p = vec![EXIT; MAX_INSNS];
    assert_eq!(load(&p, &LoadOptions::default()), Ok(()));
    p.push(BAD_REG);
    assert_eq!(load(&p, &LoadOptions::default()), Err(LoadError::TooLong { len: MAX_INSNS + 1, max: MAX_INSNS }));
    assert_eq!(load(&[], &LoadOptions::default()), Err(LoadError::Empty));
}

/// What a loaded program reports about itself.
#[test]
fn a_program_reports_its_slots_and_superinstructions() {
    // Three `if r0 == K` (an eq chain: two entry points fused, the last one
    // alone), then `r0 = 0; exit` (one more).
    let p = [i(0x15, 0, 0, 0, 1), i(0x15, 0, 0, 0, 2), i(0x15, 0, 0, 0, 3), i(0xb7, 0, 0, 0, 0), EXIT];
    let fused = Program::load(&p, &LoadOptions::default(), &Helpers::new()).unwrap();
    let unfused = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let plain = Program::load(&p, &unfused, &Helpers::new()).unwrap();
    assert_eq!(fused.insns(), p);
    assert_eq!((fused.len(), fused.is_empty()), (5, false));
    assert_eq!((fused.fused_chains(), plain.fused_chains()), (3, 0));
    // Outside the converted-seccomp subset (`if r0 == K` compares a
    // register the converter never compares; a 64-bit add), whatever the
    // options: no executor. (tests/converted_programs.rs holds the real
    // converted filters to the other answer.)
    let add = [i(0x07, 0, 0, 0, 1), EXIT];
    for (prog, opts) in [(&p[..], LoadOptions::default()), (&p[..], unfused), (&add[..], LoadOptions::default())] {
        let prog = Program::load(prog, &opts, &Helpers::new()).unwrap();
        assert!(!prog.is_converted_seccomp() && !prog.has_seccomp_executor());
    }
    let mut vm = Vm::new();
    assert_eq!(vm.step_budget(), ebpf::interp::DEFAULT_STEP_BUDGET);
    assert_eq!(vm.set_step_budget(7).step_budget(), 7);
}

/// Which shapes the loader fuses, counted by `fused_chains` (the fused
/// forms' results are held to the plain interpreter in
/// tests/plain_proptest.rs; this pins that they are made at all, since a
/// shape left unfused still runs right, only slower).
#[test]
fn the_loader_fuses_each_shape_it_knows() {
    let ret0 = [i(0xb7, 0, 0, 0, 0), EXIT];
    let mov_k = |w: u8, k: i32| i(0xb7, w, 0, 0, k);
    let jeq_x = |x: u8, w: u8| i(0x1d, x, w, 0, 0);
    let rows: [(&str, Vec<Insn>, usize); 7] = [
        // One compare after a load: a load-and-compare pair.
        ("load, then one compare", vec![i(0x61, 2, 1, 4, 0), i(0x25, 2, 0, 0, 3), ret0[0], EXIT], 2),
        ("r0 = K; exit", ret0.to_vec(), 1),
        // Two `mov r4, K; if r2 == r4` elements: an eq stretch, one entry.
        ("mov K then compare, twice", vec![mov_k(4, 1), jeq_x(2, 4), mov_k(4, 2), jeq_x(2, 4), ret0[0], EXIT], 2),
        // `mov r4, r3`: no constant, no element.
        (
            "mov X then compare",
            vec![i(0xbf, 4, 3, 0, 0), jeq_x(2, 4), i(0xbf, 4, 3, 0, 0), jeq_x(2, 4), ret0[0], EXIT],
            1,
        ),
        // The compare reads the register the mov wrote on both sides.
        ("mov K then compare with itself", vec![mov_k(4, 1), jeq_x(4, 4), mov_k(4, 2), jeq_x(4, 4), ret0[0], EXIT], 1),
        // Two K compares on r2 after a load of it: the load heads the chain.
        (
            "load, then two compares",
            vec![i(0x61, 2, 1, 4, 0), i(0x25, 2, 0, 0, 3), i(0x25, 2, 0, 0, 5), ret0[0], EXIT],
            3,
        ),
        // The converter's prologue: two clears then a 64-bit copy.
        ("prologue", vec![i(0xac, 0, 0, 0, 0), i(0xac, 7, 7, 0, 0), i(0xbf, 6, 1, 0, 0), ret0[0], EXIT], 2),
    ];
    for (what, p, want) in rows {
        let prog = Program::load(&p, &LoadOptions::default(), &Helpers::new()).unwrap();
        assert_eq!(prog.fused_chains(), want, "{what}");
    }
}
