//! `fuzz-kernel [--time S] [--mode seccomp|socket|both] [--seed N] [--out DIR]`:
//! the running kernel as the judge of random valid programs (run it through
//! `cargo xtask fuzz-kernel`). See `bpfconv_integration::fuzz_kernel`.
//!
//! Programs come from the project's one generator (`test_kit::gen` with
//! `Reach::KERNEL`: every opcode, ancillary loads, every jump shape, lengths
//! near the conversion limits); inputs from the same bytes (program
//! constants) plus the branch-reaching ones (`test_kit::branch`). Seccomp
//! inputs are made observable on x86_64: the arch is x86_64 (i386 for one
//! in four, its arguments cut to 32 bits) and the instruction pointer the
//! stub's. Every disagreement is written to `--out` as a JSON reproducer,
//! and again minimised (`-min.json`: instructions dropped and the packet cut
//! while the kernel still disagrees); the exit code is 1 when there was any.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use arbitrary::Unstructured;
use bpfconv_integration::fuzz_kernel::{self, Input, Tally};
use cbpf::uapi::audit::{AUDIT_ARCH_I386, AUDIT_ARCH_X86_64};
use cbpf::{Mode, SeccompData};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use test_data::require::{self, Need};
use test_kit::{branch, gen, SplitMix64};

const USAGE: &str = "usage: fuzz-kernel [--time SECONDS] [--mode seccomp|socket|both] [--seed N] [--out DIR]";

/// Random inputs drawn per program besides the branch-reaching ones.
const RANDOM_INPUTS: usize = 4;
/// Kernel judgements a disagreement's minimisation may spend.
const MINIMISE_BUDGET: usize = 2000;
/// At most this many branch-reaching inputs per program.
const MAX_BRANCH_INPUTS: usize = 64;

struct Args {
    time: Duration,
    modes: Vec<Mode>,
    seed: u64,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        time: Duration::from_secs(60),
        modes: vec![Mode::Seccomp, Mode::Socket],
        seed: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        out: PathBuf::from("target/fuzz-kernel"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--time" => args.time = Duration::from_secs(value()?.parse().map_err(|e| format!("--time: {e}"))?),
            "--seed" => args.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--out" => args.out = PathBuf::from(value()?),
            "--mode" => {
                args.modes = match value()?.as_str() {
                    "seccomp" => vec![Mode::Seccomp],
                    "socket" => vec![Mode::Socket],
                    "both" => vec![Mode::Seccomp, Mode::Socket],
                    other => return Err(format!("--mode: `{other}` is not seccomp, socket or both")),
                }
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let release = fuzz_kernel::kernel_release();
    let mut failed = false;
    for &mode in &args.modes {
        // A kernel that refuses to attach is a visible skip, and a failure
        // under CI=true (or BPFCONV_REQUIRE naming it), as in the tests.
        let need = if mode == Mode::Seccomp { Need::Kernel } else { Need::Socket };
        let why = fuzz_kernel::available(mode).map_err(|why| format!("the kernel refuses to attach here: {why}"));
        if require::have(&format!("fuzz-kernel --mode {mode}"), need, why).is_none() {
            continue;
        }
        eprintln!("fuzz-kernel --mode {mode} --seed {} --time {} (kernel {release})", args.seed, args.time.as_secs());
        match run_mode(mode, &args) {
            Ok(t) => {
                eprintln!(
                    "fuzz-kernel --mode {mode}: {} programs ({} accepted by both, {} refused by both, {} over optmem_max, \
                     {} too long for the kernel engine), {} inputs compared, {} not observable, {} disagreements",
                    t.programs,
                    t.accepted,
                    t.refused,
                    t.over_optmem,
                    t.not_run,
                    t.inputs,
                    t.not_observable,
                    t.disagreements
                );
                failed |= t.disagreements > 0;
            }
            Err(e) => {
                eprintln!("error: fuzz-kernel --mode {mode}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn progress(time: Duration) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(time.as_secs()), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{elapsed_precise}] {wide_bar} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

fn run_mode(mode: Mode, args: &Args) -> Result<Tally, String> {
    let salt = if mode == Mode::Seccomp { 0x5ecc } else { 0x50c4 };
    let mut rng = SplitMix64::new(args.seed ^ salt);
    let ips = kernel::stub_ips().map_err(|e| e.to_string())?;
    let bar = progress(args.time);
    bar.set_prefix(mode.to_string());
    let terminal = std::io::stderr().is_terminal();
    let start = Instant::now();
    let mut last_line = start;
    let mut tally = Tally::default();
    let mut index: u64 = 0;
    while start.elapsed() < args.time {
        let program_seed = rng.next_u64();
        let bytes = gen::seeded_bytes(program_seed, &gen::Reach::KERNEL);
        let mut u = Unstructured::new(&bytes);
        let Ok(gen::Generated { program, mut pool }) = gen::program_with(&mut u, mode, &gen::Reach::KERNEL) else {
            continue;
        };
        let mut inputs = Vec::new();
        match mode {
            Mode::Seccomp => {
                let mut data: Vec<SeccompData> =
                    branch::branch_inputs(&program).into_iter().take(MAX_BRANCH_INPUTS).collect();
                for _ in 0..RANDOM_INPUTS {
                    if let Ok(bytes) = gen::seccomp_data(&mut u, &mut pool) {
                        data.push(SeccompData::from_bytes(&bytes));
                    }
                }
                for (n, mut d) in data.into_iter().enumerate() {
                    // Observable on x86_64: its arch or i386's, the stub's ip.
                    if d.arch == AUDIT_ARCH_I386 || (d.arch != AUDIT_ARCH_X86_64 && n % 4 == 3) {
                        d.arch = AUDIT_ARCH_I386;
                        d.instruction_pointer = ips.int80;
                        d.args = d.args.map(|a| a & 0xffff_ffff);
                    } else {
                        d.arch = AUDIT_ARCH_X86_64;
                        d.instruction_pointer = ips.syscall;
                    }
                    inputs.push(Input::Seccomp(d));
                }
            }
            _ => {
                let mut packets: Vec<Vec<u8>> = branch::branch_packets(&program).into_iter().map(|p| p.data).collect();
                for _ in 0..RANDOM_INPUTS {
                    if let Ok(p) = gen::packet(&mut u, &mut pool) {
                        packets.push(p.data);
                    }
                }
                packets.sort();
                packets.dedup();
                packets.truncate(MAX_BRANCH_INPUTS + RANDOM_INPUTS);
                inputs.extend(packets.into_iter().map(Input::Packet));
            }
        }
        let found = fuzz_kernel::judge(program.original(), mode, &inputs, &mut tally)?;
        for mut repro in found {
            repro.found_by = format!("cargo xtask fuzz-kernel --mode {mode} --seed {} (program {index})", args.seed);
            let path = save(&args.out, &repro, &format!("{}-{}-{}-{index}", repro.mode, repro.kind, args.seed))?;
            bar.println(format!("disagreement ({}): {} ours {} kernel {}", repro.kind, path, repro.ours, repro.kernel));
            // The same disagreement on as few instructions and bytes as keep it.
            match fuzz_kernel::minimise(&repro, MINIMISE_BUDGET) {
                Ok(small) => {
                    let name = format!("{}-{}-{}-{index}-min", small.mode, small.kind, args.seed);
                    let path = save(&args.out, &small, &name)?;
                    bar.println(format!("  minimised to {} instructions: {path}", small.program.len()));
                }
                Err(e) => bar.println(format!("  not minimised: {e}")),
            }
        }
        index += 1;
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        bar.set_position(start.elapsed().as_secs().min(args.time.as_secs()));
        bar.set_message(format!(
            "{} programs ({:.0}/s), {} inputs ({:.0}/s), {} disagreements",
            tally.programs,
            tally.programs as f64 / secs,
            tally.inputs,
            tally.inputs as f64 / secs,
            tally.disagreements
        ));
        if !terminal && last_line.elapsed() >= Duration::from_secs(30) {
            last_line = Instant::now();
            eprintln!(
                "{mode} {:>5.0}s: {} programs, {} inputs, {} disagreements",
                secs, tally.programs, tally.inputs, tally.disagreements
            );
        }
    }
    bar.finish_and_clear();
    Ok(tally)
}

fn save(out: &std::path::Path, repro: &fuzz_kernel::Reproducer, name: &str) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let path = out.join(format!("{name}.json"));
    let mut text = serde_json::to_string_pretty(repro).map_err(|e| e.to_string())?;
    text.push('\n');
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.display().to_string())
}
