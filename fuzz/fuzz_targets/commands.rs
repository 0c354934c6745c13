//! The `commands` fuzz target: see `keel::fuzzing::commands`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| keel::fuzzing::commands(data));
