//! Long compare chains of `jeq #k` exits as direct lookup tables.
//!
//! A chain whose exit tests are all equalities (`jeq #k, L`, falling
//! through on a miss: the allow-lists of libseccomp's linear filters) leaves
//! at the first test whose constant equals `A`. When the constants are
//! distinct, at most one test can hit, so their order no longer matters and
//! the chain is a map from value to test: a table indexed by `A - base`
//! that holds the test index, one load instead of a scan of every block
//! before the hit (seed_slow's 86 `jeq`s, libseccomp's 306-entry lists).
//! A miss leaves through the chain's sentinel, as the scan would.
//!
//! Every op of a chain (each pc of it is an entry) shares the chain's one
//! table: a hit on a test before the op's own first test is a miss for
//! that op (the constant occurs once in the chain, so not in the op's part).
//! The table covers the chain's longest run of equalities up to its end; an
//! op that starts at most [`MAX_PREFIX`] tests before that run (libseccomp's
//! `jge #0x40000000` and `jeq #-1` checks before its list) scans those
//! first, one test at a time, in order.

use super::compile::{Chains, Exit, Step};

/// Tests before the equalities that an op may scan one by one.
const MAX_PREFIX: u16 = 4;

/// Chains with fewer tests keep the blocked scan (which costs little for
/// them and needs no table).
const MIN_TESTS: usize = 32;

/// A table may span at most this many values per test of its chain (plus
/// [`SLACK`]): syscall numbers are dense, so allow-lists always fit.
const SPREAD: usize = 4;
const SLACK: usize = 64;

/// Bound on the entries of all tables of a program (2 bytes each): at most
/// 256 KiB per program, whatever the filter.
const TOTAL_ENTRIES: usize = 1 << 17;

/// [`EqSets::slots`] entry for a value no test of the chain compares.
const NONE: u16 = u16::MAX;

/// The lookup tables of a program's equality chains.
#[derive(Debug, Clone, Default)]
pub(super) struct EqSets {
    /// Per table: the value its first slot stands for, and its slots in
    /// [`EqSets::slots`] (`start`, `len`).
    tables: Box<[Span]>,
    /// Test index (into the chain table) per value, or [`NONE`].
    slots: Box<[u16]>,
}

#[derive(Debug, Clone, Copy)]
struct Span {
    base: u32,
    start: u32,
    len: u32,
    /// The first test of the chain's run of equalities.
    first: u16,
}

impl EqSets {
    /// Where the op of table `set` that starts at test `from` of a chain
    /// ending (sentinel) at test `to` leaves for `a`: the test that `a`
    /// equals, if it is at or after `from`, else the sentinel. (Called out
    /// of line, through `Interp::eq_set_exit`.)
    #[inline(always)]
    pub(super) fn exit<'c>(&self, chains: &'c Chains, set: u16, a: u32, from: u16, to: u16) -> &'c Exit {
        let Some(span) = self.tables.get(usize::from(set)) else { return &DEAD_EXIT };
        let prefix = chains.exits.get(usize::from(from)..usize::from(span.first)).unwrap_or_default();
        if let Some(hit) = prefix.iter().find(|e| e.test.hits(a)) {
            return hit;
        }
        let test = self.test(span, a).filter(|&t| t >= from).unwrap_or(to);
        chains.exits.get(usize::from(test)).unwrap_or(&DEAD_EXIT)
    }

    #[inline(always)]
    fn test(&self, span: &Span, a: u32) -> Option<u16> {
        let at = a.wrapping_sub(span.base);
        if at >= span.len {
            return None;
        }
        let test = *self.slots.get(span.start as usize + at as usize)?;
        (test != NONE).then_some(test)
    }

    /// Number of tables.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.tables.len()
    }
}

/// What a lookup that cannot happen returns: a leave to a pc past any
/// program, which ends the run with 0.
static DEAD_EXIT: Exit = Exit { test: chain::ExitTest::ALWAYS, target: u16::MAX, link: super::compile::LEAVE };

/// Replaces every [`Step::LongChain`] and [`Step::LdLongChain`] whose tests
/// are all equalities with distinct constants by [`Step::EqSet`] or
/// [`Step::LdEqSet`] over one table per chain (ops sharing their sentinel
/// `to` are parts of one chain: the table covers the longest). Runs last:
/// the exits it reads are final (routed, linked).
pub(super) fn build(ops: &mut [Step], chains: &Chains) -> EqSets {
    let mut ends: Vec<u16> = Vec::new();
    for op in ops.iter() {
        if let Step::LongChain { to, .. } | Step::LdLongChain { to, .. } = *op {
            if !ends.contains(&to) {
                ends.push(to);
            }
        }
    }
    let mut tables = Vec::new();
    let mut slots: Vec<u16> = Vec::new();
    // (to, set, first equality) for each chain that got a table.
    let mut made: Vec<(u16, u16, u16)> = Vec::new();
    for to in ends {
        let Some((first, keys)) = equalities(chains, to) else { continue };
        let (Some(&min), Some(&max)) = (keys.iter().min(), keys.iter().max()) else { continue };
        let len = (max - min) as usize + 1;
        if len > SPREAD * keys.len() + SLACK || slots.len() + len > TOTAL_ENTRIES {
            continue;
        }
        let Ok(set) = u16::try_from(tables.len()) else { break };
        let start = slots.len();
        slots.resize(start + len, NONE);
        for (offset, &key) in keys.iter().enumerate() {
            if let Some(slot) = slots.get_mut(start + (key - min) as usize) {
                *slot = first + offset as u16;
            }
        }
        tables.push(Span { base: min, start: start as u32, len: len as u32, first });
        made.push((to, set, first));
    }
    let set_of = |from: u16, to: u16| {
        made.iter().find(|&&(t, _, first)| t == to && from + MAX_PREFIX >= first).map(|&(_, set, _)| set)
    };
    for op in ops.iter_mut() {
        *op = match *op {
            Step::LongChain { from, to } => match set_of(from, to) {
                Some(set) => Step::EqSet { set, from, to },
                None => continue,
            },
            Step::LdLongChain { k, from, to } => match set_of(from, to) {
                Some(set) => Step::LdEqSet { k, set, from, to },
                None => continue,
            },
            _ => continue,
        };
    }
    EqSets { tables: tables.into(), slots: slots.into() }
}

/// The run of equality tests that ends a chain at its sentinel `to`: its
/// first test and the constants in test order, when there are at least
/// [`MIN_TESTS`] and no two are equal.
fn equalities(chains: &Chains, to: u16) -> Option<(u16, Vec<u32>)> {
    let tests = chains.exits.get(..usize::from(to))?;
    let is_eq = |e: &Exit| e.test.mask == u32::MAX && e.test.span == 0;
    let run = tests.iter().rev().take_while(|e| is_eq(e)).count();
    if run < MIN_TESTS {
        return None;
    }
    let first = usize::from(to) - run;
    let keys: Vec<u32> = tests.get(first..)?.iter().map(|e| e.test.lo).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w.first() == w.get(1)) {
        return None;
    }
    Some((u16::try_from(first).ok()?, keys))
}

#[cfg(test)]
mod tests {
    use crate::insn::Insn;
    use crate::opcode::*;
    use crate::validate::{validate, Mode};

    use super::super::Interp;

    /// `ld [0]`, then `n` `jeq #key_i, ret i` with the keys given, then
    /// `ret 999`.
    fn list(keys: &[u32]) -> Vec<Insn> {
        let n = keys.len();
        let mut insns = vec![Insn::stmt(LD_W_ABS, 0)];
        for &k in keys {
            // Over the rest of the chain and `ret 999` to `ret i`.
            insns.push(Insn::jump(JMP_JEQ_K, k, n as u8, 0));
        }
        insns.push(Insn::stmt(RET_K, 999));
        insns.extend((0..n as u32).map(|i| Insn::stmt(RET_K, i)));
        insns
    }

    #[test]
    fn distinct_equalities_become_one_table_that_answers_as_the_scan() {
        let keys: Vec<u32> = (0..40).map(|i| (i * 7) % 41 + 3).collect();
        let insns = list(&keys);
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        // The load's ladder (compile::build_ladders) is a chain of its own.
        let listing = interp.chain_listing();
        assert!(interp.eq_sets.len() >= 1, "{listing}");
        assert!(listing.contains("ld [0]; eq set #"), "{listing}");
        for a in 0..60u32 {
            let mut data = [0u8; 64];
            data[..4].copy_from_slice(&a.to_ne_bytes());
            let want = keys.iter().position(|&k| k == a).map_or(999, |i| i as u32);
            assert_eq!(interp.run_seccomp(&data), Ok(want), "a={a}");
            assert_eq!(interp.trace_seccomp(&data, |_| {}), Ok(want), "a={a}");
        }
    }

    #[test]
    fn a_few_other_tests_before_the_equalities_are_scanned_first() {
        // `ld [0]; jgt #1000, ret 998` (an exit test that is no equality;
        // its false side falls into the list), then the list.
        let keys: Vec<u32> = (0..40).map(|i| 2 * i).collect();
        let mut insns = list(&keys);
        insns.insert(1, Insn::jump(JMP_JGT_K, 1000, 40 + 1 + 40, 0));
        insns.push(Insn::stmt(RET_K, 998));
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let listing = interp.chain_listing();
        assert!(listing.contains("   0: ld [0]; eq set #"), "{listing}");
        for a in (0..90u32).chain([1000, 1001, u32::MAX]) {
            let mut data = [0u8; 64];
            data[..4].copy_from_slice(&a.to_ne_bytes());
            let want = if a > 1000 { 998 } else { keys.iter().position(|&k| k == a).map_or(999, |i| i as u32) };
            assert_eq!(interp.run_seccomp(&data), Ok(want), "a={a}");
            assert_eq!(interp.trace_seccomp(&data, |_| {}), Ok(want), "a={a}");
        }
    }

    #[test]
    fn repeated_constants_short_chains_and_spread_keys_keep_the_scan() {
        let mut repeated: Vec<u32> = (0..40).collect();
        repeated[39] = 5;
        let spread: Vec<u32> = (0..40).map(|i| i * 1000).collect();
        let short: Vec<u32> = (0..20).collect();
        for keys in [repeated, spread, short] {
            let interp = Interp::new(&validate(&list(&keys), Mode::Seccomp).unwrap());
            assert_eq!(interp.eq_sets.len(), 0, "{keys:?}");
        }
    }

    #[test]
    fn entries_in_the_middle_of_a_chain_miss_the_tests_before_them() {
        // `ld [0]; ja +9; jeq #0 .. jeq #39`: the run enters the chain at
        // its tenth test.
        let keys: Vec<u32> = (0..40).collect();
        let mut insns = list(&keys);
        insns.insert(1, Insn::stmt(JMP_JA, 9));
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        assert!(interp.eq_sets.len() >= 1, "{}", interp.chain_listing());
        for a in 0..45u32 {
            let mut data = [0u8; 64];
            data[..4].copy_from_slice(&a.to_ne_bytes());
            let want = interp.trace_seccomp(&data, |_| {}).unwrap();
            assert_eq!(interp.run_seccomp(&data), Ok(want), "a={a}");
            assert_eq!(want, if (9..40).contains(&a) { a } else { 999 }, "a={a}");
        }
    }
}
