//! Classic BPF (seccomp and socket filters) to eBPF, exactly as Linux 6.18's
//! `bpf_convert_filter()` builds it, with kernel-exact validation,
//! interpreters for both forms, the running kernel as an engine and seccomp
//! analysis.
//!
//! ```text
//!  raw bytes ─┐
//!  bpf_asm,   ├─► cbpf::text::parse ─► cbpf::validate ─► cbpf::Program ─► convert::convert ─► eBPF (convert::Converted)
//!  C, -ddd  ──┘       (Vec<Insn>)      (seccomp(2) or        │                                      │
//!                                      SO_ATTACH_FILTER)     ├─► cbpf::Interp (classic)             ├─► ebpf::Vm (our interpreter)
//!                                                            ├─► kernel (the running kernel)        └─► engine: rbpf interpreter / JITs
//!                                                            ├─► seccomp::fast (per-syscall engine)
//!                                                            └─► seccomp::analysis (constant action per syscall,
//!                                                                explain, audit) and seccomp::cache (the kernel's bitmap)
//! ```
//!
//! This crate only re-exports; each stage is its own crate, usable alone:
//!
//! | module | package | what |
//! |---|---|---|
//! | [`cbpf`] | `bpfconv-cbpf` | `struct sock_filter`, raw and text formats, the kernel's validation, the classic interpreters |
//! | [`ebpf`] | `bpfconv-ebpf` | `struct bpf_insn`, load-time checks, listings, assembler/disassembler, the eBPF interpreter |
//! | [`convert`](mod@convert) | `bpfconv-convert` | `bpf_convert_filter()` instruction for instruction, the pc map, side-by-side listings |
//! | [`hook`] | `bpfconv-hook` | classic socket filters as XDP, tc and socket programs the verifier accepts, and as fragments of larger programs |
//! | [`seccomp`] | `bpfconv-seccomp` | actions, arches, syscall tables, seccomp-tools style listings, analysis, the action cache, the fast engine |
//! | `equiv` | `bpfconv-equiv` | are two filters (or stacks) equal on every `seccomp_data`: a proof, counterexamples, or undecided within stated budgets |
//! | `optimize` | `bpfconv-optimize` | a seccomp filter rewritten to dispatch on arch and nr in O(log n) range compares, proved equal before it is returned |
//! | `policy` | `bpfconv-policy` | a seccomp filter read back as its policy (readable rules per action, the OCI `linux.seccomp` profile: `decompile`), and profiles (OCI, Docker, seccompiler) compiled to proven filters |
//! | `engine` | `bpfconv-engine` | every engine behind one interface (cbpf, ebpf, cbpf-plain, ebpf-plain, rbpf, rbpf-jit, rbpf-cranelift, kernel, fast, kernel-jit) |
//! | `timing` | `bpfconv-timing` | timing statistics and SVG cost charts (`bpfconv bench`, the benchmark tables) |
//! | [`chain`] | `bpfconv-chain` | the compare-chain core both fast interpreters build their superinstructions from |
//! | [`record`] | `bpfconv-record` | the 8-byte record both instruction sets are stored as, and the framing of raw bytes into records |
//! | [`native`] | `bpfconv-native` | decision trees over `struct seccomp_data` as x86-64 code behind a safe call: the fast engine's argument trees |
//! | `kernel` | `bpfconv-kernel` | the running kernel as a seccomp engine, filter dumps from live processes (x86_64 Linux only) |
//!
//! The `bpfconv` command-line tool is the `bpfconv-cli` package.
//!
//! # Which type to hold
//!
//! | you have | hold | made by | then |
//! |---|---|---|---|
//! | bytes or text of a classic program | `Vec<`[`Insn`]`>` | [`parse`] (any [`Format`]), [`cbpf::raw::decode`] | [`validate`] |
//! | a program the kernel would accept | [`Program`] (`cbpf::Program`) | [`validate`] with a [`Mode`]: the only way to make one | everything below takes `&Program` |
//! | a program to run many times, classically | [`cbpf::Interp`] | [`cbpf::Interp::new`] (pre-decodes once) | `run_seccomp` / `run_socket`, nothing allocated per run |
//! | the kernel's eBPF for it | [`Converted`] (`.insns`, `.pc_map`) | [`convert()`] | [`ebpf::Program::load`] |
//! | eBPF to run | [`ebpf::Program`] and one [`ebpf::Vm`] per thread | [`ebpf::Program::load`] (checks, pre-decodes, picks the engine) | `Vm::run` / `Vm::run_seccomp` |
//! | a seccomp filter to analyse | `&Program` | — | [`seccomp::analysis`], [`seccomp::cache`], [`seccomp::fast::FastFilter`]; a stack of them: [`seccomp::stack`] |
//! | any engine by name (feature `engines`) | `engine::Prepared`, `engine::SeccompEngine` | `Prepared::new(program)` | `SeccompEngine::new(kind, &prepared)` |
//! | two filters to compare (feature `equiv`) | `equiv::Side` | `Side::single(&a)` | `equiv::check` |
//!
//! # Untrusted input
//!
//! Every reader, check and analysis here takes hostile input: a filter
//! from a process, a file from a user, bytes from a fuzzer.
//!
//! - No panic on any input, no read out of bounds: the crates deny
//!   `unwrap`, `expect`, `panic!` and unchecked indexing outside tests
//!   (clippy), and every failure is a typed error naming where (`pc`,
//!   `line:col`), one `#[non_exhaustive]` enum per phase.
//! - Sizes are the kernel's: at most 4096 classic instructions
//!   (`BPF_MAXINSNS`), checked by [`validate`] before anything else runs;
//!   eBPF programs at most [`ebpf::load::MAX_INSNS`] slots. The C reader
//!   limits nesting to 256 and macro expansion to a work budget.
//! - Runs are bounded: classic jumps only go forward; eBPF runs have a step
//!   budget ([`ebpf::Vm::set_step_budget`]); every memory access is checked
//!   against the run's regions.
//! - Analyses have global budgets and say which one they hit:
//!   `seccomp::analysis::Budget` (steps, explained paths, conditions,
//!   expression nodes; `AnalysisError::Budget`), the fast engine's build
//!   budget (falling back, exactly, to residual programs), `equiv::Limits`
//!   (steps, solver conflicts, clauses; past them "undecided", never a
//!   wrong answer), `optimize`'s residual size. On a filter of at most 4096
//!   instructions, the defaults keep each call to seconds and a few hundred
//!   MB.
//! - Code made at run time is the fast engine's argument trees only, as
//!   [`native`] encodes them from checked trees (reads inside the 64-byte
//!   input, jumps only to earlier nodes, at most
//!   [`native::MAX_CODE_BYTES`]), never from input bytes; mapped writable,
//!   then executable, never both.
//! - The `bpfconv` tool adds a 16 MiB cap on every input file and streams
//!   `--vectors`.
//!
//! # Features
//!
//! All on by default; without them (`default-features = false`) the
//! converter, the hook targets, both instruction sets and seccomp's
//! analysis remain, and none of rbpf, cranelift, batsat or plotters is built.
//!
//! | feature | adds | brings in |
//! |---|---|---|
//! | `engines` | [`engine`] (and `kernel`) | rbpf, its cranelift JIT |
//! | `equiv` | `equiv` | batsat |
//! | `optimize` | `optimize` (and `equiv`) | batsat |
//! | `policy` | `policy` (and `optimize`) | batsat, serde_json |
//! | `timing` | `timing` | plotters (SVG only) |
//! | `kernel` | `kernel` (x86_64 Linux) | libc |
//!
//! The examples below use the default features.
//!
//! # Parse, validate, convert
//!
//! ```
//! use bpfconv::{convert, parse, validate, Format, Mode};
//!
//! let text = b"ld [4]\n\
//!              jne #0xc000003e, kill\n\
//!              ld [0]\n\
//!              jeq #39, allow\n\
//!              ret #0x00050001\n\
//!              allow: ret #0x7fff0000\n\
//!              kill: ret #0\n";
//! let insns = parse(text, Format::Asm)?;
//! // The checks seccomp(2) makes (SO_ATTACH_FILTER's with Mode::Socket).
//! let prog = validate(&insns, Mode::Seccomp)?;
//! let ebpf = convert(&prog, &bpfconv::convert::Options::default())?;
//! // Where each classic instruction starts in the eBPF program.
//! assert_eq!(ebpf.pc_map.addrs().len(), prog.len());
//! // The classic program and its eBPF translation, side by side.
//! println!("{}", bpfconv::convert::side_by_side(&prog, &ebpf));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Run both forms and compare
//!
//! ```
//! use bpfconv::{convert, parse, validate, Format, Mode, SeccompData};
//! use bpfconv::ebpf::{Helpers, LoadOptions, Vm};
//!
//! let text = b"ld [0]\njeq #39, allow\nret #0x00050001\nallow: ret #0x7fff0000\n";
//! let prog = validate(&parse(text, Format::Asm)?, Mode::Seccomp)?;
//! let classic = bpfconv::cbpf::Interp::new(&prog);
//!
//! let converted = convert(&prog, &bpfconv::convert::Options::default())?;
//! let loaded = bpfconv::ebpf::Program::load(&converted.insns, &LoadOptions::default(), &Helpers::new())?;
//! let mut vm = Vm::new(); // reusable: a run allocates nothing
//!
//! let x86_64: bpfconv::Arch = "x86_64".parse()?;
//! for nr in [0, 39, 110] {
//!     let data = SeccompData::new(x86_64.audit_arch(), nr).to_bytes();
//!     let ret = classic.run_seccomp(&data)?;
//!     assert_eq!(vm.run_seccomp(&loaded, &data)?, ret);
//!     let expected = if nr == 39 { bpfconv::Action::Allow } else { bpfconv::Action::Errno(1) };
//!     assert_eq!(bpfconv::Action::from(ret), expected);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same through `engine`, for any engine by name (`bpfconv run --engine`):
//!
//! ```
//! # #[cfg(feature = "engines")] {
//! use bpfconv::{parse, validate, EngineKind, Format, Mode, Prepared, SeccompData, SeccompEngine};
//!
//! let text = b"ld [0]\njeq #39, allow\nret #0x00050001\nallow: ret #0x7fff0000\n";
//! let prepared = Prepared::new(validate(&parse(text, Format::Asm)?, Mode::Seccomp)?)?;
//! let x86_64: bpfconv::Arch = "x86_64".parse()?;
//! let data = SeccompData::new(x86_64.audit_arch(), 39);
//! let mut outcomes = Vec::new();
//! for kind in [EngineKind::Cbpf, EngineKind::Ebpf, EngineKind::Fast] {
//!     outcomes.push(SeccompEngine::new(kind, &prepared)?.eval(&data)?);
//! }
//! assert!(outcomes.windows(2).all(|pair| pair[0] == pair[1]));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Analyse a seccomp filter
//!
//! ```
//! use bpfconv::seccomp::analysis::{analyze, ActionResult};
//! use bpfconv::{parse, validate, Action, Format, Mode};
//!
//! // Allow getppid (110); for openat (257) the answer depends on args[2].
//! let text = b"ld [0]\n\
//!              jeq #110, allow\n\
//!              jne #257, deny\n\
//!              ld [32]\n\
//!              jeq #0, allow\n\
//!              deny: ret #0x00050001\n\
//!              allow: ret #0x7fff0000\n";
//! let prog = validate(&parse(text, Format::Asm)?, Mode::Seccomp)?;
//! let x86_64: bpfconv::Arch = "x86_64".parse()?;
//! let entries = analyze(&prog, x86_64.audit_arch(), [110, 257, 59])?;
//! assert_eq!(entries[0].result, ActionResult::Constant(Action::Allow.to_u32()));
//! assert!(matches!(entries[1].result, ActionResult::Depends(_)));
//! assert_eq!(entries[2].result, ActionResult::Constant(Action::Errno(1).to_u32()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Prove two filters equal, or find where they differ
//!
//! ```
//! # #[cfg(feature = "equiv")] {
//! use bpfconv::equiv::{check, Options, Side, Verdict};
//! use bpfconv::{parse, validate, Format, Mode};
//!
//! let filter = |text: &[u8]| -> Result<_, Box<dyn std::error::Error>> {
//!     Ok(validate(&parse(text, Format::Asm)?, Mode::Seccomp)?)
//! };
//! // Allow getppid (110) and getpid (39), in either order; deny the rest.
//! let a = filter(b"ld [0]\njeq #110, allow\njeq #39, allow\nret #0x00050001\nallow: ret #0x7fff0000\n")?;
//! let b = filter(b"ld [0]\njeq #39, allow\njeq #110, allow\nret #0x00050001\nallow: ret #0x7fff0000\n")?;
//! assert_eq!(check(Side::single(&a), Side::single(&b), &Options::default())?, Verdict::Equal);
//!
//! // Without getpid, the proof fails with the input that tells them apart.
//! let c = filter(b"ld [0]\njeq #110, allow\nret #0x00050001\nallow: ret #0x7fff0000\n")?;
//! let Verdict::Differ(found) = check(Side::single(&a), Side::single(&c), &Options::default())? else {
//!     panic!("expected a counterexample");
//! };
//! assert_eq!((found[0].data.nr, found[0].left, found[0].right), (39, 0x7fff_0000, 0x0005_0001));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// `::` names the dependency, not the re-export of the same name below.
pub use ::cbpf;
pub use ::chain;
pub use ::convert;
pub use ::ebpf;
#[cfg(feature = "engines")]
pub use ::engine;
#[cfg(feature = "equiv")]
pub use ::equiv;
pub use ::hook;
#[cfg(all(feature = "kernel", target_os = "linux", target_arch = "x86_64"))]
pub use ::kernel;
pub use ::native;
#[cfg(feature = "optimize")]
pub use ::optimize;
#[cfg(feature = "policy")]
pub use ::policy;
pub use ::record;
pub use ::seccomp;
#[cfg(feature = "timing")]
pub use ::timing;

pub use ::cbpf::text::{parse, Format};
pub use ::cbpf::validate::validate;
pub use ::cbpf::{Insn, Mode, Program, SeccompData};
pub use ::convert::{convert, Converted};
#[cfg(feature = "engines")]
pub use ::engine::{EngineKind, Prepared, SeccompEngine};
pub use ::seccomp::{Action, Arch};
