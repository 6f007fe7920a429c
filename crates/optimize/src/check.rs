//! The checks every filter this crate lays out passes before it is handed
//! out, for `bpfconv optimize` (against the input filter) and `bpfconv
//! compile` (`policy::compile`, against the profile's reference program)
//! alike: it validates as seccomp(2) would, it keeps every ALLOW the
//! kernel's constant-action cache gives the reference, and `equiv` proves
//! it equal to the reference. A failure is a bug of the layout: reported,
//! never written.

use cbpf::{Insn, Mode, Program};

/// Which command made the filter a [`CheckError`] is about: its messages
/// name it and what it was proved against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Maker {
    /// `bpfconv optimize`: the output is proved equal to the input filter.
    Optimize,
    /// `bpfconv compile`: the filter is proved equal to the profile.
    Compile,
}

impl Maker {
    /// The filter as the messages name it ("the optimised filter").
    fn made(self) -> &'static str {
        match self {
            Maker::Optimize => "optimised",
            Maker::Compile => "compiled",
        }
    }

    /// What the filter is proved equal to, then the words for the
    /// counterexample's left (reference) and right (made) answers.
    fn sides(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Maker::Optimize => ("the input", "input", "output"),
            Maker::Compile => ("the profile", "the profile", "the filter"),
        }
    }
}

/// Why a laid-out filter was not handed out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The layout does not validate.
    #[error("the {} filter does not validate: {error}", .maker.made())]
    Invalid { maker: Maker, error: cbpf::ValidateError },
    /// The kernel's cache would no longer allow `nr` on `arch` without
    /// running the filter.
    #[error("the {} filter loses the kernel's cached ALLOW of nr {nr} on arch {arch:#x}", .maker.made())]
    CacheLost { maker: Maker, arch: u32, nr: u32 },
    /// The proof found an input the two filters answer differently.
    #[error(
        "the {made} filter differs from {against}: nr {nr} arch {arch:#x}: {left_name} returns {left:#x}, {right_name} {right:#x}",
        made = .maker.made(), against = .maker.sides().0, left_name = .maker.sides().1, right_name = .maker.sides().2,
        nr = .counterexample.data.nr, arch = .counterexample.data.arch,
        left = .counterexample.left, right = .counterexample.right
    )]
    Differ { maker: Maker, counterexample: equiv::Counterexample },
    /// The proof was not reached within its budget.
    #[error("not proved equal: {0}")]
    Undecided(equiv::EquivError),
}

/// `insns` as seccomp(2) would take them (seccomp mode, at most
/// `BPF_MAXINSNS` instructions).
pub fn validate(maker: Maker, insns: &[Insn]) -> Result<Program, CheckError> {
    cbpf::validate(insns, Mode::Seccomp).map_err(|error| CheckError::Invalid { maker, error })
}

/// Ok when `made` keeps the reference's cached ALLOWs (`cache_lost` is the
/// first (arch, nr) it does not, as [`crate::cache_lost`] finds it for a
/// filter) and is proved equal to `reference` within `options`.
pub fn prove(
    maker: Maker,
    reference: &Program,
    made: &Program,
    cache_lost: Option<(u32, u32)>,
    options: &equiv::Options,
) -> Result<(), CheckError> {
    if let Some((arch, nr)) = cache_lost {
        return Err(CheckError::CacheLost { maker, arch, nr });
    }
    equiv::prove(equiv::Side::single(reference), equiv::Side::single(made), options).map_err(|e| match e {
        equiv::NotProved::Differ(counterexample) => CheckError::Differ { maker, counterexample },
        equiv::NotProved::Undecided(e) => CheckError::Undecided(e),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The messages each command printed before the checks were shared.
    #[test]
    fn messages_name_the_command() {
        let allow = validate(Maker::Optimize, &[Insn::stmt(0x06, 0x7fff_0000)]).unwrap();
        let kill = validate(Maker::Optimize, &[Insn::stmt(0x06, 0)]).unwrap();
        let invalid = |maker| validate(maker, &[]).unwrap_err().to_string();
        let lost = |maker| prove(maker, &allow, &allow, Some((0xc000_003e, 7)), &Default::default()).unwrap_err();
        let differ = |maker| prove(maker, &allow, &kill, None, &Default::default()).unwrap_err().to_string();
        let cbpf_error = cbpf::validate(&[], Mode::Seccomp).unwrap_err();
        assert_eq!(invalid(Maker::Optimize), format!("the optimised filter does not validate: {cbpf_error}"));
        assert_eq!(invalid(Maker::Compile), format!("the compiled filter does not validate: {cbpf_error}"));
        assert_eq!(
            lost(Maker::Optimize).to_string(),
            "the optimised filter loses the kernel's cached ALLOW of nr 7 on arch 0xc000003e"
        );
        assert_eq!(
            lost(Maker::Compile).to_string(),
            "the compiled filter loses the kernel's cached ALLOW of nr 7 on arch 0xc000003e"
        );
        let Err(CheckError::Differ { counterexample: c, .. }) =
            prove(Maker::Optimize, &allow, &kill, None, &Default::default())
        else {
            panic!("allow and kill differ")
        };
        let (nr, arch) = (c.data.nr, c.data.arch);
        assert_eq!(
            differ(Maker::Optimize),
            format!("the optimised filter differs from the input: nr {nr} arch {arch:#x}: input returns 0x7fff0000, output 0x0")
        );
        assert_eq!(
            differ(Maker::Compile),
            format!(
                "the compiled filter differs from the profile: nr {nr} arch {arch:#x}: the profile returns 0x7fff0000, the filter 0x0"
            )
        );
    }
}
