//! The running kernel as a seccomp engine.
//!
//! For each filter we fork a child that installs a *rewritten* copy of it and
//! then issues every input as a real system call from a stub at a known
//! address. Nothing the filter decides is ever carried out:
//!
//! * every `ret #k` becomes `ret #(SECCOMP_RET_ERRNO | i)`, where `i`
//!   (1..=0xbff) numbers the distinct `k` values, so the errno the stub gets
//!   back names the `ret` reached and we map it back to `k`;
//! * every `ret a` becomes a `ja` to a shared tail that returns
//!   `SECCOMP_RET_ERRNO | 0xc00 | ((A >> s) & 0x3ff)`; four runs with
//!   s = 0, 10, 20, 30 recover all 32 bits of A;
//! * a prologue lets every system call whose `instruction_pointer` is not one
//!   of the two stubs through with ALLOW (the child's own bookkeeping),
//!   then clears A and falls into the user's program. cBPF jumps are
//!   relative, so prefixing does not disturb them.
//!
//! A filter can still kill the child without a `ret`: division by X == 0
//! returns 0, `SECCOMP_RET_KILL_THREAD`. The child's death by SIGSYS is then
//! recorded as `Action(0)` for the input it was running, and a fresh child
//! carries on with the rest. To keep that cheap, one forked "zygote" sets
//! NO_NEW_PRIVS and installs the filter once, then runs the inputs in
//! `clone(CLONE_VM | CLONE_VFORK)` workers on a small stack of their own
//! (no page-table copy; they inherit the filter): a worker that dies is
//! reaped by the zygote, which starts the next one after the killing input.
//! The zygote runs under a timeout on progress (no input started for that
//! long kills it).
//!
//! The i386 path uses `int 0x80`, so it needs IA32 emulation; where it is
//! disabled the child dies by SIGSEGV and the input is reported
//! [`Outcome::NotObservable`] with that reason.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use cbpf::{Insn, Op, Size};

use crate::child;
use crate::sys::{self, get, put, Exit, Failed};
use crate::KernelError;

pub use cbpf::uapi::audit::{AUDIT_ARCH_I386, AUDIT_ARCH_X86_64};
/// `__NR_uretprobe` on x86_64, as the `i32` a system call number is here.
pub const NR_URETPROBE: i32 = cbpf::uapi::x86_64::NR_URETPROBE as i32;
/// `__NR_uprobe` on x86_64.
pub const NR_UPROBE: i32 = cbpf::uapi::x86_64::NR_UPROBE as i32;

use cbpf::opcode::{
    ALU_AND_K, ALU_OR_K, ALU_RSH_K, BPF_MAXINSNS as MAX_INSNS, JMP_JA, JMP_JEQ_K, LD_IMM, LD_W_ABS, RET_A, RET_K,
};
use cbpf::uapi::seccomp::{OFFSET_IP, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO};

/// Largest errno code used for `ret #k` (codes above are `ret a` chunks).
const RET_K_CODES: usize = 0xbff;
const RET_A_BASE: u32 = 0xc00;
const RET_A_CHUNK_BITS: u32 = 10;
const RET_A_SHIFTS: [u32; 4] = [0, 10, 20, 30];
/// The halves of `instruction_pointer` in `struct seccomp_data` (x86_64 is
/// little-endian: low half first).
const IP_LO: u32 = OFFSET_IP;
const IP_HI: u32 = OFFSET_IP + 4;

/// One `struct seccomp_data` to present to the filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Input {
    /// `AUDIT_ARCH_*`.
    pub arch: u32,
    /// `nr`, signed as in the kernel (x32 numbers carry bit 30).
    pub nr: i32,
    /// `args[0..6]`.
    pub args: [u64; 6],
    /// `instruction_pointer`.
    pub ip: u64,
}

/// What the kernel did with one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The 32-bit value the filter returned (`ret #k`, `ret a`, or 0 for a
    /// kill by division by zero). Like every engine of this project, this is
    /// the filter's own return value: an ALLOW's data bits are kept, unknown
    /// actions are not folded into KILL_PROCESS.
    Action(u32),
    /// The kernel cannot be made to run the filter on this input here.
    NotObservable(Unobservable),
}

/// Why an input could not be observed on the running kernel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unobservable {
    /// Only x86_64 (with x32 numbers) and i386 can be produced on x86_64.
    #[error("arch {arch:#010x} cannot be produced on an x86_64 kernel")]
    ForeignArch { arch: u32 },
    /// uretprobe/uprobe bypass seccomp on native x86_64.
    #[error("syscall {nr} (uretprobe/uprobe) bypasses seccomp on native x86_64")]
    UprobeBypass { nr: i32 },
    /// i386 registers are 32 bits wide.
    #[error("i386 args[{index}] = {value:#x} does not fit in a 32-bit register")]
    ArgTooWide { index: usize, value: u64 },
    /// The filter reads `instruction_pointer` and the input's differs from
    /// the stub's.
    #[error("filter reads instruction_pointer and ip {ip:#x} differs from the stub's {stub_ip:#x}")]
    InstructionPointer { ip: u64, stub_ip: u64 },
    /// The child died by a signal other than a seccomp kill (e.g. SIGSEGV
    /// from `int 0x80` without IA32 emulation).
    #[error("the child died by signal {signal} (for i386: is IA32 emulation disabled?)")]
    ChildSignal { signal: i32 },
    /// The child died by SIGSYS while this process was itself under seccomp
    /// filters, so the kill may come from those rather than from the filter.
    #[error("the child was killed while outer seccomp filters were installed; the kill cannot be attributed")]
    OuterFilters,
    /// The stub got back a value no rewritten `ret` produces.
    #[error("unexpected system call return value {value}")]
    UnexpectedReturn { value: i64 },
}

/// The running kernel as a seccomp engine. See the module docs.
#[derive(Debug, Clone)]
pub struct KernelEngine {
    timeout: Duration,
}

impl Default for KernelEngine {
    fn default() -> Self {
        KernelEngine { timeout: Duration::from_secs(20) }
    }
}

/// `instruction_pointer` values the stubs produce on this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StubIps {
    /// After the `syscall` instruction (x86_64 and x32 inputs).
    pub syscall: u64,
    /// After the `int 0x80` instruction (i386 inputs).
    pub int80: u64,
}

/// Shorthand for `KernelEngine::default().run_vectors(filter, inputs)`.
pub fn run_vectors(filter: &[Insn], inputs: &[Input]) -> Result<Vec<Outcome>, KernelError> {
    KernelEngine::default().run_vectors(filter, inputs)
}

/// Checks that this process can install seccomp filters at all (x86_64
/// Linux, filter mode built in, `SECCOMP_GET_ACTION_AVAIL` answering).
pub fn seccomp_available() -> Result<(), KernelError> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Err(KernelError::Unsupported { reason: "the kernel engine needs x86_64 Linux" });
    }
    sys::action_available(SECCOMP_RET_ERRNO).map_err(|errno| KernelError::SeccompUnavailable { errno })
}

/// Does `seccomp(SECCOMP_SET_MODE_FILTER)` accept `filter` as it is (no
/// rewriting)? Installed once in a fresh child after `PR_SET_NO_NEW_PRIVS`:
/// `seccomp_prepare_filter()` (kernel/seccomp.c) runs
/// `bpf_prog_create_from_user()` with `seccomp_check_filter()`, which
/// validates and converts it (`bpf_prepare_filter()` →
/// `bpf_migrate_filter()` → `bpf_convert_filter()`, net/core/filter.c).
/// The answer is [`crate::socket::Attach::Accepted`] or `Rejected` with the
/// errno (never `OverOptmem`: seccomp filters are not charged to a socket).
pub fn seccomp_attach(filter: &[Insn]) -> Result<crate::socket::Attach, KernelError> {
    seccomp_available()?;
    Ok(match child::install_in_child(&sys::to_sock_filters(filter))? {
        Ok(_) => crate::socket::Attach::Accepted,
        Err(errno) => crate::socket::Attach::Rejected { errno },
    })
}

/// The stub addresses (mapping the stub page on first use).
///
/// The page (4 KiB, read+execute, at 0x5ec0_0000_0000 when that address is
/// free, so the ips are those of testdata/filters: 0x5ec0_0000_0019 and
/// 0x5ec0_0000_011a) stays mapped in the calling process for its lifetime,
/// so that every forked child inherits it.
pub fn stub_ips() -> Result<StubIps, KernelError> {
    stub_page().map(|s| StubIps { syscall: s.syscall_ip(), int80: s.int80_ip() })
}

fn stub_page() -> Result<&'static sys::stub::StubPage, KernelError> {
    static PAGE: OnceLock<Result<sys::stub::StubPage, i32>> = OnceLock::new();
    PAGE.get_or_init(sys::stub::StubPage::map)
        .as_ref()
        .map_err(|&errno| KernelError::Os { op: "mmap stub page", errno })
}

/// `Seccomp:` of /proc/self/status: 0 none, 1 strict, 2 filter.
fn own_seccomp_mode() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Seccomp:").map(|v| v.trim().parse().unwrap_or(0))))
        .unwrap_or(0)
}

/// True when some `ld [8]` / `ld [12]` reads `instruction_pointer` (the only
/// way a seccomp filter can: it allows no other data access).
pub fn reads_instruction_pointer(filter: &[Insn]) -> bool {
    filter.iter().any(|i| matches!(i.op(), Some(Op::LdAbs { size: Size::W, k }) if k == IP_LO || k == IP_HI))
}

/// The rewritten program and how to map errno codes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rewritten {
    pub(crate) insns: Vec<Insn>,
    /// `ret_values[code - 1]` is the `k` of the `ret #k` that errno `code`
    /// stands for.
    pub(crate) ret_values: Vec<u32>,
    pub(crate) has_ret_a: bool,
}

/// Length of the prologue [`rewrite`] prepends.
pub(crate) const PROLOGUE_LEN: usize = 7;

/// Builds the program installed in the child; `shift` selects which 10 bits
/// of A a `ret a` reports.
pub(crate) fn rewrite(filter: &[Insn], ips: StubIps, shift: u32) -> Result<Rewritten, KernelError> {
    let hi = (ips.syscall >> 32) as u32;
    let lo_syscall = ips.syscall as u32;
    let lo_int80 = ips.int80 as u32;
    let stub_hi_differs = (ips.int80 >> 32) as u32 != hi;
    if stub_hi_differs {
        return Err(KernelError::Unsupported { reason: "stub instruction pointers differ in their high half" });
    }
    let mut values: BTreeMap<u32, u32> = BTreeMap::new();
    let mut ret_values = Vec::new();
    for k in filter.iter().filter_map(|i| match i.op() {
        Some(Op::RetK { k }) => Some(k),
        _ => None,
    }) {
        if let std::collections::btree_map::Entry::Vacant(slot) = values.entry(k) {
            ret_values.push(k);
            slot.insert(u32::try_from(ret_values.len()).unwrap_or(u32::MAX));
        }
    }
    if ret_values.len() > RET_K_CODES {
        return Err(KernelError::TooManyReturnValues { distinct: ret_values.len(), max: RET_K_CODES });
    }
    let has_ret_a = filter.iter().any(|i| i.op() == Some(Op::RetA));
    let tail_len = if has_ret_a { 4 } else { 0 };
    let total = PROLOGUE_LEN + filter.len() + tail_len;
    if total > MAX_INSNS {
        return Err(KernelError::TooLong { len: filter.len(), max: MAX_INSNS - PROLOGUE_LEN - tail_len });
    }
    let mut insns = Vec::with_capacity(total);
    // 0: A = ip high; 1: not a stub -> 5 (allow); 2: A = ip low;
    // 3: syscall stub -> 6; 4: int 0x80 stub -> 6, else 5; 5: allow;
    // 6: A = 0 and fall into the user's program.
    insns.push(Insn::stmt(LD_W_ABS, IP_HI));
    insns.push(Insn::jump(JMP_JEQ_K, hi, 0, 3));
    insns.push(Insn::stmt(LD_W_ABS, IP_LO));
    insns.push(Insn::jump(JMP_JEQ_K, lo_syscall, 2, 0));
    insns.push(Insn::jump(JMP_JEQ_K, lo_int80, 1, 0));
    insns.push(Insn::stmt(RET_K, SECCOMP_RET_ALLOW));
    insns.push(Insn::stmt(LD_IMM, 0));
    let tail_start = PROLOGUE_LEN + filter.len();
    for (pc, insn) in filter.iter().enumerate() {
        let new = match insn.op() {
            Some(Op::RetK { k }) => {
                let code = values.get(&k).copied().unwrap_or(0);
                Insn::stmt(RET_K, SECCOMP_RET_ERRNO | code)
            }
            Some(Op::RetA) => {
                let here = PROLOGUE_LEN + pc;
                Insn::stmt(JMP_JA, (tail_start - here - 1) as u32)
            }
            _ => *insn,
        };
        insns.push(new);
    }
    if has_ret_a {
        insns.push(Insn::stmt(ALU_RSH_K, shift));
        insns.push(Insn::stmt(ALU_AND_K, (1 << RET_A_CHUNK_BITS) - 1));
        insns.push(Insn::stmt(ALU_OR_K, SECCOMP_RET_ERRNO | RET_A_BASE));
        insns.push(Insn::stmt(RET_A, 0));
    }
    Ok(Rewritten { insns, ret_values, has_ret_a })
}

/// What one stub call came back with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Raw {
    Returned(i64),
    Died(i32),
}

/// Decoded meaning of a raw result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decoded {
    RetK(u32),
    RetAChunk(u32),
    Unexpected(i64),
}

fn decode(raw: i64, ret_values: &[u32]) -> Decoded {
    if !(-4095..=-1).contains(&raw) {
        return Decoded::Unexpected(raw);
    }
    let code = (-raw) as u32;
    if code >= RET_A_BASE {
        return Decoded::RetAChunk(code - RET_A_BASE);
    }
    match ret_values.get(code as usize - 1) {
        Some(&k) => Decoded::RetK(k),
        None => Decoded::Unexpected(raw),
    }
}

impl KernelEngine {
    /// An engine with the default per-child timeout (20 s).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets how long one child may run before it is killed and
    /// [`KernelError::Timeout`] returned.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs `filter` on every input on the running kernel; one outcome per
    /// input, in order.
    ///
    /// Errors are for the run as a whole (seccomp unavailable, filter
    /// refused by the kernel, timeout); per-input limits are
    /// [`Outcome::NotObservable`].
    pub fn run_vectors(&self, filter: &[Insn], inputs: &[Input]) -> Result<Vec<Outcome>, KernelError> {
        seccomp_available()?;
        let stub = stub_page()?;
        let ips = StubIps { syscall: stub.syscall_ip(), int80: stub.int80_ip() };
        let outer_filters = own_seccomp_mode() != 0;
        let reads_ip = reads_instruction_pointer(filter);

        let mut outcomes: Vec<Option<Outcome>> = vec![None; inputs.len()];
        let mut jobs: Vec<(usize, Job)> = Vec::new();
        for (i, input) in inputs.iter().enumerate() {
            match plan(input, ips, reads_ip) {
                Ok(job) => jobs.push((i, job)),
                Err(why) => {
                    if let Some(slot) = outcomes.get_mut(i) {
                        *slot = Some(Outcome::NotObservable(why));
                    }
                }
            }
        }

        let first = rewrite(filter, ips, 0)?;
        let job_list: Vec<Job> = jobs.iter().map(|(_, j)| *j).collect();
        let raws = self.execute(&first.insns, &job_list, stub)?;
        // Inputs that reached `ret a`: index into `jobs`, bits gathered.
        let mut ret_a: Vec<(usize, u32)> = Vec::new();
        for (n, ((i, _), raw)) in jobs.iter().zip(&raws).enumerate() {
            let outcome = match *raw {
                Raw::Returned(v) => match decode(v, &first.ret_values) {
                    Decoded::RetK(k) => Outcome::Action(k),
                    Decoded::RetAChunk(bits) => {
                        ret_a.push((n, bits));
                        continue;
                    }
                    Decoded::Unexpected(value) => Outcome::NotObservable(Unobservable::UnexpectedReturn { value }),
                },
                Raw::Died(signal) => died(signal, outer_filters),
            };
            if let Some(slot) = outcomes.get_mut(*i) {
                *slot = Some(outcome);
            }
        }
        if !ret_a.is_empty() {
            let subset: Vec<Job> = ret_a.iter().filter_map(|&(n, _)| jobs.get(n).map(|(_, j)| *j)).collect();
            let mut failed: Vec<Option<Outcome>> = vec![None; ret_a.len()];
            for &shift in RET_A_SHIFTS.iter().skip(1) {
                let variant = rewrite(filter, ips, shift)?;
                let raws = self.execute(&variant.insns, &subset, stub)?;
                for ((entry, raw), fail) in ret_a.iter_mut().zip(&raws).zip(failed.iter_mut()) {
                    let bad = match *raw {
                        Raw::Returned(v) => match decode(v, &variant.ret_values) {
                            Decoded::RetAChunk(bits) => {
                                entry.1 |= bits << shift;
                                continue;
                            }
                            // The program is deterministic: the same input
                            // cannot take another path in a later run.
                            Decoded::RetK(_) | Decoded::Unexpected(_) => {
                                Outcome::NotObservable(Unobservable::UnexpectedReturn { value: v })
                            }
                        },
                        Raw::Died(signal) => died(signal, outer_filters),
                    };
                    fail.get_or_insert(bad);
                }
            }
            for ((n, bits), fail) in ret_a.into_iter().zip(failed) {
                if let Some((i, _)) = jobs.get(n) {
                    if let Some(slot) = outcomes.get_mut(*i) {
                        *slot = Some(fail.unwrap_or(Outcome::Action(bits)));
                    }
                }
            }
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or(Outcome::NotObservable(Unobservable::UnexpectedReturn { value: 0 })))
            .collect())
    }

    /// Runs `jobs` in one forked zygote that installs the filter once and
    /// then runs them in `clone(CLONE_VM | CLONE_VFORK)` workers: a worker
    /// runs jobs until done or killed, the zygote reaps it and starts the
    /// next worker after the killing job. One raw result per job.
    fn execute(&self, insns: &[Insn], jobs: &[Job], stub: &sys::stub::StubPage) -> Result<Vec<Raw>, KernelError> {
        let prog = sys::to_sock_filters(insns);
        // words[STARTED] = jobs started (progress), words[SETUP] = errno of
        // a failed setup step or the signal of a worker that died before
        // starting a job, words[NEXT] = first job of the current worker,
        // words[RESULTS + 2n] = raw result of job n, words[RESULTS + 2n + 1]
        // = TAG_RETURNED or TAG_DIED | signal.
        let shared = sys::SharedWords::new(RESULTS + 2 * jobs.len())
            .map_err(|errno| KernelError::Os { op: "mmap shared results", errno })?;
        let words = shared.words();
        let mut stack = sys::ChildStack::new(WORKER_STACK);
        let zygote = || -> i32 {
            sys::harden_child(false);
            // Installed here once: every worker inherits it, and the
            // prologue lets every call not from the stubs (the zygote's own
            // clone/wait) through.
            if let Err((step, e)) = sys::enter_filters([prog.as_slice()]) {
                put(words, SETUP, e as u64);
                return step.code();
            }
            let mut worker = || -> i32 {
                sys::die_with_parent();
                let first = get(words, NEXT) as usize;
                for (n, job) in jobs.iter().enumerate().skip(first) {
                    put(words, STARTED, n as u64 + 1);
                    // SAFETY: the rewritten filter answers every call from
                    // the stub with an ERRNO (or kills): nothing runs.
                    let r = unsafe { stub.call(job.entry, &job.args) };
                    put(words, RESULTS + 2 * n, r as u64);
                    put(words, RESULTS + 2 * n + 1, TAG_RETURNED);
                }
                0
            };
            let mut next = 0;
            while next < jobs.len() {
                put(words, NEXT, next as u64);
                // SAFETY: the worker only makes async-signal-safe calls
                // (prctl, the stub) and stores to shared atomics; it uses
                // its own stack and nothing on ours.
                let pid = match unsafe { sys::clone_vm_vfork(&mut stack, &mut worker) } {
                    Ok(pid) => pid,
                    Err(e) => {
                        put(words, SETUP, e as u64);
                        return Failed::Clone.code();
                    }
                };
                match sys::reap_blocking(pid) {
                    Ok(Exit::Code(0)) => break,
                    Ok(Exit::Code(_) | Exit::Failed(_)) => return Failed::Worker.code(),
                    Ok(Exit::Signal(signal)) => {
                        let started = get(words, STARTED) as usize;
                        if started <= next {
                            put(words, SETUP, signal as u64);
                            return Failed::WorkerDied.code();
                        }
                        let dead = started - 1;
                        put(words, RESULTS + 2 * dead + 1, TAG_DIED | signal as u64);
                        next = started;
                    }
                    Err(e) => {
                        put(words, SETUP, e as u64);
                        return Failed::Wait.code();
                    }
                }
            }
            0
        };
        // SAFETY: the zygote only calls async-signal-safe wrappers (prctl,
        // setrlimit, seccomp, clone, waitpid, the stub) and stores to shared
        // atomics; all memory it reads was prepared before the fork.
        let pid = unsafe { sys::fork_child(zygote) }.map_err(|errno| KernelError::Os { op: "fork", errno })?;
        let mut progress = Progress::default();
        let exit = loop {
            match sys::wait_child(pid, self.timeout) {
                Ok(Some(exit)) => break exit,
                Ok(None) => {
                    if progress.stalled(get(words, STARTED)) {
                        sys::kill_child(pid);
                        return Err(KernelError::Timeout { timeout: self.timeout });
                    }
                }
                Err(errno) => {
                    sys::kill_child(pid);
                    return Err(KernelError::Os { op: "waitpid", errno });
                }
            }
        };
        let setup = get(words, SETUP) as i32;
        match exit {
            Exit::Code(0) => {}
            Exit::Failed(Failed::NoNewPrivs) => {
                return Err(KernelError::Os { op: "prctl(PR_SET_NO_NEW_PRIVS)", errno: setup })
            }
            Exit::Failed(Failed::Install) => return Err(KernelError::FilterRejected { errno: setup, len: prog.len() }),
            Exit::Failed(Failed::Clone) => return Err(KernelError::Os { op: "clone", errno: setup }),
            Exit::Failed(Failed::Wait) => return Err(KernelError::Os { op: "waitpid", errno: setup }),
            Exit::Failed(Failed::WorkerDied) => return Err(KernelError::ChildDied { signal: setup }),
            Exit::Failed(step) => return Err(KernelError::ChildExit { code: step.code() }),
            Exit::Code(code) => return Err(KernelError::ChildExit { code }),
            Exit::Signal(signal) => return Err(KernelError::ChildDied { signal }),
        }
        (0..jobs.len())
            .map(|n| {
                raw_result(get(words, RESULTS + 2 * n), get(words, RESULTS + 2 * n + 1))
                    .ok_or(KernelError::ChildExit { code: 0 })
            })
            .collect()
    }
}

/// The zygote's progress seen by the parent's waits: the timeout bounds a
/// stretch without a job started, not the whole batch (a batch of many
/// killing inputs may legitimately be long).
#[derive(Debug, Default)]
struct Progress {
    /// Jobs started at the last wait that timed out.
    seen: Option<u64>,
}

impl Progress {
    /// Whether `started` (jobs started so far) is where the last timed-out
    /// wait found it; the first wait never counts as a stall.
    fn stalled(&mut self, started: u64) -> bool {
        self.seen.replace(started) == Some(started)
    }
}

/// A job's raw result from its two shared words; `None` for a job the
/// zygote never tagged although it exited 0 (its bookkeeping broken).
fn raw_result(value: u64, tag: u64) -> Option<Raw> {
    match tag {
        TAG_RETURNED => Some(Raw::Returned(value as i64)),
        t if t & TAG_DIED != 0 => Some(Raw::Died((t & !TAG_DIED) as i32)),
        _ => None,
    }
}

const STARTED: usize = 0;
const SETUP: usize = 1;
const NEXT: usize = 2;
const RESULTS: usize = 3;
const TAG_RETURNED: u64 = 1;
const TAG_DIED: u64 = 1 << 32;
/// Stack of a worker: it only runs the stub loop.
const WORKER_STACK: usize = 64 * 1024;

fn died(signal: i32, outer_filters: bool) -> Outcome {
    if signal != libc::SIGSYS {
        Outcome::NotObservable(Unobservable::ChildSignal { signal })
    } else if outer_filters {
        Outcome::NotObservable(Unobservable::OuterFilters)
    } else {
        // Only a return of 0 (KILL_THREAD, from division by zero) kills:
        // every `ret` was rewritten to an ERRNO.
        Outcome::Action(0)
    }
}

/// One system call the child will issue.
#[derive(Debug, Clone, Copy)]
struct Job {
    entry: sys::stub::Entry,
    args: sys::stub::StubArgs,
}

/// How to produce `input`, or why it cannot be produced.
fn plan(input: &Input, ips: StubIps, reads_ip: bool) -> Result<Job, Unobservable> {
    let (entry, stub_ip, nr) = match input.arch {
        AUDIT_ARCH_X86_64 => {
            if input.nr == NR_URETPROBE || input.nr == NR_UPROBE {
                return Err(Unobservable::UprobeBypass { nr: input.nr });
            }
            (sys::stub::Entry::Syscall, ips.syscall, i64::from(input.nr) as u64)
        }
        AUDIT_ARCH_I386 => {
            if let Some((index, &value)) = input.args.iter().enumerate().find(|(_, &a)| a > u64::from(u32::MAX)) {
                return Err(Unobservable::ArgTooWide { index, value });
            }
            (sys::stub::Entry::Int80, ips.int80, u64::from(input.nr as u32))
        }
        arch => return Err(Unobservable::ForeignArch { arch }),
    };
    if reads_ip && input.ip != stub_ip {
        return Err(Unobservable::InstructionPointer { ip: input.ip, stub_ip });
    }
    Ok(Job { entry, args: sys::stub::StubArgs { nr, args: input.args } })
}

#[cfg(test)]
mod tests {
    use super::*;

    const IPS: StubIps = StubIps { syscall: 0x5ec0_0000_0019, int80: 0x5ec0_0000_011a };

    #[test]
    fn rewrite_maps_each_distinct_ret_value_once() {
        let filter = [
            Insn::stmt(LD_W_ABS, 0),
            Insn::jump(JMP_JEQ_K, 1, 0, 1),
            Insn::stmt(RET_K, SECCOMP_RET_ALLOW),
            Insn::jump(JMP_JEQ_K, 2, 0, 1),
            Insn::stmt(RET_K, SECCOMP_RET_ALLOW),
            Insn::stmt(RET_K, 0),
        ];
        let rw = rewrite(&filter, IPS, 0).unwrap();
        assert_eq!(rw.ret_values, vec![SECCOMP_RET_ALLOW, 0]);
        assert_eq!(rw.insns.len(), PROLOGUE_LEN + filter.len());
        assert_eq!(rw.insns[PROLOGUE_LEN + 2], Insn::stmt(RET_K, SECCOMP_RET_ERRNO | 1));
        assert_eq!(rw.insns[PROLOGUE_LEN + 4], Insn::stmt(RET_K, SECCOMP_RET_ERRNO | 1));
        assert_eq!(rw.insns[PROLOGUE_LEN + 5], Insn::stmt(RET_K, SECCOMP_RET_ERRNO | 2));
        // The prologue reads `instruction_pointer` (offset 8) high half
        // first. Checked here, before any kernel test runs: a prologue that
        // missed the stubs would let their calls through for real.
        assert_eq!((rw.insns[0], rw.insns[2]), (Insn::stmt(LD_W_ABS, 12), Insn::stmt(LD_W_ABS, 8)));
        assert_eq!(rw.insns[1].k, 0x5ec0);
        assert_eq!(rw.insns[3].k, 0x19);
        assert_eq!(rw.insns[4].k, 0x11a);
        assert!(!rw.has_ret_a);
    }

    #[test]
    fn rewrite_sends_ret_a_to_the_tail() {
        let filter = [Insn::stmt(LD_W_ABS, 16), Insn::stmt(RET_A, 0)];
        let rw = rewrite(&filter, IPS, 20).unwrap();
        let ja = rw.insns[PROLOGUE_LEN + 1];
        assert_eq!(ja.code, JMP_JA);
        assert_eq!(PROLOGUE_LEN + 1 + 1 + ja.k as usize, PROLOGUE_LEN + filter.len());
        assert_eq!(rw.insns[PROLOGUE_LEN + 2], Insn::stmt(ALU_RSH_K, 20));
        assert_eq!(rw.insns.last(), Some(&Insn::stmt(RET_A, 0)));
    }

    /// Every `ret a`, wherever it is, jumps to the first instruction of
    /// the tail (`rsh`), which follows the user's program.
    #[test]
    fn every_ret_a_jumps_to_the_tail() {
        let filter = [
            Insn::stmt(LD_W_ABS, 16),
            Insn::jump(JMP_JEQ_K, 1, 0, 1),
            Insn::stmt(RET_A, 0),
            Insn::stmt(LD_IMM, 5),
            Insn::stmt(RET_A, 0),
            Insn::stmt(RET_K, 0),
        ];
        let rw = rewrite(&filter, IPS, 10).unwrap();
        let tail = PROLOGUE_LEN + filter.len();
        assert_eq!(rw.insns[tail], Insn::stmt(ALU_RSH_K, 10));
        for pc in [2, 4] {
            let ja = rw.insns[PROLOGUE_LEN + pc];
            assert_eq!((ja.code, PROLOGUE_LEN + pc + 1 + ja.k as usize), (JMP_JA, tail), "pc {pc}");
        }
        assert_eq!(rw.insns[tail + 2], Insn::stmt(ALU_OR_K, SECCOMP_RET_ERRNO | RET_A_BASE));
        assert_eq!(rw.insns.len(), tail + 4);
    }

    /// The limits are exact: 0xbff distinct `ret #k` values (the errno
    /// codes below the `ret a` chunks), and `BPF_MAXINSNS` instructions
    /// with the prologue and, where the filter has a `ret a`, the tail.
    #[test]
    fn limits_are_exact() {
        let values = |n: u32| -> Vec<Insn> { (0..n).map(|k| Insn::stmt(RET_K, k)).collect() };
        let most = rewrite(&values(0xbff), IPS, 0).unwrap();
        assert_eq!(most.ret_values.len(), RET_K_CODES);
        assert_eq!(most.insns.last(), Some(&Insn::stmt(RET_K, SECCOMP_RET_ERRNO | 0xbff)));
        assert_eq!(decode(-0xbff, &most.ret_values), Decoded::RetK(0xbfe));
        assert_eq!(
            rewrite(&values(0xc00), IPS, 0).unwrap_err(),
            KernelError::TooManyReturnValues { distinct: 0xc00, max: RET_K_CODES }
        );

        let fill = |n: usize, last: Insn| {
            let mut f = vec![Insn::stmt(LD_IMM, 0); n - 1];
            f.push(last);
            f
        };
        let (ret_k, ret_a) = (Insn::stmt(RET_K, 0), Insn::stmt(RET_A, 0));
        assert_eq!(rewrite(&fill(MAX_INSNS - 7, ret_k), IPS, 0).unwrap().insns.len(), MAX_INSNS);
        assert_eq!(
            rewrite(&fill(MAX_INSNS - 6, ret_k), IPS, 0).unwrap_err(),
            KernelError::TooLong { len: MAX_INSNS - 6, max: MAX_INSNS - 7 }
        );
        assert_eq!(rewrite(&fill(MAX_INSNS - 11, ret_a), IPS, 0).unwrap().insns.len(), MAX_INSNS);
        assert_eq!(
            rewrite(&fill(MAX_INSNS - 10, ret_a), IPS, 0).unwrap_err(),
            KernelError::TooLong { len: MAX_INSNS - 10, max: MAX_INSNS - 11 }
        );
    }

    #[test]
    fn the_timeout_is_the_one_set() {
        assert_eq!(KernelEngine::new().timeout, Duration::from_secs(20));
        assert_eq!(KernelEngine::new().with_timeout(Duration::from_millis(5)).timeout, Duration::from_millis(5));
    }

    /// A stall is a timed-out wait that finds as many jobs started as the
    /// last one did; the first never is.
    #[test]
    fn a_stall_is_no_job_started_between_two_waits() {
        let mut progress = Progress::default();
        assert!(!progress.stalled(0));
        assert!(progress.stalled(0));
        assert!(!progress.stalled(3));
        assert!(!progress.stalled(4));
        assert!(progress.stalled(4));
    }

    #[test]
    fn raw_results_come_from_the_tag() {
        assert_eq!(raw_result(5, TAG_RETURNED), Some(Raw::Returned(5)));
        assert_eq!(raw_result(-13i64 as u64, TAG_RETURNED), Some(Raw::Returned(-13)));
        assert_eq!(raw_result(0, TAG_DIED | 31), Some(Raw::Died(31)));
        assert_eq!(raw_result(7, 0), None);
    }

    #[test]
    fn decode_separates_ret_k_and_ret_a_codes() {
        assert_eq!(decode(-1, &[7]), Decoded::RetK(7));
        assert_eq!(decode(-2, &[7]), Decoded::Unexpected(-2));
        assert_eq!(decode(-0xc05, &[7]), Decoded::RetAChunk(5));
        assert_eq!(decode(0, &[7]), Decoded::Unexpected(0));
    }

    #[test]
    fn too_long_and_too_many_values_are_refused() {
        let long = vec![Insn::stmt(RET_K, 0); MAX_INSNS];
        assert!(matches!(rewrite(&long, IPS, 0), Err(KernelError::TooLong { .. })));
        let many: Vec<Insn> = (0..3500).map(|k| Insn::stmt(RET_K, k)).collect();
        assert!(matches!(rewrite(&many, IPS, 0), Err(KernelError::TooManyReturnValues { .. })));
    }

    #[test]
    fn plan_rejects_what_cannot_be_produced() {
        let base = Input { arch: AUDIT_ARCH_X86_64, nr: 335, args: [0; 6], ip: IPS.syscall };
        assert_eq!(plan(&base, IPS, false).unwrap_err(), Unobservable::UprobeBypass { nr: 335 });
        let arm = Input { arch: 0x4000_0028, nr: 1, ..base };
        assert!(matches!(plan(&arm, IPS, false), Err(Unobservable::ForeignArch { .. })));
        let wide = Input { arch: AUDIT_ARCH_I386, nr: 1, args: [0, 1 << 32, 0, 0, 0, 0], ..base };
        assert_eq!(plan(&wide, IPS, false).unwrap_err(), Unobservable::ArgTooWide { index: 1, value: 1 << 32 });
        let other_ip = Input { nr: 1, ip: 42, ..base };
        assert!(plan(&other_ip, IPS, false).is_ok());
        assert!(matches!(plan(&other_ip, IPS, true), Err(Unobservable::InstructionPointer { .. })));
    }
}
