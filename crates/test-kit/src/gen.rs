//! The one generator of random VALID classic programs, [`arbitrary_program`],
//! driven by any `FnMut() -> u64`: [`SplitMix64`] for seeded tests,
//! [`ByteSource`] for raw fuzzer bytes, and [`program`] for an
//! [`arbitrary::Unstructured`] (what a cargo-fuzz target holds).

use cbpf::opcode::*;
use cbpf::{Insn, Mode, Program};

/// SplitMix64: a tiny seeded generator for reproducible inputs and programs.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Fuzzer bytes as a stream of `u64`s (8 little-endian bytes each, zero
/// padded, then zeros forever), for [`arbitrary_program`] under cargo-fuzz:
/// `arbitrary_program(&mut ByteSource::new(data).as_fn(), mode, 64)`.
#[derive(Debug, Clone)]
pub struct ByteSource<'a> {
    rest: &'a [u8],
}

impl<'a> ByteSource<'a> {
    /// Reads from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        ByteSource { rest: data }
    }

    /// The next 8 bytes as a little-endian `u64`.
    pub fn next_u64(&mut self) -> u64 {
        let take = self.rest.len().min(8);
        let (head, tail) = self.rest.split_at(take);
        self.rest = tail;
        let mut buf = [0u8; 8];
        for (dst, src) in buf.iter_mut().zip(head) {
            *dst = *src;
        }
        u64::from_le_bytes(buf)
    }

    /// Bytes not consumed yet.
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// This source as the closure [`arbitrary_program`] takes.
    pub fn as_fn(&mut self) -> impl FnMut() -> u64 + use<'_, 'a> {
        move || self.next_u64()
    }
}

/// `next() % n` as usize (`n > 0`).
pub(crate) fn below(next: &mut impl FnMut() -> u64, n: usize) -> usize {
    (next() % n.max(1) as u64) as usize
}

pub(crate) fn pick<T: Copy>(next: &mut impl FnMut() -> u64, items: &[T], fallback: T) -> T {
    items.get(below(next, items.len())).copied().unwrap_or(fallback)
}

/// Constants worth trying: edges of widths and signedness, seccomp actions
/// and arches.
const EDGES: [u32; 24] = [
    0,
    1,
    2,
    3,
    4,
    8,
    14,
    15,
    16,
    31,
    32,
    64,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0xc000_003e,
    0x4000_0003,
    0x7fff_0000,
    0x0005_0001,
    0x8000_0000 | 0x0003_0000,
];

fn constant(next: &mut impl FnMut() -> u64) -> u32 {
    match below(next, 4) {
        0 | 1 => below(next, 65) as u32,
        2 => pick(next, &EDGES, 0),
        _ => next() as u32,
    }
}

// ---------------------------------------------------------------------------
// Random valid programs
// ---------------------------------------------------------------------------

/// The opcodes `seccomp_check_filter()` accepts (kernel/seccomp.c), before
/// its rewrite of `ld [k]` and `len`.
const SECCOMP_CODES: [u16; 41] = [
    RET_K, RET_A, ALU_ADD_K, ALU_ADD_X, ALU_SUB_K, ALU_SUB_X, ALU_MUL_K, ALU_MUL_X, ALU_DIV_K, ALU_DIV_X, ALU_AND_K,
    ALU_AND_X, ALU_OR_K, ALU_OR_X, ALU_XOR_K, ALU_XOR_X, ALU_LSH_K, ALU_LSH_X, ALU_RSH_K, ALU_RSH_X, ALU_NEG, LD_IMM,
    LDX_IMM, MISC_TAX, MISC_TXA, LD_MEM, LDX_MEM, ST, STX, JMP_JA, JMP_JEQ_K, JMP_JEQ_X, JMP_JGE_K, JMP_JGE_X,
    JMP_JGT_K, JMP_JGT_X, JMP_JSET_K, JMP_JSET_X, LD_W_ABS, LD_W_LEN, LDX_W_LEN,
];

const COND_JUMPS: [u16; 8] = [JMP_JEQ_K, JMP_JEQ_X, JMP_JGT_K, JMP_JGT_X, JMP_JGE_K, JMP_JGE_X, JMP_JSET_K, JMP_JSET_X];

const SOCKET_LOADS: [u16; 9] =
    [LD_W_ABS, LD_H_ABS, LD_B_ABS, LD_W_IND, LD_H_IND, LD_B_IND, LDX_B_MSH, LD_W_LEN, LDX_W_LEN];

/// A packet offset for `ld{,h,b} [k]` and `ldxb`: near the start of typical
/// packets, an ancillary load (only when `ancillary`), the `SKF_NET_OFF` /
/// `SKF_LL_OFF` windows, far away, or below `SKF_LL_OFF` (fails at run time).
fn packet_offset(next: &mut impl FnMut() -> u64, ancillary: bool) -> u32 {
    match below(next, 12) {
        0..=4 => below(next, 64) as u32,
        5 | 6 if ancillary => SKF_AD_OFF + 4 * below(next, 16) as u32,
        5 | 6 => below(next, 16) as u32,
        7 => SKF_NET_OFF + below(next, 48) as u32,
        8 => SKF_LL_OFF + below(next, 48) as u32,
        9 => below(next, 0x1_0000) as u32,
        // [0x8000_0000, SKF_LL_OFF): negative, below every window.
        10 => 0x8000_0000 + (next() as u32 % (SKF_LL_OFF - 0x8000_0000)),
        _ => below(next, 2048) as u32,
    }
}

/// A random program that [`cbpf::validate()`] accepts in `mode`, of 1 ..=
/// `max_len` (at most 4096) instructions, driven by `next`.
///
/// Valid by construction:
/// - only the 49 classic opcodes (socket) or the 41 `seccomp_check_filter()`
///   allows (seccomp), each of them reachable;
/// - jumps go forward and land inside the program; `jt`/`jf` fit in a byte;
/// - shifts by `#k` have `k < 32`, `div`/`mod` never by `#0`;
/// - `M[k]` has `k < 16` and is read only where `check_load_and_stores()`
///   (emulated instruction by instruction, with its quirks) knows it was
///   written on every path;
/// - seccomp loads are aligned words below 64; socket `ld [k]` with
///   `k >= SKF_AD_OFF` names one of the 16 ancillary loads;
/// - the last instruction is a `ret`.
pub fn arbitrary_program(next: &mut impl FnMut() -> u64, mode: Mode, max_len: usize) -> Vec<Insn> {
    let len = 1 + below(next, max_len.clamp(1, BPF_MAXINSNS));
    // check_load_and_stores(): words written on every path into each pc.
    let mut masks = vec![0xffffu16; len];
    let mut memvalid: u16 = 0;
    let mut out = Vec::with_capacity(len);
    for pc in 0..len {
        if let Some(m) = masks.get(pc) {
            memvalid &= *m;
        }
        let room = len - pc - 1;
        let insn = if room == 0 {
            if next() % 2 == 0 {
                Insn::stmt(RET_K, constant(next))
            } else {
                Insn::stmt(RET_A, 0)
            }
        } else {
            random_insn(next, mode, room, memvalid)
        };
        let bit = 1u16.checked_shl(insn.k).unwrap_or(0);
        let mut and_at = |target: usize, valid: u16| {
            if let Some(m) = masks.get_mut(target) {
                *m &= valid;
            }
        };
        match insn.code {
            ST | STX => memvalid |= bit,
            JMP_JA => {
                and_at(pc + 1 + insn.k as usize, memvalid);
                memvalid = 0xffff;
            }
            code if COND_JUMPS.contains(&code) => {
                and_at(pc + 1 + usize::from(insn.jt), memvalid);
                and_at(pc + 1 + usize::from(insn.jf), memvalid);
                memvalid = 0xffff;
            }
            _ => {}
        }
        out.push(insn);
    }
    out
}

/// One instruction at a pc with `room >= 1` instructions after it.
fn random_insn(next: &mut impl FnMut() -> u64, mode: Mode, room: usize, memvalid: u16) -> Insn {
    loop {
        let code = match below(next, 8) {
            // Loads and compares make programs look like filters.
            0 | 1 => match mode {
                Mode::Seccomp => LD_W_ABS,
                Mode::Socket => pick(next, &SOCKET_LOADS, LD_W_ABS),
            },
            2 | 3 => pick(next, &COND_JUMPS, JMP_JEQ_K),
            _ => match mode {
                Mode::Seccomp => pick(next, &SECCOMP_CODES, RET_K),
                Mode::Socket => pick(next, &ALLOWED_CODES, RET_K),
            },
        };
        let max_off = room.saturating_sub(1).min(255);
        let k = match code {
            LD_MEM | LDX_MEM => {
                if memvalid == 0 {
                    continue;
                }
                let written: Vec<u32> = (0..16).filter(|i| memvalid & (1 << i) != 0).collect();
                pick(next, &written, 0)
            }
            ST | STX => below(next, 16) as u32,
            LD_W_ABS if mode == Mode::Seccomp => 4 * below(next, 16) as u32,
            LD_W_ABS | LD_H_ABS | LD_B_ABS => packet_offset(next, true),
            LDX_B_MSH => packet_offset(next, false),
            LD_W_IND | LD_H_IND | LD_B_IND => match below(next, 4) {
                0 => next() as u32,
                1 => SKF_NET_OFF + below(next, 32) as u32,
                _ => below(next, 64) as u32,
            },
            ALU_DIV_K | ALU_MOD_K => constant(next).max(1),
            ALU_LSH_K | ALU_RSH_K => below(next, 32) as u32,
            JMP_JA => below(next, room) as u32,
            LD_W_LEN | LDX_W_LEN | ALU_NEG | RET_A | MISC_TAX | MISC_TXA => 0,
            _ => constant(next),
        };
        let (jt, jf) = if COND_JUMPS.contains(&code) {
            // Short jumps mostly, so that most code stays reachable.
            let off = |next: &mut dyn FnMut() -> u64| {
                let r = next();
                let span = if r % 4 == 0 { max_off } else { max_off.min(4) };
                ((r >> 8) % (span as u64 + 1)) as u8
            };
            (off(next), off(next))
        } else {
            (0, 0)
        };
        return Insn { code, jt, jf, k };
    }
}

/// A random valid program read from `u` ([`arbitrary_program`] over
/// `u`'s bytes): always validates in `mode`, so the only error is `u`
/// running dry before the first instruction.
pub fn program(u: &mut arbitrary::Unstructured<'_>, mode: Mode, max_len: usize) -> arbitrary::Result<Program> {
    if u.is_empty() {
        return Err(arbitrary::Error::NotEnoughData);
    }
    let mut next = || u.arbitrary::<u64>().unwrap_or(0);
    let insns = arbitrary_program(&mut next, mode, max_len);
    cbpf::validate(&insns, mode).map_err(|_| arbitrary::Error::IncorrectFormat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cbpf::validate;
    use std::collections::HashSet;

    #[test]
    fn arbitrary_programs_validate_in_both_modes() {
        let mut rng = SplitMix64::new(1);
        for mode in [Mode::Seccomp, Mode::Socket] {
            for _ in 0..3000 {
                let insns = arbitrary_program(&mut || rng.next_u64(), mode, 64);
                if let Err(e) = validate(&insns, mode) {
                    panic!("{mode}: {e}\n{}", cbpf::text::print_ddd_line(&insns));
                }
            }
        }
    }

    #[test]
    fn arbitrary_programs_reach_every_opcode() {
        let mut rng = SplitMix64::new(2);
        for (mode, codes) in [(Mode::Seccomp, &SECCOMP_CODES[..]), (Mode::Socket, &ALLOWED_CODES[..])] {
            let mut seen = HashSet::new();
            for _ in 0..500 {
                for insn in arbitrary_program(&mut || rng.next_u64(), mode, 64) {
                    seen.insert(insn.code);
                }
            }
            let missing: Vec<_> = codes.iter().filter(|c| !seen.contains(c)).collect();
            assert!(missing.is_empty(), "{mode}: never generated {missing:x?}");
        }
    }

    #[test]
    fn byte_source_drives_the_generator_and_runs_dry() {
        let data = [7u8; 20];
        let mut src = ByteSource::new(&data);
        let insns = arbitrary_program(&mut src.as_fn(), Mode::Socket, 32);
        assert!(validate(&insns, Mode::Socket).is_ok());
        assert_eq!(src.remaining(), 0);
        assert_eq!(ByteSource::new(&[1, 2]).next_u64(), 0x0201);
    }

    #[test]
    fn unstructured_drives_the_generator() {
        let data: Vec<u8> = (0..=255u8).collect();
        let mut u = arbitrary::Unstructured::new(&data);
        for mode in [Mode::Seccomp, Mode::Socket] {
            assert_eq!(program(&mut u, mode, 32).map(|p| p.mode()), Ok(mode));
        }
        assert!(program(&mut arbitrary::Unstructured::new(&[]), Mode::Seccomp, 8).is_err());
    }
}
