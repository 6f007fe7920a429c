//! `equiv`: see `fuzz_replay::equiv` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::equiv(data));
