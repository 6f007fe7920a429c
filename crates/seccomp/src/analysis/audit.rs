//! Common seccomp filter mistakes, found with the same abstract machine as
//! [`super::analyze`].
//!
//! | finding | how it is found |
//! |---|---|
//! | no arch check | `nr` and `arch` symbolic: a branch (or `ret a`) that depends on `nr` is reachable on a path with no comparison involving `arch` |
//! | x32 not handled | arch x86_64, `nr` symbolic: no comparison of `nr` itself tells x32 numbers (`nr \| 0x40000000`) apart (a `jset` of bit 30, a `jge`/`jgt` threshold between 0x1ff and 0x40000000, a `jeq` with an x32 number); a comparison of a value computed from `nr` (`nr & mask`) counts as handling it. High when some x32 number is allowed while its native number is not |
//! | default allow | per arch the filter names (and for one it does not), the number just above the largest it compares is always allowed |
//! | `ret a` | every `ret a` instruction |
//! | unreachable code | `nr` and `arch` symbolic: instructions no path reaches |
//! | older sibling filtered | x86_64: a syscall of [`SIBLINGS_X86_64`] gets a specific non-allow treatment (not the default action, not always allowed) while its newer equivalent is always allowed |
//! | io_uring open | x86_64: `io_uring_setup/enter/register` always allowed while some other syscall is not |
//! | low word only | per 64-bit arch value the filter names (`__AUDIT_ARCH_64BIT`, x32 included: its registers are 64-bit): a comparison of `args[i].lo` itself with a constant (not under a mask, not a bit test) on a path where `args[i].hi` was not compared on every way there: the check ignores the high 32 bits the kernel passes (seccompiler's `dword`, a generator that splits no 64-bit value). libseccomp's 64-bit comparisons test the high word first and do not fire it |

use cbpf::{JmpOp, Pc, Program};

use super::{ActionResult, AnalysisError, Analyzer, Budget};
use crate::domain::{Env, Field, Step, Val};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        })
    }
}

/// What was found.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FindingKind {
    /// A decision on `nr` is reachable without any comparison of `arch`:
    /// a task of another arch gets the same numbers treated as if they
    /// were this arch's.
    NoArchCheck,
    /// On x86_64 the filter never tells x32 numbers apart; `escapes` are
    /// x32 numbers always allowed while their native number is not.
    X32NotHandled { escapes: Vec<u32> },
    /// Syscalls the filter does not name are always allowed on `arch`
    /// (`None`: on arches the filter does not name). `nr` is the number
    /// tried, `action` what it got.
    DefaultAllow { arch: Option<u32>, nr: u32, action: u32 },
    /// A `ret a`: the action is computed at run time.
    RetA,
    /// `count` consecutive instructions, starting at the finding's pc, that
    /// no path reaches.
    Unreachable { count: usize },
    /// x86_64: `older` is filtered but its newer equivalent `newer` is
    /// always allowed (numbers from [`SIBLINGS_X86_64`]).
    SiblingNotFiltered { older: u32, newer: u32 },
    /// x86_64: these io_uring syscalls are always allowed although other
    /// syscalls are restricted; io_uring operations bypass seccomp.
    IoUringOpen { allowed: Vec<u32> },
    /// On a 64-bit arch value, the comparison at the finding's pc tests
    /// `args[arg]`'s low 32 bits while its high 32 bits were not tested on
    /// some path there (for `syscalls`, `x32:personality`): a value with
    /// other high bits passes too.
    LowWordOnly { syscalls: Vec<String>, arg: u8 },
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Finding {
    pub severity: Severity,
    /// The instruction concerned, where there is one.
    pub pc: Option<Pc>,
    pub kind: FindingKind,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.severity)?;
        if let Some(pc) = self.pc {
            write!(f, "insn {pc}: ")?;
        }
        match &self.kind {
            FindingKind::NoArchCheck => f.write_str("the syscall number is tested on a path that never checks arch"),
            FindingKind::X32NotHandled { escapes } => {
                f.write_str("x86_64: x32 syscall numbers (nr | 0x40000000) are never told apart")?;
                if !escapes.is_empty() {
                    write!(f, "; {} are allowed although the native number is not:", escapes.len())?;
                    for nr in escapes {
                        write!(f, " {nr:#x}")?;
                    }
                }
                Ok(())
            }
            FindingKind::DefaultAllow { arch: Some(arch), nr, action } => {
                write!(f, "arch {arch:#x}: syscalls the filter does not name are allowed (nr {nr} gets {action:#010x})")
            }
            FindingKind::DefaultAllow { arch: None, nr, action } => {
                write!(f, "arches the filter does not name are allowed (nr {nr} gets {action:#010x})")
            }
            FindingKind::RetA => f.write_str("ret a: the action is computed at run time"),
            FindingKind::Unreachable { count } => write!(f, "{count} instruction(s) no path reaches"),
            FindingKind::SiblingNotFiltered { older, newer } => {
                let name = |nr: u32| {
                    SIBLINGS_X86_64
                        .iter()
                        .find_map(|s| {
                            if s.0 == nr {
                                Some(s.1)
                            } else if s.2 == nr {
                                Some(s.3)
                            } else {
                                None
                            }
                        })
                        .unwrap_or("?")
                };
                write!(
                    f,
                    "x86_64: {} ({older}) is filtered but its newer equivalent {} ({newer}) is always allowed",
                    name(*older),
                    name(*newer)
                )
            }
            FindingKind::LowWordOnly { syscalls, arg } => {
                write!(f, "args[{arg}] is compared in its low 32 bits only, its high 32 bits untested, for")?;
                const SHOWN: usize = 8;
                for s in syscalls.iter().take(SHOWN) {
                    write!(f, " {s}")?;
                }
                if syscalls.len() > SHOWN {
                    write!(f, " and {} more", syscalls.len() - SHOWN)?;
                }
                f.write_str(": a 64-bit arch passes all 64 bits, so unless the syscall truncates this argument, values with other high bits get through")
            }
            FindingKind::IoUringOpen { allowed } => {
                f.write_str("x86_64: io_uring syscalls")?;
                for nr in allowed {
                    write!(f, " {nr}")?;
                }
                f.write_str(
                    " are always allowed while other syscalls are restricted (io_uring operations bypass seccomp)",
                )
            }
        }
    }
}

use crate::arch::{AUDIT_ARCH_X86_64, X32_SYSCALL_BIT};

/// x86_64 syscalls and their newer equivalents: `(older, name, newer, name)`.
/// A filter restricting the older one usually means to restrict the newer.
pub const SIBLINGS_X86_64: &[(u32, &str, u32, &str)] = &[
    (2, "open", 257, "openat"),
    (2, "open", 437, "openat2"),
    (85, "creat", 257, "openat"),
    (257, "openat", 437, "openat2"),
    (56, "clone", 435, "clone3"),
    (57, "fork", 56, "clone"),
    (57, "fork", 435, "clone3"),
    (58, "vfork", 435, "clone3"),
    (59, "execve", 322, "execveat"),
    (4, "stat", 332, "statx"),
    (5, "fstat", 332, "statx"),
    (6, "lstat", 332, "statx"),
    (4, "stat", 262, "newfstatat"),
    (6, "lstat", 262, "newfstatat"),
    (262, "newfstatat", 332, "statx"),
    (21, "access", 269, "faccessat"),
    (21, "access", 439, "faccessat2"),
    (269, "faccessat", 439, "faccessat2"),
    (82, "rename", 264, "renameat"),
    (82, "rename", 316, "renameat2"),
    (264, "renameat", 316, "renameat2"),
    (87, "unlink", 263, "unlinkat"),
    (84, "rmdir", 263, "unlinkat"),
    (83, "mkdir", 258, "mkdirat"),
    (86, "link", 265, "linkat"),
    (88, "symlink", 266, "symlinkat"),
    (89, "readlink", 267, "readlinkat"),
    (90, "chmod", 268, "fchmodat"),
    (90, "chmod", 452, "fchmodat2"),
    (268, "fchmodat", 452, "fchmodat2"),
    (92, "chown", 260, "fchownat"),
    (94, "lchown", 260, "fchownat"),
    (133, "mknod", 259, "mknodat"),
    (33, "dup2", 292, "dup3"),
    (22, "pipe", 293, "pipe2"),
    (43, "accept", 288, "accept4"),
    (7, "poll", 271, "ppoll"),
    (23, "select", 270, "pselect6"),
    (232, "epoll_wait", 281, "epoll_pwait"),
    (232, "epoll_wait", 441, "epoll_pwait2"),
    (281, "epoll_pwait", 441, "epoll_pwait2"),
    (213, "epoll_create", 291, "epoll_create1"),
    (132, "utime", 280, "utimensat"),
    (235, "utimes", 280, "utimensat"),
    (282, "signalfd", 289, "signalfd4"),
    (284, "eventfd", 290, "eventfd2"),
    (253, "inotify_init", 294, "inotify_init1"),
    (295, "preadv", 327, "preadv2"),
    (296, "pwritev", 328, "pwritev2"),
];

/// `io_uring_setup`, `io_uring_enter`, `io_uring_register` on x86_64.
const IO_URING_X86_64: [u32; 3] = [425, 426, 427];

/// Does the action let the syscall run (`ALLOW`, or `LOG` which allows)?
fn allows(action: u32) -> bool {
    matches!(action & 0xffff_0000, 0x7fff_0000 | 0x7ffc_0000)
}

fn always_allowed(r: &ActionResult) -> bool {
    matches!(r, ActionResult::Constant(v) if allows(*v))
}

/// The smallest number above every number below the x32 bit that `compared`
/// lists, and not itself listed: one the filter does not name.
fn unnamed_nr(compared: &[u32]) -> u32 {
    let mut nr = compared.iter().filter(|&&k| k < X32_SYSCALL_BIT).max().map_or(0, |m| m.saturating_add(1));
    while compared.binary_search(&nr).is_ok() {
        nr = nr.saturating_add(1);
    }
    nr
}

/// Does `nr OP k` (nr itself on one side) tell x32 numbers apart?
fn separates_x32(op: JmpOp, k: u32) -> bool {
    match op {
        JmpOp::Jeq => k & X32_SYSCALL_BIT != 0 && k < 0x8000_0000,
        JmpOp::Jgt => (0x1ff..X32_SYSCALL_BIT).contains(&k),
        JmpOp::Jge => (0x200..=X32_SYSCALL_BIT).contains(&k),
        JmpOp::Jset => k & X32_SYSCALL_BIT != 0,
    }
}

/// Audits `prog`; findings ordered by descending severity, then pc.
pub fn audit(prog: &Program) -> Result<Vec<Finding>, AnalysisError> {
    audit_in(prog, &mut Budget::default())
}

/// [`audit`] drawing on a run's `budget`.
pub fn audit_in(prog: &Program, budget: &mut Budget) -> Result<Vec<Finding>, AnalysisError> {
    let mut an = Analyzer::with_budget(prog, std::mem::take(budget))?;
    let findings = audit_with(prog, &mut an);
    *budget = an.into_budget();
    findings
}

fn audit_with(prog: &Program, an: &mut Analyzer) -> Result<Vec<Finding>, AnalysisError> {
    let mut findings = Vec::new();

    // Structure, with nr and arch both symbolic.
    let symbolic = Env::new(None, None, AUDIT_ARCH_X86_64);
    let mut reached = vec![false; an.ops().len()];
    let mut arch_unchecked_at: Option<usize> = None;
    an.for_each_step(&symbolic, |pc, state, step| {
        if let Some(r) = reached.get_mut(pc) {
            *r = true;
        }
        let nr_decision = match step {
            Step::Branch { cmp, .. } => cmp.eval_known().is_none() && cmp.deps().contains(Field::Nr),
            Step::Return(v) => v.deps().contains(Field::Nr),
            _ => false,
        };
        if nr_decision && !state.compared.contains(Field::Arch) && arch_unchecked_at.is_none() {
            arch_unchecked_at = Some(pc);
        }
    });
    if let Some(pc) = arch_unchecked_at {
        findings.push(Finding { severity: Severity::High, pc: Some(Pc(pc)), kind: FindingKind::NoArchCheck });
    }
    let mut pc = 0;
    while pc < reached.len() {
        if reached.get(pc) == Some(&false) {
            let count = reached.iter().skip(pc).take_while(|r| !**r).count();
            findings.push(Finding {
                severity: Severity::Low,
                pc: Some(Pc(pc)),
                kind: FindingKind::Unreachable { count },
            });
            pc += count;
        } else {
            pc += 1;
        }
    }
    for (pc, insn) in prog.insns().iter().enumerate() {
        if matches!(insn.op(), Some(cbpf::Op::RetA)) {
            findings.push(Finding { severity: Severity::Info, pc: Some(Pc(pc)), kind: FindingKind::RetA });
        }
    }

    // Default actions, per arch named and for one arch not named.
    let arches = an.compared_constants(&symbolic, Field::Arch);
    let unnamed_arch = (0u32..).find(|a| arches.binary_search(a).is_err()).unwrap_or(0);
    let mut x86_64_default = None;
    for arch in arches.iter().copied().map(Some).chain([None]) {
        let concrete = arch.unwrap_or(unnamed_arch);
        let env = Env::new(None, Some(concrete), concrete);
        let nrs = an.compared_constants(&env, Field::Nr);
        let nr = unnamed_nr(&nrs);
        let result = an.try_result(concrete, nr)?;
        if let ActionResult::Constant(action) = result {
            if allows(action) {
                findings.push(Finding {
                    severity: Severity::High,
                    pc: None,
                    kind: FindingKind::DefaultAllow { arch, nr, action },
                });
            }
        }
        if arch == Some(AUDIT_ARCH_X86_64) {
            x86_64_default = Some((nrs, nr, result));
        }
    }

    if let Some((nrs, default_nr, default_result)) = x86_64_default {
        audit_x86_64(an, &nrs, default_nr, &default_result, &mut findings)?;
    }
    low_word_only(an, &arches, &mut findings)?;

    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.pc.cmp(&b.pc)));
    Ok(findings)
}

/// The `(pc, arg)` of every comparison of an argument's low word alone,
/// on a path where its high word was not compared on every way there.
fn low_word_compares(an: &mut Analyzer, env: &Env) -> std::collections::BTreeSet<(usize, u8)> {
    let mut out = std::collections::BTreeSet::new();
    an.for_each_step(env, |pc, state, step| {
        let Step::Branch { cmp, .. } = step else { return };
        if cmp.eval_known().is_some() || cmp.op == JmpOp::Jset {
            return;
        }
        let arg = match (cmp.lhs, cmp.rhs) {
            (Val::Exact(Field::ArgLo(i)), Val::Known(_)) | (Val::Known(_), Val::Exact(Field::ArgLo(i))) => i,
            _ => return,
        };
        if !state.compared.contains(Field::ArgHi(arg)) {
            out.insert((pc, arg));
        }
    });
    out
}

/// `x86_64:read`, `x32:personality`, `aarch64:#500`: a number of an arch value.
fn syscall_label(arch: u32, nr: u32) -> String {
    let abi = match crate::Arch::from_audit_arch(arch) {
        crate::Arch::X86_64 if nr & X32_SYSCALL_BIT != 0 => crate::Arch::X32,
        a => a,
    };
    match abi.syscalls().and_then(|t| t.name(nr)) {
        Some(name) => format!("{abi}:{name}"),
        None => format!("{abi}:#{nr}"),
    }
}

/// Comparisons of an argument's low word alone on the 64-bit arch values
/// in `arches` (see the module docs): found with `nr` unknown, then
/// attributed to the syscalls (classes of `nr`) whose paths reach them,
/// one data-flow pass per class, charged to the budget.
fn low_word_only(an: &mut Analyzer, arches: &[u32], findings: &mut Vec<Finding>) -> Result<(), AnalysisError> {
    use crate::arch::AUDIT_ARCH_64BIT;
    let mut found: std::collections::BTreeMap<(usize, u8), Vec<String>> = std::collections::BTreeMap::new();
    for &arch in arches.iter().filter(|&&a| a & AUDIT_ARCH_64BIT != 0) {
        let candidates = low_word_compares(an, &Env::new(None, Some(arch), arch));
        if candidates.is_empty() {
            continue;
        }
        let reps = super::NrClasses::of(an, arch).representatives();
        let Some(reps) = reps else {
            // nr is used beyond comparisons: no classes to name.
            for &key in &candidates {
                found.entry(key).or_default().push(format!("arch {arch:#x}"));
            }
            continue;
        };
        for nr in reps {
            an.budget.charge_steps(an.ops.len() as u64)?;
            for key in low_word_compares(an, &Env::new(Some(nr), Some(arch), arch)) {
                found.entry(key).or_default().push(syscall_label(arch, nr));
            }
        }
    }
    for ((pc, arg), syscalls) in found {
        findings.push(Finding {
            severity: Severity::Medium,
            pc: Some(Pc(pc)),
            kind: FindingKind::LowWordOnly { syscalls, arg },
        });
    }
    Ok(())
}

/// The x86_64-specific findings: x32, siblings, io_uring.
fn audit_x86_64(
    an: &mut Analyzer,
    compared: &[u32],
    default_nr: u32,
    default_result: &ActionResult,
    findings: &mut Vec<Finding>,
) -> Result<(), AnalysisError> {
    let env = Env::new(None, Some(AUDIT_ARCH_X86_64), AUDIT_ARCH_X86_64);
    let mut tests_nr = false;
    let mut x32_handled = false;
    an.for_each_step(&env, |_, _, step| {
        if let Step::Branch { cmp, .. } = step {
            if !cmp.deps().contains(Field::Nr) {
                return;
            }
            tests_nr = true;
            x32_handled |= match (cmp.lhs, cmp.rhs) {
                (Val::Exact(Field::Nr), Val::Known(k)) | (Val::Known(k), Val::Exact(Field::Nr)) => {
                    separates_x32(cmp.op, k)
                }
                // A value computed from nr (a mask, an offset): assume the
                // computation is there to handle it.
                _ => true,
            };
        }
    });
    if tests_nr && !x32_handled {
        let mut escapes = Vec::new();
        let candidates = compared.iter().copied().filter(|&n| n < X32_SYSCALL_BIT).chain([default_nr]);
        for n in candidates {
            let x32 = n | X32_SYSCALL_BIT;
            if always_allowed(&an.try_result(AUDIT_ARCH_X86_64, x32)?)
                && !always_allowed(&an.try_result(AUDIT_ARCH_X86_64, n)?)
            {
                escapes.push(x32);
            }
        }
        escapes.sort_unstable();
        escapes.dedup();
        let severity = if escapes.is_empty() { Severity::Low } else { Severity::High };
        findings.push(Finding { severity, pc: None, kind: FindingKind::X32NotHandled { escapes } });
    }

    for &(older, _, newer, _) in SIBLINGS_X86_64 {
        let older_result = an.try_result(AUDIT_ARCH_X86_64, older)?;
        let specifically_filtered = !always_allowed(&older_result) && older_result != *default_result;
        if specifically_filtered && always_allowed(&an.try_result(AUDIT_ARCH_X86_64, newer)?) {
            findings.push(Finding {
                severity: Severity::Medium,
                pc: None,
                kind: FindingKind::SiblingNotFiltered { older, newer },
            });
        }
    }

    let mut allowed: Vec<u32> = Vec::new();
    for nr in IO_URING_X86_64 {
        if always_allowed(&an.try_result(AUDIT_ARCH_X86_64, nr)?) {
            allowed.push(nr);
        }
    }
    if !allowed.is_empty() {
        let mut restricted = false;
        for n in compared.iter().copied().filter(|n| !IO_URING_X86_64.contains(n)).chain([default_nr]) {
            if !always_allowed(&an.try_result(AUDIT_ARCH_X86_64, n)?) {
                restricted = true;
                break;
            }
        }
        if restricted {
            findings.push(Finding { severity: Severity::Medium, pc: None, kind: FindingKind::IoUringOpen { allowed } });
        }
    }
    Ok(())
}
