#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
// Implementing `GlobalAlloc` is unsafe by definition; this one only counts
// and forwards every call unchanged to `System`.
#![allow(unsafe_code)]
//! A run allocates nothing: a counting global allocator watches this thread
//! while filters run in both contexts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use cbpf::opcode::*;
use cbpf::{raw, validate, Insn, Interp, Mode, SeccompData, Skb};

struct Counting;

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note() {
    // try_with: the allocator can run while thread-locals are torn down.
    let _ = WATCHING.try_with(|w| {
        if w.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every method forwards its arguments unchanged to `System`, which
// upholds the `GlobalAlloc` contract; counting touches no allocator state.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: `ptr` came from `System` through this allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> usize {
    ALLOCATIONS.with(|n| n.set(0));
    WATCHING.with(|w| w.set(true));
    f();
    WATCHING.with(|w| w.set(false));
    ALLOCATIONS.with(|n| n.get())
}

#[test]
fn the_counter_sees_allocations() {
    assert!(allocations_during(|| drop(std::hint::black_box(vec![1u8; 10]))) >= 1);
}

#[test]
fn runs_allocate_nothing() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");
    let large = raw::decode(&std::fs::read(format!("{dir}/long_jumps_large.bpf")).unwrap()).unwrap();
    let seccomp = Interp::new(&validate(&large, Mode::Seccomp).unwrap());
    let inputs: Vec<[u8; 64]> = (0..400)
        .map(|nr| SeccompData { nr, arch: 0xc000_003e, args: [nr as u64; 6], ..SeccompData::default() }.to_bytes())
        .collect();

    // A socket program touching every kind of load, ancillary helpers included.
    let socket_insns = [
        Insn::stmt(LD_W_ABS, 0),
        Insn::stmt(LD_H_ABS, SKF_NET_OFF),
        Insn::stmt(LDX_B_MSH, 0),
        Insn::stmt(LD_B_IND, 1),
        Insn::stmt(LD_W_ABS, SKF_AD_OFF + SKF_AD_NLATTR),
        Insn::stmt(LD_W_ABS, SKF_AD_OFF + SKF_AD_NLATTR_NEST),
        Insn::stmt(LD_W_ABS, SKF_AD_OFF + SKF_AD_PAY_OFFSET),
        Insn::stmt(ST, 0),
        Insn::stmt(LD_MEM, 0),
        Insn::stmt(ALU_DIV_X, 0),
        Insn::stmt(RET_A, 0),
    ];
    let socket = Interp::new(&validate(&socket_insns, Mode::Socket).unwrap());
    let packet: Vec<u8> = (0..100u8).collect();
    let skb = Skb::test_bpf(&packet);

    let mut sum = 0u32;
    let n = allocations_during(|| {
        for input in &inputs {
            sum ^= seccomp.run_seccomp(input).unwrap();
        }
        for _ in 0..100 {
            sum ^= socket.run_socket(&skb).unwrap();
        }
    });
    assert_eq!(n, 0, "runs allocated {n} times");
    std::hint::black_box(sum);
}
