//! SORT and SORT_RO: sorting lists, sets and sorted sets, by their elements
//! or by keys named after them (`BY weight_*`, `BY obj_*->field`), fetching
//! other keys per element (`GET`), optionally storing the result as a list.
//!
//! Both commands lock every shard: the keys BY and GET read are named by
//! the data, so they cannot be known, or locked, before the command runs.
//!
//! Semantics are Redis 7.0's `sortCommandGeneric`: numeric sort by default
//! (elements or BY values read as doubles, ties broken by the element's
//! bytes), `ALPHA` for byte order, missing BY keys sort as 0 (numeric) or
//! first (ALPHA), `BY` without `*` skips sorting, LIMIT is applied after
//! sorting. Where Redis leaves the order of equal ALPHA BY values to its
//! quicksort, keel breaks the tie by the element's bytes, so the result
//! (and a replayed `SORT ... STORE`) is deterministic.

use std::cmp::Ordering;

use resp::encode;

use super::args::Args;
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::Ctx;
use crate::clients::notify;
use crate::storage::value::{EntryMut, List, Value};

pub fn register(r: &mut Registry) {
    r.add_all_shards("sort", sort);
    r.add_all_shards("sort_ro", sort_ro);
}

/// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
/// [ALPHA] [STORE destination]
fn sort(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    sort_generic(cx, argv, false)
}

/// SORT_RO: SORT without STORE.
fn sort_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    sort_generic(cx, argv, true)
}

struct Options<'a> {
    by: Option<&'a [u8]>,
    /// BY a pattern without `*`: keep the container's order.
    dontsort: bool,
    limit_start: i64,
    limit_count: i64,
    gets: Vec<&'a [u8]>,
    desc: bool,
    alpha: bool,
    store: Option<&'a [u8]>,
}

fn parse<'a>(argv: &[&'a [u8]], readonly: bool) -> Result<Options<'a>, CmdError> {
    let mut o = Options {
        by: None,
        dontsort: false,
        limit_start: 0,
        limit_count: -1,
        gets: Vec::new(),
        desc: false,
        alpha: false,
        store: None,
    };
    let mut a = Args::new(argv, 2);
    while a.more() {
        if a.word("ASC") {
            o.desc = false;
        } else if a.word("DESC") {
            o.desc = true;
        } else if a.word("ALPHA") {
            o.alpha = true;
        } else if a.left() >= 3 && a.word("LIMIT") {
            o.limit_start = a.int();
            o.limit_count = a.int();
        } else if let Some(dst) = a.option_if(!readonly, "STORE") {
            o.store = Some(dst);
        } else if let Some(pattern) = a.option("BY") {
            o.by = Some(pattern);
            if !pattern.contains(&b'*') {
                o.dontsort = true;
            }
        } else if let Some(pattern) = a.option("GET") {
            o.gets.push(pattern);
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    Ok(o)
}

/// The elements of the value under `key`, in the order SORT starts from:
/// all of them, or (`range`, for a list or sorted set left unsorted) only
/// positions `start..=end` counted from the head, or from the tail when
/// `desc`. None for a key of another type.
fn elements(
    entry: Option<EntryMut<'_>>,
    range: Option<(usize, usize)>,
    desc: bool,
) -> Result<Vec<Vec<u8>>, CmdError> {
    let Some(entry) = entry else {
        return Ok(Vec::new());
    };
    Ok(match (&entry.value, range) {
        (Value::List(l), Some((start, end))) => {
            let n = end + 1 - start;
            if desc {
                l.iter_rev()
                    .skip(start)
                    .take(n)
                    .map(|e| e.to_vec())
                    .collect()
            } else {
                l.iter_from(start).take(n).map(|e| e.to_vec()).collect()
            }
        }
        (Value::List(l), None) => l.iter().map(|e| e.to_vec()).collect(),
        (Value::Set(s), _) => s.iter().map(|e| e.to_vec()).collect(),
        (Value::ZSet(z), Some((start, end))) => {
            let mut v = Vec::with_capacity(end + 1 - start);
            if desc {
                let len = z.len();
                z.for_range(len - 1 - end, len - start, true, |_, m| v.push(m.to_vec()));
            } else {
                z.for_range(start, end + 1, false, |_, m| v.push(m.to_vec()));
            }
            v
        }
        (Value::ZSet(z), None) => {
            let mut v = Vec::with_capacity(z.len());
            z.for_range(0, z.len(), false, |_, m| v.push(m.to_vec()));
            v
        }
        _ => return Err(error::WRONGTYPE),
    })
}

fn container_len(entry: Option<EntryMut<'_>>) -> usize {
    match entry.map(|e| e.value) {
        Some(Value::List(l)) => l.len(),
        Some(Value::Set(s)) => s.len(),
        Some(Value::ZSet(z)) => z.len(),
        _ => 0,
    }
}

/// Redis's `lookupKeyByPattern`: `#` is the element itself; otherwise the
/// first `*` is replaced by the element, and `key->field` reads a hash
/// field. A pattern without `*`, a missing key, or a key of the wrong type
/// (a string is needed, or a hash with `->`) gives nothing.
fn lookup(cx: &mut Ctx, pattern: &[u8], elem: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(elem.to_vec());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let rest = &pattern[star + 1..];
    let arrow = rest.windows(2).position(|w| w == b"->");
    let (suffix, field) = match arrow {
        Some(i) if i + 2 < rest.len() => (&rest[..i], Some(&rest[i + 2..])),
        _ => (rest, None),
    };
    let mut key = Vec::with_capacity(star + elem.len() + suffix.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(suffix);
    let (db, now) = (cx.db(), cx.now_ms);
    let entry = cx.view.get(db, &key, now)?;
    match (field, &entry.value) {
        (None, Value::Str(s)) => Some(s.to_vec()),
        (Some(f), Value::Hash(h)) => h.get(f).map(|v| v.to_vec()),
        _ => None,
    }
}

/// A BY value (or element) read as a double as Redis's `strtod` check:
/// leading spaces allowed, nothing after the number, no NaN, no overflow.
fn score(b: &[u8]) -> Option<f64> {
    crate::num::strtod::whole(b)
}

struct Item {
    elem: Vec<u8>,
    score: f64,
    /// The BY value, for ALPHA BY.
    by: Option<Vec<u8>>,
}

fn sort_generic(cx: &mut Ctx, argv: &[&[u8]], readonly: bool) -> CmdResult {
    let mut o = parse(argv, readonly)?;
    let (db, now) = (cx.db(), cx.now_ms);
    let key = argv[1];
    let is_set = match cx.view.get(db, key, now).map(|e| e.value) {
        None => false,
        Some(Value::Set(_)) => true,
        Some(Value::List(_)) | Some(Value::ZSet(_)) => false,
        Some(_) => return Err(error::WRONGTYPE),
    };
    // A set has no order of its own: when the result is stored (and so
    // replayed from the log) or goes to a script (whose writes are), sort
    // it by its bytes, as Redis does.
    if o.dontsort && is_set && (o.store.is_some() || cx.client.in_script) {
        o.dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    let len = container_len(cx.view.get(db, key, now)) as i64;
    let mut start = o.limit_start.max(0);
    let mut end = if o.limit_count < 0 {
        len - 1
    } else {
        start.saturating_add(o.limit_count) - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    let unsorted_range = o.dontsort && !is_set;
    let mut elems = if unsorted_range {
        if end >= start {
            let r = Some((start as usize, end as usize));
            let v = elements(cx.view.get(db, key, now), r, o.desc)?;
            end -= start;
            start = 0;
            v
        } else {
            Vec::new()
        }
    } else {
        elements(cx.view.get(db, key, now), None, o.desc)?
    };

    let mut items: Vec<Item> = elems
        .drain(..)
        .map(|elem| Item {
            elem,
            score: 0.0,
            by: None,
        })
        .collect();
    let mut conversion_error = false;
    if !o.dontsort {
        for it in items.iter_mut() {
            let value = match o.by {
                Some(p) => match lookup(cx, p, &it.elem) {
                    Some(v) => v,
                    None => continue,
                },
                None => {
                    if o.alpha {
                        continue;
                    }
                    it.elem.clone()
                }
            };
            if o.alpha {
                it.by = Some(value);
            } else {
                match score(&value) {
                    Some(s) => it.score = s,
                    None => conversion_error = true,
                }
            }
        }
        let (alpha, by, desc) = (o.alpha, o.by.is_some(), o.desc);
        // Redis compares with strcoll (the locale's collation, up to a
        // NUL) unless it stores the result, then byte by byte.
        let store = o.store.is_some();
        items.sort_by(|a, b| {
            let c = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.elem.cmp(&b.elem))
            } else if by {
                match (&a.by, &b.by) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) if store => x.cmp(y),
                    (Some(x), Some(y)) => super::collate::compare(x, y),
                }
                .then_with(|| a.elem.cmp(&b.elem))
            } else if store {
                a.elem.cmp(&b.elem)
            } else {
                super::collate::compare(&a.elem, &b.elem).then_with(|| a.elem.cmp(&b.elem))
            };
            if desc {
                c.reverse()
            } else {
                c
            }
        });
    }
    if conversion_error {
        return Err(CmdError::new(
            "ERR One or more scores can't be converted into double",
        ));
    }

    let picked: &[Item] = if end >= start && start >= 0 {
        &items[start as usize..=(end as usize).min(items.len().saturating_sub(1))]
    } else {
        &[]
    };
    let picked: &[Item] = if items.is_empty() { &[] } else { picked };
    let per = o.gets.len().max(1);
    let outputlen = picked.len() * per;
    match o.store {
        None => {
            encode::array(cx.out, outputlen);
            for it in picked {
                if o.gets.is_empty() {
                    encode::bulk(cx.out, &it.elem);
                }
                for g in &o.gets {
                    match lookup(cx, g, &it.elem) {
                        Some(v) => encode::bulk(cx.out, &v),
                        None => encode::null(cx.out, cx.client.proto),
                    }
                }
            }
        }
        Some(dst) => {
            let mut list = List::new(cx.limits().list_max_listpack_size);
            for it in picked {
                if o.gets.is_empty() {
                    list.push_back(&it.elem);
                }
                for g in &o.gets {
                    let v = lookup(cx, g, &it.elem).unwrap_or_default();
                    list.push_back(&v);
                }
            }
            if outputlen > 0 {
                list.settle();
                cx.view.set(db, dst, Value::List(Box::new(list)), 0, now);
                cx.dirty += outputlen as u64;
                cx.touch(db, dst);
                cx.notify(notify::LIST, "sortstore", dst);
            } else if cx.view.remove(db, dst, now).is_some() {
                cx.dirty += 1;
                cx.touch(db, dst);
                cx.notify(notify::GENERIC, "del", dst);
            }
            cx.int(outputlen as i64);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_as_strtod() {
        assert_eq!(score(b"1.5"), Some(1.5));
        assert_eq!(score(b"  -2"), Some(-2.0));
        assert_eq!(score(b""), Some(0.0));
        assert_eq!(score(b"inf"), Some(f64::INFINITY));
        assert_eq!(score(b"1e400"), None);
        assert_eq!(score(b"nan"), None);
        assert_eq!(score(b"12abc"), None);
        assert_eq!(score(b"1 "), None);
    }
}
