//! Persistence: the append-only log, RDB snapshots, and loading them at
//! start.

pub mod aof;
pub mod atomic_file;
pub mod capture;
pub mod check;
pub mod copied;
pub mod image_file;
pub mod load;
pub mod log_file;
pub mod rdb;
pub mod rebuild;
pub mod snapshot;
