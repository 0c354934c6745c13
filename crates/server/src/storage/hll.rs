//! HyperLogLog in Redis's own representation, bit for bit (hyperloglog.c
//! of Redis 7.0), so a value written by either server counts the same in
//! the other and the same additions give the same bytes. Pure data: no
//! RESP, no I/O.
//!
//! A value is a string: a 16-byte header (`HYLL`, the encoding byte, three
//! unused bytes, the cached cardinality as a little-endian u64 whose top
//! bit marks it stale), then the registers. Dense: 16384 6-bit registers
//! packed from the least significant bit of each byte. Sparse: a run
//! length code of ZERO (`00xxxxxx`: 1-64 zero registers), XZERO
//! (`01xxxxxx yyyyyyyy`: 1-16384 zero registers) and VAL (`1vvvvvxx`: 1-4
//! registers of value 1-32) opcodes, promoted to dense when a register
//! needs more than 32 or the string would pass `hll-sparse-max-bytes`.
//!
//! Every function here is safe on any bytes: values arrive by SET, RESTORE
//! and RDB, so sparse data is decoded with bounds checks (a truncated
//! XZERO reads its missing byte as 0, as Redis reads the string's
//! terminator). Sparse data is [`Corrupt`] unless its opcodes cover
//! exactly the 16384 registers, every opcode checked before it is applied:
//! Redis 7.0.15 as shipped with the CVE-2025-32023 fix (Debian's, the
//! reference server here), whose checks reject the same values.

/// Header bytes before the registers.
pub const HDR_SIZE: usize = 16;
const P: u32 = 14;
/// Hash bits left for the zero-run count.
const Q: usize = 64 - P as usize;
pub const REGISTERS: usize = 1 << P;
const P_MASK: u64 = REGISTERS as u64 - 1;
const BITS: usize = 6;
const REGISTER_MAX: u32 = (1 << BITS) - 1;
/// Bytes of the dense registers.
const DENSE_REGS: usize = (REGISTERS * BITS).div_ceil(8);
pub const DENSE_SIZE: usize = HDR_SIZE + DENSE_REGS;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const SEED: u64 = 0xadc8_3b19;
/// 0.5 / ln(2).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// The string is not an HLL (bad magic, encoding or dense length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotHll;

/// Sparse data that does not cover exactly the 16384 registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// Redis's isHLLObjectOrReply checks: a header, the magic, a known
/// encoding, and the exact length for dense.
pub fn encoding(v: &[u8]) -> Result<Encoding, NotHll> {
    if v.len() < HDR_SIZE || &v[..4] != b"HYLL" {
        return Err(NotHll);
    }
    match v[4] {
        DENSE if v.len() == DENSE_SIZE => Ok(Encoding::Dense),
        SPARSE => Ok(Encoding::Sparse),
        _ => Err(NotHll),
    }
}

/// An empty HLL as Redis creates it: sparse, one XZERO for all registers,
/// cached cardinality 0 (valid).
pub fn new_sparse() -> Vec<u8> {
    // Spare room as Redis's first update makes (and so OBJECT ENCODING
    // says `raw`, as Redis's createObject does).
    let mut v = Vec::with_capacity(HDR_SIZE + 2 + 3);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let n = left.min(XZERO_MAX_LEN);
        v.extend_from_slice(&xzero_op(n));
        left -= n;
    }
    v
}

/// MurmurHash2, 64-bit version (MurmurHash64A), reading 8-byte blocks as
/// little-endian as Redis does on every architecture.
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    // Redis computes `len * m` with `len` an int: the same product for any
    // length a string can have.
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut blocks = key.chunks_exact(8);
    for b in &mut blocks {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        let mut k = u64::from_le_bytes(w);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element lands in and the length of its `000..1`
/// pattern (1 to Q+1), as Redis's hllPatLen.
pub fn pattern(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, SEED);
    let index = (hash & P_MASK) as usize;
    // The extra bit bounds the count at Q+1.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// The cached cardinality, unless marked stale.
pub fn cached_card(v: &[u8]) -> Option<u64> {
    if v[15] & 0x80 != 0 {
        return None;
    }
    let mut c = [0u8; 8];
    c.copy_from_slice(&v[8..16]);
    Some(u64::from_le_bytes(c))
}

pub fn set_cached_card(v: &mut [u8], card: u64) {
    v[8..16].copy_from_slice(&card.to_le_bytes());
}

pub fn invalidate(v: &mut [u8]) {
    v[15] |= 0x80;
}

// ------------------------------------------------------------ dense

#[inline]
fn dense_get(r: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = r[byte] as u32;
    // The last register fits in its byte: Redis reads the string's
    // terminator here, which only contributes zero bits.
    let b1 = r.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX) as u8
}

#[inline]
fn dense_put(r: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let fb8 = 8 - fb;
    let v = val as u32;
    r[byte] &= !((REGISTER_MAX << fb) as u8);
    r[byte] |= (v << fb) as u8;
    if let Some(b) = r.get_mut(byte + 1) {
        *b &= !((REGISTER_MAX >> fb8) as u8);
        *b |= (v >> fb8) as u8;
    }
}

/// Raises register `i` to `count`; true if it changed.
#[inline]
fn dense_set(r: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(r, i) {
        dense_put(r, i, count);
        true
    } else {
        false
    }
}

/// Eight packed registers (6 bytes) spread into the eight bytes of a u64,
/// register k in byte k: three mask-and-shift steps instead of eight
/// extractions.
#[inline(always)]
fn unpack8(c: &[u8]) -> u64 {
    let w = u64::from(c[0])
        | u64::from(c[1]) << 8
        | u64::from(c[2]) << 16
        | u64::from(c[3]) << 24
        | u64::from(c[4]) << 32
        | u64::from(c[5]) << 40;
    let x = (w & 0xFF_FFFF) | ((w & 0xFFFF_FF00_0000) << 8);
    let x = (x & 0x0000_0FFF_0000_0FFF) | ((x & 0x00FF_F000_00FF_F000) << 4);
    (x & 0x003F_003F_003F_003F) | ((x & 0x0FC0_0FC0_0FC0_0FC0) << 2)
}

/// Byte-wise maximum of two words whose bytes are all below 128.
#[inline(always)]
fn max_bytes(a: u64, b: u64) -> u64 {
    const H: u64 = 0x8080_8080_8080_8080;
    // A byte's high bit survives the subtraction iff a >= b; no borrow
    // crosses bytes since each difference is at least 1.
    let ge = ((a | H) - b) & H;
    let mask = (ge >> 7) * 0xFF;
    (a & mask) | (b & !mask)
}

/// Counts of each register value, kept in four tables so increments of
/// the same value do not wait on each other.
struct Histogram([[u64; 64]; 4]);

impl Histogram {
    fn new() -> Histogram {
        Histogram([[0; 64]; 4])
    }

    /// Counts the eight register bytes of `w` (each below 64).
    #[inline(always)]
    fn add8(&mut self, w: u64) {
        if w == 0 {
            self.0[0][0] += 8;
            return;
        }
        for k in 0..8 {
            self.0[k & 3][((w >> (8 * k)) & 63) as usize] += 1;
        }
    }

    fn total(&self) -> [u64; 64] {
        let mut h = [0u64; 64];
        for (j, slot) in h.iter_mut().enumerate() {
            *slot = self.0[0][j] + self.0[1][j] + self.0[2][j] + self.0[3][j];
        }
        h
    }
}

fn dense_histogram(r: &[u8]) -> [u64; 64] {
    let mut h = Histogram::new();
    for c in r.chunks_exact(6) {
        h.add8(unpack8(c));
    }
    h.total()
}

// ------------------------------------------------------------ sparse

#[inline]
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

#[inline]
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}

#[inline]
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}

#[inline]
fn zero_len(b: u8) -> usize {
    (b & 0x3f) as usize + 1
}

#[inline]
fn xzero_len(b: u8, next: u8) -> usize {
    ((((b & 0x3f) as usize) << 8) | next as usize) + 1
}

#[inline]
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

#[inline]
fn val_len(b: u8) -> usize {
    (b & 0x3) as usize + 1
}

#[inline]
fn val_op(val: u8, len: usize) -> u8 {
    ((val - 1) << 2 | (len as u8 - 1)) | 0x80
}

fn xzero_op(len: usize) -> [u8; 2] {
    let l = len - 1;
    [(l >> 8) as u8 | 0x40, (l & 0xff) as u8]
}

/// The byte at `i`, or the 0 Redis finds past the end (its terminator).
#[inline]
fn at(v: &[u8], i: usize) -> u8 {
    v.get(i).copied().unwrap_or(0)
}

/// One decoded opcode.
#[derive(Debug, Clone, Copy)]
enum Op {
    Zero(usize),
    Val(u8, usize),
}

impl Op {
    /// Registers covered.
    #[inline]
    fn run(self) -> usize {
        match self {
            Op::Zero(n) | Op::Val(_, n) => n,
        }
    }
}

/// The opcode at `p` and the bytes it takes.
#[inline]
fn op_at(v: &[u8], p: usize) -> (Op, usize) {
    let b = v[p];
    if is_zero(b) {
        (Op::Zero(zero_len(b)), 1)
    } else if is_xzero(b) {
        (Op::Zero(xzero_len(b, at(v, p + 1))), 2)
    } else {
        (Op::Val(val_value(b), val_len(b)), 1)
    }
}

/// Rewrites a sparse value as dense (header kept, encoding changed), as
/// Redis's hllSparseToDense; false if it was dense already.
pub fn to_dense(v: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if v[4] == DENSE {
        return Ok(false);
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR_SIZE].copy_from_slice(&v[..HDR_SIZE]);
    dense[4] = DENSE;
    let regs = &mut dense[HDR_SIZE..];
    let mut idx = 0usize;
    let mut p = HDR_SIZE;
    while p < v.len() {
        let (op, len) = op_at(v, p);
        let run = op.run();
        if idx + run > REGISTERS {
            return Err(Corrupt);
        }
        if let Op::Val(val, _) = op {
            for i in idx..idx + run {
                dense_put(regs, i, val);
            }
        }
        idx += run;
        p += len;
    }
    if idx != REGISTERS {
        return Err(Corrupt);
    }
    *v = dense;
    Ok(true)
}

/// Raises register `index` of a sparse value to `count`, splitting the
/// opcode that covers it, exactly as Redis's hllSparseSet (so the bytes
/// come out the same). May promote the value to dense.
fn sparse_set(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<bool, Corrupt> {
    if count > VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    // Step 1: find the opcode covering `index`.
    let end = v.len();
    let mut p = HDR_SIZE;
    let mut first = 0usize;
    let mut prev = None;
    let mut span = 0usize;
    let mut oplen = 1;
    while p < end {
        let (op, len) = op_at(v, p);
        span = op.run();
        oplen = len;
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += len;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupt);
    }
    let b = v[p];
    let runlen = span;

    // Step 2: the cases updated in place.
    if is_val(b) {
        if val_value(b) >= count {
            return Ok(false);
        }
        if runlen == 1 {
            v[p] = val_op(count, 1);
            return Ok(sparse_updated(v, prev));
        }
    }
    if is_zero(b) && runlen == 1 {
        v[p] = val_op(count, 1);
        return Ok(sparse_updated(v, prev));
    }

    // The general case: the opcode splits in up to three.
    let mut seq = [0u8; 5];
    let mut n = 0;
    let last = first + span - 1;
    if !is_val(b) {
        if index != first {
            push_zeros(&mut seq, &mut n, index - first);
        }
        seq[n] = val_op(count, 1);
        n += 1;
        if index != last {
            push_zeros(&mut seq, &mut n, last - index);
        }
    } else {
        let cur = val_value(b);
        if index != first {
            seq[n] = val_op(cur, index - first);
            n += 1;
        }
        seq[n] = val_op(count, 1);
        n += 1;
        if index != last {
            seq[n] = val_op(cur, last - index);
            n += 1;
        }
    }

    // Step 3: put the new sequence in place of the old opcode.
    if n > oplen && v.len() + (n - oplen) > sparse_max {
        return promote(v, index, count);
    }
    let new_len = v.len() + n - oplen;
    // An XZERO cut short by the end of the string still counts two bytes
    // (Redis's length arithmetic): the sequence's last byte then falls
    // past the end.
    let old_end = (p + oplen).min(v.len());
    v.splice(p..old_end, seq[..n].iter().copied());
    v.truncate(new_len);
    Ok(sparse_updated(v, prev))
}

/// Appends a run of `len` zero registers to `seq` as ZERO or XZERO.
fn push_zeros(seq: &mut [u8; 5], n: &mut usize, len: usize) {
    if len > ZERO_MAX_LEN {
        seq[*n..*n + 2].copy_from_slice(&xzero_op(len));
        *n += 2;
    } else {
        seq[*n] = (len - 1) as u8;
        *n += 1;
    }
}

/// Step 4 of hllSparseSet: merges adjacent VAL opcodes of equal value
/// around the change (up to five opcodes from the one before it), then
/// marks the cached cardinality stale.
fn sparse_updated(v: &mut Vec<u8>, prev: Option<usize>) -> bool {
    let mut end = v.len();
    let mut p = prev.unwrap_or(HDR_SIZE);
    let mut scan = 5;
    while p < end && scan > 0 {
        scan -= 1;
        let b = v[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(v[p + 1]) {
            let next = v[p + 1];
            if val_value(b) == val_value(next) {
                let len = val_len(b) + val_len(next);
                if len <= VAL_MAX_LEN {
                    v[p + 1] = val_op(val_value(b), len);
                    v.remove(p);
                    end -= 1;
                    // Try the merged opcode with the one after it.
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate(v);
    true
}

/// Converts to dense, then sets the register there.
fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(v)?;
    // The register was below `count`: the sparse form holds at most 32.
    dense_set(&mut v[HDR_SIZE..], index, count);
    Ok(true)
}

// ------------------------------------------------------------ operations

/// Raises register `index` to `count` in either encoding; true if it
/// changed. The value must have passed [`encoding`].
pub fn set_register(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<bool, Corrupt> {
    match v[4] {
        DENSE => Ok(dense_set(&mut v[HDR_SIZE..], index, count)),
        _ => sparse_set(v, index, count, sparse_max),
    }
}

/// Adds an element (PFADD): true if a register changed. The value must
/// have passed [`encoding`]. The cached cardinality is left to the
/// caller, as Redis does for dense values.
pub fn add(v: &mut Vec<u8>, ele: &[u8], sparse_max: usize) -> Result<bool, Corrupt> {
    let (index, count) = pattern(ele);
    set_register(v, index, count, sparse_max)
}

/// The register histogram of a value that passed [`encoding`]; sparse
/// data covering other than 16384 registers is corrupt.
fn histogram(v: &[u8]) -> Result<[u64; 64], Corrupt> {
    if v[4] == DENSE {
        return Ok(dense_histogram(&v[HDR_SIZE..]));
    }
    let mut h = [0u64; 64];
    let mut idx = 0usize;
    let mut p = HDR_SIZE;
    while p < v.len() {
        let (op, len) = op_at(v, p);
        let run = op.run();
        if idx + run > REGISTERS {
            return Err(Corrupt);
        }
        let val = match op {
            Op::Zero(_) => 0,
            Op::Val(val, _) => val,
        };
        h[val as usize] += run as u64;
        idx += run;
        p += len;
    }
    if idx != REGISTERS {
        return Err(Corrupt);
    }
    Ok(h)
}

/// The estimated cardinality of a value that passed [`encoding`].
pub fn count(v: &[u8]) -> Result<u64, Corrupt> {
    histogram(v).map(|h| estimate(&h))
}

/// Merges a value that passed [`encoding`] into `max` (register-wise
/// maximum), as Redis's hllMerge.
pub fn merge(max: &mut [u8; REGISTERS], v: &[u8]) -> Result<(), Corrupt> {
    if v[4] == DENSE {
        // 8 registers per step, a word-wide max, no per-register branch.
        for (src, dst) in v[HDR_SIZE..].chunks_exact(6).zip(max.chunks_exact_mut(8)) {
            let mut w = [0u8; 8];
            w.copy_from_slice(dst);
            let m = max_bytes(u64::from_le_bytes(w), unpack8(src));
            dst.copy_from_slice(&m.to_le_bytes());
        }
        return Ok(());
    }
    let mut i = 0usize;
    let mut p = HDR_SIZE;
    while p < v.len() {
        let (op, len) = op_at(v, p);
        let run = op.run();
        if i + run > REGISTERS {
            return Err(Corrupt);
        }
        if let Op::Val(val, _) = op {
            for m in &mut max[i..i + run] {
                *m = (*m).max(val);
            }
        }
        i += run;
        p += len;
    }
    if i != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// The estimated cardinality of registers held one per byte (a merge).
pub fn count_registers(max: &[u8; REGISTERS]) -> u64 {
    let mut h = Histogram::new();
    for c in max.chunks_exact(8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        // Bytes of a merge are below 64; the mask keeps indexing in
        // bounds without a check.
        h.add8(u64::from_le_bytes(w) & 0x3F3F_3F3F_3F3F_3F3F);
    }
    estimate(&h.total())
}

/// The registers of a dense value (PFDEBUG GETREG).
pub fn dense_registers(v: &[u8]) -> Vec<u8> {
    let r = &v[HDR_SIZE..];
    (0..REGISTERS).map(|i| dense_get(r, i)).collect()
}

/// Ertl's estimator ("New cardinality estimation algorithms for
/// HyperLogLog sketches", arXiv:1702.01284), in Redis's order of
/// floating-point operations so the result is the same.
fn estimate(h: &[u64; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - h[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += h[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(h[0] as f64 / m);
    let e = (ALPHA_INF * m * m / z).round();
    // Redis's llroundl gives LLONG_MIN when the estimate does not fit
    // (registers crafted near the maximum): PFCOUNT then replies
    // -9223372036854775808 there too.
    if e < 9_223_372_036_854_775_808.0 {
        e as u64
    } else {
        1 << 63
    }
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        // Redis's pow(1 - x, 2): compilers emit the same multiplication.
        let d = 1.0 - x;
        z -= d * d * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

/// The opcodes of a sparse value as PFDEBUG DECODE prints them.
pub fn decode(v: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut p = HDR_SIZE;
    while p < v.len() {
        let b = v[p];
        let (op, len) = op_at(v, p);
        // Formatting into a String cannot fail.
        let _ = match op {
            Op::Zero(n) if is_zero(b) => write!(out, "z:{n} "),
            Op::Zero(n) => write!(out, "Z:{n} "),
            Op::Val(val, n) => write!(out, "v:{val},{n} "),
        };
        p += len;
    }
    out.trim_matches(' ').to_string()
}

/// PFSELFTEST: registers read back what was written without touching
/// their neighbours, and dense and sparse estimates agree and stay within
/// six standard errors up to 10^7 elements. Err holds Redis's message.
pub fn selftest(sparse_max: usize) -> Result<(), String> {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..4].copy_from_slice(b"HYLL");
    let mut bytes = vec![0u8; REGISTERS];
    for _ in 0..1000 {
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = rng.gen::<u8>() & REGISTER_MAX as u8;
            dense_put(&mut dense[HDR_SIZE..], i, *b);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let got = dense_get(&dense[HDR_SIZE..], i);
            if got != b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {got}"
                ));
            }
        }
    }
    dense[HDR_SIZE..].fill(0);
    let mut sparse = new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed: u64 = rng.gen();
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_le_bytes();
        let (index, pat) = pattern(&ele);
        dense_set(&mut dense[HDR_SIZE..], index, pat);
        // Never corrupt: built here.
        let _ = set_register(&mut sparse, index, pat, sparse_max);
        if j != checkpoint {
            continue;
        }
        if j < (sparse_max / 2) as u64 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let d = count(&dense).unwrap_or(0);
        if count(&sparse).unwrap_or(0) != d {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = (checkpoint as i64 - d as i64).unsigned_abs();
        let mut maxerr = (relerr * 6.0 * checkpoint as f64).ceil() as u64;
        // Collisions at 10 are likely enough to fail now and then.
        if j == 10 {
            maxerr = 1;
        }
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hll_of(elements: impl IntoIterator<Item = Vec<u8>>, sparse_max: usize) -> Vec<u8> {
        let mut v = new_sparse();
        for e in elements {
            add(&mut v, &e, sparse_max).unwrap();
        }
        v
    }

    #[test]
    fn murmur_known_vectors() {
        // From Redis's MurmurHash64A compiled as C (little-endian).
        assert_eq!(murmur64a(b"", 0), 0);
        assert_eq!(murmur64a(b"", SEED), 0xd8df_ea65_85bc_9732);
        assert_eq!(murmur64a(b"a", SEED), 0x53d2_470a_9b43_b1a7);
        assert_eq!(murmur64a(b"hello", SEED), 0x0f65_6f01_eecf_e400);
        assert_eq!(murmur64a(b"abcdefgh", SEED), 0xf3a6_5df5_5991_4567);
        assert_eq!(
            murmur64a(b"The quick brown fox jumps over the lazy dog", SEED),
            0x5160_6c5c_5b56_1ace
        );
        // "a" lands in register 12711 with a pattern of 2 (PFDEBUG DECODE
        // in Redis shows it).
        assert_eq!(pattern(b"a"), (12711, 2));
    }

    #[test]
    fn empty_sparse_is_redis_bytes() {
        let v = new_sparse();
        assert_eq!(
            v,
            b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"
        );
        assert_eq!(encoding(&v), Ok(Encoding::Sparse));
        assert_eq!(count(&v), Ok(0));
        assert_eq!(decode(&v), "Z:16384");
    }

    #[test]
    fn small_sets_match_redis() {
        // PFADD h a b c in redis-server 7.0.15.
        let mut v = hll_of([b"a".to_vec(), b"b".to_vec(), b"c".to_vec()], 3000);
        assert_eq!(
            v,
            b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ"
        );
        assert_eq!(decode(&v), "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603");
        assert_eq!(cached_card(&v), None);
        assert_eq!(count(&v), Ok(3));
        set_cached_card(&mut v, 3);
        assert_eq!(cached_card(&v), Some(3));
    }

    #[test]
    fn sparse_and_dense_agree_and_promote() {
        let elements = |n: u32| (0..n).map(|i| format!("ele:{i}").into_bytes());
        let mut dense = vec![0u8; DENSE_SIZE];
        dense[..4].copy_from_slice(b"HYLL");
        let mut sparse = new_sparse();
        let mut promoted_at = None;
        for (i, e) in elements(20_000).enumerate() {
            let (index, pat) = pattern(&e);
            let a = dense_set(&mut dense[HDR_SIZE..], index, pat);
            let b = add(&mut sparse, &e, 3000).unwrap();
            assert_eq!(a, b, "element {i}");
            match encoding(&sparse).unwrap() {
                Encoding::Sparse => assert!(sparse.len() <= 3000),
                Encoding::Dense => {
                    promoted_at.get_or_insert(i);
                }
            }
            if i % 997 == 0 {
                assert_eq!(count(&sparse), count(&dense), "element {i}");
                let mut converted = sparse.clone();
                to_dense(&mut converted).unwrap();
                assert_eq!(converted[HDR_SIZE..], dense[HDR_SIZE..]);
            }
        }
        let at = promoted_at.expect("promoted to dense");
        assert!((1000..4000).contains(&at), "promoted after {at} elements");
        assert_eq!(sparse[HDR_SIZE..], dense[HDR_SIZE..]);
        let card = count(&dense).unwrap();
        assert!((19_500..20_500).contains(&card), "{card}");
        // A smaller limit promotes sooner.
        let v = hll_of(elements(200), 100);
        assert_eq!(encoding(&v), Ok(Encoding::Dense));
    }

    #[test]
    fn register_above_32_promotes() {
        let mut v = new_sparse();
        assert_eq!(set_register(&mut v, 5, 33, 3000), Ok(true));
        assert_eq!(encoding(&v), Ok(Encoding::Dense));
        assert_eq!(dense_registers(&v)[5], 33);
        assert_eq!(set_register(&mut v, 5, 20, 3000), Ok(false));
    }

    #[test]
    fn sparse_split_and_merge_opcodes() {
        let mut v = new_sparse();
        assert_eq!(set_register(&mut v, 1000, 2, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:1000 v:2,1 Z:15383");
        assert_eq!(set_register(&mut v, 1001, 2, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:1000 v:2,2 Z:15382");
        assert_eq!(set_register(&mut v, 1003, 2, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:1000 v:2,2 z:1 v:2,1 Z:15380");
        assert_eq!(set_register(&mut v, 1002, 2, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:1000 v:2,4 Z:15380");
        assert_eq!(set_register(&mut v, 1002, 1, 3000), Ok(false));
        assert_eq!(set_register(&mut v, 1002, 3, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:1000 v:2,2 v:3,1 v:2,1 Z:15380");
        assert_eq!(set_register(&mut v, 0, 1, 3000), Ok(true));
        assert_eq!(set_register(&mut v, 16383, 1, 3000), Ok(true));
        assert_eq!(decode(&v), "v:1,1 Z:999 v:2,2 v:3,1 v:2,1 Z:15379 v:1,1");
    }

    #[test]
    fn dense_packing_round_trips() {
        let mut r = vec![0u8; DENSE_REGS];
        for i in 0..REGISTERS {
            dense_put(&mut r, i, (i * 7 % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&r, i), (i * 7 % 64) as u8);
        }
        // The fast paths read the same registers.
        let mut max = [0u8; REGISTERS];
        let mut v = vec![0u8; HDR_SIZE];
        v.extend_from_slice(&r);
        merge(&mut max, &v).unwrap();
        for (i, m) in max.iter().enumerate() {
            assert_eq!(*m, (i * 7 % 64) as u8);
        }
        let slow: [u64; 64] = {
            let mut h = [0u64; 64];
            for i in 0..REGISTERS {
                h[dense_get(&r, i) as usize] += 1;
            }
            h
        };
        assert_eq!(dense_histogram(&r), slow);
        assert_eq!(count_registers(&max), estimate(&slow));
        assert_eq!(
            max_bytes(0x3f00_0102_0304_0506, 0x0001_0203_0304_3f00),
            0x3f01_0203_0304_3f06
        );
    }

    /// A dense value holding `regs(i)` in register i.
    fn dense_of(regs: impl Fn(usize) -> u8) -> Vec<u8> {
        let mut v = vec![0u8; DENSE_SIZE];
        v[..4].copy_from_slice(b"HYLL");
        for i in 0..REGISTERS {
            dense_put(&mut v[HDR_SIZE..], i, regs(i));
        }
        v
    }

    #[test]
    fn estimator_on_known_registers() {
        // Expected values: PFCOUNT of the same dense values in
        // redis-server 7.0.15.
        assert_eq!(count(&dense_of(|_| 0)), Ok(0));
        assert_eq!(count(&dense_of(|i| (i == 0) as u8)), Ok(1));
        assert_eq!(count(&dense_of(|_| 1)), Ok(23637));
        assert_eq!(count(&dense_of(|i| (i % 52) as u8)), Ok(303_516));
        // Past what a long long holds: Redis's llroundl gives LLONG_MIN.
        assert_eq!(count(&dense_of(|_| 50)), Ok(1 << 63));
        assert_eq!(count(&dense_of(|_| 51)), Ok(1 << 63));
        assert_eq!(count(&dense_of(|_| 63)), Ok(1 << 63));
    }

    #[test]
    fn corrupted_values_are_rejected() {
        assert_eq!(encoding(b"HYLL"), Err(NotHll));
        assert_eq!(
            encoding(b"HYLX\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"),
            Err(NotHll)
        );
        assert_eq!(
            encoding(b"HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"),
            Err(NotHll)
        );
        // Dense of the wrong length.
        assert_eq!(
            encoding(b"HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"),
            Err(NotHll)
        );
        // Sparse covering too few or too many registers.
        let mut short = new_sparse();
        short.pop();
        short.pop();
        short.extend_from_slice(&xzero_op(100));
        assert_eq!(count(&short), Err(Corrupt));
        assert_eq!(merge(&mut [0; REGISTERS], &short), Err(Corrupt));
        assert_eq!(to_dense(&mut short.clone()), Err(Corrupt));
        assert_eq!(
            set_register(&mut short.clone(), 16000, 1, 3000),
            Err(Corrupt)
        );
        let mut long = new_sparse();
        long.extend_from_slice(b"hello");
        assert_eq!(count(&long), Err(Corrupt));
        assert_eq!(merge(&mut [0; REGISTERS], &long), Err(Corrupt));
        // Empty sparse body, truncated XZERO, huge runs: errors, no panic.
        let header = new_sparse()[..HDR_SIZE].to_vec();
        assert_eq!(set_register(&mut header.clone(), 0, 1, 3000), Err(Corrupt));
        assert_eq!(count(&header), Err(Corrupt));
        let mut cut = header.clone();
        cut.push(0x40);
        assert_eq!(count(&cut), Err(Corrupt));
        assert_eq!(decode(&cut), "Z:1");
        let _ = set_register(&mut cut.clone(), 0, 1, 3000);
        let mut cut2 = header.clone();
        cut2.extend_from_slice(&[0x7f, 0xff, 0x7f]);
        let _ = set_register(&mut cut2, 16384 + 5, 1, 3000);
        let mut huge = header.clone();
        for _ in 0..200_000 {
            huge.extend_from_slice(&[0x7f, 0xff]);
        }
        huge.push(0xfc);
        assert_eq!(count(&huge), Err(Corrupt));
        assert_eq!(merge(&mut [0; REGISTERS], &huge), Err(Corrupt));
        assert_eq!(to_dense(&mut huge.clone()), Err(Corrupt));
        let _ = set_register(&mut huge.clone(), 3, 1, 3000);
        // VAL runs past the last register.
        let mut over = header.clone();
        over.extend_from_slice(&xzero_op(16383));
        over.push(val_op(5, 4));
        assert_eq!(count(&over), Err(Corrupt));
        assert_eq!(merge(&mut [0; REGISTERS], &over), Err(Corrupt));
        assert_eq!(to_dense(&mut over.clone()), Err(Corrupt));
    }

    #[test]
    fn random_bytes_never_panic() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..2000 {
            let mut v = hll_of(
                (0..rng.gen_range(0..3000)).map(|i: u32| i.to_le_bytes().to_vec()),
                3000,
            );
            for _ in 0..rng.gen_range(1..6) {
                let pos = rng.gen_range(0..v.len());
                v[pos] = rng.gen();
            }
            if round % 3 == 0 {
                v.truncate(rng.gen_range(HDR_SIZE..=v.len()));
            }
            if encoding(&v).is_err() {
                continue;
            }
            let _ = count(&v);
            let _ = merge(&mut [0; REGISTERS], &v);
            let _ = decode(&v);
            let mut w = v.clone();
            for e in 0..50u32 {
                if add(&mut w, &e.to_be_bytes(), 3000).is_err() {
                    break;
                }
            }
            let _ = to_dense(&mut v);
        }
    }
}
