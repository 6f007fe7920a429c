//! Whether the general eBPF interpreter's compare-chain fusion (`fuse` in
//! `ebpf::load`, on unless `LoadOptions::no_superinstructions`) pays on
//! converted socket filters: `fuse_socket list` names the cases;
//! `fuse_socket CASE fused|plain RUNS` runs one case RUNS times inside
//! `measure` (for callgrind's `--toggle-collect`).
//!
//! ```text
//! cargo build --profile bench -p bpfconv-benches --bin fuse_socket
//! valgrind --tool=callgrind --toggle-collect='*measure*' --callgrind-out-file=/dev/null \
//!     target/release/fuse_socket tcpdump_dst_port_list fused 2000     # then `plain`
//! ```
//!
//! Measured (x86 instructions per run, 21 cases): fused runs take 2.5% to
//! 27% fewer instructions than plain ones on every case (about 50 from the
//! prologue and `r0 = K; exit` fusions on every converted filter, up to 160
//! more from the compare chains of filters with compare runs), and 6-14%
//! less wall time on the three cases timed; so the general interpreter
//! keeps its superinstructions.
//!
//! Cases: tcpdump-shaped filters (`tcpdump -d` output of `ip`, `tcp port
//! 80`, `host 10.0.0.1`, a destination-port list, a protocol switch, in
//! testdata/socket/fuse_socket.txt) on a TCP/IPv4 packet that takes their
//! longest path, and the valid socket
//! cases of `testdata/test_bpf/classic.json` on their packet.

// A measurement tool: its one packet is a fixed-size array written at fixed
// offsets.
#![allow(clippy::indexing_slicing)]

use std::hint::black_box;
use std::process::ExitCode;

use bpfconv_benches::filters::testdata_dir;
use cbpf::Insn;

/// The tcpdump-shaped filters of testdata/socket/fuse_socket.txt
/// (`filter NAME`, then `tcpdump -dd` records).
fn tcpdump() -> Vec<(String, Vec<Insn>)> {
    let path = testdata_dir().join("../socket/fuse_socket.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.split("\nfilter ")
        .skip(1)
        .filter_map(|section| {
            let (name, records) = section.split_once('\n')?;
            Some((name.trim().to_string(), cbpf::text::parse(records.as_bytes(), cbpf::text::Format::C).ok()?))
        })
        .collect()
}

/// Ethernet + IPv4 (10.0.0.2 -> 10.0.0.1, TCP) + TCP to port 8080.
fn tcp_packet() -> Vec<u8> {
    let mut p = vec![0u8; 74];
    p[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    p[14] = 0x45;
    p[16..18].copy_from_slice(&60u16.to_be_bytes());
    p[23] = 6;
    p[26..30].copy_from_slice(&[10, 0, 0, 2]);
    p[30..34].copy_from_slice(&[10, 0, 0, 1]);
    p[34..36].copy_from_slice(&40000u16.to_be_bytes());
    p[36..38].copy_from_slice(&8080u16.to_be_bytes());
    p
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}

/// Every case: name, classic program, packet.
fn cases() -> Vec<(String, Vec<Insn>, Vec<u8>)> {
    let mut out: Vec<(String, Vec<Insn>, Vec<u8>)> =
        tcpdump().into_iter().map(|(n, p)| (format!("tcpdump_{n}"), p, tcp_packet())).collect();

    let path = testdata_dir().join("../test_bpf/classic.json");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    for t in json.get("tests").and_then(|t| t.as_array()).into_iter().flatten() {
        let flags: Vec<&str> =
            t.get("flags").and_then(|f| f.as_array()).into_iter().flatten().filter_map(|f| f.as_str()).collect();
        if t.get("expected_fail").and_then(|f| f.as_bool()) != Some(false)
            || flags.iter().any(|f| f.contains("NO_DATA"))
        {
            continue;
        }
        let insns: Vec<Insn> = t
            .get("insns")
            .and_then(|i| i.as_array())
            .into_iter()
            .flatten()
            .filter_map(|i| {
                let f: Vec<u64> = i.as_array()?.iter().filter_map(|v| v.as_u64()).collect();
                Some(Insn {
                    code: *f.first()? as u16,
                    jt: *f.get(1)? as u8,
                    jf: *f.get(2)? as u8,
                    k: *f.get(3)? as u32,
                })
            })
            .collect();
        let data = hex(t.get("data").and_then(|d| d.as_str()).unwrap_or(""));
        let name = t
            .get("name")
            .and_then(|n| n.as_str())
            .unwrap_or("?")
            .to_lowercase()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        out.push((format!("test_bpf_{name}"), insns, data));
    }
    out
}

struct Loaded {
    prog: ebpf::Program,
    vm: ebpf::Vm,
    ctx: ebpf::SkbContext,
}

fn load(insns: &[Insn], packet: &[u8], fused: bool) -> Result<Loaded, String> {
    let program = cbpf::validate(insns, cbpf::Mode::Socket).map_err(|e| e.to_string())?;
    let converted = convert::convert(&program, &convert::Options::default()).map_err(|e| e.to_string())?;
    let opts = ebpf::LoadOptions { no_superinstructions: !fused, ..ebpf::LoadOptions::default() };
    let prog = ebpf::Program::load(&converted.insns, &opts, &ebpf::Helpers::socket()).map_err(|e| e.to_string())?;
    let meta = ebpf::SkbMeta { protocol: 0x0800, ..ebpf::SkbMeta::default() };
    Ok(Loaded { prog, vm: ebpf::Vm::new(), ctx: ebpf::SkbContext::new(packet, &meta) })
}

#[inline(never)]
fn measure(l: &mut Loaded, runs: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..runs {
        acc ^= l.vm.run(black_box(&l.prog), ebpf::Input::Skb(black_box(&l.ctx))).unwrap_or(7);
    }
    acc
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let all = cases();
    let result = match args.as_slice() {
        [list] if list == "list" => {
            for (name, insns, packet) in &all {
                if let (Ok(mut f), Ok(mut p)) = (load(insns, packet, true), load(insns, packet, false)) {
                    let (a, b) = (measure(&mut f, 1), measure(&mut p, 1));
                    if a == b {
                        println!("{name} {} {}", f.prog.fused_chains(), p.vm.executed());
                    }
                }
            }
            Ok(())
        }
        [name, mode, runs] => (|| {
            let (_, insns, packet) = all.iter().find(|c| &c.0 == name).ok_or("no such case")?;
            let runs: u64 = runs.parse().map_err(|e| format!("{e}"))?;
            let mut l = load(insns, packet, mode == "fused")?;
            println!("{name} {mode} {}", measure(&mut l, runs));
            Ok(())
        })(),
        _ => Err("usage: fuse_socket list | fuse_socket CASE fused|plain RUNS".to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
