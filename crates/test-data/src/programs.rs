//! Raw classic seccomp programs of one shape, as plain [`RawInsn`]s, for
//! the tests of both interpreters and the converter (which turn them into
//! their own types): [`known_words`].

use crate::rng::Rng;
use crate::RawInsn;

// Classic opcodes, as numbers (linux/filter.h).
const LD_W_ABS: u16 = 0x20;
const JMP_JA: u16 = 0x05;
const JMP_JEQ_K: u16 = 0x15;
const JMP_JGT_K: u16 = 0x25;
const JMP_JSET_K: u16 = 0x45;
const JMP_JEQ_X: u16 = 0x1d;
const LD_IMM: u16 = 0x00;
const RET_K: u16 = 0x06;
const RET_A: u16 = 0x16;
const MISC_TAX: u16 = 0x07;
const MISC_TXA: u16 = 0x87;
const ALU_AND_K: u16 = 0x54;

/// Up to 31 pieces over the first two words of `struct seccomp_data`
/// (`nr`, `arch`) and the constants 0..4, then `ret a`; jumps forward and
/// inside. Most pieces load a word and compare it (`jeq` half the time),
/// so that a word is often reloaded where an earlier `jeq` settled it
/// (OpenSSH's and libseccomp's shape); `ret a`, `tax`, `txa`, `and` and
/// `ld #k` come in where a skipped reload's `A` would still be read or is
/// set, and `jeq x` where the facts cannot follow a compare. Inputs with
/// both words below 4 take every path the constants tell apart.
pub fn known_words(rng: &mut Rng) -> Vec<RawInsn> {
    let stmt = |code, k| RawInsn { code, jt: 0, jf: 0, k };
    // Each instruction with where its jump offsets are: none, `k` (`ja`),
    // or `jt` and `jf`.
    #[derive(PartialEq)]
    enum Jumps {
        No,
        K,
        Both,
    }
    let mut out: Vec<(RawInsn, Jumps)> = Vec::new();
    for _ in 0..1 + rng.below(31) {
        let k = rng.below(4) as u32;
        let (jt, jf) = (rng.below(8) as u8, rng.below(8) as u8);
        let cmp = RawInsn {
            code: *rng.pick(&[JMP_JEQ_K, JMP_JEQ_K, JMP_JEQ_K, JMP_JGT_K, JMP_JSET_K, JMP_JEQ_X]),
            jt,
            jf,
            k,
        };
        match rng.below(13) {
            0..=4 => {
                let word = stmt(LD_W_ABS, rng.below(2) as u32 * 4);
                out.extend([(word, Jumps::No), (cmp, Jumps::Both)]);
            }
            5 | 6 => out.push((cmp, Jumps::Both)),
            7 => out.push((stmt(JMP_JA, u32::from(jt)), Jumps::K)),
            8 => out.push((stmt(RET_A, 0), Jumps::No)),
            9 => out.push((stmt(MISC_TAX, 0), Jumps::No)),
            10 if k % 2 == 0 => out.push((stmt(MISC_TXA, 0), Jumps::No)),
            10 => out.push((stmt(ALU_AND_K, k - 1), Jumps::No)),
            11 => out.push((stmt(LD_IMM, k), Jumps::No)),
            _ => out.push((stmt(RET_K, 0x7fff_0000 + k), Jumps::No)),
        }
    }
    out.push((stmt(RET_A, 0), Jumps::No));
    // Jumps kept inside: targets pc+1 ..= the final `ret a`.
    let last = out.len() - 1;
    for (pc, (insn, jumps)) in out.iter_mut().enumerate() {
        let room = (last - pc).max(1) as u8;
        match jumps {
            Jumps::K => insn.k %= u32::from(room),
            Jumps::Both => (insn.jt, insn.jf) = (insn.jt % room, insn.jf % room),
            Jumps::No => {}
        }
    }
    out.into_iter().map(|(insn, _)| insn).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_stay_inside_and_the_program_ends_with_ret_a() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let p = known_words(&mut rng);
            assert_eq!(p.last().map(|i| i.code), Some(RET_A));
            for (pc, i) in p.iter().enumerate().take(p.len() - 1) {
                let ends = |off: u32| pc + 1 + (off as usize) < p.len();
                assert!(ends(u32::from(i.jt.max(i.jf))), "{pc}: {i:?}");
                assert!(i.code != JMP_JA || ends(i.k), "{pc}: {i:?}");
            }
        }
    }
}
