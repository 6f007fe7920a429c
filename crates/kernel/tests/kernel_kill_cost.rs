//! Issue 13, finding 11: killing inputs on the kernel engine. A filter that
//! divides by zero kills on every input; 2000 such inputs must all come back
//! as `Action(0)` (the kernel's real verdict) and leave no child behind.
//! Speed is measured with the release CLI, not asserted here.

#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use cbpf::Insn;
use kernel::{run_vectors, seccomp_available, Input, KernelError, Outcome, AUDIT_ARCH_X86_64};
use test_data::require::{self, Need};

/// `ld #0; tax; ld #1; div x; ret a`.
fn div_by_zero() -> Vec<Insn> {
    vec![Insn::stmt(0x00, 0), Insn::stmt(0x07, 0), Insn::stmt(0x00, 1), Insn::stmt(0x3c, 0), Insn::stmt(0x16, 0)]
}

/// Children of this process that are zombies (or any state), from /proc.
fn children_of_self() -> Vec<(i32, char)> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
        let mut fields = rest.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid: i32 = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        if ppid == me {
            out.push((pid, state));
        }
    }
    out
}

/// Both tests look at this process's children: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn many_killing_vectors_are_exact_and_reaped() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const TEST: &str = "many_killing_vectors_are_exact_and_reaped";
    if require::have(TEST, Need::Kernel, seccomp_available()).is_none() {
        return;
    }
    let filter = div_by_zero();
    let mut inputs: Vec<Input> =
        (0..2000).map(|i| Input { arch: AUDIT_ARCH_X86_64, nr: i % 300, args: [i as u64; 6], ip: 0 }).collect();
    // An unobservable input in the middle keeps its place.
    inputs.insert(1000, Input { arch: 0x4000_0028, nr: 1, args: [0; 6], ip: 0 });
    let outcomes = match run_vectors(&filter, &inputs) {
        Ok(o) => o,
        Err(e @ (KernelError::Os { .. } | KernelError::SeccompUnavailable { .. })) => {
            return require::missing(TEST, Need::Kernel, format_args!("the OS refuses fork/seccomp here: {e}"));
        }
        Err(e) => panic!("kernel run failed: {e}"),
    };
    assert_eq!(outcomes.len(), inputs.len());
    for (n, o) in outcomes.iter().enumerate() {
        if n == 1000 {
            assert!(matches!(o, Outcome::NotObservable(_)), "input {n}: {o:?}");
        } else if o != &Outcome::Action(0) {
            // Under outer seccomp filters a kill cannot be attributed.
            assert!(matches!(o, Outcome::NotObservable(kernel::Unobservable::OuterFilters)), "input {n}: {o:?}");
        }
    }
    let left = children_of_self();
    assert!(left.is_empty(), "children left behind: {left:?}");
}

#[test]
fn kills_mixed_with_returns_keep_order() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const TEST: &str = "kills_mixed_with_returns_keep_order";
    if require::have(TEST, Need::Kernel, seccomp_available()).is_none() {
        return;
    }
    // nr == 1 -> ret ERRNO-free constant 0x7fff0000 (ALLOW); else divide by zero.
    let filter = vec![
        Insn::stmt(0x20, 0),
        Insn::jump(0x15, 1, 0, 1),
        Insn::stmt(0x06, 0x7fff_0000),
        Insn::stmt(0x00, 0),
        Insn::stmt(0x07, 0),
        Insn::stmt(0x00, 1),
        Insn::stmt(0x3c, 0),
        Insn::stmt(0x16, 0),
    ];
    let inputs: Vec<Input> =
        (0..600).map(|i| Input { arch: AUDIT_ARCH_X86_64, nr: i % 3, args: [0; 6], ip: 0 }).collect();
    let outcomes = match run_vectors(&filter, &inputs) {
        Ok(o) => o,
        Err(e @ (KernelError::Os { .. } | KernelError::SeccompUnavailable { .. })) => {
            return require::missing(TEST, Need::Kernel, format_args!("the OS refuses fork/seccomp here: {e}"));
        }
        Err(e) => panic!("kernel run failed: {e}"),
    };
    for (input, o) in inputs.iter().zip(&outcomes) {
        let want = if input.nr == 1 { Outcome::Action(0x7fff_0000) } else { Outcome::Action(0) };
        if o != &want {
            assert!(matches!(o, Outcome::NotObservable(kernel::Unobservable::OuterFilters)), "nr {}: {o:?}", input.nr);
        }
    }
    assert!(children_of_self().is_empty());
}
