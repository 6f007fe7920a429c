#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! A run performs no heap allocation (counting global allocator). Its own
//! test binary so no other test's allocations are counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use ebpf::asm::assemble;
use ebpf::skb::helper;
use ebpf::{Helpers, LoadOptions, Program, SkbContext, SkbMeta};
use ebpf::{Input, Vm};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Only the measuring thread counts: libtest's main thread may allocate
    // at any moment while the test runs.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// The one place this crate needs `unsafe`: a GlobalAlloc is an unsafe trait.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: forwards the caller's layout to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: ptr came from System.alloc with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn runs_do_not_allocate() {
    // Seccomp-style filter with a fused chain, a socket filter calling the
    // load helpers, and a program with local calls and atomics.
    let seccomp = assemble(
        "xor32 %r0, %r0
         mov %r6, %r1
         ldxw %r0, [%r6+4]
         mov32 %r2, 0xc000003e
         jne %r0, %r2, +5
         ldxw %r0, [%r6]
         jeq %r0, 1, +4
         jeq %r0, 2, +3
         jeq %r0, 3, +2
         mov32 %r0, 0x7fff0000
         exit
         mov32 %r0, 0
         exit",
    )
    .unwrap();
    // r0 = bpf_skb_load_helper_16(skb, data, headlen, 12); an atomic on the
    // stack; a local call.
    let socket = assemble(
        "mov %r6, %r1
         ldxdw %r2, [%r6]
         ldxw %r3, [%r6+8]
         mov %r4, 0xc
         call 0x1002
         stxw [%r10-4], %r0
         lock fetch add32 [%r10-4], %r0
         call local +1
         exit
         mov %r0, 1
         exit",
    )
    .unwrap();
    assert_eq!(helper::SKB_LOAD_16, 0x1002, "the socket program calls bpf_skb_load_helper_16");
    let p1 = Program::load(&seccomp, &LoadOptions::default(), &Helpers::new()).unwrap();
    let p2 = Program::load(&socket, &LoadOptions::default(), &Helpers::socket()).unwrap();
    let data = {
        let mut d = [0u8; 64];
        d[4..8].copy_from_slice(&0xc000_003eu32.to_le_bytes());
        d[0] = 2;
        d
    };
    let skb = SkbContext::new(&[0x45u8; 64], &SkbMeta::default());
    // The seccomp filter runs on the dedicated executor (`seccomp_exec`).
    assert!(p1.has_seccomp_executor());
    let mut vm = Vm::new();
    // Warm up (nothing lazy should exist, but be fair).
    vm.run_seccomp(&p1, &data).unwrap();
    vm.run(&p2, Input::Skb(&skb)).unwrap();
    let runner = vm.seccomp_runner(&p1).unwrap();
    let mut results = [0u64; 2];
    let before = ALLOCS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    for _ in 0..1000 {
        results[0] |= u64::from(runner.run(&data).unwrap());
        results[0] |= u64::from(vm.run_seccomp(&p1, &data).unwrap());
        results[0] |= u64::from(vm.run_seccomp_uncounted(&p1, &data).unwrap());
        results[0] |= vm.run(&p1, Input::Ctx(&data)).unwrap();
        results[1] += vm.run(&p2, Input::Skb(&skb)).unwrap();
    }
    COUNTING.with(|c| c.set(false));
    let after = ALLOCS.load(Ordering::SeqCst);
    assert_eq!(results, [0, 1000]);
    // The counter works: an allocation on this thread is seen.
    COUNTING.with(|c| c.set(true));
    let v = std::hint::black_box(vec![1u8; 10]);
    COUNTING.with(|c| c.set(false));
    assert_eq!(ALLOCS.load(Ordering::SeqCst), after + 1);
    drop(v);
    assert_eq!(after - before, 0, "allocations during 4000 runs");
}
