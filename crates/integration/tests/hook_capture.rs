#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Issue 26: every testdata socket program (the converter filetests'
//! `socket_*` programs and testdata/socket/tcpdump.txt) and every real
//! `tcpdump -dd` program (testdata/tcpdump), converted for xdp, tc and
//! socket, loaded through the running kernel's verifier and run by
//! `BPF_PROG_TEST_RUN` on every packet of the 3000-packet capture: each
//! result equal to the classic interpreter's on the skb the test run
//! builds (`mark` set through the context, a different one per packet),
//! or the program refused with the typed error for an ancillary load the
//! hook lacks. Also: the verdict form (`XDP_PASS`/`XDP_DROP`,
//! `TC_ACT_OK`/`TC_ACT_SHOT`) on every packet, and the guards each packet
//! runs against the one-per-basic-block scheme.
//!
//! Without the privilege to load programs each test skips through
//! `test_data::require` (a failure under `CI=true`).

use std::path::PathBuf;

use engine::hook_jit::HookJit;
use engine::{EngineError, SocketOutcome};
use hook::{HookError, Options, Target, Verdict};
use test_data::require::{self, Need};
use test_kit::{capture, socket};

mod common;

fn bpf_here(test: &str) -> bool {
    require::have(test, Need::Bpf, kernel::bpf::available()).is_some()
}

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Every socket program of testdata, by name, validated.
fn programs() -> Vec<(String, cbpf::Program)> {
    let mut out = Vec::new();
    for (name, insns) in socket::socket_filters().unwrap() {
        // A few filetests are programs the validator refuses on purpose.
        if let Ok(p) = cbpf::validate(&insns, cbpf::Mode::Socket) {
            out.push((name, p));
        }
    }
    for path in common::files_with_extension(&testdata().join("tcpdump"), "dd") {
        let text = std::fs::read(&path).unwrap();
        let (_, insns) = cbpf::text::parse_auto(&text).unwrap();
        let name = format!("tcpdump/{}", path.file_stem().unwrap().to_string_lossy());
        out.push((name, cbpf::validate(&insns, cbpf::Mode::Socket).unwrap()));
    }
    out
}

/// The mark packet `i` carries in its test run's context.
fn mark(i: usize) -> u32 {
    (i as u32).wrapping_mul(0x9e37_79b9) >> (i % 32)
}

#[derive(Debug, Default)]
struct Tally {
    loaded: usize,
    refused: usize,
    equal: usize,
    not_comparable: usize,
}

#[test]
fn every_program_on_every_packet_of_the_capture() {
    if !bpf_here("every_program_on_every_packet_of_the_capture") {
        return;
    }
    let packets = capture::packets();
    let programs = programs();
    assert!(programs.len() >= 70, "{} programs", programs.len());
    let mut failures = Vec::new();
    let mut report = String::new();
    for target in Target::ALL {
        let mut t = Tally::default();
        for (name, program) in &programs {
            let jit = match HookJit::new(program, target) {
                Ok(j) => j,
                Err(EngineError::Hook(e @ HookError::NoValue { .. })) => {
                    // The typed error, and only for a load the table says
                    // the hook lacks.
                    let HookError::NoValue { load, target: t2, .. } = &e else { unreachable!() };
                    assert_eq!(*t2, target);
                    assert!(load.source(target).is_none(), "{name}: {e}");
                    t.refused += 1;
                    continue;
                }
                Err(e) => {
                    failures.push(format!("{target} {name}: {e}"));
                    continue;
                }
            };
            t.loaded += 1;
            let interp = cbpf::Interp::new(program);
            for (i, p) in packets.iter().enumerate() {
                let skb = jit.kernel_skb(&p.data, mark(i));
                match jit.eval(&skb).unwrap() {
                    SocketOutcome::Ret(got) => {
                        let want = interp.run_socket(&skb).unwrap();
                        if got == want {
                            t.equal += 1;
                        } else {
                            failures.push(format!("{target} {name} packet {i}: cbpf {want}, kernel {got}"));
                        }
                    }
                    SocketOutcome::NotObservable(why) => {
                        let refused = kernel::bpf::test_run_refuses(engine::hook_jit::prog_type(target), &p.data);
                        assert!(
                            refused.is_some() || why.contains("SKF_AD_CPU") || why.contains("SKF_AD_RANDOM"),
                            "{target} {name} packet {i}: {why}"
                        );
                        t.not_comparable += 1;
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        let line = format!(
            "{target}: {} programs loaded, {} refused with the typed error; {} (program, packet) pairs equal, \
             {} not comparable (frames the test run refuses, CPU or random reads)\n",
            t.loaded, t.refused, t.equal, t.not_comparable
        );
        eprint!("{line}");
        report.push_str(&line);
        assert!(t.loaded >= 60, "{line}");
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(30)].join("\n"));
}

/// The default verdicts: accept for a non-zero classic result, drop for 0.
#[test]
fn verdicts_on_every_packet() {
    if !bpf_here("verdicts_on_every_packet") {
        return;
    }
    let packets = capture::packets();
    let mut failures = Vec::new();
    let mut accepted = 0;
    for target in [Target::Xdp, Target::Tc] {
        for (name, program) in programs().iter().filter(|(n, _)| n.starts_with("tcpdump")) {
            let hooked = match hook::convert(program, &Options::new(target)) {
                Ok(h) => h,
                Err(HookError::NoValue { .. }) => continue,
                Err(e) => panic!("{name}: {e}"),
            };
            assert_eq!(hooked.options.verdict, Verdict::Action);
            let prog = kernel::bpf::Prog::load(engine::hook_jit::prog_type(target), &hooked.insns)
                .unwrap_or_else(|e| panic!("{target} {name}: {e}"));
            let interp = cbpf::Interp::new(program);
            let ty = engine::hook_jit::prog_type(target);
            for (i, p) in
                packets.iter().enumerate().filter(|(_, p)| kernel::bpf::test_run_refuses(ty, &p.data).is_none())
            {
                let skb = match target {
                    Target::Xdp => hook::ancillary::xdp_skb(&p.data, 1, 0),
                    _ => kernel::bpf::test_run_skb(&p.data, 0),
                };
                let keep = interp.run_socket(&skb).unwrap() != 0;
                accepted += usize::from(keep);
                let got = prog.retval(&p.data).unwrap();
                if got != target.verdict(keep) as u32 {
                    failures.push(format!("{target} {name} packet {i}: {got}, want {}", target.verdict(keep)));
                }
            }
        }
    }
    assert!(accepted > 1000, "{accepted}");
    assert!(failures.is_empty(), "{}", failures[..failures.len().min(30)].join("\n"));
}

/// The guards a packet runs: never more than the one-per-block scheme's,
/// fewer on most programs (counted on the capture, direct-access targets).
#[test]
fn hoisted_guards_against_one_per_block() {
    let packets = capture::packets();
    let (mut ours, mut per_block, mut runs, mut fewer, mut programs_n) = (0usize, 0usize, 0usize, 0usize, 0usize);
    // The kernel's own conversion checks every packet load (for reference).
    let mut per_load = 0usize;
    // The same over the real tcpdump programs alone: (ours, per block, per load, programs).
    let mut tcpdump = (0usize, 0usize, 0usize, 0usize);
    let mut lines = Vec::new();
    for (name, program) in programs() {
        let Ok(hooked) = hook::convert(&program, &Options::new(Target::Xdp)) else { continue };
        let plan = hooked.guards.unwrap();
        let interp = cbpf::Interp::new(&program);
        let loads: Vec<bool> = program
            .insns()
            .iter()
            .map(|i| i.op().is_some_and(|op| hook::analysis::access(op) != hook::analysis::Access::None))
            .collect();
        let (mut o, mut b, mut l) = (0, 0, 0);
        for p in &packets {
            let skb = hook::ancillary::xdp_skb(&p.data, 1, 0);
            let mut path = Vec::new();
            interp.trace_socket(&skb, |s| path.push(s.pc.0)).unwrap();
            l += path.iter().filter(|&&pc| loads[pc]).count();
            let (x, y) = (plan.executed(&path, p.data.len() as u32), plan.per_block(&path, p.data.len() as u32));
            assert!(x <= y, "{name}: {x} guards, per-block {y}");
            o += x;
            b += y;
        }
        if b > 0 {
            programs_n += 1;
            fewer += usize::from(o < b);
        }
        ours += o;
        per_block += b;
        runs += packets.len();
        per_load += l;
        if name.starts_with("tcpdump/") {
            tcpdump = (tcpdump.0 + o, tcpdump.1 + b, tcpdump.2 + l, tcpdump.3 + 1);
            lines.push(format!("{name}: {:.2} vs {:.2}", o as f64 / 3000.0, b as f64 / 3000.0));
        }
    }
    eprintln!(
        "guards per packet: {:.3} hoisted vs {:.3} one per block, {:.3} one per load ({} programs that load packet bytes, fewer on {fewer})\n{}",
        ours as f64 / runs as f64,
        per_block as f64 / runs as f64,
        per_load as f64 / runs as f64,
        programs_n,
        lines.join("\n")
    );
    let n = (tcpdump.3 * packets.len()) as f64;
    eprintln!(
        "the {} tcpdump programs: {:.3} hoisted vs {:.3} one per block, {:.3} one per load",
        tcpdump.3,
        tcpdump.0 as f64 / n,
        tcpdump.1 as f64 / n,
        tcpdump.2 as f64 / n
    );
    assert!(fewer * 2 > programs_n, "fewer guards on {fewer} of {programs_n} programs");
}
