//! What to send: the default test list (titles and commands exactly as
//! redis-benchmark 7.0 builds them), custom commands, the memtier-style mixed
//! SET/GET workload, key-choice patterns, and the per-connection request
//! generator that fills output buffers without allocating.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::cli::{Config, KeyPattern};
use crate::cluster::Route;

/// The placeholder redis-benchmark patches with 12 random digits.
pub const RAND_INT: &[u8] = b"__rand_int__";
/// Cluster-mode placeholder patched with a hash tag for a slot of the node.
pub const TAG: &[u8] = b"{tag}";

/// A pre-encoded request with the byte offsets to patch per request.
#[derive(Debug, Clone)]
pub struct Template {
    pub bytes: Vec<u8>,
    /// Offsets of `__rand_int__` occurrences (only when `-r` is given).
    pub rand: Vec<usize>,
    /// Offsets of `{tag}` occurrences (cluster mode only).
    pub tags: Vec<usize>,
    /// Span of argv[1] (the usual key) in `bytes`, for cluster routing of
    /// commands without `{tag}`.
    pub key_span: Option<(usize, usize)>,
    /// Replies one request gets: 1, or the number of commands of a
    /// sequence (`MULTI ; INCR a ; EXEC`), sent together and timed to the
    /// last reply.
    pub replies: usize,
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        if &hay[i..i + needle.len()] == needle {
            out.push(i);
            i += needle.len();
        } else {
            i += 1;
        }
    }
    out
}

impl Template {
    pub fn from_argv(argv: &[Vec<u8>], randomize: bool, cluster: bool) -> Template {
        let mut bytes = Vec::new();
        resp::encode::command(&mut bytes, argv);
        let key_span = argv.get(1).and_then(|k| {
            // argv[1]'s data follows "$<len>\r\n" after argv[0]'s bulk.
            let hdr0 = format!("*{}\r\n${}\r\n", argv.len(), argv[0].len()).len();
            let start = hdr0 + argv[0].len() + 2 + format!("${}\r\n", k.len()).len();
            (start + k.len() <= bytes.len()).then_some((start, k.len()))
        });
        Template::finish(bytes, randomize, cluster, key_span)
    }

    pub fn raw(bytes: &[u8], randomize: bool, cluster: bool) -> Template {
        Template::finish(bytes.to_vec(), randomize, cluster, None)
    }

    /// Several commands sent as one request (a transaction, say).
    pub fn sequence(cmds: &[&[Vec<u8>]], randomize: bool, cluster: bool) -> Template {
        let mut bytes = Vec::new();
        for argv in cmds {
            resp::encode::command(&mut bytes, argv);
        }
        let mut t = Template::finish(bytes, randomize, cluster, None);
        t.replies = cmds.len().max(1);
        t
    }

    fn finish(
        bytes: Vec<u8>,
        randomize: bool,
        cluster: bool,
        key_span: Option<(usize, usize)>,
    ) -> Template {
        let rand = if randomize {
            find_all(&bytes, RAND_INT)
        } else {
            Vec::new()
        };
        let tags = if cluster {
            find_all(&bytes, TAG)
        } else {
            Vec::new()
        };
        Template {
            bytes,
            rand,
            tags,
            key_span,
            replies: 1,
        }
    }
}

#[derive(Debug, Clone)]
pub struct MixedSpec {
    pub sets: u32,
    pub gets: u32,
    pub size: (usize, usize),
    pub data: Arc<Vec<u8>>,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Fixed(Arc<Template>),
    Mixed(MixedSpec),
}

#[derive(Debug, Clone)]
pub struct Test {
    pub title: String,
    pub kind: Kind,
    /// Payload size shown in the report ("N bytes payload").
    pub datasize: usize,
}

/// redis-benchmark's `genBenchmarkRandomData` (#7196): printable bytes from
/// an LCG whose state persists across calls, so `-l` loops change data.
pub fn gen_random_data(state: &mut u32, count: usize) -> Vec<u8> {
    (0..count)
        .map(|_| {
            *state = state.wrapping_mul(1103515245).wrapping_add(12345);
            b'0' + ((*state >> 16) & 63) as u8
        })
        .collect()
}

fn argv(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// The default suite, in redis-benchmark's order, filtered by `-t`.
pub fn default_tests(cfg: &Config, data_state: &mut u32) -> Vec<Test> {
    let data = gen_random_data(data_state, cfg.datasize);
    let d = data.as_slice();
    let tag: &[u8] = if cfg.cluster { b":{tag}" } else { b"" };
    let cat = |a: &[u8], b: &[u8]| -> Vec<u8> { [a, b].concat() };
    let key = cat(b"key", &cat(tag, b":__rand_int__"));
    let counter = cat(b"counter", &cat(tag, b":__rand_int__"));
    let mylist = cat(b"mylist", tag);
    let myset = cat(b"myset", tag);
    let myhash = cat(b"myhash", tag);
    let myzset = cat(b"myzset", tag);
    let (r, c) = (cfg.randomkeys, cfg.cluster);
    let sel = |n: &str| cfg.test_is_selected(n);
    let mut tests = Vec::new();
    let mut push = |title: &str, t: Template| {
        tests.push(Test {
            title: title.to_string(),
            kind: Kind::Fixed(Arc::new(t)),
            datasize: cfg.datasize,
        })
    };
    if sel("ping_inline") || sel("ping") {
        push("PING_INLINE", Template::raw(b"PING\r\n", r, c));
    }
    if sel("ping_mbulk") || sel("ping") {
        push("PING_MBULK", Template::from_argv(&argv(&[b"PING"]), r, c));
    }
    if sel("set") {
        push("SET", Template::from_argv(&argv(&[b"SET", &key, d]), r, c));
    }
    if sel("get") {
        push("GET", Template::from_argv(&argv(&[b"GET", &key]), r, c));
    }
    if sel("incr") {
        push(
            "INCR",
            Template::from_argv(&argv(&[b"INCR", &counter]), r, c),
        );
    }
    if sel("lpush") {
        push(
            "LPUSH",
            Template::from_argv(&argv(&[b"LPUSH", &mylist, d]), r, c),
        );
    }
    if sel("rpush") {
        push(
            "RPUSH",
            Template::from_argv(&argv(&[b"RPUSH", &mylist, d]), r, c),
        );
    }
    if sel("lpop") {
        push(
            "LPOP",
            Template::from_argv(&argv(&[b"LPOP", &mylist]), r, c),
        );
    }
    if sel("rpop") {
        push(
            "RPOP",
            Template::from_argv(&argv(&[b"RPOP", &mylist]), r, c),
        );
    }
    if sel("sadd") {
        let a = argv(&[b"SADD", &myset, b"element:__rand_int__"]);
        push("SADD", Template::from_argv(&a, r, c));
    }
    if sel("hset") {
        let a = argv(&[b"HSET", &myhash, b"element:__rand_int__", d]);
        push("HSET", Template::from_argv(&a, r, c));
    }
    if sel("spop") {
        push("SPOP", Template::from_argv(&argv(&[b"SPOP", &myset]), r, c));
    }
    if sel("zadd") {
        let score: &[u8] = if r { RAND_INT } else { b"0" };
        let a = argv(&[b"ZADD", &myzset, score, b"element:__rand_int__"]);
        push("ZADD", Template::from_argv(&a, r, c));
    }
    if sel("zpopmin") {
        push(
            "ZPOPMIN",
            Template::from_argv(&argv(&[b"ZPOPMIN", &myzset]), r, c),
        );
    }
    if sel("lrange")
        || sel("lrange_100")
        || sel("lrange_300")
        || sel("lrange_500")
        || sel("lrange_600")
    {
        push(
            "LPUSH (needed to benchmark LRANGE)",
            Template::from_argv(&argv(&[b"LPUSH", &mylist, d]), r, c),
        );
    }
    for (n, stop, name) in [
        (100, &b"99"[..], "lrange_100"),
        (300, b"299", "lrange_300"),
        (500, b"499", "lrange_500"),
        (600, b"599", "lrange_600"),
    ] {
        if sel("lrange") || sel(name) {
            let a = argv(&[b"LRANGE", &mylist, b"0", stop]);
            push(
                &format!("LRANGE_{n} (first {n} elements)"),
                Template::from_argv(&a, r, c),
            );
        }
    }
    if sel("mset") {
        let mut a = vec![b"MSET".to_vec()];
        for _ in 0..10 {
            a.push(key.clone());
            a.push(data.clone());
        }
        push("MSET (10 keys)", Template::from_argv(&a, r, c));
    }
    tests
}

/// The test for a command given on the command line. A `;` argument
/// separates commands that make one request (keel extension): e.g.
/// `MULTI ';' INCR a ';' INCR b ';' EXEC` times whole transactions.
pub fn custom_test(cfg: &Config, command: &[Vec<u8>]) -> Test {
    let title = command
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let cmds: Vec<&[Vec<u8>]> = command
        .split(|a| a.as_slice() == b";")
        .filter(|c| !c.is_empty())
        .collect();
    let t = if cmds.len() > 1 {
        Template::sequence(&cmds, cfg.randomkeys, cfg.cluster)
    } else {
        Template::from_argv(command, cfg.randomkeys, cfg.cluster)
    };
    let datasize = t.bytes.len();
    Test {
        title,
        kind: Kind::Fixed(Arc::new(t)),
        datasize,
    }
}

/// The memtier-style mixed SET/GET test (`--ratio`).
pub fn mixed_test(cfg: &Config, data_state: &mut u32) -> Option<Test> {
    let (sets, gets) = cfg.ratio?;
    let size = cfg.data_size_range.unwrap_or((cfg.datasize, cfg.datasize));
    let data = Arc::new(gen_random_data(data_state, size.1));
    Some(Test {
        title: format!("SET:GET {sets}:{gets}"),
        kind: Kind::Mixed(MixedSpec {
            sets,
            gets,
            size,
            data,
        }),
        datasize: size.1,
    })
}

/// Small fast PRNG (wyrand): the hot path draws one or two numbers per
/// request, so it must be a few instructions.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) ^ t) as u64
    }

    /// Uniform in [0, n) (Lemire's multiply-shift; bias is negligible).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in (0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// Zipf sampler by rejection-inversion (Hörmann & Derflinger 1996): O(1)
/// setup and sampling, so a 100M keyspace costs nothing to prepare.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    pub fn new(n: u64, s: f64) -> Zipf {
        let mut z = Zipf {
            n: n.max(1) as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.cut = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.s) * lx) * lx
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }

    /// Rank in [0, n), 0 the most popular.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64 - 1;
            }
        }
    }
}

fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// Chooses the number patched into `__rand_int__` / mixed-workload keys.
#[derive(Debug, Clone)]
pub struct KeyGen {
    pattern: KeyPattern,
    max: u64,
    zipf: Option<Arc<Zipf>>,
    seq: Arc<AtomicU64>,
}

impl KeyGen {
    pub fn new(pattern: KeyPattern, max: u64) -> KeyGen {
        let zipf =
            (pattern == KeyPattern::Zipfian && max > 0).then(|| Arc::new(Zipf::new(max, 0.99)));
        KeyGen {
            pattern,
            max,
            zipf,
            seq: Arc::new(AtomicU64::new(0)),
        }
    }

    #[inline]
    pub fn next(&self, rng: &mut Rng) -> u64 {
        // As redis-benchmark: `-r 0` (or no keyspace) always yields 0.
        if self.max == 0 {
            return 0;
        }
        match self.pattern {
            KeyPattern::Uniform => rng.below(self.max),
            KeyPattern::Sequential => self.seq.fetch_add(1, Ordering::Relaxed) % self.max,
            KeyPattern::Gaussian => {
                // memtier's default: centred, stddev = range/6.
                let (u1, u2) = (rng.unit(), rng.unit());
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let m = self.max as f64;
                (m / 2.0 + z * m / 6.0).clamp(0.0, m - 1.0) as u64
            }
            KeyPattern::Zipfian => match &self.zipf {
                Some(z) => z.sample(rng),
                None => 0,
            },
        }
    }
}

/// Writes `r` as 12 zero-padded digits ending at `buf[end]` (inclusive),
/// exactly like redis-benchmark's randomizeClientKey.
#[inline]
pub fn patch_digits(buf: &mut [u8], start: usize, mut r: u64) {
    for j in (0..12).rev() {
        buf[start + j] = b'0' + (r % 10) as u8;
        r /= 10;
    }
}

/// Per-connection request generator: appends encoded requests to a reused
/// output buffer.
pub struct RequestGen {
    kind: Kind,
    keys: KeyGen,
    rng: Rng,
    mixed_pos: u32,
    pub route: Option<Route>,
    /// Scratch for formatting lengths.
    itoa: [u8; 20],
}

impl RequestGen {
    pub fn new(kind: Kind, keys: KeyGen, seed: u64, route: Option<Route>) -> RequestGen {
        RequestGen {
            kind,
            keys,
            rng: Rng::new(seed),
            mixed_pos: 0,
            route,
            itoa: [0; 20],
        }
    }

    /// Appends `n` requests to `out`.
    pub fn fill(&mut self, out: &mut Vec<u8>, n: usize) {
        for _ in 0..n {
            self.fill_one(out);
        }
    }

    #[inline]
    fn fill_one(&mut self, out: &mut Vec<u8>) {
        match &self.kind {
            Kind::Fixed(t) => {
                let base = out.len();
                out.extend_from_slice(&t.bytes);
                if !t.tags.is_empty() {
                    if let Some(route) = self.route.as_mut() {
                        let tag = route.next_tag();
                        for &off in &t.tags {
                            out[base + off + 1..base + off + 4].copy_from_slice(&tag);
                        }
                    }
                }
                if t.rand.is_empty() {
                    return;
                }
                // In cluster mode without {tag}, redraw until argv[1] hashes
                // to a slot this connection's node owns.
                let route_key = match (&self.route, t.tags.is_empty(), t.key_span) {
                    (Some(_), true, Some(span)) => Some(span),
                    _ => None,
                };
                for _attempt in 0..256 {
                    for &off in &t.rand {
                        let r = self.keys.next(&mut self.rng);
                        patch_digits(out, base + off, r);
                    }
                    match (route_key, &self.route) {
                        (Some((s, l)), Some(route)) => {
                            if route.owns_key(&out[base + s..base + s + l]) {
                                break;
                            }
                        }
                        _ => break,
                    }
                }
            }
            Kind::Mixed(m) => {
                let is_set = self.mixed_pos < m.sets;
                self.mixed_pos += 1;
                if self.mixed_pos >= m.sets + m.gets {
                    self.mixed_pos = 0;
                }
                let mut key = *b"key:000000000000";
                for _attempt in 0..256 {
                    patch_digits(&mut key, 4, self.keys.next(&mut self.rng));
                    match &self.route {
                        Some(route) if !route.owns_key(&key) => continue,
                        _ => break,
                    }
                }
                if is_set {
                    let len = if m.size.0 == m.size.1 {
                        m.size.0
                    } else {
                        m.size.0 + self.rng.below((m.size.1 - m.size.0 + 1) as u64) as usize
                    };
                    out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$16\r\n");
                    out.extend_from_slice(&key);
                    out.extend_from_slice(b"\r\n$");
                    let digits = fmt_usize(&mut self.itoa, len);
                    out.extend_from_slice(digits);
                    out.extend_from_slice(b"\r\n");
                    out.extend_from_slice(&m.data[..len]);
                    out.extend_from_slice(b"\r\n");
                } else {
                    out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$16\r\n");
                    out.extend_from_slice(&key);
                    out.extend_from_slice(b"\r\n");
                }
            }
        }
    }
}

fn fmt_usize(buf: &mut [u8; 20], mut v: usize) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn random_data_matches_redis_benchmark() {
        // redis-benchmark 7.0 sends "VXK" as the default 3-byte value.
        let mut st = 1234;
        assert_eq!(gen_random_data(&mut st, 3), b"VXK");
    }

    #[test]
    fn templates_patch_digits() {
        let t = Template::from_argv(&argv(&[b"SET", b"key:__rand_int__", b"v"]), true, false);
        assert_eq!(t.rand.len(), 1);
        assert_eq!(
            t.key_span.map(|(s, l)| &t.bytes[s..s + l]),
            Some(&b"key:__rand_int__"[..])
        );
        let mut g = RequestGen::new(
            Kind::Fixed(Arc::new(t)),
            KeyGen::new(KeyPattern::Uniform, 100),
            1,
            None,
        );
        let mut out = Vec::new();
        g.fill(&mut out, 2);
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("key:0000000000"), "{s}");
        assert!(!s.contains("__rand_int__"));
    }

    #[test]
    fn sequences_are_one_request() {
        let cmds = argv(&[b"MULTI", b";", b"INCR", b"c", b";", b"EXEC"]);
        let groups: Vec<&[Vec<u8>]> = cmds.split(|a| a.as_slice() == b";").collect();
        let t = Template::sequence(&groups, false, false);
        assert_eq!(t.replies, 3);
        assert_eq!(
            t.bytes,
            b"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nc\r\n*1\r\n$4\r\nEXEC\r\n"
        );
    }

    #[test]
    fn mixed_ratio_and_sizes() {
        let spec = MixedSpec {
            sets: 1,
            gets: 3,
            size: (5, 9),
            data: Arc::new(vec![b'x'; 9]),
        };
        let mut g = RequestGen::new(
            Kind::Mixed(spec),
            KeyGen::new(KeyPattern::Zipfian, 1000),
            7,
            None,
        );
        let mut out = Vec::new();
        g.fill(&mut out, 8);
        let mut pos = 0;
        let mut sets = 0;
        let mut dec = resp::RequestDecoder::new(1 << 20);
        while pos < out.len() {
            let n = dec.decode(&out[pos..]).unwrap().unwrap();
            if dec.arg(&out[pos..], 0) == b"SET" {
                sets += 1;
                let len = dec.arg(&out[pos..], 2).len();
                assert!((5..=9).contains(&len));
            }
            pos += n;
        }
        assert_eq!(sets, 2);
    }

    #[test]
    fn zipf_is_skewed() {
        let z = Zipf::new(1000, 0.99);
        let mut rng = Rng::new(3);
        let mut low = 0;
        for _ in 0..10000 {
            let k = z.sample(&mut rng);
            assert!(k < 1000);
            if k < 10 {
                low += 1;
            }
        }
        assert!(low > 3000, "{low}");
    }
}
