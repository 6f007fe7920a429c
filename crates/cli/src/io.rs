//! Reading inputs and writing outputs (`-` is stdin / stdout).

use std::io::{Read, Write};

use cbpf::raw::Endian;
use cbpf::text::Format;
use cbpf::Insn;

use crate::fail::{io, Failure, Result};

/// Reads a whole file, or stdin for `-`.
/// The largest input file read whole (filters, programs, captures).
pub const INPUT_CAP: u64 = 16 << 20;

/// Reads a whole file, or stdin for `-`, refusing more than [`INPUT_CAP`] bytes.
pub fn read_input(path: &str) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    if path == "-" {
        std::io::stdin().lock().take(INPUT_CAP + 1).read_to_end(&mut buf).map_err(io("reading stdin"))?;
    } else {
        let f = std::fs::File::open(path).map_err(io(format!("reading {path}")))?;
        f.take(INPUT_CAP + 1).read_to_end(&mut buf).map_err(io(format!("reading {path}")))?;
    }
    if buf.len() as u64 > INPUT_CAP {
        return Err(Failure::rejected(format!("{path}: input larger than the {} MiB cap", INPUT_CAP >> 20)));
    }
    Ok(buf)
}

/// Writes bytes to a file, or stdout for `-`.
pub fn write_output(path: &str, bytes: &[u8]) -> Result<()> {
    if path == "-" {
        let mut out = crate::out::Out::stdout();
        out.write_all(bytes)?;
        out.finish()
    } else {
        write_atomic(std::path::Path::new(path), |f| f.write_all(bytes))
    }
}

/// Replaces `target` atomically: `fill` writes a new temporary file
/// `.NAME.tmp.<pid>.<n>` created with O_EXCL next to it, which is fsynced and
/// renamed over `target`. On any failure the temporary file is removed and
/// the old `target` (or its absence) is left intact. `rename` replaces a
/// symlink at `target` itself, never the file it points to.
///
/// A `target` that is (or is a symlink to) a character device or a FIFO
/// (`/dev/null`, `/dev/stdout`, a shell's `>(...)`) is a stream, not a file
/// to replace: it is opened and written in place. Renaming over it would
/// replace the device node itself, and as root that turns `/dev/null` into
/// a regular file every later reader of `/dev/null` gets our bytes from.
/// Any other kind (directory, block device, socket) is refused.
pub fn write_atomic(
    target: &std::path::Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let shown = target.display();
    match std::fs::metadata(target).map(|m| OutputKind::of(&m.file_type())) {
        Ok(OutputKind::Stream) => {
            let mut file =
                std::fs::OpenOptions::new().write(true).open(target).map_err(io(format!("writing {shown}")))?;
            return fill(&mut file).map_err(io(format!("writing {shown}")));
        }
        Ok(OutputKind::Other) => {
            return Err(Failure::rejected(format!("writing {shown}: not a regular file, a character device or a FIFO")))
        }
        // A regular file, or nothing yet (or a dangling symlink): replaced.
        Ok(OutputKind::File) | Err(_) => {}
    }
    let name = target
        .file_name()
        .ok_or_else(|| Failure::rejected(format!("writing {shown}: not a file name")))?
        .to_string_lossy()
        .into_owned();
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let (tmp, mut file) = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.tmp.{}.{n}", std::process::id()));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1_000_000 => continue,
            Err(e) => return Err(io(format!("writing {shown}: creating a temporary file in {}", dir.display()))(e)),
        }
    };
    let result = fill(&mut file).and_then(|()| file.sync_all());
    drop(file);
    let result = result.and_then(|()| std::fs::rename(&tmp, target));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(format!("writing {shown}"))(e));
    }
    Ok(())
}

/// What [`write_atomic`] does with an existing output path.
enum OutputKind {
    /// A regular file: replaced by rename.
    File,
    /// A character device or a FIFO: written in place.
    Stream,
    /// Refused.
    Other,
}

impl OutputKind {
    fn of(kind: &std::fs::FileType) -> OutputKind {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_file() {
            OutputKind::File
        } else if kind.is_char_device() || kind.is_fifo() {
            OutputKind::Stream
        } else {
            OutputKind::Other
        }
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

/// `--endian`: the byte order of raw `struct sock_filter` records read or
/// written ([`cbpf::raw::Endian`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum EndianArg {
    /// x86, arm64, riscv64, ...
    #[default]
    Little,
    /// s390x, ppc64, mips (filters exported there by libseccomp).
    Big,
}

impl EndianArg {
    /// The byte order.
    pub fn endian(self) -> Endian {
        match self {
            EndianArg::Little => Endian::Little,
            EndianArg::Big => Endian::Big,
        }
    }
}

/// The classic program a command reads: the file and how to decode it
/// (every command that takes one filter flattens this).
#[derive(clap::Args, Debug)]
pub struct FileArgs {
    /// Filter file (`-` for stdin): raw sock_filter bytes, C array, tcpdump -ddd, bpf_asm or seccomp-tools text.
    pub file: String,
    /// Input syntax; auto-detected when absent.
    #[arg(long, value_enum)]
    pub from: Option<From>,
    /// Byte order of raw sock_filter records (filters exported on s390x, ppc64 or mips are big).
    #[arg(long, value_enum, default_value_t)]
    pub endian: EndianArg,
}

impl FileArgs {
    /// Reads and parses the program ([`read_classic`]).
    pub fn read(&self) -> Result<Vec<Insn>> {
        read_classic(&self.file, self.from, self.endian)
    }
}

/// Reads and parses a classic program: auto-detected unless `from` is
/// given; raw records in byte order `endian`.
pub fn read_classic(path: &str, from: Option<From>, endian: EndianArg) -> Result<Vec<Insn>> {
    let bytes = read_input(path)?;
    parse_classic_endian(&bytes, from, endian.endian())
        .map_err(|f| Failure { code: f.code, message: format!("{path}: {}", f.message) })
}

/// Parses a classic program from bytes (raw records little-endian).
#[cfg(test)]
pub fn parse_classic(bytes: &[u8], from: Option<From>) -> Result<Vec<Insn>> {
    parse_classic_endian(bytes, from, Endian::Little)
}

/// Parses a classic program from bytes, raw records in byte order `endian`.
/// A raw program with an opcode that is unknown in `endian` order but whose
/// every opcode is known in the other order is refused with a hint to give
/// `--endian` (a filter exported on a machine of the other byte order).
pub fn parse_classic_endian(bytes: &[u8], from: Option<From>, endian: Endian) -> Result<Vec<Insn>> {
    // A UTF-8 BOM before text is skipped (never in raw input).
    let bytes = match bytes.strip_prefix(b"\xef\xbb\xbf".as_slice()) {
        Some(rest) if from != Some(From::Raw) => rest,
        _ => bytes,
    };
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
            if let Some(bad) = stray_byte_in_text(bytes) {
                return Err(bad);
            }
            if looks_like_seccomp_tools(bytes) {
                if let Ok(text) = std::str::from_utf8(bytes) {
                    return Ok(seccomp::asm::assemble(text, Default::default())?);
                }
            }
            cbpf::text::detect(bytes)
        }
    };
    if format == Format::Raw {
        return match cbpf::raw::decode_endian(bytes, endian) {
            Ok(insns) => match byte_order_hint(bytes, &insns, endian) {
                Some(hint) => Err(Failure::rejected(hint)),
                None => Ok(insns),
            },
            // Framing errors do not depend on the byte order: report them
            // as the raw parser does, with their position.
            Err(e) => Err(match cbpf::text::parse(bytes, format) {
                Err(pe) => pe.into(),
                Ok(_) => Failure::rejected(e),
            }),
        };
    }
    Ok(cbpf::text::parse(bytes, format)?)
}

/// The error for raw records that look byte-swapped: the first opcode
/// unknown in `endian` order (`chk_code_allowed()`'s 49, see
/// [`cbpf::Op::from_insn`]), when every record decodes to a known opcode in
/// the other order.
fn byte_order_hint(bytes: &[u8], insns: &[Insn], endian: Endian) -> Option<String> {
    let (pc, bad) = insns.iter().enumerate().find(|(_, i)| cbpf::Op::from_insn(**i).is_none())?;
    let other = endian.swapped();
    let swapped = cbpf::raw::decode_endian(bytes, other).ok()?;
    if !swapped.iter().all(|i| cbpf::Op::from_insn(*i).is_some()) {
        return None;
    }
    Some(format!(
        "unknown opcode {:#06x} at insn {pc}; the file looks {}-endian: try --endian {}",
        bad.code,
        other.name(),
        other.name()
    ))
}

/// Input that is text but for a few stray bytes (a NUL, invalid UTF-8, a
/// control character) would be auto-detected as raw and rejected for its
/// length: name the first bad byte's line:col instead. "Mostly text": at
/// least 90% of the bytes printable ASCII or whitespace, and the first 8 bytes
/// not a plausible `sock_filter` (raw programs start with a binary opcode).
fn stray_byte_in_text(bytes: &[u8]) -> Option<Failure> {
    let is_text = |b: u8| matches!(b, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0x20..=0x7e);
    // The first 8 bytes all text. (Input under 10 bytes with a stray byte
    // is never 90% text, so its length needs no test of its own.)
    if bytes.iter().take(8).any(|&b| !is_text(b)) {
        return None;
    }
    let texty = bytes.iter().filter(|&&b| is_text(b)).count();
    if texty == bytes.len() || texty * 100 < bytes.len() * 90 {
        return None;
    }
    // Valid UTF-8 text (non-ASCII letters in comments) is left to the parsers.
    if !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok() && !bytes.iter().any(|&b| b < 0x20 && !is_text(b)) {
        return None;
    }
    let valid_upto = std::str::from_utf8(bytes).err().map_or(bytes.len(), |e| e.valid_up_to());
    let at = bytes
        .iter()
        .position(|&b| b == 0 || b == 0x7f || (b < 0x20 && !is_text(b)))
        .map_or(valid_upto, |p| p.min(valid_upto));
    let before = bytes.get(..at).unwrap_or(bytes);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = at - before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) + 1;
    let byte = bytes.get(at).copied().unwrap_or(0);
    Some(Failure::rejected(format!(
        "{line}:{col}: byte {byte:#04x} in text input (give --from raw if this is a raw program)"
    )))
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

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;

    fn leftovers(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp."))
            .collect()
    }

    #[test]
    fn stray_bytes_in_text_name_their_line_and_column() {
        let e = parse_classic(b"ld [0]\nret #0\x00 ; a comment\n", None).unwrap_err();
        assert_eq!(e.message, "2:7: byte 0x00 in text input (give --from raw if this is a raw program)");
        let e = parse_classic(b"ld [0]\nr\xffet #0 ; comment\n", None).unwrap_err();
        assert!(e.message.starts_with("2:2: byte 0xff"), "{}", e.message);
        assert_eq!(parse_classic(b"\xef\xbb\xbfld [0]\nret #0\n", None).unwrap().len(), 2);
        // A real raw program is still raw.
        let raw = cbpf::raw::encode(&[Insn { code: 0x06, jt: 0, jf: 0, k: 0 }]);
        assert_eq!(parse_classic(&raw, None).unwrap().len(), 1);
    }

    /// Where `file` lives, by its descriptor.
    fn path_of(file: &std::fs::File) -> std::path::PathBuf {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap()
    }

    /// Input up to the cap is read whole; one byte more is refused.
    #[test]
    fn the_input_cap_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big");
        let f = std::fs::File::create(&file).unwrap();
        f.set_len(INPUT_CAP).unwrap();
        let name = file.to_str().unwrap();
        assert_eq!(read_input(name).unwrap().len() as u64, INPUT_CAP);
        f.set_len(INPUT_CAP + 1).unwrap();
        let e = read_input(name).unwrap_err();
        assert!(e.message.ends_with("input larger than the 16 MiB cap"), "{}", e.message);
    }

    /// The temporary file is made next to the target (a rename never
    /// crosses file systems), and names taken already are skipped.
    #[test]
    fn the_temporary_file_is_next_to_the_target_under_a_free_name() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        let mut first = std::path::PathBuf::new();
        write_atomic(&target, |f| {
            first = path_of(f);
            f.write_all(b"one")
        })
        .unwrap();
        assert_eq!(first.parent(), Some(dir.path().canonicalize().unwrap().as_path()));
        let n = |p: &std::path::Path| -> u64 { p.to_str().unwrap().rsplit('.').next().unwrap().parse().unwrap() };
        let taken: Vec<std::path::PathBuf> = (1..=50)
            .map(|k| dir.path().join(format!(".out.bin.tmp.{}.{}", std::process::id(), n(&first) + k)))
            .collect();
        for t in &taken {
            std::fs::write(t, b"").unwrap();
        }
        let mut second = std::path::PathBuf::new();
        write_atomic(&target, |f| {
            second = path_of(f);
            f.write_all(b"two")
        })
        .unwrap();
        assert!(n(&second) > n(&first) + 50, "{second:?}");
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        assert_eq!(leftovers(dir.path()).len(), 50);
        assert!(taken.iter().all(|t| std::fs::read(t).unwrap().is_empty()));
    }

    /// A UTF-8 byte-order mark is text's; raw records keep their bytes.
    #[test]
    fn a_byte_order_mark_is_skipped_only_before_text() {
        let raw = [0xef, 0xbb, 0xbf, 0, 0, 0, 0, 0, 0x06, 0, 0, 0, 0, 0, 0, 0];
        let insns = parse_classic(&raw, Some(From::Raw)).unwrap();
        assert_eq!(insns.iter().map(|i| i.code).collect::<Vec<_>>(), [0xbbef, 0x06]);
        assert_eq!(parse_classic(b"\xef\xbb\xbfret #0\n", Some(From::Asm)).unwrap().len(), 1);
    }

    /// Mostly text (at least 90% of the bytes, the first 8 all text) with a
    /// stray byte is named at its line:col; shorter input, input that is
    /// all text, valid UTF-8 and mostly binary input are left to the parsers.
    #[test]
    fn what_counts_as_text_with_a_stray_byte() {
        let stray = |b: &[u8]| stray_byte_in_text(b).map(|f| f.message);
        let at = |b: &[u8]| stray(b).map(|m| m.split(": ").next().unwrap().to_string());
        // 9 text bytes and a NUL: 90%, flagged; 8 and two NULs: 80%, not.
        assert_eq!(at(b"ret #0 ;\n\0").as_deref(), Some("2:1"));
        assert_eq!(at(b"ret #0 ;\0\0"), None);
        // Fewer than 8 bytes, or a binary byte among the first 8.
        assert_eq!(at(b"ret #0\0"), None);
        assert_eq!(at(b"ret #\x010 ; a long comment"), None);
        // All text; valid UTF-8 with a non-ASCII letter.
        assert_eq!(at(b"ret #0 ; fine\n"), None);
        assert_eq!(at("ret #0 ; caf\u{e9}\n".as_bytes()), None);
        // A control character or invalid UTF-8, at its line:col.
        assert_eq!(at(b"ld [0]\nret #0\nld\x01 [4]\n").as_deref(), Some("3:3"));
        // DEL alone is valid text for the parsers to refuse; before a NUL it
        // is the first stray byte.
        assert_eq!(at(b"ld [0]\nret #0\nld [4]\x7f\n"), None);
        assert_eq!(at(b"ld [0]\nret #0\nld [4]\x7f ; \0\n").as_deref(), Some("3:7"));
        assert_eq!(at(b"ld [0]\nret #0 ; caf\xe9\n").as_deref(), Some("2:13"));
        // The earlier of the first bad byte and the end of valid UTF-8.
        assert_eq!(at(b"ld [0]\nret #0 ; \xff ... \0\n").as_deref(), Some("2:10"));
        assert_eq!(
            stray(b"ld [0]\nret\0 #0 ; long enough\n").as_deref(),
            Some("2:4: byte 0x00 in text input (give --from raw if this is a raw program)")
        );
    }

    #[test]
    fn a_failing_write_keeps_the_old_file_and_removes_the_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        std::fs::write(&target, b"old contents").unwrap();
        let err = write_atomic(&target, |f| {
            f.write_all(b"half of the new")?;
            Err(std::io::Error::from_raw_os_error(28)) // ENOSPC
        })
        .unwrap_err();
        assert_eq!(err.code, 1);
        assert!(err.message.contains("out.bin"), "{}", err.message);
        assert_eq!(std::fs::read(&target).unwrap(), b"old contents");
        assert!(leftovers(dir.path()).is_empty());
    }

    /// A temporary directory holding a file `victim` with `contents` and a
    /// symlink to it named `name`: what an attacker plants where we write.
    pub(crate) fn planted_symlink(
        name: &str,
        contents: &[u8],
    ) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, contents).unwrap();
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        (dir, victim, link)
    }

    #[test]
    fn a_successful_write_replaces_a_symlink_not_its_target() {
        let (dir, victim, target) = planted_symlink("out.bin", b"victim");
        write_atomic(&target, |f| f.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"victim");
        assert!(std::fs::symlink_metadata(&target).unwrap().file_type().is_file());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert!(leftovers(dir.path()).is_empty());
    }

    /// `-o /dev/null` (or any character device, or a FIFO) is written in
    /// place: renaming over it would make the device node a regular file.
    #[test]
    fn a_fifo_is_written_in_place_and_stays_a_fifo() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic(&fifo, |f| f.write_all(b"through the pipe")).unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn dev_null_stays_a_character_device() {
        use std::os::unix::fs::FileTypeExt;
        let null = std::path::Path::new("/dev/null");
        let kind = std::fs::symlink_metadata(null).unwrap().file_type();
        assert!(kind.is_char_device(), "/dev/null is not a character device on this machine before the test");
        write_atomic(null, |f| f.write_all(b"discarded")).unwrap();
        assert!(std::fs::symlink_metadata(null).unwrap().file_type().is_char_device());
        assert_eq!(std::fs::read(null).unwrap(), b"");
    }

    #[test]
    fn a_directory_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(dir.path(), |f| f.write_all(b"x")).unwrap_err();
        assert!(err.message.contains("not a regular file"), "{}", err.message);
        assert!(dir.path().is_dir());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
