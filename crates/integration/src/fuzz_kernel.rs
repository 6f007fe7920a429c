//! The running kernel as the judge of our model (`cargo xtask fuzz-kernel`,
//! issue 17 item 3): what the kernel says of one classic program (does
//! seccomp(2) or `SO_ATTACH_FILTER` attach it?) and of one input (what does
//! it return?), compared with what we say, and the reproducer a
//! disagreement is saved as.
//!
//! - **Attach.** Ours is `bpfconv check`'s logic: [`cbpf::validate()`] then
//!   [`convert::check_attach`] (the attach-time conversion). The kernel's is
//!   [`kernel::seccomp_attach`] (a fresh child, `PR_SET_NO_NEW_PRIVS`,
//!   `seccomp(SECCOMP_SET_MODE_FILTER)` of the program unmodified) or
//!   [`kernel::socket::attach`] (`SO_ATTACH_FILTER` on an `AF_UNIX` datagram
//!   socket). `ENOMEM` past `net.core.optmem_max` is charged after the
//!   conversion (`sk_filter_charge()`), so it counts as "converted".
//! - **Run.** Ours is the classic interpreter ([`engine::EngineKind::Cbpf`]);
//!   the kernel's is the kernel engine of the mode ([`kernel::KernelEngine`]
//!   for seccomp; [`kernel::socket::SocketFilter`] for socket filters, on
//!   the skb the `AF_UNIX` path builds, [`kernel::socket::unix_dgram_skb`]).
//!   A not-observable input is counted, never compared.
//!
//! A [`Reproducer`] holds everything needed to judge again without the
//! fuzzer: the program, the input, both answers and the kernel release.
//! `tests/fuzz_kernel_replay.rs` replays every one under
//! `testdata/fuzz-kernel/`.

use std::fmt::Write as _;

pub mod ebpf;

use cbpf::{Insn, Mode, Program, SeccompData};
use engine::{EngineKind, Prepared, SeccompEngine, SocketEngine, SocketOutcome};
use kernel::socket::{unix_dgram_skb, Attach, Delivery};
use serde::{Deserialize, Serialize};

/// Our answer to "does the kernel attach `insns` in `mode`?": `Ok` with the
/// validated program, or the first refusal (validation or conversion).
pub fn our_attach(insns: &[Insn], mode: Mode) -> Result<Program, String> {
    let program = cbpf::validate(insns, mode).map_err(|e| e.to_string())?;
    convert::check_attach(&program).map_err(|e| e.to_string())?;
    Ok(program)
}

/// The kernel's answer (see the module docs).
pub fn kernel_attach(insns: &[Insn], mode: Mode) -> Result<Attach, kernel::KernelError> {
    match mode {
        Mode::Seccomp => kernel::seccomp_attach(insns),
        _ => kernel::socket::attach(insns),
    }
}

/// Whether the two attach answers agree: we accept what the kernel accepts
/// (or converts and then charges past `optmem_max`), and refuse what it
/// refuses.
pub fn attach_agrees(ours: &Result<Program, String>, theirs: Attach) -> bool {
    matches!((ours, theirs), (Ok(_), Attach::Accepted | Attach::OverOptmem) | (Err(_), Attach::Rejected { .. }))
}

/// An attach answer as a reproducer records it.
pub fn attach_text(answer: &Result<Program, String>) -> String {
    match answer {
        Ok(_) => "accepted".into(),
        Err(e) => format!("rejected: {e}"),
    }
}

/// The kernel's attach answer as a reproducer records it.
pub fn kernel_attach_text(answer: Attach) -> String {
    match answer {
        Attach::Accepted => "accepted".into(),
        Attach::OverOptmem => "converted, over optmem_max (ENOMEM)".into(),
        Attach::Rejected { errno } => {
            format!("rejected: errno {errno} ({})", std::io::Error::from_raw_os_error(errno))
        }
    }
}

/// The `AF_UNIX` skb of `data` as the kernel path sees it, so only reads of
/// `SKF_AD_CPU`/`SKF_AD_RANDOM` (and what `unobservable` names) are not
/// comparable.
pub fn kernel_skb(data: &[u8]) -> cbpf::Skb<'_> {
    unix_dgram_skb(data)
}

/// One input of either mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Seccomp(SeccompData),
    Packet(Vec<u8>),
}

impl Input {
    /// Hex of the 64-byte `struct seccomp_data` (host order) or of the packet.
    pub fn hex(&self) -> String {
        match self {
            Input::Seccomp(d) => hex(&d.to_bytes()),
            Input::Packet(p) => hex(p),
        }
    }

    /// The inverse of [`Input::hex`] for `mode`.
    pub fn from_hex(mode: Mode, text: &str) -> Result<Input, String> {
        let bytes = unhex(text)?;
        match mode {
            Mode::Seccomp => {
                let bytes: [u8; 64] =
                    bytes.try_into().map_err(|b: Vec<u8>| format!("seccomp_data of {} bytes, not 64", b.len()))?;
                Ok(Input::Seccomp(SeccompData::from_bytes(&bytes)))
            }
            _ => Ok(Input::Packet(bytes)),
        }
    }
}

/// Lower-case hex of `bytes` (reproducers' inputs).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The inverse of [`hex`].
pub(crate) fn unhex(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    if text.len() % 2 != 0 {
        return Err(format!("odd hex length {}", text.len()));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or_else(|| format!("bad hex at {i}"))
        })
        .collect()
}

/// Our return value for `input`: the classic interpreter on the validated
/// `program` (socket inputs on the `AF_UNIX` skb).
pub fn our_run(program: &Program, input: &Input) -> Result<u32, String> {
    let interp = cbpf::Interp::new(program);
    match input {
        Input::Seccomp(d) => interp.run_seccomp(&d.to_bytes()),
        Input::Packet(p) => interp.run_socket(&kernel_skb(p)),
    }
    .map_err(|e| e.to_string())
}

/// A kernel run answer: a seccomp return value, or what happened to a
/// datagram, in `SocketOutcome`'s text (`0`, `N`, `>=N`).
pub fn kernel_run_agrees(ours: u32, kernel: &str, input: &Input) -> bool {
    match input {
        Input::Seccomp(_) => parse_u32(kernel) == Some(ours),
        Input::Packet(p) => {
            let len = u32::try_from(p.len()).unwrap_or(u32::MAX);
            let delivery = if kernel == "0" {
                Some(Delivery::Dropped)
            } else if let Some(n) = kernel.strip_prefix(">=") {
                parse_u32(n).map(|_| Delivery::Kept { kept: len, len })
            } else {
                parse_u32(kernel).map(|kept| Delivery::Kept { kept, len })
            };
            delivery.is_some_and(|d| d.agrees_with(ours))
        }
    }
}

fn parse_u32(text: &str) -> Option<u32> {
    match text.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A seccomp return value as reproducers record it.
pub fn ret_text(ret: u32) -> String {
    format!("{ret:#010x}")
}

/// One disagreement, self-contained (see the module docs). Written as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reproducer {
    /// `seccomp` or `socket`.
    pub mode: String,
    /// `attach` (accept/reject differ) or `run` (results differ).
    pub kind: String,
    /// The classic program, one `code jt jf k` (decimal, as `tcpdump -ddd`
    /// prints them) per instruction.
    pub program: Vec<String>,
    /// The same program in bpf_asm syntax, for people.
    pub asm: String,
    /// `run` only: hex of the input (64-byte `seccomp_data` in host order,
    /// or the datagram).
    pub input: Option<String>,
    /// Our answer (`accepted` / `rejected: …`; a return value).
    pub ours: String,
    /// The kernel's answer (`accepted` / `rejected: errno …`; a seccomp
    /// return value, or `0` / `N` / `>=N` for a datagram).
    pub kernel: String,
    /// Where it came from; its fields stand at this level in the JSON.
    #[serde(flatten)]
    pub origin: Origin,
}

/// Where a reproducer (classic or eBPF) came from, and whether the kernel
/// is at fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// `uname -r` of the kernel that answered.
    pub kernel_release: String,
    /// How to find it again (`--seed` and program index).
    pub found_by: String,
    /// When the kernel is at fault: the finding, naming the kernel function
    /// (e.g. `bpf_convert_filter()`); the replay then expects our answer to
    /// stay as recorded.
    #[serde(default)]
    pub kernel_bug: Option<String>,
}

impl Origin {
    /// Found now on the running kernel (`found_by` for the caller to say).
    pub fn here() -> Origin {
        Origin { kernel_release: kernel_release(), found_by: String::new(), kernel_bug: None }
    }
}

impl Reproducer {
    /// The program's instructions.
    pub fn insns(&self) -> Result<Vec<Insn>, String> {
        program_insns(&self.program)
    }

    /// `insns` as [`Reproducer::program`] holds them.
    pub fn program_lines(insns: &[Insn]) -> Vec<String> {
        insns.iter().map(|i| format!("{} {} {} {}", i.code, i.jt, i.jf, i.k)).collect()
    }

    /// The mode.
    pub fn mode(&self) -> Result<Mode, String> {
        match self.mode.as_str() {
            "seccomp" => Ok(Mode::Seccomp),
            "socket" => Ok(Mode::Socket),
            other => Err(format!("unknown mode `{other}`")),
        }
    }

    /// Judges again with today's code: `Ok(ours)` when our answer agrees
    /// with the recorded kernel answer, `Err(ours)` when it does not.
    pub fn replay(&self) -> Result<String, String> {
        let mode = self.mode()?;
        let ours = our_attach(&self.insns()?, mode);
        match self.kind.as_str() {
            "attach" => {
                let text = attach_text(&ours);
                let kernel_accepts = self.kernel == "accepted" || self.kernel.starts_with("converted");
                if ours.is_ok() == kernel_accepts {
                    Ok(text)
                } else {
                    Err(text)
                }
            }
            "run" => {
                let program = ours?;
                let input = Input::from_hex(mode, self.input.as_deref().ok_or("a run reproducer without input")?)?;
                let ret = our_run(&program, &input)?;
                let text = match mode {
                    Mode::Seccomp => ret_text(ret),
                    _ => ret.to_string(),
                };
                if kernel_run_agrees(ret, &self.kernel, &input) {
                    Ok(text)
                } else {
                    Err(text)
                }
            }
            other => Err(format!("unknown kind `{other}`")),
        }
    }
}

/// Classic instructions from `code jt jf k` lines (decimal), as
/// [`Reproducer::program`] holds them.
pub fn program_insns(program: &[String]) -> Result<Vec<Insn>, String> {
    program
        .iter()
        .map(|line| {
            let f: Vec<u64> = line
                .split_whitespace()
                .map(|w| w.parse::<u64>())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("`{line}`: {e}"))?;
            match f[..] {
                [code, jt, jf, k] => Ok(Insn {
                    code: u16::try_from(code).map_err(|e| format!("`{line}`: {e}"))?,
                    jt: u8::try_from(jt).map_err(|e| format!("`{line}`: {e}"))?,
                    jf: u8::try_from(jf).map_err(|e| format!("`{line}`: {e}"))?,
                    k: u32::try_from(k).map_err(|e| format!("`{line}`: {e}"))?,
                }),
                _ => Err(format!("`{line}` is not `code jt jf k`")),
            }
        })
        .collect()
}

/// What judging one program found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Programs whose attach answers were compared.
    pub programs: u64,
    /// Of those, accepted by both.
    pub accepted: u64,
    /// Of those, refused by both (e.g. past the conversion's jump limit).
    pub refused: u64,
    /// Accepted, converted, but over `optmem_max` (not run).
    pub over_optmem: u64,
    /// Accepted by both, but past what the kernel engine can run (too long
    /// for its rewrite, too many return values).
    pub not_run: u64,
    /// Inputs whose results were compared.
    pub inputs: u64,
    /// Inputs the kernel engine cannot observe.
    pub not_observable: u64,
    /// Disagreements (each saved as a [`Reproducer`]).
    pub disagreements: u64,
}

impl Tally {
    /// Adds `other` in.
    pub fn add(&mut self, other: &Tally) {
        self.programs += other.programs;
        self.accepted += other.accepted;
        self.refused += other.refused;
        self.over_optmem += other.over_optmem;
        self.not_run += other.not_run;
        self.inputs += other.inputs;
        self.not_observable += other.not_observable;
        self.disagreements += other.disagreements;
    }
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(|_| "unknown".into(), |s| s.trim().to_string())
}

fn reproducer(
    mode: Mode,
    kind: &str,
    insns: &[Insn],
    input: Option<&Input>,
    ours: String,
    kernel: String,
) -> Reproducer {
    Reproducer {
        mode: if mode == Mode::Seccomp { "seccomp" } else { "socket" }.into(),
        kind: kind.into(),
        program: Reproducer::program_lines(insns),
        asm: cbpf::text::print_asm(insns),
        input: input.map(Input::hex),
        ours,
        kernel,
        origin: Origin::here(),
    }
}

/// Judges `insns` and its `inputs` in `mode` against the running kernel:
/// the attach answers, then (when both attach) every input. Disagreements
/// come back as reproducers (`found_by` left for the caller).
pub fn judge(insns: &[Insn], mode: Mode, inputs: &[Input], tally: &mut Tally) -> Result<Vec<Reproducer>, String> {
    let ours = our_attach(insns, mode);
    let theirs = kernel_attach(insns, mode).map_err(|e| e.to_string())?;
    tally.programs += 1;
    if !attach_agrees(&ours, theirs) {
        tally.disagreements += 1;
        return Ok(vec![reproducer(mode, "attach", insns, None, attach_text(&ours), kernel_attach_text(theirs))]);
    }
    let Ok(program) = ours else {
        tally.refused += 1;
        return Ok(Vec::new());
    };
    tally.accepted += 1;
    if theirs == Attach::OverOptmem {
        tally.over_optmem += 1;
        return Ok(Vec::new());
    }
    let Ok(prepared) = Prepared::new(program) else {
        // check_attach accepted it, so the conversion cannot fail here.
        tally.not_run += 1;
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    match mode {
        Mode::Seccomp => {
            let data: Vec<SeccompData> = inputs
                .iter()
                .filter_map(|i| match i {
                    Input::Seccomp(d) => Some(*d),
                    Input::Packet(_) => None,
                })
                .collect();
            let mut kernel = SeccompEngine::new(EngineKind::Kernel, &prepared).map_err(|e| e.to_string())?;
            let outcomes = match kernel.eval_batch(&data) {
                Ok(o) => o,
                Err(engine::EngineError::Kernel(
                    kernel::KernelError::TooLong { .. } | kernel::KernelError::TooManyReturnValues { .. },
                )) => {
                    tally.not_run += 1;
                    return Ok(Vec::new());
                }
                Err(e) => return Err(e.to_string()),
            };
            for (d, outcome) in data.iter().zip(outcomes) {
                let input = Input::Seccomp(*d);
                let ours = our_run(prepared.program(), &input).unwrap_or(0);
                match outcome {
                    engine::Outcome::NotObservable(_) => tally.not_observable += 1,
                    engine::Outcome::Action(k) if k == ours => tally.inputs += 1,
                    engine::Outcome::Action(k) => {
                        tally.inputs += 1;
                        tally.disagreements += 1;
                        found.push(reproducer(mode, "run", insns, Some(&input), ret_text(ours), ret_text(k)));
                    }
                }
            }
        }
        _ => {
            let mut kernel = SocketEngine::new(EngineKind::Kernel, &prepared).map_err(|e| e.to_string())?;
            for input in inputs {
                let Input::Packet(p) = input else { continue };
                let skb = kernel_skb(p);
                let ours = our_run(prepared.program(), input).unwrap_or(0);
                match kernel.eval(&skb).map_err(|e| e.to_string())? {
                    SocketOutcome::NotObservable(_) | SocketOutcome::Delivered(Delivery::NotSent { .. }) => {
                        tally.not_observable += 1
                    }
                    got if got.agrees_with(ours) => tally.inputs += 1,
                    got => {
                        tally.inputs += 1;
                        tally.disagreements += 1;
                        found.push(reproducer(mode, "run", insns, Some(input), ours.to_string(), got.to_string()));
                    }
                }
            }
        }
    }
    Ok(found)
}

/// Whether the kernel lets this process judge `mode` at all: `Err` says why
/// not (not root, seccomp unavailable, socket filters refused).
pub fn available(mode: Mode) -> Result<(), String> {
    let ret_one = [Insn::stmt(cbpf::opcode::RET_K, 0x7fff_0000)];
    match kernel_attach(&ret_one, mode) {
        Ok(Attach::Accepted) => {}
        Ok(other) => return Err(format!("the kernel refuses even `ret #0x7fff0000`: {other:?}")),
        Err(e) => return Err(e.to_string()),
    }
    if mode == Mode::Seccomp {
        kernel::stub_ips().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `insns` without instruction `at`, jumps over it shortened by one (a jump
/// to it now lands on its successor, which takes its place); `None` when a
/// jump's offset would not fit or `at` is the last instruction.
fn without(insns: &[Insn], at: usize) -> Option<Vec<Insn>> {
    if at + 1 >= insns.len() {
        return None;
    }
    let mut out = Vec::with_capacity(insns.len() - 1);
    for (pc, insn) in insns.iter().enumerate() {
        if pc == at {
            continue;
        }
        let mut insn = *insn;
        if pc < at {
            let past = |off: u32| (pc as u64 + 1 + u64::from(off)) > at as u64;
            match cbpf::Op::from_insn(insn) {
                Some(cbpf::Op::Ja { k }) if past(k) => insn.k = k - 1,
                Some(cbpf::Op::Jmp { .. }) => {
                    if past(u32::from(insn.jt)) {
                        insn.jt = insn.jt.checked_sub(1)?;
                    }
                    if past(u32::from(insn.jf)) {
                        insn.jf = insn.jf.checked_sub(1)?;
                    }
                }
                _ => {}
            }
        }
        out.push(insn);
    }
    Some(out)
}

/// Shrinks a disagreement while `still` says it persists: drops
/// instructions (last first, jumps adjusted) and, for a packet, cuts its
/// tail; at most `budget` calls of `still`. Returns the smaller program and
/// input.
pub fn minimise_with(
    insns: &[Insn],
    input: Option<&Input>,
    budget: usize,
    mut still: impl FnMut(&[Insn], Option<&Input>) -> bool,
) -> (Vec<Insn>, Option<Input>) {
    let mut best = insns.to_vec();
    let mut input = input.cloned();
    let mut calls = 0;
    let mut progress = true;
    while progress && calls < budget {
        progress = drop_pass(&mut best, (&mut calls, budget), without, |c| still(c, input.as_ref()));
        if let Some(Input::Packet(p)) = input.clone() {
            let mut len = p.len() / 2;
            while len < p.len() && calls < budget {
                let cut = Input::Packet(p.get(..len).unwrap_or_default().to_vec());
                calls += 1;
                if still(&best, Some(&cut)) {
                    input = Some(cut);
                    progress = true;
                    break;
                }
                len += (p.len() - len).div_ceil(2);
            }
        }
    }
    (best, input)
}

/// One pass of a minimiser over `best`, last item first: each item that
/// `without(best, at)` can remove (`None`: it cannot) stays out when
/// `still` holds for the rest. `calls` counts `still`'s calls up to its
/// budget. True when anything went.
pub(crate) fn drop_pass<T>(
    best: &mut Vec<T>,
    (calls, budget): (&mut usize, usize),
    without: impl Fn(&[T], usize) -> Option<Vec<T>>,
    mut still: impl FnMut(&[T]) -> bool,
) -> bool {
    let mut progress = false;
    for at in (0..best.len()).rev() {
        if *calls >= budget {
            break;
        }
        let Some(candidate) = without(best, at) else { continue };
        *calls += 1;
        if still(&candidate) {
            *best = candidate;
            progress = true;
        }
    }
    progress
}

/// [`minimise_with`] against the running kernel: the disagreement of
/// `repro`'s kind persists when [`judge`] still reports one of that kind.
pub fn minimise(repro: &Reproducer, budget: usize) -> Result<Reproducer, String> {
    let mode = repro.mode()?;
    let input = repro.input.as_deref().map(|h| Input::from_hex(mode, h)).transpose()?;
    let kind = repro.kind.clone();
    let (insns, input) = minimise_with(&repro.insns()?, input.as_ref(), budget, |insns, input| {
        let inputs: Vec<Input> = input.into_iter().cloned().collect();
        let mut tally = Tally::default();
        judge(insns, mode, &inputs, &mut tally).is_ok_and(|found| found.iter().any(|r| r.kind == kind))
    });
    let mut tally = Tally::default();
    let inputs: Vec<Input> = input.into_iter().collect();
    let found = judge(&insns, mode, &inputs, &mut tally)?;
    let mut small = found.into_iter().find(|r| r.kind == kind).ok_or("the disagreement went away while minimising")?;
    small.origin.found_by = repro.origin.found_by.clone();
    Ok(small)
}
