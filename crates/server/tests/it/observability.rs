//! What a server reports about itself: INFO's statistics (errorstats,
//! rejected and failed calls, latencystats, instantaneous rates, avg_ttl,
//! reads and writes), CLIENT LIST's buffers. Replies are compared with
//! redis-server's where they do not depend on timing.

use std::collections::BTreeSet;

use resp::Value;

use crate::eqb;
use crate::harness::*;

/// The lines of a section, without its header.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// `cmdstat_<name>`'s rejected_calls and failed_calls.
fn rejected_failed(commandstats: &str, name: &str) -> Option<(String, String)> {
    let line = info_field(commandstats, &format!("cmdstat_{name}"))?;
    let field = |f: &str| {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
            .unwrap_or("?")
            .to_string()
    };
    Some((field("rejected_calls"), field("failed_calls")))
}

/// The same errors on both servers: errorstats, total_error_replies,
/// total_commands_processed and the commands' rejected/failed counts
/// match line for line.
#[test]
fn errorstats_and_call_failures_match_redis() {
    let scenarios: &[&[&[&str]]] = &[
        &[&["SET", "s", "abc"], &["LPUSH", "s", "x"]],
        &[&["NOSUCHCOMMAND", "a"]],
        &[&["GET"]],
        &[&["CONFIG", "NOSUCH"]],
        &[&["MULTI"], &["INCR", "s"], &["EXEC"]],
        &[&["MULTI"], &["GET"], &["EXEC"]],
        &[&["MULTI"], &["EXEC", "x"], &["DISCARD"]],
        &[&["EVAL", "return redis.call('incr','s')", "0"]],
        &[&["EVAL", "return redis.pcall('incr','s')", "0"]],
        &[&["EVAL", "redis.pcall('incr','s') return 1", "0"]],
        &[&["EVAL", "return {err='MYERR boom'}", "0"]],
        &[&["EVAL", "return {1, {err='NESTED one'}}", "0"]],
        &[&["EVAL", "error('x')", "0"]],
        &[&["XADD", "st", "0-0", "f", "v"]],
    ];
    let keel = Server::keel();
    let redis = Server::redis();
    for scenario in scenarios {
        let mut seen = Vec::new();
        for s in [&keel, &redis] {
            let mut r = s.raw();
            r.call(&["SET", "s", "abc"]);
            r.call(&["CONFIG", "RESETSTAT"]);
            for argv in scenario.iter() {
                r.cmd(argv);
            }
            let errors = lines(&info(&mut r, "errorstats"));
            let stats = info(&mut r, "stats");
            let cmds = info(&mut r, "commandstats");
            let names = [
                "set", "lpush", "get", "incr", "exec", "eval", "xadd", "multi",
            ];
            let per_cmd: Vec<_> = names
                .iter()
                .map(|n| (n.to_string(), rejected_failed(&cmds, n)))
                .collect();
            seen.push((
                errors,
                info_field(&stats, "total_error_replies"),
                info_field(&stats, "total_commands_processed"),
                per_cmd,
            ));
        }
        assert_eq!(
            seen[0], seen[1],
            "keel (left) and redis (right) after {scenario:?}"
        );
    }
}

/// A command that blocks is one call however many times it is woken (a
/// write that does not serve it, the key's type changing, its group
/// destroyed), as Redis counts the request, not its runs: commandstats'
/// calls and failed_calls and errorstats match redis-server's.
#[test]
fn blocked_commands_count_once_as_redis() {
    let field = |line: &str, f: &str| {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
            .unwrap_or("?")
            .to_string()
    };
    /// The setup, the blocking request, what the other client sends, and
    /// the command's name in commandstats.
    type Scenario<'a> = (&'a [&'a str], &'a [&'a str], &'a [&'a [&'a str]], &'a str);
    let scenarios: &[Scenario] = &[
        (
            &["DEL", "l"],
            &["BLPOP", "l", "0"],
            &[&["SET", "l", "x"], &["DEL", "l"], &["RPUSH", "l", "a"]],
            "blpop",
        ),
        (
            &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                ">",
            ],
            &[&["XGROUP", "DESTROY", "s", "g"]],
            "xreadgroup",
        ),
    ];
    let keel = Server::keel();
    let redis = Server::redis();
    for (setup, request, writes, name) in scenarios {
        let mut seen = Vec::new();
        for s in [&keel, &redis] {
            let mut a = s.raw();
            let mut b = s.raw();
            a.call(&["FLUSHALL"]);
            a.cmd(setup);
            a.call(&["CONFIG", "RESETSTAT"]);
            b.send_cmd(request);
            wait_blocked(&mut a, 1);
            for w in writes.iter() {
                a.cmd(w);
            }
            let reply = b.read_reply();
            let cmds = info(&mut a, "commandstats");
            let line = info_field(&cmds, &format!("cmdstat_{name}")).unwrap_or_default();
            seen.push((
                String::from_utf8_lossy(&reply).into_owned(),
                field(&line, "calls"),
                field(&line, "failed_calls"),
                lines(&info(&mut a, "errorstats")),
            ));
        }
        assert_eq!(
            seen[0], seen[1],
            "keel (left) and redis (right): {request:?}"
        );
    }
}

/// latencystats: one line per command called, with the configured
/// percentiles, in microseconds with 3 decimals; `latency-tracking no`
/// stops recording; RESETSTAT clears.
#[test]
fn latencystats_follow_the_configuration() {
    for s in [Server::keel(), Server::redis()] {
        let mut r = s.raw();
        r.call(&["CONFIG", "RESETSTAT"]);
        for _ in 0..10 {
            r.call(&["SET", "k", "v"]);
        }
        let text = info(&mut r, "latencystats");
        let line = info_field(&text, "latency_percentiles_usec_set")
            .unwrap_or_else(|| panic!("{}: no set line in\n{text}", s.name));
        let keys: Vec<&str> = line
            .split(',')
            .map(|kv| kv.split('=').next().unwrap_or(""))
            .collect();
        assert_eq!(keys, ["p50", "p99", "p99.9"], "{}: {line}", s.name);
        for kv in line.split(',') {
            let v = kv.split('=').nth(1).unwrap_or("");
            let (_, decimals) = v.split_once('.').unwrap_or(("", ""));
            assert_eq!(decimals.len(), 3, "{}: {kv}", s.name);
            assert!(v.parse::<f64>().is_ok_and(|v| v > 0.0), "{}: {kv}", s.name);
        }
        // Not in the default sections, as Redis.
        assert!(info_field(&info(&mut r, "default"), "latency_percentiles_usec_set").is_none());
        eqb!(
            r.cmd(&[
                "CONFIG",
                "SET",
                "latency-tracking-info-percentiles",
                "0 99.99 100"
            ]),
            b"+OK\r\n"
        );
        let text = info(&mut r, "latencystats");
        let line = info_field(&text, "latency_percentiles_usec_set").unwrap_or_default();
        let keys: Vec<&str> = line
            .split(',')
            .map(|kv| kv.split('=').next().unwrap_or(""))
            .collect();
        assert_eq!(keys, ["p0", "p99.99", "p100"], "{}: {line}", s.name);
        r.call(&["CONFIG", "SET", "latency-tracking", "no"]);
        r.call(&["CONFIG", "RESETSTAT"]);
        r.call(&["GET", "k"]);
        let text = info(&mut r, "latencystats");
        assert!(
            info_field(&text, "latency_percentiles_usec_get").is_none(),
            "{}: {text}",
            s.name
        );
        assert!(
            info_field(&text, "latency_percentiles_usec_set").is_none(),
            "{}: RESETSTAT keeps {text}",
            s.name
        );
    }
}

/// Every field redis-server 7.0 prints in `INFO everything` is in keel's
/// (per-command, per-error and per-database lines aside: they depend on
/// what ran).
#[test]
fn info_has_every_field_of_redis() {
    fn fields(s: &Server) -> BTreeSet<String> {
        let mut r = s.raw();
        r.call(&["SET", "k", "v"]);
        r.call(&["GET"]);
        let text = info(&mut r, "everything");
        text.lines()
            .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
            .filter(|k| {
                let per_item = ["cmdstat_", "errorstat_", "latency_percentiles_usec_"]
                    .iter()
                    .any(|p| k.starts_with(p));
                let per_db = k.starts_with("db") && k[2..].chars().all(|c| c.is_ascii_digit());
                !per_item && !per_db
            })
            .collect()
    }
    fn headers(s: &Server) -> Vec<String> {
        let mut r = s.raw();
        info(&mut r, "everything")
            .lines()
            .filter(|l| l.starts_with('#'))
            .map(str::to_string)
            .collect()
    }
    let keel = Server::keel();
    let redis = Server::redis();
    let missing: Vec<String> = fields(&redis).difference(&fields(&keel)).cloned().collect();
    assert!(missing.is_empty(), "missing in keel's INFO: {missing:?}");
    // Redis's sections in Redis's order; keel's own sections last.
    let mut want = headers(&redis);
    want.push("# Keel".into());
    want.push("# Tiering".into());
    assert_eq!(headers(&keel), want);
}

/// instantaneous_ops_per_sec and the kbps rates are sampled while
/// traffic flows; reads and writes are counted per system call.
#[test]
fn instantaneous_rates_move_with_traffic() {
    let s = Server::keel();
    let mut r = s.raw();
    let reads_before = info_u64(&mut r, "stats", "total_reads_processed");
    let mut rounds = 0;
    loop {
        for _ in 0..200 {
            r.call(&["SET", "k", "v"]);
        }
        let text = info(&mut r, "stats");
        let ops: u64 = info_field(&text, "instantaneous_ops_per_sec")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let kbps: f64 = info_field(&text, "instantaneous_input_kbps")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        if ops > 0 && kbps > 0.0 {
            break;
        }
        rounds += 1;
        assert!(
            rounds < 10_000,
            "no instantaneous rate after {rounds} rounds:\n{text}"
        );
    }
    let reads = info_u64(&mut r, "stats", "total_reads_processed");
    let writes = info_u64(&mut r, "stats", "total_writes_processed");
    assert!(reads >= reads_before + 200, "{reads_before} → {reads}");
    assert!(writes >= 200, "{writes}");
    let text = info(&mut r, "clients");
    let recent: u64 = info_field(&text, "client_recent_max_input_buffer")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(recent > 0, "{text}");
}

/// avg_ttl estimates the keys' remaining time to live, from the active
/// expiry cycle's samples.
#[test]
fn avg_ttl_estimates_time_to_live() {
    let s = Server::keel_with(&["--hz", "100"]);
    let mut r = s.raw();
    for i in 0..100 {
        r.call(&["SET", &format!("k{i}"), "v", "EX", "1000"]);
    }
    r.call(&["SET", "forever", "v"]);
    let mut rounds = 0;
    let avg = loop {
        let text = info(&mut r, "keyspace");
        let line = info_field(&text, "db0").unwrap_or_default();
        let avg: u64 = line
            .split(',')
            .find_map(|kv| kv.strip_prefix("avg_ttl="))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if avg > 0 {
            assert!(line.starts_with("keys=101,expires=100,"), "{line}");
            break avg;
        }
        rounds += 1;
        assert!(rounds < 100_000, "avg_ttl stays 0: {line}");
    };
    assert!(avg <= 1_000_000 && avg > 900_000, "avg_ttl={avg}");
}

/// CLIENT LIST's qbuf is the unprocessed request bytes: the caller's own
/// CLIENT LIST (26 bytes) while it runs, as Redis shows it.
#[test]
fn client_list_shows_the_query_buffer() {
    for s in [Server::keel(), Server::redis()] {
        let mut r = s.raw();
        let list = match r.call(&["CLIENT", "LIST"]) {
            Value::Bulk(b) => String::from_utf8(b).unwrap_or_default(),
            other => panic!("{other:?}"),
        };
        let field = |name: &str| {
            list.split_whitespace()
                .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                .unwrap_or("?")
                .to_string()
        };
        assert_eq!(field("qbuf"), "26", "{}: {list}", s.name);
        assert_eq!(field("omem"), "0", "{}: {list}", s.name);
    }
}

/// A reply waiting for a client that does not read counts in its `omem`
/// (CLIENT LIST), a large value that keel sends by reference included.
#[test]
fn an_unread_large_reply_counts_in_the_clients_omem() {
    const MB: usize = 1 << 20;
    for s in [Server::keel(), Server::redis()] {
        let mut side = s.raw();
        let big = vec![b'v'; 32 * MB];
        eqb!(side.cmd(&[b"SET".as_slice(), b"big", &big]), b"+OK\r\n");
        let mut slow = s.raw();
        eqb!(slow.cmd(&["CLIENT", "SETNAME", "slow"]), b"+OK\r\n");
        slow.send_cmd(&["GET", "big"]);
        // The sockets' buffers take a few MB; the rest waits in the
        // server, counted.
        wait_for("the unread reply to show in omem", || {
            let list = match side.call(&["CLIENT", "LIST"]) {
                Value::Bulk(b) => String::from_utf8(b).unwrap_or_default(),
                other => return Err(format!("{other:?}")),
            };
            let line = list
                .lines()
                .find(|l| l.contains(" name=slow "))
                .ok_or_else(|| list.clone())?;
            let omem: usize = line
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("omem="))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| line.to_string())?;
            if omem >= 16 * MB {
                Ok(())
            } else {
                Err(format!("{}: {line}", s.name))
            }
        });
        drop(slow);
    }
}

/// A client gone idle holds no query buffer: `qbuf=0 qbuf-free=0` in
/// CLIENT LIST, on keel (which gives the buffer back as soon as the client
/// waits) as on Redis (whose cron frees it after 2 s idle).
#[test]
fn an_idle_clients_query_buffer_is_given_back() {
    for s in [Server::keel(), Server::redis()] {
        let mut idle = s.raw();
        idle.call(&["CLIENT", "SETNAME", "idler"]);
        idle.call(&["SET", "k", "v".repeat(50_000).as_str()]);
        let mut watcher = s.raw();
        let fields = wait_for("the idle client's query buffer to go", || {
            let list = match watcher.call(&["CLIENT", "LIST"]) {
                Value::Bulk(b) => String::from_utf8(b).unwrap_or_default(),
                other => panic!("{other:?}"),
            };
            let line = list
                .lines()
                .find(|l| l.contains(" name=idler "))
                .unwrap_or("")
                .to_string();
            let field = |name: &str| {
                line.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .unwrap_or("?")
                    .to_string()
            };
            let fields = (field("qbuf"), field("qbuf-free"));
            if fields.1 == "0" {
                Ok(fields)
            } else {
                Err(format!("{}: {line}", s.name))
            }
        });
        assert_eq!(fields, ("0".to_string(), "0".to_string()), "{}", s.name);
    }
}

/// LATENCY HISTOGRAM: the named commands (and subcommands) that have a
/// histogram, unknown names skipped, each with its calls and a
/// cumulative distribution ending at the number of calls.
#[test]
fn latency_histogram_as_redis() {
    for s in [Server::keel(), Server::redis()] {
        let mut r = s.raw();
        r.call(&["CONFIG", "RESETSTAT"]);
        for _ in 0..3 {
            r.call(&["SET", "k", "v"]);
        }
        r.call(&["CONFIG", "GET", "hz"]);
        let reply = r.call(&["LATENCY", "HISTOGRAM", "set", "nosuch", "config"]);
        let Value::Array(items) = reply else {
            panic!("{}: {reply:?}", s.name)
        };
        let mut names = Vec::new();
        for pair in items.chunks(2) {
            let Value::Bulk(name) = &pair[0] else {
                panic!("{}: {pair:?}", s.name)
            };
            let name = String::from_utf8_lossy(name).into_owned();
            let Value::Array(fields) = &pair[1] else {
                panic!("{}: {pair:?}", s.name)
            };
            assert_eq!(fields[0], Value::Bulk(b"calls".to_vec()), "{}", s.name);
            assert_eq!(
                fields[2],
                Value::Bulk(b"histogram_usec".to_vec()),
                "{}",
                s.name
            );
            let Value::Integer(calls) = fields[1] else {
                panic!("{}: {fields:?}", s.name)
            };
            let Value::Array(buckets) = &fields[3] else {
                panic!("{}: {fields:?}", s.name)
            };
            let counts: Vec<i64> = buckets
                .chunks(2)
                .map(|b| match b[1] {
                    Value::Integer(n) => n,
                    ref other => panic!("{other:?}"),
                })
                .collect();
            assert!(
                counts.windows(2).all(|w| w[0] < w[1]),
                "{}: {counts:?}",
                s.name
            );
            assert_eq!(counts.last().copied(), Some(calls), "{}: {name}", s.name);
            if name == "set" {
                assert_eq!(calls, 3, "{}", s.name);
            }
            names.push(name);
        }
        names.sort();
        assert_eq!(
            names,
            ["config|get", "config|resetstat", "set"],
            "{}",
            s.name
        );
    }
}
