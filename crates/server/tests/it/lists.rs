//! List commands through the `redis` crate: pushes and pops with counts,
//! ranges and indexes, middle edits, LPOS, moves, LMPOP, WRONGTYPE, node
//! limits, a randomized run against a model, RESP3 shapes and the blocking
//! commands (timeouts, wake-ups, FIFO order of blocked clients).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use redis::Value;

use crate::harness::*;
use crate::{ck, q};

/// An array of bulk strings.
fn bs(items: &[&str]) -> Reply {
    arr(items.iter().map(b).collect())
}

fn ints(items: &[i64]) -> Reply {
    arr(items.iter().map(|&n| Value::Int(n)).collect())
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[tokio::test]
async fn push_pop_and_empty_key_deletion() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "LPUSH l a b c", int(3));
    ck!(c, "RPUSH l d e", int(5));
    ck!(c, "LRANGE l 0 -1", bs(&["c", "b", "a", "d", "e"]));
    ck!(c, "LLEN l", int(5));
    ck!(c, "LPUSHX l z", int(6));
    ck!(c, "RPUSHX l y", int(7));
    ck!(c, "LPUSHX nokey z", int(0));
    ck!(c, "RPUSHX nokey z", int(0));
    ck!(c, "EXISTS nokey", int(0));
    ck!(c, "LPOP l", bulk("z"));
    ck!(c, "RPOP l", bulk("y"));
    ck!(c, "LPOP l 2", bs(&["c", "b"]));
    ck!(c, "RPOP l 2", bs(&["e", "d"]));
    ck!(c, "LPOP l 0", arr(vec![]));
    ck!(c, "LLEN l", int(1));
    // More than there is: everything, and the key goes away.
    ck!(c, "RPOP l 10", bs(&["a"]));
    ck!(c, "EXISTS l", int(0));
    ck!(c, "LLEN l", int(0));
    ck!(c, "LPOP l", nil());
    ck!(c, "LPOP l 0", nil());
    ck!(c, "RPOP l 3", nil());
    // Counts.
    let range = "ERR value is out of range, must be positive";
    ck!(c, "LPOP l -1", err(range));
    ck!(c, "RPOP l abc", err(range));
    ck!(
        c,
        "LPOP l 1 2",
        err("ERR wrong number of arguments for 'lpop' command")
    );
    ck!(
        c,
        "RPOP l 1 2",
        err("ERR wrong number of arguments for 'rpop' command")
    );
    ck!(
        c,
        "LPUSH l",
        err("ERR wrong number of arguments for 'lpush' command")
    );
    // Integers and binary-safe values come back as pushed.
    let big = "x".repeat(20_000);
    for v in [
        "0",
        "-1",
        "47",
        "48",
        "-129",
        "32768",
        "9223372036854775807",
        "-9223372036854775808",
        "01",
        "+1",
        "1.5",
        "",
    ] {
        let got = query(&mut c, &["RPUSH", "ints", v]).await;
        assert!(got.is_ok(), "{got:?}");
    }
    query(&mut c, &["RPUSH", "ints", big.as_str(), "\0\r\n"])
        .await
        .unwrap();
    ck!(
        c,
        "LRANGE ints 0 11",
        bs(&[
            "0",
            "-1",
            "47",
            "48",
            "-129",
            "32768",
            "9223372036854775807",
            "-9223372036854775808",
            "01",
            "+1",
            "1.5",
            ""
        ])
    );
    assert_eq!(query(&mut c, &["LINDEX", "ints", "12"]).await, bulk(&big));
    assert_eq!(query(&mut c, &["RPOP", "ints"]).await, bulk("\0\r\n"));
}

#[tokio::test]
async fn ranges_and_indexes() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "RPUSH l a b c d e", int(5));
    ck!(c, "LRANGE l 1 3", bs(&["b", "c", "d"]));
    ck!(c, "LRANGE l -2 -1", bs(&["d", "e"]));
    ck!(c, "LRANGE l -100 100", bs(&["a", "b", "c", "d", "e"]));
    ck!(c, "LRANGE l 3 1", arr(vec![]));
    ck!(c, "LRANGE l 5 10", arr(vec![]));
    ck!(c, "LRANGE l -1 -2", arr(vec![]));
    ck!(c, "LRANGE nokey 0 -1", arr(vec![]));
    ck!(
        c,
        "LRANGE l 0 x",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "LINDEX l 0", bulk("a"));
    ck!(c, "LINDEX l -1", bulk("e"));
    ck!(c, "LINDEX l 5", nil());
    ck!(c, "LINDEX l -6", nil());
    ck!(c, "LINDEX nokey 0", nil());
    ck!(c, "LINDEX nokey x", nil());
    ck!(
        c,
        "LINDEX l x",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "LSET l 1 B", ok());
    ck!(c, "LSET l -1 E", ok());
    ck!(c, "LSET l 5 x", err("ERR index out of range"));
    ck!(c, "LSET l -6 x", err("ERR index out of range"));
    ck!(c, "LSET nokey 0 x", err("ERR no such key"));
    ck!(
        c,
        "LSET l x x",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "LRANGE l 0 -1", bs(&["a", "B", "c", "d", "E"]));
    // LINSERT
    ck!(c, "LINSERT l BEFORE c x", int(6));
    ck!(c, "LINSERT l after E y", int(7));
    ck!(c, "LINSERT l BEFORE nope z", int(-1));
    ck!(c, "LINSERT nokey BEFORE a z", int(0));
    ck!(c, "EXISTS nokey", int(0));
    ck!(c, "LINSERT l MIDDLE a z", err("ERR syntax error"));
    ck!(c, "LRANGE l 0 -1", bs(&["a", "B", "x", "c", "d", "E", "y"]));
    // LREM: from the head, from the tail, all.
    ck!(c, "DEL l", int(1));
    ck!(c, "RPUSH l a b a c a b a", int(7));
    ck!(c, "LREM l 2 a", int(2));
    ck!(c, "LRANGE l 0 -1", bs(&["b", "c", "a", "b", "a"]));
    ck!(c, "LREM l -1 b", int(1));
    ck!(c, "LRANGE l 0 -1", bs(&["b", "c", "a", "a"]));
    ck!(c, "LREM l 0 a", int(2));
    ck!(c, "LREM l 0 zz", int(0));
    ck!(c, "LREM nokey 0 a", int(0));
    ck!(
        c,
        "LREM l x a",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "LREM l 0 b", int(1));
    ck!(c, "LREM l 0 c", int(1));
    ck!(c, "EXISTS l", int(0));
    // LTRIM
    ck!(c, "RPUSH l 0 1 2 3 4 5 6 7 8 9", int(10));
    ck!(c, "LTRIM l 2 -3", ok());
    ck!(c, "LRANGE l 0 -1", bs(&["2", "3", "4", "5", "6", "7"]));
    ck!(c, "LTRIM l -100 100", ok());
    ck!(c, "LLEN l", int(6));
    ck!(c, "LTRIM l 1 1", ok());
    ck!(c, "LRANGE l 0 -1", bs(&["3"]));
    ck!(c, "LTRIM l 5 1", ok());
    ck!(c, "EXISTS l", int(0));
    ck!(c, "LTRIM nokey 0 1", ok());
    ck!(
        c,
        "LTRIM l a b",
        err("ERR value is not an integer or out of range")
    );
}

#[tokio::test]
async fn lpos_options_and_errors() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "RPUSH l a b c d 1 2 3 4 3 3 3", int(11));
    ck!(c, "LPOS l 3", int(6));
    ck!(c, "LPOS l zz", nil());
    ck!(c, "LPOS l 3 COUNT 0", ints(&[6, 8, 9, 10]));
    ck!(c, "LPOS l 3 COUNT 2", ints(&[6, 8]));
    ck!(c, "LPOS l 3 RANK 2", int(8));
    ck!(c, "LPOS l 3 RANK -1", int(10));
    ck!(c, "LPOS l 3 RANK -2 COUNT 2", ints(&[9, 8]));
    ck!(c, "LPOS l 3 RANK 5", nil());
    ck!(c, "LPOS l 3 COUNT 0 MAXLEN 7", ints(&[6]));
    ck!(c, "LPOS l 3 RANK -1 MAXLEN 1", int(10));
    ck!(c, "LPOS l zz COUNT 5", arr(vec![]));
    ck!(c, "LPOS nokey a", nil());
    ck!(c, "LPOS nokey a COUNT 1", arr(vec![]));
    ck!(
        c,
        "LPOS l a RANK 0",
        err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
    );
    ck!(c, "LPOS l a COUNT -1", err("ERR COUNT can't be negative"));
    ck!(c, "LPOS l a COUNT x", err("ERR COUNT can't be negative"));
    ck!(c, "LPOS l a MAXLEN -1", err("ERR MAXLEN can't be negative"));
    ck!(
        c,
        "LPOS l a RANK x",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "LPOS l a RANK", err("ERR syntax error"));
    ck!(c, "LPOS l a FOO 1", err("ERR syntax error"));
    // Options are checked before the key.
    ck!(
        c,
        "LPOS nokey a RANK 0",
        err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
    );
    ck!(c, "SET s x", ok());
    ck!(c, "LPOS s a", err(WRONGTYPE));
}

#[tokio::test]
async fn moves_and_multi_pops() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "RPUSH src a b c", int(3));
    ck!(c, "LMOVE src dst LEFT RIGHT", bulk("a"));
    ck!(c, "LMOVE src dst RIGHT LEFT", bulk("c"));
    ck!(c, "LRANGE dst 0 -1", bs(&["c", "a"]));
    ck!(c, "RPOPLPUSH src dst", bulk("b"));
    ck!(c, "EXISTS src", int(0));
    ck!(c, "LRANGE dst 0 -1", bs(&["b", "c", "a"]));
    ck!(c, "LMOVE src dst LEFT LEFT", nil());
    ck!(c, "RPOPLPUSH src dst", nil());
    // Rotation on one key.
    ck!(c, "RPOPLPUSH dst dst", bulk("a"));
    ck!(c, "LRANGE dst 0 -1", bs(&["a", "b", "c"]));
    ck!(c, "LMOVE dst dst LEFT RIGHT", bulk("a"));
    ck!(c, "LRANGE dst 0 -1", bs(&["b", "c", "a"]));
    ck!(c, "LMOVE dst dst UP LEFT", err("ERR syntax error"));
    // WRONGTYPE on either side leaves the source untouched.
    ck!(c, "SET s x", ok());
    ck!(c, "LMOVE dst s LEFT LEFT", err(WRONGTYPE));
    ck!(c, "LMOVE s dst LEFT LEFT", err(WRONGTYPE));
    ck!(c, "RPOPLPUSH dst s", err(WRONGTYPE));
    ck!(c, "LLEN dst", int(3));
    // LMPOP
    ck!(c, "RPUSH l2 1 2 3 4", int(4));
    ck!(
        c,
        "LMPOP 2 nokey l2 LEFT",
        arr(vec![b("l2"), Value::Array(vec![b("1")])])
    );
    ck!(
        c,
        "LMPOP 2 nokey l2 RIGHT COUNT 2",
        arr(vec![b("l2"), Value::Array(vec![b("4"), b("3")])])
    );
    ck!(
        c,
        "LMPOP 1 l2 LEFT COUNT 10",
        arr(vec![b("l2"), Value::Array(vec![b("2")])])
    );
    ck!(c, "EXISTS l2", int(0));
    ck!(c, "LMPOP 1 l2 LEFT", nil());
    let numkeys = "ERR numkeys should be greater than 0";
    ck!(c, "LMPOP 0 l LEFT", err(numkeys));
    ck!(c, "LMPOP -1 l LEFT", err(numkeys));
    ck!(c, "LMPOP x l LEFT", err(numkeys));
    ck!(c, "LMPOP 3 l LEFT", err("ERR syntax error"));
    ck!(c, "LMPOP 1 l MIDDLE", err("ERR syntax error"));
    ck!(
        c,
        "LMPOP 1 l LEFT COUNT 0",
        err("ERR count should be greater than 0")
    );
    ck!(
        c,
        "LMPOP 1 l LEFT COUNT -1",
        err("ERR count should be greater than 0")
    );
    ck!(c, "LMPOP 1 l LEFT COUNT", err("ERR syntax error"));
    ck!(c, "LMPOP 1 l LEFT COUNT 1 COUNT 1", err("ERR syntax error"));
    ck!(c, "LMPOP 2 nokey s LEFT", err(WRONGTYPE));
}

#[tokio::test]
async fn wrongtype_everywhere() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SET s x", ok());
    for cmd in [
        "LPUSH s a",
        "RPUSH s a",
        "LPUSHX s a",
        "RPUSHX s a",
        "LPOP s",
        "RPOP s 2",
        "LLEN s",
        "LRANGE s 0 -1",
        "LINDEX s 0",
        "LSET s 0 a",
        "LREM s 0 a",
        "LTRIM s 0 1",
        "LINSERT s BEFORE a b",
        "LPOS s a",
        "LMOVE s d LEFT LEFT",
        "RPOPLPUSH s d",
        "LMPOP 1 s LEFT",
        "BLPOP s 1",
        "BRPOP nokey s 1",
        "BLMOVE s d LEFT LEFT 1",
        "BRPOPLPUSH s d 1",
        "BLMPOP 1 1 s LEFT",
    ] {
        ck!(c, cmd, err(WRONGTYPE));
    }
    ck!(c, "GET s", bulk("x"));
    ck!(c, "RPUSH l a", int(1));
    ck!(c, "GET l", err(WRONGTYPE));
    ck!(c, "TYPE l", status("list"));
    ck!(c, "OBJECT ENCODING l", bulk("quicklist"));
}

/// A seeded random run of list commands against a `VecDeque` model, with
/// small nodes so that edits cross node boundaries.
#[tokio::test]
async fn random_operations_match_a_model() {
    let s = Server::under_test();
    let mut c = s.client().await;
    for fill in ["3", "-1"] {
        ck!(c, format!("CONFIG SET list-max-listpack-size {fill}"), ok());
        let _ = q!(c, "DEL l");
        let mut m: VecDeque<String> = VecDeque::new();
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for step in 0..1500 {
            let v = match rnd(4) {
                0 => rnd(50).to_string(),
                1 => format!("v{}", rnd(20)),
                2 => "x".repeat(rnd(300) as usize),
                _ => (rnd(1 << 40) as i64 - (1 << 39)).to_string(),
            };
            let len = m.len() as i64;
            match rnd(10) {
                0 | 1 => {
                    let got = as_int(&query(&mut c, &["LPUSH", "l", &v]).await);
                    m.push_front(v);
                    assert_eq!(got, m.len() as i64);
                }
                2 | 3 => {
                    query(&mut c, &["RPUSH", "l", &v]).await.unwrap();
                    m.push_back(v);
                }
                4 => {
                    let got = query(&mut c, &["LPOP", "l"]).await;
                    assert_eq!(got, m.pop_front().map_or(nil(), bulk));
                }
                5 => {
                    let got = query(&mut c, &["RPOP", "l"]).await;
                    assert_eq!(got, m.pop_back().map_or(nil(), bulk));
                }
                6 if len > 0 => {
                    let i = rnd(len as u64) as usize;
                    ck!(c, format!("LSET l {i} set{step}"), ok());
                    m[i] = format!("set{step}");
                }
                7 if len > 0 => {
                    let i = rnd(len as u64) as usize;
                    let pivot = m[i].clone();
                    let got = query(&mut c, &["LINSERT", "l", "BEFORE", &pivot, &v]).await;
                    let at = m.iter().position(|x| *x == pivot).unwrap();
                    m.insert(at, v);
                    assert_eq!(got, int(m.len() as i64));
                }
                8 => {
                    let count = rnd(3) as i64 - 1;
                    let target = format!("v{}", rnd(20));
                    let got =
                        as_int(&query(&mut c, &["LREM", "l", &count.to_string(), &target]).await);
                    let mut removed = 0;
                    let limit = if count == 0 {
                        usize::MAX
                    } else {
                        count.unsigned_abs() as usize
                    };
                    if count < 0 {
                        let mut i = m.len();
                        while i > 0 && removed < limit {
                            i -= 1;
                            if m[i] == target {
                                m.remove(i);
                                removed += 1;
                            }
                        }
                    } else {
                        let mut i = 0;
                        while i < m.len() && removed < limit {
                            if m[i] == target {
                                m.remove(i);
                                removed += 1;
                            } else {
                                i += 1;
                            }
                        }
                    }
                    assert_eq!(got, removed as i64, "LREM {count} {target}");
                }
                _ if len > 40 => {
                    ck!(c, "LTRIM l 3 -4", ok());
                    m = m.iter().skip(3).take(m.len() - 6).cloned().collect();
                }
                _ => {}
            }
            if step % 100 == 0 || m.is_empty() {
                let want: Vec<Value> = m.iter().map(b).collect();
                ck!(c, "LRANGE l 0 -1", arr(want));
                ck!(c, "EXISTS l", int(!m.is_empty() as i64));
            }
            if !m.is_empty() && step % 7 == 0 {
                let i = rnd(m.len() as u64) as i64;
                ck!(c, format!("LINDEX l {i}"), bulk(&m[i as usize]));
                ck!(
                    c,
                    format!("LINDEX l {}", i - m.len() as i64),
                    bulk(&m[i as usize])
                );
            }
        }
        let want: Vec<Value> = m.iter().map(b).collect();
        ck!(c, "LRANGE l 0 -1", arr(want));
    }
}

#[tokio::test]
async fn big_list_spans_many_nodes() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let mut pipe = redis::pipe();
    for i in 0..20_000 {
        pipe.cmd("RPUSH")
            .arg("big")
            .arg(format!("element-{i}"))
            .ignore();
    }
    let _: () = pipe.query_async(&mut c).await.unwrap();
    ck!(c, "LLEN big", int(20_000));
    ck!(c, "LINDEX big 12345", bulk("element-12345"));
    ck!(c, "LINDEX big -1", bulk("element-19999"));
    ck!(
        c,
        "LRANGE big 9998 10001",
        bs(&[
            "element-9998",
            "element-9999",
            "element-10000",
            "element-10001"
        ])
    );
    ck!(c, "LPOS big element-15000", int(15_000));
    ck!(c, "LPOS big element-15000 MAXLEN 100", nil());
    ck!(c, "LINSERT big AFTER element-7000 inserted", int(20_001));
    ck!(c, "LINDEX big 7001", bulk("inserted"));
    ck!(c, "LREM big 0 inserted", int(1));
    ck!(c, "LTRIM big 100 -101", ok());
    ck!(c, "LLEN big", int(19_800));
    ck!(c, "LINDEX big 0", bulk("element-100"));
    ck!(c, "LINDEX big -1", bulk("element-19899"));
    ck!(c, "OBJECT ENCODING big", bulk("quicklist"));
}

#[tokio::test]
async fn resp3_shapes() {
    let s = Server::under_test();
    let mut c = s.client3().await;
    ck!(c, "LPOP nokey", nil());
    ck!(c, "LPOP nokey 2", nil());
    ck!(c, "LPOS nokey a", nil());
    ck!(c, "LMPOP 1 nokey LEFT", nil());
    ck!(c, "RPUSH l a b", int(2));
    ck!(c, "LPOP l 0", arr(vec![]));
    ck!(
        c,
        "LMPOP 1 l LEFT COUNT 5",
        arr(vec![b("l"), Value::Array(vec![b("a"), b("b")])])
    );
    ck!(c, "BLPOP nokey 0.05", nil());
    ck!(c, "BLMOVE nokey x LEFT LEFT 0.05", nil());
    ck!(c, "BRPOPLPUSH nokey x 0.05", nil());
}

#[tokio::test]
async fn blocking_served_at_once_and_errors() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "RPUSH b a1 a2", int(2));
    ck!(c, "BLPOP nokey b 0", bs(&["b", "a1"]));
    ck!(c, "BRPOP nokey b 0", bs(&["b", "a2"]));
    ck!(c, "EXISTS b", int(0));
    ck!(c, "RPUSH b x y z", int(3));
    ck!(
        c,
        "BLMPOP 0 2 nokey b RIGHT COUNT 2",
        arr(vec![b("b"), Value::Array(vec![b("z"), b("y")])])
    );
    ck!(c, "BLMOVE b d LEFT RIGHT 0", bulk("x"));
    ck!(c, "BRPOPLPUSH d d2 0", bulk("x"));
    ck!(c, "LRANGE d2 0 -1", bs(&["x"]));
    ck!(c, "BLPOP b -1", err("ERR timeout is negative"));
    ck!(
        c,
        "BLPOP b abc",
        err("ERR timeout is not a float or out of range")
    );
    ck!(c, "BLMOVE b d UP LEFT 0", err("ERR syntax error"));
    ck!(
        c,
        "BLMOVE b d LEFT LEFT x",
        err("ERR timeout is not a float or out of range")
    );
    ck!(
        c,
        "BLMPOP 0 0 b LEFT",
        err("ERR numkeys should be greater than 0")
    );
    ck!(
        c,
        "BLMPOP x 1 b LEFT",
        err("ERR timeout is not a float or out of range")
    );
    ck!(
        c,
        "BLMPOP 0 1 b LEFT COUNT 0",
        err("ERR count should be greater than 0")
    );
}

#[tokio::test]
async fn blocking_times_out() {
    let s = Server::under_test();
    let mut c = s.client().await;
    for (cmd, min_ms) in [
        ("BLPOP nokey 0.3", 250),
        ("BRPOP nokey other 0.1", 80),
        ("BLMPOP 0.1 1 nokey LEFT", 80),
    ] {
        let t = Instant::now();
        ck!(c, cmd, nil());
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(min_ms), "{cmd}: {took:?}");
        assert!(took < Duration::from_secs(3), "{cmd}: {took:?}");
    }
    for cmd in ["BLMOVE nokey d LEFT LEFT 0.1", "BRPOPLPUSH nokey d 0.1"] {
        let t = Instant::now();
        ck!(c, cmd, nil());
        assert!(t.elapsed() >= Duration::from_millis(80), "{cmd}");
    }
    ck!(c, "EXISTS d", int(0));
}

#[tokio::test]
async fn blocking_woken_by_push_from_another_client() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let mut waiter = s.client().await;
    let pop = tokio::spawn(async move { q!(waiter, "BLPOP k1 k2 5") });
    tokio::time::sleep(Duration::from_millis(200)).await;
    ck!(c, "RPUSH k2 v1 v2", int(2));
    assert_eq!(pop.await.unwrap(), bs(&["k2", "v1"]));
    ck!(c, "LRANGE k2 0 -1", bs(&["v2"]));
    // Forever (timeout 0), woken by LPUSH.
    let mut waiter = s.client().await;
    let pop = tokio::spawn(async move { q!(waiter, "BRPOP k3 0") });
    tokio::time::sleep(Duration::from_millis(200)).await;
    ck!(c, "LPUSH k3 only", int(1));
    assert_eq!(pop.await.unwrap(), bs(&["k3", "only"]));
    ck!(c, "EXISTS k3", int(0));
    // BLMOVE woken by a push, element lands in the destination.
    let mut waiter = s.client().await;
    let mv = tokio::spawn(async move { q!(waiter, "BLMOVE src dst RIGHT LEFT 5") });
    tokio::time::sleep(Duration::from_millis(200)).await;
    ck!(c, "RPUSH src m", int(1));
    assert_eq!(mv.await.unwrap(), bulk("m"));
    ck!(c, "LRANGE dst 0 -1", bs(&["m"]));
    ck!(c, "EXISTS src", int(0));
    // BLMPOP woken by a push, with COUNT.
    let mut waiter = s.client().await;
    let mp = tokio::spawn(async move { q!(waiter, "BLMPOP 5 2 m1 m2 LEFT COUNT 3") });
    tokio::time::sleep(Duration::from_millis(200)).await;
    ck!(c, "RPUSH m2 a b", int(2));
    assert_eq!(
        mp.await.unwrap(),
        arr(vec![b("m2"), Value::Array(vec![b("a"), b("b")])])
    );
    // An LMOVE into a watched key wakes too.
    ck!(c, "RPUSH feeder f", int(1));
    let mut waiter = s.client().await;
    let pop = tokio::spawn(async move { q!(waiter, "BLPOP fed 5") });
    tokio::time::sleep(Duration::from_millis(200)).await;
    ck!(c, "LMOVE feeder fed LEFT LEFT", bulk("f"));
    assert_eq!(pop.await.unwrap(), bs(&["fed", "f"]));
}

#[tokio::test]
async fn blocked_clients_are_served_in_fifo_order() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let mut first = s.client().await;
    let mut second = s.client().await;
    let mut third = s.client().await;
    let a = tokio::spawn(async move { q!(first, "BLPOP q 5") });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let b2 = tokio::spawn(async move { q!(second, "BLPOP q 5") });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let c3 = tokio::spawn(async move { q!(third, "BLPOP q 5") });
    tokio::time::sleep(Duration::from_millis(150)).await;
    // One push of three elements serves all three, oldest first.
    ck!(c, "RPUSH q 1 2 3", int(3));
    assert_eq!(a.await.unwrap(), bs(&["q", "1"]));
    assert_eq!(b2.await.unwrap(), bs(&["q", "2"]));
    assert_eq!(c3.await.unwrap(), bs(&["q", "3"]));
    ck!(c, "EXISTS q", int(0));
    // One element at a time: the oldest waiter gets the first one.
    let mut first = s.client().await;
    let mut second = s.client().await;
    let a = tokio::spawn(async move { q!(first, "BRPOP q 5") });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let b2 = tokio::spawn(async move { q!(second, "BRPOP q 5") });
    tokio::time::sleep(Duration::from_millis(150)).await;
    ck!(c, "LPUSH q x", int(1));
    assert_eq!(a.await.unwrap(), bs(&["q", "x"]));
    ck!(c, "LPUSH q y", int(1));
    assert_eq!(b2.await.unwrap(), bs(&["q", "y"]));
}

#[tokio::test]
async fn keyspace_events_in_redis_order() {
    assert_keyevents(
        &Server::under_test(),
        &[
            "RPUSH l a b c",
            "LPUSHX l z",
            "RPUSHX nokey a",
            "LPOP l 0",
            "RPOP l 2",
            "LSET l 0 q",
            "LINSERT l BEFORE zz p",
            "LINSERT l BEFORE q p",
            "LREM l 0 zz",
            "LREM l 1 p",
            "LTRIM l 5 1",
            "RPUSH s 1",
            "LMOVE s d LEFT RIGHT",
            "LMPOP 1 d RIGHT COUNT 5",
            "RPUSH b x",
            "BLPOP b 0",
        ],
        &[
            ("rpush", "l"),
            ("lpush", "l"),
            ("rpop", "l"),
            ("lset", "l"),
            ("linsert", "l"),
            ("lrem", "l"),
            ("ltrim", "l"),
            ("del", "l"),
            ("rpush", "s"),
            ("rpush", "d"),
            ("lpop", "s"),
            ("del", "s"),
            ("rpop", "d"),
            ("del", "d"),
            ("rpush", "b"),
            ("lpop", "b"),
            ("del", "b"),
        ],
    );
}

#[tokio::test]
async fn sort_store_is_a_write_others_see() {
    let s = Server::under_test();
    let mut c = s.raw();
    let mut blocked = s.raw();
    let mut watcher = s.raw();
    let mut sub = s.raw();
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    c.cmd(&["RPUSH", "src", "3", "1", "2"]);
    // A client blocked on the destination is served by the store.
    blocked.send_cmd(&["BLPOP", "dst", "0"]);
    blocked.expect_silence(Duration::from_millis(100));
    assert_eq!(c.cmd(&["SORT", "src", "STORE", "dst"]), b":3\r\n");
    assert_eq!(blocked.read_reply(), b"*2\r\n$3\r\ndst\r\n$1\r\n1\r\n");
    // WATCH sees both the store and the delete of an empty result.
    assert_eq!(watcher.cmd(&["WATCH", "dst"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SORT", "nosuch", "STORE", "dst"]), b":0\r\n");
    watcher.cmd(&["MULTI"]);
    watcher.cmd(&["GET", "x"]);
    assert_eq!(watcher.cmd(&["EXEC"]), b"*-1\r\n");
    assert_eq!(c.cmd(&["EXISTS", "dst"]), b":0\r\n");
    let ev = |e: &str, k: &str| (e.to_string(), k.to_string());
    assert_eq!(
        read_events(&mut sub, 4),
        vec![
            ev("rpush", "src"),
            ev("sortstore", "dst"),
            ev("lpop", "dst"),
            ev("del", "dst")
        ]
    );
}
