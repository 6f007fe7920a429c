//! Assembler for the bpf_conformance / uBPF assembly syntax.
//!
//! The text format the eBPF conformance suite (testdata/bpf_conformance) and
//! uBPF write their programs in: `mov %r0, 1`, `ldxw %r1, [%r2+4]`,
//! `jeq %r1, 5, +3`, `lock fetch add [%r10-8], %r1`, `lddw %r0, 0x123456789`,
//! labels on their own line. testdata/bpf_conformance/README.md describes
//! every mnemonic and its encoding; [`crate::disasm`] prints the same syntax
//! back, and `assemble(disassemble(p)) == p`.
//!
//! ```
//! let prog = ebpf::asm::assemble("mov32 %r0, 1\nja done\nmov %r0, 2\ndone:\nexit\n").unwrap();
//! assert_eq!(prog.len(), 4);
//! assert_eq!(prog[1], ebpf::Insn::new(0x05, 0, 0, 1, 0));
//! ```
//!
//! Beyond upstream, the assembler also accepts the legacy packet loads
//! `ldabs{b,h,w,dw} imm` and `ldind{b,h,w,dw} %src, imm` (rbpf's names, needed
//! to write converted socket filters), `gotol` for `ja32`, `callx %rN` for
//! `call %rN`, and an instruction after a label on the same line.

use std::collections::HashMap;

use crate::isa::insn::Insn;
use crate::isa::op::{AluOp, AtomicOp, CallKind, Endian, JmpCond, Op, Operand, Size, Width};

/// Sign-extending moves: mnemonic, width, source size.
pub(crate) const MOVSX_OPS: [(&str, Width, Size); 5] = [
    ("movsx864", Width::W64, Size::B),
    ("movsx1664", Width::W64, Size::H),
    ("movsx3264", Width::W64, Size::W),
    ("movsx832", Width::W32, Size::B),
    ("movsx1632", Width::W32, Size::H),
];

/// Why a text is not a valid program, and where: `line` and `col` are
/// 1-based; `col` counts characters and points at the offending token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {kind}")]
#[non_exhaustive]
pub struct AsmError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
    /// What is wrong there.
    pub kind: AsmErrorKind,
}

/// What is wrong at an [`AsmError`]'s place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AsmErrorKind {
    #[error("invalid mnemonic `{mnemonic}`")]
    InvalidMnemonic { mnemonic: String },
    #[error("invalid number of operands for {mnemonic}: expected {expected}, found {found}")]
    OperandCount { mnemonic: String, expected: &'static str, found: usize },
    #[error("invalid register `{text}`: expected %r0 to %r15")]
    InvalidRegister { text: String },
    #[error("invalid number `{text}`")]
    InvalidNumber { text: String },
    #[error("immediate `{text}` does not fit in {bits} bits")]
    ImmOutOfRange { text: String, bits: u8 },
    #[error("offset `{text}` does not fit in a signed 16-bit field")]
    OffsetOutOfRange { text: String },
    #[error("invalid memory operand `{text}`: expected [%rN], [%rN+off] or [%rN-off]")]
    InvalidMemory { text: String },
    #[error("invalid jump target `{text}`: expected +N, -N or a label")]
    InvalidJumpTarget { text: String },
    #[error("invalid label name `{text}`")]
    InvalidLabelName { text: String },
    #[error("invalid label `{label}`: not defined")]
    UndefinedLabel { label: String },
    #[error("duplicate label `{label}` (first defined on line {first_line})")]
    DuplicateLabel { label: String, first_line: usize },
    #[error("jump to `{target}` needs offset {offset}, which does not fit in {bits} bits")]
    JumpOutOfRange { target: String, offset: i64, bits: u8 },
    #[error("invalid call mode `{text}`: expected helper, local or runtime")]
    InvalidCallMode { text: String },
    #[error("invalid atomic operation `{text}`")]
    InvalidAtomicOp { text: String },
    #[error("no instructions")]
    NoInstructions,
}

impl AsmError {
    /// This error with its line moved by `delta` (for text embedded in a
    /// bigger file, such as the `-- asm` section of a conformance test).
    pub fn shifted(mut self, delta: usize) -> Self {
        self.line += delta;
        if let AsmErrorKind::DuplicateLabel { first_line, .. } = &mut self.kind {
            *first_line += delta;
        }
        self
    }
}

/// Assembles a program. Each line holds an instruction, a `label:`, or
/// nothing; `#` starts a comment. Jump targets are `+N`, `-N` or a label; a
/// label's value is the index of the next slot (`lddw` takes two), and the
/// first `exit` also defines the label `exit` unless the text defines it.
///
/// # Errors
/// The first problem found, in text order; undefined labels are reported
/// after the whole text is read. An empty program is an error.
pub fn assemble(source: &str) -> Result<Vec<Insn>, AsmError> {
    let mut asm = Assembler::default();
    let mut last_line = 0;
    for (index, raw_line) in source.lines().enumerate() {
        last_line = index + 1;
        asm.line(index + 1, raw_line)?;
    }
    if asm.out.is_empty() {
        return Err(AsmError { line: last_line.max(1), col: 1, kind: AsmErrorKind::NoInstructions });
    }
    asm.resolve()
}

/// One whitespace-separated word of a line and its 1-based column.
#[derive(Debug, Clone, Copy)]
struct Tok<'a> {
    text: &'a str,
    col: usize,
}

/// Splits a line into tokens after dropping its comment; a trailing comma is
/// not part of a token.
fn tokenize(line: &str) -> Vec<Tok<'_>> {
    let code = line.split_once('#').map_or(line, |(before, _)| before);
    let mut toks = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    let mut col = 0;
    for (byte, ch) in code.char_indices().chain(std::iter::once((code.len(), ' '))) {
        col += 1;
        if ch.is_whitespace() {
            if let Some((from, from_col)) = start.take() {
                let word = code.get(from..byte).unwrap_or("");
                let word = word.strip_suffix(',').unwrap_or(word);
                if !word.is_empty() {
                    toks.push(Tok { text: word, col: from_col });
                }
            }
        } else if start.is_none() {
            start = Some((byte, col));
        }
    }
    toks
}

/// Which field of an instruction a label reference fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TargetField {
    /// `off` (16 bits): conditional jumps and `ja`.
    Off,
    /// `imm` (32 bits): `ja32` and `call local`.
    Imm,
}

/// A jump whose target is a label, patched once every label is known.
#[derive(Debug)]
struct Fixup {
    slot: usize,
    label: String,
    field: TargetField,
    line: usize,
    col: usize,
}

#[derive(Debug, Default)]
struct Assembler {
    out: Vec<Insn>,
    /// Label name -> (slot, line, col of definition).
    labels: HashMap<String, (usize, usize)>,
    /// Slot of the first `exit`, the implicit `exit` label.
    first_exit: Option<usize>,
    fixups: Vec<Fixup>,
}

/// The operands of one instruction, with the line they came from.
struct Operands<'a, 'b> {
    line: usize,
    mnemonic: Tok<'a>,
    ops: &'b [Tok<'a>],
}

impl<'a> Operands<'a, '_> {
    /// The error `kind` at column `col` of this line.
    fn error(&self, col: usize, kind: AsmErrorKind) -> AsmError {
        AsmError { line: self.line, col, kind }
    }

    /// Checks the operand count; `expected` is also the text of the error.
    fn expect(&self, count: usize, expected: &'static str) -> Result<(), AsmError> {
        if self.ops.len() == count {
            Ok(())
        } else {
            Err(self.error(
                self.mnemonic.col,
                AsmErrorKind::OperandCount { mnemonic: self.mnemonic.text.to_owned(), expected, found: self.ops.len() },
            ))
        }
    }

    fn tok(&self, index: usize) -> Result<Tok<'a>, AsmError> {
        self.ops.get(index).copied().ok_or_else(|| {
            self.error(
                self.mnemonic.col,
                AsmErrorKind::OperandCount {
                    mnemonic: self.mnemonic.text.to_owned(),
                    expected: "more",
                    found: self.ops.len(),
                },
            )
        })
    }

    fn reg(&self, index: usize) -> Result<u8, AsmError> {
        let tok = self.tok(index)?;
        parse_reg(tok.text)
            .ok_or_else(|| self.error(tok.col, AsmErrorKind::InvalidRegister { text: tok.text.to_owned() }))
    }

    /// A source operand: `%rN` or a 32-bit immediate.
    fn src(&self, index: usize) -> Result<Operand, AsmError> {
        Ok(if self.tok(index)?.text.starts_with('%') {
            Operand::X(self.reg(index)?)
        } else {
            Operand::K(self.imm32(index)?)
        })
    }

    fn imm32(&self, index: usize) -> Result<i32, AsmError> {
        self.imm(index, 32, Number::to_imm32)
    }

    fn imm64(&self, index: usize) -> Result<u64, AsmError> {
        self.imm(index, 64, Number::to_imm64)
    }

    /// Operand `index` as a number that `fits` an immediate of `bits` bits.
    fn imm<T>(&self, index: usize, bits: u8, fits: fn(Number) -> Option<T>) -> Result<T, AsmError> {
        let tok = self.tok(index)?;
        let num = self.number(tok)?;
        fits(num).ok_or_else(|| self.error(tok.col, AsmErrorKind::ImmOutOfRange { text: tok.text.to_owned(), bits }))
    }

    fn number(&self, tok: Tok<'_>) -> Result<Number, AsmError> {
        Number::parse(tok.text)
            .ok_or_else(|| self.error(tok.col, AsmErrorKind::InvalidNumber { text: tok.text.to_owned() }))
    }

    /// `[%rN]`, `[%rN+off]` or `[%rN-off]`.
    fn mem(&self, index: usize) -> Result<(u8, i16), AsmError> {
        let tok = self.tok(index)?;
        let bad = || self.error(tok.col, AsmErrorKind::InvalidMemory { text: tok.text.to_owned() });
        let inner = tok.text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).ok_or_else(bad)?;
        let split = inner.find(['+', '-']).unwrap_or(inner.len());
        let (reg_text, off_text) = inner.split_at(split);
        let reg = parse_reg(reg_text)
            .ok_or_else(|| self.error(tok.col + 1, AsmErrorKind::InvalidRegister { text: reg_text.to_owned() }))?;
        if off_text.is_empty() {
            return Ok((reg, 0));
        }
        let off_col = tok.col + 1 + reg_text.chars().count();
        let num = Number::parse(off_text)
            .ok_or_else(|| self.error(off_col, AsmErrorKind::InvalidNumber { text: off_text.to_owned() }))?;
        let off = num
            .to_off16()
            .ok_or_else(|| self.error(off_col, AsmErrorKind::OffsetOutOfRange { text: off_text.to_owned() }))?;
        Ok((reg, off))
    }
}

/// A parsed integer literal: optional sign, then `0x` hex or decimal digits.
#[derive(Debug, Clone, Copy)]
struct Number {
    negative: bool,
    hex: bool,
    magnitude: u64,
}

impl Number {
    fn parse(text: &str) -> Option<Number> {
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, text.get(1..)?),
            Some(b'+') => (false, text.get(1..)?),
            _ => (false, text),
        };
        let (hex, digits) = match rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            Some(hex_digits) => (true, hex_digits),
            None => (false, rest),
        };
        let radix = if hex { 16 } else { 10 };
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        let magnitude = u64::from_str_radix(digits, radix).ok()?;
        Some(Number { negative, hex, magnitude })
    }

    /// The signed value, if it fits in an i128 (always, for a u64 magnitude).
    fn value(self) -> i128 {
        let m = i128::from(self.magnitude);
        if self.negative {
            -m
        } else {
            m
        }
    }

    /// A 32-bit immediate: unsigned hex up to 0xffffffff keeps its bits;
    /// otherwise the value must fit in i32.
    fn to_imm32(self) -> Option<i32> {
        if self.hex && !self.negative {
            return u32::try_from(self.magnitude).ok().map(|bits| bits as i32);
        }
        i32::try_from(self.value()).ok()
    }

    /// A 64-bit immediate: anything in i64 or u64 range, as bits.
    fn to_imm64(self) -> Option<u64> {
        let v = self.value();
        if v < 0 {
            i64::try_from(v).ok().map(|s| s as u64)
        } else {
            u64::try_from(v).ok()
        }
    }

    /// A signed 16-bit offset.
    fn to_off16(self) -> Option<i16> {
        i16::try_from(self.value()).ok()
    }
}

/// `%r0` … `%r15` (registers above 10 exist only so invalid programs can be written).
fn parse_reg(text: &str) -> Option<u8> {
    let digits = text.strip_prefix("%r")?;
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if digits.len() == 2 && digits.starts_with('0') {
        return None;
    }
    digits.parse::<u8>().ok().filter(|&r| r <= 15)
}

/// A label name: a letter, `_` or `.`, then letters, digits, `_` or `.`.
fn is_label_name(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '.')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// `name32` -> (`name`, true); `name` -> (`name`, false).
/// A mnemonic without its `32` suffix, and the width the suffix names.
fn split_32(mnemonic: &str) -> (&str, Width) {
    match mnemonic.strip_suffix("32") {
        Some(base) => (base, Width::W32),
        None => (mnemonic, Width::W64),
    }
}

/// The entry of a table (`all`) whose `mnemonic` is this one without its
/// `32` suffix, and the width the suffix names.
fn entry_32<T: Copy>(mnemonic: &str, all: &[T], name: fn(T) -> &'static str) -> Option<(T, Width)> {
    let (base, width) = split_32(mnemonic);
    all.iter().copied().find(|&t| name(t) == base).map(|t| (t, width))
}

impl Assembler {
    fn line(&mut self, line: usize, text: &str) -> Result<(), AsmError> {
        let toks = tokenize(text);
        let mut rest = toks.as_slice();
        if let Some((first, after)) = rest.split_first() {
            if let Some(name) = first.text.strip_suffix(':') {
                if !is_label_name(name) {
                    return Err(AsmError {
                        line,
                        col: first.col,
                        kind: AsmErrorKind::InvalidLabelName { text: name.to_owned() },
                    });
                }
                if let Some(&(_, first_line)) = self.labels.get(name) {
                    return Err(AsmError {
                        line,
                        col: first.col,
                        kind: AsmErrorKind::DuplicateLabel { label: name.to_owned(), first_line },
                    });
                }
                self.labels.insert(name.to_owned(), (self.out.len(), line));
                rest = after;
            }
        }
        let Some((mnemonic, ops)) = rest.split_first() else {
            return Ok(());
        };
        let ops = Operands { line, mnemonic: *mnemonic, ops };
        self.instruction(&ops)
    }

    fn push(&mut self, op: Op) {
        self.out.extend_from_slice(op.encode().slots());
    }

    /// Records a jump target: a literal `+N`/`-N` is returned, a label is
    /// remembered for [`Assembler::resolve`] and 0 is returned.
    fn target(&mut self, ops: &Operands<'_, '_>, index: usize, field: TargetField) -> Result<i32, AsmError> {
        let tok = ops.tok(index)?;
        if tok.text.starts_with(['+', '-']) {
            let num = ops.number(tok)?;
            let fits = match field {
                TargetField::Off => num.to_off16().map(i32::from),
                TargetField::Imm => i32::try_from(num.value()).ok(),
            };
            return fits
                .ok_or_else(|| ops.error(tok.col, AsmErrorKind::OffsetOutOfRange { text: tok.text.to_owned() }));
        }
        if !is_label_name(tok.text) {
            return Err(ops.error(tok.col, AsmErrorKind::InvalidJumpTarget { text: tok.text.to_owned() }));
        }
        self.fixups.push(Fixup {
            slot: self.out.len(),
            label: tok.text.to_owned(),
            field,
            line: ops.line,
            col: tok.col,
        });
        Ok(0)
    }

    fn instruction(&mut self, ops: &Operands<'_, '_>) -> Result<(), AsmError> {
        let m = ops.mnemonic.text;
        let line = ops.line;
        let col = ops.mnemonic.col;
        match m {
            "exit" => {
                ops.expect(0, "0")?;
                if self.first_exit.is_none() {
                    self.first_exit = Some(self.out.len());
                }
                self.push(Op::Exit);
            }
            "ja" => {
                ops.expect(1, "1")?;
                let off = self.target(ops, 0, TargetField::Off)?;
                self.push(Op::Ja { off: off as i16 });
            }
            "ja32" | "gotol" => {
                ops.expect(1, "1")?;
                let imm = self.target(ops, 0, TargetField::Imm)?;
                self.push(Op::Gotol { imm });
            }
            "callx" => {
                ops.expect(1, "1")?;
                let dst = ops.reg(0)?;
                self.push(Op::Callx { dst });
            }
            "call" => self.call(ops)?,
            "lddw" => {
                ops.expect(2, "2")?;
                let dst = ops.reg(0)?;
                let imm = ops.imm64(1)?;
                self.push(Op::LdImm64 { dst, imm });
            }
            "lock" => self.lock(ops)?,
            "neg" | "neg32" => {
                ops.expect(1, "1")?;
                let width = if m == "neg" { Width::W64 } else { Width::W32 };
                let dst = ops.reg(0)?;
                self.push(Op::Neg { width, dst });
            }
            _ => {
                if let Some(op) = self.memory(ops)? {
                    self.push(op);
                } else if let Some(op) = self.byte_swap(ops)? {
                    self.push(op);
                } else if let Some(&(_, width, from)) = MOVSX_OPS.iter().find(|(name, ..)| *name == m) {
                    ops.expect(2, "2")?;
                    let dst = ops.reg(0)?;
                    let src = ops.reg(1)?;
                    self.push(Op::MovSx { width, dst, src, from });
                } else if let Some(op) = self.alu(ops)? {
                    self.push(op);
                } else if !self.cond_jump(ops)? {
                    return Err(AsmError { line, col, kind: AsmErrorKind::InvalidMnemonic { mnemonic: m.to_owned() } });
                }
            }
        }
        Ok(())
    }

    /// `call N`, `call helper N`, `call local target`, `call runtime N`, `call %rN`.
    fn call(&mut self, ops: &Operands<'_, '_>) -> Result<(), AsmError> {
        match ops.ops.len() {
            1 => {
                let tok = ops.tok(0)?;
                if tok.text.starts_with('%') {
                    let dst = ops.reg(0)?;
                    self.push(Op::Callx { dst });
                } else {
                    let imm = ops.imm32(0)?;
                    self.push(Op::Call { kind: CallKind::Helper, imm });
                }
            }
            2 => {
                let mode = ops.tok(0)?;
                match mode.text {
                    "helper" => {
                        let imm = ops.imm32(1)?;
                        self.push(Op::Call { kind: CallKind::Helper, imm });
                    }
                    "local" => {
                        let imm = self.target(ops, 1, TargetField::Imm)?;
                        self.push(Op::Call { kind: CallKind::Local, imm });
                    }
                    "runtime" => {
                        let imm = ops.imm32(1)?;
                        self.push(Op::Call { kind: CallKind::Kfunc, imm });
                    }
                    other => return Err(ops.error(mode.col, AsmErrorKind::InvalidCallMode { text: other.to_owned() })),
                }
            }
            _ => ops.expect(1, "1 or 2")?,
        }
        Ok(())
    }

    /// `lock [fetch] add|and|or|xor[32] [%d+off], %s`, `lock xchg[32] ..`, `lock cmpxchg[32] ..`.
    fn lock(&mut self, ops: &Operands<'_, '_>) -> Result<(), AsmError> {
        let count_error = || {
            ops.error(
                ops.mnemonic.col,
                AsmErrorKind::OperandCount {
                    mnemonic: "lock".to_owned(),
                    expected: "3, or 4 with fetch",
                    found: ops.ops.len(),
                },
            )
        };
        let fetch = ops.ops.first().is_some_and(|t| t.text == "fetch");
        let rest = if fetch { ops.ops.get(1..).unwrap_or(&[]) } else { ops.ops };
        let [op_tok, mem_tok, src_tok] = rest else {
            return Err(count_error());
        };
        let (op_name, width) = split_32(op_tok.text);
        let full = if fetch { format!("fetch {op_name}") } else { op_name.to_owned() };
        let Some(atomic) = AtomicOp::ALL.into_iter().find(|o| o.mnemonic() == Some(full.as_str())) else {
            return Err(ops.error(op_tok.col, AsmErrorKind::InvalidAtomicOp { text: op_tok.text.to_owned() }));
        };
        let inner = [*mem_tok, *src_tok];
        let inner_ops = Operands { line: ops.line, mnemonic: *op_tok, ops: &inner };
        let (dst, off) = inner_ops.mem(0)?;
        let src = inner_ops.reg(1)?;
        let size = if width == Width::W32 { Size::W } else { Size::DW };
        self.push(Op::Atomic { size, op: atomic, dst, src, off });
        Ok(())
    }

    /// Loads and stores: `ldx*`, `ldxs*`, `st*`, `stx*`, `ldabs*`, `ldind*`.
    fn memory(&mut self, ops: &Operands<'_, '_>) -> Result<Option<Op>, AsmError> {
        let m = ops.mnemonic.text;
        let sized = |prefix: &str| {
            m.strip_prefix(prefix).and_then(|suffix| Size::ALL.into_iter().find(|s| s.mnemonic() == suffix))
        };
        // Longest prefixes first: `ldxs` before `ldx`, `stx` before `st`.
        if let Some(size) = sized("ldxs").filter(|&s| s != Size::DW) {
            ops.expect(2, "2")?;
            let dst = ops.reg(0)?;
            let (src, off) = ops.mem(1)?;
            return Ok(Some(Op::Ldsx { size, dst, src, off }));
        }
        if let Some(size) = sized("ldx") {
            ops.expect(2, "2")?;
            let dst = ops.reg(0)?;
            let (src, off) = ops.mem(1)?;
            return Ok(Some(Op::Ldx { size, dst, src, off }));
        }
        if let Some(size) = sized("stx") {
            ops.expect(2, "2")?;
            let (dst, off) = ops.mem(0)?;
            let src = ops.reg(1)?;
            return Ok(Some(Op::Stx { size, dst, src, off }));
        }
        if let Some(size) = sized("st") {
            ops.expect(2, "2")?;
            let (dst, off) = ops.mem(0)?;
            let imm = ops.imm32(1)?;
            return Ok(Some(Op::St { size, dst, off, imm }));
        }
        if let Some(size) = sized("ldabs") {
            ops.expect(1, "1")?;
            let imm = ops.imm32(0)?;
            return Ok(Some(Op::LdAbs { size, imm }));
        }
        if let Some(size) = sized("ldind") {
            ops.expect(2, "2")?;
            let src = ops.reg(0)?;
            let imm = ops.imm32(1)?;
            return Ok(Some(Op::LdInd { size, src, imm }));
        }
        Ok(None)
    }

    /// `le16/32/64`, `be16/32/64`, `swap16/32/64` and `bswap16/32/64`.
    fn byte_swap(&mut self, ops: &Operands<'_, '_>) -> Result<Option<Op>, AsmError> {
        let m = ops.mnemonic.text;
        let (endian, width) = if let Some(w) = m.strip_prefix("le") {
            (Endian::ToLe, w)
        } else if let Some(w) = m.strip_prefix("be") {
            (Endian::ToBe, w)
        } else if let Some(w) = m.strip_prefix("bswap").or_else(|| m.strip_prefix("swap")) {
            (Endian::Swap, w)
        } else {
            return Ok(None);
        };
        let imm = match width {
            "16" => 16,
            "32" => 32,
            "64" => 64,
            _ => return Ok(None),
        };
        ops.expect(1, "1")?;
        let dst = ops.reg(0)?;
        Ok(Some(Op::End { endian, dst, bits: imm }))
    }

    /// Binary ALU operations, with a register or an immediate source.
    fn alu(&mut self, ops: &Operands<'_, '_>) -> Result<Option<Op>, AsmError> {
        let Some((op, width)) = entry_32(ops.mnemonic.text, &AluOp::ALL, AluOp::mnemonic) else {
            return Ok(None);
        };
        ops.expect(2, "2")?;
        let dst = ops.reg(0)?;
        let src = ops.src(1)?;
        Ok(Some(Op::Alu { width, op, dst, src }))
    }

    /// Conditional jumps; `false` if the mnemonic is not one.
    fn cond_jump(&mut self, ops: &Operands<'_, '_>) -> Result<bool, AsmError> {
        let Some((cond, width)) = entry_32(ops.mnemonic.text, &JmpCond::ALL, JmpCond::mnemonic) else {
            return Ok(false);
        };
        ops.expect(3, "3")?;
        let dst = ops.reg(0)?;
        let src = ops.src(1)?;
        let off = self.target(ops, 2, TargetField::Off)?;
        self.push(Op::Jmp { width, cond, dst, src, off: off as i16 });
        Ok(true)
    }

    /// Patches every label reference.
    fn resolve(mut self) -> Result<Vec<Insn>, AsmError> {
        for fixup in &self.fixups {
            let target = match self.labels.get(&fixup.label) {
                Some(&(slot, _)) => slot,
                None if fixup.label == "exit" && self.first_exit.is_some() => self.first_exit.unwrap_or(0),
                None => {
                    return Err(AsmError {
                        line: fixup.line,
                        col: fixup.col,
                        kind: AsmErrorKind::UndefinedLabel { label: fixup.label.clone() },
                    })
                }
            };
            // Both are slot indices of a Vec, far below i64::MAX.
            let offset = target as i64 - fixup.slot as i64 - 1;
            let out_of_range = |bits| AsmError {
                line: fixup.line,
                col: fixup.col,
                kind: AsmErrorKind::JumpOutOfRange { target: fixup.label.clone(), offset, bits },
            };
            let Some(insn) = self.out.get_mut(fixup.slot) else {
                continue;
            };
            match fixup.field {
                TargetField::Off => insn.off = i16::try_from(offset).map_err(|_| out_of_range(16))?,
                TargetField::Imm => insn.imm = i32::try_from(offset).map_err(|_| out_of_range(32))?,
            }
        }
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Insn {
        let prog = assemble(text).unwrap();
        assert_eq!(prog.len(), 1, "{text}");
        prog[0]
    }

    /// Each form of the README's syntax, with the `struct bpf_insn` bytes it
    /// assembles to (code, src:dst, off, imm; little-endian).
    #[test]
    fn encodes_readme_examples() {
        let cases = [
            ("mov %r0, 1", "b700000001000000"),
            ("mov32 %r0 1", "b400000001000000"),
            ("add %r1, %r2", "0f21000000000000"),
            ("sdiv32 %r1, -3", "34010100fdffffff"),
            ("smod %r1, %r2", "9f21010000000000"),
            ("movsx1632 %r1, %r2", "bc21100000000000"),
            ("ldxw %r1, [%r2+4]", "6121040000000000"),
            ("ldxsh %r1, [%r2-0x10]", "8921f0ff00000000"),
            ("stxdw [%r10-8], %r1", "7b1af8ff00000000"),
            ("stb [%r1], 0xff", "72010000ff000000"),
            ("jeq %r1, 5, +3", "1501030005000000"),
            ("jsle32 %r1, %r2, -1", "de21ffff00000000"),
            ("mov32 %r0, 0xffffffff", "b4000000ffffffff"),
            ("lock fetch add [%r1+0], %r2", "db21000001000000"),
            ("lock xor32 [%r1], %r2", "c3210000a0000000"),
            ("lock cmpxchg [%r1-8], %r2", "db21f8fff1000000"),
            ("lock xchg32 [%r1], %r2", "c3210000e1000000"),
            ("call 5", "8500000005000000"),
            ("call runtime 7", "8520000007000000"),
            ("call %r2", "8d02000000000000"),
            ("callx %r3", "8d03000000000000"),
            ("be16 %r3", "dc03000010000000"),
            ("le64 %r3", "d403000040000000"),
            ("bswap32 %r3", "d703000020000000"),
            ("swap16 %r3", "d703000010000000"),
            ("neg32 %r4", "8404000000000000"),
            ("ja32 -2", "06000000feffffff"),
            ("ldabsh 12", "280000000c000000"),
            ("ldindb %r7, 14", "507000000e000000"),
            ("exit # done", "9500000000000000"),
        ];
        for (text, bytes) in cases {
            let hex: String = one(text).to_bytes().iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex, bytes, "{text}");
        }
    }

    #[test]
    fn lddw_splits_into_two_slots() {
        let prog = assemble("lddw %r0, 0x1122334455667788").unwrap();
        assert_eq!(prog, vec![Insn::new(0x18, 0, 0, 0, 0x5566_7788), Insn::new(0, 0, 0, 0, 0x1122_3344)]);
        let neg = assemble("lddw %r1, -2").unwrap();
        assert_eq!((neg[0].imm, neg[1].imm), (-2, -1));
        let dec = assemble("lddw %r1, 2147483648").unwrap();
        assert_eq!((dec[0].imm as u32, dec[1].imm), (0x8000_0000, 0));
    }

    #[test]
    fn labels_count_slots_and_exit_is_implicit() {
        let prog = assemble("ja L\nlddw %r0, 1\nL:\njeq %r0, 0, exit\nmov %r0, 1\nexit\ncall local L").unwrap();
        assert_eq!(prog[0].off, 2);
        assert_eq!(prog[3].off, 1);
        assert_eq!(prog[6].imm, -4);
        assert_eq!(prog[6].src(), 1);
        // A label may share its line with an instruction.
        let same_line = assemble("top: mov %r0, 0\nja top").unwrap();
        assert_eq!(same_line[1].off, -2);
    }

    #[test]
    fn errors_say_where() {
        let e = assemble("mov %r0, 1\nor %r0, %r50").unwrap_err();
        assert!(matches!(e, AsmError { line: 2, col: 9, kind: AsmErrorKind::InvalidRegister { .. } }), "{e:?}");
        assert_eq!(e.to_string(), "2:9: invalid register `%r50`: expected %r0 to %r15");
        let e = assemble("  ldxq %r0, %r1").unwrap_err();
        assert!(matches!(e, AsmError { line: 1, col: 3, kind: AsmErrorKind::InvalidMnemonic { .. } }), "{e:?}");
        let e = assemble("mov32 %r0, 2147483648").unwrap_err();
        assert!(matches!(e, AsmError { col: 12, kind: AsmErrorKind::ImmOutOfRange { bits: 32, .. }, .. }), "{e:?}");
        assert!(assemble("mov32 %r0, -2147483648").is_ok());
        assert!(assemble("mov32 %r0, 0x100000000").is_err());
        let e = assemble("ldxb %r0, [%r1+0x10000]").unwrap_err();
        assert!(matches!(e, AsmError { col: 15, kind: AsmErrorKind::OffsetOutOfRange { .. }, .. }), "{e:?}");
        assert!(matches!(assemble("ldxb %r0, %r1").unwrap_err().kind, AsmErrorKind::InvalidMemory { .. }));
        assert!(matches!(
            assemble("ja NOT_A_LABEL\nexit").unwrap_err(),
            AsmError { line: 1, col: 4, kind: AsmErrorKind::UndefinedLabel { .. } }
        ));
        assert!(matches!(assemble("lddw %r0").unwrap_err().kind, AsmErrorKind::OperandCount { .. }));
        let e = assemble("lock or [%r10-8]").unwrap_err();
        assert!(e.to_string().contains("invalid number of operands for lock"), "{e}");
        assert!(matches!(assemble("lock").unwrap_err().kind, AsmErrorKind::OperandCount { .. }));
        assert!(matches!(
            assemble("lock fetch xchg [%r1], %r2").unwrap_err().kind,
            AsmErrorKind::InvalidAtomicOp { .. }
        ));
        assert!(matches!(
            assemble("a:\na:\nexit").unwrap_err(),
            AsmError { line: 2, kind: AsmErrorKind::DuplicateLabel { first_line: 1, .. }, .. }
        ));
        assert!(matches!(assemble("ja 3").unwrap_err().kind, AsmErrorKind::InvalidJumpTarget { .. }));
        assert!(matches!(assemble("ja +32768").unwrap_err().kind, AsmErrorKind::OffsetOutOfRange { .. }));
        assert!(matches!(assemble("# nothing\n\n").unwrap_err().kind, AsmErrorKind::NoInstructions));
        assert!(matches!(assemble("add64 %r0, 1").unwrap_err().kind, AsmErrorKind::InvalidMnemonic { .. }));
        assert!(matches!(assemble("call foo 1").unwrap_err().kind, AsmErrorKind::InvalidCallMode { .. }));
        assert_eq!(assemble("x y").unwrap_err().shifted(10).line, 11);
    }

    #[test]
    fn long_jumps_are_checked() {
        let mut text = String::from("ja far\n");
        text.push_str(&"mov %r0, 0\n".repeat(40_000));
        text.push_str("far:\nexit\n");
        assert!(matches!(
            assemble(&text).unwrap_err().kind,
            AsmErrorKind::JumpOutOfRange { bits: 16, offset: 40_000, .. }
        ));
        let long32 = text.replacen("ja far", "ja32 far", 1);
        assert_eq!(assemble(&long32).unwrap()[0].imm, 40_000);
    }
}
