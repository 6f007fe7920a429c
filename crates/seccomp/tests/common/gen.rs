//! The instructions of the random seccomp programs the property suites
//! generate: each suite draws [`Gen`]s with its own weights, then fits them
//! into a program.

use cbpf::opcode::*;
use cbpf::{validate, AluOp, Insn, JmpOp, Mode, Program};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

/// One instruction of a random program, before jump offsets are fitted.
#[derive(Debug, Clone)]
pub enum Gen {
    /// `ld [4 * word]`; word 0 is nr, 1 is arch.
    LdData(u32),
    LdImm(u32),
    LdxImm(u32),
    Tax,
    Txa,
    /// Scratch words 0..4 (the prologue initialises them).
    St(u32),
    Stx(u32),
    LdMem(u32),
    LdxMem(u32),
    Alu(AluOp, bool, u32),
    Neg,
    Ja(u8),
    Jmp(JmpOp, bool, u32, u8, u8),
    RetK(u32),
    RetA,
    /// libseccomp's syscall dispatch: `jeq #k, L, 0` per entry (keys may
    /// repeat), sometimes ended by a two-way `jeq #k, L, M`.
    Dispatch(Vec<(u32, u8)>, Option<(u32, u8, u8)>),
}

impl Gen {
    /// How many instructions it becomes.
    pub fn len(&self) -> usize {
        match self {
            Gen::Dispatch(entries, end) => entries.len() + usize::from(end.is_some()),
            _ => 1,
        }
    }

    /// The instruction at `pc` of a program of `len` instructions, its jump
    /// offsets fitted to stay inside the program (see [`Gen::insn`]).
    pub fn insn_at(&self, pc: usize, len: usize, divisor: u32) -> Option<Insn> {
        // Largest offset that stays inside the program.
        let room = (len - pc - 2) as u32;
        self.insn(|off: u8| (u32::from(off) % (room + 1).min(256)) as u8, divisor)
    }

    /// The instruction, jump offsets passed through `fit`, a zero divisor
    /// replaced by `divisor` and shift counts kept below 32 (what
    /// `seccomp_check_filter()` accepts); `None` for [`Gen::Dispatch`],
    /// which the caller lays out.
    pub fn insn(&self, fit: impl Fn(u8) -> u8, divisor: u32) -> Option<Insn> {
        Some(match *self {
            Gen::LdData(w) => Insn::stmt(LD_W_ABS, 4 * w),
            Gen::LdImm(k) => Insn::stmt(LD_IMM, k),
            Gen::LdxImm(k) => Insn::stmt(LDX_IMM, k),
            Gen::Tax => Insn::stmt(MISC_TAX, 0),
            Gen::Txa => Insn::stmt(MISC_TXA, 0),
            Gen::St(m) => Insn::stmt(ST, m),
            Gen::Stx(m) => Insn::stmt(STX, m),
            Gen::LdMem(m) => Insn::stmt(LD_MEM, m),
            Gen::LdxMem(m) => Insn::stmt(LDX_MEM, m),
            Gen::Alu(op, x, k) => {
                let k = match op {
                    AluOp::Div | AluOp::Mod if k == 0 => divisor,
                    AluOp::Lsh | AluOp::Rsh => k % 32,
                    _ => k,
                };
                Insn::stmt(BPF_ALU | op.bits() | if x { BPF_X } else { BPF_K }, k)
            }
            Gen::Neg => Insn::stmt(ALU_NEG, 0),
            Gen::Ja(k) => Insn::stmt(JMP_JA, u32::from(fit(k))),
            Gen::Jmp(op, x, k, jt, jf) => {
                Insn::jump(BPF_JMP | op.bits() | if x { BPF_X } else { BPF_K }, k, fit(jt), fit(jf))
            }
            Gen::RetK(k) => Insn::stmt(RET_K, k),
            Gen::RetA => Insn::stmt(RET_A, 0),
            Gen::Dispatch(..) => return None,
        })
    }
}

/// The first instructions of every generated program: M[0..4], the scratch
/// words [`Gen::St`], [`Gen::Stx`], [`Gen::LdMem`] and [`Gen::LdxMem`] use,
/// get a value (from A and X, both 0 at entry).
pub fn prologue() -> [Insn; 4] {
    [Insn::stmt(ST, 0), Insn::stmt(ST, 1), Insn::stmt(STX, 2), Insn::stmt(STX, 3)]
}

/// The moves between A, X, immediates and the scratch words the
/// [`prologue`] initialises (`ld #k`, `ldx #k`, `tax`, `txa`, `st`, `stx`,
/// `ld M[]`, `ldx M[]`), weight 1 each, immediates drawn from the strategy
/// `k` makes: arms of a suite's weighted [`Union`], spliced in flat so the
/// suite's other weights, and the cases its saved regression seeds stand
/// for, stay as they were.
pub fn moves<K: Strategy<Value = u32> + 'static>(k: impl Fn() -> K) -> Vec<(u32, BoxedStrategy<Gen>)> {
    vec![
        (1, k().prop_map(Gen::LdImm).boxed()),
        (1, k().prop_map(Gen::LdxImm).boxed()),
        (1, Just(Gen::Tax).boxed()),
        (1, Just(Gen::Txa).boxed()),
        (1, (0u32..4).prop_map(Gen::St).boxed()),
        (1, (0u32..4).prop_map(Gen::Stx).boxed()),
        (1, (0u32..4).prop_map(Gen::LdMem).boxed()),
        (1, (0u32..4).prop_map(Gen::LdxMem).boxed()),
    ]
}

/// The generated program, validated in seccomp mode (a generator bug, an
/// invalid program, fails the test with the program).
pub fn valid(insns: &[Insn]) -> Program {
    validate(insns, Mode::Seccomp).unwrap_or_else(|e| panic!("generator made an invalid program: {e}\n{insns:?}"))
}
