//! The profile's meaning against the distribution's libseccomp: seeded
//! generated OCI profiles (arches, names libseccomp knows with our numbers,
//! every comparison on both 32-bit halves and masks, repeated arguments,
//! every action), compiled by libseccomp in runc's rule order
//! (testdata/profiles/compile.py, one interpreter per batch), and `equiv`
//! between each profile's reference program and libseccomp's filter: proved
//! equal, or a counterexample that the classic interpreter confirms on both
//! and `Meaning::eval` gives for the profile.
//!
//! Profiles whose rules of one syscall overlap with different actions are
//! left out of that suite (an incomparable overlap has no meaning; a nested
//! one is where libseccomp follows its tree order instead of the narrower
//! rule). The nested shapes are measured on their own
//! (`nested_overlaps_against_libseccomp`, ignored: run with `--ignored`
//! for the report), as is a larger run of the main suite
//! (`thousands_of_profiles_against_libseccomp`, `BPFCONV_DIFF_PROFILES`
//! profiles, 3000 by default, from `BPFCONV_DIFF_SEED`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cbpf::{Interp, Mode, Program};
use equiv::{Options, Side, Verdict};
use policy::profile::{Format, Meaning, Selection};
use seccomp::Arch;
use serde_json::{json, Value};
use test_data::require::{self, Need};
use test_data::rng::Rng;

mod common;
use common::{libseccomp, profiles_dir, PYTHON};

/// The arches a profile may list (x86_64 is native: compile.py's filter
/// starts with it, as runc's does).
const EXTRA_ARCHES: [(&str, Arch); 4] = [
    ("SCMP_ARCH_X86", Arch::I386),
    ("SCMP_ARCH_X32", Arch::X32),
    ("SCMP_ARCH_AARCH64", Arch::Aarch64),
    ("SCMP_ARCH_ARM", Arch::Arm),
];

/// Syscalls the generator draws from (multiplexed socket and IPC calls
/// included).
const NAMES: [&str; 48] = [
    "read",
    "write",
    "open",
    "close",
    "mmap",
    "mprotect",
    "munmap",
    "ioctl",
    "fcntl",
    "futex",
    "prctl",
    "personality",
    "kill",
    "tgkill",
    "clone",
    "clone3",
    "execve",
    "getpid",
    "openat",
    "statx",
    "madvise",
    "mbind",
    "ptrace",
    "socket",
    "connect",
    "bind",
    "sendto",
    "recvfrom",
    "setsockopt",
    "accept4",
    "sendmsg",
    "semop",
    "semget",
    "shmat",
    "msgsnd",
    "socketcall",
    "ipc",
    "lseek",
    "pread64",
    "dup3",
    "pipe2",
    "getrandom",
    "set_mempolicy",
    "move_pages",
    "chroot",
    "reboot",
    "arch_prctl",
    "memfd_create",
];

/// Per ABI, the names libseccomp gives our numbers (libseccomp_names.py);
/// multiplexed calls where it knows them at all.
fn usable_names() -> std::collections::HashMap<Arch, BTreeSet<&'static str>> {
    let mut request = serde_json::Map::new();
    let all = [("SCMP_ARCH_X86_64", Arch::X86_64)].into_iter().chain(EXTRA_ARCHES);
    for (name, _) in all.clone() {
        request.insert(name.into(), NAMES.to_vec().into());
    }
    let mut child = Command::new(PYTHON)
        .arg(profiles_dir().join("libseccomp_names.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(Value::Object(request).to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut usable = std::collections::HashMap::new();
    for (scmp, arch) in all {
        let mut names = BTreeSet::new();
        for name in NAMES {
            let theirs = answer[scmp][name].as_u64().map(|n| n as u32);
            let ours = arch.syscalls().unwrap().number(name);
            let muxed = policy::profile::runc::multiplexes(arch)
                && policy::profile::runc::SOCKET_CALLS
                    .iter()
                    .chain(&policy::profile::runc::IPC_CALLS)
                    .any(|(n, _)| *n == name);
            if (muxed && theirs.is_some()) || theirs == ours {
                names.insert(name);
            }
        }
        usable.insert(arch, names);
    }
    usable
}

/// Constants that put values on both sides of each 32-bit half.
const VALUES: [u64; 14] = [
    0,
    1,
    2,
    5,
    0x28,
    0x7fff_ffff,
    0xffff_ffff,
    0x1_0000_0000,
    0x1_0000_0005,
    0x8000_0000_0000_0000,
    0xffff_ffff_0000_0000,
    u64::MAX,
    0x7e02_0000,
    0x0000_0002_0000_0001,
];
const OPS: [&str; 7] =
    ["SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"];

/// An action and its errnoRet (sometimes on an action that ignores it).
fn action(rng: &mut Rng, default: bool) -> (String, Option<u32>) {
    let names = [
        "SCMP_ACT_ALLOW",
        "SCMP_ACT_ERRNO",
        "SCMP_ACT_KILL",
        "SCMP_ACT_KILL_THREAD",
        "SCMP_ACT_KILL_PROCESS",
        "SCMP_ACT_TRAP",
        "SCMP_ACT_TRACE",
        "SCMP_ACT_LOG",
        "SCMP_ACT_NOTIFY",
    ];
    let pool = if default { &names[..8] } else { &names[..] };
    let name = rng.pick(pool).to_string();
    let errno = match name.as_str() {
        "SCMP_ACT_ERRNO" | "SCMP_ACT_TRACE" if rng.chance(70) => Some(*rng.pick(&[1u32, 5, 13, 38, 4095, 65536 + 7])),
        _ if rng.chance(5) => Some(9),
        _ => None,
    };
    (name, errno)
}

fn arg(rng: &mut Rng, index: usize) -> Value {
    let op = rng.pick(&OPS);
    let value = if rng.chance(15) { rng.next_u64() } else { *rng.pick(&VALUES) };
    let two = if rng.chance(50) { value & rng.next_u64() } else { *rng.pick(&VALUES) };
    json!({"index": index, "value": value, "valueTwo": two, "op": op})
}

/// One generated profile (OCI JSON).
fn profile(rng: &mut Rng, usable: &std::collections::HashMap<Arch, BTreeSet<&'static str>>) -> Value {
    let mut arches: Vec<&str> = Vec::new();
    let mut names: BTreeSet<&str> = usable[&Arch::X86_64].clone();
    for (scmp, arch) in EXTRA_ARCHES {
        if rng.chance(30) {
            arches.push(scmp);
            names = names.intersection(&usable[&arch]).copied().collect();
        }
    }
    let names: Vec<&str> = names.into_iter().collect();
    let (default, default_errno) = action(rng, true);
    let mut entries = Vec::new();
    for _ in 0..1 + rng.below(10) {
        let entry_names: Vec<&str> = (0..1 + rng.below(3)).map(|_| *rng.pick(&names)).collect();
        let (act, errno) = action(rng, false);
        if act == "SCMP_ACT_NOTIFY" && entry_names.contains(&"write") {
            continue;
        }
        let args: Vec<Value> = match rng.below(5) {
            0 | 1 => Vec::new(),
            2 => {
                let i = rng.below(6);
                vec![arg(rng, i)]
            }
            3 => {
                let (a, b) = (rng.below(6), rng.below(6));
                vec![arg(rng, a), arg(rng, b)]
            }
            _ => {
                let (a, b) = (rng.below(3), 3 + rng.below(3));
                vec![arg(rng, a), arg(rng, a), arg(rng, b)]
            }
        };
        let mut e = json!({"names": entry_names, "action": act, "args": args});
        if let Some(x) = errno {
            e["errnoRet"] = x.into();
        }
        entries.push(e);
    }
    let mut p = json!({"defaultAction": default, "architectures": arches, "syscalls": entries});
    if let Some(x) = default_errno {
        p["defaultErrnoRet"] = x.into();
    }
    p
}

/// Compiles every profile with libseccomp in one interpreter: per job, the
/// filter, or why libseccomp refused it.
fn compile_all(jobs: &[(Value, Option<u32>)], dir: &Path) -> Vec<Result<Program, String>> {
    let mut child = Command::new(PYTHON)
        .arg(profiles_dir().join("compile.py"))
        .arg("--many")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let outs: Vec<PathBuf> = (0..jobs.len()).map(|i| dir.join(format!("{i}.bpf"))).collect();
    let lines: Vec<String> = jobs
        .iter()
        .zip(&outs)
        .map(|((p, opt), out)| json!({"profile": p, "out": out, "optimize": opt}).to_string())
        .collect();
    // Written from a thread: the answers fill the other pipe meanwhile.
    let writer = std::thread::spawn(move || {
        for l in lines {
            writeln!(stdin, "{l}").unwrap();
        }
    });
    let reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut results = Vec::new();
    for (line, out) in reader.lines().zip(&outs) {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        results.push(match v.get("refused") {
            Some(why) => Err(why.as_str().unwrap_or_default().to_string()),
            None => {
                let insns = cbpf::raw::decode(&std::fs::read(out).unwrap()).unwrap();
                Ok(cbpf::validate(&insns, Mode::Seccomp).unwrap())
            }
        });
    }
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(results.len(), jobs.len());
    results
}

fn tempdir(tag: &str) -> PathBuf {
    test_data::paths::scratch_dir(&format!("diff-{tag}")).unwrap()
}

/// What one run found.
#[derive(Debug, Default)]
struct Tally {
    generated: usize,
    ambiguous: usize,
    nested: usize,
    refused: usize,
    refused_by_both: usize,
    equal: usize,
    undecided: usize,
    /// Differences the classic interpreter confirms on libseccomp's filter
    /// where its path compares a stale accumulator (a known class, below).
    stale: Vec<String>,
    /// Any other difference: a failure.
    differ: Vec<String>,
}

/// The pcs of `prog` where a conditional jump on A can be reached with A
/// loaded from different words (`ld [k]` with different `k`; an `and`
/// keeps the word), or holding `arch` while the constant is no arch value:
/// libseccomp 2.5.4 and 2.6.1 build such jumps when a block shared by two
/// predecessors is reloaded for the first only (`_gen_bpf_build_bpf()` in
/// src/gen_bpf.c pulls each block in once, and checks `acc_start` against
/// the jumper's `acc_end` only then).
fn mixed_accumulator_sites(prog: &Program) -> BTreeSet<usize> {
    use cbpf::Op;
    let insns = prog.original();
    let mut sources: Vec<BTreeSet<Option<u32>>> = vec![BTreeSet::new(); insns.len() + 1];
    if let Some(s) = sources.first_mut() {
        s.insert(None);
    }
    let mut mixed = BTreeSet::new();
    for (pc, insn) in insns.iter().enumerate() {
        let here = sources[pc].clone();
        if here.is_empty() {
            continue;
        }
        let mut flow = |to: usize, s: &BTreeSet<Option<u32>>| {
            if let Some(slot) = sources.get_mut(to) {
                slot.extend(s.iter().copied());
            }
        };
        match insn.op() {
            Some(Op::LdAbs { k, .. } | Op::LdxAbsSeccomp { k }) => flow(pc + 1, &[Some(k)].into()),
            Some(Op::Alu { .. }) => flow(pc + 1, &here),
            Some(Op::Ja { k }) => flow(pc + 1 + k as usize, &here),
            Some(Op::Jmp { jt, jf, k, .. }) => {
                let arch_value = Arch::from_audit_arch(k).name().is_some();
                if here.len() > 1 || (here.contains(&Some(4)) && !arch_value) {
                    mixed.insert(pc);
                }
                flow(pc + 1 + usize::from(jt), &here);
                flow(pc + 1 + usize::from(jf), &here);
            }
            Some(Op::RetK { .. } | Op::RetA) => {}
            _ => flow(pc + 1, &[None].into()),
        }
    }
    mixed
}

/// Does the run of `prog` on `d` pass a jump of `sites`?
fn passes(prog: &Program, d: &cbpf::SeccompData, sites: &BTreeSet<usize>) -> bool {
    use cbpf::Op;
    let insns = prog.original();
    let bytes = d.to_bytes();
    let word = |k: u32| {
        let k = k as usize;
        bytes.get(k..k + 4).map_or(0, |w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
    };
    let (mut pc, mut a) = (0usize, 0u32);
    while let Some(insn) = insns.get(pc) {
        match insn.op() {
            Some(Op::LdAbs { k, .. } | Op::LdxAbsSeccomp { k }) => a = word(k),
            Some(Op::Alu { op: cbpf::AluOp::And, src: cbpf::Src::K, k }) => a &= k,
            Some(Op::Ja { k }) => pc += k as usize,
            Some(Op::Jmp { op, src: cbpf::Src::K, k, jt, jf }) => {
                if sites.contains(&pc) {
                    return true;
                }
                let taken = match op {
                    cbpf::JmpOp::Jeq => a == k,
                    cbpf::JmpOp::Jgt => a > k,
                    cbpf::JmpOp::Jge => a >= k,
                    cbpf::JmpOp::Jset => a & k != 0,
                };
                pc += usize::from(if taken { jt } else { jf });
            }
            _ => return false,
        }
        pc += 1;
    }
    false
}

fn meaning_of(p: &Value) -> Result<Meaning, policy::profile::ProfileError> {
    policy::profile::read(&p.to_string(), Some(Format::Oci), &Selection::native(Arch::X86_64))
}

/// The main suite over `n` profiles from `seed`.
fn differential(n: usize, seed: u64) -> Tally {
    let usable = usable_names();
    let mut rng = Rng(seed);
    let mut t = Tally::default();
    let mut jobs = Vec::new();
    // The meaning, or (None) our refusal of what libseccomp refuses.
    let mut meanings: Vec<Option<Meaning>> = Vec::new();
    while jobs.len() < n {
        let p = profile(&mut rng, &usable);
        t.generated += 1;
        let m = match meaning_of(&p) {
            Ok(m) => m,
            Err(policy::profile::ProfileError::Ambiguous { .. }) => {
                t.ambiguous += 1;
                continue;
            }
            Err(e) if e.to_string().contains("libseccomp refuses") => {
                jobs.push((p, None));
                meanings.push(None);
                continue;
            }
            Err(e) => panic!("{e}: {p}"),
        };
        if !m.nested.is_empty() {
            t.nested += 1;
            continue;
        }
        let names: usize = p["syscalls"].as_array().unwrap().iter().map(|e| e["names"].as_array().unwrap().len()).sum();
        // runc asks for the binary tree past 32 names.
        let optimize = if names > 32 || rng.chance(50) { Some(2) } else { None };
        jobs.push((p, optimize));
        meanings.push(Some(m));
    }
    let dir = tempdir(&format!("{seed}"));
    for (((p, _), m), theirs) in jobs.iter().zip(&meanings).zip(compile_all(&jobs, &dir)) {
        let (m, theirs) = match (m, theirs) {
            (Some(m), Ok(f)) => (m, f),
            (None, Err(_)) => {
                t.refused_by_both += 1;
                continue;
            }
            (None, Ok(_)) => panic!("we refuse what libseccomp takes: {p}"),
            (Some(_), Err(why)) => {
                eprintln!("libseccomp refuses ({why}): {p}");
                t.refused += 1;
                continue;
            }
        };
        let reference = policy::compile::reference_program(m).unwrap();
        let options = Options { all: true, ..Options::default() };
        match equiv::check(Side::single(&reference), Side::single(&theirs), &options) {
            Ok(Verdict::Equal) => t.equal += 1,
            Ok(Verdict::Differ(cexs)) => {
                let sites = mixed_accumulator_sites(&theirs);
                for c in cexs {
                    // Confirmed: the meaning gives `left`, libseccomp's filter `right`.
                    let theirs_says = Interp::new(&theirs).run_seccomp(&c.data.to_bytes()).unwrap();
                    assert_eq!((m.eval(&c.data), theirs_says), (c.left, c.right), "{p}");
                    let line = format!("{p}\n  {:?}: profile {:#x}, libseccomp {:#x}", c.data, c.left, c.right);
                    if passes(&theirs, &c.data, &sites) {
                        t.stale.push(line);
                    } else {
                        t.differ.push(line);
                    }
                }
            }
            Err(_) => t.undecided += 1,
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    t
}

#[test]
fn generated_profiles_match_libseccomp() {
    if !libseccomp("generated_profiles_match_libseccomp") {
        return;
    }
    let t = differential(300, 0x5ecc_0e1f_2026);
    eprintln!(
        "generated {}, ambiguous {}, nested {}, equal {}, refused by both {}, by libseccomp alone {}, stale accumulator {}",
        t.generated, t.ambiguous, t.nested, t.equal, t.refused_by_both, t.refused, t.stale.len()
    );
    assert!(t.differ.is_empty(), "{}", t.differ.join("\n"));
    assert_eq!(t.undecided, 0);
    assert!(t.equal >= 200, "{t:?}");
}

#[test]
#[ignore = "thousands of profiles: run with --ignored for the report"]
fn thousands_of_profiles_against_libseccomp() {
    if !libseccomp("thousands_of_profiles_against_libseccomp") {
        return;
    }
    let n = std::env::var("BPFCONV_DIFF_PROFILES").ok().and_then(|s| s.parse().ok()).unwrap_or(3000);
    // BPFCONV_DIFF_SEED: other profiles than the default run's.
    let seed = std::env::var("BPFCONV_DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xd1ff_5eed);
    let t = differential(n, seed);
    eprintln!(
        "{} profiles generated: {} ambiguous, {} nested (left out); {} compiled: {} proved equal, {} refused by libseccomp and by us, {} refused by libseccomp alone, {} undecided, {} counterexamples through a stale accumulator in libseccomp's filter, {} other counterexamples",
        t.generated, t.ambiguous, t.nested, n, t.equal, t.refused_by_both, t.refused, t.undecided, t.stale.len(), t.differ.len()
    );
    let profiles: BTreeSet<&str> = t.stale.iter().filter_map(|l| l.lines().next()).collect();
    eprintln!("stale accumulator: {} profiles", profiles.len());
    // BPFCONV_DIFF_DUMP=FILE: those profiles, one JSON a line, to look at.
    if let Ok(path) = std::env::var("BPFCONV_DIFF_DUMP") {
        let text: String = profiles.iter().map(|p| format!("{p}\n")).collect();
        std::fs::write(path, text).unwrap();
    }
    assert!(t.differ.is_empty(), "{}", t.differ.join("\n"));
}

/// One comparison of argument `index` inside another: the narrower
/// entry's args (`narrow`: value and op), then the wider one's.
fn inside(index: u32, narrow: (u64, &str), wide: (u64, &str)) -> (Vec<Value>, Vec<Value>) {
    let args = |(value, op): (u64, &str)| vec![json!({"index": index, "value": value, "op": op})];
    (args(narrow), args(wide))
}

/// The nested shapes: two entries of one syscall with different actions,
/// one inside the other, each shape with seeded constants, actions and
/// either entry order; per shape, how often libseccomp's filter gives the
/// narrower rule's action everywhere (equal), differs (the counterexample
/// names where), or libseccomp refuses the rules (runc fails).
#[test]
#[ignore = "a report of libseccomp's deviations: run with --ignored"]
fn nested_overlaps_against_libseccomp() {
    if !libseccomp("nested_overlaps_against_libseccomp") {
        return;
    }
    type Shape = (&'static str, fn(&mut Rng) -> (Vec<Value>, Vec<Value>));
    let shapes: Vec<Shape> = vec![
        ("EQ inside NE", |r| {
            let (x, y) = (r.next_u64() % 16, 16 + r.next_u64() % 16);
            inside(0, (x, "SCMP_CMP_EQ"), (y, "SCMP_CMP_NE"))
        }),
        ("GT inside GT (32-bit)", |r| {
            let x = r.next_u64() % 100;
            inside(0, (x + 50, "SCMP_CMP_GT"), (x, "SCMP_CMP_GT"))
        }),
        ("GT inside GT (one high word)", |r| {
            let x = 0x1_0000_0000 + r.next_u64() % 100;
            inside(0, (x + 50, "SCMP_CMP_GT"), (x, "SCMP_CMP_GT"))
        }),
        ("LT inside LT (32-bit)", |r| {
            let x = 100 + r.next_u64() % 100;
            inside(0, (x - 50, "SCMP_CMP_LT"), (x, "SCMP_CMP_LT"))
        }),
        ("LT inside LT (one high word)", |r| {
            let x = 0x1_0000_0100 + r.next_u64() % 100;
            inside(0, (x - 50, "SCMP_CMP_LT"), (x, "SCMP_CMP_LT"))
        }),
        ("LT inside LE (one constant)", |r| {
            let x = 10 + r.next_u64() % 100;
            inside(0, (x, "SCMP_CMP_LT"), (x, "SCMP_CMP_LE"))
        }),
        ("EQ inside LT", |r| {
            let x = 100 + r.next_u64() % 100;
            inside(1, (x - 60, "SCMP_CMP_EQ"), (x, "SCMP_CMP_LT"))
        }),
        ("conditional inside unconditional", |r| {
            (vec![json!({"index": 2, "value": r.next_u64() % 64, "op": "SCMP_CMP_EQ"})], Vec::new())
        }),
        ("two conditions inside one", |r| {
            let x = r.next_u64() % 64;
            (
                vec![
                    json!({"index": 0, "value": x, "op": "SCMP_CMP_EQ"}),
                    json!({"index": 1, "value": 7, "op": "SCMP_CMP_EQ"}),
                ],
                vec![json!({"index": 0, "value": x, "op": "SCMP_CMP_EQ"})],
            )
        }),
        ("EQ inside MASKED_EQ", |r| {
            let v = (r.next_u64() % 16) << 4;
            (
                vec![json!({"index": 0, "value": v | 3, "op": "SCMP_CMP_EQ"})],
                vec![json!({"index": 0, "value": 0xf0, "valueTwo": v, "op": "SCMP_CMP_MASKED_EQ"})],
            )
        }),
    ];
    let actions = ["SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_TRAP", "SCMP_ACT_KILL_PROCESS"];
    let mut rng = Rng(0x0e57_ed00);
    let mut jobs = Vec::new();
    let mut tags = Vec::new();
    for (shape, make) in &shapes {
        for i in 0..40 {
            let (narrow, wide) = make(&mut rng);
            let (x, y) = (rng.below(4), rng.below(3));
            let (an, aw) = (actions[x], actions[(x + 1 + y) % 4]);
            let mut entries = vec![
                json!({"names": ["read"], "action": an, "args": narrow}),
                json!({"names": ["read"], "action": aw, "args": wide}),
            ];
            if i % 2 == 1 {
                entries.reverse();
            }
            let arches: Vec<&str> = if rng.chance(50) { vec!["SCMP_ARCH_X86"] } else { Vec::new() };
            let p = json!({"defaultAction": "SCMP_ACT_ERRNO", "architectures": arches, "syscalls": entries});
            let meaning = meaning_of(&p).unwrap_or_else(|e| panic!("{shape}: {e}: {p}"));
            assert_eq!(meaning.nested.len(), meaning.views().count(), "{shape}: {p}");
            jobs.push((p, if rng.chance(50) { Some(2) } else { None }));
            tags.push((*shape, i % 2 == 1, meaning));
        }
    }
    let dir = tempdir("nested");
    let mut report: BTreeMap<(&str, bool), [usize; 3]> = BTreeMap::new();
    for ((shape, reversed, meaning), theirs) in tags.into_iter().zip(compile_all(&jobs, &dir)) {
        let slot = report.entry((shape, reversed)).or_default();
        match theirs {
            Err(_) => slot[2] += 1,
            Ok(theirs) => {
                let reference = policy::compile::reference_program(&meaning).unwrap();
                match equiv::check(Side::single(&reference), Side::single(&theirs), &Options::default()).unwrap() {
                    Verdict::Equal => slot[0] += 1,
                    Verdict::Differ(_) => slot[1] += 1,
                }
            }
        }
    }
    eprintln!("shape (entry order): narrower wins everywhere / libseccomp differs / libseccomp refuses");
    for ((shape, reversed), [eq, differ, refused]) in &report {
        let order = if *reversed { "wider first" } else { "narrower first" };
        eprintln!("  {shape} ({order}): {eq} / {differ} / {refused}");
    }
}

/// The stale accumulator, shown on the running kernel: `read` allowed when
/// `args[0] < 5` or `args[0] >= 2^32`. libseccomp (2.5.4; the code is the
/// same in 2.6.1) tests the second rule's high word with the first rule's
/// low word still in A, so `read(6)` is allowed; our filter refuses it.
#[test]
fn a_stale_accumulator_lets_read_6_through_libseccomp() {
    if !libseccomp("a_stale_accumulator_lets_read_6_through_libseccomp") {
        return;
    }
    let p = json!({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
        {"names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 5, "op": "SCMP_CMP_LT"}]},
        {"names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 1u64 << 32, "op": "SCMP_CMP_GE"}]}]});
    let dir = tempdir("stale");
    let theirs = compile_all(&[(p.clone(), None)], &dir).remove(0).unwrap();
    let m = meaning_of(&p).unwrap();
    let ours = policy::compile::compile(&m, &Default::default()).unwrap().program;
    let mut d = cbpf::SeccompData::new(seccomp::arch::AUDIT_ARCH_X86_64, 0);
    d.args[0] = 6;
    assert!(passes(&theirs, &d, &mixed_accumulator_sites(&theirs)));
    assert_eq!(m.eval(&d), 0x0005_0001);
    assert_eq!(Interp::new(&ours).run_seccomp(&d.to_bytes()).unwrap(), 0x0005_0001);
    assert_eq!(Interp::new(&theirs).run_seccomp(&d.to_bytes()).unwrap(), 0x7fff_0000);
    // The running kernel runs libseccomp's filter the same way.
    let Some(()) =
        require::have("a_stale_accumulator_lets_read_6_through_libseccomp", Need::Kernel, kernel::seccomp_available())
    else {
        return;
    };
    for (filter, want) in [(&theirs, 0x7fff_0000), (&ours, 0x0005_0001)] {
        let prepared = engine::Prepared::new(filter.clone()).unwrap();
        let mut k = engine::SeccompEngine::new(engine::EngineKind::Kernel, &prepared).unwrap();
        match k.eval_batch(&[d]).unwrap().remove(0) {
            engine::Outcome::Action(a) => assert_eq!(a, want),
            engine::Outcome::NotObservable(why) => panic!("{why}"),
        }
    }
}

/// A profile allowing `ioctl` for 2,000 values of `args[1]` (an allow-list
/// of device requests), everything else EPERM: libseccomp compiles it to
/// about one instruction a request (linear and `--optimize 2`), and both
/// are proved equal to the profile's meaning, whose reference lists the
/// values as compactly (five instructions a rule would pass
/// `BPF_MAXINSNS`). Our own compile of it is a tree of at most 4,096
/// instructions and a path of at most 32, proved equal to the same
/// meaning; a request dropped from libseccomp's input is found.
#[test]
fn a_long_allow_list_profile_is_proved_against_libseccomp() {
    if !libseccomp("a_long_allow_list_profile_is_proved_against_libseccomp") {
        return;
    }
    let requests: Vec<u64> = (0..2000u64).map(|i| 0x5400 + 7 * i + i % 5).collect();
    let profile = |requests: &[u64]| {
        let mut syscalls = vec![json!({"names": ["read", "write", "close"], "action": "SCMP_ACT_ALLOW"})];
        syscalls.extend(requests.iter().map(|r| {
            json!({"names": ["ioctl"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 1, "value": r, "op": "SCMP_CMP_EQ"}]})
        }));
        json!({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": syscalls})
    };
    let full = profile(&requests);
    let m = meaning_of(&full).unwrap();
    let dropped = requests[1234];
    let fewer: Vec<u64> = requests.iter().copied().filter(|&r| r != dropped).collect();
    let dir = tempdir("long-list");
    let jobs = [(full.clone(), None), (full, Some(2)), (profile(&fewer), None)];
    let theirs: Vec<Program> = compile_all(&jobs, &dir).into_iter().map(|r| r.unwrap()).collect();
    let reference = policy::compile::reference_program(&m).unwrap();
    assert!(reference.len() < 2 * requests.len(), "{}", reference.len());
    let decide = |filter: &Program| equiv::check(Side::single(&reference), Side::single(filter), &Options::default());
    for (filter, layout) in theirs.iter().take(2).zip(["linear", "--optimize 2"]) {
        assert!(filter.len() < requests.len() + 100, "{layout}: {}", filter.len());
        assert_eq!(decide(filter).unwrap(), Verdict::Equal, "libseccomp's {layout}");
    }
    let Verdict::Differ(found) = decide(&theirs[2]).unwrap() else { panic!("a dropped request not found") };
    assert_eq!(found[0].data.args[1], dropped, "{found:?}");
    let ours = policy::compile::compile(&m, &Default::default()).unwrap();
    assert!(ours.stats.longest_path <= 32 && ours.program.len() <= 4096, "{:?}", ours.stats);
}
