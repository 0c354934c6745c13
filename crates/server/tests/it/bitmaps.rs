//! Bitmap commands beyond what the differential table shows: keyspace
//! events, what reaches the append-only log, WATCH, and large strings
//! checked against a reference computed here. Every test here also
//! passes against redis-server (`KEEL_IT_AGAINST_REDIS=1`).

use redis::Value;

use crate::harness::*;
use crate::propagation::{holds, incremental_log, log_on};
use crate::{ck, eqb, q};

#[tokio::test]
async fn keyspace_events_only_for_writes_that_change_something() {
    assert_keyevents(
        &Server::under_test(),
        &[
            "SETBIT bm 7 1",
            // The bit already has the value: no event.
            "SETBIT bm 7 1",
            // Grown, so a change even though the bit stays 0.
            "SETBIT bm 100 0",
            "GETBIT bm 7",
            "BITFIELD bm SET u8 0 255",
            "BITFIELD bm SET u8 0 255",
            "BITFIELD bm GET u8 0",
            "BITFIELD bm OVERFLOW FAIL INCRBY u8 0 1",
            "BITFIELD_RO bm GET u8 0",
            "BITOP OR dst bm",
            "BITOP AND dst nokey",
            "BITOP AND dst nokey",
            "BITCOUNT bm",
            "BITPOS bm 1",
        ],
        &[
            ("setbit", "bm"),
            ("setbit", "bm"),
            ("setbit", "bm"),
            ("set", "dst"),
            ("del", "dst"),
        ],
    );
}

#[tokio::test]
async fn bitmap_writes_reach_the_log_and_reads_do_not() {
    let s = Server::under_test();
    let mut c = s.client().await;
    log_on(&mut c).await;
    ck!(c, "SETBIT src1 3 1", int(0));
    ck!(c, "SET src2 abc", ok());
    ck!(c, "BITOP XOR dest src1 src2", int(3));
    ck!(
        c,
        "BITFIELD field INCRBY u8 #2 7 GET u8 16",
        arr(vec![Value::Int(7), Value::Int(7)])
    );
    ck!(c, "BITFIELD rokey GET u8 0", arr(vec![Value::Int(0)]));
    ck!(c, "BITFIELD_RO src2 GET u8 0", arr(vec![Value::Int(97)]));
    ck!(
        c,
        "BITFIELD failkey OVERFLOW FAIL INCRBY u2 0 10",
        arr(vec![Value::Nil])
    );
    ck!(c, "BITOP AND dest nokey", int(0));
    ck!(c, "EXISTS dest", int(0));
    let log = incremental_log(&mut c).await;
    let shown = String::from_utf8_lossy(&log).into_owned();
    for record in [
        "*4\r\n$6\r\nSETBIT\r\n$4\r\nsrc1\r\n$1\r\n3\r\n$1\r\n1\r\n",
        "*5\r\n$5\r\nBITOP\r\n$3\r\nXOR\r\n$4\r\ndest\r\n$4\r\nsrc1\r\n$4\r\nsrc2\r\n",
        "*9\r\n$8\r\nBITFIELD\r\n$5\r\nfield\r\n$6\r\nINCRBY\r\n$2\r\nu8\r\n$2\r\n#2\r\n$1\r\n7\r\n$3\r\nGET\r\n$2\r\nu8\r\n$2\r\n16\r\n",
        "*4\r\n$5\r\nBITOP\r\n$3\r\nAND\r\n$4\r\ndest\r\n$5\r\nnokey\r\n",
    ] {
        assert!(holds(&log, record.as_bytes()), "no {record:?} in {shown}");
    }
    // Nothing was written by these (a FAIL that wrote nothing included).
    for key in ["rokey", "failkey", "BITFIELD_RO"] {
        assert!(!holds(&log, key.as_bytes()), "{key} in {shown}");
    }
}

#[tokio::test]
async fn bitop_and_bitfield_invalidate_watch() {
    let s = Server::under_test();
    let mut c = s.raw();
    let mut other = s.raw();
    let watched = |c: &mut Raw, other: &mut Raw, write: &str| {
        assert_eq!(c.cmd(&["SET", "k", "x"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["WATCH", "k"]), b"+OK\r\n");
        other.cmd(&split(write));
        assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["GET", "k"]), b"+QUEUED\r\n");
        c.cmd(&["EXEC"])
    };
    for write in [
        "BITOP NOT k k",
        "BITFIELD k SET u8 0 1",
        "BITOP AND k nokey",
        "SETBIT k 0 1",
    ] {
        eqb!(watched(&mut c, &mut other, write), b"*-1\r\n");
    }
    // Reads, and writes that change nothing, leave the watch alone.
    for write in ["BITFIELD k GET u8 0", "SETBIT k 1 1", "BITCOUNT k"] {
        eqb!(watched(&mut c, &mut other, write), b"*1\r\n$1\r\nx\r\n");
    }
}

/// Deterministic bytes with long runs of zeros and of ones between random
/// stretches, as bitmaps have.
fn bitmap(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match (i / 100_003) % 3 {
                0 => x as u8,
                1 => 0,
                _ => 0xFF,
            }
        })
        .collect()
}

fn count(b: &[u8]) -> i64 {
    b.iter().map(|x| x.count_ones() as i64).sum()
}

fn bit(b: &[u8], i: usize) -> bool {
    b[i / 8] & (0x80 >> (i % 8)) != 0
}

#[tokio::test]
async fn large_bitmaps_match_a_reference() {
    let s = Server::under_test();
    let mut c = s.client().await;
    // Lengths not a multiple of any block or word size.
    let a = bitmap(24 * 1024 * 1024 + 13, 1);
    let b = bitmap(9 * 1024 * 1024 + 5, 2);
    assert_eq!(query(&mut c, &[b"SET".as_slice(), b"a", &a]).await, ok());
    assert_eq!(query(&mut c, &[b"SET".as_slice(), b"b", &b]).await, ok());

    ck!(c, "BITCOUNT a", int(count(&a)));
    ck!(c, "BITCOUNT b", int(count(&b)));
    let (start, end) = (777_777usize, a.len() - 333_333);
    ck!(
        c,
        format!("BITCOUNT a {start} {end}"),
        int(count(&a[start..=end]))
    );
    ck!(
        c,
        format!("BITCOUNT a {start} -3 BYTE"),
        int(count(&a[start..a.len() - 2]))
    );
    let (bs, be) = (8 * 1_000_001 + 3, 8 * 20_000_000 + 5);
    let want = (bs..=be).filter(|&i| bit(&a, i)).count() as i64;
    ck!(c, format!("BITCOUNT a {bs} {be} BIT"), int(want));

    // A lone set bit deep in zeros, a lone clear bit deep in ones.
    let mut z = vec![0u8; 8 * 1024 * 1024 + 3];
    let at = 8 * 7_654_321 + 5;
    z[at / 8] |= 0x80 >> (at % 8);
    assert_eq!(query(&mut c, &[b"SET".as_slice(), b"z", &z]).await, ok());
    ck!(c, "BITPOS z 1", int(at as i64));
    ck!(c, "BITPOS z 1 100 -1", int(at as i64));
    ck!(c, format!("BITPOS z 1 {} -1 BIT", at + 1), int(-1));
    let ones: Vec<u8> = z.iter().map(|x| !x).collect();
    assert_eq!(query(&mut c, &[b"SET".as_slice(), b"o", &ones]).await, ok());
    ck!(c, "BITPOS o 0", int(at as i64));
    ck!(
        c,
        format!("BITPOS o 0 {}", at / 8 + 1),
        int(ones.len() as i64 * 8)
    );
    ck!(c, format!("BITPOS o 0 {} -1", at / 8 + 1), int(-1));

    let pad = |v: &[u8], i: usize| v.get(i).copied().unwrap_or(0);
    for (op, f) in [
        ("AND", (|x: u8, y: u8| x & y) as fn(u8, u8) -> u8),
        ("OR", |x, y| x | y),
        ("XOR", |x, y| x ^ y),
    ] {
        ck!(c, format!("BITOP {op} d a b"), int(a.len() as i64));
        let want: Vec<u8> = (0..a.len()).map(|i| f(pad(&a, i), pad(&b, i))).collect();
        let got = q!(c, "GET d");
        assert!(got == bulk(&want), "BITOP {op} differs from the reference");
    }
    ck!(c, "BITOP NOT d b", int(b.len() as i64));
    let want: Vec<u8> = b.iter().map(|x| !x).collect();
    assert!(q!(c, "GET d") == bulk(&want), "BITOP NOT differs");
    ck!(c, "BITCOUNT d", int(b.len() as i64 * 8 - count(&b)));
}

/// BITFIELD's key flags, as Redis's bitfieldGetKeys gives them: read-only
/// while every operation is a GET (or OVERFLOW), else read-write.
#[test]
fn bitfield_key_flags_are_redis_s() {
    let keel = Server::keel();
    let redis = Server::redis();
    let (mut k, mut r) = (keel.raw(), redis.raw());
    for line in [
        "BITFIELD bf",
        "BITFIELD bf GET u8 0",
        "BITFIELD bf GET u8 0 OVERFLOW SAT GET i4 4",
        "BITFIELD bf GET u8",
        "BITFIELD bf SET u8 0 1",
        "BITFIELD bf GET u8 0 INCRBY u8 0 1",
        "BITFIELD bf OVERFLOW",
        "BITFIELD bf NOSUCH",
        "BITFIELD_RO bf GET u8 0",
    ] {
        let mut argv = vec!["COMMAND", "GETKEYSANDFLAGS"];
        argv.extend(line.split(' '));
        eqb!(k.cmd(&argv), r.cmd(&argv), "{line}");
    }
}
