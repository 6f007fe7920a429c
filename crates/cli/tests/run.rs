//! `bpfconv run` (FORMATS.md §2, §2b) at its edges: which flags go with
//! which mode and engine, the single input's number and arguments, the
//! vector stream's line limit, `--check`'s tally, messages and exit code,
//! inputs an engine cannot observe, and what a refusal says of the kernel.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::process::Output;

mod common;
use common::{filter, run, stderr, stdout, write_in};
use test_data::require::{self, Need};

const ALLOW: u32 = 0x7fff_0000;
const X86_64: u32 = 0xc000_003e;
const AARCH64: u32 = 0xc000_00b7;

fn assert_exit(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "stdout: {}\nstderr: {}", stdout(o), stderr(o));
}

/// One vector line of FORMATS.md §2.
fn vector(arch: u32, nr: i32, action: Option<u32>) -> String {
    let action = action.map(|a| format!(", \"action\": {a}")).unwrap_or_default();
    format!("{{\"arch\": {arch}, \"nr\": {nr}, \"ip\": 0, \"args\": [0, 0, 0, 0, 0, 0]{action}}}\n")
}

/// `filter` (bpf_asm text) and `vectors` in a temporary folder: their paths.
fn files(filter: &str, vectors: &str) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (f, v) = (write_in(dir.path(), "f.asm", filter), write_in(dir.path(), "v.jsonl", vectors));
    (dir, f, v)
}

/// ALLOW for `getpid` (39), ERRNO(1) for everything else.
const GETPID_ONLY: &str = "ld [0]\njeq #39, allow, deny\nallow: ret #0x7fff0000\ndeny: ret #0x50001\n";

#[test]
fn flags_of_the_other_mode_or_engine_are_usage_errors() {
    let seed = filter("seed_fast.bpf");
    // `--target` is for socket filters on kernel-jit only.
    assert_exit(&run(&["run", "--engine", "kernel-jit", "--target", "tc", &seed, "--nr", "1"], b""), 2);
    assert_exit(&run(&["run", "--engine", "cbpf", "--target", "tc", &seed, "--nr", "1"], b""), 2);
    // Packets are for socket filters, whether or not a number is given too.
    for extra in [&["--packet", "00"][..], &["--packet", "00", "--nr", "1"][..]] {
        let o = run(&[&["run", seed.as_str()][..], extra].concat(), b"");
        assert_exit(&o, 2);
        assert!(stderr(&o).contains("--packet and --pcap need --mode socket"), "{}", stderr(&o));
    }
}

/// x32's numbers carry bit 30 (`__X32_SYSCALL_BIT`): `--arch x32 --nr N`
/// sets it, and a number that has it already keeps it.
#[test]
fn an_x32_number_carries_bit_30() {
    for nr in ["1", "0x40000001", "write"] {
        let o = run(&["run", "--from", "asm", "-", "--arch", "x32", "--nr", nr], b"ld [0]\nret a\n");
        assert_exit(&o, 0);
        assert!(stdout(&o).ends_with("(0x40000001)\n"), "--nr {nr}: {}", stdout(&o));
    }
}

/// `--args` takes at most six values (the six `args` of `seccomp_data`).
#[test]
fn six_arguments_at_most() {
    let o = run(&["run", "--from", "asm", "-", "--nr", "1", "--args", "1,2,3,4,5,6"], b"ld [56]\nret a\n");
    assert_exit(&o, 0);
    assert!(stdout(&o).ends_with("(0x00000006)\n"), "{}", stdout(&o));
    let o = run(&["run", "--from", "asm", "-", "--nr", "1", "--args", "1,2,3,4,5,6,7"], b"ld [56]\nret a\n");
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--args takes at most 6 values"), "{}", stderr(&o));
}

/// A vector line may be 1 MiB long, its newline included, and no longer.
#[test]
fn a_vector_line_is_at_most_one_mebibyte() {
    const MAX: usize = 1 << 20;
    let line = |len: usize| {
        let v = vector(X86_64, 39, Some(ALLOW));
        let body = v.trim_end();
        format!("{body}{}\n", " ".repeat(len - body.len() - 1))
    };
    let (_dir, f, v) = files(GETPID_ONLY, &line(MAX));
    let o = run(&["run", &f, "--vectors", &v, "--check"], b"");
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "1 passed, 0 failed\n");
    std::fs::write(&v, line(MAX + 1)).unwrap();
    let o = run(&["run", &f, "--vectors", &v, "--check"], b"");
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("line 1: longer than 1048576 bytes"), "{}", stderr(&o));
}

/// `--check` counts, names the first ten failures on stderr (line, input,
/// got and wanted) and exits 1 when any failed.
#[test]
fn check_names_the_first_ten_failures_and_exits_1() {
    let mut vectors = vector(X86_64, 39, Some(ALLOW));
    for nr in 0..11 {
        // ERRNO(1) is what the filter returns: ALLOW is wrong.
        vectors.push_str(&vector(X86_64, nr, Some(ALLOW)));
    }
    vectors.push_str(&vector(X86_64, 40, Some(0x0005_0001)));
    let (_dir, f, v) = files(GETPID_ONLY, &vectors);
    let o = run(&["run", &f, "--vectors", &v, "--check"], b"");
    assert_exit(&o, 1);
    assert_eq!(stdout(&o), "2 passed, 11 failed\n");
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 10, "{err}");
    let first = format!(
        "{v}:2: arch 0xc000003e nr 0 args [0, 0, 0, 0, 0, 0]: got ERRNO(1) (0x00050001), want ALLOW (0x7fff0000)"
    );
    assert_eq!(err.lines().next(), Some(first.as_str()), "{err}");
    assert!(err.lines().last().unwrap().starts_with(&format!("{v}:11: ")), "{err}");
    // All passing: exit 0.
    let (_dir, f, v) = files(GETPID_ONLY, &vector(X86_64, 39, Some(ALLOW)));
    let o = run(&["run", &f, "--vectors", &v, "--check"], b"");
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "1 passed, 0 failed\n");
}

/// The kernel engine cannot make an aarch64 syscall on x86_64: `--check`
/// counts such vectors as skipped (naming the first three), and without
/// `--check` the line says why.
#[test]
fn inputs_the_kernel_cannot_make_are_skipped_and_said() {
    if require::have("inputs_the_kernel_cannot_make_are_skipped_and_said", Need::Kernel, kernel::seccomp_available())
        .is_none()
    {
        return;
    }
    let mut vectors = vector(X86_64, 39, Some(ALLOW));
    for nr in 0..4 {
        vectors.push_str(&vector(AARCH64, nr, Some(ALLOW)));
    }
    let (_dir, f, v) = files(GETPID_ONLY, &vectors);
    let o = run(&["run", "--engine", "kernel", &f, "--vectors", &v, "--check"], b"");
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "1 passed, 0 failed, 4 skipped\n");
    let err = stderr(&o);
    let skipped: Vec<&str> = err.lines().filter(|l| l.contains("skipped, not observable")).collect();
    assert_eq!(skipped.len(), 3, "{err}");
    assert!(skipped[0].starts_with(&format!("{v}:2: ")), "{err}");
    let o = run(&["run", "--engine", "kernel", &f, "--vectors", &v], b"");
    assert_exit(&o, 0);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("{{\"action\": {ALLOW}}}"));
    assert_eq!(
        lines[1],
        "{\"action\": null, \"not_observable\": \"arch 0xc00000b7 cannot be produced on an x86_64 kernel\"}"
    );
}

/// A socket filter our check refuses: on the kernel engine the error says
/// what `SO_ATTACH_FILTER` makes of it too, on the others it does not ask.
/// The same for one our conversion refuses (a jump past the converted
/// program's reach).
#[test]
fn refusals_say_what_the_kernel_says_only_on_the_kernel_engine() {
    let dir = tempfile::tempdir().unwrap();
    let invalid = dir.path().join("invalid.asm");
    // M[0] read before any store: bpf_check_classic's check_load_and_stores.
    std::fs::write(&invalid, "ld M[0]\nret a\n").unwrap();
    let mut far = vec![cbpf::Insn::stmt(0x05, 2341)];
    far.extend(std::iter::repeat_n(cbpf::Insn::stmt(0x20, 14), 2341));
    far.push(cbpf::Insn::stmt(0x06, 0));
    let unconvertible = dir.path().join("far.bpf");
    std::fs::write(&unconvertible, cbpf::raw::encode(&far)).unwrap();
    for file in [&invalid, &unconvertible] {
        let file = file.to_str().unwrap();
        for engine in ["cbpf", "ebpf"] {
            let o = run(&["run", "--mode", "socket", "--engine", engine, file, "--packet", "00"], b"");
            assert_exit(&o, 1);
            assert!(!stderr(&o).contains("kernel"), "{engine} {file}: {}", stderr(&o));
        }
        if !matches!(kernel::socket::attach(&[cbpf::Insn::stmt(0x06, 1)]), Ok(kernel::socket::Attach::Accepted)) {
            return require::missing(
                "refusals_say_what_the_kernel_says_only_on_the_kernel_engine",
                Need::Socket,
                "SO_ATTACH_FILTER refused even `ret #1`",
            );
        }
        let o = run(&["run", "--mode", "socket", "--engine", "kernel", file, "--packet", "00"], b"");
        assert_exit(&o, 1);
        assert!(stderr(&o).contains("; the kernel refuses it too: Invalid argument"), "{file}: {}", stderr(&o));
    }
}

/// `skb->protocol` defaults to the frame's EtherType (IPv4 for a frame too
/// short to have one), as a packet received on an Ethernet device.
#[test]
fn the_protocol_is_the_frames_ethertype_by_default() {
    let mut frame = vec![0u8; 20];
    frame[12..14].copy_from_slice(&[0x86, 0xdd]);
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    for (packet, protocol) in [(hex(&frame), "34525"), (hex(&frame[..13]), "2048")] {
        for engine in ["cbpf", "ebpf"] {
            let o = run(
                &["run", "--mode", "socket", "--engine", engine, "--from", "asm", "-", "--packet", &packet],
                b"ld proto\nret a\n",
            );
            assert_exit(&o, 0);
            assert_eq!(stdout(&o), format!("{protocol}\n"), "{engine} {packet}");
        }
    }
}

/// A socket filter that keeps part of a packet: the kernel engine's JSON
/// line says how much it kept (`ret`), and for a filter that keeps at least
/// the whole packet, `ret_at_least` its length.
#[test]
fn the_kernel_engine_says_how_much_of_a_packet_it_kept() {
    if !matches!(kernel::socket::attach(&[cbpf::Insn::stmt(0x06, 1)]), Ok(kernel::socket::Attach::Accepted)) {
        return require::missing(
            "the_kernel_engine_says_how_much_of_a_packet_it_kept",
            Need::Socket,
            "SO_ATTACH_FILTER refused even `ret #1`",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("c.pcap");
    let frame = test_data::pcap::Record { data: vec![0; 60], wire_len: 60 };
    std::fs::write(&capture, test_data::pcap::write(&[frame.clone(), frame])).unwrap();
    let c = capture.to_str().unwrap();
    for (program, line) in
        [("ret #4\n", "\"ret\": 4"), ("ret #100\n", "\"ret_at_least\": 60"), ("ret #0\n", "\"ret\": 0")]
    {
        let o = run(
            &["run", "--mode", "socket", "--engine", "kernel", "--from", "asm", "-", "--pcap", c, "--format", "json"],
            program.as_bytes(),
        );
        assert_exit(&o, 0);
        let want: String = (0..2).map(|i| format!("{{\"packet\": {i}, {line}}}\n")).collect();
        assert_eq!(stdout(&o), want, "{program}");
    }
    // A packet cut short by the capture: the AF_UNIX path sends only what
    // was captured, so a filter reading `len` cannot be compared on it.
    let short = test_data::pcap::Record { data: vec![0; 60], wire_len: 1500 };
    let whole = test_data::pcap::Record { data: vec![0; 60], wire_len: 60 };
    std::fs::write(&capture, test_data::pcap::write(&[short, whole.clone(), whole])).unwrap();
    let o =
        run(&["run", "--mode", "socket", "--engine", "kernel", "--from", "asm", "-", "--pcap", c], b"ld len\nret a\n");
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "2 of 3 packets accepted, 1 not observable\n");
}

/// `--ifindex none` is a packet without a device: `ld ifidx` ends the
/// filter with 0 (`convert_skb_access()`'s `skb->dev == NULL` exit).
#[test]
fn ifindex_none_is_a_packet_without_a_device() {
    for (flags, want) in [(&[][..], "1\n"), (&["--ifindex", "7"][..], "7\n"), (&["--ifindex", "none"][..], "0\n")] {
        for engine in ["cbpf", "ebpf"] {
            let args =
                [&["run", "--mode", "socket", "--engine", engine, "--from", "asm", "-", "--packet", "00"][..], flags];
            let o = run(&args.concat(), b"ld ifidx\nret a\n");
            assert_exit(&o, 0);
            assert_eq!(stdout(&o), want, "{engine} {flags:?}");
        }
    }
}

/// Socket filters take packets, not seccomp inputs.
#[test]
fn seccomp_inputs_are_usage_errors_for_socket_filters() {
    let o = run(&["run", "--mode", "socket", "--from", "asm", "-", "--packet", "00", "--nr", "1"], b"ret #1\n");
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--vectors and --nr are for seccomp filters"), "{}", stderr(&o));
}

/// A raw-IP capture (`LINKTYPE_RAW`): the network header is at the start
/// and the protocol is IPv6's or IPv4's by the IP version nibble, unless
/// `--protocol` says otherwise.
#[test]
fn raw_ip_captures_start_at_the_network_header() {
    let mut v6 = vec![0u8; 40];
    v6[0] = 0x60;
    let mut v4 = vec![0u8; 20];
    v4[0] = 0x45;
    let records: Vec<test_data::pcap::Record> =
        [v6, v4].into_iter().map(|data| test_data::pcap::Record { wire_len: data.len() as u32, data }).collect();
    let mut bytes = test_data::pcap::write(&records);
    // The global header's link type (bytes 20..24): Ethernet as written, raw IP here.
    bytes[20..24].copy_from_slice(&101u32.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("raw.pcap");
    std::fs::write(&capture, bytes).unwrap();
    let c = capture.to_str().unwrap();
    // The protocol, and the first byte of the network header (SKF_NET_OFF).
    for (program, extra, want) in [
        ("ld proto\nret a\n", &[][..], [34525, 2048]),
        ("ld proto\nret a\n", &["--protocol", "7"][..], [7, 7]),
        ("ldb [-1048576]\nret a\n", &[][..], [0x60, 0x45]),
    ] {
        for engine in ["cbpf", "ebpf"] {
            let args = [
                &["run", "--mode", "socket", "--engine", engine, "--from", "asm", "-", "--pcap", c, "--format", "json"]
                    [..],
                extra,
            ];
            let o = run(&args.concat(), program.as_bytes());
            assert_exit(&o, 0);
            let want: String =
                want.iter().enumerate().map(|(i, r)| format!("{{\"packet\": {i}, \"ret\": {r}}}\n")).collect();
            assert_eq!(stdout(&o), want, "{engine} {program} {extra:?}");
        }
    }
}
