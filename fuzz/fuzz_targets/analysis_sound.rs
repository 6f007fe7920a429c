//! `analysis_sound`: see `fuzz_replay::analysis_sound` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::analysis_sound(data));
