//! The generator of general eBPF programs the kernel's verifier accepts
//! (`cargo xtask fuzz-kernel --mode ebpf`), driven by `arbitrary` as
//! [`crate::gen`] is for classic programs: from fuzzer bytes
//! ([`program`]) or a seed ([`seeded`]).
//!
//! A program runs with the conformance calling convention: `r1` = the
//! memory (in the kernel, the XDP packet behind `kernel::bpf::memory`'s
//! harness), `r2` = its length, the answer the whole 64-bit `r0` and the
//! memory after the run. It is verified for one memory length
//! ([`Generated::mem_len`]), so every access is checked against that length.
//!
//! What it draws, each family in both widths and both operand forms where
//! the ISA has them:
//! - every ALU operation of `AluOp` (with `sdiv`/`smod`), `neg`, `movsx`
//!   from 8/16/32 bits, `le`/`be`/`bswap` of 16/32/64 bits; shifts by a
//!   register whose value may be past the width (the verifier refuses an
//!   immediate shift of at least the width, `check_alu_op()`: "invalid
//!   shift"), divisions by a register that may be 0 and the signed
//!   `INT_MIN / -1` edge (an immediate divisor is never 0: "division by
//!   zero");
//! - every conditional jump of `JmpCond`, signed and unsigned, `BPF_JMP`
//!   and `BPF_JMP32`, `K` and `X`; `ja` and `gotol`; early `exit`s; jumps
//!   go forward only (no loop, so every run ends), to the start of a unit
//!   (never inside a multi-instruction pattern or between the two slots of
//!   `ld_imm64`);
//! - 64-bit immediates (`ld_imm64`);
//! - stack stores (`st`, `stx`) and loads (`ldx`, sign-extending `ldsx`)
//!   of every size, aligned (`check_ptr_alignment()` holds stack accesses
//!   to their size), inside an area the prologue initialises (a privileged
//!   program may read uninitialised stack, whose bytes are the kernel's
//!   garbage, not ours);
//! - atomics on the stack: add/and/or/xor with and without fetch, xchg,
//!   cmpxchg on 32 and 64 bits, load-acquire and store-release of every
//!   size (the verifier refuses atomics on packet memory);
//! - memory (packet) loads and stores of every size at constant offsets
//!   inside the length, and at a register offset (often a byte of the
//!   memory) behind the program's own bounds check against the memory's
//!   end, as XDP programs check `data + off + size > data_end`: a program
//!   for memory of at least [`END_MIN_MEM`] bytes gets that end in `r3`
//!   (`kernel::bpf::memory::Args::WithEnd`; our interpreter runs it behind
//!   `r3 = r1 + r2`).
//!
//! Registers: `r9` keeps the memory pointer (copied from `r1` first) and
//! `r3` the end; neither is ever an ALU operand; `r0`–`r2` and `r4`–`r8`
//! are scalars, initialised by the prologue (a read of an uninitialised
//! register is refused: "!read_ok"); `r2` starts as the length. A pointer never reaches an ALU operation (no
//! "pointer arithmetic prohibited") and never becomes a result (no kernel
//! address can differ from our interpreter's). What the verifier may still
//! refuse (state explosion on long programs) is counted by the judge as its
//! acceptance rate.

use arbitrary::{Result, Unstructured};
use ebpf::op::{AluOp, AtomicOp, Endian, JmpCond, Op, Operand, Size, Width};
use ebpf::opcode::{R1, R10, R2, R3, R9};
use ebpf::Insn;

use crate::rng::SplitMix64;

/// The register that keeps the memory pointer.
pub const MEM: u8 = R9;
/// The register that holds the memory's end for memories of at least
/// [`END_MIN_MEM`] bytes (`kernel::bpf::memory::Args::WithEnd`; our
/// interpreter: `r3 = r1 + r2` first); never written by the program.
pub const END: u8 = R3;
/// The shortest memory that comes with its end in [`END`] (the XDP test
/// run pads shorter packets, `ETH_HLEN`).
pub const END_MIN_MEM: usize = 14;
/// The scalar registers (every ALU and jump operand).
const SCALARS: [u8; 8] = [0, 1, 2, 4, 5, 6, 7, 8];
/// Most units in a program's body (beyond the prologue).
pub const MAX_BODY: usize = 96;
/// The longest memory a program is verified for.
pub const MAX_MEM: usize = 256;
/// The stack's size (`MAX_BPF_STACK`).
const STACK: i16 = 512;

/// 64-bit constants worth trying first: edges of widths and signedness.
const EDGES: [u64; 30] = [
    0,
    1,
    2,
    7,
    8,
    15,
    16,
    31,
    32,
    33,
    63,
    64,
    65,
    127,
    128,
    255,
    256,
    0x7fff,
    0x8000,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    0xffff_ffff_8000_0000,
    0xffff_ffff_ffff_fffe,
    u64::MAX,
    0x0102_0304_0506_0708,
];

/// The constants of one program, reused by its memory.
pub type Pool = crate::pool::Pool<u64>;

impl Pool {
    /// An interesting 64-bit value: an edge, a pooled constant (or its
    /// neighbour, or its negation), a number up to 70, or anything.
    pub fn value(&mut self, u: &mut Unstructured<'_>) -> Result<u64> {
        self.draw(u, &crate::pool::Draws { edges: &EDGES, small: 70, negations: true })
    }

    /// [`Pool::value`] as an instruction's 32-bit immediate.
    pub fn imm(&mut self, u: &mut Unstructured<'_>) -> Result<i32> {
        Ok(self.value(u)? as i32)
    }
}

/// A generated program.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The instructions (`ld_imm64` as its two slots).
    pub insns: Vec<Insn>,
    /// The memory length the program is written (and verified) for; from
    /// [`END_MIN_MEM`] bytes on the program reads the memory's end in
    /// [`END`].
    pub mem_len: usize,
    /// Its constants, for [`memory`].
    pub pool: Pool,
}

/// One piece of a program: instructions that run in order and end in
/// `Flow`. Jumps name the unit they land on, so no jump lands inside a
/// pattern or between the slots of `ld_imm64`.
#[derive(Debug, Clone)]
struct Unit {
    ops: Vec<Op>,
    flow: Flow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Falls through to the next unit.
    Next,
    /// Its one op is a conditional jump to unit `to` (or falls through).
    Branch { to: usize },
    /// Its one op is `ja` / `gotol` to unit `to`.
    Goto { to: usize },
    /// Its one op is `exit`.
    Exit,
}

/// The stack area the prologue initialises: `[r10 + lo, r10 + lo + len)`.
#[derive(Debug, Clone, Copy)]
struct Area {
    lo: i16,
    len: i16,
}

impl Area {
    /// An offset from `r10` aligned to `size`, in the area.
    fn offset(&self, u: &mut Unstructured<'_>, size: Size) -> Result<i16> {
        let bytes = i16::from(size.bytes());
        let slots = (self.len / bytes).max(1);
        Ok(self.lo + bytes * u.int_in_range(0..=slots - 1)?)
    }
}

/// What the generator knows while it draws the body.
struct Ctx<'a> {
    pool: &'a mut Pool,
    mem_len: usize,
    area: Area,
}

/// Builds a program from `u` (see the module docs).
///
/// # Errors
/// Only when `u` refuses what the generator asks for (it pads exhausted
/// input with zeros, so in practice never).
pub fn program(u: &mut Unstructured<'_>) -> Result<Generated> {
    let mut pool = Pool::default();
    let mem_len = match u.int_in_range(0..=7u8)? {
        0 => 0,
        1 => u.int_in_range(0..=MAX_MEM)?,
        _ => u.int_in_range(1..=64usize)?,
    };
    // An area of 8..=128 bytes somewhere in the 512-byte frame.
    let len = 8 * u.int_in_range(1..=16i16)?;
    let lo = -len - 8 * u.int_in_range(0..=(STACK - len) / 8)?;
    let area = Area { lo, len };
    let mut units = prologue(u, &mut pool, area)?;
    let body = if u.ratio(1u8, 8u8)? { u.int_in_range(1..=MAX_BODY)? } else { u.int_in_range(1..=32usize)? };
    let end = units.len() + body;
    let mut ctx = Ctx { pool: &mut pool, mem_len, area };
    for _ in 0..body {
        let at = units.len();
        let unit = unit(u, &mut ctx, at, end)?;
        units.push(unit);
    }
    units.push(Unit { ops: vec![Op::Exit], flow: Flow::Exit });
    make_reachable(u, &mut units)?;
    Ok(Generated { insns: layout(&units), mem_len, pool })
}

/// `r9 = r1`, every scalar register set, the stack area filled.
fn prologue(u: &mut Unstructured<'_>, pool: &mut Pool, area: Area) -> Result<Vec<Unit>> {
    let mut ops = vec![mov(Width::W64, MEM, Operand::X(R1))];
    for reg in SCALARS {
        if reg == R2 {
            continue; // the length
        }
        debug_assert_ne!(reg, END);
        ops.push(match u.int_in_range(0..=3u8)? {
            0 => mov(Width::W32, reg, Operand::K(pool.imm(u)?)),
            1 => Op::LdImm64 { dst: reg, imm: pool.value(u)? },
            _ => mov(Width::W64, reg, Operand::K(pool.imm(u)?)),
        });
    }
    let mut off = area.lo;
    while off < area.lo + area.len {
        ops.push(if u.arbitrary()? {
            Op::Stx { size: Size::DW, dst: R10, src: scalar(u)?, off }
        } else {
            Op::St { size: Size::DW, dst: R10, off, imm: pool.imm(u)? }
        });
        off += 8;
    }
    Ok(vec![Unit { ops, flow: Flow::Next }])
}

fn mov(width: Width, dst: u8, src: Operand) -> Op {
    Op::Alu { width, op: AluOp::Mov, dst, src }
}

fn scalar(u: &mut Unstructured<'_>) -> Result<u8> {
    u.choose(&SCALARS).copied()
}

fn width(u: &mut Unstructured<'_>) -> Result<Width> {
    u.choose(&Width::ALL).copied()
}

/// One unit of the body at unit index `at`; the final `exit` is unit `end`.
fn unit(u: &mut Unstructured<'_>, ctx: &mut Ctx<'_>, at: usize, end: usize) -> Result<Unit> {
    let next = |ops: Vec<Op>| Ok(Unit { ops, flow: Flow::Next });
    match u.int_in_range(0..=99u8)? {
        0..=27 => next(vec![alu(u, ctx.pool)?]),
        28..=31 => next(shift_past_width(u)?),
        32..=33 => next(signed_division_edge(u)?),
        34..=37 => next(vec![unary(u)?]),
        38..=39 => next(vec![Op::LdImm64 { dst: scalar(u)?, imm: ctx.pool.value(u)? }]),
        40..=57 => {
            let to = target(u, at, end)?;
            Ok(Unit { ops: vec![branch(u, ctx.pool)?], flow: Flow::Branch { to } })
        }
        58..=59 => {
            let to = target(u, at, end)?;
            let op = if u.arbitrary()? { Op::Ja { off: 0 } } else { Op::Gotol { imm: 0 } };
            Ok(Unit { ops: vec![op], flow: Flow::Goto { to } })
        }
        60 => Ok(Unit { ops: vec![Op::Exit], flow: Flow::Exit }),
        61..=68 => next(vec![stack_store(u, ctx)?]),
        69..=76 => next(vec![stack_load(u, ctx)?]),
        77..=82 => next(vec![stack_atomic(u, ctx)?]),
        83..=90 => next(memory_fixed(u, ctx)?),
        _ => next(memory_checked(u, ctx)?),
    }
}

/// A forward jump's target unit: mostly near, sometimes anywhere up to the
/// final `exit`.
fn target(u: &mut Unstructured<'_>, at: usize, end: usize) -> Result<usize> {
    if u.ratio(3u8, 4u8)? {
        u.int_in_range(at + 1..=end.min(at + 5))
    } else {
        u.int_in_range(at + 1..=end)
    }
}

/// A binary ALU operation; immediates are kept where the verifier wants
/// them (shifts below the width, divisors not 0).
fn alu(u: &mut Unstructured<'_>, pool: &mut Pool) -> Result<Op> {
    let width = width(u)?;
    let op = *u.choose(&AluOp::ALL)?;
    let dst = scalar(u)?;
    let src = if u.ratio(2u8, 5u8)? {
        Operand::X(scalar(u)?)
    } else {
        let bits = if width == Width::W64 { 63 } else { 31 };
        Operand::K(match op {
            AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => {
                if u.arbitrary()? {
                    bits
                } else {
                    u.int_in_range(0..=bits)?
                }
            }
            AluOp::Div | AluOp::Mod | AluOp::SDiv | AluOp::SMod => match pool.imm(u)? {
                0 => -1,
                k => k,
            },
            _ => pool.imm(u)?,
        })
    };
    Ok(Op::Alu { width, op, dst, src })
}

/// `w/rS = amount; dst <<=|>>=|s>>= rS` with an amount often at or past
/// the width (the kernel masks it, `& 31` or `& 63`).
fn shift_past_width(u: &mut Unstructured<'_>) -> Result<Vec<Op>> {
    let width = width(u)?;
    let src = scalar(u)?;
    let amount = match u.int_in_range(0..=3u8)? {
        0 => u.int_in_range(0..=130i32)?,
        1 => *u.choose(&[31, 32, 33, 63, 64, 65, 127, 128])?,
        2 => -u.int_in_range(1..=65i32)?,
        _ => u.arbitrary()?,
    };
    let op = *u.choose(&[AluOp::Lsh, AluOp::Rsh, AluOp::Arsh])?;
    Ok(vec![mov(Width::W64, src, Operand::K(amount)), Op::Alu { width, op, dst: scalar(u)?, src: Operand::X(src) }])
}

/// `INT_MIN s/ -1`, `INT_MIN s% -1` and division by a zero register, in
/// either width (`do_misc_fixups()` patches them: the result is defined).
fn signed_division_edge(u: &mut Unstructured<'_>) -> Result<Vec<Op>> {
    let width = width(u)?;
    let dst = scalar(u)?;
    let op = *u.choose(&[AluOp::SDiv, AluOp::SMod, AluOp::Div, AluOp::Mod])?;
    let min = match width {
        Width::W64 => Op::LdImm64 { dst, imm: 1 << 63 },
        Width::W32 => mov(Width::W32, dst, Operand::K(i32::MIN)),
    };
    let divisor = if u.arbitrary()? { -1 } else { 0 };
    let src = if u.arbitrary()? {
        Operand::K(if divisor == 0 { -1 } else { divisor })
    } else {
        let s = loop {
            let s = scalar(u)?;
            if s != dst {
                break s;
            }
        };
        return Ok(vec![min, mov(Width::W64, s, Operand::K(divisor)), Op::Alu { width, op, dst, src: Operand::X(s) }]);
    };
    Ok(vec![min, Op::Alu { width, op, dst, src }])
}

/// `neg`, `movsx`, a byte-order operation.
fn unary(u: &mut Unstructured<'_>) -> Result<Op> {
    let dst = scalar(u)?;
    Ok(match u.int_in_range(0..=2u8)? {
        0 => Op::Neg { width: width(u)?, dst },
        1 => {
            let width = width(u)?;
            let from = match width {
                Width::W64 => *u.choose(&[Size::B, Size::H, Size::W])?,
                Width::W32 => *u.choose(&[Size::B, Size::H])?,
            };
            Op::MovSx { width, dst, src: scalar(u)?, from }
        }
        _ => Op::End { endian: *u.choose(&Endian::ALL)?, dst, bits: *u.choose(&[16, 32, 64])? },
    })
}

/// A conditional jump (its offset is set by [`layout`]).
fn branch(u: &mut Unstructured<'_>, pool: &mut Pool) -> Result<Op> {
    let src = if u.arbitrary()? { Operand::X(scalar(u)?) } else { Operand::K(pool.imm(u)?) };
    Ok(Op::Jmp { width: width(u)?, cond: *u.choose(&JmpCond::ALL)?, dst: scalar(u)?, src, off: 0 })
}

fn size(u: &mut Unstructured<'_>) -> Result<Size> {
    u.choose(&Size::ALL).copied()
}

fn stack_store(u: &mut Unstructured<'_>, ctx: &mut Ctx<'_>) -> Result<Op> {
    let size = size(u)?;
    let off = ctx.area.offset(u, size)?;
    Ok(if u.arbitrary()? {
        Op::Stx { size, dst: R10, src: scalar(u)?, off }
    } else {
        Op::St { size, dst: R10, off, imm: ctx.pool.imm(u)? }
    })
}

/// `ldx` of any size or `ldsx` of B/H/W (there is no sign-extending DW load).
fn load(u: &mut Unstructured<'_>, size: Size, dst: u8, src: u8, off: i16) -> Result<Op> {
    Ok(if size != Size::DW && u.arbitrary()? {
        Op::Ldsx { size, dst, src, off }
    } else {
        Op::Ldx { size, dst, src, off }
    })
}

fn stack_load(u: &mut Unstructured<'_>, ctx: &mut Ctx<'_>) -> Result<Op> {
    let size = size(u)?;
    let off = ctx.area.offset(u, size)?;
    let dst = scalar(u)?;
    load(u, size, dst, R10, off)
}

fn stack_atomic(u: &mut Unstructured<'_>, ctx: &mut Ctx<'_>) -> Result<Op> {
    let op = *u.choose(&AtomicOp::ALL)?;
    let size = match op {
        AtomicOp::LoadAcq | AtomicOp::StoreRel => size(u)?,
        _ => *u.choose(&[Size::W, Size::DW])?,
    };
    let off = ctx.area.offset(u, size)?;
    Ok(match op {
        // dst = load_acquire(src + off): the pointer is `src`.
        AtomicOp::LoadAcq => Op::Atomic { size, op, dst: scalar(u)?, src: R10, off },
        _ => Op::Atomic { size, op, dst: R10, src: scalar(u)?, off },
    })
}

/// A memory load or store at a constant offset inside the length (a
/// register when the memory is too short for the size).
fn memory_fixed(u: &mut Unstructured<'_>, ctx: &mut Ctx<'_>) -> Result<Vec<Op>> {
    let size = size(u)?;
    let bytes = usize::from(size.bytes());
    if ctx.mem_len < bytes {
        return Ok(vec![alu(u, ctx.pool)?]);
    }
    let off = i16::try_from(u.int_in_range(0..=ctx.mem_len - bytes)?).unwrap_or(0);
    Ok(vec![match u.int_in_range(0..=2u8)? {
        0 => Op::Stx { size, dst: MEM, src: scalar(u)?, off },
        1 => Op::St { size, dst: MEM, off, imm: ctx.pool.imm(u)? },
        _ => {
            let dst = scalar(u)?;
            load(u, size, dst, MEM, off)?
        }
    }])
}

/// A memory access at a register offset behind the program's own check
/// against the memory's end (`r3`, [`END`]), as XDP programs check a
/// variable header offset against `data_end` (the verifier grants access
/// past a variable offset only after such a test, `find_good_pkt_pointers()`):
///
/// ```text
///    [rA = *(u8 *)(r9 + k)]       sometimes: an index from the memory
/// 0: if rA > BOUND goto L         or rA &= MASK: keeps the offset sane
/// 1: rT = r9
/// 2: rT += rA
/// 3: rE = rT
/// 4: rE += off + size
/// 5: if rE > r3 goto L            or if r3 < rE goto L; or if rE <= r3 goto +1; ja L
/// 6: rD = *(size *)(rT + off)     or *(size *)(rT + off) = rX | imm
/// L: rT = K                       neither temporary keeps a pointer
///    rE = K
/// ```
///
/// BOUND and MASK let the index run past the end, so the check decides.
fn memory_checked(u: &mut Unstructured<'_>, ctx: &mut Ctx<'_>) -> Result<Vec<Op>> {
    if ctx.mem_len < END_MIN_MEM {
        return Ok(vec![alu(u, ctx.pool)?]);
    }
    let size = size(u)?;
    let bytes = i32::from(size.bytes());
    let off = u.int_in_range(0..=8i16)?;
    let [index, temp, end_temp] = distinct(u)?;
    let mut ops = Vec::with_capacity(10);
    if u.arbitrary()? {
        let k = i16::try_from(u.int_in_range(0..=ctx.mem_len - 1)?).unwrap_or(0);
        ops.push(Op::Ldx { size: Size::B, dst: index, src: MEM, off: k });
    }
    let len = i32::try_from(ctx.mem_len).unwrap_or(i32::MAX);
    let bounded = u.ratio(2u8, 3u8)?;
    if !bounded {
        let mask = (2 * ctx.mem_len).next_power_of_two().min(0x1_0000) - 1;
        let mask = i32::try_from(mask).unwrap_or(0xffff);
        ops.push(Op::Alu { width: Width::W64, op: AluOp::And, dst: index, src: Operand::K(mask) });
    }
    let bound_at = ops.len();
    if bounded {
        ops.push(Op::Jmp {
            width: Width::W64,
            cond: JmpCond::Gt,
            dst: index,
            src: Operand::K(u.int_in_range(0..=len + 16)?),
            off: 0,
        });
    }
    ops.push(mov(Width::W64, temp, Operand::X(MEM)));
    ops.push(Op::Alu { width: Width::W64, op: AluOp::Add, dst: temp, src: Operand::X(index) });
    ops.push(mov(Width::W64, end_temp, Operand::X(temp)));
    ops.push(Op::Alu { width: Width::W64, op: AluOp::Add, dst: end_temp, src: Operand::K(i32::from(off) + bytes) });
    let check_at = ops.len();
    let inverted = u.int_in_range(0..=2u8)?;
    match inverted {
        0 => ops.push(Op::Jmp { width: Width::W64, cond: JmpCond::Gt, dst: end_temp, src: Operand::X(END), off: 0 }),
        1 => ops.push(Op::Jmp { width: Width::W64, cond: JmpCond::Lt, dst: END, src: Operand::X(end_temp), off: 0 }),
        _ => {
            ops.push(Op::Jmp { width: Width::W64, cond: JmpCond::Le, dst: end_temp, src: Operand::X(END), off: 1 });
            ops.push(Op::Ja { off: 0 });
        }
    }
    let skip_at = ops.len() - 1;
    ops.push(match u.int_in_range(0..=2u8)? {
        0 => {
            let value = loop {
                let v = scalar(u)?;
                if v != temp && v != end_temp {
                    break v;
                }
            };
            Op::Stx { size, dst: temp, src: value, off }
        }
        1 => Op::St { size, dst: temp, off, imm: ctx.pool.imm(u)? },
        _ => {
            let dst = loop {
                let d = scalar(u)?;
                if d != temp && d != end_temp {
                    break d;
                }
            };
            load(u, size, dst, temp, off)?
        }
    });
    let reset = ops.len();
    ops.push(mov(Width::W64, temp, Operand::K(ctx.pool.imm(u)?)));
    ops.push(mov(Width::W64, end_temp, Operand::K(ctx.pool.imm(u)?)));
    // Point the skips at L.
    let to_reset = |from: usize| i16::try_from(reset - from - 1).unwrap_or(0);
    if bounded {
        if let Some(Op::Jmp { off, .. }) = ops.get_mut(bound_at) {
            *off = to_reset(bound_at);
        }
    }
    match ops.get_mut(skip_at) {
        Some(Op::Jmp { off, .. }) if skip_at == check_at => *off = to_reset(skip_at),
        Some(Op::Ja { off }) => *off = to_reset(skip_at),
        _ => {}
    }
    Ok(ops)
}

/// Three different scalar registers.
fn distinct(u: &mut Unstructured<'_>) -> Result<[u8; 3]> {
    let mut regs = SCALARS;
    for i in 0..3 {
        let j = u.int_in_range(i..=regs.len() - 1)?;
        regs.swap(i, j);
    }
    let [a, b, c, ..] = regs;
    Ok([a, b, c])
}

/// Makes every unit reachable through the control-flow graph, which the
/// verifier requires (`check_cfg()`: "unreachable insn"): a unit after an
/// `exit` or a `goto` that nothing jumps to gets in by turning that
/// terminator into a conditional jump (same target, or the next unit).
/// Jumps go forward only, so one pass in order decides reachability.
fn make_reachable(u: &mut Unstructured<'_>, units: &mut [Unit]) -> Result<()> {
    let mut reached = vec![false; units.len()];
    if let Some(first) = reached.first_mut() {
        *first = true;
    }
    for at in 0..units.len() {
        if !reached.get(at).copied().unwrap_or(true) {
            // The first unit not reached: the one before it was reached and
            // does not fall through.
            let Some(prev) = at.checked_sub(1).and_then(|p| units.get_mut(p)) else { continue };
            let to = match prev.flow {
                Flow::Goto { to } => to,
                _ => at,
            };
            let mut pool = Pool::default();
            prev.ops = vec![branch(u, &mut pool)?];
            prev.flow = Flow::Branch { to };
            if let Some(r) = reached.get_mut(at) {
                *r = true;
            }
        }
        let Some(unit) = units.get(at) else { continue };
        let mut mark = |to: usize| {
            if let Some(r) = reached.get_mut(to) {
                *r = true;
            }
        };
        match unit.flow {
            Flow::Next => mark(at + 1),
            Flow::Branch { to } => {
                mark(at + 1);
                mark(to);
            }
            Flow::Goto { to } => mark(to),
            Flow::Exit => {}
        }
    }
    Ok(())
}

/// The instructions of `units`, every jump's offset set to land on the
/// first instruction of its target unit.
fn layout(units: &[Unit]) -> Vec<Insn> {
    let len = |unit: &Unit| unit.ops.iter().map(|op| op.encode().slots().len()).sum::<usize>();
    let mut starts = Vec::with_capacity(units.len() + 1);
    let mut pc = 0usize;
    for unit in units {
        starts.push(pc);
        pc += len(unit);
    }
    let mut out = Vec::with_capacity(pc);
    for (at, unit) in units.iter().enumerate() {
        let here = starts.get(at).copied().unwrap_or(0);
        for op in &unit.ops {
            let op = match (unit.flow, *op) {
                (Flow::Branch { to } | Flow::Goto { to }, op) => {
                    let rel = starts.get(to).copied().unwrap_or(here + 1) as i64 - here as i64 - 1;
                    match op {
                        Op::Jmp { width, cond, dst, src, .. } => {
                            Op::Jmp { width, cond, dst, src, off: i16::try_from(rel).unwrap_or(0) }
                        }
                        Op::Ja { .. } => Op::Ja { off: i16::try_from(rel).unwrap_or(0) },
                        Op::Gotol { .. } => Op::Gotol { imm: i32::try_from(rel).unwrap_or(0) },
                        other => other,
                    }
                }
                (_, op) => op,
            };
            out.extend_from_slice(op.encode().slots());
        }
    }
    out
}

/// Memory of `len` bytes for a program: random bytes with the program's
/// constants written in at random places (so its comparisons are
/// sometimes true).
///
/// # Errors
/// See [`program`].
pub fn memory(u: &mut Unstructured<'_>, len: usize, pool: &mut Pool) -> Result<Vec<u8>> {
    let mut mem = Vec::with_capacity(len);
    for _ in 0..len {
        mem.push(u.arbitrary::<u8>()?);
    }
    if len > 0 {
        for _ in 0..u.int_in_range(0..=4u8)? {
            let value = pool.value(u)?.to_le_bytes();
            let width = usize::from(*u.choose(&[1u8, 2, 4, 8])?).min(len);
            let at = u.int_in_range(0..=len - width)?;
            if let (Some(to), Some(from)) = (mem.get_mut(at..at + width), value.get(..width)) {
                to.copy_from_slice(from);
            }
        }
    }
    Ok(mem)
}

/// Bytes a seeded program and its memories are drawn from: more than the
/// longest program asks for.
const SEEDED_BYTES: usize = 32 * 1024;

/// [`SplitMix64`]'s bytes for `seed`, enough for a program and a few
/// memories.
pub fn seeded_bytes(seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    (0..SEEDED_BYTES / 8).flat_map(|_| rng.next_u64().to_le_bytes()).collect()
}

/// The program of `seed` ([`program`] over [`seeded_bytes`]).
///
/// # Errors
/// Those of [`program`].
pub fn seeded(seed: u64) -> Result<Generated> {
    program(&mut Unstructured::new(&seeded_bytes(seed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebpf::filter_h::{alu64_reg, mov64_reg};
    use ebpf::{Helpers, Input, LoadOptions, Program, Vm};
    use std::collections::HashSet;

    /// The program as our interpreter runs it: behind `r3 = r1 + r2` when
    /// its memory comes with its end (`kernel::bpf::memory::END_PRELUDE`).
    fn as_run(g: &Generated) -> Vec<Insn> {
        let mut insns = Vec::new();
        if g.mem_len >= END_MIN_MEM {
            insns.extend([mov64_reg(END, R1), alu64_reg(AluOp::Add, END, R2)]);
        }
        insns.extend_from_slice(&g.insns);
        insns
    }

    /// Every seeded program loads (strictly: no reserved field in use) and
    /// runs to its end on our interpreter on memory of its length.
    #[test]
    fn seeded_programs_load_and_run() {
        let strict = LoadOptions { strict: true, ..LoadOptions::default() };
        for seed in 0..2000 {
            let g = seeded(seed).unwrap();
            let insns = as_run(&g);
            let Generated { mem_len, mut pool, .. } = g;
            let prog = Program::load(&insns, &strict, &Helpers::new())
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", ebpf::listing::listing(&insns)));
            let bytes = seeded_bytes(seed ^ 1);
            let mut mem = memory(&mut Unstructured::new(&bytes), mem_len, &mut pool).unwrap();
            if let Err(e) = Vm::new().run(&prog, Input::Memory(&mut mem)) {
                panic!("seed {seed}: {e}\n{}", ebpf::listing::listing(&insns));
            }
        }
    }

    /// The families of the module docs are all drawn.
    #[test]
    fn seeded_programs_reach_every_family() {
        let mut seen: HashSet<String> = HashSet::new();
        for seed in 0..1500 {
            let insns = seeded(seed).unwrap().insns;
            let mut pc = 0;
            while let Some(&insn) = insns.get(pc) {
                let op = Op::decode(insn, insns.get(pc + 1).copied()).unwrap();
                pc += op.encode().slots().len();
                seen.insert(family(&op));
            }
        }
        let mut missing = Vec::new();
        for width in Width::ALL {
            for op in AluOp::ALL {
                for x in [false, true] {
                    missing.push(format!("alu {width:?} {op:?} {x}"));
                }
            }
            for cond in JmpCond::ALL {
                for x in [false, true] {
                    missing.push(format!("jmp {width:?} {cond:?} {x}"));
                }
            }
            missing.push(format!("neg {width:?}"));
        }
        for size in Size::ALL {
            for base in ["stack", "mem"] {
                missing.push(format!("ldx {size:?} {base}"));
                missing.push(format!("st {size:?} {base}"));
                missing.push(format!("stx {size:?} {base}"));
                if size != Size::DW {
                    missing.push(format!("ldsx {size:?} {base}"));
                }
            }
        }
        for op in AtomicOp::ALL {
            for size in Size::ALL {
                if op.allows(size) {
                    missing.push(format!("atomic {op:?} {size:?}"));
                }
            }
        }
        for (width, from) in [(Width::W64, Size::B), (Width::W64, Size::H), (Width::W64, Size::W)] {
            missing.push(format!("movsx {width:?} {from:?}"));
        }
        missing.push(format!("movsx {:?} {:?}", Width::W32, Size::B));
        missing.push(format!("movsx {:?} {:?}", Width::W32, Size::H));
        for endian in Endian::ALL {
            for bits in [16, 32, 64] {
                missing.push(format!("end {endian:?} {bits}"));
            }
        }
        missing.extend(["ja".into(), "gotol".into(), "exit".into(), "lddw".into()]);
        missing.retain(|f| !seen.contains(f));
        assert!(missing.is_empty(), "never generated: {missing:?}");
    }

    fn family(op: &Op) -> String {
        let base = |reg: u8| if reg == R10 { "stack" } else { "mem" };
        match *op {
            Op::Alu { width, op, src, .. } => format!("alu {width:?} {op:?} {}", matches!(src, Operand::X(_))),
            Op::Jmp { width, cond, src, .. } => format!("jmp {width:?} {cond:?} {}", matches!(src, Operand::X(_))),
            Op::Neg { width, .. } => format!("neg {width:?}"),
            Op::MovSx { width, from, .. } => format!("movsx {width:?} {from:?}"),
            Op::End { endian, bits, .. } => format!("end {endian:?} {bits}"),
            Op::Ldx { size, src, .. } => format!("ldx {size:?} {}", base(src)),
            Op::Ldsx { size, src, .. } => format!("ldsx {size:?} {}", base(src)),
            Op::St { size, dst, .. } => format!("st {size:?} {}", base(dst)),
            Op::Stx { size, dst, .. } => format!("stx {size:?} {}", base(dst)),
            Op::Atomic { size, op, .. } => format!("atomic {op:?} {size:?}"),
            Op::Ja { .. } => "ja".into(),
            Op::Gotol { .. } => "gotol".into(),
            Op::Exit => "exit".into(),
            Op::LdImm64 { .. } => "lddw".into(),
            _ => format!("{op:?}"),
        }
    }

    #[test]
    fn seeds_reproduce_their_program() {
        assert_eq!(seeded(7).unwrap().insns, seeded(7).unwrap().insns);
        assert_ne!(seeded(7).unwrap().insns, seeded(8).unwrap().insns);
    }

    #[test]
    fn no_bytes_still_give_a_program() {
        let g = program(&mut Unstructured::new(&[])).unwrap();
        assert!(Program::load(&g.insns, &LoadOptions::default(), &Helpers::new()).is_ok());
    }
}
