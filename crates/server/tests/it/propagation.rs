//! What every write passes through: keys expired on access or by the
//! active cycle (memory, `expired` events, DEL in the log), and clients
//! blocked on a key woken by any write that can serve them, whatever
//! command made it. Every test here also passes against redis-server
//! (`KEEL_IT_AGAINST_REDIS=1`).

use std::time::Duration;

use crate::harness::*;
use crate::{ck, q};

/// Polls INFO until `field` reads `want` (a state, not a time).
async fn wait_info(
    c: &mut redis::aio::MultiplexedConnection,
    section: &str,
    field: &str,
    want: &str,
) {
    let mut last = None;
    for _ in 0..2000 {
        let info = q!(*c, &format!("INFO {section}"));
        last = info_field(&text(info.as_ref().unwrap()), field);
        if last.as_deref() == Some(want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("INFO {section} {field} stayed {last:?}, expected {want}");
}

async fn wait_blocked(c: &mut redis::aio::MultiplexedConnection, n: usize) {
    wait_info(c, "clients", "blocked_clients", &n.to_string()).await;
}

/// Sends `SET <prefix><i> v PX 1` for every i in one pipelined write and
/// reads the replies.
fn set_volatile(raw: &mut Raw, prefix: &str, n: usize) {
    let mut wire = Vec::new();
    for i in 0..n {
        resp::encode::command(
            &mut wire,
            &[
                b"SET".to_vec(),
                format!("{prefix}{i}").into_bytes(),
                b"v".to_vec(),
                b"PX".to_vec(),
                b"1".to_vec(),
            ],
        );
    }
    raw.send(&wire);
    for _ in 0..n {
        assert_eq!(raw.read_reply(), b"+OK\r\n");
    }
}

fn used_memory(raw: &mut Raw) -> i64 {
    let info = raw.cmd(&["INFO", "memory"]);
    let info = String::from_utf8_lossy(&info).into_owned();
    info_field(&info, "used_memory")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no used_memory in {info}"))
}

#[tokio::test]
async fn ttl_churn_gives_memory_back() {
    // Enough lazily expired keys per round that keeping any bytes of each
    // (a queue nobody drains) shows as several MB.
    const LAZY: usize = 100_000;
    const ACTIVE: usize = 20_000;
    let s = Server::under_test();
    let mut c = s.client().await;
    let mut raw = s.raw();
    let mut first = None;
    for round in 0..4 {
        // The active cycle stays off until the lazy keys were read, so
        // every one of them is found expired on access.
        ck!(c, "DEBUG SET-ACTIVE-EXPIRE 0", ok());
        set_volatile(&mut raw, "lazy:", LAZY);
        set_volatile(&mut raw, "active:", ACTIVE);
        // Expired once the last one written is gone (PTTL finds it expired
        // and deletes it, as Redis).
        let last = format!("active:{}", ACTIVE - 1);
        while as_int(&q!(c, &format!("PTTL {last}"))) != -2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let mut wire = Vec::new();
        for i in 0..LAZY {
            resp::encode::command(
                &mut wire,
                &[b"GET".to_vec(), format!("lazy:{i}").into_bytes()],
            );
        }
        raw.send(&wire);
        for _ in 0..LAZY {
            assert_eq!(raw.read_reply(), b"$-1\r\n");
        }
        assert_eq!(as_int(&q!(c, "DBSIZE")), ACTIVE as i64 - 1);
        // The active cycle removes the rest.
        ck!(c, "DEBUG SET-ACTIVE-EXPIRE 1", ok());
        while as_int(&q!(c, "DBSIZE")) != 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let used = used_memory(&mut raw);
        match first {
            None => first = Some(used),
            Some(f) => assert!(
                used - f < 4 << 20,
                "round {round}: used_memory {used} against {f} after the first round"
            ),
        }
    }
}

/// Turns the append-only log on and waits until it is.
pub async fn log_on(c: &mut redis::aio::MultiplexedConnection) {
    ck!(*c, "CONFIG SET appendonly yes", ok());
    wait_info(c, "persistence", "aof_rewrite_in_progress", "0").await;
    wait_info(c, "persistence", "aof_enabled", "1").await;
}

/// The incremental files of the log, concatenated.
pub async fn incremental_log(c: &mut redis::aio::MultiplexedConnection) -> Vec<u8> {
    let dir = match q!(*c, "CONFIG GET dir") {
        Ok(redis::Value::Array(v)) => text(&v[1]),
        other => panic!("CONFIG GET dir: {other:?}"),
    };
    let logdir = std::path::Path::new(&dir).join("appendonlydir");
    // The rewrite that `CONFIG SET appendonly yes` started deletes the
    // files it replaced after it reports done (as Redis's history files
    // go in the background): a file listed may be gone when read. Its
    // records are in the files that replaced it, so list again.
    'listing: loop {
        let mut log = Vec::new();
        for f in std::fs::read_dir(&logdir).unwrap() {
            let path = f.unwrap().path();
            if path.to_string_lossy().ends_with(".incr.aof") {
                match std::fs::read(&path) {
                    Ok(bytes) => log.extend(bytes),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue 'listing,
                    Err(e) => panic!("{}: {e}", path.display()),
                }
            }
        }
        return log;
    }
}

pub fn holds(log: &[u8], record: &[u8]) -> bool {
    log.windows(record.len()).any(|w| w == record)
}

/// redis.set_repl(redis.REPL_NONE) keeps a script's writes out of the log,
/// but not the DEL of a key it found expired.
#[tokio::test]
async fn set_repl_none_still_logs_expired_keys() {
    let s = Server::under_test();
    let mut c = s.client().await;
    log_on(&mut c).await;
    ck!(c, "DEBUG SET-ACTIVE-EXPIRE 0", ok());
    ck!(c, "SET gone v PX 1", ok());
    // PTTL of `gone` would delete it: wait on a key that expires after it.
    ck!(c, "SET marker v PX 1", ok());
    while as_int(&q!(c, "PTTL marker")) != -2 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let script = "redis.set_repl(redis.REPL_NONE) redis.call('get', KEYS[1]) redis.call('set', KEYS[2], 'x') return 1";
    let reply = query(
        &mut c,
        &[
            b"EVAL".as_slice(),
            script.as_bytes(),
            b"2",
            b"gone",
            b"hidden",
        ],
    )
    .await;
    assert_eq!(reply, int(1));
    ck!(c, "SET shown v", ok());
    let log = incremental_log(&mut c).await;
    assert!(
        holds(&log, b"*2\r\n$3\r\nDEL\r\n$4\r\ngone\r\n"),
        "{}",
        String::from_utf8_lossy(&log)
    );
    assert!(
        !holds(&log, b"$6\r\nhidden\r\n"),
        "{}",
        String::from_utf8_lossy(&log)
    );
    assert!(
        holds(&log, b"$5\r\nshown\r\n"),
        "{}",
        String::from_utf8_lossy(&log)
    );
}

#[tokio::test]
async fn keys_expired_on_access_are_published_and_logged() {
    let s = Server::under_test();
    let mut c = s.client().await;
    log_on(&mut c).await;
    ck!(c, "CONFIG SET notify-keyspace-events Ex", ok());
    let mut sub = s.raw();
    sub.cmd(&["SUBSCRIBE", "__keyevent@0__:expired"]);
    ck!(c, "DEBUG SET-ACTIVE-EXPIRE 0", ok());
    ck!(c, "SET lazykey v PX 1", ok());
    // PTTL reports the key gone once it has expired (and deletes it).
    while as_int(&q!(c, "PTTL lazykey")) != -2 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    ck!(c, "GET lazykey", nil());
    assert_eq!(
        parse(&sub.read_reply()),
        resp::Value::Array(vec![
            resp::Value::Bulk(b"message".to_vec()),
            resp::Value::Bulk(b"__keyevent@0__:expired".to_vec()),
            resp::Value::Bulk(b"lazykey".to_vec()),
        ])
    );
    // The log holds the DEL (in the OS before the reply left).
    let log = incremental_log(&mut c).await;
    let del = b"*2\r\n$3\r\nDEL\r\n$7\r\nlazykey\r\n";
    assert!(
        holds(&log, del),
        "no DEL lazykey in {}",
        String::from_utf8_lossy(&log)
    );
}

/// A client blocked in `BLPOP dst 0` is served by `write`, which creates
/// a list under `dst` without pushing to it.
async fn woken_by(setup: &[&str], write: &str, block: &str, want: Reply) {
    let s = Server::under_test();
    let mut c = s.client().await;
    for line in setup {
        q!(c, line).unwrap_or_else(|e| panic!("{line}: {e}"));
    }
    let mut waiter = s.client().await;
    let block = block.to_string();
    let pop = tokio::spawn(async move { q!(waiter, &block) });
    wait_blocked(&mut c, 1).await;
    q!(c, write).unwrap_or_else(|e| panic!("{write}: {e}"));
    assert_eq!(pop.await.unwrap(), want, "after {write}");
}

#[tokio::test]
async fn blocked_clients_are_woken_by_any_write_that_creates_their_key() {
    let list = || arr(vec![b("dst"), b("a")]);
    woken_by(&["RPUSH src a"], "RENAME src dst", "BLPOP dst 0", list()).await;
    woken_by(
        &["SELECT 1", "RPUSH dst a"],
        "MOVE dst 0",
        "BLPOP dst 0",
        list(),
    )
    .await;
    woken_by(&["RPUSH src a"], "COPY src dst", "BLPOP dst 0", list()).await;
    woken_by(
        &["RPUSH src a"],
        "SORT src ALPHA STORE dst",
        "BLPOP dst 0",
        list(),
    )
    .await;
    woken_by(
        &["RPUSH src a"],
        "LMOVE src dst LEFT LEFT",
        "BLPOP dst 0",
        list(),
    )
    .await;
    let zset = || arr(vec![b("dst"), b("a"), b("1")]);
    woken_by(
        &["ZADD src 1 a"],
        "ZUNIONSTORE dst 1 src",
        "BZPOPMIN dst 0",
        zset(),
    )
    .await;
    woken_by(
        &["ZADD src 1 a"],
        "ZRANGESTORE dst src 0 -1",
        "BZPOPMIN dst 0",
        zset(),
    )
    .await;
    woken_by(
        &["ZADD src 1 a"],
        "RENAME src dst",
        "BZPOPMIN dst 0",
        zset(),
    )
    .await;
}

#[tokio::test]
async fn blocked_client_waits_on_when_a_transaction_leaves_no_list() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let mut waiter = s.client().await;
    let pop = tokio::spawn(async move { q!(waiter, "BLPOP l 0") });
    wait_blocked(&mut c, 1).await;
    let mut raw = s.raw();
    for line in ["MULTI", "LPUSH l x", "DEL l", "SET l foo", "EXEC"] {
        raw.cmd(&split(line));
    }
    // Still blocked: the key holds a string, not a list.
    ck!(c, "GET l", bulk("foo"));
    wait_blocked(&mut c, 1).await;
    ck!(c, "DEL l", int(1));
    ck!(c, "RPUSH l y", int(1));
    assert_eq!(pop.await.unwrap(), arr(vec![b("l"), b("y")]));
}

/// A woken BLMOVE waits on through a source of another type, and gets
/// WRONGTYPE when the source has a list but the destination does not.
#[tokio::test]
async fn woken_blmove_answers_for_its_destination_only() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SET dst x", ok());
    let mut waiter = s.client().await;
    let mv = tokio::spawn(async move { q!(waiter, "BLMOVE src dst LEFT LEFT 0") });
    wait_blocked(&mut c, 1).await;
    ck!(c, "SET src x", ok());
    ck!(c, "DEL src", int(1));
    wait_blocked(&mut c, 1).await;
    ck!(c, "RPUSH src a", int(1));
    assert_eq!(
        mv.await.unwrap(),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    ck!(c, "LRANGE src 0 -1", arr(vec![b("a")]));
}

#[tokio::test]
async fn blocked_xreadgroup_ends_when_its_stream_goes_away() {
    let s = Server::under_test();
    let mut c = s.client().await;
    for write in ["DEL s", "SET s x", "FLUSHALL", "FLUSHDB"] {
        q!(c, "DEL s").unwrap();
        ck!(c, "XGROUP CREATE s g $ MKSTREAM", ok());
        let mut waiter = s.client().await;
        let read =
            tokio::spawn(async move { q!(waiter, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >") });
        wait_blocked(&mut c, 1).await;
        q!(c, write).unwrap();
        assert_eq!(
            read.await.unwrap(),
            err("UNBLOCKED the stream key no longer exists"),
            "after {write}"
        );
    }
    // XREAD without a group waits on through a change of type.
    let mut waiter = s.client().await;
    let read = tokio::spawn(async move { q!(waiter, "XREAD BLOCK 0 STREAMS s2 $") });
    wait_blocked(&mut c, 1).await;
    ck!(c, "SET s2 x", ok());
    ck!(c, "DEL s2", int(1));
    wait_blocked(&mut c, 1).await;
    ck!(c, "XADD s2 1-1 a 1", bulk("1-1"));
    assert_eq!(
        read.await.unwrap(),
        arr(vec![redis::Value::Array(vec![
            b("s2"),
            redis::Value::Array(vec![redis::Value::Array(vec![
                b("1-1"),
                redis::Value::Array(vec![b("a"), b("1")])
            ])])
        ])])
    );
}

/// A client blocked on several keys is served from the one that gets a
/// list, even when an earlier key now holds another type.
#[tokio::test]
async fn woken_client_is_served_past_a_key_of_another_type() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let mut waiter = s.client().await;
    let pop = tokio::spawn(async move { q!(waiter, "BLPOP a b 0") });
    wait_blocked(&mut c, 1).await;
    ck!(c, "SET a x", ok());
    ck!(c, "RPUSH b 1", int(1));
    assert_eq!(pop.await.unwrap(), arr(vec![b("b"), b("1")]));
    let mut waiter = s.client().await;
    let pop = tokio::spawn(async move { q!(waiter, "BZPOPMIN za zb 0") });
    wait_blocked(&mut c, 1).await;
    ck!(c, "SET za x", ok());
    ck!(c, "ZADD zb 1 m", int(1));
    assert_eq!(pop.await.unwrap(), arr(vec![b("zb"), b("m"), b("1")]));
    // Not woken: the first key's type is an error, as Redis.
    ck!(c, "RPUSH b 2", int(1));
    ck!(
        c,
        "BLPOP a b 0",
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}
