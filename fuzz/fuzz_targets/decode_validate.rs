//! `decode_validate`: see `fuzz_replay::decode_validate` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::decode_validate(data));
