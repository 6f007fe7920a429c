//! A classic filter as a fragment of a larger eBPF program (the
//! cloudflare/cbpfc use case: a tcpdump expression inside an XDP, tc or
//! tracing program that has its own packet pointers).
//!
//! The caller names the registers that hold the packet's start and end
//! (pointers the verifier knows as `pkt` and `pkt_end`), the register that
//! receives the filter's result (the classic A), two scratch registers and
//! the classic X, and the stack offset of 64 bytes for `M[]`. The fragment
//! reads and writes nothing else: no context, no helper call, no other
//! register or stack byte (`M[]` only when the filter uses it). Every way
//! out, a `ret` or a failed load (result 0), jumps to the first
//! instruction after the fragment with the classic return value in the
//! result register, so the caller decides what follows by what it puts
//! there.
//!
//! Loads are direct packet accesses behind guards ([`crate::GuardPlan`]),
//! as in [`crate::Target::Xdp`]; `ld len` is `end - start` (pointer
//! subtraction: the verifier allows it to `CAP_PERFMON`). Ancillary loads
//! other than `SKF_AD_ALU_XOR_X` need the hook's context and are refused
//! ([`crate::HookError::NotInFragment`]).
//!
//! A tcpdump filter spliced into an XDP program that drops what the filter
//! rejects, loaded and run by the kernel (where this process may load XDP
//! programs; a visible skip otherwise, a failure under `CI=true`):
//!
//! ```
//! use ebpf::filter_h::{exit_insn, jmp32_imm, ldx_mem, mov32_imm};
//! use ebpf::op::{JmpCond, Size};
//! use hook::Fragment;
//!
//! // tcpdump -dd 'ip and udp': ldh [12]; jeq #0x800 jt 2 jf 5; ldb [23];
//! // jeq #17 jt 4 jf 5; ret #262144; ret #0
//! let insns = [
//!     cbpf::Insn::stmt(0x28, 12),
//!     cbpf::Insn::jump(0x15, 0x800, 0, 3),
//!     cbpf::Insn::stmt(0x30, 23),
//!     cbpf::Insn::jump(0x15, 17, 0, 1),
//!     cbpf::Insn::stmt(0x06, 0x40000),
//!     cbpf::Insn::stmt(0x06, 0),
//! ];
//! let filter = cbpf::validate(&insns, cbpf::Mode::Socket)?;
//! // Our XDP program keeps data in r2 and data_end in r3 and wants the
//! // verdict in r4; r5, r1 and r0 are free; M[] may use fp-64..fp-1.
//! let fragment = Fragment { start: 2, end: 3, result: 4, x: 5, scratch: [1, 0], stack_offset: -64 };
//! let mut prog = vec![
//!     ldx_mem(Size::W, 2, 1, 0), // r2 = ctx->data
//!     ldx_mem(Size::W, 3, 1, 4), // r3 = ctx->data_end
//! ];
//! prog.extend(fragment.emit(&filter)?);
//! // After the fragment: XDP_PASS when the filter kept the packet.
//! prog.extend([
//!     jmp32_imm(JmpCond::Eq, 4, 0, 2),
//!     mov32_imm(0, 2), // XDP_PASS
//!     exit_insn(),
//!     mov32_imm(0, 1), // XDP_DROP
//!     exit_insn(),
//! ]);
//! # #[cfg(target_os = "linux")]
//! # {
//! use kernel::bpf::{Prog, ProgType};
//! # use test_data::require::{self, Need};
//! # if require::have("hook::fragment doc", Need::Bpf, kernel::bpf::available()).is_some() {
//! let prog = Prog::load(ProgType::Xdp, &prog)?;
//! let mut udp = vec![0u8; 42];
//! udp[12..14].copy_from_slice(&[0x08, 0x00]); // IPv4
//! udp[23] = 17; // UDP
//! assert_eq!(prog.retval(&udp)?, 2);
//! udp[23] = 6; // TCP
//! assert_eq!(prog.retval(&udp)?, 1);
//! assert_eq!(prog.retval(&udp[..20])?, 1); // too short for the protocol byte
//! # }
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ebpf::Insn;

use crate::codegen::{self, Ending, Layout, Packet};
use crate::HookError;

/// Where a fragment finds the packet and what it may use (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment {
    /// The register holding the packet's first byte (`data`).
    pub start: u8,
    /// The register holding the packet's end (`data_end`).
    pub end: u8,
    /// The register that holds the classic A, and the result at the end.
    pub result: u8,
    /// The register that holds the classic X.
    pub x: u8,
    /// Two registers the fragment may overwrite.
    pub scratch: [u8; 2],
    /// `M[0]` is at `fp + stack_offset` (64 bytes up from there; a
    /// multiple of 8 in `-512..=-64`).
    pub stack_offset: i16,
}

impl Fragment {
    /// The fragment for `program` (a socket filter).
    pub fn emit(&self, program: &cbpf::Program) -> Result<Vec<Insn>, HookError> {
        self.check()?;
        if program.mode() != cbpf::Mode::Socket {
            return Err(HookError::BadFragment("a fragment is made from a socket filter".into()));
        }
        let layout = Layout {
            a: self.result,
            x: self.x,
            t0: self.scratch[0],
            t1: self.scratch[1],
            mem: self.stack_offset,
            packet: Packet::Direct { start: self.start, end: self.end },
            ctx: None,
            target: None,
            ending: Ending::Jump,
            helpers: false,
            pull: None,
        };
        Ok(codegen::generate(program, &layout, &[])?.insns)
    }

    fn check(&self) -> Result<(), HookError> {
        let regs = [self.start, self.end, self.result, self.x, self.scratch[0], self.scratch[1]];
        if let Some(r) = regs.iter().find(|&&r| r > 9) {
            return Err(HookError::BadFragment(format!("r{r} is not a general register (r0-r9)")));
        }
        for (i, r) in regs.iter().enumerate() {
            if regs.iter().skip(i + 1).any(|o| o == r) {
                return Err(HookError::BadFragment(format!("r{r} is named twice")));
            }
        }
        if !(-512..=-64).contains(&self.stack_offset) || self.stack_offset % 8 != 0 {
            return Err(HookError::BadFragment(format!(
                "stack offset {} is not a multiple of 8 in -512..=-64",
                self.stack_offset
            )));
        }
        Ok(())
    }
}
