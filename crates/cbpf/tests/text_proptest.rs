#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Property tests: no reader panics on any input, and every program, valid
//! or not, survives print-then-parse in every input syntax.

use cbpf::opcode::*;
use cbpf::text::{detect, parse, print_asm, print_c, print_ddd, print_ddd_line, print_pcap, Format};
use cbpf::{raw, validate, Insn, Mode};
use proptest::prelude::*;

const FORMATS: [Format; 4] = [Format::Raw, Format::C, Format::Ddd, Format::Asm];

/// Pieces of real syntax in all three text formats, glued at random.
const FRAGMENTS: &[&str] = &[
    "ld",
    "ldh",
    "ldb",
    "ldx",
    "ldxb",
    "ldi",
    "ldxi",
    "st",
    "stx",
    "ja",
    "jmp",
    "jeq",
    "jne",
    "jneq",
    "jlt",
    "jle",
    "jgt",
    "jge",
    "jset",
    "add",
    "sub",
    "mul",
    "div",
    "mod",
    "neg",
    "and",
    "or",
    "xor",
    "lsh",
    "rsh",
    "ret",
    "tax",
    "txa",
    ".raw",
    "#",
    "#len",
    "len",
    "#proto",
    "vlan_avail",
    "[",
    "]",
    "x",
    "%x",
    "a",
    "%a",
    "M",
    "M[",
    "+",
    "*",
    "&",
    "(",
    ")",
    "4*([",
    "&0xf)",
    ":",
    ",",
    " ",
    "\n",
    "\t",
    "\r",
    ";",
    "/*",
    "*/",
    "//",
    "0",
    "1",
    "-1",
    "+1",
    "255",
    "256",
    "0x",
    "0xffffffff",
    "0x100000000",
    "017",
    "08",
    "0b1",
    "-2147483649",
    "L1",
    "L2",
    "lbl",
    "lbl:",
    "L1:",
    "{",
    "}",
    "{ 0x6, 0, 0, 0x00000000 },",
    "BPF_STMT(",
    "BPF_JUMP(",
    "BPF_LD|BPF_W|BPF_ABS",
    "BPF_RET+BPF_K",
    "SECCOMP_RET_ALLOW",
    "SECCOMP_RET_ERRNO | 1",
    "AUDIT_ARCH_X86_64",
    "offsetof(struct seccomp_data, nr)",
    "args[",
    "sizeof(",
    "(__u32)",
    "~",
    "<<",
    ">>",
    "/",
    "%",
    "-",
    "#define ",
    "#include <x>",
    "#if 0",
    "\\\n",
    "\"str\"",
    "'c'",
    ".code =",
    ".k =",
    "=",
    "é",
    "\u{0}",
    "4,",
    "6 0 0 0",
    "40 0 0 12,",
    "struct sock_filter f[] = {",
    "};",
];

fn fragment_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40).prop_map(|v| v.concat())
}

/// Any instruction: a known opcode or any 16-bit code, any fields.
fn any_insn() -> impl Strategy<Value = Insn> {
    let code = prop_oneof![
        prop::sample::select(ALLOWED_CODES.to_vec()),
        Just(LDX_W_ABS),
        Just(BPF_RET | BPF_X),
        any::<u16>(),
    ];
    (code, any::<u8>(), any::<u8>(), any::<u32>(), any::<bool>()).prop_map(|(code, jt, jf, k, junk)| {
        // Half the time keep the canonical form so labels get exercised.
        match Insn::jump(code, k, jt, jf).op() {
            Some(op) if !junk => op.to_insn(),
            _ => Insn::jump(code, k, jt, jf),
        }
    })
}

/// A program `validate` accepts in socket mode: every scratch cell is
/// stored first, jumps stay inside, the last instruction returns.
fn valid_program() -> impl Strategy<Value = Vec<Insn>> {
    let body_codes: Vec<u16> = ALLOWED_CODES.iter().copied().filter(|&c| c != RET_K && c != RET_A).collect();
    let body = prop::collection::vec((prop::sample::select(body_codes), any::<u32>(), any::<u8>(), any::<u8>()), 0..80);
    (body, any::<bool>(), any::<u32>()).prop_map(|(body, ret_a, ret_k)| {
        let mut p: Vec<Insn> = (0..16).map(|m| Insn::stmt(ST, m)).collect();
        let n = p.len() + body.len() + 1;
        for (code, k, jt, jf) in body {
            let pc = p.len();
            let left = (n - pc - 2) as u32; // instructions strictly after the next one
            let k = match code {
                ALU_DIV_K | ALU_MOD_K => k.max(1),
                ALU_LSH_K | ALU_RSH_K => k % 32,
                LD_MEM | LDX_MEM | ST | STX => k % 16,
                JMP_JA => k % (left + 1),
                LD_W_ABS | LD_H_ABS | LD_B_ABS if k >= SKF_AD_OFF => SKF_AD_OFF + (k % 16) * 4,
                _ => k,
            };
            let cap = left.min(255) as u8;
            let (jt, jf) =
                if code & 0x07 == BPF_JMP && code != JMP_JA { (jt % (cap + 1), jf % (cap + 1)) } else { (0, 0) };
            p.push(Insn::jump(code, k, jt, jf));
        }
        p.push(if ret_a { Insn::stmt(RET_A, 0) } else { Insn::stmt(RET_K, ret_k) });
        p
    })
}

fn round_trip(p: &[Insn]) -> Result<(), TestCaseError> {
    for (name, text, format) in [
        ("asm", print_asm(p), Format::Asm),
        ("c", print_c(p), Format::C),
        ("ddd", print_ddd(p), Format::Ddd),
        ("ddd-line", print_ddd_line(p), Format::Ddd),
    ] {
        let back = parse(text.as_bytes(), format).map_err(|e| TestCaseError::fail(format!("{name}: {e}\n{text}")))?;
        prop_assert_eq!(&back, p, "{}:\n{}", name, text);
        prop_assert_eq!(detect(text.as_bytes()), format, "{}", name);
    }
    let bytes = raw::encode(p);
    // Raw bytes that happen to be plain text (UTF-8, no NUL, no binary
    // control: `20 0b 20 20 20 3a 39 0a` is one such instruction) are text
    // by `detect`'s documented rule; every other encoding reads as raw.
    let binary = |b: u8| (b < 0x20 && !matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r')) || b == 0x7f;
    let plain_text = !bytes.contains(&0) && std::str::from_utf8(&bytes).is_ok() && !bytes.iter().any(|&b| binary(b));
    if !plain_text {
        prop_assert_eq!(detect(&bytes), Format::Raw);
    }
    let _ = print_pcap(p);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = detect(&bytes);
        for f in FORMATS {
            let _ = parse(&bytes, f);
        }
    }

    #[test]
    fn near_valid_text_never_panics(text in fragment_text()) {
        let _ = detect(text.as_bytes());
        for f in FORMATS {
            if let Err(e) = parse(text.as_bytes(), f) {
                // Positions are 1-based and inside (or just past) the text.
                prop_assert!(e.line() >= 1 && e.col() >= 1);
                prop_assert!(e.line() <= text.split('\n').count().max(1));
            }
        }
    }

    #[test]
    fn random_valid_programs_round_trip(p in valid_program()) {
        prop_assert!(validate(&p, Mode::Socket).is_ok(), "generator made an invalid program");
        round_trip(&p)?;
    }

    #[test]
    fn any_program_round_trips(p in prop::collection::vec(any_insn(), 1..60)) {
        round_trip(&p)?;
    }
}
