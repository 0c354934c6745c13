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

/// `%.17g`, as Redis 7.0 formats every score it replies with. Integers
/// below 2^53 (the common case) skip the float formatting.
pub fn fmt_score(v: f64, out: &mut Vec<u8>) {
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
