#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Hand-written filters for analyze, explain and audit: each case names what
//! it exercises.

use cbpf::opcode::*;
use cbpf::{validate, Insn, Mode, Pc, Program};
use seccomp::analysis::{analyze, audit, explain, ActionResult, AnalysisError, Field, Finding, FindingKind, Severity};

use seccomp::action::SECCOMP_RET_ALLOW as ALLOW;
use seccomp::arch::AUDIT_ARCH_X86_64 as X86_64;
const S390X: u32 = 0x8000_0016;
const ERRNO1: u32 = 0x0005_0001;
const KILL: u32 = 0;

mod common;
use common::{j, s};

fn prog(insns: &[Insn]) -> Program {
    validate(insns, Mode::Seccomp).unwrap_or_else(|e| panic!("{e}"))
}
/// A seccomp filter in bpf_asm syntax.
fn asm(text: &str) -> Program {
    prog(&cbpf::text::parse(text.as_bytes(), cbpf::text::Format::Asm).unwrap())
}

fn result(p: &Program, arch: u32, nr: u32) -> ActionResult {
    analyze(p, arch, [nr]).unwrap().remove(0).result
}

/// `if arch != x86_64 kill; if nr == 1 { if args[0].lo == 5 allow else errno(1) }; kill`.
fn arg_rule() -> Program {
    prog(&[
        s(LD_W_ABS, 4),
        j(JMP_JEQ_K, X86_64, 1, 0),
        s(RET_K, KILL),
        s(LD_W_ABS, 0),
        j(JMP_JEQ_K, 1, 0, 4),
        s(LD_W_ABS, 16),
        j(JMP_JEQ_K, 5, 0, 1),
        s(RET_K, ALLOW),
        s(RET_K, ERRNO1),
        s(RET_K, KILL),
    ])
}

#[test]
fn constants_and_dependencies() {
    let p = arg_rule();
    assert_eq!(result(&p, X86_64, 0), ActionResult::Constant(KILL));
    assert_eq!(result(&p, X86_64, 1), ActionResult::Depends(vec![Field::ArgLo(0)]));
    assert_eq!(result(&p, 0x4000_0003, 1), ActionResult::Constant(KILL));
    // On a big-endian arch offset 16 is the high half of args[0].
    assert_eq!(result(&p, S390X, 1), ActionResult::Constant(KILL));
    let be = prog(&[s(LD_W_ABS, 16), j(JMP_JEQ_K, 5, 0, 1), s(RET_K, ALLOW), s(RET_K, KILL)]);
    assert_eq!(result(&be, S390X, 0), ActionResult::Depends(vec![Field::ArgHi(0)]));
    assert_eq!(result(&be, X86_64, 0), ActionResult::Depends(vec![Field::ArgLo(0)]));
    let ip = prog(&[s(LD_W_ABS, 12), s(RET_A, 0)]);
    assert_eq!(result(&ip, X86_64, 0), ActionResult::Depends(vec![Field::IpHi]));
}

#[test]
fn exact_arithmetic_on_known_values() {
    // A = nr * 3 + 1; nr 2 gives 7: allowed; shifts by X use X & 31.
    let p = prog(&[
        s(LD_W_ABS, 0),
        s(ALU_MUL_K, 3),
        s(ALU_ADD_K, 1),
        j(JMP_JEQ_K, 7, 0, 1),
        s(RET_K, ALLOW),
        s(LDX_IMM, 33),
        s(LD_IMM, 1),
        s(ALU_LSH_X, 0),
        s(RET_A, 0),
    ]);
    assert_eq!(result(&p, X86_64, 2), ActionResult::Constant(ALLOW));
    assert_eq!(result(&p, X86_64, 3), ActionResult::Constant(2));
    // Division by an X that is 0 returns 0; by an argument, it may.
    let div0 = prog(&[s(LD_IMM, 10), s(LDX_IMM, 0), s(ALU_DIV_X, 0), s(RET_K, ALLOW)]);
    assert_eq!(result(&div0, X86_64, 0), ActionResult::Constant(0));
    let div_arg = prog(&[s(LD_W_ABS, 16), s(MISC_TAX, 0), s(LD_IMM, 10), s(ALU_DIV_X, 0), s(RET_K, ALLOW)]);
    assert_eq!(result(&div_arg, X86_64, 0), ActionResult::Depends(vec![Field::ArgLo(0)]));
    // `and #0` makes any value 0.
    let and0 = prog(&[s(LD_W_ABS, 16), s(ALU_AND_K, 0), j(JMP_JEQ_K, 0, 0, 1), s(RET_K, ALLOW), s(RET_K, KILL)]);
    assert_eq!(result(&and0, X86_64, 0), ActionResult::Constant(ALLOW));
}

#[test]
fn correlated_branches_are_constant() {
    // M[0] = args[0].lo == 5 ? 7 : 9; later the same test picks the branch
    // whose check of M[0] passes: always ALLOW, which only a path-sensitive
    // analysis sees (the data-flow join loses M[0]).
    let p = prog(&[
        s(LD_W_ABS, 16),
        j(JMP_JEQ_K, 5, 0, 3),
        s(LD_IMM, 7),
        s(ST, 0),
        s(JMP_JA, 2),
        s(LD_IMM, 9),
        s(ST, 0),
        s(LD_W_ABS, 16),
        j(JMP_JEQ_K, 5, 0, 4),
        s(LD_MEM, 0),
        j(JMP_JEQ_K, 7, 4, 5),
        s(RET_K, KILL),
        s(RET_K, KILL),
        s(LD_MEM, 0),
        j(JMP_JEQ_K, 9, 0, 1),
        s(RET_K, ALLOW),
        s(RET_K, KILL),
    ]);
    assert_eq!(result(&p, X86_64, 0), ActionResult::Constant(ALLOW));
}

#[test]
fn socket_programs_are_refused() {
    let p = validate(&[s(RET_K, 0)], Mode::Socket).unwrap();
    assert_eq!(analyze(&p, X86_64, [0]), Err(AnalysisError::NotSeccomp { mode: Mode::Socket }));
    assert!(audit(&p).is_err());
    assert!(explain(&p, X86_64, [0]).is_err());
}

#[test]
fn explain_groups_numbers_by_action() {
    let policy = explain(&arg_rule(), X86_64, [0, 1, 2]).unwrap();
    let actions: Vec<u32> = policy.actions.iter().map(|r| r.action).collect();
    assert_eq!(actions, vec![KILL, ERRNO1, ALLOW]);
    assert_eq!(policy.actions[0].always, vec![0, 2]);
    let text = |rules: usize| -> Vec<String> {
        let when = &policy.actions[rules].when;
        assert_eq!(when.len(), 1);
        assert_eq!(when[0].nr, 1);
        assert!(!when[0].truncated);
        when[0].paths.iter().map(|p| p.iter().map(ToString::to_string).collect::<Vec<_>>().join(" && ")).collect()
    };
    assert_eq!(text(1), vec!["args[0].lo != 0x5"]);
    assert_eq!(text(2), vec!["args[0].lo == 0x5"]);
    assert_eq!(policy.actions[2].when[0].paths[0][0].pc, Pc(6));
    assert!(policy.computed.is_empty());
}

fn kinds(findings: &[Finding]) -> Vec<&FindingKind> {
    findings.iter().map(|f| &f.kind).collect()
}

#[test]
fn audit_no_arch_check() {
    let p = prog(&[s(LD_W_ABS, 0), j(JMP_JEQ_K, 59, 0, 1), s(RET_K, KILL), s(RET_K, ALLOW)]);
    let findings = audit(&p).unwrap();
    assert_eq!(findings[0].severity, Severity::High);
    assert!(findings.contains(&Finding { severity: Severity::High, pc: Some(Pc(1)), kind: FindingKind::NoArchCheck }));
    assert!(kinds(&findings).contains(&&FindingKind::DefaultAllow { arch: None, nr: 60, action: ALLOW }));
    assert!(arg_rule_findings().iter().all(|f| f.kind != FindingKind::NoArchCheck));
}

fn arg_rule_findings() -> Vec<Finding> {
    audit(&arg_rule()).unwrap()
}

/// x86_64 deny-list of execve: `if arch != x86_64 kill; [x32 check]; if nr == 59 kill; allow`.
fn execve_denylist(x32_check: bool) -> Program {
    let mut insns = vec![s(LD_W_ABS, 4), j(JMP_JEQ_K, X86_64, 1, 0), s(RET_K, KILL), s(LD_W_ABS, 0)];
    if x32_check {
        insns.extend([j(JMP_JGE_K, 0x4000_0000, 0, 1), s(RET_K, KILL)]);
    }
    insns.extend([j(JMP_JEQ_K, 59, 0, 1), s(RET_K, KILL), s(RET_K, ALLOW)]);
    prog(&insns)
}

#[test]
fn audit_x32_default_allow_and_siblings() {
    let findings = audit(&execve_denylist(false)).unwrap();
    let k = kinds(&findings);
    assert!(k.contains(&&FindingKind::X32NotHandled { escapes: vec![0x4000_003b] }), "{findings:?}");
    assert!(k.contains(&&FindingKind::DefaultAllow { arch: Some(X86_64), nr: 60, action: ALLOW }));
    assert!(k.contains(&&FindingKind::SiblingNotFiltered { older: 59, newer: 322 }));
    assert!(!k.contains(&&FindingKind::NoArchCheck));
    let shown: Vec<String> = findings.iter().map(ToString::to_string).collect();
    assert!(shown.iter().any(|s| s.contains("execve (59)") && s.contains("execveat (322)")), "{shown:?}");

    let handled = audit(&execve_denylist(true)).unwrap();
    assert!(!kinds(&handled).iter().any(|k| matches!(k, FindingKind::X32NotHandled { .. })), "{handled:?}");
}

#[test]
fn audit_allow_list_without_open_is_not_a_sibling_problem_but_io_uring_is() {
    // x86_64 allow-list: openat (257) and io_uring_setup (425); default kill.
    let p = asm("ld [4]\n jeq #0xc000003e, nr, kill\n kill: ret #0\n nr: ld [0]\n jge #0x40000000, deny, openat\n \
                 openat: jeq #257, allow, io\n io: jeq #425, allow, deny\n allow: ret #0x7fff0000\n deny: ret #0");
    let findings = audit(&p).unwrap();
    let k = kinds(&findings);
    assert!(!k.iter().any(|k| matches!(k, FindingKind::SiblingNotFiltered { .. })), "{findings:?}");
    assert!(k.contains(&&FindingKind::IoUringOpen { allowed: vec![425] }), "{findings:?}");
    assert!(!k.iter().any(|k| matches!(k, FindingKind::DefaultAllow { .. } | FindingKind::X32NotHandled { .. })));
}

#[test]
fn audit_ret_a_and_unreachable_code() {
    let p = asm("ld [4]\n jeq #0xc000003e, errno, kill\n errno: ld #0x50001\n ret a\n kill: ret #0\n ret #0\n ret #0");
    let findings = audit(&p).unwrap();
    assert!(findings.contains(&Finding { severity: Severity::Info, pc: Some(Pc(3)), kind: FindingKind::RetA }));
    assert!(findings.contains(&Finding {
        severity: Severity::Low,
        pc: Some(Pc(5)),
        kind: FindingKind::Unreachable { count: 2 }
    }));
    // Sorted by severity, highest first.
    assert!(findings.windows(2).all(|w| w[0].severity >= w[1].severity));
}
