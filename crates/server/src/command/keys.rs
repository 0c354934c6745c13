//! Generic key commands: deletion, existence, expiry, renaming, copying,
//! iteration (KEYS, SCAN, RANDOMKEY), database-wide commands and OBJECT.

use super::args::{self, is, Args};
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::Ctx;
use std::sync::atomic::Ordering::Relaxed;

use crate::clients::notify;
use crate::glob;
use crate::memory::lazyfree;
use crate::storage::access;
use crate::storage::keyspace::View;
use crate::storage::value::{EntryMut, Value};

pub(super) fn register(r: &mut Registry) {
    r.add("del", del);
    r.add("unlink", unlink);
    r.add("exists", exists);
    r.add("touch", touch);
    r.add("expire", expire);
    r.add("pexpire", pexpire);
    r.add("expireat", expireat);
    r.add("pexpireat", pexpireat);
    r.add("ttl", ttl);
    r.add("pttl", pttl);
    r.add("expiretime", expiretime);
    r.add("pexpiretime", pexpiretime);
    r.add("persist", persist);
    r.add("type", type_);
    r.add("rename", rename);
    r.add("renamenx", renamenx);
    r.add("copy", copy);
    r.add("move", move_);
    r.add_all_shards("keys", keys);
    r.add_all_shards("scan", scan);
    r.add_all_shards("randomkey", randomkey);
    r.add_all_shards("dbsize", dbsize);
    r.add_all_shards("flushdb", flushdb);
    r.add_all_shards("flushall", flushall);
    r.add_all_shards("swapdb", swapdb);
    r.add("object|encoding", object_encoding);
    r.add("object|freq", object_freq);
    r.add("object|idletime", object_idletime);
    r.add("object|refcount", object_refcount);
    r.add("object|help", object_help);
}

/// Redis's lookupKeyWrite: the live entry, its access clock touched, no
/// keyspace hit or miss counted.
#[inline]
pub(super) fn lookup_write<'v>(
    view: &'v mut View,
    db: usize,
    key: &[u8],
    now: u64,
) -> Option<EntryMut<'v>> {
    let e = lookup_write_meta(view, db, key, now)?;
    if e.value.is_spilled() {
        crate::tier::load_in_place(e.value);
    }
    Some(e)
}

/// [`lookup_write`] for what the key's metadata answers (existence,
/// expiry, type): a value on disk stays there.
#[inline]
pub(super) fn lookup_write_meta<'v>(
    view: &'v mut View,
    db: usize,
    key: &[u8],
    now: u64,
) -> Option<EntryMut<'v>> {
    let touch = view.is_touching();
    let e = view.peek_meta(db, key, now)?;
    if touch {
        access::touch(e.access, now);
    }
    Some(e)
}

/// Redis's lookupKeyReadWithFlags(LOOKUP_NOTOUCH) (EXISTS, TYPE, TTL,
/// OBJECT): counts a keyspace hit or miss, leaves the access clock alone.
///
/// The keyspace has no single lookup that counts without touching, so
/// this peeks for the clock and puts it back after a counting `get`.
pub(super) fn lookup_read_notouch<'v>(
    view: &'v mut View,
    db: usize,
    key: &[u8],
    now: u64,
) -> Option<EntryMut<'v>> {
    let e = lookup_meta_notouch(view, db, key, now)?;
    if e.value.is_spilled() {
        crate::tier::load_in_place(e.value);
    }
    Some(e)
}

/// [`lookup_read_notouch`] for what the key's metadata answers (EXISTS,
/// TYPE, TTL, OBJECT ENCODING/FREQ/IDLETIME): a value on disk stays
/// there.
pub(super) fn lookup_meta_notouch<'v>(
    view: &'v mut View,
    db: usize,
    key: &[u8],
    now: u64,
) -> Option<EntryMut<'v>> {
    let access = view.peek_meta(db, key, now).map(|e| *e.access);
    let e = view.get_meta(db, key, now)?;
    if let Some(a) = access {
        *e.access = a;
    }
    Some(e)
}

/// DEL key [key ...] (lazily freed too with `lazyfree-lazy-user-del`)
fn del(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    del_keys(cx, argv, lazyfree::LAZY_USER_DEL.load(Relaxed))
}

/// UNLINK key [key ...]: DEL whose large values are freed on the lazy
/// free thread.
fn unlink(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    del_keys(cx, argv, true)
}

fn del_keys(cx: &mut Ctx, argv: &[&[u8]], lazy: bool) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let mut n = 0;
    for key in &argv[1..] {
        if let Some(old) = cx.view.remove(db, key, now) {
            n += 1;
            cx.notify(notify::GENERIC, "del", key);
            if lazy {
                let effort = old.value.free_effort();
                lazyfree::free(old, effort);
            }
        }
    }
    cx.dirty += n;
    cx.int(n as i64);
    Ok(())
}

/// EXISTS key [key ...]
fn exists(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let n = argv[1..]
        .iter()
        .filter(|k| lookup_meta_notouch(&mut cx.view, db, k, now).is_some())
        .count();
    cx.int(n as i64);
    Ok(())
}

/// TOUCH key [key ...]
fn touch(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let n = argv[1..]
        .iter()
        .filter(|k| cx.view.get_meta(db, k, now).is_some())
        .count();
    cx.int(n as i64);
    Ok(())
}

/// Shared body of EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT (Redis's
/// expireGenericCommand).
fn expire_generic(cx: &mut Ctx, argv: &[&[u8]], millis: bool, relative: bool) -> CmdResult {
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    // Options are checked before the time, as Redis does.
    let when_arg = argv[2];
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for a in &argv[3..] {
        if is(a, "NX") {
            nx = true;
        } else if is(a, "XX") {
            xx = true;
        } else if is(a, "GT") {
            gt = true;
        } else if is(a, "LT") {
            lt = true;
        } else {
            return Err(CmdError::new(format!(
                "ERR Unsupported option {}",
                args::lossy(a)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(CmdError::new(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(CmdError::new(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let mut when = args::int(when_arg)?;
    let name = cx.cmd.name.clone();
    if !millis {
        if when > i64::MAX / 1000 || when < i64::MIN / 1000 {
            return Err(error::invalid_expire(&name));
        }
        when *= 1000;
    }
    if relative {
        when = when
            .checked_add(now as i64)
            .ok_or_else(|| error::invalid_expire(&name))?;
    }
    let Some(entry) = lookup_write_meta(&mut cx.view, db, key, now) else {
        cx.int(0);
        return Ok(());
    };
    let current = entry.expire_at;
    let skip = (nx && current != 0)
        || (xx && current == 0)
        || (gt && (current == 0 || when <= current as i64))
        || (lt && current != 0 && when >= current as i64);
    if skip {
        cx.int(0);
        return Ok(());
    }
    if cx.already_expired(when) {
        cx.view.remove(db, key, now);
        cx.notify(notify::GENERIC, "del", key);
        cx.propagate_instead(vec![vec![b"DEL".to_vec(), key.to_vec()]]);
    } else {
        cx.view.set_expire(db, key, when as u64);
        cx.notify(notify::GENERIC, "expire", key);
        // Logged as an absolute time so replay does not extend the TTL.
        let at = when.to_string().into_bytes();
        cx.propagate_instead(vec![vec![b"PEXPIREAT".to_vec(), key.to_vec(), at]]);
    }
    cx.dirty += 1;
    cx.int(1);
    Ok(())
}

/// EXPIRE key seconds [NX | XX | GT | LT]
fn expire(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    expire_generic(cx, argv, false, true)
}

/// PEXPIRE key milliseconds [NX | XX | GT | LT]
fn pexpire(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    expire_generic(cx, argv, true, true)
}

/// EXPIREAT key unix-time-seconds [NX | XX | GT | LT]
fn expireat(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    expire_generic(cx, argv, false, false)
}

/// PEXPIREAT key unix-time-milliseconds [NX | XX | GT | LT]
fn pexpireat(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    expire_generic(cx, argv, true, false)
}

/// Shared body of TTL/PTTL/EXPIRETIME/PEXPIRETIME.
fn ttl_generic(cx: &mut Ctx, key: &[u8], millis: bool, absolute: bool) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let reply = match lookup_meta_notouch(&mut cx.view, db, key, now) {
        None => -2,
        Some(e) if e.expire_at == 0 => -1,
        Some(e) if absolute => {
            if millis {
                e.expire_at as i64
            } else {
                (e.expire_at as i64 + 500) / 1000
            }
        }
        Some(e) => {
            let left = e.expire_at.saturating_sub(now) as i64;
            if millis {
                left
            } else {
                (left + 500) / 1000
            }
        }
    };
    cx.int(reply);
    Ok(())
}

/// TTL key
fn ttl(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    ttl_generic(cx, argv[1], false, false)
}

/// PTTL key
fn pttl(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    ttl_generic(cx, argv[1], true, false)
}

/// EXPIRETIME key
fn expiretime(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    ttl_generic(cx, argv[1], false, true)
}

/// PEXPIRETIME key
fn pexpiretime(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    ttl_generic(cx, argv[1], true, true)
}

/// PERSIST key
fn persist(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let had = lookup_write_meta(&mut cx.view, db, argv[1], now).is_some_and(|e| e.expire_at != 0);
    if had {
        cx.view.set_expire(db, argv[1], 0);
        cx.dirty += 1;
        cx.notify(notify::GENERIC, "persist", argv[1]);
    }
    cx.int(had as i64);
    Ok(())
}

/// TYPE key
fn type_(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let name =
        lookup_meta_notouch(&mut cx.view, db, argv[1], now).map_or("none", |e| e.value.type_name());
    cx.simple(name.as_bytes());
    Ok(())
}

/// Shared body of RENAME/RENAMENX; returns false when NX blocked it.
fn rename_generic(cx: &mut Ctx, argv: &[&[u8]], nx: bool) -> Result<bool, CmdError> {
    let (db, now, src, dst) = (cx.db(), cx.now_ms, argv[1], argv[2]);
    if lookup_write_meta(&mut cx.view, db, src, now).is_none() {
        return Err(error::NO_SUCH_KEY);
    }
    if src == dst {
        return Ok(!nx);
    }
    if nx && lookup_write_meta(&mut cx.view, db, dst, now).is_some() {
        return Ok(false);
    }
    let Some(entry) = cx.view.remove(db, src, now) else {
        return Err(error::NO_SUCH_KEY);
    };
    let unshared = entry.unshared;
    cx.view.set(db, dst, entry.value, entry.expire_at, now);
    if unshared {
        cx.view.set_unshared(db, dst);
    }
    cx.dirty += 1;
    cx.notify(notify::GENERIC, "rename_from", src);
    cx.notify(notify::GENERIC, "rename_to", dst);
    Ok(true)
}

/// RENAME key newkey
fn rename(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    rename_generic(cx, argv, false)?;
    cx.ok();
    Ok(())
}

/// RENAMENX key newkey
fn renamenx(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let done = rename_generic(cx, argv, true)?;
    cx.int(done as i64);
    Ok(())
}

/// COPY source destination [DB destination-db] [REPLACE]
fn copy(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, src, dst) = (cx.db(), cx.now_ms, argv[1], argv[2]);
    let mut dst_db = db;
    let mut replace = false;
    let mut a = Args::new(argv, 3);
    while a.more() {
        if a.word("REPLACE") {
            replace = true;
        } else if let Some(n) = a.option("DB") {
            dst_db = a
                .check(args::db_index(n, cx.server.keyspace.databases()))
                .unwrap_or(db);
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    if cx.server.cluster.enabled() && dst_db != db {
        return Err(CmdError::new(
            "ERR Copying to another database is not allowed in cluster mode",
        ));
    }
    if src == dst && db == dst_db {
        return Err(error::SAME_OBJECT);
    }
    let Some(entry) = cx.view.get(db, src, now) else {
        cx.int(0);
        return Ok(());
    };
    // The clone keeps the encoding (a `raw` string stays raw), as Redis's
    // dupStringObject.
    let (value, expire) = (entry.value.clone(), entry.expire_at);
    if lookup_write_meta(&mut cx.view, dst_db, dst, now).is_some() && !replace {
        cx.int(0);
        return Ok(());
    }
    cx.view.set(dst_db, dst, value, expire, now);
    cx.view.set_unshared(dst_db, dst);
    cx.touch(dst_db, dst);
    cx.publish_new_keys();
    cx.server.notify(notify::GENERIC, "copy_to", dst, dst_db);
    cx.dirty += 1;
    cx.int(1);
    Ok(())
}

/// MOVE key db
fn move_(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if cx.server.cluster.enabled() {
        return Err(CmdError::new("ERR MOVE is not allowed in cluster mode"));
    }
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    let dst_db = args::db_index(argv[2], cx.server.keyspace.databases())?;
    if dst_db == db {
        return Err(error::SAME_OBJECT);
    }
    if lookup_write_meta(&mut cx.view, db, key, now).is_none()
        || lookup_write_meta(&mut cx.view, dst_db, key, now).is_some()
    {
        cx.int(0);
        return Ok(());
    }
    if let Some(entry) = cx.view.remove(db, key, now) {
        let unshared = entry.unshared;
        cx.view.set(dst_db, key, entry.value, entry.expire_at, now);
        if unshared {
            cx.view.set_unshared(dst_db, key);
        }
    }
    cx.touch(dst_db, key);
    cx.notify(notify::GENERIC, "move_from", key);
    cx.publish_new_keys();
    cx.server.notify(notify::GENERIC, "move_to", key, dst_db);
    cx.dirty += 1;
    cx.int(1);
    Ok(())
}

/// KEYS pattern
fn keys(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, pattern) = (cx.db(), cx.now_ms, argv[1]);
    let all = pattern == b"*";
    let mut found: Vec<Vec<u8>> = Vec::new();
    cx.view.for_each_key(db, now, |k, _| {
        if all || glob::matches(pattern, k, false) {
            found.push(k.to_vec());
        }
    });
    cx.array(found.len());
    for k in &found {
        cx.bulk(k);
    }
    Ok(())
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
fn scan(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let cursor = args::scan_cursor(argv[1])?;
    let args::ScanOptions {
        pattern,
        count,
        type_filter,
        ..
    } = args::scan_options(argv, 2, args::ScanOf::Keys)?;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let next = cx.view.scan(db, cursor, count, now, |k, e| {
        if pattern.is_some_and(|p| !glob::matches(p, k, false)) {
            return;
        }
        if type_filter.is_some_and(|t| !t.eq_ignore_ascii_case(e.value.type_name().as_bytes())) {
            return;
        }
        found.push(k.to_vec());
    });
    cx.array(2);
    cx.bulk(itoa::Buffer::new().format(next).as_bytes());
    cx.array(found.len());
    for k in &found {
        cx.bulk(k);
    }
    Ok(())
}

/// RANDOMKEY
fn randomkey(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    match cx.view.random_key(db, now) {
        Some(k) => cx.bulk(&k),
        None => cx.null(),
    }
    Ok(())
}

/// DBSIZE
fn dbsize(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let db = cx.db();
    let n = cx.view.len(db);
    cx.int(n as i64);
    Ok(())
}

/// Parses the optional ASYNC|SYNC of FLUSHDB/FLUSHALL; true = async.
fn flush_mode(argv: &[&[u8]]) -> Result<bool, CmdError> {
    match argv.get(1) {
        None => Ok(lazyfree::LAZY_USER_FLUSH.load(Relaxed)),
        Some(a) if argv.len() == 2 && is(a, "ASYNC") => Ok(true),
        Some(a) if argv.len() == 2 && is(a, "SYNC") => Ok(false),
        Some(_) => Err(error::SYNTAX),
    }
}

/// Frees flushed maps on the lazy free thread for ASYNC, so a huge
/// database does not stall this worker.
fn dispose<T: Send + 'static>(maps: T, async_free: bool) {
    if async_free {
        lazyfree::free_in_background(maps);
    } else {
        drop(maps);
    }
}

/// FLUSHDB [ASYNC | SYNC]
fn flushdb(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let async_free = flush_mode(argv)?;
    let (db, now) = (cx.db(), cx.now_ms);
    let n = cx.view.len(db);
    cx.touch_db(db, |v, k| v.peek_meta(db, k, now).is_some());
    let maps = crate::persistence::capture::flush_db(cx.server, &mut cx.view, db);
    dispose(maps, async_free);
    cx.server.tracking.flushed(&cx.server.clients);
    cx.dirty += n as u64 + 1;
    cx.ok();
    Ok(())
}

/// FLUSHALL [ASYNC | SYNC]
fn flushall(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let async_free = flush_mode(argv)?;
    let mut maps = Vec::new();
    let mut n = 0;
    let now = cx.now_ms;
    for db in 0..cx.server.keyspace.databases() {
        n += cx.view.len(db);
        cx.touch_db(db, |v, k| v.peek_meta(db, k, now).is_some());
        maps.push(crate::persistence::capture::flush_db(
            cx.server,
            &mut cx.view,
            db,
        ));
    }
    dispose(maps, async_free);
    cx.server.tracking.flushed(&cx.server.clients);
    cx.dirty += n as u64 + 1;
    cx.ok();
    Ok(())
}

/// SWAPDB index1 index2
fn swapdb(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if cx.server.cluster.enabled() {
        return Err(CmdError::new("ERR SWAPDB is not allowed in cluster mode"));
    }
    let as_int =
        |a: &[u8]| resp::parse_i64(a).filter(|n| (i32::MIN as i64..=i32::MAX as i64).contains(n));
    let a = as_int(argv[1]).ok_or_else(|| CmdError::new("ERR invalid first DB index"))?;
    let b = as_int(argv[2]).ok_or_else(|| CmdError::new("ERR invalid second DB index"))?;
    let n = cx.server.keyspace.databases() as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return Err(error::DB_RANGE);
    }
    if a != b {
        let (a, b, now) = (a as usize, b as usize, cx.now_ms);
        // A watched key changes if it exists in either database.
        let either = |v: &mut View, k: &[u8]| {
            v.peek_meta(a, k, now).is_some() || v.peek_meta(b, k, now).is_some()
        };
        cx.touch_db(a, either);
        cx.touch_db(b, either);
        crate::persistence::capture::swap_dbs(cx.server, &mut cx.view, a, b);
        cx.dirty += 1;
    }
    cx.ok();
    Ok(())
}

/// OBJECT ENCODING key
fn object_encoding(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    match lookup_meta_notouch(&mut cx.view, db, argv[2], now).map(|e| e.value.encoding()) {
        Some(enc) => cx.bulk(enc.as_bytes()),
        None => cx.null(),
    }
    Ok(())
}

/// OBJECT FREQ key
fn object_freq(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let Some(meta) = lookup_meta_notouch(&mut cx.view, db, argv[2], now).map(|e| *e.access) else {
        cx.null();
        return Ok(());
    };
    if !access::is_lfu() {
        return Err(CmdError::new("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    cx.int(access::lfu_counter(meta, now) as i64);
    Ok(())
}

/// OBJECT IDLETIME key
fn object_idletime(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let Some(meta) = lookup_meta_notouch(&mut cx.view, db, argv[2], now).map(|e| *e.access) else {
        cx.null();
        return Ok(());
    };
    if access::is_lfu() {
        return Err(CmdError::new("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    cx.int(access::idle_seconds(meta, now) as i64);
    Ok(())
}

/// OBJECT REFCOUNT key
fn object_refcount(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let refcount = match lookup_read_notouch(&mut cx.view, db, argv[2], now) {
        None => {
            cx.null();
            return Ok(());
        }
        // Redis shares the integers 0..9999 (OBJ_SHARED_REFCOUNT), except
        // a copy, which gets its own object.
        Some(e) => match &e.value {
            Value::Str(s) if s.as_int().is_some_and(|n| (0..10000).contains(&n)) && !e.unshared => {
                i32::MAX as i64
            }
            _ => 1,
        },
    };
    cx.int(refcount);
    Ok(())
}

/// OBJECT HELP
fn object_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let lines: &[&str] = &[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Prints this help.",
    ];
    cx.help(lines);
    Ok(())
}
