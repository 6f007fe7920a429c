//! Compiling a recognised [`Subset`] for the executor: liveness of A, TMP
//! and X, compare chains and ladders (entered at every compare or reload
//! they run through), links between chains of a tree, the fused
//! load/compare ops, and the choice of run loop.

use crate::isa::op::AluOp;

use super::chains::{ChainBuilder, ChainExit, EntryBlock, Shapes, MIN_CHAIN, NOT_RET, RELOAD, SAME, WINDOW};
use super::ops::{alu_code, Kind, SOp, EQ, GE, GT, LE, LT, NE, RA, RK, RT, RX, SET};
use super::subset::{Plain, Subset};
use super::trees::{Trees, DIRECT};
use super::{Resume, Runner, SeccompProg};

/// A chain entry (a pc where the rest of a chain is what execution does),
/// as links see it.
#[derive(Debug, Clone, Copy)]
pub(super) struct EntryAt {
    /// The chain's test at the entry (an index into [`Table::exits`]).
    pub(super) from: usize,
    /// The skip count at the entry (see [`ChainExit::skip`]).
    pub(super) skip_base: u64,
    /// The [`ChainExit::ret`] of a link to it: [`SAME`], or [`RELOAD`]
    /// `+ k` for a load of context word `k` (a ladder entry).
    pub(super) link: u64,
    /// Tests from `from` to the chain's end.
    pub(super) len: usize,
}

/// The registers (a bit per code: [`RA`], [`RT`], [`RX`]) live on entry
/// to each pc, and none past the end: read on some path from there before
/// they are written. Jumps only go forward, so one backward pass is
/// exact. What chain building asks of TMP: a compare's `w2 = K` is a
/// chain's test (and not written) only where TMP is dead after it.
pub(super) fn live_in(plains: &[Plain]) -> Option<Vec<u8>> {
    let mut live_in = vec![0u8; plains.len() + 1];
    for (pc, p) in plains.iter().enumerate().rev() {
        let mut out = 0;
        if p.falls {
            out |= live_in.get(pc + 1).copied()?;
        }
        if p.jumps {
            out |= live_in.get(p.op.target as usize).copied()?;
        }
        *live_in.get_mut(pc)? = p.uses | (out & !p.defs);
    }
    Some(live_in)
}

impl Subset {
    /// Compiles the recognised program for the executor (module docs of
    /// [`super`]), compare trees where the measured [`chain::Policy`] says
    /// they pay; `None` only if a table outgrows its `u32` indices.
    pub(crate) fn compile(self) -> Option<SeccompProg> {
        self.compile_with(Some(chain::Policy::default()))
    }

    /// [`Subset::compile`] with compare trees where `trees` admits them
    /// (`None`: none).
    pub(crate) fn compile_with(self, trees: Option<chain::Policy>) -> Option<SeccompProg> {
        let plains = self.plains;
        let n = plains.len();
        let live_in = live_in(&plains)?;
        let base: Vec<SOp> = plains.iter().map(|p| p.op).collect();
        let mut ops = base.clone();
        let threaded = chain::known::thread(&Shapes { base: &base, live_in: &live_in, threaded: &[] }, n);
        let shapes = Shapes { base: &base, live_in: &live_in, threaded: &threaded };
        let mut built = ChainBuilder::default();
        // Compare trees first: their roots (and a load of r0 right before
        // one) are where chains stop and leave to, so that a chain that
        // runs into a tree (libseccomp's x32 check falling through to its
        // syscall tree) leaves to the tree's search instead of walking its
        // nodes one test at a time.
        let mut trees = Trees::build(&shapes, n, trees);
        let mut tree_starts = vec![false; n + 1];
        for &root in trees.roots() {
            let load =
                root.checked_sub(1).filter(|&l| base.get(l).is_some_and(|l| l.kind == Kind::LdCtx && l.dst == RA));
            for pc in std::iter::once(root).chain(load) {
                if let Some(t) = tree_starts.get_mut(pc) {
                    *t = true;
                }
            }
        }
        // Argument ladders: chains stop at their starts too, and leave to
        // the ladder's op there.
        let ladders = super::ladders::find(&shapes, n);
        for l in ladders.all() {
            if let Some(t) = tree_starts.get_mut(l.start) {
                *t = true;
            }
        }
        // Chains on an unknown r0, entered at each compare they run through.
        let mut covered = tree_starts.clone();
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
        let mut covered = tree_starts;
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
        // Compare trees: the root's op, and a load of r0 right before it,
        // search the tree's table. Nothing links to them (a link would
        // scan the root's chain instead of searching).
        for (tree, &root) in trees.roots().iter().enumerate() {
            // The op's tree index says whether the tree has a direct table
            // (`Trees::exit`), so that the others' runs skip its check.
            // A tree whose region reloads its word answers only from its
            // load: the root keeps its op for jumps that reach it holding
            // another value.
            let at_root = !trees.needs_load(tree);
            let direct = if trees.direct(tree) { DIRECT } else { 0 };
            let tree = u32::try_from(tree).ok().filter(|&t| t < DIRECT)? | direct;
            let op = SOp { kind: Kind::Tree, dst: RA, src: RK, aux: 0, target: tree, imm: 0 };
            if let (true, Some(o), Some(e)) = (at_root, ops.get_mut(root), entry_at.get_mut(root)) {
                (*o, *e) = (op, None);
            }
            let Some(load) = root.checked_sub(1) else { continue };
            let Some(&l) = base.get(load).filter(|l| l.kind == Kind::LdCtx && l.dst == RA) else { continue };
            if let (Some(o), Some(e)) = (ops.get_mut(load), entry_at.get_mut(load)) {
                (*o, *e) = (SOp { kind: Kind::LdTree, aux: l.aux, ..op }, None);
            }
        }
        for (i, l) in ladders.all().iter().enumerate() {
            let target = u32::try_from(i).ok()?;
            let op = SOp { kind: Kind::Ladder, dst: RA, src: l.lo, aux: l.hi, target, imm: 0 };
            if let (Some(o), Some(e)) = (ops.get_mut(l.start), entry_at.get_mut(l.start)) {
                (*o, *e) = (op, None);
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
            } else if let Some(fused) = ld_and_jcc(o, next, base.get(pc + 2)) {
                *slot = fused;
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
            } else if o.kind == Kind::MovK && o.dst == RT && next.kind == Kind::Jcc && next.dst == RA && next.src == RT
            {
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
        fuse_arch_checks(&mut ops);
        let has_stack = ops.iter().any(|o| matches!(o.kind, Kind::LdStack | Kind::StStack));
        let start = if ops.first().is_some_and(|o| o.kind == Kind::Prologue) { 3 } else { 0 };
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
            if let Some(k) = shapes.ret_k(t.exit.target as usize) {
                t.exit.ret = k;
            }
        }
        // Exits that land on the entry of a chain from a tree node (ranges
        // only) go on scanning it. Every chain op of such a program then
        // becomes a linked-chain op, masked or not, so that its dispatch
        // loop has no entry blocks to keep in registers.
        //
        // Exits also link to short range chains (at most a window's
        // tests), as the classic interpreter's `link_chains` does, in a
        // program that links anyway (it has a tree) or has no chain long
        // enough for a lookup table:
        // - the argument checks behind a tree's leaf (libseccomp's hi/lo
        //   word pairs, each an `ld [k]` and a compare or two) are then
        //   one dispatch, not one per word: docker_like_opt2's mbind, 8
        //   dispatches and 270 x86 instructions a run before, 231 after;
        // - a short filter's arch check, x32 check and rule are one
        //   dispatch: long_jumps_short 159 -> 149.
        // Not a long chain: linked into, it is scanned where it would
        // have been looked up (`EqSets`); linking every range chain took
        // libseccomp's linear allow-lists from 190 to 1204 instructions a
        // run. Nor short chains in a program with such lists and no tree:
        // the linked runner then costs their path 8% more (190 -> 205).
        let link_of = |e: &ChainExit, short_too: bool| match entry_at.get(e.target as usize) {
            Some(&Some(EntryAt { from, skip_base, link, len }))
                if e.ret == NOT_RET && (linkable(from, len) || (short_too && len <= WINDOW && ranges(from, len))) =>
            {
                // The linked chain's exits count from its walk's start.
                Some(ChainExit { target: from as u32, skip: e.skip.wrapping_sub(skip_base as u32), ret: link })
            }
            _ => None,
        };
        let links =
            |short_too: bool| chains.exits.iter().take(tests_built).any(|t| link_of(&t.exit, short_too).is_some());
        let lists = entry_at.iter().flatten().any(|e| e.len >= chain::EqSets::MIN_TESTS);
        let has_links = links(false) || (!lists && links(true));
        let mut linked = vec![false; tests_built];
        if has_links {
            for (t, l) in chains.exits.iter_mut().zip(linked.iter_mut()) {
                if let Some(e) = link_of(&t.exit, true) {
                    t.exit = e;
                    *l = true;
                }
            }
            // So do a tree's outcomes: a tree that leaves to a chain (a
            // leaf's, or an argument check's) goes on scanning it.
            trees.link(|e| link_of(e, true));
            // Chain ops, and entries kept as plain ops whose chain links on,
            // become linked-chain ops: one dispatch for a whole path down a
            // tree.
            for (pc, e) in entry_at.iter().enumerate() {
                let (Some(EntryAt { from, skip_base, link, len }), Some(o)) = (*e, ops.get_mut(pc)) else { continue };
                let links_on = linked.get(from..from + len.min(WINDOW)).is_some_and(|w| w.iter().any(|&l| l));
                // A chain with a masked test in its window is scanned with
                // its masks; nothing links to it.
                let masked = !ranges(from, len);
                if matches!(o.kind, Kind::Chain | Kind::LdChain) || (!masked && links_on) {
                    let (kind, aux) = match (link == SAME, masked) {
                        (true, false) => (Kind::Linked, 0),
                        (true, true) => (Kind::MaskedLinked, 0),
                        (false, false) => (Kind::LdLinked, (link - RELOAD) as u8),
                        (false, true) => (Kind::LdMaskedLinked, (link - RELOAD) as u8),
                    };
                    *o = SOp { kind, dst: RA, src: RK, aux, target: from as u32, imm: skip_base };
                }
            }
        }
        // Chains that end in a long run of equalities (allow-lists)
        // become lookups in a table of their own (`chain::EqSets`), whatever
        // op scanned them; the table's exits are final here (returns and
        // links set).
        let chain_op = |k: Kind| {
            matches!(
                k,
                Kind::Chain | Kind::LdChain | Kind::Linked | Kind::LdLinked | Kind::MaskedLinked | Kind::LdMaskedLinked
            )
        };
        // The op's first test and its chain's sentinel (the last test of a
        // walk always hits).
        let span = |pc: usize, o: &SOp| {
            let e = entry_at.get(pc).copied().flatten().filter(|e| e.from == o.target as usize && e.len > 0)?;
            Some((e.from, e.from + e.len - 1))
        };
        let ends: Vec<usize> = ops
            .iter()
            .enumerate()
            .filter(|(_, o)| chain_op(o.kind))
            .filter_map(|(pc, o)| span(pc, o).map(|(_, to)| to))
            .collect();
        let eq_sets = chain::EqSets::build(&chains, ends);
        for (pc, o) in ops.iter_mut().enumerate() {
            if !chain_op(o.kind) {
                continue;
            }
            let Some(set) = span(pc, o).and_then(|(from, to)| eq_sets.set_of(from, to)) else { continue };
            let loads = matches!(o.kind, Kind::LdChain | Kind::LdLinked | Kind::LdMaskedLinked);
            let kind = if loads { Kind::LdEqSet } else { Kind::EqSet };
            let skip_base = u32::try_from(o.imm).ok()?;
            *o = SOp { kind, imm: u64::from(skip_base) | u64::from(set) << 32, ..*o };
        }
        // One loop per shape, so that a program without masked linked ops
        // runs the loop it ran before they existed.
        let has_masked = ops.iter().any(|o| matches!(o.kind, Kind::MaskedLinked | Kind::LdMaskedLinked));
        macro_rules! runners {
            ($slots:literal, $links:literal, $masked:literal) => {
                (
                    SeccompProg::run_with::<$slots, true, $links, $masked> as Runner,
                    SeccompProg::run_with::<$slots, false, $links, $masked> as Runner,
                    SeccompProg::run_from::<$slots, $links, $masked> as Resume,
                )
            };
        }
        let (runner, runner_uncounted, resume_uncounted) = match (has_stack, has_links, has_masked) {
            (true, true, true) => runners!(16, true, true),
            (true, true, false) => runners!(16, true, false),
            (true, false, _) => runners!(16, false, false),
            (false, true, true) => runners!(0, true, true),
            (false, true, false) => runners!(0, true, false),
            (false, false, _) => runners!(0, false, false),
        };
        let mut entries = Vec::new();
        for o in ops.iter_mut().filter(|o| matches!(o.kind, Kind::Chain | Kind::LdChain)) {
            entries.push(EntryBlock::new(&chains, o.target as usize, o.imm as u32)?);
            o.target = (entries.len() - 1) as u32;
        }
        // Uncounted runs take threaded jumps ([`chain::known`]): where a jump
        // lands on a reload of a known word, it goes on where the reload
        // and the compares it settles lead. Counted runs keep the jumps as
        // written: an op has no room for the instructions a threaded jump
        // jumps over (chain exits have, and take them in both runs).
        let uncounted_ops = ops
            .iter()
            .map(|&o| match o.kind.jumps_to_pc() {
                true => SOp { target: u32::try_from(shapes.resolve(o.target as usize).0).unwrap_or(o.target), ..o },
                false => o,
            })
            .collect();
        let uncounted_ops: Box<[SOp]> = uncounted_ops;
        // Where an uncounted run starts: see `Start::choose`.
        let (start_in, entry) = super::run::Start::choose(&uncounted_ops, start as usize, &chains);
        Some(SeccompProg {
            ops: ops.into_boxed_slice(),
            uncounted_ops,
            entries: entries.into_boxed_slice(),
            chains: super::ChainTables { table: chains, eq_sets, trees, ladders },
            start,
            runner,
            runner_uncounted: entry.unwrap_or(runner_uncounted),
            start_in,
            resume_uncounted,
        })
    }
}

/// `w0 = ctx word; w0 &= M; if r0 <cond> K goto` as one [`Kind::LdAndJcc`]
/// (`K` below 2^32, as every classic `k` is).
fn ld_and_jcc(ld: SOp, and: SOp, jump: Option<&SOp>) -> Option<SOp> {
    let j = jump?;
    let loads = ld.kind == Kind::LdCtx && ld.dst == RA;
    let masks = and.kind == Kind::AluK && and.aux == alu_code(AluOp::And) && and.dst == RA;
    // The K-form compares of r0 (their condition in `aux`).
    let compares =
        matches!(j.kind, Kind::JeqK | Kind::JneK | Kind::JgtK | Kind::JgeK | Kind::JltK | Kind::JleK | Kind::JsetK);
    if !(loads && masks && compares) {
        return None;
    }
    let k = u32::try_from(j.imm).ok()?;
    // ALU32: the mask is imm's low half.
    let imm = u64::from(and.imm as u32) << 32 | u64::from(k);
    Some(SOp { kind: Kind::LdAndJcc, dst: RA, src: j.aux, aux: ld.aux, target: j.target, imm })
}

/// Each [`Kind::LdMovJne`] that falls through (three instructions on) to a
/// [`Kind::LdTree`] becomes one [`Kind::LdMovJneTree`]: the architecture
/// check and the syscall tree's load and search in one dispatch, where
/// every input went through both. The `LdTree` keeps its op for other
/// jumps. Only a `K` below 2^32 (what `w2 = K` leaves in r2) fits beside
/// the tree's index in `imm`.
fn fuse_arch_checks(ops: &mut [SOp]) {
    for pc in 0..ops.len() {
        let Some(&check) = ops.get(pc).filter(|o| o.kind == Kind::LdMovJne && o.imm >> 32 == 0) else { continue };
        let Some(&tree) = ops.get(pc + 3).filter(|o| o.kind == Kind::LdTree) else { continue };
        if let Some(slot) = ops.get_mut(pc) {
            let imm = u64::from(tree.target) << 32 | check.imm;
            *slot = SOp { kind: Kind::LdMovJneTree, src: tree.aux, imm, ..check };
        }
    }
}
