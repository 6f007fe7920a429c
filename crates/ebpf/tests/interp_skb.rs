#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The socket context of src/skb.rs and its helpers (SPEC §4.6, §4.7),
//! driven the way converted socket filters drive them.

use ebpf::abi::region::{CTX_BASE, PACKET_BASE};
use ebpf::skb::{self, helper, SkbContext, SkbMeta};
use ebpf::{Helpers, Insn, LoadOptions, Program};
use ebpf::{Input, Vm};

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}
const EXIT: Insn = Insn::new(0x95, 0, 0, 0, 0);

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|k| u8::from_str_radix(&s[2 * k..2 * k + 2], 16).unwrap()).collect()
}

fn run(p: &[Insn], skb: &SkbContext) -> u64 {
    let prog = Program::load(p, &LoadOptions::default(), &Helpers::socket()).unwrap();
    Vm::new().run(&prog, Input::Skb(skb)).unwrap()
}

/// The converter's slow path: r6 = ctx; r8 = data; r9 = headlen; r4 = offset; call.
fn load_helper(id: i32, offset: i32) -> Vec<Insn> {
    vec![
        i(0xbf, 6, 1, 0, 0),
        i(0x79, 8, 6, skb::OFF_DATA, 0),
        i(0x61, 9, 6, skb::OFF_LEN, 0),
        i(0x61, 2, 6, skb::OFF_DATA_LEN, 0),
        i(0x1c, 9, 2, 0, 0),
        i(0xbf, 1, 6, 0, 0),
        i(0xbf, 2, 8, 0, 0),
        i(0xbf, 3, 9, 0, 0),
        i(0xb7, 4, 0, 0, offset),
        i(0x85, 0, 0, 0, id),
        EXIT,
    ]
}

/// A call with r2 = a, r3 = x (the ancillary helpers).
fn anc(id: i32, a: i32, x: i32) -> Vec<Insn> {
    vec![i(0xb7, 2, 0, 0, a), i(0xb7, 3, 0, 0, x), i(0x85, 0, 0, 0, id), EXIT]
}

#[test]
fn context_fields_have_the_documented_layout_and_populate_skb_defaults() {
    let skb = SkbContext::new(&[0u8; 20], &SkbMeta::default());
    let field = |code: u8, off: i16| run(&[i(code, 0, 1, off, 0), EXIT], &skb);
    assert_eq!(field(0x79, skb::OFF_DATA), PACKET_BASE);
    assert_eq!(field(0x61, skb::OFF_LEN), 20);
    assert_eq!(field(0x61, skb::OFF_DATA_LEN), 0);
    assert_eq!(run(&[i(0x69, 0, 1, skb::OFF_PROTOCOL, 0), i(0xdc, 0, 0, 0, 16), EXIT], &skb), 0x0800);
    assert_eq!(field(0x71, skb::OFF_PKT_TYPE) & 7, 3);
    assert_eq!(field(0x61, skb::OFF_MARK), 0x1234_aaaa);
    assert_eq!(field(0x69, skb::OFF_QUEUE_MAPPING), 123);
    assert_eq!(field(0x69, skb::OFF_VLAN_TCI), 0xffff);
    assert_eq!(run(&[i(0x69, 0, 1, skb::OFF_VLAN_PROTO, 0), i(0xdc, 0, 0, 0, 16), EXIT], &skb), 0x0800);
    assert_ne!(field(0x61, skb::OFF_VLAN_ALL), 0);
    assert_eq!(field(0x61, skb::OFF_HASH), 0x1234_aaab);
    assert_eq!(field(0x79, skb::OFF_DEV), CTX_BASE + skb::DEV_RECORD as u64);
    assert_eq!(field(0x61, skb::OFF_NETWORK_HEADER), 14);
    assert_eq!(field(0x61, skb::OFF_MAC_HEADER), 0);
    // ifindex / hatype through the dev pointer, as the converter reads them.
    let dev = |code: u8, off: i16| run(&[i(0x79, 2, 1, skb::OFF_DEV, 0), i(code, 0, 2, off, 0), EXIT], &skb);
    assert_eq!(dev(0x61, skb::DEV_OFF_IFINDEX), 577);
    assert_eq!(dev(0x69, skb::DEV_OFF_TYPE), 588);
    // No device, no VLAN, no MAC header.
    let meta = SkbMeta { ifindex: None, vlan_present: false, mac_header: None, ..SkbMeta::default() };
    let bare = SkbContext::new(&[0u8; 8], &meta);
    assert_eq!(run(&[i(0x79, 0, 1, skb::OFF_DEV, 0), EXIT], &bare), 0);
    assert_eq!(run(&[i(0x61, 0, 1, skb::OFF_VLAN_ALL, 0), EXIT], &bare), 0);
    assert_eq!(run(&[i(0x61, 0, 1, skb::OFF_MAC_HEADER, 0), EXIT], &bare), u64::from(skb::MAC_HEADER_UNSET));
    assert_eq!(run(&[i(0x61, 0, 1, skb::OFF_NETWORK_HEADER, 0), EXIT], &bare), 8, "min(len, 14)");
}

#[test]
fn load_helpers_read_big_endian_linear_paged_and_negative_offsets() {
    let packet: Vec<u8> = (0u8..64).collect();
    let linear = SkbContext::new(&packet, &SkbMeta::default());
    assert_eq!(run(&load_helper(helper::SKB_LOAD_32, 4), &linear), 0x0405_0607);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_16, 62), &linear), 0x3e3f);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, 63), &linear), 0x3f);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_16, 63), &linear) as i64, skb::EFAULT, "past the end");
    // Paged: head of 16 bytes, the rest reachable through skb_copy_bits().
    let paged = SkbContext::new(&packet, &SkbMeta { headlen: Some(16), ..SkbMeta::default() });
    assert_eq!(run(&[i(0x61, 0, 1, skb::OFF_DATA_LEN, 0), EXIT], &paged), 48);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_32, 14), &paged), 0x0e0f_1011, "mixed head/frag");
    assert_eq!(run(&load_helper(helper::SKB_LOAD_32, 40), &paged), 0x2829_2a2b);
    // Negative offsets: SKF_NET_OFF relative to the network header (14),
    // SKF_LL_OFF to the MAC header (0); since Linux 6.15
    // (bpf_skb_load_helper_convert_offset()) they reach paged data too.
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_NET_OFF + 2), &linear), 16);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_LL_OFF + 5), &linear), 5);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_NET_OFF + 1), &paged) as i64, 15);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_NET_OFF + 2), &paged), 16, "frag");
    assert_eq!(run(&load_helper(helper::SKB_LOAD_32, skb::SKF_NET_OFF), &paged), 0x0e0f_1011, "head and frag");
    assert_eq!(run(&load_helper(helper::SKB_LOAD_16, skb::SKF_LL_OFF + 40), &paged), 0x2829, "frag via LL");
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_NET_OFF + 49), &paged), 63, "last byte");
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_NET_OFF + 50), &paged) as i64, skb::EFAULT, "past end");
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_LL_OFF - 1), &linear) as i64, skb::EFAULT);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, i32::MIN), &linear) as i64, skb::EFAULT);
    // -EFAULT (include/uapi/asm-generic/errno-base.h), which the converted
    // program's `if r0 s>= 0` tells from a loaded byte.
    assert_eq!(run(&load_helper(helper::SKB_LOAD_32, 61), &linear) as i64, -14);
    // A MAC header set past `data`'s start: SKF_LL_OFF counts from it.
    let mac_at_3 = SkbContext::new(&packet, &SkbMeta { mac_header: Some(3), ..SkbMeta::default() });
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_LL_OFF + 5), &mac_at_3), 8);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_LL_OFF + 60), &mac_at_3), 63);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_LL_OFF + 61), &mac_at_3) as i64, skb::EFAULT);
    // skb_copy_bits() itself: the whole packet, linear and paged; nothing
    // past it; no headroom before `data`.
    assert_eq!(paged.copy_bits(60, 4), Some(&packet[60..]));
    assert_eq!(paged.copy_bits(61, 4), None);
    assert_eq!(paged.copy_bits(0, 64), Some(&packet[..]));
    assert_eq!(paged.copy_bits(-1, 1), None);
    assert_eq!(paged.copy_bits(i32::MAX, 1), None);
    let no_mac = SkbContext::new(&packet, &SkbMeta { mac_header: None, ..SkbMeta::default() });
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_LL_OFF + 5), &no_mac) as i64, skb::EFAULT);
    assert_eq!(run(&load_helper(helper::SKB_LOAD_8, skb::SKF_NET_OFF + 5), &no_mac), 19);
}

/// The legacy `LD|ABS`/`LD|IND` instructions keep their pre-4.18 meaning:
/// negative offsets only reach the linear area (the load helpers above
/// follow 6.15+ and reach paged data).
#[test]
fn legacy_ld_abs_keeps_negative_offsets_in_the_linear_area() {
    let packet: Vec<u8> = (0u8..64).collect();
    let paged = SkbContext::new(&packet, &SkbMeta { headlen: Some(16), ..SkbMeta::default() });
    // r0 = 7; r0 = ldb [k]; exit: a failed read ends the program with 0.
    let ld_abs_b = |k: i32| vec![i(0xb7, 0, 0, 0, 7), i(0x30, 0, 0, 0, k), EXIT];
    assert_eq!(run(&ld_abs_b(skb::SKF_NET_OFF + 1), &paged), 15);
    assert_eq!(run(&ld_abs_b(skb::SKF_NET_OFF + 2), &paged), 0, "paged byte, pre-4.18: not reachable");
    assert_eq!(run(&ld_abs_b(40), &paged), 40, "positive offsets reach paged data");
}

#[test]
fn nlattr_helpers_match_test_bpf() {
    // lib/test_bpf.c LD_NLATTR / LD_NLATTR_NEST (little-endian data).
    let data = hex("ffff040002000400030000000000000000000000");
    let full = SkbContext::new(&data, &SkbMeta::default());
    let short = SkbContext::new(&data[..4], &SkbMeta::default());
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR, 2, 3), &full), 6);
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR, 2, 3), &short), 0);
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR, 2, 9), &full), 0, "absent type");
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR, 17, 3), &full), 0, "a > len - 4");
    // `a == len - 4`: the last header fits exactly (bpf_skb_get_nlattr()'s
    // `A > skb->len - sizeof(struct nlattr)` lets it through).
    let last = SkbContext::new(&hex("ffffffff04000300"), &SkbMeta::default());
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR, 4, 3), &last), 4);
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR, 5, 3), &last), 0);
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR, -1, 3), &last), 0, "a is unsigned");
    // An attribute longer than the bytes left fails nla_ok(); the search
    // walks every attribute up to the packet's end.
    // (nla_len 12: more than the 8 bytes from a, fewer than len + a.)
    let long = SkbContext::new(&hex("ffff0c00030000000000"), &SkbMeta::default());
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR, 2, 3), &long), 0);
    let fourth = SkbContext::new(&hex("ffff0400010004000100040001000400030000000000"), &SkbMeta::default());
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR, 2, 3), &fourth), 14);
    let nest = hex("ffff0c0001000400020004000300000000000000");
    let full = SkbContext::new(&nest, &SkbMeta::default());
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR_NEST, 2, 3), &full), 10);
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR_NEST, 2, 2), &full), 6);
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR_NEST, 2, 3), &SkbContext::new(&nest[..4], &SkbMeta::default())), 0);
    // The nest ends where its own length says: an attribute after it is
    // not in it; a nest longer than the bytes after `a` fails nla_ok().
    let nest_then_more = SkbContext::new(&hex("ffff08000100040002000400030000000000000000"), &SkbMeta::default());
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR_NEST, 2, 2), &nest_then_more), 6);
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR_NEST, 2, 3), &nest_then_more), 0, "after the nest");
    // (nla_len 22: more than the 20 bytes from a, fewer than len + a.)
    let too_long = SkbContext::new(&hex("ffff1600010004000300000000000000000000000000"), &SkbMeta::default());
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR_NEST, 2, 3), &too_long), 0, "nla_len past the packet");
    // Non-linear buffers give 0.
    let paged = SkbContext::new(&nest, &SkbMeta { headlen: Some(10), ..SkbMeta::default() });
    assert_eq!(run(&anc(helper::SKB_GET_NLATTR_NEST, 2, 3), &paged), 0);
}

#[test]
fn pay_offset_cpu_and_random() {
    // lib/test_bpf.c LD_PAYLOAD_OFF: Ethernet + IPv4 + ICMP.
    let data = hex(concat!(
        "000000000000000000000000080045000054ac8b40004001901b7f000001000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000",
        "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    ));
    // The caller computes the payload offset (cbpf::Skb::payload_offset():
    // 14 + 20 + 8 = 42 on the whole packet, 0 when the IPv4 header is cut
    // at 30 bytes); the helper returns what the context holds.
    let skb =
        |len: usize, pay_offset: u32| SkbContext::new(&data[..len], &SkbMeta { pay_offset, ..SkbMeta::default() });
    assert_eq!(run(&anc(helper::SKB_GET_PAY_OFFSET, 0, 0), &skb(100, 42)), 42);
    assert_eq!(run(&anc(helper::SKB_GET_PAY_OFFSET, 0, 0), &skb(30, 0)), 0);
    assert_eq!(run(&[i(0x61, 0, 1, skb::OFF_PAY_OFFSET, 0), EXIT], &skb(100, 42)), 42, "context field");
    assert_eq!(run(&anc(helper::SKB_GET_PAY_OFFSET, 0, 0), &SkbContext::new(&data, &SkbMeta::default())), 0);
    let meta = SkbMeta { cpu: 3, random: 0xdead_beef, ..SkbMeta::default() };
    let s = SkbContext::new(&[0u8; 4], &meta);
    assert_eq!(run(&anc(helper::GET_RAW_CPU_ID, 0, 0), &s), 3);
    assert_eq!(run(&anc(helper::USER_RND_U32, 0, 0), &s), 0xdead_beef);
}

#[test]
fn helpers_without_a_socket_buffer_fail_cleanly() {
    let prog = Program::load(&anc(helper::SKB_GET_NLATTR, 0, 0), &LoadOptions::default(), &Helpers::socket()).unwrap();
    let err = Vm::new().run(&prog, Input::None).unwrap_err();
    assert!(matches!(err, ebpf::ExecError::Helper { .. }), "{err}");
    // Unknown helper ids are refused at load.
    assert!(Program::load(&anc(0x2000, 0, 0), &LoadOptions::default(), &Helpers::socket()).is_err());
}
