//! `bpfconv compile`: a profile's [`Meaning`] as a seccomp filter in
//! `optimize`'s layout, proved equal to the meaning before it is handed out.
//!
//! ```text
//! Meaning ─► Partition (per arch value, nr ranges: ret #K or a syscall's argument checks)
//!         ─► Partition::grow_trees (argument checks as trees over the words they test)
//!         ─► optimize::lay_out_preferring (arch jeq, jge tree over the ranges, the trees, landings past 255)
//!         ─► optimize::passes (jumps threaded, redundant loads and dead code dropped)
//!         ─► validate (seccomp mode, ≤ 4096) ─► kernel cache check ─► equiv against the reference program
//! ```
//!
//! A syscall's argument checks start as the reference's first-match chain
//! of its rules; [`seccomp::fast::Partition::grow_trees`] turns each into
//! a tree over the words it tests (one level per word, a run of values per
//! child, the same trees `bpfconv optimize` grows from a filter), and the
//! layout keeps every tree ([`optimize::Prefer::Depth`]: the shallowest
//! filter) unless that passes 4,096 instructions; then each tree only
//! where it is no longer than the chain (a chain lists a run of values one
//! `jeq` each, as libseccomp does, so a long allow-list's tree may be the
//! longer) and [`Stats::depth_layout_too_long`] says so.
//!
//! The reference program ([`crate::profile::reference`]) transcribes the
//! meaning rule by rule (a run of rules that differ in one compared value
//! as one list) and is
//! tested against [`Meaning::eval`]; the
//! output is written only once `equiv` proves the two equal on every
//! `struct seccomp_data`. Every (arch, nr) the meaning always allows (an
//! unconditional ALLOW, or the default on a number without rules) must be
//! one the kernel's constant-action cache allows without running the
//! filter ([`seccomp::cache::seccomp_is_const_allow`]): libseccomp's
//! filters get exactly those cached, so ours never get fewer.

use std::collections::HashMap;

use cbpf::opcode::BPF_MAXINSNS;
use cbpf::{Insn, Mode, Program};
use optimize::check::{self, CheckError, Maker};
use seccomp::action::SECCOMP_RET_ALLOW;
use seccomp::fast::{ArchPartition, Cut, Outcome, Partition, PartitionResidual as Residual, Ranges};

use crate::profile::code::Code;
use crate::profile::Unreachable;
use crate::profile::{reference, Meaning, PartKind, Syscall, View};

/// How to compile.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Bounds the proof.
    pub equiv: equiv::Options,
}

/// Figures of one compilation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// The instructions of the layout with every argument tree, where that
    /// passed `BPF_MAXINSNS` and the size-first layout was written.
    pub depth_layout_too_long: Option<usize>,
    pub insns: usize,
    /// The most instructions any path runs.
    pub longest_path: usize,
    pub reference_insns: usize,
    pub reference_longest_path: usize,
    /// Distinct argument-check programs and their instructions, before
    /// any tree.
    pub residuals: usize,
    pub residual_insns: usize,
    pub layout: optimize::LayoutStats,
    /// What the bytecode passes after the layout did.
    pub passes: optimize::PassStats,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "instructions {} (reference {}), longest path {} (reference {}), ranges {}, tree depth {}, argument checks {} ({} instructions), argument trees {}, residual instructions laid out {}, landings {}",
            self.insns,
            self.reference_insns,
            self.longest_path,
            self.reference_longest_path,
            self.layout.ranges,
            self.layout.tree_depth,
            self.residuals,
            self.residual_insns,
            self.layout.switches,
            self.layout.residual_insns,
            self.layout.landings
        )
    }
}

/// A compiled profile.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// Validated in seccomp mode, proved equal to `reference`.
    pub program: Program,
    /// The meaning transcribed (what `equiv PROFILE FILTER` compares with).
    pub reference: Program,
    pub stats: Stats,
}

/// Why no filter was produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The meaning's transcription is not a program seccomp(2) takes (too
    /// long to hold the proof's other side).
    #[error("the profile's reference program does not validate ({0}); it is too large to prove a filter against")]
    Reference(cbpf::ValidateError),
    /// A jump this crate wrote cannot reach its target (a bug).
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
    /// The filter needs more instructions than the kernel takes.
    #[error("the filter needs {insns} instructions, more than BPF_MAXINSNS ({max}); split the profile or drop rules")]
    TooLong { insns: usize, max: usize },
    /// The filter failed a check before it was handed out: it does not
    /// validate, a number the profile always allows is not in the kernel's
    /// cache, or it was not proved equal to the profile (a bug: reported,
    /// never written).
    #[error(transparent)]
    Check(#[from] CheckError),
}

/// The meaning's reference program, validated.
pub fn reference_program(m: &Meaning) -> Result<Program, CompileError> {
    let insns = reference::program(m)?;
    cbpf::validate(&insns, Mode::Seccomp).map_err(CompileError::Reference)
}

/// `m` as a filter, proved equal to it (see the module docs).
pub fn compile(m: &Meaning, options: &Options) -> Result<Compiled, CompileError> {
    let reference = reference_program(m)?;
    let (mut partition, residual_insns) = partition(m)?;
    let residuals = partition.residuals.len();
    partition.grow_trees();
    let lay_out = |prefer| {
        let (mut insns, layout) = optimize::lay_out_preferring(&partition, prefer);
        let passes = optimize::passes::run(&mut insns);
        (insns, layout, passes)
    };
    // Every argument tree laid out (the shallowest filter), unless that
    // passes what the kernel takes: then each tree only where it is no
    // longer than its syscall's checks.
    let (mut insns, mut layout, mut passes) = lay_out(optimize::Prefer::Depth);
    let mut depth_layout_too_long = None;
    if !fits(&insns) {
        depth_layout_too_long = Some(insns.len());
        (insns, layout, passes) = lay_out(optimize::Prefer::Size);
    }
    if !fits(&insns) {
        return Err(CompileError::TooLong { insns: insns.len(), max: BPF_MAXINSNS });
    }
    let program = check::validate(Maker::Compile, &insns)?;
    check::prove(Maker::Compile, &reference, &program, cache_lost(m, &program), &options.equiv)?;
    let stats = Stats {
        insns: program.len(),
        longest_path: optimize::longest_path(program.original()),
        reference_insns: reference.len(),
        reference_longest_path: optimize::longest_path(reference.original()),
        residuals,
        residual_insns,
        layout,
        passes,
        depth_layout_too_long,
    };
    Ok(Compiled { program, reference, stats })
}

/// Whether seccomp(2) takes a program this long (`bpf_check_basics_ok()`:
/// at most `BPF_MAXINSNS`).
fn fits(insns: &[Insn]) -> bool {
    insns.len() <= BPF_MAXINSNS
}

/// The meaning as `optimize`'s partition: per arch value, the numbers in
/// ranges of one outcome (a constant, or a syscall's argument checks,
/// identical ones shared); every other arch value the meaning's constant.
fn partition(m: &Meaning) -> Result<(Partition, usize), CompileError> {
    let mut residuals: Vec<Residual> = Vec::new();
    let mut index: HashMap<Vec<Insn>, usize> = HashMap::new();
    let mut arches = Vec::new();
    for a in &m.arches {
        let mut ranges: Ranges = Vec::new();
        for (i, part) in a.parts.iter().enumerate() {
            let last = a.parts.get(i + 1).map_or(u32::MAX, |p| p.first - 1);
            let view = match part.kind {
                PartKind::Action(k) => {
                    push(&mut ranges, part.first, Outcome::Action(k));
                    continue;
                }
                PartKind::View(v) => match a.views.get(v) {
                    Some(view) => view,
                    None => {
                        push(&mut ranges, part.first, Outcome::Action(m.other_arches));
                        continue;
                    }
                },
            };
            push(&mut ranges, part.first, Outcome::Action(view.default));
            for (&nr, s) in view.syscalls.range(part.first..=last) {
                let outcome = match constant(s) {
                    Some(k) => Outcome::Action(k),
                    None => {
                        let insns = arg_checks(view, s)?;
                        let next = residuals.len();
                        let i = *index.entry(insns.clone()).or_insert(next);
                        if i == next {
                            let program = check::validate(Maker::Compile, &insns)?;
                            residuals.push(Residual { program, reads_a: false, reads_x: false });
                        }
                        Outcome::Residual(i)
                    }
                };
                push(&mut ranges, nr, outcome);
                if nr < last {
                    push(&mut ranges, nr + 1, Outcome::Action(view.default));
                }
            }
        }
        arches.push(ArchPartition { arch: a.audit_arch, ranges, cut: Cut::Classes });
    }
    let residual_insns = residuals.iter().map(|r| r.program.len()).sum();
    let partition = Partition {
        arches,
        any_arch: None,
        other_arches: Outcome::Action(m.other_arches),
        residuals,
        switches: Vec::new(),
    };
    Ok((partition, residual_insns))
}

/// Appends `(start, o)`: replaces a range starting there, continues one
/// with the same outcome.
fn push(ranges: &mut Ranges, start: u32, o: Outcome) {
    if ranges.last().is_some_and(|&(s, _)| s == start) {
        ranges.pop();
    }
    if ranges.last().is_none_or(|&(_, last)| last != o) {
        ranges.push((start, o));
    }
}

/// The value of a syscall whose first rule (in evaluation order) always
/// matches.
fn constant(s: &Syscall) -> Option<u32> {
    s.rules.first().filter(|r| r.conds.is_empty()).map(|r| r.action)
}

/// A syscall's argument checks as a standalone classic program (entered
/// with nothing assumed in A or X): the reference's first-match chain of
/// its rules, which [`Partition::grow_trees`] then grows into a tree;
/// whatever the layout emits is held to the meaning by the proof against
/// the reference.
fn arg_checks(view: &View, s: &Syscall) -> Result<Vec<Insn>, CompileError> {
    let mut c = Code::default();
    reference::rule_chain(&mut c, view.arch, &s.rules, view.default);
    Ok(c.finish()?)
}

/// The first (arch value, nr) the meaning always allows and the kernel's
/// cache would not, for every view with a syscall table (its numbers
/// `0..NR_syscalls`, the arch as the kernel's native one; x32's numbers
/// are past every bitmap).
pub fn cache_lost(m: &Meaning, program: &Program) -> Option<(u32, u32)> {
    use seccomp::cache::seccomp_is_const_allow;
    for a in &m.arches {
        for (v, view) in a.views.iter().enumerate() {
            let Some(table) = view.arch.syscalls() else { continue };
            for nr in 0..table.nr_syscalls {
                if a.part(nr) != PartKind::View(v) {
                    continue;
                }
                let allowed = match view.syscalls.get(&nr) {
                    Some(s) => constant(s) == Some(SECCOMP_RET_ALLOW),
                    None => view.default == SECCOMP_RET_ALLOW,
                };
                if allowed && !seccomp_is_const_allow(program.original(), nr, a.audit_arch, a.audit_arch) {
                    return Some((a.audit_arch, nr));
                }
            }
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::profile::{read, Format, Selection};
    use seccomp::Arch;

    #[test]
    fn a_small_profile_compiles_to_a_proved_tree() {
        let json = r#"{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"],
            "syscalls": [{"names": ["read", "write", "close", "exit", "exit_group", "futex"], "action": "SCMP_ACT_ALLOW"},
                         {"names": ["kill"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 1, "value": 9, "op": "SCMP_CMP_NE"}]},
                         {"names": ["reboot"], "action": "SCMP_ACT_KILL_PROCESS"}]}"#;
        let m = read(json, Some(Format::Oci), &Selection::native(Arch::X86_64)).unwrap();
        let out = compile(&m, &Options::default()).unwrap();
        assert!(out.stats.insns < out.stats.reference_insns, "{}", out.stats);
        assert!(out.stats.longest_path < out.stats.reference_longest_path, "{}", out.stats);
        // kill's checks are one program per ABI width: x86_64 (64-bit), i386 and x32 (32-bit, shared).
        assert_eq!(out.stats.residuals, 2, "{}", out.stats);
        assert_eq!(out.stats.depth_layout_too_long, None, "{}", out.stats);
        let s = out.stats;
        assert!(
            s.to_string().starts_with(&format!(
                "instructions {} (reference {}), longest path {} (reference {}), ranges {}",
                s.insns, s.reference_insns, s.longest_path, s.reference_longest_path, s.layout.ranges
            )),
            "{s}"
        );
    }

    /// `ioctl` allowed for 3,400 requests: every argument tree would pass
    /// 4,096 instructions, so the size-first layout is written (about one
    /// instruction a request), and the stats say how long the other was.
    #[test]
    fn past_4096_with_every_tree_the_size_first_layout_is_written() {
        let entries: Vec<String> = (0..3400u64)
            .map(|i| {
                format!(
                    r#"{{"names": ["ioctl"], "action": "SCMP_ACT_ALLOW", "args": [{{"index": 1, "value": {}, "op": "SCMP_CMP_EQ"}}]}}"#,
                    0x5400 + 7 * i
                )
            })
            .collect();
        let json = format!(
            r#"{{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64"], "syscalls": [{}]}}"#,
            entries.join(", ")
        );
        let m = read(&json, Some(Format::Oci), &Selection::native(Arch::X86_64)).unwrap();
        let out = compile(&m, &Options::default()).unwrap();
        let s = out.stats;
        assert!(s.depth_layout_too_long.is_some_and(|n| n > BPF_MAXINSNS), "{s}");
        assert!(s.insns < 3400 + 100, "{s}");
    }

    /// seccomp(2)'s bound, where both layouts are held to it.
    #[test]
    fn a_program_fits_up_to_bpf_maxinsns() {
        let insns = vec![Insn::stmt(cbpf::opcode::RET_K, 0); BPF_MAXINSNS + 1];
        assert!(fits(&insns[..BPF_MAXINSNS]));
        assert!(!fits(&insns));
    }

    const ALLOW: u32 = SECCOMP_RET_ALLOW;
    const EPERM: u32 = 0x0005_0001;

    /// A meaning `compile` takes from any caller, not only from a profile's
    /// reader: one view behind two parts of its arch value (below 100 and
    /// from `u32::MAX`, as runc's x86_64 without x32 has), with rules on
    /// the last number of a part (99, `u32::MAX`) and on a number the view
    /// holds in another part's run (100, which the middle part kills).
    /// Each number answers as the meaning does.
    #[test]
    fn a_view_is_compiled_only_over_its_parts() {
        use crate::profile::{ArchValue, Cond, Origin, Part, Rule, Width};
        use crate::rules::{ArgCond, CmpOp};
        let json = r#"{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]}"#;
        let mut m = read(json, Some(Format::Oci), &Selection::native(Arch::X86_64)).unwrap();
        let cond = Cond { width: Width::Bits64, cmp: ArgCond { index: 0, op: CmpOp::Eq, value: 7, value_two: 0 } };
        let rule = |action| Rule { action, conds: vec![cond], origin: Origin { entry: 0, name: "t".into() } };
        let view = &mut m.arches[0].views[0];
        view.syscalls.clear();
        for nr in [99, 100, u32::MAX] {
            view.syscalls.insert(nr, Syscall { name: "t", rules: vec![rule(ALLOW)] });
        }
        let a: &mut ArchValue = &mut m.arches[0];
        a.parts = vec![
            Part { first: 0, kind: PartKind::View(0) },
            Part { first: 100, kind: PartKind::Action(0) },
            Part { first: u32::MAX, kind: PartKind::View(0) },
        ];
        let arch = a.audit_arch;
        let out = compile(&m, &Options::default()).unwrap();
        let interp = cbpf::Interp::new(&out.program);
        for nr in [0, 98, 99, 100, 101, u32::MAX - 1, u32::MAX] {
            for arg in [7, 8] {
                let d =
                    seccomp::SeccompData { nr: nr as i32, arch, instruction_pointer: 0, args: [arg, 0, 0, 0, 0, 0] };
                let got = interp.run_seccomp(&d.in_kernel_order().to_bytes()).unwrap();
                assert_eq!(got, m.eval(&d), "nr {nr} arg {arg}");
            }
        }
        assert_eq!(
            m.eval(&seccomp::SeccompData { nr: 100, arch, instruction_pointer: 0, args: [7, 0, 0, 0, 0, 0] }),
            0
        );
    }

    /// `cache_lost` names the first number the meaning always allows that
    /// a program leaves out of the kernel's cache: none for the compiled
    /// filter; `read` (0) for one that reads an argument first.
    #[test]
    fn cache_lost_names_the_first_allowed_number_the_cache_misses() {
        let json = r#"{"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": [{"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"}]}"#;
        let m = read(json, Some(Format::Oci), &Selection::native(Arch::X86_64)).unwrap();
        let out = compile(&m, &Options::default()).unwrap();
        assert_eq!(cache_lost(&m, &out.program), None);
        let text = format!(
            "ld [16]\njeq #9, deny, go\ngo: ld [0]\njgt #1, deny, allow\nallow: ret #{ALLOW}\ndeny: ret #{EPERM}\n"
        );
        let (_, insns) = cbpf::text::parse_auto(text.as_bytes()).unwrap();
        let late = cbpf::validate(&insns, Mode::Seccomp).unwrap();
        assert_eq!(cache_lost(&m, &late), Some((seccomp::arch::AUDIT_ARCH_X86_64, 0)));
        // A number the meaning does not always allow is not asked for.
        let json = json.replace("\"read\", ", "");
        let m = read(&json, Some(Format::Oci), &Selection::native(Arch::X86_64)).unwrap();
        assert_eq!(cache_lost(&m, &late), Some((seccomp::arch::AUDIT_ARCH_X86_64, 1)));
    }
}
