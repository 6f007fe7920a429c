//! The running kernel's figures: which inputs it can time (checked
//! against the classic interpreter on the kernel engine first), ns per
//! system call with the filter installed and forced past the constant-
//! action cache, and the cache's own cost.

use engine::{EngineKind, Outcome, Prepared, SeccompEngine};
use timing::stats::Stats;

use super::{kernel_mix, Cell, Column, Input, KERNEL_FORCED};

/// Which inputs the kernel can time (x86_64 native calls), each checked
/// against the classic interpreter on the kernel engine first.
pub(super) fn kernel_check(prepared: &Prepared, inputs: &[Input]) -> Vec<std::result::Result<(), String>> {
    use cbpf::uapi::x86_64::X32_SYSCALL_BIT;
    let mut engine = match SeccompEngine::new(EngineKind::Kernel, prepared) {
        Ok(e) => e,
        Err(e) => return vec![Err(e.to_string()); inputs.len()],
    };
    let datas: Vec<cbpf::SeccompData> = inputs.iter().map(|i| i.data).collect();
    let outcomes = match engine.eval_batch(&datas) {
        Ok(o) => o,
        Err(e) => return vec![Err(e.to_string()); inputs.len()],
    };
    inputs
        .iter()
        .zip(outcomes)
        .map(|(input, outcome)| {
            // x32 numbers (bit 30 of a non-negative nr) would enter another syscall table.
            let x32 = input.data.nr >= 0 && input.data.nr as u32 & X32_SYSCALL_BIT != 0;
            if input.data.arch != cbpf::uapi::audit::AUDIT_ARCH_X86_64 || x32 {
                return Err("the kernel timing issues native x86_64 system calls only".to_string());
            }
            match outcome {
                Outcome::Action(a) if a == input.ret => Ok(()),
                Outcome::Action(a) => {
                    Err(format!("the kernel returns {a:#010x}, the classic interpreter {:#010x}: not timed", input.ret))
                }
                Outcome::NotObservable(why) => Err(why),
            }
        })
        .collect()
}

/// System calls per kernel sample, so the kernel takes about `time` seconds.
pub(super) fn kernel_iterations(time: f64, tasks: u64) -> u64 {
    // Each task: six loops of `iterations` calls of roughly 300 ns.
    let per_task = time / tasks.max(1) as f64;
    ((per_task / (6.0 * 300e-9)) as u64).clamp(200, 500_000)
}

/// ns per call of `filters` on `nr`, five samples (`kernel::time_syscalls`).
pub(super) fn syscall_samples(
    filters: &[Vec<cbpf::Insn>],
    nr: u32,
    args: [u64; 6],
    iterations: u64,
) -> std::result::Result<Vec<f64>, String> {
    let args = args.map(kernel::SyscallArg::Value);
    kernel::time_syscalls(filters, i64::from(nr), args, iterations).map(|t| t.samples_ns).map_err(|e| e.to_string())
}

/// `with − without`: the median of the differences of each sample of `with`
/// from the median of `without`, with their range.
pub(super) fn difference(with: &[f64], without: &[f64]) -> Cell {
    let Some(base) = Stats::from_samples(without) else { return Cell::Unavailable("no samples".to_string()) };
    let diffs: Vec<f64> = with.iter().map(|w| w - base.median).collect();
    match Stats::from_samples(&diffs) {
        Some(s) => Cell::Measured(s),
        None => Cell::Unavailable("no samples".to_string()),
    }
}

/// The kernel columns: as installed (the cache's cost where it skips the
/// filter) and forced (the filter always runs), plus the cache-hit cost.
pub(super) fn kernel_columns(
    prepared: &Prepared,
    inputs: &[Input],
    usable: &[std::result::Result<(), String>],
    iterations: u64,
    bar: &indicatif::ProgressBar,
) -> (Column, Column, Cell) {
    use cbpf::uapi::audit::AUDIT_ARCH_X86_64;
    let original = prepared.program().original();
    // The cache's own cost: getppid under an always-allow filter (cached
    // for every number) minus getppid unfiltered; the call runs both times.
    const GETPPID: u32 = 110;
    let bitmap = vec![
        cbpf::Insn::stmt(cbpf::opcode::LD_W_ABS, cbpf::uapi::seccomp::OFFSET_NR),
        cbpf::Insn::stmt(cbpf::opcode::RET_K, cbpf::uapi::seccomp::SECCOMP_RET_ALLOW),
    ];
    let hit = match (
        syscall_samples(&[bitmap], GETPPID, [0; 6], iterations),
        syscall_samples(&[], GETPPID, [0; 6], iterations),
    ) {
        (Ok(with), Ok(without)) => difference(&with, &without),
        (Err(e), _) | (_, Err(e)) => Cell::Unavailable(e),
    };
    bar.inc(2);
    let mut forced = Column { name: KERNEL_FORCED.to_string(), cells: Vec::new(), cached: Vec::new() };
    let mut installed = Column { name: "kernel".to_string(), cells: Vec::new(), cached: Vec::new() };
    for (input, ok) in inputs.iter().zip(usable) {
        let nr = input.data.nr as u32;
        let cell = match ok {
            Err(why) => Cell::Unavailable(why.clone()),
            Ok(()) => {
                let refuse_all = [cbpf::Insn::stmt(cbpf::opcode::RET_K, 0)];
                let cell = match (kernel::refusing(original, nr), kernel::refusing(&refuse_all, nr)) {
                    (Some(measured), Some(baseline)) => {
                        match (
                            syscall_samples(&[measured], nr, input.data.args, iterations),
                            syscall_samples(&[baseline], nr, input.data.args, iterations),
                        ) {
                            (Ok(with), Ok(without)) => difference(&with, &without),
                            (Err(e), _) | (_, Err(e)) => Cell::Unavailable(e),
                        }
                    }
                    _ => Cell::Unavailable("four instructions longer than BPF_MAXINSNS".to_string()),
                };
                bar.inc(2);
                cell
            }
        };
        let cached = ok
            .is_ok()
            .then(|| seccomp::cache::seccomp_is_const_allow(original, nr, AUDIT_ARCH_X86_64, AUDIT_ARCH_X86_64));
        installed.cells.push(if cached == Some(true) { hit.clone() } else { cell.clone() });
        installed.cached.push(cached);
        forced.cells.push(cell);
        forced.cached.push(cached);
    }
    for col in [&mut installed, &mut forced] {
        let mix = kernel_mix(&col.cells);
        col.cells.push(mix);
        col.cached.push(None);
    }
    (installed, forced, hit)
}
