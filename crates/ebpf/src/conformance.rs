//! Parser for the `.data` test files of the eBPF conformance suite
//! (Alan-Jowett/bpf_conformance; copied under testdata/bpf_conformance).
//!
//! testdata/bpf_conformance/README.md describes the format: `#` comments,
//! `--` section headers (`asm`, `result`, `mem`, `raw`, `no register offset`,
//! `c`, `error`), hex memory bytes, a result compared as an unsigned 64-bit
//! `r0`. [`parse`] reads one file into a [`ConformanceTest`]; its
//! [`ConformanceTest::program`] assembles the `-- asm` section with
//! [`crate::asm`] unless a `-- raw` section gives the bytes.
//!
//! ```
//! let t = ebpf::conformance::parse("-- asm\nmov %r0, 2\nexit\n-- result\n0x2\n").unwrap();
//! assert_eq!(t.expected, ebpf::conformance::Expected::Result(2));
//! assert_eq!(t.program().unwrap().len(), 2);
//! ```

use crate::asm::{assemble, AsmError, AsmErrorKind};
use crate::isa::insn::{Insn, INSN_SIZE};

/// What running the test must produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// The program exits with this whole 64-bit `r0`.
    Result(u64),
    /// Loading or running must fail; upstream compares the message with this
    /// text (empty: any failure).
    Error(String),
}

/// One parsed `.data` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConformanceTest {
    /// The `-- asm` section, verbatim (comments included; the assembler drops them).
    pub asm: Option<String>,
    /// 1-based line of the `-- asm` header; the section's first line is the next one.
    pub asm_header_line: usize,
    /// The `-- raw` section decoded to instructions; when present it is the program.
    pub raw: Option<Vec<Insn>>,
    /// The `-- mem` bytes; empty when the test has no memory.
    pub mem: Vec<u8>,
    /// The `-- error` text if there is an error section, else the `-- result` value.
    pub expected: Expected,
}

/// Why a `.data` file cannot be read as a test. Lines and columns are 1-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConformanceError {
    #[error("line {line}: unknown directive `{text}`")]
    UnknownDirective { line: usize, text: String },
    #[error("line {line}: second `-- {section}` section")]
    DuplicateSection { line: usize, section: &'static str },
    #[error("line {line}: no `-- result` or `-- error` section")]
    NoExpectation { line: usize },
    #[error("line {line}: no program: neither `-- asm` nor `-- raw` has instructions")]
    NoProgram { line: usize },
    #[error("line {line}: invalid result `{text}`")]
    InvalidResult { line: usize, text: String },
    #[error("line {line}:{col}: invalid memory byte `{token}`")]
    InvalidMem { line: usize, col: usize, token: String },
    #[error("line {line}:{col}: invalid raw instruction word `{token}`")]
    InvalidRaw { line: usize, col: usize, token: String },
}

/// The kinds of section a `--` header can start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Asm,
    Result,
    Mem,
    Raw,
    Ignored,
    Error,
}

/// The kind of a header line, by the first keyword it contains, in the
/// order upstream's `parse_test_file()` tests them.
fn header_kind(line: &str) -> Option<Section> {
    if line.contains("asm") {
        Some(Section::Asm)
    } else if line.contains("result") {
        Some(Section::Result)
    } else if line.contains("mem") {
        Some(Section::Mem)
    } else if line.contains("raw") {
        Some(Section::Raw)
    } else if line.contains("no register offset") || line.contains(" c") {
        Some(Section::Ignored)
    } else if line.contains("error") {
        Some(Section::Error)
    } else {
        None
    }
}

/// Whitespace-separated tokens of `line` with their 1-based columns.
fn tokens(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut col = 0;
    let mut start: Option<(usize, usize)> = None;
    let mut out = Vec::new();
    for (byte, ch) in line.char_indices().chain(std::iter::once((line.len(), ' '))) {
        col += 1;
        if ch.is_whitespace() {
            if let Some((from, from_col)) = start.take() {
                out.push((from_col, line.get(from..byte).unwrap_or("")));
            }
        } else if start.is_none() {
            start = Some((byte, col));
        }
    }
    out.into_iter()
}

/// Parses one `.data` file.
///
/// Mirrors `parse_test_file()` in src/bpf_test_parser.cc of
/// Alan-Jowett/bpf_conformance (commit f558566), as described in
/// testdata/bpf_conformance/README.md.
///
/// # Deviations
/// - Comments are dropped from every section, not only `-- asm`.
/// - An unknown `--` directive, a repeated section, a file with no
///   expectation and a file with no program are errors instead of a skip.
/// - A `-- raw` line of exactly eight two-digit hex tokens (no `0x`) is read
///   as the 8 bytes of one instruction, the intent of the `negative/unused-*`
///   files; upstream reads each token as a decimal 64-bit word.
/// - Memory tokens must be one or two hex digits; upstream truncates longer
///   ones to their low byte.
///
/// # Errors
/// See [`ConformanceError`].
pub fn parse(text: &str) -> Result<ConformanceTest, ConformanceError> {
    let mut section = Section::None;
    let mut asm: Option<String> = None;
    let mut asm_header_line = 0;
    let mut raw: Option<Vec<Insn>> = None;
    let mut mem = Vec::new();
    let mut result: Option<(usize, String)> = None;
    let mut error: Option<String> = None;
    let mut seen: Vec<Section> = Vec::new();
    let mut line_count = 0;

    for (index, full_line) in text.lines().enumerate() {
        let line_no = index + 1;
        line_count = line_no;
        let full_line = full_line.strip_suffix('\r').unwrap_or(full_line);
        let line = full_line.split_once('#').map_or(full_line, |(before, _)| before);
        if line.contains("--") {
            let kind = header_kind(line)
                .ok_or_else(|| ConformanceError::UnknownDirective { line: line_no, text: line.trim().to_owned() })?;
            if kind != Section::Ignored && seen.contains(&kind) {
                return Err(ConformanceError::DuplicateSection { line: line_no, section: section_name(kind) });
            }
            seen.push(kind);
            section = kind;
            match kind {
                Section::Asm => {
                    asm = Some(String::new());
                    asm_header_line = line_no;
                }
                Section::Raw => raw = Some(Vec::new()),
                Section::Error => error = Some(String::new()),
                _ => {}
            }
            continue;
        }
        match section {
            Section::Asm => {
                // Keep every line (blank and comment lines too) so assembler
                // errors map back to file lines.
                if let Some(body) = asm.as_mut() {
                    body.push_str(full_line);
                    body.push('\n');
                }
            }
            Section::Result => {
                if !line.trim().is_empty() {
                    result = Some((line_no, line.trim().to_owned()));
                }
            }
            Section::Error => {
                if !line.trim().is_empty() {
                    error = Some(line.trim().to_owned());
                }
            }
            Section::Mem => {
                for (col, token) in tokens(line) {
                    let byte = (token.len() <= 2)
                        .then(|| u8::from_str_radix(token, 16).ok())
                        .flatten()
                        .ok_or_else(|| ConformanceError::InvalidMem { line: line_no, col, token: token.to_owned() })?;
                    mem.push(byte);
                }
            }
            Section::Raw => {
                if let Some(words) = raw.as_mut() {
                    parse_raw_line(line, line_no, words)?;
                }
            }
            Section::None | Section::Ignored => {}
        }
    }

    let expected = match (error, result) {
        (Some(text), _) => Expected::Error(text),
        (None, Some((line, text))) => {
            Expected::Result(parse_result(&text).ok_or(ConformanceError::InvalidResult { line, text })?)
        }
        (None, None) => return Err(ConformanceError::NoExpectation { line: line_count.max(1) }),
    };
    let has_asm = asm
        .as_deref()
        .is_some_and(|body| body.lines().any(|l| !l.split_once('#').map_or(l, |(before, _)| before).trim().is_empty()));
    let has_raw = raw.as_ref().is_some_and(|words| !words.is_empty());
    if !has_asm && !has_raw {
        return Err(ConformanceError::NoProgram { line: line_count.max(1) });
    }
    Ok(ConformanceTest { asm, asm_header_line, raw: raw.filter(|w| !w.is_empty()), mem, expected })
}

fn section_name(kind: Section) -> &'static str {
    match kind {
        Section::Asm => "asm",
        Section::Result => "result",
        Section::Mem => "mem",
        Section::Raw => "raw",
        Section::Error => "error",
        Section::None | Section::Ignored => "ignored",
    }
}

/// One line of a `-- raw` section: 64-bit words (`0x` hex or decimal), or
/// eight two-digit hex bytes forming one instruction.
fn parse_raw_line(line: &str, line_no: usize, words: &mut Vec<Insn>) -> Result<(), ConformanceError> {
    let toks: Vec<(usize, &str)> = tokens(line).collect();
    let is_byte = |t: &str| t.len() == 2 && t.bytes().all(|b| b.is_ascii_hexdigit());
    if toks.len() == INSN_SIZE && toks.iter().all(|(_, t)| is_byte(t)) {
        let mut bytes = [0u8; INSN_SIZE];
        for (slot, (col, token)) in bytes.iter_mut().zip(&toks) {
            *slot = u8::from_str_radix(token, 16).map_err(|_| ConformanceError::InvalidRaw {
                line: line_no,
                col: *col,
                token: (*token).to_owned(),
            })?;
        }
        words.push(Insn::from_bytes(bytes));
        return Ok(());
    }
    for (col, token) in toks {
        let parsed = match token.strip_prefix("0x").or_else(|| token.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => token.parse::<u64>().ok(),
        };
        let word =
            parsed.ok_or_else(|| ConformanceError::InvalidRaw { line: line_no, col, token: token.to_owned() })?;
        words.push(Insn::from_bytes(word.to_le_bytes()));
    }
    Ok(())
}

/// A `-- result` line: hex if it contains `0x`, else decimal (a leading `-`
/// wraps, as `std::stoull` does).
fn parse_result(text: &str) -> Option<u64> {
    if let Some((_, hex)) = text.split_once("0x") {
        return u64::from_str_radix(hex, 16).ok();
    }
    match text.strip_prefix('-') {
        Some(magnitude) => magnitude.parse::<u64>().ok().map(u64::wrapping_neg),
        None => text.parse::<u64>().ok(),
    }
}

impl ConformanceTest {
    /// The program to run: the `-- raw` words if present, else the `-- asm`
    /// section assembled.
    ///
    /// # Errors
    /// The assembler's error, with its line counted in the `.data` file.
    pub fn program(&self) -> Result<Vec<Insn>, AsmError> {
        match (&self.raw, self.assemble()) {
            (Some(words), _) => Ok(words.clone()),
            (None, Some(result)) => result,
            (None, None) => {
                Err(AsmError { line: self.asm_header_line.max(1), col: 1, kind: AsmErrorKind::NoInstructions })
            }
        }
    }

    /// The `-- asm` section assembled (`None` if the file has none), even
    /// when a `-- raw` section overrides it; errors count lines in the file.
    pub fn assemble(&self) -> Option<Result<Vec<Insn>, AsmError>> {
        let body = self.asm.as_deref()?;
        Some(assemble(body).map_err(|e| e.shifted(self.asm_header_line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_section() {
        let text = "# header\n-- asm\nmov %r0, 1 # one\n\nexit\n-- mem\n00 ff\n1a\n-- result\n0x10000000A\n";
        let t = parse(text).unwrap();
        assert_eq!(t.mem, vec![0x00, 0xff, 0x1a]);
        assert_eq!(t.expected, Expected::Result(0x1_0000_000a));
        assert_eq!(t.asm_header_line, 2);
        assert_eq!(t.program().unwrap().len(), 2);
        assert_eq!(parse("-- asm\nexit\n-- result\n42\n").unwrap().expected, Expected::Result(42));
    }

    #[test]
    fn raw_wins_and_accepts_both_spellings() {
        let t = parse("-- asm\nmov %r0, 1\nexit\n-- raw\n0x00000001000000b7 149\n-- result\n1").unwrap();
        let raw = t.raw.clone().unwrap();
        assert_eq!(raw, vec![Insn::new(0xb7, 0, 0, 0, 1), Insn::new(0x95, 0, 0, 0, 0)]);
        assert_eq!(t.program().unwrap(), raw);
        let bytes = parse("-- raw\n07 00 01 00 01 00 00 00\n95 00 00 00 00 00 00 00\n-- error\n").unwrap();
        assert_eq!(bytes.raw.unwrap(), vec![Insn::new(0x07, 0, 0, 1, 1), Insn::new(0x95, 0, 0, 0, 0)]);
        assert_eq!(bytes.expected, Expected::Error(String::new()));
    }

    #[test]
    fn errors_say_where() {
        assert!(matches!(parse("-- asm\nexit\n-- bogus\n"), Err(ConformanceError::UnknownDirective { line: 3, .. })));
        assert!(matches!(parse("-- asm\nexit\n"), Err(ConformanceError::NoExpectation { .. })));
        assert!(matches!(parse(""), Err(ConformanceError::NoExpectation { .. })));
        assert!(matches!(parse("-- result\n0x0\n"), Err(ConformanceError::NoProgram { .. })));
        assert!(matches!(
            parse("-- asm\nexit\n-- mem\n00 123\n-- result\n0"),
            Err(ConformanceError::InvalidMem { line: 4, col: 4, .. })
        ));
        assert!(matches!(parse("-- asm\nexit\n-- result\n0xzz"), Err(ConformanceError::InvalidResult { line: 4, .. })));
        assert!(matches!(
            parse("-- raw\n0xq\n-- result\n0"),
            Err(ConformanceError::InvalidRaw { line: 2, col: 1, .. })
        ));
        assert!(matches!(
            parse("-- asm\nexit\n-- asm\nexit\n-- result\n0"),
            Err(ConformanceError::DuplicateSection { line: 3, .. })
        ));
        let t = parse("# c\n-- asm\nmov %r0, 1\nbogus %r0\n-- result\n0").unwrap();
        let e = t.program().unwrap_err();
        assert_eq!((e.line, e.col), (4, 1), "{e}");
    }
}
