//! Filetests (Cranelift's, rust-analyzer's expect-test): one text file per
//! case, a classic program, directives, a marker line and the expected
//! block. The converter's (`testdata/convert/`), the chains'
//! (`testdata/chains/`) and the socket suites all read them here; each
//! runner gives the directives their meaning.
//!
//! ```text
//! ; free text, and directives `; key: value` (`mode`, `options`, `run`,
//! ; `filter` includes testdata/filters/NAME.bpf in place)
//! 0x20 0 0 4              ; code jt jf k, decimal or 0x hex; `{ .., }` and
//! { 0x15, 0, 1, 7 },      ; commas are allowed; comments after `;`, `//`,
//! repeat 3: 0x00 0 0 0    ; `/*` or `#`; `repeat N: insn` for N copies
//! == expect               ; the marker: the first line starting with `==`
//! the expected block, verbatim
//! ```

use crate::paths::{files_ending, filters_dir, read_bytes, read_text, testdata};
use crate::RawInsn;

/// A directive line, `; key: value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// 1-based line number.
    pub line: usize,
    /// The word before `:` (`mode`, `options`, `run`, ...).
    pub key: String,
    /// The rest, trimmed.
    pub value: String,
}

/// A filetest read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTest {
    /// The directives, in file order (`filter` ones included).
    pub directives: Vec<Directive>,
    /// The classic program, `repeat`s expanded and `filter`s included.
    pub insns: Vec<RawInsn>,
    /// The text before the marker line, verbatim (kept as is when a
    /// runner rewrites the expected block).
    pub head: String,
    /// The marker line without its `==`, trimmed (`expect`,
    /// `expect summary`, `cbpf`), if the file has one.
    pub marker: Option<String>,
    /// The lines after the marker, each ending in `\n`.
    pub expected: String,
}

impl FileTest {
    /// The values of the directives named `key`, with their lines.
    pub fn values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = (usize, &'a str)> + 'a {
        self.directives.iter().filter(move |d| d.key == key).map(|d| (d.line, d.value.as_str()))
    }

    /// The value of the last directive named `key`.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.directives.iter().rev().find(|d| d.key == key).map(|d| d.value.as_str())
    }
}

/// A number of the filetests: decimal, or hex after `0x`/`0X`; a leading
/// `-` wraps (as C's `int`).
pub fn number(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if let Some(neg) = t.strip_prefix('-') {
        return number(neg).map(u64::wrapping_neg);
    }
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    }
    .map_err(|_| format!("bad number {t:?}"))
}

/// One `code jt jf k` instruction (braces and commas allowed).
pub fn insn(text: &str) -> Result<RawInsn, String> {
    let cleaned: String = text.chars().map(|c| if matches!(c, '{' | '}' | ',') { ' ' } else { c }).collect();
    let fields: Vec<&str> = cleaned.split_whitespace().collect();
    let [code, jt, jf, k] = fields[..] else { return Err(format!("expected `code jt jf k`, got {:?}", text.trim())) };
    let field = |v: &str, what: &str, max: u64| {
        number(v).and_then(|n| if n <= max { Ok(n) } else { Err(format!("{what} {v} too large")) })
    };
    Ok(RawInsn {
        code: field(code, "code", 0xffff)? as u16,
        jt: field(jt, "jt", 0xff)? as u8,
        jf: field(jf, "jf", 0xff)? as u8,
        k: field(k, "k", 0xffff_ffff)? as u32,
    })
}

/// `line` without its comment (`;`, `//`, `/*` or `#` to the end), trimmed.
fn strip_comment(line: &str) -> &str {
    let end = [";", "//", "/*", "#"].iter().filter_map(|m| line.find(m)).min().unwrap_or(line.len());
    line.get(..end).unwrap_or(line).trim()
}

/// `; key: value` with a one-word key, if `line` is a directive.
fn directive(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.trim().strip_prefix(';')?.split_once(':')?;
    let key = key.trim();
    (!key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .then(|| (key, value.trim()))
}

/// Reads every filetest of `testdata/FOLDER/` (`*.txt`, in name order)
/// and hands each to `check`: how many there are, and each failure (of
/// reading or of `check`) named by its file. An error only when the folder
/// cannot be read.
pub fn check_each(
    folder: &str,
    mut check: impl FnMut(&FileTest) -> Result<(), String>,
) -> Result<(usize, Vec<String>), String> {
    let files = files_ending(&testdata().join(folder), ".txt")?;
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Err(e) = read_text(path).and_then(|text| parse(&text)).and_then(|t| check(&t)) {
            failures.push(format!("{name}: {e}"));
        }
    }
    Ok((files.len(), failures))
}

/// Reads a filetest; errors name the line.
pub fn parse(text: &str) -> Result<FileTest, String> {
    let mut t = FileTest {
        directives: Vec::new(),
        insns: Vec::new(),
        head: String::new(),
        marker: None,
        expected: String::new(),
    };
    let mut lines = text.split_inclusive('\n').enumerate();
    for (n, raw) in lines.by_ref() {
        let lineno = n + 1;
        let line = raw.trim();
        if let Some(marker) = line.strip_prefix("==") {
            t.marker = Some(marker.trim().to_owned());
            break;
        }
        t.head.push_str(raw);
        if let Some((key, value)) = directive(line) {
            if key == "filter" {
                let path = filters_dir().join(format!("{value}.bpf"));
                let records = RawInsn::records(&read_bytes(&path)?);
                t.insns.extend(records.map_err(|e| format!("line {lineno}: {}: {e}", path.display()))?);
            }
            t.directives.push(Directive { line: lineno, key: key.to_owned(), value: value.to_owned() });
            continue;
        }
        let body = strip_comment(line);
        if body.is_empty() {
            continue;
        }
        match body.strip_prefix("repeat").and_then(|r| r.split_once(':')) {
            Some((count, one)) => {
                let count = number(count).map_err(|e| format!("line {lineno}: repeat count: {e}"))?;
                let one = insn(one).map_err(|e| format!("line {lineno}: {e}"))?;
                t.insns.extend(std::iter::repeat_n(one, count as usize));
            }
            None => t.insns.push(insn(body).map_err(|e| format!("line {lineno}: {e}"))?),
        }
    }
    t.expected = lines.map(|(_, l)| format!("{}\n", l.strip_suffix('\n').unwrap_or(l))).collect();
    Ok(t)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    /// `check_each` counts every file and names each failure by its file.
    #[test]
    fn check_each_names_the_files_that_fail() {
        let mut seen = Vec::new();
        let (count, failures) = check_each("chains", |t| {
            seen.push(t.value("mode").unwrap_or("").to_string());
            if t.value("filter") == Some("seed_fast") {
                return Err("refused".into());
            }
            Ok(())
        })
        .unwrap();
        assert!(count >= 6 && seen.len() == count, "{count} files, {} checked", seen.len());
        assert_eq!(failures, ["filter_seed_fast.txt: refused"]);
        assert!(check_each("no such folder", |_| Ok(())).is_err());
    }

    #[test]
    fn a_filetest_reads_into_directives_program_and_blocks() {
        let text = "; two words: free text, no directive\n; mode: seccomp\n\
                    ; run: nr=1 => 0x7fff0000\n0x20 0 0 4 ; ld [4]\n{ 0x15, 1, 0, 0xc000003e },\n\
                    repeat 2: 6 0 0 0 // ret\n== expect summary\nline one\nline two";
        let t = parse(text).unwrap();
        assert_eq!(t.value("mode"), Some("seccomp"));
        assert_eq!(t.values("run").collect::<Vec<_>>(), [(3, "nr=1 => 0x7fff0000")]);
        assert_eq!(t.directives.len(), 2);
        let ret = RawInsn { code: 6, jt: 0, jf: 0, k: 0 };
        assert_eq!(
            t.insns,
            [
                RawInsn { code: 0x20, jt: 0, jf: 0, k: 4 },
                RawInsn { code: 0x15, jt: 1, jf: 0, k: 0xc000_003e },
                ret,
                ret
            ]
        );
        assert_eq!(t.marker.as_deref(), Some("expect summary"));
        assert_eq!(t.expected, "line one\nline two\n");
        assert!(t.head.ends_with("// ret\n") && t.head.starts_with("; two words"));
        assert!(parse("; free text, then: colon\n1 2 3\n").unwrap_err().starts_with("line 2:"));
        assert!(parse("0x10000 0 0 0\n").unwrap_err().contains("code"));
        assert_eq!(parse("; a comment with no colon\n").unwrap().marker, None);
    }
}
