//! Incremental decoding of client requests: RESP multibulk (`*N\r\n$L\r\n...`)
//! and the inline protocol (`PING\r\n`, telnet style, with quoting).
//!
//! The decoder keeps its progress between calls so a frame split at any byte
//! costs no re-scan of what was already parsed (a million-argument MSET
//! arriving in small reads stays linear), and arguments are ranges into the
//! caller's buffer: no copy of bulk payloads.

use crate::{parse_i64, DEFAULT_MAX_BULK_LEN, INLINE_MAX_SIZE};

/// A request the server must answer with `-ERR Protocol error: ...` and then
/// close the connection, as Redis does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    InvalidMultibulkLength,
    InvalidBulkLength,
    ExpectedDollar(u8),
    TooBigMultibulkCount,
    TooBigBulkCount,
    TooBigInline,
    UnbalancedQuotes,
    /// More than [`UNAUTH_MAX_MULTIBULK`] arguments from a client that has
    /// not authenticated yet.
    UnauthenticatedMultibulkLength,
    /// A bulk longer than [`UNAUTH_MAX_BULK`] from a client that has not
    /// authenticated yet.
    UnauthenticatedBulkLength,
}

/// The most arguments a client that must still authenticate may send in
/// one request (Redis's processMultibulkBuffer): a stranger cannot make
/// the server allocate for a large request before it proved who it is.
pub const UNAUTH_MAX_MULTIBULK: i64 = 10;
/// The longest bulk string such a client may send.
pub const UNAUTH_MAX_BULK: usize = 16384;

impl DecodeError {
    /// The error line Redis sends, without the leading `-` and trailing CRLF.
    pub fn message(&self) -> String {
        match self {
            DecodeError::InvalidMultibulkLength => {
                "ERR Protocol error: invalid multibulk length".into()
            }
            DecodeError::InvalidBulkLength => "ERR Protocol error: invalid bulk length".into(),
            DecodeError::ExpectedDollar(c) => {
                format!("ERR Protocol error: expected '$', got '{}'", *c as char)
            }
            DecodeError::TooBigMultibulkCount => {
                "ERR Protocol error: too big mbulk count string".into()
            }
            DecodeError::TooBigBulkCount => "ERR Protocol error: too big bulk count string".into(),
            DecodeError::TooBigInline => "ERR Protocol error: too big inline request".into(),
            DecodeError::UnbalancedQuotes => {
                "ERR Protocol error: unbalanced quotes in request".into()
            }
            DecodeError::UnauthenticatedMultibulkLength => {
                "ERR Protocol error: unauthenticated multibulk length".into()
            }
            DecodeError::UnauthenticatedBulkLength => {
                "ERR Protocol error: unauthenticated bulk length".into()
            }
        }
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for DecodeError {}

/// Where the arguments of the last decoded request live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Ranges into the caller's buffer (multibulk).
    Buffer,
    /// Ranges into the decoder's own unescaped copy (inline).
    Inline,
}

/// Decodes one request at a time from the front of a buffer.
///
/// Call [`RequestDecoder::decode`] with the unconsumed bytes (starting at the
/// first byte not yet consumed). `Ok(Some(n))` means a full request of `n`
/// bytes was decoded; its arguments are read with [`RequestDecoder::arg`]
/// against the same buffer, and may be zero (an empty line or `*0`), which
/// the caller skips. `Ok(None)` means more bytes are needed: call again with
/// the same start and more data appended.
#[derive(Debug)]
pub struct RequestDecoder {
    max_bulk_len: usize,
    /// Arguments still to read in the current multibulk; 0 between frames.
    pending: usize,
    /// Parse position relative to the frame start.
    pos: usize,
    args: Vec<(usize, usize)>,
    source: Source,
    inline: Vec<u8>,
    /// Total bytes the frame needs once the current bulk header is known.
    want: usize,
    /// The client must still authenticate: Redis's tighter limits apply
    /// ([`UNAUTH_MAX_MULTIBULK`], [`UNAUTH_MAX_BULK`]).
    unauthenticated: bool,
}

impl Default for RequestDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_BULK_LEN)
    }
}

/// Position of the `\r` ending the line that starts at `from`, if the byte
/// after it has arrived too (Redis looks for `\r` and skips two bytes).
fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let rel = buf.get(from..)?.iter().position(|&c| c == b'\r')?;
    let cr = from + rel;
    if cr + 1 < buf.len() {
        Some(cr)
    } else {
        None
    }
}

impl RequestDecoder {
    pub fn new(max_bulk_len: usize) -> Self {
        RequestDecoder {
            max_bulk_len,
            pending: 0,
            pos: 0,
            args: Vec::new(),
            source: Source::Buffer,
            inline: Vec::new(),
            want: 0,
            unauthenticated: false,
        }
    }

    /// Whether the client must still authenticate (Redis's authRequired):
    /// set before each `decode`, so a request after a successful AUTH in
    /// the same read gets the ordinary limits.
    pub fn set_unauthenticated(&mut self, yes: bool) {
        self.unauthenticated = yes;
    }

    /// Bytes of the frame in progress already parsed into arguments (0
    /// between frames): what Redis no longer counts in the query buffer,
    /// having moved them to the command's arguments.
    pub fn parsed_len(&self) -> usize {
        self.pos
    }

    pub fn set_max_bulk_len(&mut self, n: usize) {
        self.max_bulk_len = n;
    }

    /// Number of arguments of the last decoded request.
    pub fn argc(&self) -> usize {
        self.args.len()
    }

    /// Argument `i` of the last decoded request; `buf` is the buffer passed
    /// to the `decode` call that returned it.
    #[inline]
    pub fn arg<'a>(&'a self, buf: &'a [u8], i: usize) -> &'a [u8] {
        let (start, len) = self.args[i];
        match self.source {
            Source::Buffer => &buf[start..start + len],
            Source::Inline => &self.inline[start..start + len],
        }
    }

    /// Bytes the frame in progress needs in total, when a large bulk header
    /// has been read; lets the caller reserve once instead of growing the
    /// read buffer step by step.
    pub fn bytes_wanted(&self) -> usize {
        self.want
    }

    /// True while a multibulk frame is partly parsed.
    pub fn in_frame(&self) -> bool {
        self.pending > 0
    }

    pub fn decode(&mut self, buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        if self.pending == 0 {
            let Some(&first) = buf.first() else {
                return Ok(None);
            };
            if first != b'*' {
                return self.decode_inline(buf);
            }
            let Some(cr) = line_end(buf, 1) else {
                if buf.len() > INLINE_MAX_SIZE {
                    return Err(DecodeError::TooBigMultibulkCount);
                }
                return Ok(None);
            };
            let count = match parse_i64(&buf[1..cr]) {
                Some(n) if n <= i32::MAX as i64 => n,
                _ => return Err(DecodeError::InvalidMultibulkLength),
            };
            if count > UNAUTH_MAX_MULTIBULK && self.unauthenticated {
                return Err(DecodeError::UnauthenticatedMultibulkLength);
            }
            self.args.clear();
            self.source = Source::Buffer;
            if count <= 0 {
                return Ok(Some(cr + 2));
            }
            // A hostile `*2147483647` must not allocate up front.
            self.args.reserve((count as usize).min(1024));
            self.pending = count as usize;
            self.pos = cr + 2;
        }
        while self.pending > 0 {
            let pos = self.pos;
            let Some(&tag) = buf.get(pos) else {
                return Ok(None);
            };
            if tag != b'$' {
                self.reset();
                return Err(DecodeError::ExpectedDollar(tag));
            }
            let Some(cr) = line_end(buf, pos + 1) else {
                if buf.len() - pos > INLINE_MAX_SIZE {
                    self.reset();
                    return Err(DecodeError::TooBigBulkCount);
                }
                return Ok(None);
            };
            let len = match parse_i64(&buf[pos + 1..cr]) {
                Some(n) if n >= 0 && (n as u64) <= self.max_bulk_len as u64 => n as usize,
                _ => {
                    self.reset();
                    return Err(DecodeError::InvalidBulkLength);
                }
            };
            if len > UNAUTH_MAX_BULK && self.unauthenticated {
                self.reset();
                return Err(DecodeError::UnauthenticatedBulkLength);
            }
            let data = cr + 2;
            let end = data + len + 2;
            if buf.len() < end {
                self.want = end;
                return Ok(None);
            }
            self.want = 0;
            self.args.push((data, len));
            self.pos = end;
            self.pending -= 1;
        }
        let consumed = self.pos;
        self.pos = 0;
        Ok(Some(consumed))
    }

    fn reset(&mut self) {
        self.pending = 0;
        self.pos = 0;
        self.want = 0;
        self.args.clear();
    }

    fn decode_inline(&mut self, buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        // Redis finds the end of an inline request with strchr, which
        // stops at a NUL byte: a request with one before its newline never
        // ends, and waits until it is too big (so does everything after).
        let end = buf.iter().position(|&c| c == b'\n' || c == 0);
        let Some(nl) = end.filter(|&i| buf[i] == b'\n') else {
            if buf.len() > INLINE_MAX_SIZE {
                return Err(DecodeError::TooBigInline);
            }
            return Ok(None);
        };
        let mut line = &buf[..nl];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        self.args.clear();
        self.inline.clear();
        self.source = Source::Inline;
        split_args(line, &mut self.inline, &mut self.args)?;
        Ok(Some(nl + 1))
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c)
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Splits an inline line into arguments with the quoting rules of Redis's
/// `sdssplitargs`: double quotes with `\xHH`, `\n`, `\r`, `\t`, `\b`, `\a`
/// escapes; single quotes with only `\'`; a closing quote must be followed
/// by a space or the end of the line.
pub fn split_args(
    line: &[u8],
    out: &mut Vec<u8>,
    args: &mut Vec<(usize, usize)>,
) -> Result<(), DecodeError> {
    let mut p = 0;
    let n = line.len();
    loop {
        while p < n && is_space(line[p]) {
            p += 1;
        }
        if p >= n {
            return Ok(());
        }
        let start = out.len();
        let (mut inq, mut insq, mut done) = (false, false, false);
        while !done {
            if inq {
                if p >= n {
                    return Err(DecodeError::UnbalancedQuotes);
                }
                let c = line[p];
                if c == b'\\' && p + 3 < n && line[p + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex_val(line[p + 2]), hex_val(line[p + 3])) {
                        out.push(h * 16 + l);
                        p += 4;
                        continue;
                    }
                }
                if c == b'\\' && p + 1 < n {
                    p += 1;
                    out.push(match line[p] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if p + 1 < n && !is_space(line[p + 1]) {
                        return Err(DecodeError::UnbalancedQuotes);
                    }
                    done = true;
                } else {
                    out.push(c);
                }
            } else if insq {
                if p >= n {
                    return Err(DecodeError::UnbalancedQuotes);
                }
                let c = line[p];
                if c == b'\\' && p + 1 < n && line[p + 1] == b'\'' {
                    p += 1;
                    out.push(b'\'');
                } else if c == b'\'' {
                    if p + 1 < n && !is_space(line[p + 1]) {
                        return Err(DecodeError::UnbalancedQuotes);
                    }
                    done = true;
                } else {
                    out.push(c);
                }
            } else if p >= n {
                done = true;
            } else {
                match line[p] {
                    c if is_space(c) => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => out.push(c),
                }
            }
            if p < n {
                p += 1;
            }
        }
        args.push((start, out.len() - start));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(dec: &mut RequestDecoder, buf: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, DecodeError> {
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(n) = dec.decode(&buf[start..])? {
            let frame = &buf[start..start + n];
            let argv = (0..dec.argc())
                .map(|i| dec.arg(frame, i).to_vec())
                .collect::<Vec<_>>();
            if !argv.is_empty() {
                out.push(argv);
            }
            start += n;
        }
        Ok(out)
    }

    fn encode(argv: &[Vec<u8>]) -> Vec<u8> {
        let mut v = format!("*{}\r\n", argv.len()).into_bytes();
        for a in argv {
            v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            v.extend_from_slice(a);
            v.extend_from_slice(b"\r\n");
        }
        v
    }

    #[test]
    fn multibulk_and_inline() {
        let mut d = RequestDecoder::default();
        let got = decode_all(&mut d, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\n*0\r\n").unwrap();
        assert_eq!(
            got,
            vec![vec![b"GET".to_vec(), b"k".to_vec()], vec![b"PING".to_vec()]]
        );
    }

    #[test]
    fn inline_quoting() {
        let mut d = RequestDecoder::default();
        let got = decode_all(&mut d, b"set \"a b\" 'c\\'d' \"\\x41\\n\"\r\n").unwrap();
        assert_eq!(
            got,
            vec![vec![
                b"set".to_vec(),
                b"a b".to_vec(),
                b"c'd".to_vec(),
                b"A\n".to_vec()
            ]]
        );
        let mut d = RequestDecoder::default();
        assert_eq!(
            decode_all(&mut d, b"set \"abc\r\n"),
            Err(DecodeError::UnbalancedQuotes)
        );
        let mut d = RequestDecoder::default();
        assert_eq!(
            decode_all(&mut d, b"set \"abc\"x\r\n"),
            Err(DecodeError::UnbalancedQuotes)
        );
    }

    #[test]
    fn protocol_errors() {
        let cases: &[(&[u8], DecodeError)] = &[
            (b"*abc\r\n", DecodeError::InvalidMultibulkLength),
            (b"*3000000000\r\n", DecodeError::InvalidMultibulkLength),
            (b"*1\r\n$-2\r\n", DecodeError::InvalidBulkLength),
            (b"*1\r\n$-1\r\n", DecodeError::InvalidBulkLength),
            (b"*1\r\n$600000000\r\n", DecodeError::InvalidBulkLength),
            (b"*1\r\nfoo\r\n", DecodeError::ExpectedDollar(b'f')),
        ];
        for (input, want) in cases {
            let mut d = RequestDecoder::default();
            assert_eq!(
                decode_all(&mut d, input),
                Err(*want),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
        let mut d = RequestDecoder::default();
        let big = vec![b'a'; INLINE_MAX_SIZE + 1];
        assert_eq!(d.decode(&big), Err(DecodeError::TooBigInline));
        let mut big = b"*".to_vec();
        big.extend(vec![b'1'; INLINE_MAX_SIZE + 1]);
        assert_eq!(
            RequestDecoder::default().decode(&big),
            Err(DecodeError::TooBigMultibulkCount)
        );
    }

    #[test]
    fn inline_nul_never_ends() {
        let mut d = RequestDecoder::default();
        assert_eq!(d.decode(b"ECHO a\x00b\r\nPING\r\n"), Ok(None));
        let mut big = b"\x00\r\n".to_vec();
        big.extend(vec![b'a'; INLINE_MAX_SIZE]);
        assert_eq!(d.decode(&big), Err(DecodeError::TooBigInline));
    }

    #[test]
    fn unauthenticated_limits() {
        let mut d = RequestDecoder::default();
        d.set_unauthenticated(true);
        assert_eq!(
            d.decode(b"*11\r\n"),
            Err(DecodeError::UnauthenticatedMultibulkLength)
        );
        let mut d = RequestDecoder::default();
        d.set_unauthenticated(true);
        assert_eq!(d.decode(b"*10\r\n$16384\r\n"), Ok(None));
        let mut d = RequestDecoder::default();
        d.set_unauthenticated(true);
        assert_eq!(
            d.decode(b"*1\r\n$16385\r\n"),
            Err(DecodeError::UnauthenticatedBulkLength)
        );
        // The general checks come first, as in Redis.
        let mut d = RequestDecoder::default();
        d.set_unauthenticated(true);
        assert_eq!(
            d.decode(b"*1\r\n$-1\r\n"),
            Err(DecodeError::InvalidBulkLength)
        );
        d.set_unauthenticated(false);
        assert_eq!(d.decode(b"*11\r\n"), Ok(None));
    }

    #[test]
    fn huge_count_does_not_allocate() {
        let mut d = RequestDecoder::default();
        assert_eq!(d.decode(b"*2147483647\r\n$1\r\na\r\n"), Ok(None));
        assert!(d.args.capacity() <= 1024);
    }

    proptest! {
        #[test]
        fn every_split_point(argvs in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..5), 1..4)) {
            let mut wire = Vec::new();
            for a in &argvs { wire.extend(encode(a)); }
            for split in 0..=wire.len() {
                let mut d = RequestDecoder::default();
                let mut got = Vec::new();
                let mut start = 0;
                // Feed the first `split` bytes, then everything.
                for avail in [split, wire.len()] {
                    while let Some(n) = d.decode(&wire[start..avail]).unwrap() {
                        let frame = &wire[start..start + n];
                        got.push((0..d.argc()).map(|i| d.arg(frame, i).to_vec()).collect::<Vec<_>>());
                        start += n;
                    }
                }
                prop_assert_eq!(&got, &argvs);
            }
        }

        #[test]
        fn arbitrary_input_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut d = RequestDecoder::default();
            let _ = decode_all(&mut d, &data);
        }
    }
}
