//! The executor's compare chains on the chain core (crate `chain`): where
//! an exit leaves to ([`ChainExit`], links included), the table and its
//! scans ([`Chains`], [`Scans`], [`EntryBlock`]), and the walk over the
//! subset's code that builds them ([`Shapes`], [`ChainBuilder`]).

use chain::{Builder, Compare, ExitTest, Leaving, Link, Record, Rules, Table, BLOCK};

use super::ops::{bit, cond_of, Kind, SOp, RA, RT};

/// Tests of a linked chain scanned one at a time before the blocked scan
/// ([`Scans::linked_exit`]); a chain is linked to if these tests from its
/// entry are ranges and one of them is a tree node's.
pub(super) const WINDOW: usize = 8;

/// Tests in the first block of a scan (one 4-lane vector): short chains
/// and tree nodes mostly end in it.
pub(super) const FIRST_BLOCK: usize = 4;

/// Chain entries with fewer tests left than this (one real compare and the
/// final test) keep their per-instruction ops: cheaper than a block scan.
/// So do entries at a tree node (a compare whose both sides go on to
/// compares, not a detour): a tree walk leaves most chains at their first
/// test, where the block scan's fixed cost is more than a plain compare's
/// (measured: `allow306_opt2` 15% slower with them). Either becomes a
/// linked-chain op ([`Kind::Linked`]) when its chain links on.
pub(super) const MIN_CHAIN: usize = 3;

/// The exit test equivalent to "`x <cond> v` is `outcome`" (the 64-bit
/// compare of the jump, `v` the sign-extended `imm` or a zero-extended
/// `w2 = K`) for every `x` below 2^32, the only values a register of the
/// subset can hold (module docs); `None` when it never happens
/// ([`ExitTest::of_wide`]).
#[cfg(test)]
pub(super) fn exit_test(cond: u8, v: u64, outcome: bool) -> Option<ExitTest> {
    ExitTest::of_wide(cond_of(cond), v, outcome)
}

/// Where a chain is left at one of its tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ChainExit {
    /// The pc execution goes on at (past any `ja`).
    pub(super) target: u32,
    /// Instructions jumped over from the start of the chain's walk to
    /// `target`; an entry's op holds the count up to the entry, so a run
    /// adds the difference to its skip count (module docs).
    pub(super) skip: u32,
    /// What the exit does besides going to `target`: `K` (a `u32`) when
    /// `target` is `w0 = K; exit` (the run ends there without dispatching
    /// it); [`NOT_RET`] when execution goes on at pc `target`; or a link
    /// to another chain ([`SAME`], [`RELOAD`]` + k`; [`compile`] links exits
    /// whose target is the entry of a chain from a tree node, or of a
    /// short range chain where the program allows it): the scan
    /// goes on at test `target` of [`Table::exits`] with r0 unchanged or
    /// after reloading context word `k` (the entry is a load of that
    /// word). Links only go forward in the program, so following them ends.
    /// (One field for all three: an exit is two registers, and the
    /// dispatch loop of a program without links checks only `NOT_RET`.)
    pub(super) ret: u64,
}

/// [`ChainExit::ret`] of an exit that neither ends the run nor links (above
/// every `K` and every link).
pub(super) const NOT_RET: u64 = u64::MAX;
/// [`ChainExit::ret`] of a link with r0 unchanged. Links are the values
/// `SAME..=SAME + 16`, above every `K` and below [`NOT_RET`] (all three
/// constants are small negative numbers: one-byte immediates).
pub(super) const SAME: u64 = u64::MAX - 32;
/// [`ChainExit::ret`]: `RELOAD + k` links after reloading context word
/// `k` (< 16; the low four bits of the value).
pub(super) const RELOAD: u64 = SAME + 1;

impl ChainExit {
    /// Past every program (a run that gets there reports falling off the
    /// end): what a scan past the arrays returns, never reached.
    pub(super) const NOWHERE: ChainExit = ChainExit { target: u32::MAX, skip: 0, ret: NOT_RET };

    /// Whether the exit links to another chain.
    #[inline(always)]
    pub(super) fn links(&self) -> bool {
        self.ret.wrapping_sub(SAME) <= 16
    }
}

/// [`ChainExit::NOWHERE`], for scans that return a reference.
pub(super) static NOWHERE: ChainExit = ChainExit::NOWHERE;

/// One test of [`Table::exits`] with its exit, for the scalar scan of
/// linked chains (one bounds check per window, one branch per test).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(super) struct LinkedTest {
    pub(super) exit: ChainExit,
    /// The test as a range, `x - lo <= span` (wrapping), for a range test
    /// (full mask, or always hit: what links go to); a masked test's `lo`
    /// and `span` otherwise, scanned with `mask`
    /// ([`Scans::masked_linked_exit`]).
    pub(super) lo: u32,
    pub(super) span: u32,
    /// The test's mask (for printing and the masked window scan).
    pub(super) mask: u32,
    /// Pads the record to 32 bytes (an index is a shift).
    pub(super) _pad: u32,
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
pub(super) type Chains = Table<LinkedTest>;

/// The scans of [`Chains`] the run loop uses.
pub(super) trait Scans {
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

    /// [`Scans::linked_exit`] with each test's mask applied, for a chain
    /// whose window holds masked tests.
    fn masked_linked_exit(&self, x: u32, at: usize) -> &ChainExit;
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

    #[inline(always)]
    fn masked_linked_exit(&self, x: u32, at: usize) -> &ChainExit {
        self.scan_window::<WINDOW, _>(at, |t| t.hits(x), |t| &t.exit, || self.first_exit_after_ref(x, at + WINDOW))
    }
}

/// A chain entry: the first [`FIRST_BLOCK`] tests of the chain from the
/// entry, and their exits, in one place (one bounds check, one vector,
/// nearby cache lines); the rest of the chain is scanned in [`Chains`].
#[derive(Debug, Clone, Copy)]
pub(super) struct EntryBlock {
    pub(super) mask: [u32; FIRST_BLOCK],
    pub(super) lo_flipped: [u32; FIRST_BLOCK],
    pub(super) span_flipped: [i32; FIRST_BLOCK],
    pub(super) exits: [ChainExit; FIRST_BLOCK],
    /// Index of the first test in [`Chains`].
    pub(super) from: u32,
    /// The skip count at the entry (see [`ChainExit::skip`]).
    pub(super) skip_base: u32,
}

impl EntryBlock {
    /// Copies tests `from..from + FIRST_BLOCK` of `chains` (past the end
    /// of the entry's chain: other chains' tests or padding, never reached
    /// because the chain's last test always hits).
    pub(super) fn new(chains: &Chains, from: usize, skip_base: u32) -> Option<Self> {
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
    pub(super) fn first_exit(&self, x: u32, chains: &Chains) -> ChainExit {
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
pub(super) struct Cmp {
    pub(super) jump_pc: usize,
    pub(super) cond: u8,
    pub(super) value: u64,
    pub(super) target: usize,
}

/// The load-time facts chain building looks at.
pub(super) struct Shapes<'a> {
    pub(super) base: &'a [SOp],
    pub(super) live_in: &'a [u8],
    /// Per pc, where a jump to it goes instead and the instructions that
    /// way jumps over ([`chain::known::thread`] of `base`; empty while
    /// that is computed).
    pub(super) threaded: &'a [(usize, u32)],
}

impl Shapes<'_> {
    /// The value a run returns at `pc` if it ends there with a constant:
    /// `w0 = K; exit` (a converted `ret #k`).
    pub(super) fn ret_k(&self, pc: usize) -> Option<u64> {
        let (o, next) = (self.base.get(pc)?, self.base.get(pc + 1)?);
        (o.kind == Kind::MovK && o.dst == RA && next.kind == Kind::Exit).then_some(o.imm)
    }

    pub(super) fn live(&self, pc: usize) -> u8 {
        self.live_in.get(pc).copied().unwrap_or(0)
    }

    /// The compare starting at `pc`, if one does.
    pub(super) fn cmp(&self, pc: usize) -> Option<Cmp> {
        let o = self.base.get(pc)?;
        if matches!(o.kind, Kind::JeqK | Kind::JneK | Kind::JgtK | Kind::JgeK | Kind::JltK | Kind::JleK | Kind::JsetK) {
            return Some(Cmp { jump_pc: pc, cond: o.aux, value: o.imm, target: o.target as usize });
        }
        let j = self.base.get(pc + 1)?;
        let tmp_dead = self.live(j.target as usize) & bit(RT) == 0 && self.live(pc + 2) & bit(RT) == 0;
        (o.kind == Kind::MovK && o.dst == RT && j.kind == Kind::Jcc && j.dst == RA && j.src == RT && tmp_dead)
            .then_some(Cmp { jump_pc: pc + 1, cond: j.aux, value: o.imm, target: j.target as usize })
    }

    /// Where execution goes on from `pc`: past every `ja` there, and past
    /// reloads of a known word and the compares they settle
    /// ([`chain::known`]), with the instructions that way jumps over.
    pub(super) fn resolve(&self, pc: usize) -> (usize, u32) {
        self.threaded.get(pc).copied().unwrap_or((pc, 0))
    }
}

/// The converted program as the known-words analysis sees it: r0 is the
/// value, `w0 = ctx word` its loads.
impl chain::known::Flow for Shapes<'_> {
    fn effect(&self, pc: usize) -> chain::known::Effect {
        use chain::known::Effect;
        let Some(o) = self.base.get(pc) else { return Effect::Opaque };
        let on_a = o.dst == RA;
        match o.kind {
            Kind::LdCtx if on_a => Effect::Load(o.aux),
            Kind::MovK | Kind::Mov32 | Kind::Mov64 | Kind::LdStack if on_a => Effect::Set,
            Kind::AluK | Kind::AluX | Kind::Neg if on_a => Effect::Change,
            Kind::LdCtx
            | Kind::MovK
            | Kind::Mov32
            | Kind::Mov64
            | Kind::LdStack
            | Kind::AluK
            | Kind::AluX
            | Kind::Neg => Effect::Keep,
            Kind::StStack | Kind::CtxPtr => Effect::Keep,
            Kind::Ja => Effect::Jump(o.target as usize),
            Kind::JeqK | Kind::JneK | Kind::JgtK | Kind::JgeK | Kind::JltK | Kind::JleK | Kind::JsetK | Kind::Jcc => {
                Effect::Branch(pc + 1, o.target as usize)
            }
            Kind::Exit => Effect::End { reads: true },
            _ => Effect::Opaque,
        }
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

    fn loaded_word(&self, pc: usize) -> Option<u8> {
        self.base.get(pc).filter(|o| o.kind == Kind::LdCtx && o.dst == RA).map(|o| o.aux)
    }
}

/// The tests of the chains as they are found ([`chain::Builder`]).
#[derive(Default)]
pub(super) struct ChainBuilder(Builder);

impl ChainBuilder {
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// Appends `test` (nothing if it never hits) leaving to `target`.
    #[cfg(test)]
    pub(super) fn push(&mut self, test: Option<ExitTest>, target: usize, skip: u32) {
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
    pub(super) fn walk(
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
    pub(super) fn ranges(&self) -> Vec<bool> {
        self.0.tests().iter().map(|p| p.test.range().is_some()).collect()
    }

    /// Per test: leaves to a compare from a tree node (a compare whose
    /// both sides go on to compares).
    pub(super) fn trees(&self) -> Vec<bool> {
        self.0.tests().iter().map(|p| p.tree).collect()
    }

    /// The finished table, padded (see [`Chains`]).
    pub(super) fn finish(self) -> Chains {
        self.0.finish(BLOCK.max(WINDOW) - 1, |p| {
            let (lo, span) = p.test.range().unwrap_or((p.test.lo, p.test.span));
            let exit = ChainExit { target: p.target as u32, skip: p.skip, ret: NOT_RET };
            LinkedTest { exit, lo, span, mask: p.test.mask, _pad: 0 }
        })
    }
}
