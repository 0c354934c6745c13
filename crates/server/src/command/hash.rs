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
//! `0.30000000000000004`): [`long_double`] emulates that format exactly.

use resp::encode;

use super::args::{self, is};
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::Ctx;
use crate::glob;
use crate::notify;
use crate::storage::hash::Hash;
use crate::storage::keyspace::{lru_clock, View};
use crate::storage::list::Elem;
use crate::storage::value::{Entry, Value};

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

/// The hash at `key` for a read (counts a hit or miss).
fn read_hash<'v>(
    view: &'v mut View,
    db: usize,
    key: &[u8],
    now: u64,
) -> Result<Option<&'v mut Hash>, CmdError> {
    match view.get(db, key, now) {
        None => Ok(None),
        Some(Entry {
            value: Value::Hash(h),
            ..
        }) => Ok(Some(h)),
        Some(_) => Err(error::WRONGTYPE),
    }
}

/// The hash at `key` for a write: no hit/miss counted, access time
/// updated.
fn write_hash<'v>(
    view: &'v mut View,
    db: usize,
    key: &[u8],
    now: u64,
) -> Result<Option<&'v mut Hash>, CmdError> {
    match view.peek(db, key, now) {
        None => Ok(None),
        Some(e) => {
            e.access = lru_clock(now);
            match &mut e.value {
                Value::Hash(h) => Ok(Some(h)),
                _ => Err(error::WRONGTYPE),
            }
        }
    }
}

/// Runs `f` on the hash at `key`, or on a new empty hash that is stored
/// only if `f` succeeds and leaves a field in it. One lookup either way.
fn with_hash<R>(
    cx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(&mut Hash) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    let (db, now) = (cx.db(), cx.now_ms);
    if let Some(h) = write_hash(&mut cx.view, db, key, now)? {
        return f(h);
    }
    let mut h = Hash::new();
    let r = f(&mut h)?;
    if !h.is_empty() {
        cx.view.set(db, key, Value::Hash(h), 0, now);
    }
    Ok(r)
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
    let created = with_hash(cx, argv[1], |h| {
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
    let set = with_hash(cx, argv[1], |h| {
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
    match read_hash(&mut cx.view, db, argv[1], now)?.and_then(|h| h.get(argv[2])) {
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
    let h = read_hash(&mut cx.view, db, argv[1], now)?;
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
    let h = read_hash(&mut cx.view, db, argv[1], now)?;
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
    let Some(h) = write_hash(&mut cx.view, db, key, now)? else {
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
    let found = read_hash(&mut cx.view, db, argv[1], now)?.is_some_and(|h| h.contains(argv[2]));
    cx.int(found as i64);
    Ok(())
}

/// HLEN key
fn hlen(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let n = read_hash(&mut cx.view, db, argv[1], now)?.map_or(0, |h| h.len());
    cx.int(n as i64);
    Ok(())
}

/// HSTRLEN key field
fn hstrlen(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let n = read_hash(&mut cx.view, db, argv[1], now)?
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
    let value = with_hash(cx, argv[1], |h| {
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
    let text = with_hash(cx, argv[1], |h| {
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
        let h = read_hash(&mut cx.view, db, argv[1], now)?;
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
    let Some(h) = read_hash(&mut cx.view, db, argv[1], now)? else {
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

/// A SCAN cursor as Redis's `strtoul`: optional sign (a negative value
/// wraps), decimal digits, no leading space; empty means 0.
fn parse_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    let invalid = || CmdError::new("ERR invalid cursor");
    let (neg, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if arg.is_empty() {
        return Ok(0);
    }
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let mut v: u64 = 0;
    for &c in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((c - b'0') as u64))
            .ok_or_else(invalid)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// HSCAN key cursor [MATCH pattern] [COUNT count]
fn hscan(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let cursor = parse_cursor(argv[2])?;
    let (db, now) = (cx.db(), cx.now_ms);
    let Some(h) = read_hash(&mut cx.view, db, argv[1], now)? else {
        cx.out.extend_from_slice(b"*2\r\n$1\r\n0\r\n*0\r\n");
        return Ok(());
    };
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        if is(argv[j], "COUNT") && more {
            let n = args::int(argv[j + 1])?;
            if n < 1 {
                return Err(error::SYNTAX);
            }
            count = n as usize;
        } else if is(argv[j], "MATCH") && more {
            pattern = Some(argv[j + 1]).filter(|p| *p != b"*");
        } else {
            return Err(error::SYNTAX);
        }
        j += 2;
    }
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

/// x87 80-bit extended precision (`long double` on x86-64), as far as
/// HINCRBYFLOAT needs it: `strtold` (decimal and hexadecimal, `inf`,
/// `nan`), correctly rounded addition, and `%.17Lf` with Redis's trailing
/// zero removal. Values are sign × mantissa × 2^exp with a 64-bit mantissa;
/// arithmetic is exact on small big integers, then rounded to nearest,
/// ties to even.
pub mod long_double {
    use std::cmp::Ordering;

    /// Exponent range of normal x87 values: 2^-16382 ..= 2^16383 (times
    /// mantissa in [1, 2)).
    const MAX_EXP2: i64 = 16383;
    const MIN_EXP2: i64 = -16382 - 63;
    /// Longest string `string2ld` accepts (MAX_LONG_DOUBLE_CHARS - 1).
    const MAX_CHARS: usize = 5 * 1024 - 1;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Kind {
        Finite,
        Inf,
        NaN,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct LongDouble {
        neg: bool,
        kind: Kind,
        /// Normalised (top bit set) unless the value is zero.
        mant: u64,
        /// Value = mant × 2^exp.
        exp: i64,
    }

    // A minimal unsigned big integer: little-endian 32-bit limbs.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Big(Vec<u32>);

    impl Big {
        fn from_u64(v: u64) -> Big {
            let mut b = Big(vec![v as u32, (v >> 32) as u32]);
            b.trim();
            b
        }

        fn trim(&mut self) {
            while self.0.last() == Some(&0) {
                self.0.pop();
            }
        }

        fn is_zero(&self) -> bool {
            self.0.is_empty()
        }

        fn bits(&self) -> u64 {
            match self.0.last() {
                None => 0,
                Some(&top) => (self.0.len() as u64 - 1) * 32 + (32 - top.leading_zeros() as u64),
            }
        }

        fn bit(&self, i: u64) -> bool {
            let limb = (i / 32) as usize;
            limb < self.0.len() && (self.0[limb] >> (i % 32)) & 1 == 1
        }

        /// Whether any of the low `n` bits is set.
        fn any_below(&self, n: u64) -> bool {
            let full = (n / 32) as usize;
            if self.0.iter().take(full).any(|&l| l != 0) {
                return true;
            }
            let rem = n % 32;
            rem > 0 && full < self.0.len() && self.0[full] & ((1u32 << rem) - 1) != 0
        }

        fn mul_add_small(&mut self, m: u32, a: u32) {
            let mut carry = a as u64;
            for l in self.0.iter_mut() {
                let v = *l as u64 * m as u64 + carry;
                *l = v as u32;
                carry = v >> 32;
            }
            if carry > 0 {
                self.0.push(carry as u32);
            }
        }

        fn mul_pow10(&mut self, mut k: u64) {
            while k >= 9 {
                self.mul_add_small(1_000_000_000, 0);
                k -= 9;
            }
            if k > 0 {
                self.mul_add_small(10u32.pow(k as u32), 0);
            }
        }

        fn pow10(k: u64) -> Big {
            let mut b = Big(vec![1]);
            b.mul_pow10(k);
            b
        }

        fn shl(&self, n: u64) -> Big {
            if self.is_zero() {
                return Big(Vec::new());
            }
            let limbs = (n / 32) as usize;
            let bits = (n % 32) as u32;
            let mut out = vec![0u32; limbs];
            let mut carry = 0u32;
            for &l in &self.0 {
                if bits == 0 {
                    out.push(l);
                } else {
                    out.push((l << bits) | carry);
                    carry = l >> (32 - bits);
                }
            }
            if carry > 0 {
                out.push(carry);
            }
            Big(out)
        }

        fn shr(&self, n: u64) -> Big {
            let limbs = (n / 32) as usize;
            if limbs >= self.0.len() {
                return Big(Vec::new());
            }
            let bits = (n % 32) as u32;
            let src = &self.0[limbs..];
            let mut out = Vec::with_capacity(src.len());
            for i in 0..src.len() {
                let lo = src[i] >> bits;
                let hi = if bits > 0 && i + 1 < src.len() {
                    src[i + 1] << (32 - bits)
                } else {
                    0
                };
                out.push(lo | hi);
            }
            let mut b = Big(out);
            b.trim();
            b
        }

        fn low_u64(&self) -> u64 {
            let lo = self.0.first().copied().unwrap_or(0) as u64;
            let hi = self.0.get(1).copied().unwrap_or(0) as u64;
            lo | (hi << 32)
        }

        fn cmp(&self, other: &Big) -> Ordering {
            self.0
                .len()
                .cmp(&other.0.len())
                .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
        }

        fn add(&self, other: &Big) -> Big {
            let n = self.0.len().max(other.0.len());
            let mut out = Vec::with_capacity(n + 1);
            let mut carry = 0u64;
            for i in 0..n {
                let v = self.0.get(i).copied().unwrap_or(0) as u64
                    + other.0.get(i).copied().unwrap_or(0) as u64
                    + carry;
                out.push(v as u32);
                carry = v >> 32;
            }
            if carry > 0 {
                out.push(carry as u32);
            }
            Big(out)
        }

        /// self - other, with self >= other.
        fn sub(&self, other: &Big) -> Big {
            let mut out = Vec::with_capacity(self.0.len());
            let mut borrow = 0i64;
            for i in 0..self.0.len() {
                let mut v = self.0[i] as i64 - other.0.get(i).copied().unwrap_or(0) as i64 - borrow;
                borrow = 0;
                if v < 0 {
                    v += 1 << 32;
                    borrow = 1;
                }
                out.push(v as u32);
            }
            let mut b = Big(out);
            b.trim();
            b
        }

        /// (self / d, remainder is non-zero), for a quotient known to be
        /// below 2^(qbits): bit-by-bit long division.
        fn div(&self, d: &Big, qbits: u64) -> (Big, bool) {
            let mut rem = self.clone();
            let mut q = Big(Vec::new());
            for i in (0..qbits).rev() {
                let shifted = d.shl(i);
                if rem.cmp(&shifted) != Ordering::Less {
                    rem = rem.sub(&shifted);
                    q = q.add(&Big(vec![1]).shl(i));
                }
            }
            (q, !rem.is_zero())
        }

        /// Divides by a small number; returns the remainder.
        fn div_small(&mut self, d: u32) -> u32 {
            let mut rem = 0u64;
            for l in self.0.iter_mut().rev() {
                let v = (rem << 32) | *l as u64;
                *l = (v / d as u64) as u32;
                rem = v % d as u64;
            }
            self.trim();
            rem as u32
        }

        fn to_decimal(&self) -> String {
            if self.is_zero() {
                return "0".into();
            }
            let mut b = self.clone();
            let mut chunks = Vec::new();
            while !b.is_zero() {
                chunks.push(b.div_small(1_000_000_000));
            }
            let mut s = String::new();
            for (i, c) in chunks.iter().rev().enumerate() {
                if i == 0 {
                    s.push_str(&c.to_string());
                } else {
                    s.push_str(&format!("{c:09}"));
                }
            }
            s
        }
    }

    impl LongDouble {
        pub const ZERO: LongDouble = LongDouble {
            neg: false,
            kind: Kind::Finite,
            mant: 0,
            exp: 0,
        };

        pub fn is_finite(&self) -> bool {
            self.kind == Kind::Finite
        }

        pub fn from_i64(n: i64) -> LongDouble {
            round(n < 0, &Big::from_u64(n.unsigned_abs()), 0, false)
        }

        /// Correctly rounded sum.
        pub fn add(&self, other: &LongDouble) -> LongDouble {
            match (self.kind, other.kind) {
                (Kind::NaN, _) | (_, Kind::NaN) => return nan(),
                (Kind::Inf, Kind::Inf) if self.neg != other.neg => return nan(),
                (Kind::Inf, _) => return *self,
                (_, Kind::Inf) => return *other,
                _ => {}
            }
            if self.mant == 0 {
                return if other.mant == 0 {
                    LongDouble {
                        neg: self.neg && other.neg,
                        ..LongDouble::ZERO
                    }
                } else {
                    *other
                };
            }
            if other.mant == 0 {
                return *self;
            }
            // Order by magnitude: a has the larger exponent.
            let (a, b) = if self.exp >= other.exp {
                (self, other)
            } else {
                (other, self)
            };
            let diff = (a.exp - b.exp) as u64;
            if diff > 130 {
                // b is below half an ulp of a: a is the rounded result
                // (a is exactly representable).
                return *a;
            }
            let am = Big::from_u64(a.mant).shl(diff);
            let bm = Big::from_u64(b.mant);
            let (neg, mag) = if a.neg == b.neg {
                (a.neg, am.add(&bm))
            } else {
                match am.cmp(&bm) {
                    Ordering::Equal => return LongDouble::ZERO,
                    Ordering::Greater => (a.neg, am.sub(&bm)),
                    Ordering::Less => (b.neg, bm.sub(&am)),
                }
            };
            round(neg, &mag, b.exp, false)
        }

        /// `%.17Lf`, then trailing zeros (and a bare point) removed, and
        /// `-0` written `0`: Redis's `ld2string(LD_STR_HUMAN)`.
        pub fn to_human_string(self) -> String {
            match self.kind {
                Kind::Inf => return if self.neg { "-inf" } else { "inf" }.into(),
                Kind::NaN => return "nan".into(),
                Kind::Finite => {}
            }
            // q = round(|value| × 10^17).
            let mut m = Big::from_u64(self.mant);
            m.mul_pow10(17);
            let q = if self.exp >= 0 {
                m.shl(self.exp as u64)
            } else {
                let s = (-self.exp) as u64;
                let mut q = m.shr(s);
                let half = s > 0 && m.bit(s - 1);
                let sticky = s > 1 && m.any_below(s - 1);
                if half && (sticky || q.bit(0)) {
                    q = q.add(&Big(vec![1]));
                }
                q
            };
            let digits = q.to_decimal();
            let digits = format!("{digits:0>18}");
            let (int, frac) = digits.split_at(digits.len() - 17);
            let frac = frac.trim_end_matches('0');
            let mut s = String::new();
            if self.neg {
                s.push('-');
            }
            s.push_str(int);
            if !frac.is_empty() {
                s.push('.');
                s.push_str(frac);
            }
            if s == "-0" {
                s = "0".into();
            }
            s
        }
    }

    fn nan() -> LongDouble {
        LongDouble {
            neg: false,
            kind: Kind::NaN,
            mant: 0,
            exp: 0,
        }
    }

    fn inf(neg: bool) -> LongDouble {
        LongDouble {
            neg,
            kind: Kind::Inf,
            mant: 0,
            exp: 0,
        }
    }

    /// Rounds mag × 2^exp (plus a sticky bit for anything below mag) to
    /// 64 significant bits, nearest, ties to even.
    fn round(neg: bool, mag: &Big, exp: i64, sticky: bool) -> LongDouble {
        let bits = mag.bits();
        if bits == 0 {
            return LongDouble {
                neg,
                ..LongDouble::ZERO
            };
        }
        let (mut mant, mut e) = if bits <= 64 {
            (mag.low_u64() << (64 - bits), exp - (64 - bits as i64))
        } else {
            let drop = bits - 64;
            let mut m = mag.shr(drop).low_u64();
            let half = mag.bit(drop - 1);
            let below = sticky || (drop > 1 && mag.any_below(drop - 1));
            let mut e = exp + drop as i64;
            if half && (below || m & 1 == 1) {
                m = m.wrapping_add(1);
                if m == 0 {
                    m = 1 << 63;
                    e += 1;
                }
            }
            (m, e)
        };
        if mant == 0 {
            mant = 1 << 63;
        }
        // Value = mant × 2^e, mant in [2^63, 2^64): binary exponent e + 63.
        if e + 63 > MAX_EXP2 {
            return inf(neg);
        }
        if e < MIN_EXP2 {
            // Below the normal range; x87 would go subnormal. Keep the
            // value (no HINCRBYFLOAT result gets here in practice).
            e = e.max(i64::MIN / 4);
        }
        LongDouble {
            neg,
            kind: Kind::Finite,
            mant,
            exp: e,
        }
    }

    /// Parses like Redis's `string2ld`: `strtold` on the whole string, no
    /// leading space, NaN and overflow rejected, underflow to zero
    /// rejected.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        if s.is_empty() || s.len() > MAX_CHARS || s[0].is_ascii_whitespace() {
            return None;
        }
        let (neg, body) = match s[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let lower = body.to_ascii_lowercase();
        if lower == b"inf" || lower == b"infinity" {
            return Some(inf(neg));
        }
        if lower.starts_with(b"nan") {
            return None;
        }
        let v = if lower.starts_with(b"0x") {
            parse_hex(neg, &lower[2..])?
        } else {
            parse_decimal(neg, body)?
        };
        match v.kind {
            // strtold overflow: ERANGE with HUGE_VAL.
            Kind::Inf => None,
            _ => Some(v),
        }
    }

    fn parse_decimal(neg: bool, s: &[u8]) -> Option<LongDouble> {
        let mut i = 0;
        let mut digits = Big(Vec::new());
        let mut ndigits = 0u64; // significant digits taken
        let mut scale: i64 = 0; // decimal exponent adjustment
        let mut any = false;
        let mut dropped_nonzero = false;
        // Digits past this many only matter as a sticky bit: 800 digits
        // are far more than any tie needs for a 64-bit mantissa.
        const KEEP: u64 = 800;
        let mut take = |c: u8, frac: bool, digits: &mut Big, ndigits: &mut u64, scale: &mut i64| {
            if *ndigits == 0 && c == b'0' {
                if frac {
                    *scale -= 1;
                }
                return;
            }
            if *ndigits < KEEP {
                digits.mul_add_small(10, (c - b'0') as u32);
                if digits.0.is_empty() {
                    digits.0.push((c - b'0') as u32);
                }
                *ndigits += 1;
                if frac {
                    *scale -= 1;
                }
            } else {
                dropped_nonzero |= c != b'0';
                if !frac {
                    *scale += 1;
                }
            }
        };
        while i < s.len() && s[i].is_ascii_digit() {
            take(s[i], false, &mut digits, &mut ndigits, &mut scale);
            any = true;
            i += 1;
        }
        if i < s.len() && s[i] == b'.' {
            i += 1;
            while i < s.len() && s[i].is_ascii_digit() {
                take(s[i], true, &mut digits, &mut ndigits, &mut scale);
                any = true;
                i += 1;
            }
        }
        if !any {
            return None;
        }
        if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
            let mut j = i + 1;
            let eneg = match s.get(j) {
                Some(b'-') => {
                    j += 1;
                    true
                }
                Some(b'+') => {
                    j += 1;
                    false
                }
                _ => false,
            };
            let start = j;
            let mut e: i64 = 0;
            while j < s.len() && s[j].is_ascii_digit() {
                e = (e * 10 + (s[j] - b'0') as i64).min(1 << 40);
                j += 1;
            }
            if j == start {
                // "1e" / "1e+": strtold stops before the 'e'.
                return None;
            }
            scale += if eneg { -e } else { e };
            i = j;
        }
        if i != s.len() {
            return None;
        }
        digits.trim();
        if digits.is_zero() {
            return Some(LongDouble {
                neg,
                ..LongDouble::ZERO
            });
        }
        // Magnitude check before building huge powers of ten.
        let mag10 = scale + ndigits as i64;
        if mag10 > 4933 {
            return Some(inf(neg));
        }
        if mag10 < -4951 {
            // Underflow to zero: ERANGE, rejected.
            return None;
        }
        if scale >= 0 {
            let mut n = digits;
            n.mul_pow10(scale as u64);
            return Some(round(neg, &n, 0, dropped_nonzero));
        }
        // digits / 10^k: scale the numerator so the quotient has 66+ bits.
        let p = Big::pow10((-scale) as u64);
        let shift = (66 + p.bits()).saturating_sub(digits.bits()) + 1;
        let num = digits.shl(shift);
        let qbits = num.bits() - p.bits() + 1;
        let (q, rem) = num.div(&p, qbits);
        Some(round(neg, &q, -(shift as i64), rem || dropped_nonzero))
    }

    fn parse_hex(neg: bool, s: &[u8]) -> Option<LongDouble> {
        let mut i = 0;
        let mut m = Big(Vec::new());
        let mut exp: i64 = 0;
        let mut any = false;
        let mut sticky = false;
        let mut nbits = 0u64;
        let hex = |c: u8| (c as char).to_digit(16);
        let mut take = |d: u32, frac: bool, m: &mut Big, exp: &mut i64| {
            if nbits < 200 {
                m.mul_add_small(16, d);
                if m.0.is_empty() && d != 0 {
                    m.0.push(d);
                }
                if !m.is_zero() {
                    nbits = m.bits();
                }
                if frac {
                    *exp -= 4;
                }
            } else {
                sticky |= d != 0;
                if !frac {
                    *exp += 4;
                }
            }
        };
        while let Some(d) = s.get(i).and_then(|&c| hex(c)) {
            take(d, false, &mut m, &mut exp);
            any = true;
            i += 1;
        }
        if s.get(i) == Some(&b'.') {
            i += 1;
            while let Some(d) = s.get(i).and_then(|&c| hex(c)) {
                take(d, true, &mut m, &mut exp);
                any = true;
                i += 1;
            }
        }
        if !any {
            return None;
        }
        if s.get(i) == Some(&b'p') {
            let mut j = i + 1;
            let eneg = match s.get(j) {
                Some(b'-') => {
                    j += 1;
                    true
                }
                Some(b'+') => {
                    j += 1;
                    false
                }
                _ => false,
            };
            let start = j;
            let mut e: i64 = 0;
            while j < s.len() && s[j].is_ascii_digit() {
                e = (e * 10 + (s[j] - b'0') as i64).min(1 << 40);
                j += 1;
            }
            if j == start {
                return None;
            }
            exp += if eneg { -e } else { e };
            i = j;
        }
        if i != s.len() {
            return None;
        }
        m.trim();
        if m.is_zero() {
            return Some(LongDouble {
                neg,
                ..LongDouble::ZERO
            });
        }
        let top = exp + m.bits() as i64;
        if top > MAX_EXP2 + 1 {
            return Some(inf(neg));
        }
        if top < MIN_EXP2 {
            return None;
        }
        Some(round(neg, &m, exp, sticky))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn incr(a: &str, b: &str) -> String {
            let x = parse(a.as_bytes()).unwrap();
            let y = parse(b.as_bytes()).unwrap();
            x.add(&y).to_human_string()
        }

        #[test]
        fn matches_redis() {
            // Expected values taken from redis-server 7.0 on x86-64.
            assert_eq!(incr("0.1", "0.2"), "0.3");
            assert_eq!(incr("10.5", "0.1"), "10.6");
            assert_eq!(incr("2.5", "-2.5"), "0");
            assert_eq!(incr("0", "2.50"), "2.5");
            assert_eq!(incr("2.5", "1e-5"), "2.50001");
            assert_eq!(incr("0", "1.23e20"), "123000000000000000000");
            assert_eq!(
                incr("123000000000000000000", "1e30"),
                "1000000000123000000018571591680"
            );
            assert_eq!(incr("1e3", "1"), "1001");
            assert_eq!(incr("5.0e3", "200"), "5200");
            assert_eq!(
                incr("1", "1e308"),
                "99999999999999999996685879655845645660560099847415567207797047994921734868838061872100126921888539320446747225054013223152134749593960583597420814430196418767959100019603190778663109604507106667939153395788938914560543563061268364901618630217086589253444881623791300855757318142424510452728255046343928578048"
            );
            assert_eq!(incr("-1", "0.5"), "-0.5");
            assert_eq!(incr("0", "-0.00000000000000000001"), "0");
            assert_eq!(incr("0x10", "1"), "17");
            assert_eq!(incr("0", "3.0000000000000000001"), "3");
        }

        #[test]
        fn parse_rules() {
            for bad in [
                "", " 1", "1 ", "abc", "1e", "1e+", ".", "nan", "-nan", "1e5000", "1e-5000", "0x",
            ] {
                assert!(parse(bad.as_bytes()).is_none(), "{bad}");
            }
            for good in [
                "1",
                "-1",
                "+1",
                "1.",
                ".5",
                "1e10",
                "1E-3",
                "inf",
                "-Infinity",
                "0x1p3",
                "0",
                "-0.0",
            ] {
                assert!(parse(good.as_bytes()).is_some(), "{good}");
            }
            assert!(!parse(b"inf").unwrap().is_finite());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_parse_like_strtoul() {
        assert_eq!(parse_cursor(b"0"), Ok(0));
        assert_eq!(parse_cursor(b""), Ok(0));
        assert_eq!(parse_cursor(b"+5"), Ok(5));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Ok(u64::MAX));
        assert!(parse_cursor(b"18446744073709551616").is_err());
        assert!(parse_cursor(b" 0").is_err());
        assert!(parse_cursor(b"1x").is_err());
        assert!(parse_cursor(b"-").is_err());
    }
}
