//! Assembler for the seccomp-tools-style text that [`crate::disasm`] prints.
//!
//! Two input forms, mixable line by line:
//! - the full listing, ` 0003: 0x15 0x00 0x01 0x0000006e  if (A != getppid) goto 0005`:
//!   the raw `code jt jf k` columns are used as they are and the text after
//!   them is ignored, so `assemble(disasm(p)) == p` for every program;
//! - text only, seccomp-tools `asm` style, with optional `label:` lines:
//!   `A = arch`, `if (A == 0xc000003e) goto 0003 else goto 0004`,
//!   `if (A != ARCH_X86_64) goto kill`, `A = args[1] >> 32`, `A &= 0xff`,
//!   `mem[0] = A`, `X = A`, `return ERRNO(1)`, `return KILL`, `goto 0007`.
//!   Jump targets are absolute line numbers (decimal) or labels; syscall names
//!   in comparisons are resolved in the arch the program has established on
//!   that path ([`crate::disasm::arch_flow`]), else in the default arch.
//!
//! Header lines (` line  CODE ...`, `=====`) and comments (`#`, `//`) are
//! skipped. Text-only `A = <field>` assembles to `ld [k]` (0x20); the
//! kernel-internal 0x21 survives only through the raw columns.

use std::collections::HashMap;

use cbpf::opcode::*;
use cbpf::{AluOp, Insn};

use crate::action::{parse_number, Action, ParseActionError};
use crate::arch::Arch;
use crate::disasm::{alu_symbol, arch_flow, field_name, naming_arch};

/// Why a text is not a program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AsmError {
    #[error("line {line}:{col}: cannot parse `{text}`")]
    Syntax { line: usize, col: usize, text: String },
    #[error("line {line}:{col}: bad number `{text}`")]
    BadNumber { line: usize, col: usize, text: String },
    #[error("line {line}:{col}: {source}")]
    BadAction { line: usize, col: usize, source: ParseActionError },
    #[error("line {line}:{col}: label `{label}` defined twice")]
    DuplicateLabel { line: usize, col: usize, label: String },
    #[error("line {line}:{col}: unknown label `{label}`")]
    UnknownLabel { line: usize, col: usize, label: String },
    #[error("line {line}:{col}: jump from instruction {pc} to {target} is backwards or too far")]
    BadJump { line: usize, col: usize, pc: usize, target: u64 },
    #[error("line {line}:{col}: unknown syscall `{name}` for arch {arch}")]
    UnknownSyscall { line: usize, col: usize, name: String, arch: String },
    #[error("no instructions")]
    Empty,
}

/// Options of [`assemble`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AsmOptions {
    /// Arch used to resolve syscall names where the program establishes none.
    pub default_arch: Option<Arch>,
}

#[derive(Debug, Clone)]
enum Target {
    Line(u64),
    Label(String),
}

#[derive(Debug, Clone)]
enum Operand {
    Num(u32),
    X,
    Syscall(String),
}

#[derive(Debug, Clone)]
enum Item {
    Done(Insn),
    Ja(Target),
    Cond { op: u16, operand: Operand, jt: Option<Target>, jf: Option<Target> },
}

#[derive(Debug, Clone)]
struct Located {
    item: Item,
    line: usize,
    col: usize,
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Assembles text (either form, see the module docs) into instructions.
pub fn assemble(text: &str, options: AsmOptions) -> Result<Vec<Insn>, AsmError> {
    let mut items: Vec<Located> = Vec::new();
    let mut labels: HashMap<String, usize> = HashMap::new();
    for (i, raw_line) in text.lines().enumerate() {
        let line = i + 1;
        let mut s = raw_line;
        for marker in ["#", "//"] {
            if let Some(at) = s.find(marker) {
                s = s.get(..at).unwrap_or("");
            }
        }
        let indent = s.len() - s.trim_start().len();
        let mut s = s.trim();
        let mut col = indent + 1;
        if s.is_empty() || s.starts_with("line ") || s.chars().all(|c| c == '=') {
            continue;
        }
        // ` 0003: ...`: a line number, then either raw columns or text.
        if let Some((num, rest)) = s.split_once(':') {
            if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit()) {
                if let Some(insn) = parse_raw(rest) {
                    items.push(Located { item: Item::Done(insn), line, col });
                    continue;
                }
                col += s.len() - rest.trim_start().len();
                s = rest.trim();
            } else if is_ident(num.trim()) {
                let label = num.trim().to_string();
                if labels.insert(label.clone(), items.len()).is_some() {
                    return Err(AsmError::DuplicateLabel { line, col, label });
                }
                col += s.len() - rest.trim_start().len();
                s = rest.trim();
                if s.is_empty() {
                    continue;
                }
            }
        }
        let item = parse_statement(s, line, col)?;
        items.push(Located { item, line, col });
    }
    if items.is_empty() {
        return Err(AsmError::Empty);
    }
    resolve(&items, &labels, options)
}

/// `0x15 0x00 0x01 0x0000006e [text]`: the four raw columns.
fn parse_raw(rest: &str) -> Option<Insn> {
    let mut cols = rest.split_whitespace();
    let mut next_hex = || -> Option<u64> {
        let t = cols.next()?;
        u64::from_str_radix(t.strip_prefix("0x")?, 16).ok()
    };
    let code = u16::try_from(next_hex()?).ok()?;
    let jt = u8::try_from(next_hex()?).ok()?;
    let jf = u8::try_from(next_hex()?).ok()?;
    let k = u32::try_from(next_hex()?).ok()?;
    Some(Insn { code, jt, jf, k })
}

fn number(text: &str, line: usize, col: usize) -> Result<u32, AsmError> {
    parse_number(text).and_then(|v| u32::try_from(v).ok()).ok_or_else(|| AsmError::BadNumber {
        line,
        col,
        text: text.to_string(),
    })
}

/// `mem[k]` → `k`.
fn mem_index(text: &str) -> Option<&str> {
    text.strip_prefix("mem[")?.strip_suffix(']')
}

fn target(text: &str) -> Target {
    match text.trim().parse::<u64>() {
        Ok(n) => Target::Line(n),
        Err(_) => Target::Label(text.trim().to_string()),
    }
}

/// The `seccomp_data` offset a field name reads (the inverse of `field_name`).
fn field_offset(text: &str) -> Option<u32> {
    let compact: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(inner) = compact.strip_prefix("data[").and_then(|r| r.strip_suffix(']')) {
        return parse_number(inner).and_then(|v| u32::try_from(v).ok());
    }
    (0..64).step_by(4).find(|&k| field_name(k) == compact)
}

fn parse_statement(s: &str, line: usize, col: usize) -> Result<Item, AsmError> {
    let syntax = || AsmError::Syntax { line, col, text: s.to_string() };
    let stmt = |code: u16, k: u32| Ok(Item::Done(Insn::stmt(code, k)));
    if let Some(rest) = s.strip_prefix("return ") {
        let rest = rest.trim();
        if rest == "A" {
            return stmt(RET_A, 0);
        }
        let action: Action = rest.parse().map_err(|source| AsmError::BadAction { line, col, source })?;
        return stmt(RET_K, action.to_u32());
    }
    if let Some(rest) = s.strip_prefix("goto ") {
        return Ok(Item::Ja(target(rest)));
    }
    if s.starts_with("if") {
        return parse_if(s, line, col);
    }
    // bpf_asm-style packet loads (not seccomp, but printed by disasm).
    for (prefix, code_abs, code_ind) in
        [("ldh [", LD_H_ABS, LD_H_IND), ("ldb [", LD_B_ABS, LD_B_IND), ("ld [", LD_W_ABS, LD_W_IND)]
    {
        if let Some(inner) = s.strip_prefix(prefix).and_then(|r| r.strip_suffix(']')) {
            return match inner.trim().strip_prefix("x + ") {
                Some(k) => stmt(code_ind, number(k, line, col)?),
                None => stmt(code_abs, number(inner, line, col)?),
            };
        }
    }
    if let Some(k) = s.strip_prefix("ldxb 4*([").and_then(|r| r.strip_suffix("]&0xf)")) {
        return stmt(LDX_B_MSH, number(k, line, col)?);
    }
    for op in AluOp::ALL {
        let sym = alu_symbol(op);
        if let Some(rhs) = s.strip_prefix("A ").and_then(|r| r.strip_prefix(sym)) {
            let rhs = rhs.trim();
            return if rhs == "X" {
                stmt(BPF_ALU | op.bits() | BPF_X, 0)
            } else {
                stmt(BPF_ALU | op.bits() | BPF_K, number(rhs, line, col)?)
            };
        }
    }
    let (lhs, rhs) = s.split_once('=').ok_or_else(syntax)?;
    let (lhs, rhs) = (lhs.trim(), rhs.trim());
    if let Some(k) = mem_index(lhs) {
        let k = number(k, line, col)?;
        return match rhs {
            "A" => stmt(ST, k),
            "X" => stmt(STX, k),
            _ => Err(syntax()),
        };
    }
    match lhs {
        "A" => match rhs {
            "-A" => stmt(ALU_NEG, 0),
            "X" => stmt(MISC_TXA, 0),
            "len" => stmt(LD_W_LEN, 0),
            _ => {
                if let Some(k) = mem_index(rhs) {
                    stmt(LD_MEM, number(k, line, col)?)
                } else if let Some(k) = field_offset(rhs) {
                    stmt(LD_W_ABS, k)
                } else {
                    stmt(LD_IMM, number(rhs, line, col)?)
                }
            }
        },
        "X" => match rhs {
            "A" => stmt(MISC_TAX, 0),
            "len" => stmt(LDX_W_LEN, 0),
            _ => match mem_index(rhs) {
                Some(k) => stmt(LDX_MEM, number(k, line, col)?),
                None => stmt(LDX_IMM, number(rhs, line, col)?),
            },
        },
        _ => Err(syntax()),
    }
}

/// `if (COND) goto T [else goto F]`.
fn parse_if(s: &str, line: usize, col: usize) -> Result<Item, AsmError> {
    let syntax = || AsmError::Syntax { line, col, text: s.to_string() };
    let rest = s.strip_prefix("if").ok_or_else(syntax)?.trim_start();
    let goto_at = rest.rfind(") goto ").ok_or_else(syntax)?;
    let cond = rest.get(..goto_at).and_then(|c| c.strip_prefix('(')).ok_or_else(syntax)?.trim();
    let targets = rest.get(goto_at + ") goto ".len()..).ok_or_else(syntax)?;
    let (t_true, t_else) = match targets.split_once(" else goto ") {
        Some((t, f)) => (target(t), Some(target(f))),
        None => (target(targets), None),
    };
    // (code, negated, operand text)
    let (code, negated, value) = if let Some(inner) = cond.strip_prefix("!(").and_then(|c| c.strip_suffix(')')) {
        let v = inner.trim().strip_prefix("A &").ok_or_else(syntax)?;
        (BPF_JMP | BPF_JSET, true, v.trim())
    } else {
        let body = cond.strip_prefix("A ").ok_or_else(syntax)?;
        let ops: [(&str, u16, bool); 7] = [
            ("==", BPF_JEQ, false),
            ("!=", BPF_JEQ, true),
            (">=", BPF_JGE, false),
            ("<=", BPF_JGT, true),
            (">", BPF_JGT, false),
            ("<", BPF_JGE, true),
            ("&", BPF_JSET, false),
        ];
        let (sym, op, neg) = ops.iter().copied().find(|(sym, _, _)| body.starts_with(sym)).ok_or_else(syntax)?;
        (BPF_JMP | op, neg, body.get(sym.len()..).unwrap_or("").trim())
    };
    let (code, operand) = if value == "X" {
        (code | BPF_X, Operand::X)
    } else if let Some(v) = parse_number(value) {
        (code, Operand::Num(u32::try_from(v).map_err(|_| AsmError::BadNumber { line, col, text: value.to_string() })?))
    } else if let Some(name) = value.strip_prefix("ARCH_") {
        let arch: Arch = name.parse().map_err(|_| syntax())?;
        (code, Operand::Num(arch.audit_arch()))
    } else if is_ident(value) {
        (code, Operand::Syscall(value.to_string()))
    } else {
        return Err(syntax());
    };
    // Negated forms jump when the kernel's condition is false.
    let (jt, jf) = match (negated, t_else) {
        (false, f) => (Some(t_true), f),
        (true, None) => (None, Some(t_true)),
        (true, Some(f)) => (Some(f), Some(t_true)),
    };
    Ok(Item::Cond { op: code, operand, jt, jf })
}

fn resolve(items: &[Located], labels: &HashMap<String, usize>, options: AsmOptions) -> Result<Vec<Insn>, AsmError> {
    let abs = |t: &Target, l: &Located| -> Result<u64, AsmError> {
        match t {
            Target::Line(n) => Ok(*n),
            Target::Label(name) => labels.get(name).map(|&i| i as u64).ok_or_else(|| AsmError::UnknownLabel {
                line: l.line,
                col: l.col,
                label: name.clone(),
            }),
        }
    };
    let offset = |t: Option<&Target>, pc: usize, l: &Located, max: u64| -> Result<u64, AsmError> {
        let Some(t) = t else { return Ok(0) };
        let target = abs(t, l)?;
        target.checked_sub(pc as u64 + 1).filter(|&off| off <= max).ok_or(AsmError::BadJump {
            line: l.line,
            col: l.col,
            pc,
            target,
        })
    };
    // Pass 1: everything but syscall names (placeholder 0).
    let mut insns = Vec::with_capacity(items.len());
    for (pc, l) in items.iter().enumerate() {
        insns.push(match &l.item {
            Item::Done(insn) => *insn,
            Item::Ja(t) => Insn::stmt(JMP_JA, offset(Some(t), pc, l, u64::from(u32::MAX))? as u32),
            Item::Cond { op, operand, jt, jf } => {
                let k = match operand {
                    Operand::Num(k) => *k,
                    Operand::X | Operand::Syscall(_) => 0,
                };
                let jt = offset(jt.as_ref(), pc, l, 255)? as u8;
                let jf = offset(jf.as_ref(), pc, l, 255)? as u8;
                Insn::jump(*op, k, jt, jf)
            }
        });
    }
    // Pass 2: syscall names, in the arch established on the path.
    let facts = arch_flow(&insns);
    for (pc, l) in items.iter().enumerate() {
        if let Item::Cond { operand: Operand::Syscall(name), .. } = &l.item {
            let arch = naming_arch(facts.get(pc).copied().flatten(), options.default_arch);
            let nr = arch.and_then(crate::syscalls::table).and_then(|t| t.number(name));
            let unknown = || AsmError::UnknownSyscall {
                line: l.line,
                col: l.col,
                name: name.clone(),
                arch: arch.map_or_else(|| "(none)".to_string(), |a| a.to_string()),
            };
            let insn = insns.get_mut(pc).ok_or_else(unknown)?;
            insn.k = nr.ok_or_else(unknown)?;
        }
    }
    Ok(insns)
}
