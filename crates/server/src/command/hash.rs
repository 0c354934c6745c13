//! Hash commands: setting and reading fields, counters, whole-hash reads,
//! random fields and HSCAN. Replies and errors as Redis 7.0.
//!
//! A hash key never holds an empty hash: HDEL of the last field deletes the
//! key, and commands that create a hash store it only once it has a field.
//! Reads count keyspace hits and misses; writes look their keys up without
//! counting, as Redis's `lookupKeyWrite`.
//!
//! Hash-field expiry (Redis 7.4's HEXPIRE family) as Redis: a field past
//! its TTL reads as gone. A command that names it deletes it first on a
//! primary (an `HDEL` logged, `hexpired` published, the key deleted with
//! `del` when it was the last field); a replica hides it until the
//! primary's `HDEL` comes, and the primary's stream sees every field.
//! Whole-hash reads skip such fields without deleting them, HLEN and HDEL
//! count them (as Redis), HRANDFIELD deletes them all first.
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
use crate::storage::field_ttl::{self, MAX_EXPIRE_MS};
use crate::storage::hash::Hash;
use crate::storage::keyspace::Expiry;
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
    r.add("hexpire", hexpire);
    r.add("hpexpire", hexpire);
    r.add("hexpireat", hexpire);
    r.add("hpexpireat", hexpire);
    r.add("httl", httl);
    r.add("hpttl", httl);
    r.add("hexpiretime", httl);
    r.add("hpexpiretime", httl);
    r.add("hpersist", hpersist);
}

// ---------------------------------------------------------------------------
// Field expiry on access.

/// The clock hash fields expire by for this command: 0 (none has) for
/// the primary's stream on a replica.
#[inline]
fn field_clock(cx: &Ctx) -> u64 {
    if cx.view.expiry_mode() == Expiry::Ignore {
        0
    } else {
        cx.now_ms
    }
}

/// Whether the hash at `key` has field TTLs (no hit counted, no access
/// time changed): the cheap test before any field-expiry work.
fn has_field_ttls(cx: &mut Ctx, key: &[u8]) -> bool {
    let (db, now) = (cx.db(), cx.now_ms);
    matches!(cx.view.peek(db, key, now), Some(e) if matches!(&*e.value, crate::storage::value::Value::Hash(h) if h.has_field_ttls()))
}

/// Deletes those of `fields` of the hash at `key` that are past their
/// TTL, on a primary (Redis's hashTypeGetValue with HFE_LAZY_EXPIRE): an
/// `HDEL` record each, one `hexpired` event, and the key deleted (a `del`
/// event) when no field is left. Returns whether the key was deleted.
fn expire_named_fields(cx: &mut Ctx, key: &[u8], fields: &[&[u8]]) -> bool {
    if cx.view.expiry_mode() != Expiry::Delete || !has_field_ttls(cx, key) {
        return false;
    }
    let (db, now) = (cx.db(), cx.now_ms);
    let Ok(Some(h)) = typed::write::<Hash>(&mut cx.view, db, key, now) else {
        return false;
    };
    let mut expired: Vec<&[u8]> = Vec::new();
    for f in fields {
        if !expired.contains(f) && h.field_expired(f, now) {
            h.remove(f);
            expired.push(f);
        }
    }
    if expired.is_empty() {
        return false;
    }
    let emptied = h.is_empty();
    fields_expired(cx, key, &expired, emptied);
    emptied
}

/// Deletes every field of the hash at `key` past its TTL, on a primary
/// (Redis's hashTypeExpireIfNeeded, before HRANDFIELD).
fn expire_all_fields(cx: &mut Ctx, key: &[u8]) {
    if cx.view.expiry_mode() != Expiry::Delete || !has_field_ttls(cx, key) {
        return;
    }
    let (db, now) = (cx.db(), cx.now_ms);
    let Ok(Some(h)) = typed::write::<Hash>(&mut cx.view, db, key, now) else {
        return;
    };
    // Strictly before now, as reads judge them (Redis's check here).
    let due: Vec<Vec<u8>> = match h.ttls() {
        Some(t) if t.min().is_some_and(|m| field_ttl::is_expired(m, now)) => t
            .iter()
            .take_while(|(_, at)| field_ttl::is_expired(*at, now))
            .map(|(f, _)| f.to_vec())
            .collect(),
        _ => return,
    };
    for f in &due {
        h.remove(f);
    }
    let emptied = h.is_empty();
    let names: Vec<&[u8]> = due.iter().map(Vec::as_slice).collect();
    fields_expired(cx, key, &names, emptied);
}

/// What follows fields deleted on access for their TTL: the key deleted
/// if they were its last, an `HDEL` record each ahead of the command's,
/// the counter, WATCH and tracking, `hexpired` (and `del`).
fn fields_expired(cx: &mut Ctx, key: &[u8], fields: &[&[u8]], emptied: bool) {
    let (db, now) = (cx.db(), cx.now_ms);
    if emptied {
        cx.view.remove(db, key, now);
    }
    log_field_deletions(cx, key, fields);
    cx.touch(db, key);
    cx.notify(notify::HASH, "hexpired", key);
    if emptied {
        cx.notify(notify::GENERIC, "del", key);
    }
}

/// An `HDEL` record for each of `fields` (deleted for their TTL), ahead
/// of the command's own, and INFO's `expired_subkeys`.
fn log_field_deletions(cx: &mut Ctx, key: &[u8], fields: &[&[u8]]) {
    for f in fields {
        cx.field_deletions
            .push(vec![b"HDEL".to_vec(), key.to_vec(), f.to_vec()]);
    }
    cx.server
        .expired_subkeys
        .fetch_add(fields.len() as u64, std::sync::atomic::Ordering::Relaxed);
}

/// An array reply of integers.
fn int_array(cx: &mut Ctx, items: &[i64]) {
    cx.array(items.len());
    for &n in items {
        cx.int(n);
    }
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
    expire_named_fields(cx, argv[1], &argv[2..3]);
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
    expire_named_fields(cx, argv[1], &argv[2..3]);
    let (db, now, clock) = (cx.db(), cx.now_ms, field_clock(cx));
    let proto = cx.client.proto;
    match typed::read::<Hash>(&mut cx.view, db, argv[1], now)?
        .and_then(|h| live_get(h, argv[2], clock))
    {
        Some(e) => bulk_elem(cx.out, e),
        None => encode::null(cx.out, proto),
    }
    Ok(())
}

/// The value of `field` unless it is past its TTL at `clock`.
#[inline]
fn live_get<'h>(h: &'h Hash, field: &[u8], clock: u64) -> Option<Elem<'h>> {
    h.get(field).filter(|_| !h.field_expired(field, clock))
}

/// HMGET key field [field ...]
fn hmget(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    expire_named_fields(cx, argv[1], &argv[2..]);
    let clock = field_clock(cx);
    let proto = cx.client.proto;
    let fields = &argv[2..];
    let h = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?;
    encode::array(cx.out, fields.len());
    for f in fields {
        match h.as_ref().and_then(|h| live_get(h, f, clock)) {
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

/// Fields of `h` past their TTL at `clock` (stored, not yet deleted).
fn expired_count(h: &Hash, clock: u64) -> usize {
    match h.ttls() {
        Some(t) if t.min().is_some_and(|m| field_ttl::is_expired(m, clock)) => t
            .iter()
            .take_while(|(_, at)| field_ttl::is_expired(*at, clock))
            .count(),
        _ => 0,
    }
}

fn getall_generic(cx: &mut Ctx, argv: &[&[u8]], part: Part) -> CmdResult {
    let (db, now, clock) = (cx.db(), cx.now_ms, field_clock(cx));
    let proto = cx.client.proto;
    let h = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?;
    let hidden = h.as_ref().map_or(0, |h| expired_count(h, clock));
    let len = h.as_ref().map_or(0, |h| h.len()) - hidden;
    let out = &mut *cx.out;
    match part {
        Part::Both => encode::map(out, len, proto),
        _ => encode::array(out, len),
    }
    if let Some(h) = h {
        h.for_each(|k, v| {
            if hidden > 0 && k.with_bytes(|k| h.field_expired(k, clock)) {
                return;
            }
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
    expire_named_fields(cx, argv[1], &argv[2..3]);
    let (db, now, clock) = (cx.db(), cx.now_ms, field_clock(cx));
    let found = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?
        .is_some_and(|h| live_get(h, argv[2], clock).is_some());
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
    expire_named_fields(cx, argv[1], &argv[2..3]);
    let (db, now, clock) = (cx.db(), cx.now_ms, field_clock(cx));
    let n = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?
        .and_then(|h| live_get(h, argv[2], clock))
        .map_or(0, Elem::len);
    cx.int(n as i64);
    Ok(())
}

/// HINCRBY key field increment
fn hincrby(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let incr = args::int(argv[3])?;
    expire_named_fields(cx, argv[1], &argv[2..3]);
    let limits = cx.limits();
    let field = argv[2];
    let clock = field_clock(cx);
    let value = cx.create_or(argv[1], Hash::new, |h| {
        let old = match live_get(h, field, clock) {
            None => 0,
            Some(Elem::Int(n)) => n,
            Some(Elem::Str(s)) => {
                resp::parse_i64(s).ok_or(CmdError::new("ERR hash value is not an integer"))?
            }
        };
        let new = old.checked_add(incr).ok_or(error::OVERFLOW)?;
        h.set_keep_ttl(field, itoa::Buffer::new().format(new).as_bytes(), &limits);
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
    expire_named_fields(cx, argv[1], &argv[2..3]);
    let limits = cx.limits();
    let field = argv[2];
    let clock = field_clock(cx);
    let text = cx.create_or(argv[1], Hash::new, |h| {
        let old = match live_get(h, field, clock) {
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
        h.set_keep_ttl(field, text.as_bytes(), &limits);
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
        expire_all_fields(cx, argv[1]);
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
    expire_all_fields(cx, argv[1]);
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

/// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]
fn hscan(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let cursor = args::scan_cursor(argv[2])?;
    let (db, now, clock) = (cx.db(), cx.now_ms, field_clock(cx));
    let Some(h) = typed::read::<Hash>(&mut cx.view, db, argv[1], now)? else {
        cx.out.extend_from_slice(b"*2\r\n$1\r\n0\r\n*0\r\n");
        return Ok(());
    };
    let args::ScanOptions {
        pattern,
        count,
        members_only,
        ..
    } = args::scan_options(argv, 3, args::ScanOf::Hash)?;
    let mut items: Vec<u8> = Vec::new();
    let mut n = 0;
    let h: &Hash = h;
    let next = h.scan(cursor, count, |k, v| {
        if h.field_expired(k, clock) || pattern.is_some_and(|p| !glob::matches(p, k, false)) {
            return;
        }
        encode::bulk(&mut items, k);
        n += 1;
        if !members_only {
            encode::bulk(&mut items, v);
            n += 1;
        }
    });
    cx.array(2);
    cx.bulk(itoa::Buffer::new().format(next).as_bytes());
    cx.array(n);
    cx.out.extend_from_slice(&items);
    Ok(())
}

// ---------------------------------------------------------------------------
// HEXPIRE and its family (Redis 7.4).

/// The field list of the HEXPIRE family: `FIELDS numfields field ...`
/// starting at `at`, checked as Redis does (`bad_count` is the command's
/// own text for a count below 1 or not a number).
fn fields_arg<'a>(
    argv: &'a [&'a [u8]],
    at: usize,
    bad_count: &str,
) -> Result<&'a [&'a [u8]], CmdError> {
    if !argv.get(at).is_some_and(|a| is(a, "FIELDS")) {
        return Err(CmdError::new(
            "ERR Mandatory argument FIELDS is missing or not at the right position",
        ));
    }
    let n = argv
        .get(at + 1)
        .and_then(|a| resp::parse_i64(a))
        .filter(|&n| n >= 1)
        .ok_or_else(|| CmdError::new(format!("ERR {bad_count}")))?;
    let fields = &argv[at + 2..];
    if n as usize != fields.len() || n > fields.len() as i64 {
        return Err(CmdError::new(
            "ERR The `numfields` parameter must match the number of arguments",
        ));
    }
    Ok(fields)
}

/// What HEXPIRE did to one field (its reply).
const NO_FIELD: i64 = -2;
const CONDITION_NOT_MET: i64 = 0;
const SET: i64 = 1;
const DELETED: i64 = 2;

/// HEXPIRE / HPEXPIRE / HEXPIREAT / HPEXPIREAT key time [NX|XX|GT|LT]
/// FIELDS numfields field [field ...]
///
/// Logged as HPEXPIREAT with the absolute time and only the fields whose
/// TTL was set; fields deleted because the time has passed as `HDEL`s.
fn hexpire(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let name = cx.cmd.name.clone();
    let seconds = name == "hexpire" || name == "hexpireat";
    let relative = name == "hexpire" || name == "hpexpire";
    let (db, now) = (cx.db(), cx.now_ms);
    let key = argv[1];
    // WRONGTYPE first, as Redis (lookupKeyWrite + checkType).
    let exists = typed::write::<Hash>(&mut cx.view, db, key, now)?.is_some();
    let mut at = args::int(argv[2])?;
    if at < 0 {
        return Err(CmdError::new("ERR invalid expire time, must be >= 0"));
    }
    let out_of_range = || CmdError::new(format!("ERR invalid expire time in '{name}' command"));
    if seconds {
        if at > (MAX_EXPIRE_MS / 1000) as i64 {
            return Err(out_of_range());
        }
        at *= 1000;
    }
    let base = if relative { now as i64 } else { 0 };
    if at > MAX_EXPIRE_MS as i64 - base {
        return Err(out_of_range());
    }
    let at = (at + base) as u64;
    let cond = match argv[3] {
        c if is(c, "NX") => Some(b'N'),
        c if is(c, "XX") => Some(b'X'),
        c if is(c, "GT") => Some(b'G'),
        c if is(c, "LT") => Some(b'L'),
        _ => None,
    };
    let fields_at = if cond.is_some() { 4 } else { 3 };
    let fields = fields_arg(
        argv,
        fields_at,
        "Parameter `numFields` should be greater than 0",
    )?;
    if !exists {
        int_array(cx, &vec![NO_FIELD; fields.len()]);
        return Ok(());
    }
    let gone_at_once = cx.already_expired(at as i64);
    let Some(h) = typed::write::<Hash>(&mut cx.view, db, key, now)? else {
        unreachable!("the hash was there a moment ago, under the same lock")
    };
    let mut results = Vec::with_capacity(fields.len());
    let mut set_fields: Vec<&[u8]> = Vec::new();
    let mut deleted: Vec<&[u8]> = Vec::new();
    for &f in fields {
        if !h.contains(f) {
            results.push(NO_FIELD);
            continue;
        }
        let met = match (h.field_expiry(f), cond) {
            // Without a TTL, NX and LT hold; XX and GT do not.
            (None, Some(b'X' | b'G')) => false,
            (None, _) => true,
            (Some(_), Some(b'N')) => false,
            (Some(prev), Some(b'G')) => prev < at,
            (Some(prev), Some(b'L')) => prev > at,
            (Some(_), _) => true,
        };
        if !met {
            results.push(CONDITION_NOT_MET);
            continue;
        }
        if gone_at_once {
            h.remove(f);
            deleted.push(f);
            results.push(DELETED);
        } else {
            h.set_field_expiry(f, at);
            set_fields.push(f);
            results.push(SET);
        }
    }
    let emptied = h.is_empty();
    if !set_fields.is_empty() {
        cx.view.note_field_expiry(db, key, at);
    }
    int_array(cx, &results);
    if set_fields.is_empty() && deleted.is_empty() {
        return Ok(());
    }
    cx.dirty += (set_fields.len() + deleted.len()) as u64;
    if !deleted.is_empty() {
        log_field_deletions(cx, key, &deleted);
    }
    if emptied {
        cx.view.remove(db, key, now);
        cx.notify(notify::HASH, "hdel", key);
        cx.notify(notify::GENERIC, "del", key);
    } else {
        let event = if deleted.is_empty() {
            "hexpire"
        } else {
            "hdel"
        };
        cx.notify(notify::HASH, event, key);
    }
    // HPEXPIREAT of the fields set, or nothing beyond the HDELs.
    let mut logged = Vec::new();
    if !set_fields.is_empty() {
        let mut cmd = vec![
            b"HPEXPIREAT".to_vec(),
            key.to_vec(),
            itoa::Buffer::new().format(at).as_bytes().to_vec(),
        ];
        if cond.is_some() {
            cmd.push(argv[3].to_vec());
        }
        cmd.push(argv[fields_at].to_vec());
        cmd.push(
            itoa::Buffer::new()
                .format(set_fields.len())
                .as_bytes()
                .to_vec(),
        );
        cmd.extend(set_fields.iter().map(|f| f.to_vec()));
        logged.push(cmd);
    }
    cx.propagate_instead(logged);
    Ok(())
}

/// HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME key FIELDS numfields field
/// [field ...]
fn httl(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let name = cx.cmd.name.clone();
    let seconds = name == "httl" || name == "hexpiretime";
    let (db, now) = (cx.db(), cx.now_ms);
    let base = if name == "httl" || name == "hpttl" {
        now
    } else {
        0
    };
    let h = typed::read::<Hash>(&mut cx.view, db, argv[1], now)?;
    let fields = fields_arg(argv, 2, "Number of fields must be a positive integer")?;
    let mut results = Vec::with_capacity(fields.len());
    if let Some(h) = h {
        // A listpackex counts a field due this very millisecond as gone,
        // a hashtable only once it is past (Redis's two checks).
        let small = h.encoding() == "listpackex";
        for &f in fields {
            let r = if !h.contains(f) {
                NO_FIELD
            } else {
                match h.field_expiry(f) {
                    None => -1,
                    Some(at) if (small && at <= now) || (!small && at < now) => NO_FIELD,
                    Some(at) if seconds => ((at + 999 - base) / 1000) as i64,
                    Some(at) => (at - base) as i64,
                }
            };
            results.push(r);
        }
    } else {
        results.resize(fields.len(), NO_FIELD);
    }
    int_array(cx, &results);
    Ok(())
}

/// HPERSIST key FIELDS numfields field [field ...]
fn hpersist(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, clock) = (cx.db(), cx.now_ms, field_clock(cx));
    let key = argv[1];
    let exists = typed::write::<Hash>(&mut cx.view, db, key, now)?.is_some();
    let fields = fields_arg(argv, 2, "Number of fields must be a positive integer")?;
    let mut results = Vec::with_capacity(fields.len());
    if exists {
        let Some(h) = typed::write::<Hash>(&mut cx.view, db, key, now)? else {
            unreachable!("the hash was there a moment ago, under the same lock")
        };
        for &f in fields {
            let r = if !h.contains(f) {
                NO_FIELD
            } else {
                match h.field_expiry(f) {
                    None => -1,
                    Some(at) if field_ttl::is_expired(at, clock) => NO_FIELD,
                    Some(_) => {
                        h.persist_field(f);
                        1
                    }
                }
            };
            results.push(r);
        }
    } else {
        results.resize(fields.len(), NO_FIELD);
    }
    let changed = results.contains(&1);
    int_array(cx, &results);
    if changed {
        cx.dirty += 1;
        cx.notify(notify::HASH, "hpersist", key);
    }
    Ok(())
}
