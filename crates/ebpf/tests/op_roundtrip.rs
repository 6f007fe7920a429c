//! `ebpf::op`: one decoder and one encoder that agree, and tables in the
//! kernel's `BPF_INSN_MAP` order (kernel/bpf/core.c, Linux 6.18).

use ebpf::op::{reserved_field, AluOp, AtomicOp, CallKind, Endian, JmpCond, Op, Operand, Size, Width};
use ebpf::Insn;

/// Field values that exercise every meaning `off` and `imm` have.
const OFFS: [i16; 6] = [0, 1, 8, 16, 32, -5];
const IMMS: [i32; 12] = [0, 1, 16, 32, 64, -1, 0x41, 0xa1, 0xe1, 0xf1, 0x100, 0x110];

#[test]
fn decode_of_encode_is_the_identity_on_every_accepted_encoding() {
    let mut accepted = 0;
    for code in 0..=255u8 {
        for regs in [0x00u8, 0x21, 0x7a, 0xf3] {
            for off in OFFS {
                for imm in IMMS {
                    let insn = Insn { code, regs, off, imm };
                    let hi = Insn::new(0, 0, 0, 0, 0x1234_5678);
                    let Ok(op) = Op::decode(insn, Some(hi)) else { continue };
                    accepted += 1;
                    let enc = op.encode();
                    let slots = enc.slots();
                    assert_eq!(slots.len(), op.slots());
                    let again = Op::decode(enc.first(), slots.get(1).copied());
                    assert_eq!(again, Ok(op), "{insn:?} -> {op:?} -> {slots:?}");
                    // The encoding is the instruction with its unused fields cleared.
                    assert_eq!(enc.first().code, insn.code, "{insn:?}");
                    assert_eq!(reserved_field(&op, enc.first()), None);
                    let clean = enc.first();
                    for (field, same) in [
                        ("dst", clean.dst() == insn.dst()),
                        ("src", clean.src() == insn.src()),
                        ("off", clean.off == insn.off),
                        ("imm", clean.imm == insn.imm),
                    ] {
                        if !same {
                            assert!(reserved_field(&op, insn).is_some(), "{insn:?}: {field} differs");
                        }
                    }
                }
            }
        }
    }
    assert!(accepted > 10_000, "{accepted}");
}

/// Every op the tables can describe.
fn every_op() -> Vec<Op> {
    let mut ops = Vec::new();
    let operands = [Operand::K(-7), Operand::K(0x7fff_ffff), Operand::X(3)];
    for width in Width::ALL {
        for op in AluOp::ALL {
            for src in operands {
                ops.push(Op::Alu { width, op, dst: 1, src });
            }
        }
        ops.push(Op::Neg { width, dst: 4 });
        for cond in JmpCond::ALL {
            for src in operands {
                ops.push(Op::Jmp { width, cond, dst: 2, src, off: -3 });
            }
        }
    }
    for from in [Size::B, Size::H] {
        for width in Width::ALL {
            ops.push(Op::MovSx { width, dst: 1, src: 2, from });
        }
    }
    ops.push(Op::MovSx { width: Width::W64, dst: 1, src: 2, from: Size::W });
    for endian in Endian::ALL {
        for bits in [16, 32, 64] {
            ops.push(Op::End { endian, dst: 5, bits });
        }
    }
    ops.extend([Op::Ja { off: -1 }, Op::Gotol { imm: 70_000 }, Op::Exit, Op::Callx { dst: 3 }]);
    for kind in [CallKind::Helper, CallKind::Local, CallKind::Kfunc] {
        ops.push(Op::Call { kind, imm: 12 });
    }
    ops.push(Op::LdImm64 { dst: 9, imm: 0x8000_0001_ffff_fffe });
    for size in Size::ALL {
        ops.push(Op::LdAbs { size, imm: 14 });
        ops.push(Op::LdInd { size, src: 7, imm: -2 });
        ops.push(Op::Ldx { size, dst: 1, src: 10, off: -8 });
        ops.push(Op::St { size, dst: 10, off: -4, imm: 9 });
        ops.push(Op::Stx { size, dst: 10, src: 1, off: -16 });
        if size != Size::DW {
            ops.push(Op::Ldsx { size, dst: 1, src: 2, off: 6 });
        }
        for op in AtomicOp::ALL.into_iter().filter(|o| o.allows(size)) {
            ops.push(Op::Atomic { size, op, dst: 1, src: 2, off: 8 });
        }
    }
    ops
}

#[test]
fn encode_then_decode_gives_back_every_op() {
    for op in every_op() {
        let enc = op.encode();
        let back = Op::decode(enc.first(), enc.slots().get(1).copied());
        assert_eq!(back, Ok(op), "{:?}", enc.slots());
    }
}

#[test]
fn tables_follow_bpf_insn_map() {
    // BPF_INSN_MAP: ADD SUB AND OR LSH RSH XOR MUL MOV ARSH DIV MOD (the
    // signed RFC 9669 forms right after their unsigned ones).
    let alu: Vec<&str> = AluOp::ALL.iter().map(|o| o.mnemonic()).collect();
    assert_eq!(
        alu,
        ["add", "sub", "and", "or", "lsh", "rsh", "xor", "mul", "mov", "arsh", "div", "sdiv", "mod", "smod"]
    );
    // BPF_INSN_MAP: JEQ JNE JGT JLT JGE JLE JSGT JSLT JSGE JSLE JSET.
    let jmp: Vec<&str> = JmpCond::ALL.iter().map(|c| c.mnemonic()).collect();
    assert_eq!(jmp, ["jeq", "jne", "jgt", "jlt", "jge", "jle", "jsgt", "jslt", "jsge", "jsle", "jset"]);
    // BPF_INSN_MAP: B H W DW.
    let sizes: Vec<u8> = Size::ALL.iter().map(|s| s.bytes()).collect();
    assert_eq!(sizes, [1, 2, 4, 8]);
    // ___bpf_prog_run()'s STX_ATOMIC switch: ADD AND OR XOR (each then with
    // BPF_FETCH), XCHG, CMPXCHG.
    let atomics: Vec<i32> = AtomicOp::ALL.iter().map(|o| o.bits()).collect();
    assert_eq!(atomics, [0x00, 0x01, 0x50, 0x51, 0x40, 0x41, 0xa0, 0xa1, 0xe1, 0xf1, 0x100, 0x110]);
    // The bits are the UAPI values.
    let bits: Vec<u8> = AluOp::ALL.iter().map(|o| o.bits()).collect();
    assert_eq!(bits, [0x00, 0x10, 0x50, 0x40, 0x60, 0x70, 0xa0, 0x20, 0xb0, 0xc0, 0x30, 0x30, 0x90, 0x90]);
    let bits: Vec<u8> = JmpCond::ALL.iter().map(|c| c.bits()).collect();
    assert_eq!(bits, [0x10, 0x50, 0x20, 0xa0, 0x30, 0xb0, 0x60, 0xc0, 0x70, 0xd0, 0x40]);
    // Each width's classes (BPF_ALU 0x04 / BPF_ALU64 0x07, BPF_JMP32 0x06 /
    // BPF_JMP 0x05), print_bpf_insn()'s register prefix and the
    // conformance suite's `32` suffix.
    let widths: Vec<(u8, u8, char, &str)> =
        Width::ALL.iter().map(|w| (w.alu_class(), w.jmp_class(), w.kernel_reg_prefix(), w.mnemonic_suffix())).collect();
    assert_eq!(widths, [(0x04, 0x06, 'w', "32"), (0x07, 0x05, 'r', "")]);
    // The shifts (whose K the loader masks to the width) and the signed compares.
    let shifts: Vec<&str> = AluOp::ALL.iter().filter(|o| o.is_shift()).map(|o| o.mnemonic()).collect();
    assert_eq!(shifts, ["lsh", "rsh", "arsh"]);
    let signed: Vec<&str> = JmpCond::ALL.iter().filter(|c| c.is_signed()).map(|c| c.mnemonic()).collect();
    assert_eq!(signed, ["jsgt", "jslt", "jsge", "jsle"]);
    // Sizes by their byte count, and nothing else.
    let by_bytes: Vec<Option<Size>> = [1, 2, 4, 8, 0, 3, 16].into_iter().map(Size::from_bytes).collect();
    assert_eq!(by_bytes, [Some(Size::B), Some(Size::H), Some(Size::W), Some(Size::DW), None, None, None]);
    // The verifier's atomics: read-modify-write (and XCHG, CMPXCHG) on W and DW
    // only; load-acquire and store-release on every size.
    for op in AtomicOp::ALL {
        let allowed: Vec<Size> = Size::ALL.into_iter().filter(|&s| op.allows(s)).collect();
        let want: &[Size] =
            if op.mnemonic().is_none() { &[Size::B, Size::H, Size::W, Size::DW] } else { &[Size::W, Size::DW] };
        assert_eq!(allowed, want, "{op:?}");
    }
}

#[test]
fn evaluations_match_the_kernel_cases() {
    assert_eq!(AluOp::Sub.eval(Width::W32, 1, 2), 0xffff_ffff);
    assert_eq!(AluOp::Div.eval(Width::W64, 7, 0), 0);
    assert_eq!(AluOp::Mod.eval(Width::W64, 7, 0), 7);
    assert_eq!(AluOp::SDiv.eval(Width::W32, (-9i32) as u32 as u64, 2), (-4i32) as u32 as u64);
    assert_eq!(AluOp::Arsh.eval(Width::W32, 0x8000_0000, 4), 0xf800_0000);
    assert!(JmpCond::Slt.eval(Width::W32, 0xffff_ffff, 0));
    assert!(!JmpCond::Slt.eval(Width::W64, 0xffff_ffff, 0));
    assert!(JmpCond::Set.eval(Width::W64, 6, 2));
}

/// One eBPF decoder: outside the ISA table (`isa/op/`: the decoder and encoder in
/// `mod.rs`, the per-family tables in `tables.rs`; the constants of
/// `isa/opcode.rs`, `struct bpf_insn` in `isa/insn.rs`) and the kernel listing's
/// mirror of `print_bpf_insn()` for encodings the decoder refuses
/// (`listing.rs`) and the model of `___bpf_prog_run()`'s jump table indexed
/// by the raw opcode (`exec/plain.rs`), no library code reads opcode bits; it matches
/// [`Op`]. The rbpf adapter of the engine crate is held to the same rule.
#[test]
fn no_module_outside_the_isa_table_decodes_opcode_bits() {
    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let allowed = ["isa/op/mod.rs", "isa/op/tables.rs", "isa/opcode.rs", "isa/insn.rs", "listing.rs", "exec/plain.rs"];
    files.retain(|p| !allowed.iter().any(|n| p.ends_with(n)));
    assert!(files.len() > 20, "{} files", files.len());
    files.push(root.join("../engine/src/rbpf_adapter.rs"));
    let forbidden = [".code ==", ".code !=", ".code &", "code & 0x", ".class()", "opcode::*"];
    let mut hits = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // Library code only: unit tests may write raw instructions.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        // `use crate::opcode::{..}` over several lines: registers only.
        for (at, _) in code.match_indices("opcode::{") {
            let list = code[at..].split('}').next().unwrap_or("");
            if list.contains("BPF_") {
                hits.push(format!("{}: {list}}}", file.display()));
            }
        }
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            let bits_import = line.contains("opcode::") && line.contains("BPF_");
            if bits_import || forbidden.iter().any(|f| line.contains(f)) {
                hits.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(hits.is_empty(), "raw opcode decoding outside ebpf::op:\n{}", hits.join("\n"));
}

/// A refused instruction's error says what it was (the family whose
/// fields a checker judges before the refused variant), so no checker
/// decodes a doctored copy to find out.
#[test]
fn decode_errors_carry_the_family() {
    use ebpf::op::{Family, OpError};
    let fam = |code, regs, off, imm| Op::decode(Insn { code, regs, off, imm }, None).unwrap_err().family();
    // ALU64 | END | X: no such byte-order operation; END with width 8.
    assert_eq!(fam(0xdf, 0, 0, 16), Family::End);
    assert_eq!(fam(0xd4, 0, 0, 8), Family::End);
    assert_eq!(Family::End.unused_before_variant(), ["src", "off"]);
    // call with src 3: a call; its unused fields are dst and off.
    assert!(matches!(Op::decode(Insn::new(0x85, 0, 3, 0, 1), None), Err(OpError::UnsupportedCall { src: 3 })));
    assert_eq!(fam(0x85, 0x30, 0, 1), Family::Call);
    assert_eq!(Family::Call.unused_before_variant(), ["dst", "off"]);
    // neg with the X bit, movsx from 64 bits on ALU32, sdiv with off 2.
    assert_eq!(fam(0x8c, 0, 0, 0), Family::Neg);
    assert_eq!(fam(0xbc, 0x10, 32, 0), Family::MovSx);
    assert_eq!(fam(0x3f, 0x10, 2, 0), Family::Alu);
    // An atomic with an unknown operation, a store of an unknown mode, a
    // load of one, a jump condition that does not exist.
    assert_eq!(fam(0xdb, 0x10, 0, 0x7f), Family::Atomic);
    assert_eq!(fam(0x8a, 0, 0, 0), Family::Store);
    assert_eq!(fam(0x80, 0, 0, 0), Family::Load);
    assert_eq!(fam(0xe5, 0, 0, 0), Family::Jump);
    assert_eq!(fam(0x18, 0, 0, 0), Family::LdImm64);
    for family in [Family::Neg, Family::MovSx, Family::Alu, Family::Atomic, Family::Jump] {
        assert!(family.unused_before_variant().is_empty(), "{family:?}");
    }
}
