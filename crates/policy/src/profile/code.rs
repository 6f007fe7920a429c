//! A classic program written front to back with labels: conditional jumps
//! to labels at most 255 instructions ahead, `ja` to any label ahead. The
//! reference program and the argument checks of `compile` are written
//! with it.

use cbpf::opcode::{JMP_JA, RET_K};
use cbpf::Insn;

/// A place in the program, bound once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label(usize);

/// Where a conditional jump goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum To {
    /// The next instruction.
    Next,
    Label(Label),
}

#[derive(Debug)]
enum Item {
    Insn(Insn),
    Cond { code: u16, k: u32, t: To, f: To },
    Ja(Label),
}

/// The program under construction.
#[derive(Debug, Default)]
pub(crate) struct Code {
    items: Vec<Item>,
    /// Where each label was bound.
    at: Vec<Option<usize>>,
}

/// A jump whose target is behind it, unbound, or out of reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("internal error: the jump at instruction {pc} cannot reach its target")]
pub struct Unreachable {
    pub pc: usize,
}

impl Code {
    pub(crate) fn label(&mut self) -> Label {
        self.at.push(None);
        Label(self.at.len() - 1)
    }

    /// Binds `l` to the next instruction.
    pub(crate) fn bind(&mut self, l: Label) {
        if let Some(slot) = self.at.get_mut(l.0) {
            *slot = Some(self.items.len());
        }
    }

    pub(crate) fn stmt(&mut self, code: u16, k: u32) {
        self.items.push(Item::Insn(Insn::stmt(code, k)));
    }

    pub(crate) fn ret(&mut self, k: u32) {
        self.stmt(RET_K, k);
    }

    pub(crate) fn cond(&mut self, code: u16, k: u32, t: To, f: To) {
        self.items.push(Item::Cond { code, k, t, f });
    }

    pub(crate) fn ja(&mut self, l: Label) {
        self.items.push(Item::Ja(l));
    }

    /// The program, every label resolved.
    pub(crate) fn finish(self) -> Result<Vec<Insn>, Unreachable> {
        let dist = |pc: usize, l: Label| -> Result<usize, Unreachable> {
            let at = self.at.get(l.0).copied().flatten().ok_or(Unreachable { pc })?;
            at.checked_sub(pc + 1).ok_or(Unreachable { pc })
        };
        let short = |pc: usize, to: To| -> Result<u8, Unreachable> {
            match to {
                To::Next => Ok(0),
                To::Label(l) => u8::try_from(dist(pc, l)?).map_err(|_| Unreachable { pc }),
            }
        };
        self.items
            .iter()
            .enumerate()
            .map(|(pc, item)| match *item {
                Item::Insn(i) => Ok(i),
                Item::Cond { code, k, t, f } => Ok(Insn::jump(code, k, short(pc, t)?, short(pc, f)?)),
                Item::Ja(l) => Ok(Insn::stmt(JMP_JA, u32::try_from(dist(pc, l)?).map_err(|_| Unreachable { pc })?)),
            })
            .collect()
    }
}
