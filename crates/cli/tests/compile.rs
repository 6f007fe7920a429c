//! `bpfconv compile` and `bpfconv equiv PROFILE FILTER` as a user drives
//! them: formats detected or forced, the selection flags, notes, refusals,
//! exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{run, stderr, stdout};

const PROFILES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/profiles");

fn profile(name: &str) -> String {
    format!("{PROFILES}/{name}")
}

fn tmp(name: &str) -> String {
    test_data::paths::scratch_dir("compile").unwrap().join(name).to_string_lossy().into_owned()
}

#[test]
fn compile_writes_a_filter_equiv_proves_equal_to_the_profile() {
    let out = tmp("docker_like.bpf");
    let o = run(&["compile", &profile("docker_like.json"), "-o", &out, "--stats"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("instructions"), "{}", stderr(&o));
    assert!(stderr(&o)
        .contains("note: the profile asks for the filter to be installed with SECCOMP_FILTER_FLAG_SPEC_ALLOW"));
    let check = run(&["check", &out], b"");
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    // The profile against our filter, and against libseccomp's.
    for filter in [out.as_str(), &profile("docker_like.bpf"), &profile("docker_like_opt2.bpf")] {
        let e = run(&["equiv", &profile("docker_like.json"), filter], b"");
        assert_eq!(e.status.code(), Some(0), "{filter}: {}{}", stdout(&e), stderr(&e));
        assert!(stdout(&e).starts_with("equivalent:"), "{}", stdout(&e));
        // Either side.
        let e = run(&["equiv", filter, &profile("docker_like.json")], b"");
        assert_eq!(e.status.code(), Some(0), "{filter}: {}", stderr(&e));
    }
    // From stdin, to stdout as a listing; the same filter in asm form.
    let json = std::fs::read(profile("docker_like.json")).unwrap();
    let listing = run(&["compile", "-"], &json);
    assert_eq!(listing.status.code(), Some(0), "{}", stderr(&listing));
    assert!(stdout(&listing).contains("A = arch"), "{}", stdout(&listing));
    let asm = run(&["compile", "-", "--format", "asm"], &json);
    assert!(stdout(&asm).contains("ld [4]"), "{}", stdout(&asm));
}

#[test]
fn docker_selection_flags_change_the_filter_and_equiv_names_the_syscalls() {
    let admin = tmp("docker_style_admin.bpf");
    let o = run(&["compile", &profile("docker_style.json"), "--caps", "CAP_SYS_ADMIN,sys_chroot", "-o", &admin], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Default caps on one side, CAP_SYS_ADMIN on the other.
    let e = run(&["equiv", "--all", "--format", "json", &profile("docker_style.json"), &admin], b"");
    assert_eq!(e.status.code(), Some(1), "{}", stderr(&e));
    let doc: serde_json::Value = serde_json::from_str(stdout(&e).trim()).unwrap();
    let names: Vec<&str> =
        doc["counterexamples"].as_array().unwrap().iter().map(|c| c["syscall"].as_str().unwrap()).collect();
    for want in ["x86_64:bpf", "i386:mount", "x32:unshare", "x86_64:clone3"] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    // The same selection on both sides: equal.
    let e = run(&["equiv", "--caps", "CAP_SYS_ADMIN,CAP_SYS_CHROOT", &profile("docker_style.json"), &admin], b"");
    assert_eq!(e.status.code(), Some(0), "{}", stdout(&e));
    // Another machine: aarch64's archMap entry, arm's names.
    let o = run(&["compile", &profile("docker_style.json"), "--arch", "aarch64", "--format", "seccomp"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("ARCH_AARCH64") && stdout(&o).contains("ARCH_ARM"), "{}", stdout(&o));
    assert!(stderr(&o).contains("no such syscall on aarch64, arm"), "{}", stderr(&o));
    // Forcing the format: the Docker file read as a plain OCI object keeps
    // every entry, includes and excludes unread, so reboot is both allowed
    // and killed, whatever its arguments: refused.
    let forced = run(&["compile", &profile("docker_style.json"), "--from", "oci"], b"");
    assert_eq!(forced.status.code(), Some(1), "{}", stderr(&forced));
    assert!(stderr(&forced).contains("x86_64:reboot: entry 12 (reboot) and entry 13 (reboot)"), "{}", stderr(&forced));
}

#[test]
fn seccompiler_files_need_a_thread_and_a_target() {
    let o = run(&["compile", &profile("seccompiler_vmm.json")], b"");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("several filters: vmm, api, vcpu"), "{}", stderr(&o));
    let out = tmp("vmm.bpf");
    let o = run(&["compile", &profile("seccompiler_vmm.json"), "--thread", "vmm", "-o", &out], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("clock_gettime has no args"), "{}", stderr(&o));
    let e = run(&["equiv", "--thread", "vmm", &profile("seccompiler_vmm.json"), &out], b"");
    assert_eq!(e.status.code(), Some(0), "{}", stdout(&e));
    let o = run(&["compile", &profile("seccompiler_vmm.json"), "--thread", "vmm", "--arch", "s390x"], b"");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no target s390x"), "{}", stderr(&o));
}

#[test]
fn refusals_are_one_line_with_the_place() {
    let cases: [(&[u8], &[&str], i32, &str); 5] = [
        (b"{\"defaultAction\": \"SCMP_ACT_ALLOW\",\n \"syscalls\": 7}", &[], 1, "line 2:"),
        (b"[1, 2]", &[], 1, "not a seccomp profile"),
        (
            br#"{"defaultAction": "SCMP_ACT_KILL", "syscalls": [
                {"names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 3, "op": "SCMP_CMP_GT"}]},
                {"names": ["read"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 10, "op": "SCMP_CMP_LT"}]}]}"#,
            &[],
            1,
            "x86_64:read: entry 0 (read) and entry 1 (read) have different actions and overlap",
        ),
        (b"{\"defaultAction\": \"SCMP_ACT_ALLOW\"}", &["--arch", "vax"], 2, "--arch vax"),
        (b"{\"defaultAction\": \"SCMP_ACT_ALLOW\"}", &["--kernel", "six"], 2, "--kernel six"),
    ];
    for (input, flags, code, want) in cases {
        let mut args = vec!["compile", "-"];
        args.extend_from_slice(flags);
        let o = run(&args, input);
        assert_eq!(o.status.code(), Some(code), "{want}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 1, "{err}");
        assert!(err.contains(want), "{want}: {err}");
    }
}

/// An allow-list of `ioctl` requests: 2,000 compile to a tree (a path of
/// at most 32; the profile's reference lists the values one `jeq` each,
/// where five a rule would pass 4096), and `equiv` proves the filter
/// against the profile; 3,900 would pass 4096 with every tree, so the
/// list is written, with a note; 4,200 do not fit at all (exit 1).
#[test]
fn a_long_allow_list_compiles_to_a_tree_or_a_list_that_fits() {
    let profile = |n: u64| {
        let mut syscalls = vec![r#"{"names": ["read", "close"], "action": "SCMP_ACT_ALLOW"}"#.to_string()];
        syscalls.extend((0..n).map(|i| {
            let request = 0x5400 + 7 * i;
            format!(r#"{{"names": ["ioctl"], "action": "SCMP_ACT_ALLOW", "args": [{{"index": 1, "value": {request}, "op": "SCMP_CMP_EQ"}}]}}"#)
        }));
        format!(r#"{{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{}]}}"#, syscalls.join(", "))
    };
    let figure = |err: &str, key: &str| {
        err.split(key).nth(1).and_then(|t| t.trim_start().split([' ', ',', ')']).next()?.parse::<usize>().ok())
    };
    let json = tmp("ioctl_2000.json");
    std::fs::write(&json, profile(2000)).unwrap();
    let out = tmp("ioctl_2000.bpf");
    let o = run(&["compile", &json, "--stats", "-o", &out], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(figure(&err, "longest path").is_some_and(|p| p <= 32), "{err}");
    assert!(figure(&err, "(reference").is_some_and(|n| n < 2 * 2000), "{err}");
    assert!(!err.contains("note: the layout with every argument tree"), "{err}");
    let e = run(&["equiv", &json, &out], b"");
    assert_eq!(e.status.code(), Some(0), "{}{}", stdout(&e), stderr(&e));
    let o = run(&["compile", "-", "--stats", "-o", &tmp("ioctl_3900.bpf")], profile(3900).as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("note: the layout with every argument tree has"), "{err}");
    assert!(figure(&err, "\ninstructions").is_some_and(|n| n <= 4096), "{err}");
    let o = run(&["compile", "-", "-o", &tmp("ioctl_4200.bpf")], profile(4200).as_bytes());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// `decompile --arch`: the profile proved to mean the filter on that
/// machine. A filter that checks i386 alone means its profile on an i386
/// machine, and on an x86_64 one nothing: runc's libseccomp adds the
/// native arch to every filter, so x86_64's `read` would be allowed where
/// the filter kills it (exit 1, the class named). libseccomp's docker_like
/// (x86_64, x86, x32) is proved on x86_64; `--approximate` reads its proof
/// on the machine named; an arch no table has is a usage error.
#[test]
fn decompile_for_a_machine_proves_the_profile_there() {
    let asm = b"ld [4]\njeq #0x40000003, ok, kill\nok: ld [0]\njeq #3, allow, deny\nallow: ret #0x7fff0000\n\
                deny: ret #0x50001\nkill: ret #0\n";
    let plain = run(&["decompile", "--format", "text", "-"], asm);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let o = run(&["decompile", "--format", "text", "--arch", "i386", "-"], asm);
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), stdout(&plain)), "{}", stderr(&o));
    assert_eq!(stdout(&o), "default SCMP_ACT_ERRNO(1); arches SCMP_ARCH_X86\nSCMP_ACT_ALLOW read\n");
    let o = run(&["decompile", "--arch", "x86_64", "-o", &tmp("i386_only.json"), "-"], asm);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).starts_with(
            "error: with x86_64 native (the machine's arch, which libseccomp adds to every filter runc makes) \
             the profile does not mean the filter: x86_64:read: the filter returns KILL_THREAD (0x00000000), the \
             profile ALLOW (0x7fff0000): {"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!std::path::Path::new(&tmp("i386_only.json")).exists(), "a refused profile is not written");
    let o = run(&["decompile", "--approximate", "--arch", "x86_64", "-"], asm);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("differs: x86_64:read: the filter returns KILL_THREAD"), "{}", stderr(&o));
    let o = run(&["decompile", "--approximate", "--arch", "x86", "-"], asm);
    assert!(stderr(&o).contains("note: proved: the profile means exactly what the filter does"), "{}", stderr(&o));
    let docker = run(&["decompile", &profile("docker_like.bpf")], b"");
    let o = run(&["decompile", "--arch", "x86_64", &profile("docker_like.bpf")], b"");
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), stdout(&docker)), "{}", stderr(&o));
    let o = run(&["decompile", "--arch", "vax", "-"], asm);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `decompile --approximate`: where no profile says what the filter does,
/// the closest profile, what was approximated, and every class of (arch,
/// nr) where it differs, proved by equiv; exit 0. Without the flag the
/// exact contract stands (exit 1).
#[test]
fn decompile_approximate_names_every_difference() {
    // seccompiler's dword checks: no profile compares the low word alone
    // on x86_64, and its other arches are KILL_PROCESS.
    let filter = tmp("vmm_for_decompile.bpf");
    let o = run(&["compile", &profile("seccompiler_vmm.json"), "--thread", "vmm", "-o", &filter], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let exact = run(&["decompile", &filter], b"");
    assert_eq!(exact.status.code(), Some(1), "{}", stderr(&exact));
    let o = run(&["decompile", "--approximate", "--format", "text", &filter], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.starts_with("default SCMP_ACT_KILL_PROCESS; arches SCMP_ARCH_X86_64"), "{out}");
    assert!(out.contains("SCMP_ACT_ALLOW socket when args[0] == 0x1"), "{out}");
    assert!(err.contains("note: approximated: x86_64:fcntl: pc"), "{err}");
    for want in ["differs: x86_64:fcntl:", "differs: x86_64:ioctl:", "differs: x86_64:mmap:", "(not in the profile)"] {
        assert!(err.contains(want), "{want}: {err}");
    }
    // Each difference is a vector the filter gives `left` on.
    for line in err.lines().filter(|l| l.starts_with("differs: ")) {
        let json = &line[line.find('{').unwrap()..];
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let (arch, nr, args) = (v["arch"].as_u64().unwrap(), v["nr"].as_i64().unwrap(), &v["args"]);
        let args: Vec<String> = args.as_array().unwrap().iter().map(|a| a.to_string()).collect();
        let r = run(
            &[
                "run",
                "--engine",
                "cbpf",
                &filter,
                "--arch",
                &arch.to_string(),
                "--nr",
                &(nr as u32).to_string(),
                "--args",
                &args.join(","),
            ],
            b"",
        );
        assert!(stdout(&r).contains(&format!("{:#010x}", v["left"].as_u64().unwrap())), "{line}: {}", stdout(&r));
    }
    // A filter a profile says exactly: proved, no difference.
    let o = run(&["decompile", "--approximate", &profile("docker_like.bpf")], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("proved: the profile means exactly what the filter does"), "{}", stderr(&o));
    // systemd's shape: other arches ALLOW.
    let asm = b"ld [4]\njeq #0xc000003e, native, other\nother: ret #0x7fff0000\nnative: ld [0]\njeq #59, deny, allow\ndeny: ret #0x50001\nallow: ret #0x7fff0000\n";
    let o = run(&["decompile", "--approximate", "--format", "text", "-"], asm);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("note: approximated: arches the filter does not check get ALLOW"), "{}", stderr(&o));
    assert!(stderr(&o).contains("(not in the profile) nr 0: the filter returns ALLOW"), "{}", stderr(&o));
}
