//! `convert_equiv`: see `fuzz_replay::convert_equiv` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::convert_equiv(data));
