//! Writes every blow-up shape of `fuzz_replay::blowup` as raw `sock_filter`
//! files, for measuring commands on them by hand:
//!
//! ```sh
//! cargo run -p fuzz-replay --example blowup -- DIR [SIZE ...]
//! ```
//!
//! Sizes default to the issue-13 findings' (28 130 230 1601 4096).

use std::process::ExitCode;

use fuzz_replay::blowup::Shape;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: blowup DIR [SIZE ...]");
        return ExitCode::from(2);
    };
    let mut sizes: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![28, 130, 230, 1601, 4096];
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: creating {dir}: {e}");
        return ExitCode::FAILURE;
    }
    for n in sizes {
        for shape in Shape::all(n) {
            let insns = shape.build();
            let path = format!("{dir}/{}.bpf", shape.name());
            if let Err(e) = std::fs::write(&path, cbpf::raw::encode(&insns)) {
                eprintln!("error: writing {path}: {e}");
                return ExitCode::FAILURE;
            }
            println!("{path}: {} instructions", insns.len());
        }
    }
    ExitCode::SUCCESS
}
