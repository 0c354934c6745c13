//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST, as
//! Redis 7.0's hyperloglog.c: the values are strings in Redis's own format
//! (`storage::hll`), replies, errors, events and dirty counts are Redis's.

use std::sync::atomic::Ordering::Relaxed;

use super::args::{is, lossy};
use super::error::{self, CmdError, CmdResult};
use super::keys::lookup_write;
use super::table::Registry;
use super::Ctx;
use crate::clients::notify;
use crate::storage::hll::{self, Encoding, REGISTERS};
use crate::storage::value::{EntryMut, Str, Value};

pub(super) fn register(r: &mut Registry) {
    r.add("pfadd", pfadd);
    r.add("pfcount", pfcount);
    r.add("pfmerge", pfmerge);
    r.add("pfdebug", pfdebug);
    r.add("pfselftest", pfselftest);
}

const NOT_HLL: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "WRONGTYPE Key is not a valid HyperLogLog string value.",
));
const CORRUPT: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "INVALIDOBJ Corrupted HLL object detected",
));

fn sparse_max(cx: &Ctx) -> usize {
    cx.server.hll_sparse_max_bytes.load(Relaxed)
}

/// Redis's isHLLObjectOrReply: WRONGTYPE (the usual text) for another
/// type, WRONGTYPE (the HLL text) for a string that is not an HLL.
fn hll_str(value: &mut Value) -> Result<(&mut Str, Encoding), CmdError> {
    let Value::Str(s) = value else {
        return Err(error::WRONGTYPE);
    };
    // An integer is not sds-encoded: never an HLL.
    if s.as_int().is_some() {
        return Err(NOT_HLL);
    }
    let enc = s.with_bytes(hll::encoding).map_err(|_| NOT_HLL)?;
    Ok((s, enc))
}

/// Merges the HLLs at `keys` into `max` (missing keys count as empty),
/// reading each as Redis's lookupKeyRead. True if any was dense.
fn merge_keys(cx: &mut Ctx, keys: &[&[u8]], max: &mut [u8; REGISTERS]) -> Result<bool, CmdError> {
    let (db, now) = (cx.db(), cx.now_ms);
    let mut any_dense = false;
    for key in keys {
        let Some(e) = cx.view.get(db, key, now) else {
            continue;
        };
        let (s, enc) = hll_str(e.value)?;
        any_dense |= enc == Encoding::Dense;
        s.with_bytes(|b| hll::merge(max, b)).map_err(|_| CORRUPT)?;
    }
    Ok(any_dense)
}

/// PFADD key [element [element ...]]
fn pfadd(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    let max = sparse_max(cx);
    // Redis's count: one for a created key, one per register raised.
    let mut updated = 0u64;
    match lookup_write(&mut cx.view, db, key, now) {
        None => {
            let mut v = hll::new_sparse();
            updated += 1;
            for ele in &argv[2..] {
                // A fresh HLL is never corrupt.
                updated += u64::from(hll::add(&mut v, ele, max).unwrap_or(false));
            }
            hll::invalidate(&mut v);
            cx.view.set(db, key, Value::Str(Str::raw(v)), 0, now);
        }
        Some(EntryMut { value, .. }) => {
            let (s, _) = hll_str(value)?;
            let v = s.make_raw();
            for ele in &argv[2..] {
                // Registers already raised stay raised, unlogged, as in
                // Redis.
                updated += u64::from(hll::add(v, ele, max).map_err(|_| CORRUPT)?);
            }
            if updated > 0 {
                hll::invalidate(v);
            }
        }
    }
    if updated > 0 {
        cx.dirty += updated;
        cx.notify(notify::STRING, "pfadd", key);
    }
    cx.int((updated > 0) as i64);
    Ok(())
}

/// PFCOUNT key [key ...]
fn pfcount(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len() > 2 {
        // The union, merged on the fly; nothing is written.
        let mut max = [0u8; REGISTERS];
        merge_keys(cx, &argv[1..], &mut max)?;
        cx.int(hll::count_registers(&max) as i64);
        return Ok(());
    }
    let (db, now) = (cx.db(), cx.now_ms);
    before_cache_write(cx, argv[1]);
    let Some(e) = cx.view.get(db, argv[1], now) else {
        cx.int(0);
        return Ok(());
    };
    let (s, _) = hll_str(e.value)?;
    let v = s.make_raw();
    let card = match hll::cached_card(v) {
        Some(card) => card,
        None => {
            let card = hll::count(v).map_err(|_| CORRUPT)?;
            // Caching changes the value: Redis counts it as a write and
            // propagates the PFCOUNT.
            hll::set_cached_card(v, card);
            cx.dirty += 1;
            card
        }
    };
    // A card past i64 (crafted registers) replies negative, as Redis's
    // addReplyLongLong of it.
    cx.int(card as i64);
    Ok(())
}

/// PFCOUNT is flagged read-only, so dispatch has not let a running
/// snapshot or log rewrite take the key's slot before it changes: the
/// cached cardinality it may write would otherwise reach an image taken
/// before it. Two loads when neither runs.
fn before_cache_write(cx: &mut Ctx, key: &[u8]) {
    let slot = [resp::slot::key_slot(key)];
    cx.server.aof.before_execute(&mut cx.view, Some(&slot));
    if cx.server.snapshots.in_progress() {
        cx.server
            .snapshots
            .before_execute(&mut cx.view, Some(&slot));
    }
}

/// PFMERGE destkey [sourcekey [sourcekey ...]]
fn pfmerge(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, dest) = (cx.db(), cx.now_ms, argv[1]);
    let mut max = [0u8; REGISTERS];
    // The destination is merged too, as Redis does.
    let dense = merge_keys(cx, &argv[1..], &mut max)?;
    let limit = sparse_max(cx);
    let store = |v: &mut Vec<u8>| -> CmdResult {
        if dense {
            hll::to_dense(v).map_err(|_| CORRUPT)?;
        }
        for (i, &m) in max.iter().enumerate() {
            if m != 0 {
                // Redis ignores a failure here: the value was checked
                // by the merge above.
                let _ = hll::set_register(v, i, m, limit);
            }
        }
        hll::invalidate(v);
        Ok(())
    };
    match lookup_write(&mut cx.view, db, dest, now) {
        Some(EntryMut { value, .. }) => {
            let (s, _) = hll_str(value)?;
            store(s.make_raw())?;
        }
        None => {
            let mut v = hll::new_sparse();
            store(&mut v)?;
            cx.view.set(db, dest, Value::Str(Str::raw(v)), 0, now);
        }
    }
    cx.dirty += 1;
    // A merge is a mass add: Redis names the event `pfadd`.
    cx.notify(notify::STRING, "pfadd", dest);
    cx.ok();
    Ok(())
}

/// PFDEBUG subcommand key
fn pfdebug(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let sub = argv[1];
    let Some(e) = lookup_write(&mut cx.view, db, argv[2], now) else {
        return Err(CmdError::new("ERR The specified key does not exist"));
    };
    let (s, enc) = hll_str(e.value)?;
    let v = s.make_raw();
    if is(sub, "getreg") {
        if enc == Encoding::Sparse {
            hll::to_dense(v).map_err(|_| CORRUPT)?;
            // The encoding changed: propagate it.
            cx.dirty += 1;
        }
        let regs = hll::dense_registers(v);
        cx.array(regs.len());
        for r in regs {
            cx.int(r as i64);
        }
    } else if is(sub, "decode") {
        if enc != Encoding::Sparse {
            return Err(CmdError::new("ERR HLL encoding is not sparse"));
        }
        let text = hll::decode(v);
        cx.bulk(text.as_bytes());
    } else if is(sub, "encoding") {
        cx.simple(enc.name().as_bytes());
    } else if is(sub, "todense") {
        let converted = hll::to_dense(v).map_err(|_| CORRUPT)?;
        if converted {
            cx.dirty += 1;
        }
        cx.int(converted as i64);
    } else {
        // Redis formats the name as a C string: it ends at a NUL.
        let name = sub.split(|&b| b == 0).next().unwrap_or_default();
        return Err(CmdError::new(format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            lossy(name)
        )));
    }
    Ok(())
}

/// PFSELFTEST
fn pfselftest(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    hll::selftest(sparse_max(cx)).map_err(CmdError::new)?;
    cx.ok();
    Ok(())
}
