#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Issue 17: a 3000-packet capture of our own (testdata/pcap/capture3000.pcap,
//! made by `test_kit::capture`) and real `tcpdump -dd` programs
//! (testdata/tcpdump/, with the command and version that made them): on
//! every (filter, packet) pair, cbpf == ebpf == the running kernel with the
//! captured length (`--len captured`; the kernel may be not-observable only
//! where the filter reads metadata the AF_UNIX path cannot carry, counted),
//! and cbpf == ebpf with the wire length (`--len wire`).

use std::path::PathBuf;

use engine::{EngineKind, Prepared, SocketEngine, SocketOutcome};
use test_data::require::{self, Need};
use test_kit::{capture, socket};

mod common;

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

#[test]
fn committed_capture_is_the_generators() {
    let path = testdata().join("pcap/capture3000.pcap");
    let generated = capture::pcap();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read(&path).unwrap();
    assert!(committed == generated, "{}: stale; rerun with UPDATE_EXPECT=1", path.display());
}

/// Every `*.dd` file of testdata/tcpdump, by name.
fn tcpdump_programs() -> Vec<(String, Vec<cbpf::Insn>)> {
    common::files_with_extension(&testdata().join("tcpdump"), "dd")
        .into_iter()
        .map(|p| {
            let text = std::fs::read(&p).unwrap();
            let (_, insns) = cbpf::text::parse_auto(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_stem().unwrap().to_string_lossy().into_owned(), insns)
        })
        .collect()
}

#[test]
fn tcpdump_programs_agree_on_every_packet() {
    let packets = capture::packets();
    let programs = tcpdump_programs();
    assert!(programs.len() >= 25, "{} tcpdump programs", programs.len());
    let kernel_ok = match kernel::socket::attach(&[cbpf::Insn::stmt(0x06, 1)]) {
        Ok(kernel::socket::Attach::Accepted) => true,
        other => {
            let why = format_args!("the kernel engine is left out: SO_ATTACH_FILTER refused even `ret #1` ({other:?})");
            require::missing("tcpdump_programs_agree_on_every_packet", Need::Socket, why);
            false
        }
    };
    let (mut pairs, mut kernel_pairs, mut unobservable, mut wire_pairs, mut accepted) = (0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    for (name, insns) in &programs {
        let program = cbpf::validate(insns, cbpf::Mode::Socket).unwrap_or_else(|e| panic!("{name}: {e}"));
        let prepared = Prepared::new(program).unwrap();
        let mut cbpf = SocketEngine::new(EngineKind::Cbpf, &prepared).unwrap();
        let mut ebpf = SocketEngine::new(EngineKind::Ebpf, &prepared).unwrap();
        let mut kernel = kernel_ok.then(|| SocketEngine::new(EngineKind::Kernel, &prepared).unwrap());
        for (i, p) in packets.iter().enumerate() {
            // --len captured: skb->len is the captured bytes.
            let skb = socket::skb_of(&p.data);
            let want = cbpf.run(&skb).unwrap();
            let got = ebpf.run(&skb).unwrap();
            if got != want {
                failures.push(format!("{name} packet {i} (captured): cbpf {want}, ebpf {got}"));
            }
            accepted += usize::from(want != 0);
            pairs += 1;
            if let Some(kernel) = kernel.as_mut() {
                match kernel.eval(&skb).unwrap() {
                    SocketOutcome::NotObservable(why) => {
                        assert!(why.starts_with("the filter reads"), "{name} packet {i}: {why}");
                        unobservable += 1;
                    }
                    k if k.agrees_with(want) => kernel_pairs += 1,
                    k => failures.push(format!("{name} packet {i} (captured): cbpf {want}, kernel {k}")),
                }
            }
            // --len wire: skb->len is the wire length, the bytes are those captured.
            let mut skb = socket::skb_of(&p.data);
            skb.wire_len = Some(p.wire_len);
            let (want, got) = (cbpf.run(&skb).unwrap(), ebpf.run(&skb).unwrap());
            if got != want {
                failures.push(format!("{name} packet {i} (wire {}): cbpf {want}, ebpf {got}", p.wire_len));
            }
            wire_pairs += 1;
        }
    }
    eprintln!(
        "{} programs x {} packets: captured length: {pairs} cbpf == ebpf ({accepted} accepted), \
         {kernel_pairs} == kernel, {unobservable} not observable by the kernel; wire length: {wire_pairs} cbpf == ebpf",
        programs.len(),
        packets.len()
    );
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    if kernel_ok {
        assert_eq!(kernel_pairs + unobservable, pairs);
    }
    assert!(accepted > 0 && accepted < pairs, "the filters should accept some packets and drop others");
}
