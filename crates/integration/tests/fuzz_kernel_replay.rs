#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Every `cargo xtask fuzz-kernel` reproducer saved under
//! `testdata/fuzz-kernel/` (see its README): our answer today equals the
//! kernel's recorded answer, or the file documents a kernel bug (naming the
//! kernel function) and our answer is still the one recorded. The folder is
//! empty while no disagreement has been found (issue 17's runs found none):
//! its README says so, and the replay checks the README and the folder
//! agree, so an emptied folder cannot pass unnoticed; the judge itself is
//! checked on hand-made reproducers below.

use std::path::PathBuf;

use bpfconv_integration::fuzz_kernel::{self, Input, Reproducer, Tally};
use cbpf::{Insn, Mode};
use test_data::require::{self, Need};

mod common;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fuzz-kernel")
}

#[test]
fn every_saved_reproducer_replays() {
    let names = common::files_with_extension(&dir(), "json");
    for path in &names {
        let text = std::fs::read_to_string(path).unwrap();
        let repro: Reproducer =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not a reproducer: {e}", path.display()));
        assert!(!repro.kernel_release.is_empty(), "{}: no kernel release", path.display());
        match (repro.replay(), &repro.kernel_bug) {
            (Ok(_), None) => {}
            (Ok(ours), Some(bug)) => panic!(
                "{}: documented as a kernel bug ({bug}) but we now answer {ours}, the kernel's answer",
                path.display()
            ),
            (Err(ours), Some(bug)) => {
                assert!(bug.contains("()"), "{}: the kernel finding must name the kernel function", path.display());
                assert_eq!(ours, repro.ours, "{}: our answer changed since the finding", path.display());
            }
            (Err(ours), None) => panic!(
                "{}: we answer {ours}, the kernel answered {} (kernel {})",
                path.display(),
                repro.kernel,
                repro.kernel_release
            ),
        }
    }
    // An empty folder replays nothing: that is right only while the README
    // says no reproducer is committed, and wrong once one was.
    let readme = std::fs::read_to_string(dir().join("README.md")).unwrap();
    let says_none = readme.contains("No reproducer is committed yet");
    assert_eq!(
        names.is_empty(),
        says_none,
        "testdata/fuzz-kernel holds {} reproducers but its README {} \"No reproducer is committed yet\"",
        names.len(),
        if says_none { "says" } else { "no longer says" }
    );
    if names.is_empty() {
        eprintln!("0 reproducers replayed: none committed yet (testdata/fuzz-kernel/README.md)");
    } else {
        eprintln!("{} reproducers replayed", names.len());
    }
}

fn reproducer(mode: &str, kind: &str, insns: &[Insn], input: Option<String>, ours: &str, kernel: &str) -> Reproducer {
    Reproducer {
        mode: mode.into(),
        kind: kind.into(),
        program: Reproducer::program_lines(insns),
        asm: String::new(),
        input,
        ours: ours.into(),
        kernel: kernel.into(),
        kernel_release: "test".into(),
        found_by: "hand-made".into(),
        kernel_bug: None,
    }
}

/// The replay tells agreement from disagreement in each kind and mode.
#[test]
fn replay_judges_hand_made_reproducers() {
    let ret_a = [Insn::stmt(0x80, 0), Insn::stmt(0x16, 0)]; // ld len; ret a
    let packet = Input::Packet(vec![1, 2, 3, 4, 5]).hex();
    // Socket: the filter returns 5 on a 5-byte datagram, kept whole.
    assert!(reproducer("socket", "run", &ret_a, Some(packet.clone()), "5", ">=5").replay().is_ok());
    assert!(reproducer("socket", "run", &ret_a, Some(packet.clone()), "5", "0").replay().is_err());
    assert!(reproducer("socket", "run", &ret_a, Some(packet), "5", "3").replay().is_err());
    // Seccomp: `ld [0]; ret a` returns nr.
    let ret_nr = [Insn::stmt(0x20, 0), Insn::stmt(0x16, 0)];
    let data = Input::Seccomp(cbpf::SeccompData::new(0xc000_003e, 7)).hex();
    assert_eq!(
        reproducer("seccomp", "run", &ret_nr, Some(data.clone()), "", "0x00000007").replay(),
        Ok("0x00000007".into())
    );
    assert!(reproducer("seccomp", "run", &ret_nr, Some(data), "", "0x00000008").replay().is_err());
    // Attach: `ld [64]` is no seccomp_data word (seccomp_check_filter()).
    let bad = [Insn::stmt(0x20, 64), Insn::stmt(0x16, 0)];
    assert!(reproducer("seccomp", "attach", &bad, None, "", "rejected: errno 22 (Invalid argument)").replay().is_ok());
    assert!(reproducer("seccomp", "attach", &bad, None, "", "accepted").replay().is_err());
    assert!(reproducer("socket", "attach", &bad, None, "", "accepted").replay().is_ok());
}

/// On this kernel (`test_data::require` where it refuses to attach): the judge
/// finds programs and results equal on a few fixed cases, and an attach
/// refusal on both sides is an agreement, not a disagreement.
#[test]
fn the_judge_agrees_with_the_kernel_on_fixed_cases() {
    for mode in [Mode::Seccomp, Mode::Socket] {
        let need = if mode == Mode::Seccomp { Need::Kernel } else { Need::Socket };
        if require::have("the_judge_agrees_with_the_kernel_on_fixed_cases", need, fuzz_kernel::available(mode))
            .is_none()
        {
            continue;
        }
        let mut tally = Tally::default();
        let inputs: Vec<Input> = match mode {
            Mode::Seccomp => (0..4).map(|nr| Input::Seccomp(cbpf::SeccompData::new(0xc000_003e, nr))).collect(),
            _ => (0..4).map(|n| Input::Packet(vec![0xab; n * 7])).collect(),
        };
        // ld len (seccomp: 64) / nr ... ret a, and a program both refuse.
        let good = [Insn::stmt(0x80, 0), Insn::stmt(0x16, 0)];
        let refused = [Insn::jump(0x15, 0, 3, 0), Insn::stmt(0x06, 0)];
        assert!(fuzz_kernel::judge(&good, mode, &inputs, &mut tally).unwrap().is_empty(), "{mode}");
        assert!(fuzz_kernel::judge(&refused, mode, &inputs, &mut tally).unwrap().is_empty(), "{mode}");
        assert_eq!(
            (tally.programs, tally.accepted, tally.refused, tally.disagreements),
            (2, 1, 1, 0),
            "{mode}: {tally:?}"
        );
        assert_eq!(tally.inputs + tally.not_observable, 4, "{mode}: {tally:?}");
    }
}

/// The minimiser keeps what the predicate needs and drops the rest, with
/// every jump still landing where it did.
#[test]
fn minimiser_drops_what_the_disagreement_does_not_need() {
    // ld len; jeq #5, L_ret_a, L_ret0 ; ld #1 ... padding; tax; ret a; ret #0
    let insns = [
        Insn::stmt(0x00, 7),       // ld #7 (dead)
        Insn::stmt(0x80, 0),       // ld len
        Insn::jump(0x15, 5, 2, 3), // jeq #5 -> pc 5, else pc 6
        Insn::stmt(0x07, 0),       // tax (dead)
        Insn::stmt(0x87, 0),       // txa (dead)
        Insn::stmt(0x16, 0),       // ret a
        Insn::stmt(0x06, 0),       // ret #0
    ];
    let packet = Input::Packet(vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // "Disagreement": the program, still valid, returns 5 on some prefix of the packet.
    let still = |p: &[Insn], input: Option<&Input>| {
        let Ok(program) = fuzz_kernel::our_attach(p, Mode::Socket) else { return false };
        fuzz_kernel::our_run(&program, input.unwrap()) == Ok(5)
    };
    assert!(!still(&insns, Some(&packet)));
    let five = Input::Packet(vec![1, 2, 3, 4, 5, 6, 7]);
    let (small, input) = fuzz_kernel::minimise_with(&insns, Some(&five), 100, still);
    assert!(still(&small, input.as_ref()), "{small:?}");
    assert!(small.len() < insns.len(), "{small:?}");
    assert!(!small.iter().any(|i| i.code == 0x07 || i.code == 0x87), "dead instructions kept: {small:?}");
    assert_eq!(input, Some(Input::Packet(vec![1, 2, 3, 4, 5])));
}
