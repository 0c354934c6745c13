//! SLOWLOG and LATENCY against redis-server: the same scenario on both,
//! the replies compared with what varies masked (ids relative to the
//! first, timestamps and durations checked by type and bound, client
//! addresses checked against the connection's own).

use resp::Value;

use crate::harness::*;

fn int(v: &Value) -> i64 {
    match v {
        Value::Integer(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) => a,
        other => panic!("not an array: {other:?}"),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Bulk(b) | Value::Simple(b) | Value::Error(b) => {
            String::from_utf8_lossy(b).into_owned()
        }
        // The format prefix (`txt:`) off.
        Value::Verbatim(b) => String::from_utf8_lossy(b.get(4..).unwrap_or_default()).into_owned(),
        other => panic!("not a string: {other:?}"),
    }
}

/// A SLOWLOG GET reply with what varies masked: ids become their distance
/// from the newest (checked to fall by one per entry), times and
/// durations are checked and dropped, `addr` (a connection's own
/// address) becomes `ME`, another connection's `OTHER`.
fn mask_entries(reply: &Value, addr: &str) -> Vec<String> {
    let entries = items(reply);
    let first = entries.first().map(|e| int(&items(e)[0]));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let f = items(e);
            assert_eq!(f.len(), 6, "{e:?}");
            assert_eq!(int(&f[0]), first.unwrap() - i as i64, "ids fall by one");
            assert!((now - int(&f[1])).abs() < 600, "a unix time: {e:?}");
            assert!(int(&f[2]) >= 0, "a duration: {e:?}");
            let argv: Vec<String> = items(&f[3]).iter().map(text).collect();
            let peer = text(&f[4]);
            let peer = if peer == addr {
                "ME".to_string()
            } else if peer.starts_with("127.0.0.1:") {
                "OTHER".to_string()
            } else {
                peer
            };
            format!("{argv:?} {peer} {:?}", text(&f[5]))
        })
        .collect()
}

/// Commands whose entries (or absence) are the same on both servers.
fn entries_scenario(server: &Server) -> Vec<String> {
    let mut c = server.raw();
    let me = c.local_addr();
    let mut out = Vec::new();
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    c.cmd(&["SET", "k", &"v".repeat(200)]);
    let many: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD".to_string(), "s".to_string()];
    sadd.extend(many.iter().cloned());
    c.cmd(&sadd);
    c.cmd(&["CLIENT", "SETNAME", "slowpoke"]);
    c.cmd(&["AUTH", "nopass"]);
    c.cmd(&["AUTH", "u", "p"]);
    c.cmd(&["AUTH", "a", "b", "c"]);
    c.cmd(&["HELLO", "2", "AUTH", "default", "wrong"]);
    c.cmd(&["HELLO", "4", "AUTH", "default", "wrong"]);
    c.cmd(&["CONFIG", "SET", "requirepass", ""]);
    c.cmd(&["ACL", "SETUSER", "slowuser", "on", ">secret"]);
    c.cmd(&["ACL", "DELUSER", "slowuser"]);
    // EXEC is skip_slowlog: the commands it ran are logged instead.
    c.cmd(&["MULTI"]);
    c.cmd(&["INCR", "n"]);
    c.cmd(&["DEBUG", "SLEEP", "0"]);
    c.cmd(&["EXEC"]);
    // A script's commands are logged as the Lua client's, before it.
    c.cmd(&["EVAL", "redis.call('set','x','y') return 1", "0"]);
    // Refused before running: not logged.
    c.cmd(&["NOSUCHCOMMAND"]);
    c.cmd(&["GET"]);
    let all = c.call(&["SLOWLOG", "GET", "-1"]);
    out.extend(mask_entries(&all, &me));
    // The default count, and a smaller one.
    out.push(format!("{}", items(&c.call(&["SLOWLOG", "GET"])).len()));
    out.push(format!(
        "{}",
        items(&c.call(&["SLOWLOG", "GET", "2"])).len()
    ));
    out.push(format!(
        "{}",
        items(&c.call(&["SLOWLOG", "GET", "0"])).len()
    ));
    // CONFIG RESETSTAT keeps the log.
    c.cmd(&["CONFIG", "RESETSTAT"]);
    out.push(escape(&c.cmd(&["SLOWLOG", "LEN"])));
    out
}

#[test]
fn slowlog_entries_as_redis() {
    let keel = Server::keel();
    let redis = Server::redis();
    let k = entries_scenario(&keel);
    let r = entries_scenario(&redis);
    assert_eq!(k, r);
    // The cut argument and the redactions, spelled out.
    let long = format!(
        "[\"SET\", \"k\", \"{}... (72 more bytes)\"] ME \"\"",
        "v".repeat(128)
    );
    assert!(k.contains(&long), "{k:#?}");
    assert!(k.iter().any(|e| e.contains("\"... (11 more arguments)\"")));
    assert!(k.contains(&"[\"AUTH\", \"(redacted)\"] ME \"slowpoke\"".to_string()));
    assert!(k.contains(&"[\"set\", \"x\", \"y\"] ?:0 \"\"".to_string()));
    assert!(!k.iter().any(|e| e.starts_with("[\"EXEC\"")));
}

/// Lengths and trimming: slowlog-max-len, SLOWLOG RESET, the log off.
fn length_scenario(server: &Server) -> Vec<String> {
    let mut c = server.raw();
    let mut out = Vec::new();
    let run = |c: &mut Raw, out: &mut Vec<String>, argv: &[&str]| out.push(escape(&c.cmd(argv)));
    run(
        &mut c,
        &mut out,
        &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
    );
    run(&mut c, &mut out, &["CONFIG", "SET", "slowlog-max-len", "3"]);
    for _ in 0..5 {
        run(&mut c, &mut out, &["PING"]);
    }
    run(&mut c, &mut out, &["SLOWLOG", "LEN"]);
    run(&mut c, &mut out, &["SLOWLOG", "RESET"]);
    run(&mut c, &mut out, &["SLOWLOG", "LEN"]);
    run(
        &mut c,
        &mut out,
        &["CONFIG", "SET", "slowlog-max-len", "10"],
    );
    run(&mut c, &mut out, &["PING"]);
    run(&mut c, &mut out, &["PING"]);
    // Off: nothing is logged, and a lower length trims nothing yet.
    run(
        &mut c,
        &mut out,
        &["CONFIG", "SET", "slowlog-log-slower-than", "-1"],
    );
    run(&mut c, &mut out, &["PING"]);
    run(&mut c, &mut out, &["CONFIG", "SET", "slowlog-max-len", "1"]);
    run(&mut c, &mut out, &["SLOWLOG", "LEN"]);
    // Back on: the CONFIG SET itself is logged, the log trimmed to 1.
    run(
        &mut c,
        &mut out,
        &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
    );
    run(&mut c, &mut out, &["SLOWLOG", "LEN"]);
    let last = c.call(&["SLOWLOG", "GET"]);
    let argv: Vec<String> = items(&items(&last)[0])[3..4]
        .iter()
        .flat_map(|a| items(a).iter().map(text))
        .collect();
    out.push(format!("{argv:?}"));
    // A high threshold logs nothing fast.
    run(
        &mut c,
        &mut out,
        &["CONFIG", "SET", "slowlog-log-slower-than", "1000000"],
    );
    run(&mut c, &mut out, &["SLOWLOG", "RESET"]);
    run(&mut c, &mut out, &["PING"]);
    run(&mut c, &mut out, &["SLOWLOG", "LEN"]);
    out
}

#[test]
fn slowlog_lengths_as_redis() {
    let keel = Server::keel();
    let redis = Server::redis();
    assert_eq!(length_scenario(&keel), length_scenario(&redis));
}

/// Waits until `n` clients are blocked (INFO on `c`).
fn wait_blocked(c: &mut Raw, n: usize) {
    loop {
        let info = String::from_utf8_lossy(&c.cmd(&["INFO", "clients"])).into_owned();
        if info_field(&info, "blocked_clients").as_deref() == Some(&n.to_string()) {
            return;
        }
    }
}

/// A blocked command is logged once, when served; one that times out or
/// is unblocked is not (Redis 7.0).
fn blocking_scenario(server: &Server) -> Vec<String> {
    let mut c = server.raw();
    let mut b = server.raw();
    let b_addr = b.local_addr();
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    b.send_cmd(&["BLPOP", "bl", "0"]);
    wait_blocked(&mut c, 1);
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    c.cmd(&["RPUSH", "bl", "x"]);
    assert_eq!(b.read_reply(), b"*2\r\n$2\r\nbl\r\n$1\r\nx\r\n");
    // Timed out: not logged.
    b.cmd(&["BLPOP", "none", "0.01"]);
    let mut out = Vec::new();
    let all = c.call(&["SLOWLOG", "GET", "-1"]);
    let mut entries = mask_entries(&all, &b_addr);
    // The served command and the push that served it run on two
    // connections: their order is the order they finished in.
    entries.sort();
    out.extend(entries);
    out
}

#[test]
fn slowlog_blocked_commands_as_redis() {
    let keel = Server::keel();
    let redis = Server::redis();
    let k = blocking_scenario(&keel);
    assert_eq!(k, blocking_scenario(&redis));
    assert_eq!(
        k.iter().filter(|e| e.starts_with("[\"BLPOP\"")).count(),
        1,
        "{k:#?}"
    );
}

/// LATENCY with a 10 ms threshold and DEBUG SLEEP 0.05: the `command`
/// event in every report, then reset. (10 ms, not 1: on a loaded machine
/// LATENCY's own commands may take a millisecond, on one server only.)
fn latency_scenario(server: &Server, proto: &str) -> Vec<String> {
    let mut c = server.raw();
    c.cmd(&["HELLO", proto]);
    let mut out = Vec::new();
    let doctor = text(&c.call(&["LATENCY", "DOCTOR"]));
    out.push(doctor);
    c.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "10"]);
    out.push(text(&c.call(&["LATENCY", "DOCTOR"])));
    assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0.05"]), b"+OK\r\n");
    let latest = c.call(&["LATENCY", "LATEST"]);
    let rows = items(&latest);
    assert_eq!(rows.len(), 1, "{latest:?}");
    let row = items(&rows[0]);
    assert_eq!(text(&row[0]), "command");
    let (last, max) = (int(&row[2]), int(&row[3]));
    assert!(last >= 50 && max >= last, "{latest:?}");
    out.push(format!("{} fields", row.len()));
    let history = c.call(&["LATENCY", "HISTORY", "command"]);
    let samples = items(&history);
    assert_eq!(samples.len(), 1);
    assert_eq!(int(&items(&samples[0])[0]), int(&row[1]));
    assert_eq!(int(&items(&samples[0])[1]), last);
    // Case matters for HISTORY and GRAPH, not for RESET.
    out.push(format!("{:?}", c.call(&["LATENCY", "HISTORY", "COMMAND"])));
    let graph = c.call(&["LATENCY", "GRAPH", "command"]);
    out.push(format!("verbatim {}", matches!(graph, Value::Verbatim(_))));
    let graph = text(&graph);
    let lines: Vec<&str> = graph.lines().collect();
    assert_eq!(
        lines[0],
        format!("command - high {last} ms, low {last} ms (all time high {max} ms)")
    );
    assert_eq!(lines[1], "-".repeat(80));
    // Four chart rows, a blank, then the age label downwards ("0s").
    assert_eq!(&lines[2..], [" ", " ", " ", "_", " ", "0", "s"]);
    let doctor = text(&c.call(&["LATENCY", "DOCTOR"]));
    let masked = doctor.replace(&format!("{last}ms"), "Nms");
    out.push(masked);
    out.push(escape(&c.cmd(&["LATENCY", "GRAPH", "nosuch"])));
    out.push(escape(
        &c.cmd(&["LATENCY", "RESET", "COMMAND", "nosuch", "command"]),
    ));
    out.push(escape(&c.cmd(&["LATENCY", "RESET"])));
    out.push(escape(&c.cmd(&["LATENCY", "LATEST"])));
    out.push(escape(&c.cmd(&["LATENCY", "GRAPH", "command"])));
    out.push(text(&c.call(&["LATENCY", "DOCTOR"])));
    c.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "0"]);
    out
}

#[test]
fn latency_command_event_as_redis() {
    let keel = Server::keel();
    let redis = Server::redis();
    for proto in ["2", "3"] {
        let k = latency_scenario(&keel, proto);
        assert_eq!(k, latency_scenario(&redis, proto), "RESP{proto}");
        assert!(k[0].starts_with("I'm sorry, Dave, I can't do that."));
        assert!(k[1].starts_with("Dave, no latency spike was observed"));
    }
}
