//! The `resp_decoder` fuzz target: see `keel::fuzzing::resp_decoder`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| keel::fuzzing::resp_decoder(data));
