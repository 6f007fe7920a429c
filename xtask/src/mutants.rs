//! `cargo xtask mutants [--file NAME]... [--jobs N] [--timeout S]`: cargo-mutants
//! over the kernel mirrors, the classic interpreter (the converter's oracle),
//! the readers and printers of the classic text forms (bpf_asm, tcpdump's,
//! C with the UAPI names),
//! the running kernel as a seccomp engine (the rewrite, the zygote's bookkeeping)
//! and its eBPF door (loads, test runs and the `sk_buff` they build, the memory harness)
//! socket filters (the AF_UNIX path's `sk_buff`, what it cannot reproduce) and
//! forked children (the attach check, the benchmarks' samples, filter dumps),
//! the CLI's input and output (the input cap, text with a stray byte, atomic
//! writes, pcap captures),
//! the eBPF seccomp executor, the eBPF loader (its checks and
//! superinstructions), memory regions, socket helpers and plain interpreter,
//! the profile readers (runc's, moby's and seccompiler's rules), the
//! reference program, `compile`'s partition, decompile's multiplexing proof,
//! optimize's layout, tree planner, bytecode passes and choice of layout, the fast engine
//! (its tables, specialiser, argument trees and their native code,
//! partition, pc sets and stacks), and the equivalence
//! prover (`equiv`'s classes, circuit and solver), each with the narrowest
//! honest test set (the owning crate's tests that are about that file), then
//! one row per file: caught / missed / unviable / timeout. Fails if any
//! mutant is missed.
//!
//! Not part of `.ci/run`: each mutant is a rebuild, so a full run takes about
//! 15 hours on two cores. docs/mutants.md has the last results, the reason
//! each test set is what it is, and every excluded mutant (`.cargo/mutants.toml`).
//!
//! Installs cargo-mutants if it is missing (`cargo install --locked
//! cargo-mutants`). Results go to `target/mutants/<name>/mutants.out/`
//! (`missed.txt` lists the survivors, `diff/` shows each mutation).

use std::path::Path;
use std::process::Command;

const USAGE: &str = "usage: cargo xtask mutants [--file NAME]... [--jobs N] [--timeout SECONDS]";

/// One kernel mirror and the tests that must kill its mutants.
pub struct Target {
    /// Short name for `--file` and the output directory.
    pub name: &'static str,
    /// The file mutated, relative to the workspace root.
    pub file: &'static str,
    /// The package whose tests run.
    pub package: &'static str,
    /// `cargo test` target selection (no doctests: they never test these rules).
    pub tests: &'static [&'static str],
}

/// The kernel mirrors, the classic interpreter, the classic text forms, the eBPF crate's load path, ABI and plain interpreter, the kernel crate (engine, eBPF door, socket path, children),
/// the CLI (its input and output, the DOT graph, every command but `bench`), the mirrors of runc's,
/// moby's and seccompiler's profile rules, the reference program, `compile` and decompile's proof,
/// optimize's layout, planner, passes and choice of layout, the fast engine (every file of `seccomp/src/fast/` with a function
/// to mutate), the equivalence prover and the classes it cuts, and their test sets (see
/// docs/mutants.md for why each).
pub const TARGETS: [Target; 100] = [
    Target {
        name: "validate",
        file: "crates/cbpf/src/validate.rs",
        package: "bpfconv-cbpf",
        tests: &["--lib", "--test", "validate_*"],
    },
    Target {
        name: "convert",
        file: "crates/convert/src/filter.rs",
        package: "bpfconv-convert",
        tests: &["--lib", "--test", "filetest_listings", "--test", "socket_limits"],
    },
    Target {
        name: "cache",
        file: "crates/seccomp/src/cache.rs",
        package: "bpfconv-seccomp",
        tests: &["--lib", "--test", "cache_kernel", "--test", "arch_syscalls"],
    },
    Target {
        name: "op-tables",
        file: "crates/ebpf/src/isa/op/tables.rs",
        package: "bpfconv-ebpf",
        tests: &["--lib", "--test", "conformance", "--test", "interp_unit", "--test", "op_roundtrip"],
    },
    Target {
        name: "context",
        file: "crates/cbpf/src/exec/context.rs",
        package: "bpfconv-cbpf",
        tests: &["--lib", "--test", "interp_ops", "--test", "interp_filters", "--test", "interp_proptest"],
    },
    Target {
        name: "general",
        file: "crates/ebpf/src/exec/general.rs",
        package: "bpfconv-ebpf",
        tests: &[
            "--lib",
            "--test",
            "conformance",
            "--test",
            "interp_unit",
            "--test",
            "interp_memory",
            "--test",
            "interp_skb",
            "--test",
            "internal",
        ],
    },
    classic("interp", "crates/cbpf/src/exec/interp/mod.rs"),
    classic("interp-compile", "crates/cbpf/src/exec/interp/compile.rs"),
    classic("interp-tree", "crates/cbpf/src/exec/interp/tree.rs"),
    classic("interp-eq-set", "crates/cbpf/src/exec/interp/eq_set.rs"),
    classic("interp-ladder", "crates/cbpf/src/exec/interp/ladder.rs"),
    classic("trace", "crates/cbpf/src/exec/trace.rs"),
    text("text", "crates/cbpf/src/text/mod.rs"),
    text("text-asm", "crates/cbpf/src/text/asm.rs"),
    text("text-ddd", "crates/cbpf/src/text/ddd.rs"),
    text("text-pcap", "crates/cbpf/src/text/pcap.rs"),
    text("text-symbols", "crates/cbpf/src/text/symbols.rs"),
    text("text-c", "crates/cbpf/src/text/c/mod.rs"),
    text("text-c-lex", "crates/cbpf/src/text/c/lex.rs"),
    text("text-c-expr", "crates/cbpf/src/text/c/expr.rs"),
    text("text-c-read", "crates/cbpf/src/text/c/read.rs"),
    executor("executor", "crates/ebpf/src/exec/seccomp/mod.rs"),
    executor("executor-run", "crates/ebpf/src/exec/seccomp/run.rs"),
    executor("executor-ops", "crates/ebpf/src/exec/seccomp/ops.rs"),
    executor("executor-compile", "crates/ebpf/src/exec/seccomp/compile.rs"),
    executor("executor-chains", "crates/ebpf/src/exec/seccomp/chains.rs"),
    executor("executor-subset", "crates/ebpf/src/exec/seccomp/subset.rs"),
    executor("executor-trees", "crates/ebpf/src/exec/seccomp/trees.rs"),
    executor("executor-ladders", "crates/ebpf/src/exec/seccomp/ladders.rs"),
    ebpf("ebpf-load", "crates/ebpf/src/load/mod.rs"),
    ebpf("ebpf-load-check", "crates/ebpf/src/load/check.rs"),
    ebpf("ebpf-load-fuse", "crates/ebpf/src/load/fuse.rs"),
    ebpf("ebpf-load-ir", "crates/ebpf/src/load/ir.rs"),
    ebpf("ebpf-vm", "crates/ebpf/src/vm.rs"),
    ebpf("ebpf-memory", "crates/ebpf/src/abi/memory.rs"),
    ebpf("ebpf-skb", "crates/ebpf/src/abi/skb.rs"),
    ebpf("ebpf-helpers", "crates/ebpf/src/abi/helpers/mod.rs"),
    ebpf("ebpf-helpers-socket", "crates/ebpf/src/abi/helpers/socket.rs"),
    ebpf("ebpf-plain", "crates/ebpf/src/exec/plain.rs"),
    Target { name: "chain", file: "crates/chain/src/lib.rs", package: "bpfconv-chain", tests: &["--lib"] },
    Target { name: "ladder", file: "crates/chain/src/ladder.rs", package: "bpfconv-chain", tests: &["--lib"] },
    Target { name: "known", file: "crates/chain/src/known.rs", package: "bpfconv-chain", tests: &["--lib"] },
    policy("runc", "crates/policy/src/profile/runc.rs"),
    policy("docker", "crates/policy/src/profile/docker.rs"),
    policy("profile", "crates/policy/src/profile/mod.rs"),
    policy("seccompiler", "crates/policy/src/profile/seccompiler.rs"),
    policy("reference", "crates/policy/src/profile/reference.rs"),
    policy("decompile", "crates/policy/src/decompile.rs"),
    policy("compile", "crates/policy/src/compile.rs"),
    optimize("passes", "crates/optimize/src/passes.rs"),
    optimize("plan", "crates/optimize/src/plan.rs"),
    optimize("layout", "crates/optimize/src/layout.rs"),
    optimize("check", "crates/optimize/src/check.rs"),
    optimize("optimize", "crates/optimize/src/lib.rs"),
    Target {
        name: "kernel-engine",
        file: "crates/kernel/src/engine.rs",
        package: "bpfconv-kernel",
        tests: &["--lib", "--test", "kernel", "--test", "kernel_kill_cost"],
    },
    Target {
        name: "kernel-bpf",
        file: "crates/kernel/src/bpf.rs",
        package: "bpfconv-kernel",
        tests: &["--lib", "--test", "bpf"],
    },
    Target {
        name: "kernel-bpf-memory",
        file: "crates/kernel/src/bpf/memory.rs",
        package: "bpfconv-kernel",
        tests: &["--lib", "--test", "bpf"],
    },
    Target {
        name: "kernel-socket",
        file: "crates/kernel/src/socket.rs",
        package: "bpfconv-kernel",
        tests: &["--lib", "--test", "socket_attach", "--test", "socket_delivery"],
    },
    kernel_process("kernel-dump", "crates/kernel/src/dump.rs"),
    kernel_process("kernel-child", "crates/kernel/src/child.rs"),
    kernel_process("kernel-bench", "crates/kernel/src/bench.rs"),
    cli("cli-io", "crates/cli/src/io.rs"),
    cli("cli-pcap", "crates/cli/src/pcap.rs"),
    // The graph's exact text is pinned by its unit tests; `--test dot`
    // (Graphviz rendering every testdata filter) would only slow the many
    // mutants that make its loops endless.
    Target { name: "cli-dot", file: "crates/cli/src/dot.rs", package: "bpfconv-cli", tests: &["--bins"] },
    command("cli-analyze", "crates/cli/src/cmd/analyze.rs"),
    command("cli-compile", "crates/cli/src/cmd/compile.rs"),
    command("cli-disasm", "crates/cli/src/cmd/disasm.rs"),
    command("cli-dump", "crates/cli/src/cmd/dump.rs"),
    command("cli-optimize", "crates/cli/src/cmd/optimize.rs"),
    command("cli-profile", "crates/cli/src/cmd/profile.rs"),
    command("cli-cmd", "crates/cli/src/cmd/mod.rs"),
    command("cli-main", "crates/cli/src/main.rs"),
    command("cli-fail", "crates/cli/src/fail.rs"),
    command("cli-out", "crates/cli/src/out.rs"),
    command("cli-run", "crates/cli/src/cmd/run.rs"),
    command("cli-convert", "crates/cli/src/cmd/convert.rs"),
    command("cli-ebpf", "crates/cli/src/cmd/ebpf.rs"),
    command("cli-equiv", "crates/cli/src/cmd/equiv.rs"),
    command("cli-decompile", "crates/cli/src/cmd/decompile.rs"),
    bench("cli-bench", "crates/cli/src/cmd/bench/mod.rs"),
    bench("cli-bench-inputs", "crates/cli/src/cmd/bench/inputs.rs"),
    bench("cli-bench-seccomp", "crates/cli/src/cmd/bench/seccomp.rs"),
    bench("cli-bench-socket", "crates/cli/src/cmd/bench/socket.rs"),
    bench("cli-bench-jit", "crates/cli/src/cmd/bench/jit.rs"),
    bench("cli-bench-kernel", "crates/cli/src/cmd/bench/kernel.rs"),
    bench("cli-bench-report", "crates/cli/src/cmd/bench/report.rs"),
    Target { name: "equiv", file: "crates/equiv/src/lib.rs", package: "bpfconv-equiv", tests: EQUIV_TESTS },
    Target { name: "class", file: "crates/equiv/src/class.rs", package: "bpfconv-equiv", tests: EQUIV_TESTS },
    Target { name: "aig", file: "crates/equiv/src/aig.rs", package: "bpfconv-equiv", tests: EQUIV_TESTS },
    Target { name: "blast", file: "crates/equiv/src/blast.rs", package: "bpfconv-equiv", tests: EQUIV_TESTS },
    Target { name: "sat", file: "crates/equiv/src/sat.rs", package: "bpfconv-equiv", tests: EQUIV_TESTS },
    fast("fast-tree", "crates/seccomp/src/fast/tree.rs"),
    fast("fast-switch", "crates/seccomp/src/fast/switch_table.rs"),
    fast("fast-partition", "crates/seccomp/src/fast/partition.rs"),
    fast("fast-bits", "crates/seccomp/src/fast/bits.rs"),
    fast("fast-stack", "crates/seccomp/src/fast/stack.rs"),
    fast("fast", "crates/seccomp/src/fast/mod.rs"),
    fast("fast-specialize", "crates/seccomp/src/fast/specialize.rs"),
    fast("fast-native", "crates/seccomp/src/fast/native_code.rs"),
    Target {
        name: "classes",
        file: "crates/seccomp/src/analysis/classes.rs",
        package: "bpfconv-seccomp",
        tests: &["--lib", "--test", "analysis_cases", "--test", "analysis_filters", "--test", "fast_partition"],
    },
];

/// A file of the classic interpreter (the converter's oracle), with its
/// crate's tests that run it: every opcode in both contexts, the testdata
/// filters' kernel-checked vectors, the fast path against the trace on
/// random programs, and what it compiles the chain filetests to.
const fn classic(name: &'static str, file: &'static str) -> Target {
    Target {
        name,
        file,
        package: "bpfconv-cbpf",
        tests: &[
            "--lib",
            "--test",
            "interp_ops",
            "--test",
            "interp_filters",
            "--test",
            "interp_proptest",
            "--test",
            "chain_listings",
        ],
    }
}

/// A reader or printer of the classic text forms (bpf_asm, tcpdump's
/// `-d`/`-dd`/`-ddd`, C arrays with the UAPI headers' names), with the
/// crate's text suites: every error with its place and message, the
/// reference tools' outputs, every form's round trip, the nesting caps and
/// the property tests.
const fn text(name: &'static str, file: &'static str) -> Target {
    Target { name, file, package: "bpfconv-cbpf", tests: TEXT_TESTS }
}

const TEXT_TESTS: &[&str] = &[
    "--lib",
    "--test",
    "text_errors",
    "--test",
    "text_parse",
    "--test",
    "text_roundtrip",
    "--test",
    "text_depth",
    "--test",
    "text_proptest",
];

/// A file of the eBPF seccomp executor (what the `ebpf` engine runs a
/// converted filter on), with its unit tests (every entry of chains,
/// ladders and trees against the general interpreter) and the converter's
/// real output (`tests/converted_programs.rs`: every testdata filter every
/// way, the chain filetests' executor listings, the converter filetests'
/// runs).
const fn executor(name: &'static str, file: &'static str) -> Target {
    Target {
        name,
        file,
        package: "bpfconv-ebpf",
        tests: &[
            "--lib",
            "--test",
            "converted_programs",
            "--test",
            "interp_unit",
            "--test",
            "interp_memory",
            "--test",
            "interp_alloc",
        ],
    }
}

/// A file of the eBPF crate's load path (the structural checks, the
/// pre-decoding and fusion, the VM's front door), its run-time ABI (memory
/// regions, the socket buffer, helpers) or the plain interpreter, with the
/// crate's suites: the RFC 9669 conformance suite, the interpreter's unit,
/// memory, socket-buffer and allocation tests, the converter's real output
/// on every engine, the op round trip, the plain interpreter against the
/// general one on random programs (fusion shapes among them) and the load
/// checks' exact errors.
const fn ebpf(name: &'static str, file: &'static str) -> Target {
    Target { name, file, package: "bpfconv-ebpf", tests: EBPF_TESTS }
}

const EBPF_TESTS: &[&str] = &[
    "--lib",
    "--test",
    "conformance",
    "--test",
    "interp_unit",
    "--test",
    "interp_memory",
    "--test",
    "interp_skb",
    "--test",
    "internal",
    "--test",
    "converted_programs",
    "--test",
    "interp_alloc",
    "--test",
    "op_roundtrip",
    "--test",
    "plain_proptest",
    "--test",
    "load_checks",
];

/// A file of the fast engine (its argument trees, partition, pc sets and
/// filter stacks), with the seccomp crate's tests of that engine: its unit
/// tests, every testdata filter's vectors and a sweep around every table
/// against the classic interpreter, the other arches, the partition, the
/// budgets, and random valid programs.
const fn fast(name: &'static str, file: &'static str) -> Target {
    Target {
        name,
        file,
        package: "bpfconv-seccomp",
        tests: &[
            "--lib",
            "--test",
            "fast_filters",
            "--test",
            "fast_other_arches",
            "--test",
            "fast_partition",
            "--test",
            "fast_proptest",
            "--test",
            "fast_budget",
        ],
    }
}

/// A file of the policy crate, with that crate's unit tests (the suites
/// against libseccomp sit above it).
const fn policy(name: &'static str, file: &'static str) -> Target {
    Target { name, file, package: "bpfconv-policy", tests: &["--lib"] }
}

/// A file of the optimiser, with its unit tests and the layouts of
/// partitions (every value reached, far targets, the planner's budget).
/// The kernel crate's forked children: the attach check, the benchmarks
/// and the filter dumps, with the tests that fork them.
const fn kernel_process(name: &'static str, file: &'static str) -> Target {
    Target { name, file, package: "bpfconv-kernel", tests: &["--lib", "--test", "kernel", "--test", "dump"] }
}

/// The CLI's input and output: its unit tests, the hostile-I/O suite and
/// the CLI contract's.
const fn cli(name: &'static str, file: &'static str) -> Target {
    Target { name, file, package: "bpfconv-cli", tests: &["--bins", "--test", "hostile_io", "--test", "cli"] }
}

/// A CLI command with the suites that run the binary: the CLI contract,
/// `compile`, the profile commands, hostile I/O, the attach check, the hook
/// targets, `run`'s edges and the bounded-work suite (the `--max-steps`
/// flags).
const fn command(name: &'static str, file: &'static str) -> Target {
    Target { name, file, package: "bpfconv-cli", tests: COMMAND_TESTS }
}

const COMMAND_TESTS: &[&str] = &[
    "--bins",
    "--test",
    "cli",
    "--test",
    "compile",
    "--test",
    "policy",
    "--test",
    "hostile_io",
    "--test",
    "check_attach",
    "--test",
    "hook",
    "--test",
    "run",
    "--test",
    "bounded_work",
];

/// `bench`: its unit tests (the timing plan and arithmetic, the kernel's
/// checks and columns, the report's exact text and JSON) and the suite that
/// runs the binary on every testdata filter and engine.
const fn bench(name: &'static str, file: &'static str) -> Target {
    Target { name, file, package: "bpfconv-cli", tests: &["--bins", "--test", "bench"] }
}

const fn optimize(name: &'static str, file: &'static str) -> Target {
    Target { name, file, package: "bpfconv-optimize", tests: &["--lib", "--test", "layout"] }
}

/// The prover's own tests: the unit tests and the ones that hold it to the
/// classic interpreter (every ALU op, every layout of a compare).
const EQUIV_TESTS: &[&str] = &["--lib", "--test", "alu", "--test", "layouts"];

/// The outcome counts of one run, read from `mutants.out/`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub caught: usize,
    pub missed: usize,
    pub unviable: usize,
    pub timeout: usize,
}

/// Counts the non-empty lines of `caught.txt`, `missed.txt`, `unviable.txt`
/// and `timeout.txt` (one mutant per line); a missing file counts 0.
pub fn counts(out_dir: &Path) -> Counts {
    let lines = |name: &str| {
        std::fs::read_to_string(out_dir.join(name)).map_or(0, |t| t.lines().filter(|l| !l.trim().is_empty()).count())
    };
    Counts {
        caught: lines("caught.txt"),
        missed: lines("missed.txt"),
        unviable: lines("unviable.txt"),
        timeout: lines("timeout.txt"),
    }
}

/// The table `cargo xtask mutants` prints.
pub fn table(rows: &[(&str, Counts)]) -> String {
    let mut out = format!("{:<34} {:>7} {:>7} {:>9} {:>8}\n", "file", "caught", "missed", "unviable", "timeout");
    for (file, c) in rows {
        out.push_str(&format!("{file:<34} {:>7} {:>7} {:>9} {:>8}\n", c.caught, c.missed, c.unviable, c.timeout));
    }
    out
}

struct Args {
    names: Vec<String>,
    jobs: String,
    /// Per-mutant test timeout; by default cargo-mutants sets it from the
    /// unmutated tree's test time (at least 20 s), which ends a mutant that
    /// loops forever quickly.
    timeout: Option<String>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut out = Args { names: Vec::new(), jobs: "2".into(), timeout: None };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--file" => out.names.push(value()?),
            "--jobs" => out.jobs = value()?,
            "--timeout" => out.timeout = Some(value()?),
            _ => return Err(USAGE.to_string()),
        }
    }
    for name in &out.names {
        if !TARGETS.iter().any(|t| t.name == name) {
            let known: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
            return Err(format!("unknown --file {name}: one of {}", known.join(", ")));
        }
    }
    Ok(out)
}

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    let args = parse(args)?;
    crate::ensure_cargo_tool(&["mutants", "--version"], "cargo-mutants", "")?;
    let root = crate::workspace_root();
    let mut rows = Vec::new();
    for t in TARGETS.iter().filter(|t| args.names.is_empty() || args.names.iter().any(|n| n == t.name)) {
        let out = root.join("target/mutants").join(t.name);
        // cargo-mutants creates `mutants.out` but not the directories above it.
        std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
        eprintln!("== {} ({} tests: {})", t.file, t.package, t.tests.join(" "));
        // Exit codes: 0 all caught, 2 some missed, 3 some timed out; anything
        // else (1 usage, 4 the unmutated tree fails its tests) is an error.
        let mut cmd = Command::new("cargo");
        // Under CI a test whose prerequisite is missing (the kernel, bpf(2),
        // libseccomp) fails instead of skipping: here a skip would let every
        // mutant it should catch survive, and the baseline fails loudly.
        cmd.env("CI", "true");
        // ... and so do the two that depend on the host's kernel, as in
        // `.ci/run` (CI's machine is built like ours).
        if std::env::var_os("BPFCONV_REQUIRE").is_none() {
            cmd.env("BPFCONV_REQUIRE", "int80,ptrace");
        }
        cmd.current_dir(&root).args(["mutants", "--file", t.file, "--test-package", t.package, "--jobs", &args.jobs]);
        if let Some(timeout) = &args.timeout {
            cmd.args(["--timeout", timeout]);
        }
        let status = cmd
            .arg("--output")
            .arg(&out)
            .arg("--")
            .args(t.tests)
            .status()
            .map_err(|e| format!("cannot run cargo mutants: {e}"))?;
        if !matches!(status.code(), Some(0 | 2 | 3)) {
            return Err(format!("cargo mutants on {} failed ({status})", t.file));
        }
        rows.push((t.file, counts(&out.join("mutants.out"))));
    }
    println!("{}", table(&rows));
    let missed: Vec<&str> = rows.iter().filter(|(_, c)| c.missed > 0).map(|(f, _)| *f).collect();
    if missed.is_empty() {
        Ok(())
    } else {
        Err(format!("mutants survived in {} (see target/mutants/*/mutants.out/missed.txt)", missed.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_one_mutant_per_line() {
        let dir = std::env::temp_dir().join(format!("xtask-mutants-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("caught.txt"), "a.rs:1:1: x\na.rs:2:1: y\n").unwrap();
        std::fs::write(dir.join("missed.txt"), "a.rs:3:1: z\n\n").unwrap();
        std::fs::write(dir.join("timeout.txt"), "").unwrap();
        let c = counts(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(c, Counts { caught: 2, missed: 1, unviable: 0, timeout: 0 });
        let t = table(&[("a.rs", c)]);
        assert!(t.lines().nth(1).unwrap().split_whitespace().eq(["a.rs", "2", "1", "0", "0"]), "{t}");
    }

    #[test]
    fn every_target_file_exists_and_names_are_unique() {
        let root = crate::workspace_root();
        for (i, t) in TARGETS.iter().enumerate() {
            assert!(root.join(t.file).is_file(), "{}", t.file);
            assert!(TARGETS.iter().skip(i + 1).all(|u| u.name != t.name), "{}", t.name);
        }
        assert!(parse(&["--file".into(), "nope".into()]).is_err());
        assert_eq!(parse(&["--file".into(), "chain".into()]).unwrap().names, ["chain"]);
    }
}
