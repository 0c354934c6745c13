//! Hash-field expiry on the clock (Redis 7.4's HEXPIRE family): a field
//! past its TTL read as gone, deleted when a command names it (lazy) or
//! by the cron (active), each deletion logged as an `HDEL` and published
//! as `hexpired`; field TTLs through the AOF, an RDB restart and a
//! SIGKILL. The replies themselves are compared with Redis 7.4.1 in
//! `redis74.rs`; replication is in `replication.rs`.

use std::time::Duration;

use crate::eqb;
use crate::harness::*;

fn keel74(extra: &[&str]) -> Server {
    let mut args = vec!["--redis-version", "7.4.1"];
    args.extend_from_slice(extra);
    Server::keel_with(&args)
}

/// Waits until `field` of `key` reads as past its TTL: HSCAN (which
/// deletes nothing) no longer returns it. (HPTTL already answers -2 in the
/// millisecond the TTL is reached, reads only after it: Redis's two
/// checks.)
fn wait_field_expired(c: &mut Raw, key: &str, field: &str) {
    wait_for(&format!("{key}.{field} past its TTL"), || {
        let reply = c.cmd(&["HSCAN", key, "0", "COUNT", "1000"]);
        let listed = match parse(&reply) {
            resp::Value::Array(v) if v.len() == 2 => match &v[1] {
                resp::Value::Array(items) => items
                    .iter()
                    .step_by(2)
                    .map(|f| match f {
                        resp::Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                        other => panic!("HSCAN field: {other:?}"),
                    })
                    .collect::<Vec<String>>(),
                other => panic!("HSCAN items: {other:?}"),
            },
            other => panic!("HSCAN: {other:?}"),
        };
        if listed.iter().any(|f| f == field) {
            Err(escape(&reply))
        } else {
            Ok(())
        }
    })
}

fn stat(c: &mut Raw, name: &str) -> String {
    info_field(&info(c, "stats"), name).unwrap_or_else(|| panic!("no {name} in INFO stats"))
}

/// The incremental AOF files of the server in `dir`, concatenated.
fn incremental_log(dir: &std::path::Path) -> String {
    let mut text = String::new();
    let logdir = dir.join("appendonlydir");
    let mut files: Vec<_> = std::fs::read_dir(&logdir)
        .unwrap_or_else(|e| panic!("{}: {e}", logdir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .collect();
    files.sort();
    for f in files {
        text.push_str(&String::from_utf8_lossy(&std::fs::read(f).unwrap()));
    }
    text
}

#[test]
fn a_field_past_its_ttl_is_deleted_when_a_command_names_it() {
    let dir = scratch_dir("field-lazy");
    let d = dir.to_string_lossy().into_owned();
    let s = keel74(&[
        "--dir",
        &d,
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let mut c = s.raw();
    let mut sub = s.raw();
    eqb!(
        c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]),
        b"+OK\r\n"
    );
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    // Only commands delete here.
    eqb!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), b"+OK\r\n");
    eqb!(
        c.cmd(&["HSET", "h", "a", "1", "b", "2", "c", "3"]),
        b":3\r\n"
    );
    eqb!(
        c.cmd(&["HPEXPIRE", "h", "1", "FIELDS", "2", "a", "b"]),
        b"*2\r\n:1\r\n:1\r\n"
    );
    wait_field_expired(&mut c, "h", "a");
    wait_field_expired(&mut c, "h", "b");
    // Stored until deleted: HLEN counts them, whole-hash reads skip them.
    eqb!(c.cmd(&["HLEN", "h"]), b":3\r\n");
    eqb!(c.cmd(&["HGETALL", "h"]), b"*2\r\n$1\r\nc\r\n$1\r\n3\r\n");
    eqb!(c.cmd(&["HKEYS", "h"]), b"*1\r\n$1\r\nc\r\n");
    eqb!(
        c.cmd(&["HSCAN", "h", "0"]),
        b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"
    );
    eqb!(c.cmd(&["HLEN", "h"]), b":3\r\n");
    // HMGET names them: both deleted, one event.
    eqb!(
        c.cmd(&["HMGET", "h", "a", "b", "c"]),
        b"*3\r\n$-1\r\n$-1\r\n$1\r\n3\r\n"
    );
    eqb!(c.cmd(&["HLEN", "h"]), b":1\r\n");
    assert_eq!(stat(&mut c, "expired_subkeys"), "2");
    // The last field: the key goes with it.
    eqb!(
        c.cmd(&["HPEXPIRE", "h", "1", "FIELDS", "1", "c"]),
        b"*1\r\n:1\r\n"
    );
    wait_field_expired(&mut c, "h", "c");
    eqb!(c.cmd(&["HGET", "h", "c"]), b"$-1\r\n");
    eqb!(c.cmd(&["EXISTS", "h"]), b":0\r\n");
    let got = read_events(&mut sub, 6);
    let want: Vec<(String, String)> = [
        ("hset", "h"),
        ("hexpire", "h"),
        ("hexpired", "h"),
        ("hexpire", "h"),
        ("hexpired", "h"),
        ("del", "h"),
    ]
    .iter()
    .map(|(e, k)| (e.to_string(), k.to_string()))
    .collect();
    assert_eq!(got, want);
    sub.expect_silence(Duration::from_millis(100));
    // Logged: the TTLs as absolute HPEXPIREATs, each deletion as an HDEL.
    let log = incremental_log(&dir);
    for field in ["a", "b", "c"] {
        let hdel = format!("*3\r\n$4\r\nHDEL\r\n$1\r\nh\r\n$1\r\n{field}\r\n");
        assert!(log.contains(&hdel), "no HDEL of {field} in the log:\n{log}");
    }
    assert_eq!(log.matches("HPEXPIREAT").count(), 2, "{log}");
}

#[test]
fn active_expiry_deletes_fields_nobody_reads() {
    let s = keel74(&[]);
    let mut c = s.raw();
    eqb!(c.cmd(&["HSET", "keep", "a", "1", "b", "2"]), b":2\r\n");
    eqb!(
        c.cmd(&["HPEXPIRE", "keep", "1", "FIELDS", "1", "a"]),
        b"*1\r\n:1\r\n"
    );
    eqb!(c.cmd(&["HSET", "gone", "x", "1"]), b":1\r\n");
    eqb!(
        c.cmd(&["HPEXPIRE", "gone", "1", "FIELDS", "1", "x"]),
        b"*1\r\n:1\r\n"
    );
    eqb!(c.cmd(&["HSET", "later", "y", "1"]), b":1\r\n");
    eqb!(
        c.cmd(&["HEXPIRE", "later", "1000", "FIELDS", "1", "y"]),
        b"*1\r\n:1\r\n"
    );
    // HLEN counts a field until it is deleted: it changes only when the
    // cron deletes.
    wait_for("the cron to delete the expired fields", || {
        let keep = c.cmd(&["HLEN", "keep"]);
        let gone = c.cmd(&["EXISTS", "gone"]);
        if keep == b":1\r\n" && gone == b":0\r\n" {
            Ok(())
        } else {
            Err(format!(
                "HLEN keep {}, EXISTS gone {}",
                escape(&keep),
                escape(&gone)
            ))
        }
    });
    assert_eq!(stat(&mut c, "expired_subkeys"), "2");
    eqb!(c.cmd(&["HGETALL", "keep"]), b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n");
    // Only `later` still has a field TTL.
    let keyspace = info(&mut c, "keyspace");
    assert!(
        keyspace.contains("db0:keys=2,expires=0,avg_ttl=0,subexpiry=1"),
        "{keyspace}"
    );
}

#[test]
fn field_ttls_survive_sigkill_rdb_restart_and_log_rewrite() {
    let dir = scratch_dir("field-ttl");
    let d = dir.to_string_lossy().into_owned();
    let far = "4102444800000";
    let start = |extra: &[&str]| {
        let mut args = vec!["--dir", d.as_str(), "--appendfsync", "always"];
        args.extend_from_slice(extra);
        keel74(&args)
    };
    let s = start(&["--appendonly", "yes"]);
    let mut c = s.raw();
    c.cmd(&["HSET", "small", "a", "1", "b", "2"]);
    c.cmd(&["HPEXPIREAT", "small", far, "FIELDS", "1", "a"]);
    let big: Vec<String> = (0..300).map(|i| format!("f{i}")).collect();
    let mut hset = vec!["HSET".to_string(), "big".to_string()];
    for f in &big {
        hset.push(f.clone());
        hset.push("v".repeat(80));
    }
    c.cmd(&hset.iter().map(String::as_str).collect::<Vec<_>>());
    c.cmd(&["HPEXPIREAT", "big", far, "FIELDS", "2", "f7", "f299"]);
    c.cmd(&["HPEXPIREAT", "big", "4102444900000", "FIELDS", "1", "f8"]);
    let check = |c: &mut Raw, when: &str| {
        let small = c.cmd(&["HPEXPIRETIME", "small", "FIELDS", "2", "a", "b"]);
        assert_eq!(
            escape(&small),
            escape(b"*2\r\n:4102444800000\r\n:-1\r\n"),
            "{when}"
        );
        let big = c.cmd(&[
            "HPEXPIRETIME",
            "big",
            "FIELDS",
            "4",
            "f7",
            "f299",
            "f8",
            "f0",
        ]);
        assert_eq!(
            escape(&big),
            escape(b"*4\r\n:4102444800000\r\n:4102444800000\r\n:4102444900000\r\n:-1\r\n"),
            "{when}"
        );
        eqb!(
            c.cmd(&["OBJECT", "ENCODING", "small"]),
            b"$10\r\nlistpackex\r\n"
        );
        eqb!(
            c.cmd(&["OBJECT", "ENCODING", "big"]),
            b"$9\r\nhashtable\r\n"
        );
        eqb!(c.cmd(&["HLEN", "big"]), b":300\r\n");
    };
    check(&mut c, "before any restart");
    // SIGKILL: the log replays the HPEXPIREATs.
    // SAFETY: kill(2) on the pid of the child the harness spawned.
    unsafe {
        libc::kill(s.pid() as libc::pid_t, libc::SIGKILL);
    }
    drop(s);
    let s = start(&["--appendonly", "yes"]);
    let mut c = s.raw();
    check(&mut c, "after SIGKILL, from the log");
    // A rewrite writes the TTLs into the base (an RDB preamble).
    eqb!(
        c.cmd(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_for("the rewrite to end", || {
        let p = info(&mut c, "persistence");
        match info_field(&p, "aof_rewrite_in_progress").as_deref() {
            Some("0") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    eqb!(c.cmd(&["SAVE"]), b"+OK\r\n");
    drop(s);
    let s = start(&["--appendonly", "yes"]);
    check(&mut s.raw(), "after the rewrite, from the base");
    drop(s);
    // From dump.rdb alone (version 12, types 24 and 25).
    let rdb = std::fs::read(dir.join("dump.rdb")).expect("dump.rdb");
    assert_eq!(&rdb[..9], b"REDIS0012");
    std::fs::remove_dir_all(dir.join("appendonlydir")).expect("remove the log");
    let s = start(&["--appendonly", "no"]);
    check(&mut s.raw(), "from dump.rdb");
}
