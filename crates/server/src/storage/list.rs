//! A list: a deque of compact nodes, as Redis's quicklist of listpacks.
//! Pure data structure: no RESP, no I/O.
//!
//! Why compact nodes rather than a `VecDeque<Vec<u8>>`: an element of a
//! `VecDeque<Vec<u8>>` costs a 24-byte slot plus its own heap allocation
//! (at least 8 bytes, rounded up to the allocator's size class) and one
//! `malloc` per push; in a node it costs its bytes plus 2 (a 1-byte header
//! and a 1-byte back-length for elements under 128 bytes), integers are
//! kept in binary (`"12345"` takes 4 bytes), and a push allocates nothing
//! until a node (4-64 KB, `list-max-listpack-size`) fills up. Reads stay
//! fast: LRANGE walks contiguous memory, LINDEX skips whole nodes by their
//! element count.
//!
//! Each node is a gap buffer: its entries sit in `buf[head..tail]` with
//! free room on either side, so a push at either end of the list is O(1)
//! amortised (Redis's listpack memmoves the whole node on every head
//! insert). An entry is `header payload backlen`: the header gives the
//! payload's kind and length (see [`codec`]), the back-length (the size of
//! header + payload, 7 bits per byte, read from the right) lets iteration
//! and pops run from the tail.
//!
//! Middle edits (LSET, LINSERT, LREM, LTRIM) rebuild only the nodes they
//! touch; a node that outgrows its limit is split, small neighbours are
//! merged.

use std::collections::VecDeque;

/// An element as stored. Strings that are the canonical decimal form of an
/// i64 are always stored as `Int`, so two elements are equal exactly when
/// their variants and contents are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem<'a> {
    Str(&'a [u8]),
    Int(i64),
}

impl<'a> Elem<'a> {
    /// Calls `f` with the element's bytes, formatting integers on the
    /// stack.
    #[inline]
    pub fn with_bytes<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Elem::Str(s) => f(s),
            Elem::Int(n) => f(itoa::Buffer::new().format(n).as_bytes()),
        }
    }

    pub fn to_vec(self) -> Vec<u8> {
        self.with_bytes(|b| b.to_vec())
    }

    /// Length of the string form.
    pub fn len(self) -> usize {
        match self {
            Elem::Str(s) => s.len(),
            Elem::Int(n) => itoa::Buffer::new().format(n).len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// A value searched for (LREM, LPOS, LINSERT's pivot, a hash field),
/// classified once so each comparison is an integer compare or a memcmp.
#[derive(Clone, Copy, Debug)]
pub struct Needle<'a> {
    bytes: &'a [u8],
    int: Option<i64>,
}

impl<'a> Needle<'a> {
    pub fn new(bytes: &'a [u8]) -> Needle<'a> {
        Needle {
            bytes,
            int: codec::as_int(bytes),
        }
    }

    #[inline]
    pub fn matches(&self, e: Elem) -> bool {
        match (e, self.int) {
            (Elem::Int(n), Some(m)) => n == m,
            (Elem::Str(s), None) => s == self.bytes,
            _ => false,
        }
    }
}

fn clamp_fill(fill: i64) -> i32 {
    fill.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

/// Redis's quicklistNodeLimit: the (bytes, entries) one node or listpack
/// may hold under `list-max-listpack-size` `fill`; `usize::MAX` where
/// that limit does not apply.
fn listpack_limits(fill: i64) -> (usize, usize) {
    if fill < 0 {
        let shift = ((-fill) - 1).min(4) as u32;
        (4096 << shift, usize::MAX)
    } else {
        (usize::MAX, fill.max(1) as usize)
    }
}

/// The element encoding shared by list nodes and hash listpacks: a header
/// byte (plus length bytes) and the payload.
///
/// | header | meaning |
/// |---|---|
/// | `0x00..=0x7F` | string of 0..127 bytes |
/// | `0x80..=0xBF` + 1 byte | string of up to 16383 bytes (14-bit length) |
/// | `0xC0..=0xEF` | integer 0..47, no payload |
/// | `0xF0` + u32 | string, 32-bit length |
/// | `0xF1` + u64 | string, 64-bit length |
/// | `0xF2`..`0xF6` | integer as i8, i16, i24, i32, i64 (little endian) |
///
/// A string is stored as an integer exactly when it is the canonical
/// decimal form of an i64 (as `resp::parse_i64` accepts), which is always
/// shorter than the string form.
pub mod codec {
    use super::Elem;

    const SMALL_INT: u8 = 0xC0;
    const SMALL_INT_MAX: i64 = 47;
    const STR32: u8 = 0xF0;
    const STR64: u8 = 0xF1;
    const I8: u8 = 0xF2;
    const I16: u8 = 0xF3;
    const I24: u8 = 0xF4;
    const I32: u8 = 0xF5;
    const I64: u8 = 0xF6;

    /// `bytes` as an integer if it is an i64's canonical decimal form.
    #[inline]
    pub fn as_int(bytes: &[u8]) -> Option<i64> {
        match bytes.first() {
            Some(c) if c.is_ascii_digit() || *c == b'-' => resp::parse_i64(bytes),
            _ => None,
        }
    }

    /// A value ready to be written: its encoded size is known first, so
    /// the caller can make room.
    #[derive(Clone, Copy, Debug)]
    pub struct Encoded<'a> {
        kind: Kind<'a>,
        /// Header + payload bytes.
        pub size: usize,
    }

    #[derive(Clone, Copy, Debug)]
    enum Kind<'a> {
        Str(&'a [u8]),
        Int(i64),
    }

    #[inline]
    fn str_header_len(len: usize) -> usize {
        if len < 128 {
            1
        } else if len < 16384 {
            2
        } else if len <= u32::MAX as usize {
            5
        } else {
            9
        }
    }

    #[inline]
    fn int_size(n: i64) -> usize {
        if (0..=SMALL_INT_MAX).contains(&n) {
            1
        } else if n >= i8::MIN as i64 && n <= i8::MAX as i64 {
            2
        } else if n >= i16::MIN as i64 && n <= i16::MAX as i64 {
            3
        } else if n >= -(1 << 23) && n < (1 << 23) {
            4
        } else if n >= i32::MIN as i64 && n <= i32::MAX as i64 {
            5
        } else {
            9
        }
    }

    /// Classifies `v` (integer or string) and sizes its encoding.
    #[inline]
    pub fn encode(v: &[u8]) -> Encoded<'_> {
        match as_int(v) {
            Some(n) => Encoded {
                kind: Kind::Int(n),
                size: int_size(n),
            },
            None => Encoded {
                kind: Kind::Str(v),
                size: str_header_len(v.len()) + v.len(),
            },
        }
    }

    /// Encodes an integer.
    pub fn encode_int(n: i64) -> Encoded<'static> {
        Encoded {
            kind: Kind::Int(n),
            size: int_size(n),
        }
    }

    impl Encoded<'_> {
        /// Writes the encoding into `dst`, which is exactly `self.size`
        /// bytes long.
        #[inline]
        pub fn write(&self, dst: &mut [u8]) {
            let (head, h) = self.header();
            dst[..h].copy_from_slice(&head[..h]);
            if let Kind::Str(s) = self.kind {
                dst[h..h + s.len()].copy_from_slice(s);
            }
        }

        /// Appends the encoding to `out` (never writing a byte twice: a
        /// new node for a large element is filled by this alone).
        #[inline]
        pub fn append(&self, out: &mut Vec<u8>) {
            let (head, h) = self.header();
            out.extend_from_slice(&head[..h]);
            if let Kind::Str(s) = self.kind {
                out.extend_from_slice(s);
            }
        }

        /// The encoding's header (for an integer, the whole encoding) and
        /// its length.
        #[inline]
        fn header(&self) -> ([u8; 9], usize) {
            let mut dst = [0u8; 9];
            let h = match self.kind {
                Kind::Str(s) => {
                    let len = s.len();
                    if len < 128 {
                        dst[0] = len as u8;
                        1
                    } else if len < 16384 {
                        dst[0] = 0x80 | (len >> 8) as u8;
                        dst[1] = len as u8;
                        2
                    } else if len <= u32::MAX as usize {
                        dst[0] = STR32;
                        dst[1..5].copy_from_slice(&(len as u32).to_le_bytes());
                        5
                    } else {
                        dst[0] = STR64;
                        dst[1..9].copy_from_slice(&(len as u64).to_le_bytes());
                        9
                    }
                }
                Kind::Int(n) => {
                    let b = n.to_le_bytes();
                    match self.size {
                        1 => dst[0] = SMALL_INT + n as u8,
                        2 => {
                            dst[0] = I8;
                            dst[1] = b[0];
                        }
                        3 => {
                            dst[0] = I16;
                            dst[1..3].copy_from_slice(&b[..2]);
                        }
                        4 => {
                            dst[0] = I24;
                            dst[1..4].copy_from_slice(&b[..3]);
                        }
                        5 => {
                            dst[0] = I32;
                            dst[1..5].copy_from_slice(&b[..4]);
                        }
                        _ => {
                            dst[0] = I64;
                            dst[1..9].copy_from_slice(&b);
                        }
                    }
                    self.size
                }
            };
            (dst, h)
        }
    }

    #[inline]
    fn le(b: &[u8]) -> u64 {
        let mut x = [0u8; 8];
        x[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(x)
    }

    /// Sign-extends the low `bytes * 8` bits of `v`.
    #[inline]
    fn sext(v: u64, bytes: usize) -> i64 {
        let shift = 64 - bytes * 8;
        ((v << shift) as i64) >> shift
    }

    /// Decodes the entry at `buf[pos..]`: the element and the size of
    /// header + payload.
    #[inline]
    pub fn decode(buf: &[u8], pos: usize) -> (Elem<'_>, usize) {
        let h = buf[pos];
        match h {
            0..=0x7F => {
                let len = h as usize;
                (Elem::Str(&buf[pos + 1..pos + 1 + len]), 1 + len)
            }
            0x80..=0xBF => {
                let len = ((h as usize & 0x3F) << 8) | buf[pos + 1] as usize;
                (Elem::Str(&buf[pos + 2..pos + 2 + len]), 2 + len)
            }
            0xC0..=0xEF => (Elem::Int((h - SMALL_INT) as i64), 1),
            STR32 => {
                let len = le(&buf[pos + 1..pos + 5]) as usize;
                (Elem::Str(&buf[pos + 5..pos + 5 + len]), 5 + len)
            }
            STR64 => {
                let len = le(&buf[pos + 1..pos + 9]) as usize;
                (Elem::Str(&buf[pos + 9..pos + 9 + len]), 9 + len)
            }
            I8 | I16 | I24 | I32 => {
                // 1, 2, 3 or 4 payload bytes.
                let bytes = (h - I8 + 1) as usize;
                let v = sext(le(&buf[pos + 1..pos + 1 + bytes]), bytes);
                (Elem::Int(v), 1 + bytes)
            }
            _ => (Elem::Int(le(&buf[pos + 1..pos + 9]) as i64), 9),
        }
    }

    /// Size of header + payload of the entry at `buf[pos..]`.
    #[inline]
    pub fn entry_size(buf: &[u8], pos: usize) -> usize {
        let h = buf[pos];
        match h {
            0..=0x7F => 1 + h as usize,
            0x80..=0xBF => 2 + (((h as usize & 0x3F) << 8) | buf[pos + 1] as usize),
            0xC0..=0xEF => 1,
            STR32 => 5 + le(&buf[pos + 1..pos + 5]) as usize,
            STR64 => 9 + le(&buf[pos + 1..pos + 9]) as usize,
            I8 => 2,
            I16 => 3,
            I24 => 4,
            I32 => 5,
            _ => 9,
        }
    }

    /// Bytes of the back-length of an entry of `n` bytes.
    #[inline]
    pub fn backlen_size(n: usize) -> usize {
        let mut size = 1;
        let mut n = n >> 7;
        while n > 0 {
            size += 1;
            n >>= 7;
        }
        size
    }

    /// Writes the back-length `n` into `dst` (exactly `backlen_size(n)`
    /// bytes): read from the right, 7 bits per byte, the high bit meaning
    /// "more bytes to the left".
    #[inline]
    pub fn write_backlen(dst: &mut [u8], n: usize) {
        let mut i = dst.len();
        let mut n = n;
        loop {
            i -= 1;
            let more = if n >> 7 > 0 { 0x80 } else { 0 };
            dst[i] = (n & 0x7F) as u8 | more;
            n >>= 7;
            if more == 0 {
                break;
            }
        }
    }

    /// Reads the back-length ending at `buf[end]`: (entry size, back-length
    /// size).
    #[inline]
    pub fn read_backlen(buf: &[u8], end: usize) -> (usize, usize) {
        let mut n = 0usize;
        let mut shift = 0;
        let mut i = end;
        loop {
            i -= 1;
            let b = buf[i];
            n |= ((b & 0x7F) as usize) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        (n, end - i)
    }
}

use codec::Encoded;

/// Byte limit of a node when `list-max-listpack-size` counts entries
/// (Redis's SIZE_SAFETY_LIMIT).
const SIZE_SAFETY_LIMIT: usize = 8192;
/// Smallest node buffer.
const MIN_NODE_BYTES: usize = 16;

/// The allocator size class (jemalloc's: 16-byte steps up to 128, then
/// four classes per doubling) that holds `n` bytes, so a node's capacity
/// is all of the memory it really takes.
fn size_class(n: usize) -> usize {
    if n <= 128 {
        return n.next_multiple_of(16).max(16);
    }
    let step = 1usize << ((usize::BITS - 1 - (n - 1).leading_zeros()) - 2);
    n.next_multiple_of(step)
}

/// One node: entries in `buf[head..tail]`.
#[derive(Clone)]
struct Node {
    buf: Box<[u8]>,
    head: usize,
    tail: usize,
    count: u32,
}

/// Size of a whole entry (header, payload, back-length) for `size` bytes of
/// header + payload.
#[inline]
fn entry_total(size: usize) -> usize {
    size + codec::backlen_size(size)
}

impl Node {
    /// A node of `cap` bytes holding the one entry `e`, at the end of the
    /// buffer (the room is in front, for pushes to the front) or at its
    /// start.
    ///
    /// Built by appending, never through a zeroed allocation: jemalloc
    /// zeroes a recycled large extent with `madvise(MADV_DONTNEED)`, which
    /// unmaps its pages (a TLB shoot-down on every core) only for the
    /// write that follows to fault them back in. LPUSH of 18 KB values, a
    /// node each, spent 2% of its time in that unmapping and ran at 0.71x
    /// Redis's rate.
    fn with_entry(e: &codec::Encoded, cap: usize, at_end: bool) -> Node {
        let total = entry_total(e.size);
        let mut buf = Vec::with_capacity(cap.max(total));
        if at_end {
            buf.resize(cap.saturating_sub(total), 0);
        }
        let head = buf.len();
        e.append(&mut buf);
        let mut backlen = [0u8; 10];
        let bl = codec::backlen_size(e.size);
        codec::write_backlen(&mut backlen[..bl], e.size);
        buf.extend_from_slice(&backlen[..bl]);
        let tail = buf.len();
        buf.resize(cap.max(total), 0);
        Node {
            buf: buf.into_boxed_slice(),
            head,
            tail,
            count: 1,
        }
    }

    /// A node holding exactly `data` (whole entries), with no free room.
    fn from_data(data: &[u8], count: u32) -> Node {
        Node {
            buf: data.into(),
            head: 0,
            tail: data.len(),
            count,
        }
    }

    #[inline]
    fn used(&self) -> usize {
        self.tail - self.head
    }

    #[inline]
    fn data(&self) -> &[u8] {
        &self.buf[self.head..self.tail]
    }

    /// Moves the entries to a buffer of `cap` bytes with `front` bytes of
    /// room before them.
    fn relayout(&mut self, cap: usize, front: usize) {
        let used = self.used();
        if cap == self.buf.len() {
            self.buf.copy_within(self.head..self.tail, front);
        } else {
            // Not a zeroed allocation (see `with_entry`).
            let mut buf = Vec::with_capacity(cap);
            buf.resize(front, 0);
            buf.extend_from_slice(self.data());
            buf.resize(cap, 0);
            self.buf = buf.into_boxed_slice();
        }
        self.head = front;
        self.tail = front + used;
    }

    /// Ensures `need` free bytes before `head` (`front`) or after `tail`.
    /// The buffer grows geometrically up to `max_bytes`; when the room is
    /// on the wrong side the entries are re-centred.
    #[inline]
    fn make_room(&mut self, need: usize, front: bool, max_bytes: usize) {
        let have = if front {
            self.head
        } else {
            self.buf.len() - self.tail
        };
        if have >= need {
            return;
        }
        self.make_room_slow(need, front, max_bytes);
    }

    #[cold]
    fn make_room_slow(&mut self, need: usize, front: bool, max_bytes: usize) {
        let used = self.used();
        let cap = self.buf.len();
        let free = cap - used;
        if free >= need && free - need >= used / 4 {
            // Enough room in total: re-centre, the needing side gets what it
            // needs plus half of the rest.
            let spare = free - need;
            let front_room = if front { need + spare / 2 } else { spare / 2 };
            self.relayout(cap, front_room);
            return;
        }
        let want = used + need;
        // Grow by half, to a whole allocator size class: amortised O(1)
        // pushes with at most ~1/3 of a node unused (doubling left up to
        // half of a small list's node empty).
        let new_cap =
            size_class((cap + cap / 2).max(want).max(MIN_NODE_BYTES)).min(max_bytes.max(want));
        // All new room goes to the side being pushed: nodes mostly fill
        // from one end.
        let front_room = if front { new_cap - used } else { 0 };
        self.relayout(new_cap, front_room);
    }

    #[inline]
    fn push_front(&mut self, e: &Encoded, max_bytes: usize) {
        let total = entry_total(e.size);
        self.make_room(total, true, max_bytes);
        let start = self.head - total;
        let dst = &mut self.buf[start..self.head];
        e.write(&mut dst[..e.size]);
        codec::write_backlen(&mut dst[e.size..], e.size);
        self.head = start;
        self.count += 1;
    }

    #[inline]
    fn push_back(&mut self, e: &Encoded, max_bytes: usize) {
        let total = entry_total(e.size);
        self.make_room(total, false, max_bytes);
        let dst = &mut self.buf[self.tail..self.tail + total];
        e.write(&mut dst[..e.size]);
        codec::write_backlen(&mut dst[e.size..], e.size);
        self.tail += total;
        self.count += 1;
    }

    /// The entry starting at absolute offset `pos`: element and whole
    /// entry size.
    #[inline]
    fn at(&self, pos: usize) -> (Elem<'_>, usize) {
        let (e, size) = codec::decode(&self.buf, pos);
        (e, entry_total(size))
    }

    /// Start offset of the entry ending at absolute offset `end`.
    #[inline]
    fn prev_start(&self, end: usize) -> usize {
        let (size, bl) = codec::read_backlen(&self.buf, end);
        end - bl - size
    }

    #[inline]
    fn first(&self) -> Elem<'_> {
        self.at(self.head).0
    }

    #[inline]
    fn last(&self) -> Elem<'_> {
        self.at(self.prev_start(self.tail)).0
    }

    #[inline]
    fn pop_front(&mut self) {
        let (_, total) = self.at(self.head);
        self.head += total;
        self.count -= 1;
    }

    #[inline]
    fn pop_back(&mut self) {
        self.tail = self.prev_start(self.tail);
        self.count -= 1;
    }

    /// Absolute offset of the entry at local index `i` (< count).
    fn offset_of(&self, i: usize) -> usize {
        let count = self.count as usize;
        if i < count / 2 {
            let mut pos = self.head;
            for _ in 0..i {
                pos += self.at(pos).1;
            }
            pos
        } else {
            let mut pos = self.tail;
            for _ in i..count {
                pos = self.prev_start(pos);
            }
            pos
        }
    }

    /// Releases free room when it is more than the entries themselves.
    fn shrink(&mut self) {
        let used = self.used();
        if self.buf.len() > MIN_NODE_BYTES && self.buf.len() - used > used.max(MIN_NODE_BYTES) {
            self.relayout(used.max(MIN_NODE_BYTES), 0);
        }
    }
}

/// A list of byte strings.
#[derive(Clone, Default)]
pub struct List {
    nodes: VecDeque<Node>,
    len: usize,
    /// `list-max-listpack-size` when the list was created (as Redis, a
    /// list keeps the fill it was created with).
    fill: i32,
    /// Whether Redis 7.2 would keep this list as one `listpack` rather
    /// than a `quicklist` (OBJECT ENCODING under redis-version 7.4): see
    /// [`List::will_grow`], [`List::shrunk`] and [`List::settle`].
    listpack: bool,
}

impl std::fmt::Debug for List {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|e| String::from_utf8_lossy(&e.to_vec()).into_owned()),
            )
            .finish()
    }
}

impl PartialEq for List {
    fn eq(&self, other: &List) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl List {
    /// An empty list whose nodes follow `list-max-listpack-size` = `fill`.
    pub fn new(fill: i64) -> List {
        List {
            nodes: VecDeque::new(),
            len: 0,
            fill: clamp_fill(fill),
            listpack: true,
        }
    }

    /// The name OBJECT ENCODING replies with: Redis 7.0 reports every
    /// list as a quicklist; 7.2 keeps a small one as a single listpack.
    pub fn encoding(&self) -> &'static str {
        if self.listpack && crate::speaks_7_4() {
            "listpack"
        } else {
            "quicklist"
        }
    }

    /// Bytes the list would take as one listpack (its 6-byte header and
    /// end byte around the entries).
    fn listpack_bytes(&self) -> usize {
        7 + self.nodes.iter().map(Node::used).sum::<usize>()
    }

    /// Before `values` are added (Redis 7.2's listTypeTryConversionAppend,
    /// which counts their raw bytes against `list-max-listpack-size` as it
    /// is now, `fill`): a listpack they would take past the limits becomes
    /// a quicklist, whose nodes follow that fill from then on.
    pub fn will_grow(&mut self, values: &[&[u8]], fill: i64) {
        if !self.listpack {
            return;
        }
        let bytes = self.listpack_bytes() + values.iter().map(|v| v.len()).sum::<usize>();
        let count = self.len + values.len();
        let (max_bytes, max_count) = listpack_limits(fill);
        let exceeds = if max_bytes != usize::MAX {
            bytes > max_bytes
        } else {
            bytes > SIZE_SAFETY_LIMIT || count > max_count
        };
        if exceeds {
            self.listpack = false;
            self.fill = clamp_fill(fill);
        }
    }

    /// After elements were removed (Redis's LIST_CONV_SHRINKING): a
    /// quicklist of one node under half the limits of `fill` (the
    /// configured `list-max-listpack-size`) becomes a listpack.
    pub fn shrunk(&mut self, fill: i64) {
        self.try_listpack(fill, 2);
    }

    /// A list built whole (loaded, restored, stored by SORT): a listpack
    /// if it fits one node within the limits (Redis's LIST_CONV_AUTO).
    pub fn settle(&mut self) {
        self.listpack = false;
        self.try_listpack(self.fill as i64, 1);
    }

    fn try_listpack(&mut self, fill: i64, divisor: usize) {
        if self.listpack || self.nodes.len() != 1 {
            return;
        }
        let (max_bytes, max_count) = listpack_limits(fill);
        if self.listpack_bytes() <= max_bytes / divisor && self.len <= max_count / divisor {
            self.listpack = true;
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// (bytes, entries) a node may hold.
    #[inline]
    fn limits(&self) -> (usize, u32) {
        if self.fill < 0 {
            let shift = ((-(self.fill as i64)) - 1).min(4) as u32;
            (4096 << shift, u32::MAX)
        } else {
            (SIZE_SAFETY_LIMIT, self.fill.max(1) as u32)
        }
    }

    #[inline]
    /// Room for one more node: exactly one while the list is short (most
    /// lists have a node or two), amortised doubling beyond, or every
    /// push of a list of large elements (a node each) would copy the
    /// whole node array: LPUSH of 18 KB values ran at half Redis's rate.
    fn reserve_node(&mut self) {
        if self.nodes.len() < 8 {
            self.nodes.reserve_exact(1);
        } else {
            self.nodes.reserve(1);
        }
    }

    fn fits(&self, node: &Node, total: usize) -> bool {
        let (max_bytes, max_count) = self.limits();
        node.count < max_count && node.used() + total <= max_bytes
    }

    #[inline]
    pub fn push_front(&mut self, v: &[u8]) {
        let e = codec::encode(v);
        let total = entry_total(e.size);
        let max_bytes = self.limits().0;
        let fits = match self.nodes.front() {
            Some(n) => self.fits(n, total),
            None => false,
        };
        if !fits {
            self.reserve_node();
            self.nodes
                .push_front(Node::with_entry(&e, size_class(total), true));
            self.len += 1;
        } else if let Some(n) = self.nodes.front_mut() {
            n.push_front(&e, max_bytes);
            self.len += 1;
        }
    }

    #[inline]
    pub fn push_back(&mut self, v: &[u8]) {
        let e = codec::encode(v);
        let total = entry_total(e.size);
        let max_bytes = self.limits().0;
        let fits = match self.nodes.back() {
            Some(n) => self.fits(n, total),
            None => false,
        };
        if !fits {
            self.reserve_node();
            self.nodes
                .push_back(Node::with_entry(&e, size_class(total), false));
            self.len += 1;
        } else if let Some(n) = self.nodes.back_mut() {
            n.push_back(&e, max_bytes);
            self.len += 1;
        }
    }

    #[inline]
    pub fn front(&self) -> Option<Elem<'_>> {
        self.nodes.front().map(Node::first)
    }

    #[inline]
    pub fn back(&self) -> Option<Elem<'_>> {
        self.nodes.back().map(Node::last)
    }

    /// Drops the first element; false if the list is empty.
    #[inline]
    pub fn pop_front(&mut self) -> bool {
        let Some(n) = self.nodes.front_mut() else {
            return false;
        };
        n.pop_front();
        if n.count == 0 {
            self.nodes.pop_front();
        }
        self.len -= 1;
        true
    }

    /// Drops the last element; false if the list is empty.
    #[inline]
    pub fn pop_back(&mut self) -> bool {
        let Some(n) = self.nodes.back_mut() else {
            return false;
        };
        n.pop_back();
        if n.count == 0 {
            self.nodes.pop_back();
        }
        self.len -= 1;
        true
    }

    /// Removes and returns the first (`front`) or last element.
    pub fn pop(&mut self, front: bool) -> Option<Vec<u8>> {
        let v = if front { self.front() } else { self.back() }?.to_vec();
        if front {
            self.pop_front();
        } else {
            self.pop_back();
        }
        Some(v)
    }

    pub fn push(&mut self, v: &[u8], front: bool) {
        if front {
            self.push_front(v)
        } else {
            self.push_back(v)
        }
    }

    /// (node index, absolute offset in the node) of element `i` < len.
    fn locate(&self, i: usize) -> (usize, usize) {
        let (ni, local) = if i < self.len / 2 {
            let mut i = i;
            let mut ni = 0;
            while i >= self.nodes[ni].count as usize {
                i -= self.nodes[ni].count as usize;
                ni += 1;
            }
            (ni, i)
        } else {
            let mut from_end = self.len - i;
            let mut ni = self.nodes.len() - 1;
            while from_end > self.nodes[ni].count as usize {
                from_end -= self.nodes[ni].count as usize;
                ni -= 1;
            }
            (ni, self.nodes[ni].count as usize - from_end)
        };
        (ni, self.nodes[ni].offset_of(local))
    }

    /// Element `i` (0 = first), if `i < len`.
    pub fn get(&self, i: usize) -> Option<Elem<'_>> {
        if i >= self.len {
            return None;
        }
        let (ni, pos) = self.locate(i);
        Some(self.nodes[ni].at(pos).0)
    }

    /// Iterates from the first element.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    /// Iterates from element `i` to the end.
    pub fn iter_from(&self, i: usize) -> Iter<'_> {
        if i >= self.len {
            return Iter {
                nodes: &self.nodes,
                ni: self.nodes.len(),
                pos: 0,
                left: 0,
            };
        }
        let (ni, pos) = self.locate(i);
        Iter {
            nodes: &self.nodes,
            ni,
            pos,
            left: self.len - i,
        }
    }

    /// Iterates from the last element backwards.
    pub fn iter_rev(&self) -> RevIter<'_> {
        match self.nodes.back() {
            Some(n) => RevIter {
                nodes: &self.nodes,
                ni: self.nodes.len() - 1,
                end: n.tail,
                left: self.len,
            },
            None => RevIter {
                nodes: &self.nodes,
                ni: 0,
                end: 0,
                left: 0,
            },
        }
    }

    /// Replaces element `i`; false if `i >= len`.
    pub fn set(&mut self, i: usize, v: &[u8]) -> bool {
        if i >= self.len {
            return false;
        }
        let (ni, pos) = self.locate(i);
        let e = codec::encode(v);
        let total = entry_total(e.size);
        let node = &mut self.nodes[ni];
        let old = node.at(pos).1;
        if old == total {
            let dst = &mut node.buf[pos..pos + total];
            e.write(&mut dst[..e.size]);
            codec::write_backlen(&mut dst[e.size..], e.size);
            return true;
        }
        self.splice(ni, pos, old, 1, Some(&e));
        true
    }

    /// Inserts `v` so that it becomes element `i` (`i == len` appends).
    pub fn insert(&mut self, i: usize, v: &[u8]) {
        if i == 0 {
            return self.push_front(v);
        }
        if i >= self.len {
            return self.push_back(v);
        }
        let (ni, pos) = self.locate(i);
        let e = codec::encode(v);
        self.splice(ni, pos, 0, 0, Some(&e));
    }

    /// Rebuilds node `ni` with `remove` bytes (`removed` entries) at
    /// absolute offset `pos` replaced by `insert`, splitting the node if
    /// it outgrows its limits.
    fn splice(
        &mut self,
        ni: usize,
        pos: usize,
        remove: usize,
        removed: u32,
        insert: Option<&Encoded>,
    ) {
        let (max_bytes, max_count) = self.limits();
        let node = &mut self.nodes[ni];
        let ins_total = insert.map_or(0, |e| entry_total(e.size));
        let mut data = Vec::with_capacity(node.used() - remove + ins_total);
        data.extend_from_slice(&node.buf[node.head..pos]);
        if let Some(e) = insert {
            let at = data.len();
            data.resize(at + ins_total, 0);
            e.write(&mut data[at..at + e.size]);
            codec::write_backlen(&mut data[at + e.size..], e.size);
        }
        data.extend_from_slice(&node.buf[pos + remove..node.tail]);
        let count = node.count - removed + insert.is_some() as u32;
        self.len = self.len - removed as usize + insert.is_some() as usize;
        if count == 0 {
            self.nodes.remove(ni);
            return;
        }
        if count > 1 && (data.len() > max_bytes || count > max_count) {
            // Split in two halves by entry count.
            let half = count / 2;
            let mut p = 0;
            for _ in 0..half {
                let (_, size) = codec::decode(&data, p);
                p += entry_total(size);
            }
            self.nodes[ni] = Node::from_data(&data[..p], half);
            self.nodes
                .insert(ni + 1, Node::from_data(&data[p..], count - half));
        } else {
            self.nodes[ni] = Node::from_data(&data, count);
            self.merge_around(ni);
        }
    }

    /// Merges node `ni` with a neighbour when both fit in one node.
    fn merge_around(&mut self, ni: usize) {
        let (max_bytes, max_count) = self.limits();
        let fits = |a: &Node, b: &Node| {
            a.used() + b.used() <= max_bytes / 2 && a.count + b.count <= max_count
        };
        let target = if ni + 1 < self.nodes.len() && fits(&self.nodes[ni], &self.nodes[ni + 1]) {
            Some(ni)
        } else if ni > 0 && fits(&self.nodes[ni - 1], &self.nodes[ni]) {
            Some(ni - 1)
        } else {
            None
        };
        if let Some(a) = target {
            let (x, y) = (&self.nodes[a], &self.nodes[a + 1]);
            let mut data = Vec::with_capacity(x.used() + y.used());
            data.extend_from_slice(x.data());
            data.extend_from_slice(y.data());
            let count = x.count + y.count;
            self.nodes[a] = Node::from_data(&data, count);
            self.nodes.remove(a + 1);
        }
    }

    /// Removes elements equal to `needle`: the first `count` from the head
    /// (or from the tail if `from_tail`), all of them if `count` is 0.
    /// Returns how many were removed.
    pub fn remove_matching(&mut self, needle: &Needle, count: usize, from_tail: bool) -> usize {
        let mut removed = 0;
        let limit = if count == 0 { usize::MAX } else { count };
        let mut ni = if from_tail { self.nodes.len() } else { 0 };
        loop {
            if from_tail {
                if ni == 0 {
                    break;
                }
                ni -= 1;
            } else if ni >= self.nodes.len() {
                break;
            }
            if removed >= limit {
                break;
            }
            let node = &self.nodes[ni];
            // Matching entries of this node, as (offset, size), in the
            // direction of the scan.
            let mut hits: Vec<(usize, usize)> = Vec::new();
            if from_tail {
                let mut end = node.tail;
                while end > node.head && removed + hits.len() < limit {
                    let start = node.prev_start(end);
                    if needle.matches(node.at(start).0) {
                        hits.push((start, end - start));
                    }
                    end = start;
                }
                hits.reverse();
            } else {
                let mut pos = node.head;
                while pos < node.tail && removed + hits.len() < limit {
                    let (e, total) = node.at(pos);
                    if needle.matches(e) {
                        hits.push((pos, total));
                    }
                    pos += total;
                }
            }
            if hits.is_empty() {
                if !from_tail {
                    ni += 1;
                }
                continue;
            }
            let mut data = Vec::with_capacity(node.used());
            let mut p = node.head;
            for &(start, size) in &hits {
                data.extend_from_slice(&node.buf[p..start]);
                p = start + size;
            }
            data.extend_from_slice(&node.buf[p..node.tail]);
            let count = node.count - hits.len() as u32;
            removed += hits.len();
            self.len -= hits.len();
            if count == 0 {
                self.nodes.remove(ni);
                // Forward: the next node now sits at `ni`.
                continue;
            }
            self.nodes[ni] = Node::from_data(&data, count);
            if !from_tail {
                ni += 1;
            }
        }
        if removed > 0 {
            self.compact();
        }
        removed
    }

    /// Merges adjacent nodes that together fit in half a node, after
    /// deletions left them small.
    fn compact(&mut self) {
        let mut i = 0;
        while i + 1 < self.nodes.len() {
            let before = self.nodes.len();
            self.merge_around(i);
            if self.nodes.len() == before {
                i += 1;
            }
        }
    }

    /// Keeps only elements `start..end` (end exclusive, both <= len).
    pub fn retain_range(&mut self, start: usize, end: usize) {
        let end = end.min(self.len);
        if start >= end {
            self.nodes.clear();
            self.len = 0;
            return;
        }
        // From the tail.
        let mut drop_back = self.len - end;
        while drop_back > 0 {
            let Some(n) = self.nodes.back_mut() else {
                break;
            };
            if n.count as usize <= drop_back {
                drop_back -= n.count as usize;
                self.len -= n.count as usize;
                self.nodes.pop_back();
            } else {
                for _ in 0..drop_back {
                    n.pop_back();
                }
                self.len -= drop_back;
                n.shrink();
                drop_back = 0;
            }
        }
        let mut drop_front = start;
        while drop_front > 0 {
            let Some(n) = self.nodes.front_mut() else {
                break;
            };
            if n.count as usize <= drop_front {
                drop_front -= n.count as usize;
                self.len -= n.count as usize;
                self.nodes.pop_front();
            } else {
                for _ in 0..drop_front {
                    n.pop_front();
                }
                self.len -= drop_front;
                n.shrink();
                drop_front = 0;
            }
        }
        self.nodes.shrink_to_fit();
    }

    /// Heap bytes used (for tests and MEMORY-style estimates).
    pub fn heap_size(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.nodes.iter().map(|n| n.buf.len()).sum::<usize>()
    }
}

/// Forward iterator over a list's elements.
pub struct Iter<'a> {
    nodes: &'a VecDeque<Node>,
    ni: usize,
    pos: usize,
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Elem<'a>;

    #[inline]
    fn next(&mut self) -> Option<Elem<'a>> {
        if self.left == 0 {
            return None;
        }
        let mut node = &self.nodes[self.ni];
        if self.pos >= node.tail {
            self.ni += 1;
            node = &self.nodes[self.ni];
            self.pos = node.head;
        }
        let (e, total) = node.at(self.pos);
        self.pos += total;
        self.left -= 1;
        Some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Backward iterator over a list's elements.
pub struct RevIter<'a> {
    nodes: &'a VecDeque<Node>,
    ni: usize,
    end: usize,
    left: usize,
}

impl<'a> Iterator for RevIter<'a> {
    type Item = Elem<'a>;

    #[inline]
    fn next(&mut self) -> Option<Elem<'a>> {
        if self.left == 0 {
            return None;
        }
        let mut node = &self.nodes[self.ni];
        if self.end <= node.head {
            self.ni -= 1;
            node = &self.nodes[self.ni];
            self.end = node.tail;
        }
        let start = node.prev_start(self.end);
        self.end = start;
        self.left -= 1;
        Some(node.at(start).0)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for RevIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn contents(l: &List) -> Vec<Vec<u8>> {
        l.iter().map(Elem::to_vec).collect()
    }

    /// Checks every invariant against a model.
    fn check(l: &List, model: &VecDeque<Vec<u8>>) {
        assert_eq!(l.len(), model.len());
        assert_eq!(
            l.nodes.iter().map(|n| n.count as usize).sum::<usize>(),
            l.len
        );
        assert!(l.nodes.iter().all(|n| n.count > 0));
        let fwd = contents(l);
        assert_eq!(fwd, model.iter().cloned().collect::<Vec<_>>());
        let mut rev: Vec<Vec<u8>> = l.iter_rev().map(Elem::to_vec).collect();
        rev.reverse();
        assert_eq!(rev, fwd);
        for (i, v) in model.iter().enumerate() {
            assert_eq!(l.get(i).map(Elem::to_vec).as_ref(), Some(v));
        }
        assert_eq!(l.front().map(Elem::to_vec), model.front().cloned());
        assert_eq!(l.back().map(Elem::to_vec), model.back().cloned());
    }

    #[test]
    fn codec_round_trips() {
        let long = vec![b'x'; 20000];
        let mid = vec![b'y'; 300];
        let samples: Vec<&[u8]> = vec![
            b"",
            b"0",
            b"47",
            b"48",
            b"-1",
            b"127",
            b"128",
            b"-129",
            b"32767",
            b"32768",
            b"8388607",
            b"8388608",
            b"-8388609",
            b"2147483647",
            b"2147483648",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"9223372036854775808",
            b"01",
            b"-0",
            b"+1",
            b" 1",
            b"abc",
            &mid,
            &long,
        ];
        for s in samples {
            let e = codec::encode(s);
            let mut buf = vec![0u8; e.size];
            e.write(&mut buf);
            let mut appended = vec![7u8];
            e.append(&mut appended);
            assert_eq!(appended[1..], buf[..]);
            let (d, size) = codec::decode(&buf, 0);
            assert_eq!(size, e.size);
            assert_eq!(codec::entry_size(&buf, 0), e.size);
            assert_eq!(d.to_vec(), s.to_vec());
            assert!(Needle::new(s).matches(d));
            if s.len() <= 20 && resp::parse_i64(s).is_some() {
                assert!(matches!(d, Elem::Int(_)));
                assert!(e.size < s.len() + 1);
            } else {
                assert!(matches!(d, Elem::Str(_)));
            }
        }
        for n in [0usize, 1, 127, 128, 16383, 16384, 1 << 21, usize::MAX >> 1] {
            let size = codec::backlen_size(n);
            let mut buf = vec![0u8; size + 3];
            codec::write_backlen(&mut buf[3..], n);
            assert_eq!(codec::read_backlen(&buf, buf.len()), (n, size));
        }
    }

    #[test]
    fn size_classes() {
        let classes: Vec<usize> = [1, 16, 17, 128, 129, 160, 161, 256, 257, 320, 4097, 8192]
            .iter()
            .map(|&n| size_class(n))
            .collect();
        assert_eq!(
            classes,
            [16, 16, 32, 128, 160, 160, 192, 256, 320, 320, 5120, 8192]
        );
    }

    #[test]
    fn push_pop_both_ends() {
        let mut l = List::new(-2);
        let mut m = VecDeque::new();
        for i in 0..5000 {
            let v = format!("v{i}").into_bytes();
            if i % 3 == 0 {
                l.push_front(&v);
                m.push_front(v);
            } else {
                l.push_back(&v);
                m.push_back(v);
            }
        }
        check(&l, &m);
        assert!(l.nodes.len() > 1);
        while !m.is_empty() {
            assert_eq!(l.pop(true), m.pop_front());
            assert_eq!(l.pop(false), m.pop_back());
        }
        assert!(l.is_empty());
        assert!(l.nodes.is_empty());
        assert_eq!(l.pop(true), None);
    }

    #[test]
    fn middle_edits() {
        let mut l = List::new(4);
        let mut m: VecDeque<Vec<u8>> = VecDeque::new();
        for i in 0..20 {
            let v = (i % 5).to_string().into_bytes();
            l.push_back(&v);
            m.push_back(v);
        }
        l.insert(3, b"ins");
        m.insert(3, b"ins".to_vec());
        l.set(7, b"a-much-longer-value-than-before");
        m[7] = b"a-much-longer-value-than-before".to_vec();
        check(&l, &m);
        assert_eq!(l.remove_matching(&Needle::new(b"2"), 2, true), 2);
        let mut seen = 0;
        for i in (0..m.len()).rev() {
            if m[i] == b"2" && seen < 2 {
                m.remove(i);
                seen += 1;
            }
        }
        check(&l, &m);
        let ones = m.iter().filter(|v| *v == b"1").count();
        assert_eq!(l.remove_matching(&Needle::new(b"1"), 0, false), ones);
        m.retain(|v| v != b"1");
        check(&l, &m);
        l.retain_range(2, 9);
        let kept: VecDeque<Vec<u8>> = m.iter().skip(2).take(7).cloned().collect();
        check(&l, &kept);
    }

    #[test]
    fn fill_limits_nodes() {
        let mut l = List::new(3);
        for i in 0..10 {
            l.push_back(i.to_string().as_bytes());
        }
        assert_eq!(l.nodes.len(), 4);
        let mut l = List::new(-1);
        for _ in 0..1000 {
            l.push_front(b"0123456789012345678901234567890");
        }
        assert!(l.nodes.iter().all(|n| n.used() <= 4096));
        // A value bigger than a node gets a node of its own.
        l.push_back(&vec![b'z'; 10000]);
        assert_eq!(l.back().map(|e| e.len()), Some(10000));
    }

    #[test]
    fn memory_is_compact() {
        let mut l = List::new(-2);
        for _ in 0..100_000 {
            l.push_front(b"xxx");
        }
        // 5 bytes an element plus node slack: far below a Vec per element.
        assert!(l.heap_size() < 100_000 * 7, "{}", l.heap_size());
    }

    #[derive(Debug, Clone)]
    enum Op {
        PushFront(Vec<u8>),
        PushBack(Vec<u8>),
        PopFront,
        PopBack,
        Set(usize, Vec<u8>),
        Insert(usize, Vec<u8>),
        Remove(Vec<u8>, usize, bool),
        Retain(usize, usize),
    }

    fn value() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => (0i64..60).prop_map(|n| n.to_string().into_bytes()),
            2 => any::<i64>().prop_map(|n| n.to_string().into_bytes()),
            3 => proptest::collection::vec(b'a'..b'e', 0..6),
            1 => proptest::collection::vec(any::<u8>(), 100..300),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => value().prop_map(Op::PushFront),
            6 => value().prop_map(Op::PushBack),
            2 => Just(Op::PopFront),
            2 => Just(Op::PopBack),
            1 => (any::<usize>(), value()).prop_map(|(i, v)| Op::Set(i, v)),
            1 => (any::<usize>(), value()).prop_map(|(i, v)| Op::Insert(i, v)),
            1 => (value(), 0usize..3, any::<bool>()).prop_map(|(v, c, t)| Op::Remove(v, c, t)),
            1 => (0usize..5, 0usize..60).prop_map(|(a, b)| Op::Retain(a, b)),
        ]
    }

    proptest! {
        #[test]
        fn behaves_like_vecdeque(
            fill in prop_oneof![Just(-1i64), Just(-2), Just(1), Just(2), Just(5), Just(0)],
            ops in proptest::collection::vec(op(), 0..300),
        ) {
            let mut l = List::new(fill);
            let mut m: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    Op::PushFront(v) => { l.push_front(&v); m.push_front(v); }
                    Op::PushBack(v) => { l.push_back(&v); m.push_back(v); }
                    Op::PopFront => prop_assert_eq!(l.pop(true), m.pop_front()),
                    Op::PopBack => prop_assert_eq!(l.pop(false), m.pop_back()),
                    Op::Set(i, v) => {
                        let i = if m.is_empty() { i } else { i % (m.len() + 1) };
                        let ok = l.set(i, &v);
                        prop_assert_eq!(ok, i < m.len());
                        if ok { m[i] = v; }
                    }
                    Op::Insert(i, v) => {
                        let i = i % (m.len() + 1);
                        l.insert(i, &v);
                        m.insert(i, v);
                    }
                    Op::Remove(v, count, from_tail) => {
                        let n = l.remove_matching(&Needle::new(&v), count, from_tail);
                        let limit = if count == 0 { usize::MAX } else { count };
                        let mut removed = 0;
                        if from_tail {
                            let mut i = m.len();
                            while i > 0 && removed < limit {
                                i -= 1;
                                if m[i] == v { m.remove(i); removed += 1; }
                            }
                        } else {
                            let mut i = 0;
                            while i < m.len() && removed < limit {
                                if m[i] == v { m.remove(i); removed += 1; } else { i += 1; }
                            }
                        }
                        prop_assert_eq!(n, removed);
                    }
                    Op::Retain(a, b) => {
                        let end = (a + b).min(m.len());
                        l.retain_range(a, a + b);
                        m = m.iter().take(end).skip(a).cloned().collect();
                    }
                }
                check(&l, &m);
            }
        }
    }
}
