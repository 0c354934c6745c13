//! Hash commands through the `redis` crate: setting and reading fields,
//! counters (HINCRBYFLOAT's long double results), encodings at their
//! thresholds, HRANDFIELD in RESP2 and RESP3, HSCAN on both encodings
//! (every field exactly once while the hash grows), WRONGTYPE.

use std::collections::{HashMap, HashSet};

use redis::Value;

use crate::harness::*;
use crate::{ck, q};

fn bs(items: &[&str]) -> Reply {
    arr(items.iter().map(b).collect())
}

/// Sorted texts of an array reply.
fn sorted(r: &Reply) -> Vec<String> {
    let items = match r {
        Ok(Value::Array(v)) => v,
        other => panic!("expected an array, got {other:?}"),
    };
    let mut out: Vec<String> = items.iter().map(text).collect();
    out.sort();
    out
}

fn strs(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// (field, value) pairs of a flat RESP2 array or a RESP3 map.
fn pairs(r: &Reply) -> HashMap<String, String> {
    match r {
        Ok(Value::Array(v)) => v.chunks(2).map(|p| (text(&p[0]), text(&p[1]))).collect(),
        Ok(Value::Map(m)) => m.iter().map(|(k, v)| (text(k), text(v))).collect(),
        other => panic!("expected pairs, got {other:?}"),
    }
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[tokio::test]
async fn set_get_delete() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "HSET h a 1 b 2", int(2));
    ck!(c, "HSET h a 10 c 3", int(1));
    ck!(c, "HGET h a", bulk("10"));
    ck!(c, "HGET h zz", nil());
    ck!(c, "HGET nokey a", nil());
    ck!(c, "HMGET h a zz c", arr(vec![b("10"), Value::Nil, b("3")]));
    ck!(c, "HMGET nokey a b", arr(vec![Value::Nil, Value::Nil]));
    ck!(c, "HMSET h d 4 e 5", ok());
    ck!(c, "HLEN h", int(5));
    ck!(c, "HLEN nokey", int(0));
    ck!(c, "HEXISTS h d", int(1));
    ck!(c, "HEXISTS h zz", int(0));
    ck!(c, "HEXISTS nokey a", int(0));
    ck!(c, "HSTRLEN h a", int(2));
    ck!(c, "HSTRLEN h zz", int(0));
    ck!(c, "HSTRLEN nokey a", int(0));
    ck!(c, "HSETNX h a 99", int(0));
    ck!(c, "HSETNX h f 6", int(1));
    ck!(c, "HSETNX newh x 1", int(1));
    ck!(c, "HGET newh x", bulk("1"));
    assert_eq!(
        sorted(&q!(c, "HKEYS h")),
        strs(&["a", "b", "c", "d", "e", "f"])
    );
    assert_eq!(
        sorted(&q!(c, "HVALS h")),
        strs(&["10", "2", "3", "4", "5", "6"])
    );
    let all = pairs(&q!(c, "HGETALL h"));
    assert_eq!(all.len(), 6);
    assert_eq!(all["a"], "10");
    ck!(c, "HGETALL nokey", arr(vec![]));
    ck!(c, "HKEYS nokey", arr(vec![]));
    ck!(c, "HVALS nokey", arr(vec![]));
    ck!(c, "HDEL h a zz b", int(2));
    ck!(c, "HDEL nokey a", int(0));
    ck!(c, "HDEL h c d e f", int(4));
    // The last field gone, the key goes.
    ck!(c, "EXISTS h", int(0));
    // Arity: odd field/value lists.
    ck!(
        c,
        "HSET h",
        err("ERR wrong number of arguments for 'hset' command")
    );
    ck!(
        c,
        "HSET h a",
        err("ERR wrong number of arguments for 'hset' command")
    );
    ck!(
        c,
        "HSET h a 1 b",
        err("ERR wrong number of arguments for 'hset' command")
    );
    ck!(
        c,
        "HMSET h a 1 b",
        err("ERR wrong number of arguments for 'hmset' command")
    );
    ck!(c, "EXISTS h", int(0));
    // Integers, empty strings and binary data round-trip.
    for (f, v) in [
        ("i", "-9223372036854775808"),
        ("j", "007"),
        ("", ""),
        ("bin\0\r\n", "\x01\x02"),
    ] {
        query(&mut c, &["HSET", "t", f, v]).await.unwrap();
        assert_eq!(query(&mut c, &["HGET", "t", f]).await, bulk(v), "{f:?}");
    }
    ck!(c, "HSTRLEN t i", int(20));
}

#[tokio::test]
async fn counters() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "HINCRBY h n 5", int(5));
    ck!(c, "HINCRBY h n -7", int(-2));
    ck!(c, "HGET h n", bulk("-2"));
    ck!(
        c,
        "HINCRBY h n x",
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        query(&mut c, &["HSET", "h", "s", "hello", "sp", " 1"]).await,
        int(2)
    );
    ck!(c, "HINCRBY h s 1", err("ERR hash value is not an integer"));
    ck!(
        c,
        "HSET h max 9223372036854775807 min -9223372036854775808",
        int(2)
    );
    ck!(
        c,
        "HINCRBY h max 1",
        err("ERR increment or decrement would overflow")
    );
    ck!(
        c,
        "HINCRBY h min -1",
        err("ERR increment or decrement would overflow")
    );
    ck!(c, "HINCRBY h max -1", int(9223372036854775806));
    // HINCRBYFLOAT computes in long double and prints %.17Lf, as Redis on
    // x86-64: these are redis-server 7.0's own answers.
    ck!(c, "HINCRBYFLOAT h f 0.1", bulk("0.1"));
    ck!(c, "HINCRBYFLOAT h f 0.2", bulk("0.3"));
    ck!(c, "HINCRBYFLOAT h f -0.3", bulk("0"));
    ck!(c, "HINCRBYFLOAT h g 10.5", bulk("10.5"));
    ck!(c, "HINCRBYFLOAT h g 0.1", bulk("10.6"));
    ck!(c, "HINCRBYFLOAT h g 5.0e3", bulk("5010.60000000000000009"));
    ck!(
        c,
        "HINCRBYFLOAT h big 1.23e20",
        bulk("123000000000000000000")
    );
    ck!(
        c,
        "HINCRBYFLOAT h big 1e30",
        bulk("1000000000123000000018571591680")
    );
    ck!(c, "HINCRBYFLOAT h n 1.5", bulk("-0.5"));
    ck!(c, "HINCRBYFLOAT h hex 0x10", bulk("16"));
    ck!(
        c,
        "HINCRBYFLOAT h s 1",
        err("ERR hash value is not a float")
    );
    ck!(
        c,
        "HINCRBYFLOAT h sp 1",
        err("ERR hash value is not a float")
    );
    ck!(
        c,
        "HINCRBYFLOAT h f x",
        err("ERR value is not a valid float")
    );
    ck!(
        c,
        "HINCRBYFLOAT h f inf",
        err("ERR value is NaN or Infinity")
    );
    ck!(
        c,
        "HINCRBYFLOAT h f nan",
        err("ERR value is not a valid float")
    );
    ck!(c, "HSET h i inf", int(1));
    ck!(
        c,
        "HINCRBYFLOAT h i 1",
        err("ERR increment would produce NaN or Infinity")
    );
    // A failed increment on a missing key creates nothing.
    ck!(
        c,
        "HINCRBYFLOAT nokey f inf",
        err("ERR value is NaN or Infinity")
    );
    ck!(
        c,
        "HINCRBY nokey f x",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "EXISTS nokey", int(0));
}

#[tokio::test]
async fn encodings_follow_the_thresholds() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "CONFIG SET hash-max-listpack-entries 4", ok());
    ck!(c, "CONFIG SET hash-max-listpack-value 8", ok());
    ck!(c, "HSET h a 1 b 2 c 3 d 4", int(4));
    ck!(c, "OBJECT ENCODING h", bulk("listpack"));
    ck!(c, "HSET h e 5", int(1));
    ck!(c, "OBJECT ENCODING h", bulk("hashtable"));
    // One way: deleting back under the limit keeps the hashtable.
    ck!(c, "HDEL h a b c d", int(4));
    ck!(c, "OBJECT ENCODING h", bulk("hashtable"));
    ck!(c, "HGETALL h", bs(&["e", "5"]));
    // Value and field lengths: 8 stays, 9 converts.
    ck!(c, "HSET v f 12345678", int(1));
    ck!(c, "OBJECT ENCODING v", bulk("listpack"));
    ck!(c, "HSET v f 123456789", int(0));
    ck!(c, "OBJECT ENCODING v", bulk("hashtable"));
    ck!(c, "HSET k 123456789 v", int(1));
    ck!(c, "OBJECT ENCODING k", bulk("hashtable"));
    ck!(c, "HSETNX n 123456789 v", int(1));
    ck!(c, "OBJECT ENCODING n", bulk("hashtable"));
    ck!(c, "HINCRBYFLOAT x f 1234567.5", bulk("1234567.5"));
    ck!(c, "OBJECT ENCODING x", bulk("hashtable"));
    ck!(c, "HINCRBY y longfieldname 1", int(1));
    ck!(c, "OBJECT ENCODING y", bulk("hashtable"));
    ck!(c, "CONFIG SET hash-max-listpack-entries 0", ok());
    ck!(c, "HSET z a 1", int(1));
    ck!(c, "OBJECT ENCODING z", bulk("hashtable"));
    ck!(c, "CONFIG SET hash-max-listpack-entries 128", ok());
    ck!(c, "CONFIG SET hash-max-listpack-value 64", ok());
    ck!(c, "HSET w a 1", int(1));
    ck!(c, "OBJECT ENCODING w", bulk("listpack"));
    ck!(c, "TYPE w", status("hash"));
}

#[tokio::test]
async fn big_hash_reads_writes_and_deletes() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let n = 30_000;
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.cmd("HSET")
            .arg("big")
            .arg(format!("field:{i}"))
            .arg(format!("value:{i}"))
            .ignore();
    }
    let _: () = pipe.query_async(&mut c).await.unwrap();
    ck!(c, "HLEN big", int(n));
    ck!(c, "OBJECT ENCODING big", bulk("hashtable"));
    ck!(c, "HGET big field:12345", bulk("value:12345"));
    ck!(c, "HSET big field:12345 changed", int(0));
    ck!(c, "HGET big field:12345", bulk("changed"));
    ck!(c, "HINCRBY big counter 7", int(7));
    ck!(c, "HDEL big counter", int(1));
    let all = pairs(&q!(c, "HGETALL big"));
    assert_eq!(all.len(), n as usize);
    assert_eq!(all["field:29999"], "value:29999");
    let mut pipe = redis::pipe();
    for i in 0..n {
        if i % 3 != 0 {
            pipe.cmd("HDEL")
                .arg("big")
                .arg(format!("field:{i}"))
                .ignore();
        }
    }
    let _: () = pipe.query_async(&mut c).await.unwrap();
    ck!(c, "HLEN big", int(10_000));
    ck!(c, "HGET big field:3", bulk("value:3"));
    ck!(c, "HGET big field:4", nil());
    ck!(c, "HEXISTS big field:29997", int(1));
}

#[tokio::test]
async fn hrandfield_counts_and_shapes() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "HRANDFIELD nokey", nil());
    ck!(c, "HRANDFIELD nokey 5", arr(vec![]));
    ck!(c, "HRANDFIELD nokey 5 WITHVALUES", arr(vec![]));
    ck!(
        c,
        "HRANDFIELD nokey x",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "HRANDFIELD nokey 1 foo", err("ERR syntax error"));
    ck!(
        c,
        "HRANDFIELD nokey 1 WITHVALUES x",
        err("ERR syntax error")
    );
    ck!(
        c,
        "HRANDFIELD nokey -9223372036854775808",
        err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    ck!(
        c,
        "HRANDFIELD nokey -4611686018427387904 WITHVALUES",
        err("ERR value is out of range")
    );
    // Small (listpack) and large (hashtable) hashes.
    for (key, n) in [("small", 10usize), ("large", 1000)] {
        let mut pipe = redis::pipe();
        for i in 0..n {
            pipe.cmd("HSET")
                .arg(key)
                .arg(format!("f{i}"))
                .arg(format!("v{i}"))
                .ignore();
        }
        let _: () = pipe.query_async(&mut c).await.unwrap();
        let one = text(&q!(c, format!("HRANDFIELD {key}")).unwrap());
        assert!(one.starts_with('f'));
        ck!(c, format!("HRANDFIELD {key} 0"), arr(vec![]));
        // Positive count: distinct fields, at most the hash.
        for want in [1, 3, n / 2, n - 1, n, n + 5] {
            let got = sorted(&q!(c, format!("HRANDFIELD {key} {want}")));
            let unique: HashSet<&String> = got.iter().collect();
            assert_eq!(got.len(), want.min(n), "{key} {want}");
            assert_eq!(unique.len(), got.len(), "{key} {want}: repeated field");
        }
        // Negative count: exactly |count|, repeats allowed.
        let got = sorted(&q!(c, format!("HRANDFIELD {key} -{}", 3 * n)));
        assert_eq!(got.len(), 3 * n);
        // WITHVALUES in RESP2: a flat array; values belong to their fields.
        let got = pairs(&q!(c, format!("HRANDFIELD {key} 5 WITHVALUES")));
        assert_eq!(got.len(), 5);
        for (f, v) in &got {
            assert_eq!(f[1..], v[1..]);
        }
        let flat = q!(c, format!("HRANDFIELD {key} -7 WITHVALUES"));
        let Ok(Value::Array(items)) = &flat else {
            panic!("{flat:?}")
        };
        assert_eq!(items.len(), 14);
    }
    // RESP3: one [field, value] array per pick.
    let mut c3 = s.client3().await;
    for cmd in [
        "HRANDFIELD small 3 WITHVALUES",
        "HRANDFIELD large -4 WITHVALUES",
        "HRANDFIELD large 4 WITHVALUES",
    ] {
        let r = q!(c3, cmd);
        let Ok(Value::Array(items)) = &r else {
            panic!("{r:?}")
        };
        assert!(items.len() == 3 || items.len() == 4, "{cmd}");
        for item in items {
            let Value::Array(pair) = item else {
                panic!("{cmd}: {item:?}")
            };
            assert_eq!(pair.len(), 2);
            assert_eq!(text(&pair[0])[1..], text(&pair[1])[1..]);
        }
    }
    ck!(c3, "HRANDFIELD small 0", arr(vec![]));
}

/// Runs HSCAN to the end, returning (field → times returned, value of each).
async fn full_scan(
    c: &mut redis::aio::MultiplexedConnection,
    key: &str,
    extra: &str,
    mut between: impl FnMut(usize) -> Option<String>,
) -> (HashMap<String, usize>, HashMap<String, String>) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut values = HashMap::new();
    let mut cursor = "0".to_string();
    let mut round = 0;
    loop {
        let r = q!(*c, format!("HSCAN {key} {cursor} {extra}"));
        let Ok(Value::Array(parts)) = &r else {
            panic!("{r:?}")
        };
        cursor = text(&parts[0]);
        let Value::Array(items) = &parts[1] else {
            panic!("{r:?}")
        };
        for p in items.chunks(2) {
            *seen.entry(text(&p[0])).or_default() += 1;
            values.insert(text(&p[0]), text(&p[1]));
        }
        if let Some(cmd) = between(round) {
            let _ = q!(*c, cmd);
        }
        round += 1;
        if cursor == "0" {
            break;
        }
        assert!(round < 100_000, "HSCAN does not terminate");
    }
    (seen, values)
}

#[tokio::test]
async fn hscan_both_encodings() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "HSCAN nokey 0", arr(vec![b("0"), Value::Array(vec![])]));
    ck!(
        c,
        "HSCAN nokey 0 COUNT 0",
        arr(vec![b("0"), Value::Array(vec![])])
    );
    ck!(c, "HSCAN nokey x", err("ERR invalid cursor"));
    ck!(c, "HSET small a 1 b 2 c 3", int(3));
    // A listpack comes back whole, cursor 0, whatever the cursor and COUNT.
    let r = q!(c, "HSCAN small 0 COUNT 1");
    let Ok(Value::Array(parts)) = &r else {
        panic!("{r:?}")
    };
    assert_eq!(text(&parts[0]), "0");
    assert_eq!(pairs(&Ok(parts[1].clone())).len(), 3);
    ck!(
        c,
        "HSCAN small 12345 MATCH a",
        arr(vec![b("0"), Value::Array(vec![b("a"), b("1")])])
    );
    ck!(
        c,
        "HSCAN small -1 MATCH b*",
        arr(vec![b("0"), Value::Array(vec![b("b"), b("2")])])
    );
    ck!(c, "HSCAN small 0 COUNT 0", err("ERR syntax error"));
    ck!(
        c,
        "HSCAN small 0 COUNT x",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "HSCAN small 0 TYPE string", err("ERR syntax error"));
    ck!(c, "HSCAN small 0 MATCH", err("ERR syntax error"));
    ck!(
        c,
        "HSCAN small 18446744073709551616",
        err("ERR invalid cursor")
    );
    // A hashtable: cursor iteration returns every field exactly once.
    let n = 5000;
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.cmd("HSET")
            .arg("big")
            .arg(format!("f:{i}"))
            .arg(format!("v:{i}"))
            .ignore();
    }
    let _: () = pipe.query_async(&mut c).await.unwrap();
    let (seen, values) = full_scan(&mut c, "big", "COUNT 50", |_| None).await;
    assert_eq!(seen.len(), n);
    assert!(seen.values().all(|&k| k == 1));
    assert_eq!(values["f:4321"], "v:4321");
    // MATCH filters fields (and their values).
    let (seen, _) = full_scan(&mut c, "big", "MATCH f:12?", |_| None).await;
    assert_eq!(seen.len(), 10);
    // While the hash grows (and its tables split), every field present
    // from start to end is returned.
    let (seen, _) = full_scan(&mut c, "big", "", |round| {
        Some(format!(
            "HSET big new:{round}:a 1 new:{round}:b 2 new:{round}:c 3"
        ))
    })
    .await;
    for i in 0..n {
        assert!(seen.contains_key(&format!("f:{i}")), "f:{i} missed");
    }
}

#[tokio::test]
async fn wrongtype_everywhere() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SET s x", ok());
    for cmd in [
        "HSET s a 1",
        "HMSET s a 1",
        "HSETNX s a 1",
        "HGET s a",
        "HMGET s a",
        "HGETALL s",
        "HKEYS s",
        "HVALS s",
        "HDEL s a",
        "HEXISTS s a",
        "HLEN s",
        "HSTRLEN s a",
        "HINCRBY s a 1",
        "HINCRBYFLOAT s a 1",
        "HRANDFIELD s",
        "HRANDFIELD s 2",
        "HSCAN s 0",
    ] {
        ck!(c, cmd, err(WRONGTYPE));
    }
    ck!(c, "HSET h a 1", int(1));
    ck!(c, "LPUSH h x", err(WRONGTYPE));
    ck!(c, "GET h", err(WRONGTYPE));
}

#[tokio::test]
async fn resp3_shapes() {
    let s = Server::under_test();
    let mut c = s.client3().await;
    ck!(c, "HGETALL nokey", Ok(Value::Map(vec![])));
    ck!(c, "HSET h a 1", int(1));
    ck!(c, "HGETALL h", Ok(Value::Map(vec![(b("a"), b("1"))])));
    ck!(c, "HKEYS h", bs(&["a"]));
    ck!(c, "HGET h zz", nil());
    ck!(c, "HRANDFIELD nokey", nil());
    ck!(
        c,
        "HRANDFIELD h 1 WITHVALUES",
        arr(vec![Value::Array(vec![b("a"), b("1")])])
    );
}

#[tokio::test]
async fn keyspace_events_in_redis_order() {
    assert_keyevents(
        &Server::under_test(),
        &[
            "HSET h a 1 b 2",
            "HSETNX h a 3",
            "HSETNX h c 3",
            "HINCRBY h a 5",
            "HINCRBYFLOAT h b 1.5",
            "HDEL h zz",
            "HDEL h a",
            "HDEL h b c",
            "HDEL nokey a",
        ],
        &[
            ("hset", "h"),
            ("hset", "h"),
            ("hincrby", "h"),
            ("hincrbyfloat", "h"),
            ("hdel", "h"),
            ("hdel", "h"),
            ("del", "h"),
        ],
    );
}
