//! Profiles in: `policy::compile` on every testdata profile (OCI, Docker
//! with several selections, seccompiler's per-thread filters on each of its
//! targets), held to the profile's meaning, to the distribution's
//! libseccomp, to seccompiler's own code generation and to the running
//! kernel:
//!
//! - every output validates, fits 4096 instructions, is proved equal to
//!   the reference program (again, outside `compile`), answers as
//!   `Meaning::eval` on inputs built from the profile's constants, and
//!   keeps every always-allowed (arch, nr) in the kernel's cache;
//! - libseccomp (testdata/profiles/compile.py, runc's rule order, linear
//!   and binary-tree layouts) builds the same filter except on the
//!   syscalls that libseccomp version does not know, and `equiv` lists
//!   exactly those; its cached ALLOWs are all ours;
//! - `decompile(compile(P))` means what P means;
//! - seccompiler's filters, as its backend builds them (a model written
//!   from its docs and code), equal ours;
//! - the running kernel accepts every output and gives the expected
//!   result on docker_like's kernel-checked vectors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use cbpf::opcode::{ALU_AND_K, JMP_JA, JMP_JEQ_K, JMP_JGE_K, JMP_JGT_K, LD_W_ABS, RET_K};
use cbpf::{Insn, Interp, Mode, Program, SeccompData};
use equiv::{Options, Side, Verdict};
use policy::profile::{Format, Meaning, Selection};
use seccomp::Arch;
use test_data::require::{self, Need};

mod common;
use common::{libseccomp, profiles_dir, PYTHON};

/// One testdata profile read for one machine.
struct Case {
    name: String,
    file: &'static str,
    selection: Selection,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let case = |name: &str, file, selection| Case { name: name.into(), file, selection };
    out.push(case("docker_like", "docker_like.json", Selection::native(Arch::X86_64)));
    out.push(case("docker_style", "docker_style.json", Selection::native(Arch::X86_64)));
    let mut admin = Selection::native(Arch::X86_64);
    admin.caps.extend(["CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_PTRACE"].map(String::from));
    out.push(case("docker_style_admin", "docker_style.json", admin));
    let mut old = Selection::native(Arch::X86_64);
    old.kernel = (4, 4);
    out.push(case("docker_style_4.4", "docker_style.json", old));
    out.push(case("docker_style_aarch64", "docker_style.json", Selection::native(Arch::Aarch64)));
    out.push(case("docker_style_riscv64", "docker_style.json", Selection::native(Arch::Riscv64)));
    for thread in ["vmm", "api", "vcpu"] {
        for arch in policy::profile::seccompiler::TARGETS {
            let mut s = Selection::native(arch);
            s.thread = Some(thread.into());
            out.push(case(&format!("seccompiler_{thread}_{arch}"), "seccompiler_vmm.json", s));
        }
    }
    out
}

fn meaning(c: &Case) -> Meaning {
    let text = std::fs::read_to_string(profiles_dir().join(c.file)).unwrap();
    policy::profile::read(&text, None, &c.selection).unwrap_or_else(|e| panic!("{}: {e}", c.name))
}

fn compiled(m: &Meaning) -> policy::compile::Compiled {
    policy::compile::compile(m, &Default::default()).unwrap()
}

/// Inputs from the profile's constants, every one ([`fuzz_replay::profiles::inputs`]).
fn inputs(m: &Meaning) -> Vec<SeccompData> {
    fuzz_replay::profiles::inputs(m, usize::MAX)
}

#[test]
fn every_testdata_profile_compiles_to_a_proved_filter() {
    let mut report = Vec::new();
    for c in cases() {
        let m = meaning(&c);
        let out = compiled(&m);
        assert!(out.program.len() <= 4096, "{}", c.name);
        let verdict = equiv::check(Side::single(&out.reference), Side::single(&out.program), &Options::default());
        assert_eq!(verdict, Ok(Verdict::Equal), "{}", c.name);
        let (ours, reference) = (Interp::new(&out.program), Interp::new(&out.reference));
        let mut checked = 0;
        for d in inputs(&m) {
            let bytes = d.in_kernel_order().to_bytes();
            let want = m.eval(&d);
            assert_eq!(ours.run_seccomp(&bytes).unwrap(), want, "{}: {d:?}", c.name);
            assert_eq!(reference.run_seccomp(&bytes).unwrap(), want, "{}: reference on {d:?}", c.name);
            checked += 1;
        }
        assert_eq!(policy::compile::cache_lost(&m, &out.program), None, "{}", c.name);
        report.push(format!("{}: {} ({checked} inputs)", c.name, out.stats));
    }
    eprintln!("{}", report.join("\n"));
}

/// `libseccomp_names.py`: per runc arch name and profile name, the number
/// libseccomp gives it there (`None`: not a syscall of that arch to it).
fn libseccomp_numbers(m: &Meaning) -> Vec<(Arch, String, Option<u32>)> {
    let mut request = serde_json::Map::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for v in m.views() {
        names.extend(v.syscalls.values().flat_map(|s| s.rules.iter().map(|r| r.origin.name.clone())));
    }
    for v in m.views() {
        let arch = policy::profile::runc::arch_name(v.arch).unwrap();
        request.insert(arch.into(), names.iter().cloned().collect::<Vec<_>>().into());
    }
    let mut child = Command::new(PYTHON)
        .arg(profiles_dir().join("libseccomp_names.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(serde_json::Value::Object(request).to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut rows = Vec::new();
    for v in m.views() {
        let arch = policy::profile::runc::arch_name(v.arch).unwrap();
        for name in &names {
            let nr = answer[arch][name].as_u64().map(|n| n as u32);
            rows.push((v.arch, name.clone(), nr));
        }
    }
    rows
}

/// The `(abi, name)` pairs where our meaning and libseccomp's filter must
/// differ: the profile's names our 6.18 table has on that ABI and
/// libseccomp does not (or numbers otherwise), where the profile gives
/// something other than the default.
fn unknown_to_libseccomp(m: &Meaning) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (arch, name, theirs) in libseccomp_numbers(m) {
        let multiplexed = policy::profile::runc::multiplexes(arch)
            && policy::profile::runc::SOCKET_CALLS
                .iter()
                .chain(&policy::profile::runc::IPC_CALLS)
                .any(|(n, _)| *n == name);
        let ours = arch.syscalls().and_then(|t| t.number(&name));
        let view = m.views().find(|v| v.arch == arch).unwrap();
        let applied = ours.is_some_and(|nr| view.syscalls.contains_key(&nr));
        if applied && !multiplexed && theirs != ours {
            out.insert(format!("{arch}:{name}"));
        }
    }
    out
}

/// compile.py on `profile` (an OCI object) into a validated program.
fn libseccomp_filter(profile: &policy::oci::Profile, dir: &Path, stem: &str, optimize: Option<u32>) -> Program {
    let json = dir.join(format!("{stem}.json"));
    std::fs::write(&json, serde_json::to_string(profile).unwrap()).unwrap();
    let out = dir.join(format!("{stem}.bpf"));
    let mut cmd = Command::new(PYTHON);
    cmd.arg(profiles_dir().join("compile.py")).arg(&json).arg(&out);
    if let Some(level) = optimize {
        cmd.args(["--optimize", &level.to_string()]);
    }
    assert!(cmd.status().unwrap().success(), "compile.py {stem}");
    cbpf::validate(&cbpf::raw::decode(&std::fs::read(&out).unwrap()).unwrap(), Mode::Seccomp).unwrap()
}

/// The OCI object runc gets for a case (a Docker file selected first).
fn oci_profile(c: &Case) -> policy::oci::Profile {
    let text = std::fs::read_to_string(profiles_dir().join(c.file)).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    match policy::profile::detect(&doc) {
        Some(Format::Docker) => {
            let p: policy::profile::docker::DockerProfile = serde_json::from_str(&text).unwrap();
            policy::profile::docker::select(&p, &c.selection).unwrap().0
        }
        _ => serde_json::from_str(&text).unwrap(),
    }
}

#[test]
fn libseccomp_builds_the_same_filter_but_for_the_syscalls_it_does_not_know() {
    if !libseccomp("libseccomp_builds_the_same_filter_but_for_the_syscalls_it_does_not_know") {
        return;
    }
    let dir = test_data::paths::scratch_dir("profiles-libseccomp").unwrap();
    let mut report = Vec::new();
    // The native arch is this host's for compile.py: x86_64 cases only.
    for c in
        cases().into_iter().filter(|c| c.file != "seccompiler_vmm.json" && c.selection.native_arch() == Arch::X86_64)
    {
        let m = meaning(&c);
        let ours = compiled(&m);
        let oci = oci_profile(&c);
        let expected = unknown_to_libseccomp(&m);
        for (layout, level) in [("linear", None), ("opt2", Some(2))] {
            let theirs = libseccomp_filter(&oci, &dir, &format!("{}_{layout}", c.name), level);
            let options = Options { all: true, ..Options::default() };
            let found: BTreeSet<String> =
                match equiv::check(Side::single(&ours.reference), Side::single(&theirs), &options).unwrap() {
                    Verdict::Equal => BTreeSet::new(),
                    Verdict::Differ(cexs) => cexs.iter().map(|x| name_of(&m, &x.data)).collect(),
                };
            assert_eq!(found, expected, "{} {layout}: the differences are the names libseccomp does not know", c.name);
            assert_eq!(optimize::cache_lost(&theirs, &ours.program), None, "{} {layout}: a cached ALLOW lost", c.name);
            report.push(format!(
                "{} libseccomp {layout}: {} insns, longest path {}; ours {} insns, longest path {}; differ on {expected:?}",
                c.name,
                theirs.len(),
                optimize::longest_path(theirs.original()),
                ours.program.len(),
                ours.stats.longest_path
            ));
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// `abi:name` of a call by the meaning's views.
fn name_of(m: &Meaning, d: &SeccompData) -> String {
    let value = m.arches.iter().find(|a| a.audit_arch == d.arch).unwrap();
    let policy::profile::PartKind::View(v) = value.part(d.nr as u32) else { panic!("{d:?}: not a view") };
    let arch = value.views[v].arch;
    format!("{arch}:{}", arch.syscalls().unwrap().name(d.nr as u32).unwrap_or("?"))
}

/// `decompile(compile(P))` means what P means: the decompiled profile,
/// read for the same machine, has a reference program `equiv` proves equal.
#[test]
fn decompiling_the_compiled_filter_gives_the_profile_back() {
    let mut checked = 0;
    for c in cases().into_iter().filter(|c| c.file != "seccompiler_vmm.json") {
        let m = meaning(&c);
        let out = compiled(&m);
        let reading = policy::read(&out.program, &mut seccomp::analysis::Budget::default()).unwrap();
        let back = policy::decompile(&reading).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let again = policy::profile::runc::meaning(&back, &c.selection, Format::Oci).unwrap();
        let reference = policy::compile::reference_program(&again).unwrap();
        let verdict = equiv::check(Side::single(&out.reference), Side::single(&reference), &Options::default());
        assert_eq!(verdict, Ok(Verdict::Equal), "{}", c.name);
        checked += 1;
    }
    assert!(checked >= 5);
}

/// seccompiler's code generation for one filter, as its backend builds it
/// (src/backend/{filter,rule,condition}.rs, docs/json_format.md): the
/// arch check (`ld [4]; jeq TARGET; ret KILL_PROCESS`), `ld [0]`, per
/// syscall by number `jeq #nr`, its rules each a run of conditions that
/// fall to the next rule when one fails and end in `ret match`, then
/// `ret mismatch`; a dword condition loads the argument's low word
/// (`offset`), a qword also its high word (`offset + 4`) and tests it first;
/// a masked_eq ANDs the mask into each word. Written here from that code,
/// with long jumps as `ja` (seccompiler splits them otherwise).
fn seccompiler_model(file: &str, thread: &str, arch: Arch) -> Vec<Insn> {
    let doc: serde_json::Value = serde_json::from_str(file).unwrap();
    let f = &doc[thread];
    let action = |a: &serde_json::Value| -> u32 {
        match a {
            serde_json::Value::String(s) => match s.as_str() {
                "allow" => 0x7fff_0000,
                "kill_thread" => 0,
                "kill_process" => 0x8000_0000,
                "log" => 0x7ffc_0000,
                "trap" => 0x0003_0000,
                other => panic!("{other}"),
            },
            serde_json::Value::Object(o) => match o.iter().next().unwrap() {
                (k, v) if k == "errno" => 0x0005_0000 | (v.as_u64().unwrap() as u32 & 0xffff),
                (k, v) if k == "trace" => 0x7ff0_0000 | (v.as_u64().unwrap() as u32 & 0xffff),
                other => panic!("{other:?}"),
            },
            _ => panic!(),
        }
    };
    let mismatch = action(f.get("mismatch_action").or(f.get("default_action")).unwrap());
    let matched = action(f.get("match_action").or(f.get("filter_action")).unwrap());
    // BTreeMap<nr, Vec<rule>>: a rule only for entries with args.
    let table = arch.syscalls().unwrap();
    let mut rules: std::collections::BTreeMap<u32, Vec<Vec<serde_json::Value>>> = Default::default();
    for r in f["filter"].as_array().unwrap() {
        let nr = table.number(r["syscall"].as_str().unwrap()).unwrap();
        let slot = rules.entry(nr).or_default();
        if let Some(args) = r.get("args") {
            slot.push(args.as_array().unwrap().clone());
        }
    }
    // Assembled back to front so every distance is known.
    // `top`: the index in `rev` of the instruction pushed last, the one
    // that follows whatever is pushed next.
    let mut rev: Vec<Insn> = Vec::new();
    let top = |rev: &Vec<Insn>| rev.len() - 1;
    rev.push(Insn::stmt(RET_K, mismatch));
    let mut next_syscall = top(&rev);
    for (nr, chain) in rules.iter().rev() {
        // After the chain: ret mismatch (seccompiler's per-syscall end).
        rev.push(Insn::stmt(RET_K, mismatch));
        let fail_all = top(&rev);
        if chain.is_empty() {
            rev.push(Insn::stmt(RET_K, matched));
        } else {
            let mut next_rule = fail_all;
            for conds in chain.iter().rev() {
                rev.push(Insn::stmt(RET_K, matched));
                for c in conds.iter().rev() {
                    let index = c["index"].as_u64().unwrap() as u32;
                    let val = c["val"].as_u64().unwrap();
                    let qword = c["type"] == "qword";
                    let (lo_off, hi_off) = (16 + 8 * index, 16 + 8 * index + 4);
                    let jump_to = |rev: &Vec<Insn>, target: usize| u8::try_from(rev.len() - target - 1).unwrap();
                    let pass = top(&rev);
                    // Emitted reversed: the low word's test, then the high word's.
                    let (op, mask) = match &c["op"] {
                        serde_json::Value::String(s) => (s.clone(), None),
                        serde_json::Value::Object(o) => ("masked_eq".into(), Some(o["masked_eq"].as_u64().unwrap())),
                        _ => panic!(),
                    };
                    let val = mask.map_or(val, |m| val & m);
                    let (vh, vl) = ((val >> 32) as u32, val as u32);
                    let lo_test = match op.as_str() {
                        "eq" | "masked_eq" => Insn::jump(JMP_JEQ_K, vl, 0, jump_to(&rev, next_rule)),
                        "ne" => Insn::jump(JMP_JEQ_K, vl, jump_to(&rev, next_rule), 0),
                        "gt" => Insn::jump(JMP_JGT_K, vl, 0, jump_to(&rev, next_rule)),
                        "ge" => Insn::jump(JMP_JGE_K, vl, 0, jump_to(&rev, next_rule)),
                        "lt" => Insn::jump(JMP_JGE_K, vl, jump_to(&rev, next_rule), 0),
                        "le" => Insn::jump(JMP_JGT_K, vl, jump_to(&rev, next_rule), 0),
                        other => panic!("{other}"),
                    };
                    rev.push(lo_test);
                    if let Some(m) = mask {
                        rev.push(Insn::stmt(ALU_AND_K, m as u32));
                    }
                    rev.push(Insn::stmt(LD_W_ABS, lo_off));
                    let lo_start = top(&rev);
                    if qword {
                        let to_lo = |rev: &Vec<Insn>| u8::try_from(rev.len() - lo_start - 1).unwrap();
                        match op.as_str() {
                            "eq" | "masked_eq" => {
                                rev.push(Insn::jump(JMP_JEQ_K, vh, to_lo(&rev), jump_to(&rev, next_rule)))
                            }
                            "ne" => rev.push(Insn::jump(JMP_JEQ_K, vh, to_lo(&rev), jump_to(&rev, pass))),
                            "gt" | "ge" => {
                                rev.push(Insn::jump(JMP_JEQ_K, vh, to_lo(&rev), jump_to(&rev, next_rule)));
                                rev.push(Insn::jump(JMP_JGT_K, vh, jump_to(&rev, pass), 0));
                            }
                            _ => {
                                rev.push(Insn::jump(JMP_JEQ_K, vh, to_lo(&rev), jump_to(&rev, pass)));
                                rev.push(Insn::jump(JMP_JGT_K, vh, jump_to(&rev, next_rule), 0));
                            }
                        }
                        if let Some(m) = mask {
                            rev.push(Insn::stmt(ALU_AND_K, (m >> 32) as u32));
                        }
                        rev.push(Insn::stmt(LD_W_ABS, hi_off));
                    }
                }
                next_rule = top(&rev);
            }
        }
        // jeq #nr, 0, 1; ja NEXT_SYSCALL
        let rules_start = top(&rev);
        rev.push(Insn::stmt(JMP_JA, (rev.len() - next_syscall - 1) as u32));
        rev.push(Insn::jump(JMP_JEQ_K, *nr, u8::try_from(rev.len() - rules_start - 1).unwrap(), 0));
        next_syscall = top(&rev);
    }
    rev.push(Insn::stmt(LD_W_ABS, 0));
    rev.push(Insn::stmt(RET_K, 0x8000_0000));
    rev.push(Insn::jump(JMP_JEQ_K, arch.audit_arch(), 1, 0));
    rev.push(Insn::stmt(LD_W_ABS, 4));
    rev.reverse();
    rev
}

#[test]
fn seccompiler_filters_equal_what_seccompiler_builds() {
    let text = std::fs::read_to_string(profiles_dir().join("seccompiler_vmm.json")).unwrap();
    let mut checked = 0;
    for c in cases().into_iter().filter(|c| c.file == "seccompiler_vmm.json") {
        let m = meaning(&c);
        let ours = compiled(&m);
        let model = seccompiler_model(&text, c.selection.thread.as_deref().unwrap(), c.selection.native_arch());
        let model = cbpf::validate(&model, Mode::Seccomp).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let verdict = equiv::check(Side::single(&ours.program), Side::single(&model), &Options::default());
        assert_eq!(verdict, Ok(Verdict::Equal), "{}", c.name);
        checked += 1;
    }
    assert_eq!(checked, 9);
}

/// The running kernel takes every compiled filter, and gives docker_like's
/// kernel-checked vectors their actions on ours.
#[test]
fn the_kernel_runs_the_compiled_filters() {
    if require::have("the_kernel_runs_the_compiled_filters", Need::Kernel, kernel::seccomp_available()).is_none() {
        return;
    }
    for c in cases() {
        let out = compiled(&meaning(&c));
        assert_eq!(
            kernel::seccomp_attach(out.program.original()).unwrap(),
            kernel::socket::Attach::Accepted,
            "{}",
            c.name
        );
    }
    let m = meaning(&cases()[0]);
    let out = compiled(&m);
    let text = std::fs::read_to_string(profiles_dir().join("docker_like.vectors.jsonl")).unwrap();
    let vectors = engine::vectors::parse(&text).unwrap();
    let prepared = engine::Prepared::new(out.program.clone()).unwrap();
    let mut kernel = engine::SeccompEngine::new(engine::EngineKind::Kernel, &prepared).unwrap();
    let data: Vec<SeccompData> = vectors.iter().map(|v| v.data).collect();
    let mut runs = 0;
    for (v, got) in vectors.iter().zip(kernel.eval_batch(&data).unwrap()) {
        if let engine::Outcome::Action(a) = got {
            assert_eq!(Some(a), v.action, "{:?}", v.data);
            assert_eq!(a, m.eval(&v.data));
            runs += 1;
        }
    }
    assert!(runs > 1000, "{runs}");
}
