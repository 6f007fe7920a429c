#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Per-group semantics of the interpreter (SPEC §3.3, RFC 9669).

use ebpf::abi::region::MEM_BASE;
use ebpf::op::OpError;
use ebpf::{ExecError, Input, Vm};
use ebpf::{Helpers, Insn, LoadError, LoadOptions, Program, SkbContext, SkbMeta};

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}
const EXIT: Insn = Insn::new(0x95, 0, 0, 0, 0);

fn lddw(dst: u8, v: u64) -> [Insn; 2] {
    [i(0x18, dst, 0, 0, v as u32 as i32), i(0, 0, 0, 0, (v >> 32) as u32 as i32)]
}

fn run(insns: &[Insn]) -> u64 {
    let prog = Program::load(insns, &LoadOptions::default(), &Helpers::conformance()).unwrap();
    Vm::new().run(&prog, Input::None).unwrap()
}

/// r0 = a; r1 = b; r0 <op>= r1 (code given for the X form); exit.
fn binop(code: u8, off: i16, a: u64, b: u64) -> u64 {
    let mut p = Vec::new();
    p.extend(lddw(0, a));
    p.extend(lddw(1, b));
    p.push(i(code, 0, 1, off, 0));
    p.push(EXIT);
    run(&p)
}

#[test]
fn division_by_zero_follows_verifier_fixups() {
    let x = 0xdead_beef_1234_5678;
    assert_eq!(binop(0x3f, 0, x, 0), 0, "div64");
    assert_eq!(binop(0x9f, 0, x, 0), x, "mod64 keeps dst");
    assert_eq!(binop(0x3c, 0, x, 0), 0, "div32");
    assert_eq!(binop(0x9c, 0, x, 0), 0x1234_5678, "mod32 zero-extends dst");
    assert_eq!(binop(0x3f, 1, x, 0), 0, "sdiv64");
    assert_eq!(binop(0x9f, 1, x, 0), x, "smod64");
    assert_eq!(binop(0x3c, 1, x, 0), 0, "sdiv32");
    assert_eq!(binop(0x9c, 1, x, 0), 0x1234_5678, "smod32");
    // K form with imm 0 (verifier would reject; same fix-up semantics here).
    assert_eq!(run(&[i(0xb7, 0, 0, 0, 7), i(0x37, 0, 0, 0, 0), EXIT]), 0);
    assert_eq!(run(&[i(0xb7, 0, 0, 0, 7), i(0x97, 0, 0, 0, 0), EXIT]), 7);
}

#[test]
fn signed_division_and_modulo() {
    let min64 = i64::MIN as u64;
    assert_eq!(binop(0x3f, 1, min64, u64::MAX), min64, "LLONG_MIN s/ -1");
    assert_eq!(binop(0x9f, 1, min64, u64::MAX), 0, "LLONG_MIN s% -1");
    assert_eq!(binop(0x3c, 1, 0x8000_0000, 0xffff_ffff), 0x8000_0000, "INT_MIN s/ -1");
    assert_eq!(binop(0x9c, 1, 0x8000_0000, 0xffff_ffff), 0, "INT_MIN s% -1");
    assert_eq!(binop(0x3f, 1, (-7i64) as u64, 2), (-3i64) as u64, "truncating");
    assert_eq!(binop(0x9f, 1, (-7i64) as u64, 2), (-1i64) as u64, "sign of dividend");
    assert_eq!(binop(0x9c, 1, (-7i32) as u32 as u64, 2), 0xffff_ffff);
    // Unsigned DIV K divides by the sign-extended immediate (ALU64).
    assert_eq!(run(&[i(0xb7, 0, 0, 0, -1), i(0x37, 0, 0, 0, -1), EXIT]), 1);
    // ALU32 DIV K uses (u32)imm: 0xffffffff / 0x80000000 = 1.
    assert_eq!(run(&[i(0xb4, 0, 0, 0, -1), i(0x34, 0, 0, 0, i32::MIN), EXIT]), 1);
}

#[test]
fn alu32_zero_extends_and_alu64_sign_extends_k() {
    let mut p = lddw(0, u64::MAX).to_vec();
    p.extend([i(0x04, 0, 0, 0, 1), EXIT]); // w0 += 1
    assert_eq!(run(&p), 0);
    assert_eq!(run(&[i(0xb7, 0, 0, 0, -2), EXIT]), (-2i64) as u64);
    assert_eq!(run(&[i(0xb4, 0, 0, 0, -2), EXIT]), 0xffff_fffe);
    assert_eq!(run(&[i(0xb7, 0, 0, 0, 5), i(0x84, 0, 0, 0, 0), EXIT]), 0xffff_fffb, "neg32");
}

#[test]
fn shifts_are_masked() {
    // K forms masked per RFC 9669.
    assert_eq!(run(&[i(0xb7, 0, 0, 0, 1), i(0x67, 0, 0, 0, 65), EXIT]), 2);
    assert_eq!(run(&[i(0xb4, 0, 0, 0, 1), i(0x64, 0, 0, 0, 33), EXIT]), 2);
    assert_eq!(binop(0x6f, 0, 1, 64 + 3), 8);
    assert_eq!(binop(0x6c, 0, 1, 32 + 3), 8);
    assert_eq!(binop(0xcc, 0, 0x8000_0000, 4), 0xf800_0000, "arsh32 zero-extends");
    assert_eq!(binop(0xcf, 0, 1 << 63, 63), u64::MAX, "arsh64");
}

#[test]
fn movsx_and_ldsx() {
    let mut p = lddw(1, 0x1234_5680).to_vec();
    p.extend([i(0xbf, 0, 1, 8, 0), EXIT]);
    assert_eq!(run(&p), 0xffff_ffff_ffff_ff80);
    let mut p = lddw(1, 0x8000_8000).to_vec();
    p.extend([i(0xbc, 0, 1, 16, 0), EXIT]);
    assert_eq!(run(&p), 0xffff_8000, "movsx32 zero-extends");
    let mut p = lddw(1, 0x8000_0000).to_vec();
    p.extend([i(0xbf, 0, 1, 32, 0), EXIT]);
    assert_eq!(run(&p), 0xffff_ffff_8000_0000);
    // ldxsh from the stack.
    let p = [i(0x6a, 10, 0, -2, 0x8001), i(0x89, 0, 10, -2, 0), EXIT];
    assert_eq!(run(&p), 0xffff_ffff_ffff_8001);
}

#[test]
fn end_and_bswap() {
    let v = 0x0102_0304_0506_0708u64;
    let with = |code: u8, imm: i32| {
        let mut p = lddw(0, v).to_vec();
        p.extend([i(code, 0, 0, 0, imm), EXIT]);
        run(&p)
    };
    assert_eq!(with(0xd4, 16), 0x0708, "le16 truncates");
    assert_eq!(with(0xd4, 32), 0x0506_0708);
    assert_eq!(with(0xd4, 64), v);
    assert_eq!(with(0xdc, 16), 0x0807, "be16 swaps");
    assert_eq!(with(0xdc, 32), 0x0807_0605);
    assert_eq!(with(0xdc, 64), 0x0807_0605_0403_0201);
    assert_eq!(with(0xd7, 16), 0x0807, "bswap16");
    assert_eq!(with(0xd7, 32), 0x0807_0605);
    assert_eq!(with(0xd7, 64), 0x0807_0605_0403_0201);
    let err = Program::load(&[i(0xd4, 0, 0, 0, 8), EXIT], &LoadOptions::default(), &Helpers::new()).unwrap_err();
    assert!(matches!(err, LoadError::Decode { op: OpError::BadImmediate { .. }, .. }), "{err}");
}

#[test]
fn jmp_k_is_sign_extended_and_jmp32_compares_low_halves() {
    // r0 = 0xffffffff (zero-extended): JMP "== -1" is false (K is 0xffff...ffff).
    let p = [i(0xb4, 1, 0, 0, -1), i(0xb7, 0, 0, 0, 1), i(0x15, 1, 0, 1, -1), i(0xb7, 0, 0, 0, 2), EXIT];
    assert_eq!(run(&p), 2);
    // JMP32 "== -1" on the low half is true.
    let p = [i(0xb4, 1, 0, 0, -1), i(0xb7, 0, 0, 0, 1), i(0x16, 1, 0, 1, -1), i(0xb7, 0, 0, 0, 2), EXIT];
    assert_eq!(run(&p), 1);
    // JMP32 signed: low half 0x80000000 s< 0.
    let mut p = lddw(1, 0x1_8000_0000).to_vec();
    p.extend([i(0xb7, 0, 0, 0, 1), i(0xc6, 1, 0, 1, 0), i(0xb7, 0, 0, 0, 2), EXIT]);
    assert_eq!(run(&p), 1);
    // JMP64 signed on the same value: positive.
    let mut p = lddw(1, 0x1_8000_0000).to_vec();
    p.extend([i(0xb7, 0, 0, 0, 1), i(0xc5, 1, 0, 1, 0), i(0xb7, 0, 0, 0, 2), EXIT]);
    assert_eq!(run(&p), 2);
    // gotol: JMP32|JA jumps by imm.
    let p = [i(0xb7, 0, 0, 0, 1), i(0x06, 0, 0, 0, 1), i(0xb7, 0, 0, 0, 2), EXIT];
    assert_eq!(run(&p), 1);
    // JSET.
    let p = [i(0xb7, 1, 0, 0, 6), i(0xb7, 0, 0, 0, 1), i(0x45, 1, 0, 1, 4), i(0xb7, 0, 0, 0, 2), EXIT];
    assert_eq!(run(&p), 1);
}

#[test]
fn compare_chains_match_unfused_execution() {
    // Converted-seccomp style chain: w0 = nr; if r0 == k goto; w2 = big; if r0 == r2 goto ...
    let chain = |nr: i32| {
        let mut p = vec![i(0xb4, 0, 0, 0, nr)];
        for k in 0..20 {
            p.push(i(0x15, 0, 0, 40 - 2 * k as i16 + 20, k * 3));
            p.push(i(0x55, 0, 0, 0, k * 3 + 1)); // jne +0: both outcomes continue
        }
        p.push(i(0xb4, 2, 0, 0, i32::MIN));
        p.push(i(0x1d, 0, 2, 1, 0));
        p.push(i(0xa5, 0, 0, 1, 7)); // jlt
        p.push(i(0xb7, 0, 0, 0, 1000));
        p.push(i(0xbf, 3, 2, 0, 0));
        p.push(EXIT);
        p.resize(p.len() + 60, i(0xb7, 0, 0, 0, 77));
        p.push(i(0x0f, 0, 2, 0, 0));
        p.push(EXIT);
        p
    };
    for nr in [-5, 0, 1, 3, 6, 7, 30, 57, 58, i32::MIN, i32::MAX] {
        let p = chain(nr);
        let fused = Program::load(&p, &LoadOptions::default(), &Helpers::new()).unwrap();
        let plain =
            Program::load(&p, &LoadOptions { no_superinstructions: true, ..Default::default() }, &Helpers::new())
                .unwrap();
        assert!(fused.fused_chains() > 0);
        let (mut a, mut b) = (Vm::new(), Vm::new());
        assert_eq!(a.run(&fused, Input::None), b.run(&plain, Input::None), "nr {nr}");
        assert_eq!(a.executed(), b.executed(), "step count, nr {nr}");
    }
}

#[test]
fn atomics_w_and_dw() {
    // Each case: store 0x10 at fp-8 (DW), r1 = 3, atomic op, return stack word or r1 or r0.
    let case = |code: u8, imm: i32, ret: Insn| {
        run(&[
            i(0x7a, 10, 0, -8, 0x10),
            i(0xb7, 1, 0, 0, 3),
            i(0xb7, 0, 0, 0, 0x10),
            i(code, 10, 1, -8, imm),
            ret,
            EXIT,
        ])
    };
    let mem = i(0x79, 0, 10, -8, 0);
    let src = i(0xbf, 0, 1, 0, 0);
    let r0 = i(0xbf, 0, 0, 0, 0);
    assert_eq!(case(0xdb, 0x00, mem), 0x13, "add");
    assert_eq!(case(0xdb, 0x40, mem), 0x13, "or");
    assert_eq!(case(0xdb, 0x50, mem), 0x00, "and");
    assert_eq!(case(0xdb, 0xa0, mem), 0x13, "xor");
    assert_eq!(case(0xdb, 0x01, src), 0x10, "fetch add returns old");
    assert_eq!(case(0xdb, 0x01, mem), 0x13);
    assert_eq!(case(0xdb, 0xe1, src), 0x10, "xchg");
    assert_eq!(case(0xdb, 0xe1, mem), 3);
    assert_eq!(case(0xdb, 0xf1, mem), 3, "cmpxchg equal: stores src");
    assert_eq!(case(0xdb, 0xf1, r0), 0x10, "cmpxchg loads old into r0");
    assert_eq!(case(0xc3, 0x00, mem), 0x13, "add32");
    assert_eq!(case(0xc3, 0xa1, src), 0x10, "fetch xor32");
    // 32-bit cmpxchg compares the low half of r0 and zero-extends into r0.
    let p = [
        i(0x7a, 10, 0, -8, -1),
        i(0xb7, 1, 0, 0, 3),
        i(0xb7, 0, 0, 0, -1), // r0 = 0xffff...ffff, low half matches
        i(0xc3, 10, 1, -8, 0xf1),
        EXIT,
    ];
    assert_eq!(run(&p), 0xffff_ffff);
    // Fetch into r10 is refused at load.
    let err = Program::load(&[i(0xdb, 1, 10, 0, 0x01), EXIT], &LoadOptions::default(), &Helpers::new()).unwrap_err();
    assert!(matches!(err, LoadError::WritesFramePointer { .. }), "{err}");
}

#[test]
fn local_calls_preserve_callee_saved_registers() {
    let p = [
        i(0xb7, 6, 0, 0, 6),
        i(0xb7, 9, 0, 0, 9),
        i(0xb7, 1, 0, 0, 40),
        i(0x7b, 10, 6, -8, 0), // caller stack slot
        i(0x85, 0, 1, 0, 5),   // call +5
        i(0x0f, 0, 6, 0, 0),   // r0 += r6
        i(0x0f, 0, 9, 0, 0),
        i(0x79, 1, 10, -8, 0),
        i(0x0f, 0, 1, 0, 0),
        EXIT,
        // callee at 10: clobbers r6..r9 and its own stack, returns r1 + 2
        i(0xb7, 6, 0, 0, 100),
        i(0xb7, 9, 0, 0, 100),
        i(0x7b, 10, 6, -8, 0),
        i(0xbf, 0, 1, 0, 0),
        i(0x07, 0, 0, 0, 2),
        EXIT,
    ];
    assert_eq!(run(&p), 42 + 6 + 9 + 6);
}

#[test]
fn call_depth_is_limited_to_eight_frames() {
    let depth_exceeded = |p: &[Insn]| {
        let prog = Program::load(p, &LoadOptions::default(), &Helpers::new()).unwrap();
        let err = Vm::new().run(&prog, Input::None).unwrap_err();
        matches!(err, ExecError::CallDepthExceeded { max: 8, .. })
    };
    // Each frame calls itself: unbounded recursion.
    assert!(depth_exceeded(&[i(0x85, 0, 1, 0, -1), EXIT]));
    // `calls` nested calls, the innermost function returning 5.
    let nested = |calls: usize| {
        let mut p: Vec<Insn> = (0..calls).flat_map(|_| [i(0x85, 0, 1, 0, 1), EXIT]).collect();
        p.extend([i(0xb7, 0, 0, 0, 5), EXIT]);
        p
    };
    // Seven (8 frames) are fine; eight would make a ninth frame.
    assert_eq!(run(&nested(7)), 5);
    assert!(depth_exceeded(&nested(8)));
}

/// `r0 = K; exit` in a local function returns to its caller, which goes
/// on (the load-time fusion of the pair must not end the program).
#[test]
fn a_callee_returning_a_constant_returns_to_its_caller() {
    let p = [i(0x85, 0, 1, 0, 2), i(0x07, 0, 0, 0, 10), EXIT, i(0xb7, 0, 0, 0, 1), EXIT];
    assert_eq!(run(&p), 11);
}

/// The converter's prologue (`w0 ^= w0; w7 ^= w7; r6 = r1`), which the
/// loader fuses into one step, clears both registers and copies the
/// context pointer, wherever it stands.
#[test]
fn the_fused_prologue_clears_and_copies_its_own_registers() {
    let p = [
        i(0xb7, 7, 0, 0, 5), // r7 = 5
        i(0xb7, 0, 0, 0, 9), // r0 = 9
        i(0xac, 0, 0, 0, 0), // w0 ^= w0 (the prologue, fused)
        i(0xac, 7, 7, 0, 0), // w7 ^= w7
        i(0xbf, 6, 1, 0, 0), // r6 = r1
        i(0x0f, 0, 7, 0, 0), // r0 += r7
        i(0x61, 2, 6, 4, 0), // w2 = *(u32 *)(r6 + 4)
        i(0x0f, 0, 2, 0, 0), // r0 += r2
        EXIT,
    ];
    let prog = Program::load(&p, &LoadOptions::default(), &Helpers::new()).unwrap();
    let mut mem = [0u8; 8];
    mem[4..].copy_from_slice(&0x0102_0304u32.to_le_bytes());
    assert_eq!(Vm::new().run(&prog, Input::Memory(&mut mem)).unwrap(), 0x0102_0304);
}

#[test]
fn ld_imm64_and_helpers() {
    let mut p = lddw(0, 0x1122_3344_5566_7788).to_vec();
    p.push(EXIT);
    assert_eq!(run(&p), 0x1122_3344_5566_7788);
    // Helper 5 of the conformance set returns r1; callx through r2.
    assert_eq!(run(&[i(0xb7, 1, 0, 0, 9), i(0x85, 0, 0, 0, 5), EXIT]), 9);
    assert_eq!(run(&[i(0xb7, 1, 0, 0, 9), i(0xb7, 2, 0, 0, 5), i(0x8d, 2, 0, 0, 0), EXIT]), 9);
    let err =
        Program::load(&[i(0x85, 0, 0, 0, 6), EXIT], &LoadOptions::default(), &Helpers::conformance()).unwrap_err();
    assert_eq!(err, LoadError::UnknownHelper { pc: ebpf::Pc(0), id: 6 });
}

#[test]
fn structural_checks_at_load() {
    let load = |p: &[Insn]| Program::load(p, &LoadOptions::default(), &Helpers::new()).unwrap_err();
    assert_eq!(load(&[]), LoadError::Empty);
    assert!(matches!(load(&[i(0x05, 0, 0, 5, 0), EXIT]), LoadError::JumpOutOfRange { .. }));
    assert!(matches!(load(&[i(0x05, 0, 0, -2, 0), EXIT]), LoadError::JumpOutOfRange { .. }));
    assert!(matches!(load(&[i(0x18, 0, 0, 0, 0)]), LoadError::Decode { op: OpError::IncompleteLdImm64, .. }));
    assert!(matches!(
        load(&[i(0x05, 0, 0, 1, 0), i(0x18, 0, 0, 0, 0), i(0, 0, 0, 0, 0), EXIT]),
        LoadError::JumpIntoLdImm64 { .. }
    ));
    assert!(matches!(load(&[i(0xb7, 10, 0, 0, 0), EXIT]), LoadError::WritesFramePointer { .. }));
    assert!(matches!(load(&[i(0xbf, 0, 11, 0, 0), EXIT]), LoadError::BadRegister { reg: 11, .. }));
    assert!(matches!(
        load(&[i(0xff, 0, 0, 0, 0), EXIT]),
        LoadError::Decode { op: OpError::UnknownOpcode { code: 0xff, .. }, .. }
    ));
    assert!(
        matches!(load(&[i(0xe5, 0, 0, 0, 0), EXIT]), LoadError::Decode { op: OpError::UnknownOpcode { .. }, .. }),
        "may_goto"
    );
    assert!(matches!(
        load(&[i(0x3f, 0, 1, 2, 0), EXIT]),
        LoadError::Decode { op: OpError::BadOffset { off: 2, .. }, .. }
    ));
}

#[test]
fn converted_cbpf_junk_fields_are_accepted_unless_strict() {
    // ALU K with src = r7 and X with imm = k, as bpf_convert_filter() copies them.
    let p = [i(0x04, 0, 7, 0, 5), i(0x0c, 0, 7, 0, 5), i(0x84, 0, 7, 0, 5), EXIT];
    let lenient = Program::load(&p, &LoadOptions::default(), &Helpers::new()).unwrap();
    assert_eq!(Vm::new().run(&lenient, Input::None).unwrap(), 0xffff_fffb);
    let strict = LoadOptions { strict: true, ..Default::default() };
    let err = Program::load(&p, &strict, &Helpers::new()).unwrap_err();
    assert!(matches!(err, LoadError::ReservedField { field: "src", .. }), "{err}");
    // bpf_conformance negative/unused-ja-imm.data.
    let err = Program::load(&[i(0x05, 0, 0, 0, 1), EXIT], &strict, &Helpers::new()).unwrap_err();
    assert!(matches!(err, LoadError::ReservedField { field: "imm", .. }), "{err}");
}

#[test]
fn legacy_ld_abs_and_ind() {
    let skb = SkbContext::new(&[0x11, 0x22, 0x33, 0x44, 0x55, 0x66], &SkbMeta::default());
    let go = |p: &[Insn]| {
        let prog = Program::load(p, &LoadOptions::default(), &Helpers::new()).unwrap();
        Vm::new().run(&prog, Input::Skb(&skb)).unwrap()
    };
    assert_eq!(go(&[i(0x20, 0, 0, 0, 1), EXIT]), 0x2233_4455, "ABS W big-endian");
    assert_eq!(go(&[i(0x28, 0, 0, 0, 4), EXIT]), 0x5566);
    assert_eq!(go(&[i(0x30, 0, 0, 0, 5), EXIT]), 0x66);
    assert_eq!(go(&[i(0xb7, 0, 0, 0, 9), i(0x20, 0, 0, 0, 3), EXIT]), 0, "out of range returns 0");
    assert_eq!(go(&[i(0xb7, 3, 0, 0, 2), i(0x48, 0, 3, 0, 1), EXIT]), 0x4455, "IND = src + imm");
    assert_eq!(go(&[i(0xb7, 3, 0, 0, -1), i(0x50, 0, 3, 0, 2), EXIT]), 0x22, "IND wraps in 32 bits");
    assert_eq!(go(&[i(0xb7, 3, 0, 0, 5), i(0x50, 0, 3, 0, 1), i(0xb7, 0, 0, 0, 7), EXIT]), 0);
    // SKF_LL_OFF: MAC header at 0; SKF_NET_OFF: network header at min(len, 14) = 6 -> past the end.
    assert_eq!(go(&[i(0x30, 0, 0, 0, -0x200000 + 2), EXIT]), 0x33);
    assert_eq!(go(&[i(0x30, 0, 0, 0, -0x100000), i(0xb7, 0, 0, 0, 1), EXIT]), 0);
    // Without a socket buffer the load fails: returns 0.
    assert_eq!(run(&[i(0xb7, 0, 0, 0, 9), i(0x30, 0, 0, 0, 0), EXIT]), 0);
}

#[test]
fn memory_input_sets_r1_and_r2() {
    let mut buf = [1u8, 2, 3, 4, 5, 6, 7, 8];
    let p = [i(0x79, 3, 1, 0, 0), i(0x7b, 1, 2, 0, 0), i(0xbf, 0, 3, 0, 0), EXIT];
    let prog = Program::load(&p, &LoadOptions::default(), &Helpers::new()).unwrap();
    let r0 = Vm::new().run(&prog, Input::Memory(&mut buf)).unwrap();
    assert_eq!(r0, 0x0807_0605_0403_0201);
    assert_eq!(buf, 8u64.to_le_bytes(), "r2 = length stored back");
    let prog = Program::load(&[i(0xbf, 0, 1, 0, 0), EXIT], &LoadOptions::default(), &Helpers::new()).unwrap();
    assert_eq!(Vm::new().run(&prog, Input::Memory(&mut buf)).unwrap(), MEM_BASE);
}

#[test]
fn strict_mode_accepts_well_formed_end_and_rejects_junk() {
    let strict = LoadOptions { strict: true, ..Default::default() };
    for code in [0xd4u8, 0xdc, 0xd7] {
        for imm in [16, 32, 64] {
            Program::load(&[i(code, 0, 0, 0, imm), EXIT], &strict, &Helpers::new()).unwrap();
        }
        let err = Program::load(&[i(code, 0, 1, 0, 16), EXIT], &strict, &Helpers::new()).unwrap_err();
        assert!(matches!(err, LoadError::ReservedField { field: "src", .. }), "{err}");
    }
    // X-form ALU with imm != 0 is refused in strict mode, accepted by default.
    let p = [i(0x0f, 0, 1, 0, 3), EXIT];
    assert!(Program::load(&p, &strict, &Helpers::new()).is_err());
    assert!(Program::load(&p, &LoadOptions::default(), &Helpers::new()).is_ok());
}

/// Jumping into the middle of a fused `==` chain must not see a scratch
/// register write made by a chain element that did not run on that path
/// (regression: the chain stored the write of an earlier element on exit).
#[test]
fn mid_chain_entry_does_not_inherit_earlier_writes() {
    let src = "mov %r2, 1\nmov %r0, 5\nja lbl\nmov32 %r2, 7\njeq %r0, %r2, out\nlbl:\njeq %r0, 5, out\n\
               jeq %r0, 6, out\njeq %r0, 9, out\nmov %r0, 0\nexit\nout:\nmov %r0, %r2\nexit\n";
    let insns = ebpf::asm::assemble(src).unwrap();
    for no_superinstructions in [false, true] {
        let opts = ebpf::LoadOptions { no_superinstructions, ..Default::default() };
        let prog = ebpf::Program::load(&insns, &opts, &ebpf::Helpers::new()).unwrap();
        let r0 = ebpf::Vm::new().run(&prog, ebpf::Input::None).unwrap();
        assert_eq!(r0, 1, "no_superinstructions = {no_superinstructions}");
    }
}

/// Store-release writes its size's low bytes of `src` and nothing else;
/// load-acquire reads them back zero-extended (`___bpf_prog_run()`'s
/// `STX_ATOMIC_{B,H,W,DW}` with `BPF_STORE_REL` and `BPF_LOAD_ACQ`).
#[test]
fn store_release_and_load_acquire_use_their_size() {
    const V: u64 = 0x1122_3344_5566_7788;
    for (size_bits, bytes) in [(0x10u8, 1usize), (0x08, 2), (0x00, 4), (0x18, 8)] {
        let code = 0xc3 | size_bits;
        let mut p = lddw(2, V).to_vec();
        p.extend([i(code, 1, 2, 0, 0x110), i(code, 0, 1, 0, 0x100), EXIT]);
        let prog = Program::load(&p, &LoadOptions::default(), &Helpers::new()).unwrap();
        let mut mem = [0xffu8; 16];
        let r0 = Vm::new().run(&prog, Input::Memory(&mut mem)).unwrap();
        let low = if bytes == 8 { V } else { V & ((1u64 << (8 * bytes)) - 1) };
        assert_eq!(r0, low, "size {bytes}");
        assert_eq!(&mem[..bytes], &V.to_le_bytes()[..bytes], "size {bytes}");
        assert!(mem[bytes..].iter().all(|&b| b == 0xff), "size {bytes}: {mem:?}");
    }
}
