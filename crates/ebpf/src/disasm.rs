//! Disassembler to the bpf_conformance / uBPF assembly syntax of [`crate::asm`].
//!
//! The output re-assembles to the same bytes: `assemble(&disassemble(p)?) == p`.
//! An instruction the syntax cannot express (a non-zero field the
//! instruction does not use, an opcode with no mnemonic) is an error rather
//! than text that would assemble to something else; the kernel-style
//! [`crate::listing`] prints any instruction.
//!
//! ```
//! use ebpf::{asm::assemble, disasm::disassemble};
//! let prog = assemble("mov %r0, 1\njeq %r1, 5, +1\nexit\nexit").unwrap();
//! assert_eq!(disassemble(&prog).unwrap(), "mov %r0, 1\njeq %r1, 5, +1\nexit\nexit\n");
//! ```

use crate::asm::{ALU_OPS, ATOMIC_OPS, CALL_RUNTIME, JMP_OPS, MOVSX_OPS, SIZES};
use crate::insn::{Insn, Pc};
use crate::opcode::{
    BPF_ABS, BPF_ALU, BPF_ALU64, BPF_ATOMIC, BPF_CALL, BPF_CMPXCHG, BPF_DW, BPF_END, BPF_EXIT, BPF_FETCH, BPF_IMM,
    BPF_IND, BPF_JA, BPF_JMP, BPF_JMP32, BPF_LD, BPF_LDX, BPF_MEM, BPF_MEMSX, BPF_MOV, BPF_NEG, BPF_PSEUDO_CALL,
    BPF_ST, BPF_STX, BPF_TO_BE, BPF_W, BPF_X, BPF_XCHG, LD_IMM64,
};

/// Why an instruction has no text in the assembly syntax.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DisasmError {
    #[error("instruction {pc}: opcode {code:#04x} has no mnemonic")]
    UnknownOpcode { pc: Pc, code: u8 },
    #[error("instruction {pc}: opcode {code:#04x} has a non-zero unused {field} field")]
    UnusedField { pc: Pc, code: u8, field: &'static str },
    #[error("instruction {pc}: {code:#04x} with {field} = {value} has no mnemonic")]
    UnsupportedVariant { pc: Pc, code: u8, field: &'static str, value: i64 },
    #[error("instruction {pc}: lddw has no valid second slot")]
    TruncatedLddw { pc: Pc },
}

/// Disassembles a whole program, one instruction per line, each ending in
/// `\n`; `lddw` takes one line for its two slots. Jump targets are printed
/// as `+N`/`-N` slot offsets.
///
/// # Errors
/// The first instruction that has no text (see [`DisasmError`]).
pub fn disassemble(insns: &[Insn]) -> Result<String, DisasmError> {
    let mut out = String::new();
    let mut pc = 0;
    while pc < insns.len() {
        let (text, slots) = disassemble_one(insns, pc)?;
        out.push_str(&text);
        out.push('\n');
        pc += slots;
    }
    Ok(out)
}

/// Disassembles the instruction at `pc`, returning its text and how many
/// slots it takes (2 for `lddw`, else 1).
///
/// # Errors
/// See [`DisasmError`]. A `pc` past the end of `insns` is reported as
/// [`DisasmError::TruncatedLddw`].
pub fn disassemble_one(insns: &[Insn], pc: usize) -> Result<(String, usize), DisasmError> {
    let Some(&insn) = insns.get(pc) else {
        return Err(DisasmError::TruncatedLddw { pc: Pc(pc) });
    };
    let at = Pc(pc);
    if insn.code == LD_IMM64 {
        let hi = match insns.get(pc + 1) {
            Some(hi) if hi.code == 0 && hi.regs == 0 && hi.off == 0 => hi,
            _ => return Err(DisasmError::TruncatedLddw { pc: at }),
        };
        Check::new(at, insn).zero_src()?.zero_off()?;
        let value = (u64::from(hi.imm as u32) << 32) | u64::from(insn.imm as u32);
        return Ok((format!("lddw {}, {value:#x}", reg(insn.dst())), 2));
    }
    Ok((format_one(at, insn)?, 1))
}

/// Field checks that turn a non-zero unused field into an error.
struct Check {
    pc: Pc,
    insn: Insn,
}

impl Check {
    fn new(pc: Pc, insn: Insn) -> Self {
        Check { pc, insn }
    }

    fn unused(&self, field: &'static str) -> DisasmError {
        DisasmError::UnusedField { pc: self.pc, code: self.insn.code, field }
    }

    fn zero_dst(&self) -> Result<&Self, DisasmError> {
        if self.insn.dst() == 0 {
            Ok(self)
        } else {
            Err(self.unused("dst"))
        }
    }

    fn zero_src(&self) -> Result<&Self, DisasmError> {
        if self.insn.src() == 0 {
            Ok(self)
        } else {
            Err(self.unused("src"))
        }
    }

    fn zero_off(&self) -> Result<&Self, DisasmError> {
        if self.insn.off == 0 {
            Ok(self)
        } else {
            Err(self.unused("off"))
        }
    }

    fn zero_imm(&self) -> Result<&Self, DisasmError> {
        if self.insn.imm == 0 {
            Ok(self)
        } else {
            Err(self.unused("imm"))
        }
    }
}

fn reg(r: u8) -> String {
    format!("%r{r}")
}

/// A 32-bit immediate: small and negative values in decimal, others in hex
/// (both re-assemble to the same bits).
fn imm(value: i32) -> String {
    if (-10..=10).contains(&value) || (value < 0 && value != i32::MIN) {
        value.to_string()
    } else {
        format!("{:#x}", value as u32)
    }
}

/// `[%rN]`, `[%rN+off]`, `[%rN-off]`.
fn mem(r: u8, off: i16) -> String {
    match off {
        0 => format!("[%r{r}]"),
        o if o > 0 => format!("[%r{r}+{o}]"),
        o => format!("[%r{r}{o}]"),
    }
}

/// A jump offset, always signed.
fn target(off: i32) -> String {
    format!("{off:+}")
}

fn size_suffix(code: u8) -> &'static str {
    let size = code & 0x18;
    SIZES.iter().find(|(_, s)| *s == size).map_or("?", |(name, _)| name)
}

fn format_one(pc: Pc, insn: Insn) -> Result<String, DisasmError> {
    let check = Check::new(pc, insn);
    let unknown = || DisasmError::UnknownOpcode { pc, code: insn.code };
    let code = insn.code;
    let (dst, src, off, imm32) = (insn.dst(), insn.src(), insn.off, insn.imm);
    let op = code & 0xf0;
    let mode = code & 0xe0;
    match insn.class() {
        class @ (BPF_ALU | BPF_ALU64) => {
            let suffix = if class == BPF_ALU { "32" } else { "" };
            if op == BPF_END {
                check.zero_src()?.zero_off()?;
                let name = match (class, code & BPF_X) {
                    (BPF_ALU, BPF_TO_BE) => "be",
                    (BPF_ALU, _) => "le",
                    (_, BPF_TO_BE) => return Err(unknown()),
                    _ => "bswap",
                };
                if !matches!(imm32, 16 | 32 | 64) {
                    return Err(DisasmError::UnsupportedVariant { pc, code, field: "imm", value: imm32.into() });
                }
                return Ok(format!("{name}{imm32} {}", reg(dst)));
            }
            if op == BPF_NEG {
                if code & BPF_X != 0 {
                    return Err(unknown());
                }
                check.zero_src()?.zero_off()?.zero_imm()?;
                return Ok(format!("neg{suffix} {}", reg(dst)));
            }
            if op == BPF_MOV && off != 0 && code & BPF_X != 0 {
                let name = MOVSX_OPS
                    .iter()
                    .find(|(_, c, o)| *c == class && *o == off)
                    .map(|(name, ..)| *name)
                    .ok_or(DisasmError::UnsupportedVariant { pc, code, field: "off", value: off.into() })?;
                check.zero_imm()?;
                return Ok(format!("{name} {}, {}", reg(dst), reg(src)));
            }
            let name =
                ALU_OPS.iter().find(|(_, o, f)| *o == op && *f == off).map(|(name, ..)| *name).ok_or_else(|| {
                    if ALU_OPS.iter().any(|(_, o, _)| *o == op) {
                        DisasmError::UnsupportedVariant { pc, code, field: "off", value: off.into() }
                    } else {
                        unknown()
                    }
                })?;
            if code & BPF_X != 0 {
                check.zero_imm()?;
                Ok(format!("{name}{suffix} {}, {}", reg(dst), reg(src)))
            } else {
                check.zero_src()?;
                Ok(format!("{name}{suffix} {}, {}", reg(dst), imm(imm32)))
            }
        }
        BPF_LDX => {
            let name = match mode {
                BPF_MEM => "ldx",
                BPF_MEMSX if code & 0x18 != BPF_DW => "ldxs",
                _ => return Err(unknown()),
            };
            check.zero_imm()?;
            Ok(format!("{name}{} {}, {}", size_suffix(code), reg(dst), mem(src, off)))
        }
        BPF_ST => {
            if mode != BPF_MEM {
                return Err(unknown());
            }
            check.zero_src()?;
            Ok(format!("st{} {}, {}", size_suffix(code), mem(dst, off), imm(imm32)))
        }
        BPF_STX => match mode {
            BPF_MEM => {
                check.zero_imm()?;
                Ok(format!("stx{} {}, {}", size_suffix(code), mem(dst, off), reg(src)))
            }
            BPF_ATOMIC if code & 0x18 == BPF_W || code & 0x18 == BPF_DW => {
                let width = if code & 0x18 == BPF_W { "32" } else { "" };
                let operation = match imm32 {
                    BPF_XCHG => format!("xchg{width}"),
                    BPF_CMPXCHG => format!("cmpxchg{width}"),
                    _ => {
                        let fetch = if imm32 & BPF_FETCH != 0 { "fetch " } else { "" };
                        let name =
                            ATOMIC_OPS.iter().find(|(_, v)| *v == imm32 & !BPF_FETCH).map(|(name, _)| *name).ok_or(
                                DisasmError::UnsupportedVariant { pc, code, field: "imm", value: imm32.into() },
                            )?;
                        format!("{fetch}{name}{width}")
                    }
                };
                Ok(format!("lock {operation} {}, {}", mem(dst, off), reg(src)))
            }
            _ => Err(unknown()),
        },
        BPF_LD => match mode {
            BPF_ABS => {
                check.zero_dst()?.zero_src()?.zero_off()?;
                Ok(format!("ldabs{} {}", size_suffix(code), imm(imm32)))
            }
            BPF_IND => {
                check.zero_dst()?.zero_off()?;
                Ok(format!("ldind{} {}, {}", size_suffix(code), reg(src), imm(imm32)))
            }
            // LD_IMM64 is handled by the caller; other BPF_IMM sizes have no meaning.
            BPF_IMM => Err(unknown()),
            _ => Err(unknown()),
        },
        class => {
            // BPF_JMP or BPF_JMP32.
            let suffix = if class == BPF_JMP32 { "32" } else { "" };
            if code == BPF_JMP | BPF_EXIT {
                check.zero_dst()?.zero_src()?.zero_off()?.zero_imm()?;
                return Ok("exit".to_owned());
            }
            if code == BPF_JMP | BPF_CALL {
                check.zero_dst()?.zero_off()?;
                return match src {
                    0 => Ok(format!("call {}", imm(imm32))),
                    BPF_PSEUDO_CALL => Ok(format!("call local {}", target(imm32))),
                    CALL_RUNTIME => Ok(format!("call runtime {}", imm(imm32))),
                    other => Err(DisasmError::UnsupportedVariant { pc, code, field: "src", value: other.into() }),
                };
            }
            if code == BPF_JMP | BPF_CALL | BPF_X {
                check.zero_src()?.zero_off()?.zero_imm()?;
                return Ok(format!("call {}", reg(dst)));
            }
            if code == BPF_JMP | BPF_JA {
                check.zero_dst()?.zero_src()?.zero_imm()?;
                return Ok(format!("ja {}", target(off.into())));
            }
            if code == BPF_JMP32 | BPF_JA {
                check.zero_dst()?.zero_src()?.zero_off()?;
                return Ok(format!("ja32 {}", target(imm32)));
            }
            let name = JMP_OPS.iter().find(|(_, o)| *o == op).map(|(name, _)| *name).ok_or_else(unknown)?;
            if code & BPF_X != 0 {
                check.zero_imm()?;
                Ok(format!("{name}{suffix} {}, {}, {}", reg(dst), reg(src), target(off.into())))
            } else {
                check.zero_src()?;
                Ok(format!("{name}{suffix} {}, {}, {}", reg(dst), imm(imm32), target(off.into())))
            }
        }
    }
}
