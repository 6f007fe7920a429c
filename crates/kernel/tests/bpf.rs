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
