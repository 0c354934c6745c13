//! RDB snapshots: SAVE/BGSAVE/LASTSAVE/DEBUG RELOAD, loading at start,
//! point-in-time images while clients write, the save schedule, the
//! offline checkers, and moving `dump.rdb` and AOF directories between
//! redis-server 7.0 and keel both ways.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::{escape, info_field, Raw, Server};

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "keel-it-rdb-{tag}-{}-{}",
        std::process::id(),
        crate::harness::free_port()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn keel_in(dir: &Path, extra: &[&str]) -> Server {
    let d = dir.to_string_lossy().into_owned();
    let mut args = vec![
        "--dir",
        d.as_str(),
        "--save",
        "",
        "--enable-debug-command",
        "yes",
    ];
    args.extend_from_slice(extra);
    Server::keel_raw(&args)
}

fn redis_in(dir: &Path, extra: &[&str]) -> Server {
    // The harness's redis() uses its own scratch dir; this one shares `dir`.
    let d = dir.to_string_lossy().into_owned();
    let mut args = vec![
        "--save",
        "",
        "--appendonly",
        "no",
        "--enable-debug-command",
        "yes",
        "--dir",
        d.as_str(),
        "--bind",
        "127.0.0.1",
    ];
    args.extend_from_slice(extra);
    Server::start_program("redis-server", "redis-server", &args)
}

/// A raw reply's text (bulk, status, integer), or its debug form.
fn rtext(v: &resp::Value) -> String {
    match v {
        resp::Value::Bulk(b) | resp::Value::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        resp::Value::Integer(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn strings(v: &resp::Value) -> Vec<String> {
    match v {
        resp::Value::Array(items) => items.iter().map(rtext).collect(),
        other => vec![rtext(other)],
    }
}

/// Every key of every database with its type, contents (sets and hashes
/// sorted) and whether it has a TTL: what must survive a save and load.
fn contents(raw: &mut Raw) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for db in 0..16 {
        raw.cmd(&["SELECT", &db.to_string()]);
        let keys = strings(&raw.call(&["KEYS", "*"]));
        for k in keys {
            let t = rtext(&raw.call(&["TYPE", &k]));
            let mut v = match t.as_str() {
                "string" => strings(&raw.call(&["GET", &k])),
                "list" => strings(&raw.call(&["LRANGE", &k, "0", "-1"])),
                "set" => strings(&raw.call(&["SMEMBERS", &k])),
                "hash" => {
                    let flat = strings(&raw.call(&["HGETALL", &k]));
                    flat.chunks(2).map(|p| p.join("=")).collect()
                }
                "zset" => strings(&raw.call(&["ZRANGE", &k, "0", "-1", "WITHSCORES"])),
                "stream" => {
                    let mut v = vec![format!("{:?}", raw.call(&["XRANGE", &k, "-", "+"]))];
                    let info = raw.call(&["XINFO", "STREAM", &k]);
                    // Entries, last id, groups; not the radix-tree shape.
                    if let resp::Value::Array(f) = info {
                        for p in f.chunks(2) {
                            let name = rtext(&p[0]);
                            if [
                                "length",
                                "last-generated-id",
                                "groups",
                                "max-deleted-entry-id",
                                "entries-added",
                            ]
                            .contains(&name.as_str())
                            {
                                v.push(format!("{name}={:?}", p[1]));
                            }
                        }
                    }
                    let groups = raw.call(&["XINFO", "GROUPS", &k]);
                    v.push(format!("{groups:?}"));
                    if let resp::Value::Array(gs) = &groups {
                        for g in gs {
                            if let resp::Value::Array(f) = g {
                                let name = rtext(&f[1]);
                                v.push(format!("{:?}", raw.call(&["XPENDING", &k, &name])));
                            }
                        }
                    }
                    v
                }
                other => panic!("unexpected type {other}"),
            };
            if t == "set" || t == "hash" {
                v.sort();
            }
            let ttl = match raw.call(&["PTTL", &k]) {
                resp::Value::Integer(n) if n > 0 => " ttl",
                _ => "",
            };
            out.insert(format!("{db}:{k}"), format!("{t}{ttl} {v:?}"));
        }
    }
    raw.cmd(&["SELECT", "0"]);
    out
}

/// Writes every type, small and large encodings, expiries, several
/// databases and a function library.
fn populate(raw: &mut Raw) {
    let ok = |r: Vec<u8>| assert!(!r.starts_with(b"-"), "{}", escape(&r));
    ok(raw.cmd(&["DEBUG", "POPULATE", "300", "pop", "20"]));
    ok(raw.cmd(&["SET", "int", "12345"]));
    ok(raw.cmd(&["SET", "neg", "-9000000000"]));
    ok(raw.cmd(&["SET", "bin", "a\u{0}b\r\nc"]));
    ok(raw.cmd(&["SET", "long", &"x".repeat(5000)]));
    ok(raw.cmd(&["SET", "ttl", "v", "EX", "1000"]));
    ok(raw.cmd(&["RPUSH", "list:small", "a", "1", "b"]));
    let many: Vec<String> = (0..1000).map(|i| format!("item-{i}")).collect();
    let mut cmd = vec!["RPUSH", "list:big"];
    cmd.extend(many.iter().map(String::as_str));
    ok(raw.cmd(&cmd));
    ok(raw.cmd(&["SADD", "set:int", "1", "2", "3", "-7"]));
    ok(raw.cmd(&["SADD", "set:str", "a", "b", "c"]));
    let mut cmd = vec!["SADD", "set:big"];
    cmd.extend(many.iter().map(String::as_str));
    ok(raw.cmd(&cmd));
    ok(raw.cmd(&["HSET", "hash:small", "f1", "v1", "f2", "2"]));
    let mut cmd = vec!["HSET", "hash:big"];
    for m in &many {
        cmd.push(m);
        cmd.push(m);
    }
    ok(raw.cmd(&cmd));
    ok(raw.cmd(&["ZADD", "zset:small", "1.5", "a", "-2", "b", "inf", "c"]));
    let scores: Vec<String> = (0..1000).map(|i| format!("{}", i as f64 / 7.0)).collect();
    let mut cmd = vec!["ZADD", "zset:big"];
    for (s, m) in scores.iter().zip(&many) {
        cmd.push(s);
        cmd.push(m);
    }
    ok(raw.cmd(&cmd));
    for i in 0..5 {
        ok(raw.cmd(&[
            "XADD",
            "stream",
            &format!("{}-1", i + 1),
            "f",
            &i.to_string(),
        ]));
    }
    ok(raw.cmd(&["XGROUP", "CREATE", "stream", "g1", "0"]));
    ok(raw.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "alice",
        "COUNT",
        "2",
        "STREAMS",
        "stream",
        ">",
    ]));
    ok(raw.cmd(&["XDEL", "stream", "3-1"]));
    ok(raw.cmd(&["SELECT", "3"]));
    ok(raw.cmd(&["SET", "in-db-3", "yes"]));
    ok(raw.cmd(&["SELECT", "0"]));
    ok(raw.cmd(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return 42 end)",
    ]));
}

fn wait_no_bgsave(raw: &mut Raw) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
        if info_field(&info, "rdb_bgsave_in_progress").as_deref() == Some("0") {
            return;
        }
        assert!(Instant::now() < deadline, "BGSAVE did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn save_then_restart_restores_everything() {
    let dir = scratch("save");
    let before;
    {
        let s = keel_in(&dir, &[]);
        let mut raw = s.raw();
        populate(&mut raw);
        before = contents(&mut raw);
        let last = raw.cmd(&["LASTSAVE"]);
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(raw.cmd(&["SAVE"]), b"+OK\r\n");
        assert_ne!(raw.cmd(&["LASTSAVE"]), last);
        let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
        assert_eq!(
            info_field(&info, "rdb_changes_since_last_save").as_deref(),
            Some("0")
        );
        assert_eq!(info_field(&info, "rdb_saves").as_deref(), Some("1"));
        assert_eq!(
            info_field(&info, "rdb_last_bgsave_status").as_deref(),
            Some("ok")
        );
        // SIGKILL: nothing but the snapshot carries the data over.
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(s.pid() as libc::pid_t, libc::SIGKILL);
        }
    }
    let s = keel_in(&dir, &[]);
    let mut raw = s.raw();
    assert_eq!(contents(&mut raw), before);
    assert_eq!(raw.cmd(&["FCALL", "myfunc", "0"]), b":42\r\n");
    let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
    assert_eq!(
        info_field(&info, "rdb_last_load_keys_loaded"),
        Some(before.len().to_string())
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bgsave_is_point_in_time_while_clients_write() {
    // One BGSAVE, then writes to every key, then load the image: it holds
    // the values as of the BGSAVE reply. 20,000 keys spread over every
    // shard, so the writes land in shards the snapshot has not written.
    let dir = scratch("bgsave2");
    let s = keel_in(&dir, &[]);
    let mut raw = s.raw();
    let mut batch = Vec::new();
    for i in 0..20000 {
        let k = format!("k{i}");
        resp::encode::command(&mut batch, &[b"SET".as_slice(), k.as_bytes(), b"old"]);
    }
    raw.send(&batch);
    for _ in 0..20000 {
        raw.read_reply();
    }
    assert_eq!(raw.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    let mut batch = Vec::new();
    for i in 0..20000 {
        let k = format!("k{i}");
        resp::encode::command(&mut batch, &[b"SET".as_slice(), k.as_bytes(), b"new"]);
    }
    raw.send(&batch);
    for _ in 0..20000 {
        raw.read_reply();
    }
    wait_no_bgsave(&mut raw);
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(s.pid() as libc::pid_t, libc::SIGKILL);
    }
    drop(raw);
    drop(s);
    let s = keel_in(&dir, &[]);
    let mut raw = s.raw();
    assert_eq!(raw.cmd(&["DBSIZE"]), b":20000\r\n");
    for i in (0..20000).step_by(97) {
        assert_eq!(
            raw.cmd(&["GET", &format!("k{i}")]),
            b"$3\r\nold\r\n",
            "k{i} changed after BGSAVE started but is in the image"
        );
    }
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fills databases 0, 1 and 2 with 3,000 keys each (values name their
/// database), pipelined.
fn fill_three_databases(raw: &mut Raw) {
    for (db, prefix) in [(0, "a"), (1, "b"), (2, "c")] {
        let mut batch = Vec::new();
        let dbs = db.to_string();
        resp::encode::command(&mut batch, &[b"SELECT".as_slice(), dbs.as_bytes()]);
        for i in 0..3000 {
            let k = format!("{prefix}{i}");
            resp::encode::command(
                &mut batch,
                &[b"SET".as_slice(), k.as_bytes(), dbs.as_bytes()],
            );
        }
        raw.send(&batch);
        for _ in 0..3001 {
            raw.read_reply();
        }
    }
    raw.cmd(&["SELECT", "0"]);
}

/// Sends `start` (BGSAVE or BGREWRITEAOF) and, in the same pipeline, the
/// commands that change every slot at once (`flush_all`: FLUSHALL, or
/// FLUSHDB to keep most keys), then INFO persistence;
/// returns INFO's text (read before the save can have ended: the
/// capture sleeps per key).
fn reshape_while(raw: &mut Raw, start: &str, flush_all: &str) -> String {
    let commands: &[&[&str]] = &[
        &[start],
        &["SWAPDB", "0", "1"],
        &["SET", "a0", "after"],
        &["SELECT", "2"],
        &["FLUSHDB"],
        &["SET", "c0", "after"],
        &["SELECT", "1"],
        &[flush_all, "ASYNC"],
        &["SET", "z", "after"],
        &["SWAPDB", "1", "3"],
        &["SORT", "missing", "STORE", "dst"],
        &["SORT", "missing", "BY", "nosort"],
        &["SELECT", "0"],
        &["INFO", "persistence"],
    ];
    let mut batch = Vec::new();
    for c in commands {
        resp::encode::command(&mut batch, c);
    }
    raw.send(&batch);
    let replies: Vec<Vec<u8>> = commands.iter().map(|_| raw.read_reply()).collect();
    for (c, r) in commands.iter().zip(&replies) {
        assert_ne!(r.first(), Some(&b'-'), "{c:?} failed: {}", escape(r));
    }
    String::from_utf8_lossy(replies.last().unwrap()).into_owned()
}

/// A BGSAVE holds the dataset as of its start through SWAPDB, FLUSHDB,
/// FLUSHALL ASYNC and SORT ... STORE run while it saves (commands that
/// change every slot at once: the snapshot renumbers databases and keeps
/// the flushed keys instead of copying the dataset).
#[test]
fn bgsave_is_point_in_time_through_swapdb_and_flushes() {
    let dir = scratch("reshape");
    let s = keel_in(&dir, &[]);
    let mut raw = s.raw();
    fill_three_databases(&mut raw);
    let before = contents(&mut raw);
    assert_eq!(
        raw.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "300"]),
        b"+OK\r\n"
    );
    let info = reshape_while(&mut raw, "BGSAVE", "FLUSHALL");
    assert_eq!(
        info_field(&info, "rdb_bgsave_in_progress").as_deref(),
        Some("1"),
        "the save should still run after the pipeline"
    );
    assert_eq!(
        raw.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]),
        b"+OK\r\n"
    );
    wait_no_bgsave(&mut raw);
    let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
    assert_eq!(
        info_field(&info, "rdb_last_bgsave_status").as_deref(),
        Some("ok")
    );
    drop(raw);
    assert_eq!(contents_after_sigkill(s, &dir, &[]), before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Kills `s` with SIGKILL, starts keel again on `dir` with `args` and
/// returns what it loaded.
fn contents_after_sigkill(s: Server, dir: &Path, args: &[&str]) -> BTreeMap<String, String> {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(s.pid() as libc::pid_t, libc::SIGKILL);
    }
    drop(s);
    let s = keel_in(dir, args);
    let mut raw = s.raw();
    contents(&mut raw)
}

/// The same commands during an AOF rewrite: the new base is the dataset
/// at the switch, so base plus log replays to what the server held.
#[test]
fn aof_rewrite_is_point_in_time_through_swapdb_and_flushes() {
    let dir = scratch("reshape-aof");
    let s = keel_in(&dir, &["--appendonly", "yes"]);
    let mut raw = s.raw();
    fill_three_databases(&mut raw);
    assert_eq!(
        raw.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "300"]),
        b"+OK\r\n"
    );
    let info = reshape_while(&mut raw, "BGREWRITEAOF", "FLUSHDB");
    assert_eq!(
        info_field(&info, "aof_rewrite_in_progress").as_deref(),
        Some("1"),
        "the rewrite should still run after the pipeline"
    );
    // Writes after the reshaping, while the rewrite goes on.
    for db in 0..4 {
        raw.cmd(&["SELECT", &db.to_string()]);
        assert_eq!(raw.cmd(&["SET", "late", &db.to_string()]), b"+OK\r\n");
    }
    raw.cmd(&["SELECT", "0"]);
    assert_eq!(
        raw.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]),
        b"+OK\r\n"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
        if info_field(&info, "aof_rewrite_in_progress").as_deref() == Some("0") {
            assert_eq!(
                info_field(&info, "aof_last_bgrewrite_status").as_deref(),
                Some("ok")
            );
            break;
        }
        assert!(Instant::now() < deadline, "the rewrite did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = contents(&mut raw);
    // Database 0: what database 1 held, a0 and late; 1: late; 2: c0 and
    // late; 3: z and late (database 1's, swapped).
    assert_eq!(
        after.len(),
        3002 + 1 + 2 + 2,
        "{:?}",
        after.keys().take(5).collect::<Vec<_>>()
    );
    drop(raw);
    assert_eq!(
        contents_after_sigkill(s, &dir, &["--appendonly", "yes"]),
        after
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bgsave_replies_and_schedule() {
    let dir = scratch("sched");
    let s = keel_in(&dir, &[]);
    let mut raw = s.raw();
    assert_eq!(
        escape(&raw.cmd(&["BGSAVE", "NOW"])),
        "-ERR syntax error\\r\\n"
    );
    raw.cmd(&["SET", "a", "1"]);
    // A save point of 1 change in 1 second fires from the cron.
    assert_eq!(raw.cmd(&["CONFIG", "SET", "save", "1 1"]), b"+OK\r\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
        if info_field(&info, "rdb_saves").as_deref() == Some("1")
            && info_field(&info, "rdb_bgsave_in_progress").as_deref() == Some("0")
        {
            assert_eq!(
                info_field(&info, "rdb_changes_since_last_save").as_deref(),
                Some("0")
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the save point did not fire: {info}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(dir.join("dump.rdb").exists());
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn debug_reload_keeps_the_dataset() {
    let dir = scratch("reload");
    let s = keel_in(&dir, &[]);
    let mut raw = s.raw();
    populate(&mut raw);
    let before = contents(&mut raw);
    assert_eq!(raw.cmd(&["DEBUG", "RELOAD"]), b"+OK\r\n");
    assert_eq!(contents(&mut raw), before);
    assert_eq!(raw.cmd(&["FCALL", "myfunc", "0"]), b":42\r\n");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shutdown_saves_when_save_points_are_set() {
    let dir = scratch("shutdown");
    let d = dir.to_string_lossy().into_owned();
    let mut s = Server::keel_raw(&["--dir", d.as_str()]);
    let mut raw = s.raw();
    raw.cmd(&["SET", "kept", "1"]);
    raw.send_cmd(&["SHUTDOWN"]);
    assert!(s.wait_exit(Duration::from_secs(10)).is_some());
    assert!(
        dir.join("dump.rdb").exists(),
        "SHUTDOWN with the default save points writes dump.rdb"
    );
    let s = Server::keel_raw(&["--dir", d.as_str()]);
    assert_eq!(s.raw().cmd(&["GET", "kept"]), b"$1\r\n1\r\n");
    let mut raw = s.raw();
    raw.cmd(&["SET", "lost", "1"]);
    let mut s = s;
    raw.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    // Exited by itself: dropping the harness's handle earlier would send
    // SIGTERM, which saves (the save points are set).
    assert!(s.wait_exit(Duration::from_secs(10)).is_some());
    drop(raw);
    drop(s);
    let s = Server::keel_raw(&["--dir", d.as_str()]);
    assert_eq!(s.raw().cmd(&["GET", "lost"]), b"$-1\r\n");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_dump_loads_into_keel_and_keel_dump_loads_into_redis() {
    // Redis → keel.
    let dir = scratch("interop");
    let expected;
    {
        let r = redis_in(&dir, &[]);
        let mut raw = r.raw();
        populate(&mut raw);
        expected = contents(&mut raw);
        assert_eq!(raw.cmd(&["SAVE"]), b"+OK\r\n");
    }
    {
        let k = keel_in(&dir, &[]);
        let mut raw = k.raw();
        assert_eq!(
            contents(&mut raw),
            expected,
            "redis-server's dump.rdb as keel loads it"
        );
        assert_eq!(raw.cmd(&["FCALL", "myfunc", "0"]), b":42\r\n");
        // keel → Redis: keel writes the file over, Redis loads it.
        std::fs::remove_file(dir.join("dump.rdb")).unwrap();
        assert_eq!(raw.cmd(&["SAVE"]), b"+OK\r\n");
    }
    let out = std::process::Command::new("redis-check-rdb")
        .arg(dir.join("dump.rdb"))
        .output()
        .expect("redis-check-rdb (package redis-tools) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("RDB looks OK"), "redis-check-rdb: {text}");
    let r = redis_in(&dir, &[]);
    let mut raw = r.raw();
    assert_eq!(
        contents(&mut raw),
        expected,
        "keel's dump.rdb as redis-server loads it"
    );
    assert_eq!(raw.cmd(&["FCALL", "myfunc", "0"]), b":42\r\n");
    drop(r);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_aof_with_rdb_base_loads_into_keel() {
    let dir = scratch("aof");
    let expected;
    {
        let r = redis_in(
            &dir,
            &["--appendonly", "yes", "--aof-use-rdb-preamble", "yes"],
        );
        let mut raw = r.raw();
        populate(&mut raw);
        // A rewrite makes an RDB base; later writes go to the increment.
        assert!(raw.cmd(&["BGREWRITEAOF"]).starts_with(b"+Background"));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
            if info_field(&info, "aof_rewrite_in_progress").as_deref() == Some("0")
                && info_field(&info, "aof_rewrite_scheduled").as_deref() == Some("0")
            {
                break;
            }
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(50));
        }
        raw.cmd(&["RPUSH", "list:small", "after-rewrite"]);
        raw.cmd(&["DEL", "set:str"]);
        expected = contents(&mut raw);
    }
    let bases: Vec<_> = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".base.rdb"))
        .collect();
    assert_eq!(bases.len(), 1, "redis wrote an RDB base");
    let k = keel_in(&dir, &["--appendonly", "yes"]);
    let mut raw = k.raw();
    assert_eq!(contents(&mut raw), expected);
    // keel's own rewrite also writes an RDB base, which keel and
    // redis-check-aof read.
    assert!(raw.cmd(&["BGREWRITEAOF"]).starts_with(b"+Background"));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
        if info_field(&info, "aof_rewrite_in_progress").as_deref() == Some("0") {
            break;
        }
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
    raw.cmd(&["SET", "after-keel-rewrite", "1"]);
    let expected = contents(&mut raw);
    drop(raw);
    drop(k);
    let k = keel_in(&dir, &["--appendonly", "yes"]);
    assert_eq!(contents(&mut k.raw()), expected);
    drop(k);
    let out = std::process::Command::new("redis-check-aof")
        .arg(dir.join("appendonlydir").join("appendonly.aof.manifest"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("are valid"), "redis-check-aof: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_rdb_and_check_aof() {
    let dir = scratch("check");
    {
        let s = keel_in(&dir, &[]);
        let mut raw = s.raw();
        populate(&mut raw);
        assert_eq!(raw.cmd(&["SAVE"]), b"+OK\r\n");
    }
    let bin = env!("CARGO_BIN_EXE_keel-server");
    let rdb = dir.join("dump.rdb");
    let out = std::process::Command::new(bin)
        .arg("--check-rdb")
        .arg(&rdb)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("RDB looks OK"),
        "{text}"
    );
    // Cut short: reported with an offset, non-zero exit.
    let data = std::fs::read(&rdb).unwrap();
    let cut = dir.join("cut.rdb");
    std::fs::write(&cut, &data[..data.len() / 2]).unwrap();
    let out = std::process::Command::new(bin)
        .arg("--check-rdb")
        .arg(&cut)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.contains("RDB ERROR DETECTED") && text.contains("offset"),
        "{text}"
    );
    // A corrupt dump stops the start with the file named, and is kept.
    std::fs::write(&rdb, &data[..data.len() / 2]).unwrap();
    let d = dir.to_string_lossy().into_owned();
    let out = std::process::Command::new(bin)
        .args([
            "--port",
            "0",
            "--unixsocket",
            &format!("{d}/s.sock"),
            "--dir",
            &d,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("dump.rdb"), "{all}");
    assert_eq!(std::fs::read(&rdb).unwrap().len(), data.len() / 2);

    // An AOF with a torn last record: --check-aof reports, --fix cuts it.
    let aof = dir.join("torn.aof");
    std::fs::write(&aof, b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*3\r\n$3\r\nSET\r\n$1\r\nb").unwrap();
    let out = std::process::Command::new(bin)
        .arg("--check-aof")
        .arg(&aof)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.contains("ok_up_to=50"),
        "{text}"
    );
    let out = std::process::Command::new(bin)
        .args(["--check-aof"])
        .arg(&aof)
        .arg("--fix")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Successfully truncated"),
        "{text}"
    );
    assert_eq!(std::fs::metadata(&aof).unwrap().len(), 50);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn failed_save_is_reported_and_stops_writes() {
    let dir = scratch("info");
    let s = keel_in(&dir, &[]);
    let mut raw = s.raw();
    raw.cmd(&["SET", "a", "1"]);
    let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
    assert_eq!(
        info_field(&info, "rdb_changes_since_last_save").as_deref(),
        Some("1")
    );
    assert_eq!(
        info_field(&info, "rdb_bgsave_in_progress").as_deref(),
        Some("0")
    );
    // dump.rdb is a directory: the rename fails (even for root).
    std::fs::create_dir_all(dir.join("dump.rdb")).unwrap();
    assert_eq!(raw.cmd(&["SAVE"]), b"-ERR\r\n");
    let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
    assert_eq!(
        info_field(&info, "rdb_last_bgsave_status").as_deref(),
        Some("err")
    );
    assert_eq!(
        info_field(&info, "rdb_changes_since_last_save").as_deref(),
        Some("1")
    );
    // No save points: writes go on.
    assert_eq!(raw.cmd(&["SET", "b", "1"]), b"+OK\r\n");
    // With save points and stop-writes-on-bgsave-error yes: MISCONF.
    assert_eq!(raw.cmd(&["CONFIG", "SET", "save", "3600 1"]), b"+OK\r\n");
    let r = raw.cmd(&["SET", "c", "1"]);
    assert!(
        r.starts_with(b"-MISCONF Redis is configured to save RDB snapshots"),
        "{}",
        escape(&r)
    );
    assert_eq!(raw.cmd(&["GET", "a"]), b"$1\r\n1\r\n");
    std::fs::remove_dir_all(dir.join("dump.rdb")).unwrap();
    assert_eq!(raw.cmd(&["SAVE"]), b"+OK\r\n");
    assert_eq!(raw.cmd(&["SET", "c", "1"]), b"+OK\r\n");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn debug_populate_and_reload_inside_transactions() {
    let s = Server::keel();
    let mut raw = s.raw();
    assert_eq!(raw.cmd(&["MULTI"]), b"+OK\r\n");
    raw.cmd(&["SET", "a", "1"]);
    raw.cmd(&["DEBUG", "POPULATE", "5", "p"]);
    raw.cmd(&["DBSIZE"]);
    assert_eq!(raw.cmd(&["EXEC"]), b"*3\r\n+OK\r\n+OK\r\n:6\r\n");
    assert_eq!(raw.cmd(&["GET", "p:4"]), b"$7\r\nvalue:4\r\n");
    // Existing keys are kept; a size pads (or cuts) the value.
    assert_eq!(raw.cmd(&["DEBUG", "POPULATE", "7", "p", "3"]), b"+OK\r\n");
    assert_eq!(raw.cmd(&["GET", "p:4"]), b"$7\r\nvalue:4\r\n");
    assert_eq!(raw.cmd(&["GET", "p:6"]), b"$3\r\nval\r\n");
    assert_eq!(
        raw.cmd(&["DEBUG", "POPULATE", "-1"]),
        b"-ERR value is out of range, must be positive\r\n"
    );
    // RELOAD takes every shard itself: refused inside a transaction
    // rather than waiting for the transaction's own locks.
    assert_eq!(raw.cmd(&["MULTI"]), b"+OK\r\n");
    raw.cmd(&["DEBUG", "RELOAD"]);
    assert_eq!(
        raw.cmd(&["EXEC"]),
        b"*1\r\n-ERR DEBUG RELOAD is not allowed inside a transaction\r\n"
    );
    assert_eq!(raw.cmd(&["DBSIZE"]), b":8\r\n");
}

/// `rdb_bgsave_in_progress` drops to 0 only once `dump.rdb` is in place,
/// as in Redis: a client waiting for a BGSAVE to finish finds the file.
/// The snapshot's fsyncs are slowed to 300 ms (bench/slowfsync.c), so a
/// flag cleared before the file is installed would show.
#[test]
fn bgsave_in_progress_until_the_file_is_in_place() {
    let dir = scratch("installed");
    let shim = crate::harness::compile_shim(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/slowfsync.c"),
        "slowfsync",
    );
    let d = dir.to_string_lossy().into_owned();
    let s = Server::keel_raw_env(
        &["--dir", &d, "--save", ""],
        &[
            ("LD_PRELOAD", shim.to_str().unwrap()),
            ("SLOWFSYNC_US", "300000"),
        ],
    );
    let mut raw = s.raw();
    assert_eq!(raw.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    assert_eq!(raw.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut polls = 0;
    loop {
        let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "persistence"])).into_owned();
        if info_field(&info, "rdb_bgsave_in_progress").as_deref() == Some("0") {
            assert!(
                dir.join("dump.rdb").exists(),
                "BGSAVE reported done before dump.rdb exists"
            );
            assert_eq!(info_field(&info, "rdb_saves").as_deref(), Some("1"));
            break;
        }
        polls += 1;
        assert!(Instant::now() < deadline, "BGSAVE did not finish");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        polls > 0,
        "the slowed fsync should keep the save in progress for a while"
    );
    let _ = std::fs::remove_file(&shim);
    drop(raw);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An AOF written by Redis with `aof-timestamp-enabled yes` carries
/// `#TS:<unix time>` annotation lines between records: keel's loader and
/// `--check-aof` skip them, as Redis's do.
#[test]
fn redis_aof_with_timestamp_annotations_loads() {
    let dir = scratch("aof-ts");
    let r = redis_in(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--aof-timestamp-enabled",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
        ],
    );
    let mut raw = r.raw();
    assert_eq!(raw.cmd(&["SET", "a", "1"]), b"+OK\r\n");
    assert_eq!(raw.cmd(&["RPUSH", "l", "x", "y"]), b":2\r\n");
    // Annotations are written once a second at most: a later write gets one.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(raw.cmd(&["SET", "b", "2"]), b"+OK\r\n");
    let expected = contents(&mut raw);
    drop(raw);
    drop(r);
    let aof_dir = dir.join("appendonlydir");
    let annotated = std::fs::read_dir(&aof_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".incr.aof"))
        .any(|e| {
            std::fs::read(e.path())
                .unwrap()
                .windows(4)
                .any(|w| w == b"#TS:")
        });
    assert!(annotated, "redis-server wrote no #TS: annotation");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keel-server"))
        .arg("--check-aof")
        .arg(aof_dir.join("appendonly.aof.manifest"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("are valid"), "{text}");
    let k = keel_in(&dir, &["--appendonly", "yes"]);
    assert_eq!(contents(&mut k.raw()), expected);
    drop(k);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `aof-timestamp-enabled yes`: keel writes Redis's `#TS:` annotation
/// before the first record of each second; the log stays valid for
/// redis-check-aof and loads into keel and redis-server alike.
#[test]
fn keel_writes_timestamp_annotations() {
    let dir = scratch("keel-ts");
    let k = keel_in(
        &dir,
        &["--appendonly", "yes", "--aof-timestamp-enabled", "yes"],
    );
    let mut raw = k.raw();
    assert_eq!(
        raw.cmd(&["CONFIG", "GET", "aof-timestamp-enabled"]),
        b"*2\r\n$21\r\naof-timestamp-enabled\r\n$3\r\nyes\r\n"
    );
    assert_eq!(raw.cmd(&["SET", "a", "1"]), b"+OK\r\n");
    assert_eq!(raw.cmd(&["SET", "b", "2"]), b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(raw.cmd(&["RPUSH", "l", "x"]), b":1\r\n");
    let expected = contents(&mut raw);
    drop(raw);
    drop(k);
    let aof_dir = dir.join("appendonlydir");
    let log = std::fs::read(aof_dir.join("appendonly.aof.1.incr.aof")).unwrap();
    let text = String::from_utf8_lossy(&log).into_owned();
    let stamps: Vec<&str> = text.lines().filter(|l| l.starts_with("#TS:")).collect();
    assert_eq!(
        stamps.len(),
        2,
        "one annotation per second with writes: {text:?}"
    );
    assert!(text.starts_with("#TS:"), "{text:?}");
    let out = std::process::Command::new("redis-check-aof")
        .arg(aof_dir.join("appendonly.aof.manifest"))
        .output()
        .expect("redis-check-aof (package redis-tools) must be installed");
    let check = String::from_utf8_lossy(&out.stdout);
    assert!(check.contains("are valid"), "redis-check-aof: {check}");
    let k = keel_in(&dir, &["--appendonly", "yes"]);
    assert_eq!(contents(&mut k.raw()), expected);
    drop(k);
    let r = redis_in(&dir, &["--appendonly", "yes"]);
    assert_eq!(contents(&mut r.raw()), expected);
    drop(r);
    let _ = std::fs::remove_dir_all(&dir);
}
