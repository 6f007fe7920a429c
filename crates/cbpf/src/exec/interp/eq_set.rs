//! Long compare chains of `jeq #k` exits as lookup tables
//! ([`chain::EqSets`], shared with the eBPF executor): which ops use one.
//! A [`Step::LongChain`] or [`Step::LdLongChain`] whose chain ends in a run
//! of at least 32 equalities, starting at
//! most a few tests before the run (and not inside it when a constant
//! repeats: `chain::EqSets`), becomes a [`Step::EqSet`] or
//! [`Step::LdEqSet`] on its chain's table.

use chain::EqSets;

use super::compile::{Chains, Exit, Step};

/// What a lookup that cannot happen returns: a leave to a pc past any
/// program, which ends the run with 0.
static DEAD_EXIT: Exit = Exit { test: chain::ExitTest::ALWAYS, target: u16::MAX, link: super::compile::LEAVE };

/// Where the op of table `set` that starts at test `from` leaves for `a`
/// ([`EqSets::exit`]; called out of line, through `Interp::eq_set_exit`).
#[inline(always)]
pub(super) fn exit<'c>(sets: &EqSets, chains: &'c Chains, set: u16, a: u32, from: u16) -> &'c Exit {
    sets.exit(chains, set, a, usize::from(from), &DEAD_EXIT)
}

/// Replaces every [`Step::LongChain`] and [`Step::LdLongChain`] whose chain
/// has a table ([`EqSets::build`], one per chain: ops sharing their
/// sentinel `to` are parts of one chain) by [`Step::EqSet`] or
/// [`Step::LdEqSet`]. Runs last: the exits it reads are final (routed,
/// linked).
pub(super) fn build(ops: &mut [Step], chains: &Chains) -> EqSets {
    let ends = ops.iter().filter_map(|op| match *op {
        Step::LongChain { to, .. } | Step::LdLongChain { to, .. } => Some(usize::from(to)),
        _ => None,
    });
    let sets = EqSets::build(chains, ends.collect::<Vec<_>>());
    for op in ops.iter_mut() {
        *op = match *op {
            Step::LongChain { from, to } => match sets.set_of(usize::from(from), usize::from(to)) {
                Some(set) => Step::EqSet { set, from, to, first: sets.repeats(set) },
                None => continue,
            },
            Step::LdLongChain { k, from, to } => match sets.set_of(usize::from(from), usize::from(to)) {
                Some(set) => Step::LdEqSet { k, set, from, to, first: sets.repeats(set) },
                None => continue,
            },
            _ => continue,
        };
    }
    sets
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
        assert!(!interp.eq_sets.is_empty(), "{listing}");
        assert!(listing.contains("ld [0]; eq set #"), "{listing}");
        assert!(!listing.contains("first test first"), "an allow-list keeps the plain lookup:\n{listing}");
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
    fn short_chains_and_spread_keys_keep_the_scan() {
        for (name, keys) in test_data::eq_keys::refused(20) {
            let interp = Interp::new(&validate(&list(&keys), Mode::Seccomp).unwrap());
            assert_eq!(interp.eq_sets.len(), 0, "{name}: {keys:?}");
        }
    }

    #[test]
    fn repeated_constants_leave_at_their_first_test_from_every_entry() {
        // The list (pc 4 on), and the same list entered at its eleventh
        // test (arch odd: `ld [0]; ja` to pc 15), past the first 5 and 7:
        // they leave at their later tests there.
        let keys = test_data::eq_keys::repeated();
        let mut insns = vec![
            Insn::stmt(LD_W_ABS, 4),
            Insn::jump(JMP_JSET_K, 1, 0, 2),
            Insn::stmt(LD_W_ABS, 0),
            Insn::stmt(JMP_JA, 11),
        ];
        insns.extend(list(&keys));
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let listing = interp.chain_listing();
        assert!(listing.contains("   4: ld [0]; eq set #"), "{listing}");
        // A table whose constants repeat tries the op's first test first.
        assert!(listing.contains(", first test first\n"), "{listing}");
        assert!(
            listing.contains("  15: long chain @"),
            "an entry past a repeat's first test took the table:\n{listing}"
        );
        for arch in [0u32, 1] {
            for a in (0..60u32).chain([299, 300, 301, u32::MAX]) {
                let mut data = [0u8; 64];
                data[..4].copy_from_slice(&a.to_ne_bytes());
                data[4..8].copy_from_slice(&arch.to_ne_bytes());
                let from = if arch == 1 { 10 } else { 0 };
                let want = keys.iter().skip(from).position(|&k| k == a).map_or(999, |i| (i + from) as u32);
                assert_eq!(interp.run_seccomp(&data), Ok(want), "arch {arch} a={a}");
                assert_eq!(interp.trace_seccomp(&data, |_| {}), Ok(want), "arch {arch} a={a}");
            }
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
        assert!(!interp.eq_sets.is_empty(), "{}", interp.chain_listing());
        for a in 0..45u32 {
            let mut data = [0u8; 64];
            data[..4].copy_from_slice(&a.to_ne_bytes());
            let want = interp.trace_seccomp(&data, |_| {}).unwrap();
            assert_eq!(interp.run_seccomp(&data), Ok(want), "a={a}");
            assert_eq!(want, if (9..40).contains(&a) { a } else { 999 }, "a={a}");
        }
    }

    /// An arch check before the allow-list, as libseccomp and OpenSSH
    /// write it, both ways round (`jeq #ARCH, 0, kill` and `jeq #ARCH,
    /// list, 0; ret kill`): a run starts with both ops outside the loop
    /// (`Entry::Two`; the second form's test turned round so that its hit
    /// is the refusal, `compile::ret_on_hit`), and answers as the trace
    /// on every arch and number, the keys' neighbours and a number that
    /// goes on past the lookup (an `x32` check after it: the loop).
    #[test]
    fn an_arch_check_runs_with_the_lookup_behind_it() {
        let keys: Vec<u32> = (0..40).map(|i| 3 * i + 1).collect();
        let arch = 0xc000_003e;
        let n = keys.len() as u8;
        // `ld [0]; jge #0x40000000, x32` ahead of the list's equalities,
        // the x32 check a reload of the arch (the loop's work).
        let mut tail = list(&keys);
        tail.insert(1, Insn::jump(JMP_JGE_K, 0x4000_0000, n + 1 + n, 0));
        tail.extend([Insn::stmt(LD_W_ABS, 4), Insn::jump(JMP_JEQ_K, arch, 0, 1), Insn::stmt(RET_K, 997)]);
        tail.push(Insn::stmt(RET_K, 0));
        let kill_from = |at: usize| (tail.len() - 1 + at) as u8;
        let miss_goes_on = {
            let mut p = vec![Insn::stmt(LD_W_ABS, 4), Insn::jump(JMP_JEQ_K, arch, 0, kill_from(0))];
            p.extend(tail.iter().copied());
            p
        };
        let hit_goes_on = {
            let mut p = vec![Insn::stmt(LD_W_ABS, 4), Insn::jump(JMP_JEQ_K, arch, 1, 0), Insn::stmt(RET_K, 0)];
            p.extend(tail.iter().copied());
            p
        };
        for insns in [miss_goes_on, hit_goes_on] {
            let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
            let listing = interp.chain_listing();
            assert_eq!(interp.entry, super::super::Entry::Two, "{listing}");
            assert!(listing.starts_with("start: ops 0 and its lookup outside the loop\n"), "{listing}");
            let numbers = keys.iter().flat_map(|&k| [k - 1, k, k + 1]).chain([0x4000_0000, 0x4000_0001, u32::MAX]);
            for a in numbers {
                for w4 in [arch, arch + 1, 0] {
                    let mut data = [0u8; 64];
                    data[..4].copy_from_slice(&a.to_ne_bytes());
                    data[4..8].copy_from_slice(&w4.to_ne_bytes());
                    let want = interp.trace_seccomp(&data, |_| {}).unwrap();
                    assert_eq!(interp.run_seccomp(&data), Ok(want), "arch {w4:#x} a={a:#x}\n{listing}");
                    let expected = match (w4 == arch, a >= 0x4000_0000) {
                        (false, _) => 0,
                        (true, true) => 997,
                        (true, false) => keys.iter().position(|&k| k == a).map_or(999, |i| i as u32),
                    };
                    assert_eq!(want, expected, "arch {w4:#x} a={a:#x}");
                }
            }
        }
    }
}
