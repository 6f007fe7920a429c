//! The constants a generated program uses, kept so that its inputs can
//! hit them: `gen`'s 32-bit pool (cBPF) and `gen_ebpf`'s 64-bit one share
//! this store and one way of drawing a value ([`Pool::draw`]), each with
//! its own [`Draws`] (edges, small numbers, negations).

use arbitrary::unstructured::Int;
use arbitrary::{Arbitrary, Result, Unstructured};

/// At most this many constants, the first ones seen, each once.
#[derive(Debug, Clone, Default)]
pub struct Pool<T> {
    values: Vec<T>,
}

/// A machine word a pool holds (`u32` for cBPF, `u64` for eBPF).
pub trait Word: Int + From<u8> + for<'a> Arbitrary<'a> {
    /// `self + step - 1`, wrapping (a neighbour for `step` in `0..=2`).
    fn nudged(self, step: Self) -> Self;
    /// `-self`, wrapping.
    fn negated(self) -> Self;
}

impl Word for u32 {
    fn nudged(self, step: u32) -> u32 {
        self.wrapping_add(step).wrapping_sub(1)
    }
    fn negated(self) -> u32 {
        self.wrapping_neg()
    }
}

impl Word for u64 {
    fn nudged(self, step: u64) -> u64 {
        self.wrapping_add(step).wrapping_sub(1)
    }
    fn negated(self) -> u64 {
        self.wrapping_neg()
    }
}

/// What [`Pool::draw`] picks from besides the pool.
#[derive(Debug, Clone, Copy)]
pub struct Draws<T: 'static> {
    /// Edge values (sizes, sign bits, all ones, ...).
    pub edges: &'static [T],
    /// Small numbers are `0..=small`.
    pub small: T,
    /// A pooled constant's negation is one more choice.
    pub negations: bool,
}

impl<T: Word> Pool<T> {
    const CAP: usize = 32;

    /// Constants seen so far.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    pub(crate) fn remember(&mut self, v: T) {
        if self.values.len() < Self::CAP && !self.values.contains(&v) {
            self.values.push(v);
        }
    }

    /// An interesting value, remembered: one choice in `3 + negations + 3`
    /// each of an edge (two choices), a pooled constant, its neighbour, its
    /// negation (with `negations`), a small number, or anything; a pooled
    /// choice on an empty pool draws anything.
    pub fn draw(&mut self, u: &mut Unstructured<'_>, draws: &Draws<T>) -> Result<T> {
        let small: u8 = if draws.negations { 5 } else { 4 };
        let pooled = !self.values.is_empty();
        let v = match u.int_in_range(0..=small + 1)? {
            0 | 1 => *u.choose(draws.edges)?,
            2 if pooled => *u.choose(&self.values)?,
            3 if pooled => u.choose(&self.values)?.nudged(u.int_in_range(T::from(0)..=T::from(2))?),
            4 if pooled && draws.negations => u.choose(&self.values)?.negated(),
            n if n == small => u.int_in_range(T::from(0)..=draws.small)?,
            _ => T::arbitrary(u)?,
        };
        self.remember(v);
        Ok(v)
    }
}
