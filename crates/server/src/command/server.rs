//! Server commands: INFO, CONFIG, COMMAND, TIME, LASTSAVE, SHUTDOWN, DEBUG.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use resp::encode;

use super::args::{self, is};
use super::error::{self, CmdError, CmdResult};
use super::table::{flag, Command, Registry};
use super::{Ctx, Unresolved};
use crate::glob;

pub(super) fn register(r: &mut Registry) {
    r.add_flagged("info", info, flag::EVERY_SHARD);
    r.add("config|get", config_get);
    r.add_flagged("config|set", config_set, flag::EVERY_SHARD);
    r.add_flagged("config|resetstat", config_resetstat, flag::EVERY_SHARD);
    r.add("config|rewrite", config_rewrite);
    r.add("config|help", config_help);
    r.add("command", command);
    r.add("command|count", command_count);
    r.add("command|info", command_info);
    r.add("command|docs", command_docs);
    r.add("command|list", command_list);
    r.add("command|getkeys", command_getkeys);
    r.add("command|getkeysandflags", command_getkeysandflags);
    r.add("command|help", command_help);
    r.add("time", time);
    r.add_flagged("bgrewriteaof", bgrewriteaof, flag::EVERY_SHARD);
    r.add("lastsave", lastsave);
    r.add_flagged("save", save, flag::EVERY_SHARD);
    r.add_flagged("bgsave", bgsave, flag::EVERY_SHARD);
    r.add("shutdown", shutdown);
    // It reads nothing of the connection (and must reach a server whose
    // every worker runs a script).
    r.while_busy("shutdown", crate::command::table::WhileBusy::Run);
    r.add_flagged("debug", debug, flag::EVERY_SHARD);
    r.add("module|list", module_list);
    r.add("module|load", module_load);
    r.add("module|loadex", module_load);
    r.add("module|unload", module_unload);
    r.add("module|help", module_help);
}

/// (user, system) CPU seconds of the process and of this thread.
fn cpu_times() -> ((f64, f64), (f64, f64)) {
    fn usage(who: libc::c_int) -> (f64, f64) {
        // SAFETY: getrusage fills the zeroed struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid rusage for getrusage to fill.
        unsafe { libc::getrusage(who, &mut ru) };
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        (t(ru.ru_utime), t(ru.ru_stime))
    }
    (usage(libc::RUSAGE_SELF), usage(libc::RUSAGE_THREAD))
}

const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];
const ALL_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
    "keel",
    "tiering",
];

/// The text of INFO for the given section names (lower case).
pub fn info_text(cx: &Ctx, wanted: &[String]) -> String {
    let mut sections: Vec<&str> = Vec::new();
    let add = |s: &mut Vec<&str>, list: &[&'static str]| {
        for x in list {
            if !s.contains(x) {
                s.push(x);
            }
        }
    };
    if wanted.is_empty() {
        add(&mut sections, DEFAULT_SECTIONS);
    }
    for w in wanted {
        match w.as_str() {
            "all" | "everything" => add(&mut sections, ALL_SECTIONS),
            "default" => add(&mut sections, DEFAULT_SECTIONS),
            other => {
                if let Some(s) = ALL_SECTIONS.iter().find(|s| **s == other) {
                    add(&mut sections, &[s]);
                }
            }
        }
    }
    let server = cx.server;
    let cfg = server.settings();
    let config_file = server.config.read().file.clone();
    let now_ms = super::unix_ms();
    let uptime = server.started.elapsed().as_secs();
    let (kstats, dbs) = server.keyspace.stats(&cx.view);
    let totals = server.stats.command_totals(server.commands.len());
    let total_cmds: u64 = totals.iter().map(|t| t.calls).sum();
    let net = server.stats.totals();
    let (ops_per_sec, input_kbps, output_kbps) = server.stats.instantaneous();
    let mut o = String::new();
    // Sections appear in Redis's order, whatever order they were asked in.
    for name in ALL_SECTIONS.iter().filter(|s| sections.contains(s)) {
        if !o.is_empty() {
            o.push_str("\r\n");
        }
        match *name {
            "server" => {
                let _ = write!(
                    o,
                    "# Server\r\nredis_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nlru_clock:{}\r\nexecutable:{}\r\nconfig_file:{}\r\nio_threads_active:0\r\n{}keel_version:{}\r\nkeel_threads:{}\r\nkeel_threads_active:{}\r\n",
                    crate::redis_version(),
                    std::env::consts::OS,
                    std::env::consts::ARCH,
                    std::process::id(),
                    server.run_id,
                    server.tcp_port.load(Relaxed),
                    now_ms * 1000,
                    uptime,
                    uptime / 86400,
                    crate::server::cron_hz(server),
                    cfg.hz,
                    crate::storage::access::lru_clock(now_ms),
                    std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
                    config_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                    listeners_and_zone(server, &cfg),
                    crate::KEEL_VERSION,
                    server.threads,
                    server.workers.active.load(Relaxed),
                );
            }
            "clients" => {
                let (recent_in, recent_out) = server.stats.recent_max_buffers();
                let _ = write!(
                    o,
                    "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:{}\r\nclient_recent_max_output_buffer:{}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:0\r\n",
                    server.clients.len(),
                    cfg.maxclients,
                    recent_in,
                    recent_out,
                    server.blocking.all_blocked(),
                    server.tracking.clients(),
                );
            }
            "memory" => super::memory::info(server, &cx.view, &mut o),
            "persistence" => {
                let snaps = &server.snapshots;
                let _ = write!(
                    o,
                    "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:{}\r\ncurrent_save_keys_total:{}\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\naof_enabled:{}\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:{}\r\naof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_rewrites_consecutive_failures:{}\r\naof_last_write_status:{}\r\naof_last_cow_size:0\r\naof_fsyncs:{}\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
                    snaps.keys_processed.load(Relaxed) * snaps.in_progress() as u64,
                    snaps.keys_total.load(Relaxed) * snaps.in_progress() as u64,
                    server.dirty.load(Relaxed),
                    snaps.in_progress() as u8,
                    server.lastsave.load(Relaxed),
                    if snaps.last_ok.load(Relaxed) { "ok" } else { "err" },
                    snaps.last_secs.load(Relaxed),
                    snaps.current_secs(),
                    snaps.saves.load(Relaxed),
                    snaps.loaded_expired.load(Relaxed),
                    snaps.loaded_keys.load(Relaxed),
                    server.aof.enabled() as u8,
                    server.aof.rewriting() as u8,
                    if server.aof.rewrites.load(Relaxed) > 0 { server.aof.last_rewrite_secs.load(Relaxed) as i64 } else { -1 },
                    if server.aof.rewrite_failures.load(Relaxed) == 0 { "ok" } else { "err" },
                    server.aof.rewrites.load(Relaxed),
                    server.aof.rewrite_failures.load(Relaxed),
                    if server.aof.write_ok() { "ok" } else { "err" },
                    server.aof.fsyncs.load(Relaxed),
                );
                if server.aof.enabled() {
                    // keel never postpones a write for a running fsync
                    // (its everysec fsync runs outside the log's lock), so
                    // aof_delayed_fsync stays 0; a rewrite never waits for
                    // a snapshot (no fork), so none is pending.
                    let _ = write!(
                        o,
                        "aof_current_size:{}\r\naof_base_size:{}\r\naof_pending_rewrite:0\r\naof_buffer_length:{}\r\naof_pending_bio_fsync:{}\r\naof_delayed_fsync:0\r\n",
                        server.aof.size_on_disk(),
                        server.aof_base_size.load(Relaxed),
                        server.aof.buffered(),
                        server.aof.pending_fsyncs(),
                    );
                }
            }
            "stats" => {
                let tracking = server.tracking.totals();
                let _ = write!(
                    o,
                    "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ntotal_net_repl_input_bytes:{}\r\ntotal_net_repl_output_bytes:{}\r\ninstantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\ninstantaneous_input_repl_kbps:0.00\r\ninstantaneous_output_repl_kbps:0.00\r\nrejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\nexpired_keys:{}\r\nexpired_stale_perc:{}.00\r\nexpired_time_cap_reached_count:{}\r\nexpire_cycle_cpu_milliseconds:{}\r\nevicted_keys:{}\r\nevicted_clients:{}\r\ntotal_eviction_exceeded_time:{}\r\ncurrent_eviction_exceeded_time:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:0\r\npubsub_patterns:0\r\npubsubshard_channels:0\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:0\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\nunexpected_error_replies:0\r\ntotal_error_replies:{}\r\ndump_payload_sanitizations:0\r\ntotal_reads_processed:{}\r\ntotal_writes_processed:{}\r\nio_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\nreply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n",
                    server.stats.connections_received.load(Relaxed),
                    total_cmds,
                    ops_per_sec,
                    net.net_input_bytes,
                    net.net_output_bytes,
                    server.repl.net_in.load(Relaxed),
                    server.repl.net_out.load(Relaxed),
                    input_kbps,
                    output_kbps,
                    server.stats.rejected_connections.load(Relaxed),
                    server.repl.sync_full.load(Relaxed),
                    server.repl.sync_partial_ok.load(Relaxed),
                    server.repl.sync_partial_err.load(Relaxed),
                    kstats.expired,
                    server.expired_stale_perc.load(Relaxed),
                    server.expire_cycle.time_cap_reached.load(Relaxed),
                    server.expire_cycle.cpu_us.load(Relaxed) / 1000,
                    server.memory.evicted_keys.load(Relaxed),
                    server.memory.evicted_clients.load(Relaxed),
                    server.memory.exceeded_us.load(Relaxed) / 1000,
                    kstats.hits,
                    kstats.misses,
                    tracking.0,
                    tracking.1,
                    tracking.2,
                    net.error_replies,
                    net.reads,
                    net.writes,
                );
                if crate::redis_version_num() >= 0x0007_0400 {
                    if let Some(at) = o.rfind("expired_keys:") {
                        let line = format!(
                            "expired_subkeys:{}\r\n",
                            server.expired_subkeys.load(Relaxed)
                        );
                        o.insert_str(at, &line);
                    }
                }
            }
            "replication" => {
                let _ = write!(o, "{}", crate::replication::info::section(server),);
            }
            "cpu" => {
                let ((u, s), (tu, ts)) = cpu_times();
                let _ = write!(
                    o,
                    "# CPU\r\nused_cpu_sys:{s:.6}\r\nused_cpu_user:{u:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\nused_cpu_sys_main_thread:{ts:.6}\r\nused_cpu_user_main_thread:{tu:.6}\r\n"
                );
            }
            "modules" => o.push_str("# Modules\r\n"),
            "errorstats" => {
                o.push_str("# Errorstats\r\n");
                for (code, count) in server.stats.errors() {
                    let _ = write!(
                        o,
                        "errorstat_{}:count={count}\r\n",
                        String::from_utf8_lossy(&code)
                    );
                }
            }
            "latencystats" => latencystats(server, &cfg, &mut o),
            "keel" => keel_section(server, &cx.view, &mut o),
            "tiering" => {
                o.push_str("# Tiering\r\n");
                crate::tier::info(&mut o, &kstats);
            }
            "cluster" => {
                let on = u8::from(cx.server.cluster.enabled());
                let _ = write!(o, "# Cluster\r\ncluster_enabled:{on}\r\n");
            }
            "commandstats" => {
                o.push_str("# Commandstats\r\n");
                for (cmd, t) in server.commands.all().iter().zip(&totals) {
                    if t.calls == 0 && t.failed == 0 && t.rejected == 0 {
                        continue;
                    }
                    let per = if t.calls > 0 {
                        t.usec as f64 / t.calls as f64
                    } else {
                        0.0
                    };
                    let _ = write!(
                        o,
                        "cmdstat_{}:calls={},usec={},usec_per_call={per:.2},rejected_calls={},failed_calls={}\r\n",
                        cmd.name, t.calls, t.usec, t.rejected, t.failed
                    );
                }
            }
            "keyspace" => {
                o.push_str("# Keyspace\r\n");
                for (i, db) in dbs.iter().enumerate() {
                    if db.keys > 0 {
                        let _ = write!(
                            o,
                            "db{i}:keys={},expires={},avg_ttl={}",
                            db.keys, db.volatile, db.avg_ttl
                        );
                        if crate::redis_version_num() >= 0x0007_0400 {
                            let _ = write!(o, ",subexpiry={}", db.hashes_with_ttls);
                        }
                        o.push_str("\r\n");
                    }
                }
            }
            _ => {}
        }
    }
    o
}

/// INFO latencystats: the configured percentiles of every command with a
/// latency histogram, in microseconds (Redis's
/// fillPercentileDistributionLatencies).
/// INFO server's lines after `io_threads_active`: Redis 7.2's
/// `listenerN` (one per kind of listener: tcp 0, unix 1, tls 2, with the
/// addresses as configured) under 7.4's dialect, and Valkey 8.0's
/// `availability_zone` when one is set.
fn listeners_and_zone(server: &crate::server::Server, cfg: &crate::config::Settings) -> String {
    let mut o = String::new();
    if crate::speaks_7_4() {
        let binds = |o: &mut String| {
            for b in &cfg.bind {
                let _ = write!(o, ",bind={b}");
            }
        };
        let port = server.tcp_port.load(Relaxed);
        if port != 0 {
            o.push_str("listener0:name=tcp");
            binds(&mut o);
            let _ = write!(o, ",port={port}\r\n");
        }
        if let Some(path) = &cfg.unixsocket {
            let _ = write!(o, "listener1:name=unix,bind={path}\r\n");
        }
        if cfg.tls_port != 0 {
            o.push_str("listener2:name=tls");
            binds(&mut o);
            let _ = write!(o, ",port={}\r\n", cfg.tls_port);
        }
    }
    if !cfg.availability_zone.is_empty() {
        let _ = write!(o, "availability_zone:{}\r\n", cfg.availability_zone);
    }
    o
}

fn latencystats(server: &crate::server::Server, cfg: &crate::config::Settings, o: &mut String) {
    o.push_str("# Latencystats\r\n");
    let percentiles = &cfg.latency_tracking_info_percentiles;
    let all = server.commands.all();
    for (id, h) in server.stats.histograms() {
        let Some(cmd) = all.get(id) else { continue };
        let _ = write!(o, "latency_percentiles_usec_{}:", cmd.name);
        for (i, p) in percentiles.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let v = crate::observe::stats::value_at_percentile(&h, *p) as f64 / 1000.0;
            let _ = write!(o, "p{}={v:.3}", crate::config::fmt_percentile(*p));
        }
        o.push_str("\r\n");
    }
}

/// INFO keel: what Redis has no field for. Workers and their load, the
/// keyspace's shards, the log's group commit (`keel_threads` and
/// `keel_threads_active` are in the server section).
fn keel_section(
    server: &crate::server::Server,
    view: &crate::storage::keyspace::View,
    o: &mut String,
) {
    let w = &server.workers;
    o.push_str("# Keel\r\n");
    for i in 0..w.len() {
        let _ = write!(
            o,
            "keel_thread{i}:connections={},load={:.3},standby={}\r\n",
            w.conns[i].load(Relaxed),
            w.load_permille[i].load(Relaxed) as f64 / 1000.0,
            (i == w.regular()) as u8,
        );
    }
    let _ = write!(
        o,
        "keel_idle_poll_allowed:{}\r\nkeel_idle_poll_paying_workers:{}\r\n",
        crate::net::idle_poll::cores_free() as u8,
        crate::net::idle_poll::paying_workers(w.len()),
    );
    let shards = server.keyspace.shard_stats(view);
    let keys: Vec<u64> = shards.iter().map(|s| s.keys).collect();
    let waits: u64 = shards.iter().map(|s| s.lock_waits).sum();
    let _ = write!(
        o,
        "keel_shards:{}\r\nkeel_shard_keys_min:{}\r\nkeel_shard_keys_max:{}\r\nkeel_shard_lock_waits:{waits}\r\n",
        shards.len(),
        keys.iter().min().copied().unwrap_or(0),
        keys.iter().max().copied().unwrap_or(0),
    );
    o.push_str("keel_shard_keys:");
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        let _ = write!(o, "{k}");
    }
    o.push_str("\r\n");
    // The log's group commit: fsyncs, their mean latency, and the mean
    // number of connections one `always` fsync released.
    let (fsyncs, fsync_ns) = server.aof.fsync_seconds.count_and_sum();
    let (groups, members) = server.aof.group_size.count_and_sum();
    let _ = write!(
        o,
        "keel_aof_fsyncs:{}\r\nkeel_aof_fsync_avg_usec:{:.2}\r\nkeel_aof_group_commits:{groups}\r\nkeel_aof_group_size_avg:{:.2}\r\n",
        server.aof.fsyncs.load(Relaxed),
        fsync_ns.checked_div(fsyncs).unwrap_or(0) as f64 / 1000.0,
        members as f64 / groups.max(1) as f64,
    );
    // Cluster mode: what lets this node serve (its etcd lease, its
    // replicas' promises; see `cluster::promise`).
    if server.cluster.enabled() {
        let _ = write!(
            o,
            "keel_cluster_lease_valid:{}\r\nkeel_cluster_promised:{}\r\n",
            server.cluster.lease_valid() as u8,
            server.cluster.promised() as u8,
        );
    }
}

/// INFO [section [section ...]]
fn info(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let wanted: Vec<String> = argv[1..]
        .iter()
        .map(|a| args::lossy(a).to_ascii_lowercase())
        .collect();
    let text = info_text(cx, &wanted);
    cx.verbatim(text.as_bytes());
    Ok(())
}

/// CONFIG GET parameter [parameter ...]
fn config_get(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let pairs = cx.server.config.read().matching(&argv[2..]);
    cx.map(pairs.len());
    for (name, value) in pairs {
        cx.bulk(name.as_bytes());
        cx.bulk(value.as_bytes());
    }
    Ok(())
}

/// Whether the client is local, as Redis's islocalClient: a Unix socket,
/// or TCP from 127.0.0.1 or ::1.
fn is_local(cx: &Ctx) -> bool {
    let addr = &cx.client.info.addr;
    cx.client.info.unix || addr.starts_with("127.0.0.1:") || addr.starts_with("[::1]:")
}

/// CONFIG SET parameter value [parameter value ...]
///
/// All or nothing, as Redis's configSetCommand: every value is checked
/// and set (`Config::set_many`), then applied; when applying one fails,
/// every parameter of the call goes back to its old value, the old values
/// are applied again, and the error names the parameter that failed.
fn config_set(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if !argv.len().is_multiple_of(2) {
        return Err(error::SYNTAX);
    }
    let pairs: Vec<(&[u8], &[u8])> = argv[2..].chunks_exact(2).map(|p| (p[0], p[1])).collect();
    let local = is_local(cx);
    let (changed, before) = {
        let mut c = cx.server.config.write();
        let before = c.clone();
        let changed = c.set_many(&pairs, local).map_err(CmdError::new)?;
        (changed, before)
    };
    if let Err((name, why)) = apply_config(cx, &changed, true) {
        tracing::warn!(
            "Failed applying new configuration. Possibly related to new {name} setting. Restoring previous settings."
        );
        cx.server.config.write().restore(&before, &changed);
        if let Err((n, e)) = apply_config(cx, &changed, false) {
            tracing::warn!("Failed restoring failed CONFIG SET command ({n}): {e}");
        }
        return Err(CmdError::new(format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
        )));
    }
    cx.ok();
    Ok(())
}

/// Applies the values the parameters `changed` now hold, in the order of
/// the call; the first failure is (parameter, reason). `strict`: stop at
/// a failure (a CONFIG SET), or go on with the rest (restoring the old
/// values after one).
fn apply_config(
    cx: &mut Ctx,
    changed: &[&'static str],
    strict: bool,
) -> Result<(), (&'static str, String)> {
    cx.server.config_changed(Some(changed));
    let mut first_error = None;
    let mut tls_done = false;
    for &name in changed {
        let result = if matches!(name, "port" | "tls-port" | "bind") {
            apply_listener(cx, name)
        } else if crate::net::tls::PARAMS.contains(&name) {
            if tls_done {
                continue;
            }
            tls_done = true;
            let config = cx.server.config.read().clone();
            cx.server.tls.configure(&config).map_err(|e| {
                tracing::warn!("Failed to update TLS configuration: {e}");
                "Unable to update TLS configuration. Check server logs.".to_string()
            })
        } else {
            match name {
                "requirepass" => {
                    let password = cx.server.settings().requirepass.clone();
                    cx.server
                        .acl
                        .set_requirepass(&cx.server.commands.acl, password.as_bytes());
                    Ok(())
                }
                "maxmemory" => {
                    if let Some(server) = cx.server.arc() {
                        server.maxmemory_lowered();
                    }
                    Ok(())
                }
                "tiering-dir" => match cx.server.arc() {
                    Some(server) => crate::server::open_tier(&server).map_err(|e| {
                        tracing::warn!("Tiering: {e}");
                        format!("Unable to open the tier: {e}")
                    }),
                    None => Ok(()),
                },
                "appendonly" => {
                    let on = cx.server.settings().appendonly;
                    match cx.server.arc() {
                        Some(server) => server.set_appendonly(on, &mut cx.view).map_err(|e| {
                            tracing::warn!("Unable to turn on AOF: {e}");
                            "Unable to turn on AOF. Check server logs.".to_string()
                        }),
                        None => Ok(()),
                    }
                }
                _ => Ok(()),
            }
        };
        if let Err(e) = result {
            if strict {
                return Err((name, e));
            }
            first_error.get_or_insert((name, e));
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// `port`, `tls-port` or `bind` changed: the listening sockets follow
/// (Redis's updatePort, applyTLSPort and applyBind), each in the order
/// CONFIG SET named them, as Redis applies them.
fn apply_listener(cx: &mut Ctx, name: &str) -> Result<(), String> {
    use crate::net::listeners::Port;
    let Some(server) = cx.server.arc() else {
        return Ok(());
    };
    const PORT_FAILED: &str = "Unable to listen on this port. Check server logs.";
    match name {
        "bind" => server
            .listeners
            .change_bind(&server)
            .map_err(|_| "Failed to bind to specified addresses.".to_string()),
        "port" => server
            .listeners
            .change_port(&server, Port::Plain)
            .map_err(|_| PORT_FAILED.to_string()),
        _ => {
            if server.tls.get().is_none() {
                let config = server.config.read().clone();
                server.tls.configure(&config).map_err(|e| {
                    tracing::warn!("Failed to configure TLS: {e}");
                    "Unable to update TLS configuration. Check server logs.".to_string()
                })?;
            }
            server
                .listeners
                .change_port(&server, Port::Tls)
                .map_err(|_| PORT_FAILED.to_string())
        }
    }
}

/// BGREWRITEAOF
fn bgrewriteaof(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let server = cx
        .server
        .arc()
        .ok_or_else(|| CmdError::new("ERR server is shutting down"))?;
    if server.aof.rewriting() {
        return Err(CmdError::new(
            "ERR Background append only file rewriting already in progress",
        ));
    }
    if !server.aof.enabled() {
        // keel keeps no log while appendonly is no, so there is nothing to
        // rewrite (Redis would write a fresh one; turn appendonly on).
        return Err(CmdError::new(
            "ERR Background append only file rewriting needs appendonly yes (CONFIG SET appendonly yes creates the log)",
        ));
    }
    if !server.rewrite_aof(&mut cx.view) {
        return Err(CmdError::new(
            "ERR Can't execute an AOF background rewriting. Please check the server logs for more information.",
        ));
    }
    cx.simple(b"Background append only file rewriting started");
    Ok(())
}

/// CONFIG RESETSTAT
fn config_resetstat(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.server.stats.reset();
    cx.server.keyspace.reset_stats(&mut cx.view);
    cx.server.memory.reset_stats();
    cx.server.expired_stale_perc.store(0, Relaxed);
    cx.server.expired_subkeys.store(0, Relaxed);
    cx.server.expire_cycle.time_cap_reached.store(0, Relaxed);
    cx.server.expire_cycle.cpu_us.store(0, Relaxed);
    cx.server.cluster.slot_stats.reset();
    cx.ok();
    Ok(())
}

/// CONFIG REWRITE
fn config_rewrite(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let config = cx.server.config.read();
    // The users live in the config file unless an ACL file holds them.
    let users: Vec<String> = if config.settings().aclfile.is_none() {
        String::from_utf8_lossy(&crate::acl::file_text(
            &cx.server.acl,
            &cx.server.commands.acl,
        ))
        .lines()
        .map(str::to_string)
        .collect()
    } else {
        Vec::new()
    };
    config.rewrite(&users).map_err(CmdError::new)?;
    drop(config);
    cx.ok();
    Ok(())
}

/// CONFIG HELP
fn config_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}

/// COMMAND
fn command(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len() > 1 {
        return Err(error::unknown_subcommand(argv[0], argv[1]));
    }
    let cmds: Vec<&Command> = cx.server.commands.top_level().collect();
    cx.array(cmds.len());
    let proto = cx.proto();
    for c in cmds {
        cx.out.extend_from_slice(c.info_reply(proto));
    }
    Ok(())
}

/// COMMAND COUNT
fn command_count(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let n = cx.server.commands.top_level().count();
    cx.int(n as i64);
    Ok(())
}

/// Finds a command by `name` or `container|sub`.
fn find<'t>(cx: &Ctx<'_, 't>, name: &[u8]) -> Option<&'t Command> {
    let table = &cx.server.commands;
    match name.iter().position(|&c| c == b'|') {
        None => table.lookup(name),
        Some(i) => table
            .lookup(&name[..i])
            .and_then(|c| table.subcommand(c, &name[i + 1..])),
    }
}

/// COMMAND INFO [command-name [command-name ...]]
fn command_info(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let proto = cx.proto();
    if argv.len() == 2 {
        return command(cx, &argv[..1]);
    }
    cx.array(argv.len() - 2);
    for name in &argv[2..] {
        match find(cx, name) {
            Some(c) => cx.out.extend_from_slice(c.info_reply(proto)),
            None => encode::null(cx.out, proto),
        }
    }
    Ok(())
}

/// COMMAND DOCS [command-name [command-name ...]]
fn command_docs(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let proto = cx.proto();
    let cmds: Vec<&Command> = if argv.len() == 2 {
        cx.server.commands.top_level().collect()
    } else {
        argv[2..].iter().filter_map(|n| find(cx, n)).collect()
    };
    cx.map(cmds.len());
    for c in cmds {
        encode::bulk(cx.out, c.name.as_bytes());
        match c.docs_reply(proto) {
            Some(d) => cx.out.extend_from_slice(d),
            None => encode::map(cx.out, 0, proto),
        }
    }
    Ok(())
}

/// COMMAND LIST [FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]
fn command_list(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    enum Filter<'a> {
        None,
        Module,
        AclCat(String),
        Pattern(&'a [u8]),
    }
    let filter = match argv.len() {
        2 => Filter::None,
        5 if is(argv[2], "FILTERBY") => {
            if is(argv[3], "MODULE") {
                Filter::Module
            } else if is(argv[3], "ACLCAT") {
                Filter::AclCat(format!("@{}", args::lossy(argv[4]).to_ascii_lowercase()))
            } else if is(argv[3], "PATTERN") {
                Filter::Pattern(argv[4])
            } else {
                return Err(error::SYNTAX);
            }
        }
        _ => return Err(error::SYNTAX),
    };
    let names: Vec<&str> = cx
        .server
        .commands
        .all()
        .iter()
        .filter(|c| match &filter {
            Filter::None => true,
            Filter::Module => false,
            Filter::AclCat(cat) => {
                let bit = super::table::category::from_name(cat);
                bit != 0 && c.acl_categories & bit != 0
            }
            Filter::Pattern(p) => glob::matches(p, c.name.as_bytes(), true),
        })
        .map(|c| c.name.as_str())
        .collect();
    cx.array(names.len());
    for n in names {
        encode::bulk(cx.out, n.as_bytes());
    }
    Ok(())
}

/// The keys of the command in `argv[2..]` and their flags, as Redis's
/// getKeysSubcommandImpl: the command (or subcommand) must exist, take
/// keys and be given a valid number of arguments; finding no key is an
/// error unless the command's keys are optional (EVAL with 0 keys).
fn getkeys<'t>(cx: &Ctx<'_, 't>, argv: &[&[u8]]) -> Result<Vec<(usize, Vec<&'t str>)>, CmdError> {
    let target = &argv[2..];
    let table = &cx.server.commands;
    let no_keys = || CmdError::new("ERR The command has no key arguments");
    let cmd = match super::lookup(table, target) {
        Ok(cmd) if cmd.has_key_args() => cmd,
        Ok(_) => return Err(no_keys()),
        // Redis looks at the keys before the number of arguments.
        Err(Unresolved::Arity(cmd)) if !cmd.has_key_args() => return Err(no_keys()),
        Err(Unresolved::Arity(_)) => {
            return Err(CmdError::new(
                "ERR Invalid number of arguments specified for command",
            ))
        }
        Err(_) => return Err(CmdError::new("ERR Invalid command specified")),
    };
    let keys = cmd.keys_with_flags(target);
    if keys.is_empty() && !cmd.has(super::table::flag::NO_MANDATORY_KEYS) {
        return Err(CmdError::new("ERR Invalid arguments specified for command"));
    }
    Ok(keys)
}

/// COMMAND GETKEYS command [arg [arg ...]]
fn command_getkeys(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let keys = getkeys(cx, argv)?;
    cx.array(keys.len());
    for (p, _) in keys {
        encode::bulk(cx.out, argv[2 + p]);
    }
    Ok(())
}

/// COMMAND GETKEYSANDFLAGS command [arg [arg ...]]
fn command_getkeysandflags(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let keys = getkeys(cx, argv)?;
    let proto = cx.proto();
    cx.array(keys.len());
    for (p, flags) in keys {
        encode::array(cx.out, 2);
        encode::bulk(cx.out, argv[2 + p]);
        encode::set(cx.out, flags.len(), proto);
        for f in flags {
            encode::simple(cx.out, f.as_bytes());
        }
    }
    Ok(())
}

/// COMMAND HELP
fn command_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}

/// TIME
fn time(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    cx.array(2);
    cx.bulk(itoa::Buffer::new().format(now.as_secs()).as_bytes());
    cx.bulk(itoa::Buffer::new().format(now.subsec_micros()).as_bytes());
    Ok(())
}

/// SAVE: a snapshot written before the reply.
fn save(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    if cx.server.snapshots.in_progress() {
        return Err(CmdError::new("ERR Background save already in progress"));
    }
    match cx.server.save_rdb(&mut cx.view) {
        Ok(()) => {
            cx.ok();
            Ok(())
        }
        // Redis replies a bare "-ERR" and logs the cause.
        Err(_) => Err(CmdError::new("ERR")),
    }
}

/// BGSAVE [SCHEDULE]
fn bgsave(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let schedule = match argv.len() {
        1 => false,
        2 if is(argv[1], "SCHEDULE") => true,
        _ => return Err(error::SYNTAX),
    };
    let server = cx
        .server
        .arc()
        .ok_or_else(|| CmdError::new("ERR server is shutting down"))?;
    if server.snapshots.in_progress() {
        if schedule {
            server.snapshots.scheduled.store(true, Relaxed);
            cx.simple(b"Background saving scheduled");
            return Ok(());
        }
        return Err(CmdError::new("ERR Background save already in progress"));
    }
    server
        .bgsave(&mut cx.view)
        .map_err(|e| CmdError::new(format!("ERR {e}")))?;
    cx.simple(b"Background saving started");
    Ok(())
}

/// LASTSAVE
fn lastsave(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let t = cx.server.lastsave.load(Relaxed) as i64;
    cx.int(t);
    Ok(())
}

/// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]
fn shutdown(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    for a in &argv[1..] {
        if is(a, "ABORT") {
            if argv.len() > 2 {
                return Err(error::SYNTAX);
            }
            return Err(CmdError::new("ERR No shutdown in progress."));
        }
        if !(is(a, "NOSAVE") || is(a, "SAVE") || is(a, "NOW") || is(a, "FORCE")) {
            return Err(error::SYNTAX);
        }
    }
    let has = |w: &str| argv[1..].iter().any(|a| is(a, w));
    if has("NOSAVE") && has("SAVE") {
        return Err(error::SYNTAX);
    }
    // Saving would wait for the shards the script holds: only NOSAVE
    // while a script is busy, as Redis.
    if !has("NOSAVE") {
        if let Some(busy) = crate::scripting::busy_reply(cx.server) {
            return Err(CmdError::new(busy));
        }
    }
    tracing::warn!("User requested shutdown...");
    let mode = if has("NOSAVE") {
        crate::server::SHUTDOWN_NOSAVE
    } else if has("SAVE") {
        crate::server::SHUTDOWN_SAVE
    } else {
        crate::server::SHUTDOWN_DEFAULT
    };
    cx.server.shutdown_save.store(mode, Relaxed);
    cx.server.request_shutdown();
    // Redis closes the connection without a reply once shutdown starts.
    cx.close_after_reply();
    Ok(())
}

/// MODULE LIST: keel runs no Redis modules (they are C libraries written
/// against Redis's own internals).
fn module_list(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    encode::array(cx.out, 0);
    Ok(())
}

/// Whether `enable-debug-command` / `enable-module-command` lets this
/// client run the command.
fn exposed(cx: &Ctx, exposure: crate::config::Exposure) -> bool {
    use crate::config::Exposure;
    match exposure {
        Exposure::Yes => true,
        Exposure::Local => is_local(cx),
        Exposure::No => false,
    }
}

/// `enable-module-command`, as Redis checks it before MODULE LOAD,
/// LOADEX and UNLOAD.
fn module_command_allowed(cx: &Ctx) -> CmdResult {
    let allowed = exposed(cx, cx.server.settings().enable_module_command);
    if allowed {
        Ok(())
    } else {
        Err(CmdError::new("ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."))
    }
}

/// MODULE LOAD path [arg ...] / MODULE LOADEX path ...: fails as Redis
/// fails to load a library it cannot use, with the reason in the log.
fn module_load(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    module_command_allowed(cx)?;
    tracing::warn!(
        path = %args::lossy(argv[2]),
        "Module not loaded: keel cannot load Redis modules"
    );
    Err(CmdError::new(
        "ERR Error loading the extension. Please check the server logs.",
    ))
}

/// MODULE UNLOAD name: no module is ever loaded.
fn module_unload(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    module_command_allowed(cx)?;
    Err(CmdError::new(
        "ERR Error unloading module: no such module with that name",
    ))
}

/// MODULE HELP
fn module_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LIST",
        "    Return a list of loaded modules.",
        "LOAD <path> [<arg> ...]",
        "    Load a module library from <path>, passing to it any optional arguments.",
        "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
        "    Load a module library from <path>, while passing it module configurations and optional arguments.",
        "UNLOAD <name>",
        "    Unload a module.",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}

/// DEBUG subcommand [argument] (SLEEP seconds, HELP)
fn debug(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let allowed = exposed(cx, cx.server.settings().enable_debug_command);
    if !allowed {
        return Err(CmdError::new("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."));
    }
    let sub = argv[1];
    if is(sub, "SLEEP") && argv.len() == 3 {
        // strtod semantics, as Redis: what does not parse is 0.
        let secs = leading_float(argv[2]);
        // Blocks this worker, as DEBUG SLEEP blocks Redis: it exists to
        // simulate a slow command.
        if secs > 0.0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        }
        cx.ok();
        Ok(())
    } else if is(sub, "SET-ACTIVE-EXPIRE") && argv.len() == 3 {
        // As Redis: atoi, anything but 0 turns it on.
        let on = resp::parse_i64(argv[2]).unwrap_or(0) != 0;
        cx.server
            .active_expire
            .store(on, std::sync::atomic::Ordering::Relaxed);
        cx.ok();
        Ok(())
    } else if is(sub, "RELOAD") {
        debug_reload(cx, &argv[2..])
    } else if is(sub, "POPULATE") && (3..=5).contains(&argv.len()) {
        debug_populate(cx, &argv[2..])
    } else if is(sub, "SPILL") && argv.len() == 2 {
        // keel's own: every value to the disk tier, however small, so
        // tests can run commands against values on disk.
        if crate::tier::active().is_none() {
            return Err(CmdError::new("ERR no disk tier: tiering-dir is not set"));
        }
        // (DEBUG holds no shard: it takes them all here, as RELOAD does.)
        if !cx.view.held_shards().is_empty() {
            return Err(CmdError::new(
                "ERR DEBUG SPILL is not allowed inside a transaction",
            ));
        }
        let mut view = cx.server.keyspace.lock_all();
        let n = crate::tier::spill::spill_all(cx.server, &mut view);
        drop(view);
        cx.int(n as i64);
        Ok(())
    } else if is(sub, "HELP") {
        cx.help(&[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "RELOAD [option ...]",
            "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
            "    * MERGE: Merge the content of the RDB file into the current dataset.",
            "    * NOFLUSH: Do not empty the dataset before loading the RDB file.",
            "    * NOSAVE: Do not save the current dataset before reloading it.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Create <count> string keys named key:<num>. If <prefix> is specified then",
            "    it is used instead of the 'key' prefix. These are not propagated to",
            "    replicas. Cluster slots are not respected so keys not belonging to the",
            "    current node can be created in cluster mode.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "SPILL",
            "    Move every value to the disk tier (tiering-dir must be set).",
            "HELP",
            "    Prints this help.",
        ]);
        Ok(())
    } else {
        Err(CmdError::new(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            args::lossy(sub)
        )))
    }
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: saves the snapshot, empties
/// the dataset and loads the snapshot back, all shards held from the
/// flush to the end of the load so no client sees the empty dataset.
fn debug_reload(cx: &mut Ctx, opts: &[&[u8]]) -> CmdResult {
    let (mut flush, mut save) = (true, true);
    for o in opts {
        if is(o, "MERGE") {
            // Loaded keys replace existing ones either way.
        } else if is(o, "NOFLUSH") {
            flush = false;
        } else if is(o, "NOSAVE") {
            save = false;
        } else {
            return Err(CmdError::new(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    let server = cx.server;
    // It takes every shard itself (the save, the load): not from inside a
    // transaction that holds some.
    if !cx.view.held_shards().is_empty() {
        return Err(CmdError::new(
            "ERR DEBUG RELOAD is not allowed inside a transaction",
        ));
    }
    if save && server.save_rdb(&mut cx.view).is_err() {
        return Err(CmdError::new("ERR"));
    }
    let path = crate::persistence::snapshot::rdb_path(server);
    let data = std::fs::read(&path).map_err(|e| {
        tracing::error!("DEBUG RELOAD: {}: {e}", path.display());
        CmdError::new("ERR Error trying to load the RDB dump, check server logs.")
    })?;
    let mut view = server.keyspace.lock_all();
    if flush {
        crate::persistence::snapshot::empty_dataset(server, &mut view, cx.now_ms);
    }
    crate::persistence::snapshot::load_into(server, &mut view, &data, &path).map_err(|e| {
        tracing::error!("DEBUG RELOAD: {e}");
        CmdError::new("ERR Error trying to load the RDB dump, check server logs.")
    })?;
    drop(view);
    tracing::warn!("DB reloaded by DEBUG RELOAD");
    cx.ok();
    Ok(())
}

/// DEBUG POPULATE count [prefix] [size]: `prefix:N` = `value:N` for N
/// below count, skipping keys that exist; with a size, values are that
/// many bytes (`value:N` then zero bytes, or cut to size). As in Redis,
/// not propagated (a test fixture, not a write), but WATCH sees it.
fn debug_populate(cx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    const POSITIVE: &str = "ERR value is out of range, must be positive";
    let positive = |a: &[u8]| match resp::parse_i64(a) {
        None => Err(error::NOT_INTEGER),
        Some(n) if n < 0 => Err(CmdError::new(POSITIVE)),
        Some(n) => Ok(n),
    };
    let count = positive(args[0])? as u64;
    let prefix = args.get(1).copied().unwrap_or(b"key");
    let size = match args.get(2) {
        // Bounded as a bulk string is (proto-max-bulk-len's default).
        Some(a) => Some(positive(a)?.min(512 << 20) as usize),
        None => None,
    };
    // Redis formats the name into a 128-byte buffer: longer prefixes are cut.
    let prefix = &prefix[..prefix.len().min(100)];
    let server = cx.server;
    let db = cx.db();
    let now = cx.now_ms;
    // Every shard: its own lock set, or a transaction's (EXEC locks them
    // all when it queues DEBUG).
    let mut own = None;
    let view = match cx.view.held_shards().len() {
        0 => own.insert(server.keyspace.lock_all()),
        n if n == crate::storage::keyspace::SHARDS => &mut cx.view,
        _ => return Err(CmdError::new("ERR DEBUG POPULATE needs the whole keyspace")),
    };
    // New keys must not reach a running snapshot's image or an AOF
    // rewrite's base before their slots were taken.
    server.aof.before_execute(view, None);
    server.snapshots.before_execute(view, None);
    let mut key = Vec::with_capacity(prefix.len() + 21);
    for j in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(itoa::Buffer::new().format(j).as_bytes());
        if view.peek_meta(db, &key, now).is_some() {
            continue;
        }
        let mut value = format!("value:{j}").into_bytes();
        if let Some(size) = size {
            value.resize(size, 0);
        }
        view.set(
            db,
            &key,
            crate::storage::value::Value::Str(crate::storage::value::Str::from_vec(value)),
            0,
            now,
        );
        server.watches.touch(db, &key);
    }
    drop(own);
    cx.ok();
    Ok(())
}

/// The longest prefix of `s` that is a decimal number, as strtod reads it
/// (0 when there is none).
fn leading_float(s: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(s);
    let t = text.trim_start();
    (1..=t.len())
        .rev()
        .find_map(|n| t.get(..n).and_then(|p| p.parse::<f64>().ok()))
        .unwrap_or(0.0)
}
