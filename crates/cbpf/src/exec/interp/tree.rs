//! Compare trees as breakpoint tables ([`chain::RangeTrees`], shared with
//! the eBPF executor): which ops use one. The root of every region of
//! `jeq/jgt/jge #k` (through `ja`) that branches, deep enough to pay,
//! becomes a [`Step::Tree`], and a seccomp `ld [k]` right before it a
//! [`Step::LdTree`]: libseccomp's `--opt 2` trees and `optimize`'s output,
//! walked node by node before, are one search; with the x32 check in front
//! (`ld [0]; jge #0x40000000; jeq #-1; ld [0]`) the search starts at the
//! first load, and the check's root keeps its op (`needs_load`). The
//! region's other compares keep their ops, for jumps that land on them
//! from elsewhere.

use chain::RangeTrees;

use super::compile::{seccomp_load, Classic, Step, DEAD};

/// The tables of the compare trees of `code` (outcomes: raw pcs, for
/// `compile::route_returns` to route) with each root's op, and the op of
/// a seccomp load right before it, replaced. Runs before the routing and
/// `compile::link_chains`, so that no chain links into a tree's root.
pub(super) fn build(code: &Classic<'_>, ops: &mut [Step]) -> RangeTrees<u16> {
    let insns = code.insns;
    let trees = RangeTrees::build(code, 0..insns.len(), |pc| u16::try_from(pc).ok().filter(|&t| t != DEAD));
    for (tree, &root) in trees.roots().iter().enumerate() {
        let Some(tree) = u16::try_from(tree).ok().filter(|&t| t < DIRECT) else { break };
        // The op's tree index says whether the tree has a direct table,
        // so that the others' runs skip its check.
        let at_root = !trees.needs_load(usize::from(tree));
        let tree = if trees.direct(usize::from(tree)) { tree | DIRECT } else { tree };
        // A tree whose region reloads its word answers only from its load:
        // the root keeps its op for jumps that reach it holding another
        // value.
        if let (true, Some(op)) = (at_root, ops.get_mut(root)) {
            *op = Step::Tree { tree };
        }
        // k < 64 by seccomp_check_filter().
        let load = root.checked_sub(1).and_then(|pc| Some((pc, u8::try_from(seccomp_load(insns, pc)?).ok()?)));
        if let Some((pc, k)) = load {
            if let Some(op) = ops.get_mut(pc) {
                *op = Step::LdTree { k, tree };
            }
        }
    }
    trees
}

/// Fuses each [`Step::LdRange`] that goes on to a [`Step::LdTree`] on one
/// side into one [`Step::LdRangeTree`]: the architecture check before a
/// syscall tree (libseccomp's `--opt 2` filters, Chromium's) and the
/// tree's load and search in one dispatch, where every input went through
/// both. With the tree on the test's hit side, the op holds the complement
/// range (`x - lo > span` is `x - (lo + span + 1) <= !span - 1`; a test
/// that always hits has none and stays). The `LdTree` keeps its op for
/// other jumps. Runs last, on the final ops.
pub(super) fn fuse_entries(ops: &mut [Step]) {
    let tree_at = |ops: &[Step], pc: u16| match ops.get(usize::from(pc)) {
        Some(&Step::LdTree { k, tree }) => Some((k, tree)),
        _ => None,
    };
    for pc in 0..ops.len() {
        let Some(&Step::LdRange { k, lo, span, target, then, .. }) = ops.get(pc) else { continue };
        let fused = if let Some((tree_k, tree)) = tree_at(ops, then) {
            Step::LdRangeTree { k, lo, span, target, tree_k, tree }
        } else if let (Some((tree_k, tree)), false) = (tree_at(ops, target), span == u32::MAX) {
            let (lo, span) = (lo.wrapping_add(span).wrapping_add(1), !span - 1);
            Step::LdRangeTree { k, lo, span, target: then, tree_k, tree }
        } else {
            continue;
        };
        if let Some(op) = ops.get_mut(pc) {
            *op = fused;
        }
    }
}

/// The bit of a [`Step::Tree`]'s tree index that says the tree has a
/// direct table for its small values (`chain::RangeTrees::direct`), to
/// look up there first; the other trees only search. A bit of the index
/// rather than ops of their own: measured (callgrind), two more op
/// variants moved the run loop's code and cost OpenSSH's filter 2% more
/// instructions a run, and a check of the table's own bound cost the
/// trees without one 3%.
pub(super) const DIRECT: u16 = 1 << 15;

/// Where tree `tree` (an index with [`DIRECT`]) leaves to for `a` (a
/// routed pc).
#[inline(always)]
pub(super) fn exit(trees: &RangeTrees<u16>, tree: u16, a: u32) -> usize {
    let outcome = if tree & DIRECT != 0 {
        trees.outcome(usize::from(tree & !DIRECT), a)
    } else {
        trees.searched_outcome(usize::from(tree), a)
    };
    outcome.map_or(usize::from(DEAD), usize::from)
}

#[cfg(test)]
mod tests {
    use crate::insn::Insn;
    use crate::opcode::*;
    use crate::validate::{validate, Mode};

    use super::super::Interp;
    use super::{Step, DIRECT};
    use test_data::rng::Rng;

    /// `struct seccomp_data` with `nr` and `arch`.
    fn data(nr: u32, arch: u32) -> [u8; 64] {
        let mut d = [0u8; 64];
        d[..4].copy_from_slice(&nr.to_ne_bytes());
        d[4..8].copy_from_slice(&arch.to_ne_bytes());
        d
    }

    /// The fast path and the instruction-by-instruction trace agree on
    /// every value around every constant the program compares with.
    fn agree(interp: &Interp, insns: &[Insn], more: &[u32]) {
        let mut xs: Vec<u32> = vec![0, 1, u32::MAX, u32::MAX - 1, 1 << 31];
        xs.extend(more);
        for insn in insns {
            if insn.code & 0x07 == BPF_JMP {
                xs.extend([insn.k.wrapping_sub(1), insn.k, insn.k.wrapping_add(1)]);
            }
        }
        for &x in &xs {
            for arch in [0xc000_003e, 0] {
                let d = data(x, arch);
                let want = interp.trace_seccomp(&d, |_| {}).unwrap();
                assert_eq!(interp.run_seccomp(&d), Ok(want), "nr={x:#x} arch={arch:#x}\n{}", interp.chain_listing());
            }
        }
    }

    /// A libseccomp `--opt 2` style filter: architecture check, then a
    /// tree of `jge` splits with `ja` trampolines down to `jeq` leaves.
    fn tree_filter(keys: &[u32]) -> Vec<Insn> {
        let mut insns = vec![
            Insn::stmt(LD_W_ABS, 4),
            Insn::jump(JMP_JEQ_K, 0xc000_003e, 1, 0),
            Insn::stmt(RET_K, 0),
            Insn::stmt(LD_W_ABS, 0),
        ];
        // Leaves: `jeq #k, allow, deny` at the end; fixed up below.
        fn node(keys: &[u32], out: &mut Vec<(u16, u32, usize, usize)>) -> usize {
            let at = out.len();
            if keys.len() == 1 {
                out.push((JMP_JEQ_K, keys[0], usize::MAX, usize::MAX - 1));
                return at;
            }
            out.push((JMP_JGE_K, 0, 0, 0));
            let mid = keys.len() / 2;
            // A trampoline before the left subtree.
            out.push((JMP_JA, 0, 0, 0));
            let left = node(&keys[..mid], out);
            let right = node(&keys[mid..], out);
            out[at] = (JMP_JGE_K, keys[mid], right, at + 1);
            out[at + 1] = (JMP_JA, 0, left, 0);
            at
        }
        let mut body = Vec::new();
        node(keys, &mut body);
        let base = insns.len();
        let (allow, deny) = (base + body.len(), base + body.len() + 1);
        let fix = |t: usize| match t {
            usize::MAX => allow,
            t if t == usize::MAX - 1 => deny,
            t => base + t,
        };
        for (i, &(code, k, jt, jf)) in body.iter().enumerate() {
            let pc = base + i;
            if code == JMP_JA {
                insns.push(Insn::stmt(JMP_JA, (fix(jt) - pc - 1) as u32));
            } else {
                insns.push(Insn::jump(code, k, (fix(jt) - pc - 1) as u8, (fix(jf) - pc - 1) as u8));
            }
        }
        insns.push(Insn::stmt(RET_K, 0x7fff_0000));
        insns.push(Insn::stmt(RET_K, 0x0005_0001));
        insns
    }

    #[test]
    fn a_syscall_tree_is_one_op_that_answers_as_the_trace() {
        // Runs of consecutive keys, as allow-lists are: 4 intervals behind a
        // walk of 6 compares, which the measured `chain::Policy` keeps.
        let keys: Vec<u32> = (2..26).chain([u32::MAX - 1, u32::MAX]).collect();
        let insns = tree_filter(&keys);
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let listing = interp.chain_listing();
        assert_eq!(interp.ops[3], Step::LdTree { k: 0, tree: 0 }, "{listing}");
        assert_eq!(interp.ops[4], Step::Tree { tree: 0 }, "{listing}");
        assert_eq!(interp.trees.len(), 1);
        assert!(listing.contains("trees:\ntree #0 @4: "), "{listing}");
        agree(&interp, &insns, &[]);
        for nr in 0..200 {
            let want = if keys.contains(&nr) { 0x7fff_0000 } else { 0x0005_0001 };
            assert_eq!(interp.run_seccomp(&data(nr, 0xc000_003e)), Ok(want), "nr={nr}");
        }
    }

    #[test]
    fn a_sparse_syscall_tree_looks_small_numbers_up_directly() {
        // Every third number allowed (Chromium's and Docker's trees: many
        // intervals, a search of 7 steps): the tree op is marked direct,
        // and every number up to past the last key answers as the trace,
        // as do numbers past the direct table (the search).
        let keys: Vec<u32> = (0..60).map(|i| 3 * i + 1).chain([0x4000_0001]).collect();
        let insns = tree_filter(&keys);
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let listing = interp.chain_listing();
        assert_eq!(interp.ops[3], Step::LdTree { k: 0, tree: DIRECT }, "{listing}");
        assert_eq!(interp.ops[4], Step::Tree { tree: DIRECT }, "{listing}");
        assert!(listing.contains("tree #0 @4: 123 intervals, direct below 0xb3\n"), "{listing}");
        agree(&interp, &insns, &(0..200).collect::<Vec<_>>());
        for nr in (0..200).chain([0x4000_0000, 0x4000_0001, 0x4000_0002, u32::MAX]) {
            let want = if keys.contains(&nr) { 0x7fff_0000 } else { 0x0005_0001 };
            assert_eq!(interp.run_seccomp(&data(nr, 0xc000_003e)), Ok(want), "nr={nr}");
        }
    }

    #[test]
    fn the_x32_test_before_a_tree_is_part_of_its_op() {
        // Chromium's head: `ld [0]; jset #0x40000000, kill` before the tree.
        // The load and the `jset` are one op with the tree behind them.
        let keys: Vec<u32> = (0..40).map(|i| 3 * i + 1).collect();
        let mut insns = tree_filter(&keys);
        let to_end = insns.len() - 4; // from past the `jset` to the `ret` appended
        insns.insert(4, Insn::jump(JMP_JSET_K, 0x4000_0000, to_end as u8, 0));
        insns.push(Insn::stmt(RET_K, 0x8000_0000));
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let listing = interp.chain_listing();
        assert_eq!(interp.ops[3], Step::LdTree { k: 0, tree: DIRECT }, "{listing}");
        assert!(listing.contains("tree #0 @4: 84 intervals, direct below 0x77\n"), "{listing}");
        agree(&interp, &insns, &[0x3fff_ffff, 0x4000_0001, 0x8000_0001, 0xc000_0001]);
        x32_answers(&interp, &keys, &[0x4000_0001, 0xc000_0001], &[0x8000_0001]);
    }

    #[test]
    fn a_check_of_two_arches_runs_with_the_tree_behind_it() {
        // docker_like_opt2's head: `jeq` of two arches (a chain, not one
        // range test, so not fused with the tree), both going to the same
        // tree. A run starts with the chain and the tree's search outside
        // the loop (`Entry::Two`) and answers as the trace for each arch.
        let keys: Vec<u32> = (0..60).map(|i| 3 * i + 1).collect();
        let mut insns = tree_filter(&keys);
        insns.insert(1, Insn::jump(JMP_JEQ_K, 0x4000_0003, 2, 0));
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let listing = interp.chain_listing();
        assert!(matches!(interp.ops[0], Step::LdRangeChain { k: 4, .. }), "{listing}");
        assert!(matches!(interp.ops[4], Step::LdTree { k: 0, .. }), "{listing}");
        assert_eq!(interp.entry, super::super::Entry::Two, "{listing}");
        agree(&interp, &insns, &(0..200).collect::<Vec<_>>());
        for arch in [0xc000_003e, 0x4000_0003, 0x4000_0004] {
            for nr in 0..200 {
                let want = match (arch != 0x4000_0004, keys.contains(&nr)) {
                    (false, _) => 0,
                    (true, true) => 0x7fff_0000,
                    (true, false) => 0x0005_0001,
                };
                assert_eq!(interp.run_seccomp(&data(nr, arch)), Ok(want), "nr={nr} arch={arch:#x}");
            }
        }
    }

    /// On x86_64: the numbers 0..130 and `others` as the tree over `keys`
    /// says (allowed, else ERRNO), `killed` with the x32 test's kill.
    fn x32_answers(interp: &Interp, keys: &[u32], killed: &[u32], others: &[u32]) {
        for &nr in (0..130).collect::<Vec<_>>().iter().chain(killed).chain(others) {
            let want = match nr {
                _ if killed.contains(&nr) => 0x8000_0000,
                _ if keys.contains(&nr) => 0x7fff_0000,
                _ => 0x0005_0001,
            };
            assert_eq!(interp.run_seccomp(&data(nr, 0xc000_003e)), Ok(want), "nr={nr:#x}");
        }
    }

    #[test]
    fn the_x32_check_before_a_reload_is_one_op_with_the_tree_from_its_load() {
        // libseccomp's `--opt 2` head: `ld [0]`, the x32 check, `ld [0]`,
        // the tree. Here another arch goes on (`add #0; ja`) to the check
        // holding the arch word: the check's root keeps its op (its table
        // assumes the value is word 0), its load gets the table.
        let keys: Vec<u32> = (0..40).map(|i| 3 * i + 1).collect();
        let tree = tree_filter(&keys);
        let body = &tree[4..];
        let mut insns = vec![
            Insn::stmt(LD_W_ABS, 4),
            Insn::jump(JMP_JEQ_K, 0xc000_003e, 2, 0),
            Insn::stmt(ALU_ADD_K, 0),
            Insn::stmt(JMP_JA, 1),
            Insn::stmt(LD_W_ABS, 0),
            Insn::jump(JMP_JGE_K, 0x4000_0000, 0, 1),
            Insn::jump(JMP_JEQ_K, u32::MAX, 0, (body.len() + 1) as u8),
            Insn::stmt(LD_W_ABS, 0),
        ];
        insns.extend_from_slice(body);
        insns.push(Insn::stmt(RET_K, 0x8000_0000));
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let listing = interp.chain_listing();
        assert!(matches!(interp.ops[4], Step::LdTree { k: 0, .. }), "{listing}");
        assert!(!matches!(interp.ops[5], Step::Tree { .. }), "{listing}");
        assert!(matches!(interp.ops[7], Step::LdTree { k: 0, .. }), "{listing}");
        assert!(listing.contains("tree #0 @5: 83 intervals"), "{listing}");
        agree(&interp, &insns, &[0x3fff_ffff, 0x4000_0001, u32::MAX, 0xc000_003e]);
        x32_answers(&interp, &keys, &[0x4000_0001, u32::MAX - 1], &[u32::MAX]);
    }

    #[test]
    fn the_arch_check_before_a_tree_is_one_op_with_its_search() {
        // tree_filter's arch check jumps over a `ret` to the tree's load
        // when it hits (`jeq #arch, 1, 0`), or with `jeq #0, 0, 1` when it
        // misses: the range op's target side, fused as the complement
        // range. libseccomp's (`jeq #arch, 0, <kill>`) falls through to
        // the load: the `then` side. All answer as the trace.
        let keys: Vec<u32> = (0..40).map(|i| 3 * i + 1).collect();
        for shape in 0..3 {
            let mut insns = tree_filter(&keys);
            let load = if shape == 2 { 2 } else { 3 };
            match shape {
                1 => insns[1] = Insn::jump(JMP_JEQ_K, 0, 0, 1),
                2 => {
                    insns.remove(2);
                    let to_end = (insns.len() - 2) as u8;
                    insns[1] = Insn::jump(JMP_JEQ_K, 0xc000_003e, 0, to_end);
                    insns.push(Insn::stmt(RET_K, 0));
                }
                _ => {}
            }
            let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
            let listing = interp.chain_listing();
            assert!(matches!(interp.ops[0], Step::LdRangeTree { k: 4, tree_k: 0, .. }), "{shape}: {listing}");
            assert!(matches!(interp.ops[load], Step::LdTree { k: 0, .. }), "{shape}: {listing}");
            agree(&interp, &insns, &[0x3fff_ffff]);
        }
    }

    #[test]
    fn jumps_into_the_middle_of_a_tree_keep_the_nodes_ops() {
        // `ld [8]; jeq #1, <a leaf's parent>` then the filter: the region
        // is reached from two entries; the second lands on a node whose op
        // is its own chain op.
        let keys: Vec<u32> = (0..16).collect();
        let tree = tree_filter(&keys);
        let inner = tree.len() - 6; // a `jeq` leaf or split near the end
        let mut insns = vec![Insn::stmt(LD_W_ABS, 8), Insn::stmt(LD_W_ABS, 0), Insn::jump(JMP_JGT_K, 30, 0, 1)];
        insns.push(Insn::stmt(JMP_JA, (inner + 4 - 3 - 1) as u32));
        insns.extend(tree.iter().copied());
        let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        assert!(!matches!(interp.ops[inner + 4], Step::Tree { .. }), "{}", interp.chain_listing());
        assert!(!interp.trees.is_empty(), "{}", interp.chain_listing());
        agree(&interp, &insns, &(0..60).collect::<Vec<_>>());
    }

    #[test]
    fn random_compare_regions_answer_as_the_trace() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut with_trees = 0;
        for _ in 0..1500 {
            let n = 6 + rng.below(40);
            let mut ks: Vec<u32> = (0..4).map(|_| rng.next_u64() as u32 % 48).collect();
            // 0x4000_0000 and 0xc000_0000: `jset`s that join a tree's table.
            ks.extend([0, 1, u32::MAX, u32::MAX - 1, 1 << 31, 0x4000_0000, 0xc000_0000]);
            let mut insns = vec![Insn::stmt(LD_W_ABS, 0)];
            for pc in 1..n {
                let room = (n - pc).min(255);
                let (jt, jf) = (rng.below(room) as u8, rng.below(room) as u8);
                let k = ks[rng.below(ks.len())];
                insns.push(match rng.below(16) {
                    0 => Insn::stmt(JMP_JA, u32::from(jt)),
                    1 => Insn::stmt(ALU_ADD_K, 1),
                    2 => Insn::stmt(LD_W_ABS, 16),
                    3 => Insn::jump(JMP_JSET_K, k, jt, jf),
                    4 => Insn::stmt(RET_K, pc as u32),
                    5..=8 => Insn::jump(JMP_JEQ_K, k, jt, jf),
                    9..=11 => Insn::jump(JMP_JGT_K, k, jt, jf),
                    _ => Insn::jump(JMP_JGE_K, k, jt, jf),
                });
            }
            insns.push(Insn::stmt(RET_A, 0));
            let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
            with_trees += usize::from(!interp.trees.is_empty());
            let more: Vec<u32> = (0..8).map(|_| rng.next_u64() as u32).collect();
            agree(&interp, &insns, &more);
        }
        assert!(with_trees > 100, "only {with_trees} programs with trees");
    }
}
