#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! seccomp-tools-style disassembly and its assembler: byte-exact round trips
//! on every testdata/filters/*.bpf and on random valid seccomp programs.

use cbpf::opcode::*;
use cbpf::{raw, validate, Insn, Mode};
use proptest::prelude::*;
use seccomp::arch::Arch;
use seccomp::asm::{assemble, AsmError, AsmOptions};
use seccomp::disasm::{disasm, disasm_text, DisasmOptions};

mod common;
use common::{dir, filter_names};

/// Every `testdata/filters/*.bpf` as (file name, decoded instructions), sorted.
fn filters() -> Vec<(String, Vec<Insn>)> {
    filter_names()
        .into_iter()
        .map(|stem| {
            let name = format!("{stem}.bpf");
            let bytes = std::fs::read(format!("{}/{name}", dir())).unwrap();
            (name, raw::decode(&bytes).unwrap())
        })
        .collect()
}

#[test]
fn testdata_filters_round_trip_byte_exactly() {
    let all = filters();
    assert!(all.len() >= 12, "expected the testdata filters, found {}", all.len());
    let mut failures = Vec::new();
    for (name, insns) in &all {
        for default_arch in [None, Some(Arch::X86_64)] {
            let opts = DisasmOptions { default_arch };
            let listing = disasm(insns, opts);
            match assemble(&listing, AsmOptions { default_arch }) {
                Ok(back) if raw::encode(&back) == raw::encode(insns) => {}
                Ok(_) => failures.push(format!("{name} ({default_arch:?}): listing assembles to other bytes")),
                Err(e) => failures.push(format!("{name} ({default_arch:?}): listing: {e}")),
            }
            let text = disasm_text(insns, opts);
            match assemble(&text, AsmOptions { default_arch }) {
                Ok(back) if back == *insns => {}
                Ok(_) => failures.push(format!("{name} ({default_arch:?}): text assembles to other bytes")),
                Err(e) => failures.push(format!("{name} ({default_arch:?}): text: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn seed_fast_reads_like_seccomp_tools() {
    let insns = raw::decode(&std::fs::read(format!("{}/seed_fast.bpf", dir())).unwrap()).unwrap();
    let listing = disasm(&insns, DisasmOptions::default());
    println!("{listing}");
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines[0], " line  CODE  JT   JF      K");
    assert_eq!(lines[1], "=================================");
    assert_eq!(lines[2], " 0000: 0x20 0x00 0x00 0x00000004  A = arch");
    assert!(lines[3].starts_with(" 0001: 0x15 ") && lines[3].contains("(A != ARCH_X86_64) goto "), "{}", lines[3]);
    assert!(listing.contains("A = sys_number"), "{listing}");
    assert!(listing.contains("getppid"), "syscall named after the established arch:\n{listing}");
    assert!(listing.contains("return ALLOW"), "{listing}");
    assert!(listing.contains("return KILL_PROCESS"), "{listing}");
}

#[test]
fn names_follow_the_arch_established_on_each_path() {
    // arch == aarch64 → nr 173 is getppid; arch == x86_64 → 173 is ioperm;
    // after the join the arch is unknown and the number stays hex.
    let text = "\
A = arch
if (A == ARCH_AARCH64) goto arm
if (A == ARCH_X86_64) goto x86
return KILL_PROCESS
arm:
A = sys_number
if (A == getppid) goto 0011
return ERRNO(1)
x86:
A = sys_number
if (A == ioperm) goto 0011
return ERRNO(2)
A = sys_number
if (A == 0xad) goto 0013
return LOG
return ALLOW
";
    let insns = assemble(text, AsmOptions::default()).unwrap();
    assert_eq!(insns[5].k, 173);
    assert_eq!(insns[8].k, 173);
    let listing = disasm(&insns, DisasmOptions::default());
    assert!(listing.contains(" 0005: 0x15 0x05 0x00 0x000000ad  if (A == getppid) goto 0011"), "{listing}");
    assert!(listing.contains(" 0008: 0x15 0x02 0x00 0x000000ad  if (A == ioperm) goto 0011"), "{listing}");
    // 0011 is reached from both arches: no arch established, so hex...
    assert!(listing.contains(" 0011: 0x15 0x01 0x00 0x000000ad  if (A == 0xad) goto 0013"), "{listing}");
    // ...unless a default arch names it (i386 173 = rt_sigreturn).
    let with_default = disasm(&insns, DisasmOptions { default_arch: Some(Arch::I386) });
    assert!(with_default.contains("if (A == rt_sigreturn) goto 0013"), "{with_default}");
    assert_eq!(assemble(&with_default, AsmOptions::default()).unwrap(), insns);
}

#[test]
fn text_forms_assemble_to_the_expected_codes() {
    let text = "\
A = arch
if (A == 0xc000003e) goto 0003 else goto 0002
return KILL
A = args[1] >> 32
A &= 0xff
mem[3] = A
X = A
A = instruction_pointer
if (A > X) goto 0011
if (!(A & 0x10)) goto 0011
A = X
return A
";
    let insns = assemble(text, AsmOptions::default()).unwrap();
    let want = vec![
        Insn::stmt(LD_W_ABS, 4),
        Insn::jump(JMP_JEQ_K, 0xc000_003e, 1, 0),
        Insn::stmt(RET_K, 0),
        Insn::stmt(LD_W_ABS, 28),
        Insn::stmt(ALU_AND_K, 0xff),
        Insn::stmt(ST, 3),
        Insn::stmt(MISC_TAX, 0),
        Insn::stmt(LD_W_ABS, 8),
        Insn::jump(JMP_JGT_X, 0, 2, 0),
        Insn::jump(JMP_JSET_K, 0x10, 0, 1),
        Insn::stmt(MISC_TXA, 0),
        Insn::stmt(RET_A, 0),
    ];
    assert_eq!(insns, want);
    validate(&insns, Mode::Seccomp).unwrap();
}

#[test]
fn assembler_errors_say_where() {
    let e = assemble(
        "A = arch\nif (A == nosuchcall) goto 0002\nreturn ALLOW\n",
        AsmOptions { default_arch: Some(Arch::X86_64) },
    );
    assert!(matches!(e, Err(AsmError::UnknownSyscall { line: 2, .. })), "{e:?}");
    let e = assemble("goto nowhere\n", AsmOptions::default());
    assert!(matches!(e, Err(AsmError::UnknownLabel { line: 1, .. })), "{e:?}");
    let e = assemble("A = arch\nfrobnicate\n", AsmOptions::default());
    assert!(matches!(e, Err(AsmError::Syntax { line: 2, col: 1, .. })), "{e:?}");
    let e = assemble("return FOO\n", AsmOptions::default());
    assert!(matches!(e, Err(AsmError::BadAction { line: 1, .. })), "{e:?}");
    let e = assemble("A = 0\nif (A == 1) goto 0000\nreturn ALLOW\n", AsmOptions::default());
    assert!(matches!(e, Err(AsmError::BadJump { line: 2, pc: 1, target: 0, .. })), "{e:?}");
    assert_eq!(assemble("# nothing\n", AsmOptions::default()), Err(AsmError::Empty));
}

/// One instruction of a random seccomp program at `pc` of `len`, canonical
/// (fields the kernel ignores are zero) so the text form round-trips too.
fn insn_strategy(pc: usize, len: usize) -> BoxedStrategy<Insn> {
    let room = (len - pc - 2).min(255) as u8; // jumps must land before the end
    let jump_codes = [JMP_JEQ_K, JMP_JGT_K, JMP_JGE_K, JMP_JSET_K, JMP_JEQ_X, JMP_JGT_X, JMP_JGE_X, JMP_JSET_X];
    let alu_k = [ALU_ADD_K, ALU_SUB_K, ALU_MUL_K, ALU_OR_K, ALU_AND_K, ALU_XOR_K, ALU_DIV_K, ALU_LSH_K, ALU_RSH_K];
    let alu_x = [ALU_ADD_X, ALU_SUB_X, ALU_MUL_X, ALU_OR_X, ALU_AND_X, ALU_XOR_X, ALU_DIV_X, ALU_LSH_X, ALU_RSH_X];
    let interesting_k =
        prop_oneof![Just(0xc000_003eu32), Just(0x4000_0003), Just(110), Just(0x4000_0000), any::<u32>(), 0u32..512];
    let ret_k = prop_oneof![
        Just(0x7fff_0000u32),
        Just(0x8000_0000),
        Just(0),
        Just(0x0005_0001),
        Just(0x7ffc_0000),
        any::<u32>()
    ];
    prop_oneof![
        (0u32..16).prop_map(|i| Insn::stmt(LD_W_ABS, i * 4)),
        interesting_k.clone().prop_map(|k| Insn::stmt(LD_IMM, k)),
        interesting_k.clone().prop_map(|k| Insn::stmt(LDX_IMM, k)),
        (proptest::sample::select(alu_k.to_vec()), 1u32..32).prop_map(|(c, k)| Insn::stmt(c, k)),
        proptest::sample::select(alu_x.to_vec()).prop_map(|c| Insn::stmt(c, 0)),
        Just(Insn::stmt(ALU_NEG, 0)),
        Just(Insn::stmt(MISC_TAX, 0)),
        Just(Insn::stmt(MISC_TXA, 0)),
        Just(Insn::stmt(LD_W_LEN, 0)),
        Just(Insn::stmt(LDX_W_LEN, 0)),
        (0u32..16).prop_map(|k| Insn::stmt(ST, k)),
        (0u32..16).prop_map(|k| Insn::stmt(STX, k)),
        (proptest::sample::select(jump_codes.to_vec()), interesting_k, 0..=room, 0..=room).prop_map(
            |(c, k, jt, jf)| if c & BPF_X != 0 { Insn::jump(c, 0, jt, jf) } else { Insn::jump(c, k, jt, jf) }
        ),
        (0..=u32::from(room)).prop_map(|k| Insn::stmt(JMP_JA, k)),
        ret_k.prop_map(|k| Insn::stmt(RET_K, k)),
        Just(Insn::stmt(RET_A, 0)),
    ]
    .boxed()
}

fn program_strategy() -> impl Strategy<Value = Vec<Insn>> {
    (2usize..40).prop_flat_map(|len| {
        let body: Vec<BoxedStrategy<Insn>> = (0..len - 1).map(|pc| insn_strategy(pc, len)).collect();
        (body, prop_oneof![Just(0x7fff_0000u32), any::<u32>()]).prop_map(|(mut insns, k)| {
            insns.push(Insn::stmt(RET_K, k));
            insns
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_valid_programs_round_trip(insns in program_strategy(), arch in proptest::option::of(proptest::sample::select(vec![Arch::X86_64, Arch::I386, Arch::Aarch64, Arch::X32]))) {
        // Only programs the kernel accepts (uninitialised M[] reads are rejected).
        prop_assume!(validate(&insns, Mode::Seccomp).is_ok());
        let listing = disasm(&insns, DisasmOptions { default_arch: arch });
        prop_assert_eq!(&assemble(&listing, AsmOptions { default_arch: arch }).unwrap(), &insns, "{}", listing);
        let text = disasm_text(&insns, DisasmOptions { default_arch: arch });
        prop_assert_eq!(&assemble(&text, AsmOptions { default_arch: arch }).unwrap(), &insns, "{}", text);
    }

    #[test]
    fn any_bytes_round_trip_through_the_listing(insns in proptest::collection::vec(any::<(u16, u8, u8, u32)>().prop_map(|(c, jt, jf, k)| Insn { code: c, jt, jf, k }), 1..20)) {
        let listing = disasm(&insns, DisasmOptions { default_arch: Some(Arch::X86_64) });
        prop_assert_eq!(assemble(&listing, AsmOptions::default()).unwrap(), insns);
    }

    #[test]
    fn assembler_never_panics(text in "\\PC{0,200}") {
        let _ = assemble(&text, AsmOptions { default_arch: Some(Arch::X86_64) });
    }
}
