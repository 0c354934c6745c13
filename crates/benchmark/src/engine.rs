//! The load engine: runs one test against one server with N connections
//! spread over worker threads, each an edge-triggered epoll loop.
//!
//! Closed loop (default, like redis-benchmark): every connection keeps one
//! pipeline batch of `-P` requests in flight and sends the next batch as
//! soon as the last reply arrives. Open loop (`--rate`): every connection
//! sends on a fixed schedule, and latency is measured from the *intended*
//! send time so a stalled server cannot hide its stalls (coordinated
//! omission). Hot path: requests are appended to a reused buffer from a
//! pre-encoded template, replies are delimited with `resp::skip_reply`, and
//! latencies go to a thread-local HdrHistogram; nothing allocates.

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use hdrhistogram::Histogram;

use crate::cli::{Config, Target};
use crate::cluster::{key_slot, Route, SlotMap};
use crate::conn::{self, Stream};
use crate::poll::{self, Epoll, Timer, READABLE, WRITABLE};
use crate::workload::{KeyGen, Kind, RequestGen, Rng, Test};

/// Latencies are recorded in microseconds, as redis-benchmark does.
pub fn new_histogram(precision: u8) -> Histogram<u64> {
    // 1 µs .. 1 hour: open-loop runs against a stalled server can produce
    // huge corrected latencies; they must be kept, not clamped.
    Histogram::new_with_bounds(1, 3_600_000_000, precision.clamp(1, 5)).unwrap_or_else(|_| {
        // Unreachable with these bounds; fall back to auto-resizing.
        let mut h = Histogram::new(3).unwrap_or_else(|_| unreachable!());
        h.auto(true);
        h
    })
}

#[repr(align(64))]
struct Padded(AtomicU64);

struct Shared {
    epoch: Instant,
    issued: AtomicU64,
    limit: u64,
    finished: Vec<Padded>,
    live: Option<Mutex<Histogram<u64>>>,
    stop: AtomicBool,
    last_err_sec: AtomicU64,
}

impl Shared {
    #[inline]
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Claims up to `want` requests of the `-n` budget.
    #[inline]
    fn claim(&self, want: u64) -> u64 {
        if self.limit == u64::MAX {
            return want;
        }
        let prev = self.issued.fetch_add(want, Ordering::Relaxed);
        if prev >= self.limit {
            0
        } else {
            want.min(self.limit - prev)
        }
    }
}

struct Settings {
    pipeline: usize,
    keepalive: bool,
    showerrors: bool,
    cluster: bool,
    /// Open loop: per-connection interval between intended sends.
    interval_ns: Option<u64>,
    /// Replies that make one request (see `Template::replies`).
    replies_per_request: usize,
    measure_start: u64,
    end_ns: u64,
    handshake: Vec<Vec<Vec<u8>>>,
}

struct Conn {
    stream: Stream,
    target: Target,
    gen: RequestGen,
    obuf: Vec<u8>,
    opos: usize,
    ibuf: Vec<u8>,
    ilen: usize,
    ipos: usize,
    /// Send (or intended send) time of each in-flight request, in order.
    stamps: VecDeque<u64>,
    /// Replies received for the oldest in-flight request so far, and
    /// whether one of them was an error.
    partial: usize,
    partial_err: bool,
    next_due: u64,
    done: bool,
    finished: bool,
}

/// What one worker thread measured.
pub struct WorkerStats {
    pub hist: Histogram<u64>,
    live: Option<Histogram<u64>>,
    pub finished: u64,
    pub errors: u64,
    pub redirects: u64,
    pub replies_total: u64,
    pub handshake_cmds: u64,
    pub connections: u64,
    /// Commands sent outside the data path (CLUSTER SLOTS refreshes).
    pub control_cmds: u64,
    pub last_reply_ns: u64,
    pub cpu_secs: f64,
    pub error_samples: Vec<String>,
    need_refresh: bool,
}

/// Everything needed to run one test.
pub struct Plan<'a> {
    pub cfg: &'a Config,
    pub target: &'a Target,
    pub test: &'a Test,
    pub cluster: Option<Arc<SlotMap>>,
    pub progress: bool,
}

/// Aggregated outcome of one test run.
pub struct RunResult {
    pub hist: Histogram<u64>,
    pub finished: u64,
    pub errors: u64,
    pub redirects: u64,
    /// Every reply on benchmark connections, warmup included.
    pub replies_total: u64,
    /// AUTH/HELLO/SELECT/TRACKING commands sent by connection handshakes,
    /// plus CLUSTER SLOTS refreshes.
    pub handshake_cmds: u64,
    pub connections: u64,
    /// Measured window, seconds (first send to last reply).
    pub elapsed: f64,
    /// Wall time of the whole run including warmup, seconds.
    pub wall: f64,
    pub threads: usize,
    pub thread_cpu: Vec<f64>,
    pub process_cpu: (f64, f64),
    pub error_samples: Vec<String>,
}

impl RunResult {
    pub fn rps(&self) -> f64 {
        if self.elapsed > 0.0 {
            self.finished as f64 / self.elapsed
        } else {
            0.0
        }
    }
}

fn route_for(map: &Option<Arc<SlotMap>>, test: &Test, g: usize) -> (Option<Route>, Option<Target>) {
    match map {
        Some(m) => {
            // A command with one fixed key can only be served by the key's
            // owner: send every connection there instead of collecting MOVEDs.
            let fixed = match &test.kind {
                Kind::Fixed(t) if t.rand.is_empty() && t.tags.is_empty() => t
                    .key_span
                    .map(|(s, l)| m.owner[key_slot(&t.bytes[s..s + l]) as usize] as usize)
                    .filter(|&n| n < m.masters.len()),
                _ => None,
            };
            let node = fixed.unwrap_or(g % m.masters.len());
            (
                Some(Route::new(m.clone(), node)),
                Some(m.masters[node].clone()),
            )
        }
        None => (None, None),
    }
}

/// Opens all connections of a run (sequentially, before the clock starts:
/// connection setup is not part of what redis-benchmark measures either).
fn open_conns(plan: &Plan, seed: u64) -> Result<Vec<Conn>> {
    let cfg = plan.cfg;
    let keys = KeyGen::new(cfg.key_pattern, cfg.keyspace());
    let cmds = conn::handshake_commands(cfg, plan.cluster.is_some());
    let mut seeder = Rng::new(seed);
    let mut conns = Vec::with_capacity(cfg.clients);
    for g in 0..cfg.clients {
        let (route, node) = route_for(&plan.cluster, plan.test, g);
        let target = node.unwrap_or_else(|| plan.target.clone());
        let stream = conn::open(&target, &cmds)?;
        conns.push(Conn {
            stream,
            target,
            gen: RequestGen::new(
                plan.test.kind.clone(),
                keys.clone(),
                seeder.next_u64(),
                route,
            ),
            obuf: Vec::with_capacity(4096),
            opos: 0,
            ibuf: vec![0; 16 * 1024],
            ilen: 0,
            ipos: 0,
            stamps: VecDeque::with_capacity(cfg.pipeline.max(1)),
            partial: 0,
            partial_err: false,
            next_due: 0,
            done: false,
            finished: false,
        });
    }
    Ok(conns)
}

/// Runs one test. `on_tick` is called about every 250 ms from the calling
/// thread with (finished so far, interval histogram, elapsed seconds).
pub fn run(plan: &Plan, mut on_tick: impl FnMut(u64, &Histogram<u64>, f64)) -> Result<RunResult> {
    let cfg = plan.cfg;
    let nthreads = cfg.threads.max(1).min(cfg.clients.max(1));
    let conns = open_conns(plan, rand::random::<u64>())?;
    let cmds = conn::handshake_commands(cfg, plan.cluster.is_some());
    let handshake_total = (cmds.len() * conns.len()) as u64;
    let shared = Shared {
        epoch: Instant::now(),
        issued: AtomicU64::new(0),
        limit: if cfg.duration.is_some() {
            u64::MAX
        } else {
            cfg.requests
        },
        finished: (0..nthreads).map(|_| Padded(AtomicU64::new(0))).collect(),
        live: plan
            .progress
            .then(|| Mutex::new(new_histogram(cfg.precision))),
        stop: AtomicBool::new(false),
        last_err_sec: AtomicU64::new(0),
    };
    let total_clients = conns.len().max(1) as u64;
    let start = shared.now();
    let measure_start = start + (cfg.warmup * 1e9) as u64;
    let settings = Settings {
        pipeline: cfg.pipeline.max(1),
        keepalive: cfg.keepalive,
        showerrors: cfg.showerrors,
        cluster: plan.cluster.is_some(),
        interval_ns: cfg
            .rate
            .map(|r| ((total_clients as f64) * 1e9 / r).max(1.0) as u64),
        replies_per_request: match &plan.test.kind {
            Kind::Fixed(t) => t.replies.max(1),
            Kind::Mixed(_) => 1,
        },
        measure_start,
        end_ns: cfg
            .duration
            .map(|d| measure_start + (d * 1e9) as u64)
            .unwrap_or(u64::MAX),
        handshake: cmds,
    };
    // Deal connections round-robin to threads, as redis-benchmark does.
    let mut per_thread: Vec<Vec<(usize, Conn)>> = (0..nthreads).map(|_| Vec::new()).collect();
    for (g, c) in conns.into_iter().enumerate() {
        per_thread[g % nthreads].push((g, c));
    }
    let cpu0 = poll::process_cpu();
    let wall0 = Instant::now();
    let mut overall_live = plan.progress.then(|| new_histogram(cfg.precision));
    let outcome: Vec<Result<WorkerStats>> = std::thread::scope(|scope| {
        let handles: Vec<_> = per_thread
            .into_iter()
            .enumerate()
            .map(|(tid, mine)| {
                let shared = &shared;
                let settings = &settings;
                let cluster = plan.cluster.clone();
                let cfg = plan.cfg;
                std::thread::Builder::new()
                    .name(format!("bench-{tid}"))
                    .spawn_scoped(scope, move || {
                        let r = worker(tid, mine, shared, settings, cfg, cluster, total_clients);
                        if r.is_err() {
                            shared.stop.store(true, Ordering::Relaxed);
                        }
                        r
                    })
            })
            .collect();
        // Progress ticks from this thread while the workers run.
        let mut next_tick = Instant::now() + Duration::from_millis(250);
        loop {
            std::thread::sleep(Duration::from_millis(5));
            let all_done = handles
                .iter()
                .all(|h| h.as_ref().map(|h| h.is_finished()).unwrap_or(true));
            if all_done {
                break;
            }
            if Instant::now() >= next_tick {
                next_tick += Duration::from_millis(250);
                let finished: u64 = shared
                    .finished
                    .iter()
                    .map(|p| p.0.load(Ordering::Relaxed))
                    .sum();
                if let (Some(live), Some(overall)) = (&shared.live, overall_live.as_mut()) {
                    let mut h = match live.lock() {
                        Ok(h) => h,
                        Err(p) => p.into_inner(),
                    };
                    let _ = overall.add(&*h);
                    let now = shared.now();
                    let secs = now.saturating_sub(measure_start) as f64 / 1e9;
                    on_tick(finished, &h, secs);
                    h.reset();
                }
            }
        }
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("worker thread panicked"))),
                Err(e) => Err(e.into()),
            })
            .collect()
    });
    let wall = wall0.elapsed().as_secs_f64();
    let cpu1 = poll::process_cpu();
    let mut res = RunResult {
        hist: new_histogram(cfg.precision),
        finished: 0,
        errors: 0,
        redirects: 0,
        replies_total: 0,
        handshake_cmds: handshake_total,
        connections: total_clients,
        elapsed: 0.0,
        wall,
        threads: nthreads,
        thread_cpu: Vec::new(),
        process_cpu: (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1),
        error_samples: Vec::new(),
    };
    let mut last_reply = 0;
    for w in outcome {
        let w = w?;
        let _ = res.hist.add(&w.hist);
        res.finished += w.finished;
        res.errors += w.errors;
        res.redirects += w.redirects;
        res.replies_total += w.replies_total;
        res.handshake_cmds += w.handshake_cmds + w.control_cmds;
        res.connections += w.connections;
        res.thread_cpu.push(w.cpu_secs);
        last_reply = last_reply.max(w.last_reply_ns);
        for e in w.error_samples {
            if res.error_samples.len() < 5 {
                res.error_samples.push(e);
            }
        }
    }
    res.elapsed = last_reply.saturating_sub(measure_start) as f64 / 1e9;
    Ok(res)
}

struct Worker<'a> {
    shared: &'a Shared,
    set: &'a Settings,
    poll: Epoll,
    conns: Vec<Conn>,
    st: WorkerStats,
    cluster: Option<Arc<SlotMap>>,
    cfg: &'a Config,
    last_refresh: Option<Instant>,
    timer: Option<Timer>,
}

const TIMER_TOKEN: u64 = u64::MAX;

fn worker(
    tid: usize,
    mine: Vec<(usize, Conn)>,
    shared: &Shared,
    set: &Settings,
    cfg: &Config,
    cluster: Option<Arc<SlotMap>>,
    total_clients: u64,
) -> Result<WorkerStats> {
    let cpu0 = poll::thread_cpu();
    let mut w = Worker {
        shared,
        set,
        poll: Epoll::new(mine.len() + 1)?,
        conns: Vec::with_capacity(mine.len()),
        st: WorkerStats {
            hist: new_histogram(cfg.precision),
            live: shared.live.as_ref().map(|_| new_histogram(cfg.precision)),
            finished: 0,
            errors: 0,
            redirects: 0,
            replies_total: 0,
            handshake_cmds: 0,
            connections: 0,
            control_cmds: 0,
            last_reply_ns: 0,
            cpu_secs: 0.0,
            error_samples: Vec::new(),
            need_refresh: false,
        },
        cluster,
        cfg,
        last_refresh: None,
        timer: None,
    };
    if set.interval_ns.is_some() {
        let t = Timer::new()?;
        w.poll.add(t.fd(), TIMER_TOKEN)?;
        w.timer = Some(t);
    }
    let start = set.measure_start - (cfg.warmup * 1e9) as u64;
    for (i, (g, mut c)) in mine.into_iter().enumerate() {
        w.poll.add(c.stream.fd(), i as u64)?;
        if let Some(iv) = set.interval_ns {
            // Stagger connections evenly over one schedule period.
            c.next_due = start + (g as u64) * iv / total_clients;
        }
        w.conns.push(c);
    }
    let r = w.main_loop(tid);
    let cpu1 = poll::thread_cpu();
    w.st.cpu_secs = (cpu1.0 + cpu1.1) - (cpu0.0 + cpu0.1);
    r?;
    Ok(w.st)
}

impl Worker<'_> {
    fn main_loop(&mut self, tid: usize) -> Result<()> {
        let open_loop = self.set.interval_ns.is_some();
        let mut active = self.conns.len();
        if !open_loop {
            for i in 0..self.conns.len() {
                self.issue_batch(i)?;
                active -= self.check_finished(i) as usize;
            }
        }
        let mut last_pub = self.shared.now();
        while active > 0 {
            if self.shared.stop.load(Ordering::Relaxed) {
                break;
            }
            let timeout = if open_loop {
                self.open_loop_timeout()?
            } else {
                250
            };
            let n = self.poll.wait(timeout)?;
            for e in 0..n {
                let (tok, flags) = self.poll.event(e);
                if tok == TIMER_TOKEN {
                    if let Some(t) = &self.timer {
                        t.drain();
                    }
                    continue;
                }
                let i = tok as usize;
                if i >= self.conns.len() || self.conns[i].finished {
                    continue;
                }
                if flags & READABLE != 0 {
                    self.readable(i)?;
                }
                if flags & WRITABLE != 0 && self.conns[i].opos < self.conns[i].obuf.len() {
                    flush(&mut self.conns[i])?;
                }
                active -= self.check_finished(i) as usize;
            }
            let now = self.shared.now();
            if open_loop {
                for i in 0..self.conns.len() {
                    if !self.conns[i].finished {
                        self.pump(i, now)?;
                        active -= self.check_finished(i) as usize;
                    }
                }
            }
            if self.st.need_refresh {
                self.refresh_slots();
            }
            if now.saturating_sub(last_pub) >= 250_000_000 {
                last_pub = now;
                self.publish(tid);
            }
        }
        self.publish(tid);
        Ok(())
    }

    fn publish(&mut self, tid: usize) {
        self.shared.finished[tid]
            .0
            .store(self.st.finished, Ordering::Relaxed);
        if let (Some(local), Some(shared)) = (self.st.live.as_mut(), self.shared.live.as_ref()) {
            if let Ok(mut h) = shared.lock() {
                let _ = h.add(&*local);
            }
            local.reset();
        }
    }

    fn check_finished(&mut self, i: usize) -> bool {
        let c = &mut self.conns[i];
        if !c.finished && c.done && c.stamps.is_empty() && c.opos >= c.obuf.len() {
            c.finished = true;
            self.poll.delete(c.stream.fd());
            return true;
        }
        false
    }

    /// Arms the timer for the next due send; returns the epoll timeout.
    fn open_loop_timeout(&self) -> Result<i32> {
        let now = self.shared.now();
        let mut next = u64::MAX;
        for c in &self.conns {
            if !c.done && c.stamps.len() < self.set.pipeline {
                next = next.min(c.next_due);
            }
        }
        if next == u64::MAX {
            return Ok(100);
        }
        if next <= now {
            return Ok(0);
        }
        match &self.timer {
            Some(t) => {
                t.arm(next - now)?;
                Ok(100)
            }
            None => Ok((next - now).div_ceil(1_000_000).min(100) as i32),
        }
    }

    /// Closed loop: send the next pipeline batch on connection `i`.
    fn issue_batch(&mut self, i: usize) -> Result<()> {
        let now = self.shared.now();
        let c = &mut self.conns[i];
        if now >= self.set.end_ns {
            c.done = true;
            return Ok(());
        }
        let want = self.set.pipeline as u64;
        let k = if now < self.set.measure_start {
            want
        } else {
            self.shared.claim(want)
        };
        if k == 0 {
            c.done = true;
            return Ok(());
        }
        c.gen.fill(&mut c.obuf, k as usize);
        let stamp = self.shared.now();
        for _ in 0..k {
            c.stamps.push_back(stamp);
        }
        flush(c)
    }

    /// Open loop: send every request of connection `i` that is due.
    fn pump(&mut self, i: usize, now: u64) -> Result<()> {
        let Some(iv) = self.set.interval_ns else {
            return Ok(());
        };
        let c = &mut self.conns[i];
        let mut added = false;
        while !c.done && c.next_due <= now && c.stamps.len() < self.set.pipeline {
            if c.next_due >= self.set.end_ns {
                c.done = true;
                break;
            }
            if c.next_due >= self.set.measure_start && self.shared.claim(1) == 0 {
                c.done = true;
                break;
            }
            c.gen.fill(&mut c.obuf, 1);
            c.stamps.push_back(c.next_due);
            c.next_due += iv;
            added = true;
        }
        if added {
            flush(c)?;
        }
        Ok(())
    }

    fn readable(&mut self, i: usize) -> Result<()> {
        loop {
            let c = &mut self.conns[i];
            if c.ilen == c.ibuf.len() {
                if c.ipos > 0 {
                    c.ibuf.copy_within(c.ipos..c.ilen, 0);
                    c.ilen -= c.ipos;
                    c.ipos = 0;
                } else {
                    let n = c.ibuf.len() * 2;
                    c.ibuf.resize(n, 0);
                }
            }
            let space = c.ibuf.len() - c.ilen;
            match c.stream.read(&mut c.ibuf[c.ilen..]) {
                Ok(0) => {
                    if c.stamps.is_empty() && c.done {
                        return Ok(());
                    }
                    bail!("Error: Server closed the connection ({})", c.target.label());
                }
                Ok(n) => {
                    c.ilen += n;
                    let now = self.shared.now();
                    self.consume(i, now)?;
                    // A short read drained the socket: with edge-triggered
                    // epoll, new data will raise a new event.
                    if n < space {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => bail!("Error: {e}"),
            }
        }
        let c = &self.conns[i];
        if self.set.interval_ns.is_none() && c.stamps.is_empty() && !c.done {
            if !self.set.keepalive {
                self.reconnect(i)?;
            }
            self.issue_batch(i)?;
        } else if self.set.interval_ns.is_some() {
            let now = self.shared.now();
            self.pump(i, now)?;
        }
        Ok(())
    }

    /// Delimits and accounts every complete reply buffered on connection `i`.
    fn consume(&mut self, i: usize, now: u64) -> Result<()> {
        let c = &mut self.conns[i];
        let st = &mut self.st;
        let set = self.set;
        while c.ipos < c.ilen {
            let buf = &c.ibuf[c.ipos..c.ilen];
            let n = match resp::skip_reply(buf) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(_) => bail!("Error: protocol error in reply from {}", c.target.label()),
            };
            let tag = buf[0];
            if tag == b'>' {
                // RESP3 push (e.g. tracking invalidation): not a reply.
                c.ipos += n;
                continue;
            }
            if c.stamps.is_empty() {
                bail!("Error: unexpected reply from {}", c.target.label());
            }
            st.replies_total += 1;
            if tag == b'-' || tag == b'!' {
                on_error_reply(&buf[..n], st, set, self.shared, &c.target);
                c.partial_err = true;
            }
            c.partial += 1;
            if c.partial < set.replies_per_request {
                c.ipos += n;
                continue;
            }
            let is_err = std::mem::take(&mut c.partial_err);
            c.partial = 0;
            let Some(stamp) = c.stamps.pop_front() else {
                bail!("Error: unexpected reply from {}", c.target.label());
            };
            if stamp >= set.measure_start {
                let us = now.saturating_sub(stamp) / 1000;
                st.hist.saturating_record(us);
                if let Some(l) = st.live.as_mut() {
                    l.saturating_record(us);
                }
                st.finished += 1;
                st.errors += is_err as u64;
                st.last_reply_ns = now;
            }
            c.ipos += n;
        }
        if c.ipos == c.ilen {
            c.ipos = 0;
            c.ilen = 0;
        }
        Ok(())
    }

    /// `-k 0`: a new connection for every batch.
    fn reconnect(&mut self, i: usize) -> Result<()> {
        let c = &mut self.conns[i];
        self.poll.delete(c.stream.fd());
        let s = conn::open(&c.target, &self.set.handshake)?;
        self.poll.add(s.fd(), i as u64)?;
        c.stream = s;
        c.ipos = 0;
        c.ilen = 0;
        self.st.handshake_cmds += self.set.handshake.len() as u64;
        self.st.connections += 1;
        Ok(())
    }

    /// After MOVED/ASK: re-read the slot map (at most once a second per
    /// thread) so the generators pick keys/tags the nodes really own.
    fn refresh_slots(&mut self) {
        self.st.need_refresh = false;
        if self
            .last_refresh
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last_refresh = Some(Instant::now());
        let Some(old) = self.cluster.clone() else {
            return;
        };
        if self.set.showerrors {
            println!("Cluster slots configuration changed, fetching new one...");
        }
        // The refresh's AUTH + CLUSTER SLOTS count in the server's stats.
        self.st.control_cmds += 1 + self.cfg.auth.is_some() as u64;
        let Ok(map) = crate::cluster::connect_and_fetch(&old.masters[0], self.cfg) else {
            return;
        };
        let map = Arc::new(map);
        for c in &mut self.conns {
            if let Some(node) = map.masters.iter().position(|m| *m == c.target) {
                c.gen.route = Some(Route::new(map.clone(), node));
            }
        }
        self.cluster = Some(map);
    }
}

fn on_error_reply(
    reply: &[u8],
    st: &mut WorkerStats,
    set: &Settings,
    shared: &Shared,
    target: &Target,
) {
    // "-ERR msg\r\n" or RESP3 "!len\r\nmsg\r\n".
    let msg: &[u8] = if reply[0] == b'-' {
        &reply[1..reply.len().saturating_sub(2)]
    } else {
        let hdr = reply
            .iter()
            .position(|&b| b == b'\n')
            .map(|p| p + 1)
            .unwrap_or(0);
        &reply[hdr..reply.len().saturating_sub(2)]
    };
    if set.cluster && (msg.starts_with(b"MOVED") || msg.starts_with(b"ASK")) {
        st.redirects += 1;
        st.need_refresh = true;
    } else if set.cluster && msg.starts_with(b"CLUSTERDOWN") {
        st.need_refresh = true;
    }
    if st.error_samples.len() < 5 {
        st.error_samples
            .push(String::from_utf8_lossy(msg).into_owned());
    }
    if set.showerrors {
        // At most one error line per second, like redis-benchmark.
        let sec = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let last = shared.last_err_sec.load(Ordering::Relaxed);
        if last != sec
            && shared
                .last_err_sec
                .compare_exchange(last, sec, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let m = String::from_utf8_lossy(msg);
            if set.cluster {
                println!("Error from server {}: {}", target.label(), m);
            } else {
                println!("Error from server: {m}");
            }
        }
    }
}

fn flush(c: &mut Conn) -> Result<()> {
    while c.opos < c.obuf.len() {
        match c.stream.write(&c.obuf[c.opos..]) {
            Ok(0) => bail!("Error writing to the server: connection closed"),
            Ok(n) => c.opos += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => bail!("Error writing to the server: {e}"),
        }
    }
    c.obuf.clear();
    c.opos = 0;
    Ok(())
}

/// `-I`: open the connections and keep them idle until killed.
pub fn idle(cfg: &Config, target: &Target, progress: bool) -> Result<()> {
    println!(
        "Creating {} idle connections and waiting forever (Ctrl+C when done)",
        cfg.clients
    );
    let cmds = conn::handshake_commands(cfg, false);
    let mut conns = Vec::with_capacity(cfg.clients);
    for _ in 0..cfg.clients {
        conns.push(conn::open(target, &cmds)?);
        if progress {
            print!("clients: {}\r", conns.len());
            use std::io::Write;
            let _ = std::io::stdout().flush();
        }
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
