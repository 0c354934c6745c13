//! Replays the fuzz corpus (`fuzz/corpus/<target>/`, see docs/fuzzing.md)
//! through the entry points the fuzz targets call, on stable Rust and
//! without libFuzzer: every input the fuzzers kept, and every input that
//! once crashed, must still run without a panic.

use std::path::PathBuf;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    files.sort();
    assert!(!files.is_empty(), "{} holds no inputs", dir.display());
    for path in files {
        let data = match std::fs::read(&path) {
            Ok(d) => d,
            Err(e) => panic!("{}: {e}", path.display()),
        };
        // Name the input that fails: the panic itself says why.
        eprintln!("{target}: {}", path.display());
        run(&data);
    }
}

#[test]
fn resp_decoder_corpus() {
    replay("resp_decoder", keel::fuzzing::resp_decoder);
}

#[test]
fn commands_corpus() {
    replay("commands", keel::fuzzing::commands);
}

#[test]
fn rdb_load_corpus() {
    replay("rdb_load", keel::fuzzing::rdb_load);
}

#[test]
fn aof_load_corpus() {
    replay("aof_load", keel::fuzzing::aof_load);
}
