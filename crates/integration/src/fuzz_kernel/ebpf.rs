//! `cargo xtask fuzz-kernel --mode ebpf`: the running kernel as the judge
//! of our eBPF interpreter on general programs (issue 25 item 6).
//!
//! Programs come from `test_kit::gen_ebpf` (verifier-acceptable by
//! construction, each written for one memory length); the kernel runs them
//! as `kernel::bpf::memory` does (XDP test run, the memory as the packet,
//! the whole 64-bit `r0` brought out), ours is [`ebpf::Vm`] on the same
//! memory with the conformance convention (`r1` = memory, `r2` = length).
//! A memory of at least `test_kit::gen_ebpf::END_MIN_MEM` bytes also comes
//! with its end in `r3` ([`Args::WithEnd`]; ours behind [`END_PRELUDE`]),
//! for the programs' own bounds checks.
//! Where the verifier accepts, `r0` and the memory after the run must be
//! equal on every input, and our loader must accept the program too; where
//! it refuses, the refusal is counted with its reason (the acceptance rate
//! the fuzzer reports), never compared.
//!
//! A disagreement is an [`EbpfReproducer`] (JSON), replayed without the
//! kernel by `tests/fuzz_kernel_replay.rs` from `testdata/fuzz-kernel/ebpf/`.

use std::collections::BTreeMap;

use ebpf::{Helpers, Input, Insn, LoadOptions, Op, Program, Vm};
use kernel::bpf::memory::{Args, MemoryProg, END_PRELUDE};
use kernel::bpf::BpfError;
use serde::{Deserialize, Serialize};

use super::{hex, unhex, Origin};

/// What judging programs found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EbpfTally {
    /// Programs offered to the verifier.
    pub programs: u64,
    /// Of those, accepted (and then run on every input).
    pub accepted: u64,
    /// Of those, refused, by the verifier's reason with numbers as `N`.
    pub refused: BTreeMap<String, u64>,
    /// Inputs whose results were compared.
    pub inputs: u64,
    /// Disagreements (each saved as an [`EbpfReproducer`]).
    pub disagreements: u64,
}

impl EbpfTally {
    /// Programs the verifier refused.
    pub fn refused_total(&self) -> u64 {
        self.refused.values().sum()
    }

    /// The verifier's acceptance rate in percent.
    pub fn acceptance_percent(&self) -> f64 {
        if self.programs == 0 {
            return 0.0;
        }
        100.0 * self.accepted as f64 / self.programs as f64
    }
}

/// A verifier reason with every number replaced by `N`, so refusals group.
pub fn reason_class(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut in_number = false;
    for c in reason.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// One disagreement, self-contained. Written as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EbpfReproducer {
    /// `ebpf`.
    pub mode: String,
    /// `run` (results differ) or `load` (the verifier accepts a program
    /// our loader refuses).
    pub kind: String,
    /// The program, one `code dst src off imm` line (decimal) per slot.
    pub program: Vec<String>,
    /// The same in bpf_conformance assembly (`bpfconv ebpf asm` reads it
    /// back; `bpfconv ebpf run --engine kernel|ours [--data-end]` runs it),
    /// or why it has none (load-acquire and store-release have no mnemonic).
    pub asm: String,
    /// The same as the kernel's verifier lists it, for people.
    #[serde(default)]
    pub listing: String,
    /// The memory length the program was verified for.
    pub mem_len: usize,
    /// Whether `r3` holds the memory's end (`bpfconv ebpf run --data-end`).
    #[serde(default)]
    pub data_end: bool,
    /// `run` only: hex of the memory before the run.
    pub input: Option<String>,
    /// Our answer: `r0 = 0x…; memory = HEX`, `error: …`, `refused: …`.
    pub ours: String,
    /// The kernel's answer, in the same form (`accepted` for `load`).
    pub kernel: String,
    /// Where it came from; its fields stand at this level in the JSON.
    #[serde(flatten)]
    pub origin: Origin,
}

impl EbpfReproducer {
    /// The program's instructions.
    pub fn insns(&self) -> Result<Vec<Insn>, String> {
        self.program
            .iter()
            .map(|line| {
                let f: Vec<i64> = line
                    .split_whitespace()
                    .map(str::parse::<i64>)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("`{line}`: {e}"))?;
                let field = |v: i64| format!("`{line}`: {v} is out of range");
                match f[..] {
                    [code, dst, src, off, imm] => Ok(Insn::new(
                        u8::try_from(code).map_err(|_| field(code))?,
                        u8::try_from(dst).ok().filter(|r| *r < 16).ok_or_else(|| field(dst))?,
                        u8::try_from(src).ok().filter(|r| *r < 16).ok_or_else(|| field(src))?,
                        i16::try_from(off).map_err(|_| field(off))?,
                        i32::try_from(imm).map_err(|_| field(imm))?,
                    )),
                    _ => Err(format!("`{line}` is not `code dst src off imm`")),
                }
            })
            .collect()
    }

    /// `insns` as [`EbpfReproducer::program`] holds them.
    pub fn program_lines(insns: &[Insn]) -> Vec<String> {
        insns.iter().map(|i| format!("{} {} {} {} {}", i.code, i.dst(), i.src(), i.off, i.imm)).collect()
    }

    /// The argument registers the program was run with.
    pub fn args(&self) -> Args {
        if self.data_end {
            Args::WithEnd
        } else {
            Args::Conformance
        }
    }

    /// Judges again with today's interpreter: `Ok(ours)` when our answer
    /// equals the recorded kernel answer, `Err(ours)` when it does not.
    pub fn replay(&self) -> Result<String, String> {
        let insns = self.insns()?;
        match self.kind.as_str() {
            "load" => match our_load(&insns, self.args()) {
                Ok(_) => Ok("accepted".into()),
                Err(e) => Err(e),
            },
            "run" => {
                let mem = unhex(self.input.as_deref().ok_or("a run reproducer without input")?)?;
                let prog = our_load(&insns, self.args())?;
                let ours = answer_text(&our_run(&prog, &mem));
                if ours == self.kernel {
                    Ok(ours)
                } else {
                    Err(ours)
                }
            }
            other => Err(format!("unknown kind `{other}`")),
        }
    }
}

/// r0 and the memory after a run.
pub type Answer = (u64, Vec<u8>);

/// The argument registers a program for `mem_len` bytes gets: the end too
/// from `test_kit::gen_ebpf::END_MIN_MEM` bytes on.
pub fn args_for(mem_len: usize) -> Args {
    if mem_len >= test_kit::gen_ebpf::END_MIN_MEM {
        Args::WithEnd
    } else {
        Args::Conformance
    }
}

/// Our loader, as `bpfconv ebpf run [--data-end]` loads (default options,
/// the conformance helpers; [`END_PRELUDE`] first for [`Args::WithEnd`]).
pub fn our_load(insns: &[Insn], args: Args) -> Result<Program, String> {
    let prelude: &[Insn] = if args == Args::WithEnd { &END_PRELUDE } else { &[] };
    Program::load(&[prelude, insns].concat(), &LoadOptions::default(), &Helpers::conformance())
        .map_err(|e| format!("refused: {e}"))
}

/// Our interpreter on a copy of `mem`.
pub fn our_run(prog: &Program, mem: &[u8]) -> Result<Answer, String> {
    let mut mem = mem.to_vec();
    let r0 = Vm::new().run(prog, Input::Memory(&mut mem)).map_err(|e| format!("error: {e}"))?;
    Ok((r0, mem))
}

/// An answer as reproducers record it.
pub fn answer_text(answer: &Result<Answer, String>) -> String {
    match answer {
        Ok((r0, mem)) => format!("r0 = {r0:#x}; memory = {}", hex(mem)),
        Err(e) => e.clone(),
    }
}

fn reproducer(
    kind: &str,
    insns: &[Insn],
    mem_len: usize,
    input: Option<&[u8]>,
    ours: String,
    kernel: String,
) -> EbpfReproducer {
    EbpfReproducer {
        mode: "ebpf".into(),
        kind: kind.into(),
        program: EbpfReproducer::program_lines(insns),
        asm: ebpf::disasm::disassemble(insns).unwrap_or_else(|e| format!("(no assembly: {e})")),
        listing: ebpf::listing::listing(insns),
        mem_len,
        data_end: args_for(mem_len) == Args::WithEnd,
        input: input.map(hex),
        ours,
        kernel,
        origin: Origin::here(),
    }
}

/// Judges `insns` (written for `mem_len` bytes of memory, with the
/// arguments of [`args_for`]) on every memory of `inputs` (each `mem_len`
/// long) against the running kernel.
/// Disagreements come back as reproducers (`found_by` left for the caller);
/// an `Err` is a failure of the judge itself (bpf(2) unavailable, a test
/// run the kernel refuses).
pub fn judge(
    insns: &[Insn],
    mem_len: usize,
    inputs: &[Vec<u8>],
    tally: &mut EbpfTally,
) -> Result<Vec<EbpfReproducer>, String> {
    tally.programs += 1;
    let args = args_for(mem_len);
    let theirs = match MemoryProg::load_with(insns, mem_len, args) {
        Ok(p) => p,
        Err(e @ BpfError::Rejected { .. }) => {
            *tally.refused.entry(reason_class(e.reason().unwrap_or("(no log)"))).or_default() += 1;
            return Ok(Vec::new());
        }
        Err(e) => return Err(e.to_string()),
    };
    tally.accepted += 1;
    let ours = match our_load(insns, args) {
        Ok(p) => p,
        Err(e) => {
            tally.disagreements += 1;
            return Ok(vec![reproducer("load", insns, mem_len, None, e, "accepted".into())]);
        }
    };
    let mut found = Vec::new();
    for mem in inputs {
        let mut kernel_mem = mem.clone();
        let kernel = theirs.run(&mut kernel_mem).map_err(|e| e.to_string())?;
        let kernel: Result<Answer, String> = Ok((kernel.r0, kernel_mem));
        let answer = our_run(&ours, mem);
        tally.inputs += 1;
        if answer != kernel {
            tally.disagreements += 1;
            found.push(reproducer("run", insns, mem_len, Some(mem), answer_text(&answer), answer_text(&kernel)));
        }
    }
    Ok(found)
}

/// `insns` without the instruction at slot `at` (both slots of an
/// `ld_imm64`), every jump and local call over it re-targeted (a jump to it
/// now lands on its successor); `None` when `at` is not an instruction's
/// first slot, is the last instruction, or an offset no longer fits.
pub fn without(insns: &[Insn], at: usize) -> Option<Vec<Insn>> {
    // First slots and their ops.
    let mut ops = Vec::new();
    let mut pc = 0;
    while let Some(&insn) = insns.get(pc) {
        let op = Op::decode(insn, insns.get(pc + 1).copied()).ok()?;
        let n = op.encode().slots().len();
        ops.push((pc, op, n));
        pc += n;
    }
    let &(_, _, gone) = ops.iter().find(|(p, _, _)| *p == at)?;
    if at + gone >= insns.len() {
        return None;
    }
    let moved = |t: usize| if t > at { t - gone } else { t };
    let mut out = Vec::with_capacity(insns.len() - gone);
    for (p, op, _) in ops {
        if p == at {
            continue;
        }
        let retarget = |rel: i64| -> Option<i64> {
            let target = usize::try_from(p as i64 + 1 + rel).ok()?;
            Some(moved(target) as i64 - moved(p) as i64 - 1)
        };
        let op = match op {
            Op::Jmp { width, cond, dst, src, off } => {
                Op::Jmp { width, cond, dst, src, off: i16::try_from(retarget(off.into())?).ok()? }
            }
            Op::Ja { off } => Op::Ja { off: i16::try_from(retarget(off.into())?).ok()? },
            Op::Gotol { imm } => Op::Gotol { imm: i32::try_from(retarget(imm.into())?).ok()? },
            Op::Call { kind: ebpf::op::CallKind::Local, imm } => {
                Op::Call { kind: ebpf::op::CallKind::Local, imm: i32::try_from(retarget(imm.into())?).ok()? }
            }
            other => other,
        };
        out.extend_from_slice(op.encode().slots());
    }
    Some(out)
}

/// Shrinks a disagreement while `still` says it persists: drops
/// instructions, last first, until none can go; at most `budget` calls of
/// `still`.
pub fn minimise_with(insns: &[Insn], budget: usize, mut still: impl FnMut(&[Insn]) -> bool) -> Vec<Insn> {
    let mut best = insns.to_vec();
    let mut calls = 0;
    while calls < budget && super::drop_pass(&mut best, (&mut calls, budget), without, &mut still) {}
    best
}

/// [`minimise_with`] against the running kernel: the disagreement of
/// `repro`'s kind persists on its input.
pub fn minimise(repro: &EbpfReproducer, budget: usize) -> Result<EbpfReproducer, String> {
    let inputs: Vec<Vec<u8>> = repro.input.as_deref().map(unhex).transpose()?.into_iter().collect();
    let kind = repro.kind.clone();
    let judge_kind = |insns: &[Insn]| -> Option<EbpfReproducer> {
        let mut tally = EbpfTally::default();
        judge(insns, repro.mem_len, &inputs, &mut tally).ok()?.into_iter().find(|r| r.kind == kind)
    };
    let small = minimise_with(&repro.insns()?, budget, |insns| judge_kind(insns).is_some());
    let mut small = judge_kind(&small).ok_or("the disagreement went away while minimising")?;
    small.origin.found_by = repro.origin.found_by.clone();
    Ok(small)
}

/// Whether the kernel lets this process judge eBPF programs: `Err` says why not.
pub fn available() -> Result<(), String> {
    kernel::bpf::available().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_group_by_their_words() {
        assert_eq!(reason_class("invalid shift 48"), "invalid shift N");
        assert_eq!(reason_class("R3 !read_ok"), "RN !read_ok");
    }
}
