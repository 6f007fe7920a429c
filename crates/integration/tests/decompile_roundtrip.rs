//! `decompile` through the real libseccomp: every libseccomp-made filter of
//! testdata is decompiled to an OCI profile, the profile is compiled again
//! by the distribution's libseccomp (testdata/profiles/compile.py, runc's
//! rule order, through python3-seccomp), and `equiv::check` must prove the
//! result equal to the input filter; each recompiled filter must also give
//! every kernel-checked vector's action. The full loop profile →
//! libseccomp → decompile → libseccomp → equiv runs on docker_like.json.
//! The decompiled rules are compared with libseccomp's own PFC where there
//! is one. Without python3-seccomp `test_data::require` skips visibly (fails
//! under `CI=true`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use cbpf::{Mode, Program};
use equiv::{Options, Side, Verdict};
use seccomp::analysis::Budget;

use test_kit::corpus::{self, Filter};

mod common;
use common::{libseccomp, PYTHON};

fn testdata() -> PathBuf {
    corpus::testdata()
}

/// Compiles the profile at `json` with libseccomp into a validated program.
fn compile(json: &Path, dir: &Path, stem: &str) -> Program {
    let out = dir.join(format!("{stem}.bpf"));
    let script = testdata().join("profiles/compile.py");
    let status = Command::new(PYTHON).arg(&script).arg(json).arg(&out).status().unwrap();
    assert!(status.success(), "compile.py {} failed", json.display());
    let insns = cbpf::raw::decode(&std::fs::read(&out).unwrap()).unwrap();
    cbpf::validate(&insns, Mode::Seccomp).unwrap()
}

fn load(path: &Path) -> Program {
    let insns = cbpf::raw::decode(&std::fs::read(path).unwrap()).unwrap();
    cbpf::validate(&insns, Mode::Seccomp).unwrap()
}

fn decompile(p: &Program) -> policy::Profile {
    let reading = policy::read(p, &mut Budget::default()).unwrap();
    policy::decompile(&reading).unwrap()
}

/// The vectors of a filter: testdata/filters' kernel and simulator files,
/// or docker_like's kernel-checked file.
fn vectors(path: &Path) -> Vec<(cbpf::SeccompData, u32)> {
    let stem = path.file_stem().unwrap().to_str().unwrap();
    if path.starts_with(corpus::filters_dir()) {
        let f = Filter::load(stem).unwrap();
        return f.vectors().unwrap().into_iter().map(|v| (v.data, v.action)).collect();
    }
    let vectors = test_data::vectors::read(&testdata().join("profiles/docker_like.vectors.jsonl")).unwrap();
    let data = |v: &test_data::vectors::Vector| cbpf::SeccompData {
        nr: v.nr,
        arch: v.arch,
        instruction_pointer: v.ip,
        args: v.args,
    };
    vectors.iter().map(|v| (data(v), v.action.unwrap())).collect()
}

/// The testdata/filters stems libseccomp made (those with a `.pfc`; the
/// hand-written ones, such as sshd_like, have none).
fn libseccomp_names() -> Vec<String> {
    let names = corpus::filter_names().unwrap();
    let (made, hand): (Vec<String>, Vec<String>) =
        names.into_iter().partition(|n| corpus::filters_dir().join(format!("{n}.pfc")).exists());
    eprintln!("not made by libseccomp (no .pfc), left out: {hand:?}");
    made
}

fn libseccomp_filters() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        libseccomp_names().iter().map(|n| corpus::filters_dir().join(format!("{n}.bpf"))).collect();
    out.push(testdata().join("profiles/docker_like.bpf"));
    out.push(testdata().join("profiles/docker_like_opt2.bpf"));
    out
}

#[test]
fn every_libseccomp_filter_survives_decompile_and_recompile() {
    if !libseccomp("every_libseccomp_filter_survives_decompile_and_recompile") {
        return;
    }
    let dir = test_data::paths::scratch_dir("decompile").unwrap();
    let (mut proved, mut by_vectors, mut failures) = (0, 0, Vec::new());
    for path in libseccomp_filters() {
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let original = load(&path);
        let profile = decompile(&original);
        let json = dir.join(format!("{name}.json"));
        std::fs::write(&json, serde_json::to_string_pretty(&profile).unwrap()).unwrap();
        let again = compile(&json, &dir, &name);
        // Every vector, on the classic interpreter.
        let runner = equiv::SideRunner::new(Side::single(&again));
        for (data, action) in vectors(&path) {
            let got = runner.value(&data);
            if got != action {
                failures.push(format!("{name}: {data:?}: recompiled gives {got:#x}, expected {action:#x}"));
                break;
            }
        }
        match equiv::check(Side::single(&original), Side::single(&again), &Options::default()) {
            Ok(Verdict::Equal) => proved += 1,
            Ok(Verdict::Differ(c)) => failures.push(format!("{name}: equiv finds a difference: {:?}", c.first())),
            Err(e) => {
                eprintln!("{name}: equiv undecided ({e}); the vectors agree");
                by_vectors += 1;
            }
        }
    }
    eprintln!("decompile round trip: {proved} proved equal by equiv, {by_vectors} by vectors only");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(proved + by_vectors, libseccomp_filters().len());
}

/// profile → libseccomp → decompile → libseccomp → equiv, from our own
/// Docker-like profile.
#[test]
fn docker_like_profile_full_loop() {
    if !libseccomp("docker_like_profile_full_loop") {
        return;
    }
    let dir = test_data::paths::scratch_dir("decompile").unwrap();
    let first = compile(&testdata().join("profiles/docker_like.json"), &dir, "first");
    let profile = decompile(&first);
    let json = dir.join("decompiled.json");
    std::fs::write(&json, serde_json::to_string_pretty(&profile).unwrap()).unwrap();
    let second = compile(&json, &dir, "second");
    let verdict = equiv::check(Side::single(&first), Side::single(&second), &Options::default()).unwrap();
    assert_eq!(verdict, Verdict::Equal);
    // Shorter than the profile written by hand? No longer, at least.
    let original: policy::Profile =
        serde_json::from_str(&std::fs::read_to_string(testdata().join("profiles/docker_like.json")).unwrap()).unwrap();
    assert!(profile.syscalls.len() <= original.syscalls.len(), "{} entries", profile.syscalls.len());
}

/// The rules libseccomp's PFC lists (per syscall: the actions it can
/// return and whether under argument conditions) are the decompiled ones.
#[test]
fn decompiled_rules_are_the_pfc_rules() {
    let mut checked = 0;
    for name in libseccomp_names() {
        let pfc = std::fs::read_to_string(corpus::filters_dir().join(format!("{name}.pfc"))).unwrap();
        let f = Filter::load(&name).unwrap();
        let profile = decompile(&f.program);
        let ours: BTreeSet<(String, String, bool)> = profile
            .syscalls
            .iter()
            .flat_map(|s| {
                let action = pfc_action(&s.action, s.errno_ret);
                s.names.iter().map(move |n| (n.clone(), action.clone(), !s.args.is_empty()))
            })
            .collect();
        assert_eq!(ours, pfc_rules(&pfc), "{name}");
        let default = pfc.lines().skip_while(|l| !l.contains("# default action")).nth(1).unwrap().trim();
        assert_eq!(default, format!("action {};", pfc_action(&profile.default_action, profile.default_errno_ret)));
        checked += 1;
    }
    assert!(checked >= 12, "{checked}");
}

/// PFC's word for an OCI action.
fn pfc_action(oci: &str, errno: Option<u32>) -> String {
    match (oci, errno) {
        ("SCMP_ACT_ALLOW", _) => "ALLOW".into(),
        ("SCMP_ACT_ERRNO", Some(e)) => format!("ERRNO({e})"),
        ("SCMP_ACT_KILL_PROCESS", _) => "KILL_PROCESS".into(),
        ("SCMP_ACT_KILL_THREAD", _) => "KILL".into(),
        (other, _) => other.into(),
    }
}

/// `(syscall, action, conditional)` of every syscall block of a PFC.
fn pfc_rules(pfc: &str) -> BTreeSet<(String, String, bool)> {
    let mut out = BTreeSet::new();
    let mut current: Option<(String, Vec<String>, bool)> = None;
    let flush = |c: Option<(String, Vec<String>, bool)>, out: &mut BTreeSet<_>| {
        if let Some((name, actions, cond)) = c {
            for a in actions {
                out.insert((name.clone(), a, cond));
            }
        }
    };
    for line in pfc.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("# filter for syscall \"") {
            flush(current.take(), &mut out);
            current = Some((rest.split('"').next().unwrap().to_string(), Vec::new(), false));
        } else if t.starts_with("# default action") || t.starts_with("# filter for arch") {
            flush(current.take(), &mut out);
        } else if let Some((_, actions, cond)) = current.as_mut() {
            if t.starts_with("if ($a") {
                *cond = true;
            } else if let Some(a) = t.strip_prefix("action ").and_then(|a| a.strip_suffix(';')) {
                if !actions.iter().any(|x| x == a) {
                    actions.push(a.to_string());
                }
            }
        }
    }
    flush(current, &mut out);
    out
}

/// Every comparison libseccomp knows, on values with both words set on
/// x86_64 and on 32-bit values for x86/x32, through libseccomp, decompile
/// and libseccomp again: equal by `equiv`, and each decompiled entry is the
/// comparison the profile wrote (or the same set, said another way).
#[test]
fn every_comparison_survives_the_round_trip() {
    if !libseccomp("every_comparison_survives_the_round_trip") {
        return;
    }
    let arg = |index: u32, op: &str, value: u64, two: u64| serde_json::json!({"index": index, "op": op, "value": value, "valueTwo": two});
    let rule = |name: &str, args: Vec<serde_json::Value>| serde_json::json!({"names": [name], "action": "SCMP_ACT_ALLOW", "args": args});
    let wide = serde_json::json!({
        "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1, "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [
            rule("read", vec![arg(0, "SCMP_CMP_EQ", 0x1_0000_0027, 0)]),
            rule("write", vec![arg(0, "SCMP_CMP_NE", 0x2_0000_0000, 0)]),
            rule("open", vec![arg(1, "SCMP_CMP_LT", 0x1_0000_0010, 0)]),
            rule("close", vec![arg(2, "SCMP_CMP_LE", 0x3_0000_0000, 0)]),
            rule("stat", vec![arg(3, "SCMP_CMP_GT", 0x1_ffff_fff0, 0)]),
            rule("fstat", vec![arg(4, "SCMP_CMP_GE", 0x8000_0000_0000_0000, 0)]),
            rule("lstat", vec![arg(5, "SCMP_CMP_MASKED_EQ", 0xff00_0000_0000_00ff, 0x1200_0000_0000_0034)]),
            rule("poll", vec![arg(1, "SCMP_CMP_GE", 5, 0), arg(2, "SCMP_CMP_LE", 0x1_0000_0000, 0)]),
            rule("lseek", vec![arg(0, "SCMP_CMP_EQ", 1, 0)]),
            rule("lseek", vec![arg(0, "SCMP_CMP_EQ", 2, 0)]),
            rule("lseek", vec![arg(0, "SCMP_CMP_EQ", 3, 0)]),
            {"names": ["mmap"], "action": "SCMP_ACT_KILL_PROCESS", "args": [arg(0, "SCMP_CMP_EQ", 0, 0)]},
            {"names": ["mmap"], "action": "SCMP_ACT_TRAP", "args": [arg(0, "SCMP_CMP_EQ", 1, 0)]},
            {"names": ["brk"], "action": "SCMP_ACT_LOG"},
            {"names": ["munmap"], "action": "SCMP_ACT_TRACE", "errnoRet": 7}
        ]
    });
    let narrow = serde_json::json!({
        "defaultAction": "SCMP_ACT_KILL_PROCESS", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            rule("read", vec![arg(0, "SCMP_CMP_GT", 0x10, 0)]),
            rule("write", vec![arg(1, "SCMP_CMP_LE", 0x20, 0)]),
            rule("close", vec![arg(0, "SCMP_CMP_MASKED_EQ", 0xf0, 0x30)]),
            rule("getpid", vec![arg(0, "SCMP_CMP_NE", 7, 0)]),
            {"names": ["exit_group", "getppid"], "action": "SCMP_ACT_ALLOW"}
        ]
    });
    let dir = test_data::paths::scratch_dir("decompile").unwrap().join("ops");
    std::fs::create_dir_all(&dir).unwrap();
    for (stem, profile) in [("wide", wide), ("narrow", narrow)] {
        let json = dir.join(format!("{stem}.json"));
        std::fs::write(&json, profile.to_string()).unwrap();
        let first = compile(&json, &dir, &format!("{stem}-1"));
        let decompiled = decompile(&first);
        let text = policy::Profile::text_lines(&decompiled).join("\n");
        let json2 = dir.join(format!("{stem}-2.json"));
        std::fs::write(&json2, serde_json::to_string(&decompiled).unwrap()).unwrap();
        let second = compile(&json2, &dir, &format!("{stem}-2"));
        let verdict = equiv::check(Side::single(&first), Side::single(&second), &Options::default()).unwrap();
        assert_eq!(verdict, Verdict::Equal, "{stem}:\n{text}");
        if stem == "wide" {
            for want in [
                "SCMP_ACT_ALLOW read when args[0] == 0x100000027",
                "SCMP_ACT_ALLOW write when args[0] != 0x200000000",
                "SCMP_ACT_ALLOW open when args[1] < 0x100000010",
                "SCMP_ACT_ALLOW close when args[2] <= 0x300000000",
                "SCMP_ACT_ALLOW stat when args[3] > 0x1fffffff0",
                "SCMP_ACT_ALLOW fstat when args[4] >= 0x8000000000000000",
                "SCMP_ACT_ALLOW lstat when (args[5] & 0xff000000000000ff) == 0x1200000000000034",
                "SCMP_ACT_ALLOW poll when args[1] >= 0x5 && args[2] <= 0x100000000",
                "SCMP_ACT_ALLOW lseek when args[0] == 0x1",
                "SCMP_ACT_KILL_PROCESS mmap when args[0] == 0",
                "SCMP_ACT_TRAP mmap when args[0] == 0x1",
                "SCMP_ACT_LOG brk",
                "SCMP_ACT_TRACE(7) munmap",
            ] {
                assert!(text.lines().any(|l| l == want), "`{want}` not in:\n{text}");
            }
        } else {
            for want in [
                "default SCMP_ACT_KILL_PROCESS; arches SCMP_ARCH_X86 SCMP_ARCH_X86_64 SCMP_ARCH_X32",
                "SCMP_ACT_ALLOW read when args[0] > 0x10",
                "SCMP_ACT_ALLOW write when args[1] <= 0x20",
                "SCMP_ACT_ALLOW close when (args[0] & 0xf0) == 0x30",
                "SCMP_ACT_ALLOW getpid when args[0] != 0x7",
            ] {
                assert!(text.lines().any(|l| l == want), "`{want}` not in:\n{text}");
            }
        }
    }
}
