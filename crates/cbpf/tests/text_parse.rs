#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Hand-written reader tests. Expected instructions come from the actions of
//! tools/bpf/bpf_exp.y (Linux 6.18) and the UAPI header values.

use cbpf::text::{detect, parse, print_asm, print_c, print_ddd, print_ddd_line, print_pcap, Format};
use cbpf::{raw, Insn};

fn asm(text: &str) -> Vec<Insn> {
    parse(text.as_bytes(), Format::Asm).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn asm1(text: &str) -> Insn {
    let p = asm(text);
    assert_eq!(p.len(), 1, "{text:?}");
    p[0]
}

fn s(code: u16, k: u32) -> Insn {
    Insn::stmt(code, k)
}

fn j(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn::jump(code, k, jt, jf)
}

#[test]
fn every_load_and_store_operand_form() {
    let cases: &[(&str, Insn)] = &[
        ("ld #5", s(0x00, 5)),
        ("ld #len", s(0x80, 0)),
        ("ld len", s(0x80, 0)),
        ("ld M[3]", s(0x60, 3)),
        ("ld [12]", s(0x20, 12)),
        ("ld [x + 4]", s(0x40, 4)),
        ("ld [%x + 4]", s(0x40, 4)),
        ("ld [x+4]", s(0x40, 4)),
        ("ld [x + -4]", s(0x40, 0xffff_fffc)),
        ("ldh [12]", s(0x28, 12)),
        ("ldh [x + 2]", s(0x48, 2)),
        ("ldh [%x + 2]", s(0x48, 2)),
        ("ldb [23]", s(0x30, 23)),
        ("ldb [x + 1]", s(0x50, 1)),
        ("ldb [%x + 1]", s(0x50, 1)),
        ("ldi #7", s(0x00, 7)),
        ("ldi 7", s(0x00, 7)),
        ("ldxi #7", s(0x01, 7)),
        ("ldxi 7", s(0x01, 7)),
        ("ldx #9", s(0x01, 9)),
        ("ldx len", s(0x81, 0)),
        ("ldx #len", s(0x81, 0)),
        ("ldx M[2]", s(0x61, 2)),
        ("ldx 4*([14]&0xf)", s(0xb1, 14)),
        ("ldxb 4*([14]&0xf)", s(0xb1, 14)),
        ("ldxb 4 * ( [ 14 ] & 0xf )", s(0xb1, 14)),
        ("ldxb 0x4*([14]&15)", s(0xb1, 14)),
        ("st M[1]", s(0x02, 1)),
        ("stx M[15]", s(0x03, 15)),
        ("ret #1", s(0x06, 1)),
        ("ret a", s(0x16, 0)),
        ("ret %a", s(0x16, 0)),
        ("ret x", s(0x0e, 0)),
        ("ret %x", s(0x0e, 0)),
        ("tax", s(0x07, 0)),
        ("txa", s(0x87, 0)),
        ("neg", s(0x84, 0)),
    ];
    for &(text, want) in cases {
        assert_eq!(asm1(text), want, "{text}");
    }
}

#[test]
fn every_alu_operation_with_each_operand() {
    let ops: &[(&str, u16)] = &[
        ("add", 0x00),
        ("sub", 0x10),
        ("mul", 0x20),
        ("div", 0x30),
        ("or", 0x40),
        ("and", 0x50),
        ("lsh", 0x60),
        ("rsh", 0x70),
        ("mod", 0x90),
        ("xor", 0xa0),
    ];
    for &(m, op) in ops {
        assert_eq!(asm1(&format!("{m} #3")), s(0x04 | op, 3), "{m} #3");
        assert_eq!(asm1(&format!("{m} x")), s(0x0c | op, 0), "{m} x");
        assert_eq!(asm1(&format!("{m} %x")), s(0x0c | op, 0), "{m} %x");
        assert_eq!(asm1(&format!("{} X", m.to_uppercase())), s(0x0c | op, 0), "{m} X");
    }
}

#[test]
fn every_ancillary_name_with_every_load_size() {
    // bpf_exp.l: "#"?("name") with SKF_AD_* values; bpf_exp.y: ld/ldh/ldb
    // extension -> LD|{W,H,B}|ABS with k = SKF_AD_OFF + x.
    let names: &[(&str, u32)] = &[
        ("proto", 0),
        ("type", 4),
        ("ifidx", 8),
        ("nla", 12),
        ("nlan", 16),
        ("mark", 20),
        ("queue", 24),
        ("hatype", 28),
        ("rxhash", 32),
        ("cpu", 36),
        ("vlan_tci", 44),
        ("vlan_avail", 48),
        ("vlan_pr", 48),
        ("poff", 52),
        ("rand", 56),
        ("vlan_tpid", 60),
    ];
    for &(name, x) in names {
        for (m, code) in [("ld", 0x20), ("ldh", 0x28), ("ldb", 0x30)] {
            let want = s(code, 0xffff_f000 + x);
            assert_eq!(asm1(&format!("{m} #{name}")), want, "{m} #{name}");
            assert_eq!(asm1(&format!("{m} {name}")), want, "{m} {name}");
            assert_eq!(asm1(&format!("{m} #{}", name.to_uppercase())), want, "{m} #{name} upper case");
        }
    }
    // ldx has no extension form.
    assert!(parse(b"ldx #proto", Format::Asm).is_err());
}

#[test]
fn jumps_one_and_two_targets_and_inverted_forms() {
    let p = asm("        jeq #1, tt, ff     ; 0
                 jneq #2, ff       ; 1: JEQ, jf only
                 jlt #3, ff        ; 2: JGE, jf only
                 jle x, ff         ; 3: JGT|X, jf only
                 jgt %x, tt        ; 4: jt only, jf 0
                 jge #4, tt, ff     ; 5
                 jset #8, tt       ; 6
                 ja ff             ; 7
         tt:     ret #1            ; 8
         ff:     ret #0            ; 9");
    assert_eq!(
        p,
        vec![
            j(0x15, 1, 7, 8),
            j(0x15, 2, 0, 7),
            j(0x35, 3, 0, 6),
            j(0x2d, 0, 0, 5),
            j(0x2d, 0, 3, 0),
            j(0x35, 4, 2, 3),
            j(0x45, 8, 1, 0),
            s(0x05, 1),
            s(0x06, 1),
            s(0x06, 0),
        ]
    );
    // Aliases: jne = jneq, jmp = ja; X forms for every conditional.
    let p = asm("jne #2, ee\njmp ee\njeq x, ee\njge x, ee, ee\njset %x, ee\nee: ret a");
    assert_eq!(p, vec![j(0x15, 2, 0, 4), s(0x05, 3), j(0x1d, 0, 2, 0), j(0x3d, 0, 1, 1), j(0x4d, 0, 0, 0), s(0x16, 0)]);
    // A target 255 instructions ahead still fits jt.
    let mut text = String::from("jeq #0, far\n");
    text.push_str(&"ld #0\n".repeat(255));
    text.push_str("far: ret #0\n");
    assert_eq!(asm(&text)[0], j(0x15, 0, 255, 0));
    // `ja` reaches further than 255.
    let text = format!("ja far\n{}far: ret #0\n", "ld #0\n".repeat(1000));
    assert_eq!(asm(&text)[0], s(0x05, 1000));
}

#[test]
fn numbers_as_the_lexer_reads_them() {
    let cases: &[(&str, u32)] = &[
        ("0", 0),
        ("42", 42),
        ("+42", 42),
        ("0x1F", 31),
        ("0X1f", 31),
        ("017", 15),
        ("0b101", 5),
        ("0B11", 3),
        ("-1", 0xffff_ffff),
        ("-4096", 0xffff_f000),
        ("-2147483648", 0x8000_0000),
        ("4294967295", 0xffff_ffff),
        ("0xffffffff", 0xffff_ffff),
    ];
    for &(n, want) in cases {
        assert_eq!(asm1(&format!("ld #{n}")), s(0, want), "{n}");
        // The same number further into a text, with more after it.
        assert_eq!(asm(&format!("ret #0\nld #{n}\nret a ; more text")), vec![s(6, 0), s(0, want), s(0x16, 0)], "{n}");
    }
}

#[test]
fn comments_case_and_labels() {
    let p = asm("# a comment line (first column)\n\
         #define NOT_C_HERE 1\n\
         /* block\n comment */ LD [12] ; trailing\n\
         Lbl_2:\n\
         \tJEQ #0x800, Lbl_2x /* inline */\n\
         ldx m[1]\n\
         Lbl_2x: RET #0\r\n");
    assert_eq!(p, vec![s(0x20, 12), j(0x15, 0x800, 1, 0), s(0x61, 1), s(0x06, 0)]);
    // Labels are case-sensitive.
    assert!(parse(b"ja Foo\nfoo: ret #0", Format::Asm).is_err());
    // A line that is exactly `#len` is the token, as flex's rule order makes it.
    assert_eq!(asm("ld\n#len\nret a"), vec![s(0x80, 0), s(0x16, 0)]);
    // A whole line `#word` that is no keyword is still a comment.
    assert_eq!(asm("#comment\nret #0"), vec![s(0x06, 0)]);
}

#[test]
fn raw_directive_places_any_instruction() {
    assert_eq!(asm1(".raw 0x21, 0, 0, 4"), s(0x21, 4));
    assert_eq!(asm1(".RAW 7, 1, 2, 0xfffff000"), j(0x07, 0xffff_f000, 1, 2));
    assert_eq!(asm1(".raw 0xffff, 255, 255, -1"), j(0xffff, 0xffff_ffff, 255, 255));
    // Printers use it only when needed.
    assert_eq!(print_asm(&[s(0x07, 0), s(0x06, 0)]), "\ttax\n\tret #0\n");
    let odd = print_asm(&[s(0x07, 5), s(0x06, 0)]);
    assert!(odd.starts_with("\t.raw 0x0007, 0, 0, 0x00000005\t; tax,"), "{odd}");
}

#[test]
fn printers_match_the_reference_tools() {
    // tcpdump -d icmp / -dd / -ddd (libpcap), and bpf_asm's default output.
    let p = vec![s(0x28, 12), j(0x15, 0x800, 0, 3), s(0x30, 23), j(0x15, 1, 0, 1), s(0x06, 262144), s(0x06, 0)];
    assert_eq!(
        print_pcap(&p),
        "(000) ldh      [12]\n\
         (001) jeq      #0x800           jt 2\tjf 5\n\
         (002) ldb      [23]\n\
         (003) jeq      #0x1             jt 4\tjf 5\n\
         (004) ret      #262144\n\
         (005) ret      #0\n"
    );
    assert_eq!(
        print_c(&p),
        "{ 0x28, 0, 0, 0x0000000c },\n{ 0x15, 0, 3, 0x00000800 },\n{ 0x30, 0, 0, 0x00000017 },\n\
         { 0x15, 0, 1, 0x00000001 },\n{ 0x6, 0, 0, 0x00040000 },\n{ 0x6, 0, 0, 0x00000000 },\n"
    );
    assert_eq!(print_ddd(&p), "6\n40 0 0 12\n21 0 3 2048\n48 0 0 23\n21 0 1 1\n6 0 0 262144\n6 0 0 0\n");
    assert_eq!(print_ddd_line(&p), "6,40 0 0 12,21 0 3 2048,48 0 0 23,21 0 1 1,6 0 0 262144,6 0 0 0,\n");
    assert_eq!(
        print_asm(&p),
        "\tldh [12]\n\tjeq #2048, L2, L5\nL2:\tldb [23]\n\tjeq #1, L4, L5\nL4:\tret #0x40000\nL5:\tret #0\n"
    );
    // pcap: symbolic ancillary loads, signed %d, operand-less lines, unimp.
    let q = vec![s(0x20, 0xffff_f000), s(0x28, 0xffff_f028), s(0x16, 0), s(0x06, 0xffff_ffff), s(0x21, 4), s(0x05, 0)];
    assert_eq!(
        print_pcap(&q),
        "(000) ld       [proto]\n(001) ldh      [xor_x]\n(002) ret\n(003) ret      #-1\n(004) unimp    0x21\n(005) ja       6\n"
    );
}

#[test]
fn c_tcpdump_and_bpf_asm_c_output() {
    let tcpdump = "{ 0x28, 0, 0, 0x0000000c },\n{ 0x15, 0, 1, 0x00000800 },\n{ 0x6, 0, 0, 0x00040000 },\n{ 0x6, 0, 0, 0x00000000 },\n";
    let want = vec![s(0x28, 12), j(0x15, 0x800, 0, 1), s(0x06, 0x40000), s(0x06, 0)];
    assert_eq!(parse(tcpdump.as_bytes(), Format::C).unwrap(), want);
    let bpf_asm_c = "{ 0x28,  0,  0, 0x0000000c },\n{ 0x15,  0,  1, 0x00000800 },\n{ 0x06,  0,  0, 0x00040000 },\n{ 0x06,  0,  0, 0000000000 },\n";
    assert_eq!(parse(bpf_asm_c.as_bytes(), Format::C).unwrap(), want);
    assert_eq!(detect(tcpdump.as_bytes()), Format::C);
}

#[test]
fn c_seccomp_tools_carray() {
    let text = "unsigned char bpf[] = {32,0,0,0,4,0,0,0,21,0,0,1,62,0,0,192,6,0,0,0,0,0,255,127,6,0,0,0,0,0,0,0};\n";
    assert_eq!(
        parse(text.as_bytes(), Format::C).unwrap(),
        vec![s(0x20, 4), j(0x15, 0xc000_003e, 0, 1), s(0x06, 0x7fff_0000), s(0x06, 0)]
    );
    assert_eq!(detect(text.as_bytes()), Format::C);
}

#[test]
fn c_macros_symbols_and_surrounding_code() {
    let text = r#"
#include <linux/filter.h>
#include <linux/seccomp.h>
#define ARCH_NR (offsetof(struct seccomp_data, arch))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
// A filter as people write it.
static int install(void)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD|BPF_W|BPF_ABS, ARCH_NR),
        BPF_JUMP(BPF_JMP+BPF_JEQ+BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET+BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]) + sizeof(__u32)),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, ~0u & 0xff, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        { BPF_LD | BPF_IMM, 0, 0, SKF_AD_OFF + SKF_AD_PROTOCOL },
        { .code = BPF_RET | BPF_K, .k = SECCOMP_RET_TRAP | 1 << 3 },
        ALLOW, /* trailing comma is fine */
    };
    struct sock_fprog prog = {
        .len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
        .filter = filter,
    };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) { perror("prctl"); return 1; }
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}
"#;
    assert_eq!(
        parse(text.as_bytes(), Format::C).unwrap(),
        vec![
            s(0x20, 4),
            j(0x15, 0xc000_003e, 1, 0),
            s(0x06, 0x8000_0000),
            s(0x20, 28),
            j(0x45, 0xff, 0, 1),
            s(0x06, 0x0005_0001),
            s(0x00, 0xffff_f000),
            s(0x06, 0x0003_0008),
            s(0x06, 0x7fff_0000),
        ]
    );
    assert_eq!(detect(text.as_bytes()), Format::C);
    // Casts and arch constants.
    assert_eq!(
        parse(b"BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K, AUDIT_ARCH_AARCH64, 0, (__u8)257)", Format::C).unwrap(),
        vec![j(0x15, 0xc000_00b7, 0, 1)]
    );
    assert_eq!(parse(b"{ 6, 0, 0, (unsigned)-1 }", Format::C).unwrap(), vec![s(6, 0xffff_ffff)]);
    // Every scalar field of struct seccomp_data (include/uapi/linux/seccomp.h),
    // and the negative packet bases of filter.h.
    let fields = "BPF_STMT(BPF_LD|BPF_W|BPF_ABS, offsetof(struct seccomp_data, nr)),\n\
        BPF_STMT(BPF_LD|BPF_W|BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),\n\
        BPF_STMT(BPF_LD|BPF_W|BPF_ABS, offsetof(struct seccomp_data, args)),\n\
        BPF_STMT(BPF_LD|BPF_B|BPF_ABS, SKF_NET_OFF + 9),\n\
        BPF_STMT(BPF_LD|BPF_H|BPF_ABS, SKF_LL_OFF + 12),\n\
        BPF_STMT(BPF_LD|BPF_B|BPF_ABS, BPF_NET_OFF),\n\
        BPF_STMT(BPF_LD|BPF_H|BPF_ABS, BPF_LL_OFF),";
    assert_eq!(
        parse(fields.as_bytes(), Format::C).unwrap(),
        vec![
            s(0x20, 0),
            s(0x20, 12),
            s(0x20, 16),
            s(0x30, 0xfff0_0009),
            s(0x28, 0xffe0_000c),
            s(0x30, 0xfff0_0000),
            s(0x28, 0xffe0_0000),
        ]
    );
}

#[test]
fn c_lines_spliced_and_commented() {
    // A backslash before a newline (LF or CRLF) splices lines, in a
    // `#define` and in the text; `//` hides the rest of its line.
    let rows: &[&str] = &[
        "#define K \\\n  5\n{ 6, 0, 0, K }",
        "#define K \\\r\n  5\r\n{ 6, 0, 0, K }",
        "{ 6, 0, \\\n 0, 5 }",
        "{ 6, 0, \\\r\n 0, 5 }",
        "// { 6, 0, 0, 1 },\n{ 6, 0, 0, 5 }",
        "#define ALLOW { 6, 0, 0, 5 } // a comment\nALLOW",
        "{ 6, /* jt */0, /* jf */0, 5 }",
        // Directives: blanks around the words, `#undef`, and others skipped.
        "#  define K 5\n{ 6, 0, 0, K }",
        "#define  K\t5\n{ 6, 0, 0, K }",
        "#define K 7\n#undef K\n#define K 5\n{ 6, 0, 0, K }",
        "#define K 5\n#ifdef K\n#endif\n{ 6, 0, 0, K }",
        // A comment is a blank to a directive, even one across lines.
        "#define K 5 /* five,\n   as C reads it */\n{ 6, 0, 0, K }",
        "#define K 5 // five\n{ 6, 0, 0, K }",
        // A string's contents are never lexed.
        "static const char *why = \"a@b \\\" /* {\";\n{ 6, 0, 0, 5 }",
        "static const char sep = '@', quote = '\\'';\n{ 6, 0, 0, 5 }",
        // A block comment runs across lines to its `*/`, not to a lone `*`.
        "/* a * /\n{ 6, 0, 0, 1 } */\n{ 6, 0, 0, 5 }",
        "{ 6, /* a\n b */ 0, 0, 5 }",
    ];
    for text in rows {
        assert_eq!(parse(text.as_bytes(), Format::C), Ok(vec![s(6, 5)]), "{text:?}");
    }
    // A macro means what it was defined as on the lines before its use (the
    // text is read a logical line at a time): no division, line comment or
    // closed block comment on an earlier line joins it to the lines that
    // redefine the macro later.
    for first in [
        "{ 6, 0, 0, 10 / 2 }",
        "// x /* y",
        "// {",
        "/* x */ { 6, 0, 0, 5 }",
        "/**/ { 6, 0, 0, 5 }",
        "{ 6, 0, 0, 5 } /* x */",
        "{ 6, 0, 0, 5 } /**/",
        "{ 6, 0, 0, 10 / 2 } /* a\n */",
        // A comment's opening inside a literal is text, on any line.
        "char *s = \"a/*\", c = '/';",
        "char *s = \"a\"; /* a comment\n   that ends here */",
        "#define S \"/* \\\" //\"",
        "#error don't",
    ] {
        let text = format!("{first}\n#define K 5\n{{ 6, 0, 0, K }}\n#undef K\n#define K 7\n");
        let got = parse(text.as_bytes(), Format::C).unwrap();
        assert_eq!(got.last(), Some(&s(6, 5)), "{text:?}");
    }
}

#[test]
fn c_fields_by_name_and_k_signed() {
    // Designated initialisers in any order, a missing field 0; `k` takes
    // -2^31..2^32-1 in every form (C's conversion to `__u32`).
    let rows: &[(&str, Insn)] = &[
        ("{ .code = 0x15, .jt = 1, .jf = 2, .k = 5 }", j(0x15, 5, 1, 2)),
        ("{ .k = 5, .jf = 2, .code = 0x15 }", j(0x15, 5, 0, 2)),
        ("{ .code = 6, .k = -1 }", s(6, 0xffff_ffff)),
        ("{ .code = 6, .k = -0x80000000 }", s(6, 0x8000_0000)),
        ("{ 6, 0, 0, -0x80000000 }", s(6, 0x8000_0000)),
        ("BPF_STMT(6, -1)", s(6, 0xffff_ffff)),
        ("BPF_JUMP(0x15, -0x80000000, 1, 0)", j(0x15, 0x8000_0000, 1, 0)),
    ];
    for (text, want) in rows {
        assert_eq!(parse(text.as_bytes(), Format::C), Ok(vec![*want]), "{text}");
    }
    // One past the least `k` is refused in every form.
    for text in ["{ .code = 6, .k = -0x80000001 }", "BPF_STMT(6, -0x80000001)", "BPF_JUMP(0x15, -0x80000001, 1, 0)"] {
        assert!(parse(text.as_bytes(), Format::C).is_err(), "{text}");
    }
}

#[test]
fn c_constant_expressions() {
    // C's operators, precedence (all left-associative) and casts, evaluated
    // in 64 bits; `k` keeps the low 32 bits.
    let rows: &[(&str, u32)] = &[
        // Literals: every base, with suffixes.
        ("0b101", 5),
        ("0B11u", 3),
        ("0x1fUL", 31),
        ("0XFF", 255),
        ("017", 15),
        ("0", 0),
        ("10lu", 10),
        ("6 | 3", 7),
        ("6 ^ 3", 5),
        ("6 & 3", 2),
        ("1 << 4", 16),
        ("256 >> 4", 16),
        ("10 - 3 - 2", 5),
        ("6 * 7", 42),
        ("17 / 5", 3),
        ("17 % 5", 2),
        ("100 / 10 / 5", 2),
        ("1 | 6 ^ 3 & 5", 7),
        ("1 + 2 * 3 << 1", 14),
        ("+5", 5),
        ("-5", 0xffff_fffb),
        ("~0", 0xffff_ffff),
        ("!0", 1),
        ("!7", 0),
        ("- -5", 5),
        ("(1 + 2) * 3", 9),
        ("(const unsigned char)0x1ff", 0xff),
        ("(signed char)0x80", 0xffff_ff80),
        ("(short)0x18000 + 0", 0xffff_8000),
        ("(short)0x17fff", 0x7fff),
        ("(__u16)-1", 0xffff),
        ("(unsigned long)-1 >> 32", 0xffff_ffff),
        ("sizeof(__u64) + sizeof(short)", 10),
        // One type of each family: 8 + 16 + 2 * 256 + 4 * 4096 + 8 * 65536.
        (
            "sizeof(size_t) + sizeof(int8_t) * 16 + sizeof(__s16) * 256 + sizeof(s32) * 4096 + sizeof(int64_t) * 65536",
            541_208,
        ),
        ("(__s8)0xff", 0xffff_ffff),
        ("(uint32_t)-1 - (u8)0x1ff", 0xffff_ff00),
        ("(volatile long)-1 >> 32", 0xffff_ffff),
        ("offsetof(struct seccomp_data, args[5])", 56),
        ("offsetof(struct seccomp_data, args[2]) + 4", 36),
    ];
    for &(expr, want) in rows {
        let text = format!("{{ 6, 0, 0, {expr} }}");
        let got = parse(text.as_bytes(), Format::C).map(|p| p[0].k);
        assert_eq!(got, Ok(want), "{expr}");
    }
    // Unary operators one after another are not nesting: the depth cap
    // counts only what is open.
    let long = vec!["-1"; 300].join(" + ");
    assert_eq!(
        parse(format!("{{ 6, 0, 0, {long} }}").as_bytes(), Format::C).map(|p| p[0].k),
        Ok(300u32.wrapping_neg())
    );
}

#[test]
fn ddd_both_layouts() {
    let want = vec![s(0x28, 12), j(0x15, 2048, 0, 1), s(0x06, 0xffff), s(0x06, 0)];
    for text in [
        "4\n40 0 0 12\n21 0 1 2048\n6 0 0 65535\n6 0 0 0\n",
        "4,40 0 0 12,21 0 1 2048,6 0 0 65535,6 0 0 0,\n",
        "4,40 0 0 12,21 0 1 2048,6 0 0 65535,6 0 0 0",
        "4\r\n40 0 0 12\r\n21 0 1 2048\r\n6 0 0 65535\r\n6 0 0 0\r\n",
    ] {
        assert_eq!(parse(text.as_bytes(), Format::Ddd).unwrap(), want, "{text:?}");
        assert_eq!(detect(text.as_bytes()), Format::Ddd, "{text:?}");
    }
}

#[test]
fn detect_rules() {
    // Raw: NUL bytes, non-UTF-8, control characters.
    let prog = vec![s(0x20, 4), s(0x06, 0x7fff_0000)];
    assert_eq!(detect(&raw::encode(&prog)), Format::Raw);
    assert_eq!(detect(&[]), Format::Raw);
    assert_eq!(detect(&[0xff, 0xfe, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25]), Format::Raw);
    assert_eq!(detect(&[0x15, 0x01, 0x01, 0x02, 0x41, 0x42, 0x43, 0x44]), Format::Raw);
    // Printable bytes that happen to be 8-aligned are text: no opcode the
    // kernel accepts lacks a NUL in its second byte.
    assert_eq!(detect(b"ret #0\n\n"), Format::Asm);
    assert_eq!(detect(b"ABCDEFGH"), Format::C);
    assert!(parse(b"ABCDEFGH", detect(b"ABCDEFGH")).is_err());
    // Text by first token.
    assert_eq!(detect(b"  ; comment\n/* x */ ld [4]\nret a"), Format::Asm);
    assert_eq!(detect(b"start: ret #0"), Format::Asm);
    assert_eq!(detect(b"# comment\nret #0"), Format::Asm);
    assert_eq!(detect(b".raw 6, 0, 0, 0"), Format::Asm);
    assert_eq!(detect(b"// x\nstruct sock_filter f[] = {};"), Format::C);
    assert_eq!(detect(b"BPF_STMT(BPF_RET|BPF_K, 0)"), Format::C);
    assert_eq!(detect(b"#include <x>\n{ 6, 0, 0, 0 }"), Format::C);
    assert_eq!(detect(b"1\n6 0 0 0\n"), Format::Ddd);
    // What is skipped before the first token: each row's answer is not the
    // assembly that an unskipped byte would give.
    let skipped: &[(&[u8], Format)] = &[
        (b"  \t\x0b\x0c\r\n{ 6, 0, 0, 0 }", Format::C),
        (b"/* c */{ 6, 0, 0, 0 }", Format::C),
        (b"// x\n{ 6, 0, 0, 0 }", Format::C),
        (b"; x\n1\n6 0 0 0", Format::Ddd),
        // Not skipped: a lone `/`, an unterminated comment, a `#` that does
        // not start its line, punctuation.
        (b"/x\n{ 6, 0, 0, 0 }", Format::Asm),
        (b"/* never ends\n{ 6, 0, 0, 0 }", Format::Asm),
        (b"/* c */ #x\n{ 6, 0, 0, 0 }", Format::Asm),
        (b"(6)", Format::Asm),
        // A word may start with `_`.
        (b"_start: ret #0", Format::Asm),
        (b"__u32 k;", Format::C),
    ];
    for &(text, want) in skipped {
        assert_eq!(detect(text), want, "{:?}", String::from_utf8_lossy(text));
    }
    // The names the command line spells.
    let names: Vec<String> = [Format::Raw, Format::C, Format::Ddd, Format::Asm].iter().map(|f| f.to_string()).collect();
    assert_eq!(names, ["raw", "c", "ddd", "asm"]);
}

#[test]
fn asm_printer_forms() {
    // `ret x` (BPF_RET | BPF_X), which bpf_asm writes and the kernel refuses.
    assert_eq!(print_asm(&[s(0x0e, 0)]), "\tret x\n");
    // Ancillary loads by name; bitwise immediates in hex, others by fmt_k.
    assert_eq!(
        print_asm(&[s(0x20, 0xffff_f000), s(0x54, 255), s(0x04, 255)]),
        "\tld #proto\n\tand #0xff\n\tadd #255\n"
    );
    // Constants are decimal below 4096, hex from there.
    assert_eq!(print_asm(&[s(0x00, 4095), s(0x06, 4096)]), "\tld #4095\n\tret #0x1000\n");
    // A jump whose target is one past the last instruction.
    let past = print_asm(&[s(0x05, 0)]);
    assert!(past.starts_with("\t.raw 0x0005, 0, 0, 0x00000000\t; jump past the last instruction"), "{past}");
    // A jump on X with `k` set is named as a jump (its label may not exist).
    let odd = print_asm(&[j(0x1d, 5, 0, 0), s(0x06, 0)]);
    assert!(odd.starts_with("\t.raw 0x001d, 0, 0, 0x00000005\t; jump, with fields the kernel ignores set"), "{odd}");
}
