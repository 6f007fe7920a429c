//! Regenerates the committed seed corpus `fuzz/seeds/<target>/` from testdata/:
//! `cargo run -p fuzz-replay --example make_seeds`.
//!
//! - `decode_validate`: the small libseccomp filters and the classic
//!   programs of lib/test_bpf.c, as raw `sock_filter` bytes;
//! - `text_parse`: the same programs printed in every cBPF text syntax and
//!   as seccomp-tools listings, plus eBPF assembly from bpf_conformance;
//! - `ebpf_exec`: a selector byte followed by assembled conformance programs;
//! - `convert_equiv`, `analysis_sound`, `fast_equiv`, `bounded_work`, `optimize`, `equiv`: fixed
//!   pseudo-random byte strings (the targets' generator turns any bytes into
//!   a valid case);
//! - `compile`: fixed pseudo-random byte strings (profiles the target
//!   writes), and testdata's profile files behind a 0 byte (which makes the
//!   target read them as they are).
//!
//! Seeds are named after their source so a failing one says where it came from.
//! The `text_parse` seeds end in `.<syntax>.seed` (`.asm.seed`, `.c.seed`,
//! `.ddd.seed`, `.seccomp.seed`, `.s.seed` for eBPF assembly): the syntax stays
//! visible, and tools that read `.c`, `.asm` or `.s` files as source code (the
//! duplicate report) leave this data alone. The target picks the syntax from
//! the content, not the name.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).to_path_buf()
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = root().join("fuzz/seeds").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn classic_programs() -> Vec<(String, Vec<cbpf::Insn>)> {
    let mut out = Vec::new();
    for name in ["seed_fast", "seed_slow", "long_jumps_short", "allow306_front"] {
        let bytes = std::fs::read(root().join("testdata/filters").join(format!("{name}.bpf"))).unwrap();
        out.push((name.to_string(), cbpf::raw::decode(&bytes).unwrap()));
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("testdata/test_bpf/classic.json")).unwrap()).unwrap();
    for test in json["tests"].as_array().unwrap().iter().step_by(5) {
        let insns: Vec<cbpf::Insn> = test["insns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let f: Vec<u64> = i.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
                cbpf::Insn { code: f[0] as u16, jt: f[1] as u8, jf: f[2] as u8, k: f[3] as u32 }
            })
            .collect();
        if !insns.is_empty() && insns.len() <= 64 {
            let name: String = test["name"]
                .as_str()
                .unwrap()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            out.push((format!("test_bpf_{}_{name}", test["index"]), insns));
        }
    }
    out
}

fn conformance_programs() -> Vec<(String, String)> {
    let dir = root().join("testdata/bpf_conformance/tests");
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    names
        .iter()
        .step_by(10)
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let asm = text.split("-- asm").nth(1)?.split("\n--").next()?.to_string();
            Some((p.file_stem().unwrap().to_string_lossy().into_owned(), asm))
        })
        .collect()
}

fn main() {
    let seeds = root().join("fuzz/seeds");
    let _ = std::fs::remove_dir_all(&seeds);
    let classic = classic_programs();
    for (name, insns) in &classic {
        write("decode_validate", name, &cbpf::raw::encode(insns));
    }
    for (name, insns) in classic.iter().take(12) {
        write("text_parse", &format!("{name}.asm.seed"), cbpf::text::print_asm(insns).as_bytes());
        write("text_parse", &format!("{name}.c.seed"), cbpf::text::print_c(insns).as_bytes());
        write("text_parse", &format!("{name}.ddd.seed"), cbpf::text::print_ddd(insns).as_bytes());
        let listing = seccomp::disasm::disasm(insns, seccomp::disasm::DisasmOptions::default());
        write("text_parse", &format!("{name}.seccomp.seed"), listing.as_bytes());
    }
    write("text_parse", "seccomp_tools.seccomp.seed", b"A = arch\nif (A != ARCH_X86_64) goto kill\nA = sys_number\nif (A == getppid) goto ok\nkill: return KILL\nok: return ALLOW\n");
    for (i, (name, asm)) in conformance_programs().iter().enumerate() {
        write("text_parse", &format!("ebpf_{name}.s.seed"), asm.as_bytes());
        if let Ok(insns) = ebpf::asm::assemble(asm) {
            let mut bytes = vec![(i as u8) & 0x0f];
            bytes.extend(ebpf::encode(&insns));
            write("ebpf_exec", &format!("{name}.sel{}", (i as u8) & 0x0f), &bytes);
        }
    }
    // The committed random seeds are this xorshift's bytes. Not the test
    // kit's SplitMix64: its bytes make other seeds, and three of today's six
    // `bounded_work` seeds are blow-up shapes that spend a whole budget where
    // SplitMix64's from this seed give one.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u8
    };
    for target in ["convert_equiv", "analysis_sound", "fast_equiv"] {
        for i in 0..24 {
            let len = 16 + 24 * i;
            let bytes: Vec<u8> = (0..len).map(|_| next()).collect();
            write(target, &format!("random_{i:02}"), &bytes);
        }
    }
    // Few: each one may spend a whole analysis budget in the debug replay.
    for i in 0..6 {
        let bytes: Vec<u8> = (0..32 + 16 * i).map(|_| next()).collect();
        write("bounded_work", &format!("random_{i:02}"), &bytes);
    }
    // After the others, so their bytes stay what they were.
    for i in 0..12 {
        let bytes: Vec<u8> = (0..24 + 24 * i).map(|_| next()).collect();
        write("optimize", &format!("random_{i:02}"), &bytes);
    }
    for i in 0..24 {
        let bytes: Vec<u8> = (0..16 + 48 * i).map(|_| next()).collect();
        write("equiv", &format!("random_{i:02}"), &bytes);
    }
    for i in 0..16 {
        let bytes: Vec<u8> = (0..64 + 32 * i).map(|_| next()).collect();
        write("compile", &format!("random_{i:02}"), &bytes);
    }
    for name in ["docker_like.json", "docker_style.json", "seccompiler_vmm.json"] {
        let mut bytes = vec![0u8];
        bytes.extend(std::fs::read(root().join("testdata/profiles").join(name)).unwrap());
        write("compile", &format!("raw_{name}.seed"), &bytes);
    }
    println!("seeds written to {}", seeds.display());
}
