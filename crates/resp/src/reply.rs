//! Decoding replies (RESP2 and RESP3), for clients: keel-benchmark and tests.
//!
//! `skip_reply` only finds where a reply ends, without allocating, for the
//! benchmark's hot path; `parse_reply` builds a [`Value`] tree.

use crate::parse_i64;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Integer(i64),
    Bulk(Vec<u8>),
    Null,
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    Set(Vec<Value>),
    Push(Vec<Value>),
    Double(Vec<u8>),
    Boolean(bool),
    BigNumber(Vec<u8>),
    Verbatim(Vec<u8>),
}

/// A malformed reply: the stream cannot be resynchronised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyError;

impl std::fmt::Display for ReplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("malformed RESP reply")
    }
}

impl std::error::Error for ReplyError {}

/// Limit on nesting so a hostile server cannot overflow our stack.
const MAX_DEPTH: usize = 128;

/// A reply's type byte, the text of its first line, and where the rest starts.
type Header<'a> = (u8, &'a [u8], usize);

fn header(buf: &[u8]) -> Result<Option<Header<'_>>, ReplyError> {
    let Some(&tag) = buf.first() else {
        return Ok(None);
    };
    // A byte that starts no reply is malformed at once, rather than after
    // the line it would start has arrived.
    if !b"+-:$*_,#(!=%~>|".contains(&tag) {
        return Err(ReplyError);
    }
    // The line ends at the first `\r` after the type byte.
    let Some(cr) = buf.iter().skip(1).position(|&c| c == b'\r').map(|i| i + 1) else {
        return Ok(None);
    };
    if cr + 1 >= buf.len() {
        return Ok(None);
    }
    if buf[cr + 1] != b'\n' {
        return Err(ReplyError);
    }
    Ok(Some((tag, &buf[1..cr], cr + 2)))
}

fn count(s: &[u8]) -> Result<i64, ReplyError> {
    parse_i64(s).ok_or(ReplyError)
}

/// Length in bytes of the first complete reply in `buf`, or `None` if it is
/// not complete yet.
pub fn skip_reply(buf: &[u8]) -> Result<Option<usize>, ReplyError> {
    skip_at(buf, 0)
}

fn skip_at(buf: &[u8], depth: usize) -> Result<Option<usize>, ReplyError> {
    if depth > MAX_DEPTH {
        return Err(ReplyError);
    }
    let Some((tag, body, mut pos)) = header(buf)? else {
        return Ok(None);
    };
    match tag {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some(pos)),
        b'$' | b'!' | b'=' => {
            let n = count(body)?;
            if n < 0 {
                return Ok(Some(pos));
            }
            let end = pos + n as usize + 2;
            Ok(if buf.len() >= end { Some(end) } else { None })
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = count(body)?;
            if n < 0 {
                return Ok(Some(pos));
            }
            // Saturating: a hostile count must not overflow; the loop
            // runs out of bytes long before.
            let items = if matches!(tag, b'%' | b'|') {
                n.saturating_mul(2)
            } else {
                n
            };
            for _ in 0..items {
                match skip_at(&buf[pos..], depth + 1)? {
                    Some(len) => pos += len,
                    None => return Ok(None),
                }
            }
            if tag == b'|' {
                // An attribute precedes the reply it describes.
                return Ok(skip_at(&buf[pos..], depth + 1)?.map(|len| pos + len));
            }
            Ok(Some(pos))
        }
        _ => Err(ReplyError),
    }
}

/// Parses the first complete reply in `buf`: the value and its length.
pub fn parse_reply(buf: &[u8]) -> Result<Option<(Value, usize)>, ReplyError> {
    parse_at(buf, 0)
}

fn parse_at(buf: &[u8], depth: usize) -> Result<Option<(Value, usize)>, ReplyError> {
    if depth > MAX_DEPTH {
        return Err(ReplyError);
    }
    let Some((tag, body, mut pos)) = header(buf)? else {
        return Ok(None);
    };
    let v = match tag {
        b'+' => Value::Simple(body.to_vec()),
        b'-' => Value::Error(body.to_vec()),
        b':' => Value::Integer(count(body)?),
        b'_' => Value::Null,
        b',' => Value::Double(body.to_vec()),
        b'(' => Value::BigNumber(body.to_vec()),
        b'#' => match body {
            b"t" => Value::Boolean(true),
            b"f" => Value::Boolean(false),
            _ => return Err(ReplyError),
        },
        b'$' | b'!' | b'=' => {
            let n = count(body)?;
            if n < 0 {
                return Ok(Some((Value::Null, pos)));
            }
            let end = pos + n as usize;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            let data = buf[pos..end].to_vec();
            pos = end + 2;
            match tag {
                b'$' => Value::Bulk(data),
                b'!' => Value::Error(data),
                _ => Value::Verbatim(data),
            }
        }
        b'*' | b'~' | b'>' => {
            let n = count(body)?;
            if n < 0 {
                return Ok(Some((Value::Null, pos)));
            }
            let mut items = Vec::with_capacity((n as usize).min(1024));
            for _ in 0..n {
                match parse_at(&buf[pos..], depth + 1)? {
                    Some((v, len)) => {
                        items.push(v);
                        pos += len;
                    }
                    None => return Ok(None),
                }
            }
            match tag {
                b'*' => Value::Array(items),
                b'~' => Value::Set(items),
                _ => Value::Push(items),
            }
        }
        b'%' => {
            let n = count(body)?;
            let mut pairs = Vec::with_capacity((n.max(0) as usize).min(1024));
            for _ in 0..n {
                let Some((k, klen)) = parse_at(&buf[pos..], depth + 1)? else {
                    return Ok(None);
                };
                pos += klen;
                let Some((v, vlen)) = parse_at(&buf[pos..], depth + 1)? else {
                    return Ok(None);
                };
                pos += vlen;
                pairs.push((k, v));
            }
            Value::Map(pairs)
        }
        b'|' => {
            // An attribute is not a reply: it describes the reply that
            // follows, which is the value (as `skip_reply` counts it; the
            // attributes are dropped, as they are for scripts).
            let n = count(body)?;
            if n < 0 {
                return Ok(Some((Value::Null, pos)));
            }
            for _ in 0..n.saturating_mul(2) {
                let Some((_, len)) = parse_at(&buf[pos..], depth + 1)? else {
                    return Ok(None);
                };
                pos += len;
            }
            let Some((v, len)) = parse_at(&buf[pos..], depth + 1)? else {
                return Ok(None);
            };
            pos += len;
            v
        }
        _ => return Err(ReplyError),
    };
    Ok(Some((v, pos)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_skips_all_types() {
        let wire = b"*3\r\n$3\r\nfoo\r\n:5\r\n%1\r\n+a\r\n~2\r\n,1.5\r\n#t\r\n";
        let (v, n) = parse_reply(wire).unwrap().unwrap();
        assert_eq!(n, wire.len());
        assert_eq!(skip_reply(wire).unwrap(), Some(wire.len()));
        assert_eq!(
            v,
            Value::Array(vec![
                Value::Bulk(b"foo".to_vec()),
                Value::Integer(5),
                Value::Map(vec![(
                    Value::Simple(b"a".to_vec()),
                    Value::Set(vec![Value::Double(b"1.5".to_vec()), Value::Boolean(true)])
                )])
            ])
        );
        for cut in 0..wire.len() {
            assert_eq!(parse_reply(&wire[..cut]).unwrap(), None);
            assert_eq!(skip_reply(&wire[..cut]).unwrap(), None);
        }
    }

    #[test]
    fn attribute_goes_with_its_reply() {
        let wire = b"|1\r\n+key\r\n+val\r\n:42\r\n";
        assert_eq!(
            parse_reply(wire).unwrap(),
            Some((Value::Integer(42), wire.len()))
        );
        assert_eq!(skip_reply(wire).unwrap(), Some(wire.len()));
        assert_eq!(parse_reply(&wire[..wire.len() - 1]).unwrap(), None);
    }

    #[test]
    fn empty_line_is_malformed() {
        assert_eq!(parse_reply(b"\r\n"), Err(ReplyError));
        assert_eq!(skip_reply(b"\r\n"), Err(ReplyError));
        assert_eq!(parse_reply(b"*1\r\n\r\n"), Err(ReplyError));
        assert_eq!(skip_reply(b"*1\r\n\r\n"), Err(ReplyError));
    }

    #[test]
    fn huge_map_count_is_incomplete() {
        let wire = b"%9223372036854775807\r\n+a\r\n";
        assert_eq!(parse_reply(wire).unwrap(), None);
        assert_eq!(skip_reply(wire).unwrap(), None);
    }
}
