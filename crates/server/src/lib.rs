//! keel: a Redis-compatible data store.
//!
//! The map, and who may call whom:
//! - `net` accepts connections and runs each one: read → decode (`resp`) →
//!   `command::dispatch` → write, then what dispatch says comes next
//!   (`command::Next`: park, await a reply, hand the socket over, close...).
//!   It knows no command by name: while a script is busy, `net::busy`
//!   answers by the table's `WhileBusy` column.
//! - `command` owns the command table, generic checks, locking of shards,
//!   propagation of writes, and the handlers (one file per family). It
//!   calls `storage`, never `net`.
//! - `storage` is pure data: the sharded keyspace, values, slots. It calls
//!   nothing above it.
//! - `server` holds the shared state and starts the threads; `config`
//!   (read typed, through `config::Settings`) and `client` are shared
//!   records.
//! - `clients`: who waits for what (blocked, watching, subscribed,
//!   tracking, monitoring, paused) and what reaches a connection besides
//!   its replies; `observe`: INFO's counters, Prometheus, latency, slowlog.

pub mod acl;
pub mod client;
pub mod clients;
pub mod cluster;
pub mod command;
pub mod config;
#[doc(hidden)]
#[cfg(feature = "fuzz-entry-points")]
pub mod fuzzing;
pub mod glob;
pub mod memory;
pub mod net;
pub mod num;
pub mod observe;
pub mod persistence;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod storage;
pub mod tier;

#[global_allocator]
static GLOBAL: memory::alloc::Counting = memory::alloc::Counting;

/// The Redis version keel presents unless `redis-version` says otherwise;
/// clients gate features on it.
pub const REDIS_VERSION: &str = "7.4.1";

/// The versions `redis-version` may present, with Redis's
/// `REDIS_VERSION_NUM` of each (0x00MMmmpp).
pub const REDIS_VERSIONS: &[(&str, u32)] = &[("7.0.15", 0x0007_000f), ("7.4.1", 0x0007_0401)];

/// [`REDIS_VERSION`]'s entry in [`REDIS_VERSIONS`].
const REDIS_VERSION_NUM: u32 = 0x0007_0401;

/// What the unit tests see when nothing was presented: Redis 7.0.15, whose
/// replies and payloads their golden values were taken from (the server
/// always presents its configured version at start).
#[cfg(test)]
const UNPRESENTED: (&str, u32) = ("7.0.15", 0x0007_000f);
#[cfg(not(test))]
const UNPRESENTED: (&str, u32) = (REDIS_VERSION, REDIS_VERSION_NUM);

static PRESENTED: std::sync::OnceLock<(&'static str, u32)> = std::sync::OnceLock::new();

/// The Redis version this server presents (`redis-version`, keel's own
/// parameter, set at start): INFO's `redis_version`, HELLO's `version`,
/// LOLWUT, Lua's `REDIS_VERSION`, the RDB file's `redis-ver`.
pub fn redis_version() -> &'static str {
    PRESENTED.get().map_or(UNPRESENTED.0, |v| v.0)
}

/// [`redis_version`] as Redis's `REDIS_VERSION_NUM`.
pub fn redis_version_num() -> u32 {
    PRESENTED.get().map_or(UNPRESENTED.1, |v| v.1)
}

/// Whether the version presented is Redis 7.4's: replies and errors that
/// 7.2 or 7.4 changed follow it (docs/compatibility.md lists which).
pub fn speaks_7_4() -> bool {
    redis_version_num() >= 0x0007_0400
}

/// Sets what [`redis_version`] answers (once, at start; later calls and
/// unknown versions change nothing).
pub fn present_redis_version(version: &str) {
    if let Some(&v) = REDIS_VERSIONS.iter().find(|(name, _)| *name == version) {
        let _ = PRESENTED.set(v);
    }
}
pub const KEEL_VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod version_tests {
    #[test]
    fn the_default_version_is_one_of_those_presented() {
        assert!(super::REDIS_VERSIONS
            .iter()
            .any(|&(name, num)| name == super::REDIS_VERSION && num == super::REDIS_VERSION_NUM));
    }
}
