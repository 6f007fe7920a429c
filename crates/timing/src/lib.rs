//! Timing statistics and SVG cost charts, shared by `bpfconv bench` (the
//! CLI) and the benchmark tables of `cargo xtask bench` (the unpublished
//! `benches` package), so both summarise and draw their figures one way.
//!
//! - [`stats`]: medians of repeated samples with their range, and the
//!   calibrated batch timer.
//! - [`rounds`]: the rounds loop of `bpfconv bench` (every cell
//!   calibrated, then timed once a round, lanes interleaved).
//! - [`plot`]: line charts of nanoseconds per evaluation, one line per
//!   engine, each engine in a fixed colour.

pub mod plot;
pub mod rounds;
pub mod stats;
