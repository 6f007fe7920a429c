//! What the executor takes (`Subset::recognise`): the instructions
//! `bpf_convert_filter()` writes for a seccomp filter, and nothing else,
//! each with the registers it reads and writes (what liveness and the
//! fusions stand on).

use super::super::subset::plain;
use super::super::Subset;
use super::{head, i};
use crate::isa::insn::Insn;

/// Each kind of instruction reads and writes its registers of A, TMP and
/// X (bits 1, 2, 4): both operands of an ALU or compare with a register,
/// the same register once where it is both, the stored register of a
/// store, A at `exit`; nothing for `r6 = r1` and `ja`.
#[test]
fn each_instruction_reads_and_writes_its_registers() {
    let (a, t, x) = (1u8, 2u8, 4u8);
    let cases = [
        ("w0 += w2", i(0x0c, 0, 2, 0, 0), a | t, a),
        ("w2 += w7", i(0x0c, 2, 7, 0, 0), t | x, t),
        ("w7 += w7", i(0x0c, 7, 7, 0, 0), x, x),
        ("w0 += 5", i(0x04, 0, 0, 0, 5), a, a),
        ("w0 = w7", i(0xbc, 0, 7, 0, 0), x, a),
        ("w2 = 5", i(0xb4, 2, 0, 0, 5), 0, t),
        ("w7 = -w7", i(0x84, 7, 0, 0, 0), x, x),
        ("r0 = r7", i(0xbf, 0, 7, 0, 0), x, a),
        ("r6 = r1", i(0xbf, 6, 1, 0, 0), 0, 0),
        ("w7 = word 1", i(0x61, 7, 6, 4, 0), 0, x),
        ("w2 = *(u32 *)(fp - 4)", i(0x61, 2, 10, -4, 0), 0, t),
        ("*(u32 *)(fp - 8) = w0", i(0x63, 10, 0, -8, 0), a, 0),
        ("if r0 == 5", i(0x15, 0, 0, 0, 5), a, 0),
        ("if r2 & r2", i(0x4d, 2, 2, 0, 0), t, 0),
        ("if r0 > r7", i(0x2d, 0, 7, 0, 0), a | x, 0),
        ("if r7 >= r2", i(0x3d, 7, 2, 0, 0), x | t, 0),
        ("exit", i(0x95, 0, 0, 0, 0), a, 0),
        ("ja +0", i(0x05, 0, 0, 0, 0), 0, 0),
    ];
    for (what, insn, uses, defs) in cases {
        let p = plain(0, insn).unwrap_or_else(|| panic!("{what}: outside the subset"));
        assert_eq!((p.uses, p.defs), (uses, defs), "{what}");
    }
}

/// The subset refuses what no converted seccomp filter holds: the signed
/// and 64-bit ALU forms, junk in an ALU's `off`, 64-bit moves other than
/// among A, TMP and X or `r6 = r1`, context loads outside the 64-byte
/// `seccomp_data` or unaligned or through another pointer, signed and
/// 32-bit jumps, backward jumps, a last instruction other than `exit`;
/// and takes their converted neighbours. (The general interpreter runs
/// what it refuses.)
#[test]
fn the_subset_takes_converted_instructions_only() {
    let cases = [
        ("w0 = -w0", i(0x84, 0, 0, 0, 0), true),
        ("w0 >>= 1", i(0x74, 0, 0, 0, 1), true),
        ("w0 s>>= 1", i(0xc4, 0, 0, 0, 1), false),
        ("w0 /= 3", i(0x34, 0, 0, 0, 3), true),
        ("w0 s/= 3", i(0x34, 0, 0, 1, 3), false),
        ("w0 s%= 3", i(0x94, 0, 0, 1, 3), false),
        ("r0 += 1", i(0x07, 0, 0, 0, 1), false),
        ("r6 = r1", i(0xbf, 6, 1, 0, 0), true),
        ("r0 = r7", i(0xbf, 0, 7, 0, 0), true),
        ("r6 = r0", i(0xbf, 6, 0, 0, 0), false),
        ("r0 = r1", i(0xbf, 0, 1, 0, 0), false),
        ("w0 = word 0", i(0x61, 0, 6, 0, 0), true),
        ("w7 = word 15", i(0x61, 7, 6, 60, 0), true),
        ("w0 = *(u32 *)(r6 + 64)", i(0x61, 0, 6, 64, 0), false),
        ("w0 = *(u32 *)(r6 + 62)", i(0x61, 0, 6, 62, 0), false),
        ("w0 = *(u32 *)(r6 + 2)", i(0x61, 0, 6, 2, 0), false),
        ("w0 = *(u32 *)(r6 - 4)", i(0x61, 0, 6, -4, 0), false),
        ("w0 = *(u32 *)(r1 + 0)", i(0x61, 0, 1, 0, 0), false),
        ("w0 = *(u16 *)(r6 + 0)", i(0x69, 0, 6, 0, 0), false),
        ("if r0 > 5", i(0x25, 0, 0, 0, 5), true),
        ("if r0 s> 5", i(0x65, 0, 0, 0, 5), false),
        ("if w0 == 5", i(0x16, 0, 0, 0, 5), false),
        ("ja -2", i(0x05, 0, 0, -2, 0), false),
    ];
    for (what, insn, taken) in cases {
        let mut p = head(0, &[])[..3].to_vec();
        p.extend([insn, i(0x95, 0, 0, 0, 0)]);
        assert_eq!(Subset::recognise(&p).is_some(), taken, "{what}");
    }
    // An ALU op with junk in `off`, where the decoder takes one.
    for (what, insn) in [("w0 += 1, off 1", i(0x04, 0, 0, 1, 1)), ("w0 = -w0, off 1", i(0x84, 0, 0, 1, 0))] {
        let mut p = head(0, &[])[..3].to_vec();
        p.extend([insn, i(0x95, 0, 0, 0, 0)]);
        assert!(Subset::recognise(&p).is_none(), "{what}");
    }
    let mut p = head(0, &[])[..3].to_vec();
    p.push(i(0xb4, 0, 0, 0, 0));
    assert!(Subset::recognise(&p).is_none(), "the last instruction is no exit");
    p.push(i(0x95, 0, 0, 0, 0));
    assert!(Subset::recognise(&p).is_some(), "w0 = 0; exit");
    // Not even where no path reaches it.
    p.push(i(0xb4, 0, 0, 0, 1));
    assert!(Subset::recognise(&p).is_none(), "w0 = 0; exit; w0 = 1");
}

/// The stack the converter addresses is the sixteen aligned words below
/// the frame pointer (`fp - 4` to `fp - 64`, `BPF_MEMWORDS`): a store
/// anywhere else (at or above `fp`, past the sixteenth word, unaligned)
/// is no converted program's, and the executor does not take it.
#[test]
fn the_stack_is_the_sixteen_aligned_words_below_fp() {
    for off in [-68i16, -66, -64, -62, -8, -6, -4, -2, 0, 4] {
        let mut p = head(0, &[])[..3].to_vec();
        p.extend([i(0x63, 10, 0, off, 0), i(0x61, 0, 10, off, 0), i(0x95, 0, 0, 0, 0)]);
        let taken = Subset::recognise(&p).is_some();
        assert_eq!(taken, (-64..=-4).contains(&off) && off % 4 == 0, "fp{off:+}");
    }
}

/// What the subset asks on every path (`Subset::recognise`): a context
/// load after `r6 = r1`, a stack read after a write of its slot. A path
/// that jumps over the `r6 = r1` or the store, a read of another slot, a
/// load before the pointer: refused; both paths through a store or the
/// pointer: taken.
#[test]
fn loads_need_the_pointer_and_reads_a_store_on_every_path() {
    // The converter's prologue without its `r6 = r1`, then `body`, `exit`.
    let program = |body: &[Insn]| {
        let mut p = vec![i(0xac, 0, 0, 0, 0), i(0xac, 7, 7, 0, 0)];
        p.extend_from_slice(body);
        p.push(i(0x95, 0, 0, 0, 0));
        p
    };
    let (ctx, load) = (i(0xbf, 6, 1, 0, 0), i(0x61, 0, 6, 0, 0));
    let (store, read, read_other) = (i(0x63, 10, 0, -8, 0), i(0x61, 0, 10, -8, 0), i(0x61, 0, 10, -12, 0));
    let skip = i(0x15, 0, 0, 1, 0); // if r0 == 0 goto +1
    let cases = [
        ("pointer, load", vec![ctx, load], true),
        ("load, pointer", vec![load, ctx], false),
        ("pointer jumped over, load", vec![skip, ctx, load], false),
        ("pointer on both paths, load", vec![ctx, skip, ctx, load], true),
        ("store, read", vec![store, read], true),
        ("read", vec![read], false),
        ("store, read of another slot", vec![store, read_other], false),
        ("store jumped over, read", vec![skip, store, read], false),
        ("store on both paths, read", vec![store, skip, store, read], true),
    ];
    for (what, body, taken) in cases {
        assert_eq!(Subset::recognise(&program(&body)).is_some(), taken, "{what}");
    }
}
