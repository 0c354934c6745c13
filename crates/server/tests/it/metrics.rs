//! The Prometheus endpoint (`metrics-port`): scraped over a plain TCP
//! socket, as a scraper would.

use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::*;

/// One HTTP/1.1 GET: (status, head, body).
fn get(port: u16, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("connect to the metrics port {port}: {e}"));
    s.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("a header/body split");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    (status, head.to_string(), body.to_string())
}

/// The samples of a scrape, by `name{labels}` as written.
fn scrape(port: u16) -> HashMap<String, f64> {
    let (status, head, body) = get(port, "/metrics");
    assert_eq!(status, 200, "{head}");
    check_exposition(&body);
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), parse_value(v).unwrap())
        })
        .collect()
}

fn value(m: &HashMap<String, f64>, key: &str) -> f64 {
    *m.get(key)
        .unwrap_or_else(|| panic!("no sample {key} in the scrape"))
}

fn parse_value(v: &str) -> Option<f64> {
    match v {
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        v => v.parse().ok(),
    }
}

/// Scrapes until `done` holds (the server applies some changes, such as a
/// closed connection, after the client moved on).
fn scrape_until(port: u16, what: &str, done: impl Fn(&HashMap<String, f64>) -> bool) {
    for _ in 0..2000 {
        if done(&scrape(port)) {
            return;
        }
        std::thread::yield_now();
    }
    panic!("the scrape never showed {what}");
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

/// The text exposition format 0.0.4, strictly: every family has HELP then
/// TYPE before its samples, appears once, counters end in `_total`, every
/// sample belongs to the family above it, labels are well formed and
/// escaped, values are numbers. Returns the family names.
fn check_exposition(body: &str) -> BTreeSet<String> {
    assert!(body.ends_with('\n'), "the page ends with a line feed");
    let mut families = BTreeSet::new();
    let mut current: Option<(String, String)> = None;
    let mut help: Option<String> = None;
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, _) = rest.split_once(' ').expect("HELP name text");
            assert!(is_name(name), "{line}");
            assert!(families.insert(name.to_string()), "{name} twice");
            help = Some(name.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert_eq!(help.as_deref(), Some(name), "HELP before TYPE: {line}");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            if kind == "counter" {
                assert!(name.ends_with("_total"), "counter {name} ends in _total");
            }
            current = Some((name.to_string(), kind.to_string()));
            continue;
        }
        assert!(!line.starts_with('#'), "stray comment {line}");
        let (family, kind) = current
            .as_ref()
            .unwrap_or_else(|| panic!("{line}: no TYPE"));
        let name_end = line.find(['{', ' ']).unwrap_or_else(|| panic!("{line}"));
        let name = &line[..name_end];
        let ok_name = if kind == "histogram" {
            ["_bucket", "_sum", "_count"]
                .iter()
                .any(|s| name.strip_suffix(s) == Some(family))
        } else {
            name == family
        };
        assert!(ok_name, "sample {name} under family {family}");
        let mut rest = &line[name_end..];
        if let Some(labels) = rest.strip_prefix('{') {
            // name="value" pairs, values escaped (\\, \", \n only).
            let mut chars = labels.char_indices().peekable();
            loop {
                let start = chars.peek().map(|(i, _)| *i).unwrap();
                let eq = labels[start..].find('=').unwrap() + start;
                assert!(is_name(&labels[start..eq]), "{line}");
                while chars.peek().is_some_and(|(i, _)| *i <= eq) {
                    chars.next();
                }
                assert_eq!(chars.next().map(|c| c.1), Some('"'), "{line}");
                loop {
                    match chars.next().map(|c| c.1) {
                        Some('\\') => {
                            let e = chars.next().map(|c| c.1);
                            assert!(matches!(e, Some('\\' | '"' | 'n')), "{line}");
                        }
                        Some('"') => break,
                        Some('\n') | None => panic!("unterminated label in {line}"),
                        Some(_) => {}
                    }
                }
                match chars.next() {
                    Some((_, ',')) => continue,
                    Some((i, '}')) => {
                        rest = &labels[i + 1..];
                        break;
                    }
                    other => panic!("{line}: {other:?} after a label"),
                }
            }
        }
        let v = rest.strip_prefix(' ').unwrap_or_else(|| panic!("{line}"));
        assert!(parse_value(v).is_some(), "value of {line}");
    }
    families
}

#[test]
fn counters_and_gauges_follow_traffic() {
    let (s, mp) = Server::keel_with_metrics(&[]);
    let before = scrape(mp);
    let mut r = s.raw();
    const N: usize = 25;
    for i in 0..N {
        assert_eq!(r.cmd(&["SET", &format!("k{i}"), "v"]), b"+OK\r\n");
    }
    r.cmd(&["SET", "volatile", "v", "EX", "1000"]);
    r.cmd(&["GET", "k0"]);
    r.cmd(&["GET", "missing"]);
    r.cmd(&["SELECT", "3"]);
    r.cmd(&["SET", "in3", "x"]);
    r.cmd(&["INCR", "in3"]);
    r.cmd(&["CONFIG", "GET", "maxmemory"]);
    let after = scrape(mp);
    let set = "redis_commands_total{cmd=\"set\"}";
    assert_eq!(
        value(&after, set) - before.get(set).copied().unwrap_or(0.0),
        (N + 2) as f64
    );
    assert_eq!(
        value(&after, "redis_commands_total{cmd=\"config|get\"}"),
        1.0
    );
    assert_eq!(
        value(&after, "redis_commands_failed_calls_total{cmd=\"incr\"}"),
        1.0
    );
    assert_eq!(
        value(&after, "redis_commands_rejected_calls_total{cmd=\"set\"}"),
        0.0
    );
    assert!(value(&after, "redis_commands_duration_seconds_total{cmd=\"set\"}") > 0.0);
    assert_eq!(value(&after, "redis_db_keys{db=\"db0\"}"), (N + 1) as f64);
    assert_eq!(value(&after, "redis_db_keys_expiring{db=\"db0\"}"), 1.0);
    assert_eq!(value(&after, "redis_db_keys{db=\"db3\"}"), 1.0);
    assert_eq!(value(&after, "redis_db_keys{db=\"db15\"}"), 0.0);
    assert_eq!(value(&after, "redis_keyspace_hits_total"), 1.0);
    assert_eq!(value(&after, "redis_keyspace_misses_total"), 1.0);
    assert!(
        value(&after, "redis_net_input_bytes_total")
            > value(&before, "redis_net_input_bytes_total")
    );
    assert!(
        value(&after, "redis_connections_received_total")
            >= value(&before, "redis_connections_received_total") + 1.0
    );
    assert!(value(&after, "redis_memory_used_bytes") > 0.0);
    assert!(value(&after, "redis_memory_used_rss_bytes") > 0.0);
    assert!(
        value(&after, "redis_memory_used_peak_bytes") >= value(&after, "redis_memory_used_bytes")
    );
    assert_eq!(value(&after, "redis_memory_max_bytes"), 0.0);
    assert_eq!(
        value(&after, "redis_rdb_changes_since_last_save"),
        (N + 2) as f64
    );
    assert_eq!(value(&after, "redis_aof_enabled"), 0.0);
    assert_eq!(value(&after, "redis_connected_slaves"), 0.0);
    let info = String::from_utf8_lossy(&r.cmd(&["INFO", "server"])).into_owned();
    let run_id = info_field(&info, "run_id").unwrap();
    let key = format!(
        "redis_instance_info{{role=\"master\",redis_version=\"7.0.15\",keel_version=\"{}\",redis_build_id=\"0\",redis_mode=\"standalone\",os=\"linux\",maxmemory_policy=\"noeviction\",tcp_port=\"{}\",run_id=\"{run_id}\",process_id=\"{}\"}}",
        info_field(&info, "keel_version").unwrap(),
        s.port,
        s.pid()
    );
    assert_eq!(value(&after, &key), 1.0);
    let start = value(&after, "redis_start_time_seconds");
    assert!((start - unix_secs() as f64).abs() < 600.0, "{start}");

    // Connected clients: this one, two more, then one fewer.
    let mut a = s.raw();
    let mut b = s.raw();
    a.cmd(&["PING"]);
    b.cmd(&["PING"]);
    scrape_until(mp, "3 connected clients", |m| {
        value(m, "redis_connected_clients") == 3.0
    });
    drop(b);
    scrape_until(mp, "2 connected clients", |m| {
        value(m, "redis_connected_clients") == 2.0
    });
    // Blocked clients.
    a.send_cmd(&["BLPOP", "nolist", "0"]);
    scrape_until(mp, "a blocked client", |m| {
        value(m, "redis_blocked_clients") == 1.0
    });
    r.cmd(&["SELECT", "0"]);
    r.cmd(&["RPUSH", "nolist", "x"]);
    a.read_reply();
    scrape_until(mp, "no blocked client", |m| {
        value(m, "redis_blocked_clients") == 0.0
    });
}

#[test]
fn the_page_is_exposition_format_with_content_type() {
    let (s, mp) = Server::keel_with_metrics(&["--databases", "4"]);
    let mut r = s.raw();
    r.cmd(&["SET", "a", "1"]);
    r.cmd(&["CLIENT", "SETNAME", "x"]);
    let (status, head, body) = get(mp, "/metrics");
    assert_eq!(status, 200);
    assert!(
        head.lines()
            .any(|l| l
                .eq_ignore_ascii_case("content-type: text/plain; version=0.0.4; charset=utf-8")),
        "{head}"
    );
    let families = check_exposition(&body);
    for f in [
        "redis_commands_total",
        "redis_commands_duration_seconds_total",
        "redis_commands_failed_calls_total",
        "redis_commands_rejected_calls_total",
        "redis_connected_clients",
        "redis_blocked_clients",
        "redis_connections_received_total",
        "redis_rejected_connections_total",
        "redis_tracking_clients",
        "redis_db_keys",
        "redis_db_keys_expiring",
        "redis_keyspace_hits_total",
        "redis_keyspace_misses_total",
        "redis_expired_keys_total",
        "redis_evicted_keys_total",
        "redis_memory_used_bytes",
        "redis_memory_used_rss_bytes",
        "redis_memory_used_peak_bytes",
        "redis_mem_fragmentation_ratio",
        "redis_memory_max_bytes",
        "redis_aof_enabled",
        "redis_aof_current_size_bytes",
        "redis_aof_last_write_status",
        "redis_rdb_changes_since_last_save",
        "redis_rdb_last_bgsave_status",
        "redis_rdb_last_bgsave_duration_sec",
        "redis_rdb_last_save_timestamp_seconds",
        "redis_rdb_bgsave_in_progress",
        "keel_aof_fsyncs_total",
        "keel_aof_fsync_duration_seconds",
        "keel_aof_group_size",
        "redis_net_input_bytes_total",
        "redis_net_output_bytes_total",
        "redis_uptime_in_seconds",
        "redis_start_time_seconds",
        "redis_instance_info",
        "redis_connected_slaves",
        "redis_master_repl_offset",
    ] {
        assert!(families.contains(f), "no family {f}");
    }
    // One keys sample per database.
    assert_eq!(
        body.lines()
            .filter(|l| l.starts_with("redis_db_keys{"))
            .count(),
        4
    );
    // A query string is the same page.
    assert_eq!(get(mp, "/metrics?x=1").0, 200);
}

#[test]
fn other_paths_are_not_found() {
    let (_s, mp) = Server::keel_with_metrics(&[]);
    for path in ["/", "/metric", "/metrics/x", "/favicon.ico"] {
        assert_eq!(get(mp, path).0, 404, "{path}");
    }
}

#[test]
fn fsyncs_fill_the_histograms() {
    let (s, mp) = Server::keel_with_metrics(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut r = s.raw();
    for i in 0..20 {
        r.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    let m = scrape(mp);
    let fsyncs = value(&m, "keel_aof_fsyncs_total");
    assert!(fsyncs >= 1.0, "{fsyncs}");
    assert_eq!(value(&m, "redis_aof_enabled"), 1.0);
    assert!(value(&m, "redis_aof_current_size_bytes") > 0.0);
    assert_eq!(value(&m, "redis_aof_last_write_status"), 1.0);
    // Every fsync counted is in the histogram (nothing writes between the
    // scrape's reads of the two: the client waits for its replies).
    assert_eq!(value(&m, "keel_aof_fsync_duration_seconds_count"), fsyncs);
    assert_eq!(
        value(&m, "keel_aof_fsync_duration_seconds_bucket{le=\"+Inf\"}"),
        fsyncs
    );
    assert!(value(&m, "keel_aof_fsync_duration_seconds_sum") > 0.0);
    // Under always, each of the client's writes waited for one.
    assert!(value(&m, "keel_aof_group_size_count") >= 20.0);
}

/// TCP ports the process listens on (its sockets in LISTEN state).
fn listening_ports(pid: u32) -> BTreeSet<u16> {
    let mut inodes = BTreeSet::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            let t = target.to_string_lossy().into_owned();
            if let Some(n) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                inodes.insert(n.to_string());
            }
        }
    }
    let mut ports = BTreeSet::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for row in text.lines().skip(1) {
            let f: Vec<&str> = row.split_whitespace().collect();
            // local_address, st (0A: LISTEN), inode.
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                let port = f[1].rsplit(':').next().unwrap();
                ports.insert(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports
}

#[test]
fn port_zero_listens_on_nothing_more() {
    let s = Server::keel();
    let mut r = s.raw();
    let reply = String::from_utf8_lossy(&r.cmd(&["CONFIG", "GET", "metrics-port"])).into_owned();
    assert!(reply.ends_with("$1\r\n0\r\n"), "{reply}");
    assert_eq!(listening_ports(s.pid()), BTreeSet::from([s.port]));
    // The same check sees the endpoint when it is on.
    let (on, mp) = Server::keel_with_metrics(&[]);
    assert_eq!(listening_ports(on.pid()), BTreeSet::from([on.port, mp]));
}

#[test]
fn a_taken_metrics_port_stops_start_up() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let mp = taken.local_addr().unwrap().port();
    let dir = std::env::temp_dir().join(format!("keel-it-metrics-{}-{mp}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_keel-server"))
        .args(["--port", &free_port().to_string()])
        .args(["--metrics-port", &mp.to_string(), "--save", ""])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It exits by itself; the bound only keeps a broken build from hanging
    // the suite.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("keel-server started although the metrics port was taken");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!status.success(), "{status}");
    assert!(
        err.contains(&format!(
            "Could not create metrics HTTP listening socket 127.0.0.1:{mp}"
        )),
        "{err}"
    );
    drop(taken);
    let _ = std::fs::remove_dir_all(&dir);
}
