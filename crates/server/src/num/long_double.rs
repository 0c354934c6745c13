//! The platform's `long double` (80-bit x87 on x86-64), in which Redis
//! computes INCRBYFLOAT and HINCRBYFLOAT: `0.1 + 0.2` is `0.3` there, so
//! f64 will not do. The arithmetic and printf are the C library's own
//! (`csrc/long_double.c`, built by `build.rs`), so results match Redis on
//! the same platform digit for digit.

use std::ffi::c_char;

/// A `long double`, stored as its bytes (16 with alignment on x86-64 and
/// aarch64); only the C side reads them.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct LongDouble([u8; 16]);

/// Room for the longest `%.17Lf` of a finite value (Redis's
/// MAX_LONG_DOUBLE_CHARS).
const CHARS: usize = 5 * 1024;

extern "C" {
    fn keel_string2ld(s: *const c_char, slen: usize, dp: *mut LongDouble) -> i32;
    fn keel_ld_from_i64(n: i64, out: *mut LongDouble);
    fn keel_ld_from_double(d: f64, out: *mut LongDouble);
    fn keel_fmt_fixed(v: f64, prec: i32, buf: *mut c_char, len: usize) -> usize;
    fn keel_ld_add(a: *const LongDouble, b: *const LongDouble, out: *mut LongDouble);
    fn keel_ld_is_finite(v: *const LongDouble) -> i32;
    fn keel_ld2string_human(v: *const LongDouble, buf: *mut c_char) -> usize;
}

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble([0; 16]);

    pub fn from_i64(n: i64) -> LongDouble {
        let mut out = LongDouble::ZERO;
        // SAFETY: `out` is a valid, aligned long double slot.
        unsafe { keel_ld_from_i64(n, &mut out) };
        out
    }

    pub fn from_f64(d: f64) -> LongDouble {
        let mut out = LongDouble::ZERO;
        // SAFETY: `out` is a valid, aligned long double slot.
        unsafe { keel_ld_from_double(d, &mut out) };
        out
    }

    pub fn add(&self, other: &LongDouble) -> LongDouble {
        let mut out = LongDouble::ZERO;
        // SAFETY: all three point at valid, aligned long double slots.
        unsafe { keel_ld_add(self, other, &mut out) };
        out
    }

    pub fn is_finite(&self) -> bool {
        // SAFETY: `self` is a valid long double slot.
        unsafe { keel_ld_is_finite(self) != 0 }
    }

    /// Redis's `ld2string(LD_STR_HUMAN)`: `%.17Lf`, trailing zeros (and a
    /// bare point) removed, `-0` written `0`.
    pub fn to_human_string(self) -> String {
        let mut buf = vec![0u8; CHARS];
        // SAFETY: `buf` holds CHARS bytes, as the C side expects.
        let n = unsafe { keel_ld2string_human(&self, buf.as_mut_ptr().cast()) };
        buf.truncate(n);
        String::from_utf8(buf).unwrap_or_default()
    }
}

/// C's `printf("%.*f", prec, v)`: the text Redis replies with for
/// distances (`%.4f`) and prints in GEOADD's range error (`%f`).
pub fn fmt_fixed(v: f64, prec: i32) -> String {
    // The largest double has 309 integer digits: room for any `prec` the
    // callers use (at most 6).
    let mut buf = [0u8; 512];
    // SAFETY: `buf` holds 512 bytes and the C side writes at most that.
    let n = unsafe { keel_fmt_fixed(v, prec, buf.as_mut_ptr().cast(), buf.len()) };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Redis's `string2ld`: the whole argument must be a number `strtold`
/// reads (decimal, hexadecimal, `inf`), without leading space; NaN and
/// values out of range are refused.
pub fn parse(s: &[u8]) -> Option<LongDouble> {
    let mut out = LongDouble::ZERO;
    // SAFETY: `s` is valid for `s.len()` bytes (the C side copies at most
    // that many, and refuses longer than its buffer); `out` is a valid slot.
    let ok = unsafe { keel_string2ld(s.as_ptr().cast(), s.len(), &mut out) };
    (ok != 0).then_some(out)
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
    fn printf_fixed() {
        assert_eq!(fmt_fixed(166274.1516, 4), "166274.1516");
        // Ties round to even on the exact binary value, as glibc.
        assert_eq!(fmt_fixed(0.03125, 4), "0.0312");
        assert_eq!(fmt_fixed(200.0, 6), "200.000000");
        assert_eq!(fmt_fixed(f64::INFINITY, 6), "inf");
        assert_eq!(
            LongDouble::from_f64(13.361389338970184).to_human_string(),
            "13.36138933897018433"
        );
    }

    #[test]
    fn parse_rules() {
        for bad in [
            "", " 1", "1 ", "abc", "1e", "1e+", ".", "nan", "-nan", "1e5000", "1e-5000", "0x",
            "1\0", "1.5\0", "1\x002",
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
