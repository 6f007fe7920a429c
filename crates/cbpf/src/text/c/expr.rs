//! The C reader's constant expressions: integer arithmetic in `i64` with
//! C's operators and precedence, casts and `sizeof` of integer types,
//! `offsetof(struct seccomp_data, ..)` and the UAPI names of
//! [`crate::text::symbols`].

use super::lex::{int_type, Tok, T};
use super::MAX_DEPTH;
use crate::text::{symbols, ParseError, Source};

/// Constant-expression evaluator over `toks[i..hi]`.
pub(super) struct Expr<'t, 'a> {
    pub(super) src: Source<'a>,
    pub(super) toks: &'t [T<'a>],
    pub(super) i: usize,
    pub(super) hi: usize,
    /// Unary operators, casts and parentheses currently open.
    pub(super) depth: usize,
}

pub(super) type Val = Result<i64, ParseError>;

impl<'a> Expr<'_, 'a> {
    pub(super) fn peek(&self) -> Option<T<'a>> {
        if self.i < self.hi {
            self.toks.get(self.i).copied()
        } else {
            None
        }
    }

    pub(super) fn at(&self) -> usize {
        self.peek().map_or_else(|| self.toks.get(self.hi.saturating_sub(1)).map_or(0, |t| t.end), |t| t.at)
    }

    pub(super) fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(T { tok: Tok::Punct(q), .. }) if q == p)
    }

    pub(super) fn syntax(&self, expected: &str) -> ParseError {
        let (line, col) = self.src.pos(self.at());
        let found = match self.peek() {
            Some(t) => format!("`{}`", self.src.text.get(t.at..t.end).unwrap_or("")),
            None => "end of field".to_string(),
        };
        ParseError::Syntax { line, col, expected: expected.to_string(), found }
    }

    pub(super) fn bad(&self, at: usize, what: &'static str) -> ParseError {
        let (line, col) = self.src.pos(at);
        ParseError::BadExpression { line, col, what }
    }

    pub(super) fn expect(&mut self, p: &str) -> Result<(), ParseError> {
        if self.is(p) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.syntax(&format!("`{p}`")))
        }
    }

    /// The whole slice as one expression.
    pub(super) fn full(mut self) -> Val {
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
    pub(super) fn or(&mut self) -> Val {
        self.binary(0)
    }

    pub(super) fn binary(&mut self, min_prec: u8) -> Val {
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
    pub(super) fn enter(&mut self, at: usize) -> Result<(), ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.bad(at, "nesting deeper than 256 levels (limit)"));
        }
        self.depth += 1;
        Ok(())
    }

    pub(super) fn unary(&mut self) -> Val {
        let Some(t) = self.peek() else { return Err(self.syntax("a value")) };
        if matches!(t.tok, Tok::Punct("-" | "+" | "~" | "!" | "(")) {
            self.enter(t.at)?;
            let v = self.unary_inner(t);
            self.depth -= 1;
            return v;
        }
        self.unary_inner(t)
    }

    pub(super) fn unary_inner(&mut self, t: T<'a>) -> Val {
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
                // A cast if the parenthesis holds only integer type words
                // (`int_type` answers for one or more of them, `const`
                // included). A field's brackets are balanced (`Reader::items`
                // matched them), so a `)` right after the words is this
                // parenthesis's own, inside the field.
                let mut j = self.i + 1;
                let mut words = Vec::new();
                while let Some(T { tok: Tok::Ident(w), .. }) = self.toks.get(j) {
                    words.push(*w);
                    j += 1;
                }
                let closes = matches!(self.toks.get(j), Some(T { tok: Tok::Punct(")"), .. }));
                match int_type(&words) {
                    Some((bits, signed)) if closes => {
                        self.i = j + 1;
                        let v = self.unary()?;
                        Ok(convert(v, bits, signed))
                    }
                    _ => self.primary(),
                }
            }
            _ => self.primary(),
        }
    }

    pub(super) fn primary(&mut self) -> Val {
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
    pub(super) fn offsetof(&mut self) -> Val {
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
pub(super) fn prec_of(p: &str) -> Option<u8> {
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

pub(super) fn apply(p: &str, a: i64, b: i64) -> Option<i64> {
    match p {
        "|" => Some(a | b),
        "^" => Some(a ^ b),
        "&" => Some(a & b),
        "<<" | ">>" => {
            // A count outside 0..64 is C's undefined behaviour: refused
            // (`checked_shl`/`checked_shr` refuse 64 and more).
            let s = u32::try_from(b).ok()?;
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
pub(super) fn convert(v: i64, bits: u32, signed: bool) -> i64 {
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
