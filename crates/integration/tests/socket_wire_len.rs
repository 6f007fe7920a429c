#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Issue 17 item 2: the eBPF engine gives the cbpf engine's result on every
//! packet whose capture was cut short, with `ld len` reading the wire
//! length (`--len wire`) and reading the captured bytes (`--len captured`).

use engine::{EngineKind, Prepared, SocketEngine};
use test_kit::{socket, SplitMix64};

#[test]
fn ebpf_equals_cbpf_with_wire_and_captured_lengths() {
    let (mut runs, mut cut_short, mut failures) = (0usize, 0usize, Vec::new());
    for (name, insns) in socket::socket_filters().unwrap() {
        let Ok(program) = cbpf::validate(&insns, cbpf::Mode::Socket) else { continue };
        // The conversion-rejected filetests have no eBPF form to compare.
        let Ok(prepared) = Prepared::new(program) else { continue };
        let mut cbpf = SocketEngine::new(EngineKind::Cbpf, &prepared).unwrap();
        let mut ebpf = SocketEngine::new(EngineKind::Ebpf, &prepared).unwrap();
        for (shape, frame) in socket::packets() {
            for captured in socket::capture_lengths(frame.len()) {
                let data = &frame[..captured];
                for wire in [None, Some(frame.len() as u32), Some(frame.len() as u32 + 1000)] {
                    let mut skb = socket::skb_of(data);
                    skb.wire_len = wire;
                    let want = cbpf.run(&skb).unwrap();
                    let got = ebpf.run(&skb).unwrap();
                    runs += 1;
                    cut_short += usize::from(wire.is_some_and(|w| w as usize > captured));
                    if want != got {
                        failures.push(format!(
                            "{name} on {shape}[..{captured}] wire={wire:?}: cbpf {want:?}, ebpf {got:?}"
                        ));
                    }
                }
            }
        }
    }
    assert!(cut_short > 1000, "only {cut_short} runs with wire > captured");
    assert!(failures.is_empty(), "{} of {runs} runs differ:\n{}", failures.len(), failures.join("\n"));
}

/// `ld len` reads the wire length and a load past the capture drops the
/// packet, as libpcap's `bpf_filter()` does.
#[test]
fn wire_length_is_what_ld_len_reads_and_loads_past_the_capture_fail() {
    let ld_len = cbpf::validate(&[cbpf::Insn::stmt(0x80, 0), cbpf::Insn::stmt(0x16, 0)], cbpf::Mode::Socket).unwrap();
    let past = cbpf::validate(&[cbpf::Insn::stmt(0x20, 40), cbpf::Insn::stmt(0x06, 9)], cbpf::Mode::Socket).unwrap();
    let data = [0u8; 42];
    let mut skb = socket::skb_of(&data[..20]);
    skb.wire_len = Some(1500);
    for kind in [EngineKind::Cbpf, EngineKind::Ebpf] {
        let p = Prepared::new(ld_len.clone()).unwrap();
        assert_eq!(SocketEngine::new(kind, &p).unwrap().run(&skb).unwrap(), 1500, "{kind}");
        let p = Prepared::new(past.clone()).unwrap();
        assert_eq!(SocketEngine::new(kind, &p).unwrap().run(&skb).unwrap(), 0, "{kind}");
    }
}

/// The same over seeded random programs (every load kind, ALU op and jump
/// shape; the generator of the kernel-engine suite).
#[test]
fn ebpf_equals_cbpf_on_generated_programs_with_cut_captures() {
    let mut rng = SplitMix64::new(0x5eed_0002);
    let (mut runs, mut failures) = (0usize, Vec::new());
    let frames = socket::packets();
    for n in 0..600 {
        let insns = socket::random_program(&mut rng, 24);
        let Ok(program) = cbpf::validate(&insns, cbpf::Mode::Socket) else { continue };
        let Ok(prepared) = Prepared::new(program) else { continue };
        let mut cbpf = SocketEngine::new(EngineKind::Cbpf, &prepared).unwrap();
        let mut ebpf = SocketEngine::new(EngineKind::Ebpf, &prepared).unwrap();
        for (shape, frame) in &frames {
            for captured in [frame.len().min(14), frame.len().min(38), frame.len()] {
                for wire in [None, Some(frame.len() as u32), Some(9000)] {
                    let mut skb = socket::skb_of(&frame[..captured]);
                    skb.wire_len = wire;
                    let (want, got) = (cbpf.run(&skb).unwrap(), ebpf.run(&skb).unwrap());
                    runs += 1;
                    if want != got {
                        failures.push(format!(
                            "program {n} {insns:?} on {shape}[..{captured}] wire={wire:?}: cbpf {want}, ebpf {got}"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(runs > 10_000, "{runs}");
}
