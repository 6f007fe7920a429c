//! The classic instruction (`struct sock_filter`) and its typed view.

use crate::opcode::*;

/// Index of a classic instruction in a program.
///
/// A newtype so classic and extended program counters cannot be mixed up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pc(pub usize);

impl std::fmt::Display for Pc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Mirror of `struct sock_filter` (include/uapi/linux/filter.h): 8 bytes,
/// `u16 code, u8 jt, u8 jf, u32 k`, host byte order (little-endian on disk here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// Size in bytes of one encoded [`Insn`].
pub const INSN_SIZE: usize = record::SIZE;

impl Insn {
    /// `BPF_STMT(code, k)`.
    pub const fn stmt(code: u16, k: u32) -> Self {
        Insn { code, jt: 0, jf: 0, k }
    }

    /// `BPF_JUMP(code, k, jt, jf)`.
    pub const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Self {
        Insn { code, jt, jf, k }
    }

    /// The 8 little-endian bytes of this instruction.
    pub fn to_bytes(self) -> [u8; INSN_SIZE] {
        let c = self.code.to_le_bytes();
        let k = self.k.to_le_bytes();
        [c[0], c[1], self.jt, self.jf, k[0], k[1], k[2], k[3]]
    }

    /// Decodes 8 little-endian bytes.
    pub fn from_bytes(b: [u8; INSN_SIZE]) -> Self {
        Insn {
            code: u16::from_le_bytes([b[0], b[1]]),
            jt: b[2],
            jf: b[3],
            k: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// `BPF_CLASS(code)`.
    pub fn class(self) -> u16 {
        self.code & 0x07
    }

    /// Is the code of class JMP with an operation other than `ja`? Known
    /// or not: listings print the targets of such codes as libpcap's
    /// `bpf_image()` does, even for codes no kernel accepts.
    pub fn has_jump_targets(self) -> bool {
        self.class() == BPF_JMP && self.code & 0xf0 != BPF_JA
    }

    /// The typed view, or `None` when `code` is not one of the 49 classic
    /// opcodes nor the seccomp-internal `LDX|W|ABS` (0x21).
    pub fn op(self) -> Option<Op> {
        Op::from_insn(self)
    }
}

/// Access size of a packet load (`BPF_SIZE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Size {
    /// 32-bit word.
    W,
    /// 16-bit half word.
    H,
    /// 8-bit byte.
    B,
}

impl Size {
    /// Width in bytes.
    pub fn bytes(self) -> u32 {
        match self {
            Size::W => 4,
            Size::H => 2,
            Size::B => 1,
        }
    }

    /// The `BPF_SIZE` bits.
    pub fn bits(self) -> u16 {
        match self {
            Size::W => BPF_W,
            Size::H => BPF_H,
            Size::B => BPF_B,
        }
    }
}

/// Operand source of ALU and jump instructions (`BPF_SRC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Src {
    /// The constant `k`.
    K,
    /// The index register X.
    X,
}

impl Src {
    /// The `BPF_SRC` bit.
    pub fn bits(self) -> u16 {
        match self {
            Src::K => BPF_K,
            Src::X => BPF_X,
        }
    }
}

/// Declares an op family from one table: the enum, `ALL` (table order), and
/// one method per column. Every property of an op is written once, in its
/// row, the way the kernel expands `BPF_INSN_MAP` once into both the
/// verifier's whitelist and `___bpf_prog_run()`'s jump table.
macro_rules! op_table {
    (
        $(#[$meta:meta])*
        enum $name:ident ($n:literal) -> $eval_ty:ty {
            $( $(#[$vmeta:meta])* $variant:ident = $bits:ident, $mnemonic:literal, |$a:ident, $b:ident| $eval:expr; )*
        }
    ) => {
        $(#[$meta])*
        ///
        /// Ordered as [`Self::ALL`] (opcode order).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// Every op of the family, in opcode order.
            pub const ALL: [$name; $n] = [$($name::$variant),*];

            /// The `BPF_OP` bits.
            #[inline(always)]
            pub const fn bits(self) -> u16 {
                match self {
                    $( $name::$variant => $bits, )*
                }
            }

            /// bpf_asm mnemonic (tools/bpf/bpf_exp.l); libpcap's `bpf_image()`
            /// prints the same words.
            pub const fn mnemonic(self) -> &'static str {
                match self {
                    $( $name::$variant => $mnemonic, )*
                }
            }

            /// The op whose `BPF_OP` bits are `code & 0xf0`, if any.
            pub fn from_bits(code: u16) -> Option<$name> {
                match code & 0xf0 {
                    $( $bits => Some($name::$variant), )*
                    _ => None,
                }
            }

            /// Exact semantics on unsigned 32-bit operands `a` (A) and `b`
            /// (`k` or X); see the family's doc for the kernel code mirrored.
            #[inline(always)]
            pub fn eval(self, a: u32, b: u32) -> $eval_ty {
                match self {
                    $( $name::$variant => { let ($a, $b) = (a, b); $eval } )*
                }
            }
        }
    };
}

op_table! {
    /// Binary ALU operations (`BPF_OP` of class ALU, NEG excluded).
    ///
    /// [`AluOp::eval`] is what the converted program computes:
    /// `bpf_convert_filter()` (net/core/filter.c) turns each into a
    /// `BPF_ALU32` op that `___bpf_prog_run()` (kernel/bpf/core.c) runs on the
    /// low 32 bits (wrapping; shifts by `b & 31`, as its 32-bit shift ops
    /// mask the count), and it emits
    /// `if X == 0 return 0` before `div x`/`mod x` (`div #0` is refused by
    /// `bpf_check_classic()`). `None` is that return: the program returns 0.
    enum AluOp (10) -> Option<u32> {
        Add = BPF_ADD, "add", |a, b| Some(a.wrapping_add(b));
        Sub = BPF_SUB, "sub", |a, b| Some(a.wrapping_sub(b));
        Mul = BPF_MUL, "mul", |a, b| Some(a.wrapping_mul(b));
        Div = BPF_DIV, "div", |a, b| a.checked_div(b);
        Or = BPF_OR, "or", |a, b| Some(a | b);
        And = BPF_AND, "and", |a, b| Some(a & b);
        Lsh = BPF_LSH, "lsh", |a, b| Some(a.wrapping_shl(b));
        Rsh = BPF_RSH, "rsh", |a, b| Some(a.wrapping_shr(b));
        Mod = BPF_MOD, "mod", |a, b| a.checked_rem(b);
        Xor = BPF_XOR, "xor", |a, b| Some(a ^ b);
    }
}

op_table! {
    /// Conditional jump operations (`BPF_OP` of class JMP, JA excluded).
    ///
    /// [`JmpOp::eval`] is the classic comparison on unsigned 32-bit values,
    /// as `bpf_convert_filter()` emits it and `___bpf_prog_run()` runs it: a
    /// 64-bit `BPF_JMP` on A and X, which 32-bit ALU ops keep zero-extended,
    /// with a negative `k` first moved into TMP by `BPF_MOV32_IMM` so that
    /// it is not sign-extended.
    enum JmpOp (4) -> bool {
        Jeq = BPF_JEQ, "jeq", |a, b| a == b;
        Jgt = BPF_JGT, "jgt", |a, b| a > b;
        Jge = BPF_JGE, "jge", |a, b| a >= b;
        Jset = BPF_JSET, "jset", |a, b| a & b != 0;
    }
}

/// Typed view of one classic instruction: what it does, with the fields that
/// matter for it. Fields the kernel ignores (`k` of `tax`, `jt`/`jf` of
/// non-jumps) are not represented; the raw [`Insn`] keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `ld #k` (0x00).
    LdImm { k: u32 },
    /// `ldx #k` (0x01).
    LdxImm { k: u32 },
    /// `ld M[k]` (0x60).
    LdMem { k: u32 },
    /// `ldx M[k]` (0x61).
    LdxMem { k: u32 },
    /// `st M[k]` (0x02).
    St { k: u32 },
    /// `stx M[k]` (0x03).
    Stx { k: u32 },
    /// `ld/ldh/ldb [k]` (0x20/0x28/0x30): packet or ancillary load.
    LdAbs { size: Size, k: u32 },
    /// `ld/ldh/ldb [x + k]` (0x40/0x48/0x50).
    LdInd { size: Size, k: u32 },
    /// `ld len` (0x80).
    LdLen,
    /// `ldx len` (0x81).
    LdxLen,
    /// `ldxb 4*([k]&0xf)` (0xb1).
    LdxMsh { k: u32 },
    /// Seccomp-internal `LDX|W|ABS` (0x21): `A = *(u32 *)(seccomp_data + k)`,
    /// produced only by `seccomp_check_filter()`.
    LdxAbsSeccomp { k: u32 },
    /// Binary ALU operation on A.
    Alu { op: AluOp, src: Src, k: u32 },
    /// `neg` (0x84).
    Neg,
    /// `ja k` (0x05).
    Ja { k: u32 },
    /// Conditional jump.
    Jmp { op: JmpOp, src: Src, k: u32, jt: u8, jf: u8 },
    /// `ret #k` (0x06).
    RetK { k: u32 },
    /// `ret a` (0x16).
    RetA,
    /// `tax` (0x07).
    Tax,
    /// `txa` (0x87).
    Txa,
}

impl Op {
    /// Decodes the typed view of `insn`; `None` for codes that are neither
    /// one of the 49 classic opcodes nor 0x21.
    pub fn from_insn(insn: Insn) -> Option<Op> {
        let k = insn.k;
        let size = || match insn.code & 0x18 {
            BPF_W => Some(Size::W),
            BPF_H => Some(Size::H),
            BPF_B => Some(Size::B),
            _ => None,
        };
        let src = if insn.code & BPF_X != 0 { Src::X } else { Src::K };
        Some(match insn.code {
            LD_IMM => Op::LdImm { k },
            LDX_IMM => Op::LdxImm { k },
            LD_MEM => Op::LdMem { k },
            LDX_MEM => Op::LdxMem { k },
            ST => Op::St { k },
            STX => Op::Stx { k },
            LD_W_ABS | LD_H_ABS | LD_B_ABS => Op::LdAbs { size: size()?, k },
            LD_W_IND | LD_H_IND | LD_B_IND => Op::LdInd { size: size()?, k },
            LD_W_LEN => Op::LdLen,
            LDX_W_LEN => Op::LdxLen,
            LDX_B_MSH => Op::LdxMsh { k },
            LDX_W_ABS => Op::LdxAbsSeccomp { k },
            ALU_NEG => Op::Neg,
            ALU_ADD_K | ALU_ADD_X | ALU_SUB_K | ALU_SUB_X | ALU_MUL_K | ALU_MUL_X | ALU_DIV_K | ALU_DIV_X
            | ALU_MOD_K | ALU_MOD_X | ALU_AND_K | ALU_AND_X | ALU_OR_K | ALU_OR_X | ALU_XOR_K | ALU_XOR_X
            | ALU_LSH_K | ALU_LSH_X | ALU_RSH_K | ALU_RSH_X => {
                let op = AluOp::from_bits(insn.code)?;
                Op::Alu { op, src, k }
            }
            JMP_JA => Op::Ja { k },
            JMP_JEQ_K | JMP_JEQ_X | JMP_JGT_K | JMP_JGT_X | JMP_JGE_K | JMP_JGE_X | JMP_JSET_K | JMP_JSET_X => {
                let op = JmpOp::from_bits(insn.code)?;
                Op::Jmp { op, src, k, jt: insn.jt, jf: insn.jf }
            }
            RET_K => Op::RetK { k },
            RET_A => Op::RetA,
            MISC_TAX => Op::Tax,
            MISC_TXA => Op::Txa,
            _ => return None,
        })
    }

    /// The canonical raw instruction for this view (unused fields zero).
    pub fn to_insn(self) -> Insn {
        match self {
            Op::LdImm { k } => Insn::stmt(LD_IMM, k),
            Op::LdxImm { k } => Insn::stmt(LDX_IMM, k),
            Op::LdMem { k } => Insn::stmt(LD_MEM, k),
            Op::LdxMem { k } => Insn::stmt(LDX_MEM, k),
            Op::St { k } => Insn::stmt(ST, k),
            Op::Stx { k } => Insn::stmt(STX, k),
            Op::LdAbs { size, k } => Insn::stmt(BPF_LD | BPF_ABS | size.bits(), k),
            Op::LdInd { size, k } => Insn::stmt(BPF_LD | BPF_IND | size.bits(), k),
            Op::LdLen => Insn::stmt(LD_W_LEN, 0),
            Op::LdxLen => Insn::stmt(LDX_W_LEN, 0),
            Op::LdxMsh { k } => Insn::stmt(LDX_B_MSH, k),
            Op::LdxAbsSeccomp { k } => Insn::stmt(LDX_W_ABS, k),
            Op::Alu { op, src, k } => Insn::stmt(BPF_ALU | op.bits() | src.bits(), k),
            Op::Neg => Insn::stmt(ALU_NEG, 0),
            Op::Ja { k } => Insn::stmt(JMP_JA, k),
            Op::Jmp { op, src, k, jt, jf } => Insn::jump(BPF_JMP | op.bits() | src.bits(), k, jt, jf),
            Op::RetK { k } => Insn::stmt(RET_K, k),
            Op::RetA => Insn::stmt(RET_A, 0),
            Op::Tax => Insn::stmt(MISC_TAX, 0),
            Op::Txa => Insn::stmt(MISC_TXA, 0),
        }
    }

    /// Whether the instruction stores into the accumulator A: every `BPF_LD`
    /// and `BPF_ALU` instruction, `txa`, and the seccomp-internal 0x21 load.
    pub fn writes_a(self) -> bool {
        matches!(
            self,
            Op::LdImm { .. }
                | Op::LdMem { .. }
                | Op::LdAbs { .. }
                | Op::LdInd { .. }
                | Op::LdLen
                | Op::LdxAbsSeccomp { .. }
                | Op::Alu { .. }
                | Op::Neg
                | Op::Txa
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insn_is_eight_bytes() {
        assert_eq!(std::mem::size_of::<Insn>(), INSN_SIZE);
    }

    #[test]
    fn every_allowed_code_has_a_typed_view_that_round_trips() {
        for &code in ALLOWED_CODES.iter().chain([LDX_W_ABS].iter()) {
            let insn = if code & 0x07 == BPF_JMP && code != JMP_JA {
                Insn::jump(code, 7, 1, 2)
            } else if matches!(code, LD_W_LEN | LDX_W_LEN | ALU_NEG | RET_A | MISC_TAX | MISC_TXA) {
                Insn::stmt(code, 0)
            } else {
                Insn::stmt(code, 7)
            };
            let op = insn.op().unwrap_or_else(|| panic!("no view for {code:#x}"));
            assert_eq!(op.to_insn(), insn, "code {code:#x}");
        }
    }

    #[test]
    fn unknown_codes_have_no_view() {
        let known: Vec<u16> = ALLOWED_CODES.iter().copied().chain([LDX_W_ABS]).collect();
        for code in 0..=0xffffu16 {
            if !known.contains(&code) {
                assert!(Insn::stmt(code, 0).op().is_none(), "code {code:#x}");
            }
        }
    }

    #[test]
    fn alu_eval_is_the_converted_programs_32_bit_semantics() {
        assert_eq!(AluOp::Div.eval(7, 0), None);
        assert_eq!(AluOp::Mod.eval(7, 0), None);
        assert_eq!(AluOp::Lsh.eval(1, 33), Some(2));
        assert_eq!(AluOp::Rsh.eval(0x8000_0000, 63), Some(1));
        assert_eq!(AluOp::Sub.eval(0, 1), Some(u32::MAX));
        assert_eq!(AluOp::Mul.eval(0x8000_0001, 2), Some(2));
    }

    #[test]
    fn op_tables_round_trip_their_bits() {
        for op in AluOp::ALL {
            assert_eq!(AluOp::from_bits(op.bits()), Some(op));
        }
        for op in JmpOp::ALL {
            assert_eq!(JmpOp::from_bits(op.bits()), Some(op));
        }
        assert_eq!(AluOp::from_bits(BPF_NEG), None);
        assert_eq!(JmpOp::from_bits(BPF_JA), None);
    }

    #[test]
    fn bytes_round_trip() {
        let i = Insn::jump(0x15, 0xc000003e, 1, 255);
        assert_eq!(i.to_bytes(), [0x15, 0, 1, 255, 0x3e, 0, 0, 0xc0]);
        assert_eq!(Insn::from_bytes(i.to_bytes()), i);
    }
}
