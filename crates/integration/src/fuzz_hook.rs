//! The running kernel as the judge of the hook code generator
//! (`cargo xtask fuzz-kernel --mode hook`, issue 26): a valid classic
//! socket filter converted for xdp, tc and socket ([`hook::convert`],
//! `--verdict value`) must load through the verifier, or be refused with
//! the typed error for an ancillary load the hook lacks, and return on
//! every packet what the classic interpreter returns on the skb the test
//! run builds ([`engine::hook_jit::HookJit`]).
//!
//! A disagreement is a [`HookReproducer`]: the program, the target, the
//! packet and context mark, both answers and the kernel release, replayed
//! (with the kernel) by `tests/fuzz_hook_replay.rs` from
//! `testdata/fuzz-kernel/hook/`.

use cbpf::{Insn, Program};
use engine::hook_jit::HookJit;
use engine::{EngineError, SocketOutcome};
use hook::{HookError, Target};
use serde::{Deserialize, Serialize};

use crate::fuzz_kernel::{kernel_release, minimise_with, program_insns, Input, Reproducer};

/// One input: the frame and the `mark` its test run's context carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub data: Vec<u8>,
    pub mark: u32,
}

/// What judging found, per target in [`Target::ALL`] order where it counts
/// per target.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HookTally {
    /// Programs judged.
    pub programs: u64,
    /// Per target: programs the verifier loaded.
    pub loaded: [u64; 3],
    /// Per target: programs refused with the typed error (an ancillary
    /// load the hook has no value for).
    pub refused: [u64; 3],
    /// Per target: programs whose conversion needs a jump longer than an
    /// eBPF offset holds (`HookError::JumpTooFar`).
    pub too_long: [u64; 3],
    /// (program, target, packet) results compared.
    pub inputs: u64,
    /// Packets the test run cannot reproduce (too short or long, CPU or
    /// random reads).
    pub not_observable: u64,
    /// Disagreements (each saved as a [`HookReproducer`]).
    pub disagreements: u64,
}

/// One disagreement (see the module docs). Written as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookReproducer {
    /// `xdp`, `tc` or `socket`.
    pub target: String,
    /// `load` (the verifier refused our program, or the conversion failed
    /// with another error than the typed refusal) or `run` (results differ).
    pub kind: String,
    /// The classic program, `code jt jf k` in decimal per instruction.
    pub program: Vec<String>,
    /// The same in bpf_asm syntax, for people.
    pub asm: String,
    /// `run` only: hex of the frame, and the context's mark.
    pub packet: Option<String>,
    pub mark: u32,
    /// The classic interpreter's value (`run`), or `loads` (`load`).
    pub ours: String,
    /// The kernel's value (`run`), or its refusal with the verifier's reason.
    pub kernel: String,
    pub kernel_release: String,
    pub found_by: String,
    /// Set when it is triaged: the one-line root cause of the bug it found.
    #[serde(default)]
    pub root_cause: Option<String>,
}

fn target_of(name: &str) -> Result<Target, String> {
    Target::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| format!("unknown target `{name}`"))
}

impl HookReproducer {
    fn new(target: Target, kind: &str, insns: &[Insn], packet: Option<&Packet>, ours: String, kernel: String) -> Self {
        HookReproducer {
            target: target.name().into(),
            kind: kind.into(),
            program: Reproducer::program_lines(insns),
            asm: cbpf::text::print_asm(insns),
            packet: packet.map(|p| Input::Packet(p.data.clone()).hex()),
            mark: packet.map_or(0, |p| p.mark),
            ours,
            kernel,
            kernel_release: kernel_release(),
            found_by: String::new(),
            root_cause: None,
        }
    }

    /// Judges again with today's code and the running kernel: `Ok` when
    /// the disagreement is gone.
    pub fn replay(&self) -> Result<(), String> {
        let target = target_of(&self.target)?;
        let insns = program_insns(&self.program)?;
        let program = cbpf::validate(&insns, cbpf::Mode::Socket).map_err(|e| e.to_string())?;
        let packets = match &self.packet {
            Some(hex) => match Input::from_hex(cbpf::Mode::Socket, hex)? {
                Input::Packet(data) => vec![Packet { data, mark: self.mark }],
                Input::Seccomp(_) => return Err("not a packet".into()),
            },
            None => Vec::new(),
        };
        let mut tally = HookTally::default();
        let found = judge_target(&program, target, &packets, &mut tally)?;
        match found.first() {
            None => Ok(()),
            Some(r) => Err(format!("{}: ours {}, kernel {}", r.kind, r.ours, r.kernel)),
        }
    }
}

/// Judges `program` on `packets` for every target.
pub fn judge(program: &Program, packets: &[Packet], tally: &mut HookTally) -> Result<Vec<HookReproducer>, String> {
    tally.programs += 1;
    let mut found = Vec::new();
    for target in Target::ALL {
        found.extend(judge_target(program, target, packets, tally)?);
    }
    Ok(found)
}

fn judge_target(
    program: &Program,
    target: Target,
    packets: &[Packet],
    tally: &mut HookTally,
) -> Result<Vec<HookReproducer>, String> {
    let slot = Target::ALL.iter().position(|&t| t == target).unwrap_or(0);
    let count = |v: &mut [u64; 3]| {
        if let Some(n) = v.get_mut(slot) {
            *n += 1;
        }
    };
    let insns = program.original();
    let jit = match HookJit::new(program, target) {
        Ok(j) => j,
        Err(EngineError::Hook(HookError::NoValue { load, .. })) if load.source(target).is_none() => {
            count(&mut tally.refused);
            return Ok(Vec::new());
        }
        Err(EngineError::Hook(HookError::JumpTooFar { .. })) => {
            count(&mut tally.too_long);
            return Ok(Vec::new());
        }
        Err(EngineError::Bpf(e @ kernel::bpf::BpfError::Unavailable { .. })) => return Err(e.to_string()),
        Err(e) => {
            tally.disagreements += 1;
            let r = HookReproducer::new(target, "load", insns, None, "loads".into(), e.to_string());
            return Ok(vec![r]);
        }
    };
    count(&mut tally.loaded);
    let interp = cbpf::Interp::new(program);
    let mut found = Vec::new();
    for p in packets {
        let skb = jit.kernel_skb(&p.data, p.mark);
        let ours = interp.run_socket(&skb).map_err(|e| e.to_string())?;
        let theirs = match jit.eval(&skb) {
            Ok(SocketOutcome::Ret(r)) => r.to_string(),
            Ok(_) => {
                tally.not_observable += 1;
                continue;
            }
            Err(e) => e.to_string(),
        };
        tally.inputs += 1;
        if theirs != ours.to_string() {
            tally.disagreements += 1;
            found.push(HookReproducer::new(target, "run", insns, Some(p), ours.to_string(), theirs));
        }
    }
    Ok(found)
}

/// Shrinks a disagreement (instructions dropped, the frame cut) while the
/// running kernel still disagrees in the same way; at most `budget`
/// judgements.
pub fn minimise(repro: &HookReproducer, budget: usize) -> Result<HookReproducer, String> {
    let target = target_of(&repro.target)?;
    let insns = program_insns(&repro.program)?;
    let input = repro.packet.as_deref().map(|h| Input::from_hex(cbpf::Mode::Socket, h)).transpose()?;
    let mark = repro.mark;
    let still = |insns: &[Insn], input: Option<&Input>| -> Option<HookReproducer> {
        let program = cbpf::validate(insns, cbpf::Mode::Socket).ok()?;
        let packets: Vec<Packet> = match input {
            Some(Input::Packet(data)) => vec![Packet { data: data.clone(), mark }],
            _ => Vec::new(),
        };
        let mut tally = HookTally::default();
        judge_target(&program, target, &packets, &mut tally).ok()?.into_iter().find(|r| r.kind == repro.kind)
    };
    let (insns, input) = minimise_with(&insns, input.as_ref(), budget, |i, p| still(i, p).is_some());
    let mut small = still(&insns, input.as_ref()).ok_or("the disagreement went away while minimising")?;
    small.found_by = repro.found_by.clone();
    Ok(small)
}

impl std::fmt::Display for HookTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} programs;", self.programs)?;
        for (i, t) in Target::ALL.iter().enumerate() {
            let at = |v: &[u64; 3]| v.get(i).copied().unwrap_or(0);
            write!(
                f,
                " {t}: {} loaded, {} refused with the typed error, {} past the jump range;",
                at(&self.loaded),
                at(&self.refused),
                at(&self.too_long)
            )?;
        }
        write!(
            f,
            " {} results compared, {} not observable, {} disagreements",
            self.inputs, self.not_observable, self.disagreements
        )
    }
}
