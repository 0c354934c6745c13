//! Stream commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XREAD,
//! XREADGROUP, XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER,
//! DELCONSUMER, HELP), XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO (STREAM,
//! GROUPS, CONSUMERS, HELP), XSETID. Replies and errors as Redis 7.0
//! (`t_stream.c`), in RESP2 and RESP3.
//!
//! Blocking reads (XREAD/XREADGROUP BLOCK) that find nothing call
//! [`Ctx::block`] and write no reply; the connection runs the command again
//! when XADD (or XGROUP DESTROY) signals one of its keys.

use std::sync::Arc;

use resp::encode;

use super::args::{self, is, Args};
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::typed;
use super::{Ctx, TimeoutReply};
use crate::clients::notify;
use crate::storage::stream::{
    AppendError, Entry, Group, Nack, NodeLimits, Stream, StreamId, Trim, TrimStrategy,
    INVALID_ENTRIES_READ,
};
use crate::storage::value::Value;

pub(super) fn register(r: &mut Registry) {
    r.add("xadd", xadd);
    r.add("xlen", xlen);
    r.add("xrange", xrange);
    r.add("xrevrange", xrevrange);
    r.add("xdel", xdel);
    r.add("xtrim", xtrim);
    r.add("xread", xread);
    r.add("xreadgroup", xreadgroup);
    r.add("xack", xack);
    r.add("xpending", xpending);
    r.add("xclaim", xclaim);
    r.add("xautoclaim", xautoclaim);
    r.add("xsetid", xsetid);
    r.add("xgroup|create", xgroup);
    r.add("xgroup|setid", xgroup);
    r.add("xgroup|destroy", xgroup);
    r.add("xgroup|createconsumer", xgroup);
    r.add("xgroup|delconsumer", xgroup);
    r.add("xgroup|help", xgroup_help);
    r.add("xinfo|stream", xinfo_stream);
    r.add("xinfo|groups", xinfo_groups);
    r.add("xinfo|consumers", xinfo_consumers);
    r.add("xinfo|help", xinfo_help);
}

// ---------------------------------------------------------------------------
// Errors.

const INVALID_ID: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "ERR Invalid stream ID specified as stream command argument",
));

fn err(msg: &'static str) -> CmdError {
    CmdError::new(msg)
}

fn nogroup_key(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::new(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        args::lossy(key),
        args::lossy(group)
    ))
}

fn nogroup_for_key(group: &[u8], key: &[u8]) -> CmdError {
    CmdError::new(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        args::lossy(group),
        args::lossy(key)
    ))
}

// ---------------------------------------------------------------------------
// Parsing.

/// Redis's `string2ull`: a strict integer, else `strtoull` rules (leading
/// blanks, a sign, digits to the end; `-n` wraps).
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = resp::parse_i64(s) {
        return (v >= 0).then_some(v as u64);
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Redis's `streamGenericParseIDOrReply`. `missing_seq` fills an ID given
/// as `<ms>`; `strict` refuses `-` and `+`; `star` accepts `<ms>-*`
/// (returned with `seq_given = false`).
fn parse_id_full(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    star: bool,
) -> Result<(StreamId, bool), CmdError> {
    if arg.len() > 127 {
        return Err(INVALID_ID);
    }
    // The C code works on a NUL-terminated copy.
    let buf = match arg.iter().position(|&b| b == 0) {
        Some(n) => &arg[..n],
        None => arg,
    };
    if buf == b"-" || buf == b"+" {
        if strict {
            return Err(INVALID_ID);
        }
        return Ok((
            if buf == b"-" {
                StreamId::MIN
            } else {
                StreamId::MAX
            },
            true,
        ));
    }
    let (ms, seq) = match buf.iter().position(|&b| b == b'-') {
        Some(d) => (&buf[..d], Some(&buf[d + 1..])),
        None => (buf, None),
    };
    let ms = parse_u64(ms).ok_or(INVALID_ID)?;
    match seq {
        Some(b"*") if star => Ok((StreamId::new(ms, 0), false)),
        Some(seq) => Ok((StreamId::new(ms, parse_u64(seq).ok_or(INVALID_ID)?), true)),
        None => Ok((StreamId::new(ms, missing_seq), true)),
    }
}

/// A strict ID (`-` and `+` refused), missing sequence 0.
fn parse_strict_id(arg: &[u8]) -> Result<StreamId, CmdError> {
    parse_id_full(arg, 0, true, false).map(|(id, _)| id)
}

/// A range bound: `-`, `+`, an ID, or `(ID` (exclusive). Returns the
/// inclusive bound.
fn parse_range_start(arg: &[u8]) -> Result<StreamId, CmdError> {
    if arg.len() > 1 && arg[0] == b'(' {
        let id = parse_id_full(&arg[1..], 0, true, false)?.0;
        id.next()
            .ok_or_else(|| err("ERR invalid start ID for the interval"))
    } else {
        Ok(parse_id_full(arg, 0, false, false)?.0)
    }
}

fn parse_range_end(arg: &[u8]) -> Result<StreamId, CmdError> {
    if arg.len() > 1 && arg[0] == b'(' {
        let id = parse_id_full(&arg[1..], u64::MAX, true, false)?.0;
        id.prev()
            .ok_or_else(|| err("ERR invalid end ID for the interval"))
    } else {
        Ok(parse_id_full(arg, u64::MAX, false, false)?.0)
    }
}

/// An integer argument with a custom error text.
fn int_or(arg: &[u8], msg: &'static str) -> Result<i64, CmdError> {
    resp::parse_i64(arg).ok_or_else(|| err(msg))
}

/// `ENTRIESREAD` values: >= 0 or -1.
fn entries_read_arg(arg: &[u8]) -> Result<i64, CmdError> {
    let n = args::int(arg)?;
    if n < 0 && n != INVALID_ENTRIES_READ {
        return Err(err("ERR value for ENTRIESREAD must be positive or -1"));
    }
    Ok(n)
}

/// Node limits: `stream-node-max-bytes`, `stream-node-max-entries`.
fn node_limits(cx: &Ctx) -> NodeLimits {
    let l = cx.limits();
    NodeLimits {
        max_bytes: l.stream_node_max_bytes,
        max_entries: l.stream_node_max_entries,
    }
}

// ---------------------------------------------------------------------------
// Lookup and replies.

fn reply_id(out: &mut Vec<u8>, id: StreamId) {
    let mut b = [0u8; 41];
    encode::bulk(out, id.format(&mut b));
}

/// `[id, [field, value, ...]]`.
fn reply_entry(out: &mut Vec<u8>, e: &Entry) {
    encode::array(out, 2);
    reply_id(out, e.id);
    encode::array(out, e.len() * 2);
    for (f, v) in e.pairs() {
        encode::bulk(out, f);
        encode::bulk(out, v);
    }
}

/// A nullable integer: the integer, or a null.
fn reply_opt_int(out: &mut Vec<u8>, v: Option<i64>, proto: u8) {
    match v {
        Some(n) => encode::integer(out, n),
        None => encode::null(out, proto),
    }
}

// ---------------------------------------------------------------------------
// Propagation (the AOF): commands that replay to the same effect.

/// Whether writes are being logged or replicated, so rewritten commands
/// are worth building.
fn propagating(cx: &Ctx) -> bool {
    super::propagate::records_wanted(cx.server)
}

fn id_arg(id: StreamId) -> Vec<u8> {
    let mut b = [0u8; 41];
    id.format(&mut b).to_vec()
}

/// `XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE JUSTID LASTID
/// last`: Redis's `streamPropagateXCLAIM`, idempotent on replay.
fn xclaim_cmd(key: &[u8], group: &[u8], g: &Group, id: &[u8], nack: &Nack) -> Vec<Vec<u8>> {
    let mut n = itoa::Buffer::new();
    vec![
        b"XCLAIM".to_vec(),
        key.to_vec(),
        group.to_vec(),
        nack.consumer.to_vec(),
        b"0".to_vec(),
        id.to_vec(),
        b"TIME".to_vec(),
        n.format(nack.delivery_time).as_bytes().to_vec(),
        b"RETRYCOUNT".to_vec(),
        n.format(nack.delivery_count).as_bytes().to_vec(),
        b"FORCE".to_vec(),
        b"JUSTID".to_vec(),
        b"LASTID".to_vec(),
        id_arg(g.last_id),
    ]
}

/// `XGROUP SETID key group last ENTRIESREAD n` (`streamPropagateGroupID`).
fn setid_cmd(key: &[u8], group: &[u8], g: &Group) -> Vec<Vec<u8>> {
    vec![
        b"XGROUP".to_vec(),
        b"SETID".to_vec(),
        key.to_vec(),
        group.to_vec(),
        id_arg(g.last_id),
        b"ENTRIESREAD".to_vec(),
        itoa::Buffer::new()
            .format(g.entries_read)
            .as_bytes()
            .to_vec(),
    ]
}

/// XADD/XTRIM as logged: an automatic ID replaced by the one generated,
/// and `~ threshold` by `= <what it left>` (Redis's
/// streamRewriteTrimArgument), so replay trims exactly as this run did.
/// LIMIT is dropped: it only bounds approximate trimming.
fn rewrite_add_trim(
    argv: &[&[u8]],
    a: &AddTrimArgs,
    id: Option<StreamId>,
    s: &Stream,
) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = argv.iter().map(|x| x.to_vec()).collect();
    if let Some(id) = id {
        out[a.next] = id_arg(id);
    }
    if let Some(t) = &a.trim {
        if t.approx {
            out[a.trim_idx - 1] = b"=".to_vec();
            out[a.trim_idx] = match t.strategy {
                TrimStrategy::MaxLen(_) => itoa::Buffer::new().format(s.len()).as_bytes().to_vec(),
                TrimStrategy::MinId(_) => id_arg(s.first_id_with_tombstones()),
            };
        }
    }
    if let Some(l) = a.limit_idx {
        out.drain(l..l + 2);
    }
    out
}

// ---------------------------------------------------------------------------
// XADD / XTRIM option parsing.

struct AddTrimArgs {
    trim: Option<Trim>,
    nomkstream: bool,
    /// Explicit ID and whether its sequence was given (`ms-*` = false).
    id: Option<(StreamId, bool)>,
    /// Index of the ID argument (XADD) / end of options.
    next: usize,
    /// Index of the MAXLEN/MINID threshold.
    trim_idx: usize,
    /// Index of the LIMIT keyword.
    limit_idx: Option<usize>,
}

/// Redis's `streamParseAddOrTrimArgsOrReply`.
fn parse_add_trim(argv: &[&[u8]], xadd: bool, limits: NodeLimits) -> Result<AddTrimArgs, CmdError> {
    let mut a = AddTrimArgs {
        trim: None,
        nomkstream: false,
        id: None,
        next: 0,
        trim_idx: 0,
        limit_idx: None,
    };
    let mut strategy: Option<TrimStrategy> = None;
    let mut approx = false;
    let mut limit: i64 = 0;
    let mut limit_given = false;
    let mut args = Args::new(argv, 2);
    while let Some(opt) = args.peek() {
        // Arguments after this one.
        let more = args.left() - 1;
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            args.take();
            if strategy.is_some() {
                args.fail(err(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
                break;
            }
            approx = false;
            if more >= 2 {
                approx = args.word("~");
                if !approx {
                    args.word("=");
                }
            }
            a.trim_idx = args.position();
            let threshold = args.value();
            if is(opt, "maxlen") {
                match args.check(args::int(threshold)) {
                    Some(n) if n < 0 => args.fail(err("ERR The MAXLEN argument must be >= 0.")),
                    Some(n) => strategy = Some(TrimStrategy::MaxLen(n as u64)),
                    None => {}
                }
            } else if let Some(id) = args.check(parse_strict_id(threshold)) {
                strategy = Some(TrimStrategy::MinId(id));
            }
        } else if is(opt, "limit") && more > 0 {
            a.limit_idx = Some(args.position());
            args.take();
            let count = args.value();
            match args.check(args::int(count)) {
                Some(n) if n < 0 => args.fail(err("ERR The LIMIT argument must be >= 0.")),
                Some(n) => {
                    limit = n;
                    limit_given = true;
                }
                None => {}
            }
        } else if xadd && is(opt, "nomkstream") {
            args.take();
            a.nomkstream = true;
        } else if xadd {
            a.id = args.check(parse_id_full(opt, 0, true, true));
            break;
        } else {
            args.fail(error::SYNTAX);
        }
    }
    a.next = args.position();
    args.finish()?;
    if limit != 0 && strategy.is_none() {
        return Err(err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && strategy.is_none() {
        return Err(err(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if limit_given {
        if !approx {
            return Err(err(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
    } else if approx {
        // At most 100 nodes' worth, capped both ways as 7.0.15 does.
        let l = (limits.max_entries as i64).saturating_mul(100);
        limit = if l <= 0 { 10000 } else { l.min(1_000_000) };
    } else {
        limit = 0;
    }
    a.trim = strategy.map(|strategy| Trim {
        strategy,
        approx,
        limit: limit as u64,
    });
    Ok(a)
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
fn xadd(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let key = argv[1];
    let limits = node_limits(cx);
    let a = parse_add_trim(argv, true, limits)?;
    let field_pos = a.next + 1;
    if argv.len() < field_pos + 2 || (argv.len() - field_pos) % 2 == 1 {
        return Err(error::wrong_arity("xadd"));
    }
    if let Some((id, true)) = a.id {
        if id.is_zero() {
            return Err(err("ERR The ID specified in XADD must be greater than 0-0"));
        }
    }
    let auto = !matches!(a.id, Some((_, true)));
    let log =
        (auto || a.trim.is_some_and(|t| t.approx) || a.limit_idx.is_some()) && propagating(cx);
    let (db, now) = (cx.db(), cx.now_ms);
    // Existence and type first, without counting a keyspace hit twice.
    let exists = typed::typed::<Stream>(cx.view.peek(db, key, now))?.is_some();
    if !exists {
        if a.nomkstream {
            cx.null();
            return Ok(());
        }
        cx.view
            .set(db, key, Value::Stream(Box::new(Stream::new())), 0, now);
    }
    let Some(s) = typed::read::<Stream>(&mut cx.view, db, key, now)? else {
        return Ok(());
    };
    if s.last_id == StreamId::MAX {
        return Err(err(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let id = match a.id {
        None => s.next_auto_id(now).ok_or_else(|| {
            err("ERR The stream has exhausted the last possible ID, unable to add more items")
        })?,
        Some((id, true)) => id,
        Some((id, false)) => {
            if s.last_id.ms == id.ms {
                if s.last_id.seq == u64::MAX {
                    // Redis 7.0 reports this overflow with the ERANGE text.
                    return Err(err("ERR Elements are too large to be stored"));
                }
                StreamId::new(id.ms, s.last_id.seq + 1)
            } else {
                id
            }
        }
    };
    match s.append(id, &argv[field_pos..], limits) {
        Ok(()) => {}
        Err(AppendError::IdTooSmall) => {
            return Err(err(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            ))
        }
        Err(AppendError::TooLarge) => return Err(err("ERR Elements are too large to be stored")),
    }
    let trimmed = match &a.trim {
        Some(t) => s.trim(t),
        None => 0,
    };
    let rewritten = log.then(|| rewrite_add_trim(argv, &a, auto.then_some(id), s));
    reply_id(cx.out, id);
    cx.notify(notify::STREAM, "xadd", key);
    if trimmed > 0 {
        cx.notify(notify::STREAM, "xtrim", key);
    }
    if let Some(cmd) = rewritten {
        cx.propagate_instead(vec![cmd]);
    }
    cx.dirty += 1;
    Ok(())
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
fn xtrim(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let a = parse_add_trim(argv, false, node_limits(cx))?;
    let Some(t) = a.trim else {
        return Err(error::SYNTAX);
    };
    let log = propagating(cx);
    let (deleted, rewritten) = match cx.read::<Stream>(argv[1])? {
        Some(s) => {
            let n = s.trim(&t);
            let cmd = (log && n > 0 && (t.approx || a.limit_idx.is_some()))
                .then(|| rewrite_add_trim(argv, &a, None, s));
            (n, cmd)
        }
        None => (0, None),
    };
    if deleted > 0 {
        cx.notify(notify::STREAM, "xtrim", argv[1]);
    }
    if let Some(cmd) = rewritten {
        cx.propagate_instead(vec![cmd]);
    }
    cx.dirty += deleted;
    cx.int(deleted as i64);
    Ok(())
}

/// XLEN key
fn xlen(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let n = cx.read::<Stream>(argv[1])?.map(|s| s.len()).unwrap_or(0);
    cx.int(n as i64);
    Ok(())
}

/// XRANGE key start end [COUNT count]
fn xrange(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    range_generic(cx, argv, false)
}

/// XREVRANGE key end start [COUNT count]
fn xrevrange(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    range_generic(cx, argv, true)
}

fn range_generic(cx: &mut Ctx, argv: &[&[u8]], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev {
        (argv[3], argv[2])
    } else {
        (argv[2], argv[3])
    };
    let start = parse_range_start(start_arg)?;
    let end = parse_range_end(end_arg)?;
    let mut count: i64 = -1;
    let mut a = args::Args::new(argv, 4);
    while a.more() {
        match a.option("count") {
            Some(n) => count = a.check(args::int(n)).unwrap_or(0).max(0),
            None => a.fail(error::SYNTAX),
        }
    }
    a.finish()?;
    let out = &mut *cx.out;
    let Some(s) = typed::read::<Stream>(&mut cx.view, cx.client.db, argv[1], cx.now_ms)? else {
        encode::array(out, 0);
        return Ok(());
    };
    if count == 0 {
        encode::null_array(out, cx.client.proto);
        return Ok(());
    }
    let limit = if count < 0 {
        usize::MAX
    } else {
        count as usize
    };
    let mut body = Vec::new();
    let mut n = 0;
    if rev {
        for e in s.rev_range(start, end).take(limit) {
            reply_entry(&mut body, &e);
            n += 1;
        }
    } else {
        for e in s.range(start, end).take(limit) {
            reply_entry(&mut body, &e);
            n += 1;
        }
    }
    encode::array(out, n);
    out.extend_from_slice(&body);
    Ok(())
}

/// XDEL key id [id ...]
fn xdel(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if cx.read::<Stream>(argv[1])?.is_none() {
        cx.int(0);
        return Ok(());
    }
    let ids = argv[2..]
        .iter()
        .map(|a| parse_strict_id(a))
        .collect::<Result<Vec<_>, _>>()?;
    let deleted = match cx.read::<Stream>(argv[1])? {
        Some(s) => s.delete_ids(&ids),
        None => 0,
    };
    if deleted > 0 {
        cx.notify(notify::STREAM, "xdel", argv[1]);
    }
    cx.dirty += deleted;
    cx.int(deleted as i64);
    Ok(())
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
fn xsetid(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let id = parse_strict_id(argv[2])?;
    let mut entries_added: i64 = -1;
    let mut max_xdel = StreamId::MIN;
    let mut a = Args::new(argv, 3);
    while a.more() {
        if let Some(v) = a.option("entriesadded") {
            entries_added = a.check(args::int(v)).unwrap_or(0);
            if entries_added < 0 {
                a.fail(err("ERR entries_added must be positive"));
            }
        } else if let Some(v) = a.option("maxdeletedid") {
            if let Some(m) = a.check(parse_strict_id(v)) {
                max_xdel = m;
                if id < max_xdel {
                    a.fail(err(
                        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                    ));
                }
            }
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    let Some(s) = cx.read::<Stream>(argv[1])? else {
        return Err(error::NO_SUCH_KEY);
    };
    // Redis 7.4 checks the stream's own max deleted ID first.
    if crate::speaks_7_4() && id < s.max_deleted_id {
        return Err(err(
            "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id",
        ));
    }
    if !s.is_empty() {
        if id < s.last_valid_id() {
            return Err(err(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added != -1 && s.len() > entries_added as u64 {
            return Err(err(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if !max_xdel.is_zero() {
        s.max_deleted_id = max_xdel;
    }
    cx.notify(notify::STREAM, "xsetid", argv[1]);
    cx.dirty += 1;
    cx.ok();
    Ok(())
}

// ---------------------------------------------------------------------------
// XREAD / XREADGROUP.

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
fn xread(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    read_generic(cx, argv, false)
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]
fn xreadgroup(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    read_generic(cx, argv, true)
}

/// A BLOCK argument in milliseconds (Redis's getTimeoutFromObjectOrReply
/// with UNIT_MILLISECONDS). `None` = forever.
fn block_ms(arg: &[u8], now_ms: u64) -> Result<Option<std::time::Duration>, CmdError> {
    let t = int_or(arg, "ERR timeout is not an integer or out of range")?;
    if t < 0 {
        return Err(error::NEGATIVE_TIMEOUT);
    }
    if t > 0 && t > i64::MAX - now_ms as i64 {
        return Err(err("ERR timeout is out of range"));
    }
    Ok((t > 0).then(|| std::time::Duration::from_millis(t as u64)))
}

fn read_generic(cx: &mut Ctx, argv: &[&[u8]], group_cmd: bool) -> CmdResult {
    let mut timeout: Option<Option<std::time::Duration>> = None;
    let mut count: usize = 0;
    let mut streams_arg = 0;
    let mut streams = 0;
    let mut noack = false;
    let mut group: Option<(&[u8], &[u8])> = None;
    let mut args = Args::new(argv, 1);
    while let Some(o) = args.take() {
        // Arguments after this one.
        let more = args.left();
        if is(o, "block") && more > 0 {
            if cx.client.in_script {
                // Redis's own wording, for XREAD and XREADGROUP alike.
                args.fail(CmdError::new(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    args::lossy(argv[0])
                )));
            }
            let t = args.value();
            timeout = args.check(block_ms(t, cx.now_ms));
        } else if is(o, "count") && more > 0 {
            let n = args.value();
            count = args.check(args::int(n)).unwrap_or(0).max(0) as usize;
        } else if is(o, "streams") && more > 0 {
            streams_arg = args.position();
            streams = args.rest().len();
            if streams % 2 != 0 {
                // Redis 7.0 words it so for XREADGROUP too; 7.2 names
                // the command and XREADGROUP's `>`.
                args.fail(if crate::speaks_7_4() {
                    let (name, symbol) = if group_cmd { ("xreadgroup", '>') } else { ("xread", '$') };
                    CmdError::new(format!(
                        "ERR Unbalanced '{name}' list of streams: for each stream key an ID or '{symbol}' must be specified."
                    ))
                } else {
                    err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
                });
            }
            streams /= 2;
        } else if is(o, "group") && more >= 2 {
            if !group_cmd {
                args.fail(err(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            group = Some((args.value(), args.value()));
        } else if is(o, "noack") {
            if !group_cmd {
                args.fail(err(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            noack = true;
        } else {
            args.fail(error::SYNTAX);
        }
    }
    args.finish()?;
    if streams_arg == 0 {
        return Err(error::SYNTAX);
    }
    if group_cmd && group.is_none() {
        return Err(err("ERR Missing GROUP option for XREADGROUP"));
    }
    // Dispatch locked the keys the key specs name; never touch another.
    let mut pos = Vec::new();
    cx.cmd.key_positions(argv, &mut pos);
    if !(streams_arg..streams_arg + streams).all(|p| pos.contains(&p)) {
        return Err(error::SYNTAX);
    }
    let keys = &argv[streams_arg..streams_arg + streams];
    let id_args = &argv[streams_arg + streams..];

    // Resolve the IDs; MAX stands for `>` as in Redis.
    let mut ids = Vec::with_capacity(streams);
    let mut dollar = false;
    // A blocked XREADGROUP woken because its stream or group went away.
    let woken = group_cmd && cx.woken();
    for (key, arg) in keys.iter().zip(id_args) {
        let s = match cx.read::<Stream>(key) {
            Ok(None) | Err(_) if woken => {
                return Err(err("UNBLOCKED the stream key no longer exists"))
            }
            other => other?,
        };
        if let Some((g, _)) = group {
            if !s.as_ref().is_some_and(|s| s.groups.contains_key(g)) {
                if woken {
                    return Err(err(
                        "NOGROUP the consumer group this client was blocked on no longer exists",
                    ));
                }
                return Err(CmdError::new(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    args::lossy(key),
                    args::lossy(g)
                )));
            }
        }
        if *arg == b"$" {
            if group_cmd {
                return Err(err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."));
            }
            dollar = true;
            ids.push(s.map(|s| s.last_id).unwrap_or(StreamId::MIN));
        } else if *arg == b">" {
            if !group_cmd {
                return Err(err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."));
            }
            ids.push(StreamId::MAX);
        } else {
            ids.push(parse_strict_id(arg)?);
        }
    }

    let proto = cx.proto();
    let log = group_cmd && propagating(cx);
    let mut cmds = Vec::new();
    let mut body = Vec::new();
    let mut served = 0;
    for (i, key) in keys.iter().enumerate() {
        let now = cx.now_ms;
        let db = cx.db();
        let Some(s) = typed::read::<Stream>(&mut cx.view, db, key, now)? else {
            continue;
        };
        let mut gt = ids[i];
        let mut history = false;
        let serve = match group {
            Some((g, _)) => {
                if gt != StreamId::MAX {
                    history = true;
                    true
                } else if !s.is_empty() {
                    let last = s.groups.get(g).map(|g| g.last_id).unwrap_or(StreamId::MAX);
                    if s.last_valid_id() > last {
                        gt = last;
                        true
                    } else {
                        false
                    }
                } else {
                    false
                }
            }
            None => !s.is_empty() && s.last_valid_id() > gt,
        };
        if !serve {
            continue;
        }
        served += 1;
        // streamIncrID wraps the last ID to 0-0.
        let start = gt.next().unwrap_or(StreamId::MIN);
        if proto == 2 {
            encode::array(&mut body, 2);
        }
        encode::bulk(&mut body, key);
        match group {
            None => {
                let limit = if count == 0 { usize::MAX } else { count };
                let mut entries = Vec::new();
                let mut n = 0;
                for e in s.range(start, StreamId::MAX).take(limit) {
                    reply_entry(&mut entries, &e);
                    n += 1;
                }
                encode::array(&mut body, n);
                body.extend_from_slice(&entries);
            }
            Some((g, consumer)) => {
                let r = GroupRead {
                    group: g,
                    consumer,
                    count,
                    noack,
                    now,
                    proto,
                    log,
                };
                let done = serve_group(s, key, &r, start, history, &mut body);
                cx.dirty += done.dirty;
                if done.consumer_created {
                    cx.notify(notify::STREAM, "xgroup-createconsumer", key);
                }
                cmds.extend(done.cmds);
            }
        }
    }
    if group_cmd {
        // Logged as the XCLAIMs and SETIDs it implies, never as itself.
        cx.propagate_instead(cmds);
    }
    if served > 0 {
        if proto == 2 {
            encode::array(cx.out, served);
        } else {
            encode::map(cx.out, served, proto);
        }
        cx.out.extend_from_slice(&body);
        return Ok(());
    }
    match timeout {
        Some(t) => {
            block_for(cx, keys, t, dollar.then_some(&ids[..]), argv, streams_arg);
        }
        None => cx.null_array(),
    }
    Ok(())
}

/// Blocks on `keys`. When some IDs were given as `$`, the command must run
/// again with those resolved to the IDs they meant now (`resolved`), not
/// to the stream's last ID at wake-up time: that rewritten command is
/// built here, for the connection layer to re-run.
fn block_for(
    cx: &mut Ctx,
    keys: &[&[u8]],
    timeout: Option<std::time::Duration>,
    resolved: Option<&[StreamId]>,
    argv: &[&[u8]],
    streams_arg: usize,
) {
    match resolved {
        Some(ids) => {
            let rerun = rewrite_dollar_ids(argv, streams_arg, ids);
            cx.block_rerun(keys, timeout, TimeoutReply::NullArray, rerun);
        }
        None => cx.block(keys, timeout, TimeoutReply::NullArray),
    }
}

/// `argv` with every `$` ID replaced by the ID it resolved to.
fn rewrite_dollar_ids(argv: &[&[u8]], streams_arg: usize, ids: &[StreamId]) -> Vec<Vec<u8>> {
    let first_id = streams_arg + ids.len();
    argv.iter()
        .enumerate()
        .map(|(i, a)| {
            if i >= first_id && *a == b"$" {
                ids[i - first_id].to_string().into_bytes()
            } else {
                a.to_vec()
            }
        })
        .collect()
}

/// One XREADGROUP call's options, shared by the streams it serves.
struct GroupRead<'a> {
    group: &'a [u8],
    consumer: &'a [u8],
    count: usize,
    noack: bool,
    now: u64,
    proto: u8,
    /// Build the commands to log (XCLAIM, XGROUP SETID/CREATECONSUMER).
    log: bool,
}

/// What serving one stream of an XREADGROUP did.
#[derive(Default)]
struct Served {
    dirty: u64,
    consumer_created: bool,
    cmds: Vec<Vec<Vec<u8>>>,
}

/// Serves one stream of an XREADGROUP into `body` (its entries array):
/// the consumer's pending history from `start`, or (`history` false) new
/// entries from `start`, which become pending (unless NOACK) and advance
/// the group, as Redis's streamReplyWithRange with a group.
fn serve_group(
    s: &mut Stream,
    key: &[u8],
    r: &GroupRead,
    start: StreamId,
    history: bool,
    body: &mut Vec<u8>,
) -> Served {
    let mut done = Served {
        dirty: 1,
        ..Served::default()
    };
    let Some(group) = s.groups.get_mut(r.group) else {
        encode::array(body, 0);
        return done;
    };
    let (cname, created) = group.consumer_or_create(r.consumer, r.now);
    if created {
        done.dirty += 1;
        done.consumer_created = true;
        // Redis logs this only with NOACK (else the XCLAIMs create it),
        // so a consumer that read nothing was lost on replay.
        if r.log {
            done.cmds.push(vec![
                b"XGROUP".to_vec(),
                b"CREATECONSUMER".to_vec(),
                key.to_vec(),
                r.group.to_vec(),
                r.consumer.to_vec(),
            ]);
        }
    }
    if let Some(c) = group.consumers.get_mut(r.consumer) {
        c.seen_time = r.now;
    }
    let limit = if r.count == 0 { usize::MAX } else { r.count };
    if history {
        // The consumer's own pending entries from `start`.
        let ids: Vec<StreamId> = group
            .consumers
            .get(r.consumer)
            .map(|c| c.pel.range(start..).take(limit).copied().collect())
            .unwrap_or_default();
        encode::array(body, ids.len());
        let mut found = Vec::with_capacity(ids.len());
        for &id in &ids {
            match s.get(id) {
                Some(e) => {
                    reply_entry(body, &e);
                    found.push(id);
                }
                None => {
                    // Deleted since delivery: the ID with a null entry.
                    encode::array(body, 2);
                    reply_id(body, id);
                    encode::null_array(body, r.proto);
                }
            }
        }
        if let Some(group) = s.groups.get_mut(r.group) {
            for id in found {
                if let Some(n) = group.pel.get_mut(&id) {
                    n.delivery_time = r.now;
                    n.delivery_count += 1;
                }
            }
        }
        return done;
    }
    let mut delivered = Vec::new();
    let mut entries = Vec::new();
    for e in s.range(start, StreamId::MAX).take(limit) {
        reply_entry(&mut entries, &e);
        delivered.push(e.id);
    }
    encode::array(body, delivered.len());
    body.extend_from_slice(&entries);
    for &id in &delivered {
        s.advance_group(r.group, id);
        if r.noack {
            continue;
        }
        if let Some(group) = s.groups.get_mut(r.group) {
            group.deliver(id, &cname, r.now);
            if r.log {
                if let Some(nack) = group.pel.get(&id) {
                    done.cmds
                        .push(xclaim_cmd(key, r.group, group, &id_arg(id), nack));
                }
            }
        }
    }
    if r.log && !delivered.is_empty() {
        if let Some(group) = s.groups.get(r.group) {
            done.cmds.push(setid_cmd(key, r.group, group));
        }
    }
    done
}

// ---------------------------------------------------------------------------
// Consumer groups.

/// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER key group ...
fn xgroup(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let opt = argv[1];
    let key = argv[2];
    let gname = argv[3];
    let create = is(opt, "create");
    let setid = is(opt, "setid");
    let mut mkstream = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    if (create && argv.len() >= 5) || (setid && argv.len() >= 5) {
        let mut a = Args::new(argv, 5);
        while a.more() {
            if create && a.word("mkstream") {
                mkstream = true;
            } else if let Some(v) = a.option("entriesread") {
                if let Some(n) = a.check(entries_read_arg(v)) {
                    entries_read = n;
                }
            } else {
                a.fail(error::subcommand_syntax(argv));
            }
        }
        a.finish()?;
    }
    let (db, now) = (cx.db(), cx.now_ms);
    let exists = cx.read::<Stream>(key)?.is_some();
    if !mkstream && !exists {
        return Err(err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."));
    }
    let group_exists = exists
        && cx
            .read::<Stream>(key)?
            .map(|s| s.groups.contains_key(gname))
            .unwrap_or(false);
    if !group_exists && (setid || is(opt, "createconsumer") || is(opt, "delconsumer")) {
        return Err(nogroup_for_key(gname, key));
    }
    if create && argv.len() <= 8 {
        let id = if argv[4] == b"$" {
            cx.read::<Stream>(key)?
                .map(|s| s.last_id)
                .unwrap_or(StreamId::MIN)
        } else {
            parse_strict_id(argv[4])?
        };
        if !exists {
            // MKSTREAM (Redis counts the group's creation only).
            cx.view
                .set(db, key, Value::Stream(Box::new(Stream::new())), 0, now);
        }
        let Some(s) = cx.read::<Stream>(key)? else {
            return Ok(());
        };
        if s.groups.contains_key(gname) {
            return Err(err("BUSYGROUP Consumer Group name already exists"));
        }
        s.groups.insert(gname.into(), Group::new(id, entries_read));
        cx.dirty += 1;
        cx.notify(notify::STREAM, "xgroup-create", key);
        cx.ok();
    } else if setid && (argv.len() == 5 || argv.len() == 7) {
        let Some(s) = cx.read::<Stream>(key)? else {
            return Ok(());
        };
        let id = if argv[4] == b"$" {
            s.last_id
        } else {
            parse_id_full(argv[4], 0, false, false)?.0
        };
        if let Some(g) = s.groups.get_mut(gname) {
            g.last_id = id;
            g.entries_read = entries_read;
        }
        cx.dirty += 1;
        cx.notify(notify::STREAM, "xgroup-setid", key);
        cx.ok();
    } else if is(opt, "destroy") && argv.len() == 4 {
        let removed = cx
            .read::<Stream>(key)?
            .map(|s| s.groups.remove(gname).is_some())
            .unwrap_or(false);
        if removed {
            cx.dirty += 1;
            cx.notify(notify::STREAM, "xgroup-destroy", key);
        }
        cx.int(removed as i64);
    } else if is(opt, "createconsumer") && argv.len() == 5 {
        let created = cx
            .read::<Stream>(key)?
            .and_then(|s| s.groups.get_mut(gname))
            .map(|g| g.consumer_or_create(argv[4], now).1)
            .unwrap_or(false);
        if created {
            cx.dirty += 1;
            cx.notify(notify::STREAM, "xgroup-createconsumer", key);
        }
        cx.int(created as i64);
    } else if is(opt, "delconsumer") && argv.len() == 5 {
        let pending = cx
            .read::<Stream>(key)?
            .and_then(|s| s.groups.get_mut(gname))
            .and_then(|g| g.delete_consumer(argv[4]));
        if pending.is_some() {
            cx.dirty += 1;
            cx.notify(notify::STREAM, "xgroup-delconsumer", key);
        }
        cx.int(pending.unwrap_or(0) as i64);
    } else {
        return Err(error::subcommand_syntax(argv));
    }
    Ok(())
}

/// XGROUP HELP
fn xgroup_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}

/// XACK key group id [id ...]
fn xack(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let has_group = cx
        .read::<Stream>(argv[1])?
        .map(|s| s.groups.contains_key(argv[2]))
        .unwrap_or(false);
    if !has_group {
        cx.int(0);
        return Ok(());
    }
    let ids = argv[3..]
        .iter()
        .map(|a| parse_strict_id(a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut acked = 0;
    if let Some(g) = cx
        .read::<Stream>(argv[1])?
        .and_then(|s| s.groups.get_mut(argv[2]))
    {
        for id in ids {
            acked += g.ack(id) as i64;
        }
    }
    cx.dirty += acked as u64;
    cx.int(acked);
    Ok(())
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
fn xpending(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let justinfo = argv.len() == 3;
    if argv.len() != 3 && (argv.len() < 6 || argv.len() > 9) {
        return Err(error::SYNTAX);
    }
    let mut minidle: i64 = 0;
    let mut start = StreamId::MIN;
    let mut end = StreamId::MAX;
    let mut count: i64 = 0;
    let mut consumer: Option<&[u8]> = None;
    if argv.len() >= 6 {
        let mut idx = 3;
        if is(argv[3], "idle") {
            minidle = args::int(argv[4])?;
            if argv.len() < 8 {
                return Err(error::SYNTAX);
            }
            idx += 2;
        }
        count = args::int(argv[idx + 2])?.max(0);
        start = parse_range_start(argv[idx])?;
        end = parse_range_end(argv[idx + 1])?;
        if idx + 3 < argv.len() {
            consumer = Some(argv[idx + 3]);
        }
    }
    let now = cx.now_ms;
    let proto = cx.proto();
    let out = &mut *cx.out;
    let s = typed::read::<Stream>(&mut cx.view, cx.client.db, argv[1], now)?;
    let Some(g) = s.and_then(|s| s.groups.get(argv[2])) else {
        return Err(nogroup_key(argv[1], argv[2]));
    };
    if justinfo {
        encode::array(out, 4);
        encode::integer(out, g.pel.len() as i64);
        match (g.pel.keys().next(), g.pel.keys().next_back()) {
            (Some(&first), Some(&last)) => {
                reply_id(out, first);
                reply_id(out, last);
                let with: Vec<_> = g
                    .consumers
                    .iter()
                    .filter(|(_, c)| !c.pel.is_empty())
                    .collect();
                encode::array(out, with.len());
                for (name, c) in with {
                    encode::array(out, 2);
                    encode::bulk(out, name);
                    encode::bulk(out, itoa::Buffer::new().format(c.pel.len()).as_bytes());
                }
            }
            _ => {
                encode::null(out, proto);
                encode::null(out, proto);
                encode::null_array(out, proto);
            }
        }
        return Ok(());
    }
    let ids: Box<dyn Iterator<Item = StreamId> + '_> = match consumer {
        Some(name) => match g.consumers.get(name) {
            Some(c) => Box::new(c.pel.range(start..).copied()),
            None => {
                encode::array(out, 0);
                return Ok(());
            }
        },
        None => Box::new(g.pel.range(start..).map(|(id, _)| *id)),
    };
    let mut body = Vec::new();
    let mut n = 0;
    for id in ids {
        if count == 0 || id > end {
            break;
        }
        let Some(nack) = g.pel.get(&id) else {
            continue;
        };
        let idle = now as i64 - nack.delivery_time as i64;
        if minidle != 0 && idle < minidle {
            continue;
        }
        n += 1;
        count -= 1;
        encode::array(&mut body, 4);
        reply_id(&mut body, id);
        encode::bulk(&mut body, &nack.consumer);
        encode::integer(&mut body, idle.max(0));
        encode::integer(&mut body, nack.delivery_count as i64);
    }
    encode::array(out, n);
    out.extend_from_slice(&body);
    Ok(())
}

/// Redis 7.2's XCLAIM and XAUTOCLAIM: the consumer is created (or seen)
/// before anything is claimed, even when nothing is (7.0 created it with
/// the first entry claimed). A consumer created is logged as `XGROUP
/// CREATECONSUMER` in `cmds` (Redis does not log it when nothing is
/// claimed, so its replicas and AOF lose it; keel's keep it).
fn claiming_consumer(
    s: &mut Stream,
    (key, gname, cname): (&[u8], &[u8], &[u8]),
    now: u64,
    dirty: &mut u64,
    cmds: Option<&mut Vec<Vec<Vec<u8>>>>,
    created_event: impl FnOnce(),
) -> Option<Arc<[u8]>> {
    let g = s.groups.get_mut(gname)?;
    let (c, created) = g.consumer_or_create(cname, now);
    if created {
        *dirty += 1;
        created_event();
        if let Some(cmds) = cmds {
            cmds.push(vec![
                b"XGROUP".to_vec(),
                b"CREATECONSUMER".to_vec(),
                key.to_vec(),
                gname.to_vec(),
                cname.to_vec(),
            ]);
        }
    }
    if let Some(cs) = g.consumers.get_mut(cname) {
        cs.seen_time = now;
    }
    Some(c)
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
fn xclaim(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (key, gname, cname) = (argv[1], argv[2], argv[3]);
    let has_group = cx
        .read::<Stream>(key)?
        .map(|s| s.groups.contains_key(gname))
        .unwrap_or(false);
    if !has_group {
        return Err(nogroup_key(key, gname));
    }
    let minidle = int_or(argv[4], "ERR Invalid min-idle-time argument for XCLAIM")?.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        match parse_strict_id(argv[j]) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = cx.now_ms;
    let mut retrycount: i64 = -1;
    let mut deliverytime: i64 = -1;
    let mut force = false;
    let mut justid = false;
    let mut last_id = StreamId::MIN;
    let mut a = Args::new(argv, j);
    while let Some(opt) = a.take() {
        if is(opt, "force") {
            force = true;
        } else if is(opt, "justid") {
            justid = true;
        } else if is(opt, "idle") && a.more() {
            let v = a.value();
            if let Some(idle) = a.check(int_or(v, "ERR Invalid IDLE option argument for XCLAIM")) {
                deliverytime = (now as i64).wrapping_sub(idle);
            }
        } else if is(opt, "time") && a.more() {
            let v = a.value();
            deliverytime = a
                .check(int_or(v, "ERR Invalid TIME option argument for XCLAIM"))
                .unwrap_or(-1);
        } else if is(opt, "retrycount") && a.more() {
            let v = a.value();
            retrycount = a
                .check(int_or(
                    v,
                    "ERR Invalid RETRYCOUNT option argument for XCLAIM",
                ))
                .unwrap_or(-1);
        } else if is(opt, "lastid") && a.more() {
            let v = a.value();
            if let Some(id) = a.check(parse_strict_id(v)) {
                last_id = id;
            }
        } else {
            a.fail(CmdError::new(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                args::lossy(opt)
            )));
        }
    }
    a.finish()?;
    if deliverytime == -1 || deliverytime < 0 || deliverytime > now as i64 {
        deliverytime = now as i64;
    }
    let deliverytime = deliverytime as u64;
    let proto = cx.proto();
    let log = propagating(cx);
    let (server, db) = (cx.server, cx.client.db);
    let out = &mut *cx.out;
    let Some(s) = typed::read::<Stream>(&mut cx.view, db, key, now)? else {
        return Ok(());
    };
    let mut dirty = 0;
    let mut cmds = Vec::new();
    let mut propagate_last_id = false;
    if let Some(g) = s.groups.get_mut(gname) {
        if last_id > g.last_id {
            g.last_id = last_id;
            propagate_last_id = true;
        }
    }
    let mut body = Vec::new();
    let mut n = 0;
    let mut consumer: Option<Arc<[u8]>> = None;
    if crate::speaks_7_4() {
        let record = log.then_some(&mut cmds);
        consumer = claiming_consumer(s, (key, gname, cname), now, &mut dirty, record, || {
            server.notify(notify::STREAM, "xgroup-createconsumer", key, db)
        });
    }
    for (arg, id) in argv[5..].iter().zip(ids) {
        let exists = s.get(id).is_some();
        let Some(g) = s.groups.get_mut(gname) else {
            break;
        };
        if !exists {
            // Deleted from the stream: drop it from the PEL too.
            if let Some(nack) = g.pel.get(&id) {
                if log {
                    cmds.push(xclaim_cmd(key, gname, g, arg, nack));
                }
                propagate_last_id = false;
                g.ack(id);
                dirty += 1;
            }
            continue;
        }
        let had = g.pel.get(&id).map(|n| n.delivery_time);
        if had.is_none() && !force {
            continue;
        }
        if let Some(t) = had {
            if minidle != 0 && (now as i64 - t as i64) < minidle {
                continue;
            }
        }
        let c = match &consumer {
            Some(c) => c.clone(),
            None => {
                let (c, created) = g.consumer_or_create(cname, now);
                if created {
                    dirty += 1;
                    server.notify(notify::STREAM, "xgroup-createconsumer", key, db);
                }
                if let Some(cs) = g.consumers.get_mut(cname) {
                    cs.seen_time = now;
                }
                consumer = Some(c.clone());
                c
            }
        };
        let nack = g.assign(id, &c, now);
        nack.delivery_time = deliverytime;
        if retrycount >= 0 {
            nack.delivery_count = retrycount as u64;
        } else if !justid {
            nack.delivery_count += 1;
        }
        if log {
            if let Some(nack) = g.pel.get(&id) {
                cmds.push(xclaim_cmd(key, gname, g, arg, nack));
            }
        }
        propagate_last_id = false;
        if justid {
            reply_id(&mut body, id);
        } else {
            match s.get(id) {
                Some(e) => reply_entry(&mut body, &e),
                None => encode::null(&mut body, proto),
            }
        }
        n += 1;
        dirty += 1;
    }
    if propagate_last_id {
        if let Some(g) = s.groups.get(gname) {
            if log {
                cmds.push(setid_cmd(key, gname, g));
            }
        }
        dirty += 1;
    }
    encode::array(out, n);
    out.extend_from_slice(&body);
    cx.dirty += dirty;
    cx.propagate_instead(cmds);
    Ok(())
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
fn xautoclaim(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    let (key, gname, cname) = (argv[1], argv[2], argv[3]);
    let minidle = int_or(argv[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")?.max(0);
    let start = parse_range_start(argv[5])?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut a = Args::new(argv, 6);
    while a.more() {
        if let Some(v) = a.option("count") {
            match resp::parse_i64(v) {
                Some(n) if (1..=i64::MAX / 16).contains(&n) => count = n,
                _ => a.fail(err("ERR COUNT must be > 0")),
            }
        } else if a.word("justid") {
            justid = true;
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    let now = cx.now_ms;
    let log = propagating(cx);
    let (server, db) = (cx.server, cx.client.db);
    let out = &mut *cx.out;
    let s = typed::read::<Stream>(&mut cx.view, db, key, now)?;
    let Some(s) = s.filter(|s| s.groups.contains_key(gname)) else {
        return Err(nogroup_key(key, gname));
    };
    let mut attempts = count * 10;
    let mut body = Vec::new();
    let mut n = 0;
    let mut deleted = Vec::new();
    let mut dirty = 0;
    let mut cmds = Vec::new();
    let mut consumer: Option<Arc<[u8]>> = None;
    if crate::speaks_7_4() {
        let record = log.then_some(&mut cmds);
        consumer = claiming_consumer(s, (key, gname, cname), now, &mut dirty, record, || {
            server.notify(notify::STREAM, "xgroup-createconsumer", key, db)
        });
    }
    let mut from = Included(start);
    let next = loop {
        let Some(g) = s.groups.get(gname) else {
            break None;
        };
        let candidate = g
            .pel
            .range((from, Unbounded))
            .next()
            .map(|(id, n)| (*id, n.delivery_time));
        if attempts == 0 || count == 0 {
            // The cursor for the next call.
            break candidate.map(|(id, _)| id);
        }
        attempts -= 1;
        let Some((id, delivered)) = candidate else {
            break None;
        };
        from = Excluded(id);
        let exists = s.get(id).is_some();
        let Some(g) = s.groups.get_mut(gname) else {
            break None;
        };
        if !exists {
            if log {
                if let Some(nack) = g.pel.get(&id) {
                    cmds.push(xclaim_cmd(key, gname, g, &id_arg(id), nack));
                }
            }
            g.ack(id);
            deleted.push(id);
            dirty += 1;
            count -= 1;
            continue;
        }
        if minidle != 0 && (now as i64 - delivered as i64) < minidle {
            continue;
        }
        let c = match &consumer {
            Some(c) => c.clone(),
            None => {
                let (c, created) = g.consumer_or_create(cname, now);
                if created {
                    dirty += 1;
                    server.notify(notify::STREAM, "xgroup-createconsumer", key, db);
                }
                if let Some(cs) = g.consumers.get_mut(cname) {
                    cs.seen_time = now;
                }
                consumer = Some(c.clone());
                c
            }
        };
        let nack = g.assign(id, &c, now);
        nack.delivery_time = now;
        if !justid {
            nack.delivery_count += 1;
        }
        if log {
            if let Some(nack) = g.pel.get(&id) {
                cmds.push(xclaim_cmd(key, gname, g, &id_arg(id), nack));
            }
        }
        if justid {
            reply_id(&mut body, id);
        } else if let Some(e) = s.get(id) {
            reply_entry(&mut body, &e);
        }
        n += 1;
        count -= 1;
        dirty += 1;
    };
    encode::array(out, 3);
    reply_id(out, next.unwrap_or(StreamId::MIN));
    encode::array(out, n);
    out.extend_from_slice(&body);
    encode::array(out, deleted.len());
    for id in deleted {
        reply_id(out, id);
    }
    cx.dirty += dirty;
    cx.propagate_instead(cmds);
    Ok(())
}

// ---------------------------------------------------------------------------
// XINFO.

/// XINFO STREAM key [FULL [COUNT count]]
fn xinfo_stream(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let proto = cx.proto();
    let out = &mut *cx.out;
    let Some(s) = typed::read::<Stream>(&mut cx.view, cx.client.db, argv[2], cx.now_ms)? else {
        return Err(error::NO_SUCH_KEY);
    };
    let opts = &argv[3..];
    let mut full = true;
    let mut count: i64 = 10;
    if opts.is_empty() {
        full = false;
    } else {
        if (opts.len() != 1 && opts.len() != 3) || !is(opts[0], "full") {
            return Err(error::subcommand_syntax(argv));
        }
        if opts.len() == 3 {
            if !is(opts[1], "count") {
                return Err(error::subcommand_syntax(argv));
            }
            count = args::int(opts[2])?;
            if count < 0 {
                count = 10;
            }
        }
    }
    let limit = if count == 0 {
        usize::MAX
    } else {
        count as usize
    };
    encode::map(out, if full { 9 } else { 10 }, proto);
    encode::bulk(out, b"length");
    encode::integer(out, s.len() as i64);
    encode::bulk(out, b"radix-tree-keys");
    encode::integer(out, s.node_count() as i64);
    encode::bulk(out, b"radix-tree-nodes");
    encode::integer(out, s.radix_tree_nodes() as i64);
    encode::bulk(out, b"last-generated-id");
    reply_id(out, s.last_id);
    encode::bulk(out, b"max-deleted-entry-id");
    reply_id(out, s.max_deleted_id);
    encode::bulk(out, b"entries-added");
    encode::integer(out, s.entries_added as i64);
    encode::bulk(out, b"recorded-first-entry-id");
    reply_id(out, s.first_id);
    if !full {
        encode::bulk(out, b"groups");
        encode::integer(out, s.groups.len() as i64);
        encode::bulk(out, b"first-entry");
        match s.first_entry() {
            Some(e) => reply_entry(out, &e),
            None => encode::null(out, proto),
        }
        encode::bulk(out, b"last-entry");
        match s.last_entry() {
            Some(e) => reply_entry(out, &e),
            None => encode::null(out, proto),
        }
        return Ok(());
    }
    encode::bulk(out, b"entries");
    let mut body = Vec::new();
    let mut n = 0;
    for e in s.range(StreamId::MIN, StreamId::MAX).take(limit) {
        reply_entry(&mut body, &e);
        n += 1;
    }
    encode::array(out, n);
    out.extend_from_slice(&body);
    encode::bulk(out, b"groups");
    encode::array(out, s.groups.len());
    for (name, g) in &s.groups {
        encode::map(out, 7, proto);
        encode::bulk(out, b"name");
        encode::bulk(out, name);
        encode::bulk(out, b"last-delivered-id");
        reply_id(out, g.last_id);
        encode::bulk(out, b"entries-read");
        reply_opt_int(
            out,
            (g.entries_read != INVALID_ENTRIES_READ).then_some(g.entries_read),
            proto,
        );
        encode::bulk(out, b"lag");
        reply_opt_int(out, s.group_lag(g), proto);
        encode::bulk(out, b"pel-count");
        encode::integer(out, g.pel.len() as i64);
        encode::bulk(out, b"pending");
        let shown = g.pel.len().min(limit);
        encode::array(out, shown);
        for (id, nack) in g.pel.iter().take(shown) {
            encode::array(out, 4);
            reply_id(out, *id);
            encode::bulk(out, &nack.consumer);
            encode::integer(out, nack.delivery_time as i64);
            encode::integer(out, nack.delivery_count as i64);
        }
        encode::bulk(out, b"consumers");
        encode::array(out, g.consumers.len());
        let active_time = crate::speaks_7_4();
        for (cname, c) in &g.consumers {
            encode::map(out, 4 + active_time as usize, proto);
            encode::bulk(out, b"name");
            encode::bulk(out, cname);
            encode::bulk(out, b"seen-time");
            encode::integer(out, c.seen_time as i64);
            if active_time {
                encode::bulk(out, b"active-time");
                encode::integer(out, c.active_time);
            }
            encode::bulk(out, b"pel-count");
            encode::integer(out, c.pel.len() as i64);
            encode::bulk(out, b"pending");
            let shown = c.pel.len().min(limit);
            encode::array(out, shown);
            for id in c.pel.iter().take(shown) {
                encode::array(out, 3);
                reply_id(out, *id);
                let (t, n) = g
                    .pel
                    .get(id)
                    .map(|n| (n.delivery_time, n.delivery_count))
                    .unwrap_or((0, 0));
                encode::integer(out, t as i64);
                encode::integer(out, n as i64);
            }
        }
    }
    Ok(())
}

/// XINFO GROUPS key
fn xinfo_groups(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let proto = cx.proto();
    let out = &mut *cx.out;
    let Some(s) = typed::read::<Stream>(&mut cx.view, cx.client.db, argv[2], cx.now_ms)? else {
        return Err(error::NO_SUCH_KEY);
    };
    encode::array(out, s.groups.len());
    for (name, g) in &s.groups {
        encode::map(out, 6, proto);
        encode::bulk(out, b"name");
        encode::bulk(out, name);
        encode::bulk(out, b"consumers");
        encode::integer(out, g.consumers.len() as i64);
        encode::bulk(out, b"pending");
        encode::integer(out, g.pel.len() as i64);
        encode::bulk(out, b"last-delivered-id");
        reply_id(out, g.last_id);
        encode::bulk(out, b"entries-read");
        reply_opt_int(
            out,
            (g.entries_read != INVALID_ENTRIES_READ).then_some(g.entries_read),
            proto,
        );
        encode::bulk(out, b"lag");
        reply_opt_int(out, s.group_lag(g), proto);
    }
    Ok(())
}

/// XINFO CONSUMERS key group
fn xinfo_consumers(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let proto = cx.proto();
    let now = cx.now_ms;
    let out = &mut *cx.out;
    let Some(s) = typed::read::<Stream>(&mut cx.view, cx.client.db, argv[2], now)? else {
        return Err(error::NO_SUCH_KEY);
    };
    let Some(g) = s.groups.get(argv[3]) else {
        return Err(nogroup_for_key(argv[3], argv[2]));
    };
    encode::array(out, g.consumers.len());
    let inactive = crate::speaks_7_4();
    for (name, c) in &g.consumers {
        encode::map(out, 3 + inactive as usize, proto);
        encode::bulk(out, b"name");
        encode::bulk(out, name);
        encode::bulk(out, b"pending");
        encode::integer(out, c.pel.len() as i64);
        encode::bulk(out, b"idle");
        encode::integer(out, (now as i64 - c.seen_time as i64).max(0));
        if inactive {
            // Redis 7.2: time since the consumer last got an entry, -1
            // if it never did.
            encode::bulk(out, b"inactive");
            let since = match c.active_time {
                -1 => -1,
                t => now as i64 - t,
            };
            encode::integer(out, since);
        }
    }
    Ok(())
}

/// XINFO HELP
fn xinfo_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_parsing() {
        let p = |s: &[u8]| parse_id_full(s, 0, false, false).map(|x| x.0);
        assert_eq!(p(b"1-2"), Ok(StreamId::new(1, 2)));
        assert_eq!(p(b"5"), Ok(StreamId::new(5, 0)));
        assert_eq!(p(b"-"), Ok(StreamId::MIN));
        assert_eq!(p(b"+"), Ok(StreamId::MAX));
        assert_eq!(p(b" 3"), Ok(StreamId::new(3, 0)));
        assert_eq!(p(b"+4-0"), Ok(StreamId::new(4, 0)));
        assert_eq!(p(b"007-1"), Ok(StreamId::new(7, 1)));
        assert_eq!(p(b"1--0"), Ok(StreamId::new(1, 0)));
        assert!(p(b"1--5").is_err());
        assert!(p(b"18446744073709551616").is_err());
        assert!(p(b"").is_err());
        assert!(p(b"1-2-3").is_err());
        assert!(p(b"x").is_err());
        assert!(parse_strict_id(b"-").is_err());
        assert_eq!(
            parse_id_full(b"5-*", 0, true, true),
            Ok((StreamId::new(5, 0), false))
        );
        assert!(parse_strict_id(b"5-*").is_err());
        assert_eq!(parse_range_end(b"5"), Ok(StreamId::new(5, u64::MAX)));
        assert_eq!(parse_range_start(b"(5"), Ok(StreamId::new(5, 1)));
        assert_eq!(parse_range_end(b"(5"), Ok(StreamId::new(5, u64::MAX - 1)));
        assert!(parse_range_end(b"(0-0").is_err());
    }

    #[test]
    fn dollar_rewrite() {
        let argv: Vec<&[u8]> = vec![
            b"XREAD", b"BLOCK", b"0", b"STREAMS", b"a", b"b", b"$", b"1-1",
        ];
        let ids = [StreamId::new(9, 3), StreamId::new(1, 1)];
        let out = rewrite_dollar_ids(&argv, 4, &ids);
        assert_eq!(out[6], b"9-3");
        assert_eq!(out[7], b"1-1");
    }
}
