//! Every engine behind one interface.
//!
//! ```text
//! cbpf::Program ─► Prepared (validated + converted + raw eBPF bytes)
//!                     └─► SeccompEngine::new(kind, &prepared) ─► eval / eval_batch
//!                     └─► SocketEngine::new(kind, &prepared)  ─► run(&Skb) / eval(&Skb)
//! ```
//!
//! Engines (names as `bpfconv run --engine` takes them): `cbpf` (the classic
//! interpreter), `ebpf` (the converted program on our interpreter), `rbpf`,
//! `rbpf-jit`, `rbpf-cranelift` (rbpf 0.4's interpreter and compilers on the
//! converted program), `kernel` (the running kernel: seccomp filters in a forked child, socket
//! filters on an `AF_UNIX` socketpair, see [`kernel::socket`]) and `fast`
//! (the per-syscall specialised engine, seccomp only), and the two plain
//! interpreters that model the kernel's of each era, seccomp only:
//! `cbpf-plain` (3.14's `sk_run_filter()`, [`cbpf::plain`]) and `ebpf-plain`
//! (`___bpf_prog_run()` on the converted program, [`ebpf::plain`]), and
//! `kernel-jit` (the running kernel's JIT through `BPF_PROG_TEST_RUN`:
//! a seccomp filter's loadable conversion behind an XDP harness, for every
//! arch and number, [`kernel_jit`]; a socket filter converted for an XDP,
//! tc or socket hook, [`hook_jit`]).

pub mod hook_jit;
pub mod kernel_jit;
pub mod rbpf_adapter;
pub mod vectors;

use std::fmt;
use std::str::FromStr;

use cbpf::{Mode, SeccompData, Skb};
use rbpf_adapter::{Backend, RbpfError, RbpfSeccomp};

/// The engines `bpfconv run --engine` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineKind {
    Cbpf,
    Ebpf,
    Rbpf,
    RbpfJit,
    RbpfCranelift,
    Kernel,
    Fast,
    CbpfPlain,
    EbpfPlain,
    KernelJit,
}

impl EngineKind {
    /// Every engine, in the order tables print them.
    pub const ALL: [EngineKind; 10] = [
        EngineKind::Cbpf,
        EngineKind::Ebpf,
        EngineKind::CbpfPlain,
        EngineKind::EbpfPlain,
        EngineKind::Rbpf,
        EngineKind::RbpfJit,
        EngineKind::RbpfCranelift,
        EngineKind::Fast,
        EngineKind::KernelJit,
        EngineKind::Kernel,
    ];

    /// The engine's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Cbpf => "cbpf",
            EngineKind::Ebpf => "ebpf",
            EngineKind::Rbpf => "rbpf",
            EngineKind::RbpfJit => "rbpf-jit",
            EngineKind::RbpfCranelift => "rbpf-cranelift",
            EngineKind::Kernel => "kernel",
            EngineKind::Fast => "fast",
            EngineKind::CbpfPlain => "cbpf-plain",
            EngineKind::EbpfPlain => "ebpf-plain",
            EngineKind::KernelJit => "kernel-jit",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EngineKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| EngineError::UnknownEngine { name: s.to_string() })
    }
}

/// Every engine's name, in [`EngineKind::ALL`] order, comma-separated.
fn engine_names() -> String {
    EngineKind::ALL.map(EngineKind::name).join(", ")
}

/// Why an engine could not load or run a program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    #[error("unknown engine `{name}` (expected one of {})", engine_names())]
    UnknownEngine { name: String },
    #[error("engine {engine} does not run {mode} filters")]
    WrongMode { engine: EngineKind, mode: Mode },
    #[error("engine {engine} is not available: {why}")]
    Unavailable { engine: EngineKind, why: String },
    #[error(transparent)]
    Convert(#[from] convert::ConvertError),
    #[error("ebpf: {0}")]
    EbpfLoad(#[from] ebpf::LoadError),
    #[error("ebpf: {0}")]
    EbpfExec(#[from] ebpf::ExecError),
    #[error("cbpf: {0}")]
    CbpfExec(#[from] cbpf::ExecError),
    #[error(transparent)]
    Rbpf(#[from] RbpfError),
    #[error("kernel: {0}")]
    Kernel(#[from] kernel::KernelError),
    #[error(transparent)]
    Loadable(#[from] convert::LoadableError),
    #[error("kernel-jit: {0}")]
    Bpf(#[from] kernel::bpf::BpfError),
    #[error("ebpf-plain: {0}")]
    EbpfPlain(#[from] ebpf::plain::PlainError),
    #[error(transparent)]
    Hook(#[from] hook::HookError),
}

/// What an engine says about one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The filter's return value.
    Action(u32),
    /// The engine cannot observe this input (e.g. the kernel cannot produce a
    /// foreign arch); the reason says why.
    NotObservable(String),
}

/// A validated program with its conversion, ready for any engine.
#[derive(Debug, Clone)]
pub struct Prepared {
    program: cbpf::Program,
    converted: convert::Converted,
    bytes: Vec<u8>,
}

impl Prepared {
    /// Converts `program` as the kernel would (`bpf_migrate_filter`).
    pub fn new(program: cbpf::Program) -> Result<Self, EngineError> {
        let converted = convert::convert(&program, &convert::Options::default())?;
        let bytes = ebpf::encode(&converted.insns);
        Ok(Prepared { program, converted, bytes })
    }

    /// The validated classic program.
    pub fn program(&self) -> &cbpf::Program {
        &self.program
    }

    /// The kernel's conversion of it.
    pub fn converted(&self) -> &convert::Converted {
        &self.converted
    }

    /// The converted program as raw `struct bpf_insn` bytes.
    pub fn ebpf_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// Loads the converted program into our eBPF interpreter with the helpers a
/// converted program may call.
pub fn load_ebpf(converted: &convert::Converted) -> Result<ebpf::Program, EngineError> {
    Ok(ebpf::Program::load(&converted.insns, &ebpf::LoadOptions::default(), &convert::socket_ctx::socket_helpers())?)
}

/// A seccomp engine with its program loaded.
#[derive(Debug)]
pub enum SeccompEngine<'p> {
    Cbpf(cbpf::Interp),
    Ebpf { prog: Box<ebpf::Program>, vm: Box<ebpf::Vm> },
    Rbpf(Box<RbpfSeccomp<'p>>),
    Kernel { insns: Vec<cbpf::Insn> },
    Fast(Box<seccomp::fast::FastFilter>),
    CbpfPlain(cbpf::plain::PlainInterp),
    EbpfPlain(ebpf::plain::PlainProgram),
    KernelJit(Box<kernel_jit::KernelJit>),
}

impl<'p> SeccompEngine<'p> {
    /// Loads `prepared` (a seccomp-mode program) into engine `kind`.
    pub fn new(kind: EngineKind, prepared: &'p Prepared) -> Result<Self, EngineError> {
        let mode = prepared.program.mode();
        if mode != Mode::Seccomp {
            return Err(EngineError::WrongMode { engine: kind, mode });
        }
        let insns = &prepared.converted.insns;
        Ok(match kind {
            EngineKind::Cbpf => SeccompEngine::Cbpf(cbpf::Interp::new(&prepared.program)),
            EngineKind::Ebpf => {
                SeccompEngine::Ebpf { prog: Box::new(load_ebpf(&prepared.converted)?), vm: Box::new(ebpf::Vm::new()) }
            }
            EngineKind::Rbpf => {
                SeccompEngine::Rbpf(Box::new(RbpfSeccomp::new(&prepared.bytes, insns, Backend::Interpreter)?))
            }
            EngineKind::RbpfJit => {
                SeccompEngine::Rbpf(Box::new(RbpfSeccomp::new(&prepared.bytes, insns, Backend::Jit)?))
            }
            EngineKind::RbpfCranelift => {
                SeccompEngine::Rbpf(Box::new(RbpfSeccomp::new(&prepared.bytes, insns, Backend::Cranelift)?))
            }
            EngineKind::Kernel => {
                kernel::seccomp_available()?;
                SeccompEngine::Kernel { insns: prepared.program.original().to_vec() }
            }
            EngineKind::Fast => SeccompEngine::Fast(Box::new(
                seccomp::fast::FastFilter::build(&prepared.program)
                    .map_err(|e| EngineError::Unavailable { engine: kind, why: e.to_string() })?,
            )),
            EngineKind::CbpfPlain => SeccompEngine::CbpfPlain(cbpf::plain::PlainInterp::new(&prepared.program)),
            EngineKind::EbpfPlain => SeccompEngine::EbpfPlain(ebpf::plain::PlainProgram::new(insns)?),
            EngineKind::KernelJit => SeccompEngine::KernelJit(Box::new(kernel_jit::KernelJit::new(prepared)?)),
        })
    }

    /// Evaluates one `struct seccomp_data` (as bytes) on an in-process
    /// engine, without allocating: what a timing loop calls. The kernel
    /// engine is [`EngineError::Unavailable`] here; `kernel-jit` makes one
    /// `BPF_PROG_TEST_RUN` (a system call: time it with
    /// [`kernel_jit::Clock`] instead).
    ///
    /// The context is `&mut` only because rbpf's API takes it so; converted
    /// seccomp filters never write it.
    #[inline]
    pub fn eval_bytes(&mut self, data: &mut [u8; 64]) -> Result<u32, EngineError> {
        match self {
            SeccompEngine::Cbpf(interp) => Ok(interp.run_seccomp(data)?),
            SeccompEngine::Ebpf { prog, vm } => Ok(vm.run_seccomp_uncounted(prog, data)?),
            SeccompEngine::Rbpf(r) => Ok(r.run(data)?),
            SeccompEngine::Fast(fast) => Ok(fast.eval_bytes(data)),
            SeccompEngine::CbpfPlain(p) => Ok(p.run_seccomp(data)?),
            SeccompEngine::EbpfPlain(p) => Ok(p.run_seccomp(data)?),
            SeccompEngine::KernelJit(k) => k.eval_packet(data),
            SeccompEngine::Kernel { .. } => Err(EngineError::Unavailable {
                engine: EngineKind::Kernel,
                why: "the kernel engine forks per batch (SeccompEngine::eval_batch)".to_string(),
            }),
        }
    }

    /// The timing loop of `bpfconv bench`: evaluates each of `datas`, in
    /// order, `rounds` times over, results hidden from the optimiser and
    /// dropped (check them first with [`SeccompEngine::eval_bytes`]). The
    /// engine is chosen once, outside the loop (each engine's loop is a
    /// function of its own, `spin`), so the loop costs one
    /// counter and one slice step per evaluation on every engine alike, and
    /// allocates nothing. The kernel engine is [`EngineError::Unavailable`];
    /// `kernel-jit` makes one system call per evaluation (its timing is the
    /// kernel's own: [`kernel_jit::Clock`]).
    pub fn run_batch(&mut self, datas: &mut [[u8; 64]], rounds: u64) -> Result<(), EngineError> {
        match self {
            SeccompEngine::Cbpf(interp) => spin(datas, rounds, |d: &mut [u8; 64]| interp.run_seccomp(d)),
            // The executor chosen once, as the engine is.
            SeccompEngine::Ebpf { prog, vm } => match vm.seccomp_runner(prog) {
                Some(runner) => spin(datas, rounds, |d: &mut [u8; 64]| runner.run(d)),
                None => spin(datas, rounds, |d: &mut [u8; 64]| vm.run_seccomp_uncounted(prog, d)),
            },
            SeccompEngine::Rbpf(r) => spin(datas, rounds, |d: &mut [u8; 64]| r.run(d)),
            SeccompEngine::Fast(fast) => spin(datas, rounds, |d: &mut [u8; 64]| fast.eval_bytes(d)),
            SeccompEngine::CbpfPlain(p) => spin(datas, rounds, |d: &mut [u8; 64]| p.run_seccomp(d)),
            SeccompEngine::EbpfPlain(p) => spin(datas, rounds, |d: &mut [u8; 64]| p.run_seccomp(d)),
            SeccompEngine::KernelJit(k) => spin(datas, rounds, |d: &mut [u8; 64]| k.eval_packet(d)),
            SeccompEngine::Kernel { .. } => return self.eval_bytes(&mut [0; 64]).map(|_| ()),
        }
        Ok(())
    }

    /// Evaluates one input. The kernel engine forks a child per call: use
    /// [`SeccompEngine::eval_batch`] for many inputs. The input is presented
    /// as the kernel of its arch lays it out ([`SeccompData::in_kernel_order`]:
    /// a big-endian arch's 64-bit fields high half first), so a filter
    /// exported for s390x reads its arguments as it does there.
    pub fn eval(&mut self, data: &SeccompData) -> Result<Outcome, EngineError> {
        let data = &data.in_kernel_order();
        match self {
            SeccompEngine::Cbpf(interp) => Ok(Outcome::Action(interp.run_seccomp(&data.to_bytes())?)),
            // The engine reports only the action: the executor's variant
            // without a step count is the fast one.
            SeccompEngine::Ebpf { prog, vm } => Ok(Outcome::Action(vm.run_seccomp_uncounted(prog, &data.to_bytes())?)),
            SeccompEngine::Rbpf(r) => Ok(Outcome::Action(r.run(&mut data.to_bytes())?)),
            SeccompEngine::Fast(fast) => Ok(Outcome::Action(fast.eval(data))),
            SeccompEngine::CbpfPlain(p) => Ok(Outcome::Action(p.run_seccomp(&data.to_bytes())?)),
            SeccompEngine::EbpfPlain(p) => Ok(Outcome::Action(p.run_seccomp(&data.to_bytes())?)),
            SeccompEngine::KernelJit(k) => Ok(Outcome::Action(k.eval_packet(&data.to_bytes())?)),
            SeccompEngine::Kernel { .. } => {
                let mut out = self.eval_batch(std::slice::from_ref(data))?;
                Ok(out.pop().unwrap_or_else(|| Outcome::NotObservable("no result".to_string())))
            }
        }
    }

    /// Evaluates every input, in order.
    pub fn eval_batch(&mut self, inputs: &[SeccompData]) -> Result<Vec<Outcome>, EngineError> {
        if let SeccompEngine::Kernel { insns } = self {
            let inputs: Vec<kernel::Input> = inputs
                .iter()
                .map(|d| kernel::Input { arch: d.arch, nr: d.nr, args: d.args, ip: d.instruction_pointer })
                .collect();
            return Ok(kernel::run_vectors(insns, &inputs)?
                .into_iter()
                .map(|o| match o {
                    kernel::Outcome::Action(a) => Outcome::Action(a),
                    kernel::Outcome::NotObservable(why) => Outcome::NotObservable(why.to_string()),
                })
                .collect());
        }
        inputs.iter().map(|d| self.eval(d)).collect()
    }
}

/// The eBPF interpreter's view of a classic [`Skb`]: the same packet and
/// metadata in our documented context layout ([`ebpf::skb`]).
pub use convert::socket_ctx::skb_meta;

/// What a socket engine says about one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketOutcome {
    /// The filter's return value (the in-process engines).
    Ret(u32),
    /// What the running kernel did with the packet sent as a datagram
    /// ([`kernel::socket::Delivery`]): dropped, or kept with a length that
    /// is the return value only when shorter than the packet.
    Delivered(kernel::socket::Delivery),
    /// The engine cannot reproduce this packet's verdict; the reason says why.
    NotObservable(String),
}

impl SocketOutcome {
    /// Whether a filter returning `ret` gives this outcome (`NotObservable`
    /// agrees with nothing).
    pub fn agrees_with(&self, ret: u32) -> bool {
        match self {
            SocketOutcome::Ret(r) => *r == ret,
            SocketOutcome::Delivered(d) => d.agrees_with(ret),
            SocketOutcome::NotObservable(_) => false,
        }
    }

    /// Whether the packet was accepted (kept, in any length); `None` when
    /// not observable or not sent.
    pub fn accepted(&self) -> Option<bool> {
        match self {
            SocketOutcome::Ret(r) => Some(*r != 0),
            SocketOutcome::Delivered(kernel::socket::Delivery::Dropped) => Some(false),
            SocketOutcome::Delivered(kernel::socket::Delivery::Kept { .. }) => Some(true),
            SocketOutcome::Delivered(kernel::socket::Delivery::NotSent { .. }) | SocketOutcome::NotObservable(_) => {
                None
            }
        }
    }
}

impl fmt::Display for SocketOutcome {
    /// `N` for a known return value (0 = dropped); `>=N` when the kernel
    /// kept the whole N-byte packet (the filter returned N or more);
    /// `not-observable: why`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use kernel::socket::Delivery;
        match self {
            SocketOutcome::Ret(r) => write!(f, "{r}"),
            SocketOutcome::Delivered(Delivery::Dropped) => f.write_str("0"),
            SocketOutcome::Delivered(Delivery::Kept { kept, len }) if kept < len => write!(f, "{kept}"),
            SocketOutcome::Delivered(Delivery::Kept { len, .. }) => write!(f, ">={}", (*len).max(1)),
            SocketOutcome::Delivered(Delivery::NotSent { errno }) => {
                write!(f, "not-observable: the datagram was not sent: {}", std::io::Error::from_raw_os_error(*errno))
            }
            SocketOutcome::NotObservable(why) => write!(f, "not-observable: {why}"),
        }
    }
}

/// A socket-filter engine with its program loaded (`cbpf`, `ebpf` or
/// `kernel`).
#[derive(Debug)]
pub enum SocketEngine {
    // Boxed as the eBPF variant's parts are: the enum stays small.
    Cbpf(Box<cbpf::Interp>),
    Ebpf {
        prog: Box<ebpf::Program>,
        vm: Box<ebpf::Vm>,
    },
    /// The running kernel: the filter attached to an `AF_UNIX` datagram
    /// socketpair ([`kernel::socket`] documents the skb it sees there).
    Kernel {
        filter: kernel::socket::SocketFilter,
        program: Box<cbpf::Program>,
    },
    /// The running kernel's verifier and JIT: the filter converted for a
    /// hook and run by `BPF_PROG_TEST_RUN` ([`hook_jit`]).
    KernelJit(Box<hook_jit::HookJit>),
}

impl SocketEngine {
    /// Loads `prepared` (a socket-mode program) into engine `kind`. The
    /// kernel engine attaches the original instructions with
    /// `SO_ATTACH_FILTER`; its refusal is [`kernel::KernelError::FilterRejected`]
    /// with the kernel's errno.
    pub fn new(kind: EngineKind, prepared: &Prepared) -> Result<Self, EngineError> {
        SocketEngine::for_hook(kind, prepared, hook::Target::Xdp)
    }

    /// [`SocketEngine::new`], with the hook `kernel-jit` converts the
    /// filter for (the other engines ignore it).
    pub fn for_hook(kind: EngineKind, prepared: &Prepared, target: hook::Target) -> Result<Self, EngineError> {
        let mode = prepared.program.mode();
        if mode != Mode::Socket {
            return Err(EngineError::WrongMode { engine: kind, mode });
        }
        match kind {
            EngineKind::Cbpf => Ok(SocketEngine::Cbpf(Box::new(cbpf::Interp::new(&prepared.program)))),
            EngineKind::Ebpf => Ok(SocketEngine::Ebpf {
                prog: Box::new(load_ebpf(&prepared.converted)?),
                vm: Box::new(ebpf::Vm::new()),
            }),
            EngineKind::Kernel => Ok(SocketEngine::Kernel {
                filter: kernel::socket::SocketFilter::attach(prepared.program.original())?,
                program: Box::new(prepared.program.clone()),
            }),
            EngineKind::KernelJit => {
                Ok(SocketEngine::KernelJit(Box::new(hook_jit::HookJit::new(&prepared.program, target)?)))
            }
            other => Err(EngineError::WrongMode { engine: other, mode }),
        }
    }

    /// Runs the filter on one packet; the result is the number of bytes to
    /// keep (0 = drop). The kernel engine cannot tell the return value
    /// (only what it kept of the packet): use [`SocketEngine::eval`].
    pub fn run(&mut self, skb: &Skb<'_>) -> Result<u32, EngineError> {
        match self {
            SocketEngine::Cbpf(interp) => Ok(interp.run_socket(skb)?),
            SocketEngine::Ebpf { prog, vm } => {
                let mut ctx = ebpf::SkbContext::new(skb.data, &skb_meta(skb));
                if let Some(wire) = skb.wire_len {
                    ctx = ctx.with_wire_len(wire);
                }
                Ok(vm.run(prog, ebpf::Input::Skb(&ctx))? as u32)
            }
            SocketEngine::Kernel { .. } => Err(EngineError::Unavailable {
                engine: EngineKind::Kernel,
                why: "the kernel reports the length it kept, not the return value (SocketEngine::eval)".to_string(),
            }),
            SocketEngine::KernelJit(jit) => match jit.eval(skb)? {
                SocketOutcome::Ret(r) => Ok(r),
                other => Err(EngineError::Unavailable { engine: EngineKind::KernelJit, why: other.to_string() }),
            },
        }
    }

    /// Runs the filter on one packet, on any engine. The kernel engine
    /// answers [`SocketOutcome::NotObservable`] when the verdict depends on
    /// skb metadata the `AF_UNIX` path cannot carry
    /// ([`kernel::socket::unobservable`]).
    pub fn eval(&mut self, skb: &Skb<'_>) -> Result<SocketOutcome, EngineError> {
        match self {
            SocketEngine::Kernel { filter, program } => {
                if let Some(why) = kernel::socket::unobservable(program, skb) {
                    return Ok(SocketOutcome::NotObservable(why));
                }
                Ok(SocketOutcome::Delivered(filter.deliver(skb.data)?))
            }
            SocketEngine::KernelJit(jit) => jit.eval(skb),
            _ => Ok(SocketOutcome::Ret(self.run(skb)?)),
        }
    }

    /// The timing loop of `bpfconv bench --mode socket`: runs the packets
    /// `range` of `batch`, in order, `rounds` times over, results hidden
    /// from the optimiser and dropped (check them first with
    /// [`SocketEngine::run`]). The packets were made ready once
    /// ([`SocketBatch::new`]), so the loop allocates nothing. The kernel
    /// engines are [`EngineError::Unavailable`].
    pub fn run_batch(
        &mut self,
        batch: &SocketBatch<'_>,
        range: std::ops::Range<usize>,
        rounds: u64,
    ) -> Result<(), EngineError> {
        use std::hint::black_box;
        match self {
            SocketEngine::Cbpf(interp) => {
                let skbs = batch.skbs.get(range).unwrap_or_default();
                for _ in 0..rounds {
                    for skb in skbs {
                        let _ = black_box(interp.run_socket(black_box(skb)));
                    }
                }
            }
            SocketEngine::Ebpf { prog, vm } => {
                let ctxs = batch.ctxs.get(range).unwrap_or_default();
                for _ in 0..rounds {
                    for ctx in ctxs {
                        let _ = black_box(vm.run(prog, ebpf::Input::Skb(black_box(ctx))));
                    }
                }
            }
            SocketEngine::Kernel { .. } => {
                return Err(EngineError::Unavailable {
                    engine: EngineKind::Kernel,
                    why: "the kernel engine sends datagrams: it has no timing loop".to_string(),
                })
            }
            SocketEngine::KernelJit(_) => {
                return Err(EngineError::Unavailable {
                    engine: EngineKind::KernelJit,
                    why: "kernel-jit is timed by the kernel itself (bench's kernel-jit columns)".to_string(),
                })
            }
        }
        Ok(())
    }
}

/// Packets made ready once for [`SocketEngine::run_batch`]: the classic
/// socket buffers and the eBPF contexts built from them.
#[derive(Debug)]
pub struct SocketBatch<'a> {
    skbs: Vec<Skb<'a>>,
    ctxs: Vec<ebpf::SkbContext>,
}

impl<'a> SocketBatch<'a> {
    /// Makes `skbs` ready for every engine.
    pub fn new(skbs: Vec<Skb<'a>>) -> Self {
        let ctxs = skbs
            .iter()
            .map(|skb| {
                let ctx = ebpf::SkbContext::new(skb.data, &skb_meta(skb));
                match skb.wire_len {
                    Some(wire) => ctx.with_wire_len(wire),
                    None => ctx,
                }
            })
            .collect();
        SocketBatch { skbs, ctxs }
    }

    /// Number of packets.
    pub fn len(&self) -> usize {
        self.skbs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skbs.is_empty()
    }
}

/// [`SeccompEngine::run_batch`]'s loop around a call that does no work:
/// `rounds` passes over `datas`, each input handed to a function that
/// reads its first word and returns it (never inlined, as no engine's
/// entry is). What the loop and a call cost here, the part of every
/// in-process engine's figure that is not the engine's: `bench` reports it
/// beside them (`call_floor_ns`), since the `kernel-jit` figure has its
/// harness and call subtracted.
pub fn call_floor(datas: &mut [[u8; 64]], rounds: u64) {
    // Through a pointer the optimiser cannot see through, or the call is
    // inlined into the loop whatever `first_word` says (measured): the
    // engines' entries are calls through the GOT, indirect as well.
    let call: fn(&mut [u8; 64]) -> u32 = std::hint::black_box(first_word);
    spin(datas, rounds, call);
}

/// The input's first word (`nr`): the least a function of the input can
/// do and still read it.
#[inline(never)]
fn first_word(data: &mut [u8; 64]) -> u32 {
    let [b0, b1, b2, b3, ..] = *data;
    u32::from_ne_bytes([b0, b1, b2, b3])
}

/// [`SeccompEngine::run_batch`]'s loop for one engine: a function of its
/// own per engine (one per closure type, never inlined), so that no
/// engine's code sits in another's loop. (Measured: with every loop in
/// one `run_batch`, a change to the eBPF executor alone made `fast` 6-27%
/// slower on the deepest inputs of sshd_like, s390x and docker_like_opt2.
/// The loops are still as sensitive to where the linker puts them as any
/// hot loop: on this machine a build with every loop 64-byte aligned read
/// `fast` 12-16% faster again on those inputs.)
#[inline(never)]
fn spin<R: Settled>(datas: &mut [[u8; 64]], rounds: u64, mut run: impl FnMut(&mut [u8; 64]) -> R) {
    use std::hint::black_box;
    for _ in 0..rounds {
        for d in datas.iter_mut() {
            let _ = black_box(run(black_box(d)).settled());
        }
    }
}

/// An engine's answer as [`spin`] hides it: the value a caller reads, the
/// `u32` or nothing, not the whole `Result`. Hiding the `Result` would
/// copy its error type's bytes on every evaluation, work no caller does
/// and unequal between engines (eBPF's `Result` is 40 bytes, cBPF's 8:
/// measured, 1.35 of the eBPF engine's 5.5 ns on a one-instruction
/// filter).
trait Settled {
    fn settled(self) -> Option<u32>;
}

impl Settled for u32 {
    #[inline(always)]
    fn settled(self) -> Option<u32> {
        Some(self)
    }
}

impl<E> Settled for Result<u32, E> {
    #[inline(always)]
    fn settled(self) -> Option<u32> {
        self.ok()
    }
}
