//! keel-server integration tests: the real binary, driven by the `redis`
//! crate and by raw sockets, and compared byte for byte with a real
//! redis-server 7.0 (`compat`). External tools (redis-server, redis-cli,
//! redis-benchmark) must be installed: tests that need them fail, never
//! skip, when they are missing.
//!
//! `KEEL_IT_AGAINST_REDIS=1 cargo test --test it` runs the typed tests
//! against real Redis instead, to check the tests' own expectations.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

mod acl;
mod bitmaps;
mod cluster;
mod compat;
mod config;
mod connection;
mod disk_errors;
mod dump;
mod durability;
mod expiry;
mod field_expiry;
mod geo;
mod hashes;
mod hll;
mod hostile;
mod keys;
mod lists;
mod memory;
mod metrics;
mod monitor;
mod observability;
mod propagation;
mod protocol;
mod redis74;
mod replication;
mod scripting;
mod server;
mod sets;
mod slowlog;
mod snapshots;
mod streams;
mod strings;
mod tiering;
mod tls;
mod tools;
mod tracking;
mod valkey8;
mod zsets;
