#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
use cbpf::{raw, validate, Mode};
use seccomp::fast::{Entry, FastFilter};
#[test]
fn dump() {
    for (name, nr) in [("long_jumps_large", 80u32), ("long_jumps_large", 0), ("long_jumps_large", 200), ("long_jumps_large_opt2", 80)] {
        let path = format!("{}/../../testdata/filters/{name}.bpf", env!("CARGO_MANIFEST_DIR"));
        let prog = validate(&raw::decode(&std::fs::read(path).unwrap()).unwrap(), Mode::Seccomp).unwrap();
        let fast = FastFilter::build(&prog).unwrap();
        match fast.entry(0xc000_003e, nr) {
            Entry::Residual(p) => {
                let text = cbpf::text::print_asm(p.original());
                let lines: Vec<&str> = text.lines().collect();
                eprintln!("== {name} nr {nr}: {} insns\n{}\n...\n{}", lines.len(), lines[..lines.len().min(40)].join("\n"), lines[lines.len().saturating_sub(8)..].join("\n"));
            }
            e => eprintln!("== {name} nr {nr}: {e:?}"),
        }
    }
    let path = format!("{}/../../testdata/filters/long_jumps_large.bpf", env!("CARGO_MANIFEST_DIR"));
    let prog = validate(&raw::decode(&std::fs::read(path).unwrap()).unwrap(), Mode::Seccomp).unwrap();
    let text = cbpf::text::print_asm(prog.original());
    eprintln!("ORIG\n{}", text.lines().take(60).collect::<Vec<_>>().join("\n"));
}
