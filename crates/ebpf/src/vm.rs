//! The front door: [`Program`] (a loaded program) and [`Vm`] (the reusable
//! run state), and the one place that picks the engine a run goes to
//! (regex-automata's `meta::strategy` does the same for its engines; the
//! engines know nothing of each other).
//!
//! [`Program::load`] runs the structural checks and pre-decoding of
//! [`crate::load`] (the general interpreter's form, always built), then
//! recognises the converted-seccomp subset (`crate::exec::seccomp::Subset`) and,
//! unless [`LoadOptions::no_superinstructions`], compiles it for the
//! dedicated executor. A run then goes to:
//!
//! - `crate::exec::seccomp` when the program has that executor, the input is a
//!   64-byte context and the step budget is at least the program length
//!   (its programs jump only forward, so a run executes at most `len`
//!   instructions and the budget cannot be hit): registers in locals,
//!   context words read straight from the array, no region tables, no
//!   budget checks;
//! - `crate::exec::general` otherwise.
//!
//! The plain model of the kernel's interpreter ([`crate::exec::plain`]) is an
//! engine of its own for cost comparisons, never picked here.
//!
//! A run allocates nothing.

use crate::abi::error::ExecError;
use crate::abi::helpers::Helpers;
use crate::abi::memory::{Input, Memory};
use crate::abi::region::{CTX_BASE, MAX_FRAMES, MEM_BASE, REGION_LIMIT, STACK_TOTAL};
use crate::exec::general::{self, Frame};
use crate::exec::seccomp::{SeccompProg, Subset};
use crate::isa::insn::Insn;
use crate::load::{self, Decoded, LoadError, LoadOptions};

/// Default step budget of a new [`Vm`].
pub const DEFAULT_STEP_BUDGET: u64 = 1 << 20;

/// A loaded, checked and pre-decoded program. Immutable; run it with
/// [`Vm::run`] as often as wanted, from any number of `Vm`s.
#[derive(Debug, Clone)]
pub struct Program {
    insns: Vec<Insn>,
    /// The general interpreter's form (always built: every input that is
    /// not a 64-byte context runs on it).
    pub(crate) decoded: Decoded,
    /// The program compiled for [`crate::exec::seccomp`], if it is in the
    /// converted-seccomp subset and superinstructions are on.
    pub(crate) seccomp: Option<Box<SeccompProg>>,
    /// Whether the program is inside the converted-seccomp subset
    /// (whether or not superinstructions are on).
    converted_seccomp: bool,
}

impl Program {
    /// Checks `insns` (see [`crate::load`] for every rule) and pre-decodes
    /// them. `helpers` resolves `call imm` helper ids; pass
    /// [`Helpers::default()`] for programs without helper calls.
    pub fn load(insns: &[Insn], opts: &LoadOptions, helpers: &Helpers) -> Result<Program, LoadError> {
        let decoded = load::decode(insns, opts, helpers)?;
        // Recognising the subset is cheap; compiling it (chains, links)
        // is done only where the executor will run.
        let subset = Subset::recognise(insns);
        let converted_seccomp = subset.is_some();
        let seccomp = match subset {
            Some(subset) if !opts.no_superinstructions => subset.compile().map(Box::new),
            _ => None,
        };
        Ok(Program { insns: insns.to_vec(), decoded, seccomp, converted_seccomp })
    }

    /// The instructions as given to [`Program::load`].
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Number of instruction slots.
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    /// Always false: [`Program::load`] refuses empty programs.
    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }

    /// Whether runs on a 64-byte context ([`Vm::run_seccomp`], or
    /// [`Vm::run`] with a 64-byte `Input::Ctx`) use the dedicated executor
    /// for converted seccomp filters (`crate::exec::seccomp`): true when the
    /// program stays inside the subset a converted seccomp filter is made
    /// of and superinstructions are on
    /// ([`LoadOptions::no_superinstructions`] forces the general path).
    pub fn has_seccomp_executor(&self) -> bool {
        self.seccomp.is_some()
    }

    /// Whether the program stays inside the subset of eBPF a converted
    /// seccomp filter is made of (`Subset::recognise`: A, TMP and X of
    /// `bpf_convert_filter()`, `r6 = r1` the only use of the context
    /// registers, 32-bit loads from `struct seccomp_data` after it on
    /// every path, 32-bit stack accesses in `fp-64..=fp-4` with every read
    /// after a write, forward jumps, no calls, `exit` last). The one
    /// recogniser of that subset: the dedicated executor and the rbpf
    /// adapter's unchecked backends both rely on it.
    pub fn is_converted_seccomp(&self) -> bool {
        self.converted_seccomp
    }

    /// Number of pcs whose op is a superinstruction of the general
    /// interpreter (a fused compare chain, a load-then-compare chain,
    /// `r0 = imm; exit`, or the converter's prologue).
    pub fn fused_chains(&self) -> usize {
        self.decoded.fused
    }

    /// The compare chains the seccomp executor runs for this program, for
    /// tests and debugging, or `None` when it has no executor (outside
    /// the subset, or loaded without superinstructions); the format is
    /// `crate::exec::seccomp::SeccompProg::chain_listing`'s.
    pub fn seccomp_chain_listing(&self) -> Option<String> {
        self.seccomp.as_deref().map(SeccompProg::chain_listing)
    }
}

/// Reusable interpreter state: the stack, the call frames and the step
/// budget. Create one per thread and run any number of programs on it; a run
/// performs no heap allocation.
#[derive(Debug, Clone)]
pub struct Vm {
    stack: Box<[u8]>,
    frames: [Frame; MAX_FRAMES],
    budget: u64,
    executed: u64,
}

impl Default for Vm {
    fn default() -> Self {
        Self::new()
    }
}

impl Vm {
    /// A VM with a zeroed stack and the [`DEFAULT_STEP_BUDGET`].
    pub fn new() -> Self {
        Vm {
            stack: vec![0u8; STACK_TOTAL].into_boxed_slice(),
            frames: [Frame::default(); MAX_FRAMES],
            budget: DEFAULT_STEP_BUDGET,
            executed: 0,
        }
    }

    /// Sets the most instructions a run may execute.
    pub fn set_step_budget(&mut self, budget: u64) -> &mut Self {
        self.budget = budget;
        self
    }

    /// The step budget.
    pub fn step_budget(&self) -> u64 {
        self.budget
    }

    /// Instructions executed by the last run that returned `Ok` (except
    /// runs of [`Vm::run_seccomp_uncounted`] on the seccomp executor,
    /// which leave it unchanged).
    pub fn executed(&self) -> u64 {
        self.executed
    }

    /// Runs `prog` on `input` and returns the whole 64-bit `r0` at the
    /// top-level `exit`. (The kernel's `bpf_prog_run()` returns its low 32
    /// bits; truncate if you mirror that.)
    pub fn run(&mut self, prog: &Program, input: Input<'_>) -> Result<u64, ExecError> {
        let (ctx, packet, user, skb, r1, r2): (&[u8], &[u8], &mut [u8], _, u64, u64) = match input {
            Input::None => (&[], &[], &mut [], None, 0, 0),
            Input::Ctx(c) => {
                if let (Some(fast), Ok(data)) = (self.seccomp_executor(prog), <&[u8; 64]>::try_from(c)) {
                    let (r0, steps) = fast.run(data)?;
                    self.executed = steps;
                    return Ok(r0);
                }
                (c, &[], &mut [], None, CTX_BASE, 0)
            }
            Input::Skb(s) => (s.ctx_bytes(), s.linear(), &mut [], Some(s), CTX_BASE, 0),
            Input::Memory(m) => {
                let len = m.len() as u64;
                (&[], &[], m, None, MEM_BASE, len)
            }
        };
        for len in [ctx.len(), packet.len(), user.len()] {
            if len >= REGION_LIMIT {
                return Err(ExecError::InputTooLarge { len });
            }
        }
        let mem = Memory::new(ctx, packet, &mut self.stack, user, skb);
        general::run(&prog.decoded, mem, [r1, r2], &mut self.frames, self.budget, &mut self.executed)
    }

    /// Seccomp entry point: runs `prog` on a `struct seccomp_data` and returns
    /// the low 32 bits of `r0`, as `bpf_prog_run()` does. (The same as
    /// `run(prog, Input::Ctx(data))`, without the checks a 64-byte context
    /// cannot fail.)
    #[inline]
    pub fn run_seccomp(&mut self, prog: &Program, data: &[u8; 64]) -> Result<u32, ExecError> {
        if let Some(fast) = self.seccomp_executor(prog) {
            let (r0, steps) = fast.run(data)?;
            self.executed = steps;
            return Ok(r0 as u32);
        }
        self.run_seccomp_general(prog, data)
    }

    /// [`Vm::run_seccomp`] for callers that do not need the executed
    /// instruction count: the same result, and on the seccomp executor
    /// (`crate::exec::seccomp`) a variant that does not count, so
    /// [`Vm::executed`] is left as it was (it is updated when the general
    /// interpreter runs the program). What a seccomp engine calls.
    #[inline]
    pub fn run_seccomp_uncounted(&mut self, prog: &Program, data: &[u8; 64]) -> Result<u32, ExecError> {
        if let Some(fast) = self.seccomp_executor(prog) {
            return fast.run_uncounted(data).map(|r0| r0 as u32);
        }
        self.run_seccomp_general(prog, data)
    }

    /// [`Vm::run_seccomp`] on the general interpreter, kept out of line so
    /// the seccomp executor's callers do not carry its frame.
    #[inline(never)]
    fn run_seccomp_general(&mut self, prog: &Program, data: &[u8; 64]) -> Result<u32, ExecError> {
        let mem = Memory::new(data, &[], &mut self.stack, &mut [], None);
        general::run(&prog.decoded, mem, [CTX_BASE, 0], &mut self.frames, self.budget, &mut self.executed)
            .map(|r0| r0 as u32)
    }
}

/// A program's converted-seccomp executor, chosen once for a [`Vm`]'s
/// budget ([`Vm::seccomp_runner`]): runs as [`Vm::run_seccomp_uncounted`]
/// does, without choosing the executor again on every call. What a timing
/// loop holds: the choice costs a chain of dependent loads (the program,
/// its executor, the budget) that a run of a short filter would otherwise
/// pay each time.
#[derive(Debug, Clone, Copy)]
pub struct SeccompRunner<'p> {
    prog: &'p SeccompProg,
}

impl SeccompRunner<'_> {
    /// [`Vm::run_seccomp_uncounted`] on the executor chosen.
    ///
    /// Mirrors `___bpf_prog_run()` in kernel/bpf/core.c (Linux 6.18), as
    /// the executor does.
    #[inline]
    pub fn run(&self, data: &[u8; 64]) -> Result<u32, ExecError> {
        self.prog.run_uncounted(data).map(|r0| r0 as u32)
    }
}

impl Vm {
    /// The executor [`Vm::run_seccomp_uncounted`] runs `prog` on with this
    /// budget, chosen now: `None` where it runs the general interpreter
    /// instead (no executor, or a budget below the program's length).
    pub fn seccomp_runner<'p>(&self, prog: &'p Program) -> Option<SeccompRunner<'p>> {
        self.seccomp_executor(prog).map(|prog| SeccompRunner { prog })
    }

    /// The program's seccomp executor ([`crate::exec::seccomp`]), if it has
    /// one and the step budget cannot be hit by it: its programs jump only
    /// forward, so a run executes at most `prog.len()` instructions.
    #[inline(always)]
    fn seccomp_executor<'p>(&self, prog: &'p Program) -> Option<&'p SeccompProg> {
        prog.seccomp.as_deref().filter(|_| prog.len() as u64 <= self.budget)
    }
}
