//! `bpfconv dump`.

use clap::Args;

use crate::fail::{io, Result};
use crate::out::{out, outln, Out};

#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Process whose seccomp filters to read (needs CAP_SYS_ADMIN).
    #[arg(long)]
    pid: i32,
    /// Directory to write the filters into as raw files (`<pid>-<n>.bpf`, oldest first);
    /// without it, print them as seccomp-tools style listings.
    #[arg(short, long)]
    output: Option<String>,
}

/// `bpfconv dump`.
pub fn dump(args: &DumpArgs) -> Result<i32> {
    let filters = kernel::dump_filters(args.pid)?;
    if filters.is_empty() {
        eprintln!("process {} has no seccomp filters", args.pid);
        return Ok(0);
    }
    let mut out = Out::stdout();
    for (n, f) in filters.iter().enumerate() {
        match &args.output {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(io(format!("creating {dir}")))?;
                let path = format!("{dir}/{}-{n}.bpf", args.pid);
                std::fs::write(&path, cbpf::raw::encode(f)).map_err(io(format!("writing {path}")))?;
                outln!(out, "{path}: {} instructions", f.len())?;
            }
            None => {
                outln!(out, "# filter {n} of {} (oldest first), {} instructions", filters.len(), f.len())?;
                out!(out, "{}", seccomp::disasm::disasm(f, Default::default()))?;
            }
        }
    }
    out.finish()?;
    Ok(0)
}
