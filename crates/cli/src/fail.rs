//! How a command fails: a one-line message and the exit code of FORMATS.md §1
//! (1: the input was rejected or a check failed; 2: usage error).

use std::fmt::Display;

/// A command's failure.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

/// Shorthand for command results.
pub type Result<T> = std::result::Result<T, Failure>;

impl Failure {
    /// The input was rejected, or a check failed (exit 1).
    pub fn rejected(message: impl Display) -> Self {
        Failure { code: 1, message: message.to_string() }
    }

    /// The command line was wrong (exit 2).
    pub fn usage(message: impl Display) -> Self {
        Failure { code: 2, message: message.to_string() }
    }
}

macro_rules! rejected_from {
    ($($t:ty),* $(,)?) => {
        $(impl From<$t> for Failure {
            fn from(e: $t) -> Self {
                Failure::rejected(e)
            }
        })*
    };
}

rejected_from!(
    cbpf::ParseError,
    cbpf::ValidateError,
    cbpf::raw::DecodeError,
    cbpf::ExecError,
    convert::ConvertError,
    ebpf::LoadError,
    ebpf::ExecError,
    ebpf::asm::AsmError,
    engine::EngineError,
    engine::vectors::VectorError,
    seccomp::asm::AsmError,
    kernel::KernelError,
    kernel::DumpError,
);

/// Adds what was being done to an IO error.
pub fn io(what: impl Display) -> impl FnOnce(std::io::Error) -> Failure {
    move |e| Failure::rejected(format!("{what}: {e}"))
}
