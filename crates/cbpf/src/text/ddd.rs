//! Decimal listings: `tcpdump -ddd` and `bpf_asm`'s default output.
//!
//! Both are a count followed by `code jt jf k` records in decimal.
//! `tcpdump -ddd` (libpcap `bpf_dump()`, option 3) puts the count and each
//! record on its own line; `bpf_asm` (`bpf_pretty_print()` in
//! tools/bpf/bpf_exp.y) joins them with commas on one line, with a trailing
//! comma, which is the form `iptables -m bpf --bytecode` and `tc` take. The
//! reader accepts either separator anywhere and checks the count.

use super::{ParseError, Source};
use crate::insn::Insn;

/// One number of a record, with where it starts.
#[derive(Debug, Clone, Copy)]
struct Num {
    value: u64,
    at: usize,
    end: usize,
}

/// Reads a decimal listing.
///
/// Records are separated by newlines or commas; the numbers of a record by
/// blanks. The first record is the instruction count, which must match.
pub(crate) fn parse(src: Source<'_>) -> Result<Vec<Insn>, ParseError> {
    let text = src.text;
    let bytes = text.as_bytes();
    // Records: (start offset, numbers).
    let mut records: Vec<(usize, Vec<Num>)> = Vec::new();
    let mut current: Vec<Num> = Vec::new();
    let mut record_at = 0;
    let mut i = 0;
    let flush = |records: &mut Vec<(usize, Vec<Num>)>, current: &mut Vec<Num>, at: usize| {
        if !current.is_empty() {
            records.push((at, std::mem::take(current)));
        }
    };
    while let Some(&b) = bytes.get(i) {
        match b {
            b' ' | b'\t' | b'\r' => i += 1,
            b',' | b'\n' => {
                flush(&mut records, &mut current, record_at);
                i += 1;
            }
            b'0'..=b'9' => {
                let end = bytes.iter().skip(i).position(|c| !c.is_ascii_digit()).map_or(bytes.len(), |n| i + n);
                if bytes.get(end).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                    let glued = bytes
                        .iter()
                        .skip(end)
                        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                        .map_or(bytes.len(), |n| end + n);
                    let (line, col) = src.pos(i);
                    let text = text.get(i..glued).unwrap_or("").to_string();
                    return Err(ParseError::MalformedNumber { line, col, text });
                }
                let digits = text.get(i..end).unwrap_or("");
                let Ok(value) = digits.parse::<u64>() else {
                    let (line, col) = src.pos(i);
                    return Err(ParseError::NumberOutOfRange {
                        line,
                        col,
                        text: digits.to_string(),
                        range: "at most 0xffffffff",
                    });
                };
                if current.is_empty() {
                    record_at = i;
                }
                current.push(Num { value, at: i, end });
                i = end;
            }
            _ => {
                let (line, col) = src.pos(i);
                let ch = text.get(i..).and_then(|s| s.chars().next()).unwrap_or('\u{fffd}');
                return Err(ParseError::UnexpectedChar { line, col, ch });
            }
        }
    }
    flush(&mut records, &mut current, record_at);

    let mut records = records.into_iter();
    let Some((count_at, count)) = records.next() else {
        let (line, col) = src.pos(text.len());
        return Err(ParseError::Empty { line, col });
    };
    // A record with the wrong number of numbers.
    let miscount = |at: usize, expected: &str, found: usize| {
        let (line, col) = src.pos(at);
        ParseError::Syntax { line, col, expected: expected.to_string(), found: format!("{found} numbers") }
    };
    let [count] = count[..] else {
        return Err(miscount(count_at, "the instruction count alone on the first line", count.len()));
    };
    let mut insns = Vec::new();
    for (at, nums) in records {
        let [code, jt, jf, k] = nums[..] else {
            return Err(miscount(at, "4 numbers `code jt jf k`", nums.len()));
        };
        let field = |n: Num, max: u64, range: &'static str| -> Result<u64, ParseError> {
            if n.value > max {
                let (line, col) = src.pos(n.at);
                let text = src.text.get(n.at..n.end).unwrap_or("").to_string();
                return Err(ParseError::NumberOutOfRange { line, col, text, range });
            }
            Ok(n.value)
        };
        let code = field(code, 0xffff, "code: 0 to 65535")? as u16;
        let jt = field(jt, 0xff, "jt: 0 to 255")? as u8;
        let jf = field(jf, 0xff, "jf: 0 to 255")? as u8;
        let k = field(k, 0xffff_ffff, "k: 0 to 4294967295")? as u32;
        insns.push(Insn::jump(code, k, jt, jf));
    }
    if count.value != insns.len() as u64 {
        let (line, col) = src.pos(count.at);
        return Err(ParseError::CountMismatch {
            line,
            col,
            count: usize::try_from(count.value).unwrap_or(usize::MAX),
            found: insns.len(),
        });
    }
    if insns.is_empty() {
        let (line, col) = src.pos(count.at);
        return Err(ParseError::Empty { line, col });
    }
    Ok(insns)
}

/// Prints `insns` as `tcpdump -ddd` does: the count, then one
/// `code jt jf k` line per instruction.
///
/// Mirrors `bpf_dump()` with option > 2 in libpcap's bpf_dump.c.
pub fn print_ddd(insns: &[Insn]) -> String {
    let mut out = format!("{}\n", insns.len());
    for i in insns {
        out.push_str(&format!("{} {} {} {}\n", i.code, i.jt, i.jf, i.k));
    }
    out
}

/// Prints `insns` on one line as `bpf_asm` does by default
/// (`4,40 0 0 12,21 0 1 2048,...,` with a trailing comma and newline), the
/// form `iptables -m bpf --bytecode` takes.
///
/// Mirrors `bpf_pretty_print()` in tools/bpf/bpf_exp.y.
pub fn print_ddd_line(insns: &[Insn]) -> String {
    let mut out = format!("{},", insns.len());
    for i in insns {
        out.push_str(&format!("{} {} {} {},", i.code, i.jt, i.jf, i.k));
    }
    out.push('\n');
    out
}
