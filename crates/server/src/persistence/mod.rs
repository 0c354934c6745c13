//! Persistence: the append-only log (and, later, RDB snapshots), and
//! loading them at start.

pub mod aof;
pub mod load;
pub mod rebuild;
