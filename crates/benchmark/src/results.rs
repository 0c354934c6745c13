//! The result model: one `TestResult` per (test, server) with every figure
//! keel-benchmark measured, and the `--json` file that holds them together
//! with the machine and server stamps. `report` reads the same structs back.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::engine::RunResult;
use crate::server::ServerStamp;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    pub avg: f64,
    pub min: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
    pub stdev: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PercentilePoint {
    pub percentile: f64,
    pub latency_ms: f64,
    pub count: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClientUsage {
    pub threads: usize,
    pub connections: u64,
    pub user_cpu_s: f64,
    pub sys_cpu_s: f64,
    /// Process CPU over wall time, in percent of one core.
    pub process_core_pct: f64,
    /// Busiest worker thread's CPU over wall time, percent of one core.
    pub max_thread_core_pct: f64,
    pub client_bound: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommandCheck {
    /// Increase of the server's commandstats calls over the test.
    pub server_delta: u64,
    /// What keel-benchmark sent: requests (warmup included) + handshakes +
    /// the control connection's own INFO.
    pub expected: u64,
    pub ok: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestResult {
    pub test: String,
    pub target: String,
    pub requests: u64,
    pub errors: u64,
    pub redirects: u64,
    pub duration_s: f64,
    pub rps: f64,
    pub latency_ms: LatencySummary,
    pub percentiles: Vec<PercentilePoint>,
    pub client: ClientUsage,
    pub commandstats: Option<CommandCheck>,
    pub error_samples: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    pub hostname: String,
    pub os: String,
}

impl Machine {
    pub fn detect() -> Machine {
        Machine {
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunConfig {
    pub clients: usize,
    pub requests: u64,
    pub pipeline: usize,
    pub datasize: usize,
    pub threads: usize,
    pub keepalive: bool,
    pub keyspacelen: Option<u64>,
    pub key_pattern: String,
    pub rate: Option<f64>,
    pub duration: Option<f64>,
    pub warmup: f64,
    pub ratio: Option<String>,
    pub data_size_range: Option<String>,
    pub resp3: bool,
    pub cluster: bool,
    pub command_line: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ResultsFile {
    pub tool: String,
    pub version: String,
    pub timestamp: u64,
    pub machine: Machine,
    pub config: RunConfig,
    pub servers: Vec<ServerStamp>,
    pub results: Vec<TestResult>,
}

pub fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The percentile spectrum redis-benchmark prints (HdrHistogram percentile
/// iteration, one tick per half distance), deduplicated the same way.
pub fn percentile_spectrum(h: &Histogram<u64>) -> Vec<PercentilePoint> {
    let mut out = Vec::new();
    let total = h.len();
    if total == 0 {
        return out;
    }
    let mut cum = 0u64;
    let mut prev: Option<u64> = None;
    for v in h.iter_quantiles(1) {
        cum += v.count_since_last_iteration();
        if prev != Some(cum) || cum == total {
            out.push(PercentilePoint {
                percentile: v.quantile_iterated_to() * 100.0,
                latency_ms: ms(v.value_iterated_to()),
                count: cum,
            });
        }
        prev = Some(cum);
    }
    out
}

pub fn summarize(h: &Histogram<u64>) -> LatencySummary {
    if h.is_empty() {
        return LatencySummary::default();
    }
    let p = |q: f64| ms(h.value_at_quantile(q));
    LatencySummary {
        avg: h.mean() / 1000.0,
        min: ms(h.min()),
        p50: p(0.50),
        p75: p(0.75),
        p90: p(0.90),
        p95: p(0.95),
        p99: p(0.99),
        p999: p(0.999),
        p9999: p(0.9999),
        max: ms(h.max()),
        stdev: h.stdev() / 1000.0,
    }
}

pub fn client_usage(r: &RunResult) -> ClientUsage {
    let wall = r.wall.max(1e-9);
    let max_thread = r.thread_cpu.iter().cloned().fold(0.0, f64::max);
    let max_thread_core_pct = 100.0 * max_thread / wall;
    ClientUsage {
        threads: r.threads,
        connections: r.connections,
        user_cpu_s: r.process_cpu.0,
        sys_cpu_s: r.process_cpu.1,
        process_core_pct: 100.0 * (r.process_cpu.0 + r.process_cpu.1) / wall,
        max_thread_core_pct,
        client_bound: max_thread_core_pct > 90.0,
    }
}

pub fn build(test: &str, target: &str, r: &RunResult, check: Option<CommandCheck>) -> TestResult {
    TestResult {
        test: test.to_string(),
        target: target.to_string(),
        requests: r.finished,
        errors: r.errors,
        redirects: r.redirects,
        duration_s: r.elapsed,
        rps: r.rps(),
        latency_ms: summarize(&r.hist),
        percentiles: percentile_spectrum(&r.hist),
        client: client_usage(r),
        commandstats: check,
        error_samples: r.error_samples.clone(),
    }
}
