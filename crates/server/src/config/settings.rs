//! The typed view of the configuration: one field per parameter the
//! server reads, parsed from the table's normalised strings in one place.
//!
//! The server reads its configuration only through `Settings` (the string
//! table is for CONFIG GET/SET/REWRITE, which speak names), so a misspelt
//! parameter is a compile error rather than an empty value. A field's type
//! says what the value means (a port, a path that may be unset, an enum),
//! and its parser is the type's `FromValue`, kept beside the type.
//!
//! `Config` rebuilds its `Settings` whenever a value changes; a reader
//! holds the config lock while it reads. Values on hot paths are copied
//! from here into the atomics those paths read by the parameters' apply
//! functions (apply.rs), which run for the parameters that changed.

use std::path::PathBuf;

use super::{BufferClass, BufferLimit};

/// How a field is parsed from its normalised string (what CONFIG GET
/// shows). The table has already checked the value, so parsing cannot
/// fail; a value out of a type's range saturates.
pub trait FromValue: Sized {
    fn from_value(v: &str) -> Self;
}

impl FromValue for bool {
    fn from_value(v: &str) -> bool {
        v == "yes"
    }
}

impl FromValue for String {
    fn from_value(v: &str) -> String {
        v.to_string()
    }
}

impl FromValue for PathBuf {
    fn from_value(v: &str) -> PathBuf {
        PathBuf::from(v)
    }
}

/// An empty string means "not set" (pidfile, aclfile, unixsocket, ...).
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &str) -> Option<T> {
        (!v.is_empty()).then(|| T::from_value(v))
    }
}

/// Space-separated words (bind).
impl FromValue for Vec<String> {
    fn from_value(v: &str) -> Vec<String> {
        v.split_whitespace().map(str::to_string).collect()
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: &str) -> $t {
                let n: i128 = v.parse().unwrap_or(0);
                n.clamp(<$t>::MIN as i128, <$t>::MAX as i128) as $t
            }
        }
    )*};
}
from_int!(u16, u32, u64, usize, i64);

/// `save`: (seconds, changes) pairs; empty when snapshots are off.
fn save_points(v: &str) -> Vec<(u64, u64)> {
    let n: Vec<u64> = v
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    n.chunks_exact(2).map(|p| (p[0], p[1])).collect()
}

fn octal(v: &str) -> u32 {
    u32::from_str_radix(v, 8).unwrap_or(0)
}

/// `cluster-etcd-endpoints`: comma- or space-separated.
fn endpoints(v: &str) -> Vec<String> {
    v.split([',', ' '])
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

/// `client-output-buffer-limit`, one entry per class in `BufferClass`'s
/// order (its value is normalised when set: `normal`, `slave` and
/// `pubsub`, in bytes).
fn buffer_limits(v: &str) -> [BufferLimit; 3] {
    let words: Vec<&str> = v.split_whitespace().collect();
    let class = |name: &str| {
        words
            .chunks(4)
            .find(|c| c.len() == 4 && c[0] == name)
            .map(|c| {
                let n = |s: &str| s.parse().unwrap_or(0);
                BufferLimit {
                    hard: n(c[1]),
                    soft: n(c[2]),
                    soft_secs: n(c[3]),
                }
            })
            .unwrap_or_default()
    };
    [class("normal"), class("slave"), class("pubsub")]
}

/// `shutdown-on-sigint` / `shutdown-on-sigterm`'s flags.
fn words(v: &str) -> Vec<String> {
    Vec::<String>::from_value(v)
}

/// `loglevel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Debug,
    Verbose,
    Notice,
    Warning,
    /// Redis 7.2's: no log at all.
    Nothing,
}

impl FromValue for LogLevel {
    fn from_value(v: &str) -> LogLevel {
        match v {
            "debug" => LogLevel::Debug,
            "verbose" => LogLevel::Verbose,
            "warning" => LogLevel::Warning,
            "nothing" => LogLevel::Nothing,
            _ => LogLevel::Notice,
        }
    }
}

/// `enable-debug-command`, `enable-module-command`: who may run them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposure {
    No,
    Yes,
    /// Clients on a loopback address or the Unix socket.
    Local,
}

impl FromValue for Exposure {
    fn from_value(v: &str) -> Exposure {
        match v {
            "yes" => Exposure::Yes,
            "local" => Exposure::Local,
            _ => Exposure::No,
        }
    }
}

/// `tls-auth-clients`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsAuthClients {
    No,
    Yes,
    Optional,
}

impl FromValue for TlsAuthClients {
    fn from_value(v: &str) -> TlsAuthClients {
        match v {
            "no" => TlsAuthClients::No,
            "optional" => TlsAuthClients::Optional,
            _ => TlsAuthClients::Yes,
        }
    }
}

/// `repl-diskless-load`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisklessLoad {
    Disabled,
    OnEmptyDb,
    Swapdb,
}

impl FromValue for DisklessLoad {
    fn from_value(v: &str) -> DisklessLoad {
        match v {
            "on-empty-db" => DisklessLoad::OnEmptyDb,
            "swapdb" => DisklessLoad::Swapdb,
            _ => DisklessLoad::Disabled,
        }
    }
}

/// `idle-poll-goal` (keel's own): when a busy worker polls before
/// sleeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdlePollGoal {
    /// Only while polling costs less CPU per request than sleeping, by
    /// the worker's own trials (`net::idle_poll`).
    Cpu,
    /// Whenever the worker is busy: more CPU per request for a higher rate
    /// where the clients pay for waking a sleeping worker.
    Rate,
}

impl FromValue for IdlePollGoal {
    fn from_value(v: &str) -> IdlePollGoal {
        match v {
            "rate" => IdlePollGoal::Rate,
            _ => IdlePollGoal::Cpu,
        }
    }
}

/// `cluster-preferred-endpoint-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointType {
    Ip,
    Hostname,
    UnknownEndpoint,
}

impl FromValue for EndpointType {
    fn from_value(v: &str) -> EndpointType {
        match v {
            "hostname" => EndpointType::Hostname,
            "unknown-endpoint" => EndpointType::UnknownEndpoint,
            _ => EndpointType::Ip,
        }
    }
}

/// `maxmemory-clients`: bytes, or a percentage of `maxmemory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientsMemory {
    Bytes(u64),
    Percent(u64),
}

impl ClientsMemory {
    /// The limit in bytes given `maxmemory` (0: none).
    pub fn bytes(self, maxmemory: u64) -> u64 {
        match self {
            ClientsMemory::Bytes(b) => b,
            ClientsMemory::Percent(p) => maxmemory.saturating_mul(p) / 100,
        }
    }
}

impl FromValue for ClientsMemory {
    fn from_value(v: &str) -> ClientsMemory {
        match v.strip_suffix('%') {
            Some(p) => ClientsMemory::Percent(p.parse().unwrap_or(0)),
            None => ClientsMemory::Bytes(v.parse().unwrap_or(0)),
        }
    }
}

/// `replicaof`: the primary's host and port, or none (`no one`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaOf {
    pub host: String,
    pub port: u16,
}

impl FromValue for Option<ReplicaOf> {
    fn from_value(v: &str) -> Option<ReplicaOf> {
        let (host, port) = v.rsplit_once(' ')?;
        Some(ReplicaOf {
            host: host.to_string(),
            port: port.parse().ok()?,
        })
    }
}

/// Picks a field's parser: the type's `FromValue`, or the function named.
macro_rules! parse_value {
    ($v:expr, $ty:ty) => {
        <$ty as FromValue>::from_value($v)
    };
    ($v:expr, $ty:ty, $parse:path) => {
        $parse($v)
    };
}

/// Declares `Settings`: each field with the parameter it is read from.
macro_rules! settings {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty = $name:literal $(=> $parse:path)? ;)*) => {
        /// Every parameter the server reads, typed. See the module's doc.
        #[derive(Clone, Debug)]
        pub struct Settings {
            $( $(#[$doc])* pub $field: $ty, )*
        }

        impl Settings {
            /// Parses every field; `value` gives a parameter's normalised
            /// string.
            pub(super) fn read<'c>(value: impl Fn(&'static str) -> &'c str) -> Settings {
                Settings {
                    $( $field: parse_value!(value($name), $ty $(, $parse)?), )*
                }
            }

            /// The parameters the fields are read from (a test checks
            /// each is in the table).
            #[cfg(test)]
            pub(super) const NAMES: &'static [&'static str] = &[$($name),*];
        }
    };
}

settings! {
    // Listening and connections.
    port: u16 = "port";
    /// Addresses to listen on; a leading `-` marks one that may be absent.
    bind: Vec<String> = "bind";
    unixsocket: Option<String> = "unixsocket";
    unixsocketperm: u32 = "unixsocketperm" => octal;
    unixsocketgroup: Option<String> = "unixsocketgroup";
    availability_zone: String = "availability-zone";
    cluster_slot_stats_enabled: bool = "cluster-slot-stats-enabled";
    locale_collate: String = "locale-collate";
    tcp_backlog: u32 = "tcp-backlog";
    tcp_keepalive: u64 = "tcp-keepalive";
    maxclients: usize = "maxclients";
    /// Seconds a client may stay idle (0: forever).
    timeout: u64 = "timeout";
    protected_mode: bool = "protected-mode";
    proto_max_bulk_len: usize = "proto-max-bulk-len";
    client_query_buffer_limit: usize = "client-query-buffer-limit";
    /// Per `BufferClass` (read with `buffer_limit`).
    client_output_buffer_limit: [BufferLimit; 3] = "client-output-buffer-limit" => buffer_limits;

    // Process.
    databases: usize = "databases";
    threads: usize = "threads";
    active_threads_min: usize = "active-threads-min";
    idle_poll_us: u64 = "idle-poll-us";
    idle_poll_goal: IdlePollGoal = "idle-poll-goal";
    hz: u64 = "hz";
    dynamic_hz: bool = "dynamic-hz";
    daemonize: bool = "daemonize";
    pidfile: Option<PathBuf> = "pidfile";
    /// The working directory, where every file below is kept.
    dir: PathBuf = "dir";
    logfile: Option<PathBuf> = "logfile";
    loglevel: LogLevel = "loglevel";
    shutdown_on_sigint: Vec<String> = "shutdown-on-sigint" => words;
    shutdown_on_sigterm: Vec<String> = "shutdown-on-sigterm" => words;
    enable_debug_command: Exposure = "enable-debug-command";
    enable_module_command: Exposure = "enable-module-command";
    busy_reply_threshold: u64 = "busy-reply-threshold";

    // TLS.
    tls_port: u16 = "tls-port";
    tls_cert_file: String = "tls-cert-file";
    tls_key_file: String = "tls-key-file";
    tls_key_file_pass: String = "tls-key-file-pass";
    tls_client_cert_file: String = "tls-client-cert-file";
    tls_client_key_file: String = "tls-client-key-file";
    tls_client_key_file_pass: String = "tls-client-key-file-pass";
    tls_ca_cert_file: String = "tls-ca-cert-file";
    tls_ca_cert_dir: String = "tls-ca-cert-dir";
    tls_auth_clients: TlsAuthClients = "tls-auth-clients";
    tls_protocols: String = "tls-protocols";
    tls_ciphers: String = "tls-ciphers";
    tls_ciphersuites: String = "tls-ciphersuites";
    tls_prefer_server_ciphers: bool = "tls-prefer-server-ciphers";
    tls_session_caching: bool = "tls-session-caching";
    tls_session_cache_size: usize = "tls-session-cache-size";
    tls_replication: bool = "tls-replication";

    // Security.
    requirepass: String = "requirepass";
    aclfile: Option<String> = "aclfile";
    acllog_max_len: usize = "acllog-max-len";
    /// `acl-pubsub-default allchannels`.
    acl_pubsub_allchannels: bool = "acl-pubsub-default" => allchannels;

    // Persistence.
    /// (seconds, changes) pairs; empty: no automatic snapshots.
    save: Vec<(u64, u64)> = "save" => save_points;
    dbfilename: String = "dbfilename";
    rdbcompression: bool = "rdbcompression";
    rdbchecksum: bool = "rdbchecksum";
    rdb_key_save_delay: i64 = "rdb-key-save-delay";
    key_load_delay: i64 = "key-load-delay";
    stop_writes_on_bgsave_error: bool = "stop-writes-on-bgsave-error";
    appendonly: bool = "appendonly";
    appendfsync: crate::persistence::aof::Fsync = "appendfsync";
    appendfilename: String = "appendfilename";
    appenddirname: String = "appenddirname";
    aof_load_truncated: bool = "aof-load-truncated";
    aof_use_rdb_preamble: bool = "aof-use-rdb-preamble";
    aof_timestamp_enabled: bool = "aof-timestamp-enabled";
    aof_rewrite_incremental_fsync: bool = "aof-rewrite-incremental-fsync";
    auto_aof_rewrite_percentage: u64 = "auto-aof-rewrite-percentage";
    auto_aof_rewrite_min_size: u64 = "auto-aof-rewrite-min-size";

    redis_version: String = "redis-version";

    // Memory and eviction.
    maxmemory: u64 = "maxmemory";
    tiering_dir: Option<PathBuf> = "tiering-dir";
    tiering_max_disk: u64 = "tiering-max-disk";
    maxmemory_policy: crate::memory::Policy = "maxmemory-policy";
    maxmemory_samples: u32 = "maxmemory-samples";
    maxmemory_eviction_tenacity: u32 = "maxmemory-eviction-tenacity";
    maxmemory_clients: ClientsMemory = "maxmemory-clients";
    lfu_log_factor: u32 = "lfu-log-factor";
    lfu_decay_time: u32 = "lfu-decay-time";
    lazyfree_lazy_eviction: bool = "lazyfree-lazy-eviction";
    lazyfree_lazy_expire: bool = "lazyfree-lazy-expire";
    lazyfree_lazy_server_del: bool = "lazyfree-lazy-server-del";
    lazyfree_lazy_user_del: bool = "lazyfree-lazy-user-del";
    lazyfree_lazy_user_flush: bool = "lazyfree-lazy-user-flush";

    // Encodings.
    hash_max_listpack_entries: i64 = "hash-max-listpack-entries";
    hash_max_listpack_value: i64 = "hash-max-listpack-value";
    set_max_intset_entries: i64 = "set-max-intset-entries";
    set_max_listpack_entries: i64 = "set-max-listpack-entries";
    set_max_listpack_value: i64 = "set-max-listpack-value";
    zset_max_listpack_entries: i64 = "zset-max-listpack-entries";
    zset_max_listpack_value: i64 = "zset-max-listpack-value";
    list_max_listpack_size: i64 = "list-max-listpack-size";
    stream_node_max_bytes: i64 = "stream-node-max-bytes";
    stream_node_max_entries: i64 = "stream-node-max-entries";
    hll_sparse_max_bytes: usize = "hll-sparse-max-bytes";

    // Events and observability.
    /// The classes selected, as `clients::notify` flags.
    notify_keyspace_events: u32 = "notify-keyspace-events" => notify_flags;
    tracking_table_max_keys: usize = "tracking-table-max-keys";
    slowlog_log_slower_than: i64 = "slowlog-log-slower-than";
    slowlog_max_len: i64 = "slowlog-max-len";
    latency_monitor_threshold: i64 = "latency-monitor-threshold";
    latency_tracking: bool = "latency-tracking";
    latency_tracking_info_percentiles: Vec<f64> = "latency-tracking-info-percentiles" => super::percentiles;
    metrics_port: u16 = "metrics-port";
    metrics_bind: String = "metrics-bind";

    // Replication.
    replicaof: Option<ReplicaOf> = "replicaof";
    masterauth: String = "masterauth";
    masteruser: String = "masteruser";
    replica_serve_stale_data: bool = "replica-serve-stale-data";
    replica_read_only: bool = "replica-read-only";
    replica_ignore_maxmemory: bool = "replica-ignore-maxmemory";
    replica_announced: bool = "replica-announced";
    replica_announce_ip: String = "replica-announce-ip";
    replica_announce_port: u16 = "replica-announce-port";
    replica_priority: u64 = "replica-priority";
    repl_diskless_sync: bool = "repl-diskless-sync";
    repl_diskless_sync_delay: u64 = "repl-diskless-sync-delay";
    repl_diskless_sync_max_replicas: usize = "repl-diskless-sync-max-replicas";
    repl_diskless_load: DisklessLoad = "repl-diskless-load";
    repl_backlog_size: usize = "repl-backlog-size";
    repl_backlog_ttl: u64 = "repl-backlog-ttl";
    repl_timeout: u64 = "repl-timeout";
    repl_ping_replica_period: u64 = "repl-ping-replica-period";
    min_replicas_to_write: usize = "min-replicas-to-write";
    min_replicas_max_lag: u64 = "min-replicas-max-lag";

    // Cluster.
    cluster_enabled: bool = "cluster-enabled";
    cluster_etcd_endpoints: Vec<String> = "cluster-etcd-endpoints" => endpoints;
    cluster_name: String = "cluster-name";
    cluster_lease_ttl: u64 = "cluster-lease-ttl";
    cluster_config_file: String = "cluster-config-file";
    cluster_port: u16 = "cluster-port";
    cluster_node_timeout: u64 = "cluster-node-timeout";
    cluster_announce_ip: String = "cluster-announce-ip";
    cluster_announce_hostname: String = "cluster-announce-hostname";
    cluster_announce_port: u16 = "cluster-announce-port";
    cluster_announce_bus_port: u16 = "cluster-announce-bus-port";
    cluster_preferred_endpoint_type: EndpointType = "cluster-preferred-endpoint-type";
    cluster_require_full_coverage: bool = "cluster-require-full-coverage";
    cluster_replica_no_failover: bool = "cluster-replica-no-failover";
    cluster_replica_validity_factor: u64 = "cluster-replica-validity-factor";
    cluster_allow_reads_when_down: bool = "cluster-allow-reads-when-down";
    cluster_allow_pubsubshard_when_down: bool = "cluster-allow-pubsubshard-when-down";
}

fn notify_flags(v: &str) -> u32 {
    crate::clients::notify::parse(v).unwrap_or(0)
}

fn allchannels(v: &str) -> bool {
    v == "allchannels"
}

impl Settings {
    /// `client-output-buffer-limit` for `class`.
    pub fn buffer_limit(&self, class: BufferClass) -> BufferLimit {
        self.client_output_buffer_limit[class as usize]
    }
}
