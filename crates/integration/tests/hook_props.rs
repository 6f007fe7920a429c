#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The hook code generator without a kernel: generated valid socket
//! filters (`test_kit::gen`) as fragments ([`hook::Fragment`]) spliced
//! behind a prologue that makes the packet's start and end pointers, run
//! by our eBPF interpreter with the packet as its memory, against the
//! classic interpreter on every branch-reaching and random packet. Our
//! interpreter checks every access against the packet's bounds, so a guard
//! that lets a load through past the end is a failure here, not a wrong
//! answer. (The kernel judges the whole programs: `hook_capture.rs`,
//! `cargo xtask fuzz-kernel --mode hook`.)

use arbitrary::Unstructured;
use ebpf::filter_h::{alu64_reg, exit_insn, mov64_reg};
use ebpf::op::AluOp;
use hook::{Fragment, HookError};
use test_kit::{branch, gen};

const PROGRAMS: u64 = 3000;

#[test]
fn fragments_agree_with_the_classic_interpreter() {
    // A = r0, X = r7, packet in r8..r9, scratch r2 and r3, M[] at fp-64.
    let fragment = Fragment { start: 8, end: 9, result: 0, x: 7, scratch: [2, 3], stack_offset: -64 };
    let (mut programs, mut refused, mut runs) = (0, 0, 0);
    let mut failures = Vec::new();
    for seed in 0..PROGRAMS {
        let bytes = gen::seeded_bytes(seed, &gen::Reach::FUZZ);
        let mut u = Unstructured::new(&bytes);
        let Ok(gen::Generated { program, mut pool }) = gen::program_with(&mut u, cbpf::Mode::Socket, &gen::Reach::FUZZ)
        else {
            continue;
        };
        let body = match fragment.emit(&program) {
            Ok(b) => b,
            Err(HookError::NotInFragment { .. }) => {
                refused += 1;
                continue;
            }
            Err(e) => panic!("seed {seed}: {e}"),
        };
        programs += 1;
        // r8 = r1 (the packet); r9 = r1 + r2 (its end); the fragment; exit.
        let mut insns = vec![mov64_reg(8, 1), mov64_reg(9, 1), alu64_reg(AluOp::Add, 9, 2)];
        insns.extend(body);
        insns.push(exit_insn());
        let prog = ebpf::Program::load(&insns, &ebpf::LoadOptions::default(), &ebpf::Helpers::new())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let mut vm = ebpf::Vm::new();
        let interp = cbpf::Interp::new(&program);
        let mut packets: Vec<Vec<u8>> = branch::branch_packets(&program).into_iter().map(|p| p.data).collect();
        for _ in 0..4 {
            if let Ok(p) = gen::packet(&mut u, &mut pool) {
                packets.push(p.data);
            }
        }
        for data in packets {
            let want = interp.run_socket(&hook::ancillary::xdp_skb(&data, 1, 0)).unwrap();
            let mut memory = data.clone();
            match vm.run(&prog, ebpf::Input::Memory(&mut memory)) {
                Ok(got) if got as u32 == want && got >> 32 == 0 => {}
                other => failures.push(format!("seed {seed} packet {data:02x?}: cbpf {want}, fragment {other:?}")),
            }
            runs += 1;
        }
    }
    eprintln!("{programs} fragments ({refused} refused: context or helper loads), {runs} runs");
    assert!(programs > PROGRAMS / 2, "{programs}");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(20)].join("\n"));
}

#[test]
fn fragment_registers_are_checked() {
    let program = cbpf::validate(&[cbpf::Insn::stmt(0x06, 1)], cbpf::Mode::Socket).unwrap();
    let ok = Fragment { start: 8, end: 9, result: 0, x: 7, scratch: [2, 3], stack_offset: -64 };
    assert!(ok.emit(&program).is_ok());
    for bad in [
        Fragment { scratch: [2, 2], ..ok },
        Fragment { result: 10, ..ok },
        Fragment { stack_offset: -60, ..ok },
        Fragment { stack_offset: -520, ..ok },
    ] {
        assert!(matches!(bad.emit(&program), Err(HookError::BadFragment(_))), "{bad:?}");
    }
}

/// FORMATS-EXTENSIONS.md's table of ancillary loads per hook says what
/// `hook::ancillary` does (its own docs' copy is checked in the crate).
#[test]
fn the_users_ancillary_table_is_the_code() {
    let doc = include_str!("../../../FORMATS-EXTENSIONS.md");
    let section = doc.split("## Hook targets").nth(1).expect("a Hook targets section");
    for a in hook::Ancillary::all() {
        let row = section
            .lines()
            .find(|l| l.starts_with("| `SKF_AD") && l.contains(&format!("`{}`", a.name())))
            .unwrap_or_else(|| panic!("no row for {a}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        for (target, cell) in
            [(hook::Target::Xdp, cells[2]), (hook::Target::Tc, cells[3]), (hook::Target::Socket, cells[4])]
        {
            assert_eq!(a.source(target).is_some(), cell != "—", "{a} in {target}: `{cell}`");
        }
    }
}
