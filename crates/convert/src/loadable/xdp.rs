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

use cbpf::SeccompData;
use ebpf::filter_h::{alu64_imm, exit_insn, jmp_reg, ldx_mem, mov32_imm, mov64_reg};
use ebpf::op::{AluOp, JmpCond, Size};
use ebpf::opcode::{R0, R1, R2, R3};
use ebpf::Insn;

use super::Loadable;

/// `offsetof(struct xdp_md, data)` (include/uapi/linux/bpf.h).
const XDP_MD_DATA: i16 = 0;
/// `offsetof(struct xdp_md, data_end)`.
const XDP_MD_DATA_END: i16 = 4;
/// `XDP_ABORTED` (enum xdp_action): what a too-short packet returns.
const XDP_ABORTED: i32 = 0;
/// `sizeof(struct seccomp_data)`: the packet's length.
pub const PACKET_LEN: usize = cbpf::uapi::seccomp::SECCOMP_DATA_SIZE as usize;

/// The prologue's length: the loadable program's pc `p` is the harness's
/// pc `PROLOGUE_LEN + p`.
pub const PROLOGUE_LEN: usize = 8;

/// The prologue (module docs).
fn prologue() -> [Insn; PROLOGUE_LEN] {
    [
        ldx_mem(Size::W, R2, R1, XDP_MD_DATA),
        ldx_mem(Size::W, R3, R1, XDP_MD_DATA_END),
        mov64_reg(R1, R2),
        alu64_imm(AluOp::Add, R1, PACKET_LEN as i32),
        jmp_reg(JmpCond::Le, R1, R3, 2),
        mov32_imm(R0, XDP_ABORTED),
        exit_insn(),
        mov64_reg(R1, R2),
    ]
}

/// `program` behind the prologue: an XDP program whose test-run `retval`
/// is the filter's value for the packet [`packet`] makes.
pub fn seccomp(program: &Loadable) -> Vec<Insn> {
    let mut out = Vec::with_capacity(PROLOGUE_LEN + program.insns.len());
    out.extend(prologue());
    out.extend_from_slice(&program.insns);
    out
}

/// The same prologue around `r0 = 0; exit`: what the harness costs without
/// a filter, the baseline a timing subtracts.
pub fn baseline() -> Vec<Insn> {
    let mut out = Vec::with_capacity(PROLOGUE_LEN + 2);
    out.extend(prologue());
    out.push(mov32_imm(R0, 0));
    out.push(exit_insn());
    out
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
        let text: Vec<String> = prologue().iter().map(|i| ebpf::listing::format_insn(i, None)).collect();
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
