//! Fixed-workload driver for instruction counting under
//! `valgrind --tool=callgrind` (stable where wall-clock time on a shared
//! machine is not). Not a criterion bench: `cargo bench --bench
//! cbpf_interp_count` runs a token workload.
//!
//! `COUNT=<filter>:<cbpf|rbpf>:<deepest|all>:<passes>` makes that many
//! passes over the vector set (one call per vector) after loading, and
//! prints the number of vectors; run it twice with different pass counts
//! and divide the difference in instructions by the difference in calls to
//! get instructions per call. Also prints the wall-clock time per call to
//! stderr.

use std::hint::black_box;

use support::{executed, load};

mod support;

/// One cbpf call as criterion's `b.iter` closure makes it, kept out of the
/// counting loop as criterion's routine is: the count includes everything
/// the call does (setup, teardown), as the criterion time does.
#[inline(never)]
fn run_cbpf(interp: &cbpf::Interp, data: &[u8; 64]) -> u32 {
    interp.run_seccomp(data).unwrap_or(0)
}

fn main() {
    let spec = std::env::var("COUNT").unwrap_or_else(|_| "seed_fast:cbpf:deepest:1".into());
    let parts: Vec<&str> = spec.split(':').collect();
    let &[name, engine, set, passes] = parts.as_slice() else {
        eprintln!("COUNT=<filter>:<cbpf|rbpf>:<deepest|all>:<passes>");
        std::process::exit(2);
    };
    let rounds: usize = passes.parse().unwrap_or(0);
    let case = load(name).unwrap_or_else(|e| {
        eprintln!("{name}: {e}");
        std::process::exit(1)
    });
    let mut vectors: Vec<[u8; 64]> = case.vectors.iter().map(|(v, _)| *v).collect();
    if set == "deepest" {
        let deepest = vectors.iter().max_by_key(|v| executed(&case.interp, v)).copied().unwrap_or([0; 64]);
        vectors = vec![deepest];
    }
    let rbpf = rbpf::EbpfVmRaw::new(Some(&case.ebpf_bytes)).unwrap_or_else(|e| {
        eprintln!("{name}: {e}");
        std::process::exit(1)
    });
    // Both loops have the same shape, so their own cost cancels out of
    // the cbpf / rbpf comparison as well as out of the difference of runs.
    let mut acc = 0u64;
    println!("{}", vectors.len());
    let started = std::time::Instant::now();
    if engine == "cbpf" {
        for _ in 0..rounds {
            for v in &vectors {
                acc ^= u64::from(run_cbpf(&case.interp, black_box(v)));
            }
        }
    } else {
        for _ in 0..rounds {
            for v in vectors.iter_mut() {
                acc ^= rbpf.execute_program(black_box(v)).unwrap_or(0);
            }
        }
    }
    black_box(acc);
    // Wall-clock time per call, for quick A/B runs outside valgrind.
    let calls = rounds * vectors.len();
    eprintln!("{:.2} ns/call", started.elapsed().as_nanos() as f64 / calls.max(1) as f64);
}
