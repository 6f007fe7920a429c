//! Text formats for classic BPF, in and out.
//!
//! People carry cBPF programs around in four textual shapes besides raw
//! `struct sock_filter` bytes; this module reads and writes all of them so
//! the rest of the workspace only ever sees `Vec<Insn>`:
//!
//! | [`Format`] | reads | writes |
//! |---|---|---|
//! | [`Format::Raw`] | little-endian `sock_filter` records ([`crate::raw`]) | (use [`crate::raw::encode`]) |
//! | [`Format::Asm`] | `bpf_asm` assembly (tools/bpf/bpf_exp.{l,y}) | [`print_asm`] |
//! | [`Format::C`] | `tcpdump -dd`, `bpf_asm -c`, seccomp-tools `--format carray`, `BPF_STMT`/`BPF_JUMP` source | [`print_c`] (as `tcpdump -dd`) |
//! | [`Format::Ddd`] | `tcpdump -ddd`, `bpf_asm` default output (`4,40 0 0 12,...`) | [`print_ddd`], [`print_ddd_line`] |
//! | (output only) | | [`print_pcap`] (`tcpdump -d`, libpcap's `bpf_image()`) |
//!
//! The guarantee that matters: for every program `p` (valid or not) and every
//! printer whose output is an input syntax, `parse(print(p)) == p`, byte for
//! byte. `bpf_asm` syntax cannot carry fields the kernel ignores (the `k` of
//! `tax`, the `jt`/`jf` of a non-jump, ...), nor the seccomp-internal opcode
//! 0x21, nor jumps that leave the program; for those instructions, and only
//! for them, [`print_asm`] writes the escape hatch
//!
//! ```text
//! .raw CODE, JT, JF, K
//! ```
//!
//! which places one `struct sock_filter` verbatim (jump offsets stay
//! relative, exactly as stored). `bpf_asm` itself rejects `.raw`; it is our
//! extension and is only printed when nothing `bpf_asm` knows can express
//! the instruction.
//!
//! Every [`ParseError`] carries a 1-based line and column (counted in
//! characters; raw input reports line 1 and the byte offset + 1).
//!
//! ```
//! use cbpf::text::{parse, print_asm, Format};
//! let p = parse(b"ld [4]\njeq #0xc000003e, ok\nret #0\nok: ret #0x7fff0000\n", Format::Asm).unwrap();
//! assert_eq!(p.len(), 4);
//! assert_eq!(parse(print_asm(&p).as_bytes(), Format::Asm).unwrap(), p);
//! ```

mod asm;
mod c;
mod ddd;
mod pcap;
mod symbols;

pub use asm::print_asm;
pub use c::print_c;
pub use ddd::{print_ddd, print_ddd_line};
pub use pcap::print_pcap;

use crate::insn::Insn;
use crate::raw::{self, DecodeError};

/// The syntaxes [`parse`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Raw little-endian `struct sock_filter` records, 8 bytes each.
    Raw,
    /// C initialisers: `{ 0x20, 0, 0, 0x00000004 },` lines, `BPF_STMT`/`BPF_JUMP`
    /// macros with symbolic operands, or a flat byte array.
    C,
    /// Decimal `code jt jf k` records after a count (`tcpdump -ddd`, `bpf_asm`).
    Ddd,
    /// `bpf_asm` assembly.
    Asm,
}

impl Format {
    /// Lower-case name, as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Raw => "raw",
            Format::C => "c",
            Format::Ddd => "ddd",
            Format::Asm => "asm",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a text (or raw) program could not be read. Every variant says where:
/// `line` and `col` are 1-based, `col` counts characters (a tab is one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A character no token of the syntax starts with.
    #[error("{line}:{col}: unexpected character {ch:?}")]
    UnexpectedChar { line: usize, col: usize, ch: char },
    /// A one-letter word that is not a register (bpf_asm's lexer, `bpf_exp.l`:
    /// `a`, `x` and `M` are tokens of their own, a label is two or more
    /// characters, and any other letter alone is an unknown character).
    #[error(
        "{line}:{col}: `{letter}` is neither a register (a, x, M) nor a label (labels have two or more characters)"
    )]
    OneLetterWord { line: usize, col: usize, letter: char },
    /// A token that does not fit the grammar here.
    #[error("{line}:{col}: expected {expected}, found {found}")]
    Syntax { line: usize, col: usize, expected: String, found: String },
    /// `/*` without a closing `*/`.
    #[error("{line}:{col}: unterminated /* comment")]
    UnterminatedComment { line: usize, col: usize },
    /// A number that does not fit where it is used.
    #[error("{line}:{col}: number {text} out of range ({range})")]
    NumberOutOfRange { line: usize, col: usize, text: String, range: &'static str },
    /// Digits run straight into letters or other digits (`12ab`, `08`).
    #[error("{line}:{col}: malformed number {text:?}")]
    MalformedNumber { line: usize, col: usize, text: String },
    /// The same label on two instructions.
    #[error("{line}:{col}: label `{label}` defined twice (first at {first_line}:{first_col})")]
    DuplicateLabel { line: usize, col: usize, label: String, first_line: usize, first_col: usize },
    /// A jump names a label no instruction carries.
    #[error("{line}:{col}: label `{label}` is never defined")]
    UndefinedLabel { line: usize, col: usize, label: String },
    /// A jump to a label at or before the jump: cBPF jumps only go forward.
    #[error("{line}:{col}: insn {pc} cannot jump to `{label}` at insn {target}: jumps only go forward")]
    BackwardJump { line: usize, col: usize, label: String, pc: usize, target: usize },
    /// A conditional jump whose target is more than 255 instructions ahead.
    #[error("{line}:{col}: insn {pc} cannot reach `{label}` at insn {target}: jt/jf offsets stop at 255")]
    JumpTooFar { line: usize, col: usize, label: String, pc: usize, target: usize },
    /// `ldxb N*([k]&M)` with `N != 4` or `M != 0xf` (bpf_asm: "ldxb offset not supported").
    #[error("{line}:{col}: only 4*([k]&0xf) is an instruction (ldxb offset not supported)")]
    BadMsh { line: usize, col: usize },
    /// An identifier the C reader does not know.
    #[error("{line}:{col}: unknown identifier `{name}`")]
    UnknownIdentifier { line: usize, col: usize, name: String },
    /// Constant-expression arithmetic failed (division by zero, overflow).
    #[error("{line}:{col}: {what} in constant expression")]
    BadExpression { line: usize, col: usize, what: &'static str },
    /// A decimal listing whose count disagrees with its records.
    #[error("{line}:{col}: count says {count} instructions but {found} follow")]
    CountMismatch { line: usize, col: usize, count: usize, found: usize },
    /// The input holds no instruction.
    #[error("{line}:{col}: no instructions")]
    Empty { line: usize, col: usize },
    /// Text input that is not UTF-8.
    #[error("{line}:{col}: invalid UTF-8")]
    InvalidUtf8 { line: usize, col: usize },
    /// Raw input whose framing is wrong; `col` is the byte offset + 1 of the
    /// first byte that is not part of a whole instruction.
    #[error("{line}:{col}: {source}")]
    Raw { line: usize, col: usize, source: DecodeError },
}

impl ParseError {
    /// 1-based line of the error.
    pub fn line(&self) -> usize {
        self.pos().0
    }

    /// 1-based column (in characters) of the error.
    pub fn col(&self) -> usize {
        self.pos().1
    }

    fn pos(&self) -> (usize, usize) {
        match *self {
            ParseError::UnexpectedChar { line, col, .. }
            | ParseError::OneLetterWord { line, col, .. }
            | ParseError::Syntax { line, col, .. }
            | ParseError::UnterminatedComment { line, col }
            | ParseError::NumberOutOfRange { line, col, .. }
            | ParseError::MalformedNumber { line, col, .. }
            | ParseError::DuplicateLabel { line, col, .. }
            | ParseError::UndefinedLabel { line, col, .. }
            | ParseError::BackwardJump { line, col, .. }
            | ParseError::JumpTooFar { line, col, .. }
            | ParseError::BadMsh { line, col }
            | ParseError::UnknownIdentifier { line, col, .. }
            | ParseError::BadExpression { line, col, .. }
            | ParseError::CountMismatch { line, col, .. }
            | ParseError::Empty { line, col }
            | ParseError::InvalidUtf8 { line, col }
            | ParseError::Raw { line, col, .. } => (line, col),
        }
    }
}

/// Maps byte offsets of one source text to 1-based (line, column) pairs.
///
/// Errors are rare, so positions are computed on demand by scanning from the
/// start rather than tracked for every token.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    pub(crate) text: &'a str,
}

impl<'a> Source<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Source { text }
    }

    /// Line and column of byte offset `at` (clamped to the text).
    pub(crate) fn pos(&self, at: usize) -> (usize, usize) {
        let mut line = 1;
        let mut col = 1;
        for (i, ch) in self.text.char_indices() {
            if i >= at {
                break;
            }
            if ch == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
        }
        (line, col)
    }
}

/// Guesses the format of `input`.
///
/// The rule, in order:
/// 1. Empty input, any NUL byte, or bytes that are not UTF-8 → [`Format::Raw`].
///    Text never contains NUL, and every opcode the kernel accepts is below
///    0x100, so byte 1 of every real `sock_filter` record is NUL.
/// 2. A control character other than tab, newline, vertical tab, form feed
///    or carriage return, when the length is a multiple of 8 → [`Format::Raw`]
///    (small `jt`/`jf` values are such bytes; text editors do not write them).
/// 3. Otherwise the input is text, classified by its first significant token
///    after skipping whitespace, `/* */` and `//` comments, `#` lines and
///    `;` comments:
///    - `{` → [`Format::C`] (`tcpdump -dd` lines);
///    - a digit → [`Format::Ddd`] (assembly and C never start with one);
///    - a `bpf_asm` mnemonic, `.raw`, or a word followed by `:` (a label) → [`Format::Asm`];
///    - any other word (`struct`, `static`, `BPF_STMT`, ...) → [`Format::C`];
///    - anything else → [`Format::Asm`], whose parser then reports the error.
///
/// So a raw file made only of printable bytes (which can hold no valid
/// opcode) is read as text and rejected with a line:column error rather than
/// decoded into nonsense instructions.
pub fn detect(input: &[u8]) -> Format {
    if input.is_empty() || input.contains(&0) {
        return Format::Raw;
    }
    let Ok(text) = std::str::from_utf8(input) else { return Format::Raw };
    let binary_control =
        text.bytes().any(|b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r')) || b == 0x7f);
    if binary_control && input.len() % 8 == 0 {
        return Format::Raw;
    }
    classify_text(text)
}

/// Step 3 of [`detect`]: the first significant token decides.
fn classify_text(text: &str) -> Format {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut line_start = true;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\n' => {
                line_start = true;
                i += 1;
            }
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => i += 1,
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                match text.get(i + 2..).and_then(|rest| rest.find("*/")) {
                    Some(end) => i += 2 + end + 2,
                    None => return Format::Asm,
                }
                line_start = false;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = skip_line(bytes, i),
            b';' => i = skip_line(bytes, i),
            b'#' if line_start => i = skip_line(bytes, i),
            b'{' => return Format::C,
            b'0'..=b'9' => return Format::Ddd,
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let end = bytes
                    .iter()
                    .skip(i)
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                    .map_or(bytes.len(), |n| i + n);
                let word = text.get(i..end).unwrap_or("");
                let next = bytes.iter().skip(end).find(|c| !matches!(c, b' ' | b'\t'));
                return if asm::is_mnemonic(word) || next == Some(&b':') { Format::Asm } else { Format::C };
            }
            // `.raw`, and anything else: the assembler says what is wrong.
            _ => return Format::Asm,
        }
    }
    Format::Asm
}

fn skip_line(bytes: &[u8], from: usize) -> usize {
    bytes.iter().skip(from).position(|&c| c == b'\n').map_or(bytes.len(), |n| from + n)
}

/// Reads a program in `format`.
///
/// Text formats must be UTF-8. An input with no instruction is an error in
/// every format (the kernel rejects empty programs too, and `bpf_asm`'s
/// grammar needs at least one line).
pub fn parse(input: &[u8], format: Format) -> Result<Vec<Insn>, ParseError> {
    match format {
        Format::Raw => parse_raw(input),
        Format::Asm => asm::parse(decode_text(input)?),
        Format::C => c::parse(decode_text(input)?),
        Format::Ddd => ddd::parse(decode_text(input)?),
    }
}

fn parse_raw(input: &[u8]) -> Result<Vec<Insn>, ParseError> {
    raw::decode(input).map_err(|source| {
        let at = match source {
            DecodeError::TrailingBytes { whole, .. } => whole * crate::insn::INSN_SIZE,
            _ => 0,
        };
        ParseError::Raw { line: 1, col: at + 1, source }
    })
}

fn decode_text(input: &[u8]) -> Result<Source<'_>, ParseError> {
    match std::str::from_utf8(input) {
        Ok(text) => Ok(Source::new(text)),
        Err(e) => {
            let valid = input.get(..e.valid_up_to()).unwrap_or_default();
            let prefix = std::str::from_utf8(valid).unwrap_or_default();
            let (line, col) = Source::new(prefix).pos(prefix.len());
            Err(ParseError::InvalidUtf8 { line, col })
        }
    }
}

/// Reads `input` in the format [`detect`] guesses; returns that format too.
pub fn parse_auto(input: &[u8]) -> Result<(Format, Vec<Insn>), ParseError> {
    let format = detect(input);
    parse(input, format).map(|p| (format, p))
}

/// Formats a `k` operand the way our printers do: decimal below 4096, hex above.
pub(crate) fn fmt_k(k: u32) -> String {
    if k < 4096 {
        k.to_string()
    } else {
        format!("{k:#x}")
    }
}
