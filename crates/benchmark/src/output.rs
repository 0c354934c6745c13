//! Terminal output in redis-benchmark's exact shapes: the default report
//! block, `-q` lines, `--csv` rows, and the live `\r` progress line; plus
//! keel's extra checks (client CPU, server stamp, commandstats) and
//! warnings, which go to stderr so `-q`/`--csv` stay parse-identical.

use std::io::Write;

use hdrhistogram::Histogram;

use crate::cli::Config;
use crate::engine::RunResult;
use crate::results::{ms, TestResult};
use crate::server::ServerStamp;

/// Writes to stdout, ignoring a closed pipe (`| head`) instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

pub const CSV_HEADER: &str = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"";

/// The live line; remembers its width so the final report can blank it.
#[derive(Default)]
pub struct Progress {
    pub last_len: usize,
    prev_finished: u64,
    prev_secs: f64,
    overall: Option<Histogram<u64>>,
}

impl Progress {
    pub fn tick(&mut self, title: &str, finished: u64, interval: &Histogram<u64>, secs: f64) {
        let overall = self
            .overall
            .get_or_insert_with(|| crate::engine::new_histogram(3));
        let _ = overall.add(interval);
        let dt = (secs - self.prev_secs).max(1e-9);
        let inst = (finished.saturating_sub(self.prev_finished)) as f64 / dt;
        let total = if secs > 0.0 {
            finished as f64 / secs
        } else {
            0.0
        };
        self.prev_finished = finished;
        self.prev_secs = secs;
        let line = format!(
            "{title}: rps={inst:.1} (overall: {total:.1}) avg_msec={:.3} (overall: {:.3}) p99_msec={:.3}",
            interval.mean() / 1000.0,
            overall.mean() / 1000.0,
            ms(interval.value_at_quantile(0.99)),
        );
        self.last_len = line.len();
        let mut o = std::io::stdout().lock();
        let _ = write!(o, "{line}\r");
        let _ = o.flush();
    }

    /// Blanks the progress line (redis-benchmark's `"%*s\r"`).
    pub fn clear(&mut self) {
        if self.last_len > 0 {
            out!("{:width$}\r", "", width = self.last_len);
            self.last_len = 0;
        }
        self.prev_finished = 0;
        self.prev_secs = 0.0;
        self.overall = None;
    }
}

pub struct ReportCtx<'a> {
    pub cfg: &'a Config,
    pub title: &'a str,
    pub datasize: usize,
    pub stamp: Option<&'a ServerStamp>,
    pub cluster_nodes: Option<&'a [ServerStamp]>,
}

/// The default (verbose) report block.
pub fn report_default(ctx: &ReportCtx, r: &RunResult, tr: &TestResult) {
    let cfg = ctx.cfg;
    let mut s = String::new();
    s += &format!("====== {} ======\n", ctx.title);
    s += &format!(
        "  {} requests completed in {:.2} seconds\n",
        r.finished, r.elapsed
    );
    s += &format!("  {} parallel clients\n", cfg.clients);
    s += &format!("  {} bytes payload\n", ctx.datasize);
    s += &format!("  keep alive: {}\n", cfg.keepalive as i32);
    if let Some(nodes) = ctx.cluster_nodes {
        s += &format!("  cluster mode: yes ({} masters)\n", nodes.len());
        for (m, n) in nodes.iter().enumerate() {
            s += &format!("  node [{m}] configuration:\n");
            let save = n.save.clone().unwrap_or_default();
            s += &format!(
                "    save: {}\n",
                if save.is_empty() { "NONE" } else { &save }
            );
            s += &format!(
                "    appendonly: {}\n",
                n.appendonly.clone().unwrap_or_default()
            );
        }
    } else if let Some(st) = ctx.stamp {
        if st.save.is_some() || st.appendonly.is_some() {
            s += &format!(
                "  host configuration \"save\": {}\n",
                st.save.clone().unwrap_or_default()
            );
            s += &format!(
                "  host configuration \"appendonly\": {}\n",
                st.appendonly.clone().unwrap_or_default()
            );
        }
    }
    s += &format!(
        "  multi-thread: {}\n",
        if cfg.threads > 0 { "yes" } else { "no" }
    );
    if cfg.threads > 0 {
        s += &format!("  threads: {}\n", cfg.threads);
    }
    s += "\nLatency by percentile distribution:\n";
    for p in &tr.percentiles {
        s += &format!(
            "{:.3}% <= {:.3} milliseconds (cumulative count {})\n",
            p.percentile, p.latency_ms, p.count
        );
    }
    s += "\nCumulative distribution of latencies:\n";
    s += &cumulative_distribution(&r.hist);
    let l = &tr.latency_ms;
    s += "\nSummary:\n";
    s += &format!("  throughput summary: {:.2} requests per second\n", tr.rps);
    s += "  latency summary (msec):\n";
    s += &format!(
        "    {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "avg", "min", "p50", "p95", "p99", "max"
    );
    s += &format!(
        "    {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}\n",
        l.avg, l.min, l.p50, l.p95, l.p99, l.max
    );
    s += &keel_checks(ctx, tr);
    out!("{s}");
}

/// redis-benchmark's linear iteration: 0.1 ms buckets up to 2 ms, then 1 ms.
pub fn cumulative_distribution(h: &Histogram<u64>) -> String {
    let mut s = String::new();
    let total = h.len();
    if total == 0 {
        return s;
    }
    let rec: Vec<(u64, u64)> = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    let (mut idx, mut cum) = (0usize, 0u64);
    let (mut level, mut step) = (100u64, 100u64);
    let mut prev: Option<u64> = None;
    loop {
        while idx < rec.len() && rec[idx].0 <= level {
            cum += rec[idx].1;
            idx += 1;
        }
        if prev != Some(cum) || cum == total {
            s += &format!(
                "{:.3}% <= {:.3} milliseconds (cumulative count {})\n",
                100.0 * cum as f64 / total as f64,
                ms(level),
                cum
            );
        }
        prev = Some(cum);
        if cum >= total || idx >= rec.len() {
            break;
        }
        if level > 2000 {
            step = 1000;
        }
        level += step;
        // Jump over empty stretches (open-loop runs can see seconds).
        if step == 1000 && rec[idx].0 > level + step {
            let gap = (rec[idx].0 - level) / step;
            level += gap * step;
        }
    }
    s
}

fn keel_checks(ctx: &ReportCtx, tr: &TestResult) -> String {
    let mut s = String::from("\nClient and server checks (keel-benchmark):\n");
    let c = &tr.client;
    s += &format!(
        "  client cpu: {:.2}s user + {:.2}s sys, busiest of {} thread(s) at {:.0}% of a core\n",
        c.user_cpu_s, c.sys_cpu_s, c.threads, c.max_thread_core_pct
    );
    if let Some(st) = ctx.stamp {
        s += &format!("  server: {}\n", st.summary());
    }
    s += &format!(
        "  machine: {} cores\n",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    s += &format!("  errors: {}", tr.errors);
    if tr.redirects > 0 {
        s += &format!(" (redirects: {})", tr.redirects);
    }
    s += "\n";
    match &tr.commandstats {
        Some(chk) => {
            s += &format!(
                "  commandstats: server counted {} commands, expected {}: {}\n",
                chk.server_delta,
                chk.expected,
                if chk.ok { "OK" } else { "MISMATCH" }
            )
        }
        None => s += "  commandstats: not available\n",
    }
    let _ = ctx.cfg;
    s
}

pub fn report_quiet(title: &str, tr: &TestResult) {
    out!(
        "{}: {:.2} requests per second, p50={:.3} msec\n",
        title,
        tr.rps,
        tr.latency_ms.p50
    );
}

pub fn csv_row(title: &str, tr: &TestResult) -> String {
    let l = &tr.latency_ms;
    format!(
        "\"{}\",\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"",
        title.replace('"', "\"\""),
        tr.rps,
        l.avg,
        l.min,
        l.p50,
        l.p95,
        l.p99,
        l.max
    )
}

/// Warnings that make a result untrustworthy; stderr in every mode.
pub fn warnings(title: &str, tr: &TestResult) {
    let mut e = std::io::stderr().lock();
    if tr.client.client_bound {
        let _ = writeln!(
            e,
            "WARNING: {title}: a keel-benchmark thread used {:.0}% of a core: the client may be \
             the bottleneck (try --threads)",
            tr.client.max_thread_core_pct
        );
    }
    if let Some(chk) = &tr.commandstats {
        if !chk.ok {
            let _ = writeln!(
                e,
                "WARNING: {title}: server INFO commandstats grew by {} but keel-benchmark sent {} \
                 commands (requests + handshakes + 1 INFO): another client was active, or \
                 requests were lost/not counted",
                chk.server_delta, chk.expected
            );
        }
    }
    if tr.errors > 0 {
        let _ = writeln!(
            e,
            "WARNING: {title}: {} of {} replies were errors{}",
            tr.errors,
            tr.requests,
            tr.error_samples
                .first()
                .map(|m| format!(" (first: {m})"))
                .unwrap_or_default()
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::results::percentile_spectrum;

    #[test]
    fn cumulative_shape() {
        let mut h = crate::engine::new_histogram(3);
        for v in [50, 150, 150, 2500, 7000] {
            h.record(v).unwrap();
        }
        let s = cumulative_distribution(&h);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "20.000% <= 0.100 milliseconds (cumulative count 1)"
        );
        assert_eq!(
            lines[1],
            "60.000% <= 0.200 milliseconds (cumulative count 3)"
        );
        assert_eq!(
            lines[2],
            "80.000% <= 3.100 milliseconds (cumulative count 4)"
        );
        assert_eq!(
            lines[3],
            "100.000% <= 7.100 milliseconds (cumulative count 5)"
        );
        let p = percentile_spectrum(&h);
        assert_eq!(p.last().map(|p| p.count), Some(5));
        assert_eq!(p.first().map(|p| p.percentile), Some(0.0));
    }
}
