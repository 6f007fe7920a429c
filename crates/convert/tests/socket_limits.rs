//! Issue 13 finding 8: a classic program `cbpf::validate` accepts can still be
//! refused by the kernel's conversion on attach (`bpf_convert_filter()`
//! cannot encode a jump offset in 16 bits). `check_attach` says so.

use cbpf::{validate, Insn, Mode};

/// `ja +n`, `n` × `ld [14]`, `ret #0`: n + 2 instructions. (Any `k` in
/// 1..2^31-ish gives the same boundary; `ld [0]` converts shorter and
/// moves it to 2520.)
pub fn ja_over_loads(n: usize) -> Vec<Insn> {
    let mut p = vec![Insn::stmt(0x05, n as u32)];
    p.extend(std::iter::repeat_n(Insn::stmt(0x20, 14), n));
    p.push(Insn::stmt(0x06, 0));
    p
}

#[test]
fn socket_boundary_is_2340_loads() {
    let ok = validate(&ja_over_loads(2340), Mode::Socket).unwrap();
    convert::check_attach(&ok).unwrap();
    let bad = validate(&ja_over_loads(2341), Mode::Socket).unwrap();
    assert_eq!(bad.len(), 2343);
    let e = convert::check_attach(&bad).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("bpf_convert_filter"), "{msg}");
    assert_eq!(e.pc().map(|p| p.0), Some(0), "{msg}");
    assert!(msg.starts_with("insn 0"), "{msg}");
    // Same verdict as convert().
    assert!(convert::convert(&bad, &convert::Options::default()).is_err());
}

#[test]
fn seccomp_filters_are_converted_too() {
    // seccomp allows only `ld [k]` of seccomp_data; the limit still exists:
    // `ja` over many 1:1 loads reaches 32767 only past 4096 instructions,
    // so a valid seccomp filter always converts. Check the largest shape.
    let mut p = vec![Insn::stmt(0x05, 4094)];
    p.extend(std::iter::repeat_n(Insn::stmt(0x20, 4), 4094));
    p.push(Insn::stmt(0x06, 0x7fff_0000));
    let prog = validate(&p, Mode::Seccomp).unwrap();
    convert::check_attach(&prog).unwrap();
}
