//! `compile`: see `fuzz_replay::compile` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::compile(data));
