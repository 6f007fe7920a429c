#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The plain interpreter (`ebpf::plain`, the model of the kernel's
//! `___bpf_prog_run()` loop the `ebpf-plain` engine times) against the
//! general interpreter on random programs of the subset it models: every
//! ALU operation in its four forms, every jump condition in its four, both
//! `ja`s, loads from the context and the stack, stores to the stack, in and
//! out of bounds. Same result, same instruction count, the same fault at
//! the same pc; and its own refusals where it models nothing.
//!
//! Pointers are only ever bases: `r1` (the context) and `r10` (the frame
//! pointer) are never operands of an ALU operation or a compare, because
//! the two interpreters place the stack at different addresses (the general
//! one has eight frames).

use ebpf::opcode::*;
use ebpf::plain::{PlainError, PlainProgram};
use ebpf::{ExecError, Helpers, Insn, LoadOptions, Program, Vm};
use proptest::prelude::*;

const ALU_OPS: [u8; 12] =
    [BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_OR, BPF_AND, BPF_LSH, BPF_RSH, BPF_MOD, BPF_XOR, BPF_MOV, BPF_ARSH];
const JMP_CONDS: [u8; 11] =
    [BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JLT, BPF_JGE, BPF_JLE, BPF_JSGT, BPF_JSLT, BPF_JSGE, BPF_JSLE, BPF_JSET];
const SIZES: [u8; 4] = [BPF_B, BPF_H, BPF_W, BPF_DW];
/// The registers that hold numbers: all but the two pointers.
const DATA_REGS: [u8; 9] = [0, 2, 3, 4, 5, 6, 7, 8, 9];

/// Immediates at the edges of the operations: shift counts around 32 and
/// 64, signs, zero divisors, anything.
fn imm() -> impl Strategy<Value = i32> {
    prop_oneof![-3i32..70, Just(i32::MIN), Just(i32::MAX), Just(-64), (0i32..32).prop_map(|b| 1 << b), any::<i32>(),]
}

/// Raw `(kind, a, b, c, imm)` tuples, made into a program by [`build`].
fn raw_program() -> impl Strategy<Value = Vec<(u8, u8, u8, u16, i32)>> {
    prop::collection::vec((0u8..11, any::<u8>(), any::<u8>(), any::<u16>(), imm()), 1..40)
}

fn regs(dst: u8, src: u8) -> u8 {
    src << 4 | dst
}

/// One instruction of the modelled subset from a raw tuple; jumps go
/// forward to any instruction of the program (none past its end).
fn build(raw: &[(u8, u8, u8, u16, i32)]) -> Vec<Insn> {
    let len = raw.len();
    let mut out = Vec::with_capacity(len);
    for (pc, &(kind, a, b, c, imm)) in raw.iter().enumerate() {
        let dst = DATA_REGS[usize::from(a) % DATA_REGS.len()];
        let src = DATA_REGS[usize::from(b) % DATA_REGS.len()];
        let class64 = c & 1 == 0;
        // Forward room: a target in pc + 1 ..= len - 1.
        let room = len - pc - 1;
        let insn = match kind {
            // ALU, K or X.
            0 | 1 => {
                let op = ALU_OPS[usize::from(a / 16) % ALU_OPS.len()];
                let class = if class64 { BPF_ALU64 } else { BPF_ALU };
                let off = if matches!(op, BPF_DIV | BPF_MOD) { i16::from(c & 2 != 0) } else { 0 };
                if kind == 0 {
                    Insn { code: class | op | BPF_K, regs: regs(dst, 0), off, imm }
                } else {
                    Insn { code: class | op | BPF_X, regs: regs(dst, src), off, imm: 0 }
                }
            }
            2 => Insn { code: if class64 { BPF_ALU64 } else { BPF_ALU } | BPF_NEG, regs: regs(dst, 0), off: 0, imm: 0 },
            // Conditional jumps, K or X, 64- or 32-bit.
            3 | 4 if room > 0 => {
                let cond = JMP_CONDS[usize::from(b / 16) % JMP_CONDS.len()];
                let class = if class64 { BPF_JMP } else { BPF_JMP32 };
                let off = (usize::from(c >> 1) % room) as i16;
                if kind == 3 {
                    Insn { code: class | cond | BPF_K, regs: regs(dst, 0), off, imm }
                } else {
                    Insn { code: class | cond | BPF_X, regs: regs(dst, src), off, imm: 0 }
                }
            }
            5 if room > 0 => {
                let by = usize::from(c >> 1) % room;
                if class64 {
                    Insn { code: BPF_JMP | BPF_JA, regs: 0, off: by as i16, imm: 0 }
                } else {
                    Insn { code: BPF_JMP32 | BPF_JA, regs: 0, off: 0, imm: by as i32 }
                }
            }
            // Loads: from the context (64 bytes at r1) or the stack (512
            // below r10), a few bytes either side of each.
            6 | 7 => {
                let size = SIZES[usize::from(b) % SIZES.len()];
                let (base, off) =
                    if kind == 6 { (1, (i32::from(c) % 72) - 4) } else { (10, -(i32::from(c) % 524) + 4) };
                Insn { code: BPF_LDX | BPF_MEM | size, regs: regs(dst, base), off: off as i16, imm: 0 }
            }
            // Stores to the stack: a register or an immediate.
            8 | 9 => {
                let size = SIZES[usize::from(a) % SIZES.len()];
                let off = -(i32::from(c) % 524) + 4;
                if kind == 8 {
                    Insn { code: BPF_STX | BPF_MEM | size, regs: regs(10, src), off: off as i16, imm: 0 }
                } else {
                    Insn { code: BPF_ST | BPF_MEM | size, regs: regs(10, 0), off: off as i16, imm }
                }
            }
            _ => Insn { code: BPF_JMP | BPF_EXIT, regs: 0, off: 0, imm: 0 },
        };
        out.push(insn);
    }
    out
}

/// What a run came to, in terms both interpreters share: a result and its
/// count, a fault (pc, size, and the address when it is in the context,
/// where both place it alike), or falling off the end at a pc.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Ok(u32, u64),
    Fault { pc: usize, size: usize, ctx_addr: Option<u64> },
    FellOffEnd(usize),
}

fn ctx_addr(addr: u64) -> Option<u64> {
    (addr >> 32 == 1).then_some(addr)
}

fn plain_outcome(p: &PlainProgram, data: &[u8; 64]) -> Outcome {
    match p.run_counted(data) {
        Ok((r0, steps)) => Outcome::Ok(r0, steps),
        Err(PlainError::Fault { pc, addr, size }) => Outcome::Fault { pc: pc.0, size, ctx_addr: ctx_addr(addr) },
        Err(PlainError::FellOffEnd { pc }) => Outcome::FellOffEnd(pc.0),
        Err(e) => panic!("run: {e}"),
    }
}

fn general_outcome(prog: &Program, data: &[u8; 64]) -> Outcome {
    let mut vm = Vm::new();
    match vm.run_seccomp(prog, data) {
        Ok(r0) => Outcome::Ok(r0, vm.executed()),
        Err(ExecError::OutOfBounds { pc, addr, size, .. }) => {
            Outcome::Fault { pc: pc.0, size, ctx_addr: ctx_addr(addr) }
        }
        Err(ExecError::FellOffEnd { pc }) => Outcome::FellOffEnd(pc.0),
        Err(e) => panic!("general: {e}"),
    }
}

/// A context with every byte distinct, so a load's offset and width show
/// in what it reads.
fn context(seed: u8) -> [u8; 64] {
    std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(seed))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn plain_runs_as_the_general_interpreter(raw in raw_program(), seed in any::<u8>()) {
        let insns = build(&raw);
        let plain = PlainProgram::new(&insns).unwrap();
        let data = context(seed);
        let want = plain_outcome(&plain, &data);
        for opts in [LoadOptions { no_superinstructions: true, ..LoadOptions::default() }, LoadOptions::default()] {
            let prog = Program::load(&insns, &opts, &Helpers::new()).unwrap();
            prop_assert_eq!(&general_outcome(&prog, &data), &want, "{:?}", insns);
        }
    }
}

/// Each refusal of `PlainProgram::new`, at its pc: a backward or escaping
/// jump (either `ja`, conditional ones), and each family it does not model.
#[test]
fn plain_refuses_what_it_does_not_model_at_its_pc() {
    let exit = Insn { code: BPF_JMP | BPF_EXIT, regs: 0, off: 0, imm: 0 };
    let mov = Insn { code: BPF_ALU64 | BPF_MOV | BPF_K, regs: 0, off: 0, imm: 1 };
    let jumps = [
        (Insn { code: BPF_JMP | BPF_JA, regs: 0, off: -2, imm: 0 }, true),
        (Insn { code: BPF_JMP | BPF_JA, regs: 0, off: -1, imm: 0 }, true),
        (Insn { code: BPF_JMP | BPF_JA, regs: 0, off: 0, imm: 0 }, false),
        (Insn { code: BPF_JMP | BPF_JA, regs: 0, off: 1, imm: 0 }, false),
        (Insn { code: BPF_JMP | BPF_JA, regs: 0, off: 2, imm: 0 }, true),
        (Insn { code: BPF_JMP32 | BPF_JA, regs: 0, off: 0, imm: 1 }, false),
        (Insn { code: BPF_JMP32 | BPF_JA, regs: 0, off: 0, imm: 2 }, true),
        (Insn { code: BPF_JMP32 | BPF_JA, regs: 0, off: 0, imm: -1 }, true),
        // gotol's target is its imm: off is not read.
        (Insn { code: BPF_JMP32 | BPF_JA, regs: 0, off: 7, imm: 0 }, false),
        (Insn { code: BPF_JMP | BPF_JEQ | BPF_K, regs: 0, off: 1, imm: 0 }, false),
        (Insn { code: BPF_JMP | BPF_JEQ | BPF_K, regs: 0, off: 2, imm: 0 }, true),
        (Insn { code: BPF_JMP32 | BPF_JGT | BPF_X, regs: 0x20, off: -1, imm: 0 }, true),
        (Insn { code: BPF_JMP32 | BPF_JGT | BPF_X, regs: 0x20, off: 1, imm: 0 }, false),
    ];
    for (jump, refused) in jumps {
        // mov; jump; exit; exit: the jump at pc 1, targets pc 2 and 3 inside.
        let prog = [mov, jump, exit, exit];
        let got = PlainProgram::new(&prog);
        if refused {
            assert_eq!(got.unwrap_err(), PlainError::Jump { pc: ebpf::Pc(1) }, "{jump:?}");
        } else {
            assert!(got.is_ok(), "{jump:?}: {got:?}");
        }
    }
    let unmodelled = [
        BPF_JMP | BPF_CALL,
        BPF_LD | BPF_IMM | BPF_DW,
        BPF_ALU | BPF_END | BPF_TO_BE,
        BPF_STX | BPF_ATOMIC | BPF_W,
        BPF_LDX | BPF_MEMSX | BPF_W,
        BPF_LD | BPF_ABS | BPF_W,
        BPF_JMP | BPF_EXIT | BPF_X,
    ];
    for code in unmodelled {
        let prog = [mov, Insn { code, regs: 0, off: 0, imm: 0 }, exit];
        assert_eq!(PlainProgram::new(&prog).unwrap_err(), PlainError::Unsupported { pc: ebpf::Pc(1), code });
    }
}

/// The opcodes the subset has whose `off` selects a form it does not
/// model: DIV/MOD's other than the signed 1, `MOV`'s sign-extension widths
/// (`movsx`), any `off` on the other ALU operations but NEG's.
#[test]
fn plain_refuses_alu_offsets_it_does_not_model() {
    let exit = Insn { code: BPF_JMP | BPF_EXIT, regs: 0, off: 0, imm: 0 };
    for (code, off, refused) in [
        (BPF_ALU64 | BPF_DIV | BPF_K, 2, true),
        (BPF_ALU64 | BPF_DIV | BPF_K, 1, false),
        (BPF_ALU | BPF_MOD | BPF_X, -1, true),
        (BPF_ALU | BPF_MOD | BPF_X, 1, false),
        (BPF_ALU64 | BPF_MOV | BPF_X, 8, true),
        (BPF_ALU | BPF_MOV | BPF_K, 1, true),
        (BPF_ALU | BPF_MOV | BPF_K, 0, false),
        (BPF_ALU64 | BPF_ADD | BPF_X, 1, false),
        (BPF_ALU64 | BPF_NEG, 1, false),
    ] {
        let prog = [exit, Insn { code, regs: 0x23, off, imm: 3 }, exit];
        let got = PlainProgram::new(&prog);
        if refused {
            assert_eq!(got.unwrap_err(), PlainError::UnsupportedOffset { pc: ebpf::Pc(1), code, off });
        } else {
            assert!(got.is_ok(), "{code:#x} off {off}: {got:?}");
        }
    }
    // ... and the signed forms compute: -7 / 2 = -3, -7 % 2 = -1 (SDIV, SMOD).
    for (op, want) in [(BPF_DIV, -3i32), (BPF_MOD, -1)] {
        let prog = [
            Insn { code: BPF_ALU | BPF_MOV | BPF_K, regs: 0, off: 0, imm: -7 },
            Insn { code: BPF_ALU | op | BPF_K, regs: 0, off: 1, imm: 2 },
            exit,
        ];
        assert_eq!(PlainProgram::new(&prog).unwrap().run_seccomp(&[0; 64]).unwrap(), want as u32);
    }
}

/// Registers the fusion shapes compare: few, so runs on one register are
/// common.
const RUN_REGS: [u8; 2] = [0, 2];

/// Compare operands near the context words of [`small_context`], and the
/// edges of the signed and 32-bit ranges.
const RUN_IMMS: [i32; 12] = [0, 1, 2, 3, 4, 5, 7, -1, -2, i32::MIN, i32::MAX, 0x7fff_fff0];

/// A context of small words (0 ..= 7, and a negative one), so compares
/// against [`RUN_IMMS`] go both ways.
fn small_context(seed: u64) -> [u8; 64] {
    let mut data = [0u8; 64];
    for (i, w) in data.chunks_exact_mut(4).enumerate() {
        let v = if (seed >> (i * 3)) & 7 == 7 { u32::MAX - 1 } else { ((seed >> (i * 3)) & 7) as u32 };
        w.copy_from_slice(&v.to_le_bytes());
    }
    data
}

/// A raw kind as a shape: 9 to 11 are `mov rW, K` then a compare (shape
/// 1), 12 and 13 a compare (shape 0), so that runs of them (eq stretches
/// and range chains, one after the other) are common; 14 and above a
/// context load then one unsigned compare of what it loaded (shape 9, the
/// load-and-compare pairs the loader links).
fn shape(kind: u8) -> u8 {
    match kind {
        9..=11 => 1,
        12 | 13 => 0,
        14.. => 9,
        _ => kind,
    }
}

/// The instructions one raw tuple stands for: the shapes the general
/// interpreter fuses at load (compare runs on one register, `mov rW, K`
/// then a compare against rW, a context load before a run, `r0 = K; exit`,
/// the converter's prologue) and a few that break runs.
fn shape_len(kind: u8) -> usize {
    match shape(kind) {
        1 | 3 | 9 => 2,
        4 => 3,
        _ => 1,
    }
}

/// The end of every shapes program: `r0` takes in the registers the
/// `mov rW, K` elements write (a fused chain must leave them as the
/// instructions would), then `exit`.
const EPILOGUE: [Insn; 3] = [
    Insn::new(BPF_ALU64 | BPF_XOR | BPF_X, 0, 4, 0, 0),
    Insn::new(BPF_ALU64 | BPF_ADD | BPF_X, 0, 5, 0, 0),
    Insn::new(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
];

/// Builds the shapes, then the [`EPILOGUE`]; every jump goes forward to
/// any pc, the middle of a shape included (fusion must leave those entries
/// working).
fn build_shapes(raw: &[(u8, u8, u8, u16)]) -> Vec<Insn> {
    let len: usize = raw.iter().map(|r| shape_len(r.0)).sum::<usize>() + EPILOGUE.len();
    let mut out = Vec::with_capacity(len);
    for &(kind, a, b, c) in raw {
        let kind = shape(kind);
        let reg = RUN_REGS[usize::from(a) % RUN_REGS.len()];
        let other = RUN_REGS[usize::from(a / 3) % RUN_REGS.len()];
        let imm = RUN_IMMS[usize::from(b) % RUN_IMMS.len()];
        let class = if c & 3 != 3 { BPF_JMP } else { BPF_JMP32 };
        // Half the compares `==`: the loader's eq chains need stretches of them.
        let cond = if b & 0x80 == 0 { BPF_JEQ } else { JMP_CONDS[usize::from(b / 16) % JMP_CONDS.len()] };
        let mov = if c & 2 == 0 { BPF_ALU64 } else { BPF_ALU } | BPF_MOV | BPF_K;
        // The jump at the last slot of this shape: any pc after it.
        let jump_off = |pc: usize| (usize::from(c >> 2) % (len - pc - 1)) as i16;
        match kind {
            0 => {
                let pc = out.len();
                out.push(Insn { code: class | cond | BPF_K, regs: regs(reg, 0), off: jump_off(pc), imm });
            }
            1 => {
                // mov rW, K (or, now and then, mov rW, rS or a compare of rW
                // with itself, which are no chain elements); if rX op rW.
                let w = 4 + (a & 1);
                let x = if c & 0x30 == 0x30 { w } else { reg };
                if c & 0xc0 == 0xc0 {
                    out.push(Insn { code: mov | BPF_X, regs: regs(w, other), off: 0, imm: 0 });
                } else {
                    out.push(Insn { code: mov, regs: regs(w, 0), off: 0, imm });
                }
                let pc = out.len();
                out.push(Insn { code: class | cond | BPF_X, regs: regs(x, w), off: jump_off(pc), imm: 0 });
            }
            2 => {
                let off = i16::from(b % 16) * 4;
                out.push(Insn { code: BPF_LDX | BPF_MEM | BPF_W, regs: regs(reg, 1), off, imm: 0 });
            }
            3 => {
                out.push(Insn { code: mov, regs: regs(0, 0), off: 0, imm });
                out.push(Insn { code: BPF_JMP | BPF_EXIT, regs: 0, off: 0, imm: 0 });
            }
            4 => {
                // The converter's prologue: wA ^= wA; wX ^= wX; rC = rE;
                // now and then with one part off (an xor of two registers,
                // `rC = K`), which is no prologue.
                let xor_src = |d: u8, bit: u16| if c & bit != 0 { 4 } else { d };
                for (d, bit) in [(reg, 0x100), (other, 0x200)] {
                    out.push(Insn { code: BPF_ALU | BPF_XOR | BPF_X, regs: regs(d, xor_src(d, bit)), off: 0, imm: 0 });
                }
                if c & 0x400 != 0 {
                    out.push(Insn { code: BPF_ALU64 | BPF_MOV | BPF_K, regs: regs(6, 0), off: 0, imm });
                } else {
                    out.push(Insn { code: BPF_ALU64 | BPF_MOV | BPF_X, regs: regs(6, other), off: 0, imm: 0 });
                }
            }
            5 => {
                out.push(Insn { code: mov, regs: regs(reg, 0), off: 0, imm });
            }
            6 => {
                let pc = out.len();
                out.push(Insn { code: BPF_JMP | BPF_JA, regs: 0, off: jump_off(pc), imm: 0 });
            }
            9 => {
                let off = i16::from(b % 16) * 4;
                out.push(Insn { code: BPF_LDX | BPF_MEM | BPF_W, regs: regs(reg, 1), off, imm: 0 });
                let unsigned = [BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JGE, BPF_JLT, BPF_JLE][usize::from(a / 8) % 6];
                let pc = out.len();
                out.push(Insn { code: BPF_JMP | unsigned | BPF_K, regs: regs(reg, 0), off: jump_off(pc), imm });
            }
            _ => out.push(Insn { code: BPF_JMP | BPF_EXIT, regs: 0, off: 0, imm: 0 }),
        }
    }
    out.extend(EPILOGUE);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// The general interpreter's superinstructions (chains, eq chains,
    /// load-and-compare runs, `r0 = K; exit`, the prologue), entered at any
    /// pc, against the plain interpreter, which fuses nothing. A 65-byte
    /// context keeps the run on the general interpreter (the seccomp
    /// executor takes 64-byte ones), with superinstructions and without;
    /// `run_seccomp` takes whichever engine the program gets.
    #[test]
    fn fused_shapes_run_as_the_plain_interpreter(
        raw in prop::collection::vec((0u8..16, any::<u8>(), any::<u8>(), any::<u16>()), 1..30),
        seed in any::<u64>(),
    ) {
        let insns = build_shapes(&raw);
        let data = small_context(seed);
        let want = plain_outcome(&PlainProgram::new(&insns).unwrap(), &data);
        let mut wide = [0u8; 65];
        wide[..64].copy_from_slice(&data);
        for opts in [LoadOptions::default(), LoadOptions { no_superinstructions: true, ..LoadOptions::default() }] {
            let prog = Program::load(&insns, &opts, &Helpers::new()).unwrap();
            prop_assert_eq!(&general_outcome(&prog, &data), &want, "{:?}", insns);
            let mut vm = Vm::new();
            let got = match vm.run(&prog, ebpf::Input::Ctx(&wide)) {
                Ok(r0) => Outcome::Ok(r0 as u32, vm.executed()),
                Err(ExecError::FellOffEnd { pc }) => Outcome::FellOffEnd(pc.0),
                Err(e) => panic!("general: {e}"),
            };
            prop_assert_eq!(&got, &want, "{:?}", insns);
        }
    }
}

/// An eq stretch ends where its `mov rW, K` elements change register: a
/// fused stretch stores one register's final value when control leaves,
/// so `r4 = 1; if r2 == r4 ...; r5 = 2; if r2 == r5 ...` must keep both
/// writes when neither compare hits.
#[test]
fn an_eq_stretch_keeps_the_writes_of_two_registers() {
    // Both jumps go to the final `exit`.
    let jeq = |w: u8, off: i16| Insn { code: BPF_JMP | BPF_JEQ | BPF_X, regs: regs(2, w), off, imm: 0 };
    let mov = |w: u8, k: i32| Insn { code: BPF_ALU64 | BPF_MOV | BPF_K, regs: regs(w, 0), off: 0, imm: k };
    let mut insns = vec![mov(4, 1), jeq(4, 4), mov(5, 2), jeq(5, 2)];
    insns.extend(EPILOGUE);
    let data = small_context(0);
    assert_eq!(plain_outcome(&PlainProgram::new(&insns).unwrap(), &data), Outcome::Ok(3, 7));
    let prog = Program::load(&insns, &LoadOptions::default(), &Helpers::new()).unwrap();
    let mut wide = [0u8; 65];
    wide[..64].copy_from_slice(&data);
    let mut vm = Vm::new();
    assert_eq!(vm.run(&prog, ebpf::Input::Ctx(&wide)).map(|r0| (r0, vm.executed())), Ok((3, 7)));
}
