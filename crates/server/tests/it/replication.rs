//! Master/replica replication (Redis 7.0's PSYNC protocol): full
//! synchronisation then the command stream, read-only replicas, partial
//! resynchronisation after a dropped link, a promotion and a restart,
//! expiry driven by the master, ROLE, WAIT, min-replicas-to-write,
//! acknowledged writes surviving a SIGKILL of the master and a FAILOVER,
//! and PUBLISH reaching the replicas' subscribers.
//!
//! Every scenario is a function of the two server kinds and runs four
//! ways: `redis_to_redis` (real redis-server on both sides: checks the
//! test itself; `cargo test --test it -- redis_to_redis`), `keel_to_keel`,
//! `redis_to_keel` (a keel replica of a Redis master) and `keel_to_redis`.
//!
//! Nothing waits for a fixed time: every step polls for a state (link up,
//! offsets equal, a counter reached) with a generous deadline that only
//! fails the test when the state never comes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resp::Value;

use crate::eqb;
use crate::harness::{escape, free_port, info, info_field, parse, require_tool, Raw, ReadError};
use crate::harness::{show, split, wait_for, Server};

/// The server program on one side of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Keel,
    Redis,
}

/// A server in a scratch directory of its own (kept across a restart),
/// logging to `server.log` there; the log's tail is printed when the test
/// fails.
struct Node {
    server: Option<Server>,
    kind: Kind,
    dir: PathBuf,
    keep_dir: bool,
}

fn scratch_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "keel-it-repl-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        free_port()
    ));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

impl Node {
    fn start(kind: Kind, extra: &[&str]) -> Node {
        Node::start_in(kind, scratch_dir(), extra)
    }

    /// A server of `kind` in `dir` (what it saved there before is loaded).
    fn start_in(kind: Kind, dir: PathBuf, extra: &[&str]) -> Node {
        let d = dir.to_string_lossy().into_owned();
        let log = dir.join("server.log").to_string_lossy().into_owned();
        let mut args: Vec<&str> = vec![
            "--save",
            "",
            "--dir",
            d.as_str(),
            "--logfile",
            log.as_str(),
            "--enable-debug-command",
            "yes",
            // Redis 7.0 waits 5 s by default for more replicas before a
            // diskless full sync.
            "--repl-diskless-sync-delay",
            "0",
        ];
        let server = match kind {
            Kind::Keel => {
                args.extend_from_slice(extra);
                Server::keel_raw(&args)
            }
            Kind::Redis => {
                require_tool("redis-server", "redis-server");
                args.extend_from_slice(&["--appendonly", "no", "--daemonize", "no"]);
                args.extend_from_slice(&["--bind", "127.0.0.1"]);
                args.extend_from_slice(extra);
                Server::start_program("redis-server", "redis-server", &args)
            }
        };
        Node {
            server: Some(server),
            kind,
            dir,
            keep_dir: false,
        }
    }

    fn server(&self) -> &Server {
        self.server.as_ref().expect("server is running")
    }

    fn port(&self) -> u16 {
        self.server().port
    }

    fn raw(&self) -> Raw {
        self.server().raw()
    }

    fn info(&self, section: &str) -> String {
        info(&mut self.raw(), section)
    }

    /// `REPLICAOF 127.0.0.1 <master's port>`.
    fn replicate(&self, master: &Node) {
        let port = master.port().to_string();
        eqb!(
            self.raw().cmd(&["REPLICAOF", "127.0.0.1", port.as_str()]),
            b"+OK\r\n",
            "REPLICAOF on the {:?} replica",
            self.kind
        );
    }

    /// Stops the server (already exited, or SIGTERM) and keeps its
    /// directory for a restart.
    fn stop_keep_dir(&mut self) -> PathBuf {
        self.server = None;
        self.keep_dir = true;
        self.dir.clone()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let from = lines.len().saturating_sub(40);
            eprintln!(
                "---- {:?} server (port {:?}) log, last {} lines ----\n{}",
                self.kind,
                self.server.as_ref().map(|s| s.port),
                lines.len() - from,
                lines[from..].join("\n")
            );
        }
        self.server = None;
        if !self.keep_dir {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Runs a command and asserts that it did not fail.
fn run<A: AsRef<[u8]>>(c: &mut Raw, argv: &[A]) -> Vec<u8> {
    let r = c.cmd(argv);
    assert!(
        !r.starts_with(b"-"),
        "`{}` failed: {}",
        show(argv),
        escape(&r)
    );
    r
}

/// Runs a command line (redis-cli quoting) and asserts that it did not
/// fail.
fn line(c: &mut Raw, l: &str) -> Vec<u8> {
    run(c, &split(l))
}

fn u64_field(text: &str, name: &str) -> Result<u64, String> {
    info_field(text, name)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no integer {name} in\n{text}"))
}

/// Waits until every replica's link is up and its offset is the
/// master's, and the master lists each of them as `online` (after a
/// diskless full sync, only once the replica's first REPLCONF ACK
/// arrived: WAIT and min-replicas-to-write count online replicas only);
/// returns that offset.
fn wait_in_sync(master: &Node, replicas: &[&Node]) -> u64 {
    wait_for("the replicas to be in sync with the master", || {
        let m = master.info("replication");
        let offset = u64_field(&m, "master_repl_offset")?;
        for r in replicas {
            let online = format!("port={},state=online,", r.port());
            let listed = m
                .lines()
                .any(|l| l.starts_with("slave") && l.contains(&online));
            let t = r.info("replication");
            let up = info_field(&t, "master_link_status").as_deref() == Some("up");
            if !listed || !up || u64_field(&t, "master_repl_offset")? != offset {
                return Err(format!("master:\n{m}\nreplica:\n{t}"));
            }
        }
        Ok(offset)
    })
}

/// The master's `sync_full` and `sync_partial_ok` (INFO stats).
fn sync_stats(master: &Node) -> (u64, u64) {
    let t = master.info("stats");
    (
        u64_field(&t, "sync_full").unwrap(),
        u64_field(&t, "sync_partial_ok").unwrap(),
    )
}

/// Waits until `master` counted `partial_ok` partial resynchronisations
/// and `replica` is in sync again.
fn wait_partial_resync(master: &Node, replica: &Node, partial_ok: u64) {
    wait_for("a partial resynchronisation", || {
        let (_, ok) = sync_stats(master);
        if ok < partial_ok {
            return Err(format!("sync_partial_ok:{ok}, want {partial_ok}"));
        }
        Ok(())
    });
    wait_in_sync(master, &[replica]);
}

// ---------------------------------------------------------------------------
// Data sets: every type, several databases, keys with a time to live.

/// Writes keys of every type and encoding under `tag:` in databases 0, 1,
/// 9 and 15 (then selects 0). Every time to live is long: nothing expires
/// during a test.
fn populate(c: &mut Raw, tag: &str) {
    let numbers = |n: usize, f: &dyn Fn(usize) -> String| -> String {
        (0..n).map(f).collect::<Vec<_>>().join(" ")
    };
    let now = crate::harness::unix_secs();
    line(c, "SELECT 0");
    for l in [
        format!("SET {tag}:s hello"),
        format!("SET {tag}:int 12345"),
        format!("SET {tag}:neg -7"),
        format!("SET {tag}:big {}", "x".repeat(300)),
        format!("SET {tag}:bin \"\\x00\\r\\n\\xff binary\""),
        format!("SET {tag}:empty \"\""),
        format!("SET {tag}:float 1.5"),
        format!("SETBIT {tag}:bits 100 1"),
        format!("PFADD {tag}:hll a b c"),
        format!("RPUSH {tag}:small_list a b c 1 2 3"),
        format!("RPUSH {tag}:big_list {}", numbers(1000, &|i| i.to_string())),
        format!("RPUSH {tag}:sortme 5 3 9 1"),
        format!("HSET {tag}:small_hash f1 v1 f2 v2 n 10"),
        format!(
            "HSET {tag}:big_hash {}",
            numbers(200, &|i| format!("f{i} value-{i}"))
        ),
        format!("SADD {tag}:ints_set 1 2 3 100000"),
        format!("SADD {tag}:strs_set a b c"),
        format!("SADD {tag}:big_set {}", numbers(600, &|i| format!("m{i}"))),
        format!("ZADD {tag}:small_zset 1 a 2.5 b -3 c"),
        format!(
            "ZADD {tag}:big_zset {}",
            numbers(300, &|i| format!("{}.5 m{i}", i))
        ),
        format!("GEOADD {tag}:geo 13.361389 38.115556 Palermo 15.087269 37.502669 Catania"),
        format!("XADD {tag}:stream 1-1 f v"),
        format!("XADD {tag}:stream 2-0 a b"),
        format!("XADD {tag}:stream 3-0 c d"),
        format!("XADD {tag}:stream * e f"),
        format!("XGROUP CREATE {tag}:stream g1 0"),
        format!("XGROUP CREATE {tag}:stream g2 $"),
        format!("XREADGROUP GROUP g1 alice COUNT 2 STREAMS {tag}:stream >"),
        format!("XDEL {tag}:stream 1-1"),
        format!("XADD {tag}:stream2 1-0 a 1"),
        format!("XADD {tag}:stream2 2-0 a 2"),
        format!("XADD {tag}:stream2 3-0 a 3"),
        format!("SET {tag}:ttl_s v EX 3600"),
        format!("SET {tag}:ttl_s2 v PX 4000000"),
        format!("RPUSH {tag}:ttl_l a b"),
        format!("PEXPIRE {tag}:ttl_l 3600000"),
        format!("HSET {tag}:ttl_h f v"),
        format!("EXPIREAT {tag}:ttl_h {}", now + 7200),
        format!("ZADD {tag}:ttl_z 1 a"),
        format!("EXPIRE {tag}:ttl_z 5000"),
        format!("SADD {tag}:ttl_set x y"),
        format!("PEXPIREAT {tag}:ttl_set {}", (now + 9000) * 1000),
        "SELECT 1".to_string(),
        format!("SET {tag}:db1_s db1"),
        format!("RPUSH {tag}:db1_l x y"),
        "SELECT 9".to_string(),
        format!("HSET {tag}:db9_h a b"),
        format!("SET {tag}:db9_ttl v PX 3600000"),
        "SELECT 15".to_string(),
        format!("SADD {tag}:db15_set x"),
        "SELECT 0".to_string(),
    ] {
        line(c, &l);
    }
}

/// Changes the data `populate(c, "a")` wrote with commands whose
/// propagation differs from what the client sent (random or relative
/// ones, blocking ones, scripts, transactions), then writes the same
/// data again under `b:`.
fn mutate(master: &Node, c: &mut Raw) {
    line(c, "SELECT 0");
    for l in [
        "DEL a:s",
        "RENAME a:int a:int_renamed",
        "LPOP a:big_list 3",
        "RPOPLPUSH a:small_list a:small_list2",
        "LMOVE a:big_list a:moved LEFT RIGHT",
        "SPOP a:big_set 5",
        "SPOP a:strs_set",
        "INCRBYFLOAT a:float 2.25",
        "HINCRBYFLOAT a:small_hash n 1.5",
        "HDEL a:big_hash f1 f2 f3",
        "ZINCRBY a:small_zset 10 a",
        "ZPOPMIN a:big_zset 2",
        "ZREM a:big_zset m10",
        "SETRANGE a:big 5 XYZ",
        "GETDEL a:neg",
        "GETEX a:empty EX 3000",
        "SET a:ttl_s newval KEEPTTL",
        "PERSIST a:ttl_l",
        "EXPIRE a:ttl_z 9000",
        "SET a:ex_rel v EX 4000",
        "SETEX a:setex 4000 v",
        "APPEND a:bin tail",
        "SETBIT a:bits 7 1",
        "PFADD a:hll d e f",
        "PFMERGE a:hll2 a:hll",
        "BITOP OR a:bitop a:bits a:bits",
        "SINTERSTORE a:inter a:big_set a:ints_set",
        "SUNIONSTORE a:union a:big_set a:ints_set",
        "ZUNIONSTORE a:zu 2 a:small_zset a:big_zset WEIGHTS 1 2",
        "SORT a:sortme STORE a:sorted",
        "COPY a:small_hash a:hash_copy",
        "XADD a:stream MAXLEN 100 * x y",
        "XACK a:stream g1 2-0",
        "XCLAIM a:stream g1 bob 0 1-1",
        "XTRIM a:stream2 MAXLEN 2",
        "XGROUP SETID a:stream g2 0",
        "MULTI",
        "INCR a:counter",
        "LPUSH a:txlist x",
        "SET a:tx v EX 4000",
        "EXEC",
        "EVAL \"redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])\" 2 a:lua1 a:lua2 hello",
        "EVAL \"return redis.call('spop', KEYS[1])\" 1 a:big_set",
        "SELECT 1",
        "MOVE a:db1_s 2",
        "SWAPDB 9 10",
        "SELECT 15",
        "FLUSHDB",
        "SADD a:after_flush x",
        "SELECT 0",
    ] {
        line(c, l);
    }
    // RESTORE of a DUMP payload.
    let payload = match parse(&run(c, &["DUMP", "a:small_list"])) {
        Value::Bulk(b) => b,
        other => panic!("DUMP: {other:?}"),
    };
    run(
        c,
        &[
            b"RESTORE".as_slice(),
            b"a:restored",
            b"0",
            payload.as_slice(),
        ],
    );
    // A client blocked on a key, woken by a push.
    let mut blocked = master.raw();
    blocked.send_cmd(&["BLMOVE", "a:q", "a:q_out", "LEFT", "RIGHT", "30"]);
    wait_for("the BLMOVE client to block", || {
        let t = master.info("clients");
        match info_field(&t, "blocked_clients").as_deref() {
            Some("1") => Ok(()),
            _ => Err(t),
        }
    });
    line(c, "RPUSH a:q one two");
    eqb!(blocked.read_reply(), b"$3\r\none\r\n");
    populate(c, "b");
}

/// One key as compared between servers: its type, a canonical reading
/// of its value (sorted where the order is not part of the value), and
/// its PTTL.
#[derive(Debug, PartialEq)]
struct Entry {
    ty: String,
    value: Vec<Vec<u8>>,
    pttl: i64,
}

fn items(v: Value) -> Vec<Vec<u8>> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::Bulk(b) => b,
                other => render(&other).into_bytes(),
            })
            .collect(),
        other => vec![render(&other).into_bytes()],
    }
}

fn scan_all(c: &mut Raw) -> Vec<Vec<u8>> {
    let mut keys = BTreeSet::new();
    let mut cursor = b"0".to_vec();
    loop {
        match parse(&run(c, &[b"SCAN".as_slice(), &cursor, b"COUNT", b"1000"])) {
            Value::Array(mut v) if v.len() == 2 => {
                keys.extend(items(v.pop().unwrap()));
                cursor = match v.pop().unwrap() {
                    Value::Bulk(b) => b,
                    other => panic!("SCAN cursor {other:?}"),
                };
            }
            other => panic!("SCAN: {other:?}"),
        }
        if cursor == b"0" {
            return keys.into_iter().collect();
        }
    }
}

/// A reply as readable text (bulk strings quoted and escaped).
fn render(v: &Value) -> String {
    match v {
        Value::Bulk(b) | Value::Simple(b) => format!("\"{}\"", escape(b)),
        Value::Error(b) => format!("-{}", escape(b)),
        Value::Integer(n) => n.to_string(),
        Value::Null => "nil".to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(render).collect();
            format!("[{}]", items.join(", "))
        }
        other => format!("{other:?}"),
    }
}

/// The `name value` pairs of a RESP2 map (XINFO) whose names are in
/// `wanted`, as text.
fn fields_of(reply: &Value, wanted: &[&str]) -> Vec<Vec<u8>> {
    let Value::Array(v) = reply else {
        panic!("not a map: {reply:?}")
    };
    v.chunks(2)
        .filter(|kv| matches!(&kv[0], Value::Bulk(n) if wanted.iter().any(|w| w.as_bytes() == n)))
        .map(|kv| format!("{}={}", render(&kv[0]), render(&kv[1])).into_bytes())
        .collect()
}

/// The fields of XINFO STREAM that replication must carry over (not the
/// radix tree's shape, which depends on how the stream was built).
fn stream_meta(reply: Value) -> Vec<Vec<u8>> {
    fields_of(
        &reply,
        &[
            "length",
            "last-generated-id",
            "max-deleted-entry-id",
            "entries-added",
            "recorded-first-entry-id",
            "groups",
        ],
    )
}

/// Each consumer group's name, consumers, pending count and last
/// delivered ID. Not entries-read and lag: Redis 7.0 propagates
/// XREADGROUP as XCLAIM ... LASTID, which leaves a replica's entries-read
/// nil where the master counts.
fn groups_meta(reply: Value) -> Vec<Vec<u8>> {
    let Value::Array(groups) = reply else {
        panic!("XINFO GROUPS: {reply:?}")
    };
    groups
        .iter()
        .flat_map(|g| fields_of(g, &["name", "consumers", "pending", "last-delivered-id"]))
        .collect()
}

/// Every key of every database.
fn snapshot(node: &Node) -> BTreeMap<(u32, Vec<u8>), Entry> {
    let mut c = node.raw();
    let mut all = BTreeMap::new();
    for db in 0..16u32 {
        run(&mut c, &["SELECT", &db.to_string()]);
        let keys = scan_all(&mut c);
        for chunk in keys.chunks(256) {
            for k in chunk {
                c.send_cmd(&[b"TYPE".as_slice(), k]);
            }
            let types: Vec<String> = chunk
                .iter()
                .map(|_| match parse(&c.read_reply()) {
                    Value::Simple(t) => String::from_utf8(t).unwrap(),
                    other => panic!("TYPE: {other:?}"),
                })
                .collect();
            // Pipelined: the value's commands, then PTTL, for each key.
            let mut sent: Vec<usize> = Vec::new();
            for (k, ty) in chunk.iter().zip(&types) {
                let k = k.as_slice();
                let cmds: Vec<Vec<&[u8]>> = match ty.as_str() {
                    "string" => vec![vec![b"GET", k]],
                    "list" => vec![vec![b"LRANGE", k, b"0", b"-1"]],
                    "hash" => vec![vec![b"HGETALL", k]],
                    "set" => vec![vec![b"SMEMBERS", k]],
                    "zset" => vec![vec![b"ZRANGE", k, b"0", b"-1", b"WITHSCORES"]],
                    "stream" => vec![
                        vec![b"XRANGE", k, b"-", b"+"],
                        vec![b"XINFO", b"STREAM", k],
                        vec![b"XINFO", b"GROUPS", k],
                    ],
                    _ => vec![],
                };
                for cmd in &cmds {
                    c.send_cmd(cmd);
                }
                c.send_cmd(&[b"PTTL".as_slice(), k]);
                sent.push(cmds.len());
            }
            for ((k, ty), n) in chunk.iter().zip(types).zip(sent) {
                let replies: Vec<Value> = (0..n).map(|_| parse(&c.read_reply())).collect();
                let pttl = match parse(&c.read_reply()) {
                    Value::Integer(n) => n,
                    other => panic!("PTTL: {other:?}"),
                };
                let mut replies = replies.into_iter();
                let mut one = || replies.next().unwrap();
                let value = match ty.as_str() {
                    "string" | "list" | "zset" => items(one()),
                    "hash" => {
                        let flat = items(one());
                        let mut pairs: Vec<Vec<u8>> = flat
                            .chunks(2)
                            .map(|p| [p[0].as_slice(), b"=", p[1].as_slice()].concat())
                            .collect();
                        pairs.sort();
                        pairs
                    }
                    "set" => {
                        let mut m = items(one());
                        m.sort();
                        m
                    }
                    "stream" => {
                        let mut v = vec![render(&one()).into_bytes()];
                        v.extend(stream_meta(one()));
                        v.extend(groups_meta(one()));
                        v
                    }
                    _ => vec![],
                };
                all.insert((db, k.clone()), Entry { ty, value, pttl });
            }
        }
        // The pending entries of each stream's groups.
        let streams: Vec<Vec<u8>> = all
            .iter()
            .filter(|((d, _), e)| *d == db && e.ty == "stream")
            .map(|((_, k), _)| k.clone())
            .collect();
        for k in streams {
            let groups = parse(&run(&mut c, &[b"XINFO".as_slice(), b"GROUPS", &k]));
            let Value::Array(groups) = groups else {
                panic!("XINFO GROUPS: {groups:?}")
            };
            for g in groups {
                let Value::Array(fields) = g else {
                    panic!("group: {g:?}")
                };
                let name = match &fields[1] {
                    Value::Bulk(n) => n.clone(),
                    other => panic!("group name {other:?}"),
                };
                let pending = run(&mut c, &[b"XPENDING".as_slice(), &k, &name]);
                let e = all.get_mut(&(db, k.clone())).unwrap();
                e.value.push(pending);
            }
        }
    }
    all
}

/// Asserts that the replica holds exactly the master's data (types,
/// values, whether a key has a time to live and about the same one).
fn assert_same_data(master: &Node, replica: &Node) -> usize {
    let m = snapshot(master);
    let r = snapshot(replica);
    let show_key = |(db, k): &(u32, Vec<u8>)| format!("db{db}:{}", escape(k));
    let missing: Vec<String> = m
        .keys()
        .filter(|k| !r.contains_key(*k))
        .map(show_key)
        .collect();
    let extra: Vec<String> = r
        .keys()
        .filter(|k| !m.contains_key(*k))
        .map(show_key)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "keys differ ({} on the master, {} on the replica): missing on the replica {:?}..., \
         only on the replica {:?}...",
        m.len(),
        r.len(),
        &missing[..missing.len().min(10)],
        &extra[..extra.len().min(10)]
    );
    for (key, a) in &m {
        let b = &r[key];
        assert_eq!(a.ty, b.ty, "type of {}", show_key(key));
        if a.value != b.value {
            let render = |v: &Vec<Vec<u8>>| {
                let s: Vec<String> = v.iter().take(20).map(|i| escape(i)).collect();
                s.join(" | ")
            };
            panic!(
                "value of {} ({}) differs:\n  master:  {}\n  replica: {}",
                show_key(key),
                a.ty,
                render(&a.value),
                render(&b.value)
            );
        }
        // -1: no time to live. The replica is read later, so its PTTL is
        // a little lower; all the test's TTLs are an hour or more.
        let close = (a.pttl == -1 && b.pttl == -1)
            || (a.pttl > 0 && b.pttl > 0 && (a.pttl - b.pttl).abs() <= 30_000);
        assert!(
            close,
            "PTTL of {}: master {} replica {}",
            show_key(key),
            a.pttl,
            b.pttl
        );
    }
    m.len()
}

/// redis-benchmark's write tests against `port` (random keys).
fn benchmark(port: u16) {
    require_tool("redis-benchmark", "redis-tools");
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-q", "-n", "20000", "-r", "10000", "-P", "16"])
        .args(["-t", "set,lpush,sadd,hset,zadd,incr,mset"])
        .output()
        .expect("run redis-benchmark");
    assert!(
        out.status.success(),
        "redis-benchmark: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------------------
// Scenarios.

/// Full sync of a data set of every type, then the command stream
/// (including redis-benchmark's writes) keeps the replica identical.
fn full_sync_then_streaming(mk: Kind, rk: Kind, master_extra: &[&str]) {
    let m = Node::start(mk, master_extra);
    let r = Node::start(rk, &[]);
    let mut mc = m.raw();
    populate(&mut mc, "a");
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    assert!(assert_same_data(&m, &r) > 30);
    let t = r.info("replication");
    assert_eq!(info_field(&t, "role").as_deref(), Some("slave"), "{t}");
    assert_eq!(info_field(&t, "master_host").as_deref(), Some("127.0.0.1"));
    assert_eq!(
        info_field(&t, "master_port"),
        Some(m.port().to_string()),
        "{t}"
    );
    assert_eq!(sync_stats(&m).0, 1, "one full sync");

    mutate(&m, &mut mc);
    benchmark(m.port());
    wait_in_sync(&m, &[&r]);
    assert!(assert_same_data(&m, &r) > 1000);
    assert_eq!(sync_stats(&m).0, 1, "still one full sync");
}

fn full_sync(mk: Kind, rk: Kind) {
    full_sync_then_streaming(mk, rk, &[]);
}

/// The same through an RDB file on the master's disk.
fn full_sync_disk(mk: Kind, rk: Kind) {
    full_sync_then_streaming(mk, rk, &["--repl-diskless-sync", "no"]);
}

/// A replica started with `--replicaof host port` syncs by itself.
fn replicaof_at_startup(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    populate(&mut m.raw(), "a");
    let port = m.port().to_string();
    let r = Node::start(rk, &["--replicaof", "127.0.0.1", port.as_str()]);
    wait_in_sync(&m, &[&r]);
    assert_same_data(&m, &r);
    let want = format!("127.0.0.1 {port}");
    match parse(&r.raw().cmd(&["CONFIG", "GET", "replicaof"])) {
        Value::Array(v) => assert_eq!(
            v,
            vec![
                Value::Bulk(b"replicaof".to_vec()),
                Value::Bulk(want.into_bytes())
            ]
        ),
        other => panic!("CONFIG GET replicaof: {other:?}"),
    }
    eqb!(
        r.raw().cmd(&["REPLICAOF", "127.0.0.1", port.as_str()]),
        b"+OK Already connected to specified master\r\n"
    );
    line(&mut m.raw(), "SET later v");
    wait_in_sync(&m, &[&r]);
    eqb!(r.raw().cmd(&["GET", "later"]), b"$1\r\nv\r\n");
}

/// Writes on a replica fail with READONLY; reads work.
fn read_only(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r = Node::start(rk, &[]);
    line(&mut m.raw(), "SET k v");
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    let mut c = r.raw();
    const READONLY: &[u8] = b"-READONLY You can't write against a read only replica.\r\n";
    eqb!(c.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    eqb!(c.cmd(&["SET", "k", "other"]), READONLY);
    eqb!(c.cmd(&["DEL", "k"]), READONLY);
    eqb!(c.cmd(&["SET", "new", "x"]), READONLY);
    eqb!(c.cmd(&["MULTI"]), b"+OK\r\n");
    eqb!(c.cmd(&["SET", "k", "x"]), READONLY);
    eqb!(
        c.cmd(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    // Scripts: one that declares it may write is refused before it runs;
    // a write inside one that declares nothing fails there; one that
    // declares no-writes reads.
    eqb!(c.cmd(&["EVAL", "#!lua\nreturn 1", "0"]), READONLY);
    let inside = c.cmd(&["EVAL", "return redis.call('set','k','x')", "0"]);
    assert!(
        inside.starts_with(b"-READONLY You can't write against a read only replica. script: "),
        "{}",
        String::from_utf8_lossy(&inside)
    );
    eqb!(
        c.cmd(&[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('get','k')",
            "0"
        ]),
        b"$1\r\nv\r\n"
    );
    eqb!(c.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    eqb!(c.cmd(&["EXISTS", "new"]), b":0\r\n");
    eqb!(c.cmd(&["DBSIZE"]), b":1\r\n");
}

/// A dropped link (killed on the master's side, under either type name,
/// or on the replica's side) resumes with a partial resynchronisation,
/// and what was written meanwhile arrives.
fn partial_resync(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r = Node::start(rk, &[]);
    let mut mc = m.raw();
    populate(&mut mc, "a");
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    let (full, mut partial) = sync_stats(&m);
    assert_eq!(full, 1);

    for (i, (node, kill)) in [
        (&m, ["CLIENT", "KILL", "TYPE", "replica"]),
        (&m, ["CLIENT", "KILL", "TYPE", "slave"]),
        (&r, ["CLIENT", "KILL", "TYPE", "master"]),
    ]
    .into_iter()
    .enumerate()
    {
        eqb!(node.raw().cmd(&kill), b":1\r\n", "{}", show(&kill));
        line(&mut mc, &format!("SET during{i} v{i}"));
        line(&mut mc, &format!("RPUSH list{i} a b c"));
        line(&mut mc, &format!("INCRBY a:int {i}"));
        partial += 1;
        wait_partial_resync(&m, &r, partial);
        assert_eq!(sync_stats(&m), (full, partial), "no full sync");
        let want = format!("${}\r\nv{i}\r\n", 1 + i.to_string().len());
        eqb!(
            r.raw().cmd(&["GET", &format!("during{i}")]),
            want.as_bytes()
        );
    }
    assert_same_data(&m, &r);
}

/// Expiry is the master's: a replica hides a logically expired key on
/// read but keeps it until the master's DEL (from a read on the master,
/// or from its active expiry cycle) arrives.
fn expiry(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r = Node::start(rk, &[]);
    r.replicate(&m);
    let mut mc = m.raw();
    let mut rc = r.raw();
    line(&mut mc, "DEBUG SET-ACTIVE-EXPIRE 0");
    line(&mut mc, "SET keep v");
    line(&mut mc, "SET lazy v");
    eqb!(mc.cmd(&["PEXPIRE", "lazy", "100"]), b":1\r\n");
    line(&mut mc, "SET active v PX 100");
    wait_in_sync(&m, &[&r]);
    eqb!(rc.cmd(&["DBSIZE"]), b":3\r\n");
    wait_for("the keys to expire logically on the replica", || {
        let a = rc.cmd(&["GET", "lazy"]);
        let b = rc.cmd(&["GET", "active"]);
        if a == b"$-1\r\n" && b == b"$-1\r\n" {
            Ok(())
        } else {
            Err(format!("{} {}", escape(&a), escape(&b)))
        }
    });
    // Hidden, not deleted: the master has not expired them.
    eqb!(rc.cmd(&["EXISTS", "lazy", "active"]), b":0\r\n");
    eqb!(rc.cmd(&["TTL", "lazy"]), b":-2\r\n");
    eqb!(rc.cmd(&["GET", "keep"]), b"$1\r\nv\r\n");
    eqb!(rc.cmd(&["DBSIZE"]), b":3\r\n");
    eqb!(mc.cmd(&["DBSIZE"]), b":3\r\n");

    // A read on the master expires the key there and propagates a DEL.
    eqb!(mc.cmd(&["GET", "lazy"]), b"$-1\r\n");
    wait_for("the DEL of `lazy` on the replica", || {
        match rc.cmd(&["DBSIZE"]).as_slice() {
            b":2\r\n" => Ok(()),
            other => Err(escape(other)),
        }
    });
    // The master's active expiry cycle does the same.
    line(&mut mc, "DEBUG SET-ACTIVE-EXPIRE 1");
    wait_for("the DEL of `active` on the replica", || {
        match rc.cmd(&["DBSIZE"]).as_slice() {
            b":1\r\n" => Ok(()),
            other => Err(escape(other)),
        }
    });
    eqb!(mc.cmd(&["DBSIZE"]), b":1\r\n");
    eqb!(rc.cmd(&["GET", "keep"]), b"$1\r\nv\r\n");
    wait_in_sync(&m, &[&r]);
}

fn bulk_text(v: &Value) -> String {
    match v {
        Value::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

/// ROLE and INFO replication on both sides.
fn role(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r = Node::start(rk, &[]);
    eqb!(
        m.raw().cmd(&["ROLE"]),
        b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
    );
    eqb!(
        r.raw().cmd(&["ROLE"]),
        b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
    );
    eqb!(m.raw().cmd(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    r.replicate(&m);
    line(&mut m.raw(), "SET k v");
    wait_in_sync(&m, &[&r]);

    // The master's ROLE: its offset, and each replica's ip, listening
    // port and acknowledged offset (bulk strings).
    let (mport, rport) = (m.port().to_string(), r.port().to_string());
    wait_for("ROLE on the master to show the replica's ack", || {
        let offset = u64_field(&m.info("replication"), "master_repl_offset")?;
        let reply = parse(&m.raw().cmd(&["ROLE"]));
        let Value::Array(v) = &reply else {
            panic!("ROLE: {reply:?}")
        };
        assert_eq!(v.len(), 3, "{reply:?}");
        assert_eq!(bulk_text(&v[0]), "master");
        let Value::Integer(role_offset) = v[1] else {
            panic!("ROLE offset: {reply:?}")
        };
        let Value::Array(replicas) = &v[2] else {
            panic!("ROLE replicas: {reply:?}")
        };
        // A replica is listed once online (for a diskless sync, after
        // its first REPLCONF ACK).
        if replicas.is_empty() {
            return Err(format!("{reply:?}"));
        }
        assert_eq!(replicas.len(), 1, "{reply:?}");
        let Value::Array(entry) = &replicas[0] else {
            panic!("ROLE replica: {reply:?}")
        };
        assert_eq!(entry.len(), 3, "{reply:?}");
        assert_eq!(bulk_text(&entry[0]), "127.0.0.1");
        assert_eq!(bulk_text(&entry[1]), rport);
        let acked: u64 = bulk_text(&entry[2]).parse().expect("offset");
        if role_offset as u64 == offset && acked == offset {
            Ok(())
        } else {
            Err(format!("INFO offset {offset}, ROLE {reply:?}"))
        }
    });

    // The replica's ROLE: "slave", master host, port (integer), state,
    // offset processed.
    // (Polled: the master's periodic PING moves the offsets.)
    wait_for("ROLE on the replica to show the master's offset", || {
        let offset = wait_in_sync(&m, &[&r]);
        let reply = parse(&r.raw().cmd(&["ROLE"]));
        let want = |offset: i64| {
            Value::Array(vec![
                Value::Bulk(b"slave".to_vec()),
                Value::Bulk(b"127.0.0.1".to_vec()),
                Value::Integer(m.port() as i64),
                Value::Bulk(b"connected".to_vec()),
                Value::Integer(offset),
            ])
        };
        match &reply {
            Value::Array(v) if v.len() == 5 => {
                let Value::Integer(got) = v[4] else {
                    panic!("replica's ROLE: {reply:?}")
                };
                assert_eq!(reply, want(got), "replica's ROLE");
                if got == offset as i64 {
                    Ok(())
                } else {
                    Err(format!("ROLE {reply:?}, master offset {offset}"))
                }
            }
            other => panic!("replica's ROLE: {other:?}"),
        }
    });

    // INFO replication, master side.
    let t = m.info("replication");
    assert_eq!(info_field(&t, "role").as_deref(), Some("master"), "{t}");
    assert_eq!(
        info_field(&t, "connected_slaves").as_deref(),
        Some("1"),
        "{t}"
    );
    let slave0 = info_field(&t, "slave0").unwrap_or_else(|| panic!("no slave0 in\n{t}"));
    let fields: Vec<(&str, &str)> = slave0
        .split(',')
        .map(|kv| kv.split_once('=').expect("k=v"))
        .collect();
    let names: Vec<&str> = fields.iter().map(|(k, _)| *k).collect();
    assert_eq!(names, ["ip", "port", "state", "offset", "lag"], "{slave0}");
    assert_eq!(fields[0].1, "127.0.0.1");
    assert_eq!(fields[1].1, rport);
    assert_eq!(fields[2].1, "online");
    let master_replid = info_field(&t, "master_replid").unwrap();
    assert_eq!(master_replid.len(), 40, "{t}");
    for f in [
        "master_failover_state",
        "master_replid2",
        "master_repl_offset",
        "second_repl_offset",
        "repl_backlog_active",
        "repl_backlog_size",
        "repl_backlog_first_byte_offset",
        "repl_backlog_histlen",
    ] {
        assert!(info_field(&t, f).is_some(), "no {f} in\n{t}");
    }
    assert_eq!(info_field(&t, "repl_backlog_active").as_deref(), Some("1"));

    // INFO replication, replica side.
    let t = r.info("replication");
    for (f, want) in [
        ("role", "slave"),
        ("master_host", "127.0.0.1"),
        ("master_port", mport.as_str()),
        ("master_link_status", "up"),
        ("master_sync_in_progress", "0"),
        ("slave_read_only", "1"),
        ("connected_slaves", "0"),
        ("master_replid", master_replid.as_str()),
    ] {
        assert_eq!(info_field(&t, f).as_deref(), Some(want), "{f} in\n{t}");
    }
    for f in [
        "master_last_io_seconds_ago",
        "slave_read_repl_offset",
        "slave_repl_offset",
        "slave_priority",
        "replica_announced",
        "master_repl_offset",
    ] {
        assert!(info_field(&t, f).is_some(), "no {f} in\n{t}");
    }

    // Detached, the replica is a master again (keeping its data).
    eqb!(r.raw().cmd(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    let reply = parse(&r.raw().cmd(&["ROLE"]));
    let Value::Array(v) = &reply else {
        panic!("ROLE: {reply:?}")
    };
    assert_eq!(bulk_text(&v[0]), "master", "{reply:?}");
    assert_eq!(v[2], Value::Array(vec![]), "{reply:?}");
    eqb!(r.raw().cmd(&["GET", "k"]), b"$1\r\nv\r\n");
}

/// WAIT counts the replicas that acknowledged the client's last write.
fn wait_command(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r = Node::start(rk, &[]);
    let mut mc = m.raw();
    eqb!(mc.cmd(&["WAIT", "0", "0"]), b":0\r\n");
    line(&mut mc, "SET a b");
    eqb!(mc.cmd(&["WAIT", "1", "50"]), b":0\r\n");
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    line(&mut mc, "SET a c");
    eqb!(mc.cmd(&["WAIT", "1", "1000"]), b":1\r\n");
    eqb!(mc.cmd(&["WAIT", "2", "100"]), b":1\r\n");
    line(&mut mc, "INCR n");
    // 0: no timeout (returns once the replica acknowledged).
    eqb!(mc.cmd(&["WAIT", "1", "0"]), b":1\r\n");
    eqb!(r.raw().cmd(&["GET", "a"]), b"$1\r\nc\r\n");
    eqb!(
        r.raw().cmd(&["WAIT", "1", "100"]),
        b"-ERR WAIT cannot be used with replica instances. Please also note that since \
          Redis 4.0 if a replica is configured to be writable (which is not the default) \
          writes to replicas are just local and are not propagated.\r\n"
    );
}

/// WAITAOF (Redis 7.2) counts the local AOF and the replicas' AOFs that
/// hold the client's last write fsynced. Keel on both sides (Redis 7.0
/// has no WAITAOF), then each side against Redis 7.0: a 7.0 replica sends
/// no FACK and counts for nothing; a 7.0 primary ignores a keel replica's
/// FACK and still counts its ACK for WAIT.
#[test]
fn waitaof_counts_fsynced_logs() {
    let m = Node::start(Kind::Keel, &[]);
    let mut mc = m.raw();
    // Arguments, in Redis's order of checks, and the log being off.
    for (argv, reply) in [
        (
            ["WAITAOF", "2", "0", "0"],
            "-ERR value is out of range, value must between 0 and 1\r\n",
        ),
        (
            ["WAITAOF", "x", "0", "0"],
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            ["WAITAOF", "0", "-1", "0"],
            "-ERR value is out of range, must be positive\r\n",
        ),
        (
            ["WAITAOF", "0", "y", "0"],
            "-ERR value is out of range, must be positive\r\n",
        ),
        (["WAITAOF", "0", "0", "-1"], "-ERR timeout is negative\r\n"),
        (
            ["WAITAOF", "0", "0", "z"],
            "-ERR timeout is not an integer or out of range\r\n",
        ),
        (
            ["WAITAOF", "1", "0", "0"],
            "-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n",
        ),
    ] {
        eqb!(mc.cmd(&argv), reply.as_bytes());
    }
    eqb!(mc.cmd(&["WAITAOF", "0", "0", "0"]), b"*2\r\n:0\r\n:0\r\n");
    // The log turned on holds the data from before only once its first
    // rewrite ends (slowed here to 100 ms a key): until then nothing
    // counts as fsynced, as Redis's AOF_WAIT_REWRITE.
    for i in 0..20 {
        line(&mut mc, &format!("SET before{i} v"));
    }
    eqb!(
        mc.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "100000"]),
        b"+OK\r\n"
    );
    eqb!(mc.cmd(&["CONFIG", "SET", "appendonly", "yes"]), b"+OK\r\n");
    eqb!(mc.cmd(&["WAITAOF", "1", "0", "50"]), b"*2\r\n:0\r\n:0\r\n");
    eqb!(
        mc.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]),
        b"+OK\r\n"
    );
    // Then a write is counted once fsynced (`always`: before its reply;
    // `everysec`: within a second, waited for here).
    wait_for("the AOF rewrite to end", || {
        match u64_field(&m.info("persistence"), "aof_rewrite_in_progress")? {
            0 => Ok(()),
            n => Err(format!("{n}")),
        }
    });
    line(&mut mc, "SET a 1");
    eqb!(mc.cmd(&["WAITAOF", "1", "0", "0"]), b"*2\r\n:1\r\n:0\r\n");
    // Nothing waits inside MULTI: the counts as they are. (WAIT too; it
    // counts from the client's last write, as Redis 7.2 and later: 7.0
    // counts from its last command, whatever it was.)
    line(&mut mc, "MULTI");
    line(&mut mc, "WAITAOF 1 5 0");
    line(&mut mc, "WAIT 5 0");
    eqb!(mc.cmd(&["EXEC"]), b"*2\r\n*2\r\n:1\r\n:0\r\n:0\r\n");

    // A keel replica with its own AOF.
    let r = Node::start(
        Kind::Keel,
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    line(&mut mc, "SET a 2");
    eqb!(mc.cmd(&["WAITAOF", "1", "1", "0"]), b"*2\r\n:1\r\n:1\r\n");
    eqb!(mc.cmd(&["WAITAOF", "0", "2", "100"]), b"*2\r\n:1\r\n:1\r\n");
    eqb!(
        r.raw().cmd(&["WAITAOF", "0", "0", "0"]),
        b"-ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.\r\n"
    );
    // Its AOF off: it acknowledges the stream (WAIT) but no fsync.
    eqb!(
        r.raw().cmd(&["CONFIG", "SET", "appendonly", "no"]),
        b"+OK\r\n"
    );
    line(&mut mc, "SET a 3");
    eqb!(mc.cmd(&["WAIT", "1", "0"]), b":1\r\n");
    eqb!(mc.cmd(&["WAITAOF", "1", "0", "0"]), b"*2\r\n:1\r\n:0\r\n");
    eqb!(mc.cmd(&["WAITAOF", "1", "1", "100"]), b"*2\r\n:1\r\n:0\r\n");
    drop(r);

    // A Redis 7.0 replica (with an AOF) sends no FACK.
    let rr = Node::start(Kind::Redis, &["--appendonly", "yes"]);
    rr.replicate(&m);
    wait_in_sync(&m, &[&rr]);
    line(&mut mc, "SET a 4");
    eqb!(mc.cmd(&["WAIT", "1", "0"]), b":1\r\n");
    eqb!(mc.cmd(&["WAITAOF", "1", "0", "0"]), b"*2\r\n:1\r\n:0\r\n");
    eqb!(mc.cmd(&["WAITAOF", "0", "1", "100"]), b"*2\r\n:1\r\n:0\r\n");
    drop(rr);

    // A keel replica (AOF on, so its ACKs carry FACK) of a Redis 7.0
    // primary: WAIT counts it.
    let rm = Node::start(Kind::Redis, &[]);
    let kr = Node::start(Kind::Keel, &["--appendonly", "yes"]);
    kr.replicate(&rm);
    wait_in_sync(&rm, &[&kr]);
    let mut rc = rm.raw();
    line(&mut rc, "SET b 1");
    eqb!(rc.cmd(&["WAIT", "1", "0"]), b":1\r\n");
}

/// min-replicas-to-write refuses writes without enough good replicas.
fn min_replicas(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r = Node::start(rk, &[]);
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    let mut mc = m.raw();
    line(&mut mc, "SET k v");
    line(&mut mc, "CONFIG SET min-replicas-to-write 2");
    const NOREPLICAS: &[u8] = b"-NOREPLICAS Not enough good replicas to write.\r\n";
    eqb!(mc.cmd(&["SET", "k", "w"]), NOREPLICAS);
    eqb!(mc.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    eqb!(mc.cmd(&["MULTI"]), b"+OK\r\n");
    eqb!(mc.cmd(&["SET", "k", "w"]), NOREPLICAS);
    eqb!(
        mc.cmd(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    let t = m.info("replication");
    assert_eq!(
        info_field(&t, "min_slaves_good_slaves").as_deref(),
        Some("1"),
        "{t}"
    );
    line(&mut mc, "CONFIG SET min-replicas-to-write 1");
    eqb!(mc.cmd(&["SET", "k", "w"]), b"+OK\r\n");
    line(&mut mc, "CONFIG SET min-replicas-to-write 0");
    let t = m.info("replication");
    assert_eq!(info_field(&t, "min_slaves_good_slaves"), None, "{t}");
    wait_in_sync(&m, &[&r]);
    eqb!(r.raw().cmd(&["GET", "k"]), b"$1\r\nw\r\n");
}

/// M with replicas R1 and R2; R1 is promoted (REPLICAOF NO ONE) and R2
/// follows it with a partial resynchronisation (R1 keeps M's replication
/// ID as its second one).
fn promotion(mk: Kind, rk: Kind) {
    // No PING from M to its replicas during the test: it could reach R2
    // and not R1 between the promotion and R2's switch.
    let m = Node::start(mk, &["--repl-ping-replica-period", "3600"]);
    let r1 = Node::start(rk, &[]);
    let r2 = Node::start(rk, &[]);
    let mut mc = m.raw();
    populate(&mut mc, "a");
    r1.replicate(&m);
    r2.replicate(&m);
    let offset = wait_in_sync(&m, &[&r1, &r2]);
    let old_replid = info_field(&m.info("replication"), "master_replid").unwrap();

    eqb!(r1.raw().cmd(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    let t = r1.info("replication");
    assert_eq!(info_field(&t, "role").as_deref(), Some("master"), "{t}");
    assert_eq!(
        info_field(&t, "master_replid2").as_deref(),
        Some(old_replid.as_str()),
        "{t}"
    );
    assert_eq!(
        info_field(&t, "second_repl_offset"),
        Some((offset + 1).to_string()),
        "{t}"
    );
    assert_ne!(
        info_field(&t, "master_replid").as_deref(),
        Some(old_replid.as_str())
    );

    r2.replicate(&r1);
    wait_in_sync(&r1, &[&r2]);
    let stats = r1.info("stats");
    assert_eq!(u64_field(&stats, "sync_partial_ok"), Ok(1), "{stats}");
    assert_eq!(u64_field(&stats, "sync_full"), Ok(0), "{stats}");
    let t = r2.info("replication");
    assert_eq!(info_field(&t, "master_port"), Some(r1.port().to_string()));

    line(&mut r1.raw(), "SET after_promotion yes");
    line(&mut r1.raw(), "RPUSH a:small_list z");
    // What the old master takes now goes nowhere.
    line(&mut mc, "SET old_master_only x");
    wait_in_sync(&r1, &[&r2]);
    eqb!(r2.raw().cmd(&["GET", "after_promotion"]), b"$3\r\nyes\r\n");
    eqb!(r2.raw().cmd(&["EXISTS", "old_master_only"]), b":0\r\n");
    assert_same_data(&r1, &r2);
}

/// Waits until R2, a replica of R1 which replicates M, is at M's offset.
fn wait_chain_in_sync(m: &Node, r1: &Node, r2: &Node) {
    wait_for("R2 in sync with M through R1", || {
        let offset = wait_in_sync(r1, &[r2]);
        let m_offset = u64_field(&m.info("replication"), "master_repl_offset")?;
        if offset == m_offset {
            Ok(())
        } else {
            Err(format!("M at {m_offset}, R1 and R2 at {offset}"))
        }
    });
}

/// A replica of a replica: R1 passes M's stream on to R2 (the same
/// replication ID and offsets down the chain), also after R1's link to M
/// was dropped and resumed.
fn chained(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r1 = Node::start(rk, &[]);
    let r2 = Node::start(rk, &[]);
    let mut mc = m.raw();
    populate(&mut mc, "a");
    r1.replicate(&m);
    r2.replicate(&r1);
    wait_in_sync(&m, &[&r1]);
    wait_chain_in_sync(&m, &r1, &r2);
    let replid = info_field(&m.info("replication"), "master_replid");
    assert_eq!(info_field(&r1.info("replication"), "master_replid"), replid);
    assert_eq!(info_field(&r2.info("replication"), "master_replid"), replid);
    assert_same_data(&m, &r2);

    line(&mut mc, "SET through_chain 1");
    eqb!(
        m.raw().cmd(&["CLIENT", "KILL", "TYPE", "replica"]),
        b":1\r\n"
    );
    line(&mut mc, "SET after_kill 2");
    line(&mut mc, "SELECT 3");
    line(&mut mc, "SET in_db3 3");
    wait_partial_resync(&m, &r1, 1);
    wait_chain_in_sync(&m, &r1, &r2);
    assert_eq!(sync_stats(&m).0, 1, "one full sync from M");
    eqb!(r2.raw().cmd(&["GET", "after_kill"]), b"$1\r\n2\r\n");
    assert_same_data(&m, &r2);
    eqb!(
        r2.raw().cmd(&["SET", "x", "y"]),
        b"-READONLY You can't write against a read only replica.\r\n"
    );
}

/// A replica saved on shutdown (with its replication ID and offset in the
/// RDB file) and restarted with `--replicaof` resumes with a partial
/// resynchronisation.
fn restart_replica(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let mut r = Node::start(rk, &[]);
    let mut mc = m.raw();
    populate(&mut mc, "a");
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    let (full, partial) = sync_stats(&m);
    assert_eq!(full, 1);

    r.raw()
        .expect_closed_after(&["SHUTDOWN", "SAVE"], Duration::from_secs(30));
    let status = r
        .server
        .as_mut()
        .unwrap()
        .wait_exit(Duration::from_secs(30));
    assert!(status.is_some(), "the replica did not exit after SHUTDOWN");
    let dir = r.stop_keep_dir();
    assert!(dir.join("dump.rdb").exists(), "no dump.rdb saved");

    line(&mut mc, "SET while_down 1");
    line(&mut mc, "RPUSH a:small_list while_down");
    let port = m.port().to_string();
    let r = Node::start_in(rk, dir, &["--replicaof", "127.0.0.1", port.as_str()]);
    wait_partial_resync(&m, &r, partial + 1);
    assert_eq!(sync_stats(&m), (full, partial + 1), "no full sync");
    eqb!(r.raw().cmd(&["GET", "while_down"]), b"$1\r\n1\r\n");
    assert_same_data(&m, &r);
}

/// Sends a command to a server that may die meanwhile.
fn try_call(c: &mut Raw, argv: &[&str]) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::new();
    resp::encode::command(&mut out, argv);
    c.send_lossy(&out);
    c.try_read_reply()
}

/// A writer does `SET k_i i` then `WAIT 1 100` and records i when WAIT
/// says the replica has it; the master, also busy with other writes, is
/// killed with SIGKILL: every recorded key is on the replica.
fn kill9_master(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r = Node::start(rk, &[]);
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    let port = m.port();
    let acked = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));

    let writer = {
        let acked = acked.clone();
        std::thread::spawn(move || {
            let mut c = Raw::connect(port);
            let mut recorded = Vec::new();
            for i in 0u64.. {
                let k = format!("k_{i}");
                let v = i.to_string();
                match try_call(&mut c, &["SET", &k, &v]) {
                    Ok(r) if r == b"+OK\r\n" => {}
                    Ok(r) => panic!("SET: {}", escape(&r)),
                    Err(_) => break,
                }
                match try_call(&mut c, &["WAIT", "1", "100"]) {
                    Ok(r) if r == b":1\r\n" => {
                        recorded.push(i);
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(r) if r == b":0\r\n" => {}
                    Ok(r) => panic!("WAIT: {}", escape(&r)),
                    Err(_) => break,
                }
            }
            recorded
        })
    };
    let load = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut c = Raw::connect(port);
            let mut n = 0u64;
            'outer: while !stop.load(Ordering::Relaxed) {
                let mut out = Vec::new();
                for _ in 0..100 {
                    n += 1;
                    let k = format!("load_{}", n % 5000);
                    let v = n.to_string();
                    resp::encode::command(&mut out, &["SET", k.as_str(), v.as_str()]);
                }
                // Paced by the replica (a WAIT after each batch): a master
                // far faster than its replica (a debug build of keel)
                // would otherwise leave every WAIT of the writer short.
                resp::encode::command(&mut out, &["WAIT", "1", "1000"]);
                c.send_lossy(&out);
                for _ in 0..101 {
                    if c.try_read_reply().is_err() {
                        break 'outer;
                    }
                }
            }
        })
    };
    wait_for("300 writes acknowledged by the replica", || {
        let n = acked.load(Ordering::Relaxed);
        if n >= 300 {
            Ok(())
        } else {
            Err(format!("{n} acknowledged"))
        }
    });
    // SAFETY: kill(2) on the pid of the master we spawned and have not
    // reaped, so it cannot name another process.
    unsafe {
        libc::kill(m.server().pid() as libc::pid_t, libc::SIGKILL);
    }
    stop.store(true, Ordering::Relaxed);
    let recorded = writer.join().expect("writer thread");
    load.join().expect("load thread");
    assert!(recorded.len() >= 300);

    let mut c = r.raw();
    for chunk in recorded.chunks(500) {
        let mut argv = vec!["MGET".to_string()];
        argv.extend(chunk.iter().map(|i| format!("k_{i}")));
        let got = items(parse(&run(&mut c, &argv)));
        for (i, v) in chunk.iter().zip(got) {
            assert_eq!(
                v,
                i.to_string().into_bytes(),
                "k_{i}, acknowledged by WAIT, on the replica"
            );
        }
    }
}

/// PUBLISH on the master reaches the replica's subscribers (Redis
/// propagates it to replicas, not to the log).
fn publish(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r = Node::start(rk, &[]);
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    let mut sub = r.raw();
    eqb!(
        sub.cmd(&["SUBSCRIBE", "news"]),
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    );
    let mut mc = m.raw();
    eqb!(mc.cmd(&["PUBLISH", "news", "hello"]), b":0\r\n");
    eqb!(
        sub.read_reply(),
        b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    );
}

/// FAILOVER under a writing client: every write the old master
/// acknowledged is on the new one, which took over with a partial
/// resynchronisation; the old master is then its replica.
fn failover(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &[]);
    let r = Node::start(rk, &[]);
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    let port = m.port();
    let writer = std::thread::spawn(move || {
        let mut c = Raw::connect(port);
        let mut acked = Vec::new();
        for i in 0u64.. {
            match try_call(&mut c, &["SET", &format!("k_{i}"), &i.to_string()]) {
                Ok(reply) if reply == b"+OK\r\n" => acked.push(i),
                Ok(reply) if reply.starts_with(b"-READONLY") => break,
                Ok(reply) => panic!("SET: {}", escape(&reply)),
                Err(_) => break,
            }
        }
        acked
    });
    wait_for("some writes before the failover", || {
        let n = m.raw().cmd(&["DBSIZE"]);
        if n.len() > 4 {
            Ok(())
        } else {
            Err(escape(&n))
        }
    });
    let to = r.port().to_string();
    eqb!(
        m.raw()
            .cmd(&["FAILOVER", "TO", "127.0.0.1", &to, "TIMEOUT", "30000"]),
        b"+OK\r\n"
    );
    let acked = writer.join().expect("writer");
    assert!(!acked.is_empty());
    wait_for("the old master to replicate from the new one", || {
        let t = m.info("replication");
        match (info_field(&t, "role"), info_field(&t, "master_link_status")) {
            (Some(role), Some(link)) if role == "slave" && link == "up" => Ok(()),
            _ => Err(t),
        }
    });
    let mut rc = r.raw();
    eqb!(rc.cmd(&["ROLE"])[..16], b"*3\r\n$6\r\nmaster\r\n"[..16]);
    let stats = r.info("stats");
    assert_eq!(
        info_field(&stats, "sync_full").as_deref(),
        Some("0"),
        "{stats}"
    );
    assert_eq!(
        info_field(&stats, "sync_partial_ok").as_deref(),
        Some("1"),
        "{stats}"
    );
    for i in acked {
        eqb!(
            rc.cmd(&["GET", &format!("k_{i}")]),
            format!("${}\r\n{i}\r\n", i.to_string().len()).as_bytes(),
            "k_{i} was acknowledged before the failover"
        );
    }
    // Writes go to the new master and reach the old one.
    eqb!(rc.cmd(&["SET", "after", "1"]), b"+OK\r\n");
    wait_in_sync(&r, &[&m]);
    eqb!(m.raw().cmd(&["GET", "after"]), b"$1\r\n1\r\n");
}

/// `repl-backlog-ttl`: a master left without replicas for that long
/// frees its backlog and starts a new replication id.
fn backlog_ttl(mk: Kind, rk: Kind) {
    let m = Node::start(mk, &["--repl-backlog-ttl", "1"]);
    let r = Node::start(rk, &[]);
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    let before = m.info("replication");
    assert_eq!(
        info_field(&before, "repl_backlog_active").as_deref(),
        Some("1"),
        "{before}"
    );
    let id = info_field(&before, "master_replid");
    eqb!(r.raw().cmd(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    wait_for("the master to free its backlog", || {
        let t = m.info("replication");
        if info_field(&t, "repl_backlog_active").as_deref() == Some("0")
            && info_field(&t, "master_replid") != id
        {
            Ok(())
        } else {
            Err(t)
        }
    });
}

/// Each scenario, four ways.
macro_rules! pairs {
    ($($name:ident,)*) => {$(
        mod $name {
            use super::Kind::{Keel, Redis};

            #[test]
            fn redis_to_redis() {
                super::$name(Redis, Redis)
            }
            #[test]
            fn keel_to_keel() {
                super::$name(Keel, Keel)
            }
            #[test]
            fn redis_to_keel() {
                super::$name(Redis, Keel)
            }
            #[test]
            fn keel_to_redis() {
                super::$name(Keel, Redis)
            }
        }
    )*};
}

pairs! {
    full_sync,
    full_sync_disk,
    replicaof_at_startup,
    read_only,
    partial_resync,
    expiry,
    role,
    wait_command,
    min_replicas,
    promotion,
    chained,
    restart_replica,
    kill9_master,
    publish,
    failover,
    backlog_ttl,
}

/// Hash-field TTLs on a keel replica of a keel primary (Redis 7.4's
/// rules): the TTLs arrive by the stream and by a full sync; a field past
/// its TTL reads as gone on the replica but stays there until the
/// primary's `HDEL` comes (lazy on the primary, or its cron).
#[test]
fn hash_field_ttls_replicate() {
    let v74 = ["--redis-version", "7.4.1"];
    let m = Node::start(Kind::Keel, &v74);
    let r = Node::start(Kind::Keel, &v74);
    let mut mc = m.raw();
    let mut rc = r.raw();
    line(&mut mc, "DEBUG SET-ACTIVE-EXPIRE 0");
    line(&mut mc, "HSET before a 1 b 2");
    eqb!(
        mc.cmd(&["HPEXPIREAT", "before", "4102444800000", "FIELDS", "1", "a"]),
        b"*1\r\n:1\r\n"
    );
    // A full sync carries the TTL.
    r.replicate(&m);
    wait_in_sync(&m, &[&r]);
    eqb!(
        rc.cmd(&["HPEXPIRETIME", "before", "FIELDS", "2", "a", "b"]),
        b"*2\r\n:4102444800000\r\n:-1\r\n"
    );
    // The stream: HEXPIRE arrives as an absolute HPEXPIREAT.
    line(&mut mc, "HSET h keep 1 lazy 2 active 3");
    eqb!(
        mc.cmd(&["HEXPIRE", "h", "100000", "FIELDS", "1", "keep"]),
        b"*1\r\n:1\r\n"
    );
    let on_master = mc.cmd(&["HPEXPIRETIME", "h", "FIELDS", "1", "keep"]);
    eqb!(
        mc.cmd(&["HPEXPIRE", "h", "1", "FIELDS", "2", "lazy", "active"]),
        b"*2\r\n:1\r\n:1\r\n"
    );
    wait_in_sync(&m, &[&r]);
    eqb!(
        rc.cmd(&["HPEXPIRETIME", "h", "FIELDS", "1", "keep"]),
        on_master
    );
    wait_for("the fields to expire logically on the replica", || match rc
        .cmd(&["HMGET", "h", "lazy", "active"])
        .as_slice()
    {
        b"*2\r\n$-1\r\n$-1\r\n" => Ok(()),
        other => Err(escape(other)),
    });
    // Hidden, not deleted.
    eqb!(rc.cmd(&["HLEN", "h"]), b":3\r\n");
    eqb!(
        rc.cmd(&["HGETALL", "h"]),
        b"*2\r\n$4\r\nkeep\r\n$1\r\n1\r\n"
    );
    // A read on the primary deletes `lazy` there: an HDEL follows.
    eqb!(mc.cmd(&["HGET", "h", "lazy"]), b"$-1\r\n");
    wait_for("the HDEL of `lazy` on the replica", || {
        match rc.cmd(&["HLEN", "h"]).as_slice() {
            b":2\r\n" => Ok(()),
            other => Err(escape(other)),
        }
    });
    // The primary's cron deletes `active`.
    line(&mut mc, "DEBUG SET-ACTIVE-EXPIRE 1");
    wait_for("the HDEL of `active` on the replica", || {
        match rc.cmd(&["HLEN", "h"]).as_slice() {
            b":1\r\n" => Ok(()),
            other => Err(escape(other)),
        }
    });
    wait_in_sync(&m, &[&r]);
    eqb!(mc.cmd(&["HGETALL", "h"]), rc.cmd(&["HGETALL", "h"]));
}
