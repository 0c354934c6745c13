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
