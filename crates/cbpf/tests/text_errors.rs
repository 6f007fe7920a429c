#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Every ParseError case, with the line:column it must report.

use cbpf::text::{parse, Format, ParseError};

fn err(text: &str, format: Format) -> ParseError {
    match parse(text.as_bytes(), format) {
        Ok(p) => panic!("{text:?} parsed as {p:?}"),
        Err(e) => e,
    }
}

fn at(e: &ParseError) -> (usize, usize) {
    (e.line(), e.col())
}

/// Each text is refused, in its format, with an error `is` accepts, at its
/// `(line, col)`.
fn refused_at(cases: &[(&str, Format, (usize, usize))], is: fn(&ParseError) -> bool) {
    for &(text, format, pos) in cases {
        let e = err(text, format);
        assert!(is(&e), "{text:?}: {e}");
        assert_eq!(at(&e), pos, "{text:?}: {e}");
    }
}

#[test]
fn garbage_text() {
    let e = err("ld [12]\n  @", Format::Asm);
    assert!(matches!(e, ParseError::UnexpectedChar { ch: '@', .. }), "{e}");
    assert_eq!(at(&e), (2, 3));
    assert_eq!(e.to_string(), "2:3: unexpected character '@'");
    // A lone letter is not a token (labels need two characters).
    assert_eq!(at(&err("ret #0\nq", Format::Asm)), (2, 1));
    // Column counts characters, not bytes.
    let e = err("ld #1 ; é\né", Format::Asm);
    assert_eq!(at(&e), (2, 1));
    let e = err("{ 0x6, 0, 0, 0 } @", Format::C);
    assert_eq!(at(&e), (1, 18));
    let e = err("1\n6 0 x 0", Format::Ddd);
    assert_eq!(at(&e), (2, 5));
}

#[test]
fn syntax_errors_say_what_was_expected() {
    let e = err("ld [12\nret #0", Format::Asm);
    assert!(matches!(e, ParseError::Syntax { .. }), "{e}");
    assert_eq!(at(&e), (2, 1));
    assert_eq!(e.to_string(), "2:1: expected `]`, found `ret`");
    assert_eq!(at(&err("  jlt #1, a1, b1\na1: b1: ret #0", Format::Asm)), (1, 13));
    assert_eq!(at(&err("ret #0\nfoo:", Format::Asm)), (2, 5));
    assert_eq!(at(&err("ret 5", Format::Asm)), (1, 5));
    assert_eq!(at(&err("add a", Format::Asm)), (1, 5));
    assert_eq!(at(&err("{ 0x6, 0, 0 }", Format::C)), (1, 1));
    assert_eq!(at(&err("BPF_STMT(6)", Format::C)), (1, 1));
    assert_eq!(at(&err("{ 6, 0, 0, 1 2 }", Format::C)), (1, 14));
    assert_eq!(at(&err("2\n6 0 0\n6 0 0 0", Format::Ddd)), (2, 1));
}

#[test]
fn unterminated_block_comment() {
    let e = err("ret #0\n /* abc", Format::Asm);
    assert!(matches!(e, ParseError::UnterminatedComment { .. }), "{e}");
    assert_eq!(at(&e), (2, 2));
    assert_eq!(at(&err("{ 6, 0, 0, 0 },\n\n   /*", Format::C)), (3, 4));
}

#[test]
fn label_defined_twice() {
    let e = err("aa: ld #1\naa: ret #1", Format::Asm);
    assert_eq!(e, ParseError::DuplicateLabel { line: 2, col: 1, label: "aa".into(), first_line: 1, first_col: 1 });
}

#[test]
fn label_never_defined() {
    let e = err("jeq #1, nowhere\nret #0", Format::Asm);
    assert_eq!(e, ParseError::UndefinedLabel { line: 1, col: 9, label: "nowhere".into() });
    assert_eq!(at(&err("ld #0\n  ja gone\nret #0", Format::Asm)), (2, 6));
}

#[test]
fn jump_target_out_of_range() {
    // A label before (or at) the jump.
    let e = err("top: ld #1\njeq #1, top\nret #0", Format::Asm);
    assert!(matches!(e, ParseError::BackwardJump { pc: 1, target: 0, .. }), "{e}");
    assert_eq!(at(&e), (2, 9));
    assert_eq!(at(&err("ld #1\nself: ja self\nret #0", Format::Asm)), (2, 10));
    assert_eq!(at(&err("ld #1\ntt: jge #1, ff, tt\nff: ret #0", Format::Asm)), (2, 17));
    // One-letter labels do not exist: `t` is not a token.
    assert_eq!(at(&err("ld #1\nja t\nt: ret #0", Format::Asm)), (2, 4));
    // More than 255 ahead for jt/jf.
    let text = format!("ld #0\njset #1, far\n{}far: ret #0\n", "ld #0\n".repeat(256));
    let e = err(&text, Format::Asm);
    assert!(matches!(e, ParseError::JumpTooFar { pc: 1, target: 258, .. }), "{e}");
    assert_eq!(at(&e), (2, 10));
}

#[test]
fn number_out_of_range() {
    let cases = [
        ("ld #4294967296", Format::Asm, (1, 5)),
        ("ld #0x100000000", Format::Asm, (1, 5)),
        ("ret #0\nld #-2147483649", Format::Asm, (2, 5)),
        ("ld #99999999999999999999999", Format::Asm, (1, 5)),
        (".raw 0x10000, 0, 0, 0", Format::Asm, (1, 6)),
        (".raw 6, 256, 0, 0", Format::Asm, (1, 9)),
        ("{ 0x10000, 0, 0, 0 }", Format::C, (1, 3)),
        ("{ 6, 0, 256, 0 }", Format::C, (1, 9)),
        ("{ 6, 0, 0, 0x100000000 }", Format::C, (1, 12)),
        ("{ 6, 0, 0, -0x80000001 }", Format::C, (1, 12)),
        ("{ 6, 0, 0, 0x1ffffffffffffffff }", Format::C, (1, 12)),
        ("{1,2,3,4,5,6,7,256}", Format::C, (1, 16)),
        ("1\n6 0 0 4294967296", Format::Ddd, (2, 7)),
        ("1\n65536 0 0 0", Format::Ddd, (2, 1)),
        ("1\n6 0 256 0", Format::Ddd, (2, 5)),
    ];
    refused_at(&cases, |e| matches!(e, ParseError::NumberOutOfRange { .. }));
}

#[test]
fn malformed_numbers() {
    let cases = [
        ("ld #08", Format::Asm, (1, 5)),
        ("ld #12ab", Format::Asm, (1, 5)),
        ("{ 6, 0, 0, 09 }", Format::C, (1, 12)),
        ("1\n6 0 0 1x", Format::Ddd, (2, 7)),
    ];
    refused_at(&cases, |e| matches!(e, ParseError::MalformedNumber { .. }));
}

#[test]
fn ldxb_needs_four_and_0xf() {
    let e = err("ret #0\nldxb 5*([14]&0xf)", Format::Asm);
    assert_eq!(e, ParseError::BadMsh { line: 2, col: 6 });
    assert_eq!(at(&err("ldx 4*([14]&0xe)", Format::Asm)), (1, 5));
}

#[test]
fn c_unknown_identifier_and_bad_arithmetic() {
    let e = err("BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_BOGUS)", Format::C);
    assert_eq!(e, ParseError::UnknownIdentifier { line: 1, col: 25, name: "SECCOMP_RET_BOGUS".into() });
    // Function-like macros are not expanded: an error, never a silent drop.
    let e = err("struct sock_filter f[] = {\n  BPF_STMT(6, 0),\n  ALLOW(read),\n};", Format::C);
    assert_eq!(at(&e), (3, 3));
    let e = err("{ 6, 0, 0, 1 / 0 }", Format::C);
    assert!(matches!(e, ParseError::BadExpression { what: "division by zero", .. }), "{e}");
    assert_eq!(at(&e), (1, 14));
    let e = err("{ 6, 0, 0, 0x7fffffffffffffff + 1 }", Format::C);
    assert!(matches!(e, ParseError::BadExpression { what: "overflow", .. }), "{e}");
    let e = err("{ 6, 0, 0, offsetof(struct seccomp_data, args[6]) }", Format::C);
    assert_eq!(at(&e), (1, 47));
    // Self-referential and exponential macros stop.
    assert!(parse(b"#define A A\n{ 6, 0, 0, A }", Format::C).is_err());
    let mut bomb = String::from("#define M0 1\n");
    for i in 1..40 {
        bomb.push_str(&format!("#define M{i} M{} M{}\n", i - 1, i - 1));
    }
    bomb.push_str("{ 6, 0, 0, M39 }");
    assert!(parse(bomb.as_bytes(), Format::C).is_err());
}

#[test]
fn count_mismatch() {
    let e = err("3\n6 0 0 0\n", Format::Ddd);
    assert_eq!(e, ParseError::CountMismatch { line: 1, col: 1, count: 3, found: 1 });
    assert_eq!(at(&err("  1 2\n6 0 0 0", Format::Ddd)), (1, 3));
}

#[test]
fn empty_programs() {
    let cases = [
        ("", Format::Asm, (1, 1)),
        ("; only a comment\n", Format::Asm, (2, 1)),
        ("struct sock_filter f[] = {};", Format::C, (1, 29)),
        ("0\n", Format::Ddd, (1, 1)),
        ("", Format::Ddd, (1, 1)),
    ];
    refused_at(&cases, |e| matches!(e, ParseError::Empty { .. }));
}

#[test]
fn invalid_utf8_and_raw_framing() {
    let e = parse(b"ret #0\nld \xff", Format::Asm).unwrap_err();
    assert_eq!(e, ParseError::InvalidUtf8 { line: 2, col: 4 });
    let e = parse(&[6, 0, 0, 0, 0, 0, 0, 0, 1, 2], Format::Raw).unwrap_err();
    assert!(matches!(e, ParseError::Raw { line: 1, col: 9, .. }), "{e}");
    assert!(matches!(parse(&[], Format::Raw).unwrap_err(), ParseError::Raw { line: 1, col: 1, .. }));
}
