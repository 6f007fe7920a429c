//! The one writer every command prints through: a buffered, locked stdout
//! whose write errors become `error: writing stdout: ...` (exit 1) instead of
//! the panic of `println!`.

use std::io::{BufWriter, StdoutLock, Write};

use crate::fail::{io, Result};

/// Buffered stdout. Call [`Out::finish`] at the end: dropping it flushes
/// without reporting an error.
#[derive(Debug)]
pub struct Out {
    w: BufWriter<StdoutLock<'static>>,
}

impl Out {
    /// Locks stdout.
    pub fn stdout() -> Self {
        Out { w: BufWriter::new(std::io::stdout().lock()) }
    }

    /// Writes formatted text (what `outln!` / `out!` expand to).
    pub fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> Result<()> {
        self.w.write_fmt(args).map_err(io("writing stdout"))
    }

    /// Writes bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.w.write_all(bytes).map_err(io("writing stdout"))
    }

    /// Flushes everything written so far, reporting a write error.
    pub fn finish(mut self) -> Result<()> {
        self.w.flush().map_err(io("writing stdout"))
    }
}

/// `println!` through an [`Out`]: `outln!(out, "...", x)?`.
macro_rules! outln {
    ($out:expr) => {
        $out.write_all(b"\n")
    };
    ($out:expr, $($arg:tt)*) => {
        $out.write_fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through an [`Out`]: `out!(out, "...", x)?`.
macro_rules! out {
    ($out:expr, $($arg:tt)*) => {
        $out.write_fmt(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};
