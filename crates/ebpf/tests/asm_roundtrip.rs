#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Round trips: `assemble(disassemble(p)) == p` for every instruction form
//! the syntax has, and the disassembler never prints text that assembles to
//! something else.

use ebpf::asm::assemble;
use ebpf::disasm::disassemble;
use ebpf::Insn;
use proptest::prelude::*;

/// How a form fills a field.
#[derive(Debug, Clone, Copy)]
enum Field {
    Zero,
    Any,
    Fixed(i32),
}

#[derive(Debug, Clone, Copy)]
struct Form {
    code: u8,
    dst: bool,
    src: Field,
    off: Field,
    imm: Field,
}

const fn form(code: u8, dst: bool, src: Field, off: Field, imm: Field) -> Form {
    Form { code, dst, src, off, imm }
}

/// Every single-slot instruction form the assembly syntax can express.
fn forms() -> Vec<Form> {
    use Field::{Any, Fixed, Zero};
    let mut v = Vec::new();
    for class in [0x04u8, 0x07] {
        for op in [0x00u8, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x90, 0xa0, 0xb0, 0xc0] {
            v.push(form(class | op, true, Zero, Zero, Any));
            v.push(form(class | op | 0x08, true, Any, Zero, Zero));
        }
        for op in [0x30u8, 0x90] {
            v.push(form(class | op, true, Zero, Fixed(1), Any));
            v.push(form(class | op | 0x08, true, Any, Fixed(1), Zero));
        }
        v.push(form(class | 0x80, true, Zero, Zero, Zero));
        for width in [16, 32, 64] {
            v.push(form(class | 0xd0, true, Zero, Zero, Fixed(width)));
        }
    }
    for width in [16, 32, 64] {
        v.push(form(0xdc, true, Zero, Zero, Fixed(width)));
    }
    for off in [8, 16, 32] {
        v.push(form(0xbf, true, Any, Fixed(off), Zero));
    }
    for off in [8, 16] {
        v.push(form(0xbc, true, Any, Fixed(off), Zero));
    }
    for size in [0x00u8, 0x08, 0x10, 0x18] {
        v.push(form(0x61 | size, true, Any, Any, Zero));
        v.push(form(0x62 | size, true, Zero, Any, Any));
        v.push(form(0x63 | size, true, Any, Any, Zero));
        v.push(form(0x20 | size, false, Zero, Zero, Any));
        v.push(form(0x40 | size, false, Any, Zero, Any));
        if size != 0x18 {
            v.push(form(0x81 | size, true, Any, Any, Zero));
        }
    }
    for code in [0xc3u8, 0xdb] {
        for imm in [0x00, 0x01, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe1, 0xf1] {
            v.push(form(code, true, Any, Any, Fixed(imm)));
        }
    }
    v.push(form(0x05, false, Zero, Any, Zero));
    v.push(form(0x06, false, Zero, Zero, Any));
    v.push(form(0x85, false, Zero, Zero, Any));
    v.push(form(0x85, false, Fixed(1), Zero, Any));
    v.push(form(0x85, false, Fixed(2), Zero, Any));
    v.push(form(0x8d, true, Zero, Zero, Zero));
    v.push(form(0x95, false, Zero, Zero, Zero));
    for class in [0x05u8, 0x06] {
        for op in [0x10u8, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0xa0, 0xb0, 0xc0, 0xd0] {
            v.push(form(class | op, true, Zero, Any, Any));
            v.push(form(class | op | 0x08, true, Any, Any, Zero));
        }
    }
    v
}

fn build(f: Form, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    let pick = |field: Field, any: i32| match field {
        Field::Zero => 0,
        Field::Any => any,
        Field::Fixed(x) => x,
    };
    Insn::new(
        f.code,
        if f.dst { dst } else { 0 },
        pick(f.src, i32::from(src)) as u8,
        pick(f.off, i32::from(off)) as i16,
        pick(f.imm, imm),
    )
}

/// One valid instruction (or an `lddw` pair) from a selector and field values.
fn valid_insn() -> impl Strategy<Value = Vec<Insn>> {
    let forms = forms();
    let count = forms.len();
    (0..=count, 0u8..=10, 0u8..=10, any::<i16>(), any::<i32>(), any::<i32>()).prop_map(
        move |(which, dst, src, off, imm, hi)| match forms.get(which) {
            Some(&f) => vec![build(f, dst, src, off, imm)],
            None => vec![Insn::new(0x18, dst, 0, 0, imm), Insn::new(0, 0, 0, 0, hi)],
        },
    )
}

#[test]
fn every_form_disassembles_and_round_trips_at_edges() {
    let mut failures = Vec::new();
    for f in forms() {
        for (dst, src, off, imm) in
            [(0, 0, 0, 0), (10, 10, -1, -1), (1, 2, i16::MIN, i32::MIN), (9, 3, i16::MAX, i32::MAX)]
        {
            let insn = build(f, dst, src, off, imm);
            match disassemble(&[insn]) {
                Ok(text) => match assemble(&text) {
                    Ok(p) if p == [insn] => {}
                    other => failures.push(format!("{insn:?}: {text:?} -> {other:?}")),
                },
                Err(e) => failures.push(format!("{insn:?}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} forms fail:\n{}", failures.len(), failures.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// `assemble(disassemble(p)) == p` for sequences of valid instructions.
    #[test]
    fn valid_programs_round_trip(parts in proptest::collection::vec(valid_insn(), 1..24)) {
        let prog: Vec<Insn> = parts.into_iter().flatten().collect();
        let text = disassemble(&prog).unwrap();
        prop_assert_eq!(assemble(&text).unwrap(), prog, "{}", text);
    }

    /// Whatever the disassembler prints assembles back to the same bytes;
    /// anything else it refuses.
    #[test]
    fn disassembler_never_lies(code in any::<u8>(), regs in any::<u8>(),
                               off in prop_oneof![Just(0i16), any::<i16>()],
                               imm in prop_oneof![Just(0i32), Just(16), Just(0xe1), any::<i32>()]) {
        let insn = Insn { code, regs, off, imm };
        let prog = [insn, Insn::new(0, 0, 0, 0, 7)];
        let slots = if code == 0x18 { 2 } else { 1 };
        if let Ok(text) = disassemble(&prog[..slots]) {
            prop_assert_eq!(assemble(&text).unwrap(), prog[..slots].to_vec(), "{}", text);
        }
    }
}
