//! C's number parsing as Redis relies on it: `strtod` (scores, SORT
//! weights, cjson), and the checks Redis makes around it
//! (getDoubleFromObject). One copy, shared by the commands and scripting.

/// glibc's strtod: after leading white space, the longest prefix that is
/// a number (decimal, hex with binary exponent, inf/infinity,
/// nan[(...)]), its value and the bytes consumed; `None` when there is
/// none (C's strtod then returns 0 and consumes nothing).
pub fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let (neg, i) = super::strtol::space_and_sign(s);
    let sign = |v: f64| if neg { -v } else { v };
    let rest = &s[i..];
    let ci = |p: &[u8]| rest.len() >= p.len() && rest[..p.len()].eq_ignore_ascii_case(p);
    if ci(b"infinity") {
        return Some((sign(f64::INFINITY), i + 8));
    }
    if ci(b"inf") {
        return Some((sign(f64::INFINITY), i + 3));
    }
    if ci(b"nan") {
        let mut n = i + 3;
        if s.get(n) == Some(&b'(') {
            let mut j = n + 1;
            while s
                .get(j)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                j += 1;
            }
            if s.get(j) == Some(&b')') {
                n = j + 1;
            }
        }
        return Some((sign(f64::NAN), n));
    }
    if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        if let Some((v, n)) = hex_float(&rest[2..]) {
            return Some((sign(v), i + 2 + n));
        }
    }
    let start = i;
    let digits = |j: &mut usize| {
        let b = *j;
        while s.get(*j).is_some_and(u8::is_ascii_digit) {
            *j += 1;
        }
        *j - b
    };
    let mut j = i;
    let mut nd = digits(&mut j);
    if s.get(j) == Some(&b'.') {
        let mut k = j + 1;
        let f = digits(&mut k);
        if nd + f > 0 {
            j = k;
            nd += f;
        }
    }
    if nd == 0 {
        return None;
    }
    if matches!(s.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(s.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        if digits(&mut k) > 0 {
            j = k;
        }
    }
    let text = std::str::from_utf8(&s[start..j]).ok()?;
    let v: f64 = text.parse().ok()?;
    Some((sign(v), j))
}

fn hex_float(s: &[u8]) -> Option<(f64, usize)> {
    let mut v = 0f64;
    let mut i = 0;
    let mut nd = 0;
    while let Some(d) = s.get(i).and_then(|c| (*c as char).to_digit(16)) {
        v = v * 16.0 + d as f64;
        i += 1;
        nd += 1;
    }
    if s.get(i) == Some(&b'.') {
        let mut k = i + 1;
        let mut scale = 1.0 / 16.0;
        let mut f = 0;
        while let Some(d) = s.get(k).and_then(|c| (*c as char).to_digit(16)) {
            v += d as f64 * scale;
            scale /= 16.0;
            k += 1;
            f += 1;
        }
        if nd + f > 0 {
            i = k;
            nd += f;
        }
    }
    if nd == 0 {
        return None;
    }
    if matches!(s.get(i), Some(b'p' | b'P')) {
        let mut k = i + 1;
        let neg = match s.get(k) {
            Some(b'-') => {
                k += 1;
                true
            }
            Some(b'+') => {
                k += 1;
                false
            }
            _ => false,
        };
        let b = k;
        let mut e: i32 = 0;
        while let Some(c) = s.get(k).filter(|c| c.is_ascii_digit()) {
            e = e.saturating_mul(10).saturating_add((c - b'0') as i32);
            k += 1;
        }
        if k > b {
            v *= 2f64.powi(if neg { -e } else { e });
            i = k;
        }
    }
    Some((v, i))
}

/// Redis's getDoubleFromObject / SORT's score: the whole of `s` is a
/// number by `strtod` (leading white space allowed, nothing after), not
/// NaN, without `ERANGE` (overflow to ±inf from a finite literal, or
/// underflow of a nonzero mantissa to 0). Empty: 0, as strtod consumes
/// nothing and stops at the end.
pub fn whole(s: &[u8]) -> Option<f64> {
    if let Some(v) = small_integer(s) {
        return Some(v);
    }
    let (v, n) = strtod(s).unwrap_or((0.0, 0));
    if n != s.len() {
        return None;
    }
    if v.is_nan() || erange(s, v) {
        return None;
    }
    Some(v)
}

/// `s` when it is a plain integer of at most 15 digits (an optional `-`,
/// then digits only): what scores most often are. Every such number is
/// exact in a double, so the result is strtod's, without its general path.
#[inline]
fn small_integer(s: &[u8]) -> Option<f64> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    let mut n = 0u64;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (c - b'0') as u64;
    }
    let v = n as f64;
    Some(if neg { -v } else { v })
}

/// Whether C's strtod would have set `ERANGE` reading `v` from `text`.
fn erange(text: &[u8], v: f64) -> bool {
    let t = text.trim_ascii_start();
    let body = t
        .strip_prefix(b"-")
        .or_else(|| t.strip_prefix(b"+"))
        .unwrap_or(t);
    if v.is_infinite() {
        return !body.first().is_some_and(|c| c.eq_ignore_ascii_case(&b'i'));
    }
    if v != 0.0 {
        return false;
    }
    // Underflow: a nonzero mantissa that rounded to zero.
    let hex = body.len() > 2 && body[..2].eq_ignore_ascii_case(b"0x");
    let mantissa = if hex { &body[2..] } else { body };
    let end = mantissa
        .iter()
        .position(|&c| {
            if hex {
                c == b'p' || c == b'P'
            } else {
                c == b'e' || c == b'E'
            }
        })
        .unwrap_or(mantissa.len());
    mantissa[..end]
        .iter()
        .any(|&c| c.is_ascii_alphanumeric() && c != b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_integers_read_as_the_general_path_does() {
        for s in [
            &b"0"[..],
            b"-0",
            b"7",
            b"-12",
            b"000123",
            b"999999999999999",
            b"-999999999999999",
            b"1234567890123456",
            b"+5",
            b"1.5",
            b" 1",
            b"1 ",
            b"-",
            b"",
            b"12a",
            b"1e3",
        ] {
            let general = strtod(s).filter(|&(_, n)| n == s.len()).map(|(v, _)| v);
            match small_integer(s) {
                Some(v) => assert_eq!(Some(v.to_bits()), general.map(f64::to_bits), "{s:?}"),
                None => assert!(
                    s.len() > 15
                        || !s.iter().all(|c| c.is_ascii_digit() || *c == b'-')
                        || s == b"-"
                        || s.is_empty(),
                    "{s:?}"
                ),
            }
        }
        assert_eq!(whole(b"-0").map(f64::to_bits), Some((-0.0f64).to_bits()));
    }

    #[test]
    fn strtod_prefixes() {
        assert_eq!(strtod(b"123.5  "), Some((123.5, 5)));
        assert_eq!(strtod(b"  -2"), Some((-2.0, 4)));
        assert_eq!(strtod(b"1e"), Some((1.0, 1)));
        assert_eq!(strtod(b"1."), Some((1.0, 2)));
        assert_eq!(strtod(b".5"), Some((0.5, 2)));
        assert_eq!(strtod(b"0x10"), Some((16.0, 4)));
        assert_eq!(strtod(b"0x1p3"), Some((8.0, 5)));
        assert_eq!(strtod(b"0x.8"), Some((0.5, 4)));
        assert_eq!(strtod(b"-Inf"), Some((f64::NEG_INFINITY, 4)));
        assert_eq!(strtod(b"infinity"), Some((f64::INFINITY, 8)));
        assert!(strtod(b"nan(12)").is_some_and(|(v, n)| v.is_nan() && n == 7));
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b""), None);
        assert_eq!(strtod(b"0xg"), Some((0.0, 1)));
    }

    #[test]
    fn whole_numbers_as_redis_checks_them() {
        assert_eq!(whole(b"1.5"), Some(1.5));
        assert_eq!(whole(b"  -2"), Some(-2.0));
        assert_eq!(whole(b""), Some(0.0));
        assert_eq!(whole(b"inf"), Some(f64::INFINITY));
        assert_eq!(whole(b"0x10"), Some(16.0));
        assert_eq!(whole(b"1e400"), None);
        assert_eq!(whole(b"1e-400"), None);
        assert_eq!(whole(b"0e-400"), Some(0.0));
        assert_eq!(whole(b"nan"), None);
        assert_eq!(whole(b"12abc"), None);
        assert_eq!(whole(b"1 "), None);
    }
}
