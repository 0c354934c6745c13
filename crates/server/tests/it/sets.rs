//! Set commands through the `redis` crate: membership, random pops and
//! picks, set algebra and its STORE forms, SSCAN, encodings at their
//! thresholds, WRONGTYPE.

use std::collections::HashSet;

use redis::Value;

use crate::harness::*;
use crate::{ck, q};

/// The members of an array/set reply, as a sorted list of strings.
fn members(r: &Reply) -> Vec<String> {
    let items = match r {
        Ok(Value::Array(v)) | Ok(Value::Set(v)) => v,
        other => panic!("expected an array reply, got {other:?}"),
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

#[tokio::test]
async fn add_remove_membership() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SADD s a b c a", int(3));
    ck!(c, "SADD s a d", int(1));
    ck!(c, "SCARD s", int(4));
    ck!(c, "SISMEMBER s a", int(1));
    ck!(c, "SISMEMBER s zz", int(0));
    ck!(c, "SISMEMBER nokey a", int(0));
    ck!(
        c,
        "SMISMEMBER s a zz d",
        arr(vec![Value::Int(1), Value::Int(0), Value::Int(1)])
    );
    ck!(c, "SMISMEMBER nokey a", arr(vec![Value::Int(0)]));
    assert_eq!(members(&q!(c, "SMEMBERS s")), strs(&["a", "b", "c", "d"]));
    ck!(c, "SREM s a zz", int(1));
    ck!(c, "SREM s b c d", int(3));
    // Empty sets are deleted.
    ck!(c, "EXISTS s", int(0));
    ck!(c, "SCARD nokey", int(0));
    ck!(c, "SMEMBERS nokey", arr(vec![]));
    ck!(c, "SREM nokey a", int(0));
}

#[tokio::test]
async fn wrongtype_and_arity() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SET str x", ok());
    let wt = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for cmd in [
        "SADD str a",
        "SREM str a",
        "SMEMBERS str",
        "SCARD str",
        "SISMEMBER str a",
        "SPOP str",
        "SRANDMEMBER str",
        "SINTER str",
        "SINTER nokey str",
        "SUNION str",
        "SDIFF nokey str",
        "SINTERSTORE d str",
        "SINTERCARD 1 str",
        "SSCAN str 0",
        "SMOVE str d a",
    ] {
        ck!(c, cmd, err(wt));
    }
    ck!(c, "SADD s 1", int(1));
    ck!(c, "SMOVE s str 1", err(wt));
    ck!(
        c,
        "SADD s",
        err("ERR wrong number of arguments for 'sadd' command")
    );
    ck!(c, "SPOP s 1 2", err("ERR syntax error"));
    ck!(c, "SRANDMEMBER s 1 2", err("ERR syntax error"));
}

#[tokio::test]
async fn intset_and_hashtable_encodings() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SADD s 3 1 2", int(3));
    ck!(c, "OBJECT ENCODING s", bulk("intset"));
    // Intsets answer in numeric order.
    ck!(c, "SMEMBERS s", arr(vec![b("1"), b("2"), b("3")]));
    ck!(c, "SADD s 01", int(1));
    ck!(c, "OBJECT ENCODING s", bulk("hashtable"));
    ck!(c, "CONFIG SET set-max-intset-entries 4", ok());
    ck!(c, "SADD n 1 2 3 4", int(4));
    ck!(c, "OBJECT ENCODING n", bulk("intset"));
    ck!(c, "SADD n 5", int(1));
    ck!(c, "OBJECT ENCODING n", bulk("hashtable"));
    // Removing never converts back.
    ck!(c, "SREM n 5 4", int(2));
    ck!(c, "OBJECT ENCODING n", bulk("hashtable"));
    // Store results pick the encoding from their content.
    ck!(c, "SADD m 1 2", int(2));
    ck!(c, "SUNIONSTORE u m n", int(3));
    ck!(c, "OBJECT ENCODING u", bulk("intset"));
    ck!(c, "CONFIG SET set-max-intset-entries 512", ok());
    ck!(
        c,
        "SADD neg -5 -9223372036854775808 9223372036854775807",
        int(3)
    );
    ck!(
        c,
        "SMEMBERS neg",
        arr(vec![
            b("-9223372036854775808"),
            b("-5"),
            b("9223372036854775807")
        ])
    );
    ck!(c, "OBJECT ENCODING neg", bulk("intset"));
}

#[tokio::test]
async fn spop_and_srandmember() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SPOP nokey", nil());
    ck!(c, "SPOP nokey 3", arr(vec![]));
    ck!(c, "SRANDMEMBER nokey", nil());
    ck!(c, "SRANDMEMBER nokey 3", arr(vec![]));
    ck!(c, "SADD s a b c d e", int(5));
    ck!(
        c,
        "SPOP s -1",
        err("ERR value is out of range, must be positive")
    );
    ck!(
        c,
        "SPOP s x",
        err("ERR value is out of range, must be positive")
    );
    ck!(c, "SPOP s 0", arr(vec![]));
    ck!(c, "SRANDMEMBER s 0", arr(vec![]));
    ck!(
        c,
        "SRANDMEMBER s x",
        err("ERR value is not an integer or out of range")
    );
    ck!(
        c,
        "SRANDMEMBER s -9223372036854775808",
        err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    let all = strs(&["a", "b", "c", "d", "e"]);
    // Positive count: distinct members, at most the whole set.
    for n in 1..=7 {
        let got = members(&q!(c, format!("SRANDMEMBER s {n}")));
        assert_eq!(got.len(), n.min(5));
        assert_eq!(got.iter().collect::<HashSet<_>>().len(), got.len());
        assert!(got.iter().all(|m| all.contains(m)));
    }
    // Negative count: exactly |count| members, repeats allowed.
    let got = members(&q!(c, "SRANDMEMBER s -50"));
    assert_eq!(got.len(), 50);
    assert!(got.iter().all(|m| all.contains(m)));
    assert!(got.iter().collect::<HashSet<_>>().len() < 50);
    // SPOP with count removes what it returns.
    let popped = members(&q!(c, "SPOP s 2"));
    assert_eq!(popped.len(), 2);
    ck!(c, "SCARD s", int(3));
    for m in &popped {
        ck!(c, format!("SISMEMBER s {m}"), int(0));
    }
    let one = q!(c, "SPOP s");
    assert!(all.contains(&text(one.as_ref().unwrap())));
    // Count >= size pops everything and deletes the key.
    let rest = members(&q!(c, "SPOP s 10"));
    assert_eq!(rest.len(), 2);
    ck!(c, "EXISTS s", int(0));
    // A large hashtable set drains completely through SPOP.
    let args: Vec<String> = (0..2000).map(|i| format!("m{i}")).collect();
    ck!(c, format!("SADD big {}", args.join(" ")), int(2000));
    let mut seen = HashSet::new();
    for _ in 0..20 {
        for m in members(&q!(c, "SPOP big 100")) {
            assert!(seen.insert(m));
        }
    }
    assert_eq!(seen.len(), 2000);
    ck!(c, "EXISTS big", int(0));
}

#[tokio::test]
async fn algebra_and_store() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SADD a 1 2 3 x", int(4));
    ck!(c, "SADD b 2 3 4 y x", int(5));
    ck!(c, "SADD c 3 x z", int(3));
    assert_eq!(members(&q!(c, "SINTER a b c")), strs(&["3", "x"]));
    assert_eq!(members(&q!(c, "SINTER a a")), strs(&["1", "2", "3", "x"]));
    ck!(c, "SINTER a nokey", arr(vec![]));
    assert_eq!(
        members(&q!(c, "SUNION a b c nokey")),
        strs(&["1", "2", "3", "4", "x", "y", "z"])
    );
    assert_eq!(members(&q!(c, "SDIFF a b")), strs(&["1"]));
    assert_eq!(members(&q!(c, "SDIFF b a c")), strs(&["4", "y"]));
    ck!(c, "SDIFF nokey a", arr(vec![]));
    ck!(c, "SINTERCARD 3 a b c", int(2));
    ck!(c, "SINTERCARD 2 a b LIMIT 1", int(1));
    ck!(c, "SINTERCARD 2 a b LIMIT 0", int(3));
    ck!(c, "SINTERCARD 2 a nokey", int(0));
    ck!(
        c,
        "SINTERCARD 0 a",
        err("ERR numkeys should be greater than 0")
    );
    ck!(
        c,
        "SINTERCARD x a",
        err("ERR numkeys should be greater than 0")
    );
    ck!(
        c,
        "SINTERCARD 3 a b",
        err("ERR Number of keys can't be greater than number of args")
    );
    ck!(
        c,
        "SINTERCARD 1 a LIMIT -1",
        err("ERR LIMIT can't be negative")
    );
    ck!(c, "SINTERCARD 1 a LIMIT", err("ERR syntax error"));
    ck!(c, "SINTERSTORE d a b", int(3));
    assert_eq!(members(&q!(c, "SMEMBERS d")), strs(&["2", "3", "x"]));
    ck!(c, "SUNIONSTORE d d c", int(4));
    ck!(c, "SDIFFSTORE d a b c", int(1));
    ck!(c, "SMEMBERS d", arr(vec![b("1")]));
    // An empty result deletes the destination.
    ck!(c, "SINTERSTORE d a nokey", int(0));
    ck!(c, "EXISTS d", int(0));
    // The destination may be a source, and may hold another type.
    ck!(c, "SET str v", ok());
    ck!(c, "SUNIONSTORE str a", int(4));
    ck!(c, "TYPE str", status("set"));
}

#[tokio::test]
async fn smove() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SADD src a b", int(2));
    ck!(c, "SMOVE src dst a", int(1));
    ck!(c, "SMEMBERS dst", arr(vec![b("a")]));
    ck!(c, "SMOVE src dst zz", int(0));
    ck!(c, "SMOVE nokey dst a", int(0));
    ck!(c, "SMOVE src src b", int(1));
    ck!(c, "SMOVE src src zz", int(0));
    ck!(c, "SADD dst b", int(1));
    // Already in the destination: still moved out of the source.
    ck!(c, "SMOVE src dst b", int(1));
    ck!(c, "EXISTS src", int(0));
    ck!(c, "SCARD dst", int(2));
}

/// SMOVE publishes `sadd` only when the destination gained the member
/// (smoveCommand), after the source's `srem` and `del`.
#[tokio::test]
async fn smove_keyspace_events() {
    assert_keyevents(
        &Server::under_test(),
        &[
            "SADD src a b c",
            "SADD dst b",
            "SMOVE src dst a",
            "SMOVE src dst b",
            "SMOVE src dst zz",
            "SMOVE src src c",
            "SMOVE src new c",
        ],
        &[
            ("sadd", "src"),
            ("sadd", "dst"),
            ("srem", "src"),
            ("sadd", "dst"),
            ("srem", "src"),
            ("srem", "src"),
            ("del", "src"),
            ("sadd", "new"),
        ],
    );
}

/// SMOVE of a member the destination already has changes only the source:
/// a WATCH on the destination holds (smoveCommand signals the destination
/// only when the member was added), one on the source breaks.
#[tokio::test]
async fn smove_touches_the_destination_only_when_it_gains_the_member() {
    let s = Server::under_test();
    let mut c = s.raw();
    let mut watcher = s.raw();
    c.cmd(&["SADD", "src", "a", "b"]);
    c.cmd(&["SADD", "dst", "a"]);
    let watched_exec = |watcher: &mut crate::harness::Raw,
                        key: &str,
                        c: &mut crate::harness::Raw,
                        cmd: &[&str]| {
        assert_eq!(watcher.cmd(&["WATCH", key]), b"+OK\r\n");
        assert_eq!(c.cmd(cmd), b":1\r\n");
        watcher.cmd(&["MULTI"]);
        watcher.cmd(&["PING"]);
        watcher.cmd(&["EXEC"])
    };
    // The member was already there: dst unchanged.
    assert_eq!(
        watched_exec(&mut watcher, "dst", &mut c, &["SMOVE", "src", "dst", "a"]),
        b"*1\r\n+PONG\r\n"
    );
    // The member is new to dst: changed.
    assert_eq!(
        watched_exec(&mut watcher, "dst", &mut c, &["SMOVE", "src", "dst", "b"]),
        b"*-1\r\n"
    );
    // The source always changes.
    c.cmd(&["SADD", "src", "a"]);
    assert_eq!(
        watched_exec(&mut watcher, "src", &mut c, &["SMOVE", "src", "dst", "a"]),
        b"*-1\r\n"
    );
}

#[tokio::test]
async fn sscan_covers_everything_while_growing() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let args: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
    ck!(c, format!("SADD s {}", args.join(" ")), int(1000));
    let mut seen = HashSet::new();
    let mut cursor = "0".to_string();
    let mut round = 0;
    loop {
        let r = q!(c, format!("SSCAN s {cursor} COUNT 7")).unwrap();
        let Value::Array(parts) = r else {
            panic!("{r:?}")
        };
        cursor = text(&parts[0]);
        let Value::Array(items) = &parts[1] else {
            panic!()
        };
        for i in items {
            seen.insert(text(i));
        }
        // Grow the set during the scan.
        let more: Vec<String> = (0..10).map(|j| format!("new{round}-{j}")).collect();
        q!(c, format!("SADD s {}", more.join(" "))).unwrap();
        round += 1;
        if cursor == "0" {
            break;
        }
    }
    for a in &args {
        assert!(seen.contains(a), "{a} not returned");
    }
    // MATCH filters; intsets answer in one call.
    ck!(c, "SADD i 1 2 13", int(3));
    ck!(
        c,
        "SSCAN i 0 MATCH 1*",
        arr(vec![b("0"), Value::Array(vec![b("1"), b("13")])])
    );
    ck!(c, "SSCAN i 0 COUNT 0", err("ERR syntax error"));
    ck!(c, "SSCAN i x", err("ERR invalid cursor"));
    ck!(c, "SSCAN nokey 0", arr(vec![b("0"), Value::Array(vec![])]));
}

#[tokio::test]
async fn resp3_set_replies() {
    let s = Server::under_test();
    let mut c = s.client3().await;
    ck!(c, "SADD s 1 2", int(2));
    ck!(c, "SMEMBERS s", Ok(Value::Set(vec![b("1"), b("2")])));
    ck!(c, "SINTER s s", Ok(Value::Set(vec![b("1"), b("2")])));
    ck!(c, "SPOP nokey 1", Ok(Value::Set(vec![])));
    ck!(c, "SRANDMEMBER nokey 1", arr(vec![]));
}
