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

use bpfconv_integration::fuzz_kernel::{self, Input, Origin, Reproducer, Tally};
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
        assert!(!repro.origin.kernel_release.is_empty(), "{}: no kernel release", path.display());
        judge_replay(
            path,
            repro.replay(),
            repro.origin.kernel_bug.as_deref(),
            &repro.ours,
            &repro.kernel,
            &repro.origin.kernel_release,
        );
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

/// A replay's verdict: today's answer is the recorded kernel answer, or
/// the file documents a kernel bug (naming the kernel function) and our
/// answer is still the one recorded.
fn judge_replay(
    path: &std::path::Path,
    replay: Result<String, String>,
    kernel_bug: Option<&str>,
    recorded_ours: &str,
    kernel: &str,
    release: &str,
) {
    match (replay, kernel_bug) {
        (Ok(_), None) => {}
        (Ok(ours), Some(bug)) => {
            panic!(
                "{}: documented as a kernel bug ({bug}) but we now answer {ours}, the kernel's answer",
                path.display()
            )
        }
        (Err(ours), Some(bug)) => {
            assert!(bug.contains("()"), "{}: the kernel finding must name the kernel function", path.display());
            assert_eq!(ours, recorded_ours, "{}: our answer changed since the finding", path.display());
        }
        (Err(ours), None) => {
            panic!("{}: we answer {ours}, the kernel answered {kernel} (kernel {release})", path.display())
        }
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
        origin: Origin { kernel_release: "test".into(), found_by: "hand-made".into(), kernel_bug: None },
    }
}

/// The replay tells agreement from disagreement in each kind and mode.
/// The origin's fields stand beside the others in the JSON (flattened),
/// as reproducers saved before it was a struct of its own have them.
#[test]
fn a_reproducer_keeps_its_json_shape() {
    let mut repro = reproducer("seccomp", "run", &[Insn { code: 0x06, jt: 0, jf: 0, k: 0 }], None, "0x0", "0x1");
    repro.origin.kernel_bug = Some("none".into());
    let json: serde_json::Value = serde_json::to_value(&repro).unwrap();
    let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    for key in ["kernel_release", "found_by", "kernel_bug", "ours", "kernel"] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    assert!(!keys.contains(&"origin"), "{keys:?}");
    assert_eq!(serde_json::from_value::<Reproducer>(json).unwrap(), repro);
}

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

/// `--mode ebpf` (issue 25 item 6): its reproducers live in
/// `testdata/fuzz-kernel/ebpf/` and replay the same way, our interpreter
/// against the recorded kernel answer.
mod ebpf_mode {
    use super::*;
    use bpfconv_integration::fuzz_kernel::ebpf::{self as judge_ebpf, EbpfReproducer, EbpfTally};
    use ebpf::Insn as EInsn;

    fn dir() -> PathBuf {
        super::dir().join("ebpf")
    }

    #[test]
    fn every_saved_ebpf_reproducer_replays() {
        let names = if dir().is_dir() { common::files_with_extension(&dir(), "json") } else { Vec::new() };
        for path in &names {
            let text = std::fs::read_to_string(path).unwrap();
            let repro: EbpfReproducer =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not a reproducer: {e}", path.display()));
            assert_eq!(repro.mode, "ebpf", "{}", path.display());
            assert!(!repro.origin.kernel_release.is_empty(), "{}: no kernel release", path.display());
            let bug = repro.origin.kernel_bug.as_deref();
            judge_replay(path, repro.replay(), bug, &repro.ours, &repro.kernel, &repro.origin.kernel_release);
        }
        eprintln!("{} ebpf reproducers replayed", names.len());
    }

    const EXIT: EInsn = EInsn { code: 0x95, regs: 0, off: 0, imm: 0 };

    /// The replay tells agreement from disagreement, and a program's lines
    /// round-trip.
    #[test]
    fn replay_judges_hand_made_ebpf_reproducers() {
        // r0 = *(u8 *)(r1 + 1); *(u8 *)(r1 + 0) = r0; exit
        let insns = [EInsn::new(0x71, 0, 1, 1, 0), EInsn::new(0x73, 1, 0, 0, 0), EXIT];
        let lines = EbpfReproducer::program_lines(&insns);
        let repro = |kernel: &str| EbpfReproducer {
            mode: "ebpf".into(),
            kind: "run".into(),
            program: lines.clone(),
            asm: String::new(),
            listing: String::new(),
            mem_len: 2,
            data_end: false,
            input: Some("0a0b".into()),
            ours: String::new(),
            kernel: kernel.into(),
            origin: Origin { kernel_release: "test".into(), found_by: "hand-made".into(), kernel_bug: None },
        };
        assert_eq!(repro("").insns().unwrap(), insns);
        assert_eq!(repro("r0 = 0xb; memory = 0b0b").replay(), Ok("r0 = 0xb; memory = 0b0b".into()));
        assert_eq!(repro("r0 = 0xb; memory = 0a0b").replay(), Err("r0 = 0xb; memory = 0b0b".into()));
    }

    /// The minimiser drops every instruction a disagreement does not need
    /// and keeps jumps landing where they did.
    #[test]
    fn ebpf_minimiser_keeps_jumps_and_what_matters() {
        // 0: r0 = 1; 1: r2 = 5; 2: if r2 > 3 goto 5; 3: r0 = 2; 4: exit; 5: r0 += 40; 6: exit
        let insns = [
            EInsn::new(0xb7, 0, 0, 0, 1),
            EInsn::new(0xb7, 2, 0, 0, 5),
            EInsn::new(0x25, 2, 0, 2, 3),
            EInsn::new(0xb7, 0, 0, 0, 2),
            EXIT,
            EInsn::new(0x07, 0, 0, 0, 40),
            EXIT,
        ];
        let r0 = |p: &[EInsn]| {
            let prog = judge_ebpf::our_load(p, kernel::bpf::memory::Args::Conformance).ok()?;
            judge_ebpf::our_run(&prog, &[]).ok().map(|(r0, _)| r0)
        };
        assert_eq!(r0(&insns), Some(41));
        // "Disagreement": r0 is 41 or 40.
        let small = judge_ebpf::minimise_with(&insns, 200, |p| matches!(r0(p), Some(40 | 41)));
        assert_eq!(r0(&small), Some(40), "{small:?}");
        assert_eq!(small.len(), 2, "{}", ebpf::listing::listing(&small));
        // Removing pc 3 shortens the jump over it.
        let without = judge_ebpf::without(&insns, 3).unwrap();
        assert_eq!(without[2], EInsn::new(0x25, 2, 0, 1, 3));
        assert!(judge_ebpf::without(&insns, 6).is_none(), "the last instruction stays");
    }

    /// On this kernel (skipped visibly without the privilege to load XDP
    /// programs): the judge finds equal programs equal, and a real
    /// difference, helper 5 (ours returns r1, the kernel's is
    /// `bpf_ktime_get_ns`), is a disagreement the minimiser cuts to
    /// `call 5; exit`.
    #[test]
    fn the_ebpf_judge_finds_a_difference_and_minimises_it() {
        let test = "the_ebpf_judge_finds_a_difference_and_minimises_it";
        let Some(()) = require::have(test, Need::Bpf, judge_ebpf::available()) else {
            return;
        };
        let mut tally = EbpfTally::default();
        let same = [EInsn::new(0x79, 0, 1, 0, 0), EXIT]; // r0 = *(u64 *)(r1 + 0)
        let inputs = vec![vec![1, 2, 3, 4, 5, 6, 7, 8], vec![0xff; 8]];
        assert!(judge_ebpf::judge(&same, 8, &inputs, &mut tally).unwrap().is_empty());
        let refused = [EInsn::new(0x79, 0, 1, 1, 0), EXIT]; // past 8 bytes
        assert!(judge_ebpf::judge(&refused, 8, &inputs, &mut tally).unwrap().is_empty());
        let helper = [EInsn::new(0xb7, 1, 0, 0, 7), EInsn::new(0xb7, 6, 0, 0, 1), EInsn::new(0x85, 0, 0, 0, 5), EXIT];
        let found = judge_ebpf::judge(&helper, 8, &inputs[..1], &mut tally).unwrap();
        assert_eq!((tally.programs, tally.accepted, tally.inputs, tally.disagreements), (3, 2, 3, 1), "{tally:?}");
        assert_eq!(tally.refused.values().sum::<u64>(), 1);
        let [repro] = &found[..] else { panic!("{found:?}") };
        assert_eq!(repro.kind, "run");
        assert!(repro.ours.starts_with("r0 = 0x7;"), "{}", repro.ours);
        let small = judge_ebpf::minimise(repro, 100).unwrap();
        assert_eq!(small.insns().unwrap(), [EInsn::new(0x85, 0, 0, 0, 5), EXIT], "{}", small.listing);
    }
}
