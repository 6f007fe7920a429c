//! `fast_equiv`: see `fuzz_replay::fast_equiv` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::fast_equiv(data));
