//! bpfconv's leaf test crate: it depends on no bpfconv crate, so every
//! crate's own tests can use it (regex keeps its test data readers in
//! `regex-test` for the same reason).
//!
//! - [`require`]: what a test needs from the host (the running kernel's
//!   seccomp, `SO_ATTACH_FILTER`, bpf(2), prlimit, libseccomp, ...) and the
//!   one way a test says one is missing: `SKIPPED: <test>: <why>` on a
//!   developer's machine, a failure under `CI=true` or when
//!   `BPFCONV_REQUIRE` names it.

pub mod require;
