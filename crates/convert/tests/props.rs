//! Property tests: any program `cbpf::validate` accepts converts or returns a
//! typed error (never panics), and every converted program is structurally
//! sound: jumps land inside the program, groups tile it, it ends in `exit`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use cbpf::opcode::{ALLOWED_CODES, SKF_AD_OFF, SKF_LL_OFF, SKF_NET_OFF};
use cbpf::{validate, Insn, Mode, Program, ValidateError};
use convert::{convert, ConvertError, Converted, Options};
use proptest::prelude::*;

/// Interesting `k` values: small, shift/mem-sized, sign boundary, negative
/// packet bases, ancillary offsets.
fn k_strategy() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..16,
        0u32..64,
        any::<u32>(),
        Just(0x7fff_ffff),
        Just(0x8000_0000),
        Just(0xffff_ffff),
        (0u32..17).prop_map(|x| SKF_AD_OFF.wrapping_add(4 * x)),
        (0u32..64).prop_map(|x| SKF_NET_OFF + x),
        (0u32..64).prop_map(|x| SKF_LL_OFF + x),
        32700u32..32800,
    ]
}

fn raw_insn() -> impl Strategy<Value = Insn> {
    (0..ALLOWED_CODES.len(), k_strategy(), any::<u8>(), any::<u8>()).prop_map(|(i, k, jt, jf)| Insn {
        code: ALLOWED_CODES[i],
        jt: jt % 8,
        jf: if jf > 200 { jf } else { jf % 8 },
        k,
    })
}

/// Turns random instructions into a program the kernel accepts: jump
/// displacements are clamped, then every instruction validation complains
/// about is replaced by `ld #k` (or the last by `ret a`) until it passes.
fn repair(mut insns: Vec<Insn>, mode: Mode) -> Program {
    let len = insns.len();
    for (i, insn) in insns.iter_mut().enumerate() {
        let room = (len - i - 1) as u32;
        if insn.code == 0x05 {
            insn.k = if room == 0 { 0 } else { insn.k % room };
        } else if insn.code & 0x07 == 0x05 {
            insn.jt = (u32::from(insn.jt) % room.max(1)) as u8;
            insn.jf = (u32::from(insn.jf) % room.max(1)) as u8;
        }
    }
    if let Some(last) = insns.last_mut() {
        if last.code != 0x06 && last.code != 0x16 {
            *last = Insn::stmt(0x16, 0);
        }
    }
    loop {
        match validate(&insns, mode) {
            Ok(p) => return p,
            Err(e) => {
                let pc = e.pc().expect("length is in range").0;
                let replacement =
                    if pc + 1 == insns.len() { Insn::stmt(0x16, 0) } else { Insn::stmt(0x00, insns[pc].k) };
                assert_ne!(insns[pc], replacement, "repair made no progress: {e}");
                insns[pc] = replacement;
                if let ValidateError::NoFinalRet { .. } = e {
                    continue;
                }
            }
        }
    }
}

fn program(mode: Mode, max_len: usize) -> impl Strategy<Value = Program> {
    proptest::collection::vec(raw_insn(), 1..=max_len).prop_map(move |v| repair(v, mode))
}

/// Structural soundness of a conversion result.
fn check_structure(prog: &Program, out: &Converted) -> Result<(), String> {
    let n = out.insns.len();
    let map = &out.pc_map;
    if map.len() != prog.len() {
        return Err(format!("pc map has {} entries for {} instructions", map.len(), prog.len()));
    }
    let want_prologue = if out.seen_ld_abs { 7 } else { 3 };
    if map.prologue_len() != want_prologue {
        return Err(format!("prologue {} != {want_prologue}", map.prologue_len()));
    }
    let mut expect_start = want_prologue;
    for pc in 0..prog.len() {
        let r = map.range(cbpf::Pc(pc)).unwrap();
        if r.start != expect_start || r.end <= r.start {
            return Err(format!("group {pc} is {r:?}, expected to start at {expect_start}"));
        }
        expect_start = r.end;
    }
    if expect_start != n {
        return Err(format!("groups end at {expect_start}, program has {n}"));
    }
    if out.insns.last().map(|i| i.code) != Some(0x95) {
        return Err("program does not end in exit".into());
    }
    for (epc, insn) in out.insns.iter().enumerate() {
        let class = insn.code & 0x07;
        let op = insn.code & 0xf0;
        if class == 0x05 && op != 0x80 && op != 0x90 {
            let target = epc as i64 + 1 + i64::from(insn.off);
            if target < 0 || target >= n as i64 {
                return Err(format!("jump at {epc} lands at {target}, outside 0..{n}"));
            }
        }
        if insn.dst() > 10 || insn.src() > 10 {
            return Err(format!("bad register at {epc}: {insn:?}"));
        }
    }
    if out.stack_depth > 64 || out.stack_depth % 4 != 0 {
        return Err(format!("stack depth {}", out.stack_depth));
    }
    Ok(())
}

fn check(prog: &Program, opts: Options) -> Result<(), TestCaseError> {
    match convert(prog, &opts) {
        Ok(out) => check_structure(prog, &out).map_err(TestCaseError::fail),
        // The only refusal a validated program can meet: a jump offset past s16.
        Err(ConvertError::JumpOffset { pc, .. }) => {
            prop_assert!(pc.0 < prog.len());
            Ok(())
        }
        Err(e) => Err(TestCaseError::fail(format!("unexpected error: {e}"))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn seccomp_programs_convert_soundly(prog in program(Mode::Seccomp, 300)) {
        check(&prog, Options::default())?;
        // Legacy mode only changes packet loads, which seccomp cannot have.
        let a = convert(&prog, &Options::default()).unwrap();
        let b = convert(&prog, &Options::legacy()).unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn socket_programs_convert_soundly(prog in program(Mode::Socket, 300)) {
        check(&prog, Options::default())?;
        check(&prog, Options::legacy())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Long packet-heavy programs reach the 16-bit offset limit (in pass 0 or
    /// pass 1): a typed error or a sound program, never a panic.
    #[test]
    fn long_socket_programs_convert_or_refuse(
        body in proptest::collection::vec(
            prop_oneof![
                9 => Just(Insn::stmt(0xb1, 14)),
                1 => (0u8..4).prop_map(|jt| Insn::jump(0x15, 0, jt, 0)),
                1 => (0u32..4).prop_map(|k| Insn::stmt(0x05, k)),
            ],
            1700..4000,
        )
    ) {
        let mut insns = body;
        insns.push(Insn::stmt(0x06, 0));
        let prog = repair(insns, Mode::Socket);
        check(&prog, Options::default())?;
    }
}
