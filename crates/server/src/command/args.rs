//! Argument parsing shared by the families: numbers with Redis's rules and
//! error texts, and case-insensitive option matching.

use super::error::{self, CmdError};

/// An integer argument, or `ERR value is not an integer or out of range`.
#[inline]
pub fn int(arg: &[u8]) -> Result<i64, CmdError> {
    resp::parse_i64(arg).ok_or(error::NOT_INTEGER)
}

/// A float argument as Redis's `string2ld`: no leading space, no NaN.
pub fn float(arg: &[u8]) -> Result<f64, CmdError> {
    parse_float(arg).ok_or(error::NOT_FLOAT)
}

pub fn parse_float(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() || arg.len() > 5000 || arg[0].is_ascii_whitespace() {
        return None;
    }
    let s = std::str::from_utf8(arg).ok()?;
    let v: f64 = s.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// Formats a float as INCRBYFLOAT/HINCRBYFLOAT reply it: fixed notation,
/// shortest digits that round-trip, no trailing zeros.
pub fn format_float(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    format!("{v}")
}

/// Formats a double the way Redis replies with scores (`%.17g`, shortest
/// round-trip in Redis 7): `inf`, `-inf`, integers without `.0`.
pub fn format_double(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{v}");
    // Rust prints large/small magnitudes without exponent; Redis's %.17g
    // switches to exponent form past 17 digits.
    if v != 0.0 && (v.abs() >= 1e17 || v.abs() < 1e-4) {
        let e = format!("{v:e}");
        if let Some((m, exp)) = e.split_once('e') {
            let exp: i32 = exp.parse().unwrap_or(0);
            return format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
        }
    }
    s
}

/// A blocking command's timeout in seconds (decimals allowed; 0 =
/// forever), as Redis's getTimeoutFromObjectOrReply.
pub fn timeout(arg: &[u8]) -> Result<Option<std::time::Duration>, CmdError> {
    let secs = parse_float(arg)
        .filter(|v| v.is_finite())
        .ok_or_else(|| CmdError::new("ERR timeout is not a float or out of range"))?;
    if secs < 0.0 {
        return Err(super::error::NEGATIVE_TIMEOUT);
    }
    let ms = (secs * 1000.0).ceil();
    if ms > i64::MAX as f64 / 2.0 {
        return Err(CmdError::new("ERR timeout is out of range"));
    }
    Ok(if ms == 0.0 {
        None
    } else {
        Some(std::time::Duration::from_millis(ms as u64))
    })
}

#[inline]
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// A database index argument for SELECT/MOVE/SWAPDB/COPY.
pub fn db_index(arg: &[u8], databases: usize) -> Result<usize, CmdError> {
    let n = int32(arg)?;
    if n < 0 || n as usize >= databases {
        return Err(error::DB_RANGE);
    }
    Ok(n as usize)
}

/// An argument Redis reads as a C int (getIntFromObjectOrReply).
pub fn int32(arg: &[u8]) -> Result<i64, CmdError> {
    let n = int(arg)?;
    if n < i32::MIN as i64 || n > i32::MAX as i64 {
        return Err(CmdError::new(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ));
    }
    Ok(n)
}

/// A SCAN-family cursor as Redis's parseScanCursorOrReply reads it:
/// `strtoul` in base 10, so an optional sign is accepted and a negative
/// number wraps (`-1` is 2^64 - 1), an empty string is 0, and a leading
/// space, trailing garbage or a value beyond 64 bits is `invalid cursor`.
pub fn scan_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    parse_strtoul(arg).ok_or_else(|| CmdError::new("ERR invalid cursor"))
}

fn parse_strtoul(arg: &[u8]) -> Option<u64> {
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

pub fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(int(b"12"), Ok(12));
        assert!(int(b"1.5").is_err());
        assert_eq!(float(b"1.5"), Ok(1.5));
        assert_eq!(float(b"5.0e3"), Ok(5000.0));
        assert!(float(b" 1").is_err());
        assert!(float(b"nan").is_err());
        assert_eq!(format_float(10.5 + 0.1), "10.6");
        assert_eq!(format_float(5200.0), "5200");
        assert_eq!(format_double(1.5), "1.5");
        assert_eq!(format_double(f64::INFINITY), "inf");
        assert_eq!(format_double(3.0), "3");
    }

    #[test]
    fn cursors_parse_like_strtoul() {
        assert_eq!(scan_cursor(b"0"), Ok(0));
        assert_eq!(scan_cursor(b""), Ok(0));
        assert_eq!(scan_cursor(b"+7"), Ok(7));
        assert_eq!(scan_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(scan_cursor(b"-18446744073709551615"), Ok(1));
        assert_eq!(scan_cursor(b"18446744073709551615"), Ok(u64::MAX));
        assert!(scan_cursor(b"18446744073709551616").is_err());
        assert!(scan_cursor(b" 1").is_err());
        assert!(scan_cursor(b"1 ").is_err());
        assert!(scan_cursor(b"-").is_err());
        assert!(scan_cursor(b"+").is_err());
        assert!(scan_cursor(b"1.5").is_err());
        assert!(scan_cursor(b"abc").is_err());
    }
}
