//! The executor's run loop ([`SeccompProg::run`]): A, TMP and X in
//! locals, context words read straight from the 64-byte array, chains
//! scanned and their links followed without going back to the dispatcher.

use crate::abi::error::ExecError;
use crate::isa::insn::Pc;
use crate::isa::op::AluOp;

use super::chains::{ChainExit, Chains, LinkedTest, Scans, NOT_RET, SAME};
use super::ops::{cond_of, Kind, SOp, RA, RK, RT};
use super::{ChainTables, Runner, SeccompProg};

/// ALU32 operation `op` (its index in [`AluOp::ALL`]) on the low halves,
/// zero-extended: [`AluOp::eval32`].
#[inline(always)]
fn alu32(op: u8, d: u64, v: u64) -> u64 {
    AluOp::ALL.get(usize::from(op)).map_or(d, |o| u64::from(o.eval32(d as u32, v as u32)))
}

/// Context word `w` (0..16) of the 64-byte `struct seccomp_data`, read
/// little-endian like every load of the general interpreter.
#[inline(always)]
#[allow(clippy::indexing_slicing)] // i = (w & 15) * 4 <= 60, so i + 3 < 64
pub(super) fn word(data: &[u8; 64], w: u8) -> u64 {
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

    /// An uncounted run's first op, before the run loop, for programs whose
    /// first op mostly ends the run (chosen at load): the architecture check
    /// fused with the syscall tree ([`Kind::LdMovJneTree`]: libseccomp's
    /// `--opt 2` filters, Chromium's, `bpfconv optimize`'s), or a linked
    /// chain whose every exit, through its links, is a `w0 = K; exit`
    /// ([`Kind::LdLinked`]: a short filter's arch check and rule). Here, in
    /// a function that keeps few registers, such a run returns without the
    /// loop's prologue and epilogue and its dispatch; any other goes on in
    /// the loop ([`SeccompProg::resume_uncounted`]) from where the op left,
    /// with its r0 and TMP. The op's effects are the loop's arms' (the same
    /// scans and tree search). `TREE`: the program starts with
    /// the fused tree, else with the linked chain (one function each, so
    /// that neither keeps the other's registers).
    ///
    /// Mirrors `___bpf_prog_run()` in kernel/bpf/core.c (Linux 6.18), as
    /// [`SeccompProg::run`] does.
    ///
    /// # Deviations
    /// Those of [`SeccompProg::run`].
    #[inline(never)]
    pub(super) fn run_entry<const TREE: bool>(&self, data: &[u8; 64]) -> (u64, u64) {
        let chains = &self.chains.table;
        let start = self.start as usize;
        // `Start::choose` chose this function for the first op's kind,
        // `LdMovJneTree` (TREE) or `LdLinked`: not asked again here.
        let Some(op) = self.uncounted_ops.get(start) else { return (self.resume_uncounted)(self, data, start, 0, 0) };
        debug_assert_eq!(op.kind, if TREE { Kind::LdMovJneTree } else { Kind::LdLinked });
        let (mut a, t, exit) = if TREE {
            let (a, t) = (word(data, op.aux), u64::from(op.imm as u32));
            if a != t {
                return (self.resume_uncounted)(self, data, op.target as usize, a, t);
            }
            let a = word(data, op.src);
            (a, t, &self.chains.trees.exit::<false>((op.imm >> 32) as u32, a as u32))
        } else {
            let a = word(data, op.aux);
            (a, 0, chains.linked_exit(a as u32, op.target as usize))
        };
        let exit = follow_links(chains, data, &mut a, exit);
        self.entry_leaves(data, exit, a, t)
    }

    /// Where an entry leaves a run at chain exit `exit` (its links
    /// followed) with r0 = `a` and TMP = `t`: the `ret` it is, or on in the
    /// loop from its target.
    #[inline(always)]
    fn entry_leaves(&self, data: &[u8; 64], exit: &ChainExit, a: u64, t: u64) -> (u64, u64) {
        if exit.ret != NOT_RET {
            return (exit.ret, 1);
        }
        (self.resume_uncounted)(self, data, exit.target as usize, a, t)
    }

    /// An uncounted run of a program whose first op is its `w0 = K; exit`
    /// ([`Kind::RetImm`]: a constant filter, `ret #K` converted): `K`,
    /// without the loop's prologue and dispatch, as the classic
    /// interpreter's entry returns its first `ret #k`.
    ///
    /// Mirrors `___bpf_prog_run()` in kernel/bpf/core.c (Linux 6.18) on
    /// `BPF_ALU | BPF_MOV | BPF_K` then `BPF_JMP | BPF_EXIT`.
    ///
    /// # Deviations
    /// Those of [`SeccompProg::run`].
    #[inline(never)]
    pub(super) fn run_constant(&self, data: &[u8; 64]) -> (u64, u64) {
        let start = self.start as usize;
        // Chosen for a first op that is `RetImm` (`Start::choose`).
        match self.uncounted_ops.get(start) {
            Some(op) => {
                debug_assert_eq!(op.kind, Kind::RetImm);
                (op.imm, 1)
            }
            None => (self.resume_uncounted)(self, data, start, 0, 0),
        }
    }

    /// [`SeccompProg::run_entry`] for programs whose first op (the arch
    /// check) goes on to the syscall tree ([`Kind::LdTree`]) without being
    /// fused with it: a linked chain over several arches (docker_like_opt2),
    /// or a `LdMovJeq` whose hit is the tree. Both ops run here (chosen at
    /// load: [`Start::choose`]). The arch check's other side (a refusal, rare)
    /// goes on in the loop, as a branch: a select of the next pc would make
    /// the tree's loads wait for the word's. `LINKED`: the first op is the
    /// linked chain (one function per shape, as [`SeccompProg::run_entry`]).
    /// Programs whose arch check goes on to an equality set
    /// ([`Kind::LdEqSet`]) stay in the loop: there the set's exits end the
    /// run without the dispatcher, and a function of their own measured no
    /// faster (callgrind: 3-10% more instructions).
    ///
    /// Mirrors `___bpf_prog_run()` in kernel/bpf/core.c (Linux 6.18), as
    /// [`SeccompProg::run`] does.
    ///
    /// # Deviations
    /// Those of [`SeccompProg::run`].
    #[inline(never)]
    pub(super) fn run_entry_two<const LINKED: bool>(&self, data: &[u8; 64]) -> (u64, u64) {
        let ops = &self.uncounted_ops[..];
        let chains = &self.chains.table;
        let start = self.start as usize;
        // `Start::choose` chose this function for the first op's kind,
        // `LdLinked` (LINKED) or `LdMovJeq`, and for where it goes on: a
        // `LdTree` (or a `ret`, for the linked chain's exits). Neither is
        // asked again here.
        let Some(op) = ops.get(start) else { return (self.resume_uncounted)(self, data, start, 0, 0) };
        debug_assert_eq!(op.kind, if LINKED { Kind::LdLinked } else { Kind::LdMovJeq });
        let (mut a, t, pc) = if LINKED {
            let mut a = word(data, op.aux);
            let first = chains.linked_exit(a as u32, op.target as usize);
            let exit = follow_links(chains, data, &mut a, first);
            if exit.ret != NOT_RET {
                return (exit.ret, 1);
            }
            (a, 0, exit.target as usize)
        } else {
            let (a, t) = (word(data, op.aux), op.imm);
            // The lookup is on the hit's side, where the word is the arch.
            if a != t {
                return (self.resume_uncounted)(self, data, start + 3, a, t);
            }
            (a, t, op.target as usize)
        };
        let Some(tree) = ops.get(pc) else { return (self.resume_uncounted)(self, data, pc, a, t) };
        debug_assert_eq!(tree.kind, Kind::LdTree);
        a = word(data, tree.aux);
        let exit = self.chains.trees.exit::<false>(tree.target, a as u32);
        let exit = follow_links(chains, data, &mut a, &exit);
        self.entry_leaves(data, exit, a, t)
    }

    /// [`SeccompProg::run`] with a local stack of `SLOTS` words: 16, or 0
    /// when the program has no stack access (the stack arms are then never
    /// reached and the array costs nothing). Never inlined: as a function
    /// of its own it keeps A, X, TMP, `pc` and the op table in registers
    /// instead of sharing the register budget of its caller. Returns
    /// `(r0, executed)` (`(r0, 1)` without `COUNT`), or `(pc, 0)` if it fell
    /// off the end (unreachable: a run executes at least its `exit`); two
    /// registers, not a `Result` in memory. `LINKS`: the program has linked
    /// chains; `MASKED`: among them masked ones ([`Kind::MaskedLinked`]),
    /// a loop of its own so that the others keep theirs.
    #[inline(never)]
    pub(super) fn run_with<const SLOTS: usize, const COUNT: bool, const LINKS: bool, const MASKED: bool>(
        &self,
        data: &[u8; 64],
    ) -> (u64, u64) {
        self.run_loop::<SLOTS, COUNT, LINKS, MASKED>(data, self.start as usize, 0, 0)
    }

    /// [`SeccompProg::run_with`] from pc `pc` with r0 = `a` and TMP = `t`
    /// (uncounted): where [`SeccompProg::run_entry`] goes on. A copy of the
    /// loop of its own, so that the runs that start at the start do not
    /// pass the three (measured: 2 to 5 instructions a run).
    #[inline(never)]
    pub(super) fn run_from<const SLOTS: usize, const LINKS: bool, const MASKED: bool>(
        &self,
        data: &[u8; 64],
        pc: usize,
        a: u64,
        t: u64,
    ) -> (u64, u64) {
        self.run_loop::<SLOTS, false, LINKS, MASKED>(data, pc, a, t)
    }

    /// The run loop of [`SeccompProg::run_with`] and
    /// [`SeccompProg::run_from`].
    #[inline(always)]
    fn run_loop<const SLOTS: usize, const COUNT: bool, const LINKS: bool, const MASKED: bool>(
        &self,
        data: &[u8; 64],
        mut pc: usize,
        mut a: u64,
        mut t: u64,
    ) -> (u64, u64) {
        let ops = if COUNT { &self.ops[..] } else { &self.uncounted_ops[..] };
        let tables = &self.chains;
        let chains = &tables.table;
        let entries = &self.entries[..];
        let mut x = 0u64;
        let mut stack = [0u32; SLOTS];
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
        // The linked chain from test `$from` (skip count `$base` at its
        // entry), scanned by `$scan` ([`Scans::linked_exit`], or
        // [`Scans::masked_linked_exit`] in loops that have such ops: `$in_loop`).
        macro_rules! linked {
            ($from:expr, $base:expr, $scan:ident, $in_loop:expr) => {{
                if !$in_loop {
                    // Unreachable: linked-chain ops exist only with links,
                    // masked ones only in the loop made for them.
                    return (pc as u64, 0);
                }
                if COUNT {
                    skipped = skipped.wrapping_sub($base as usize);
                }
                let exit = chains.$scan(a as u32, $from as usize);
                linked_follow!(exit)
            }};
        }
        // The chain of eq-set op `$op` ([`Kind::EqSet`]): one lookup, then
        // on where its exit leaves to.
        macro_rules! eq_set {
            ($op:expr) => {{
                let op = $op;
                if COUNT {
                    skipped = skipped.wrapping_sub(op.imm as u32 as usize);
                }
                let exit = eq_set_exit(tables, op, a as u32);
                if LINKS {
                    linked_follow!(exit)
                }
                leave!(exit)
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
                    jcc!(get!(op.dst), v, op.target, |l, r| cond_of(op.aux).eval(l, r))
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
                Kind::Linked => linked!(op.target, op.imm, linked_exit, LINKS),
                Kind::LdLinked => {
                    a = word(data, op.aux);
                    linked!(op.target, op.imm, linked_exit, LINKS)
                }
                Kind::MaskedLinked => linked!(op.target, op.imm, masked_linked_exit, LINKS && MASKED),
                Kind::LdMaskedLinked => {
                    a = word(data, op.aux);
                    linked!(op.target, op.imm, masked_linked_exit, LINKS && MASKED)
                }
                Kind::EqSet => eq_set!(op),
                // One arm for both (one copy of `follow!`'s code in the loop).
                Kind::Tree | Kind::LdTree => {
                    if op.kind == Kind::LdTree {
                        a = word(data, op.aux);
                    }
                    let exit = tree_exit::<COUNT>(tables, op.target, a as u32);
                    follow!(exit)
                }
                Kind::LdEqSet => {
                    a = word(data, op.aux);
                    eq_set!(op)
                }
                Kind::LdAndJcc => {
                    a = word(data, op.aux) & (op.imm >> 32);
                    pc += 2;
                    jcc!(a, op.imm & u64::from(u32::MAX), op.target, |l, r| cond_of(op.src).eval(l, r))
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
                Kind::Ladder => {
                    let (hi, lo) = (word(data, op.aux) as u32, word(data, op.src) as u32);
                    let exit;
                    (exit, a) = ladder_exit::<COUNT>(tables, op.target, hi, lo);
                    leave!(exit)
                }
                Kind::LdMovJneTree => {
                    a = word(data, op.aux);
                    t = u64::from(op.imm as u32);
                    pc += 2;
                    if a != t {
                        jump!(op.target)
                    }
                    // The fall-through: the tree's load, as its own op
                    // (a count needs no pc: the exit's own skip counts).
                    a = word(data, op.src);
                    let exit = tree_exit::<COUNT>(tables, (op.imm >> 32) as u32, a as u32);
                    follow!(exit)
                }
            }
            pc += 1;
        }
    }
}

/// What an eq-set lookup that cannot happen returns: an exit past every
/// program ([`ChainExit::NOWHERE`]).
static NOWHERE_TEST: LinkedTest = LinkedTest { exit: ChainExit::NOWHERE, lo: 0, span: u32::MAX, mask: 0, _pad: 0 };

/// Where eq-set op `op` ([`Kind::EqSet`]: table `imm >> 32` from test
/// `target`) leaves for `x` ([`chain::EqSets::exit`]). Out of line, as
/// `cbpf::interp`'s, and from the chain tables the loop holds anyway:
/// inlined, or given `&self`, the loop would keep one more pointer live on
/// every run (measured: 3 more instructions a run without eq sets).
#[inline(never)]
fn eq_set_exit<'t>(tables: &'t ChainTables, op: &SOp, x: u32) -> &'t ChainExit {
    let (set, from) = ((op.imm >> 32) as u16, op.target as usize);
    &tables.eq_sets.exit(&tables.table, set, x, from, &NOWHERE_TEST).exit
}

/// Where ladder `ladder` ([`Kind::Ladder`]) leaves for the words `hi` and
/// `lo`, and r0 there ([`super::ladders::Ladders::exit`]). Out of line, as
/// [`tree_exit`].
#[inline(never)]
fn ladder_exit<const COUNT: bool>(tables: &ChainTables, ladder: u32, hi: u32, lo: u32) -> (ChainExit, u64) {
    super::ladders::exit::<COUNT>(&tables.ladders, ladder, hi, lo)
}

/// Where tree `tree` ([`Kind::Tree`]) leaves for `x`, its count from the
/// tree's root exact when `COUNT` ([`super::trees::Trees::exit`]). Out of
/// line and from the chain tables, as [`eq_set_exit`], so that programs
/// without trees keep their run loop.
#[inline(never)]
fn tree_exit<const COUNT: bool>(tables: &ChainTables, tree: u32, x: u32) -> ChainExit {
    tables.trees.exit::<COUNT>(tree, x)
}

/// Where linked exit `exit` leaves to, its links followed (r0 reloaded where
/// a link says so): the loop's `linked_follow!`, uncounted, for the entries.
#[inline(always)]
fn follow_links<'t>(chains: &'t Chains, data: &[u8; 64], a: &mut u64, mut exit: &'t ChainExit) -> &'t ChainExit {
    while exit.links() {
        if exit.ret != SAME {
            *a = word(data, exit.ret as u8);
        }
        exit = chains.linked_exit(*a as u32, exit.target as usize);
    }
    exit
}

/// Where an uncounted run starts ([`SeccompProg::runner_uncounted`]),
/// chosen at load from the program's first ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// In [`SeccompProg::run_entry`], which runs the first op: the arch
    /// check fused with the syscall tree, or a linked chain whose every
    /// exit is a `ret`.
    First,
    /// In [`SeccompProg::run_entry_two`], which runs the first two: an
    /// arch check (`LdMovJeq`) whose hit is a [`Kind::LdTree`], or a linked
    /// chain whose exits all return or reach one. (An `LdMovJne` falling
    /// through to a tree is fused with it at load: [`Kind::LdMovJneTree`],
    /// [`Start::First`].)
    FirstTwo,
    /// In [`SeccompProg::run_constant`]: the first op is the `ret`.
    Constant,
    /// In the run loop.
    Loop,
}

impl Start {
    /// Where a run of `ops` (uncounted, first pc `start`) starts, and the
    /// function that starts it there (`None`: the loop's).
    pub(super) fn choose(ops: &[SOp], start: usize, chains: &Chains) -> (Start, Option<Runner>) {
        let is = |pc: usize, kind: Kind| ops.get(pc).is_some_and(|o| o.kind == kind);
        let every_exit = |from: u32, ends: &dyn Fn(usize) -> bool| {
            chains.every_exit(from as usize, |l| {
                matches!(l.link, chain::Link::Return(_)) || usize::try_from(l.target).is_ok_and(ends)
            })
        };
        let Some(first) = ops.get(start) else { return (Start::Loop, None) };
        match first.kind {
            Kind::RetImm => (Start::Constant, Some(SeccompProg::run_constant)),
            Kind::LdMovJneTree => (Start::First, Some(SeccompProg::run_entry::<true>)),
            Kind::LdLinked if every_exit(first.target, &|_| false) => {
                (Start::First, Some(SeccompProg::run_entry::<false>))
            }
            Kind::LdLinked if every_exit(first.target, &|pc| is(pc, Kind::LdTree)) => {
                (Start::FirstTwo, Some(SeccompProg::run_entry_two::<true>))
            }
            Kind::LdMovJeq if is(first.target as usize, Kind::LdTree) => {
                (Start::FirstTwo, Some(SeccompProg::run_entry_two::<false>))
            }
            _ => (Start::Loop, None),
        }
    }
}
