//! `bounded_work`: see `fuzz_replay::bounded_work` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::bounded_work(data));
