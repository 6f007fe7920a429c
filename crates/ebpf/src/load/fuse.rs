//! Load-time superinstructions of the general interpreter (see [`fuse`]):
//! they rewrite the [`Step`]s [`crate::load::check`] decoded and fill the
//! tables of [`crate::load::ir`].

use crate::isa::opcode::R0;
use crate::load::ir::{ChainEntry, EqEntry, LoadCmp, Step, StepKind, NO_ENTRY, SCRATCH_REG, ZERO_REG};
use crate::load::Decoded;

/// Condition of a compare-and-branch as a [`ChainEntry`] range test, or
/// `None` for JSET (not a range).
fn range_test(kind: StepKind, v: u64) -> Option<(u64, u64, u64, u64, bool)> {
    use StepKind::*;
    let (mask, signed) = match kind {
        Jeq64 | Jgt64 | Jge64 | Jne64 | Jlt64 | Jle64 => (u64::MAX, false),
        Jsgt64 | Jsge64 | Jslt64 | Jsle64 => (u64::MAX, true),
        Jeq32 | Jgt32 | Jge32 | Jne32 | Jlt32 | Jle32 => (0xffff_ffff, false),
        Jsgt32 | Jsge32 | Jslt32 | Jsle32 => (0xffff_ffff, true),
        _ => return None,
    };
    let flip = if signed { (mask >> 1) + 1 } else { 0 };
    let v = (v & mask) ^ flip;
    // (lo, span, negate): taken iff (x' - lo <= span) != negate.
    let (lo, span, negate) = match kind {
        Jeq64 | Jeq32 => (v, 0, false),
        Jne64 | Jne32 => (v, 0, true),
        Jgt64 | Jgt32 | Jsgt64 | Jsgt32 => (0, v, true),
        Jge64 | Jge32 | Jsge64 | Jsge32 => (v, mask - v, false),
        Jlt64 | Jlt32 | Jslt64 | Jslt32 => (v, mask - v, true),
        _ => (0, v, false),
    };
    Some((mask, flip, lo, span, negate))
}

/// One chain element found in the original ops.
struct Element {
    pc: usize,
    reg: u8,
    entry: ChainEntry,
    /// `Some(v)` for `if reg == v goto` (JMP64 K), eligible for [`EqEntry`].
    eq: Option<u64>,
    next: usize,
}

/// The chain element starting at `pc`, if any: a compare-and-branch other
/// than JSET, K form, or `mov rW, K` followed by an X-form compare of
/// another register against rW.
fn element(ops: &[Step], pc: usize) -> Option<Element> {
    let o = ops.get(pc)?;
    if let Some((mask, flip, lo, span, negate)) = range_test(o.kind, o.imm).filter(|_| o.src == ZERO_REG) {
        let entry = ChainEntry {
            mask,
            flip,
            lo,
            span,
            write_val: 0,
            jump_pc: pc as u32,
            target: o.a,
            write_reg: SCRATCH_REG,
            negate,
        };
        let eq = (o.kind == StepKind::Jeq64).then_some(o.imm);
        return Some(Element { pc, reg: o.dst, entry, eq, next: pc + 1 });
    }
    let value = match o.kind {
        StepKind::Mov64 | StepKind::Mov32 if o.src == ZERO_REG => o.imm,
        _ => return None,
    };
    let j = ops.get(pc + 1)?;
    if j.src != o.dst || j.dst == o.dst {
        return None;
    }
    let (mask, flip, lo, span, negate) = range_test(j.kind, value)?;
    let entry = ChainEntry {
        mask,
        flip,
        lo,
        span,
        write_val: value,
        jump_pc: pc as u32 + 1,
        target: j.a,
        write_reg: o.dst,
        negate,
    };
    let eq = (j.kind == StepKind::Jeq64).then_some(value);
    Some(Element { pc, reg: j.dst, entry, eq, next: pc + 2 })
}

/// Load-time superinstructions. Each replaces the op at one pc and executes,
/// in order, the semantics of every instruction it covers; the covered
/// instructions keep their own ops, so jumps into the middle still work.
///
/// - Runs of compare-and-branch elements on one register (see [`element`])
///   become [`StepKind::Chain`] (or [`StepKind::EqChain`] for stretches of
///   `if rX == K goto`), evaluated in one dispatch;
/// - `wX = *(u32 *)(rS + off)` right before a run on rX becomes a
///   [`StepKind::LoadChain`] / [`StepKind::LoadEqChain`] (the `ld [k]; jeq` idiom);
/// - `r0 = K; exit` becomes [`StepKind::RetImm`];
/// - the converter's prologue becomes [`StepKind::Prologue`];
/// - single load-compare pairs are then linked into
///   [`StepKind::LoadCmpRun`]s ([`fuse_load_cmp`]).
pub(crate) fn fuse(prog: &mut Decoded) {
    let orig: Vec<Step> = prog.steps.to_vec();
    let mut ops = orig.clone();
    let n = orig.len();
    let mut chain: Vec<ChainEntry> = Vec::new();
    let mut eq: Vec<EqEntry> = Vec::new();
    let mut fused = 0usize;
    let mut pc = 0;
    while pc < n {
        let Some(first) = element(&orig, pc) else {
            pc += 1;
            continue;
        };
        let reg = first.reg;
        let mut run = vec![first];
        while let Some(e) = run.last().and_then(|l| element(&orig, l.next)).filter(|e| e.reg == reg) {
            run.push(e);
        }
        // Segments: stretches of >= 2 eq elements, and the rest.
        let mut segments: Vec<(usize, usize, bool)> = Vec::new();
        // Length of the eq stretch starting at k whose writes all go to one register.
        let eq_len = |k: usize| {
            let mut w = None;
            let mut j = k;
            while let Some(e) = run.get(j).filter(|e| e.eq.is_some()) {
                if e.entry.write_reg != SCRATCH_REG {
                    if w.is_some_and(|w| w != e.entry.write_reg) {
                        break;
                    }
                    w = Some(e.entry.write_reg);
                }
                j += 1;
            }
            j - k
        };
        let mut k = 0;
        while k < run.len() {
            let j = k + eq_len(k);
            if j - k >= 2 {
                segments.push((k, j, true));
                k = j;
                continue;
            }
            // Generic: up to the next eq stretch of length >= 2.
            let mut j = k + 1;
            while j < run.len() && eq_len(j) < 2 {
                j += 1;
            }
            segments.push((k, j, false));
            k = j;
        }
        let load_head = run.first().map(|e| e.pc).filter(|&p| p > 0).and_then(|p| {
            let l = orig.get(p - 1)?;
            (l.kind == StepKind::LdxW && l.dst == reg).then_some(p - 1)
        });
        for &(s, e, is_eq) in &segments {
            let base = if is_eq { eq.len() } else { chain.len() } as u32;
            let (mut wreg, mut wval) = (SCRATCH_REG, 0);
            for el in run.get(s..e).unwrap_or(&[]) {
                if is_eq {
                    if el.entry.write_reg != SCRATCH_REG {
                        (wreg, wval) = (el.entry.write_reg, el.entry.write_val);
                    }
                    let (value, jump_pc, target) = (el.eq.unwrap_or(0), el.entry.jump_pc, el.entry.target);
                    eq.push(EqEntry { value, wval, jump_pc, target, wreg });
                } else {
                    chain.push(el.entry);
                }
            }
            let end = base + (e - s) as u32;
            for k in s..e {
                if e - k < 2 {
                    continue;
                }
                // An entry in the middle of an eq stretch must not inherit a
                // W write made by an element before it (that element did not
                // run on a path that jumps in here): `wval` is cumulative
                // from the stretch start, so only fuse such entries while no
                // earlier element of the stretch writes W.
                let earlier_write =
                    run.get(s..k).is_some_and(|els| els.iter().any(|x| x.entry.write_reg != SCRATCH_REG));
                if is_eq && earlier_write {
                    continue;
                }
                let Some(el) = run.get(k) else { continue };
                let kind = if is_eq { StepKind::EqChain } else { StepKind::Chain };
                if let Some(o) = ops.get_mut(el.pc) {
                    *o = Step { kind, dst: reg, src: ZERO_REG, size: 0, a: base + (k - s) as u32, imm: u64::from(end) };
                    fused += 1;
                }
            }
            // A load followed by one plain K compare: one op, no chain table.
            let single = run.get(s).filter(|el| e - s == 1 && el.entry.write_reg == SCRATCH_REG);
            let load_cmp = single.and_then(|el| {
                let j = orig.get(el.pc)?;
                let kind = match j.kind {
                    StepKind::Jeq64 => StepKind::LoadJeq,
                    StepKind::Jne64 => StepKind::LoadJne,
                    StepKind::Jgt64 => StepKind::LoadJgt,
                    StepKind::Jge64 => StepKind::LoadJge,
                    StepKind::Jlt64 => StepKind::LoadJlt,
                    StepKind::Jle64 => StepKind::LoadJle,
                    _ => return None,
                };
                Some((kind, j.imm, j.a))
            });
            if s == 0 {
                if let (Some(lp), Some((kind, k, target))) = (load_head, load_cmp) {
                    if let (Some(l), Some(o)) = (orig.get(lp).copied(), ops.get_mut(lp)) {
                        let imm = u64::from(k as u32) | (u64::from(l.a as u16) << 32);
                        *o = Step { kind, dst: reg, src: l.src, size: 0, a: target, imm };
                        fused += 1;
                        continue;
                    }
                }
                if let Some(lp) = load_head {
                    let l = orig.get(lp).copied();
                    if let (Some(l), Some(o)) = (l, ops.get_mut(lp)) {
                        let kind = if is_eq { StepKind::LoadEqChain } else { StepKind::LoadChain };
                        *o = Step {
                            kind,
                            dst: reg,
                            src: l.src,
                            size: 0,
                            a: base,
                            imm: u64::from(end) | (u64::from(l.a) << 32),
                        };
                        fused += 1;
                    }
                }
            }
        }
        pc = run.last().map_or(pc + 1, |e| e.next);
    }
    for pc in 0..n {
        let (Some(o), Some(next)) = (orig.get(pc), orig.get(pc + 1)) else { continue };
        // r0 = K; exit
        if matches!(o.kind, StepKind::Mov64 | StepKind::Mov32)
            && o.src == ZERO_REG
            && o.dst == R0
            && next.kind == StepKind::Exit
        {
            if let Some(slot) = ops.get_mut(pc).filter(|s| s.kind == o.kind) {
                *slot = Step { kind: StepKind::RetImm, dst: o.dst, src: o.src, size: o.size, a: o.a, imm: o.imm };
                fused += 1;
            }
        }
        // wA ^= wA; wB ^= wB; rC = rE
        if let Some(third) = orig.get(pc + 2) {
            let zero = |x: &Step| x.kind == StepKind::Xor32 && x.src == x.dst && x.imm == 0;
            if zero(o) && zero(next) && third.kind == StepKind::Mov64 && third.src != ZERO_REG {
                if let Some(slot) = ops.get_mut(pc).filter(|s| s.kind == StepKind::Xor32) {
                    *slot = Step {
                        kind: StepKind::Prologue,
                        dst: o.dst,
                        src: next.dst,
                        size: third.dst,
                        a: u32::from(third.src),
                        imm: 0,
                    };
                    fused += 1;
                }
            }
        }
    }
    prog.fused = fused;
    prog.steps = ops.into_boxed_slice();
    prog.chain = chain.into_boxed_slice();
    prog.eq = eq.into_boxed_slice();
    fuse_load_cmp(prog, &orig);
}

/// Links load-and-compare pairs into [`StepKind::LoadCmpRun`]s: every pc whose
/// op became a single load-then-compare (`LoadJ*`, see [`fuse`]) gets a
/// [`LoadCmp`] entry, linked to the entries at its two successors, so a
/// seccomp filter's argument checks (`ld [k]; jne K goto next_rule`, rule
/// after rule) run as one loop instead of one dispatch per pair. Each pair
/// still loads, writes `rD` and compares in program order, and counts two
/// steps.
fn fuse_load_cmp(prog: &mut Decoded, orig: &[Step]) {
    let load_cmp_kinds = [
        StepKind::LoadJeq,
        StepKind::LoadJne,
        StepKind::LoadJgt,
        StepKind::LoadJge,
        StepKind::LoadJlt,
        StepKind::LoadJle,
    ];
    let mut index = vec![NO_ENTRY; orig.len()];
    let mut entries: Vec<LoadCmp> = Vec::new();
    for (pc, o) in prog.steps.iter().enumerate() {
        if !load_cmp_kinds.contains(&o.kind) {
            continue;
        }
        let (Some(l), Some(j)) = (orig.get(pc), orig.get(pc + 1)) else { continue };
        // Unsigned compares only (the `LoadJ*` kinds): no sign bit to flip.
        let Some((_, 0, lo, span, negate)) = range_test(j.kind, j.imm) else { continue };
        if let Some(slot) = index.get_mut(pc) {
            *slot = entries.len() as u32;
        }
        entries.push(LoadCmp {
            off: l.a as i32 as i64 as u64,
            lo,
            span,
            pc: pc as u32,
            taken: j.a,
            taken_next: NO_ENTRY,
            fall_next: NO_ENTRY,
            dst: l.dst,
            src: l.src,
            negate,
        });
    }
    if entries.is_empty() {
        return;
    }
    for e in &mut entries {
        e.taken_next = index.get(e.taken as usize).copied().unwrap_or(NO_ENTRY);
        e.fall_next = index.get(e.pc as usize + 2).copied().unwrap_or(NO_ENTRY);
    }
    let mut ops = prog.steps.to_vec();
    for (k, e) in entries.iter().enumerate() {
        if let Some(o) = ops.get_mut(e.pc as usize) {
            *o = Step { kind: StepKind::LoadCmpRun, dst: e.dst, src: e.src, size: 0, a: k as u32, imm: 0 };
        }
    }
    prog.steps = ops.into_boxed_slice();
    prog.load_cmp = entries.into_boxed_slice();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_tests_agree_with_direct_compares() {
        let samples = [0u64, 1, 2, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 1 << 32, i64::MAX as u64, 1 << 63, u64::MAX];
        let kinds = [
            StepKind::Jeq64,
            StepKind::Jne64,
            StepKind::Jgt64,
            StepKind::Jge64,
            StepKind::Jlt64,
            StepKind::Jle64,
            StepKind::Jsgt64,
            StepKind::Jsge64,
            StepKind::Jslt64,
            StepKind::Jsle64,
            StepKind::Jeq32,
            StepKind::Jne32,
            StepKind::Jgt32,
            StepKind::Jge32,
            StepKind::Jlt32,
            StepKind::Jle32,
            StepKind::Jsgt32,
            StepKind::Jsge32,
            StepKind::Jslt32,
            StepKind::Jsle32,
        ];
        for kind in kinds {
            for &v in &samples {
                for &x in &samples {
                    let (mask, flip, lo, span, negate) = range_test(kind, v).unwrap();
                    let fused = ((((x & mask) ^ flip).wrapping_sub(lo)) <= span) != negate;
                    let direct = crate::load::ir::condition(kind, x, v);
                    assert_eq!(fused, direct, "{kind:?} x={x:#x} v={v:#x}");
                }
            }
        }
    }
}
