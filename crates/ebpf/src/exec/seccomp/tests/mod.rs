//! The executor against the general interpreter: results and executed
//! counts, from every entry of chains, ladders and linked trees.

use chain::ExitTest;

use super::chains::{exit_test, ChainBuilder, Scans, SAME};
use super::ops::{cond_of, Kind, SOp, EQ, GE, GT, LE, LT, NE, SET};
use super::{SeccompProg, Subset};
use crate::isa::insn::Insn;
use crate::{Helpers, LoadOptions, Program, Vm};

mod flow;
mod subset;

/// The executor's form of `insns`, if they are in the subset.
fn compile(insns: &[Insn]) -> Option<SeccompProg> {
    Subset::recognise(insns)?.compile()
}

#[test]
fn sop_is_sixteen_bytes() {
    assert_eq!(std::mem::size_of::<SOp>(), 16);
}

#[test]
fn exit_tests_match_the_compares() {
    let xs = [0u32, 1, 2, 0x3f, 0x40, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, 0xffff_fffe, 0xffff_ffff];
    // Zero-extended `w2 = K` values and sign-extended `imm`s (>= 2^32).
    let mut vs: Vec<u64> = xs.iter().map(|&x| u64::from(x)).collect();
    vs.extend([0xffff_ffff_8000_0000, 0xffff_ffff_ffff_ffff, 0xffff_ffff_ffff_fffe, 0xffff_ffff_8000_0040]);
    let mut failures = Vec::new();
    for cond in [EQ, NE, GT, GE, LT, LE, SET] {
        for &v in &vs {
            for outcome in [true, false] {
                let t = exit_test(cond, v, outcome);
                for &x in &xs {
                    let want = cond_of(cond).eval(u64::from(x), v) == outcome;
                    let got = t.is_some_and(|t| t.hits(x));
                    // The flipped storage of the scan agrees with the plain test.
                    let mut built = ChainBuilder::default();
                    built.push(t, 1, 0);
                    built.push(Some(ExitTest::ALWAYS), 2, 0);
                    let scanned = built.finish().first_exit_after(x, 0).target == 1;
                    if got != want || scanned != want {
                        failures.push(format!("cond {cond} v {v:#x} outcome {outcome} x {x:#x}: {got} {scanned}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}

/// The converter's prologue, then X = ctx word 1 (the "enter in the
/// middle" flag), A = ctx word 0, and `if X != 0 goto entry` (`entry`
/// is an index into the body).
fn head(entry: usize, body: &[Insn]) -> Vec<Insn> {
    let mut p = vec![
        i(0xac, 0, 0, 0, 0),
        i(0xac, 7, 7, 0, 0),
        i(0xbf, 6, 1, 0, 0),
        i(0x61, 7, 6, 4, 0),
        i(0x61, 0, 6, 0, 0),
        i(0x55, 7, 0, entry as i16, 0),
    ];
    p.extend_from_slice(body);
    p
}

fn data(word0: u32, word1: u32) -> [u8; 64] {
    let mut d = [0u8; 64];
    d[0..4].copy_from_slice(&word0.to_le_bytes());
    d[4..8].copy_from_slice(&word1.to_le_bytes());
    d
}

/// Runs `p` on every `(word0, word1)` on the executor and on the general
/// interpreter; describes each difference in result or executed count.
fn differences(name: &str, p: &[Insn], words: &[(u32, u32)]) -> Vec<String> {
    let datas: Vec<(String, [u8; 64])> =
        words.iter().map(|&(w0, w1)| (format!("{name} word0 {w0:#x} word1 {w1}"), data(w0, w1))).collect();
    differences_on(name, p, &datas)
}

/// Runs `p` on each named input on both executor variants (counting
/// and uncounted) and on the general interpreter; describes each
/// difference in result or executed count (the uncounted variant
/// leaves `Vm::executed` as it was).
fn differences_on(name: &str, p: &[Insn], datas: &[(String, [u8; 64])]) -> Vec<String> {
    let plain = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let fast = Program::load(p, &LoadOptions::default(), &Helpers::new()).unwrap();
    let slow = Program::load(p, &plain, &Helpers::new()).unwrap();
    assert!(fast.has_seccomp_executor(), "{name}: not on the executor");
    let (mut vf, mut vs) = (Vm::new(), Vm::new());
    let mut out = Vec::new();
    for (what, d) in datas {
        let (rf, rs) = (vf.run_seccomp(&fast, d), vs.run_seccomp(&slow, d));
        let steps = vf.executed();
        let ru = vf.run_seccomp_uncounted(&fast, d);
        if rf != rs || ru != rs || steps != vs.executed() || vf.executed() != steps {
            out.push(format!(
                "{what}: executor {rf:?} ({steps} steps), uncounted {ru:?} (then {} steps), general {rs:?} ({} \
                 steps)",
                vf.executed(),
                vs.executed()
            ));
        }
    }
    out
}

fn count(p: &[Insn], kind: Kind) -> usize {
    compile(p).unwrap().ops.iter().filter(|o| o.kind == kind).count()
}

/// Values around each constant, and a few others.
fn words(consts: &[u32]) -> Vec<(u32, u32)> {
    let mut w: Vec<u32> = consts.iter().flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)]).collect();
    w.extend([0, 7, 0x7fff_ffff, 0x8000_0000, u32::MAX]);
    w.iter().flat_map(|&v| [(v, 0), (v, 1)]).collect()
}

/// [`differences`] of `body` entered (through [`head`]) at each of
/// `starts`, on the words around `consts`; with two or more entries, a
/// program without a `kind` op is a failure too (`what` names it).
fn from_every_entry(starts: &[usize], body: &[Insn], consts: &[u32], kind: Kind, what: &str) -> Vec<String> {
    let n = starts.len();
    let mut failures = Vec::new();
    for (entry, &start) in starts.iter().enumerate() {
        let p = head(start, body);
        if n >= 2 && count(&p, kind) == 0 {
            failures.push(format!("n {n}: no {what} op"));
        }
        failures.extend(differences(&format!("n {n} entry {entry}"), &p, &words(consts)));
    }
    failures
}

/// `==` chains of 1 to 20 compares (`if r0 == K` and, every third,
/// `w2 = K; if r0 == r2` with K >= 2^31; every fifth jumping through a
/// `ja`), entered at the top and, through the `if X != 0` jump, at
/// every compare: hits in each position of the first and later blocks,
/// and misses, with the general interpreter's results and step counts.
#[test]
fn compare_chains_match_the_general_interpreter_from_every_entry() {
    let mut failures = Vec::new();
    for n in 1..=20usize {
        let big = |k: usize| k % 3 == 2;
        let value = |k: usize| if big(k) { 0x8000_0000 | k as u32 } else { 100 + k as u32 };
        // Body: the chain, `w0 = 0; exit`, then per element `ja +0`
        // (every fifth is jumped to) and `w0 = k + 1; exit`.
        let starts: Vec<usize> =
            (0..n).scan(0, |at, k| Some(std::mem::replace(at, *at + 1 + usize::from(big(k))))).collect();
        let chain_len = starts.last().map_or(0, |&s| s + 1 + usize::from(big(n - 1)));
        let ret = |k: usize| chain_len + 2 + 3 * k;
        let mut body = Vec::new();
        for (k, &start) in starts.iter().enumerate() {
            let jump_pc = start + usize::from(big(k));
            let to = if k % 5 == 4 { ret(k) } else { ret(k) + 1 };
            let off = (to - jump_pc - 1) as i16;
            if big(k) {
                body.push(i(0xb4, 2, 0, 0, value(k) as i32));
                body.push(i(0x1d, 0, 2, off, 0));
            } else {
                body.push(i(0x15, 0, 0, off, value(k) as i32));
            }
        }
        body.extend([i(0xb4, 0, 0, 0, 0), i(0x95, 0, 0, 0, 0)]);
        for k in 0..n {
            body.extend([i(0x05, 0, 0, 0, 0), i(0xb4, 0, 0, 0, k as i32 + 1), i(0x95, 0, 0, 0, 0)]);
        }
        let consts: Vec<u32> = (0..n).map(value).collect();
        failures.extend(from_every_entry(&starts, &body, &consts, Kind::Chain, "chain"));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Allow-lists: `prefix` tests `if r0 > 1000 + j` (to `w0 = 500 + j;
/// exit`), then 40 `if r0 == K` with distinct dense K (every fifth
/// jumping through a `ja`), `w0 = 0; exit`: the chain runs as an eq set
/// (up to four tests before the equalities), from every entry, with the
/// general interpreter's results and step counts.
#[test]
fn equality_chains_run_as_eq_sets_from_every_entry() {
    let mut failures = Vec::new();
    let n = 40usize;
    let value = |k: usize| 100 + ((k * 7) % 41) as u32;
    for prefix in 0..=5usize {
        let chain_len = prefix + n;
        let ret = |k: usize| chain_len + 2 + 3 * k;
        let mut body = Vec::new();
        for j in 0..prefix {
            let off = (ret(n + j) + 1 - j - 1) as i16;
            body.push(i(0x25, 0, 0, off, 1000 + j as i32));
        }
        for k in 0..n {
            let jump_pc = prefix + k;
            let to = if k % 5 == 4 { ret(k) } else { ret(k) + 1 };
            body.push(i(0x15, 0, 0, (to - jump_pc - 1) as i16, value(k) as i32));
        }
        body.extend([i(0xb4, 0, 0, 0, 0), i(0x95, 0, 0, 0, 0)]);
        for k in 0..n + prefix {
            let r = if k < n { k as i32 + 1 } else { 500 + (k - n) as i32 };
            body.extend([i(0x05, 0, 0, 0, 0), i(0xb4, 0, 0, 0, r), i(0x95, 0, 0, 0, 0)]);
        }
        let mut consts: Vec<u32> = (0..n).map(value).collect();
        consts.extend((0..prefix).map(|j| 1000 + j as u32));
        let starts: Vec<usize> = (0..chain_len).collect();
        let p = head(0, &body);
        // The entry at the first test (pc 6, past the head).
        let compiled = compile(&p).unwrap();
        let first_is_set = compiled.ops.get(6).is_some_and(|o| o.kind == Kind::EqSet);
        if (prefix <= 4) != first_is_set {
            failures.push(format!("prefix {prefix}: first op\n{}", compiled.chain_listing()));
        }
        failures.extend(from_every_entry(&starts, &body, &consts, Kind::Chain, "chain").into_iter().filter(|f| {
            // Entries kept as chains are fine: they miss the table.
            !f.ends_with("no chain op")
        }));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// An allow-list as a libseccomp ladder: 40 rungs `r0 = word 0; if r0 !=
/// K goto next; w0 = k + 1; exit`, entered at each load: the reloads run
/// as one eq set ([`Kind::LdEqSet`]), as the general interpreter does.
/// The same with constants that repeat (OpenSSH's `nr == futex` per futex
/// op): a rung past a repeat's first one must leave at the later one.
#[test]
fn equality_ladders_run_as_eq_sets_from_every_reload() {
    let distinct: Vec<u32> = (0..40).map(|k| 200 + (k * 11) % 43).collect();
    let repeated: Vec<u32> = test_data::eq_keys::repeated().iter().map(|k| 200 + k).collect();
    for consts in [distinct, repeated] {
        let mut body = Vec::new();
        for (k, &value) in consts.iter().enumerate() {
            body.push(i(0x61, 0, 6, 0, 0));
            body.push(i(0x55, 0, 0, 2, value as i32));
            body.extend([i(0xb4, 0, 0, 0, k as i32 + 1), i(0x95, 0, 0, 0, 0)]);
        }
        body.extend([i(0xb4, 0, 0, 0, 0), i(0x95, 0, 0, 0, 0)]);
        let starts: Vec<usize> = (0..consts.len()).map(|k| 4 * k).collect();
        let p = head(0, &body);
        assert!(count(&p, Kind::LdEqSet) > 0, "{consts:?}\n{}", compile(&p).unwrap().chain_listing());
        let failures = from_every_entry(&starts, &body, &consts, Kind::LdEqSet, "eq set");
        assert!(failures.is_empty(), "{consts:?}: {} failures:\n{}", failures.len(), failures.join("\n"));
    }
}

/// libseccomp-style ladders of 1 to 20 rungs on ctx word 0, each
/// `r0 = word 0; <compare>; w0 = k + 1; exit` with the compare going on
/// to the next rung: `if r0 != K`, `w2 = K; if r0 != r2` (K >= 2^31)
/// or `if r0 < K` (so an earlier rung can catch a later one's values:
/// the first hit in program order must win); entered at the first
/// load and, through the `if X != 0` jump, at every rung's load.
#[test]
fn ladders_match_the_general_interpreter_from_every_reload() {
    let mut failures = Vec::new();
    for n in 1..=20usize {
        let value = |k: usize| match k % 3 {
            0 => 100 + k as u32,
            1 => 0x8000_0000 | k as u32,
            _ => 0xf000_0000 - k as u32,
        };
        let rung_len = |k: usize| if k % 3 == 1 { 5 } else { 4 };
        let starts: Vec<usize> = (0..n).scan(0, |at, k| Some(std::mem::replace(at, *at + rung_len(k)))).collect();
        let mut body = Vec::new();
        for k in 0..n {
            body.push(i(0x61, 0, 6, 0, 0));
            match k % 3 {
                0 => body.push(i(0x55, 0, 0, 2, value(k) as i32)),
                1 => body.extend([i(0xb4, 2, 0, 0, value(k) as i32), i(0x5d, 0, 2, 2, 0)]),
                _ => body.push(i(0xa5, 0, 0, 2, value(k) as i32)),
            }
            body.extend([i(0xb4, 0, 0, 0, k as i32 + 1), i(0x95, 0, 0, 0, 0)]);
        }
        body.extend([i(0xb4, 0, 0, 0, 0), i(0x95, 0, 0, 0, 0)]);
        let consts: Vec<u32> = (0..n).map(value).collect();
        // The last rungs' chains are short, so the misses before them
        // link on (compile's short links) and every entry, a ladder op,
        // is a linked-chain op.
        failures.extend(from_every_entry(&starts, &body, &consts, Kind::LdLinked, "ladder"));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// A libseccomp-style binary-search tree over `keys` (sorted, distinct)
/// on r0: inner nodes `if r0 <= K` / `if r0 > K` (alternating by
/// depth), the right subtree of every odd-depth node starting with a
/// reload of ctx word 0 (which r0 holds: a reload link), leaves of up
/// to four `==` tests (or, with `jset_leaf`, the first leaf's tests as
/// `if r0 & K`) missing to a second, shared tree, then `w0 = 1; exit`
/// (hit) and `w0 = 0; exit` (miss).
/// Returns the body (for [`head`]) and the index of every node and
/// reload in it.
fn tree(keys: &[u32], jset_leaf: bool) -> (Vec<Insn>, Vec<usize>) {
    /// A jump to a body index, or to the hit / miss returns.
    enum To {
        At(usize),
        Hit,
        Miss,
    }
    fn build(keys: &[u32], depth: u32, jset: &mut bool, out: &mut Vec<(Insn, Option<To>)>, nodes: &mut Vec<usize>) {
        if keys.len() <= 4 {
            for &k in keys {
                nodes.push(out.len());
                let code = if *jset { 0x45 } else { 0x15 };
                out.push((i(code, 0, 0, 0, k as i32), Some(To::Hit)));
            }
            *jset = false;
            out.push((i(0x05, 0, 0, 0, 0), Some(To::Miss)));
            return;
        }
        let mid = keys.len() / 2;
        let split = keys[mid - 1];
        nodes.push(out.len());
        let at = out.len();
        // `if r0 <= split goto left` (right falls through), or
        // `if r0 > split goto right` (left falls through).
        let le = depth % 2 == 0;
        out.push((i(if le { 0xb5 } else { 0x25 }, 0, 0, 0, split as i32), None));
        let (first, second) = if le { (&keys[mid..], &keys[..mid]) } else { (&keys[..mid], &keys[mid..]) };
        let reload = |out: &mut Vec<(Insn, Option<To>)>, nodes: &mut Vec<usize>| {
            if depth % 2 == 1 {
                nodes.push(out.len());
                out.push((i(0x61, 0, 6, 0, 0), None));
            }
        };
        if !le {
            build(first, depth + 1, jset, out, nodes);
        } else {
            reload(out, nodes);
            build(first, depth + 1, jset, out, nodes);
        }
        out[at].1 = Some(To::At(out.len()));
        if !le {
            reload(out, nodes);
        }
        build(second, depth + 1, jset, out, nodes);
    }
    let (mut out, mut nodes) = (Vec::new(), Vec::new());
    let mut jset = jset_leaf;
    build(keys, 0, &mut jset, &mut out, &mut nodes);
    // Every leaf misses to a second tree (M, past two dead
    // instructions): the last leaf's chain runs on into it through its
    // `ja` (so M's entry has a skip count of its own) and every other
    // leaf's miss links to it. M: `if r0 > 100` to `== 0xffff_fff0`,
    // else `== 1`, `== 2`.
    let m = out.len() + 2;
    nodes.extend([m, m + 1, m + 4]);
    let tail = [
        (i(0xb4, 0, 0, 0, 7), None),
        (i(0x95, 0, 0, 0, 0), None),
        (i(0x25, 0, 0, 0, 100), Some(To::At(m + 4))),
        (i(0x15, 0, 0, 0, 1), Some(To::Hit)),
        (i(0x15, 0, 0, 0, 2), Some(To::Hit)),
        (i(0x05, 0, 0, 0, 0), Some(To::Miss)),
        (i(0x15, 0, 0, 0, 0xffff_fff0_u32 as i32), Some(To::Hit)),
        (i(0x05, 0, 0, 0, 0), Some(To::Miss)),
    ];
    let hit = m + 6;
    let body = out
        .into_iter()
        .map(|(insn, to)| (insn, to.map(|t| if matches!(t, To::Miss) { To::At(m) } else { t })))
        .chain(tail)
        .enumerate()
        .map(|(pc, (insn, to))| {
            let target = match to {
                None => return insn,
                Some(To::At(t)) => t,
                Some(To::Hit) => hit,
                Some(To::Miss) => hit + 2,
            };
            Insn { off: (target - pc - 1) as i16, ..insn }
        })
        .chain([i(0xb4, 0, 0, 0, 1), i(0x95, 0, 0, 0, 0), i(0xb4, 0, 0, 0, 0), i(0x95, 0, 0, 0, 0)])
        .collect();
    (body, nodes)
}

/// Binary-search trees of 5 to 40 keys (linked chains: every node's
/// exits link on to the next node, through reloads of the word on
/// half the right subtrees), entered at the top and, through the
/// `if X != 0` jump, at every node, leaf test and reload: the executor
/// (a tree path in one dispatch) against the general interpreter,
/// results and step counts. With a `jset` leaf (not a range) the chains
/// that hold it are scanned with their masks
/// ([`Kind::MaskedLinked`]), the others still link, and the results
/// still agree.
#[test]
fn linked_tree_chains_match_the_general_interpreter_from_every_node() {
    let mut failures = Vec::new();
    for n in [5usize, 8, 9, 13, 16, 17, 24, 31, 40] {
        // Keys past any direct table (`chain::DENSE_BYTES`): the measured
        // policy then keeps these trees as linked chains.
        let keys: Vec<u32> = (0..n as u32).map(|k| 3 * k + if k % 4 == 3 { 0x8000_0000 } else { 0x1_0000 }).collect();
        let mut keys = keys;
        keys.sort_unstable();
        let consts: Vec<u32> = keys.iter().copied().chain([1, 2, 100, 0xffff_fff0]).collect();
        // Inputs: word 2 passes the check in front of the tree or not.
        let datas: Vec<(String, [u8; 64])> = words(&consts)
            .into_iter()
            .flat_map(|(w0, w1)| {
                [0x1234u32, 0].map(|w2| {
                    let mut d = data(w0, w1);
                    d[8..12].copy_from_slice(&w2.to_le_bytes());
                    (format!("word0 {w0:#x} word1 {w1} word2 {w2:#x}"), d)
                })
            })
            .collect();
        for jset_leaf in [false, true] {
            let (tree_body, tree_nodes) = tree(&keys, jset_leaf);
            // In front of the tree, a check of word 2 (libseccomp's
            // architecture check), then r0 = word 0: the check's chain
            // links on to the tree with a reload that changes r0.
            let miss = 3 + tree_body.len() - 2;
            let mut body = vec![i(0x61, 0, 6, 8, 0), i(0x55, 0, 0, (miss - 2) as i16, 0x1234), i(0x61, 0, 6, 0, 0)];
            body.extend(tree_body);
            let nodes: Vec<usize> = [0, 1, 2].into_iter().chain(tree_nodes.iter().map(|&n| n + 3)).collect();
            for &entry in &nodes {
                let p = head(entry, &body);
                let prog = compile(&p).unwrap();
                let linked_ops = count(&p, Kind::Linked) + count(&p, Kind::LdLinked);
                let links = prog.chains.table.exits.iter().filter(|t| t.exit.links()).count();
                let reloads = prog.chains.table.exits.iter().filter(|t| t.exit.links() && t.exit.ret != SAME).count();
                let masked_ops = count(&p, Kind::MaskedLinked) + count(&p, Kind::LdMaskedLinked);
                // A chain that holds the leaf's `jset` is scanned with its
                // masks; the rest of the tree links as before.
                if jset_leaf && (masked_ops == 0 || linked_ops == 0 || links == 0) {
                    failures
                        .push(format!("n {n} jset: {masked_ops} masked ops, {linked_ops} linked ops, {links} links"));
                }
                if !jset_leaf && masked_ops != 0 {
                    failures.push(format!("n {n}: {masked_ops} masked ops without a jset"));
                }
                // The check links on to the tree's root (a tree node
                // from 9 keys on), with a reload.
                if !jset_leaf && n >= 9 && (linked_ops == 0 || links == 0 || reloads == 0) {
                    failures.push(format!("n {n}: {linked_ops} linked ops, {links} links, {reloads} reloads"));
                }
                let what = format!("n {n} jset {jset_leaf} entry {entry}");
                let named: Vec<(String, [u8; 64])> =
                    datas.iter().map(|(d, bytes)| (format!("{what} {d}"), *bytes)).collect();
                failures.extend(differences_on(&what, &p, &named));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// libseccomp's x32 check in front of its syscall tree: `if r0 >
/// 0x3fffffff` on word 0, whose fall-through reloads word 0 (which r0
/// holds) and runs into the tree's root (a tree with reloads of its own
/// between levels). With trees admitted, the check's region goes on
/// through the reloads: the check's load is one search of the whole
/// (`chain::RangeTrees::needs_load`), the check's root keeps its op, no
/// chain leaves to the tree's nodes, and every input agrees with the
/// general interpreter (results and counts). (Before regions went through
/// reloads, the check was a chain that left to the tree's search.)
#[test]
fn a_check_before_a_reload_and_a_tree_is_one_search_from_its_load() {
    let mut failures = Vec::new();
    for n in [9usize, 16, 40] {
        let keys: Vec<u32> = (0..n as u32).map(|k| 5 * k + 3).collect();
        let (tree_body, _) = tree(&keys, false);
        let miss = 3 + tree_body.len() - 2;
        let mut body = vec![i(0x61, 0, 6, 0, 0), i(0x25, 0, 0, (miss - 2) as i16, 0x3fff_ffff), i(0x61, 0, 6, 0, 0)];
        body.extend(tree_body);
        let p = head(0, &body);
        let prog = Subset::recognise(&p).unwrap().compile_with(Some(chain::Policy::EVERY_TREE)).unwrap();
        // `head` is 6 instructions: the check's load is body[0], its root
        // body[1].
        let (load, root) = (6, 6 + 1);
        let (load_op, root_op) = (prog.ops.get(load), prog.ops.get(root).map(|o| o.kind));
        if load_op.map(|o| o.kind) != Some(Kind::LdTree) || matches!(root_op, Some(Kind::Tree)) {
            failures.push(format!("n {n}: load and root are {:?}, {root_op:?}", load_op.map(|o| o.kind)));
        }
        // Small keys, 2n + 1 intervals and the check's: a direct table.
        if load_op.is_none_or(|o| o.target & super::trees::DIRECT == 0) {
            failures.push(format!("n {n}: no direct table\n{}", prog.chain_listing()));
        }
        // The check's two tests stay plain ops (no chain walks on into the
        // tree's nodes from it).
        if matches!(root_op, Some(Kind::LdChain | Kind::LdLinked | Kind::LdMaskedLinked | Kind::Linked)) {
            failures.push(format!("n {n}: the check is {root_op:?}\n{}", prog.chain_listing()));
        }
        let consts: Vec<u32> = keys.iter().copied().chain([0, 1, 0x3fff_ffff, 0xffff_fff0]).collect();
        let named: Vec<(String, [u8; 64])> = words(&consts)
            .into_iter()
            .map(|(w0, w1)| (format!("n {n} word0 {w0:#x} word1 {w1}"), data(w0, w1)))
            .collect();
        failures.extend(differences_on(&format!("n {n}"), &p, &named));
        // The program with the tree, against the general interpreter.
        let plain = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
        let slow = Program::load(&p, &plain, &Helpers::new()).unwrap();
        let mut vm = Vm::new();
        for (what, d) in &named {
            let want = vm.run_seccomp(&slow, d).map(|r| (u64::from(r), vm.executed()));
            let got = prog.run(d).map(|(r, steps)| (r as u32 as u64, steps));
            if got != want {
                failures.push(format!("{what}: tree program {got:?}, general {want:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The converted arch check (`w0 = word 1; w2 = K; if r0 != r2 goto
/// kill`) falling through to a tree's load (`w0 = word 0`) is one op,
/// [`Kind::LdMovJneTree`], and every input agrees with the general
/// interpreter, results and executed counts, counting or not, for the
/// right arch, others, and values around every key.
#[test]
fn an_arch_check_before_a_tree_is_one_op_with_its_search() {
    let keys: Vec<u32> = (0..40u32).map(|k| 5 * k + 3).collect();
    let (tree_body, _) = tree(&keys, false);
    let arch = 0xc000_003e_u32;
    let kill = 4 + tree_body.len();
    let mut body = vec![
        i(0x61, 0, 6, 4, 0),
        i(0xb4, 2, 0, 0, arch as i32),
        i(0x5d, 0, 2, (kill - 3) as i16, 0),
        i(0x61, 0, 6, 0, 0),
    ];
    body.extend(tree_body);
    body.extend([i(0xb4, 0, 0, 0, 9), i(0x95, 0, 0, 0, 0)]);
    let p = head(0, &body);
    let prog = Subset::recognise(&p).unwrap().compile_with(Some(chain::Policy::EVERY_TREE)).unwrap();
    assert_eq!(prog.ops.get(6).map(|o| o.kind), Some(Kind::LdMovJneTree), "{}", prog.chain_listing());
    let plain = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let slow = Program::load(&p, &plain, &Helpers::new()).unwrap();
    let mut vm = Vm::new();
    let mut datas = Vec::new();
    for w0 in keys.iter().flat_map(|&k| [k - 1, k, k + 1]).chain([0, 0x4000_0000, u32::MAX]) {
        for w1 in [arch, arch + 1, 1] {
            datas.push((format!("word0 {w0:#x} word1 {w1:#x}"), data(w0, w1)));
        }
    }
    let mut failures = differences_on("arch check", &p, &datas);
    for (what, d) in &datas {
        let want = vm.run_seccomp(&slow, d).map(|r| (u64::from(r), vm.executed()));
        let got = prog.run(d).map(|(r, steps)| (r as u32 as u64, steps));
        let uncounted = prog.run_uncounted(d).map(|r| r as u32 as u64);
        if got != want || uncounted != want.as_ref().map(|&(r, _)| r).map_err(|e| e.clone()) {
            failures.push(format!("{what}: executor {got:?} / {uncounted:?}, general {want:?}"));
        }
    }
    // The same check opening the program (right after the converter's
    // prologue): uncounted runs start with it outside the run loop
    // (`SeccompProg::run_entry`), going on in the loop for a wrong arch.
    let mut direct = p[..3].to_vec();
    direct.extend_from_slice(&body);
    let prog = Subset::recognise(&direct).unwrap().compile_with(Some(chain::Policy::EVERY_TREE)).unwrap();
    assert_eq!(prog.ops.get(3).map(|o| o.kind), Some(Kind::LdMovJneTree), "{}", prog.chain_listing());
    failures.extend(uncounted_differences(&prog, &direct, &datas, "first op"));
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The uncounted runs of `prog` (compiled from `p`) against the general
/// interpreter on `datas`: each difference in result, described.
fn uncounted_differences(prog: &SeccompProg, p: &[Insn], datas: &[(String, [u8; 64])], note: &str) -> Vec<String> {
    let plain = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let slow = Program::load(p, &plain, &Helpers::new()).unwrap();
    let mut vm = Vm::new();
    let mut out = Vec::new();
    for (what, d) in datas {
        let want = vm.run_seccomp(&slow, d).map(u64::from);
        let uncounted = prog.run_uncounted(d).map(|r| r as u32 as u64);
        if uncounted != want {
            out.push(format!("{what} ({note}): executor {uncounted:?}, general {want:?}"));
        }
    }
    out
}

/// An arch check that goes on to a tree it is not fused with, opening the
/// program (after the converter's prologue): `if r0 == r2 goto tree` (its
/// hit is the tree: [`Kind::LdMovJeq`]), and a check of two arches both
/// going to the tree (a chain: docker_like_opt2's head). Uncounted runs
/// start with both ops outside the loop (`Start::FirstTwo`), going on in
/// the loop for other arches, and answer as the general interpreter, for
/// each arch and values around every key; counted runs too.
#[test]
fn an_arch_check_going_on_to_a_tree_runs_with_its_search() {
    let keys: Vec<u32> = (0..40u32).map(|k| 5 * k + 3).collect();
    let (tree_body, _) = tree(&keys, false);
    let arch = 0xc000_003e_u32;
    let with_head = |check: &[Insn]| {
        let mut p = head(0, &[])[..3].to_vec();
        p.extend_from_slice(check);
        // The refusal, then the tree's load and the tree.
        p.extend([i(0xb4, 0, 0, 0, 9), i(0x95, 0, 0, 0, 0), i(0x61, 0, 6, 0, 0)]);
        p.extend_from_slice(&tree_body);
        p
    };
    let jeq_arch = with_head(&[i(0x61, 0, 6, 4, 0), i(0xb4, 2, 0, 0, arch as i32), i(0x1d, 0, 2, 2, 0)]);
    let two_arches = with_head(&[i(0x61, 0, 6, 4, 0), i(0x15, 0, 0, 3, 7), i(0x15, 0, 0, 2, 8)]);
    let mut failures = Vec::new();
    for (name, p, first) in [("jeq arch", &jeq_arch, Kind::LdMovJeq), ("two arches", &two_arches, Kind::LdLinked)] {
        let prog = Subset::recognise(p).unwrap().compile_with(Some(chain::Policy::EVERY_TREE)).unwrap();
        let listing = prog.chain_listing();
        let kinds = (prog.uncounted_ops.get(3).map(|o| o.kind), prog.uncounted_ops.get(8).map(|o| o.kind));
        assert_eq!(kinds, (Some(first), Some(Kind::LdTree)), "{name}:\n{listing}");
        assert_eq!(prog.start_in, super::run::Start::FirstTwo, "{name}:\n{listing}");
        assert!(listing.starts_with("start (uncounted): first op and its tree outside the loop\n"), "{listing}");
        let mut datas = Vec::new();
        for w0 in keys.iter().flat_map(|&k| [k - 1, k, k + 1]).chain([0, 0x4000_0000, u32::MAX]) {
            for w1 in [arch, arch + 1, 7, 8, 1] {
                datas.push((format!("{name}: word0 {w0:#x} word1 {w1:#x}"), data(w0, w1)));
            }
        }
        failures.extend(differences_on(name, p, &datas));
        failures.extend(uncounted_differences(&prog, p, &datas, "first two ops"));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Random compare regions in converted form (after [`head`]: entered at
/// the top and, through `if X != 0`, at a random unit): units of
/// `if r0 <cond> K` (every condition, `K` small, at the edges, or with the
/// top bit set: a sign-extended `imm`), `w2 = K; if r0 <cond> r2` (the
/// converter's form for a `K` with the top bit set), `ja`, and what ends a
/// region (`w0 += 1`, a reload of word 0 or 2, `w0 = K; exit`), every jump
/// forward to a unit: DAGs through `ja`. Compiled with a tree wherever one
/// branches ([`chain::Policy::EVERY_TREE`]; every fourth program with the
/// measured policy), the executor, counting and not, against the general
/// interpreter on every cut ±1 of the constants and random words:
/// results and executed counts (trees whose outcomes link on to chains
/// included).
#[test]
fn random_compare_trees_match_the_general_interpreter() {
    let mut rng = test_data::rng::Rng(0x5851_f42d_4c95_7f2d);
    let plain = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let (mut with_trees, mut with_links, mut with_masked, mut failures) = (0, 0, 0, Vec::new());
    for case in 0..1500 {
        let units = 4 + rng.below(36);
        let mut ks: Vec<u32> = (0..4).map(|_| rng.next_u64() as u32 % 48).collect();
        // 0x4000_0000 and 0xc000_0000: `&` tests that join a tree's table.
        ks.extend([0, 1, u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) - 1, 0x8000_0030, 0x4000_0000, 0xc000_0000]);
        // Per unit: its instructions, with the unit a jump goes to (or
        // `units`: the final `exit`).
        let mut shapes: Vec<Vec<(Insn, Option<usize>)>> = Vec::with_capacity(units);
        for u in 0..units {
            let to = Some(u + 1 + rng.below(units - u));
            let k = ks[rng.below(ks.len())];
            let cond = [0x10u8, 0x20, 0x30, 0x40, 0x50, 0xa0, 0xb0][rng.below(7)];
            let word = [0, 8][rng.below(2)];
            shapes.push(match rng.below(16) {
                0 | 1 => vec![(i(0x05, 0, 0, 0, 0), to)],
                2 => vec![(i(0x04, 0, 0, 0, 1), None)],
                3 => vec![(i(0x61, 0, 6, word, 0), None)],
                4 => vec![(i(0xb4, 0, 0, 0, u as i32), None), (i(0x95, 0, 0, 0, 0), None)],
                5..=8 => vec![(i(0xb4, 2, 0, 0, k as i32), None), (i(0x05 | cond | 0x08, 0, 2, 0, 0), to)],
                _ => vec![(i(0x05 | cond, 0, 0, 0, k as i32), to)],
            });
        }
        let mut starts = Vec::with_capacity(units + 1);
        let mut at = 0;
        for s in &shapes {
            starts.push(at);
            at += s.len();
        }
        starts.push(at);
        let body: Vec<Insn> = shapes
            .iter()
            .flatten()
            .enumerate()
            .map(|(pc, &(insn, to))| match to {
                Some(u) => Insn { off: (starts[u] - pc - 1) as i16, ..insn },
                None => insn,
            })
            .chain([i(0x95, 0, 0, 0, 0)])
            .collect();
        let p = head(starts[rng.below(units)], &body);
        let policy = if case % 4 == 3 { chain::Policy::default() } else { chain::Policy::EVERY_TREE };
        let fast = Subset::recognise(&p).unwrap().compile_with(Some(policy)).unwrap();
        let trees = fast.ops.iter().filter(|o| o.kind == Kind::Tree).count();
        with_trees += usize::from(trees > 0);
        with_links += usize::from(fast.chains.trees.links() > 0);
        with_masked +=
            usize::from(fast.ops.iter().any(|o| matches!(o.kind, Kind::MaskedLinked | Kind::LdMaskedLinked)));
        let slow = Program::load(&p, &plain, &Helpers::new()).unwrap();
        let mut vm = Vm::new();
        let mut values: Vec<u32> = ks.iter().flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)]).collect();
        values.extend((0..8).map(|_| rng.next_u64() as u32));
        for &w0 in &values {
            for w1 in [0, 1] {
                let mut d = data(w0, w1);
                d[8..12].copy_from_slice(&rng.next_u64().to_le_bytes()[..4]);
                let want = vm.run_seccomp(&slow, &d).map(|r| (u64::from(r), vm.executed()));
                let got = fast.run(&d).map(|(r, n)| (r as u32 as u64, n));
                let uncounted = fast.run_uncounted(&d).map(|r| (r as u32 as u64, vm.executed()));
                let want_uncounted = want.as_ref().map(|&(r, _)| (r, vm.executed())).map_err(|e| e.clone());
                if got != want || uncounted != want_uncounted {
                    failures.push(format!(
                        "case {case} word0 {w0:#x} word1 {w1}: executor {got:?} / {uncounted:?}, general {want:?}\n{}",
                        fast.chain_listing()
                    ));
                }
            }
        }
        if failures.len() > 3 {
            break;
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(with_trees > 300, "only {with_trees} programs with trees");
    assert!(with_links > 20, "only {with_links} programs whose trees link on");
    assert!(with_masked > 20, "only {with_masked} programs with masked linked chains");
}

/// OpenSSH's flag checks converted: `r0 = word 0; w0 &= M; if r0 <cond> K
/// goto +1; exit; w0 += 1; exit` (both outcomes return r0, so the masked
/// value itself is checked), entered at the load (one [`Kind::LdAndJcc`]
/// op), at the `and` and at the jump, with the general interpreter's
/// results and step counts; a `K` of 2^31 or more (a sign-extended `imm`)
/// keeps the three instructions.
#[test]
fn masked_compares_after_a_load_run_as_one_op_from_every_entry() {
    let mut rng = test_data::rng::Rng(0xa11d_f1a9);
    let conds: [(u8, u8); 7] = [(0x15, EQ), (0x55, NE), (0x25, GT), (0x35, GE), (0xa5, LT), (0xb5, LE), (0x45, SET)];
    let mut failures = Vec::new();
    for case in 0..200 {
        let mask = match rng.below(3) {
            0 => 0xffff_fe7f_u32,
            1 => 1 << rng.below(32),
            _ => rng.next_u64() as u32,
        };
        let k = match rng.below(3) {
            0 => mask & rng.next_u64() as u32 & 0x7fff_ffff,
            1 => rng.below(16) as u32,
            _ => rng.next_u64() as u32,
        };
        let &(code, _) = rng.pick(&conds);
        let body = [
            i(0x61, 0, 6, 0, 0),
            i(0x54, 0, 0, 0, mask as i32),
            i(code, 0, 0, 1, k as i32),
            i(0x95, 0, 0, 0, 0),
            i(0x04, 0, 0, 0, 1),
            i(0x95, 0, 0, 0, 0),
        ];
        let fused = count(&head(0, &body), Kind::LdAndJcc);
        if fused != usize::from(k < 0x8000_0000) {
            failures.push(format!("case {case}: {fused} fused ops for k {k:#x}"));
        }
        let consts = [k, k | !mask, mask, k & mask, !mask];
        for start in 0..3 {
            failures.extend(differences(&format!("case {case} entry {start}"), &head(start, &body), &words(&consts)));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// A converted 32-bit argument ladder (`chain::ladder`, Chromium's rules)
/// over words 7 (high) and 6 (low): each round as `bpf_convert_filter()`
/// writes it (`jeq #0xffffffff` as `w2 = K; if r0 != r2`, the `jset` as a
/// jump and a `ja`, negative keys loaded into r2), hits to `w0 = K;
/// exit`, misses and rejects to an `exit` of r0. Entered at the body's
/// start (a ladder op), at a later round and in the middle of the first:
/// results and executed counts as the general interpreter's, counting or
/// not. And with the first round's high word loaded into X, not A: that
/// round is no ladder's (`chain::Code::loaded_word` is a load into A), and
/// its compares read what A held.
#[test]
fn argument_ladders_match_the_general_interpreter() {
    let mut failures = Vec::new();
    let key_sets = [&[5u32][..], &[3, 0x8000_0001], &[1, 0x40a, 0xffff_fff0, 7, 0, 2]];
    for (keys, x_first) in key_sets.iter().flat_map(|&k| [(k, false), (k, true)]) {
        // Each instruction with its absolute target, if it jumps (fixed up
        // below).
        let mut body: Vec<(Insn, Option<usize>)> = Vec::new();
        let (mut starts, n) = (Vec::new(), keys.len());
        let round_len = |k: u32| if k > 0x7fff_ffff { 11 } else { 10 };
        let end: usize = keys.iter().map(|&k| round_len(k)).sum::<usize>() + 1;
        let (hit, miss, reject) = (end, end + 2, end + 3);
        let (load_hi, load_lo) = (i(0x61, 0, 6, 28, 0), i(0x61, 0, 6, 24, 0));
        for (i_round, &k) in keys.iter().enumerate() {
            let r = body.len();
            starts.push(r);
            let first_load = if x_first && i_round == 0 { i(0x61, 7, 6, 28, 0) } else { load_hi };
            body.extend([
                (first_load, None),
                (i(0x15, 0, 0, 0, 0), Some(r + 8)),
                (i(0xb4, 2, 0, 0, -1), None),
                (i(0x5d, 0, 2, 0, 0), Some(reject)),
                (load_lo, None),
                (i(0xb4, 2, 0, 0, i32::MIN), None),
                (i(0x4d, 0, 2, 0, 0), Some(r + 8)),
                (i(0x05, 0, 0, 0, 0), Some(reject)),
                (load_lo, None),
            ]);
            if k > 0x7fff_ffff {
                body.extend([(i(0xb4, 2, 0, 0, k as i32), None), (i(0x1d, 0, 2, 0, 0), Some(hit))]);
            } else {
                body.push((i(0x15, 0, 0, 0, k as i32), Some(hit)));
            }
            // The last round's miss through a `ja`.
            if i_round + 1 == n {
                body.push((i(0x05, 0, 0, 0, 0), Some(miss)));
            }
        }
        assert_eq!(body.len(), end);
        let ends = [i(0xb4, 0, 0, 0, 0x7fff_0000), i(0x95, 0, 0, 0, 0), i(0x95, 0, 0, 0, 0), i(0x95, 0, 0, 0, 0)];
        body.extend(ends.map(|e| (e, None)));
        let body: Vec<Insn> = body
            .iter()
            .enumerate()
            .map(|(pc, &(insn, to))| match to {
                Some(t) => Insn { off: (t - pc - 1) as i16, ..insn },
                None => insn,
            })
            .collect();
        let mut los: Vec<u32> = vec![0, 2, 0x7fff_ffff, 0x8000_0000, u32::MAX];
        los.extend(keys.iter().flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)]));
        for entry in [0, 4, 8, starts[n - 1]] {
            let p = head(entry, &body);
            let prog = compile(&p).unwrap();
            let ladder = prog.ops.get(6).is_some_and(|o| o.kind == Kind::Ladder);
            if ladder != (n >= chain::ladder::MIN_ROUNDS && !x_first) {
                failures.push(format!("{keys:x?} x first {x_first}: ladder op {ladder}\n{}", prog.chain_listing()));
            }
            let named: Vec<(String, [u8; 64])> = [0u32, 1, 0x8000_0000, u32::MAX - 1, u32::MAX]
                .iter()
                .flat_map(|&hi| los.iter().map(move |&lo| (hi, lo)))
                .map(|(hi, lo)| {
                    let mut d = data(0, u32::from(entry != 0));
                    d[24..28].copy_from_slice(&lo.to_le_bytes());
                    d[28..32].copy_from_slice(&hi.to_le_bytes());
                    (format!("{keys:x?} x first {x_first} entry {entry} hi {hi:#x} lo {lo:#x}"), d)
                })
                .collect();
            failures.extend(differences_on(&format!("{keys:x?} x first {x_first} entry {entry}"), &p, &named));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// A constant filter (`ret #k` converted: the prologue, then `w0 = k;
/// exit`) starts its uncounted runs in its `ret`, outside the loop
/// (`Start::Constant`), and returns `k` zero-extended, as the general
/// interpreter does, for a `k` with the top bit set too.
#[test]
fn a_constant_filter_returns_from_its_first_op() {
    let datas: Vec<(String, [u8; 64])> = [(0, 0), (1, 0xc000_003e), (u32::MAX, u32::MAX)]
        .map(|(w0, w1)| (format!("{w0:#x} {w1:#x}"), data(w0, w1)))
        .into();
    for k in [0x7fff_0000u32, 0x8000_0000, 0, 0x0005_0001, u32::MAX] {
        let mut p = head(0, &[])[..3].to_vec();
        p.extend([i(0xb4, 0, 0, 0, k as i32), i(0x95, 0, 0, 0, 0)]);
        let prog = Subset::recognise(&p).unwrap().compile_with(None).unwrap();
        let listing = prog.chain_listing();
        assert_eq!(prog.start_in, super::run::Start::Constant, "{k:#x}:\n{listing}");
        assert!(listing.starts_with("start (uncounted): its ret outside the loop\n"), "{listing}");
        assert_eq!(prog.run_uncounted(&datas[1].1), Ok(u64::from(k)), "{k:#x}");
        let failures = uncounted_differences(&prog, &p, &datas, "constant");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
