//! `bpfconv`: the command-line front end (the only crate that prints).
fn main() {}
