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

/// Redis's string2ld: `strtod` over the whole argument (hex and `inf`
/// included), no leading white space, no NaN. Redis reads a long double,
/// whose range is far wider: beyond a double's range a number saturates
/// to infinity or 0 here instead of failing, which is what the long double
/// turns into when Redis stores it back as a double.
pub fn parse_float(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() || arg.len() > 5000 || arg[0].is_ascii_whitespace() || arg[0] == 0x0b {
        return None;
    }
    let (v, n) = crate::num::strtod::strtod(arg)?;
    (n == arg.len() && !v.is_nan()).then_some(v)
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
    // Redis 7.4 reads it with string2ull, 7.0 with strtoul.
    let cursor = if crate::speaks_7_4() {
        crate::num::strtol::string2ull(arg)
    } else {
        crate::num::strtol::strtoul_cursor(arg)
    };
    cursor.ok_or_else(|| CmdError::new("ERR invalid cursor"))
}

/// A cursor over a command's arguments, from a position on, that keeps
/// the first error it meets. A reader that fails (a missing value, a
/// number that does not parse, a rule the caller finds broken) records
/// the error and answers a neutral value; after that the cursor is at its
/// end, so an option loop stops, and [`Args::finish`] answers the error.
/// Redis's parsers stop at the first bad argument and answer its error:
/// a loop over the cursor does the same with each rule said once.
pub struct Args<'v, 'a> {
    argv: &'v [&'a [u8]],
    at: usize,
    error: Option<CmdError>,
}

impl<'v, 'a> Args<'v, 'a> {
    /// The arguments `argv[from..]`.
    pub fn new(argv: &'v [&'a [u8]], from: usize) -> Args<'v, 'a> {
        Args {
            argv,
            at: from.min(argv.len()),
            error: None,
        }
    }

    /// How many arguments are left (none once an error is kept).
    pub fn left(&self) -> usize {
        if self.error.is_some() {
            0
        } else {
            self.argv.len() - self.at
        }
    }

    /// Whether any argument is left.
    pub fn more(&self) -> bool {
        self.left() > 0
    }

    /// The next argument, left in place.
    pub fn peek(&self) -> Option<&'a [u8]> {
        self.more().then(|| self.argv[self.at])
    }

    /// The index in argv of the next argument (for commands that rewrite
    /// their arguments when they propagate).
    pub fn position(&self) -> usize {
        self.at
    }

    /// The next argument, taken.
    pub fn take(&mut self) -> Option<&'a [u8]> {
        if !self.more() {
            return None;
        }
        self.at += 1;
        Some(self.argv[self.at - 1])
    }

    /// Takes the next argument if it is `word` (in any case).
    pub fn word(&mut self, word: &str) -> bool {
        let hit = self.more() && is(self.argv[self.at], word);
        if hit {
            self.at += 1;
        }
        hit
    }

    /// `word value`: takes both when the next argument is `word` and a
    /// value follows it, and answers the value. (`word` as the last
    /// argument is left, for the caller's syntax error.)
    pub fn option(&mut self, word: &str) -> Option<&'a [u8]> {
        if self.left() >= 2 && is(self.argv[self.at], word) {
            self.at += 2;
            return Some(self.argv[self.at - 1]);
        }
        None
    }

    /// [`Self::option`] where the option is `allowed` here; otherwise
    /// nothing is taken. (Filtering `option`'s answer instead would take
    /// the pair and let a later branch read the argument after it.)
    pub fn option_if(&mut self, allowed: bool, word: &str) -> Option<&'a [u8]> {
        if allowed {
            self.option(word)
        } else {
            None
        }
    }

    /// Every argument left, taken (none once an error is kept).
    pub fn rest(&mut self) -> &'v [&'a [u8]] {
        if self.error.is_some() {
            return &[];
        }
        let rest = &self.argv[self.at..];
        self.at = self.argv.len();
        rest
    }

    /// The next argument; a syntax error kept when there is none.
    pub fn value(&mut self) -> &'a [u8] {
        match self.take() {
            Some(v) => v,
            None => {
                self.fail(error::SYNTAX);
                b""
            }
        }
    }

    /// The next argument as an integer ([`int`]'s rules and error).
    pub fn int(&mut self) -> i64 {
        let v = self.value();
        self.check(int(v)).unwrap_or(0)
    }

    /// The next argument as a float ([`float`]'s rules and error).
    pub fn float(&mut self) -> f64 {
        let v = self.value();
        self.check(float(v)).unwrap_or(0.0)
    }

    /// `r`'s value, or `None` with its error kept.
    pub fn check<T>(&mut self, r: Result<T, CmdError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// Keeps `e`, unless an error is kept already.
    pub fn fail(&mut self, e: CmdError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// The first error met, if any.
    pub fn finish(self) -> Result<(), CmdError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// `[COUNT count]` at `from`, the end of LMPOP's and ZMPOP's arguments
/// (and their blocking forms'): 1 when absent.
pub fn mpop_count(argv: &[&[u8]], from: usize) -> Result<usize, CmdError> {
    let mut a = Args::new(argv, from);
    let mut count = None;
    while a.more() {
        match a.option_if(count.is_none(), "COUNT") {
            Some(c) => match int(c) {
                Ok(n) if n >= 1 => count = Some(n as usize),
                _ => a.fail(CmdError::new("ERR count should be greater than 0")),
            },
            None => a.fail(error::SYNTAX),
        }
    }
    a.finish()?;
    Ok(count.unwrap_or(1))
}

/// `[LIMIT limit]` at `from`, the end of SINTERCARD's and ZINTERCARD's
/// arguments: 0 (no limit) when absent.
pub fn intercard_limit(argv: &[&[u8]], from: usize) -> Result<usize, CmdError> {
    let mut a = Args::new(argv, from);
    let mut limit = 0;
    while a.more() {
        match a.option("LIMIT") {
            Some(l) => match int(l) {
                Ok(n) if n >= 0 => limit = n as usize,
                _ => a.fail(CmdError::new("ERR LIMIT can't be negative")),
            },
            None => a.fail(error::SYNTAX),
        }
    }
    a.finish()?;
    Ok(limit)
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
    /// HSCAN's NOVALUES (Redis 7.4) or ZSCAN's NOSCORES (Valkey 8.0):
    /// members only.
    pub members_only: bool,
}

/// Which SCAN a [`scan_options`] call parses for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ScanOf {
    Keys,
    Set,
    Hash,
    ZSet,
}

/// Parses `[MATCH pattern] [COUNT count]` from `argv[from..]`, with
/// SCAN's `[TYPE type]`, HSCAN's `[NOVALUES]` (Redis 7.4: under
/// `redis-version 7.4.1`, which also names it in the error for the other
/// SCANs) and ZSCAN's `[NOSCORES]` (Valkey 8.0), as Redis's
/// scanGenericCommand: a COUNT below 1 or anything else is a syntax error.
pub fn scan_options<'a>(
    argv: &[&'a [u8]],
    from: usize,
    of: ScanOf,
) -> Result<ScanOptions<'a>, CmdError> {
    let mut o = ScanOptions {
        count: 10,
        ..ScanOptions::default()
    };
    let mut a = Args::new(argv, from);
    while a.more() {
        if let Some(count) = a.option("COUNT") {
            match a.check(int(count)) {
                Some(n) if n >= 1 => o.count = n as usize,
                Some(_) => a.fail(error::SYNTAX),
                None => {}
            }
        } else if let Some(pattern) = a.option("MATCH") {
            o.pattern = Some(pattern).filter(|p| *p != b"*");
        } else if let Some(t) = a.option_if(of == ScanOf::Keys, "TYPE") {
            o.type_filter = Some(t);
        } else if crate::speaks_7_4() && a.word("NOVALUES") {
            if of == ScanOf::Hash {
                o.members_only = true;
            } else {
                a.fail(CmdError::new(
                    "ERR NOVALUES option can only be used in HSCAN",
                ));
            }
        } else if of == ScanOf::ZSet && a.word("NOSCORES") {
            o.members_only = true;
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    Ok(o)
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
    fn the_cursor_keeps_the_first_error() {
        let argv: Vec<&[u8]> = vec![b"X", b"LIMIT", b"x", b"COUNT", b"nope", b"tail"];
        let mut a = Args::new(&argv, 1);
        assert_eq!(a.option("LIMIT"), Some(&b"x"[..]));
        assert_eq!(a.option("COUNT").map(|v| a.check(int(v))), Some(None));
        // After the error nothing is left, and later failures do not
        // replace it.
        assert!(!a.more());
        assert_eq!(a.take(), None);
        a.fail(error::SYNTAX);
        assert_eq!(a.finish(), Err(error::NOT_INTEGER));

        let mut a = Args::new(&argv, 4);
        assert_eq!(a.int(), 0);
        assert_eq!(a.finish(), Err(error::NOT_INTEGER));

        let mut a = Args::new(&argv, 5);
        assert!(!a.word("other"));
        assert!(a.word("TAIL"));
        assert_eq!(a.value(), b"");
        assert_eq!(a.finish(), Err(error::SYNTAX));

        let mut a = Args::new(&argv, 3);
        assert_eq!(a.rest(), &argv[3..]);
        assert!(!a.more());
        assert_eq!(a.finish(), Ok(()));

        // An option not allowed here is not taken.
        let mut a = Args::new(&argv, 1);
        assert_eq!(a.option_if(false, "LIMIT"), None);
        assert!(a.word("limit"));

        // A word as the last argument is not an option with its value.
        let mut a = Args::new(&argv, 3);
        assert_eq!(a.option("COUNT"), Some(&b"nope"[..]));
        assert_eq!(a.option("TAIL"), None);
        assert!(a.word("tail"));
        assert_eq!(a.finish(), Ok(()));
    }

    #[test]
    fn floats_as_string2ld() {
        assert_eq!(float(b"0x10"), Ok(16.0));
        assert_eq!(float(b"-inf"), Ok(f64::NEG_INFINITY));
        assert_eq!(float(b"1e-400"), Ok(0.0));
        assert_eq!(float(b"1e400"), Ok(f64::INFINITY));
        assert!(float(b"").is_err());
        assert!(float(b"1.5x").is_err());
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
        let o = scan_options(&argv, 2, ScanOf::Keys);
        assert_eq!(
            o,
            Ok(ScanOptions {
                pattern: Some(b"a*".as_slice()),
                count: 5,
                type_filter: Some(b"list".as_slice()),
                members_only: false,
            })
        );
        // TYPE belongs to SCAN only; COUNT must be positive; `*` is no filter.
        assert_eq!(scan_options(&argv, 2, ScanOf::Set), Err(error::SYNTAX));
        let zero: Vec<&[u8]> = vec![b"SSCAN", b"k", b"0", b"COUNT", b"0"];
        assert_eq!(scan_options(&zero, 3, ScanOf::Set), Err(error::SYNTAX));
        let star: Vec<&[u8]> = vec![b"SSCAN", b"k", b"0", b"MATCH", b"*"];
        assert_eq!(
            scan_options(&star, 3, ScanOf::Set).map(|o| o.pattern),
            Ok(None)
        );
        let dangling: Vec<&[u8]> = vec![b"SSCAN", b"k", b"0", b"MATCH"];
        assert_eq!(scan_options(&dangling, 3, ScanOf::Set), Err(error::SYNTAX));
    }
}
