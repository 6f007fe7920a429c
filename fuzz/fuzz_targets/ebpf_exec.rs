//! `ebpf_exec`: see `fuzz_replay::ebpf_exec` for the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_replay::ebpf_exec(data));
