//! The constants a generated program uses, kept so that its inputs can
//! hit them: `gen`'s 32-bit pool (cBPF) and `gen_ebpf`'s 64-bit one share
//! this store, each with its own way of drawing a value.

/// At most this many constants, the first ones seen, each once.
#[derive(Debug, Clone, Default)]
pub struct Pool<T> {
    values: Vec<T>,
}

impl<T: Copy + PartialEq> Pool<T> {
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
}
