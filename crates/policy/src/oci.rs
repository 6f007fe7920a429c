//! `decompile`: the OCI runtime-spec `linux.seccomp` profile (Docker's,
//! Podman's and containerd's format) that means the filter, or the reason,
//! naming the instruction, why no profile does.
//!
//! What a profile means is what runc makes of it with libseccomp: the
//! default action (and errno); every listed arch added; per syscall entry
//! and per name one rule, the entry's comparisons ANDed; a name applies on
//! every listed arch that has it; an arch the filter does not list gets
//! libseccomp's bad-arch action, KILL_THREAD. The decompiled profile has
//! one entry per distinct (action, comparisons), with every name that has
//! exactly those rules, so the rules of one syscall never overlap and the
//! order of entries does not matter.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use seccomp::analysis::{AnalysisError, Returned};
use seccomp::{Action, Arch};

use crate::read::{clauses, Behaviour, Clause, Reading};
use crate::rules::{box_rules, ArgCond, CmpOp, Inexpressible};

/// The OCI runtime spec's `linux.seccomp` object: the fields a filter
/// decides, and `flags` (how it is installed); `listenerPath` and
/// `listenerMetadata` are read past.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    #[serde(default)]
    pub default_action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_errno_ret: Option<u32>,
    #[serde(default, deserialize_with = "null_default")]
    pub architectures: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub syscalls: Vec<Syscall>,
    /// `SECCOMP_FILTER_FLAG_*` names; absent and empty differ to runc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<Vec<String>>,
}

/// One `syscalls[]` entry: every name gets `action` when all `args` hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Syscall {
    #[serde(default, deserialize_with = "null_default")]
    pub names: Vec<String>,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno_ret: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_default")]
    pub args: Vec<Arg>,
}

/// A JSON `null` read as the empty value (Go writes nil slices as `null`,
/// and reads `null` as empty).
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// One argument comparison of an entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Arg {
    pub index: u32,
    pub value: u64,
    #[serde(default)]
    pub value_two: u64,
    pub op: String,
}

/// Why a filter has no profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecompileError {
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// A rule of `view:name` is not argument comparisons.
    #[error("{view}:{name}: {why}")]
    Condition { view: String, name: String, why: Inexpressible },
    /// `ret A`: the value returned is computed; `value` is the expression
    /// of the first such path found, `pc` the first `ret A`.
    #[error("pc {pc}: `ret A` returns {value}, a computed value; a profile's actions are constants")]
    ComputedReturn { pc: usize, value: String },
    /// nr reaches arithmetic, a bit test or a return (at `pc`, when known).
    #[error("{}the filter does more with nr than compare it with constants (arithmetic, a bit test or a return); a profile can only name syscalls", pc.map(|p| format!("pc {p}: ")).unwrap_or_default())]
    NrArithmetic { pc: Option<usize> },
    /// Arches the filter does not check are not killed.
    #[error("arches the filter does not check get {action}; a profile gives them KILL_THREAD (libseccomp's bad-arch action)")]
    OtherArches { action: String },
    /// No constant action for the numbers without a rule.
    #[error("no default action: the numbers without a syscall name get no single constant action")]
    NoDefault,
    /// Numbers without a name get something other than the default.
    #[error("{view}: numbers {lo}-{hi} have no syscall name and get {action}, not the default {default}; a profile can only name syscalls")]
    Unnamed { view: String, lo: u32, hi: u32, action: String, default: String },
    /// One name, two arch views, two rule sets.
    #[error("{name}: {first} and {second} get different rules; a profile gives a name the same rules on every arch")]
    ArchesDiffer { name: String, first: String, second: String },
    /// An action the profile language has no word for.
    #[error("{action}: the OCI profile has no such action")]
    Action { action: String },
    /// An arch the profile language has no name for.
    #[error("arch {arch}: the OCI profile has no name for it")]
    Arch { arch: String },
    /// One syscall needs more rules than a profile should hold.
    #[error("{view}:{name}: more than {limit} rules")]
    TooManyRules { view: String, name: String, limit: usize },
    /// The exploration of a number stopped at its limit.
    #[error("{view}:{name}: more paths than one number's exploration allows; the profile would be partial")]
    Truncated { view: String, name: String },
    /// On an ABI where libseccomp multiplexes socket or IPC calls, the
    /// rules the profile gives `names` would change what `mux` returns.
    #[error("{view}:{mux}: runc's libseccomp also gives {mux} the rules of {names} (args[0] the call's number, their other conditions as written), and {why}; no profile says what the filter does for both")]
    Multiplexed { view: String, mux: String, names: String, why: String },
}

/// The OCI action and errno/data of a return value.
pub fn oci_action(value: u32) -> Result<(&'static str, Option<u32>), DecompileError> {
    Ok(match Action::from_u32(value) {
        Action::Allow => ("SCMP_ACT_ALLOW", None),
        Action::Errno(e) => ("SCMP_ACT_ERRNO", Some(u32::from(e))),
        Action::KillProcess => ("SCMP_ACT_KILL_PROCESS", None),
        Action::KillThread => ("SCMP_ACT_KILL_THREAD", None),
        Action::Trap(0) => ("SCMP_ACT_TRAP", None),
        Action::Trace(d) => ("SCMP_ACT_TRACE", Some(u32::from(d))),
        Action::Log => ("SCMP_ACT_LOG", None),
        Action::UserNotif => ("SCMP_ACT_NOTIFY", None),
        a @ (Action::Trap(_) | Action::Unknown(_)) => return Err(DecompileError::Action { action: a.to_string() }),
    })
}

/// The OCI name of an arch view.
pub fn oci_arch(arch: Arch) -> Result<&'static str, DecompileError> {
    Ok(match arch {
        Arch::X86_64 => "SCMP_ARCH_X86_64",
        Arch::I386 => "SCMP_ARCH_X86",
        Arch::X32 => "SCMP_ARCH_X32",
        Arch::Aarch64 => "SCMP_ARCH_AARCH64",
        Arch::Arm => "SCMP_ARCH_ARM",
        Arch::Riscv64 => "SCMP_ARCH_RISCV64",
        Arch::S390x => "SCMP_ARCH_S390X",
        Arch::S390 => "SCMP_ARCH_S390",
        Arch::Ppc64le => "SCMP_ARCH_PPC64LE",
        Arch::Ppc64 => "SCMP_ARCH_PPC64",
        Arch::Ppc => "SCMP_ARCH_PPC",
        Arch::Mips => "SCMP_ARCH_MIPS",
        Arch::Mipsel => "SCMP_ARCH_MIPSEL",
        Arch::Mips64 => "SCMP_ARCH_MIPS64",
        Arch::Mipsel64 => "SCMP_ARCH_MIPSEL64",
        Arch::Mips64n32 => "SCMP_ARCH_MIPS64N32",
        Arch::Mipsel64n32 => "SCMP_ARCH_MIPSEL64N32",
        Arch::Loongarch64 => "SCMP_ARCH_LOONGARCH64",
        a => return Err(DecompileError::Arch { arch: a.to_string() }),
    })
}

/// Most rules one syscall may get (bounds the work and the output).
const MAX_RULES_PER_NAME: usize = 4096;

/// One rule: the action and its ANDed comparisons.
type Rule = (u32, Vec<ArgCond>);

/// A decompiled profile, and (approximate mode) what no profile could say,
/// each as the error the exact mode gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decompiled {
    pub profile: Profile,
    pub approximations: Vec<DecompileError>,
}

/// Each reason a profile cannot say the filter: an error, or (approximate)
/// a note, after which the nearest saying is taken.
struct Approx {
    approximate: bool,
    notes: Vec<DecompileError>,
}

impl Approx {
    fn or_note(&mut self, e: DecompileError) -> Result<(), DecompileError> {
        if self.approximate {
            if !self.notes.contains(&e) {
                self.notes.push(e);
            }
            Ok(())
        } else {
            Err(e)
        }
    }
}

/// [`crate::decompile::decompile_with`] before runc's multiplexing of
/// socket and IPC calls is checked: the profile whose rules, each applied
/// to its own syscall, mean the filter; or with `approximate` the closest
/// one: where no profile can say what the filter does, the nearest
/// reading is taken and
/// the reason kept in [`Decompiled::approximations`]: numbers reached by
/// nr arithmetic read from the table numbers alone; unchecked arches, a
/// rule on an unnamed number, a path that is not argument comparisons, a
/// set a profile cannot say, a computed return, the path limit: left out
/// (the default stands); no default: the most common action; per-arch
/// rules for one name: the first arch's; an action the spec lacks (TRAP
/// data): the nearest it has; an arch it has no name for: left out.
pub(crate) fn profile_of(r: &Reading, approximate: bool) -> Result<Decompiled, DecompileError> {
    let mut ap = Approx { approximate, notes: Vec::new() };
    if !r.complete {
        ap.or_note(DecompileError::NrArithmetic { pc: r.nr_pc })?;
    }
    match r.other_arches {
        Some(0) => {}
        Some(a) => ap.or_note(DecompileError::OtherArches { action: Action::from_u32(a).to_string() })?,
        None => ap.or_note(DecompileError::OtherArches { action: "an action that depends on the input".into() })?,
    }
    let default = match r.default {
        Some(d) => d,
        None => {
            ap.or_note(DecompileError::NoDefault)?;
            r.entries
                .iter()
                .find_map(|e| match e.behaviour {
                    Behaviour::Constant(a) => Some(a),
                    Behaviour::Paths { .. } => None,
                })
                .unwrap_or(0)
        }
    };
    let view_name = |i: usize| r.views.get(i).map(|v| v.arch.to_string()).unwrap_or_default();
    // Per name, in first-seen order: its rules and the view they came from.
    let mut order: Vec<&'static str> = Vec::new();
    let mut per_name: BTreeMap<&'static str, (usize, BTreeSet<Rule>)> = BTreeMap::new();
    for e in &r.entries {
        let Some(name) = e.name else {
            if e.behaviour != Behaviour::Constant(default) {
                let action = match &e.behaviour {
                    Behaviour::Constant(a) => Action::from_u32(*a).to_string(),
                    Behaviour::Paths { .. } => "an action that depends on the arguments".into(),
                };
                let default = Action::from_u32(default).to_string();
                ap.or_note(DecompileError::Unnamed { view: view_name(e.view), lo: e.lo, hi: e.hi, action, default })?;
            }
            continue;
        };
        let wide = r.views.get(e.view).is_some_and(|v| v.wide());
        let mut rules: BTreeSet<Rule> = BTreeSet::new();
        match &e.behaviour {
            Behaviour::Constant(a) if *a == default => {}
            Behaviour::Constant(a) => {
                rules.insert((*a, Vec::new()));
            }
            Behaviour::Paths { truncated: true, .. } => {
                ap.or_note(DecompileError::Truncated { view: view_name(e.view), name: name.into() })?;
            }
            b @ Behaviour::Paths { .. } => {
                'values: for (returns, list) in clauses(b, wide, Some(default)) {
                    let action = match returns {
                        Returned::Const(action) => action,
                        Returned::Computed(e) => {
                            ap.or_note(DecompileError::ComputedReturn {
                                pc: r.ret_a.unwrap_or(0),
                                value: e.to_string(),
                            })?;
                            continue;
                        }
                    };
                    for clause in list {
                        let expanded = match clause {
                            Clause::Box(b) => box_rules(&b),
                            Clause::Raw { why, .. } => Err(why),
                        };
                        let expanded = match expanded {
                            Ok(x) => x,
                            Err(why) => {
                                ap.or_note(DecompileError::Condition {
                                    view: view_name(e.view),
                                    name: name.into(),
                                    why,
                                })?;
                                continue;
                            }
                        };
                        rules.extend(expanded.into_iter().map(|conds| (action, conds)));
                        if rules.len() > MAX_RULES_PER_NAME {
                            let (view, name) = (view_name(e.view), name.into());
                            ap.or_note(DecompileError::TooManyRules { view, name, limit: MAX_RULES_PER_NAME })?;
                            break 'values;
                        }
                    }
                }
            }
        }
        match per_name.get(name) {
            Some((first, known)) if *known != rules => {
                ap.or_note(DecompileError::ArchesDiffer {
                    name: name.into(),
                    first: view_name(*first),
                    second: view_name(e.view),
                })?;
            }
            Some(_) => {}
            None => {
                order.push(name);
                per_name.insert(name, (e.view, rules));
            }
        }
    }
    // One entry per distinct rule, with every name that has it.
    let mut entries: Vec<(Rule, Vec<String>)> = Vec::new();
    for name in order {
        let Some((_, rules)) = per_name.get(name) else { continue };
        for rule in rules {
            match entries.iter_mut().find(|(r, _)| r == rule) {
                Some((_, names)) => names.push(name.into()),
                None => entries.push((rule.clone(), vec![name.into()])),
            }
        }
    }
    // ALLOW first, then by action value, descending (the kernel's
    // precedence, most permissive first); then unconditional entries first.
    entries
        .sort_by_key(|((action, conds), _)| (std::cmp::Reverse(Action::from_u32(*action).rank()), !conds.is_empty()));
    let (default_action, default_errno_ret) = nearest_action(default, &mut ap)?;
    let mut syscalls = Vec::new();
    for ((action, conds), names) in entries {
        let (name, errno) = nearest_action(action, &mut ap)?;
        let args = conds
            .iter()
            .map(|c| Arg { index: u32::from(c.index), value: c.value, value_two: c.value_two, op: c.op.oci().into() })
            .collect();
        syscalls.push(Syscall { names, action: name.into(), errno_ret: errno, args });
    }
    let mut architectures = Vec::new();
    for v in &r.views {
        match oci_arch(v.arch) {
            Ok(a) => architectures.push(a.to_string()),
            Err(e) => ap.or_note(e)?,
        }
    }
    let profile =
        Profile { default_action: default_action.into(), default_errno_ret, architectures, syscalls, flags: None };
    Ok(Decompiled { profile, approximations: ap.notes })
}

/// The OCI action of `value`, or (approximate) the nearest one it has:
/// TRAP without its data, KILL_PROCESS for a value of no action.
fn nearest_action(value: u32, ap: &mut Approx) -> Result<(&'static str, Option<u32>), DecompileError> {
    match oci_action(value) {
        Ok(a) => Ok(a),
        Err(e) => {
            ap.or_note(e)?;
            Ok(match Action::from_u32(value) {
                Action::Trap(_) => ("SCMP_ACT_TRAP", None),
                _ => ("SCMP_ACT_KILL_PROCESS", None),
            })
        }
    }
}

impl Profile {
    /// The profile as readable lines: the default and arches, then one line
    /// per entry (`ALLOW socket when args[0] != 0x28`).
    pub fn text_lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "default {}{}; arches {}",
            self.default_action,
            self.default_errno_ret.map(|e| format!("({e})")).unwrap_or_default(),
            self.architectures.join(" ")
        )];
        for s in &self.syscalls {
            let action = format!("{}{}", s.action, s.errno_ret.map(|e| format!("({e})")).unwrap_or_default());
            let conds: Vec<String> = s
                .args
                .iter()
                .map(|a| match CmpOp::from_oci(&a.op) {
                    Some(op) => {
                        ArgCond { index: a.index as u8, op, value: a.value, value_two: a.value_two }.to_string()
                    }
                    None => format!("args[{}] {} {:#x}", a.index, a.op, a.value),
                })
                .collect();
            let when = if conds.is_empty() { String::new() } else { format!(" when {}", conds.join(" && ")) };
            out.push(format!("{action} {}{when}", s.names.join(" ")));
        }
        out
    }
}
