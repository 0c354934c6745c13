//! maxmemory, eviction and memory introspection, as Redis 7.0: the
//! configuration parameters, the OOM gate, every eviction policy, what an
//! eviction leaves behind (counter, keyspace event, DEL in the log), INFO
//! memory, MEMORY USAGE/STATS/DOCTOR/PURGE/MALLOC-STATS and OBJECT
//! FREQ/IDLETIME.
//!
//! Limits are relative: keel's empty process already holds ~14 MB
//! (used_memory_startup) against Redis's ~1 MB, so a test puts maxmemory
//! a few MB above the server's own used_memory when it starts. Nothing
//! here sleeps a fixed time or asserts a duration: a test waits for a
//! state (INFO polled until a condition holds) and the deadline only stops
//! a hung test. Replies and error texts are compared byte for byte with a
//! real redis-server 7.0. Tests on `Server::under_test()` also pass
//! against Redis (`KEEL_IT_AGAINST_REDIS=1`).

use resp::Value;

use crate::eqb;
use crate::harness::*;

const MB: u64 = 1 << 20;

const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";

// ---------------------------------------------------------------------------
// Helpers.

/// Commands, each as its arguments.
type Cmds = Vec<Vec<Vec<u8>>>;

fn assert_ok(reply: Vec<u8>) {
    eqb!(reply, b"+OK\r\n");
}

fn used_memory(raw: &mut Raw) -> u64 {
    info_u64(raw, "memory", "used_memory")
}

fn evicted_keys(raw: &mut Raw) -> u64 {
    info_u64(raw, "stats", "evicted_keys")
}

fn int_reply(reply: &[u8]) -> i64 {
    match parse(reply) {
        Value::Integer(n) => n,
        other => panic!("expected an integer reply, got {other:?}"),
    }
}

fn dbsize(raw: &mut Raw) -> i64 {
    int_reply(&raw.cmd(&["DBSIZE"]))
}

/// Sets `policy` and a maxmemory `extra` bytes above what the server holds
/// now; returns the limit.
fn limit_above_now(raw: &mut Raw, policy: &str, extra: u64) -> u64 {
    assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory-policy", policy]));
    let limit = used_memory(raw) + extra;
    assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory", limit.to_string().as_str()]));
    limit
}

/// A value of `len` bytes that starts with `i`, so values differ.
fn value(i: usize, len: usize) -> Vec<u8> {
    let mut v = format!("{i:08}").into_bytes();
    v.resize(len, b'v');
    v
}

fn set_cmd(key: &str, val: &[u8]) -> Vec<Vec<u8>> {
    vec![b"SET".to_vec(), key.as_bytes().to_vec(), val.to_vec()]
}

/// Which of `keys` exist.
fn existing(raw: &mut Raw, keys: &[String]) -> Vec<bool> {
    let cmds: Vec<_> = keys.iter().map(|k| argv(&["EXISTS", k])).collect();
    pipeline(raw, &cmds)
        .iter()
        .map(|r| r.as_slice() == b":1\r\n")
        .collect()
}

/// Writes `SET key <len bytes>` for every key, pipelined; every reply
/// must be +OK (an evicting policy always makes room).
fn fill(raw: &mut Raw, keys: &[String], len: usize) {
    let cmds: Vec<_> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| set_cmd(k, &value(i, len)))
        .collect();
    for (k, r) in keys.iter().zip(pipeline(raw, &cmds)) {
        eqb!(r, b"+OK\r\n", "SET {k}");
    }
}

/// Writes 1 KB values (keys `<prefix><batch>:<i>`), 100 per batch, until
/// a batch has a refused write, at most `batches`. Returns the keys whose
/// write was acknowledged and the first refusal.
fn fill_until_refused(raw: &mut Raw, prefix: &str, batches: usize) -> (Vec<String>, Vec<u8>) {
    let mut written = Vec::new();
    let mut refused = None;
    for batch in 0..batches {
        let keys = names(&format!("{prefix}{batch}:"), 100);
        let cmds: Vec<_> = keys.iter().map(|k| set_cmd(k, &value(0, 1000))).collect();
        for (k, r) in keys.iter().zip(pipeline(raw, &cmds)) {
            if r.as_slice() == b"+OK\r\n" {
                written.push(k.clone());
            } else if refused.is_none() {
                refused = Some(r);
            }
        }
        if let Some(r) = refused {
            return (written, r);
        }
    }
    panic!("{} MB written and no write refused", batches / 10);
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Turns the append-only log on and waits until its first rewrite is done.
fn log_on(raw: &mut Raw) {
    assert_ok(raw.cmd(&["CONFIG", "SET", "appendonly", "yes"]));
    wait_for("the append-only log to be on", || {
        let text = info(raw, "persistence");
        let f = |name: &str| info_field(&text, name).unwrap_or_default();
        if f("aof_enabled") == "1"
            && f("aof_rewrite_in_progress") == "0"
            && f("aof_rewrite_scheduled") == "0"
        {
            Ok(())
        } else {
            Err(text.clone())
        }
    });
}

/// The incremental files of the log, concatenated; Err if one vanished
/// while being read (a rewrite replaces them).
fn incremental_log(raw: &mut Raw) -> Result<Vec<u8>, String> {
    let dir = match raw.call(&["CONFIG", "GET", "dir"]) {
        Value::Array(v) => match &v[1] {
            Value::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("CONFIG GET dir: {other:?}"),
        },
        other => panic!("CONFIG GET dir: {other:?}"),
    };
    let logdir = std::path::Path::new(&dir).join("appendonlydir");
    let mut log = Vec::new();
    for f in std::fs::read_dir(&logdir).map_err(|e| format!("{}: {e}", logdir.display()))? {
        let path = f.map_err(|e| e.to_string())?.path();
        if path.to_string_lossy().ends_with(".incr.aof") {
            log.extend(std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?);
        }
    }
    Ok(log)
}

fn holds(log: &[u8], record: &[u8]) -> bool {
    log.windows(record.len()).any(|w| w == record)
}

// ---------------------------------------------------------------------------
// Differential: the same lines on keel and on redis-server.

fn show(v: &Value) -> String {
    match v {
        Value::Bulk(b) => escape(b),
        other => format!("{other:?}"),
    }
}

/// A CONFIG GET reply as its sorted pairs (their order is unspecified).
fn sorted_pairs(reply: &[u8]) -> String {
    let Value::Array(items) = parse(reply) else {
        return escape(reply);
    };
    let mut pairs: Vec<String> = items
        .chunks(2)
        .map(|p| p.iter().map(show).collect::<Vec<_>>().join("="))
        .collect();
    pairs.sort();
    pairs.join(" ")
}

/// Runs `lines` (redis-cli quoting) on `keel` and on `redis`, one
/// connection each, and returns every line whose replies differ. A line
/// starting with `!` runs on both without being compared (its reply
/// legitimately differs); `%` compares a CONFIG GET reply as a set of
/// pairs.
fn differences(keel: &Server, redis: &Server, lines: &[&str]) -> Vec<String> {
    let (mut k, mut r) = (keel.raw(), redis.raw());
    let mut diffs = Vec::new();
    for line in lines {
        let (mode, text) = match line.as_bytes()[0] {
            b'!' | b'%' => (line.as_bytes()[0], &line[1..]),
            _ => (b' ', *line),
        };
        let args = split(text);
        let (got, want) = (k.cmd(&args), r.cmd(&args));
        let (got, want) = if mode == b'%' {
            (sorted_pairs(&got), sorted_pairs(&want))
        } else {
            (escape(&got), escape(&want))
        };
        if mode != b'!' && got != want {
            diffs.push(format!("`{text}`\n      keel:  {got}\n      redis: {want}"));
        }
    }
    diffs
}

fn assert_same(diffs: Vec<String>) {
    assert!(
        diffs.is_empty(),
        "{} replies differ from redis-server's:\n  {}",
        diffs.len(),
        diffs.join("\n  ")
    );
}

// ---------------------------------------------------------------------------
// Configuration.

#[test]
fn memory_config_replies_match_redis() {
    let (keel, redis) = (Server::keel(), Server::redis());
    let mut lines = vec![
        // Defaults.
        "%CONFIG GET maxmemory*",
        "%CONFIG GET lfu-*",
        "%CONFIG GET lazyfree-lazy-*",
        // Invalid values: Redis's error texts.
        "CONFIG SET maxmemory-policy foo",
        "CONFIG SET maxmemory-policy \"\"",
        "CONFIG SET maxmemory foo",
        "CONFIG SET maxmemory -1",
        "CONFIG SET maxmemory 10xb",
        "CONFIG SET maxmemory-samples 0",
        "CONFIG SET maxmemory-samples abc",
        "CONFIG SET maxmemory-eviction-tenacity 101",
        "CONFIG SET maxmemory-eviction-tenacity -1",
        "CONFIG SET lfu-log-factor -1",
        "CONFIG SET lfu-decay-time -1",
        "CONFIG SET maxmemory-clients foo",
        "CONFIG SET maxmemory-clients -1",
        "CONFIG SET maxmemory-clients 101%",
        "CONFIG SET lazyfree-lazy-eviction maybe",
        "CONFIG SET lazyfree-lazy-expire maybe",
        "CONFIG SET lazyfree-lazy-server-del maybe",
        "CONFIG SET lazyfree-lazy-user-del maybe",
        "CONFIG SET lazyfree-lazy-user-flush maybe",
        "CONFIG SET maxmemory-policy allkeys-lru maxmemory-policy noeviction",
        // (In case one of the invalid values above was taken.)
        "!CONFIG SET maxmemory-clients 0",
        // Valid values read back.
        "CONFIG SET maxmemory 100mb maxmemory-policy allkeys-lru",
        "%CONFIG GET maxmemory*",
        "CONFIG SET maxmemory 1gb",
        "CONFIG GET maxmemory",
        "CONFIG SET maxmemory 123456789",
        "CONFIG GET maxmemory",
        "CONFIG SET maxmemory 0",
        "CONFIG SET maxmemory-policy ALLKEYS-LFU",
        "CONFIG GET maxmemory-policy",
    ];
    let policies = [
        "noeviction",
        "allkeys-lru",
        "volatile-lru",
        "allkeys-lfu",
        "volatile-lfu",
        "allkeys-random",
        "volatile-random",
        "volatile-ttl",
    ];
    let sets: Vec<String> = policies
        .iter()
        .map(|p| format!("CONFIG SET maxmemory-policy {p}"))
        .collect();
    for set in &sets {
        lines.push(set);
        lines.push("CONFIG GET maxmemory-policy");
    }
    lines.extend([
        "CONFIG SET maxmemory-policy noeviction",
        "CONFIG SET maxmemory-samples 1",
        "CONFIG GET maxmemory-samples",
        "CONFIG SET maxmemory-samples 64",
        "CONFIG GET maxmemory-samples",
        // Redis 7.0 takes any positive int here.
        "CONFIG SET maxmemory-samples 65",
        "CONFIG GET maxmemory-samples",
        "CONFIG SET maxmemory-samples 5",
        "CONFIG SET maxmemory-eviction-tenacity 0",
        "CONFIG SET maxmemory-eviction-tenacity 100",
        "CONFIG GET maxmemory-eviction-tenacity",
        "CONFIG SET lfu-log-factor 0",
        "CONFIG SET lfu-decay-time 0",
        "%CONFIG GET lfu-*",
        "CONFIG SET maxmemory-clients 10%",
        "CONFIG GET maxmemory-clients",
        "CONFIG SET maxmemory-clients 100%",
        "CONFIG GET maxmemory-clients",
        "CONFIG SET maxmemory-clients 1mb",
        "CONFIG GET maxmemory-clients",
        "CONFIG SET maxmemory-clients 0",
        "CONFIG SET lazyfree-lazy-eviction yes",
        "CONFIG SET lazyfree-lazy-expire yes",
        "CONFIG SET lazyfree-lazy-server-del yes",
        "CONFIG SET lazyfree-lazy-user-del yes",
        "CONFIG SET lazyfree-lazy-user-flush yes",
        "%CONFIG GET lazyfree-lazy-*",
    ]);
    assert_same(differences(&keel, &redis, &lines));
}

/// The same parameters given on the command line.
#[test]
fn memory_options_on_the_command_line_match_redis() {
    require_tool("redis-server", "redis-server");
    let opts = [
        "--maxmemory",
        "100mb",
        "--maxmemory-policy",
        "allkeys-lfu",
        "--maxmemory-samples",
        "10",
        "--maxmemory-eviction-tenacity",
        "20",
        "--lfu-log-factor",
        "20",
        "--lfu-decay-time",
        "5",
        "--maxmemory-clients",
        "10%",
        "--lazyfree-lazy-eviction",
        "yes",
        "--lazyfree-lazy-expire",
        "yes",
        "--lazyfree-lazy-server-del",
        "yes",
        "--lazyfree-lazy-user-del",
        "yes",
        "--lazyfree-lazy-user-flush",
        "yes",
    ];
    let keel = Server::keel_with(&opts);
    let mut args = vec!["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"];
    args.extend(opts);
    let redis = Server::start_program("redis-server", "redis-server", &args);
    assert_same(differences(
        &keel,
        &redis,
        &[
            "%CONFIG GET maxmemory*",
            "%CONFIG GET lfu-*",
            "%CONFIG GET lazyfree-lazy-*",
        ],
    ));
    let (ki, ri) = (
        info(&mut keel.raw(), "memory"),
        info(&mut redis.raw(), "memory"),
    );
    for field in ["maxmemory", "maxmemory_human", "maxmemory_policy"] {
        assert_eq!(info_field(&ki, field), info_field(&ri, field), "{field}");
    }
}

// ---------------------------------------------------------------------------
// The OOM gate.

/// Over maxmemory (1 byte) with nothing to evict: commands flagged denyoom
/// are refused, reads, deletes and admin commands run; inside MULTI every
/// command is refused and EXEC aborts.
#[test]
fn oom_replies_match_redis() {
    let (keel, redis) = (Server::keel(), Server::redis());
    assert_same(differences(
        &keel,
        &redis,
        &[
            "SET k v",
            "RPUSH l a b",
            "CONFIG SET maxmemory 1",
            "CONFIG GET maxmemory",
            // denyoom: refused under noeviction.
            "SET k v2",
            "SET x 1 NX",
            "SETNX x 1",
            "SETEX x 100 v",
            "MSET a 1 b 2",
            "INCR counter",
            "APPEND k x",
            "LPUSH l c",
            "RPUSH l c",
            "HSET h f v",
            "SADD s m",
            "ZADD z 1 m",
            "XADD st * f v",
            // Not denyoom: run.
            "GET k",
            "LRANGE l 0 -1",
            "EXISTS k x",
            "STRLEN k",
            "TTL k",
            "LPOP l",
            "EXPIRE nokey 10",
            "DEL k",
            "DBSIZE",
            "PING",
            "ECHO hi",
            "PUBLISH ch m",
            // MULTI: every queued command is refused, EXEC aborts.
            "MULTI",
            "SET a b",
            "GET l",
            "PING",
            "EXEC",
            "MULTI",
            "EXEC",
            "MULTI",
            "GET l",
            "DISCARD",
            // A volatile policy with no key with a TTL has nothing to evict.
            "CONFIG SET maxmemory-policy volatile-lru",
            "SET k v",
            "CONFIG SET maxmemory-policy volatile-ttl",
            "SET k v",
            "DBSIZE",
            // An allkeys policy evicts everything, then still refuses.
            "CONFIG SET maxmemory-policy allkeys-random",
            "SET k v",
            "DBSIZE",
            "CONFIG SET maxmemory 0",
            "SET k v",
            "GET k",
        ],
    ));
}

/// Scripts under OOM (Redis 7.0): a script without flags gets the OOM
/// error from its first denyoom call (raised as a script error, or
/// returned by pcall); a script or function that may write is refused
/// before it runs; `no-writes` and `allow-oom` ones run.
#[test]
fn scripts_under_oom_match_redis() {
    let (keel, redis) = (Server::keel(), Server::redis());
    assert_same(differences(
        &keel,
        &redis,
        &[
            "FUNCTION LOAD \"#!lua name=lib\\nredis.register_function('w', function(k) return redis.call('set', k[1], 'x') end)\\nredis.register_function{function_name='r', callback=function(k) return redis.call('get', k[1]) end, flags={'no-writes'}}\"",
            "SET a v",
            "CONFIG SET maxmemory 1",
            "EVAL \"return redis.call('set','b1','x')\" 0",
            "EVAL \"return redis.pcall('set','b2','x')\" 0",
            "EVAL \"#!lua\\nreturn redis.call('set','b3','x')\" 0",
            "EVAL \"#!lua flags=no-writes\\nreturn redis.call('get','a')\" 0",
            "EVAL \"#!lua flags=allow-oom\\nreturn redis.call('set','a','w')\" 0",
            "EVAL \"return redis.call('get','a')\" 0",
            "FCALL w 1 b4",
            "FCALL r 1 a",
            "FCALL_RO r 1 a",
            "EVAL \"return redis.call('del','a')\" 0",
            "CONFIG SET maxmemory 0",
            "MGET a b1 b2 b3 b4",
        ],
    ));
}

/// noeviction: writes are refused once full, reads still work, and
/// deleting keys makes room again.
#[test]
fn noeviction_refuses_writes_until_keys_are_deleted() {
    let s = Server::under_test();
    let mut raw = s.raw();
    limit_above_now(&mut raw, "noeviction", 4 * MB);
    // 1 KB values, 100 at a time, until a batch gets an OOM (4 MB holds
    // fewer than 4096). Near the limit a later write of the batch may
    // still fit: every acknowledged one counts.
    let (written, refused) = fill_until_refused(&mut raw, "k", 100);
    eqb!(refused, OOM);
    // Nothing was evicted: every acknowledged write is there.
    assert!(existing(&mut raw, &written).iter().all(|&e| e));
    assert_eq!(evicted_keys(&mut raw), 0);
    assert_eq!(dbsize(&mut raw), written.len() as i64);
    let mut want = b"$1000\r\n".to_vec();
    want.extend(value(0, 1000));
    want.extend(b"\r\n");
    eqb!(raw.cmd(&["GET", written[0].as_str()]), want);
    // Half the data deleted: room for more.
    let half = &written[..written.len() / 2];
    let dels: Vec<_> = half.iter().map(|k| argv(&["DEL", k])).collect();
    for r in pipeline(&mut raw, &dels) {
        eqb!(r, b":1\r\n");
    }
    assert_ok(raw.cmd(&["SET", "more", "v"]));
}

// ---------------------------------------------------------------------------
// Evictions.

/// An eviction is counted, published as an `evicted` keyspace event and
/// logged as a DEL.
fn check_eviction_is_counted_published_and_logged(s: &Server) {
    let mut raw = s.raw();
    log_on(&mut raw);
    assert_ok(raw.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ee"]));
    let mut sub = s.raw();
    sub.cmd(&["SUBSCRIBE", "__keyevent@0__:evicted"]);
    assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]));
    assert_ok(raw.cmd(&["SET", "a", "1"]));
    assert_ok(raw.cmd(&["SET", "b", "2"]));
    // 1 byte: every key goes.
    assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory", "1"]));
    wait_for("every key to be evicted", || {
        match (dbsize(&mut raw), evicted_keys(&mut raw)) {
            (0, 2..) => Ok(()),
            (n, e) => Err(format!("DBSIZE {n}, evicted_keys {e}")),
        }
    });
    let mut events = [sub.read_reply(), sub.read_reply()];
    events.sort();
    let event = |k: &str| {
        format!("*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:evicted\r\n$1\r\n{k}\r\n")
            .into_bytes()
    };
    eqb!(events[0], event("a"), "{}", s.name);
    eqb!(events[1], event("b"), "{}", s.name);
    assert_eq!(evicted_keys(&mut raw), 2, "{}", s.name);
    // Still over the limit with nothing left to evict.
    eqb!(raw.cmd(&["SET", "c", "3"]), OOM, "{}", s.name);
    assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory", "0"]));
    // With appendfsync everysec Redis may hold back its write to the file
    // (up to 2 s while an fsync runs): wait for the records.
    wait_for("the evictions in the log", || {
        let log = incremental_log(&mut raw)?;
        for key in ["a", "b"] {
            let record = format!("*2\r\n$3\r\nDEL\r\n$1\r\n{key}\r\n").into_bytes();
            if !holds(&log, &record) {
                return Err(format!(
                    "{}: no DEL {key} in the log:\n{}",
                    s.name,
                    escape(&log)
                ));
            }
        }
        Ok(())
    });
}

/// A scratch directory, removed when dropped (a failing test too).
struct ScratchDir(std::path::PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn evictions_are_counted_published_and_logged() {
    // keel in its own directory: the log must not meet other tests'.
    let dir = ScratchDir(std::env::temp_dir().join(format!(
        "keel-it-memory-{}-{}",
        std::process::id(),
        free_port()
    )));
    std::fs::create_dir_all(&dir.0).unwrap();
    {
        // Dropped (stopped) before its directory.
        let keel = Server::keel_with(&["--dir", &dir.0.to_string_lossy()]);
        check_eviction_is_counted_published_and_logged(&keel);
    }
    check_eviction_is_counted_published_and_logged(&Server::redis());
}

/// CONFIG RESETSTAT zeroes evicted_keys and the eviction time.
#[test]
fn resetstat_clears_the_eviction_counters() {
    for s in [Server::keel(), Server::redis()] {
        let mut raw = s.raw();
        assert_ok(raw.cmd(&["SET", "a", "1"]));
        assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]));
        assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory", "1"]));
        wait_for("the key to be evicted", || {
            match (dbsize(&mut raw), evicted_keys(&mut raw)) {
                (0, 1..) => Ok(()),
                (n, e) => Err(format!("DBSIZE {n}, evicted_keys {e}")),
            }
        });
        assert_eq!(evicted_keys(&mut raw), 1, "{}", s.name);
        assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory", "0"]));
        assert_ok(raw.cmd(&["CONFIG", "RESETSTAT"]));
        let stats = info(&mut raw, "stats");
        for field in ["evicted_keys", "total_eviction_exceeded_time"] {
            assert_eq!(
                info_field(&stats, field).as_deref(),
                Some("0"),
                "{}: {field} after CONFIG RESETSTAT:\n{stats}",
                s.name
            );
        }
    }
}

/// CONFIG SET maxmemory below what is used evicts down to the new limit
/// (in the background: wait for it).
#[test]
fn lowering_maxmemory_evicts_down_to_it() {
    let s = Server::under_test();
    let mut raw = s.raw();
    let start = used_memory(&mut raw);
    assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]));
    // 16 MB, no limit yet.
    let keys = names("k:", 16_000);
    fill(&mut raw, &keys, 1000);
    let limit = start + 8 * MB;
    assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory", limit.to_string().as_str()]));
    wait_for("used_memory to drop to maxmemory", || {
        let used = used_memory(&mut raw);
        if used <= limit {
            Ok(())
        } else {
            Err(format!("used_memory {used} > maxmemory {limit}"))
        }
    });
    assert!(evicted_keys(&mut raw) > 0);
    // Evicted down to the limit, not beyond: about half the keys stay.
    let left = dbsize(&mut raw);
    assert!((2001..16_000).contains(&left), "DBSIZE {left}");
    assert_ok(raw.cmd(&["SET", "after", "v"]));
}

/// lazyfree-lazy-eviction: evicted values are freed in the background,
/// and memory still comes down to the limit.
#[test]
fn lazyfree_eviction_frees_in_the_background() {
    let s = Server::under_test();
    let mut raw = s.raw();
    let start = used_memory(&mut raw);
    assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]));
    assert_ok(raw.cmd(&["CONFIG", "SET", "lazyfree-lazy-eviction", "yes"]));
    // 2000 sets of 200 members (~20 MB): each worth freeing lazily (more
    // than 64 elements).
    let cmds: Vec<_> = (0..2000)
        .map(|i| {
            let mut c = argv(&["SADD", &format!("set:{i}")]);
            c.extend((0..200).map(|m| format!("member:{i}:{m}").into_bytes()));
            c
        })
        .collect();
    for r in pipeline(&mut raw, &cmds) {
        eqb!(r, b":200\r\n");
    }
    let limit = start + 8 * MB;
    assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory", limit.to_string().as_str()]));
    wait_for("lazy frees to finish under the limit", || {
        let text = info(&mut raw, "memory");
        let f = |name: &str| -> u64 { info_field(&text, name).unwrap().parse().unwrap() };
        if f("used_memory") <= limit && f("lazyfree_pending_objects") == 0 {
            Ok(())
        } else {
            Err(text.clone())
        }
    });
    assert!(evicted_keys(&mut raw) > 0);
    assert!(info_u64(&mut raw, "memory", "lazyfreed_objects") > 0);
}

/// Every allkeys policy makes room for every write and keeps memory at
/// the limit.
#[test]
fn allkeys_policies_make_room_for_every_write() {
    for policy in ["allkeys-lru", "allkeys-lfu", "allkeys-random"] {
        let s = Server::under_test();
        let mut raw = s.raw();
        let limit = limit_above_now(&mut raw, policy, 8 * MB);
        // 30 MB through an 8 MB budget.
        fill(&mut raw, &names("k:", 30_000), 1000);
        // Every key is there or was evicted. Evictions may go on between
        // the reads (keel also evicts from its cron), so the count of
        // keys left is bracketed by the counter read before and after.
        let before = evicted_keys(&mut raw) as i64;
        let left = dbsize(&mut raw);
        let after = evicted_keys(&mut raw) as i64;
        assert!(before > 0, "{policy}: nothing evicted");
        assert!(
            before + left <= 30_000 && 30_000 <= after + left,
            "{policy}: {left} keys left, evicted_keys {before} then {after}"
        );
        // The INFO call evicts first too; what the reply itself allocates
        // is well under 1 MB.
        let used = used_memory(&mut raw);
        assert!(
            used <= limit + MB,
            "{policy}: used_memory {used} against maxmemory {limit}"
        );
    }
}

/// volatile-lru, volatile-lfu, volatile-random: only keys with a TTL are
/// evicted; once none is left, writes are refused.
#[test]
fn volatile_policies_evict_only_keys_with_a_ttl() {
    for policy in ["volatile-lru", "volatile-lfu", "volatile-random"] {
        let s = Server::under_test();
        let mut raw = s.raw();
        limit_above_now(&mut raw, policy, 8 * MB);
        let volatile = names("v:", 2000);
        let cmds: Vec<_> = volatile
            .iter()
            .map(|k| {
                let mut c = set_cmd(k, &value(0, 1000));
                c.extend(argv(&["EX", "100000"]));
                c
            })
            .collect();
        for r in pipeline(&mut raw, &cmds) {
            eqb!(r, b"+OK\r\n", "{policy}");
        }
        // Keys without a TTL until a write is refused (20 MB would be
        // plenty).
        let (persistent, refused) = fill_until_refused(&mut raw, "p", 200);
        eqb!(refused, OOM, "{policy}");
        // Refused only once every key with a TTL was gone, and no other.
        assert_eq!(evicted_keys(&mut raw), 2000, "{policy}");
        assert!(
            existing(&mut raw, &volatile).iter().all(|&e| !e),
            "{policy}"
        );
        assert!(
            existing(&mut raw, &persistent).iter().all(|&e| e),
            "{policy}: a key without a TTL was evicted"
        );
        assert_eq!(dbsize(&mut raw), persistent.len() as i64, "{policy}");
    }
}

/// volatile-ttl evicts the keys that expire soonest (approximately, by
/// sampling, as Redis): evict ~1000 of 4000 keys with TTLs 10000 s + i.
#[test]
fn volatile_ttl_evicts_the_soonest_expiring_first() {
    const V: usize = 4000;
    let s = Server::under_test();
    let mut raw = s.raw();
    limit_above_now(&mut raw, "volatile-ttl", 8 * MB);
    let volatile = names("v:", V);
    let cmds: Vec<_> = volatile
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let mut c = set_cmd(k, &value(i, 1000));
            c.extend(argv(&["EX", &(10_000 + i).to_string()]));
            c
        })
        .collect();
    for r in pipeline(&mut raw, &cmds) {
        eqb!(r, b"+OK\r\n");
    }
    // Keys without a TTL, 100 at a time, until 1000 keys were evicted.
    let mut persistent = Vec::new();
    for batch in 0.. {
        if evicted_keys(&mut raw) >= 1000 {
            break;
        }
        assert!(batch < 200, "20 MB written, still not 1000 evictions");
        let keys = names(&format!("p{batch}:"), 100);
        fill(&mut raw, &keys, 1000);
        persistent.extend(keys);
    }
    assert!(existing(&mut raw, &persistent).iter().all(|&e| e));
    let gone: Vec<usize> = existing(&mut raw, &volatile)
        .iter()
        .enumerate()
        .filter(|(_, &e)| !e)
        .map(|(i, _)| i)
        .collect();
    // Redis evicts among the first ~1700 here. The very first evictions
    // choose among a few samples only (the pool starts empty), so one may
    // be a late key (Redis does that in a few % of runs): allow 1%. A
    // random choice would take half of them from the later half.
    let late = gone.iter().filter(|&&i| i >= V / 2).count();
    assert!(
        gone.len() >= 1000 && late * 100 <= gone.len(),
        "{} evicted, {late} of them from the latest-expiring half; latest evicted: {:?}",
        gone.len(),
        gone.iter().rev().take(10).collect::<Vec<_>>()
    );
}

/// allkeys-lfu keeps frequently used keys: 200 hot keys read 50 times
/// each survive 50 MB of keys written once through an 8 MB budget.
#[test]
fn allkeys_lfu_keeps_frequently_used_keys() {
    let s = Server::under_test();
    let mut raw = s.raw();
    limit_above_now(&mut raw, "allkeys-lfu", 8 * MB);
    let hot = names("hot:", 200);
    fill(&mut raw, &hot, 1000);
    let gets: Vec<_> = hot.iter().map(|k| argv(&["GET", k])).collect();
    for _ in 0..50 {
        for r in pipeline(&mut raw, &gets) {
            assert!(r.starts_with(b"$1000\r\n"));
        }
    }
    // The first access from the initial 5 always counts.
    let freqs: Vec<_> = hot.iter().map(|k| argv(&["OBJECT", "FREQ", k])).collect();
    for (k, r) in hot.iter().zip(pipeline(&mut raw, &freqs)) {
        assert!(int_reply(&r) > 5, "OBJECT FREQ {k}: {}", escape(&r));
    }
    let cold = names("cold:", 50_000);
    fill(&mut raw, &cold, 1000);
    assert!(evicted_keys(&mut raw) > 25_000);
    let hot_left = existing(&mut raw, &hot).iter().filter(|&&e| e).count();
    let cold_left = existing(&mut raw, &cold).iter().filter(|&&e| e).count();
    assert!(
        hot_left >= 190 && cold_left < cold.len() / 2,
        "{hot_left} of 200 hot keys and {cold_left} of 50000 cold keys left"
    );
}

/// splitmix64: the same sequence for both servers.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn server_secs(raw: &mut Raw) -> u64 {
    match raw.call(&["TIME"]) {
        Value::Array(v) => match &v[0] {
            Value::Bulk(b) => std::str::from_utf8(b).unwrap().parse().unwrap(),
            other => panic!("TIME: {other:?}"),
        },
        other => panic!("TIME: {other:?}"),
    }
}

/// The skewed workload: 80% of accesses on 10k hot keys out of 50k, GET
/// then SET of a 200-byte value on a miss, under allkeys-lru and a limit
/// 8 MB above the server's start (Redis holds about half the keys).
/// Returns the hit rate of the second half of the rounds.
fn skewed_hit_rate(port: u16) -> f64 {
    const KEYS: u64 = 50_000;
    const HOT: u64 = 10_000;
    const ROUNDS: usize = 8;
    const OPS: usize = 25_000;
    const BATCH: usize = 500;
    let mut raw = Raw::connect(port);
    limit_above_now(&mut raw, "allkeys-lru", 8 * MB);
    let mut rng = Rng(0x5EED);
    let val = vec![b'v'; 200];
    let (mut hits, mut counted) = (0usize, 0usize);
    for round in 0..ROUNDS {
        // The LRU clock has a 1 s resolution: every round starts on a new
        // second of the server's clock, so both servers see the same
        // number of clock ticks whatever their speed.
        let now = server_secs(&mut raw);
        wait_for("the server clock's next second", || {
            let t = server_secs(&mut raw);
            if t > now {
                Ok(())
            } else {
                Err(format!("TIME {t}"))
            }
        });
        for _ in 0..OPS / BATCH {
            let keys: Vec<Vec<u8>> = (0..BATCH)
                .map(|_| {
                    let r = rng.next();
                    let k = if r % 10 < 8 {
                        (r / 10) % HOT
                    } else {
                        HOT + (r / 10) % (KEYS - HOT)
                    };
                    format!("key:{k}").into_bytes()
                })
                .collect();
            let gets: Vec<_> = keys
                .iter()
                .map(|k| vec![b"GET".to_vec(), k.clone()])
                .collect();
            let mut sets = Vec::new();
            for (k, r) in keys.iter().zip(pipeline(&mut raw, &gets)) {
                if r.as_slice() == b"$-1\r\n" {
                    sets.push(vec![b"SET".to_vec(), k.clone(), val.clone()]);
                } else {
                    assert!(r.starts_with(b"$200\r\n"), "GET: {}", escape(&r));
                    if round >= ROUNDS / 2 {
                        hits += 1;
                    }
                }
            }
            if round >= ROUNDS / 2 {
                counted += BATCH;
            }
            for r in pipeline(&mut raw, &sets) {
                eqb!(r, b"+OK\r\n");
            }
        }
    }
    assert!(evicted_keys(&mut raw) > 0, "the workload never evicted");
    hits as f64 / counted as f64
}

#[test]
fn allkeys_lru_hit_rate_matches_redis() {
    let (keel, redis) = (Server::keel(), Server::redis());
    let (kp, rp) = (keel.port, redis.port);
    let (k, r) = std::thread::scope(|scope| {
        let k = scope.spawn(move || skewed_hit_rate(kp));
        let r = scope.spawn(move || skewed_hit_rate(rp));
        (k.join().unwrap(), r.join().unwrap())
    });
    eprintln!("allkeys-lru hit rate: keel {k:.4}, redis-server {r:.4}");
    assert!(
        k >= r - 0.05,
        "keel's hit rate {k:.4} is below redis-server's {r:.4} by more than 0.05"
    );
}

/// Keys that expire under maxmemory give their memory back: 3 rounds of
/// 100k keys with PX 1, read after they expired.
#[test]
fn ttl_churn_under_maxmemory_gives_memory_back() {
    // What an empty keel holds, to start one with a limit 64 MB above it.
    let startup = used_memory(&mut Server::keel().raw());
    let limit = (startup + 64 * MB).to_string();
    let s = Server::keel_with(&["--maxmemory", &limit, "--maxmemory-policy", "allkeys-lru"]);
    let mut raw = s.raw();
    let start = used_memory(&mut raw);
    const N: usize = 100_000;
    let keys = names("churn:", N);
    for round in 0..3 {
        let sets: Vec<_> = keys
            .iter()
            .map(|k| argv(&["SET", k, "v", "PX", "1"]))
            .collect();
        for r in pipeline(&mut raw, &sets) {
            eqb!(r, b"+OK\r\n");
        }
        // All expired once the last one written has (PTTL deletes it).
        let last = &keys[N - 1];
        wait_for("the last key to expire", || {
            let r = raw.cmd(&["PTTL", last.as_str()]);
            if r.as_slice() == b":-2\r\n" {
                Ok(())
            } else {
                Err(format!("PTTL {}", escape(&r)))
            }
        });
        let gets: Vec<_> = keys.iter().map(|k| argv(&["GET", k])).collect();
        for r in pipeline(&mut raw, &gets) {
            eqb!(r, b"$-1\r\n");
        }
        wait_for("used_memory to come back", || {
            let used = used_memory(&mut raw);
            if used <= start + 8 * MB {
                Ok(())
            } else {
                Err(format!(
                    "round {round}: used_memory {used}, {start} at the start"
                ))
            }
        });
    }
    // The limit was never reached: memory came back by expiry alone.
    assert_eq!(evicted_keys(&mut raw), 0);
}

// ---------------------------------------------------------------------------
// MEMORY and OBJECT.

#[test]
fn memory_command_replies_match_redis() {
    let (keel, redis) = (Server::keel(), Server::redis());
    assert_same(differences(
        &keel,
        &redis,
        &[
            "MEMORY USAGE nokey",
            "MEMORY USAGE nokey SAMPLES 5",
            "MEMORY USAGE nokey SAMPLES",
            "MEMORY USAGE nokey SAMPLES x",
            "MEMORY USAGE nokey SAMPLES -1",
            "MEMORY USAGE nokey foo 1",
            "SET k v",
            "!MEMORY USAGE k",
            "!MEMORY USAGE k SAMPLES 0",
            "MEMORY USAGE k SAMPLES",
            "MEMORY USAGE k SAMPLES x",
            "MEMORY USAGE k SAMPLES -1",
            "MEMORY USAGE k foo 1",
            "MEMORY USAGE k SAMPLES 5 extra",
            "MEMORY",
            "MEMORY FOO",
            "MEMORY USAGE",
            "MEMORY DOCTOR x",
            "MEMORY STATS x",
            "MEMORY PURGE x",
            "MEMORY MALLOC-STATS x",
            "MEMORY PURGE",
            "MEMORY HELP",
        ],
    ));
}

/// MEMORY USAGE of each type is within 20% of what creating the key
/// added to used_memory.
#[test]
fn memory_usage_is_close_to_the_real_size() {
    const N: usize = 10_000;
    let s = Server::under_test();
    let mut raw = s.raw();
    let el = |i: usize| value(i, 200);
    // Each collection is built in batches of 1000 elements (~2 MB in all,
    // so the up to 64 KB per thread that used_memory may lag is noise).
    let batched = |head: &[&str], per: &dyn Fn(usize) -> Vec<Vec<u8>>| -> Cmds {
        (0..N / 1000)
            .map(|b| {
                let mut c = argv(head);
                c.extend((b * 1000..(b + 1) * 1000).flat_map(per));
                c
            })
            .collect()
    };
    // 2000 strings of 1000 bytes, in one slot (hash tag): keel allocates
    // a database's slot maps on first use, which belongs to the database,
    // not to the keys.
    let strings = names("{str}:", 2000);
    let cases: Vec<(&str, Cmds, Vec<String>)> = vec![
        (
            "string",
            strings
                .iter()
                .enumerate()
                .map(|(i, k)| set_cmd(k, &value(i, 1000)))
                .collect(),
            strings.clone(),
        ),
        (
            "list",
            batched(&["RPUSH", "list"], &|i| vec![el(i)]),
            vec!["list".into()],
        ),
        (
            "hash",
            batched(&["HSET", "hash"], &|i| {
                vec![format!("f{i}").into_bytes(), el(i)]
            }),
            vec!["hash".into()],
        ),
        (
            "set",
            batched(&["SADD", "set"], &|i| vec![el(i)]),
            vec!["set".into()],
        ),
        (
            "zset",
            batched(&["ZADD", "zset"], &|i| {
                vec![i.to_string().into_bytes(), el(i)]
            }),
            vec!["zset".into()],
        ),
        (
            "stream",
            (0..N)
                .map(|i| {
                    let mut c = argv(&["XADD", "stream", "*", "f"]);
                    c.push(el(i));
                    c
                })
                .collect(),
            vec!["stream".into()],
        ),
    ];
    for (kind, cmds, keys) in cases {
        let before = used_memory(&mut raw) as i64;
        {
            // Written on a connection of its own, closed before measuring:
            // its buffers are not the key's.
            let mut w = s.raw();
            for r in pipeline(&mut w, &cmds) {
                assert!(!r.starts_with(b"-"), "{kind}: {}", escape(&r));
            }
        }
        wait_for("the writer connection to be gone", || {
            match info_u64(&mut raw, "clients", "connected_clients") {
                1 => Ok(()),
                n => Err(format!("connected_clients {n}")),
            }
        });
        let grew = used_memory(&mut raw) as i64 - before;
        let mut usage = |samples: &str| -> i64 {
            let cmds: Vec<_> = keys
                .iter()
                .map(|k| argv(&["MEMORY", "USAGE", k, "SAMPLES", samples]))
                .collect();
            pipeline(&mut raw, &cmds).iter().map(|r| int_reply(r)).sum()
        };
        // SAMPLES 0: every element counted.
        let exact = usage("0");
        let ratio = exact as f64 / grew as f64;
        assert!(
            (0.8..=1.2).contains(&ratio),
            "{kind}: MEMORY USAGE {exact}, used_memory grew by {grew} (ratio {ratio:.3})"
        );
        // The default (5 samples) estimates from equal-sized elements.
        let sampled = usage("5");
        let ratio = sampled as f64 / exact as f64;
        assert!(
            (0.9..=1.1).contains(&ratio),
            "{kind}: MEMORY USAGE {sampled} with 5 samples, {exact} with all"
        );
    }
}

/// The field names of MEMORY STATS (RESP2: a flat array; `db.N` nested),
/// in order: top-level names, and `db.0/name` for the nested ones; and
/// whatever the server sent after the array its header announced.
fn memory_stats_names(raw: &mut Raw) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let Value::Array(items) = raw.call(&["MEMORY", "STATS"]) else {
        panic!("MEMORY STATS is not an array");
    };
    // PING's reply must come next.
    let mut trailing = Vec::new();
    raw.send_cmd(&["PING"]);
    loop {
        let r = raw.read_reply();
        if r.as_slice() == b"+PONG\r\n" {
            break;
        }
        trailing.push(escape(&r));
    }
    for pair in items.chunks(2) {
        let name = show(&pair[0]);
        if let Value::Array(nested) = &pair[1] {
            for sub in nested.chunks(2) {
                out.push(format!("{name}/{}", show(&sub[0])));
            }
        }
        out.push(name);
    }
    (out, trailing)
}

#[test]
fn memory_stats_fields_match_redis() {
    let (keel, redis) = (Server::keel(), Server::redis());
    let (mut k, mut r) = (keel.raw(), redis.raw());
    assert_ok(k.cmd(&["SET", "a", "v"]));
    assert_ok(r.cmd(&["SET", "a", "v"]));
    let ((got, trailing), (want, _)) = (memory_stats_names(&mut k), memory_stats_names(&mut r));
    let mut problems = Vec::new();
    if !trailing.is_empty() {
        problems.push(format!(
            "keel sent more than the array its header announced: {trailing:?}"
        ));
    }
    if got != want {
        let missing: Vec<_> = want.iter().filter(|n| !got.contains(n)).collect();
        let extra: Vec<_> = got.iter().filter(|n| !want.contains(n)).collect();
        problems.push(format!(
            "fields differ from redis-server's: missing {missing:?}, extra {extra:?}\n  keel:  {got:?}\n  redis: {want:?}"
        ));
    }
    assert!(problems.is_empty(), "MEMORY STATS: {}", problems.join("\n"));
}

#[test]
fn memory_stats_doctor_purge_and_malloc_stats() {
    let s = Server::under_test();
    let mut raw = s.raw();
    let keys = names("k:", 100);
    fill(&mut raw, &keys, 100);
    let Value::Array(items) = raw.call(&["MEMORY", "STATS"]) else {
        panic!("MEMORY STATS is not an array");
    };
    let stat = |name: &str| -> i64 {
        let i = items
            .iter()
            .position(|v| *v == Value::Bulk(name.as_bytes().to_vec()))
            .unwrap_or_else(|| panic!("no {name} in MEMORY STATS"));
        match &items[i + 1] {
            Value::Integer(n) => *n,
            other => panic!("{name}: {other:?}"),
        }
    };
    assert_eq!(stat("keys.count"), 100);
    let (peak, total, startup) = (
        stat("peak.allocated"),
        stat("total.allocated"),
        stat("startup.allocated"),
    );
    assert!(
        startup > 0 && (startup..=peak).contains(&total),
        "startup {startup}, total {total}, peak {peak}"
    );
    assert!(stat("dataset.bytes") > 0);
    assert!(stat("overhead.total") >= startup);
    // A new connection: MEMORY STATS's framing is checked above
    // (memory_stats_fields_match_redis), not here.
    let mut raw = s.raw();
    // On an almost empty instance: "Hi Sam, ..." (empty, or no issue), or
    // "Sam, I detected a few issues ..." (say, a peak far above usage).
    match raw.call(&["MEMORY", "DOCTOR"]) {
        Value::Bulk(b) => assert!(
            b.starts_with(b"Hi Sam") || b.starts_with(b"Sam,"),
            "MEMORY DOCTOR: {}",
            escape(&b)
        ),
        other => panic!("MEMORY DOCTOR: {other:?}"),
    }
    assert_ok(raw.cmd(&["MEMORY", "PURGE"]));
    match raw.call(&["MEMORY", "MALLOC-STATS"]) {
        Value::Bulk(b) => assert!(!b.is_empty()),
        other => panic!("MEMORY MALLOC-STATS: {other:?}"),
    }
}

/// Every field of Redis's INFO memory is there, the configuration ones
/// with Redis's values, and the totals add up.
#[test]
fn info_memory_fields_match_redis() {
    let (keel, redis) = (Server::keel(), Server::redis());
    let (mut k, mut r) = (keel.raw(), redis.raw());
    for raw in [&mut k, &mut r] {
        assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory", "100mb"]));
        assert_ok(raw.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]));
    }
    let (ki, ri) = (info(&mut k, "memory"), info(&mut r, "memory"));
    let field_names = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| l.split_once(':').map(|(n, _)| n.to_string()))
            .collect()
    };
    let kn = field_names(&ki);
    let missing: Vec<_> = field_names(&ri)
        .into_iter()
        .filter(|n| !kn.contains(n))
        .collect();
    assert!(missing.is_empty(), "INFO memory lacks {missing:?}:\n{ki}");
    for field in [
        "maxmemory",
        "maxmemory_human",
        "maxmemory_policy",
        "mem_not_counted_for_evict",
        "lazyfree_pending_objects",
        "lazyfreed_objects",
    ] {
        assert_eq!(info_field(&ki, field), info_field(&ri, field), "{field}");
    }
    let f = |name: &str| -> u64 { info_field(&ki, name).unwrap().parse().unwrap() };
    assert_eq!(
        f("used_memory_dataset"),
        f("used_memory") - f("used_memory_overhead"),
        "{ki}"
    );
    assert!(f("used_memory_peak") >= f("used_memory"), "{ki}");
    assert!(f("used_memory_startup") <= f("used_memory"), "{ki}");
}

/// OBJECT FREQ only under an LFU policy, OBJECT IDLETIME only under
/// another; a new key's counter is 5 and its first access adds 1 (with
/// lfu-decay-time 0, nothing decays between the commands).
#[test]
fn object_freq_and_idletime_match_redis() {
    let (keel, redis) = (Server::keel(), Server::redis());
    assert_same(differences(
        &keel,
        &redis,
        &[
            "SET k v",
            "OBJECT FREQ k",
            "OBJECT FREQ nokey",
            "!OBJECT IDLETIME k",
            "OBJECT IDLETIME nokey",
            "CONFIG SET lfu-decay-time 0",
            "CONFIG SET maxmemory-policy allkeys-lfu",
            "SET n v",
            "OBJECT FREQ n",
            "GET n",
            "OBJECT FREQ n",
            "OBJECT IDLETIME n",
            "OBJECT IDLETIME nokey",
            "OBJECT FREQ nokey",
            "CONFIG SET maxmemory-policy volatile-lfu",
            "OBJECT FREQ n",
            "OBJECT IDLETIME n",
            "CONFIG SET maxmemory-policy volatile-lru",
            "OBJECT FREQ n",
            "CONFIG SET maxmemory-policy allkeys-random",
            "OBJECT FREQ n",
            "CONFIG SET maxmemory-policy noeviction",
            "OBJECT FREQ n",
        ],
    ));
    // IDLETIME under a non-LFU policy is a count of seconds.
    let reply = keel.raw().cmd(&["OBJECT", "IDLETIME", "n"]);
    assert!(int_reply(&reply) >= 0);
}
