//! Long compare chains of `jeq #k` exits as direct lookup tables, for both
//! interpreters (each rewrites its own chain ops to use them).
//!
//! A chain whose exit tests are all equalities (`jeq #k, L`, falling
//! through on a miss: the allow-lists of libseccomp's linear filters) leaves
//! at the first test whose constant equals `x`: a map from value to test,
//! a table indexed by `x - base` that holds the test index, one load
//! instead of a scan of every block before the hit (seed_slow's 86 `jeq`s,
//! libseccomp's 306-entry lists).
//! A miss leaves through the chain's sentinel (its last test, which always
//! hits), as the scan would.
//!
//! Every op of a chain (each entry of it) shares the chain's one table: a
//! hit on a test before the op's own first test is a miss for that op (the
//! constant occurs once in the chain, so not in the op's part). The table
//! covers the chain's longest run of equalities up to its sentinel; an op
//! that starts at most [`MAX_PREFIX`] tests before that run (libseccomp's
//! `jge #0x40000000` and `jeq #-1` checks before its list) scans those
//! first, one test at a time, in order.
//!
//! A constant may also stand in several tests (OpenSSH's filter tests
//! `nr == futex` once per allowed futex op, each test leading to that op's
//! argument check, whose miss comes back to the list below it). The scan
//! leaves at the first of them, so the table holds the first; the later
//! ones are reached only by ops that start after the first, which then
//! cannot use the table: such a chain's table serves only the ops that
//! start at or before its run.
//!
//! A chain may also end `x != K` (leaving to the miss) before its sentinel
//! (leaving to `K`'s exit): eBPF's `jne` for a last `jeq` that falls
//! through to its hit (libseccomp's ladders, converted). That is the same
//! map: `K` leaves through the sentinel, a miss through the `!=` test.

use crate::{Record, Table};

/// Tests before the equalities that an op may scan one by one.
pub const MAX_PREFIX: usize = 4;

/// Chains with fewer tests keep the blocked scan (which costs little for
/// them and needs no table).
pub const MIN_TESTS: usize = 32;

/// A table may span at most this many values per test of its chain (plus
/// [`SLACK`]): syscall numbers are dense, so allow-lists always fit. The
/// slack lets one number far from the rest in (OpenSSH's list names
/// x86_64's 332, `statx`, among numbers below 240): at most 1 KiB more
/// per table, within [`TOTAL_ENTRIES`].
const SPREAD: usize = 4;
const SLACK: usize = 512;

/// Bound on the entries of all tables of a program (2 bytes each): at most
/// 256 KiB per program, whatever the filter.
const TOTAL_ENTRIES: usize = 1 << 17;

/// [`EqSets::slots`] entry for a value no test of the chain compares.
const NONE: u16 = u16::MAX;

/// The lookup tables of a program's equality chains.
#[derive(Debug, Clone, Default)]
pub struct EqSets {
    /// Per table: the value its first slot stands for, its slots in
    /// [`EqSets::slots`] and its chain.
    tables: Box<[Span]>,
    /// Test index (into the [`Table`]) per value, or [`NONE`].
    slots: Box<[u16]>,
    /// Per table: its chain's sentinel (for [`EqSets::set_of`]; apart, so
    /// that a [`Span`] stays 16 bytes).
    ends: Box<[u16]>,
    /// Per table: whether a constant stands in more than one of its tests
    /// (then only ops from at or before its run may use it; module docs).
    repeats: Box<[bool]>,
}

#[derive(Debug, Clone, Copy)]
struct Span {
    base: u32,
    start: u32,
    len: u32,
    /// The first test of the chain's run of equalities.
    first: u16,
    /// The test a value of no equality leaves through: the sentinel, or
    /// the `!=` test before it.
    miss: u16,
}

impl EqSets {
    /// The fewest tests a chain has for a table (shorter chains keep the
    /// blocked scan), for the layers that pick a chain policy by whether
    /// a program has lists that long.
    pub const MIN_TESTS: usize = MIN_TESTS;

    /// The tables of the chains that end (sentinel) at the tests `ends` of
    /// `table` whose last `MIN_TESTS` or more tests before the sentinel
    /// are equalities with dense enough constants. Run it on the
    /// final table (exits routed and linked): the lookups return its
    /// records.
    pub fn build<E: Record>(table: &Table<E>, ends: impl IntoIterator<Item = usize>) -> EqSets {
        let mut seen: Vec<usize> = Vec::new();
        let mut tables = Vec::new();
        let mut slots: Vec<u16> = Vec::new();
        let mut sentinels: Vec<u16> = Vec::new();
        let mut repeats: Vec<bool> = Vec::new();
        for to in ends {
            if seen.contains(&to) {
                continue;
            }
            seen.push(to);
            let Some(to16) = u16::try_from(to).ok().filter(|&t| t != NONE) else { continue };
            let Some(Equalities { first, keys, last_ne }) = equalities(table, to) else { continue };
            let (Some(&min), Some(&max)) = (keys.iter().min(), keys.iter().max()) else { continue };
            let len = (max - min) as usize + 1;
            if len > SPREAD * keys.len() + SLACK || slots.len() + len > TOTAL_ENTRIES {
                continue;
            }
            if u16::try_from(tables.len()).is_err() {
                break;
            }
            let start = slots.len();
            slots.resize(start + len, NONE);
            let mut repeated = false;
            for (offset, &key) in keys.iter().enumerate() {
                let Some(slot) = slots.get_mut(start + (key - min) as usize) else { continue };
                // A repeated constant keeps its first test: the one a scan
                // leaves at.
                if *slot != NONE {
                    repeated = true;
                    continue;
                }
                // first + offset <= to, a u16: the `!=` test's key leaves
                // through the sentinel.
                *slot = first + offset as u16 + u16::from(last_ne && offset + 1 == keys.len());
            }
            let miss = to16 - u16::from(last_ne);
            tables.push(Span { base: min, start: start as u32, len: len as u32, first, miss });
            sentinels.push(to16);
            repeats.push(repeated);
        }
        EqSets { tables: tables.into(), slots: slots.into(), ends: sentinels.into(), repeats: repeats.into() }
    }

    /// The table for an op that scans the chain from test `from` to its
    /// sentinel `to`, if that chain has one and `from` is at most
    /// `MAX_PREFIX` tests before its equalities (and not after their first
    /// when a constant repeats).
    pub fn set_of(&self, from: usize, to: usize) -> Option<u16> {
        let at =
            self.tables.iter().zip(self.ends.iter()).zip(self.repeats.iter()).position(|((s, &end), &repeats)| {
                let first = usize::from(s.first);
                usize::from(end) == to && from <= to && from + MAX_PREFIX >= first && !(repeats && from > first)
            })?;
        u16::try_from(at).ok()
    }

    /// Whether a constant stands in more than one test of table `set`'s
    /// run (module docs).
    pub fn repeats(&self, set: u16) -> bool {
        self.repeats.get(usize::from(set)).copied().unwrap_or(false)
    }

    /// Where the op of table `set` that starts at test `from` leaves for
    /// `x`: the first of its prefix tests that `x` hits, else the test of
    /// the equalities that `x` equals if it is at or after `from`, else
    /// the sentinel. `dead` only for a set or test out of range (never for
    /// a set from [`EqSets::set_of`] on this table). (A fallback, not an
    /// `Option`: measured, the `Option` costs a few instructions a call.)
    #[inline(always)]
    pub fn exit<'t, E: Record>(&self, table: &'t Table<E>, set: u16, x: u32, from: usize, dead: &'t E) -> &'t E {
        let Some(span) = self.tables.get(usize::from(set)) else { return dead };
        // A branch, not an empty slice: most ops have no prefix.
        let first = usize::from(span.first);
        if from < first {
            let prefix = table.exits.get(from..first).unwrap_or_default();
            if let Some(hit) = prefix.iter().find(|e| e.test().hits(x)) {
                return hit;
            }
        }
        let test = self.test(span, x).filter(|&t| usize::from(t) >= from).unwrap_or(span.miss);
        table.exits.get(usize::from(test)).unwrap_or(dead)
    }

    #[inline(always)]
    fn test(&self, span: &Span, x: u32) -> Option<u16> {
        let at = x.wrapping_sub(span.base);
        if at >= span.len {
            return None;
        }
        let test = *self.slots.get(span.start as usize + at as usize)?;
        (test != NONE).then_some(test)
    }

    /// Number of tables.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

/// A chain's run of equalities (module docs).
struct Equalities {
    /// Its first test.
    first: u16,
    /// The constants, in test order (the last one that of the `!=` test,
    /// with `last_ne`).
    keys: Vec<u32>,
    /// Whether the run ends with a `!=` test before the sentinel.
    last_ne: bool,
}

/// The run of equality tests that ends a chain at its sentinel `to`
/// (possibly with a `!=` test last), when there are at least
/// [`MIN_TESTS`] tests in it.
fn equalities<E: Record>(table: &Table<E>, to: usize) -> Option<Equalities> {
    let tests = table.exits.get(..to)?;
    let is_eq = |e: &E| {
        let t = e.test();
        t.mask == u32::MAX && t.span == 0
    };
    // `x != K`: every value from K + 1 round to K - 1.
    let ne_key = |e: &E| {
        let t = e.test();
        (t.mask == u32::MAX && t.span == u32::MAX - 1).then(|| t.lo.wrapping_sub(1))
    };
    let last_ne = tests.last().and_then(ne_key);
    let eqs = tests.get(..to - usize::from(last_ne.is_some()))?;
    let run = eqs.iter().rev().take_while(|e| is_eq(e)).count();
    let first = eqs.len() - run;
    let mut keys: Vec<u32> = eqs.get(first..)?.iter().map(|e| e.test().lo).collect();
    keys.extend(last_ne);
    if keys.len() < MIN_TESTS {
        return None;
    }
    Some(Equalities { first: u16::try_from(first).ok()?, keys, last_ne: last_ne.is_some() })
}
