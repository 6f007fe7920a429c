//! Stacks of filters on the fast engine (SPEC §5.3).
//!
//! One [`FastFilter`] per filter, plus a combined table: where every filter
//! of the stack is a constant action for (arch, nr), the combination
//! ([`crate::stack::combine`], the kernel's precedence) is stored once, so
//! the stack costs one lookup; anywhere else each filter is evaluated on its
//! own table and the results are combined.

use cbpf::{Program, SeccompData};

use super::{FastError, FastFilter, Slot};
use crate::stack::combine;

/// Combined entries of one arch: `Some(v)` when every filter is constant.
#[derive(Debug, Clone)]
struct ChainTable {
    arch: u32,
    dense: Box<[Option<u32>]>,
    sparse: Box<[(u32, Option<u32>)]>,
    other: Option<u32>,
}

/// A filter stack, newest first (the kernel's list order), on the fast engine.
#[derive(Debug, Clone)]
pub struct FastStack {
    filters: Box<[FastFilter]>,
    arches: Box<[ChainTable]>,
}

impl FastStack {
    /// Builds every filter of `newest_first` and the combined table.
    pub fn build(newest_first: &[Program]) -> Result<FastStack, FastError> {
        let filters = newest_first.iter().map(FastFilter::build).collect::<Result<Vec<_>, _>>()?;
        Ok(FastStack::from_filters(filters))
    }

    /// Combines already built filters, given newest first.
    pub fn from_filters(newest_first: Vec<FastFilter>) -> FastStack {
        let mut arches: Vec<u32> = newest_first.iter().flat_map(|f| f.arches()).collect();
        arches.sort_unstable();
        arches.dedup();
        let tables = arches.into_iter().map(|arch| ChainTable::build(&newest_first, arch)).collect();
        FastStack { filters: newest_first.into(), arches: tables }
    }

    /// The stack's result for `data`: [`combine`] of every filter's result,
    /// newest first, exactly as `seccomp_run_filters()` combines them
    /// (without the kernel's constant-ALLOW cache short-cut, see
    /// [`crate::stack::evaluate_stack_cached`]). Allocates nothing.
    pub fn eval(&self, data: &SeccompData) -> u32 {
        let nr = data.nr as u32;
        let combined = self.arches.iter().find(|t| t.arch == data.arch).and_then(|t| t.slot(nr));
        match combined {
            Some(v) => v,
            None => combine(self.filters.iter().map(|f| f.eval(data))),
        }
    }

    /// The filters, newest first.
    pub fn filters(&self) -> &[FastFilter] {
        &self.filters
    }

    /// How many combined entries are one constant (the stack costs a lookup).
    pub fn constant_entries(&self) -> usize {
        let dense = self.arches.iter().flat_map(|t| t.dense.iter());
        let sparse = self.arches.iter().flat_map(|t| t.sparse.iter().map(|(_, v)| v));
        dense.chain(sparse).filter(|v| v.is_some()).count()
    }
}

impl ChainTable {
    fn build(filters: &[FastFilter], arch: u32) -> ChainTable {
        let constant = |slots: &mut dyn Iterator<Item = Slot>| {
            let mut values = Vec::with_capacity(filters.len());
            for slot in slots {
                match slot {
                    Slot::Action(v) => values.push(v),
                    Slot::Residual(_) | Slot::Switch(_) => return None,
                }
            }
            Some(combine(values))
        };
        let mut numbers: Vec<u32> = filters.iter().flat_map(|f| f.numbers(arch)).collect();
        numbers.sort_unstable();
        numbers.dedup();
        let dense_len = filters.iter().filter_map(|f| f.arches.iter().find(|t| t.arch == arch)).map(|t| t.dense.len());
        let dense_len = dense_len.max().unwrap_or(0) as u32;
        let at = |nr: u32| constant(&mut filters.iter().map(|f| f.slot(arch, nr)));
        ChainTable {
            arch,
            dense: (0..dense_len).map(at).collect(),
            sparse: numbers.into_iter().filter(|&nr| nr >= dense_len).map(|nr| (nr, at(nr))).collect(),
            other: constant(&mut filters.iter().map(|f| f.other_slot(arch))),
        }
    }

    #[inline(always)]
    fn slot(&self, nr: u32) -> Option<u32> {
        if let Some(&v) = self.dense.get(nr as usize) {
            return v;
        }
        match self.sparse.binary_search_by_key(&nr, |&(n, _)| n) {
            Ok(i) => self.sparse.get(i).and_then(|&(_, v)| v),
            Err(_) => self.other,
        }
    }
}
