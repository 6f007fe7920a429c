//! Raw classic seccomp programs of one shape, as plain [`RawInsn`]s, for
//! the tests of both interpreters and the converter (which turn them into
//! their own types): [`known_words`], and libseccomp's compact allow-list
//! of one argument's values ([`allow_list`]), which the analyses' tests
//! share.

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
// What an `allow_list` checks and returns (linux/audit.h, linux/seccomp.h):
// x86_64, KILL_PROCESS on another arch, ALLOW, ERRNO(EPERM).
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_EPERM: u32 = 0x0005_0001;

/// What [`allow_list`] writes: an OCI profile allowing a syscall for the
/// listed values of one argument, as libseccomp lays it out.
#[derive(Debug, Clone, Copy)]
pub struct AllowList<'a> {
    /// The syscall whose argument is checked, every other one allowed;
    /// `None`: no `nr` test, every syscall's argument is checked.
    pub nr: Option<u32>,
    /// The argument compared (`args[arg]`, its low word).
    pub arg: usize,
    /// Whether the argument's high word must first be 0 (else EPERM), as
    /// libseccomp checks a 64-bit value; without it only the low word is
    /// compared (a 32-bit check).
    pub high_zero: bool,
    /// How many `jeq`s share one `ret ALLOW`: [`COMPACT_RUN`] as
    /// libseccomp writes a list, 1 for a `ret` after every `jeq`.
    pub run: usize,
    /// The values allowed, in the order the `jeq`s test them.
    pub values: &'a [u32],
}

/// How many `jeq`s share one `ret` in libseccomp's compact
/// [`allow_list`] (a run stays under the 255 a jump offset reaches).
pub const COMPACT_RUN: usize = 250;

/// libseccomp's compact allow-list (its `ioctl` requests, say): on x86_64
/// (else kill), `list.nr` (else allow), the high word 0 (else EPERM, when
/// `list.high_zero`), then one `jeq #value` an allowed value in runs of
/// `list.run` (at least 1, at most 256), each run's matches jumping to its
/// own `ret ALLOW` and its last miss over it to the next run; EPERM after
/// the last. In [`COMPACT_RUN`]s at most 4,096 instructions for up to about
/// 4,000 values.
pub fn allow_list(list: &AllowList<'_>) -> Vec<RawInsn> {
    let stmt = |code, k| RawInsn { code, jt: 0, jf: 0, k };
    let jeq = |k, jt, jf| RawInsn { code: JMP_JEQ_K, jt, jf, k };
    // `struct seccomp_data`: nr at 0, arch at 4, args from 16.
    let low = 16 + 8 * list.arg as u32;
    let mut p = vec![stmt(LD_W_ABS, 4), jeq(AUDIT_ARCH_X86_64, 1, 0), stmt(RET_K, RET_KILL_PROCESS)];
    if let Some(nr) = list.nr {
        p.extend([stmt(LD_W_ABS, 0), jeq(nr, 1, 0), stmt(RET_K, RET_ALLOW)]);
    }
    if list.high_zero {
        p.extend([stmt(LD_W_ABS, low + 4), jeq(0, 1, 0), stmt(RET_K, RET_EPERM)]);
    }
    p.push(stmt(LD_W_ABS, low));
    for run in list.values.chunks(list.run.clamp(1, 256)) {
        let n = run.len();
        for (i, &v) in run.iter().enumerate() {
            // A match jumps to the run's `ret`; the run's last miss skips it.
            p.push(jeq(v, (n - 1 - i) as u8, u8::from(i + 1 == n)));
        }
        p.push(stmt(RET_K, RET_ALLOW));
    }
    p.push(stmt(RET_K, RET_EPERM));
    p
}

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

    /// Every jump of an allow-list lands inside it, every value's `jeq`
    /// on a `ret ALLOW`, and its runs' last misses on the next run.
    #[test]
    fn an_allow_list_jumps_as_libseccomp_lays_it_out() {
        let values: Vec<u32> = (0..601).map(|i| 0x5400 + 3 * i).collect();
        for (nr, high_zero, run, rets) in [(None, false, COMPACT_RUN, 3), (Some(16), true, 1, values.len())] {
            let p = allow_list(&AllowList { nr, arg: 1, high_zero, run, values: &values });
            let head = 4 + 3 * usize::from(nr.is_some()) + 3 * usize::from(high_zero);
            assert_eq!(p.len(), head + values.len() + rets + 1);
            assert_eq!(p[head - 1], RawInsn { code: LD_W_ABS, jt: 0, jf: 0, k: 24 });
            for (pc, i) in p.iter().enumerate().skip(head) {
                if i.code != JMP_JEQ_K {
                    continue;
                }
                let (hit, miss) = (&p[pc + 1 + usize::from(i.jt)], &p[pc + 1 + usize::from(i.jf)]);
                assert_eq!((hit.code, hit.k), (RET_K, RET_ALLOW), "{pc}");
                assert!(miss.code == JMP_JEQ_K || miss.k == RET_EPERM, "{pc}: {miss:?}");
            }
            assert_eq!(p.last().map(|i| i.k), Some(RET_EPERM));
            assert_eq!(RawInsn::records(&RawInsn::to_records(&p)), Ok(p));
        }
    }

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
