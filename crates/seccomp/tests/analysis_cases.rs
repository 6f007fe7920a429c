#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Hand-written filters for analyze, explain and audit: each case names what
//! it exercises.

use cbpf::opcode::RET_K;
use cbpf::{validate, Insn, Mode, Pc, Program};
use seccomp::analysis::{analyze, audit, explain, ActionResult, AnalysisError, Field, Finding, FindingKind, Severity};

use seccomp::action::SECCOMP_RET_ALLOW as ALLOW;
use seccomp::arch::AUDIT_ARCH_X86_64 as X86_64;
const S390X: u32 = 0x8000_0016;
const ERRNO1: u32 = 0x0005_0001;
const KILL: u32 = 0;

mod common;
use common::asm;

fn result(p: &Program, arch: u32, nr: u32) -> ActionResult {
    analyze(p, arch, [nr]).unwrap().remove(0).result
}

/// `if arch != x86_64 kill; if nr == 1 { if args[0].lo == 5 allow else errno(1) }; kill`.
fn arg_rule() -> Program {
    asm(r"
                ld [4]                      ; arch
                jeq #0xc000003e, x86_64
                ret #0
        x86_64: ld [0]                      ; nr
                jeq #1, write, kill
        write:  ld [16]                     ; args[0].lo
                jeq #5, allow, errno
        allow:  ret #0x7fff0000
        errno:  ret #0x50001
        kill:   ret #0
        ")
}

#[test]
fn constants_and_dependencies() {
    let p = arg_rule();
    assert_eq!(result(&p, X86_64, 0), ActionResult::Constant(KILL));
    assert_eq!(result(&p, X86_64, 1), ActionResult::Depends(vec![Field::ArgLo(0)]));
    assert_eq!(result(&p, 0x4000_0003, 1), ActionResult::Constant(KILL));
    // On a big-endian arch offset 16 is the high half of args[0].
    assert_eq!(result(&p, S390X, 1), ActionResult::Constant(KILL));
    let be = asm("ld [16]\n jeq #5, allow, kill\n allow: ret #0x7fff0000\n kill: ret #0");
    assert_eq!(result(&be, S390X, 0), ActionResult::Depends(vec![Field::ArgHi(0)]));
    assert_eq!(result(&be, X86_64, 0), ActionResult::Depends(vec![Field::ArgLo(0)]));
    let ip = asm("ld [12]\n ret a");
    assert_eq!(result(&ip, X86_64, 0), ActionResult::Depends(vec![Field::IpHi]));
}

#[test]
fn exact_arithmetic_on_known_values() {
    // A = nr * 3 + 1; nr 2 gives 7: allowed; shifts by X use X & 31.
    let p = asm(r"
                ld [0]
                mul #3
                add #1
                jeq #7, allow, shift
        allow:  ret #0x7fff0000
        shift:  ldx #33
                ld #1
                lsh x
                ret a
        ");
    assert_eq!(result(&p, X86_64, 2), ActionResult::Constant(ALLOW));
    assert_eq!(result(&p, X86_64, 3), ActionResult::Constant(2));
    // Division by an X that is 0 returns 0; by an argument, it may.
    let div0 = asm("ld #10\n ldx #0\n div x\n ret #0x7fff0000");
    assert_eq!(result(&div0, X86_64, 0), ActionResult::Constant(0));
    let div_arg = asm("ld [16]\n tax\n ld #10\n div x\n ret #0x7fff0000");
    assert_eq!(result(&div_arg, X86_64, 0), ActionResult::Depends(vec![Field::ArgLo(0)]));
    // `and #0` makes any value 0.
    let and0 = asm("ld [16]\n and #0\n jeq #0, allow, kill\n allow: ret #0x7fff0000\n kill: ret #0");
    assert_eq!(result(&and0, X86_64, 0), ActionResult::Constant(ALLOW));
}

#[test]
fn correlated_branches_are_constant() {
    // M[0] = args[0].lo == 5 ? 7 : 9; later the same test picks the branch
    // whose check of M[0] passes: always ALLOW, which only a path-sensitive
    // analysis sees (the data-flow join loses M[0]).
    let p = asm(r"
                    ld [16]                 ; args[0].lo
                    jeq #5, five, other
        five:       ld #7
                    st M[0]
                    ja again
        other:      ld #9
                    st M[0]
        again:      ld [16]
                    jeq #5, was_five, was_other
        was_five:   ld M[0]
                    jeq #7, allow, kill
                    ret #0                  ; unreachable
                    ret #0
        was_other:  ld M[0]
                    jeq #9, allow, kill
        allow:      ret #0x7fff0000
        kill:       ret #0
        ");
    assert_eq!(result(&p, X86_64, 0), ActionResult::Constant(ALLOW));
}

#[test]
fn socket_programs_are_refused() {
    let p = validate(&[Insn::stmt(RET_K, 0)], Mode::Socket).unwrap();
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
    let p = asm("ld [0]\n jeq #59, kill, allow\n kill: ret #0\n allow: ret #0x7fff0000");
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
    // Without the check, the x32 numbers (from 0x40000000) reach the execve test.
    let x32 = if x32_check { "jge #0x40000000, x32, execve\n x32: ret #0\n" } else { "" };
    asm(&format!(
        "
                ld [4]                      ; arch
                jeq #0xc000003e, x86_64
                ret #0
        x86_64: ld [0]                      ; nr
                {x32}
        execve: jeq #59, kill, allow
        kill:   ret #0
        allow:  ret #0x7fff0000
        "
    ))
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

/// The low-word lint: a seccompiler-style `dword` check (the low word alone)
/// on x86_64 fires, naming the syscall; libseccomp's 64-bit pair (high word
/// first), a masked test and the same check on i386 (a 32-bit arch) do not.
#[test]
fn audit_low_word_only_checks_on_a_64_bit_arch() {
    let low_words = |p: &Program| -> Vec<(Option<Pc>, u8, Vec<String>)> {
        audit(p)
            .unwrap()
            .into_iter()
            .filter_map(|f| match f.kind {
                FindingKind::LowWordOnly { arg, syscalls } => Some((f.pc, arg, syscalls)),
                _ => None,
            })
            .collect()
    };
    // One syscall on one arch, `check` (ending in a jump to `allow` or
    // `deny`) deciding it.
    let guarded = |arch: u32, nr: u32, check: &str| {
        asm(&format!(
            "ld [4]\njeq #{arch:#x}, ok\nret #0\nok: ld [0]\njeq #{nr}, check, deny\ncheck: {check}\n\
             allow: ret #0x7fff0000\ndeny: ret #0x50001\n"
        ))
    };
    // seccompiler's dword eq: ld [24]; jeq #2.
    let dword = guarded(X86_64, 72, "ld [24]\njeq #2, allow, deny");
    assert_eq!(low_words(&dword), [(Some(Pc(6)), 1, vec!["x86_64:fcntl".to_string()])]);
    assert!(audit(&dword)
        .unwrap()
        .iter()
        .any(|f| f.to_string().contains("args[1] is compared in its low 32 bits only")));
    // libseccomp's 64-bit EQ: the high word, then the low one.
    let pair = guarded(X86_64, 72, "ld [28]\njeq #0, lo, deny\nlo: ld [24]\njeq #2, allow, deny");
    assert!(low_words(&pair).is_empty());
    // A masked test says which bits it means.
    let masked = guarded(X86_64, 56, "ld [16]\nand #0x7e020000\njeq #0, allow, deny");
    assert!(low_words(&masked).is_empty());
    // i386 passes 32-bit arguments.
    let i386 = guarded(0x4000_0003, 55, "ld [24]\njeq #2, allow, deny");
    assert!(low_words(&i386).is_empty());
}
