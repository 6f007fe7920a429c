//! The seccomp XDP harness: a loadable seccomp program behind an XDP
//! prologue whose packet is the 64-byte `struct seccomp_data`, so
//! `BPF_PROG_TEST_RUN` runs the filter in the kernel (its JIT) on any
//! input, for every arch and syscall number, without a system call.
//!
//! ```text
//! 0: r2 = *(u32 *)(r1 +0)      xdp_md->data
//! 1: r3 = *(u32 *)(r1 +4)      xdp_md->data_end
//! 2: r1 = r2
//! 3: r1 += 64                  sizeof(struct seccomp_data)
//! 4: if r1 <= r3 goto pc+2     the packet holds the 64 bytes
//! 5: w0 = 0                    XDP_ABORTED: a shorter packet (never sent)
//! 6: exit
//! 7: r1 = r2                   the context of the loadable program
//! 8: ...                       the loadable program; its exits return the filter's value
//! ```
//!
//! The verifier lets a program read packet bytes only below a bound it has
//! seen compared with `data_end` (`find_good_pkt_pointers()` after the
//! `r1 <= r3` test, kernel/bpf/verifier.c, Linux 6.18), so the prologue
//! compares `data + 64` and the filter's word loads at `r6 + k`
//! (`k + 4 <= 64`, `seccomp_check_filter()`) pass `check_packet_access()`.
//!
//! The filter's value comes back whole: an XDP program's r0 is not held to
//! the XDP actions by the verifier (`check_return_code()` has no range for
//! `BPF_PROG_TYPE_XDP` without a devmap/cpumap attach type), and
//! `bpf_prog_test_run_xdp()` (net/bpf/test_run.c) reports the low 32 bits of
//! r0 as `retval` (`bpf_prog_run_xdp()` changes only `XDP_TX` on a bonding
//! slave; the test run's device is the loopback). The converted program's
//! r0 never has high bits set (every classic value is 32 bits wide).
//! `crates/integration/tests/loadable.rs` pins both against the running kernel.
//!
//! The packet is the input as its arch's kernel lays it out
//! ([`cbpf::SeccompData::in_kernel_order`]: a big-endian arch's 64-bit
//! fields high half first), the layout our interpreters read too.
//!
//! # The timing harness: N copies in one run
//!
//! `BPF_PROG_TEST_RUN` reports the mean time per run in whole nanoseconds
//! (`bpf_test_timer_leave()` in net/bpf/test_run.c divides by `repeat`
//! with integer division), so a filter that costs a fraction of a
//! nanosecond above the harness reads 0 or 1. [`seccomp_copies`] runs the
//! filter `copies` times in one run, back to back, and [`baseline_copies`]
//! is the same structure around `w0 = 0`: their difference divided by
//! `copies` is one filter run, to 1/`copies` ns. Both take the [`Context`]
//! they are loaded as: the `kernel-jit` engine times them as tc programs
//! (why: `engine::kernel_jit`), whose prologue reads the packet's bounds
//! from `struct __sk_buff` instead of `struct xdp_md`.
//!
//! ```text
//! 0..=6: the prologue above           the packet holds the 64 bytes
//! 7:     r9 = r2                      the packet, kept for every copy
//! copy i: r1 = r9                     the context of the loadable program
//!         ...                         the loadable program, each exit a
//!                                     `goto` to copy i+1's `r1 = r9`
//! last:   r1 = r9; ...                its exits stay: r0 is the last copy's value
//! ```
//!
//! r9 survives every copy: a converted seccomp program writes A (r0), X
//! (r7), TMP (r2, the zero-extended constant of a jump on a negative `k`)
//! and CTX (r6), and stores below r10 (`bpf_convert_filter()` in
//! net/core/filter.c, Linux 6.18); r8/r9 (`BPF_REG_D`/`BPF_REG_H`) are
//! only written by the packet-load prologue of socket filters, which have
//! no loadable form. [`seccomp_copies`] checks it (every instruction's
//! [`Op::written_regs`]) rather than trusting it. Each copy starts from
//! the state the loadable program expects (r1 the packet, its own
//! prologue clearing A and X), so every copy computes the filter's value
//! on the packet and the last one returns it.
//!
//! The verifier walks every copy, and a copy's start is a jump target (a
//! prune point) where only r9 and the frame pointer are live (every copy
//! writes its stack slots before it reads them), so every arrival after
//! the first from an equal packet state is pruned: the work grows with
//! `copies` times the single program's. [`copies_for`] picks the largest
//! power of two up to [`MAX_COPIES`] whose harness stays within
//! [`MAX_TIMING_INSNS`] (see there). A jump from an exit to the next copy
//! spans less than one copy, so it fits the 16-bit offset whenever the
//! program does.
//!
//! # The cycling harness: inputs in turn
//!
//! The copies all run on one input, each copy's branches always the same
//! way: the kernel's JIT timed as the filter runs on one system call made
//! over and over, its branches predicted. A process makes other calls in
//! between. [`seccomp_cycle`] runs one copy of the filter in a loop over
//! up to [`MAX_CYCLE_INPUTS`] inputs laid one after another in the packet,
//! so the same branches see every input in turn, as `bpfconv bench`'s mix
//! runs the interpreters:
//!
//! ```text
//! 0..=6: the prologue, over inputs * 64 bytes
//! 7:     r9 = r2                      the packet
//! 8:     r8 = 0                       the current input's offset
//! loop:  r1 = r9
//!        r1 += r8                     the context: the current input
//!        ...                          the loadable program, each exit a `goto` to the next line
//!        r8 += 64
//!        if r8 < inputs * 64 goto loop
//!        exit                         r0: the filter's value on the last input
//! ```
//!
//! The verifier walks the loop once per input (r8 is a known constant on
//! each pass, so `r1` is the packet pointer at a fixed offset within the
//! range the prologue checked: `adjust_ptr_min_max_vals()`,
//! kernel/bpf/verifier.c), the work of as many copies; bounded loops need
//! `CAP_BPF`, as every load here does. [`baseline_cycle`] is the same loop
//! around `w0 = 0`.

use cbpf::SeccompData;
use ebpf::filter_h::{alu64_imm, alu64_reg, exit_insn, jmp_imm, jmp_reg, ldx_mem, mov32_imm, mov64_imm, mov64_reg};
use ebpf::op::{AluOp, JmpCond, Op, Size};
use ebpf::opcode::{R0, R1, R2, R3, R8, R9};
use ebpf::Insn;

use super::{Loadable, LoadableError};

/// `offsetof(struct xdp_md, data)` (include/uapi/linux/bpf.h).
const XDP_MD_DATA: i16 = 0;
/// `offsetof(struct xdp_md, data_end)`.
const XDP_MD_DATA_END: i16 = 4;
/// `offsetof(struct __sk_buff, data)` (include/uapi/linux/bpf.h).
const SKB_DATA: i16 = 76;
/// `offsetof(struct __sk_buff, data_end)`.
const SKB_DATA_END: i16 = 80;

/// The program type a harness is loaded as, which fixes where its prologue
/// finds the packet's bounds. The answers come from XDP ([`seccomp`]); the
/// timing harness runs as tc (module docs: an XDP test run of more than
/// one run costs about 20 ms of wall time a call, a tc one microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// `BPF_PROG_TYPE_XDP`: `struct xdp_md`.
    Xdp,
    /// `BPF_PROG_TYPE_SCHED_CLS`: `struct __sk_buff`, whose `data` is the
    /// frame's first byte (`bpf_prog_test_run_skb()` pushes the link-layer
    /// header back for tc programs, net/bpf/test_run.c).
    Tc,
}

impl Context {
    /// The context offsets of the packet's `data` and `data_end`.
    fn bounds(self) -> (i16, i16) {
        match self {
            Context::Xdp => (XDP_MD_DATA, XDP_MD_DATA_END),
            Context::Tc => (SKB_DATA, SKB_DATA_END),
        }
    }
}
/// `XDP_ABORTED` (enum xdp_action): what a too-short packet returns.
const XDP_ABORTED: i32 = 0;
/// `sizeof(struct seccomp_data)`: the packet's length.
pub const PACKET_LEN: usize = cbpf::uapi::seccomp::SECCOMP_DATA_SIZE as usize;

/// The prologue's length: the loadable program's pc `p` is the harness's
/// pc `PROLOGUE_LEN + p`.
pub const PROLOGUE_LEN: usize = 8;

/// The prologue (module docs) for `context`, its last instruction copying
/// the packet pointer into `keep` (r1 for the single harness,
/// [`PACKET_REG`] for the timing one).
fn prologue(keep: u8, context: Context) -> [Insn; PROLOGUE_LEN] {
    prologue_over(keep, context, PACKET_LEN as i32)
}

/// [`prologue`] for a packet of `len` bytes (the cycling harness's inputs
/// one after another).
fn prologue_over(keep: u8, context: Context, len: i32) -> [Insn; PROLOGUE_LEN] {
    let (data, data_end) = context.bounds();
    [
        ldx_mem(Size::W, R2, R1, data),
        ldx_mem(Size::W, R3, R1, data_end),
        mov64_reg(R1, R2),
        alu64_imm(AluOp::Add, R1, len),
        jmp_reg(JmpCond::Le, R1, R3, 2),
        mov32_imm(R0, XDP_ABORTED),
        exit_insn(),
        mov64_reg(keep, R2),
    ]
}

/// `program` behind the prologue: an XDP program whose test-run `retval`
/// is the filter's value for the packet [`packet`] makes.
pub fn seccomp(program: &Loadable) -> Vec<Insn> {
    let mut out = Vec::with_capacity(PROLOGUE_LEN + program.insns.len());
    out.extend(prologue(R1, Context::Xdp));
    out.extend_from_slice(&program.insns);
    out
}

/// The same prologue around `r0 = 0; exit`: what the harness costs without
/// a filter, the baseline a timing subtracts.
pub fn baseline() -> Vec<Insn> {
    let mut out = Vec::with_capacity(PROLOGUE_LEN + 2);
    out.extend(prologue(R1, Context::Xdp));
    out.push(mov32_imm(R0, 0));
    out.push(exit_insn());
    out
}

/// The register the timing harness keeps the packet pointer in across
/// copies: one no converted seccomp program writes (module docs).
pub const PACKET_REG: u8 = R9;
/// The most copies of a filter one timing run makes: 1/32 ns resolution,
/// finer than the run-to-run noise of the kernel's clock (a few tenths of
/// a nanosecond between rounds on a busy machine).
pub const MAX_COPIES: usize = 32;
/// The most instructions a timing harness holds: 1024. The copies must
/// run as one filter run does in a loop, from the processor's instruction
/// and decoded-instruction caches with its branches predicted; more code
/// per test run than those hold times misses of our own making, not the
/// filter. Measured on the machine of issue 28 (Linux 6.18 x86-64 JIT,
/// per filter run on each filter's deepest vector; one copy: whole ns):
/// sshd_preauth (296 instructions) 17 ns alone, 16.5 with 2 copies, 20.25
/// with 4, 24.75 with 8, 30.9 with 32; sshd_preauth_i386 (449) 23–25,
/// 26, 31.25, 39.1; allow306_default (324) 36, 37, 37.75, 38.4, 61.75
/// with 32; docker_like (1018) 74 up to 8 copies, 120 with 16. Up to
/// about 1000 instructions of copies the figure stays within the single
/// run's whole nanosecond; past it, it grows with the copies. The verifier
/// accepts every harness below this in a few milliseconds (it prunes each
/// copy after the first: module docs), and a jump to the next copy spans
/// less than one copy. Filters too long for two copies run one per test
/// run, in whole nanoseconds, as before.
///
/// Below the cap the figure of a cheap filter still rises a little with
/// the copies and levels off (seed_slow_opt2, 16 instructions on its
/// path: 1 ns alone, 1.5 with 4 copies, 1.62 with 8, 1.75–1.78 with 16 and
/// 32; seed_fast 0, 0.5, 0.5, 0.62, 0.59), where the code run per test run
/// is far below any cache: most likely, a run alone in the test-run loop
/// overlaps part of its work with the loop's own and reads low; the copies
/// read it whole.
pub const MAX_TIMING_INSNS: usize = 1024;

/// How many copies the timing harness of `program` holds: the largest
/// power of two up to [`MAX_COPIES`] whose harness stays within
/// [`MAX_TIMING_INSNS`] (at least 1).
pub fn copies_for(program: &Loadable) -> usize {
    let fits = |n: usize| PROLOGUE_LEN + n * (program.insns.len() + 1) <= MAX_TIMING_INSNS;
    let mut n = MAX_COPIES;
    while n > 1 && !fits(n) {
        n /= 2;
    }
    n
}

/// The timing harness (module docs): `program` run `copies` times (0 is
/// taken as 1) on the packet, its test-run `retval` the last copy's value,
/// which is the filter's.
///
/// # Errors
/// [`LoadableError::Decode`], [`LoadableError::Unsupported`] or
/// [`LoadableError::KeptRegister`] (an instruction writing [`PACKET_REG`])
/// for a program [`super::loadable`] never makes; [`LoadableError::Offset`] when an exit's jump to the next
/// copy does not fit in 16 bits.
pub fn seccomp_copies(program: &Loadable, copies: usize, context: Context) -> Result<Vec<Insn>, LoadableError> {
    let joined = joined(program, &[PACKET_REG])?;
    Ok(repeated(copies, &joined, &program.insns, context))
}

/// `program` with every exit a jump to the instruction after its end
/// (`len - pc - 1` ahead of the exit at `pc`), r0 holding the filter's
/// value there; refused when an instruction writes one of `kept`.
fn joined(program: &Loadable, kept: &[u8]) -> Result<Vec<Insn>, LoadableError> {
    let ops = super::decode(&program.insns)?;
    for (pc, op) in ops.iter().enumerate() {
        if let Some(&reg) = kept.iter().find(|&&r| op.written_regs().contains(&Some(r))) {
            return Err(LoadableError::KeptRegister { pc: ebpf::Pc(pc), reg });
        }
    }
    let len = program.insns.len();
    let mut joined = program.insns.clone();
    for (pc, (op, slot)) in ops.iter().zip(&mut joined).enumerate() {
        if *op == Op::Exit {
            let off = (len - pc - 1) as i64;
            let off = i16::try_from(off).map_err(|_| LoadableError::Offset { pc: ebpf::Pc(pc), off })?;
            *slot = Op::Ja { off }.encode().first();
        }
    }
    Ok(joined)
}

/// The timing harness around `w0 = 0; exit` ([`seccomp_copies`]'s
/// structure, the same per-copy `r1 = r9` and join): what it costs without
/// a filter, the baseline a timing subtracts.
pub fn baseline_copies(copies: usize, context: Context) -> Vec<Insn> {
    let body = [mov32_imm(R0, 0), exit_insn()];
    let joined = [mov32_imm(R0, 0), Op::Ja { off: 0 }.encode().first()];
    repeated(copies, &joined, &body, context)
}

/// The timing prologue, then `copies - 1` copies of `joined` and one of
/// `last`, each behind `r1 = r9`.
fn repeated(copies: usize, joined: &[Insn], last: &[Insn], context: Context) -> Vec<Insn> {
    let copies = copies.max(1);
    let mut out = Vec::with_capacity(PROLOGUE_LEN + copies * (last.len() + 1));
    out.extend(prologue(PACKET_REG, context));
    for _ in 1..copies {
        out.push(mov64_reg(R1, PACKET_REG));
        out.extend_from_slice(joined);
    }
    out.push(mov64_reg(R1, PACKET_REG));
    out.extend_from_slice(last);
    out
}

/// The register the cycling harness ([`seccomp_cycle`]) keeps the current
/// input's offset in the packet in: like [`PACKET_REG`], one no converted
/// seccomp program writes (module docs).
pub const OFFSET_REG: u8 = R8;
/// The most inputs one test run of the cycling harness goes through: 32
/// of 64 bytes, 2 KiB, within the packet a tc test run takes
/// (`kernel::bpf::max_packet`, 3712 bytes).
pub const MAX_CYCLE_INPUTS: usize = 32;

/// The most instructions the verifier walks in the cycling harness's loop
/// over its inputs ([`cycle_inputs_for`]): the loop is walked once per
/// input, so a long filter gets fewer inputs. Measured here: a 4095
/// classic instruction allow-list (about 6000 loadable) was refused with `E2BIG`
/// over 16 and 32 inputs, each refusal costing 0.65 s plus 3.6 s for the
/// load again with the log on, and accepted over 8 in 0.17 s. Every
/// testdata filter loaded over 32 in at most 0.21 s (long_jumps_large,
/// 1332 instructions, now over 24); that allow-list now runs over 5, its
/// whole `bench` 11.0 → 2.6 s.
pub const MAX_CYCLE_WORK: usize = 32 * 1024;

/// How many inputs the cycling harness of `program` goes through per test
/// run: [`MAX_CYCLE_INPUTS`], fewer for long programs so that inputs times
/// the program's length stays within [`MAX_CYCLE_WORK`] (at least 1).
pub fn cycle_inputs_for(program: &Loadable) -> usize {
    (MAX_CYCLE_WORK / program.insns.len().max(1)).clamp(1, MAX_CYCLE_INPUTS)
}

/// The cycling harness (module docs): one copy of `program`, run in a
/// loop on each of `inputs` (0 is taken as 1) inputs laid one after
/// another in the packet ([`cycle_packet`]); the test-run `retval` is the
/// filter's value on the last.
///
/// # Errors
/// As [`seccomp_copies`], for [`PACKET_REG`] and [`OFFSET_REG`].
pub fn seccomp_cycle(program: &Loadable, inputs: usize, context: Context) -> Result<Vec<Insn>, LoadableError> {
    let joined = joined(program, &[PACKET_REG, OFFSET_REG])?;
    cycled(inputs, &joined, context)
}

/// The cycling harness around `w0 = 0` ([`seccomp_cycle`]'s loop, the same
/// per-input instructions): the baseline a cycling timing subtracts.
pub fn baseline_cycle(inputs: usize, context: Context) -> Vec<Insn> {
    // A body of two instructions: the loop's jumps always fit.
    cycled(inputs, &[mov32_imm(R0, 0), Op::Ja { off: 0 }.encode().first()], context).unwrap_or_default()
}

/// The prologue over `inputs` packets, `r8 = 0`, then the loop: `r1 = r9
/// + r8`, `joined`, `r8 += 64`, back while `r8 < inputs * 64`, `exit`.
fn cycled(inputs: usize, joined: &[Insn], context: Context) -> Result<Vec<Insn>, LoadableError> {
    let inputs = inputs.clamp(1, MAX_CYCLE_INPUTS);
    let bytes = (inputs * PACKET_LEN) as i32;
    let mut out = Vec::with_capacity(PROLOGUE_LEN + joined.len() + 6);
    out.extend(prologue_over(PACKET_REG, context, bytes));
    out.push(mov64_imm(OFFSET_REG, 0));
    let top = out.len();
    out.push(mov64_reg(R1, PACKET_REG));
    out.push(alu64_reg(AluOp::Add, R1, OFFSET_REG));
    out.extend_from_slice(joined);
    out.push(alu64_imm(AluOp::Add, OFFSET_REG, PACKET_LEN as i32));
    // Back to `top` from the jump at `out.len()`: -(out.len() + 1 - top).
    let back = top as i64 - out.len() as i64 - 1;
    let off = i16::try_from(back).map_err(|_| LoadableError::Offset { pc: ebpf::Pc(out.len()), off: back })?;
    out.push(jmp_imm(JmpCond::Lt, OFFSET_REG, bytes, off));
    out.push(exit_insn());
    Ok(out)
}

/// The cycling harness's packet: the inputs' packets ([`packet`]) one
/// after another.
pub fn cycle_packet(inputs: &[[u8; PACKET_LEN]]) -> Vec<u8> {
    inputs.concat()
}

/// The packet for `data`: its 64 bytes as `data.arch`'s kernel lays them out.
pub fn packet(data: &SeccompData) -> [u8; PACKET_LEN] {
    data.in_kernel_order().to_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prologue as the module docs print it, in the kernel's listing.
    #[test]
    fn prologue_listing() {
        let text: Vec<String> =
            prologue(R1, Context::Xdp).iter().map(|i| ebpf::listing::format_insn(i, None)).collect();
        assert_eq!(
            text,
            [
                "(61) r2 = *(u32 *)(r1 +0)",
                "(61) r3 = *(u32 *)(r1 +4)",
                "(bf) r1 = r2",
                "(07) r1 += 64",
                "(bd) if r1 <= r3 goto pc+2",
                "(b4) w0 = 0",
                "(95) exit",
                "(bf) r1 = r2",
            ]
        );
        assert_eq!(baseline().len(), PROLOGUE_LEN + 2);
        // The tc prologue reads `__sk_buff.data` and `data_end`; the rest is
        // the same.
        let tc: Vec<String> = prologue(R1, Context::Tc).iter().map(|i| ebpf::listing::format_insn(i, None)).collect();
        assert_eq!(tc[..2], ["(61) r2 = *(u32 *)(r1 +76)", "(61) r3 = *(u32 *)(r1 +80)"]);
        assert_eq!(tc[2..], text[2..]);
    }

    /// The timing harness of a filter with two exits: the timing prologue
    /// keeps the packet in r9, each copy starts with `r1 = r9`, the exits
    /// of every copy but the last jump to the next copy's start, the last
    /// copy's stay; the baseline has the same per-copy instructions.
    #[test]
    fn timing_harness_listing() {
        use crate::filter::{convert, Options};
        use cbpf::{validate, Insn as C, Mode};
        // ld [0]; jeq #1, 0, 1; ret #1; ret #2
        let program =
            validate(&[C::stmt(0x20, 0), C::jump(0x15, 1, 0, 1), C::stmt(0x06, 1), C::stmt(0x06, 2)], Mode::Seccomp)
                .unwrap();
        let l = super::super::loadable(&convert(&program, &Options::default()).unwrap(), Mode::Seccomp).unwrap();
        let list =
            |insns: &[Insn]| -> Vec<String> { insns.iter().map(|i| ebpf::listing::format_insn(i, None)).collect() };
        let body = [
            "(b4) w0 = 0",
            "(b4) w7 = 0",
            "(bf) r6 = r1",
            "(61) r0 = *(u32 *)(r6 +0)",
            "(55) if r0 != 0x1 goto pc+2",
            "(b4) w0 = 1",
            "(95) exit",
            "(b4) w0 = 2",
            "(95) exit",
        ];
        assert_eq!(list(&l.insns), body);
        let joined: Vec<&str> = body.iter().map(|&t| if t == "(95) exit" { "" } else { t }).collect();
        let got = list(&seccomp_copies(&l, 3, Context::Xdp).unwrap());
        let mut want: Vec<String> = list(&prologue(R1, Context::Xdp)[..PROLOGUE_LEN - 1]);
        want.push("(bf) r9 = r2".into());
        for copy in 0..3 {
            want.push("(bf) r1 = r9".into());
            for (pc, t) in joined.iter().enumerate() {
                want.push(match (*t, copy) {
                    // 9 instructions: the exit at 6 jumps 2 ahead, the one
                    // at 8 falls into the next copy.
                    ("", 0 | 1) => format!("(05) goto pc+{}", body.len() - pc - 1),
                    ("", _) => "(95) exit".into(),
                    (t, _) => t.into(),
                });
            }
        }
        assert_eq!(got, want);
        assert_eq!(got.len(), PROLOGUE_LEN + 3 * (l.insns.len() + 1));
        // One copy: the single harness with the packet through r9.
        assert_eq!(seccomp_copies(&l, 1, Context::Xdp).unwrap().len(), seccomp(&l).len() + 1);
        assert_eq!(seccomp_copies(&l, 0, Context::Tc).unwrap(), seccomp_copies(&l, 1, Context::Tc).unwrap());

        let base = list(&baseline_copies(2, Context::Xdp));
        assert_eq!(
            base[PROLOGUE_LEN - 1..],
            [
                "(bf) r9 = r2",
                "(bf) r1 = r9",
                "(b4) w0 = 0",
                "(05) goto pc+0",
                "(bf) r1 = r9",
                "(b4) w0 = 0",
                "(95) exit"
            ]
        );
    }

    /// The cycling harness of the same filter: prologue over the inputs'
    /// bytes, r9 the packet, r8 the offset, one joined copy behind
    /// `r1 = r9; r1 += r8`, then the step and the jump back to `r1 = r9`.
    #[test]
    fn cycling_harness_listing() {
        let l = loadable_stub();
        let list =
            |insns: &[Insn]| -> Vec<String> { insns.iter().map(|i| ebpf::listing::format_insn(i, None)).collect() };
        let got = list(&seccomp_cycle(&l, 3, Context::Tc).unwrap());
        let mut want = list(&prologue_over(PACKET_REG, Context::Tc, 3 * 64));
        assert_eq!(want[3], "(07) r1 += 192");
        want.extend(["(b7) r8 = 0", "(bf) r1 = r9", "(0f) r1 += r8"].map(String::from));
        // The stub is `w0 = 0; w7 = 0; r6 = r1; w0 = 0; exit`: its exit
        // joins the step below it.
        let body = list(&l.insns);
        let n = body.len();
        want.extend(body[..n - 1].iter().cloned());
        want.push("(05) goto pc+0".into());
        want.push("(07) r8 += 64".into());
        want.push(format!("(a5) if r8 < 0xc0 goto pc-{}", n + 4));
        want.push("(95) exit".into());
        assert_eq!(got, want);
        // Inputs are clamped to 1..=MAX_CYCLE_INPUTS.
        assert_eq!(list(&seccomp_cycle(&l, 0, Context::Tc).unwrap())[3], "(07) r1 += 64");
        assert_eq!(
            list(&seccomp_cycle(&l, 1000, Context::Tc).unwrap())[3],
            format!("(07) r1 += {}", 64 * MAX_CYCLE_INPUTS)
        );
        let base = list(&baseline_cycle(2, Context::Tc));
        assert_eq!(
            base[PROLOGUE_LEN - 1..],
            [
                "(bf) r9 = r2",
                "(b7) r8 = 0",
                "(bf) r1 = r9",
                "(0f) r1 += r8",
                "(b4) w0 = 0",
                "(05) goto pc+0",
                "(07) r8 += 64",
                "(a5) if r8 < 0x80 goto pc-6",
                "(95) exit"
            ]
        );
        assert_eq!(cycle_packet(&[[1; PACKET_LEN], [2; PACKET_LEN]]).len(), 128);
    }

    /// A program writing a register a harness keeps across runs is refused,
    /// not timed with a clobbered packet or offset: r9 by both harnesses,
    /// r8 by the cycling one (the copies never read it).
    #[test]
    fn a_kept_register_written_is_refused() {
        let l = loadable_stub();
        let writing = |reg: u8| {
            let mut bad = l.clone();
            bad.insns[1] = mov64_reg(reg, R2);
            bad
        };
        let kept = |reg: u8| Err(LoadableError::KeptRegister { pc: ebpf::Pc(1), reg });
        assert_eq!(seccomp_copies(&writing(PACKET_REG), 2, Context::Tc), kept(9));
        assert_eq!(seccomp_cycle(&writing(PACKET_REG), 2, Context::Tc), kept(9));
        assert_eq!(seccomp_cycle(&writing(OFFSET_REG), 2, Context::Tc), kept(8));
        assert!(seccomp_copies(&writing(OFFSET_REG), 2, Context::Tc).is_ok());
    }

    /// 32 inputs for programs up to 1024 instructions, fewer as they grow,
    /// at least 1.
    #[test]
    fn cycle_inputs_shrink_with_the_program() {
        let of = |n: usize| Loadable { insns: vec![exit_insn(); n], ..loadable_stub() };
        assert_eq!(cycle_inputs_for(&of(17)), MAX_CYCLE_INPUTS);
        assert_eq!(cycle_inputs_for(&of(1024)), 32);
        assert_eq!(cycle_inputs_for(&of(1332)), 24);
        assert_eq!(cycle_inputs_for(&of(4101)), 7);
        assert_eq!(cycle_inputs_for(&of(40_000)), 1);
    }

    /// 32 copies for short filters, fewer as they grow, always within
    /// [`MAX_TIMING_INSNS`] (or one copy of a longer program).
    #[test]
    fn copies_shrink_with_the_program() {
        let of = |n: usize| Loadable { insns: vec![exit_insn(); n], ..loadable_stub() };
        assert_eq!(copies_for(&of(16)), 32);
        // 8 + 32 * (30 + 1) = 1000 fits; 8 + 32 * 32 = 1032 does not.
        assert_eq!(copies_for(&of(30)), 32);
        assert_eq!(copies_for(&of(31)), 16);
        assert_eq!(copies_for(&of(300)), 2);
        assert_eq!(copies_for(&of(600)), 1);
        assert_eq!(copies_for(&of(5000)), 1);
        for n in [1, 30, 31, 62, 63, 126, 127, 254, 255, 507, 508, 1015, 1016] {
            let c = copies_for(&of(n));
            assert!(c.is_power_of_two() && c <= MAX_COPIES, "{n}: {c}");
            assert!(c == 1 || PROLOGUE_LEN + c * (n + 1) <= MAX_TIMING_INSNS, "{n}: {c}");
            assert!(c == MAX_COPIES || PROLOGUE_LEN + 2 * c * (n + 1) > MAX_TIMING_INSNS, "{n}: {c}");
        }
    }

    fn loadable_stub() -> Loadable {
        use crate::filter::{convert, Options};
        let program = cbpf::validate(&[cbpf::Insn::stmt(0x06, 0)], cbpf::Mode::Seccomp).unwrap();
        super::super::loadable(&convert(&program, &Options::default()).unwrap(), cbpf::Mode::Seccomp).unwrap()
    }

    #[test]
    fn packet_is_the_kernel_layout() {
        let d = SeccompData {
            nr: 1,
            arch: cbpf::uapi::audit::AUDIT_ARCH_S390X,
            instruction_pointer: 0x1122_3344_5566_7788,
            args: [0xaaaa_bbbb_cccc_dddd, 0, 0, 0, 0, 0],
        };
        let p = packet(&d);
        assert_eq!(p, d.in_kernel_order().to_bytes());
        // s390x is big-endian: args[0]'s high half is the first word.
        assert_eq!(&p[16..20], &0xaaaa_bbbbu32.to_le_bytes());
    }
}
