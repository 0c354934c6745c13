//! Configuration: the parameter table, redis.conf parsing, command-line
//! overrides, and the rules CONFIG GET/SET/REWRITE apply.
//!
//! Names, value syntax and error texts are Redis's, so existing config
//! files and tools work unchanged. Values are kept in their normalised
//! string form (what CONFIG GET shows and REWRITE writes); the server
//! reads them typed, through `Settings` (settings.rs), rebuilt on every
//! change. Reading a parameter by name is private to this module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::glob;
use crate::num::strtol::strtoll_whole;

mod apply;
mod settings;
pub use settings::{
    ClientsMemory, DisklessLoad, EndpointType, Exposure, FromValue, IdlePollGoal, LogLevel,
    ReplicaOf, Settings, TlsAuthClients,
};

#[derive(Debug, Clone, Copy)]
enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    /// Integer written in octal (unixsocketperm).
    Octal,
    Bool,
    Enum(&'static [&'static str]),
    Memory {
        min: i64,
    },
    /// A memory value, or a percentage of `maxmemory` ("10%").
    MemoryOrPercent,
    Str,
    Save,
    /// `class hard soft seconds` groups; setting some classes keeps the
    /// others.
    BufferLimits,
    /// notify-keyspace-events class letters.
    NotifyFlags,
    /// Space-separated numbers between 0 and 100 (an empty list is valid).
    Percentiles,
    /// A memory value up to 2^64 - 1 (Redis's unsigned long long ones).
    MemoryU64,
    /// shutdown-on-sigint/sigterm: some of default, save, nosave, now,
    /// force (a flags enum).
    ShutdownFlags,
    /// oom-score-adj-values: three numbers between -2000 and 2000.
    OomValues,
    /// proc-title-template: a template of known variables.
    ProcTitle,
    /// cluster-announce-hostname: letters, digits, '-' and '.'.
    Hostname,
    /// cluster-announce-human-nodename: no character of Redis's
    /// isValidAuxChar blacklist.
    AuxName,
    /// replicaof: `<host> <port>`, or `no one` (shown as "").
    ReplicaOf,
    /// locale-collate: a locale the C library knows ("" = the
    /// environment's).
    Locale,
}

struct Param {
    name: &'static str,
    kind: Kind,
    default: &'static str,
    mutable: bool,
    /// What a change does to the running server beyond `Settings`.
    apply: Option<Apply>,
}

/// A parameter's apply function (see apply.rs).
pub type Apply = fn(&crate::server::Server, &Settings);

impl Param {
    const fn applied(self, apply: Apply) -> Param {
        Param {
            apply: Some(apply),
            ..self
        }
    }
}

const I32MAX: i64 = i32::MAX as i64;

const fn p(name: &'static str, kind: Kind, default: &'static str, mutable: bool) -> Param {
    Param {
        name,
        kind,
        default,
        mutable,
        apply: None,
    }
}

/// Parameters a pattern never matches, only their exact name (Redis's
/// HIDDEN_CONFIG: test knobs).
const HIDDEN: &[&str] = &[
    "rdb-key-save-delay",
    "key-load-delay",
    "loading-process-events-interval-bytes",
    "watchdog-period",
    "use-exit-on-panic",
    "cluster-ping-interval",
];

/// Parameters Redis 7.2 made hidden (see [`HIDDEN`]): patterns match them
/// only under Redis 7.0's dialect.
const HIDDEN_SINCE_7_2: &[&str] = &["aof-disable-auto-gc"];

/// Parameters (and aliases) Redis 7.2 and 7.4 added: CONFIG GET and SET
/// know them only under `redis-version 7.4.1`, as Redis 7.0 does not
/// (a configuration file may set them under either).
const SINCE_7_2: &[&str] = &[
    "set-max-listpack-entries",
    "set-max-listpack-value",
    "max-new-connections-per-cycle",
    "max-new-tls-connections-per-cycle",
    "hide-user-data-from-log",
    "cluster-announce-human-nodename",
    "server-cpulist",
    "bio-cpulist",
    "aof-rewrite-cpulist",
    "bgsave-cpulist",
    "locale-collate",
    "cluster-ping-interval",
];

/// Whether CONFIG GET and SET know `name` in the Redis version presented.
fn in_dialect(name: &str) -> bool {
    crate::speaks_7_4() || !SINCE_7_2.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Every parameter keel knows. `threads` is keel's own; the rest are
/// Redis's names with Redis's defaults (bind: loopback only, as asked of a
/// server that "just works" on a developer machine).
const PARAMS: &[Param] = &[
    p("port", Kind::Int { min: 0, max: 65535 }, "6379", true),
    // redis.conf's default: loopback only (protected mode covers the rest).
    p("bind", Kind::Str, "127.0.0.1 -::1", true),
    p("unixsocket", Kind::Str, "", false),
    p("unixsocketperm", Kind::Octal, "0", false),
    // Valkey 8.0's: the Unix socket's group (a name).
    p("unixsocketgroup", Kind::Str, "", false),
    // Valkey 8.0's: the zone INFO server shows (`availability_zone`).
    p("availability-zone", Kind::Str, "", true),
    // Valkey 8.0's: CLUSTER SLOT-STATS also counts CPU and network bytes
    // per slot.
    p("cluster-slot-stats-enabled", Kind::Bool, "no", true).applied(apply::cluster_slot_stats),
    // Redis 7.2's: the collation of SORT ... ALPHA.
    p("locale-collate", Kind::Locale, "", true).applied(apply::locale_collate),
    p(
        "databases",
        Kind::Int {
            min: 1,
            max: I32MAX,
        },
        "16",
        false,
    ),
    p("dir", Kind::Str, "", true),
    p("logfile", Kind::Str, "", false),
    p(
        "loglevel",
        // `nothing` is Redis 7.2's (no log at all).
        Kind::Enum(&["debug", "verbose", "notice", "warning", "nothing"]),
        "notice",
        true,
    ),
    p(
        "timeout",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "0",
        true,
    )
    .applied(apply::timeout),
    p(
        "tcp-keepalive",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "300",
        true,
    ),
    p(
        "tcp-backlog",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "511",
        false,
    ),
    p(
        "maxclients",
        Kind::Int {
            min: 1,
            max: u32::MAX as i64,
        },
        "10000",
        true,
    ),
    // Redis accepts any int and clamps it to 1..500 (see `normalise`).
    p(
        "hz",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "10",
        true,
    )
    .applied(apply::hz),
    p(
        "proto-max-bulk-len",
        Kind::Memory { min: 1024 * 1024 },
        "536870912",
        true,
    )
    .applied(apply::proto_max_bulk_len),
    // Unread request bytes past which a client is closed.
    p(
        "client-query-buffer-limit",
        Kind::Memory { min: 1024 * 1024 },
        "1073741824",
        true,
    )
    .applied(apply::client_buffers),
    p("threads", Kind::Int { min: 1, max: 256 }, "0", false),
    p(
        "active-threads-min",
        Kind::Int { min: 1, max: 256 },
        "1",
        true,
    ),
    // keel's own: see net::idle_poll.
    p("idle-poll-us", Kind::Int { min: 0, max: 1000 }, "100", true).applied(apply::idle_poll_us),
    p("idle-poll-goal", Kind::Enum(&["cpu", "rate"]), "cpu", true).applied(apply::idle_poll_us),
    // Honoured at start (main.rs forks into the background).
    p("daemonize", Kind::Bool, "no", false),
    p("pidfile", Kind::Str, "", false),
    p("protected-mode", Kind::Bool, "yes", true),
    // TLS (net::tls): the port, the server's certificate and what it asks
    // of clients. `tls-client-*`, `tls-dh-params-file`, `tls-cluster` and
    // `tls-replication` are accepted for configuration compatibility.
    p("tls-port", Kind::Int { min: 0, max: 65535 }, "0", true),
    p("tls-cert-file", Kind::Str, "", true),
    p("tls-key-file", Kind::Str, "", true),
    p("tls-key-file-pass", Kind::Str, "", true),
    p("tls-client-cert-file", Kind::Str, "", true),
    p("tls-client-key-file", Kind::Str, "", true),
    p("tls-client-key-file-pass", Kind::Str, "", true),
    p("tls-dh-params-file", Kind::Str, "", true),
    p("tls-ca-cert-file", Kind::Str, "", true),
    p("tls-ca-cert-dir", Kind::Str, "", true),
    p(
        "tls-auth-clients",
        Kind::Enum(&["no", "yes", "optional"]),
        "yes",
        true,
    ),
    p("tls-protocols", Kind::Str, "", true),
    p("tls-ciphers", Kind::Str, "", true),
    p("tls-ciphersuites", Kind::Str, "", true),
    p("tls-prefer-server-ciphers", Kind::Bool, "no", true),
    p("tls-session-caching", Kind::Bool, "yes", true),
    p(
        "tls-session-cache-size",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "20480",
        true,
    ),
    p(
        "tls-session-cache-timeout",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "300",
        true,
    ),
    p("tls-cluster", Kind::Bool, "no", true),
    p("tls-replication", Kind::Bool, "no", true),
    // The default user's password (empty: nopass).
    p("requirepass", Kind::Str, "", true),
    p("aclfile", Kind::Str, "", false),
    p(
        "tracking-table-max-keys",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "1000000",
        true,
    )
    .applied(apply::tracking_table_max_keys),
    p(
        "acllog-max-len",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        true,
    )
    .applied(apply::acllog_max_len),
    p(
        "acl-pubsub-default",
        Kind::Enum(&["allchannels", "resetchannels"]),
        "resetchannels",
        true,
    )
    .applied(apply::acl_pubsub_default),
    // Redis's default save points.
    p("save", Kind::Save, "3600 1 300 100 60 10000", true),
    p("appendonly", Kind::Bool, "no", true),
    p("aof-load-truncated", Kind::Bool, "yes", true),
    p("aof-use-rdb-preamble", Kind::Bool, "yes", true),
    p("aof-timestamp-enabled", Kind::Bool, "no", true).applied(apply::aof_timestamps),
    p("no-appendfsync-on-rewrite", Kind::Bool, "no", true),
    p(
        "auto-aof-rewrite-percentage",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "100",
        true,
    ),
    p(
        "auto-aof-rewrite-min-size",
        Kind::Memory { min: 0 },
        "67108864",
        true,
    ),
    p(
        "appendfsync",
        Kind::Enum(&["everysec", "always", "no"]),
        "everysec",
        true,
    )
    .applied(apply::appendfsync),
    p("appendfilename", Kind::Str, "appendonly.aof", false),
    p("appenddirname", Kind::Str, "appendonlydir", false),
    p("dbfilename", Kind::Str, "dump.rdb", true),
    p("rdbcompression", Kind::Bool, "yes", true),
    // Microseconds the snapshot thread sleeps per key it saves (negative
    // -n: 1 µs for one key in n), as Redis's debugDelay: tests use it to
    // keep a save running while they act.
    p(
        "rdb-key-save-delay",
        Kind::Int {
            min: i32::MIN as i64,
            max: I32MAX,
        },
        "0",
        true,
    ),
    // Microseconds the loader sleeps per key it loads (negative as above):
    // Redis's test knob to keep a load running.
    p(
        "key-load-delay",
        Kind::Int {
            min: i32::MIN as i64,
            max: I32MAX,
        },
        "0",
        true,
    ),
    // Redis's other hidden knobs, known with their ranges: keel loads
    // before it listens (no events to process while loading), keeps no
    // SIGALRM watchdog and has no abort-on-assert path to turn into exit.
    p(
        "loading-process-events-interval-bytes",
        Kind::Int {
            min: 1024,
            max: I32MAX,
        },
        "2097152",
        true,
    ),
    p(
        "watchdog-period",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "0",
        true,
    ),
    p("use-exit-on-panic", Kind::Bool, "no", true),
    // Redis 7.2's hidden knob for its cluster bus's ping period; keel's
    // nodes keep their topology in etcd, with no bus to ping.
    p(
        "cluster-ping-interval",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "0",
        true,
    ),
    p("rdbchecksum", Kind::Bool, "yes", true),
    p("stop-writes-on-bgsave-error", Kind::Bool, "yes", true),
    p(
        "enable-debug-command",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        false,
    ),
    p(
        "enable-module-command",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        false,
    ),
    // Whether CONFIG SET may change the protected parameters (dir,
    // dbfilename): no, yes, or from local connections only.
    p(
        "enable-protected-configs",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        false,
    ),
    p(
        "hash-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "512",
        true,
    )
    .applied(apply::encoding_limits),
    // A memory value in Redis ("1kb" is accepted).
    p(
        "hash-max-listpack-value",
        Kind::Memory { min: 0 },
        "64",
        true,
    )
    .applied(apply::encoding_limits),
    p(
        "set-max-intset-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "512",
        true,
    )
    .applied(apply::encoding_limits),
    // Redis 7.2's listpack sets (shown under redis-version 7.4.1).
    p(
        "set-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        true,
    )
    .applied(apply::encoding_limits),
    p(
        "set-max-listpack-value",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "64",
        true,
    )
    .applied(apply::encoding_limits),
    p(
        "zset-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        true,
    )
    .applied(apply::encoding_limits),
    // A memory value in Redis ("1kb" is accepted).
    p(
        "zset-max-listpack-value",
        Kind::Memory { min: 0 },
        "64",
        true,
    )
    .applied(apply::encoding_limits),
    p(
        "list-max-listpack-size",
        Kind::Int {
            min: i32::MIN as i64,
            max: I32MAX,
        },
        "-2",
        true,
    )
    .applied(apply::encoding_limits),
    // Stream node (listpack) limits; a memory value and a count in Redis.
    p(
        "stream-node-max-bytes",
        Kind::Memory { min: 0 },
        "4096",
        true,
    )
    .applied(apply::encoding_limits),
    p(
        "stream-node-max-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "100",
        true,
    )
    .applied(apply::encoding_limits),
    // A memory value in Redis ("1kb" is accepted).
    p(
        "hll-sparse-max-bytes",
        Kind::Memory { min: 0 },
        "3000",
        true,
    )
    .applied(apply::hll_sparse_max_bytes),
    p(
        "list-compress-depth",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "0",
        true,
    ),
    p(
        "client-output-buffer-limit",
        Kind::BufferLimits,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        true,
    )
    .applied(apply::client_buffers),
    p("notify-keyspace-events", Kind::NotifyFlags, "", true).applied(apply::notify_keyspace_events),
    p("maxmemory", Kind::MemoryU64, "0", true).applied(apply::memory),
    // keel's own: the Redis version presented to clients (INFO, HELLO,
    // Lua; docs/compatibility.md), one of `crate::REDIS_VERSIONS`.
    p(
        "redis-version",
        Kind::Enum(&["7.0.15", "7.4.1"]),
        crate::REDIS_VERSION,
        false,
    ),
    // keel's own: the disk tier (docs/tiering.md). Empty: no tier.
    p("tiering-dir", Kind::Str, "", true),
    p("tiering-max-disk", Kind::MemoryU64, "0", true).applied(apply::tiering_max_disk),
    p(
        "maxmemory-policy",
        Kind::Enum(crate::memory::POLICY_NAMES),
        "noeviction",
        true,
    )
    .applied(apply::memory),
    p(
        "maxmemory-samples",
        Kind::Int {
            min: 1,
            max: I32MAX,
        },
        "5",
        true,
    )
    .applied(apply::memory),
    p(
        "maxmemory-eviction-tenacity",
        Kind::Int { min: 0, max: 100 },
        "10",
        true,
    )
    .applied(apply::memory),
    p(
        "lfu-log-factor",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "10",
        true,
    )
    .applied(apply::lfu),
    p(
        "lfu-decay-time",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "1",
        true,
    )
    .applied(apply::lfu),
    p("maxmemory-clients", Kind::MemoryOrPercent, "0", true).applied(apply::memory),
    p("lazyfree-lazy-eviction", Kind::Bool, "no", true).applied(apply::lazyfree),
    p("lazyfree-lazy-expire", Kind::Bool, "no", true).applied(apply::lazyfree),
    p("lazyfree-lazy-server-del", Kind::Bool, "no", true).applied(apply::lazyfree),
    p("lazyfree-lazy-user-del", Kind::Bool, "no", true).applied(apply::lazyfree),
    p("lazyfree-lazy-user-flush", Kind::Bool, "no", true).applied(apply::lazyfree),
    // Milliseconds a script or function runs before other clients get
    // -BUSY and SCRIPT KILL / FUNCTION KILL may stop it (0: never).
    p(
        "busy-reply-threshold",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "5000",
        true,
    ),
    // Microseconds past which a command enters the slow log (-1: none,
    // 0: every command).
    p(
        "slowlog-log-slower-than",
        Kind::Int {
            min: -1,
            max: i64::MAX,
        },
        "10000",
        true,
    )
    .applied(apply::slow_logs),
    p(
        "slowlog-max-len",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        true,
    )
    .applied(apply::slow_logs),
    // Milliseconds past which LATENCY records an event (0: off).
    p(
        "latency-monitor-threshold",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "0",
        true,
    )
    .applied(apply::slow_logs),
    p("latency-tracking", Kind::Bool, "yes", true).applied(apply::latency_tracking),
    p(
        "latency-tracking-info-percentiles",
        Kind::Percentiles,
        "50 99 99.9",
        true,
    ),
    // keel's own: the Prometheus endpoint's port (0: off) and address.
    p("metrics-port", Kind::Int { min: 0, max: 65535 }, "0", false),
    p("metrics-bind", Kind::Str, "127.0.0.1", false),
    // The rest of Redis 7.0's parameters. Those keel has no use for yet
    // (replication, cluster, fork, jemalloc, process-title, syslog,
    // defragmentation) are stored: CONFIG GET/SET/REWRITE handle them as
    // Redis does; docs/compatibility.md lists them with the reasons.
    // Process, logging, start-up.
    p("always-show-logo", Kind::Bool, "no", false),
    p("set-proc-title", Kind::Bool, "yes", false),
    p(
        "proc-title-template",
        Kind::ProcTitle,
        "{title} {listen-addr} {server-mode}",
        true,
    ),
    p(
        "supervised",
        Kind::Enum(&["upstart", "systemd", "auto", "no"]),
        "no",
        false,
    ),
    p("syslog-enabled", Kind::Bool, "no", false),
    p("syslog-ident", Kind::Str, "redis", false),
    p(
        "syslog-facility",
        Kind::Enum(&[
            "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
        ]),
        "local0",
        false,
    ),
    p("crash-log-enabled", Kind::Bool, "yes", true),
    p("crash-memcheck-enabled", Kind::Bool, "yes", true),
    p("ignore-warnings", Kind::Str, "", true),
    p("disable-thp", Kind::Bool, "yes", false),
    p(
        "oom-score-adj",
        Kind::Enum(&["no", "yes", "relative", "absolute"]),
        "no",
        true,
    ),
    p("oom-score-adj-values", Kind::OomValues, "0 200 800", true),
    p("server_cpulist", Kind::Str, "", false),
    p("bio_cpulist", Kind::Str, "", false),
    p("aof_rewrite_cpulist", Kind::Str, "", false),
    p("bgsave_cpulist", Kind::Str, "", false),
    // Redis 7.2's (shown under redis-version 7.4.1), kept and shown only:
    // they bound how many connections Redis's one event loop accepts
    // between command rounds; keel accepts on a task apart from the
    // workers that serve commands, so a burst of connections never holds
    // commands back.
    p(
        "max-new-connections-per-cycle",
        Kind::Int { min: 1, max: 1000 },
        "10",
        true,
    ),
    p(
        "max-new-tls-connections-per-cycle",
        Kind::Int { min: 1, max: 1000 },
        "1",
        true,
    ),
    // Redis 7.2's: keel's log lines never carry keys or values.
    p("hide-user-data-from-log", Kind::Bool, "no", true),
    p("io-threads", Kind::Int { min: 1, max: 128 }, "1", false),
    p("io-threads-do-reads", Kind::Bool, "no", false),
    p(
        "socket-mark-id",
        Kind::Int {
            min: 0,
            max: u32::MAX as i64,
        },
        "0",
        false,
    ),
    p("bind-source-addr", Kind::Str, "", true),
    p("jemalloc-bg-thread", Kind::Bool, "yes", true),
    // SIGINT / SIGTERM: what shutdown they ask for (see `shutdown_flags`).
    p("shutdown-on-sigint", Kind::ShutdownFlags, "default", true),
    p("shutdown-on-sigterm", Kind::ShutdownFlags, "default", true),
    p(
        "shutdown-timeout",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "10",
        true,
    ),
    // The cron and the keyspace.
    p("dynamic-hz", Kind::Bool, "yes", true).applied(apply::dynamic_hz),
    p("activerehashing", Kind::Bool, "yes", true),
    p(
        "active-expire-effort",
        Kind::Int { min: 1, max: 10 },
        "1",
        true,
    ),
    p(
        "sanitize-dump-payload",
        Kind::Enum(&["no", "yes", "clients"]),
        "no",
        true,
    ),
    // Active defragmentation (jemalloc only: `activedefrag yes` is refused
    // with Redis's text for builds without it).
    p("activedefrag", Kind::Bool, "no", true),
    p(
        "active-defrag-cycle-min",
        Kind::Int { min: 1, max: 99 },
        "1",
        true,
    ),
    p(
        "active-defrag-cycle-max",
        Kind::Int { min: 1, max: 99 },
        "25",
        true,
    ),
    p(
        "active-defrag-threshold-lower",
        Kind::Int { min: 0, max: 1000 },
        "10",
        true,
    ),
    p(
        "active-defrag-threshold-upper",
        Kind::Int { min: 0, max: 1000 },
        "100",
        true,
    ),
    p(
        "active-defrag-max-scan-fields",
        Kind::Int {
            min: 1,
            max: i64::MAX,
        },
        "1000",
        true,
    ),
    p(
        "active-defrag-ignore-bytes",
        Kind::Memory { min: 1 },
        "104857600",
        true,
    ),
    // Persistence (fork-related).
    p("rdb-del-sync-files", Kind::Bool, "no", true),
    p("rdb-save-incremental-fsync", Kind::Bool, "yes", true),
    p("aof-rewrite-incremental-fsync", Kind::Bool, "yes", true),
    p("aof-disable-auto-gc", Kind::Bool, "no", true),
    // Replication: stored until replication lands.
    p("replicaof", Kind::ReplicaOf, "", false),
    p("masterauth", Kind::Str, "", true),
    p("masteruser", Kind::Str, "", true),
    p("replica-serve-stale-data", Kind::Bool, "yes", true).applied(apply::replica_serve_stale_data),
    p("replica-read-only", Kind::Bool, "yes", true).applied(apply::replica_read_only),
    p("replica-lazy-flush", Kind::Bool, "no", true),
    p("replica-ignore-maxmemory", Kind::Bool, "yes", true).applied(apply::replica_ignore_maxmemory),
    p("replica-announced", Kind::Bool, "yes", true),
    p("replica-ignore-disk-write-errors", Kind::Bool, "no", true),
    p("replica-announce-ip", Kind::Str, "", true),
    p(
        "replica-announce-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        true,
    ),
    p(
        "replica-priority",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "100",
        true,
    ),
    p("repl-diskless-sync", Kind::Bool, "yes", true),
    p(
        "repl-diskless-sync-delay",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "5",
        true,
    ),
    p(
        "repl-diskless-sync-max-replicas",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "0",
        true,
    ),
    p(
        "repl-diskless-load",
        Kind::Enum(&["disabled", "on-empty-db", "swapdb"]),
        "disabled",
        true,
    ),
    p("repl-disable-tcp-nodelay", Kind::Bool, "no", true),
    p(
        "repl-backlog-size",
        Kind::Memory { min: 1 },
        "1048576",
        true,
    )
    .applied(apply::repl_backlog_size),
    p(
        "repl-backlog-ttl",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "3600",
        true,
    )
    .applied(apply::repl_backlog_ttl),
    p(
        "repl-timeout",
        Kind::Int {
            min: 1,
            max: I32MAX,
        },
        "60",
        true,
    ),
    p(
        "repl-ping-replica-period",
        Kind::Int {
            min: 1,
            max: I32MAX,
        },
        "10",
        true,
    ),
    p(
        "min-replicas-to-write",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "0",
        true,
    )
    .applied(apply::min_replicas),
    p(
        "min-replicas-max-lag",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "10",
        true,
    )
    .applied(apply::min_replicas),
    p(
        "propagation-error-behavior",
        Kind::Enum(&["ignore", "panic", "panic-on-replicas"]),
        "ignore",
        true,
    ),
    // Cluster (see `crate::cluster`). keel's own: where the etcd holding
    // the topology is, the cluster's name there, and the TTL of the lease
    // a node holds while it serves (its fencing deadline).
    p("cluster-enabled", Kind::Bool, "no", false),
    p("cluster-etcd-endpoints", Kind::Str, "", false),
    p("cluster-name", Kind::Str, "keel", false),
    p(
        "cluster-lease-ttl",
        Kind::Int { min: 2, max: 3600 },
        "2",
        false,
    ),
    p("cluster-config-file", Kind::Str, "nodes.conf", false),
    p("cluster-port", Kind::Int { min: 0, max: 65535 }, "0", false),
    p(
        "cluster-node-timeout",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "15000",
        true,
    ),
    p("cluster-announce-ip", Kind::Str, "", true),
    p("cluster-announce-hostname", Kind::Hostname, "", true),
    // Redis 7.2's (shown under redis-version 7.4.1): a name for logs; keel
    // logs no cluster node names, so it is kept and shown only.
    p("cluster-announce-human-nodename", Kind::AuxName, "", true),
    p(
        "cluster-announce-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        true,
    ),
    p(
        "cluster-announce-bus-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        true,
    ),
    p(
        "cluster-announce-tls-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        true,
    ),
    p(
        "cluster-preferred-endpoint-type",
        Kind::Enum(&["ip", "hostname", "unknown-endpoint"]),
        "ip",
        true,
    ),
    p("cluster-require-full-coverage", Kind::Bool, "yes", true),
    p("cluster-replica-no-failover", Kind::Bool, "no", true),
    p(
        "cluster-replica-validity-factor",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "10",
        true,
    ),
    p(
        "cluster-migration-barrier",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "1",
        true,
    ),
    p("cluster-allow-replica-migration", Kind::Bool, "yes", true),
    p("cluster-allow-reads-when-down", Kind::Bool, "no", true),
    p(
        "cluster-allow-pubsubshard-when-down",
        Kind::Bool,
        "yes",
        true,
    ),
    p("cluster-link-sendbuf-limit", Kind::MemoryU64, "0", true),
];

/// Parameters CONFIG SET changes only when `enable-protected-configs`
/// allows it (Redis's PROTECTED_CONFIG).
const PROTECTED: &[&str] = &["dir", "dbfilename"];

/// Old names Redis still accepts and reports, and the parameter each one
/// stands for.
const ALIASES: &[(&str, &str)] = &[
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("lua-time-limit", "busy-reply-threshold"),
    ("slaveof", "replicaof"),
    // Valkey 8.0's names (its canonical ones; Redis's stay keel's).
    ("primaryauth", "masterauth"),
    ("primaryuser", "masteruser"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slave-read-only", "replica-read-only"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("slave-priority", "replica-priority"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    (
        "cluster-slave-validity-factor",
        "cluster-replica-validity-factor",
    ),
    // Redis 7.4 names these with dashes, keeping the old names.
    ("server-cpulist", "server_cpulist"),
    ("bio-cpulist", "bio_cpulist"),
    ("aof-rewrite-cpulist", "aof_rewrite_cpulist"),
    ("bgsave-cpulist", "bgsave_cpulist"),
];

fn param(name: &str) -> Option<&'static Param> {
    lookup(name).map(|(p, _)| p)
}

/// The parameter `name` stands for, and the name it was found under (the
/// alias itself for an old name): Redis keeps an alias as a parameter of
/// its own, so it reports errors under that name and may be set along
/// with its new name in one CONFIG SET.
fn lookup(name: &str) -> Option<(&'static Param, &'static str)> {
    if let Some((alias, canonical)) = ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
    {
        return PARAMS
            .iter()
            .find(|p| p.name == *canonical)
            .map(|p| (p, *alias));
    }
    PARAMS
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .map(|p| (p, p.name))
}

/// The apply functions of the parameters `names` (each function once, in
/// the table's order); every parameter's when `names` is `None`.
pub fn applies(names: Option<&[&str]>) -> Vec<Apply> {
    let mut out: Vec<Apply> = Vec::new();
    for p in PARAMS {
        let wanted = names.is_none_or(|n| n.iter().any(|n| n.eq_ignore_ascii_case(p.name)));
        if let Some(f) = p.apply.filter(|_| wanted) {
            if !out.iter().any(|g| std::ptr::fn_addr_eq(*g, f)) {
                out.push(f);
            }
        }
    }
    out
}

/// A parameter's value as CONFIG GET and REWRITE show it: the value kept,
/// but for `notify-keyspace-events`, whose `n` Redis does not show beside
/// `A` (it keeps it all the same).
fn shown(name: &str, value: &str) -> String {
    if name.eq_ignore_ascii_case("notify-keyspace-events") {
        let flags = crate::clients::notify::parse(value).unwrap_or(0);
        return crate::clients::notify::to_string(flags);
    }
    value.to_string()
}

#[derive(Debug, Clone)]
pub struct Config {
    values: BTreeMap<&'static str, String>,
    /// `values`, typed: rebuilt by every change (`refresh`). Shared, so
    /// the server can publish it as its snapshot without a copy.
    settings: Arc<Settings>,
    /// The config file the server was started with, for CONFIG REWRITE.
    pub file: Option<PathBuf>,
    /// `user <name> <rules>...` lines (line number, arguments with
    /// `user`), which the server loads at start.
    pub users: Vec<(usize, Vec<Vec<u8>>)>,
}

/// Redis's memtoull: digits and an optional unit (b, k, kb, m, mb, g, gb,
/// any case). No sign; an empty number is 0; the digits saturate at
/// 2^64 - 1 and the unit multiplies with wrap-around, as the C code does.
fn parse_memory(s: &str) -> Option<u64> {
    let digits_end = s
        .bytes()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits.len() >= 128 {
        return None;
    }
    let val = digits.bytes().fold(0u64, |acc, c| {
        acc.saturating_mul(10).saturating_add((c - b'0') as u64)
    });
    Some(val.wrapping_mul(mul))
}

/// A multi-argument parameter's value split as CONFIG SET splits it: on
/// every single space (so two spaces make an empty argument), and no
/// argument at all for the empty string.
fn split_spaces(value: &str) -> Vec<&str> {
    if value.is_empty() {
        Vec::new()
    } else {
        value.split(' ').collect()
    }
}

/// Checks and normalises `value` for `p`; the error is the text after
/// "CONFIG SET failed (possibly related to argument 'x') - ".
fn normalise(p: &Param, value: &str) -> Result<String, String> {
    match p.kind {
        Kind::Int { min, max } => {
            let n = resp::parse_i64(value.as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if n < min || n > max {
                return Err(format!("argument must be between {min} and {max} inclusive"));
            }
            if p.name == "hz" {
                return Ok(n.clamp(1, 500).to_string());
            }
            Ok(n.to_string())
        }
        Kind::Octal => i64::from_str_radix(value, 8)
            .map(|n| format!("{n:o}"))
            .map_err(|_| "argument couldn't be parsed into an integer".to_string()),
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            // Redis's isValidActiveDefrag, for a build without its
            // jemalloc (keel has no active defragmentation).
            "yes" if p.name == "activedefrag" => Err("Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution".into()),
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        // "relative" is "yes" under another name; CONFIG GET shows the
        // first name of the value, as configEnumGetName.
        Kind::Enum(_) if p.name == "oom-score-adj" && value.eq_ignore_ascii_case("relative") => {
            Ok("yes".into())
        }
        Kind::Enum(options) => options
            .iter()
            .find(|o| o.eq_ignore_ascii_case(value))
            .map(|o| o.to_string())
            .ok_or_else(|| {
                if options.len() == 1 {
                    format!("argument must be '{}' (other values are not available in this version of keel)", options[0])
                } else {
                    // Redis 7.0 knows no `nothing` log level.
                    let shown: Vec<&str> = options
                        .iter()
                        .copied()
                        .filter(|o| *o != "nothing" || crate::speaks_7_4())
                        .collect();
                    format!("argument(s) must be one of the following: {}", shown.join(", "))
                }
            }),
        Kind::Memory { min } => {
            let n = parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())?;
            if n > i64::MAX as u64 || (n as i64) < min {
                return Err(format!("argument must be between {min} and {} inclusive", i64::MAX));
            }
            Ok(n.to_string())
        }
        Kind::MemoryOrPercent => {
            // Redis's PERCENT_CONFIG: "N%" (0..100 is not enforced), or
            // a memory value.
            let bad = || "argument must be a memory or percent value".to_string();
            if let Some(pct) = value.strip_suffix('%') {
                let n: i64 = pct.parse().map_err(|_| bad())?;
                if n < 0 {
                    return Err(bad());
                }
                if n > 100 {
                    return Err("percentage argument must be less or equal to 100".into());
                }
                return Ok(format!("{n}%"));
            }
            let n = parse_memory(value).ok_or_else(bad)?;
            if n > i64::MAX as u64 {
                return Err(format!("argument must be between 0 and {} inclusive", i64::MAX));
            }
            Ok(n.to_string())
        }
        // Redis's setConfigBindOption: at most CONFIG_BINDADDR_MAX words.
        Kind::Str if p.name == "bind" => {
            let words = split_spaces(value);
            if words.len() > 16 {
                return Err("Too many bind addresses specified.".into());
            }
            Ok(words.join(" "))
        }
        Kind::Str => Ok(value.to_string()),
        Kind::MemoryU64 => parse_memory(value)
            .map(|n| n.to_string())
            .ok_or_else(|| "argument must be a memory value".to_string()),
        Kind::ShutdownFlags => {
            // Redis's flags enum: any of the names (none is an error),
            // shown in the enum's order.
            const NAMES: [&str; 5] = ["default", "save", "nosave", "now", "force"];
            let mut bits = 0u32;
            let parts = split_spaces(value);
            for part in &parts {
                let i = NAMES
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(part))
                    .ok_or_else(|| format!("argument(s) must be one of the following: {}", NAMES.join(", ")))?;
                bits |= (1u32 << i) >> 1;
            }
            if parts.is_empty() {
                return Err(format!("argument(s) must be one of the following: {}", NAMES.join(", ")));
            }
            if bits & 3 == 3 {
                return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
            }
            if bits == 0 {
                return Ok("default".into());
            }
            let shown: Vec<&str> = (0..4).filter(|b| bits & (1 << b) != 0).map(|b| NAMES[b + 1]).collect();
            Ok(shown.join(" "))
        }
        Kind::OomValues => {
            let parts = split_spaces(value);
            if parts.len() != 3 {
                return Err("wrong number of arguments".into());
            }
            let mut out = Vec::new();
            for part in parts {
                match strtoll_whole(part.as_bytes()) {
                    Some(n) if (-2000..=2000).contains(&n) => out.push(n.to_string()),
                    _ => return Err("Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into()),
                }
            }
            Ok(out.join(" "))
        }
        Kind::ProcTitle => {
            if proc_title_valid(value) {
                Ok(value.to_string())
            } else {
                Err("template format is invalid or contains unknown variables".into())
            }
        }
        Kind::Hostname => {
            if value.len() >= 256 {
                return Err("Hostnames must be less than 256 characters".into());
            }
            if !value.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.') {
                return Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into());
            }
            Ok(value.to_string())
        }
        Kind::Locale => {
            if crate::command::collate::valid(value) {
                Ok(value.to_string())
            } else {
                Err("Invalid locale name".into())
            }
        }
        Kind::AuxName => {
            if value.bytes().any(|c| !c.is_ascii_alphanumeric() && b"!#$%&()*+:;<>?@[]^{|}~".contains(&c)) {
                return Err("Announced human node name contained invalid character".into());
            }
            Ok(value.to_string())
        }
        Kind::ReplicaOf => {
            // Redis's setConfigReplicaOfOption (config file only: the
            // parameter is immutable).
            let parts = split_spaces(value);
            if parts.len() != 2 {
                return Err("wrong number of arguments".into());
            }
            if parts[0].eq_ignore_ascii_case("no") && parts[1].eq_ignore_ascii_case("one") {
                return Ok(String::new());
            }
            match strtoll_whole(parts[1].as_bytes()) {
                Some(port) if (0..=65535).contains(&port) && !parts[1].is_empty() => {
                    Ok(format!("{} {port}", parts[0]))
                }
                _ => Err("Invalid master port".into()),
            }
        }
        Kind::Percentiles => {
            // Redis's setConfigLatencyTrackingInfoPercentilesOutputOption.
            let mut out = Vec::new();
            for part in split_spaces(value) {
                let v: f64 = part
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite())
                    .ok_or_else(|| format!("Invalid {} parameters", p.name))?;
                if !(0.0..=100.0).contains(&v) {
                    return Err(format!("{} parameters should sit between [0.0,100.0]", p.name));
                }
                out.push(fmt_percentile(v));
            }
            Ok(out.join(" "))
        }
        Kind::NotifyFlags => crate::clients::notify::parse(value)
            .map(crate::clients::notify::to_stored)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()),
        Kind::BufferLimits => {
            // Redis's setConfigClientOutputBufferLimitOption.
            let parts = split_spaces(value);
            if !parts.len().is_multiple_of(4) {
                return Err("Wrong number of arguments in buffer limit configuration.".into());
            }
            let mut out = Vec::new();
            for c in parts.chunks(4) {
                let class = match c[0].to_ascii_lowercase().as_str() {
                    "normal" => "normal",
                    "slave" | "replica" => "slave",
                    "pubsub" => "pubsub",
                    _ => return Err("Invalid client class specified in buffer limit configuration.".into()),
                };
                let hard = parse_memory(c[1]);
                let soft = parse_memory(c[2]);
                let secs = strtoll_whole(c[3].as_bytes()).map(|n| n as i32).filter(|n| *n >= 0);
                match (hard, soft, secs) {
                    (Some(h), Some(s), Some(t)) => out.push(format!("{class} {h} {s} {t}")),
                    _ => return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into()),
                }
            }
            Ok(out.join(" "))
        }
        Kind::Save => {
            // Redis's setConfigSaveOption: pairs of seconds (at least 1)
            // and changes (at least 0) as strtoll reads them; CONFIG GET
            // then shows them as "%jd %d".
            let parts = split_spaces(value);
            if !parts.len().is_multiple_of(2) {
                return Err("Invalid save parameters".into());
            }
            let mut out = Vec::new();
            for pair in parts.chunks(2) {
                let secs = strtoll_whole(pair[0].as_bytes()).filter(|n| *n >= 1);
                let changes = strtoll_whole(pair[1].as_bytes()).filter(|n| *n >= 0);
                match (secs, changes) {
                    (Some(s), Some(c)) => out.push(format!("{s} {}", c as i32)),
                    _ => return Err("Invalid save parameters".into()),
                }
            }
            Ok(out.join(" "))
        }
    }
}

/// Whether a proc-title-template is one Redis accepts: `{name}` variables
/// it knows (`{{` / `}}` stand for braces), and something left once
/// expanded with an empty title and trimmed (Redis's
/// validateProcTitleTemplate).
fn proc_title_valid(template: &str) -> bool {
    const VARS: &[&str] = &[
        "title",
        "listen-addr",
        "server-mode",
        "port",
        "tls-port",
        "unixsocket",
        "config-file",
    ];
    let b = template.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' if b.get(i + 1) == Some(&b'{') => {
                out.push('{');
                i += 2;
            }
            b'}' if b.get(i + 1) == Some(&b'}') => {
                out.push('}');
                i += 2;
            }
            b'{' => {
                let Some(end) = template[i + 1..].find('}') else {
                    return false;
                };
                let var = &template[i + 1..i + 1 + end];
                if !VARS.contains(&var) {
                    return false;
                }
                // What a standalone server expands them to (title empty,
                // as the check does; the addresses and ports never are).
                if matches!(var, "listen-addr" | "port" | "tls-port") {
                    out.push('x');
                }
                i += end + 2;
            }
            b'}' => return false,
            _ => {
                out.push(b[i] as char);
                i += 1;
            }
        }
    }
    !out.trim_matches(' ').is_empty()
}

/// A percentile as Redis prints it (in CONFIG GET and INFO's
/// latencystats): `%f` with the trailing zeros (and point) cut.
pub fn fmt_percentile(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The percentiles of `latency-tracking-info-percentiles`.
pub fn percentiles(value: &str) -> Vec<f64> {
    value
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("Bad directive or wrong number of arguments")]
    UnknownDirective,
    #[error("{0}")]
    Invalid(String),
    #[error("can't read config file {0}: {1}")]
    Io(PathBuf, std::io::Error),
}

impl Default for Config {
    fn default() -> Self {
        let mut values: BTreeMap<&'static str, String> = PARAMS
            .iter()
            .map(|p| (p.name, p.default.to_string()))
            .collect();
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        values.insert("dir", cwd);
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        values.insert("threads", cores.to_string());
        let settings = Arc::new(Settings::read(|name| {
            values.get(name).map_or("", String::as_str)
        }));
        Config {
            values,
            settings,
            file: None,
            users: Vec::new(),
        }
    }
}

impl Config {
    /// Builds the configuration from `keel-server [file] [--name value...]`,
    /// the same shape redis-server accepts.
    pub fn from_args(args: &[String]) -> Result<Config, ConfigError> {
        let mut cfg = Config::default();
        let mut rest = args;
        if let Some(first) = rest.first() {
            if !first.starts_with("--") {
                let path = PathBuf::from(first);
                let text =
                    std::fs::read_to_string(&path).map_err(|e| ConfigError::Io(path.clone(), e))?;
                cfg.load_text(&text)?;
                cfg.file = Some(std::fs::canonicalize(&path).unwrap_or(path));
                rest = &rest[1..];
            }
        }
        // "--port 6380 --save ''" becomes the config lines "port 6380",
        // "save ''", as redis-server does.
        let mut lines = String::new();
        for a in rest {
            if let Some(name) = a.strip_prefix("--") {
                lines.push('\n');
                lines.push_str(name);
            } else {
                lines.push(' ');
                lines.push_str(&quote(a));
            }
        }
        cfg.load_text(&lines)?;
        Ok(cfg)
    }

    /// Applies redis.conf-syntax text.
    pub fn load_text(&mut self, text: &str) -> Result<(), ConfigError> {
        for (lineno, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut buf = Vec::new();
            let mut ranges = Vec::new();
            resp::request::split_args(line.as_bytes(), &mut buf, &mut ranges).map_err(|_| {
                ConfigError::Invalid(format!("line {}: unbalanced quotes", lineno + 1))
            })?;
            let args: Vec<String> = ranges
                .iter()
                .map(|&(s, l)| String::from_utf8_lossy(&buf[s..s + l]).into_owned())
                .collect();
            let Some((name, values)) = args.split_first() else {
                continue;
            };
            let name = name.to_ascii_lowercase();
            let value = values.join(" ");
            // Lines Redis accepts that have no effect here.
            if name == "user" {
                // Users are loaded once the server has its command table
                // (Server::load_users); the line is kept as written.
                self.users.push((
                    lineno + 1,
                    ranges
                        .iter()
                        .map(|&(s, l)| buf[s..s + l].to_vec())
                        .collect(),
                ));
                continue;
            }
            if name == "include" || name == "rename-command" {
                return Err(ConfigError::Invalid(format!(
                    "line {}: '{name}' is not supported",
                    lineno + 1
                )));
            }
            let p = param(&name).ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "line {}: '{}': Bad directive or wrong number of arguments",
                    lineno + 1,
                    line
                ))
            })?;
            let v = normalise(p, &value).map_err(|e| {
                ConfigError::Invalid(format!("line {}: '{}': {e}", lineno + 1, line))
            })?;
            let v = if matches!(p.kind, Kind::BufferLimits) {
                merge_limits(self.get(p.name), &v)
            } else {
                v
            };
            self.values.insert(p.name, v);
        }
        self.refresh();
        Ok(())
    }

    /// The configuration, typed: how the server reads it.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The typed settings as a shared snapshot (`Server::settings`).
    pub fn snapshot(&self) -> Arc<Settings> {
        Arc::clone(&self.settings)
    }

    /// Rebuilds `settings` after `values` changed.
    fn refresh(&mut self) {
        let values = &self.values;
        self.settings = Arc::new(Settings::read(|name| {
            values.get(name).map_or("", String::as_str)
        }));
    }

    /// The value of parameter `name` (an alias reads its parameter). A
    /// name keel does not know is a bug in the caller (a typo would read
    /// as empty): debug builds, which the tests run, stop on it.
    fn get(&self, name: &str) -> &str {
        let p = param(name);
        debug_assert!(p.is_some(), "unknown configuration parameter {name:?}");
        p.and_then(|p| self.values.get(p.name))
            .map(String::as_str)
            .unwrap_or("")
    }

    /// Records a value the server changed itself (REPLICAOF's
    /// `replicaof`), unchecked: CONFIG GET and REWRITE show it.
    pub fn set_internal(&mut self, name: &str, value: String) {
        if let Some(p) = param(name) {
            self.values.insert(p.name, value);
            self.refresh();
        }
    }

    /// CONFIG GET: (name, value) for every parameter matching any pattern.
    /// Parameters and values matching CONFIG GET's patterns, values as
    /// CONFIG GET shows them ([`shown`]).
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for pat in patterns {
            let is_glob = pat.iter().any(|c| matches!(c, b'*' | b'?' | b'['));
            if !is_glob {
                // An exact name is echoed as written, as Redis does.
                let name = String::from_utf8_lossy(pat).into_owned();
                if param(&name).is_some()
                    && in_dialect(&name)
                    && !out.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name))
                {
                    let value = shown(&name, self.get(&name));
                    out.push((name, value));
                }
                continue;
            }
            let names = PARAMS
                .iter()
                .map(|p| p.name)
                .filter(|name| !HIDDEN.contains(name))
                .filter(|name| !(crate::speaks_7_4() && HIDDEN_SINCE_7_2.contains(name)))
                .chain(ALIASES.iter().map(|(alias, _)| *alias))
                .filter(|name| in_dialect(name));
            for name in names {
                if glob::matches(pat, name.as_bytes(), true)
                    && !out.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
                {
                    out.push((name.to_string(), shown(name, self.get(name))));
                }
            }
        }
        out
    }

    /// CONFIG SET of several pairs, all or nothing, as Redis's
    /// configSetCommand: first every name is checked (the first unknown
    /// one wins over every other error; else the first immutable,
    /// protected or repeated one), then the values in order. `local`
    /// says whether the client is local, for `enable-protected-configs
    /// local`. The error is the full reply text.
    pub fn set_many(
        &mut self,
        pairs: &[(&[u8], &[u8])],
        local: bool,
    ) -> Result<Vec<&'static str>, String> {
        let fail = |name: &str, why: &str| {
            format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
        };
        let protected_ok = match self.get("enable-protected-configs") {
            "yes" => true,
            "local" => local,
            _ => false,
        };
        let mut found: Vec<(&'static Param, &'static str)> = Vec::new();
        let mut name_error: Option<String> = None;
        for (name, _) in pairs {
            let name_s = String::from_utf8_lossy(name);
            let Some((p, as_named)) = lookup(&name_s).filter(|_| in_dialect(&name_s)) else {
                if name_error.is_none() {
                    return Err(format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{name_s}'"
                    ));
                }
                continue;
            };
            if name_error.is_some() {
                continue;
            }
            if !p.mutable {
                name_error = Some(fail(&name_s, "can't set immutable config"));
            } else if PROTECTED.contains(&p.name) && !protected_ok {
                name_error = Some(fail(&name_s, "can't set protected config"));
            } else if found.iter().any(|(_, n)| *n == as_named) {
                name_error = Some(fail(&name_s, "duplicate parameter"));
            }
            found.push((p, as_named));
        }
        if let Some(e) = name_error {
            return Err(e);
        }
        let old_dir = std::env::current_dir().ok();
        let restore_dir = |changed: bool| {
            if let (true, Some(d)) = (changed, &old_dir) {
                let _ = std::env::set_current_dir(d);
            }
        };
        let mut dir_changed = false;
        let mut staged: Vec<(&'static str, String)> = Vec::new();
        for ((p, as_named), (_, value)) in found.into_iter().zip(pairs) {
            let v = match normalise(p, &String::from_utf8_lossy(value)) {
                Ok(v) => v,
                Err(e) => {
                    restore_dir(dir_changed);
                    return Err(fail(as_named, &e));
                }
            };
            if p.name == "dir" {
                if let Err(e) = std::env::set_current_dir(&v) {
                    restore_dir(dir_changed);
                    return Err(fail(as_named, &strerror(&e)));
                }
                dir_changed = true;
            }
            let v = if matches!(p.kind, Kind::BufferLimits) {
                let base = staged
                    .iter()
                    .rev()
                    .find(|(n, _)| *n == p.name)
                    .map_or(self.get(p.name), |(_, v)| v.as_str());
                merge_limits(base, &v)
            } else {
                v
            };
            staged.push((p.name, v));
        }
        // Applied once every value is valid, as Redis's updateMaxclients:
        // the open files limit must fit the new number of clients.
        if let Some((_, v)) = staged.iter().rev().find(|(n, _)| *n == "maxclients") {
            if let Err(fits) = crate::net::fit_open_files(v.parse().unwrap_or(0)) {
                restore_dir(dir_changed);
                return Err(fail("maxclients", &format!("The operating system is not able to handle the specified number of clients, try with {fits}")));
            }
        }
        let mut names = Vec::new();
        for (n, v) in staged {
            self.values.insert(n, v);
            if !names.contains(&n) {
                names.push(n);
            }
        }
        self.refresh();
        Ok(names)
    }

    /// Puts back the values `names` had in `before` (a failed CONFIG SET),
    /// the working directory with `dir`.
    pub fn restore(&mut self, before: &Config, names: &[&'static str]) {
        for &name in names {
            let old = before.get(name).to_string();
            if name == "dir" {
                if let Err(e) = std::env::set_current_dir(&old) {
                    tracing::warn!("Can't restore the working directory {old}: {e}");
                }
            }
            self.values.insert(name, old);
        }
        self.refresh();
    }

    /// CONFIG REWRITE, as Redis's rewriteConfig: comments and lines of
    /// directives it does not rewrite (include, rename-command) are kept;
    /// a parameter's first line is rewritten in place (an old name's under
    /// the parameter's name) and its later lines removed; parameters not in
    /// the file are appended after a `# Generated by CONFIG REWRITE` line
    /// when they differ from their defaults (`save`, `dir`, the users and
    /// `latency-tracking-info-percentiles` always); runs of empty lines
    /// become one.
    /// `users`: the `user ...` lines to write (every ACL user, when no
    /// `aclfile` holds them; with one, the file's `user` lines go).
    pub fn rewrite(&self, users: &[String]) -> Result<(), String> {
        let Some(path) = &self.file else {
            return Err("ERR The server is running without a config file".into());
        };
        let old = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("ERR Rewriting config file: {}", strerror(&e))),
        };
        let mut state = Rewrite::read(&old);
        for p in PARAMS {
            self.rewrite_param(p, &mut state);
        }
        if self.get("aclfile").is_empty() {
            for u in users {
                state.line("user", u.clone(), true);
            }
        }
        state.processed.insert("user".into());
        state.processed.insert("loadmodule".into());
        write_atomically(path, state.content().as_bytes())
            .map_err(|e| format!("ERR Rewriting config file: {}", strerror(&e)))
    }

    /// One parameter's lines for CONFIG REWRITE, as Redis's rewrite
    /// function for its type.
    fn rewrite_param(&self, p: &Param, state: &mut Rewrite) {
        let name = p.name;
        let v = self.get(name);
        let differs = v != p.default;
        match p.kind {
            // keel's own: its default depends on the machine.
            _ if name == "threads" => state.line(name, format!("{name} {v}"), false),
            _ if name == "dir" => {
                let cwd = std::fs::canonicalize(v)
                    .map(|d| d.display().to_string())
                    .unwrap_or_else(|_| v.to_string());
                state.line(name, format!("{name} {}", repr(&cwd)), true)
            }
            // Written unless it is Redis's default, so the file means the
            // same to either server.
            _ if name == "bind" => {
                if v == "* -::*" {
                    state.processed.insert(name.into());
                } else {
                    state.line(name, format!("{name} {v}"), true)
                }
            }
            Kind::Str | Kind::ProcTitle | Kind::Hostname | Kind::AuxName | Kind::Locale => {
                if NULL_WHEN_EMPTY.contains(&name) || name.starts_with("tls-") {
                    if v.is_empty() {
                        state.processed.insert(name.into());
                    } else {
                        state.line(name, format!("{name} {}", repr(v)), true)
                    }
                } else {
                    state.line(name, format!("{name} {}", repr(v)), differs)
                }
            }
            Kind::NotifyFlags => {
                state.line(name, format!("{name} {}", repr(&shown(name, v))), differs)
            }
            Kind::ReplicaOf => {
                if v.is_empty() {
                    state.processed.insert(name.into());
                } else {
                    state.line(name, format!("{name} {v}"), true)
                }
            }
            Kind::Memory { .. } | Kind::MemoryU64 => state.line(
                name,
                format!("{name} {}", format_memory(v.parse().unwrap_or(0))),
                differs,
            ),
            Kind::MemoryOrPercent if !v.ends_with('%') => state.line(
                name,
                format!("{name} {}", format_memory(v.parse().unwrap_or(0))),
                differs,
            ),
            Kind::Save => {
                if v.is_empty() {
                    state.line(name, "save \"\"".into(), true);
                }
                for pair in split_spaces(v).chunks(2) {
                    state.line(name, format!("save {}", pair.join(" ")), true);
                }
                state.processed.insert(name.into());
            }
            Kind::BufferLimits => {
                let defaults = split_spaces(p.default);
                let values = split_spaces(v);
                for class in ["normal", "slave", "pubsub"] {
                    let find = |list: &[&str]| -> Vec<String> {
                        list.chunks(4)
                            .find(|c| c[0] == class)
                            .map(|c| c[1..].iter().map(|s| s.to_string()).collect())
                            .unwrap_or_default()
                    };
                    let (cur, def) = (find(&values), find(&defaults));
                    if cur.len() != 3 {
                        continue;
                    }
                    let shown = if class == "slave" { "replica" } else { class };
                    let line = format!(
                        "{name} {shown} {} {} {}",
                        format_memory(cur[0].parse().unwrap_or(0)),
                        format_memory(cur[1].parse().unwrap_or(0)),
                        cur[2]
                    );
                    state.line(name, line, cur != def);
                }
                state.processed.insert(name.into());
            }
            Kind::Percentiles => {
                let shown = if v.is_empty() { "\"\"" } else { v };
                state.line(name, format!("{name} {shown}"), true)
            }
            _ => state.line(name, format!("{name} {v}"), differs),
        }
    }
}

/// String parameters Redis keeps as NULL when set to "" (its
/// EMPTY_STRING_IS_NULL): CONFIG REWRITE drops their lines then.
const NULL_WHEN_EMPTY: &[&str] = &[
    "unixsocket",
    "unixsocketgroup",
    "pidfile",
    "requirepass",
    "masterauth",
    "masteruser",
    "replica-announce-ip",
    "cluster-announce-ip",
    "cluster-announce-hostname",
    "cluster-announce-human-nodename",
    "bind-source-addr",
    "server_cpulist",
    "bio_cpulist",
    "aof_rewrite_cpulist",
    "bgsave_cpulist",
];

/// The line Redis's rewriteConfig writes before the first appended one.
const REWRITE_SIGNATURE: &str = "# Generated by CONFIG REWRITE";

/// Redis's rewriteConfigState: the old file's lines and, for each
/// directive, the lines it has (first to last).
struct Rewrite {
    lines: Vec<String>,
    by_option: std::collections::HashMap<String, std::collections::VecDeque<usize>>,
    processed: std::collections::HashSet<String>,
    needs_signature: bool,
}

impl Rewrite {
    fn read(text: &str) -> Rewrite {
        let mut state = Rewrite {
            lines: Vec::new(),
            by_option: Default::default(),
            processed: Default::default(),
            needs_signature: true,
        };
        for raw in text.split('\n') {
            let line = raw.trim_matches([' ', '\t', '\r', '\n']);
            if line.is_empty() || line.starts_with('#') {
                if line == REWRITE_SIGNATURE {
                    state.needs_signature = false;
                }
                state.lines.push(line.to_string());
                continue;
            }
            let mut buf = Vec::new();
            let mut ranges = Vec::new();
            let parsed = resp::request::split_args(line.as_bytes(), &mut buf, &mut ranges).is_ok();
            let name = ranges
                .first()
                .map(|&(s, l)| String::from_utf8_lossy(&buf[s..s + l]).to_ascii_lowercase());
            let Some(name) = name.filter(|_| parsed) else {
                state.lines.push(format!("# ??? {line}"));
                continue;
            };
            let option = match lookup(&name) {
                Some((p, _)) => p.name.to_string(),
                None if matches!(
                    name.as_str(),
                    "include" | "rename-command" | "user" | "loadmodule" | "sentinel"
                ) =>
                {
                    name
                }
                None => {
                    // A directive no longer known: kept, commented out.
                    state.lines.push(format!("# ??? {line}"));
                    continue;
                }
            };
            state
                .by_option
                .entry(option)
                .or_default()
                .push_back(state.lines.len());
            state.lines.push(line.to_string());
        }
        // A file ending in a newline has an empty last line, as Redis
        // splits it (kept: the appended lines follow an empty one).
        if text.is_empty() {
            state.lines.pop();
        }
        state
    }

    /// Redis's rewriteConfigRewriteLine: replaces the option's next old
    /// line, or appends when `force` (the value is not the default).
    fn line(&mut self, option: &str, line: String, force: bool) {
        self.processed.insert(option.to_string());
        if let Some(at) = self.by_option.get_mut(option).and_then(|l| l.pop_front()) {
            self.lines[at] = line;
        } else if force {
            if self.needs_signature {
                self.lines.push(REWRITE_SIGNATURE.into());
                self.needs_signature = false;
            }
            self.lines.push(line);
        }
    }

    /// The new file: the processed options' leftover lines blanked, each
    /// run of empty lines turned into one.
    fn content(mut self) -> String {
        for (option, left) in &self.by_option {
            if self.processed.contains(option) {
                for &at in left {
                    self.lines[at].clear();
                }
            }
        }
        let mut out = String::new();
        let mut was_empty = false;
        for l in &self.lines {
            if l.is_empty() {
                if was_empty {
                    continue;
                }
                was_empty = true;
            } else {
                was_empty = false;
            }
            out.push_str(l);
            out.push('\n');
        }
        out
    }
}

/// Redis's rewriteConfigFormatMemory: the largest of gb, mb, kb that
/// divides the value.
fn format_memory(bytes: u64) -> String {
    const KB: u64 = 1024;
    for (unit, name) in [(KB * KB * KB, "gb"), (KB * KB, "mb"), (KB, "kb")] {
        if bytes != 0 && bytes.is_multiple_of(unit) {
            return format!("{}{name}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// Redis's sdscatrepr: always quoted, escapes for quotes, backslashes and
/// control characters, \xHH for other unprintable bytes.
fn repr(s: &str) -> String {
    let mut q = String::from("\"");
    for &c in s.as_bytes() {
        match c {
            b'\\' => q.push_str("\\\\"),
            b'"' => q.push_str("\\\""),
            b'\n' => q.push_str("\\n"),
            b'\r' => q.push_str("\\r"),
            b'\t' => q.push_str("\\t"),
            7 => q.push_str("\\a"),
            8 => q.push_str("\\b"),
            0x20..=0x7e => q.push(c as char),
            _ => q.push_str(&format!("\\x{c:02x}")),
        }
    }
    q.push('"');
    q
}

/// The client classes of `client-output-buffer-limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferClass {
    Normal,
    Replica,
    Pubsub,
}

/// One class's output buffer limits: hard and soft, in bytes, and how long
/// the soft one may be exceeded, in seconds (0: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

/// Replaces the classes `new` names in `old`, keeping the others, in
/// Redis's order (normal, slave, pubsub).
fn merge_limits(old: &str, new: &str) -> String {
    let parse = |s: &str| -> Vec<(String, String)> {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .chunks(4)
            .filter(|c| c.len() == 4)
            .map(|c| (c[0].to_string(), c[1..].join(" ")))
            .collect()
    };
    let mut classes = parse(old);
    for (class, rest) in parse(new) {
        match classes.iter_mut().find(|(c, _)| *c == class) {
            Some(entry) => entry.1 = rest,
            None => classes.push((class, rest)),
        }
    }
    classes
        .iter()
        .map(|(c, r)| format!("{c} {r}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An I/O error's text as C's strerror gives it (without Rust's
/// " (os error N)").
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn quote(s: &str) -> String {
    if !s.is_empty()
        && !s
            .bytes()
            .any(|c| c.is_ascii_whitespace() || c == b'"' || c == b'\'' || c == b'\\')
    {
        return s.to_string();
    }
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    crate::persistence::atomic_file::write(path, "tmp-rewrite", data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_reads_a_parameter_of_the_table() {
        for name in Settings::NAMES {
            let p = param(name);
            assert!(
                p.is_some_and(|p| p.name == *name),
                "{name:?} is not a parameter"
            );
        }
    }

    #[test]
    fn a_change_runs_the_apply_functions_of_what_changed_each_once() {
        let all = applies(None);
        for (i, f) in all.iter().enumerate() {
            assert!(!all[..i].iter().any(|g| std::ptr::fn_addr_eq(*g, *f)));
        }
        let memory = applies(Some(&[
            "maxmemory",
            "MAXMEMORY-CLIENTS",
            "maxmemory-policy",
        ]));
        assert_eq!(memory.len(), 1);
        assert!(std::ptr::fn_addr_eq(memory[0], apply::memory as Apply));
        assert!(applies(Some(&["port", "dir"])).is_empty());
        assert_eq!(applies(Some(&["hz", "timeout", "hz"])).len(), 2);
    }

    #[test]
    fn settings_follow_every_change() {
        let mut c = Config::from_args(&["--hz".to_string(), "20".to_string()]).unwrap();
        assert_eq!(c.settings().hz, 20);
        assert_eq!(c.settings().save.len(), 3);
        assert_eq!(c.settings().unixsocket, None);
        let before = c.clone();
        let names = c.set_many(&[(b"hz", b"50"), (b"save", b"")], true).unwrap();
        assert_eq!(c.settings().hz, 50);
        assert!(c.settings().save.is_empty());
        c.restore(&before, &names);
        assert_eq!(c.settings().hz, 20);
        c.set_internal("replicaof", "10.0.0.1 6380".into());
        assert_eq!(
            c.settings().replicaof,
            Some(ReplicaOf {
                host: "10.0.0.1".into(),
                port: 6380
            })
        );
        c.load_text("maxmemory-clients 10%\nmaxmemory 1000")
            .unwrap();
        assert_eq!(
            c.settings().maxmemory_clients.bytes(c.settings().maxmemory),
            100
        );
        c.load_text("unixsocketperm 700\nappendfsync always")
            .unwrap();
        assert_eq!(c.settings().unixsocketperm, 0o700);
        assert_eq!(
            c.settings().appendfsync,
            crate::persistence::aof::Fsync::Always
        );
    }

    #[test]
    fn args_and_file_syntax() {
        let args: Vec<String> = ["--port", "6390", "--save", "", "--loglevel", "warning"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let c = Config::from_args(&args).unwrap();
        assert_eq!(c.get("port"), "6390");
        assert_eq!(c.get("save"), "");
        assert_eq!(c.get("loglevel"), "warning");
        let mut c = Config::default();
        c.load_text("# comment\nsave 900 1 300 10\nproto-max-bulk-len 2mb\n")
            .unwrap();
        assert_eq!(c.get("save"), "900 1 300 10");
        assert_eq!(c.settings().proto_max_bulk_len, 2 * 1024 * 1024);
        assert!(c.load_text("nonsense 1").is_err());
    }

    #[test]
    fn set_errors_are_redis_texts() {
        let mut c = Config::default();
        assert_eq!(
            c.set_many(&[(b"timeout", b"abc")], false).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"
        );
        assert_eq!(
            c.set_many(&[(b"databases", b"3")], false).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"
        );
        assert_eq!(
            c.set_many(&[(b"foo", b"bar")], false).unwrap_err(),
            "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        // All or nothing.
        assert!(c
            .set_many(&[(b"timeout", b"5"), (b"hz", b"abc")], false)
            .is_err());
        assert_eq!(c.get("timeout"), "0");
        // Names are all checked before any value, the first error winning.
        assert_eq!(
            c.set_many(&[(b"hz", b"abc"), (b"databases", b"3")], false).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"
        );
        assert_eq!(
            c.set_many(&[(b"databases", b"3"), (b"foo", b"1")], false).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"
        );
        assert_eq!(
            c.set_many(&[(b"foo", b"1"), (b"databases", b"3")], false)
                .unwrap_err(),
            "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        // A value error names the parameter as Redis spells it.
        assert_eq!(
            c.set_many(&[(b"HZ", b"abc")], false).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'hz') - argument couldn't be parsed into an integer"
        );
        // Protected parameters.
        assert_eq!(
            c.set_many(&[(b"dir", b"/")], true).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"
        );
        // An old name is a parameter of its own: no duplicate, last wins.
        c.set_many(
            &[
                (b"hash-max-ziplist-entries", b"100"),
                (b"hash-max-listpack-entries", b"200"),
            ],
            false,
        )
        .unwrap();
        assert_eq!(c.get("hash-max-listpack-entries"), "200");
    }

    #[test]
    fn values_parse_as_redis() {
        assert_eq!(parse_memory(""), Some(0));
        assert_eq!(parse_memory("1kb"), Some(1024));
        assert_eq!(parse_memory("2K"), Some(2000));
        assert_eq!(parse_memory("-1"), None);
        assert_eq!(parse_memory("+1"), None);
        assert_eq!(parse_memory("1x"), None);
        assert_eq!(parse_memory("99999999999999999999"), Some(u64::MAX));
        let mut c = Config::default();
        for (v, shown) in [
            ("5 ", Some("5 0")),
            ("+5 +1", Some("5 1")),
            ("5 -0", Some("5 0")),
            (
                "99999999999999999999 4294967297",
                Some("9223372036854775807 1"),
            ),
            ("", Some("")),
            ("0 1", None),
            ("5  1", None),
            (" 5 1", None),
            ("5 1 ", None),
            ("5 x", None),
        ] {
            let r = c.set_many(&[(b"save", v.as_bytes())], false);
            match shown {
                Some(s) => {
                    assert!(r.is_ok(), "{v:?}");
                    assert_eq!(c.get("save"), s, "{v:?}");
                }
                None => assert!(r.is_err(), "{v:?}"),
            }
        }
        c.set_many(&[(b"zset-max-listpack-value", b"2k")], false)
            .unwrap();
        assert_eq!(c.get("zset-max-listpack-value"), "2000");
        assert!(c
            .set_many(&[(b"client-output-buffer-limit", b"")], false)
            .is_ok());
        assert!(c
            .set_many(&[(b"client-output-buffer-limit", b"normal  0 0 0")], false)
            .is_err());
    }
    #[test]
    fn redis_7_parameters_and_aliases() {
        let mut c = Config::default();
        // Every new kind, its CONFIG GET form.
        assert_eq!(c.get("oom-score-adj-values"), "0 200 800");
        assert_eq!(c.get("io-threads"), "1");
        assert_eq!(c.get("replicaof"), "");
        assert_eq!(c.get("supervised"), "no");
        assert_eq!(c.get("repl-backlog-size"), "1048576");
        c.set_many(&[(b"shutdown-on-sigterm", b"now SAVE force")], false)
            .unwrap();
        assert_eq!(c.get("shutdown-on-sigterm"), "save now force");
        assert_eq!(
            c.set_many(&[(b"shutdown-on-sigterm", b"save nosave")], false)
                .unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'shutdown-on-sigterm') - shutdown options SAVE and NOSAVE can't be used simultaneously"
        );
        c.set_many(&[(b"shutdown-on-sigterm", b"default")], false)
            .unwrap();
        assert_eq!(c.get("shutdown-on-sigterm"), "default");
        c.set_many(&[(b"oom-score-adj", b"relative")], false)
            .unwrap();
        assert_eq!(c.get("oom-score-adj"), "yes");
        assert!(c
            .set_many(&[(b"oom-score-adj-values", b"0 2001 0")], false)
            .is_err());
        c.set_many(
            &[(b"cluster-link-sendbuf-limit", b"99999999999999999999")],
            false,
        )
        .unwrap();
        assert_eq!(c.get("cluster-link-sendbuf-limit"), u64::MAX.to_string());
        assert!(proc_title_valid("{title} {listen-addr} {server-mode}"));
        assert!(proc_title_valid("x {port}"));
        assert!(!proc_title_valid("{title}"));
        assert!(!proc_title_valid("{nosuch} x"));
        assert!(!proc_title_valid("{title x"));
        assert!(c
            .set_many(&[(b"cluster-announce-hostname", b"a_b")], false)
            .is_err());
        assert!(c.set_many(&[(b"activedefrag", b"yes")], false).is_err());
        // Aliases: both ways, and an alias is a parameter of its own.
        c.set_many(&[(b"slave-priority", b"7")], false).unwrap();
        assert_eq!(c.get("replica-priority"), "7");
        c.set_many(
            &[
                (b"min-slaves-max-lag", b"3"),
                (b"min-replicas-max-lag", b"4"),
            ],
            false,
        )
        .unwrap();
        assert_eq!(c.get("min-slaves-max-lag"), "4");
        assert_eq!(
            c.set_many(&[(b"slave-read-only", b"no"), (b"slave-read-only", b"no")], false)
                .unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'slave-read-only') - duplicate parameter"
        );
        assert_eq!(
            c.set_many(&[(b"slaveof", b"no one")], false).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'slaveof') - can't set immutable config"
        );
        // replicaof from a file, under either name.
        c.load_text("slaveof 10.0.0.1 6380\n").unwrap();
        assert_eq!(c.get("replicaof"), "10.0.0.1 6380");
        c.load_text("replicaof no one\n").unwrap();
        assert_eq!(c.get("replicaof"), "");
        assert!(c.load_text("replicaof host 99999\n").is_err());
        c.load_text("daemonize yes\n").unwrap();
        assert_eq!(c.get("daemonize"), "yes");
        // CONFIG GET of several patterns: each parameter once.
        let got = c.matching(&[b"repl-ping-*", b"repl-ping-replica-period"]);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["repl-ping-replica-period", "repl-ping-slave-period"]
        );
    }

    #[test]
    fn rewrite_state_as_redis() {
        let mut st = Rewrite::read(
            "# c\n  port 1  \nslave-read-only no\nport 2\n\n\nbogus x\n\"unbalanced\n",
        );
        st.line("port", "port 3".into(), false);
        st.line("replica-read-only", "replica-read-only yes".into(), false);
        st.line("timeout", "timeout 0".into(), false);
        st.line("hz", "hz 20".into(), true);
        assert_eq!(
            st.content(),
            "# c\nport 3\nreplica-read-only yes\n\n# ??? bogus x\n# ??? \"unbalanced\n\n# Generated by CONFIG REWRITE\nhz 20\n"
        );
        assert_eq!(format_memory(3 * 1024 * 1024), "3mb");
        assert_eq!(format_memory(1000), "1000");
        assert_eq!(format_memory(0), "0");
        assert_eq!(repr("a \"b\"\n\u{1}"), "\"a \\\"b\\\"\\n\\x01\"");
    }
}
