//! Classic BPF opcode fields and the full codes the kernel accepts.
//!
//! Mirrors `include/uapi/linux/bpf_common.h` and `include/uapi/linux/filter.h`
//! (Linux 6.18). The full-code constants (`LD_W_ABS`, `JMP_JEQ_K`, ...) are the
//! 49 entries of the `codes[]` table in `chk_code_allowed()` (net/core/filter.c),
//! plus the seccomp-only pseudo opcode [`LDX_W_ABS`].

// Instruction classes (`BPF_CLASS(code)`, `code & 0x07`).
pub const BPF_LD: u16 = 0x00;
pub const BPF_LDX: u16 = 0x01;
pub const BPF_ST: u16 = 0x02;
pub const BPF_STX: u16 = 0x03;
pub const BPF_ALU: u16 = 0x04;
pub const BPF_JMP: u16 = 0x05;
pub const BPF_RET: u16 = 0x06;
pub const BPF_MISC: u16 = 0x07;

// Sizes (`BPF_SIZE(code)`, `code & 0x18`).
pub const BPF_W: u16 = 0x00;
pub const BPF_H: u16 = 0x08;
pub const BPF_B: u16 = 0x10;

// Modes (`BPF_MODE(code)`, `code & 0xe0`).
pub const BPF_IMM: u16 = 0x00;
pub const BPF_ABS: u16 = 0x20;
pub const BPF_IND: u16 = 0x40;
pub const BPF_MEM: u16 = 0x60;
pub const BPF_LEN: u16 = 0x80;
pub const BPF_MSH: u16 = 0xa0;

// ALU operations (`BPF_OP(code)`, `code & 0xf0`).
pub const BPF_ADD: u16 = 0x00;
pub const BPF_SUB: u16 = 0x10;
pub const BPF_MUL: u16 = 0x20;
pub const BPF_DIV: u16 = 0x30;
pub const BPF_OR: u16 = 0x40;
pub const BPF_AND: u16 = 0x50;
pub const BPF_LSH: u16 = 0x60;
pub const BPF_RSH: u16 = 0x70;
pub const BPF_NEG: u16 = 0x80;
pub const BPF_MOD: u16 = 0x90;
pub const BPF_XOR: u16 = 0xa0;

// Jump operations.
pub const BPF_JA: u16 = 0x00;
pub const BPF_JEQ: u16 = 0x10;
pub const BPF_JGT: u16 = 0x20;
pub const BPF_JGE: u16 = 0x30;
pub const BPF_JSET: u16 = 0x40;

// Operand source (`BPF_SRC(code)`, `code & 0x08`).
pub const BPF_K: u16 = 0x00;
pub const BPF_X: u16 = 0x08;
/// `BPF_RVAL(code)` value for `ret a`.
pub const BPF_A: u16 = 0x10;

// Misc operations (`BPF_MISCOP(code)`, `code & 0xf8`).
pub const BPF_TAX: u16 = 0x00;
pub const BPF_TXA: u16 = 0x80;

/// `BPF_MAXINSNS`: the longest program the kernel accepts.
pub const BPF_MAXINSNS: usize = 4096;
/// `BPF_MEMWORDS`: number of scratch words `M[0..16]`.
pub const BPF_MEMWORDS: u32 = 16;

/// `SKF_AD_OFF`: base of the ancillary-data offsets (-0x1000 as u32).
pub const SKF_AD_OFF: u32 = 0xffff_f000;
/// `SKF_NET_OFF`: offsets relative to the network header (-0x100000 as u32).
pub const SKF_NET_OFF: u32 = 0xfff0_0000;
/// `SKF_LL_OFF`: offsets relative to the link-layer (MAC) header (-0x200000 as u32).
pub const SKF_LL_OFF: u32 = 0xffe0_0000;

// Ancillary data offsets, relative to SKF_AD_OFF (include/uapi/linux/filter.h).
pub const SKF_AD_PROTOCOL: u32 = 0;
pub const SKF_AD_PKTTYPE: u32 = 4;
pub const SKF_AD_IFINDEX: u32 = 8;
pub const SKF_AD_NLATTR: u32 = 12;
pub const SKF_AD_NLATTR_NEST: u32 = 16;
pub const SKF_AD_MARK: u32 = 20;
pub const SKF_AD_QUEUE: u32 = 24;
pub const SKF_AD_HATYPE: u32 = 28;
pub const SKF_AD_RXHASH: u32 = 32;
pub const SKF_AD_CPU: u32 = 36;
pub const SKF_AD_ALU_XOR_X: u32 = 40;
pub const SKF_AD_VLAN_TAG: u32 = 44;
pub const SKF_AD_VLAN_TAG_PRESENT: u32 = 48;
pub const SKF_AD_PAY_OFFSET: u32 = 52;
pub const SKF_AD_RANDOM: u32 = 56;
pub const SKF_AD_VLAN_TPID: u32 = 60;
/// `SKF_AD_MAX`: one past the last ancillary offset; not itself a valid load.
pub const SKF_AD_MAX: u32 = 64;

/// Builds a full opcode from its fields, as the kernel's `BPF_STMT` users write it.
pub const fn code(class: u16, a: u16, b: u16) -> u16 {
    class | a | b
}

// The 49 codes `chk_code_allowed()` accepts, in the kernel's table order.
pub const ALU_ADD_K: u16 = BPF_ALU | BPF_ADD | BPF_K; // 0x04
pub const ALU_ADD_X: u16 = BPF_ALU | BPF_ADD | BPF_X; // 0x0c
pub const ALU_SUB_K: u16 = BPF_ALU | BPF_SUB | BPF_K; // 0x14
pub const ALU_SUB_X: u16 = BPF_ALU | BPF_SUB | BPF_X; // 0x1c
pub const ALU_MUL_K: u16 = BPF_ALU | BPF_MUL | BPF_K; // 0x24
pub const ALU_MUL_X: u16 = BPF_ALU | BPF_MUL | BPF_X; // 0x2c
pub const ALU_DIV_K: u16 = BPF_ALU | BPF_DIV | BPF_K; // 0x34
pub const ALU_DIV_X: u16 = BPF_ALU | BPF_DIV | BPF_X; // 0x3c
pub const ALU_MOD_K: u16 = BPF_ALU | BPF_MOD | BPF_K; // 0x94
pub const ALU_MOD_X: u16 = BPF_ALU | BPF_MOD | BPF_X; // 0x9c
pub const ALU_AND_K: u16 = BPF_ALU | BPF_AND | BPF_K; // 0x54
pub const ALU_AND_X: u16 = BPF_ALU | BPF_AND | BPF_X; // 0x5c
pub const ALU_OR_K: u16 = BPF_ALU | BPF_OR | BPF_K; // 0x44
pub const ALU_OR_X: u16 = BPF_ALU | BPF_OR | BPF_X; // 0x4c
pub const ALU_XOR_K: u16 = BPF_ALU | BPF_XOR | BPF_K; // 0xa4
pub const ALU_XOR_X: u16 = BPF_ALU | BPF_XOR | BPF_X; // 0xac
pub const ALU_LSH_K: u16 = BPF_ALU | BPF_LSH | BPF_K; // 0x64
pub const ALU_LSH_X: u16 = BPF_ALU | BPF_LSH | BPF_X; // 0x6c
pub const ALU_RSH_K: u16 = BPF_ALU | BPF_RSH | BPF_K; // 0x74
pub const ALU_RSH_X: u16 = BPF_ALU | BPF_RSH | BPF_X; // 0x7c
pub const ALU_NEG: u16 = BPF_ALU | BPF_NEG; // 0x84
pub const LD_W_ABS: u16 = BPF_LD | BPF_W | BPF_ABS; // 0x20
pub const LD_H_ABS: u16 = BPF_LD | BPF_H | BPF_ABS; // 0x28
pub const LD_B_ABS: u16 = BPF_LD | BPF_B | BPF_ABS; // 0x30
pub const LD_W_LEN: u16 = BPF_LD | BPF_W | BPF_LEN; // 0x80
pub const LD_W_IND: u16 = BPF_LD | BPF_W | BPF_IND; // 0x40
pub const LD_H_IND: u16 = BPF_LD | BPF_H | BPF_IND; // 0x48
pub const LD_B_IND: u16 = BPF_LD | BPF_B | BPF_IND; // 0x50
pub const LD_IMM: u16 = BPF_LD | BPF_IMM; // 0x00
pub const LD_MEM: u16 = BPF_LD | BPF_MEM; // 0x60
pub const LDX_W_LEN: u16 = BPF_LDX | BPF_W | BPF_LEN; // 0x81
pub const LDX_B_MSH: u16 = BPF_LDX | BPF_B | BPF_MSH; // 0xb1
pub const LDX_IMM: u16 = BPF_LDX | BPF_IMM; // 0x01
pub const LDX_MEM: u16 = BPF_LDX | BPF_MEM; // 0x61
pub const ST: u16 = BPF_ST; // 0x02
pub const STX: u16 = BPF_STX; // 0x03
pub const MISC_TAX: u16 = BPF_MISC | BPF_TAX; // 0x07
pub const MISC_TXA: u16 = BPF_MISC | BPF_TXA; // 0x87
pub const RET_K: u16 = BPF_RET | BPF_K; // 0x06
pub const RET_A: u16 = BPF_RET | BPF_A; // 0x16
pub const JMP_JA: u16 = BPF_JMP | BPF_JA; // 0x05
pub const JMP_JEQ_K: u16 = BPF_JMP | BPF_JEQ | BPF_K; // 0x15
pub const JMP_JEQ_X: u16 = BPF_JMP | BPF_JEQ | BPF_X; // 0x1d
pub const JMP_JGE_K: u16 = BPF_JMP | BPF_JGE | BPF_K; // 0x35
pub const JMP_JGE_X: u16 = BPF_JMP | BPF_JGE | BPF_X; // 0x3d
pub const JMP_JGT_K: u16 = BPF_JMP | BPF_JGT | BPF_K; // 0x25
pub const JMP_JGT_X: u16 = BPF_JMP | BPF_JGT | BPF_X; // 0x2d
pub const JMP_JSET_K: u16 = BPF_JMP | BPF_JSET | BPF_K; // 0x45
pub const JMP_JSET_X: u16 = BPF_JMP | BPF_JSET | BPF_X; // 0x4d

/// `BPF_LDX | BPF_W | BPF_ABS` (0x21): never accepted from users; produced only by
/// `seccomp_check_filter()` (kernel/seccomp.c) when it rewrites a seccomp `ld [k]`.
pub const LDX_W_ABS: u16 = BPF_LDX | BPF_W | BPF_ABS;

/// The 49 codes of `chk_code_allowed()` (net/core/filter.c), in the kernel's order.
pub const ALLOWED_CODES: [u16; 49] = [
    ALU_ADD_K, ALU_ADD_X, ALU_SUB_K, ALU_SUB_X, ALU_MUL_K, ALU_MUL_X, ALU_DIV_K, ALU_DIV_X, ALU_MOD_K, ALU_MOD_X,
    ALU_AND_K, ALU_AND_X, ALU_OR_K, ALU_OR_X, ALU_XOR_K, ALU_XOR_X, ALU_LSH_K, ALU_LSH_X, ALU_RSH_K, ALU_RSH_X,
    ALU_NEG, LD_W_ABS, LD_H_ABS, LD_B_ABS, LD_W_LEN, LD_W_IND, LD_H_IND, LD_B_IND, LD_IMM, LD_MEM, LDX_W_LEN,
    LDX_B_MSH, LDX_IMM, LDX_MEM, ST, STX, MISC_TAX, MISC_TXA, RET_K, RET_A, JMP_JA, JMP_JEQ_K, JMP_JEQ_X, JMP_JGE_K,
    JMP_JGE_X, JMP_JGT_K, JMP_JGT_X, JMP_JSET_K, JMP_JSET_X,
];

/// `chk_code_allowed()` (net/core/filter.c): is `code` one of the 49 classic opcodes?
///
/// # Deviations
/// None: the kernel indexes a `bool[0xb2]` table; we search the same 49 codes.
pub fn is_allowed(code: u16) -> bool {
    ALLOWED_CODES.contains(&code)
}
