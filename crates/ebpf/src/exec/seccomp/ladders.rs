//! 32-bit argument ladders ([`chain::ladder`]: Chromium's check of an
//! argument's two words before each of several `==`, as the converter
//! writes it) as one op: the first round's load of the high word becomes a
//! [`Kind::Ladder`](super::ops::Kind::Ladder), which checks the words once
//! and scans the keys ([`chain::ladder::Ladders`], shared with the classic
//! interpreter). The other rounds keep their ops, for jumps that land on
//! them. Executed counts stay exact: a counting run adds what the rounds
//! it ran did not execute between the start and where it leaves
//! (`chain::ladder::Leave::executed`).

use chain::ladder::Ladders;

use super::chains::{ChainExit, Shapes, NOT_RET};

/// The ladders among the `n` pcs of `shapes`, each outcome a [`ChainExit`]
/// that ends the run where it lands on `w0 = K; exit`.
pub(super) fn find(shapes: &Shapes<'_>, n: usize) -> Ladders<ChainExit> {
    Ladders::build(shapes, n, |pc| {
        let ret = shapes.ret_k(pc).unwrap_or(NOT_RET);
        Some(ChainExit { target: u32::try_from(pc).ok()?, skip: 0, ret })
    })
}

/// Where ladder `ladder` leaves to with `hi` and `lo` in the argument's
/// words, and the value r0 holds there (the word loaded last); with
/// `COUNT`, the exit's skip is what the ladder did not execute between its
/// start and the exit's pc, else 0. [`ChainExit::NOWHERE`] for a ladder
/// that does not exist (never: ladder ops are made for them).
#[inline(always)]
pub(super) fn exit<const COUNT: bool>(ladders: &Ladders<ChainExit>, ladder: u32, hi: u32, lo: u32) -> (ChainExit, u64) {
    let ladder = ladder as usize;
    if COUNT {
        let (Some((mut exit, leave)), Some(l)) = (ladders.leave(ladder, hi, lo), ladders.all().get(ladder)) else {
            return (ChainExit::NOWHERE, 0);
        };
        // Forward jumps: the pcs passed are at least the instructions run.
        let passed = leave.pc.saturating_sub(l.start) as u64;
        exit.skip = passed.saturating_sub(leave.executed) as u32;
        return (exit, u64::from(leave.value));
    }
    ladders.exit(ladder, hi, lo).map_or((ChainExit::NOWHERE, 0), |(exit, a)| (exit, u64::from(a)))
}
