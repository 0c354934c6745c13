//! The disk tier: values moved out of memory when the server is over
//! `maxmemory` with `tiering-dir` set, and read back when a command needs
//! them. Being built: today it holds the value log (`log.rs`), which
//! nothing else uses yet; docs/tiering.md is the design.

pub mod log;
