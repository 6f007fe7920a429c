//! The `fast` engine: a seccomp filter specialised per (arch, syscall), so a
//! 300-syscall allow-list costs what a 3-instruction filter does.
//!
//! The 2018 libseccomp hash-map proposal measured getppid at the end of a
//! 306-syscall filter costing 3.4x getppid at its front (SPEC §10, Table D);
//! the kernel's 2020 bitmap only short-cuts numbers that are *always*
//! ALLOW. [`FastFilter::build`] does better in userspace without changing
//! what the filter means: it partially evaluates the filter once per
//! (arch, nr) with both known ([`specialize`](self) pass), giving either a
//! constant action or a small *residual* classic program in which only the
//! argument and instruction-pointer checks of that syscall remain.
//!
//! ```text
//! eval(data) ─► arch (linear scan of the few arches the filter names)
//!                 ├─ nr < table size ─► dense[nr] ───────────────────────┐
//!                 ├─ past it, when nr has classes ─► runs (binary search) ┤
//!                 ├─ nr compared by the filter ─► sparse ─────────────────┼─► Action(v) ─► v
//!                 ├─ any other nr ─► specialised on arch only ────────────┤   Switch(i) ─► word & mask,
//!               unknown arch ─► specialised on "none of the named arches" ┘     runs (binary search) ─┐
//!                                                                            (native code where it can)
//!                                                                            Residual(i) ─► cbpf::Interp
//! ```
//!
//! Which entries: per arch the filter compares `arch` against (as
//! [`crate::analysis::compared_arches`] defines it, found by the
//! specialiser's own pass), numbers `0..N` where `N` is the arch's syscall
//! table size ([`crate::syscalls::table`], else [`MIN_DENSE`], extended up
//! to [`DENSE_LIMIT`] to cover every compared number), plus every other
//! number the filter compares `nr` against (as
//! [`crate::analysis::compared_nrs`]: x32 numbers, `-1`, ...). Any other
//! (arch, nr) runs a program specialised on the arch alone — unless the
//! filter uses `nr` only in order comparisons with constants (libseccomp's
//! filters): then the numbers past the dense part are cut into runs at
//! those constants ([`crate::analysis::NrClasses::representatives`], the
//! cut [`Partition`] makes), each run specialised once and found by a
//! binary search (x32 numbers, `-1`: a constant). Arches the
//! filter never names fail each of its `jeq` tests of `arch` alike: they
//! share one entry, the filter specialised for "`arch` is none of the
//! compared ones" (the same specialisation as [`Partition`]'s
//! `other_arches`), usually a constant (the arch check's KILL).
//!
//! A residual whose argument checks compare words (masked or not) with
//! constants is a tree ([`tree`](self) module, the same [`Switch`]es
//! `optimize` lays out): per word, its values cut into runs, each run
//! specialised once; libseccomp's `chdir(A0 == 0) .. chdir(A0 == 99)`
//! rules, OpenSSH's `and` masks, Chromium's bit tests all become a few
//! switches ending in constants. Eval reads the word, masks it, finds its
//! run and continues there ([`MAX_TREE_DEPTH`] words deep at most); only
//! what no tree can say runs on the classic interpreter. A switch whose one
//! single-value run leads to another switch (libseccomp's `hi == 0` before
//! the low word) is fused into it as a guard (`fuse_guards`): one node per
//! 64-bit comparison.
//!
//! On x86-64 Linux the switches run as native code ([`native`]: each a
//! load, a mask and a binary search of compares and branches, module
//! `native_code`), so a walk down a tree is branches the CPU predicts
//! rather than a chain of table loads; elsewhere, or where the host refuses
//! executable memory ([`FastFilter::native_refusal`]), eval walks the same
//! switches as tables. Both give the same answer ([`FastFilter::without_native`]
//! keeps the tables, for comparing).
//!
//! Residual programs are validated with [`cbpf::validate()`] (seccomp mode)
//! and run on [`cbpf::Interp`]; identical residuals are shared (hash-consed).
//! If a residual were ever refused, that entry runs the whole filter
//! instead ([`FastStats::whole_filter_entries`] counts them): the answer is
//! always the filter's.
//!
//! Soundness: a constant is recorded only when every reachable return of the
//! specialised filter gives that value; folding follows the classic
//! semantics as [`cbpf::Interp`] runs them. Tests compare [`FastFilter::eval`]
//! with [`cbpf::Interp`] on every kernel-checked vector and on random
//! programs and inputs.
//!
//! ```
//! use cbpf::{validate, Insn, Mode, SeccompData};
//! use seccomp::fast::FastFilter;
//! let prog = validate(&[
//!     Insn::stmt(0x20, 4),                   // ld [4]          (arch)
//!     Insn::jump(0x15, 0xc000_003e, 0, 3),   // jeq #x86_64, 0, 3
//!     Insn::stmt(0x20, 0),                   // ld [0]          (nr)
//!     Insn::jump(0x15, 110, 0, 1),           // jeq #110 (getppid), 0, 1
//!     Insn::stmt(0x06, 0x7fff_0000),         // ret ALLOW
//!     Insn::stmt(0x06, 0),                   // ret KILL_THREAD
//! ], Mode::Seccomp).unwrap();
//! let fast = FastFilter::build(&prog).unwrap();
//! let getppid = SeccompData { nr: 110, arch: 0xc000_003e, ..Default::default() };
//! assert_eq!(fast.eval(&getppid), 0x7fff_0000);
//! assert_eq!(fast.stats().residual_entries, 0); // every x86_64 number is a constant
//! ```

mod bits;
mod native_code;
mod outcome;
mod partition;
mod specialize;
mod stack;
mod switch_table;
pub mod tree;

use std::collections::HashMap;
use std::sync::Arc;

use cbpf::{Interp, Mode, Program, SeccompData};

use crate::action::SECCOMP_RET_KILL_PROCESS;
use crate::arch::Arch;
use crate::data::{OFFSET_ARCH, OFFSET_NR};
use native_code::NativeCode;
use specialize::{KeyFact, Specialized, Specializer};
use switch_table::{fuse_guards, Guard, SwitchTable, NEAR_RUNS};
use tree::{Forest, Refused};

pub use partition::{
    ArchPartition, Cut, Outcome, Partition, PartitionError, Ranges, Residual as PartitionResidual, TREE_INSN_BUDGET,
    TREE_STEP_BUDGET,
};
pub use stack::FastStack;
/// [`FastStack`]'s former name, kept so code written against it builds.
#[doc(hidden)]
pub use stack::FastStack as FastChain;
pub use tree::{Switch, MAX_TREE_DEPTH};

/// Smallest dense table for an arch without a syscall table of ours.
pub const MIN_DENSE: u32 = 64;
/// Compared numbers below this extend the dense table; larger ones (x32
/// numbers, `-1`) get sparse entries.
pub const DENSE_LIMIT: u32 = 1024;

/// Where the second dense window of an arch's numbers starts: x32's
/// `__X32_SYSCALL_BIT` (x32 system calls reach an x86_64 filter as
/// `nr | 0x4000_0000`, arch x86_64), [`DENSE_LIMIT`] numbers long.
const HIGH_BASE: u32 = crate::arch::X32_SYSCALL_BIT;

/// Gives `table` the window `HIGH_BASE..HIGH_BASE + DENSE_LIMIT` as a
/// dense array of what its searches answer there, when the filter compares
/// numbers inside it or cuts runs there (libseccomp's x32 checks, a binary
/// tree over x32 numbers), and drops the window's numbers from `sparse`,
/// so that the search before the window is short. Costs no
/// specialisation: each slot is one the table already has.
fn add_high_window(table: &mut ArchTable) {
    let window = HIGH_BASE..HIGH_BASE + DENSE_LIMIT;
    let compared = table.sparse.iter().any(|(nr, _)| window.contains(nr));
    let cut = table.ranges.iter().any(|(start, _)| window.contains(start));
    if !(compared || cut) {
        return;
    }
    table.high = window.clone().map(|nr| table.slot(nr)).collect();
    table.sparse = table.sparse.iter().filter(|(nr, _)| !window.contains(nr)).copied().collect();
}

/// Global build budget: forward-pass steps (instructions visited) over all
/// specialisations of one build, arches, numbers and trees together.
pub const BUILD_STEP_BUDGET: usize = 8_000_000;
/// Global build budget: instructions over all distinct residual programs.
pub const BUILD_INSN_BUDGET: usize = 1_000_000;

/// Why a filter cannot be specialised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FastError {
    /// The program was validated as a socket filter.
    #[error("program was validated in {mode} mode; the fast engine needs a seccomp filter")]
    NotSeccomp { mode: Mode },
}

/// What one table entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    /// The filter returns this value whatever the arguments and ip.
    Action(u32),
    /// Run residual program `i` of [`FastFilter::residuals`].
    Residual(u32),
    /// Decide on a word first: switch `i` of [`FastFilter::switches`].
    Switch(u32),
}

/// The entries of one arch.
#[derive(Debug, Clone)]
struct ArchTable {
    arch: u32,
    /// Numbers `0..dense.len()`.
    dense: Box<[Slot]>,
    /// Numbers `HIGH_BASE..HIGH_BASE + high.len()` (x32's, `nr | 0x4000_0000`
    /// on x86_64), what `sparse`, `ranges` and `other` said for them, when
    /// the filter tells some apart (see [`add_high_window`]; `sparse` then
    /// has none of them): a lookup where a binary search cost more than
    /// the classic interpreter's walk of a binary tree.
    high: Box<[Slot]>,
    /// Compared numbers past the dense part, ascending.
    sparse: Box<[(u32, Slot)]>,
    /// Every other number: specialised on the arch alone.
    other: Slot,
    /// When the filter uses `nr` only in order comparisons with constants
    /// ([`crate::analysis::NrClasses::representatives`]): every number
    /// past the dense part, as `(first nr, slot)` runs, ascending, the
    /// first starting at `dense.len()`; each run specialised once (its
    /// numbers take the same side of every test). Looked up after `sparse`
    /// (the compared numbers, a shorter search); empty when `nr` has no
    /// such classes (then `other` answers).
    ranges: Box<[(u32, Slot)]>,
}

impl ArchTable {
    #[inline(always)]
    fn slot(&self, nr: u32) -> Slot {
        if let Some(&s) = self.dense.get(nr as usize) {
            return s;
        }
        match self.sparse.binary_search_by_key(&nr, |&(n, _)| n) {
            Ok(i) => self.sparse.get(i).map_or(self.other, |&(_, s)| s),
            // Past the common cases (dense, compared numbers outside the
            // window), so that filters without a window pay little for it.
            Err(_) => match self.high.get(nr.wrapping_sub(HIGH_BASE) as usize) {
                Some(&s) => s,
                None => self.run_of(nr),
            },
        }
    }

    /// The run of `ranges` holding `nr`, a number the filter never compares.
    #[inline(always)]
    fn run_of(&self, nr: u32) -> Slot {
        if self.ranges.is_empty() {
            return self.other;
        }
        let i = self.ranges.partition_point(|&(start, _)| start <= nr);
        self.ranges.get(i.wrapping_sub(1)).map_or(self.other, |&(_, s)| s)
    }
}

/// A residual program, validated and pre-decoded.
#[derive(Debug, Clone)]
struct Residual {
    program: Program,
    interp: Interp,
}

/// Sizes of a built [`FastFilter`] (build time is measured by callers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FastStats {
    /// Arches with their own table.
    pub arches: usize,
    /// Table entries (dense + sparse) over all arches.
    pub entries: usize,
    /// Entries that are a constant action.
    pub constant_entries: usize,
    /// Entries that run a residual program.
    pub residual_entries: usize,
    /// Distinct programs kept (residuals, per-arch fallbacks and the whole
    /// filter for unknown arches).
    pub residual_programs: usize,
    /// Instructions over all distinct programs.
    pub residual_insns: usize,
    /// Specialisations that fell back to the whole filter (a residual the
    /// validator refused, or an instruction without seccomp meaning); 0 for
    /// every filter we know of.
    pub whole_filter_entries: usize,
    /// Entries whose residual is a tree ([`Switch`]): they decide on words
    /// before any residual leaf runs.
    pub switch_entries: usize,
    /// Switches of all trees (nested ones included).
    pub switches: usize,
    /// Runs over all switches.
    pub switch_ranges: usize,
    /// Bytes of x86-64 code the switches run as (0: the tables are
    /// walked instead; see [`FastFilter::native_refusal`]).
    pub native_code_bytes: usize,
    /// Entries (and arch-only specialisations and switches) not built
    /// because the global build budget ([`BUILD_STEP_BUDGET`],
    /// [`BUILD_INSN_BUDGET`]) was spent: they run the program specialised
    /// on the arch alone, or the whole filter; exact either way.
    pub budget_fallback_entries: usize,
    /// Arches that share another arch's table (the filter does not tell
    /// them apart: identical arch-only specialisations).
    pub shared_arches: usize,
}

/// What a [`FastFilter`] does for one (arch, nr).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry<'a> {
    /// Always this value.
    Action(u32),
    /// Runs this validated program (its [`Program::original`] is the
    /// residual in user form).
    Residual(&'a Program),
}

/// A seccomp filter specialised per arch and syscall number.
#[derive(Debug, Clone)]
pub struct FastFilter {
    arches: Box<[ArchTable]>,
    /// For filters that never read `arch`: the table every arch uses.
    any_arch: Option<ArchTable>,
    /// Every arch without a table of its own: the filter specialised for
    /// "`arch` is none of the compared ones" ([`partition::other_arches`]).
    other_arch: Slot,
    /// Index 0 is the whole filter (unknown arches).
    residuals: Box<[Residual]>,
    /// The trees; a switch's slots only name switches before it.
    switches: Box<[SwitchTable]>,
    /// `guards[j]`: the guard of `switches[j]`, when it is `guarded`.
    guards: Box<[Guard]>,
    /// The switches as x86-64 code ([`native_code`]), what `eval` runs
    /// where the host allows it; else it walks them as the tables above.
    native: Option<Arc<NativeCode>>,
    /// Why there is no native code, when there are switches.
    native_refusal: Option<String>,
    stats: FastStats,
}

/// Builds residual programs and their trees ([`Forest`]), sharing identical
/// ones; index 0 of the compiled residuals is the whole filter. The forest
/// counts what its budget refused, each refusal once
/// ([`Forest::budget_fallbacks`]).
struct Residuals {
    whole: Residual,
    forest: Forest,
    whole_filter_entries: usize,
}

impl Residuals {
    fn new(program: &Program) -> Self {
        Residuals::with_budget(program, BUILD_STEP_BUDGET, BUILD_INSN_BUDGET)
    }

    /// With a budget of `steps` forward-pass steps and `insns` residual
    /// instructions.
    fn with_budget(program: &Program, steps: usize, insns: usize) -> Self {
        let whole = Residual { program: program.clone(), interp: Interp::new(program) };
        Residuals { whole, forest: Forest::new(steps, insns), whole_filter_entries: 0 }
    }

    /// Whether the budget still allows a specialisation (at most `work`
    /// steps); the forest counts a refusal.
    fn affordable(&mut self, work: usize) -> bool {
        self.forest.affordable(work)
    }

    /// Charges `work` forward-pass steps.
    fn charge(&mut self, work: usize) {
        self.forest.charge(work);
    }

    fn slot(&mut self, specialized: Specialized<'_>, reads: (bool, bool)) -> Slot {
        match specialized {
            Specialized::Action(v) => Slot::Action(v),
            Specialized::Whole => {
                self.whole_filter_entries += 1;
                Slot::Residual(0)
            }
            Specialized::Residual(insns) => match self.forest.outcome(insns, reads) {
                Ok((o, _)) => slot_of(o),
                Err(Refused::Invalid) => {
                    self.whole_filter_entries += 1;
                    Slot::Residual(0)
                }
                // Over the residual budget (counted by the forest): the
                // whole filter, which is exact.
                Err(Refused::Budget) => Slot::Residual(0),
            },
        }
    }

    /// The compiled residuals (the whole filter first), switches, their
    /// guards, and what the budget refused.
    fn compile(self) -> (Vec<Residual>, Vec<SwitchTable>, Vec<Guard>, usize) {
        let mut residuals = vec![self.whole];
        residuals.extend(
            self.forest.residuals.into_iter().map(|r| Residual { interp: Interp::new(&r.program), program: r.program }),
        );
        let mut switches: Vec<SwitchTable> = self
            .forest
            .switches
            .into_iter()
            .map(|s| {
                let starts: Box<[u32]> = s.ranges.iter().map(|&(start, _)| start).collect();
                let slots: Box<[Slot]> = s.ranges.iter().map(|&(_, o)| slot_of(o)).collect();
                let residual = s.residual as u32 + 1;
                let last = slots.last().copied().unwrap_or(Slot::Residual(residual));
                let near = std::array::from_fn(|i| starts.get(i + 1).copied().unwrap_or(u32::MAX));
                let near_slots = std::array::from_fn(|i| slots.get(i).copied().unwrap_or(last));
                let is_near = (1..=NEAR_RUNS).contains(&starts.len());
                SwitchTable {
                    offset: s.offset,
                    mask: s.mask,
                    is_near,
                    near,
                    near_slots,
                    starts,
                    slots,
                    residual,
                    guarded: false,
                }
            })
            .collect();
        let guards = fuse_guards(&mut switches);
        (residuals, switches, guards, self.forest.budget_fallbacks)
    }
}

/// What the fast engine says of a residual's entry reads: it runs every
/// residual from its start on the classic interpreter, with A = X = 0, so
/// whether the program reads them first does not matter.
const FROM_START: (bool, bool) = (true, true);

/// The slot of a forest outcome (residual `i` is compiled residual `i + 1`).
fn slot_of(o: Outcome) -> Slot {
    match o {
        Outcome::Action(v) => Slot::Action(v),
        Outcome::Residual(i) => Slot::Residual(i as u32 + 1),
        Outcome::Switch(j) => Slot::Switch(j as u32),
    }
}

/// The `struct seccomp_data` word at byte `offset` (a multiple of 4 below
/// 64), as `ld [offset]` reads it from [`data_bytes`]: host byte order.
#[inline(always)]
fn data_word(data: &SeccompData, offset: u32) -> u32 {
    let wide = |w: u64| {
        let b = w.to_ne_bytes();
        let (lo, hi) = ([b[0], b[1], b[2], b[3]], [b[4], b[5], b[6], b[7]]);
        u32::from_ne_bytes(if offset % 8 == 0 { lo } else { hi })
    };
    match offset / 4 {
        0 => data.nr as u32,
        1 => data.arch,
        2 | 3 => wide(data.instruction_pointer),
        w => wide(data.args.get((w as usize - 4) / 2).copied().unwrap_or(0)),
    }
}

/// The word at byte `at` of `struct seccomp_data` in host byte order.
#[inline(always)]
fn bytes_word(bytes: &[u8; cbpf::interp::SECCOMP_DATA_SIZE], at: usize) -> u32 {
    match bytes.get(at..at + 4) {
        Some(&[b0, b1, b2, b3]) => u32::from_ne_bytes([b0, b1, b2, b3]),
        _ => 0,
    }
}

/// `struct seccomp_data` in host byte order, as [`SeccompData::to_bytes`]
/// writes it, with straight copies: measured several times faster than
/// that iterator chain, which would dominate a short residual run.
#[inline(always)]
fn data_bytes(data: &SeccompData) -> [u8; cbpf::interp::SECCOMP_DATA_SIZE] {
    let mut out = [0u8; cbpf::interp::SECCOMP_DATA_SIZE];
    let (head, rest) = out.split_at_mut(8);
    let (nr, arch) = head.split_at_mut(4);
    nr.copy_from_slice(&data.nr.to_ne_bytes());
    arch.copy_from_slice(&data.arch.to_ne_bytes());
    let words = std::iter::once(data.instruction_pointer).chain(data.args);
    for (chunk, word) in rest.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    out
}

/// Where the runs of numbers from `dense_len` up start, for `arch` (`None`:
/// a filter that never loads `arch`): `dense_len`, then every class
/// representative above it ([`crate::analysis::NrClasses::representatives`],
/// as [`Partition`] cuts). `None` when `nr` has no such classes or the
/// analysis budget ran out.
fn past_dense(program: &Program, arch: Option<u32>, dense_len: u32) -> Option<Vec<u32>> {
    let class_arch = arch.unwrap_or(crate::arch::AUDIT_ARCH_X86_64);
    let mut analyzer = crate::analysis::Analyzer::new(program).ok()?;
    let representatives = analyzer.field_classes(Some(class_arch), crate::domain::Field::Nr).ok()?.representatives()?;
    let above = representatives.into_iter().filter(|&r| r > dense_len);
    Some(std::iter::once(dense_len).chain(above).collect())
}

/// The dense table size for `arch`: its syscall table, else [`MIN_DENSE`],
/// grown to cover compared numbers below [`DENSE_LIMIT`].
fn dense_len(arch: u32, compared: &[u32]) -> u32 {
    let table = crate::syscalls::table(Arch::from_audit_arch(arch)).map_or(MIN_DENSE, |t| t.nr_syscalls);
    let highest = compared.iter().copied().filter(|&nr| nr < DENSE_LIMIT).max().map_or(0, |nr| nr + 1);
    table.max(highest)
}

impl FastFilter {
    /// Specialises `program` (validated in seccomp mode) for every arch it
    /// compares against and every syscall number of those arches.
    pub fn build(program: &Program) -> Result<FastFilter, FastError> {
        if program.mode() != Mode::Seccomp {
            return Err(FastError::NotSeccomp { mode: program.mode() });
        }
        let mut spec = Specializer::new(program);
        let mut residuals = Residuals::new(program);
        // This pass only finds the arches the filter compares.
        let (arches, _) = spec.specialize_watching(None, None, OFFSET_ARCH);
        let mut tables = Vec::with_capacity(arches.len());
        let mut stats = FastStats { arches: arches.len(), ..FastStats::default() };
        // Arch-only specialisations already tabled: identical ones (the
        // filter cannot tell those arches apart) share one table.
        let mut shared: HashMap<Slot, usize> = HashMap::new();
        let mut table_for = |arch: Option<u32>, stats: &mut FastStats, tables: &[ArchTable]| {
            let work = program.len();
            if !residuals.affordable(work) {
                // Past the budget even for the arch alone: the whole filter.
                return ArchTable {
                    arch: arch.unwrap_or(0),
                    dense: Box::new([]),
                    high: Box::new([]),
                    sparse: Box::new([]),
                    other: Slot::Residual(0),
                    ranges: Box::new([]),
                };
            }
            let (compared, other) = spec.specialize_watching(arch, None, OFFSET_NR);
            residuals.charge(work);
            let other = residuals.slot(other, FROM_START);
            if other != Slot::Residual(0) {
                if let Some(t) = shared.get(&other).and_then(|&i| tables.get(i)) {
                    stats.shared_arches += 1;
                    return ArchTable { arch: arch.unwrap_or(0), ..t.clone() };
                }
                shared.insert(other, tables.len());
            }
            // An arch-free table (the filter never reads `arch`) is sized by
            // the numbers it compares, as for an arch without a syscall table.
            let dense_len = dense_len(arch.unwrap_or(0), &compared);
            let mut entry = |nr: u32| {
                if !residuals.affordable(work) {
                    return other;
                }
                let slot = residuals.slot(spec.specialize(arch, Some(nr)), FROM_START);
                residuals.charge(spec.last_work());
                slot
            };
            let dense: Box<[Slot]> = (0..dense_len).map(&mut entry).collect();
            let sparse: Box<[(u32, Slot)]> =
                compared.iter().filter(|&&nr| nr >= dense_len).map(|&nr| (nr, entry(nr))).collect();
            // Numbers past the dense part in runs, where `nr` has classes
            // (as [`Partition`] cuts them): x32 numbers, `-1` and the rest
            // then cost a lookup instead of the arch-only residual.
            let mut ranges: Vec<(u32, Slot)> = Vec::new();
            for start in past_dense(program, arch, dense_len).unwrap_or_default() {
                let slot = entry(start);
                if ranges.last().is_none_or(|&(_, last)| last != slot) {
                    ranges.push((start, slot));
                }
            }
            for slot in dense.iter().chain(sparse.iter().map(|(_, s)| s)) {
                stats.entries += 1;
                match slot {
                    Slot::Action(_) => stats.constant_entries += 1,
                    Slot::Residual(_) => stats.residual_entries += 1,
                    Slot::Switch(_) => stats.switch_entries += 1,
                }
            }
            let mut table =
                ArchTable { arch: arch.unwrap_or(0), dense, high: Box::new([]), sparse, other, ranges: ranges.into() };
            add_high_window(&mut table);
            table
        };
        let arches_named = arches.clone();
        for arch in arches {
            let table = table_for(Some(arch), &mut stats, &tables);
            tables.push(table);
        }
        // A filter that never loads `seccomp_data.arch` answers the same for
        // every arch: one table serves them all (instead of the whole filter).
        let reads_arch =
            program.insns().iter().any(|i| matches!(i.op(), Some(cbpf::Op::LdxAbsSeccomp { k }) if k == OFFSET_ARCH));
        // Arches the filter never names all fail its arch tests alike: one
        // specialisation serves them (the whole filter past the budget).
        let (any_arch, other_arch) = if !reads_arch {
            (Some(table_for(None, &mut stats, &tables)), Slot::Residual(0))
        } else if residuals.affordable(program.len()) {
            let slot = residuals.slot(partition::other_arches(&mut spec, arches_named), FROM_START);
            residuals.charge(spec.last_work());
            (None, slot)
        } else {
            (None, Slot::Residual(0))
        };
        stats.whole_filter_entries = residuals.whole_filter_entries;
        let (list, switches, guards, budget_fallbacks) = residuals.compile();
        stats.budget_fallback_entries = budget_fallbacks;
        stats.residual_programs = list.len();
        stats.residual_insns = list.iter().map(|r| r.program.len()).sum();
        stats.switches = switches.len();
        stats.switch_ranges = switches.iter().map(|t| t.starts.len()).sum();
        let (native, native_refusal) = if switches.is_empty() {
            (None, None)
        } else {
            match NativeCode::build(&switches, &guards) {
                Ok(code) => (Some(Arc::new(code)), None),
                Err(why) => (None, Some(why.to_string())),
            }
        };
        stats.native_code_bytes = native.as_ref().map_or(0, |n| n.code_len());
        Ok(FastFilter {
            arches: tables.into(),
            any_arch,
            other_arch,
            residuals: list.into(),
            switches: switches.into(),
            guards: guards.into(),
            native,
            native_refusal,
            stats,
        })
    }

    /// The filter's return value for `data`: exactly what [`cbpf::Interp`]
    /// returns for the original filter. Allocates nothing.
    #[inline]
    pub fn eval(&self, data: &SeccompData) -> u32 {
        match self.slot(data.arch, data.nr as u32) {
            Slot::Action(v) => v,
            // Argument checks out of line, as in `eval_bytes`.
            slot => self.eval_slot(slot, data),
        }
    }

    /// The rest of [`FastFilter::eval`] after the (arch, nr) lookup.
    #[inline(never)]
    fn eval_slot(&self, slot: Slot, data: &SeccompData) -> u32 {
        if let (Slot::Switch(j), Some(native)) = (slot, &self.native) {
            return self.walk_native(native, j, &data_bytes(data));
        }
        match self.resolve(slot, |offset| data_word(data, offset)) {
            Slot::Action(v) => v,
            Slot::Residual(i) => self.run(i, &data_bytes(data)),
            // `resolve` never returns a switch.
            Slot::Switch(_) => SECCOMP_RET_KILL_PROCESS,
        }
    }

    /// Follows switches from `slot` with `word(offset)` reading the input.
    /// Terminates: a switch's slots only name earlier switches.
    #[inline(always)]
    fn resolve(&self, mut slot: Slot, word: impl Fn(u32) -> u32) -> Slot {
        while let Slot::Switch(j) = slot {
            let j = j as usize;
            slot = match self.switches.get(j) {
                // A flag, not an always-passing guard: tables without one
                // (most) pay a predicted branch, not a second load and test.
                Some(table) if table.guarded => match self.guards.get(j) {
                    Some(g) if word(g.offset) & g.mask != g.value => g.other,
                    _ => table.slot(word(table.offset)),
                },
                Some(table) => table.slot(word(table.offset)),
                None => Slot::Residual(0),
            };
        }
        slot
    }

    /// Like [`FastFilter::eval`] on the 64 bytes of `struct seccomp_data`
    /// in host byte order (what [`cbpf::Interp::run_seccomp`] takes).
    #[inline]
    pub fn eval_bytes(&self, bytes: &[u8; cbpf::interp::SECCOMP_DATA_SIZE]) -> u32 {
        match self.slot(bytes_word(bytes, 4), bytes_word(bytes, 0)) {
            Slot::Action(v) => v,
            // A tree as native code, called from here. The guard stays: a
            // plain `Slot::Switch(j)` arm laid the timing loop out otherwise
            // and measured 5-10% slower on sshd_like's deepest input.
            Slot::Switch(j) if self.native.is_some() => match &self.native {
                Some(native) => self.walk_native(native, j, bytes),
                None => self.eval_bytes_slot(Slot::Switch(j), bytes),
            },
            // Argument checks out of line: the constant path stays as short
            // as a table lookup.
            slot => self.eval_bytes_slot(slot, bytes),
        }
    }

    /// Switch `j`'s tree as native code, called inline: a constant leaf
    /// costs one call more than a constant entry; a residual leaf runs out
    /// of line.
    #[inline(always)]
    fn walk_native(&self, native: &NativeCode, j: u32, bytes: &[u8; cbpf::interp::SECCOMP_DATA_SIZE]) -> u32 {
        match native.eval(j, bytes) {
            Slot::Action(v) => v,
            leaf => self.eval_bytes_slot(leaf, bytes),
        }
    }

    /// The rest of [`FastFilter::eval_bytes`] after the (arch, nr) lookup:
    /// a residual, or (without native code) switches walked as tables,
    /// then a constant or a residual.
    #[inline(never)]
    fn eval_bytes_slot(&self, slot: Slot, bytes: &[u8; cbpf::interp::SECCOMP_DATA_SIZE]) -> u32 {
        match self.resolve(slot, |offset| bytes_word(bytes, offset as usize)) {
            Slot::Action(v) => v,
            Slot::Residual(i) => self.run(i, bytes),
            // `resolve` never returns a switch.
            Slot::Switch(_) => SECCOMP_RET_KILL_PROCESS,
        }
    }

    #[inline(always)]
    fn slot(&self, arch: u32, nr: u32) -> Slot {
        match self.arches.iter().find(|t| t.arch == arch).or(self.any_arch.as_ref()) {
            Some(table) => table.slot(nr),
            None => self.other_arch,
        }
    }

    /// Out of line: the interpreter inlined into the walks above would make
    /// every walk save the registers it uses, though most end in a
    /// constant.
    #[inline(never)]
    fn run(&self, residual: u32, bytes: &[u8; cbpf::interp::SECCOMP_DATA_SIZE]) -> u32 {
        match self.residuals.get(residual as usize) {
            // Every residual was validated in seccomp mode, so the run
            // cannot refuse the context; KILL_PROCESS keeps eval total.
            Some(r) => r.interp.run_seccomp(bytes).unwrap_or(SECCOMP_RET_KILL_PROCESS),
            None => SECCOMP_RET_KILL_PROCESS,
        }
    }

    /// What the filter does for (arch, nr). A residual grown into a tree is
    /// shown as the residual itself (see [`FastFilter::switch`] and
    /// [`FastFilter::resolved_entry`]).
    pub fn entry(&self, arch: u32, nr: u32) -> Entry<'_> {
        let slot = match self.slot(arch, nr) {
            Slot::Switch(j) => Slot::Residual(self.switches.get(j as usize).map_or(0, |t| t.residual)),
            slot => slot,
        };
        self.entry_of(slot)
    }

    /// What actually runs for `data`: after the (arch, nr) lookup and every
    /// switch of its tree, a constant or the (short) residual leaf.
    pub fn resolved_entry(&self, data: &SeccompData) -> Entry<'_> {
        self.entry_of(self.resolve(self.slot(data.arch, data.nr as u32), |offset| data_word(data, offset)))
    }

    /// The word the entry for (arch, nr) switches on first, if its
    /// residual is a tree: the word's byte offset in `struct seccomp_data`,
    /// the mask, and where the runs of `word & mask` start (ascending).
    /// A parent test of one value fused in as a guard (`fuse_guards`:
    /// libseccomp's `hi == 0` before the low word) is not shown: this is
    /// the switch behind it.
    pub fn switch(&self, arch: u32, nr: u32) -> Option<(u32, u32, &[u32])> {
        match self.slot(arch, nr) {
            Slot::Switch(j) => self.switches.get(j as usize).map(|t| (t.offset, t.mask, &*t.starts)),
            _ => None,
        }
    }

    fn entry_of(&self, slot: Slot) -> Entry<'_> {
        match slot {
            Slot::Action(v) => Entry::Action(v),
            Slot::Residual(i) => match self.residuals.get(i as usize).or(self.residuals.first()) {
                Some(r) => Entry::Residual(&r.program),
                None => Entry::Action(SECCOMP_RET_KILL_PROCESS),
            },
            Slot::Switch(_) => Entry::Action(SECCOMP_RET_KILL_PROCESS),
        }
    }

    /// The same filter walking its switches as tables, never as native
    /// code: what hosts without native trees run, kept for comparing the
    /// two.
    pub fn without_native(mut self) -> FastFilter {
        self.native = None;
        self.stats.native_code_bytes = 0;
        self
    }

    /// Why the switches are walked as tables rather than run as native
    /// code, when the filter has switches and the host refused (not
    /// x86-64 Linux, no executable memory, past
    /// [`native::MAX_CODE_BYTES`]).
    pub fn native_refusal(&self) -> Option<&str> {
        self.native_refusal.as_deref()
    }

    /// The arches with their own table, in lookup order.
    pub fn arches(&self) -> impl Iterator<Item = u32> + '_ {
        self.arches.iter().map(|t| t.arch)
    }

    /// Table sizes.
    pub fn stats(&self) -> FastStats {
        self.stats
    }

    /// The numbers with an entry of their own on `arch` (dense, sparse, the
    /// x32 window).
    fn numbers(&self, arch: u32) -> Vec<u32> {
        match self.arches.iter().find(|t| t.arch == arch).or(self.any_arch.as_ref()) {
            Some(t) => {
                let high = (0..t.high.len() as u32).map(|i| HIGH_BASE + i);
                (0..t.dense.len() as u32).chain(t.sparse.iter().map(|&(nr, _)| nr)).chain(high).collect()
            }
            None => Vec::new(),
        }
    }

    fn other_slot(&self, arch: u32) -> Slot {
        self.arches.iter().find(|t| t.arch == arch).or(self.any_arch.as_ref()).map_or(self.other_arch, |t| t.other)
    }
}

/// What a filter does once `arch` and/or `nr` are known ([`Partial`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartialResult {
    /// Always this value, whatever the other words.
    Constant(u32),
    /// This residual program (validated in seccomp mode) gives the filter's
    /// value for every input with the given `arch`/`nr`.
    Residual(Program),
    /// No smaller program: the whole filter.
    Whole,
}

/// The fast engine's specialiser as a partial evaluator of one filter:
/// what remains of it when `seccomp_data.arch` and/or `.nr` are known. The
/// same passes build [`FastFilter`]'s tables (module `specialize`).
#[derive(Debug)]
pub struct Partial {
    spec: Specializer,
}

impl Partial {
    /// Prepares `program` (validated in seccomp mode).
    pub fn new(program: &Program) -> Result<Partial, FastError> {
        if program.mode() != Mode::Seccomp {
            return Err(FastError::NotSeccomp { mode: program.mode() });
        }
        Ok(Partial { spec: Specializer::new(program) })
    }

    /// The filter with `arch` and `nr` fixed where given. A residual that
    /// does not validate (never seen; the `fast_equiv` fuzz target looks
    /// for one) is reported as [`PartialResult::Whole`], which is exact.
    pub fn specialize(&mut self, arch: Option<u32>, nr: Option<u32>) -> PartialResult {
        Partial::result(self.spec.specialize(arch, nr))
    }

    /// The filter with the `struct seccomp_data` word at byte `offset`
    /// (any word but `nr` and `arch`, which [`Partial::specialize`] fixes)
    /// equal to `value`: its loads fold to it, and so do the tests on it.
    /// `equiv` cuts an argument word into runs with it, as the fast
    /// engine's trees do ([`tree`]).
    pub fn specialize_word(&mut self, offset: u32, value: u32) -> PartialResult {
        Partial::result(self.spec.specialize_key(offset, &KeyFact::Equals(value)))
    }

    fn result(specialized: Specialized<'_>) -> PartialResult {
        match specialized {
            Specialized::Action(v) => PartialResult::Constant(v),
            Specialized::Whole => PartialResult::Whole,
            Specialized::Residual(insns) => match cbpf::validate(insns, Mode::Seccomp) {
                Ok(p) => PartialResult::Residual(p),
                Err(_) => PartialResult::Whole,
            },
        }
    }

    /// Instructions the last [`Partial::specialize`] visited (its work).
    pub fn last_work(&self) -> usize {
        self.spec.last_work()
    }
}

#[cfg(test)]
mod tests;
