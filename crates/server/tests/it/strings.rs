//! String commands through the `redis` crate: every SET option combination
//! and error, the GET/SET variants, counters, APPEND and ranges.

use redis::Value;

use crate::harness::*;
use crate::{ck, eqb, q};

#[tokio::test]
async fn set_conditions_and_get() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "GET k", nil());
    ck!(c, "SET k v1", ok());
    ck!(c, "GET k", bulk("v1"));
    // NX / XX
    ck!(c, "SET k v2 NX", nil());
    ck!(c, "GET k", bulk("v1"));
    ck!(c, "SET n v NX", ok());
    ck!(c, "GET n", bulk("v"));
    ck!(c, "SET k v3 XX", ok());
    ck!(c, "GET k", bulk("v3"));
    ck!(c, "SET missing v XX", nil());
    ck!(c, "EXISTS missing", int(0));
    // GET returns the old value (or nil) and sets.
    ck!(c, "SET k v4 GET", bulk("v3"));
    ck!(c, "GET k", bulk("v4"));
    ck!(c, "SET g v GET", nil());
    ck!(c, "GET g", bulk("v"));
    // NX GET (Redis 7): old value, nothing set.
    ck!(c, "SET k v5 NX GET", bulk("v4"));
    ck!(c, "GET k", bulk("v4"));
    ck!(c, "SET nxg v NX GET", nil());
    ck!(c, "GET nxg", bulk("v"));
    // XX GET
    ck!(c, "SET k v6 XX GET", bulk("v4"));
    ck!(c, "GET k", bulk("v6"));
    ck!(c, "SET xxg v XX GET", nil());
    ck!(c, "EXISTS xxg", int(0));
    // Options are case-insensitive and may come in any order.
    ck!(c, "set k v7 get xx", bulk("v6"));
    ck!(c, "GET k", bulk("v7"));
    // Plain SET replaces and clears the TTL.
    ck!(c, "SET k v EX 100", ok());
    ck!(c, "TTL k", int(100));
    ck!(c, "SET k v", ok());
    ck!(c, "TTL k", int(-1));
}

#[tokio::test]
async fn set_expire_options() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SET k v EX 100", ok());
    ck!(c, "TTL k", int(100));
    ck!(c, "SET k v PX 100000", ok());
    let pttl = as_int(&q!(c, "PTTL k"));
    assert!((99_000..=100_000).contains(&pttl), "PTTL {pttl}");
    ck!(c, "TTL k", int(100));
    let at = unix_secs() + 100;
    ck!(c, format!("SET k v EXAT {at}"), ok());
    ck!(c, "EXPIRETIME k", int(at));
    let ttl = as_int(&q!(c, "TTL k"));
    assert!((98..=100).contains(&ttl), "TTL {ttl}");
    let atms = (unix_ms() / 1000 + 100) * 1000 + 300;
    ck!(c, format!("SET k v PXAT {atms}"), ok());
    ck!(c, "PEXPIRETIME k", int(atms));
    ck!(c, "EXPIRETIME k", int(atms / 1000));
    // KEEPTTL keeps it; combined with XX and GET.
    ck!(c, "SET k v2 KEEPTTL", ok());
    ck!(c, "PEXPIRETIME k", int(atms));
    ck!(c, "SET k v3 XX KEEPTTL GET", bulk("v2"));
    ck!(c, "PEXPIRETIME k", int(atms));
    ck!(c, "SET fresh v KEEPTTL", ok());
    ck!(c, "TTL fresh", int(-1));
    // NX/XX with expiry.
    ck!(c, "SET k v NX EX 10", nil());
    ck!(c, "PEXPIRETIME k", int(atms));
    ck!(c, "SET k v XX EX 50", ok());
    ck!(c, "TTL k", int(50));
    ck!(c, "SET k v EX 60 GET", bulk("v"));
    ck!(c, "TTL k", int(60));
    ck!(c, "SET nx2 v NX PX 70000", ok());
    ck!(c, "TTL nx2", int(70));
    // A time in the past: OK, and the key is gone.
    ck!(c, "SET past v EXAT 1", ok());
    ck!(c, "GET past", nil());
    ck!(c, "EXISTS past", int(0));
    ck!(c, "SET past v PXAT 1", ok());
    ck!(c, "EXISTS past", int(0));
}

#[tokio::test]
async fn set_option_errors() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let syntax = || err("ERR syntax error");
    for cmd in [
        "SET k v NX XX",
        "SET k v XX NX",
        "SET k v EX 10 PX 100",
        "SET k v PX 100 EX 10",
        "SET k v EX 10 EXAT 2000000000",
        "SET k v EX 10 KEEPTTL",
        "SET k v KEEPTTL EX 10",
        "SET k v KEEPTTL PXAT 2000000000000",
        "SET k v EX",
        "SET k v PX",
        "SET k v FOO",
        "SET k v NX FOO",
        "SET k v PERSIST",
    ] {
        ck!(c, cmd, syntax());
    }
    ck!(
        c,
        "SET k v EX abc",
        err("ERR value is not an integer or out of range")
    );
    ck!(
        c,
        "SET k v PX 1.5",
        err("ERR value is not an integer or out of range")
    );
    for cmd in [
        "SET k v EX 0",
        "SET k v EX -1",
        "SET k v PX 0",
        "SET k v PX -100",
        "SET k v EXAT 0",
        "SET k v PXAT -1",
        "SET k v EX 9223372036854775807",
        "SET k v EX 9223372036854776",
        "SET k v PX 9223372036854775807",
    ] {
        ck!(c, cmd, err("ERR invalid expire time in 'set' command"));
    }
    ck!(
        c,
        "SET k",
        err("ERR wrong number of arguments for 'set' command")
    );
    // Nothing was written by the failed commands.
    ck!(c, "EXISTS k", int(0));
    // Repeating the same expire option is allowed: the last one wins.
    ck!(c, "SET k v EX 10 EX 20", ok());
    ck!(c, "TTL k", int(20));
    ck!(c, "SET k v PX 10000 PX 30000", ok());
    ck!(c, "TTL k", int(30));
    ck!(
        c,
        "SET",
        err("ERR wrong number of arguments for 'set' command")
    );
}

#[tokio::test]
async fn getex_getdel_getset_setnx_setex() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SET k v", ok());
    ck!(c, "GETEX k", bulk("v"));
    ck!(c, "TTL k", int(-1));
    ck!(c, "GETEX k EX 100", bulk("v"));
    ck!(c, "TTL k", int(100));
    ck!(c, "GETEX k PERSIST", bulk("v"));
    ck!(c, "TTL k", int(-1));
    ck!(c, "GETEX k PX 50000", bulk("v"));
    ck!(c, "TTL k", int(50));
    let at = unix_secs() + 1000;
    ck!(c, format!("GETEX k EXAT {at}"), bulk("v"));
    ck!(c, "EXPIRETIME k", int(at));
    let atms = unix_ms() + 2_000_000;
    ck!(c, format!("getex k pxat {atms}"), bulk("v"));
    ck!(c, "PEXPIRETIME k", int(atms));
    ck!(c, "GETEX missing EX 10", nil());
    ck!(c, "EXISTS missing", int(0));
    ck!(c, "GETEX k EX 10 PX 10", err("ERR syntax error"));
    ck!(c, "GETEX k PERSIST EX 10", err("ERR syntax error"));
    ck!(c, "GETEX k EX 10 PERSIST", err("ERR syntax error"));
    ck!(c, "GETEX k KEEPTTL", err("ERR syntax error"));
    ck!(c, "GETEX k NX", err("ERR syntax error"));
    ck!(c, "GETEX k EX", err("ERR syntax error"));
    ck!(
        c,
        "GETEX k EX 0",
        err("ERR invalid expire time in 'getex' command")
    );
    ck!(
        c,
        "GETEX k EX x",
        err("ERR value is not an integer or out of range")
    );
    ck!(
        c,
        "GETEX",
        err("ERR wrong number of arguments for 'getex' command")
    );
    ck!(c, "PEXPIRETIME k", int(atms));
    // An expiry in the past deletes the key after returning it.
    ck!(c, "GETEX k EXAT 1", bulk("v"));
    ck!(c, "EXISTS k", int(0));

    ck!(c, "SET d v", ok());
    ck!(c, "GETDEL d", bulk("v"));
    ck!(c, "GETDEL d", nil());
    ck!(c, "EXISTS d", int(0));
    ck!(
        c,
        "GETDEL d x",
        err("ERR wrong number of arguments for 'getdel' command")
    );

    ck!(c, "GETSET gs a", nil());
    ck!(c, "SET gs b EX 100", ok());
    ck!(c, "GETSET gs c", bulk("b"));
    ck!(c, "TTL gs", int(-1));
    ck!(c, "GET gs", bulk("c"));

    ck!(c, "SETNX nx 1", int(1));
    ck!(c, "SETNX nx 2", int(0));
    ck!(c, "GET nx", bulk("1"));

    ck!(c, "SETEX se 100 v", ok());
    ck!(c, "TTL se", int(100));
    ck!(c, "GET se", bulk("v"));
    ck!(
        c,
        "SETEX se 0 v",
        err("ERR invalid expire time in 'setex' command")
    );
    ck!(
        c,
        "SETEX se -5 v",
        err("ERR invalid expire time in 'setex' command")
    );
    ck!(
        c,
        "SETEX se abc v",
        err("ERR value is not an integer or out of range")
    );
    ck!(c, "PSETEX pse 100000 v", ok());
    ck!(c, "TTL pse", int(100));
    ck!(
        c,
        "PSETEX pse 0 v",
        err("ERR invalid expire time in 'psetex' command")
    );
    ck!(
        c,
        "SETEX se 10",
        err("ERR wrong number of arguments for 'setex' command")
    );
}

#[tokio::test]
async fn mget_mset_msetnx() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "MSET a 1 b 2 c 3", ok());
    ck!(
        c,
        "MGET a b missing c",
        arr(vec![b("1"), b("2"), Value::Nil, b("3")])
    );
    ck!(c, "MSET a 10 a 11", ok());
    ck!(c, "GET a", bulk("11"));
    ck!(
        c,
        "MSET a",
        err("ERR wrong number of arguments for 'mset' command")
    );
    ck!(
        c,
        "MSET a 1 b",
        err("ERR wrong number of arguments for 'mset' command")
    );
    ck!(c, "MSETNX x 1 y 2", int(1));
    ck!(c, "MSETNX y 3 z 4", int(0));
    ck!(c, "MGET x y z", arr(vec![b("1"), b("2"), Value::Nil]));
    ck!(
        c,
        "MSETNX z",
        err("ERR wrong number of arguments for 'msetnx' command")
    );
    ck!(
        c,
        "MSETNX z 1 w",
        err("ERR wrong number of arguments for 'msetnx' command")
    );
    ck!(
        c,
        "MGET",
        err("ERR wrong number of arguments for 'mget' command")
    );
    // MSET clears TTLs.
    ck!(c, "SET t v EX 100", ok());
    ck!(c, "MSET t w", ok());
    ck!(c, "TTL t", int(-1));
}

#[tokio::test]
async fn counters() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "INCR n", int(1));
    ck!(c, "INCR n", int(2));
    ck!(c, "DECR n", int(1));
    ck!(c, "INCRBY n 10", int(11));
    ck!(c, "DECRBY n 20", int(-9));
    ck!(c, "INCRBY n -1", int(-10));
    ck!(c, "GET n", bulk("-10"));
    ck!(c, "DECR fresh", int(-1));
    ck!(
        c,
        "INCRBY n abc",
        err("ERR value is not an integer or out of range")
    );
    ck!(
        c,
        "INCRBY n 1.5",
        err("ERR value is not an integer or out of range")
    );
    ck!(
        c,
        "INCRBY n 9223372036854775808",
        err("ERR value is not an integer or out of range")
    );
    for v in ["abc", " 1", "1 ", "1.5", "01", "+1", "", "-0"] {
        let r = query(&mut c, &["SET", "s", v]).await;
        assert_eq!(r, ok());
        ck!(
            c,
            "INCR s",
            err("ERR value is not an integer or out of range")
        );
    }
    ck!(c, "SET big 9223372036854775807", ok());
    ck!(
        c,
        "INCR big",
        err("ERR increment or decrement would overflow")
    );
    ck!(
        c,
        "INCRBY big 1",
        err("ERR increment or decrement would overflow")
    );
    ck!(
        c,
        "DECRBY big -1",
        err("ERR increment or decrement would overflow")
    );
    ck!(c, "GET big", bulk("9223372036854775807"));
    ck!(c, "SET small -9223372036854775808", ok());
    ck!(
        c,
        "DECR small",
        err("ERR increment or decrement would overflow")
    );
    ck!(c, "INCR small", int(-9223372036854775807));
    ck!(
        c,
        "DECRBY n -9223372036854775808",
        err("ERR decrement would overflow")
    );
    ck!(
        c,
        "DECRBY n 9223372036854775807",
        err("ERR increment or decrement would overflow")
    );
    // Counters keep the TTL.
    ck!(c, "SET t 5 EX 100", ok());
    ck!(c, "INCR t", int(6));
    ck!(c, "TTL t", int(100));
    ck!(
        c,
        "INCR",
        err("ERR wrong number of arguments for 'incr' command")
    );
    ck!(
        c,
        "INCRBY n",
        err("ERR wrong number of arguments for 'incrby' command")
    );
}

#[tokio::test]
async fn incrbyfloat() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "SET f 10.50", ok());
    ck!(c, "INCRBYFLOAT f 0.1", bulk("10.6"));
    ck!(c, "INCRBYFLOAT f -5", bulk("5.6"));
    ck!(c, "INCRBYFLOAT new 5.0e3", bulk("5000"));
    ck!(c, "INCRBYFLOAT new 2.0e2", bulk("5200"));
    ck!(c, "INCRBYFLOAT g 3", bulk("3"));
    ck!(c, "INCRBYFLOAT g -3", bulk("0"));
    ck!(c, "INCRBYFLOAT h 1.5e-7", bulk("0.00000015"));
    ck!(c, "INCRBYFLOAT h -1.5e-7", bulk("0"));
    ck!(c, "SET i 5", ok());
    ck!(c, "INCRBYFLOAT i 1.25", bulk("6.25"));
    ck!(
        c,
        "INCRBYFLOAT f abc",
        err("ERR value is not a valid float")
    );
    ck!(
        c,
        "INCRBYFLOAT f nan",
        err("ERR value is not a valid float")
    );
    ck!(
        c,
        "INCRBYFLOAT f inf",
        err("ERR increment would produce NaN or Infinity")
    );
    ck!(c, "SET s abc", ok());
    ck!(c, "INCRBYFLOAT s 1", err("ERR value is not a valid float"));
    ck!(c, "GET f", bulk("5.6"));
    // Keeps the TTL.
    ck!(c, "SET t 1 EX 100", ok());
    ck!(c, "INCRBYFLOAT t 1.5", bulk("2.5"));
    ck!(c, "TTL t", int(100));
}

#[tokio::test]
async fn append_strlen_ranges() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "APPEND a abc", int(3));
    ck!(c, "APPEND a def", int(6));
    ck!(c, "GET a", bulk("abcdef"));
    ck!(c, "SET n 12", ok());
    ck!(c, "APPEND n 34", int(4));
    ck!(c, "GET n", bulk("1234"));
    ck!(c, "INCR n", int(1235));
    ck!(c, "STRLEN n", int(4));
    ck!(c, "STRLEN a", int(6));
    ck!(c, "STRLEN missing", int(0));
    ck!(c, "SET t x EX 100", ok());
    ck!(c, "APPEND t y", int(2));
    ck!(c, "TTL t", int(100));

    ck!(c, "SET s This_is_a_string", ok());
    ck!(c, "GETRANGE s 0 3", bulk("This"));
    ck!(c, "GETRANGE s -3 -1", bulk("ing"));
    ck!(c, "GETRANGE s 0 -1", bulk("This_is_a_string"));
    ck!(c, "GETRANGE s 10 100", bulk("string"));
    ck!(c, "GETRANGE s 5 3", bulk(""));
    ck!(c, "GETRANGE s -1 -5", bulk(""));
    ck!(c, "GETRANGE s -100 -50", bulk("T"));
    ck!(c, "GETRANGE s -100 2", bulk("Thi"));
    ck!(c, "GETRANGE s 100 200", bulk(""));
    ck!(c, "GETRANGE missing 0 -1", bulk(""));
    ck!(
        c,
        "GETRANGE s a 1",
        err("ERR value is not an integer or out of range")
    );
    ck!(
        c,
        "GETRANGE s 0",
        err("ERR wrong number of arguments for 'getrange' command")
    );
    ck!(c, "SUBSTR s 0 3", bulk("This"));
    ck!(c, "SUBSTR s -6 -1", bulk("string"));
    ck!(c, "SET num 12345", ok());
    ck!(c, "GETRANGE num 1 2", bulk("23"));

    ck!(c, "SET h Hello_World", ok());
    ck!(c, "SETRANGE h 6 Redis", int(11));
    ck!(c, "GET h", bulk("Hello_Redis"));
    ck!(c, "SETRANGE h 11 !!", int(13));
    ck!(c, "GET h", bulk("Hello_Redis!!"));
    ck!(c, "SETRANGE pad 5 x", int(6));
    ck!(c, "GET pad", bulk(b"\0\0\0\0\0x"));
    ck!(c, "SETRANGE h -1 x", err("ERR offset is out of range"));
    ck!(
        c,
        "SETRANGE h x x",
        err("ERR value is not an integer or out of range")
    );
    let r = query(&mut c, &["SETRANGE", "empty", "0", ""]).await;
    assert_eq!(r, int(0));
    ck!(c, "EXISTS empty", int(0));
    let r = query(&mut c, &["SETRANGE", "h", "100", ""]).await;
    assert_eq!(r, int(13));
    ck!(
        c,
        "SETRANGE h 536870912 x",
        err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    ck!(c, "SETRANGE num 0 9", int(5));
    ck!(c, "GET num", bulk("92345"));
}

#[tokio::test]
async fn binary_safe_keys_and_values() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let key: &[u8] = b"k\0e\r\ny \x01\xff";
    let all: Vec<u8> = (0..=255u8).chain(b"\r\n\0\r\n".iter().copied()).collect();
    assert_eq!(query(&mut c, &[b"SET".as_slice(), key, &all]).await, ok());
    assert_eq!(query(&mut c, &[b"GET".as_slice(), key]).await, bulk(&all));
    assert_eq!(
        query(&mut c, &[b"STRLEN".as_slice(), key]).await,
        int(all.len() as i64)
    );
    assert_eq!(
        query(&mut c, &[b"APPEND".as_slice(), key, b"\0\r\n"]).await,
        int(all.len() as i64 + 3)
    );
    assert_eq!(
        query(&mut c, &[b"GETRANGE".as_slice(), key, b"-3", b"-1"]).await,
        bulk(b"\0\r\n")
    );
    assert_eq!(
        query(&mut c, &[b"GETRANGE".as_slice(), key, b"0", b"3"]).await,
        bulk(b"\0\x01\x02\x03")
    );
    assert_eq!(
        query(&mut c, &[b"MGET".as_slice(), key, b"k"]).await,
        arr(vec![b([all.as_slice(), b"\0\r\n"].concat()), Value::Nil])
    );
    assert_eq!(
        query(&mut c, &[b"KEYS".as_slice(), b"k\0*"]).await,
        arr(vec![b(key)])
    );
    assert_eq!(
        query(&mut c, &[b"EXISTS".as_slice(), b"k\0e\r\ny"]).await,
        int(0)
    );
    assert_eq!(
        query(&mut c, &[b"RENAME".as_slice(), key, b"\0"]).await,
        ok()
    );
    assert_eq!(
        query(&mut c, &[b"TYPE".as_slice(), b"\0"]).await,
        status("string")
    );
    assert_eq!(query(&mut c, &[b"ECHO".as_slice(), key]).await, bulk(key));
    assert_eq!(query(&mut c, &[b"DEL".as_slice(), b"\0"]).await, int(1));
    // An empty key and an empty value are ordinary.
    assert_eq!(query(&mut c, &["SET", "", ""]).await, ok());
    assert_eq!(query(&mut c, &["GET", ""]).await, bulk(""));
    assert_eq!(query(&mut c, &["STRLEN", ""]).await, int(0));
    assert_eq!(query(&mut c, &["DBSIZE"]).await, int(1));
}

#[tokio::test]
async fn incrbyfloat_long_double_precision() {
    // Redis parses with strtold, adds in long double and prints with
    // "%.17Lf" (trailing zeros removed): 0.1 + 0.2 is "0.3", not the f64
    // "0.30000000000000004".
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "INCRBYFLOAT p 0.1", bulk("0.1"));
    ck!(c, "INCRBYFLOAT p 0.2", bulk("0.3"));
    ck!(c, "INCRBYFLOAT q 1.1", bulk("1.1"));
    ck!(c, "INCRBYFLOAT q 2.2", bulk("3.3"));
    ck!(c, "INCRBYFLOAT big 1e17", bulk("100000000000000000"));
    ck!(c, "INCRBYFLOAT big 1", bulk("100000000000000001"));
    // strtold accepts hexadecimal.
    ck!(c, "INCRBYFLOAT h 0x10", bulk("16"));
}

#[tokio::test]
async fn wrongtype_on_other_types() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "RPUSH l a b", int(2));
    let wrongtype = || err("WRONGTYPE Operation against a key holding the wrong kind of value");
    for cmd in [
        "GET l",
        "SET l v GET",
        "SET l v NX GET",
        "GETEX l",
        "GETDEL l",
        "GETSET l v",
        "APPEND l x",
        "STRLEN l",
        "INCR l",
        "DECRBY l 2",
        "INCRBYFLOAT l 1.5",
        "GETRANGE l 0 -1",
        "SETRANGE l 0 x",
    ] {
        ck!(c, cmd, wrongtype());
    }
    // MGET answers nil for keys of other types; SETNX/MSETNX see them.
    ck!(c, "SET s v", ok());
    ck!(c, "MGET l s", arr(vec![Value::Nil, b("v")]));
    ck!(c, "SETNX l v", int(0));
    ck!(c, "MSETNX l v n v", int(0));
    ck!(c, "SET l v NX", nil());
    ck!(c, "TYPE l", status("list"));
    // A plain SET replaces a value of any type.
    ck!(c, "SET l v", ok());
    ck!(c, "TYPE l", status("string"));
    ck!(c, "GET l", bulk("v"));
}

/// LCS on random strings of a small alphabet (many ties, the walk's
/// choices matter): the same replies, byte for byte, as redis-server.
#[test]
fn lcs_matches_redis_on_random_strings() {
    let keel = Server::keel();
    let redis = Server::redis();
    let (mut k, mut r) = (keel.raw(), redis.raw());
    // A fixed xorshift: the same cases on every run.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for case in 0..300 {
        let mut word = |n: u64| -> Vec<u8> {
            let len = (next() % n) as usize;
            (0..len).map(|_| b"abc"[(next() % 3) as usize]).collect()
        };
        let (a, b) = (word(24), word(24));
        let min = (next() % 4).to_string();
        for conn in [&mut k, &mut r] {
            conn.cmd(&[b"SET".as_slice(), b"a", &a]);
            conn.cmd(&[b"SET".as_slice(), b"b", &b]);
        }
        for argv in [
            vec!["LCS", "a", "b"],
            vec!["LCS", "a", "b", "IDX", "WITHMATCHLEN", "MINMATCHLEN", &min],
        ] {
            assert_eq!(
                escape(&k.cmd(&argv)),
                escape(&r.cmd(&argv)),
                "case {case}: {argv:?} on {:?} / {:?}",
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b)
            );
        }
    }
}

/// BITCOUNT and BITPOS with random ranges (negative, reversed, past the
/// end) in BYTE and BIT units, BITFIELD fields of random widths and
/// overflow modes, GETBIT/SETBIT at random offsets and BITOP: the same
/// replies as redis-server.
#[test]
fn bitmaps_match_redis_on_random_commands() {
    let keel = Server::keel();
    let redis = Server::redis();
    let (mut k, mut r) = (keel.raw(), redis.raw());
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for case in 0..300 {
        let len = (next() % 12) as usize;
        let value: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        for conn in [&mut k, &mut r] {
            conn.cmd(&[b"SET".as_slice(), b"bm", &value]);
        }
        let start = (next() % 120) as i64 - 60;
        let end = (next() % 120) as i64 - 60;
        let offset = (next() % 120).to_string();
        let bit = (next() % 2).to_string();
        let (s, e) = (start.to_string(), end.to_string());
        let signed = next() % 2 == 0;
        let width = 1 + next() % if signed { 64 } else { 63 };
        let field = format!("{}{width}", if signed { 'i' } else { 'u' });
        let overflow = ["WRAP", "SAT", "FAIL"][(next() % 3) as usize];
        let by = (next() as i64 >> (next() % 64)).to_string();
        for argv in [
            vec!["BITCOUNT", "bm", &s, &e],
            vec!["BITCOUNT", "bm", &s, &e, "BIT"],
            vec!["BITPOS", "bm", &bit],
            vec!["BITPOS", "bm", &bit, &s],
            vec!["BITPOS", "bm", &bit, &s, &e],
            vec!["BITPOS", "bm", &bit, &s, &e, "BIT"],
            vec!["GETBIT", "bm", &offset],
            vec!["BITFIELD_RO", "bm", "GET", &field, &offset],
            vec![
                "BITFIELD", "bm", "OVERFLOW", overflow, "INCRBY", &field, &offset, &by,
            ],
            vec![
                "BITFIELD", "bm", "OVERFLOW", overflow, "SET", &field, &offset, &by,
            ],
            vec!["SETBIT", "bm", &offset, &bit],
            vec!["BITOP", "XOR", "bm2", "bm", "bm2"],
            vec!["GET", "bm"],
            vec!["GET", "bm2"],
        ] {
            assert_eq!(
                escape(&k.cmd(&argv)),
                escape(&r.cmd(&argv)),
                "case {case}: {argv:?} on {}",
                escape(&value)
            );
        }
    }
}

/// Values from 16 KB on are replied by reference to the stored value:
/// every reply of a pipeline (GET, MGET, GETEX, GETSET, SET ... GET,
/// GETDEL) leaves whole and in order, inside MULTI and scripts, after the
/// value is overwritten, edited or deleted later in the same pipeline,
/// and CLIENT REPLY drops them as any reply.
#[test]
fn large_values_reply_whole_and_in_order_however_they_are_asked_for() {
    let bytes = |n: usize, seed: usize| -> Vec<u8> {
        (0..n).map(|i| b'!' + ((i * 7 + seed) % 90) as u8).collect()
    };
    let a = bytes(40_000, 1);
    let b = bytes(20_000, 2);
    let c = bytes(70_000, 3);
    let mut a_xyz = a.clone();
    a_xyz.extend_from_slice(b"xyz");
    let mut b_zz = b.clone();
    b_zz.extend_from_slice(b"zz");
    let mut q_zz = b_zz.clone();
    q_zz[0] = b'Q';
    let script = "return redis.call('get', KEYS[1])";
    // (request, its reply; None where CLIENT REPLY drops it)
    type Step<'a> = (Vec<&'a [u8]>, Option<Vec<u8>>);
    let steps: Vec<Step> = vec![
        (vec![b"SET", b"a", &a], Some(b"+OK\r\n".to_vec())),
        (vec![b"SET", b"b", &b], Some(b"+OK\r\n".to_vec())),
        (vec![b"GET", b"a"], Some(wire_bulk(&a))),
        (vec![b"CLIENT", b"REPLY", b"SKIP"], None),
        (vec![b"GET", b"b"], None),
        (vec![b"GET", b"b"], Some(wire_bulk(&b))),
        (vec![b"MULTI"], Some(b"+OK\r\n".to_vec())),
        (vec![b"GET", b"a"], Some(b"+QUEUED\r\n".to_vec())),
        (vec![b"APPEND", b"a", b"xyz"], Some(b"+QUEUED\r\n".to_vec())),
        (vec![b"GET", b"a"], Some(b"+QUEUED\r\n".to_vec())),
        (
            vec![b"EXEC"],
            Some(
                [
                    b"*3\r\n".to_vec(),
                    wire_bulk(&a),
                    b":40003\r\n".to_vec(),
                    wire_bulk(&a_xyz),
                ]
                .concat(),
            ),
        ),
        (
            vec![b"MGET", b"b", b"nokey", b"a"],
            Some(
                [
                    b"*3\r\n".to_vec(),
                    wire_bulk(&b),
                    b"$-1\r\n".to_vec(),
                    wire_bulk(&a_xyz),
                ]
                .concat(),
            ),
        ),
        (
            vec![b"EVAL", script.as_bytes(), b"1", b"b"],
            Some(wire_bulk(&b)),
        ),
        (vec![b"GET", b"b"], Some(wire_bulk(&b))),
        (vec![b"APPEND", b"b", b"zz"], Some(b":20002\r\n".to_vec())),
        (vec![b"GET", b"b"], Some(wire_bulk(&b_zz))),
        (
            vec![b"SETRANGE", b"b", b"0", b"Q"],
            Some(b":20002\r\n".to_vec()),
        ),
        (vec![b"GET", b"b"], Some(wire_bulk(&q_zz))),
        (vec![b"GET", b"b"], Some(wire_bulk(&q_zz))),
        (vec![b"SET", b"b", &c], Some(b"+OK\r\n".to_vec())),
        (vec![b"GET", b"b"], Some(wire_bulk(&c))),
        (vec![b"DEL", b"b"], Some(b":1\r\n".to_vec())),
        (vec![b"CLIENT", b"REPLY", b"OFF"], None),
        (vec![b"GET", b"a"], None),
        (vec![b"CLIENT", b"REPLY", b"ON"], Some(b"+OK\r\n".to_vec())),
        (
            vec![b"GETRANGE", b"a", b"39999", b"40002"],
            Some(wire_bulk(&a_xyz[39_999..])),
        ),
        (vec![b"SET", b"g", &c], Some(b"+OK\r\n".to_vec())),
        (vec![b"GETEX", b"g", b"PX", b"100000"], Some(wire_bulk(&c))),
        (vec![b"GETSET", b"g", &a], Some(wire_bulk(&c))),
        (vec![b"SET", b"g", &b, b"GET"], Some(wire_bulk(&a))),
        (vec![b"SET", b"g", &c, b"NX", b"GET"], Some(wire_bulk(&b))),
        (vec![b"GETDEL", b"g"], Some(wire_bulk(&b))),
        (vec![b"GET", b"g"], Some(b"$-1\r\n".to_vec())),
    ];
    for s in [Server::keel(), Server::redis()] {
        let mut r = s.raw();
        let mut pipeline = Vec::new();
        for (argv, _) in &steps {
            resp::encode::command(&mut pipeline, argv);
        }
        r.send(&pipeline);
        for (i, (argv, reply)) in steps.iter().enumerate() {
            if let Some(want) = reply {
                let got = r.read_reply();
                assert!(
                    got == *want,
                    "{}: step {i} ({}): {} bytes, {} wanted",
                    s.name,
                    String::from_utf8_lossy(argv[0]),
                    got.len(),
                    want.len()
                );
            }
        }
        eqb!(r.cmd(&["PING"]), b"+PONG\r\n");
    }
}
