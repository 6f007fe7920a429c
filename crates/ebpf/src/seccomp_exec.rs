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
//! a linked-chain op (links are made only when every chain op's first
//! tests are ranges), so the loop keeps no entry records in registers;
//! other programs run the loop without links. Chains of a single compare
//! and tree nodes without links keep their plain ops, which cost less
//! than a scan when the chain is left at its first test.
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

use chain::{Builder, Compare, Cond, ExitTest, Leaving, Link, Record, Rules, Table, BLOCK};

use crate::filter_h::{BPF_REG_A, BPF_REG_ARG1, BPF_REG_CTX, BPF_REG_FP, BPF_REG_TMP, BPF_REG_X};
use crate::insn::{Insn, Pc};
use crate::interp::ExecError;
use crate::op::{AluOp, JmpCond, Op, Operand, Size, Width};

/// Register codes of the subset (`SOp::dst` / `SOp::src`): A, TMP, X.
const RA: u8 = 0;
const RT: u8 = 1;
const RX: u8 = 2;
/// `SOp::src` of a K-form compare: the operand is `imm`.
const RK: u8 = 3;

/// Conditions (`SOp::aux` of the generic compare).
const EQ: u8 = 0;
const NE: u8 = 1;
const GT: u8 = 2;
const GE: u8 = 3;
const LT: u8 = 4;
const LE: u8 = 5;
const SET: u8 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    /// `r6 = r1`: resolved at load (see the module docs).
    CtxPtr,
    /// `w0 ^= w0; w7 ^= w7; r6 = r1`.
    Prologue,
    MovK,
    Mov32,
    Mov64,
    /// ALU32, K form: `aux` = operation (index in [`AluOp::ALL`]).
    AluK,
    /// ALU32, X form.
    AluX,
    /// `wD = -wD`.
    Neg,
    /// `dst = ctx word aux`.
    LdCtx,
    /// `dst = stack slot aux`.
    LdStack,
    /// `stack slot aux = src`.
    StStack,
    Ja,
    /// `if r0 <cond> imm goto target`, one kind per condition.
    JeqK,
    JneK,
    JgtK,
    JgeK,
    JltK,
    JleK,
    JsetK,
    /// Any other compare: `aux` = condition, `src` = register or [`RK`].
    Jcc,
    Exit,
    /// `w0 = imm; exit`.
    RetImm,
    /// A compare chain on r0 ([`Chains`]) from entry `target` (an
    /// [`EntryBlock`]; while compiling: test `target`, skip count `imm`).
    Chain,
    /// `w0 = ctx word aux`, then the chain of entry `target` (a ladder entry).
    LdChain,
    /// A compare chain on r0 from test `target` of [`Table::exits`] (skip
    /// count `imm` at the op), scanned by [`Scans::linked_exit`], its
    /// links followed: in programs with links, every chain op, and tree
    /// nodes and short chains whose chain links on.
    Linked,
    /// `w0 = ctx word aux`, then [`Kind::Linked`].
    LdLinked,
    /// `w0 = ctx word aux; w2 = imm; if r0 <cond> r2 goto target`.
    LdMovJeq,
    LdMovJne,
    LdMovJgt,
    LdMovJge,
    LdMovJlt,
    LdMovJle,
    LdMovJset,
    /// `w0 = ctx word aux; if r0 <cond> imm goto target`.
    LdJeq,
    LdJne,
    LdJgt,
    LdJge,
    LdJlt,
    LdJle,
    LdJset,
    /// `w2 = imm; if r0 <cond> r2 goto target`.
    MovJeq,
    MovJne,
    MovJgt,
    MovJge,
    MovJlt,
    MovJle,
    MovJset,
}

/// One compiled instruction (16 bytes): `aux` is the ALU operation, the
/// context word, the stack slot or the condition; `target` the jump target
/// or first eq entry; `imm` the (zero- or sign-extended) immediate or end
/// eq entry.
#[derive(Debug, Clone, Copy)]
struct SOp {
    kind: Kind,
    dst: u8,
    src: u8,
    aux: u8,
    target: u32,
    imm: u64,
}

/// Tests of a linked chain scanned one at a time before the blocked scan
/// ([`Scans::linked_exit`]); a chain is linked to if these tests from its
/// entry are ranges and one of them is a tree node's.
const WINDOW: usize = 8;

/// Tests in the first block of a scan (one 4-lane vector): short chains
/// and tree nodes mostly end in it.
const FIRST_BLOCK: usize = 4;

/// Chain entries with fewer tests left than this (one real compare and the
/// final test) keep their per-instruction ops: cheaper than a block scan.
/// So do entries at a tree node (a compare whose both sides go on to
/// compares, not a detour): a tree walk leaves most chains at their first
/// test, where the block scan's fixed cost is more than a plain compare's
/// (measured: `allow306_opt2` 15% slower with them). Either becomes a
/// linked-chain op ([`Kind::Linked`]) when its chain links on.
const MIN_CHAIN: usize = 3;

/// The chain core's condition of a compare (`SOp::aux`).
fn cond_of(cond: u8) -> Cond {
    match cond {
        EQ => Cond::Eq,
        NE => Cond::Ne,
        GT => Cond::Gt,
        GE => Cond::Ge,
        LT => Cond::Lt,
        LE => Cond::Le,
        _ => Cond::Set,
    }
}

/// The exit test equivalent to "`x <cond> v` is `outcome`" (the 64-bit
/// compare of the jump, `v` the sign-extended `imm` or a zero-extended
/// `w2 = K`) for every `x` below 2^32, the only values a register of the
/// subset can hold (module docs); `None` when it never happens
/// ([`ExitTest::of_wide`]).
#[cfg(test)]
fn exit_test(cond: u8, v: u64, outcome: bool) -> Option<ExitTest> {
    ExitTest::of_wide(cond_of(cond), v, outcome)
}

/// Where a chain is left at one of its tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ChainExit {
    /// The pc execution goes on at (past any `ja`).
    target: u32,
    /// Instructions jumped over from the start of the chain's walk to
    /// `target`; an entry's op holds the count up to the entry, so a run
    /// adds the difference to its skip count (module docs).
    skip: u32,
    /// What the exit does besides going to `target`: `K` (a `u32`) when
    /// `target` is `w0 = K; exit` (the run ends there without dispatching
    /// it); [`NOT_RET`] when execution goes on at pc `target`; or a link
    /// to another chain ([`SAME`], [`RELOAD`]` + k`; [`compile`] links exits
    /// whose target is the entry of a chain from a tree node): the scan
    /// goes on at test `target` of [`Table::exits`] with r0 unchanged or
    /// after reloading context word `k` (the entry is a load of that
    /// word). Links only go forward in the program, so following them ends.
    /// (One field for all three: an exit is two registers, and the
    /// dispatch loop of a program without links checks only `NOT_RET`.)
    ret: u64,
}

/// [`ChainExit::ret`] of an exit that neither ends the run nor links (above
/// every `K` and every link).
const NOT_RET: u64 = u64::MAX;
/// [`ChainExit::ret`] of a link with r0 unchanged. Links are the values
/// `SAME..=SAME + 16`, above every `K` and below [`NOT_RET`] (all three
/// constants are small negative numbers: one-byte immediates).
const SAME: u64 = u64::MAX - 32;
/// [`ChainExit::ret`]: `RELOAD + k` links after reloading context word
/// `k` (< 16; the low four bits of the value).
const RELOAD: u64 = SAME + 1;

impl ChainExit {
    /// Past every program (a run that gets there reports falling off the
    /// end): what a scan past the arrays returns, never reached.
    const NOWHERE: ChainExit = ChainExit { target: u32::MAX, skip: 0, ret: NOT_RET };

    /// Whether the exit links to another chain.
    #[inline(always)]
    fn links(&self) -> bool {
        self.ret.wrapping_sub(SAME) <= 16
    }
}

/// [`ChainExit::NOWHERE`], for scans that return a reference.
static NOWHERE: ChainExit = ChainExit::NOWHERE;

/// One test of [`Table::exits`] with its exit, for the scalar scan of
/// linked chains (one bounds check per window, one branch per test).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct LinkedTest {
    exit: ChainExit,
    /// The test as a range, `x - lo <= span` (wrapping): linked chains are
    /// made only of tests of that form (full mask, or always hit).
    lo: u32,
    span: u32,
    /// The test's mask (for printing and the masked window scan).
    mask: u32,
    /// Pads the record to 32 bytes (an index is a shift).
    _pad: u32,
}

impl Record for LinkedTest {
    #[inline(always)]
    fn test(&self) -> ExitTest {
        ExitTest { mask: self.mask, lo: self.lo, span: self.span }
    }

    fn leaving(&self) -> Leaving {
        let link = match self.exit.ret {
            NOT_RET => Link::Leave,
            SAME => Link::Same,
            _ if self.exit.links() => Link::Reload((self.exit.ret - RELOAD) as u8),
            k => Link::Return(k),
        };
        Leaving { target: u64::from(self.exit.target), link }
    }
}

/// The exit tests of every compare chain ([`chain::Table`]: parallel
/// arrays, so that a block of tests is a few vector operations, and a
/// [`LinkedTest`] per test with where it leaves to). Every chain ends with
/// a test that always hits, and `BLOCK - 1` such tests pad the arrays, so
/// a block read at any chain position stays inside them and a scan always
/// ends at a hit.
type Chains = Table<LinkedTest>;

/// The scans of [`Chains`] the run loop uses.
trait Scans {
    /// The exit of the first test from `at` on that `x` hits
    /// ([`Table::first_hit_from`]: blocks of [`BLOCK`] tests, each checked
    /// at once, then the first hit of the block with one);
    /// [`ChainExit::NOWHERE`] past the arrays (never from a chain position:
    /// padding). (Not an `Option`: a `ChainExit` comes back in two
    /// registers.)
    fn first_exit_after(&self, x: u32, at: usize) -> ChainExit;

    /// [`Scans::first_exit_after`] by reference, for the end of a window
    /// of [`Scans::linked_exit`].
    fn first_exit_after_ref(&self, x: u32, at: usize) -> &ChainExit;

    /// The exit of the first test from `at` on that `x` hits, for a chain
    /// reached through a link (mostly short: tree nodes and leaves): the
    /// tests of a window of [`WINDOW`] one at a time, one branch each (a
    /// tree walk mostly leaves at the first), then the blocked scan.
    fn linked_exit(&self, x: u32, at: usize) -> &ChainExit;
}

impl Scans for Chains {
    // Not inlined: a long scan costs far more than the call.
    #[inline(never)]
    fn first_exit_after(&self, x: u32, at: usize) -> ChainExit {
        self.first_hit_from(x, at, |t| t.exit, || ChainExit::NOWHERE)
    }

    #[inline(never)]
    fn first_exit_after_ref(&self, x: u32, at: usize) -> &ChainExit {
        self.first_hit_from(x, at, |t| &t.exit, || &NOWHERE)
    }

    #[inline(always)]
    fn linked_exit(&self, x: u32, at: usize) -> &ChainExit {
        self.scan_window::<WINDOW, _>(
            at,
            |t| t.hits_range(x),
            |t| &t.exit,
            || self.first_exit_after_ref(x, at + WINDOW),
        )
    }
}

/// A chain entry: the first [`FIRST_BLOCK`] tests of the chain from the
/// entry, and their exits, in one place (one bounds check, one vector,
/// nearby cache lines); the rest of the chain is scanned in [`Chains`].
#[derive(Debug, Clone, Copy)]
struct EntryBlock {
    mask: [u32; FIRST_BLOCK],
    lo_flipped: [u32; FIRST_BLOCK],
    span_flipped: [i32; FIRST_BLOCK],
    exits: [ChainExit; FIRST_BLOCK],
    /// Index of the first test in [`Chains`].
    from: u32,
    /// The skip count at the entry (see [`ChainExit::skip`]).
    skip_base: u32,
}

impl EntryBlock {
    /// Copies tests `from..from + FIRST_BLOCK` of `chains` (past the end
    /// of the entry's chain: other chains' tests or padding, never reached
    /// because the chain's last test always hits).
    fn new(chains: &Chains, from: usize, skip_base: u32) -> Option<Self> {
        let (mask, lo_flipped, span_flipped) = chains.block::<FIRST_BLOCK>(from)?;
        Some(EntryBlock {
            mask: *mask,
            lo_flipped: *lo_flipped,
            span_flipped: *span_flipped,
            exits: std::array::from_fn(|j| chains.exits.get(from + j).map_or(ChainExit::NOWHERE, |t| t.exit)),
            from: u32::try_from(from).ok()?,
            skip_base,
        })
    }

    /// The exit of the first test of the chain that `x` hits.
    ///
    /// Tests are evaluated a block at a time, all of a block at once (they
    /// have no side effects, so evaluating a few past the first hit changes
    /// nothing), with one branch per block; the lowest hit of the first
    /// block with a hit is the first hit in program order. The first block
    /// is this one, inline: most chain runs end in it.
    #[inline(always)]
    fn first_exit(&self, x: u32, chains: &Chains) -> ChainExit {
        // Bit j set iff test j hits (this form compiles to one vector
        // compare and a mask move).
        let mut hits = 0u32;
        for j in 0..FIRST_BLOCK {
            // j < FIRST_BLOCK, the length of the arrays.
            #[allow(clippy::indexing_slicing)]
            {
                hits |=
                    u32::from((x & self.mask[j]).wrapping_sub(self.lo_flipped[j]) as i32 > self.span_flipped[j]) << j;
            }
        }
        let hits = !hits & ((1 << FIRST_BLOCK) - 1);
        if hits != 0 {
            // A hit bit is one of the first FIRST_BLOCK (a power of two).
            #[allow(clippy::indexing_slicing)]
            return self.exits[hits.trailing_zeros() as usize & (FIRST_BLOCK - 1)];
        }
        chains.first_exit_after(x, self.from as usize + FIRST_BLOCK)
    }
}

/// A compare of r0 with a constant: `if r0 <cond> K goto target` at
/// `jump_pc`, or `w2 = K; if r0 <cond> r2 goto target` with r2 dead at both
/// successors (the `w2 = K` write is then elided: a dead register's value
/// cannot reach r0, the only register a run returns).
#[derive(Debug, Clone, Copy)]
struct Cmp {
    jump_pc: usize,
    cond: u8,
    value: u64,
    target: usize,
}

/// The load-time facts chain building looks at.
struct Shapes<'a> {
    base: &'a [SOp],
    live_in: &'a [u8],
}

impl Shapes<'_> {
    fn live(&self, pc: usize) -> u8 {
        self.live_in.get(pc).copied().unwrap_or(0)
    }

    /// The compare starting at `pc`, if one does.
    fn cmp(&self, pc: usize) -> Option<Cmp> {
        let o = self.base.get(pc)?;
        if matches!(o.kind, Kind::JeqK | Kind::JneK | Kind::JgtK | Kind::JgeK | Kind::JltK | Kind::JleK | Kind::JsetK) {
            return Some(Cmp { jump_pc: pc, cond: o.aux, value: o.imm, target: o.target as usize });
        }
        let j = self.base.get(pc + 1)?;
        let tmp_dead = self.live(j.target as usize) & bit(RT) == 0 && self.live(pc + 2) & bit(RT) == 0;
        (o.kind == Kind::MovK && o.dst == RT && j.kind == Kind::Jcc && j.dst == RA && j.src == RT && tmp_dead)
            .then_some(Cmp { jump_pc: pc + 1, cond: j.aux, value: o.imm, target: j.target as usize })
    }

    /// Where execution goes on from `pc`: past every `ja` there, with the
    /// instructions those jump over.
    fn resolve(&self, mut pc: usize) -> (usize, u32) {
        let mut skip = 0u32;
        while let Some(o) = self.base.get(pc).filter(|o| o.kind == Kind::Ja) {
            let target = o.target as usize;
            skip = skip.wrapping_add((target - pc - 1) as u32);
            pc = target;
        }
        (pc, skip)
    }
}

/// The converted program as the chain walk ([`chain::walk`]) sees it.
impl chain::Code for Shapes<'_> {
    fn compare(&self, pc: usize) -> Option<Compare> {
        let c = self.cmp(pc)?;
        Some(Compare {
            cond: cond_of(c.cond),
            value: c.value,
            jump_pc: c.jump_pc,
            taken: c.target,
            fall: c.jump_pc + 1,
        })
    }

    fn resolve(&self, pc: usize) -> (usize, u32) {
        Shapes::resolve(self, pc)
    }

    /// A load of context word `word` into r0.
    fn reloads(&self, pc: usize, word: u8) -> bool {
        self.base.get(pc).is_some_and(|o| o.kind == Kind::LdCtx && o.dst == RA && o.aux == word)
    }

    /// `w0 = K; exit`.
    fn ret_k(&self, pc: usize) -> Option<u64> {
        let (o, next) = (self.base.get(pc)?, self.base.get(pc + 1)?);
        (o.kind == Kind::MovK && o.dst == RA && next.kind == Kind::Exit).then_some(o.imm)
    }
}

/// The tests of the chains as they are found ([`chain::Builder`]).
#[derive(Default)]
struct ChainBuilder(Builder);

impl ChainBuilder {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// Appends `test` (nothing if it never hits) leaving to `target`.
    #[cfg(test)]
    fn push(&mut self, test: Option<ExitTest>, target: usize, skip: u32) {
        self.0.push(test, target, skip);
    }

    /// Builds the chain that starts at `entry` with the compare at `first`
    /// ([`chain::walk`]): follows compares along the side that reaches
    /// another compare (through reloads of `word` if r0 is known to hold
    /// that context word; the fall-through, except where it is a detour
    /// that rejoins the taken side: the converter's `jge` pairs), each
    /// other outcome an exit test, until a compare whose sides both leave
    /// or a pc another chain of the same kind already covers (then the
    /// chain leaves to it). Marks the pcs it goes through in `covered`.
    /// Returns its entries: `(pc, first test, skip count at pc, tree
    /// node)`, each pc where the rest of the chain is what execution does
    /// from there: every compare for `word == None`, else `entry` and
    /// every reload.
    fn walk(
        &mut self,
        shapes: &Shapes<'_>,
        covered: &mut [bool],
        entry: usize,
        first: usize,
        word: Option<u8>,
    ) -> Vec<(usize, usize, u64, bool)> {
        let rules = Rules { word, rejoin_detours: true, stop_at_covered: true };
        chain::walk(shapes, &mut self.0, covered, entry, first, rules)
            .into_iter()
            .map(|e| (e.pc, e.first, u64::from(e.skip), e.tree))
            .collect()
    }

    /// Per test: a range (full mask, or always hit), scanned by
    /// [`Scans::linked_exit`] without the mask.
    fn ranges(&self) -> Vec<bool> {
        self.0.tests().iter().map(|p| p.test.range().is_some()).collect()
    }

    /// Per test: leaves to a compare from a tree node (a compare whose
    /// both sides go on to compares).
    fn trees(&self) -> Vec<bool> {
        self.0.tests().iter().map(|p| p.tree).collect()
    }

    /// The finished table, padded (see [`Chains`]).
    fn finish(self) -> Chains {
        self.0.finish(BLOCK.max(WINDOW) - 1, |p| {
            let (lo, span) = p.test.range().unwrap_or((p.test.lo, p.test.span));
            let exit = ChainExit { target: p.target as u32, skip: p.skip, ret: NOT_RET };
            LinkedTest { exit, lo, span, mask: p.test.mask, _pad: 0 }
        })
    }
}

/// A program compiled for the seccomp executor.
#[derive(Debug, Clone)]
pub(crate) struct SeccompProg {
    ops: Box<[SOp]>,
    /// Chain entries ([`Kind::Chain`], [`Kind::LdChain`]), by `SOp::target`.
    entries: Box<[EntryBlock]>,
    chains: Chains,
    /// `run_with` for this program's stack use, chosen at load: counting
    /// executed instructions, and not.
    runner: fn(&SeccompProg, &[u8; 64]) -> (u64, u64),
    runner_uncounted: fn(&SeccompProg, &[u8; 64]) -> (u64, u64),
    /// First pc to dispatch: 3 when the program opens with the converter's
    /// prologue (`w0 ^= w0; w7 ^= w7; r6 = r1`), whose effects are the
    /// executor's initial state (A = X = 0, r6 resolved at load), else 0.
    start: u32,
}

/// The code of a register of the subset (`bpf_convert_filter()`'s A, TMP
/// and X).
fn reg(r: u8) -> Option<u8> {
    match r {
        BPF_REG_A => Some(RA),
        BPF_REG_TMP => Some(RT),
        BPF_REG_X => Some(RX),
        _ => None,
    }
}

fn bit(r: u8) -> u8 {
    1 << r
}

/// Stack slot of `fp + off` (slot k is `fp - 4(k+1)`), if converted code
/// could address it.
fn slot(off: i16) -> Option<u8> {
    (-64..=-4).contains(&off).then_some(())?;
    (off % 4 == 0).then_some((-(off / 4) - 1) as u8)
}

/// Per-instruction facts of the subset, before fusion.
struct Plain {
    op: SOp,
    /// Registers (bit per code) read and written.
    uses: u8,
    defs: u8,
    /// Conditional jump: both successors; `JA`: only the target; `EXIT`: none.
    falls: bool,
    jumps: bool,
}

/// Decodes one instruction of the subset, or `None` if it is outside it.
fn plain(pc: usize, insn: Insn) -> Option<Plain> {
    let mk = |kind, dst, src, aux, target, imm| SOp { kind, dst, src, aux, target, imm };
    let target = |off: i16| -> Option<u32> { (off >= 0).then(|| (pc as i64 + 1 + i64::from(off)) as u32) };
    let p = |op: SOp, uses: u8, defs: u8| Plain { op, uses, defs, falls: true, jumps: false };
    // `ld_imm64` is outside the subset: no second slot to read.
    let op = Op::decode(insn, None).ok()?;
    Some(match op {
        // ALU32 but ARSH and the signed forms; no junk in `off`.
        Op::Alu { width: Width::W32, op: alu, dst, src } => {
            if insn.off != 0 || matches!(alu, AluOp::Arsh | AluOp::SDiv | AluOp::SMod) {
                return None;
            }
            let dst = reg(dst)?;
            match (alu, src) {
                (AluOp::Mov, Operand::X(src)) => {
                    let src = reg(src)?;
                    p(mk(Kind::Mov32, dst, src, 0, 0, 0), bit(src), bit(dst))
                }
                (AluOp::Mov, Operand::K(imm)) => p(mk(Kind::MovK, dst, 0, 0, 0, u64::from(imm as u32)), 0, bit(dst)),
                (_, Operand::X(src)) => {
                    let src = reg(src)?;
                    p(mk(Kind::AluX, dst, src, alu_code(alu), 0, 0), bit(src) | bit(dst), bit(dst))
                }
                (_, Operand::K(imm)) => {
                    p(mk(Kind::AluK, dst, 0, alu_code(alu), 0, u64::from(imm as u32)), bit(dst), bit(dst))
                }
            }
        }
        Op::Neg { width: Width::W32, dst } if insn.off == 0 => {
            let dst = reg(dst)?;
            p(mk(Kind::Neg, dst, 0, 0, 0, 0), bit(dst), bit(dst))
        }
        // MOV64 X: among A/TMP/X, or `r6 = r1`.
        Op::Alu { width: Width::W64, op: AluOp::Mov, dst, src: Operand::X(src) } => {
            if dst == BPF_REG_CTX && src == BPF_REG_ARG1 {
                p(mk(Kind::CtxPtr, 0, 0, 0, 0, 0), 0, 0)
            } else {
                let (dst, src) = (reg(dst)?, reg(src)?);
                p(mk(Kind::Mov64, dst, src, 0, 0, 0), bit(src), bit(dst))
            }
        }
        Op::Ldx { size: Size::W, dst, src, off } => {
            let dst = reg(dst)?;
            match src {
                BPF_REG_CTX if (0..=60).contains(&off) && off % 4 == 0 => {
                    p(mk(Kind::LdCtx, dst, 0, (off / 4) as u8, 0, 0), 0, bit(dst))
                }
                BPF_REG_FP => p(mk(Kind::LdStack, dst, 0, slot(off)?, 0, 0), 0, bit(dst)),
                _ => return None,
            }
        }
        Op::Stx { size: Size::W, dst: BPF_REG_FP, src, off } => {
            let src = reg(src)?;
            p(mk(Kind::StStack, 0, src, slot(off)?, 0, 0), bit(src), 0)
        }
        Op::Ja { off } => {
            Plain { op: mk(Kind::Ja, 0, 0, 0, target(off)?, 0), uses: 0, defs: 0, falls: false, jumps: true }
        }
        Op::Exit => Plain { op: mk(Kind::Exit, 0, 0, 0, 0, 0), uses: bit(RA), defs: 0, falls: false, jumps: false },
        // The unsigned conditions of class JMP, K and X.
        Op::Jmp { width: Width::W64, cond, dst, src, off } => {
            let cond = match cond {
                JmpCond::Eq => EQ,
                JmpCond::Gt => GT,
                JmpCond::Ge => GE,
                JmpCond::Set => SET,
                JmpCond::Ne => NE,
                JmpCond::Lt => LT,
                JmpCond::Le => LE,
                _ => return None,
            };
            let dst = reg(dst)?;
            let t = target(off)?;
            let (src, imm, uses) = match src {
                Operand::X(src) => {
                    let src = reg(src)?;
                    (src, 0, bit(src) | bit(dst))
                }
                Operand::K(imm) => (RK, imm as i64 as u64, bit(dst)),
            };
            let kind = match (dst, src, cond) {
                (RA, RK, EQ) => Kind::JeqK,
                (RA, RK, NE) => Kind::JneK,
                (RA, RK, GT) => Kind::JgtK,
                (RA, RK, GE) => Kind::JgeK,
                (RA, RK, LT) => Kind::JltK,
                (RA, RK, LE) => Kind::JleK,
                (RA, RK, SET) => Kind::JsetK,
                _ => Kind::Jcc,
            };
            Plain { op: mk(kind, dst, src, cond, t, imm), uses, defs: 0, falls: true, jumps: true }
        }
        _ => return None,
    })
}

/// `SOp::aux` of an ALU32 op: its index in [`AluOp::ALL`].
fn alu_code(alu: AluOp) -> u8 {
    AluOp::ALL.iter().position(|&o| o == alu).unwrap_or(0) as u8
}

/// A chain entry (a pc where the rest of a chain is what execution does),
/// as links see it.
#[derive(Debug, Clone, Copy)]
struct EntryAt {
    /// The chain's test at the entry (an index into [`Table::exits`]).
    from: usize,
    /// The skip count at the entry (see [`ChainExit::skip`]).
    skip_base: u64,
    /// The [`ChainExit::ret`] of a link to it: [`SAME`], or [`RELOAD`]
    /// `+ k` for a load of context word `k` (a ladder entry).
    link: u64,
    /// Tests from `from` to the chain's end.
    len: usize,
}

/// Compiles `insns` (already accepted by `Program::load`) for the seccomp
/// executor, or `None` if the program is outside the subset the module docs
/// describe (the general interpreter runs it then).
pub(crate) fn compile(insns: &[Insn]) -> Option<SeccompProg> {
    let n = insns.len();
    if n == 0 || n > u32::MAX as usize / 2 || Op::decode(*insns.last()?, None) != Ok(Op::Exit) {
        return None;
    }
    let plains: Vec<Plain> = insns.iter().enumerate().map(|(pc, i)| plain(pc, *i)).collect::<Option<_>>()?;
    // Forward dataflow (all jumps go forward, so pc order is a topological
    // order): is `r6 = r1` done, and which stack slots are written, on every
    // path to each pc.
    let mut reached = vec![false; n];
    let mut ctx_ready = vec![true; n];
    let mut written = vec![u16::MAX; n];
    if let (Some(r), Some(c), Some(w)) = (reached.first_mut(), ctx_ready.first_mut(), written.first_mut()) {
        (*r, *c, *w) = (true, false, 0);
    }
    for (pc, p) in plains.iter().enumerate() {
        if !reached.get(pc).copied().unwrap_or(false) {
            continue;
        }
        let (mut ready, mut w) = (ctx_ready.get(pc).copied()?, written.get(pc).copied()?);
        match p.op.kind {
            Kind::CtxPtr => ready = true,
            Kind::LdCtx if !ready => return None,
            Kind::LdStack if w & (1 << p.op.aux) == 0 => return None,
            Kind::StStack => w |= 1 << p.op.aux,
            _ => {}
        }
        let succs = [p.falls.then_some(pc + 1), p.jumps.then_some(p.op.target as usize)];
        for s in succs.into_iter().flatten() {
            // In range: the last insn is exit; targets were checked by load.
            *reached.get_mut(s)? = true;
            *ctx_ready.get_mut(s)? &= ready;
            *written.get_mut(s)? &= w;
        }
    }
    // Backward liveness of A/TMP/X (reverse pc order is exact for forward jumps).
    let mut live_in = vec![0u8; n + 1];
    for pc in (0..n).rev() {
        let p = plains.get(pc)?;
        let mut out = 0;
        if p.falls {
            out |= live_in.get(pc + 1).copied()?;
        }
        if p.jumps {
            out |= live_in.get(p.op.target as usize).copied()?;
        }
        *live_in.get_mut(pc)? = p.uses | (out & !p.defs);
    }
    let base: Vec<SOp> = plains.iter().map(|p| p.op).collect();
    let mut ops = base.clone();
    let shapes = Shapes { base: &base, live_in: &live_in };
    let mut built = ChainBuilder::default();
    // Chains on an unknown r0, entered at each compare they run through.
    let mut covered = vec![false; n + 1];
    // Per pc that is a chain entry: where its chain is (for links).
    let mut entry_at: Vec<Option<EntryAt>> = vec![None; n];
    for pc in 0..n {
        if covered.get(pc).copied().unwrap_or(true) || shapes.cmp(pc).is_none() {
            continue;
        }
        let walked = built.walk(&shapes, &mut covered, pc, pc, None);
        for (at, from, skip_base, tree) in walked {
            if let Some(e) = entry_at.get_mut(at) {
                *e = Some(EntryAt { from, skip_base, link: SAME, len: built.len() - from });
            }
            if built.len() - from >= MIN_CHAIN && !tree {
                if let Some(o) = ops.get_mut(at) {
                    *o = SOp { kind: Kind::Chain, dst: RA, src: RK, aux: 0, target: from as u32, imm: skip_base };
                }
            }
        }
    }
    // Ladders: chains on a context word, entered at each load of it.
    let mut covered = vec![false; n + 1];
    for pc in 0..n {
        let Some(&l) = base.get(pc) else { continue };
        if covered.get(pc).copied().unwrap_or(true)
            || l.kind != Kind::LdCtx
            || l.dst != RA
            || shapes.cmp(pc + 1).is_none()
        {
            continue;
        }
        let walked = built.walk(&shapes, &mut covered, pc, pc + 1, Some(l.aux));
        for (at, from, skip_base, tree) in walked {
            if let Some(e) = entry_at.get_mut(at) {
                let link = RELOAD + u64::from(l.aux & 15);
                *e = Some(EntryAt { from, skip_base, link, len: built.len() - from });
            }
            if built.len() - from >= MIN_CHAIN && !tree {
                if let (Some(o), Some(load)) = (ops.get_mut(at), base.get(at)) {
                    *o = SOp {
                        kind: Kind::LdChain,
                        dst: RA,
                        src: RK,
                        aux: load.aux,
                        target: from as u32,
                        imm: skip_base,
                    };
                }
            }
        }
    }
    for pc in 0..n {
        let (Some(&o), Some(&next)) = (base.get(pc), base.get(pc + 1)) else { continue };
        let Some(slot) = ops.get_mut(pc) else { continue };
        if slot.kind != o.kind {
            continue; // already a superinstruction
        }
        if o.kind == Kind::MovK && o.dst == RA && next.kind == Kind::Exit {
            *slot = SOp { kind: Kind::RetImm, ..o };
        } else if o.kind == Kind::LdCtx
            && o.dst == RA
            && next.kind == Kind::MovK
            && next.dst == RT
            && base.get(pc + 2).is_some_and(|j| j.kind == Kind::Jcc && j.dst == RA && j.src == RT)
        {
            let Some(j) = base.get(pc + 2) else { continue };
            let kind = match j.aux {
                EQ => Kind::LdMovJeq,
                NE => Kind::LdMovJne,
                GT => Kind::LdMovJgt,
                GE => Kind::LdMovJge,
                LT => Kind::LdMovJlt,
                LE => Kind::LdMovJle,
                _ => Kind::LdMovJset,
            };
            *slot = SOp { kind, dst: RA, src: RK, aux: o.aux, target: j.target, imm: next.imm };
        } else if o.kind == Kind::LdCtx && o.dst == RA {
            let kind = match next.kind {
                Kind::JeqK => Kind::LdJeq,
                Kind::JneK => Kind::LdJne,
                Kind::JgtK => Kind::LdJgt,
                Kind::JgeK => Kind::LdJge,
                Kind::JltK => Kind::LdJlt,
                Kind::JleK => Kind::LdJle,
                Kind::JsetK => Kind::LdJset,
                _ => continue,
            };
            *slot = SOp { kind, dst: RA, src: RK, aux: o.aux, target: next.target, imm: next.imm };
        } else if o.kind == Kind::MovK && o.dst == RT && next.kind == Kind::Jcc && next.dst == RA && next.src == RT {
            let kind = match next.aux {
                EQ => Kind::MovJeq,
                NE => Kind::MovJne,
                GT => Kind::MovJgt,
                GE => Kind::MovJge,
                LT => Kind::MovJlt,
                LE => Kind::MovJle,
                SET => Kind::MovJset,
                _ => continue,
            };
            *slot = SOp { kind, dst: RT, src: RK, aux: 0, target: next.target, imm: o.imm };
        } else if o.kind == Kind::AluX && o.aux == alu_code(AluOp::Xor) && o.dst == RA && o.src == RA {
            let third = base.get(pc + 2).map(|t| t.kind);
            if next.kind == Kind::AluX
                && next.aux == alu_code(AluOp::Xor)
                && next.dst == RX
                && next.src == RX
                && third == Some(Kind::CtxPtr)
            {
                *slot = SOp { kind: Kind::Prologue, ..o };
            }
        }
    }
    let has_stack = ops.iter().any(|o| matches!(o.kind, Kind::LdStack | Kind::StStack));
    let start = if ops.first().is_some_and(|o| o.kind == Kind::Prologue) { 3 } else { 0 };
    type Runner = fn(&SeccompProg, &[u8; 64]) -> (u64, u64);
    let tests_built = built.len();
    // Chains worth linking to: from a tree node on, ranges only, within
    // the window of [`Scans::linked_exit`].
    let (range, tree) = (built.ranges(), built.trees());
    let ranges =
        |from: usize, len: usize| range.get(from..from + len.min(WINDOW)).is_some_and(|r| r.iter().all(|&r| r));
    let linkable = |from: usize, len: usize| {
        ranges(from, len) && tree.get(from..from + len.min(WINDOW)).is_some_and(|t| t.iter().any(|&t| t))
    };
    let mut chains = built.finish();
    // Exits that land on `w0 = K; exit` end the run there.
    for t in chains.exits.iter_mut() {
        if let Some(k) = chain::Code::ret_k(&shapes, t.exit.target as usize) {
            t.exit.ret = k;
        }
    }
    // Exits that land on the entry of a chain from a tree node go on
    // scanning it, in programs whose chain ops can all be scanned as
    // linked chains (ranges only): their dispatch loop then has no entry
    // blocks to keep in registers.
    let link_of = |e: &ChainExit| match entry_at.get(e.target as usize) {
        Some(&Some(EntryAt { from, skip_base, link, len })) if e.ret == NOT_RET && linkable(from, len) => {
            // The linked chain's exits count from its walk's start.
            Some(ChainExit { target: from as u32, skip: e.skip.wrapping_sub(skip_base as u32), ret: link })
        }
        _ => None,
    };
    let chain_ops_ranges = ops.iter().enumerate().all(|(pc, o)| {
        !matches!(o.kind, Kind::Chain | Kind::LdChain)
            || entry_at.get(pc).copied().flatten().is_some_and(|e| ranges(e.from, e.len))
    });
    let has_links = chain_ops_ranges && chains.exits.iter().take(tests_built).any(|t| link_of(&t.exit).is_some());
    let mut linked = vec![false; tests_built];
    if has_links {
        for (t, l) in chains.exits.iter_mut().zip(linked.iter_mut()) {
            if let Some(e) = link_of(&t.exit) {
                t.exit = e;
                *l = true;
            }
        }
        // Chain ops, and entries kept as plain ops whose chain links on,
        // become linked-chain ops: one dispatch for a whole path down a
        // tree.
        for (pc, e) in entry_at.iter().enumerate() {
            let (Some(EntryAt { from, skip_base, link, len }), Some(o)) = (*e, ops.get_mut(pc)) else { continue };
            let links_on = linked.get(from..from + len.min(WINDOW)).is_some_and(|w| w.iter().any(|&l| l));
            if matches!(o.kind, Kind::Chain | Kind::LdChain) || (ranges(from, len) && links_on) {
                *o = if link == SAME {
                    SOp { kind: Kind::Linked, dst: RA, src: RK, aux: 0, target: from as u32, imm: skip_base }
                } else {
                    let aux = (link - RELOAD) as u8;
                    SOp { kind: Kind::LdLinked, dst: RA, src: RK, aux, target: from as u32, imm: skip_base }
                };
            }
        }
    }
    let (runner, runner_uncounted): (Runner, Runner) = match (has_stack, has_links) {
        (true, true) => (SeccompProg::run_with::<16, true, true>, SeccompProg::run_with::<16, false, true>),
        (true, false) => (SeccompProg::run_with::<16, true, false>, SeccompProg::run_with::<16, false, false>),
        (false, true) => (SeccompProg::run_with::<0, true, true>, SeccompProg::run_with::<0, false, true>),
        (false, false) => (SeccompProg::run_with::<0, true, false>, SeccompProg::run_with::<0, false, false>),
    };
    let mut entries = Vec::new();
    for o in ops.iter_mut().filter(|o| matches!(o.kind, Kind::Chain | Kind::LdChain)) {
        entries.push(EntryBlock::new(&chains, o.target as usize, o.imm as u32)?);
        o.target = (entries.len() - 1) as u32;
    }
    Some(SeccompProg {
        ops: ops.into_boxed_slice(),
        entries: entries.into_boxed_slice(),
        chains,
        start,
        runner,
        runner_uncounted,
    })
}

/// ALU32 operation `op` (its index in [`AluOp::ALL`]) on the low halves,
/// zero-extended: [`AluOp::eval32`].
#[inline(always)]
fn alu32(op: u8, d: u64, v: u64) -> u64 {
    AluOp::ALL.get(usize::from(op)).map_or(d, |o| u64::from(o.eval32(d as u32, v as u32)))
}

#[inline(always)]
fn test(cond: u8, x: u64, v: u64) -> bool {
    match cond {
        EQ => x == v,
        NE => x != v,
        GT => x > v,
        GE => x >= v,
        LT => x < v,
        LE => x <= v,
        _ => x & v != 0,
    }
}

/// Context word `w` (0..16) of the 64-byte `struct seccomp_data`, read
/// little-endian like every load of the general interpreter.
#[inline(always)]
#[allow(clippy::indexing_slicing)] // i = (w & 15) * 4 <= 60, so i + 3 < 64
fn word(data: &[u8; 64], w: u8) -> u64 {
    let i = usize::from(w & 15) * 4;
    u64::from(u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]))
}

impl SeccompProg {
    /// Runs the program on `data`; returns the whole `r0` and the number of
    /// instructions executed.
    ///
    /// Mirrors `___bpf_prog_run()` in kernel/bpf/core.c (Linux 6.18) on the
    /// subset of opcodes a converted seccomp filter contains.
    ///
    /// # Deviations
    /// The dead `w2 = K` writes of compares in chains are not performed
    /// (module docs); the stack is a fresh local (reads of unwritten slots
    /// are refused at load, so its contents are never observed), and a
    /// program without stack accesses runs without one.
    #[inline(always)]
    pub(crate) fn run(&self, data: &[u8; 64]) -> Result<(u64, u64), ExecError> {
        match (self.runner)(self, data) {
            (pc, 0) => Err(ExecError::FellOffEnd { pc: Pc(pc as usize) }),
            done => Ok(done),
        }
    }

    /// [`SeccompProg::run`] without counting executed instructions (one
    /// register and its updates less on every taken jump and chain): the
    /// whole `r0`.
    ///
    /// Mirrors `___bpf_prog_run()` in kernel/bpf/core.c (Linux 6.18), as
    /// [`SeccompProg::run`] does.
    ///
    /// # Deviations
    /// Those of [`SeccompProg::run`].
    #[inline(always)]
    pub(crate) fn run_uncounted(&self, data: &[u8; 64]) -> Result<u64, ExecError> {
        match (self.runner_uncounted)(self, data) {
            (pc, 0) => Err(ExecError::FellOffEnd { pc: Pc(pc as usize) }),
            (r0, _) => Ok(r0),
        }
    }

    /// [`SeccompProg::run`] with a local stack of `SLOTS` words: 16, or 0
    /// when the program has no stack access (the stack arms are then never
    /// reached and the array costs nothing). Never inlined: as a function
    /// of its own it keeps A, X, TMP, `pc` and the op table in registers
    /// instead of sharing the register budget of its caller. Returns
    /// `(r0, executed)` (`(r0, 1)` without `COUNT`), or `(pc, 0)` if it fell
    /// off the end (unreachable: a run executes at least its `exit`); two
    /// registers, not a `Result` in memory.
    #[inline(never)]
    fn run_with<const SLOTS: usize, const COUNT: bool, const LINKS: bool>(&self, data: &[u8; 64]) -> (u64, u64) {
        let ops = &self.ops[..];
        let chains = &self.chains;
        let entries = &self.entries[..];
        let (mut a, mut t, mut x) = (0u64, 0u64, 0u64);
        let mut stack = [0u32; SLOTS];
        let mut pc = self.start as usize;
        // Instructions jumped over so far (see the module docs).
        let mut skipped: usize = 0;

        macro_rules! get {
            ($r:expr) => {
                match $r {
                    RA => a,
                    RT => t,
                    _ => x,
                }
            };
        }
        macro_rules! set {
            ($r:expr, $v:expr) => {{
                let v: u64 = $v;
                match $r {
                    RA => a = v,
                    RT => t = v,
                    _ => x = v,
                }
            }};
        }
        macro_rules! jump {
            ($target:expr) => {{
                let target = $target as usize;
                if COUNT {
                    skipped = skipped.wrapping_add(target.wrapping_sub(pc + 1));
                }
                pc = target;
                continue;
            }};
        }
        macro_rules! jcc {
            ($x:expr, $v:expr, $target:expr, |$l:ident, $r:ident| $cond:expr) => {{
                let ($l, $r): (u64, u64) = ($x, $v);
                if $cond {
                    jump!($target)
                }
                pc += 1;
                continue;
            }};
        }
        macro_rules! exit {
            ($at:expr) => {
                return (a, if COUNT { ($at as usize + 1).wrapping_sub(skipped) as u64 } else { 1 })
            };
        }
        // The chain of entry `$entry`: goes on where its first hit leaves to.
        macro_rules! chain {
            ($entry:expr) => {{
                let Some(e) = entries.get($entry as usize) else {
                    // Unreachable: entries are made for their ops.
                    return (pc as u64, 0);
                };
                if COUNT {
                    skipped = skipped.wrapping_sub(e.skip_base as usize);
                }
                // Every chain ends with a test that always hits, so the exit
                // is never `ChainExit::NOWHERE`.
                let exit = e.first_exit(a as u32, chains);
                follow!(exit)
            }};
        }
        // The linked chain from test `$from` (skip count `$base` at its entry).
        macro_rules! linked {
            ($from:expr, $base:expr) => {{
                if !LINKS {
                    // Unreachable: linked-chain ops exist only with links.
                    return (pc as u64, 0);
                }
                if COUNT {
                    skipped = skipped.wrapping_sub($base as usize);
                }
                let exit = chains.linked_exit(a as u32, $from as usize);
                linked_follow!(exit)
            }};
        }
        // Goes where chain exit `$exit` (a value) leaves to, following its
        // links (only in programs that have some: `LINKS`).
        macro_rules! follow {
            ($exit:expr) => {{
                let exit: ChainExit = $exit;
                if LINKS && exit.links() {
                    if exit.ret != SAME {
                        // RELOAD + k: word k (`word` takes the low 4 bits).
                        a = word(data, exit.ret as u8);
                    }
                    if COUNT {
                        // Sign-extended: a linked exit's count is less the
                        // next entry's, which may be more than its own.
                        skipped = skipped.wrapping_add(exit.skip as i32 as usize);
                    }
                    let exit = chains.linked_exit(a as u32, exit.target as usize);
                    linked_follow!(exit)
                }
                leave!(exit)
            }};
        }
        // `follow!` from a linked chain's exit (a reference).
        macro_rules! linked_follow {
            ($exit:expr) => {{
                let mut exit: &ChainExit = $exit;
                while exit.links() {
                    if exit.ret != SAME {
                        a = word(data, exit.ret as u8);
                    }
                    if COUNT {
                        skipped = skipped.wrapping_add(exit.skip as i32 as usize);
                    }
                    exit = chains.linked_exit(a as u32, exit.target as usize);
                }
                leave!(exit)
            }};
        }
        // Goes where chain exit `$exit` (value or reference, not a link)
        // leaves to.
        macro_rules! leave {
            ($exit:expr) => {{
                if COUNT {
                    skipped = skipped.wrapping_add($exit.skip as i32 as usize);
                }
                pc = $exit.target as usize;
                // Chains mostly leave to `w0 = K; exit` ([`ChainExit::ret`]):
                // the run ends here rather than through the dispatcher.
                if $exit.ret != NOT_RET {
                    a = $exit.ret;
                    exit!(pc + 1)
                }
                continue;
            }};
        }

        loop {
            let Some(op) = ops.get(pc) else {
                // Unreachable: the last instruction is `exit` and jumps go forward.
                return (pc as u64, 0);
            };
            match op.kind {
                Kind::CtxPtr => {}
                Kind::Prologue => {
                    a = 0;
                    x = 0;
                    pc += 3;
                    continue;
                }
                Kind::MovK => set!(op.dst, op.imm),
                Kind::Mov32 => set!(op.dst, u64::from(get!(op.src) as u32)),
                Kind::Mov64 => set!(op.dst, get!(op.src)),
                Kind::AluK => set!(op.dst, alu32(op.aux, get!(op.dst), op.imm)),
                Kind::AluX => set!(op.dst, alu32(op.aux, get!(op.dst), get!(op.src))),
                Kind::Neg => set!(op.dst, u64::from((get!(op.dst) as u32).wrapping_neg())),
                Kind::LdCtx => set!(op.dst, word(data, op.aux)),
                // With SLOTS = 16 the masked index is in range (no check
                // survives); with SLOTS = 0 these arms are never reached.
                Kind::LdStack => set!(op.dst, u64::from(stack.get(usize::from(op.aux & 15)).copied().unwrap_or(0))),
                Kind::StStack => {
                    if let Some(s) = stack.get_mut(usize::from(op.aux & 15)) {
                        *s = get!(op.src) as u32;
                    }
                }
                Kind::Ja => jump!(op.target),
                Kind::JeqK => jcc!(a, op.imm, op.target, |l, r| l == r),
                Kind::JneK => jcc!(a, op.imm, op.target, |l, r| l != r),
                Kind::JgtK => jcc!(a, op.imm, op.target, |l, r| l > r),
                Kind::JgeK => jcc!(a, op.imm, op.target, |l, r| l >= r),
                Kind::JltK => jcc!(a, op.imm, op.target, |l, r| l < r),
                Kind::JleK => jcc!(a, op.imm, op.target, |l, r| l <= r),
                Kind::JsetK => jcc!(a, op.imm, op.target, |l, r| l & r != 0),
                Kind::Jcc => {
                    let v = if op.src == RK { op.imm } else { get!(op.src) };
                    jcc!(get!(op.dst), v, op.target, |l, r| test(op.aux, l, r))
                }
                Kind::Exit => exit!(pc),
                Kind::RetImm => {
                    a = op.imm;
                    exit!(pc + 1)
                }
                Kind::LdMovJeq => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l == r)
                }
                Kind::LdMovJne => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l != r)
                }
                Kind::LdMovJgt => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l > r)
                }
                Kind::LdMovJge => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l >= r)
                }
                Kind::LdMovJlt => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l < r)
                }
                Kind::LdMovJle => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l <= r)
                }
                Kind::LdMovJset => {
                    a = word(data, op.aux);
                    t = op.imm;
                    pc += 2;
                    jcc!(a, t, op.target, |l, r| l & r != 0)
                }
                // Unreachable with links: chain ops are then linked-chain ops.
                Kind::Chain if LINKS => return (pc as u64, 0),
                Kind::LdChain if LINKS => return (pc as u64, 0),
                Kind::Chain => chain!(op.target),
                Kind::LdChain => {
                    a = word(data, op.aux);
                    chain!(op.target)
                }
                Kind::Linked => linked!(op.target, op.imm),
                Kind::LdLinked => {
                    a = word(data, op.aux);
                    linked!(op.target, op.imm)
                }
                Kind::LdJeq => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l == r)
                }
                Kind::LdJne => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l != r)
                }
                Kind::LdJgt => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l > r)
                }
                Kind::LdJge => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l >= r)
                }
                Kind::LdJlt => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l < r)
                }
                Kind::LdJle => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l <= r)
                }
                Kind::LdJset => {
                    a = word(data, op.aux);
                    pc += 1;
                    jcc!(a, op.imm, op.target, |l, r| l & r != 0)
                }
                Kind::MovJeq => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l == r)
                }
                Kind::MovJne => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l != r)
                }
                Kind::MovJgt => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l > r)
                }
                Kind::MovJge => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l >= r)
                }
                Kind::MovJlt => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l < r)
                }
                Kind::MovJle => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l <= r)
                }
                Kind::MovJset => {
                    t = op.imm;
                    pc += 1;
                    jcc!(a, t, op.target, |l, r| l & r != 0)
                }
            }
            pc += 1;
        }
    }
}

/// The compare chains the seccomp executor runs for `prog`, for tests and
/// debugging, or `None` when `prog` has no executor (outside the subset,
/// or loaded without superinstructions): each op that is a chain
/// superinstruction (`pc: op`; `entry` ops scan their first tests from a
/// record of their own, `linked` ops scan the table from a test), then
/// every exit test of the chain table (`index: test -> where`; see
/// `chain::Table::listing`).
pub fn chain_listing(prog: &crate::Program) -> Option<String> {
    let exec = prog.seccomp.as_deref()?;
    let mut out = String::from("ops:\n");
    for (pc, o) in exec.ops.iter().enumerate() {
        let entry = || exec.entries.get(o.target as usize).map_or((u32::MAX, 0), |e| (e.from, e.skip_base));
        let line = match o.kind {
            Kind::Chain => format!("entry @{} skip {}", entry().0, entry().1),
            Kind::LdChain => format!("w0 = word {}; entry @{} skip {}", o.aux, entry().0, entry().1),
            Kind::Linked => format!("linked @{} skip {}", o.target, o.imm),
            Kind::LdLinked => format!("w0 = word {}; linked @{} skip {}", o.aux, o.target, o.imm),
            _ => continue,
        };
        out.push_str(&format!("{pc:4}: {line}\n"));
    }
    out.push_str("tests:\n");
    out.push_str(&exec.chains.to_string());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Helpers, LoadOptions, Program, Vm};

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
                        let want = test(cond, u64::from(x), v) == outcome;
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
            failures.extend(from_every_entry(&starts, &body, &consts, Kind::LdChain, "ladder"));
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
    /// results and step counts. With a `jset` leaf (not a range) nothing
    /// is linked, and the results still agree.
    #[test]
    fn linked_tree_chains_match_the_general_interpreter_from_every_node() {
        let mut failures = Vec::new();
        for n in [5usize, 8, 9, 13, 16, 17, 24, 31, 40] {
            let keys: Vec<u32> = (0..n as u32).map(|k| 3 * k + if k % 4 == 3 { 0x8000_0000 } else { 10 }).collect();
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
                    let links = prog.chains.exits.iter().filter(|t| t.exit.links()).count();
                    let reloads = prog.chains.exits.iter().filter(|t| t.exit.links() && t.exit.ret != SAME).count();
                    if jset_leaf && (linked_ops != 0 || links != 0) {
                        failures.push(format!("n {n} jset: {linked_ops} linked ops, {links} links"));
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
}
