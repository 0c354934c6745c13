//! Set commands: SADD, SREM, SPOP, SRANDMEMBER, SMEMBERS, SISMEMBER,
//! SMISMEMBER, SCARD, SMOVE, SINTER/SUNION/SDIFF (and their STORE forms),
//! SINTERCARD, SSCAN. Replies and errors as Redis 7.0.

use rand::Rng;
use resp::encode;

use super::args;
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::typed;
use super::Ctx;
use crate::clients::notify;
use crate::glob;
use crate::storage::set::{Elem, Set};
use crate::storage::value::{EncodingLimits, Str, Value};

pub(super) fn register(r: &mut Registry) {
    r.add("sadd", sadd);
    r.add("srem", srem);
    r.add("spop", spop);
    r.add("srandmember", srandmember);
    r.add("smembers", smembers);
    r.add("sismember", sismember);
    r.add("smismember", smismember);
    r.add("scard", scard);
    r.add("smove", smove);
    r.add("sinter", sinter);
    r.add("sinterstore", sinterstore);
    r.add("sintercard", sintercard);
    r.add("sunion", sunion);
    r.add("sunionstore", sunionstore);
    r.add("sdiff", sdiff);
    r.add("sdiffstore", sdiffstore);
    r.add("sscan", sscan);
}

/// Deletes `key` if its set became empty (Redis never keeps empty sets).
fn drop_if_empty(cx: &mut Ctx, key: &[u8]) {
    let (db, now) = (cx.db(), cx.now_ms);
    if let Ok(Some(s)) = typed::read::<Set>(&mut cx.view, db, key, now) {
        if s.is_empty() {
            cx.view.remove(db, key, now);
            cx.notify(notify::GENERIC, "del", key);
        }
    }
}

#[inline]
fn reply_elem(out: &mut Vec<u8>, e: Elem) {
    match e {
        Elem::Bytes(b) => encode::bulk(out, b),
        Elem::Int(n) => encode::bulk(out, itoa::Buffer::new().format(n).as_bytes()),
    }
}

/// SADD key member [member ...]
fn sadd(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let lim = cx.limits();
    let key = argv[1];
    let members = &argv[2..];
    let added = cx.create_or(
        key,
        || Set::create(members[0], members.len(), &lim),
        |s| {
            s.expect(members.len(), &lim);
            Ok(members.iter().map(|m| s.add(m, &lim) as i64).sum::<i64>())
        },
    )?;
    cx.dirty += added as u64;
    if added > 0 {
        cx.notify(notify::SET, "sadd", key);
    }
    cx.int(added);
    Ok(())
}

/// SREM key member [member ...]
fn srem(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let key = argv[1];
    let mut removed = 0;
    if let Some(s) = cx.read::<Set>(key)? {
        for m in &argv[2..] {
            removed += s.remove(m) as i64;
            if s.is_empty() {
                break;
            }
        }
        if removed > 0 {
            cx.notify(notify::SET, "srem", key);
            drop_if_empty(cx, key);
        }
    }
    cx.dirty += removed as u64;
    cx.int(removed);
    Ok(())
}

/// Redis's SPOP_MOVE_STRATEGY_MUL: SPOP with a count keeps the members
/// that stay in a new set once they are this many times fewer than those
/// popped.
const SPOP_MOVE_STRATEGY_MUL: u64 = 5;

/// SPOP key [count]
fn spop(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let key = argv[1];
    let (db, now) = (cx.db(), cx.now_ms);
    if argv.len() > 3 {
        return Err(error::SYNTAX);
    }
    if argv.len() == 2 {
        let mut rng = rand::thread_rng();
        let Some(s) = typed::read::<Set>(&mut cx.view, db, key, now)? else {
            cx.null();
            return Ok(());
        };
        let m = s.pop_random(&mut rng);
        let empty = s.is_empty();
        match &m {
            Some(m) => encode::bulk(cx.out, m),
            None => encode::null(cx.out, cx.client.proto),
        }
        cx.notify(notify::SET, "spop", key);
        if empty {
            cx.view.remove(db, key, now);
            cx.notify(notify::GENERIC, "del", key);
        }
        cx.dirty += 1;
        // A random pick must not be redone on replay: log what was taken.
        if let Some(m) = m {
            cx.propagate_instead(vec![vec![b"SREM".to_vec(), key.to_vec(), m]]);
        }
        return Ok(());
    }
    let count = match args::int(argv[2]) {
        Ok(n) if n >= 0 => n as u64,
        _ => return Err(CmdError::new("ERR value is out of range, must be positive")),
    };
    let proto = cx.client.proto;
    let lim = cx.limits();
    let Some(s) = typed::read::<Set>(&mut cx.view, db, key, now)? else {
        encode::set(cx.out, 0, proto);
        return Ok(());
    };
    if count == 0 {
        encode::set(cx.out, 0, proto);
        return Ok(());
    }
    let len = s.len() as u64;
    if count >= len {
        // As Redis: the reply is SUNION of the set (its order, for a
        // compact result, is the order SUNION builds it in).
        let mut whole = Set::new();
        for e in s.iter() {
            whole.add_elem(e, &lim);
        }
        encode::set(cx.out, len as usize, proto);
        for e in whole.iter() {
            reply_elem(cx.out, e);
        }
        cx.view.remove(db, key, now);
        cx.dirty += 1;
        cx.notify(notify::SET, "spop", key);
        cx.notify(notify::GENERIC, "del", key);
        cx.propagate_instead(vec![vec![b"DEL".to_vec(), key.to_vec()]]);
        return Ok(());
    }
    let mut rng = rand::thread_rng();
    encode::set(cx.out, count as usize, proto);
    let mut srem = vec![b"SREM".to_vec(), key.to_vec()];
    let remaining = len - count;
    if lim.sets_as_7_2 && remaining * SPOP_MOVE_STRATEGY_MUL <= count {
        // Redis 7.2's way when most members go: the few that stay move to
        // a new set (a listpack, or an intset for an intset), and the
        // rest are the reply, in the old set's order.
        let mut kept = match s {
            Set::Ints(_) => Set::new(),
            _ => Set::create(b"", 0, &lim),
        };
        for _ in 0..remaining {
            if let Some(m) = s.pop_random(&mut rng) {
                kept.add(&m, &lim);
            }
        }
        for e in s.iter() {
            reply_elem(cx.out, e);
            srem.push(e.to_vec());
        }
        *s = kept;
    } else {
        for _ in 0..count {
            if let Some(m) = s.pop_random(&mut rng) {
                encode::bulk(cx.out, &m);
                srem.push(m);
            }
        }
    }
    cx.dirty += count;
    cx.notify(notify::SET, "spop", key);
    // A random pick must not be redone on replay: log what was taken.
    cx.propagate_instead(vec![srem]);
    Ok(())
}

/// SRANDMEMBER key [count]
fn srandmember(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let key = argv[1];
    let (db, now) = (cx.db(), cx.now_ms);
    if argv.len() > 3 {
        return Err(error::SYNTAX);
    }
    let mut rng = rand::thread_rng();
    if argv.len() == 2 {
        match typed::read::<Set>(&mut cx.view, db, key, now)?.and_then(|s| s.random(&mut rng)) {
            Some(e) => reply_elem(cx.out, e),
            None => encode::null(cx.out, cx.client.proto),
        }
        return Ok(());
    }
    let n = args::int(argv[2])?;
    if n == i64::MIN {
        return Err(CmdError::new(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    let Some(s) = typed::read::<Set>(&mut cx.view, db, key, now)? else {
        cx.array(0);
        return Ok(());
    };
    random_members(cx.out, s, n, &mut rng);
    Ok(())
}

/// SRANDMEMBER's count form: negative counts may repeat members;
/// positive ones are distinct (all of them when count >= size).
fn random_members(out: &mut Vec<u8>, s: &Set, n: i64, rng: &mut impl Rng) {
    let len = s.len();
    if n < 0 {
        let count = n.unsigned_abs() as usize;
        encode::array(out, count);
        for _ in 0..count {
            if let Some(e) = s.random(rng) {
                reply_elem(out, e);
            }
        }
        return;
    }
    let count = n as usize;
    if count >= len {
        encode::array(out, len);
        for e in s.iter() {
            reply_elem(out, e);
        }
        return;
    }
    encode::array(out, count);
    if count * 3 > len {
        // Many of them: a partial shuffle of all members.
        let mut all: Vec<Elem> = s.iter().collect();
        for i in 0..count {
            let j = rng.gen_range(i..len);
            all.swap(i, j);
            reply_elem(out, all[i]);
        }
    } else {
        // Few of them: random picks, skipping repeats.
        let mut picked = std::collections::HashSet::with_capacity(count);
        while picked.len() < count {
            if let Some(p) = s.random_pos(rng) {
                if picked.insert(p) {
                    if let Some(e) = s.at(p) {
                        reply_elem(out, e);
                    }
                }
            }
        }
    }
}

/// SMEMBERS key
fn smembers(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, proto) = (cx.db(), cx.now_ms, cx.client.proto);
    match typed::read::<Set>(&mut cx.view, db, argv[1], now)? {
        None => encode::set(cx.out, 0, proto),
        Some(s) => {
            encode::set(cx.out, s.len(), proto);
            for e in s.iter() {
                reply_elem(cx.out, e);
            }
        }
    }
    Ok(())
}

/// SISMEMBER key member
fn sismember(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let found = cx
        .read::<Set>(argv[1])?
        .is_some_and(|s| s.contains(argv[2]));
    cx.int(found as i64);
    Ok(())
}

/// SMISMEMBER key member [member ...]
fn smismember(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let s = typed::read::<Set>(&mut cx.view, db, argv[1], now)?;
    encode::array(cx.out, argv.len() - 2);
    for m in &argv[2..] {
        let found = s.as_ref().is_some_and(|s| s.contains(m));
        encode::integer(cx.out, found as i64);
    }
    Ok(())
}

/// SCARD key
fn scard(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let n = cx.read::<Set>(argv[1])?.map_or(0, |s| s.len());
    cx.int(n as i64);
    Ok(())
}

/// SMOVE source destination member
fn smove(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (src, dst, m) = (argv[1], argv[2], argv[3]);
    let (db, now) = (cx.db(), cx.now_ms);
    let lim = cx.limits();
    let Some(s) = typed::read::<Set>(&mut cx.view, db, src, now)? else {
        cx.int(0);
        return Ok(());
    };
    let in_src = s.contains(m);
    // Type-check the destination before changing anything.
    let dst_exists = typed::read::<Set>(&mut cx.view, db, dst, now)?.is_some();
    if src == dst {
        cx.int(in_src as i64);
        return Ok(());
    }
    if !in_src {
        cx.int(0);
        return Ok(());
    }
    if let Some(s) = typed::read::<Set>(&mut cx.view, db, src, now)? {
        s.remove(m);
    }
    cx.notify(notify::SET, "srem", src);
    drop_if_empty(cx, src);
    cx.dirty += 1;
    // As smoveCommand: `sadd` only when the member was not already in
    // the destination.
    let added = if dst_exists {
        typed::read::<Set>(&mut cx.view, db, dst, now)?.is_some_and(|d| d.add(m, &lim))
    } else {
        let mut d = Set::create(m, 1, &lim);
        d.add(m, &lim);
        cx.view.set(db, dst, Value::Set(Box::new(d)), 0, now);
        true
    };
    if added {
        cx.dirty += 1;
        cx.notify(notify::SET, "sadd", dst);
    } else {
        cx.unchanged |= 1 << 2;
    }
    cx.int(1);
    Ok(())
}

/// Source sets of a multi-key command, moved out of the keyspace while
/// the command reads them together (the shards are locked, so no one can
/// see the placeholder) and put back by [`Sources::restore`]. Repeated
/// keys share one slot.
struct Sources<'k> {
    keys: Vec<&'k [u8]>,
    sets: Vec<Option<Box<Set>>>,
    /// For each key argument, its index in `keys`/`sets`.
    index: Vec<usize>,
}

const PLACEHOLDER: Value = Value::Str(Str::ZERO);

impl<'k> Sources<'k> {
    fn take(cx: &mut Ctx, keys: &[&'k [u8]]) -> Result<Sources<'k>, CmdError> {
        let (db, now) = (cx.db(), cx.now_ms);
        let mut src = Sources {
            keys: Vec::with_capacity(keys.len()),
            sets: Vec::with_capacity(keys.len()),
            index: Vec::with_capacity(keys.len()),
        };
        for &k in keys {
            if let Some(i) = src.keys.iter().position(|&x| x == k) {
                src.index.push(i);
                continue;
            }
            let taken = match cx.view.get(db, k, now) {
                None => Ok(None),
                Some(e) => match e.value {
                    value @ Value::Set(_) => match std::mem::replace(value, PLACEHOLDER) {
                        Value::Set(s) => Ok(Some(s)),
                        _ => Ok(None),
                    },
                    _ => Err(error::WRONGTYPE),
                },
            };
            match taken {
                Ok(s) => {
                    src.index.push(src.keys.len());
                    src.keys.push(k);
                    src.sets.push(s);
                }
                Err(e) => {
                    src.restore(cx);
                    return Err(e);
                }
            }
        }
        Ok(src)
    }

    fn get(&self, arg: usize) -> Option<&Set> {
        self.sets[self.index[arg]].as_deref()
    }

    fn restore(self, cx: &mut Ctx) {
        let (db, now) = (cx.db(), cx.now_ms);
        for (k, s) in self.keys.into_iter().zip(self.sets) {
            if let Some(s) = s {
                if let Some(e) = cx.view.peek(db, k, now) {
                    *e.value = Value::Set(s);
                }
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// Computes an intersection, union or difference of the source sets, as
/// Redis's sinterGenericCommand and sunionDiffGenericCommand build their
/// result (which decides its encoding and, for compact ones, its order).
/// Intersections visit the smallest set and probe the others.
fn compute(src: &Sources, n: usize, op: Op, lim: &EncodingLimits) -> Set {
    let mut out = Set::new();
    match op {
        Op::Inter => {
            let mut sets: Vec<&Set> = Vec::with_capacity(n);
            for i in 0..n {
                match src.get(i) {
                    Some(s) => sets.push(s),
                    None => return out,
                }
            }
            sets.sort_by_key(|s| s.len());
            if lim.sets_as_7_2 && !matches!(sets[0], Set::Ints(_)) {
                // Redis 7.2 starts from a listpack unless the smallest
                // set is an intset.
                out = Set::create(b"", 0, lim);
            }
            for e in sets[0].iter() {
                if sets[1..].iter().all(|s| s.contains_elem(e)) {
                    out.add_elem(e, lim);
                }
            }
            if lim.sets_as_7_2 {
                out.ints_if_all_ints(lim);
            }
        }
        Op::Union => {
            for s in (0..n).filter_map(|i| src.get(i)) {
                for e in s.iter() {
                    out.add_elem(e, lim);
                }
            }
        }
        Op::Diff => {
            let Some(first) = src.get(0) else {
                return out;
            };
            if (1..n).any(|i| src.index[i] == src.index[0]) {
                return out;
            }
            let others: Vec<&Set> = (1..n).filter_map(|i| src.get(i)).collect();
            // Redis's choice of algorithm, which decides the encodings the
            // result passes through: probe the others for each member of
            // the first set, or add the first set whole and remove the
            // others' members.
            let probe_work = first.len() * (1 + others.len()) / 2;
            let remove_work = first.len() + others.iter().map(|s| s.len()).sum::<usize>();
            if probe_work <= remove_work {
                for e in first.iter() {
                    if !others.iter().any(|s| s.contains_elem(e)) {
                        out.add_elem(e, lim);
                    }
                }
            } else {
                for e in first.iter() {
                    out.add_elem(e, lim);
                }
                for s in &others {
                    for e in s.iter() {
                        e.with_bytes(|b| out.remove(b));
                    }
                    if out.is_empty() {
                        break;
                    }
                }
            }
        }
    }
    out
}

fn set_op(cx: &mut Ctx, keys: &[&[u8]], op: Op) -> CmdResult {
    let lim = cx.limits();
    let src = Sources::take(cx, keys)?;
    let proto = cx.client.proto;
    if op == Op::Inter {
        // Stream the intersection straight from the smallest set.
        let mut sets: Vec<&Set> = Vec::with_capacity(keys.len());
        let mut missing = false;
        for i in 0..keys.len() {
            match src.get(i) {
                Some(s) => sets.push(s),
                None => missing = true,
            }
        }
        if missing {
            encode::set(cx.out, 0, proto);
        } else {
            sets.sort_by_key(|s| s.len());
            let mut found: Vec<Elem> = Vec::new();
            for e in sets[0].iter() {
                if sets[1..].iter().all(|s| s.contains_elem(e)) {
                    found.push(e);
                }
            }
            encode::set(cx.out, found.len(), proto);
            for e in found {
                reply_elem(cx.out, e);
            }
        }
    } else {
        let result = compute(&src, keys.len(), op, &lim);
        encode::set(cx.out, result.len(), proto);
        for e in result.iter() {
            reply_elem(cx.out, e);
        }
    }
    src.restore(cx);
    Ok(())
}

fn set_op_store(cx: &mut Ctx, dst: &[u8], keys: &[&[u8]], op: Op) -> CmdResult {
    let lim = cx.limits();
    let src = Sources::take(cx, keys)?;
    let result = compute(&src, keys.len(), op, &lim);
    src.restore(cx);
    let (db, now) = (cx.db(), cx.now_ms);
    let n = result.len();
    if n == 0 {
        if cx.view.remove(db, dst, now).is_some() {
            cx.dirty += 1;
            cx.notify(notify::GENERIC, "del", dst);
        }
    } else {
        cx.view.set(db, dst, Value::Set(Box::new(result)), 0, now);
        cx.dirty += 1;
        let event = match op {
            Op::Inter => "sinterstore",
            Op::Union => "sunionstore",
            Op::Diff => "sdiffstore",
        };
        cx.notify(notify::SET, event, dst);
    }
    cx.int(n as i64);
    Ok(())
}

/// SINTER key [key ...]
fn sinter(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    set_op(cx, &argv[1..], Op::Inter)
}

/// SUNION key [key ...]
fn sunion(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    set_op(cx, &argv[1..], Op::Union)
}

/// SDIFF key [key ...]
fn sdiff(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    set_op(cx, &argv[1..], Op::Diff)
}

/// SINTERSTORE destination key [key ...]
fn sinterstore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    set_op_store(cx, argv[1], &argv[2..], Op::Inter)
}

/// SUNIONSTORE destination key [key ...]
fn sunionstore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    set_op_store(cx, argv[1], &argv[2..], Op::Union)
}

/// SDIFFSTORE destination key [key ...]
fn sdiffstore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    set_op_store(cx, argv[1], &argv[2..], Op::Diff)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]
fn sintercard(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let numkeys = match args::int(argv[1]) {
        Ok(n) if n > 0 => n as usize,
        _ => return Err(CmdError::new("ERR numkeys should be greater than 0")),
    };
    if numkeys > argv.len() - 2 {
        return Err(CmdError::new(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let limit = args::intercard_limit(argv, 2 + numkeys)?;
    let keys = &argv[2..2 + numkeys];
    let src = Sources::take(cx, keys)?;
    let mut sets: Vec<&Set> = Vec::with_capacity(numkeys);
    let mut missing = false;
    for i in 0..numkeys {
        match src.get(i) {
            Some(s) => sets.push(s),
            None => missing = true,
        }
    }
    let mut n = 0usize;
    if !missing {
        sets.sort_by_key(|s| s.len());
        for e in sets[0].iter() {
            if sets[1..].iter().all(|s| s.contains_elem(e)) {
                n += 1;
                if limit != 0 && n >= limit {
                    break;
                }
            }
        }
    }
    src.restore(cx);
    cx.int(n as i64);
    Ok(())
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]
fn sscan(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let cursor = args::scan_cursor(argv[2])?;
    let (db, now) = (cx.db(), cx.now_ms);
    let Some(s) = typed::read::<Set>(&mut cx.view, db, argv[1], now)? else {
        cx.out.extend_from_slice(b"*2\r\n$1\r\n0\r\n*0\r\n");
        return Ok(());
    };
    let args::ScanOptions { pattern, count, .. } = args::scan_options(argv, 3, args::ScanOf::Set)?;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let next = s.scan(cursor, count, |e| {
        e.with_bytes(|b| {
            if pattern.is_none_or(|p| glob::matches(p, b, false)) {
                found.push(b.to_vec());
            }
        })
    });
    encode::array(cx.out, 2);
    encode::bulk(cx.out, itoa::Buffer::new().format(next).as_bytes());
    encode::array(cx.out, found.len());
    for m in &found {
        encode::bulk(cx.out, m);
    }
    Ok(())
}
