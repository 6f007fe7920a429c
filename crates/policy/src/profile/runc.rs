//! An OCI `linux.seccomp` profile as runc applies it with libseccomp
//! (runc `libcontainer/specconv.SetupSeccomp()` and
//! `libcontainer/seccomp.InitSeccomp()`; libseccomp 2.5/2.6 `src/db.c`,
//! `src/arch.c`, `src/syscalls.c`, `src/gen_bpf.c`):
//!
//! - **ABIs**: the native one (runc's filter starts with it), then every
//!   `architectures` entry (runc's names: `SCMP_ARCH_X86_64`, `SCMP_ARCH_X86`,
//!   `SCMP_ARCH_X32`, ..., 18 in all; others are refused as runc refuses
//!   them), then the selection's extra ABIs; repeats are ignored. Every
//!   other arch value gets libseccomp's bad-arch action, KILL_THREAD. On
//!   `AUDIT_ARCH_X86_64`, x86_64 and x32 share the value and split the
//!   numbers at bit 30; when only one is listed, the other half is
//!   KILL_THREAD too, except `nr == -1` when x86_64 alone is listed
//!   (`_gen_bpf_arch()` lets a tracer's skipped call through).
//! - **Actions**: `SCMP_ACT_KILL` and `_KILL_THREAD` are KILL_THREAD;
//!   `_ERRNO` and `_TRACE` take `errnoRet` (`defaultErrnoRet` for the
//!   default), EPERM when absent, its low 16 bits (runc passes it as an
//!   `int16`); an errno of 4095 or more is refused (libseccomp refuses it,
//!   `sys_chk_seccomp_action()`, and runc fails); `_NOTIFY` is refused as the default and for `write`, as runc
//!   refuses it; `errnoRet` on another action is ignored (reported).
//! - **Entries**: per entry and per name, a rule; an entry whose action
//!   equals the default (errno included) is skipped (runc skips it before
//!   libseccomp would refuse it). An entry whose `args` compare one
//!   argument more than once becomes one rule per condition (runc's "old
//!   behaviour": they are ORed); otherwise one rule with every condition.
//!   `index` above 5 is refused (libseccomp: `EINVAL`). `SCMP_CMP_MASKED_EQ`
//!   takes `value` as the mask and `valueTwo` as the datum.
//! - **Names** resolve per ABI through Linux 6.18's tables. On the ABIs
//!   where libseccomp multiplexes socket and IPC calls (`abi_rule_add()`:
//!   i386, mips o32, ppc, ppc64, s390, s390x), a rule for a socket or IPC
//!   call also becomes a rule for `socketcall`/`ipc` with `args[0] ==` the
//!   call's number (`SYS_SOCKET` = 1 ... `SYS_SENDMMSG` = 20; `SEMOP` = 1 ...
//!   `SHMCTL` = 24), its other conditions kept as written (they then test
//!   `socketcall`'s own arguments: libseccomp's "best effort"), besides the
//!   direct call where the ABI has one.
//! - **Widths**: on libseccomp's 32-bit ABIs (i386, x32, arm, mips o32 and
//!   n32, ppc, s390) a condition compares the low 32 bits of the argument
//!   with the low 32 bits of its constants (`_db_rule_gen_32()`); elsewhere
//!   the whole 64 bits (`_db_rule_gen_64()`).
//! - **Overlaps**: see [`crate::profile`].
//! - **Flags**: runc's four (`SECCOMP_FILTER_FLAG_TSYNC`, `_LOG`,
//!   `_SPEC_ALLOW`, `_WAIT_KILLABLE_RECV`); others are refused; absent,
//!   runc asks for `SPEC_ALLOW`. Reported, not part of what a filter returns.

use std::collections::BTreeMap;

use seccomp::action::{
    SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_LOG,
    SECCOMP_RET_TRACE, SECCOMP_RET_TRAP, SECCOMP_RET_USER_NOTIF,
};
use seccomp::arch::X32_SYSCALL_BIT;
use seccomp::{Action, Arch};

use super::{
    atom, libseccomp_args_64, ArchValue, Cond, Format, Meaning, Nested, Origin, Part, PartKind, ProfileError, Rule,
    Selection, Syscall, View, Width,
};
use crate::oci::{Profile, Syscall as Entry};
use crate::rules::{ArgCond, CmpOp, ARGS};

/// libseccomp's default bad-arch action (`SCMP_ACT_KILL`).
pub const BAD_ARCH: u32 = SECCOMP_RET_KILL_THREAD;

/// EPERM: the errno runc gives `SCMP_ACT_ERRNO` and `SCMP_ACT_TRACE`
/// without `errnoRet`.
const EPERM: u32 = 1;

/// runc's arch names and ours (libcontainer/seccomp/config.go).
pub const ARCH_NAMES: [(&str, Arch); 18] = [
    ("SCMP_ARCH_X86", Arch::I386),
    ("SCMP_ARCH_X86_64", Arch::X86_64),
    ("SCMP_ARCH_X32", Arch::X32),
    ("SCMP_ARCH_ARM", Arch::Arm),
    ("SCMP_ARCH_AARCH64", Arch::Aarch64),
    ("SCMP_ARCH_MIPS", Arch::Mips),
    ("SCMP_ARCH_MIPS64", Arch::Mips64),
    ("SCMP_ARCH_MIPS64N32", Arch::Mips64n32),
    ("SCMP_ARCH_MIPSEL", Arch::Mipsel),
    ("SCMP_ARCH_MIPSEL64", Arch::Mipsel64),
    ("SCMP_ARCH_MIPSEL64N32", Arch::Mipsel64n32),
    ("SCMP_ARCH_PPC", Arch::Ppc),
    ("SCMP_ARCH_PPC64", Arch::Ppc64),
    ("SCMP_ARCH_PPC64LE", Arch::Ppc64le),
    ("SCMP_ARCH_RISCV64", Arch::Riscv64),
    ("SCMP_ARCH_S390", Arch::S390),
    ("SCMP_ARCH_S390X", Arch::S390x),
    ("SCMP_ARCH_LOONGARCH64", Arch::Loongarch64),
];

/// The arch an `SCMP_ARCH_*` name means to runc.
pub fn arch_of(name: &str) -> Option<Arch> {
    ARCH_NAMES.iter().find(|(n, _)| *n == name).map(|&(_, a)| a)
}

/// The arch of `profile`'s first `architectures` name: the machine a
/// decompiled profile is read on, since runc adds the native arch to every
/// filter and [`decompile`](crate::decompile()) means "the first arch
/// native". `None` for no arches or a name runc does not know.
pub fn first_arch(profile: &crate::oci::Profile) -> Option<Arch> {
    profile.architectures.first().and_then(|a| arch_of(a))
}

/// The `SCMP_ARCH_*` name of an arch runc knows.
pub fn arch_name(arch: Arch) -> Option<&'static str> {
    ARCH_NAMES.iter().find(|(_, a)| *a == arch).map(|&(n, _)| n)
}

/// runc's seccomp flags (libcontainer/seccomp/config.go).
const FLAGS: [&str; 4] = [
    "SECCOMP_FILTER_FLAG_TSYNC",
    "SECCOMP_FILTER_FLAG_LOG",
    "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
    "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
];

/// libseccomp takes `SCMP_ACT_ERRNO(e)` only for `e < MAX_ERRNO` (4095:
/// `sys_chk_seccomp_action()` in src/system.c); runc then fails.
const LIBSECCOMP_MAX_ERRNO: u32 = 4095;

/// [`action`], refusing what libseccomp refuses (an errno of 4095 or
/// more after runc's `int16`), at `place`.
fn checked_action(name: &str, errno_ret: Option<u32>, place: &str) -> Result<u32, ProfileError> {
    let value =
        action(name, errno_ret).ok_or_else(|| ProfileError::invalid(place, format!("`{name}` is not an action")))?;
    if let Action::Errno(e) = Action::from_u32(value) {
        if u32::from(e) >= LIBSECCOMP_MAX_ERRNO {
            return Err(ProfileError::invalid(
                place,
                format!(
                    "errno {e} (errnoRet {}): libseccomp refuses an errno of 4095 or more, and runc fails",
                    errno_ret.unwrap_or(1)
                ),
            ));
        }
    }
    Ok(value)
}

/// The value of an OCI action as runc gives it to libseccomp.
pub fn action(name: &str, errno_ret: Option<u32>) -> Option<u32> {
    let data = errno_ret.unwrap_or(EPERM) & 0xffff;
    Some(match name {
        "SCMP_ACT_KILL" | "SCMP_ACT_KILL_THREAD" => SECCOMP_RET_KILL_THREAD,
        "SCMP_ACT_KILL_PROCESS" => SECCOMP_RET_KILL_PROCESS,
        "SCMP_ACT_TRAP" => SECCOMP_RET_TRAP,
        "SCMP_ACT_ERRNO" => SECCOMP_RET_ERRNO | data,
        "SCMP_ACT_TRACE" => SECCOMP_RET_TRACE | data,
        "SCMP_ACT_LOG" => SECCOMP_RET_LOG,
        "SCMP_ACT_ALLOW" => SECCOMP_RET_ALLOW,
        "SCMP_ACT_NOTIFY" => SECCOMP_RET_USER_NOTIF,
        _ => return None,
    })
}

/// The socket calls `socketcall` multiplexes, with their call numbers
/// (include/uapi/linux/net.h `SYS_*`).
pub const SOCKET_CALLS: [(&str, u64); 20] = [
    ("socket", 1),
    ("bind", 2),
    ("connect", 3),
    ("listen", 4),
    ("accept", 5),
    ("getsockname", 6),
    ("getpeername", 7),
    ("socketpair", 8),
    ("send", 9),
    ("recv", 10),
    ("sendto", 11),
    ("recvfrom", 12),
    ("shutdown", 13),
    ("setsockopt", 14),
    ("getsockopt", 15),
    ("sendmsg", 16),
    ("recvmsg", 17),
    ("accept4", 18),
    ("recvmmsg", 19),
    ("sendmmsg", 20),
];

/// The IPC calls `ipc` multiplexes, with their call numbers
/// (include/uapi/linux/ipc.h).
pub const IPC_CALLS: [(&str, u64); 12] = [
    ("semop", 1),
    ("semget", 2),
    ("semctl", 3),
    ("semtimedop", 4),
    ("msgsnd", 11),
    ("msgrcv", 12),
    ("msgget", 13),
    ("msgctl", 14),
    ("shmat", 21),
    ("shmdt", 22),
    ("shmget", 23),
    ("shmctl", 24),
];

/// Does libseccomp multiplex socket and IPC calls on this ABI
/// (`.rule_add = abi_rule_add` in its arch-*.c, the ABIs runc knows)?
pub fn multiplexes(arch: Arch) -> bool {
    matches!(
        arch,
        Arch::I386 | Arch::Mips | Arch::Mipsel | Arch::Ppc | Arch::Ppc64 | Arch::Ppc64le | Arch::S390 | Arch::S390x
    )
}

/// Where a rule for `name` goes on `arch`: `(nr, Some(call))` for the
/// multiplexer with `args[0] == call`, `(nr, None)` for the call itself.
pub fn targets(arch: Arch, name: &str) -> Vec<(u32, Option<u64>)> {
    let Some(table) = arch.syscalls() else { return Vec::new() };
    let mut out: Vec<(u32, Option<u64>)> = Vec::new();
    if multiplexes(arch) {
        let muxed = SOCKET_CALLS
            .iter()
            .map(|&(n, c)| (n, c, "socketcall"))
            .chain(IPC_CALLS.iter().map(|&(n, c)| (n, c, "ipc")))
            .find(|(n, _, _)| *n == name);
        if let Some((_, call, mux)) = muxed {
            if let Some(nr) = table.number(mux) {
                out.push((nr, Some(call)));
            }
        }
    }
    if let Some(nr) = table.number(name) {
        out.push((nr, None));
    }
    out
}

/// The meaning of `p` on the machine `sel` describes (the format it came
/// in is recorded; a Docker file is first selected by
/// [`crate::profile::docker::select`]). `entries`: the index each entry had
/// in the file (for messages), when not its index in `p`.
pub fn meaning(p: &Profile, sel: &Selection, format: Format) -> Result<Meaning, ProfileError> {
    meaning_with_entries(p, sel, format, None)
}

/// [`meaning`], naming entries by `entries[i]`.
pub fn meaning_with_entries(
    p: &Profile,
    sel: &Selection,
    format: Format,
    entries: Option<&[usize]>,
) -> Result<Meaning, ProfileError> {
    if p.default_action.is_empty() && p.syscalls.is_empty() {
        return Err(ProfileError::Disabled);
    }
    let mut notes = Vec::new();
    let default = checked_action(&p.default_action, p.default_errno_ret, "defaultAction")?;
    if default == SECCOMP_RET_USER_NOTIF {
        return Err(ProfileError::invalid("defaultAction", "SCMP_ACT_NOTIFY cannot be the default (runc refuses it)"));
    }
    let flags = match &p.flags {
        None => vec!["SECCOMP_FILTER_FLAG_SPEC_ALLOW".to_string()],
        Some(f) => {
            if let Some(bad) = f.iter().find(|f| !FLAGS.contains(&f.as_str())) {
                return Err(ProfileError::invalid("flags", format!("`{bad}` is not a flag runc knows")));
            }
            f.clone()
        }
    };

    // The ABIs, in the filter's order.
    let mut abis: Vec<Arch> = Vec::new();
    let native = sel.native_arch();
    if arch_name(native).is_none() {
        return Err(ProfileError::invalid("--arch", format!("runc does not run on {native}")));
    }
    abis.push(native);
    for (i, name) in p.architectures.iter().enumerate() {
        let arch = arch_of(name).ok_or_else(|| {
            ProfileError::invalid(format!("architectures[{i}]"), format!("`{name}` is not an arch runc knows"))
        })?;
        abis.push(arch);
    }
    abis.extend(sel.arches.iter().skip(1).copied());
    let mut seen = Vec::new();
    abis.retain(|a| {
        let new = !seen.contains(a);
        seen.push(*a);
        new
    });

    // Per ABI, per number: the rules, in entry order.
    let mut per_abi: Vec<BTreeMap<u32, Syscall>> = abis.iter().map(|_| BTreeMap::new()).collect();
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    for (i, e) in p.syscalls.iter().enumerate() {
        let entry = entries.and_then(|x| x.get(i)).copied().unwrap_or(i);
        let place = || format!("syscalls[{entry}]");
        let act = action(&e.action, e.errno_ret)
            .ok_or_else(|| ProfileError::invalid(place(), format!("`{}` is not an action", e.action)))?;
        if e.errno_ret.is_some() && !matches!(Action::from_u32(act), Action::Errno(_) | Action::Trace(_)) {
            notes.push(format!("{}: errnoRet is ignored with {} (runc ignores it)", place(), e.action));
        }
        if act == default {
            continue;
        }
        let groups = rule_conds(e, &place)?;
        for name in &e.names {
            if name.is_empty() {
                return Err(ProfileError::invalid(place(), "an empty syscall name (runc refuses it)"));
            }
            if act == SECCOMP_RET_USER_NOTIF && name == "write" {
                return Err(ProfileError::invalid(
                    place(),
                    "SCMP_ACT_NOTIFY cannot be used for write (runc refuses it)",
                ));
            }
            let mut known = false;
            if seccomp::syscalls::tables().iter().any(|t| t.number(name).is_some()) {
                // libseccomp checks the action of a rule for any name it
                // knows, even one no listed ABI has (a pseudo number): a
                // name some Linux 6.18 table has stands for that.
                checked_action(&e.action, e.errno_ret, &place())?;
            }
            for (abi, rules) in abis.iter().zip(per_abi.iter_mut()) {
                let width = if libseccomp_args_64(*abi) { Width::Bits64 } else { Width::Low32 };
                for (nr, call) in targets(*abi, name) {
                    known = true;
                    let Some(sys_name) = abi.syscalls().and_then(|t| t.name(nr)) else { continue };
                    let slot = rules.entry(nr).or_insert_with(|| Syscall { name: sys_name, rules: Vec::new() });
                    for conds in &groups {
                        let mut conds: Vec<Cond> = conds
                            .iter()
                            .map(|&cmp| Cond { width, cmp })
                            .filter(|c| call.is_none() || c.cmp.index != 0)
                            .collect();
                        if let Some(call) = call {
                            let cmp = ArgCond { index: 0, op: CmpOp::Eq, value: call, value_two: 0 };
                            conds.insert(0, Cond { width, cmp });
                        }
                        slot.rules.push(Rule { action: act, conds, origin: Origin { entry, name: name.clone() } });
                    }
                }
            }
            if !known {
                unknown.entry(name.clone()).or_insert(entry);
            }
        }
    }
    for (name, entry) in &unknown {
        let on: Vec<String> = abis.iter().map(ToString::to_string).collect();
        notes.push(format!("syscalls[{entry}]: {name}: no such syscall on {} (Linux 6.18): skipped", on.join(", ")));
    }

    // Order each syscall's rules, refusing ambiguous overlaps.
    let mut views: Vec<View> = Vec::new();
    let mut nested = Vec::new();
    for (abi, mut syscalls) in abis.iter().zip(per_abi) {
        for s in syscalls.values_mut() {
            let (rules, inside) = order(&abi.to_string(), s.name, std::mem::take(&mut s.rules))?;
            s.rules = rules;
            for (narrower, wider) in inside {
                let syscall = format!("{abi}:{}", s.name);
                notes.push(format!(
                    "{syscall}: {narrower} lies inside {wider} with another action: the narrower rule wins (libseccomp may give the wider one's action: see `policy::profile`)"
                ));
                nested.push(Nested { syscall, narrower, wider });
            }
        }
        views.push(View { arch: *abi, default, syscalls });
    }

    // Views by arch value, in first-seen order.
    let mut arches: Vec<ArchValue> = Vec::new();
    for view in views {
        let value = view.arch.audit_arch();
        match arches.iter_mut().find(|a| a.audit_arch == value) {
            Some(a) => a.views.push(view),
            None => arches.push(ArchValue { audit_arch: value, parts: Vec::new(), views: vec![view] }),
        }
    }
    for a in &mut arches {
        a.parts = parts(&a.views);
    }
    Ok(Meaning { format, arches, other_arches: BAD_ARCH, flags, notes, nested })
}

/// The rules (each a list of ANDed conditions) runc makes of one entry.
fn rule_conds(e: &Entry, place: &dyn Fn() -> String) -> Result<Vec<Vec<ArgCond>>, ProfileError> {
    let mut conds = Vec::new();
    for (j, a) in e.args.iter().enumerate() {
        let op = CmpOp::from_oci(&a.op).ok_or_else(|| {
            ProfileError::invalid(format!("{}.args[{j}]", place()), format!("`{}` is not an operator", a.op))
        })?;
        let index = u8::try_from(a.index).ok().filter(|&i| usize::from(i) < ARGS).ok_or_else(|| {
            ProfileError::invalid(
                format!("{}.args[{j}]", place()),
                format!("index {} is not an argument (0-5)", a.index),
            )
        })?;
        let cmp = match op {
            CmpOp::MaskedEq => ArgCond { index, op, value: a.value, value_two: a.value_two & a.value },
            _ => ArgCond { index, op, value: a.value, value_two: 0 },
        };
        conds.push(cmp);
    }
    let mut counts = [0usize; ARGS];
    for c in &conds {
        if let Some(n) = counts.get_mut(usize::from(c.index)) {
            *n += 1;
        }
    }
    Ok(if counts.iter().any(|&n| n > 1) { conds.into_iter().map(|c| vec![c]).collect() } else { vec![conds] })
}

/// The parts of one arch value's views.
fn parts(views: &[View]) -> Vec<Part> {
    let part = |first, kind| Part { first, kind };
    let x86_64 = views.iter().position(|v| v.arch == Arch::X86_64);
    let x32 = views.iter().position(|v| v.arch == Arch::X32);
    match (x86_64, x32) {
        (Some(a), Some(b)) => vec![part(0, PartKind::View(a)), part(X32_SYSCALL_BIT, PartKind::View(b))],
        (Some(a), None) => vec![
            part(0, PartKind::View(a)),
            part(X32_SYSCALL_BIT, PartKind::Action(BAD_ARCH)),
            part(u32::MAX, PartKind::View(a)),
        ],
        (None, Some(b)) => vec![part(0, PartKind::Action(BAD_ARCH)), part(X32_SYSCALL_BIT, PartKind::View(b))],
        (None, None) => vec![part(0, PartKind::View(0))],
    }
}

/// Most rules of one syscall with more than one action: their overlaps
/// are examined pair by pair.
pub const MAX_RULES: usize = 1024;

/// The rules of one syscall, ordered, and the `(narrower, wider)` origins
/// of each nested pair of actions.
type Ordered = (Vec<Rule>, Vec<(Origin, Origin)>);

/// `rules` in an order where the first match is the narrower rule's
/// action ([`crate::profile`]): a rule before every rule of another action
/// it lies strictly inside; otherwise the entries' order. Refuses an
/// overlap of two actions where neither rule is inside the other.
pub(crate) fn order(arch: &str, name: &str, rules: Vec<Rule>) -> Result<Ordered, ProfileError> {
    let Some(first) = rules.first() else { return Ok((rules, Vec::new())) };
    if rules.iter().all(|r| r.action == first.action) {
        // A union that holds an unconditional rule is that rule: a filter
        // returns its action without looking at arguments (and the
        // kernel's cache can see it, as it sees libseccomp's).
        if let Some(all) = rules.iter().find(|r| r.conds.is_empty()) {
            return Ok((vec![all.clone()], Vec::new()));
        }
        return Ok((rules, Vec::new()));
    }
    if rules.len() > MAX_RULES {
        return Err(ProfileError::TooManyRules { arch: arch.into(), name: name.into(), limit: MAX_RULES });
    }
    let ambiguous = |a: &Rule, b: &Rule, args: Option<[u64; ARGS]>| {
        let args: Vec<String> = args.unwrap_or_default().iter().map(|v| format!("{v:#x}")).collect();
        ProfileError::Ambiguous {
            arch: arch.into(),
            name: name.into(),
            first: a.origin.to_string(),
            second: b.origin.to_string(),
            args: format!("args [{}]", args.join(", ")),
        }
    };
    let boxes: Vec<Option<atom::Box6>> = rules.iter().map(|r| atom::boxed(&r.conds)).collect();
    // after[i]: rules that must come after rule i; indeg[j]: how many before j.
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); rules.len()];
    let mut indeg = vec![0usize; rules.len()];
    let mut nested: Vec<(Origin, Origin)> = Vec::new();
    for (i, (a, ba)) in rules.iter().zip(&boxes).enumerate() {
        for (j, (b, bb)) in rules.iter().zip(&boxes).enumerate().skip(i + 1) {
            if a.action == b.action {
                continue;
            }
            let (Some(ba), Some(bb)) = (ba, bb) else { return Err(ambiguous(a, b, None)) };
            let Some(args) = atom::overlap_box(ba, bb) else { continue };
            let (a_in, b_in) = (atom::inside_box(ba, bb), atom::inside_box(bb, ba));
            let (first, then) = match (a_in, b_in) {
                (true, false) => (i, j),
                (false, true) => (j, i),
                _ => return Err(ambiguous(a, b, Some(args))),
            };
            after.get_mut(first).into_iter().for_each(|v| v.push(then));
            indeg.get_mut(then).into_iter().for_each(|d| *d += 1);
            if let (Some(n), Some(w)) = (rules.get(first), rules.get(then)) {
                let pair = (n.origin.clone(), w.origin.clone());
                if !nested.contains(&pair) {
                    nested.push(pair);
                }
            }
        }
    }
    // Kahn's order, lowest index first (strict containment has no cycle).
    let mut ready: std::collections::BTreeSet<usize> = (0..rules.len()).filter(|&j| indeg.get(j) == Some(&0)).collect();
    let mut order = Vec::with_capacity(rules.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &j in after.get(i).map(Vec::as_slice).unwrap_or_default() {
            if let Some(d) = indeg.get_mut(j) {
                *d -= 1;
                if *d == 0 {
                    ready.insert(j);
                }
            }
        }
    }
    let mut slots: Vec<Option<Rule>> = rules.into_iter().map(Some).collect();
    Ok((order.into_iter().filter_map(|j| slots.get_mut(j).and_then(Option::take)).collect(), nested))
}
