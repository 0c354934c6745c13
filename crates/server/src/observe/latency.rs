//! The latency monitor (Redis's latency.c): per event, a ring of the last
//! [`TS_LEN`] samples (one per second, the highest of that second), the
//! all-time high, and the reports LATENCY DOCTOR and LATENCY GRAPH print.
//!
//! An event is recorded when `latency-monitor-threshold` (ms) is not 0 and
//! the time measured is at least the threshold. Call sites check
//! [`Monitor::enabled`] (one load) before reading a clock; recording takes
//! a lock, which is fine: it happens only for spikes.
//!
//! Events keel records: `command`, `fast-command` and `command-unblocking`
//! (dispatch, EXEC, scripts), `expire-cycle` (the cron),
//! `eviction-cycle` and `eviction-del` (eviction), `aof-write`,
//! `aof-write-alone` / `aof-write-pending-fsync` (the log's writes) and
//! `aof-fsync-always` (the fsync a client waits for under `appendfsync
//! always`).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Samples kept per event (LATENCY_TS_LEN).
pub const TS_LEN: usize = 160;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// Unix time in seconds (0: an empty slot).
    pub time: u64,
    /// Milliseconds.
    pub latency: u64,
}

#[derive(Debug, Clone)]
pub struct Series {
    idx: usize,
    pub max: u64,
    samples: [Sample; TS_LEN],
}

impl Series {
    fn new() -> Series {
        Series {
            idx: 0,
            max: 0,
            samples: [Sample::default(); TS_LEN],
        }
    }

    fn add(&mut self, now: u64, latency: u64) {
        self.max = self.max.max(latency);
        let prev = (self.idx + TS_LEN - 1) % TS_LEN;
        if self.samples[prev].time == now {
            let p = &mut self.samples[prev];
            p.latency = p.latency.max(latency);
            return;
        }
        self.samples[self.idx] = Sample { time: now, latency };
        self.idx = (self.idx + 1) % TS_LEN;
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        (0..TS_LEN)
            .map(|j| self.samples[(self.idx + j) % TS_LEN])
            .filter(|s| s.time != 0)
            .collect()
    }

    /// The newest sample.
    pub fn latest(&self) -> Sample {
        self.samples[(self.idx + TS_LEN - 1) % TS_LEN]
    }
}

#[derive(Default)]
pub struct Monitor {
    /// `latency-monitor-threshold` in ms (0: off).
    threshold_ms: AtomicU64,
    /// Events in the order they first happened.
    events: Mutex<Vec<(String, Series)>>,
}

fn unix_secs() -> u64 {
    crate::command::unix_ms() / 1000
}

impl Monitor {
    pub fn configure(&self, threshold_ms: i64) {
        self.threshold_ms.store(threshold_ms.max(0) as u64, Relaxed);
    }

    pub fn threshold_ms(&self) -> u64 {
        self.threshold_ms.load(Relaxed)
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.threshold_ms.load(Relaxed) != 0
    }

    /// A clock reading to time an operation with, when the monitor is on
    /// (Redis's latencyStartMonitor).
    #[inline]
    pub fn start(&self) -> Option<Instant> {
        self.enabled().then(Instant::now)
    }

    /// Ends what [`Monitor::start`] timed (latencyEndMonitor +
    /// latencyAddSampleIfNeeded).
    #[inline]
    pub fn end(&self, event: &str, started: Option<Instant>) {
        if let Some(t) = started {
            self.add_if_needed(event, t.elapsed());
        }
    }

    /// Records `event` if `took` reaches the threshold.
    #[inline]
    pub fn add_if_needed(&self, event: &str, took: Duration) {
        self.add_ms_if_needed(event, took.as_millis() as u64);
    }

    #[inline]
    pub fn add_us_if_needed(&self, event: &str, us: u64) {
        self.add_ms_if_needed(event, us / 1000);
    }

    #[inline]
    pub fn add_ms_if_needed(&self, event: &str, ms: u64) {
        let t = self.threshold_ms.load(Relaxed);
        if t != 0 && ms >= t {
            self.add(event, ms);
        }
    }

    /// latencyAddSample: one sample per second per event, the highest.
    #[cold]
    pub fn add(&self, event: &str, ms: u64) {
        let now = unix_secs();
        let mut events = self.events.lock();
        match events.iter_mut().find(|(e, _)| e == event) {
            Some((_, s)) => s.add(now, ms),
            None => {
                let mut s = Series::new();
                s.add(now, ms);
                events.push((event.to_string(), s));
            }
        }
    }

    /// LATENCY RESET: every event (`None`) or those named (case does not
    /// matter); how many were reset.
    pub fn reset(&self, event: Option<&[u8]>) -> usize {
        let mut events = self.events.lock();
        let before = events.len();
        match event {
            None => events.clear(),
            Some(name) => events.retain(|(e, _)| !e.as_bytes().eq_ignore_ascii_case(name)),
        }
        before - events.len()
    }

    /// Every event and its series (LATENCY LATEST, DOCTOR).
    pub fn snapshot(&self) -> Vec<(String, Series)> {
        self.events.lock().clone()
    }

    /// One event's series (the name as recorded: case matters).
    pub fn series(&self, event: &[u8]) -> Option<(String, Series)> {
        self.events
            .lock()
            .iter()
            .find(|(e, _)| e.as_bytes() == event)
            .cloned()
    }
}

/// What analyzeLatencyForEvent computes from an event's samples.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub samples: u64,
    pub avg: u64,
    pub min: u64,
    pub max: u64,
    /// Mean absolute deviation from the average.
    pub mad: u64,
    /// Seconds from the oldest sample to now (at least 1).
    pub period: u64,
}

pub fn analyze(series: &Series, now: u64) -> Stats {
    let samples = series.samples();
    let mut st = Stats::default();
    if samples.is_empty() {
        return st;
    }
    st.samples = samples.len() as u64;
    st.min = samples.iter().map(|s| s.latency).min().unwrap_or(0);
    st.max = samples.iter().map(|s| s.latency).max().unwrap_or(0);
    let sum: u64 = samples.iter().map(|s| s.latency).sum();
    st.avg = sum / st.samples;
    let oldest = samples.iter().map(|s| s.time).min().unwrap_or(now);
    st.period = now.saturating_sub(oldest).max(1);
    let dev: u64 = samples.iter().map(|s| st.avg.abs_diff(s.latency)).sum();
    st.mad = dev / st.samples;
    st
}

/// What the report needs to know of the configuration.
pub struct ReportConfig {
    pub threshold_ms: u64,
    /// `slowlog-log-slower-than`.
    pub slowlog_slower_than: i64,
    pub appendfsync_always: bool,
    pub hz: u64,
}

/// LATENCY DOCTOR's text (Redis's createLatencyReport). The advices on
/// fork and transparent huge pages are left out: keel does not fork, and
/// does not inspect its huge pages.
pub fn report(events: &[(String, Series)], cfg: &ReportConfig, now: u64) -> String {
    let mut r = String::new();
    if events.is_empty() && cfg.threshold_ms == 0 {
        r.push_str("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n");
        return r;
    }
    #[derive(Default)]
    struct Advise {
        slowlog_enabled: bool,
        slowlog_tuning: bool,
        slowlog_inspect: bool,
        disk_contention: bool,
        scheduler: bool,
        data_writeback: bool,
        no_appendfsync: bool,
        local_disk: bool,
        ssd: bool,
        write_load_info: bool,
        hz: bool,
        large_objects: bool,
        mass_eviction: bool,
        relax_fsync_policy: bool,
    }
    let mut a = Advise::default();
    let mut advices = 0;
    for (n, (event, series)) in events.iter().enumerate() {
        if n == 0 {
            r.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
        }
        let st = analyze(series, now);
        let _ = write!(
            r,
            "{}. {}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
            n + 1,
            event,
            st.samples,
            st.avg,
            st.mad,
            st.period as f64 / st.samples.max(1) as f64,
            series.max
        );
        let is = |name: &str| event.eq_ignore_ascii_case(name);
        if is("command") {
            if cfg.slowlog_slower_than < 0 {
                a.slowlog_enabled = true;
                advices += 1;
            } else if cfg.slowlog_slower_than / 1000 > cfg.threshold_ms as i64 {
                a.slowlog_tuning = true;
                advices += 1;
            }
            a.slowlog_inspect = true;
            a.large_objects = true;
            advices += 2;
        }
        if is("fast-command") {
            a.scheduler = true;
            advices += 1;
        }
        if is("aof-write-pending-fsync") {
            a.local_disk = true;
            a.disk_contention = true;
            a.ssd = true;
            a.data_writeback = true;
            advices += 4;
        }
        if is("aof-write-active-child") {
            a.no_appendfsync = true;
            a.data_writeback = true;
            a.ssd = true;
            advices += 3;
        }
        if is("aof-write-alone") {
            a.local_disk = true;
            a.data_writeback = true;
            a.ssd = true;
            advices += 3;
        }
        if is("aof-fsync-always") {
            a.relax_fsync_policy = true;
            advices += 1;
        }
        if is("aof-fstat") || is("rdb-unlink-temp-file") {
            a.disk_contention = true;
            a.local_disk = true;
            advices += 2;
        }
        if is("aof-rewrite-diff-write") || is("aof-rename") {
            a.write_load_info = true;
            a.data_writeback = true;
            a.ssd = true;
            a.local_disk = true;
            advices += 4;
        }
        if is("expire-cycle") {
            a.hz = true;
            a.large_objects = true;
            advices += 2;
        }
        if is("eviction-del") {
            a.large_objects = true;
            advices += 1;
        }
        if is("eviction-cycle") {
            a.mass_eviction = true;
            advices += 1;
        }
        r.push('\n');
    }
    if events.is_empty() && advices == 0 {
        r.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
        return r;
    }
    if advices == 0 {
        r.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
        return r;
    }
    r.push_str("\nI have a few advices for you:\n\n");
    let threshold_us = cfg.threshold_ms.saturating_mul(1000);
    if a.slowlog_enabled {
        let _ = writeln!(r, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {threshold_us}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.");
    }
    if a.slowlog_tuning {
        let _ = writeln!(r, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {threshold_us}'.");
    }
    if a.slowlog_inspect {
        r.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
    }
    if a.scheduler {
        r.push_str("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n");
    }
    if a.local_disk {
        r.push_str("- It is strongly advised to use local disks for persistence, especially if you are using AOF. Remote disks provided by platform-as-a-service providers are known to be slow.\n");
    }
    if a.ssd {
        r.push_str("- SSD disks are able to reduce fsync latency, and total time needed for snapshotting and AOF log rewriting (resulting in smaller memory usage and smaller final AOF rewrite buffer flushes). With extremely high write load SSD disks can be a good option. However Redis should perform reasonably with high load using normal disks. Use this advice as a last resort.\n");
    }
    if a.data_writeback {
        r.push_str("- Mounting ext3/4 filesystems with data=writeback can provide a performance boost compared to data=ordered, however this mode of operation provides less guarantees, and sometimes it can happen that after a hard crash the AOF file will have a half-written command at the end and will require to be repaired before Redis restarts.\n");
    }
    if a.disk_contention {
        r.push_str("- Try to lower the disk contention. This is often caused by other disk intensive processes running in the same computer (including other Redis instances).\n");
    }
    if a.no_appendfsync {
        r.push_str("- Assuming from the point of view of data safety this is viable in your environment, you could try to enable the 'no-appendfsync-on-rewrite' option, so that fsync will not be performed while there is a child rewriting the AOF file or producing an RDB file (the moment where there is high disk contention).\n");
    }
    if a.relax_fsync_policy && cfg.appendfsync_always {
        r.push_str("- Your fsync policy is set to 'always'. It is very hard to get good performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n");
    }
    if a.write_load_info {
        r.push_str("- Latency during the AOF atomic rename operation or when the final difference is flushed to the AOF file at the end of the rewrite, sometimes is caused by very high write load, causing the AOF buffer to get very large. If possible try to send less commands to accomplish the same work, or use Lua scripts to group multiple operations into a single EVALSHA call.\n");
    }
    if a.hz && cfg.hz < 100 {
        r.push_str("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n");
    }
    if a.large_objects {
        r.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
    }
    if a.mass_eviction {
        r.push_str("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n");
    }
    r
}

/// Columns of LATENCY GRAPH (LATENCY_GRAPH_COLS).
const GRAPH_COLS: usize = 80;
/// Rows of the chart.
const GRAPH_ROWS: usize = 4;

/// LATENCY GRAPH's text (latencyCommandGenSparkeline): the header, a
/// separator, then the samples as a filled sparkline with, under each,
/// how long ago it was (s, m, h or d), written downwards.
pub fn graph(event: &str, series: &Series, now: u64) -> String {
    let samples = series.samples();
    let (mut min, mut max) = (0, 0);
    let mut seq = Vec::with_capacity(samples.len());
    for (i, s) in samples.iter().enumerate() {
        if i == 0 {
            (min, max) = (s.latency, s.latency);
        } else {
            max = max.max(s.latency);
            min = min.min(s.latency);
        }
        let elapsed = now.saturating_sub(s.time);
        let label = if elapsed < 60 {
            format!("{elapsed}s")
        } else if elapsed < 3600 {
            format!("{}m", elapsed / 60)
        } else if elapsed < 3600 * 24 {
            format!("{}h", elapsed / 3600)
        } else {
            format!("{}d", elapsed / (3600 * 24))
        };
        seq.push((s.latency as f64, label));
    }
    let mut g = format!(
        "{event} - high {max} ms, low {min} ms (all time high {} ms)\n",
        series.max
    );
    g.push_str(&"-".repeat(GRAPH_COLS));
    g.push('\n');
    sparkline(&mut g, &seq, GRAPH_COLS, GRAPH_ROWS);
    g
}

/// sparkline.c's sparklineRender with SPARKLINE_FILL: the samples in
/// chunks of `columns`, each `rows` high, labels below after one blank
/// line.
fn sparkline(out: &mut String, seq: &[(f64, String)], columns: usize, rows: usize) {
    const FILL: [u8; 3] = *b"_o#";
    let levels = FILL.len();
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for (i, (v, _)) in seq.iter().enumerate() {
        if i == 0 {
            (lo, hi) = (*v, *v);
        } else if *v < lo {
            lo = *v;
        } else if *v > hi {
            hi = *v;
        }
    }
    let labels = seq.iter().any(|(_, l)| !l.is_empty());
    let mut start = 0;
    while start < seq.len() {
        let part = &seq[start..seq.len().min(start + columns)];
        if start != 0 {
            out.push('\n');
        }
        let mut relmax = hi - lo;
        if relmax == 0.0 {
            relmax = 1.0;
        }
        let steps = (levels * rows) as i64;
        let mut row = 0;
        loop {
            let mut more = false;
            let mut chars = vec![b' '; part.len()];
            for (j, (v, label)) in part.iter().enumerate() {
                let relval = v - lo;
                // As the C: the product truncated, then divided.
                let mut step = (((relval * steps as f64) as i64) as f64 / relmax) as i64;
                step = step.clamp(0, steps - 1);
                if row < rows {
                    let idx = step - ((rows - row - 1) * levels) as i64;
                    more = true;
                    if (0..levels as i64).contains(&idx) {
                        chars[j] = FILL[idx as usize];
                    } else if idx >= levels as i64 {
                        chars[j] = b'|';
                    }
                } else {
                    // One blank line between the chart and the labels.
                    if labels && row - rows < 1 {
                        more = true;
                        break;
                    }
                    let at = row - rows - 1;
                    if let Some(&c) = label.as_bytes().get(at) {
                        more = true;
                        chars[j] = c;
                    }
                }
            }
            if !more {
                break;
            }
            row += 1;
            out.push_str(&String::from_utf8_lossy(&chars));
            out.push('\n');
        }
        start += columns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_same_second_keeps_max() {
        let mut s = Series::new();
        s.add(100, 5);
        s.add(100, 3);
        s.add(100, 9);
        s.add(101, 2);
        assert_eq!(
            s.samples(),
            vec![
                Sample {
                    time: 100,
                    latency: 9
                },
                Sample {
                    time: 101,
                    latency: 2
                }
            ]
        );
        assert_eq!(s.max, 9);
        assert_eq!(s.latest().latency, 2);
        for t in 0..200 {
            s.add(1000 + t, 1);
        }
        assert_eq!(s.samples().len(), TS_LEN);
        assert_eq!(s.samples()[0].time, 1040);
    }

    #[test]
    fn latency_graph_as_redis() {
        // Redis 7.0.15 for one 30 ms sample, 0 s ago.
        let mut s = Series::new();
        s.add(50, 30);
        let g = graph("command", &s, 50);
        let want = format!(
            "command - high 30 ms, low 30 ms (all time high 30 ms)\n{}\n \n \n \n_\n \n0\ns\n",
            "-".repeat(80)
        );
        assert_eq!(g, want);
    }

    #[test]
    fn latency_graph_levels() {
        let mut s = Series::new();
        for (t, ms) in [(1, 10), (2, 20), (3, 40), (4, 100)] {
            s.add(t, ms);
        }
        let g = graph("x", &s, 4);
        let lines: Vec<&str> = g.lines().collect();
        assert_eq!(lines[2], "   #");
        assert_eq!(lines[3], "   |");
        assert_eq!(lines[4], "  o|");
        assert_eq!(lines[5], "_o||");
        assert_eq!(lines[6], "    ");
        assert_eq!(lines[7], "3210");
        assert_eq!(lines[8], "ssss");
    }

    #[test]
    fn latency_report_texts() {
        let cfg = ReportConfig {
            threshold_ms: 0,
            slowlog_slower_than: 10000,
            appendfsync_always: false,
            hz: 10,
        };
        assert!(report(&[], &cfg, 0).starts_with("I'm sorry, Dave"));
        let cfg = ReportConfig {
            threshold_ms: 1,
            ..cfg
        };
        assert!(report(&[], &cfg, 0).starts_with("Dave, no latency spike"));
        let mut s = Series::new();
        s.add(10, 30);
        let r = report(&[("command".to_string(), s)], &cfg, 10);
        assert!(r.starts_with("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n1. command: 1 latency spikes (average 30ms, mean deviation 0ms, period 1.00 sec). Worst all time event 30ms.\n\nI have a few advices for you:\n\n- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than 1000'.\n"), "{r}");
    }
}
