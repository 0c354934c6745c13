//! MONITOR against redis-server: the same commands from another
//! connection, the monitor's lines compared with the timestamp and the
//! client's port masked.

use crate::harness::*;

/// Masks `+<secs>.<usecs> [<db> 127.0.0.1:<port>]` to `+T [<db> ADDR]`.
fn mask(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line).into_owned();
    let Some((stamp, rest)) = s.split_once(' ') else {
        return s;
    };
    let Some((secs, usecs)) = stamp[1..].split_once('.') else {
        return s;
    };
    assert!(secs.parse::<u64>().is_ok() && usecs.len() == 6, "{s}");
    let rest = match rest.split_once("127.0.0.1:") {
        Some((a, b)) => format!("{a}ADDR{}", &b[b.find(']').expect("]")..]),
        None => rest.to_string(),
    };
    format!("+T {rest}")
}

fn scenario(server: &Server) -> Vec<String> {
    let mut log = Vec::new();
    let mut m = server.raw();
    assert_eq!(m.cmd(&["MONITOR"]), b"+OK\r\n");
    let mut c = server.raw();
    let commands: &[&[&str]] = &[
        &["SELECT", "2"],
        &["SELECT", "0"],
        &["EVAL", "redis.call('select','3') redis.call('set','x',1) return 1", "0"],
        &["SET", "a b", "x\x00\n\"\\\x7f\u{e9}\t\x07\x08"],
        &["NOSUCH"],
        &["GET"],
        &["CONFIG", "GET", "port"],
        &["MULTI"],
        &["INCR", "n"],
        &["GET", "n"],
        &["EXEC"],
        &["LPUSH", "l", "1"],
        &["BLPOP", "l", "0"],
        &["AUTH", "x"],
        &["AUTH", "u", "p"],
        &["HELLO", "2"],
        &["HELLO", "3", "AUTH", "default", "pw", "SETNAME", "n"],
        &["HELLO", "2"],
        &["PING"],
        &["CLIENT", "ID"],
        &["EVAL", "return 1", "0"],
        &["FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return redis.call('get', 'n') end)"],
        &["FCALL", "f", "0"],
        &["ACL", "WHOAMI"],
        &["ACL", "SETUSER", "x", ">pw"],
        &["DEBUG", "SLEEP", "0"],
    ];
    for argv in commands {
        c.cmd(argv);
    }
    // A blocked command is shown when it blocks, not again when served.
    let mut b = server.raw();
    b.send_cmd(&["BLPOP", "bl", "0"]);
    loop {
        let info = c.cmd(&["INFO", "clients"]);
        if info_field(&String::from_utf8_lossy(&info), "blocked_clients").as_deref() == Some("1") {
            break;
        }
    }
    c.cmd(&["LPUSH", "bl", "1"]);
    b.read_reply();
    c.cmd(&["QUIT"]);
    // The last command's line ends the transcript.
    let mut d = server.raw();
    d.cmd(&["ECHO", "end"]);
    loop {
        let line = m.read_reply();
        let masked = mask(&line);
        // Polling INFO until the client blocked shows a varying count.
        if !masked.contains("\"INFO\"") {
            log.push(masked.clone());
        }
        if masked.ends_with("\"ECHO\" \"end\"\r\n") {
            break;
        }
    }
    // The monitor itself: keyspace commands refused, others served, a
    // second MONITOR unanswered, RESET ends it.
    for argv in [
        &["GET", "x"][..],
        &["SET", "x", "1"],
        &["PUBLISH", "c", "m"],
    ] {
        log.push(escape(&m.cmd(argv)));
    }
    m.send_cmd(&["MONITOR"]);
    log.push(escape(&m.cmd(&["ECHO", "after"])));
    log.push(mask(&m.read_reply()));
    log.push(escape(&m.cmd(&["RESET"])));
    log.push(escape(&m.cmd(&["SET", "y", "1"])));
    log
}

#[test]
fn monitor_matches_redis() {
    let want = scenario(&Server::redis());
    let got = scenario(&Server::under_test());
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(g, w, "redis: {want:#?}\nkeel: {got:#?}");
    }
    assert_eq!(got.len(), want.len(), "{got:#?}");
}

/// `redis-cli monitor` prints the commands others send.
#[test]
fn redis_cli_monitor() {
    let s = Server::under_test();
    let mut cli = std::process::Command::new("redis-cli")
        .args(["-p", &s.port.to_string(), "monitor"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("redis-cli");
    let mut c = s.raw();
    // Wait until it monitors (CLIENT LIST flag O).
    loop {
        let list = c.cmd(&["CLIENT", "LIST"]);
        if String::from_utf8_lossy(&list).contains("flags=O") {
            break;
        }
    }
    c.cmd(&["SET", "watched", "value"]);
    let mut stdout = std::io::BufReader::new(cli.stdout.take().expect("stdout"));
    let mut line = String::new();
    loop {
        line.clear();
        std::io::BufRead::read_line(&mut stdout, &mut line).expect("read");
        if line.contains("\"SET\"") {
            break;
        }
    }
    let _ = cli.kill();
    let _ = cli.wait();
    assert!(line.contains("[0 127.0.0.1:"), "{line}");
    assert!(
        line.trim_end().ends_with("\"SET\" \"watched\" \"value\""),
        "{line}"
    );
}
