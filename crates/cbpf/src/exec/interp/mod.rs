//! A fast classic-BPF interpreter: the reference oracle for the converter.
//!
//! It runs a validated [`Program`] with the semantics of the program the
//! kernel actually executes today, i.e. the eBPF that `bpf_convert_filter()`
//! (net/core/filter.c, Linux 6.18) makes of it, not the pre-3.15
//! `sk_run_filter()`. Where the two differ (a missing `skb->dev`, shifts by
//! `X >= 32`, negative-offset loads into paged data) the converted program
//! wins; each case is documented where it is implemented.
//!
//! Two contexts:
//! - seccomp ([`Interp::run_seccomp`]): the 64-byte `struct seccomp_data`
//!   ([`SeccompData::to_bytes`]); the only load is the rewritten 0x21, a
//!   native-endian 32-bit word at an aligned offset below 64;
//! - socket ([`Interp::run_socket`]): packet bytes plus the `sk_buff`
//!   metadata in [`Skb`].
//!
//! Speed: [`Interp::new`] pre-decodes the program once into a compact
//! internal form (absolute jump targets, with jumps onto `ja` going where
//! the `ja` goes; one variant per operation; `div #k` divisors as
//! `NonZeroU32`). A run allocates nothing (`M[]` lives on the stack of the
//! run function, and only for programs that store to it) and always
//! terminates because classic jumps only go forward. Runs of consecutive
//! `jeq/jgt/jge/jset #k` are executed by one "compare chain"
//! superinstruction: each outcome that leaves the run is pre-computed as a
//! uniform test `(A & mask) - lo <= span`, and one tight scan finds where
//! the run is left, without going back to the dispatcher. Each chain's
//! tests are followed by a sentinel test that always hits and goes where the
//! chain falls out, so the last (up to 15) tests are scanned in a window of
//! 16 with one bounds check and no length (chains of only `jeq/jgt/jge`, the
//! shape of libseccomp's trees, without the mask); longer chains first check
//! blocks of 8 tests at once, out of line. That is what makes the long
//! `ld [0]; jeq #n1; jeq #n2; ...` chains of libseccomp filters cheap.
//! An exit whose target is itself a range chain (possibly behind a fused
//! `ld [k]`) links to it, and the run scans on without dispatching: a walk
//! down a libseccomp binary tree (architecture check, x32 check, the tree)
//! is a single op. The exit tests, the chain table and its scans and the
//! ladder walk are the chain core's (crate `chain`, shared with the eBPF
//! seccomp executor); [`Interp::chain_listing`] prints what a program's
//! chains compiled to (testdata/chains pins it).
//! libseccomp's rule ladders (`ld [16]; jeq #i, 0, 9; <arg checks>;
//! ld [16]; jeq #j, 0, 9; ...`) are one chain too, entered at each load:
//! reloading the word `A` already holds changes nothing. A chain with a
//! single range test is held inline in its op, and a seccomp `ld [k]`
//! followed by a chain is fused with it. A jump to a `ret #k` goes to a pc
//! past the ops that stands for its value, so the run ends on the loop's
//! bounds check without dispatching the `ret`. Taken jumps stay real branches:
//! selecting the next pc with a conditional move makes every fetch wait for
//! the comparison and measured twice as slow. (A walk of binary-tree filters
//! over a separate node table, without the dispatcher, was measured too:
//! fewer instructions, but 1.5-2x slower than dispatching one op per
//! comparison on the shared VM, so it is not used.)
//!
//! Measured: see `crates/integration/benches/cbpf_interp.rs` (criterion,
//! side by side with rbpf 0.4's interpreter on the converted program) and
//! `cargo xtask callgrind` (instruction counts under callgrind).
//!
//! A long chain of distinct `jeq #k` exits (an allow-list, up to a few other
//! tests before it) runs as a lookup table indexed by `A` instead
//! (`Step::EqSet`, module `eq_set`): one load where the blocked scan
//! reads every block before the hit.
//!
//! A region of `jeq/jgt/jge #k` (through `ja`) that branches, at least
//! `chain::MIN_DEPTH` compares deep (libseccomp's `--opt 2` trees,
//! `optimize`'s output), runs from its root as one search of a sorted
//! breakpoint table (`Step::Tree`, module `tree`, `chain::RangeTrees`):
//! its outcome depends on `A` only through comparisons with its constants,
//! so it is constant between them. Exact by construction: each interval's
//! outcome is the walk of the region on one value of it. A tree of many
//! intervals also looks its small values (system call numbers) up
//! directly, one load instead of the search's dependent steps.
//!
//! A 32-bit argument ladder (Chromium's check that an argument is a 32-bit
//! value, zero- or sign-extended, before each of several `==`:
//! `chain::ladder`) runs from its first round as one op
//! (`Step::Ladder`, module `ladder`): the check once (its words do not
//! change between rounds), then the keys scanned.
//!
//! A separate, slower entry point ([`Interp::trace_seccomp`],
//! [`Interp::trace_socket`]) steps the raw instructions and reports each one
//! with `A`, `X` and `M[]` to a callback; it shares no dispatch code with the
//! fast path, so tests use each as a check on the other.

mod compile;
mod eq_set;
mod ladder;
mod tree;

use crate::exec::context::{Context, SeccompCtx, SocketCtx};
use crate::exec::{expect_mode, trace};
use crate::insn::Insn;
use crate::validate::{Mode, Program};

// The contexts, the trace step and the error, where users of this module
// have found them.
pub use crate::exec::trace::TraceStep;
pub use crate::exec::ExecError;
pub use crate::uapi::seccomp_data::{SeccompData, SECCOMP_DATA_SIZE};
pub use crate::uapi::skb::{NetDevice, Skb};

use compile::{Chains, Exit, Scans, Step, LEAVE, SAME_A};

/// A pre-decoded classic program, ready to run any number of times.
///
/// Built from a validated [`Program`] by [`Interp::new`]; runs never allocate.
// `repr(C)` with the chain table first: the run loop passes `&chains` to the
// out-of-line long-chain scan, and at offset 0 that is the `&self` it already
// holds (measured: elsewhere, its address is kept on the stack, two
// instructions per run).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct Interp {
    /// Exit tests of the compare chains ([`Step::Chain`]).
    chains: Chains,
    /// One operation per classic instruction, indexed by pc.
    ops: Box<[Step]>,
    /// The values of the `ret #k` that jumps go to; a jump to one goes past
    /// the ops (see [`compile::route_returns`]).
    rets: Box<[u32]>,
    /// The instructions as validated (`Program::insns()`), for tracing.
    insns: Box<[Insn]>,
    mode: Mode,
    /// Lookup tables of the long `jeq` chains ([`Step::EqSet`]).
    eq_sets: chain::EqSets,
    /// Breakpoint tables of the compare trees ([`Step::Tree`]), boxed so
    /// that an `Interp` stays small (engines hold one inline).
    trees: Box<chain::RangeTrees<u16>>,
    /// The 32-bit argument ladders ([`Step::Ladder`]), boxed as `trees`.
    ladders: Box<chain::ladder::Ladders<u16>>,
    /// Whether the program has a `st`/`stx` (without one it cannot have an
    /// `ld`/`ldx M[k]` either: `check_load_and_stores()` rejects reading a
    /// word never written), so that runs of other programs skip `M[]`.
    uses_mem: bool,
    /// Where a seccomp run starts (from op 0, `A` 0): in
    /// [`Interp::seccomp_entry`] or [`Interp::seccomp_entry_two`] when the
    /// first ops are ones they run and that pays ([`Entry`]), else straight
    /// in the loop for the program's `M[]` use. One indirect call, chosen
    /// once, rather than two tests a run.
    seccomp_runner: SeccompRunner,
    /// Which of those `seccomp_runner` is, for the listing.
    entry: Entry,
}

/// Where a seccomp run starts ([`Interp::seccomp_runner`]), chosen once
/// from the program's first ops ([`Entry::choose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// In [`Interp::seccomp_entry`], which runs the first op.
    One,
    /// In [`Interp::seccomp_entry_two`], which runs the first two.
    Two,
    /// In the run loop.
    Loop,
}

impl Entry {
    /// A tree's search mostly ends at a `ret` (the allowed and refused
    /// syscalls; `bpfconv optimize`'s and libseccomp's `--opt 2` filters),
    /// a chain only pays when all its exits do, or all but one or two
    /// among many ([`Entry::One`]; [`MAX_GOING_ON`]). An arch
    /// check that goes on to the syscall lookup (an allow-list's equality
    /// set, a tree it is not fused with: libseccomp's linear filters,
    /// OpenSSH's, docker_like_opt2's check of three arches) runs with the
    /// lookup ([`Entry::Two`]): in the loop, such a run pays for both
    /// functions' entries (callgrind: +5% on docker_like_opt2 when only the
    /// check ran outside it); with both ops outside, the mix of those
    /// filters is 8-16% faster. Anything else starts in the loop.
    fn choose(ops: &[Step], chains: &Chains) -> Entry {
        let ends = |pc: usize| pc >= ops.len();
        let ends_or_lookup =
            |pc: usize| ends(pc) || matches!(ops.get(pc), Some(Step::LdEqSet { .. } | Step::LdTree { .. }));
        match ops.first() {
            Some(Step::LdRangeTree { .. } | Step::RetK(_)) => Entry::One,
            Some(&(Step::LdRangeChain { from, .. } | Step::LdChain { from, .. })) => {
                let (returning, going_on) = compile::chain_exits(chains, usize::from(from), ends);
                if going_on == 0 || (going_on <= MAX_GOING_ON && returning >= RETURNING_PER_GOING_ON * going_on) {
                    Entry::One
                } else if compile::chain_ends_in(chains, usize::from(from), ends_or_lookup) {
                    Entry::Two
                } else {
                    Entry::Loop
                }
            }
            // `compile::ret_on_hit` has put the `ret` on the hit side.
            Some(&Step::LdRange { target, then, .. })
                if ends(usize::from(target)) && ends_or_lookup(usize::from(then)) =>
            {
                Entry::Two
            }
            _ => Entry::Loop,
        }
    }
}

/// A first chain with exits to ops still starts in [`Interp::seccomp_entry`]
/// when it has at most this many such exits and [`RETURNING_PER_GOING_ON`]
/// times as many that return: a short filter whose argument checks are on
/// one or two syscalls (libseccomp's s390x output: 18 exits return, one goes
/// on to `mprotect`'s checks), whose runs mostly end in the chain.
const MAX_GOING_ON: usize = 2;
/// See [`MAX_GOING_ON`].
const RETURNING_PER_GOING_ON: usize = 4;

/// [`Interp::seccomp_runner`]: a run of the program on the data, from op
/// `pc` with `A` = `a`.
type SeccompRunner = fn(&Interp, &[u8; SECCOMP_DATA_SIZE], usize, u32) -> u32;

impl Interp {
    /// Pre-decodes `program` (its [`Program::insns`], the form the kernel
    /// keeps after `seccomp_check_filter()`'s rewrites).
    pub fn new(program: &Program) -> Self {
        let insns = program.insns();
        // Where each jump really goes (`chain::known`), computed once for
        // the chains, the trees and the ladders.
        let threaded = compile::thread_jumps(insns);
        let code = compile::Classic { insns, threaded: &threaded };
        let (mut ops, mut chains) = compile::compile(&code);
        let mut trees = tree::build(&code, &mut ops);
        let mut ladders = ladder::build(&code, &mut ops);
        let routed = trees.outcomes_mut().chain(ladders.outcomes_mut());
        let rets = compile::route_returns(&mut ops, &mut chains, routed);
        compile::link_chains(&mut ops, &mut chains);
        let eq_sets = eq_set::build(&mut ops, &chains);
        tree::fuse_entries(&mut ops);
        compile::ret_on_hit(&mut ops);
        let uses_mem = ops.iter().any(|op| matches!(op, Step::St(_) | Step::Stx(_)));
        let (trees, ladders) = (Box::new(trees), Box::new(ladders));
        let entry = Entry::choose(&ops, &chains);
        let seccomp_runner: SeccompRunner = match (entry, uses_mem) {
            (Entry::One, _) => |interp, data, _, _| interp.seccomp_entry(data),
            (Entry::Two, _) => |interp, data, _, _| interp.seccomp_entry_two(data),
            (Entry::Loop, true) => Interp::seccomp_with_mem,
            (Entry::Loop, false) => Interp::seccomp_without_mem,
        };
        Interp {
            ops,
            chains,
            rets,
            insns: insns.into(),
            mode: program.mode(),
            eq_sets,
            trees,
            ladders,
            uses_mem,
            seccomp_runner,
            entry,
        }
    }

    /// The mode the program was validated for.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Number of classic instructions.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Always false: validated programs have at least one instruction.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The instructions this interpreter runs (`Program::insns()`).
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// The compare chains this interpreter runs, for tests and debugging:
    /// where a seccomp run starts (`start:`: in the run loop, or with its
    /// first op, or its first op and the syscall lookup behind it, outside
    /// the loop), each op that is a chain superinstruction (`pc: op`, its
    /// targets absolute, jumps to a `ret #k` shown as `ret K`), then every
    /// exit test of the chain table (`index: test -> where`; see
    /// `chain::Table::listing`). Programs without compare chains print
    /// just the headings.
    pub fn chain_listing(&self) -> String {
        let n = self.ops.len();
        let ret = |t: u16| self.rets.get(usize::from(t).wrapping_sub(n)).map(|k| format!("ret {k:#x}"));
        let pc = |t: u16| ret(t).unwrap_or_else(|| format!("pc {t}"));
        let mut out = format!(
            "start: {}\nops:\n",
            match self.entry {
                Entry::One => "op 0 outside the loop",
                Entry::Two => "ops 0 and its lookup outside the loop",
                Entry::Loop => "the loop",
            }
        );
        for (at, op) in self.ops.iter().enumerate() {
            let line = match *op {
                Step::Chain { from } => format!("chain @{from}"),
                Step::RangeChain { from } => format!("range chain @{from}"),
                Step::LongChain { from, to } => format!("long chain @{from}..{to}"),
                Step::LdChain { k, from } => format!("ld [{k}]; chain @{from}"),
                Step::LdRangeChain { k, from } => format!("ld [{k}]; range chain @{from}"),
                Step::LdAndChain { k, mask, from } => format!("ld [{k}]; and {mask:#x}; chain @{from}"),
                Step::LdAndTest { k, mask, index, then } => {
                    format!("ld [{k}]; and {mask:#x}; test @{index} else {}", pc(then))
                }
                Step::LdLongChain { k, from, to } => format!("ld [{k}]; long chain @{from}..{to}"),
                Step::EqSet { set, from, to, first } => {
                    format!("eq set #{set} @{from}..{to}{}", if first { ", first test first" } else { "" })
                }
                Step::LdEqSet { k, set, from, to, first } => {
                    format!("ld [{k}]; eq set #{set} @{from}..{to}{}", if first { ", first test first" } else { "" })
                }
                Step::Tree { tree } => format!("tree #{}", tree & !tree::DIRECT),
                Step::Ladder { hi, lo, ladder } => format!("ladder #{ladder} over [{hi}], [{lo}]"),
                Step::LdTree { k, tree } => format!("ld [{k}]; tree #{}", tree & !tree::DIRECT),
                Step::Test { index, then } => format!("test @{index} else {}", pc(then)),
                Step::LdTest { k, index, then } => format!("ld [{k}]; test @{index} else {}", pc(then)),
                Step::Range { from, lo, span, target, then } => {
                    let test = chain::ExitTest { mask: u32::MAX, lo, span };
                    format!("range @{from} ({test}) -> {} else {}", pc(target), pc(then))
                }
                Step::LdRange { k, from, lo, span, target, then } => {
                    let test = chain::ExitTest { mask: u32::MAX, lo, span };
                    format!("ld [{k}]; range @{from} ({test}) -> {} else {}", pc(target), pc(then))
                }
                Step::LdRangeTree { k, lo, span, target, tree_k, tree } => {
                    let test = chain::ExitTest { mask: u32::MAX, lo, span };
                    let tree = tree & !tree::DIRECT;
                    format!("ld [{k}]; range ({test}) -> {} else ld [{tree_k}]; tree #{tree}", pc(target))
                }
                _ => continue,
            };
            out.push_str(&format!("{at:4}: {line}\n"));
        }
        out.push_str("tests:\n");
        out.push_str(&self.chains.listing(|l| match (l.link, u16::try_from(l.target).ok().and_then(ret)) {
            (chain::Link::Leave, Some(r)) => r,
            _ => l.to_string(),
        }));
        if !self.trees.is_empty() {
            out.push_str("trees:\n");
            out.push_str(&self.trees.listing(pc));
        }
        if !self.ladders.is_empty() {
            out.push_str("ladders:\n");
            out.push_str(&self.ladders.listing(pc));
        }
        out
    }

    /// Runs a seccomp-mode program on `struct seccomp_data` bytes and returns
    /// the filter's 32-bit `SECCOMP_RET_*` value.
    ///
    /// Mirrors what `bpf_prog_run_pin_on_cpu()` computes with the converted
    /// program in `seccomp_run_filters()` (kernel/seccomp.c, Linux 6.18).
    ///
    /// # Deviations
    /// None.
    #[inline]
    pub fn run_seccomp(&self, data: &[u8; SECCOMP_DATA_SIZE]) -> Result<u32, ExecError> {
        expect_mode(self.mode, Mode::Seccomp)?;
        Ok((self.seccomp_runner)(self, data, 0, 0))
    }

    /// A seccomp run's first op, before the run loop: a filter's first op
    /// is its arch check, and on most inputs of most filters that op (with
    /// the syscall tree behind it, or the chains it links to) ends the run
    /// at a `ret`. Run here, in a function that keeps few registers, such a
    /// run returns without the loop's prologue and epilogue (six registers
    /// saved and restored) and its indirect dispatch; other runs go on in
    /// the loop from where the op left, with its `A`. The op's semantics
    /// are the loop's own (the same methods). Only programs whose first op
    /// is one of these start here ([`Interp::seccomp_runner`]).
    ///
    /// Mirrors what [`Interp::run_seccomp`] mirrors, for that op.
    ///
    /// # Deviations
    /// None.
    #[inline(never)]
    fn seccomp_entry(&self, data: &[u8; SECCOMP_DATA_SIZE]) -> u32 {
        let ctx = SeccompCtx(data);
        let mut a = 0;
        let pc = match self.ops.first() {
            // The search inlined: the loop keeps it out of line (see
            // `tree_exit`), here a call would make the function save the
            // registers live across it.
            Some(&Step::LdRangeTree { k, lo, span, target, tree_k, tree }) => {
                let search = |tree, a| tree::exit(&self.trees, tree, a);
                ld_range_tree(&ctx, &mut a, (k, lo, span, target), (tree_k, tree), search)
            }
            Some(&Step::LdRangeChain { k, from }) => self.entry_chain::<true>(&ctx, &mut a, k, from),
            Some(&Step::LdChain { k, from }) => self.entry_chain::<false>(&ctx, &mut a, k, from),
            Some(&Step::RetK(k)) => return k,
            _ => 0,
        };
        self.entry_leaves(data, pc, a)
    }

    /// [`Interp::seccomp_entry`] for programs whose first op (the arch
    /// check) goes on to the syscall lookup ([`Entry::Two`]): an
    /// allow-list's equality set or a syscall tree (`ld [0]` fused with
    /// either). Both ops run here, with the loop's own methods; a run that
    /// goes on from the lookup goes on in the loop.
    ///
    /// Mirrors what [`Interp::run_seccomp`] mirrors, for those ops.
    ///
    /// # Deviations
    /// None.
    #[inline(never)]
    fn seccomp_entry_two(&self, data: &[u8; SECCOMP_DATA_SIZE]) -> u32 {
        let ctx = SeccompCtx(data);
        let mut a = 0;
        let pc = match self.ops.first() {
            // `target` is a `ret` (the arch check's refusal, rare), returned
            // from here, so the test is a branch: as a select of the next
            // pc (measured: the run then slower than in the loop, with
            // fewer instructions) the second op's loads wait for the word's.
            Some(&Step::LdRange { k, lo, span, target, then, .. }) => {
                a = ctx.seccomp_word(u32::from(k));
                if a.wrapping_sub(lo) <= span {
                    return self.rets.get(usize::from(target).wrapping_sub(self.ops.len())).copied().unwrap_or(0);
                }
                usize::from(then)
            }
            Some(&Step::LdRangeChain { k, from }) => self.entry_chain::<true>(&ctx, &mut a, k, from),
            Some(&Step::LdChain { k, from }) => self.entry_chain::<false>(&ctx, &mut a, k, from),
            _ => 0,
        };
        let pc = match self.ops.get(pc) {
            Some(&Step::LdEqSet { k, set, from, first, .. }) => {
                a = ctx.seccomp_word(u32::from(k));
                let exit = self.eq_set_or_first(first, set, a, from);
                follow_links(&self.chains, &ctx, &mut a, exit)
            }
            Some(&Step::LdTree { k, tree }) => {
                a = ctx.seccomp_word(u32::from(k));
                tree::exit(&self.trees, tree, a)
            }
            _ => pc,
        };
        self.entry_leaves(data, pc, a)
    }

    /// The entries' first linked chain, a [`Step::LdRangeChain`]
    /// (`RANGES`) or [`Step::LdChain`] loading word `k`, from test `from`:
    /// where it leaves to, with `A`. Inlined into each entry.
    #[inline(always)]
    fn entry_chain<const RANGES: bool>(&self, ctx: &SeccompCtx<'_>, a: &mut u32, k: u8, from: u16) -> usize {
        *a = ctx.seccomp_word(u32::from(k));
        let exit = if RANGES {
            self.chains.short_ranges(*a, usize::from(from))
        } else {
            self.chains.short(*a, usize::from(from))
        };
        follow_links(&self.chains, ctx, a, exit)
    }

    /// Where an entry leaves a run at `pc` with `A` = `a`: a routed `ret`'s
    /// value, or on in the run loop from there.
    #[inline(always)]
    fn entry_leaves(&self, data: &[u8; SECCOMP_DATA_SIZE], pc: usize, a: u32) -> u32 {
        if let Some(ret) = pc.checked_sub(self.ops.len()) {
            return self.rets.get(ret).copied().unwrap_or(0);
        }
        if self.uses_mem {
            self.seccomp_with_mem(data, pc, a)
        } else {
            self.seccomp_without_mem(data, pc, a)
        }
    }

    /// The seccomp run loop from op `pc` with `A` = `a` (X and `M[]` 0),
    /// out of line and returning a bare `u32`: the `Result` is built by the
    /// inlined caller, so the loop keeps nothing live for it.
    #[inline(never)]
    fn seccomp_with_mem(&self, data: &[u8; SECCOMP_DATA_SIZE], pc: usize, a: u32) -> u32 {
        self.exec::<_, true>(&SeccompCtx(data), pc, a)
    }

    /// [`Interp::seccomp_with_mem`] for programs without `M[]`.
    #[inline(never)]
    fn seccomp_without_mem(&self, data: &[u8; SECCOMP_DATA_SIZE], pc: usize, a: u32) -> u32 {
        self.exec::<_, false>(&SeccompCtx(data), pc, a)
    }

    /// Runs a socket-mode program on a packet and returns the filter's value
    /// (for `SO_ATTACH_FILTER`, the number of bytes to keep; 0 drops).
    ///
    /// Mirrors the converted program of `bpf_migrate_filter()`
    /// (net/core/filter.c, Linux 6.18) with its load helpers; see [`Skb`] for
    /// the context model.
    ///
    /// # Deviations
    /// Those of the context model, documented on [`Skb`].
    pub fn run_socket(&self, skb: &Skb<'_>) -> Result<u32, ExecError> {
        expect_mode(self.mode, Mode::Socket)?;
        Ok(self.exec::<_, true>(&SocketCtx::new(skb), 0, 0))
    }

    /// Like [`Interp::run_seccomp`], calling `on_step` before each executed
    /// instruction with the machine state it starts from. Slow; for `--trace`.
    pub fn trace_seccomp(
        &self,
        data: &[u8; SECCOMP_DATA_SIZE],
        on_step: impl FnMut(&TraceStep),
    ) -> Result<u32, ExecError> {
        trace::seccomp_steps(self.mode, &self.insns, data, on_step)
    }

    /// Like [`Interp::run_socket`], calling `on_step` before each executed
    /// instruction with the machine state it starts from. Slow; for `--trace`.
    pub fn trace_socket(&self, skb: &Skb<'_>, on_step: impl FnMut(&TraceStep)) -> Result<u32, ExecError> {
        trace::socket_steps(self.mode, &self.insns, skb, on_step)
    }

    /// The fast path.
    ///
    /// Mirrors the classic semantics of SPEC §1.4 as realised by the
    /// converted program (`bpf_convert_filter()` in net/core/filter.c and
    /// `___bpf_prog_run()` in kernel/bpf/core.c, Linux 6.18): A and X start
    /// at 0; ALU is 32-bit wrapping; `div x`/`mod x` with X == 0 return 0;
    /// `lsh x`/`rsh x` shift by `X & 31` (eBPF ALU32 register shifts mask the
    /// count, in the interpreter and the x86-64 JIT alike); `M[]` is not
    /// zeroed by the kernel, but `check_load_and_stores()` makes that
    /// unobservable, so zeroing it here changes nothing. With `MEM` false
    /// (programs without stores, see [`Interp::uses_mem`]) `M[]` is not
    /// kept at all and its loads read 0, which such programs never execute.
    ///
    /// It starts at op `pc` with `A` = `a` (a run starts at 0 with 0;
    /// [`Interp::seccomp_entry`] goes on from where the first op left).
    ///
    /// # Deviations
    /// None.
    #[inline(always)]
    fn exec<C: Context, const MEM: bool>(&self, ctx: &C, mut pc: usize, mut a: u32) -> u32 {
        let ops = &*self.ops;
        let chains = &self.chains;
        let mut x: u32 = 0;
        let mut mem = [0u32; 16];
        // Every iteration moves pc strictly forward (validated jumps are
        // forward and in range, the last instruction is a ret), so the loop
        // ends within `ops.len()` iterations. A pc past the ops is a jump to
        // a `ret #k` (compile::route_returns); any other (impossible) pc
        // ends the run with 0.
        loop {
            let Some(op) = ops.get(pc) else {
                return self.rets.get(pc.wrapping_sub(ops.len())).copied().unwrap_or(0);
            };
            pc += 1;
            match *op {
                Step::LdImm(k) => a = k,
                Step::LdxImm(k) => x = k,
                Step::LdMem(i) => a = mem_get::<MEM>(&mem, i),
                Step::LdxMem(i) => x = mem_get::<MEM>(&mem, i),
                Step::St(i) => mem_set::<MEM>(&mut mem, i, a),
                Step::Stx(i) => mem_set::<MEM>(&mut mem, i, x),
                Step::LdSeccomp(k) => a = ctx.seccomp_word(k),
                Step::LdAbs { size, k } => match ctx.load(size as usize, k as i32) {
                    Some(v) => a = v,
                    None => return 0,
                },
                Step::LdInd { size, k } => match ctx.load(size as usize, x.wrapping_add(k) as i32) {
                    Some(v) => a = v,
                    None => return 0,
                },
                Step::LdLen => a = ctx.len(),
                Step::LdxLen => x = ctx.len(),
                Step::LdxMsh(k) => match ctx.load(1, k as i32) {
                    Some(v) => x = (v & 0xf) << 2,
                    None => return 0,
                },
                Step::Anc(which) => match ctx.ancillary(which, a, x) {
                    Some(v) => a = v,
                    None => return a,
                },
                Step::AddK(k) => a = a.wrapping_add(k),
                Step::AddX => a = a.wrapping_add(x),
                Step::SubK(k) => a = a.wrapping_sub(k),
                Step::SubX => a = a.wrapping_sub(x),
                Step::MulK(k) => a = a.wrapping_mul(k),
                Step::MulX => a = a.wrapping_mul(x),
                Step::DivK(k) => a /= k,
                Step::DivX => match a.checked_div(x) {
                    Some(v) => a = v,
                    None => return 0,
                },
                Step::ModK(k) => a %= k,
                Step::ModX => match a.checked_rem(x) {
                    Some(v) => a = v,
                    None => return 0,
                },
                Step::AndK(k) => a &= k,
                Step::AndX => a &= x,
                Step::OrK(k) => a |= k,
                Step::OrX => a |= x,
                Step::XorK(k) => a ^= k,
                Step::XorX => a ^= x,
                // K < 32 is guaranteed by bpf_check_classic(); X is masked.
                Step::LshK(k) => a = a.wrapping_shl(k),
                Step::LshX => a = a.wrapping_shl(x),
                Step::RshK(k) => a = a.wrapping_shr(k),
                Step::RshX => a = a.wrapping_shr(x),
                Step::Neg => a = a.wrapping_neg(),
                Step::Tax => x = a,
                Step::Txa => a = x,
                Step::Ja(target) => pc = usize::from(target),
                Step::JmpX { op, jt, jf } => {
                    pc = usize::from(if op.eval(a, x) { jt } else { jf });
                }
                // A chain op's exit may link on to further range chains
                // (compile::link_chains); follow_links ends at a pc.
                Step::Chain { from } => {
                    let exit = chains.short(a, usize::from(from));
                    pc = follow_links(chains, ctx, &mut a, exit);
                }
                Step::RangeChain { from } => {
                    let exit = chains.short_ranges(a, usize::from(from));
                    pc = follow_links(chains, ctx, &mut a, exit);
                }
                Step::LongChain { from, to } => {
                    let exit = chains.first_exit(a, usize::from(from), usize::from(to));
                    pc = follow_links(chains, ctx, &mut a, exit);
                }
                Step::LdChain { k, from } => {
                    a = ctx.seccomp_word(u32::from(k));
                    let exit = chains.short(a, usize::from(from));
                    pc = follow_links(chains, ctx, &mut a, exit);
                }
                Step::LdRangeChain { k, from } => {
                    a = ctx.seccomp_word(u32::from(k));
                    let exit = chains.short_ranges(a, usize::from(from));
                    pc = follow_links(chains, ctx, &mut a, exit);
                }
                Step::LdAndChain { k, mask, from } => {
                    a = ctx.seccomp_word(u32::from(k)) & mask;
                    let exit = chains.short(a, usize::from(from));
                    pc = follow_links(chains, ctx, &mut a, exit);
                }
                Step::LdAndTest { k, mask, index, then } => {
                    a = ctx.seccomp_word(u32::from(k)) & mask;
                    pc = match chains.single(a, usize::from(index)) {
                        Some(exit) => follow_links(chains, ctx, &mut a, exit),
                        None => usize::from(then),
                    };
                }
                Step::LdLongChain { k, from, to } => {
                    a = ctx.seccomp_word(u32::from(k));
                    let exit = chains.first_exit(a, usize::from(from), usize::from(to));
                    pc = follow_links(chains, ctx, &mut a, exit);
                }
                Step::EqSet { set, from, first, .. } => {
                    let exit = self.eq_set_or_first(first, set, a, from);
                    pc = follow_links(chains, ctx, &mut a, exit);
                }
                Step::LdEqSet { k, set, from, first, .. } => {
                    a = ctx.seccomp_word(u32::from(k));
                    let exit = self.eq_set_or_first(first, set, a, from);
                    pc = follow_links(chains, ctx, &mut a, exit);
                }
                Step::Tree { tree } => pc = Interp::tree_exit(std::hint::black_box(self), tree, a),
                Step::LdTree { k, tree } => {
                    a = ctx.seccomp_word(u32::from(k));
                    pc = Interp::tree_exit(std::hint::black_box(self), tree, a);
                }
                Step::Test { index, then } => {
                    pc = match chains.single(a, usize::from(index)) {
                        Some(exit) => follow_links(chains, ctx, &mut a, exit),
                        None => usize::from(then),
                    };
                }
                Step::LdTest { k, index, then } => {
                    a = ctx.seccomp_word(u32::from(k));
                    pc = match chains.single(a, usize::from(index)) {
                        Some(exit) => follow_links(chains, ctx, &mut a, exit),
                        None => usize::from(then),
                    };
                }
                Step::Range { lo, span, target, then, .. } => {
                    pc = if a.wrapping_sub(lo) <= span { usize::from(target) } else { usize::from(then) };
                }
                Step::LdRange { k, lo, span, target, then, .. } => {
                    a = ctx.seccomp_word(u32::from(k));
                    pc = if a.wrapping_sub(lo) <= span { usize::from(target) } else { usize::from(then) };
                }
                Step::LdRangeTree { k, lo, span, target, tree_k, tree } => {
                    let search = |tree, a| Interp::tree_exit(std::hint::black_box(self), tree, a);
                    pc = ld_range_tree(ctx, &mut a, (k, lo, span, target), (tree_k, tree), search);
                }
                Step::Ladder { hi, lo, ladder } => {
                    let (hi, lo) = (ctx.seccomp_word(u32::from(hi)), ctx.seccomp_word(u32::from(lo)));
                    (pc, a) = Interp::ladder_exit(std::hint::black_box(self), ladder, hi, lo);
                }
                Step::RetK(k) => return k,
                Step::RetA => return a,
            }
        }
    }
}

/// [`Step::LdRangeTree`]: load word `k`; in `lo..=lo + span` it goes to
/// `target`, else word `tree_k` is searched in `tree` by `search` (the run
/// loop's out-of-line [`Interp::tree_exit`], or [`tree::exit`] inlined).
#[inline(always)]
fn ld_range_tree<C: Context>(
    ctx: &C,
    a: &mut u32,
    (k, lo, span, target): (u8, u32, u32, u16),
    (tree_k, tree): (u8, u16),
    search: impl FnOnce(u16, u32) -> usize,
) -> usize {
    *a = ctx.seccomp_word(u32::from(k));
    if a.wrapping_sub(lo) <= span {
        usize::from(target)
    } else {
        *a = ctx.seccomp_word(u32::from(tree_k));
        search(tree, *a)
    }
}

impl Interp {
    /// [`eq_set::exit`] out of line, from `&self` (which the run
    /// loop holds anyway): inlined, or given `&self.eq_sets`, the loop would
    /// load or keep the tables' address up front on every run (measured:
    /// 3 to 8 more instructions a run on every filter).
    #[inline(never)]
    fn eq_set_exit(&self, set: u16, a: u32, from: u16) -> &Exit {
        eq_set::exit(&self.eq_sets, &self.chains, set, a, from)
    }
}

impl Interp {
    /// Where an eq-set op leaves for `a`: with `first` (a table whose
    /// constants repeat: OpenSSH's `nr == futex` once per futex op, each
    /// miss of an argument check coming back to a chain that starts with
    /// that `nr` again), its first test is tried before the table. Such a
    /// hit leaves without the lookup's call and its chain of dependent
    /// loads (measured: sshd_preauth's deepest input 85 -> 63 ns), and the
    /// allow-lists, whose first test a number rarely hits, keep the plain
    /// lookup.
    #[inline(always)]
    fn eq_set_or_first(&self, first: bool, set: u16, a: u32, from: u16) -> &Exit {
        if first {
            if let Some(exit) = self.chains.single(a, usize::from(from)) {
                return exit;
            }
        }
        self.eq_set_exit(set, a, from)
    }
}

impl Interp {
    /// [`ladder::exit`] out of line, from `&self`, as
    /// [`Interp::tree_exit`].
    #[inline(never)]
    fn ladder_exit(&self, ladder: u16, hi: u32, lo: u32) -> (usize, u32) {
        ladder::exit(&self.ladders, ladder, hi, lo)
    }
}

impl Interp {
    /// [`tree::exit`] out of line, from `&self`, as [`Interp::eq_set_exit`].
    /// Its callers pass `self` through `black_box`: otherwise the compiler
    /// hands it the tree tables' pointer instead, loaded once before the run
    /// loop and kept on the stack, two instructions on every run of every
    /// filter, trees or not (callgrind: seed_fast 122 → 124).
    #[inline(never)]
    fn tree_exit(&self, tree: u16, a: u32) -> usize {
        tree::exit(&self.trees, tree, a)
    }
}

/// Where a chain's `exit` finally leaves to: while the exit links to a
/// range chain (see [`compile::link_chains`]), load `A` if the link says so
/// and scan that chain. Links only go forward in the program, so this ends.
#[inline(always)]
fn follow_links<'c, C: Context>(chains: &'c Chains, ctx: &C, a: &mut u32, mut exit: &'c Exit) -> usize {
    while exit.link < LEAVE {
        if exit.link < SAME_A {
            *a = ctx.seccomp_word(u32::from(exit.link));
        }
        exit = chains.short_ranges(*a, usize::from(exit.target));
    }
    usize::from(exit.target)
}

/// `M[i]`; 0 when `M[]` is not kept (`MEM` false, never executed then).
#[inline(always)]
fn mem_get<const MEM: bool>(mem: &[u32; 16], i: u8) -> u32 {
    // i < 16 by bpf_check_classic(); the mask makes the index provably in range.
    #[allow(clippy::indexing_slicing)]
    if MEM {
        mem[usize::from(i & 15)]
    } else {
        0
    }
}

/// `M[i] = v`; nothing when `M[]` is not kept (`MEM` false, never executed
/// then). Without reads or writes the compiler drops `M[]` and its zeroing.
#[inline(always)]
fn mem_set<const MEM: bool>(mem: &mut [u32; 16], i: u8, v: u32) {
    // i < 16 by bpf_check_classic(); the mask makes the index provably in range.
    #[allow(clippy::indexing_slicing)]
    if MEM {
        mem[usize::from(i & 15)] = v;
    }
}
