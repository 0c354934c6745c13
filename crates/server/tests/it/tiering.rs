//! The disk tier (`tiering-dir`): values beyond `maxmemory` go to disk
//! instead of being evicted, and every command answers as if they had
//! stayed in memory. The differential table runs a second time with every
//! value on disk (`compat::same_replies_as_redis_with_values_on_disk`);
//! here: spilling under memory pressure, which commands read the disk,
//! expiry of spilled keys, the tier's budget, and restarts from the AOF
//! and the RDB file written while values were on disk.
//!
//! No fixed sleeps, no time bounds: a test waits for a state.

use crate::eqb;
use crate::harness::*;

const MB: u64 = 1 << 20;

/// A 4 KB value for key `i`, different for every key.
fn value(i: usize, len: usize) -> String {
    let seed = format!("{i:08}-");
    seed.repeat(len / seed.len() + 1)[..len].to_string()
}

/// Writes of every type: 4 KB strings, and hashes, lists, sets, sorted
/// sets and streams large enough to be worth spilling.
fn mixed_writes(strings: usize) -> Vec<Vec<Vec<u8>>> {
    let mut cmds = Vec::new();
    for i in 0..strings {
        cmds.push(argv(&["SET", &format!("s:{i}"), &value(i, 4096)]));
    }
    for i in 0..40 {
        let k = format!("h:{i}");
        for f in 0..30 {
            cmds.push(argv(&[
                "HSET",
                &k,
                &format!("f{f}"),
                &value(i * 100 + f, 80),
            ]));
        }
        let k = format!("l:{i}");
        for e in 0..30 {
            cmds.push(argv(&["RPUSH", &k, &value(i * 100 + e, 90)]));
        }
        let k = format!("set:{i}");
        for e in 0..30 {
            cmds.push(argv(&["SADD", &k, &value(i * 100 + e, 70)]));
        }
        let k = format!("z:{i}");
        for e in 0..30 {
            cmds.push(argv(&[
                "ZADD",
                &k,
                &format!("{}.5", e * 7 % 13),
                &value(i * 100 + e, 70),
            ]));
        }
        let k = format!("x:{i}");
        for e in 0..20 {
            cmds.push(argv(&[
                "XADD",
                &k,
                &format!("{}-1", e + 1),
                "f",
                &value(e, 60),
            ]));
        }
    }
    cmds
}

/// Reads of everything [`mixed_writes`] wrote, in an order whose replies
/// compare byte for byte.
fn mixed_reads(strings: usize) -> Vec<Vec<Vec<u8>>> {
    let mut cmds = Vec::new();
    for i in 0..strings {
        cmds.push(argv(&["GET", &format!("s:{i}")]));
    }
    for i in 0..40 {
        cmds.push(argv(&["HGET", &format!("h:{i}"), "f7"]));
        cmds.push(argv(&["HLEN", &format!("h:{i}")]));
        cmds.push(argv(&["LRANGE", &format!("l:{i}"), "0", "-1"]));
        cmds.push(argv(&["SCARD", &format!("set:{i}")]));
        cmds.push(argv(&[
            "SISMEMBER",
            &format!("set:{i}"),
            &value(i * 100 + 3, 70),
        ]));
        cmds.push(argv(&[
            "ZRANGE",
            &format!("z:{i}"),
            "0",
            "-1",
            "WITHSCORES",
        ]));
        cmds.push(argv(&["XRANGE", &format!("x:{i}"), "-", "+"]));
        for t in ["h", "l", "set", "z", "x"] {
            cmds.push(argv(&["TYPE", &format!("{t}:{i}")]));
        }
    }
    cmds
}

fn tier_stat(raw: &mut Raw, field: &str) -> u64 {
    info_u64(raw, "tiering", field)
}

/// Disk reads so far: parked loads and reads on the worker.
fn disk_reads(raw: &mut Raw) -> u64 {
    tier_stat(raw, "tiering_loads")
}

#[test]
fn values_beyond_maxmemory_go_to_disk_and_read_back_exact() {
    let redis = Server::redis();
    let probe = Server::keel();
    let startup = info_u64(&mut probe.raw(), "memory", "used_memory");
    drop(probe);
    // About 40 MB of values against 8 MB of room above the empty server.
    let max = (startup + 8 * MB).to_string();
    let keel = Server::keel_with(&[
        "--maxmemory",
        &max,
        "--maxmemory-policy",
        "allkeys-lru",
        "--tiering-dir",
        "tier",
    ]);
    let (mut k, mut r) = (keel.raw(), redis.raw());
    let strings = 8000;
    let writes = mixed_writes(strings);
    let kw = pipeline(&mut k, &writes);
    let rw = pipeline(&mut r, &writes);
    assert_eq!(kw, rw, "write replies");
    assert_eq!(info_u64(&mut k, "stats", "evicted_keys"), 0);
    let spilled = tier_stat(&mut k, "tiering_spilled_keys");
    assert!(spilled > strings as u64 / 2, "{spilled} keys on disk");
    let used = info_u64(&mut k, "memory", "used_memory");
    assert!(
        used <= startup + 8 * MB + 8 * MB / 10,
        "used_memory {used} against maxmemory {max}"
    );
    let reads = mixed_reads(strings);
    let kr = pipeline(&mut k, &reads);
    let rr = pipeline(&mut r, &reads);
    for ((c, a), b) in reads.iter().zip(&kr).zip(&rr) {
        assert!(
            a == b,
            "{} answered differently: keel {} redis {}",
            String::from_utf8_lossy(&c.join(&b' ')),
            escape(a),
            escape(b)
        );
    }
    assert!(disk_reads(&mut k) > 0);
    // The reads were pipelined: later requests' reads started while the
    // first one's was in flight.
    assert!(tier_stat(&mut k, "tiering_prefetched_requests") > 0);
    eqb!(k.cmd(&["DBSIZE"]), r.cmd(&["DBSIZE"]));
    assert_eq!(info_u64(&mut k, "stats", "evicted_keys"), 0);
}

#[test]
fn writes_and_metadata_answer_without_reading_the_disk() {
    let keel = Server::keel_with(&["--tiering-dir", "tier"]);
    let mut k = keel.raw();
    for i in 0..10 {
        k.cmd(&["SET", &format!("k{i}"), &value(i, 1000)]);
    }
    k.cmd(&["RPUSH", "list", "a", "b", "c"]);
    k.cmd(&["EXPIRE", "k0", "1000"]);
    eqb!(k.cmd(&["DEBUG", "SPILL"]), b":11\r\n");
    assert_eq!(tier_stat(&mut k, "tiering_spilled_keys"), 11);
    let before = disk_reads(&mut k);
    eqb!(k.cmd(&["EXISTS", "k1", "k2", "nokey"]), b":2\r\n");
    eqb!(k.cmd(&["TYPE", "list"]), b"+list\r\n");
    eqb!(
        k.cmd(&["OBJECT", "ENCODING", "list"]),
        b"$9\r\nquicklist\r\n"
    );
    eqb!(k.cmd(&["OBJECT", "ENCODING", "k1"]), b"$3\r\nraw\r\n");
    eqb!(k.cmd(&["TTL", "k0"]), b":1000\r\n");
    eqb!(k.cmd(&["SET", "k1", "new"]), b"+OK\r\n");
    eqb!(k.cmd(&["DEL", "k2", "k3"]), b":2\r\n");
    eqb!(k.cmd(&["UNLINK", "k4"]), b":1\r\n");
    eqb!(k.cmd(&["SETNX", "k5", "x"]), b":0\r\n");
    eqb!(k.cmd(&["RENAME", "k6", "k6b"]), b"+OK\r\n");
    eqb!(k.cmd(&["WATCH", "k7", "list"]), b"+OK\r\n");
    eqb!(k.cmd(&["UNWATCH"]), b"+OK\r\n");
    eqb!(k.cmd(&["MSETNX", "k9", "x", "other", "y"]), b":0\r\n");
    // EXEC checks whether a watched key still exists.
    eqb!(k.cmd(&["WATCH", "k7"]), b"+OK\r\n");
    eqb!(k.cmd(&["MULTI"]), b"+OK\r\n");
    eqb!(k.cmd(&["PING"]), b"+QUEUED\r\n");
    eqb!(k.cmd(&["EXEC"]), b"*1\r\n+PONG\r\n");
    // Arguments Redis refuses before it looks the key up.
    eqb!(
        k.cmd(&["GETBIT", "k8", "4294967296"]),
        b"-ERR bit offset is not an integer or out of range\r\n"
    );
    eqb!(
        k.cmd(&["SETBIT", "k8", "1", "2"]),
        b"-ERR bit is not an integer or out of range\r\n"
    );
    eqb!(
        k.cmd(&["SETBIT", "k8", "-1", "1"]),
        b"-ERR bit offset is not an integer or out of range\r\n"
    );
    assert_eq!(disk_reads(&mut k), before, "a command read the disk");
    // The overwritten and deleted keys' records are freed (k1, k2, k3, k4).
    assert_eq!(tier_stat(&mut k, "tiering_spilled_keys"), 7);
    // A read parks the connection for the disk, once per value.
    eqb!(k.cmd(&["GET", "k1"]), b"$3\r\nnew\r\n");
    let v7 = value(7, 1000);
    eqb!(
        k.cmd(&["GET", "k7"]),
        format!("${}\r\n{v7}\r\n", v7.len()).as_bytes()
    );
    eqb!(k.cmd(&["GET", "k6b"]), {
        let v = value(6, 1000);
        format!("${}\r\n{v}\r\n", v.len()).into_bytes()
    });
    eqb!(k.cmd(&["LPOP", "list"]), b"$1\r\na\r\n");
    assert_eq!(disk_reads(&mut k), before + 3);
    assert_eq!(tier_stat(&mut k, "tiering_inline_loads"), 0);
    // (k7, k6b and the list are back in memory.)
    assert_eq!(tier_stat(&mut k, "tiering_spilled_keys"), 4);
}

/// Commands whose key specs say "returns no user data" (`RO` without
/// `access`) but whose answers come from the value (a length, a member
/// test, a size) read it off the worker: their connections park, and no
/// read happens on a worker.
#[test]
fn counts_and_sizes_of_spilled_values_park_for_the_disk() {
    let redis = Server::redis();
    let keel = Server::keel_with(&["--tiering-dir", "tier"]);
    let (mut k, mut r) = (keel.raw(), redis.raw());
    let big: Vec<String> = (0..100).map(|i| value(i, 20)).collect();
    let big: Vec<&str> = big.iter().map(String::as_str).collect();
    let mut writes = vec![argv(&["SET", "s", &value(1, 300)])];
    for (cmd, key) in [("RPUSH", "l"), ("SADD", "st")] {
        let mut a = vec![cmd, key];
        a.extend(&big);
        writes.push(argv(&a));
    }
    let mut h = vec!["HSET", "h"];
    let mut z = vec!["ZADD", "z"];
    for (i, m) in big.iter().enumerate() {
        h.extend([*m, *m]);
        z.extend([["1", "2", "3"][i % 3], *m]);
    }
    writes.push(argv(&h));
    writes.push(argv(&z));
    writes.push(argv(&["XADD", "x", "1-1", "f", "v"]));
    assert_eq!(pipeline(&mut k, &writes), pipeline(&mut r, &writes));
    let member = big[7];
    let reads = [
        vec!["LLEN", "l"],
        vec!["HLEN", "h"],
        vec!["STRLEN", "s"],
        vec!["SCARD", "st"],
        vec!["ZCARD", "z"],
        vec!["XLEN", "x"],
        vec!["HSTRLEN", "h", member],
        vec!["HEXISTS", "h", member],
        vec!["SISMEMBER", "st", member],
        vec!["OBJECT", "REFCOUNT", "l"],
    ];
    for cmd in &reads {
        k.cmd(&["DEBUG", "SPILL"]);
        let parked = tier_stat(&mut k, "tiering_parked_requests");
        eqb!(k.cmd(cmd), r.cmd(cmd));
        assert_eq!(
            tier_stat(&mut k, "tiering_parked_requests"),
            parked + 1,
            "{cmd:?} did not park"
        );
    }
    k.cmd(&["DEBUG", "SPILL"]);
    let parked = tier_stat(&mut k, "tiering_parked_requests");
    let usage = k.cmd(&["MEMORY", "USAGE", "l"]);
    assert!(usage.starts_with(b":"), "{}", escape(&usage));
    assert_eq!(tier_stat(&mut k, "tiering_parked_requests"), parked + 1);
    assert_eq!(
        tier_stat(&mut k, "tiering_inline_loads"),
        0,
        "a worker read the disk"
    );
}

#[test]
fn the_hit_rate_counts_each_needed_value_once_where_it_was_first_looked_for() {
    let keel = Server::keel_with(&["--tiering-dir", "tier"]);
    let mut k = keel.raw();
    for i in 0..10 {
        k.cmd(&["SET", &format!("k{i}"), &value(i, 1000)]);
    }
    // Counted while any value is on disk: this one stays there.
    k.cmd(&["SET", "cold", &value(10, 1000)]);
    eqb!(k.cmd(&["DEBUG", "SPILL"]), b":11\r\n");
    let counts = |k: &mut Raw| {
        (
            tier_stat(k, "tiering_values_in_memory"),
            tier_stat(k, "tiering_values_on_disk"),
        )
    };
    assert_eq!(counts(&mut k), (0, 0));
    k.cmd(&["GET", "k0"]);
    assert_eq!(
        counts(&mut k),
        (0, 1),
        "read from disk (the run after the read counts nothing)"
    );
    k.cmd(&["GET", "k0"]);
    assert_eq!(counts(&mut k), (1, 1));
    // A pipeline: its later requests' reads start while the first waits;
    // each request is counted once all the same.
    let mut cmds: Vec<Vec<Vec<u8>>> = (1..10).map(|i| argv(&["GET", &format!("k{i}")])).collect();
    cmds.push(argv(&["GET", "k0"]));
    cmds.push(argv(&["GET", "nokey"]));
    cmds.push(argv(&["SET", "k0", "overwritten unread"]));
    pipeline(&mut k, &cmds);
    assert_eq!(counts(&mut k), (2, 10));
    k.cmd(&["MGET", "k1", "k2", "nokey"]);
    assert_eq!(counts(&mut k), (4, 10));
    let text = info(&mut k, "tiering");
    assert_eq!(
        info_field(&text, "tiering_hit_rate").as_deref(),
        Some("0.2857")
    );
}

/// Every key [`mixed_writes`] makes.
fn mixed_keys(strings: usize) -> Vec<String> {
    let mut keys: Vec<String> = (0..strings).map(|i| format!("s:{i}")).collect();
    for i in 0..40 {
        for t in ["h", "l", "set", "z", "x"] {
            keys.push(format!("{t}:{i}"));
        }
    }
    keys
}

#[test]
fn spilled_keys_dump_and_migrate_to_redis_exact() {
    let strings = 60;
    let keel = Server::keel_with(&["--tiering-dir", "tier"]);
    let reference = Server::redis();
    let target = Server::redis();
    let (mut k, mut r) = (keel.raw(), reference.raw());
    pipeline(&mut k, &mixed_writes(strings));
    pipeline(&mut r, &mixed_writes(strings));
    let reads = mixed_reads(strings);
    let expected = pipeline(&mut r, &reads);
    let keys = mixed_keys(strings);

    // DUMP of a value on disk: Redis's bytes (hash tables are written in
    // each server's own order: those are compared after the MIGRATE).
    k.cmd(&["DEBUG", "SPILL"]);
    let dumps: Vec<Vec<Vec<u8>>> = keys
        .iter()
        .filter(|key| !key.starts_with("h:") && !key.starts_with("set:"))
        .map(|key| argv(&["DUMP", key]))
        .collect();
    assert_eq!(pipeline(&mut k, &dumps), pipeline(&mut r, &dumps));

    // MIGRATE of one key on disk with COPY, then of every key on disk.
    k.cmd(&["DEBUG", "SPILL"]);
    let spilled = tier_stat(&mut k, "tiering_spilled_keys");
    assert!(spilled >= keys.len() as u64, "{spilled} keys on disk");
    let inline = tier_stat(&mut k, "tiering_inline_loads");
    let port = target.port.to_string();
    eqb!(
        k.cmd(&["MIGRATE", "127.0.0.1", &port, "h:3", "0", "5000", "COPY"]),
        b"+OK\r\n"
    );
    eqb!(k.cmd(&["EXISTS", "h:3"]), b":1\r\n");
    let mut migrate = vec![
        "MIGRATE",
        "127.0.0.1",
        port.as_str(),
        "",
        "0",
        "5000",
        "REPLACE",
        "KEYS",
    ];
    migrate.extend(keys.iter().map(String::as_str));
    eqb!(k.cmd(&migrate), b"+OK\r\n");
    eqb!(k.cmd(&["DBSIZE"]), b":0\r\n");
    assert_eq!(
        tier_stat(&mut k, "tiering_inline_loads"),
        inline,
        "a worker read the disk"
    );
    let mut t = target.raw();
    assert_eq!(pipeline(&mut t, &reads), expected);
}

#[test]
fn spilled_keys_expire_and_free_their_records() {
    let keel = Server::keel_with(&["--tiering-dir", "tier"]);
    let mut k = keel.raw();
    k.cmd(&["SET", "short", &value(1, 500), "PX", "50"]);
    k.cmd(&["SET", "long", &value(2, 500)]);
    eqb!(k.cmd(&["DEBUG", "SPILL"]), b":2\r\n");
    // Active expiry (the cron) or this lookup removes it; either frees
    // its record.
    wait_for("the spilled key to expire", || {
        match (
            k.cmd(&["EXISTS", "short"]),
            tier_stat(&mut k, "tiering_spilled_keys"),
        ) {
            (e, 1) if e == b":0\r\n" => Ok(()),
            (e, n) => Err(format!("EXISTS {} spilled {n}", escape(&e))),
        }
    });
    eqb!(k.cmd(&["GET", "short"]), b"$-1\r\n");
    assert_eq!(info_u64(&mut k, "stats", "expired_keys"), 1);
}

#[test]
fn a_full_tier_leaves_the_eviction_policy_to_decide() {
    let probe = Server::keel();
    let startup = info_u64(&mut probe.raw(), "memory", "used_memory");
    drop(probe);
    let max = (startup + 4 * MB).to_string();
    let keel = Server::keel_with(&[
        "--maxmemory",
        &max,
        "--tiering-dir",
        "tier",
        "--tiering-max-disk",
        "4mb",
    ]);
    let mut k = keel.raw();
    // noeviction: writes succeed while the tier has room, then fail as
    // without a tier.
    let writes: Vec<_> = (0..6000)
        .map(|i| argv(&["SET", &format!("k{i}"), &value(i, 4096)]))
        .collect();
    let replies = pipeline(&mut k, &writes);
    let oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n".to_vec();
    let first_oom = replies
        .iter()
        .position(|r| *r == oom)
        .expect("writes past the tier's budget are refused");
    assert!(first_oom > 1500, "only {first_oom} writes before OOM");
    assert!(replies[..first_oom].iter().all(|r| r == b"+OK\r\n"));
    let live = tier_stat(&mut k, "tiering_live_bytes");
    assert!(live <= 4 * MB, "{live} bytes on disk against a 4 MB budget");
    // Everything acknowledged reads back.
    let reads: Vec<_> = (0..first_oom)
        .map(|i| argv(&["GET", &format!("k{i}")]))
        .collect();
    for (i, r) in pipeline(&mut k, &reads).iter().enumerate() {
        let v = value(i, 4096);
        assert_eq!(*r, format!("${}\r\n{v}\r\n", v.len()).into_bytes(), "k{i}");
    }
    // allkeys-lru: writes go on, evicting keys in memory and on disk; a
    // key evicted from disk is deleted unread.
    eqb!(
        k.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        b"+OK\r\n"
    );
    let inline = tier_stat(&mut k, "tiering_inline_loads");
    let writes: Vec<_> = (6000..9000)
        .map(|i| argv(&["SET", &format!("k{i}"), &value(i, 4096)]))
        .collect();
    assert!(pipeline(&mut k, &writes).iter().all(|r| r == b"+OK\r\n"));
    assert!(info_u64(&mut k, "stats", "evicted_keys") > 0);
    assert_eq!(
        tier_stat(&mut k, "tiering_inline_loads"),
        inline,
        "eviction read values on disk"
    );
}

/// Sends SIGKILL to `s` and waits for it to go.
fn sigkill(s: Server) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(s.pid() as libc::pid_t, libc::SIGKILL);
    }
    drop(s);
}

#[test]
fn images_written_with_values_on_disk_restore_them() {
    let redis = Server::redis();
    let dir = std::env::temp_dir().join(format!("keel-it-tier-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    let args = |aof: &str| {
        vec![
            "--dir".to_string(),
            d.clone(),
            "--save".to_string(),
            String::new(),
            "--appendonly".to_string(),
            aof.to_string(),
            "--enable-debug-command".to_string(),
            "yes".to_string(),
            "--tiering-dir".to_string(),
            "tier".to_string(),
        ]
    };
    let start = |aof: &str| {
        let a = args(aof);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        Server::keel_raw(&a)
    };
    let strings = 300;
    let writes = mixed_writes(strings);
    let reads = mixed_reads(strings);
    let mut r = redis.raw();
    pipeline(&mut r, &writes);
    let expected = pipeline(&mut r, &reads);

    // The AOF: its base rewritten while everything is on disk, then more
    // writes on top, spilled too.
    let keel = start("yes");
    let mut k = keel.raw();
    let half = writes.len() / 2;
    pipeline(&mut k, &writes[..half]);
    k.cmd(&["DEBUG", "SPILL"]);
    eqb!(
        k.cmd(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_for("the rewrite to finish", || {
        match info_u64(&mut k, "persistence", "aof_rewrite_in_progress") {
            0 => Ok(()),
            n => Err(format!("in progress: {n}")),
        }
    });
    pipeline(&mut k, &writes[half..]);
    k.cmd(&["DEBUG", "SPILL"]);
    // The RDB file, written while everything is on disk.
    eqb!(k.cmd(&["SAVE"]), b"+OK\r\n");
    sigkill(keel);

    let keel = start("yes");
    let mut k = keel.raw();
    assert_eq!(pipeline(&mut k, &reads), expected, "from the AOF");
    drop(k);
    sigkill(keel);

    let keel = start("no");
    let mut k = keel.raw();
    assert_eq!(pipeline(&mut k, &reads), expected, "from the RDB file");
    drop(k);
    drop(keel);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compaction_keeps_disk_use_near_live_data() {
    let keel = Server::keel_with(&["--tiering-dir", "tier"]);
    let mut k = keel.raw();
    let size = 100_000;
    let keys = 1200;
    let write = |k: &mut Raw, round: usize, every: usize| {
        let cmds: Vec<_> = (0..keys)
            .filter(|i| i % every == 0)
            .map(|i| argv(&["SET", &format!("k{i}"), &value(i * 7 + round, size)]))
            .collect();
        for r in pipeline(k, &cmds) {
            eqb!(r, b"+OK\r\n");
        }
        k.cmd(&["DEBUG", "SPILL"]);
    };
    // 120 MB on disk, then three of every four keys overwritten: the
    // first segments keep a quarter of their records live.
    write(&mut k, 0, 1);
    let overwrite: Vec<_> = (0..keys)
        .filter(|i| i % 4 != 0)
        .map(|i| argv(&["SET", &format!("k{i}"), &value(i * 7 + 1, size)]))
        .collect();
    pipeline(&mut k, &overwrite);
    k.cmd(&["DEBUG", "SPILL"]);
    wait_for("compaction to bring disk use under 1.5x live bytes", || {
        let (disk, live, done) = (
            tier_stat(&mut k, "tiering_disk_bytes"),
            tier_stat(&mut k, "tiering_live_bytes"),
            tier_stat(&mut k, "tiering_compacted_segments"),
        );
        // (The head segment is never compacted: up to one segment more.)
        if done >= 1 && disk as f64 <= 1.5 * live as f64 + 64.0 * MB as f64 {
            Ok(())
        } else {
            Err(format!("disk {disk} live {live} compacted segments {done}"))
        }
    });
    // Every value reads back, moved or not.
    let reads: Vec<_> = (0..keys)
        .map(|i| argv(&["GET", &format!("k{i}")]))
        .collect();
    for (i, r) in pipeline(&mut k, &reads).iter().enumerate() {
        let round = usize::from(i % 4 != 0);
        let v = value(i * 7 + round, size);
        assert!(
            *r == format!("${}\r\n{v}\r\n", v.len()).into_bytes(),
            "k{i}"
        );
    }
}

/// Writer `i`: overwrites its keys `w{i}:0..KEYS_PER_WRITER` in turn with
/// values that name the write, until the server dies. Returns, per key,
/// the last acknowledged write and the one in flight when it died.
fn spilling_writer(port: u16, i: usize) -> Vec<(Option<usize>, Option<usize>)> {
    let mut raw = Raw::connect(port);
    let mut keys = vec![(None, None); KEYS_PER_WRITER];
    for n in 0.. {
        let j = n % KEYS_PER_WRITER;
        keys[j].1 = Some(n);
        match raw.try_cmd(&["SET", &format!("w{i}:{j}"), &value(i * 1_000_000 + n, 2048)]) {
            Ok(r) if r == b"+OK\r\n" => keys[j].0 = Some(n),
            Ok(r) => panic!("SET answered {}", escape(&r)),
            Err(_) => break,
        }
    }
    keys
}

const KEYS_PER_WRITER: usize = 3000;

#[test]
fn acknowledged_writes_survive_sigkill_during_spilling_and_compaction() {
    let probe = Server::keel();
    let startup = info_u64(&mut probe.raw(), "memory", "used_memory");
    drop(probe);
    let dir = std::env::temp_dir().join(format!("keel-it-tier-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    // (The log's own buffers take a few MB beside the dataset.)
    let max = (startup + 16 * MB).to_string();
    let start = || {
        Server::keel_raw(&[
            "--dir",
            &d,
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--maxmemory",
            &max,
            "--maxmemory-policy",
            "allkeys-lru",
            "--tiering-dir",
            "tier",
        ])
    };
    let keel = start();
    let port = keel.port;
    let writers: Vec<_> = (0..4)
        .map(|i| std::thread::spawn(move || spilling_writer(port, i)))
        .collect();
    // Killed once values are being spilled and compaction has moved some.
    let mut admin = keel.raw();
    wait_for("spilling and a compaction", || {
        assert_eq!(info_u64(&mut admin, "stats", "evicted_keys"), 0);
        let spills = tier_stat(&mut admin, "tiering_spills");
        let compacted = tier_stat(&mut admin, "tiering_compacted_segments");
        if spills > 10_000 && compacted >= 1 {
            Ok(())
        } else {
            Err(format!("spills {spills}, compacted segments {compacted}"))
        }
    });
    sigkill(keel);
    let written: Vec<_> = writers.into_iter().map(|h| h.join().unwrap()).collect();

    let keel = start();
    let mut k = keel.raw();
    for (i, keys) in written.iter().enumerate() {
        let reads: Vec<_> = (0..KEYS_PER_WRITER)
            .map(|j| argv(&["GET", &format!("w{i}:{j}")]))
            .collect();
        for (j, (r, (acked, in_flight))) in pipeline(&mut k, &reads).iter().zip(keys).enumerate() {
            let is = |n: &Option<usize>| {
                n.is_some_and(|n| {
                    let v = value(i * 1_000_000 + n, 2048);
                    *r == format!("${}\r\n{v}\r\n", v.len()).into_bytes()
                })
            };
            // The last acknowledged write, or the one the kill caught
            // (applied or not); a key never acknowledged may be absent.
            assert!(
                is(acked) || is(in_flight) || (acked.is_none() && *r == b"$-1\r\n"),
                "w{i}:{j}: acknowledged {acked:?}, in flight {in_flight:?}, found {}",
                escape(&r[..r.len().min(40)])
            );
        }
    }
    drop(k);
    drop(keel);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_value_read_back_goes_to_disk_again_without_a_write_unless_it_changed() {
    let keel = Server::keel_with(&["--tiering-dir", "tier"]);
    let mut k = keel.raw();
    k.cmd(&["SET", "read", &value(1, 1000)]);
    k.cmd(&["SET", "changed", &value(2, 1000)]);
    k.cmd(&["SET", "same-bytes", "abc"]);
    eqb!(k.cmd(&["DEBUG", "SPILL"]), b":3\r\n");
    let written = tier_stat(&mut k, "tiering_spilled_bytes");
    k.cmd(&["GET", "read"]);
    k.cmd(&["APPEND", "changed", "!"]);
    // Same content, another encoding: it must be written again (OBJECT
    // ENCODING answers from the record's stub).
    eqb!(k.cmd(&["SETRANGE", "same-bytes", "1", "b"]), b":3\r\n");
    eqb!(k.cmd(&["DEBUG", "SPILL"]), b":3\r\n");
    assert_eq!(tier_stat(&mut k, "tiering_reused_copies"), 1);
    let rewritten = tier_stat(&mut k, "tiering_spilled_bytes") - written;
    assert!(
        (1000..2200).contains(&rewritten),
        "{rewritten} bytes written for the two changed values"
    );
    let v1 = value(1, 1000);
    eqb!(
        k.cmd(&["GET", "read"]),
        format!("${}\r\n{v1}\r\n", v1.len()).as_bytes()
    );
    let v2 = value(2, 1000) + "!";
    eqb!(
        k.cmd(&["GET", "changed"]),
        format!("${}\r\n{v2}\r\n", v2.len()).as_bytes()
    );
    eqb!(
        k.cmd(&["OBJECT", "ENCODING", "same-bytes"]),
        b"$3\r\nraw\r\n"
    );
    eqb!(k.cmd(&["GET", "same-bytes"]), b"$3\r\nabc\r\n");
}

#[test]
fn a_tiered_replica_syncs_a_dataset_larger_than_its_memory() {
    let probe = Server::keel();
    let startup = info_u64(&mut probe.raw(), "memory", "used_memory");
    drop(probe);
    // About 40 MB of values against 8 MB of room on both sides.
    let max = (startup + 8 * MB).to_string();
    let tiered = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "--maxmemory",
            max.as_str(),
            "--maxmemory-policy",
            "allkeys-lru",
            "--tiering-dir",
            "tier",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let primary_args = tiered(&[]);
    let primary = Server::keel_with(&primary_args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut p = primary.raw();
    let strings = 8000;
    pipeline(&mut p, &mixed_writes(strings));
    assert!(tier_stat(&mut p, "tiering_spilled_keys") > strings as u64 / 2);
    let reads = mixed_reads(strings);
    let expected = pipeline(&mut p, &reads);

    // The replica keeps an AOF too: its log starts again from the image.
    let dir = std::env::temp_dir().join(format!("keel-it-tier-repl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    let replica_args = tiered(&["--dir", &d, "--save", "", "--appendonly", "yes"]);
    let replica_args: Vec<&str> = replica_args.iter().map(String::as_str).collect();
    let replica = Server::keel_raw(&replica_args);
    let mut r = replica.raw();
    let port = primary.port.to_string();
    eqb!(r.cmd(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
    let offset = info_u64(&mut p, "replication", "master_repl_offset");
    wait_for("the replica to sync", || {
        let t = String::from_utf8_lossy(&r.cmd(&["INFO", "replication"])).into_owned();
        let up = info_field(&t, "master_link_status").as_deref() == Some("up");
        let at = info_field(&t, "master_repl_offset").and_then(|v| v.parse::<u64>().ok());
        if up && at >= Some(offset) {
            Ok(())
        } else {
            Err(t)
        }
    });
    // The image (about 40 MB) never sat in the replica's memory.
    let peak = info_u64(&mut r, "memory", "used_memory_peak");
    assert!(
        peak < startup + 20 * MB,
        "used_memory_peak {peak} (maxmemory {max})"
    );
    assert!(tier_stat(&mut r, "tiering_spilled_keys") > strings as u64 / 2);
    assert_eq!(pipeline(&mut r, &reads), expected, "read on the replica");
    assert_eq!(info_u64(&mut r, "stats", "evicted_keys"), 0);

    // Its log, restarted from the image, restores it.
    drop(r);
    sigkill(replica);
    let replica = Server::keel_raw(&replica_args);
    let mut r = replica.raw();
    eqb!(r.cmd(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    assert_eq!(pipeline(&mut r, &reads), expected, "from the replica's AOF");
    drop(r);
    drop(replica);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_restart_larger_than_memory_stays_within_maxmemory_resident() {
    // Many small keys (node and value per key) leave the allocator's pages
    // part-used: counted memory at maxmemory was resident memory well past
    // it. The load counts what is resident.
    let dir = std::env::temp_dir().join(format!("keel-it-tier-rss-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    let probe = Server::keel_raw(&["--dir", &d, "--save", ""]);
    let startup = info_u64(&mut probe.raw(), "memory", "used_memory");
    drop(probe);
    let max = (startup + 40 * MB).to_string();
    let args = [
        "--dir",
        &d,
        "--save",
        "",
        "--maxmemory",
        &max,
        "--maxmemory-policy",
        "allkeys-lru",
        "--tiering-dir",
        "tier",
    ];
    let keel = Server::keel_raw(&args);
    let mut k = keel.raw();
    // About 120 MB of 400-byte values under 40 MB of room (the keys
    // themselves, about 18 MB, stay in memory).
    let keys = 300_000;
    for chunk in (0..keys).collect::<Vec<_>>().chunks(1000) {
        let writes: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|&i| {
                vec![
                    b"SET".to_vec(),
                    format!("k:{i}").into_bytes(),
                    value(i, 400).into_bytes(),
                ]
            })
            .collect();
        pipeline(&mut k, &writes);
    }
    assert!(tier_stat(&mut k, "tiering_spilled_keys") > keys as u64 / 2);
    assert_eq!(info_u64(&mut k, "stats", "evicted_keys"), 0);
    // In the background: the image reads each spilled value from the
    // tier, which takes longer than a reply is waited for.
    eqb!(k.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    wait_for("the snapshot to finish", || {
        let text = info(&mut k, "persistence");
        match info_field(&text, "rdb_bgsave_in_progress").as_deref() {
            Some("0") => Ok(()),
            _ => Err(text),
        }
    });
    assert_eq!(
        info_field(&info(&mut k, "persistence"), "rdb_last_bgsave_status").as_deref(),
        Some("ok")
    );
    drop(k);
    drop(keel);

    let keel = Server::keel_raw(&args);
    let mut k = keel.raw();
    let rss = keel.rss();
    let used = info_u64(&mut k, "memory", "used_memory");
    let maxmemory = info_u64(&mut k, "memory", "maxmemory");
    eqb!(k.cmd(&["DBSIZE"]), format!(":{keys}\r\n").as_bytes());
    // What the process holds beyond what it counts is its binary and the
    // empty server's own: a few megabytes, not the allocator's slack on
    // 300,000 keys.
    let empty = Server::keel_raw(&["--dir", &d, "--save", "", "--dbfilename", "none.rdb"]);
    let empty_rss = empty.rss();
    drop(empty);
    assert!(
        rss <= maxmemory + empty_rss,
        "VmRSS {rss} after loading, maxmemory {maxmemory}, an empty server's VmRSS {empty_rss} (used_memory {used})"
    );
    let reads: Vec<Vec<Vec<u8>>> = [0, 1, keys / 2, keys - 1]
        .iter()
        .map(|&i| vec![b"GET".to_vec(), format!("k:{i}").into_bytes()])
        .collect();
    let got = pipeline(&mut k, &reads);
    for (r, i) in got.iter().zip([0, 1, keys / 2, keys - 1]) {
        let v = value(i, 400);
        assert_eq!(
            r,
            &format!("${}\r\n{v}\r\n", v.len()).into_bytes(),
            "key k:{i}"
        );
    }
    drop(k);
    drop(keel);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An image and an AOF base written while spilled keys are overwritten
/// and deleted: the snapshot pins their records instead of reading them
/// while it copies a slot, and reads them later, many at once; what it
/// wrote is still the dataset as of its start. `preamble`:
/// `aof-use-rdb-preamble` (no: the base is commands, rebuilt from the
/// values read back).
fn images_hold_spilled_values_changed_while_they_are_written(preamble: &str) {
    let dir = std::env::temp_dir().join(format!(
        "keel-it-tier-pit-{preamble}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    let args = |aof: &'static str| {
        vec![
            "--dir".to_string(),
            d.clone(),
            "--save".to_string(),
            String::new(),
            "--appendonly".to_string(),
            aof.to_string(),
            "--aof-use-rdb-preamble".to_string(),
            preamble.to_string(),
            "--enable-debug-command".to_string(),
            "yes".to_string(),
            "--tiering-dir".to_string(),
            "tier".to_string(),
        ]
    };
    let start = |aof: &'static str| {
        let a = args(aof);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        Server::keel_raw(&a)
    };
    let strings = 300;
    let reads = mixed_reads(strings);
    let keel = start("yes");
    let mut k = keel.raw();
    pipeline(&mut k, &mixed_writes(strings));
    let before = pipeline(&mut k, &reads);
    k.cmd(&["DEBUG", "SPILL"]);
    let spilled = tier_stat(&mut k, "tiering_spilled_keys");
    assert!(spilled >= strings as u64 + 200, "{spilled} keys on disk");

    // Every string overwritten and every aggregate deleted while the
    // image is written (slowly: rdb-key-save-delay), some of them before
    // the snapshot reached their slot.
    let changes = |tag: &str| -> Vec<Vec<Vec<u8>>> {
        let mut cmds: Vec<Vec<Vec<u8>>> = (0..strings)
            .map(|i| argv(&["SET", &format!("s:{i}"), &format!("{tag}-{i}")]))
            .collect();
        for i in 0..40 {
            for t in ["h", "l", "set", "z", "x"] {
                cmds.push(argv(&["DEL", &format!("{t}:{i}")]));
            }
        }
        cmds
    };
    // No worker reads the disk for an image: the records of the slots the
    // changes take first are read by the image's writer (more than 64
    // slots waiting for it included).
    let while_writing = |k: &mut Raw, start: &str, tag: &str, field: &str| {
        let inline_before = tier_stat(k, "tiering_inline_loads");
        eqb!(
            k.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "2000"]),
            b"+OK\r\n"
        );
        let mut cmds = vec![argv(&[start])];
        cmds.extend(changes(tag));
        cmds.push(argv(&["INFO", "persistence"]));
        let replies = pipeline(k, &cmds);
        let text = String::from_utf8_lossy(replies.last().unwrap()).into_owned();
        assert_eq!(
            info_field(&text, field).as_deref(),
            Some("1"),
            "still writing after the changes"
        );
        eqb!(
            k.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]),
            b"+OK\r\n"
        );
        wait_for("the image to be written", || {
            let text = info(k, "persistence");
            match info_field(&text, field).as_deref() {
                Some("0") => Ok(()),
                _ => Err(text),
            }
        });
        assert_eq!(
            tier_stat(k, "tiering_inline_loads"),
            inline_before,
            "values on disk read inline while {start} ran"
        );
    };
    while_writing(&mut k, "BGSAVE", "changed", "rdb_bgsave_in_progress");
    assert_eq!(
        info_field(&info(&mut k, "persistence"), "rdb_last_bgsave_status").as_deref(),
        Some("ok")
    );
    assert!(tier_stat(&mut k, "tiering_snapshot_reads") > 0);

    // The AOF base, written while the same happens again to what is on
    // disk now.
    k.cmd(&["DEBUG", "SPILL"]);
    let reads_before_rewrite = tier_stat(&mut k, "tiering_snapshot_reads");
    while_writing(
        &mut k,
        "BGREWRITEAOF",
        "rewritten",
        "aof_rewrite_in_progress",
    );
    assert_eq!(
        info_field(&info(&mut k, "persistence"), "aof_last_bgrewrite_status").as_deref(),
        Some("ok")
    );
    assert!(tier_stat(&mut k, "tiering_snapshot_reads") > reads_before_rewrite);
    let after = pipeline(&mut k, &reads);
    assert_ne!(after, before);
    drop(k);
    sigkill(keel);

    let keel = start("yes");
    let mut k = keel.raw();
    assert_eq!(pipeline(&mut k, &reads), after, "from the AOF");
    drop(k);
    sigkill(keel);
    let keel = start("no");
    let mut k = keel.raw();
    assert_eq!(
        pipeline(&mut k, &reads),
        before,
        "from the RDB file: the dataset as of BGSAVE"
    );
    drop(k);
    drop(keel);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn images_hold_spilled_values_changed_while_they_are_written_rdb_preamble() {
    images_hold_spilled_values_changed_while_they_are_written("yes");
}

#[test]
fn images_hold_spilled_values_changed_while_they_are_written_command_base() {
    images_hold_spilled_values_changed_while_they_are_written("no");
}

/// The payload of a bulk reply.
fn bulk_payload(reply: &[u8]) -> Vec<u8> {
    let header = reply
        .iter()
        .position(|&b| b == b'\n')
        .expect("a bulk reply")
        + 1;
    reply[header..reply.len() - 2].to_vec()
}

#[test]
fn reading_cold_keys_once_leaves_the_values_read_recently_in_memory() {
    let keel = Server::keel_with(&["--maxmemory-policy", "allkeys-lru", "--tiering-dir", "tier"]);
    let mut k = keel.raw();
    // Cold keys, unused for a day (RESTORE ... IDLETIME), and hot ones;
    // then everything on disk.
    k.cmd(&["SET", "template", &value(0, 4000)]);
    let payload = bulk_payload(&k.cmd(&["DUMP", "template"]));
    k.cmd(&["DEL", "template"]);
    // `n` keys `prefix:i` holding the template, unused for `idle` seconds.
    let restore = |k: &mut Raw, prefix: &str, n: usize, idle: &str| {
        let cmds: Vec<Vec<Vec<u8>>> = (0..n)
            .map(|i| {
                let mut c = argv(&["RESTORE", &format!("{prefix}:{i}"), "0"]);
                c.push(payload.clone());
                c.extend(argv(&["IDLETIME", idle]));
                c
            })
            .collect();
        assert!(pipeline(k, &cmds).iter().all(|r| r == b"+OK\r\n"));
    };
    let cold = 3000;
    restore(&mut k, "cold", cold, "86400");
    let hot = 200;
    let sets: Vec<Vec<Vec<u8>>> = (0..hot)
        .map(|i| argv(&["SET", &format!("hot:{i}"), &value(i, 4000)]))
        .collect();
    pipeline(&mut k, &sets);
    eqb!(
        k.cmd(&["DEBUG", "SPILL"]),
        format!(":{}\r\n", cold + hot).as_bytes()
    );
    // Room for about 500 values; values unused for a while (between the
    // hot keys and the cold ones) fill it, and spilling chooses among
    // them: what it chooses sets the bar for admission.
    let used = info_u64(&mut k, "memory", "used_memory");
    let max = (used + 2 * MB).to_string();
    eqb!(k.cmd(&["CONFIG", "SET", "maxmemory", &max]), b"+OK\r\n");
    restore(&mut k, "fill", 1000, "1000");
    let on_disk = |k: &mut Raw| tier_stat(k, "tiering_values_on_disk");
    // In pipelines of 10: replies waiting to be sent count in memory.
    let gets = |k: &mut Raw, prefix: &str, n: usize| -> Vec<Vec<u8>> {
        let cmds: Vec<Vec<Vec<u8>>> = (0..n)
            .map(|i| argv(&["GET", &format!("{prefix}:{i}")]))
            .collect();
        cmds.chunks(10).flat_map(|c| pipeline(k, c)).collect()
    };
    // The hot keys read until a whole pass finds them in memory (a value
    // read back for a key unused longer than what memory holds is
    // admitted on its next read).
    let mut passes = 0;
    loop {
        let before = on_disk(&mut k);
        gets(&mut k, "hot", hot);
        passes += 1;
        if on_disk(&mut k) == before {
            break;
        }
        assert!(
            passes < 50,
            "hot keys still read from disk after {passes} passes"
        );
    }
    // Every cold key read once: 12 MB through 2 MB of room.
    let loads = tier_stat(&mut k, "tiering_loads");
    let replies = gets(&mut k, "cold", cold);
    let want = format!("$4000\r\n{}\r\n", value(0, 4000));
    assert!(replies.iter().all(|r| r == want.as_bytes()));
    // (A value may be spilled again before its request ran, and read
    // twice.)
    assert!(tier_stat(&mut k, "tiering_loads") - loads >= cold as u64);
    let probation = tier_stat(&mut k, "tiering_probation_loads");
    assert!(
        probation >= cold as u64 * 9 / 10,
        "{probation} values on probation"
    );
    // The hot keys stayed in memory.
    let before = on_disk(&mut k);
    let replies = gets(&mut k, "hot", hot);
    for (i, r) in replies.iter().enumerate() {
        let v = value(i, 4000);
        assert_eq!(r, format!("$4000\r\n{v}\r\n").as_bytes());
    }
    let reread = on_disk(&mut k) - before;
    assert!(
        reread <= hot as u64 / 10,
        "{reread} of {hot} hot keys were read from disk again after the scan"
    );
    assert_eq!(info_u64(&mut k, "stats", "evicted_keys"), 0);
}
