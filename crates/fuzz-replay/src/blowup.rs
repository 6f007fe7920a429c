//! Valid seccomp filters shaped to blow up analyses: each shape is small to
//! write and was, before the work budgets of issue 13, exponential or
//! quadratic in some analysis or in the fast engine's build.
//!
//! | shape | what it stresses |
//! |---|---|
//! | [`Shape::UndecidedChain`] | a chain of argument tests where both outcomes continue: 2^n paths for `explain` |
//! | [`Shape::ManyArches`] | `arch` compared with many constants, arch and nr mixed in the body: one fast-engine table per arch |
//! | [`Shape::KeyedTables`] | two-level tables (arch, then nr) with many keys: the fast engine's keyed dispatch |
//! | [`Shape::NrPrefixUnsettled`] | a long `jeq` prefix on nr, then tests data flow cannot settle: per-nr analysis work |
//! | [`Shape::Diamonds`] | nested diamonds through scratch stores and ALU: path explosion through `M[]` |
//! | [`Shape::DoublingAlu`] | `tax; add x` repeated, each result compared: expressions of 2^n nodes for `explain` |
//! | [`Shape::JeqLadder`] | `jeq` on nr, each skipping the next or not: one compare DAG as deep as the program, for the interpreters' compare trees |
//! | [`Shape::JgtLadder`] | `jgt` on nr at falling bounds, each skipping the next or not: thousands of lone values for `optimize`'s dispatch plan |
//! | [`Shape::DistinctErrnos`] | `jeq` on nr, each number its own errno: thousands of ranges with a value each, for the dispatch plan's dynamic program |
//!
//! Every shape builds a program [`cbpf::validate()`] accepts in seccomp mode
//! for any size up to [`cbpf::opcode::BPF_MAXINSNS`]; [`shape`] draws one
//! from fuzzer bytes (the first five: the fuzz corpus's bytes keep their
//! meaning). Used by the `bounded_work` fuzz target and by the CLI's
//! resource-limit property test.

use arbitrary::{Result, Unstructured};
use cbpf::opcode::{
    BPF_ABS, BPF_ADD, BPF_ALU, BPF_JEQ, BPF_JGE, BPF_JGT, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_MAXINSNS, BPF_MEM,
    BPF_MISC, BPF_RET, BPF_ST, BPF_TAX, BPF_W, BPF_X,
};
use cbpf::Insn;

const LD_ABS_W: u16 = BPF_LD | BPF_W | BPF_ABS;
const LD_MEM: u16 = BPF_LD | BPF_MEM;
const JEQ_K: u16 = BPF_JMP | BPF_JEQ | BPF_K;
const JGE_K: u16 = BPF_JMP | BPF_JGE | BPF_K;
const JGT_K: u16 = BPF_JMP | BPF_JGT | BPF_K;
const JSET_K: u16 = BPF_JMP | BPF_JSET | BPF_K;
const ADD_K: u16 = BPF_ALU | BPF_ADD | BPF_K;
const RET_K: u16 = BPF_RET | BPF_K;

// `offsetof(struct seccomp_data, nr)`, `arch` and `args[0]`; the actions the shapes return.
use cbpf::uapi::seccomp::{OFFSET_ARCH as ARCH, OFFSET_ARGS as ARGS, OFFSET_NR as NR};
use cbpf::uapi::seccomp::{SECCOMP_RET_ALLOW as ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_THREAD as KILL};

/// `SECCOMP_RET_ERRNO | EPERM`.
const ERRNO_1: u32 = SECCOMP_RET_ERRNO | 1;

/// One blow-up shape and its size parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `n` argument tests on different argument halves; both outcomes of
    /// each continue to the next test; the action is decided at the end.
    UndecidedChain(usize),
    /// `arch` compared with `n` distinct constants, each arch's body
    /// comparing nr and then arch again.
    ManyArches(usize),
    /// `n` arch keys, each with a table of nr keys.
    KeyedTables(usize),
    /// `n` `jeq` on nr, then argument tests the data flow cannot settle.
    NrPrefixUnsettled(usize),
    /// `n` diamonds, each storing to and reading from `M[]` on both sides.
    Diamonds(usize),
    /// `args[0].lo` doubled `n` times (`tax; add x`), each result compared
    /// with a constant (ERRNO when equal): the `i`-th compare's expression
    /// is a tree of 2^(i+1) - 1 nodes, shared in a DAG of `i + 1`.
    DoublingAlu(usize),
    /// `n` tests `jeq #2i` on nr, each going to the next test or skipping
    /// it (`jt 1, jf 0`): the whole program is one compare DAG whose cuts
    /// each walk up to `n` nodes (the classic interpreter's compare-tree
    /// build, `chain::RangeTrees`, must stay cheap on it).
    JeqLadder(usize),
    /// `n` tests `jgt #(n - i)` on nr, each going to the next test or
    /// skipping it: every nr up to `n` a lone range whose action flips
    /// (before the one-pass chain table of `optimize::plan`, `optimize`
    /// took 6 s on 4096 instructions).
    JgtLadder(usize),
    /// `n` tests `jeq #2i` on nr, each returning `ERRNO(i)`, then ALLOW:
    /// `2n + 1` ranges, every other one a value of its own (the dispatch
    /// plan's dynamic program is cubic in the ranges: without its budget,
    /// `optimize::plan::MAX_DP_WORK`, a filter like it cost `optimize`
    /// 1.3 s, fuzz/regressions/optimize).
    DistinctErrnos(usize),
}

impl Shape {
    /// Every shape at size `n`.
    pub fn all(n: usize) -> [Shape; 9] {
        [
            Shape::UndecidedChain(n),
            Shape::ManyArches(n),
            Shape::KeyedTables(n),
            Shape::NrPrefixUnsettled(n),
            Shape::Diamonds(n),
            Shape::DoublingAlu(n),
            Shape::JeqLadder(n),
            Shape::JgtLadder(n),
            Shape::DistinctErrnos(n),
        ]
    }

    /// The shape's program, at most [`BPF_MAXINSNS`] instructions (the size
    /// parameter is reduced to fit).
    pub fn build(self) -> Vec<Insn> {
        let mut p = match self {
            Shape::UndecidedChain(n) => undecided_chain(n.min((BPF_MAXINSNS - 4) / 3)),
            Shape::ManyArches(n) => many_arches(n.min((BPF_MAXINSNS - 64) / 2)),
            Shape::KeyedTables(n) => keyed_tables(n.min(1900)),
            Shape::NrPrefixUnsettled(n) => nr_prefix_unsettled(n.min(BPF_MAXINSNS - 80)),
            Shape::Diamonds(n) => diamonds(n.min((BPF_MAXINSNS - 4) / 6)),
            Shape::DoublingAlu(n) => doubling_alu(n.min((BPF_MAXINSNS - 5) / 4)),
            Shape::JeqLadder(n) => ladder(JEQ_K, n.min(BPF_MAXINSNS - 3), |i, _| 2 * i as u32),
            Shape::JgtLadder(n) => ladder(JGT_K, n.min(BPF_MAXINSNS - 3), |i, n| (n - i) as u32),
            Shape::DistinctErrnos(n) => distinct_errnos(n.min((BPF_MAXINSNS - 2) / 2)),
        };
        p.truncate(BPF_MAXINSNS);
        p
    }

    /// A short name for messages and file names.
    pub fn name(self) -> String {
        match self {
            Shape::UndecidedChain(n) => format!("undecided_chain_{n}"),
            Shape::ManyArches(n) => format!("many_arches_{n}"),
            Shape::KeyedTables(n) => format!("keyed_tables_{n}"),
            Shape::NrPrefixUnsettled(n) => format!("nr_prefix_unsettled_{n}"),
            Shape::Diamonds(n) => format!("diamonds_{n}"),
            Shape::DoublingAlu(n) => format!("doubling_alu_{n}"),
            Shape::JeqLadder(n) => format!("jeq_ladder_{n}"),
            Shape::JgtLadder(n) => format!("jgt_ladder_{n}"),
            Shape::DistinctErrnos(n) => format!("distinct_errnos_{n}"),
        }
    }
}

/// A shape drawn from fuzzer bytes, sized anywhere up to the kernel limit.
pub fn shape(u: &mut Unstructured<'_>) -> Result<Shape> {
    let n = u.int_in_range(1..=BPF_MAXINSNS)?;
    Ok(match u.int_in_range(0..=4u8)? {
        0 => Shape::UndecidedChain(n),
        1 => Shape::ManyArches(n),
        2 => Shape::KeyedTables(n),
        3 => Shape::NrPrefixUnsettled(n),
        _ => Shape::Diamonds(n),
    })
}

fn ld(off: u32) -> Insn {
    Insn::stmt(LD_ABS_W, off)
}

fn ret(k: u32) -> Insn {
    Insn::stmt(RET_K, k)
}

/// A jump of `code` whose targets are absolute pcs; both must lie ahead of
/// `pc` within 255.
fn jump(code: u16, k: u32, pc: usize, jt: usize, jf: usize) -> Insn {
    let rel = |t: usize| u8::try_from(t.saturating_sub(pc + 1)).unwrap_or(u8::MAX);
    Insn::jump(code, k, rel(jt), rel(jf))
}

/// The argument word `i` (cycling over the twelve halves of `args[0..6]`).
fn arg_word(i: usize) -> u32 {
    ARGS + 4 * (i % 12) as u32
}

/// Appends `n` tests that nothing settles: test `i` reads argument word
/// `i`; when it holds, the load of word `i + 1` is skipped, so the two
/// outcomes continue to the next test with different words in A and
/// neither path can merge with the other (3 instructions a test).
fn undecided(p: &mut Vec<Insn>, n: usize) {
    for i in 0..n {
        p.push(ld(arg_word(i)));
        let pc = p.len();
        let code = if i % 2 == 0 { JEQ_K } else { JSET_K };
        p.push(jump(code, i as u32 + 1, pc, pc + 2, pc + 1));
        p.push(ld(arg_word(i + 1)));
    }
}

fn undecided_chain(n: usize) -> Vec<Insn> {
    let mut p = Vec::with_capacity(3 * n + 4);
    undecided(&mut p, n);
    let pc = p.len();
    p.push(jump(JEQ_K, 7, pc, pc + 1, pc + 2));
    p.push(ret(ALLOW));
    p.push(ret(ERRNO_1));
    p
}

/// `ja` to an absolute pc ahead of `pc`.
fn ja(pc: usize, target: usize) -> Insn {
    Insn::stmt(BPF_JMP, u32::try_from(target.saturating_sub(pc + 1)).unwrap_or(0))
}

fn arch_const(i: usize) -> u32 {
    0x4000_0000 | (i as u32).wrapping_mul(7).wrapping_add(1)
}

fn many_arches(n: usize) -> Vec<Insn> {
    // ld arch; per arch i: `jeq #arch_i, 0, 1; ja body[i % 8]`; ret KILL;
    // then eight bodies that compare nr and reload arch.
    const BODIES: usize = 8;
    const BODY_LEN: usize = 6;
    let bodies_at = 1 + 2 * n + 1;
    let mut p = Vec::with_capacity(bodies_at + BODIES * BODY_LEN);
    p.push(ld(ARCH));
    for i in 0..n {
        let pc = p.len();
        p.push(jump(JEQ_K, arch_const(i), pc, pc + 1, pc + 2));
        let pc = p.len();
        p.push(ja(pc, bodies_at + (i % BODIES) * BODY_LEN));
    }
    p.push(ret(KILL));
    for b in 0..BODIES {
        p.push(ld(NR));
        let pc = p.len();
        p.push(jump(JEQ_K, b as u32, pc, pc + 4, pc + 1));
        p.push(ld(ARCH));
        let pc = p.len();
        p.push(jump(JGE_K, arch_const(n / 2), pc, pc + 1, pc + 2));
        p.push(ret(ERRNO_1));
        p.push(ret(ALLOW));
    }
    p
}

fn keyed_tables(n: usize) -> Vec<Insn> {
    // `arches` arch keys, each `jeq #arch, 0, 1; ja table`; each table
    // `ld nr` and `per` keys `jeq #nr, 0, 1; ret action`, then `ret KILL`.
    let arches = (1..).find(|a: &usize| a * a >= n).unwrap_or(1).max(1);
    let per = n.div_ceil(arches).max(1);
    let table_len = 1 + 2 * per + 1;
    let tables_at = 1 + 2 * arches + 1;
    let mut p = Vec::with_capacity(tables_at + arches * table_len + 1);
    p.push(ld(ARCH));
    for a in 0..arches {
        let pc = p.len();
        p.push(jump(JEQ_K, 0xc000_0000 | a as u32, pc, pc + 1, pc + 2));
        let pc = p.len();
        p.push(ja(pc, tables_at + a * table_len));
    }
    p.push(ret(ALLOW));
    for a in 0..arches {
        p.push(ld(NR));
        for j in 0..per {
            let pc = p.len();
            p.push(jump(JEQ_K, j as u32, pc, pc + 1, pc + 2));
            p.push(ret(0x0005_0000 | (((a * per + j) as u32) & 0xfff)));
        }
        p.push(ret(KILL));
    }
    p
}

fn nr_prefix_unsettled(n: usize) -> Vec<Insn> {
    const TAIL_TESTS: usize = 20;
    // ld nr; n tests; the tail; add; jge; ret ERRNO; ret ALLOW.
    let allow = 1 + n + 3 * TAIL_TESTS + 3;
    let mut p = Vec::with_capacity(allow + 1);
    p.push(ld(NR));
    for i in 0..n {
        let pc = p.len();
        // A hit jumps to the shared `ret ALLOW` at the end when it is in
        // reach; otherwise the test falls through either way.
        let t = if allow - pc - 1 <= 255 { allow } else { pc + 1 };
        p.push(jump(JEQ_K, 1000 + i as u32, pc, t, pc + 1));
    }
    // Tests the data flow cannot settle.
    undecided(&mut p, TAIL_TESTS);
    p.push(Insn::stmt(ADD_K, 1));
    let pc = p.len();
    p.push(jump(JGE_K, 0x8000_0000, pc, pc + 1, pc + 2));
    p.push(ret(ERRNO_1));
    p.push(ret(ALLOW));
    debug_assert_eq!(p.len(), allow + 1);
    p
}

fn diamonds(n: usize) -> Vec<Insn> {
    let mut p = Vec::with_capacity(6 * n + 4);
    for i in 0..n {
        let m = (i % 16) as u32;
        p.push(ld(arg_word(i)));
        let pc = p.len();
        p.push(jump(JSET_K, 1 << (i % 32), pc, pc + 1, pc + 3));
        p.push(Insn::stmt(BPF_ST, m));
        p.push(Insn::stmt(BPF_JMP, 1));
        p.push(Insn::stmt(BPF_ST, m));
        p.push(Insn::stmt(LD_MEM, m));
    }
    p.push(ld(NR));
    let pc = p.len();
    p.push(jump(JEQ_K, 1, pc, pc + 1, pc + 2));
    p.push(ret(ALLOW));
    p.push(ret(KILL));
    p
}

fn doubling_alu(n: usize) -> Vec<Insn> {
    // ld arch; jeq x86_64 or KILL; ld args[0]; per doubling `tax; add x;
    // jeq #i, 0, 1; ret ERRNO`; ret ALLOW.
    let mut p = Vec::with_capacity(4 * n + 5);
    p.push(ld(ARCH));
    p.push(Insn::jump(JEQ_K, cbpf::uapi::audit::AUDIT_ARCH_X86_64, 1, 0));
    p.push(ret(KILL));
    p.push(ld(ARGS));
    for i in 0..n {
        p.push(Insn::stmt(BPF_MISC | BPF_TAX, 0));
        p.push(Insn::stmt(BPF_ALU | BPF_ADD | BPF_X, 0));
        p.push(Insn::jump(JEQ_K, i as u32, 0, 1));
        p.push(ret(ERRNO_1));
    }
    p.push(ret(ALLOW));
    p
}

/// `ld nr`; `n` tests of `code` against `k(i, n)`, each `jt 1, jf 0`: true
/// skips the next test, false goes to it; the last one's outcomes are
/// `ret ERRNO` and `ret ALLOW`, so the action depends on the parity of the
/// tests skipped.
fn ladder(code: u16, n: usize, k: impl Fn(usize, usize) -> u32) -> Vec<Insn> {
    let mut p = Vec::with_capacity(n + 3);
    p.push(ld(NR));
    for i in 0..n {
        p.push(Insn::jump(code, k(i, n), 1, 0));
    }
    p.push(ret(ALLOW));
    p.push(ret(ERRNO_1));
    p
}

fn distinct_errnos(n: usize) -> Vec<Insn> {
    let mut p = Vec::with_capacity(2 * n + 2);
    p.push(ld(NR));
    for i in 0..n {
        p.push(Insn::jump(JEQ_K, 2 * i as u32, 0, 1));
        p.push(ret(SECCOMP_RET_ERRNO | (i as u32 & 0xffff)));
    }
    p.push(ret(ALLOW));
    p
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

    use super::*;

    #[test]
    fn every_shape_validates_at_every_size() {
        for n in [1, 2, 7, 28, 130, 230, 255, 256, 300, 580, 1000, 1601, 1900, 2000, 4002, 4096, 10_000] {
            for s in Shape::all(n) {
                let p = s.build();
                assert!(p.len() <= BPF_MAXINSNS, "{}: {} instructions", s.name(), p.len());
                if let Err(e) = cbpf::validate(&p, cbpf::Mode::Seccomp) {
                    panic!("{} does not validate: {e}", s.name());
                }
            }
        }
    }

    #[test]
    fn large_shapes_are_large() {
        assert!(Shape::UndecidedChain(2000).build().len() > 4000);
        assert!(Shape::UndecidedChain(28).build().len() < 100);
        assert!(Shape::ManyArches(1900).build().len() > 3800);
        assert!(Shape::NrPrefixUnsettled(3900).build().len() > 3900);
        assert!(Shape::KeyedTables(1900).build().len() > 3800);
        assert!(Shape::DoublingAlu(4096).build().len() > 4000);
        assert_eq!(Shape::JeqLadder(4096).build().len(), 4096);
        assert_eq!(Shape::JgtLadder(4096).build().len(), 4096);
    }
}
