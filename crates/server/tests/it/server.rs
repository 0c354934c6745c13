//! Server commands: INFO, CONFIG, COMMAND, TIME, LASTSAVE, DEBUG, SHUTDOWN,
//! and the generic errors (unknown command, unknown subcommand, arity).

use std::time::Duration;

use redis::Value;

use crate::harness::*;
use crate::{ck, eqb, q};

async fn info(c: &mut redis::aio::MultiplexedConnection, section: &str) -> String {
    let argv: Vec<&str> = std::iter::once("INFO")
        .chain(section.split_whitespace())
        .collect();
    let r = query(c, &argv).await;
    text(r.as_ref().unwrap_or_else(|e| panic!("INFO {section}: {e}")))
}

fn sections(info: &str) -> Vec<String> {
    info.lines()
        .filter_map(|l| l.strip_prefix("# "))
        .map(|s| s.trim().to_string())
        .collect()
}

#[tokio::test]
async fn info_sections_and_fields() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let _other = s.client().await;
    let all = info(&mut c, "").await;
    assert_eq!(
        sections(&all),
        [
            "Server",
            "Clients",
            "Memory",
            "Persistence",
            "Stats",
            "Replication",
            "CPU",
            "Modules",
            "Errorstats",
            "Cluster",
            "Keyspace"
        ]
    );
    assert_eq!(info_field(&all, "redis_version").as_deref(), Some("7.0.15"));
    assert_eq!(
        info_field(&all, "redis_mode").as_deref(),
        Some("standalone")
    );
    assert_eq!(info_field(&all, "tcp_port"), Some(s.port.to_string()));
    assert_eq!(info_field(&all, "process_id"), Some(s.pid().to_string()));
    assert!(
        info_field(&all, "keel_version").is_some_and(|v| !v.is_empty()),
        "{all}"
    );
    assert_eq!(info_field(&all, "connected_clients").as_deref(), Some("2"));
    let used: u64 = info_field(&all, "used_memory").unwrap().parse().unwrap();
    assert!(used > 0);
    assert_eq!(info_field(&all, "role").as_deref(), Some("master"));
    assert_eq!(info_field(&all, "cluster_enabled").as_deref(), Some("0"));
    assert!(all.contains("\r\n"), "INFO lines end with CRLF");
    assert!(!all.contains("db0:"), "{all}");

    ck!(c, "SET a 1", ok());
    ck!(c, "SET b 2 EX 100", ok());
    ck!(c, "SET c 3", ok());
    ck!(c, "GET a", bulk("1"));
    ck!(c, "GET missing", nil());
    let ks = info(&mut c, "keyspace").await;
    assert_eq!(sections(&ks), ["Keyspace"]);
    let line = ks
        .lines()
        .find(|l| l.starts_with("db0:"))
        .unwrap_or("")
        .to_string();
    assert!(
        line.starts_with("db0:keys=3,expires=1,avg_ttl="),
        "keyspace line {line:?}"
    );
    let stats = info(&mut c, "stats").await;
    assert_eq!(sections(&stats), ["Stats"]);
    let cs = info(&mut c, "commandstats").await;
    assert_eq!(sections(&cs), ["Commandstats"]);
    assert!(cs.contains("cmdstat_set:calls=3,usec="), "{cs}");
    assert!(cs.contains("cmdstat_get:calls=2,usec="), "{cs}");
    assert!(
        !all.contains("cmdstat_"),
        "commandstats is not a default section"
    );
    let two = info(&mut c, "clients server").await;
    assert_eq!(sections(&two), ["Server", "Clients"]);
    let everything = info(&mut c, "all").await;
    assert!(sections(&everything).contains(&"Commandstats".to_string()));
    assert!(everything.contains("cmdstat_info:calls="), "{everything}");
    let none = info(&mut c, "nosuchsection").await;
    assert_eq!(none, "");
    // Errors are counted.
    let errors = |s: &str| -> i64 {
        info_field(s, "total_error_replies")
            .unwrap()
            .parse()
            .unwrap()
    };
    let before = errors(&info(&mut c, "stats").await);
    ck!(
        c,
        "GET",
        err("ERR wrong number of arguments for 'get' command")
    );
    ck!(
        c,
        "INCR a x",
        err("ERR wrong number of arguments for 'incr' command")
    );
    ck!(c, "SET a v NX XX", err("ERR syntax error"));
    let after = errors(&info(&mut c, "stats").await);
    assert_eq!(after - before, 3);
}

#[tokio::test]
async fn config_get_set_resetstat() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(
        c,
        "CONFIG GET port",
        arr(vec![b("port"), b(s.port.to_string())])
    );
    ck!(c, "CONFIG GET nosuchparam", arr(vec![]));
    ck!(
        c,
        "CONFIG GET databases",
        arr(vec![b("databases"), b("16")])
    );
    ck!(c, "CONFIG GET save", arr(vec![b("save"), b("")]));
    ck!(
        c,
        "CONFIG GET enable-debug-command",
        arr(vec![b("enable-debug-command"), b("yes")])
    );
    let pairs = |r: Reply| -> Vec<(String, String)> {
        let Ok(Value::Array(items)) = r else {
            panic!("CONFIG GET reply {r:?}")
        };
        let mut v: Vec<(String, String)> = items
            .chunks(2)
            .map(|p| (text(&p[0]), text(&p[1])))
            .collect();
        v.sort();
        v
    };
    let got = pairs(q!(c, "CONFIG GET timeout hz"));
    assert_eq!(
        got,
        [
            ("hz".to_string(), "10".to_string()),
            ("timeout".into(), "0".into())
        ]
    );
    let got = pairs(q!(c, "CONFIG GET *max-*-entries*"));
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "hash-max-listpack-entries",
        "set-max-intset-entries",
        "zset-max-listpack-entries",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(got
        .iter()
        .all(|(n, _)| n.contains("max-") && n.contains("-entries")));

    ck!(c, "CONFIG SET hz 20", ok());
    ck!(c, "CONFIG GET hz", arr(vec![b("hz"), b("20")]));
    ck!(c, "CONFIG SET timeout 30 tcp-keepalive 60", ok());
    ck!(
        c,
        "CONFIG GET tcp-keepalive",
        arr(vec![b("tcp-keepalive"), b("60")])
    );
    ck!(c, "CONFIG SET proto-max-bulk-len 2mb", ok());
    ck!(
        c,
        "CONFIG GET proto-max-bulk-len",
        arr(vec![b("proto-max-bulk-len"), b("2097152")])
    );
    ck!(c, "CONFIG SET loglevel WARNING", ok());
    ck!(
        c,
        "CONFIG GET loglevel",
        arr(vec![b("loglevel"), b("warning")])
    );
    ck!(
        c,
        "CONFIG SET hz abc",
        err("ERR CONFIG SET failed (possibly related to argument 'hz') - argument couldn't be parsed into an integer")
    );
    ck!(
        c,
        "CONFIG SET timeout -1",
        err("ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be between 0 and 2147483647 inclusive")
    );
    ck!(
        c,
        "CONFIG SET nosuchparam 1",
        err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuchparam'")
    );
    ck!(
        c,
        "CONFIG SET databases 4",
        err("ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config")
    );
    ck!(
        c,
        "CONFIG SET protected-mode maybe",
        err("ERR CONFIG SET failed (possibly related to argument 'protected-mode') - argument must be 'yes' or 'no'")
    );
    ck!(
        c,
        "CONFIG SET timeout 5 timeout 6",
        err("ERR CONFIG SET failed (possibly related to argument 'timeout') - duplicate parameter")
    );
    // All or nothing: timeout is unchanged by the failed multi-set.
    ck!(
        c,
        "CONFIG SET timeout 40 hz abc",
        err("ERR CONFIG SET failed (possibly related to argument 'hz') - argument couldn't be parsed into an integer")
    );
    ck!(c, "CONFIG GET timeout", arr(vec![b("timeout"), b("30")]));
    ck!(c, "CONFIG SET timeout 0", ok());
    ck!(
        c,
        "CONFIG SET hz",
        err("ERR wrong number of arguments for 'config|set' command")
    );
    ck!(
        c,
        "CONFIG GET",
        err("ERR wrong number of arguments for 'config|get' command")
    );
    ck!(
        c,
        "CONFIG FOO",
        err("ERR unknown subcommand 'FOO'. Try CONFIG HELP.")
    );
    ck!(
        c,
        "CONFIG",
        err("ERR wrong number of arguments for 'config' command")
    );

    ck!(c, "SET a 1", ok());
    let cs = info(&mut c, "commandstats").await;
    assert!(cs.contains("cmdstat_set:calls=1,"), "{cs}");
    ck!(c, "CONFIG RESETSTAT", ok());
    let cs = info(&mut c, "commandstats").await;
    assert!(!cs.contains("cmdstat_set:"), "{cs}");
    assert!(cs.contains("cmdstat_config|resetstat:calls=1,"), "{cs}");
    let stats = info(&mut c, "stats").await;
    assert_eq!(
        info_field(&stats, "total_error_replies").as_deref(),
        Some("0")
    );
    // An odd number of arguments after the first pair.
    ck!(c, "CONFIG SET hz 10 timeout", err("ERR syntax error"));
}

#[tokio::test]
async fn command_introspection() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let list = q!(c, "COMMAND LIST");
    let Ok(Value::Array(names)) = &list else {
        panic!("COMMAND LIST {list:?}")
    };
    let names: Vec<String> = names.iter().map(text).collect();
    for want in [
        "get",
        "set",
        "client|kill",
        "config|get",
        "object|encoding",
        "command|info",
    ] {
        assert!(
            names.contains(&want.to_string()),
            "{want} missing from COMMAND LIST"
        );
    }
    let top = names.iter().filter(|n| !n.contains('|')).count() as i64;
    ck!(c, "COMMAND COUNT", int(top));
    let all = q!(c, "COMMAND");
    let Ok(Value::Array(entries)) = &all else {
        panic!("COMMAND {all:?}")
    };
    assert_eq!(entries.len() as i64, top);

    let r = q!(c, "COMMAND INFO get nosuchcmd");
    let Ok(Value::Array(infos)) = &r else {
        panic!("COMMAND INFO {r:?}")
    };
    assert_eq!(infos.len(), 2);
    assert_eq!(infos[1], Value::Nil);
    let Value::Array(get) = &infos[0] else {
        panic!("COMMAND INFO get {r:?}")
    };
    assert_eq!(get.len(), 10);
    assert_eq!(get[0], b("get"));
    assert_eq!(get[1], Value::Int(2));
    assert_eq!(
        get[2],
        Value::Array(vec![
            Value::SimpleString("readonly".into()),
            Value::SimpleString("fast".into())
        ])
    );
    assert_eq!(&get[3..6], &[Value::Int(1), Value::Int(1), Value::Int(1)]);
    assert_eq!(
        get[6],
        Value::Array(vec![
            Value::SimpleString("@read".into()),
            Value::SimpleString("@string".into()),
            Value::SimpleString("@fast".into())
        ])
    );
    let r = q!(c, "COMMAND INFO client|kill");
    let Ok(Value::Array(infos)) = &r else {
        panic!("{r:?}")
    };
    let Value::Array(kill) = &infos[0] else {
        panic!("{r:?}")
    };
    assert_eq!(kill[0], b("client|kill"));
    assert_eq!(kill[1], Value::Int(-3));

    let r = q!(c, "COMMAND DOCS get");
    let Ok(Value::Array(docs)) = &r else {
        panic!("COMMAND DOCS {r:?}")
    };
    assert_eq!(docs[0], b("get"));
    let Value::Array(fields) = &docs[1] else {
        panic!("{r:?}")
    };
    assert_eq!(fields[0], b("summary"));
    assert_eq!(fields[1], b("Get the value of a key"));
    ck!(c, "COMMAND DOCS nosuchcmd", arr(vec![]));

    ck!(c, "COMMAND GETKEYS SET a b", arr(vec![b("a")]));
    ck!(c, "COMMAND GETKEYS MSET a 1 b 2", arr(vec![b("a"), b("b")]));
    ck!(
        c,
        "COMMAND GETKEYS COPY x y DB 1",
        arr(vec![b("x"), b("y")])
    );
    ck!(c, "command getkeys get k", arr(vec![b("k")]));
    ck!(
        c,
        "COMMAND GETKEYS PING x",
        err("ERR The command has no key arguments")
    );
    ck!(
        c,
        "COMMAND GETKEYS NOSUCHCMD a",
        err("ERR Invalid command specified")
    );
    ck!(
        c,
        "COMMAND GETKEYS GET",
        err("ERR wrong number of arguments for 'command|getkeys' command")
    );
    ck!(
        c,
        "COMMAND GETKEYS PING",
        err("ERR wrong number of arguments for 'command|getkeys' command")
    );
    ck!(
        c,
        "COMMAND GETKEYS",
        err("ERR wrong number of arguments for 'command|getkeys' command")
    );
    ck!(
        c,
        "COMMAND FOO",
        err("ERR unknown subcommand 'FOO'. Try COMMAND HELP.")
    );
    ck!(c, "COMMAND LIST FILTERBY PATTERN get", arr(vec![b("get")]));
    let r = q!(c, "COMMAND LIST FILTERBY PATTERN client|*");
    let Ok(Value::Array(subs)) = &r else {
        panic!("{r:?}")
    };
    assert!(subs.contains(&b("client|kill")), "{subs:?}");
    assert!(
        subs.iter().all(|s| text(s).starts_with("client|")),
        "{subs:?}"
    );
}

#[tokio::test]
async fn time_lastsave_debug() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let r = q!(c, "TIME");
    let Ok(Value::Array(t)) = &r else {
        panic!("TIME {r:?}")
    };
    assert_eq!(t.len(), 2);
    let secs: i64 = text(&t[0]).parse().unwrap();
    let micros: i64 = text(&t[1]).parse().unwrap();
    assert!((secs - unix_secs()).abs() <= 2, "TIME {secs}");
    assert!((0..1_000_000).contains(&micros), "TIME micros {micros}");
    ck!(
        c,
        "TIME x",
        err("ERR wrong number of arguments for 'time' command")
    );
    let last = as_int(&q!(c, "LASTSAVE"));
    assert!(
        last <= unix_secs() && last > unix_secs() - 60,
        "LASTSAVE {last}"
    );
    ck!(c, "DEBUG SLEEP 0", ok());
    ck!(c, "DEBUG SLEEP 0.05", ok());
    ck!(
        c,
        "DEBUG",
        err("ERR wrong number of arguments for 'debug' command")
    );
}

#[tokio::test]
async fn debug_is_refused_unless_enabled() {
    let s = Server::keel_raw(&["--save", ""]);
    let mut c = s.client().await;
    ck!(c, "DEBUG SLEEP 0", err("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."));
    let s = Server::keel_raw(&["--save", "", "--enable-debug-command", "local"]);
    let mut c = s.client().await;
    ck!(c, "DEBUG SLEEP 0", ok());
}

#[test]
fn shutdown_exits_cleanly() {
    let mut s = Server::under_test();
    let mut r = s.raw();
    let mut bystander = s.raw();
    eqb!(r.cmd(&["PING"]), b"+PONG\r\n");
    r.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    // No reply: the connection just closes, and the process exits 0.
    r.expect_eof(Duration::from_secs(10));
    let status = s
        .wait_exit(Duration::from_secs(10))
        .expect("server still running 10 s after SHUTDOWN");
    assert!(status.success(), "exit status after SHUTDOWN: {status}");
    bystander.expect_closed_after(&["PING"], Duration::from_secs(5));
}

#[test]
fn shutdown_argument_errors() {
    let s = Server::under_test();
    let mut r = s.raw();
    for (argv, want) in [
        (&["SHUTDOWN", "FOO"][..], &b"-ERR syntax error\r\n"[..]),
        (&["SHUTDOWN", "NOSAVE", "SAVE"], b"-ERR syntax error\r\n"),
        (
            &["SHUTDOWN", "SAVE", "NOSAVE", "NOW"],
            b"-ERR syntax error\r\n",
        ),
        (&["SHUTDOWN", "NOW", "ABORT"], b"-ERR syntax error\r\n"),
        (&["SHUTDOWN", "ABORT"], b"-ERR No shutdown in progress.\r\n"),
        (&["shutdown", "abort"], b"-ERR No shutdown in progress.\r\n"),
    ] {
        match r.try_cmd(argv) {
            Ok(got) => eqb!(got, want, "reply to {}", show(argv)),
            Err(e) => panic!(
                "{}: no reply ({e:?}): the server shut down instead of answering {}",
                show(argv),
                escape(want)
            ),
        }
    }
    eqb!(r.cmd(&["PING"]), b"+PONG\r\n");
}

#[tokio::test]
async fn generic_errors() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(
        c,
        "NOSUCHCMD",
        err("ERR unknown command 'NOSUCHCMD', with args beginning with: ")
    );
    ck!(
        c,
        "nosuchcmd a b",
        err("ERR unknown command 'nosuchcmd', with args beginning with: 'a' 'b' ")
    );
    let long = "x".repeat(200);
    let r = query(&mut c, &["FOO", long.as_str()]).await;
    assert_eq!(
        r,
        err(&format!(
            "ERR unknown command 'FOO', with args beginning with: '{}' ",
            "x".repeat(128)
        ))
    );
    ck!(
        c,
        "GET",
        err("ERR wrong number of arguments for 'get' command")
    );
    ck!(
        c,
        "GET a b",
        err("ERR wrong number of arguments for 'get' command")
    );
    ck!(
        c,
        "CONFIG GET",
        err("ERR wrong number of arguments for 'config|get' command")
    );
    ck!(
        c,
        "OBJECT NOPE k",
        err("ERR unknown subcommand 'NOPE'. Try OBJECT HELP.")
    );
    // Nothing above hurt the connection.
    ck!(c, "PING", status("PONG"));
}

#[tokio::test]
async fn keyspace_hits_and_misses() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "CONFIG RESETSTAT", ok());
    ck!(c, "SET a 1", ok());
    ck!(c, "GET a", bulk("1"));
    ck!(c, "GET missing", nil());
    ck!(
        c,
        "MGET a missing other",
        arr(vec![b("1"), Value::Nil, Value::Nil])
    );
    ck!(c, "STRLEN missing", int(0));
    let stats = info(&mut c, "stats").await;
    assert_eq!(
        info_field(&stats, "keyspace_hits").as_deref(),
        Some("2"),
        "{stats}"
    );
    assert_eq!(
        info_field(&stats, "keyspace_misses").as_deref(),
        Some("4"),
        "{stats}"
    );
}

#[tokio::test]
async fn config_get_echoes_the_name_asked() {
    // Without glob characters, Redis answers with the name as written.
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(
        c,
        "CONFIG GET PORT",
        arr(vec![b("PORT"), b(s.port.to_string())])
    );
    ck!(c, "CONFIG GET Timeout", arr(vec![b("Timeout"), b("0")]));
    ck!(c, "CONFIG GET TIME*", arr(vec![b("timeout"), b("0")]));
}

#[tokio::test]
async fn command_getkeys_argument_count() {
    // COMMAND GETKEYS itself needs the command and one argument (arity
    // -4); then the inner command's arity is checked with its own error.
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(
        c,
        "COMMAND GETKEYS GET a b",
        err("ERR Invalid number of arguments specified for command")
    );
    ck!(
        c,
        "COMMAND GETKEYS MSET a",
        err("ERR Invalid number of arguments specified for command")
    );
    ck!(
        c,
        "COMMAND GETKEYS SET a",
        err("ERR Invalid number of arguments specified for command")
    );
}

/// keel's `idle-poll-us` and `idle-poll-goal`: readable and settable like
/// any parameter, bounded, and with polling off, at its longest, judged or
/// not, every connection is still served
/// (several clients at once, so workers do go to sleep between requests).
#[test]
fn idle_poll_setting() {
    let log = std::env::temp_dir().join(format!("keel-it-idle-poll-{}.log", std::process::id()));
    let log_arg = log.to_string_lossy().into_owned();
    let s = Server::keel_with(&["--logfile", &log_arg]);
    let mut raw = s.raw();
    // Each worker found its runtime's epoll descriptor to poll.
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!text.contains("runtime epoll not found"), "{text}");
    assert_eq!(
        raw.cmd(&["CONFIG", "GET", "idle-poll-us"]),
        b"*2\r\n$12\r\nidle-poll-us\r\n$3\r\n100\r\n"
    );
    assert_eq!(
        raw.cmd(&["CONFIG", "SET", "idle-poll-us", "1001"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'idle-poll-us') - argument must be between 0 and 1000 inclusive\r\n"
    );
    // `idle-poll-goal`: `cpu` (polling only where it lowers the CPU per
    // request) or `rate` (whenever a worker is busy).
    assert_eq!(
        raw.cmd(&["CONFIG", "GET", "idle-poll-goal"]),
        b"*2\r\n$14\r\nidle-poll-goal\r\n$3\r\ncpu\r\n"
    );
    assert_eq!(
        raw.cmd(&["CONFIG", "SET", "idle-poll-goal", "always"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'idle-poll-goal') - argument(s) must be one of the following: cpu, rate\r\n"
    );
    let info = String::from_utf8(raw.cmd(&["INFO", "keel"])).unwrap();
    let paying = info_field(&info, "keel_idle_poll_paying_workers").expect("the count");
    assert!(paying.parse::<usize>().is_ok(), "{info}");
    for (us, policy) in [
        ("0", "cpu"),
        ("1000", "rate"),
        ("1000", "cpu"),
        ("100", "cpu"),
    ] {
        assert_eq!(raw.cmd(&["CONFIG", "SET", "idle-poll-us", us]), b"+OK\r\n");
        assert_eq!(
            raw.cmd(&["CONFIG", "SET", "idle-poll-goal", policy]),
            b"+OK\r\n"
        );
        let clients: Vec<_> = (0..4)
            .map(|c| {
                let port = s.port;
                std::thread::spawn(move || {
                    let mut r = Raw::connect(port);
                    for i in 0..200 {
                        let key = format!("k{c}:{i}");
                        assert_eq!(r.cmd(&["SET", &key, us]), b"+OK\r\n");
                        std::thread::sleep(Duration::from_micros(50 * (i % 3)));
                        let want = format!("${}\r\n{us}\r\n", us.len());
                        assert_eq!(r.cmd(&["GET", &key]), want.as_bytes());
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
    }
    let _ = std::fs::remove_file(&log);
}

/// Commands that read or lock every shard themselves (INFO, MEMORY
/// STATS/DOCTOR, CONFIG RESETSTAT, BGSAVE, CONFIG SET appendonly) inside a
/// transaction or a script holding a key's shard waited for that shard
/// forever, and took the worker and the shard with them (found by the
/// commands fuzz target). They now get every shard.
#[test]
fn every_shard_commands_inside_multi_and_scripts() {
    // BGSAVE and appendonly write files: in a directory of its own.
    let dir = std::env::temp_dir().join(format!(
        "keel-it-every-shard-{}-{}",
        std::process::id(),
        crate::harness::free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let s = Server::keel_with(&["--dir", dir.to_str().unwrap()]);
    let mut c = s.raw();
    let commands: [&[&str]; 7] = [
        &["INFO"],
        &["INFO", "keyspace"],
        &["MEMORY", "STATS"],
        &["MEMORY", "DOCTOR"],
        &["CONFIG", "RESETSTAT"],
        &["BGSAVE"],
        &["CONFIG", "SET", "appendonly", "yes"],
    ];
    for cmd in commands {
        assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["SET", "k", "v"]), b"+QUEUED\r\n");
        assert_eq!(c.cmd(cmd), b"+QUEUED\r\n");
        match c.call(&["EXEC"]) {
            resp::Value::Array(replies) => {
                assert_eq!(replies.len(), 2, "{cmd:?}: {replies:?}");
                assert!(
                    !matches!(replies[1], resp::Value::Error(_)),
                    "{cmd:?}: {replies:?}"
                );
            }
            other => panic!("{cmd:?}: {other:?}"),
        }
    }
    let info = c.call(&[
        "EVAL",
        "local i = redis.call('info', 'keyspace') redis.call('set', KEYS[1], 'w') return i",
        "1",
        "k",
    ]);
    assert!(
        matches!(&info, resp::Value::Bulk(b) if b.starts_with(b"# Keyspace")),
        "{info:?}"
    );
    // Nothing is left holding the key's shard.
    let mut other = s.raw();
    assert_eq!(other.cmd(&["GET", "k"]), b"$1\r\nw\r\n");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `redis-version` (keel's own, set at start) is the version clients see:
/// INFO, HELLO, Lua's `REDIS_VERSION`/`REDIS_VERSION_NUM` and LOLWUT;
/// 7.4.1 unless set; not changed at run time; only versions keel knows.
#[test]
fn redis_version_presents_the_chosen_dialect() {
    let s = Server::keel_with(&["--redis-version", "7.4.1"]);
    let mut c = s.raw();
    let info = String::from_utf8(c.cmd(&["INFO", "server"])).unwrap();
    assert_eq!(info_field(&info, "redis_version").as_deref(), Some("7.4.1"));
    let hello = c.cmd(&["HELLO", "2"]);
    let wanted = b"$7\r\nversion\r\n$5\r\n7.4.1\r\n";
    assert!(
        hello.windows(wanted.len()).any(|w| w == wanted),
        "{}",
        escape(&hello)
    );
    eqb!(
        c.cmd(&[
            "EVAL",
            "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}",
            "0"
        ]),
        b"*2\r\n$5\r\n7.4.1\r\n:459777\r\n"
    );
    assert!(String::from_utf8_lossy(&c.cmd(&["LOLWUT"])).contains("Redis ver. 7.4.1"));
    eqb!(
        c.cmd(&["CONFIG", "SET", "redis-version", "7.0.15"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'redis-version') - can't set immutable config\r\n"
    );
    eqb!(
        c.cmd(&["CONFIG", "GET", "redis-version"]),
        b"*2\r\n$13\r\nredis-version\r\n$5\r\n7.4.1\r\n"
    );
    drop(c);
    drop(s);
    // Without the option: 7.4.1.
    let s = Server::keel_as_shipped(&["--save", "", "--appendonly", "no"]);
    let mut c = s.raw();
    eqb!(
        c.cmd(&["CONFIG", "GET", "redis-version"]),
        b"*2\r\n$13\r\nredis-version\r\n$5\r\n7.4.1\r\n"
    );
    let info = String::from_utf8(c.cmd(&["INFO", "server"])).unwrap();
    assert_eq!(info_field(&info, "redis_version").as_deref(), Some("7.4.1"));
    drop(c);
    drop(s);
    let s = Server::keel_with(&["--redis-version", "7.0.15"]);
    let mut c = s.raw();
    eqb!(
        c.cmd(&["CONFIG", "GET", "redis-version"]),
        b"*2\r\n$13\r\nredis-version\r\n$6\r\n7.0.15\r\n"
    );
    eqb!(
        c.cmd(&[
            "EVAL",
            "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}",
            "0"
        ]),
        b"*2\r\n$6\r\n7.0.15\r\n:458767\r\n"
    );
    eqb!(
        c.cmd(&["CONFIG", "SET", "redis-version", "6.2.0"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'redis-version') - can't set immutable config\r\n"
    );
}

/// INFO server's `listenerN` lines (Redis 7.2): one per kind of listener
/// (tcp 0, unix 1, tls 2) with its addresses as configured, in the format
/// redis-server 7.4.1 prints; none under 7.0's dialect.
#[test]
fn info_server_lists_the_listeners_under_74() {
    let dir = scratch_dir("listeners");
    let sock = dir.join("keel.sock");
    let sock = sock.to_str().expect("utf-8 path");
    let s = Server::keel_with(&[
        "--redis-version",
        "7.4.1",
        "--bind",
        "127.0.0.1 -::1",
        "--unixsocket",
        sock,
    ]);
    let info = String::from_utf8(s.raw().cmd(&["INFO", "server"])).unwrap();
    let wanted = format!(
        "\r\nio_threads_active:0\r\nlistener0:name=tcp,bind=127.0.0.1,bind=-::1,port={}\r\nlistener1:name=unix,bind={sock}\r\n",
        s.port
    );
    assert!(info.contains(&wanted), "{info}");
    drop(s);
    let s = Server::keel_with(&["--redis-version", "7.0.15"]);
    let info = String::from_utf8(s.raw().cmd(&["INFO", "server"])).unwrap();
    assert!(!info.contains("listener"), "{info}");
    let _ = std::fs::remove_dir_all(&dir);
}
