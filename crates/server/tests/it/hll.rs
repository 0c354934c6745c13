//! HyperLogLog values move between keel and redis-server as plain strings
//! (GET, then SET on the other side) and keep counting and growing
//! identically; PFADD/PFMERGE/PFCOUNT publish and log what Redis does.

use crate::eqb;
use crate::harness::*;
use crate::propagation::{incremental_log, log_on};

/// `PFADD key` with `elements`, 500 per command.
fn pfadd(conn: &mut Raw, key: &str, elements: &[Vec<u8>]) {
    for chunk in elements.chunks(500) {
        let mut argv: Vec<Vec<u8>> = vec![b"PFADD".to_vec(), key.as_bytes().to_vec()];
        argv.extend(chunk.iter().cloned());
        let reply = conn.cmd(&argv);
        assert!(reply.starts_with(b":"), "PFADD: {}", escape(&reply));
    }
}

fn elements(prefix: &str, range: std::ops::Range<u32>) -> Vec<Vec<u8>> {
    // Binary and text elements alike.
    range
        .map(|i| {
            if i % 3 == 0 {
                i.to_le_bytes().to_vec()
            } else {
                format!("{prefix}:{i}").into_bytes()
            }
        })
        .collect()
}

fn get(conn: &mut Raw, key: &str) -> Vec<u8> {
    match conn.call(&["GET", key]) {
        resp::Value::Bulk(b) => b,
        other => panic!("GET {key}: {other:?}"),
    }
}

fn encoding(conn: &mut Raw, key: &str) -> String {
    text_of(&conn.call(&["PFDEBUG", "ENCODING", key]))
}

fn text_of(v: &resp::Value) -> String {
    match v {
        resp::Value::Simple(s) | resp::Value::Bulk(s) => String::from_utf8_lossy(s).into_owned(),
        other => panic!("not text: {other:?}"),
    }
}

/// An HLL made by `from` is copied to `to` by its bytes; both count it
/// the same, and the same additions on both sides give the same bytes.
fn carry_over(from: &mut Raw, to: &mut Raw, key: &str, n: u32, want: &str) {
    pfadd(from, key, &elements(key, 0..n));
    assert_eq!(encoding(from, key), want, "{key} after {n} elements");
    let bytes = get(from, key);
    eqb!(
        to.cmd(&[b"SET".as_slice(), key.as_bytes(), &bytes]),
        b"+OK\r\n"
    );
    let count = from.cmd(&["PFCOUNT", key]);
    eqb!(to.cmd(&["PFCOUNT", key]), count, "PFCOUNT {key}");
    // PFCOUNT wrote the cached cardinality on both sides.
    eqb!(get(to, key), get(from, key), "{key} after PFCOUNT");
    let more = elements("more", 0..n / 2 + 50);
    pfadd(from, key, &more);
    pfadd(to, key, &more);
    eqb!(get(to, key), get(from, key), "{key} after more elements");
    eqb!(to.cmd(&["PFCOUNT", key]), from.cmd(&["PFCOUNT", key]));
    eqb!(
        to.cmd(&["PFDEBUG", "GETREG", key]),
        from.cmd(&["PFDEBUG", "GETREG", key])
    );
}

#[test]
fn values_cross_between_redis_and_keel() {
    let keel = Server::keel();
    let redis = Server::redis();
    let mut k = keel.raw();
    let mut r = redis.raw();
    carry_over(&mut r, &mut k, "r-sparse", 300, "sparse");
    carry_over(&mut r, &mut k, "r-dense", 6000, "dense");
    carry_over(&mut k, &mut r, "k-sparse", 300, "sparse");
    carry_over(&mut k, &mut r, "k-dense", 6000, "dense");
    // Unions of values of either origin.
    let keys = ["r-sparse", "r-dense", "k-sparse", "k-dense", "nokey"];
    let mut argv = vec!["PFCOUNT"];
    argv.extend(keys);
    eqb!(k.cmd(&argv), r.cmd(&argv));
    let mut argv = vec!["PFMERGE", "union"];
    argv.extend(keys);
    eqb!(k.cmd(&argv), r.cmd(&argv));
    eqb!(get(&mut k, "union"), get(&mut r, "union"));
}

#[test]
fn crafted_values_count_as_in_redis() {
    let keel = Server::keel();
    let redis = Server::redis();
    let mut k = keel.raw();
    let mut r = redis.raw();
    let dense = |fill: u8| {
        let mut v = b"HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80".to_vec();
        v.resize(16 + 12288, fill);
        v
    };
    // Every register 63: the estimate overflows and Redis replies
    // LLONG_MIN (and caches it, marked stale).
    for (key, value) in [
        ("max", dense(0xff)),
        ("ones", dense(0b0100_0001)),
        ("mixed", dense(0x5a)),
    ] {
        for c in [&mut k, &mut r] {
            c.cmd(&[b"SET".as_slice(), key.as_bytes(), &value]);
        }
        eqb!(k.cmd(&["PFCOUNT", key]), r.cmd(&["PFCOUNT", key]), "{key}");
        eqb!(get(&mut k, key), get(&mut r, key), "{key}");
        eqb!(
            k.cmd(&["PFCOUNT", key, "nokey"]),
            r.cmd(&["PFCOUNT", key, "nokey"]),
            "{key}"
        );
    }
    eqb!(k.cmd(&["PFCOUNT", "max"]), b":-9223372036854775808\r\n");
    // Sparse data covering too many registers, in the large: an error,
    // never a crash.
    let mut huge = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80".to_vec();
    for _ in 0..150_000 {
        huge.extend_from_slice(&[0x7f, 0xff]);
    }
    huge.push(0x80);
    k.cmd(&[b"SET".as_slice(), b"huge", &huge]);
    for argv in [
        vec!["PFCOUNT", "huge"],
        vec!["PFCOUNT", "huge", "max"],
        vec!["PFMERGE", "m", "huge"],
        vec!["PFDEBUG", "TODENSE", "huge"],
        vec!["PFADD", "huge", "a", "b"],
    ] {
        eqb!(
            k.cmd(&argv),
            b"-INVALIDOBJ Corrupted HLL object detected\r\n",
            "{argv:?}"
        );
    }
    eqb!(k.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn keyspace_events_as_redis() {
    assert_keyevents(
        &Server::under_test(),
        &[
            "PFADD h a b c",
            "PFADD h a b c",
            "PFADD h",
            "PFADD e",
            "PFCOUNT h",
            "PFCOUNT h e",
            "PFMERGE m h e",
            "PFMERGE m",
            "PFDEBUG TODENSE h",
            "SET s x",
            "PFADD s a",
        ],
        &[
            ("pfadd", "h"),
            ("pfadd", "e"),
            ("pfadd", "m"),
            ("pfadd", "m"),
            ("set", "s"),
        ],
    );
}

/// What reaches the log, as Redis propagates it: a PFADD that changed a
/// register, a PFCOUNT that wrote the cached cardinality (once: the second
/// reads the cache), a PFDEBUG that changed the encoding, every PFMERGE;
/// not the no-ops.
#[tokio::test]
async fn writes_reach_the_log() {
    let s = Server::under_test();
    let mut c = s.client().await;
    log_on(&mut c).await;
    let mut raw = s.raw();
    for line in [
        "PFADD h a b c",
        "PFADD h c b a",
        "PFCOUNT h",
        "PFCOUNT h",
        "PFADD h2 x",
        "PFCOUNT h h2",
        "PFDEBUG TODENSE h2",
        "PFDEBUG ENCODING h2",
        "PFMERGE m h h2",
        "SET end x",
    ] {
        raw.cmd(&split(line));
    }
    let log = incremental_log(&mut c).await;
    let count = |argv: &str| {
        let mut wire = Vec::new();
        resp::encode::command(&mut wire, &split(argv));
        log.windows(wire.len()).filter(|w| *w == wire).count()
    };
    let show = String::from_utf8_lossy(&log);
    // Relative to a plain write: the files read may repeat records (a
    // rewrite's history file not yet removed).
    let once = count("SET end x");
    assert!(once >= 1, "{show}");
    for logged in [
        "PFADD h a b c",
        "PFCOUNT h",
        "PFADD h2 x",
        "PFDEBUG TODENSE h2",
        "PFMERGE m h h2",
    ] {
        assert_eq!(count(logged), once, "{logged}: {show}");
    }
    for unlogged in ["PFADD h c b a", "PFCOUNT h h2", "PFDEBUG ENCODING h2"] {
        assert_eq!(count(unlogged), 0, "{unlogged}: {show}");
    }
}

#[test]
fn selftest_passes() {
    let s = Server::keel();
    // Redis's own self test adds millions of elements: minutes in an
    // unoptimized (debug) build on a busy machine.
    let mut r = s.raw();
    r.timeout = std::time::Duration::from_secs(600);
    eqb!(r.cmd(&["PFSELFTEST"]), b"+OK\r\n");
}

/// The log replays to the same bytes: PFADD that promotes, PFCOUNT that
/// caches, PFDEBUG that converts, PFMERGE, all replayed at start.
#[test]
fn log_replays_to_the_same_values() {
    let dir = std::env::temp_dir().join(format!("keel-it-hll-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    let args = ["--dir", d.as_str(), "--appendonly", "yes", "--save", ""];
    let keys = ["a", "b", "m"];
    let before: Vec<Vec<u8>> = {
        let s = Server::keel_raw(&args);
        let mut c = s.raw();
        pfadd(&mut c, "a", &elements("a", 0..3000));
        c.cmd(&["PFCOUNT", "a"]);
        pfadd(&mut c, "b", &elements("b", 0..100));
        c.cmd(&["PFDEBUG", "TODENSE", "b"]);
        c.cmd(&["PFMERGE", "m", "a", "b"]);
        c.cmd(&["PFCOUNT", "m"]);
        keys.iter().map(|k| get(&mut c, k)).collect()
    };
    let s = Server::keel_raw(&args);
    let mut c = s.raw();
    for (k, want) in keys.iter().zip(&before) {
        eqb!(get(&mut c, k), want, "{k} after restart");
    }
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
