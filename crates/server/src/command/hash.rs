//! Hash commands: setting and reading fields, counters, whole-hash reads,
//! random fields and HSCAN. Replies and errors as Redis 7.0.
//!
//! A hash key never holds an empty hash: HDEL of the last field deletes the
//! key, and commands that create a hash store it only once it has a field.
//! Reads count keyspace hits and misses; writes look their keys up without
//! counting, as Redis's `lookupKeyWrite`.
//!
//! HINCRBYFLOAT computes as Redis does on x86-64, in 80-bit `long double`
//! printed with `%.17Lf` (so `0.1 + 0.2` is `0.3`, not
//! `0.30000000000000004`): the C library's own (`crate::num::long_double`).

use resp::encode;

use super::args::{self, is};
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::typed;
use super::Ctx;
use crate::clients::notify;
use crate::glob;
use crate::num::long_double;
use crate::storage::hash::Hash;
use crate::storage::list::Elem;

pub(super) fn register(r: &mut Registry) {
    r.add("hset", hset);
    r.add("hmset", hset);
    r.add("hsetnx", hsetnx);
    r.add("hget", hget);
    r.add("hmget", hmget);
    r.add("hgetall", hgetall);
    r.add("hkeys", hkeys);
    r.add("hvals", hvals);
    r.add("hdel", hdel);
    r.add("hexists", hexists);
    r.add("hlen", hlen);
    r.add("hstrlen", hstrlen);
    r.add("hincrby", hincrby);
    r.add("hincrbyfloat", hincrbyfloat);
    r.add("hrandfield", hrandfield);
    r.add("hscan", hscan);
}

/// Bulk reply of an element, integers formatted on the stack.
#[inline]
fn bulk_elem(out: &mut Vec<u8>, e: Elem) {
    match e {
        Elem::Str(s) => encode::bulk(out, s),
        Elem::Int(n) => encode::bulk(out, itoa::Buffer::new().format(n).as_bytes()),
    }
}

/// HSET key field value [field value ...] (and HMSET, replying OK)
fn hset(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len() % 2 == 1 {
        return Err(error::wrong_arity(&cx.cmd.name));
    }
    let limits = cx.limits();
    let pairs = &argv[2..];
    let created = cx.create_or(argv[1], Hash::new, |h| {
        let longest = pairs.iter().map(|a| a.len()).max().unwrap_or(0);
        let sum = pairs.iter().map(|a| a.len()).sum();
        h.prepare(longest, sum, &limits);
        let mut created = 0;
        for fv in pairs.chunks_exact(2) {
            created += h.set(fv[0], fv[1], &limits) as i64;
        }
        Ok(created)
    })?;
    cx.dirty += (pairs.len() / 2) as u64;
    cx.notify(notify::HASH, "hset", argv[1]);
    if cx.cmd.name == "hmset" {
        cx.ok();
    } else {
        cx.int(created);
    }
    Ok(())
}

/// HSETNX key field value
fn hsetnx(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let limits = cx.limits();
    let (field, value) = (argv[2], argv[3]);
    let set = cx.create_or(argv[1], Hash::new, |h| {
        if h.contains(field) {
            return Ok(false);
        }
        h.set(field, value, &limits);
        Ok(true)
    })?;
    if set {
        cx.dirty += 1;
        cx.notify(notify::HASH, "hset", argv[1]);
    }
    cx.int(set as i64);
    Ok(())
}

/// HGET key field
fn hget(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let proto = cx.client.proto;
    match typed::read::<Hash>(&mut cx.view, db, argv[1], now)?.and_then(|h| h.get(argv[2])) {
        Some(e) => bulk_elem(cx.out, e),
        None => encode::null(cx.out, proto),
    }
    Ok(())
}

/// HMGET key field [field ...]
fn hmget(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let proto = cx.client.proto;
    let fields = &argv[2..];
    let h = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?;
    encode::array(cx.out, fields.len());
    for f in fields {
        match h.as_ref().and_then(|h| h.get(f)) {
            Some(e) => bulk_elem(cx.out, e),
            None => encode::null(cx.out, proto),
        }
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Keys,
    Values,
    Both,
}

fn getall_generic(cx: &mut Ctx, argv: &[&[u8]], part: Part) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let proto = cx.client.proto;
    let h = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?;
    let len = h.as_ref().map_or(0, |h| h.len());
    let out = &mut *cx.out;
    match part {
        Part::Both => encode::map(out, len, proto),
        _ => encode::array(out, len),
    }
    if let Some(h) = h {
        h.for_each(|k, v| {
            if part != Part::Values {
                bulk_elem(out, k);
            }
            if part != Part::Keys {
                bulk_elem(out, v);
            }
        });
    }
    Ok(())
}

/// HGETALL key
fn hgetall(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    getall_generic(cx, argv, Part::Both)
}

/// HKEYS key
fn hkeys(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    getall_generic(cx, argv, Part::Keys)
}

/// HVALS key
fn hvals(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    getall_generic(cx, argv, Part::Values)
}

/// HDEL key field [field ...]
fn hdel(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    let Some(h) = typed::write::<Hash>(&mut cx.view, db, key, now)? else {
        cx.int(0);
        return Ok(());
    };
    let mut deleted = 0;
    for f in &argv[2..] {
        if h.remove(f) {
            deleted += 1;
            if h.is_empty() {
                break;
            }
        }
    }
    let empty = h.is_empty();
    if empty {
        cx.view.remove(db, key, now);
    }
    if deleted > 0 {
        cx.dirty += deleted;
        cx.notify(notify::HASH, "hdel", key);
        if empty {
            cx.notify(notify::GENERIC, "del", key);
        }
    }
    cx.int(deleted as i64);
    Ok(())
}

/// HEXISTS key field
fn hexists(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let found =
        typed::read::<Hash>(&mut cx.view, db, argv[1], now)?.is_some_and(|h| h.contains(argv[2]));
    cx.int(found as i64);
    Ok(())
}

/// HLEN key
fn hlen(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let n = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?.map_or(0, |h| h.len());
    cx.int(n as i64);
    Ok(())
}

/// HSTRLEN key field
fn hstrlen(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let n = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?
        .and_then(|h| h.get(argv[2]))
        .map_or(0, Elem::len);
    cx.int(n as i64);
    Ok(())
}

/// HINCRBY key field increment
fn hincrby(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let incr = args::int(argv[3])?;
    let limits = cx.limits();
    let field = argv[2];
    let value = cx.create_or(argv[1], Hash::new, |h| {
        let old = match h.get(field) {
            None => 0,
            Some(Elem::Int(n)) => n,
            Some(Elem::Str(s)) => {
                resp::parse_i64(s).ok_or(CmdError::new("ERR hash value is not an integer"))?
            }
        };
        let new = old.checked_add(incr).ok_or(error::OVERFLOW)?;
        h.set(field, itoa::Buffer::new().format(new).as_bytes(), &limits);
        Ok(new)
    })?;
    cx.dirty += 1;
    cx.notify(notify::HASH, "hincrby", argv[1]);
    cx.int(value);
    Ok(())
}

/// HINCRBYFLOAT key field increment
fn hincrbyfloat(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let incr = long_double::parse(argv[3]).ok_or(error::NOT_FLOAT)?;
    if !incr.is_finite() {
        return Err(CmdError::new("ERR value is NaN or Infinity"));
    }
    let limits = cx.limits();
    let field = argv[2];
    let text = cx.create_or(argv[1], Hash::new, |h| {
        let old = match h.get(field) {
            None => long_double::LongDouble::ZERO,
            Some(Elem::Int(n)) => long_double::LongDouble::from_i64(n),
            Some(Elem::Str(s)) => {
                long_double::parse(s).ok_or(CmdError::new("ERR hash value is not a float"))?
            }
        };
        let sum = old.add(&incr);
        if !sum.is_finite() {
            return Err(error::INCR_FLOAT_NAN);
        }
        let text = sum.to_human_string();
        h.set(field, text.as_bytes(), &limits);
        Ok(text)
    })?;
    cx.dirty += 1;
    cx.notify(notify::HASH, "hincrbyfloat", argv[1]);
    // Logged as an HSET of the result, so a replay cannot round
    // differently (as Redis).
    cx.propagate_instead(vec![vec![
        b"HSET".to_vec(),
        argv[1].to_vec(),
        field.to_vec(),
        text.as_bytes().to_vec(),
    ]]);
    cx.bulk(text.as_bytes());
    Ok(())
}

/// Most elements HRANDFIELD replies with: a bound on the reply size a
/// single command can build (Redis would try to build any size).
const RANDFIELD_MAX: u64 = 1 << 27;

/// HRANDFIELD key [count [WITHVALUES]]
fn hrandfield(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let proto = cx.client.proto;
    let mut rng = rand::thread_rng();
    if argv.len() == 2 {
        let h = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?;
        match h {
            Some(h) => {
                let out = &mut *cx.out;
                h.random_pairs(1, &mut rng, |k, _| bulk_elem(out, k));
            }
            None => encode::null(cx.out, proto),
        }
        return Ok(());
    }
    let l = match resp::parse_i64(argv[2]) {
        None => return Err(error::NOT_INTEGER),
        Some(i64::MIN) => {
            return Err(CmdError::new(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ))
        }
        Some(n) => n,
    };
    let withvalues = match argv.len() {
        3 => false,
        4 if is(argv[3], "WITHVALUES") => {
            if l < -(i64::MAX / 2) || l > i64::MAX / 2 {
                return Err(CmdError::new("ERR value is out of range"));
            }
            true
        }
        _ => return Err(error::SYNTAX),
    };
    let Some(h) = typed::read::<Hash>(&mut cx.view, db, argv[1], now)? else {
        cx.out.extend_from_slice(b"*0\r\n");
        return Ok(());
    };
    let (count, distinct) = (l.unsigned_abs(), l >= 0);
    if count == 0 {
        cx.out.extend_from_slice(b"*0\r\n");
        return Ok(());
    }
    if count * (1 + withvalues as u64) > RANDFIELD_MAX && (!distinct || (count as usize) < h.len())
    {
        return Err(CmdError::new("ERR value is out of range"));
    }
    let out = &mut *cx.out;
    let header = |out: &mut Vec<u8>, n: usize| {
        if withvalues && proto < 3 {
            encode::array(out, n * 2);
        } else {
            encode::array(out, n);
        }
    };
    let emit = |out: &mut Vec<u8>, k: Elem, v: Elem| {
        if withvalues && proto >= 3 {
            encode::array(out, 2);
        }
        bulk_elem(out, k);
        if withvalues {
            bulk_elem(out, v);
        }
    };
    let count = count as usize;
    if !distinct || count == 1 {
        // Draws with repetition, in random order.
        header(out, count);
        h.random_pairs(count, &mut rng, |k, v| emit(out, k, v));
    } else if count >= h.len() {
        // The whole hash.
        header(out, h.len());
        h.for_each(|k, v| emit(out, k, v));
    } else {
        header(out, count);
        h.random_distinct(count, &mut rng, |k, v| emit(out, k, v));
    }
    Ok(())
}

/// HSCAN key cursor [MATCH pattern] [COUNT count]
fn hscan(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let cursor = args::scan_cursor(argv[2])?;
    let (db, now) = (cx.db(), cx.now_ms);
    let Some(h) = typed::read::<Hash>(&mut cx.view, db, argv[1], now)? else {
        cx.out.extend_from_slice(b"*2\r\n$1\r\n0\r\n*0\r\n");
        return Ok(());
    };
    let args::ScanOptions { pattern, count, .. } = args::scan_options(argv, 3, false)?;
    let mut items: Vec<u8> = Vec::new();
    let mut n = 0;
    let next = h.scan(cursor, count, |k, v| {
        if pattern.is_some_and(|p| !glob::matches(p, k, false)) {
            return;
        }
        encode::bulk(&mut items, k);
        encode::bulk(&mut items, v);
        n += 2;
    });
    cx.array(2);
    cx.bulk(itoa::Buffer::new().format(next).as_bytes());
    cx.array(n);
    cx.out.extend_from_slice(&items);
    Ok(())
}
