//! The `aof_load` fuzz target: see `keel::fuzzing::aof_load`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| keel::fuzzing::aof_load(data));
