#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! One rejected program per kernel check (SPEC §2), with the exact error and
//! pc, in each mode where the check applies; plus the accepted edge cases
//! right next to each limit.

use cbpf::opcode::*;
use cbpf::{validate, Insn, Mode, Pc, ValidateError as E};

const RET0: Insn = Insn::stmt(RET_K, 0);
const RET_ACC: Insn = Insn::stmt(RET_A, 0);

fn s(code: u16, k: u32) -> Insn {
    Insn::stmt(code, k)
}

fn j(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn::jump(code, k, jt, jf)
}

/// Which modes a case is checked in.
#[derive(Clone, Copy)]
enum In {
    Both,
    Socket,
    Seccomp,
}

struct Case {
    name: &'static str,
    insns: Vec<Insn>,
    modes: In,
    want: Option<E>,
}

fn reject(name: &'static str, modes: In, insns: Vec<Insn>, want: E) -> Case {
    Case { name, insns, modes, want: Some(want) }
}

fn accept(name: &'static str, modes: In, insns: Vec<Insn>) -> Case {
    Case { name, insns, modes, want: None }
}

fn cases() -> Vec<Case> {
    use In::*;
    let ret_at_end = |n: usize| {
        let mut v = vec![s(LD_IMM, 1); n - 1];
        v.push(RET0);
        v
    };
    let mut cases = vec![
        // bpf_check_basics_ok
        reject("empty", Both, vec![], E::Empty),
        reject("4097 instructions", Both, ret_at_end(4097), E::TooLong { len: 4097 }),
        accept("4096 instructions", Both, ret_at_end(4096)),
        // chk_code_allowed
        reject("ret x (0x0e)", Both, vec![s(LD_IMM, 0), s(0x0e, 0)], E::UnknownOpcode { pc: Pc(1), code: 0x0e }),
        reject("0x21 from users", Both, vec![s(LDX_W_ABS, 0), RET0], E::UnknownOpcode { pc: Pc(0), code: LDX_W_ABS }),
        reject("code 0xb2", Both, vec![s(0xb2, 0), RET0], E::UnknownOpcode { pc: Pc(0), code: 0xb2 }),
        reject("code > 0xff", Both, vec![s(0x106, 0), RET0], E::UnknownOpcode { pc: Pc(0), code: 0x106 }),
        reject("ret #k with a high byte", Both, vec![s(0x8006, 0)], E::UnknownOpcode { pc: Pc(0), code: 0x8006 }),
        reject("ld #k with size H", Both, vec![s(0x08, 0), RET0], E::UnknownOpcode { pc: Pc(0), code: 0x08 }),
        reject("neg x (0x8c)", Both, vec![s(0x8c, 0), RET0], E::UnknownOpcode { pc: Pc(0), code: 0x8c }),
        // division / modulo by constant 0
        reject("div #0", Both, vec![s(LD_IMM, 1), s(ALU_DIV_K, 0), RET0], E::DivByZero { pc: Pc(1) }),
        reject("mod #0", Both, vec![s(ALU_MOD_K, 0), RET0], E::DivByZero { pc: Pc(0) }),
        accept("div x (checked at run time)", Both, vec![s(ALU_DIV_X, 0), RET0]),
        // shifts
        reject("lsh #32", Both, vec![s(ALU_LSH_K, 32), RET0], E::ShiftTooLarge { pc: Pc(0), k: 32 }),
        reject(
            "rsh #0xffffffff",
            Both,
            vec![s(ALU_RSH_K, u32::MAX), RET0],
            E::ShiftTooLarge { pc: Pc(0), k: u32::MAX },
        ),
        accept("lsh #31, rsh #31", Both, vec![s(ALU_LSH_K, 31), s(ALU_RSH_K, 31), RET0]),
        // scratch memory index
        reject("st M[16]", Both, vec![s(ST, 16), RET0], E::MemIndex { pc: Pc(0), k: 16 }),
        reject("stx M[16]", Both, vec![s(STX, 16), RET0], E::MemIndex { pc: Pc(0), k: 16 }),
        reject("ld M[16]", Both, vec![s(ST, 15), s(LD_MEM, 16), RET0], E::MemIndex { pc: Pc(1), k: 16 }),
        reject("ldx M[99]", Both, vec![s(LDX_MEM, 99), RET0], E::MemIndex { pc: Pc(0), k: 99 }),
        accept("st M[15]; ld M[15]", Both, vec![s(ST, 15), s(LD_MEM, 15), RET0]),
        // ja range: k < len - pc - 1
        reject("ja onto the end", Both, vec![s(JMP_JA, 1), RET0], E::JumpOutOfRange { pc: Pc(0), target: 2, last: 1 }),
        reject(
            "ja 0xffffffff",
            Both,
            vec![s(JMP_JA, u32::MAX), RET0],
            E::JumpOutOfRange { pc: Pc(0), target: 1 << 32, last: 1 },
        ),
        accept("ja to the last instruction", Both, vec![s(JMP_JA, 1), RET0, RET0]),
        // conditional jump range
        reject(
            "jt past the end",
            Both,
            vec![j(JMP_JEQ_K, 0, 2, 0), RET0, RET0],
            E::JumpOutOfRange { pc: Pc(0), target: 3, last: 2 },
        ),
        reject(
            "jf past the end",
            Both,
            vec![s(LD_IMM, 0), j(JMP_JSET_X, 0, 0, 1), RET0],
            E::JumpOutOfRange { pc: Pc(1), target: 3, last: 2 },
        ),
        reject(
            "jgt 255/255 in a short program",
            Both,
            vec![j(JMP_JGT_K, 0, 255, 255), RET0],
            E::JumpOutOfRange { pc: Pc(0), target: 256, last: 1 },
        ),
        accept("jeq to the last instruction", Both, vec![j(JMP_JEQ_K, 0, 1, 0), RET0, RET0]),
        // ancillary offsets (socket: bpf_anc_helper; seccomp: the load itself)
        reject(
            "ld [0xffffffff]",
            Both,
            vec![s(LD_W_ABS, u32::MAX), RET_ACC],
            E::BadAncillary { pc: Pc(0), k: u32::MAX },
        ),
        reject(
            "ldb [SKF_AD_MAX]",
            Both,
            vec![s(LD_B_ABS, SKF_AD_OFF + SKF_AD_MAX), RET_ACC],
            E::BadAncillary { pc: Pc(0), k: SKF_AD_OFF + SKF_AD_MAX },
        ),
        reject(
            "ldh [SKF_AD_OFF + 2] (not a multiple of 4)",
            Both,
            vec![s(LD_H_ABS, SKF_AD_OFF + 2), RET_ACC],
            E::BadAncillary { pc: Pc(0), k: SKF_AD_OFF + 2 },
        ),
        accept("ld [SKF_AD_OFF - 1]", Socket, vec![s(LD_W_ABS, SKF_AD_OFF - 1), RET_ACC]),
        accept(
            "ld [SKF_NET_OFF], ldb [SKF_LL_OFF]",
            Socket,
            vec![s(LD_W_ABS, SKF_NET_OFF), s(LD_B_ABS, SKF_LL_OFF), RET_ACC],
        ),
        accept(
            "ldb [x - 1], ldxb 4*([-1]&0xf) (no check)",
            Socket,
            vec![s(LD_B_IND, u32::MAX), s(LDX_B_MSH, u32::MAX), RET_ACC],
        ),
        reject(
            "ld [SKF_AD_OFF - 1] in seccomp",
            Seccomp,
            vec![s(LD_W_ABS, SKF_AD_OFF - 1), RET_ACC],
            E::SeccompLoad { pc: Pc(0), k: SKF_AD_OFF - 1 },
        ),
        reject(
            "ld [SKF_AD_PROTOCOL] in seccomp",
            Seccomp,
            vec![s(LD_W_ABS, SKF_AD_OFF), RET_ACC],
            E::SeccompLoad { pc: Pc(0), k: SKF_AD_OFF },
        ),
        // last instruction
        reject("no final ret", Both, vec![RET0, s(LD_IMM, 0)], E::NoFinalRet { pc: Pc(1), code: LD_IMM }),
        reject("final ja", Both, vec![RET0, s(JMP_JA, 0)], E::JumpOutOfRange { pc: Pc(1), target: 2, last: 1 }),
        reject("final tax", Both, vec![s(MISC_TAX, 0)], E::NoFinalRet { pc: Pc(0), code: MISC_TAX }),
        // check_load_and_stores
        reject("ld M[0] before any st", Both, vec![s(LD_MEM, 0), RET0], E::UninitMem { pc: Pc(0), k: 0 }),
        reject(
            "ldx M[3] written on one path only",
            Both,
            vec![j(JMP_JEQ_K, 0, 0, 1), s(ST, 3), s(LDX_MEM, 3), RET0],
            E::UninitMem { pc: Pc(2), k: 3 },
        ),
        reject(
            "the ret quirk (SPEC §2.3)",
            Both,
            vec![j(JMP_JEQ_K, 0, 0, 2), s(ST, 0), s(JMP_JA, 2), s(LD_IMM, 5), s(RET_K, 1), s(LD_MEM, 0), RET_ACC],
            E::UninitMem { pc: Pc(5), k: 0 },
        ),
        accept(
            "st on both paths",
            Both,
            vec![j(JMP_JEQ_K, 0, 0, 2), s(ST, 0), s(JMP_JA, 1), s(STX, 0), s(LD_MEM, 0), RET_ACC],
        ),
        // seccomp_check_filter
        reject("seccomp ld [1]", Seccomp, vec![s(LD_W_ABS, 1), RET_ACC], E::SeccompLoad { pc: Pc(0), k: 1 }),
        reject("seccomp ld [62]", Seccomp, vec![s(LD_W_ABS, 62), RET_ACC], E::SeccompLoad { pc: Pc(0), k: 62 }),
        reject(
            "seccomp ld [64]",
            Seccomp,
            vec![s(LD_W_ABS, 0), s(LD_W_ABS, 64), RET_ACC],
            E::SeccompLoad { pc: Pc(1), k: 64 },
        ),
        accept("seccomp ld [60]", Both, vec![s(LD_W_ABS, 60), RET_ACC]),
        accept("socket mod #3, mod x", Socket, vec![s(ALU_MOD_K, 3), s(ALU_MOD_X, 0), RET_ACC]),
        // bpf_check_classic runs first: a classic failure later in the
        // program wins over a seccomp failure earlier.
        reject(
            "classic check before seccomp check",
            Seccomp,
            vec![s(LD_H_ABS, 0), s(ALU_DIV_K, 0), RET_ACC],
            E::DivByZero { pc: Pc(1) },
        ),
        reject(
            "first failure wins",
            Both,
            vec![s(ALU_LSH_K, 40), s(ALU_DIV_K, 0), RET_ACC],
            E::ShiftTooLarge { pc: Pc(0), k: 40 },
        ),
    ];
    // seccomp_check_filter: opcodes it does not list, alone before `ret a`.
    let not_in_seccomp = [
        ("seccomp mod #3", ALU_MOD_K, 3),
        ("seccomp mod x", ALU_MOD_X, 0),
        ("seccomp ldh [0]", LD_H_ABS, 0),
        ("seccomp ldb [0]", LD_B_ABS, 0),
        ("seccomp ld [x+0]", LD_W_IND, 0),
        ("seccomp ldh [x+0]", LD_H_IND, 0),
        ("seccomp ldb [x+0]", LD_B_IND, 0),
        ("seccomp msh", LDX_B_MSH, 0),
    ];
    cases.extend(
        not_in_seccomp.map(|(name, code, k)| {
            reject(name, Seccomp, vec![s(code, k), RET_ACC], E::SeccompOpcode { pc: Pc(0), code })
        }),
    );
    cases
}

#[test]
fn each_kernel_check_rejects_with_the_exact_error() {
    let mut failures = Vec::new();
    for case in cases() {
        let modes: &[Mode] = match case.modes {
            In::Both => &[Mode::Socket, Mode::Seccomp],
            In::Socket => &[Mode::Socket],
            In::Seccomp => &[Mode::Seccomp],
        };
        for &mode in modes {
            let got = validate(&case.insns, mode);
            let ok = match (&got, &case.want) {
                (Ok(_), None) => true,
                (Err(e), Some(want)) => e == want && e.pc() == want.pc(),
                _ => false,
            };
            if !ok {
                failures.push(format!("{} ({mode}): got {:?}, want {:?}", case.name, got.map(|p| p.len()), case.want));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Every error about an instruction names it twice, in its message
/// ("insn N: ...") and in `pc()`, and the two agree; the length errors name none.
#[test]
fn error_pc_is_the_instruction_the_message_names() {
    let mut failures = Vec::new();
    for case in cases() {
        let Some(want) = case.want else { continue };
        let message = want.to_string();
        let named = message.strip_prefix("insn ").and_then(|rest| rest.split(':').next()?.parse().ok()).map(Pc);
        if want.pc() != named || named.is_none() != matches!(want, E::Empty | E::TooLong { .. }) {
            failures.push(format!("{}: pc() {:?}, message {message:?}", case.name, want.pc()));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn modes_print_as_the_cli_spells_them() {
    assert_eq!(Mode::Seccomp.to_string(), "seccomp");
    assert_eq!(Mode::Socket.to_string(), "socket");
}

#[test]
fn every_error_variant_is_covered() {
    let mut seen = std::collections::BTreeSet::new();
    for case in cases() {
        if let Some(e) = case.want {
            seen.insert(format!("{e:?}").split([' ', '{']).next().unwrap().to_owned());
        }
    }
    let all = [
        "Empty",
        "TooLong",
        "UnknownOpcode",
        "DivByZero",
        "ShiftTooLarge",
        "MemIndex",
        "JumpOutOfRange",
        "BadAncillary",
        "NoFinalRet",
        "UninitMem",
        "SeccompOpcode",
        "SeccompLoad",
    ];
    for v in all {
        assert!(seen.contains(v), "no case for {v}");
    }
}

#[test]
fn every_ancillary_offset_is_accepted_for_sockets_and_rejected_for_seccomp() {
    for x in (0..SKF_AD_MAX).step_by(4) {
        for code in [LD_W_ABS, LD_H_ABS, LD_B_ABS] {
            let insns = [s(code, SKF_AD_OFF + x), RET_ACC];
            assert!(validate(&insns, Mode::Socket).is_ok(), "{code:#x} {x}");
            let want = if code == LD_W_ABS {
                E::SeccompLoad { pc: Pc(0), k: SKF_AD_OFF + x }
            } else {
                E::SeccompOpcode { pc: Pc(0), code }
            };
            assert_eq!(validate(&insns, Mode::Seccomp), Err(want));
        }
    }
}

#[test]
fn seccomp_rewrites_len_and_loads() {
    let insns = [s(LD_W_LEN, 7), s(LDX_W_LEN, 9), s(LD_W_ABS, 4), RET_ACC];
    let prog = validate(&insns, Mode::Seccomp).unwrap();
    assert_eq!(prog.insns(), &[s(LD_IMM, 64), s(LDX_IMM, 64), s(LDX_W_ABS, 4), RET_ACC]);
    assert_eq!(prog.original(), &insns);
    assert_eq!((prog.mode(), prog.len(), prog.is_empty()), (Mode::Seccomp, 4, false));
    // Socket mode leaves everything alone.
    let prog = validate(&insns, Mode::Socket).unwrap();
    assert_eq!(prog.insns(), &insns);
    assert_eq!((prog.mode(), prog.len(), prog.is_empty()), (Mode::Socket, 4, false));
}

#[test]
fn exactly_41_opcodes_pass_seccomp() {
    let mut passing = 0;
    for &code in &ALLOWED_CODES {
        // A harmless operand for every code: k = 0 except where 0 is invalid.
        let k = match code {
            ALU_DIV_K | ALU_MOD_K => 1,
            _ => 0,
        };
        let mut insns = vec![s(ST, 0), s(STX, 1), Insn::jump(code, k, 0, 0)];
        insns.push(RET_ACC);
        let socket = validate(&insns, Mode::Socket);
        assert!(socket.is_ok(), "{code:#x}: {socket:?}");
        if validate(&insns, Mode::Seccomp).is_ok() {
            passing += 1;
        }
    }
    assert_eq!(passing, 41);
}
