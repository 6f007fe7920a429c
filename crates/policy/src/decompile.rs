//! `decompile`: the profile [`crate::oci`] reads from a filter, held to
//! runc's multiplexing of socket and IPC calls.
//!
//! On the ABIs where libseccomp multiplexes them (i386, mips o32, ppc,
//! s390; [`runc::multiplexes`]), runc gives a rule for `socket` (or `bind`,
//! `semop`, ...) to `socketcall` (`ipc`) as well, with `args[0] ==` the
//! call's number in place of its own conditions on `args[0]`. A profile
//! whose rules mean the filter syscall by syscall can then mean something
//! else for the multiplexer: a filter that traps `socket` but allows
//! `socketcall` has no profile (its `socket` rule would trap
//! `socketcall(SYS_SOCKET, ...)` too). So each multiplexer of each such ABI
//! the filter handles is compared, by `equiv`, as the profile's own rules
//! for it say (what the filter does) and as they say with the multiplexed
//! calls' rules added (what runc would make of the profile): equal, or a
//! [`DecompileError::Multiplexed`] naming the input where they part.

use equiv::{Compare, Limits, Options, Side, Verdict};
use seccomp::{Action, Arch};

use crate::compile::reference_program;
use crate::oci::{oci_arch, profile_of, DecompileError, Decompiled, Profile, Syscall};
use crate::profile::runc::{self, IPC_CALLS, SOCKET_CALLS};
use crate::profile::{Format, Selection};
use crate::read::Reading;

/// The profile that means the filter `r` was read from.
pub fn decompile(r: &Reading) -> Result<Profile, DecompileError> {
    decompile_with(r, false).map(|d| d.profile)
}

/// [`decompile`], or with `approximate` the closest profile: where no
/// profile can say what the filter does, the nearest reading is taken and
/// the reason kept in [`Decompiled::approximations`]: numbers reached by
/// nr arithmetic read from the table numbers alone; unchecked arches, a
/// rule on an unnamed number, a path that is not argument comparisons, a
/// set a profile cannot say, a computed return, the path limit: left out
/// (the default stands); no default: the most common action; per-arch
/// rules for one name: the first arch's; an action the spec lacks (TRAP
/// data): the nearest it has; an arch it has no name for: left out;
/// multiplexed calls whose rules change their multiplexer's: kept.
pub fn decompile_with(r: &Reading, approximate: bool) -> Result<Decompiled, DecompileError> {
    let mut d = profile_of(r, approximate)?;
    for view in r.views.iter().filter(|v| runc::multiplexes(v.arch)) {
        for (mux, calls) in [("socketcall", &SOCKET_CALLS[..]), ("ipc", &IPC_CALLS[..])] {
            let Err(e) = multiplexed(&d.profile, view.arch, mux, calls) else { continue };
            if !approximate {
                return Err(e);
            }
            if !d.approximations.contains(&e) {
                d.approximations.push(e);
            }
        }
    }
    Ok(d)
}

/// Whether `mux` on `arch` means the same with the rules `profile` gives
/// the calls it multiplexes (`calls`) as with its own rules alone.
fn multiplexed(profile: &Profile, arch: Arch, mux: &str, calls: &[(&str, u64)]) -> Result<(), DecompileError> {
    let Some(mux_nr) = arch.syscalls().and_then(|t| t.number(mux)) else { return Ok(()) };
    let Ok(arch_name) = oci_arch(arch) else { return Ok(()) };
    // Every entry's names cut down to the multiplexer, or to the calls,
    // with its index in the profile (for messages).
    let only = |keep: &dyn Fn(&str) -> bool| -> Vec<(usize, Syscall)> {
        profile
            .syscalls
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let names: Vec<String> = s.names.iter().filter(|n| keep(n)).cloned().collect();
                (!names.is_empty()).then(|| (i, Syscall { names, ..s.clone() }))
            })
            .collect()
    };
    let muxed = only(&|n| calls.iter().any(|(c, _)| *c == n));
    if muxed.is_empty() {
        return Ok(());
    }
    let mut names: Vec<String> = muxed.iter().flat_map(|(_, s)| s.names.iter().cloned()).collect();
    names.sort();
    names.dedup();
    let failed = |why: String| DecompileError::Multiplexed {
        view: arch.to_string(),
        mux: mux.to_string(),
        names: names.join(", "),
        why,
    };
    let own = only(&|n| n == mux);
    let entries = |of: &[(usize, Syscall)]| -> Vec<Syscall> { of.iter().map(|(_, s)| s.clone()).collect() };
    if already_there(&entries(&own), &entries(&muxed), calls) {
        return Ok(());
    }
    let with_calls: Vec<(usize, Syscall)> = own.iter().chain(&muxed).cloned().collect();
    let reference = |of: Vec<(usize, Syscall)>| {
        let (at, syscalls): (Vec<usize>, Vec<Syscall>) = of.into_iter().unzip();
        // This arch alone: the proof reads the multiplexer's class on it.
        let p = Profile {
            default_action: profile.default_action.clone(),
            default_errno_ret: profile.default_errno_ret,
            architectures: vec![arch_name.to_string()],
            syscalls,
            flags: None,
        };
        let meaning = runc::meaning_with_entries(&p, &Selection::native(arch), Format::Oci, Some(&at))
            .map_err(|e| e.to_string())?;
        reference_program(&meaning).map_err(|e| e.to_string())
    };
    let alone = reference(own).map_err(|e| failed(format!("its own rules do not read: {e}")))?;
    let joined = reference(with_calls).map_err(|e| failed(format!("then its rules do not read: {e}")))?;
    // Every differing class, so that the multiplexer's is found whatever
    // equiv's order (its classes run by nr ascending, and the multiplexer
    // comes before its calls: `every_multiplexer_comes_before_its_calls`).
    let options = Options { compare: Compare::Value, all: true, limits: Limits::default() };
    match equiv::check(Side::single(&alone), Side::single(&joined), &options) {
        Ok(Verdict::Equal) => Ok(()),
        Ok(Verdict::Differ(found)) => {
            let Some(c) = found.iter().find(|c| c.data.nr as u32 == mux_nr && c.data.arch == arch.audit_arch()) else {
                return Ok(());
            };
            let args: Vec<String> = c.data.args.iter().map(|a| format!("{a:#x}")).collect();
            Err(failed(format!(
                "then it returns {} where the filter returns {} (args [{}])",
                Action::from_u32(c.right),
                Action::from_u32(c.left),
                args.join(", ")
            )))
        }
        Err(e) => Err(failed(format!("whether that changes what it returns is undecided: {e}"))),
    }
}

/// One entry as a rule: its action and its comparisons, in order.
type EntryRule = (String, Option<u32>, Vec<(u32, String, u64, u64)>);

/// Whether every rule runc would add to the multiplexer from `muxed` (an
/// entry's comparisons with those on `args[0]` replaced by `args[0] ==` the
/// call) is already one of its `own` entries, to the letter: then adding
/// them changes nothing, which is what libseccomp's filters show (their
/// multiplexer's rules are those images) and needs no proof, whatever
/// their number. Entries that compare one argument twice (runc splits
/// them into one rule a comparison) are left to the proof.
fn already_there(own: &[Syscall], muxed: &[Syscall], calls: &[(&str, u64)]) -> bool {
    let rule = |s: &Syscall, args: Vec<(u32, String, u64, u64)>| -> Option<EntryRule> {
        let mut indices: Vec<u32> = args.iter().map(|a| a.0).collect();
        indices.sort_unstable();
        indices.dedup();
        let mut args = args;
        args.sort();
        (indices.len() == args.len()).then(|| (s.action.clone(), s.errno_ret, args))
    };
    let compared = |s: &Syscall| -> Vec<(u32, String, u64, u64)> {
        s.args.iter().map(|a| (a.index, a.op.clone(), a.value, a.value_two)).collect()
    };
    let own: Option<std::collections::BTreeSet<EntryRule>> = own.iter().map(|s| rule(s, compared(s))).collect();
    let Some(own) = own else { return false };
    muxed.iter().all(|s| {
        s.names.iter().all(|name| {
            let Some(&(_, call)) = calls.iter().find(|(c, _)| c == name) else { return false };
            let mut args: Vec<_> = compared(s).into_iter().filter(|a| a.0 != 0).collect();
            args.push((0, "SCMP_CMP_EQ".to_string(), call, 0));
            rule(s, args).is_some_and(|r| own.contains(&r))
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cbpf::Mode;

    fn reading(text: &str) -> Reading {
        let (_, insns) = cbpf::text::parse_auto(text.as_bytes()).unwrap();
        let prog = cbpf::validate(&insns, Mode::Seccomp).unwrap();
        crate::read(&prog, &mut seccomp::analysis::Budget::default()).unwrap()
    }

    /// i386 (`0x40000003`): `socket` (359) gets `direct`, `socketcall`
    /// (102) `via`, the rest KILL_PROCESS.
    fn i386_filter(direct: &str, via: &str) -> String {
        format!(
            "ld [4]\njeq #0x40000003, ok, bad\nok: ld [0]\njeq #359, direct\njeq #102, via\nret #0x80000000\n\
             direct: {direct}\nvia: {via}\nbad: ret #0\n"
        )
    }

    /// `socket` trapped, `socketcall` allowed: runc would trap
    /// `socketcall(SYS_SOCKET, ...)` too, so no profile says it; the
    /// approximate profile keeps the rules and says why.
    #[test]
    fn a_multiplexed_call_whose_rules_change_its_multiplexer_has_no_profile() {
        let r = reading(&i386_filter("ret #0x30000", "ret #0x7fff0000"));
        let e = decompile(&r).unwrap_err();
        let DecompileError::Multiplexed { ref view, ref mux, ref names, ref why } = e else { panic!("{e}") };
        assert_eq!((view.as_str(), mux.as_str(), names.as_str()), ("i386", "socketcall", "socket"), "{e}");
        assert!(why.contains("returns TRAP(0) where the filter returns ALLOW (args [0x1, "), "{e}");
        let d = decompile_with(&r, true).unwrap();
        assert_eq!(d.approximations, [e]);
        assert_eq!(d.profile.syscalls.len(), 2);
        // An entry that also names another call (`read`, 3, trapped
        // with `socket`): the error names the multiplexed call alone.
        let text = i386_filter("ret #0x30000", "ret #0x7fff0000")
            .replace("jeq #359, direct", "jeq #359, direct\njeq #3, direct");
        let e = decompile(&reading(&text)).unwrap_err();
        let DecompileError::Multiplexed { ref names, .. } = e else { panic!("{e}") };
        assert_eq!(names, "socket", "{e}");
        let p = decompile_with(&reading(&text), true).unwrap().profile;
        assert!(p.syscalls.iter().any(|s| s.names == ["read", "socket"]), "{p:?}");
    }

    fn entry(name: &str, args: &[(u32, &str, u64)]) -> Syscall {
        let args = args
            .iter()
            .map(|&(index, op, value)| crate::oci::Arg { index, value, value_two: 0, op: format!("SCMP_CMP_{op}") })
            .collect();
        Syscall { names: vec![name.into()], action: "SCMP_ACT_ALLOW".into(), errno_ret: None, args }
    }

    /// Why `multiplexed` finds the multiplexer's class even where equiv
    /// stopped at the first: on every multiplexing ABI the multiplexer's
    /// number is below each of its calls', and equiv lists classes by nr
    /// ascending.
    #[test]
    fn every_multiplexer_comes_before_its_calls() {
        let mut seen = 0;
        for arch in Arch::ALL.into_iter().filter(|&a| runc::multiplexes(a)) {
            let table = arch.syscalls().unwrap();
            for (mux, calls) in [("socketcall", &SOCKET_CALLS[..]), ("ipc", &IPC_CALLS[..])] {
                let Some(m) = table.number(mux) else { continue };
                for (call, _) in calls {
                    if let Some(n) = table.number(call) {
                        assert!(m < n, "{arch}: {mux} {m} >= {call} {n}");
                        seen += 1;
                    }
                }
            }
        }
        assert!(seen > 100, "{seen}");
    }

    /// The images runc would add, already among the multiplexer's own
    /// entries (libseccomp's shape, whatever the number of rules): nothing
    /// to prove. Not there, another action, or an argument compared twice
    /// (which runc splits): left to the proof.
    #[test]
    fn images_already_among_the_multiplexers_entries_need_no_proof() {
        let own = [entry("socketcall", &[(2, "EQ", 5), (0, "EQ", 14)]), entry("socketcall", &[(0, "EQ", 14)])];
        let calls = &SOCKET_CALLS[..];
        assert!(already_there(&own, &[entry("setsockopt", &[(2, "EQ", 5)])], calls));
        // Its own conditions on args[0] are replaced by the call's number.
        assert!(already_there(&own, &[entry("setsockopt", &[(0, "NE", 7), (2, "EQ", 5)])], calls));
        assert!(already_there(&own, &[entry("setsockopt", &[])], calls));
        assert!(!already_there(&own, &[entry("setsockopt", &[(2, "EQ", 6)])], calls));
        assert!(!already_there(&own, &[entry("socket", &[(2, "EQ", 5)])], calls));
        let mut trap = entry("setsockopt", &[(2, "EQ", 5)]);
        trap.action = "SCMP_ACT_TRAP".into();
        assert!(!already_there(&own, &[trap], calls));
        let twice = [entry("socketcall", &[(0, "EQ", 14), (2, "GE", 5), (2, "LE", 9)])];
        assert!(!already_there(&twice, &[entry("setsockopt", &[(2, "GE", 5), (2, "LE", 9)])], calls));
    }

    /// Both trapped: runc's added rule says what the filter does, and the
    /// profile stands. `socket` trapped for one family (`args[0] == 2`)
    /// and `socketcall` for `SYS_SOCKET`: runc gives `socketcall(SYS_SOCKET,
    /// ...)` both of `socket`'s rules (its conditions on `args[0]` dropped,
    /// `args[0]` being the call there), TRAP and ALLOW on the same inputs,
    /// so no profile says it.
    #[test]
    fn a_multiplexer_that_answers_as_its_calls_rules_say_keeps_its_profile() {
        let same = reading(&i386_filter("ret #0x30000", "ret #0x30000"));
        let p = decompile(&same).unwrap();
        assert_eq!(p.syscalls.len(), 1, "{p:?}");
        assert_eq!(p.syscalls[0].names, ["socketcall", "socket"]);
        // socket traps AF_INET (2) only; socketcall traps SYS_SOCKET (1).
        let narrow = reading(&i386_filter(
            "ld [16]\njeq #2, trap1, allow1\ntrap1: ret #0x30000\nallow1: ret #0x7fff0000",
            "ld [16]\njeq #1, trap2, allow2\ntrap2: ret #0x30000\nallow2: ret #0x7fff0000",
        ));
        let e = decompile(&narrow).unwrap_err();
        let DecompileError::Multiplexed { ref why, .. } = e else { panic!("{e}") };
        // The overlap names the entries as the decompiled profile numbers
        // them.
        let p = decompile_with(&narrow, true).unwrap().profile;
        let named: Vec<(usize, &str)> = why
            .split("entry ")
            .skip(1)
            .filter_map(|t| {
                let (i, rest) = t.split_once(" (")?;
                Some((i.parse().ok()?, rest.split(')').next()?))
            })
            .collect();
        assert_eq!(named.len(), 2, "{e}");
        for (i, name) in named {
            assert!(p.syscalls.get(i).is_some_and(|s| s.names.iter().any(|n| n == name)), "{i} {name}: {e}\n{p:?}");
        }
    }
}
