//! The graph's exact text on small programs: blocks, edges, returns drawn
//! per edge, colours, targets past the end, and the two front ends'
//! reading of classic and eBPF control flow.

use super::*;

/// The graph of `flows` (instruction `pc` reads `i{pc}`), seccomp returns.
/// `graph` asks for the flow and text of no pc past the end: the front
/// ends answer there only to be safe.
fn of(flows: &[Flow]) -> String {
    let inside = |pc: usize| assert!(pc < flows.len(), "asked past the end: pc {pc}");
    let flow = |pc: usize| {
        inside(pc);
        flows.get(pc).copied().unwrap_or(Flow::Return(None))
    };
    let text = |pc: usize| {
        inside(pc);
        format!("i{pc}")
    };
    graph("t", flows.len(), Returns::Seccomp, text, flow)
}

/// The graph's lines between the header and the closing brace.
fn body(graph: &str) -> Vec<&str> {
    let lines: Vec<&str> = graph.lines().collect();
    assert_eq!(lines.first(), Some(&"digraph \"t\" {"), "{graph}");
    assert_eq!(lines.last(), Some(&"}"), "{graph}");
    let node = "  node [shape=box, style=filled, fillcolor=white, fontname=\"monospace\"];";
    assert_eq!(lines.get(1), Some(&node), "{graph}");
    lines.get(2..lines.len() - 1).unwrap_or_default().to_vec()
}

const ALLOW: u32 = 0x7fff_0000;

#[test]
fn a_branch_to_two_returns_draws_each_return_on_its_edge() {
    let g = of(&[
        Flow::Next { skip: 1 },
        Flow::Branch { t: 3, f: 2 },
        Flow::Return(Some(ALLOW)),
        Flow::Next { skip: 1 },
        Flow::Return(Some(0)),
    ]);
    assert_eq!(
        body(&g),
        [
            "  b0 [label=\"i0\\li1\\l\"];",
            "  b3_0 [label=\"i3\\li4\\l\", fillcolor=salmon];",
            "  b0 -> b3_0 [label=\"true\"];",
            "  b2_0 [label=\"i2\\l\", fillcolor=palegreen];",
            "  b0 -> b2_0 [label=\"false\"];",
        ],
        "{g}"
    );
}

/// A jump into a straight line starts a block there; the line before it
/// falls into it with an unlabelled edge.
#[test]
fn a_jump_target_splits_a_straight_line() {
    let g = of(&[
        Flow::Branch { t: 2, f: 1 },
        Flow::Next { skip: 1 },
        Flow::Next { skip: 1 },
        Flow::Next { skip: 1 },
        Flow::Return(None),
    ]);
    assert_eq!(
        body(&g),
        [
            "  b0 [label=\"i0\\l\"];",
            "  b0 -> b2 [label=\"true\"];",
            "  b0 -> b1 [label=\"false\"];",
            "  b1 [label=\"i1\\l\"];",
            "  b1 -> b2;",
            "  b2 [label=\"i2\\li3\\li4\\l\", fillcolor=lightgray];",
        ],
        "{g}"
    );
    // The same after an unconditional jump: its target and the
    // instruction after it start blocks.
    let g = of(&[Flow::Jump(2), Flow::Return(Some(0)), Flow::Next { skip: 1 }, Flow::Next { skip: 1 }, Flow::Jump(1)]);
    assert_eq!(
        body(&g),
        [
            "  b0 [label=\"i0\\l\"];",
            "  b0 -> b2;",
            "  b2 [label=\"i2\\li3\\li4\\l\"];",
            "  b1_2 [label=\"i1\\l\", fillcolor=salmon];",
            "  b2 -> b1_2;",
        ],
        "{g}"
    );
}

/// A wide instruction's second slot is neither shown nor a block of its
/// own; a block of three instructions ending in a return is drawn once.
#[test]
fn a_wide_instruction_covers_two_slots() {
    let g = of(&[Flow::Next { skip: 2 }, Flow::Return(Some(7)), Flow::Return(Some(ALLOW))]);
    assert_eq!(body(&g), ["  b0 [label=\"i0\\li2\\l\", fillcolor=palegreen];"], "{g}");
    // Two wide instructions and a return: three slots shown, one node.
    let g = of(&[
        Flow::Next { skip: 2 },
        Flow::Return(Some(7)),
        Flow::Next { skip: 2 },
        Flow::Return(Some(7)),
        Flow::Return(Some(0)),
    ]);
    assert_eq!(body(&g), ["  b0 [label=\"i0\\li2\\li4\\l\", fillcolor=salmon];"], "{g}");
    // A wide instruction last in the program flows past its end.
    let g = of(&[Flow::Return(Some(0)), Flow::Next { skip: 2 }]);
    assert_eq!(
        body(&g),
        [
            "  b1 [label=\"i1\\l\"];",
            "  b1 -> b3;",
            "  b0 [label=\"i0\\l\", fillcolor=salmon];",
            "  b3 [label=\"pc 3: past the end of the program\", fillcolor=lightgray];",
        ],
        "{g}"
    );
}

/// A block that ends in a wide instruction (its next slot a jump target)
/// is followed by the block at that target, not by the wide instruction's
/// second slot.
#[test]
fn a_block_ending_in_a_wide_instruction_resumes_after_it() {
    let g = of(&[Flow::Branch { t: 3, f: 1 }, Flow::Next { skip: 2 }, Flow::Return(Some(7)), Flow::Return(None)]);
    assert_eq!(
        body(&g),
        [
            "  b0 [label=\"i0\\l\"];",
            "  b3_0 [label=\"i3\\l\", fillcolor=lightgray];",
            "  b0 -> b3_0 [label=\"true\"];",
            "  b0 -> b1 [label=\"false\"];",
            "  b1 [label=\"i1\\l\"];",
            "  b3_1 [label=\"i3\\l\", fillcolor=lightgray];",
            "  b1 -> b3_1;",
        ],
        "{g}"
    );
}

/// Targets past the end get one node each, however many edges reach them.
#[test]
fn targets_past_the_end_have_a_node_of_their_own() {
    let g = of(&[Flow::Branch { t: 9, f: 1 }, Flow::Jump(9)]);
    assert_eq!(
        body(&g),
        [
            "  b0 [label=\"i0\\l\"];",
            "  b0 -> b9 [label=\"true\"];",
            "  b0 -> b1 [label=\"false\"];",
            "  b1 [label=\"i1\\l\"];",
            "  b1 -> b9;",
            "  b9 [label=\"pc 9: past the end of the program\", fillcolor=lightgray];",
        ],
        "{g}"
    );
    // The end itself is past the end: a last instruction that falls through.
    let g = of(&[Flow::Next { skip: 1 }]);
    assert_eq!(
        body(&g),
        [
            "  b0 [label=\"i0\\l\"];",
            "  b0 -> b1;",
            "  b1 [label=\"pc 1: past the end of the program\", fillcolor=lightgray];"
        ],
        "{g}"
    );
}

/// A lone return no edge enters (the program's only block, or dead code)
/// is drawn once, in program order after the rest.
#[test]
fn returns_nothing_jumps_to_are_drawn_once() {
    let g = of(&[Flow::Return(Some(ALLOW)), Flow::Return(Some(0x0005_0001))]);
    assert_eq!(
        body(&g),
        ["  b0 [label=\"i0\\l\", fillcolor=palegreen];", "  b1 [label=\"i1\\l\", fillcolor=khaki];"],
        "{g}"
    );
    // Entered once, from a jump: drawn only on that edge.
    let g = of(&[Flow::Jump(2), Flow::Return(Some(0)), Flow::Return(Some(ALLOW))]);
    assert_eq!(
        body(&g),
        [
            "  b0 [label=\"i0\\l\"];",
            "  b2_0 [label=\"i2\\l\", fillcolor=palegreen];",
            "  b0 -> b2_0;",
            "  b1 [label=\"i1\\l\", fillcolor=salmon];",
        ],
        "{g}"
    );
}

/// Only blocks of at most two instructions that return are drawn per
/// edge: a two-instruction return is, a three-instruction one and a
/// two-instruction block that jumps are not.
#[test]
fn only_short_return_blocks_are_drawn_per_edge() {
    let two = of(&[Flow::Branch { t: 1, f: 1 }, Flow::Next { skip: 1 }, Flow::Return(Some(0))]);
    assert!(two.contains("  b1_0 [label=\"i1\\li2\\l\", fillcolor=salmon];"), "{two}");
    assert!(!two.contains("  b1 [label"), "{two}");
    let three =
        of(&[Flow::Branch { t: 1, f: 1 }, Flow::Next { skip: 1 }, Flow::Next { skip: 1 }, Flow::Return(Some(0))]);
    assert!(three.contains("  b1 [label=\"i1\\li2\\li3\\l\", fillcolor=salmon];"), "{three}");
    assert!(three.contains("  b0 -> b1 [label=\"true\"];"), "{three}");
    assert!(!three.contains("b1_0"), "{three}");
    let jump = of(&[Flow::Branch { t: 1, f: 1 }, Flow::Next { skip: 1 }, Flow::Jump(4), Flow::Return(None)]);
    assert!(jump.contains("  b1 [label=\"i1\\li2\\l\"];"), "{jump}");
    assert!(!jump.contains("b1_0"), "{jump}");
}

/// Past `BIG` blocks the graph asks dot to bound its layout work.
#[test]
fn big_graphs_bound_the_layout() {
    let bound = "  graph [ordering=out, mclimit=0.01, nslimit=0.5, nslimit1=0.5];";
    let returns = |n: usize| of(&vec![Flow::Return(Some(0)); n]);
    assert!(!returns(BIG).contains(bound));
    assert_eq!(body(&returns(BIG + 1)).first(), Some(&bound));
}

#[test]
fn returns_are_filled_by_what_they_return() {
    let seccomp = [
        (ALLOW, "palegreen"),
        (0x7ffc_0000, "palegreen"),
        (0x0005_0001, "khaki"),
        (0x7ff0_0007, "lightblue"),
        (0x7fc0_0000, "lightblue"),
        (0x0003_0000, "plum"),
        (0, "salmon"),
        (0x8000_0000, "salmon"),
        (0x1234_0000, "lightgray"),
    ];
    for (v, colour) in seccomp {
        assert_eq!(fill(Returns::Seccomp, Some(v)), colour, "{v:#x}");
    }
    assert_eq!(fill(Returns::Socket, Some(0)), "salmon");
    assert_eq!(fill(Returns::Socket, Some(1)), "palegreen");
    assert_eq!(fill(Returns::Socket, Some(u32::MAX)), "palegreen");
    assert_eq!(fill(Returns::Socket, None), "lightgray");
    assert_eq!(fill(Returns::Seccomp, None), "lightgray");
}

#[test]
fn names_and_text_are_escaped() {
    assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
    let g = graph("x\"y", 1, Returns::Socket, |_| "ret \"#0\"".into(), |_| Flow::Return(Some(0)));
    assert!(g.starts_with("digraph \"x\\\"y\" {\n"), "{g}");
    assert!(g.contains("  b0 [label=\"ret \\\"#0\\\"\\l\", fillcolor=salmon];"), "{g}");
}

/// The classic front end: `ja` and both edges of a conditional jump where
/// the program says, returns by `ret`, a branch's text up to its condition.
#[test]
fn classic_programs_branch_where_their_jumps_say() {
    let insns = |text: &str| cbpf::text::parse(text.as_bytes(), cbpf::text::Format::Asm).unwrap();
    let prog =
        insns("ld [0]\njeq #59, kill, skip\nskip: ja computed\nkill: ret #0\ncomputed: ret a\nret #0x7fff0000\n");
    let g = classic(&prog, Returns::Seccomp, Some(seccomp::Arch::X86_64));
    let edges: Vec<&str> = g.lines().filter(|l| l.contains("->")).collect();
    assert_eq!(edges, ["  b0 -> b3_0 [label=\"true\"];", "  b0 -> b2 [label=\"false\"];", "  b2 -> b4_2;"], "{g}");
    assert!(g.contains("b0 [label=\"0000: A = sys_number\\l0001: if (A == execve)\\l\"];"), "{g}");
    assert!(g.contains("fillcolor=salmon"), "{g}");
    assert!(g.contains("b4_2 [label=\"0004: return A\\l\", fillcolor=lightgray]"), "{g}");
    // The `ret ALLOW` nothing reaches is still drawn.
    assert!(g.contains("b5 [label=\"0005: return ALLOW\\l\", fillcolor=palegreen]"), "{g}");
    // A `jeq` whose true edge falls through still says its condition only.
    let g =
        classic(&insns("ld [0]\njeq #59, kill, allow\nkill: ret #0\nallow: ret #0x7fff0000\n"), Returns::Seccomp, None);
    assert!(g.contains("0001: if (A == 0x3b)\\l"), "{g}");
    assert!(g.contains("b0 -> b2_0 [label=\"true\"]") && g.contains("b0 -> b3_0 [label=\"false\"]"), "{g}");
}

/// The eBPF front end fills an `exit` by the constant its straight line
/// last moved into r0, grey where r0 was computed or a jump lands between.
#[test]
fn ebpf_exits_are_filled_by_the_constant_moved_into_r0() {
    let fills = |source: &str| -> Vec<String> {
        let insns = ebpf::asm::assemble(source).unwrap();
        let g = ebpf(&insns, Returns::Seccomp, |_| None);
        g.lines()
            .filter(|l| l.starts_with("  b"))
            .filter_map(|l| l.split("fillcolor=").nth(1))
            .map(|c| c.trim_end_matches("];").to_string())
            .collect()
    };
    assert_eq!(fills("mov32 %r0, 0x7fff0000\nexit\n"), ["palegreen"]);
    assert_eq!(fills("mov32 %r0, 0\nmov %r1, 1\nexit\n"), ["salmon"]);
    for computed in [
        "mov32 %r0, 0\nadd32 %r0, 1\nexit\n",
        "mov32 %r0, 0\nneg %r0\nexit\n",
        "mov32 %r0, 0\nmovsx832 %r0, %r1\nexit\n",
        "mov32 %r0, 0\nbe16 %r0\nexit\n",
        "mov32 %r0, 0\nlddw %r0, 0x7fff0000\nexit\n",
        "mov32 %r0, 0\nldxw %r0, [%r1]\nexit\n",
        "mov32 %r0, 0\nldxsw %r0, [%r1]\nexit\n",
        "mov32 %r0, 0\nldabsw 0\nexit\n",
        "mov32 %r0, 0\nldindw %r1, 0\nexit\n",
        "mov32 %r0, 0\ncall 1\nexit\n",
        "mov32 %r0, 0\ncallx %r1\nexit\n",
    ] {
        assert_eq!(fills(computed), ["lightgray"], "{computed}");
    }
    // A jump landing on the `exit` cuts the straight line: r0 is whatever
    // the jump brought (the `exit` is drawn on both edges into it). One
    // landing on the move does not.
    assert_eq!(fills("mov32 %r0, 0\njeq %r1, 0, +1\nmov32 %r0, 0x7fff0000\nexit\n"), ["lightgray", "lightgray"]);
    assert_eq!(fills("mov32 %r0, 0\nja +0\nmov32 %r0, 0x7fff0000\nexit\n"), ["palegreen"]);
    assert_eq!(fills("mov32 %r0, 0\ngotol +1\nmov32 %r0, 0x7fff0000\nexit\n"), ["lightgray", "lightgray"]);
    // Drawn on both edges into it (the move is dead code, a block of its own).
    assert_eq!(fills("ja +1\nmov32 %r0, 0\nexit\n"), ["lightgray", "lightgray"]);
}

/// eBPF jumps go `off + 1` on, a wide `lddw` is one line, an edge to a
/// jump's target and its fall-through.
#[test]
fn ebpf_programs_branch_where_their_offsets_say() {
    let insns = ebpf::asm::assemble("lddw %r1, 0x100000000\njeq %r1, 0, +1\nexit\nmov32 %r0, 1\ngotol -3\n").unwrap();
    let g = ebpf(&insns, Returns::Socket, |_| None);
    let edges: Vec<&str> = g.lines().filter(|l| l.contains("->")).collect();
    assert_eq!(edges, ["  b0 -> b4 [label=\"true\"];", "  b0 -> b3_0 [label=\"false\"];", "  b4 -> b3_4;"], "{g}");
    assert!(g.contains("   0: (18) r1 = 0x100000000\\l   2: (15) if r1 == 0x0 goto pc+1\\l"), "{g}");
}
