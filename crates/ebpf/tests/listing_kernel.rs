#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Listing lines checked against the format strings of `print_bpf_insn()` in
//! kernel/bpf/disasm.c (Linux 6.18), one case per branch of that function.

use ebpf::listing::{format_insn, format_insn_with, kernel_helper_name, listing, listing_with, skb_helper_name};
use ebpf::skb::helper;
use ebpf::Insn;

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}

/// (line number, instruction, expected kernel text) for every branch of
/// `print_bpf_insn()`, from testdata/listing/print_bpf_insn.txt (`code dst
/// src off imm | text` lines, `#` comments).
fn cases() -> Vec<(usize, Insn, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/listing/print_bpf_insn.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let number = |w: &str| -> i64 {
        let (neg, w) = w.strip_prefix('-').map_or((false, w), |w| (true, w));
        let v = match w.strip_prefix("0x") {
            Some(hex) => i64::from_str_radix(hex, 16).unwrap(),
            None => w.parse().unwrap(),
        };
        if neg {
            -v
        } else {
            v
        }
    };
    let mut cases = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (fields, want) = line.split_once(" | ").unwrap_or_else(|| panic!("line {}: no ` | `", n + 1));
        let w: Vec<&str> = fields.split_whitespace().collect();
        assert_eq!(w.len(), 5, "line {}: code dst src off imm", n + 1);
        let code = u8::from_str_radix(w[0], 16).unwrap();
        let insn = i(code, number(w[1]) as u8, number(w[2]) as u8, number(w[3]) as i16, number(w[4]) as i32);
        cases.push((n + 1, insn, want.to_string()));
    }
    cases
}

#[test]
fn every_print_bpf_insn_branch() {
    let mut failures = Vec::new();
    let cases = cases();
    assert_eq!(cases.len(), 104, "cases in testdata/listing/print_bpf_insn.txt");
    for (line, insn, want) in cases {
        let got = format_insn(&insn, None);
        if got != want {
            failures.push(format!("line {line}: {insn:?}: got {got:?}, want {want:?}"));
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
