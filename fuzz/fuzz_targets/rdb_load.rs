//! The `rdb_load` fuzz target: see `keel::fuzzing::rdb_load`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| keel::fuzzing::rdb_load(data));
