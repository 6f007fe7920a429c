//! The one generator of valid classic programs (and of run contexts that
//! share their constants), driven by `arbitrary`: from fuzzer bytes
//! ([`program`], [`case`]) or from a seed ([`seeded`], for seeded tests).
//!
//! [`program`] turns any byte string into a program that [`cbpf::validate()`]
//! accepts, by construction rather than by luck, so the fuzzer spends its
//! time in the converter and the interpreters instead of in the validator:
//!
//! - every one of the 49 classic opcodes is reachable in socket mode, and
//!   every one of the 41 `seccomp_check_filter()` allows in seccomp mode;
//! - jumps go forward and land inside the program (`ja k < len - pc - 1`,
//!   `pc + 1 + jt/jf < len`);
//! - shift constants are below 32, `div #k` / `mod #k` never divide by 0;
//! - `M[k]` indices are below 16 and reads prefer words already stored;
//! - seccomp loads are aligned words below 64; socket loads hit the packet,
//!   its edges, the 16 ancillary offsets and the `SKF_NET_OFF`/`SKF_LL_OFF`
//!   windows;
//! - the last instruction is a `ret`.
//!
//! What construction cannot guarantee cheaply (`check_load_and_stores()`'s
//! path-sensitive "no `M[k]` read before a write") is repaired afterwards:
//! each instruction the validator names is replaced by `ld #k` until the
//! program passes. The validator stays the single authority on validity.
//!
//! Constants are drawn from a per-program pool shared with the contexts
//! ([`seccomp_data`], [`packet`]) so that comparisons are sometimes true.

use crate::input::SocketInput;
use crate::rng::SplitMix64;
use arbitrary::{Error, Result, Unstructured};
use cbpf::opcode::{BPF_MEMWORDS, LD_IMM, RET_A, SKF_AD_OFF, SKF_AD_PAY_OFFSET, SKF_LL_OFF, SKF_NET_OFF};
use cbpf::{AluOp, Insn, JmpOp, Mode, NetDevice, Op, Program, Size, Skb, Src};

/// Longest generated program. Long enough for every jump distance a
/// converted group can stretch, short enough to run thousands per second.
pub const MAX_LEN: usize = 96;

/// Constants worth trying first: edges of widths and signedness, seccomp
/// actions and arches.
const EDGES: [u32; 28] = [
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    14,
    15,
    16,
    31,
    32,
    63,
    64,
    0x7f,
    0x80,
    0xff,
    0x100,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffe,
    0xffff_ffff,
    0xc000_003e,
    0x4000_0003,
    0x7fff_0000,
    0x0005_0001,
];

/// The constants of one program, reused by its contexts.
pub type Pool = crate::pool::Pool<u32>;

impl Pool {
    /// An interesting 32-bit value: an edge, a pooled constant (or its
    /// neighbour), a number up to 64, or anything.
    pub fn value(&mut self, u: &mut Unstructured<'_>) -> Result<u32> {
        self.draw(u, &crate::pool::Draws { edges: &EDGES, small: 64, negations: false })
    }
}

/// A generated program and the constants it uses.
#[derive(Debug, Clone)]
pub struct Generated {
    pub program: Program,
    pub pool: Pool,
}

/// Builds a valid program of `mode` from `u` (see the module docs), with
/// the fuzz targets' weights ([`Reach::FUZZ`]).
///
/// # Errors
/// Only when `u` cannot supply what the generator asks for in a way
/// `arbitrary` refuses (it pads exhausted input with zeros, so in practice
/// never) or when repair fails to converge, which would be a bug here.
pub fn program(u: &mut Unstructured<'_>, mode: Mode) -> Result<Generated> {
    program_with(u, mode, &Reach::FUZZ)
}

/// What [`program_with`] reaches beyond [`program`]'s short programs.
///
/// [`Reach::FUZZ`] draws exactly what [`program`] always drew (the fuzz
/// targets' saved inputs keep their programs); [`Reach::KERNEL`] adds the
/// shapes a judge of the kernel's attach-time checks needs:
/// - one program in `long_one_in` is long (up to `BPF_MAXINSNS` = 4096),
///   mostly packet or `seccomp_data` loads (the instructions the
///   conversion expands most) under a `ja` that spans nearly all of them,
///   so converted jump distances fall on both sides of the eBPF `s16`
///   offset limit (`bpf_convert_filter()` refuses past it: about 2340
///   `ld [k]` in socket mode) and lengths meet 4096;
/// - `ja` may span the whole rest of the program (not only 255);
/// - a conditional jump sometimes has `jt == jf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// One program in this many is long; 0: never.
    pub long_one_in: u8,
    /// `ja` offsets up to the end of the program, and `jt == jf` jumps.
    pub every_jump: bool,
}

impl Reach {
    /// [`program`]'s weights: programs of at most [`MAX_LEN`] instructions.
    pub const FUZZ: Reach = Reach { long_one_in: 0, every_jump: false };
    /// The kernel judge's (`cargo xtask fuzz-kernel`): one program in 16 long,
    /// every jump shape.
    pub const KERNEL: Reach = Reach { long_one_in: 16, every_jump: true };
}

/// `BPF_MAXINSNS` (include/uapi/linux/bpf_common.h) as a length.
const MAX_INSNS: usize = cbpf::opcode::BPF_MAXINSNS;

/// Builds a valid program of `mode` from `u` with the shapes `reach` adds
/// (see [`Reach`]).
///
/// # Errors
/// See [`program`].
pub fn program_with(u: &mut Unstructured<'_>, mode: Mode, reach: &Reach) -> Result<Generated> {
    if reach.long_one_in > 0 && u.ratio(1u8, reach.long_one_in)? {
        return long_program(u, mode, reach);
    }
    let len = if u.ratio(1u8, 8u8)? { u.int_in_range(1..=MAX_LEN)? } else { u.int_in_range(1..=24usize)? };
    let mut pool = Pool::default();
    let mut insns = Vec::with_capacity(len);
    let mut stored: u16 = 0;
    for pc in 0..len {
        let remaining = len - pc - 1;
        let insn = insn(u, mode, reach, remaining, &mut stored, &mut pool)?;
        insns.push(insn);
    }
    let program = repair(insns, mode)?;
    Ok(Generated { program, pool })
}

/// A program near the length and jump-distance limits (see [`Reach`]):
/// a few ordinary instructions, a `ja` over nearly all the rest, then
/// mostly loads.
fn long_program(u: &mut Unstructured<'_>, mode: Mode, reach: &Reach) -> Result<Generated> {
    let len = match u.int_in_range(0..=3u8)? {
        0 => MAX_INSNS - u.int_in_range(0..=16usize)?,
        // Around the socket conversion limit for this mix of loads (about
        // 9 eBPF instructions each; 2340 `ld [14]` alone under one `ja`).
        1 if mode == Mode::Socket => u.int_in_range(3300..=4000usize)?,
        _ => u.int_in_range(MAX_LEN..=MAX_INSNS)?,
    };
    let seccomp = mode == Mode::Seccomp;
    let mut pool = Pool::default();
    let mut insns = Vec::with_capacity(len);
    let mut stored: u16 = 0;
    let ja_at = u.int_in_range(0..=3usize)?;
    for pc in 0..len {
        let remaining = len - pc - 1;
        let op = if pc == ja_at {
            Some(Op::Ja { k: remaining.saturating_sub(1 + u.int_in_range(0..=8usize)?) as u32 })
        } else if remaining > 0 && pc > ja_at && u.ratio(3u8, 4u8)? {
            // Packet loads expand most (`convert_bpf_ld_abs()`: about 14
            // eBPF instructions each); ancillary ones hardly at all.
            Some(match u.int_in_range(0..=7u8)? {
                _ if seccomp => load_abs(u, seccomp, &mut pool)?,
                0 => Op::LdInd { size: size(u)?, k: packet_offset(u, &mut pool)? },
                1 => load_abs(u, seccomp, &mut pool)?,
                _ => Op::LdAbs { size: size(u)?, k: packet_offset(u, &mut pool)? },
            })
        } else {
            None
        };
        insns.push(match op {
            Some(op) => op.to_insn(),
            None => insn(u, mode, reach, remaining, &mut stored, &mut pool)?,
        });
    }
    let program = repair(insns, mode)?;
    Ok(Generated { program, pool })
}

/// Replaces each instruction the validator refuses by `ld #k` until the
/// program passes.
fn repair(mut insns: Vec<Insn>, mode: Mode) -> Result<Program> {
    for _ in 0..=insns.len() {
        match cbpf::validate(&insns, mode) {
            Ok(p) => return Ok(p),
            Err(e) => {
                let pc = e.pc().ok_or(Error::IncorrectFormat)?.0;
                let last = pc + 1 == insns.len();
                let slot = insns.get_mut(pc).ok_or(Error::IncorrectFormat)?;
                let replacement = if last { Insn::stmt(RET_A, 0) } else { Insn::stmt(LD_IMM, slot.k) };
                if *slot == replacement {
                    return Err(Error::IncorrectFormat);
                }
                *slot = replacement;
            }
        }
    }
    Err(Error::IncorrectFormat)
}

/// One instruction at a pc with `remaining` instructions after it.
fn insn(
    u: &mut Unstructured<'_>,
    mode: Mode,
    reach: &Reach,
    remaining: usize,
    stored: &mut u16,
    pool: &mut Pool,
) -> Result<Insn> {
    if remaining == 0 {
        return ret(u, pool);
    }
    let seccomp = mode == Mode::Seccomp;
    // Weights: ALU and jumps dominate real filters; loads feed them.
    let op = match u.int_in_range(0..=99u8)? {
        0..=21 => alu(u, seccomp, pool)?,
        22..=39 => {
            let max = remaining.min(256) - 1;
            let jt = jump_offset(u, max)?;
            let jf = if reach.every_jump && u.ratio(1u8, 8u8)? { jt } else { jump_offset(u, max)? };
            let src = if u.ratio(1u8, 3u8)? { Src::X } else { Src::K };
            Op::Jmp { op: *u.choose(&JmpOp::ALL)?, src, k: pool.value(u)?, jt, jf }
        }
        40..=43 if reach.every_jump && u.ratio(1u8, 4u8)? => Op::Ja { k: u.int_in_range(0..=remaining - 1)? as u32 },
        40..=43 => Op::Ja { k: u32::from(jump_offset(u, remaining.min(256) - 1)?) },
        44..=57 => load_abs(u, seccomp, pool)?,
        58..=61 if !seccomp => Op::LdInd { size: size(u)?, k: packet_offset(u, pool)? },
        62..=63 if !seccomp => Op::LdxMsh { k: packet_offset(u, pool)? },
        58..=63 => load_abs(u, seccomp, pool)?,
        64..=67 => Op::LdImm { k: pool.value(u)? },
        68..=70 => Op::LdxImm { k: pool.value(u)? },
        71..=74 => {
            let k = u.int_in_range(0..=BPF_MEMWORDS - 1)?;
            *stored |= 1 << k;
            if u.arbitrary()? {
                Op::St { k }
            } else {
                Op::Stx { k }
            }
        }
        75..=78 => {
            let k = mem_read(u, *stored)?;
            if u.arbitrary()? {
                Op::LdMem { k }
            } else {
                Op::LdxMem { k }
            }
        }
        79 => Op::LdLen,
        80 => Op::LdxLen,
        81..=84 => Op::Tax,
        85..=88 => Op::Txa,
        89 => Op::Neg,
        _ => return ret(u, pool),
    };
    let mut insn = op.to_insn();
    // The kernel ignores jt/jf of non-jumps and k of a few codes; the
    // converter must too. Rarely, fill them with junk.
    if !matches!(op, Op::Jmp { .. }) && u.ratio(1u8, 32u8)? {
        insn.jt = u.arbitrary()?;
        insn.jf = u.arbitrary()?;
        if matches!(op, Op::Tax | Op::Txa | Op::Neg | Op::LdLen | Op::LdxLen) {
            insn.k = u.arbitrary()?;
        }
    }
    Ok(insn)
}

fn ret(u: &mut Unstructured<'_>, pool: &mut Pool) -> Result<Insn> {
    Ok(if u.ratio(1u8, 4u8)? { Op::RetA } else { Op::RetK { k: pool.value(u)? } }.to_insn())
}

/// A jump offset in `0..=max`, mostly short.
fn jump_offset(u: &mut Unstructured<'_>, max: usize) -> Result<u8> {
    let max = u8::try_from(max.min(255)).unwrap_or(u8::MAX);
    if u.ratio(3u8, 4u8)? {
        u.int_in_range(0..=max.min(4))
    } else {
        u.int_in_range(0..=max)
    }
}

fn alu(u: &mut Unstructured<'_>, seccomp: bool, pool: &mut Pool) -> Result<Op> {
    let ops: &[AluOp] = if seccomp {
        // seccomp_check_filter() has no BPF_MOD.
        &[AluOp::Add, AluOp::Sub, AluOp::Mul, AluOp::Div, AluOp::Or, AluOp::And, AluOp::Lsh, AluOp::Rsh, AluOp::Xor]
    } else {
        &AluOp::ALL
    };
    let op = *u.choose(ops)?;
    if u.ratio(1u8, 3u8)? {
        return Ok(Op::Alu { op, src: Src::X, k: 0 });
    }
    let k = match op {
        AluOp::Lsh | AluOp::Rsh => u.int_in_range(0..=31u32)?,
        AluOp::Div | AluOp::Mod => pool.value(u)?.max(1),
        _ => pool.value(u)?,
    };
    Ok(Op::Alu { op, src: Src::K, k })
}

fn size(u: &mut Unstructured<'_>) -> Result<Size> {
    Ok(*u.choose(&[Size::W, Size::H, Size::B])?)
}

/// `ld{,h,b} [k]`: in seccomp mode an aligned word of `seccomp_data`; in
/// socket mode a packet offset or one of the 16 ancillary loads.
fn load_abs(u: &mut Unstructured<'_>, seccomp: bool, pool: &mut Pool) -> Result<Op> {
    if seccomp {
        return Ok(Op::LdAbs { size: Size::W, k: 4 * u.int_in_range(0..=15u32)? });
    }
    let size = size(u)?;
    let k = if u.ratio(1u8, 3u8)? {
        SKF_AD_OFF + 4 * u.int_in_range(0..=SKF_AD_PAY_OFFSET / 4 + 2)?
    } else {
        packet_offset(u, pool)?
    };
    Ok(Op::LdAbs { size, k })
}

/// A packet offset: inside small packets, at the negative windows, or wild
/// (never in the ancillary range, which only named loads may use).
fn packet_offset(u: &mut Unstructured<'_>, pool: &mut Pool) -> Result<u32> {
    let k = match u.int_in_range(0..=5u8)? {
        0..=2 => u.int_in_range(0..=80u32)?,
        3 => SKF_NET_OFF + u.int_in_range(0..=64u32)?,
        4 => SKF_LL_OFF + u.int_in_range(0..=64u32)?,
        _ => pool.value(u)?,
    };
    Ok(if k >= SKF_AD_OFF { k - SKF_AD_OFF } else { k })
}

/// An `M[]` index, almost always one stored earlier in program order.
fn mem_read(u: &mut Unstructured<'_>, stored: u16) -> Result<u32> {
    let candidates: Vec<u32> = (0..BPF_MEMWORDS).filter(|k| stored & (1 << k) != 0).collect();
    if candidates.is_empty() || u.ratio(1u8, 16u8)? {
        u.int_in_range(0..=BPF_MEMWORDS - 1)
    } else {
        u.choose(&candidates).copied()
    }
}

/// A `struct seccomp_data` whose 16 words are edges, program constants or
/// anything (nr and arch usually a constant the program compares with).
pub fn seccomp_data(u: &mut Unstructured<'_>, pool: &mut Pool) -> Result<[u8; 64]> {
    let mut out = [0u8; 64];
    for word in out.chunks_exact_mut(4) {
        word.copy_from_slice(&pool.value(u)?.to_ne_bytes());
    }
    Ok(out)
}

/// A packet of up to 96 bytes, sometimes partly paged, with metadata drawn
/// from the kernel's test values, protocols the flow dissector knows, and
/// program constants.
pub fn packet(u: &mut Unstructured<'_>, pool: &mut Pool) -> Result<SocketInput> {
    let len = u.int_in_range(0..=96usize)?;
    let mut data = Vec::with_capacity(len);
    for _ in 0..len {
        data.push(u.arbitrary::<u8>()?);
    }
    let headlen = if u.ratio(3u8, 4u8)? { len } else { u.int_in_range(0..=len)? };
    let protocol = *u.choose(&[0x0800u16, 0x86dd, 0x8100, 0x88a8, 0x0806, 0])?;
    let protocol = if u.ratio(1u8, 8u8)? { u.arbitrary()? } else { protocol };
    let dev = if u.ratio(7u8, 8u8)? {
        Some(NetDevice { ifindex: pool.value(u)? as i32, hatype: u.arbitrary()? })
    } else {
        None
    };
    let (vlan_tci, vlan_proto) = match u.int_in_range(0..=3u8)? {
        0 => (0, 0),
        1 => (0xffff, 0x0800),
        2 => (u.arbitrary()?, *u.choose(&[0x8100u16, 0x88a8, 0x0800, 0x86dd])?),
        _ => (u.arbitrary()?, u.arbitrary()?),
    };
    let network_offset = if u.ratio(3u8, 4u8)? { len.min(14) } else { u.int_in_range(0..=len)? };
    let mac_offset = if u.ratio(7u8, 8u8)? {
        Some(0)
    } else if u.arbitrary()? {
        Some(u.int_in_range(0..=len)?)
    } else {
        None
    };
    Ok(SocketInput {
        data,
        meta: Skb {
            data: &[],
            headlen,
            protocol,
            pkt_type: u.int_in_range(0..=7u8)?,
            dev,
            mark: pool.value(u)?,
            queue_mapping: u.arbitrary()?,
            rxhash: pool.value(u)?,
            vlan_tci,
            vlan_proto,
            cpu: u.arbitrary()?,
            random: u.arbitrary()?,
            network_offset,
            mac_offset,
            wire_len: None,
        },
    })
}

/// One run input of either mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Seccomp([u8; 64]),
    Socket(SocketInput),
}

/// A valid program and up to four inputs to run it on.
#[derive(Debug, Clone)]
pub struct Case {
    pub program: Program,
    pub inputs: Vec<Input>,
}

/// A [`Case`] of either mode (the first byte decides).
///
/// # Errors
/// See [`program`].
pub fn case(u: &mut Unstructured<'_>) -> Result<Case> {
    let mode = if u.arbitrary()? { Mode::Seccomp } else { Mode::Socket };
    case_in(u, mode)
}

/// A [`Case`] of `mode`.
///
/// # Errors
/// See [`program`].
pub fn case_in(u: &mut Unstructured<'_>, mode: Mode) -> Result<Case> {
    let Generated { program, mut pool } = program(u, mode)?;
    let count = u.int_in_range(1..=4usize)?;
    let mut inputs = Vec::with_capacity(count);
    for _ in 0..count {
        inputs.push(match mode {
            Mode::Seccomp => Input::Seccomp(seccomp_data(u, &mut pool)?),
            _ => Input::Socket(packet(u, &mut pool)?),
        });
    }
    Ok(Case { program, inputs })
}

/// Bytes a seeded program is drawn from: more than the longest program asks
/// for (an exhausted [`Unstructured`] would pad with zeros and skew the rest
/// of the program).
const SEEDED_BYTES: usize = 8 * MAX_LEN * 8;

/// The same for a [`Reach`] with long programs (about 8 bytes an instruction).
const SEEDED_LONG_BYTES: usize = 12 * MAX_INSNS;

/// The program of `seed`: [`program`] over [`SplitMix64`]'s bytes, so
/// seeded tests draw from the same generator as the fuzz targets and a
/// failing seed reproduces exactly.
///
/// # Errors
/// Those of [`program`].
pub fn seeded(seed: u64, mode: Mode) -> Result<Generated> {
    seeded_with(seed, mode, &Reach::FUZZ)
}

/// [`SplitMix64`]'s bytes for `seed`, enough for any program of `reach`
/// and its inputs.
pub fn seeded_bytes(seed: u64, reach: &Reach) -> Vec<u8> {
    let n = if reach.long_one_in > 0 { SEEDED_LONG_BYTES } else { SEEDED_BYTES };
    let mut rng = SplitMix64::new(seed);
    (0..n / 8).flat_map(|_| rng.next_u64().to_le_bytes()).collect()
}

/// The program of `seed` under `reach` ([`program_with`] over
/// [`seeded_bytes`]).
///
/// # Errors
/// Those of [`program`].
pub fn seeded_with(seed: u64, mode: Mode, reach: &Reach) -> Result<Generated> {
    program_with(&mut Unstructured::new(&seeded_bytes(seed, reach)), mode, reach)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cbpf::opcode::*;
    use cbpf::validate;
    use std::collections::HashSet;

    /// The opcodes `seccomp_check_filter()` accepts (kernel/seccomp.c),
    /// before its rewrite of `ld [k]` and `len`.
    const SECCOMP_CODES: [u16; 41] = [
        RET_K, RET_A, ALU_ADD_K, ALU_ADD_X, ALU_SUB_K, ALU_SUB_X, ALU_MUL_K, ALU_MUL_X, ALU_DIV_K, ALU_DIV_X,
        ALU_AND_K, ALU_AND_X, ALU_OR_K, ALU_OR_X, ALU_XOR_K, ALU_XOR_X, ALU_LSH_K, ALU_LSH_X, ALU_RSH_K, ALU_RSH_X,
        ALU_NEG, LD_IMM, LDX_IMM, MISC_TAX, MISC_TXA, LD_MEM, LDX_MEM, ST, STX, JMP_JA, JMP_JEQ_K, JMP_JEQ_X,
        JMP_JGE_K, JMP_JGE_X, JMP_JGT_K, JMP_JGT_X, JMP_JSET_K, JMP_JSET_X, LD_W_ABS, LD_W_LEN, LDX_W_LEN,
    ];

    #[test]
    fn seeded_programs_validate_in_both_modes() {
        for mode in [Mode::Seccomp, Mode::Socket] {
            for seed in 0..3000 {
                let Generated { program, .. } = seeded(seed, mode).unwrap();
                if let Err(e) = validate(program.original(), mode) {
                    panic!("{mode}/seed={seed}: {e}\n{}", cbpf::text::print_ddd_line(program.original()));
                }
            }
        }
    }

    #[test]
    fn seeded_programs_reach_every_opcode() {
        for (mode, codes) in [(Mode::Seccomp, &SECCOMP_CODES[..]), (Mode::Socket, &ALLOWED_CODES[..])] {
            let mut seen = HashSet::new();
            for seed in 0..500 {
                for insn in seeded(seed, mode).unwrap().program.original() {
                    seen.insert(insn.code);
                }
            }
            let missing: Vec<_> = codes.iter().filter(|c| !seen.contains(c)).collect();
            assert!(missing.is_empty(), "{mode}: never generated {missing:x?}");
        }
    }

    /// `Reach::KERNEL` reaches what the kernel judge needs: every opcode,
    /// `ja` past 255, `jt == jf`, lengths of 4096, and in socket mode
    /// programs on both sides of the conversion's jump-distance limit
    /// (`convert::check_attach` accepts some long ones and refuses others).
    #[test]
    fn kernel_reach_meets_the_limits() {
        for (mode, codes) in [(Mode::Seccomp, &SECCOMP_CODES[..]), (Mode::Socket, &ALLOWED_CODES[..])] {
            let (mut seen, mut long_ja, mut same_target, mut max_len) = (HashSet::new(), false, false, 0);
            let (mut accepted_long, mut refused) = (0, 0);
            for seed in 0..400 {
                let program = seeded_with(seed, mode, &Reach::KERNEL).unwrap().program;
                let insns = program.original();
                validate(insns, mode).unwrap();
                max_len = max_len.max(insns.len());
                for insn in insns {
                    seen.insert(insn.code);
                    long_ja |= insn.code == JMP_JA && insn.k > 255;
                    same_target |= insn.code & 0x07 == 0x05 && insn.code != JMP_JA && insn.jt == insn.jf;
                }
                match convert::check_attach(&program) {
                    Ok(_) if insns.len() > 2000 => accepted_long += 1,
                    Ok(_) => {}
                    Err(_) => refused += 1,
                }
            }
            let missing: Vec<_> = codes.iter().filter(|c| !seen.contains(c)).collect();
            assert!(missing.is_empty(), "{mode}: never generated {missing:x?}");
            assert!(long_ja && same_target, "{mode}: long ja {long_ja}, jt == jf {same_target}");
            assert!(max_len > 4080, "{mode}: longest {max_len}");
            assert!(accepted_long > 0, "{mode}: no long program attaches");
            if mode == Mode::Socket {
                assert!(refused > 0, "no socket program crosses the conversion limit");
            }
        }
    }

    #[test]
    fn seeds_reproduce_their_program() {
        for mode in [Mode::Seccomp, Mode::Socket] {
            let a = seeded(7, mode).unwrap().program;
            assert_eq!(a.original(), seeded(7, mode).unwrap().program.original());
            assert_ne!(a.original(), seeded(8, mode).unwrap().program.original());
        }
    }

    #[test]
    fn no_bytes_still_give_a_valid_program() {
        for mode in [Mode::Seccomp, Mode::Socket] {
            let Generated { program, .. } = program(&mut Unstructured::new(&[]), mode).unwrap();
            assert!(validate(program.original(), mode).is_ok());
        }
    }
}
