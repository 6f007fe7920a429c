//! What the filetest runners share: finding the files and showing how an
//! expected block differs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cbpf::Mode;

/// The `.txt` files of `dir`, sorted.
pub fn files(dir: &str) -> Vec<PathBuf> {
    super::files_with_extension(Path::new(dir), "txt")
}

/// The lines where `got` differs from `want` (`-` wanted, `+` got), at most
/// twenty of them.
pub fn diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let mut out = String::new();
    let mut shown = 0;
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i), g.get(i));
        if a != b {
            if let Some(a) = a {
                let _ = writeln!(out, "  line {:>4} -{a}", i + 1);
            }
            if let Some(b) = b {
                let _ = writeln!(out, "  line {:>4} +{b}", i + 1);
            }
            shown += 1;
            if shown == 20 {
                let _ = writeln!(out, "  ...");
                break;
            }
        }
    }
    out
}

/// The mode a `; mode: NAME` directive names.
pub fn mode(name: &str) -> Option<Mode> {
    match name.trim() {
        "seccomp" => Some(Mode::Seccomp),
        "socket" => Some(Mode::Socket),
        _ => None,
    }
}
