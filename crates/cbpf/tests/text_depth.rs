#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Issue 13 finding 5: every recursive part of the C reader has a depth
//! limit (256) and macro expansion a work budget; errors carry line:col.

use std::time::{Duration, Instant};

use cbpf::text::{parse, parse_auto, Format, ParseError};

fn c(text: &str) -> Result<usize, ParseError> {
    parse(text.as_bytes(), Format::C).map(|p| p.len())
}

fn pos(e: &ParseError) -> (usize, usize) {
    (e.line(), e.col())
}

const PREFIX: &str = "{ 0x06, 0, 0, ";

/// The C reader refuses `text` at `(line, col)` naming the limit of 256,
/// and so does auto-detection (which sends it to the same reader).
fn refused_at(text: &str, at: (usize, usize)) {
    let e = c(text).unwrap_err();
    assert_eq!(pos(&e), at, "{e}");
    assert!(e.to_string().contains("256"), "{e}");
    assert!(parse_auto(text.as_bytes()).is_err());
}

#[test]
fn nested_tilde_is_refused_at_the_257th() {
    refused_at(&format!("{PREFIX}{}0 }},\n", "~".repeat(80_000)), (1, PREFIX.len() + 257));
}

#[test]
fn nested_parens_are_refused_at_the_257th() {
    let n = 100_000;
    refused_at(&format!("{PREFIX}{}1{} }},\n", "(".repeat(n), ")".repeat(n)), (1, PREFIX.len() + 257));
}

#[test]
fn nested_groups_are_refused_at_the_257th() {
    let n = 100_000;
    refused_at(&format!("{}{}\n", "{ x ".repeat(n), "}".repeat(n)), (1, 4 * 256 + 1));
}

#[test]
fn define_chain_is_refused_at_the_use() {
    let n = 10_000;
    let mut text = String::from("#define A0 6\n");
    for i in 1..n {
        text.push_str(&format!("#define A{i} A{}\n", i - 1));
    }
    text.push_str(&format!("{{ A{}, 0, 0, 0 }},\n", n - 1));
    refused_at(&text, (n + 1, 3));
}

#[test]
fn exponential_defines_hit_the_budget() {
    let mut text = String::from("#define A0 1\n");
    for i in 1..=60 {
        text.push_str(&format!("#define A{i} (A{p}+A{p})\n", p = i - 1));
    }
    text.push_str("{ 6, 0, 0, A60 },\n");
    // The budget error is what bounds the work; the clock only catches a
    // hang (a loaded CI machine must not make it flaky).
    let t = Instant::now();
    let e = c(&text).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert_eq!(pos(&e), (62, 12), "{e}");
    assert!(e.to_string().contains("budget"), "{e}");
}

#[test]
fn realistic_nesting_still_parses() {
    let n = 50;
    let tilde = format!("{{ 0x06, 0, 0, {}0 }},\n", "~~".repeat(n / 2));
    assert_eq!(c(&tilde).unwrap(), 1);
    let parens = format!("{{ 0x06, 0, 0, {}1{} }},\n", "(".repeat(n), ")".repeat(n));
    assert_eq!(c(&parens).unwrap(), 1);
    let mixed = format!("{{ 0x06, 0, 0, {}1{} }},\n", "-(~(".repeat(n / 4), "))".repeat(n / 4));
    assert_eq!(c(&mixed).unwrap(), 1);
    let mut defs = String::from("#define A0 6\n");
    for i in 1..n {
        defs.push_str(&format!("#define A{i} (A{} | 0)\n", i - 1));
    }
    defs.push_str(&format!("{{ A{}, 0, 0, 0 }},\n", n - 1));
    assert_eq!(parse(defs.as_bytes(), Format::C).unwrap(), vec![cbpf::Insn::stmt(6, 0)]);
    let groups = format!("{}{{ 6, 0, 0, 0 }}{}\n", "{ x ".repeat(n), "}".repeat(n));
    assert_eq!(c(&groups).unwrap(), 1);
    // Exactly at the limit.
    let at_limit = format!("{PREFIX}{}0 }},\n", "~".repeat(256));
    assert_eq!(c(&at_limit).unwrap(), 1);
    let over = format!("{PREFIX}{}0 }},\n", "~".repeat(257));
    assert!(c(&over).is_err());
}

/// Both macro budgets are exact: 2^20 macro-body tokens visited over the
/// whole text (here expanding to nothing, so only this budget can stop
/// them), and 2^20 + 1 tokens out (the check runs before each token is
/// added: one past the budget is the last it lets in).
#[test]
fn macro_budgets_are_exact() {
    let empties = vec!["E"; 1024].join(" ");
    let uses = vec!["Z"; 1024].join(" ");
    let work = |extra: &str| format!("#define E\n#define Y E\n#define Z {empties}\n{uses} {extra}\n{{ 6, 0, 0, 5 }}\n");
    assert_eq!(c(&work("")), Ok(1));
    let e = c(&work("Y")).unwrap_err();
    assert_eq!(
        e,
        ParseError::BadExpression {
            line: 4,
            col: 2 * 1024 + 1,
            what: "macro expansion over its budget of 1048576 tokens (limit)"
        }
    );
    // `void f ( void ) {` (6), 1023 uses of 1024 `;`, `n` more `;`, `}`,
    // and `{ 6 , 0 , 0 , 5 }` (9): 1,047,568 + n tokens out.
    let semis = vec![";"; 1024].join(" ");
    let out = |n: usize| {
        format!(
            "#define S {semis}\nvoid f(void) {{ {} {} }}\n{{ 6, 0, 0, 5 }}\n",
            vec!["S"; 1023].join(" "),
            ";".repeat(n)
        )
    };
    assert_eq!(c(&out(1009)), Ok(1));
    let e = c(&out(1010)).unwrap_err();
    // The token refused is the last: the closing brace of `{ 6, 0, 0, 5 }`.
    assert_eq!(
        e,
        ParseError::BadExpression {
            line: 3,
            col: 14,
            what: "macro expansion over its budget of 1048576 output tokens (limit)"
        }
    );
}

/// No 1 MiB text makes the reader hang. (Its cost is linear by
/// construction; the clock here is only a generous hang guard, the CLI's
/// bounded_work test holds the real limits.)
#[test]
fn one_mib_texts_are_cheap() {
    let limit = Duration::from_secs(60);
    let mib = 1 << 20;
    let mut shapes: Vec<String> = Vec::new();
    // Many uses of a 256-deep chain.
    let mut s = String::from("#define A0 6\n");
    for i in 1..255 {
        s.push_str(&format!("#define A{i} A{}\n", i - 1));
    }
    while s.len() < mib {
        s.push_str("{ A254, 0, 0, 0 },\n");
    }
    shapes.push(s);
    // A macro used many times, each 2^k tokens.
    let mut s = String::from("#define B0 1\n");
    for i in 1..12 {
        s.push_str(&format!("#define B{i} (B{p}+B{p})\n", p = i - 1));
    }
    while s.len() < mib {
        s.push_str("{ 6, 0, 0, B11 },\n");
    }
    shapes.push(s);
    // Deep groups and deep expressions, repeated.
    let unit =
        format!("{}{{ 6, 0, 0, {}1{} }}{}\n", "{ x ".repeat(200), "(".repeat(200), ")".repeat(200), "}".repeat(200));
    shapes.push(unit.repeat(mib / unit.len() + 1));
    shapes.push("(".repeat(mib));
    shapes.push("{ x ".repeat(mib / 4));
    shapes.push(format!("{{ 6, 0, 0, {}", "~".repeat(mib)));
    for (i, s) in shapes.iter().enumerate() {
        let t = Instant::now();
        let _ = parse_auto(s.as_bytes());
        let _ = parse(s.as_bytes(), Format::C);
        assert!(t.elapsed() < limit, "shape {i}: {:?}", t.elapsed());
    }
}
