#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
#[test]
fn dump() {
    for name in ["seed_fast", "long_jumps_short", "long_jumps_large", "long_jumps_large_opt2", "allow306_end"] {
        let raw = std::fs::read(format!("{}/../../testdata/filters/{name}.bpf", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let insns = cbpf::raw::decode(&raw).unwrap();
        let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp).unwrap();
        let e = convert::convert(&prog, &Default::default()).unwrap().insns;
        std::fs::write(format!("/tmp/espeed_{name}.txt"), ebpf::listing::listing(&e)).unwrap();
    }
}
