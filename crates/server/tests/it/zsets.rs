//! Sorted set commands through the `redis` crate: ZADD options and
//! errors, score formatting (`%.17g`, inf), ranges by rank/score/lex with
//! exclusive bounds, LIMIT and REV, pops, set operations, encodings at
//! their thresholds, RESP3 shapes, and the blocking pops.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use redis::Value;

use crate::harness::*;
use crate::{ck, q};

fn bs(v: &[&str]) -> Reply {
    arr(v.iter().map(b).collect())
}

#[tokio::test]
async fn zadd_options_and_errors() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "ZADD z 1 a 2 b", int(2));
    ck!(c, "ZADD z 3 a 4 c", int(1));
    ck!(c, "ZADD z CH 5 a 4 c 6 d", int(2));
    ck!(c, "ZADD z NX 100 a 7 e", int(1));
    ck!(c, "ZSCORE z a", bulk("5"));
    ck!(c, "ZADD z XX 9 a 9 nope", int(0));
    ck!(c, "ZSCORE z a", bulk("9"));
    ck!(c, "ZSCORE z nope", nil());
    ck!(c, "ZADD z GT CH 1 a 10 b", int(1));
    ck!(c, "ZADD z LT CH 1 a 10 b", int(1));
    ck!(c, "ZRANGE z 0 1 WITHSCORES", bs(&["a", "1", "c", "4"]));
    ck!(c, "ZADD z INCR 2.5 a", bulk("3.5"));
    ck!(c, "ZADD z INCR GT -1 a", nil());
    ck!(c, "ZADD z INCR NX 1 a", nil());
    ck!(c, "ZADD z INCR XX 1 nope", nil());
    ck!(c, "ZADD nokey XX 1 a", int(0));
    ck!(c, "EXISTS nokey", int(0));
    ck!(
        c,
        "ZADD z XX NX 1 a",
        err("ERR XX and NX options at the same time are not compatible")
    );
    for cmd in ["ZADD z GT LT 1 a", "ZADD z GT NX 1 a", "ZADD z LT NX 1 a"] {
        ck!(
            c,
            cmd,
            err("ERR GT, LT, and/or NX options at the same time are not compatible")
        );
    }
    ck!(
        c,
        "ZADD z INCR 1 a 2 b",
        err("ERR INCR option supports a single increment-element pair")
    );
    ck!(c, "ZADD z 1 a 2", err("ERR syntax error"));
    ck!(c, "ZADD z NX 1", err("ERR syntax error"));
    for bad in ["nan", "abc", "1e400", "1e", "(1"] {
        ck!(
            c,
            format!("ZADD z {bad} a"),
            err("ERR value is not a valid float")
        );
    }
    // A bad score anywhere adds nothing.
    ck!(
        c,
        "ZADD z 1 new x new2",
        err("ERR value is not a valid float")
    );
    ck!(c, "ZSCORE z new", nil());
    // strtod syntax: hex, inf.
    ck!(c, "ZADD h 0x10 a +inf b -INF c", int(3));
    ck!(
        c,
        "ZRANGE h 0 -1 WITHSCORES",
        bs(&["c", "-inf", "a", "16", "b", "inf"])
    );
    ck!(
        c,
        "ZINCRBY h -inf b",
        err("ERR resulting score is not a number (NaN)")
    );
    ck!(c, "ZINCRBY h x b", err("ERR value is not a valid float"));
    ck!(c, "ZINCRBY h 1.5 new", bulk("1.5"));
    ck!(c, "SET str x", ok());
    ck!(
        c,
        "ZADD str 1 a",
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

#[tokio::test]
async fn scores_print_like_redis_7_0() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(
        c,
        "ZADD z 1.1 a 0.1 b 1e17 c 1.5e-7 d 123456789012345678 e 3 f",
        int(6)
    );
    ck!(c, "ZSCORE z a", bulk("1.1000000000000001"));
    ck!(c, "ZSCORE z b", bulk("0.10000000000000001"));
    ck!(c, "ZSCORE z c", bulk("1e+17"));
    ck!(c, "ZSCORE z d", bulk("1.4999999999999999e-07"));
    ck!(c, "ZSCORE z e", bulk("1.2345678901234568e+17"));
    ck!(c, "ZSCORE z f", bulk("3"));
    ck!(
        c,
        "ZMSCORE z f nope a",
        arr(vec![b("3"), Value::Nil, b("1.1000000000000001")])
    );
    ck!(c, "ZMSCORE nokey a", arr(vec![Value::Nil]));
    // -0 reads back as 0 from a listpack, as -0 from a skiplist.
    ck!(c, "ZADD l -0 a", int(1));
    ck!(c, "ZSCORE l a", bulk("0"));
    ck!(c, "CONFIG SET zset-max-listpack-entries 0", ok());
    ck!(c, "ZADD sk -0 a", int(1));
    ck!(c, "OBJECT ENCODING sk", bulk("skiplist"));
    ck!(c, "ZSCORE sk a", bulk("-0"));
    ck!(c, "CONFIG SET zset-max-listpack-entries 128", ok());
}

#[tokio::test]
async fn ranges() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "ZADD z 1 a 2 b 3 c 4 d 5 e -inf lo +inf hi", int(7));
    ck!(c, "ZCARD z", int(7));
    ck!(
        c,
        "ZRANGE z 0 -1",
        bs(&["lo", "a", "b", "c", "d", "e", "hi"])
    );
    ck!(c, "ZRANGE z -2 -1 WITHSCORES", bs(&["e", "5", "hi", "inf"]));
    ck!(c, "ZRANGE z 5 2", bs(&[]));
    ck!(c, "ZRANGE z -100 1", bs(&["lo", "a"]));
    ck!(c, "ZREVRANGE z 0 1", bs(&["hi", "e"]));
    ck!(c, "ZRANGE z 0 1 REV", bs(&["hi", "e"]));
    ck!(c, "ZRANGEBYSCORE z (1 3", bs(&["b", "c"]));
    ck!(c, "ZRANGEBYSCORE z (1 (3", bs(&["b"]));
    ck!(c, "ZRANGEBYSCORE z -inf +inf LIMIT 1 2", bs(&["a", "b"]));
    ck!(c, "ZRANGEBYSCORE z -inf +inf LIMIT -1 2", bs(&[]));
    ck!(c, "ZRANGEBYSCORE z -inf +inf LIMIT 5 -1", bs(&["e", "hi"]));
    ck!(c, "ZRANGEBYSCORE z (3 (3", bs(&[]));
    ck!(c, "ZRANGEBYSCORE z 3 3 WITHSCORES", bs(&["c", "3"]));
    ck!(c, "ZREVRANGEBYSCORE z 4 (2", bs(&["d", "c"]));
    ck!(
        c,
        "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2 WITHSCORES",
        bs(&["e", "5", "d", "4"])
    );
    ck!(c, "ZRANGE z (2 4 BYSCORE", bs(&["c", "d"]));
    ck!(c, "ZRANGE z 4 (2 BYSCORE REV LIMIT 0 1", bs(&["d"]));
    ck!(c, "ZCOUNT z (1 5", int(4));
    ck!(c, "ZCOUNT z -inf inf", int(7));
    ck!(c, "ZCOUNT z x 1", err("ERR min or max is not a float"));
    ck!(c, "ZRANK z c", int(3));
    ck!(c, "ZREVRANK z c", int(3));
    ck!(c, "ZRANK z nope", nil());
    ck!(c, "ZRANK nokey a", nil());
    ck!(
        c,
        "ZRANGE z 0 -1 LIMIT 0 1",
        err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
        )
    );
    ck!(
        c,
        "ZRANGE z - + BYLEX WITHSCORES",
        err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    );
    ck!(c, "ZREVRANGE z 0 1 REV", err("ERR syntax error"));
    ck!(
        c,
        "ZRANGE z a 1",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "ZRANGE nokey 0 -1", bs(&[]));
    // Lex ranges.
    ck!(c, "ZADD l 0 a 0 b 0 c 0 d 0 e", int(5));
    ck!(c, "ZRANGEBYLEX l - +", bs(&["a", "b", "c", "d", "e"]));
    ck!(c, "ZRANGEBYLEX l [b (d", bs(&["b", "c"]));
    ck!(c, "ZRANGEBYLEX l (b [d LIMIT 1 5", bs(&["d"]));
    ck!(c, "ZREVRANGEBYLEX l [d (b", bs(&["d", "c"]));
    ck!(c, "ZRANGE l + - BYLEX REV LIMIT 0 2", bs(&["e", "d"]));
    ck!(c, "ZLEXCOUNT l (a [c", int(2));
    ck!(c, "ZLEXCOUNT l [c (c", int(0));
    ck!(
        c,
        "ZLEXCOUNT l b c",
        err("ERR min or max not valid string range item")
    );
    ck!(
        c,
        "ZRANGEBYLEX l ++ -",
        err("ERR min or max not valid string range item")
    );
    // Removal by range.
    ck!(c, "ZREMRANGEBYLEX l [b [c", int(2));
    ck!(c, "ZRANGE l 0 -1", bs(&["a", "d", "e"]));
    ck!(c, "ZREMRANGEBYSCORE z (1 3", int(2));
    ck!(c, "ZREMRANGEBYRANK z -1 -1", int(1));
    ck!(c, "ZREMRANGEBYRANK z 5 1", int(0));
    ck!(c, "ZRANGE z 0 -1", bs(&["lo", "a", "d", "e"]));
    ck!(c, "ZREMRANGEBYRANK z 0 -1", int(4));
    ck!(c, "EXISTS z", int(0));
    ck!(c, "ZREMRANGEBYRANK z 0 -1", int(0));
}

#[tokio::test]
async fn zrangestore_and_set_operations() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "ZADD a 1 x 2 y 3 z", int(3));
    ck!(c, "ZADD b 10 y 20 z 30 w", int(3));
    ck!(c, "SADD s y w", int(2));
    ck!(
        c,
        "ZUNION 2 a b WITHSCORES",
        bs(&["x", "1", "y", "12", "z", "23", "w", "30"])
    );
    // Weights, AGGREGATE, NaN scores and ZINTERCARD's LIMIT are the
    // operation's own logic: unit tests in storage/zset_algebra.rs. Here,
    // what the command adds: its keys, plain sets scored 1, the reply.
    ck!(c, "ZINTER 3 a b s WITHSCORES", bs(&["y", "13"]));
    ck!(c, "ZDIFF 2 b s", bs(&["z"]));
    ck!(c, "ZINTERCARD 2 a b LIMIT 1", int(1));
    ck!(
        c,
        "ZINTERCARD 1 a LIMIT -1",
        err("ERR LIMIT can't be negative")
    );
    ck!(c, "ZUNIONSTORE out 2 a b", int(4));
    ck!(
        c,
        "ZRANGE out 0 -1 WITHSCORES",
        bs(&["x", "1", "y", "12", "z", "23", "w", "30"])
    );
    ck!(c, "ZINTERSTORE out 2 a nokey", int(0));
    ck!(c, "EXISTS out", int(0));
    ck!(c, "ZDIFFSTORE out 2 b a", int(1));
    ck!(c, "ZRANGE out 0 -1 WITHSCORES", bs(&["w", "30"]));
    ck!(
        c,
        "ZUNION 0 a",
        err("ERR at least 1 input key is needed for 'zunion' command")
    );
    ck!(
        c,
        "ZUNIONSTORE out 0 a",
        err("ERR at least 1 input key is needed for 'zunionstore' command")
    );
    ck!(c, "ZUNION 3 a b", err("ERR syntax error"));
    ck!(c, "ZUNION 2 a b WEIGHTS 1", err("ERR syntax error"));
    ck!(
        c,
        "ZUNION 2 a b WEIGHTS 1 x",
        err("ERR weight value is not a float")
    );
    ck!(
        c,
        "ZUNIONSTORE out 2 a b WITHSCORES",
        err("ERR syntax error")
    );
    ck!(c, "ZDIFF 2 a b WEIGHTS 1 2", err("ERR syntax error"));
    ck!(c, "SET str v", ok());
    ck!(
        c,
        "ZUNION 2 a str",
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    // ZRANGESTORE.
    ck!(c, "ZRANGESTORE dst a 0 1", int(2));
    ck!(c, "ZRANGE dst 0 -1 WITHSCORES", bs(&["x", "1", "y", "2"]));
    ck!(c, "ZRANGESTORE dst a +inf (1 BYSCORE REV LIMIT 0 1", int(1));
    ck!(c, "ZRANGE dst 0 -1", bs(&["z"]));
    ck!(c, "ZRANGESTORE dst a [y + BYLEX", int(2));
    ck!(c, "ZRANGESTORE dst nokey 0 -1", int(0));
    ck!(c, "EXISTS dst", int(0));
    ck!(
        c,
        "ZRANGESTORE dst a 0 -1 WITHSCORES",
        err("ERR syntax error")
    );
}

#[tokio::test]
async fn pops() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "ZADD z 1 a 2 b 3 c 4 d", int(4));
    ck!(c, "ZPOPMIN z", bs(&["a", "1"]));
    ck!(c, "ZPOPMAX z 2", bs(&["d", "4", "c", "3"]));
    ck!(c, "ZPOPMIN z 0", bs(&[]));
    ck!(
        c,
        "ZPOPMIN z -1",
        err("ERR value is out of range, must be positive")
    );
    ck!(c, "ZPOPMIN z 1 2", err("ERR syntax error"));
    ck!(c, "ZPOPMIN nokey", bs(&[]));
    ck!(c, "ZPOPMIN z 10", bs(&["b", "2"]));
    ck!(c, "EXISTS z", int(0));
    ck!(c, "ZADD z 1 a 2 b 3 c", int(3));
    ck!(c, "ZMPOP 1 nokey MIN", nil());
    ck!(
        c,
        "ZMPOP 2 nokey z MAX COUNT 2",
        arr(vec![
            b("z"),
            Value::Array(vec![
                Value::Array(vec![b("c"), b("3")]),
                Value::Array(vec![b("b"), b("2")]),
            ]),
        ])
    );
    ck!(
        c,
        "ZMPOP 0 z MIN",
        err("ERR numkeys should be greater than 0")
    );
    ck!(
        c,
        "ZMPOP 1 z MIN COUNT 0",
        err("ERR count should be greater than 0")
    );
    ck!(c, "ZMPOP 2 z MIN", err("ERR syntax error"));
    ck!(c, "ZMPOP 1 z FOO", err("ERR syntax error"));
    ck!(c, "BZPOPMIN nokey z 0", bs(&["z", "a", "1"]));
    ck!(c, "EXISTS z", int(0));
    ck!(c, "BZPOPMIN z -1", err("ERR timeout is negative"));
    ck!(
        c,
        "BZPOPMIN z x",
        err("ERR timeout is not a float or out of range")
    );
}

#[tokio::test]
async fn zrandmember() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "ZRANDMEMBER nokey", nil());
    ck!(c, "ZRANDMEMBER nokey 5", bs(&[]));
    ck!(c, "ZADD z 1 a 2 b 3 c", int(3));
    ck!(c, "ZRANDMEMBER z 0", bs(&[]));
    ck!(c, "ZRANDMEMBER z 1 foo", err("ERR syntax error"));
    ck!(
        c,
        "ZRANDMEMBER z 9223372036854775807 WITHSCORES",
        err("ERR value is out of range")
    );
    let Ok(Value::Array(v)) = q!(c, "ZRANDMEMBER z -10 WITHSCORES") else {
        panic!()
    };
    assert_eq!(v.len(), 20);
    for p in v.chunks(2) {
        let (m, s) = (text(&p[0]), text(&p[1]));
        assert_eq!(s, ((m.as_bytes()[0] - b'a' + 1) as i64).to_string());
    }
    let Ok(Value::Array(v)) = q!(c, "ZRANDMEMBER z 2") else {
        panic!()
    };
    let set: HashSet<String> = v.iter().map(text).collect();
    assert_eq!(set.len(), 2);
    let Ok(Value::Array(v)) = q!(c, "ZRANDMEMBER z 10") else {
        panic!()
    };
    assert_eq!(v.len(), 3);
}

#[tokio::test]
async fn encodings_switch_at_thresholds() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "CONFIG SET zset-max-listpack-entries 4", ok());
    ck!(c, "CONFIG SET zset-max-listpack-value 8", ok());
    ck!(c, "ZADD z 1 a 2 b 3 c 4 d", int(4));
    ck!(c, "OBJECT ENCODING z", bulk("listpack"));
    ck!(c, "ZADD z 5 e", int(1));
    ck!(c, "OBJECT ENCODING z", bulk("skiplist"));
    ck!(c, "ZRANGE z 0 -1", bs(&["a", "b", "c", "d", "e"]));
    // Removing never converts back.
    ck!(c, "ZREM z a b c", int(3));
    ck!(c, "OBJECT ENCODING z", bulk("skiplist"));
    ck!(c, "ZADD v 1 123456789", int(1));
    ck!(c, "OBJECT ENCODING v", bulk("skiplist"));
    ck!(c, "ZADD w 1 12345678", int(1));
    ck!(c, "OBJECT ENCODING w", bulk("listpack"));
    // Store results are listpacks again when small.
    ck!(c, "ZUNIONSTORE u 1 z", int(2));
    ck!(c, "OBJECT ENCODING u", bulk("listpack"));
    ck!(c, "CONFIG SET zset-max-listpack-entries 128", ok());
    ck!(c, "CONFIG SET zset-max-listpack-value 64", ok());
}

#[tokio::test]
async fn large_skiplist_and_zscan() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let n = 5000;
    let args: Vec<String> = (0..n).map(|i| format!("{} m{i:05}", i * 2)).collect();
    ck!(c, format!("ZADD z {}", args.join(" ")), int(n));
    ck!(c, "OBJECT ENCODING z", bulk("skiplist"));
    ck!(c, "ZRANK z m04000", int(4000));
    ck!(c, "ZREVRANK z m04000", int(999));
    ck!(c, "ZCOUNT z (100 200", int(50));
    ck!(
        c,
        "ZRANGE z 2500 2501 WITHSCORES",
        bs(&["m02500", "5000", "m02501", "5002"])
    );
    ck!(
        c,
        "ZRANGEBYSCORE z (9990 +inf",
        bs(&["m04996", "m04997", "m04998", "m04999"])
    );
    ck!(c, "ZREMRANGEBYRANK z 100 4899", int(4800));
    ck!(c, "ZCARD z", int(200));
    ck!(c, "ZRANGE z 99 100", bs(&["m00099", "m04900"]));
    // ZSCAN covers every member present throughout while the set grows.
    let mut seen = HashSet::new();
    let mut cursor = "0".to_string();
    let mut round = 0;
    loop {
        let r = q!(c, format!("ZSCAN z {cursor} COUNT 5")).unwrap();
        let Value::Array(parts) = r else { panic!() };
        cursor = text(&parts[0]);
        let Value::Array(items) = &parts[1] else {
            panic!()
        };
        for p in items.chunks(2) {
            seen.insert(text(&p[0]));
        }
        q!(c, format!("ZADD z {round} new{round}")).unwrap();
        round += 1;
        if cursor == "0" {
            break;
        }
    }
    for i in (0..100).chain(4900..5000) {
        assert!(seen.contains(&format!("m{i:05}")), "m{i:05}");
    }
    ck!(c, "ZADD small 1.5 a", int(1));
    ck!(
        c,
        "ZSCAN small 0",
        arr(vec![b("0"), Value::Array(vec![b("a"), b("1.5")])])
    );
    ck!(c, "ZSCAN small 0 COUNT 0", err("ERR syntax error"));
}

#[tokio::test]
async fn resp3_shapes() {
    let s = Server::under_test();
    let mut c = s.client3().await;
    ck!(c, "ZADD z 1 a 2.5 b", int(2));
    ck!(c, "ZSCORE z b", Ok(Value::Double(2.5)));
    ck!(c, "ZINCRBY z 1 a", Ok(Value::Double(2.0)));
    let pair = |m: &str, s: f64| Value::Array(vec![b(m), Value::Double(s)]);
    ck!(
        c,
        "ZRANGE z 0 -1 WITHSCORES",
        arr(vec![pair("a", 2.0), pair("b", 2.5)])
    );
    ck!(c, "ZRANGE z 0 -1", bs(&["a", "b"]));
    ck!(
        c,
        "ZUNION 1 z WITHSCORES",
        arr(vec![pair("a", 2.0), pair("b", 2.5)])
    );
    // ZPOPMIN without COUNT is flat, with COUNT nested.
    ck!(c, "ZPOPMIN z", arr(vec![b("a"), Value::Double(2.0)]));
    ck!(c, "ZPOPMAX z 1", arr(vec![pair("b", 2.5)]));
    ck!(c, "ZMPOP 1 z MIN", nil());
    ck!(c, "ZMSCORE z a", arr(vec![Value::Nil]));
}

#[tokio::test]
async fn blocking_pop_times_out() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let t = Instant::now();
    ck!(c, "BZPOPMIN nokey 0.2", Ok(Value::Nil));
    assert!(t.elapsed() >= Duration::from_millis(150));
    ck!(c, "BZMPOP 0.1 1 nokey MIN", Ok(Value::Nil));
}

#[tokio::test]
async fn blocking_pop_woken_by_zadd() {
    let s = Server::under_test();
    let mut waiter = s.client().await;
    let mut c = s.client().await;
    let pop = tokio::spawn(async move { q!(waiter, "BZPOPMAX z1 z2 5") });
    tokio::time::sleep(Duration::from_millis(200)).await;
    ck!(c, "ZADD z2 1 a 2 b", int(2));
    let got = pop.await.unwrap();
    assert_eq!(got, bs(&["z2", "b", "2"]));
    ck!(c, "ZRANGE z2 0 -1", bs(&["a"]));
    // BZMPOP wakes the same way and honours COUNT.
    let mut waiter = s.client().await;
    let pop = tokio::spawn(async move { q!(waiter, "BZMPOP 5 1 z3 MIN COUNT 5") });
    tokio::time::sleep(Duration::from_millis(200)).await;
    ck!(c, "ZADD z3 1 a 2 b", int(2));
    let got = pop.await.unwrap();
    assert_eq!(
        got,
        arr(vec![
            b("z3"),
            Value::Array(vec![
                Value::Array(vec![b("a"), b("1")]),
                Value::Array(vec![b("b"), b("2")]),
            ]),
        ])
    );
    ck!(c, "EXISTS z3", int(0));
}
