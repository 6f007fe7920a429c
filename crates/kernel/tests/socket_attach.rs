#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Issue 13 finding 8 against the running kernel: `SO_ATTACH_FILTER` on an
//! AF_UNIX datagram socket accepts `ja` over 2340 `ld [14]` and refuses 2341
//! with EINVAL (the attach-time `bpf_convert_filter()` cannot encode the jump
//! offset), exactly where `convert::check_attach` draws the line. Where
//! attaching is refused for another reason the test says so through
//! `test_data::require` (a visible skip, a failure under `CI=true`).

use cbpf::Insn;
use kernel::socket::{attach, optmem_max, Attach};
use test_data::require::{self, Need};

const OPTMEM_MAX: &str = "/proc/sys/net/core/optmem_max";

/// `ja +n`, `n` × `ld [k]`, `ret #0`.
fn ja_over(n: usize, k: u32) -> Vec<Insn> {
    let mut p = vec![Insn::stmt(0x05, n as u32)];
    p.extend(std::iter::repeat_n(Insn::stmt(0x20, k), n));
    p.push(Insn::stmt(0x06, 0));
    p
}

/// Raises `net.core.optmem_max` to at least `want` for the guard's life
/// (root only; the old value comes back on drop). `None` where the sysctl
/// cannot be written.
struct OptmemRaised(u64);

impl OptmemRaised {
    fn to(want: u64) -> Option<OptmemRaised> {
        let old = optmem_max()?;
        if old >= want {
            return Some(OptmemRaised(old));
        }
        std::fs::write(OPTMEM_MAX, want.to_string()).ok()?;
        (optmem_max()? >= want).then_some(OptmemRaised(old))
    }
}

impl Drop for OptmemRaised {
    fn drop(&mut self) {
        if optmem_max() != Some(self.0) {
            let _ = std::fs::write(OPTMEM_MAX, self.0.to_string());
        }
    }
}

#[test]
fn kernel_attach_boundary_matches_the_converter() {
    match attach(&ja_over(1, 14)) {
        Ok(Attach::Accepted) => {}
        other => {
            return require::missing(
                "kernel_attach_boundary_matches_the_converter",
                Need::Socket,
                format_args!("SO_ATTACH_FILTER refused even a small filter ({other:?})"),
            );
        }
    }
    // sk_attach_filter() runs __get_filter() (bpf_prepare_filter() ->
    // bpf_migrate_filter() -> bpf_convert_filter(), EINVAL on a jump offset
    // past s16) before __sk_attach_prog() charges the converted program to
    // net.core.optmem_max (sk_filter_charge(), ENOMEM). With the limit
    // raised (root), 2340 attaches; without, ENOMEM still says the
    // conversion accepted it.
    let raised = OptmemRaised::to(1 << 21);
    match (attach(&ja_over(2340, 14)).unwrap(), &raised) {
        (Attach::Accepted, _) => {}
        (Attach::OverOptmem, None) => {
            eprintln!("note: 2340 loads converted but exceed optmem_max here and it cannot be raised (ENOMEM after conversion)");
        }
        (other, _) => panic!("kernel refused 2340 loads: {other:?} (optmem raised: {})", raised.is_some()),
    }
    assert_eq!(attach(&ja_over(2341, 14)).unwrap(), Attach::Rejected { errno: libc::EINVAL });
    // The same length with `ld [0]` (a shorter conversion, limit 2520) is
    // not EINVAL: the refusal is the conversion's, not the length's.
    assert!(!matches!(attach(&ja_over(2341, 0)).unwrap(), Attach::Rejected { .. }));
    assert_eq!(attach(&ja_over(2521, 0)).unwrap(), Attach::Rejected { errno: libc::EINVAL });
    drop(raised);
}
