//! `cargo xtask codegen [--check]`: syscall name/number tables for the
//! seccomp crate, generated from the kernel's own tables in `xtask/syscalls/`
//! (see its README for provenance and the ABI selection of each table).
//!
//! The output is deterministic: the same inputs give the same bytes, so
//! `--check` (and the unit test below) can catch a stale committed file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where the generated file lives, relative to the workspace root.
pub const OUTPUT: &str = "crates/seccomp/src/syscalls/generated.rs";
/// Where the inputs live, relative to the workspace root.
pub const INPUT_DIR: &str = "xtask/syscalls";

/// `__X32_SYSCALL_BIT` (arch/x86/include/uapi/asm/unistd.h).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// One table to generate.
struct Spec {
    /// Rust identifier of the static.
    ident: &'static str,
    /// Human name of the ABI, as `seccomp::arch::Arch::name()` spells it.
    arch: &'static str,
    /// Input file in `xtask/syscalls/`.
    source: &'static str,
    /// ABIs (second column) kept; empty = all.
    abis: &'static [&'static str],
    /// OR-ed into every number.
    nr_bit: u32,
}

const SPECS: &[Spec] = &[
    Spec { ident: "X86_64", arch: "x86_64", source: "syscall_64.tbl", abis: &["common", "64"], nr_bit: 0 },
    Spec { ident: "X32", arch: "x32", source: "syscall_64.tbl", abis: &["common", "x32"], nr_bit: X32_SYSCALL_BIT },
    Spec { ident: "I386", arch: "i386", source: "unistd_32.h", abis: &[], nr_bit: 0 },
    Spec {
        ident: "AARCH64",
        arch: "aarch64",
        source: "syscall.tbl",
        abis: &["common", "64", "renameat", "rlimit", "memfd_secret"],
        nr_bit: 0,
    },
    Spec {
        ident: "RISCV64",
        arch: "riscv64",
        source: "syscall.tbl",
        abis: &["common", "64", "riscv", "newstat", "rlimit", "memfd_secret"],
        nr_bit: 0,
    },
    Spec {
        ident: "RISCV32",
        arch: "riscv32",
        source: "syscall.tbl",
        abis: &["common", "32", "riscv", "memfd_secret"],
        nr_bit: 0,
    },
    Spec { ident: "LOONGARCH64", arch: "loongarch64", source: "syscall.tbl", abis: &["common", "64"], nr_bit: 0 },
];

const DELTA: &str = "linux-6.18-delta.tbl";

/// One `number abi name` row of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    nr: u32,
    abi: String,
    name: String,
}

/// Entry point of `cargo xtask codegen`.
pub fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err(format!("codegen: unexpected arguments {args:?} (usage: codegen [--check])")),
    };
    let root = crate::workspace_root();
    let generated = generate(&root.join(INPUT_DIR))?;
    let out = root.join(OUTPUT);
    let current = std::fs::read_to_string(&out).unwrap_or_default();
    if check {
        if current != generated {
            return Err(format!("{OUTPUT} is stale: run `cargo xtask codegen` and commit the result"));
        }
        println!("{OUTPUT} is up to date");
        return Ok(());
    }
    if current == generated {
        println!("{OUTPUT} unchanged");
    } else {
        std::fs::write(&out, generated).map_err(|e| format!("writing {}: {e}", out.display()))?;
        println!("wrote {OUTPUT}");
    }
    Ok(())
}

fn read(dir: &Path, file: &str) -> Result<String, String> {
    let path: PathBuf = dir.join(file);
    std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// Parses a kernel `.tbl` file: `<number> <abi> <name> [entry points...]`,
/// `#` comments and blank lines skipped.
fn parse_tbl(file: &str, text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut cols = line.split_whitespace();
        let (Some(nr), Some(abi), Some(name)) = (cols.next(), cols.next(), cols.next()) else {
            return Err(format!("{file}:{}: expected `<number> <abi> <name>`", i + 1));
        };
        let nr = nr.parse::<u32>().map_err(|e| format!("{file}:{}: bad number {nr:?}: {e}", i + 1))?;
        rows.push(Row { nr, abi: abi.to_string(), name: name.to_string() });
    }
    Ok(rows)
}

/// Parses a generated `unistd_*.h`: `#define __NR_<name> <number>`.
fn parse_unistd(file: &str, text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut cols = line.split_whitespace();
        if cols.next() != Some("#define") {
            continue;
        }
        let (Some(sym), Some(nr)) = (cols.next(), cols.next()) else { continue };
        let Some(name) = sym.strip_prefix("__NR_") else { continue };
        let nr = nr.parse::<u32>().map_err(|e| format!("{file}:{}: bad number {nr:?}: {e}", i + 1))?;
        rows.push(Row { nr, abi: "i386".to_string(), name: name.to_string() });
    }
    Ok(rows)
}

/// Parses the delta file into rows per source file.
fn parse_delta(text: &str) -> Result<BTreeMap<String, Vec<Row>>, String> {
    let mut out: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        let [file, nr, abi, name, _since] = cols.as_slice() else {
            return Err(format!("{DELTA}:{}: expected `<file> <number> <abi> <name> <release>`", i + 1));
        };
        let nr = nr.parse::<u32>().map_err(|e| format!("{DELTA}:{}: bad number {nr:?}: {e}", i + 1))?;
        out.entry(file.to_string()).or_default().push(Row { nr, abi: abi.to_string(), name: name.to_string() });
    }
    Ok(out)
}

/// Builds the generated Rust source from the input directory.
pub fn generate(dir: &Path) -> Result<String, String> {
    let delta = parse_delta(&read(dir, DELTA)?)?;
    let mut out = String::new();
    out.push_str("// @generated by cargo xtask codegen; do not edit\n");
    out.push_str("// Sources: xtask/syscalls/ (see its README.md), target Linux 6.18.\n\n");
    out.push_str("use super::Table;\n");
    for spec in SPECS {
        let text = read(dir, spec.source)?;
        let mut rows = if spec.source.ends_with(".h") {
            parse_unistd(spec.source, &text)?
        } else {
            parse_tbl(spec.source, &text)?
        };
        rows.extend(delta.get(spec.source).cloned().unwrap_or_default());
        let mut by_nr: BTreeMap<u32, String> = BTreeMap::new();
        let mut by_name: BTreeMap<String, u32> = BTreeMap::new();
        for row in rows {
            if !spec.abis.is_empty() && !spec.abis.contains(&row.abi.as_str()) {
                continue;
            }
            let nr = row.nr | spec.nr_bit;
            if let Some(old) = by_nr.insert(nr, row.name.clone()) {
                return Err(format!("{}: number {nr} is both {old} and {}", spec.arch, row.name));
            }
            if let Some(old) = by_name.insert(row.name.clone(), nr) {
                return Err(format!("{}: {} is both {old} and {nr}", spec.arch, row.name));
            }
        }
        // NR_syscalls as the kernel computes it: highest number + 1 (x32's
        // own numbers carry the x32 bit, so its size is left as the native one's).
        let max = by_nr.keys().next_back().map_or(0, |&m| (m & !spec.nr_bit) + 1);
        let _ = writeln!(out, "\n/// `{}`: {} syscalls from `{}`.", spec.arch, by_nr.len(), spec.source);
        let _ = writeln!(out, "pub static {}: Table = Table {{", spec.ident);
        let _ = writeln!(out, "    arch: {:?},", spec.arch);
        let _ = writeln!(out, "    nr_syscalls: {max},");
        out.push_str("    by_nr: &[\n");
        for (nr, name) in &by_nr {
            let _ = writeln!(out, "        ({nr:#x}, {name:?}),");
        }
        out.push_str("    ],\n    by_name: &[\n");
        for (name, nr) in &by_name {
            let _ = writeln!(out, "        ({name:?}, {nr:#x}),");
        }
        out.push_str("    ],\n};\n");
    }
    let _ = write!(out, "\n/// Every generated table.\npub static ALL: &[&Table] = &[");
    for (i, spec) in SPECS.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('&');
        out.push_str(spec.ident);
    }
    out.push_str("];\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_file_is_up_to_date() {
        let root = crate::workspace_root();
        let generated = generate(&root.join(INPUT_DIR)).unwrap();
        let committed = std::fs::read_to_string(root.join(OUTPUT)).unwrap();
        assert!(committed == generated, "{OUTPUT} is stale: run `cargo xtask codegen` and commit the result");
    }

    #[test]
    fn tbl_parser_reads_three_columns_and_skips_comments() {
        let rows = parse_tbl("t", "# c\n\n0\tcommon\tread\t\tsys_read\n462 \tcommon  mseal\t\tsys_mseal\n").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1], Row { nr: 462, abi: "common".into(), name: "mseal".into() });
        assert!(parse_tbl("t", "12 common\n").is_err());
    }

    #[test]
    fn generation_is_deterministic() {
        let dir = crate::workspace_root().join(INPUT_DIR);
        assert_eq!(generate(&dir).unwrap(), generate(&dir).unwrap());
    }
}
