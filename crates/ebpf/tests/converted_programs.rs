#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The seccomp executor on the programs the converter really makes
//! (`testdata/converted/`, kept equal to the converter's output by
//! crates/convert/tests/converted_fixtures.rs, and the listings of
//! `testdata/convert/`): what it compiles each chain filetest to (the
//! `== ebpf` block, as crates/integration/tests/chain_filetests.rs prints
//! it), and every run of every testdata filter on all three ways into it
//! (counted, uncounted, a held [`SeccompRunner`]) against the general
//! interpreter, instruction counts included, the plain interpreter (the
//! `ebpf-plain` engine's model of the kernel's loop) too, and against the
//! running kernel's actions. So a change to the executor fails in this crate's
//! tests, not only in the integration suite above the converter.

use ebpf::plain::PlainProgram;
use ebpf::{decode, Helpers, LoadOptions, Program, Vm};
use test_data::filetest::{self, FileTest, Run};
use test_data::filters::{self, Source};
use test_data::{converted, paths};

/// One converted program, loaded every way a seccomp engine runs it.
struct Loaded {
    /// As the seccomp engines load it (the executor, where the program is
    /// in its subset).
    fast: Program,
    /// Without superinstructions: the general interpreter only.
    slow: Program,
    /// For the plain interpreter.
    plain: PlainProgram,
}

fn load(bytes: &[u8], helpers: &Helpers) -> Result<Loaded, String> {
    let insns = decode(bytes).map_err(|e| format!("decode: {e}"))?;
    let unfused = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let fast = Program::load(&insns, &LoadOptions::default(), helpers).map_err(|e| format!("load: {e}"))?;
    let slow = Program::load(&insns, &unfused, helpers).map_err(|e| format!("load: {e}"))?;
    if slow.has_seccomp_executor() {
        return Err("the unfused load has the executor".into());
    }
    if !fast.is_converted_seccomp() || !slow.is_converted_seccomp() {
        return Err("outside the converted-seccomp subset".into());
    }
    let plain = PlainProgram::new(&insns).map_err(|e| format!("plain: {e}"))?;
    Ok(Loaded { fast, slow, plain })
}

/// Runs `data` every way the crate has: counted, uncounted and through a
/// held runner on `fast`, on the general interpreter (`slow`) and on the
/// plain one; describes any difference in result or instruction count,
/// else the result.
fn run_every_way(loaded: &Loaded, data: &[u8; 64]) -> Result<u32, String> {
    let Loaded { fast, slow, plain } = loaded;
    let (mut vf, mut vs) = (Vm::new(), Vm::new());
    let general = vs.run_seccomp(slow, data);
    let counted = vf.run_seccomp(fast, data);
    let steps = vf.executed();
    let uncounted = vf.run_seccomp_uncounted(fast, data);
    let held = vf.seccomp_runner(fast).map(|r| r.run(data));
    let agree = counted == general && uncounted == general && held.as_ref().is_none_or(|h| *h == general);
    if !agree || steps != vs.executed() || vf.executed() != steps {
        return Err(format!(
            "executor {counted:?} ({steps} steps), uncounted {uncounted:?} (then {} steps), held {held:?}, general \
             {general:?} ({} steps)",
            vf.executed(),
            vs.executed()
        ));
    }
    let general = general.map_err(|e| format!("both: {e}"))?;
    match plain.run_counted(data) {
        Ok((r0, n)) if r0 == general && n == steps => Ok(general),
        other => Err(format!("plain {other:?}, general {general:#x} ({steps} steps)")),
    }
}

/// The inputs around a vector: itself, the next syscall number, and the
/// low word of its first argument one up (a compare's other side).
fn around(data: [u8; 64]) -> [[u8; 64]; 3] {
    let (mut next_nr, mut next_arg) = (data, data);
    let nr = u32::from_le_bytes(data[..4].try_into().unwrap()).wrapping_add(1);
    next_nr[..4].copy_from_slice(&nr.to_le_bytes());
    let arg = u32::from_le_bytes(data[16..20].try_into().unwrap()).wrapping_add(1);
    next_arg[16..20].copy_from_slice(&arg.to_le_bytes());
    [data, next_nr, next_arg]
}

#[test]
fn every_testdata_filter_runs_alike_every_way_and_as_the_kernel_did() {
    let names = filters::names().unwrap();
    assert!(names.len() >= 16, "only {} filters", names.len());
    let mut failures = Vec::new();
    let (mut runs, mut checked) = (0usize, 0usize);
    for name in &names {
        let loaded = match converted::read("filters", name).and_then(|b| load(&b, &Helpers::new())) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if !loaded.fast.has_seccomp_executor() {
            failures.push(format!("{name}: not on the seccomp executor"));
        }
        for (source, v) in filters::all_vectors(name).unwrap() {
            for (i, data) in around(v.data_bytes()).iter().enumerate() {
                runs += 1;
                match (run_every_way(&loaded, data), v.action) {
                    (Err(e), _) => failures.push(format!("{name} {source:?} line {} input {i}: {e}", v.line)),
                    (Ok(got), Some(want)) if i == 0 && source == Source::Kernel => {
                        checked += 1;
                        if got != want {
                            failures.push(format!("{name} line {}: {got:#x}, the kernel {want:#x}", v.line));
                        }
                    }
                    (Ok(_), _) => {}
                }
            }
        }
    }
    assert!(runs >= 100_000 && checked >= 30_000, "{runs} runs, {checked} against the kernel");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The chain filetest at `path` and its converted program's bytes: its
/// own, or its filter's (`; filter: NAME`).
fn chain_case(path: &std::path::Path) -> Result<(FileTest, Vec<u8>), String> {
    let t = filetest::parse(&paths::read_text(path)?)?;
    let bytes = match t.value("filter") {
        Some(filter) => converted::read("filters", filter)?,
        None => converted::read("chains", &path.file_stem().unwrap().to_string_lossy())?,
    };
    Ok((t, bytes))
}

#[test]
fn every_chain_filetest_compiles_to_its_executor_listing() {
    let files = paths::files_ending(&paths::testdata().join("chains"), ".txt").unwrap();
    assert!(files.len() >= 12, "only {} chain filetests", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy();
        let listed = chain_case(path).and_then(|(t, bytes)| {
            let helpers = if t.value("mode") == Some("socket") { Helpers::socket() } else { Helpers::new() };
            let insns = decode(&bytes).map_err(|e| format!("decode: {e}"))?;
            let got = match Program::load(&insns, &LoadOptions::default(), &helpers) {
                Ok(p) => p.seccomp_chain_listing().unwrap_or_else(|| "no seccomp executor\n".into()),
                Err(e) => format!("error: load: {e}\n"),
            };
            let want = t.expected.split_once("== ebpf\n").ok_or("no `== ebpf` block")?.1;
            if got == want {
                Ok(())
            } else {
                Err(format!("got\n{got}"))
            }
        });
        if let Err(e) = listed {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} differ:\n{}", failures.len(), files.len(), failures.join("\n"));
}

#[test]
fn every_converter_filetest_gives_its_run_values_every_way() {
    let (mut programs, mut on_executor, mut runs) = (0, 0, 0);
    let (count, failures) = filetest::check_each("convert", |t| {
        if t.value("mode") != Some("seccomp") || t.marker.as_deref() != Some("expect") {
            return Ok(());
        }
        let bytes = filetest::listed_bytes(&t.expected)?;
        if bytes.is_empty() {
            return Ok(()); // refused by the validator or the converter
        }
        let loaded = load(&bytes, &Helpers::new())?;
        programs += 1;
        on_executor += usize::from(loaded.fast.has_seccomp_executor());
        for (line, run) in t.runs()? {
            let Run::Seccomp { data, want } = run else { return Err(format!("line {line}: a socket run")) };
            runs += 1;
            for (i, data) in around(data).iter().enumerate() {
                match run_every_way(&loaded, data) {
                    Err(e) => return Err(format!("line {line} input {i}: {e}")),
                    Ok(got) if i == 0 && got != want => return Err(format!("line {line}: {got:#x}, want {want:#x}")),
                    Ok(_) => {}
                }
            }
        }
        Ok(())
    })
    .unwrap();
    assert!(failures.is_empty(), "{} of {count}:\n{}", failures.len(), failures.join("\n"));
    assert!(
        programs >= 40 && on_executor == programs && runs >= 150,
        "{programs} programs ({on_executor} on the executor), {runs} runs"
    );
}
