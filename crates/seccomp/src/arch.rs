//! `AUDIT_ARCH_*` values (include/uapi/linux/audit.h, SPEC §5.4), their
//! names, and the native/compat pairs the kernel's seccomp cache uses.
//!
//! An `AUDIT_ARCH` is `EM_* | __AUDIT_ARCH_64BIT (0x80000000) | __AUDIT_ARCH_LE
//! (0x40000000)` (plus `__AUDIT_ARCH_CONVENTION_MIPS64_N32` 0x20000000 for
//! n32). x32 is not an arch value of its own: it reports `AUDIT_ARCH_X86_64`
//! and sets bit 30 (`__X32_SYSCALL_BIT`) in `nr`; [`Arch::X32`] models that.

use std::fmt;
use std::str::FromStr;

pub use cbpf::uapi::audit::*;
pub use cbpf::uapi::x86_64::X32_SYSCALL_BIT;

/// A system call ABI as a seccomp filter sees it: an `AUDIT_ARCH` value plus,
/// for x32, the number bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Arch {
    X86_64,
    I386,
    /// x86_64's x32 ABI: arch `AUDIT_ARCH_X86_64`, `nr | 0x40000000`.
    X32,
    Aarch64,
    Arm,
    Armeb,
    Riscv64,
    Riscv32,
    S390x,
    S390,
    Ppc64le,
    Ppc64,
    Ppc,
    /// `AUDIT_ARCH_PPC | __AUDIT_ARCH_LE` (compat of a little-endian ppc64 kernel).
    Ppcle,
    Mips,
    Mipsel,
    Mips64,
    Mipsel64,
    Mips64n32,
    Mipsel64n32,
    Loongarch64,
    M68k,
    /// 64-bit PA-RISC; its compat ABI is [`Arch::Parisc`].
    Parisc64,
    Parisc,
    /// Little-endian SuperH (`AUDIT_ARCH_SHEL`), libseccomp's `sh`.
    Sh,
    /// Big-endian SuperH (`AUDIT_ARCH_SH`), libseccomp's `sheb`.
    Sheb,
    /// Any other `AUDIT_ARCH` value.
    Other(u32),
}

impl Arch {
    /// Every named arch (not [`Arch::Other`]).
    pub const ALL: [Arch; 26] = [
        Arch::X86_64,
        Arch::I386,
        Arch::X32,
        Arch::Aarch64,
        Arch::Arm,
        Arch::Armeb,
        Arch::Riscv64,
        Arch::Riscv32,
        Arch::S390x,
        Arch::S390,
        Arch::Ppc64le,
        Arch::Ppc64,
        Arch::Ppc,
        Arch::Ppcle,
        Arch::Mips,
        Arch::Mipsel,
        Arch::Mips64,
        Arch::Mipsel64,
        Arch::Mips64n32,
        Arch::Mipsel64n32,
        Arch::Loongarch64,
        Arch::M68k,
        Arch::Parisc64,
        Arch::Parisc,
        Arch::Sh,
        Arch::Sheb,
    ];

    /// The value `seccomp_data.arch` holds for this ABI.
    pub const fn audit_arch(self) -> u32 {
        match self {
            Arch::X86_64 | Arch::X32 => AUDIT_ARCH_X86_64,
            Arch::I386 => AUDIT_ARCH_I386,
            Arch::Aarch64 => AUDIT_ARCH_AARCH64,
            Arch::Arm => AUDIT_ARCH_ARM,
            Arch::Armeb => AUDIT_ARCH_ARMEB,
            Arch::Riscv64 => AUDIT_ARCH_RISCV64,
            Arch::Riscv32 => AUDIT_ARCH_RISCV32,
            Arch::S390x => AUDIT_ARCH_S390X,
            Arch::S390 => AUDIT_ARCH_S390,
            Arch::Ppc64le => AUDIT_ARCH_PPC64LE,
            Arch::Ppc64 => AUDIT_ARCH_PPC64,
            Arch::Ppc => AUDIT_ARCH_PPC,
            Arch::Ppcle => AUDIT_ARCH_PPCLE,
            Arch::Mips => AUDIT_ARCH_MIPS,
            Arch::Mipsel => AUDIT_ARCH_MIPSEL,
            Arch::Mips64 => AUDIT_ARCH_MIPS64,
            Arch::Mipsel64 => AUDIT_ARCH_MIPSEL64,
            Arch::Mips64n32 => AUDIT_ARCH_MIPS64N32,
            Arch::Mipsel64n32 => AUDIT_ARCH_MIPSEL64N32,
            Arch::Loongarch64 => AUDIT_ARCH_LOONGARCH64,
            Arch::M68k => AUDIT_ARCH_M68K,
            Arch::Parisc64 => AUDIT_ARCH_PARISC64,
            Arch::Parisc => AUDIT_ARCH_PARISC,
            Arch::Sh => AUDIT_ARCH_SHEL,
            Arch::Sheb => AUDIT_ARCH_SH,
            Arch::Other(v) => v,
        }
    }

    /// Bits OR-ed into every syscall number of this ABI (x32: bit 30).
    pub const fn nr_bit(self) -> u32 {
        match self {
            Arch::X32 => X32_SYSCALL_BIT,
            _ => 0,
        }
    }

    /// The arch for an `AUDIT_ARCH` value (`AUDIT_ARCH_X86_64` gives
    /// [`Arch::X86_64`], never x32; unknown values give [`Arch::Other`]).
    pub fn from_audit_arch(value: u32) -> Arch {
        Arch::ALL.into_iter().find(|a| *a != Arch::X32 && a.audit_arch() == value).unwrap_or(Arch::Other(value))
    }

    /// Lower-case name (`x86_64`, `aarch64`, ...); `None` for [`Arch::Other`].
    pub const fn name(self) -> Option<&'static str> {
        Some(match self {
            Arch::X86_64 => "x86_64",
            Arch::I386 => "i386",
            Arch::X32 => "x32",
            Arch::Aarch64 => "aarch64",
            Arch::Arm => "arm",
            Arch::Armeb => "armeb",
            Arch::Riscv64 => "riscv64",
            Arch::Riscv32 => "riscv32",
            Arch::S390x => "s390x",
            Arch::S390 => "s390",
            Arch::Ppc64le => "ppc64le",
            Arch::Ppc64 => "ppc64",
            Arch::Ppc => "ppc",
            Arch::Ppcle => "ppcle",
            Arch::Mips => "mips",
            Arch::Mipsel => "mipsel",
            Arch::Mips64 => "mips64",
            Arch::Mipsel64 => "mipsel64",
            Arch::Mips64n32 => "mips64n32",
            Arch::Mipsel64n32 => "mipsel64n32",
            Arch::Loongarch64 => "loongarch64",
            Arch::M68k => "m68k",
            Arch::Parisc64 => "parisc64",
            Arch::Parisc => "parisc",
            Arch::Sh => "sh",
            Arch::Sheb => "sheb",
            Arch::Other(_) => return None,
        })
    }

    /// The `AUDIT_ARCH_*` macro suffix (`X86_64`, `AARCH64`, ...) as
    /// seccomp-tools prints it after `ARCH_`; `None` for x32 and [`Arch::Other`].
    pub fn macro_name(self) -> Option<String> {
        match self {
            Arch::X32 | Arch::Other(_) => None,
            a => a.name().map(str::to_ascii_uppercase),
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "{:#010x}", self.audit_arch()),
        }
    }
}

/// Why a string names no arch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseArchError {
    #[error("unknown arch `{text}` (expected a name such as x86_64, i386, x32, aarch64, arm, riscv64, s390x, ppc64le, or an AUDIT_ARCH value such as 0xC000003E)")]
    Unknown { text: String },
}

/// Accepts the names of [`Arch::name`] (any case), common aliases (`amd64`,
/// `x86-64`, `x86`, `i686`, `arm64`, `ppc64el`, `armhf`, ...), an optional
/// `AUDIT_ARCH_` / `ARCH_` prefix, and a number (`0xC000003E`, decimal), as
/// FORMATS.md §2 `--arch` requires.
impl FromStr for Arch {
    type Err = ParseArchError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim();
        if let Some(v) = crate::action::parse_number(t) {
            return u32::try_from(v)
                .map(Arch::from_audit_arch)
                .map_err(|_| ParseArchError::Unknown { text: text.to_string() });
        }
        let lower = t.to_ascii_lowercase();
        let body = lower.strip_prefix("audit_arch_").or_else(|| lower.strip_prefix("arch_")).unwrap_or(&lower);
        let alias = match body {
            "amd64" | "x86-64" | "x64" => Some(Arch::X86_64),
            "x86" | "i686" | "i586" | "i486" | "ia32" => Some(Arch::I386),
            "arm64" => Some(Arch::Aarch64),
            "armhf" | "armel" | "armv7" => Some(Arch::Arm),
            "ppc64el" | "powerpc64le" => Some(Arch::Ppc64le),
            "powerpc64" => Some(Arch::Ppc64),
            "powerpc" => Some(Arch::Ppc),
            "loong64" => Some(Arch::Loongarch64),
            "hppa" => Some(Arch::Parisc),
            "hppa64" => Some(Arch::Parisc64),
            _ => None,
        };
        alias
            .or_else(|| Arch::ALL.into_iter().find(|a| a.name() == Some(body)))
            .ok_or_else(|| ParseArchError::Unknown { text: text.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_round_trip() {
        for a in Arch::ALL {
            let name = a.name().unwrap();
            assert_eq!(name.parse::<Arch>().unwrap(), a, "{name}");
            if a != Arch::X32 {
                assert_eq!(Arch::from_audit_arch(a.audit_arch()), a);
            }
        }
    }
}
