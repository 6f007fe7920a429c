//! `text_parse`: see `fuzz_replay::text_parse` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::text_parse(data));
