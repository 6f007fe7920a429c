#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Random valid programs on random contexts: the interpreter never panics,
//! always ends, and its fast path agrees with the independent tracing path
//! (which executes the raw instructions without pre-decoding or compare
//! chains).

use cbpf::opcode::*;
use cbpf::validate::is_ancillary;
use cbpf::{validate, Insn, Interp, Mode, NetDevice, SeccompData, Skb};
use proptest::prelude::*;

const SECCOMP_CODES: [u16; 40] = [
    RET_K, RET_A, ALU_ADD_K, ALU_ADD_X, ALU_SUB_K, ALU_SUB_X, ALU_MUL_K, ALU_MUL_X, ALU_DIV_K, ALU_DIV_X, ALU_AND_K,
    ALU_AND_X, ALU_OR_K, ALU_OR_X, ALU_XOR_K, ALU_XOR_X, ALU_LSH_K, ALU_LSH_X, ALU_RSH_K, ALU_RSH_X, ALU_NEG, LD_IMM,
    LDX_IMM, MISC_TAX, MISC_TXA, LD_MEM, LDX_MEM, ST, STX, JMP_JA, JMP_JEQ_K, JMP_JEQ_X, JMP_JGE_K, JMP_JGE_X,
    JMP_JGT_K, JMP_JGT_X, JMP_JSET_K, JMP_JSET_X, LD_W_ABS, LD_W_LEN,
];

/// Interesting operands: small numbers, seccomp offsets, negative bases,
/// ancillary offsets, anything.
fn operand() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..70,
        (0u32..16).prop_map(|i| i * 4),
        (0u32..64).prop_map(|x| SKF_AD_OFF + x),
        (0u32..64).prop_map(|x| SKF_NET_OFF.wrapping_add(x)),
        (0u32..64).prop_map(|x| SKF_LL_OFF.wrapping_add(x)),
        any::<u32>(),
        Just(u32::MAX),
        Just(0x8000_0000),
    ]
}

/// Raw `(code choice, k, jt, jf)` tuples, made valid by [`repair`].
fn raw_program() -> impl Strategy<Value = Vec<(usize, u32, u8, u8)>> {
    prop::collection::vec((any::<usize>(), operand(), any::<u8>(), any::<u8>()), 1..48)
}

/// Turns arbitrary tuples into a program `validate` accepts in `mode`:
/// operands clamped to each check, jumps kept inside, a final `ret`, and
/// every scratch word written first when the program reads any.
fn repair(raw: &[(usize, u32, u8, u8)], mode: Mode) -> Vec<Insn> {
    let codes: &[u16] = match mode {
        Mode::Seccomp => &SECCOMP_CODES,
        _ => &ALLOWED_CODES,
    };
    let body_len = raw.len();
    let mut body = Vec::with_capacity(body_len + 1);
    for (pc, &(choice, k, jt, jf)) in raw.iter().enumerate() {
        let code = codes[choice % codes.len()];
        // Jumps may land anywhere up to the final ret at index body_len.
        let room = (body_len - pc) as u32; // targets pc+1 ..= body_len
        let k = match code {
            ALU_DIV_K | ALU_MOD_K if k == 0 => 1,
            ALU_LSH_K | ALU_RSH_K => k % 32,
            LD_MEM | LDX_MEM | ST | STX => k % 16,
            JMP_JA => k % room,
            LD_W_ABS if mode == Mode::Seccomp => (k % 16) * 4,
            LD_W_ABS | LD_H_ABS | LD_B_ABS if k >= SKF_AD_OFF && !is_ancillary(k) => SKF_AD_OFF + (k % 16) * 4,
            _ => k,
        };
        let (jt, jf) = ((u32::from(jt) % room) as u8, (u32::from(jf) % room) as u8);
        body.push(Insn::jump(code, k, jt, jf));
    }
    body.push(Insn::stmt(if raw.len() % 2 == 0 { RET_A } else { RET_K }, 0x7fff_0000));
    if body.iter().any(|i| i.code == LD_MEM || i.code == LDX_MEM) {
        let mut init: Vec<Insn> = (0..16).map(|m| Insn::stmt(ST, m)).collect();
        init.extend(body);
        body = init;
    }
    body
}

fn seccomp_data() -> impl Strategy<Value = SeccompData> {
    (any::<i32>(), any::<u32>(), any::<u64>(), any::<[u64; 6]>()).prop_map(|(nr, arch, ip, args)| SeccompData {
        nr,
        arch,
        instruction_pointer: ip,
        args,
    })
}

/// One rule of a libseccomp-shaped ladder: `ld [k]; j* #v, ..` and, on a
/// hit, either a `ret` or an argument check (`ld [24]; jeq #w`) whose miss
/// goes on to the next rule.
#[derive(Debug, Clone)]
struct Rule {
    word: u32,
    cmp: u16,
    v: u32,
    arg_check: Option<u32>,
}

fn rule() -> impl Strategy<Value = Rule> {
    let word = prop_oneof![4 => Just(16u32), 1 => Just(0u32), 1 => Just(20u32)];
    let cmp = prop_oneof![4 => Just(JMP_JEQ_K), 1 => Just(JMP_JGT_K), 1 => Just(JMP_JGE_K), 1 => Just(JMP_JSET_K)];
    (word, cmp, 0u32..8, prop::option::of(0u32..4)).prop_map(|(word, cmp, v, arg_check)| Rule {
        word,
        cmp,
        v,
        arg_check,
    })
}

/// A rule ladder (long enough for the interpreter's ladder chains), entered
/// at the top and, through a `jgt` on `nr`, in the middle of rule `mid`
/// (onto its jump, with `A` holding `nr` instead of the rule's word).
fn ladder(rules: &[Rule], mid: usize, mid_k: u32) -> Vec<Insn> {
    // Layout: 0 ld [0]; 1 jgt #mid_k, <to rule mid's jump>, 0; then rules.
    let sizes: Vec<usize> = rules.iter().map(|r| if r.arg_check.is_some() { 5 } else { 3 }).collect();
    let starts: Vec<usize> = sizes.iter().scan(2, |at, n| Some(std::mem::replace(at, *at + n))).collect();
    let end = starts.last().unwrap() + sizes.last().unwrap();
    // Rules 0..50 start within the 8-bit jump range of pc 1.
    let mid_jump = starts[mid % rules.len().min(50)] + 1;
    let mut out = vec![Insn::stmt(LD_W_ABS, 0), Insn::jump(JMP_JGT_K, mid_k, (mid_jump - 2) as u8, 0)];
    for (i, r) in rules.iter().enumerate() {
        let next = starts.get(i + 1).copied().unwrap_or(end);
        let here = out.len();
        out.push(Insn::stmt(LD_W_ABS, r.word));
        // Hit falls through to the rule body; miss goes to the next rule.
        out.push(Insn::jump(r.cmp, r.v, 0, (next - (here + 2)) as u8));
        if let Some(w) = r.arg_check {
            out.push(Insn::stmt(LD_W_ABS, 24));
            out.push(Insn::jump(JMP_JEQ_K, w, 0, (next - (here + 4)) as u8));
        }
        out.push(Insn::stmt(RET_K, 0x7fff_0000 + i as u32));
    }
    out.push(Insn::stmt(RET_A, 0));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn seccomp_ladders_and_both_paths_agree(
        rules in prop::collection::vec(rule(), 1..60),
        mid in any::<usize>(),
        mid_k in 0u32..8,
        nr in 0i32..9,
        args in (0u64..8, 0u64..5, 0u64..5),
    ) {
        let insns = ladder(&rules, mid, mid_k);
        let prog = validate(&insns, Mode::Seccomp).unwrap_or_else(|e| panic!("{e}: {insns:?}"));
        let interp = Interp::new(&prog);
        let data = SeccompData { nr, arch: 0, instruction_pointer: 0, args: [args.0 | (args.1 << 32), args.2, 0, 0, 0, 0] };
        let bytes = data.to_bytes();
        let traced = interp.trace_seccomp(&bytes, |_| {}).unwrap();
        prop_assert_eq!(interp.run_seccomp(&bytes).unwrap(), traced);
    }

    #[test]
    fn seccomp_programs_never_panic_and_both_paths_agree(raw in raw_program(), data in seccomp_data()) {
        let insns = repair(&raw, Mode::Seccomp);
        let prog = validate(&insns, Mode::Seccomp).unwrap_or_else(|e| panic!("{e}: {insns:?}"));
        let interp = Interp::new(&prog);
        let bytes = data.to_bytes();
        let mut steps = 0usize;
        let traced = interp.trace_seccomp(&bytes, |_| steps += 1).unwrap();
        prop_assert_eq!(interp.run_seccomp(&bytes).unwrap(), traced);
        prop_assert!(steps <= insns.len());
    }

    #[test]
    fn socket_programs_never_panic_and_both_paths_agree(
        raw in raw_program(),
        data in prop::collection::vec(any::<u8>(), 0..80),
        headlen in any::<usize>(),
        net in 0usize..90,
        mac in prop::option::of(0usize..90),
        dev in prop::option::of((any::<i32>(), any::<u16>())),
        fields in any::<(u16, u8, u32, u16, u32, u16, u16, u32, u32)>(),
        x_seed in any::<u32>(),
    ) {
        let insns = repair(&raw, Mode::Socket);
        let prog = validate(&insns, Mode::Socket).unwrap_or_else(|e| panic!("{e}: {insns:?}"));
        let interp = Interp::new(&prog);
        let (protocol, pkt_type, mark, queue_mapping, rxhash, vlan_tci, vlan_proto, cpu, random) = fields;
        let skb = Skb {
            data: &data,
            headlen: if x_seed % 3 == 0 { data.len() } else { headlen % (data.len() + 2) },
            protocol,
            pkt_type,
            dev: dev.map(|(ifindex, hatype)| NetDevice { ifindex, hatype }),
            mark,
            queue_mapping,
            rxhash,
            vlan_tci,
            vlan_proto,
            cpu,
            random,
            network_offset: net,
            mac_offset: mac,
            wire_len: None,
        };
        let mut steps = 0usize;
        let traced = interp.trace_socket(&skb, |_| steps += 1).unwrap();
        prop_assert_eq!(interp.run_socket(&skb).unwrap(), traced);
        prop_assert!(steps <= insns.len());
    }

    #[test]
    fn payload_offset_never_panics(data in prop::collection::vec(any::<u8>(), 0..120), proto in prop_oneof![Just(0x0800u16), Just(0x86dd), any::<u16>()], net in 0usize..130) {
        let mut skb = Skb::test_bpf(&data);
        skb.protocol = proto;
        skb.vlan_proto = 0;
        skb.vlan_tci = 0;
        skb.network_offset = net;
        let poff = skb.payload_offset();
        prop_assert!(poff == 0 || poff as usize >= net.min(data.len()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    /// Reloads of words a `jeq` settled (`test_data::programs::known_words`):
    /// the jumps threaded past them (`chain::known`) change no result.
    #[test]
    fn seccomp_known_words_and_both_paths_agree(seed in 1u64..) {
        let mut rng = test_data::rng::Rng(seed);
        let insns: Vec<Insn> = test_data::programs::known_words(&mut rng)
            .into_iter()
            .map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k })
            .collect();
        let prog = validate(&insns, Mode::Seccomp).unwrap_or_else(|e| panic!("{e}: {insns:?}"));
        let interp = Interp::new(&prog);
        for (nr, arch) in (0..4).flat_map(|nr| (0..4).map(move |arch| (nr, arch))) {
            let data = SeccompData { nr, arch, instruction_pointer: 0, args: [0; 6] };
            let bytes = data.to_bytes();
            let traced = interp.trace_seccomp(&bytes, |_| {}).unwrap();
            prop_assert_eq!(interp.run_seccomp(&bytes).unwrap(), traced, "nr={} arch={}: {:?}", nr, arch, insns);
        }
    }
}
