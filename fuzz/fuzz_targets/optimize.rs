//! `optimize`: see `fuzz_replay::optimize` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::optimize(data));
