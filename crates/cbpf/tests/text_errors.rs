#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Every ParseError case, with the line:column it must report.

use cbpf::text::{parse, Format, ParseError};

/// Refused texts: the format they are parsed in, the `(line, col)` the error
/// must name, and the error's kind (its variant).
const REFUSED: &[(&str, Format, (usize, usize), &str)] = &[
    // Garbage.
    ("ret #0\n@", Format::Asm, (2, 1), "UnexpectedChar"),
    // A lone letter other than a register is not a token (bpf_exp.l: labels
    // need two characters).
    ("ret #0\nq", Format::Asm, (2, 1), "OneLetterWord"),
    // Column counts characters, not bytes.
    ("ld #1 ; é\né", Format::Asm, (2, 1), "UnexpectedChar"),
    ("{ 0x6, 0, 0, 0 } @", Format::C, (1, 18), "UnexpectedChar"),
    // A backslash splices only a newline; `#` is a directive only first on its line.
    ("{ 6, 0, 0, \\ 5 }", Format::C, (1, 12), "UnexpectedChar"),
    ("{ 6, 0, 0, \\\r 5 }", Format::C, (1, 12), "UnexpectedChar"),
    ("{ 6, 0, 0, 0 } #", Format::C, (1, 16), "UnexpectedChar"),
    ("#define K # 5\n{ 6, 0, 0, K }", Format::C, (1, 11), "UnexpectedChar"),
    // A string or character literal left open, at its quote.
    ("{ 6, 0, 0, 5 }\nchar *s = \"ab\\\"", Format::C, (2, 11), "UnexpectedChar"),
    ("{ 6, 0, 0, 5 }\nchar *s = \"ab\ncd\";", Format::C, (2, 11), "UnexpectedChar"),
    ("#define Q 'a\n{ 6, 0, 0, 5 }", Format::C, (1, 11), "UnexpectedChar"),
    // `#define F(x)` is function-like: never expanded, its use unknown.
    ("#define F(x) x\n{ 6, 0, 0, F(5) }", Format::C, (2, 12), "UnknownIdentifier"),
    ("1\n6 0 x 0", Format::Ddd, (2, 5), "UnexpectedChar"),
    // One-letter labels do not exist: `t` is not a token, `a` a register.
    ("ld #1\nja t\nt: ret #0", Format::Asm, (2, 4), "OneLetterWord"),
    ("ld [0]\njeq #15, a, bb\nbb: ret #0", Format::Asm, (2, 10), "Syntax"),
    // Syntax errors say what was expected.
    ("ld [12\nret #0", Format::Asm, (2, 1), "Syntax"),
    ("  jlt #1, a1, b1\na1: b1: ret #0", Format::Asm, (1, 13), "Syntax"),
    ("ret #0\nfoo:", Format::Asm, (2, 5), "Syntax"),
    ("ret 5", Format::Asm, (1, 5), "Syntax"),
    ("add a", Format::Asm, (1, 5), "Syntax"),
    ("{ 0x6, 0, 0 }", Format::C, (1, 1), "Syntax"),
    ("BPF_STMT(6)", Format::C, (1, 1), "Syntax"),
    ("{ 6, 0, 0, 1 2 }", Format::C, (1, 14), "Syntax"),
    ("2\n6 0 0\n6 0 0 0", Format::Ddd, (2, 1), "Syntax"),
    ("  1 2\n6 0 0 0", Format::Ddd, (1, 3), "Syntax"),
    // An unterminated block comment.
    ("ret #0\n /* abc", Format::Asm, (2, 2), "UnterminatedComment"),
    ("{ 6, 0, 0, 0 },\n\n   /*", Format::C, (3, 4), "UnterminatedComment"),
    // A label never defined.
    ("ld #0\n  ja gone\nret #0", Format::Asm, (2, 6), "UndefinedLabel"),
    // A jump to a label at (or before) the jump.
    ("ld #1\nself: ja self\nret #0", Format::Asm, (2, 10), "BackwardJump"),
    ("ld #1\ntt: jge #1, ff, tt\nff: ret #0", Format::Asm, (2, 17), "BackwardJump"),
    // Numbers out of range.
    ("ld #4294967296", Format::Asm, (1, 5), "NumberOutOfRange"),
    ("ld #0x100000000", Format::Asm, (1, 5), "NumberOutOfRange"),
    ("ret #0\nld #-2147483649", Format::Asm, (2, 5), "NumberOutOfRange"),
    ("ld #99999999999999999999999", Format::Asm, (1, 5), "NumberOutOfRange"),
    (".raw 0x10000, 0, 0, 0", Format::Asm, (1, 6), "NumberOutOfRange"),
    (".raw 6, 256, 0, 0", Format::Asm, (1, 9), "NumberOutOfRange"),
    ("{ 0x10000, 0, 0, 0 }", Format::C, (1, 3), "NumberOutOfRange"),
    ("{ 6, 0, 256, 0 }", Format::C, (1, 9), "NumberOutOfRange"),
    ("{ 6, 0, 0, 0x100000000 }", Format::C, (1, 12), "NumberOutOfRange"),
    ("{ 6, 0, 0, -0x80000001 }", Format::C, (1, 12), "NumberOutOfRange"),
    ("{ 6, 0, 0, 0x1ffffffffffffffff }", Format::C, (1, 12), "NumberOutOfRange"),
    ("{1,2,3,4,5,6,7,256}", Format::C, (1, 16), "NumberOutOfRange"),
    ("1\n6 0 0 4294967296", Format::Ddd, (2, 7), "NumberOutOfRange"),
    ("1\n65536 0 0 0", Format::Ddd, (2, 1), "NumberOutOfRange"),
    ("1\n6 0 256 0", Format::Ddd, (2, 5), "NumberOutOfRange"),
    // Malformed numbers.
    ("ld #08", Format::Asm, (1, 5), "MalformedNumber"),
    ("ld #12ab", Format::Asm, (1, 5), "MalformedNumber"),
    // `0b` with no binary digit after it is a zero glued to a letter.
    ("ld #0b 01", Format::Asm, (1, 5), "MalformedNumber"),
    ("{ 6, 0, 0, 09 }", Format::C, (1, 12), "MalformedNumber"),
    ("{ 6, 0, 0, 0b2 }", Format::C, (1, 12), "MalformedNumber"),
    ("{ 6, 0, 0, 0x }", Format::C, (1, 12), "MalformedNumber"),
    ("{ 6, 0, 0, 12uz }", Format::C, (1, 12), "MalformedNumber"),
    ("1\n6 0 0 1x", Format::Ddd, (2, 7), "MalformedNumber"),
    // `ldxb` needs `4*` and `&0xf`.
    ("ldx 4*([14]&0xe)", Format::Asm, (1, 5), "BadMsh"),
    // Function-like macros are not expanded: an error, never a silent drop.
    ("struct sock_filter f[] = {\n  BPF_STMT(6, 0),\n  ALLOW(read),\n};", Format::C, (3, 3), "UnknownIdentifier"),
    ("{ 6, 0, 0, offsetof(struct seccomp_data, args[6]) }", Format::C, (1, 47), "BadExpression"),
    // Empty programs.
    ("", Format::Asm, (1, 1), "Empty"),
    ("; only a comment\n", Format::Asm, (2, 1), "Empty"),
    ("struct sock_filter f[] = {};", Format::C, (1, 29), "Empty"),
    ("0\n", Format::Ddd, (1, 1), "Empty"),
    ("", Format::Ddd, (1, 1), "Empty"),
];

/// Refused texts whose error is checked whole: what it names besides where.
fn refused_exactly() -> Vec<(String, Format, ParseError)> {
    // More than 255 ahead for jt/jf.
    let far = format!("ld #0\njset #1, far\n{}far: ret #0\n", "ld #0\n".repeat(256));
    vec![
        ("ld [12]\n  @".into(), Format::Asm, ParseError::UnexpectedChar { line: 2, col: 3, ch: '@' }),
        (
            "aa: ld #1\naa: ret #1".into(),
            Format::Asm,
            ParseError::DuplicateLabel { line: 2, col: 1, label: "aa".into(), first_line: 1, first_col: 1 },
        ),
        (
            "jeq #1, nowhere\nret #0".into(),
            Format::Asm,
            ParseError::UndefinedLabel { line: 1, col: 9, label: "nowhere".into() },
        ),
        (
            "top: ld #1\njeq #1, top\nret #0".into(),
            Format::Asm,
            ParseError::BackwardJump { line: 2, col: 9, label: "top".into(), pc: 1, target: 0 },
        ),
        (far, Format::Asm, ParseError::JumpTooFar { line: 2, col: 10, label: "far".into(), pc: 1, target: 258 }),
        ("ret #0\nldxb 5*([14]&0xf)".into(), Format::Asm, ParseError::BadMsh { line: 2, col: 6 }),
        (
            "BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_BOGUS)".into(),
            Format::C,
            ParseError::UnknownIdentifier { line: 1, col: 25, name: "SECCOMP_RET_BOGUS".into() },
        ),
        (
            "{ 6, 0, 0, 1 / 0 }".into(),
            Format::C,
            ParseError::BadExpression { line: 1, col: 14, what: "division by zero" },
        ),
        (
            "{ 6, 0, 0, 0x7fffffffffffffff + 1 }".into(),
            Format::C,
            ParseError::BadExpression { line: 1, col: 31, what: "overflow" },
        ),
        ("3\n6 0 0 0\n".into(), Format::Ddd, ParseError::CountMismatch { line: 1, col: 1, count: 3, found: 1 }),
        // The C reader's arithmetic: what C leaves undefined is refused, at the operator.
        (
            "{ 6, 0, 0, (-0x7fffffffffffffff - 1) / -1 }".into(),
            Format::C,
            ParseError::BadExpression { line: 1, col: 38, what: "overflow" },
        ),
        (
            "{ 6, 0, 0, 1 % 0 }".into(),
            Format::C,
            ParseError::BadExpression { line: 1, col: 14, what: "division by zero" },
        ),
        ("{ 6, 0, 0, 1 << 64 }".into(), Format::C, ParseError::BadExpression { line: 1, col: 14, what: "overflow" }),
        ("{ 6, 0, 0, 1 >> -1 }".into(), Format::C, ParseError::BadExpression { line: 1, col: 14, what: "overflow" }),
        // A value missing is named where it should start.
        (
            "{ 6, 0, 0, 1 + * 2 }".into(),
            Format::C,
            ParseError::Syntax { line: 1, col: 16, expected: "a value".into(), found: "`*`".into() },
        ),
        // `int` alone in parentheses with more is no cast.
        (
            "{ 6, 0, 0, (int + 1) }".into(),
            Format::C,
            ParseError::UnknownIdentifier { line: 1, col: 13, name: "int".into() },
        ),
        // Brackets close in kind; an item of a list is one group.
        (
            "{ 6, 0, 0, (1 }".into(),
            Format::C,
            ParseError::Syntax {
                line: 1,
                col: 15,
                expected: "`)` closing the `(` at 1:12".into(),
                found: "`}`".into(),
            },
        ),
        (
            "{ 6, 0, 0, x[0 }".into(),
            Format::C,
            ParseError::Syntax {
                line: 1,
                col: 16,
                expected: "`]` closing the `[` at 1:13".into(),
                found: "`}`".into(),
            },
        ),
        ("{ 6, 0, 0, x[0] }".into(), Format::C, ParseError::UnknownIdentifier { line: 1, col: 12, name: "x".into() }),
        ("{ 6, 0, 0, f() }".into(), Format::C, ParseError::UnknownIdentifier { line: 1, col: 12, name: "f".into() }),
        (
            "{ { 6, 0, 0, 5 } x }".into(),
            Format::C,
            ParseError::Syntax { line: 1, col: 18, expected: "`,` or `}`".into(), found: "`x`".into() },
        ),
        (
            "{ { .len = 1 } }".into(),
            Format::C,
            ParseError::Syntax {
                line: 1,
                col: 5,
                expected: "`.code`, `.jt`, `.jf` or `.k`".into(),
                found: "`.`".into(),
            },
        ),
        (
            "BPF_STMT;".into(),
            Format::C,
            ParseError::Syntax { line: 1, col: 9, expected: "`(`".into(), found: "`;`".into() },
        ),
        // offsetof knows one struct.
        (
            "{ 6, 0, 0, offsetof(struct sock_fprog, len) }".into(),
            Format::C,
            ParseError::Syntax {
                line: 1,
                col: 28,
                expected: "`struct seccomp_data`".into(),
                found: "`sock_fprog`".into(),
            },
        ),
        // The error quotes the number with all that is glued to it.
        ("1\n6 0 0 1x_y z".into(), Format::Ddd, ParseError::MalformedNumber { line: 2, col: 7, text: "1x_y".into() }),
    ]
}

/// The variant's name, from the derived `Debug`.
fn kind(e: &ParseError) -> String {
    format!("{e:?}").split([' ', '{', '(']).next().unwrap_or_default().to_string()
}

#[test]
fn every_refused_text_names_its_error_and_place() {
    let mut failures = Vec::new();
    for &(text, format, at, want) in REFUSED {
        match parse(text.as_bytes(), format) {
            Ok(p) => failures.push(format!("{text:?} ({format:?}) parsed as {p:?}")),
            Err(e) if kind(&e) != want || (e.line(), e.col()) != at => {
                failures.push(format!("{text:?} ({format:?}): {e:?}, want {want} at {}:{}", at.0, at.1));
            }
            Err(_) => {}
        }
    }
    for (text, format, want) in refused_exactly() {
        match parse(text.as_bytes(), format) {
            Ok(p) => failures.push(format!("{text:?} ({format:?}) parsed as {p:?}")),
            Err(e) if e != want => failures.push(format!("{text:?} ({format:?}): {e:?}, want {want:?}")),
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{} rows fail:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn messages_start_with_the_place() {
    let e = parse(b"ld [12]\n  @", Format::Asm).unwrap_err();
    assert_eq!(e.to_string(), "2:3: unexpected character '@'");
    let e = parse(b"ld [12\nret #0", Format::Asm).unwrap_err();
    assert_eq!(e.to_string(), "2:1: expected `]`, found `ret`");
    let e = parse(b"ld [0]\njeq #15, a, b\n", Format::Asm).unwrap_err();
    let want = "2:13: `b` is neither a register (a, x, M) nor a label (labels have two or more characters)";
    assert_eq!(e.to_string(), want);
    let e = parse(b"ld [0]\njeq #15, X, bb\n", Format::Asm).unwrap_err();
    assert_eq!(e.to_string(), "2:10: expected a label (`a`, `x` and `M` are registers), found `X`");
    // Input that ends where a token is due says so.
    let e = parse(b"ret #0\nld [12", Format::Asm).unwrap_err();
    assert_eq!(e.to_string(), "2:7: expected `]`, found end of input");
    // Two labels before one instruction, against a label with no colon.
    let e = parse(b"ld #1\naa: bb: ret #0", Format::Asm).unwrap_err();
    assert_eq!(e.to_string(), "2:5: expected one label per instruction, then an instruction, found `bb`");
    let e = parse(b"ret #0\nfoo bar", Format::Asm).unwrap_err();
    assert_eq!(e.to_string(), "2:1: expected an instruction, found `foo`");
    // `ldx` takes a packet load only as the `4*([k]&0xf)` header length.
    let e = parse(b"ldx [12]", Format::Asm).unwrap_err();
    assert_eq!(e.to_string(), "1:5: expected `#k`, `len`, `M[k]` or `4*([k]&0xf)`, found `[`");
}

#[test]
fn c_macros_that_never_end_stop() {
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
fn invalid_utf8_and_raw_framing() {
    let e = parse(b"ret #0\nld \xff", Format::Asm).unwrap_err();
    assert_eq!(e, ParseError::InvalidUtf8 { line: 2, col: 4 });
    let e = parse(&[6, 0, 0, 0, 0, 0, 0, 0, 1, 2], Format::Raw).unwrap_err();
    assert!(matches!(e, ParseError::Raw { line: 1, col: 9, .. }), "{e}");
    assert!(matches!(parse(&[], Format::Raw).unwrap_err(), ParseError::Raw { line: 1, col: 1, .. }));
}
