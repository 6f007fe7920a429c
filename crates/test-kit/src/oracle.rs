//! The one equivalence oracle: every engine must return what the plain
//! classic interpreter returns, on every input.
//!
//! ```text
//!                ┌► trace interpreter (cbpf, one insn at a time) ──► reference u32, steps
//! Program ───────┼► cbpf::Interp (pre-decoded, compare chains) ─────► u32 ┐
//!   (validated)  ├► seccomp::fast::FastFilter (seccomp) ───────────► u32 ├ each == reference,
//!                ├► rbpf's interpreter on convert() (seccomp) ─────► u32 │ else Mismatch
//!                └► convert() ─► ebpf::Program ─► ebpf::Vm ────────► u32 │
//!                             ├► the same, no superinstructions ──► u32 │ (and equal steps)
//!                             └► convert::loadable (seccomp) ─────► u32 ┘ (and equal steps)
//! ```
//!
//! The reference is the plainest code there is: [`cbpf::Interp::trace_seccomp`]
//! and [`cbpf::Interp::trace_socket`] walk [`Program::insns`] one instruction
//! at a time, with none of the optimised interpreter's pre-decoding or
//! compare chains. Every other engine is compared with it ([`Engine`]); the
//! two eBPF runs (the seccomp executor or the superinstruction-fused
//! interpreter, and the general interpreter with fusion off) also report how
//! many eBPF instructions they executed, and those counts must be equal,
//! since fusion changes dispatch, never what executes. For seccomp filters
//! the loadable form of the conversion ([`convert::loadable()`], what the
//! `kernel-jit` engine hands the kernel's verifier) runs on the general
//! interpreter too, loaded strict (RFC 9669's reserved fields must be 0),
//! and must count the same steps: its run is the converted run's image,
//! instruction by instruction.
//!
//! Used by the integration suites (filetests, test_bpf, the oracle property
//! tests) and the fuzz targets alike, so "equivalent" means one thing
//! everywhere. [`Oracle`] prepares one program once and checks any number of
//! inputs; [`check_seccomp`] and [`check_socket`] are the one-shot forms.

use std::fmt;

use cbpf::{Insn, Interp, Mode, Program, SeccompData, Skb, TraceStep};
use convert::socket_ctx::{skb_meta, socket_helpers};
use convert::{convert, ConvertError, Converted, Options};
use seccomp::fast::{FastError, FastFilter};

use crate::branch::{branch_inputs, branch_packets};
use crate::input::SocketInput;

/// What a program was run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OracleInput {
    /// A system call (seccomp mode).
    Seccomp(SeccompData),
    /// A packet (socket mode).
    Socket(SocketInput),
    /// No context at all (lib/test_bpf.c's `FLAG_NO_DATA`): the eBPF program
    /// gets `r1 = 0`, the classic one an empty packet.
    NoData,
}

impl fmt::Display for OracleInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OracleInput::Seccomp(d) => {
                write!(f, "nr={} arch={:#x} ip={:#x} args=", d.nr, d.arch, d.instruction_pointer)?;
                for (i, a) in d.args.iter().enumerate() {
                    write!(f, "{}{a:#x}", if i == 0 { "" } else { "," })?;
                }
                Ok(())
            }
            OracleInput::Socket(s) => s.fmt(f),
            OracleInput::NoData => f.write_str("no data (r1 = 0)"),
        }
    }
}

/// An engine the oracle runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Engine {
    /// The reference: the classic trace interpreter, one instruction at a
    /// time; counts classic instructions.
    Trace,
    /// The optimised classic interpreter ([`cbpf::Interp`]).
    Cbpf,
    /// The converted program on [`ebpf::Vm`] as loaded by default: the
    /// seccomp executor for seccomp filters, the fused interpreter for
    /// socket filters. Counts eBPF instructions.
    Ebpf,
    /// The converted program on [`ebpf::Vm`] loaded with
    /// `no_superinstructions`: the general interpreter. Counts eBPF
    /// instructions; must count what [`Engine::Ebpf`] counts.
    EbpfGeneral,
    /// The fast seccomp engine ([`seccomp::fast::FastFilter`]); seccomp only.
    Fast,
    /// rbpf 0.4's interpreter on the converted program; seccomp only.
    Rbpf,
    /// The loadable form ([`convert::loadable()`]) on the general
    /// interpreter, loaded strict; seccomp only. Counts eBPF instructions;
    /// must count what [`Engine::EbpfGeneral`] counts.
    Loadable,
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Trace => "trace",
            Engine::Cbpf => "cbpf",
            Engine::Ebpf => "ebpf",
            Engine::EbpfGeneral => "ebpf-general",
            Engine::Fast => "fast",
            Engine::Rbpf => "rbpf",
            Engine::Loadable => "loadable",
        })
    }
}

/// One engine's run: its answer (an error as text, so every engine's fits)
/// and, for engines that count them, the instructions it executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Which engine ran.
    pub engine: Engine,
    /// What it returned.
    pub result: Result<u32, String>,
    /// Instructions executed, where the engine counts them.
    pub steps: Option<u64>,
}

impl Run {
    fn new<E: fmt::Display>(engine: Engine, result: Result<u32, E>, steps: Option<u64>) -> Self {
        Run { engine, result: result.map_err(|e| e.to_string()), steps }
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.result {
            Ok(v) => write!(f, "{} returned {v:#x}", self.engine)?,
            Err(e) => write!(f, "{} failed ({e})", self.engine)?,
        }
        if let Some(steps) = self.steps {
            write!(f, " in {steps} steps")?;
        }
        Ok(())
    }
}

/// An engine disagreed with the reference (or the two eBPF runs executed
/// different numbers of instructions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The name the program was checked under.
    pub program: String,
    /// The classic program as given ([`Program::original`]).
    pub insns: Vec<Insn>,
    /// The mode it was validated for.
    pub mode: Mode,
    /// The input every engine ran on.
    pub input: OracleInput,
    /// Every run, the reference ([`Engine::Trace`]) first.
    pub runs: Vec<Run>,
    /// The first engine that disagreed.
    pub engine: Engine,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} disagrees on {}:", self.program, self.engine, self.input)?;
        for run in &self.runs {
            write!(f, " {run};")?;
        }
        write!(f, " {} program: {}", self.mode, cbpf::text::print_ddd_line(&self.insns).trim_end())
    }
}

impl std::error::Error for Mismatch {}

/// Why a program could not be prepared for checking.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The converter refused the program (as the kernel would at attach time).
    #[error("{name}: {source}")]
    Convert { name: String, source: ConvertError },
    /// Our eBPF loader refused the converted program: always a bug.
    #[error("{name}: loading the converted program: {source}")]
    Load { name: String, source: ebpf::LoadError },
    /// The fast engine refused a seccomp program: always a bug.
    #[error("{name}: building the fast engine: {source}")]
    Fast { name: String, source: FastError },
    /// rbpf refused the converted seccomp program.
    #[error("{name}: rbpf refused the converted program: {message}")]
    Rbpf { name: String, message: String },
    /// The conversion has no loadable form, or our loader refused it
    /// strict: always a bug for a seccomp filter.
    #[error("{name}: the loadable form: {message}")]
    Loadable { name: String, message: String },
}

/// A one-shot check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OracleError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("{0}")]
    Mismatch(Box<Mismatch>),
}

/// The engines only seccomp filters have.
#[derive(Debug)]
struct SeccompEngines {
    fast: FastFilter,
    /// The converted program's bytes, for rbpf (whose VM borrows them).
    rbpf_code: Vec<u8>,
    /// The loadable form on the general interpreter.
    loadable: ebpf::Program,
}

/// One program prepared for equivalence checks: the reference, the
/// optimised classic interpreter, the conversion loaded both ways into our
/// eBPF interpreter, and for seccomp filters the fast engine and rbpf.
#[derive(Debug)]
pub struct Oracle {
    name: String,
    original: Vec<Insn>,
    mode: Mode,
    interp: Interp,
    converted: Converted,
    ebpf: ebpf::Program,
    general: ebpf::Program,
    vm: ebpf::Vm,
    seccomp: Option<SeccompEngines>,
}

impl Oracle {
    /// Prepares `program` with the Linux 6.18 conversion.
    pub fn new(name: impl Into<String>, program: &Program) -> Result<Self, SetupError> {
        Self::with_options(name, program, &Options::kernel())
    }

    /// Prepares `program` converted with `options`.
    pub fn with_options(name: impl Into<String>, program: &Program, options: &Options) -> Result<Self, SetupError> {
        let name = name.into();
        let converted =
            convert(program, options).map_err(|source| SetupError::Convert { name: name.clone(), source })?;
        let load = |no_superinstructions| {
            let opts = ebpf::LoadOptions { no_superinstructions, ..ebpf::LoadOptions::default() };
            ebpf::Program::load(&converted.insns, &opts, &socket_helpers())
                .map_err(|source| SetupError::Load { name: name.clone(), source })
        };
        let ebpf = load(false)?;
        let general = load(true)?;
        let seccomp = match program.mode() {
            Mode::Seccomp => {
                let fast =
                    FastFilter::build(program).map_err(|source| SetupError::Fast { name: name.clone(), source })?;
                let rbpf_code = ebpf::encode(&converted.insns);
                if let Err(e) = rbpf::EbpfVmRaw::new(Some(&rbpf_code)) {
                    return Err(SetupError::Rbpf { name, message: e.to_string() });
                }
                let loadable = convert::loadable(&converted, Mode::Seccomp)
                    .map_err(|e| e.to_string())
                    .and_then(|l| {
                        let opts = ebpf::LoadOptions { strict: true, no_superinstructions: true };
                        ebpf::Program::load(&l.insns, &opts, &socket_helpers()).map_err(|e| e.to_string())
                    })
                    .map_err(|message| SetupError::Loadable { name: name.clone(), message })?;
                Some(SeccompEngines { fast, rbpf_code, loadable })
            }
            Mode::Socket => None,
        };
        Ok(Oracle {
            name,
            original: program.original().to_vec(),
            mode: program.mode(),
            interp: Interp::new(program),
            converted,
            ebpf,
            general,
            vm: ebpf::Vm::new(),
            seccomp,
        })
    }

    /// The name mismatches are reported under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The converted program being checked.
    pub fn converted(&self) -> &Converted {
        &self.converted
    }

    /// `Ok` with the reference's result when every run agrees with it and
    /// the eBPF runs counted the same steps.
    fn judge(&self, input: impl FnOnce() -> OracleInput, runs: Vec<Run>) -> Result<u32, Box<Mismatch>> {
        let reference = runs.first().map(|r| r.result.clone());
        let ebpf_steps = |engine| runs.iter().find(|r| r.engine == engine).and_then(|r| r.steps);
        let loadable_steps = runs.iter().any(|r| r.engine == Engine::Loadable).then(|| ebpf_steps(Engine::Loadable));
        let steps_differ = ebpf_steps(Engine::Ebpf) != ebpf_steps(Engine::EbpfGeneral);
        let loadable_differs = loadable_steps.is_some_and(|s| s != ebpf_steps(Engine::EbpfGeneral));
        let disagreeing = runs.iter().find(|r| Some(&r.result) != reference.as_ref()).map(|r| r.engine);
        let disagreeing = disagreeing
            .or(steps_differ.then_some(Engine::EbpfGeneral))
            .or(loadable_differs.then_some(Engine::Loadable));
        match (reference, disagreeing) {
            (Some(Ok(v)), None) => Ok(v),
            (_, engine) => Err(Box::new(Mismatch {
                program: self.name.clone(),
                insns: self.original.clone(),
                mode: self.mode,
                input: input(),
                engine: engine.unwrap_or(Engine::Trace),
                runs,
            })),
        }
    }

    /// The runs every input gets: the plain trace (the reference, with its
    /// step count) and `cbpf::Interp` through `trace` and `run`, then the
    /// converted program with and without superinstructions (with their
    /// step counts) through `ebpf`.
    fn common_runs(
        &mut self,
        trace: impl FnOnce(&Interp, &mut dyn FnMut(&TraceStep)) -> Result<u32, cbpf::ExecError>,
        run: impl FnOnce(&Interp) -> Result<u32, cbpf::ExecError>,
        ebpf: impl Fn(&mut ebpf::Vm, &ebpf::Program) -> Result<u32, ebpf::ExecError>,
    ) -> Vec<Run> {
        let mut steps = 0u64;
        let reference = trace(&self.interp, &mut |_| steps += 1);
        let mut runs =
            vec![Run::new(Engine::Trace, reference, Some(steps)), Run::new(Engine::Cbpf, run(&self.interp), None)];
        for (engine, prog) in [(Engine::Ebpf, &self.ebpf), (Engine::EbpfGeneral, &self.general)] {
            let result = ebpf(&mut self.vm, prog);
            let steps = result.is_ok().then(|| self.vm.executed());
            runs.push(Run::new(engine, result, steps));
        }
        runs
    }

    /// Runs every engine on a system call; `Ok` with the common result.
    pub fn check_seccomp(&mut self, data: &SeccompData) -> Result<u32, Box<Mismatch>> {
        let bytes = data.to_bytes();
        let mut runs = self.common_runs(
            |i, on_step| i.trace_seccomp(&bytes, on_step),
            |i| i.run_seccomp(&bytes),
            |vm, prog| vm.run_seccomp(prog, &bytes),
        );
        if let Some(s) = &self.seccomp {
            runs.push(Run::new(Engine::Fast, Ok::<u32, String>(s.fast.eval_bytes(&bytes)), None));
            let mut mem = bytes;
            let rbpf = rbpf::EbpfVmRaw::new(Some(&s.rbpf_code))
                .and_then(|vm| vm.execute_program(&mut mem))
                .map(|r0| r0 as u32);
            runs.push(Run::new(Engine::Rbpf, rbpf, None));
            let result = self.vm.run_seccomp(&s.loadable, &bytes);
            let steps = result.is_ok().then(|| self.vm.executed());
            runs.push(Run::new(Engine::Loadable, result, steps));
        }
        self.judge(|| OracleInput::Seccomp(*data), runs)
    }

    /// Runs every engine on a packet; `Ok` with the common result.
    pub fn check_socket(&mut self, skb: &Skb<'_>) -> Result<u32, Box<Mismatch>> {
        let ctx = ebpf::SkbContext::new(skb.data, &skb_meta(skb));
        let runs = self.common_runs(
            |i, on_step| i.trace_socket(skb, on_step),
            |i| i.run_socket(skb),
            |vm, prog| vm.run(prog, ebpf::Input::Skb(&ctx)).map(|r0| r0 as u32),
        );
        self.judge(|| OracleInput::Socket(SocketInput::from_skb(skb)), runs)
    }

    /// Runs a socket program without a context (lib/test_bpf.c's
    /// `FLAG_NO_DATA`): the eBPF program gets `r1 = 0`, the classic ones an
    /// empty test_bpf packet. Only programs that never read the context
    /// agree.
    pub fn check_no_data(&mut self) -> Result<u32, Box<Mismatch>> {
        let empty = Skb::test_bpf(&[]);
        let runs = self.common_runs(
            |i, on_step| i.trace_socket(&empty, on_step),
            |i| i.run_socket(&empty),
            |vm, prog| vm.run(prog, ebpf::Input::None).map(|r0| r0 as u32),
        );
        self.judge(|| OracleInput::NoData, runs)
    }

    /// Checks the program on every input of [`branch_inputs`] (seccomp) or
    /// [`branch_packets`] (socket); returns how many inputs agreed, or the
    /// first disagreement.
    pub fn check_branches(&mut self, program: &Program) -> Result<usize, Box<Mismatch>> {
        match program.mode() {
            Mode::Seccomp => {
                let inputs = branch_inputs(program);
                for data in &inputs {
                    self.check_seccomp(data)?;
                }
                Ok(inputs.len())
            }
            Mode::Socket => {
                let inputs = branch_packets(program);
                for input in &inputs {
                    self.check_socket(&input.skb())?;
                }
                Ok(inputs.len())
            }
        }
    }
}

/// One-shot: `program` (seccomp mode) on `data`, every engine.
pub fn check_seccomp(program: &Program, data: &SeccompData) -> Result<u32, OracleError> {
    Oracle::new("program", program)?.check_seccomp(data).map_err(OracleError::Mismatch)
}

/// One-shot: `program` (socket mode) on `skb`, every engine.
pub fn check_socket(program: &Program, skb: &Skb<'_>) -> Result<u32, OracleError> {
    Oracle::new("program", program)?.check_socket(skb).map_err(OracleError::Mismatch)
}
