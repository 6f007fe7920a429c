#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! `kernel::bpf` against the running kernel: loads through the verifier,
//! refusals with the verifier's reason, and what `BPF_PROG_TEST_RUN`
//! hands back for each program type. Without the privilege to load
//! programs each test says so through `test_data::require` (a visible skip,
//! a failure under `CI=true`: CI runs as root).

use ebpf::Insn;
use kernel::bpf::{available, BpfError, Prog, ProgType, TestRun};
use test_data::require::{self, Need};

/// `Some(())` when programs can be loaded here; otherwise
/// `require::have`'s skip (or failure) and `None`.
fn bpf_here(test: &str) -> Option<()> {
    require::have(test, Need::Bpf, available())
}

const EXIT: Insn = Insn { code: 0x95, regs: 0, off: 0, imm: 0 };

fn mov64_imm(dst: u8, imm: i32) -> Insn {
    Insn::new(0xb7, dst, 0, 0, imm)
}

#[test]
fn an_xdp_program_runs_and_returns_every_32_bit_value() {
    let Some(()) = bpf_here("an_xdp_program_runs_and_returns_every_32_bit_value") else { return };
    // The converted seccomp programs return any 32-bit value (actions with
    // data); the XDP test run must hand it back unchanged. `r0 = imm` sign-
    // extends, so 0x8000_0000 and up are also r0 values above 32 bits.
    for value in [0u32, 2, 0x7fff_0000, 0x8000_0000, 0x0005_0001, u32::MAX] {
        let prog = Prog::load(ProgType::Xdp, &[Insn::new(0xb4, 0, 0, 0, value as i32), EXIT])
            .unwrap_or_else(|e| panic!("{value:#x}: {e}"));
        let out = prog.test_run(&TestRun { data: &[0u8; 64], ctx: None, repeat: 1 }).unwrap();
        assert_eq!(out.retval, value);
        assert_eq!(prog.retval(&[0u8; 64]).unwrap(), value);
        assert_eq!(out.data, vec![0u8; 64], "the packet comes back as it went in");
    }
}

#[test]
fn repeat_gives_a_mean_duration() {
    let Some(()) = bpf_here("repeat_gives_a_mean_duration") else { return };
    let prog = Prog::load(ProgType::Xdp, &[mov64_imm(0, 2), EXIT]).unwrap();
    let out = prog.test_run(&TestRun { data: &[0u8; 64], ctx: None, repeat: 100_000 }).unwrap();
    assert_eq!(out.retval, 2);
    // The mean of a two-instruction JIT'ed program is a few ns; a second
    // per run would mean the duration is not per run.
    assert!(out.duration_ns < 1_000_000, "{} ns", out.duration_ns);
}

#[test]
fn an_xdp_program_sees_the_packet_and_writes_it_back() {
    let Some(()) = bpf_here("an_xdp_program_sees_the_packet_and_writes_it_back") else { return };
    // r2 = data; r3 = data_end; r4 = r2 + 64; if r4 > r3 goto drop;
    // r0 = *(u8 *)(r2 + 5); *(u8 *)(r2 + 6) = r0; exit; drop: r0 = 1; exit
    let prog = [
        Insn::new(0x61, 2, 1, 0, 0),
        Insn::new(0x61, 3, 1, 4, 0),
        Insn::new(0xbf, 4, 2, 0, 0),
        Insn::new(0x07, 4, 0, 0, 64),
        Insn::new(0x2d, 4, 3, 3, 0),
        Insn::new(0x71, 0, 2, 5, 0),
        Insn::new(0x73, 2, 0, 6, 0),
        EXIT,
        mov64_imm(0, 1),
        EXIT,
    ];
    let prog = Prog::load(ProgType::Xdp, &prog).unwrap();
    let mut packet = [0u8; 64];
    packet[5] = 0xab;
    let out = prog.test_run(&TestRun { data: &packet, ctx: None, repeat: 1 }).unwrap();
    assert_eq!(out.retval, 0xab);
    assert_eq!(out.data[6], 0xab);
    assert_eq!(prog.retval(&[0u8; 63]).unwrap(), 1, "63 bytes fail the bounds check");
}

#[test]
fn a_socket_program_starts_at_the_network_header() {
    let Some(()) = bpf_here("a_socket_program_starts_at_the_network_header") else { return };
    // r0 = skb->len (offsetof(struct __sk_buff, len) == 0); exit
    let prog = Prog::load(ProgType::SocketFilter, &[Insn::new(0x61, 0, 1, 0, 0), EXIT]).unwrap();
    // bpf_prog_test_run_skb() runs eth_type_trans(), which pulls the
    // 14-byte Ethernet header: a socket filter sees the rest.
    assert_eq!(prog.retval(&[0u8; 64]).unwrap(), 50);
    // A tc classifier sees the whole frame.
    let tc = Prog::load(ProgType::SchedCls, &[Insn::new(0x61, 0, 1, 0, 0), EXIT]).unwrap();
    assert_eq!(tc.retval(&[0u8; 64]).unwrap(), 64);
}

#[test]
fn a_context_goes_in_and_comes_out() {
    let Some(()) = bpf_here("a_context_goes_in_and_comes_out") else { return };
    // r0 = skb->mark (offset 8); exit. `mark` is one of the fields
    // convert___skb_to_skb() takes from the test run's context.
    let prog = Prog::load(ProgType::SchedCls, &[Insn::new(0x61, 0, 1, 8, 0), EXIT]).unwrap();
    let mut ctx = [0u8; 192]; // sizeof(struct __sk_buff)
    ctx[8..12].copy_from_slice(&0x1234_5678u32.to_ne_bytes());
    let out = prog.test_run(&TestRun { data: &[0u8; 64], ctx: Some(&ctx), repeat: 1 }).unwrap();
    assert_eq!(out.retval, 0x1234_5678);
    assert_eq!(out.ctx.len(), 192);
}

#[test]
fn refusals_carry_the_verifiers_reason() {
    let Some(()) = bpf_here("refusals_carry_the_verifiers_reason") else { return };
    // The three things that stop a kernel-exact conversion from loading
    // (issue 25), each refused with the verifier's own words.
    let cases: [(&[Insn], &str); 3] = [
        // w0 ^= w0 reads r0 before anything wrote it (check_reg_arg()).
        (&[Insn::new(0xac, 0, 0, 0, 0), EXIT], "R0 !read_ok"),
        // w0 += 1 with src = r7: an ALU-K instruction with a reserved field set.
        (&[mov64_imm(0, 0), Insn::new(0x04, 0, 7, 0, 1), EXIT], "BPF_ALU uses reserved fields"),
        // check_cfg() refuses what no path reaches.
        (&[mov64_imm(0, 0), EXIT, mov64_imm(0, 1), EXIT], "unreachable insn 2"),
    ];
    for (insns, reason) in cases {
        match Prog::load(ProgType::Xdp, insns) {
            Err(e @ BpfError::Rejected { .. }) => {
                assert_eq!(e.reason(), Some(reason), "{e}");
                assert!(e.to_string().contains(reason), "{e}");
            }
            other => panic!("expected a refusal ({reason}), got {other:?}"),
        }
    }
}

#[test]
fn a_test_run_the_kernel_refuses_is_an_error() {
    let Some(()) = bpf_here("a_test_run_the_kernel_refuses_is_an_error") else { return };
    let prog = Prog::load(ProgType::Xdp, &[mov64_imm(0, 2), EXIT]).unwrap();
    // bpf_test_init() refuses packets shorter than ETH_HLEN.
    assert!(matches!(
        prog.test_run(&TestRun { data: &[0u8; 13], ctx: None, repeat: 1 }),
        Err(BpfError::TestRun { errno: libc::EINVAL, .. })
    ));
}

mod memory {
    use super::*;
    use kernel::bpf::memory::{harness, Args, MemoryProg, END_PRELUDE, MAX_MEMORY};

    fn lddw(dst: u8, imm: u64) -> [Insn; 2] {
        [Insn::new(0x18, dst, 0, 0, imm as u32 as i32), Insn::new(0, 0, 0, 0, (imm >> 32) as u32 as i32)]
    }

    #[test]
    fn the_whole_64_bit_r0_comes_out() {
        let Some(()) = bpf_here("memory::the_whole_64_bit_r0_comes_out") else { return };
        for value in [0u64, 1, 0xffff_ffff, 0x1_0000_0000, 0x8877_6655_4433_2211, u64::MAX, 0xffff_ffff_0000_0000] {
            let [a, b] = lddw(0, value);
            let prog = MemoryProg::load(&[a, b, EXIT], 0).unwrap_or_else(|e| panic!("{value:#x}: {e}"));
            assert_eq!(prog.run(&mut []).unwrap().r0, value);
        }
    }

    #[test]
    fn r1_is_the_memory_and_r2_its_length() {
        let Some(()) = bpf_here("memory::r1_is_the_memory_and_r2_its_length") else { return };
        // r0 = *(u64 *)(r1 + 0); r0 += r2; *(u8 *)(r1 + 8) = 0x5a; exit
        let prog = [Insn::new(0x79, 0, 1, 0, 0), Insn::new(0x0f, 0, 2, 0, 0), Insn::new(0x72, 1, 0, 8, 0x5a), EXIT];
        let mut mem: Vec<u8> = (1..=9).collect();
        let loaded = MemoryProg::load(&prog, mem.len()).unwrap();
        let out = loaded.run(&mut mem).unwrap();
        assert_eq!(out.r0, 0x0807_0605_0403_0201 + 9);
        assert_eq!(mem, [1, 2, 3, 4, 5, 6, 7, 8, 0x5a], "the store comes back");
        // A program verified for 9 bytes does not run on 8.
        assert!(matches!(loaded.run(&mut [0; 8]), Err(BpfError::MemoryLength { len: 8, expected: 9 })));
    }

    #[test]
    fn the_verifier_holds_the_program_to_its_memory() {
        let Some(()) = bpf_here("memory::the_verifier_holds_the_program_to_its_memory") else { return };
        // r0 = *(u8 *)(r1 + 9): one past 9 bytes of memory, the first byte of the slot.
        let past = [Insn::new(0x71, 0, 1, 9, 0), EXIT];
        let e = MemoryProg::load(&past, 9).unwrap_err();
        assert_eq!(e.reason(), Some("R1 offset is outside of the packet"), "{e}");
        assert!(e.to_string().contains("invalid access to packet, off=9 size=1"), "{e}");
        assert!(MemoryProg::load(&past, 10).is_ok());
        // r3 is not an argument.
        let e = MemoryProg::load(&[Insn::new(0xbf, 0, 3, 0, 0), EXIT], 0).unwrap_err();
        assert_eq!(e.reason(), Some("R3 !read_ok"), "{e}");
    }

    #[test]
    fn the_longest_memory_fits_the_linear_packet() {
        let Some(()) = bpf_here("memory::the_longest_memory_fits_the_linear_packet") else { return };
        // r0 = *(u8 *)(r1 + MAX_MEMORY - 1)
        let last = [Insn::new(0x71, 0, 1, (MAX_MEMORY - 1) as i16, 0), EXIT];
        let mut mem = vec![0u8; MAX_MEMORY];
        mem[MAX_MEMORY - 1] = 0x77;
        assert_eq!(MemoryProg::load(&last, MAX_MEMORY).unwrap().run(&mut mem).unwrap().r0, 0x77);
        assert!(harness(&last, MAX_MEMORY + 1, Args::Conformance).is_err());
        // The limit is the test run's: with 8 bytes of metadata in front
        // (the harness's), an input of one byte more keeps that byte out of
        // the linear data (a page fragment), so data_end stops short.
        let pass = Prog::load(ProgType::Xdp, &[mov64_imm(0, 2), EXIT]).unwrap();
        for (memory, linear) in [(MAX_MEMORY, MAX_MEMORY), (MAX_MEMORY + 1, MAX_MEMORY)] {
            let data = vec![0u8; 8 + memory];
            let mut ctx = [0u8; 24];
            ctx[0..4].copy_from_slice(&8u32.to_ne_bytes());
            ctx[4..8].copy_from_slice(&(data.len() as u32).to_ne_bytes());
            let out = pass.test_run(&TestRun { data: &data, ctx: Some(&ctx), repeat: 1 }).unwrap();
            let data_end = u32::from_ne_bytes(out.ctx[4..8].try_into().unwrap()) as usize;
            assert_eq!(data_end, 8 + linear, "{memory} bytes of memory");
        }
    }

    #[test]
    fn a_program_with_its_own_calls_runs_one_frame_down() {
        let Some(()) = bpf_here("memory::a_program_with_its_own_calls_runs_one_frame_down") else { return };
        // call pc+2; r0 += 1; exit; r0 = 41; *(u64 *)(r10 - 512) = r0; exit
        let prog = [
            Insn::new(0x85, 0, 1, 0, 2),
            Insn::new(0x07, 0, 0, 0, 1),
            EXIT,
            mov64_imm(0, 41),
            Insn::new(0x7b, 10, 0, -512, 0),
            EXIT,
        ];
        assert_eq!(MemoryProg::load(&prog, 0).unwrap().run(&mut []).unwrap().r0, 42);
    }

    /// `Args::WithEnd`: a register offset behind the program's own check
    /// against r3 (refused without the check), the answer our interpreter
    /// gives behind `END_PRELUDE`.
    #[test]
    fn with_the_end_a_program_bounds_checks_a_register_offset() {
        let Some(()) = bpf_here("memory::with_the_end_a_program_bounds_checks_a_register_offset") else { return };
        // r0 = 0; r4 = *(u8 *)(r1 + 0) (the index); r5 = r1; r5 += r4;
        // r4 = r5; r4 += 2; if r4 > r3 goto out; r0 = *(u16 *)(r5 + 0); out: exit
        let checked = [
            mov64_imm(0, 0),
            Insn::new(0x71, 4, 1, 0, 0),
            Insn::new(0xbf, 5, 1, 0, 0),
            Insn::new(0x0f, 5, 4, 0, 0),
            Insn::new(0xbf, 4, 5, 0, 0),
            Insn::new(0x07, 4, 0, 0, 2),
            Insn::new(0x2d, 4, 3, 1, 0),
            Insn::new(0x69, 0, 5, 0, 0),
            EXIT,
        ];
        let prog = MemoryProg::load_with(&checked, 16, Args::WithEnd).unwrap();
        let ours = ebpf::Program::load(
            &[&END_PRELUDE[..], &checked[..]].concat(),
            &ebpf::LoadOptions::default(),
            &ebpf::Helpers::new(),
        )
        .unwrap();
        for index in 0..=17u8 {
            let mut mem: Vec<u8> = (1..=16).collect();
            mem[0] = index;
            let kernel = prog.run(&mut mem.clone()).unwrap().r0;
            let want = ebpf::Vm::new().run(&ours, ebpf::Input::Memory(&mut mem)).unwrap();
            assert_eq!(kernel, want, "index {index}");
            assert_eq!(kernel == 0, index >= 15, "index {index}: {kernel:#x}");
        }
        // Without r3 = data_end the same program reads an uninitialised r3.
        let e = MemoryProg::load(&checked, 16).unwrap_err();
        assert_eq!(e.reason(), Some("R3 !read_ok"), "{e}");
        // Memory under ETH_HLEN is padded by the test run: no end to give.
        assert!(matches!(
            MemoryProg::load_with(&checked, 13, Args::WithEnd),
            Err(BpfError::MemoryTooShort { len: 13, min: 14 })
        ));
    }
}
