#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Memory safety and limits: every region is bounds-checked, read-only
//! regions refuse stores, the step budget stops loops, and arbitrary bytes
//! never panic or hang.

use ebpf::abi::error::Access;
use ebpf::abi::region::{CTX_BASE, MEM_BASE, PACKET_BASE, STACK_BASE};
use ebpf::{skb, Helpers, Insn, LoadOptions, Program, SkbContext, SkbMeta};
use ebpf::{ExecError, Input, Pc, Vm};
use proptest::prelude::*;

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}
const EXIT: Insn = Insn::new(0x95, 0, 0, 0, 0);

fn load(p: &[Insn]) -> Program {
    Program::load(p, &LoadOptions::default(), &Helpers::socket()).unwrap()
}

fn lddw(dst: u8, v: u64) -> [Insn; 2] {
    [i(0x18, dst, 0, 0, v as u32 as i32), i(0, 0, 0, 0, (v >> 32) as u32 as i32)]
}

/// r1 = addr; r0 = *(u32 *)(r1 + off) (or a store when `store`).
fn access(addr: u64, off: i16, store: bool) -> Program {
    let mut p = lddw(1, addr).to_vec();
    p.push(if store { i(0x62, 1, 0, off, 7) } else { i(0x61, 0, 1, off, 0) });
    p.push(EXIT);
    load(&p)
}

#[test]
fn out_of_bounds_in_every_region_is_an_error() {
    let skb = SkbContext::new(&[0u8; 20], &SkbMeta::default());
    let mut mem = [0u8; 16];
    let cases: [(u64, i16, usize); 6] = [
        (CTX_BASE, skb::CTX_SIZE as i16 - 2, 0), // a 4-byte access crossing the context's end
        (PACKET_BASE, 17, 20),                   // packet of 20
        (STACK_BASE, -4, 0),                     // below the stack
        (STACK_BASE + 4096, 0, 0),
        (MEM_BASE, 13, 16),
        (0, 0, 0), // NULL
    ];
    for (base, off, _) in cases {
        for store in [false, true] {
            let prog = access(base, off, store);
            let input = if base == MEM_BASE { Input::Memory(&mut mem) } else { Input::Skb(&skb) };
            let err = Vm::new().run(&prog, input).unwrap_err();
            assert!(matches!(err, ExecError::OutOfBounds { .. }), "{base:#x}+{off} store={store}: {err}");
        }
    }
    // In-bounds neighbours succeed.
    assert!(Vm::new().run(&access(CTX_BASE, skb::CTX_SIZE as i16 - 4, false), Input::Skb(&skb)).is_ok());
    assert!(Vm::new().run(&access(PACKET_BASE, 16, false), Input::Skb(&skb)).is_ok());
    assert!(Vm::new().run(&access(MEM_BASE, 12, true), Input::Memory(&mut mem)).is_ok());
    assert_eq!(mem[12], 7);
}

#[test]
fn context_and_packet_are_read_only() {
    let skb = SkbContext::new(&[0u8; 20], &SkbMeta::default());
    for base in [CTX_BASE, PACKET_BASE] {
        let err = Vm::new().run(&access(base, 0, true), Input::Skb(&skb)).unwrap_err();
        assert!(matches!(err, ExecError::ReadOnly { .. }), "{err}");
    }
    let data = [0u8; 64];
    let err = Vm::new().run(&access(CTX_BASE, 0, true), Input::Ctx(&data)).unwrap_err();
    assert!(matches!(err, ExecError::ReadOnly { .. }), "{err}");
    // Atomics need a writable region too.
    let mut p = lddw(1, CTX_BASE).to_vec();
    p.extend([i(0xc3, 1, 2, 0, 0), EXIT]);
    let err = Vm::new().run(&load(&p), Input::Ctx(&data)).unwrap_err();
    assert!(matches!(err, ExecError::OutOfBounds { access: Access::Store, .. } | ExecError::ReadOnly { .. }), "{err}");
}

#[test]
fn a_frame_cannot_reach_below_itself() {
    // The main frame may use fp-512..fp, not fp-513.
    let ok = load(&[i(0x72, 10, 0, -512, 1), i(0x71, 0, 10, -512, 0), EXIT]);
    assert_eq!(Vm::new().run(&ok, Input::None).unwrap(), 1);
    let bad = load(&[i(0x72, 10, 0, -513, 1), EXIT]);
    assert!(matches!(Vm::new().run(&bad, Input::None).unwrap_err(), ExecError::OutOfBounds { .. }));
}

#[test]
fn step_budget_stops_an_infinite_loop() {
    let prog = load(&[i(0x07, 0, 0, 0, 1), i(0x05, 0, 0, -2, 0)]);
    let mut vm = Vm::new();
    vm.set_step_budget(10_000);
    let err = vm.run(&prog, Input::None).unwrap_err();
    assert!(matches!(err, ExecError::StepBudgetExceeded { budget: 10_000, .. }), "{err}");
    // A fused compare chain inside the loop is counted too.
    let prog = load(&[i(0x15, 0, 0, 3, 100), i(0x15, 0, 0, 2, 200), i(0x15, 0, 0, 1, 300), i(0x05, 0, 0, -4, 0), EXIT]);
    assert!(prog.fused_chains() > 0);
    assert!(matches!(vm.run(&prog, Input::None).unwrap_err(), ExecError::StepBudgetExceeded { .. }));
}

#[test]
fn step_count_is_exact() {
    let prog = load(&[i(0xb7, 0, 0, 0, 3), i(0x17, 0, 0, 0, 1), i(0x55, 0, 0, -2, 0), EXIT]);
    let mut vm = Vm::new();
    assert_eq!(vm.run(&prog, Input::None).unwrap(), 0);
    assert_eq!(vm.executed(), 1 + 3 * 2 + 1);
    vm.set_step_budget(7);
    assert!(vm.run(&prog, Input::None).is_err());
    vm.set_step_budget(8);
    assert!(vm.run(&prog, Input::None).is_ok());
}

#[test]
fn falling_off_the_end_is_an_error() {
    let prog = load(&[i(0xb7, 0, 0, 0, 3)]);
    assert!(matches!(Vm::new().run(&prog, Input::None).unwrap_err(), ExecError::FellOffEnd { .. }));
}

/// Runs `prog` (results ignored: it must not panic or hang) on a packet,
/// on writable memory and on no input, within `budget` steps.
fn run_on_every_input(prog: &Program, budget: u64) {
    let mut vm = Vm::new();
    vm.set_step_budget(budget);
    let skb = SkbContext::new(&[0x45u8; 60], &SkbMeta::default());
    let _ = vm.run(prog, Input::Skb(&skb));
    let mut buf = [0u8; 32];
    let _ = vm.run(prog, Input::Memory(&mut buf));
    let _ = vm.run(prog, Input::None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_or_hang(words in proptest::collection::vec(any::<u64>(), 1..64), strict in any::<bool>()) {
        let insns: Vec<Insn> = words.iter().map(|w| Insn::from_bytes(w.to_le_bytes())).collect();
        let opts = LoadOptions { strict, ..LoadOptions::default() };
        if let Ok(prog) = Program::load(&insns, &opts, &Helpers::socket().with(5, ebpf::helpers::conformance_helper_5)) {
            run_on_every_input(&prog, 10_000);
        }
    }

    #[test]
    fn mostly_valid_programs_never_panic(ops in proptest::collection::vec(insn_strategy(), 1..48)) {
        let insns: Vec<Insn> = ops.iter().map(|&(c, d, s, o, m)| Insn::new(c, d, s, o, m)).collect();
        if let Ok(prog) = Program::load(&insns, &LoadOptions::default(), &Helpers::socket()) {
            run_on_every_input(&prog, 5_000);
        }
    }
}

const CODES: &[u8] = &[
    0x04, 0x07, 0x0c, 0x0f, 0x14, 0x17, 0x1c, 0x1f, 0x24, 0x27, 0x2f, 0x34, 0x37, 0x3c, 0x3f, 0x44, 0x4f, 0x54, 0x5f,
    0x64, 0x67, 0x6c, 0x6f, 0x74, 0x77, 0x7c, 0x84, 0x87, 0x94, 0x97, 0x9c, 0x9f, 0xa4, 0xaf, 0xb4, 0xb7, 0xbc, 0xbf,
    0xc4, 0xc7, 0xcc, 0xcf, 0xd4, 0xdc, 0xd7, 0x05, 0x06, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0x45, 0x4d, 0x55, 0x5d,
    0x65, 0x6d, 0x75, 0x7d, 0xa5, 0xad, 0xb5, 0xbd, 0xc5, 0xcd, 0xd5, 0xdd, 0x16, 0x1e, 0x56, 0x5e, 0xc6, 0xce, 0x61,
    0x69, 0x71, 0x79, 0x81, 0x89, 0x91, 0x62, 0x6a, 0x72, 0x7a, 0x63, 0x6b, 0x73, 0x7b, 0xc3, 0xdb, 0x20, 0x28, 0x30,
    0x40, 0x48, 0x50, 0x85, 0x95,
];
const IMMS: &[i32] = &[0, 1, -1, 8, 16, 32, 64, 0xe1, 0xf1, 0x1001, i32::MIN, 5];

/// Instructions drawn from valid opcodes and small fields, so most programs load.
fn insn_strategy() -> impl Strategy<Value = (u8, u8, u8, i16, i32)> {
    (prop::sample::select(CODES), 0u8..11, 0u8..11, -8i16..8, prop::sample::select(IMMS))
}

/// Pieces of converted-seccomp-shaped code: loads from the context, compare
/// chains (K, and `mov; X-compare` pairs), returns, prologues.
fn seccomp_piece() -> impl Strategy<Value = Vec<(u8, u8, u8, i16, i32)>> {
    let val = prop::sample::select(vec![0i32, 1, 2, 3, -1, i32::MIN, 0x7fff_0000]);
    let jcode = prop::sample::select(vec![0x15u8, 0x55, 0x25, 0x35, 0xa5, 0xb5, 0x65, 0xd5, 0x16, 0x56, 0xc6, 0x45]);
    let xcode = prop::sample::select(vec![0x1du8, 0x5d, 0x2d, 0x3d, 0xad, 0xbd, 0x6d, 0x1e, 0x4d]);
    prop_oneof![
        (jcode, val.clone(), -3i16..6).prop_map(|(c, v, o)| vec![(c, 0, 0, o, v)]),
        (xcode, val.clone(), -3i16..6, prop::sample::select(vec![0xb4u8, 0xb7]))
            .prop_map(|(c, v, o, m)| vec![(m, 2, 0, 0, v), (c, 0, 2, o, 0)]),
        (0i16..8).prop_map(|k| vec![(0x61, 0, 6, k * 4, 0)]),
        val.prop_map(|v| vec![(0xb4, 0, 0, 0, v), (0x95, 0, 0, 0, 0)]),
        Just(vec![(0xac, 0, 0, 0, 0), (0xac, 7, 7, 0, 0), (0xbf, 6, 1, 0, 0)]),
        Just(vec![(0x0f, 0, 2, 0, 0)]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Superinstructions change nothing observable: same result or error,
    /// same step count.
    #[test]
    fn fused_execution_equals_plain_execution(
        pieces in proptest::collection::vec(seccomp_piece(), 1..40),
        ctx in proptest::collection::vec(prop::sample::select(vec![0u8, 1, 2, 3, 0xff, 0x80]), 32),
    ) {
        let mut insns: Vec<Insn> = vec![i(0xbf, 6, 1, 0, 0)];
        insns.extend(pieces.iter().flatten().map(|&(c, d, s, o, m)| Insn::new(c, d, s, o, m)));
        insns.push(EXIT);
        let fused = Program::load(&insns, &LoadOptions::default(), &Helpers::new());
        let plain = Program::load(&insns, &LoadOptions { no_superinstructions: true, ..LoadOptions::default() }, &Helpers::new());
        match (fused, plain) {
            (Ok(f), Ok(p)) => {
                let (mut a, mut b) = (Vm::new(), Vm::new());
                a.set_step_budget(2_000);
                b.set_step_budget(2_000);
                let (ra, rb) = (a.run(&f, Input::Ctx(&ctx)), b.run(&p, Input::Ctx(&ctx)));
                prop_assert_eq!(&ra, &rb);
                if ra.is_ok() {
                    prop_assert_eq!(a.executed(), b.executed());
                }
            }
            (f, p) => prop_assert_eq!(f.is_ok(), p.is_ok()),
        }
    }
}

/// Test helper 100: the sum of the `r2` bytes at `r1`, through
/// `Memory::bytes` (what a helper reads a buffer argument with).
fn sum_bytes(mem: &mut ebpf::interp::Memory<'_>, args: [u64; 5]) -> Result<u64, ebpf::HelperError> {
    let (addr, size) = (args[0], args[1] as usize);
    let b = mem.bytes(addr, size).ok_or(ebpf::HelperError::BadAccess { addr, size })?;
    Ok(b.iter().map(|&x| u64::from(x)).sum())
}

/// Test helper 101: the little-endian `r2`-byte word at `r1`, through
/// `Memory::load`.
fn load_word(mem: &mut ebpf::interp::Memory<'_>, args: [u64; 5]) -> Result<u64, ebpf::HelperError> {
    let (addr, size) = (args[0], args[1] as usize);
    mem.load(addr, size).ok_or(ebpf::HelperError::BadAccess { addr, size })
}

/// What a helper sees of each region: the context, the packet, the
/// current stack frame (not the frames below it) and the user's memory,
/// bounded by each; no other address.
#[test]
fn helpers_read_every_region_within_its_bounds() {
    let helpers = Helpers::new().with(100, sum_bytes).with(101, load_word);
    // *(u64 *)(r10 - 8) = 0x0102_0304_0506_0708 (via r3); r0 = helper(r1 = addr, r2 = size)
    let call = |id: i32, addr_from_fp: Option<i32>, addr: u64, size: i32| {
        let mut p = lddw(3, 0x0102_0304_0506_0708).to_vec();
        p.push(i(0x7b, 10, 3, -8, 0));
        match addr_from_fp {
            Some(off) => p.extend([i(0xbf, 1, 10, 0, 0), i(0x07, 1, 0, 0, off)]),
            None => p.extend(lddw(1, addr)),
        }
        p.extend([i(0xb7, 2, 0, 0, size), i(0x85, 0, 0, 0, id), EXIT]);
        Program::load(&p, &LoadOptions::default(), &helpers).unwrap()
    };
    let skb = SkbContext::new(&[1, 2, 3, 4, 5, 6], &SkbMeta::default());
    let ctx = [9u8; 20];
    let mut user = [0u8, 10, 20, 30, 40];
    let bad =
        |addr, size| Err(ExecError::Helper { pc: Pc(6), id: 100, source: ebpf::HelperError::BadAccess { addr, size } });
    let mut vm = Vm::new();
    assert_eq!(vm.run(&call(100, None, CTX_BASE + 18, 2), Input::Ctx(&ctx)), Ok(18));
    assert_eq!(vm.run(&call(100, None, CTX_BASE + 18, 3), Input::Ctx(&ctx)), bad(CTX_BASE + 18, 3));
    assert_eq!(vm.run(&call(100, None, PACKET_BASE + 2, 4), Input::Skb(&skb)), Ok(3 + 4 + 5 + 6));
    assert_eq!(vm.run(&call(100, None, PACKET_BASE + 2, 5), Input::Skb(&skb)), bad(PACKET_BASE + 2, 5));
    assert_eq!(vm.run(&call(100, None, MEM_BASE + 1, 4), Input::Memory(&mut user)), Ok(100));
    assert_eq!(vm.run(&call(100, None, MEM_BASE + 1, 5), Input::Memory(&mut user)), bad(MEM_BASE + 1, 5));
    // The frame's own 8 bytes; one byte below the frame is another frame's.
    assert_eq!(vm.run(&call(100, Some(-8), 0, 8), Input::None), Ok(36));
    let top = STACK_BASE + 8 * 512;
    assert_eq!(vm.run(&call(100, Some(-512), 0, 1), Input::None), Ok(0));
    assert_eq!(vm.run(&call(100, Some(-513), 0, 1), Input::None), bad(top - 513, 1));
    assert_eq!(vm.run(&call(100, None, 5 << 32, 1), Input::None), bad(5 << 32, 1));
    // Memory::load: little-endian words of each size.
    let load_err =
        |addr, size| Err(ExecError::Helper { pc: Pc(6), id: 101, source: ebpf::HelperError::BadAccess { addr, size } });
    for (size, want) in [(1, 0x08), (2, 0x0708), (4, 0x0506_0708), (8, 0x0102_0304_0506_0708)] {
        assert_eq!(vm.run(&call(101, Some(-8), 0, size), Input::None), Ok(want), "size {size}");
    }
    assert_eq!(vm.run(&call(101, Some(-4), 0, 8), Input::None), load_err(top - 4, 8));
}

/// The registry: later registrations of an id replace earlier ones, and
/// `get` answers the one registered.
#[test]
fn a_helper_id_resolves_to_its_last_registration() {
    let address = |f: Option<ebpf::HelperFn>| f.map(|f| f as *const () as usize);
    let mut helpers = Helpers::new().with(100, sum_bytes);
    assert!(helpers.get(101).is_none());
    assert_eq!(address(helpers.get(100)), address(Some(sum_bytes)));
    helpers.register(100, load_word);
    assert_eq!(address(helpers.get(100)), address(Some(load_word)));
    assert!(Helpers::socket().get(skb::helper::SKB_LOAD_8).is_some());
    assert!(Helpers::socket().get(skb::helper::SKB_LOAD_8 - 1).is_none());
}

/// A fault names its access: the messages of a load and of a store.
#[test]
fn a_fault_says_whether_it_loaded_or_stored() {
    let mut vm = Vm::new();
    let load_fault = vm.run(&access(MEM_BASE, 0, false), Input::None).unwrap_err();
    assert_eq!(
        load_fault.to_string(),
        format!("pc 2: load of 4 bytes at {MEM_BASE:#x} is outside every memory region")
    );
    let store_fault = vm.run(&access(MEM_BASE, 0, true), Input::None).unwrap_err();
    assert_eq!(
        store_fault.to_string(),
        format!("pc 2: store of 4 bytes at {MEM_BASE:#x} is outside every memory region")
    );
    assert_eq!((Access::Load.to_string(), Access::Store.to_string()), ("load".into(), "store".into()));
}
