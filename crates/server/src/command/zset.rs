//! Sorted set commands: ZADD, ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE,
//! ZRANK/ZREVRANK, ZCOUNT, ZLEXCOUNT, the ZRANGE family (and
//! ZRANGESTORE), ZPOPMIN/ZPOPMAX/ZMPOP and their blocking forms,
//! ZREMRANGEBY*, ZUNION/ZINTER/ZDIFF (and *STORE), ZINTERCARD,
//! ZRANDMEMBER, ZSCAN. Replies and errors as Redis 7.0, including its
//! number formats: scores are printed with `%.17g` and parsed with
//! `strtod` rules (hex, `inf`, and for range bounds leading spaces).

use crate::clients::notify;
use crate::num::strtod;

use rand::Rng;
use resp::encode;

use super::args::{self, is, Args};
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::typed;
use super::{Ctx, TimeoutReply};
use crate::glob;
use crate::storage::value::Value;
use crate::storage::zset::{ZLimits, ZSet};
use crate::storage::zset_algebra::{combine, inter_card, Aggregate, SetOp, Sources};

pub(super) fn register(r: &mut Registry) {
    r.add("zadd", zadd);
    r.add("zincrby", zincrby);
    r.add("zrem", zrem);
    r.add("zcard", zcard);
    r.add("zscore", zscore);
    r.add("zmscore", zmscore);
    r.add("zrank", zrank);
    r.add("zrevrank", zrevrank);
    r.add("zcount", zcount);
    r.add("zlexcount", zlexcount);
    r.add("zrange", zrange);
    r.add("zrangestore", zrangestore);
    r.add("zrevrange", zrevrange);
    r.add("zrangebyscore", zrangebyscore);
    r.add("zrevrangebyscore", zrevrangebyscore);
    r.add("zrangebylex", zrangebylex);
    r.add("zrevrangebylex", zrevrangebylex);
    r.add("zremrangebyrank", zremrangebyrank);
    r.add("zremrangebyscore", zremrangebyscore);
    r.add("zremrangebylex", zremrangebylex);
    r.add("zpopmin", zpopmin);
    r.add("zpopmax", zpopmax);
    r.add("zmpop", zmpop);
    r.add("bzpopmin", bzpopmin);
    r.add("bzpopmax", bzpopmax);
    r.add("bzmpop", bzmpop);
    r.add("zunion", zunion);
    r.add("zinter", zinter);
    r.add("zdiff", zdiff);
    r.add("zunionstore", zunionstore);
    r.add("zinterstore", zinterstore);
    r.add("zdiffstore", zdiffstore);
    r.add("zintercard", zintercard);
    r.add("zrandmember", zrandmember);
    r.add("zscan", zscan);
}

// ---------------------------------------------------------------------------
// Numbers.

/// A score as Redis's getDoubleFromObject: the whole argument must be a
/// number, no leading space, no NaN, no overflow to ±inf or underflow to
/// 0 (`ERANGE`).
pub(super) fn parse_score(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() || arg[0].is_ascii_whitespace() || arg[0] == b'\x0b' {
        return None;
    }
    strtod::whole(arg)
}

fn score_arg(arg: &[u8]) -> Result<f64, CmdError> {
    parse_score(arg).ok_or(error::NOT_FLOAT)
}

pub(super) use crate::num::double::{fmt_score, reply_double};

#[cfg(test)]
fn score_string(v: f64) -> Vec<u8> {
    let mut s = Vec::with_capacity(24);
    fmt_score(v, &mut s);
    s
}

/// The header of `n` (member, score) pairs: nested pairs or a flat array.
#[inline]
fn pairs_header(out: &mut Vec<u8>, n: usize, nested: bool) {
    encode::array(out, if nested { n } else { n * 2 });
}

#[inline]
fn pair(out: &mut Vec<u8>, m: &[u8], s: f64, nested: bool, proto: u8) {
    if nested {
        encode::array(out, 2);
    }
    encode::bulk(out, m);
    reply_double(out, s, proto);
}

/// Header for a member list, with scores or not (RESP3 nests pairs).
#[inline]
fn items_header(out: &mut Vec<u8>, n: usize, withscores: bool, proto: u8) {
    if withscores {
        pairs_header(out, n, proto > 2);
    } else {
        encode::array(out, n);
    }
}

#[inline]
fn item(out: &mut Vec<u8>, m: &[u8], s: f64, withscores: bool, proto: u8) {
    if withscores {
        pair(out, m, s, proto > 2, proto);
    } else {
        encode::bulk(out, m);
    }
}

// ---------------------------------------------------------------------------
// Lookups.

pub(super) fn zlimits(cx: &Ctx) -> ZLimits {
    let l = cx.limits();
    ZLimits {
        max_entries: l.zset_max_listpack_entries,
        max_value: l.zset_max_listpack_value,
    }
}

fn remove_if_empty(cx: &mut Ctx, key: &[u8]) {
    let (db, now) = (cx.db(), cx.now_ms);
    if let Ok(Some(z)) = typed::read::<ZSet>(&mut cx.view, db, key, now) {
        if z.is_empty() {
            cx.view.remove(db, key, now);
            cx.notify(notify::GENERIC, "del", key);
        }
    }
}

/// Stores `items` (distinct members) at `dst`, or deletes `dst` when
/// empty; replies with the count.
fn store_result(cx: &mut Ctx, dst: &[u8], items: Vec<(f64, Vec<u8>)>) {
    let (db, now) = (cx.db(), cx.now_ms);
    let n = items.len();
    if n == 0 {
        if cx.view.remove(db, dst, now).is_some() {
            cx.dirty += 1;
            cx.notify(notify::GENERIC, "del", dst);
        }
    } else {
        let z = ZSet::from_items(items, zlimits(cx));
        cx.view.set(db, dst, Value::ZSet(Box::new(z)), 0, now);
        cx.dirty += 1;
        // The event is the command's name: zrangestore, zunionstore...
        let event = cx.cmd.name.clone();
        cx.notify(notify::ZSET, &event, dst);
    }
    cx.int(n as i64);
}

// ---------------------------------------------------------------------------
// Ranges.

#[derive(Debug, Clone, Copy)]
struct ScoreRange {
    min: f64,
    max: f64,
    minex: bool,
    maxex: bool,
}

/// One bound of a score range, as zslParseRange: plain `strtod` (leading
/// spaces, empty = 0, overflow = inf), `(` for exclusive, never NaN.
fn score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (ex, body) = match arg.first() {
        Some(b'(') => (true, &arg[1..]),
        _ => (false, arg),
    };
    let (v, n) = strtod::strtod(body).unwrap_or((0.0, 0));
    if n != body.len() || v.is_nan() {
        return None;
    }
    Some((v, ex))
}

impl ScoreRange {
    fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, CmdError> {
        match (score_bound(min), score_bound(max)) {
            (Some((min, minex)), Some((max, maxex))) => Ok(ScoreRange {
                min,
                max,
                minex,
                maxex,
            }),
            _ => Err(CmdError::new("ERR min or max is not a float")),
        }
    }

    /// Ranks `[first, end)` of the members in range.
    fn ranks(&self, z: &ZSet) -> (usize, usize) {
        if self.min > self.max || (self.min == self.max && (self.minex || self.maxex)) {
            return (0, 0);
        }
        let (min, minex, max, maxex) = (self.min, self.minex, self.max, self.maxex);
        let first = z.count_while(|s, _| s < min || (minex && s == min));
        let end = z.count_while(|s, _| s < max || (!maxex && s == max));
        (first, end.max(first))
    }
}

#[derive(Debug, Clone, Copy)]
enum LexBound<'a> {
    Min,
    Max,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

fn lex_bound(arg: &[u8]) -> Option<LexBound<'_>> {
    match arg.first() {
        Some(b'+') if arg.len() == 1 => Some(LexBound::Max),
        Some(b'-') if arg.len() == 1 => Some(LexBound::Min),
        Some(b'(') => Some(LexBound::Excl(&arg[1..])),
        Some(b'[') => Some(LexBound::Incl(&arg[1..])),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy)]
struct LexRange<'a> {
    min: LexBound<'a>,
    max: LexBound<'a>,
}

impl<'a> LexRange<'a> {
    fn parse(min: &'a [u8], max: &'a [u8]) -> Result<LexRange<'a>, CmdError> {
        match (lex_bound(min), lex_bound(max)) {
            (Some(min), Some(max)) => Ok(LexRange { min, max }),
            _ => Err(CmdError::new("ERR min or max not valid string range item")),
        }
    }

    fn ranks(&self, z: &ZSet) -> (usize, usize) {
        let (min, max) = (self.min, self.max);
        let first = z.count_while(|_, m| match min {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Incl(x) => m < x,
            LexBound::Excl(x) => m <= x,
        });
        let end = z.count_while(|_, m| match max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Incl(x) => m <= x,
            LexBound::Excl(x) => m < x,
        });
        (first, end.max(first))
    }
}

/// Redis's rank range normalisation: (start, end) inclusive, negative
/// from the end; None when empty.
fn rank_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut start = if start < 0 { llen + start } else { start };
    let mut end = if end < 0 { llen + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, end as usize))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Auto,
    Forward,
    Reverse,
}

/// Whether a negative LIMIT offset counts from the end of the range: in
/// Redis 7.4 a skiplist's range walk does (7.0, and a listpack's walk,
/// answer nothing).
fn from_end(z: &ZSet) -> bool {
    crate::speaks_7_4() && z.encoding() == "skiplist"
}

/// Ranks to emit for a score/lex range with LIMIT: ascending `[a, b)`,
/// walked downwards when `rev`.
/// `from_end`: Redis 7.4's skiplist walk, where a negative offset counts
/// from the far end of the range (zslNthInRange).
fn limit_ranks(
    first: usize,
    end: usize,
    rev: bool,
    offset: i64,
    limit: i64,
    from_end: bool,
) -> (usize, usize) {
    if first >= end {
        return (0, 0);
    }
    if offset < 0 && from_end {
        let back = offset.unsigned_abs();
        let avail = (end - first) as u64;
        if back > avail {
            return (0, 0);
        }
        // Forward: start `back` from the top and go up; reversed: start
        // `back - 1` above the bottom and go down.
        let start = if rev {
            first + back as usize - 1
        } else {
            end - back as usize
        };
        let room = if rev { start - first + 1 } else { end - start };
        let n = if limit < 0 {
            room
        } else {
            (limit as u64).min(room as u64) as usize
        };
        return if rev {
            (start + 1 - n, start + 1)
        } else {
            (start, start + n)
        };
    }
    if offset < 0 {
        return (0, 0);
    }
    let avail = end - first;
    let off = (offset as u64).min(avail as u64) as usize;
    let n = if limit < 0 {
        avail - off
    } else {
        (limit as u64).min((avail - off) as u64) as usize
    };
    if rev {
        (end - off - n, end - off)
    } else {
        (first + off, first + off + n)
    }
}

/// ZRANGE and its variants (Redis's zrangeGenericCommand): `key_at` is the
/// source key's index; `store` makes it ZRANGESTORE.
fn zrange_generic(
    cx: &mut Ctx,
    argv: &[&[u8]],
    key_at: usize,
    store: bool,
    mut rtype: RangeType,
    mut dir: Direction,
) -> CmdResult {
    let key = argv[key_at];
    let mut withscores = false;
    let mut offset = 0i64;
    let mut limit = -1i64;
    let mut a = Args::new(argv, key_at + 3);
    while a.more() {
        if !store && a.word("withscores") {
            withscores = true;
        } else if a.left() >= 3 && a.word("limit") {
            offset = a.int();
            limit = a.int();
        } else if dir == Direction::Auto && a.word("rev") {
            dir = Direction::Reverse;
        } else if rtype == RangeType::Auto && a.word("bylex") {
            rtype = RangeType::Lex;
        } else if rtype == RangeType::Auto && a.word("byscore") {
            rtype = RangeType::Score;
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    let rev = dir == Direction::Reverse;
    if rtype == RangeType::Auto {
        rtype = RangeType::Rank;
    }
    if limit != -1 && rtype == RangeType::Rank {
        return Err(CmdError::new(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && rtype == RangeType::Lex {
        return Err(CmdError::new(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut lo, mut hi) = (argv[key_at + 1], argv[key_at + 2]);
    if rev && rtype != RangeType::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    enum Parsed<'a> {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexRange<'a>),
    }
    let parsed = match rtype {
        RangeType::Score => Parsed::Score(ScoreRange::parse(lo, hi)?),
        RangeType::Lex => Parsed::Lex(LexRange::parse(lo, hi)?),
        _ => Parsed::Rank(args::int(lo)?, args::int(hi)?),
    };
    let (db, now, proto) = (cx.db(), cx.now_ms, cx.client.proto);
    let Some(z) = typed::read::<ZSet>(&mut cx.view, db, key, now)? else {
        if store {
            store_result(cx, argv[1], Vec::new());
        } else {
            cx.array(0);
        }
        return Ok(());
    };
    // Ascending ranks [a, b), emitted downwards when `rev`.
    let (a, b) = match parsed {
        Parsed::Rank(start, end) => match rank_range(start, end, z.len()) {
            None => (0, 0),
            Some((s, e)) if rev => (z.len() - 1 - e, z.len() - s),
            Some((s, e)) => (s, e + 1),
        },
        Parsed::Score(r) => {
            let (f, e) = r.ranks(z);
            limit_ranks(f, e, rev, offset, limit, from_end(z))
        }
        Parsed::Lex(r) => {
            let (f, e) = r.ranks(z);
            limit_ranks(f, e, rev, offset, limit, from_end(z))
        }
    };
    if store {
        let mut items = Vec::with_capacity(b - a);
        z.for_range(a, b, rev, |s, m| items.push((s, m.to_vec())));
        store_result(cx, argv[1], items);
        return Ok(());
    }
    let out = &mut *cx.out;
    items_header(out, b - a, withscores, proto);
    z.for_range(a, b, rev, |s, m| item(out, m, s, withscores, proto));
    Ok(())
}

/// ZRANGE key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count]
/// [WITHSCORES]
fn zrange(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zrange_generic(cx, argv, 1, false, RangeType::Auto, Direction::Auto)
}

/// ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]
fn zrangestore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zrange_generic(cx, argv, 2, true, RangeType::Auto, Direction::Auto)
}

/// ZREVRANGE key start stop [WITHSCORES]
fn zrevrange(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zrange_generic(cx, argv, 1, false, RangeType::Rank, Direction::Reverse)
}

/// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
fn zrangebyscore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zrange_generic(cx, argv, 1, false, RangeType::Score, Direction::Forward)
}

/// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
fn zrevrangebyscore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zrange_generic(cx, argv, 1, false, RangeType::Score, Direction::Reverse)
}

/// ZRANGEBYLEX key min max [LIMIT offset count]
fn zrangebylex(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zrange_generic(cx, argv, 1, false, RangeType::Lex, Direction::Forward)
}

/// ZREVRANGEBYLEX key max min [LIMIT offset count]
fn zrevrangebylex(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zrange_generic(cx, argv, 1, false, RangeType::Lex, Direction::Reverse)
}

// ---------------------------------------------------------------------------
// Writes.

#[derive(Default)]
pub(super) struct AddFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub ch: bool,
    pub incr: bool,
}

/// ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member
/// ...]
fn zadd(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let mut f = AddFlags::default();
    let mut j = 2;
    while j < argv.len() {
        let a = argv[j];
        if is(a, "nx") {
            f.nx = true;
        } else if is(a, "xx") {
            f.xx = true;
        } else if is(a, "ch") {
            f.ch = true;
        } else if is(a, "incr") {
            f.incr = true;
        } else if is(a, "gt") {
            f.gt = true;
        } else if is(a, "lt") {
            f.lt = true;
        } else {
            break;
        }
        j += 1;
    }
    let elements = argv.len() - j;
    if elements == 0 || !elements.is_multiple_of(2) {
        return Err(error::SYNTAX);
    }
    if f.nx && f.xx {
        return Err(CmdError::new(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(CmdError::new(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && elements > 2 {
        return Err(CmdError::new(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let pairs = &argv[j..];
    let mut scores = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks_exact(2) {
        scores.push(score_arg(p[0])?);
    }
    add_generic(cx, argv[1], pairs, &scores, &f)
}

/// ZINCRBY key increment member
fn zincrby(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let f = AddFlags {
        incr: true,
        ..Default::default()
    };
    let incr = score_arg(argv[2])?;
    add_generic(cx, argv[1], &argv[2..4], &[incr], &f)
}

/// ZADD's work, shared with GEOADD (which Redis runs as a ZADD).
pub(super) fn add_generic(
    cx: &mut Ctx,
    key: &[u8],
    pairs: &[&[u8]],
    scores: &[f64],
    f: &AddFlags,
) -> CmdResult {
    let proto = cx.client.proto;
    let limits = zlimits(cx);
    // (A missing key under XX gets nothing inserted, so nothing is
    // stored: Redis's early reply, without a lookup of its own.)
    let (added, updated, processed, last, nan) = cx.create_or(
        key,
        || ZSet::new_for(pairs[1].len(), limits),
        |z| {
            let (mut added, mut updated, mut processed) = (0u64, 0u64, 0u64);
            let mut last = 0.0;
            for (p, &score) in pairs.chunks_exact(2).zip(scores) {
                let m = p[1];
                match z.score(m) {
                    Some(cur) => {
                        if f.nx {
                            continue;
                        }
                        let new = if f.incr { cur + score } else { score };
                        if new.is_nan() {
                            return Ok((added, updated, processed, last, true));
                        }
                        if (f.lt && new >= cur) || (f.gt && new <= cur) {
                            continue;
                        }
                        processed += 1;
                        last = new;
                        if new != cur {
                            z.insert(m, new, limits);
                            updated += 1;
                        }
                    }
                    None => {
                        if f.xx {
                            continue;
                        }
                        z.insert(m, score, limits);
                        added += 1;
                        processed += 1;
                        last = score;
                    }
                }
            }
            Ok((added, updated, processed, last, false))
        },
    )?;
    if added + updated > 0 {
        cx.notify(notify::ZSET, if f.incr { "zincr" } else { "zadd" }, key);
    }
    cx.dirty += added + updated;
    if nan {
        return Err(CmdError::new("ERR resulting score is not a number (NaN)"));
    }
    if f.incr {
        if processed > 0 {
            reply_double(cx.out, last, proto);
        } else {
            cx.null();
        }
    } else {
        cx.int((if f.ch { added + updated } else { added }) as i64);
    }
    Ok(())
}

/// ZREM key member [member ...]
fn zrem(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let key = argv[1];
    let mut removed = 0;
    if let Some(z) = cx.read::<ZSet>(key)? {
        for m in &argv[2..] {
            if z.remove(m).is_some() {
                removed += 1;
                if z.is_empty() {
                    break;
                }
            }
        }
        if removed > 0 {
            cx.notify(notify::ZSET, "zrem", key);
            remove_if_empty(cx, key);
        }
    }
    cx.dirty += removed;
    cx.int(removed as i64);
    Ok(())
}

#[derive(Clone, Copy)]
enum RemKind {
    Rank,
    Score,
    Lex,
}

fn zremrange_generic(cx: &mut Ctx, argv: &[&[u8]], kind: RemKind) -> CmdResult {
    let key = argv[1];
    enum Parsed<'a> {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexRange<'a>),
    }
    let parsed = match kind {
        RemKind::Rank => Parsed::Rank(args::int(argv[2])?, args::int(argv[3])?),
        RemKind::Score => Parsed::Score(ScoreRange::parse(argv[2], argv[3])?),
        RemKind::Lex => Parsed::Lex(LexRange::parse(argv[2], argv[3])?),
    };
    let Some(z) = cx.read::<ZSet>(key)? else {
        cx.int(0);
        return Ok(());
    };
    let (a, b) = match parsed {
        Parsed::Rank(s, e) => rank_range(s, e, z.len()).map_or((0, 0), |(s, e)| (s, e + 1)),
        Parsed::Score(r) => r.ranks(z),
        Parsed::Lex(r) => r.ranks(z),
    };
    let n = z.remove_range(a, b);
    if n > 0 {
        let event = cx.cmd.name.clone();
        cx.notify(notify::ZSET, &event, key);
        remove_if_empty(cx, key);
    }
    cx.dirty += n as u64;
    cx.int(n as i64);
    Ok(())
}

/// ZREMRANGEBYRANK key start stop
fn zremrangebyrank(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zremrange_generic(cx, argv, RemKind::Rank)
}

/// ZREMRANGEBYSCORE key min max
fn zremrangebyscore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zremrange_generic(cx, argv, RemKind::Score)
}

/// ZREMRANGEBYLEX key min max
fn zremrangebylex(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zremrange_generic(cx, argv, RemKind::Lex)
}

// ---------------------------------------------------------------------------
// Reads.

/// ZCARD key
fn zcard(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let n = cx.read::<ZSet>(argv[1])?.map_or(0, |z| z.len());
    cx.int(n as i64);
    Ok(())
}

/// ZSCORE key member
fn zscore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, proto) = (cx.db(), cx.now_ms, cx.client.proto);
    match typed::read::<ZSet>(&mut cx.view, db, argv[1], now)?.and_then(|z| z.score(argv[2])) {
        Some(s) => reply_double(cx.out, s, proto),
        None => encode::null(cx.out, proto),
    }
    Ok(())
}

/// ZMSCORE key member [member ...]
fn zmscore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, proto) = (cx.db(), cx.now_ms, cx.client.proto);
    let z = typed::read::<ZSet>(&mut cx.view, db, argv[1], now)?;
    encode::array(cx.out, argv.len() - 2);
    for m in &argv[2..] {
        match z.as_ref().and_then(|z| z.score(m)) {
            Some(s) => reply_double(cx.out, s, proto),
            None => encode::null(cx.out, proto),
        }
    }
    Ok(())
}

fn rank_generic(cx: &mut Ctx, argv: &[&[u8]], rev: bool) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let z = typed::read::<ZSet>(&mut cx.view, db, argv[1], now)?;
    match z.and_then(|z| z.rank(argv[2]).map(|r| (r, z.len()))) {
        Some((r, len)) => cx.int(if rev { len - 1 - r } else { r } as i64),
        None => cx.null(),
    }
    Ok(())
}

/// ZRANK key member
fn zrank(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    rank_generic(cx, argv, false)
}

/// ZREVRANK key member
fn zrevrank(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    rank_generic(cx, argv, true)
}

/// ZCOUNT key min max
fn zcount(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let r = ScoreRange::parse(argv[2], argv[3])?;
    let n = cx.read::<ZSet>(argv[1])?.map_or(0, |z| {
        let (a, b) = r.ranks(z);
        b - a
    });
    cx.int(n as i64);
    Ok(())
}

/// ZLEXCOUNT key min max
fn zlexcount(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let r = LexRange::parse(argv[2], argv[3])?;
    let n = cx.read::<ZSet>(argv[1])?.map_or(0, |z| {
        let (a, b) = r.ranks(z);
        b - a
    });
    cx.int(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// Pops.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// ZPOPMIN/ZPOPMAX: flat pairs (nested in RESP3 when COUNT is given).
    Pop { nested: bool },
    /// BZPOPMIN/BZPOPMAX: [key, member, score].
    BlockPop,
    /// ZMPOP/BZMPOP: [key, [[member, score], ...]].
    Multi,
}

/// Pops up to `count` members from the first non-empty key (Redis's
/// genericZpopCommand). Returns false when no key had members (nothing
/// replied yet for the blocking forms).
fn pop_generic(
    cx: &mut Ctx,
    keys: &[&[u8]],
    max: bool,
    count: usize,
    shape: Shape,
) -> Result<bool, CmdError> {
    let (db, now, proto) = (cx.db(), cx.now_ms, cx.client.proto);
    let woken = cx.woken();
    let mut found = None;
    for &k in keys {
        match typed::read::<ZSet>(&mut cx.view, db, k, now) {
            Ok(Some(z)) if !z.is_empty() => {
                found = Some(k);
                break;
            }
            Ok(_) => {}
            // A woken client is served from a key that now holds a sorted
            // set; another key of another type is passed over (see
            // list::first_list).
            Err(_) if woken => {}
            Err(e) => return Err(e),
        }
    }
    let Some(key) = found else {
        return Ok(false);
    };
    let Some(z) = typed::read::<ZSet>(&mut cx.view, db, key, now)? else {
        return Ok(false);
    };
    if count == 0 {
        cx.array(0);
        return Ok(true);
    }
    let n = count.min(z.len());
    let out = &mut *cx.out;
    let nested = match shape {
        Shape::Pop { nested } => {
            pairs_header(out, n, nested);
            nested
        }
        Shape::BlockPop => {
            encode::array(out, 3);
            encode::bulk(out, key);
            false
        }
        Shape::Multi => {
            encode::array(out, 2);
            encode::bulk(out, key);
            encode::array(out, n);
            true
        }
    };
    for _ in 0..n {
        if let Some((s, m)) = z.pop(max) {
            pair(out, &m, s, nested, proto);
        }
    }
    let empty = z.is_empty();
    cx.notify(notify::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
    if empty {
        cx.view.remove(db, key, now);
        cx.notify(notify::GENERIC, "del", key);
    }
    cx.dirty += n as u64;
    Ok(true)
}

fn zpop_minmax(cx: &mut Ctx, argv: &[&[u8]], max: bool) -> CmdResult {
    if argv.len() > 3 {
        return Err(error::SYNTAX);
    }
    let count = match argv.get(2) {
        None => None,
        Some(a) => match args::int(a) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return Err(CmdError::new("ERR value is out of range, must be positive")),
        },
    };
    let nested = cx.client.proto > 2 && count.is_some();
    if !pop_generic(
        cx,
        &argv[1..2],
        max,
        count.unwrap_or(1),
        Shape::Pop { nested },
    )? {
        cx.array(0);
    }
    Ok(())
}

/// ZPOPMIN key [count]
fn zpopmin(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zpop_minmax(cx, argv, false)
}

/// ZPOPMAX key [count]
fn zpopmax(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zpop_minmax(cx, argv, true)
}

fn bzpop_minmax(cx: &mut Ctx, argv: &[&[u8]], max: bool) -> CmdResult {
    let timeout = args::timeout(argv[argv.len() - 1])?;
    let keys = &argv[1..argv.len() - 1];
    if !pop_generic(cx, keys, max, 1, Shape::BlockPop)? {
        cx.block(keys, timeout, TimeoutReply::NullArray);
    }
    Ok(())
}

/// BZPOPMIN key [key ...] timeout
fn bzpopmin(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    bzpop_minmax(cx, argv, false)
}

/// BZPOPMAX key [key ...] timeout
fn bzpopmax(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    bzpop_minmax(cx, argv, true)
}

/// Parses `numkeys key... MIN|MAX [COUNT count]` from `at` (the numkeys
/// index): (keys, max, count).
fn parse_mpop<'a>(argv: &[&'a [u8]], at: usize) -> Result<(Vec<&'a [u8]>, bool, usize), CmdError> {
    let numkeys = match args::int(argv[at]) {
        Ok(n) if n >= 1 => n as u64,
        _ => return Err(CmdError::new("ERR numkeys should be greater than 0")),
    };
    let where_at = (at as u64).saturating_add(numkeys).saturating_add(1);
    if where_at >= argv.len() as u64 {
        return Err(error::SYNTAX);
    }
    let where_at = where_at as usize;
    let max = if is(argv[where_at], "MIN") {
        false
    } else if is(argv[where_at], "MAX") {
        true
    } else {
        return Err(error::SYNTAX);
    };
    let count = args::mpop_count(argv, where_at + 1)?;
    Ok((argv[at + 1..where_at].to_vec(), max, count))
}

/// ZMPOP numkeys key [key ...] MIN | MAX [COUNT count]
fn zmpop(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (keys, max, count) = parse_mpop(argv, 1)?;
    if !pop_generic(cx, &keys, max, count, Shape::Multi)? {
        cx.null_array();
    }
    Ok(())
}

/// BZMPOP timeout numkeys key [key ...] MIN | MAX [COUNT count]
fn bzmpop(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (keys, max, count) = parse_mpop(argv, 2)?;
    let timeout = args::timeout(argv[1])?;
    if !pop_generic(cx, &keys, max, count, Shape::Multi)? {
        cx.block(&keys, timeout, TimeoutReply::NullArray);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Set operations over sorted sets (and plain sets, scored 1): the
// arguments and the reply here, the operation in storage::zset_algebra.

/// The source keys of ZUNION/ZINTER/ZDIFF/ZINTERCARD, read in the
/// command's locked view as the operation asks for them.
struct KeySources<'c, 'a, 's> {
    cx: &'c mut Ctx<'a, 's>,
    keys: &'c [&'c [u8]],
    /// Each key's length, found when the types were checked.
    sizes: Vec<usize>,
}

impl Sources for KeySources<'_, '_, '_> {
    fn len(&mut self, i: usize) -> usize {
        self.sizes[i]
    }

    fn each(&mut self, i: usize, f: &mut dyn FnMut(&[u8], f64)) {
        let (db, now) = (self.cx.db(), self.cx.now_ms);
        match self.cx.view.get(db, self.keys[i], now).map(|e| e.value) {
            Some(Value::ZSet(z)) => z.for_range(0, z.len(), false, |s, m| f(m, s)),
            Some(Value::Set(s)) => {
                for e in s.iter() {
                    e.with_bytes(|b| f(b, 1.0));
                }
            }
            _ => {}
        }
    }

    fn score(&mut self, i: usize, member: &[u8]) -> Option<f64> {
        let (db, now) = (self.cx.db(), self.cx.now_ms);
        match self.cx.view.get(db, self.keys[i], now).map(|e| e.value) {
            Some(Value::ZSet(z)) => z.score(member),
            Some(Value::Set(s)) => s.contains(member).then_some(1.0),
            _ => None,
        }
    }
}

/// Sizes of the sources (0 when missing), WRONGTYPE for other types.
fn source_sizes(cx: &mut Ctx, keys: &[&[u8]]) -> Result<Vec<usize>, CmdError> {
    let (db, now) = (cx.db(), cx.now_ms);
    keys.iter()
        .map(|k| match cx.view.get(db, k, now).map(|e| e.value) {
            None => Ok(0),
            Some(Value::ZSet(z)) => Ok(z.len()),
            Some(Value::Set(s)) => Ok(s.len()),
            Some(_) => Err(error::WRONGTYPE),
        })
        .collect()
}

/// Redis's zunionInterDiffGenericCommand: `numkeys_at` indexes numkeys;
/// `dst` for the *STORE forms; `card` for ZINTERCARD.
fn zsetop_generic(
    cx: &mut Ctx,
    argv: &[&[u8]],
    dst: Option<&[u8]>,
    numkeys_at: usize,
    op: SetOp,
    card: bool,
) -> CmdResult {
    let n = args::int(argv[numkeys_at])?;
    if n < 1 {
        return Err(CmdError::new(format!(
            "ERR at least 1 input key is needed for '{}' command",
            cx.cmd.name
        )));
    }
    if n as u64 > (argv.len() - numkeys_at - 1) as u64 {
        return Err(error::SYNTAX);
    }
    let n = n as usize;
    let keys = &argv[numkeys_at + 1..numkeys_at + 1 + n];
    let sizes = source_sizes(cx, keys)?;
    let mut weights = vec![1.0f64; n];
    let mut agg = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    // WEIGHTS and AGGREGATE are ZUNION's and ZINTER's, LIMIT ZINTERCARD's.
    let weighted = op != SetOp::Diff && !card;
    let mut a = Args::new(argv, numkeys_at + 1 + n);
    while a.more() {
        if weighted && a.left() > n && a.word("weights") {
            for w in weights.iter_mut() {
                let v = a.value();
                let weight =
                    parse_score(v).ok_or_else(|| CmdError::new("ERR weight value is not a float"));
                *w = a.check(weight).unwrap_or(1.0);
            }
        } else if let Some(v) = a.option_if(weighted, "aggregate") {
            if is(v, "sum") {
                agg = Aggregate::Sum;
            } else if is(v, "min") {
                agg = Aggregate::Min;
            } else if is(v, "max") {
                agg = Aggregate::Max;
            } else {
                a.fail(error::SYNTAX);
            }
        } else if dst.is_none() && !card && a.word("withscores") {
            withscores = true;
        } else if let Some(l) = a.option_if(card, "limit") {
            match args::int(l) {
                Ok(l) if l >= 0 => limit = l as usize,
                _ => a.fail(CmdError::new("ERR LIMIT can't be negative")),
            }
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    let mut sources = KeySources { cx, keys, sizes };
    if card {
        let count = inter_card(&mut sources, n, limit);
        cx.int(count as i64);
        return Ok(());
    }
    let mut result = combine(&mut sources, n, op, &weights, agg);
    if let Some(dst) = dst {
        store_result(cx, dst, result);
        return Ok(());
    }
    result.sort_unstable_by(|a, b| crate::storage::zset::cmp_key(a.0, &a.1, b.0, &b.1));
    let proto = cx.client.proto;
    items_header(cx.out, result.len(), withscores, proto);
    for (s, m) in &result {
        item(cx.out, m, *s, withscores, proto);
    }
    Ok(())
}

/// ZUNION numkeys key [key ...] [WEIGHTS weight [weight ...]]
/// [AGGREGATE SUM | MIN | MAX] [WITHSCORES]
fn zunion(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zsetop_generic(cx, argv, None, 1, SetOp::Union, false)
}

/// ZINTER numkeys key [key ...] [WEIGHTS weight [weight ...]]
/// [AGGREGATE SUM | MIN | MAX] [WITHSCORES]
fn zinter(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zsetop_generic(cx, argv, None, 1, SetOp::Inter, false)
}

/// ZDIFF numkeys key [key ...] [WITHSCORES]
fn zdiff(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zsetop_generic(cx, argv, None, 1, SetOp::Diff, false)
}

/// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight
/// [weight ...]] [AGGREGATE SUM | MIN | MAX]
fn zunionstore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zsetop_generic(cx, argv, Some(argv[1]), 2, SetOp::Union, false)
}

/// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight
/// [weight ...]] [AGGREGATE SUM | MIN | MAX]
fn zinterstore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zsetop_generic(cx, argv, Some(argv[1]), 2, SetOp::Inter, false)
}

/// ZDIFFSTORE destination numkeys key [key ...]
fn zdiffstore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zsetop_generic(cx, argv, Some(argv[1]), 2, SetOp::Diff, false)
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit]
fn zintercard(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    zsetop_generic(cx, argv, None, 1, SetOp::Inter, true)
}

// ---------------------------------------------------------------------------
// Random members and scans.

/// ZRANDMEMBER key [count [WITHSCORES]]
fn zrandmember(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, proto) = (cx.db(), cx.now_ms, cx.client.proto);
    let mut rng = rand::thread_rng();
    if argv.len() == 2 {
        match typed::read::<ZSet>(&mut cx.view, db, argv[1], now)?.and_then(|z| z.random(&mut rng))
        {
            Some((_, m)) => encode::bulk(cx.out, m),
            None => encode::null(cx.out, proto),
        }
        return Ok(());
    }
    let n = args::int(argv[2])?;
    if n == i64::MIN {
        return Err(CmdError::new(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    if argv.len() > 4 || (argv.len() == 4 && !is(argv[3], "withscores")) {
        return Err(error::SYNTAX);
    }
    let withscores = argv.len() == 4;
    if withscores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&n) {
        return Err(CmdError::new("ERR value is out of range"));
    }
    let Some(z) = typed::read::<ZSet>(&mut cx.view, db, argv[1], now)? else {
        cx.array(0);
        return Ok(());
    };
    let out = &mut *cx.out;
    if n == 0 {
        encode::array(out, 0);
        return Ok(());
    }
    let len = z.len();
    if n < 0 || n == 1 {
        let count = n.unsigned_abs() as usize;
        items_header(out, count, withscores, proto);
        for _ in 0..count {
            if let Some((s, m)) = z.random(&mut rng) {
                item(out, m, s, withscores, proto);
            }
        }
        return Ok(());
    }
    let count = n as usize;
    if count >= len {
        items_header(out, len, withscores, proto);
        z.for_range(0, len, false, |s, m| item(out, m, s, withscores, proto));
        return Ok(());
    }
    items_header(out, count, withscores, proto);
    // Distinct ranks: a partial shuffle when many are wanted, random
    // picks skipping repeats otherwise.
    if count * 3 > len {
        let mut ranks: Vec<usize> = (0..len).collect();
        for i in 0..count {
            let j = rng.gen_range(i..len);
            ranks.swap(i, j);
            if let Some((s, m)) = z.get(ranks[i]) {
                item(out, m, s, withscores, proto);
            }
        }
    } else {
        let mut picked = std::collections::HashSet::with_capacity(count);
        while picked.len() < count {
            let r = rng.gen_range(0..len);
            if picked.insert(r) {
                if let Some((s, m)) = z.get(r) {
                    item(out, m, s, withscores, proto);
                }
            }
        }
    }
    Ok(())
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count] [NOSCORES]
fn zscan(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let cursor = args::scan_cursor(argv[2])?;
    let (db, now) = (cx.db(), cx.now_ms);
    let Some(z) = typed::read::<ZSet>(&mut cx.view, db, argv[1], now)? else {
        cx.out.extend_from_slice(b"*2\r\n$1\r\n0\r\n*0\r\n");
        return Ok(());
    };
    let args::ScanOptions {
        pattern,
        count,
        members_only,
        ..
    } = args::scan_options(argv, 3, args::ScanOf::ZSet)?;
    let mut found: Vec<(Vec<u8>, f64)> = Vec::new();
    let next = z.scan(cursor, count, |s, m| {
        if pattern.is_none_or(|p| glob::matches(p, m, false)) {
            found.push((m.to_vec(), s));
        }
    });
    let out = &mut *cx.out;
    encode::array(out, 2);
    encode::bulk(out, itoa::Buffer::new().format(next).as_bytes());
    encode::array(out, found.len() * if members_only { 1 } else { 2 });
    let mut buf = Vec::with_capacity(24);
    for (m, s) in &found {
        encode::bulk(out, m);
        if members_only {
            continue;
        }
        buf.clear();
        fmt_score(*s, &mut buf);
        encode::bulk(out, &buf);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> String {
        String::from_utf8(score_string(v)).unwrap_or_default()
    }

    #[test]
    fn formats_like_printf_17g() {
        assert_eq!(f(1.1), "1.1000000000000001");
        assert_eq!(f(0.1), "0.10000000000000001");
        assert_eq!(f(3.0), "3");
        assert_eq!(f(-0.0), "-0");
        assert_eq!(f(0.0), "0");
        assert_eq!(f(1e17), "1e+17");
        assert_eq!(f(1.5e-7), "1.4999999999999999e-07");
        assert_eq!(f(1e-5), "1.0000000000000001e-05");
        assert_eq!(f(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(f(1e300), "1.0000000000000001e+300");
        assert_eq!(f(f64::INFINITY), "inf");
        assert_eq!(f(f64::NEG_INFINITY), "-inf");
        assert_eq!(f(1e16), "10000000000000000");
        assert_eq!(f(0.0001), "0.0001");
        assert_eq!(f(-2.5), "-2.5");
        assert_eq!(f(9007199254740993.0), "9007199254740992");
    }

    #[test]
    fn parses_like_strtod() {
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b"1e-400"), None);
        assert_eq!(parse_score(b"0e-400"), Some(0.0));
        assert_eq!(parse_score(b" 1"), None);
        assert_eq!(parse_score(b"1 "), None);
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_score(b"1e"), None);
        assert_eq!(parse_score(b""), None);
        assert_eq!(score_bound(b"("), Some((0.0, true)));
        assert_eq!(score_bound(b"( 2"), Some((2.0, true)));
        assert_eq!(score_bound(b"(1e400"), Some((f64::INFINITY, true)));
        assert_eq!(score_bound(b"-(1"), None);
        assert_eq!(score_bound(b""), Some((0.0, false)));
        assert_eq!(score_bound(b"x"), None);
    }
}
