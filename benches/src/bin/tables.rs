//! `tables`: measures and prints the four published seccomp tables.
//!
//! Run through `cargo xtask bench [--quick] [--table A|B|C|D|all] [--json FILE]`,
//! which builds this binary in release mode. Prints Markdown to stdout and
//! writes `target/bench/tables.md`, `target/bench/position.svg` and
//! `target/bench/length.svg`; with `--json FILE`, the JSON of FORMATS.md §5.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use bpfconv_benches::measure::Budget;
use bpfconv_benches::plot::{self, XScale};
use bpfconv_benches::report::{self, Machine, Report};
use bpfconv_benches::run::{self, Options};
use bpfconv_benches::tables::{self, TableId};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

/// Reproduces the published seccomp benchmark tables on our engines and the running kernel.
#[derive(Debug, Parser)]
#[command(name = "tables")]
struct Args {
    /// Fewer, shorter samples: finishes in well under three minutes on two cores.
    #[arg(long)]
    quick: bool,
    /// Which table: A, B, C, D or all.
    #[arg(long, default_value = "all")]
    table: String,
    /// Also write the results as JSON (FORMATS.md §5) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Skip the running-kernel columns (kernel, kernel-jit) and the attach timings.
    #[arg(long)]
    no_kernel: bool,
    /// Where tables.md and the SVG plots go.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Output of a command, trimmed, or `None` if it failed.
fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).current_dir(workspace_root()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn machine() -> Machine {
    let cpu = read_trimmed("/proc/cpuinfo")
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernel = read_trimmed("/proc/sys/kernel/osrelease")
        .map_or_else(|| std::env::consts::OS.to_string(), |r| format!("Linux {r}"));
    let rustc = command_output("rustc", &["--version"]).unwrap_or_else(|| "unknown".to_string());
    let git = match command_output("git", &["rev-parse", "--short=12", "HEAD"]) {
        Some(rev) => {
            let dirty = command_output("git", &["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{rev}-dirty")
            } else {
                rev
            }
        }
        None => "unknown".to_string(),
    };
    Machine { machine: format!("{cpu}, {cores} cores, {kernel}"), rustc, git }
}

/// Timed loops per `kernel::time_syscalls` call.
fn kernel_samples_per_run() -> usize {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        kernel::bench::REPEATS
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        0
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let ids: Vec<TableId> = match args.table.as_str() {
        "all" | "ALL" => TableId::ALL.to_vec(),
        one => vec![TableId::parse(one).ok_or_else(|| format!("unknown table `{one}` (A, B, C, D or all)"))?],
    };
    let budget = if args.quick { Budget::QUICK } else { Budget::FULL };
    let (kernel_rounds, kernel_calls) = run::kernel_rounds(budget);
    let mut notes = vec![format!(
        "mode: {} ({} samples of ~{} µs per in-process cell; kernel: {} rounds, every kernel cell once a round in a \
         fresh child of {} loops of {} calls)",
        if args.quick { "--quick" } else { "full" },
        budget.samples,
        budget.sample_time.as_micros(),
        kernel_rounds,
        kernel_samples_per_run(),
        kernel_calls
    )];
    let kernel = if args.no_kernel {
        notes.push("kernel column: disabled (--no-kernel)".to_string());
        false
    } else {
        match run::kernel_status() {
            Ok(()) => {
                let jit = read_trimmed("/proc/sys/net/core/bpf_jit_enable").unwrap_or_else(|| "?".to_string());
                let harden = read_trimmed("/proc/sys/net/core/bpf_jit_harden").unwrap_or_else(|| "?".to_string());
                notes.push(format!(
                    "kernel column: seccomp filters installed unmodified in a forked child; per-thread CPU time; \
                     net.core.bpf_jit_enable = {jit}, bpf_jit_harden = {harden} (with CONFIG_BPF_JIT_ALWAYS_ON the \
                     kernel only runs JIT-compiled filters)"
                ));
                true
            }
            Err(why) => {
                notes.push(format!("kernel column: unavailable ({why})"));
                false
            }
        }
    };
    let kernel_jit = if args.no_kernel {
        false
    } else {
        match run::kernel_jit_status() {
            Ok(()) => true,
            Err(why) => {
                notes.push(format!("kernel-jit column: unavailable ({why})"));
                false
            }
        }
    };
    let opts = Options { budget, kernel, kernel_jit };
    let built: Vec<tables::Table> =
        ids.iter().map(|&id| tables::build(id)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    // The length sweep feeds length.svg; it runs with the full set of tables.
    let sweep_rows =
        if ids.len() == TableId::ALL.len() { tables::length_sweep().map_err(|e| e.to_string())? } else { Vec::new() };
    let total = built.iter().map(|t| run::table_cells(t, opts)).sum::<u64>()
        + run::cells_in(&sweep_rows, opts)
        + run::conversion_cells();
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let mut progress = |what: &str| {
        bar.inc(1);
        bar.set_message(what.to_string());
    };
    let mut results = Vec::with_capacity(built.len());
    for table in &built {
        results.push(run::measure_table(table, opts, &mut progress));
    }
    let sweep = run::measure_rows(&sweep_rows, "length", opts, &mut progress);
    let conversions = run::measure_conversions(opts, &mut progress).map_err(|e| e.to_string())?;
    bar.finish_and_clear();

    let report = Report { machine: machine(), notes, tables: results, conversions, sweep };
    let markdown = report::markdown(&report);
    print!("{markdown}");

    let out_dir = args.out_dir.clone().unwrap_or_else(|| workspace_root().join("target").join("bench"));
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("create {}: {e}", out_dir.display()))?;
    let md_path = out_dir.join("tables.md");
    std::fs::write(&md_path, &markdown).map_err(|e| format!("write {}: {e}", md_path.display()))?;
    let mut written = vec![md_path];
    let charts = [
        (
            "position.svg",
            "Table D: cost vs position of getppid in a 306-syscall allow-list",
            "position of getppid (comparison #)",
            XScale::Linear,
            plot::position_series(&report),
        ),
        (
            "length.svg",
            "Cost vs filter length: allow-lists checking getppid last",
            "classic instructions in the filter (log scale)",
            XScale::Log2,
            plot::length_series(&report),
        ),
    ];
    for (file, title, x_label, x_scale, series) in charts {
        if series.is_empty() {
            continue;
        }
        let path = out_dir.join(file);
        let svg = plot::line_chart_svg(title, x_label, &x_scale, &series)?;
        std::fs::write(&path, svg).map_err(|e| format!("plot {}: {e}", path.display()))?;
        written.push(path);
    }
    if let Some(json_path) = &args.json {
        let text = serde_json::to_string_pretty(&report::json(&report)).map_err(|e| e.to_string())?;
        std::fs::write(json_path, text + "\n").map_err(|e| format!("write {}: {e}", json_path.display()))?;
        written.push(json_path.clone());
    }
    for path in written {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
