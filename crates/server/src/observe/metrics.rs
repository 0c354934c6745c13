//! The Prometheus endpoint: `GET /metrics` over plain HTTP on
//! `metrics-bind`:`metrics-port` (off when the port is 0), in the text
//! exposition format 0.0.4.
//!
//! [`render`] builds the page from the shared state INFO reads (atomics,
//! the per-thread command counters, the keyspace's per-shard counters taken
//! one shard at a time); [`start`] serves it. Metric names are
//! redis_exporter's where it has one, so dashboards made for it work with
//! a new data source; keel's own figures are named `keel_*`.
//!
//! Served by `tiny_http` on a thread of its own rather than by hyper on the
//! main runtime: rendering blocks on shard locks (a busy script holds
//! shards for as long as it runs) and reads /proc, which on the main
//! runtime would hold up accepting connections and the cron; a blocking
//! server on its own thread needs no async plumbing, handles one scrape at
//! a time, and is a small dependency (hyper 1.x would bring its stack of
//! http/body/util crates for one GET).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::server::{Server, StartError};

/// The exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Starts the endpoint when `metrics-port` is not 0. A port that cannot be
/// bound stops start-up, as a `port` that cannot be bound does.
pub fn start(server: &Arc<Server>) -> Result<(), StartError> {
    let (port, bind) = {
        let c = server.settings();
        (c.metrics_port, c.metrics_bind.clone())
    };
    if port == 0 {
        return Ok(());
    }
    // `*`: every IPv4 address, as in `bind`.
    let bind = if bind == "*" {
        "0.0.0.0".to_string()
    } else {
        bind
    };
    let addr = if bind.contains(':') {
        format!("[{bind}]:{port}")
    } else {
        format!("{bind}:{port}")
    };
    let http = tiny_http::Server::http(addr.as_str()).map_err(|e| {
        StartError::Listen(format!(
            "Could not create metrics HTTP listening socket {addr}: {e}"
        ))
    })?;
    tracing::info!("metrics endpoint: http://{addr}/metrics");
    let server = Arc::downgrade(server);
    std::thread::Builder::new()
        .name("keel-metrics".into())
        .spawn(move || {
            for request in http.incoming_requests() {
                let Some(server) = server.upgrade() else {
                    return;
                };
                respond(&server, request);
            }
        })?;
    Ok(())
}

fn respond(server: &Server, request: tiny_http::Request) {
    let path = request.url().split('?').next().unwrap_or("");
    let get = matches!(
        request.method(),
        tiny_http::Method::Get | tiny_http::Method::Head
    );
    let response = if path != "/metrics" {
        tiny_http::Response::from_string("Not Found\n").with_status_code(404)
    } else if !get {
        tiny_http::Response::from_string("Method Not Allowed\n").with_status_code(405)
    } else {
        let mut r = tiny_http::Response::from_string(render(server));
        if let Ok(h) = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE) {
            r = r.with_header(h);
        }
        r
    };
    // A scraper that hung up has nothing left to be told.
    let _ = request.respond(response);
}

/// A histogram whose buckets are atomics, observed by whichever thread
/// does the measured work (fsyncs: the workers, the log thread and the
/// fsync threads), read by [`render`].
pub struct Histogram {
    /// Upper bounds (inclusive), ascending, in the unit observed.
    bounds: &'static [u64],
    /// Observations per bucket, not cumulative; the last is +Inf.
    counts: [AtomicU64; MAX_BUCKETS + 1],
    sum: AtomicU64,
}

const MAX_BUCKETS: usize = 16;

/// fsync durations, in nanoseconds: 50 µs to 2.5 s.
pub const FSYNC_BUCKETS_NS: &[u64] = &[
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
];

/// Connections sharing one fsync.
pub const GROUP_BUCKETS: &[u64] = &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

impl Histogram {
    pub fn new(bounds: &'static [u64]) -> Histogram {
        assert!(bounds.len() <= MAX_BUCKETS && bounds.is_sorted());
        Histogram {
            bounds,
            counts: Default::default(),
            sum: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, v: u64) {
        let i = self.bounds.partition_point(|b| *b < v);
        self.counts[i].fetch_add(1, Relaxed);
        self.sum.fetch_add(v, Relaxed);
    }

    /// (observations, their sum).
    pub fn count_and_sum(&self) -> (u64, u64) {
        let count = self.counts.iter().map(|c| c.load(Relaxed)).sum();
        (count, self.sum.load(Relaxed))
    }

    /// Cumulative counts per bound, then +Inf (the total), and the sum.
    fn snapshot(&self) -> (Vec<u64>, u64) {
        let mut acc = 0;
        let cumulative = self.counts[..=self.bounds.len()]
            .iter()
            .map(|c| {
                acc += c.load(Relaxed);
                acc
            })
            .collect();
        (cumulative, self.sum.load(Relaxed))
    }
}

/// Escapes a label value: backslash, double quote and line feed.
pub fn escape_label(v: &str) -> String {
    let mut o = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

/// Escapes HELP text: backslash and line feed.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A float as the format writes it (`+Inf`, `-Inf`, `NaN`).
fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// The page being written: each family's HELP and TYPE, then its samples.
struct Page {
    o: String,
}

impl Page {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = write!(
            self.o,
            "# HELP {name} {}\n# TYPE {name} {kind}\n",
            escape_help(help)
        );
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.o.push_str(name);
        if !labels.is_empty() {
            self.o.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.o.push(',');
                }
                let _ = write!(self.o, "{k}=\"{}\"", escape_label(v));
            }
            self.o.push('}');
        }
        let _ = writeln!(self.o, " {value}");
    }

    fn gauge(&mut self, name: &str, help: &str, value: impl std::fmt::Display) {
        self.family(name, "gauge", help);
        self.sample(name, &[], value);
    }

    fn counter(&mut self, name: &str, help: &str, value: impl std::fmt::Display) {
        self.family(name, "counter", help);
        self.sample(name, &[], value);
    }

    /// `per_unit`: observed units per exposed unit (1e9 for nanoseconds
    /// exposed as seconds).
    fn histogram(&mut self, name: &str, help: &str, h: &Histogram, per_unit: f64) {
        self.family(name, "histogram", help);
        let (cumulative, sum) = h.snapshot();
        let bucket = format!("{name}_bucket");
        for (bound, n) in h.bounds.iter().zip(&cumulative) {
            let le = float(*bound as f64 / per_unit);
            self.sample(&bucket, &[("le", &le)], n);
        }
        let total = cumulative.last().copied().unwrap_or(0);
        self.sample(&bucket, &[("le", "+Inf")], total);
        self.sample(&format!("{name}_sum"), &[], float(sum as f64 / per_unit));
        self.sample(&format!("{name}_count"), &[], total);
    }
}

/// The metrics page. Reads what INFO reads; the keyspace counters are
/// summed one shard at a time (no shard is held while another is waited
/// for, and nothing is held across the write-out).
pub fn render(server: &Server) -> String {
    let mut p = Page { o: String::new() };
    render_server(server, &mut p);
    render_clients(server, &mut p);
    render_commands(server, &mut p);
    render_command_latencies(server, &mut p);
    render_keyspace(server, &mut p);
    render_memory(server, &mut p);
    render_persistence(server, &mut p);
    render_replication(server, &mut p);
    render_tiering(server, &mut p);
    p.o
}

/// The disk tier's figures (INFO tiering), when one is open.
fn render_tiering(server: &Server, p: &mut Page) {
    let Some(t) = crate::tier::active() else {
        return;
    };
    let (k, _) = server.keyspace.stats(&server.keyspace.none());
    p.counter(
        "keel_tiering_values_in_memory_total",
        "Values requests needed that were in memory when they first looked",
        k.values_in_memory,
    );
    p.counter(
        "keel_tiering_values_on_disk_total",
        "Values requests needed that were on disk when they first looked",
        k.values_on_disk,
    );
    p.gauge(
        "keel_tiering_hit_rate",
        "Share of the values requests needed that were in memory",
        crate::tier::hit_rate(&k),
    );
    let (disk, live, segments) = t.disk_usage();
    let s = &t.stats;
    p.gauge(
        "keel_tiering_spilled_keys",
        "Keys whose value is on disk",
        t.spilled_keys(),
    );
    p.gauge(
        "keel_tiering_clean_copies",
        "Records kept for values read back, reused if they are spilled unchanged",
        s.clean_copies.load(Relaxed),
    );
    p.counter(
        "keel_tiering_reused_copies_total",
        "Spills that reused a clean copy instead of writing",
        s.reused_copies.load(Relaxed),
    );
    p.counter(
        "keel_tiering_probation_loads_total",
        "Values read back and not admitted: the first to go back to disk",
        s.probation.load(Relaxed),
    );
    p.gauge(
        "keel_tiering_disk_bytes",
        "Bytes in the value log's files",
        disk,
    );
    p.gauge(
        "keel_tiering_live_bytes",
        "Bytes of live records in the value log",
        live,
    );
    p.gauge("keel_tiering_segments", "Files of the value log", segments);
    p.counter(
        "keel_tiering_spills_total",
        "Values written to disk",
        s.spills.load(Relaxed),
    );
    p.counter(
        "keel_tiering_spilled_bytes_total",
        "Record bytes written to disk",
        s.spilled_bytes.load(Relaxed),
    );
    p.counter(
        "keel_tiering_loads_total",
        "Values read back from disk",
        s.loads.load(Relaxed) + s.inline_loads.load(Relaxed),
    );
    p.counter(
        "keel_tiering_loaded_bytes_total",
        "Record bytes read back for parked requests",
        s.loaded_bytes.load(Relaxed),
    );
    p.counter(
        "keel_tiering_inline_loads_total",
        "Values read back on a worker (lookups no request announced)",
        s.inline_loads.load(Relaxed),
    );
    p.counter(
        "keel_tiering_parked_requests_total",
        "Requests that waited for the disk",
        s.parked.load(Relaxed),
    );
    p.counter(
        "keel_tiering_prefetched_requests_total",
        "Pipelined requests whose reads started before their turn",
        s.prefetched.load(Relaxed),
    );
    p.counter(
        "keel_tiering_snapshot_reads_total",
        "Records read from disk together for a snapshot or a full sync",
        s.snapshot_reads.load(Relaxed),
    );
    p.counter(
        "keel_tiering_compacted_segments_total",
        "Value log segments emptied by compaction",
        s.compacted_segments.load(Relaxed),
    );
    p.counter(
        "keel_tiering_compacted_bytes_total",
        "Record bytes compaction moved",
        s.compacted_bytes.load(Relaxed),
    );
}

fn render_server(server: &Server, p: &mut Page) {
    let uptime = server.started.elapsed().as_secs();
    let (policy, port) = (
        server.memory.policy().name(),
        server.tcp_port.load(Relaxed).to_string(),
    );
    let pid = std::process::id().to_string();
    p.family(
        "redis_instance_info",
        "gauge",
        "Information about the keel instance (always 1)",
    );
    p.sample(
        "redis_instance_info",
        &[
            (
                "role",
                if server.repl.is_replica() {
                    "slave"
                } else {
                    "master"
                },
            ),
            ("redis_version", crate::redis_version()),
            ("keel_version", crate::KEEL_VERSION),
            ("redis_build_id", "0"),
            ("redis_mode", "standalone"),
            ("os", std::env::consts::OS),
            ("maxmemory_policy", policy),
            ("tcp_port", &port),
            ("run_id", &server.run_id),
            ("process_id", &pid),
        ],
        1,
    );
    p.gauge(
        "redis_uptime_in_seconds",
        "Seconds since the server started",
        uptime,
    );
    p.gauge(
        "redis_start_time_seconds",
        "Start time of the server, in seconds since the Unix epoch",
        server.start_unix_ms / 1000,
    );
    let (user, sys) = cpu_seconds();
    p.counter(
        "redis_cpu_user_seconds_total",
        "User CPU time consumed by the server",
        float(user),
    );
    p.counter(
        "redis_cpu_sys_seconds_total",
        "System CPU time consumed by the server",
        float(sys),
    );
}

/// (user, system) CPU seconds of the process.
fn cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage for getrusage to fill.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

fn render_clients(server: &Server, p: &mut Page) {
    p.gauge(
        "redis_connected_clients",
        "Client connections",
        server.clients.len(),
    );
    p.gauge(
        "redis_blocked_clients",
        "Clients waiting in a blocking command, for a pause to end, or in WAIT",
        server.blocking.all_blocked(),
    );
    p.gauge(
        "redis_tracking_clients",
        "Clients with client-side caching (tracking) on",
        server.tracking.clients(),
    );
    p.counter(
        "redis_connections_received_total",
        "Connections accepted",
        server.stats.connections_received.load(Relaxed),
    );
    p.counter(
        "redis_rejected_connections_total",
        "Connections refused because of maxclients",
        server.stats.rejected_connections.load(Relaxed),
    );
    let net = server.stats.totals();
    let (net_in, net_out) = (net.net_input_bytes, net.net_output_bytes);
    p.counter(
        "redis_net_input_bytes_total",
        "Bytes read from the network",
        net_in,
    );
    p.counter(
        "redis_net_output_bytes_total",
        "Bytes written to the network",
        net_out,
    );
}

/// One per-command figure, as its sample value.
type CmdValue = fn(&crate::observe::stats::CmdTotals) -> String;

/// Per command, as INFO commandstats names them (`get`, `config|get`):
/// only commands called since start (or CONFIG RESETSTAT), as INFO lists.
fn render_commands(server: &Server, p: &mut Page) {
    let totals = server.stats.command_totals(server.commands.len());
    p.counter(
        "redis_commands_processed_total",
        "Commands processed (INFO's total_commands_processed: refused requests not included)",
        server.stats.commands_processed(),
    );
    let used: Vec<(&str, crate::observe::stats::CmdTotals)> = server
        .commands
        .all()
        .iter()
        .zip(&totals)
        .filter(|(_, t)| t.calls > 0 || t.failed > 0 || t.rejected > 0)
        .map(|(c, t)| (c.name.as_str(), *t))
        .collect();
    let families: [(&str, &str, CmdValue); 4] = [
        ("redis_commands_total", "Calls per command", |t| {
            t.calls.to_string()
        }),
        (
            "redis_commands_duration_seconds_total",
            "Time spent executing each command",
            |t| float(t.usec as f64 / 1e6),
        ),
        (
            "redis_commands_failed_calls_total",
            "Calls per command that failed while executing",
            |t| t.failed.to_string(),
        ),
        (
            "redis_commands_rejected_calls_total",
            "Calls per command rejected before executing (arity, ACL, OOM...)",
            |t| t.rejected.to_string(),
        ),
    ];
    for (name, help, value) in families {
        p.family(name, "counter", help);
        for (cmd, t) in &used {
            p.sample(name, &[("cmd", cmd)], value(t));
        }
    }
    let net = server.stats.totals();
    p.counter(
        "redis_error_replies_total",
        "Error replies sent (INFO's total_error_replies)",
        net.error_replies,
    );
    p.family(
        "redis_errors_total",
        "counter",
        "Error replies by their error code (INFO errorstats)",
    );
    for (code, n) in server.stats.errors() {
        p.sample(
            "redis_errors_total",
            &[("err", &String::from_utf8_lossy(&code))],
            n,
        );
    }
}

/// `redis_commands_latencies_usec{cmd}`: per command, the histogram INFO
/// latencystats and LATENCY HISTOGRAM read (while `latency-tracking` is
/// on), in microseconds, with the same buckets for every command (powers
/// of two from 1 µs, as LATENCY HISTOGRAM's) so quantiles can be summed
/// over commands and instances.
fn render_command_latencies(server: &Server, p: &mut Page) {
    const NAME: &str = "redis_commands_latencies_usec";
    p.family(
        NAME,
        "histogram",
        "Execution time per command in microseconds (latency-tracking)",
    );
    let all = server.commands.all();
    let bucket = format!("{NAME}_bucket");
    for (id, h) in server.stats.histograms() {
        let Some(cmd) = all.get(id) else { continue };
        let cmd = cmd.name.as_str();
        let mut level: u64 = 1024;
        while level <= 1 << 30 {
            let upto = h.highest_equivalent(level);
            let le = (upto / 1000).to_string();
            p.sample(
                &bucket,
                &[("cmd", cmd), ("le", &le)],
                h.count_between(0, upto),
            );
            level *= 2;
        }
        p.sample(&bucket, &[("cmd", cmd), ("le", "+Inf")], h.len());
        p.sample(
            &format!("{NAME}_sum"),
            &[("cmd", cmd)],
            float(h.mean() * h.len() as f64 / 1000.0),
        );
        p.sample(&format!("{NAME}_count"), &[("cmd", cmd)], h.len());
    }
}

fn render_keyspace(server: &Server, p: &mut Page) {
    let (kstats, dbs) = server.keyspace.stats(&server.keyspace.none());
    p.family("redis_db_keys", "gauge", "Keys per database");
    for (i, db) in dbs.iter().enumerate() {
        p.sample("redis_db_keys", &[("db", &format!("db{i}"))], db.keys);
    }
    p.family(
        "redis_db_keys_expiring",
        "gauge",
        "Keys with an expiry per database",
    );
    for (i, db) in dbs.iter().enumerate() {
        p.sample(
            "redis_db_keys_expiring",
            &[("db", &format!("db{i}"))],
            db.volatile,
        );
    }
    p.counter(
        "redis_keyspace_hits_total",
        "Lookups of keys that existed",
        kstats.hits,
    );
    p.counter(
        "redis_keyspace_misses_total",
        "Lookups of keys that did not exist",
        kstats.misses,
    );
    p.counter(
        "redis_expired_keys_total",
        "Keys removed because they expired",
        kstats.expired,
    );
    p.counter(
        "redis_evicted_keys_total",
        "Keys evicted because of maxmemory",
        server.memory.evicted_keys.load(Relaxed),
    );
}

fn render_memory(server: &Server, p: &mut Page) {
    let used = server.memory.observe();
    let rss = crate::command::memory::rss_bytes();
    p.gauge(
        "redis_memory_used_bytes",
        "Bytes allocated by the server",
        used,
    );
    p.gauge(
        "redis_memory_used_rss_bytes",
        "Resident set size of the process",
        rss,
    );
    p.gauge(
        "redis_memory_used_peak_bytes",
        "Most bytes allocated since start",
        server.memory.peak().max(used),
    );
    let ratio = if used == 0 {
        0.0
    } else {
        rss as f64 / used as f64
    };
    p.gauge(
        "redis_mem_fragmentation_ratio",
        "Resident set size over bytes allocated",
        float(ratio),
    );
    p.gauge(
        "redis_memory_max_bytes",
        "maxmemory (0: no limit)",
        server.memory.maxmemory(),
    );
}

fn render_persistence(server: &Server, p: &mut Page) {
    let snaps = &server.snapshots;
    let aof = &server.aof;
    p.gauge(
        "redis_rdb_changes_since_last_save",
        "Writes since the last save",
        server.dirty.load(Relaxed),
    );
    p.gauge(
        "redis_rdb_bgsave_in_progress",
        "1 while a background save runs",
        snaps.in_progress() as u8,
    );
    p.gauge(
        "redis_rdb_last_save_timestamp_seconds",
        "Time of the last successful save, in seconds since the Unix epoch",
        server.lastsave.load(Relaxed),
    );
    p.gauge(
        "redis_rdb_last_bgsave_status",
        "1 if the last background save succeeded",
        snaps.last_ok.load(Relaxed) as u8,
    );
    p.gauge(
        "redis_rdb_last_bgsave_duration_sec",
        "Seconds the last background save took (-1: none yet)",
        snaps.last_secs.load(Relaxed),
    );
    p.gauge(
        "redis_aof_enabled",
        "1 when the append-only log is on",
        aof.enabled() as u8,
    );
    p.gauge(
        "redis_aof_rewrite_in_progress",
        "1 while the log is being rewritten",
        aof.rewriting() as u8,
    );
    p.gauge(
        "redis_aof_last_bgrewrite_status",
        "1 if the last log rewrite succeeded",
        (aof.rewrite_failures.load(Relaxed) == 0) as u8,
    );
    p.gauge(
        "redis_aof_last_write_status",
        "1 if the log is being written and fsynced without errors",
        aof.write_ok() as u8,
    );
    p.gauge(
        "redis_aof_current_size_bytes",
        "Size of the append-only log (0 when it is off)",
        if aof.enabled() { aof.size_on_disk() } else { 0 },
    );
    p.counter(
        "keel_aof_fsyncs_total",
        "fsyncs of the live append-only log (with group commit, fewer than the writes)",
        aof.fsyncs.load(Relaxed),
    );
    p.histogram(
        "keel_aof_fsync_duration_seconds",
        "Duration of fsyncs of the live append-only log",
        &aof.fsync_seconds,
        1e9,
    );
    p.histogram(
        "keel_aof_group_size",
        "Connections waiting for durability when an appendfsync-always fsync started \
         (the group it commits; approximate when fsyncs overlap)",
        &aof.group_size,
        1.0,
    );
}

/// INFO replication's counts: replicas connected, the stream's offset.
fn render_replication(server: &Server, p: &mut Page) {
    let repl = &server.repl;
    p.gauge(
        "redis_connected_slaves",
        "Connected replicas",
        repl.replicas.read().len(),
    );
    p.gauge(
        "redis_master_repl_offset",
        "Replication offset of this primary",
        repl.offset(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
        assert_eq!(escape_help("a\\b\nc"), "a\\\\b\\nc");
    }

    #[test]
    fn floats_use_the_format_spelling() {
        assert_eq!(float(f64::INFINITY), "+Inf");
        assert_eq!(float(f64::NEG_INFINITY), "-Inf");
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(float(0.5), "0.5");
        assert_eq!(float(3.0), "3");
    }

    #[test]
    fn histogram_is_cumulative_and_counts_match() {
        let h = Histogram::new(GROUP_BUCKETS);
        for v in [1, 1, 3, 5000] {
            h.observe(v);
        }
        let mut p = Page { o: String::new() };
        p.histogram("g", "help", &h, 1.0);
        let lines: Vec<&str> = p.o.lines().collect();
        assert_eq!(lines[0], "# HELP g help");
        assert_eq!(lines[1], "# TYPE g histogram");
        assert!(lines.contains(&"g_bucket{le=\"1\"} 2"));
        assert!(lines.contains(&"g_bucket{le=\"2\"} 2"));
        assert!(lines.contains(&"g_bucket{le=\"4\"} 3"));
        assert!(lines.contains(&"g_bucket{le=\"1024\"} 3"));
        assert!(lines.contains(&"g_bucket{le=\"+Inf\"} 4"));
        assert!(lines.contains(&"g_sum 5005"));
        assert!(lines.contains(&"g_count 4"));
    }

    #[test]
    fn fsync_buckets_are_seconds() {
        let h = Histogram::new(FSYNC_BUCKETS_NS);
        h.observe(300_000);
        let mut p = Page { o: String::new() };
        p.histogram("f", "h", &h, 1e9);
        assert!(p.o.contains("f_bucket{le=\"0.00025\"} 0\n"), "{}", p.o);
        assert!(p.o.contains("f_bucket{le=\"0.0005\"} 1\n"), "{}", p.o);
        assert!(p.o.contains("f_sum 0.0003\n"), "{}", p.o);
    }

    #[test]
    fn a_fresh_server_renders_every_family_once() {
        let server = match Server::new(crate::config::Config::default()) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let page = render(&server);
        let mut families = Vec::new();
        let mut last_type: Option<String> = None;
        for line in page.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap_or_default();
                assert!(!families.contains(&name), "{name} twice");
                assert!(kind != "counter" || name.ends_with("_total"), "{line}");
                families.push(name);
                last_type = Some(name.to_string());
            } else if !line.starts_with("# HELP ") {
                let family = last_type.as_deref().unwrap_or_default();
                assert!(line.starts_with(family), "{line} outside {family}");
            }
        }
        assert!(families.contains(&"redis_db_keys"));
        assert!(page.contains("redis_db_keys{db=\"db15\"} 0\n"));
        assert!(page.contains("redis_connected_clients 0\n"));
        // No command has run: no per-command samples.
        assert!(!page.contains("{cmd="));
    }

    #[test]
    fn samples_with_labels() {
        let mut p = Page { o: String::new() };
        p.family("redis_commands_total", "counter", "Calls per command");
        p.sample("redis_commands_total", &[("cmd", "config|get")], 3);
        assert_eq!(
            p.o,
            "# HELP redis_commands_total Calls per command\n# TYPE redis_commands_total counter\nredis_commands_total{cmd=\"config|get\"} 3\n"
        );
    }
}
