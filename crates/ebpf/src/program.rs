//! Loading an eBPF program: structural checks, then pre-decoding into the
//! interpreter's internal form.
//!
//! [`Program::load`] is the only way to make a [`Program`]; the interpreter
//! ([`crate::interp`]) relies on everything checked here and does no
//! decoding at run time.
//!
//! # Invariants enforced at load
//!
//! Every one is reported as a [`LoadError`] naming the offending `pc`:
//! - the program is not empty and has at most [`MAX_INSNS`] slots;
//! - every opcode is one the kernel's interpreter (or RFC 9669) defines: see
//!   [`LoadError::UnknownOpcode`]; the verifier-internal `JCOND` (may_goto),
//!   `BPF_TAIL_CALL`, `BPF_CALL_ARGS` and `BPF_PROBE_*` encodings are refused;
//! - every register a used field names is `r0`..=`r10`, and no instruction
//!   writes `r10` (the frame pointer), including atomic fetches into `src`;
//! - `ld_imm64` has its second slot, whose `code`, registers and `off` are 0,
//!   and no jump or call lands on that second slot;
//! - jump and local-call targets lie inside the program;
//! - helper calls name an id registered in the [`Helpers`] given to `load`;
//! - sub-fields with a meaning are valid: `off` of DIV/MOD is 0 or 1, `off` of
//!   `MOV X` is 0, 8, 16 (or 32 for ALU64), `imm` of END is 16/32/64, `imm` of
//!   an atomic is one of the defined operations for its size.
//!
//! Fields that RFC 9669 reserves (must be zero) are ignored by default,
//! because converted cBPF carries the kernel's junk in them (`src = r7` and
//! `imm = k` on ALU instructions whatever their source); with
//! [`LoadOptions::strict`] they are checked as RFC 9669 §3 requires.
//!
//! Falling off the end of the program is not checked here (the verifier
//! would); the interpreter reports it as an error when it happens.

use crate::helpers::{HelperFn, Helpers};
use crate::insn::{Insn, Pc};
use crate::op::{self as isa, AluOp, AtomicOp, CallKind, Endian, JmpCond, OpError, Operand, Size, Width};
use crate::opcode::{R0, R10};

/// Largest program accepted, in slots (the verifier's
/// `BPF_COMPLEXITY_LIMIT_INSNS`).
pub const MAX_INSNS: usize = 1_000_000;

/// Index of the always-zero pseudo register that K-form instructions read as
/// their `src`, so `regs[src] | imm` is the operand for both K and X forms.
pub(crate) const ZERO_REG: u8 = 15;
/// Index of the scratch pseudo register that a compare-chain element writes
/// when it has no real register to set.
pub(crate) const SCRATCH_REG: u8 = 11;

/// How strictly [`Program::load`] checks reserved fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Reject non-zero reserved fields as RFC 9669 §3 defines them (and the
    /// non-RFC `callx` and pseudo `ld_imm64` forms). Off by default, because
    /// converted cBPF carries the kernel's copied junk in those fields.
    pub strict: bool,
    /// Fuse runs of compare-and-branch instructions on one register into a
    /// single dispatch (still executing every instruction's semantics in
    /// order). On by default; off is useful to measure the gain. Off also
    /// turns off the dedicated executor for converted seccomp filters
    /// ([`crate::seccomp_exec`]), so every run takes the general path.
    pub no_superinstructions: bool,
}

/// Why a program was refused at load time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    #[error("empty program: no instructions")]
    Empty,
    #[error("program has {len} instructions, more than the limit of {max}")]
    TooLong { len: usize, max: usize },
    #[error("pc {pc}: unknown opcode {code:#04x}")]
    UnknownOpcode { pc: Pc, code: u8 },
    #[error("pc {pc}: invalid register r{reg}")]
    BadRegister { pc: Pc, reg: u8 },
    #[error("pc {pc}: instruction writes the read-only frame pointer r10")]
    WritesFramePointer { pc: Pc },
    #[error("pc {pc}: ld_imm64 is missing its second slot")]
    IncompleteLdImm64 { pc: Pc },
    #[error("pc {pc}: second slot of ld_imm64 has non-zero code, registers or offset")]
    BadLdImm64SecondSlot { pc: Pc },
    #[error("pc {pc}: jump target {target} is outside the program")]
    JumpOutOfRange { pc: Pc, target: i64 },
    #[error("pc {pc}: jump target {target} is the second slot of an ld_imm64")]
    JumpIntoLdImm64 { pc: Pc, target: usize },
    #[error("pc {pc}: call to unknown helper {id}")]
    UnknownHelper { pc: Pc, id: i32 },
    #[error("pc {pc}: unsupported call kind (src {src})")]
    UnsupportedCall { pc: Pc, src: u8 },
    #[error("pc {pc}: invalid offset {off} for this opcode")]
    BadOffset { pc: Pc, off: i16 },
    #[error("pc {pc}: invalid immediate {imm} for this opcode")]
    BadImmediate { pc: Pc, imm: i32 },
    #[error("pc {pc}: reserved field {field} is not zero")]
    ReservedField { pc: Pc, field: &'static str },
}

/// Operation of one pre-decoded instruction. K and X forms share a kind: the
/// operand is always `regs[src] | imm`, with `src` = [`ZERO_REG`] for K and
/// `imm` = 0 for X.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Add64,
    Sub64,
    Mul64,
    Div64,
    SDiv64,
    Or64,
    And64,
    Lsh64,
    Rsh64,
    Neg64,
    Mod64,
    SMod64,
    Xor64,
    Mov64,
    MovSx64B,
    MovSx64H,
    MovSx64W,
    Arsh64,
    Bswap16,
    Bswap32,
    Bswap64,
    Add32,
    Sub32,
    Mul32,
    Div32,
    SDiv32,
    Or32,
    And32,
    Lsh32,
    Rsh32,
    Neg32,
    Mod32,
    SMod32,
    Xor32,
    Mov32,
    MovSx32B,
    MovSx32H,
    Arsh32,
    Le16,
    Le32,
    Le64,
    Be16,
    Be32,
    Be64,
    Ja,
    Jeq64,
    Jgt64,
    Jge64,
    Jset64,
    Jne64,
    Jsgt64,
    Jsge64,
    Jlt64,
    Jle64,
    Jslt64,
    Jsle64,
    Jeq32,
    Jgt32,
    Jge32,
    Jset32,
    Jne32,
    Jsgt32,
    Jsge32,
    Jlt32,
    Jle32,
    Jslt32,
    Jsle32,
    /// Fused compare chain on `regs[dst]`: `a` = first [`ChainEntry`],
    /// `imm` = end entry (exclusive).
    Chain,
    /// `LdxW` into `dst` from `src + off`, then a [`Kind::Chain`] on `dst`:
    /// `a` = first entry, `imm` = end | (off as u32) << 32.
    LoadChain,
    /// Like [`Kind::Chain`] over [`EqEntry`]s (`if dst == K goto`, JMP64).
    EqChain,
    /// Like [`Kind::LoadChain`] over [`EqEntry`]s.
    LoadEqChain,
    /// `wD = *(u32 *)(rS + off); if rD <cond> K goto a` (JMP64, K form):
    /// `imm` = (K as u32) | (off as u16) << 32.
    LoadJeq,
    LoadJne,
    LoadJgt,
    LoadJge,
    LoadJlt,
    LoadJle,
    /// A [`LoadCmp`] pair and the pairs linked to it (`a` = first entry):
    /// consecutive load-and-compare pairs run in one dispatch, following
    /// both the taken and the fall-through edges.
    LoadCmpRun,
    /// `r0 = imm; exit` (a `MOV K` into r0 followed by `exit`).
    RetImm,
    /// The converter's prologue `wD ^= wD; wS ^= wS; rSIZE = rA`
    /// (`dst`, `src`, `size`, `a` name the registers).
    Prologue,
    Call,
    CallLocal,
    Callx,
    Exit,
    LdImm64,
    LdAbs,
    LdInd,
    LdxB,
    LdxH,
    LdxW,
    LdxDw,
    LdxSb,
    LdxSh,
    LdxSw,
    StB,
    StH,
    StW,
    StDw,
    /// `a` = off, `imm` = atomic operation, `size` = 4 or 8.
    Atomic,
    /// `a` = off, `size` = 1/2/4/8.
    LoadAcq,
    StoreRel,
}

/// One pre-decoded instruction (16 bytes).
///
/// `a` holds, by kind: the absolute jump/call target, the memory offset (as
/// `i32` bits), the helper slot, or the first chain entry; `size` the access
/// width of LD ABS/IND and acquire/release.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Op {
    pub kind: Kind,
    pub dst: u8,
    pub src: u8,
    pub size: u8,
    pub a: u32,
    pub imm: u64,
}

/// One element of a fused compare chain: `if cmp_reg <cond> value goto
/// target`, optionally preceded by `write_reg = write_val` (the converter's
/// `w2 = k; if r0 == r2 goto` idiom). The condition is encoded as a range
/// test: taken iff `(((x & mask) ^ flip) - lo <= span) != negate`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChainEntry {
    pub mask: u64,
    pub flip: u64,
    pub lo: u64,
    pub span: u64,
    pub write_val: u64,
    /// pc of the jump instruction (for step accounting and errors).
    pub jump_pc: u32,
    pub target: u32,
    pub write_reg: u8,
    pub negate: bool,
}

/// Element of an [`Kind::EqChain`]: `if x == value goto target` (JMP64, K
/// form, or X form against a register the element itself just set).
///
/// Every register write of an eq stretch goes to one register W, which
/// nothing in the stretch reads; so instead of storing at each element, the
/// chain stores, when control leaves at this element, the value W holds
/// after it: `regs[wreg] = wval` (`wreg` = [`SCRATCH_REG`] if no element up
/// to here wrote W).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EqEntry {
    pub value: u64,
    pub wval: u64,
    pub jump_pc: u32,
    pub target: u32,
    pub wreg: u8,
}

/// Element of a [`Kind::LoadCmpRun`]: `wD = *(u32 *)(rS + off)` at `pc`,
/// then `if rD <cond> K goto taken` at `pc + 1` (any JMP/JMP32 compare but
/// JSET, K form), the condition as a range test on the loaded (zero-extended)
/// value: taken iff `((x ^ flip) - lo <= span) != negate`. `taken_next` /
/// `fall_next` index the entry at `taken` / `pc + 2`, or [`NO_ENTRY`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoadCmp {
    pub off: u64,
    pub flip: u64,
    pub lo: u64,
    pub span: u64,
    pub pc: u32,
    pub taken: u32,
    pub taken_next: u32,
    pub fall_next: u32,
    pub dst: u8,
    pub src: u8,
    pub negate: bool,
}

/// "No linked entry" in [`LoadCmp`].
pub(crate) const NO_ENTRY: u32 = u32::MAX;

/// A loaded, checked and pre-decoded program. Immutable; run it with
/// [`crate::interp::Vm::run`] as often as wanted, from any number of `Vm`s.
#[derive(Debug, Clone)]
pub struct Program {
    insns: Vec<Insn>,
    pub(crate) ops: Box<[Op]>,
    pub(crate) chain: Box<[ChainEntry]>,
    pub(crate) eq: Box<[EqEntry]>,
    pub(crate) load_cmp: Box<[LoadCmp]>,
    pub(crate) helpers: Box<[(i32, HelperFn)]>,
    /// The program compiled for [`crate::seccomp_exec`], if it is a
    /// converted-seccomp-shaped program (and superinstructions are on).
    pub(crate) seccomp: Option<Box<crate::seccomp_exec::SeccompProg>>,
    /// Whether the program is inside the converted-seccomp subset
    /// (whether or not superinstructions are on).
    converted_seccomp: bool,
    fused: usize,
}

impl Program {
    /// Checks `insns` (see the module docs for every rule) and pre-decodes
    /// them. `helpers` resolves `call imm` helper ids; pass
    /// [`Helpers::default()`] for programs without helper calls.
    pub fn load(insns: &[Insn], opts: &LoadOptions, helpers: &Helpers) -> Result<Program, LoadError> {
        if insns.is_empty() {
            return Err(LoadError::Empty);
        }
        if insns.len() > MAX_INSNS {
            return Err(LoadError::TooLong { len: insns.len(), max: MAX_INSNS });
        }
        let len = insns.len();
        // Second slots of ld_imm64.
        let mut second = vec![false; len];
        let mut i = 0;
        while i < len {
            if insns.get(i).is_some_and(|x| isa::Op::is_wide(*x)) {
                match isa::Op::decode_at(insns, i) {
                    Err(OpError::IncompleteLdImm64) => return Err(LoadError::IncompleteLdImm64 { pc: Pc(i) }),
                    Err(OpError::BadLdImm64SecondSlot) => {
                        return Err(LoadError::BadLdImm64SecondSlot { pc: Pc(i + 1) })
                    }
                    _ => {}
                }
                if let Some(s) = second.get_mut(i + 1) {
                    *s = true;
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        let table: Box<[(i32, HelperFn)]> = helpers.entries().to_vec().into_boxed_slice();
        let cx = Decoder { insns, second: &second, opts, helpers: &table };
        let mut ops = Vec::with_capacity(len);
        for (pc, insn) in insns.iter().enumerate() {
            if second.get(pc).copied().unwrap_or(false) {
                // Never executed: jumps cannot land here and ld_imm64 skips it.
                ops.push(Op { kind: Kind::Ja, dst: 0, src: ZERO_REG, size: 0, a: pc as u32 + 1, imm: 0 });
                continue;
            }
            ops.push(cx.decode(pc, *insn)?);
        }
        let mut prog = Program {
            insns: insns.to_vec(),
            ops: ops.into_boxed_slice(),
            chain: Box::new([]),
            eq: Box::new([]),
            load_cmp: Box::new([]),
            helpers: table,
            seccomp: None,
            converted_seccomp: false,
            fused: 0,
        };
        let seccomp = crate::seccomp_exec::compile(insns);
        prog.converted_seccomp = seccomp.is_some();
        if !opts.no_superinstructions {
            fuse(&mut prog);
            prog.seccomp = seccomp.map(Box::new);
        }
        Ok(prog)
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

    /// Whether runs on a 64-byte context ([`crate::Vm::run_seccomp`], or
    /// [`crate::Vm::run`] with a 64-byte `Input::Ctx`) use the dedicated
    /// executor for converted seccomp filters ([`crate::seccomp_exec`]):
    /// true when the program stays inside the subset a converted seccomp
    /// filter is made of and superinstructions are on
    /// ([`LoadOptions::no_superinstructions`] forces the general path).
    pub fn has_seccomp_executor(&self) -> bool {
        self.seccomp.is_some()
    }

    /// Whether the program stays inside the subset of eBPF a converted
    /// seccomp filter is made of ([`crate::seccomp_exec`]: A, TMP and X
    /// of `bpf_convert_filter()`, `r6 = r1` the only use of the context
    /// registers, 32-bit loads from `struct seccomp_data` after it on
    /// every path, 32-bit stack accesses in `fp-64..=fp-4` with every read
    /// after a write, forward jumps, no calls, `exit` last). The one
    /// recogniser of that subset: the dedicated executor and the rbpf
    /// adapter's unchecked backends both rely on it.
    pub fn is_converted_seccomp(&self) -> bool {
        self.converted_seccomp
    }

    /// Number of pcs whose op is a superinstruction (a fused compare chain,
    /// a load-then-compare chain, `r0 = imm; exit`, or the converter's prologue).
    pub fn fused_chains(&self) -> usize {
        self.fused
    }
}

struct Decoder<'a> {
    insns: &'a [Insn],
    second: &'a [bool],
    opts: &'a LoadOptions,
    helpers: &'a [(i32, HelperFn)],
}

fn op(kind: Kind, dst: u8, src: u8, a: u32, imm: u64) -> Op {
    Op { kind, dst, src, size: 0, a, imm }
}

impl Decoder<'_> {
    fn reg(&self, pc: usize, r: u8) -> Result<u8, LoadError> {
        if r > R10 {
            Err(LoadError::BadRegister { pc: Pc(pc), reg: r })
        } else {
            Ok(r)
        }
    }

    /// A register the instruction writes: r0..=r9.
    fn wreg(&self, pc: usize, r: u8) -> Result<u8, LoadError> {
        if self.reg(pc, r)? == R10 {
            Err(LoadError::WritesFramePointer { pc: Pc(pc) })
        } else {
            Ok(r)
        }
    }

    fn reserved(&self, pc: usize, nonzero: bool, field: &'static str) -> Result<(), LoadError> {
        if self.opts.strict && nonzero {
            Err(LoadError::ReservedField { pc: Pc(pc), field })
        } else {
            Ok(())
        }
    }

    fn target(&self, pc: usize, rel: i64) -> Result<u32, LoadError> {
        let t = pc as i64 + 1 + rel;
        if t < 0 || t >= self.insns.len() as i64 {
            return Err(LoadError::JumpOutOfRange { pc: Pc(pc), target: t });
        }
        let t = t as usize;
        if self.second.get(t).copied().unwrap_or(false) {
            return Err(LoadError::JumpIntoLdImm64 { pc: Pc(pc), target: t });
        }
        Ok(t as u32)
    }

    /// Decodes one instruction ([`isa::Op::decode`]) and checks what the
    /// module docs list: registers, refused encodings, reserved fields.
    /// When an instruction breaks several rules, the first reported is the
    /// first in this order: class-wide registers, the fields the operation
    /// reads before its variant is known (its operand, or the unused fields
    /// of END and calls), the opcode and its variant, then the operation's
    /// own fields in encoding order.
    fn decode(&self, pc: usize, insn: Insn) -> Result<Op, LoadError> {
        let at = Pc(pc);
        let unknown = LoadError::UnknownOpcode { pc: at, code: insn.code };
        let class = isa::Class::of(insn);
        // Class-wide register checks: every ALU-class instruction writes
        // `dst`, every STX-class one names two registers.
        match class {
            isa::Class::Alu | isa::Class::Alu64 => {
                self.wreg(pc, insn.dst())?;
            }
            isa::Class::Stx => {
                self.reg(pc, insn.dst())?;
                self.reg(pc, insn.src())?;
            }
            _ => {}
        }
        let next = self.insns.get(pc + 1).copied();
        let typed = match isa::Op::decode(insn, next) {
            Ok(op) => op,
            Err(e) => {
                self.before_variant(pc, insn, class, e)?;
                return Err(match e {
                    OpError::UnknownOpcode(code) => LoadError::UnknownOpcode { pc: at, code },
                    OpError::BadOffset(off) => LoadError::BadOffset { pc: at, off },
                    OpError::BadImmediate(imm) => LoadError::BadImmediate { pc: at, imm },
                    OpError::UnsupportedCall(src) => LoadError::UnsupportedCall { pc: at, src },
                    OpError::IncompleteLdImm64 => LoadError::IncompleteLdImm64 { pc: at },
                    OpError::BadLdImm64SecondSlot => LoadError::BadLdImm64SecondSlot { pc: Pc(pc + 1) },
                });
            }
        };
        let res = |field: &'static str| {
            let nonzero = match field {
                "dst" => insn.dst() != 0,
                "src" => insn.src() != 0,
                "off" => insn.off != 0,
                _ => insn.imm != 0,
            };
            self.reserved(pc, nonzero, field)
        };
        // Operand `regs[src] | imm`: K sign-extends to 64 bits for ALU64 and
        // JMP, and is the low half for ALU32 and JMP32; the unused field of
        // each form is reserved.
        let operand = |width: Width, src: Operand| -> Result<(u8, u64), LoadError> {
            Ok(match (src, width) {
                (Operand::X(r), _) => {
                    res("imm")?;
                    (self.reg(pc, r)?, 0)
                }
                (Operand::K(k), Width::W64) => {
                    res("src")?;
                    (ZERO_REG, k as i64 as u64)
                }
                (Operand::K(k), Width::W32) => {
                    res("src")?;
                    (ZERO_REG, k as u32 as u64)
                }
            })
        };
        let mem_off = |off: i16| off as i32 as u32;
        Ok(match typed {
            isa::Op::Alu { width, op: alu, dst, src } => {
                let (src, imm) = operand(width, src)?;
                // `off` selects signed division; on others it is reserved.
                if !matches!(alu, AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod) {
                    res("off")?;
                }
                // Shift amounts: RFC 9669 masks them (the kernel leaves K
                // unmasked but its verifier rejects K outside the width, so
                // the two agree on every program the kernel runs).
                let imm = match width {
                    Width::W64 if alu.is_shift() => imm & 63,
                    Width::W32 if alu.is_shift() => imm & 31,
                    _ => imm,
                };
                op(alu_kind(width, alu), dst, src, 0, imm)
            }
            isa::Op::Neg { width, dst } => {
                for field in ["src", "imm", "off"] {
                    res(field)?;
                }
                op(of_width(width, (Kind::Neg64, Kind::Neg32)), dst, ZERO_REG, 0, 0)
            }
            isa::Op::MovSx { width, dst, src, from } => {
                let (src, _) = operand(width, Operand::X(src))?;
                let kind = match (width, from) {
                    (Width::W64, Size::B) => Kind::MovSx64B,
                    (Width::W64, Size::H) => Kind::MovSx64H,
                    (Width::W64, _) => Kind::MovSx64W,
                    (Width::W32, Size::B) => Kind::MovSx32B,
                    (Width::W32, _) => Kind::MovSx32H,
                };
                op(kind, dst, src, 0, 0)
            }
            isa::Op::End { endian, dst, bits } => {
                // imm is the width, so it is not a reserved field here.
                res("src")?;
                res("off")?;
                let kind = match (endian, bits) {
                    (Endian::ToLe, 16) => Kind::Le16,
                    (Endian::ToLe, 32) => Kind::Le32,
                    (Endian::ToLe, _) => Kind::Le64,
                    (Endian::ToBe, 16) => Kind::Be16,
                    (Endian::ToBe, 32) => Kind::Be32,
                    (Endian::ToBe, _) => Kind::Be64,
                    (Endian::Swap, 16) => Kind::Bswap16,
                    (Endian::Swap, 32) => Kind::Bswap32,
                    (Endian::Swap, _) => Kind::Bswap64,
                };
                op(kind, dst, ZERO_REG, 0, 0)
            }
            isa::Op::Ja { off } => {
                for field in ["dst", "src", "imm"] {
                    res(field)?;
                }
                op(Kind::Ja, 0, ZERO_REG, self.target(pc, i64::from(off))?, 0)
            }
            isa::Op::Gotol { imm } => {
                for field in ["dst", "src", "off"] {
                    res(field)?;
                }
                op(Kind::Ja, 0, ZERO_REG, self.target(pc, i64::from(imm))?, 0)
            }
            isa::Op::Jmp { width, cond, dst, src, off } => {
                let dst = self.reg(pc, dst)?;
                let (src, imm) = operand(width, src)?;
                let t = self.target(pc, i64::from(off))?;
                op(jmp_kind(width, cond), dst, src, t, imm)
            }
            isa::Op::Call { kind, imm } => {
                res("off")?;
                res("dst")?;
                match kind {
                    CallKind::Helper => {
                        let slot = self
                            .helpers
                            .iter()
                            .position(|(id, _)| *id == imm)
                            .ok_or(LoadError::UnknownHelper { pc: at, id: imm })?;
                        op(Kind::Call, 0, ZERO_REG, slot as u32, imm as u32 as u64)
                    }
                    CallKind::Local => op(Kind::CallLocal, 0, ZERO_REG, self.target(pc, i64::from(imm))?, 0),
                    CallKind::Kfunc => return Err(LoadError::UnsupportedCall { pc: at, src: kind.src() }),
                }
            }
            // callx (not in RFC 9669; the conformance suite's `call %rN`):
            // the helper id is read from dst at run time.
            isa::Op::Callx { dst } => {
                res("off")?;
                if self.opts.strict {
                    return Err(unknown);
                }
                op(Kind::Callx, self.reg(pc, dst)?, ZERO_REG, 0, 0)
            }
            isa::Op::Exit => {
                for field in ["dst", "src", "off", "imm"] {
                    res(field)?;
                }
                op(Kind::Exit, 0, ZERO_REG, 0, 0)
            }
            isa::Op::LdImm64 { dst, imm } => {
                let dst = self.wreg(pc, dst)?;
                // Pseudo sources (map fd, BTF id, ...) need a loader we do not have.
                res("src")?;
                res("off")?;
                op(Kind::LdImm64, dst, ZERO_REG, 0, imm)
            }
            // The kernel's cBPF carry-over has no 64-bit packet load.
            isa::Op::LdAbs { size: Size::DW, .. } | isa::Op::LdInd { size: Size::DW, .. } => return Err(unknown),
            isa::Op::LdAbs { size, imm } => {
                for field in ["dst", "off", "src"] {
                    res(field)?;
                }
                Op { kind: Kind::LdAbs, dst: R0, src: ZERO_REG, size: size.bytes(), a: 0, imm: imm as u32 as u64 }
            }
            isa::Op::LdInd { size, src, imm } => {
                res("dst")?;
                res("off")?;
                let src = self.reg(pc, src)?;
                Op { kind: Kind::LdInd, dst: R0, src, size: size.bytes(), a: 0, imm: imm as u32 as u64 }
            }
            isa::Op::Ldx { size, dst, src, off } | isa::Op::Ldsx { size, dst, src, off } => {
                res("imm")?;
                let signed = matches!(typed, isa::Op::Ldsx { .. });
                let kind = match (signed, size) {
                    (false, Size::B) => Kind::LdxB,
                    (false, Size::H) => Kind::LdxH,
                    (false, Size::W) => Kind::LdxW,
                    (false, Size::DW) => Kind::LdxDw,
                    (true, Size::B) => Kind::LdxSb,
                    (true, Size::H) => Kind::LdxSh,
                    (true, _) => Kind::LdxSw,
                };
                op(kind, self.wreg(pc, dst)?, self.reg(pc, src)?, mem_off(off), 0)
            }
            isa::Op::St { size, dst, off, imm } => {
                res("src")?;
                let dst = self.reg(pc, dst)?;
                let (kind, imm) = match size {
                    Size::B => (Kind::StB, u64::from(imm as u8)),
                    Size::H => (Kind::StH, u64::from(imm as u16)),
                    Size::W => (Kind::StW, u64::from(imm as u32)),
                    Size::DW => (Kind::StDw, imm as i64 as u64),
                };
                op(kind, dst, ZERO_REG, mem_off(off), imm)
            }
            isa::Op::Stx { size, dst, src, off } => {
                res("imm")?;
                let kind = match size {
                    Size::B => Kind::StB,
                    Size::H => Kind::StH,
                    Size::W => Kind::StW,
                    Size::DW => Kind::StDw,
                };
                op(kind, dst, src, mem_off(off), 0)
            }
            isa::Op::Atomic { size, op: atomic, dst, src, off } => {
                let (size, off) = (size.bytes(), mem_off(off));
                match atomic {
                    AtomicOp::LoadAcq => {
                        Op { kind: Kind::LoadAcq, dst: self.wreg(pc, dst)?, src, size, a: off, imm: 0 }
                    }
                    AtomicOp::StoreRel => Op { kind: Kind::StoreRel, dst, src, size, a: off, imm: 0 },
                    _ => {
                        if atomic.fetches() && atomic != AtomicOp::Cmpxchg {
                            self.wreg(pc, src)?;
                        }
                        let imm = atomic.bits() as u32 as u64;
                        Op { kind: Kind::Atomic, dst, src, size, a: off, imm }
                    }
                }
            }
        })
    }

    /// The checks an instruction that [`isa::Op::decode`] refuses (with
    /// `e`) passes before its opcode or variant is judged: the operand of
    /// an ALU operation, the unused fields of END and of calls.
    fn before_variant(&self, pc: usize, insn: Insn, class: isa::Class, e: OpError) -> Result<(), LoadError> {
        let res = |nonzero: bool, field| self.reserved(pc, nonzero, field);
        match isa::Op::decode(isa::repaired(insn, e), None) {
            Ok(isa::Op::End { .. }) => {
                res(insn.src() != 0, "src")?;
                res(insn.off != 0, "off")?;
            }
            Ok(isa::Op::Call { .. }) => {
                res(insn.off != 0, "off")?;
                res(insn.dst() != 0, "dst")?;
            }
            _ if matches!(class, isa::Class::Alu | isa::Class::Alu64) => match isa::Operand::of(insn) {
                Operand::X(src) => {
                    res(insn.imm != 0, "imm")?;
                    self.reg(pc, src)?;
                }
                Operand::K(_) => res(insn.src() != 0, "src")?,
            },
            _ => {}
        }
        Ok(())
    }
}

/// The kind for `width` of an op's pair of kinds (64-bit, 32-bit).
fn of_width(width: Width, (w64, w32): (Kind, Kind)) -> Kind {
    match width {
        Width::W64 => w64,
        Width::W32 => w32,
    }
}

/// The interpreter's kind of a binary ALU operation.
fn alu_kind(width: Width, alu: AluOp) -> Kind {
    of_width(
        width,
        match alu {
            AluOp::Add => (Kind::Add64, Kind::Add32),
            AluOp::Sub => (Kind::Sub64, Kind::Sub32),
            AluOp::And => (Kind::And64, Kind::And32),
            AluOp::Or => (Kind::Or64, Kind::Or32),
            AluOp::Lsh => (Kind::Lsh64, Kind::Lsh32),
            AluOp::Rsh => (Kind::Rsh64, Kind::Rsh32),
            AluOp::Xor => (Kind::Xor64, Kind::Xor32),
            AluOp::Mul => (Kind::Mul64, Kind::Mul32),
            AluOp::Mov => (Kind::Mov64, Kind::Mov32),
            AluOp::Arsh => (Kind::Arsh64, Kind::Arsh32),
            AluOp::Div => (Kind::Div64, Kind::Div32),
            AluOp::SDiv => (Kind::SDiv64, Kind::SDiv32),
            AluOp::Mod => (Kind::Mod64, Kind::Mod32),
            AluOp::SMod => (Kind::SMod64, Kind::SMod32),
        },
    )
}

/// The interpreter's kind of a conditional jump.
pub(crate) fn jmp_kind(width: Width, cond: JmpCond) -> Kind {
    of_width(
        width,
        match cond {
            JmpCond::Eq => (Kind::Jeq64, Kind::Jeq32),
            JmpCond::Ne => (Kind::Jne64, Kind::Jne32),
            JmpCond::Gt => (Kind::Jgt64, Kind::Jgt32),
            JmpCond::Lt => (Kind::Jlt64, Kind::Jlt32),
            JmpCond::Ge => (Kind::Jge64, Kind::Jge32),
            JmpCond::Le => (Kind::Jle64, Kind::Jle32),
            JmpCond::Sgt => (Kind::Jsgt64, Kind::Jsgt32),
            JmpCond::Slt => (Kind::Jslt64, Kind::Jslt32),
            JmpCond::Sge => (Kind::Jsge64, Kind::Jsge32),
            JmpCond::Sle => (Kind::Jsle64, Kind::Jsle32),
            JmpCond::Set => (Kind::Jset64, Kind::Jset32),
        },
    )
}

/// Condition of a compare-and-branch as a [`ChainEntry`] range test, or
/// `None` for JSET (not a range).
fn range_test(kind: Kind, v: u64) -> Option<(u64, u64, u64, u64, bool)> {
    use Kind::*;
    let (mask, signed) = match kind {
        Jeq64 | Jgt64 | Jge64 | Jne64 | Jlt64 | Jle64 => (u64::MAX, false),
        Jsgt64 | Jsge64 | Jslt64 | Jsle64 => (u64::MAX, true),
        Jeq32 | Jgt32 | Jge32 | Jne32 | Jlt32 | Jle32 => (0xffff_ffff, false),
        Jsgt32 | Jsge32 | Jslt32 | Jsle32 => (0xffff_ffff, true),
        _ => return None,
    };
    let flip = if signed { (mask >> 1) + 1 } else { 0 };
    let v = (v & mask) ^ flip;
    // (lo, span, negate): taken iff (x' - lo <= span) != negate.
    let (lo, span, negate) = match kind {
        Jeq64 | Jeq32 => (v, 0, false),
        Jne64 | Jne32 => (v, 0, true),
        Jgt64 | Jgt32 | Jsgt64 | Jsgt32 => (0, v, true),
        Jge64 | Jge32 | Jsge64 | Jsge32 => (v, mask - v, false),
        Jlt64 | Jlt32 | Jslt64 | Jslt32 => (v, mask - v, true),
        _ => (0, v, false),
    };
    Some((mask, flip, lo, span, negate))
}

/// One chain element found in the original ops.
struct Element {
    pc: usize,
    reg: u8,
    entry: ChainEntry,
    /// `Some(v)` for `if reg == v goto` (JMP64 K), eligible for [`EqEntry`].
    eq: Option<u64>,
    next: usize,
}

/// The chain element starting at `pc`, if any: a compare-and-branch other
/// than JSET, K form, or `mov rW, K` followed by an X-form compare of
/// another register against rW.
fn element(ops: &[Op], pc: usize) -> Option<Element> {
    let o = ops.get(pc)?;
    if let Some((mask, flip, lo, span, negate)) = range_test(o.kind, o.imm).filter(|_| o.src == ZERO_REG) {
        let entry = ChainEntry {
            mask,
            flip,
            lo,
            span,
            write_val: 0,
            jump_pc: pc as u32,
            target: o.a,
            write_reg: SCRATCH_REG,
            negate,
        };
        let eq = (o.kind == Kind::Jeq64).then_some(o.imm);
        return Some(Element { pc, reg: o.dst, entry, eq, next: pc + 1 });
    }
    let value = match o.kind {
        Kind::Mov64 | Kind::Mov32 if o.src == ZERO_REG => o.imm,
        _ => return None,
    };
    let j = ops.get(pc + 1)?;
    if j.src != o.dst || j.dst == o.dst {
        return None;
    }
    let (mask, flip, lo, span, negate) = range_test(j.kind, value)?;
    let entry = ChainEntry {
        mask,
        flip,
        lo,
        span,
        write_val: value,
        jump_pc: pc as u32 + 1,
        target: j.a,
        write_reg: o.dst,
        negate,
    };
    let eq = (j.kind == Kind::Jeq64).then_some(value);
    Some(Element { pc, reg: j.dst, entry, eq, next: pc + 2 })
}

/// Load-time superinstructions. Each replaces the op at one pc and executes,
/// in order, the semantics of every instruction it covers; the covered
/// instructions keep their own ops, so jumps into the middle still work.
///
/// - Runs of compare-and-branch elements on one register (see [`element`])
///   become [`Kind::Chain`] (or [`Kind::EqChain`] for stretches of
///   `if rX == K goto`), evaluated in one dispatch;
/// - `wX = *(u32 *)(rS + off)` right before a run on rX becomes a
///   [`Kind::LoadChain`] / [`Kind::LoadEqChain`] (the `ld [k]; jeq` idiom);
/// - `r0 = K; exit` becomes [`Kind::RetImm`];
/// - the converter's prologue becomes [`Kind::Prologue`];
/// - single load-compare pairs are then linked into
///   [`Kind::LoadCmpRun`]s ([`fuse_load_cmp`]).
fn fuse(prog: &mut Program) {
    let orig: Vec<Op> = prog.ops.to_vec();
    let mut ops = orig.clone();
    let n = orig.len();
    let mut chain: Vec<ChainEntry> = Vec::new();
    let mut eq: Vec<EqEntry> = Vec::new();
    let mut fused = 0usize;
    let mut pc = 0;
    while pc < n {
        let Some(first) = element(&orig, pc) else {
            pc += 1;
            continue;
        };
        let reg = first.reg;
        let mut run = vec![first];
        while let Some(e) = run.last().and_then(|l| element(&orig, l.next)).filter(|e| e.reg == reg) {
            run.push(e);
        }
        // Segments: stretches of >= 2 eq elements, and the rest.
        let mut segments: Vec<(usize, usize, bool)> = Vec::new();
        // Length of the eq stretch starting at k whose writes all go to one register.
        let eq_len = |k: usize| {
            let mut w = None;
            let mut j = k;
            while let Some(e) = run.get(j).filter(|e| e.eq.is_some()) {
                if e.entry.write_reg != SCRATCH_REG {
                    if w.is_some_and(|w| w != e.entry.write_reg) {
                        break;
                    }
                    w = Some(e.entry.write_reg);
                }
                j += 1;
            }
            j - k
        };
        let mut k = 0;
        while k < run.len() {
            let j = k + eq_len(k);
            if j - k >= 2 {
                segments.push((k, j, true));
                k = j;
                continue;
            }
            // Generic: up to the next eq stretch of length >= 2.
            let mut j = k + 1;
            while j < run.len() && eq_len(j) < 2 {
                j += 1;
            }
            segments.push((k, j, false));
            k = j;
        }
        let load_head = run.first().map(|e| e.pc).filter(|&p| p > 0).and_then(|p| {
            let l = orig.get(p - 1)?;
            (l.kind == Kind::LdxW && l.dst == reg).then_some(p - 1)
        });
        for &(s, e, is_eq) in &segments {
            let base = if is_eq { eq.len() } else { chain.len() } as u32;
            let (mut wreg, mut wval) = (SCRATCH_REG, 0);
            for el in run.get(s..e).unwrap_or(&[]) {
                if is_eq {
                    if el.entry.write_reg != SCRATCH_REG {
                        (wreg, wval) = (el.entry.write_reg, el.entry.write_val);
                    }
                    let (value, jump_pc, target) = (el.eq.unwrap_or(0), el.entry.jump_pc, el.entry.target);
                    eq.push(EqEntry { value, wval, jump_pc, target, wreg });
                } else {
                    chain.push(el.entry);
                }
            }
            let end = base + (e - s) as u32;
            for k in s..e {
                if e - k < 2 {
                    continue;
                }
                // An entry in the middle of an eq stretch must not inherit a
                // W write made by an element before it (that element did not
                // run on a path that jumps in here): `wval` is cumulative
                // from the stretch start, so only fuse such entries while no
                // earlier element of the stretch writes W.
                let earlier_write =
                    run.get(s..k).is_some_and(|els| els.iter().any(|x| x.entry.write_reg != SCRATCH_REG));
                if is_eq && earlier_write {
                    continue;
                }
                let Some(el) = run.get(k) else { continue };
                let kind = if is_eq { Kind::EqChain } else { Kind::Chain };
                if let Some(o) = ops.get_mut(el.pc) {
                    *o = Op { kind, dst: reg, src: ZERO_REG, size: 0, a: base + (k - s) as u32, imm: u64::from(end) };
                    fused += 1;
                }
            }
            // A load followed by one plain K compare: one op, no chain table.
            let single = run.get(s).filter(|el| e - s == 1 && el.entry.write_reg == SCRATCH_REG);
            let load_cmp = single.and_then(|el| {
                let j = orig.get(el.pc)?;
                let kind = match j.kind {
                    Kind::Jeq64 => Kind::LoadJeq,
                    Kind::Jne64 => Kind::LoadJne,
                    Kind::Jgt64 => Kind::LoadJgt,
                    Kind::Jge64 => Kind::LoadJge,
                    Kind::Jlt64 => Kind::LoadJlt,
                    Kind::Jle64 => Kind::LoadJle,
                    _ => return None,
                };
                Some((kind, j.imm, j.a))
            });
            if s == 0 {
                if let (Some(lp), Some((kind, k, target))) = (load_head, load_cmp) {
                    if let (Some(l), Some(o)) = (orig.get(lp).copied(), ops.get_mut(lp)) {
                        let imm = u64::from(k as u32) | (u64::from(l.a as u16) << 32);
                        *o = Op { kind, dst: reg, src: l.src, size: 0, a: target, imm };
                        fused += 1;
                        continue;
                    }
                }
                if let Some(lp) = load_head {
                    let l = orig.get(lp).copied();
                    if let (Some(l), Some(o)) = (l, ops.get_mut(lp)) {
                        let kind = if is_eq { Kind::LoadEqChain } else { Kind::LoadChain };
                        *o = Op {
                            kind,
                            dst: reg,
                            src: l.src,
                            size: 0,
                            a: base,
                            imm: u64::from(end) | (u64::from(l.a) << 32),
                        };
                        fused += 1;
                    }
                }
            }
        }
        pc = run.last().map_or(pc + 1, |e| e.next);
    }
    for pc in 0..n {
        let (Some(o), Some(next)) = (orig.get(pc), orig.get(pc + 1)) else { continue };
        // r0 = K; exit
        if matches!(o.kind, Kind::Mov64 | Kind::Mov32) && o.src == ZERO_REG && o.dst == R0 && next.kind == Kind::Exit {
            if let Some(slot) = ops.get_mut(pc).filter(|s| s.kind == o.kind) {
                *slot = Op { kind: Kind::RetImm, ..*o };
                fused += 1;
            }
        }
        // wA ^= wA; wB ^= wB; rC = rE
        if let Some(third) = orig.get(pc + 2) {
            let zero = |x: &Op| x.kind == Kind::Xor32 && x.src == x.dst && x.imm == 0;
            if zero(o) && zero(next) && third.kind == Kind::Mov64 && third.src != ZERO_REG {
                if let Some(slot) = ops.get_mut(pc).filter(|s| s.kind == Kind::Xor32) {
                    *slot = Op {
                        kind: Kind::Prologue,
                        dst: o.dst,
                        src: next.dst,
                        size: third.dst,
                        a: u32::from(third.src),
                        imm: 0,
                    };
                    fused += 1;
                }
            }
        }
    }
    prog.fused = fused;
    prog.ops = ops.into_boxed_slice();
    prog.chain = chain.into_boxed_slice();
    prog.eq = eq.into_boxed_slice();
    fuse_load_cmp(prog, &orig);
}

/// Links load-and-compare pairs into [`Kind::LoadCmpRun`]s: every pc whose
/// op became a single load-then-compare (`LoadJ*`, see [`fuse`]) gets a
/// [`LoadCmp`] entry, linked to the entries at its two successors, so a
/// seccomp filter's argument checks (`ld [k]; jne K goto next_rule`, rule
/// after rule) run as one loop instead of one dispatch per pair. Each pair
/// still loads, writes `rD` and compares in program order, and counts two
/// steps.
fn fuse_load_cmp(prog: &mut Program, orig: &[Op]) {
    let load_cmp_kinds = [Kind::LoadJeq, Kind::LoadJne, Kind::LoadJgt, Kind::LoadJge, Kind::LoadJlt, Kind::LoadJle];
    let mut index = vec![NO_ENTRY; orig.len()];
    let mut entries: Vec<LoadCmp> = Vec::new();
    for (pc, o) in prog.ops.iter().enumerate() {
        if !load_cmp_kinds.contains(&o.kind) {
            continue;
        }
        let (Some(l), Some(j)) = (orig.get(pc), orig.get(pc + 1)) else { continue };
        let Some((_, flip, lo, span, negate)) = range_test(j.kind, j.imm) else { continue };
        if let Some(slot) = index.get_mut(pc) {
            *slot = entries.len() as u32;
        }
        entries.push(LoadCmp {
            off: l.a as i32 as i64 as u64,
            flip,
            lo,
            span,
            pc: pc as u32,
            taken: j.a,
            taken_next: NO_ENTRY,
            fall_next: NO_ENTRY,
            dst: l.dst,
            src: l.src,
            negate,
        });
    }
    if entries.is_empty() {
        return;
    }
    for e in &mut entries {
        e.taken_next = index.get(e.taken as usize).copied().unwrap_or(NO_ENTRY);
        e.fall_next = index.get(e.pc as usize + 2).copied().unwrap_or(NO_ENTRY);
    }
    let mut ops = prog.ops.to_vec();
    for (k, e) in entries.iter().enumerate() {
        if let Some(o) = ops.get_mut(e.pc as usize) {
            *o = Op { kind: Kind::LoadCmpRun, dst: e.dst, src: e.src, size: 0, a: k as u32, imm: 0 };
        }
    }
    prog.ops = ops.into_boxed_slice();
    prog.load_cmp = entries.into_boxed_slice();
}

// `Op` stays 16 bytes (see its docs), checked when the crate compiles.
const _: () = assert!(std::mem::size_of::<Op>() == 16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_tests_agree_with_direct_compares() {
        let samples = [0u64, 1, 2, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 1 << 32, i64::MAX as u64, 1 << 63, u64::MAX];
        let kinds = [
            Kind::Jeq64,
            Kind::Jne64,
            Kind::Jgt64,
            Kind::Jge64,
            Kind::Jlt64,
            Kind::Jle64,
            Kind::Jsgt64,
            Kind::Jsge64,
            Kind::Jslt64,
            Kind::Jsle64,
            Kind::Jeq32,
            Kind::Jne32,
            Kind::Jgt32,
            Kind::Jge32,
            Kind::Jlt32,
            Kind::Jle32,
            Kind::Jsgt32,
            Kind::Jsge32,
            Kind::Jslt32,
            Kind::Jsle32,
        ];
        for kind in kinds {
            for &v in &samples {
                for &x in &samples {
                    let (mask, flip, lo, span, negate) = range_test(kind, v).unwrap();
                    let fused = ((((x & mask) ^ flip).wrapping_sub(lo)) <= span) != negate;
                    let direct = crate::interp::condition(kind, x, v);
                    assert_eq!(fused, direct, "{kind:?} x={x:#x} v={v:#x}");
                }
            }
        }
    }
}
