#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! libseccomp-generated filters (testdata/filters) with kernel-checked test
//! vectors, run on the classic interpreter in seccomp mode.

use cbpf::{validate, Interp, Mode, SeccompData};
use test_data::filters::{self, Source};

mod common;
use common::insn;

fn check_vectors(source: Source) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut count = 0;
    let suffix = source.suffix();
    for name in common::filters() {
        let insns: Vec<_> = filters::insns(&name).unwrap().into_iter().map(insn).collect();
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        for v in filters::vectors(&name, source).unwrap() {
            let data = SeccompData { nr: v.nr, arch: v.arch, instruction_pointer: v.ip, args: v.args };
            let want = v.action.unwrap();
            let got = interp.run_seccomp(&data.to_bytes()).unwrap();
            let traced = interp.trace_seccomp(&data.to_bytes(), |_| {}).unwrap();
            count += 1;
            if got != want || traced != want {
                failures.push(format!(
                    "{name}.{suffix}:{}: nr {} arch {:#x}: got {got:#x} (trace {traced:#x}), want {want:#x}",
                    v.line, data.nr, data.arch
                ));
            }
        }
    }
    (count, failures)
}

#[test]
fn every_kernel_checked_vector_gives_the_expected_action() {
    let (count, failures) = check_vectors(Source::Kernel);
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
    assert!(count > 1000, "only {count} vectors");
}

#[test]
fn every_simulator_checked_vector_gives_the_expected_action() {
    let (count, failures) = check_vectors(Source::Simulator);
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
    assert!(count > 100, "only {count} vectors");
}

#[test]
fn seccomp_data_layout_is_native_endian() {
    let d = SeccompData {
        nr: -1,
        arch: 0xc000_003e,
        instruction_pointer: 0x1122_3344_5566_7788,
        args: [1, 2, 3, 4, 5, 0xaabb_ccdd_0000_0006],
    };
    let b = d.to_bytes();
    assert_eq!(&b[0..4], &(-1i32).to_ne_bytes());
    assert_eq!(&b[4..8], &0xc000_003eu32.to_ne_bytes());
    assert_eq!(&b[8..16], &0x1122_3344_5566_7788u64.to_ne_bytes());
    assert_eq!(&b[16..24], &1u64.to_ne_bytes());
    assert_eq!(&b[56..64], &0xaabb_ccdd_0000_0006u64.to_ne_bytes());
    // Every engine here models a little-endian host (SPEC §5.1).
    assert_eq!(&b[0..4], &[0xff; 4]);
    assert_eq!(&b[4..8], &0xc000_003eu32.to_le_bytes());
    assert_eq!(&b[8..16], &0x1122_3344_5566_7788u64.to_le_bytes());
    assert_eq!(&b[56..64], &0xaabb_ccdd_0000_0006u64.to_le_bytes());
    assert_eq!(SeccompData::from_bytes(&b), d);
    for off in (0..64).step_by(4) {
        let want = u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]]);
        assert_eq!(d.load_word(off as u32), Some(want), "offset {off}");
    }
    assert_eq!(d.load_word(2), None);
    assert_eq!(d.load_word(64), None);
}
