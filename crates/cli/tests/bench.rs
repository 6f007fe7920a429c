#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! `bpfconv bench`: the JSON of every testdata filter against its schema,
//! and the text layout against a golden file (numbers masked).

use std::process::Command;

use serde_json::Value;

mod common;
use common::{stderr, stdout, BIN, FILTERS};

/// Every shared filter (testdata/filters and the Docker-like profile pair).
fn filters() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for dir in [FILTERS.to_string(), format!("{FILTERS}/../profiles")] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "bpf") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn number(v: &Value) -> bool {
    v.as_f64().is_some_and(f64::is_finite)
}

/// Every engine, in `bench`'s order.
const ALL: [&str; 11] = [
    "cbpf",
    "ebpf",
    "cbpf-plain",
    "ebpf-plain",
    "rbpf",
    "rbpf-jit",
    "rbpf-cranelift",
    "fast",
    "kernel-jit",
    "kernel",
    "kernel-forced",
];

/// The filters whose schema run includes `kernel-jit`: each of its test
/// runs lasts at least 1 ms a round, so the filters with hundreds of
/// inputs run every other engine only. s390x: every input
/// is of a foreign arch, which only kernel-jit times in the kernel.
const JIT_FILTERS: [&str; 3] = ["seed_fast", "seed_slow", "s390x"];

/// Checks one `bench --format json` document of the engines `all`;
/// returns whether the kernel columns and the `kernel-jit` column were
/// measured.
fn check_schema(doc: &Value, file: &str, all: &[&str]) -> (bool, bool) {
    assert_eq!(doc["filter"], file);
    assert_eq!(doc["mode"], "seccomp");
    assert!(doc["insns"].as_u64().unwrap() >= 1);
    assert!(doc["ebpf_insns"].as_u64().unwrap() >= doc["insns"].as_u64().unwrap());
    let engines: Vec<&str> = doc["engines"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert_eq!(engines, all, "{file}: every engine, in order");
    let inputs = doc["inputs"].as_array().unwrap();
    assert!(!inputs.is_empty());
    for i in inputs {
        for field in ["ret", "cbpf_path", "ebpf_path", "arch", "nr", "ip"] {
            assert!(i[field].is_u64() || i[field].is_i64(), "{file}: input {i}: {field}");
        }
        assert_eq!(i["args"].as_array().unwrap().len(), 6);
        assert!(i["ebpf_path"].as_u64().unwrap() >= i["cbpf_path"].as_u64().unwrap(), "{file}: {i}");
    }
    let names: Vec<&str> = inputs.iter().map(|i| i["input"].as_str().unwrap()).collect();
    let deepest = doc["deepest"].as_str().unwrap();
    let max_path = inputs.iter().map(|i| i["cbpf_path"].as_u64().unwrap()).max().unwrap();
    let deepest_input = inputs.iter().find(|i| i["input"] == deepest).unwrap();
    assert_eq!(deepest_input["cbpf_path"].as_u64().unwrap(), max_path, "{file}: deepest is the longest classic path");
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), (inputs.len() + 2) * all.len(), "{file}: a cell per (input, deepest, mix) and engine");
    let (mut kernel_measured, mut jit_measured) = (false, false);
    for c in cells {
        let input = c["input"].as_str().unwrap();
        assert!(input == "deepest" || input == "mix" || names.contains(&input), "{file}: {c}");
        assert!(all.contains(&c["engine"].as_str().unwrap()));
        assert!(number(&c["cbpf_path"]) && number(&c["ebpf_path"]), "{file}: {c}");
        if c["ns"].is_null() {
            assert!(c["unavailable"].is_string(), "{file}: a missing figure says why: {c}");
            assert!(c["min_ns"].is_null() && c["max_ns"].is_null());
            // Only rbpf's JIT (its page), the kernel (foreign arches) and
            // kernel-jit (without bpf(2)) may refuse.
            let e = c["engine"].as_str().unwrap();
            assert!(["rbpf-jit", "kernel-jit", "kernel", "kernel-forced"].contains(&e), "{file}: {c}");
            continue;
        }
        let (ns, min, max) = (c["ns"].as_f64().unwrap(), c["min_ns"].as_f64().unwrap(), c["max_ns"].as_f64().unwrap());
        assert!(min <= ns && ns <= max, "{file}: {c}");
        if c["engine"] == "kernel-jit" {
            // A difference of the kernel's whole-ns means divided by the
            // copies per test run: near 0 (or a little below within
            // noise) for the cheapest inputs.
            jit_measured = true;
            assert!(c["samples"].as_u64().unwrap() >= 3, "{file}: {c}");
        } else if c["engine"].as_str().unwrap().starts_with("kernel") {
            kernel_measured = true;
            assert!(c["kernel_cached"].is_boolean() || input == "mix", "{file}: {c}");
        } else {
            assert!(ns > 0.0, "{file}: {c}");
        }
    }
    // The loop the in-process engines are timed by, around a call that does
    // no work: a positive figure (a timing, so not compared with the
    // engines' on a shared machine).
    let floor = doc["call_floor_ns"].as_f64().unwrap_or_else(|| panic!("{file}: call_floor_ns"));
    assert!(floor > 0.0 && floor.is_finite(), "{file}: call floor {floor}");
    if jit_measured {
        assert!(doc["kernel_jit"]["rounds"].as_u64().unwrap() >= 3, "{file}");
        assert!(number(&doc["kernel_jit"]["baseline_ns"]), "{file}");
        // Loadable lengths 17, 102 and 43: 32, 8 and 16 copies fit in
        // 1024 instructions (convert::loadable::xdp::copies_for).
        let stem = std::path::Path::new(file).file_stem().unwrap().to_str().unwrap();
        let copies = [("seed_fast", 32), ("seed_slow", 8), ("s390x", 16)].iter().find(|c| c.0 == stem).unwrap().1;
        assert_eq!(doc["kernel_jit"]["copies"], copies, "{file}");
        // The mix with the inputs in turn: one loop over up to 32 inputs
        // per test run.
        let cycled = &doc["kernel_jit"]["cycled_mix"];
        let (ns, min, max) = (cycled["ns"].as_f64(), cycled["min_ns"].as_f64(), cycled["max_ns"].as_f64());
        let (Some(ns), Some(min), Some(max)) = (ns, min, max) else { panic!("{file}: {cycled}") };
        assert!(min <= ns && ns <= max, "{file}: {cycled}");
        let inputs = doc["inputs"].as_array().unwrap().len() as u64;
        assert_eq!(cycled["inputs_per_run"].as_u64(), Some(inputs.min(32)), "{file}: {cycled}");
    }
    (kernel_measured, jit_measured)
}

#[test]
fn json_of_every_testdata_filter_passes_the_schema() {
    let kernel = kernel::seccomp_available().is_ok();
    if !kernel {
        eprintln!("skipping the kernel-figures assertion: seccomp is not available here");
    }
    let jit = test_data::require::have(
        "json_of_every_testdata_filter_passes_the_schema (kernel-jit figures)",
        test_data::require::Need::Bpf,
        kernel::bpf::available(),
    )
    .is_some();
    for path in filters() {
        let file = path.to_str().unwrap();
        // testdata/profiles/s390x.bpf is libseccomp's big-endian s390x export.
        let endian = if path.file_stem().is_some_and(|s| s == "s390x") { "big" } else { "little" };
        let with_jit = path.file_stem().is_some_and(|s| JIT_FILTERS.iter().any(|j| s == *j));
        let all: Vec<&str> = ALL.iter().copied().filter(|e| with_jit || *e != "kernel-jit").collect();
        let mut cmd = Command::new(BIN);
        cmd.args(["bench", file, "--endian", endian, "--format", "json", "--time", "0.05"]);
        if !with_jit {
            cmd.args([
                "--engines",
                &all.iter().filter(|e| **e != "kernel-forced").copied().collect::<Vec<_>>().join(","),
            ]);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{file}: {}", stderr(&o));
        let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let (measured, jit_measured) = check_schema(&doc, file, &all);
        // kernel-jit times every input, of any arch, wherever bpf(2) works.
        assert_eq!(jit_measured, jit && with_jit, "{file}: kernel-jit figures");
        // Only native x86_64 calls can be timed in this kernel: a filter of
        // another arch only (the s390x export, OpenSSH's i386 rules) has no
        // kernel figure.
        let foreign = endian == "big" || path.file_stem().is_some_and(|s| s.to_string_lossy().ends_with("_i386"));
        assert!(measured || !kernel || foreign, "{file}: no kernel figure");
        assert!(!(measured && foreign), "{file}: a kernel figure for a foreign-arch filter");
    }
}

/// `bench` shows `optimize`'s output beside the filter: on long_jumps_large
/// every input's optimised path is at most 32 instructions (the chdir rules
/// are a tree), where the filter as written runs 300 and more.
#[test]
fn bench_shows_the_optimised_paths() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters/long_jumps_large.bpf");
    let o = Command::new(BIN)
        .args(["bench", file, "--engines", "cbpf", "--format", "json", "--time", "0.01"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(doc["optimized_insns"].as_u64().unwrap() <= 64, "{doc}");
    let inputs = doc["inputs"].as_array().unwrap();
    let deepest = inputs.iter().map(|i| i["cbpf_path"].as_u64().unwrap()).max().unwrap();
    assert!(deepest > 300, "{deepest}");
    for i in inputs {
        let opt = i["optimized_path"].as_u64().unwrap();
        assert!(opt <= 32, "{i}");
    }
}

/// `bench` says which form the `fast` engine timed: sshd_like's argument
/// trees as native code (where the host allows it; under CI it must), a
/// filter without argument checks none; the text output says it in a line.
#[test]
fn bench_says_what_form_fast_timed() {
    let run = |file: &str, format: &str| {
        let file = format!("{}/../../testdata/filters/{file}", env!("CARGO_MANIFEST_DIR"));
        let o = Command::new(BIN)
            .args(["bench", &file, "--engines", "fast", "--format", format, "--time", "0.01"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    let doc: Value = serde_json::from_str(&run("sshd_like.bpf", "json")).unwrap();
    let fast = &doc["fast"];
    assert!(fast["switches"].as_u64().unwrap() >= 4, "{fast}");
    match fast["native_refusal"].as_str() {
        Some(why) => {
            assert_eq!(fast["native_code_bytes"], 0, "{fast}");
            test_data::require::missing("bench_says_what_form_fast_timed", test_data::require::Need::Native, why);
        }
        None => {
            assert!(fast["native_code_bytes"].as_u64().unwrap() > 0, "{fast}");
            assert!(run("sshd_like.bpf", "text").contains("argument-check switches ran as x86-64 code"));
        }
    }
    let doc: Value = serde_json::from_str(&run("seed_fast.bpf", "json")).unwrap();
    assert_eq!(doc["fast"], serde_json::json!({"switches": 0, "native_code_bytes": 0, "native_refusal": null}));
    assert!(!run("seed_fast.bpf", "text").contains("fast: "));
}

/// The longest classic path among `bench`'s inputs (JSON), with its input.
fn longest(args: &[&str]) -> (u64, String) {
    let o = Command::new(BIN)
        .args(["bench", "--engines", "cbpf", "--format", "json", "--time", "0.01"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let deepest = doc["deepest"].as_str().unwrap().to_string();
    let input = doc["inputs"].as_array().unwrap().iter().find(|i| i["input"] == deepest.as_str()).unwrap();
    (input["cbpf_path"].as_u64().unwrap(), deepest)
}

/// The default inputs' `deepest` is at least as deep as every kernel-checked
/// vector of the filter (testdata/filters/*.vectors.jsonl, arguments
/// included): the search over each syscall's feasible paths finds the
/// arguments that pass its checks, where arguments 0 may stop early.
#[test]
fn the_default_deepest_input_is_as_deep_as_every_vector() {
    let mut deeper_than_zero_args = 0;
    for path in filters() {
        let vectors = path.with_extension("vectors.jsonl");
        if !vectors.exists() {
            continue;
        }
        let file = path.to_str().unwrap();
        let endian = if path.file_stem().is_some_and(|s| s == "s390x") { "big" } else { "little" };
        let longest = |more: &[&str]| longest(&[&[file, "--endian", endian], more].concat());
        let (default_path, name) = longest(&[]);
        // In chunks: bench takes at most 4096 vectors.
        let text = std::fs::read_to_string(&vectors).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let dir = tempfile::tempdir().unwrap();
        let (mut vector_path, mut line) = (0, String::new());
        for (i, chunk) in lines.chunks(4096).enumerate() {
            let part = dir.path().join(format!("{i}.jsonl"));
            std::fs::write(&part, chunk.join("\n")).unwrap();
            let (n, name) = longest(&["--vectors", part.to_str().unwrap()]);
            if n > vector_path {
                (vector_path, line) = (n, format!("chunk {i}, {name}"));
            }
        }
        assert!(
            default_path >= vector_path,
            "{file}: the default deepest input ({name}) runs {default_path} instructions, {line} of the vectors {vector_path}"
        );
        deeper_than_zero_args += usize::from(name.ends_with(" deepest"));
    }
    // long_jumps_large's chdir rules and the Docker-like profile's
    // argument checks are not at their deepest with arguments 0.
    assert!(deeper_than_zero_args >= 2, "{deeper_than_zero_args}");
}

/// The text layout: header, one row per input, `deepest` and `mix`, the
/// notes. Numbers with a decimal point (timings) are masked as `#`, and so
/// is the header's count of rounds: the timing loop stops early past
/// `--time`, so a loaded machine makes fewer (7 instead of 11 was seen
/// while another build ran).
#[test]
fn text_layout_matches_the_golden_file() {
    let o = Command::new(BIN)
        .current_dir(FILTERS)
        .args(["bench", "seed_fast.bpf", "--engines", "cbpf,ebpf,cbpf-plain,ebpf-plain,fast", "--time", "0.05"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let masked: String = stdout(&o)
        .lines()
        .map(|l| {
            let mut tokens: Vec<&str> = l
                .split(' ')
                .filter(|t| !t.is_empty())
                .map(|t| {
                    let digits = t.trim_start_matches('-');
                    let is_timing = digits.split_once('.').is_some_and(|(a, b)| {
                        !a.is_empty()
                            && a.bytes().all(|c| c.is_ascii_digit())
                            && !b.is_empty()
                            && b.bytes().all(|c| c.is_ascii_digit())
                    });
                    if is_timing {
                        "#"
                    } else {
                        t
                    }
                })
                .collect();
            if let Some(at) = tokens.windows(3).position(|w| w[0] == "of" && w[2] == "rounds") {
                tokens[at + 1] = "#";
            }
            tokens.join(" ") + "\n"
        })
        .collect();
    let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bench_seed_fast.txt");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(golden, &masked).unwrap();
    }
    let want = std::fs::read_to_string(golden).unwrap();
    assert_eq!(masked, want, "UPDATE_EXPECT=1 cargo test -p bpfconv-cli --test bench blesses");
}

/// The text output says how many copies of the filter one kernel-jit test
/// run held: 32 for seed_fast (17 loadable instructions), 8 for sshd_like
/// (64: eight copies fit in 1024 instructions, sixteen do not), 1 for
/// long_jumps_large (1332).
#[test]
fn kernel_jit_text_names_the_copies() {
    let need = test_data::require::Need::Bpf;
    let Some(()) = test_data::require::have("kernel_jit_text_names_the_copies", need, kernel::bpf::available()) else {
        return;
    };
    for (filter, copies) in [("seed_fast.bpf", 32), ("sshd_like.bpf", 8), ("long_jumps_large.bpf", 1)] {
        let o = Command::new(BIN)
            .current_dir(FILTERS)
            .args(["bench", filter, "--engines", "kernel-jit", "--nr", "0", "--time", "0.05"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = stdout(&o);
        let line = text.lines().find(|l| l.starts_with("kernel-jit: ")).unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains(&format!("harness run {copies}x back to back")), "{filter}: {line}");
        assert!(line.contains(&format!("divided by {copies};")), "{filter}: {line}");
        // One input (`--nr 0`): the cycling loop goes over that one.
        let cycled =
            text.lines().find(|l| l.starts_with("kernel-jit, inputs in turn: ")).unwrap_or_else(|| panic!("{text}"));
        assert!(cycled.contains("looping over 1 input per BPF_PROG_TEST_RUN run"), "{filter}: {cycled}");
    }
}

#[test]
fn a_disagreeing_or_bad_request_is_refused() {
    let seed = format!("{FILTERS}/seed_fast.bpf");
    for (args, code, needle) in [
        (vec!["--engines", "cbpf,nope"], 2, "unknown engine"),
        (vec!["--time", "0"], 2, "--time"),
        (vec!["--pcap", "x.pcap"], 2, "--mode socket"),
        (vec!["--nr", "nosuchcall"], 2, "no syscall"),
        (vec!["--mode", "socket", "--nr", "read"], 2, "--vectors and --nr are for seccomp filters"),
        (vec!["--mode", "socket", "--vectors", "v.jsonl"], 2, "--vectors and --nr are for seccomp filters"),
        (vec!["--mode", "socket"], 2, "bench --mode socket needs --pcap FILE"),
    ] {
        let o = Command::new(BIN).args(["bench", &seed]).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    // One input by name: one row, plus deepest and mix.
    let o = Command::new(BIN)
        .args(["bench", &seed, "--nr", "getppid", "--engines", "cbpf,fast", "--time", "0.02", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["inputs"].as_array().unwrap().len(), 1);
    assert_eq!(doc["inputs"][0]["input"], "x86_64:getppid");
    assert_eq!(doc["cells"].as_array().unwrap().len(), 3 * 2);
}

/// A little-endian pcap (LINKTYPE_ETHERNET) of `packets`, whole.
fn pcap(packets: &[Vec<u8>]) -> Vec<u8> {
    let records: Vec<_> =
        packets.iter().map(|p| test_data::pcap::Record { data: p.clone(), wire_len: p.len() as u32 }).collect();
    test_data::pcap::write(&records)
}

#[test]
fn socket_filters_are_timed_per_packet_on_cbpf_ebpf_and_kernel_jit() {
    let dir = tempfile::tempdir().unwrap();
    let filter = dir.path().join("ip.asm");
    std::fs::write(&filter, "ldh [12]\njeq #0x800, acc, drop\nacc: ret #-1\ndrop: ret #0\n").unwrap();
    let mut ip = vec![0u8; 60];
    ip[12] = 0x08;
    let arp = {
        let mut p = vec![0u8; 42];
        p[12] = 0x08;
        p[13] = 0x06;
        p
    };
    let capture = dir.path().join("c.pcap");
    std::fs::write(&capture, pcap(&[ip, arp])).unwrap();
    let o = Command::new(BIN)
        .args(["bench", "--mode", "socket", "--pcap", capture.to_str().unwrap(), filter.to_str().unwrap()])
        .args(["--time", "0.02", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["mode"], "socket");
    // Socket engines run through their own loops: no call floor.
    assert!(doc.get("call_floor_ns").is_none(), "{doc}");
    let inputs = doc["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0]["ret"], u32::MAX);
    assert_eq!(inputs[1]["ret"], 0);
    // ldh, jeq, ret: three classic instructions on each packet.
    assert!(inputs.iter().all(|i| i["cbpf_path"] == 3 && i["ebpf_path"].as_u64() >= Some(3)), "{inputs:?}");
    // A cell per (packet, deepest, mix) and engine, every engine listed.
    let engines = doc["engines"].as_array().unwrap().len();
    assert_eq!(doc["cells"].as_array().unwrap().len(), (inputs.len() + 2) * engines, "{doc}");
    // kernel-jit: one column per hook, measured where bpf(2) is allowed.
    let jit = kernel::bpf::available().is_ok();
    for c in doc["cells"].as_array().unwrap() {
        let measured = !c["ns"].is_null();
        let e = c["engine"].as_str().unwrap();
        let timed = e == "cbpf" || e == "ebpf" || (jit && e.starts_with("kernel-jit:"));
        assert_eq!(measured, timed, "{c}");
    }
    let engines: Vec<&str> = doc["engines"].as_array().unwrap().iter().filter_map(|e| e.as_str()).collect();
    assert!(engines.ends_with(&["kernel-jit:xdp", "kernel-jit:tc", "kernel-jit:socket", "kernel"]), "{engines:?}");
}

/// `ld`, then 4,000 `add #1` and a `ret` on one input, 3 instructions on
/// the other: the branch `head` takes.
fn long_and_short(head: &str, ret: &str) -> String {
    let mut text = format!("{head}\nshort: ret {ret}\nlong: ld #0\n");
    text.push_str(&"add #1\n".repeat(4000));
    text.push_str(&format!("ret {ret}\n"));
    text
}

/// The ns of engine `engine` on input `input` in a `bench --format json`
/// document.
fn ns_of(doc: &Value, engine: &str, input: &str) -> f64 {
    let cells = doc["cells"].as_array().unwrap();
    let cell = cells.iter().find(|c| c["engine"] == engine && c["input"] == input).unwrap_or_else(|| panic!("{doc}"));
    cell["ns"].as_f64().unwrap_or_else(|| panic!("{cell}"))
}

/// The rounds run the engines they time: an input whose path is over a
/// thousand times longer costs more than the other on each engine, in both
/// modes. (Not a speed figure: the long path costs fifty times the short
/// one's or more in every run here, busy machine or not; an engine left
/// out of the loop would cost the loop's floor on both inputs.)
#[test]
fn the_rounds_run_the_engines_they_time() {
    let dir = tempfile::tempdir().unwrap();
    let seccomp = dir.path().join("seccomp.asm");
    std::fs::write(&seccomp, long_and_short("ld [0]\njeq #1, long, short", "#0x7fff0000")).unwrap();
    let vectors = dir.path().join("v.jsonl");
    let vector = |nr: u32| format!(r#"{{"arch":3221225534,"nr":{nr},"ip":0,"args":[0,0,0,0,0,0],"action":0}}"#);
    std::fs::write(&vectors, format!("{}\n{}\n", vector(1), vector(2))).unwrap();
    let socket = dir.path().join("socket.asm");
    std::fs::write(&socket, long_and_short("ldh [12]\njeq #0x800, long, short", "#-1")).unwrap();
    let (mut ip, mut arp) = (vec![0u8; 60], vec![0u8; 42]);
    (ip[12], arp[12], arp[13]) = (0x08, 0x08, 0x06);
    let capture = dir.path().join("c.pcap");
    std::fs::write(&capture, pcap(&[ip, arp])).unwrap();
    let runs = [
        (vec!["--vectors", vectors.to_str().unwrap(), seccomp.to_str().unwrap()], "line 1", "line 2"),
        (
            vec!["--mode", "socket", "--pcap", capture.to_str().unwrap(), socket.to_str().unwrap()],
            "packet 0",
            "packet 1",
        ),
    ];
    for (args, long, short) in runs {
        let o = Command::new(BIN)
            .arg("bench")
            .args(&args)
            .args(["--engines", "cbpf,ebpf", "--time", "0.1", "--format", "json"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
        for engine in ["cbpf", "ebpf"] {
            let (l, s) = (ns_of(&doc, engine, long), ns_of(&doc, engine, short));
            assert!(l > s, "{args:?}: {engine}: {l} ns on the long path, {s} ns on the short one");
        }
    }
}

/// The kernel's calls per sample share `--time` among its timing tasks:
/// two per input it times and two for the cache's cost, so three inputs in
/// 48 ms make eight tasks of 6 ms, 3,333 calls of about 300 ns each six times.
#[test]
fn the_kernel_shares_the_time_among_its_tasks() {
    let need = test_data::require::Need::Kernel;
    let test = "the_kernel_shares_the_time_among_its_tasks";
    if test_data::require::have(test, need, kernel::seccomp_available()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let filter = dir.path().join("f.asm");
    std::fs::write(&filter, "ld [0]\njeq #-1, bad, ok\nbad: ret #0x50001\nok: ret #0x7fff0000\n").unwrap();
    let vectors = dir.path().join("v.jsonl");
    let vector = |nr: u32| format!(r#"{{"arch":3221225534,"nr":{nr},"ip":0,"args":[0,0,0,0,0,0],"action":0}}"#);
    std::fs::write(&vectors, format!("{}\n{}\n{}\n", vector(39), vector(40), vector(41))).unwrap();
    let o = Command::new(BIN)
        .args(["bench", filter.to_str().unwrap(), "--vectors", vectors.to_str().unwrap()])
        .args(["--engines", "kernel", "--time", "0.048", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["kernel"]["iterations"], 3333, "{doc}");
}

/// Inputs the user chose (`--nr`, `--vectors`, here from stdin) are timed
/// as given: no deeper input is searched for beside them, though the
/// filter has one (`args[0] == 5` reads one more argument).
#[test]
fn chosen_inputs_are_timed_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let filter = dir.path().join("f.asm");
    let text = "ld [0]\njeq #39, chk, allow\nchk: ld [16]\njeq #5, more, allow\nmore: ld [24]\njeq #1, kill, allow\n\
                allow: ret #0x7fff0000\nkill: ret #0\n";
    std::fs::write(&filter, text).unwrap();
    let filter = filter.to_str().unwrap();
    let inputs = |extra: &[&str], stdin: &str| {
        let mut child = Command::new(BIN)
            .args(["bench", filter, "--engines", "cbpf", "--time", "0.02", "--format", "json"])
            .args(extra)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
        doc["inputs"].as_array().unwrap().iter().map(|i| i["input"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    // By default, one input per number compared and the deeper one found.
    assert_eq!(inputs(&[], ""), ["x86_64:getpid", "x86_64:getpid deepest"]);
    assert_eq!(inputs(&["--nr", "getpid"], ""), ["x86_64:getpid"]);
    let vector = r#"{"arch":3221225534,"nr":39,"ip":0,"args":[0,0,0,0,0,0],"action":0}"#;
    assert_eq!(inputs(&["--vectors", "-"], vector), ["line 1"]);
}
