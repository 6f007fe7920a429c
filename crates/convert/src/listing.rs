//! Side-by-side listings: each classic instruction followed by the eBPF
//! instructions the converter made of it.
//!
//! The eBPF side is the kernel's own text (`print_bpf_insn()`, via
//! [`ebpf::listing`]) preceded by the 8 raw bytes, so a listing can be diffed
//! against `bpftool prog dump xlated opcodes` and shows the fields the text
//! hides (the `src_reg = 7` the kernel copies into ALU-with-constant
//! instructions, for example):
//!
//! ```text
//!       ; prologue
//!    0: ac 00 00 00 00 00 00 00  (ac) w0 ^= w0
//!    1: ac 77 00 00 00 00 00 00  (ac) w7 ^= w7
//!    2: bf 16 00 00 00 00 00 00  (bf) r6 = r1
//!       ; (000) ld       [4]
//!    3: 61 60 04 00 00 00 00 00  (61) r0 = *(u32 *)(r6 +4)
//! ```
//!
//! The classic side is `tcpdump -d` text ([`cbpf::text::print_pcap`]:
//! `(000) ld       [4]`, absolute jump targets) of the program as the user
//! wrote it ([`cbpf::Program::original`]): seccomp's internal rewrites
//! (`ld [k]` → `LDX|W|ABS`) are shown as written.

use std::fmt::Write as _;

use crate::filter::{ConvertError, Converted};

/// The side-by-side listing of `prog` and its conversion `conv`.
///
/// Every line ends in `\n`. Classic instructions are comment lines
/// `      ; (PC) TEXT`; eBPF lines are `EPC: BYTES  TEXT` with the index
/// right-aligned in 4 columns like bpftool.
pub fn side_by_side(prog: &cbpf::Program, conv: &Converted) -> String {
    let mut out = String::new();
    let insns = &conv.insns;
    let write_range = |out: &mut String, range: std::ops::Range<usize>| {
        for epc in range {
            let Some(insn) = insns.get(epc) else { break };
            let bytes = insn.to_bytes();
            let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let text = ebpf::listing::format_insn_with(insn, insns.get(epc + 1), ebpf::listing::skb_helper_name);
            // Writing to a String cannot fail.
            let _ = writeln!(out, "{epc:4}: {}  {text}", hex.join(" "));
        }
    };
    let prologue = conv.pc_map.prologue_len();
    let _ = writeln!(out, "      ; prologue");
    write_range(&mut out, 0..prologue);
    let classic = cbpf::text::print_pcap(prog.original());
    let mut lines = classic.lines();
    for pc in 0..prog.len() {
        // print_pcap prints one line per instruction.
        let _ = writeln!(out, "      ; {}", lines.next().unwrap_or_default());
        if let Some(range) = conv.pc_map.range(cbpf::Pc(pc)) {
            write_range(&mut out, range);
        }
    }
    out
}

/// What testdata/convert's filetests expect from a conversion:
/// `error: convert: ...`, or the summary line (`new_len= stack_depth=
/// seen_ld_abs=`) followed, with `listing`, by [`side_by_side`]. The one
/// writer of that format, for the converter's own test and the
/// integration runner.
pub fn filetest_text(prog: &cbpf::Program, converted: &Result<Converted, ConvertError>, listing: bool) -> String {
    match converted {
        Err(e) => format!("error: convert: {e}\n"),
        Ok(out) => {
            let mut s = format!(
                "new_len={} stack_depth={} seen_ld_abs={}\n",
                out.insns.len(),
                out.stack_depth,
                out.seen_ld_abs
            );
            if listing {
                s.push_str(&side_by_side(prog, out));
            }
            s
        }
    }
}
