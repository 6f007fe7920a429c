//! Reading inputs and writing outputs (`-` is stdin / stdout).

use std::io::{Read, Write};

use cbpf::text::Format;
use cbpf::Insn;

use crate::fail::{io, Failure, Result};

/// Reads a whole file, or stdin for `-`.
pub fn read_input(path: &str) -> Result<Vec<u8>> {
    if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).map_err(io("reading stdin"))?;
        Ok(buf)
    } else {
        std::fs::read(path).map_err(io(format!("reading {path}")))
    }
}

/// Writes bytes to a file, or stdout for `-`.
pub fn write_output(path: &str, bytes: &[u8]) -> Result<()> {
    if path == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes).and_then(|_| out.flush()).map_err(io("writing stdout"))
    } else {
        std::fs::write(path, bytes).map_err(io(format!("writing {path}")))
    }
}

/// Input syntaxes `--from` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum From {
    Raw,
    C,
    Ddd,
    Asm,
    /// seccomp-tools style text (`A = arch`, `if (A != 0x3b) goto 0004`).
    Seccomp,
}

/// Reads and parses a classic program: auto-detected unless `from` is given.
pub fn read_classic(path: &str, from: Option<From>) -> Result<Vec<Insn>> {
    let bytes = read_input(path)?;
    parse_classic(&bytes, from).map_err(|f| Failure { code: f.code, message: format!("{path}: {}", f.message) })
}

/// Parses a classic program from bytes.
pub fn parse_classic(bytes: &[u8], from: Option<From>) -> Result<Vec<Insn>> {
    let format = match from {
        Some(From::Raw) => Format::Raw,
        Some(From::C) => Format::C,
        Some(From::Ddd) => Format::Ddd,
        Some(From::Asm) => Format::Asm,
        Some(From::Seccomp) => {
            let text = std::str::from_utf8(bytes).map_err(|e| Failure::rejected(format!("not UTF-8 text: {e}")))?;
            return Ok(seccomp::asm::assemble(text, Default::default())?);
        }
        None => {
            if looks_like_seccomp_tools(bytes) {
                if let Ok(text) = std::str::from_utf8(bytes) {
                    return Ok(seccomp::asm::assemble(text, Default::default())?);
                }
            }
            cbpf::text::detect(bytes)
        }
    };
    Ok(cbpf::text::parse(bytes, format)?)
}

/// seccomp-tools listings start with their column header.
fn looks_like_seccomp_tools(bytes: &[u8]) -> bool {
    let head = bytes.get(..bytes.len().min(256)).unwrap_or(bytes);
    std::str::from_utf8(head).map(|s| s.trim_start().starts_with("line  CODE  JT   JF")).unwrap_or(false)
}

/// Parses a hex string (whitespace, `0x` prefix and `:` separators allowed).
pub fn parse_hex(text: &str) -> Result<Vec<u8>> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    let digits: Vec<u8> = t.bytes().filter(|b| !b.is_ascii_whitespace() && *b != b':').collect();
    if digits.len() % 2 != 0 {
        return Err(Failure::rejected(format!("hex string has an odd number of digits ({})", digits.len())));
    }
    digits
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok())
                .ok_or_else(|| Failure::rejected(format!("bad hex digit pair at byte {i}")))
        })
        .collect()
}
