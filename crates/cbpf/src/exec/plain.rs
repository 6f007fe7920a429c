//! The plain classic interpreter of the pre-3.15 kernel: a model of
//! `sk_run_filter()` (net/core/filter.c, Linux 3.14) running a seccomp
//! filter, for measuring what the classic form costs when it is
//! interpreted the way the kernel interpreted it before eBPF (the
//! `cbpf-plain` engine). [`crate::Interp`] answers "how fast can a classic
//! program run"; this answers "what did the classic interpreter cost".
//!
//! What it keeps of the kernel's loop: one `switch` (here one `match` on the
//! raw `code`) per executed instruction over the raw `struct sock_filter`
//! array, with `A`, `X` and `mem[16]` as locals, jumps as `fentry += jt/jf`,
//! and every seccomp load through an out-of-line call,
//! [`seccomp_bpf_load`], which decodes the offset into a field of
//! `struct seccomp_data` as 3.14's `seccomp_bpf_load()` (kernel/seccomp.c)
//! does (that one read the field from the task's saved registers).
//!
//! # Deviations
//! - 3.14's `sk_chk_filter()` rewrote each opcode to a dense internal
//!   `BPF_S_*` number before the switch; we match the (6.18-validated)
//!   classic codes, which the compiler turns into the same jump table.
//! - Arithmetic is the 6.18 converted program's (shift amounts masked to 5
//!   bits, as `Interp`), so every engine gives the same answers; 3.14 shifted
//!   by the raw `K`/`X` (undefined in C for 32 and more).
//! - Seccomp programs only: 3.14's packet loads (`load_pointer()`,
//!   `skb_header_pointer()`) are not modelled.

use crate::exec::{expect_mode, ExecError};
use crate::insn::Insn;
use crate::opcode::*;
use crate::uapi::seccomp_data::SECCOMP_DATA_SIZE;
use crate::validate::{Mode, Program};

/// A seccomp filter ready for the plain interpreter: the validated,
/// rewritten instructions (`ld [k]` as the seccomp-internal 0x21 load, as
/// 3.14's `seccomp_check_filter()` rewrote it to `BPF_S_ANC_SECCOMP_LD_W`).
#[derive(Debug, Clone)]
pub struct PlainInterp {
    insns: Vec<Insn>,
    mode: Mode,
}

impl PlainInterp {
    /// Copies the validated program's instructions.
    pub fn new(prog: &Program) -> PlainInterp {
        PlainInterp { insns: prog.insns().to_vec(), mode: prog.mode() }
    }

    /// Runs the filter on `struct seccomp_data` bytes and returns its
    /// 32-bit `SECCOMP_RET_*` value; the same value as
    /// [`crate::Interp::run_seccomp`].
    ///
    /// Mirrors `sk_run_filter()` (net/core/filter.c, Linux 3.14) called by
    /// `seccomp_run_filters()`.
    ///
    /// # Deviations
    /// Those of the module.
    pub fn run_seccomp(&self, data: &[u8; SECCOMP_DATA_SIZE]) -> Result<u32, ExecError> {
        expect_mode(self.mode, Mode::Seccomp)?;
        Ok(sk_run_filter::<false>(&self.insns, data).0)
    }

    /// [`PlainInterp::run_seccomp`] with the number of instructions executed.
    pub fn run_seccomp_counted(&self, data: &[u8; SECCOMP_DATA_SIZE]) -> Result<(u32, u64), ExecError> {
        expect_mode(self.mode, Mode::Seccomp)?;
        let (ret, steps) = sk_run_filter::<true>(&self.insns, data);
        Ok((ret, steps))
    }
}

/// `seccomp_bpf_load()` (kernel/seccomp.c, Linux 3.14): the word of
/// `struct seccomp_data` at offset `off`, found by comparing the offset with
/// each field's (`nr`, `arch`, `args[0..6]` halves, `instruction_pointer`
/// halves). Out of line, as the kernel's was (a call per load).
///
/// # Deviations
/// The kernel read each field from the task's registers; we read it from
/// the 64 bytes. An offset `seccomp_check_filter()` would refuse (the
/// kernel's `BUG()`) reads 0.
#[inline(never)]
pub fn seccomp_bpf_load(data: &[u8; SECCOMP_DATA_SIZE], off: u32) -> u32 {
    use crate::uapi::seccomp::{OFFSET_ARCH, OFFSET_ARGS, OFFSET_IP, OFFSET_NR};
    let word = |at: u32| -> u32 {
        let at = at as usize;
        match data.get(at..at + 4) {
            Some(&[b0, b1, b2, b3]) => u32::from_ne_bytes([b0, b1, b2, b3]),
            _ => 0,
        }
    };
    if off == OFFSET_NR {
        return word(OFFSET_NR);
    }
    if off == OFFSET_ARCH {
        return word(OFFSET_ARCH);
    }
    if (OFFSET_ARGS..OFFSET_ARGS + 48).contains(&off) {
        let arg = (off - OFFSET_ARGS) / 8;
        let index = u32::from(off % 8 != 0);
        return word(OFFSET_ARGS + arg * 8 + index * 4);
    }
    if off == OFFSET_IP {
        return word(OFFSET_IP);
    }
    if off == OFFSET_IP + 4 {
        return word(OFFSET_IP + 4);
    }
    0
}

/// The loop of `sk_run_filter()` on a seccomp context; returns the value and
/// (with `COUNT`) the number of instructions executed.
#[inline(always)]
fn sk_run_filter<const COUNT: bool>(insns: &[Insn], data: &[u8; SECCOMP_DATA_SIZE]) -> (u32, u64) {
    let mut a: u32 = 0;
    let mut x: u32 = 0;
    let mut mem = [0u32; BPF_MEMWORDS as usize];
    let mut pc = 0usize;
    let mut steps = 0u64;
    // Jumps are forward only (validated), so this ends within insns.len() steps.
    while let Some(fentry) = insns.get(pc) {
        if COUNT {
            steps += 1;
        }
        let k = fentry.k;
        pc += 1;
        match fentry.code {
            ALU_ADD_X => a = a.wrapping_add(x),
            ALU_ADD_K => a = a.wrapping_add(k),
            ALU_SUB_X => a = a.wrapping_sub(x),
            ALU_SUB_K => a = a.wrapping_sub(k),
            ALU_MUL_X => a = a.wrapping_mul(x),
            ALU_MUL_K => a = a.wrapping_mul(k),
            ALU_DIV_X => match a.checked_div(x) {
                Some(v) => a = v,
                None => return (0, steps),
            },
            ALU_DIV_K => a = a.checked_div(k).unwrap_or(0),
            ALU_MOD_X => match a.checked_rem(x) {
                Some(v) => a = v,
                None => return (0, steps),
            },
            ALU_MOD_K => a = a.checked_rem(k).unwrap_or(0),
            ALU_AND_X => a &= x,
            ALU_AND_K => a &= k,
            ALU_OR_X => a |= x,
            ALU_OR_K => a |= k,
            ALU_XOR_X => a ^= x,
            ALU_XOR_K => a ^= k,
            ALU_LSH_X => a <<= x & 31,
            ALU_LSH_K => a <<= k & 31,
            ALU_RSH_X => a >>= x & 31,
            ALU_RSH_K => a >>= k & 31,
            ALU_NEG => a = a.wrapping_neg(),
            JMP_JA => pc += k as usize,
            JMP_JGT_K => pc += usize::from(if a > k { fentry.jt } else { fentry.jf }),
            JMP_JGE_K => pc += usize::from(if a >= k { fentry.jt } else { fentry.jf }),
            JMP_JEQ_K => pc += usize::from(if a == k { fentry.jt } else { fentry.jf }),
            JMP_JSET_K => pc += usize::from(if a & k != 0 { fentry.jt } else { fentry.jf }),
            JMP_JGT_X => pc += usize::from(if a > x { fentry.jt } else { fentry.jf }),
            JMP_JGE_X => pc += usize::from(if a >= x { fentry.jt } else { fentry.jf }),
            JMP_JEQ_X => pc += usize::from(if a == x { fentry.jt } else { fentry.jf }),
            JMP_JSET_X => pc += usize::from(if a & x != 0 { fentry.jt } else { fentry.jf }),
            // The seccomp rewrite leaves `ld len` as `ld #64`; a packet
            // length is all these two can mean here.
            LD_W_LEN => a = SECCOMP_DATA_SIZE as u32,
            LDX_W_LEN => x = SECCOMP_DATA_SIZE as u32,
            LD_IMM => a = k,
            LDX_IMM => x = k,
            LD_MEM => a = mem.get((k & 15) as usize).copied().unwrap_or(0),
            LDX_MEM => x = mem.get((k & 15) as usize).copied().unwrap_or(0),
            MISC_TAX => x = a,
            MISC_TXA => a = x,
            RET_K => return (k, steps),
            RET_A => return (a, steps),
            ST => {
                if let Some(m) = mem.get_mut((k & 15) as usize) {
                    *m = a;
                }
            }
            STX => {
                if let Some(m) = mem.get_mut((k & 15) as usize) {
                    *m = x;
                }
            }
            // BPF_S_ANC_SECCOMP_LD_W: `A = seccomp_bpf_load(fentry->k)`.
            LDX_W_ABS => a = seccomp_bpf_load(data, k),
            // Packet loads never reach a seccomp program (the kernel's
            // `default:` returns 0 as well).
            _ => return (0, steps),
        }
    }
    (0, steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Interp, SeccompData};

    #[test]
    fn seccomp_bpf_load_reads_each_field() {
        // Sixteen distinct words: nr, arch, the halves of
        // instruction_pointer, then those of each argument.
        let words: [u32; 16] = std::array::from_fn(|i| 0xc000_0000 | i as u32);
        let bytes = SeccompData::from_words(&words).to_bytes();
        for (off, want) in (0..).step_by(4).zip(words) {
            assert_eq!(seccomp_bpf_load(&bytes, off), want, "off {off}");
        }
        assert_eq!(seccomp_bpf_load(&bytes, 64), 0);
    }

    #[test]
    fn plain_agrees_with_the_interpreter_and_counts_the_trace() {
        let text = "ld [4]\njeq #0xc000003e, ok, kill\nok: ld [0]\njgt #100, big, small\nbig: ld [16]\nand #0xff\nst M[3]\nldx M[3]\ntxa\nrsh #1\nret a\nsmall: ret #0x7fff0000\nkill: ret #0";
        let insns = crate::text::parse(text.as_bytes(), crate::Format::Asm).unwrap();
        let prog = crate::validate(&insns, Mode::Seccomp).unwrap();
        let plain = PlainInterp::new(&prog);
        let interp = Interp::new(&prog);
        for (nr, arch, arg) in [(5, 0xc000_003e, 0), (500, 0xc000_003e, 0x1ff), (500, 3, 0)] {
            let d = SeccompData { nr, arch, instruction_pointer: 0, args: [arg, 0, 0, 0, 0, 0] }.to_bytes();
            let mut steps = 0u64;
            let want = interp.trace_seccomp(&d, |_| steps += 1).unwrap();
            assert_eq!(plain.run_seccomp_counted(&d).unwrap(), (want, steps));
        }
    }
}
