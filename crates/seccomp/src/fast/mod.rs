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
//!                 ├─ nr < table size ─► dense[nr] ─┐
//!                 ├─ nr compared by the filter ─► sparse ─┼─► Action(v) ─► v
//!                 ├─ any other nr ─► specialised on arch only ─┘   Residual(i) ─► cbpf::Interp
//!               unknown arch ─► the whole filter
//! ```
//!
//! Which entries: per arch the filter compares `arch` against (as
//! [`crate::analysis::compared_arches`] defines it, found by the
//! specialiser's own pass), numbers `0..N` where `N` is the arch's syscall
//! table size ([`crate::syscalls::table`], else [`MIN_DENSE`], extended up
//! to [`DENSE_LIMIT`] to cover every compared number), plus every other
//! number the filter compares `nr` against (as
//! [`crate::analysis::compared_nrs`]: x32 numbers, `-1`, ...). Any other
//! (arch, nr) runs a program specialised on the arch alone, or the whole
//! filter for arches the filter never names.
//!
//! Residual programs are validated with [`cbpf::validate`] (seccomp mode)
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

mod chain;
mod specialize;

use std::collections::HashMap;

use cbpf::{Insn, Interp, Mode, Program, SeccompData};

use crate::action::SECCOMP_RET_KILL_PROCESS;
use crate::arch::Arch;
use crate::data::{OFFSET_ARCH, OFFSET_NR};
use specialize::{Specialized, Specializer};

pub use chain::FastChain;

/// Smallest dense table for an arch without a syscall table of ours.
pub const MIN_DENSE: u32 = 64;
/// Compared numbers below this extend the dense table; larger ones (x32
/// numbers, `-1`) get sparse entries.
pub const DENSE_LIMIT: u32 = 1024;

/// Why a filter cannot be specialised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FastError {
    /// The program was validated as a socket filter.
    #[error("program was validated in {mode} mode; the fast engine needs a seccomp filter")]
    NotSeccomp { mode: Mode },
}

/// What one table entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The filter returns this value whatever the arguments and ip.
    Action(u32),
    /// Run residual program `i` of [`FastFilter::residuals`].
    Residual(u32),
}

/// The entries of one arch.
#[derive(Debug, Clone)]
struct ArchTable {
    arch: u32,
    /// Numbers `0..dense.len()`.
    dense: Box<[Slot]>,
    /// Compared numbers past the dense part, ascending.
    sparse: Box<[(u32, Slot)]>,
    /// Every other number: specialised on the arch alone.
    other: Slot,
}

impl ArchTable {
    #[inline(always)]
    fn slot(&self, nr: u32) -> Slot {
        if let Some(&s) = self.dense.get(nr as usize) {
            return s;
        }
        match self.sparse.binary_search_by_key(&nr, |&(n, _)| n) {
            Ok(i) => self.sparse.get(i).map_or(self.other, |&(_, s)| s),
            Err(_) => self.other,
        }
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
    /// Index 0 is the whole filter (unknown arches).
    residuals: Box<[Residual]>,
    stats: FastStats,
}

/// Builds residual programs, sharing identical ones.
struct Residuals {
    list: Vec<Residual>,
    index: HashMap<Vec<Insn>, u32>,
    whole_filter_entries: usize,
}

impl Residuals {
    fn new(program: &Program) -> Self {
        let whole = Residual { program: program.clone(), interp: Interp::new(program) };
        Residuals { list: vec![whole], index: HashMap::new(), whole_filter_entries: 0 }
    }

    fn slot(&mut self, specialized: Specialized<'_>) -> Slot {
        match specialized {
            Specialized::Action(v) => Slot::Action(v),
            Specialized::Whole => {
                self.whole_filter_entries += 1;
                Slot::Residual(0)
            }
            Specialized::Residual(insns) => {
                if let Some(&i) = self.index.get(insns) {
                    return Slot::Residual(i);
                }
                let i = match cbpf::validate(insns, Mode::Seccomp) {
                    Ok(program) => {
                        let i = self.list.len() as u32;
                        self.list.push(Residual { interp: Interp::new(&program), program });
                        i
                    }
                    Err(_) => {
                        self.whole_filter_entries += 1;
                        0
                    }
                };
                self.index.insert(insns.to_vec(), i);
                Slot::Residual(i)
            }
        }
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
        // Unknown arches run the whole filter; this pass only finds arches.
        let (arches, _) = spec.specialize_watching(None, None, OFFSET_ARCH);
        let mut tables = Vec::with_capacity(arches.len());
        let mut stats = FastStats { arches: arches.len(), ..FastStats::default() };
        for arch in arches {
            let (compared, other) = spec.specialize_watching(Some(arch), None, OFFSET_NR);
            let other = residuals.slot(other);
            let dense_len = dense_len(arch, &compared);
            let dense: Box<[Slot]> =
                (0..dense_len).map(|nr| residuals.slot(spec.specialize(Some(arch), Some(nr)))).collect();
            let sparse: Box<[(u32, Slot)]> = compared
                .iter()
                .filter(|&&nr| nr >= dense_len)
                .map(|&nr| (nr, residuals.slot(spec.specialize(Some(arch), Some(nr)))))
                .collect();
            for slot in dense.iter().chain(sparse.iter().map(|(_, s)| s)) {
                stats.entries += 1;
                match slot {
                    Slot::Action(_) => stats.constant_entries += 1,
                    Slot::Residual(_) => stats.residual_entries += 1,
                }
            }
            tables.push(ArchTable { arch, dense, sparse, other });
        }
        stats.residual_programs = residuals.list.len();
        stats.residual_insns = residuals.list.iter().map(|r| r.program.len()).sum();
        stats.whole_filter_entries = residuals.whole_filter_entries;
        Ok(FastFilter { arches: tables.into(), residuals: residuals.list.into(), stats })
    }

    /// The filter's return value for `data`: exactly what [`cbpf::Interp`]
    /// returns for the original filter. Allocates nothing.
    #[inline]
    pub fn eval(&self, data: &SeccompData) -> u32 {
        match self.slot(data.arch, data.nr as u32) {
            Slot::Action(v) => v,
            Slot::Residual(i) => self.run(i, &data_bytes(data)),
        }
    }

    /// Like [`FastFilter::eval`] on the 64 bytes of `struct seccomp_data`
    /// in host byte order (what [`cbpf::Interp::run_seccomp`] takes).
    #[inline]
    pub fn eval_bytes(&self, bytes: &[u8; cbpf::interp::SECCOMP_DATA_SIZE]) -> u32 {
        let word = |at: usize| match bytes.get(at..at + 4) {
            Some(&[b0, b1, b2, b3]) => u32::from_ne_bytes([b0, b1, b2, b3]),
            _ => 0,
        };
        match self.slot(word(4), word(0)) {
            Slot::Action(v) => v,
            Slot::Residual(i) => self.run(i, bytes),
        }
    }

    #[inline(always)]
    fn slot(&self, arch: u32, nr: u32) -> Slot {
        match self.arches.iter().find(|t| t.arch == arch) {
            Some(table) => table.slot(nr),
            None => Slot::Residual(0),
        }
    }

    #[inline(always)]
    fn run(&self, residual: u32, bytes: &[u8; cbpf::interp::SECCOMP_DATA_SIZE]) -> u32 {
        match self.residuals.get(residual as usize) {
            // Every residual was validated in seccomp mode, so the run
            // cannot refuse the context; KILL_PROCESS keeps eval total.
            Some(r) => r.interp.run_seccomp(bytes).unwrap_or(SECCOMP_RET_KILL_PROCESS),
            None => SECCOMP_RET_KILL_PROCESS,
        }
    }

    /// What the filter does for (arch, nr).
    pub fn entry(&self, arch: u32, nr: u32) -> Entry<'_> {
        match self.slot(arch, nr) {
            Slot::Action(v) => Entry::Action(v),
            Slot::Residual(i) => match self.residuals.get(i as usize).or(self.residuals.first()) {
                Some(r) => Entry::Residual(&r.program),
                None => Entry::Action(SECCOMP_RET_KILL_PROCESS),
            },
        }
    }

    /// The arches with their own table, in lookup order.
    pub fn arches(&self) -> impl Iterator<Item = u32> + '_ {
        self.arches.iter().map(|t| t.arch)
    }

    /// Table sizes.
    pub fn stats(&self) -> FastStats {
        self.stats
    }

    /// The numbers with an entry of their own on `arch` (dense, then sparse).
    fn numbers(&self, arch: u32) -> Vec<u32> {
        match self.arches.iter().find(|t| t.arch == arch) {
            Some(t) => (0..t.dense.len() as u32).chain(t.sparse.iter().map(|&(nr, _)| nr)).collect(),
            None => Vec::new(),
        }
    }

    fn other_slot(&self, arch: u32) -> Slot {
        self.arches.iter().find(|t| t.arch == arch).map_or(Slot::Residual(0), |t| t.other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_bytes_match_to_bytes() {
        let data = SeccompData {
            nr: -2,
            arch: 0xc000_003e,
            instruction_pointer: 0x1122_3344_5566_7788,
            args: [1, u64::MAX, 0x8000_0000_0000_0001, 4, 5, 0xaabb_ccdd_0000_0006],
        };
        assert_eq!(data_bytes(&data), data.to_bytes());
    }
}
