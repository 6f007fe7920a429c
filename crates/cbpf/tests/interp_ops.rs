#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The classic interpreter, opcode group by opcode group, in both contexts.

use cbpf::opcode::*;
use cbpf::{validate, ExecError, Insn, Interp, Mode, NetDevice, SeccompData, Skb};

fn s(code: u16, k: u32) -> Insn {
    Insn::stmt(code, k)
}

fn j(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn::jump(code, k, jt, jf)
}

const RET_ACC: Insn = Insn::stmt(RET_A, 0);

fn interp(insns: &[Insn], mode: Mode) -> Interp {
    Interp::new(&validate(insns, mode).unwrap_or_else(|e| panic!("{e}: {insns:?}")))
}

/// Runs on a packet with the test_bpf skb, checking fast path == trace.
fn on_packet(insns: &[Insn], data: &[u8]) -> u32 {
    on_skb(insns, &Skb::test_bpf(data))
}

fn on_skb(insns: &[Insn], skb: &Skb<'_>) -> u32 {
    let i = interp(insns, Mode::Socket);
    let fast = i.run_socket(skb).unwrap();
    let traced = i.trace_socket(skb, |_| {}).unwrap();
    assert_eq!(fast, traced, "fast path and trace disagree on {insns:?}");
    fast
}

fn on_seccomp(insns: &[Insn], data: &SeccompData) -> u32 {
    let i = interp(insns, Mode::Seccomp);
    let bytes = data.to_bytes();
    let fast = i.run_seccomp(&bytes).unwrap();
    let traced = i.trace_seccomp(&bytes, |_| {}).unwrap();
    assert_eq!(fast, traced, "fast path and trace disagree on {insns:?}");
    fast
}

/// Runs `body` (which leaves its result in A) in both modes with no input.
fn alu(body: &[Insn]) -> u32 {
    let mut insns = body.to_vec();
    insns.push(RET_ACC);
    let socket = on_packet(&insns, &[]);
    let seccomp = on_seccomp(&insns, &SeccompData::default());
    assert_eq!(socket, seccomp);
    socket
}

#[test]
fn loads_of_immediates_and_registers() {
    assert_eq!(alu(&[s(LD_IMM, 7)]), 7);
    assert_eq!(alu(&[s(LDX_IMM, 9), s(MISC_TXA, 0)]), 9);
    assert_eq!(alu(&[s(LD_IMM, 5), s(MISC_TAX, 0), s(LD_IMM, 0), s(MISC_TXA, 0)]), 5);
    // A and X start at 0.
    assert_eq!(alu(&[]), 0);
    assert_eq!(alu(&[s(MISC_TXA, 0)]), 0);
}

#[test]
fn scratch_memory() {
    assert_eq!(alu(&[s(LD_IMM, 3), s(ST, 15), s(LD_IMM, 0), s(LD_MEM, 15)]), 3);
    assert_eq!(alu(&[s(LDX_IMM, 4), s(STX, 0), s(LDX_MEM, 0), s(MISC_TXA, 0)]), 4);
    let all: Vec<Insn> =
        (0..16).flat_map(|i| [s(LD_IMM, i * 10), s(ST, i)]).chain((0..16).map(|i| s(LDX_MEM, i))).collect();
    assert_eq!(alu(&[&all[..], &[s(MISC_TXA, 0)]].concat()), 150);
    // Sixteen words, each kept apart: the sum of M[0..16] read back.
    let sum: Vec<Insn> = (0..16)
        .flat_map(|i| [s(LD_IMM, i * 10 + 1), s(ST, i)])
        .chain([s(LD_IMM, 0)])
        .chain((0..16).flat_map(|i| [s(LDX_MEM, i), s(ALU_ADD_X, 0)]))
        .collect();
    assert_eq!(alu(&sum), 1216);
}

#[test]
fn alu_k_and_x_forms_wrap_at_32_bits() {
    let cases: [(u16, u32, u32, u32); 11] = [
        (ALU_ADD_K, 0xffff_ffff, 2, 1),
        (ALU_SUB_K, 1, 2, 0xffff_ffff),
        (ALU_MUL_K, 0x8000_0001, 2, 2),
        (ALU_DIV_K, 0xffff_ffff, 0x8000_0000, 1),
        (ALU_MOD_K, 17, 5, 2),
        (ALU_AND_K, 0xf0f0, 0xff00, 0xf000),
        (ALU_OR_K, 0xf0f0, 0x0f00, 0xfff0),
        (ALU_XOR_K, 0xff, 0x0f, 0xf0),
        (ALU_LSH_K, 0x8000_0001, 1, 2),
        (ALU_RSH_K, 0x8000_0000, 31, 1),
        (ALU_LSH_K, 1, 0, 1),
    ];
    for (code, a, k, want) in cases {
        let got_k = if code == ALU_MOD_K {
            on_packet(&[s(LD_IMM, a), s(code, k), RET_ACC], &[])
        } else {
            alu(&[s(LD_IMM, a), s(code, k)])
        };
        assert_eq!(got_k, want, "{code:#x} {a:#x} {k:#x}");
        let x_code = code | BPF_X;
        let x_form = [s(LDX_IMM, k), s(LD_IMM, a), s(x_code, 0), RET_ACC];
        assert_eq!(on_packet(&x_form, &[]), want, "{x_code:#x}");
    }
    assert_eq!(alu(&[s(LD_IMM, 1), s(ALU_NEG, 0)]), 0xffff_ffff);
    assert_eq!(alu(&[s(ALU_NEG, 0)]), 0);
}

#[test]
fn division_by_x_zero_returns_zero() {
    assert_eq!(alu(&[s(LD_IMM, 9), s(ALU_DIV_X, 0), s(LD_IMM, 1)]), 0);
    assert_eq!(on_packet(&[s(LD_IMM, 9), s(ALU_MOD_X, 0), s(LD_IMM, 1), RET_ACC], &[]), 0);
    assert_eq!(alu(&[s(LDX_IMM, 3), s(LD_IMM, 9), s(ALU_DIV_X, 0)]), 3);
}

#[test]
fn shifts_by_x_mask_the_count_like_ebpf_alu32() {
    // The converted program shifts with eBPF ALU32 LSH/RSH X, which use X & 31.
    assert_eq!(alu(&[s(LDX_IMM, 33), s(LD_IMM, 1), s(ALU_LSH_X, 0)]), 2);
    assert_eq!(alu(&[s(LDX_IMM, 32), s(LD_IMM, 0x80), s(ALU_RSH_X, 0)]), 0x80);
    assert_eq!(alu(&[s(LDX_IMM, 0xffff_ffff), s(LD_IMM, 0x8000_0000), s(ALU_RSH_X, 0)]), 1);
}

#[test]
fn jumps_k_and_x() {
    // (code, A, operand, taken)
    let cases = [
        (JMP_JEQ_K, 5, 5, true),
        (JMP_JEQ_K, 5, 6, false),
        (JMP_JGT_K, 0xffff_ffff, 0x7fff_ffff, true), // unsigned
        (JMP_JGT_K, 5, 5, false),
        (JMP_JGE_K, 5, 5, true),
        (JMP_JGE_K, 0, 0x8000_0000, false),
        (JMP_JSET_K, 0b1010, 0b0010, true),
        (JMP_JSET_K, 0b1010, 0b0101, false),
        (JMP_JSET_K, 0xffff_ffff, 0, false),
    ];
    for (code, a, k, taken) in cases {
        let want = if taken { 1 } else { 2 };
        let prog_k = [s(LD_IMM, a), j(code, k, 0, 1), s(RET_K, 1), s(RET_K, 2)];
        assert_eq!(on_packet(&prog_k, &[]), want, "{code:#x} a={a:#x} k={k:#x}");
        assert_eq!(on_seccomp(&prog_k, &SeccompData::default()), want);
        let prog_x = [s(LDX_IMM, k), s(LD_IMM, a), j(code | BPF_X, 0, 0, 1), s(RET_K, 1), s(RET_K, 2)];
        assert_eq!(on_packet(&prog_x, &[]), want, "{:#x}", code | BPF_X);
        // jt and jf both non-zero (two-way) and jt == 0 (inverted) shapes.
        let two_way = [s(LD_IMM, a), j(code, k, 1, 2), s(RET_K, 9), s(RET_K, 1), s(RET_K, 2)];
        assert_eq!(on_packet(&two_way, &[]), want);
        let inverted = [s(LD_IMM, a), j(code, k, 0, 1), s(JMP_JA, 1), s(RET_K, 2), s(RET_K, 1)];
        assert_eq!(on_packet(&inverted, &[]), want);
    }
    let ja = [s(JMP_JA, 2), s(RET_K, 1), s(RET_K, 2), s(RET_K, 3)];
    assert_eq!(on_packet(&ja, &[]), 3);
}

/// A jump to a reload of a word the run already knows goes past the
/// compares it settles (`chain::known`) only to an instruction that
/// overwrites `A`: an ALU op reads it, so there the reload must run. Here
/// the jump at 3 reaches the reload of the word (known 5: `nr`, or
/// `args[0]`) with `A` holding `args[1]`.
#[test]
fn a_jump_past_a_known_reload_lands_only_where_a_is_overwritten() {
    for word in [0, 16] {
        let insns = [
            s(LD_W_ABS, word),
            j(JMP_JEQ_K, 5, 0, 7),
            s(LD_W_ABS, 24),
            j(JMP_JEQ_K, 7, 1, 0),
            s(RET_K, 1),
            s(LD_W_ABS, word),
            j(JMP_JEQ_K, 5, 0, 2),
            s(ALU_ADD_K, 1),
            RET_ACC,
            s(RET_K, 0),
        ];
        let mut data = SeccompData { args: [0, 7, 0, 0, 0, 0], ..SeccompData::default() };
        if word == 0 {
            data.nr = 5;
        } else {
            data.args[0] = 5;
        }
        assert_eq!(on_seccomp(&insns, &data), 6, "word {word}");
    }
}

/// libseccomp's rule ladders (`ld [0]; jeq #k, 0, 1; ret; ld [0]; ...`)
/// of every length around the point where the interpreter takes them as
/// one chain entered at each load (16 tests): every value of `nr` gives
/// the trace's answer.
#[test]
fn rule_ladders_of_every_length_answer_as_the_trace() {
    for rungs in 1..=40u32 {
        let mut insns = vec![];
        for i in 0..rungs {
            insns.extend([s(LD_W_ABS, 0), j(JMP_JEQ_K, 3 * i + 1, 0, 1), s(RET_K, i + 1)]);
        }
        insns.push(s(RET_K, 0));
        let i = interp(&insns, Mode::Seccomp);
        for nr in 0..3 * rungs + 3 {
            let data = SeccompData { nr: nr as i32, ..SeccompData::default() }.to_bytes();
            let want = if nr % 3 == 1 && nr / 3 < rungs { nr / 3 + 1 } else { 0 };
            assert_eq!(i.run_seccomp(&data), Ok(want), "{rungs} rungs, nr {nr}");
            assert_eq!(i.trace_seccomp(&data, |_| {}), Ok(want), "{rungs} rungs, nr {nr}");
        }
    }
}

#[test]
fn compare_chains_take_the_first_matching_exit() {
    // ld [0]; 40 x `jeq #i, ret_i, 0` with a duplicate key; ret #999.
    let n = 40u32;
    let mut insns = vec![s(LD_W_ABS, 0)];
    for i in 0..n {
        let key = if i == 30 { 7 } else { i };
        insns.push(j(JMP_JEQ_K, key, n as u8, 0));
    }
    insns.push(s(RET_K, 999));
    insns.extend((0..n).map(|i| s(RET_K, 1000 + i)));
    for nr in 0..n + 5 {
        let data = SeccompData { nr: nr as i32, ..SeccompData::default() };
        let want = if nr < n && nr != 30 { 1000 + nr } else { 999 };
        assert_eq!(on_seccomp(&insns, &data), want, "nr {nr}");
    }
    // Mixed comparisons in one chain, a jump into its middle.
    let insns = [
        s(LD_W_ABS, 0),
        j(JMP_JGE_K, 100, 0, 2), // A < 100: skip to the jset
        j(JMP_JGT_K, 200, 4, 0), // A > 200 -> ret 1
        j(JMP_JEQ_K, 150, 4, 0), // A == 150 -> ret 2
        j(JMP_JSET_K, 1, 0, 1),  // odd -> falls to ret 3 ... even -> ret 4
        s(RET_K, 3),
        s(RET_K, 4),
        s(RET_K, 1),
        s(RET_K, 2),
    ];
    let expect = |a: u32| {
        if a > 200 {
            1
        } else if a == 150 {
            2
        } else if a & 1 != 0 {
            3
        } else {
            4
        }
    };
    for a in [0u32, 1, 99, 100, 101, 150, 151, 200, 201, 202, u32::MAX] {
        let data = SeccompData { nr: a as i32, ..SeccompData::default() };
        assert_eq!(on_seccomp(&insns, &data), expect(a), "A = {a}");
    }
}

#[test]
fn seccomp_loads_are_native_endian_words_and_len_is_64() {
    let data = SeccompData {
        nr: 59,
        arch: 0xc000_003e,
        instruction_pointer: 0x0000_7fff_1234_5678,
        args: [0x1_0000_0002, 3, 4, 5, 6, 0xdead_beef_0000_0007],
    };
    let word = |k: u32| on_seccomp(&[s(LD_W_ABS, k), RET_ACC], &data);
    let bytes = data.to_bytes();
    for k in (0..64).step_by(4) {
        let at = k as usize;
        assert_eq!(word(k), u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap()), "k {k}");
    }
    if cfg!(target_endian = "little") {
        assert_eq!(word(0), 59);
        assert_eq!(word(4), 0xc000_003e);
        assert_eq!(word(16), 2);
        assert_eq!(word(20), 1);
        assert_eq!(word(60), 0xdead_beef);
    }
    assert_eq!(on_seccomp(&[s(LD_W_LEN, 0), RET_ACC], &data), 64);
    assert_eq!(on_seccomp(&[s(LDX_W_LEN, 0), s(MISC_TXA, 0), RET_ACC], &data), 64);
}

#[test]
fn packet_loads_are_big_endian_and_fail_with_zero() {
    let pkt = [0x11, 0x22, 0x33, 0x44, 0x55];
    assert_eq!(on_packet(&[s(LD_W_ABS, 0), RET_ACC], &pkt), 0x1122_3344);
    assert_eq!(on_packet(&[s(LD_W_ABS, 1), RET_ACC], &pkt), 0x2233_4455);
    assert_eq!(on_packet(&[s(LD_H_ABS, 3), RET_ACC], &pkt), 0x4455);
    assert_eq!(on_packet(&[s(LD_B_ABS, 4), RET_ACC], &pkt), 0x55);
    // Out of range: the filter returns 0, whatever comes after.
    assert_eq!(on_packet(&[s(LD_IMM, 7), s(LD_W_ABS, 2), RET_ACC], &pkt), 0);
    assert_eq!(on_packet(&[s(LD_IMM, 7), s(LD_B_ABS, 5), RET_ACC], &pkt), 0);
    assert_eq!(on_packet(&[s(LD_IMM, 7), s(LD_B_ABS, 0x7fff_ffff), RET_ACC], &pkt), 0);
    // Indirect: offset (int)(X + k), wrapping.
    assert_eq!(on_packet(&[s(LDX_IMM, 2), s(LD_H_IND, 1), RET_ACC], &pkt), 0x4455);
    assert_eq!(on_packet(&[s(LDX_IMM, 3), s(LD_B_IND, u32::MAX), RET_ACC], &pkt), 0x33);
    assert_eq!(on_packet(&[s(LD_IMM, 7), s(LDX_IMM, 0), s(LD_B_IND, u32::MAX), RET_ACC], &pkt), 0);
    // len and msh
    assert_eq!(on_packet(&[s(LD_W_LEN, 0), RET_ACC], &pkt), 5);
    assert_eq!(on_packet(&[s(LDX_W_LEN, 0), s(MISC_TXA, 0), RET_ACC], &pkt), 5);
    assert_eq!(on_packet(&[s(LDX_B_MSH, 4), s(MISC_TXA, 0), RET_ACC], &pkt), 4 * 5);
    assert_eq!(on_packet(&[s(LD_IMM, 7), s(LDX_B_MSH, 5), RET_ACC], &pkt), 0);
}

#[test]
fn negative_offsets_are_relative_to_the_headers() {
    let pkt: Vec<u8> = (0u8..40).collect();
    // Network header at 14 (test_bpf), MAC header at 0.
    assert_eq!(on_packet(&[s(LD_B_ABS, SKF_NET_OFF), RET_ACC], &pkt), 14);
    assert_eq!(on_packet(&[s(LD_B_ABS, SKF_NET_OFF + 3), RET_ACC], &pkt), 17);
    assert_eq!(on_packet(&[s(LD_H_ABS, SKF_LL_OFF + 1), RET_ACC], &pkt), 0x0102);
    assert_eq!(on_packet(&[s(LDX_IMM, 2), s(LD_B_IND, SKF_NET_OFF), RET_ACC], &pkt), 16);
    assert_eq!(on_packet(&[s(LDX_B_MSH, SKF_NET_OFF), s(MISC_TXA, 0), RET_ACC], &pkt), 4 * (14 & 0xf));
    // Below SKF_LL_OFF, or the (valid) SKF_AD_OFF - 1: fail.
    assert_eq!(on_packet(&[s(LD_IMM, 1), s(LD_B_ABS, SKF_LL_OFF - 1), RET_ACC], &pkt), 0);
    assert_eq!(on_packet(&[s(LD_IMM, 1), s(LD_B_ABS, SKF_AD_OFF - 1), RET_ACC], &pkt), 0);
    // Past the end of the packet: fail.
    assert_eq!(on_packet(&[s(LD_IMM, 1), s(LD_W_ABS, SKF_NET_OFF + 24), RET_ACC], &pkt), 0);
    // No MAC header: SKF_LL_OFF fails, SKF_NET_OFF still works.
    let mut skb = Skb::test_bpf(&pkt);
    skb.mac_offset = None;
    assert_eq!(on_skb(&[s(LD_IMM, 1), s(LD_B_ABS, SKF_LL_OFF), RET_ACC], &skb), 0);
    assert_eq!(on_skb(&[s(LD_B_ABS, SKF_NET_OFF), RET_ACC], &skb), 14);
}

#[test]
fn paged_data_is_readable_by_every_load() {
    // 20 linear bytes then 20 paged bytes.
    let pkt: Vec<u8> = (0u8..40).collect();
    let mut skb = Skb::test_bpf(&pkt);
    skb.headlen = 20;
    skb.network_offset = 14;
    assert_eq!(on_skb(&[s(LD_W_ABS, 18), RET_ACC], &skb), 0x1213_1415);
    assert_eq!(on_skb(&[s(LD_B_ABS, 39), RET_ACC], &skb), 39);
    assert_eq!(on_skb(&[s(LD_W_LEN, 0), RET_ACC], &skb), 40);
    // Since Linux 6.15 (d4bac0288a2b) SKF_NET_OFF/SKF_LL_OFF loads reach
    // paged data too.
    assert_eq!(on_skb(&[s(LD_B_ABS, SKF_NET_OFF + 10), RET_ACC], &skb), 24);
    assert_eq!(on_skb(&[s(LD_H_ABS, SKF_LL_OFF + 30), RET_ACC], &skb), 0x1e1f);
}

#[test]
fn ancillary_loads_read_the_skb() {
    let anc = |x: u32| [s(LD_W_ABS, SKF_AD_OFF + x), RET_ACC];
    let pkt = [0u8; 20];
    let mut skb = Skb::test_bpf(&pkt);
    skb.cpu = 3;
    skb.random = 0xabcd;
    let values = [
        (SKF_AD_PROTOCOL, 0x0800),
        (SKF_AD_PKTTYPE, 3),
        (SKF_AD_IFINDEX, 577),
        (SKF_AD_MARK, 0x1234_aaaa),
        (SKF_AD_QUEUE, 123),
        (SKF_AD_HATYPE, 588),
        (SKF_AD_RXHASH, 0x1234_aaab),
        (SKF_AD_CPU, 3),
        (SKF_AD_RANDOM, 0xabcd),
        (SKF_AD_VLAN_TAG, 0xffff),
        (SKF_AD_VLAN_TAG_PRESENT, 1),
        (SKF_AD_VLAN_TPID, 0x0800),
    ];
    for (x, want) in values {
        assert_eq!(on_skb(&anc(x), &skb), want, "SKF_AD_OFF + {x}");
    }
    // The size bits are ignored for ancillary loads.
    assert_eq!(on_skb(&[s(LD_B_ABS, SKF_AD_OFF + SKF_AD_MARK), RET_ACC], &skb), 0x1234_aaaa);
    // ALU_XOR_X: A ^= X.
    let xor = [s(LDX_IMM, 0xff), s(LD_IMM, 0x0f), s(LD_W_ABS, SKF_AD_OFF + SKF_AD_ALU_XOR_X), RET_ACC];
    assert_eq!(on_skb(&xor, &skb), 0xf0);
    // VLAN_TAG is the raw tci; present is vlan_all != 0.
    skb.vlan_tci = 0;
    assert_eq!(on_skb(&anc(SKF_AD_VLAN_TAG_PRESENT), &skb), 1);
    skb.vlan_proto = 0;
    assert_eq!(on_skb(&anc(SKF_AD_VLAN_TAG_PRESENT), &skb), 0);
    skb.vlan_tci = 0x1000;
    assert_eq!(on_skb(&anc(SKF_AD_VLAN_TAG_PRESENT), &skb), 1);
    assert_eq!(on_skb(&anc(SKF_AD_VLAN_TAG), &skb), 0x1000);
    // pkt_type is a 3-bit field.
    skb.pkt_type = 0xff;
    assert_eq!(on_skb(&anc(SKF_AD_PKTTYPE), &skb), 7);
}

#[test]
fn ifindex_and_hatype_without_a_device_return_a() {
    let pkt = [0u8; 4];
    let mut skb = Skb::test_bpf(&pkt);
    skb.dev = None;
    for x in [SKF_AD_IFINDEX, SKF_AD_HATYPE] {
        let prog = [s(LD_IMM, 42), s(LD_H_ABS, SKF_AD_OFF + x), s(LD_IMM, 7), RET_ACC];
        assert_eq!(on_skb(&prog, &skb), 42);
    }
    skb.dev = Some(NetDevice { ifindex: -1, hatype: 1 });
    assert_eq!(on_skb(&[s(LD_W_ABS, SKF_AD_OFF + SKF_AD_IFINDEX), RET_ACC], &skb), u32::MAX);
}

/// A netlink attribute `{u16 len, u16 type}` (host order) plus payload.
fn nla(ty: u16, payload: &[u8]) -> Vec<u8> {
    let len = 4 + payload.len() as u16;
    let mut v = [len.to_ne_bytes(), ty.to_ne_bytes()].concat();
    v.extend_from_slice(payload);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    v
}

#[test]
fn nlattr_finds_attributes_like_nla_find() {
    let find = |pkt: &[u8], a: u32, x: u32| {
        on_packet(&[s(LDX_IMM, x), s(LD_IMM, a), s(LD_W_ABS, SKF_AD_OFF + SKF_AD_NLATTR), RET_ACC], pkt)
    };
    let pkt = [nla(1, &[1, 2, 3]), nla(2, &[9; 8]), nla(0x4003, &[])].concat();
    assert_eq!(find(&pkt, 0, 1), 0);
    assert_eq!(find(&pkt, 0, 2), 8);
    assert_eq!(find(&pkt, 0, 3), 20); // type masked with 0x3fff
    assert_eq!(find(&pkt, 0, 4), 0);
    assert_eq!(find(&pkt, 8, 1), 0); // search starts at A
    assert_eq!(find(&pkt, 8, 2), 8);
    assert_eq!(find(&pkt, pkt.len() as u32 - 3, 2), 0); // A > len - 4
    assert_eq!(find(&pkt, pkt.len() as u32 + 2, 2), 0); // A past the end
    assert_eq!(find(&pkt, 0, 0x1_0002), 0); // int compare with the full X
                                            // A bad nla_len stops the walk.
    let bad = [nla(1, &[]), vec![2, 0, 5, 0], nla(5, &[])].concat();
    assert_eq!(find(&bad, 0, 5), 0);
    // What is left is counted from A: an attribute longer than the rest
    // of the packet is not found, even when it fits in len bytes from A.
    let mut truncated = [nla(1, &[1, 2, 3]), nla(2, &[])].concat();
    truncated[8] = 8;
    assert_eq!(find(&truncated, 8, 2), 0);
    assert_eq!(find(&truncated, 0, 2), 0); // nor after a step
    truncated[8] = 4;
    assert_eq!(find(&truncated, 8, 2), 8);
    // Non-linear skb: 0.
    let mut skb = Skb::test_bpf(&pkt);
    skb.headlen = 4;
    let prog = [s(LDX_IMM, 2), s(LD_W_ABS, SKF_AD_OFF + SKF_AD_NLATTR), RET_ACC];
    assert_eq!(on_skb(&prog, &skb), 0);
}

#[test]
fn nlattr_nest_searches_inside_the_attribute_at_a() {
    let nest = |pkt: &[u8], a: u32, x: u32| {
        on_packet(&[s(LDX_IMM, x), s(LD_IMM, a), s(LD_W_ABS, SKF_AD_OFF + SKF_AD_NLATTR_NEST), RET_ACC], pkt)
    };
    let inner = [nla(7, &[1]), nla(8, &[2, 3])].concat();
    let pkt = [nla(1, &inner), nla(8, &[])].concat();
    assert_eq!(nest(&pkt, 0, 7), 4);
    assert_eq!(nest(&pkt, 0, 8), 12);
    assert_eq!(nest(&pkt, 0, 9), 0);
    // The nest's own length bounds the search: type 8 after it is not found
    // from an empty nest.
    let pkt2 = [nla(1, &[]), nla(8, &[])].concat();
    assert_eq!(nest(&pkt2, 0, 8), 0);
    // A nest that ends exactly at the end of the packet is searched.
    assert_eq!(nest(&nla(1, &inner), 0, 8), 12);
    // What is left is counted from A: a nest 4 bytes longer than the rest
    // of the packet is refused, though it fits in len bytes from A.
    let mut past_end = [nla(9, &[]), nla(1, &nla(7, &[1]))].concat();
    assert_eq!(nest(&past_end, 4, 7), 8);
    past_end[4] += 4;
    assert_eq!(nest(&past_end, 4, 7), 0);
    // nla_len larger than what is left, or below 4: 0.
    let mut too_long = nla(1, &inner);
    too_long[0] = 200;
    assert_eq!(nest(&too_long, 0, 7), 0);
    let mut too_short = nla(1, &inner);
    too_short[0] = 3;
    too_short[1] = 0;
    assert_eq!(nest(&too_short, 0, 7), 0);
}

#[test]
fn pay_offset_skips_ip_and_transport_headers() {
    let poff = |pkt: &[u8]| on_packet(&[s(LD_W_ABS, SKF_AD_OFF + SKF_AD_PAY_OFFSET), RET_ACC], pkt);
    let mut ipv4_tcp = vec![0u8; 14];
    ipv4_tcp.extend_from_slice(&[0x46, 0, 0, 60, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0, 0, 0, 0]);
    let mut tcp = vec![0u8; 20];
    tcp[12] = 0x80; // doff 8 -> 32 bytes
    ipv4_tcp.extend_from_slice(&tcp);
    ipv4_tcp.extend_from_slice(&[0; 12]);
    assert_eq!(poff(&ipv4_tcp), 14 + 24 + 32);
    // UDP, later fragment, too short, bad ihl.
    let mut udp = ipv4_tcp.clone();
    udp[14 + 9] = 17;
    assert_eq!(poff(&udp), 14 + 24 + 8);
    let mut frag = udp.clone();
    frag[14 + 6] = 0x00;
    frag[14 + 7] = 0x10;
    assert_eq!(poff(&frag), 14 + 24);
    assert_eq!(poff(&ipv4_tcp[..30]), 0);
    let mut bad = udp.clone();
    bad[14] = 0x44;
    assert_eq!(poff(&bad), 0);
    // IPv6 + hop-by-hop + UDP.
    let mut v6 = vec![0u8; 14];
    let mut ip6 = vec![0u8; 40];
    ip6[0] = 0x60;
    ip6[6] = 0; // hop-by-hop
    v6.extend_from_slice(&ip6);
    v6.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 0]);
    v6.extend_from_slice(&[0; 16]);
    let mut skb = Skb::test_bpf(&v6);
    skb.protocol = 0x86dd;
    skb.vlan_proto = 0;
    skb.vlan_tci = 0;
    assert_eq!(on_skb(&[s(LD_W_ABS, SKF_AD_OFF + SKF_AD_PAY_OFFSET), RET_ACC], &skb), 14 + 40 + 8 + 8);
    // Unknown protocol: the dissector fails.
    skb.protocol = 0x0806;
    assert_eq!(on_skb(&[s(LD_W_ABS, SKF_AD_OFF + SKF_AD_PAY_OFFSET), RET_ACC], &skb), 0);
}

#[test]
fn running_in_the_wrong_mode_is_an_error() {
    let seccomp = interp(&[s(LD_W_ABS, 0), RET_ACC], Mode::Seccomp);
    assert_eq!(
        seccomp.run_socket(&Skb::test_bpf(&[])),
        Err(ExecError::ModeMismatch { program: Mode::Seccomp, context: Mode::Socket })
    );
    let socket = interp(&[s(LD_W_ABS, 0), RET_ACC], Mode::Socket);
    assert_eq!(
        socket.run_seccomp(&[0; 64]),
        Err(ExecError::ModeMismatch { program: Mode::Socket, context: Mode::Seccomp })
    );
    assert!(socket.trace_seccomp(&[0; 64], |_| {}).is_err());
    // Tracing a `Program` without an interpreter checks the mode the same way.
    let program = validate(&[s(LD_W_ABS, 0), RET_ACC], Mode::Socket).unwrap();
    assert_eq!(
        cbpf::trace_seccomp(&program, &[0; 64], |_| {}),
        Err(ExecError::ModeMismatch { program: Mode::Socket, context: Mode::Seccomp })
    );
    let program = validate(&[s(LD_W_ABS, 0), RET_ACC], Mode::Seccomp).unwrap();
    assert_eq!(
        cbpf::trace_socket(&program, &Skb::test_bpf(&[]), |_| {}),
        Err(ExecError::ModeMismatch { program: Mode::Seccomp, context: Mode::Socket })
    );
}

/// What an interpreter says of its program: the mode and the instructions
/// it was built from, as validated (a seccomp `ld [k]` rewritten to 0x21).
#[test]
fn an_interpreter_reports_its_program() {
    let insns = [s(LD_W_ABS, 4), j(JMP_JEQ_K, 0xc000_003e, 0, 1), s(RET_K, 0x7fff_0000), s(RET_K, 0)];
    for mode in [Mode::Seccomp, Mode::Socket] {
        let program = validate(&insns, mode).unwrap();
        let i = Interp::new(&program);
        assert_eq!(i.mode(), mode);
        assert_eq!((i.len(), i.is_empty()), (4, false));
        assert_eq!(i.insns(), program.insns());
    }
    let seccomp = validate(&insns, Mode::Seccomp).unwrap();
    assert_eq!(Interp::new(&seccomp).insns()[0], s(LDX_W_ABS, 4));
}

#[test]
fn trace_reports_each_executed_instruction_with_its_state() {
    let insns = [s(LD_IMM, 5), s(ST, 2), s(MISC_TAX, 0), j(JMP_JEQ_K, 5, 1, 0), s(RET_K, 0), RET_ACC];
    let i = interp(&insns, Mode::Seccomp);
    let mut steps = Vec::new();
    let ret = i.trace_seccomp(&[0; 64], |step| steps.push(*step)).unwrap();
    assert_eq!(ret, 5);
    let pcs: Vec<usize> = steps.iter().map(|s| s.pc.0).collect();
    assert_eq!(pcs, [0, 1, 2, 3, 5]);
    assert_eq!((steps[0].a, steps[0].x), (0, 0));
    assert_eq!((steps[2].a, steps[2].x, steps[2].mem[2]), (5, 0, 5));
    assert_eq!((steps[3].a, steps[3].x), (5, 5));
    assert_eq!(steps[4].insn, RET_ACC);
    // The same trace from the program alone, no interpreter compiled.
    let mut alone = Vec::new();
    let program = validate(&insns, Mode::Seccomp).unwrap();
    assert_eq!(cbpf::trace_seccomp(&program, &[0; 64], |step| alone.push(*step)), Ok(5));
    assert_eq!(alone, steps);
}
