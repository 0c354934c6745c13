//! RESP2/RESP3 and inline protocol codec.
//!
//! Owns the wire format only: decoding client requests (multibulk and
//! inline), encoding replies, and decoding replies (for clients such as
//! keel-benchmark), and the Redis Cluster key slot (`slot`), which clients
//! route by. It must not depend on tokio or on any server code, so the
//! server and the benchmark share one implementation of the protocol.

pub mod encode;
pub mod reply;
pub mod request;
pub mod slot;

pub use reply::{parse_reply, skip_reply, Value};
pub use request::{DecodeError, RequestDecoder};

/// Longest inline request, or `*`/`$` header line, Redis accepts before
/// answering with a protocol error (PROTO_INLINE_MAX_SIZE).
pub const INLINE_MAX_SIZE: usize = 64 * 1024;

/// Default `proto-max-bulk-len`: 512 MB.
pub const DEFAULT_MAX_BULK_LEN: usize = 512 * 1024 * 1024;

/// Parses a decimal integer the way Redis's `string2ll` does: optional
/// leading `-`, no `+`, no spaces, no leading zeros (except "0"), must fit
/// in i64.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_i64;

    #[test]
    fn parse_i64_matches_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"01"), None);
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b" 1"), None);
        assert_eq!(parse_i64(b""), None);
        assert_eq!(parse_i64(b"-"), None);
    }
}
