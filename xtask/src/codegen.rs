//! `cargo xtask codegen [--check]`: syscall name/number tables for the
//! seccomp crate, generated from the facts of the kernel's syscall tables of
//! Linux 6.18 kept under `xtask/syscalls/`: columns 1-3 (number, ABI, name)
//! of each row of a kernel `.tbl` file, at the same relative path as in a
//! kernel tree, and ARM's private calls in a small table of our own (its
//! README gives provenance, how to re-derive each file and the ABI selection
//! of each table).
//!
//! Each table is the set of `__NR_*` constants the kernel's build scripts
//! derive from a `.tbl` file for one ABI (`scripts/syscallhdr.sh`,
//! arch/s390/kernel/syscalls/syscalltbl, arch/mips/kernel/syscalls/syscallnr.sh,
//! arch/arm/tools/syscallnr.sh), plus that ABI's `NR_syscalls`, the size of
//! its syscall table and of its seccomp cache bitmap.
//!
//! The output is deterministic: the same inputs give the same bytes, so
//! `--check` (and the unit test below) can catch a stale committed file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Where the generated file lives, relative to the workspace root.
pub const OUTPUT: &str = "crates/seccomp/src/syscalls/generated.rs";
/// Where the inputs live, relative to the workspace root.
pub const INPUT_DIR: &str = "xtask/syscalls";

/// `__X32_SYSCALL_BIT` (arch/x86/include/uapi/asm/unistd.h).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const X86_64_TBL: &str = "arch/x86/entry/syscalls/syscall_64.tbl";
const I386_TBL: &str = "arch/x86/entry/syscalls/syscall_32.tbl";
const GENERIC_TBL: &str = "scripts/syscall.tbl";
const ARM_TBL: &str = "arch/arm/tools/syscall.tbl";
/// ARM's private syscalls (`__ARM_NR_*` of arch/arm/include/uapi/asm/unistd.h),
/// which are not in `syscall.tbl`; see [`parse_arm_private`].
const ARM_PRIVATE: &str = "arch/arm/private.txt";
/// arm64's copy of the EABI table for its compat (AArch32) entry points.
const ARM64_COMPAT_TBL: &str = "arch/arm64/tools/syscall_32.tbl";
const S390_TBL: &str = "arch/s390/kernel/syscalls/syscall.tbl";
const POWERPC_TBL: &str = "arch/powerpc/kernel/syscalls/syscall.tbl";
const MIPS_O32_TBL: &str = "arch/mips/kernel/syscalls/syscall_o32.tbl";
const MIPS_N64_TBL: &str = "arch/mips/kernel/syscalls/syscall_n64.tbl";
const MIPS_N32_TBL: &str = "arch/mips/kernel/syscalls/syscall_n32.tbl";
const M68K_TBL: &str = "arch/m68k/kernel/syscalls/syscall.tbl";
const PARISC_TBL: &str = "arch/parisc/kernel/syscalls/syscall.tbl";
const SH_TBL: &str = "arch/sh/kernel/syscalls/syscall.tbl";

/// How the kernel computes an ABI's `NR_syscalls` from its table.
#[derive(Debug, Clone, Copy)]
enum Size {
    /// Highest number among the rows of these ABIs (empty: every row), + 1:
    /// `--emit-nr` of scripts/syscallhdr.sh (which takes the last selected
    /// row; the tables are in ascending order), s390's `syscalltbl -N` and
    /// mips' `syscallnr.sh` (both `sort -n | tail`).
    HighestOf(&'static [&'static str]),
    /// arch/arm/tools/syscallnr.sh: highest number of any row + 1, rounded
    /// up to a multiple of 4 once it reaches 256 (of 16 once it reaches
    /// 1024, ...) for the padding of the assembler syscall table.
    ArmPadded,
}

/// One table to generate.
struct Spec {
    /// Rust identifier of the static.
    ident: &'static str,
    /// The ABI's name, as `seccomp::arch::Arch::name()` spells it.
    arch: &'static str,
    /// Input file, relative to `xtask/syscalls/`.
    source: &'static str,
    /// ABIs (second column) kept; empty = every row.
    abis: &'static [&'static str],
    /// Added to every number (mips' `__NR_Linux`), before `nr_bit`.
    nr_offset: u32,
    /// OR-ed into every number (x32's `__X32_SYSCALL_BIT`).
    nr_bit: u32,
    /// `NR_syscalls` (without `nr_bit`, with `nr_offset`).
    size: Size,
    /// Also read ARM's private `__ARM_NR_*` calls.
    arm_private: bool,
    /// Share the data of an earlier spec (same table, other byte order).
    same_as: Option<&'static str>,
}

impl Spec {
    const fn new(ident: &'static str, arch: &'static str, source: &'static str, abis: &'static [&'static str]) -> Spec {
        Spec {
            ident,
            arch,
            source,
            abis,
            nr_offset: 0,
            nr_bit: 0,
            size: Size::HighestOf(abis),
            arm_private: false,
            same_as: None,
        }
    }

    const fn size(self, size: Size) -> Spec {
        Spec { size, ..self }
    }

    const fn offset(self, nr_offset: u32) -> Spec {
        Spec { nr_offset, ..self }
    }

    const fn alias_of(self, ident: &'static str) -> Spec {
        Spec { same_as: Some(ident), ..self }
    }
}

/// ABI selections, each from the kernel build rule that generates that
/// ABI's `unistd*.h` / syscall table in Linux 6.18.
mod abis {
    /// arch/x86/entry/syscalls/Makefile: `unistd_64.h: abis := common,64`.
    pub const X86_64: &[&str] = &["common", "64"];
    /// Same Makefile: `unistd_x32.h: abis := common,x32`.
    pub const X32: &[&str] = &["common", "x32"];
    /// Same Makefile: `unistd_64_x32.h: abis := x32` (gives `X32_NR_syscalls`).
    pub const X32_ONLY: &[&str] = &["x32"];
    /// Same Makefile: `unistd_32.h: abis := i386`.
    pub const I386: &[&str] = &["i386"];
    /// scripts/Makefile.asm-headers `syscall_abis_64 += common,64` plus
    /// arch/arm64/kernel/Makefile.syscalls `syscall_abis_64 += renameat rlimit memfd_secret`.
    pub const AARCH64: &[&str] = &["common", "64", "renameat", "rlimit", "memfd_secret"];
    /// `common,64` plus arch/riscv/kernel/Makefile.syscalls `syscall_abis_64 += riscv rlimit memfd_secret`.
    pub const RISCV64: &[&str] = &["common", "64", "riscv", "rlimit", "memfd_secret"];
    /// `common,32` plus arch/riscv/kernel/Makefile.syscalls `syscall_abis_32 += riscv memfd_secret`.
    pub const RISCV32: &[&str] = &["common", "32", "riscv", "memfd_secret"];
    /// `common,64`; arch/loongarch/kernel/Makefile.syscalls adds nothing.
    pub const LOONGARCH64: &[&str] = &["common", "64"];
    /// arch/arm/tools/Makefile `--abis common,$*` for `calls-eabi.S` /
    /// `unistd-eabi.h` (no row uses `eabi` in 6.18; `oabi` rows are the old ABI's only).
    pub const ARM_EABI: &[&str] = &["common", "eabi"];
    /// arm64's compat table: `syscall_abis_32 += common,32` (arch/arm64/kernel/Makefile.syscalls adds nothing).
    pub const ARM64_COMPAT: &[&str] = &["common", "32"];
    /// arch/s390/kernel/syscalls/Makefile `syshdr_abi_unistd_64 := common,64`.
    pub const S390X: &[&str] = &["common", "64"];
    /// Same Makefile `syshdr_abi_unistd_32 := common,32`.
    pub const S390: &[&str] = &["common", "32"];
    /// Same Makefile `sysnr_abi_unistd_nr := common,32,64` (`NR_syscalls`, both ABIs).
    pub const S390_NR: &[&str] = &["common", "32", "64"];
    /// arch/powerpc/kernel/syscalls/Makefile `unistd_64.h: abis := common,nospu,64`
    /// (`spu` rows are the Cell SPU table's only).
    pub const PPC64: &[&str] = &["common", "nospu", "64"];
    /// Same Makefile `unistd_32.h: abis := common,nospu,32`.
    pub const PPC: &[&str] = &["common", "nospu", "32"];
    /// arch/parisc/kernel/syscalls/Makefile `unistd_%.h: --abis common,$*`
    /// for `unistd_32.h` (its `--emit-nr` gives the 32-bit `NR_syscalls`).
    pub const PARISC: &[&str] = &["common", "32"];
    /// Same rule for `unistd_64.h`.
    pub const PARISC64: &[&str] = &["common", "64"];
    /// arch/mips/kernel/syscalls/Makefile: `syscallhdr.sh` without `--abis`
    /// (each file is one ABI; n64 also has one `common` row); so do
    /// arch/m68k and arch/sh's Makefiles (every row is `common`).
    pub const ALL: &[&str] = &[];
}

/// Every table, in `seccomp::arch::Arch::ALL` order.
const SPECS: &[Spec] = &[
    Spec::new("X86_64", "x86_64", X86_64_TBL, abis::X86_64),
    Spec::new("I386", "i386", I386_TBL, abis::I386),
    Spec { nr_bit: X32_SYSCALL_BIT, ..Spec::new("X32", "x32", X86_64_TBL, abis::X32) }
        .size(Size::HighestOf(abis::X32_ONLY)),
    Spec::new("AARCH64", "aarch64", GENERIC_TBL, abis::AARCH64),
    Spec { arm_private: true, ..Spec::new("ARM", "arm", ARM_TBL, abis::ARM_EABI) }.size(Size::ArmPadded),
    Spec { arm_private: true, ..Spec::new("ARMEB", "armeb", ARM_TBL, abis::ARM_EABI) }
        .size(Size::ArmPadded)
        .alias_of("ARM"),
    Spec::new("RISCV64", "riscv64", GENERIC_TBL, abis::RISCV64),
    Spec::new("RISCV32", "riscv32", GENERIC_TBL, abis::RISCV32),
    Spec::new("S390X", "s390x", S390_TBL, abis::S390X).size(Size::HighestOf(abis::S390_NR)),
    Spec::new("S390", "s390", S390_TBL, abis::S390).size(Size::HighestOf(abis::S390_NR)),
    Spec::new("PPC64LE", "ppc64le", POWERPC_TBL, abis::PPC64),
    Spec::new("PPC64", "ppc64", POWERPC_TBL, abis::PPC64).alias_of("PPC64LE"),
    Spec::new("PPC", "ppc", POWERPC_TBL, abis::PPC),
    Spec::new("PPCLE", "ppcle", POWERPC_TBL, abis::PPC).alias_of("PPC"),
    Spec::new("MIPS", "mips", MIPS_O32_TBL, abis::ALL).offset(4000),
    Spec::new("MIPSEL", "mipsel", MIPS_O32_TBL, abis::ALL).offset(4000).alias_of("MIPS"),
    Spec::new("MIPS64", "mips64", MIPS_N64_TBL, abis::ALL).offset(5000),
    Spec::new("MIPSEL64", "mipsel64", MIPS_N64_TBL, abis::ALL).offset(5000).alias_of("MIPS64"),
    Spec::new("MIPS64N32", "mips64n32", MIPS_N32_TBL, abis::ALL).offset(6000),
    Spec::new("MIPSEL64N32", "mipsel64n32", MIPS_N32_TBL, abis::ALL).offset(6000).alias_of("MIPS64N32"),
    Spec::new("LOONGARCH64", "loongarch64", GENERIC_TBL, abis::LOONGARCH64),
    Spec::new("M68K", "m68k", M68K_TBL, abis::ALL),
    Spec::new("PARISC64", "parisc64", PARISC_TBL, abis::PARISC64),
    Spec::new("PARISC", "parisc", PARISC_TBL, abis::PARISC),
    Spec::new("SH", "sh", SH_TBL, abis::ALL),
    Spec::new("SHEB", "sheb", SH_TBL, abis::ALL).alias_of("SH"),
];

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
    let path = dir.join(file);
    std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// Lines of a table file that hold data: `#` comments and blank lines skipped;
/// each with its 1-based line number.
fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, line)| (i + 1, line.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// Parses one of our `.tbl` files: rows of exactly `<number> <abi> <name>`
/// (columns 1-3 of the kernel's table; entry-point columns are not kept, so
/// a row with more columns is an error), whitespace-separated.
fn parse_tbl(file: &str, text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (line_no, line) in data_lines(text) {
        let mut cols = line.split_whitespace();
        let (Some(nr), Some(abi), Some(name), None) = (cols.next(), cols.next(), cols.next(), cols.next()) else {
            return Err(format!("{file}:{line_no}: expected `<number> <abi> <name>`"));
        };
        let nr = nr.parse::<u32>().map_err(|e| format!("{file}:{line_no}: bad number {nr:?}: {e}"))?;
        rows.push(Row { nr, abi: abi.to_string(), name: name.to_string() });
    }
    Ok(rows)
}

/// Parses ARM's private syscalls from our table of them: rows of
/// `<number> <name>`, the first `<number> base` giving `__ARM_NR_BASE`
/// (`__NR_SYSCALL_BASE + 0x0f0000` in arch/arm/include/uapi/asm/unistd.h, as
/// an EABI build sees it: `__NR_SYSCALL_BASE` 0), each later row a call
/// `__ARM_NR_<name>` at `__ARM_NR_BASE + <number>`. Numbers are decimal or
/// `0x` hex; `#` comments and blank lines skipped.
fn parse_arm_private(file: &str, text: &str) -> Result<Vec<Row>, String> {
    let mut base = None;
    let mut rows = Vec::new();
    for (line_no, line) in data_lines(text) {
        let mut cols = line.split_whitespace();
        let (Some(number), Some(name), None) = (cols.next(), cols.next(), cols.next()) else {
            return Err(format!("{file}:{line_no}: expected `<number> <name>`"));
        };
        let number = if let Some(hex) = number.strip_prefix("0x") {
            u32::from_str_radix(hex, 16)
        } else {
            number.parse::<u32>()
        }
        .map_err(|e| format!("{file}:{line_no}: bad number {number:?}: {e}"))?;
        match (name, base) {
            ("base", None) => base = Some(number),
            ("base", Some(_)) => return Err(format!("{file}:{line_no}: a second base")),
            (_, None) => return Err(format!("{file}:{line_no}: {name} before the base")),
            (_, Some(base)) => {
                let nr = base.checked_add(number).ok_or_else(|| format!("{file}:{line_no}: {name} overflows"))?;
                rows.push(Row { nr, abi: "arm".to_string(), name: name.to_string() });
            }
        }
    }
    if rows.is_empty() {
        return Err(format!("{file}: no private calls"));
    }
    Ok(rows)
}

/// Keeps the rows of `abis` (all when empty), as the kernel's scripts do.
fn select<'a>(rows: &'a [Row], abis: &'a [&str]) -> impl Iterator<Item = &'a Row> + 'a {
    rows.iter().filter(move |r| abis.is_empty() || abis.contains(&r.abi.as_str()))
}

/// `NR_syscalls` of a table, as the kernel's scripts compute it.
fn nr_syscalls(rows: &[Row], size: Size, nr_offset: u32) -> Result<u32, String> {
    let highest = |abis: &[&str]| select(rows, abis).map(|r| r.nr).max().ok_or("no rows selected".to_string());
    Ok(match size {
        Size::HighestOf(abis) => nr_offset + highest(abis)? + 1,
        Size::ArmPadded => {
            let next = highest(&[])? + 1;
            let mut align = 1;
            while next / (256 * align) > 0 {
                align *= 4;
            }
            nr_offset + next.div_ceil(align) * align
        }
    })
}

/// A generated table's data, before formatting.
struct Built {
    by_nr: BTreeMap<u32, String>,
    by_name: BTreeMap<String, u32>,
    nr_syscalls: u32,
}

fn build(dir: &Path, spec: &Spec) -> Result<Built, String> {
    let rows = parse_tbl(spec.source, &read(dir, spec.source)?)?;
    let nr_syscalls = nr_syscalls(&rows, spec.size, spec.nr_offset).map_err(|e| format!("{}: {e}", spec.arch))?;
    let mut selected: Vec<Row> = select(&rows, spec.abis).cloned().collect();
    if spec.arm_private {
        selected.extend(parse_arm_private(ARM_PRIVATE, &read(dir, ARM_PRIVATE)?)?);
    }
    let mut by_nr = BTreeMap::new();
    let mut by_name = BTreeMap::new();
    for row in selected {
        let nr = (row.nr + spec.nr_offset) | spec.nr_bit;
        if let Some(old) = by_nr.insert(nr, row.name.clone()) {
            return Err(format!("{}: number {nr} is both {old} and {}", spec.arch, row.name));
        }
        if let Some(old) = by_name.insert(row.name.clone(), nr) {
            return Err(format!("{}: {} is both {old} and {nr}", spec.arch, row.name));
        }
    }
    Ok(Built { by_nr, by_name, nr_syscalls })
}

/// `__NR_compat32_syscalls` of arm64 (its `SECCOMP_ARCH_COMPAT_NR`), from
/// arm64's own copy of the EABI table, after checking that copy gives the
/// same numbers and names as arch/arm/tools/syscall.tbl.
fn arm64_compat_nr_syscalls(dir: &Path) -> Result<u32, String> {
    let compat = parse_tbl(ARM64_COMPAT_TBL, &read(dir, ARM64_COMPAT_TBL)?)?;
    let arm = parse_tbl(ARM_TBL, &read(dir, ARM_TBL)?)?;
    let pairs = |rows: &[Row], abis: &[&str]| -> Vec<(u32, String)> {
        select(rows, abis).map(|r| (r.nr, r.name.clone())).collect()
    };
    if pairs(&compat, abis::ARM64_COMPAT) != pairs(&arm, abis::ARM_EABI) {
        return Err(format!("{ARM64_COMPAT_TBL} and {ARM_TBL} disagree on the EABI syscalls"));
    }
    nr_syscalls(&compat, Size::HighestOf(abis::ARM64_COMPAT), 0).map_err(|e| format!("{ARM64_COMPAT_TBL}: {e}"))
}

/// Builds the generated Rust source from the input directory.
pub fn generate(dir: &Path) -> Result<String, String> {
    let mut out = String::new();
    out.push_str("// @generated by `cargo xtask codegen`; do not edit.\n");
    out.push_str("// Sources: the Linux 6.18 syscall tables in xtask/syscalls/ (see its README.md).\n\n");
    out.push_str("use super::Table;\n");
    let mut built: BTreeMap<&str, Built> = BTreeMap::new();
    for spec in SPECS {
        let data = build(dir, spec)?;
        let data_ident = match spec.same_as {
            None => {
                let _ = writeln!(out, "\nstatic {}_BY_NR: [(u32, &str); {}] = [", spec.ident, data.by_nr.len());
                for (nr, name) in &data.by_nr {
                    let _ = writeln!(out, "    ({nr:#x}, {name:?}),");
                }
                out.push_str("];\n");
                let _ = writeln!(out, "\nstatic {}_BY_NAME: [(&str, u32); {}] = [", spec.ident, data.by_name.len());
                for (name, nr) in &data.by_name {
                    let _ = writeln!(out, "    ({name:?}, {nr:#x}),");
                }
                out.push_str("];\n");
                spec.ident
            }
            Some(other) => {
                let same = built.get(other).ok_or_else(|| format!("{}: {other} must come first", spec.arch))?;
                if same.by_nr != data.by_nr || same.nr_syscalls != data.nr_syscalls {
                    return Err(format!("{}: differs from {other}, cannot share its data", spec.arch));
                }
                other
            }
        };
        let abis = if spec.abis.is_empty() { "all rows".to_string() } else { spec.abis.join(",") };
        let _ = writeln!(
            out,
            "\n/// `{}`: {} syscalls, `{}` ({abis}).\npub static {}: Table = Table {{",
            spec.arch,
            data.by_nr.len(),
            spec.source,
            spec.ident
        );
        let _ = writeln!(out, "    arch: {:?},", spec.arch);
        let _ = writeln!(out, "    nr_syscalls: {},", data.nr_syscalls);
        let _ = writeln!(out, "    by_nr: &{data_ident}_BY_NR,");
        let _ = writeln!(out, "    by_name: &{data_ident}_BY_NAME,");
        out.push_str("};\n");
        built.insert(spec.ident, data);
    }
    let _ = write!(
        out,
        "\n/// `__NR_compat32_syscalls`: `SECCOMP_ARCH_COMPAT_NR` of an arm64 kernel\n\
         /// (`{ARM64_COMPAT_TBL}`, common,32).\n\
         pub(crate) const ARM64_COMPAT_NR_SYSCALLS: u32 = {};\n",
        arm64_compat_nr_syscalls(dir)?
    );
    let _ = write!(out, "\n/// Every generated table.\npub static ALL: &[&Table] = &[\n");
    for spec in SPECS {
        let _ = writeln!(out, "    &{},", spec.ident);
    }
    out.push_str("];\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> std::path::PathBuf {
        crate::workspace_root().join(INPUT_DIR)
    }

    #[test]
    fn committed_file_is_up_to_date() {
        let generated = generate(&dir()).unwrap();
        let committed = std::fs::read_to_string(crate::workspace_root().join(OUTPUT)).unwrap();
        assert!(committed == generated, "{OUTPUT} is stale: run `cargo xtask codegen` and commit the result");
    }

    #[test]
    fn generation_is_deterministic() {
        assert_eq!(generate(&dir()).unwrap(), generate(&dir()).unwrap());
    }

    #[test]
    fn tbl_parser_reads_three_columns_and_skips_comments() {
        let rows = parse_tbl("t", "# c\n\n0\tcommon\tread\n462 \tcommon  mseal\n").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1], Row { nr: 462, abi: "common".into(), name: "mseal".into() });
        assert!(parse_tbl("t", "12 common\n").is_err());
        assert!(parse_tbl("t", "x common read\n").is_err());
        // Only columns 1-3 are kept: a row with an entry point is not ours.
        assert!(parse_tbl("t", "0\tcommon\tread\tsys_read\n").is_err());
    }

    #[test]
    fn arm_private_calls_sit_above_the_base() {
        let text = "# c\n0x0f0000\tbase\n\n1\tbreakpoint\n2 cacheflush\n";
        let rows = parse_arm_private("t", text).unwrap();
        let got: Vec<(u32, &str)> = rows.iter().map(|r| (r.nr, r.name.as_str())).collect();
        assert_eq!(got, [(0xf0001, "breakpoint"), (0xf0002, "cacheflush")]);
        assert!(parse_arm_private("t", "2 cacheflush\n0x0f0000 base\n").is_err());
        assert!(parse_arm_private("t", "0x0f0000 base\n").is_err());
        assert!(parse_arm_private("t", "0x0f0000 base\n0x0f0000 base\n2 cacheflush\n").is_err());
        assert!(parse_arm_private("t", "0x0f0000 base\nx cacheflush\n").is_err());
        assert!(parse_arm_private("t", "0x0f0000 base\n2 cacheflush extra\n").is_err());
    }

    #[test]
    fn arm_table_size_is_padded_like_syscallnr_sh() {
        let rows = |max: u32| vec![Row { nr: max, abi: "common".into(), name: "x".into() }];
        // Below 256 no padding; from 256 a multiple of 4; from 1024 of 16.
        assert_eq!(nr_syscalls(&rows(200), Size::ArmPadded, 0).unwrap(), 201);
        assert_eq!(nr_syscalls(&rows(469), Size::ArmPadded, 0).unwrap(), 472);
        assert_eq!(nr_syscalls(&rows(471), Size::ArmPadded, 0).unwrap(), 472);
        assert_eq!(nr_syscalls(&rows(472), Size::ArmPadded, 0).unwrap(), 476);
        assert_eq!(nr_syscalls(&rows(1030), Size::ArmPadded, 0).unwrap(), 1040);
    }

    #[test]
    fn inputs_are_linux_6_18() {
        // Every table ends at 469 `file_setattr` (6.17); 470 `listns` came in 6.19.
        for (file, last) in [
            (X86_64_TBL, "469\tcommon\tfile_setattr"),
            (I386_TBL, "469\ti386\tfile_setattr"),
            (GENERIC_TBL, "469\tcommon\tfile_setattr"),
            (ARM_TBL, "469\tcommon\tfile_setattr"),
            (S390_TBL, "469\tcommon\tfile_setattr"),
            (POWERPC_TBL, "469\tcommon\tfile_setattr"),
            (MIPS_N64_TBL, "469\tn64\tfile_setattr"),
            (M68K_TBL, "469\tcommon\tfile_setattr"),
            (PARISC_TBL, "469\tcommon\tfile_setattr"),
            (SH_TBL, "469\tcommon\tfile_setattr"),
        ] {
            let text = read(&dir(), file).unwrap();
            assert!(text.contains(last), "{file}");
            assert!(!text.contains("listns"), "{file}");
        }
        let x86_64 = read(&dir(), X86_64_TBL).unwrap();
        assert!(x86_64.contains("336\tcommon\tuprobe"));
    }

    #[test]
    fn arm64_compat_table_matches_arm() {
        assert_eq!(arm64_compat_nr_syscalls(&dir()).unwrap(), 470);
    }

    #[test]
    fn whole_name_abi_match_equals_the_kernels_prefix_match() {
        // syscallhdr.sh & co. match `^<nr>\s+(abi1|abi2)`, a prefix match on
        // column 2; `select` compares whole names. Same rows on our inputs.
        for spec in SPECS {
            let rows = parse_tbl(spec.source, &read(&dir(), spec.source).unwrap()).unwrap();
            for row in rows.iter().filter(|r| !spec.abis.is_empty() && !spec.abis.contains(&r.abi.as_str())) {
                assert!(!spec.abis.iter().any(|a| row.abi.starts_with(a)), "{}: {row:?}", spec.arch);
            }
        }
    }

    #[test]
    fn aliases_share_identical_data() {
        for spec in SPECS.iter().filter(|s| s.same_as.is_some()) {
            let a = build(&dir(), spec).unwrap();
            let other = SPECS.iter().find(|s| Some(s.ident) == spec.same_as).unwrap();
            let b = build(&dir(), other).unwrap();
            assert_eq!(a.by_nr, b.by_nr, "{}", spec.arch);
        }
    }
}
