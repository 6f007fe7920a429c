#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! A run performs no heap allocation (counting global allocator). Its own
//! test binary so no other test's allocations are counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use ebpf::interp::{Input, Vm};
use ebpf::skb::helper;
use ebpf::{Helpers, Insn, LoadOptions, Program, SkbContext, SkbMeta};

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

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}

#[test]
fn runs_do_not_allocate() {
    // Seccomp-style filter with a fused chain, a socket filter calling the
    // load helpers, and a program with local calls and atomics.
    let seccomp = [
        i(0xac, 0, 0, 0, 0),
        i(0xbf, 6, 1, 0, 0),
        i(0x61, 0, 6, 4, 0),
        i(0xb4, 2, 0, 0, 0xc000_003eu32 as i32),
        i(0x5d, 0, 2, 5, 0),
        i(0x61, 0, 6, 0, 0),
        i(0x15, 0, 0, 4, 1),
        i(0x15, 0, 0, 3, 2),
        i(0x15, 0, 0, 2, 3),
        i(0xb4, 0, 0, 0, 0x7fff_0000),
        i(0x95, 0, 0, 0, 0),
        i(0xb4, 0, 0, 0, 0),
        i(0x95, 0, 0, 0, 0),
    ];
    let socket = [
        i(0xbf, 6, 1, 0, 0),
        i(0x79, 2, 6, 0, 0),
        i(0x61, 3, 6, 8, 0),
        i(0xb7, 4, 0, 0, 12),
        i(0x85, 0, 0, 0, helper::SKB_LOAD_16),
        i(0x63, 10, 0, -4, 0),
        i(0xc3, 10, 0, -4, 0x01),
        i(0x85, 0, 1, 0, 1),
        i(0x95, 0, 0, 0, 0),
        i(0xb7, 0, 0, 0, 1),
        i(0x95, 0, 0, 0, 0),
    ];
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
    let mut results = [0u64; 2];
    let before = ALLOCS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    for _ in 0..1000 {
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
