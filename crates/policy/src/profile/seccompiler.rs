//! rust-vmm seccompiler's JSON (docs/json_format.md; the backend in
//! src/backend/{filter,rule,condition}.rs), as seccompiler compiles it:
//!
//! - The file maps names (one per kind of thread) to filters; one is
//!   chosen ([`Selection::thread`], needed when there are several).
//! - A filter is for one target arch (x86_64, aarch64 or riscv64): any other
//!   arch value is KILL_PROCESS (`build_arch_validation_sequence()`).
//!   There is no x32: an x32 call reaches the number checks with bit 30 set,
//!   matches no rule and gets `mismatch_action`.
//! - `filter` entries name a syscall (an unknown name is refused, as
//!   seccompiler refuses it) and optionally `args`, conditions ANDed. A
//!   syscall's entries with `args` are ORed and give `match_action`; an
//!   entry without `args` makes the syscall match whatever its arguments
//!   **only when no entry of that syscall has `args`**: seccompiler keeps
//!   the conditional rules and drops the unconditional one
//!   (`make_seccomp_filter()` pushes a rule only for `args`), which we
//!   report. Everything else gets `mismatch_action`; the two actions must
//!   differ.
//! - A condition's `type` is `dword` (the low 32 bits of the argument
//!   against the value's low 32 bits: seccompiler loads only that word,
//!   [`Width::Low32`]) or `qword` (all 64 bits); `op` is `eq`, `ne`, `lt`,
//!   `le`, `gt`, `ge` or `{"masked_eq": MASK}` (`(arg & MASK) == (val &
//!   MASK)`); `index` 0-5.
//! - Actions: `allow`, `{"errno": N}`, `kill_thread`, `kill_process`,
//!   `log`, `{"trace": N}`, `trap`, `user_notif`; `errno`/`trace` data is
//!   the low 16 bits (`SECCOMP_RET_DATA`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{ArchValue, Cond, Format, Meaning, Origin, ProfileError, Rule, Selection, Syscall, View, Width};
use crate::rules::{ArgCond, CmpOp, ARGS};
use seccomp::action::{
    SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_LOG,
    SECCOMP_RET_TRACE, SECCOMP_RET_TRAP, SECCOMP_RET_USER_NOTIF,
};
use seccomp::Arch;

/// One named filter.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    #[serde(alias = "default_action")]
    pub mismatch_action: SAction,
    #[serde(alias = "filter_action")]
    pub match_action: SAction,
    pub filter: Vec<SRule>,
}

/// seccompiler's `SeccompAction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SAction {
    Allow,
    Errno(u32),
    KillThread,
    KillProcess,
    Log,
    Trace(u32),
    Trap,
    UserNotif,
}

impl SAction {
    /// The return value (`impl From<SeccompAction> for u32`).
    pub fn value(self) -> u32 {
        match self {
            SAction::Allow => SECCOMP_RET_ALLOW,
            SAction::Errno(x) => SECCOMP_RET_ERRNO | (x & 0xffff),
            SAction::KillThread => SECCOMP_RET_KILL_THREAD,
            SAction::KillProcess => SECCOMP_RET_KILL_PROCESS,
            SAction::Log => SECCOMP_RET_LOG,
            SAction::Trace(x) => SECCOMP_RET_TRACE | (x & 0xffff),
            SAction::Trap => SECCOMP_RET_TRAP,
            SAction::UserNotif => SECCOMP_RET_USER_NOTIF,
        }
    }
}

/// One `filter` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SRule {
    pub syscall: String,
    #[serde(default)]
    pub args: Option<Vec<SCond>>,
    #[serde(default)]
    pub comment: Option<String>,
}

/// One condition.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SCond {
    pub index: u8,
    #[serde(rename = "type")]
    pub arg_len: SLen,
    pub op: SOp,
    pub val: u64,
    #[serde(default)]
    pub comment: Option<String>,
}

/// `dword` / `qword`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SLen {
    Dword,
    Qword,
}

/// seccompiler's `SeccompCmpOp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SOp {
    Eq,
    Ge,
    Gt,
    Le,
    Lt,
    MaskedEq(u64),
    Ne,
}

/// The file's filters in file order; a name given twice is refused (as
/// seccompiler refuses it).
fn filters(text: &str) -> Result<Vec<(String, Filter)>, ProfileError> {
    struct Ordered(Vec<(String, Filter)>);
    impl<'de> Deserialize<'de> for Ordered {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Vec<(String, Filter)>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a map of filters")
                }
                fn visit_map<M: serde::de::MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
                    let mut out: Vec<(String, Filter)> = Vec::new();
                    while let Some((k, v)) = m.next_entry::<String, Filter>()? {
                        if out.iter().any(|(n, _)| *n == k) {
                            return Err(serde::de::Error::custom(format!("duplicate filter key `{k}`")));
                        }
                        out.push((k, v));
                    }
                    Ok(out)
                }
            }
            d.deserialize_map(V).map(Ordered)
        }
    }
    let Ordered(v) = serde_json::from_str(text).map_err(|e| ProfileError::json(&e))?;
    Ok(v)
}

/// The target arches seccompiler has.
pub const TARGETS: [Arch; 3] = [Arch::X86_64, Arch::Aarch64, Arch::Riscv64];

/// The meaning of the seccompiler file `text` for `sel` (the target arch
/// and the thread's filter).
pub fn meaning(text: &str, sel: &Selection) -> Result<Meaning, ProfileError> {
    let all = filters(text)?;
    let arch = sel.native_arch();
    if !TARGETS.contains(&arch) {
        return Err(ProfileError::invalid(
            "--arch",
            format!("seccompiler has no target {arch} (x86_64, aarch64, riscv64)"),
        ));
    }
    let names = || all.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ");
    let (thread, f) = match (&sel.thread, all.as_slice()) {
        (Some(t), _) => all
            .iter()
            .find(|(n, _)| n == t)
            .ok_or_else(|| ProfileError::invalid("--thread", format!("no filter `{t}` (the file has {})", names())))?,
        (None, [one]) => one,
        (None, []) => return Err(ProfileError::invalid("the file", "no filter")),
        (None, _) => {
            return Err(ProfileError::invalid("--thread", format!("the file has several filters: {}", names())))
        }
    };
    let (matched, mismatched) = (f.match_action.value(), f.mismatch_action.value());
    if matched == mismatched {
        return Err(ProfileError::invalid(thread.as_str(), "`match_action` and `mismatch_action` are equal"));
    }
    let table =
        arch.syscalls().ok_or_else(|| ProfileError::invalid("--arch", format!("no syscall table for {arch}")))?;
    // Per number: the conditional rules, and the first entry naming it.
    let mut per_nr: BTreeMap<u32, (Syscall, usize, Vec<usize>)> = BTreeMap::new();
    for (i, r) in f.filter.iter().enumerate() {
        let place = || format!("{thread}.filter[{i}]");
        let nr = table.number(&r.syscall).ok_or_else(|| {
            ProfileError::invalid(
                place(),
                format!("no syscall `{}` on {arch} (Linux 6.18); seccompiler refuses it", r.syscall),
            )
        })?;
        let name = table.name(nr).unwrap_or("");
        let (s, _, bare) = per_nr.entry(nr).or_insert_with(|| (Syscall { name, rules: Vec::new() }, i, Vec::new()));
        let Some(args) = &r.args else {
            bare.push(i);
            continue;
        };
        if args.is_empty() {
            return Err(ProfileError::invalid(place(), "a rule's args must not be empty (seccompiler: EmptyRule)"));
        }
        let mut conds = Vec::new();
        for (j, c) in args.iter().enumerate() {
            if usize::from(c.index) >= ARGS {
                return Err(ProfileError::invalid(format!("{}.args[{j}]", place()), "index is not an argument (0-5)"));
            }
            let width = match c.arg_len {
                SLen::Dword => Width::Low32,
                SLen::Qword => Width::Bits64,
            };
            let (op, value, value_two) = match c.op {
                SOp::Eq => (CmpOp::Eq, c.val, 0),
                SOp::Ne => (CmpOp::Ne, c.val, 0),
                SOp::Lt => (CmpOp::Lt, c.val, 0),
                SOp::Le => (CmpOp::Le, c.val, 0),
                SOp::Gt => (CmpOp::Gt, c.val, 0),
                SOp::Ge => (CmpOp::Ge, c.val, 0),
                SOp::MaskedEq(mask) => (CmpOp::MaskedEq, mask, c.val & mask),
            };
            conds.push(Cond { width, cmp: ArgCond { index: c.index, op, value, value_two } });
        }
        s.rules.push(Rule { action: matched, conds, origin: Origin { entry: i, name: r.syscall.clone() } });
    }
    let mut notes = Vec::new();
    let mut syscalls = BTreeMap::new();
    for (nr, (mut s, first, bare)) in per_nr {
        if s.rules.is_empty() {
            let name = f.filter.get(first).map(|r| r.syscall.clone()).unwrap_or_default();
            s.rules.push(Rule { action: matched, conds: Vec::new(), origin: Origin { entry: first, name } });
        } else if let Some(b) = bare.first() {
            notes.push(format!(
                "{thread}.filter[{b}]: {} has no args, but other entries of it do: seccompiler keeps only their conditions",
                s.name
            ));
        }
        syscalls.insert(nr, s);
    }
    let view = View { arch, default: mismatched, syscalls };
    Ok(Meaning {
        format: Format::Seccompiler,
        arches: vec![ArchValue::single(view)],
        other_arches: SECCOMP_RET_KILL_PROCESS,
        flags: Vec::new(),
        notes,
        nested: Vec::new(),
    })
}
