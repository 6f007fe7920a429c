//! The per-family op tables ([`AluOp`], [`JmpCond`], [`Size`],
//! [`AtomicOp`]) with the operand types they share ([`Width`], [`Operand`]):
//! each table comes from one list, read by the enum, its bits (the encoder
//! and decoder in [`super`]), the symbol `print_bpf_insn()` in
//! kernel/bpf/disasm.c prints, the bpf_conformance mnemonic, and (for ALU
//! and jump ops) the evaluation the interpreters run. The lists follow the
//! order of the kernel's `BPF_INSN_MAP` in kernel/bpf/core.c (Linux 6.18).
//!
//! Kept apart from the decoder and encoder: this is what the interpreters
//! evaluate on their run paths; [`super`] is what loaders and printers read.

use crate::isa::insn::Insn;
use crate::isa::opcode::{BPF_ALU, BPF_ALU64, BPF_JMP, BPF_JMP32, BPF_X};
/// Operand width of an ALU or jump instruction: class `BPF_ALU` / `BPF_JMP32`
/// (32) or `BPF_ALU64` / `BPF_JMP` (64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Width {
    W32,
    W64,
}

impl Width {
    /// Both widths, 32 first.
    pub const ALL: [Width; 2] = [Width::W32, Width::W64];

    /// The ALU class of this width.
    #[inline]
    pub const fn alu_class(self) -> u8 {
        match self {
            Width::W32 => BPF_ALU,
            Width::W64 => BPF_ALU64,
        }
    }

    /// The jump class of this width.
    #[inline]
    pub const fn jmp_class(self) -> u8 {
        match self {
            Width::W32 => BPF_JMP32,
            Width::W64 => BPF_JMP,
        }
    }

    /// The register prefix `print_bpf_insn()` prints: `w` or `r`.
    pub const fn kernel_reg_prefix(self) -> char {
        match self {
            Width::W32 => 'w',
            Width::W64 => 'r',
        }
    }

    /// The conformance mnemonic suffix: `32` or nothing.
    pub const fn mnemonic_suffix(self) -> &'static str {
        match self {
            Width::W32 => "32",
            Width::W64 => "",
        }
    }
}

/// Source operand of an ALU or conditional-jump instruction: `BPF_K` (the
/// `imm` field) or `BPF_X` (the `src` register).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    K(i32),
    X(u8),
}

impl Operand {
    /// `(src_reg, imm)` fields and the `BPF_X` bit of this operand.
    #[inline]
    pub(super) const fn fields(self) -> (u8, i32, u8) {
        match self {
            Operand::K(imm) => (0, imm, 0),
            Operand::X(src) => (src, 0, BPF_X),
        }
    }

    /// The operand `insn` names, read as an ALU or jump instruction reads
    /// it (`BPF_X` selects the register).
    pub const fn of(insn: Insn) -> Operand {
        if insn.code & BPF_X != 0 {
            Operand::X(insn.src())
        } else {
            Operand::K(insn.imm)
        }
    }
}

/// Declares a per-family table: the enum, `ALL` (every entry, in the
/// table's order) and one accessor per column (`fn name -> type`, with its
/// docs), each entry's row giving the columns in that order.
macro_rules! table {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$cmeta:meta])* fn $col:ident -> $ty:ty; )*
        }
        rows {
            $( $(#[$vmeta:meta])* $variant:ident => $val:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $( $(#[$vmeta])* $variant ),* }

        // The row of an entry, its columns named.
        const _: () = {
            struct Row { $( $col: $ty ),* }

            impl $name {
                #[inline]
                const fn row(self) -> Row {
                    let ($($col,)*) = match self { $( $name::$variant => $val ),* };
                    Row { $($col),* }
                }
            }
        };

        impl $name {
            /// Every entry, in the table's order.
            pub const ALL: [$name; [$(stringify!($variant)),*].len()] = [$($name::$variant),*];

            $(
                $(#[$cmeta])*
                pub const fn $col(self) -> $ty {
                    self.row().$col
                }
            )*
        }
    };
}

table! {
    /// Binary ALU operations (`BPF_OP(code)`, with `off` telling signed from
    /// unsigned division), in `BPF_INSN_MAP` order (ADD, SUB, AND, OR, LSH,
    /// RSH, XOR, MUL, MOV, ARSH, DIV, MOD; the signed forms of RFC 9669 after
    /// their unsigned ones). NEG and END are [`Op::Neg`](super::Op::Neg)
    /// and [`Op::End`](super::Op::End); `movsx` is
    /// [`Op::MovSx`](super::Op::MovSx).
    pub enum AluOp {
        /// `BPF_OP(code)`.
        #[inline]
        fn bits -> u8;

        /// The `off` field (1 for the signed division forms).
        #[inline]
        fn off -> i16;

        /// The operator `print_bpf_insn()` prints (`bpf_alu_string[]`, or
        /// `s/=` / `s%=` for `is_sdiv_smod()`).
        fn kernel -> &'static str;

        /// The bpf_conformance mnemonic (without the `32` suffix).
        fn mnemonic -> &'static str;
    }
    rows {
        Add => (0x00, 0, "+=", "add"),
        Sub => (0x10, 0, "-=", "sub"),
        And => (0x50, 0, "&=", "and"),
        Or => (0x40, 0, "|=", "or"),
        Lsh => (0x60, 0, "<<=", "lsh"),
        Rsh => (0x70, 0, ">>=", "rsh"),
        Xor => (0xa0, 0, "^=", "xor"),
        Mul => (0x20, 0, "*=", "mul"),
        Mov => (0xb0, 0, "=", "mov"),
        Arsh => (0xc0, 0, "s>>=", "arsh"),
        Div => (0x30, 0, "/=", "div"),
        SDiv => (0x30, 1, "s/=", "sdiv"),
        Mod => (0x90, 0, "%=", "mod"),
        SMod => (0x90, 1, "s%=", "smod"),
    }
}

/// `AluOp::$name`: `dst op src` on `$u` as `___bpf_prog_run()` computes it,
/// signed forms through `$s`; shift amounts wrap at the width (the kernel's
/// `SRC & 63` and `& 31`); division and modulo by zero follow `do_misc_fixups()`:
/// `x / 0 = 0`, `x % 0 = x`. One body for both widths.
macro_rules! alu_eval {
    ($(#[$doc:meta])* $name:ident: $u:ty, $s:ty) => {
        $(#[$doc])*
        #[inline(always)]
        #[allow(clippy::unnecessary_cast)] // `src as u32` is a no-op at 32 bits.
        pub fn $name(self, dst: $u, src: $u) -> $u {
            match self {
                AluOp::Add => dst.wrapping_add(src),
                AluOp::Sub => dst.wrapping_sub(src),
                AluOp::And => dst & src,
                AluOp::Or => dst | src,
                AluOp::Lsh => dst.wrapping_shl(src as u32),
                AluOp::Rsh => dst.wrapping_shr(src as u32),
                AluOp::Xor => dst ^ src,
                AluOp::Mul => dst.wrapping_mul(src),
                AluOp::Mov => src,
                AluOp::Arsh => (dst as $s).wrapping_shr(src as u32) as $u,
                AluOp::Div => dst.checked_div(src).unwrap_or(0),
                AluOp::SDiv => {
                    let v = src as $s;
                    if v == 0 {
                        0
                    } else {
                        (dst as $s).wrapping_div(v) as $u
                    }
                }
                AluOp::Mod => dst.checked_rem(src).unwrap_or(dst),
                AluOp::SMod => {
                    let v = src as $s;
                    if v == 0 {
                        dst
                    } else {
                        (dst as $s).wrapping_rem(v) as $u
                    }
                }
            }
        }
    };
}

impl AluOp {
    alu_eval! {
        /// `dst op src` on 64 bits, as `___bpf_prog_run()` computes it for
        /// `BPF_ALU64`. Shift amounts are masked to 63 (RFC 9669; the kernel
        /// masks the X form and its verifier keeps K in range); division and
        /// modulo by zero follow `do_misc_fixups()`: `x / 0 = 0`, `x % 0 = x`.
        eval64: u64, i64
    }

    alu_eval! {
        /// `dst op src` on the low 32 bits, as `___bpf_prog_run()` computes it
        /// for `BPF_ALU` (the caller zero-extends); same conventions as
        /// [`AluOp::eval64`], shifts masked to 31.
        eval32: u32, i32
    }

    /// [`AluOp::eval32`] or [`AluOp::eval64`] on 64-bit register values;
    /// a 32-bit result is zero-extended.
    #[inline(always)]
    pub fn eval(self, width: Width, dst: u64, src: u64) -> u64 {
        match width {
            Width::W32 => u64::from(self.eval32(dst as u32, src as u32)),
            Width::W64 => self.eval64(dst, src),
        }
    }

    /// Whether this is a shift (its amount is taken modulo the width).
    pub const fn is_shift(self) -> bool {
        matches!(self, AluOp::Lsh | AluOp::Rsh | AluOp::Arsh)
    }

    pub(super) fn from_fields(bits: u8, off: i16) -> Option<AluOp> {
        AluOp::ALL.into_iter().find(|o| o.bits() == bits && o.off() == off)
    }
}

table! {
    /// Conditions of the conditional jumps (`BPF_OP(code)`), in
    /// `BPF_INSN_MAP` order.
    pub enum JmpCond {
        /// `BPF_OP(code)`.
        #[inline]
        fn bits -> u8;

        /// The operator `print_bpf_insn()` prints (`bpf_jmp_string[]`).
        fn kernel -> &'static str;

        /// The bpf_conformance mnemonic (without the `32` suffix).
        fn mnemonic -> &'static str;
    }
    rows {
        Eq => (0x10, "==", "jeq"),
        Ne => (0x50, "!=", "jne"),
        Gt => (0x20, ">", "jgt"),
        Lt => (0xa0, "<", "jlt"),
        Ge => (0x30, ">=", "jge"),
        Le => (0xb0, "<=", "jle"),
        Sgt => (0x60, "s>", "jsgt"),
        Slt => (0xc0, "s<", "jslt"),
        Sge => (0x70, "s>=", "jsge"),
        Sle => (0xd0, "s<=", "jsle"),
        Set => (0x40, "&", "jset"),
    }
}

/// `JmpCond::$name`: whether the jump is taken for operands of `$u`,
/// signed conditions through `$s`. One body for both widths.
macro_rules! jmp_eval {
    ($(#[$doc:meta])* $name:ident: $u:ty, $s:ty) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(self, x: $u, y: $u) -> bool {
            match self {
                JmpCond::Eq => x == y,
                JmpCond::Ne => x != y,
                JmpCond::Gt => x > y,
                JmpCond::Lt => x < y,
                JmpCond::Ge => x >= y,
                JmpCond::Le => x <= y,
                JmpCond::Sgt => (x as $s) > (y as $s),
                JmpCond::Slt => (x as $s) < (y as $s),
                JmpCond::Sge => (x as $s) >= (y as $s),
                JmpCond::Sle => (x as $s) <= (y as $s),
                JmpCond::Set => x & y != 0,
            }
        }
    };
}

impl JmpCond {
    jmp_eval! {
        /// Whether the jump is taken for 64-bit operands (`COND_JMP` in
        /// `___bpf_prog_run()`, class `BPF_JMP`).
        eval64: u64, i64
    }

    jmp_eval! {
        /// Whether the jump is taken for 32-bit operands (class `BPF_JMP32`).
        eval32: u32, i32
    }

    /// [`JmpCond::eval32`] (low halves) or [`JmpCond::eval64`].
    #[inline(always)]
    pub fn eval(self, width: Width, x: u64, y: u64) -> bool {
        match width {
            Width::W32 => self.eval32(x as u32, y as u32),
            Width::W64 => self.eval64(x, y),
        }
    }

    /// Whether the condition compares signed values.
    pub const fn is_signed(self) -> bool {
        matches!(self, JmpCond::Sgt | JmpCond::Slt | JmpCond::Sge | JmpCond::Sle)
    }

    pub(super) fn from_bits(bits: u8) -> Option<JmpCond> {
        JmpCond::ALL.into_iter().find(|c| c.bits() == bits)
    }
}

table! {
    /// Memory access sizes (`BPF_SIZE(code)`), in `BPF_INSN_MAP` order.
    pub enum Size {
        /// `BPF_SIZE(code)`.
        #[inline]
        fn bits -> u8;

        /// Access width in bytes.
        fn bytes -> u8;

        /// `bpf_ldst_string[]`: the type `print_bpf_insn()` prints.
        fn kernel -> &'static str;

        /// `bpf_ldsx_string[]`: the type of a sign-extending load (the kernel's
        /// table has no `s64`; see [`crate::listing`]).
        fn kernel_signed -> &'static str;

        /// The bpf_conformance size suffix (`ldxw`, `stdw`).
        fn mnemonic -> &'static str;
    }
    rows {
        B => (0x10, 1, "u8", "s8", "b"),
        H => (0x08, 2, "u16", "s16", "h"),
        W => (0x00, 4, "u32", "s32", "w"),
        DW => (0x18, 8, "u64", "s64", "dw"),
    }
}

impl Size {
    /// The size whose `BPF_SIZE` bits `code` carries.
    pub const fn of(code: u8) -> Size {
        match code & 0x18 {
            0x10 => Size::B,
            0x08 => Size::H,
            0x00 => Size::W,
            _ => Size::DW,
        }
    }

    /// The size of `bytes` (1, 2, 4 or 8).
    pub fn from_bytes(bytes: u8) -> Option<Size> {
        Size::ALL.into_iter().find(|s| s.bytes() == bytes)
    }
}

/// `BPF_FETCH`.
const FETCH: i32 = 0x01;

table! {
    /// Atomic operations (`imm` of `BPF_STX | BPF_ATOMIC`), in the order of
    /// `___bpf_prog_run()`'s `STX_ATOMIC` switch (ADD, AND, OR, XOR, each
    /// without and with `BPF_FETCH`, XCHG, CMPXCHG), then the
    /// `BPF_LOAD_ACQ` / `BPF_STORE_REL` pair of Linux 6.15.
    pub enum AtomicOp {
        /// The `imm` field.
        fn bits -> i32;

        /// The operation after `lock` in the bpf_conformance syntax (the width
        /// suffix `32` goes after it); `None` for the acquire/release pair.
        fn mnemonic -> Option<&'static str>;
    }
    rows {
        Add => (0x00, Some("add")),
        FetchAdd => (0x01, Some("fetch add")),
        And => (0x50, Some("and")),
        FetchAnd => (0x51, Some("fetch and")),
        Or => (0x40, Some("or")),
        FetchOr => (0x41, Some("fetch or")),
        Xor => (0xa0, Some("xor")),
        FetchXor => (0xa1, Some("fetch xor")),
        Xchg => (0xe1, Some("xchg")),
        Cmpxchg => (0xf1, Some("cmpxchg")),
        LoadAcq => (0x100, None),
        StoreRel => (0x110, None),
    }
}

impl AtomicOp {
    /// Whether the operation writes the old value back into `src`
    /// (`BPF_FETCH`, XCHG) or into r0 (CMPXCHG).
    pub const fn fetches(self) -> bool {
        self.bits() & FETCH != 0 && !matches!(self, AtomicOp::LoadAcq | AtomicOp::StoreRel)
    }

    /// The read-modify-write ALU operation (`bpf_atomic_alu_string[]`
    /// names it), for the ADD/AND/OR/XOR forms.
    pub const fn alu(self) -> Option<AluOp> {
        match self {
            AtomicOp::Add | AtomicOp::FetchAdd => Some(AluOp::Add),
            AtomicOp::And | AtomicOp::FetchAnd => Some(AluOp::And),
            AtomicOp::Or | AtomicOp::FetchOr => Some(AluOp::Or),
            AtomicOp::Xor | AtomicOp::FetchXor => Some(AluOp::Xor),
            _ => None,
        }
    }

    /// Whether the operation is defined for `size` (the read-modify-write
    /// ones only for W and DW).
    pub const fn allows(self, size: Size) -> bool {
        matches!(self, AtomicOp::LoadAcq | AtomicOp::StoreRel) || matches!(size, Size::W | Size::DW)
    }

    /// The operation `imm` encodes.
    pub fn from_bits(imm: i32) -> Option<AtomicOp> {
        AtomicOp::ALL.into_iter().find(|o| o.bits() == imm)
    }
}
