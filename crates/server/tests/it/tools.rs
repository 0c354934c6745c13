//! Redis's own tools against keel: redis-benchmark, redis-cli (normal
//! invocation and --pipe). They must be installed (redis-tools).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::eqb;
use crate::harness::*;

/// The final text of each `-q` line (progress updates are overwritten
/// with `\r`).
fn quiet_lines(out: &str) -> Vec<String> {
    out.split('\n')
        .map(|l| l.rsplit('\r').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn benchmark(port: u16, extra: &[&str]) {
    require_tool("redis-benchmark", "redis-tools");
    let mut args = vec![
        "-p".to_string(),
        port.to_string(),
        "-q".into(),
        "-n".into(),
        "20000".into(),
        "-t".into(),
        "ping_inline,ping_mbulk,set,get,incr,mset".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = Command::new("redis-benchmark")
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run redis-benchmark");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "redis-benchmark {args:?} failed: {}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    let lines = quiet_lines(&stdout);
    for name in [
        "PING_INLINE",
        "PING_MBULK",
        "SET",
        "GET",
        "INCR",
        "MSET (10 keys)",
    ] {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no result line for {name} in {lines:?}"));
        assert!(
            line.contains(" requests per second"),
            "{name}: unexpected result line {line:?}"
        );
    }
    for text in [&stdout, &stderr] {
        let lower = text.to_ascii_lowercase();
        assert!(
            !text.contains("ERR") && !lower.contains("error"),
            "redis-benchmark {args:?} reported errors:\nstdout: {stdout}\nstderr: {stderr}"
        );
    }
}

#[test]
fn redis_benchmark_runs_clean() {
    let s = Server::keel();
    benchmark(s.port, &[]);
    benchmark(s.port, &["-r", "100000"]);
    // The benchmark's writes really happened: 20000 INCRs on one key
    // without -r, and random keys with -r.
    let mut r = s.raw();
    eqb!(r.cmd(&["GET", "counter:__rand_int__"]), b"$5\r\n20000\r\n");
    let n = match r.call(&["DBSIZE"]) {
        resp::Value::Integer(n) => n,
        other => panic!("DBSIZE {other:?}"),
    };
    assert!(n > 1000, "DBSIZE after redis-benchmark -r 100000: {n}");
}

#[test]
fn redis_cli_pipe_mode() {
    require_tool("redis-cli", "redis-tools");
    let s = Server::keel();
    let mut input = Vec::new();
    for i in 0..1000 {
        resp::encode::command(
            &mut input,
            &["SET".to_string(), format!("pipe:{i}"), format!("value {i}")],
        );
    }
    let mut child = Command::new("redis-cli")
        .args(["-p", &s.port.to_string(), "--pipe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run redis-cli");
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "redis-cli --pipe failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("errors: 0, replies: 1000"),
        "redis-cli --pipe output: {stdout}"
    );
    let mut r = s.raw();
    eqb!(r.cmd(&["DBSIZE"]), b":1000\r\n");
    eqb!(r.cmd(&["GET", "pipe:999"]), b"$9\r\nvalue 999\r\n");
}

#[test]
fn redis_cli_commands() {
    require_tool("redis-cli", "redis-tools");
    let s = Server::keel();
    let cli = |args: &[&str]| -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &s.port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run redis-cli");
        assert!(out.status.success(), "redis-cli {args:?}: {}", out.status);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(cli(&["set", "a", "b"]), "OK\n");
    assert_eq!(cli(&["get", "a"]), "b\n");
    assert_eq!(cli(&["get", "missing"]), "\n");
    assert_eq!(cli(&["incr", "n"]), "1\n");
    assert_eq!(cli(&["mget", "a", "n"]), "b\n1\n");
    assert_eq!(cli(&["ping"]), "PONG\n");
    assert_eq!(cli(&["--no-raw", "get", "missing"]), "(nil)\n");
    assert_eq!(cli(&["--no-raw", "incr", "n"]), "(integer) 2\n");
    assert_eq!(
        cli(&["--no-raw", "get"]),
        "(error) ERR wrong number of arguments for 'get' command\n"
    );
    // RESP3 (-3 runs HELLO 3 first).
    assert_eq!(cli(&["-3", "--no-raw", "get", "missing"]), "(nil)\n");
    assert_eq!(
        cli(&["-3", "--no-raw", "config", "get", "timeout"]),
        "1# \"timeout\" => \"0\"\n"
    );
    let info = cli(&["info", "server"]);
    assert!(info.contains("redis_version:7.0.15"), "{info}");
}

/// The same small dataset on a server: one key of each type.
fn fill_dataset(s: &Server) {
    let mut r = s.raw();
    for cmd in [
        &["RPUSH", "biglist", "a", "b", "c", "d", "e"][..],
        &["RPUSH", "smalllist", "a"],
        &["HSET", "bighash", "f1", "v1", "f2", "v2"],
        &["SADD", "set", "1", "2", "3"],
        &["ZADD", "zset", "1", "a", "2", "b"],
        &["XADD", "stream", "1-1", "a", "1"],
        &["SET", "str", "a string of some length"],
        &["SET", "short", "x"],
    ] {
        let reply = r.cmd(cmd);
        assert!(!reply.starts_with(b"-"), "{cmd:?}: {}", escape(&reply));
    }
}

/// redis-cli with `args` against `port`, to completion: its stdout, after
/// checking it exited cleanly and reported no error.
fn cli_mode(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run redis-cli");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stderr.is_empty() && !stdout.contains("ERR"),
        "redis-cli {args:?}: {}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    stdout
}

/// The report's summary (from "-------- summary -------"), with the
/// numbers of `bytes` replaced when `sizes` is false (MEMORY USAGE differs
/// between the two servers).
fn summary(report: &str, sizes: bool) -> Vec<String> {
    let Some(at) = report.find("-------- summary -------") else {
        panic!("no summary in {report}");
    };
    report[at..]
        .lines()
        .map(|l| {
            if sizes {
                return l.to_string();
            }
            // "... has 168 bytes", "1 lists with 168 bytes (16.67% of keys, avg size 168.00)"
            l.split(' ')
                .map(|w| {
                    if w.chars().next().is_some_and(|c| c.is_ascii_digit())
                        && !w.ends_with('%')
                        && l.contains("bytes")
                    {
                        "N"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn redis_cli_bigkeys_and_memkeys_as_against_redis() {
    require_tool("redis-cli", "redis-tools");
    let keel = Server::keel();
    let redis = Server::redis();
    fill_dataset(&keel);
    fill_dataset(&redis);
    let big = |port| summary(&cli_mode(port, &["--bigkeys"]), true);
    assert_eq!(big(keel.port), big(redis.port));
    let mem = |port| summary(&cli_mode(port, &["--memkeys"]), false);
    let (k, r) = (mem(keel.port), mem(redis.port));
    assert_eq!(k, r);
    assert!(
        k.iter()
            .any(|l| l.contains("Biggest   list found '\"biglist\"'")),
        "{k:?}"
    );
    // Sampled keys are those of the dataset.
    assert!(
        k.iter().any(|l| l == "Sampled 8 keys in the keyspace!"),
        "{k:?}"
    );
}

/// A redis-cli mode that runs until stopped: spawned line-buffered (its
/// stdout is a pipe), its lines read until `enough` says so, then killed.
fn cli_lines(port: u16, args: &[&str], enough: impl Fn(&[String]) -> bool) -> Vec<String> {
    use std::io::BufRead;
    let mut child = Command::new("stdbuf")
        .args(["-oL", "redis-cli", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run stdbuf redis-cli");
    let stdout = child.stdout.take().unwrap();
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        lines.push(line);
        if enough(&lines) {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(enough(&lines), "redis-cli {args:?} ended early: {lines:?}");
    lines
}

#[test]
fn redis_cli_stat_mode() {
    require_tool("redis-cli", "redis-tools");
    require_tool("stdbuf", "coreutils");
    let keel = Server::keel();
    let redis = Server::redis();
    fill_dataset(&keel);
    fill_dataset(&redis);
    // Two header lines, then a line a tick: read two ticks.
    let stat = |port| cli_lines(port, &["--stat", "-i", "0.1"], |l| l.len() >= 4);
    let (k, r) = (stat(keel.port), stat(redis.port));
    assert_eq!(k[..2], r[..2], "headers");
    for (line, other) in k[2..].iter().zip(&r[2..]) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let want: Vec<&str> = other.split_whitespace().collect();
        // keys, mem, clients, blocked, requests (+delta), connections.
        assert_eq!(cols.len(), want.len(), "{line:?} vs {other:?}");
        assert_eq!(cols[0], "8", "{line:?}");
        assert!(cols[1].ends_with(['K', 'M', 'G', 'B']), "{line:?}");
        assert_eq!(cols[2], "1", "{line:?}");
        assert_eq!(cols[3], "0", "{line:?}");
        assert!(
            cols[5].starts_with("(+") && cols[5].ends_with(')'),
            "{line:?}"
        );
    }
}

#[test]
fn redis_cli_latency_modes() {
    require_tool("redis-cli", "redis-tools");
    require_tool("stdbuf", "coreutils");
    let keel = Server::keel();
    // "min max avg samples", all numbers.
    let check = |line: &str| {
        let cols: Vec<&str> = line.split(' ').collect();
        assert_eq!(cols.len(), 4, "{line:?}");
        for c in cols {
            assert!(c.parse::<f64>().is_ok(), "{line:?}");
        }
    };
    // With its output not a terminal, --latency samples for a second and
    // prints one line.
    let out = cli_mode(keel.port, &["--latency"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    check(lines[0]);
    let out = cli_mode(keel.port, &["--latency", "--raw", "-i", "0.1"]);
    check(out.trim_end());
    // --latency-history goes on: a line a sample; read two.
    let lines = cli_lines(keel.port, &["--latency-history", "-i", "1"], |l| {
        l.len() >= 2
    });
    for l in &lines {
        check(l);
    }
}
