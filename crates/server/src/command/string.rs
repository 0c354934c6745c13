//! String commands: SET and its variants, GET and its variants, counters,
//! APPEND and ranges. Replies and errors as Redis 7.

use resp::encode;

use super::args::{self, is, Args};
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::typed;
use super::Ctx;
use crate::clients::notify;
use crate::net::replies::Replies;
use crate::storage::value::{EntryMut, Str, Value};

pub(super) fn register(r: &mut Registry) {
    r.add("get", get);
    r.add("set", set);
    r.add("setnx", setnx);
    r.add("setex", setex);
    r.add("psetex", psetex);
    r.add("getex", getex);
    r.add("getdel", getdel);
    r.add("getset", getset);
    r.add("mget", mget);
    r.add("mset", mset);
    r.add("msetnx", msetnx);
    r.add("incr", incr);
    r.add("decr", decr);
    r.add("incrby", incrby);
    r.add("decrby", decrby);
    r.add("incrbyfloat", incrbyfloat);
    r.add("append", append);
    r.add("strlen", strlen);
    r.add("getrange", getrange);
    r.add("substr", getrange);
    r.add("setrange", setrange);
    r.add("lcs", lcs);
}

fn check_len(cx: &Ctx, len: usize) -> CmdResult {
    if len
        > cx.server
            .proto_max_bulk_len
            .load(std::sync::atomic::Ordering::Relaxed)
    {
        return Err(error::STRING_TOO_LONG);
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Millis,
}

/// Turns an EX/PX/EXAT/PXAT argument into an absolute Unix time in ms, as
/// Redis's `getExpireMillisecondsOrReply`.
fn expire_at(
    cx: &Ctx,
    arg: &[u8],
    unit: Unit,
    relative: bool,
    name: &str,
) -> Result<u64, CmdError> {
    let n = args::int(arg)?;
    if n <= 0 || (unit == Unit::Seconds && n > i64::MAX / 1000) {
        return Err(error::invalid_expire(name));
    }
    let mut ms = if unit == Unit::Seconds { n * 1000 } else { n };
    if relative {
        ms = ms
            .checked_add(cx.now_ms as i64)
            .ok_or_else(|| error::invalid_expire(name))?;
    }
    if ms <= 0 {
        return Err(error::invalid_expire(name));
    }
    Ok(ms as u64)
}

#[derive(Default)]
struct SetOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// The last EX/PX/EXAT/PXAT given and its argument, still unparsed:
    /// Redis validates only that one, and only once the option syntax is
    /// known to be right (GETEX: once the key is known to be a string).
    expire: Option<(ExpireKind, &'a [u8])>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireKind {
    Ex,
    Px,
    ExAt,
    PxAt,
}

impl ExpireKind {
    fn parse(a: &[u8]) -> Option<ExpireKind> {
        [
            ("EX", ExpireKind::Ex),
            ("PX", ExpireKind::Px),
            ("EXAT", ExpireKind::ExAt),
            ("PXAT", ExpireKind::PxAt),
        ]
        .into_iter()
        .find(|(w, _)| is(a, w))
        .map(|(_, k)| k)
    }
}

impl SetOptions<'_> {
    /// The absolute expiry time (ms) the expire option names, if any.
    fn expire_at(&self, cx: &Ctx, name: &str) -> Result<Option<u64>, CmdError> {
        let Some((kind, arg)) = self.expire else {
            return Ok(None);
        };
        let (unit, relative) = match kind {
            ExpireKind::Ex => (Unit::Seconds, true),
            ExpireKind::Px => (Unit::Millis, true),
            ExpireKind::ExAt => (Unit::Seconds, false),
            ExpireKind::PxAt => (Unit::Millis, false),
        };
        expire_at(cx, arg, unit, relative, name).map(Some)
    }
}

/// Parses SET/GETEX options exactly as Redis's
/// parseExtendedStringArgumentsOrReply: NX/XX exclude each other, KEEPTTL
/// (SET) and PERSIST (GETEX) exclude every expire option, two different
/// expire options conflict, and the same one may repeat (the last wins).
/// Flags may repeat too. Numbers are not looked at here.
fn parse_set_options<'a>(
    argv: &[&'a [u8]],
    from: usize,
    for_getex: bool,
) -> Result<SetOptions<'a>, CmdError> {
    let mut o = SetOptions::default();
    let mut args = Args::new(argv, from);
    while let Some(a) = args.take() {
        let kind = o.expire.map(|(k, _)| k);
        if !for_getex && is(a, "NX") && !o.xx {
            o.nx = true;
        } else if !for_getex && is(a, "XX") && !o.nx {
            o.xx = true;
        } else if !for_getex && is(a, "GET") {
            o.get = true;
        } else if !for_getex && is(a, "KEEPTTL") && !o.persist && kind.is_none() {
            o.keepttl = true;
        } else if for_getex && is(a, "PERSIST") && kind.is_none() && !o.keepttl {
            o.persist = true;
        } else if let (true, false, false, Some(k)) =
            (args.more(), o.keepttl, o.persist, ExpireKind::parse(a))
        {
            if kind.is_some_and(|prev| prev != k) {
                args.fail(error::SYNTAX);
            }
            o.expire = Some((k, args.value()));
        } else {
            args.fail(error::SYNTAX);
        }
    }
    args.finish()?;
    Ok(o)
}

/// GET key
fn get(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    match typed::read::<Str>(&mut cx.view, db, argv[1], now)? {
        None => encode::null(cx.out, cx.client.proto),
        Some(s) => bulk_str(cx.out, s),
    }
    Ok(())
}

/// A string value as a bulk reply: a large one by reference.
#[inline]
fn bulk_str(out: &mut Replies, s: &Str) {
    match s.shared() {
        Some(v) => out.bulk_shared(v),
        None => s.with_bytes(|b| encode::bulk(out, b)),
    }
}

/// SET key value [NX | XX] [GET] [EX seconds | PX milliseconds |
/// EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]
fn set(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (key, val) = (argv[1], argv[2]);
    if argv.len() == 3 {
        // The common case, without option parsing or a prior lookup.
        let (db, now) = (cx.db(), cx.now_ms);
        cx.view
            .set(db, key, Value::Str(Str::from_bytes(val)), 0, now);
        cx.dirty += 1;
        cx.notify(notify::STRING, "set", key);
        cx.ok();
        return Ok(());
    }
    let o = parse_set_options(argv, 3, false)?;
    let expire = o.expire_at(cx, "set")?;
    set_generic(cx, key, val, &o, expire)
}

/// Redis's setGenericCommand, the expiry already validated. With GET the
/// old value is read as GET would (counting a hit or miss); otherwise the
/// key is only looked up for writing.
fn set_generic(
    cx: &mut Ctx,
    key: &[u8],
    val: &[u8],
    o: &SetOptions,
    expire_at: Option<u64>,
) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    // (A clone: a large value is shared, not copied; see `bulk_str`.)
    let mut old_value: Option<Str> = None;
    let mut old_expire = 0;
    let found = if o.get {
        cx.view.get(db, key, now)
    } else {
        super::keys::lookup_write_meta(&mut cx.view, db, key, now)
    };
    let exists = match found {
        None => false,
        Some(e) => {
            match &e.value {
                Value::Str(s) => {
                    if o.get {
                        old_value = Some(s.clone());
                    }
                }
                _ if o.get => return Err(error::WRONGTYPE),
                _ => {}
            }
            old_expire = e.expire_at;
            true
        }
    };
    if (o.nx && exists) || (o.xx && !exists) {
        if o.get {
            match old_value {
                Some(v) => bulk_str(cx.out, &v),
                None => cx.null(),
            }
        } else {
            cx.null();
        }
        return Ok(());
    }
    let expire = match expire_at {
        Some(at) => at,
        None if o.keepttl => old_expire,
        None => 0,
    };
    cx.view
        .set(db, key, Value::Str(Str::from_bytes(val)), expire, now);
    cx.dirty += 1;
    cx.notify(notify::STRING, "set", key);
    if let Some(at) = expire_at {
        cx.notify(notify::GENERIC, "expire", key);
        // Replaying a relative TTL later would extend it: log the absolute
        // time, as Redis does.
        let at = at.to_string().into_bytes();
        cx.propagate_instead(vec![vec![
            b"SET".to_vec(),
            key.to_vec(),
            val.to_vec(),
            b"PXAT".to_vec(),
            at,
        ]]);
    }
    if o.get {
        match old_value {
            Some(v) => bulk_str(cx.out, &v),
            None => cx.null(),
        }
    } else {
        cx.ok();
    }
    Ok(())
}

/// SETNX key value
fn setnx(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    if super::keys::lookup_write_meta(&mut cx.view, db, argv[1], now).is_some() {
        cx.int(0);
    } else {
        cx.view
            .set(db, argv[1], Value::Str(Str::from_bytes(argv[2])), 0, now);
        cx.dirty += 1;
        cx.notify(notify::STRING, "set", argv[1]);
        cx.int(1);
    }
    Ok(())
}

/// SETEX key seconds value
fn setex(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let at = expire_at(cx, argv[2], Unit::Seconds, true, "setex")?;
    set_generic(cx, argv[1], argv[3], &SetOptions::default(), Some(at))
}

/// PSETEX key milliseconds value
fn psetex(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let at = expire_at(cx, argv[2], Unit::Millis, true, "psetex")?;
    set_generic(cx, argv[1], argv[3], &SetOptions::default(), Some(at))
}

/// GETEX key [EX seconds | PX milliseconds | EXAT unix-time-seconds |
/// PXAT unix-time-milliseconds | PERSIST]
fn getex(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let o = parse_set_options(argv, 2, true)?;
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    let Some(s) = cx.read::<Str>(key)? else {
        cx.null();
        return Ok(());
    };
    let value = s.clone();
    // The time is checked only once the key is known to be a string.
    let expire = o.expire_at(cx, "getex")?;
    bulk_str(cx.out, &value);
    if let Some(at) = expire {
        if cx.already_expired(at as i64) {
            cx.view.remove(db, key, now);
            cx.notify(notify::GENERIC, "del", key);
            cx.propagate_instead(vec![vec![b"DEL".to_vec(), key.to_vec()]]);
        } else {
            cx.view.set_expire(db, key, at);
            cx.notify(notify::GENERIC, "expire", key);
            let at = at.to_string().into_bytes();
            cx.propagate_instead(vec![vec![b"PEXPIREAT".to_vec(), key.to_vec(), at]]);
        }
        cx.dirty += 1;
    } else if o.persist
        && cx
            .view
            .peek_meta(db, key, now)
            .is_some_and(|e| e.expire_at != 0)
    {
        cx.view.set_expire(db, key, 0);
        cx.dirty += 1;
        cx.notify(notify::GENERIC, "persist", key);
        cx.propagate_instead(vec![vec![b"PERSIST".to_vec(), key.to_vec()]]);
    }
    Ok(())
}

/// GETDEL key
fn getdel(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let Some(value) = cx.read::<Str>(argv[1])?.cloned() else {
        cx.null();
        return Ok(());
    };
    bulk_str(cx.out, &value);
    cx.view.remove(db, argv[1], now);
    cx.dirty += 1;
    cx.notify(notify::GENERIC, "del", argv[1]);
    cx.propagate_instead(vec![vec![b"DEL".to_vec(), argv[1].to_vec()]]);
    Ok(())
}

/// GETSET key value
fn getset(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let o = SetOptions {
        get: true,
        ..Default::default()
    };
    set_generic(cx, argv[1], argv[2], &o, None)
}

/// MGET key [key ...]
fn mget(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    encode::array(cx.out, argv.len() - 1);
    for key in &argv[1..] {
        match cx.view.get(db, key, now) {
            Some(EntryMut {
                value: Value::Str(s),
                ..
            }) => bulk_str(cx.out, s),
            _ => encode::null(cx.out, cx.client.proto),
        }
    }
    Ok(())
}

/// MSET key value [key value ...]
fn mset(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len().is_multiple_of(2) {
        return Err(error::wrong_arity("mset"));
    }
    let (db, now) = (cx.db(), cx.now_ms);
    for pair in argv[1..].chunks_exact(2) {
        cx.view
            .set(db, pair[0], Value::Str(Str::from_bytes(pair[1])), 0, now);
        cx.notify(notify::STRING, "set", pair[0]);
    }
    cx.dirty += (argv.len() as u64 - 1) / 2;
    cx.ok();
    Ok(())
}

/// MSETNX key value [key value ...]
fn msetnx(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len().is_multiple_of(2) {
        return Err(error::wrong_arity("msetnx"));
    }
    let (db, now) = (cx.db(), cx.now_ms);
    for pair in argv[1..].chunks_exact(2) {
        if cx.view.peek_meta(db, pair[0], now).is_some() {
            cx.int(0);
            return Ok(());
        }
    }
    for pair in argv[1..].chunks_exact(2) {
        cx.view
            .set(db, pair[0], Value::Str(Str::from_bytes(pair[1])), 0, now);
        cx.notify(notify::STRING, "set", pair[0]);
    }
    cx.dirty += (argv.len() as u64 - 1) / 2;
    cx.int(1);
    Ok(())
}

/// Adds `by` to the integer at `key` (created as 0), keeping its TTL.
fn incr_generic(cx: &mut Ctx, key: &[u8], by: i64) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let new = match cx.write::<Str>(key)? {
        Some(s) => {
            let cur = match s.as_int() {
                Some(n) => n,
                None => s.with_bytes(resp::parse_i64).ok_or(error::NOT_INTEGER)?,
            };
            let new = cur.checked_add(by).ok_or(error::OVERFLOW)?;
            *s = Str::int(new);
            new
        }
        None => {
            cx.view.set(db, key, Value::Str(Str::int(by)), 0, now);
            by
        }
    };
    cx.dirty += 1;
    cx.notify(notify::STRING, "incrby", key);
    cx.int(new);
    Ok(())
}

/// INCR key
fn incr(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    incr_generic(cx, argv[1], 1)
}

/// DECR key
fn decr(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    incr_generic(cx, argv[1], -1)
}

/// INCRBY key increment
fn incrby(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let by = args::int(argv[2])?;
    incr_generic(cx, argv[1], by)
}

/// DECRBY key decrement
fn decrby(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let by = args::int(argv[2])?;
    if by == i64::MIN {
        return Err(CmdError::new("ERR decrement would overflow"));
    }
    incr_generic(cx, argv[1], -by)
}

/// INCRBYFLOAT key increment
fn incrbyfloat(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    use crate::num::long_double;
    // Redis adds in 80-bit long double and prints %.17Lf, trimmed:
    // 0.1 + 0.2 is "0.3" there, so f64 will not do.
    let by = long_double::parse(argv[2]).ok_or(error::NOT_FLOAT)?;
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    let cur = match cx.write::<Str>(key)? {
        Some(s) => match s.as_int() {
            Some(n) => long_double::LongDouble::from_i64(n),
            None => s.with_bytes(long_double::parse).ok_or(error::NOT_FLOAT)?,
        },
        None => long_double::LongDouble::ZERO,
    };
    let new = cur.add(&by);
    if !new.is_finite() {
        return Err(error::INCR_FLOAT_NAN);
    }
    let text = new.to_human_string();
    match cx.write::<Str>(key)? {
        Some(s) => *s = Str::bytes(text.as_bytes()),
        None => {
            cx.view
                .set(db, key, Value::Str(Str::bytes(text.as_bytes())), 0, now);
        }
    }
    cx.dirty += 1;
    cx.notify(notify::STRING, "incrbyfloat", key);
    // Float arithmetic must not be redone on replay: log the result.
    cx.propagate_instead(vec![vec![
        b"SET".to_vec(),
        key.to_vec(),
        text.as_bytes().to_vec(),
        b"KEEPTTL".to_vec(),
    ]]);
    cx.bulk(text.as_bytes());
    Ok(())
}

/// APPEND key value
fn append(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, key, val) = (cx.db(), cx.now_ms, argv[1], argv[2]);
    let cur_len = cx.write::<Str>(key)?.map(|s| s.len());
    let len = match cur_len {
        Some(cur) => {
            check_len(cx, cur + val.len())?;
            match cx.write::<Str>(key)? {
                Some(s) => {
                    let raw = s.make_raw();
                    raw.extend_from_slice(val);
                    raw.len()
                }
                None => 0,
            }
        }
        None => {
            cx.view
                .set(db, key, Value::Str(Str::from_bytes(val)), 0, now);
            val.len()
        }
    };
    cx.dirty += 1;
    cx.notify(notify::STRING, "append", key);
    cx.int(len as i64);
    Ok(())
}

/// STRLEN key
fn strlen(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let len = cx.read::<Str>(argv[1])?.map_or(0, |s| s.len());
    cx.int(len as i64);
    Ok(())
}

/// GETRANGE key start end
fn getrange(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (mut start, mut end) = (args::int(argv[2])?, args::int(argv[3])?);
    let (db, now) = (cx.db(), cx.now_ms);
    let Some(s) = typed::read::<Str>(&mut cx.view, db, argv[1], now)? else {
        encode::bulk(cx.out, b"");
        return Ok(());
    };
    s.with_bytes(|b| {
        let len = b.len() as i64;
        if start < 0 && end < 0 && start > end {
            encode::bulk(cx.out, b"");
            return;
        }
        if start < 0 {
            start += len;
        }
        if end < 0 {
            end += len;
        }
        start = start.max(0);
        end = end.max(0);
        if end >= len {
            end = len - 1;
        }
        if start > end || len == 0 {
            encode::bulk(cx.out, b"");
        } else {
            encode::bulk(cx.out, &b[start as usize..=end as usize]);
        }
    });
    Ok(())
}

/// SETRANGE key offset value
fn setrange(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, key, val) = (cx.db(), cx.now_ms, argv[1], argv[3]);
    let offset = args::int(argv[2])?;
    if offset < 0 {
        return Err(error::OFFSET_RANGE);
    }
    let offset = offset as usize;
    let exists = cx.write::<Str>(key)?.is_some();
    if !exists {
        if val.is_empty() {
            cx.int(0);
            return Ok(());
        }
        check_len(cx, offset + val.len())?;
        let mut v = vec![0u8; offset + val.len()];
        v[offset..].copy_from_slice(val);
        let len = v.len();
        // A string SETRANGE creates is `raw` in Redis.
        v.reserve(1);
        cx.view.set(db, key, Value::Str(Str::raw(v)), 0, now);
        cx.dirty += 1;
        cx.notify(notify::STRING, "setrange", key);
        cx.int(len as i64);
        return Ok(());
    }
    if val.is_empty() {
        let len = cx.write::<Str>(key)?.map_or(0, |s| s.len());
        cx.int(len as i64);
        return Ok(());
    }
    check_len(cx, offset + val.len())?;
    let len = match cx.write::<Str>(key)? {
        Some(s) => {
            let raw = s.make_raw();
            if raw.len() < offset + val.len() {
                raw.resize(offset + val.len(), 0);
            }
            raw[offset..offset + val.len()].copy_from_slice(val);
            raw.len()
        }
        None => 0,
    };
    cx.dirty += 1;
    cx.notify(notify::STRING, "setrange", key);
    cx.int(len as i64);
    Ok(())
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]
fn lcs(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    use crate::storage::lcs;
    let (db, now) = (cx.db(), cx.now_ms);
    // As Redis: the keys' types first (a missing key is an empty string),
    // then the options.
    let mut strings: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    for (s, key) in strings.iter_mut().zip(&argv[1..3]) {
        match cx.view.get(db, key, now) {
            None => {}
            Some(EntryMut {
                value: Value::Str(v),
                ..
            }) => *s = v.with_bytes(|b| b.to_vec()),
            Some(_) => {
                return Err(CmdError::new(
                    "ERR The specified keys must contain string values",
                ))
            }
        }
    }
    let (mut get_len, mut get_idx, mut with_len, mut min_len) = (false, false, false, 0i64);
    let mut a = Args::new(argv, 3);
    while a.more() {
        if a.word("IDX") {
            get_idx = true;
        } else if a.word("LEN") {
            get_len = true;
        } else if a.word("WITHMATCHLEN") {
            with_len = true;
        } else if let Some(n) = a.option("MINMATCHLEN") {
            min_len = a.check(args::int(n)).unwrap_or(0).max(0);
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    if get_idx && get_len {
        return Err(CmdError::new(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    let [a, b] = &strings;
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Err(CmdError::new("ERR String too long for LCS"));
    }
    // The transient table is bounded as in Redis, by proto-max-bulk-len.
    let limit = cx
        .server
        .proto_max_bulk_len
        .load(std::sync::atomic::Ordering::Relaxed);
    match lcs::table_bytes(a.len(), b.len()) {
        Some(n) if n > limit => {
            return Err(CmdError::new(
                "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
            ))
        }
        Some(_) => {}
        None => {
            return Err(CmdError::new(
                "ERR Insufficient memory, failed allocating transient memory for LCS",
            ))
        }
    }
    let Some(r) = lcs::lcs(a, b, min_len as usize) else {
        return Err(CmdError::new(
            "ERR Insufficient memory, failed allocating transient memory for LCS",
        ));
    };
    if get_idx {
        cx.map(2);
        cx.bulk(b"matches");
        cx.array(r.matches.len());
        for m in &r.matches {
            cx.array(if with_len { 3 } else { 2 });
            for (start, end) in [m.a, m.b] {
                cx.array(2);
                cx.int(start as i64);
                cx.int(end as i64);
            }
            if with_len {
                cx.int(m.match_len() as i64);
            }
        }
        cx.bulk(b"len");
        cx.int(r.subsequence.len() as i64);
    } else if get_len {
        cx.int(r.subsequence.len() as i64);
    } else {
        cx.bulk(&r.subsequence);
    }
    Ok(())
}
