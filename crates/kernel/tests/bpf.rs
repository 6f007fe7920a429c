#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! `kernel::bpf` against the running kernel: loads through the verifier,
//! refusals with the verifier's reason, and what `BPF_PROG_TEST_RUN`
//! hands back for each program type. Without the privilege to load
//! programs each test says so through `test_data::require` (a visible skip,
//! a failure under `CI=true`: CI runs as root).

use ebpf::Insn;
use kernel::bpf::{
    available, max_packet, skb_ctx, test_run_refuses, test_run_skb, BpfError, Prog, ProgType, TestRun, MAX_INSNS,
    MIN_PACKET,
};
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

/// A program's length is checked before the kernel sees it: one past
/// `MAX_INSNS` is refused here, `MAX_INSNS` goes to the verifier (which
/// refuses these, an invalid `ld_imm` first).
#[test]
fn the_length_limit_is_exact() {
    let zeros = |n: usize| vec![Insn::new(0, 0, 0, 0, 0); n];
    assert_eq!(
        Prog::load(ProgType::Xdp, &zeros(MAX_INSNS + 1)).unwrap_err(),
        BpfError::TooLong { len: MAX_INSNS + 1, max: MAX_INSNS }
    );
    let Some(()) = bpf_here("the_length_limit_is_exact") else { return };
    assert!(matches!(Prog::load(ProgType::Xdp, &zeros(MAX_INSNS)), Err(BpfError::Rejected { len: MAX_INSNS, .. })));
    let prog = Prog::load(ProgType::SchedCls, &[mov64_imm(0, 2), EXIT]).unwrap();
    assert_eq!((prog.len(), prog.is_empty(), prog.prog_type()), (2, false, ProgType::SchedCls));
}

const PROG_TYPES: [ProgType; 3] = [ProgType::SocketFilter, ProgType::SchedCls, ProgType::Xdp];

/// A frame of `len` bytes: `dest`, a fixed source address, `ethertype`,
/// then each payload byte its own offset (so offsets can be told apart).
fn frame(len: usize, dest: [u8; 6], ethertype: u16) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let head = [dest.as_slice(), &[0x02, 0, 0, 0, 0, 0x01], &ethertype.to_be_bytes()].concat();
    for (to, from) in f.iter_mut().zip(head) {
        *to = from;
    }
    f
}

/// Whether a test run of `prog_type` takes `frame` whole, by the kernel's
/// own answer: the run fails (`EINVAL`), or the program sees fewer bytes
/// (an XDP packet past the linear area goes to fragments).
fn kernel_takes_whole(prog_type: ProgType, frame: &[u8]) -> bool {
    let len = frame.len();
    let insns = match prog_type {
        // r2 = data; r3 = data_end; r2 += len; if r2 > r3 goto short;
        // r0 = 1; exit; short: r0 = 0; exit
        ProgType::Xdp => vec![
            Insn::new(0x61, 2, 1, 0, 0),
            Insn::new(0x61, 3, 1, 4, 0),
            Insn::new(0x07, 2, 0, 0, len as i32),
            Insn::new(0x2d, 2, 3, 2, 0),
            mov64_imm(0, 1),
            EXIT,
            mov64_imm(0, 0),
            EXIT,
        ],
        // r0 = skb->len
        _ => vec![Insn::new(0x61, 0, 1, 0, 0), EXIT],
    };
    let prog = Prog::load(prog_type, &insns).unwrap_or_else(|e| panic!("{prog_type} {len}: {e}"));
    match prog.retval(frame) {
        Err(BpfError::TestRun { errno: libc::EINVAL, .. }) => false,
        Err(e) => panic!("{prog_type} {len}: {e}"),
        Ok(r) => match prog_type {
            ProgType::Xdp => r == 1,
            // A socket filter's packet starts past the Ethernet header.
            ProgType::SocketFilter => r as usize + MIN_PACKET == len,
            ProgType::SchedCls => r as usize == len,
        },
    }
}

/// `test_run_refuses` says what the kernel does: at each bound of the
/// packet's length (`ETH_HLEN`, an IPv4 or IPv6 header past it, the
/// linear area) for each program type and EtherType.
#[test]
fn test_run_refusals_are_the_kernels() {
    let Some(()) = bpf_here("test_run_refusals_are_the_kernels") else { return };
    for prog_type in PROG_TYPES {
        let max = max_packet(prog_type);
        for len in [0, 1, 13, 14, 15, 33, 34, 35, 53, 54, 55, 64, max - 1, max, max + 1] {
            for ethertype in [0x0800u16, 0x86dd, 0x0806] {
                let f = frame(len, [0; 6], ethertype);
                let refused = test_run_refuses(prog_type, &f);
                assert_eq!(
                    refused.is_none(),
                    kernel_takes_whole(prog_type, &f),
                    "{prog_type}, {len} bytes, EtherType {ethertype:#06x}: {refused:?}"
                );
            }
        }
    }
}

/// `struct __sk_buff` offsets (include/uapi/linux/bpf.h).
const SKB_FIELDS: [(&str, i16); 8] = [
    ("pkt_type", 4),
    ("mark", 8),
    ("queue_mapping", 12),
    ("protocol", 16),
    ("vlan_tci", 24),
    ("vlan_proto", 28),
    ("ifindex", 40),
    ("hash", 68),
];

/// What `test_run_skb` says a field of `struct __sk_buff` holds, as the
/// kernel's context load gives it (`protocol` and `vlan_proto` in network
/// byte order).
fn modelled(skb: &cbpf::Skb<'_>, field: &str) -> u32 {
    match field {
        "pkt_type" => u32::from(skb.pkt_type),
        "mark" => skb.mark,
        "queue_mapping" => u32::from(skb.queue_mapping),
        "protocol" => u32::from(skb.protocol.to_be()),
        "vlan_tci" => u32::from(skb.vlan_tci),
        "vlan_proto" => u32::from(skb.vlan_proto.to_be()),
        "ifindex" => skb.dev.map_or(0, |d| d.ifindex as u32),
        "hash" => skb.rxhash,
        _ => unreachable!("{field}"),
    }
}

/// `test_run_skb` is the `sk_buff` a socket or tc test run builds: each
/// field a program reads, and the bytes at the network and MAC headers
/// (`ld_abs` at `SKF_NET_OFF` and `SKF_LL_OFF`), for destinations of each
/// packet type, EtherTypes on both sides of `ETH_P_802_3_MIN` (with and
/// without the IPX-style 0xFFFF payload) and two marks.
#[test]
fn the_test_run_skb_is_the_kernels() {
    let Some(()) = bpf_here("the_test_run_skb_is_the_kernels") else { return };
    let dests =
        [[0; 6], [0xff; 6], [0x01, 0x00, 0x5e, 0, 0, 1], [0x02, 0, 0, 0, 0, 9], [0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]];
    let mut frames = Vec::new();
    for dest in dests {
        for ethertype in [0x0800u16, 0x86dd, 0x0806, 0x0600, 0x05ff, 0x0042] {
            frames.push(frame(80, dest, ethertype));
        }
    }
    // 802.3 with an IPX-style payload: 0xFFFF right after the header.
    let mut ipx = frame(80, [0x02, 0, 0, 0, 0, 9], 0x0100);
    ipx[14..16].copy_from_slice(&[0xff, 0xff]);
    frames.push(ipx);
    for prog_type in [ProgType::SocketFilter, ProgType::SchedCls] {
        let fields: Vec<(&str, Prog)> = SKB_FIELDS
            .iter()
            .map(|&(name, off)| {
                let prog = Prog::load(prog_type, &[Insn::new(0x61, 0, 1, off, 0), EXIT]);
                (name, prog.unwrap_or_else(|e| panic!("{prog_type} {name}: {e}")))
            })
            .collect();
        // r6 = r1; r0 = *(u8 *)skb[k] (ld_abs); exit
        let byte_at =
            |k: u32| Prog::load(prog_type, &[Insn::new(0xbf, 6, 1, 0, 0), Insn::new(0x30, 0, 0, 0, k as i32), EXIT]);
        let net = byte_at(cbpf::opcode::SKF_NET_OFF).unwrap();
        let mac = byte_at(cbpf::opcode::SKF_LL_OFF).unwrap();
        for (i, f) in frames.iter().enumerate() {
            assert_eq!(test_run_refuses(prog_type, f), None, "frame {i}");
            for mark in [0, 0xdead_beef] {
                let skb = test_run_skb(f, mark);
                let ctx = skb_ctx(mark);
                for (name, prog) in &fields {
                    let out = prog.test_run(&TestRun { data: f, ctx: Some(&ctx), repeat: 1 }).unwrap();
                    assert_eq!(out.retval, modelled(&skb, name), "{prog_type} frame {i} mark {mark:#x}: {name}");
                }
                let at = |offset: Option<usize>| offset.and_then(|o| f.get(o)).map(|&b| u32::from(b));
                assert_eq!(Some(net.retval(f).unwrap()), at(Some(skb.network_offset)), "{prog_type} frame {i}");
                assert_eq!(Some(mac.retval(f).unwrap()), at(skb.mac_offset), "{prog_type} frame {i}");
            }
        }
    }
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
        assert_eq!(loaded.mem_len(), 9);
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
