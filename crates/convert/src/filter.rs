//! The classic-to-extended converter of net/core/filter.c (Linux 6.18).
//!
//! [`convert`] mirrors `bpf_migrate_filter()`: a length-only call of
//! `bpf_convert_filter()`, then a second call that emits the program in two
//! passes over the classic instructions (pass 0 with an incomplete `addrs[]`,
//! pass 1 with the final one). Each classic instruction becomes a *group* of
//! 1 to 20 eBPF instructions (the kernel's `tmp_insns[32]`), written in place
//! into the output; [`PcMap`] records where each group starts (`addrs[]`).
//! The three kernel traversals are two here (the length call also records
//! `addrs[]`; the emitting traversal writes pass 1's bytes and makes pass 0's
//! one check), with the kernel's bytes and refusals: see `bpf_convert_filter`
//! in this module. Conversion work is linear in the program's length.
//!
//! Register roles (include/linux/filter.h): A = r0, X = r7, TMP = r2,
//! CTX = r6, D = r8 (cached `skb->data`), H = r9 (cached headlen), FP = r10;
//! scratch word `M[k]` lives at `fp - (4k + 4)`.
//!
//! Socket-buffer fields are read at the offsets of OUR context layout
//! ([`ebpf::skb`]), and helpers are called by OUR ids
//! ([`ebpf::skb::helper`]): a real kernel uses `offsetof(struct sk_buff, ..)`
//! of its own build and helper addresses. Everything else is byte-exact.
//!
//! Packet loads are converted as on x86_64: `CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS`
//! is set, so `convert_bpf_ld_abs()` takes its inline fast path for every
//! direct load with a non-negative offset and `NET_IP_ALIGN` never matters;
//! bitfields are little-endian, so `SKF_AD_PKTTYPE` has no shift.

use std::ops::Range;

use cbpf::opcode as c;
use cbpf::Pc;
use ebpf::filter_h::{
    alu32_imm, alu32_reg, alu64_imm, emit_call as call, endian_from_be, exit_insn as exit, jmp_a, jmp_imm, ld_abs,
    ldx_mem, mov32_imm, mov32_reg, mov64_imm, mov64_reg, stx_mem,
};
use ebpf::op::{AluOp, JmpCond, Size};
use ebpf::opcode as e;
use ebpf::skb;
use ebpf::Insn;

pub use ebpf::filter_h::{
    BPF_REG_A as REG_A, BPF_REG_ARG1 as REG_ARG1, BPF_REG_CTX as REG_CTX, BPF_REG_D as REG_D, BPF_REG_FP as REG_FP,
    BPF_REG_H as REG_H, BPF_REG_TMP as REG_TMP, BPF_REG_X as REG_X,
};
use ebpf::filter_h::{BPF_REG_ARG2 as REG_ARG2, BPF_REG_ARG3 as REG_ARG3, BPF_REG_ARG4 as REG_ARG4};
/// `BPF_REG_TMP` of Linux 3.15 ..= 4.17, used by the legacy `ldxb 4*([k]&0xf)` shape.
const LEGACY_REG_TMP: u8 = e::R8;

/// `BPF_MAXINSNS`.
const MAX_INSNS: usize = c::BPF_MAXINSNS;
/// The prologue the length-only call counts (`new_insn += 3`).
const PROLOGUE_LEN: usize = 3;
/// Extra prologue instructions when `seen_ld_abs` (`*new_len += 4`).
const LD_ABS_PROLOGUE_LEN: usize = 4;
/// `PKT_TYPE_MAX` (include/linux/skbuff.h): the mask of the 3-bit `pkt_type` field.
const PKT_TYPE_MAX: i32 = 7;

/// How to convert.
///
/// # Legacy packet loads (`legacy_ld_abs`)
///
/// Reproduces what `bpf_convert_filter()` emitted for packet loads in Linux
/// 4.14 ..= 4.17 (read from that era's net/core/filter.c), before "bpf:
/// implement ld_abs/ld_ind in native bpf" (4.18) removed `LD_ABS`/`LD_IND`
/// from the interpreter:
/// - `ld{,h,b} [k]` (non-ancillary) and `ld{,h,b} [x + k]` fall through to the
///   raw copy `BPF_RAW_INSN(code, A, X, 0, k)`: eBPF code 0x20/0x28/0x30 or
///   0x40/0x48/0x50 (same byte), dst r0, src r7 (the index for `IND`), imm k;
/// - `ldxb 4*([k]&0xf)` is the 6-instruction `r8 = r0; r0 = LD_ABS_B k;
///   w0 &= 0xf; w0 <<= 2; r7 = r0; r0 = r8` (that era's `BPF_REG_TMP` was r8);
/// - no `seen_ld_abs` prologue, so [`Converted::seen_ld_abs`] stays false.
///
/// Not reproduced (kept in their 6.18 form, with the same meaning): 4.17
/// cleared A and X with 64-bit XOR (0xaf) and used r8 for jump constants
/// `>= 2^31`; its `SKF_AD_VLAN_TAG*` loads read `vlan_tci` bits. Ancillary
/// loads and `ld len` still read our [`ebpf::skb`] context through r6, so an
/// engine that passes the bare packet as the context (rbpf) runs only
/// programs without them correctly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Options {
    /// Emit packet loads in the pre-4.18 shape: `ld [k]` / `ld [x + k]` become
    /// the eBPF `BPF_LD|BPF_ABS|size` / `BPF_LD|BPF_IND|size` instructions
    /// (as Linux 4.14 ..= 4.17 did, and as engines such as rbpf still execute)
    /// instead of the inline fast path and `bpf_skb_load_helper_*` calls; no
    /// `seen_ld_abs` prologue. Everything else keeps its 6.18 shape.
    pub legacy_ld_abs: bool,
}

impl Options {
    /// The Linux 6.18 conversion (the default).
    pub const fn kernel() -> Self {
        Options { legacy_ld_abs: false }
    }

    /// The pre-4.18 packet-load shape; see [`Options::legacy_ld_abs`].
    pub const fn legacy() -> Self {
        Options { legacy_ld_abs: true }
    }
}

/// Which run of the conversion loop refused a jump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pass {
    /// The first, length-only call (`new_prog == NULL`): offsets are computed
    /// as if every target were the jump itself.
    LengthOnly,
    /// Pass 0 of the emitting call: `addrs[]` of forward targets are still 0.
    Pass0,
    /// Pass 1 of the emitting call: final offsets.
    Pass1,
}

impl std::fmt::Display for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Pass::LengthOnly => "length-only pass",
            Pass::Pass0 => "pass 0",
            Pass::Pass1 => "pass 1",
        })
    }
}

/// Why the kernel's converter would return `-EINVAL` for a program.
///
/// For a program that passed [`cbpf::validate()`], only
/// [`ConvertError::JumpOffset`] can happen; the other variants mirror checks
/// the kernel's converter makes on its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    #[error("bpf_convert_filter: program length {len} outside 1..=4096")]
    BadLength { len: usize },
    #[error("insn {pc}: bpf_convert_filter: unknown opcode {code:#06x}")]
    UnknownOpcode { pc: Pc, code: u16 },
    #[error("insn {pc}: bpf_convert_filter: jump target {target} outside the program ({pass})")]
    JumpTarget { pc: Pc, target: i64, pass: Pass },
    #[error("insn {pc}: bpf_convert_filter: jump offset {off} to insn {target} does not fit in 16 bits ({pass})")]
    JumpOffset { pc: Pc, target: Pc, off: i64, pass: Pass },
    #[error("bpf_migrate_filter: converted length {got} differs from the counted {expected}")]
    LengthMismatch { expected: usize, got: usize },
}

impl ConvertError {
    /// The classic instruction the error is about, if any.
    pub fn pc(&self) -> Option<Pc> {
        match *self {
            ConvertError::BadLength { .. } | ConvertError::LengthMismatch { .. } => None,
            ConvertError::UnknownOpcode { pc, .. }
            | ConvertError::JumpTarget { pc, .. }
            | ConvertError::JumpOffset { pc, .. } => Some(pc),
        }
    }
}

/// Where each classic instruction went: the kernel's `addrs[]` (index of the
/// first eBPF instruction of each group, counting the prologue) plus the
/// total length, so every group's range is known.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PcMap {
    addrs: Vec<usize>,
    end: usize,
}

impl PcMap {
    /// The kernel's `addrs[]`: `addrs()[i]` is the first eBPF index of classic insn `i`.
    pub fn addrs(&self) -> &[usize] {
        &self.addrs
    }

    /// The eBPF instructions classic insn `pc` became, or `None` past the end.
    pub fn range(&self, pc: Pc) -> Option<Range<usize>> {
        let start = *self.addrs.get(pc.0)?;
        let end = self.addrs.get(pc.0 + 1).copied().unwrap_or(self.end);
        Some(start..end)
    }

    /// The classic instruction eBPF instruction `epc` belongs to; `None` for
    /// the prologue and past the end.
    pub fn classic_pc(&self, epc: ebpf::Pc) -> Option<Pc> {
        if epc.0 >= self.end || self.addrs.first().is_none_or(|&first| epc.0 < first) {
            return None;
        }
        // Groups are never empty, so the last start <= epc is the owner.
        let owner = self.addrs.partition_point(|&start| start <= epc.0);
        owner.checked_sub(1).map(Pc)
    }

    /// Length of the prologue (3, or 7 with `seen_ld_abs`).
    pub fn prologue_len(&self) -> usize {
        self.addrs.first().copied().unwrap_or(self.end)
    }

    /// Number of classic instructions mapped.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// True when no classic instruction is mapped (never for a conversion result).
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
}

/// A converted program, as `bpf_migrate_filter()` leaves it in `fp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    /// The eBPF program (`fp->insnsi`, `fp->len` instructions).
    pub insns: Vec<Insn>,
    /// Classic index → eBPF range (`addrs[]` of the last pass).
    pub pc_map: PcMap,
    /// `fp->aux->stack_depth`: `max(4k + 4)` over every `st`/`stx M[k]`, 0 if none.
    pub stack_depth: u32,
    /// The converter saw a packet load (`ld{,h,b} [k]` outside the ancillary
    /// range, `ld [x + k]` or `ldxb 4*([k]&0xf)`) and emitted the 4-instruction
    /// `skb->data` / headlen prologue. Always false for seccomp and in legacy mode.
    pub seen_ld_abs: bool,
}

/// Converts a validated classic program to eBPF exactly as Linux 6.18 does.
///
/// Reads [`cbpf::Program::insns`] (after `seccomp_check_filter()`'s rewrites,
/// as the kernel converts them).
///
/// Mirrors `bpf_migrate_filter()` in net/core/filter.c (Linux 6.18): a
/// length-only `bpf_convert_filter()` call, then the emitting call.
///
/// # Deviations
/// - Socket-buffer offsets and helper ids are ours ([`ebpf::skb`]), not a
///   kernel build's.
/// - With [`Options::legacy_ld_abs`], packet loads take their Linux 4.17
///   shape (see [`Options`]).
/// - No runtime is selected (`bpf_prog_select_runtime()`): the caller picks an engine.
/// - The kernel's three traversals of the classic program (the length-only
///   call, passes 0 and 1) are two here, with the same bytes and the same
///   refusals: see the private `bpf_convert_filter` (crates/convert/src/filter.rs).
pub fn convert(prog: &cbpf::Program, opts: &Options) -> Result<Converted, ConvertError> {
    bpf_convert_filter(prog.insns(), opts, &mut Work::default())
}

/// What one conversion did, counted so tests can pin its cost as linear in
/// the program's length (no timing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Work {
    /// Traversals of the classic program.
    traversals: usize,
    /// Groups converted, over every traversal.
    groups: usize,
    /// eBPF instructions counted or written, over every traversal.
    emitted: usize,
    /// `addrs[]` entries rewritten after the traversal that set them.
    addr_fixups: usize,
}

/// What the `switch` records besides the group itself.
#[derive(Debug, Clone, Copy, Default)]
struct Facts {
    /// `*seen_ld_abs`: a packet load was converted (the 4-instruction prologue follows).
    seen_ld_abs: bool,
    /// `new_prog->aux->stack_depth`: the largest `stack_off` of a `st`/`stx`.
    stack_depth: u32,
}

/// Where a group's instructions go: the kernel's `*insn++ = ...` into
/// `tmp_insns[]` and the copy to `new_insn` at the group's end (only the
/// count `new_insn += insn - tmp_insns` when `new_prog == NULL`).
trait Emit {
    /// Appends one instruction to the current group.
    fn push(&mut self, insn: Insn);

    /// Appends a jump of the current group from classic insn `pc` to classic
    /// insn `target`, its offset set by `BPF_EMIT_JMP`.
    ///
    /// Mirrors the `BPF_EMIT_JMP` macro of `bpf_convert_filter()` in
    /// net/core/filter.c (Linux 6.18): range-checks `target`, computes
    /// `off = addrs[target] - addrs[i] - 1 - (index of the jump in its group)`
    /// (0 - index in the length-only call) and rejects offsets outside `s16`.
    ///
    /// # Deviations
    /// The pass-0 and pass-1 offsets are checked by one call (see [`Place`]).
    fn jump(&mut self, insn: Insn, pc: usize, target: i64) -> Result<(), ConvertError>;
}

/// `BPF_EMIT_JMP`'s range check: `target` as an index of the classic program.
#[inline(always)]
fn jump_target(pc: usize, target: i64, len: usize, pass: Pass) -> Result<usize, ConvertError> {
    match usize::try_from(target) {
        Ok(t) if t < len => Ok(t),
        _ => Err(bad_target(pc, target, pass)),
    }
}

#[cold]
fn bad_target(pc: usize, target: i64, pass: Pass) -> ConvertError {
    ConvertError::JumpTarget { pc: Pc(pc), target, pass }
}

#[cold]
fn bad_offset(pc: usize, target: usize, off: i64, pass: Pass) -> ConvertError {
    ConvertError::JumpOffset { pc: Pc(pc), target: Pc(target), off, pass }
}

/// The length-only call (`new_prog == NULL`): counts, writes nothing.
struct Count {
    /// `new_insn - first_insn`.
    n: usize,
    /// The classic program's length.
    len: usize,
}

impl Emit for Count {
    #[inline(always)]
    fn push(&mut self, _insn: Insn) {
        self.n += 1;
    }

    #[inline(always)]
    fn jump(&mut self, _insn: Insn, pc: usize, target: i64) -> Result<(), ConvertError> {
        // `addrs == NULL`: `off = 0 - index`, which always fits.
        jump_target(pc, target, self.len, Pass::LengthOnly)?;
        self.n += 1;
        Ok(())
    }
}

/// The emitting call: writes pass 1's instructions in place, with the
/// final `addrs[]`, and makes pass 0's check on the way.
///
/// In pass 0, `addrs[target]` of a forward target is still 0 (classic jumps
/// only go forward), so a jump placed at eBPF index `p` gets
/// `off = 0 - addrs[i] - 1 - index = -(p + 1)`: refused iff `p > 32767`,
/// whatever its target. That refusal is returned at once (pass 0 runs over
/// the whole program before pass 1); pass 1's own refusals are kept until
/// the traversal ends, so a pass-0 refusal at a later pc still wins.
struct Place<'a> {
    /// `new_prog->insnsi`: `new_len` instructions, zeroed.
    out: &'a mut [Insn],
    /// `new_insn - first_insn`: where the next instruction goes.
    at: usize,
    /// The final `addrs[]`.
    addrs: &'a [usize],
    /// Pass 1's first refusal.
    pass1_err: Option<ConvertError>,
}

impl Emit for Place<'_> {
    #[inline(always)]
    fn push(&mut self, insn: Insn) {
        // Past the counted length only if the traversals disagree: the
        // caller's length check reports it.
        if let Some(slot) = self.out.get_mut(self.at) {
            *slot = insn;
        }
        self.at += 1;
    }

    #[inline(always)]
    fn jump(&mut self, mut insn: Insn, pc: usize, target: i64) -> Result<(), ConvertError> {
        let t = jump_target(pc, target, self.addrs.len(), Pass::Pass0)?;
        // addrs[i] + index: where this jump lands.
        let at = self.at as i64;
        if at > i64::from(i16::MAX) {
            return Err(bad_offset(pc, t, -at - 1, Pass::Pass0));
        }
        let off = self.addrs.get(t).map_or(0, |&a| a as i64) - at - 1;
        match i16::try_from(off) {
            Ok(off) => insn.off = off,
            Err(_) => {
                if self.pass1_err.is_none() {
                    self.pass1_err = Some(bad_offset(pc, t, off, Pass::Pass1));
                }
            }
        }
        self.push(insn);
        Ok(())
    }
}

/// Remaps classic instructions to eBPF: both calls `bpf_migrate_filter()` makes.
///
/// Mirrors `bpf_convert_filter()` in net/core/filter.c (Linux 6.18): the
/// length-only call, then the emitting call's `do_pass` loop (pass 0 with
/// an incomplete `addrs[]`, pass 1 with the final one); the prologue, the
/// per-opcode `switch` (same case order) and the `BPF_EMIT_JMP` offset
/// rules, including the pass-0 quirk: forward targets still have
/// `addrs[target] == 0`, so a jump placed after eBPF index 32767 fails even
/// when its real offset is small.
///
/// # Deviations
/// Two traversals of the classic program instead of three, with the
/// kernel's bytes and refusals:
/// - The length-only traversal ([`Count`]) also records `addrs[]`. A
///   group's size depends only on its instruction and [`Options`] (never on
///   `addrs[]` or the pass), so the group starts passes 0 and 1 record are
///   the running count of the length call; when it saw a packet load, the
///   4 prologue instructions the emitting call puts first are added to every
///   entry once at the end. `stack_depth` is taken from it too (the kernel
///   records it only when emitting: the same instructions, the same value).
/// - Pass 0 is not run to emit: pass 1 overwrites every instruction it
///   writes and always follows it (`new_flen` starts at 0). Its one visible
///   effect, its refusal, is checked while pass 1's bytes are placed
///   ([`Place`]). The kernel's `pass > 2` check cannot fire (pass 1 counts
///   what pass 0 counted); `BUG_ON(*new_len != new_flen)` becomes
///   [`ConvertError::LengthMismatch`].
/// - `target = i + k + 1` is computed without C's unsigned wrap-around
///   (`k = 0xffffffff` would wrap to `i` in the kernel); `bpf_check_classic()`
///   rejects such jumps first, so validated programs never differ.
fn bpf_convert_filter(prog: &[cbpf::Insn], opts: &Options, work: &mut Work) -> Result<Converted, ConvertError> {
    let len = prog.len();
    if len == 0 || len > MAX_INSNS {
        return Err(ConvertError::BadLength { len });
    }
    // 1st call: calculate the new program length (and every group's start).
    let mut facts = Facts::default();
    let mut addrs = vec![0; len];
    let mut new_len = length_call(prog, opts, &mut addrs, &mut facts, work)?;
    if facts.seen_ld_abs {
        // Prologue bits.
        new_len += LD_ABS_PROLOGUE_LEN;
        for a in &mut addrs {
            *a += LD_ABS_PROLOGUE_LEN;
        }
        work.addr_fixups += len;
    }
    // 2nd call: remap (pass 1's bytes, pass 0's refusal).
    let mut insns = vec![Insn::default(); new_len];
    let end = emitting_call(prog, opts, &addrs, &mut insns, facts.seen_ld_abs, work)?;
    if end != new_len {
        return Err(ConvertError::LengthMismatch { expected: new_len, got: end });
    }
    Ok(Converted {
        insns,
        pc_map: PcMap { addrs, end },
        stack_depth: facts.stack_depth,
        seen_ld_abs: facts.seen_ld_abs,
    })
}

/// The length-only traversal: the new length without the `seen_ld_abs`
/// prologue, each group's start written to `addrs` (one slot per classic
/// instruction; prologue of 3 counted).
#[inline(never)]
fn length_call(
    prog: &[cbpf::Insn],
    opts: &Options,
    addrs: &mut [usize],
    facts: &mut Facts,
    work: &mut Work,
) -> Result<usize, ConvertError> {
    let mut count = Count { n: PROLOGUE_LEN, len: prog.len() };
    let mut groups = 0;
    for ((i, fp), slot) in prog.iter().enumerate().zip(addrs.iter_mut()) {
        *slot = count.n;
        convert_one(fp, i, opts, &mut count, facts)?;
        groups += 1;
    }
    work.groups += groups;
    work.traversals += 1;
    work.emitted += count.n - PROLOGUE_LEN;
    Ok(count.n)
}

/// The emitting traversal: the prologue and every group, with the final
/// `addrs[]`, into `out` (`new_len` instructions). Returns how many it
/// placed (`new_flen`).
#[inline(never)]
fn emitting_call(
    prog: &[cbpf::Insn],
    opts: &Options,
    addrs: &[usize],
    out: &mut [Insn],
    seen_ld_abs: bool,
    work: &mut Work,
) -> Result<usize, ConvertError> {
    let mut place = Place { out, at: 0, addrs, pass1_err: None };
    prologue(&mut place, seen_ld_abs);
    let mut again = Facts::default();
    let mut groups = 0;
    for (i, fp) in prog.iter().enumerate() {
        convert_one(fp, i, opts, &mut place, &mut again)?;
        groups += 1;
    }
    work.groups += groups;
    work.traversals += 1;
    if let Some(err) = place.pass1_err {
        return Err(err);
    }
    work.emitted += place.at;
    Ok(place.at)
}

/// The emitting call's prologue: classic BPF expects A and X to be reset
/// first; with `seen_ld_abs`, `skb->data` and the headlen are cached in D and H.
fn prologue(out: &mut impl Emit, seen_ld_abs: bool) {
    out.push(alu32_reg(AluOp::Xor, REG_A, REG_A));
    out.push(alu32_reg(AluOp::Xor, REG_X, REG_X));
    out.push(mov64_reg(REG_CTX, REG_ARG1));
    if seen_ld_abs {
        out.push(ldx_mem(Size::DW, REG_D, REG_CTX, skb::OFF_DATA));
        out.push(ldx_mem(Size::W, REG_H, REG_CTX, skb::OFF_LEN));
        out.push(ldx_mem(Size::W, REG_TMP, REG_CTX, skb::OFF_DATA_LEN));
        out.push(alu32_reg(AluOp::Sub, REG_H, REG_TMP));
    }
}

/// One classic instruction to its eBPF group.
///
/// Mirrors the `switch (fp->code)` body of `bpf_convert_filter()` in
/// net/core/filter.c (Linux 6.18), cases in the kernel's order. Records
/// `*seen_ld_abs` and raises `stack_depth` (for `st`/`stx`) in `facts`.
///
/// # Deviations
/// - With [`Options::legacy_ld_abs`], packet loads and `ldxb` take their
///   Linux 4.17 shape (see [`Options`]).
#[inline(always)]
fn convert_one<E: Emit>(
    fp: &cbpf::Insn,
    pc: usize,
    opts: &Options,
    g: &mut E,
    facts: &mut Facts,
) -> Result<(), ConvertError> {
    let i = pc as i64;
    let code = fp.code;
    let class = code & 0x07;
    let k = fp.k as i32;
    // All codes matched below are < 0x100 (the classic table ends at 0xb1).
    let code8 = (code & 0xff) as u8;
    match code {
        // All arithmetic insns and skb loads map as-is.
        c::ALU_ADD_X
        | c::ALU_ADD_K
        | c::ALU_SUB_X
        | c::ALU_SUB_K
        | c::ALU_AND_X
        | c::ALU_AND_K
        | c::ALU_OR_X
        | c::ALU_OR_K
        | c::ALU_LSH_X
        | c::ALU_LSH_K
        | c::ALU_RSH_X
        | c::ALU_RSH_K
        | c::ALU_XOR_X
        | c::ALU_XOR_K
        | c::ALU_MUL_X
        | c::ALU_MUL_K
        | c::ALU_DIV_X
        | c::ALU_DIV_K
        | c::ALU_MOD_X
        | c::ALU_MOD_K
        | c::ALU_NEG
        | c::LD_W_ABS
        | c::LD_H_ABS
        | c::LD_B_ABS
        | c::LD_W_IND
        | c::LD_H_IND
        | c::LD_B_IND => {
            // Check for an overloaded BPF extension and convert it directly.
            if class == c::BPF_LD && code & 0xe0 == c::BPF_ABS && convert_bpf_extensions(fp, g) {
                return Ok(());
            }
            if class == c::BPF_LD && !opts.legacy_ld_abs && convert_bpf_ld_abs(fp, g) {
                facts.seen_ld_abs = true;
                return Ok(());
            }
            if code == c::ALU_DIV_X || code == c::ALU_MOD_X {
                g.push(mov32_reg(REG_X, REG_X));
                // Division by zero terminates a classic program with 0.
                g.push(jmp_imm(JmpCond::Ne, REG_X, 0, 2));
                g.push(alu32_reg(AluOp::Xor, REG_A, REG_A));
                g.push(exit());
            }
            // Legacy packet loads land here too, as in Linux 4.17.
            g.push(Insn::new(code8, REG_A, REG_X, 0, k));
        }
        c::JMP_JA => {
            let target = i + i64::from(fp.k) + 1;
            g.jump(Insn::new(code8, 0, 0, 0, 0), pc, target)?;
        }
        c::JMP_JEQ_K
        | c::JMP_JEQ_X
        | c::JMP_JSET_K
        | c::JMP_JSET_X
        | c::JMP_JGT_K
        | c::JMP_JGT_X
        | c::JMP_JGE_K
        | c::JMP_JGE_X => {
            let op = (code & 0xf0) as u8;
            let (mut insn, bpf_src) = if code & c::BPF_X == c::BPF_K && k < 0 {
                // eBPF immediates are sign-extended: zero-extend k into TMP
                // and compare against the register instead.
                g.push(mov32_imm(REG_TMP, k));
                (Insn::new(0, REG_A, REG_TMP, 0, 0), e::BPF_X)
            } else {
                let bpf_src = (code & c::BPF_X) as u8;
                let src = if bpf_src == e::BPF_X { REG_X } else { 0 };
                (Insn::new(0, REG_A, src, 0, k), bpf_src)
            };
            // Common case where 'jump_false' is the next insn.
            if fp.jf == 0 {
                insn.code = e::BPF_JMP | op | bpf_src;
                return g.jump(insn, pc, i + i64::from(fp.jt) + 1);
            }
            // Convert some jumps when 'jump_true' is the next insn.
            if fp.jt == 0 {
                let inverted = match op {
                    e::BPF_JEQ => Some(e::BPF_JNE),
                    e::BPF_JGT => Some(e::BPF_JLE),
                    e::BPF_JGE => Some(e::BPF_JLT),
                    _ => None, // goto jmp_rest
                };
                if let Some(inv) = inverted {
                    insn.code = e::BPF_JMP | inv | bpf_src;
                    return g.jump(insn, pc, i + i64::from(fp.jf) + 1);
                }
            }
            // jmp_rest: other jumps are mapped into two insns, Jxx and JA.
            insn.code = e::BPF_JMP | op | bpf_src;
            g.jump(insn, pc, i + i64::from(fp.jt) + 1)?;
            g.jump(jmp_a(0), pc, i + i64::from(fp.jf) + 1)?;
        }
        // ldxb 4 * ([k] & 0xf)
        c::LDX_B_MSH => {
            if opts.legacy_ld_abs {
                legacy_ldx_msh(fp, g);
                return Ok(());
            }
            facts.seen_ld_abs = true;
            // X = A (X is the save slot: TMP is clobbered by the helper call).
            g.push(mov64_reg(REG_X, REG_A));
            // A = *(u8 *) (skb->data + k), without the ancillary check.
            let tmp = cbpf::Insn::stmt(c::LD_B_ABS, fp.k);
            convert_bpf_ld_abs(&tmp, g);
            g.push(alu32_imm(AluOp::And, REG_A, 0xf));
            g.push(alu32_imm(AluOp::Lsh, REG_A, 2));
            g.push(mov64_reg(REG_TMP, REG_X));
            g.push(mov64_reg(REG_X, REG_A));
            g.push(mov64_reg(REG_A, REG_TMP));
        }
        // RET_K becomes 2 insns; RET_A needs no mov as A already is r0.
        c::RET_A | c::RET_K => {
            if code & 0x18 == c::BPF_K {
                g.push(mov32_imm(REG_A, k));
            }
            g.push(exit());
        }
        // Store to stack.
        c::ST | c::STX => {
            let off = stack_offset(fp.k);
            let src = if class == c::BPF_ST { REG_A } else { REG_X };
            g.push(stx_mem(Size::W, REG_FP, src, neg_off(off)));
            // check_load_and_stores() guarantees loads follow stores, so
            // tracking ST/STX alone gives the depth.
            facts.stack_depth = facts.stack_depth.max(off);
        }
        // Load from stack.
        c::LD_MEM | c::LDX_MEM => {
            let off = stack_offset(fp.k);
            let dst = if class == c::BPF_LD { REG_A } else { REG_X };
            g.push(ldx_mem(Size::W, dst, REG_FP, neg_off(off)));
        }
        // A = K or X = K
        c::LD_IMM | c::LDX_IMM => {
            let dst = if class == c::BPF_LD { REG_A } else { REG_X };
            g.push(mov32_imm(dst, k));
        }
        // X = A
        c::MISC_TAX => g.push(mov64_reg(REG_X, REG_A)),
        // A = X
        c::MISC_TXA => g.push(mov64_reg(REG_A, REG_X)),
        // A = skb->len or X = skb->len
        c::LD_W_LEN | c::LDX_W_LEN => {
            let dst = if class == c::BPF_LD { REG_A } else { REG_X };
            g.push(ldx_mem(Size::W, dst, REG_CTX, skb::OFF_LEN));
        }
        // Access seccomp_data fields: A = *(u32 *) (ctx + k).
        c::LDX_W_ABS => g.push(ldx_mem(Size::W, REG_A, REG_CTX, k as i16)),
        _ => return Err(ConvertError::UnknownOpcode { pc: Pc(pc), code }),
    }
    Ok(())
}

/// `stack_off = k * 4 + 4`. `k < 16` for validated programs; wrapping keeps
/// unvalidated input from panicking.
fn stack_offset(k: u32) -> u32 {
    k.wrapping_mul(4).wrapping_add(4)
}

/// `-stack_off` as an `s16` instruction offset (truncated as C's implicit conversion).
fn neg_off(stack_off: u32) -> i16 {
    (stack_off as i32).wrapping_neg() as i16
}

/// Converts `ld{,h,b} [SKF_AD_OFF + x]` ancillary loads; false for any other `k`.
///
/// Mirrors `convert_bpf_extensions()` and the `convert_skb_access()` cases it
/// uses, in net/core/filter.c (Linux 6.18), case order kept.
///
/// # Deviations
/// - `sk_buff` / `net_device` offsets and helper ids are ours ([`ebpf::skb`]).
/// - `SKF_AD_PKTTYPE` has the little-endian-bitfield shape (no `>>= 5`).
#[inline(always)]
fn convert_bpf_extensions(fp: &cbpf::Insn, g: &mut impl Emit) -> bool {
    let Some(x) = fp.k.checked_sub(c::SKF_AD_OFF) else {
        return false;
    };
    match x {
        c::SKF_AD_PROTOCOL => {
            // A = ntohs(*(u16 *) (CTX + offsetof(protocol)))
            g.push(ldx_mem(Size::H, REG_A, REG_CTX, skb::OFF_PROTOCOL));
            g.push(endian_from_be(REG_A, 16));
        }
        c::SKF_AD_PKTTYPE => convert_skb_access(c::SKF_AD_PKTTYPE, REG_A, REG_CTX, g),
        c::SKF_AD_IFINDEX | c::SKF_AD_HATYPE => {
            // tmp = skb->dev; if (tmp == NULL) return A;
            g.push(ldx_mem(Size::DW, REG_TMP, REG_CTX, skb::OFF_DEV));
            g.push(jmp_imm(JmpCond::Ne, REG_TMP, 0, 1));
            g.push(exit());
            if x == c::SKF_AD_IFINDEX {
                g.push(ldx_mem(Size::W, REG_A, REG_TMP, skb::DEV_OFF_IFINDEX));
            } else {
                g.push(ldx_mem(Size::H, REG_A, REG_TMP, skb::DEV_OFF_TYPE));
            }
        }
        c::SKF_AD_MARK => convert_skb_access(c::SKF_AD_MARK, REG_A, REG_CTX, g),
        c::SKF_AD_RXHASH => g.push(ldx_mem(Size::W, REG_A, REG_CTX, skb::OFF_HASH)),
        c::SKF_AD_QUEUE => convert_skb_access(c::SKF_AD_QUEUE, REG_A, REG_CTX, g),
        c::SKF_AD_VLAN_TAG => convert_skb_access(c::SKF_AD_VLAN_TAG, REG_A, REG_CTX, g),
        c::SKF_AD_VLAN_TAG_PRESENT => convert_skb_access(c::SKF_AD_VLAN_TAG_PRESENT, REG_A, REG_CTX, g),
        c::SKF_AD_VLAN_TPID => {
            // A = ntohs(*(u16 *) (CTX + offsetof(vlan_proto)))
            g.push(ldx_mem(Size::H, REG_A, REG_CTX, skb::OFF_VLAN_PROTO));
            g.push(endian_from_be(REG_A, 16));
        }
        c::SKF_AD_PAY_OFFSET | c::SKF_AD_NLATTR | c::SKF_AD_NLATTR_NEST | c::SKF_AD_CPU | c::SKF_AD_RANDOM => {
            // call(arg1 = CTX, arg2 = A, arg3 = X)
            g.push(mov64_reg(REG_ARG1, REG_CTX));
            g.push(mov64_reg(REG_ARG2, REG_A));
            g.push(mov64_reg(REG_ARG3, REG_X));
            let id = match x {
                c::SKF_AD_PAY_OFFSET => skb::helper::SKB_GET_PAY_OFFSET,
                c::SKF_AD_NLATTR => skb::helper::SKB_GET_NLATTR,
                c::SKF_AD_NLATTR_NEST => skb::helper::SKB_GET_NLATTR_NEST,
                c::SKF_AD_CPU => skb::helper::GET_RAW_CPU_ID,
                _ => skb::helper::USER_RND_U32,
            };
            g.push(call(id));
        }
        c::SKF_AD_ALU_XOR_X => g.push(alu32_reg(AluOp::Xor, REG_A, REG_X)),
        _ => return false,
    }
    true
}

/// Reads one `sk_buff` field for an ancillary load.
///
/// Mirrors `convert_skb_access()` in net/core/filter.c (Linux 6.18), for the
/// five fields `convert_bpf_extensions()` passes to it.
///
/// # Deviations
/// - Offsets are ours ([`ebpf::skb`]); `pkt_type` is read as the low 3 bits
///   of the byte at [`skb::OFF_PKT_TYPE`] (little-endian bitfield).
#[inline(always)]
fn convert_skb_access(skb_field: u32, dst: u8, src: u8, g: &mut impl Emit) {
    match skb_field {
        c::SKF_AD_MARK => g.push(ldx_mem(Size::W, dst, src, skb::OFF_MARK)),
        c::SKF_AD_PKTTYPE => {
            g.push(ldx_mem(Size::B, dst, src, skb::OFF_PKT_TYPE));
            g.push(alu32_imm(AluOp::And, dst, PKT_TYPE_MAX));
        }
        c::SKF_AD_QUEUE => g.push(ldx_mem(Size::H, dst, src, skb::OFF_QUEUE_MAPPING)),
        c::SKF_AD_VLAN_TAG => g.push(ldx_mem(Size::H, dst, src, skb::OFF_VLAN_TCI)),
        c::SKF_AD_VLAN_TAG_PRESENT => {
            // dst = vlan_all != 0
            g.push(ldx_mem(Size::W, dst, src, skb::OFF_VLAN_ALL));
            g.push(jmp_imm(JmpCond::Eq, dst, 0, 1));
            g.push(mov32_imm(dst, 1));
        }
        _ => {}
    }
}

/// Converts a packet load `ld{,h,b} [k]` / `ld{,h,b} [x + k]`.
///
/// Mirrors `convert_bpf_ld_abs()` in net/core/filter.c (Linux 6.18) with
/// `CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS` set (x86_64, arm64): the inline
/// fast path (`headlen - offset >= size` → load from the cached `skb->data`)
/// is emitted for every direct load with `offset >= 0`, then the slow path
/// calling `bpf_skb_load_helper_{8,16,32}(skb, data, headlen, offset)`,
/// which on failure makes the filter return 0.
///
/// # Deviations
/// - Helper ids are ours ([`ebpf::skb::helper`]).
/// - Strict-alignment builds (the `!unaligned_ok` branch with `NET_IP_ALIGN`)
///   are not modelled.
#[inline(always)]
fn convert_bpf_ld_abs(fp: &cbpf::Insn, g: &mut impl Emit) -> bool {
    // cBPF and eBPF share the BPF_SIZE bits.
    let size_of = Size::of((fp.code & 0x18) as u8);
    let (size, helper) = match size_of {
        Size::B => (1, skb::helper::SKB_LOAD_8),
        Size::H => (2, skb::helper::SKB_LOAD_16),
        Size::W => (4, skb::helper::SKB_LOAD_32),
        Size::DW => return false,
    };
    let endian = size_of != Size::B;
    let indirect = fp.code & 0xe0 == c::BPF_IND;
    let offset = fp.k as i32;
    if !indirect && offset >= 0 {
        let ldx_off_ok = offset <= i32::from(i16::MAX);
        g.push(mov64_reg(REG_TMP, REG_H));
        if offset != 0 {
            g.push(alu64_imm(AluOp::Sub, REG_TMP, offset));
        }
        let skip = 2 + i16::from(endian) + if ldx_off_ok { 0 } else { 2 };
        g.push(jmp_imm(JmpCond::Slt, REG_TMP, size, skip));
        if ldx_off_ok {
            g.push(ldx_mem(size_of, REG_A, REG_D, offset as i16));
        } else {
            g.push(mov64_reg(REG_TMP, REG_D));
            g.push(alu64_imm(AluOp::Add, REG_TMP, offset));
            g.push(ldx_mem(size_of, REG_A, REG_TMP, 0));
        }
        if endian {
            g.push(endian_from_be(REG_A, size * 8));
        }
        g.push(jmp_a(8));
    }
    g.push(mov64_reg(REG_ARG1, REG_CTX));
    g.push(mov64_reg(REG_ARG2, REG_D));
    g.push(mov64_reg(REG_ARG3, REG_H));
    if !indirect {
        g.push(mov64_imm(REG_ARG4, offset));
    } else {
        g.push(mov64_reg(REG_ARG4, REG_X));
        if fp.k != 0 {
            g.push(alu64_imm(AluOp::Add, REG_ARG4, offset));
        }
    }
    g.push(call(helper));
    g.push(jmp_imm(JmpCond::Sge, REG_A, 0, 2));
    g.push(alu32_reg(AluOp::Xor, REG_A, REG_A));
    g.push(exit());
    true
}

/// `ldxb 4*([k]&0xf)` in its pre-4.18 shape, around an eBPF `LD|ABS|B`.
///
/// Mirrors the `BPF_LDX | BPF_MSH | BPF_B` case of `bpf_convert_filter()` in
/// net/core/filter.c (Linux 4.14 ..= 4.17): `tmp = A; A = LD_ABS_B k;
/// A &= 0xf; A <<= 2; X = A; A = tmp` with that era's `BPF_REG_TMP` (r8).
///
/// # Deviations
/// None for this instruction (the legacy mode's other instructions keep
/// their 6.18 shapes).
#[inline(always)]
fn legacy_ldx_msh(fp: &cbpf::Insn, g: &mut impl Emit) {
    g.push(mov64_reg(LEGACY_REG_TMP, REG_A));
    g.push(ld_abs(Size::B, fp.k as i32));
    g.push(alu32_imm(AluOp::And, REG_A, 0xf));
    g.push(alu32_imm(AluOp::Lsh, REG_A, 2));
    g.push(mov64_reg(REG_X, REG_A));
    g.push(mov64_reg(REG_A, LEGACY_REG_TMP));
}

#[cfg(test)]
mod tests {
    use super::*;
    use cbpf::{validate, Insn as C, Mode};

    fn conv(mode: Mode, insns: &[C]) -> Converted {
        let prog = validate(insns, mode).unwrap();
        convert(&prog, &Options::default()).unwrap()
    }

    /// The converter's own checks, which a validated program never reaches
    /// (`bpf_check_classic()` checked the same first): `bpf_convert_filter()`
    /// refuses a length outside `1..=BPF_MAXINSNS`, `BPF_EMIT_JMP` a target
    /// outside `0..len`.
    #[test]
    fn own_checks_refuse_lengths_and_targets_outside_the_program() {
        let ret = C::stmt(6, 0);
        for len in [0, 4097] {
            let err = bpf_convert_filter(&vec![ret; len], &Options::default(), &mut Work::default()).unwrap_err();
            assert_eq!((err.pc(), &err), (None, &ConvertError::BadLength { len }));
        }
        assert!(bpf_convert_filter(&vec![ret; 4096], &Options::default(), &mut Work::default()).is_ok());
        assert_eq!(jump_target(1, 2, 3, Pass::Pass1), Ok(2));
        for target in [3, -1, i64::MAX] {
            let want = ConvertError::JumpTarget { pc: Pc(1), target, pass: Pass::Pass1 };
            assert_eq!(jump_target(1, target, 3, Pass::Pass1), Err(want));
        }
    }

    /// SPEC §4.8 variant: `jeq #k, 0, 1` becomes JNE X.
    #[test]
    fn worked_example_a_inverted() {
        let out = conv(
            Mode::Seccomp,
            &[
                C::stmt(0x20, 4),
                C::jump(0x15, 0xc000003e, 0, 1),
                C::stmt(0x06, 0x7fff_0000),
                C::stmt(0x06, 0x8000_0000),
            ],
        );
        assert_eq!(out.insns.len(), 10);
        assert_eq!(out.insns[5], Insn::new(0x5d, 0, 2, 2, 0));
    }

    // SPEC §4.8 (a) and §4.9 (b), byte for byte with their pc maps, stack
    // depth and `seen_ld_abs`: the converter filetests
    // testdata/convert/seccomp_spec_4_8_arch_check.txt and
    // seccomp_spec_4_9_div_x_jgt_jset.txt (crates/integration).

    /// SPEC §4.9's list of verified single-instruction translations.
    #[test]
    fn verified_single_instructions() {
        let cases: &[(Mode, C, Insn)] = &[
            (Mode::Seccomp, C::stmt(0x80, 0), Insn::new(0xb4, 0, 0, 0, 64)),
            (Mode::Seccomp, C::stmt(0x81, 0), Insn::new(0xb4, 7, 0, 0, 64)),
            (Mode::Seccomp, C::stmt(0x84, 0), Insn::new(0x84, 0, 7, 0, 0)),
            (Mode::Seccomp, C::stmt(0x64, 31), Insn::new(0x64, 0, 7, 0, 31)),
            (Mode::Seccomp, C::stmt(0x7c, 0), Insn::new(0x7c, 0, 7, 0, 0)),
            (Mode::Seccomp, C::stmt(0x87, 0), Insn::new(0xbf, 0, 7, 0, 0)),
            (Mode::Seccomp, C::stmt(0x01, 0xffff_ffff), Insn::new(0xb4, 7, 0, 0, -1)),
            (Mode::Seccomp, C::stmt(0x02, 0), Insn::new(0x63, 10, 0, -4, 0)),
            (Mode::Seccomp, C::stmt(0x03, 15), Insn::new(0x63, 10, 7, -64, 0)),
            (Mode::Seccomp, C::stmt(0x05, 0), Insn::new(0x05, 0, 0, 0, 0)),
            (Mode::Socket, C::stmt(0x94, 7), Insn::new(0x94, 0, 7, 0, 7)),
        ];
        for (mode, insn, want) in cases {
            let out = conv(*mode, &[*insn, C::stmt(0x06, 0)]);
            assert_eq!(out.insns[3], *want, "{insn:?}");
        }
        let out = conv(Mode::Seccomp, &[C::stmt(0x03, 15), C::stmt(0x61, 15), C::stmt(0x06, 0)]);
        assert_eq!(out.stack_depth, 64);
        assert_eq!(out.insns[4], Insn::new(0x61, 7, 10, -64, 0));
    }

    /// SPEC §4.5's verified jump shapes.
    #[test]
    fn jump_shapes() {
        let run = |j: C| conv(Mode::Seccomp, &[j, C::stmt(6, 0), C::stmt(6, 1), C::stmt(6, 2)]);
        let out = run(C::jump(0x15, 5, 0, 0));
        assert_eq!(out.insns[3], Insn::new(0x15, 0, 0, 0, 5));
        // jge x, 0, 1 -> JLT X to i+2 (ret #1 at e6): off 2.
        let out = run(C::jump(0x3d, 0, 0, 1));
        assert_eq!(out.insns[3], Insn::new(0xad, 0, 7, 2, 0));
        let out = run(C::jump(0x4d, 0, 0, 1));
        assert_eq!(&out.insns[3..5], [Insn::new(0x4d, 0, 7, 1, 0), Insn::new(0x05, 0, 0, 2, 0)]);
        let out = run(C::jump(0x25, 0xffff_ff00, 1, 2));
        assert_eq!(
            &out.insns[3..6],
            [Insn::new(0xb4, 2, 0, 0, 0xffff_ff00u32 as i32), Insn::new(0x2d, 0, 2, 3, 0), Insn::new(0x05, 0, 0, 4, 0)]
        );
    }

    #[test]
    fn msh_program_size_limit_matches_kernel_quirk() {
        let msh = |n: usize| {
            let mut p = vec![C::stmt(0xb1, 0); n];
            p.push(C::jump(0x15, 0, 1, 0));
            p.push(C::stmt(6, 1));
            p.push(C::stmt(6, 0));
            validate(&p, Mode::Socket).unwrap()
        };
        let err = convert(&msh(2000), &Options::default()).unwrap_err();
        assert!(matches!(err, ConvertError::JumpOffset { pc: Pc(2000), pass: Pass::Pass0, .. }), "{err}");
        assert_eq!(err.pc(), Some(Pc(2000)));
        assert!(err.to_string().starts_with("insn 2000: ") && err.to_string().ends_with("(pass 0)"), "{err}");
        // Pass 0's offset for a jump at eBPF index p is -(p + 1): index 32767
        // (7 + 18 * 1820) still fits in s16, 32785 does not.
        assert!(convert(&msh(1820), &Options::default()).is_ok());
        let err = convert(&msh(1821), &Options::default()).unwrap_err();
        assert!(matches!(err, ConvertError::JumpOffset { pc: Pc(1821), off: -32786, pass: Pass::Pass0, .. }), "{err}");
        let ok = convert(&msh(1800), &Options::default()).unwrap();
        assert!(ok.seen_ld_abs);
        // 7 prologue + 18 per ldxb + jeq + 2 (ret #1) + 2 (ret #0).
        assert_eq!(ok.insns.len(), 7 + 18 * 1800 + 1 + 2 + 2);
    }

    /// Conversion work is linear in the program's length: two traversals,
    /// one group per classic instruction each, instructions counted and
    /// written in proportion to the program, `addrs[]` rewritten at most
    /// once, and the output never regrown (its capacity is its length).
    #[test]
    fn work_is_linear_in_length() {
        // Seccomp: ld nr; jeq k (1 insn); jeq with jf (2); ret (2), the last
        // ret reached from every jeq by a long forward `ja` chain.
        let seccomp = |n: usize| {
            let mut p = Vec::new();
            while p.len() + 5 < n {
                let k = p.len() as u32;
                p.push(C::stmt(0x20, 0));
                p.push(C::jump(0x15, k, 0, 1));
                p.push(C::stmt(0x06, 0x7fff_0000));
                p.push(C::jump(0x25, k, 1, 0));
                p.push(C::stmt(0x05, 0));
            }
            while p.len() + 1 < n {
                p.push(C::stmt(0x87, 0));
            }
            p.push(C::stmt(0x06, 0));
            // Every `ja` to the final ret.
            let last = p.len() - 1;
            for (pc, insn) in p.iter_mut().enumerate() {
                if insn.code == 0x05 {
                    insn.k = (last - pc - 1) as u32;
                }
            }
            validate(&p, Mode::Seccomp).unwrap()
        };
        // Socket: packet loads (the `seen_ld_abs` fix-up of `addrs[]`).
        let socket = |n: usize| {
            let mut p: Vec<C> = (0..n - 1).map(|i| C::stmt(if i % 2 == 0 { 0x30 } else { 0xb1 }, 14)).collect();
            p.push(C::stmt(0x16, 0));
            validate(&p, Mode::Socket).unwrap()
        };
        for (shape, build) in [("seccomp", &seccomp as &dyn Fn(usize) -> cbpf::Program), ("socket", &socket)] {
            let mut per_insn = Vec::new();
            for n in [1024, 2048, 4096] {
                let prog = build(n);
                assert_eq!(prog.len(), n);
                let mut work = Work::default();
                let out = bpf_convert_filter(prog.insns(), &Options::default(), &mut work).unwrap();
                assert_eq!(out, convert(&prog, &Options::default()).unwrap());
                assert_eq!(out.insns.capacity(), out.insns.len(), "{shape} {n}: output regrown");
                assert_eq!(work.traversals, 2, "{shape} {n}");
                assert_eq!(work.groups, 2 * n, "{shape} {n}");
                let prologue = out.pc_map.prologue_len();
                assert_eq!(work.emitted, 2 * out.insns.len() - prologue, "{shape} {n}");
                assert_eq!(work.addr_fixups, if out.seen_ld_abs { n } else { 0 }, "{shape} {n}");
                per_insn.push(work.emitted as f64 / n as f64);
            }
            // The same instruction mix at every size: the same work per instruction.
            let (min, max) = per_insn.iter().fold((f64::MAX, 0f64), |(lo, hi), &w| (lo.min(w), hi.max(w)));
            assert!(max - min < 0.05, "{shape}: emitted per classic insn {per_insn:?}");
        }
    }

    /// The kernel runs pass 0 over the whole program before pass 1: a pass-0
    /// refusal at a later pc wins over a pass-1 refusal at an earlier one,
    /// and pass 1 speaks only when pass 0 accepted everything.
    #[test]
    fn pass0_refusal_precedes_pass1_refusal() {
        // ja over `n` ldxb (18 eBPF insns each), a jeq, two rets.
        let prog = |n: usize| {
            let mut p = vec![C::stmt(0x05, n as u32)];
            p.extend(std::iter::repeat_n(C::stmt(0xb1, 0), n));
            p.push(C::jump(0x15, 0, 1, 0));
            p.push(C::stmt(6, 1));
            p.push(C::stmt(6, 0));
            validate(&p, Mode::Socket).unwrap()
        };
        // 1900 ldxb: the ja's real offset (18 * 1900) overflows, but the
        // jeq sits at eBPF index 7 + 1 + 18 * 1900 = 34208 > 32767, so
        // pass 0 refuses it first.
        let err = convert(&prog(1900), &Options::default()).unwrap_err();
        assert!(matches!(err, ConvertError::JumpOffset { pc: Pc(1901), pass: Pass::Pass0, off: -34209, .. }), "{err}");
        // 1800 ldxb: the jeq at 32408 passes pass 0; the ja's offset 32400 fits.
        let ok = convert(&prog(1800), &Options::default()).unwrap();
        assert_eq!(ok.insns[7].off, 18 * 1800);
        // 1819 ldxb: the jeq lands on 7 + 1 + 18 * 1819 = 32750 (pass 0
        // accepts) and the ja's offset 32742 fits; at 1820 the jeq lands on
        // 32768 and pass 0 refuses it.
        let ok = convert(&prog(1819), &Options::default()).unwrap();
        assert_eq!(ok.insns[7].off, 32742);
        let err = convert(&prog(1820), &Options::default()).unwrap_err();
        assert!(matches!(err, ConvertError::JumpOffset { pc: Pc(1821), pass: Pass::Pass0, .. }), "{err}");
        // The ja alone, over 1821 ldxb to the ret: placed at 7, offset
        // 18 * 1821 = 32778; only pass 1 refuses.
        let mut p = vec![C::stmt(0x05, 1821)];
        p.extend(std::iter::repeat_n(C::stmt(0xb1, 0), 1821));
        p.push(C::stmt(6, 0));
        let err = convert(&validate(&p, Mode::Socket).unwrap(), &Options::default()).unwrap_err();
        assert_eq!(err, ConvertError::JumpOffset { pc: Pc(0), target: Pc(1822), off: 32778, pass: Pass::Pass1 });
    }

    #[test]
    fn pc_map_reverse_lookup() {
        let out =
            conv(Mode::Seccomp, &[C::stmt(0x20, 4), C::jump(0x15, 0xc000003e, 1, 0), C::stmt(6, 0), C::stmt(6, 1)]);
        assert_eq!(out.pc_map.classic_pc(ebpf::Pc(0)), None);
        assert_eq!(out.pc_map.classic_pc(ebpf::Pc(3)), Some(Pc(0)));
        assert_eq!(out.pc_map.classic_pc(ebpf::Pc(5)), Some(Pc(1)));
        assert_eq!(out.pc_map.classic_pc(ebpf::Pc(9)), Some(Pc(3)));
        assert_eq!(out.pc_map.classic_pc(ebpf::Pc(10)), None);
        assert_eq!(out.pc_map.range(Pc(1)), Some(4..6));
        assert_eq!(out.pc_map.range(Pc(3)), Some(8..10));
        assert_eq!(out.pc_map.prologue_len(), 3);
        assert_eq!(out.pc_map.addrs(), [3, 4, 6, 8]);
        assert_eq!((out.pc_map.len(), out.pc_map.is_empty()), (4, false));
        assert!(PcMap::default().is_empty());
    }
}
