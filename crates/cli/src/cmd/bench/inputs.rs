//! What `bench` times on a seccomp filter: one input per syscall the
//! filter names (per arch it names), or `--vectors`, or `--nr`; plus the
//! deepest input the analysis finds; each with the classic interpreter's
//! answer and both path lengths.

use engine::Prepared;

use super::{Input, MAX_INPUTS};
use crate::cmd::run::open_input;
use crate::fail::{Failure, Result};

/// `arch:name` of a syscall (`x86_64:read`, `x32:read`, `aarch64:#500`).
pub(super) fn input_name(arch: u32, nr: u32) -> String {
    let mut a = seccomp::Arch::from_audit_arch(arch);
    // x32's table numbers its calls with bit 30 set, as x86_64 sees them.
    if a == seccomp::Arch::X86_64 && seccomp::syscalls::name(seccomp::Arch::X32, nr).is_some() {
        a = seccomp::Arch::X32;
    }
    let arch_name = a.name().map_or_else(|| format!("{arch:#x}"), str::to_string);
    match seccomp::syscalls::name(a, nr) {
        Some(n) => format!("{arch_name}:{n}"),
        None => format!("{arch_name}:#{}", nr as i32),
    }
}

/// The default inputs: for every arch the filter compares `arch` against
/// (x86_64 when none), one input per number it compares `nr` against
/// (`seccomp::analysis::compared_nrs`, the tests that define its classes
/// of numbers), arguments and instruction pointer 0.
pub(super) fn named_inputs(prog: &cbpf::Program) -> Result<Vec<cbpf::SeccompData>> {
    use seccomp::analysis::{compared_arches, compared_nrs};
    let mut arches = compared_arches(prog).map_err(Failure::rejected)?;
    if arches.is_empty() {
        arches.push(cbpf::uapi::audit::AUDIT_ARCH_X86_64);
    }
    let mut out = Vec::new();
    for arch in arches {
        for nr in compared_nrs(prog, arch).map_err(Failure::rejected)? {
            out.push(cbpf::SeccompData { nr: nr as i32, arch, instruction_pointer: 0, args: [0; 6] });
            if out.len() >= MAX_INPUTS {
                return Ok(out);
            }
        }
    }
    if out.is_empty() {
        // A filter that never looks at `nr`: one input stands for all.
        out.push(cbpf::SeccompData {
            nr: 0,
            arch: cbpf::uapi::audit::AUDIT_ARCH_X86_64,
            instruction_pointer: 0,
            args: [0; 6],
        });
    }
    Ok(out)
}

/// The inputs of `--vectors`, named `line N`.
pub(super) fn vector_inputs(path: &str, filter_from_stdin: bool) -> Result<Vec<(String, cbpf::SeccompData)>> {
    use std::io::BufRead;
    if path == "-" && filter_from_stdin {
        return Err(Failure::usage("the filter and --vectors cannot both be read from stdin (`-`)"));
    }
    let mut out = Vec::new();
    for (i, line) in open_input(path)?.lines().enumerate() {
        let line = line.map_err(crate::fail::io(format!("reading {path}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let v = engine::vectors::parse_line(line.trim_start_matches('\u{feff}'), i + 1)
            .map_err(|e| Failure::rejected(format!("{path}: {e}")))?;
        if out.len() >= MAX_INPUTS {
            return Err(Failure::rejected(format!("{path}: more than {MAX_INPUTS} vectors")));
        }
        out.push((format!("line {}", i + 1), v.data));
    }
    if out.is_empty() {
        return Err(Failure::rejected(format!("{path}: no vectors")));
    }
    Ok(out)
}

/// Path lengths and the classic interpreter's answer for a seccomp input.
/// `interp` is built once for all inputs: building one costs work that
/// grows with the program (its compare chains and trees), so one per input
/// would make a filter naming thousands of syscalls quadratic.
pub(super) fn seccomp_input(
    interp: &cbpf::Interp,
    vm: &mut ebpf::Vm,
    ebpf: &ebpf::Program,
    name: String,
    data: cbpf::SeccompData,
) -> Result<Input> {
    let bytes = data.to_bytes();
    let mut cbpf_path = 0u64;
    let ret = interp.trace_seccomp(&bytes, |_| cbpf_path += 1)?;
    vm.run_seccomp(ebpf, &bytes)?;
    Ok(Input { name, data, packet: Vec::new(), ret, cbpf_path, ebpf_path: vm.executed(), optimized_path: None })
}

/// The default inputs give every argument 0, which may stop a syscall's
/// argument checks early: the input of longest classic path over every
/// feasible path of their (arch, nr) classes
/// ([`seccomp::analysis::deepest_input_in`]), when it is longer than each
/// of `inputs`. Past the analysis budget the named inputs stand, and
/// stderr says so.
pub(super) fn deepest_arguments(prog: &cbpf::Program, inputs: &[Input]) -> Option<cbpf::SeccompData> {
    let classes = inputs.iter().map(|i| (i.data.arch, i.data.nr as u32));
    let longest = inputs.iter().map(|i| i.cbpf_path).max().unwrap_or(0);
    match seccomp::analysis::deepest_input_in(prog, classes, &mut Default::default()) {
        Ok(Some(found)) if found.path > longest => Some(found.data),
        Ok(_) => None,
        Err(e) => {
            eprintln!("note: no search for a deeper input: {e}; the deepest input is the deepest named one");
            None
        }
    }
}

/// `bpfconv optimize`'s output for the filter (proved equal, as that
/// command writes it) and, on each input, the classic instructions it
/// runs: the tree beside the filter as written. `None` (with a note on
/// stderr) when there is no output to show.
pub(super) fn optimized_paths(prepared: &Prepared, inputs: &mut [Input]) -> Option<usize> {
    let out = match optimize::optimize(prepared.program(), &Default::default()) {
        Ok(out) if out.stats.kept_input.is_none() => out,
        Ok(out) => {
            eprintln!("note: no optimised paths: optimize keeps the input ({})", out.stats.kept_input?);
            return None;
        }
        Err(e) => {
            eprintln!("note: no optimised paths: {e}");
            return None;
        }
    };
    let interp = cbpf::Interp::new(&out.program);
    for input in inputs.iter_mut() {
        let mut path = 0u64;
        let ret = interp.trace_seccomp(&input.data.to_bytes(), |_| path += 1).ok()?;
        // Proved equal; a difference here would be a bug worth hiding nothing.
        if ret != input.ret {
            eprintln!("note: the optimised filter returns {ret:#010x} on {}", input.name);
            return None;
        }
        input.optimized_path = Some(path);
    }
    Some(out.program.len())
}
