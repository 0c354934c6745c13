//! Redis 7.4's dialect: keel started with `--redis-version 7.4.1` answers
//! the commands and replies 7.4 added exactly as a real redis-server
//! 7.4.1. CI has no 7.4 server, so its replies are recorded in
//! `data/redis74_replies.txt` (RESP2 and RESP3, escaped); with
//! `KEEL_REDIS74=<path to a 7.4.1 redis-server>` the test also compares
//! against it live, and `record_redis74_replies` (ignored; run with that
//! variable) writes the recording again.
//!
//! The table uses redis-cli quoting, `!` for lines run on both but not
//! compared and `~` for replies compared as sets of lines (a hash with
//! field TTLs keeps its fields in another order than Redis's listpackex,
//! see docs/compatibility.md), as the 7.0 differential table. Times are
//! absolute and far off (HPEXPIREAT, HEXPIRETIME) so every reply is the
//! same on every run; the clock-driven paths (lazy and active expiry) are
//! in `hashes.rs`.

use std::time::Duration;

use crate::harness::*;

const TABLE: &str = r##"
# ------------------------------------------------ HEXPIRE family: arguments
HSET fe a 1 b 2 c 3
HEXPIRE fe
HEXPIRE fe 100
HEXPIRE fe 100 FIELDS
HEXPIRE fe 100 FIELDS 1
HEXPIRE fe 100 FIELDS 0 a
HEXPIRE fe 100 FIELDS -1 a
HEXPIRE fe 100 FIELDS x a
HEXPIRE fe 100 FIELDS 2 a
HEXPIRE fe 100 FIELDS 1 a b
HEXPIRE fe 100 NX 1 a
HEXPIRE fe 100 FOO FIELDS 1 a
HEXPIRE fe 100 fields 1 nosuch
HEXPIRE fe x FIELDS 1 a
HEXPIRE fe -1 FIELDS 1 a
HEXPIRE fe 99999999999999999 FIELDS 1 a
HEXPIRE fe 70368744177 FIELDS 1 a
HPEXPIRE fe 70368744177663 FIELDS 1 a
HEXPIREAT fe 70368744177 FIELDS 1 a
HPEXPIREAT fe 70368744177664 FIELDS 1 a
HPEXPIREAT fe 9223372036854775807 FIELDS 1 a
HTTL fe
HTTL fe FIELDS
HTTL fe FIELDS 0 a
HTTL fe FIELDS 2 a
HTTL fe NOTFIELDS 1 a
HTTL fe FIELDS 1 a b
HPTTL fe FIELDS x a
HEXPIRETIME fe FIELDS -5 a
HPERSIST fe FIELDS 0 a
HPERSIST fe FIELDS 2 a
HPERSIST fe FOO 1 a
HPEXPIRETIME fe FIELDS 3 a b c
SET fe_str x
HEXPIRE fe_str 100 FIELDS 1 a
HTTL fe_str FIELDS 1 a
HPERSIST fe_str FIELDS 1 a
HEXPIRE fe_str x FIELDS 1 a
HEXPIRE nokey 100 FIELDS 2 a b
HPEXPIREAT nokey 1 FIELDS 1 a
HTTL nokey FIELDS 3 a b c
HPTTL nokey FIELDS 1 a
HEXPIRETIME nokey FIELDS 1 a
HPERSIST nokey FIELDS 1 a

# ------------------------------------------------ conditions
HPEXPIREAT fe 4102444800000 FIELDS 2 a nosuch
HPEXPIRETIME fe FIELDS 3 a b nosuch
HEXPIRETIME fe FIELDS 3 a b nosuch
HPEXPIREAT fe 4102444900000 NX FIELDS 2 a b
HPEXPIREAT fe 4102444700000 XX FIELDS 2 a b
HPEXPIREAT fe 4102444600000 GT FIELDS 2 a b
HPEXPIREAT fe 4102444800000 GT FIELDS 2 a b
HPEXPIREAT fe 4102444900000 LT FIELDS 2 a c
HPEXPIREAT fe 4102444500000 LT FIELDS 2 a c
HPEXPIRETIME fe FIELDS 3 a b c
HPEXPIREAT fe 4102444400000 xx fields 3 a a c
HPEXPIREAT fe 4102444400001 gt fields 3 c c c
HPEXPIRETIME fe FIELDS 3 a b c
HEXPIREAT fe 4102444401 FIELDS 1 b
HEXPIRETIME fe FIELDS 3 a b c
HPEXPIRETIME fe FIELDS 3 a b c
OBJECT ENCODING fe
HTTL fe FIELDS 1 nosuch
HPTTL fe FIELDS 1 nosuch

# ------------------------------------------------ HPERSIST
HPERSIST fe FIELDS 3 a nosuch a
HPEXPIRETIME fe FIELDS 3 a b c
HPERSIST fe FIELDS 2 b c
HTTL fe FIELDS 3 a b c
OBJECT ENCODING fe
~HGETALL fe

# ------------------------------------------------ HSET clears a TTL, HINCRBY keeps it
HPEXPIREAT fe 4102444800000 FIELDS 3 a b c
HSET fe a 10
HPEXPIRETIME fe FIELDS 3 a b c
HINCRBY fe b 5
HINCRBYFLOAT fe c 1.5
HPEXPIRETIME fe FIELDS 3 a b c
HSETNX fe b 7
HMGET fe a b c
HSTRLEN fe c
HEXISTS fe b
HLEN fe
HDEL fe b
HPEXPIRETIME fe FIELDS 3 a b c
HSET fe b 2
HPEXPIRETIME fe FIELDS 1 b

# ------------------------------------------------ times already past delete
HSET fp a 1 b 2 c 3 d 4
HPEXPIREAT fp 1 FIELDS 2 a nosuch
HEXISTS fp a
HEXPIRE fp 0 FIELDS 1 b
HPEXPIRE fp 0 NX FIELDS 1 c
HPEXPIREAT fp 4102444800000 FIELDS 1 d
HPEXPIRE fp 0 GT FIELDS 1 d
HPEXPIRE fp 0 LT FIELDS 1 d
HGETALL fp
EXISTS fp
HSET fp2 a 1
HPEXPIREAT fp2 4102444800000 FIELDS 1 a
HEXPIREAT fp2 1 FIELDS 1 a
EXISTS fp2
HSET fp3 a 1 b 2
HEXPIREAT fp3 1 FIELDS 3 a b a
EXISTS fp3

# ------------------------------------------------ whole-hash reads, encodings
HSET fl x 1
HPEXPIREAT fl 4102444800000 FIELDS 1 x
HGETALL fl
HKEYS fl
HVALS fl
HSCAN fl 0
HRANDFIELD fl
HRANDFIELD fl 5
HRANDFIELD fl -2 WITHVALUES
OBJECT ENCODING fl
CONFIG SET hash-max-listpack-entries 2
HSET fl y 2 z 3
OBJECT ENCODING fl
HPEXPIRETIME fl FIELDS 3 x y z
CONFIG SET hash-max-listpack-entries 128
HSET fv v 1
HPEXPIREAT fv 4102444800000 FIELDS 1 v
CONFIG SET hash-max-listpack-value 4
HSET fv w 12345
OBJECT ENCODING fv
CONFIG SET hash-max-listpack-value 64
HPEXPIRETIME fv FIELDS 2 v w

# ------------------------------------------------ copies keep TTLs
COPY fl fl2
HPEXPIRETIME fl2 FIELDS 3 x y z
RENAME fl2 fl3
HPEXPIRETIME fl3 FIELDS 3 x y z
MOVE fl3 1
SELECT 1
HPEXPIRETIME fl3 FIELDS 3 x y z
OBJECT ENCODING fl3
FLUSHDB
SELECT 0

# ------------------------------------------------ RESTORE of Redis 7.4's payloads
RESTORE p1 0 "\x19{\xd8\xc3,\xbb\x03\x00\x00//\x00\x00\x00\x09\x00\x81b\x02\x83two\x04\xf4\x00\xd8\xc3,\xbb\x03\x00\x00\x09\x81a\x02\x01\x01\xf4{\xd8\xc3,\xbb\x03\x00\x00\x09\x81c\x02\x03\x01\x00\x01\xff\x0c\x00;\xdc\x8e\x7f\x96%\x13\xe1"
OBJECT ENCODING p1
HPEXPIRETIME p1 FIELDS 3 a b c
HGET p1 b
RESTORE p2 0 "\x18\xe8\xdb\xc3,\xbb\x03\x00\x00\x03\x00\x01x\xc3\x09@F\x01yy\xe09\x00\x01yy\x00\x01m\xc0\x06\x01\x01n\xc0\x05\x0c\x00a\xebn\x9evK`x"
OBJECT ENCODING p2
HPEXPIRETIME p2 FIELDS 3 x n m
HGET p2 n
RESTORE p3 0 "\x19{\xd8\xc3,\xbb\x03\x00\x00//\x00\x00\x00\x09\x00\x81b\x02\x83two\x04\xf4\x00\xd8\xc3,\xbb\x03\x00\x00\x09\x81a\x02\x01\x01\xf4{\xd8\xc3,\xbb\x03\x00\x00\x09\x81c\x02\x03\x01\x00\x01\xff\x0c\x00;\xdc\x8e\x7f\x96%\x13\xe0"

# ------------------------------------------------ keys that expire whole
HSET fk a 1
HPEXPIREAT fk 4102444800000 FIELDS 1 a
PEXPIREAT fk 4102444700000
PEXPIRETIME fk
HPEXPIRETIME fk FIELDS 1 a
PERSIST fk
HPEXPIRETIME fk FIELDS 1 a

# ------------------------------------------------ 7.2's error texts
XADD xs 1-1 f v
XADD xs 2-1 f v
XDEL xs 2-1
XSETID xs 1-5
XREAD STREAMS xs xs 0
XGROUP CREATE xs g 0
XREADGROUP GROUP g c STREAMS xs xs >
RPUSH lp a b a
LPOS lp a RANK -9223372036854775808
LPOS lp a RANK -9223372036854775807
ACL SETUSER t74 on nopass +get ~k*
ACL DRYRUN t74 set k v
ACL DRYRUN t74 get other
ACL DRYRUN t74 get k
AUTH t74 x
GET other
SET k v
GET k
AUTH default x
ACL DELUSER t74
DEL xs lp

# ------------------------------------------------ scores as 7.2 prints doubles
ZADD zs 1.1 a 1e17 i 1.5e-7 j 123456789012345678 e 0.001 k 1e21 l -2.5 m 1e300 p 5e18 r 0.1 s
ZSCORE zs a
ZSCORE zs i
ZSCORE zs j
ZSCORE zs e
ZSCORE zs l
ZSCORE zs p
ZSCORE zs r
ZRANGE zs 0 -1 WITHSCORES
ZINCRBY zs 0.2 s
ZMSCORE zs a j nosuch
ZADD zs INCR 1.5e-7 j
ZRANGEBYSCORE zs 0 1 WITHSCORES
ZADD zs -0.0 z
ZSCORE zs z
DEL zs

# ------------------------------------------------ SCAN cursors as 7.4 reads them
SET sc1 v
SADD sc2 a
HSET sc3 f v
ZADD sc4 1 m
SCAN " 0" COUNT 1000 MATCH sc1
SCAN "+0" COUNT 1000 MATCH sc1
SCAN "" COUNT 1000
SCAN -1
SCAN " -1" MATCH nothing
SCAN 18446744073709551616
SCAN 0x0
SSCAN sc2 0
SSCAN sc2 " 0"
SSCAN sc2 -1
SSCAN sc2 ""
SSCAN nokey ""
HSCAN sc3 -1
HSCAN sc3 "" COUNT 1
ZSCAN sc4 "01"
ZSCAN nokey ""
DEL sc1 sc2 sc3 sc4

# ------------------------------------------------ CLUSTER MYSHARDID (7.2)
CLUSTER MYSHARDID
CLUSTER MYSHARDID x

# ------------------------------------------------ WAITAOF (7.2)
WAITAOF
WAITAOF 0 0
WAITAOF 0 0 0
WAITAOF 1 0 0
WAITAOF -1 0 0
WAITAOF 0 -1 0
WAITAOF 0 0 -1
WAITAOF x 0 0
MULTI
WAITAOF 0 0 0
EXEC

# ------------------------------------------------ list encodings as 7.2 converts them
RPUSH le a b c
OBJECT ENCODING le
CONFIG SET list-max-listpack-size 4
RPUSH le d e
OBJECT ENCODING le
LPOP le 3
OBJECT ENCODING le
RPOP le
OBJECT ENCODING le
RPUSH le2 x y z w v
OBJECT ENCODING le2
LTRIM le2 0 0
OBJECT ENCODING le2
LINSERT le2 BEFORE x p
LINSERT le2 AFTER x q
LINSERT le2 AFTER nosuch q
RPUSH le2 r s
OBJECT ENCODING le2
LREM le2 0 p
OBJECT ENCODING le2
LREM le2 0 s
OBJECT ENCODING le2
LTRIM le2 0 1
OBJECT ENCODING le2
LSET le2 0 aaaaaaaa
OBJECT ENCODING le2
RPUSH le3 1 2 3
LMOVE le2 le3 LEFT RIGHT
LMOVE le2 le3 LEFT RIGHT
OBJECT ENCODING le2
OBJECT ENCODING le3
CONFIG SET list-max-listpack-size -2
RPUSH le4 0123456789012345678901234567890123456789012345678901234567890123
OBJECT ENCODING le4
SORT le3 ALPHA STORE le5
OBJECT ENCODING le5
CONFIG SET list-max-listpack-size 128
RPUSH le6 a
SET le6v 0123456789012345678901234567890123456789012345678901234567890123
LSET le6 0 0123456789012345678901234567890123456789012345678901234567890123
OBJECT ENCODING le6
CONFIG SET list-max-listpack-size -2
DEL le le2 le3 le4 le5 le6 le6v

# ------------------------------------------------ set encodings as 7.2 converts them
SADD se a b c
OBJECT ENCODING se
SMEMBERS se
SADD se 1 2
SMEMBERS se
DUMP se
SSCAN se 0
SADD si 3 1 2
OBJECT ENCODING si
SADD si x
OBJECT ENCODING si
SMEMBERS si
SREM si 2
SMEMBERS si
SADD sl 0123456789012345678901234567890123456789012345678901234567890123456789
OBJECT ENCODING sl
SADD sl2 a
SADD sl2 0123456789012345678901234567890123456789012345678901234567890123456789
OBJECT ENCODING sl2
SADD sb 1 1099511627776
SADD sb abc
OBJECT ENCODING sb
SMEMBERS sb
CONFIG SET set-max-listpack-entries 3
SADD sh a b c d
OBJECT ENCODING sh
SADD sh2 a
SADD sh2 a a a a
OBJECT ENCODING sh2
SADD sh3 1
SADD sh3 a
OBJECT ENCODING sh3
CONFIG SET set-max-listpack-entries 128
CONFIG SET set-max-intset-entries 2
SADD sh4 1 2 3
OBJECT ENCODING sh4
SADD sh5 1 2
SADD sh5 3
OBJECT ENCODING sh5
CONFIG SET set-max-intset-entries 512
SINTERSTORE sd se si
OBJECT ENCODING sd
SMEMBERS sd
SINTER se si
SADD sn 1 3 a
SINTERSTORE sd se sn
OBJECT ENCODING sd
SUNION si se
SUNIONSTORE sd si se
OBJECT ENCODING sd
SMEMBERS sd
SDIFF se si
SDIFFSTORE sd se si
OBJECT ENCODING sd
SMEMBERS sd
SMOVE se sm a
OBJECT ENCODING sm
SMOVE si sm2 1
OBJECT ENCODING sm2
SPOP se 100
COPY sb sc
OBJECT ENCODING sc
SMEMBERS sc
RESTORE sr 0 "\x14\x12\x12\x00\x00\x00\x04\x00\x81a\x02\x81b\x02\x07\x01\x81c\x02\xff\x0c\x00\xcd\xaa-\x19\x1d\xd0\xe7\xd8"
OBJECT ENCODING sr
SMEMBERS sr
SISMEMBER sr 7
SMISMEMBER sr a 7 z
SREM sr 7
SMEMBERS sr
SRANDMEMBER sr 10
SCARD sr
CONFIG GET set-max-listpack-entries
CONFIG GET set-max-listpack-value
CONFIG SET set-max-listpack-value 1kb
CONFIG SET set-max-listpack-value -1
DEL se si sl sl2 sb sh sh2 sh3 sh4 sh5 sd sn sm sm2 sc sr

# ------------------------------------------------ COMMAND as 7.4 describes commands
COMMAND COUNT
COMMAND INFO get set client|kill hexpire waitaof command|getkeys
COMMAND DOCS get
COMMAND DOCS client|kill
COMMAND GETKEYS PING
COMMAND GETKEYS GET
COMMAND GETKEYS SORT
COMMAND GETKEYSANDFLAGS PING
COMMAND GETKEYS HEXPIRE h 10 FIELDS 1 f

# ------------------------------------------------ 7.2's argument checks and texts
OBJECT HELP
XINFO HELP
CONFIG SET loglevel loud
CONFIG SET loglevel nothing
CONFIG GET loglevel
CONFIG SET loglevel notice
HELLO 3 AUTH nobody pw SETNAME "a b"
HELLO 3 SETNAME "a b" FOO
SET bs foobar
BITCOUNT bs -1 -2 FOO
BITCOUNT bs -1 -2
BITCOUNT nokey 0
BITCOUNT nokey a b c d
BITCOUNT nokey 0 1 FOO
BITCOUNT nokey x 1
BITCOUNT bs 1 2 BIT
BITPOS nokey 0 x y z w
BITPOS nokey 1 0 1 FOO
BITPOS nokey 0 x
RPUSH bl a
BITPOS bl 1 x
BITPOS bl 1 0
FUNCTION RESTORE "\xf6\x05#!lua\n\x00\x15\xdc\xf8\x87\xafZdn" FLUSH
# ------------------------------------------------ negative LIMIT offsets walk a skiplist from its end
ZADD zl 1 a 2 b 3 c
ZRANGEBYSCORE zl -inf +inf LIMIT -1 3
CONFIG SET zset-max-listpack-entries 0
ZADD zk 1 a 2 b 3 c 4 d
CONFIG SET zset-max-listpack-entries 128
OBJECT ENCODING zk
ZRANGEBYSCORE zk -inf +inf LIMIT -1 3
ZRANGEBYSCORE zk -inf +inf LIMIT -2 3
ZRANGEBYSCORE zk -inf +inf LIMIT -4 1
ZRANGEBYSCORE zk -inf +inf LIMIT -5 3
ZRANGEBYSCORE zk 2 3 LIMIT -2 5
ZRANGEBYSCORE zk 2 3 LIMIT -3 5
ZREVRANGEBYSCORE zk +inf -inf LIMIT -1 3
ZREVRANGEBYSCORE zk +inf -inf LIMIT -3 2
ZREVRANGEBYSCORE zk 3 2 LIMIT -2 5
ZREVRANGEBYSCORE zk 3 2 LIMIT -3 5
ZRANGEBYLEX zk - + LIMIT -1 3
ZREVRANGEBYLEX zk + - LIMIT -2 3
ZRANGE zk -inf +inf BYSCORE LIMIT -2 -1
ZRANGESTORE zd zk -inf +inf BYSCORE LIMIT -2 1
ZRANGE zd 0 -1
# ------------------------------------------------ ACL rules as 7.2 keeps them
ACL SETUSER r1 on nopass +get +set -@all +@read -@dangerous +config|get +select|0 ~*
ACL GETUSER r1
ACL LIST
ACL SETUSER r1 -config +config|set +@read -get
ACL GETUSER r1
ACL SETUSER r1 +@all -flushall
ACL GETUSER r1
ACL SETUSER r1 reset
ACL GETUSER r1
ACL DELUSER r1
DEL bs bl zl zk zd

# ------------------------------------------------ HSCAN NOVALUES (7.4)
HSET hn a 1 b 2 c 3
HSCAN hn 0 NOVALUES
HSCAN hn 0 MATCH b NOVALUES
HSCAN hn 0 novalues COUNT 0
HSCAN hn 0 COUNT 0 NOVALUES
HSCAN nokey 0 NOVALUES
SSCAN hn 0 NOVALUES
SADD sn2 a
SSCAN sn2 0 NOVALUES
ZADD zn 1 a
ZSCAN zn 0 NOVALUES
SCAN 0 NOVALUES
SCAN 0 TYPE hash NOVALUES
HPEXPIREAT hn 70368744177663 FIELDS 1 a
HSCAN hn 0 NOVALUES
DEL hn sn2 zn

# ------------------------------------------------ CLIENT NO-TOUCH, CLIENT SETINFO (7.2)
CLIENT NO-TOUCH
CLIENT NO-TOUCH on
CLIENT NO-TOUCH off
CLIENT NO-TOUCH maybe
CLIENT SETINFO
CLIENT SETINFO lib-name
CLIENT SETINFO lib-name redis-py
CLIENT SETINFO lib-ver 1.2.3
CLIENT SETINFO lib-name "a b"
CLIENT SETINFO lib-ver "x\ny"
CLIENT SETINFO foo bar
CLIENT SETINFO LIB-NAME x
# ------------------------------------------------ locale-collate (7.2), hidden cluster-ping-interval
CONFIG GET locale-collate
CONFIG SET locale-collate xx_YY.nothing
CONFIG SET locale-collate C
CONFIG GET locale-collate
RPUSH coll b a "a\x00z" c "b\x00a"
SORT coll ALPHA LIMIT 0 1
SORT coll ALPHA DESC LIMIT 0 1
SORT coll ALPHA STORE coll2
LRANGE coll2 0 -1
CONFIG SET locale-collate POSIX
CONFIG SET locale-collate ""
CONFIG GET cluster-ping-interval
CONFIG GET cluster-ping*
CONFIG SET cluster-ping-interval -1
CONFIG SET cluster-ping-interval 5
CONFIG GET cluster-ping-interval
CONFIG SET cluster-ping-interval 0

DEL coll coll2 fe fe_str fp fp2 fp3 fl fv fl2 p1 p2 p3 fk
"##;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Exact,
    Unordered,
    NoCompare,
}

struct Line {
    lineno: usize,
    text: String,
    mode: Mode,
    argv: Vec<Vec<u8>>,
}

fn table() -> Vec<Line> {
    TABLE
        .lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let (mode, rest) = match line.as_bytes()[0] {
                b'!' => (Mode::NoCompare, &line[1..]),
                b'~' => (Mode::Unordered, &line[1..]),
                _ => (Mode::Exact, line),
            };
            Some(Line {
                lineno: i + 1,
                text: line.to_string(),
                mode,
                argv: split(rest),
            })
        })
        .collect()
}

/// The table's replies from `server`, escaped: RESP2, then RESP3 (on a
/// second run, after FLUSHALL).
fn replies(server: &Server) -> Vec<String> {
    let mut out = Vec::new();
    for resp3 in [false, true] {
        let mut conn = server.raw();
        conn.timeout = Duration::from_secs(10);
        conn.cmd(&["FLUSHALL"]);
        if resp3 {
            conn.cmd(&["HELLO", "3"]);
        }
        for line in table() {
            let reply = conn.cmd(&line.argv);
            out.push(match line.mode {
                Mode::Exact => escape(&reply),
                Mode::Unordered => unordered(&reply),
                Mode::NoCompare => String::from("-"),
            });
        }
    }
    out
}

/// A field-value reply (HGETALL) with its pairs sorted, header first.
fn unordered(reply: &[u8]) -> String {
    let text = escape(reply);
    let mut parts: Vec<&str> = text.split("\\r\\n").collect();
    let header = parts.remove(0);
    // A pair is four lines: $len, field, $len, value.
    let mut items: Vec<String> = parts.chunks(4).map(|c| c.join("\\r\\n")).collect();
    items.sort();
    format!("{header} sorted: {}", items.join(" | "))
}

const RECORDING: &str = "tests/it/data/redis74_replies.txt";

fn recorded() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDING);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines().map(str::to_string).collect()
}

fn reference() -> Option<Server> {
    Server::redis74()
}

fn diffs(keel: &[String], redis: &[String]) -> Vec<String> {
    let lines = table();
    let mut out = Vec::new();
    for (i, (k, r)) in keel.iter().zip(redis).enumerate() {
        if k != r {
            let line = &lines[i % lines.len()];
            out.push(format!(
                "line {} ({}): {}\n    keel:  {k}\n    redis: {r}",
                line.lineno,
                if i < lines.len() { "RESP2" } else { "RESP3" },
                line.text
            ));
        }
    }
    if keel.len() != redis.len() {
        out.push(format!("{} replies against {}", keel.len(), redis.len()));
    }
    out
}

#[test]
fn same_replies_as_redis_74() {
    let keel = Server::keel_with(&["--redis-version", "7.4.1"]);
    let got = replies(&keel);
    assert!(got.len() >= 2 * 150, "only {} replies", got.len());
    let mut all = diffs(&got, &recorded());
    if let Some(redis) = reference() {
        all.extend(diffs(&got, &replies(&redis)));
    }
    assert!(
        all.is_empty(),
        "{} replies differ from Redis 7.4.1's:\n{}",
        all.len(),
        all.join("\n")
    );
}

#[test]
#[ignore = "writes the recording; needs KEEL_REDIS74"]
fn record_redis74_replies() {
    let redis = reference().expect("KEEL_REDIS74: a redis-server 7.4.1");
    let got = replies(&redis);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDING);
    std::fs::write(&path, got.join("\n") + "\n").expect("write the recording");
}

/// A consumer's fields in XINFO CONSUMERS or XINFO STREAM FULL (RESP3).
fn consumer_fields(v: &resp::Value) -> Vec<(String, resp::Value)> {
    match v {
        resp::Value::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| match k {
                resp::Value::Bulk(k) => (String::from_utf8_lossy(k).into_owned(), v.clone()),
                other => panic!("field name {other:?}"),
            })
            .collect(),
        other => panic!("not a map: {other:?}"),
    }
}

fn field<'a>(fields: &'a [(String, resp::Value)], name: &str) -> &'a resp::Value {
    &fields
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
        .1
}

fn int(v: &resp::Value) -> i64 {
    match v {
        resp::Value::Integer(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

/// Redis 7.2's consumer activity: `inactive` in XINFO CONSUMERS and
/// `active-time` in XINFO STREAM FULL (-1 until an entry was delivered or
/// claimed), XCLAIM creating its consumer even when it claims nothing, and
/// the active time kept by an RDB 12 round trip (stream type 21). Times
/// are compared with each other, never with the clock.
fn consumer_activity_as_redis_72(server: &Server) {
    let mut c = server.raw();
    c.cmd(&["HELLO", "3"]);
    c.cmd(&["DEL", "cs"]);
    c.cmd(&["XADD", "cs", "1-1", "f", "v"]);
    c.cmd(&["XGROUP", "CREATE", "cs", "g", "0"]);
    c.cmd(&["XGROUP", "CREATECONSUMER", "cs", "g", "idle"]);
    // Nothing to claim: the consumer exists afterwards all the same.
    assert_eq!(
        c.cmd(&["XCLAIM", "cs", "g", "claimer", "0", "9-9"]),
        b"*0\r\n"
    );
    c.cmd(&["XREADGROUP", "GROUP", "g", "reader", "STREAMS", "cs", ">"]);
    let consumers = |c: &mut Raw| match c.call(&["XINFO", "CONSUMERS", "cs", "g"]) {
        resp::Value::Array(list) => list.iter().map(consumer_fields).collect::<Vec<_>>(),
        other => panic!("XINFO CONSUMERS: {other:?}"),
    };
    let list = consumers(&mut c);
    let names: Vec<_> = list
        .iter()
        .map(|f| match field(f, "name") {
            resp::Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("name {other:?}"),
        })
        .collect();
    assert_eq!(names, ["claimer", "idle", "reader"]);
    for f in &list {
        let keys: Vec<&str> = f.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["name", "pending", "idle", "inactive"]);
    }
    assert_eq!(int(field(&list[0], "inactive")), -1);
    assert_eq!(int(field(&list[1], "inactive")), -1);
    assert!(int(field(&list[2], "inactive")) >= 0);
    let full_times = |c: &mut Raw| {
        let full = match c.call(&["XINFO", "STREAM", "cs", "FULL"]) {
            resp::Value::Map(p) => p,
            other => panic!("XINFO STREAM FULL: {other:?}"),
        };
        let groups = full
            .iter()
            .find(|(k, _)| *k == resp::Value::Bulk(b"groups".to_vec()))
            .map(|(_, v)| v.clone())
            .expect("groups");
        let resp::Value::Array(groups) = groups else {
            panic!("groups {groups:?}")
        };
        let g = consumer_fields(&groups[0]);
        let resp::Value::Array(cs) = field(&g, "consumers").clone() else {
            panic!()
        };
        cs.iter()
            .map(|c| {
                let f = consumer_fields(c);
                let keys: Vec<String> = f.iter().map(|(k, _)| k.clone()).collect();
                assert_eq!(
                    keys,
                    ["name", "seen-time", "active-time", "pel-count", "pending"]
                );
                (int(field(&f, "seen-time")), int(field(&f, "active-time")))
            })
            .collect::<Vec<_>>()
    };
    let before = full_times(&mut c);
    assert_eq!(before[0].1, -1);
    assert_eq!(before[1].1, -1);
    assert!(
        before[2].1 >= before[2].0 - 1 && before[2].1 > 0,
        "{before:?}"
    );
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), b"+OK\r\n");
    assert_eq!(full_times(&mut c), before);
    c.cmd(&["DEL", "cs"]);
}

#[test]
fn consumer_activity_is_redis_72s() {
    let keel = Server::keel_with(&["--redis-version", "7.4.1", "--enable-debug-command", "yes"]);
    consumer_activity_as_redis_72(&keel);
    if let Some(redis) = reference() {
        consumer_activity_as_redis_72(&redis);
    }
}
