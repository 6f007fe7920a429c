//! The meaning's definition against its transcription (the reference
//! program on the classic interpreter), and the decisions the module docs
//! state, one test each.

use super::*;
use cbpf::{Interp, Mode};
use seccomp::arch::{AUDIT_ARCH_I386, AUDIT_ARCH_X86_64, X32_SYSCALL_BIT};

const ALLOW: u32 = 0x7fff_0000;
const EPERM: u32 = 0x0005_0001;

fn sel() -> Selection {
    Selection::native(Arch::X86_64)
}

fn oci(json: &str) -> Result<Meaning, ProfileError> {
    read(json, Some(Format::Oci), &sel())
}

/// The reference program of `m`, validated.
fn reference_of(m: &Meaning) -> cbpf::Program {
    cbpf::validate(&reference::program(m).unwrap(), Mode::Seccomp).unwrap()
}

/// `m.eval` and the reference program agree on `d`.
fn agree(m: &Meaning, prog: &cbpf::Program, d: SeccompData) -> u32 {
    let want = m.eval(&d);
    let got = Interp::new(prog).run_seccomp(&d.in_kernel_order().to_bytes()).unwrap();
    assert_eq!(got, want, "{d:?}");
    want
}

fn call(arch: u32, nr: u32, args: [u64; 6]) -> SeccompData {
    SeccompData { nr: nr as i32, arch, instruction_pointer: 0, args }
}

#[test]
fn oci_basics_abis_and_names() {
    let m = oci(r#"{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86"],
        "syscalls": [{"names": ["read", "arch_prctl", "no_such_call"], "action": "SCMP_ACT_ALLOW"},
                     {"names": ["kill"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38,
                      "args": [{"index": 1, "value": 9, "op": "SCMP_CMP_EQ"}]}]}"#)
    .unwrap();
    let prog = reference_of(&m);
    let x86_64 = |nr, args| agree(&m, &prog, call(AUDIT_ARCH_X86_64, nr, args));
    let i386 = |nr, args| agree(&m, &prog, call(AUDIT_ARCH_I386, nr, args));
    assert_eq!(x86_64(0, [0; 6]), ALLOW); // read
    assert_eq!(x86_64(158, [0; 6]), ALLOW); // arch_prctl
    assert_eq!(i386(3, [0; 6]), ALLOW); // read on i386
    assert_eq!(i386(384, [0; 6]), ALLOW); // arch_prctl is 384 on i386
    assert_eq!(x86_64(62, [0, 9, 0, 0, 0, 0]), 0x0005_0026);
    // 64-bit compare on x86_64, the low word only on i386.
    assert_eq!(x86_64(62, [0, 9 | 1 << 32, 0, 0, 0, 0]), EPERM);
    assert_eq!(i386(37, [0, 9 | 1 << 32, 0, 0, 0, 0]), 0x0005_0026);
    // x32 is not listed: its numbers are the bad-arch action, but nr -1.
    assert_eq!(x86_64(X32_SYSCALL_BIT, [0; 6]), 0);
    assert_eq!(x86_64(u32::MAX, [0; 6]), EPERM);
    // Another arch value.
    assert_eq!(agree(&m, &prog, call(0xc000_00b7, 0, [0; 6])), 0);
    assert!(m.notes.iter().any(|n| n.contains("no_such_call")), "{:?}", m.notes);
    assert_eq!(m.flags, ["SECCOMP_FILTER_FLAG_SPEC_ALLOW"]);
}

#[test]
fn runc_splits_repeated_arguments_into_ored_rules() {
    // Two conditions on args[0]: runc adds one rule per condition.
    let m = oci(r#"{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["personality"],
        "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"},
        {"index": 0, "value": 2, "op": "SCMP_CMP_EQ"}, {"index": 1, "value": 5, "op": "SCMP_CMP_EQ"}]}]}"#)
    .unwrap();
    let prog = reference_of(&m);
    let f = |args| agree(&m, &prog, call(AUDIT_ARCH_X86_64, 135, args));
    assert_eq!(f([1, 0, 0, 0, 0, 0]), EPERM);
    assert_eq!(f([2, 0, 0, 0, 0, 0]), EPERM);
    assert_eq!(f([3, 5, 0, 0, 0, 0]), EPERM);
    assert_eq!(f([3, 4, 0, 0, 0, 0]), ALLOW);
}

#[test]
fn narrower_rules_win_and_incomparable_overlaps_are_refused() {
    let rules = |a: &str, b: &str| {
        format!(
            r#"{{"defaultAction": "SCMP_ACT_KILL", "syscalls": [
            {{"names": ["read"], "action": "SCMP_ACT_ERRNO", "errnoRet": 5, "args": [{a}]}},
            {{"names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{b}]}}]}}"#
        )
    };
    let arg = |i: u32, op: &str, v: u64| format!(r#"{{"index": {i}, "value": {v}, "op": "SCMP_CMP_{op}"}}"#);
    // == 3 inside != 7: libseccomp 2.5.4 gives the != rule here.
    let m = oci(&rules(&arg(0, "NE", 7), &arg(0, "EQ", 3))).unwrap();
    let prog = reference_of(&m);
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [3, 0, 0, 0, 0, 0])), ALLOW);
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [4, 0, 0, 0, 0, 0])), 0x0005_0005);
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [7, 0, 0, 0, 0, 0])), 0);
    // 64-bit bounds sharing a high word: > 0x1_0000_0010 inside > 0x1_0000_0005.
    let m = oci(&rules(&arg(0, "GT", 0x1_0000_0005), &arg(0, "GT", 0x1_0000_0010))).unwrap();
    let prog = reference_of(&m);
    for (a, want) in [(0x1_0000_0011, ALLOW), (0x1_0000_0006, 0x0005_0005), (0x2_0000_0000, ALLOW), (5, 0)] {
        assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [a, 0, 0, 0, 0, 0])), want, "{a:#x}");
    }
    // The unconditional rule is the wider one.
    let m = oci(r#"{"defaultAction": "SCMP_ACT_KILL", "syscalls": [
        {"names": ["read"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["read"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 2, "value": 9, "op": "SCMP_CMP_EQ"}]}]}"#)
    .unwrap();
    let prog = reference_of(&m);
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [0, 0, 9, 0, 0, 0])), EPERM);
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [0, 0, 8, 0, 0, 0])), ALLOW);
    // Neither inside the other: refused, with an input both match.
    let e = oci(&rules(&arg(0, "GT", 3), &arg(0, "LT", 10))).unwrap_err();
    assert!(matches!(e, ProfileError::Ambiguous { .. }), "{e}");
    assert!(e.to_string().contains("args [0x4, 0x0"), "{e}");
    // Same sets, different actions: refused too.
    assert!(oci(&rules(&arg(0, "EQ", 3), &arg(0, "EQ", 3))).is_err());
    // Different arguments overlap without nesting.
    assert!(oci(&rules(&arg(0, "EQ", 1), &arg(1, "EQ", 2))).is_err());
    // Same action: a union, whatever the overlap.
    let same =
        rules(&arg(0, "GT", 3), &arg(0, "LT", 10)).replace(r#""SCMP_ACT_ERRNO", "errnoRet": 5"#, r#""SCMP_ACT_ALLOW""#);
    assert!(oci(&same).is_ok());
}

#[test]
fn entries_with_the_default_action_are_skipped_as_runc_does() {
    // The ERRNO(1) entry equals the default: runc drops it, so the ALLOW
    // range holds for 5 as well (no overlap is left to resolve).
    let m = oci(r#"{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
        {"names": ["read"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 5, "op": "SCMP_CMP_EQ"}]},
        {"names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 10, "op": "SCMP_CMP_LT"}]}]}"#)
    .unwrap();
    assert_eq!(m.eval(&call(AUDIT_ARCH_X86_64, 0, [5, 0, 0, 0, 0, 0])), ALLOW);
}

#[test]
fn socket_calls_are_multiplexed_on_i386() {
    let m = oci(r#"{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86"], "syscalls": [
        {"names": ["socket"], "action": "SCMP_ACT_ALLOW",
         "args": [{"index": 0, "value": 2, "op": "SCMP_CMP_EQ"}, {"index": 1, "value": 5, "op": "SCMP_CMP_EQ"}]},
        {"names": ["semop"], "action": "SCMP_ACT_ERRNO", "errnoRet": 9}]}"#)
    .unwrap();
    let prog = reference_of(&m);
    let i386 = |nr, args| agree(&m, &prog, call(AUDIT_ARCH_I386, nr, args));
    // socket (359) as written; socketcall (102) with args[0] == SYS_SOCKET.
    assert_eq!(i386(359, [2, 5, 0, 0, 0, 0]), ALLOW);
    assert_eq!(i386(359, [1, 5, 0, 0, 0, 0]), EPERM);
    assert_eq!(i386(102, [1, 5, 0, 0, 0, 0]), ALLOW);
    assert_eq!(i386(102, [2, 5, 0, 0, 0, 0]), EPERM);
    // semop has no direct call on i386: ipc (117) with args[0] == SEMOP.
    assert_eq!(i386(117, [1, 0, 0, 0, 0, 0]), 0x0005_0009);
    assert_eq!(i386(117, [2, 0, 0, 0, 0, 0]), EPERM);
    // x86_64 does not multiplex.
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 41, [2, 5, 0, 0, 0, 0])), ALLOW);
}

#[test]
fn refusals_follow_runc() {
    let bad = [
        (r#"{"defaultAction": "SCMP_ACT_NOTIFY"}"#, "cannot be the default"),
        (
            r#"{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["write"], "action": "SCMP_ACT_NOTIFY"}]}"#,
            "write",
        ),
        (r#"{"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_PARISC"]}"#, "runc knows"),
        (r#"{"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_NOPE"]}"#, "flag"),
        (
            r#"{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_KILL", "args": [{"index": 6, "value": 0, "op": "SCMP_CMP_EQ"}]}]}"#,
            "index 6",
        ),
        (r#"{"syscalls": []}"#, "disables seccomp"),
        (r#"{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": [""], "action": "SCMP_ACT_KILL"}]}"#, "empty"),
    ];
    for (json, want) in bad {
        let e = oci(json).unwrap_err().to_string();
        assert!(e.contains(want), "{json}: {e}");
    }
    let e = read("{\n \"defaultAction\": 3}", Some(Format::Oci), &sel()).unwrap_err();
    assert!(matches!(e, ProfileError::Json { line: 2, .. }), "{e}");
}

#[test]
fn x86_64_and_x32_share_the_arch_value() {
    let m = oci(r#"{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X32"],
        "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]}"#)
    .unwrap();
    let prog = reference_of(&m);
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, X32_SYSCALL_BIT, [0; 6])), ALLOW);
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, X32_SYSCALL_BIT + 1, [0; 6])), EPERM);
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [0; 6])), ALLOW);
}

#[test]
fn docker_selection_follows_setup_seccomp() {
    let file = r#"{"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
      "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]},
                  {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": null}],
      "syscalls": [
        {"names": ["read"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "4.8"}},
        {"names": ["arch_prctl"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64", "x32"]}},
        {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
        {"name": "acct", "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "7.0"}}]}"#;
    assert_eq!(detect(&serde_json::from_str(file).unwrap()), Some(Format::Docker));
    let m = read(file, None, &sel()).unwrap();
    assert_eq!(m.format, Format::Docker);
    let views: Vec<Arch> = m.views().map(|v| v.arch).collect();
    assert_eq!(views, [Arch::X86_64, Arch::X32, Arch::I386]);
    let x = |nr| m.eval(&call(AUDIT_ARCH_X86_64, nr, [0; 6]));
    assert_eq!(x(0), ALLOW);
    assert_eq!(x(101), ALLOW); // ptrace: 6.18 >= 4.8
    assert_eq!(x(158), ALLOW); // arch_prctl: amd64
    assert_eq!(x(321), EPERM); // bpf: no CAP_SYS_ADMIN
    assert_eq!(x(435), 0x0005_0026); // clone3 ENOSYS
    assert_eq!(x(163), EPERM); // acct: needs 7.0
    let mut admin = sel();
    admin.caps.push("CAP_SYS_ADMIN".into());
    admin.kernel = (7, 1);
    let m = read(file, None, &admin).unwrap();
    assert_eq!(m.eval(&call(AUDIT_ARCH_X86_64, 321, [0; 6])), ALLOW);
    assert_eq!(m.eval(&call(AUDIT_ARCH_X86_64, 435, [0; 6])), EPERM);
    assert_eq!(m.eval(&call(AUDIT_ARCH_X86_64, 163, [0; 6])), ALLOW);
    // aarch64: its entry has no sub-arches; arch_prctl is not included.
    let m = read(file, None, &Selection::native(Arch::Aarch64)).unwrap();
    let views: Vec<Arch> = m.views().map(|v| v.arch).collect();
    assert_eq!(views, [Arch::Aarch64]);
    let both = file.replace(r#""archMap""#, r#""architectures": ["SCMP_ARCH_X86"], "archMap""#);
    assert!(read(&both, None, &sel()).unwrap_err().to_string().contains("both"));
}

#[test]
fn seccompiler_files_mean_what_seccompiler_compiles() {
    let file = r#"{
      "vcpu": {"mismatch_action": {"errno": 1}, "match_action": "allow", "filter": []},
      "main": {"mismatch_action": "kill_process", "match_action": "allow", "filter": [
        {"syscall": "read"},
        {"syscall": "fcntl", "args": [{"index": 1, "type": "dword", "op": "eq", "val": 2, "comment": "F_SETFD"},
                                      {"index": 2, "type": "dword", "op": "eq", "val": 1}]},
        {"syscall": "fcntl", "args": [{"index": 1, "type": "qword", "op": "eq", "val": 1}]},
        {"syscall": "mmap", "args": [{"index": 3, "type": "dword", "op": {"masked_eq": 32}, "val": 32}]},
        {"syscall": "ioctl"},
        {"syscall": "ioctl", "args": [{"index": 1, "type": "dword", "op": "le", "val": 4294967296}]}
      ]}}"#;
    assert_eq!(detect(&serde_json::from_str(file).unwrap()), Some(Format::Seccompiler));
    assert!(read(file, None, &sel()).unwrap_err().to_string().contains("several filters"));
    let mut s = sel();
    s.thread = Some("main".into());
    let m = read(file, None, &s).unwrap();
    let prog = reference_of(&m);
    let f = |nr, args| agree(&m, &prog, call(AUDIT_ARCH_X86_64, nr, args));
    assert_eq!(f(0, [0; 6]), ALLOW);
    // dword: the low 32 bits only (the firedancer/seccompiler shape).
    assert_eq!(f(72, [0, 2 | 7 << 32, 1, 0, 0, 0]), ALLOW);
    assert_eq!(f(72, [0, 1 | 7 << 32, 0, 0, 0, 0]), 0x8000_0000);
    assert_eq!(f(72, [0, 1, 0, 0, 0, 0]), ALLOW);
    assert_eq!(f(9, [0, 0, 0, 0x20, 0, 0]), ALLOW);
    assert_eq!(f(9, [0, 0, 0, 0x10, 0, 0]), 0x8000_0000);
    // ioctl: the bare entry is dropped; le 2^32 reads as le 0 on the low word.
    assert_eq!(f(16, [0, 0, 0, 0, 0, 0]), ALLOW);
    assert_eq!(f(16, [0, 1, 0, 0, 0, 0]), 0x8000_0000);
    assert_eq!(f(16, [0, 1 << 32, 0, 0, 0, 0]), ALLOW);
    assert!(m.notes.iter().any(|n| n.contains("ioctl")), "{:?}", m.notes);
    // x32 calls match nothing: the mismatch action; other arches KILL_PROCESS.
    assert_eq!(f(X32_SYSCALL_BIT, [0; 6]), 0x8000_0000);
    assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_I386, 3, [0; 6])), 0x8000_0000);
    let unknown = file.replace(r#""syscall": "read""#, r#""syscall": "nope""#);
    assert!(read(&unknown, None, &s).unwrap_err().to_string().contains("refuses"));
}

/// Generated profiles (every comparison, both widths, masks, repeated
/// arguments, several ABIs and actions): the definition and the reference
/// program agree on every input built from the profile's constants.
#[test]
fn definition_and_reference_agree_on_generated_profiles() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let ops = ["EQ", "NE", "LT", "LE", "GT", "GE", "MASKED_EQ"];
    let actions =
        [r#""SCMP_ACT_ALLOW""#, r#""SCMP_ACT_ERRNO", "errnoRet": 5"#, r#""SCMP_ACT_TRAP""#, r#""SCMP_ACT_LOG""#];
    let consts = [0u64, 1, 2, 0xffff_ffff, 0x1_0000_0000, 0x1_0000_0002, u64::MAX, 0x7e02_0000];
    let mut checked = 0;
    for _ in 0..200 {
        let mut entries = Vec::new();
        for _ in 0..(1 + next() % 5) {
            let name = ["read", "socket", "kill", "personality"][(next() % 4) as usize];
            let mut args = Vec::new();
            for _ in 0..next() % 3 {
                let op = ops[(next() % 7) as usize];
                let (v, v2) = (consts[(next() % 8) as usize], consts[(next() % 8) as usize]);
                args.push(format!(
                    r#"{{"index": {}, "value": {v}, "valueTwo": {v2}, "op": "SCMP_CMP_{op}"}}"#,
                    next() % 3
                ));
            }
            let act = actions[(next() % 4) as usize];
            entries.push(format!(r#"{{"names": ["{name}"], "action": {act}, "args": [{}]}}"#, args.join(", ")));
        }
        let json = format!(
            r#"{{"defaultAction": "SCMP_ACT_KILL", "architectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"], "syscalls": [{}]}}"#,
            entries.join(", ")
        );
        let Ok(m) = oci(&json) else { continue };
        let prog = reference_of(&m);
        let mut values: Vec<u64> = consts.to_vec();
        values.extend(consts.iter().map(|c| c.wrapping_add(1)));
        values.extend(consts.iter().map(|c| c.wrapping_sub(1)));
        for view in m.views() {
            for &nr in view.syscalls.keys() {
                for _ in 0..40 {
                    let mut args = [0u64; 6];
                    for a in args.iter_mut().take(3) {
                        *a = values[(next() % values.len() as u64) as usize];
                    }
                    agree(&m, &prog, call(view.arch.audit_arch(), nr, args));
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}

/// Every OCI action's return value as runc hands it to libseccomp
/// (libcontainer/seccomp/seccomp_linux.go `getAction`): ERRNO and TRACE
/// take the entry's errnoRet, EPERM without one, in the 16-bit data field;
/// errnoRet with any other action is ignored, and said so in a note.
#[test]
fn oci_actions_have_runcs_values() {
    for (name, errno, want) in [
        ("SCMP_ACT_KILL", None, 0),
        ("SCMP_ACT_KILL_THREAD", None, 0),
        ("SCMP_ACT_KILL_PROCESS", None, 0x8000_0000),
        ("SCMP_ACT_TRAP", None, 0x0003_0000),
        ("SCMP_ACT_ERRNO", None, 0x0005_0001),
        ("SCMP_ACT_ERRNO", Some(38), 0x0005_0026),
        ("SCMP_ACT_TRACE", None, 0x7ff0_0001),
        ("SCMP_ACT_TRACE", Some(38), 0x7ff0_0026),
        ("SCMP_ACT_LOG", None, 0x7ffc_0000),
        ("SCMP_ACT_ALLOW", None, ALLOW),
        ("SCMP_ACT_NOTIFY", None, 0x7fc0_0000),
    ] {
        assert_eq!(runc::action(name, errno), Some(want), "{name} {errno:?}");
        // The same through a profile: `read` gets it, `write` the default.
        let errno_ret = errno.map_or(String::new(), |e| format!(r#", "errnoRet": {e}"#));
        let m = oci(&format!(
            r#"{{"defaultAction": "SCMP_ACT_KILL_PROCESS", "syscalls": [{{"names": ["read"], "action": "{name}"{errno_ret}}}]}}"#
        ))
        .unwrap();
        assert_eq!(m.eval(&call(AUDIT_ARCH_X86_64, 0, [0; 6])), want, "{name}");
        assert_eq!(m.eval(&call(AUDIT_ARCH_X86_64, 1, [0; 6])), 0x8000_0000, "{name}");
    }
    assert_eq!(runc::action("SCMP_ACT_NONE", None), None);
    let ignored = |action: &str| {
        let m = oci(&format!(
            r#"{{"defaultAction": "SCMP_ACT_KILL", "syscalls": [{{"names": ["read"], "action": "{action}", "errnoRet": 5}}]}}"#
        ))
        .unwrap();
        m.notes.iter().any(|n| n.contains("errnoRet is ignored"))
    };
    assert!(ignored("SCMP_ACT_ALLOW") && ignored("SCMP_ACT_LOG"));
    assert!(!ignored("SCMP_ACT_ERRNO") && !ignored("SCMP_ACT_TRACE"));
}

/// runc's arch names and ours name each other both ways.
#[test]
fn runc_arch_names_round_trip() {
    for (name, arch) in runc::ARCH_NAMES {
        assert_eq!(runc::arch_of(name), Some(arch), "{name}");
        assert_eq!(runc::arch_name(arch), Some(name), "{arch}");
    }
    assert_eq!(runc::arch_of("SCMP_ARCH_NATIVE"), None);
}

/// A profile's first arch is the machine it is read on: its first name's
/// arch, whatever follows; none without arches or for a name runc lacks.
#[test]
fn a_profiles_first_arch_is_its_first_names() {
    let first = |names: &[&str]| {
        runc::first_arch(&crate::Profile {
            default_action: "SCMP_ACT_ALLOW".into(),
            default_errno_ret: None,
            architectures: names.iter().map(|n| n.to_string()).collect(),
            syscalls: Vec::new(),
            flags: None,
        })
    };
    assert_eq!(first(&["SCMP_ARCH_X86", "SCMP_ARCH_X86_64"]), Some(Arch::I386));
    assert_eq!(first(&["SCMP_ARCH_AARCH64"]), Some(Arch::Aarch64));
    assert_eq!(first(&[]), None);
    assert_eq!(first(&["SCMP_ARCH_NATIVE", "SCMP_ARCH_X86"]), None);
}

/// libseccomp multiplexes the socket and IPC calls (`abi_rule_add` in
/// its arch-*.c files) on exactly the ABIs whose 6.18 table has
/// `socketcall` or `ipc`.
#[test]
fn the_abis_with_socketcall_or_ipc_are_the_multiplexing_ones() {
    for (_, arch) in runc::ARCH_NAMES {
        let Some(table) = arch.syscalls() else { continue };
        let has = table.number("socketcall").is_some() || table.number("ipc").is_some();
        assert_eq!(runc::multiplexes(arch), has, "{arch}");
    }
}

/// SCMP_CMP_MASKED_EQ compares `args[i] & value` with `valueTwo & value`:
/// libseccomp masks the datum (its PFC for mask 0xff and datum 0x1f0 reads
/// `$a0.lo32 & 0x000000ff == 240`).
#[test]
fn a_masked_equality_masks_its_datum() {
    let m = oci(r#"{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW",
        "args": [{"index": 0, "value": 255, "valueTwo": 496, "op": "SCMP_CMP_MASKED_EQ"}]}]}"#)
    .unwrap();
    let cond = &m.views().next().unwrap().syscalls.get(&0).unwrap().rules[0].conds[0];
    assert_eq!((cond.cmp.value, cond.cmp.value_two), (0xff, 0xf0));
    let prog = reference_of(&m);
    let f = |a0| agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [a0, 0, 0, 0, 0, 0]));
    assert_eq!(f(0xf0), ALLOW);
    assert_eq!(f(0x1f0), ALLOW);
    assert_eq!(f(0xff), EPERM);
    assert_eq!(f(0x1f), EPERM);
}

/// The narrower of two nested rules wins whichever entry comes first, and
/// each nested pair is reported once, however many rules runc split the
/// entries into; rules of one action with an unconditional one among them
/// are that one rule (the kernel's cache then sees the number as allowed).
#[test]
fn rule_order_nesting_and_unions() {
    let narrow =
        r#"{"names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 3, "op": "SCMP_CMP_EQ"}]}"#;
    let wide =
        r#"{"names": ["read"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 7, "op": "SCMP_CMP_NE"}]}"#;
    for entries in [[narrow, wide], [wide, narrow]] {
        let m = oci(&format!(r#"{{"defaultAction": "SCMP_ACT_KILL", "syscalls": [{}]}}"#, entries.join(", "))).unwrap();
        let prog = reference_of(&m);
        assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [3, 0, 0, 0, 0, 0])), ALLOW);
        assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [4, 0, 0, 0, 0, 0])), EPERM);
        assert_eq!(m.nested.len(), 1, "{:?}", m.nested);
    }
    // One entry split into two rules (args[0] twice), both inside the wider.
    let split = r#"{"names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 3, "op": "SCMP_CMP_EQ"},
        {"index": 0, "value": 4, "op": "SCMP_CMP_EQ"}]}"#;
    let m = oci(&format!(r#"{{"defaultAction": "SCMP_ACT_KILL", "syscalls": [{split}, {wide}]}}"#)).unwrap();
    assert_eq!(m.nested.len(), 1, "{:?}", m.nested);
    let m = oci(r#"{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
        {"names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 3, "op": "SCMP_CMP_EQ"}]},
        {"names": ["read"], "action": "SCMP_ACT_ALLOW"}]}"#)
    .unwrap();
    let read = m.views().next().unwrap().syscalls.get(&0).unwrap();
    assert!(read.rules.len() == 1 && read.rules[0].conds.is_empty(), "{read:?}");
    assert!(seccomp::cache::seccomp_is_const_allow(
        reference_of(&m).original(),
        0,
        AUDIT_ARCH_X86_64,
        AUDIT_ARCH_X86_64
    ));
}

/// At most `MAX_RULES` rules of one syscall with more than one action.
#[test]
fn a_syscall_with_more_than_max_rules_is_refused() {
    let profile = |n: usize| {
        let entries: Vec<String> = (0..n)
            .map(|i| {
                let action = if i % 2 == 0 { "SCMP_ACT_ALLOW" } else { "SCMP_ACT_LOG" };
                format!(r#"{{"names": ["read"], "action": "{action}", "args": [{{"index": 0, "value": {i}, "op": "SCMP_CMP_EQ"}}]}}"#)
            })
            .collect();
        format!(r#"{{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{}]}}"#, entries.join(", "))
    };
    assert!(oci(&profile(runc::MAX_RULES)).is_ok());
    let e = oci(&profile(runc::MAX_RULES + 1)).unwrap_err();
    assert!(matches!(e, ProfileError::TooManyRules { .. }), "{e}");
}

/// moby's `setupSeccomp`: a profile without rules still has its default;
/// `name` and `names` together are refused; `excludes` drops an entry on
/// a listed arch or from the kernel version on, `includes` keeps it only
/// on a listed arch and from the version on (the version itself
/// included); every native arch moby names selects its `archMap` entry
/// (`goToNative`, `nativeToSeccomp`: plain mips and mipsel have no entry
/// there, loongarch64 none either).
#[test]
fn docker_selection_by_arch_kernel_and_names() {
    let docker = |entry: &str| {
        format!(
            r#"{{"defaultAction": "SCMP_ACT_ERRNO", "archMap": [{{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}},
            {{"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]}}], "syscalls": [{entry}]}}"#
        )
    };
    let m = read(&docker("").replace(r#", "syscalls": []"#, ""), None, &sel()).unwrap();
    assert_eq!(m.eval(&call(AUDIT_ARCH_X86_64, 0, [0; 6])), EPERM);
    let both = docker(r#"{"name": "read", "names": ["write"], "action": "SCMP_ACT_ALLOW"}"#);
    assert!(read(&both, None, &sel()).unwrap_err().to_string().contains("both 'name' and 'names'"));
    let kept = |filter: &str, native: Arch, kernel: (u64, u64)| {
        let entry = format!(r#"{{"names": ["read"], "action": "SCMP_ACT_ALLOW", {filter}}}"#);
        let mut s = Selection::native(native);
        s.kernel = kernel;
        let m = read(&docker(&entry), None, &s).unwrap();
        let value = m.arches.first().unwrap();
        m.eval(&call(value.audit_arch, value.views[0].arch.syscalls().unwrap().number("read").unwrap(), [0; 6]))
            == ALLOW
    };
    let now = (6, 18);
    assert!(!kept(r#""excludes": {"arches": ["amd64"]}"#, Arch::X86_64, now));
    assert!(kept(r#""excludes": {"arches": ["amd64"]}"#, Arch::Aarch64, now));
    assert!(!kept(r#""excludes": {"minKernel": "5.6"}"#, Arch::X86_64, (5, 6)));
    assert!(kept(r#""excludes": {"minKernel": "5.6"}"#, Arch::X86_64, (5, 5)));
    assert!(!kept(r#""includes": {"arches": ["arm64"]}"#, Arch::X86_64, now));
    assert!(kept(r#""includes": {"arches": ["arm64"]}"#, Arch::Aarch64, now));
    assert!(kept(r#""includes": {"minKernel": "5.6"}"#, Arch::X86_64, (5, 6)));
    assert!(!kept(r#""includes": {"minKernel": "5.6"}"#, Arch::X86_64, (5, 5)));
    for (arch, native, scmp) in [
        (Arch::I386, "x86", Some("SCMP_ARCH_X86")),
        (Arch::X86_64, "amd64", Some("SCMP_ARCH_X86_64")),
        (Arch::Arm, "arm", Some("SCMP_ARCH_ARM")),
        (Arch::Aarch64, "arm64", Some("SCMP_ARCH_AARCH64")),
        (Arch::Loongarch64, "loongarch64", None),
        (Arch::Mips64, "mips64", Some("SCMP_ARCH_MIPS64")),
        (Arch::Mips64n32, "mips64n32", Some("SCMP_ARCH_MIPS64N32")),
        (Arch::Mipsel64, "mipsel64", Some("SCMP_ARCH_MIPSEL64")),
        (Arch::Mipsel64n32, "mips3l64n32", Some("SCMP_ARCH_MIPSEL64N32")),
        (Arch::Mipsel, "mipsel", None),
        (Arch::Ppc, "ppc", Some("SCMP_ARCH_PPC")),
        (Arch::Ppc64, "ppc64", Some("SCMP_ARCH_PPC64")),
        (Arch::Ppc64le, "ppc64le", Some("SCMP_ARCH_PPC64LE")),
        (Arch::Riscv64, "riscv64", Some("SCMP_ARCH_RISCV64")),
        (Arch::S390, "s390", Some("SCMP_ARCH_S390")),
        (Arch::S390x, "s390x", Some("SCMP_ARCH_S390X")),
        (Arch::Mips, "", None),
    ] {
        assert_eq!(docker::moby_native(arch), Some((native, scmp)), "{arch}");
        // The native arch's archMap entry brings in its sub-architecture.
        let file = format!(
            r#"{{"defaultAction": "SCMP_ACT_ERRNO", "archMap": [{{"architecture": "{}", "subArchitectures": ["SCMP_ARCH_X32"]}}],
            "syscalls": [{{"names": ["read"], "action": "SCMP_ACT_ALLOW", "includes": {{"arches": ["{native}"]}}}}]}}"#,
            scmp.unwrap_or("SCMP_ARCH_NONE")
        );
        let p: docker::DockerProfile = serde_json::from_str(&file).unwrap();
        let (oci, kept) = docker::select(&p, &Selection::native(arch)).unwrap();
        assert_eq!(kept, [0], "{arch}: the entry included on {native:?}");
        let listed: Vec<String> = scmp.map_or(Vec::new(), |n| vec![n.into(), "SCMP_ARCH_X32".into()]);
        assert_eq!(oci.architectures, listed, "{arch}");
    }
}

/// seccompiler's actions keep the low 16 bits of their data
/// (`SECCOMP_RET_ERRNO | (x & SECCOMP_RET_MASK)`), its `masked_eq` masks
/// the value it compares with (`into_masked_eq_bpf`: `self.value &=
/// mask`), and a file that is not a map of filters is refused as one.
#[test]
fn seccompiler_action_data_masks_and_file_shape() {
    use seccompiler::SAction;
    assert_eq!(SAction::Errno(0x1_0026).value(), 0x0005_0026);
    assert_eq!(SAction::Trace(0x1_0026).value(), 0x7ff0_0026);
    assert_eq!(SAction::Errno(1).value(), 0x0005_0001);
    assert_eq!(SAction::Trace(0xffff).value(), 0x7ff0_ffff);
    let mut s = sel();
    s.thread = Some("main".into());
    let m = read(
        r#"{"main": {"mismatch_action": "kill_process", "match_action": "allow", "filter": [
            {"syscall": "read", "args": [{"index": 0, "type": "dword", "op": {"masked_eq": 255}, "val": 496}]}]}}"#,
        None,
        &s,
    )
    .unwrap();
    let cond = &m.views().next().unwrap().syscalls.get(&0).unwrap().rules[0].conds[0];
    assert_eq!((cond.cmp.value, cond.cmp.value_two), (0xff, 0xf0));
    let prog = reference_of(&m);
    for (a0, want) in [(0xf0, ALLOW), (0x1f0, ALLOW), (0xff, 0x8000_0000), (0x1f, 0x8000_0000)] {
        assert_eq!(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 0, [a0, 0, 0, 0, 0, 0])), want, "{a0:#x}");
    }
    let e = read("[1]", Some(Format::Seccompiler), &s).unwrap_err();
    assert!(e.to_string().contains("a map of filters"), "{e}");
}

/// `detect` by the keys its docs name: a map of objects with `filter` (and
/// no `defaultAction`) is seccompiler's, `archMap` or an entry with
/// `includes`, `excludes`, `name` or `comment` Docker's, `defaultAction` or
/// `syscalls` alone OCI's; an empty object is none of them.
#[test]
fn format_detection_follows_the_documented_keys() {
    let d = |text: &str| detect(&serde_json::from_str(text).unwrap());
    assert_eq!(d("{}"), None);
    assert_eq!(d("[]"), None);
    assert_eq!(d(r#"{"main": {"filter": []}}"#), Some(Format::Seccompiler));
    assert_eq!(d(r#"{"main": {"filter": []}, "other": 1}"#), None);
    assert_eq!(d(r#"{"defaultAction": "SCMP_ACT_ALLOW"}"#), Some(Format::Oci));
    assert_eq!(d(r#"{"syscalls": []}"#), Some(Format::Oci));
    assert_eq!(d(r#"{"defaultAction": "SCMP_ACT_ALLOW", "archMap": []}"#), Some(Format::Docker));
    for key in ["includes", "excludes", "name", "comment"] {
        let text = format!(r#"{{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{{"{key}": 1}}]}}"#);
        assert_eq!(d(&text), Some(Format::Docker), "{key}");
    }
}

/// `Meaning::eval` is the narrower-rule definition, whatever order the
/// rules are in; the reference program transcribes them in the order
/// `order` gave, which is why that order puts the narrower rule first.
#[test]
fn eval_is_the_narrower_rule_whatever_the_order() {
    let mut m = oci(r#"{"defaultAction": "SCMP_ACT_KILL", "syscalls": [
        {"names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 3, "op": "SCMP_CMP_EQ"}]},
        {"names": ["read"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 7, "op": "SCMP_CMP_NE"}]}]}"#)
    .unwrap();
    let three = call(AUDIT_ARCH_X86_64, 0, [3, 0, 0, 0, 0, 0]);
    assert_eq!(agree(&m, &reference_of(&m), three), ALLOW);
    let read = m.arches[0].views[0].syscalls.get_mut(&0).unwrap();
    read.rules.reverse();
    assert_eq!(m.eval(&three), ALLOW);
    let bytes = three.in_kernel_order().to_bytes();
    assert_eq!(Interp::new(&reference_of(&m)).run_seccomp(&bytes).unwrap(), EPERM);
}

/// What messages and notes print: a format by its `--from` name, a 32-bit
/// condition on the low word with the constant's low half, a rule's origin
/// by entry and name.
#[test]
fn formats_conditions_and_origins_as_printed() {
    for (format, name) in [(Format::Oci, "oci"), (Format::Docker, "docker"), (Format::Seccompiler, "seccompiler")] {
        assert_eq!((format.name(), format.to_string()), (name, name.to_string()));
    }
    let cmp = ArgCond { index: 1, op: CmpOp::Eq, value: 0x7_0000_0009, value_two: 0 };
    assert_eq!(Cond { width: Width::Low32, cmp }.to_string(), "args[1].lo == 0x9");
    assert_eq!(Cond { width: Width::Bits64, cmp }.to_string(), "args[1] == 0x700000009");
    let masked = ArgCond { index: 2, op: CmpOp::MaskedEq, value: 0x1_0000_00ff, value_two: 0xf0 };
    assert_eq!(Cond { width: Width::Low32, cmp: masked }.to_string(), "(args[2].lo & 0xff) == 0xf0");
    assert_eq!(Origin { entry: 3, name: "socket".into() }.to_string(), "entry 3 (socket)");
}

/// A run of rules that each allow one value of the same argument with the
/// same action is transcribed as lists of the low words, one per high word
/// (`reference::value_list`): one `jeq` a value, not five. On x86_64 the
/// 64-bit values are grouped by their high word (0, 1 and `u32::MAX`
/// here), 300 of them past one 250-value run; on i386 the low words alone.
/// A rule of another action or comparison ends a run and starts the next.
/// Every value, its neighbours and other high words answer as the
/// definition does.
#[test]
fn a_run_of_single_values_is_one_list_that_means_its_rules() {
    let values: Vec<u64> =
        (0..300u64).map(|i| [0, 1 << 32, 0xffff_ffff << 32][(i % 3) as usize] | (0x5400 + 7 * i)).collect();
    let entry = |action: &str, op: &str, v: u64| {
        format!(
            r#"{{"names": ["ioctl"], "action": {action}, "args": [{{"index": 1, "value": {v}, "op": "SCMP_CMP_{op}"}}]}}"#
        )
    };
    let mut entries: Vec<String> = values.iter().map(|&v| entry(r#""SCMP_ACT_ALLOW""#, "EQ", v)).collect();
    entries.push(entry(r#""SCMP_ACT_ERRNO", "errnoRet": 22"#, "EQ", 0x9999));
    entries.push(entry(r#""SCMP_ACT_ALLOW""#, "LT", 0x10));
    entries.extend([0x7777u64, 0x7778].map(|v| entry(r#""SCMP_ACT_LOG""#, "EQ", v)));
    let json = format!(
        r#"{{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86"], "syscalls": [{}]}}"#,
        entries.join(", ")
    );
    let m = oci(&json).unwrap();
    let prog = reference_of(&m);
    // Two views of about one instruction a value each, not five.
    assert!(prog.len() < 2 * (2 * values.len() + 60), "{}", prog.len());
    let mut probes: Vec<u64> = [0x9999u64, 0x7777, 0x7778, 0x7779, 0, 0xf, 0x10].into();
    for &v in &values {
        probes.extend([v, v + 1, v - 1, v ^ 1 << 32, v as u32 as u64]);
    }
    let mut answers = std::collections::BTreeSet::new();
    for (arch, ioctl) in [(AUDIT_ARCH_X86_64, 16), (AUDIT_ARCH_I386, 54)] {
        for &p in &probes {
            answers.insert(agree(&m, &prog, call(arch, ioctl, [0, p, 0, 0, 0, 0])));
        }
    }
    // ALLOW, EPERM, EINVAL, LOG: every rule and the default were reached.
    assert_eq!(answers.len(), 4, "{answers:x?}");
}

/// runc's multiplexed rules of a list: on i386 `setsockopt` allowed for
/// 300 values of `args[2]` is also `socketcall` allowed where `args[0] ==
/// SYS_SETSOCKOPT` (14) and `args[2]` is one of them: one list behind the
/// shared condition (`reference::value_list`), a failed one skipping the
/// whole list. About one instruction a value on each of the three
/// syscalls (x86_64's and i386's `setsockopt`, i386's `socketcall`); every
/// value, its neighbours and the neighbouring calls answer as the
/// definition does.
#[test]
fn a_list_behind_a_shared_condition_means_its_rules() {
    let values: Vec<u64> = (0..300u64).map(|i| 3 * i + 1).collect();
    let entries: Vec<String> = values
        .iter()
        .map(|v| {
            format!(r#"{{"names": ["setsockopt"], "action": "SCMP_ACT_ALLOW", "args": [{{"index": 2, "value": {v}, "op": "SCMP_CMP_EQ"}}]}}"#)
        })
        .collect();
    let json = format!(
        r#"{{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86"], "syscalls": [{}]}}"#,
        entries.join(", ")
    );
    let m = oci(&json).unwrap();
    let prog = reference_of(&m);
    assert!(prog.len() < 3 * values.len() + 100, "{}", prog.len());
    let mut answers = std::collections::BTreeSet::new();
    for &v in &values {
        for probe in [v - 1, v, v + 1, v | 1 << 32] {
            answers.insert(agree(&m, &prog, call(AUDIT_ARCH_X86_64, 54, [0, 0, probe, 0, 0, 0])));
            answers.insert(agree(&m, &prog, call(AUDIT_ARCH_I386, 366, [0, 0, probe, 0, 0, 0])));
            for call_nr in [13, 14, 15] {
                answers.insert(agree(&m, &prog, call(AUDIT_ARCH_I386, 102, [call_nr, 0, probe, 0, 0, 0])));
            }
        }
    }
    assert_eq!(answers.len(), 2, "{answers:x?}");
}

/// The reference's layout as `reference`'s docs state it, which sizes
/// alone decide (the answers are the same either way): a syscall whose
/// first rule has no condition is a `ret` where its `jeq` lands, not a rule
/// chain; one with conditions is a `ja` to its rules. A 64-bit masked
/// comparison whose mask has no high bits loads the low word alone.
#[test]
fn the_reference_returns_in_place_and_loads_only_the_words_it_tests() {
    use cbpf::{JmpOp, Op, Size, Src};
    let m = oci(r#"{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"},
            {"names": ["ioctl"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 1, "value": 255, "valueTwo": 84, "op": "SCMP_CMP_MASKED_EQ"}]}]}"#)
    .unwrap();
    let insns = reference::program(&m).unwrap();
    let landing = |nr: u32| {
        let (pc, jt) = insns
            .iter()
            .enumerate()
            .find_map(|(pc, i)| match i.op() {
                Some(Op::Jmp { op: JmpOp::Jeq, src: Src::K, k, jt, .. }) if k == nr => Some((pc, jt)),
                _ => None,
            })
            .unwrap();
        insns[pc + 1 + usize::from(jt)].op()
    };
    assert_eq!(landing(0), Some(Op::RetK { k: ALLOW }), "read: {insns:?}");
    assert!(matches!(landing(16), Some(Op::Ja { .. })), "ioctl: {insns:?}");
    // args[1] of x86_64: low word at 24, high word at 28.
    let loads: Vec<u32> = insns
        .iter()
        .filter_map(|i| match i.op() {
            Some(Op::LdAbs { size: Size::W, k }) => Some(k),
            _ => None,
        })
        .collect();
    assert!(loads.contains(&24) && !loads.contains(&28), "{loads:?}");
    let prog = reference_of(&m);
    for v in [84u64, 84 | 1 << 40, 85, 0x154] {
        agree(&m, &prog, call(AUDIT_ARCH_X86_64, 16, [0, v, 0, 0, 0, 0]));
    }
}
