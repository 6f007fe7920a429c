//! A program's control-flow graph as Graphviz DOT (`disasm --format dot`,
//! `convert --format dot`): one node per basic block with its instructions,
//! conditional edges labelled `true`/`false`, returns filled by what they
//! return — what bpftool's `prog dump xlated visual` gives eBPF users.

use std::fmt::Write;

use seccomp::Action;

/// How control leaves one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// To the next instruction (`skip` slots on: a wide instruction is 2).
    Next { skip: usize },
    /// Always to this pc (`ja`).
    Jump(usize),
    /// To `t` when the condition holds, else to `f`.
    Branch { t: usize, f: usize },
    /// The program ends here, returning this (`None`: computed).
    Return(Option<u32>),
}

/// What a program's returns mean, for their colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returns {
    /// Seccomp actions.
    Seccomp,
    /// Socket filters: 0 drops, anything else keeps that many bytes.
    Socket,
}

/// The fill of a block that returns `value`.
fn fill(returns: Returns, value: Option<u32>) -> &'static str {
    let Some(v) = value else { return "lightgray" };
    match returns {
        Returns::Socket if v == 0 => "salmon",
        Returns::Socket => "palegreen",
        Returns::Seccomp => match Action::from_u32(v) {
            Action::Allow | Action::Log => "palegreen",
            Action::Errno(_) => "khaki",
            Action::Trace(_) | Action::UserNotif => "lightblue",
            Action::Trap(_) => "plum",
            Action::KillThread | Action::KillProcess => "salmon",
            Action::Unknown(_) => "lightgray",
        },
    }
}

/// Blocks past which the layout's effort is bounded.
const BIG: usize = 64;

/// Escapes a DOT string's contents.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The DOT graph `name` of a program of `len` slots whose instruction at
/// each pc has the text `text(pc)` and leaves as `flow(pc)`. A target past
/// the end gets a node of its own saying so.
pub fn graph(
    name: &str,
    len: usize,
    returns: Returns,
    text: impl Fn(usize) -> String,
    flow: impl Fn(usize) -> Flow,
) -> String {
    // Leaders: the first pc, every target, every pc after a block's end.
    let mut leader = vec![false; len + 1];
    let mut mark = |pc: usize| {
        if let Some(l) = leader.get_mut(pc) {
            *l = true;
        }
    };
    mark(0);
    let mut pc = 0;
    while pc < len {
        match flow(pc) {
            Flow::Next { skip } => pc += skip.max(1),
            Flow::Jump(t) => {
                mark(t);
                pc += 1;
                mark(pc);
            }
            Flow::Branch { t, f } => {
                mark(t);
                mark(f);
                pc += 1;
                mark(pc);
            }
            Flow::Return(_) => {
                pc += 1;
                mark(pc);
            }
        }
    }
    // Blocks, each `(start, last, flow out, text)`.
    let mut blocks: Vec<(usize, usize, Flow, String)> = Vec::new();
    let mut start = 0;
    while start < len {
        let mut lines = String::new();
        let mut pc = start;
        let (last, f) = loop {
            let _ = write!(lines, "{}\\l", escape(&text(pc)));
            let f = flow(pc);
            let next = match f {
                Flow::Next { skip } => pc + skip.max(1),
                _ => break (pc, f),
            };
            if next >= len || leader.get(next).copied().unwrap_or(true) {
                break (pc, f);
            }
            pc = next;
        };
        blocks.push((start, last, f, lines));
        start = last
            + match f {
                Flow::Next { skip } => skip.max(1),
                _ => 1,
            };
    }
    // A return block of at most two instructions (`ret #k`; eBPF's `r0 = k;
    // exit`) is drawn once per edge into it: a filter's hundreds of jumps to
    // one `ret ALLOW` would otherwise knot the layout (and take dot minutes).
    let lone_return =
        |pc: usize| blocks.iter().find(|b| b.0 == pc).is_some_and(|b| b.1 - b.0 < 2 && matches!(b.2, Flow::Return(_)));
    let colour = |f: Flow| match f {
        Flow::Return(v) => format!(", fillcolor={}", fill(returns, v)),
        _ => String::new(),
    };
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", escape(name));
    let _ = writeln!(out, "  node [shape=box, style=filled, fillcolor=white, fontname=\"monospace\"];");
    if blocks.len() > BIG {
        // Long edges over hundreds of ranks make dot's crossing
        // minimisation and network simplex run for minutes: cut them short
        // (seconds) and keep each node's out-edges in order.
        let _ = writeln!(out, "  graph [ordering=out, mclimit=0.01, nslimit=0.5, nslimit1=0.5];");
    }
    let mut outside: Vec<usize> = Vec::new();
    let mut entered: Vec<bool> = vec![false; len + 1];
    for (start, last, f, lines) in &blocks {
        if !lone_return(*start) {
            let _ = writeln!(out, "  b{start} [label=\"{lines}\"{}];", colour(*f));
        }
        let mut edge = |to: usize, label: Option<&str>| {
            let label = label.map(|l| format!(" [label=\"{l}\"]")).unwrap_or_default();
            if to >= len {
                if !outside.contains(&to) {
                    outside.push(to);
                }
                let _ = writeln!(out, "  b{start} -> b{to}{label};");
            } else if lone_return(to) {
                if let Some(b) = blocks.iter().find(|b| b.0 == to) {
                    let _ = writeln!(out, "  b{to}_{start} [label=\"{}\"{}];", b.3, colour(b.2));
                }
                let _ = writeln!(out, "  b{start} -> b{to}_{start}{label};");
                if let Some(e) = entered.get_mut(to) {
                    *e = true;
                }
            } else {
                let _ = writeln!(out, "  b{start} -> b{to}{label};");
            }
        };
        match *f {
            Flow::Next { skip } => edge(last + skip.max(1), None),
            Flow::Jump(t) => edge(t, None),
            Flow::Branch { t, f } => {
                edge(t, Some("true"));
                edge(f, Some("false"));
            }
            Flow::Return(_) => {}
        }
    }
    // A lone return nothing jumps to (the whole program, or dead code).
    for (start, _, f, lines) in &blocks {
        if lone_return(*start) && !entered.get(*start).copied().unwrap_or(true) {
            let _ = writeln!(out, "  b{start} [label=\"{lines}\"{}];", colour(*f));
        }
    }
    for pc in outside {
        let _ = writeln!(out, "  b{pc} [label=\"pc {pc}: past the end of the program\", fillcolor=lightgray];");
    }
    out.push_str("}\n");
    out
}

/// A classic program's graph: seccomp-tools text in seccomp mode (syscalls
/// and actions named), `tcpdump -d` lines for socket filters.
pub fn classic(insns: &[cbpf::Insn], returns: Returns, default_arch: Option<seccomp::Arch>) -> String {
    let lines: Vec<String> = match returns {
        Returns::Seccomp => {
            // A branch says its condition as the instruction tests it
            // (seccomp-tools would print `!=` towards `jf`): the edges say
            // where true and false go.
            let facts = seccomp::disasm::arch_flow(insns);
            insns
                .iter()
                .enumerate()
                .map(|(pc, &insn)| {
                    let text =
                        |insn| seccomp::disasm::insn_text(pc, insn, facts.get(pc).copied().flatten(), default_arch);
                    let text = match insn.op() {
                        // With `jt` non-zero the text starts `if (condition
                        // as tested) goto`, whatever `jf`: cut at the goto.
                        Some(cbpf::Op::Jmp { .. }) => {
                            let branch = text(cbpf::Insn { jt: 1, ..insn });
                            branch.split(" goto ").next().unwrap_or_default().to_string()
                        }
                        _ => text(insn),
                    };
                    format!("{pc:04}: {text}")
                })
                .collect()
        }
        Returns::Socket => cbpf::text::print_pcap(insns).lines().map(str::to_string).collect(),
    };
    let flow = |pc: usize| {
        let Some(insn) = insns.get(pc) else { return Flow::Return(None) };
        match insn.op() {
            Some(cbpf::Op::RetK { k }) => Flow::Return(Some(k)),
            Some(cbpf::Op::RetA) => Flow::Return(None),
            Some(cbpf::Op::Ja { k }) => Flow::Jump(pc.saturating_add(1).saturating_add(k as usize)),
            Some(cbpf::Op::Jmp { jt, jf, .. }) => {
                Flow::Branch { t: pc + 1 + usize::from(jt), f: pc + 1 + usize::from(jf) }
            }
            _ => Flow::Next { skip: 1 },
        }
    };
    graph("classic", insns.len(), returns, |pc| lines.get(pc).cloned().unwrap_or_default(), flow)
}

/// An eBPF program's graph (kernel-style text); an `exit` block is filled by
/// the constant it last moved into r0 on its straight line (the converted
/// program's `ret #k`), grey when r0 was computed.
pub fn ebpf(insns: &[ebpf::Insn], returns: Returns, helper_name: ebpf::listing::HelperNameFn) -> String {
    use ebpf::op::{AluOp, Op, Operand};
    let ops: Vec<Option<Op>> = (0..insns.len()).map(|pc| Op::decode_at(insns, pc).ok()).collect();
    let op = |pc: usize| ops.get(pc).copied().flatten();
    let target = |pc: usize, off: i64| usize::try_from(pc as i64 + 1 + off).unwrap_or(usize::MAX);
    // What an instruction does to r0: `Some(Some(k))` sets it to k,
    // `Some(None)` computes it, `None` leaves it.
    let r0 = |o: Op| -> Option<Option<u32>> {
        match o {
            Op::Alu { op: AluOp::Mov, dst: 0, src: Operand::K(k), .. } => Some(Some(k as u32)),
            Op::Alu { dst: 0, .. } | Op::Neg { dst: 0, .. } | Op::MovSx { dst: 0, .. } | Op::End { dst: 0, .. } => {
                Some(None)
            }
            Op::LdImm64 { dst: 0, .. } | Op::Ldx { dst: 0, .. } | Op::Ldsx { dst: 0, .. } => Some(None),
            Op::LdAbs { .. } | Op::LdInd { .. } | Op::Call { .. } | Op::Callx { .. } => Some(None),
            _ => None,
        }
    };
    // Jump targets: a straight line back from an `exit` stops at one.
    let mut targeted = vec![false; insns.len() + 1];
    for pc in 0..insns.len() {
        let t = match op(pc) {
            Some(Op::Ja { off }) | Some(Op::Jmp { off, .. }) => target(pc, i64::from(off)),
            Some(Op::Gotol { imm }) => target(pc, i64::from(imm)),
            _ => continue,
        };
        if let Some(slot) = targeted.get_mut(t) {
            *slot = true;
        }
    }
    let flow = |pc: usize| -> Flow {
        match op(pc) {
            Some(Op::Ja { off }) => Flow::Jump(target(pc, i64::from(off))),
            Some(Op::Gotol { imm }) => Flow::Jump(target(pc, i64::from(imm))),
            Some(Op::Jmp { off, .. }) => Flow::Branch { t: target(pc, i64::from(off)), f: pc + 1 },
            Some(Op::Exit) => {
                let mut k = None;
                for p in (0..pc).rev() {
                    if targeted.get(p + 1).copied().unwrap_or(true) {
                        break;
                    }
                    match op(p) {
                        Some(Op::Ja { .. } | Op::Gotol { .. } | Op::Jmp { .. } | Op::Exit) | None => break,
                        Some(o) => {
                            if let Some(v) = r0(o) {
                                k = v;
                                break;
                            }
                        }
                    }
                }
                Flow::Return(k)
            }
            o => Flow::Next { skip: o.map_or(1, |o| o.slots()) },
        }
    };
    let text = |pc: usize| {
        let next = insns.get(pc + 1);
        insns
            .get(pc)
            .map(|i| format!("{pc:4}: {}", ebpf::listing::format_insn_with(i, next, helper_name)))
            .unwrap_or_default()
    };
    graph("ebpf", insns.len(), returns, text, flow)
}

#[cfg(test)]
mod tests;
