//! The meaning of a seccomp profile: what a filter built from it must
//! return for every `struct seccomp_data`, in one reference for every
//! format we read (the other direction, filter → profile, is
//! [`crate::oci`]'s `decompile`).
//!
//! ```text
//! OCI linux.seccomp ──────────────► runc (runc.rs) ─┐
//! Docker/Podman file ─ docker.rs ─► (OCI profile) ──┤
//! seccompiler JSON ── seccompiler.rs ───────────────┴─► Meaning ─┬─► eval (this module: the reference)
//!                                                                └─► reference.rs: the same as a classic program
//! ```
//!
//! A [`Meaning`] is, per `AUDIT_ARCH` value, the syscall numbers cut into
//! parts; a part returns a constant (an ABI the profile does not list) or
//! is a [`View`]: one ABI's syscalls by number, each with its rules, and a
//! default. [`Meaning::eval`] is the definition; the reference program
//! ([`reference::program`]) transcribes it rule by rule (a run of rules
//! that differ in one compared value as one list) and is tested
//! against it; `bpfconv compile` proves its output equal to that program.
//!
//! # Names
//! A profile names syscalls; a name means, on each ABI the profile covers,
//! the number Linux 6.18's table of that ABI gives it
//! ([`seccomp::syscalls`]): that is the truth a filter is held to, whatever
//! table the tool that built the filter had. A name no covered ABI has is
//! skipped and reported (runc skips names its libseccomp cannot resolve;
//! seccompiler refuses them, and so do we for its files).
//!
//! # Rules of one syscall
//! A rule is an action and its conditions, all of which must hold (AND).
//! A condition compares one argument with a constant: `==`, `!=`, `<`,
//! `<=`, `>`, `>=` on the whole 64-bit value, or `(arg & mask) == datum`
//! with the datum masked too (libseccomp masks it: `_db_node_mask_fixup()`
//! in src/db.c; seccompiler does the same); a [`Width::Low32`] condition
//! compares only the low 32 bits with the constant's low 32 bits
//! (libseccomp on a 32-bit ABI, seccompiler's `dword`).
//!
//! When an input matches no rule of its syscall the view's default applies.
//! When every rule it matches has the same action, that action applies.
//! When it matches rules with different actions, the **narrower** rule
//! wins: the one whose set of matching inputs lies strictly inside the
//! other's (`args[0] > 10` inside `args[0] > 3`, `args[0] == 3` inside
//! `args[0] != 7`, `args[0] == 3 && args[1] == 2` inside `args[0] == 3`,
//! any conditional rule inside an unconditional one). Two rules with
//! different actions whose sets overlap while neither contains the other
//! (or which match the same inputs) make the profile **ambiguous**: it is
//! refused ([`ProfileError::Ambiguous`], naming both entries and an input
//! both match). This is our decision where the formats are silent:
//!
//! - libseccomp intends the narrower comparison to win where its rule tree
//!   orders comparisons of one argument (`_db_chain_lt()` in src/db.c puts
//!   `==` before ranges, the larger bound of `>`/`>=` and the smaller of
//!   `<`/`<=` first, and `_db_tree_add()` resolves two 64-bit comparisons
//!   that share their high word by the full 64-bit datum). It does not
//!   everywhere: measured on Debian's libseccomp 2.5.4, an unconditional
//!   rule swallows every conditional rule of another action on its syscall
//!   whatever the order, a rule with one more condition than another is
//!   dropped (added after) or refused with `EEXIST` (added before), `!=`
//!   and `==` of one argument are ordered by their constants rather than
//!   by width, `<` inside `<=` of one constant and `==` inside a masked
//!   test by insertion order, and the 64-bit `<`/`<=` merge writes the
//!   true action where the false one was meant (GHSA-4q85-33p6-j5g6, fixed
//!   in 2.6.1); `>` inside `>`, `<` inside `<` (32-bit) and `==` inside a
//!   range do give the narrower action (crates/integration/tests/
//!   libseccomp_differential.rs, `nested_overlaps_against_libseccomp`). Where libseccomp's answer
//!   differs from the narrower rule's, `bpfconv equiv PROFILE FILTER`
//!   prints the input: that is what the profile's author would want to know.
//!   (Beside overlaps, the differential suite found libseccomp 2.5.4
//!   miscompiling rules that mean one thing: two range comparisons of one
//!   64-bit argument in one syscall's rules, such as runc makes of an entry
//!   that compares an argument twice, leave the first rule's low word in A
//!   where the second tests the high word — `read` allowed for
//!   `args[0] < 5 || args[0] >= 2^32` lets `read(6)` through. The code that
//!   reloads A, `_gen_bpf_build_bpf()`, is unchanged in 2.6.1.)
//! - Overlaps that are not nested have no width to go by: libseccomp's
//!   answer there depends on its internal order, the rules' order and its
//!   version, so no filter can be held to one answer.
//!
//! Rules of one action are a union, whatever their overlaps.
//!
//! # Deviations
//! runc prepends a stub (libcontainer/seccomp/patchbpf) that returns
//! `ERRNO(ENOSYS)` for numbers above the highest one the profile names when
//! the default action is not ALLOW, LOG or TRACE; it is a runtime patch of
//! runc's, not part of the profile, and not part of its meaning here.

mod atom;
pub mod docker;
pub mod reference;
pub mod runc;
pub mod seccompiler;

pub(crate) mod code;

use std::collections::BTreeMap;

use cbpf::SeccompData;
use seccomp::Arch;

pub use crate::abi::{arg_offsets, libseccomp_args_64};
use crate::rules::{ArgCond, CmpOp, ARGS};

pub use atom::Atom;
pub use code::Unreachable;

/// The formats a profile is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// The OCI runtime spec's `linux.seccomp` object, as runc applies it
    /// with libseccomp.
    Oci,
    /// A Docker/Podman profile file (`archMap`, `includes`/`excludes`),
    /// selected as moby's `setupSeccomp()` does, then as [`Format::Oci`].
    Docker,
    /// rust-vmm seccompiler's JSON: named per-thread filters.
    Seccompiler,
}

impl Format {
    /// The name `--from` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Oci => "oci",
            Format::Docker => "docker",
            Format::Seccompiler => "seccompiler",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What selects the filter a profile means on one machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The machine's ABIs: the first is the native one (runc adds it to
    /// every filter; Docker selects its `archMap` entry and matches
    /// `includes`/`excludes` `arches` against it; seccompiler's target),
    /// the others are added as `architectures` entries are.
    pub arches: Vec<Arch>,
    /// The container's bounding capabilities (Docker's `includes`/`excludes`
    /// `caps`), `CAP_` names.
    pub caps: Vec<String>,
    /// The running kernel's `(version, major revision)` for `minKernel`.
    pub kernel: (u64, u64),
    /// Which of a seccompiler file's filters (it holds one per thread kind).
    pub thread: Option<String>,
}

/// Docker's default capabilities (moby `daemon/pkg/oci/caps/defaults.go`).
pub const DOCKER_DEFAULT_CAPS: [&str; 14] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
];

/// The kernel whose syscall tables names resolve through.
pub const TABLES_KERNEL: (u64, u64) = (6, 18);

impl Selection {
    /// `native` alone, Docker's default capabilities, the tables' kernel.
    pub fn native(native: Arch) -> Selection {
        Selection {
            arches: vec![native],
            caps: DOCKER_DEFAULT_CAPS.iter().map(|c| c.to_string()).collect(),
            kernel: TABLES_KERNEL,
            thread: None,
        }
    }

    /// The native ABI ([`Selection::arches`]'s first; x86_64 if empty).
    pub fn native_arch(&self) -> Arch {
        self.arches.first().copied().unwrap_or(Arch::X86_64)
    }
}

/// How much of an argument a condition compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Width {
    /// The whole 64-bit value.
    Bits64,
    /// The low 32 bits, with the constants' low 32 bits.
    Low32,
}

impl Width {
    /// The largest value compared.
    pub fn max(self) -> u64 {
        match self {
            Width::Bits64 => u64::MAX,
            Width::Low32 => u64::from(u32::MAX),
        }
    }
}

/// One condition of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cond {
    pub width: Width,
    /// For [`CmpOp::MaskedEq`], `value` is the mask and `value_two` the
    /// datum, already masked.
    pub cmp: ArgCond,
}

impl Cond {
    /// Does it hold for these arguments?
    pub fn holds(&self, args: &[u64; ARGS]) -> bool {
        let max = self.width.max();
        let x = args.get(usize::from(self.cmp.index)).copied().unwrap_or(0) & max;
        let (v, d) = (self.cmp.value & max, self.cmp.value_two & max);
        match self.cmp.op {
            CmpOp::Eq => x == v,
            CmpOp::Ne => x != v,
            CmpOp::Lt => x < v,
            CmpOp::Le => x <= v,
            CmpOp::Gt => x > v,
            CmpOp::Ge => x >= v,
            CmpOp::MaskedEq => x & v == d & v,
        }
    }
}

impl std::fmt::Display for Cond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.width {
            Width::Bits64 => write!(f, "{}", self.cmp),
            Width::Low32 => {
                let c = ArgCond { value: self.cmp.value & u64::from(u32::MAX), ..self.cmp };
                let text = c.to_string();
                let arg = format!("args[{}]", c.index);
                f.write_str(&text.replacen(&arg, &format!("{arg}.lo"), 1))
            }
        }
    }
}

/// Where a rule came from: the profile entry and the name it had there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    /// Index of the entry in the file's `syscalls` (`filter`) array.
    pub entry: usize,
    /// The name as the entry wrote it (`socket` for a rule libseccomp
    /// multiplexes onto `socketcall`).
    pub name: String,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "entry {} ({})", self.entry, self.name)
    }
}

/// One rule: `action` when every condition holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub action: u32,
    pub conds: Vec<Cond>,
    pub origin: Origin,
}

impl Rule {
    /// Does it match these arguments?
    pub fn matches(&self, args: &[u64; ARGS]) -> bool {
        self.conds.iter().all(|c| c.holds(args))
    }
}

/// The rules of one syscall, in an order where the first matching rule
/// has the action [`Meaning::eval`] defines (narrower rules first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Syscall {
    pub name: &'static str,
    pub rules: Vec<Rule>,
}

/// One ABI's syscalls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub arch: Arch,
    /// What a number without a matching rule returns.
    pub default: u32,
    /// By number (x32's with bit 30).
    pub syscalls: BTreeMap<u32, Syscall>,
}

/// What a run of numbers of one arch value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    /// This value (an ABI of the arch value the profile does not list).
    Action(u32),
    /// [`ArchValue::views`]`[i]`.
    View(usize),
}

/// `nr` from `first` to the next part's `first` - 1 (the last to `u32::MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub first: u32,
    pub kind: PartKind,
}

/// Everything the profile says for one `AUDIT_ARCH` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchValue {
    pub audit_arch: u32,
    /// Ascending, the first at 0.
    pub parts: Vec<Part>,
    pub views: Vec<View>,
}

impl ArchValue {
    /// One view for every number.
    pub fn single(view: View) -> ArchValue {
        ArchValue {
            audit_arch: view.arch.audit_arch(),
            parts: vec![Part { first: 0, kind: PartKind::View(0) }],
            views: vec![view],
        }
    }

    /// The part holding `nr`.
    pub fn part(&self, nr: u32) -> PartKind {
        let i = self.parts.partition_point(|p| p.first <= nr);
        self.parts.get(i.saturating_sub(1)).map_or(PartKind::Action(0), |p| p.kind)
    }
}

/// What a profile means: see the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meaning {
    pub format: Format,
    /// In the order a filter checks them (the native arch first).
    pub arches: Vec<ArchValue>,
    /// What every other arch value returns.
    pub other_arches: u32,
    /// Flags the profile asks the filter to be installed with (not part
    /// of what the filter returns).
    pub flags: Vec<String>,
    /// What was skipped or adjusted, for the user (`name: no such syscall
    /// on x86_64, i386`).
    pub notes: Vec<String>,
    /// Rules of different actions where one lies inside the other (the
    /// narrower wins): where libseccomp may give the wider one's action.
    pub nested: Vec<Nested>,
}

/// Two rules of one syscall with different actions, one strictly inside
/// the other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nested {
    /// `x86_64:read`.
    pub syscall: String,
    pub narrower: Origin,
    pub wider: Origin,
}

impl Meaning {
    /// What a filter meaning this profile returns for `d` (its fields as
    /// values: `args[i]` is the 64-bit argument, whatever the byte order
    /// of the arch).
    pub fn eval(&self, d: &SeccompData) -> u32 {
        let Some(value) = self.arches.iter().find(|a| a.audit_arch == d.arch) else {
            return self.other_arches;
        };
        let nr = d.nr as u32;
        match value.part(nr) {
            PartKind::Action(k) => k,
            PartKind::View(i) => {
                let Some(view) = value.views.get(i) else { return self.other_arches };
                match view.syscalls.get(&nr) {
                    Some(s) => resolve(&s.rules, &d.args).unwrap_or(view.default),
                    None => view.default,
                }
            }
        }
    }

    /// Every view, with its arch value.
    pub fn views(&self) -> impl Iterator<Item = &View> {
        self.arches.iter().flat_map(|a| a.views.iter())
    }
}

/// The action of the rules `args` match, by the narrower-rule definition
/// (independent of the rules' order); `None` when none matches.
fn resolve(rules: &[Rule], args: &[u64; ARGS]) -> Option<u32> {
    let hits: Vec<&Rule> = rules.iter().filter(|r| r.matches(args)).collect();
    let first = hits.first()?;
    // The rule inside every matching rule of another action (any, when
    // all have one action).
    let narrowest = hits.iter().find(|r| {
        hits.iter().filter(|o| o.action != r.action).all(|o| atom::strictly_inside(&r.conds, &o.conds) == Some(true))
    });
    // Never ambiguous after construction; fall back to the first.
    Some(narrowest.unwrap_or(first).action)
}

/// Why a profile has no meaning (or not one we can hold a filter to).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// Not JSON, or not the format's shape.
    #[error("line {line}:{col}: {message}")]
    Json { line: usize, col: usize, message: String },
    /// The JSON is none of the formats.
    #[error("not a seccomp profile: {why} (give --from oci, docker or seccompiler)")]
    Unknown { why: String },
    /// A field holds something its format does not allow.
    #[error("{place}: {why}")]
    Invalid { place: String, why: String },
    /// Two rules of different actions overlap without one inside the other.
    #[error(
        "{arch}:{name}: {first} and {second} have different actions and overlap without one inside the other (both match {args}); libseccomp's answer there depends on its rule order and version, so no filter can be held to one"
    )]
    Ambiguous { arch: String, name: String, first: String, second: String, args: String },
    /// A syscall has more rules than we examine pairwise.
    #[error("{arch}:{name}: more than {limit} rules")]
    TooManyRules { arch: String, name: String, limit: usize },
    /// The profile turns seccomp off.
    #[error("the profile has no defaultAction and no syscalls: it disables seccomp, there is no filter")]
    Disabled,
}

impl ProfileError {
    pub(crate) fn invalid(place: impl Into<String>, why: impl Into<String>) -> ProfileError {
        ProfileError::Invalid { place: place.into(), why: why.into() }
    }

    pub(crate) fn json(e: &serde_json::Error) -> ProfileError {
        let message = e.to_string();
        // serde_json appends " at line L column C": the location is ours.
        let message = match message.rfind(" at line ") {
            Some(i) => message.get(..i).unwrap_or(&message).to_string(),
            None => message,
        };
        ProfileError::Json { line: e.line(), col: e.column(), message }
    }
}

/// Which format a JSON document is, when it is one: a seccompiler file
/// maps names to objects with `filter`; a Docker file has `archMap` or an
/// entry with `includes`, `excludes`, `name` or `comment`; an OCI object
/// has `defaultAction` or `syscalls` with `names`.
pub fn detect(doc: &serde_json::Value) -> Option<Format> {
    let obj = doc.as_object()?;
    let seccompiler = !obj.is_empty()
        && obj.values().all(|v| v.as_object().is_some_and(|f| f.contains_key("filter")))
        && !obj.contains_key("defaultAction");
    if seccompiler {
        return Some(Format::Seccompiler);
    }
    let entries = obj.get("syscalls").and_then(|s| s.as_array());
    let docker_entry = |e: &serde_json::Value| {
        e.as_object().is_some_and(|o| ["includes", "excludes", "name", "comment"].iter().any(|k| o.contains_key(*k)))
    };
    if obj.contains_key("archMap") || entries.is_some_and(|e| e.iter().any(docker_entry)) {
        return Some(Format::Docker);
    }
    (obj.contains_key("defaultAction") || entries.is_some()).then_some(Format::Oci)
}

/// The meaning of the profile `text` (JSON), in `format` or the one
/// [`detect`] finds, on the machine `sel` describes.
pub fn read(text: &str, format: Option<Format>, sel: &Selection) -> Result<Meaning, ProfileError> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| ProfileError::json(&e))?;
    let format = match format {
        Some(f) => f,
        None => detect(&doc).ok_or_else(|| ProfileError::Unknown {
            why: "no defaultAction, syscalls or archMap (OCI, Docker), and not a map of filters (seccompiler)".into(),
        })?,
    };
    match format {
        Format::Oci => {
            // From the text again, so that errors have their line:col.
            let p: crate::oci::Profile = serde_json::from_str(text).map_err(|e| ProfileError::json(&e))?;
            runc::meaning(&p, sel, Format::Oci)
        }
        Format::Docker => {
            let p: docker::DockerProfile = serde_json::from_str(text).map_err(|e| ProfileError::json(&e))?;
            let (oci, kept) = docker::select(&p, sel)?;
            runc::meaning_with_entries(&oci, sel, Format::Docker, Some(&kept))
        }
        Format::Seccompiler => seccompiler::meaning(text, sel),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests;
