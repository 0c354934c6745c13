//! keel-benchmark: a redis-benchmark-compatible load generator for keel.
//!
//! `main` owns orchestration only: parse options, stamp the server(s), build
//! the test list, run each test through `engine`, print through `output`,
//! and collect `results` for `--json`/`--compare`. `report` renders saved
//! results as markdown + SVG.

mod cli;
mod cluster;
mod conn;
mod engine;
mod output;
mod poll;
mod report;
mod results;
mod server;
mod tls;
mod workload;

use std::io::Read;
use std::sync::Arc;

use anyhow::{Context, Result};

use cli::{Config, Parsed, Target};
use output::{Progress, ReportCtx};
use results::{CommandCheck, ResultsFile, TestResult};
use server::{Control, ServerStamp};
use workload::Test;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let code = match cli::parse(&args) {
        Parsed::Help => {
            out!("{}", cli::USAGE);
            0
        }
        Parsed::Version => {
            out!(
                "keel-benchmark {} (redis-benchmark 7.0 compatible)\n",
                env!("CARGO_PKG_VERSION")
            );
            0
        }
        Parsed::Invalid(msg) => {
            out!("{msg}\n\n{}", cli::USAGE);
            1
        }
        Parsed::Report(args) => report::main(&args).unwrap_or_else(|e| {
            eprintln!("{e:#}");
            1
        }),
        Parsed::Run(cfg) => run(*cfg).unwrap_or_else(|e| {
            eprintln!("{e:#}");
            1
        }),
    };
    std::process::exit(code);
}

/// One server the tests run against, with its control connection(s).
struct Server {
    target: Target,
    /// One control connection per master (a single one outside cluster mode).
    controls: Vec<Control>,
    stamp: Option<ServerStamp>,
    node_stamps: Vec<ServerStamp>,
    cluster: Option<Arc<cluster::SlotMap>>,
}

fn open_server(cfg: &Config, target: &Target) -> Result<Server> {
    if cfg.cluster {
        let map = cluster::connect_and_fetch(target, cfg)?;
        out!("Cluster has {} master nodes:\n\n", map.masters.len());
        let mut controls = Vec::new();
        let mut node_stamps = Vec::new();
        for (i, m) in map.masters.iter().enumerate() {
            out!("Master {i}: {}\n", m.label());
            let mut c = Control::connect(m, cfg)?;
            node_stamps.push(ServerStamp::collect(&mut c, m));
            controls.push(c);
        }
        out!("\n");
        return Ok(Server {
            target: target.clone(),
            controls,
            stamp: node_stamps.first().cloned(),
            node_stamps,
            cluster: Some(Arc::new(map)),
        });
    }
    let mut ctrl = Control::connect(target, cfg)?;
    let stamp = ServerStamp::collect(&mut ctrl, target);
    if stamp.save.is_none() && stamp.appendonly.is_none() {
        eprintln!("WARN: could not fetch server CONFIG");
    }
    Ok(Server {
        target: target.clone(),
        controls: vec![ctrl],
        stamp: Some(stamp),
        node_stamps: Vec::new(),
        cluster: None,
    })
}

fn total_calls(s: &mut Server) -> Option<u64> {
    let mut sum = 0;
    for c in &mut s.controls {
        sum += c.total_calls()?;
    }
    Some(sum)
}

fn run(mut cfg: Config) -> Result<i32> {
    if cfg.tls.enabled {
        for w in tls::configure(&cfg.tls)? {
            eprintln!("keel-benchmark: {w}");
        }
    }
    if cfg.stdinarg {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("reading -x argument from stdin")?;
        cfg.command.push(buf);
    }
    let progress_on = cfg.progress.unwrap_or_else(poll::stdout_is_tty) && !cfg.csv;
    let mut servers = vec![open_server(&cfg, &cfg.target.clone())?];
    if let Some(b) = cfg.compare.clone() {
        servers.push(open_server(&cfg, &b)?);
    }
    if cfg.cluster && cfg.threads == 0 {
        cfg.threads = servers[0]
            .cluster
            .as_ref()
            .map(|m| m.masters.len())
            .unwrap_or(1);
    }
    if !cfg.keepalive {
        out!(
            "WARNING: keepalive disabled, you probably need 'echo 1 > /proc/sys/net/ipv4/tcp_tw_reuse' \
             for Linux and 'sudo sysctl -w net.inet.tcp.msl=1000' for Mac OS X in order to use a lot \
             of clients/requests\n"
        );
    }
    if cfg.idle {
        engine::idle(&cfg, &cfg.target, progress_on)?;
        return Ok(0);
    }
    if cfg.csv {
        out!("{}\n", output::CSV_HEADER);
    }
    let mut file = ResultsFile {
        tool: "keel-benchmark".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        timestamp: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        machine: results::Machine::detect(),
        config: run_config(&cfg),
        servers: servers.iter().filter_map(|s| s.stamp.clone()).collect(),
        results: Vec::new(),
    };
    let mut data_state: u32 = 1234;
    loop {
        let tests: Vec<Test> = if let Some(t) = workload::mixed_test(&cfg, &mut data_state) {
            vec![t]
        } else if !cfg.command.is_empty() {
            vec![workload::custom_test(&cfg, &cfg.command)]
        } else {
            workload::default_tests(&cfg, &mut data_state)
        };
        for test in &tests {
            let many = servers.len() > 1;
            for s in servers.iter_mut() {
                let title = if many {
                    format!("{} [{}]", test.title, s.target.label())
                } else {
                    test.title.clone()
                };
                let tr = run_one(&cfg, s, test, &title, progress_on)?;
                file.results.push(tr);
            }
        }
        if !cfg.csv {
            out!("\n");
        }
        if servers.len() > 1 {
            print_comparison(
                &file.results,
                &servers[0].target.label(),
                &servers[1].target.label(),
            );
        }
        if let Some(path) = &cfg.json {
            let json = serde_json::to_string_pretty(&file)?;
            std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
        }
        if !cfg.loop_forever {
            break;
        }
    }
    Ok(0)
}

fn run_one(
    cfg: &Config,
    s: &mut Server,
    test: &Test,
    title: &str,
    progress_on: bool,
) -> Result<TestResult> {
    let before = total_calls(s);
    let plan = engine::Plan {
        cfg,
        target: &s.target,
        test,
        cluster: s.cluster.clone(),
        progress: progress_on,
    };
    let mut progress = Progress::default();
    let r = engine::run(&plan, |finished, h, secs| {
        progress.tick(title, finished, h, secs)
    })?;
    let after = total_calls(s);
    let check = match (before, after) {
        (Some(b), Some(a)) => {
            // The "before" INFO itself is counted once per control connection.
            let expected = r.replies_total + r.handshake_cmds + s.controls.len() as u64;
            let delta = a.saturating_sub(b);
            Some(CommandCheck {
                server_delta: delta,
                expected,
                ok: delta == expected,
            })
        }
        _ => None,
    };
    let tr = results::build(title, &s.target.label(), &r, check);
    progress.clear();
    if cfg.csv {
        out!("{}\n", output::csv_row(title, &tr));
    } else if cfg.quiet {
        output::report_quiet(title, &tr);
    } else {
        let ctx = ReportCtx {
            cfg,
            title,
            datasize: test.datasize,
            stamp: s.stamp.as_ref(),
            cluster_nodes: s.cluster.as_ref().map(|_| s.node_stamps.as_slice()),
        };
        output::report_default(&ctx, &r, &tr);
    }
    output::warnings(title, &tr);
    Ok(tr)
}

fn print_comparison(results: &[TestResult], a: &str, b: &str) {
    out!("Comparison: A = {a}, B = {b} (alternating runs)\n");
    out!(
        "{:<40} {:>12} {:>12} {:>7} {:>9} {:>9} {:>9} {:>9}\n",
        "test",
        "rps A",
        "rps B",
        "B/A",
        "p50 A",
        "p50 B",
        "p99 A",
        "p99 B"
    );
    for pair in results.chunks(2) {
        if let [ra, rb] = pair {
            let name = ra.test.strip_suffix(&format!(" [{a}]")).unwrap_or(&ra.test);
            let ratio = if ra.rps > 0.0 { rb.rps / ra.rps } else { 0.0 };
            out!(
                "{:<40} {:>12.2} {:>12.2} {:>7.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}\n",
                name,
                ra.rps,
                rb.rps,
                ratio,
                ra.latency_ms.p50,
                rb.latency_ms.p50,
                ra.latency_ms.p99,
                rb.latency_ms.p99
            );
        }
    }
    out!("\n");
}

fn run_config(cfg: &Config) -> results::RunConfig {
    results::RunConfig {
        clients: cfg.clients,
        requests: cfg.requests,
        pipeline: cfg.pipeline,
        datasize: cfg.datasize,
        threads: cfg.threads,
        keepalive: cfg.keepalive,
        keyspacelen: cfg.randomkeys.then(|| cfg.keyspace()),
        key_pattern: format!("{:?}", cfg.key_pattern).to_lowercase(),
        rate: cfg.rate,
        duration: cfg.duration,
        warmup: cfg.warmup,
        ratio: cfg.ratio.map(|(s, g)| format!("{s}:{g}")),
        data_size_range: cfg.data_size_range.map(|(a, b)| format!("{a}-{b}")),
        resp3: cfg.resp3,
        cluster: cfg.cluster,
        command_line: redacted_args(),
    }
}

/// The command line for the JSON stamp, without passwords.
fn redacted_args() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut hide_next = false;
    for a in std::env::args() {
        if hide_next {
            out.push("(redacted)".into());
            hide_next = false;
            continue;
        }
        hide_next = a == "-a";
        if a.contains("://") && a.contains('@') {
            out.push("(redacted uri)".into());
        } else {
            out.push(a);
        }
    }
    out
}
