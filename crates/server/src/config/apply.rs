//! What changing a parameter does to the running server, beyond the new
//! value in `Settings` (Redis's per-parameter `apply`). Each function is
//! named in the parameter table beside the parameters it serves; the
//! server runs every one at start and, after a CONFIG SET, those of the
//! parameters that changed (a function shared by several parameters runs
//! once).
//!
//! Most copy a value into the place its hot path reads it without a lock
//! (an atomic, a module's own cell). The changes that can fail or need the
//! running command (TLS, `requirepass`, `appendonly`, lowering
//! `maxmemory`) are CONFIG SET's own (`command::server::apply_config`).

use std::sync::atomic::Ordering::Relaxed;

use super::{BufferClass, Settings};
use crate::server::Server;

pub fn appendfsync(server: &Server, s: &Settings) {
    server.aof.set_fsync(s.appendfsync);
}

pub fn aof_timestamps(server: &Server, s: &Settings) {
    server.aof.set_timestamps(s.aof_timestamp_enabled);
}

pub fn proto_max_bulk_len(server: &Server, s: &Settings) {
    server
        .proto_max_bulk_len
        .store(s.proto_max_bulk_len, Relaxed);
}

pub fn hll_sparse_max_bytes(server: &Server, s: &Settings) {
    server
        .hll_sparse_max_bytes
        .store(s.hll_sparse_max_bytes, Relaxed);
}

pub fn timeout(server: &Server, s: &Settings) {
    server.timeout_secs.store(s.timeout, Relaxed);
}

/// The query buffer limit and the three output buffer classes.
pub fn client_buffers(server: &Server, s: &Settings) {
    crate::net::connection::configure(s);
    server.repl.set_limits(s.buffer_limit(BufferClass::Replica));
    server
        .pubsub
        .set_limit(s.buffer_limit(BufferClass::Pubsub).into());
}

pub fn hz(server: &Server, s: &Settings) {
    if server.hz.swap(s.hz, Relaxed) != s.hz {
        server.cron_wake.notify_one();
    }
}

pub fn dynamic_hz(server: &Server, s: &Settings) {
    server.dynamic_hz.store(s.dynamic_hz, Relaxed);
}

pub fn latency_tracking(server: &Server, s: &Settings) {
    server
        .stats
        .latency_tracking
        .store(s.latency_tracking, Relaxed);
}

/// The latency monitor's threshold and the slow log (which feeds it).
pub fn slow_logs(server: &Server, s: &Settings) {
    server.latency.configure(s.latency_monitor_threshold);
    server.slowlog.configure(
        s.slowlog_log_slower_than,
        s.slowlog_max_len,
        server.latency.threshold_ms(),
    );
}

pub fn acl_pubsub_default(server: &Server, s: &Settings) {
    server
        .acl
        .pubsub_all
        .store(s.acl_pubsub_allchannels, Relaxed);
}

pub fn acllog_max_len(server: &Server, s: &Settings) {
    server.acl.log.lock().trim(s.acllog_max_len);
}

pub fn idle_poll_us(_: &Server, s: &Settings) {
    crate::net::idle_poll::set_budget_us(s.idle_poll_us);
    crate::net::idle_poll::set_judged(s.idle_poll_goal == crate::config::IdlePollGoal::Cpu);
}

pub fn repl_backlog_size(server: &Server, s: &Settings) {
    server.repl.set_backlog_size(s.repl_backlog_size.max(1));
}

pub fn repl_backlog_ttl(server: &Server, s: &Settings) {
    server.repl.backlog_ttl.store(s.repl_backlog_ttl, Relaxed);
}

/// min-replicas-to-write and min-replicas-max-lag: the count of good
/// replicas is taken again under the new rule.
pub fn min_replicas(server: &Server, s: &Settings) {
    server
        .repl
        .min_replicas
        .store(s.min_replicas_to_write, Relaxed);
    server
        .repl
        .min_replicas_max_lag
        .store(s.min_replicas_max_lag, Relaxed);
    server.repl.refresh_good_replicas(crate::command::unix_ms());
}

pub fn replica_read_only(server: &Server, s: &Settings) {
    server.repl.read_only.store(s.replica_read_only, Relaxed);
}

pub fn replica_serve_stale_data(server: &Server, s: &Settings) {
    server
        .repl
        .serve_stale
        .store(s.replica_serve_stale_data, Relaxed);
}

pub fn notify_keyspace_events(server: &Server, s: &Settings) {
    server.notify_flags.store(s.notify_keyspace_events, Relaxed);
}

pub fn tracking_table_max_keys(server: &Server, s: &Settings) {
    server
        .tracking
        .max_keys
        .store(s.tracking_table_max_keys, Relaxed);
}

/// The encoding thresholds (`Server::encoding_limits`).
pub fn encoding_limits(server: &Server, s: &Settings) {
    let limits = [
        s.hash_max_listpack_entries,
        s.hash_max_listpack_value,
        s.set_max_intset_entries,
        s.zset_max_listpack_entries,
        s.zset_max_listpack_value,
        s.list_max_listpack_size,
        s.stream_node_max_bytes,
        s.stream_node_max_entries,
        s.set_max_listpack_entries,
        s.set_max_listpack_value,
    ];
    for (cell, value) in server.limits.iter().zip(limits) {
        cell.store(value, Relaxed);
    }
}

/// maxmemory and what is measured against it: the policy, its sampling,
/// and the clients' share (a percentage of maxmemory).
pub fn tiering_max_disk(_server: &Server, s: &Settings) {
    if let Some(tier) = crate::tier::active() {
        tier.max_disk.store(s.tiering_max_disk, Relaxed);
    }
}

pub fn memory(server: &Server, s: &Settings) {
    server.memory.set(
        s.maxmemory,
        s.maxmemory_policy,
        s.maxmemory_samples,
        s.maxmemory_eviction_tenacity,
    );
    server
        .memory
        .clients
        .store(s.maxmemory_clients.bytes(s.maxmemory), Relaxed);
}

pub fn replica_ignore_maxmemory(server: &Server, s: &Settings) {
    server
        .memory
        .ignore_on_replica
        .store(s.replica_ignore_maxmemory, Relaxed);
}

pub fn lfu(_: &Server, s: &Settings) {
    crate::storage::access::configure_lfu_params(s.lfu_log_factor, s.lfu_decay_time);
}

/// The five lazyfree-lazy-* switches.
pub fn lazyfree(_: &Server, s: &Settings) {
    use crate::memory::lazyfree as lf;
    for (flag, on) in [
        (&lf::LAZY_EVICTION, s.lazyfree_lazy_eviction),
        (&lf::LAZY_EXPIRE, s.lazyfree_lazy_expire),
        (&lf::LAZY_SERVER_DEL, s.lazyfree_lazy_server_del),
        (&lf::LAZY_USER_DEL, s.lazyfree_lazy_user_del),
        (&lf::LAZY_USER_FLUSH, s.lazyfree_lazy_user_flush),
    ] {
        flag.store(on, Relaxed);
    }
}

pub fn locale_collate(_: &Server, s: &Settings) {
    crate::command::collate::set(&s.locale_collate);
}

pub fn cluster_slot_stats(server: &Server, s: &Settings) {
    server
        .cluster
        .slot_stats
        .set_enabled(s.cluster_slot_stats_enabled);
}
