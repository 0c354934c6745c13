//! C's integer parsing as Redis relies on it: `atoi` (key specs' numkeys),
//! `strtoll` over a whole argument (configuration values), `strtoul`
//! (Redis 7.0's SCAN cursors) and Redis 7.4's `string2ull`, with the
//! white space and sign rule `strtod` shares.

/// C's leading white space and optional sign: whether the number is
/// negative, and where its digits start.
pub fn space_and_sign(s: &[u8]) -> (bool, usize) {
    let i = s
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .unwrap_or(s.len());
    match s.get(i) {
        Some(b'-') => (true, i + 1),
        Some(b'+') => (false, i + 1),
        _ => (false, i),
    }
}

/// C's atoi: leading white space, an optional sign, the digits that
/// follow; 0 when there are none. Truncated to a C int.
pub fn atoi(s: &[u8]) -> i32 {
    let (neg, mut i) = space_and_sign(s);
    let mut n: i64 = 0;
    while let Some(d) = s.get(i).filter(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add((d - b'0') as i64);
        i += 1;
    }
    (if neg { -n } else { n }) as i32
}

/// C's strtoll in base 10 over a whole argument: leading white space, an
/// optional sign, digits (saturating); `None` when anything follows the
/// digits. An argument with no digits at all reads as 0 only when it is
/// empty (strtoll leaves its end pointer at the start).
pub fn strtoll_whole(s: &[u8]) -> Option<i64> {
    let (neg, start) = space_and_sign(s);
    let mut i = start;
    let mut v: i128 = 0;
    while let Some(d) = s.get(i).filter(|c| c.is_ascii_digit()) {
        v = (v * 10 + (d - b'0') as i128).min(i64::MAX as i128 + 1);
        i += 1;
    }
    if i == start {
        return s.is_empty().then_some(0);
    }
    if i != s.len() {
        return None;
    }
    let v = if neg { -v } else { v };
    Some(v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// C's strtoul in base 10 over a whole argument, as Redis reads a SCAN
/// cursor: an optional sign (a negative number wraps: `-1` is 2^64 - 1),
/// no leading white space, nothing after the digits, no overflow; an empty
/// argument is 0.
pub fn strtoul_cursor(arg: &[u8]) -> Option<u64> {
    if arg
        .first()
        .is_some_and(|c| c.is_ascii_whitespace() || *c == 0x0b)
    {
        return None;
    }
    let (neg, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() {
        // No conversion: strtoul leaves the end pointer at the start, so
        // only the empty string passes (as 0).
        return arg.is_empty().then_some(0);
    }
    let mut n: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(if neg { n.wrapping_neg() } else { n })
}

/// Redis 7.4's string2ull, how it reads a SCAN cursor: a strict integer
/// must not be negative; anything else goes to C's strtoull, which skips
/// leading white space, takes a sign (a negative number wraps) and must
/// consume the whole, non-empty argument without overflowing.
pub fn string2ull(arg: &[u8]) -> Option<u64> {
    if let Some(n) = resp::parse_i64(arg) {
        return u64::try_from(n).ok();
    }
    let (neg, start) = space_and_sign(arg);
    let body = &arg[start..];
    if body.is_empty() || !body.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: u64 = 0;
    for &c in body {
        n = n.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(if neg { n.wrapping_neg() } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_as_c_reads_them() {
        assert_eq!(atoi(b"  -12abc"), -12);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b"99999999999"), 99999999999i64 as i32);
        assert_eq!(strtoll_whole(b" +42"), Some(42));
        assert_eq!(strtoll_whole(b""), Some(0));
        assert_eq!(strtoll_whole(b" "), None);
        assert_eq!(strtoll_whole(b"1x"), None);
        assert_eq!(strtoll_whole(b"-99999999999999999999"), Some(i64::MIN));
    }
}
