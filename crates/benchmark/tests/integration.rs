//! End-to-end checks of keel-benchmark against a real `redis-server` that
//! each test starts on a free port. redis-server must be installed (the
//! test script installs it): without it the tests fail, never skip.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

const BIN: &str = env!("CARGO_BIN_EXE_keel-benchmark");

fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("keel-bench-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    /// Starts redis-server on a free port (`{port}` in `extra` stands for
    /// it). Always `Some`: a missing redis-server is a failure.
    fn start(name: &str, extra: &[&str]) -> Option<Redis> {
        assert!(
            have("redis-server"),
            "redis-server is not installed (apt-get install redis-server)"
        );
        let cluster = extra.contains(&"--cluster-enabled");
        for _attempt in 0..20 {
            let port = free_port();
            if cluster && port > 55000 {
                continue; // the cluster bus needs port + 10000
            }
            let dir = scratch(name);
            let child = Command::new("redis-server")
                .args([
                    "--port",
                    &port.to_string(),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .args(["--dir", dir.to_str().unwrap()])
                .args(extra.iter().map(|a| a.replace("{port}", &port.to_string())))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            let mut r = Redis { child, port };
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(r);
                }
                if let Ok(Some(_)) = r.child.try_wait() {
                    break; // port taken meanwhile: retry with another
                }
                thread::sleep(Duration::from_millis(10));
            }
            let _ = r.child.kill();
        }
        panic!("could not start redis-server");
    }

    fn call(&self, argv: &[&str]) -> resp::Value {
        call(self.port, argv)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(port: u16, argv: &[&str]) -> resp::Value {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut out = Vec::new();
    resp::encode::command(&mut out, argv);
    s.write_all(&out).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        if let Some((v, _)) = resp::parse_reply(&buf).unwrap() {
            return v;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "server closed");
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn text(v: resp::Value) -> String {
    match v {
        resp::Value::Bulk(b) | resp::Value::Simple(b) => String::from_utf8(b).unwrap(),
        other => panic!("not text: {other:?}"),
    }
}

fn calls_of(r: &Redis, cmd: &str) -> u64 {
    let info = text(r.call(&["INFO", "commandstats"]));
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{cmd}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .map(|n| n.parse().unwrap())
        .unwrap_or(0)
}

fn bench(port: u16, args: &[&str]) -> Output {
    let out = Command::new(BIN)
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("run keel-benchmark");
    assert!(
        out.status.success(),
        "keel-benchmark {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json_of(path: &PathBuf) -> Json {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What a terminal would finally show of each line (text after the last \r).
fn visible_lines(s: &str) -> Vec<String> {
    s.lines()
        .map(|l| l.rsplit('\r').next().unwrap_or("").trim_end().to_string())
        .filter(|l| !l.trim().is_empty())
        .collect()
}

const DEFAULT_TESTS: [&str; 20] = [
    "PING_INLINE",
    "PING_MBULK",
    "SET",
    "GET",
    "INCR",
    "LPUSH",
    "RPUSH",
    "LPOP",
    "RPOP",
    "SADD",
    "HSET",
    "SPOP",
    "ZADD",
    "ZPOPMIN",
    "LPUSH (needed to benchmark LRANGE)",
    "LRANGE_100 (first 100 elements)",
    "LRANGE_300 (first 300 elements)",
    "LRANGE_500 (first 500 elements)",
    "LRANGE_600 (first 600 elements)",
    "MSET (10 keys)",
];

fn parse_quiet(line: &str) -> (String, f64, f64) {
    let (name, rest) = line.rsplit_once(": ").expect("quiet line has ': '");
    let rps = rest
        .strip_suffix(" msec")
        .and_then(|r| r.split_once(" requests per second, p50="))
        .expect("quiet line shape");
    (
        name.to_string(),
        rps.0.parse().unwrap(),
        rps.1.parse().unwrap(),
    )
}

fn parse_csv(out: &str) -> (String, Vec<(String, Vec<f64>)>) {
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().unwrap().to_string();
    let rows = lines
        .map(|l| {
            let fields: Vec<&str> = l.split("\",\"").collect();
            assert_eq!(fields.len(), 8, "csv row {l}");
            assert!(l.starts_with('"') && l.ends_with('"'), "quoted: {l}");
            let name = fields[0].trim_start_matches('"').to_string();
            let nums = fields[1..]
                .iter()
                .map(|f| f.trim_end_matches('"').parse::<f64>().unwrap())
                .collect();
            (name, nums)
        })
        .collect();
    (header, rows)
}

#[test]
fn every_default_test_runs_quiet() {
    let Some(r) = Redis::start("default", &[]) else {
        return;
    };
    let o = bench(r.port, &["-n", "2000", "-c", "10", "-q"]);
    let lines = visible_lines(&stdout(&o));
    let names: Vec<String> = lines.iter().map(|l| parse_quiet(l).0).collect();
    assert_eq!(names, DEFAULT_TESTS);
    for l in &lines {
        let (_, rps, p50) = parse_quiet(l);
        assert!(rps > 0.0 && p50 > 0.0, "{l}");
    }
}

#[test]
fn csv_and_quiet_shapes_match_redis_benchmark() {
    let Some(r) = Redis::start("shape", &[]) else {
        return;
    };
    let tests = "ping,set,get,lpush,lrange_100,mset";
    let ours = bench(r.port, &["-n", "1000", "-c", "5", "-t", tests, "--csv"]);
    let (header, rows) = parse_csv(&stdout(&ours));
    assert_eq!(
        header,
        "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\""
    );
    let ours_q = bench(r.port, &["-n", "1000", "-c", "5", "-t", tests, "-q"]);
    let ours_q: Vec<String> = visible_lines(&stdout(&ours_q))
        .iter()
        .map(|l| parse_quiet(l).0)
        .collect();
    if !have("redis-benchmark") {
        eprintln!("note: redis-benchmark not installed; comparing with the known 7.0 shape");
        let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
        assert_eq!(names[0], "PING_INLINE");
        assert_eq!(names, ours_q);
        return;
    }
    let theirs = Command::new("redis-benchmark")
        .args([
            "-p",
            &r.port.to_string(),
            "-n",
            "1000",
            "-c",
            "5",
            "-t",
            tests,
            "--csv",
        ])
        .output()
        .unwrap();
    let (h2, rows2) = parse_csv(&String::from_utf8_lossy(&theirs.stdout));
    assert_eq!(header, h2);
    let n1: Vec<&String> = rows.iter().map(|r| &r.0).collect();
    let n2: Vec<&String> = rows2.iter().map(|r| &r.0).collect();
    assert_eq!(n1, n2);
    let theirs_q = Command::new("redis-benchmark")
        .args([
            "-p",
            &r.port.to_string(),
            "-n",
            "1000",
            "-c",
            "5",
            "-t",
            tests,
            "-q",
        ])
        .output()
        .unwrap();
    let theirs_q: Vec<String> = visible_lines(&String::from_utf8_lossy(&theirs_q.stdout))
        .iter()
        .map(|l| parse_quiet(l).0)
        .collect();
    assert_eq!(ours_q, theirs_q);
}

#[test]
fn default_report_has_redis_benchmark_sections() {
    let Some(r) = Redis::start("report", &[]) else {
        return;
    };
    let o = stdout(&bench(r.port, &["-n", "3000", "-t", "set"]));
    let lines = visible_lines(&o);
    assert_eq!(lines[0], "====== SET ======");
    assert!(
        lines[1].starts_with("  3000 requests completed in "),
        "{}",
        lines[1]
    );
    for want in [
        "  50 parallel clients",
        "  3 bytes payload",
        "  keep alive: 1",
        "  host configuration \"save\":",
        "  host configuration \"appendonly\": no",
        "  multi-thread: no",
        "Latency by percentile distribution:",
        "Cumulative distribution of latencies:",
        "Summary:",
        "  latency summary (msec):",
        "          avg       min       p50       p95       p99       max",
    ] {
        assert!(
            lines.iter().any(|l| l == want.trim_end()),
            "missing {want:?} in\n{o}"
        );
    }
    assert!(lines
        .iter()
        .any(|l| l.starts_with("  throughput summary: ") && l.ends_with(" requests per second")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("100.000% <= ") && l.ends_with("(cumulative count 3000)")));
    assert!(
        o.contains("commandstats: server counted 3001 commands, expected 3001: OK"),
        "{o}"
    );
}

#[test]
fn rand_int_substitution_and_literal_keys() {
    let Some(r) = Redis::start("randint", &[]) else {
        return;
    };
    bench(
        r.port,
        &[
            "-n",
            "500",
            "-c",
            "5",
            "-r",
            "100",
            "-q",
            "set",
            "foo:__rand_int__",
            "bar",
        ],
    );
    let resp::Value::Array(keys) = r.call(&["KEYS", "foo:*"]) else {
        panic!()
    };
    assert!(!keys.is_empty() && keys.len() <= 100);
    for k in keys {
        let k = text(k);
        let digits = k.strip_prefix("foo:").unwrap();
        assert_eq!(digits.len(), 12, "{k}");
        assert!(digits.parse::<u64>().unwrap() < 100);
    }
    // Without -r the placeholder is sent literally, as redis-benchmark does.
    bench(r.port, &["-n", "20", "-c", "2", "-q", "-t", "set"]);
    assert_eq!(text(r.call(&["GET", "key:__rand_int__"])), "VXK");
}

#[test]
fn open_loop_holds_the_requested_rate() {
    let Some(r) = Redis::start("rate", &[]) else {
        return;
    };
    let dir = scratch("rate");
    let json = dir.join("rate.json");
    bench(
        r.port,
        &[
            "--rate",
            "2000",
            "--duration",
            "3",
            "-c",
            "10",
            "-t",
            "get",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let j = json_of(&json);
    let res = &j["results"][0];
    let rps = res["rps"].as_f64().unwrap();
    assert!((rps - 2000.0).abs() / 2000.0 < 0.02, "rps {rps}");
    let n = res["requests"].as_u64().unwrap();
    assert!((5880..=6120).contains(&n), "requests {n}");
    let d = res["duration_s"].as_f64().unwrap();
    assert!((2.95..3.2).contains(&d), "duration {d}");
}

/// A TCP proxy that forwards requests untouched and holds back chosen
/// replies (by 0-based index over all replies) for a while.
fn delaying_proxy(
    upstream: u16,
    delay_for: impl Fn(u64) -> Option<Duration> + Send + Sync + 'static,
) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let delay_for = Arc::new(delay_for);
    let counter = Arc::new(AtomicU64::new(0));
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            client.set_nodelay(true).unwrap();
            let server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
            server.set_nodelay(true).unwrap();
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while let Ok(n) = c_in.read(&mut buf) {
                    if n == 0 || s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
            let (mut s_in, mut c_out) = (server, client);
            let (delay_for, counter) = (delay_for.clone(), counter.clone());
            thread::spawn(move || {
                let mut pending = Vec::new();
                let mut buf = [0u8; 65536];
                while let Ok(n) = s_in.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    let mut pos = 0;
                    while let Ok(Some(len)) = resp::skip_reply(&pending[pos..]) {
                        let idx = counter.fetch_add(1, Ordering::SeqCst);
                        if let Some(d) = delay_for(idx) {
                            thread::sleep(d);
                        }
                        if c_out.write_all(&pending[pos..pos + len]).is_err() {
                            return;
                        }
                        pos += len;
                    }
                    pending.drain(..pos);
                }
            });
        }
    });
    port
}

#[test]
fn injected_delays_show_in_percentiles() {
    let Some(r) = Redis::start("delay", &[]) else {
        return;
    };
    // Every 50th reply is held 20 ms: 2% of requests are >= 20 ms.
    let proxy = delaying_proxy(r.port, |i| {
        (i % 50 == 49).then(|| Duration::from_millis(20))
    });
    let dir = scratch("delay");
    let json = dir.join("delay.json");
    bench(
        proxy,
        &[
            "-c",
            "1",
            "-n",
            "1000",
            "-t",
            "ping_mbulk",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let j = json_of(&json);
    let l = &j["results"][0]["latency_ms"];
    let (p50, p95, p99, max) = (
        l["p50"].as_f64().unwrap(),
        l["p95"].as_f64().unwrap(),
        l["p99"].as_f64().unwrap(),
        l["max"].as_f64().unwrap(),
    );
    assert!(p50 < 5.0, "p50 {p50}");
    assert!(p95 < 15.0, "p95 {p95}");
    assert!((20.0..60.0).contains(&p99), "p99 {p99}");
    assert!((20.0..100.0).contains(&max), "max {max}");
    // The spectrum shows the 2% step.
    let spectrum = j["results"][0]["percentiles"].as_array().unwrap();
    let at = |pct: f64| {
        spectrum
            .iter()
            .find(|p| p["percentile"].as_f64().unwrap() >= pct)
            .map(|p| p["latency_ms"].as_f64().unwrap())
            .unwrap()
    };
    assert!(at(96.0) < 15.0 && at(99.0) >= 20.0);
}

#[test]
fn open_loop_corrects_coordinated_omission() {
    let Some(r) = Redis::start("co", &[]) else {
        return;
    };
    // One 300 ms stall in a 1000 req/s open-loop run on one connection:
    // the ~300 requests that were due during the stall must all be charged
    // their wait, not just the one that was in flight.
    let proxy = delaying_proxy(r.port, |i| (i == 500).then(|| Duration::from_millis(300)));
    let dir = scratch("co");
    let json = dir.join("co.json");
    bench(
        proxy,
        &[
            "-c",
            "1",
            "--rate",
            "1000",
            "--duration",
            "2",
            "-t",
            "get",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let j = json_of(&json);
    let l = &j["results"][0]["latency_ms"];
    let (p50, p90, max) = (
        l["p50"].as_f64().unwrap(),
        l["p90"].as_f64().unwrap(),
        l["max"].as_f64().unwrap(),
    );
    assert!(max >= 290.0, "max {max}");
    assert!(
        p90 >= 80.0,
        "p90 {p90}: stall not spread over the delayed requests"
    );
    assert!(p50 < 5.0, "p50 {p50}");
}

#[test]
fn error_replies_are_counted_and_shown() {
    let Some(r) = Redis::start("errors", &[]) else {
        return;
    };
    r.call(&["SET", "notalist", "x"]);
    let dir = scratch("errors");
    let json = dir.join("e.json");
    let o = bench(
        r.port,
        &[
            "-n",
            "200",
            "-c",
            "4",
            "-e",
            "-q",
            "--json",
            json.to_str().unwrap(),
            "lpush",
            "notalist",
            "v",
        ],
    );
    assert!(
        stdout(&o).contains("Error from server: WRONGTYPE"),
        "{}",
        stdout(&o)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("200 of 200 replies were errors"));
    let j = json_of(&json);
    assert_eq!(j["results"][0]["errors"].as_u64(), Some(200));
}

#[test]
fn pipelining_threads_and_exact_counts() {
    let Some(r) = Redis::start("pipeline", &[]) else {
        return;
    };
    let before = calls_of(&r, "set");
    let dir = scratch("pipeline");
    let json = dir.join("p.json");
    bench(
        r.port,
        &[
            "-n",
            "10007",
            "-P",
            "16",
            "-c",
            "8",
            "--threads",
            "2",
            "-r",
            "1000",
            "-t",
            "set",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(calls_of(&r, "set") - before, 10007);
    let j = json_of(&json);
    let res = &j["results"][0];
    assert_eq!(res["requests"].as_u64(), Some(10007));
    assert_eq!(res["commandstats"]["ok"].as_bool(), Some(true));
    assert_eq!(res["client"]["threads"].as_u64(), Some(2));
    assert_eq!(j["servers"][0]["appendonly"].as_str(), Some("no"));
    assert!(j["servers"][0]["redis_version"].as_str().is_some());
    assert!(j["machine"]["cores"].as_u64().unwrap() >= 1);
}

#[test]
fn auth_dbnum_uri_resp3_tracking_keepalive() {
    let Some(r) = Redis::start("auth", &["--requirepass", "s3cret"]) else {
        return;
    };
    let port = r.port.to_string();
    let run = |args: &[&str]| {
        let o = Command::new(BIN).args(args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run(&[
        "-p", &port, "-a", "s3cret", "--dbnum", "3", "-n", "50", "-q", "set", "db3key", "v",
    ]);
    run(&[
        "-u",
        &format!("redis://:s3cret@127.0.0.1:{port}/4"),
        "-n",
        "50",
        "-q",
        "set",
        "db4key",
        "v",
    ]);
    run(&[
        "-p",
        &port,
        "-a",
        "s3cret",
        "-3",
        "--enable-tracking",
        "-n",
        "300",
        "-c",
        "3",
        "-q",
        "-t",
        "get",
    ]);
    run(&[
        "-p", &port, "-a", "s3cret", "-k", "0", "-n", "200", "-c", "4", "-q", "-t", "ping",
    ]);
    let mut s = TcpStream::connect(("127.0.0.1", r.port)).unwrap();
    let mut out = Vec::new();
    for c in [
        &["AUTH", "s3cret"][..],
        &["SELECT", "3"],
        &["EXISTS", "db3key"],
        &["SELECT", "4"],
        &["EXISTS", "db4key"],
    ] {
        resp::encode::command(&mut out, c);
    }
    s.write_all(&out).unwrap();
    thread::sleep(Duration::from_millis(100));
    let mut buf = [0u8; 1024];
    let n = s.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"+OK\r\n+OK\r\n:1\r\n+OK\r\n:1\r\n");
    // A wrong password fails like redis-benchmark does.
    let o = Command::new(BIN)
        .args(["-p", &port, "-a", "nope", "-n", "10", "-q"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("replied with error"));
}

#[test]
fn stdin_argument_mixed_workload_and_duration() {
    let Some(r) = Redis::start("mixed", &[]) else {
        return;
    };
    let mut child = Command::new(BIN)
        .args([
            "-p",
            &r.port.to_string(),
            "-n",
            "10",
            "-c",
            "1",
            "-q",
            "-x",
            "set",
            "fromstdin",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"payload-123")
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(text(r.call(&["GET", "fromstdin"])), "payload-123");

    let (s0, g0) = (calls_of(&r, "set"), calls_of(&r, "get"));
    bench(
        r.port,
        &[
            "--ratio",
            "1:3",
            "--key-pattern",
            "zipfian",
            "--key-maximum",
            "1000",
            "--data-size-range",
            "10-20",
            "-n",
            "4000",
            "-c",
            "4",
            "-q",
        ],
    );
    let (sets, gets) = (calls_of(&r, "set") - s0, calls_of(&r, "get") - g0);
    assert_eq!(sets + gets, 4000);
    assert!((950..=1050).contains(&sets), "sets {sets}");
    let resp::Value::Array(keys) = r.call(&["KEYS", "key:*"]) else {
        panic!()
    };
    assert!(keys.len() <= 1000);
    let len = match r.call(&["STRLEN", &text(keys[0].clone())]) {
        resp::Value::Integer(n) => n,
        v => panic!("{v:?}"),
    };
    assert!((10..=20).contains(&len));

    let dir = scratch("mixed");
    let json = dir.join("d.json");
    let t0 = Instant::now();
    bench(
        r.port,
        &[
            "--duration",
            "1",
            "--warmup",
            "0.5",
            "-t",
            "get",
            "-c",
            "4",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(t0.elapsed() < Duration::from_secs(4));
    let d = json_of(&json)["results"][0]["duration_s"].as_f64().unwrap();
    assert!((0.95..1.3).contains(&d), "duration {d}");
}

#[test]
fn json_report_and_compare() {
    let Some(a) = Redis::start("cmp-a", &[]) else {
        return;
    };
    let Some(b) = Redis::start("cmp-b", &[]) else {
        return;
    };
    let dir = scratch("cmp");
    let j1 = dir.join("base.json");
    let j2 = dir.join("new.json");
    let o = bench(
        a.port,
        &[
            "-n",
            "2000",
            "-t",
            "set,get",
            "-q",
            "--compare",
            &format!("127.0.0.1:{}", b.port),
            "--json",
            j1.to_str().unwrap(),
        ],
    );
    let s = stdout(&o);
    assert!(s.contains("Comparison: A = 127.0.0.1:"), "{s}");
    assert!(s.lines().any(|l| l.starts_with("SET ")), "{s}");
    bench(
        a.port,
        &[
            "-n",
            "2000",
            "-t",
            "set,get",
            "-q",
            "--json",
            j2.to_str().unwrap(),
        ],
    );
    let md = dir.join("out").join("report.md");
    let o = Command::new(BIN)
        .args([
            "report",
            j1.to_str().unwrap(),
            j2.to_str().unwrap(),
            "-o",
            md.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("| SET |"), "{text}");
    assert!(text.contains(" / base 127.0.0.1:"), "{text}");
    assert!(text.contains("report-latency.svg"));
    let svg = std::fs::read_to_string(dir.join("out").join("report-latency.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.matches("<polyline").count() == 6,
        "{svg}"
    );
}

/// A CA, and a server certificate for `localhost` and a client
/// certificate signed by it (PEM).
fn test_certificates(dir: &std::path::Path) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "keel-benchmark test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let cert = server.signed_by(&key, &ca_cert, &ca_key).unwrap();
    std::fs::write(dir.join("ca.crt"), ca_cert.pem()).unwrap();
    std::fs::write(dir.join("server.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
    let ckey = rcgen::KeyPair::generate().unwrap();
    let client = rcgen::CertificateParams::new(vec!["client".to_string()]).unwrap();
    let ccert = client.signed_by(&ckey, &ca_cert, &ca_key).unwrap();
    std::fs::write(dir.join("client.crt"), ccert.pem()).unwrap();
    std::fs::write(dir.join("client.key"), ckey.serialize_pem()).unwrap();
}

#[test]
fn tls_against_a_tls_only_server() {
    let dir = scratch("tls-certs");
    test_certificates(&dir);
    let f = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let (crt, key, ca) = (f("server.crt"), f("server.key"), f("ca.crt"));
    let (ccrt, ckey) = (f("client.crt"), f("client.key"));
    let r = Redis::start(
        "tls",
        &[
            "--port",
            "0",
            "--tls-port",
            "{port}",
            "--tls-cert-file",
            &crt,
            "--tls-key-file",
            &key,
            "--tls-ca-cert-file",
            &ca,
            "--tls-auth-clients",
            "yes",
        ],
    )
    .unwrap();
    let p = r.port.to_string();
    // Verified against the CA, by the certificate's name; the server
    // wants a client certificate too.
    let o = bench(
        r.port,
        &[
            "--tls",
            "--cacert",
            &ca,
            "--sni",
            "localhost",
            "--cert",
            &ccrt,
            "--key",
            &ckey,
            "-t",
            "set,get",
            "-n",
            "3000",
            "-q",
        ],
    );
    let lines = visible_lines(&stdout(&o));
    assert_eq!(lines.len(), 2, "{lines:?}");
    for (line, name) in lines.iter().zip(["SET", "GET"]) {
        let (test, rps, _) = parse_quiet(line);
        assert_eq!(test, name);
        assert!(rps > 0.0, "{line}");
    }
    // Pipelined, with --insecure (no verification), through -u rediss://.
    let o = Command::new(BIN)
        .args([
            "-u",
            &format!("rediss://127.0.0.1:{p}"),
            "--insecure",
            "--cert",
            &ccrt,
            "--key",
            &ckey,
            "-t",
            "incr",
            "-n",
            "5000",
            "-P",
            "16",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (test, _, _) = parse_quiet(&visible_lines(&stdout(&o))[0]);
    assert_eq!(test, "INCR");
    // The requests really reached the server, over TLS.
    let tls = Command::new("redis-cli")
        .args([
            "--tls",
            "--cacert",
            &ca,
            "--sni",
            "localhost",
            "--cert",
            &ccrt,
            "--key",
            &ckey,
            "-p",
            &p,
            "GET",
            "counter:__rand_int__",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&tls.stdout).trim(), "5000");
    // An unknown issuer (the system's CAs only) is refused, as a connection error.
    let o = Command::new(BIN)
        .args([
            "--tls",
            "-h",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "ping",
            "-n",
            "10",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("Could not connect to Redis at 127.0.0.1:{p}"))
            && err.contains("UnknownIssuer"),
        "{err}"
    );
    let o = Command::new(BIN).args(["--bogus"]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout)
        .starts_with("Invalid option \"--bogus\" or option argument missing"));
}

#[test]
fn cluster_mode_spreads_load_over_masters() {
    let mut nodes = Vec::new();
    for i in 0..3 {
        let name = format!("cluster{i}");
        let dir = scratch(&name);
        let conf = dir.join("nodes.conf");
        let _ = std::fs::remove_file(&conf);
        let Some(r) = Redis::start(
            &name,
            &[
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                conf.to_str().unwrap(),
            ],
        ) else {
            return;
        };
        nodes.push(r);
    }
    let ranges = [(0, 5460), (5461, 10922), (10923, 16383)];
    for (r, (a, b)) in nodes.iter().zip(ranges) {
        r.call(&["CLUSTER", "ADDSLOTSRANGE", &a.to_string(), &b.to_string()]);
    }
    for r in &nodes[1..] {
        nodes[0].call(&["CLUSTER", "MEET", "127.0.0.1", &r.port.to_string()]);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ok = nodes.iter().all(|r| {
            text(r.call(&["CLUSTER", "INFO"])).contains("cluster_state:ok")
                && matches!(r.call(&["CLUSTER", "SLOTS"]), resp::Value::Array(a) if a.len() == 3)
        });
        if ok {
            break;
        }
        assert!(Instant::now() < deadline, "cluster did not converge");
        thread::sleep(Duration::from_millis(50));
    }
    let dir = scratch("cluster");
    let json = dir.join("c.json");
    let o = bench(
        nodes[0].port,
        &[
            "--cluster",
            "-n",
            "3000",
            "-r",
            "10000",
            "-t",
            "set,get,mset",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(stdout(&o).contains("Cluster has 3 master nodes:"));
    let j = json_of(&json);
    for res in j["results"].as_array().unwrap() {
        assert_eq!(res["errors"].as_u64(), Some(0), "{res}");
        assert_eq!(res["commandstats"]["ok"].as_bool(), Some(true), "{res}");
    }
    for r in &nodes {
        match r.call(&["DBSIZE"]) {
            resp::Value::Integer(n) => assert!(n > 100, "node {} has {n} keys", r.port),
            v => panic!("{v:?}"),
        }
    }
    // A custom command with one fixed key goes to the key's owner only.
    let j2 = dir.join("c2.json");
    bench(
        nodes[0].port,
        &[
            "--cluster",
            "-n",
            "500",
            "-q",
            "--json",
            j2.to_str().unwrap(),
            "set",
            "fixedkey",
            "v",
        ],
    );
    assert_eq!(json_of(&j2)["results"][0]["errors"].as_u64(), Some(0));
}
