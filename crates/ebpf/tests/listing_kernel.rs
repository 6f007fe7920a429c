#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Listing lines checked against the format strings of `print_bpf_insn()` in
//! kernel/bpf/disasm.c (Linux 6.18), one case per branch of that function.

use ebpf::listing::{format_insn, format_insn_with, kernel_helper_name, listing, listing_with, skb_helper_name};
use ebpf::skb::helper;
use ebpf::Insn;

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}

/// (instruction, expected kernel text) for every branch of `print_bpf_insn()`.
fn cases() -> Vec<(Insn, &'static str)> {
    vec![
        // ALU / ALU64, BPF_END.
        (i(0xd4, 1, 0, 0, 16), "(d4) r1 = le16 r1"),
        (i(0xdc, 2, 0, 0, 64), "(dc) r2 = be64 r2"),
        (i(0xd7, 3, 0, 0, 32), "(d7) r3 = bswap32 r3"),
        // NEG.
        (i(0x84, 4, 0, 0, 0), "(84) w4 = -w4"),
        (i(0x87, 4, 0, 0, 0), "(87) r4 = -r4"),
        // addr_space_cast.
        (i(0xbf, 1, 2, 1, 0x0001_0000), "(bf) r1 = addr_space_cast(r2, 1, 0)"),
        (i(0xbf, 1, 2, 1, -1), "(bf) r1 = addr_space_cast(r2, 65535, 65535)"),
        // BPF_X forms.
        (i(0xbf, 6, 1, 0, 0), "(bf) r6 = r1"),
        (i(0xac, 0, 0, 0, 0), "(ac) w0 ^= w0"),
        (i(0x0f, 1, 2, 0, 0), "(0f) r1 += r2"),
        (i(0x1c, 1, 2, 0, 0), "(1c) w1 -= w2"),
        (i(0x2f, 1, 2, 0, 0), "(2f) r1 *= r2"),
        (i(0x3f, 1, 2, 0, 0), "(3f) r1 /= r2"),
        (i(0x3f, 1, 2, 1, 0), "(3f) r1 s/= r2"),
        (i(0x9c, 1, 2, 1, 0), "(9c) w1 s%= w2"),
        (i(0x4f, 1, 2, 0, 0), "(4f) r1 |= r2"),
        (i(0x5f, 1, 2, 0, 0), "(5f) r1 &= r2"),
        (i(0x6f, 1, 2, 0, 0), "(6f) r1 <<= r2"),
        (i(0x7f, 1, 2, 0, 0), "(7f) r1 >>= r2"),
        (i(0x9f, 1, 2, 0, 0), "(9f) r1 %= r2"),
        (i(0xcf, 1, 2, 0, 0), "(cf) r1 s>>= r2"),
        (i(0xbf, 1, 2, 8, 0), "(bf) r1 = (s8)r2"),
        (i(0xbf, 1, 2, 16, 0), "(bf) r1 = (s16)r2"),
        (i(0xbf, 1, 2, 32, 0), "(bf) r1 = (s32)r2"),
        (i(0xbc, 1, 2, 8, 0), "(bc) w1 = (s8)w2"),
        (i(0xbc, 1, 2, 16, 0), "(bc) w1 = (s16)w2"),
        // Holes in bpf_alu_string[] print as vsnprintf prints NULL.
        (i(0xef, 1, 2, 0, 0), "(ef) r1 (null) r2"),
        // BPF_K forms: signed decimal.
        (i(0xb4, 0, 0, 0, 2_147_418_112), "(b4) w0 = 2147418112"),
        (i(0xb7, 0, 0, 0, -1), "(b7) r0 = -1"),
        (i(0x07, 10, 0, 0, -8), "(07) r10 += -8"),
        (i(0x34, 0, 0, 1, -3), "(34) w0 s/= -3"),
        (i(0x97, 0, 0, 1, 7), "(97) r0 s%= 7"),
        // movsx with an immediate prints no cast.
        (i(0xb7, 0, 0, 8, 5), "(b7) r0 = 5"),
        (i(0x54, 0, 0, 0, 0xffff), "(54) w0 &= 65535"),
        // STX.
        (i(0x63, 10, 1, -4, 0), "(63) *(u32 *)(r10 -4) = r1"),
        (i(0x7b, 10, 1, -8, 0), "(7b) *(u64 *)(r10 -8) = r1"),
        (i(0x73, 1, 2, 0, 0), "(73) *(u8 *)(r1 +0) = r2"),
        (i(0x6b, 1, 2, 2, 0), "(6b) *(u16 *)(r1 +2) = r2"),
        (i(0xdb, 1, 2, 0, 0x00), "(db) lock *(u64 *)(r1 +0) += r2"),
        (i(0xc3, 1, 2, 4, 0x50), "(c3) lock *(u32 *)(r1 +4) &= r2"),
        (i(0xdb, 1, 2, 0, 0x40), "(db) lock *(u64 *)(r1 +0) |= r2"),
        (i(0xdb, 1, 2, 0, 0xa0), "(db) lock *(u64 *)(r1 +0) ^= r2"),
        (i(0xdb, 1, 2, -8, 0x01), "(db) r2 = atomic64_fetch_add((u64 *)(r1 -8), r2)"),
        (i(0xc3, 1, 2, 0, 0x51), "(c3) r2 = atomic_fetch_and((u32 *)(r1 +0), r2)"),
        (i(0xc3, 1, 2, 0, 0x41), "(c3) r2 = atomic_fetch_or((u32 *)(r1 +0), r2)"),
        (i(0xdb, 1, 2, 0, 0xa1), "(db) r2 = atomic64_fetch_xor((u64 *)(r1 +0), r2)"),
        (i(0xdb, 1, 2, 0, 0xf1), "(db) r0 = atomic64_cmpxchg((u64 *)(r1 +0), r0, r2)"),
        (i(0xc3, 1, 2, 0, 0xf1), "(c3) r0 = atomic_cmpxchg((u32 *)(r1 +0), r0, r2)"),
        (i(0xdb, 1, 2, 0, 0xe1), "(db) r2 = atomic64_xchg((u64 *)(r1 +0), r2)"),
        (i(0xc3, 1, 2, 0, 0xe1), "(c3) r2 = atomic_xchg((u32 *)(r1 +0), r2)"),
        (i(0xd3, 0, 1, 3, 0x100), "(d3) r0 = load_acquire((u8 *)(r1 +3))"),
        (i(0xdb, 1, 2, 0, 0x110), "(db) store_release((u64 *)(r1 +0), r2)"),
        (i(0xdb, 1, 2, 0, 0x02), "BUG_db"),
        (i(0x23, 1, 2, 0, 0), "BUG_23"),
        // ST.
        (i(0x62, 10, 0, -4, 7), "(62) *(u32 *)(r10 -4) = 7"),
        (i(0x7a, 1, 0, 8, -1), "(7a) *(u64 *)(r1 +8) = -1"),
        (i(0xc2, 0, 0, 0, 0), "(c2) nospec"),
        (i(0x22, 0, 0, 0, 0), "BUG_st_22"),
        // LDX.
        (i(0x61, 0, 6, 4, 0), "(61) r0 = *(u32 *)(r6 +4)"),
        (i(0x79, 1, 10, -16, 0), "(79) r1 = *(u64 *)(r10 -16)"),
        (i(0x71, 1, 2, 0, 0), "(71) r1 = *(u8 *)(r2 +0)"),
        (i(0x69, 1, 2, 0, 0), "(69) r1 = *(u16 *)(r2 +0)"),
        (i(0x81, 1, 2, 0, 0), "(81) r1 = *(s32 *)(r2 +0)"),
        (i(0x89, 1, 2, 0, 0), "(89) r1 = *(s16 *)(r2 +0)"),
        (i(0x91, 1, 2, -1, 0), "(91) r1 = *(s8 *)(r2 -1)"),
        (i(0x21, 0, 0, 0, 0), "BUG_ldx_21"),
        // LD.
        (i(0x20, 0, 0, 0, 12), "(20) r0 = *(u32 *)skb[12]"),
        (i(0x30, 0, 0, 0, -0x100000), "(30) r0 = *(u8 *)skb[-1048576]"),
        (i(0x48, 0, 7, 0, 14), "(48) r0 = *(u16 *)skb[r7 + 14]"),
        (i(0x00, 0, 0, 0, 0), "BUG_ld_00"),
        (i(0x60, 0, 0, 0, 0), "BUG_ld_60"),
        // JMP / JMP32.
        (i(0x85, 0, 0, 0, 5), "(85) call bpf_ktime_get_ns#5"),
        (i(0x85, 0, 0, 0, 211), "(85) call bpf_cgrp_storage_delete#211"),
        (i(0x85, 0, 0, 0, 212), "(85) call unknown#212"),
        (i(0x85, 0, 0, 0, -1), "(85) call unknown#-1"),
        (i(0x85, 0, 1, 0, 3), "(85) call pc+3"),
        (i(0x85, 0, 1, 0, -7), "(85) call pc-7"),
        (i(0x85, 0, 2, 0, 1234), "(85) call kernel-function#1234"),
        (i(0x8d, 2, 0, 0, 0), "(8d) call bpf_unspec#0"),
        (i(0x05, 0, 0, 3, 0), "(05) goto pc+3"),
        (i(0x05, 0, 0, -1, 0), "(05) goto pc-1"),
        (i(0xe5, 0, 0, 2, 0), "(e5) may_goto pc+2"),
        (i(0x06, 0, 0, 0, -5), "(06) gotol pc-5"),
        (i(0x95, 0, 0, 0, 0), "(95) exit"),
        (i(0x15, 0, 0, 2, 0x3b), "(15) if r0 == 0x3b goto pc+2"),
        (i(0x15, 0, 0, 0, 0), "(15) if r0 == 0x0 goto pc+0"),
        (i(0x55, 1, 0, -3, -1), "(55) if r1 != 0xffffffff goto pc-3"),
        (i(0x25, 1, 0, 1, 0x7fff_ffff), "(25) if r1 > 0x7fffffff goto pc+1"),
        (i(0x35, 1, 0, 1, 1), "(35) if r1 >= 0x1 goto pc+1"),
        (i(0xa5, 1, 0, 1, 1), "(a5) if r1 < 0x1 goto pc+1"),
        (i(0xb5, 1, 0, 1, 1), "(b5) if r1 <= 0x1 goto pc+1"),
        (i(0x45, 1, 0, 1, 8), "(45) if r1 & 0x8 goto pc+1"),
        (i(0x65, 1, 0, 1, 1), "(65) if r1 s> 0x1 goto pc+1"),
        (i(0x75, 1, 0, 1, 1), "(75) if r1 s>= 0x1 goto pc+1"),
        (i(0xc5, 1, 0, 1, 1), "(c5) if r1 s< 0x1 goto pc+1"),
        (i(0xd5, 1, 0, 1, 1), "(d5) if r1 s<= 0x1 goto pc+1"),
        (i(0x1d, 1, 2, 4, 0), "(1d) if r1 == r2 goto pc+4"),
        (i(0xdd, 1, 2, 4, 0), "(dd) if r1 s<= r2 goto pc+4"),
        (i(0x16, 0, 0, 2, 0x3b), "(16) if w0 == 0x3b goto pc+2"),
        (i(0x5e, 3, 4, -2, 0), "(5e) if w3 != w4 goto pc-2"),
        (i(0x4e, 3, 4, 0, 0), "(4e) if w3 & w4 goto pc+0"),
        // Codes the kernel prints through the generic branches.
        (i(0x96, 0, 0, 0, 0), "(96) if w0 exit 0x0 goto pc+0"),
        (i(0x0d, 1, 2, 0, 0), "(0d) if r1 jmp r2 goto pc+0"),
        (i(0xf5, 1, 0, 0, 0), "(f5) if r1 (null) 0x0 goto pc+0"),
    ]
}

#[test]
fn every_print_bpf_insn_branch() {
    let mut failures = Vec::new();
    for (insn, want) in cases() {
        let got = format_insn(&insn, None);
        if got != want {
            failures.push(format!("{insn:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} listing mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn ld_imm64_reads_the_second_slot() {
    let lo = i(0x18, 1, 0, 0, 0x2345_6789);
    let hi = i(0x00, 0, 0, 0, 0x1);
    assert_eq!(format_insn(&lo, Some(&hi)), "(18) r1 = 0x123456789");
    let neg = i(0x18, 0, 0, 0, -1);
    let neg_hi = i(0x00, 0, 0, 0, -1);
    assert_eq!(format_insn(&neg, Some(&neg_hi)), "(18) r0 = 0xffffffffffffffff");
    assert_eq!(format_insn(&i(0x18, 2, 0, 0, 0), Some(&i(0, 0, 0, 0, 0))), "(18) r2 = 0x0");
    // Map pointers are printed, as bpftool does (allow_ptr_leaks).
    assert_eq!(format_insn(&i(0x18, 1, 1, 0, 3), Some(&i(0, 0, 0, 0, 0))), "(18) r1 = 0x3");
    assert_eq!(format_insn(&lo, None), "(18) BUG_ld_imm64_truncated");
}

#[test]
fn listing_has_bpftool_prefix_and_folds_ld_imm64() {
    let prog =
        [i(0xac, 0, 0, 0, 0), i(0x18, 1, 0, 0, 5), i(0x00, 0, 0, 0, 0), i(0x15, 0, 0, 2, 0x3b), i(0x95, 0, 0, 0, 0)];
    assert_eq!(
        listing(&prog),
        "   0: (ac) w0 ^= w0\n   1: (18) r1 = 0x5\n   3: (15) if r0 == 0x3b goto pc+2\n   4: (95) exit\n"
    );
    assert_eq!(listing(&[]), "");
    let long: Vec<Insn> = (0..10_001).map(|_| i(0x95, 0, 0, 0, 0)).collect();
    let text = listing(&long);
    assert!(text.ends_with("10000: (95) exit\n"), "{}", &text[text.len() - 40..]);
    assert!(text.contains("\n 999: (95) exit\n"));
    // A trailing ld_imm64 without its second slot still lists, never panics.
    assert_eq!(listing(&[i(0x18, 0, 0, 0, 1)]), "   0: (18) BUG_ld_imm64_truncated\n");
}

#[test]
fn helper_names_resolve_kernel_table_first() {
    assert_eq!(kernel_helper_name(0), Some("bpf_unspec"));
    assert_eq!(kernel_helper_name(1), Some("bpf_map_lookup_elem"));
    assert_eq!(kernel_helper_name(209), Some("bpf_user_ringbuf_drain"));
    assert_eq!(kernel_helper_name(212), None);
    assert_eq!(kernel_helper_name(-1), None);
    let call32 = i(0x85, 0, 0, 0, helper::SKB_LOAD_32);
    assert_eq!(format_insn(&call32, None), "(85) call unknown#4099");
    assert_eq!(format_insn_with(&call32, None, skb_helper_name), "(85) call bpf_skb_load_helper_32#4099");
    // The kernel table wins over the resolver for ids it knows.
    assert_eq!(format_insn_with(&i(0x85, 0, 0, 0, 5), None, |_| Some("mine")), "(85) call bpf_ktime_get_ns#5");
    // The resolver is not asked about local calls.
    assert_eq!(format_insn_with(&i(0x85, 0, 1, 0, 2), None, |_| Some("mine")), "(85) call pc+2");
    let prog = [i(0x85, 0, 0, 0, helper::GET_RAW_CPU_ID), i(0x95, 0, 0, 0, 0)];
    assert_eq!(listing_with(&prog, skb_helper_name), "   0: (85) call bpf_get_raw_cpu_id#4102\n   1: (95) exit\n");
    for id in [
        helper::SKB_LOAD_8,
        helper::SKB_LOAD_16,
        helper::SKB_LOAD_32,
        helper::SKB_GET_NLATTR,
        helper::SKB_GET_NLATTR_NEST,
        helper::GET_RAW_CPU_ID,
        helper::SKB_GET_PAY_OFFSET,
        helper::USER_RND_U32,
    ] {
        assert!(skb_helper_name(id).is_some_and(|n| n.starts_with("bpf_")), "{id:#x}");
    }
}

proptest::proptest! {
    /// Every 8-byte pattern prints without panicking, starts with the opcode
    /// or a BUG_ marker, and is one line.
    #[test]
    fn any_insn_formats(code: u8, regs: u8, off: i16, imm: i32, next_imm: i32) {
        let insn = Insn { code, regs, off, imm };
        let text = format_insn(&insn, Some(&i(0, 0, 0, 0, next_imm)));
        proptest::prop_assert!(text.starts_with(&format!("({code:02x}) ")) || text.starts_with("BUG_"), "{}", text);
        proptest::prop_assert!(!text.contains('\n'));
    }
}
