//! A general eBPF program run by the kernel on a piece of memory, with the
//! calling convention of the bpf_conformance suite (FORMATS.md §4): `r1`
//! points at a writable copy of the memory, `r2` holds its length, `r10`
//! is the top of a 512-byte stack, and the answer is the whole 64-bit `r0`
//! at `exit`, plus the memory as the program left it.
//!
//! The kernel runs such a program as an XDP program under
//! `BPF_PROG_TEST_RUN`, the memory as the packet, as bpf_conformance's
//! Linux runs do. Two things stand between the test run and that
//! convention, and a small harness of our own around the program bridges
//! both:
//!
//! - An XDP program starts with `r1` = its `struct xdp_md`, not the
//!   packet. The prologue reads `data`/`data_end`, proves to the verifier
//!   that the packet holds the memory (`data + len <= data_end`: after
//!   that test `find_good_pkt_pointers()` lets the program touch
//!   `[data, data + len)` and nothing past it, kernel/bpf/verifier.c,
//!   Linux 6.18), then calls the program as a bpf-to-bpf subprogram with
//!   `r1` = `data` and `r2` = `len`.
//! - The test run hands back only the low 32 bits of `r0` as `retval`.
//!   The program's `exit` returns to the harness, whose `r6` (callee-saved,
//!   so the program cannot change it) still holds the context; the
//!   epilogue stores the 64-bit `r0` in the packet's metadata, the 8 bytes
//!   between `data_meta` and `data` that the test run's context asks for
//!   (`xdp_md.data` = 8: `bpf_prog_test_run_xdp()` takes that much from
//!   the headroom) and copies back in front of the packet. The program
//!   cannot reach them (a `data_meta` pointer comes only from the context,
//!   which it is not given).
//!
//! Upstream splits the same work in two (bpf_conformance at f558566):
//! the runner's `--xdp_prolog true` prepends a prologue, only when the test
//! has memory, that bounds-checks the packet and sets `r1`/`r2` inline
//! (leaving `r0` = -1, `r3` = `data + len` and `r6` = the context visible
//! to the program), and libbpf_plugin puts a `call` in front that runs the
//! program as a subprogram and stores its `r0` into a one-element array
//! map (a `BPF_PSEUDO_MAP_VALUE` load), read back with a map lookup. Ours
//! is one harness, needs no map, and passes the program nothing but `r1`
//! and `r2`.
//!
//! ```text
//!  0: r6 = r1                     the context, kept across the call
//!  1: r1 = *(u32 *)(r6 +0)        xdp_md->data
//!  2: r0 = *(u32 *)(r6 +4)        xdp_md->data_end
//!  3: r2 = r1
//!  4: r2 += LEN
//!  5: if r2 > r0 goto pc+9        the packet holds the memory (always, by construction)
//!  6: r2 = LEN                    r1 = the memory, r2 = its length
//!  7: call pc+9                   the program, as a subprogram (BPF_PSEUDO_CALL)
//!  8: r2 = *(u32 *)(r6 +8)        xdp_md->data_meta
//!  9: r3 = *(u32 *)(r6 +0)        xdp_md->data
//! 10: r1 = r2
//! 11: r1 += 8
//! 12: if r1 > r3 goto pc+2        the metadata holds 8 bytes (always)
//! 13: *(u64 *)(r2 +0) = r0        the whole r0, in front of the memory
//! 14: exit                        retval = the low 32 bits of r0
//! 15: w0 = 0                      a packet too short (never sent)
//! 16: exit
//! 17: ...                         the program
//! ```
//!
//! The test run's input is the 8 bytes of metadata (all ones, so a run
//! that never reached the store is told apart) and the packet: the memory,
//! padded with zeros to the `ETH_HLEN` (14) bytes the test run wants at
//! least. So the packet ends where the memory does (`data_end`, which
//! [`Args::WithEnd`] passes on) for every memory of 14 bytes or more.
//!
//! The prologue writes no argument register but `r1` and `r2` (`data_end`
//! is in `r0`, which a call does not pass), so the program gets nothing
//! else from its caller; [`Args::WithEnd`] keeps `data_end` in `r3`
//! instead, for programs that bounds-check register offsets themselves. What this means for a program (the verifier's
//! view, not ours): it sees exactly the memory's bytes through `r1` (a
//! read or write past them is refused at load, where our interpreter
//! would stop at run time); `r0` and `r3`–`r9` are unreadable at entry
//! (our interpreter starts them at 0); it may not use helpers an XDP
//! program may not call; and its stack and call depth are counted from one
//! frame down (the harness uses no stack of its own). The verifier's
//! messages number instructions in the harness: the program's pc `p` is
//! its insn `p + 17` ([`PROLOGUE_LEN`]).

use ebpf::filter_h::{alu64_imm, exit_insn, jmp_reg, ldx_mem, mov32_imm, mov64_imm, mov64_reg, stx_mem};
use ebpf::op::{AluOp, CallKind, JmpCond, Op, Size};
use ebpf::opcode::{R0, R1, R2, R3, R6};
use ebpf::Insn;

use super::{BpfError, Prog, ProgType, TestRun};

/// `offsetof(struct xdp_md, data)` (include/uapi/linux/bpf.h).
const XDP_MD_DATA: i16 = 0;
/// `offsetof(struct xdp_md, data_end)`.
const XDP_MD_DATA_END: i16 = 4;
/// `offsetof(struct xdp_md, data_meta)`.
const XDP_MD_DATA_META: i16 = 8;
/// `sizeof(struct xdp_md)`: the test run's context.
const XDP_MD_SIZE: usize = 24;
/// The metadata in front of the packet, `r0`'s 8 bytes (a multiple of 4
/// of at most 32, `xdp_metalen_invalid()`).
const META: usize = 8;
/// `ETH_HLEN`: the shortest packet the test run takes (past the metadata).
pub const ETH_HLEN: usize = 14;
/// What the metadata holds before the run: all ones, so a run whose epilogue
/// did not store (`retval` 0 then) is told apart from any `r0` whose low
/// half is 0.
const META_FILL: u8 = 0xff;
/// The linear data of an XDP test run, metadata included:
/// `bpf_prog_test_run_xdp()` gives it `4096 - (XDP_PACKET_HEADROOM (256) -
/// META) - SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) (320 on
/// x86_64)` bytes; more would go to page fragments the program cannot
/// read directly.
const MAX_DATA: usize = 4096 - (256 - META) - 320;
/// The longest memory a program can be given.
pub const MAX_MEMORY: usize = MAX_DATA - META;
/// The harness's instructions before the program: the program's pc `p`
/// is the harness's `PROLOGUE_LEN + p`.
pub const PROLOGUE_LEN: usize = 17;

/// What a program gets in its argument registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Args {
    /// `r1` = the memory, `r2` = its length (FORMATS.md §4).
    #[default]
    Conformance,
    /// Also `r3` = the memory's end (the packet's `data_end` pointer, for
    /// memory of at least [`ETH_HLEN`] bytes, which the test run does not pad;
    /// which the prologue then holds in `r3` instead of `r0`), so the
    /// program can bounds-check a register offset itself as XDP programs
    /// do (`if rX + size > r3 goto out`: the verifier grants packet access
    /// past a variable offset only after such a test). Our interpreter's
    /// counterpart is the program behind [`END_PRELUDE`].
    WithEnd,
}

/// What our interpreter runs before a program of [`Args::WithEnd`]:
/// `r3 = r1; r3 += r2`, the memory's end in its address space.
pub const END_PRELUDE: [Insn; 2] = [Insn::new(0xbf, R3, R1, 0, 0), Insn::new(0x0f, R3, R2, 0, 0)];

/// `insns` inside the harness for `mem_len` bytes of memory (module docs).
///
/// # Errors
/// [`BpfError::MemoryTooLong`] past [`MAX_MEMORY`];
/// [`BpfError::MemoryTooShort`] for [`Args::WithEnd`] below [`ETH_HLEN`].
pub fn harness(insns: &[Insn], mem_len: usize, args: Args) -> Result<Vec<Insn>, BpfError> {
    if args == Args::WithEnd && mem_len < ETH_HLEN {
        // Shorter memories are padded, so data_end would be past them.
        return Err(BpfError::MemoryTooShort { len: mem_len, min: ETH_HLEN });
    }
    let len = i32::try_from(mem_len)
        .ok()
        .filter(|_| mem_len <= MAX_MEMORY)
        .ok_or(BpfError::MemoryTooLong { len: mem_len, max: MAX_MEMORY })?;
    let call = PROLOGUE_LEN as i32 - 8; // from pc 7 to pc 17
    let end = match args {
        Args::Conformance => R0,
        Args::WithEnd => R3,
    };
    let mut out = Vec::with_capacity(PROLOGUE_LEN + insns.len());
    out.extend([
        mov64_reg(R6, R1),
        ldx_mem(Size::W, R1, R6, XDP_MD_DATA),
        ldx_mem(Size::W, end, R6, XDP_MD_DATA_END),
        mov64_reg(R2, R1),
        alu64_imm(AluOp::Add, R2, len),
        jmp_reg(JmpCond::Gt, R2, end, 9),
        mov64_imm(R2, len),
        Op::Call { kind: CallKind::Local, imm: call }.encode().first(),
        ldx_mem(Size::W, R2, R6, XDP_MD_DATA_META),
        ldx_mem(Size::W, R3, R6, XDP_MD_DATA),
        mov64_reg(R1, R2),
        alu64_imm(AluOp::Add, R1, META as i32),
        jmp_reg(JmpCond::Gt, R1, R3, 2),
        stx_mem(Size::DW, R2, R0, 0),
        exit_insn(),
        mov32_imm(R0, 0),
        exit_insn(),
    ]);
    debug_assert_eq!(out.len(), PROLOGUE_LEN);
    out.extend_from_slice(insns);
    Ok(out)
}

/// A general eBPF program loaded into the kernel for memory of one length
/// (the verifier checks its accesses against that length).
#[derive(Debug)]
pub struct MemoryProg {
    prog: Prog,
    mem_len: usize,
}

/// What a kernel run of a [`MemoryProg`] returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRun {
    /// The whole 64-bit `r0` at the program's `exit`.
    pub r0: u64,
    /// The kernel's time for the run in ns (`BPF_PROG_TEST_RUN`'s
    /// `duration`, harness included).
    pub duration_ns: u32,
}

impl MemoryProg {
    /// Loads `insns` behind the harness for `mem_len` bytes of memory; a
    /// refusal is the verifier's ([`BpfError::reason`]).
    ///
    /// # Errors
    /// [`BpfError::MemoryTooLong`], or what [`Prog::load`] returns.
    pub fn load(insns: &[Insn], mem_len: usize) -> Result<MemoryProg, BpfError> {
        MemoryProg::load_with(insns, mem_len, Args::Conformance)
    }

    /// [`MemoryProg::load`] with the argument registers of `args`.
    ///
    /// # Errors
    /// As [`MemoryProg::load`].
    pub fn load_with(insns: &[Insn], mem_len: usize, args: Args) -> Result<MemoryProg, BpfError> {
        let prog = Prog::load(ProgType::Xdp, &harness(insns, mem_len, args)?)?;
        Ok(MemoryProg { prog, mem_len })
    }

    /// The memory length the program was loaded for.
    pub fn mem_len(&self) -> usize {
        self.mem_len
    }

    /// Runs the program once on `mem` (of the length it was loaded for),
    /// which is left as the program left it.
    ///
    /// # Errors
    /// [`BpfError::MemoryLength`] for memory of another length,
    /// [`BpfError::TestRun`] when the test run fails, and
    /// [`BpfError::NoResult`] when the epilogue did not store `r0` (a bug
    /// of the harness: the packet is built to pass its checks).
    pub fn run(&self, mem: &mut [u8]) -> Result<MemoryRun, BpfError> {
        if mem.len() != self.mem_len {
            return Err(BpfError::MemoryLength { len: mem.len(), expected: self.mem_len });
        }
        let mut data = Vec::with_capacity(META + mem.len().max(ETH_HLEN));
        data.resize(META, META_FILL);
        data.extend_from_slice(mem);
        data.resize(META + mem.len().max(ETH_HLEN), 0);
        // struct xdp_md: data = the metadata's length, data_end = the whole
        // input's, data_meta and the rest 0 (what bpf_prog_test_run_xdp() takes).
        let mut ctx = [0u8; XDP_MD_SIZE];
        let words = [META, data.len()].map(|w| u32::try_from(w).unwrap_or(u32::MAX).to_ne_bytes());
        for (to, from) in ctx.chunks_exact_mut(4).zip(words) {
            to.copy_from_slice(&from);
        }
        let out = self.prog.test_run(&TestRun { data: &data, ctx: Some(&ctx), repeat: 1 })?;
        let slot = out.data.get(..META).and_then(|s| <[u8; META]>::try_from(s).ok());
        let r0 = match slot.map(u64::from_ne_bytes) {
            Some(r0) if r0 as u32 == out.retval => r0,
            _ => return Err(BpfError::NoResult { retval: out.retval }),
        };
        match out.data.get(META..META + mem.len()) {
            Some(after) => mem.copy_from_slice(after),
            None => return Err(BpfError::NoResult { retval: out.retval }),
        }
        Ok(MemoryRun { r0, duration_ns: out.duration_ns })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The harness as the module docs print it, in the kernel's listing.
    #[test]
    fn harness_listing() {
        let text: Vec<String> = harness(&[exit_insn()], 40, Args::Conformance)
            .unwrap()
            .iter()
            .map(|i| ebpf::listing::format_insn(i, None))
            .collect();
        assert_eq!(
            text,
            [
                "(bf) r6 = r1",
                "(61) r1 = *(u32 *)(r6 +0)",
                "(61) r0 = *(u32 *)(r6 +4)",
                "(bf) r2 = r1",
                "(07) r2 += 40",
                "(2d) if r2 > r0 goto pc+9",
                "(b7) r2 = 40",
                "(85) call pc+9",
                "(61) r2 = *(u32 *)(r6 +8)",
                "(61) r3 = *(u32 *)(r6 +0)",
                "(bf) r1 = r2",
                "(07) r1 += 8",
                "(2d) if r1 > r3 goto pc+2",
                "(7b) *(u64 *)(r2 +0) = r0",
                "(95) exit",
                "(b4) w0 = 0",
                "(95) exit",
                "(95) exit",
            ]
        );
        // With the end: data_end stays in r3, which the call passes on.
        let with_end = harness(&[exit_insn()], 40, Args::WithEnd).unwrap();
        assert_eq!(ebpf::listing::format_insn(&with_end[2], None), "(61) r3 = *(u32 *)(r6 +4)");
        assert_eq!(ebpf::listing::format_insn(&with_end[5], None), "(2d) if r2 > r3 goto pc+9");
    }

    /// A program given the memory's end needs at least `ETH_HLEN` bytes
    /// (the test run pads shorter packets).
    #[test]
    fn the_end_needs_a_whole_ethernet_header() {
        assert!(harness(&[exit_insn()], ETH_HLEN, Args::WithEnd).is_ok());
        assert_eq!(
            harness(&[exit_insn()], ETH_HLEN - 1, Args::WithEnd),
            Err(BpfError::MemoryTooShort { len: ETH_HLEN - 1, min: ETH_HLEN })
        );
        assert!(harness(&[exit_insn()], 0, Args::Conformance).is_ok());
    }

    #[test]
    fn memory_past_the_packet_is_refused() {
        assert!(harness(&[exit_insn()], MAX_MEMORY, Args::Conformance).is_ok());
        assert_eq!(
            harness(&[exit_insn()], MAX_MEMORY + 1, Args::WithEnd),
            Err(BpfError::MemoryTooLong { len: MAX_MEMORY + 1, max: MAX_MEMORY })
        );
    }
}
