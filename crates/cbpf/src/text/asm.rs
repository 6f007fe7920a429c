//! `bpf_asm` assembly: reader and printer.
//!
//! The reader mirrors the lexer and grammar of the kernel's `bpf_asm`
//! (tools/bpf/bpf_exp.l and tools/bpf/bpf_exp.y, Linux 6.18):
//!
//! - keywords, `x`, `a` and `M` are case-insensitive; labels are
//!   case-sensitive words of at least two characters that are not keywords;
//! - numbers: `0x` hex, `0b` binary, `0NNN` octal, decimal with an optional
//!   sign (`-4096` wraps to `0xfffff000`);
//! - comments: `;` to end of line, `/* ... */`, and lines whose first
//!   character is `#`;
//! - every operand form of the grammar, the ancillary names (`#proto`,
//!   `#type`, ... with or without `#`, for `ld`, `ldh` and `ldb`), one
//!   optional label per instruction, one- and two-target conditional jumps,
//!   and the inverted jumps `jneq`/`jne` (JEQ), `jlt` (JGE) and `jle` (JGT),
//!   which set only `jf` and fall through (`jt = 0`) when the condition holds.
//!
//! # Deviations
//! - Extension: `.raw CODE, JT, JF, K` places one instruction verbatim (see
//!   the module docs of [`crate::text`]).
//! - Errors instead of `bpf_asm`'s silent behaviour: a label defined twice
//!   (bpf_asm uses the first), a `ja` to an earlier label (bpf_asm wraps the
//!   offset), numbers that do not fit 32 bits (bpf_asm truncates; we accept
//!   hex/octal/binary up to `0xffffffff` and decimal from `-2147483648` to
//!   `4294967295`).
//! - Accepted although `bpf_asm` rejects them: `[x+4]` without blanks (its
//!   lexer reads `+4` as a signed number), a carriage return as blank, a
//!   `*/` after an even run of stars (`/* a **/`), and programs longer than
//!   `BPF_MAXINSNS` (the validator limits length, not the reader).

use std::collections::HashMap;

use super::{fmt_k, ParseError, Source};
use crate::insn::{AluOp, Insn, JmpOp, Op, Size, Src};
use crate::opcode::*;

/// Mnemonics of the `bpf_asm` lexer (`ja` and `jmp` are one token, as are
/// `jneq` and `jne`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mnem {
    Ldb,
    Ldh,
    Ld,
    Ldi,
    Ldx,
    Ldxi,
    Ldxb,
    St,
    Stx,
    Jmp,
    Jeq,
    Jneq,
    Jlt,
    Jle,
    Jgt,
    Jge,
    Jset,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Neg,
    And,
    Xor,
    Or,
    Lsh,
    Rsh,
    Ret,
    Tax,
    Txa,
}

const MNEMONICS: [(&str, Mnem); 33] = [
    ("ldb", Mnem::Ldb),
    ("ldh", Mnem::Ldh),
    ("ld", Mnem::Ld),
    ("ldi", Mnem::Ldi),
    ("ldx", Mnem::Ldx),
    ("ldxi", Mnem::Ldxi),
    ("ldxb", Mnem::Ldxb),
    ("st", Mnem::St),
    ("stx", Mnem::Stx),
    ("jmp", Mnem::Jmp),
    ("ja", Mnem::Jmp),
    ("jeq", Mnem::Jeq),
    ("jneq", Mnem::Jneq),
    ("jne", Mnem::Jneq),
    ("jlt", Mnem::Jlt),
    ("jle", Mnem::Jle),
    ("jgt", Mnem::Jgt),
    ("jge", Mnem::Jge),
    ("jset", Mnem::Jset),
    ("add", Mnem::Add),
    ("sub", Mnem::Sub),
    ("mul", Mnem::Mul),
    ("div", Mnem::Div),
    ("mod", Mnem::Mod),
    ("neg", Mnem::Neg),
    ("and", Mnem::And),
    ("xor", Mnem::Xor),
    ("or", Mnem::Or),
    ("lsh", Mnem::Lsh),
    ("rsh", Mnem::Rsh),
    ("ret", Mnem::Ret),
    ("tax", Mnem::Tax),
    ("txa", Mnem::Txa),
];

/// Ancillary names of bpf_exp.l with their `SKF_AD_*` offsets. `vlan_pr`
/// and `vlan_avail` are synonyms; the printer uses the first name listed
/// for an offset.
pub(crate) const EXTENSIONS: [(&str, u32); 16] = [
    ("proto", SKF_AD_PROTOCOL),
    ("type", SKF_AD_PKTTYPE),
    ("poff", SKF_AD_PAY_OFFSET),
    ("ifidx", SKF_AD_IFINDEX),
    ("nla", SKF_AD_NLATTR),
    ("nlan", SKF_AD_NLATTR_NEST),
    ("mark", SKF_AD_MARK),
    ("queue", SKF_AD_QUEUE),
    ("hatype", SKF_AD_HATYPE),
    ("rxhash", SKF_AD_RXHASH),
    ("cpu", SKF_AD_CPU),
    ("vlan_tci", SKF_AD_VLAN_TAG),
    ("vlan_avail", SKF_AD_VLAN_TAG_PRESENT),
    ("vlan_pr", SKF_AD_VLAN_TAG_PRESENT),
    ("vlan_tpid", SKF_AD_VLAN_TPID),
    ("rand", SKF_AD_RANDOM),
];

/// Is `word` a `bpf_asm` mnemonic (any case)?
pub(crate) fn is_mnemonic(word: &str) -> bool {
    MNEMONICS.iter().any(|(m, _)| m.eq_ignore_ascii_case(word))
}

fn mnemonic(word: &str) -> Option<Mnem> {
    MNEMONICS.iter().find(|(m, _)| m.eq_ignore_ascii_case(word)).map(|&(_, m)| m)
}

fn extension(word: &str) -> Option<u32> {
    EXTENSIONS.iter().find(|(n, _)| n.eq_ignore_ascii_case(word)).map(|&(_, x)| x)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Mnem(Mnem),
    /// An ancillary name; the value is the offset from `SKF_AD_OFF`.
    Ext(u32),
    /// `len` / `#len`.
    PktLen,
    /// A number; `plus` when written with an explicit `+` sign.
    Num {
        value: u32,
        plus: bool,
    },
    Label(&'a str),
    Punct(u8),
    X,
    A,
    M,
    /// `.raw`.
    Raw,
    Eof,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tok: Tok<'a>,
    at: usize,
    end: usize,
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Splits `src` into tokens, mirroring bpf_exp.l.
fn lex(src: Source<'_>) -> Result<Vec<Token<'_>>, ParseError> {
    let text = src.text;
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err_char = |at: usize| {
        let (line, col) = src.pos(at);
        let ch = text.get(at..).and_then(|s| s.chars().next()).unwrap_or('\u{fffd}');
        ParseError::UnexpectedChar { line, col, ch }
    };
    let word_end =
        |from: usize| bytes.iter().skip(from).position(|&b| !is_word_byte(b)).map_or(bytes.len(), |n| from + n);
    let line_end = |from: usize| bytes.iter().skip(from).position(|&b| b == b'\n').map_or(bytes.len(), |n| from + n);
    while let Some(&b) = bytes.get(i) {
        let start = i;
        let tok = match b {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b';' => {
                i = line_end(i);
                continue;
            }
            b'/' => {
                if bytes.get(i + 1) != Some(&b'*') {
                    return Err(err_char(i));
                }
                match text.get(i + 2..).and_then(|rest| rest.find("*/")) {
                    Some(n) => i += 2 + n + 2,
                    None => {
                        let (line, col) = src.pos(i);
                        return Err(ParseError::UnterminatedComment { line, col });
                    }
                }
                continue;
            }
            b'#' => {
                let at_line_start = i == 0 || bytes.get(i - 1) == Some(&b'\n');
                let end = word_end(i + 1);
                let word = text.get(i + 1..end).unwrap_or("");
                let keyword =
                    if word.eq_ignore_ascii_case("len") { Some(Tok::PktLen) } else { extension(word).map(Tok::Ext) };
                // `^#.*` is a comment, unless `#keyword` is the whole line
                // (flex prefers the earlier rule on an equally long match).
                if at_line_start && !(keyword.is_some() && line_end(i) == end) {
                    i = line_end(i);
                    continue;
                }
                match keyword {
                    Some(t) => {
                        i = end;
                        t
                    }
                    None => {
                        i += 1;
                        Tok::Punct(b'#')
                    }
                }
            }
            b':' | b',' | b'%' | b'[' | b']' | b'(' | b')' | b'*' | b'&' => {
                i += 1;
                Tok::Punct(b)
            }
            b'+' | b'-' if matches!(bytes.get(i + 1), Some(b'1'..=b'9')) => {
                let (value, end) = lex_number(src, i)?;
                i = end;
                Tok::Num { value, plus: b == b'+' }
            }
            b'+' => {
                i += 1;
                Tok::Punct(b'+')
            }
            b'0'..=b'9' => {
                let (value, end) = lex_number(src, i)?;
                i = end;
                Tok::Num { value, plus: false }
            }
            b'.' => {
                let end = word_end(i + 1);
                if !text.get(i + 1..end).unwrap_or("").eq_ignore_ascii_case("raw") {
                    return Err(err_char(i));
                }
                i = end;
                Tok::Raw
            }
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let end = word_end(i);
                let word = text.get(i..end).unwrap_or("");
                i = end;
                if word.len() == 1 {
                    match b.to_ascii_lowercase() {
                        b'x' => Tok::X,
                        b'a' => Tok::A,
                        b'm' => Tok::M,
                        _ => {
                            let (line, col) = src.pos(start);
                            return Err(ParseError::OneLetterWord { line, col, letter: char::from(b) });
                        }
                    }
                } else if let Some(m) = mnemonic(word) {
                    Tok::Mnem(m)
                } else if word.eq_ignore_ascii_case("len") {
                    Tok::PktLen
                } else if let Some(x) = extension(word) {
                    Tok::Ext(x)
                } else {
                    Tok::Label(word)
                }
            }
            _ => return Err(err_char(i)),
        };
        out.push(Token { tok, at: start, end: i });
    }
    out.push(Token { tok: Tok::Eof, at: text.len(), end: text.len() });
    Ok(out)
}

/// Reads one number starting at `at` (a digit or a sign followed by 1-9).
fn lex_number(src: Source<'_>, at: usize) -> Result<(u32, usize), ParseError> {
    let bytes = src.text.as_bytes();
    let run_end = |from: usize, ok: fn(u8) -> bool| {
        bytes.iter().skip(from).position(|&b| !ok(b)).map_or(bytes.len(), |n| from + n)
    };
    let first = bytes.get(at).copied().unwrap_or(b'0');
    let next = bytes.get(at + 1).copied().unwrap_or(0);
    let (digits_at, radix, end, negative) = if first == b'-' || first == b'+' {
        (at + 1, 10, run_end(at + 1, |b| b.is_ascii_digit()), first == b'-')
    } else if first == b'0' && matches!(next, b'x' | b'X') && bytes.get(at + 2).is_some_and(u8::is_ascii_hexdigit) {
        (at + 2, 16, run_end(at + 2, |b| b.is_ascii_hexdigit()), false)
    } else if first == b'0' && matches!(next, b'b' | b'B') && matches!(bytes.get(at + 2), Some(b'0' | b'1')) {
        (at + 2, 2, run_end(at + 2, |b| b == b'0' || b == b'1'), false)
    } else if first == b'0' && matches!(next, b'0'..=b'7') {
        // The leading 0 is an octal digit too: the run starts on it.
        (at, 8, run_end(at, |b| (b'0'..=b'7').contains(&b)), false)
    } else if first == b'0' {
        (at, 10, at + 1, false)
    } else {
        (at, 10, run_end(at, |b| b.is_ascii_digit()), false)
    };
    // Digits or letters glued to the number: `08`, `12ab`, `0x1g`.
    if bytes.get(end).is_some_and(|&b| is_word_byte(b)) {
        let glued = run_end(end, is_word_byte);
        let (line, col) = src.pos(at);
        return Err(ParseError::MalformedNumber { line, col, text: src.text.get(at..glued).unwrap_or("").to_string() });
    }
    let digits = src.text.get(digits_at..end).unwrap_or("");
    let magnitude = u64::from_str_radix(digits, radix).ok();
    let value = match (magnitude, negative) {
        (Some(m), false) => u32::try_from(m).ok(),
        (Some(m), true) if m <= 1 << 31 => Some((m as u32).wrapping_neg()),
        _ => None,
    };
    match value {
        Some(v) => Ok((v, end)),
        None => {
            let (line, col) = src.pos(at);
            Err(ParseError::NumberOutOfRange {
                line,
                col,
                text: src.text.get(at..end).unwrap_or("").to_string(),
                range: "32-bit: 0 to 0xffffffff, or -2147483648 to -1",
            })
        }
    }
}

/// Which field of an instruction a label reference fills in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Jt,
    Jf,
    K,
}

#[derive(Debug, Clone, Copy)]
struct Fixup<'a> {
    pc: usize,
    field: Field,
    label: &'a str,
    at: usize,
}

struct Parser<'a> {
    src: Source<'a>,
    toks: Vec<Token<'a>>,
    i: usize,
    insns: Vec<Insn>,
    fixups: Vec<Fixup<'a>>,
}

/// Reads `bpf_asm` assembly.
///
/// Mirrors `bpf_asm_compile()` in tools/bpf/bpf_exp.y: parse every line, then
/// resolve `ja` labels into `k`, then `jt`, then `jf` labels.
///
/// # Deviations
/// See the module docs.
pub(crate) fn parse(src: Source<'_>) -> Result<Vec<Insn>, ParseError> {
    let toks = lex(src)?;
    let mut p = Parser { src, toks, i: 0, insns: Vec::new(), fixups: Vec::new() };
    let mut labels: HashMap<&str, (usize, usize)> = HashMap::new();
    while p.peek().tok != Tok::Eof {
        if let (Tok::Label(name), Tok::Punct(b':')) = (p.peek().tok, p.peek_at(1).tok) {
            let at = p.peek().at;
            if let Some(&(_, first)) = labels.get(name) {
                let (line, col) = src.pos(at);
                let (first_line, first_col) = src.pos(first);
                return Err(ParseError::DuplicateLabel { line, col, label: name.to_string(), first_line, first_col });
            }
            labels.insert(name, (p.insns.len(), at));
            p.i += 2;
        }
        p.instruction()?;
    }
    if p.insns.is_empty() {
        let (line, col) = src.pos(src.text.len());
        return Err(ParseError::Empty { line, col });
    }
    for f in &p.fixups {
        let pos = || src.pos(f.at);
        let Some(&(target, _)) = labels.get(f.label) else {
            let (line, col) = pos();
            return Err(ParseError::UndefinedLabel { line, col, label: f.label.to_string() });
        };
        let label = f.label.to_string();
        if target <= f.pc {
            let (line, col) = pos();
            return Err(ParseError::BackwardJump { line, col, label, pc: f.pc, target });
        }
        let delta = target - f.pc - 1;
        let Some(insn) = p.insns.get_mut(f.pc) else { continue };
        match f.field {
            Field::K => insn.k = u32::try_from(delta).unwrap_or(u32::MAX),
            Field::Jt | Field::Jf => {
                let Ok(off) = u8::try_from(delta) else {
                    let (line, col) = pos();
                    return Err(ParseError::JumpTooFar { line, col, label, pc: f.pc, target });
                };
                if f.field == Field::Jt {
                    insn.jt = off;
                } else {
                    insn.jf = off;
                }
            }
        }
    }
    Ok(p.insns)
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token<'a> {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> Token<'a> {
        let eof = Token { tok: Tok::Eof, at: self.src.text.len(), end: self.src.text.len() };
        self.toks.get(self.i + n).copied().unwrap_or(eof)
    }

    fn next(&mut self) -> Token<'a> {
        let t = self.peek();
        if t.tok != Tok::Eof {
            self.i += 1;
        }
        t
    }

    fn error(&self, t: Token<'a>, expected: &str) -> ParseError {
        let (line, col) = self.src.pos(t.at);
        let found = match t.tok {
            Tok::Eof => "end of input".to_string(),
            _ => format!("`{}`", self.src.text.get(t.at..t.end).unwrap_or("")),
        };
        ParseError::Syntax { line, col, expected: expected.to_string(), found }
    }

    fn expect_punct(&mut self, c: u8) -> Result<(), ParseError> {
        let t = self.next();
        if t.tok == Tok::Punct(c) {
            Ok(())
        } else {
            Err(self.error(t, &format!("`{}`", c as char)))
        }
    }

    fn number(&mut self) -> Result<u32, ParseError> {
        let t = self.next();
        match t.tok {
            Tok::Num { value, .. } => Ok(value),
            _ => Err(self.error(t, "a number")),
        }
    }

    /// A number that must fit in `max`; used by `.raw` fields.
    fn number_max(&mut self, max: u32, range: &'static str) -> Result<u32, ParseError> {
        let t = self.peek();
        let v = self.number()?;
        if v > max {
            let (line, col) = self.src.pos(t.at);
            let text = self.src.text.get(t.at..t.end).unwrap_or("").to_string();
            return Err(ParseError::NumberOutOfRange { line, col, text, range });
        }
        Ok(v)
    }

    fn label_ref(&mut self, field: Field) -> Result<(), ParseError> {
        let t = self.next();
        match t.tok {
            Tok::Label(label) => {
                self.fixups.push(Fixup { pc: self.insns.len(), field, label, at: t.at });
                Ok(())
            }
            Tok::A | Tok::X | Tok::M => Err(self.error(t, "a label (`a`, `x` and `M` are registers)")),
            _ => Err(self.error(t, "a label")),
        }
    }

    fn push(&mut self, insn: Insn) -> Result<(), ParseError> {
        self.insns.push(insn);
        Ok(())
    }

    /// `x` or `%x`.
    fn eat_x(&mut self) -> bool {
        self.eat_register(Tok::X)
    }

    /// The register `reg` (`Tok::A` or `Tok::X`), with or without a `%`.
    fn eat_register(&mut self, reg: Tok) -> bool {
        let (first, second) = (self.peek().tok, self.peek_at(1).tok);
        let eaten = if first == reg {
            1
        } else if first == Tok::Punct(b'%') && second == reg {
            2
        } else {
            return false;
        };
        self.i += eaten;
        true
    }

    /// `a` or `%a`.
    fn eat_a(&mut self) -> bool {
        self.eat_register(Tok::A)
    }

    /// `[k]`, `[x + k]` or `[%x + k]` after a load mnemonic of `size`.
    fn packet_operand(&mut self, size: Size) -> Result<Insn, ParseError> {
        self.expect_punct(b'[')?;
        let insn = if self.eat_x() {
            let k = match self.peek().tok {
                Tok::Num { value, plus: true } => {
                    self.i += 1;
                    value
                }
                _ => {
                    self.expect_punct(b'+')?;
                    self.number()?
                }
            };
            Op::LdInd { size, k }.to_insn()
        } else {
            Op::LdAbs { size, k: self.number()? }.to_insn()
        };
        self.expect_punct(b']')?;
        Ok(insn)
    }

    /// `M[k]`.
    fn mem_operand(&mut self) -> Result<u32, ParseError> {
        let t = self.next();
        if t.tok != Tok::M {
            return Err(self.error(t, "`M[`"));
        }
        self.expect_punct(b'[')?;
        let k = self.number()?;
        self.expect_punct(b']')?;
        Ok(k)
    }

    /// `4*([k]&0xf)` after `ldx`/`ldxb`.
    fn msh_operand(&mut self) -> Result<Insn, ParseError> {
        let start = self.peek();
        let four = self.number()?;
        self.expect_punct(b'*')?;
        self.expect_punct(b'(')?;
        self.expect_punct(b'[')?;
        let k = self.number()?;
        self.expect_punct(b']')?;
        self.expect_punct(b'&')?;
        let mask = self.number()?;
        self.expect_punct(b')')?;
        if four != 4 || mask != 0xf {
            let (line, col) = self.src.pos(start.at);
            return Err(ParseError::BadMsh { line, col });
        }
        Ok(Op::LdxMsh { k }.to_insn())
    }

    /// `#k`, `x` or `%x` of an ALU or jump instruction.
    fn src_operand(&mut self) -> Result<(Src, u32), ParseError> {
        if self.eat_x() {
            return Ok((Src::X, 0));
        }
        let t = self.next();
        if t.tok != Tok::Punct(b'#') {
            return Err(self.error(t, "`#k`, `x` or `%x`"));
        }
        Ok((Src::K, self.number()?))
    }

    /// The operands `ld` and `ldx` share, `#k`, `len` and `M[k]`, as the
    /// register's load (`imm`, `len`, `mem`); `None`, with nothing read, for
    /// another operand.
    fn register_load(&mut self, imm: fn(u32) -> Op, len: Op, mem: fn(u32) -> Op) -> Result<Option<Insn>, ParseError> {
        let op = match self.peek().tok {
            Tok::Punct(b'#') => {
                self.i += 1;
                imm(self.number()?)
            }
            Tok::PktLen => {
                self.i += 1;
                len
            }
            Tok::M => mem(self.mem_operand()?),
            _ => return Ok(None),
        };
        Ok(Some(op.to_insn()))
    }

    /// `#k` or a bare `k` (`ldi`, `ldxi`).
    fn imm_operand(&mut self) -> Result<u32, ParseError> {
        if self.peek().tok == Tok::Punct(b'#') {
            self.i += 1;
        }
        self.number()
    }

    fn instruction(&mut self) -> Result<(), ParseError> {
        let t = self.next();
        let m = match t.tok {
            Tok::Mnem(m) => m,
            Tok::Raw => {
                let code = self.number_max(0xffff, "code: 0 to 0xffff")?;
                self.expect_punct(b',')?;
                let jt = self.number_max(0xff, "jt: 0 to 255")?;
                self.expect_punct(b',')?;
                let jf = self.number_max(0xff, "jf: 0 to 255")?;
                self.expect_punct(b',')?;
                let k = self.number()?;
                // Ranges were checked just above.
                return self.push(Insn::jump(code as u16, k, jt as u8, jf as u8));
            }
            Tok::Label(_) if self.peek().tok == Tok::Punct(b':') => {
                return Err(self.error(t, "one label per instruction, then an instruction"))
            }
            _ => return Err(self.error(t, "an instruction")),
        };
        let alu_op = match m {
            Mnem::Add => Some(AluOp::Add),
            Mnem::Sub => Some(AluOp::Sub),
            Mnem::Mul => Some(AluOp::Mul),
            Mnem::Div => Some(AluOp::Div),
            Mnem::Mod => Some(AluOp::Mod),
            Mnem::And => Some(AluOp::And),
            Mnem::Or => Some(AluOp::Or),
            Mnem::Xor => Some(AluOp::Xor),
            Mnem::Lsh => Some(AluOp::Lsh),
            Mnem::Rsh => Some(AluOp::Rsh),
            _ => None,
        };
        if let Some(op) = alu_op {
            let (src, k) = self.src_operand()?;
            return self.push(Op::Alu { op, src, k }.to_insn());
        }
        // Conditional jumps: (opcode, inverted: only a jf label).
        let jump = match m {
            Mnem::Jeq => Some((JmpOp::Jeq, false)),
            Mnem::Jgt => Some((JmpOp::Jgt, false)),
            Mnem::Jge => Some((JmpOp::Jge, false)),
            Mnem::Jset => Some((JmpOp::Jset, false)),
            Mnem::Jneq => Some((JmpOp::Jeq, true)),
            Mnem::Jlt => Some((JmpOp::Jge, true)),
            Mnem::Jle => Some((JmpOp::Jgt, true)),
            _ => None,
        };
        if let Some((op, inverted)) = jump {
            let (src, k) = self.src_operand()?;
            self.expect_punct(b',')?;
            if inverted {
                self.label_ref(Field::Jf)?;
            } else {
                self.label_ref(Field::Jt)?;
                if self.peek().tok == Tok::Punct(b',') {
                    self.i += 1;
                    self.label_ref(Field::Jf)?;
                }
            }
            return self.push(Op::Jmp { op, src, k, jt: 0, jf: 0 }.to_insn());
        }
        let insn = match m {
            Mnem::Ldb | Mnem::Ldh => {
                let size = if m == Mnem::Ldb { Size::B } else { Size::H };
                match self.peek().tok {
                    Tok::Ext(x) => {
                        self.i += 1;
                        Op::LdAbs { size, k: SKF_AD_OFF.wrapping_add(x) }.to_insn()
                    }
                    _ => self.packet_operand(size)?,
                }
            }
            Mnem::Ld => match self.register_load(|k| Op::LdImm { k }, Op::LdLen, |k| Op::LdMem { k })? {
                Some(insn) => insn,
                None => match self.peek().tok {
                    Tok::Ext(x) => {
                        self.i += 1;
                        Op::LdAbs { size: Size::W, k: SKF_AD_OFF.wrapping_add(x) }.to_insn()
                    }
                    Tok::Punct(b'[') => self.packet_operand(Size::W)?,
                    _ => return Err(self.error(self.peek(), "`#k`, `len`, `M[k]`, `[k]`, `[x + k]` or an extension")),
                },
            },
            Mnem::Ldi => Op::LdImm { k: self.imm_operand()? }.to_insn(),
            Mnem::Ldxi => Op::LdxImm { k: self.imm_operand()? }.to_insn(),
            Mnem::Ldx => match self.register_load(|k| Op::LdxImm { k }, Op::LdxLen, |k| Op::LdxMem { k })? {
                Some(insn) => insn,
                None if matches!(self.peek().tok, Tok::Num { .. }) => self.msh_operand()?,
                None => return Err(self.error(self.peek(), "`#k`, `len`, `M[k]` or `4*([k]&0xf)`")),
            },
            Mnem::Ldxb => self.msh_operand()?,
            Mnem::St => Op::St { k: self.mem_operand()? }.to_insn(),
            Mnem::Stx => Op::Stx { k: self.mem_operand()? }.to_insn(),
            Mnem::Jmp => {
                self.label_ref(Field::K)?;
                Op::Ja { k: 0 }.to_insn()
            }
            Mnem::Neg => Op::Neg.to_insn(),
            Mnem::Ret => {
                if self.eat_a() {
                    Op::RetA.to_insn()
                } else if self.eat_x() {
                    // `BPF_RET | BPF_X`: bpf_asm emits it; the kernel rejects it.
                    Insn::stmt(BPF_RET | BPF_X, 0)
                } else {
                    let t = self.next();
                    if t.tok != Tok::Punct(b'#') {
                        return Err(self.error(t, "`#k`, `a` or `x`"));
                    }
                    Op::RetK { k: self.number()? }.to_insn()
                }
            }
            Mnem::Tax => Op::Tax.to_insn(),
            Mnem::Txa => Op::Txa.to_insn(),
            // Handled above; listed so a new mnemonic cannot be forgotten.
            Mnem::Add
            | Mnem::Sub
            | Mnem::Mul
            | Mnem::Div
            | Mnem::Mod
            | Mnem::And
            | Mnem::Or
            | Mnem::Xor
            | Mnem::Lsh
            | Mnem::Rsh
            | Mnem::Jeq
            | Mnem::Jneq
            | Mnem::Jlt
            | Mnem::Jle
            | Mnem::Jgt
            | Mnem::Jge
            | Mnem::Jset => return Err(self.error(t, "an instruction")),
        };
        self.push(insn)
    }
}

/// How one instruction is printed.
enum Form {
    /// Plain bpf_asm text, plus the jump targets it names.
    Asm(String, Vec<usize>),
    /// `BPF_RET | BPF_X`, which bpf_asm writes as `ret x`.
    RetX,
    /// The `.raw` escape hatch, with a comment saying why.
    Raw(String),
}

fn ancillary_name(k: u32) -> Option<&'static str> {
    let x = k.checked_sub(SKF_AD_OFF)?;
    EXTENSIONS.iter().find(|&&(_, off)| off == x).map(|&(name, _)| name)
}

fn form(pc: usize, insn: Insn, len: usize) -> Form {
    let Some(op) = insn.op() else {
        return if insn == Insn::stmt(BPF_RET | BPF_X, 0) {
            Form::RetX
        } else {
            Form::Raw("unknown opcode".to_string())
        };
    };
    // `Op` keeps `k` for the X forms of ALU and jumps, but bpf_asm always
    // writes 0 there, so a non-zero `k` is an ignored field too.
    let x_with_k = match op {
        Op::Alu { src: Src::X, k, .. } | Op::Jmp { src: Src::X, k, .. } => k != 0,
        _ => false,
    };
    if op.to_insn() != insn || x_with_k {
        // Name the instruction in the comment unless it is a jump, whose
        // label might not exist.
        let canonical = match op {
            Op::Alu { op, src: Src::X, .. } => Op::Alu { op, src: Src::X, k: 0 },
            Op::Jmp { op, src: Src::X, jt, jf, .. } => Op::Jmp { op, src: Src::X, k: 0, jt, jf },
            other => other,
        };
        let what = match form(pc, canonical.to_insn(), len) {
            Form::Asm(s, targets) if targets.is_empty() => s,
            _ => "jump".to_string(),
        };
        return Form::Raw(format!("{what}, with fields the kernel ignores set"));
    }
    let target = |off: u64| -> Option<usize> {
        let t = pc as u64 + 1 + off;
        usize::try_from(t).ok().filter(|&t| t < len)
    };
    let size_mn = |size: Size| match size {
        Size::W => "ld",
        Size::H => "ldh",
        Size::B => "ldb",
    };
    let s = match op {
        Op::LdImm { k } => format!("ld #{}", fmt_k(k)),
        Op::LdxImm { k } => format!("ldx #{}", fmt_k(k)),
        Op::LdMem { k } => format!("ld M[{k}]"),
        Op::LdxMem { k } => format!("ldx M[{k}]"),
        Op::St { k } => format!("st M[{k}]"),
        Op::Stx { k } => format!("stx M[{k}]"),
        Op::LdAbs { size, k } => match ancillary_name(k) {
            Some(name) => format!("{} #{name}", size_mn(size)),
            None => format!("{} [{}]", size_mn(size), fmt_k(k)),
        },
        Op::LdInd { size, k } => format!("{} [x + {}]", size_mn(size), fmt_k(k)),
        Op::LdLen => "ld #len".to_string(),
        Op::LdxLen => "ldx #len".to_string(),
        Op::LdxMsh { k } => format!("ldxb 4*([{}]&0xf)", fmt_k(k)),
        Op::LdxAbsSeccomp { k } => {
            return Form::Raw(format!("seccomp-internal LDX|W|ABS (0x21): A = seccomp_data[{k}]"))
        }
        Op::Alu { op, src, k } => match src {
            Src::X => format!("{} x", op.mnemonic()),
            Src::K => match op {
                AluOp::And | AluOp::Or | AluOp::Xor => {
                    format!("{} #{k:#x}", op.mnemonic())
                }
                _ => format!("{} #{}", op.mnemonic(), fmt_k(k)),
            },
        },
        Op::Neg => "neg".to_string(),
        Op::Ja { k } => {
            let Some(t) = target(u64::from(k)) else { return Form::Raw("jump past the last instruction".to_string()) };
            return Form::Asm(format!("ja L{t}"), vec![t]);
        }
        Op::Jmp { op, src, k, jt, jf } => {
            let (Some(tt), Some(tf)) = (target(u64::from(jt)), target(u64::from(jf))) else {
                return Form::Raw("jump past the last instruction".to_string());
            };
            let operand = match (src, op) {
                (Src::X, _) => "x".to_string(),
                (Src::K, JmpOp::Jset) => format!("#{k:#x}"),
                (Src::K, _) => format!("#{}", fmt_k(k)),
            };
            return if jf == 0 {
                Form::Asm(format!("{} {operand}, L{tt}", op.mnemonic()), vec![tt])
            } else {
                Form::Asm(format!("{} {operand}, L{tt}, L{tf}", op.mnemonic()), vec![tt, tf])
            };
        }
        Op::RetK { k } => format!("ret #{}", fmt_k(k)),
        Op::RetA => "ret a".to_string(),
        Op::Tax => "tax".to_string(),
        Op::Txa => "txa".to_string(),
    };
    Form::Asm(s, Vec::new())
}

/// Prints `insns` as `bpf_asm` assembly: one instruction a line, tab
/// indented, jump targets labelled `L<index>`.
///
/// Instructions `bpf_asm` cannot express are written as `.raw CODE, JT, JF, K`
/// with a comment; see the module docs of [`crate::text`]. Parsing the
/// result with [`crate::text::parse`] gives back `insns` exactly.
pub fn print_asm(insns: &[Insn]) -> String {
    let forms: Vec<Form> = insns.iter().enumerate().map(|(pc, &i)| form(pc, i, insns.len())).collect();
    let mut labelled = vec![false; insns.len()];
    for f in &forms {
        if let Form::Asm(_, targets) = f {
            for &t in targets {
                if let Some(l) = labelled.get_mut(t) {
                    *l = true;
                }
            }
        }
    }
    let mut out = String::new();
    for (pc, (f, insn)) in forms.iter().zip(insns).enumerate() {
        if labelled.get(pc).copied().unwrap_or(false) {
            out.push_str(&format!("L{pc}:"));
        }
        out.push('\t');
        match f {
            Form::Asm(s, _) => out.push_str(s),
            Form::RetX => out.push_str("ret x"),
            Form::Raw(why) => {
                out.push_str(&format!(".raw {:#06x}, {}, {}, {:#010x}\t; {why}", insn.code, insn.jt, insn.jf, insn.k))
            }
        }
        out.push('\n');
    }
    out
}
