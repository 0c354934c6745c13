//! Geo commands: GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH,
//! GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and their _RO forms. A geo
//! set is a sorted set whose scores are 52-bit geohashes
//! (`storage::geohash`); GEOADD is ZADD with computed scores, as in Redis,
//! and is logged as that ZADD.

use resp::encode;

use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::typed;
use super::zset::{add_generic, parse_score, zlimits, AddFlags};
use super::Ctx;
use crate::clients::notify;
use crate::num::long_double::{fmt_fixed, LongDouble};
use crate::storage::geohash::{self, Shape, ShapeKind};
use crate::storage::value::Value;
use crate::storage::zset::ZSet;

pub(super) fn register(r: &mut Registry) {
    r.add("geoadd", geoadd);
    r.add("geopos", geopos);
    r.add("geodist", geodist);
    r.add("geohash", geohash_cmd);
    r.add("georadius", georadius);
    r.add("georadius_ro", georadius_ro);
    r.add("georadiusbymember", georadiusbymember);
    r.add("georadiusbymember_ro", georadiusbymember_ro);
    r.add("geosearch", geosearch);
    r.add("geosearchstore", geosearchstore);
}

/// A coordinate pair as Redis's extractLongLatOrReply: two doubles
/// (getDoubleFromObject rules), then the range check.
fn lonlat(lon: &[u8], lat: &[u8]) -> Result<[f64; 2], CmdError> {
    let lon = parse_score(lon).ok_or(error::NOT_FLOAT)?;
    let lat = parse_score(lat).ok_or(error::NOT_FLOAT)?;
    if !(geohash::LONG_MIN..=geohash::LONG_MAX).contains(&lon)
        || !(geohash::LAT_MIN..=geohash::LAT_MAX).contains(&lat)
    {
        return Err(CmdError::new(format!(
            "ERR invalid longitude,latitude pair {},{}",
            fmt_fixed(lon, 6),
            fmt_fixed(lat, 6)
        )));
    }
    Ok([lon, lat])
}

/// Meters per unit.
fn unit(arg: &[u8]) -> Result<f64, CmdError> {
    const UNITS: [(&str, f64); 4] = [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)];
    UNITS
        .iter()
        .find(|(u, _)| arg.eq_ignore_ascii_case(u.as_bytes()))
        .map(|(_, f)| *f)
        .ok_or_else(|| CmdError::new("ERR unsupported unit provided. please use M, KM, FT, MI"))
}

/// A non-negative number, or `ERR <msg>`.
fn size(arg: &[u8], msg: &'static str) -> Result<f64, CmdError> {
    parse_score(arg).ok_or(CmdError(std::borrow::Cow::Borrowed(msg)))
}

/// `radius unit`: the radius (in the unit) and the unit in meters.
fn radius(argv: &[&[u8]]) -> Result<(f64, f64), CmdError> {
    let r = size(argv[0], "ERR need numeric radius")?;
    if r < 0.0 {
        return Err(CmdError::new("ERR radius cannot be negative"));
    }
    Ok((r, unit(argv[1])?))
}

/// `width height unit`.
fn box_size(argv: &[&[u8]]) -> Result<(f64, f64, f64), CmdError> {
    let w = size(argv[0], "ERR need numeric width")?;
    let h = size(argv[1], "ERR need numeric height")?;
    if h < 0.0 || w < 0.0 {
        return Err(CmdError::new("ERR height or width cannot be negative"));
    }
    Ok((w, h, unit(argv[2])?))
}

/// A coordinate as Redis's addReplyHumanLongDouble: the double widened to
/// long double, `%.17Lf` without trailing zeros; a double in RESP3.
fn reply_coord(out: &mut Vec<u8>, v: f64, proto: u8) {
    let s = LongDouble::from_f64(v).to_human_string();
    encode::double_text(out, s.as_bytes(), proto);
}

/// A distance as Redis's addReplyDoubleDistance: `%.4f`, always a bulk
/// string.
fn reply_distance(out: &mut Vec<u8>, d: f64) {
    encode::bulk(out, fmt_fixed(d, 4).as_bytes());
}

/// GEOADD key [NX | XX] [CH] longitude latitude member [longitude latitude
/// member ...]
fn geoadd(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let mut f = AddFlags::default();
    let mut at = 2;
    while at < argv.len() {
        let a = argv[at];
        if a.eq_ignore_ascii_case(b"nx") {
            f.nx = true;
        } else if a.eq_ignore_ascii_case(b"xx") {
            f.xx = true;
        } else if a.eq_ignore_ascii_case(b"ch") {
            f.ch = true;
        } else {
            break;
        }
        at += 1;
    }
    let triples = &argv[at..];
    // No triple at all is ZADD's syntax error in Redis.
    if triples.is_empty() || !triples.len().is_multiple_of(3) || (f.xx && f.nx) {
        return Err(error::SYNTAX);
    }
    let mut scores = Vec::with_capacity(triples.len() / 3);
    let mut texts = Vec::with_capacity(triples.len() / 3);
    for t in triples.chunks_exact(3) {
        let [lon, lat] = lonlat(t[0], t[1])?;
        let score = geohash::score_of(lon, lat).unwrap_or(0);
        scores.push(score as f64);
        texts.push(itoa::Buffer::new().format(score).as_bytes().to_vec());
    }
    let mut pairs: Vec<&[u8]> = Vec::with_capacity(texts.len() * 2);
    for (t, triple) in texts.iter().zip(triples.chunks_exact(3)) {
        pairs.push(t);
        pairs.push(triple[2]);
    }
    // Redis runs (and logs) `zadd key [options] score member ...`.
    let mut zadd: Vec<Vec<u8>> = Vec::with_capacity(at + pairs.len());
    zadd.push(b"zadd".to_vec());
    zadd.extend(argv[1..at].iter().map(|a| a.to_vec()));
    zadd.extend(pairs.iter().map(|a| a.to_vec()));
    cx.propagate_instead(vec![zadd]);
    add_generic(cx, argv[1], &pairs, &scores, &f)
}

/// The scores of `members` in the sorted set at `key` (none when the key
/// is missing); WRONGTYPE for another type.
fn scores_of(cx: &mut Ctx, key: &[u8], members: &[&[u8]]) -> Result<Vec<Option<f64>>, CmdError> {
    let (db, now) = (cx.db(), cx.now_ms);
    Ok(match typed::read::<ZSet>(&mut cx.view, db, key, now)? {
        Some(z) => members.iter().map(|m| z.score(m)).collect(),
        None => vec![None; members.len()],
    })
}

/// GEOPOS key [member [member ...]]
fn geopos(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let scores = scores_of(cx, argv[1], &argv[2..])?;
    let proto = cx.proto();
    cx.array(scores.len());
    for s in scores {
        match s {
            Some(s) => {
                let [lon, lat] = geohash::decode_score(s);
                cx.array(2);
                reply_coord(cx.out, lon, proto);
                reply_coord(cx.out, lat, proto);
            }
            None => cx.null_array(),
        }
    }
    Ok(())
}

/// GEOHASH key [member [member ...]]
fn geohash_cmd(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let scores = scores_of(cx, argv[1], &argv[2..])?;
    cx.array(scores.len());
    for s in scores {
        match s {
            Some(s) => cx.bulk(&geohash::geohash_string(s)),
            None => cx.null(),
        }
    }
    Ok(())
}

/// GEODIST key member1 member2 [M | KM | FT | MI]
fn geodist(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let to_meters = match argv.len() {
        5 => unit(argv[4])?,
        n if n > 5 => return Err(error::SYNTAX),
        _ => 1.0,
    };
    let (db, now) = (cx.db(), cx.now_ms);
    let Some(z) = typed::read::<ZSet>(&mut cx.view, db, argv[1], now)? else {
        cx.null();
        return Ok(());
    };
    let (Some(a), Some(b)) = (z.score(argv[2]), z.score(argv[3])) else {
        cx.null();
        return Ok(());
    };
    let [lon1, lat1] = geohash::decode_score(a);
    let [lon2, lat2] = geohash::decode_score(b);
    reply_distance(
        cx.out,
        geohash::distance(lon1, lat1, lon2, lat2) / to_meters,
    );
    Ok(())
}

/// Which command of the search family runs (Redis's georadiusGeneric
/// flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS[_RO]: a centre given by coordinates.
    Coords { store: bool },
    /// GEORADIUSBYMEMBER[_RO]: a centre given by a member.
    Member { store: bool },
    /// GEOSEARCH[STORE].
    Search { store: bool },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

fn georadius(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    search_generic(cx, argv, 1, Form::Coords { store: true })
}

fn georadius_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    search_generic(cx, argv, 1, Form::Coords { store: false })
}

fn georadiusbymember(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    search_generic(cx, argv, 1, Form::Member { store: true })
}

fn georadiusbymember_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    search_generic(cx, argv, 1, Form::Member { store: false })
}

/// GEOSEARCH key FROMMEMBER member | FROMLONLAT longitude latitude
/// BYRADIUS radius unit | BYBOX width height unit [ASC | DESC]
/// [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]
fn geosearch(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    search_generic(cx, argv, 1, Form::Search { store: false })
}

/// GEOSEARCHSTORE destination source FROMMEMBER member | FROMLONLAT
/// longitude latitude BYRADIUS radius unit | BYBOX width height unit
/// [ASC | DESC] [COUNT count [ANY]] [STOREDIST]
fn geosearchstore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    search_generic(cx, argv, 2, Form::Search { store: true })
}

/// A member's position, or Redis's error for a missing one.
fn member_position(z: &ZSet, member: &[u8]) -> Result<[f64; 2], CmdError> {
    z.score(member)
        .map(geohash::decode_score)
        .ok_or_else(|| CmdError::new("ERR could not decode requested zset member"))
}

/// Everything parsed from a search command.
struct Query<'a> {
    shape: Shape,
    /// The destination and whether it gets distances (STOREDIST).
    store: Option<(&'a [u8], bool)>,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    sort: Sort,
    count: usize,
    any: bool,
}

/// Parses a search command as Redis's georadiusGeneric, in its order (so
/// the first error is Redis's), looking up a FROMMEMBER centre in `z`.
fn parse_query<'a>(
    argv: &[&'a [u8]],
    z: Option<&ZSet>,
    form: Form,
    name: &[u8],
) -> Result<Query<'a>, CmdError> {
    let mut q = Query {
        shape: Shape {
            lon: 0.0,
            lat: 0.0,
            kind: ShapeKind::Radius(0.0),
            conversion: 0.0,
        },
        store: None,
        withdist: false,
        withhash: false,
        withcoord: false,
        sort: Sort::None,
        count: 0,
        any: false,
    };
    let base = match form {
        Form::Coords { .. } => {
            [q.shape.lon, q.shape.lat] = lonlat(argv[2], argv[3])?;
            let (r, conv) = radius(&argv[4..6])?;
            q.shape.kind = ShapeKind::Radius(r);
            q.shape.conversion = conv;
            6
        }
        // Redis parses the rest before answering for a missing key.
        Form::Member { .. } if z.is_none() => 5,
        Form::Member { .. } => {
            if let Some(z) = z {
                [q.shape.lon, q.shape.lat] = member_position(z, argv[2])?;
            }
            let (r, conv) = radius(&argv[3..5])?;
            q.shape.kind = ShapeKind::Radius(r);
            q.shape.conversion = conv;
            5
        }
        Form::Search { store: true } => {
            q.store = Some((argv[1], false));
            3
        }
        Form::Search { store: false } => 2,
    };
    let search = matches!(form, Form::Search { .. });
    let store_option = matches!(
        form,
        Form::Coords { store: true } | Form::Member { store: true }
    );
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let rest = &argv[base..];
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i];
        let left = rest.len() - i - 1;
        let is = |w: &str| a.eq_ignore_ascii_case(w.as_bytes());
        if is("withdist") {
            q.withdist = true;
        } else if is("withhash") {
            q.withhash = true;
        } else if is("withcoord") {
            q.withcoord = true;
        } else if is("any") {
            q.any = true;
        } else if is("asc") {
            q.sort = Sort::Asc;
        } else if is("desc") {
            q.sort = Sort::Desc;
        } else if is("count") && left >= 1 {
            let n = super::args::int(rest[i + 1])?;
            if n <= 0 {
                return Err(CmdError::new("ERR COUNT must be > 0"));
            }
            q.count = n as usize;
            i += 1;
        } else if is("store") && left >= 1 && store_option {
            q.store = Some((rest[i + 1], false));
            i += 1;
        } else if is("storedist") && left >= 1 && store_option {
            q.store = Some((rest[i + 1], true));
            i += 1;
        } else if is("storedist") && form == (Form::Search { store: true }) {
            if let Some((_, dist)) = q.store.as_mut() {
                *dist = true;
            }
        } else if is("frommember") && left >= 1 && search && !fromloc {
            if let Some(z) = z {
                [q.shape.lon, q.shape.lat] = member_position(z, rest[i + 1])?;
            }
            frommember = true;
            i += 1;
        } else if is("fromlonlat") && left >= 2 && search && !frommember {
            [q.shape.lon, q.shape.lat] = lonlat(rest[i + 1], rest[i + 2])?;
            fromloc = true;
            i += 2;
        } else if is("byradius") && left >= 2 && search && !bybox {
            let (r, conv) = radius(&rest[i + 1..i + 3])?;
            q.shape.kind = ShapeKind::Radius(r);
            q.shape.conversion = conv;
            byradius = true;
            i += 2;
        } else if is("bybox") && left >= 3 && search && !byradius {
            let (width, height, conv) = box_size(&rest[i + 1..i + 4])?;
            q.shape.kind = ShapeKind::Box { width, height };
            q.shape.conversion = conv;
            bybox = true;
            i += 3;
        } else {
            return Err(error::SYNTAX);
        }
        i += 1;
    }
    if q.store.is_some() && (q.withdist || q.withhash || q.withcoord) {
        return Err(CmdError::new(format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if form == (Form::Search { store: true }) {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    if search && !(frommember || fromloc) {
        return Err(CmdError::new(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            String::from_utf8_lossy(name)
        )));
    }
    if search && !(byradius || bybox) {
        return Err(CmdError::new(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            String::from_utf8_lossy(name)
        )));
    }
    if q.any && q.count == 0 {
        return Err(CmdError::new(
            "ERR the ANY argument requires COUNT argument",
        ));
    }
    Ok(q)
}

/// The search family (Redis's georadiusGeneric): `src_at` is the source
/// key's index.
fn search_generic(cx: &mut Ctx, argv: &[&[u8]], src_at: usize, form: Form) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let z = typed::read::<ZSet>(&mut cx.view, db, argv[src_at], now)?;
    let z = z.as_deref();
    let q = parse_query(argv, z, form, argv[0])?;
    let Some(z) = z else {
        match q.store {
            Some((dst, _)) => store(cx, argv, dst, Vec::new()),
            None => cx.array(0),
        }
        return Ok(());
    };
    // COUNT keeps the nearest: without an order, ascending (ANY takes the
    // first found instead).
    let sort = if q.count != 0 && q.sort == Sort::None && !q.any {
        Sort::Asc
    } else {
        q.sort
    };
    let mut points = geohash::search(z, &q.shape, if q.any { q.count } else { 0 });
    if points.is_empty() && q.store.is_none() {
        cx.array(0);
        return Ok(());
    }
    let returned = if q.count == 0 {
        points.len()
    } else {
        points.len().min(q.count)
    };
    if sort != Sort::None {
        geohash::sort(&mut points, sort == Sort::Desc, returned);
    }
    points.truncate(returned);
    let conv = q.shape.conversion;
    if let Some((dst, storedist)) = q.store {
        let items = points
            .into_iter()
            .map(|p| {
                let score = if storedist { p.dist / conv } else { p.score };
                (score, p.member)
            })
            .collect();
        store(cx, argv, dst, items);
        return Ok(());
    }
    let proto = cx.proto();
    let options = q.withdist as usize + q.withhash as usize + q.withcoord as usize;
    let out = &mut *cx.out;
    encode::array(out, points.len());
    for p in &points {
        if options > 0 {
            encode::array(out, options + 1);
        }
        encode::bulk(out, &p.member);
        if q.withdist {
            reply_distance(out, p.dist / conv);
        }
        if q.withhash {
            encode::integer(out, geohash::double_to_i64(p.score));
        }
        if q.withcoord {
            encode::array(out, 2);
            reply_coord(out, p.lon, proto);
            reply_coord(out, p.lat, proto);
        }
    }
    Ok(())
}

/// Writes a search's result to `dst` (deleting it when empty) and replies
/// with the count. The dispatcher locked `dst`, even when a second STORE
/// named it (see the table's `georadius_store_key`).
fn store(cx: &mut Ctx, argv: &[&[u8]], dst: &[u8], mut items: Vec<(f64, Vec<u8>)>) {
    let (db, now) = (cx.db(), cx.now_ms);
    let n = items.len();
    if n == 0 {
        if cx.view.remove(db, dst, now).is_some() {
            cx.dirty += 1;
            cx.notify(notify::GENERIC, "del", dst);
        }
    } else {
        // Boxes scanned twice (huge radii) can repeat a member.
        let mut seen = std::collections::HashSet::with_capacity(n);
        items.retain(|(_, m)| seen.insert(m.clone()));
        let z = ZSet::from_items(items, zlimits(cx));
        cx.view.set(db, dst, Value::ZSet(Box::new(z)), 0, now);
        cx.dirty += n as u64;
        let event = if argv[0].eq_ignore_ascii_case(b"geosearchstore") {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        cx.notify(notify::ZSET, event, dst);
    }
    cx.int(n as i64);
}
