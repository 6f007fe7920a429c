//! `bpfconv optimize`: a seccomp filter rewritten so that what it costs the
//! kernel does not grow with the syscall's place in it, proved equal to the
//! original before it is handed out.
//!
//! [`optimize`] builds the filter's [`Partition`] (the fast engine's
//! specialisation per arch and per range of syscall numbers: constant
//! actions and residual argument checks, identical residuals shared, each
//! residual grown into a tree over the words it tests,
//! [`seccomp::fast::tree`]), lays it out as one classic program
//! ([`layout`](self) module: `ld [4]`, one `jeq` per arch, per arch `ld [0]`
//! and a compare tree over the range boundaries planned for the fewest
//! compares within `log2 + 2` levels (`plan` module: `jge` splits, `jeq`
//! chains), leaves `ret #K`, an argument tree laid out the same way per
//! word, or a residual), runs the bytecode passes ([`passes`]), and then:
//!
//! 1. validates it as seccomp(2) would ([`cbpf::validate()`], seccomp mode;
//!    at most `BPF_MAXINSNS` instructions);
//! 2. checks that every (arch, nr) the kernel's constant-action cache marks
//!    ALLOW for the input ([`seccomp::cache::seccomp_is_const_allow`]) is
//!    still marked, for every arch the filter names that has a syscall
//!    table ([`CheckError::CacheLost`] otherwise);
//! 3. proves it equal to the input with [`equiv::check`] (every bit of every
//!    `struct seccomp_data` word): [`CheckError::Differ`] with the input
//!    that tells them apart, or [`CheckError::Undecided`] within the
//!    budget; never an unproved output.
//!
//! A tree is left out where it is longer than the residual it stands for,
//! priced before the passes; the layout with every tree is then made too
//! and taken when it comes out shorter.
//!
//! When the layout is longer than the input (or its residuals alone are),
//! the input is returned unchanged and [`Stats::kept_input`] says why: the
//! output is never larger than the input. [`Prefer::Depth`]
//! ([`Options::prefer`]) trades that for the shortest paths: every argument
//! tree is laid out even where it is longer than the checks it stands for
//! (libseccomp's allow-list of 800 `ioctl` requests, 821 instructions and
//! a path of 814, becomes 965 with a path of 24), up to `BPF_MAXINSNS`.
//!
//! ```
//! use cbpf::{validate, Insn, Mode};
//! // An allow-list of 0..100 on x86_64 as a libseccomp-style chain.
//! let n = 100u32;
//! let mut insns = vec![Insn::stmt(0x20, 4), Insn::jump(0x15, 0xc000_003e, 0, n as u8 + 1), Insn::stmt(0x20, 0)];
//! insns.extend((0..n).map(|nr| Insn::jump(0x15, nr, (n - nr) as u8, 0)));
//! insns.push(Insn::stmt(0x06, 0)); // KILL_THREAD
//! insns.push(Insn::stmt(0x06, 0x7fff_0000)); // ALLOW
//! let input = validate(&insns, Mode::Seccomp).unwrap();
//! let out = optimize::build(&input, &mut Default::default()).unwrap();
//! // ld [4]; jeq #x86_64; ld [0]; jge #100; and the two returns.
//! assert_eq!(out.stats.output_insns, 6);
//! assert_eq!(out.stats.layout.tree_depth, 1);
//! //! ```

pub mod check;
mod layout;
pub mod passes;
mod plan;

use cbpf::opcode::BPF_MAXINSNS;
use cbpf::{Insn, Mode, Program};
use seccomp::analysis::{AnalysisError, Budget};
use seccomp::fast::{Partition, PartitionError};

pub use check::{CheckError, Maker};
pub use layout::{emit as lay_out, emit_preferring as lay_out_preferring, LayoutStats, Prefer};
pub use passes::PassStats;

/// How to optimise.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Bounds the partition (data-flow passes and specialisations, shared
    /// as in `bpfconv analyze`).
    pub budget: Budget,
    /// Bounds the proof.
    pub equiv: equiv::Options,
    /// Where an argument tree is longer than the checks it stands for: the
    /// fewest instructions (the default; the output is never longer than
    /// the input) or the shortest paths (an output longer than the input is
    /// taken when it is shallower and at most `BPF_MAXINSNS` long; else the
    /// size-first layout is tried instead).
    pub prefer: Prefer,
}

/// Why the input was returned unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptInput {
    /// The layout had this many instructions, more than the input.
    Larger { output: usize },
    /// The distinct residual programs alone held more instructions than
    /// the input.
    Residuals,
}

impl std::fmt::Display for KeptInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeptInput::Larger { output } => write!(f, "the optimised layout has {output} instructions"),
            KeptInput::Residuals => f.write_str("its residual programs alone are longer"),
        }
    }
}

/// Figures of one run. `depth_layout_too_long`: with [`Prefer::Depth`],
/// the depth-first layout's length when it was past `BPF_MAXINSNS` and the
/// size-first one was laid out instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    pub depth_layout_too_long: Option<usize>,
    pub input_insns: usize,
    pub output_insns: usize,
    /// Arches with a dispatch of their own (0: the filter never loads arch).
    pub arches: usize,
    /// Distinct residual programs of the ranges (before any tree) and
    /// their instructions: what the argument checks cost as the filter
    /// wrote them.
    pub residuals: usize,
    pub residual_insns: usize,
    /// Instructions of residual programs in the output: tree leaves and
    /// residuals laid out whole (trees replace the rest).
    pub output_residual_insns: usize,
    pub layout: LayoutStats,
    /// What the bytecode passes after the layout did ([`passes`]).
    pub passes: PassStats,
    /// The longest path through the input and the output, in instructions.
    pub input_longest_path: usize,
    pub output_longest_path: usize,
    /// Set when the output is the input unchanged.
    pub kept_input: Option<KeptInput>,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "instructions {} -> {}, longest path {} -> {}, arches {}, ranges {}, tree depth {}, residuals {} ({} instructions), residual instructions {} -> {}, switches {}, landings {}, passes: {} threaded, {} redundant loads, {} dead",
            self.input_insns,
            self.output_insns,
            self.input_longest_path,
            self.output_longest_path,
            self.arches,
            self.layout.ranges,
            self.layout.tree_depth,
            self.residuals,
            self.residual_insns,
            self.residual_insns,
            self.output_residual_insns,
            self.layout.switches,
            self.layout.landings,
            self.passes.threaded,
            self.passes.redundant_loads,
            self.passes.dead,
        )?;
        match self.kept_input {
            Some(why) => write!(f, " (input kept: {why})"),
            None => Ok(()),
        }
    }
}

/// An optimised filter.
#[derive(Debug, Clone)]
pub struct Optimized {
    /// Validated in seccomp mode; [`Program::original`] is what to write.
    pub program: Program,
    pub stats: Stats,
}

/// Why no filter was produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptimizeError {
    /// The input was validated as a socket filter.
    #[error("program was validated in {mode} mode; optimize needs a seccomp filter")]
    NotSeccomp { mode: Mode },
    /// The partition's budget ran out.
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// The output failed a check before it was handed out (a bug of this
    /// crate: reported, never written).
    #[error(transparent)]
    Check(#[from] CheckError),
}

/// The optimised filter, proved equal to `input` (see the crate docs).
pub fn optimize(input: &Program, options: &Options) -> Result<Optimized, OptimizeError> {
    let mut budget = options.budget.clone();
    let built = build_preferring(input, &mut budget, options.prefer)?;
    if built.stats.kept_input.is_some() {
        return Ok(built);
    }
    let lost = cache_lost(input, &built.program);
    check::prove(Maker::Optimize, input, &built.program, lost, &options.equiv)?;
    Ok(built)
}

/// The optimised layout of `input`, validated but not proved (the first
/// half of [`optimize`]; tests compare it with the input by running both),
/// argument trees laid out as [`Prefer::Size`] chooses.
pub fn build(input: &Program, budget: &mut Budget) -> Result<Optimized, OptimizeError> {
    build_preferring(input, budget, Prefer::Size)
}

/// [`build`], with the argument trees [`Prefer`] chooses.
pub fn build_preferring(input: &Program, budget: &mut Budget, prefer: Prefer) -> Result<Optimized, OptimizeError> {
    if input.mode() != Mode::Seccomp {
        return Err(OptimizeError::NotSeccomp { mode: input.mode() });
    }
    let mut stats =
        Stats { input_insns: input.len(), input_longest_path: longest_path(input.original()), ..Stats::default() };
    let kept = |mut stats: Stats, why: KeptInput| {
        stats.kept_input = Some(why);
        stats.output_insns = stats.input_insns;
        stats.output_longest_path = stats.input_longest_path;
        Ok(Optimized { program: input.clone(), stats })
    };
    let partition = match Partition::build(input, budget, input.len().saturating_mul(RESIDUAL_FACTOR)) {
        Ok(p) => p,
        Err(PartitionError::ResidualInsns { .. }) => return kept(stats, KeptInput::Residuals),
        Err(PartitionError::Analysis(e)) => return Err(OptimizeError::Analysis(e)),
        Err(PartitionError::NotSeccomp { mode }) => return Err(OptimizeError::NotSeccomp { mode }),
        Err(e) => return Err(OptimizeError::Analysis(budget_of(&e, budget))),
    };
    stats.arches = partition.arches.len();
    let (residuals, residual_insns) = range_residuals(&partition);
    stats.residuals = residuals;
    stats.residual_insns = residual_insns;
    let lay_out = |prefer: Prefer| {
        let (mut insns, layout) = layout::emit_preferring(&partition, prefer);
        let passes = passes::run(&mut insns);
        (insns, layout, passes)
    };
    let (mut insns, mut layout, mut passes) = lay_out(prefer);
    // Size preferred: `Choice` prices each tree against its residual before
    // the passes and the sharing of leaves, so where it kept a residual the
    // all-trees layout can still come out shorter; the shorter one is taken
    // (on a tie, the shallower).
    if prefer == Prefer::Size && layout.switches < partition.switches.len() {
        let trees = lay_out(Prefer::Depth);
        if (trees.0.len(), longest_path(&trees.0)) < (insns.len(), longest_path(&insns)) {
            (insns, layout, passes) = trees;
        }
    }
    // Depth preferred: a layout longer than the input is taken when the
    // kernel takes it and it is shallower than the input, else the
    // size-first one (the same where no tree was longer than its residual).
    let mut longest = input.len();
    if prefer == Prefer::Depth {
        if insns.len() > BPF_MAXINSNS {
            stats.depth_layout_too_long = Some(insns.len());
        } else if longest_path(&insns) < stats.input_longest_path {
            longest = BPF_MAXINSNS;
        }
        if longest < insns.len() {
            (insns, layout, passes) = lay_out(Prefer::Size);
        }
    }
    stats.output_residual_insns = layout.residual_insns;
    stats.layout = layout;
    stats.passes = passes;
    if insns.len() > longest {
        return kept(stats, KeptInput::Larger { output: insns.len() });
    }
    let program = check::validate(Maker::Optimize, &insns)?;
    stats.output_insns = program.len();
    stats.output_longest_path = longest_path(program.original());
    Ok(Optimized { program, stats })
}

/// The residual programs of the ranges stand for at most this many times
/// the input's instructions before the input is kept (their trees may make
/// a layout smaller than their sum; the layout's own length decides).
pub const RESIDUAL_FACTOR: usize = 4;

/// The distinct residuals the ranges (and other arches) reach before any
/// tree, and their instructions: a switch counts as the residual it stands
/// for.
fn range_residuals(partition: &Partition) -> (usize, usize) {
    let stand_in = |o: seccomp::fast::Outcome| match o {
        seccomp::fast::Outcome::Action(_) => None,
        seccomp::fast::Outcome::Residual(i) => Some(i),
        seccomp::fast::Outcome::Switch(j) => partition.switches.get(j).map(|s| s.residual),
    };
    let ranges = partition.arches.iter().map(|a| &a.ranges).chain(partition.any_arch.as_ref());
    let mut seen: Vec<usize> = ranges
        .flat_map(|r| r.iter().filter_map(|&(_, o)| stand_in(o)))
        .chain(stand_in(partition.other_arches))
        .collect();
    seen.sort_unstable();
    seen.dedup();
    let insns = seen.iter().filter_map(|&i| partition.residuals.get(i)).map(|r| r.program.len()).sum();
    (seen.len(), insns)
}

/// A budget error standing for a partition error this crate does not know.
fn budget_of(_: &PartitionError, budget: &Budget) -> AnalysisError {
    AnalysisError::Budget { kind: seccomp::analysis::BudgetKind::Steps, limit: budget.max_steps }
}

/// The most instructions any path from the first instruction to a `ret`
/// executes (every jump followed both ways, feasible or not) in a validated
/// classic program (forward jumps only).
pub fn longest_path(insns: &[Insn]) -> usize {
    let mut len = vec![0usize; insns.len() + 1];
    for pc in (0..insns.len()).rev() {
        let at = |d: usize| len.get(pc + 1 + d).copied().unwrap_or(0);
        let here = match insns.get(pc).and_then(|i| i.op()) {
            Some(cbpf::Op::RetK { .. } | cbpf::Op::RetA) => 1,
            Some(cbpf::Op::Ja { k }) => 1 + at(k as usize),
            Some(cbpf::Op::Jmp { jt, jf, .. }) => 1 + at(usize::from(jt)).max(at(usize::from(jf))),
            _ => 1 + at(0),
        };
        if let Some(slot) = len.get_mut(pc) {
            *slot = here;
        }
    }
    len.first().copied().unwrap_or(0)
}

/// The first (arch, nr) that the kernel's constant-action cache marks ALLOW
/// for `input` but not for `output`, over every arch `input` compares with
/// that has a syscall table (x86_64 and i386 for a filter that names none),
/// numbers `0..NR_syscalls`, each arch as the kernel's native one.
pub fn cache_lost(input: &Program, output: &Program) -> Option<(u32, u32)> {
    use seccomp::arch::{Arch, AUDIT_ARCH_I386, AUDIT_ARCH_X86_64};
    use seccomp::cache::seccomp_is_const_allow;
    let mut arches = seccomp::analysis::compared_arches(input).unwrap_or_default();
    if arches.is_empty() {
        arches = vec![AUDIT_ARCH_X86_64, AUDIT_ARCH_I386];
    }
    for arch in arches {
        let Some(table) = seccomp::syscalls::table(Arch::from_audit_arch(arch)) else { continue };
        for nr in 0..table.nr_syscalls {
            if seccomp_is_const_allow(input.original(), nr, arch, arch)
                && !seccomp_is_const_allow(output.original(), nr, arch, arch)
            {
                return Some((arch, nr));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
