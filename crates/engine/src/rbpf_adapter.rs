//! rbpf 0.4 (interpreter, x86 JIT, cranelift backend) as a seccomp engine.
//!
//! rbpf is our second eBPF engine and an oracle for converted seccomp filters.
//! It is only offered for seccomp programs: its legacy packet loads read the
//! packet without bounds checks, and its JIT does no memory checks at all, so we
//! JIT only programs whose every memory access is proven in bounds here.

use std::panic::{catch_unwind, AssertUnwindSafe};

use ebpf::op::{AluOp, Op};
use ebpf::Insn;

/// Which rbpf backend runs the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `EbpfVmRaw::execute_program`.
    Interpreter,
    /// rbpf's x86-64 JIT (one 4 KiB page of code).
    Jit,
    /// rbpf's cranelift backend.
    Cranelift,
}

/// Why rbpf cannot run a program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RbpfError {
    #[error("rbpf rejected the program: {0}")]
    Load(String),
    #[error("rbpf failed at run time: {0}")]
    Run(String),
    #[error("rbpf's x86 JIT has one 4096-byte page of code; this program may need up to {bound} bytes")]
    JitTooLarge { bound: usize },
    #[error("rbpf's {backend} panicked while compiling: {message}")]
    CompilerPanic { backend: &'static str, message: String },
    #[error("not a converted seccomp program (outside ebpf's converted-seccomp subset); rbpf's compiled backends are only used on those")]
    NotSeccompShaped,
}

/// rbpf's x86 JIT writes into a single 4096-byte page and panics past it.
pub const JIT_PAGE: usize = 4096;

/// An upper bound on the bytes rbpf 0.4's x86 JIT emits for `insns`
/// (prologue and epilogue included), from the encodings its emitter uses:
/// a 64-bit compare with imm32 is 7 bytes and a `jcc rel32` 6, loads and
/// stores at most 9 with SIB, mul/div/mod sequences under 64, and so on.
pub fn jit_size_bound(insns: &[Insn]) -> usize {
    const PROLOGUE_EPILOGUE: usize = 96;
    PROLOGUE_EPILOGUE
        + insns
            .iter()
            .map(|i| match Op::decode(*i, None) {
                Ok(Op::Exit) => 1,
                Ok(Op::Ja { .. } | Op::Gotol { .. }) => 5,
                Ok(Op::Call { .. } | Op::Callx { .. }) => 64,
                Ok(Op::Jmp { .. }) => 14,
                Ok(Op::Alu { op: AluOp::Mul | AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod, .. }) => 64,
                Ok(Op::Alu { .. } | Op::Neg { .. } | Op::MovSx { .. } | Op::End { .. }) => 12,
                _ => 16,
            })
            .sum::<usize>()
}

/// Checks that a program is a converted seccomp filter as
/// [`ebpf::Program::is_converted_seccomp`] recognises it: it touches the
/// 64-byte `seccomp_data` only through r6 (= r1) and the stack only through
/// r10, at in-bounds 32-bit offsets, and makes no calls. This is what makes
/// running it under rbpf's unchecked JIT sound.
pub fn check_seccomp_shaped(insns: &[Insn]) -> Result<(), RbpfError> {
    // No helpers: a program with calls is not one.
    let loaded = ebpf::Program::load(insns, &ebpf::LoadOptions::default(), &ebpf::Helpers::new()).ok();
    if loaded.is_some_and(|p| p.is_converted_seccomp()) {
        Ok(())
    } else {
        Err(RbpfError::NotSeccompShaped)
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// A converted seccomp program loaded into rbpf.
pub struct RbpfSeccomp<'a> {
    vm: rbpf::EbpfVmRaw<'a>,
    backend: Backend,
}

impl std::fmt::Debug for RbpfSeccomp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RbpfSeccomp").field("backend", &self.backend).finish_non_exhaustive()
    }
}

impl<'a> RbpfSeccomp<'a> {
    /// Loads `code` (raw `struct bpf_insn` bytes of `insns`) into rbpf.
    ///
    /// Compiled backends only take programs that pass [`check_seccomp_shaped`];
    /// the x86 JIT also needs [`jit_size_bound`] to fit its page. Panics inside
    /// rbpf's compilers are caught and returned as errors.
    pub fn new(code: &'a [u8], insns: &[Insn], backend: Backend) -> Result<Self, RbpfError> {
        let mut vm = rbpf::EbpfVmRaw::new(Some(code)).map_err(|e| RbpfError::Load(e.to_string()))?;
        match backend {
            Backend::Interpreter => {}
            Backend::Jit => {
                check_seccomp_shaped(insns)?;
                let bound = jit_size_bound(insns);
                if bound > JIT_PAGE {
                    return Err(RbpfError::JitTooLarge { bound });
                }
                catch_unwind(AssertUnwindSafe(|| vm.jit_compile()))
                    .map_err(|p| RbpfError::CompilerPanic { backend: "x86 JIT", message: panic_message(&*p) })?
                    .map_err(|e| RbpfError::Load(e.to_string()))?;
            }
            Backend::Cranelift => {
                check_seccomp_shaped(insns)?;
                catch_unwind(AssertUnwindSafe(|| vm.cranelift_compile()))
                    .map_err(|p| RbpfError::CompilerPanic {
                        backend: "cranelift backend",
                        message: panic_message(&*p),
                    })?
                    .map_err(|e| RbpfError::Load(e.to_string()))?;
            }
        }
        Ok(RbpfSeccomp { vm, backend })
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Runs the program on a 64-byte `struct seccomp_data`; the result is
    /// truncated to 32 bits as the kernel's `bpf_prog_run` wrapper does.
    pub fn run(&self, data: &mut [u8; 64]) -> Result<u32, RbpfError> {
        let r = match self.backend {
            Backend::Interpreter => self.vm.execute_program(data),
            #[allow(unsafe_code)]
            // SAFETY: `new` only JIT-compiles programs that pass
            // `check_seccomp_shaped`: every context load is a 32-bit read at
            // offsets 0..=60 of r6 after `r6 = r1` (= `data`, 64 bytes) on
            // every path, every stack access is inside `fp-64..=fp-4` of the
            // 512-byte stack, there are no calls, and r6 and r1 are written
            // by nothing else; `data` lives for the whole call.
            Backend::Jit => unsafe { self.vm.execute_program_jit(data) },
            Backend::Cranelift => self.vm.execute_program_cranelift(data),
        };
        r.map(|v| v as u32).map_err(|e| RbpfError::Run(e.to_string()))
    }
}
