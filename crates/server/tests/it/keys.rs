//! Generic key commands through the `redis` crate.

use std::collections::HashSet;
use std::time::Duration;

use redis::Value;

use crate::harness::*;
use crate::{ck, q};

fn sorted_bulks(r: &Reply) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = match r {
        Ok(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::BulkString(b) => b.clone(),
                other => panic!("expected bulk strings, got {other:?}"),
            })
            .collect(),
        other => panic!("expected an array, got {other:?}"),
    };
    v.sort();
    v
}

fn strs(v: &[&str]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = v.iter().map(|s| s.as_bytes().to_vec()).collect();
    v.sort();
    v
}

#[tokio::test]
async fn del_unlink_exists_touch_type() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "MSET a 1 b 2 c 3 d 4", ok());
    ck!(c, "DEL a b missing", int(2));
    ck!(c, "DEL a", int(0));
    ck!(c, "EXISTS a b c c d", int(3));
    ck!(c, "EXISTS missing", int(0));
    ck!(c, "UNLINK c missing", int(1));
    ck!(c, "UNLINK c", int(0));
    ck!(c, "TOUCH d d missing", int(2));
    ck!(c, "TYPE d", status("string"));
    ck!(c, "TYPE missing", status("none"));
    ck!(
        c,
        "DEL",
        err("ERR wrong number of arguments for 'del' command")
    );
    ck!(
        c,
        "EXISTS",
        err("ERR wrong number of arguments for 'exists' command")
    );
    ck!(
        c,
        "TOUCH",
        err("ERR wrong number of arguments for 'touch' command")
    );
    ck!(
        c,
        "TYPE",
        err("ERR wrong number of arguments for 'type' command")
    );
    ck!(
        c,
        "TYPE a b",
        err("ERR wrong number of arguments for 'type' command")
    );
    ck!(c, "DBSIZE", int(1));
}

#[tokio::test]
async fn expire_family() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "EXPIRE missing 10", int(0));
    ck!(c, "TTL missing", int(-2));
    ck!(c, "PTTL missing", int(-2));
    ck!(c, "EXPIRETIME missing", int(-2));
    ck!(c, "PEXPIRETIME missing", int(-2));
    ck!(c, "PERSIST missing", int(0));
    ck!(c, "SET k v", ok());
    ck!(c, "TTL k", int(-1));
    ck!(c, "PTTL k", int(-1));
    ck!(c, "EXPIRETIME k", int(-1));
    ck!(c, "PEXPIRETIME k", int(-1));
    // Options on a key without TTL (which counts as infinite).
    ck!(c, "EXPIRE k 100 XX", int(0));
    ck!(c, "EXPIRE k 100 GT", int(0));
    ck!(c, "TTL k", int(-1));
    ck!(c, "EXPIRE k 100 LT", int(1));
    ck!(c, "TTL k", int(100));
    ck!(c, "PERSIST k", int(1));
    ck!(c, "PERSIST k", int(0));
    ck!(c, "EXPIRE k 100 NX", int(1));
    ck!(c, "EXPIRE k 200 NX", int(0));
    ck!(c, "TTL k", int(100));
    ck!(c, "EXPIRE k 200 XX", int(1));
    ck!(c, "TTL k", int(200));
    ck!(c, "EXPIRE k 100 GT", int(0));
    ck!(c, "EXPIRE k 300 GT", int(1));
    ck!(c, "EXPIRE k 400 LT", int(0));
    ck!(c, "EXPIRE k 50 LT", int(1));
    ck!(c, "TTL k", int(50));
    ck!(c, "EXPIRE k 40 gt xx", int(0));
    ck!(c, "EXPIRE k 60 xx gt", int(1));
    ck!(c, "TTL k", int(60));
    let pttl = as_int(&q!(c, "PTTL k"));
    assert!((59_000..=60_000).contains(&pttl), "PTTL {pttl}");
    ck!(c, "PEXPIRE k 70000", int(1));
    ck!(c, "TTL k", int(70));
    let at = unix_secs() + 1000;
    ck!(c, format!("EXPIREAT k {at}"), int(1));
    ck!(c, "EXPIRETIME k", int(at));
    ck!(c, "PEXPIRETIME k", int(at * 1000));
    let atms = (unix_ms() / 1000 + 2000) * 1000 + 123;
    ck!(c, format!("PEXPIREAT k {atms}"), int(1));
    ck!(c, "PEXPIRETIME k", int(atms));
    ck!(c, "EXPIRETIME k", int(atms / 1000));
    ck!(c, format!("PEXPIREAT k {} NX", atms + 5), int(0));
    ck!(c, format!("PEXPIREAT k {} GT", atms + 5), int(1));
    ck!(c, "PEXPIRETIME k", int(atms + 5));
    // Errors.
    let incompatible =
        || err("ERR NX and XX, GT or LT options at the same time are not compatible");
    ck!(c, "EXPIRE k 10 NX XX", incompatible());
    ck!(c, "EXPIRE k 10 NX GT", incompatible());
    ck!(c, "PEXPIRE k 10 LT NX", incompatible());
    ck!(
        c,
        "EXPIRE k 10 GT LT",
        err("ERR GT and LT options at the same time are not compatible")
    );
    ck!(c, "EXPIRE k 10 FOO", err("ERR Unsupported option FOO"));
    ck!(
        c,
        "EXPIRE k abc",
        err("ERR value is not an integer or out of range")
    );
    ck!(
        c,
        "EXPIRE k 9223372036854775807",
        err("ERR invalid expire time in 'expire' command")
    );
    ck!(
        c,
        "PEXPIRE k 9223372036854775807",
        err("ERR invalid expire time in 'pexpire' command")
    );
    ck!(
        c,
        "EXPIREAT k 9223372036854775807",
        err("ERR invalid expire time in 'expireat' command")
    );
    ck!(
        c,
        "EXPIRE k",
        err("ERR wrong number of arguments for 'expire' command")
    );
    ck!(
        c,
        "TTL",
        err("ERR wrong number of arguments for 'ttl' command")
    );
    ck!(c, "PEXPIRETIME k", int(atms + 5));
    // Zero, negative and past times delete the key.
    ck!(c, "EXPIRE k 0", int(1));
    ck!(c, "EXISTS k", int(0));
    ck!(c, "SET k v", ok());
    ck!(c, "EXPIRE k -1", int(1));
    ck!(c, "EXISTS k", int(0));
    ck!(c, "SET k v", ok());
    ck!(c, "PEXPIREAT k 1", int(1));
    ck!(c, "GET k", nil());
    ck!(c, "SET k v", ok());
    ck!(c, "EXPIREAT k 1", int(1));
    ck!(c, "TTL k", int(-2));
    ck!(c, "DBSIZE", int(0));
}

#[tokio::test]
async fn rename_copy_move() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "RENAME missing x", err("ERR no such key"));
    ck!(c, "RENAMENX missing x", err("ERR no such key"));
    ck!(c, "SET a 1 EX 100", ok());
    ck!(c, "RENAME a b", ok());
    ck!(c, "EXISTS a", int(0));
    ck!(c, "GET b", bulk("1"));
    ck!(c, "TTL b", int(100));
    ck!(c, "RENAME b b", ok());
    ck!(c, "GET b", bulk("1"));
    ck!(c, "RENAMENX b b", int(0));
    ck!(c, "SET c 3", ok());
    ck!(c, "RENAMENX b c", int(0));
    ck!(c, "GET c", bulk("3"));
    ck!(c, "RENAMENX b d", int(1));
    ck!(c, "TTL d", int(100));
    // RENAME over an existing key replaces value and TTL.
    ck!(c, "RENAME c d", ok());
    ck!(c, "GET d", bulk("3"));
    ck!(c, "TTL d", int(-1));
    ck!(
        c,
        "RENAME d",
        err("ERR wrong number of arguments for 'rename' command")
    );

    ck!(c, "SET src v EX 100", ok());
    ck!(c, "COPY src dst", int(1));
    ck!(c, "GET dst", bulk("v"));
    ck!(c, "TTL dst", int(100));
    ck!(c, "COPY src dst", int(0));
    ck!(c, "SET src w", ok());
    ck!(c, "COPY src dst REPLACE", int(1));
    ck!(c, "GET dst", bulk("w"));
    ck!(c, "TTL dst", int(-1));
    ck!(
        c,
        "COPY src src",
        err("ERR source and destination objects are the same")
    );
    ck!(
        c,
        "COPY src src DB 0",
        err("ERR source and destination objects are the same")
    );
    ck!(c, "COPY missing x", int(0));
    ck!(c, "COPY src dst DB 1", int(1));
    ck!(c, "COPY src src DB 1 REPLACE", int(1));
    ck!(c, "COPY src dst DB 16", err("ERR DB index is out of range"));
    ck!(c, "COPY src dst DB -1", err("ERR DB index is out of range"));
    ck!(
        c,
        "COPY src dst DB abc",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "COPY src dst FOO", err("ERR syntax error"));
    ck!(c, "COPY src dst DB", err("ERR syntax error"));
    ck!(c, "SELECT 1", ok());
    ck!(c, "MGET dst src", arr(vec![b("w"), b("w")]));
    ck!(c, "SELECT 0", ok());

    ck!(c, "SET m v EX 100", ok());
    ck!(c, "MOVE m 2", int(1));
    ck!(c, "EXISTS m", int(0));
    ck!(c, "MOVE m 2", int(0));
    ck!(c, "SET m other", ok());
    ck!(c, "MOVE m 2", int(0));
    ck!(c, "GET m", bulk("other"));
    ck!(
        c,
        "MOVE m 0",
        err("ERR source and destination objects are the same")
    );
    ck!(c, "MOVE m 16", err("ERR DB index is out of range"));
    ck!(
        c,
        "MOVE m abc",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "SELECT 2", ok());
    ck!(c, "GET m", bulk("v"));
    ck!(c, "TTL m", int(100));
}

#[tokio::test]
async fn keys_glob() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(
        c,
        "MSET hello 1 hallo 2 hxllo 3 hllo 4 heeeello 5 h[a]llo 6 h*llo 7 other 8",
        ok()
    );
    let k = |r: Reply| sorted_bulks(&r);
    assert_eq!(
        k(q!(c, "KEYS h?llo")),
        strs(&["hello", "hallo", "hxllo", "h*llo"])
    );
    assert_eq!(
        k(q!(c, "KEYS h*llo")),
        strs(&["hello", "hallo", "hxllo", "hllo", "heeeello", "h[a]llo", "h*llo"])
    );
    assert_eq!(k(q!(c, "KEYS h[ae]llo")), strs(&["hello", "hallo"]));
    assert_eq!(
        k(q!(c, "KEYS h[^e]llo")),
        strs(&["hallo", "hxllo", "h*llo"])
    );
    assert_eq!(k(q!(c, "KEYS h[a-f]llo")), strs(&["hello", "hallo"]));
    assert_eq!(k(q!(c, "KEYS h\\[a\\]llo")), strs(&["h[a]llo"]));
    assert_eq!(k(q!(c, "KEYS h\\*llo")), strs(&["h*llo"]));
    assert_eq!(k(q!(c, "KEYS *")).len(), 8);
    assert_eq!(k(q!(c, "KEYS nomatch*")), strs(&[]));
    assert_eq!(k(q!(c, "KEYS other")), strs(&["other"]));
    ck!(
        c,
        "KEYS",
        err("ERR wrong number of arguments for 'keys' command")
    );
    // Only the selected database.
    ck!(c, "SELECT 3", ok());
    assert_eq!(k(q!(c, "KEYS *")), strs(&[]));
}

#[tokio::test]
async fn scan_visits_every_key() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let n = 3000;
    let mut all = HashSet::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let mut argv = vec!["MSET".to_string()];
        for i in chunk {
            let key = format!("key:{i}");
            all.insert(key.clone().into_bytes());
            argv.push(key);
            argv.push(i.to_string());
        }
        assert_eq!(query(&mut c, &argv).await, ok());
    }
    ck!(c, "DBSIZE", int(n));

    async fn scan_all(
        c: &mut redis::aio::MultiplexedConnection,
        extra: &[&str],
    ) -> (Vec<Vec<u8>>, usize) {
        let mut cursor = "0".to_string();
        let mut seen = Vec::new();
        let mut rounds = 0;
        loop {
            let mut argv = vec!["SCAN", cursor.as_str()];
            argv.extend_from_slice(extra);
            let r = query(c, &argv).await;
            let Ok(Value::Array(parts)) = r else {
                panic!("SCAN reply {r:?}");
            };
            assert_eq!(parts.len(), 2, "SCAN reply {parts:?}");
            let next = text(&parts[0]);
            let Value::Array(keys) = &parts[1] else {
                panic!("SCAN keys {parts:?}");
            };
            for k in keys {
                let Value::BulkString(k) = k else {
                    panic!("SCAN key {k:?}")
                };
                seen.push(k.clone());
            }
            rounds += 1;
            assert!(rounds < 100_000, "SCAN does not terminate");
            if next == "0" {
                return (seen, rounds);
            }
            cursor = next;
        }
    }

    let (seen, rounds) = scan_all(&mut c, &["COUNT", "100"]).await;
    let seen_set: HashSet<Vec<u8>> = seen.iter().cloned().collect();
    assert_eq!(seen_set, all, "SCAN COUNT 100 missed or invented keys");
    assert!(rounds > 1, "a 3000-key SCAN with COUNT 100 took one call");
    let (seen, _) = scan_all(&mut c, &[]).await;
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), all);

    let (seen, _) = scan_all(&mut c, &["MATCH", "key:1*", "COUNT", "250"]).await;
    let want: HashSet<Vec<u8>> = all
        .iter()
        .filter(|k| k.starts_with(b"key:1"))
        .cloned()
        .collect();
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), want);
    let (seen, _) = scan_all(&mut c, &["TYPE", "string", "COUNT", "1000"]).await;
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), all);
    let (seen, _) = scan_all(&mut c, &["TYPE", "list", "COUNT", "1000"]).await;
    assert!(
        seen.is_empty(),
        "SCAN TYPE list returned {} keys",
        seen.len()
    );
    let (seen, _) = scan_all(&mut c, &["MATCH", "nothing*", "COUNT", "1000"]).await;
    assert!(seen.is_empty());

    ck!(c, "SCAN abc", err("ERR invalid cursor"));
    ck!(c, "SCAN 0 COUNT 0", err("ERR syntax error"));
    ck!(
        c,
        "SCAN 0 COUNT abc",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "SCAN 0 FOO bar", err("ERR syntax error"));
    ck!(c, "SCAN 0 MATCH", err("ERR syntax error"));
    ck!(
        c,
        "SCAN",
        err("ERR wrong number of arguments for 'scan' command")
    );
}

#[tokio::test]
async fn randomkey_dbsize_flush() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "RANDOMKEY", nil());
    ck!(c, "DBSIZE", int(0));
    ck!(c, "SET only v", ok());
    ck!(c, "RANDOMKEY", bulk("only"));
    ck!(c, "MSET a 1 b 2", ok());
    for _ in 0..20 {
        let r = q!(c, "RANDOMKEY");
        let k = text(r.as_ref().unwrap());
        assert!(["only", "a", "b"].contains(&k.as_str()), "RANDOMKEY {k}");
    }
    ck!(c, "DBSIZE", int(3));
    ck!(c, "SELECT 1", ok());
    ck!(c, "SET x 1", ok());
    ck!(c, "DBSIZE", int(1));
    ck!(c, "SELECT 0", ok());
    ck!(c, "FLUSHDB", ok());
    ck!(c, "DBSIZE", int(0));
    ck!(c, "SELECT 1", ok());
    ck!(c, "DBSIZE", int(1));
    ck!(c, "SET y 1", ok());
    ck!(c, "SELECT 5", ok());
    ck!(c, "SET z 1", ok());
    ck!(c, "FLUSHALL ASYNC", ok());
    ck!(c, "DBSIZE", int(0));
    ck!(c, "SELECT 1", ok());
    ck!(c, "DBSIZE", int(0));
    ck!(c, "GET y", nil());
    ck!(c, "SET y 1", ok());
    ck!(c, "FLUSHDB SYNC", ok());
    ck!(c, "SET y 1", ok());
    ck!(c, "FLUSHDB ASYNC", ok());
    ck!(c, "DBSIZE", int(0));
    ck!(c, "SET y 1", ok());
    ck!(c, "FLUSHALL SYNC", ok());
    ck!(c, "DBSIZE", int(0));
    ck!(c, "FLUSHDB FOO", err("ERR syntax error"));
    ck!(c, "FLUSHALL ASYNC SYNC", err("ERR syntax error"));
    ck!(
        c,
        "DBSIZE x",
        err("ERR wrong number of arguments for 'dbsize' command")
    );
    ck!(
        c,
        "RANDOMKEY x",
        err("ERR wrong number of arguments for 'randomkey' command")
    );
}

#[tokio::test]
async fn swapdb() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let mut other = s.client().await;
    ck!(c, "SET k db0", ok());
    ck!(c, "SET only0 v", ok());
    ck!(c, "SELECT 1", ok());
    ck!(c, "SET k db1", ok());
    ck!(c, "SWAPDB 0 1", ok());
    // This connection still uses database 1, which now holds db0's data.
    ck!(c, "GET k", bulk("db0"));
    ck!(c, "DBSIZE", int(2));
    ck!(other, "GET k", bulk("db1"));
    ck!(other, "DBSIZE", int(1));
    ck!(c, "SWAPDB 1 1", ok());
    ck!(c, "GET k", bulk("db0"));
    ck!(c, "SWAPDB 0 16", err("ERR DB index is out of range"));
    ck!(c, "SWAPDB -1 0", err("ERR DB index is out of range"));
    ck!(c, "SWAPDB a 1", err("ERR invalid first DB index"));
    ck!(c, "SWAPDB 0 b", err("ERR invalid second DB index"));
    ck!(
        c,
        "SWAPDB 0",
        err("ERR wrong number of arguments for 'swapdb' command")
    );
    ck!(other, "GET k", bulk("db1"));
}

#[tokio::test]
async fn object_subcommands() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let long = "x".repeat(45);
    let max_embstr = "y".repeat(44);
    ck!(c, format!("MSET i 123 big 12345678901234567890 neg -5 e hello r {long} m {max_embstr} f 1.5 z 0123"), ok());
    ck!(c, "OBJECT ENCODING i", bulk("int"));
    ck!(c, "OBJECT ENCODING neg", bulk("int"));
    ck!(c, "OBJECT ENCODING big", bulk("embstr"));
    ck!(c, "OBJECT ENCODING e", bulk("embstr"));
    ck!(c, "OBJECT ENCODING m", bulk("embstr"));
    ck!(c, "OBJECT ENCODING r", bulk("raw"));
    ck!(c, "OBJECT ENCODING f", bulk("embstr"));
    ck!(c, "OBJECT ENCODING z", bulk("embstr"));
    ck!(c, "object encoding missing", nil());
    ck!(c, "INCR e2", int(1));
    ck!(c, "OBJECT ENCODING e2", bulk("int"));
    // Shared integers (0..9999) report INT_MAX, others 1.
    ck!(c, "OBJECT REFCOUNT i", int(2147483647));
    ck!(c, "OBJECT REFCOUNT e", int(1));
    ck!(c, "OBJECT REFCOUNT missing", nil());
    // 0, or 1 if a second boundary of the LRU clock passed since MSET.
    let idle = as_int(&q!(c, "OBJECT IDLETIME e"));
    assert!(
        (0..=1).contains(&idle),
        "OBJECT IDLETIME right after SET: {idle}"
    );
    ck!(c, "OBJECT IDLETIME missing", nil());
    ck!(c, "OBJECT FREQ missing", nil());
    ck!(c, "OBJECT FREQ e", err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    ck!(
        c,
        "OBJECT FOO e",
        err("ERR unknown subcommand 'FOO'. Try OBJECT HELP.")
    );
    ck!(
        c,
        "OBJECT ENCODING",
        err("ERR wrong number of arguments for 'object|encoding' command")
    );
    ck!(
        c,
        "OBJECT ENCODING a b",
        err("ERR wrong number of arguments for 'object|encoding' command")
    );
    ck!(
        c,
        "OBJECT",
        err("ERR wrong number of arguments for 'object' command")
    );
    let help = q!(c, "OBJECT HELP");
    let Ok(Value::Array(lines)) = &help else {
        panic!("OBJECT HELP {help:?}")
    };
    assert_eq!(
        lines[0],
        Value::SimpleString(
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into()
        )
    );
    assert_eq!(lines.len(), 15);
    // Idle time grows while the key is not touched, and resets on access.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let idle = as_int(&q!(c, "OBJECT IDLETIME i"));
    assert!(
        (2..=3).contains(&idle),
        "OBJECT IDLETIME after 2.1 s: {idle}"
    );
    ck!(c, "GET i", bulk("123"));
    let idle = as_int(&q!(c, "OBJECT IDLETIME i"));
    assert!((0..=1).contains(&idle), "OBJECT IDLETIME after GET: {idle}");
}

#[tokio::test]
async fn databases_are_isolated() {
    let s = Server::under_test();
    let mut a = s.client().await;
    let mut b2 = s.client().await;
    ck!(a, "SELECT 1", ok());
    ck!(b2, "SELECT 2", ok());
    ck!(a, "SET k one", ok());
    ck!(b2, "SET k two", ok());
    ck!(a, "GET k", bulk("one"));
    ck!(b2, "GET k", bulk("two"));
    ck!(a, "MSET x 1 y 2", ok());
    ck!(a, "DBSIZE", int(3));
    ck!(b2, "DBSIZE", int(1));
    ck!(b2, "EXISTS x y", int(0));
    ck!(b2, "KEYS *", arr(vec![b("k")]));
    ck!(a, "DEL k", int(1));
    ck!(b2, "GET k", bulk("two"));
    ck!(a, "SELECT 0", ok());
    ck!(a, "DBSIZE", int(0));
    ck!(a, "SELECT 15", ok());
    ck!(a, "SELECT 16", err("ERR DB index is out of range"));
    ck!(a, "SELECT -1", err("ERR DB index is out of range"));
    ck!(
        a,
        "SELECT abc",
        err("ERR value is not an integer or out of range")
    );
    ck!(
        a,
        "SELECT",
        err("ERR wrong number of arguments for 'select' command")
    );
    // The failed SELECTs left the connection on database 15.
    ck!(a, "SET in15 v", ok());
    ck!(b2, "SELECT 15", ok());
    ck!(b2, "GET in15", bulk("v"));
    let info = q!(a, "INFO keyspace");
    let info = text(info.as_ref().unwrap());
    assert!(
        info.contains("db1:keys=2,expires=0,avg_ttl=0\r\n"),
        "{info}"
    );
    assert!(
        info.contains("db2:keys=1,expires=0,avg_ttl=0\r\n"),
        "{info}"
    );
    assert!(
        info.contains("db15:keys=1,expires=0,avg_ttl=0\r\n"),
        "{info}"
    );
    assert!(!info.contains("db0:"), "{info}");
}

#[tokio::test]
async fn expiretime_rounds_to_nearest_second() {
    // Redis's EXPIRETIME is (ms + 500) / 1000, like TTL.
    let s = Server::under_test();
    let mut c = s.client().await;
    let base = (unix_secs() + 1000) * 1000;
    for (ms, secs) in [(0, 0), (499, 0), (500, 1), (700, 1), (999, 1)] {
        ck!(c, format!("SET k v PXAT {}", base + ms), ok());
        ck!(c, "PEXPIRETIME k", int(base + ms));
        ck!(c, "EXPIRETIME k", int(base / 1000 + secs));
        ck!(c, format!("PEXPIREAT k {}", base + ms), int(1));
        ck!(c, "EXPIRETIME k", int(base / 1000 + secs));
    }
}

/// The `new` keyspace event (`notify-keyspace-events n`): published when a
/// command adds a key, before the command's own event, in every family and
/// across databases; kept beside `A` (whose CONFIG GET string Redis shows
/// without it). The keyevent stream matches redis-server's event for event.
#[test]
fn new_key_events_match_redis() {
    let commands: &[&[&str]] = &[
        &["SET", "a", "1"],
        &["SET", "a", "2"],
        &["LPUSH", "l", "x"],
        &["LPUSH", "l", "y"],
        &["RENAME", "a", "b"],
        &["COPY", "b", "c"],
        &["SADD", "s", "x"],
        &["SMOVE", "s", "s2", "x"],
        &["HSET", "h", "f", "v"],
        &["ZADD", "z", "1", "m"],
        &["XADD", "st", "1-1", "f", "v"],
        &["INCR", "n"],
        &["APPEND", "ap", "x"],
        &["SETRANGE", "sr", "2", "x"],
        &["SETBIT", "bt", "3", "1"],
        &["PFADD", "hl", "a"],
        &["GEOADD", "g", "1", "1", "m"],
        &["SORT", "l", "ALPHA", "STORE", "so"],
        &["SUNIONSTORE", "su", "s2"],
        &["LMOVE", "l", "l2", "LEFT", "LEFT"],
        &["MSET", "m1", "1", "m2", "2"],
        &["MOVE", "c", "1"],
        &[
            "EVAL",
            "redis.call('set', KEYS[1], '1') return 1",
            "1",
            "ev",
        ],
        &["MULTI"],
        &["SET", "tx", "1"],
        &["EXEC"],
        &["DEL", "b"],
        &["SET", "end", "1"],
    ];
    let mut seen = Vec::new();
    for s in [Server::keel(), Server::redis()] {
        let mut c = s.raw();
        let mut sub = s.raw();
        c.cmd(&["FLUSHALL"]);
        c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEAn"]);
        let shown = c.cmd(&["CONFIG", "GET", "notify-keyspace-events"]);
        sub.cmd(&["PSUBSCRIBE", "__keyevent@*__:*"]);
        for argv in commands {
            c.cmd(argv);
        }
        let mut events = Vec::new();
        while events.last() != Some(&("set".to_string(), "end".to_string())) {
            events.extend(read_events(&mut sub, 1));
        }
        c.cmd(&["CONFIG", "SET", "notify-keyspace-events", ""]);
        seen.push((String::from_utf8_lossy(&shown).into_owned(), events));
    }
    assert!(
        seen[0].1.iter().any(|(e, _)| e == "new"),
        "no new event: {:?}",
        seen[0].1
    );
    assert_eq!(seen[0], seen[1], "keel (left) and redis (right)");
}
