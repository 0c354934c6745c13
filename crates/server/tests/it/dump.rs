//! DUMP payloads between keel and a real redis-server 7.0, both ways:
//! every type and encoding restored on the other side and read back
//! equal, MIGRATE in every direction and with every option, RESTORE
//! through the propagation path (log, blocked clients), FUNCTION
//! DUMP/RESTORE, and hostile payloads.

use std::time::Duration;

use resp::Value;

use crate::harness::*;

fn bs(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

fn txt(v: &Value) -> String {
    match v {
        Value::Bulk(b) | Value::Simple(b) | Value::Verbatim(b) => {
            String::from_utf8_lossy(b).into_owned()
        }
        other => format!("{other:?}"),
    }
}

/// Commands that build one key of every type and encoding, small and large.
fn dataset() -> Vec<Vec<String>> {
    let mut cmds: Vec<Vec<String>> = Vec::new();
    let c = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    cmds.push(c(&["SET", "str", "hello"]));
    cmds.push(c(&["SET", "int", "12345"]));
    cmds.push(c(&["SET", "bigint", "-9223372036854775808"]));
    cmds.push(c(&["SET", "long", &"abc".repeat(200)]));
    cmds.push(c(&["SET", "ttl", "v", "PX", "100000000"]));
    cmds.push(c(&["RPUSH", "list", "a", "b", "1", "-2", "70000", "c"]));
    let mut big = c(&["RPUSH", "biglist"]);
    big.extend((0..5000).map(|i| format!("item-{i}-{}", "y".repeat(i % 40))));
    cmds.push(big);
    cmds.push(c(&[
        "RPUSH",
        "hugeitems",
        &"h".repeat(20000),
        "x",
        &"k".repeat(9000),
    ]));
    cmds.push(c(&["HSET", "hash", "f", "v", "n", "12"]));
    let mut bighash = c(&["HSET", "bighash"]);
    for i in 0..1000 {
        bighash.push(format!("field:{i}"));
        bighash.push(format!("value:{i}"));
    }
    cmds.push(bighash);
    cmds.push(c(&["SADD", "intset", "5", "-3", "100000", "7"]));
    let mut bigset = c(&["SADD", "bigset"]);
    bigset.extend((0..700).map(|i| format!("m{i}")));
    cmds.push(bigset);
    let mut bigintset = c(&["SADD", "bigintset"]);
    bigintset.extend((0..700).map(|i| (i * 3).to_string()));
    cmds.push(bigintset);
    cmds.push(c(&[
        "ZADD", "zset", "1", "a", "2.5", "b", "-inf", "c", "0.1", "d",
    ]));
    let mut bigz = c(&["ZADD", "bigzset"]);
    for i in 0..300 {
        bigz.push(format!("{}", i as f64 / 7.0));
        bigz.push(format!("member:{i}"));
    }
    cmds.push(bigz);
    for i in 1..=1500 {
        if i % 10 == 0 {
            cmds.push(c(&[
                "XADD",
                "stream",
                &format!("{i}-0"),
                "other",
                &"z".repeat(i % 50),
            ]));
        } else {
            cmds.push(c(&[
                "XADD",
                "stream",
                &format!("{i}-0"),
                "temp",
                &i.to_string(),
                "hum",
                "40",
            ]));
        }
    }
    cmds.push(c(&["XDEL", "stream", "5-0", "6-0", "700-0", "1500-0"]));
    cmds.push(c(&["XGROUP", "CREATE", "stream", "g1", "0"]));
    cmds.push(c(&["XGROUP", "CREATE", "stream", "g2", "$"]));
    cmds.push(c(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "alice",
        "COUNT",
        "30",
        "STREAMS",
        "stream",
        ">",
    ]));
    cmds.push(c(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "bob",
        "COUNT",
        "5",
        "STREAMS",
        "stream",
        ">",
    ]));
    cmds.push(c(&["XACK", "stream", "g1", "3-0", "4-0"]));
    cmds.push(c(&["XADD", "smallstream", "1-1", "a", "b"]));
    cmds
}

/// Key names of `dataset` with their types.
const KEYS: &[&str] = &[
    "str",
    "int",
    "bigint",
    "long",
    "ttl",
    "list",
    "biglist",
    "hugeitems",
    "hash",
    "bighash",
    "intset",
    "bigset",
    "bigintset",
    "zset",
    "bigzset",
    "stream",
    "smallstream",
];

/// Keys whose payload is the same bytes on both servers (hash tables
/// are written in their own, unspecified order).
fn byte_identical(key: &str) -> bool {
    !matches!(key, "bighash" | "bigset" | "bigintset")
}

/// Keys built the same on both servers (a consumer group's delivery and
/// seen times are each server's clock).
fn built_identical(key: &str) -> bool {
    byte_identical(key) && key != "stream"
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Array(mut items) | Value::Set(mut items) => {
            items.sort_by_key(|i| format!("{i:?}"));
            Value::Array(items)
        }
        other => other,
    }
}

/// Every array sorted, at every depth (FUNCTION LIST: libraries and
/// functions come in dictionary order).
fn deep_sorted(v: Value) -> Value {
    match v {
        Value::Array(items) | Value::Set(items) => {
            sorted(Value::Array(items.into_iter().map(deep_sorted).collect()))
        }
        other => other,
    }
}

/// Everything readable about `key`, in a form that does not depend on
/// the server's internal order.
fn contents(r: &mut Raw, key: &str) -> Vec<Value> {
    let t = txt(&r.call(&["TYPE", key]));
    let mut out = vec![r.call(&["TYPE", key]), r.call(&["OBJECT", "ENCODING", key])];
    match t.as_str() {
        "string" => out.push(r.call(&["GET", key])),
        "list" => out.push(r.call(&["LRANGE", key, "0", "-1"])),
        "hash" => out.push(sorted(r.call(&["HGETALL", key]))),
        "set" => out.push(sorted(r.call(&["SMEMBERS", key]))),
        "zset" => out.push(r.call(&["ZRANGE", key, "0", "-1", "WITHSCORES"])),
        "stream" => {
            out.push(r.call(&["XRANGE", key, "-", "+"]));
            out.push(r.call(&["XINFO", "STREAM", key, "FULL"]));
            out.push(r.call(&["XINFO", "GROUPS", key]));
        }
        other => panic!("unexpected type {other} for {key}"),
    }
    let pttl = match r.call(&["PTTL", key]) {
        Value::Integer(n) if n > 0 => 1,
        Value::Integer(n) => n,
        other => panic!("PTTL {other:?}"),
    };
    out.push(Value::Integer(pttl));
    out
}

fn build(r: &mut Raw) {
    for cmd in dataset() {
        let reply = r.cmd(&cmd);
        assert!(!reply.starts_with(b"-"), "{cmd:?}: {}", escape(&reply));
    }
}

fn dump(r: &mut Raw, key: &str) -> Vec<u8> {
    match r.call(&["DUMP", key]) {
        Value::Bulk(b) => b,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

/// TTL in ms for RESTORE: what is left of the key's, or 0.
fn ttl_of(r: &mut Raw, key: &str) -> String {
    match r.call(&["PTTL", key]) {
        Value::Integer(n) if n > 0 => n.to_string(),
        _ => "0".to_string(),
    }
}

#[test]
fn payloads_move_both_ways_for_every_type() {
    let keel = Server::keel();
    let redis = Server::redis();
    let mut k = keel.raw();
    let mut r = redis.raw();
    build(&mut k);
    build(&mut r);
    for key in KEYS {
        let from_redis = dump(&mut r, key);
        let from_keel = dump(&mut k, key);
        if built_identical(key) {
            assert!(
                from_keel == from_redis,
                "DUMP {key} differs from Redis's:\n keel  {}\n redis {}",
                escape(&from_keel[..from_keel.len().min(300)]),
                escape(&from_redis[..from_redis.len().min(300)])
            );
        }
        let copy = format!("copy:{key}");
        let ttl = ttl_of(&mut r, key);
        let ttl = ttl.as_bytes();
        assert_eq!(
            k.cmd(&[b"RESTORE", copy.as_bytes(), ttl, &from_redis]),
            b"+OK\r\n",
            "keel restoring Redis's {key}"
        );
        assert_eq!(
            r.cmd(&[b"RESTORE", copy.as_bytes(), ttl, &from_keel]),
            b"+OK\r\n",
            "Redis restoring keel's {key}"
        );
        // Each side reads the other's value as the other reads it (the
        // stream's consumer times are each builder's own).
        let (in_redis, in_keel) = (contents(&mut r, key), contents(&mut k, key));
        assert_eq!(
            contents(&mut k, &copy),
            in_redis,
            "Redis's {key} restored in keel"
        );
        assert_eq!(
            contents(&mut r, &copy),
            in_keel,
            "keel's {key} restored in Redis"
        );
        if byte_identical(key) {
            // A restored value is laid out as the original: dumped again,
            // the same bytes.
            assert!(dump(&mut k, &copy) == from_redis, "{key} re-dumped differs");
        }
    }
}

/// Strings of every length class and degree of repetition, the same
/// each run (xorshift from a fixed seed).
fn lzf_samples(n: usize) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let alphabets: [&[u8]; 4] = [b"ab", b"abc", b"abcdefgh", b"0123456789-"];
    let lengths = [21, 22, 23, 25, 30, 40, 64, 100, 300, 1000, 5000];
    (0..n)
        .map(|_| {
            let alphabet = alphabets[next() as usize % alphabets.len()];
            let len = lengths[next() as usize % lengths.len()];
            let mut v: Vec<u8> = (0..len)
                .map(|_| alphabet[next() as usize % alphabet.len()])
                .collect();
            if next() % 3 == 0 {
                let period = (1 + next() as usize % 30).min(len);
                v = v[..period].repeat(len / period + 1)[..len].to_vec();
            }
            v
        })
        .collect()
}

/// LZF inside DUMP payloads (and RDB files) is Redis's byte for byte:
/// its liblzf build finds matches a stock liblzf does not.
#[test]
fn compressed_strings_are_redis_bytes() {
    let keel = Server::keel();
    let redis = Server::redis();
    let (mut k, mut r) = (keel.raw(), redis.raw());
    let samples = lzf_samples(2000);
    let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
    for (i, v) in samples.iter().enumerate() {
        let key = format!("lzf:{i}").into_bytes();
        cmds.push(vec![b"SET".to_vec(), key.clone(), v.clone()]);
        cmds.push(vec![b"DUMP".to_vec(), key]);
    }
    let (ours, theirs) = (pipeline(&mut k, &cmds), pipeline(&mut r, &cmds));
    let differ: Vec<usize> = (0..samples.len())
        .filter(|i| ours[2 * i + 1] != theirs[2 * i + 1])
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} payloads differ; the first: {}",
        differ.len(),
        samples.len(),
        escape(&samples[differ[0]])
    );
}

#[test]
fn restore_options_and_metadata() {
    let s = Server::under_test();
    let mut c = s.raw();
    c.cmd(&["SET", "src", "value"]);
    let p = dump(&mut c, "src");
    assert_eq!(
        c.cmd(&[b"RESTORE" as &[u8], b"idle", b"0", &p, b"IDLETIME", b"1000"]),
        b"+OK\r\n"
    );
    let idle = match c.call(&["OBJECT", "IDLETIME", "idle"]) {
        Value::Integer(n) => n,
        other => panic!("{other:?}"),
    };
    assert!((1000..=1002).contains(&idle), "idle {idle}");
    // Under LFU, FREQ sets the counter.
    c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]);
    assert_eq!(
        c.cmd(&[b"RESTORE" as &[u8], b"freq", b"0", &p, b"FREQ", b"77"]),
        b"+OK\r\n"
    );
    assert_eq!(c.call(&["OBJECT", "FREQ", "freq"]), Value::Integer(77));
    c.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    // A relative TTL; ABSTTL; a TTL already past creates nothing.
    assert_eq!(
        c.cmd(&[b"RESTORE" as &[u8], b"t1", b"5000", &p]),
        b"+OK\r\n"
    );
    let pttl = match c.call(&["PTTL", "t1"]) {
        Value::Integer(n) => n,
        other => panic!("{other:?}"),
    };
    assert!((4000..=5000).contains(&pttl), "pttl {pttl}");
    let at = (unix_ms() + 60_000).to_string();
    assert_eq!(
        c.cmd(&[b"RESTORE" as &[u8], b"t2", at.as_bytes(), &p, b"ABSTTL"]),
        b"+OK\r\n"
    );
    assert_eq!(
        c.call(&["PEXPIRETIME", "t2"]),
        Value::Integer(at.parse().unwrap())
    );
    assert_eq!(
        c.cmd(&[b"RESTORE" as &[u8], b"t2", b"1", &p, b"ABSTTL", b"REPLACE"]),
        b"+OK\r\n"
    );
    assert_eq!(c.call(&["EXISTS", "t2"]), Value::Integer(0));
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("keel-it-dump-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn restore_is_logged_and_wakes_blocked_clients() {
    let dir = temp_dir("aof");
    let s = Server::keel_raw(&[
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--save",
        "",
        "--notify-keyspace-events",
        "KEA",
    ]);
    let mut c = s.raw();
    c.cmd(&["RPUSH", "src", "a", "b"]);
    let list = dump(&mut c, "src");
    c.cmd(&["SET", "s", "v"]);
    let string = dump(&mut c, "s");

    let mut sub = s.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:restore"]);
    let mut waiter = s.raw();
    waiter.send_cmd(&["BLPOP", "dst", "0"]);
    wait_blocked(&mut c, 1);
    assert_eq!(
        c.cmd(&[b"RESTORE" as &[u8], b"dst", b"0", &list]),
        b"+OK\r\n"
    );
    assert_eq!(
        parse(&waiter.read_reply()),
        Value::Array(vec![bs("dst"), bs("a")])
    );
    assert_eq!(
        parse(&sub.read_reply()),
        Value::Array(vec![
            bs("pmessage"),
            bs("__keyevent@0__:restore"),
            bs("__keyevent@0__:restore"),
            bs("dst")
        ])
    );

    // A relative TTL is logged as an absolute one; a REPLACE whose TTL
    // is already past logs the deletion.
    assert_eq!(
        c.cmd(&[b"RESTORE" as &[u8], b"t", b"100000", &string]),
        b"+OK\r\n"
    );
    let at = match c.call(&["PEXPIRETIME", "t"]) {
        Value::Integer(n) => n,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        c.cmd(&[
            b"RESTORE" as &[u8],
            b"t",
            b"1",
            &string,
            b"REPLACE",
            b"ABSTTL"
        ]),
        b"+OK\r\n"
    );
    let aof = std::fs::read(dir.join("appendonlydir").join("appendonly.aof.1.incr.aof")).unwrap();
    let aof = String::from_utf8_lossy(&aof).into_owned();
    let abs = format!("$1\r\nt\r\n${}\r\n{at}\r\n", at.to_string().len());
    assert!(aof.contains(&abs), "absolute TTL not logged: {aof:?}");
    assert!(aof.contains("$6\r\nABSTTL\r\n"), "{aof:?}");
    assert!(aof.contains("*2\r\n$3\r\nDEL\r\n$1\r\nt\r\n"), "{aof:?}");
    drop(c);
    drop(s);
    // The log replays: the restored list (minus the popped element).
    let s = Server::keel_raw(&[
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--save",
        "",
    ]);
    let mut c = s.raw();
    assert_eq!(
        c.call(&["LRANGE", "dst", "0", "-1"]),
        Value::Array(vec![bs("b")])
    );
    assert_eq!(c.call(&["EXISTS", "t"]), Value::Integer(0));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

fn migrate(src: &mut Raw, target: &Server, extra: &[&str]) -> Vec<u8> {
    let port = target.port.to_string();
    let mut argv = vec!["MIGRATE", "127.0.0.1", port.as_str()];
    argv.extend_from_slice(extra);
    src.cmd(&argv)
}

/// MIGRATE from `src` to `dst` (keel or Redis on either side).
fn migrate_between(src: &Server, dst: &Server) {
    let mut s = src.raw();
    let mut d = dst.raw();
    s.cmd(&["FLUSHALL"]);
    d.cmd(&["FLUSHALL"]);
    s.cmd(&["RPUSH", "l", "a", "b"]);
    s.cmd(&["SET", "k", "v", "PX", "100000"]);
    s.cmd(&["HSET", "h", "f", "v"]);
    // Single key, destination db 3.
    assert_eq!(migrate(&mut s, dst, &["l", "3", "5000"]), b"+OK\r\n");
    assert_eq!(s.call(&["EXISTS", "l"]), Value::Integer(0));
    d.cmd(&["SELECT", "3"]);
    assert_eq!(
        d.call(&["LRANGE", "l", "0", "-1"]),
        Value::Array(vec![bs("a"), bs("b")])
    );
    // COPY keeps the source; the TTL travels.
    assert_eq!(
        migrate(&mut s, dst, &["k", "3", "5000", "COPY"]),
        b"+OK\r\n"
    );
    assert_eq!(s.call(&["EXISTS", "k"]), Value::Integer(1));
    assert!(matches!(d.call(&["PTTL", "k"]), Value::Integer(n) if n > 90_000));
    // The target holds the key: its error, prefixed.
    assert_eq!(
        migrate(&mut s, dst, &["k", "3", "5000", "COPY"]),
        b"-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n"
    );
    assert_eq!(s.call(&["EXISTS", "k"]), Value::Integer(1));
    // REPLACE, several keys (one missing).
    s.cmd(&["SET", "k", "new"]);
    assert_eq!(
        migrate(
            &mut s,
            dst,
            &["", "3", "5000", "REPLACE", "KEYS", "k", "nokey", "h"]
        ),
        b"+OK\r\n"
    );
    assert_eq!(s.call(&["EXISTS", "k", "h"]), Value::Integer(0));
    assert_eq!(d.call(&["GET", "k"]), bs("new"));
    assert_eq!(d.call(&["HGET", "h", "f"]), bs("v"));
    assert_eq!(migrate(&mut s, dst, &["nokey", "3", "5000"]), b"+NOKEY\r\n");
    // AUTH and AUTH2.
    d.cmd(&["ACL", "SETUSER", "mover", "on", ">pw2", "~*", "+@all"]);
    d.cmd(&["CONFIG", "SET", "requirepass", "pw"]);
    s.cmd(&["SET", "a1", "1"]);
    s.cmd(&["SET", "a2", "2"]);
    // (Redis as the source reuses its connection, authenticated before
    // the password was set: a wrong password shows the target's refusal
    // either way.)
    let refused = migrate(&mut s, dst, &["a1", "0", "5000", "AUTH", "bad"]);
    assert!(
        refused.starts_with(b"-ERR Target instance replied with error: WRONGPASS"),
        "{}",
        escape(&refused)
    );
    assert_eq!(s.call(&["EXISTS", "a1"]), Value::Integer(1));
    // (A connection already authenticated, as Redis's cached one, still
    // ran the RESTORE after the refused AUTH: REPLACE.)
    assert_eq!(
        migrate(&mut s, dst, &["a1", "0", "5000", "REPLACE", "AUTH", "pw"]),
        b"+OK\r\n"
    );
    assert_eq!(
        migrate(&mut s, dst, &["a2", "0", "5000", "AUTH2", "mover", "pw2"]),
        b"+OK\r\n"
    );
    let mut d = dst.raw();
    d.cmd(&["AUTH", "pw"]);
    assert_eq!(
        d.call(&["MGET", "a1", "a2"]),
        Value::Array(vec![bs("1"), bs("2")])
    );
    d.cmd(&["CONFIG", "SET", "requirepass", ""]);
}

#[test]
fn migrate_between_keel_and_redis() {
    let keel = Server::keel();
    let keel2 = Server::keel();
    let redis = Server::redis();
    migrate_between(&keel, &redis);
    migrate_between(&redis, &keel);
    migrate_between(&keel, &keel2);
}

#[test]
fn migrate_io_errors() {
    let keel = Server::keel();
    let mut k = keel.raw();
    k.cmd(&["SET", "k", "v"]);
    let dead = free_port().to_string();
    assert_eq!(
        k.cmd(&["MIGRATE", "127.0.0.1", &dead, "k", "0", "200"]),
        b"-IOERR error or timeout writing to target instance\r\n"
    );
    assert_eq!(
        k.cmd(&["MIGRATE", "no.such.host.invalid", "6379", "k", "0", "200"]),
        b"-IOERR error or timeout connecting to the client\r\n"
    );
    // A target that accepts and never answers: the timeout, then the
    // key stays.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port().to_string();
    let start = std::time::Instant::now();
    assert_eq!(
        k.cmd(&["MIGRATE", "127.0.0.1", &port, "k", "0", "300"]),
        b"-IOERR error or timeout reading to target instance\r\n"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(k.call(&["EXISTS", "k"]), Value::Integer(1));
    // The server kept serving meanwhile and still does.
    assert_eq!(k.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn function_payloads_move_both_ways() {
    let keel = Server::keel();
    let redis = Server::redis();
    let mut k = keel.raw();
    let mut r = redis.raw();
    let lib1 = "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)\nredis.register_function{function_name='f1b', callback=function() return 'b' end, flags={'no-writes'}, description='d'}";
    let lib2 = format!(
        "#!lua name=lib2\n-- {}\nredis.register_function('f2', function() return 2 end)",
        "padding ".repeat(50)
    );
    for c in [&mut k, &mut r] {
        c.cmd(&["FUNCTION", "LOAD", lib1]);
        c.cmd(&["FUNCTION", "LOAD", &lib2]);
    }
    let dump_of = |c: &mut Raw| match c.call(&["FUNCTION", "DUMP"]) {
        Value::Bulk(b) => b,
        other => panic!("{other:?}"),
    };
    let from_keel = dump_of(&mut k);
    let from_redis = dump_of(&mut r);
    let list = |c: &mut Raw| deep_sorted(c.call(&["FUNCTION", "LIST", "WITHCODE"]));
    let want = list(&mut r);
    for (c, payload) in [(&mut k, &from_redis), (&mut r, &from_keel)] {
        c.cmd(&["FUNCTION", "FLUSH"]);
        assert_eq!(
            c.cmd(&[b"FUNCTION" as &[u8], b"RESTORE", payload]),
            b"+OK\r\n"
        );
        assert_eq!(list(c), want);
        assert_eq!(c.call(&["FCALL", "f2", "0"]), Value::Integer(2));
        // Which of the two libraries is named depends on the server's
        // dictionary order.
        let exists = c.cmd(&[b"FUNCTION" as &[u8], b"RESTORE", payload]);
        assert!(
            exists == b"-ERR Library lib1 already exists\r\n"
                || exists == b"-ERR Library lib2 already exists\r\n",
            "{}",
            escape(&exists)
        );
        assert_eq!(
            c.cmd(&[b"FUNCTION" as &[u8], b"RESTORE", payload, b"REPLACE"]),
            b"+OK\r\n"
        );
    }
    // A failed restore leaves the libraries as they were.
    k.cmd(&["FUNCTION", "DELETE", "lib2"]);
    k.cmd(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=other\nredis.register_function('f2', function() return 3 end)",
    ]);
    assert_eq!(
        k.cmd(&[b"FUNCTION" as &[u8], b"RESTORE", &from_redis, b"REPLACE"]),
        b"-ERR Function f2 already exists\r\n"
    );
    assert_eq!(k.call(&["FCALL", "f2", "0"]), Value::Integer(3));
    assert_eq!(
        k.cmd(&[b"FUNCTION" as &[u8], b"RESTORE", &from_redis, b"FLUSH"]),
        b"+OK\r\n"
    );
    assert_eq!(k.call(&["FCALL", "f2", "0"]), Value::Integer(2));
}

/// Redis's CRC64 (Jones), bit by bit: the test must not trust the
/// server's own.
fn crc64(data: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in data {
        crc ^= b as u64;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x95AC_9329_AC4B_C9B5
            } else {
                crc >> 1
            };
        }
    }
    crc
}

fn seal(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&10u16.to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

#[test]
fn hostile_payloads_are_refused_never_a_crash() {
    assert_eq!(crc64(b"123456789"), 0xe9c6d914c4b8d9ca);
    let keel = Server::keel();
    let mut k = keel.raw();
    build(&mut k);
    let mut rng: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for key in KEYS {
        let p = dump(&mut k, key);
        let body = &p[..p.len() - 10];
        for round in 0..60 {
            let mut bad = body.to_vec();
            match round % 4 {
                // Flip bytes.
                0 | 1 => {
                    for _ in 0..1 + next() % 4 {
                        let i = (next() as usize) % bad.len();
                        bad[i] ^= 1 << (next() % 8);
                    }
                }
                // Cut.
                2 => bad.truncate((next() as usize) % bad.len()),
                // Huge lengths where a length was.
                _ => {
                    let i = 1 + (next() as usize) % (bad.len() - 1).max(1);
                    if i < bad.len() {
                        bad[i] = 0x80;
                        bad.splice(i + 1..i + 1, [0xff, 0xff, 0xff, 0xf0]);
                    }
                }
            }
            let reply = k.cmd(&[
                b"RESTORE" as &[u8],
                b"victim",
                b"0",
                &seal(&bad),
                b"REPLACE",
            ]);
            assert!(
                reply == b"+OK\r\n" || reply == b"-ERR Bad data format\r\n",
                "{key} round {round}: {}",
                escape(&reply)
            );
            if reply == b"+OK\r\n" {
                // Whatever was accepted reads back without trouble.
                let _ = contents(&mut k, "victim");
                let _ = dump(&mut k, "victim");
            }
        }
    }
    assert_eq!(k.cmd(&["PING"]), b"+PONG\r\n");
}
