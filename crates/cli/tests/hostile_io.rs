#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Issue 13: hostile I/O. A failed write to stdout is `error: writing stdout`
//! and exit 1, never a panic; `-o` replaces its target atomically.

use std::fs::File;
use std::process::{Command, Output, Stdio};

mod common;
use common::{filter, run, run_into, BIN};
use test_data::require::{self, Need};

/// Runs with stdout on /dev/full.
fn into_full(args: &[&str], stdin: &[u8]) -> Output {
    run_into(args, stdin, Stdio::from(File::options().write(true).open("/dev/full").unwrap()))
}

#[test]
fn every_subcommand_reports_a_full_stdout() {
    let bpf = filter("allow306_default.bpf");
    let vectors = filter("allow306_default.vectors.jsonl");
    let ebpf_hex = "b700000007000000 9500000000000000";
    let cases: Vec<(Vec<&str>, &[u8])> = vec![
        (vec!["--help"], b""),
        (vec!["--version"], b""),
        (vec!["check", &bpf], b""),
        (vec!["analyze", &bpf], b""),
        (vec!["analyze", &bpf, "--format", "json"], b""),
        (vec!["analyze", &bpf, "--explain", "--audit"], b""),
        (vec!["decompile", &bpf], b""),
        (vec!["decompile", &bpf, "--format", "text"], b""),
        (vec!["disasm", &bpf], b""),
        (vec!["asm", &bpf, "--format", "c"], b""),
        (vec!["convert", &bpf], b""),
        (vec!["run", &bpf, "--vectors", &vectors], b""),
        (vec!["run", &bpf, "--vectors", &vectors, "--check"], b""),
        (vec!["run", &bpf, "--vectors", &vectors, "--engine", "ebpf"], b""),
        (vec!["run", &bpf, "--vectors", &vectors, "--engine", "fast"], b""),
        (vec!["run", &bpf, "--nr", "read"], b""),
        (vec!["run", &bpf, "--nr", "read", "--trace"], b""),
        (vec!["run", "--mode", "socket", "-", "--packet", "00"], b"ret #1\n"),
        (vec!["run", "--mode", "socket", "-", "--packet", "00", "--trace"], b"ret #1\n"),
        (vec!["ebpf", "asm", "-"], b"mov %r0, 7\nexit\n"),
        (vec!["ebpf", "disasm", "-"], &[0xb7, 0, 0, 0, 7, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0]),
        (vec!["ebpf", "run", "-"], b"mov %r0, 7\nexit\n"),
        (vec!["ebpf", "conformance-plugin"], ebpf_hex.as_bytes()),
    ];
    for (args, stdin) in cases {
        let o = into_full(&args, stdin);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("error: writing stdout"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn dash_o_replaces_the_target_and_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.bin");
    std::fs::write(&target, b"old contents that are longer than the new ones ......").unwrap();
    let o = Command::new(BIN)
        .args(["asm", &filter("allow306_default.bpf"), "-o", target.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&target).unwrap(), std::fs::read(filter("allow306_default.bpf")).unwrap());
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["out.bin"]);
}

#[test]
fn dash_o_into_a_missing_directory_fails_cleanly() {
    let o = Command::new(BIN)
        .args(["asm", &filter("allow306_default.bpf"), "-o", "/nonexistent-dir-bpfconv/x.bin"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: writing /nonexistent-dir-bpfconv/x.bin"), "{err}");
}

#[test]
fn zero_vectors_is_a_failure() {
    let bpf = filter("allow306_default.bpf");
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"\n  \n").unwrap();
    for (args, stdin) in [
        (vec!["run", &bpf, "--vectors", empty.to_str().unwrap(), "--check"], &b""[..]),
        (vec!["run", &bpf, "--vectors", "-", "--check"], &b""[..]),
        (vec!["run", &bpf, "--vectors", "-"], &b""[..]),
    ] {
        let o = run(&args, stdin);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains("no vectors"), "{err}");
    }
    let o = run(&["run", "-", "--vectors", "-", "--check"], &std::fs::read(&bpf).unwrap());
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn vectors_skip_a_bom_and_refuse_a_huge_line() {
    let bpf = filter("allow306_default.bpf");
    let line = r#"{"arch": 3221225534, "nr": 0, "ip": 0, "args": [0,0,0,0,0,0]}"#;
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(line.as_bytes());
    bom.push(b'\n');
    let o = run(&["run", &bpf, "--vectors", "-"], &bom);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let mut huge = format!("{line}\n").into_bytes();
    huge.extend(std::iter::repeat_n(b' ', 2 << 20));
    huge.push(b'\n');
    let o = run(&["run", &bpf, "--vectors", "-"], &huge);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("line 2") && err.contains("longer than"), "{err}");
}

#[test]
fn inputs_over_the_cap_are_refused() {
    let o = Command::new(BIN).args(["check", "/dev/zero"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("16 MiB cap"), "{err}");
    // The same cap on stdin, exact: 16 MiB are read (and refused as a
    // program), one byte more is refused unread.
    const CAP: usize = 16 << 20;
    let over = run(&["check", "-"], &vec![0; CAP + 1]);
    assert!(String::from_utf8_lossy(&over.stderr).contains("-: input larger than the 16 MiB cap"), "{over:?}");
    let at = run(&["check", "-"], &vec![0; CAP]);
    let err = String::from_utf8_lossy(&at.stderr);
    assert_eq!(at.status.code(), Some(1), "{err}");
    assert!(!err.contains("cap"), "{err}");
}

/// `dump` end to end on a live process with two filters: into /dev/full it
/// is `error: writing stdout`, exit 1; `-o DIR` refuses a planted symlink
/// without `--force` and, with it, replaces the link, never its target.
#[test]
fn dump_of_a_live_process_is_safe_on_hostile_outputs() {
    use cbpf::Insn;
    let allow = vec![Insn::stmt(0x06, 0x7fff_0000)];
    let errno = vec![Insn::stmt(0x20, 0), Insn::jump(0x15, 9999, 0, 1), Insn::stmt(0x06, 0x0005_0001), allow[0]];
    const TEST: &str = "dump_of_a_live_process_is_safe_on_hostile_outputs";
    let spawned = kernel::FilteredProcess::spawn(&[allow.clone(), errno.clone()]);
    let Some(child) = require::have(TEST, Need::Kernel, spawned) else { return };
    let pid = child.pid().to_string();
    let probe = Command::new(BIN).args(["dump", "--pid", &pid]).output().unwrap();
    if !probe.status.success() {
        return require::missing(
            TEST,
            Need::Ptrace,
            format_args!("dump refused: {}", String::from_utf8_lossy(&probe.stderr)),
        );
    }
    assert!(String::from_utf8_lossy(&probe.stdout).contains("# filter 1 of 2"));

    let o = into_full(&["dump", "--pid", &pid], b"");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: writing stdout"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let planted = dir.path().join(format!("{pid}-0.bpf"));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let o = Command::new(BIN).args(["dump", "--pid", &pid, "-o", out_dir]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let o = Command::new(BIN).args(["dump", "--pid", &pid, "-o", out_dir, "--force"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(!std::fs::symlink_metadata(&planted).unwrap().file_type().is_symlink());
    let oldest: Vec<u8> = allow.iter().flat_map(|i| i.to_bytes()).collect();
    assert_eq!(std::fs::read(&planted).unwrap(), oldest);
    let newest: Vec<u8> = errno.iter().flat_map(|i| i.to_bytes()).collect();
    assert_eq!(std::fs::read(dir.path().join(format!("{pid}-1.bpf"))).unwrap(), newest);
    drop(child);
}

/// `dump --decompile` on a live process: its filter read back from the
/// kernel prints as the profile `decompile` gives for the file.
#[test]
fn dump_decompiles_a_live_process() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/profiles/docker_like.bpf");
    let filter = cbpf::raw::decode(&std::fs::read(path).unwrap()).unwrap();
    const TEST: &str = "dump_decompiles_a_live_process";
    let spawned = kernel::FilteredProcess::spawn(std::slice::from_ref(&filter));
    let Some(child) = require::have(TEST, Need::Kernel, spawned) else { return };
    let pid = child.pid().to_string();
    let o = Command::new(BIN).args(["dump", "--pid", &pid, "--decompile"]).output().unwrap();
    if !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("PTRACE") {
        return require::missing(
            TEST,
            Need::Ptrace,
            format_args!("dump refused: {}", String::from_utf8_lossy(&o.stderr)),
        );
    }
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dumped: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let file = Command::new(BIN).args(["decompile", path]).output().unwrap();
    let expected: serde_json::Value = serde_json::from_slice(&file.stdout).unwrap();
    assert_eq!(dumped, serde_json::json!([expected]));
    // `--arch`: each profile proved on that machine, as `decompile --arch`.
    let o = Command::new(BIN).args(["dump", "--pid", &pid, "--decompile", "--arch", "x86_64"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap(), dumped);
    // Docker's filter kills every aarch64 call: on an aarch64 machine runc
    // adds that arch to the profile, whose default allows them.
    let o = Command::new(BIN).args(["dump", "--pid", &pid, "--decompile", "--arch", "aarch64"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: filter 0 of 1 (oldest first): with aarch64 native "), "{err}");
    assert!(err.contains("the filter returns KILL_THREAD"), "{err}");
    assert!(o.stdout.is_empty());
    for bad in [&["--decompile", "--arch", "vax"][..], &["--arch", "x86_64"]] {
        let o = Command::new(BIN).args(["dump", "--pid", &pid]).args(bad).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    // The analysis budget binds here too, and says which flag raises it.
    let o = Command::new(BIN).args(["dump", "--pid", &pid, "--decompile", "--max-steps", "1000"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: filter 0 of 1 (oldest first): ") && err.contains("--max-steps"), "{err}");
    drop(child);
}
