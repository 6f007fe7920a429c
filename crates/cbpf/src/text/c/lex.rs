//! The C reader's lexer: tokens with their byte span, object-like
//! `#define`s expanded (within [`super::MAX_DEPTH`] and
//! [`super::MACRO_WORK_LIMIT`]), integer literals and the integer type
//! names casts and `sizeof` accept.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::{MACRO_WORK_LIMIT, MAX_DEPTH};
use crate::text::{ParseError, Source};

/// Upper bound on tokens produced by macro expansion, so that nested
/// macros cannot blow up memory.
pub(super) const EXPANSION_LIMIT: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    Ident(&'a str),
    Int(u64),
    Punct(&'static str),
    /// A string or character literal; its contents never matter here.
    Str,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct T<'a> {
    pub(super) tok: Tok<'a>,
    pub(super) at: usize,
    pub(super) end: usize,
}

pub(super) const PUNCTS: [&str; 24] = [
    "<<", ">>", "{", "}", "(", ")", "[", "]", ",", ";", "=", ".", "|", "&", "^", "~", "!", "+", "-", "*", "/", "%",
    "<", ">",
];
pub(super) const MORE_PUNCTS: [&str; 2] = ["?", ":"];

pub(super) struct Lexer<'a> {
    pub(super) src: Source<'a>,
    pub(super) macros: HashMap<&'a str, Rc<[T<'a>]>>,
    pub(super) out: Vec<T<'a>>,
    /// Macro-body tokens visited so far (see [`MACRO_WORK_LIMIT`]).
    pub(super) work: usize,
}

pub(super) fn err_at(src: Source<'_>, at: usize) -> (usize, usize) {
    src.pos(at)
}

impl<'a> Lexer<'a> {
    /// Lexes `text[lo..hi]`; `main` is false inside a `#define` body.
    pub(super) fn lex_range(&mut self, lo: usize, hi: usize, main: bool) -> Result<Vec<T<'a>>, ParseError> {
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
                    // The range is a chunk (or a directive's rest of one),
                    // which `logical_line_end` split with the same rule: a
                    // literal opened in it closes in it or not at all.
                    i = literal_end(bytes, i).map_err(|_| unexpected(start))?;
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

    /// Handles a preprocessor line starting at `at`, the first token of its
    /// chunk (`logical_line_end`: lines spliced by backslashes and block
    /// comments read as one, as C does before it reads directives), so the
    /// directive runs to the chunk's end `hi`, which it returns. Records
    /// object-like `#define`s, honours `#undef`, skips the rest.
    pub(super) fn directive(&mut self, at: usize, hi: usize) -> Result<usize, ParseError> {
        let bytes = self.src.text.as_bytes();
        let end = hi;
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
    pub(super) fn emit(&mut self, toks: &[T<'a>]) -> Result<(), ParseError> {
        for t in toks {
            self.emit_one(*t)?;
        }
        Ok(())
    }

    pub(super) fn emit_one(&mut self, use_site: T<'a>) -> Result<(), ParseError> {
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
pub(super) fn lex(src: Source<'_>) -> Result<Vec<T<'_>>, ParseError> {
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
/// the next newline that is outside a comment or literal and not escaped by
/// `\`.
pub(super) fn logical_line_end(bytes: &[u8], lo: usize) -> usize {
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
            // A line comment runs to its newline, which ends the chunk.
            return bytes.iter().skip(i).position(|&c| c == b'\n').map_or(bytes.len(), |n| i + n + 1);
        } else if b == b'"' || b == b'\'' {
            // A `/*` or `//` inside a literal opens no comment.
            i = literal_end(bytes, i).unwrap_or_else(|open_to| open_to);
            continue;
        } else if b == b'\n' && !is_spliced(bytes, lo, i) {
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

/// Where the string or character literal opening at `at` ends, stepping over
/// escapes: `Ok` just past its closing quote, or `Err` at the newline (or
/// the text's end) that leaves it open. The lexer and `logical_line_end`
/// both read literals with it.
fn literal_end(bytes: &[u8], at: usize) -> Result<usize, usize> {
    let quote = bytes.get(at).copied();
    let mut j = at + 1;
    while let Some(&c) = bytes.get(j) {
        if Some(c) == quote {
            return Ok(j + 1);
        }
        if c == b'\n' {
            return Err(j);
        }
        j += if c == b'\\' { 2 } else { 1 };
    }
    Err(bytes.len())
}

/// Is the newline at `nl` spliced to the next line by a backslash right
/// before it, or before its carriage return (a CRLF file; `lex_range` skips
/// both forms), the backslash at or after `lo`?
fn is_spliced(bytes: &[u8], lo: usize, nl: usize) -> bool {
    bytes.get(lo..nl).is_some_and(|before| before.ends_with(b"\\") || before.ends_with(b"\\\r"))
}

/// Reads a C integer literal at `at`.
pub(super) fn lex_int(src: Source<'_>, at: usize, hi: usize) -> Result<(u64, usize), ParseError> {
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

/// Integer types a cast or `sizeof` may name: (bits, signed); `None` for no
/// words or any word that is not part of an integer type.
pub(super) fn int_type(words: &[&str]) -> Option<(u32, bool)> {
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
