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

    /// Every `; run:` directive read ([`run`]), with its line; an error
    /// names the first that does not read.
    pub fn runs(&self) -> Result<Vec<(usize, Run)>, String> {
        self.values("run").map(|(line, v)| run(v).map(|r| (line, r)).map_err(|e| format!("line {line}: {e}"))).collect()
    }

    /// The value of the last directive named `key`.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.directives.iter().rev().find(|d| d.key == key).map(|d| d.value.as_str())
    }
}

/// A `; run:` directive read: an input, and the value the program must
/// return on it (the low 32 bits of `r0`, the filter's result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Run {
    /// A seccomp run: the 64 bytes of `struct seccomp_data` (little-endian).
    Seccomp { data: [u8; 64], want: u32 },
    /// A socket run: the packet's bytes.
    Socket { packet: Vec<u8>, want: u32 },
}

/// Reads a `; run:` value: `nr=59 arch=x86_64 ip=0 args=1,2 => 0x7fff0000`
/// (each field optional: `nr` 0, `arch` x86_64, `ip` 0, `args` zeros from
/// the first missing one; `arch` a name of [`arch`] or a number), or
/// `packet=0800aabb => 0` (hex bytes).
pub fn run(spec: &str) -> Result<Run, String> {
    let (inputs, want) = spec.split_once("=>").ok_or("run line without `=>`")?;
    let want = number(want).map_err(|e| format!("expected value: {e}"))? as u32;
    let (mut nr, mut arch, mut ip, mut args, mut packet) = (0u64, 0xc000_003e_u32, 0u64, [0u64; 6], None);
    for field in inputs.split_whitespace() {
        let (key, value) = field.split_once('=').ok_or_else(|| format!("bad run field {field:?}"))?;
        let bad = |e: String| format!("{field:?}: {e}");
        match key {
            "nr" => nr = number(value).map_err(bad)?,
            "arch" => arch = self::arch(value).ok_or_else(|| bad("unknown arch".into()))?,
            "ip" => ip = number(value).map_err(bad)?,
            "args" => {
                for (slot, a) in args.iter_mut().zip(value.split(',')) {
                    *slot = number(a).map_err(bad)?;
                }
            }
            "packet" => packet = Some(hex_bytes(value).ok_or_else(|| bad("not hex bytes".into()))?),
            _ => return Err(format!("unknown run field {key:?}")),
        }
    }
    Ok(match packet {
        Some(packet) => Run::Socket { packet, want },
        None => {
            let mut data = [0u8; 64];
            let words = [(nr & 0xffff_ffff) | (u64::from(arch) << 32), ip];
            for (chunk, w) in data.chunks_exact_mut(8).zip(words.iter().chain(&args)) {
                chunk.copy_from_slice(&w.to_le_bytes());
            }
            Run::Seccomp { data, want }
        }
    })
}

/// `AUDIT_ARCH_*` of a name the run lines use (x32 shares x86_64's), or a
/// number that fits 32 bits.
pub fn arch(name: &str) -> Option<u32> {
    Some(match name {
        "x86_64" | "x32" => 0xc000_003e,
        "i386" => 0x4000_0003,
        "aarch64" => 0xc000_00b7,
        "arm" => 0x4000_0028,
        "riscv64" => 0xc000_00f3,
        "s390x" => 0x8000_0016,
        "ppc64le" => 0xc000_0015,
        _ => return number(name).ok().and_then(|v| u32::try_from(v).ok()),
    })
}

/// Bytes written as pairs of hex digits, without separators.
fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    (digits.len() % 2 == 0).then_some(())?;
    digits.chunks_exact(2).map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()).collect()
}

/// The instruction bytes of a converter listing (`testdata/convert`'s
/// `== expect` block): each line `N: b0 b1 .. b7  (code) text` gives its
/// eight bytes, in order; comment and summary lines give none. What an
/// eBPF crate's tests load to run the converter's output without the
/// converter.
pub fn listed_bytes(expected: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (n, line) in expected.lines().enumerate() {
        let Some((index, rest)) = line.trim().split_once(": ") else { continue };
        if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let bytes: Option<Vec<Vec<u8>>> = rest.split_whitespace().take(8).map(hex_bytes).collect();
        match bytes.map(|b| b.concat()) {
            Some(b) if b.len() == 8 => out.extend(b),
            _ => return Err(format!("listing line {}: not eight hex bytes: {line:?}", n + 1)),
        }
    }
    Ok(out)
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

    #[test]
    fn run_lines_read_into_seccomp_data_or_a_packet() {
        let Run::Seccomp { data, want } = run("nr=59 arch=i386 ip=0x10 args=1,-1 => 0x7fff0000").unwrap() else {
            panic!("not a seccomp run")
        };
        assert_eq!(want, 0x7fff_0000);
        assert_eq!(data[..16], [59, 0, 0, 0, 3, 0, 0, 0x40, 0x10, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(data[16..24], [1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(data[24..32], [0xff; 8]);
        assert_eq!(data[32..], [0; 32]);
        let Run::Seccomp { data, want } = run(" => 0").unwrap() else { panic!("not a seccomp run") };
        assert_eq!((want, &data[4..8]), (0, &[0x3e, 0, 0, 0xc0][..]));
        assert_eq!(run("packet=0800aBbb => 1").unwrap(), Run::Socket { packet: vec![8, 0, 0xab, 0xbb], want: 1 });
        for bad in ["nr=1", "nr=x => 0", "arch=vax => 0", "packet=080 => 0", "packet=zz => 0", "pc=1 => 0", "nr => 0"] {
            assert!(run(bad).is_err(), "{bad:?} read");
        }
        assert_eq!(
            (arch("x32"), arch("0x40000028"), arch("0x100000000")),
            (Some(0xc000_003e), Some(0x4000_0028), None)
        );
        let t = parse("; run: nr=1 => 2\n; run: nr=1\n").unwrap();
        assert!(t.runs().unwrap_err().starts_with("line 2:"));
    }

    #[test]
    fn a_listing_gives_the_bytes_of_its_instruction_lines() {
        let listing = "new_len=2 stack_depth=0 seen_ld_abs=false\n      ; prologue\n   \
                       0: ac 00 00 00 00 00 00 00  (ac) w0 ^= w0\n      ; (001) ret #0\n  \
                       11: 95 00 00 00 00 00 00 ff  (95) exit\n";
        let mut want = vec![0xac, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0];
        want[15] = 0xff;
        assert_eq!(listed_bytes(listing).unwrap(), want);
        assert!(listed_bytes("   0: ac 00 00  (ac) short\n").unwrap_err().starts_with("listing line 1:"));
    }
}
