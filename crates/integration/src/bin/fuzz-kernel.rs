//! `fuzz-kernel [--time S] [--mode seccomp|socket|both|ebpf|hook] [--seed N] [--out DIR]`:
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
//!
//! `--mode ebpf` judges our eBPF interpreter instead: general programs from
//! `test_kit::gen_ebpf`, run by the kernel behind `kernel::bpf::memory`'s
//! XDP harness (see `bpfconv_integration::fuzz_kernel::ebpf`); it reports
//! the verifier's acceptance rate and its reasons for refusing.
//!
//! `--mode hook` judges the hook code generator: socket filters from the
//! same generator, converted for xdp, tc and socket, must load (or be
//! refused with the typed error) and return on every packet's test run what
//! the classic interpreter returns (see `bpfconv_integration::fuzz_hook`).

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

const USAGE: &str = "usage: fuzz-kernel [--time SECONDS] [--mode seccomp|socket|both|ebpf|hook] [--seed N] [--out DIR]";

/// Random inputs drawn per program besides the branch-reaching ones.
const RANDOM_INPUTS: usize = 4;
/// Kernel judgements a disagreement's minimisation may spend.
const MINIMISE_BUDGET: usize = 2000;
/// At most this many branch-reaching inputs per program.
const MAX_BRANCH_INPUTS: usize = 64;

struct Args {
    time: Duration,
    modes: Vec<Mode>,
    /// `--mode ebpf`: general eBPF programs instead of classic ones.
    ebpf: bool,
    /// `--mode hook`: the hook code generator on classic socket filters.
    hook: bool,
    seed: u64,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        time: Duration::from_secs(60),
        modes: vec![Mode::Seccomp, Mode::Socket],
        ebpf: false,
        hook: false,
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
                let mode = value()?;
                args.modes = match mode.as_str() {
                    "seccomp" => vec![Mode::Seccomp],
                    "socket" => vec![Mode::Socket],
                    "both" => vec![Mode::Seccomp, Mode::Socket],
                    "ebpf" | "hook" => Vec::new(),
                    other => return Err(format!("--mode: `{other}` is not seccomp, socket, both, ebpf or hook")),
                };
                args.ebpf = mode == "ebpf";
                args.hook = mode == "hook";
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
        let need = if mode == Mode::Seccomp { Need::Kernel } else { Need::Socket };
        let why = fuzz_kernel::available(mode).map_err(|why| format!("the kernel refuses to attach here: {why}"));
        let summary = |t: &Tally| {
            let text = format!(
                "{} programs ({} accepted by both, {} refused by both, {} over optmem_max, \
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
            (text, t.disagreements > 0)
        };
        failed |= session(&mode.to_string(), &args, &release, (need, why), || run_mode(mode, &args), summary);
    }
    if args.ebpf {
        failed |= ebpf_mode::main(&args, &release);
    }
    if args.hook {
        failed |= hook_mode::main(&args, &release);
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

/// One mode from start to summary; true when it found a disagreement or
/// failed. A kernel that cannot take part (`probe`, naming the [`Need`])
/// is a visible skip, and a failure under CI=true (or BPFCONV_REQUIRE
/// naming it), as in the tests. `summary` says the tally in a line and
/// whether it holds a disagreement.
fn session<T, P>(
    mode: &str,
    args: &Args,
    release: &str,
    probe: (Need, Result<P, String>),
    run: impl FnOnce() -> Result<T, String>,
    summary: impl FnOnce(&T) -> (String, bool),
) -> bool {
    if require::have(&format!("fuzz-kernel --mode {mode}"), probe.0, probe.1).is_none() {
        return false;
    }
    eprintln!("fuzz-kernel --mode {mode} --seed {} --time {} (kernel {release})", args.seed, args.time.as_secs());
    match run() {
        Ok(t) => {
            let (text, disagreed) = summary(&t);
            eprintln!("fuzz-kernel --mode {mode}: {text}");
            disagreed
        }
        Err(e) => {
            eprintln!("error: fuzz-kernel --mode {mode}: {e}");
            true
        }
    }
}

fn run_mode(mode: Mode, args: &Args) -> Result<Tally, String> {
    let salt = if mode == Mode::Seccomp { 0x5ecc } else { 0x50c4 };
    let mut rng = SplitMix64::new(args.seed ^ salt);
    let ips = kernel::stub_ips().map_err(|e| e.to_string())?;
    let step = |tally: &mut Tally, index: u64, bar: &ProgressBar| {
        let program_seed = rng.next_u64();
        let bytes = gen::seeded_bytes(program_seed, &gen::Reach::KERNEL);
        let mut u = Unstructured::new(&bytes);
        let Ok(gen::Generated { program, mut pool }) = gen::program_with(&mut u, mode, &gen::Reach::KERNEL) else {
            return Ok(false);
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
        let found = fuzz_kernel::judge(program.original(), mode, &inputs, tally)?;
        for mut repro in found {
            repro.origin.found_by =
                format!("cargo xtask fuzz-kernel --mode {mode} --seed {} (program {index})", args.seed);
            let line = format!("disagreement ({}): ours {} kernel {}", repro.kind, repro.ours, repro.kernel);
            // The same disagreement on as few instructions and bytes as keep it.
            let small = fuzz_kernel::minimise(&repro, MINIMISE_BUDGET);
            let name = format!("{}-{}-{}-{index}", repro.mode, repro.kind, args.seed);
            record(&args.out, bar, &name, &repro, &line, small, |r| r.program.len())?;
        }
        Ok(true)
    };
    let status = |tally: &Tally, secs: f64| rates(tally.programs, tally.inputs, "inputs", tally.disagreements, secs);
    run_for(args, mode.to_string(), Tally::default(), step, status)
}

/// `N programs (N/s), N inputs (N/s), N disagreements` after `secs` seconds.
fn rates(programs: u64, inputs: u64, inputs_are: &str, disagreements: u64, secs: f64) -> String {
    let (p, i) = (programs as f64 / secs, inputs as f64 / secs);
    format!("{programs} programs ({p:.0}/s), {inputs} {inputs_are} ({i:.0}/s), {disagreements} disagreements")
}

/// One mode's loop: `step` (one program: the tally, the program's index,
/// the bar to print findings on; false for a program it skipped, which is
/// not counted) until `args.time` is up, the bar showing `status` (the
/// tally, the seconds so far) after each program.
fn run_for<T>(
    args: &Args,
    prefix: String,
    mut tally: T,
    mut step: impl FnMut(&mut T, u64, &ProgressBar) -> Result<bool, String>,
    status: impl Fn(&T, f64) -> String,
) -> Result<T, String> {
    let bar = progress(args.time);
    bar.set_prefix(prefix);
    let terminal = std::io::stderr().is_terminal();
    let start = Instant::now();
    let mut last_line = start;
    let mut index: u64 = 0;
    while start.elapsed() < args.time {
        if !step(&mut tally, index, &bar)? {
            continue;
        }
        index += 1;
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        tick(&bar, start, args.time, &mut last_line, terminal, status(&tally, secs));
    }
    bar.finish_and_clear();
    Ok(tally)
}

/// Saves a disagreement as `name.json` and its minimised form (with its
/// length in instructions) as `name-min.json` under `out`, saying so on the bar.
fn record<R: serde::Serialize>(
    out: &std::path::Path,
    bar: &ProgressBar,
    name: &str,
    repro: &R,
    line: &str,
    minimised: Result<R, String>,
    len: impl Fn(&R) -> usize,
) -> Result<(), String> {
    let path = save(out, repro, name)?;
    bar.println(format!("{line} {path}"));
    match minimised {
        Ok(small) => {
            let len = len(&small);
            let path = save(out, &small, &format!("{name}-min"))?;
            bar.println(format!("  minimised to {len} instructions: {path}"));
        }
        Err(e) => bar.println(format!("  not minimised: {e}")),
    }
    Ok(())
}

/// Moves the bar on and shows `message`; where stderr is no terminal (CI's
/// log), prints it every 30 s instead.
fn tick(bar: &ProgressBar, start: Instant, time: Duration, last_line: &mut Instant, terminal: bool, message: String) {
    bar.set_position(start.elapsed().as_secs().min(time.as_secs()));
    if !terminal && last_line.elapsed() >= Duration::from_secs(30) {
        *last_line = Instant::now();
        eprintln!("{} {:>5.0}s: {message}", bar.prefix(), start.elapsed().as_secs_f64());
    }
    bar.set_message(message);
}

fn save(out: &std::path::Path, repro: &impl serde::Serialize, name: &str) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let path = out.join(format!("{name}.json"));
    let mut text = serde_json::to_string_pretty(repro).map_err(|e| e.to_string())?;
    text.push('\n');
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.display().to_string())
}

/// `--mode ebpf` (see the module docs).
mod ebpf_mode {
    use super::*;
    use bpfconv_integration::fuzz_kernel::ebpf::{self, EbpfTally};
    use test_kit::gen_ebpf;

    /// Memories drawn per program.
    const INPUTS: usize = 8;

    /// Runs the mode; true when it found a disagreement or failed.
    pub fn main(args: &Args, release: &str) -> bool {
        let why = ebpf::available().map_err(|why| format!("the kernel refuses to load XDP programs here: {why}"));
        let summary = |t: &EbpfTally| {
            let mut text = format!(
                "{} programs, {} accepted by the verifier ({:.1}%), {} refused, {} inputs compared, {} disagreements",
                t.programs,
                t.accepted,
                t.acceptance_percent(),
                t.refused_total(),
                t.inputs,
                t.disagreements
            );
            let mut reasons: Vec<(&String, &u64)> = t.refused.iter().collect();
            reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for (reason, n) in reasons {
                text.push_str(&format!("\n  refused {n:>8}: {reason}"));
            }
            (text, t.disagreements > 0)
        };
        session("ebpf", args, release, (Need::Bpf, why), || run(args), summary)
    }

    fn run(args: &Args) -> Result<EbpfTally, String> {
        let mut rng = SplitMix64::new(args.seed ^ 0xeb9f);
        let step = |tally: &mut EbpfTally, index: u64, bar: &ProgressBar| {
            let bytes = gen_ebpf::seeded_bytes(rng.next_u64());
            let mut u = Unstructured::new(&bytes);
            let Ok(gen_ebpf::Generated { insns, mem_len, mut pool }) = gen_ebpf::program(&mut u) else {
                return Ok(false);
            };
            let inputs: Vec<Vec<u8>> =
                (0..INPUTS).filter_map(|_| gen_ebpf::memory(&mut u, mem_len, &mut pool).ok()).collect();
            for mut repro in ebpf::judge(&insns, mem_len, &inputs, tally)? {
                repro.origin.found_by =
                    format!("cargo xtask fuzz-kernel --mode ebpf --seed {} (program {index})", args.seed);
                let line =
                    format!("disagreement ({}):\n  ours   {}\n  kernel {}\n ", repro.kind, repro.ours, repro.kernel);
                let small = ebpf::minimise(&repro, MINIMISE_BUDGET);
                let name = format!("ebpf-{}-{}-{index}", repro.kind, args.seed);
                record(&args.out, bar, &name, &repro, &line, small, |r| r.program.len())?;
            }
            Ok(true)
        };
        let status = |tally: &EbpfTally, secs: f64| {
            format!(
                "{} programs ({:.0}/s), {:.1}% accepted, {} inputs, {} disagreements",
                tally.programs,
                tally.programs as f64 / secs,
                tally.acceptance_percent(),
                tally.inputs,
                tally.disagreements
            )
        };
        run_for(args, "ebpf".into(), EbpfTally::default(), step, status)
    }
}

/// `--mode hook` (see the module docs).
mod hook_mode {
    use super::*;
    use bpfconv_integration::fuzz_hook::{self, HookTally, Packet};

    /// At most this many branch-reaching packets per program.
    const MAX_BRANCH_PACKETS: usize = 32;

    /// Runs the mode; true when it found a disagreement or failed.
    pub fn main(args: &Args, release: &str) -> bool {
        let why = kernel::bpf::available().map_err(|why| format!("the kernel refuses to load programs here: {why}"));
        session("hook", args, release, (Need::Bpf, why), || run(args), |t| (t.to_string(), t.disagreements > 0))
    }

    /// Programs from `test_kit::gen` (`Reach::KERNEL`), packets from their
    /// branch-reaching inputs and random ones (each with its `mark`, which
    /// goes into the test run's context), judged for every target.
    fn run(args: &Args) -> Result<HookTally, String> {
        let mut rng = SplitMix64::new(args.seed ^ 0x600c);
        let step = |tally: &mut HookTally, index: u64, bar: &ProgressBar| {
            let bytes = gen::seeded_bytes(rng.next_u64(), &gen::Reach::KERNEL);
            let mut u = Unstructured::new(&bytes);
            let Ok(gen::Generated { program, mut pool }) = gen::program_with(&mut u, Mode::Socket, &gen::Reach::KERNEL)
            else {
                return Ok(false);
            };
            let mut inputs: Vec<test_kit::SocketInput> =
                branch::branch_packets(&program).into_iter().take(MAX_BRANCH_PACKETS).collect();
            for _ in 0..RANDOM_INPUTS {
                if let Ok(p) = gen::packet(&mut u, &mut pool) {
                    inputs.push(p);
                }
            }
            let mut packets: Vec<Packet> =
                inputs.into_iter().map(|i| Packet { mark: i.meta.mark, data: i.data }).collect();
            packets.sort_by(|a, b| (&a.data, a.mark).cmp(&(&b.data, b.mark)));
            packets.dedup();
            for mut repro in fuzz_hook::judge(&program, &packets, tally)? {
                repro.found_by = format!("cargo xtask fuzz-kernel --mode hook --seed {} (program {index})", args.seed);
                let line = format!(
                    "disagreement ({} {}): ours {} kernel {}",
                    repro.target, repro.kind, repro.ours, repro.kernel
                );
                let small = fuzz_hook::minimise(&repro, MINIMISE_BUDGET);
                let name = format!("hook-{}-{}-{}-{index}", repro.target, repro.kind, args.seed);
                record(&args.out, bar, &name, &repro, &line, small, |r| r.program.len())?;
            }
            Ok(true)
        };
        let status =
            |tally: &HookTally, secs: f64| rates(tally.programs, tally.inputs, "results", tally.disagreements, secs);
        run_for(args, "hook".into(), HookTally::default(), step, status)
    }
}
