//! A dedicated executor for converted seccomp filters.
//!
//! `bpf_convert_filter()` turns a seccomp filter into eBPF drawn from a
//! small closed set of opcodes (SPEC §4.10): ALU32 K/X, `MOV32` K/X,
//! `MOV64` X, `LDX W` from the context (`r6`) and the stack (`r10`),
//! `STX W` to the stack, `JA`, `JEQ/JNE/JGT/JGE/JLT/JLE/JSET` K and X,
//! `EXIT`, on `r0` (A), `r2` (TMP), `r7` (X), with `r6 = r1` the only use of
//! `r1`. `compile` recognises programs of that shape at load and resolves
//! everything the general interpreter checks at run time:
//!
//! - A, TMP and X are plain locals (64-bit: `MOV64 X` copies 64 bits, jump
//!   compares are 64-bit against the sign-extended `imm`, ALU32 results are
//!   zero-extended), so no register file and no region tables exist;
//! - context loads are words of the 64-byte `struct seccomp_data` (offsets
//!   `0..=60`, 4-aligned, proved at load), read straight from the array;
//! - the stack is a local `[u32; 16]` (`fp-64..=fp-4`, 4-aligned, proved at
//!   load); every stack read is proved at load to follow a write of the same
//!   slot on every path (the kernel's `check_load_and_stores()` guarantees
//!   it for converted cBPF), so the local never exposes its initial zeros;
//! - every jump goes forward and the last instruction is `exit`, so a run
//!   executes each instruction at most once and cannot fall off the end: no
//!   step budget (the `Vm` uses this executor only when its budget is at
//!   least the program length, so a budget can never be exceeded here);
//! - every context load is proved at load to follow `r6 = r1` on every path,
//!   so `r6` is always the context pointer where it is used and `r6 = r1`
//!   itself has nothing left to do at run time.
//!
//! Every value a register of the subset can hold is below 2^32 (loads
//! and `MOV32 K` are 32-bit, ALU32 zero-extends, `MOV64 X` copies such a
//! value), so each compare of r0 with a constant (`if r0 <op> K`, or
//! `w2 = K; if r0 <op> r2`) is a test on a `u32`.
//!
//! Superinstructions execute every covered instruction's semantics in
//! program order. The main one is the compare chain (built on the chain
//! core, crate `chain`, which the classic interpreter `cbpf::interp` uses
//! too; `chain_listing` prints them): from a compare, follow the side
//! that reaches another compare (directly, past `ja`s, or, when r0 is known
//! to hold context word k, through a reload of word k, which changes
//! nothing: libseccomp's rule ladders); every other outcome becomes an exit
//! test `(x & mask) - lo <= span`, a uniform form for every condition. A
//! run scans the tests in blocks, all of a block at once with vector
//! operations and one branch per block (the tests have no side effects, so
//! evaluating a few past the first hit changes nothing), and goes where the
//! first hit in program order leaves to: a whole ladder or `==` stretch in
//! one dispatch. Chains are entered at every compare they run through (or,
//! for ladders, at every load of the word), so jumps into their middle
//! behave as before. The side followed is the fall-through, except where it
//! is a detour that rejoins the taken side (the converter's `jge` pairs).
//!
//! Jumps are threaded past what a run already knows ([`chain::known`]): a
//! jump to a reload of a context word that every path there has settled
//! (OpenSSH's `ld [0]; jeq #futex` after each missed argument check) goes
//! on past the reload and the compares it settles. Chain exits carry the
//! instructions that way jumps over, in both runs; plain and fused jumps
//! are threaded only in the ops of uncounted runs (`uncounted_ops`), the
//! counted ones keep the jumps as written.
//!
//! Binary-search trees (libseccomp's optimised filters) are linked chains
//! (as the classic interpreter's range-chain links): a chain that
//! starts at a tree node (a compare whose both sides go on to compares)
//! and holds only range tests (full mask or always hit: `x - lo <= span`,
//! no `&`) is linked to, so every chain exit that lands on its entry
//! (directly, or on a reload of the word it is a ladder on) carries a link
//! instead of a pc: the run goes on scanning there, one test at a time
//! (a tree walk mostly leaves a chain at its first test), reloading the
//! word if the link says so, without going back to the dispatcher. A whole
//! tree path (architecture check, the tree, the leaf) is then one
//! dispatch, and a path down the fall-through sides is one scan. Links
//! only go forward, so following them ends; the first hit of each chain
//! in program order decides, and a taken link is a real branch. Programs
//! with links run a dispatch loop of their own, in which every chain op is
//! a linked-chain op, so the loop keeps no entry records in registers; a
//! chain with a masked test among its first tests (libseccomp's `jset` on
//! the x32 bit, an argument's flag mask) is scanned with its masks
//! (`Kind::MaskedLinked`; links only ever go to range chains), in a
//! loop of its own so that programs without one keep theirs. (Measured:
//! Chromium's policy, one `jset` in its head, left unlinked for it, went
//! back to the dispatcher at every tree node, a chain of dependent loads
//! per level, exit to pc to op to entry block, and took twice the time
//! of its linked run with 10% fewer instructions.) Other programs run the
//! loop without links. Chains of a single compare
//! and tree nodes without links keep their plain ops, which cost less
//! than a scan when the chain is left at its first test.
//!
//! A chain that ends in a long run of equalities (an allow-list,
//! up to four other tests before it) runs as a lookup table indexed by r0
//! instead, whatever op scanned it (but one entering past the first test
//! of a constant that repeats) ([`Kind::EqSet`]; the tables are
//! `chain::EqSets`, shared with the classic interpreter): one load where
//! the scan reads every block before the hit.
//!
//! A compare tree (a region of compares of r0 with constants, through
//! `ja`, that branches: libseccomp's `--opt 2` trees), where the measured
//! `chain::Policy` of the classic interpreter says it pays, is one op at
//! its root instead ([`Kind::Tree`], module `trees`, `chain::RangeTrees`):
//! a branchless binary search in a sorted table of the region's cuts finds
//! where the walk leaves to, and the walk's jumped-over count (stored per
//! interval; runs that do not count search a table with the intervals that
//! leave to the same pc merged). Chain exits that land on a tree's root
//! leave to it rather than link to its chain. A tree of many intervals
//! looks small values (system call numbers) up directly, one load instead
//! of the search; its op's index says so (`trees::DIRECT`), so that the
//! other trees' runs skip that check.
//!
//! A 32-bit argument ladder (Chromium's check of an argument's two words
//! before each of several `==`: `chain::ladder`) is one op at its first
//! round's load ([`Kind::Ladder`], module `ladders`): the check once, then
//! the keys scanned; a counting run adds the instructions the rounds it
//! ran did not execute. Chains stop at a ladder's start and leave to it.
//!
//! Besides chains: a context load fused
//! with the compare after it (`w2 = K; if r0 <op> r2` or `if r0 <op> K`),
//! `w2 = K; if r0 <op> r2`, `w0 = K; exit` and the converter's prologue. A
//! program that opens with the prologue starts at the instruction after it:
//! its effects (A = X = 0, `r6` = context) are the executor's initial
//! state.
//!
//! Fixed cost per run is kept small: the dispatch loop is a function of
//! its own (chosen at load, with or without a local stack array depending
//! on whether the program touches the stack) returning `(r0, executed)` in
//! registers, and each chain entry keeps its first four tests and their
//! exits in one record (one bounds check, one vector compare). Taken jumps
//! stay real branches. One write is elided: the `w2 = K` of a compare in a
//! chain, and only where a load-time liveness pass proves `r2` dead at both
//! successors of the compare (converted code always rewrites TMP before
//! reading it): a dead register's value cannot reach `r0`, the only
//! register a run returns.
//!
//! Executed-instruction counts stay exact (`Vm::executed`): with forward
//! jumps only, a run executes `exit_pc + 1` minus the instructions every
//! taken jump skipped over; each chain exit carries the count skipped from
//! the start of its chain, and each entry the count up to itself (a link
//! carries its exit's count less that of the entry it links to).

mod chains;
mod compile;
mod ladders;
mod ops;
mod run;
mod subset;
#[cfg(test)]
mod tests;
mod trees;

pub(crate) use subset::Subset;

use chains::{Chains, EntryBlock};
use ops::{Kind, SOp};

/// A program compiled for the seccomp executor.
#[derive(Debug, Clone)]
pub(crate) struct SeccompProg {
    ops: Box<[SOp]>,
    /// `ops` with their jumps threaded past reloads of known words
    /// ([`chain::known`]), for runs that do not count executed
    /// instructions (module docs).
    uncounted_ops: Box<[SOp]>,
    /// Chain entries ([`Kind::Chain`], [`Kind::LdChain`]), by `SOp::target`.
    entries: Box<[EntryBlock]>,
    chains: ChainTables,
    /// `run_with` for this program's stack use, links and masked links,
    /// chosen at load: counting
    /// executed instructions, and not (or, for a program whose first op
    /// mostly ends the run, `run_entry`, which goes on in
    /// `resume_uncounted` when it does not).
    runner: Runner,
    runner_uncounted: Runner,
    /// The `run_from` of the program: its uncounted loop from a given
    /// state.
    resume_uncounted: Resume,
    /// Which function `runner_uncounted` is, for the listing.
    start_in: run::Start,
    /// First pc to dispatch: 3 when the program opens with the converter's
    /// prologue (`w0 ^= w0; w7 ^= w7; r6 = r1`), whose effects are the
    /// executor's initial state (A = X = 0, r6 resolved at load), else 0.
    start: u32,
}

/// A run of a [`SeccompProg`] on the data: `(r0, executed)`, or `(pc, 0)`
/// off the end.
type Runner = fn(&SeccompProg, &[u8; 64]) -> (u64, u64);
/// The same from pc `pc` with r0 = `a` and TMP = `t`, uncounted.
type Resume = fn(&SeccompProg, &[u8; 64], usize, u64, u64) -> (u64, u64);

/// The chain table, the lookup tables of its long equality chains
/// ([`Kind::EqSet`]) and the compare trees' tables ([`Kind::Tree`]),
/// together: the run loop keeps one pointer for all (`table` first, at the
/// same address).
#[derive(Debug, Clone)]
#[repr(C)]
struct ChainTables {
    table: Chains,
    eq_sets: chain::EqSets,
    /// Breakpoint tables of the compare trees ([`Kind::Tree`]).
    trees: trees::Trees,
    /// The 32-bit argument ladders ([`Kind::Ladder`]).
    ladders: chain::ladder::Ladders<chains::ChainExit>,
}

impl SeccompProg {
    /// The compare chains the executor runs, for tests and debugging: where
    /// an uncounted run starts ([`run::Start`]), each op that is a chain
    /// superinstruction (`pc: op`; `entry` ops scan
    /// their first tests from a record of their own, `linked` ops scan the
    /// table from a test), then every exit test of the chain table
    /// (`index: test -> where`; see `chain::Table::listing`).
    pub(crate) fn chain_listing(&self) -> String {
        let start = match self.start_in {
            run::Start::First => "first op outside the loop",
            run::Start::FirstTwo => "first op and its tree outside the loop",
            run::Start::Constant => "its ret outside the loop",
            run::Start::Loop => "the loop",
        };
        let mut out = format!("start (uncounted): {start}\nops:\n");
        for (pc, o) in self.ops.iter().enumerate() {
            let entry = || self.entries.get(o.target as usize).map_or((u32::MAX, 0), |e| (e.from, e.skip_base));
            let line = match o.kind {
                Kind::Chain => format!("entry @{} skip {}", entry().0, entry().1),
                Kind::LdChain => format!("w0 = word {}; entry @{} skip {}", o.aux, entry().0, entry().1),
                Kind::Linked => format!("linked @{} skip {}", o.target, o.imm),
                Kind::LdLinked => format!("w0 = word {}; linked @{} skip {}", o.aux, o.target, o.imm),
                Kind::MaskedLinked => format!("masked linked @{} skip {}", o.target, o.imm),
                Kind::LdMaskedLinked => format!("w0 = word {}; masked linked @{} skip {}", o.aux, o.target, o.imm),
                Kind::EqSet => format!("eq set #{} @{} skip {}", o.imm >> 32, o.target, o.imm as u32),
                Kind::LdEqSet => {
                    format!("w0 = word {}; eq set #{} @{} skip {}", o.aux, o.imm >> 32, o.target, o.imm as u32)
                }
                Kind::Tree => format!("tree #{}", o.target & !trees::DIRECT),
                Kind::LdTree => format!("w0 = word {}; tree #{}", o.aux, o.target & !trees::DIRECT),
                Kind::Ladder => format!("ladder #{} over words {}, {}", o.target, o.aux, o.src),
                Kind::LdMovJneTree => format!(
                    "w0 = word {}; if r0 != {:#x} goto pc {} else w0 = word {}; tree #{}",
                    o.aux,
                    o.imm as u32,
                    o.target,
                    o.src,
                    (o.imm >> 32) as u32 & !trees::DIRECT
                ),
                _ => continue,
            };
            out.push_str(&format!("{pc:4}: {line}\n"));
        }
        out.push_str("tests:\n");
        out.push_str(&self.chains.table.to_string());
        if !self.chains.trees.is_empty() {
            out.push_str("trees:\n");
            out.push_str(&self.chains.trees.listing());
        }
        if !self.chains.ladders.is_empty() {
            out.push_str("ladders:\n");
            // Printed as a chain test's exit is.
            let name = |exit| {
                chain::Record::leaving(&chains::LinkedTest { exit, lo: 0, span: 0, mask: 0, _pad: 0 }).to_string()
            };
            out.push_str(&self.chains.ladders.listing(name));
        }
        out
    }
}
