//! Reply encoding: appends RESP2/RESP3 frames to a byte buffer.
//!
//! Plain functions over `Vec<u8>` so the server can build a whole pipeline's
//! replies in one buffer and write it with one syscall. Functions that differ
//! between protocol versions take the version (2 or 3).

#[inline]
fn line(out: &mut Vec<u8>, tag: u8, n: i64) {
    out.push(tag);
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `+OK`-style status line. `s` must not contain CR or LF.
#[inline]
pub fn simple(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'+');
    out.extend_from_slice(s);
    out.extend_from_slice(b"\r\n");
}

/// Error line; `msg` includes the code (`ERR ...`). CR/LF are replaced by
/// spaces, as Redis does, so an error can never break framing.
pub fn error(out: &mut Vec<u8>, msg: &[u8]) {
    out.push(b'-');
    out.extend(
        msg.iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
    );
    out.extend_from_slice(b"\r\n");
}

#[inline]
pub fn integer(out: &mut Vec<u8>, n: i64) {
    line(out, b':', n);
}

/// A bulk string's length line alone (its bytes and `\r\n` follow).
#[inline]
pub fn bulk_header(out: &mut Vec<u8>, len: usize) {
    line(out, b'$', len as i64);
}

#[inline]
pub fn bulk(out: &mut Vec<u8>, s: &[u8]) {
    line(out, b'$', s.len() as i64);
    out.extend_from_slice(s);
    out.extend_from_slice(b"\r\n");
}

/// Null bulk string: `$-1` in RESP2, `_` in RESP3.
#[inline]
pub fn null(out: &mut Vec<u8>, proto: u8) {
    out.extend_from_slice(if proto >= 3 { b"_\r\n" } else { b"$-1\r\n" });
}

/// Null array: `*-1` in RESP2, `_` in RESP3.
#[inline]
pub fn null_array(out: &mut Vec<u8>, proto: u8) {
    out.extend_from_slice(if proto >= 3 { b"_\r\n" } else { b"*-1\r\n" });
}

#[inline]
pub fn array(out: &mut Vec<u8>, n: usize) {
    line(out, b'*', n as i64);
}

/// Map of `n` pairs: `%n` in RESP3, a flat array of `2n` in RESP2.
#[inline]
pub fn map(out: &mut Vec<u8>, n: usize, proto: u8) {
    if proto >= 3 {
        line(out, b'%', n as i64)
    } else {
        line(out, b'*', 2 * n as i64)
    }
}

/// Set: `~n` in RESP3, an array in RESP2.
#[inline]
pub fn set(out: &mut Vec<u8>, n: usize, proto: u8) {
    line(out, if proto >= 3 { b'~' } else { b'*' }, n as i64)
}

/// Push (out-of-band) frame: `>n` in RESP3, an array in RESP2.
#[inline]
pub fn push(out: &mut Vec<u8>, n: usize, proto: u8) {
    line(out, if proto >= 3 { b'>' } else { b'*' }, n as i64)
}

/// Boolean: `#t`/`#f` in RESP3, `:1`/`:0` in RESP2.
#[inline]
pub fn boolean(out: &mut Vec<u8>, b: bool, proto: u8) {
    if proto >= 3 {
        out.extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
    } else {
        integer(out, b as i64);
    }
}

/// Double: `,` in RESP3, a bulk string in RESP2. `text` is the already
/// formatted number (Redis's formatting rules differ per command).
pub fn double_text(out: &mut Vec<u8>, text: &[u8], proto: u8) {
    if proto >= 3 {
        out.push(b',');
        out.extend_from_slice(text);
        out.extend_from_slice(b"\r\n");
    } else {
        bulk(out, text);
    }
}

/// Verbatim string (`=len\r\ntxt:...`) in RESP3, bulk string in RESP2.
pub fn verbatim(out: &mut Vec<u8>, format: &[u8; 3], s: &[u8], proto: u8) {
    if proto >= 3 {
        line(out, b'=', (s.len() + 4) as i64);
        out.extend_from_slice(format);
        out.push(b':');
        out.extend_from_slice(s);
        out.extend_from_slice(b"\r\n");
    } else {
        bulk(out, s);
    }
}

/// A request as a RESP multibulk array (used by clients and the log).
pub fn command<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    array(out, argv.len());
    for a in argv {
        bulk(out, a.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_specific_shapes() {
        let mut o = Vec::new();
        null(&mut o, 2);
        null(&mut o, 3);
        map(&mut o, 2, 2);
        map(&mut o, 2, 3);
        boolean(&mut o, true, 2);
        boolean(&mut o, true, 3);
        double_text(&mut o, b"1.5", 2);
        double_text(&mut o, b"1.5", 3);
        error(&mut o, b"ERR a\r\nb");
        assert_eq!(
            o,
            b"$-1\r\n_\r\n*4\r\n%2\r\n:1\r\n#t\r\n$3\r\n1.5\r\n,1.5\r\n-ERR a  b\r\n".to_vec()
        );
    }
}
