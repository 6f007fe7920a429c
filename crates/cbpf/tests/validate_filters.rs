#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Every libseccomp filter in testdata/filters was accepted by a real kernel;
//! `validate` must accept it too, in seccomp and in socket mode.

use cbpf::{raw, validate, Mode};

#[test]
fn every_filter_validates_in_seccomp_mode() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");
    let mut failures = Vec::new();
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "bpf") {
            continue;
        }
        count += 1;
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let insns = raw::decode(&std::fs::read(&path).unwrap()).unwrap();
        match validate(&insns, Mode::Seccomp) {
            Ok(prog) => {
                assert_eq!(prog.len(), insns.len());
                assert_eq!(prog.original(), &insns[..]);
                // Seccomp loads are rewritten to the internal 0x21.
                assert!(prog.insns().iter().all(|i| i.code != cbpf::opcode::LD_W_ABS), "{name}");
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        // Nothing in a seccomp filter is invalid for sockets.
        if let Err(e) = validate(&insns, Mode::Socket) {
            failures.push(format!("{name} (socket): {e}"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(count, 16); // testdata/filters: 12 libseccomp-made filters and 4 hand-written ones (sshd_like, sshd_preauth, sshd_preauth_i386, chromium_baseline)
}
