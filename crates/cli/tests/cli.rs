#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The command-line contract of FORMATS.md §1: exit codes, `-` for stdin and
//! stdout, one-line `error: ...` messages naming where.

use std::process::Output;

mod common;
use common::{filter, run, stderr, stdout, write_in, FILTERS};
use test_data::require::{self, Need};

/// Asserts a rejection: exit 1, exactly one stderr line starting `error: ` and containing `needle`.
fn assert_rejected(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one-line error expected: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(needle), "`{needle}` not in: {err}");
}

#[test]
fn check_accepts_every_shared_filter() {
    for e in std::fs::read_dir(FILTERS).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "bpf") {
            let o = run(&["check", p.to_str().unwrap()], b"");
            assert_eq!(o.status.code(), Some(0), "{}: {}", p.display(), stderr(&o));
        }
    }
}

#[test]
fn bad_inputs_get_one_line_errors_and_exit_1() {
    let ret = [0x06u8, 0, 0, 0, 0, 0, 0xff, 0x7f];
    let mut long = Vec::new();
    for _ in 0..4097 {
        long.extend_from_slice(&ret);
    }
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![], "empty"),
        (vec![0x06, 0, 0, 0, 0, 0, 0xff, 0x7f, 1], "multiple of 8"),
        (long, "4097"),
        (vec![0xff, 0, 0, 0, 0, 0, 0, 0, 0x06, 0, 0, 0, 0, 0, 0, 0], "insn 0"),
        (vec![0x06, 0x01, 0, 0, 0, 0, 0, 0], "insn 0"),
        (vec![0x15, 0, 5, 0, 0, 0, 0, 0, 0x06, 0, 0, 0, 0, 0, 0, 0], "insn 0"),
    ];
    for (bytes, needle) in cases {
        let o = run(&["check", "--from", "raw", "-"], &bytes);
        assert_rejected(&o, needle);
    }
}

#[test]
fn bad_text_names_line_and_column() {
    let cases: [(&str, &str); 4] = [
        ("ld [0]\n  frobnicate #1\nret #0\n", "2:"),
        ("ld [0]\n/* never closed\nret #0\n", "2:"),
        ("l1: ld [0]\nl1: ret #0\n", "2:"),
        ("ld [0]\njeq #1, nowhere, there\nthere: ret #0\n", "2:"),
    ];
    for (text, needle) in cases {
        let o = run(&["check", "--from", "asm", "-"], text.as_bytes());
        assert_rejected(&o, needle);
    }
}

#[test]
fn usage_errors_exit_2() {
    let o = run(&["check"], b"");
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["run", "--engine", "nope", &filter("seed_fast.bpf"), "--nr", "1"], b"");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `optimize --max-steps` bounds the partition's analysis: a budget too
/// small for Docker's profile is an `error:` line naming the flag.
#[test]
fn optimize_takes_its_step_budget_from_the_flag() {
    let file = format!("{}/../../testdata/profiles/docker_like.bpf", env!("CARGO_MANIFEST_DIR"));
    let o = run(&["optimize", "--max-steps", "1000", &file, "-o", "/dev/null"], b"");
    assert_rejected(&o, "more than 1000 analysis steps (raise it with --max-steps N)");
    let o = run(&["optimize", "--max-steps", "10000000", &file, "-o", "/dev/null"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `analyze`'s constant-action cache is the one of the kernel that runs the
/// arch: an allow-all filter is cached for every number of a native or a
/// compat arch (`SECCOMP_ARCH_*_NR` is 470 for each in Linux 6.18), and
/// for none on x32, whose numbers carry bit 30 (`seccomp_cache_check_allow()`
/// finds them past the bitmap).
#[test]
fn analyze_reports_the_cache_of_the_kernel_that_runs_the_arch() {
    for (arch, cached) in [("x86_64", 470), ("i386", 470), ("aarch64", 470), ("arm", 470), ("s390", 470), ("x32", 0)] {
        let o = run(&["analyze", "--from", "asm", "--arch", arch, "--format", "json", "-"], b"ret #0x7fff0000\n");
        assert_eq!(o.status.code(), Some(0), "{arch}: {}", stderr(&o));
        let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let allowed = json["kernel_cache_allow"].as_array().unwrap();
        assert_eq!(allowed.len(), cached, "{arch}");
        let nrs: Vec<u64> = allowed.iter().map(|v| v.as_u64().unwrap()).collect();
        assert!(nrs.iter().copied().eq(0..cached as u64), "{arch}");
    }
}

/// A missing subcommand is a usage error: the help goes to stderr with
/// exit 2 (clap shows it as help, but nobody asked for it). Help asked for
/// goes to stdout with exit 0.
#[test]
fn a_missing_subcommand_shows_help_as_a_usage_error() {
    for args in [&[][..], &["ebpf"][..]] {
        let o = run(args, b"");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
        assert!(stderr(&o).contains("Usage: bpfconv"), "{args:?}: {}", stderr(&o));
    }
    for args in [&["--help"][..], &["ebpf", "--help"][..]] {
        let o = run(args, b"");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("Usage: bpfconv"), "{args:?}");
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

#[test]
fn disasm_asm_round_trip_through_stdin_and_stdout() {
    let raw = std::fs::read(filter("seed_slow.bpf")).unwrap();
    for format in ["asm", "c", "ddd", "seccomp"] {
        let text = run(&["disasm", "--format", format, &filter("seed_slow.bpf")], b"");
        assert_eq!(text.status.code(), Some(0), "{format}: {}", stderr(&text));
        let back = run(&["asm", "-", "-o", "-"], &text.stdout);
        assert_eq!(back.status.code(), Some(0), "{format}: {}", stderr(&back));
        assert_eq!(back.stdout, raw, "{format} did not round-trip");
    }
}

#[test]
fn convert_writes_the_kernels_bytes() {
    // SPEC §4.8 worked example: arch check then allow, whose bytes the
    // converter filetest pins.
    let filetest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/convert/seccomp_spec_4_8_arch_check.txt");
    let text = std::fs::read_to_string(filetest).unwrap();
    let (_, expected) = text.split_once("== expect").unwrap();
    // `INDEX: 8 raw bytes  listing` lines of the expected block.
    let expect: Vec<u8> = expected
        .lines()
        .filter_map(|l| l.trim_start().split_once(": ").filter(|(i, _)| i.parse::<usize>().is_ok()))
        .flat_map(|(_, rest)| rest.split_whitespace().take(8).map(|b| u8::from_str_radix(b, 16).unwrap()))
        .collect();
    assert_eq!(expect.len(), 11 * 8);
    let prog = "ld [4]\njeq #0xc000003e, ok, kill\nkill: ret #0x80000000\nok: ld [0]\nret #0x7fff0000\n";
    let o = run(&["convert", "--from", "asm", "-", "-o", "-"], prog.as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, expect);
    let listing = run(&["convert", "--from", "asm", "-"], prog.as_bytes());
    assert!(stdout(&listing).contains("(61) r0 = *(u32 *)(r6 +4)"), "{}", stdout(&listing));
}

#[test]
fn run_checks_vectors_on_every_in_process_engine() {
    for engine in ["cbpf", "ebpf", "rbpf", "rbpf-jit", "rbpf-cranelift", "fast"] {
        assert_seed_slow_vectors_pass(engine);
    }
}

/// `run --engine ENGINE seed_slow.bpf --vectors seed_slow.vectors.jsonl
/// --check` exits 0 and its summary reports no failure.
fn assert_seed_slow_vectors_pass(engine: &str) {
    let vectors = filter("seed_slow.vectors.jsonl");
    let o = run(&["run", "--engine", engine, &filter("seed_slow.bpf"), "--vectors", &vectors, "--check"], b"");
    assert_eq!(o.status.code(), Some(0), "{engine}: {}", stderr(&o));
    let last = stdout(&o).lines().last().unwrap_or_default().to_string();
    assert!(last.ends_with("passed, 0 failed"), "{engine}: {last}");
}

#[test]
fn run_single_input_names_the_action() {
    let o = run(&["run", &filter("seed_fast.bpf"), "--arch", "x86_64", "--nr", "getppid"], b"");
    assert_eq!(stdout(&o).trim(), "ALLOW (0x7fff0000)");
    let o = run(&["run", &filter("seed_fast.bpf"), "--nr", "39"], b"");
    assert_eq!(stdout(&o).trim(), "KILL_PROCESS (0x80000000)");
    let o = run(&["run", &filter("allow306_default.bpf"), "--nr", "400"], b"");
    assert_eq!(stdout(&o).trim(), "ERRNO(1) (0x00050001)");
}

#[test]
fn vectors_without_check_print_one_action_per_line() {
    let vectors = "{\"arch\": 3221225534, \"nr\": 110, \"args\": [0,0,0,0,0,0]}\n{\"arch\": 3221225534, \"nr\": 1, \"args\": [0,0,0,0,0,0]}\n";
    let o = run(&["run", &filter("seed_fast.bpf"), "--vectors", "-"], vectors.as_bytes());
    assert_eq!(stdout(&o), "{\"action\": 2147418112}\n{\"action\": 2147483648}\n");
}

#[test]
fn bad_vectors_name_the_line() {
    let vectors = "{\"arch\": 3221225534, \"nr\": 110, \"args\": [0,0,0,0,0,0]}\n{\"arch\": \"x86_64\", \"nr\": 1}\n";
    let o = run(&["run", &filter("seed_fast.bpf"), "--vectors", "-"], vectors.as_bytes());
    assert_rejected(&o, "line 2");
}

#[test]
fn socket_packets_run_on_both_engines() {
    // tcpdump -dd 'ip' on Ethernet: ldh [12]; jeq #0x800, 0, 1; ret #262144; ret #0
    let prog = "ldh [12]\njeq #0x800, yes, no\nyes: ret #262144\nno: ret #0\n";
    let ip = "ffffffffffff0000000000000800450000140000000040060000c0a80001c0a80002";
    let arp = "ffffffffffff0000000000000806";
    for engine in ["cbpf", "ebpf"] {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), prog).unwrap();
        let path = f.path().to_str().unwrap();
        let o = run(&["run", "--mode", "socket", "--engine", engine, path, "--packet", ip], b"");
        assert_eq!(stdout(&o).trim(), "262144", "{engine}: {}", stderr(&o));
        let o = run(&["run", "--mode", "socket", "--engine", engine, path, "--packet", arp], b"");
        assert_eq!(stdout(&o).trim(), "0", "{engine}: {}", stderr(&o));
    }
}

#[test]
fn ebpf_conformance_plugin_speaks_the_protocol() {
    // mov r0, 0x2a; exit
    let o = run(&["ebpf", "conformance-plugin"], b"b7 00 00 00 2a 00 00 00 95 00 00 00 00 00 00 00");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "2a\n");
    // ldxw r0, [r1+0] with memory 11223344 (little-endian load)
    let o = run(&["ebpf", "conformance-plugin", "11223344"], b"61100000000000009500000000000000");
    assert_eq!(stdout(&o), "44332211\n");
    // A load outside memory is an error line and a non-zero exit.
    let o = run(&["ebpf", "conformance-plugin"], b"6110000000000000 9500000000000000");
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(stdout(&o).lines().count(), 1);
}

/// `--engine kernel` (FORMATS-EXTENSIONS §4): the running kernel's answer
/// through the same protocol, the whole 64-bit r0, and a verifier refusal
/// as one line. Skipped visibly without the privilege to load XDP programs
/// (a failure under `CI=true`).
#[test]
fn ebpf_engine_kernel_runs_in_the_kernel_and_refusals_are_one_line() {
    let o = run(&["ebpf", "run", "--engine", "kernel", "--budget", "5", "-"], b"exit\n");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let test = "ebpf_engine_kernel_runs_in_the_kernel_and_refusals_are_one_line";
    let Some(()) = require::have(test, Need::Bpf, kernel::bpf::available()) else { return };
    // lddw r0, 0x8877665544332211; add r0, r2; exit: more than the test run's 32-bit retval.
    let prog = b"lddw %r0, 0x8877665544332211\nadd %r0, %r2\nexit\n";
    for engine in ["ours", "kernel"] {
        let o = run(&["ebpf", "run", "--engine", engine, "-", "--mem", "00 01 02"], prog);
        assert_eq!(stdout(&o), "0x8877665544332214\n", "{engine}: {}", stderr(&o));
    }
    // ldxw r0, [r1+0] on 11223344 through the plugin protocol.
    let o = run(&["ebpf", "conformance-plugin", "--engine", "kernel", "11223344"], b"61100000000000009500000000000000");
    assert_eq!(stdout(&o), "44332211\n", "{}", stderr(&o));
    // lsh r0, 64: refused at load, the verifier's reason on one line.
    let o = run(&["ebpf", "run", "--engine", "kernel", "-"], b"mov %r0, 1\nlsh %r0, 64\nexit\n");
    assert_rejected(&o, "the kernel's verifier refused the program (Invalid argument (os error 22)): invalid shift 64");
    let o =
        run(&["ebpf", "conformance-plugin", "--engine", "kernel"], b"b70000000100000067000000400000009500000000000000");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "the kernel's verifier refused the program (Invalid argument (os error 22)): invalid shift 64\n"
    );
    // --data-end: r3 = the memory's end, for a program's own bounds check
    // of a register offset (here the first byte: 3 reads bytes 3-4, 13 fails the check).
    let checked = b"mov %r0, 0\nldxb %r4, [%r1]\nmov %r5, %r1\nadd %r5, %r4\nmov %r4, %r5\nadd %r4, 2\njgt %r4, %r3, +1\nldxh %r0, [%r5]\nexit\n";
    for engine in ["ours", "kernel"] {
        for (first, want) in [("03", "0x403\n"), ("0d", "0x0\n")] {
            let mem = format!("{first} 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d");
            let o = run(&["ebpf", "run", "--engine", engine, "--data-end", "-", "--mem", &mem], checked);
            assert_eq!(stdout(&o), want, "{engine} {first}: {}", stderr(&o));
        }
        let o = run(&["ebpf", "run", "--engine", engine, "--data-end", "-", "--mem", "00 01"], checked);
        assert_rejected(&o, "2 bytes of memory is less than the 14");
    }
    let o = run(&["ebpf", "run", "--engine", "kernel", "-", "--mem", "00 01"], checked);
    assert_rejected(&o, "R3 !read_ok");
    // Memory past an XDP test run's packet.
    let big = "00 ".repeat(kernel::bpf::memory::MAX_MEMORY + 1);
    let o = run(&["ebpf", "run", "--engine", "kernel", "-", "--mem", &big], b"mov %r0, 0\nexit\n");
    assert_rejected(&o, "more than an XDP test run's packet holds (3520)");
}

/// A little-endian pcap with Ethernet link type.
fn pcap(packets: &[(&[u8], u32)]) -> Vec<u8> {
    let records: Vec<_> =
        packets.iter().map(|&(p, wire_len)| test_data::pcap::Record { data: p.to_vec(), wire_len }).collect();
    test_data::pcap::write(&records)
}

#[test]
fn pcap_runs_every_packet_with_wire_or_captured_length() {
    // Accept packets longer than 100 bytes: `ld len` decides.
    let prog = "ld len\njgt #100, yes, no\nyes: ret #65535\nno: ret #0\n";
    let dir = tempfile::tempdir().unwrap();
    let fpath = dir.path().join("f.asm");
    std::fs::write(&fpath, prog).unwrap();
    let cpath = dir.path().join("c.pcap");
    let short = [0u8; 60];
    // Packet 0: 60 bytes captured of 1500 on the wire; packet 1: 60 of 60.
    std::fs::write(&cpath, pcap(&[(&short, 1500), (&short, 60)])).unwrap();
    let (f, c) = (fpath.to_str().unwrap(), cpath.to_str().unwrap());
    for engine in ["cbpf", "ebpf"] {
        let o = run(&["run", "--mode", "socket", "--engine", engine, f, "--pcap", c], b"");
        assert_eq!(stdout(&o).trim(), "1 of 2 packets accepted", "{engine}: {}", stderr(&o));
    }
    let o = run(&["run", "--mode", "socket", f, "--pcap", c, "--format", "json"], b"");
    assert_eq!(stdout(&o), "{\"packet\": 0, \"ret\": 65535}\n{\"packet\": 1, \"ret\": 0}\n");
    for engine in ["cbpf", "ebpf"] {
        let o = run(&["run", "--mode", "socket", "--engine", engine, f, "--pcap", c, "--len", "captured"], b"");
        assert_eq!(stdout(&o).trim(), "0 of 2 packets accepted", "{engine}: {}", stderr(&o));
    }
    let o = run(&["run", "--mode", "socket", f, "--pcap", "/nonexistent.pcap"], b"");
    assert_rejected(&o, "/nonexistent.pcap");
}

#[test]
fn kernel_engine_checks_vectors_against_the_running_kernel() {
    if require::have(
        "kernel_engine_checks_vectors_against_the_running_kernel",
        Need::Kernel,
        kernel::seccomp_available(),
    )
    .is_none()
    {
        return;
    }
    assert_seed_slow_vectors_pass("kernel");
    let o = run(&["run", "--engine", "kernel", &filter("seed_fast.bpf"), "--nr", "getppid"], b"");
    assert_eq!(stdout(&o).trim(), "ALLOW (0x7fff0000)", "{}", stderr(&o));
}

/// `run --engine kernel-jit --check`: every vector of every testdata
/// filter (kernel-checked and simulator-only, foreign arches included, and
/// the big-endian s390x export) passes with none skipped: no system call
/// is made. A socket filter is refused with the reason.
#[test]
fn kernel_jit_engine_checks_every_vector_of_every_filter() {
    let test = "kernel_jit_engine_checks_every_vector_of_every_filter";
    let Some(()) = require::have(test, Need::Bpf, kernel::bpf::available()) else { return };
    assert_seed_slow_vectors_pass("kernel-jit");
    let profiles = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/profiles");
    let mut runs: Vec<(String, String, &str)> = Vec::new();
    for e in std::fs::read_dir(FILTERS).unwrap() {
        let p = e.unwrap().path();
        let Some(stem) = p.file_name().unwrap().to_str().unwrap().strip_suffix(".bpf") else { continue };
        for kind in ["vectors", "sim_only"] {
            let v = filter(&format!("{stem}.{kind}.jsonl"));
            if std::fs::read_to_string(&v).is_ok_and(|t| !t.trim().is_empty()) {
                runs.push((p.to_str().unwrap().to_string(), v, "little"));
            }
        }
    }
    for name in ["docker_like", "docker_like_opt2"] {
        runs.push((format!("{profiles}/{name}.bpf"), format!("{profiles}/docker_like.vectors.jsonl"), "little"));
    }
    runs.push((format!("{profiles}/s390x.bpf"), format!("{profiles}/s390x.vectors.jsonl"), "big"));
    assert!(runs.len() >= 28, "{runs:?}");
    for (bpf, vectors, endian) in &runs {
        let o = run(&["run", "--engine", "kernel-jit", "--endian", endian, bpf, "--vectors", vectors, "--check"], b"");
        assert_eq!(o.status.code(), Some(0), "{vectors}: {}{}", stdout(&o), stderr(&o));
        let last = stdout(&o).lines().last().unwrap_or_default().to_string();
        assert!(last.ends_with(" passed, 0 failed"), "{vectors}: {last}");
    }
    let o = run(&["run", "--engine", "kernel-jit", &filter("seed_slow.bpf"), "--arch", "aarch64", "--nr", "500"], b"");
    assert_eq!(stdout(&o).trim(), "KILL_THREAD (0x00000000)", "{}", stderr(&o));
    // Socket filters run on kernel-jit converted for a hook (`--target`,
    // default xdp): a 1-byte packet is shorter than any test run takes.
    let o =
        run(&["run", "--mode", "socket", "--engine", "kernel-jit", &filter("seed_fast.bpf"), "--packet", "00"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("not-observable: xdp test runs take at least 14 bytes"), "{}", stdout(&o));
}

#[test]
fn socket_kernel_engine_runs_packets_and_pcaps_and_compares_refusals() {
    let attach = kernel::socket::attach(&[cbpf::Insn::stmt(0x06, 1)]);
    if !matches!(attach, Ok(kernel::socket::Attach::Accepted)) {
        let why = format_args!("SO_ATTACH_FILTER refused even `ret #1` ({attach:?})");
        return require::missing(
            "socket_kernel_engine_runs_packets_and_pcaps_and_compares_refusals",
            Need::Socket,
            why,
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| write_in(dir.path(), name, text);
    let ip = write("ip.asm", "ldh [12]\njeq #0x800, yes, no\nyes: ret #4\nno: ret #0\n");
    let proto = write("proto.asm", "ld proto\nret a\n");
    let mut frame = vec![0u8; 60];
    frame[12] = 0x08;
    let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
    let base = ["run", "--mode", "socket", "--engine", "kernel"];
    let o = run(&[&base[..], &[ip.as_str(), "--packet", &hex]].concat(), b"");
    assert_eq!(stdout(&o), "4\n", "{}", stderr(&o));
    // The AF_UNIX path has no skb->protocol: the default (the EtherType) is not observable.
    let o = run(&[&base[..], &[proto.as_str(), "--packet", &hex]].concat(), b"");
    assert!(stdout(&o).starts_with("not-observable: the filter reads skb->protocol"), "{}", stdout(&o));
    let o = run(&[&base[..], &[proto.as_str(), "--packet", &hex, "--protocol", "0"]].concat(), b"");
    assert_eq!(stdout(&o), "0\n", "{}", stderr(&o));
    let cpath = dir.path().join("c.pcap");
    let other = [0u8; 60];
    std::fs::write(&cpath, pcap(&[(&frame, 60), (&other, 60), (&frame, 1500)])).unwrap();
    let c = cpath.to_str().unwrap();
    let o = run(&[&base[..], &[ip.as_str(), "--pcap", c]].concat(), b"");
    assert_eq!(stdout(&o), "2 of 3 packets accepted\n", "{}", stderr(&o));
    let len = write("len.asm", "ld len\nret a\n");
    let o = run(&[&base[..], &[len.as_str(), "--pcap", c, "--format", "json"]].concat(), b"");
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines[0], "{\"packet\": 0, \"ret_at_least\": 60}", "{}", stderr(&o));
    assert!(lines[2].starts_with("{\"packet\": 2, \"not_observable\": \"the filter reads skb->len"), "{}", lines[2]);
    // ja over 2341 `ld [14]`: our conversion and the kernel both refuse it.
    let mut big = vec![cbpf::Insn::stmt(0x05, 2341)];
    big.extend(std::iter::repeat_n(cbpf::Insn::stmt(0x20, 14), 2341));
    big.push(cbpf::Insn::stmt(0x06, 0));
    let bpath = dir.path().join("big.bpf");
    std::fs::write(&bpath, cbpf::raw::encode(&big)).unwrap();
    let o = run(&[&base[..], &[bpath.to_str().unwrap(), "--packet", &hex]].concat(), b"");
    assert_rejected(&o, "the kernel refuses it too: Invalid argument");
}

/// Issue 17 item 4 on a real big-endian export: libseccomp's filter whose
/// only arch is s390x (testdata/profiles/s390x.bpf, written by s390x.py with
/// python3-seccomp 2.5.4, big-endian as libseccomp writes s390x filters)
/// checks, disassembles, runs its vectors (arguments with different 32-bit
/// halves included: every engine lays s390x's out high half first) and
/// round-trips with `--endian big`; read as little-endian it is refused
/// with the hint.
#[test]
fn libseccomp_s390x_export_works_with_endian_big() {
    let bpf = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/profiles/s390x.bpf");
    let vectors = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/profiles/s390x.vectors.jsonl");
    let bytes = std::fs::read(bpf).unwrap();
    // Big-endian on disk: the first record is `ld [4]` (code 0x0020, k 4).
    assert_eq!(bytes[..8], [0x00, 0x20, 0, 0, 0, 0, 0, 4]);
    let o = run(&["check", "--endian", "big", bpf], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("34 instructions"), "{}", stdout(&o));
    assert_rejected(&run(&["check", bpf], b""), "the file looks big-endian: try --endian big");
    let listing = run(&["disasm", "--endian", "big", bpf], b"");
    assert_eq!(listing.status.code(), Some(0), "{}", stderr(&listing));
    assert!(stdout(&listing).contains("jeq #0x80000016"), "{}", stdout(&listing));
    for engine in ["cbpf", "ebpf", "rbpf", "fast"] {
        let o = run(&["run", "--engine", engine, "--endian", "big", bpf, "--vectors", vectors, "--check"], b"");
        assert_eq!(o.status.code(), Some(0), "{engine}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("42 passed, 0 failed"), "{engine}: {}", stdout(&o));
    }
    // The round trip: the listing assembled big-endian gives the same bytes.
    let o = run(&["asm", "--endian", "big", "--from", "asm", "-", "-o", "-"], &listing.stdout);
    assert_eq!(o.stdout, bytes, "{}", stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("again.bpf");
    let o = run(&["asm", "--endian", "big", bpf, "-o", out.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    let o = run(&["analyze", "--endian", "big", "--arch", "s390x", bpf], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Issue 17 item 4: a filter exported on a big-endian machine (every
/// testdata filter, byte-swapped) checks, runs its kernel-checked vectors,
/// disassembles and round-trips through `asm` with `--endian big`; without
/// the flag the error names the opcode and suggests it.
#[test]
fn big_endian_raw_filters_check_run_and_round_trip_with_endian_big() {
    let dir = tempfile::tempdir().unwrap();
    let mut swapped = 0;
    for e in std::fs::read_dir(FILTERS).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "bpf") {
            continue;
        }
        let little = std::fs::read(&p).unwrap();
        let insns = cbpf::raw::decode(&little).unwrap();
        let big = cbpf::raw::encode_endian(&insns, cbpf::raw::Endian::Big);
        let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
        let bpath = dir.path().join(format!("{stem}.be.bpf"));
        std::fs::write(&bpath, &big).unwrap();
        let b = bpath.to_str().unwrap();
        let o = run(&["check", "--endian", "big", b], b"");
        assert_eq!(o.status.code(), Some(0), "{stem}: {}", stderr(&o));
        let o = run(&["check", b], b"");
        assert_rejected(&o, "the file looks big-endian: try --endian big");
        assert!(stderr(&o).contains("unknown opcode 0x"), "{}", stderr(&o));
        // The little-endian original read as big gets the opposite hint.
        let o = run(&["check", "--endian", "big", p.to_str().unwrap()], b"");
        assert_rejected(&o, "the file looks little-endian: try --endian little");
        // Same listing both ways, and asm writes the big-endian bytes back.
        let want = run(&["disasm", p.to_str().unwrap()], b"");
        let got = run(&["disasm", "--endian", "big", b], b"");
        assert_eq!(stdout(&got), stdout(&want), "{stem}");
        let o = run(&["asm", "--endian", "big", b, "-o", "-"], b"");
        assert_eq!(o.stdout, big, "{stem}: {}", stderr(&o));
        let o = run(&["asm", "--endian", "big", "--from", "asm", "-", "-o", "-"], &want.stdout);
        assert_eq!(o.stdout, big, "{stem}: {}", stderr(&o));
        let vectors = p.with_extension("vectors.jsonl");
        let o = run(&["run", "--endian", "big", b, "--vectors", vectors.to_str().unwrap(), "--check"], b"");
        assert_eq!(o.status.code(), Some(0), "{stem}: {}{}", stdout(&o), stderr(&o));
        let o = run(&["analyze", "--endian", "big", b], b"");
        assert_eq!(o.status.code(), Some(0), "{stem}: {}", stderr(&o));
        swapped += 1;
    }
    assert!(swapped >= 10, "{swapped}");
}

#[test]
fn optimize_writes_a_shorter_proved_filter_and_keeps_a_longer_layout_out() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.bpf");
    let out_s = out.to_str().unwrap();
    let o = run(&["optimize", "--stats", &filter("allow306_end.bpf"), "-o", out_s], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("instructions 316 -> 9"), "{}", stderr(&o));
    let written = cbpf::raw::decode(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(written.len(), 9);
    let check = run(&["check", out_s], b"");
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    // The written filter answers as the input does.
    for nr in ["110", "400"] {
        let args = |f: &str| run(&["run", "--engine", "cbpf", "--arch", "x86_64", "--nr", nr, f], b"").stdout;
        assert_eq!(args(out_s), args(&filter("allow306_end.bpf")), "nr {nr}");
    }
    // Without -o: the seccomp-tools style listing.
    let listing = run(&["optimize", &filter("allow306_end.bpf")], b"");
    assert!(stdout(&listing).contains("return ALLOW"), "{}", stdout(&listing));
    // A `jset` on nr cuts the numbers into one range each: the layout would
    // be longer than the input, which is written unchanged, with a note.
    let jset = "ld [0]\njset #1, odd, even\nodd: ret #0x7fff0000\neven: ret #0\n";
    let o = run(&["optimize", "--from", "asm", "-", "-o", "-"], jset.as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("note: the input is written unchanged"), "{}", stderr(&o));
    assert_eq!(cbpf::raw::decode(&o.stdout).unwrap().len(), 4);
    // Socket filters are refused (not a seccomp filter: `ld [1]` is unaligned).
    let o = run(&["optimize", "--from", "asm", "-"], b"ldb [1]\nret #1\n");
    assert_rejected(&o, "");
    // --prefer takes size or depth; depth keeps what it cannot make shallower.
    let o = run(&["optimize", "--prefer", "depth", "--from", "asm", "-", "-o", "-"], jset.as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("note: the input is written unchanged"), "{}", stderr(&o));
    assert_eq!(run(&["optimize", "--prefer", "breadth", &filter("allow306_end.bpf")], b"").status.code(), Some(2));
}

/// `optimize --prefer depth` on libseccomp's layout of an allow-list of
/// 3,900 `ioctl` requests (one `jeq` each): the tree would pass 4096
/// instructions, so the size-first layout is written, with a note; of 800,
/// the tree is written (a path of at most 32).
#[test]
fn optimize_prefer_depth_writes_the_tree_or_says_why_not() {
    let list = |n: u32| {
        let values: Vec<u32> = (0..n).map(|i| 0x5400 + 7 * i).collect();
        let list = test_data::programs::AllowList {
            nr: Some(16),
            arg: 1,
            high_zero: false,
            run: test_data::programs::COMPACT_RUN,
            values: &values,
        };
        test_data::RawInsn::to_records(&test_data::programs::allow_list(&list))
    };
    let o = run(&["optimize", "--prefer", "depth", "--stats", "--from", "raw", "-", "-o", "-"], &list(3900));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("note: the depth-first layout has"), "{}", stderr(&o));
    let o = run(&["optimize", "--prefer", "depth", "--stats", "--from", "raw", "-", "-o", "-"], &list(800));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let path = stderr(&o)
        .split("longest path ")
        .nth(1)
        .and_then(|t| t.split(" -> ").nth(1)?.split(',').next()?.parse::<usize>().ok());
    assert!(path.is_some_and(|p| p <= 32), "{}", stderr(&o));
}

/// `equiv`'s sides: stdin on one side (not both), a stack `NEWEST,OLDEST`,
/// a file whose name holds a comma as one file, a profile only alone.
#[test]
fn equiv_reads_stdin_stacks_and_names_with_commas() {
    let dir = tempfile::tempdir().unwrap();
    let allow_getpid = "ld [0]\njeq #39, yes, no\nyes: ret #0x7fff0000\nno: ret #0x50001\n";
    let comma = write_in(dir.path(), "get,pid.asm", allow_getpid);
    let comma = comma.as_str();
    let o = run(&["equiv", "-", comma], allow_getpid.as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("equivalent: "), "{}", stdout(&o));
    assert_eq!(run(&["equiv", "-", "-"], b"").status.code(), Some(2));
    // A stack: the newest filter's ERRNO(1) for `getpid` wins over the
    // older's ALLOW (the kernel's precedence), so it differs from the older.
    let write = |name: &str, text: &str| write_in(dir.path(), name, text);
    let errno_all = write("errno.asm", "ret #0x50001\n");
    let plain = write("getpid.asm", allow_getpid);
    let stack = format!("{errno_all},{plain}");
    let o = run(&["equiv", &stack, &errno_all], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["equiv", &stack, comma], b"");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("differ: "), "{}", stdout(&o));
    // A profile in a stack.
    let profile = format!("{}/../../testdata/profiles/docker_like.json", env!("CARGO_MANIFEST_DIR"));
    let o = run(&["equiv", &format!("{profile},{plain}"), comma], b"");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a profile; a stack holds filters"), "{}", stderr(&o));
}

/// `equiv`'s three budgets reach the prover: `3 * args[0].lo == 15` and
/// `args[0].lo == 5` are equal (3 is invertible modulo 2^32), which takes
/// the solver a few conflicts.
#[test]
fn equiv_takes_its_budgets_from_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| write_in(dir.path(), name, text);
    let times3 = write("l.asm", "ld [16]\nmul #3\njeq #15, yes, no\nyes: ret #0x7fff0000\nno: ret #0\n");
    let five = write("r.asm", "ld [16]\njeq #5, yes, no\nyes: ret #0x7fff0000\nno: ret #0\n");
    let o = run(&["equiv", &times3, &five], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for (flag, limit, what) in [
        ("--max-steps", "1", "more than 1 abstract steps"),
        ("--max-conflicts", "0", "more than 0 solver conflicts"),
        ("--max-clauses", "1", "more than 1 solver clauses"),
    ] {
        let o = run(&["equiv", flag, limit, &times3, &five], b"");
        assert_eq!(o.status.code(), Some(3), "{flag}: {}", stderr(&o));
        assert_eq!(stderr(&o), format!("error: undecided: {what} (raise it with {flag} N)\n"));
    }
}

/// `ebpf run` without `--from`: text when it assembles, its error when it
/// does not (line and column), raw instructions when the bytes hold a NUL
/// even if they are valid UTF-8.
#[test]
fn ebpf_run_tells_text_from_raw_instructions() {
    let o = run(&["ebpf", "run", "-"], b"mov %r0, 7\nexit\n");
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), "0x7\n".to_string()), "{}", stderr(&o));
    let o = run(&["ebpf", "run", "-"], b"mov %r0, 7\nbogus\nexit\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("2:1: invalid mnemonic `bogus`"), "{}", stderr(&o));
    // `r0 += 0xc2000000; exit`: the immediate's last byte and `exit`'s
    // opcode (0xc2 0x95) make a valid UTF-8 pair, the rest NULs and 0x07.
    let raw = [0x07, 0, 0, 0, 0, 0, 0, 0xc2, 0x95, 0, 0, 0, 0, 0, 0, 0];
    assert!(std::str::from_utf8(&raw).is_ok());
    let o = run(&["ebpf", "run", "-"], &raw);
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), "0xffffffffc2000000\n".to_string()), "{}", stderr(&o));
}

/// `decompile -o -` is stdout, not a file named `-`.
#[test]
fn decompile_dash_o_dash_is_stdout() {
    let o = run(&["decompile", "-o", "-", &filter("seed_fast.bpf")], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"defaultAction\""), "{}", stdout(&o));
}
