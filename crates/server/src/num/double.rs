//! Doubles as Redis prints them: C's `%g` (Lua's tostring, cjson,
//! struct), and `%.17g` for the scores and doubles commands reply with
//! (addReplyDouble). The one formatter of the server.

/// Appends `v` formatted as C's `%.{prec}g` (glibc: `inf`, `-nan`...).
pub fn fmt_g(out: &mut Vec<u8>, v: f64, prec: usize) {
    if v.is_nan() {
        out.extend_from_slice(if v.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
        return;
    }
    if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    let prec = prec.max(1);
    let e = format!("{:.*e}", prec - 1, v);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= prec as i32 {
        out.extend_from_slice(strip_zeros(mant).as_bytes());
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        if exp.abs() < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(exp.abs().to_string().as_bytes());
    } else {
        let s = format!("{:.*}", (prec as i32 - 1 - exp).max(0) as usize, v);
        out.extend_from_slice(strip_zeros(&s).as_bytes());
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `%.17g`, as Redis 7.0 formats every score it replies with, or the
/// shortest text that reads back the same, as Redis 7.2's d2string
/// (under `redis-version 7.4.1`). Integers below 2^53 (the common case)
/// skip the float formatting.
pub fn fmt_score(v: f64, out: &mut Vec<u8>) {
    if crate::speaks_7_4() {
        return fmt_shortest(v, out);
    }
    if v.fract() == 0.0 && v.abs() < 9007199254740992.0 && !(v == 0.0 && v.is_sign_negative()) {
        out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
        return;
    }
    fmt_g(out, v, 17);
}

/// Redis's addReplyDouble: `%.17g` as a bulk string in RESP2, a `,`
/// double in RESP3.
#[inline]
pub fn reply_double(out: &mut Vec<u8>, v: f64, proto: u8) {
    let mut buf = Vec::with_capacity(24);
    fmt_score(v, &mut buf);
    resp::encode::double_text(out, &buf, proto);
}

/// Redis 7.2's d2string: `nan`, `inf`, `-0`; an integer below 2^62 in
/// magnitude as an integer; otherwise the shortest digits that read back
/// the same (Redis's fpconv, grisu2; here Rust's shortest formatting),
/// laid out by fpconv's rules: plainly while the exponent is small, else
/// `d.ddde-7` / `1e+21`.
pub fn fmt_shortest(v: f64, out: &mut Vec<u8>) {
    if v.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if v.is_infinite() {
        out.extend_from_slice(if v < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    // double2ll: the range where the cast is exact.
    let half = (i64::MAX / 2) as f64;
    if (-half..=half).contains(&v) && (v as i64) as f64 == v {
        out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
        return;
    }
    let neg = v < 0.0;
    if neg {
        out.push(b'-');
    }
    // Shortest digits and decimal exponent: "d.ddde<E>".
    let sci = format!("{:e}", v.abs());
    let (mantissa, e) = sci.split_once('e').unwrap_or((&sci, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mantissa.bytes().filter(|b| *b != b'.').collect();
    let nd = digits.len() as i32;
    // The value is digits x 10^k.
    let k = e - (nd - 1);
    let exp = (k + nd - 1).abs();
    if k >= 0 && exp < nd + 7 {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', k as usize));
        return;
    }
    if k < 0 && (k > -7 || exp < 4) {
        let offset = nd + k;
        if offset <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-offset) as usize));
            out.extend_from_slice(&digits);
        } else {
            out.extend_from_slice(&digits[..offset as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[offset as usize..]);
        }
        return;
    }
    digits.truncate((18 - neg as i32) as usize);
    out.push(digits[0]);
    if digits.len() > 1 {
        out.push(b'.');
        out.extend_from_slice(&digits[1..]);
    }
    out.push(b'e');
    out.push(if e < 0 { b'-' } else { b'+' });
    out.extend_from_slice(itoa::Buffer::new().format(exp).as_bytes());
}

#[cfg(test)]
mod shortest_tests {
    use super::fmt_shortest;

    fn f(v: f64) -> String {
        let mut out = Vec::new();
        fmt_shortest(v, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn as_redis_7_2_prints_them() {
        // Redis 7.4.1's replies to ZSCORE of the same scores.
        assert_eq!(f(1.1), "1.1");
        assert_eq!(f(1e17), "100000000000000000");
        assert_eq!(f(1.5e-7), "1.5e-7");
        assert_eq!(f(123456789012345678.0), "123456789012345680");
        assert_eq!(f(0.001), "0.001");
        assert_eq!(f(-2.5), "-2.5");
        assert_eq!(f(1e21), "1e+21");
        assert_eq!(f(-0.0), "-0");
        assert_eq!(f(f64::INFINITY), "inf");
        assert_eq!(f(1e300), "1e+300");
    }
}
