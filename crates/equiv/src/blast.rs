//! Bit-blasting: one classic seccomp program as a circuit over the input
//! words.
//!
//! Classic jumps only go forward, so the program is a DAG and one pass in
//! pc order visits each instruction once: every reachable pc holds its
//! reach condition (a literal) and the symbolic state on entry (A, X and
//! `M[0..16]`, 32 literals each). An edge into a pc that already holds a
//! state merges: the reach conditions are or-ed and each register becomes
//! `edge ? incoming : held` (paths are mutually exclusive, so this is the
//! value on whichever path runs). Each `ret` folds into the result as
//! `reach ? value : result`; exactly one return is reached on every input.
//!
//! The semantics are the converted program's, as `cbpf::AluOp::eval` and
//! `cbpf::JmpOp::eval` state them: 32-bit wrapping arithmetic, shifts by
//! `k & 31`, and `div`/`mod` by an X of zero returning 0 from the program
//! (`bpf_convert_filter()`'s `if X == 0 return 0`, net/core/filter.c,
//! Linux 6.18).
//!
//! # Deviations
//! None on validated seccomp programs; packet loads (which
//! `seccomp_check_filter()` refuses) are reported, not modelled.

use cbpf::{AluOp, Insn, JmpOp, Op, Src};

use crate::aig::{konst, not, Aig, Bv, Lit, FALSE, TRUE};

/// An instruction the circuit cannot model (never in a validated seccomp
/// filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unsupported {
    pub pc: usize,
}

#[derive(Debug, Clone, Copy)]
struct State {
    a: Bv,
    x: Bv,
    m: [Bv; 16],
}

/// The words the circuit reads: fixed (`Some`) or inputs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Words {
    pub fixed: [Option<u32>; 16],
}

impl Words {
    fn load(&self, aig: &mut Aig, offset: u32) -> Bv {
        let w = (offset / 4) as usize;
        match self.fixed.get(w).copied().flatten() {
            Some(v) => konst(v),
            None => aig.input_word(w),
        }
    }
}

/// The program's return value as a circuit. `steps` is charged one per
/// reachable instruction.
/// `insns` are a validated program's (seccomp loads as 0x21).
pub(crate) fn blast(aig: &mut Aig, insns: &[Insn], words: &Words, steps: &mut u64) -> Result<Bv, Unsupported> {
    let mut pending: Vec<Option<(Lit, Box<State>)>> = vec![None; insns.len()];
    let zero = konst(0);
    if let Some(p) = pending.first_mut() {
        *p = Some((TRUE, Box::new(State { a: zero, x: zero, m: [zero; 16] })));
    }
    let mut result = zero;
    for pc in 0..insns.len() {
        let Some((reach, mut s)) = pending.get_mut(pc).and_then(Option::take) else { continue };
        if aig.overflowed() {
            break;
        }
        *steps = steps.saturating_add(1);
        let Some(op) = insns.get(pc).and_then(|i| i.op()) else { return Err(Unsupported { pc }) };
        let mut goto = |aig: &mut Aig, to: usize, cond: Lit, s: &State| {
            if cond == FALSE {
                return;
            }
            if let Some(slot) = pending.get_mut(to) {
                *slot = Some(match slot.take() {
                    None => (cond, Box::new(*s)),
                    Some((held, mut t)) => {
                        let r = aig.or(held, cond);
                        t.a = aig.ite_bv(cond, &s.a, &t.a);
                        t.x = aig.ite_bv(cond, &s.x, &t.x);
                        for (tm, sm) in t.m.iter_mut().zip(&s.m) {
                            *tm = aig.ite_bv(cond, sm, tm);
                        }
                        (r, t)
                    }
                });
            }
        };
        let next = pc + 1;
        match op {
            Op::LdImm { k } => s.a = konst(k),
            Op::LdxImm { k } => s.x = konst(k),
            Op::LdMem { k } => s.a = s.m.get((k & 15) as usize).copied().unwrap_or(zero),
            Op::LdxMem { k } => s.x = s.m.get((k & 15) as usize).copied().unwrap_or(zero),
            Op::St { k } => {
                if let Some(m) = s.m.get_mut((k & 15) as usize) {
                    *m = s.a;
                }
            }
            Op::Stx { k } => {
                if let Some(m) = s.m.get_mut((k & 15) as usize) {
                    *m = s.x;
                }
            }
            Op::LdxAbsSeccomp { k } => s.a = words.load(aig, k),
            Op::Neg => s.a = aig.sub(&zero, &s.a),
            Op::Tax => s.x = s.a,
            Op::Txa => s.a = s.x,
            Op::Alu { op, src, k } => {
                let b = match src {
                    Src::K => konst(k),
                    Src::X => s.x,
                };
                s.a = match op {
                    AluOp::Add => aig.add(&s.a, &b),
                    AluOp::Sub => aig.sub(&s.a, &b),
                    AluOp::Mul => aig.mul(&s.a, &b),
                    AluOp::Or => aig.or_bv(&s.a, &b),
                    AluOp::And => aig.and_bv(&s.a, &b),
                    AluOp::Xor => aig.xor_bv(&s.a, &b),
                    AluOp::Lsh => aig.shift(&s.a, &b, true),
                    AluOp::Rsh => aig.shift(&s.a, &b, false),
                    AluOp::Div | AluOp::Mod => {
                        // Division by zero returns 0 from the program.
                        let z = aig.is_zero(&b);
                        let stop = aig.and(reach, z);
                        result = aig.ite_bv(stop, &zero, &result);
                        let (q, r) = aig.divmod(&s.a, &b);
                        let go = aig.and(reach, not(z));
                        let a = if matches!(op, AluOp::Div) { q } else { r };
                        s.a = a;
                        goto(aig, next, go, &s);
                        continue;
                    }
                };
            }
            Op::Ja { k } => {
                goto(aig, next + k as usize, reach, &s);
                continue;
            }
            Op::Jmp { op, src, k, jt, jf } => {
                let b = match src {
                    Src::K => konst(k),
                    Src::X => s.x,
                };
                let (t, f) = (next + usize::from(jt), next + usize::from(jf));
                if t == f {
                    goto(aig, t, reach, &s);
                    continue;
                }
                let p = match op {
                    JmpOp::Jeq => aig.eq(&s.a, &b),
                    JmpOp::Jgt => aig.ugt(&s.a, &b),
                    JmpOp::Jge => not(aig.ugt(&b, &s.a)),
                    JmpOp::Jset => aig.any_common(&s.a, &b),
                };
                let (ct, cf) = (aig.and(reach, p), aig.and(reach, not(p)));
                goto(aig, t, ct, &s);
                goto(aig, f, cf, &s);
                continue;
            }
            Op::RetK { k } => {
                result = aig.ite_bv(reach, &konst(k), &result);
                continue;
            }
            Op::RetA => {
                result = aig.ite_bv(reach, &s.a, &result);
                continue;
            }
            Op::LdAbs { .. } | Op::LdInd { .. } | Op::LdLen | Op::LdxLen | Op::LdxMsh { .. } => {
                return Err(Unsupported { pc })
            }
        }
        goto(aig, next, reach, &s);
    }
    Ok(result)
}

/// `SECCOMP_RET_ACTION_FULL` bits of `a` as a signed value below those of
/// `b` (`ACTION_ONLY(a) < ACTION_ONLY(b)`, kernel/seccomp.c).
fn action_lt(aig: &mut Aig, a: &Bv, b: &Bv) -> Lit {
    let mut fa = konst(0);
    let mut fb = konst(0);
    for i in 16..32 {
        let flip = |l: Lit| if i == 31 { not(l) } else { l };
        if let (Some(x), Some(y), Some(ox), Some(oy)) = (a.get(i), b.get(i), fa.get_mut(i), fb.get_mut(i)) {
            *ox = flip(*x);
            *oy = flip(*y);
        }
    }
    aig.ugt(&fb, &fa)
}

/// A stack's value from each filter's (newest first), as
/// `seccomp::stack::combine` computes it: start from ALLOW, take a result
/// whose action is strictly more restrictive. One filter is its own value
/// (a lone filter is compared on what it returns).
pub(crate) fn combine(aig: &mut Aig, newest_first: &[Bv]) -> Bv {
    if let [one] = newest_first {
        return *one;
    }
    let mut ret = konst(seccomp::action::SECCOMP_RET_ALLOW);
    for cur in newest_first {
        let lt = action_lt(aig, cur, &ret);
        ret = aig.ite_bv(lt, cur, &ret);
    }
    ret
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use cbpf::{Interp, Mode, Program, SeccompData, Size};
    use proptest::prelude::*;

    /// The ALU ops `seccomp_check_filter()` allows (not `mod`).
    const ALU: [AluOp; 9] =
        [AluOp::Add, AluOp::Sub, AluOp::Mul, AluOp::Div, AluOp::Or, AluOp::And, AluOp::Xor, AluOp::Lsh, AluOp::Rsh];
    const JMP: [JmpOp; 4] = [JmpOp::Jeq, JmpOp::Jgt, JmpOp::Jge, JmpOp::Jset];

    /// A valid seccomp program from generated parts: three loads of input
    /// words, two of them kept in `M[0]` and `M[1]` and the third in X (so
    /// every later read of memory is initialised), then one instruction per
    /// part (loads, memory, every ALU op seccomp allows and every jump op,
    /// by K and by X, `ja`, both returns; jumps held inside the program),
    /// and a final `ret a`.
    fn program(loads: [u32; 3], parts: &[(u8, u32, u8, u8)]) -> Program {
        let word = |w: u32| Op::LdAbs { size: Size::W, k: 4 * (w % 16) };
        let mut ops = vec![word(loads[0]), Op::St { k: 0 }, word(loads[1]), Op::St { k: 1 }, word(loads[2]), Op::Tax];
        let len = ops.len() + parts.len() + 1;
        for &(choice, k, jt, jf) in parts {
            // Instructions after this one: at least the final `ret`.
            let after = (len - ops.len() - 1) as u8;
            let src = if k & 1 == 0 { Src::K } else { Src::X };
            ops.push(match choice % 15 {
                0 => word(k),
                1 => Op::LdImm { k },
                2 => Op::LdxImm { k },
                3 => Op::LdMem { k: k % 2 },
                4 => Op::LdxMem { k: k % 2 },
                5 => Op::St { k: k % 4 },
                6 => Op::Stx { k: k % 4 },
                7 => {
                    let op = ALU[(jt % 9) as usize];
                    // bpf_check_classic() refuses a constant divisor of 0
                    // and a constant shift of 32 or more.
                    let k = match op {
                        AluOp::Div => k.max(1),
                        AluOp::Lsh | AluOp::Rsh => k % 32,
                        _ => k,
                    };
                    Op::Alu { op, src, k }
                }
                8 => Op::Neg,
                9 => Op::Tax,
                10 => Op::Txa,
                11 => Op::Jmp { op: JMP[(k % 4) as usize], src, k, jt: jt % after, jf: jf % after },
                12 => Op::Ja { k: u32::from(jt % after) },
                13 => Op::RetK { k },
                _ => Op::RetA,
            });
        }
        ops.push(Op::RetA);
        let insns: Vec<Insn> = ops.iter().map(|op| op.to_insn()).collect();
        cbpf::validate(&insns, Mode::Seccomp).unwrap_or_else(|e| panic!("{ops:?}: {e}"))
    }

    fn constant() -> impl Strategy<Value = u32> {
        prop_oneof![any::<u32>(), 0u32..40, Just(u32::MAX), Just(0x8000_0000), Just(0x7fff_ffff)]
    }

    /// Inputs whose words often repeat the program's constants and each
    /// other, so compares go both ways.
    fn input(constants: Vec<u32>) -> impl Strategy<Value = [u32; 16]> {
        let pool = if constants.is_empty() { vec![0] } else { constants };
        proptest::array::uniform16(prop_oneof![any::<u32>(), proptest::sample::select(pool), 0u32..4])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        /// The circuit of a program, evaluated on an input, is what the
        /// classic interpreter returns for it: with every word an input,
        /// and with the words `fixed` selects given as constants (as a
        /// class fixes arch and nr).
        #[test]
        fn the_circuit_computes_what_the_interpreter_returns(
            (loads, parts, words) in (
                proptest::array::uniform3(0u32..16),
                proptest::collection::vec((any::<u8>(), constant(), any::<u8>(), any::<u8>()), 1..28),
            ).prop_flat_map(|(loads, parts)| {
                let ks = parts.iter().map(|p| p.1).collect();
                (Just(loads), Just(parts), input(ks))
            }),
            fixed in any::<u16>(),
        ) {
            let prog = program(loads, &parts);
            let want = Interp::new(&prog).run_seccomp(&SeccompData::from_words(&words).to_bytes()).unwrap();
            for fixed in [0, fixed] {
                let mut graph = Aig::new(1 << 22);
                let words_in = Words { fixed: std::array::from_fn(|i| (fixed >> i & 1 == 1).then_some(words[i])) };
                let mut steps = 0;
                let out = blast(&mut graph, prog.insns(), &words_in, &mut steps).unwrap();
                prop_assert!(!graph.overflowed());
                prop_assert!(steps >= 1 && steps <= prog.len() as u64);
                let got = Aig::word(&graph.values(&words), &out);
                prop_assert_eq!(got, want, "fixed {:#06x}\n{:?}", fixed, prog.insns());
            }
        }
    }

    /// Only reachable instructions are visited: a program whose first
    /// instruction returns costs one step, whatever follows.
    #[test]
    fn unreachable_code_costs_no_steps() {
        let ops = [Op::RetK { k: 7 }, Op::LdImm { k: 1 }, Op::RetA];
        let insns: Vec<Insn> = ops.iter().map(|op| op.to_insn()).collect();
        let prog = cbpf::validate(&insns, Mode::Seccomp).unwrap();
        let mut graph = Aig::new(1 << 10);
        let mut steps = 0;
        let out = blast(&mut graph, prog.insns(), &Words { fixed: [None; 16] }, &mut steps).unwrap();
        assert_eq!((out, steps), (konst(7), 1));
    }

    /// Packet loads (socket filters) are reported with their pc.
    #[test]
    fn packet_loads_are_not_modelled() {
        let ops = [Op::LdImm { k: 0 }, Op::LdLen, Op::RetA];
        let insns: Vec<Insn> = ops.iter().map(|op| op.to_insn()).collect();
        let prog = cbpf::validate(&insns, Mode::Socket).unwrap();
        let mut steps = 0;
        let got = blast(&mut Aig::new(1 << 10), prog.insns(), &Words { fixed: [None; 16] }, &mut steps);
        assert_eq!(got, Err(Unsupported { pc: 1 }));
    }

    /// A stack's value is the most restrictive action, newest first on a
    /// tie, as `seccomp::stack::combine` computes it: every pair and
    /// triple of actions (with data) folds to the same constant.
    #[test]
    fn stacks_combine_as_the_kernel_does() {
        let values = [0x7fff_0000, 0x7ffc_0000, 0x7ff0_0005, 0x0005_0001, 0x0005_0002, 0x0003_0000, 0, 0x8000_0000];
        let mut graph = Aig::new(1 << 16);
        for &a in &values {
            for &b in &values {
                for &c in &values {
                    for stack in [&[a, b][..], &[a, b, c][..], &[a][..]] {
                        let bvs: Vec<Bv> = stack.iter().map(|&v| konst(v)).collect();
                        let got = combine(&mut graph, &bvs);
                        let want = match stack {
                            [one] => *one,
                            many => seccomp::stack::combine(many.iter().copied()),
                        };
                        assert_eq!(Aig::word(&[false], &got), want, "{stack:x?}");
                    }
                }
            }
        }
    }
}
