//! C initialisers: reader and `tcpdump -dd` printer.
//!
//! The reader finds the instructions in C text and ignores the C around
//! them. It understands:
//!
//! - `{ code, jt, jf, k }` groups, as `tcpdump -dd` and `bpf_asm -c` print
//!   them, with or without an enclosing `struct sock_filter f[] = { ... };`,
//!   and designated `{ .code = .., .jt = .., .jf = .., .k = .. }`;
//! - `BPF_STMT(code, k)` and `BPF_JUMP(code, k, jt, jf)`;
//! - a flat byte array whose length is a multiple of 8 (seccomp-tools
//!   `asm --format carray`: `unsigned char bpf[] = {32,0,0,0,4,0,0,0,...};`),
//!   read as raw little-endian `sock_filter` records;
//! - constant expressions in every field: integer literals (decimal, hex,
//!   octal, binary, with `u`/`l` suffixes), `| & ^ + - * / % << >> ~ !`,
//!   parentheses, casts to integer types, `sizeof` of integer types,
//!   `offsetof(struct seccomp_data, nr|arch|instruction_pointer|args[i])`,
//!   and the names of the UAPI headers (`BPF_*`, `SKF_*`, `SECCOMP_RET_*`,
//!   `AUDIT_ARCH_*`, asm-generic `E*` errno values), see `symbols.rs`;
//! - object-like `#define NAME ...` macros defined earlier in the file;
//! - `//` and `/* */` comments; other preprocessor lines are skipped.
//!
//! Groups that are clearly not instructions (function bodies, which hold
//! `;`, and designated initialisers of other structs such as `sock_fprog`)
//! are skipped; a group that looks like an instruction but is not one is an
//! error, never silently dropped.
//!
//! # Deviations
//! This is not a C preprocessor: function-like macros are not expanded (a
//! use is reported as an unknown identifier), `#if` branches are all read.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::symbols;
use super::{ParseError, Source};
use crate::insn::{Insn, INSN_SIZE};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Ident(&'a str),
    Int(u64),
    Punct(&'static str),
    /// A string or character literal; its contents never matter here.
    Str,
}

#[derive(Debug, Clone, Copy)]
struct T<'a> {
    tok: Tok<'a>,
    at: usize,
    end: usize,
}

const PUNCTS: [&str; 24] = [
    "<<", ">>", "{", "}", "(", ")", "[", "]", ",", ";", "=", ".", "|", "&", "^", "~", "!", "+", "-", "*", "/", "%",
    "<", ">",
];
const MORE_PUNCTS: [&str; 2] = ["?", ":"];

/// Upper bound on tokens produced by macro expansion, so that nested
/// macros cannot blow up memory.
const EXPANSION_LIMIT: usize = 1 << 20;

/// Deepest nesting any recursive part of the reader accepts: unary
/// operators, casts and parentheses in one constant expression, `{`
/// groups, and macros expanding macros. Realistic C nests a few levels.
pub(crate) const MAX_DEPTH: usize = 256;

/// Budget of macro-body tokens visited while expanding, over the whole
/// text, so that macros referring to macros many times (exponential
/// expansion) stop with an error in well under a second.
pub(crate) const MACRO_WORK_LIMIT: usize = 1 << 20;

struct Lexer<'a> {
    src: Source<'a>,
    macros: HashMap<&'a str, Rc<[T<'a>]>>,
    out: Vec<T<'a>>,
    /// Macro-body tokens visited so far (see [`MACRO_WORK_LIMIT`]).
    work: usize,
}

fn err_at(src: Source<'_>, at: usize) -> (usize, usize) {
    src.pos(at)
}

impl<'a> Lexer<'a> {
    /// Lexes `text[lo..hi]`; `main` is false inside a `#define` body.
    fn lex_range(&mut self, lo: usize, hi: usize, main: bool) -> Result<Vec<T<'a>>, ParseError> {
        let src = self.src;
        let text = src.text;
        let bytes = text.as_bytes();
        let mut toks = Vec::new();
        let mut i = lo;
        let mut line_start = true;
        let unexpected = |at: usize| {
            let (line, col) = err_at(src, at);
            let ch = text.get(at..).and_then(|s| s.chars().next()).unwrap_or('\u{fffd}');
            ParseError::UnexpectedChar { line, col, ch }
        };
        let find_from = |from: usize, pred: &dyn Fn(u8) -> bool| {
            bytes.iter().take(hi).skip(from).position(|&b| pred(b)).map_or(hi, |n| from + n)
        };
        while i < hi {
            let Some(&b) = bytes.get(i) else { break };
            let start = i;
            match b {
                b'\n' => {
                    line_start = true;
                    i += 1;
                    continue;
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {
                    i += 1;
                    continue;
                }
                b'\\' if matches!(bytes.get(i + 1), Some(b'\n')) => {
                    i += 2;
                    continue;
                }
                b'\\' if bytes.get(i + 1) == Some(&b'\r') && bytes.get(i + 2) == Some(&b'\n') => {
                    i += 3;
                    continue;
                }
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    i = find_from(i, &|c| c == b'\n');
                    continue;
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    match text.get(i + 2..hi).and_then(|r| r.find("*/")) {
                        Some(n) => i += 2 + n + 2,
                        None => {
                            let (line, col) = err_at(src, i);
                            return Err(ParseError::UnterminatedComment { line, col });
                        }
                    }
                    continue;
                }
                b'#' if main && line_start => {
                    i = self.directive(i, hi)?;
                    continue;
                }
                _ => {}
            }
            line_start = false;
            let tok = match b {
                b'0'..=b'9' => {
                    let (v, end) = lex_int(src, i, hi)?;
                    i = end;
                    Tok::Int(v)
                }
                b'"' | b'\'' => {
                    let mut j = i + 1;
                    loop {
                        match bytes.get(j) {
                            Some(&c) if c == b && j < hi => break,
                            Some(b'\\') if j + 1 < hi => j += 2,
                            Some(b'\n') | None => return Err(unexpected(i)),
                            Some(_) if j >= hi => return Err(unexpected(i)),
                            Some(_) => j += 1,
                        }
                    }
                    i = j + 1;
                    Tok::Str
                }
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let end = find_from(i, &|c| !(c.is_ascii_alphanumeric() || c == b'_'));
                    let word = text.get(i..end).unwrap_or("");
                    i = end;
                    Tok::Ident(word)
                }
                _ => {
                    let rest = text.get(i..hi).unwrap_or("");
                    let Some(p) = PUNCTS.iter().chain(MORE_PUNCTS.iter()).find(|p| rest.starts_with(**p)) else {
                        return Err(unexpected(i));
                    };
                    i += p.len();
                    Tok::Punct(p)
                }
            };
            toks.push(T { tok, at: start, end: i });
        }
        Ok(toks)
    }

    /// Handles a preprocessor line starting at `at`; returns where it ends.
    /// Records object-like `#define`s, honours `#undef`, skips the rest.
    fn directive(&mut self, at: usize, hi: usize) -> Result<usize, ParseError> {
        let bytes = self.src.text.as_bytes();
        // The logical line: up to a newline not preceded by a backslash.
        let mut end = at;
        while end < hi {
            match bytes.get(end) {
                Some(b'\n') if end > 0 && bytes.get(end - 1) == Some(&b'\\') => end += 1,
                Some(b'\n') | None => break,
                Some(_) => end += 1,
            }
        }
        let line = self.src.text.get(at + 1..end).unwrap_or("");
        let trimmed = line.trim_start_matches([' ', '\t']);
        let word_at = at + 1 + (line.len() - trimmed.len());
        let word: &str = trimmed.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("");
        if word == "define" || word == "undef" {
            let after = word_at + word.len();
            let rest = self.src.text.get(after..end).unwrap_or("");
            let name_rest = rest.trim_start_matches([' ', '\t']);
            let name_at = after + (rest.len() - name_rest.len());
            let name_len =
                name_rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(name_rest.len());
            let name = self.src.text.get(name_at..name_at + name_len).unwrap_or("");
            if word == "undef" {
                self.macros.remove(name);
            } else if !name.is_empty() && bytes.get(name_at + name_len) != Some(&b'(') {
                let body = self.lex_range(name_at + name_len, end, false)?;
                self.macros.insert(name, body.into());
            }
        }
        Ok(end)
    }

    /// Appends `toks` to the output, expanding object-like macros.
    ///
    /// Iterative (an explicit stack of bodies being expanded), with the
    /// depth bounded by [`MAX_DEPTH`] and the total work by
    /// [`MACRO_WORK_LIMIT`]; errors point at the main-text use.
    fn emit(&mut self, toks: &[T<'a>]) -> Result<(), ParseError> {
        for t in toks {
            self.emit_one(*t)?;
        }
        Ok(())
    }

    fn emit_one(&mut self, use_site: T<'a>) -> Result<(), ParseError> {
        let bad = |src: Source<'_>, what: &'static str| {
            let (line, col) = src.pos(use_site.at);
            ParseError::BadExpression { line, col, what }
        };
        // (name, body, next index)
        let mut stack: Vec<(&'a str, Rc<[T<'a>]>, usize)> = Vec::new();
        let mut active: HashSet<&'a str> = HashSet::new();
        let mut next = Some(use_site);
        loop {
            let t = match next.take() {
                Some(t) => t,
                None => {
                    let Some((_, body, i)) = stack.last_mut() else { return Ok(()) };
                    let Some(t) = body.get(*i).copied() else {
                        if let Some((name, _, _)) = stack.pop() {
                            active.remove(name);
                        }
                        continue;
                    };
                    *i += 1;
                    self.work += 1;
                    if self.work > MACRO_WORK_LIMIT {
                        return Err(bad(self.src, "macro expansion over its budget of 1048576 tokens (limit)"));
                    }
                    t
                }
            };
            if self.out.len() > EXPANSION_LIMIT {
                return Err(bad(self.src, "macro expansion over its budget of 1048576 output tokens (limit)"));
            }
            if let Tok::Ident(name) = t.tok {
                if !active.contains(name) {
                    if let Some(body) = self.macros.get(name) {
                        if stack.len() >= MAX_DEPTH {
                            return Err(bad(self.src, "macro expansion deeper than 256 levels (limit)"));
                        }
                        stack.push((name, Rc::clone(body), 0));
                        active.insert(name);
                        continue;
                    }
                }
            }
            self.out.push(t);
        }
    }
}

/// Lexes the whole text, expanding each main-text token with the macros
/// defined before it.
fn lex(src: Source<'_>) -> Result<Vec<T<'_>>, ParseError> {
    let mut lx = Lexer { src, macros: HashMap::new(), out: Vec::new(), work: 0 };
    // Lex line by line so a `#define` takes effect for the lines after it.
    let text = src.text;
    let mut lo = 0;
    while lo < text.len() {
        let hi = logical_line_end(text.as_bytes(), lo);
        let toks = lx.lex_range(lo, hi, true)?;
        lx.emit(&toks)?;
        lo = hi;
    }
    Ok(lx.out)
}

/// End (exclusive, after the newline) of the chunk starting at `lo`: through
/// the next newline that is outside a comment and not escaped by `\`.
fn logical_line_end(bytes: &[u8], lo: usize) -> usize {
    let mut i = lo;
    let mut in_block = false;
    while let Some(&b) = bytes.get(i) {
        if in_block {
            if b == b'*' && bytes.get(i + 1) == Some(&b'/') {
                in_block = false;
                i += 2;
                continue;
            }
        } else if b == b'/' && bytes.get(i + 1) == Some(&b'*') {
            in_block = true;
            i += 2;
            continue;
        } else if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
            // A line comment runs to the newline; stop there.
            while let Some(&c) = bytes.get(i) {
                if c == b'\n' {
                    return i + 1;
                }
                i += 1;
            }
            return bytes.len();
        } else if b == b'\n' && !(i > lo && bytes.get(i - 1) == Some(&b'\\')) {
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

/// Reads a C integer literal at `at`.
fn lex_int(src: Source<'_>, at: usize, hi: usize) -> Result<(u64, usize), ParseError> {
    let bytes = src.text.as_bytes();
    let run = |from: usize, ok: fn(u8) -> bool| {
        bytes.iter().take(hi).skip(from).position(|&b| !ok(b)).map_or(hi.max(from), |n| from + n)
    };
    let next = bytes.get(at + 1).copied().unwrap_or(0);
    let first = bytes.get(at).copied().unwrap_or(b'0');
    let (digits_at, radix, digits_end) = if first == b'0' && matches!(next, b'x' | b'X') {
        (at + 2, 16, run(at + 2, |b| b.is_ascii_hexdigit()))
    } else if first == b'0' && matches!(next, b'b' | b'B') {
        (at + 2, 2, run(at + 2, |b| b == b'0' || b == b'1'))
    } else if first == b'0' {
        (at, 8, run(at, |b| (b'0'..=b'7').contains(&b)))
    } else {
        (at, 10, run(at, |b| b.is_ascii_digit()))
    };
    let end = run(digits_end, |b| matches!(b, b'u' | b'U' | b'l' | b'L'));
    let glued_end = run(end, |b| b.is_ascii_alphanumeric() || b == b'_');
    let digits = src.text.get(digits_at..digits_end).unwrap_or("");
    let whole = || src.text.get(at..glued_end).unwrap_or("").to_string();
    if glued_end != end || digits.is_empty() {
        let (line, col) = src.pos(at);
        return Err(ParseError::MalformedNumber { line, col, text: whole() });
    }
    u64::from_str_radix(digits, radix).map(|v| (v, end)).map_err(|_| {
        let (line, col) = src.pos(at);
        ParseError::NumberOutOfRange { line, col, text: whole(), range: "64-bit" }
    })
}

/// Integer types a cast or `sizeof` may name: (bits, signed).
fn int_type(words: &[&str]) -> Option<(u32, bool)> {
    let mut bits = 32;
    let mut signed = true;
    let mut seen = false;
    for w in words {
        seen = true;
        match *w {
            "unsigned" => signed = false,
            "signed" | "int" | "const" | "volatile" => {}
            "char" => bits = 8,
            "short" => bits = 16,
            "long" => bits = 64,
            "__u8" | "u8" | "uint8_t" => (bits, signed) = (8, false),
            "__u16" | "u16" | "uint16_t" => (bits, signed) = (16, false),
            "__u32" | "u32" | "uint32_t" => (bits, signed) = (32, false),
            "__u64" | "u64" | "uint64_t" | "size_t" => (bits, signed) = (64, false),
            "__s8" | "s8" | "int8_t" => bits = 8,
            "__s16" | "s16" | "int16_t" => bits = 16,
            "__s32" | "s32" | "int32_t" => bits = 32,
            "__s64" | "s64" | "int64_t" => bits = 64,
            _ => return None,
        }
    }
    seen.then_some((bits, signed))
}

fn is_type_word(w: &str) -> bool {
    int_type(&[w]).is_some()
}

/// Constant-expression evaluator over `toks[i..hi]`.
struct Expr<'t, 'a> {
    src: Source<'a>,
    toks: &'t [T<'a>],
    i: usize,
    hi: usize,
    /// Unary operators, casts and parentheses currently open.
    depth: usize,
}

type Val = Result<i64, ParseError>;

impl<'a> Expr<'_, 'a> {
    fn peek(&self) -> Option<T<'a>> {
        if self.i < self.hi {
            self.toks.get(self.i).copied()
        } else {
            None
        }
    }

    fn at(&self) -> usize {
        self.peek().map_or_else(|| self.toks.get(self.hi.saturating_sub(1)).map_or(0, |t| t.end), |t| t.at)
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(T { tok: Tok::Punct(q), .. }) if q == p)
    }

    fn syntax(&self, expected: &str) -> ParseError {
        let (line, col) = self.src.pos(self.at());
        let found = match self.peek() {
            Some(t) => format!("`{}`", self.src.text.get(t.at..t.end).unwrap_or("")),
            None => "end of field".to_string(),
        };
        ParseError::Syntax { line, col, expected: expected.to_string(), found }
    }

    fn bad(&self, at: usize, what: &'static str) -> ParseError {
        let (line, col) = self.src.pos(at);
        ParseError::BadExpression { line, col, what }
    }

    fn expect(&mut self, p: &str) -> Result<(), ParseError> {
        if self.is(p) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.syntax(&format!("`{p}`")))
        }
    }

    /// The whole slice as one expression.
    fn full(mut self) -> Val {
        if self.peek().is_none() {
            return Err(self.syntax("a value"));
        }
        let v = self.or()?;
        if self.peek().is_some() {
            return Err(self.syntax("an operator or the end of the field"));
        }
        Ok(v)
    }

    /// Precedence climbing over the binary operators (one frame per
    /// operand, not one per precedence level, so deep parentheses stay
    /// cheap on the stack).
    fn or(&mut self) -> Val {
        self.binary(0)
    }

    fn binary(&mut self, min_prec: u8) -> Val {
        let mut v = self.unary()?;
        while let Some(T { tok: Tok::Punct(p), at, .. }) = self.peek() {
            let Some(prec) = prec_of(p).filter(|&q| q >= min_prec) else { break };
            self.i += 1;
            let rhs = self.binary(prec + 1)?;
            v = match apply(p, v, rhs) {
                Some(r) => r,
                None => {
                    let what = if matches!(p, "/" | "%") && rhs == 0 { "division by zero" } else { "overflow" };
                    return Err(self.bad(at, what));
                }
            };
        }
        Ok(v)
    }

    /// Opens one nesting level at `at`, refusing past [`MAX_DEPTH`].
    fn enter(&mut self, at: usize) -> Result<(), ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.bad(at, "nesting deeper than 256 levels (limit)"));
        }
        self.depth += 1;
        Ok(())
    }

    fn unary(&mut self) -> Val {
        let Some(t) = self.peek() else { return Err(self.syntax("a value")) };
        if matches!(t.tok, Tok::Punct("-" | "+" | "~" | "!" | "(")) {
            self.enter(t.at)?;
            let v = self.unary_inner(t);
            self.depth -= 1;
            return v;
        }
        self.unary_inner(t)
    }

    fn unary_inner(&mut self, t: T<'a>) -> Val {
        match t.tok {
            Tok::Punct("-") => {
                self.i += 1;
                let v = self.unary()?;
                v.checked_neg().ok_or_else(|| self.bad(t.at, "overflow"))
            }
            Tok::Punct("+") => {
                self.i += 1;
                self.unary()
            }
            Tok::Punct("~") => {
                self.i += 1;
                Ok(!self.unary()?)
            }
            Tok::Punct("!") => {
                self.i += 1;
                Ok(i64::from(self.unary()? == 0))
            }
            Tok::Punct("(") => {
                // A cast if the parenthesis holds only integer type words.
                let mut j = self.i + 1;
                let mut words = Vec::new();
                while let Some(T { tok: Tok::Ident(w), .. }) = self.toks.get(j).filter(|_| j < self.hi) {
                    words.push(*w);
                    j += 1;
                }
                let closes = matches!(self.toks.get(j), Some(T { tok: Tok::Punct(")"), .. })) && j < self.hi;
                if closes && !words.is_empty() && words.iter().all(|w| is_type_word(w) || *w == "const") {
                    if let Some((bits, signed)) = int_type(&words) {
                        self.i = j + 1;
                        let v = self.unary()?;
                        return Ok(convert(v, bits, signed));
                    }
                }
                self.primary()
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Val {
        let Some(t) = self.peek() else { return Err(self.syntax("a value")) };
        self.i += 1;
        match t.tok {
            Tok::Int(v) => i64::try_from(v).map_err(|_| {
                let (line, col) = self.src.pos(t.at);
                let text = self.src.text.get(t.at..t.end).unwrap_or("").to_string();
                ParseError::NumberOutOfRange { line, col, text, range: "signed 64-bit" }
            }),
            Tok::Punct("(") => {
                let v = self.or()?;
                self.expect(")")?;
                Ok(v)
            }
            Tok::Ident("offsetof") => self.offsetof(),
            Tok::Ident("sizeof") => {
                self.expect("(")?;
                let mut words = Vec::new();
                while let Some(T { tok: Tok::Ident(w), .. }) = self.peek() {
                    words.push(w);
                    self.i += 1;
                }
                let Some((bits, _)) = int_type(&words) else { return Err(self.syntax("an integer type")) };
                self.expect(")")?;
                Ok(i64::from(bits / 8))
            }
            Tok::Ident(name) => symbols::lookup(name).ok_or_else(|| {
                let (line, col) = self.src.pos(t.at);
                ParseError::UnknownIdentifier { line, col, name: name.to_string() }
            }),
            Tok::Punct(_) | Tok::Str => {
                self.i -= 1;
                Err(self.syntax("a value"))
            }
        }
    }

    /// `offsetof(struct seccomp_data, field)` after the `offsetof` token.
    fn offsetof(&mut self) -> Val {
        self.expect("(")?;
        for word in ["struct", "seccomp_data"] {
            match self.peek() {
                Some(T { tok: Tok::Ident(w), .. }) if w == word => self.i += 1,
                _ => return Err(self.syntax("`struct seccomp_data`")),
            }
        }
        self.expect(",")?;
        let Some(T { tok: Tok::Ident(field), at, .. }) = self.peek() else {
            return Err(self.syntax("a field of struct seccomp_data"));
        };
        self.i += 1;
        let Some(mut off) = symbols::seccomp_data_offset(field) else {
            let (line, col) = self.src.pos(at);
            return Err(ParseError::UnknownIdentifier { line, col, name: field.to_string() });
        };
        if field == "args" && self.is("[") {
            self.i += 1;
            let idx_at = self.at();
            let idx = self.or()?;
            self.expect("]")?;
            if !(0..6).contains(&idx) {
                return Err(self.bad(idx_at, "index outside args[0..6]"));
            }
            off += 8 * idx;
        }
        self.expect(")")?;
        Ok(off)
    }
}

/// Binding strength of a binary operator (C's order; all left-associative).
fn prec_of(p: &str) -> Option<u8> {
    Some(match p {
        "|" => 0,
        "^" => 1,
        "&" => 2,
        "<<" | ">>" => 3,
        "+" | "-" => 4,
        "*" | "/" | "%" => 5,
        _ => return None,
    })
}

fn apply(p: &str, a: i64, b: i64) -> Option<i64> {
    match p {
        "|" => Some(a | b),
        "^" => Some(a ^ b),
        "&" => Some(a & b),
        "<<" | ">>" => {
            let s = u32::try_from(b).ok().filter(|&s| s < 64)?;
            if p == "<<" {
                a.checked_shl(s)
            } else {
                a.checked_shr(s)
            }
        }
        "+" => a.checked_add(b),
        "-" => a.checked_sub(b),
        "*" => a.checked_mul(b),
        "/" => a.checked_div(b),
        _ => a.checked_rem(b),
    }
}

/// A C conversion of `v` to an integer type of `bits`, `signed` or not.
fn convert(v: i64, bits: u32, signed: bool) -> i64 {
    if bits >= 64 {
        return v;
    }
    let mask = (1i64 << bits) - 1;
    let low = v & mask;
    if signed && low & (1i64 << (bits - 1)) != 0 {
        low - (1i64 << bits)
    } else {
        low
    }
}

struct Reader<'a> {
    src: Source<'a>,
    toks: Vec<T<'a>>,
    insns: Vec<Insn>,
    /// For each opening bracket, the index of the bracket of the same kind
    /// that closes it (`usize::MAX` if none): matching is O(1).
    pair: Vec<usize>,
    /// `{` groups currently open in `group`.
    depth: usize,
}

/// Pairs each `(`, `[`, `{` with its closer, each kind counted on its own.
fn pairs(toks: &[T<'_>]) -> Vec<usize> {
    let mut pair = vec![usize::MAX; toks.len()];
    let mut stacks: [Vec<usize>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for (j, t) in toks.iter().enumerate() {
        let (kind, open) = match t.tok {
            Tok::Punct("(") => (0, true),
            Tok::Punct("[") => (1, true),
            Tok::Punct("{") => (2, true),
            Tok::Punct(")") => (0, false),
            Tok::Punct("]") => (1, false),
            Tok::Punct("}") => (2, false),
            _ => continue,
        };
        let Some(stack) = stacks.get_mut(kind) else { continue };
        if open {
            stack.push(j);
        } else if let Some(o) = stack.pop() {
            if let Some(slot) = pair.get_mut(o) {
                *slot = j;
            }
        }
    }
    pair
}

/// Reads C text. See the module docs for what is understood.
pub(crate) fn parse(src: Source<'_>) -> Result<Vec<Insn>, ParseError> {
    let toks = lex(src)?;
    let pair = pairs(&toks);
    let mut r = Reader { src, toks, insns: Vec::new(), pair, depth: 0 };
    r.scan(0, r.toks.len())?;
    if r.insns.is_empty() {
        let (line, col) = src.pos(src.text.len());
        return Err(ParseError::Empty { line, col });
    }
    Ok(r.insns)
}

fn is_insn_macro(t: Option<&T<'_>>) -> bool {
    matches!(t, Some(T { tok: Tok::Ident("BPF_STMT" | "BPF_JUMP"), .. }))
}

impl<'a> Reader<'a> {
    fn tok(&self, i: usize) -> Option<Tok<'a>> {
        self.toks.get(i).map(|t| t.tok)
    }

    fn at(&self, i: usize) -> usize {
        self.toks.get(i).map_or(self.src.text.len(), |t| t.at)
    }

    fn syntax(&self, i: usize, expected: &str) -> ParseError {
        let (line, col) = self.src.pos(self.at(i));
        let found = match self.toks.get(i) {
            Some(t) => format!("`{}`", self.src.text.get(t.at..t.end).unwrap_or("")),
            None => "end of input".to_string(),
        };
        ParseError::Syntax { line, col, expected: expected.to_string(), found }
    }

    /// Index of the token closing the bracket opened at `open`.
    fn matching(&self, open: usize, hi: usize) -> Result<usize, ParseError> {
        let (o, c) = match self.tok(open) {
            Some(Tok::Punct("(")) => ("(", ")"),
            Some(Tok::Punct("[")) => ("[", "]"),
            _ => ("{", "}"),
        };
        if let Some(&j) = self.pair.get(open).filter(|&&j| j < hi) {
            return Ok(j);
        }
        Err(self.syntax(
            hi,
            &format!("`{c}` closing the `{o}` at {}:{}", self.src.pos(self.at(open)).0, self.src.pos(self.at(open)).1),
        ))
    }

    /// Splits `lo..hi` at commas outside brackets; drops a trailing empty item.
    fn items(&self, lo: usize, hi: usize) -> Result<Vec<(usize, usize)>, ParseError> {
        let mut out = Vec::new();
        let mut start = lo;
        let mut j = lo;
        while j < hi {
            match self.tok(j) {
                Some(Tok::Punct("(" | "[" | "{")) => j = self.matching(j, hi)? + 1,
                Some(Tok::Punct(",")) => {
                    out.push((start, j));
                    j += 1;
                    start = j;
                }
                _ => j += 1,
            }
        }
        if start < hi {
            out.push((start, hi));
        }
        Ok(out)
    }

    /// Top level, or the inside of a group that is neither an instruction
    /// list nor flat: pick out instruction-shaped things, skip the rest.
    fn scan(&mut self, lo: usize, hi: usize) -> Result<(), ParseError> {
        let mut i = lo;
        while i < hi {
            match self.tok(i) {
                Some(Tok::Punct("{")) => {
                    let close = self.matching(i, hi)?;
                    self.group(i, close)?;
                    i = close + 1;
                }
                _ if is_insn_macro(self.toks.get(i)) => i = self.insn_macro(i, hi)?,
                _ => i += 1,
            }
        }
        Ok(())
    }

    /// The `{ ... }` group from `open` to `close`.
    fn group(&mut self, open: usize, close: usize) -> Result<(), ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.syntax(open, "`{` groups nested at most 256 deep (limit)"));
        }
        self.depth += 1;
        let r = self.group_inner(open, close);
        self.depth -= 1;
        r
    }

    fn group_inner(&mut self, open: usize, close: usize) -> Result<(), ParseError> {
        let (lo, hi) = (open + 1, close);
        if lo == hi {
            return Ok(());
        }
        if self.tok(lo) == Some(Tok::Punct("{")) || is_insn_macro(self.toks.get(lo)) {
            return self.list(lo, hi);
        }
        if (lo..hi).any(|j| self.tok(j) == Some(Tok::Punct("{"))) {
            return self.scan(lo, hi);
        }
        // Flat: statements and strings mean this is not data.
        if (lo..hi).any(|j| matches!(self.tok(j), Some(Tok::Punct(";")) | Some(Tok::Str))) {
            return Ok(());
        }
        let items = self.items(lo, hi)?;
        if self.tok(lo) == Some(Tok::Punct(".")) {
            if let Some(insn) = self.designated(&items)? {
                self.insns.push(insn);
            }
            return Ok(());
        }
        match items.len() {
            4 => {
                let insn = self.tuple(&items)?;
                self.insns.push(insn);
                Ok(())
            }
            n if n % INSN_SIZE == 0 => self.byte_array(&items),
            n => Err(self.syntax(
                open,
                &format!("`{{ code, jt, jf, k }}` or a byte array of a multiple of 8 bytes (found {n} values)"),
            )),
        }
    }

    /// A list whose items are all instructions.
    fn list(&mut self, lo: usize, hi: usize) -> Result<(), ParseError> {
        for (a, b) in self.items(lo, hi)? {
            if self.tok(a) == Some(Tok::Punct("{")) {
                let close = self.matching(a, b)?;
                if close + 1 != b {
                    return Err(self.syntax(close + 1, "`,` or `}`"));
                }
                let items = self.items(a + 1, close)?;
                let insn = if self.tok(a + 1) == Some(Tok::Punct(".")) {
                    self.designated(&items)?.ok_or_else(|| self.syntax(a + 1, "`.code`, `.jt`, `.jf` or `.k`"))?
                } else if items.len() == 4 {
                    self.tuple(&items)?
                } else {
                    return Err(self.syntax(a, &format!("`{{ code, jt, jf, k }}` (found {} values)", items.len())));
                };
                self.insns.push(insn);
            } else if is_insn_macro(self.toks.get(a)) {
                let end = self.insn_macro(a, b)?;
                if end != b {
                    return Err(self.syntax(end, "`,` or `}`"));
                }
            } else if let Some(Tok::Ident(name)) = self.tok(a) {
                let (line, col) = self.src.pos(self.at(a));
                return Err(ParseError::UnknownIdentifier { line, col, name: name.to_string() });
            } else {
                return Err(self.syntax(a, "`{ code, jt, jf, k }`, BPF_STMT(..) or BPF_JUMP(..)"));
            }
        }
        Ok(())
    }

    fn eval(&self, lo: usize, hi: usize) -> Val {
        Expr { src: self.src, toks: &self.toks, i: lo, hi, depth: 0 }.full()
    }

    /// Evaluates a field and checks it fits `min..=max`.
    fn field(&self, (lo, hi): (usize, usize), min: i64, max: i64, range: &'static str) -> Val {
        let v = self.eval(lo, hi)?;
        if v < min || v > max {
            let (line, col) = self.src.pos(self.at(lo));
            let end = self.toks.get(hi.saturating_sub(1)).map_or(0, |t| t.end);
            let text = self.src.text.get(self.at(lo)..end).unwrap_or("").to_string();
            return Err(ParseError::NumberOutOfRange { line, col, text, range });
        }
        Ok(v)
    }

    fn insn_of(
        &self,
        code: (usize, usize),
        jt: (usize, usize),
        jf: (usize, usize),
        k: (usize, usize),
    ) -> Result<Insn, ParseError> {
        let code = self.field(code, 0, 0xffff, "code: 0 to 0xffff")?;
        let jt = self.field(jt, 0, 0xff, "jt: 0 to 255")?;
        let jf = self.field(jf, 0, 0xff, "jf: 0 to 255")?;
        let k = self.field(k, -(1 << 31), 0xffff_ffff, "k: 32-bit")?;
        // Ranges checked above; the `as` casts keep the low bits (k wraps as C does).
        Ok(Insn::jump(code as u16, k as u32, jt as u8, jf as u8))
    }

    fn tuple(&self, items: &[(usize, usize)]) -> Result<Insn, ParseError> {
        match *items {
            [code, jt, jf, k] => self.insn_of(code, jt, jf, k),
            _ => Err(self.syntax(items.first().map_or(0, |i| i.0), "4 fields")),
        }
    }

    /// `{ .code = .., .jt = .., .jf = .., .k = .. }`; `None` when the
    /// designators name another struct's fields.
    fn designated(&self, items: &[(usize, usize)]) -> Result<Option<Insn>, ParseError> {
        let mut fields: [Option<(usize, usize)>; 4] = [None; 4];
        for &(a, b) in items {
            let (Some(Tok::Punct(".")), Some(Tok::Ident(name)), Some(Tok::Punct("="))) =
                (self.tok(a), self.tok(a + 1), self.tok(a + 2))
            else {
                return Ok(None);
            };
            let slot = match name {
                "code" => 0,
                "jt" => 1,
                "jf" => 2,
                "k" => 3,
                _ => return Ok(None),
            };
            if let Some(f) = fields.get_mut(slot) {
                *f = Some((a + 3, b));
            }
        }
        let mut v = [0i64; 4];
        let limits = [
            (0, 0xffff, "code: 0 to 0xffff"),
            (0, 0xff, "jt: 0 to 255"),
            (0, 0xff, "jf: 0 to 255"),
            (-(1 << 31), 0xffff_ffff, "k: 32-bit"),
        ];
        for ((slot, f), (min, max, range)) in v.iter_mut().zip(fields).zip(limits) {
            if let Some(span) = f {
                *slot = self.field(span, min, max, range)?;
            }
        }
        let [code, jt, jf, k] = v;
        Ok(Some(Insn::jump(code as u16, k as u32, jt as u8, jf as u8)))
    }

    /// `BPF_STMT(code, k)` or `BPF_JUMP(code, k, jt, jf)` at `i`; returns the
    /// index after the closing parenthesis.
    fn insn_macro(&mut self, i: usize, hi: usize) -> Result<usize, ParseError> {
        let is_jump = self.tok(i) == Some(Tok::Ident("BPF_JUMP"));
        if self.tok(i + 1) != Some(Tok::Punct("(")) {
            return Err(self.syntax(i + 1, "`(`"));
        }
        let close = self.matching(i + 1, hi)?;
        let args = self.items(i + 2, close)?;
        let insn = match (is_jump, args.as_slice()) {
            (false, &[code, k]) => {
                let code = self.field(code, 0, 0xffff, "code: 0 to 0xffff")?;
                let k = self.field(k, -(1 << 31), 0xffff_ffff, "k: 32-bit")?;
                // Ranges checked above; `k` wraps to 32 bits as C does.
                Insn::stmt(code as u16, k as u32)
            }
            (true, &[code, k, jt, jf]) => self.insn_of(code, jt, jf, k)?,
            _ => {
                let want = if is_jump { "BPF_JUMP(code, k, jt, jf)" } else { "BPF_STMT(code, k)" };
                return Err(self.syntax(i, &format!("{want} (found {} arguments)", args.len())));
            }
        };
        self.insns.push(insn);
        Ok(close + 1)
    }

    /// A flat byte array holding raw little-endian records.
    fn byte_array(&mut self, items: &[(usize, usize)]) -> Result<(), ParseError> {
        let mut bytes = Vec::with_capacity(items.len());
        for &span in items {
            // Signed `char` arrays hold -128..-1 for bytes 0x80..0xff.
            let v = self.field(span, -128, 255, "byte: -128 to 255")?;
            bytes.push(v as u8);
        }
        // The caller saw a non-empty whole number of records.
        self.insns.extend(record::records(&bytes).into_iter().flatten().map(Insn::from_bytes));
        Ok(())
    }
}

/// Prints `insns` as `tcpdump -dd` does: one `{ 0x20, 0, 0, 0x00000004 },`
/// line per instruction.
///
/// Mirrors `bpf_dump()` with option 2 in libpcap's bpf_dump.c
/// (`"{ 0x%x, %d, %d, 0x%08x },\n"`).
pub fn print_c(insns: &[Insn]) -> String {
    let mut out = String::new();
    for i in insns {
        out.push_str(&format!("{{ {:#x}, {}, {}, 0x{:08x} }},\n", i.code, i.jt, i.jf, i.k));
    }
    out
}
