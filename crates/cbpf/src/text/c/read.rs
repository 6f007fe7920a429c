//! The C reader proper: finds instruction groups (`{ code, jt, jf, k }`,
//! designated initialisers, `BPF_STMT`/`BPF_JUMP`, flat byte arrays) in
//! the tokens and evaluates their fields with [`super::expr`].

use super::expr::{Expr, Val};
use super::lex::{Tok, T};
use super::MAX_DEPTH;
use crate::insn::{Insn, INSN_SIZE};
use crate::text::{ParseError, Source};

pub(super) struct Reader<'a> {
    pub(super) src: Source<'a>,
    pub(super) toks: Vec<T<'a>>,
    pub(super) insns: Vec<Insn>,
    /// For each opening bracket, the index of the bracket of the same kind
    /// that closes it (`usize::MAX` if none): matching is O(1).
    pub(super) pair: Vec<usize>,
    /// `{` groups currently open in `group`.
    pub(super) depth: usize,
}

/// Pairs each `(`, `[`, `{` with its closer, each kind counted on its own.
pub(super) fn pairs(toks: &[T<'_>]) -> Vec<usize> {
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

pub(super) fn is_insn_macro(t: Option<&T<'_>>) -> bool {
    matches!(t, Some(T { tok: Tok::Ident("BPF_STMT" | "BPF_JUMP"), .. }))
}

impl<'a> Reader<'a> {
    pub(super) fn tok(&self, i: usize) -> Option<Tok<'a>> {
        self.toks.get(i).map(|t| t.tok)
    }

    pub(super) fn at(&self, i: usize) -> usize {
        self.toks.get(i).map_or(self.src.text.len(), |t| t.at)
    }

    pub(super) fn syntax(&self, i: usize, expected: &str) -> ParseError {
        let (line, col) = self.src.pos(self.at(i));
        let found = match self.toks.get(i) {
            Some(t) => format!("`{}`", self.src.text.get(t.at..t.end).unwrap_or("")),
            None => "end of input".to_string(),
        };
        ParseError::Syntax { line, col, expected: expected.to_string(), found }
    }

    /// Index of the token closing the bracket opened at `open`.
    pub(super) fn matching(&self, open: usize, hi: usize) -> Result<usize, ParseError> {
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
    pub(super) fn items(&self, lo: usize, hi: usize) -> Result<Vec<(usize, usize)>, ParseError> {
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
    pub(super) fn scan(&mut self, lo: usize, hi: usize) -> Result<(), ParseError> {
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
    pub(super) fn group(&mut self, open: usize, close: usize) -> Result<(), ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.syntax(open, "`{` groups nested at most 256 deep (limit)"));
        }
        self.depth += 1;
        let r = self.group_inner(open, close);
        self.depth -= 1;
        r
    }

    pub(super) fn group_inner(&mut self, open: usize, close: usize) -> Result<(), ParseError> {
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
    pub(super) fn list(&mut self, lo: usize, hi: usize) -> Result<(), ParseError> {
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

    pub(super) fn eval(&self, lo: usize, hi: usize) -> Val {
        Expr { src: self.src, toks: &self.toks, i: lo, hi, depth: 0 }.full()
    }

    /// Evaluates a field and checks it fits `min..=max`.
    pub(super) fn field(&self, (lo, hi): (usize, usize), min: i64, max: i64, range: &'static str) -> Val {
        let v = self.eval(lo, hi)?;
        if v < min || v > max {
            let (line, col) = self.src.pos(self.at(lo));
            let end = self.toks.get(hi.saturating_sub(1)).map_or(0, |t| t.end);
            let text = self.src.text.get(self.at(lo)..end).unwrap_or("").to_string();
            return Err(ParseError::NumberOutOfRange { line, col, text, range });
        }
        Ok(v)
    }

    pub(super) fn insn_of(
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

    pub(super) fn tuple(&self, items: &[(usize, usize)]) -> Result<Insn, ParseError> {
        match *items {
            [code, jt, jf, k] => self.insn_of(code, jt, jf, k),
            _ => Err(self.syntax(items.first().map_or(0, |i| i.0), "4 fields")),
        }
    }

    /// `{ .code = .., .jt = .., .jf = .., .k = .. }`; `None` when the
    /// designators name another struct's fields.
    pub(super) fn designated(&self, items: &[(usize, usize)]) -> Result<Option<Insn>, ParseError> {
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
    pub(super) fn insn_macro(&mut self, i: usize, hi: usize) -> Result<usize, ParseError> {
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
    pub(super) fn byte_array(&mut self, items: &[(usize, usize)]) -> Result<(), ParseError> {
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
