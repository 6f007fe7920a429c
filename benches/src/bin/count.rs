//! Instruction counts per evaluation for `cargo xtask callgrind`: one
//! engine's runs on one filter's deepest vector, or on all its vectors in
//! turn, inside one `#[inline(never)]` function (`measure`,
//! `measure_mix`), so callgrind's `--toggle-collect=*measure*` counts only
//! them.
//!
//! ```text
//! count list                       # every filter of testdata/filters (and PROFILES), its deepest vector's depth and its vector count
//! count FILTER convert RUNS        # RUNS conversions (convert::convert)
//! count synthetic:N convert RUNS   # the same on synthetic_allow_list(N) (N <= 4096)
//! count FILTER ENGINE RUNS         # RUNS evaluations (ENGINE: cbpf, ebpf-exec, ebpf-general, fast, cbpf-plain, ebpf-plain)
//! count FILTER ENGINE RUNS mix     # RUNS passes over every vector, in file order (the mix)
//! count FILTER listing             # the classic interpreter's start, ops and chains (Interp::chain_listing)
//! ```
//!
//! The deepest vector is the one of `FILTER.vectors.jsonl` on which the
//! classic interpreter executes the most instructions (the first of equals).
//! The mix is every vector in turn, as `bpfconv bench`'s mix row cycles
//! through its inputs: a pass costs the sum of the vectors' paths, so
//! instructions per evaluation are callgrind's total over RUNS times the
//! vector count `list` prints.
//! Engines: `cbpf` (`Interp::run_seccomp`), `ebpf-exec` (the seccomp
//! executor, `Vm::run_seccomp_uncounted`), `ebpf-general` (the general eBPF
//! interpreter: loaded without superinstructions, `Vm::run_seccomp`) and
//! `fast` (`FastFilter::eval_bytes`), and the plain models of the kernel's
//! interpreters of each era: `cbpf-plain` (`cbpf::plain`, 3.14's
//! `sk_run_filter()`) and `ebpf-plain` (`ebpf::plain`, `___bpf_prog_run()`).

use std::hint::black_box;
use std::process::ExitCode;

use bpfconv_benches::filters::{load_profile_endian, load_vectors, synthetic_allow_list, with_vectors, Filter};
use cbpf::raw::Endian;

const ENGINES: [&str; 6] = ["cbpf", "ebpf-exec", "ebpf-general", "fast", "cbpf-plain", "ebpf-plain"];

/// The libseccomp filters of testdata/profiles counted besides
/// testdata/filters, each with the vectors it is checked with and the byte
/// order of its records: docker_like_opt2's deepest input (a tree leaf,
/// then argument checks) is the engine table's slowest cell for both
/// interpreters; s390x (libseccomp's output for that arch, big-endian) is
/// its other filter over 3x the kernel's JIT.
const PROFILES: [(&str, &str, Endian); 2] =
    [("docker_like_opt2", "docker_like", Endian::Little), ("s390x", "s390x", Endian::Big)];

/// `NAME` of testdata/filters or of [`PROFILES`].
fn load(name: &str) -> Result<Filter, String> {
    let filter = match PROFILES.iter().find(|&&(p, _, _)| p == name) {
        Some(&(_, _, endian)) => load_profile_endian(name, endian).and_then(|insns| Filter::new(name, &insns)),
        None => Filter::load(name),
    };
    filter.map_err(|e| e.to_string())
}

/// The 64 bytes of every vector of `NAME.vectors.jsonl` (for a profile,
/// of the vectors file it is checked with), read by the benches' one
/// vector reader, laid out as the kernel of the vector's arch lays them
/// out (`SeccompData::in_kernel_order`: s390x's arguments high half first,
/// as the engines present them).
fn vectors(name: &str) -> Result<Vec<[u8; 64]>, String> {
    let file = PROFILES.iter().find(|&&(p, _, _)| p == name).map_or(name, |&(_, file, _)| file);
    let vectors = load_vectors(file).map_err(|e| e.to_string())?;
    Ok(vectors.iter().map(|v| v.in_kernel_order().to_bytes()).collect())
}

/// The vector with the most classic instructions executed, and that count.
fn deepest(f: &Filter, vectors: &[[u8; 64]]) -> Option<([u8; 64], usize)> {
    let mut best: Option<([u8; 64], usize)> = None;
    for v in vectors {
        let mut n = 0;
        let _ = f.interp.trace_seccomp(v, |_| n += 1);
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((*v, n));
        }
    }
    best
}

enum Engine {
    Cbpf(cbpf::Interp),
    Exec(Box<(ebpf::Program, ebpf::Vm)>),
    General(Box<(ebpf::Program, ebpf::Vm)>),
    Fast(Box<seccomp::fast::FastFilter>),
    CbpfPlain(cbpf::plain::PlainInterp),
    EbpfPlain(ebpf::plain::PlainProgram),
}

impl Engine {
    fn new(kind: &str, f: &Filter) -> Result<Engine, String> {
        let load = |opts: &ebpf::LoadOptions| {
            ebpf::Program::load(&f.ebpf, opts, &ebpf::Helpers::new()).map_err(|e| e.to_string())
        };
        Ok(match kind {
            "cbpf" => Engine::Cbpf(f.interp.clone()),
            "ebpf-exec" => Engine::Exec(Box::new((load(&ebpf::LoadOptions::default())?, ebpf::Vm::new()))),
            "ebpf-general" => {
                let plain = ebpf::LoadOptions { no_superinstructions: true, ..ebpf::LoadOptions::default() };
                Engine::General(Box::new((load(&plain)?, ebpf::Vm::new())))
            }
            "fast" => Engine::Fast(Box::new(seccomp::fast::FastFilter::build(&f.program).map_err(|e| e.to_string())?)),
            "cbpf-plain" => Engine::CbpfPlain(cbpf::plain::PlainInterp::new(&f.program)),
            "ebpf-plain" => Engine::EbpfPlain(ebpf::plain::PlainProgram::new(&f.ebpf).map_err(|e| e.to_string())?),
            other => return Err(format!("unknown engine {other}: {}", ENGINES.join(", "))),
        })
    }

    #[inline(always)]
    fn run(&mut self, data: &[u8; 64]) -> u32 {
        match self {
            Engine::Cbpf(i) => i.run_seccomp(data).unwrap_or(0),
            Engine::Exec(b) => {
                let (p, vm) = &mut **b;
                vm.run_seccomp_uncounted(p, data).unwrap_or(0)
            }
            Engine::General(b) => {
                let (p, vm) = &mut **b;
                vm.run_seccomp(p, data).unwrap_or(0)
            }
            Engine::Fast(f) => f.eval_bytes(data),
            Engine::CbpfPlain(p) => p.run_seccomp(data).unwrap_or(0),
            Engine::EbpfPlain(p) => p.run_seccomp(data).unwrap_or(0),
        }
    }
}

/// The counted runs (callgrind's `--toggle-collect` target). The engine
/// is matched once per run, outside the engines' own code: a constant
/// few instructions, the same before and after a change.
#[inline(never)]
fn measure(engine: &mut Engine, data: &[u8; 64], runs: u64) -> u32 {
    let mut acc = 0u32;
    for _ in 0..runs {
        acc ^= engine.run(black_box(data));
    }
    acc
}

/// [`measure`] over every vector of `datas` in turn, `runs` passes
/// (callgrind's `--toggle-collect` target for the mix).
#[inline(never)]
fn measure_mix(engine: &mut Engine, datas: &[[u8; 64]], runs: u64) -> u32 {
    let mut acc = 0u32;
    for _ in 0..runs {
        for data in datas {
            acc ^= engine.run(black_box(data));
        }
    }
    acc
}

/// `convert::convert` `runs` times (callgrind's `--toggle-collect` target
/// for the conversion's cost: `count FILTER convert RUNS`).
#[inline(never)]
fn measure_convert(program: &cbpf::Program, runs: u64) -> usize {
    let options = convert::Options::kernel();
    let mut n = 0;
    for _ in 0..runs {
        n += convert::convert(black_box(program), &options).map_or(0, |c| c.insns.len());
    }
    n
}

/// Writes `text` to stdout: a reader that goes away (`count list | head`)
/// ends the run with an error, where `println!` would panic.
fn say(text: std::fmt::Arguments<'_>) -> Result<(), String> {
    use std::io::Write;
    std::io::stdout().lock().write_fmt(text).map_err(|e| format!("stdout: {e}"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [list] if list == "list" => {
            with_vectors().into_iter().chain(PROFILES.map(|(p, _, _)| p.to_string())).try_for_each(|name| {
                let name = name.as_str();
                let f = load(name)?;
                let vectors = vectors(name)?;
                let (_, n) = deepest(&f, &vectors).ok_or(format!("{name}: no vectors"))?;
                say(format_args!("{name} {n} {}\n", vectors.len()))?;
                Ok(())
            })
        }
        [name, listing] if listing == "listing" => {
            load(name).and_then(|f| say(format_args!("{}", f.interp.chain_listing())))
        }
        [name, convert, runs] if convert == "convert" => (|| {
            let f = match name.strip_prefix("synthetic:") {
                Some(n) => {
                    let n: usize = n.parse().map_err(|e| format!("synthetic:N: {e}"))?;
                    Filter::new(name, &synthetic_allow_list(n))
                }
                None => Filter::load(name),
            }
            .map_err(|e| e.to_string())?;
            let runs: u64 = runs.parse().map_err(|e| format!("RUNS: {e}"))?;
            say(format_args!("{name} convert {}\n", measure_convert(&f.program, runs)))
        })(),
        [name, kind, runs] => (|| {
            let f = load(name)?;
            let (data, _) = deepest(&f, &vectors(name)?).ok_or(format!("{name}: no vectors"))?;
            let runs: u64 = runs.parse().map_err(|e| format!("RUNS: {e}"))?;
            let mut engine = Engine::new(kind, &f)?;
            let reference = f.interp.run_seccomp(&data).unwrap_or(0);
            let got = engine.run(&data);
            if got != reference {
                return Err(format!("{name}/{kind}: {got:#x}, cbpf says {reference:#x}"));
            }
            say(format_args!("{name} {kind} {:#x}\n", measure(&mut engine, &data, runs)))
        })(),
        [name, kind, runs, mix] if mix == "mix" => (|| {
            let f = load(name)?;
            let datas = vectors(name)?;
            let runs: u64 = runs.parse().map_err(|e| format!("RUNS: {e}"))?;
            let mut engine = Engine::new(kind, &f)?;
            for data in &datas {
                let reference = f.interp.run_seccomp(data).unwrap_or(0);
                let got = engine.run(data);
                if got != reference {
                    return Err(format!("{name}/{kind}: {got:#x}, cbpf says {reference:#x}"));
                }
            }
            say(format_args!("{name} {kind} mix {:#x}\n", measure_mix(&mut engine, &datas, runs)))
        })(),
        _ => Err(format!("usage: count list | count FILTER ENGINE RUNS [mix] (ENGINE: {})", ENGINES.join(", "))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
