//! Geohash math as Redis computes it (geohash.c, geohash_helper.c, the
//! search of geo.c): the 52-bit interleaved score of a point, its decoding,
//! the 9 boxes that cover a search area, the haversine distance, and the
//! orderings Redis's sorts leave results in. No RESP, no I/O.
//!
//! Every formula keeps Redis's operations in Redis's order: replies print
//! 17 digits of coordinates and 4 of distances, and which points a search
//! returns depends on the last bit of the same `sin`/`cos`/`asin` calls
//! (the C library's, as Redis's).

use super::zset::ZSet;

pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
/// The Web Mercator limits (EPSG:900913): a geo set cannot hold the poles.
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// Bits per coordinate in a score (52 bits in all).
pub const STEP_MAX: u8 = 26;

const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
/// `M_PI / 180.0`, as Redis's `D_R` macro.
const D_R: f64 = std::f64::consts::PI / 180.0;

#[inline]
fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

#[inline]
fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// A geohash of `step` bits per coordinate (Redis's GeoHashBits). All
/// zeros marks a box excluded from a search.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HashBits {
    pub bits: u64,
    pub step: u8,
}

impl HashBits {
    fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

#[derive(Debug, Clone, Copy)]
struct Range {
    min: f64,
    max: f64,
}

#[derive(Debug, Clone, Copy)]
struct Area {
    lon: Range,
    lat: Range,
}

const WGS84_LON: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
const WGS84_LAT: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// Spreads the bits of `x` over the even positions and those of `y` over
/// the odd ones.
fn interleave64(x: u32, y: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (x as u64, y as u64);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// The inverse of [`interleave64`]: even bits in the low word, odd bits
/// in the high word.
fn deinterleave64(v: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let (mut x, mut y) = (v, v >> 1);
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// Redis's geohashEncode: `None` outside the WGS84 limits or the ranges.
fn encode(lon_range: Range, lat_range: Range, lon: f64, lat: f64, step: u8) -> Option<HashBits> {
    if step > 32 || step == 0 {
        return None;
    }
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min) * scale;
    Some(HashBits {
        bits: interleave64(lat_offset as u32, lon_offset as u32),
        step,
    })
}

/// The geohash of a point with Redis's geo-set ranges.
pub fn encode_wgs84(lon: f64, lat: f64, step: u8) -> Option<HashBits> {
    encode(WGS84_LON, WGS84_LAT, lon, lat, step)
}

/// Redis's geohashDecode: the box a hash names.
fn decode(lon_range: Range, lat_range: Range, hash: HashBits) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let lon_scale = lon_range.max - lon_range.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    let div = (1u64 << hash.step) as f64;
    Some(Area {
        lat: Range {
            min: lat_range.min + (ilato as f64 * 1.0 / div) * lat_scale,
            // `ilato + 1` in 32 bits, as C's unsigned arithmetic.
            max: lat_range.min + (ilato.wrapping_add(1) as f64 * 1.0 / div) * lat_scale,
        },
        lon: Range {
            min: lon_range.min + (ilono as f64 * 1.0 / div) * lon_scale,
            max: lon_range.min + (ilono.wrapping_add(1) as f64 * 1.0 / div) * lon_scale,
        },
    })
}

/// The 52-bit score of a hash (Redis's geohashAlign52Bits).
pub fn align52(hash: HashBits) -> u64 {
    hash.bits << (52 - hash.step as u32 * 2)
}

/// C's `(uint64_t)` of a double as gcc compiles it for x86-64: a geo
/// command reads any sorted set, whatever its scores.
pub fn double_to_u64(v: f64) -> u64 {
    const TWO63: f64 = 9223372036854775808.0;
    if v >= TWO63 {
        (double_to_i64(v - TWO63) as u64) ^ (1 << 63)
    } else {
        double_to_i64(v) as u64
    }
}

/// C's `(long long)` of a double on x86-64 (`cvttsd2si`: out of range and
/// NaN give the minimum).
pub fn double_to_i64(v: f64) -> i64 {
    const TWO63: f64 = 9223372036854775808.0;
    if v.is_nan() || !(-TWO63..TWO63).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

/// The score of a point, or `None` outside the limits.
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode_wgs84(lon, lat, STEP_MAX).map(align52)
}

/// The point a score stands for: the centre of its box, clamped to the
/// limits (Redis's decodeGeohash).
pub fn decode_score(score: f64) -> [f64; 2] {
    let hash = HashBits {
        bits: double_to_u64(score),
        step: STEP_MAX,
    };
    // A step-26 hash is never the zero hash, so decoding succeeds.
    let area = decode(WGS84_LON, WGS84_LAT, hash).unwrap_or(Area {
        lon: WGS84_LON,
        lat: WGS84_LAT,
    });
    let lon = ((area.lon.min + area.lon.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.lat.min + area.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [lon, lat]
}

/// The standard 11-character geohash of a score: Redis decodes it and
/// encodes again with latitudes -90..90; the 11th character is always
/// `0` (52 bits fill only 10).
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = decode_score(score);
    let bits = encode(
        Range {
            min: -180.0,
            max: 180.0,
        },
        Range {
            min: -90.0,
            max: 90.0,
        },
        lon,
        lat,
        STEP_MAX,
    )
    .map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - hash.step as u32 * 2;
    let mut x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let y = hash.bits & 0x5555555555555555;
    let zz = 0x5555555555555555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaaaaaaaaaaaaaau64 >> shift;
    hash.bits = x | y;
}

fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - hash.step as u32 * 2;
    let x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let mut y = hash.bits & 0x5555555555555555;
    let zz = 0xaaaaaaaaaaaaaaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555555555555555u64 >> shift;
    hash.bits = x | y;
}

/// The 8 neighbours of `hash`, in the order Redis scans them: north,
/// south, east, west, north-east, north-west, south-east, south-west.
fn neighbors(hash: HashBits) -> [HashBits; 8] {
    let at = |dx: i8, dy: i8| {
        let mut h = hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    [
        at(0, 1),
        at(0, -1),
        at(1, 0),
        at(-1, 0),
        at(1, 1),
        at(-1, 1),
        at(1, -1),
        at(-1, -1),
    ]
}

/// Great-circle distance in meters (haversine), as Redis 7.0's
/// geohashGetDistance.
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lat1r = deg_rad(lat1d);
    let lon1r = deg_rad(lon1d);
    let lat2r = deg_rad(lat2d);
    let lon2r = deg_rad(lon2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let v = ((lon2r - lon1r) / 2.0).sin();
    2.0 * EARTH_RADIUS_IN_METERS * (u * u + lat1r.cos() * lat2r.cos() * v * v).sqrt().asin()
}

/// The bits per coordinate of the 9 search boxes for a radius.
fn estimate_steps(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    // Meridians converge towards the poles: wider boxes.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// What a search covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShapeKind {
    /// BYRADIUS: a radius, in the unit.
    Radius(f64),
    /// BYBOX: width and height, in the unit.
    Box { width: f64, height: f64 },
}

/// A search area: its centre, its size, and the unit's size in meters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    pub kind: ShapeKind,
    pub conversion: f64,
}

impl Shape {
    /// Min longitude, min latitude, max longitude, max latitude (Redis's
    /// geohashBoundingBox).
    fn bounding_box(&self) -> [f64; 4] {
        let (h, w) = match self.kind {
            ShapeKind::Radius(r) => (r, r),
            ShapeKind::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.conversion * h;
        let width = self.conversion * w;
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat - lat_delta).cos());
        let delta = if self.lat < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.lon - delta,
            self.lat - lat_delta,
            self.lon + delta,
            self.lat + lat_delta,
        ]
    }

    /// The distance from the centre to a point inside the shape, `None`
    /// outside (Redis's geoAppendIfWithinShape).
    pub fn contains(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.kind {
            ShapeKind::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                // Only "farther than" is outside: a NaN distance (or
                // radius) is inside, as in Redis.
                if d > r * self.conversion {
                    None
                } else {
                    Some(d)
                }
            }
            ShapeKind::Box { width, height } => {
                let (width_m, height_m) = (width * self.conversion, height * self.conversion);
                let lon_distance = distance(lon, lat, self.lon, lat);
                let lat_distance = distance(lon, lat, lon, self.lat);
                if lon_distance > width_m / 2.0 || lat_distance > height_m / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// The 9 boxes to scan, in Redis's order (centre, N, S, E, W, NE, NW,
    /// SE, SW); a zero hash is a box left out (Redis's
    /// geohashCalculateAreasByShapeWGS84).
    pub fn areas(&self) -> [HashBits; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounding_box();
        let radius_meters = match self.kind {
            ShapeKind::Radius(r) => r,
            ShapeKind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut steps = estimate_steps(radius_meters, self.lat);
        let cover = |steps: u8| {
            let hash = encode(WGS84_LON, WGS84_LAT, self.lon, self.lat, steps).unwrap_or_default();
            (hash, neighbors(hash))
        };
        let (mut hash, mut nb) = cover(steps);
        let dec = |h: HashBits| decode(WGS84_LON, WGS84_LAT, h);
        // A neighbour too close to the search area's edge to cover it:
        // one step coarser.
        let (north, south, east, west) = (dec(nb[0]), dec(nb[1]), dec(nb[2]), dec(nb[3]));
        let decrease = north.is_some_and(|a| a.lat.max < max_lat)
            || south.is_some_and(|a| a.lat.min > min_lat)
            || east.is_some_and(|a| a.lon.max < max_lon)
            || west.is_some_and(|a| a.lon.min > min_lon);
        if steps > 1 && decrease {
            steps -= 1;
            (hash, nb) = cover(steps);
        }
        if steps >= 2 {
            if let Some(area) = dec(hash) {
                const N: usize = 0;
                const S: usize = 1;
                const E: usize = 2;
                const W: usize = 3;
                const NE: usize = 4;
                const NW: usize = 5;
                const SE: usize = 6;
                const SW: usize = 7;
                let zero = HashBits::default();
                if area.lat.min < min_lat {
                    (nb[S], nb[SW], nb[SE]) = (zero, zero, zero);
                }
                if area.lat.max > max_lat {
                    (nb[N], nb[NE], nb[NW]) = (zero, zero, zero);
                }
                if area.lon.min < min_lon {
                    (nb[W], nb[SW], nb[NW]) = (zero, zero, zero);
                }
                if area.lon.max > max_lon {
                    (nb[E], nb[SE], nb[NE]) = (zero, zero, zero);
                }
            }
        }
        [hash, nb[0], nb[1], nb[2], nb[3], nb[4], nb[5], nb[6], nb[7]]
    }
}

/// A point found by a search.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point {
    pub member: Vec<u8>,
    pub score: f64,
    pub lon: f64,
    pub lat: f64,
    /// In meters.
    pub dist: f64,
}

/// The members of `z` inside `shape`, in Redis's scan order: box by box,
/// each in score order. With `limit` (ANY), the scan stops once that many
/// are found.
pub fn search(z: &ZSet, shape: &Shape, limit: usize) -> Vec<Point> {
    let areas = shape.areas();
    let mut found = Vec::new();
    let mut last = 0;
    for (i, hash) in areas.iter().enumerate() {
        if hash.is_zero() {
            continue;
        }
        // Huge radii make adjacent boxes equal: skip a repeat of the box
        // just scanned (index 0 never counts as scanned, as in Redis).
        if last != 0 && *hash == areas[last] {
            continue;
        }
        if !found.is_empty() && limit != 0 && found.len() >= limit {
            break;
        }
        let min = align52(*hash) as f64;
        let max = align52(HashBits {
            bits: hash.bits + 1,
            step: hash.step,
        }) as f64;
        let first = z.count_while(|s, _| s < min);
        let end = z.count_while(|s, _| s < max);
        let mut full = false;
        z.for_range(first, end, false, |score, member| {
            if full {
                return;
            }
            let [lon, lat] = decode_score(score);
            if let Some(dist) = shape.contains(lon, lat) {
                found.push(Point {
                    member: member.to_vec(),
                    score,
                    lon,
                    lat,
                    dist,
                });
            }
            full = limit != 0 && found.len() >= limit;
        });
        last = i;
    }
    found
}

/// Redis's comparator: by distance, NaN below everything.
fn cmp_dist(a: &Point, b: &Point, desc: bool) -> i32 {
    let c = if a.dist > b.dist {
        1
    } else if a.dist == b.dist {
        0
    } else {
        -1
    };
    if desc {
        -c
    } else {
        c
    }
}

/// Orders `points` by distance as Redis leaves them: all of them with the
/// C library's qsort (glibc's merge sort: stable), or, when only the first
/// `returned` are replied, with Redis's partial quicksort (pqsort), whose
/// order among equal distances is its own.
pub fn sort(points: &mut [Point], desc: bool, returned: usize) {
    let cmp = |a: &Point, b: &Point| cmp_dist(a, b, desc);
    if returned >= points.len() {
        merge_sort(points, &cmp);
    } else if returned > 0 {
        let n = points.len();
        pqsort(points, 0, n, &cmp, 0, returned - 1);
    }
}

/// glibc's msort: top-down, left half first, ties from the left. Sorts
/// indices, then permutes (glibc sorts pointers for large elements).
fn merge_sort(points: &mut [Point], cmp: &impl Fn(&Point, &Point) -> i32) {
    fn sort_idx(idx: &mut [usize], tmp: &mut Vec<usize>, cmp: &impl Fn(usize, usize) -> i32) {
        let n = idx.len();
        if n <= 1 {
            return;
        }
        let n1 = n / 2;
        sort_idx(&mut idx[..n1], tmp, cmp);
        sort_idx(&mut idx[n1..], tmp, cmp);
        tmp.clear();
        let (mut i, mut j) = (0, n1);
        while i < n1 && j < n {
            if cmp(idx[i], idx[j]) <= 0 {
                tmp.push(idx[i]);
                i += 1;
            } else {
                tmp.push(idx[j]);
                j += 1;
            }
        }
        tmp.extend_from_slice(&idx[i..n1]);
        // What is left of the right half is already in place.
        idx[..tmp.len()].copy_from_slice(tmp);
    }
    let mut idx: Vec<usize> = (0..points.len()).collect();
    let mut tmp = Vec::with_capacity(points.len());
    sort_idx(&mut idx, &mut tmp, &|a, b| cmp(&points[a], &points[b]));
    let mut taken: Vec<Point> = points.iter_mut().map(std::mem::take).collect();
    for (dst, src) in idx.into_iter().enumerate() {
        points[dst] = std::mem::take(&mut taken[src]);
    }
}

fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> i32) -> usize {
    if cmp(&v[a], &v[b]) < 0 {
        if cmp(&v[b], &v[c]) < 0 {
            b
        } else if cmp(&v[a], &v[c]) < 0 {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) > 0 {
        b
    } else if cmp(&v[a], &v[c]) < 0 {
        a
    } else {
        c
    }
}

fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for k in 0..n {
        v.swap(a + k, b + k);
    }
}

/// Redis's pqsort (Bentley-McIlroy quicksort, from NetBSD's qsort) over
/// `v[a..a + n]`, recursing only into partitions that overlap the ranks
/// `lo..=hi` the caller will read.
fn pqsort<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> i32,
    lo: usize,
    hi: usize,
) {
    let overlaps = |s: usize, m: usize| !(hi < s || lo >= s + m);
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) > 0 {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let r = cmp(&v[pb], &v[a]);
                if r > 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let r = cmp(&v[pc], &v[a]);
                if r < 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && overlaps(a, r) {
            pqsort(v, a, r, cmp, lo, hi);
        }
        let r = pd - pc;
        if r > 1 {
            a = pn - r;
            n = r;
            if overlaps(a, n) {
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::zset::ZLimits;

    #[test]
    fn interleave_round_trips() {
        for (x, y) in [
            (0u32, 0u32),
            (1, 0),
            (0, 1),
            (0x3ffffff, 0x1234567),
            (u32::MAX, 7),
        ] {
            let v = interleave64(x, y);
            let d = deinterleave64(v);
            assert_eq!((d as u32, (d >> 32) as u32), (x, y));
        }
    }

    #[test]
    fn scores_match_redis() {
        // GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
        // then ZSCORE, on redis-server 7.0.
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698));
        assert_eq!(score_of(15.087269, 37.502669), Some(3479447370796909));
        assert_eq!(score_of(181.0, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
        // GEOPOS prints the centre of the box.
        let [lon, lat] = decode_score(3479099956230698.0);
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
    }

    #[test]
    fn decode_encode_round_trip() {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let lon = (x % 360_000_000) as f64 / 1e6 - 180.0;
            let lat = ((x >> 32) % 170_000_000) as f64 / 1e6 - 85.0;
            let score = score_of(lon, lat).unwrap();
            let [dlon, dlat] = decode_score(score as f64);
            assert!((dlon - lon).abs() < 1e-5, "{lon} {dlon}");
            assert!((dlat - lat).abs() < 1e-5, "{lat} {dlat}");
            // The decoded point encodes to the same box.
            assert_eq!(score_of(dlon, dlat), Some(score));
        }
    }

    #[test]
    fn geohash_strings() {
        // GEOHASH g Palermo Catania on redis-server 7.0.
        assert_eq!(&geohash_string(3479099956230698.0), b"sqc8b49rny0");
        assert_eq!(&geohash_string(3479447370796909.0), b"sqdtr74hyu0");
    }

    #[test]
    fn distances() {
        let [a, b] = decode_score(3479099956230698.0);
        let [c, d] = decode_score(3479447370796909.0);
        // GEODIST g Palermo Catania: 166274.1516 (m).
        assert_eq!(format!("{:.4}", distance(a, b, c, d)), "166274.1516");
        assert_eq!(distance(a, b, a, b), 0.0);
        // Half the circumference between antipodes.
        let half = distance(0.0, 0.0, 180.0, 0.0);
        assert!((half - std::f64::consts::PI * EARTH_RADIUS_IN_METERS).abs() < 1e-6);
    }

    #[test]
    fn steps_by_radius() {
        assert_eq!(estimate_steps(0.0, 0.0), 26);
        // 1000 m doubles 15 times to pass the Mercator width: 16 - 2.
        assert_eq!(estimate_steps(1000.0, 0.0), 14);
        assert_eq!(estimate_steps(1000.0, 70.0), 13);
        assert_eq!(estimate_steps(1000.0, -85.0), 12);
        assert_eq!(estimate_steps(1e9, 0.0), 1);
    }

    #[test]
    fn neighbours_move_one_box() {
        let h = encode_wgs84(13.361389, 38.115556, 10).unwrap();
        let nb = neighbors(h);
        let centre = decode(WGS84_LON, WGS84_LAT, h).unwrap();
        let north = decode(WGS84_LON, WGS84_LAT, nb[0]).unwrap();
        let east = decode(WGS84_LON, WGS84_LAT, nb[2]).unwrap();
        assert_eq!(north.lat.min, centre.lat.max);
        assert_eq!(north.lon.min, centre.lon.min);
        assert_eq!(east.lon.min, centre.lon.max);
        assert_eq!(east.lat.min, centre.lat.min);
    }

    #[test]
    fn search_finds_points_in_radius_and_box() {
        let limits = ZLimits {
            max_entries: 128,
            max_value: 64,
        };
        let mut z = ZSet::new_for(1, limits);
        z.insert(
            b"Palermo",
            score_of(13.361389, 38.115556).unwrap() as f64,
            limits,
        );
        z.insert(
            b"Catania",
            score_of(15.087269, 37.502669).unwrap() as f64,
            limits,
        );
        let mut shape = Shape {
            lon: 15.0,
            lat: 37.0,
            kind: ShapeKind::Radius(200.0),
            conversion: 1000.0,
        };
        let mut found = search(&z, &shape, 0);
        let n = found.len();
        sort(&mut found, false, n);
        let names: Vec<&[u8]> = found.iter().map(|p| p.member.as_slice()).collect();
        assert_eq!(names, [b"Catania".as_slice(), b"Palermo"]);
        assert_eq!(format!("{:.4}", found[0].dist / 1000.0), "56.4413");
        shape.kind = ShapeKind::Radius(100.0);
        assert_eq!(search(&z, &shape, 0).len(), 1);
        shape.kind = ShapeKind::Box {
            width: 400.0,
            height: 400.0,
        };
        assert_eq!(search(&z, &shape, 0).len(), 2);
        assert_eq!(search(&z, &shape, 1).len(), 1);
    }

    #[test]
    fn partial_sort_orders_the_head() {
        let mut x: u64 = 12345;
        for n in [1usize, 5, 7, 8, 40, 41, 100, 500] {
            let mut pts: Vec<Point> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    Point {
                        member: i.to_string().into_bytes(),
                        dist: (x % 50) as f64,
                        ..Point::default()
                    }
                })
                .collect();
            let mut all = pts.clone();
            sort(&mut all, false, n);
            assert!(all.windows(2).all(|w| w[0].dist <= w[1].dist));
            let k = n.div_ceil(3);
            sort(&mut pts, false, k);
            let head: Vec<f64> = pts[..k].iter().map(|p| p.dist).collect();
            let want: Vec<f64> = all[..k].iter().map(|p| p.dist).collect();
            assert_eq!(head, want, "n={n}");
        }
    }
}
