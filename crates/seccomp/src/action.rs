//! Seccomp return values (`SECCOMP_RET_*`, include/uapi/linux/seccomp.h) and
//! the kernel's precedence between them (SPEC §5.2).
//!
//! A filter returns a `u32`: the action in the top 16 bits, data in the low
//! 16. [`Action`] is a lossless view of that `u32`: `Action::from_u32(v).to_u32() == v`
//! for every `v`. Precedence is **signed** on `ACTION_ONLY(ret) = (s32)(ret & 0xffff0000)`
//! ([`action_only`]): KILL_PROCESS (0x80000000) is the most negative and wins
//! everything; unknown actions are ranked by the same number and, when they
//! win, the kernel treats them as KILL_PROCESS ([`Outcome::of`]).

use std::fmt;
use std::str::FromStr;

pub use cbpf::uapi::seccomp::{
    SECCOMP_RET_ACTION, SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ALLOW, SECCOMP_RET_DATA, SECCOMP_RET_ERRNO,
    SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_LOG, SECCOMP_RET_TRACE, SECCOMP_RET_TRAP,
    SECCOMP_RET_USER_NOTIF,
};
/// `MAX_ERRNO` (include/linux/err.h): the cap applied to ERRNO data.
pub const MAX_ERRNO: u16 = 4095;

/// `ACTION_ONLY(ret)` of kernel/seccomp.c: the signed rank of a return value;
/// smaller is more restrictive.
#[inline]
pub const fn action_only(ret: u32) -> i32 {
    (ret & SECCOMP_RET_ACTION_FULL) as i32
}

/// A seccomp return value, losslessly.
///
/// The five actions without data are only spelled by their variant when the
/// data bits are zero; any other value (an unknown action, or for example
/// `0x7fff0001`, an ALLOW with data bits set) is `Unknown(v)`, kept verbatim so
/// [`Action::to_u32`] gives it back. [`Outcome::of`] says what the kernel does
/// with any value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// `SECCOMP_RET_KILL_PROCESS` (0x80000000).
    KillProcess,
    /// `SECCOMP_RET_KILL_THREAD` (0).
    KillThread,
    /// `SECCOMP_RET_TRAP | data`.
    Trap(u16),
    /// `SECCOMP_RET_ERRNO | errno`.
    Errno(u16),
    /// `SECCOMP_RET_USER_NOTIF` (0x7fc00000).
    UserNotif,
    /// `SECCOMP_RET_TRACE | data`.
    Trace(u16),
    /// `SECCOMP_RET_LOG` (0x7ffc0000).
    Log,
    /// `SECCOMP_RET_ALLOW` (0x7fff0000).
    Allow,
    /// Any other value, verbatim.
    Unknown(u32),
}

impl Action {
    /// The eight actions in the kernel's precedence order, most restrictive first.
    pub const PRECEDENCE: [Action; 8] = [
        Action::KillProcess,
        Action::KillThread,
        Action::Trap(0),
        Action::Errno(0),
        Action::UserNotif,
        Action::Trace(0),
        Action::Log,
        Action::Allow,
    ];

    /// The view of a raw return value (total, lossless).
    pub const fn from_u32(ret: u32) -> Action {
        let data = (ret & SECCOMP_RET_DATA) as u16;
        match (ret & SECCOMP_RET_ACTION_FULL, data) {
            (SECCOMP_RET_KILL_PROCESS, 0) => Action::KillProcess,
            (SECCOMP_RET_KILL_THREAD, 0) => Action::KillThread,
            (SECCOMP_RET_TRAP, d) => Action::Trap(d),
            (SECCOMP_RET_ERRNO, d) => Action::Errno(d),
            (SECCOMP_RET_USER_NOTIF, 0) => Action::UserNotif,
            (SECCOMP_RET_TRACE, d) => Action::Trace(d),
            (SECCOMP_RET_LOG, 0) => Action::Log,
            (SECCOMP_RET_ALLOW, 0) => Action::Allow,
            _ => Action::Unknown(ret),
        }
    }

    /// The raw return value.
    pub const fn to_u32(self) -> u32 {
        match self {
            Action::KillProcess => SECCOMP_RET_KILL_PROCESS,
            Action::KillThread => SECCOMP_RET_KILL_THREAD,
            Action::Trap(d) => SECCOMP_RET_TRAP | d as u32,
            Action::Errno(d) => SECCOMP_RET_ERRNO | d as u32,
            Action::UserNotif => SECCOMP_RET_USER_NOTIF,
            Action::Trace(d) => SECCOMP_RET_TRACE | d as u32,
            Action::Log => SECCOMP_RET_LOG,
            Action::Allow => SECCOMP_RET_ALLOW,
            Action::Unknown(v) => v,
        }
    }

    /// `ACTION_ONLY()` of this value: its signed precedence rank.
    pub const fn rank(self) -> i32 {
        action_only(self.to_u32())
    }

    /// True if the kernel prefers `self` over `other` when combining filters
    /// (strictly smaller signed rank).
    pub const fn wins_over(self, other: Action) -> bool {
        self.rank() < other.rank()
    }

    /// What the kernel does when this value is the chain's result.
    pub fn outcome(self) -> Outcome {
        Outcome::of(self.to_u32())
    }
}

impl From<u32> for Action {
    fn from(ret: u32) -> Self {
        Action::from_u32(ret)
    }
}

impl From<Action> for u32 {
    fn from(a: Action) -> Self {
        a.to_u32()
    }
}

/// Names: `KILL_PROCESS`, `KILL_THREAD`, `TRAP(n)`, `ERRNO(n)`, `USER_NOTIF`,
/// `TRACE(n)`, `LOG`, `ALLOW`; anything else as `0x%08x`. [`FromStr`] reads
/// all of these back.
impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Action::KillProcess => f.write_str("KILL_PROCESS"),
            Action::KillThread => f.write_str("KILL_THREAD"),
            Action::Trap(d) => write!(f, "TRAP({d})"),
            Action::Errno(d) => write!(f, "ERRNO({d})"),
            Action::UserNotif => f.write_str("USER_NOTIF"),
            Action::Trace(d) => write!(f, "TRACE({d})"),
            Action::Log => f.write_str("LOG"),
            Action::Allow => f.write_str("ALLOW"),
            Action::Unknown(v) => write!(f, "{v:#010x}"),
        }
    }
}

/// Why a string is not an action name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseActionError {
    #[error("unknown seccomp action `{text}`")]
    UnknownName { text: String },
    #[error("bad data `{data}` in seccomp action `{text}` (need 0..=65535)")]
    BadData { text: String, data: String },
    #[error("seccomp action `{text}` takes no data")]
    UnexpectedData { text: String },
}

/// Parses an unsigned number: decimal, `0x` hex, `0o` octal or `0b` binary.
pub(crate) fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(o) = s.strip_prefix("0o") {
        (o, 8)
    } else if let Some(b) = s.strip_prefix("0b") {
        (b, 2)
    } else {
        (s, 10)
    };
    if digits.is_empty() {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Accepts our names and the usual other spellings, case-insensitively:
/// `ALLOW`, `ERRNO(1)`, `KILL_PROCESS`, `KILL` (= KILL_THREAD, as the kernel's
/// `SECCOMP_RET_KILL` and seccomp-tools), `TRAP`/`TRACE`/`ERRNO` without data
/// (= data 0), `NOTIFY` (libseccomp), `USER_NOTIF`, with an optional
/// `SECCOMP_RET_` or `SCMP_ACT_` prefix, and a raw number (`0x7fff0000`).
impl FromStr for Action {
    type Err = ParseActionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim();
        if let Some(v) = parse_number(t) {
            return u32::try_from(v)
                .map(Action::from_u32)
                .map_err(|_| ParseActionError::UnknownName { text: text.to_string() });
        }
        let upper = t.to_ascii_uppercase();
        let body = upper.strip_prefix("SECCOMP_RET_").or_else(|| upper.strip_prefix("SCMP_ACT_")).unwrap_or(&upper);
        let (name, data) = match body.split_once('(') {
            Some((name, rest)) => {
                let Some(inner) = rest.trim_end().strip_suffix(')') else {
                    return Err(ParseActionError::UnknownName { text: text.to_string() });
                };
                (name.trim(), Some(inner.trim()))
            }
            None => (body.trim(), None),
        };
        let data_value = match data {
            None => 0u16,
            Some(d) => parse_number(d)
                .and_then(|v| u16::try_from(v).ok())
                .ok_or_else(|| ParseActionError::BadData { text: text.to_string(), data: d.to_string() })?,
        };
        let no_data = |a: Action| match data {
            None => Ok(a),
            Some(_) => Err(ParseActionError::UnexpectedData { text: text.to_string() }),
        };
        match name {
            "KILL_PROCESS" => no_data(Action::KillProcess),
            "KILL_THREAD" | "KILL" => no_data(Action::KillThread),
            "TRAP" => Ok(Action::Trap(data_value)),
            "ERRNO" => Ok(Action::Errno(data_value)),
            "USER_NOTIF" | "NOTIFY" => no_data(Action::UserNotif),
            "TRACE" => Ok(Action::Trace(data_value)),
            "LOG" => no_data(Action::Log),
            "ALLOW" => no_data(Action::Allow),
            _ => Err(ParseActionError::UnknownName { text: text.to_string() }),
        }
    }
}

/// What the kernel does with a filter chain's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The syscall is skipped and returns `-errno` (already capped at
    /// `MAX_ERRNO`; 0 makes it "return 0" without running).
    Errno(u16),
    /// SIGSYS with `si_errno = data`; the syscall is skipped.
    Trap(u16),
    /// A ptrace event with `data`; `-ENOSYS` without a tracer.
    Trace(u16),
    /// The listener is notified; `-ENOSYS` without one.
    UserNotif,
    /// Logged, then allowed.
    Log,
    /// Allowed.
    Allow,
    /// The thread is killed (the process if it is the last thread).
    KillThread,
    /// The process is killed with SIGSYS and a core dump.
    KillProcess,
}

impl Outcome {
    /// The effect of return value `ret`.
    ///
    /// Mirrors the `switch (action)` of `__seccomp_filter()` in
    /// kernel/seccomp.c (Linux 6.18), in its case order: ERRNO (data capped
    /// at `MAX_ERRNO`), TRAP, TRACE, USER_NOTIF, LOG, ALLOW, then KILL_THREAD,
    /// KILL_PROCESS and `default:` together, where everything but KILL_THREAD
    /// kills the process.
    ///
    /// # Deviations
    /// KILL_THREAD of the last live thread also ends the process in the
    /// kernel; that depends on the task, so it is reported as `KillThread`.
    pub const fn of(ret: u32) -> Outcome {
        let data = (ret & SECCOMP_RET_DATA) as u16;
        match ret & SECCOMP_RET_ACTION_FULL {
            SECCOMP_RET_ERRNO => Outcome::Errno(if data > MAX_ERRNO { MAX_ERRNO } else { data }),
            SECCOMP_RET_TRAP => Outcome::Trap(data),
            SECCOMP_RET_TRACE => Outcome::Trace(data),
            SECCOMP_RET_USER_NOTIF => Outcome::UserNotif,
            SECCOMP_RET_LOG => Outcome::Log,
            SECCOMP_RET_ALLOW => Outcome::Allow,
            SECCOMP_RET_KILL_THREAD => Outcome::KillThread,
            _ => Outcome::KillProcess,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (v, name) in [
            (0x8000_0000, "KILL_PROCESS"),
            (0, "KILL_THREAD"),
            (0x0003_0007, "TRAP(7)"),
            (0x0005_0001, "ERRNO(1)"),
            (0x7fc0_0000, "USER_NOTIF"),
            (0x7ff0_0005, "TRACE(5)"),
            (0x7ffc_0000, "LOG"),
            (0x7fff_0000, "ALLOW"),
            (0x7fff_0001, "0x7fff0001"),
            (0x0001_0000, "0x00010000"),
        ] {
            let a = Action::from_u32(v);
            assert_eq!(a.to_string(), name);
            assert_eq!(name.parse::<Action>().unwrap(), a, "{name}");
            assert_eq!(a.to_u32(), v);
        }
    }
}
