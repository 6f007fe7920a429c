//! Bytecode passes over the laid-out program, after `layout`.
//!
//! gVisor's `pkg/bpf` optimiser (`optimizer.go`) rewrites a finished
//! program with eight passes until none changes it. Most of what they
//! find, our layout never produces, because it is built from a partition
//! rather than rewritten from a filter; the rest is here. Measured
//! against its list:
//!
//! | gVisor pass | here |
//! |---|---|
//! | conditional jump to a `ja` retargeted (`optimizeConditionalJumps`) | [`thread_jumps`]: the layout adds a `ja` landing only for a target past 255, so this finds landings that deletions brought back in reach |
//! | `ja` to a `ja` (`optimizeUnconditionalJumps`) | [`thread_jumps`] |
//! | `ja` to a `ret` becomes the `ret` (`optimizeJumpsToReturn`) | [`thread_jumps`]; the layout already lands far jumps to a constant on a copy of its `ret`, never on a `ja` |
//! | same-target conditional jump becomes `ja` (`optimizeSameTargetConditionalJumps`) | not run: the layout never emits one (neighbouring ranges with one outcome are merged, a plan's leaves differ), and the specialiser turns such jumps into gotos |
//! | `ja 0` removed (`removeZeroInstructionJumps`) | [`remove`] drops them after every deletion |
//! | unreachable code removed (`removeDeadCode`) | [`dead_code`]: the layout emits only what some range reaches; threading can orphan a landing |
//! | a load of what A already holds removed (`removeRedundantLoads`, on a single-predecessor chain) | [`redundant_loads`]: on every path into the load (a forward data flow), so also where a tree's child switch or residual reloads the word its parent tested |
//! | returns merged to the fewest copies in reach (`optimizeJumpsToSmallestSetOfReturns`) | not run: the layout shares one `ret` per value while it is in reach and copies it only past 255 (`layout`'s landings) |
//!
//! gVisor's rule optimiser (`pkg/seccomp`'s `seccomp_optimizer.go`)
//! works on rules before code: flattening `Or`/`And`, dropping
//! duplicates and match-alls, and factoring an argument matcher repeated
//! across every branch of an `Or` out of it (`extractRepeatedMatchers`).
//! The trees do the last on the filter itself: identical residuals are
//! one node, so a check several rules share is tested once
//! ([`seccomp::fast::tree`]).
//!
//! Every pass keeps each instruction's meaning on every path; the whole
//! output is still validated, checked against the kernel's cache and
//! proved equal by `equiv` afterwards.

use cbpf::opcode::JMP_JA;
use cbpf::{Insn, Op, Size};

/// What the passes did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PassStats {
    /// Jumps retargeted past a `ja` (or a `ja` made the `ret` it reached).
    pub threaded: usize,
    /// Unreachable instructions (and `ja 0`) removed.
    pub dead: usize,
    /// Loads of what A already held removed.
    pub redundant_loads: usize,
}

/// Longest conditional jump.
const MAX_COND: usize = u8::MAX as usize;

/// Runs the passes until none changes the program (at most a few rounds:
/// each round only shortens it).
pub fn run(insns: &mut Vec<Insn>) -> PassStats {
    let mut stats = PassStats::default();
    for _ in 0..8 {
        let round = PassStats {
            threaded: thread_jumps(insns),
            redundant_loads: redundant_loads(insns),
            dead: dead_code(insns),
        };
        stats.threaded += round.threaded;
        stats.redundant_loads += round.redundant_loads;
        stats.dead += round.dead;
        if round == PassStats::default() {
            break;
        }
    }
    stats
}

/// Where control goes from `pc` (forward jumps only, as validated).
fn successors(insns: &[Insn], pc: usize) -> [Option<usize>; 2] {
    match insns.get(pc).and_then(|i| i.op()) {
        Some(Op::RetK { .. } | Op::RetA) => [None, None],
        Some(Op::Ja { k }) => [Some(pc + 1 + k as usize), None],
        Some(Op::Jmp { jt, jf, .. }) => [Some(pc + 1 + usize::from(jt)), Some(pc + 1 + usize::from(jf))],
        _ => [Some(pc + 1), None],
    }
}

/// Follows `ja`s from `pc` to where control really goes.
fn through_ja(insns: &[Insn], mut pc: usize) -> usize {
    // Forward jumps only: at most `len` steps.
    for _ in 0..insns.len() {
        match insns.get(pc).and_then(|i| i.op()) {
            Some(Op::Ja { k }) => pc += 1 + k as usize,
            _ => break,
        }
    }
    pc
}

/// Conditional jumps and `ja`s that reach a `ja` go where it goes (a
/// conditional one only within its 255); a `ja` that reaches a `ret`
/// becomes that `ret`. Returns the jumps changed.
pub fn thread_jumps(insns: &mut [Insn]) -> usize {
    let mut changed = 0;
    for pc in 0..insns.len() {
        let Some(insn) = insns.get(pc).copied() else { continue };
        match insn.op() {
            Some(Op::Ja { k }) => {
                let to = through_ja(insns, pc + 1 + k as usize);
                let new = match insns.get(to).and_then(|i| i.op()) {
                    Some(Op::RetK { .. } | Op::RetA) => insns.get(to).copied(),
                    _ if to != pc + 1 + k as usize => Some(Insn::stmt(JMP_JA, (to - pc - 1) as u32)),
                    _ => None,
                };
                if let (Some(new), Some(slot)) = (new, insns.get_mut(pc)) {
                    *slot = new;
                    changed += 1;
                }
            }
            Some(Op::Jmp { jt, jf, .. }) => {
                let retarget = |off: u8| {
                    let to = through_ja(insns, pc + 1 + usize::from(off));
                    let dist = to - pc - 1;
                    (dist <= MAX_COND && dist != usize::from(off)).then_some(dist as u8)
                };
                let (t, f) = (retarget(jt), retarget(jf));
                if let Some(slot) = insns.get_mut(pc) {
                    if let Some(t) = t {
                        slot.jt = t;
                        changed += 1;
                    }
                    if let Some(f) = f {
                        slot.jf = f;
                        changed += 1;
                    }
                }
            }
            _ => {}
        }
    }
    changed
}

/// Removes instructions no path from the first reaches, and `ja 0`.
/// Returns how many.
pub fn dead_code(insns: &mut Vec<Insn>) -> usize {
    let mut reached = vec![false; insns.len()];
    if let Some(first) = reached.first_mut() {
        *first = true;
    }
    for pc in 0..insns.len() {
        if !reached.get(pc).copied().unwrap_or(false) {
            continue;
        }
        for to in successors(insns, pc).into_iter().flatten() {
            if let Some(r) = reached.get_mut(to) {
                *r = true;
            }
        }
    }
    let gone: Vec<bool> =
        insns.iter().zip(&reached).map(|(i, &r)| !r || matches!(i.op(), Some(Op::Ja { k: 0 }))).collect();
    remove(insns, &gone)
}

/// What A holds, for [`redundant_loads`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AHolds {
    /// Nothing reaches here yet.
    Nothing,
    /// The `struct seccomp_data` word at this offset, unchanged.
    Word(u32),
    /// Anything else.
    Other,
}

impl AHolds {
    fn join(self, other: AHolds) -> AHolds {
        match (self, other) {
            (AHolds::Nothing, x) | (x, AHolds::Nothing) => x,
            (a, b) if a == b => a,
            _ => AHolds::Other,
        }
    }
}

/// Removes each `ld [k]` that every path reaches with A already holding
/// word `k` (only conditional jumps and `ja` between, which leave A as it
/// is). Returns how many.
pub fn redundant_loads(insns: &mut Vec<Insn>) -> usize {
    let mut at = vec![AHolds::Nothing; insns.len()];
    if let Some(first) = at.first_mut() {
        // A is 0 at entry: no word.
        *first = AHolds::Other;
    }
    let mut gone = vec![false; insns.len()];
    for pc in 0..insns.len() {
        let here = at.get(pc).copied().unwrap_or(AHolds::Nothing);
        if here == AHolds::Nothing {
            continue;
        }
        let op = insns.get(pc).and_then(|i| i.op());
        let after = match op {
            Some(Op::LdAbs { size: Size::W, k }) => {
                if here == AHolds::Word(k) {
                    if let Some(g) = gone.get_mut(pc) {
                        *g = true;
                    }
                }
                AHolds::Word(k)
            }
            Some(Op::LdxAbsSeccomp { k }) => AHolds::Word(k),
            // Jumps, X loads, `tax` and stores leave A as it is.
            Some(op) if !op.writes_a() => here,
            _ => AHolds::Other,
        };
        for to in successors(insns, pc).into_iter().flatten() {
            if let Some(slot) = at.get_mut(to) {
                *slot = slot.join(after);
            }
        }
    }
    remove(insns, &gone)
}

/// Deletes the instructions marked in `gone`, relinking every jump (a
/// jump to a deleted instruction goes to the next one kept; distances only
/// shrink). Returns how many were deleted.
pub fn remove(insns: &mut Vec<Insn>, gone: &[bool]) -> usize {
    let count = gone.iter().filter(|&&g| g).count();
    if count == 0 {
        return 0;
    }
    // new_index[pc]: the instructions kept before pc, which is where the
    // first kept instruction at or after pc lands (for pc = len, past the
    // end).
    let mut new_index = Vec::with_capacity(insns.len() + 1);
    let mut kept = 0usize;
    for pc in 0..insns.len() {
        new_index.push(kept);
        if !gone.get(pc).copied().unwrap_or(false) {
            kept += 1;
        }
    }
    new_index.push(kept);
    let at = |pc: usize| new_index.get(pc).copied().unwrap_or(kept);
    let out: Vec<Insn> = insns
        .iter()
        .enumerate()
        .filter(|&(pc, _)| !gone.get(pc).copied().unwrap_or(false))
        .map(|(pc, &insn)| {
            let here = at(pc);
            let dist = |off: usize| at(pc + 1 + off).saturating_sub(here + 1);
            match insn.op() {
                Some(Op::Ja { k }) => Insn { k: dist(k as usize) as u32, ..insn },
                Some(Op::Jmp { jt, jf, .. }) => {
                    Insn { jt: dist(usize::from(jt)) as u8, jf: dist(usize::from(jf)) as u8, ..insn }
                }
                _ => insn,
            }
        })
        .collect();
    *insns = out;
    count
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn asm(text: &str) -> Vec<Insn> {
        cbpf::text::parse(text.as_bytes(), cbpf::text::Format::Asm).unwrap()
    }

    fn run_all(insns: &[Insn], data: &cbpf::SeccompData) -> u32 {
        let p = cbpf::validate(insns, cbpf::Mode::Seccomp).unwrap();
        cbpf::Interp::new(&p).run_seccomp(&data.to_bytes()).unwrap()
    }

    #[test]
    fn passes_keep_every_answer_and_shorten() {
        // `ja far` is a landing a conditional jump reaches; `ld [16]` again
        // after testing it; the `ret #3` nothing reaches.
        let before = asm(r"
                ld [16]
                jeq #1, again, other
        again:  ld [16]
                jset #0x80, landing, no
        landing: ja far
                ret #3
        other:  ld [20]
                jeq #0, far, no
        no:     ret #1
        far:    ret #2
        ");
        let mut after = before.clone();
        let stats = run(&mut after);
        assert_eq!(stats.redundant_loads, 1, "{stats:?}");
        assert!(stats.threaded >= 1 && stats.dead >= 1, "{stats:?}");
        assert!(after.len() < before.len());
        for a0 in [0u64, 1, 0x81, 1 << 32, (1 << 32) | 1] {
            let d = cbpf::SeccompData { args: [a0, 0, 0, 0, 0, 0], ..Default::default() };
            assert_eq!(run_all(&after, &d), run_all(&before, &d), "{a0:#x}");
        }
    }

    /// Every instruction that leaves A (`Op::writes_a` false: X loads,
    /// `ldx len` included, `tax`, stores, jumps) keeps A's word known; one
    /// that writes A (`txa`, ALU) forgets it.
    #[test]
    fn a_word_survives_exactly_the_instructions_that_leave_a() {
        let keep = asm(r"
                ld [16]
                ldx len
                ldx #7
                st M[0]
                stx M[1]
                ldx M[0]
                tax
                ld [16]
                ret a
        ");
        let mut after = keep.clone();
        assert_eq!(redundant_loads(&mut after), 1);
        assert_eq!(after.len(), keep.len() - 1);
        for (writer, text) in [("txa", "txa"), ("alu", "add #0"), ("neg", "neg")] {
            let src = format!("ld [16]\n{text}\nld [16]\nret a\n");
            let mut insns = asm(&src);
            assert_eq!(redundant_loads(&mut insns), 0, "{writer}");
        }
    }

    /// A `ja` whose chain of `ja`s ends at a `ret` becomes that `ret`;
    /// one that ends elsewhere jumps there directly, as do both arms of a
    /// conditional jump; a `ja` already at its end stays. The count is
    /// the jumps changed.
    #[test]
    fn jumps_go_where_their_chain_of_ja_ends() {
        let mut rets = asm(r"
                ja mid
        mid:    ja end
                ret #1
        end:    ret #2
        ");
        assert_eq!(thread_jumps(&mut rets), 2);
        assert_eq!(rets, asm("ret #2\nret #2\nret #1\nret #2\n"));
        let mut chain = asm(r"
                ld [0]
                jeq #1, left, right
        left:   ja target
        right:  ja hop
        hop:    ja target
        target: ld [16]
                ret a
        ");
        assert_eq!(thread_jumps(&mut chain), 3);
        let want = asm(r"
                ld [0]
                jeq #1, target, target
                ja target
                ja target
                ja target
        target: ld [16]
                ret a
        ");
        assert_eq!(chain, want);
        // Threaded already: nothing changes.
        assert_eq!(thread_jumps(&mut chain), 0);
    }

    /// A conditional jump is retargeted past a `ja` only where the `ja`'s
    /// target is within its 255: at 255 it is, at 256 the landing stays.
    #[test]
    fn a_conditional_jump_is_threaded_only_within_its_reach() {
        for (gap, threaded) in [(253, true), (254, false)] {
            // jeq at 0, its landing at 1, `ret #0` at 2, `gap` fillers,
            // the target at 3 + gap: 2 + gap from the jeq's next.
            let mut text = String::from("ld [0]\njeq #1, land, no\nland: ja far\nno: ret #0\n");
            text.push_str(&"ret #5\n".repeat(gap));
            text.push_str("far: ld [16]\nret a\n");
            let mut insns = asm(&text);
            assert_eq!(thread_jumps(&mut insns), usize::from(threaded), "{gap}");
            let jt = usize::from(insns[1].jt);
            assert_eq!(jt, if threaded { gap + 2 } else { 0 }, "{gap}");
        }
    }

    /// Unreachable instructions (after a `ret`, over a `ja`) and `ja 0`
    /// go; every jump over them is relinked to the same instruction. A
    /// `ja` that shrinks to `ja 0` goes in the next call.
    #[test]
    fn dead_code_and_empty_jumps_go_and_jumps_are_relinked() {
        let mut insns = asm(r"
                ld [0]
                jeq #1, skip, next
        skip:   ja next
        next:   jeq #2, yes, over
        yes:    ret #1
                ret #9
        over:   ja no
                ret #8
        no:     ret #2
        ");
        assert_eq!(dead_code(&mut insns), 3);
        let want = asm(r"
                ld [0]
                jeq #1, next, next
        next:   jeq #2, yes, over
        yes:    ret #1
        over:   ja no
        no:     ret #2
        ");
        assert_eq!(insns, want);
        assert_eq!(dead_code(&mut insns), 1);
        assert_eq!(insns, asm("ld [0]\njeq #1, next, next\nnext: jeq #2, yes, no\nyes: ret #1\nno: ret #2\n"));
        assert_eq!(dead_code(&mut insns), 0);
    }

    /// A load every path reaches with A holding its word goes, whether one
    /// path or several bring it; the seccomp-internal load (0x21, what
    /// seccomp_check_filter() makes of `ld [k]`) holds its word as `ld
    /// [k]` does.
    #[test]
    fn a_load_every_path_reaches_holding_its_word_goes() {
        use cbpf::opcode::{LDX_W_ABS, LD_W_ABS, RET_A};
        let mut joined = asm(r"
                ld [16]
                jeq #1, load, other
        other:  jeq #2, load, load
        load:   ld [16]
                ret a
        ");
        assert_eq!(redundant_loads(&mut joined), 1);
        assert_eq!(joined, asm("ld [16]\njeq #1, load, other\nother: jeq #2, load, load\nload: ret a\n"));
        let mut internal = vec![Insn::stmt(LDX_W_ABS, 16), Insn::stmt(LD_W_ABS, 16), Insn::stmt(RET_A, 0)];
        assert_eq!(redundant_loads(&mut internal), 1);
        assert_eq!(internal, [Insn::stmt(LDX_W_ABS, 16), Insn::stmt(RET_A, 0)]);
    }

    /// `run` repeats the passes until none changes the program, and its
    /// counts are theirs: the load removed in the first round leaves a
    /// landing the second threads past, and the `ja` then goes.
    #[test]
    fn run_repeats_the_passes_until_nothing_changes() {
        let mut insns = asm(r"
                ld [0]
                jeq #1, hop, no
        hop:    ld [0]
                ja far
        no:     ret #0
        far:    ld [16]
                ret a
        ");
        let stats = run(&mut insns);
        assert_eq!(stats, PassStats { threaded: 1, dead: 1, redundant_loads: 1 });
        assert_eq!(insns, asm("ld [0]\njeq #1, far, no\nno: ret #0\nfar: ld [16]\nret a\n"));
    }

    #[test]
    fn a_load_after_a_join_of_other_words_stays() {
        let before = asm(r"
                ld [16]
                jeq #1, load, other
        other:  ld [24]
        load:   ld [16]
                ret a
        ");
        let mut after = before.clone();
        assert_eq!(redundant_loads(&mut after), 0);
    }
}
