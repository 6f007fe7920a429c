//! The engines compared in every table, behind one small trait.
//!
//! [`ENGINES`] is the list of columns. Adding an engine is one line there:
//! its name (as `bpfconv run --engine` spells it) and a function that
//! prepares a [`Filter`] for it, or says why it cannot.

use engine::rbpf_adapter::{Backend, RbpfSeccomp};

use crate::filters::Filter;

/// One filter prepared for one engine: evaluates the filter on a 64-byte
/// `struct seccomp_data`. Everything expensive happened in the preparation;
/// a run allocates nothing (except where the engine itself does).
///
/// The context is `&mut` only because rbpf's API takes it so; converted
/// seccomp filters never write it (their stores all go to the stack), so
/// callers reuse one buffer without copying it per run.
pub trait Runner {
    /// The filter's 32-bit `SECCOMP_RET_*` result, or why the engine failed.
    fn run(&mut self, data: &mut [u8; 64]) -> Result<u32, String>;
}

/// Prepares a filter for an engine; `Err` says why the engine cannot run it
/// (shown as "n/a" with that reason).
pub type Prepare = for<'f> fn(&'f Filter) -> Result<Box<dyn Runner + 'f>, String>;

/// A user-space engine column.
#[derive(Clone, Copy)]
pub struct Engine {
    /// Column and JSON name (one of the `bpfconv run --engine` names).
    pub name: &'static str,
    /// What the column measures, for the report's legend.
    pub about: &'static str,
    /// Prepares a filter.
    pub prepare: Prepare,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Every user-space engine, in column order. The real kernel is a separate
/// column ([`KERNEL`]): it times whole system calls, not evaluations.
pub const ENGINES: &[Engine] = &[
    Engine { name: "cbpf", about: "our classic interpreter (cbpf::Interp)", prepare: prepare_cbpf },
    Engine { name: "ebpf", about: "convert::convert, then our eBPF interpreter (ebpf::Vm)", prepare: prepare_ebpf },
    Engine { name: "cbpf-plain", about: "the pre-3.15 kernel's classic interpreter modelled: sk_run_filter(), one switch per instruction, seccomp_bpf_load() calls (cbpf::plain)", prepare: prepare_cbpf_plain },
    Engine { name: "ebpf-plain", about: "the kernel's eBPF interpreter modelled on the converted program: ___bpf_prog_run(), one indirect jump per instruction (ebpf::plain)", prepare: prepare_ebpf_plain },
    Engine { name: "rbpf", about: "rbpf 0.4 interpreter on the converted program", prepare: prepare_rbpf },
    Engine { name: "rbpf-jit", about: "rbpf 0.4 x86-64 JIT (where it fits its 4 KiB page)", prepare: prepare_rbpf_jit },
    Engine { name: "rbpf-cranelift", about: "rbpf 0.4 cranelift backend", prepare: prepare_rbpf_cranelift },
    Engine { name: "fast", about: "seccomp::fast, the filter specialised per (arch, syscall): a table lookup plus any residual argument checks", prepare: prepare_fast },
];

/// Name of the real-kernel column.
pub const KERNEL: &str = "kernel";

/// Name of the running kernel's JIT column: the filter alone, through
/// `BPF_PROG_TEST_RUN` ([`engine::kernel_jit`]), between the in-process
/// engines and [`KERNEL`].
pub const KERNEL_JIT: &str = "kernel-jit";

/// Looks an engine up by name.
pub fn by_name(name: &str) -> Option<&'static Engine> {
    ENGINES.iter().find(|e| e.name == name)
}

/// Every engine's preparation returns the closure that evaluates its
/// prepared form: any such closure is a [`Runner`].
impl<F: FnMut(&mut [u8; 64]) -> Result<u32, String>> Runner for F {
    #[inline]
    fn run(&mut self, data: &mut [u8; 64]) -> Result<u32, String> {
        self(data)
    }
}

fn prepare_cbpf(filter: &Filter) -> Result<Box<dyn Runner + '_>, String> {
    let interp = &filter.interp;
    Ok(Box::new(move |data: &mut [u8; 64]| interp.run_seccomp(data).map_err(|e| e.to_string())))
}

/// The executor chosen once, as `bpfconv bench` does
/// ([`ebpf::Vm::seccomp_runner`]); the general interpreter where there is
/// none.
fn prepare_ebpf(filter: &Filter) -> Result<Box<dyn Runner + '_>, String> {
    let (program, mut vm) = (&filter.ebpf_program, ebpf::Vm::new());
    if let Some(runner) = vm.seccomp_runner(program) {
        return Ok(Box::new(move |data: &mut [u8; 64]| runner.run(data).map_err(|e| e.to_string())));
    }
    Ok(Box::new(move |data: &mut [u8; 64]| vm.run_seccomp_uncounted(program, data).map_err(|e| e.to_string())))
}

fn prepare_rbpf_backend(filter: &Filter, backend: Backend) -> Result<Box<dyn Runner + '_>, String> {
    let vm = RbpfSeccomp::new(&filter.ebpf_bytes, &filter.ebpf, backend).map_err(|e| e.to_string())?;
    Ok(Box::new(move |data: &mut [u8; 64]| vm.run(data).map_err(|e| e.to_string())))
}

fn prepare_rbpf(filter: &Filter) -> Result<Box<dyn Runner + '_>, String> {
    prepare_rbpf_backend(filter, Backend::Interpreter)
}

fn prepare_rbpf_jit(filter: &Filter) -> Result<Box<dyn Runner + '_>, String> {
    prepare_rbpf_backend(filter, Backend::Jit)
}

fn prepare_rbpf_cranelift(filter: &Filter) -> Result<Box<dyn Runner + '_>, String> {
    prepare_rbpf_backend(filter, Backend::Cranelift)
}

fn prepare_fast(filter: &Filter) -> Result<Box<dyn Runner + '_>, String> {
    let fast = seccomp::fast::FastFilter::build(&filter.program).map_err(|e| e.to_string())?;
    Ok(Box::new(move |data: &mut [u8; 64]| Ok(fast.eval_bytes(data))))
}

fn prepare_cbpf_plain(filter: &Filter) -> Result<Box<dyn Runner + '_>, String> {
    let plain = cbpf::plain::PlainInterp::new(&filter.program);
    Ok(Box::new(move |data: &mut [u8; 64]| plain.run_seccomp(data).map_err(|e| e.to_string())))
}

fn prepare_ebpf_plain(filter: &Filter) -> Result<Box<dyn Runner + '_>, String> {
    let plain = ebpf::plain::PlainProgram::new(&filter.ebpf).map_err(|e| e.to_string())?;
    Ok(Box::new(move |data: &mut [u8; 64]| plain.run_seccomp(data).map_err(|e| e.to_string())))
}
