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

/// The options of SCAN, SSCAN, HSCAN and ZSCAN.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ScanOptions<'a> {
    /// MATCH, unless it is `*` (which matches everything).
    pub pattern: Option<&'a [u8]>,
    /// COUNT, default 10.
    pub count: usize,
    /// TYPE (SCAN only).
    pub type_filter: Option<&'a [u8]>,
}

/// Parses `[MATCH pattern] [COUNT count]` (and `[TYPE type]` when
/// `with_type`) from `argv[from..]`, as Redis's scanGenericCommand: a
/// COUNT below 1 or anything else is a syntax error.
pub fn scan_options<'a>(
    argv: &[&'a [u8]],
    from: usize,
    with_type: bool,
) -> Result<ScanOptions<'a>, CmdError> {
    let mut o = ScanOptions {
        count: 10,
        ..ScanOptions::default()
    };
    let mut j = from;
    while j < argv.len() {
        let has_value = j + 1 < argv.len();
        if is(argv[j], "COUNT") && has_value {
            let n = int(argv[j + 1])?;
            if n < 1 {
                return Err(error::SYNTAX);
            }
            o.count = n as usize;
        } else if is(argv[j], "MATCH") && has_value {
            o.pattern = Some(argv[j + 1]).filter(|p| *p != b"*");
        } else if with_type && is(argv[j], "TYPE") && has_value {
            o.type_filter = Some(argv[j + 1]);
        } else {
            return Err(error::SYNTAX);
        }
        j += 2;
    }
    Ok(o)
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

    #[test]
    fn scan_options_as_redis() {
        let argv: Vec<&[u8]> = vec![
            b"SCAN", b"0", b"MATCH", b"a*", b"COUNT", b"5", b"TYPE", b"list",
        ];
        let o = scan_options(&argv, 2, true);
        assert_eq!(
            o,
            Ok(ScanOptions {
                pattern: Some(b"a*".as_slice()),
                count: 5,
                type_filter: Some(b"list".as_slice()),
            })
        );
        // TYPE belongs to SCAN only; COUNT must be positive; `*` is no filter.
        assert_eq!(scan_options(&argv, 2, false), Err(error::SYNTAX));
        let zero: Vec<&[u8]> = vec![b"SSCAN", b"k", b"0", b"COUNT", b"0"];
        assert_eq!(scan_options(&zero, 3, false), Err(error::SYNTAX));
        let star: Vec<&[u8]> = vec![b"SSCAN", b"k", b"0", b"MATCH", b"*"];
        assert_eq!(scan_options(&star, 3, false).map(|o| o.pattern), Ok(None));
        let dangling: Vec<&[u8]> = vec![b"SSCAN", b"k", b"0", b"MATCH"];
        assert_eq!(scan_options(&dangling, 3, false), Err(error::SYNTAX));
    }
}
