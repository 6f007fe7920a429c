//! The `compile` target: seccomp profiles (OCI, Docker, seccompiler JSON)
//! through `bpfconv compile`'s pipeline, and its output back through
//! `decompile`.
//!
//! Most inputs are profiles written from the fuzzer's bytes (`Gen`):
//! names that exist on some ABIs and not others (the socket calls
//! `socketcall` multiplexes on i386, `arch_prctl`), one that exists on
//! none, every comparison and both widths, constants at the word
//! boundaries, errnos at libseccomp's limit, Docker's `includes` and
//! `excludes`, seccompiler's unconditional entries beside conditional ones,
//! and allow-lists of up to 300 values of one argument.
//! One input in eight is read as JSON text as it is, for the readers
//! alone.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use arbitrary::{Result as AResult, Unstructured};
use cbpf::{Interp, Mode, SeccompData};
use policy::compile::{CompileError, Compiled};
use policy::profile::{Format, Meaning, Selection};
use seccomp::Arch;

use crate::targets::{fail, EQUIV_LIMITS};

/// At most this many argument values and numbers per arch value in the
/// inputs a compiled filter is run on ([`inputs`]: the fuzzer's time goes
/// to profiles, not to runs).
const MAX_INPUT_VALUES: usize = 48;

/// Syscall names: the first 14 on every ABI the generator selects (on
/// i386, `socket` and `setsockopt` also through `socketcall`, as runc's
/// libseccomp adds them), then x86_64's `arch_prctl`, i386's `_llseek`,
/// `socketcall` and `ipc`, `msgget` (through `ipc` on i386), and a name no
/// ABI has.
const NAMES: [&str; 20] = [
    "read",
    "write",
    "openat",
    "close",
    "mmap",
    "mprotect",
    "ioctl",
    "socket",
    "setsockopt",
    "kill",
    "personality",
    "clone",
    "futex",
    "prctl",
    "arch_prctl",
    "_llseek",
    "socketcall",
    "ipc",
    "msgget",
    "no_such_syscall",
];

/// Constants at the edges the generators' shapes turn on: the word halves,
/// the sign bits, libseccomp's sign-extended 32-bit values.
const VALUES: [u64; 14] = [
    0,
    1,
    2,
    4,
    0x7f,
    0x8000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    0x1_0000_0001,
    0xffff_ffff_8000_0000,
    0xffff_ffff_ffff_fffe,
    u64::MAX,
];

/// errnos: common ones, and each side of libseccomp's 4095 and of the
/// 16-bit data field.
const ERRNOS: [u32; 8] = [0, 1, 5, 38, 4094, 4095, 65535, 65537];

const OCI_ACTIONS: [&str; 8] = [
    "SCMP_ACT_ALLOW",
    "SCMP_ACT_ERRNO",
    "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_PROCESS",
    "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_TRAP",
    "SCMP_ACT_LOG",
    "SCMP_ACT_TRACE",
];

const OCI_OPS: [&str; 7] = ["EQ", "NE", "LT", "LE", "GT", "GE", "MASKED_EQ"];

const ARCH_NAMES: [&str; 5] =
    ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"];

/// Any bytes: a profile (`Gen`) or, one input in eight, the bytes as
/// text. Reading it never panics; what reads compiles or is refused for
/// its size or an undecided proof; a compiled filter validates,
/// fits the kernel, returns the profile's value ([`Meaning::eval`]) and
/// the reference program's on inputs built from the profile's numbers and
/// constants, and keeps every always-allowed number in the kernel's cache;
/// and where `decompile` gives a profile for it, that profile, written as
/// JSON and read again for the same machine, means the same on those
/// inputs.
pub fn compile(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(raw) = u.ratio(1u8, 8) else { return };
    if raw {
        let text = String::from_utf8_lossy(u.take_rest());
        let _ = policy::profile::read(&text, None, &Selection::native(Arch::X86_64));
        return;
    }
    let Ok((text, sel)) = Gen::profile(&mut u) else { return };
    let Ok(meaning) = policy::profile::read(&text, None, &sel) else { return };
    let options = policy::compile::Options { equiv: ::equiv::Options { limits: EQUIV_LIMITS, ..Default::default() } };
    let out = match policy::compile::compile(&meaning, &options) {
        Ok(out) => out,
        Err(CompileError::TooLong { .. } | CompileError::Reference(_)) => return,
        Err(CompileError::Check(optimize::CheckError::Undecided(_))) => return,
        Err(e) => fail(format_args!("compile refused: {e}\nprofile: {text}")),
    };
    check_compiled(&text, &sel, &meaning, &out);
}

/// The checks of [`compile`] on one compiled profile.
fn check_compiled(text: &str, sel: &Selection, meaning: &Meaning, out: &Compiled) {
    let fail_on = |what: std::fmt::Arguments<'_>| -> ! { fail(format_args!("{what}\nprofile: {text}")) };
    if let Err(e) = cbpf::validate(out.program.original(), Mode::Seccomp) {
        fail_on(format_args!("the filter does not validate again: {e}"));
    }
    if out.program.len() > cbpf::opcode::BPF_MAXINSNS {
        fail_on(format_args!("the filter has {} instructions", out.program.len()));
    }
    if let Some((arch, nr)) = policy::compile::cache_lost(meaning, &out.program) {
        fail_on(format_args!("nr {nr} on arch {arch:#x} is always allowed but not in the kernel's cache"));
    }
    let (ours, reference) = (Interp::new(&out.program), Interp::new(&out.reference));
    let inputs = inputs(meaning, MAX_INPUT_VALUES);
    for d in &inputs {
        let bytes = d.in_kernel_order().to_bytes();
        let want = meaning.eval(d);
        for (name, interp) in [("the filter", &ours), ("the reference program", &reference)] {
            match interp.run_seccomp(&bytes) {
                Ok(got) if got == want => {}
                got => fail_on(format_args!("on {d:?} {name} returns {got:?}, the profile {want:#x}")),
            }
        }
    }
    // decompile: a profile only where one means the filter exactly, on a
    // machine whose native arch is its first (FORMATS-EXTENSIONS: runc adds
    // the native arch to every filter). That is the machine the profile
    // came from, unless the filter's native view answers as an arch it
    // does not check (everything killed) and so is not a view of its own.
    let mut budget = seccomp::analysis::Budget::default();
    let Ok(reading) = policy::read(&out.program, &mut budget) else { return };
    let Ok(back) = policy::decompile(&reading) else { return };
    let json = serde_json::to_string(&back).unwrap_or_else(|e| fail_on(format_args!("decompiled: {e}")));
    let machine = Selection { arches: policy::profile::runc::first_arch(&back).into_iter().collect(), ..sel.clone() };
    let again = match policy::profile::read(&json, Some(Format::Oci), &machine) {
        Ok(m) => m,
        Err(e) => fail_on(format_args!("the decompiled profile does not read: {e}\ndecompiled: {json}")),
    };
    for d in &inputs {
        let (want, got) = (meaning.eval(d), again.eval(d));
        if want != got {
            fail_on(format_args!(
                "on {d:?} the decompiled profile gives {got:#x}, the profile {want:#x}\ndecompiled: {json}"
            ));
        }
    }
}

/// Inputs from a meaning's numbers and constants: every number its views
/// name and their neighbours, each argument at the constants compared and
/// next to them, on every arch value and one the profile does not name;
/// at most `cap` numbers and `cap` argument values per arch value (the
/// smallest).
pub fn inputs(m: &Meaning, cap: usize) -> Vec<SeccompData> {
    let mut values: BTreeSet<u64> = [0, 1, u64::from(u32::MAX), 1 << 32, u64::MAX].into();
    let mut nrs: BTreeSet<u32> = [0, 1, 999, 0x4000_0000, u32::MAX].into();
    for v in m.views() {
        for (&nr, s) in &v.syscalls {
            nrs.extend([nr, nr.wrapping_add(1), nr.wrapping_sub(1)]);
            for c in s.rules.iter().flat_map(|r| &r.conds) {
                for k in [c.cmp.value, c.cmp.value_two, c.cmp.value & c.cmp.value_two] {
                    values.extend([k, k.wrapping_add(1), k.wrapping_sub(1), k | 1 << 40, k & 0xffff_ffff]);
                }
            }
        }
    }
    let values: Vec<u64> = values.into_iter().take(cap).collect();
    let mut arches: Vec<u32> = m.arches.iter().map(|a| a.audit_arch).collect();
    arches.push(0x1234_5678);
    let mut out = Vec::new();
    for &arch in &arches {
        for &nr in nrs.iter().take(cap) {
            let mut d = SeccompData::new(arch, nr as i32);
            out.push(d);
            for (i, &v) in values.iter().enumerate() {
                let other = values.get((i * 7) % values.len()).copied().unwrap_or(0);
                for (j, value) in [(i % 6, v), ((i + 1) % 6, other)] {
                    if let Some(arg) = d.args.get_mut(j) {
                        *arg = value;
                    }
                }
                out.push(d);
            }
        }
    }
    out
}

/// Writes a profile from the fuzzer's bytes.
struct Gen<'a, 'b> {
    u: &'a mut Unstructured<'b>,
}

impl Gen<'_, '_> {
    /// A profile's JSON text and the machine it is read for.
    fn profile(u: &mut Unstructured<'_>) -> AResult<(String, Selection)> {
        let mut g = Gen { u };
        let native = *g.u.choose(&[Arch::X86_64, Arch::X86_64, Arch::I386, Arch::Aarch64])?;
        let mut sel = Selection::native(native);
        let text = match g.u.int_in_range(0u8..=3)? {
            0 | 1 => g.oci(false)?,
            2 => {
                sel.caps.retain(|_| g.u.ratio(3u8, 4).unwrap_or(true));
                if g.u.ratio(1u8, 4)? {
                    sel.caps.push("CAP_SYS_ADMIN".into());
                }
                sel.kernel = *g.u.choose(&[(6, 18), (4, 14), (7, 1)])?;
                g.oci(true)?
            }
            _ => {
                // seccompiler's targets (not i386).
                sel = Selection::native(*g.u.choose(&[Arch::X86_64, Arch::Aarch64])?);
                sel.thread = Some("main".into());
                g.seccompiler()?
            }
        };
        Ok((text, sel))
    }

    fn value(&mut self) -> AResult<u64> {
        if self.u.ratio(1u8, 5)? {
            self.u.arbitrary()
        } else {
            self.u.choose(&VALUES).copied()
        }
    }

    fn name(&mut self) -> AResult<&'static str> {
        self.u.choose(&NAMES).copied()
    }

    /// `"action": ...` with an `errnoRet` sometimes; `SCMP_ACT_NOTIFY`
    /// (which runc refuses as the default, and for `write`) one time in 64.
    fn oci_action(&mut self, key: &str, errno_key: &str) -> AResult<String> {
        let notify = self.u.ratio(1u8, 64)?;
        let action = if notify { "SCMP_ACT_NOTIFY" } else { self.u.choose(&OCI_ACTIONS)? };
        let mut s = format!(r#""{key}": "{action}""#);
        if self.u.ratio(1u8, 3)? {
            write!(s, r#", "{errno_key}": {}"#, self.u.choose(&ERRNOS)?).ok();
        }
        Ok(s)
    }

    /// An OCI object, or with `docker` a Docker profile file (`archMap`,
    /// `includes`/`excludes`, `name`).
    fn oci(&mut self, docker: bool) -> AResult<String> {
        let mut s = String::from("{");
        s += &self.oci_action("defaultAction", "defaultErrnoRet")?;
        let arches: Vec<&str> = ARCH_NAMES.iter().copied().filter(|_| self.u.ratio(1u8, 3).unwrap_or(false)).collect();
        if docker && self.u.ratio(1u8, 2)? {
            s += r#", "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]}, {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]}]"#;
        } else {
            write!(s, r#", "architectures": {arches:?}"#).ok();
        }
        s += r#", "syscalls": ["#;
        let entries = self.u.int_in_range(0u8..=8)?;
        for e in 0..entries {
            if e > 0 {
                s += ", ";
            }
            s += "{";
            let names: Vec<&str> = (0..self.u.int_in_range(1u8..=3)?).map(|_| self.name()).collect::<AResult<_>>()?;
            if docker && self.u.ratio(1u8, 4)? {
                write!(s, r#""name": "{}", "#, names.first().copied().unwrap_or("read")).ok();
            } else {
                write!(s, r#""names": {names:?}, "#).ok();
            }
            s += &self.oci_action("action", "errnoRet")?;
            s += r#", "args": ["#;
            for a in 0..self.u.int_in_range(0u8..=3)? {
                if a > 0 {
                    s += ", ";
                }
                let index = if self.u.ratio(1u8, 128)? { 6 } else { self.u.int_in_range(0u8..=5)? };
                let (value, two) = (self.value()?, self.value()?);
                let op = self.u.choose(&OCI_OPS)?;
                write!(s, r#"{{"index": {index}, "value": {value}, "valueTwo": {two}, "op": "SCMP_CMP_{op}"}}"#).ok();
            }
            s += "]";
            if docker {
                for key in ["includes", "excludes"] {
                    if self.u.ratio(1u8, 4)? {
                        let cap = self.u.choose(&["CAP_SYS_ADMIN", "CAP_KILL", "CAP_BPF"])?;
                        let arch = self.u.choose(&["amd64", "arm64", "x86"])?;
                        let kernel = self.u.choose(&["4.8", "5.6", "7.0"])?;
                        match self.u.int_in_range(0u8..=2)? {
                            0 => write!(s, r#", "{key}": {{"caps": ["{cap}"]}}"#),
                            1 => write!(s, r#", "{key}": {{"arches": ["{arch}"]}}"#),
                            _ => write!(s, r#", "{key}": {{"minKernel": "{kernel}"}}"#),
                        }
                        .ok();
                    }
                }
            }
            s += "}";
        }
        if self.u.ratio(1u8, 4)? {
            s += &self.value_list(entries > 0)?;
        }
        s += "]}";
        Ok(s)
    }

    /// An allow-list (libseccomp's `ioctl` requests): one syscall, one
    /// action and one argument, an entry of one `SCMP_CMP_EQ` a value, up
    /// to 300 values (past one 250-value run of the reference's list) on
    /// both halves of the word; `comma` when entries came before.
    fn value_list(&mut self, comma: bool) -> AResult<String> {
        let name = self.name()?;
        let action = self.oci_action("action", "errnoRet")?;
        let index = self.u.int_in_range(0u8..=5)?;
        let mut s = String::new();
        for i in 0..self.u.int_in_range(2u16..=300)? {
            if comma || i > 0 {
                s += ", ";
            }
            let value = self.value()?.wrapping_add(u64::from(i) * 7);
            write!(s, r#"{{"names": ["{name}"], {action}, "args": [{{"index": {index}, "value": {value}, "op": "SCMP_CMP_EQ"}}]}}"#).ok();
        }
        Ok(s)
    }

    /// A seccompiler action.
    fn seccompiler_action(&mut self) -> AResult<String> {
        let data = self.u.choose(&ERRNOS)?;
        Ok(match self.u.int_in_range(0u8..=7)? {
            0 => r#""allow""#.into(),
            1 => format!(r#"{{"errno": {data}}}"#),
            2 => r#""kill_thread""#.into(),
            3 => r#""kill_process""#.into(),
            4 => r#""log""#.into(),
            5 => format!(r#"{{"trace": {data}}}"#),
            6 => r#""trap""#.into(),
            _ => r#""user_notif""#.into(),
        })
    }

    /// A seccompiler file with one filter, `main`.
    fn seccompiler(&mut self) -> AResult<String> {
        let (mismatch, matched) = (self.seccompiler_action()?, self.seccompiler_action()?);
        let mut s = format!(r#"{{"main": {{"mismatch_action": {mismatch}, "match_action": {matched}, "filter": ["#);
        for e in 0..self.u.int_in_range(0u8..=8)? {
            if e > 0 {
                s += ", ";
            }
            // Names on both of its targets, and one time in 16 any.
            let name = if self.u.ratio(1u8, 16)? { self.name()? } else { self.u.choose(&NAMES[..14])? };
            write!(s, r#"{{"syscall": "{name}""#).ok();
            if self.u.ratio(2u8, 3)? {
                s += r#", "args": ["#;
                for a in 0..self.u.int_in_range(1u8..=3)? {
                    if a > 0 {
                        s += ", ";
                    }
                    let index = self.u.int_in_range(0u8..=5)?;
                    let width = self.u.choose(&["dword", "qword"])?;
                    let val = self.value()?;
                    let op = match self.u.int_in_range(0u8..=6)? {
                        6 => format!(r#"{{"masked_eq": {}}}"#, self.value()?),
                        i => format!(
                            r#""{}""#,
                            ["eq", "ne", "lt", "le", "gt", "ge"].get(usize::from(i)).unwrap_or(&"eq")
                        ),
                    };
                    write!(s, r#"{{"index": {index}, "type": "{width}", "op": {op}, "val": {val}}}"#).ok();
                }
                s += "]";
            }
            s += "}";
        }
        s += "]}}";
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds made from testdata's profile files start with a 0 byte:
    /// that byte is what sends an input down the raw-text path.
    #[test]
    fn a_leading_zero_byte_reads_the_rest_as_text() {
        assert_eq!(Unstructured::new(&[0]).ratio(1u8, 8), Ok(true));
        assert_eq!(Unstructured::new(&[1]).ratio(1u8, 8), Ok(false));
    }

    /// The generator is not vacuous: most byte strings give a profile that
    /// reads and compiles, in each of the three formats.
    #[test]
    fn generated_profiles_read_and_compile() {
        let mut rng = test_kit::SplitMix64::new(0x2545_f491_4f6c_dd1d);
        let (mut read, mut compiled, mut formats) = (0, 0, BTreeSet::new());
        for _ in 0..300 {
            let bytes: Vec<u8> = (0..256).map(|_| rng.next_u64() as u8).collect();
            let mut u = Unstructured::new(&bytes);
            let Ok((text, sel)) = Gen::profile(&mut u) else { continue };
            let Ok(m) = policy::profile::read(&text, None, &sel) else { continue };
            read += 1;
            formats.insert(m.format.name());
            compiled += usize::from(policy::compile::compile(&m, &Default::default()).is_ok());
        }
        assert!(read >= 150 && compiled * 10 >= read * 9, "{read} read, {compiled} compiled");
        assert_eq!(formats.len(), 3, "{formats:?}");
    }
}
