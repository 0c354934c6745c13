//! Server statistics. Per-command counters live per worker thread and are
//! written only by that thread, so counting a call never bounces a cache
//! line between cores; INFO sums the threads.
//!
//! What Redis 7.0 reports from them: commandstats (calls, usec, rejected
//! and failed calls), latencystats (per-command latency histograms, as
//! Redis's hdr_histogram: 1 ns to 1 s, 2 significant digits), errorstats
//! (error replies by their first word), the instantaneous rates sampled by
//! the cron, and the counters of reads and writes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// Redis's LATENCY_HISTOGRAM_MIN_VALUE / MAX_VALUE (nanoseconds) and
/// LATENCY_HISTOGRAM_PRECISION.
const HIST_MIN_NS: u64 = 1;
const HIST_MAX_NS: u64 = 1_000_000_000;
const HIST_DIGITS: u8 = 2;

/// Distinct error codes kept, as Redis's ERROR_STATS_NUMBER: past it new
/// codes are not counted in errorstats (total_error_replies still is).
const ERROR_CODES_MAX: usize = 128;

/// Counts of a histogram with Redis's bounds, laid out as hdrhistogram
/// lays them out (unit 1, 256 sub-buckets, 128 per doubling), in atomics
/// the owner thread bumps without a lock: recording is an index
/// computation and a load and a store (a locked `Histogram` cost ~3% of a
/// pipelined GET's CPU). Readers rebuild an `hdrhistogram::Histogram`
/// from them, bucket for bucket.
struct Counts(Box<[AtomicU64]>);

/// log2 of the sub-buckets per doubling (2 significant digits: 256
/// sub-buckets, half of them per doubling past the first).
const HALF_MAGNITUDE: u32 = 7;
const SUB_MASK: u64 = (1 << (HALF_MAGNITUDE + 1)) - 1;
/// Indexes up to HIST_MAX_NS: (23 doublings + 1) × 128.
const COUNTS_LEN: usize = 24 << HALF_MAGNITUDE;

impl Counts {
    fn new() -> Counts {
        Counts((0..COUNTS_LEN).map(|_| AtomicU64::new(0)).collect())
    }

    /// hdrhistogram's counts index of `v` (unit magnitude 0).
    #[inline]
    fn index(v: u64) -> usize {
        let bucket = 64 - HALF_MAGNITUDE - 1 - (v | SUB_MASK).leading_zeros();
        let sub = v >> bucket;
        // Added before the subtraction: below 128 (bucket 0) `sub` is
        // under the half count.
        ((((bucket + 1) as usize) << HALF_MAGNITUDE) + sub as usize) - (1 << HALF_MAGNITUDE)
    }

    /// The lowest value counted at `index`.
    fn value_at(index: usize) -> u64 {
        let bucket = (index >> HALF_MAGNITUDE) as i64 - 1;
        let sub = (index & ((1 << HALF_MAGNITUDE) - 1)) as u64 + (1 << HALF_MAGNITUDE);
        if bucket < 0 {
            sub - (1 << HALF_MAGNITUDE)
        } else {
            sub << bucket
        }
    }

    #[inline]
    fn record(&self, ns: u64) {
        if let Some(c) = self.0.get(Self::index(ns)) {
            bump(c, 1);
        }
    }

    fn add_to(&self, h: &mut Histogram<u64>) {
        for (i, c) in self.0.iter().enumerate() {
            let n = c.load(Relaxed);
            if n > 0 {
                // Within the bounds: the index came from one.
                let _ = h.record_n(Self::value_at(i), n);
            }
        }
    }

    fn clear(&self) {
        for c in self.0.iter() {
            c.store(0, Relaxed);
        }
    }
}

pub fn new_histogram() -> Histogram<u64> {
    // The bounds are constants Histogram accepts (low ≥ 1, high ≥ 2·low,
    // digits ≤ 5).
    Histogram::new_with_bounds(HIST_MIN_NS, HIST_MAX_NS, HIST_DIGITS)
        .unwrap_or_else(|_| unreachable!("constant histogram bounds"))
}

#[derive(Default)]
pub struct CmdStat {
    pub calls: AtomicU64,
    /// Nanoseconds: the sum of calls shorter than a microsecond counts.
    pub ns: AtomicU64,
    pub failed: AtomicU64,
    pub rejected: AtomicU64,
}

pub struct ThreadStats {
    pub cmds: Vec<CmdStat>,
    /// Latency histograms by command id, allocated on a command's first
    /// call on this thread (24 KB each); only the owner thread records.
    hists: Vec<OnceLock<Counts>>,
    /// Error replies by code (the first word of the error); rare, so a
    /// map under a lock.
    errors: Mutex<HashMap<Box<[u8]>, u64>>,
    pub error_replies: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    /// The largest query and output buffers seen since the cron last
    /// took them (`client_recent_max_*`).
    pub peak_input_buffer: AtomicU64,
    pub peak_output_buffer: AtomicU64,
    /// The worker's command past the pause gate, if any.
    pub in_flight: crate::clients::pause::InFlight,
}

/// Owner-thread increment: a load and a store, no locked instruction.
#[inline]
fn bump(a: &AtomicU64, n: u64) {
    a.store(a.load(Relaxed).wrapping_add(n), Relaxed);
}

/// The error code Redis counts an error reply under: its first word when
/// a space comes within 32 bytes, else "ERR" (Redis's afterErrorReply).
pub fn error_code(msg: &[u8]) -> &[u8] {
    let msg = msg.strip_prefix(b"-").unwrap_or(msg);
    match msg[..msg.len().min(32)].iter().position(|&c| c == b' ') {
        Some(n) => &msg[..n],
        None => b"ERR",
    }
}

impl ThreadStats {
    pub fn new(commands: usize) -> ThreadStats {
        ThreadStats {
            cmds: (0..commands).map(|_| CmdStat::default()).collect(),
            hists: (0..commands).map(|_| OnceLock::new()).collect(),
            errors: Mutex::new(HashMap::new()),
            error_replies: AtomicU64::new(0),
            net_input_bytes: AtomicU64::new(0),
            net_output_bytes: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            peak_input_buffer: AtomicU64::new(0),
            peak_output_buffer: AtomicU64::new(0),
            in_flight: crate::clients::pause::InFlight::default(),
        }
    }

    /// A call of command `id` that took `took`; `track`: whether
    /// `latency-tracking` is on.
    #[inline]
    pub fn record(&self, id: usize, took: Duration, failed: bool, track: bool) {
        self.record_run(id, took, failed, track, true);
    }

    /// One run of a command that may block: counted as a call only when
    /// it is the client's request (`first`), not when a blocked client
    /// runs it again; its time always; its latency (`track`) by the
    /// caller's choice: Redis's call() and updateStatsOnUnblock.
    pub fn record_run(&self, id: usize, took: Duration, failed: bool, track: bool, first: bool) {
        let Some(s) = self.cmds.get(id) else {
            return;
        };
        if first {
            bump(&s.calls, 1);
        }
        bump(&s.ns, took.as_nanos() as u64);
        if failed {
            bump(&s.failed, 1);
        }
        if track {
            self.record_latency(id, took);
        }
    }

    #[inline]
    fn record_latency(&self, id: usize, took: Duration) {
        let ns = (took.as_nanos() as u64).clamp(HIST_MIN_NS, HIST_MAX_NS);
        if let Some(slot) = self.hists.get(id) {
            slot.get_or_init(Counts::new).record(ns);
        }
    }

    /// A command refused before it ran (None: unknown command).
    pub fn rejected(&self, id: Option<usize>) {
        // An unknown command is counted only in errorstats, as Redis.
        if let Some(s) = id.and_then(|id| self.cmds.get(id)) {
            bump(&s.rejected, 1);
        }
    }

    /// An error reply `msg` (with or without its leading '-') was sent.
    pub fn error_reply(&self, msg: &[u8]) {
        bump(&self.error_replies, 1);
        let code = error_code(msg);
        let mut errors = self.errors.lock();
        if let Some(n) = errors.get_mut(code) {
            *n += 1;
        } else if errors.len() < ERROR_CODES_MAX {
            errors.insert(code.into(), 1);
        }
    }

    #[inline]
    pub fn add_net(&self, input: u64, output: u64) {
        bump(&self.net_input_bytes, input);
        bump(&self.net_output_bytes, output);
    }

    /// One read (`input` bytes) and, when `wrote`, one write system call.
    #[inline]
    pub fn add_io(&self, reads: u64, writes: u64) {
        bump(&self.reads, reads);
        bump(&self.writes, writes);
    }

    /// A connection's buffers at the end of a batch.
    #[inline]
    pub fn buffers_seen(&self, input: u64, output: u64) {
        if input > self.peak_input_buffer.load(Relaxed) {
            self.peak_input_buffer.store(input, Relaxed);
        }
        if output > self.peak_output_buffer.load(Relaxed) {
            self.peak_output_buffer.store(output, Relaxed);
        }
    }

    fn reset(&self) {
        for c in &self.cmds {
            c.calls.store(0, Relaxed);
            c.ns.store(0, Relaxed);
            c.failed.store(0, Relaxed);
            c.rejected.store(0, Relaxed);
        }
        for h in self.hists.iter().filter_map(OnceLock::get) {
            h.clear();
        }
        self.errors.lock().clear();
        for a in [
            &self.error_replies,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.reads,
            &self.writes,
        ] {
            a.store(0, Relaxed);
        }
    }
}

/// Totals of one command over all threads.
#[derive(Default, Clone, Copy)]
pub struct CmdTotals {
    pub calls: u64,
    pub usec: u64,
    pub failed: u64,
    pub rejected: u64,
}

/// Sums over the threads of the counters that are not per command.
#[derive(Default, Clone, Copy)]
pub struct Totals {
    pub error_replies: u64,
    pub net_input_bytes: u64,
    pub net_output_bytes: u64,
    pub reads: u64,
    pub writes: u64,
}

/// Redis's STATS_METRIC_SAMPLES: the instantaneous rates are the mean of
/// the last 16 samples, one taken every 100 ms.
const SAMPLES: usize = 16;

#[derive(Default)]
struct Metric {
    last_at: Option<Instant>,
    last_value: u64,
    samples: [f64; SAMPLES],
    next: usize,
}

impl Metric {
    fn sample(&mut self, now: Instant, value: u64) {
        if let Some(at) = self.last_at {
            let ms = now.duration_since(at).as_millis() as f64;
            let per_sec = if ms > 0.0 {
                value.saturating_sub(self.last_value) as f64 * 1000.0 / ms
            } else {
                0.0
            };
            self.samples[self.next] = per_sec;
            self.next = (self.next + 1) % SAMPLES;
        }
        self.last_at = Some(now);
        self.last_value = value;
    }

    fn mean(&self) -> f64 {
        self.samples.iter().sum::<f64>() / SAMPLES as f64
    }
}

/// The sampled rates behind `instantaneous_*`.
#[derive(Default)]
struct Rates {
    ops: Metric,
    input: Metric,
    output: Metric,
    /// Per-second peaks of the buffers (Redis keeps 8 seconds).
    input_peaks: [u64; 8],
    output_peaks: [u64; 8],
    peak_slot: usize,
    peak_at: Option<Instant>,
}

#[derive(Default)]
pub struct Stats {
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    rates: Mutex<Rates>,
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    /// `latency-tracking`, read on every call.
    pub latency_tracking: AtomicBool,
}

impl Stats {
    pub fn register_thread(&self, commands: usize) -> Arc<ThreadStats> {
        let t = Arc::new(ThreadStats::new(commands));
        self.threads.lock().push(t.clone());
        t
    }

    /// Waits until the commands running on every worker now have
    /// finished (after a pause was stored: `pause::InFlight`).
    pub fn wait_in_flight(&self) {
        let threads = self.threads.lock().clone();
        crate::clients::pause::wait_passed(threads.iter().map(|t| &t.in_flight));
    }

    pub fn command_totals(&self, commands: usize) -> Vec<CmdTotals> {
        let mut out = vec![CmdTotals::default(); commands];
        for t in self.threads.lock().iter() {
            for (o, c) in out.iter_mut().zip(&t.cmds) {
                o.calls += c.calls.load(Relaxed);
                o.usec += c.ns.load(Relaxed);
                o.failed += c.failed.load(Relaxed);
                o.rejected += c.rejected.load(Relaxed);
            }
        }
        for o in &mut out {
            o.usec /= 1000;
        }
        out
    }

    /// The latency histograms of the commands that have one, merged over
    /// the threads, by command id.
    pub fn histograms(&self) -> Vec<(usize, Histogram<u64>)> {
        let mut merged: Vec<(usize, Histogram<u64>)> = Vec::new();
        for t in self.threads.lock().iter() {
            for (id, h) in t.hists.iter().enumerate() {
                let Some(h) = h.get() else { continue };
                let at = match merged.iter().position(|(i, _)| *i == id) {
                    Some(at) => at,
                    None => {
                        merged.push((id, new_histogram()));
                        merged.len() - 1
                    }
                };
                h.add_to(&mut merged[at].1);
            }
        }
        // A command whose counts were all reset has no histogram (as
        // after Redis's RESETSTAT).
        merged.retain(|(_, h)| !h.is_empty());
        merged.sort_by_key(|(id, _)| *id);
        merged
    }

    /// Error replies by code, in code order.
    pub fn errors(&self) -> Vec<(Vec<u8>, u64)> {
        let mut all: HashMap<Vec<u8>, u64> = HashMap::new();
        for t in self.threads.lock().iter() {
            for (code, n) in t.errors.lock().iter() {
                *all.entry(code.to_vec()).or_default() += n;
            }
        }
        let mut v: Vec<(Vec<u8>, u64)> = all.into_iter().take(ERROR_CODES_MAX).collect();
        v.sort();
        v
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for s in self.threads.lock().iter() {
            t.error_replies += s.error_replies.load(Relaxed);
            t.net_input_bytes += s.net_input_bytes.load(Relaxed);
            t.net_output_bytes += s.net_output_bytes.load(Relaxed);
            t.reads += s.reads.load(Relaxed);
            t.writes += s.writes.load(Relaxed);
        }
        t
    }

    /// Commands processed (Redis's stat_numcommands: calls, not refused
    /// requests).
    pub fn commands_processed(&self) -> u64 {
        self.threads
            .lock()
            .iter()
            .flat_map(|t| t.cmds.iter())
            .map(|c| c.calls.load(Relaxed))
            .sum()
    }

    /// Called by the cron at least every 100 ms (Redis's
    /// trackInstantaneousMetric runs at that period).
    pub fn sample_rates(&self) {
        let now = Instant::now();
        let mut r = self.rates.lock();
        if r.ops
            .last_at
            .is_some_and(|at| now.duration_since(at) < Duration::from_millis(100))
        {
            return;
        }
        let ops = self.commands_processed();
        let t = self.totals();
        r.ops.sample(now, ops);
        r.input.sample(now, t.net_input_bytes);
        r.output.sample(now, t.net_output_bytes);
        // The buffers' peaks, one slot a second.
        let (mut input, mut output) = (0, 0);
        for s in self.threads.lock().iter() {
            input = input.max(s.peak_input_buffer.swap(0, Relaxed));
            output = output.max(s.peak_output_buffer.swap(0, Relaxed));
        }
        if r.peak_at
            .is_none_or(|at| now.duration_since(at) >= Duration::from_secs(1))
        {
            r.peak_slot = (r.peak_slot + 1) % 8;
            let slot = r.peak_slot;
            r.input_peaks[slot] = 0;
            r.output_peaks[slot] = 0;
            r.peak_at = Some(now);
        }
        let slot = r.peak_slot;
        r.input_peaks[slot] = r.input_peaks[slot].max(input);
        r.output_peaks[slot] = r.output_peaks[slot].max(output);
    }

    /// (ops/s, input KB/s, output KB/s) as INFO's instantaneous_* fields.
    pub fn instantaneous(&self) -> (u64, f64, f64) {
        let r = self.rates.lock();
        (
            r.ops.mean().round() as u64,
            r.input.mean() / 1024.0,
            r.output.mean() / 1024.0,
        )
    }

    /// (client_recent_max_input_buffer, client_recent_max_output_buffer).
    pub fn recent_max_buffers(&self) -> (u64, u64) {
        let r = self.rates.lock();
        (
            r.input_peaks.iter().copied().max().unwrap_or(0),
            r.output_peaks.iter().copied().max().unwrap_or(0),
        )
    }

    pub fn reset(&self) {
        for t in self.threads.lock().iter() {
            t.reset();
        }
        let mut r = self.rates.lock();
        let (input_peaks, output_peaks, slot, at) =
            (r.input_peaks, r.output_peaks, r.peak_slot, r.peak_at);
        *r = Rates::default();
        // Not statistics Redis resets: the buffers clients hold now.
        (r.input_peaks, r.output_peaks, r.peak_slot, r.peak_at) =
            (input_peaks, output_peaks, slot, at);
        self.connections_received.store(0, Relaxed);
        self.rejected_connections.store(0, Relaxed);
    }
}

/// Redis's hdr_value_at_percentile: the highest value equivalent to the
/// one at `percentile` (the lowest, for 0).
pub fn value_at_percentile(h: &Histogram<u64>, percentile: f64) -> u64 {
    let p = percentile.min(100.0);
    let want = ((p / 100.0) * h.len() as f64 + 0.5) as u64;
    let want = want.max(1);
    let mut total = 0;
    for v in h.iter_recorded() {
        total += v.count_at_value();
        if total >= want {
            let value = v.value_iterated_to();
            return if p == 0.0 {
                h.lowest_equivalent(value)
            } else {
                h.highest_equivalent(value)
            };
        }
    }
    0
}

/// LATENCY HISTOGRAM's buckets: (upper bound in µs, cumulative count) at
/// 1024 ns × 2^k, those where the count grew (Redis's fillCommandCDF over
/// a logarithmic hdr iterator).
pub fn cumulative_buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let total = h.len();
    let mut level: u64 = 1024;
    let mut previous = 0;
    // The iterator stops at the first level holding every sample.
    while previous < total && level <= HIST_MAX_NS * 2 {
        let upto = h.highest_equivalent(level);
        let cumulative = h.count_between(0, upto);
        if cumulative > previous {
            out.push((upto / 1000, cumulative));
        }
        previous = cumulative;
        level *= 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_as_redis() {
        assert_eq!(error_code(b"-WRONGTYPE Operation against"), b"WRONGTYPE");
        assert_eq!(error_code(b"ERR unknown command"), b"ERR");
        assert_eq!(error_code(b"NOSPACEHEREATALL"), b"ERR");
        assert_eq!(
            error_code(b"AVERYLONGERRORCODETHATGOESPASTTHIRTYTWO BYTES"),
            b"ERR"
        );
    }

    #[test]
    fn counts_index_as_hdrhistogram() {
        // Every value lands where hdrhistogram counts it: rebuilt, the
        // histogram is the one hdrhistogram records directly.
        let counts = Counts::new();
        let mut direct = new_histogram();
        let mut v = 1u64;
        while v <= HIST_MAX_NS {
            for x in [v, v + v / 3, v * 2 - 1] {
                let x = x.min(HIST_MAX_NS);
                counts.record(x);
                direct.record(x).unwrap();
            }
            v *= 2;
        }
        let mut rebuilt = new_histogram();
        counts.add_to(&mut rebuilt);
        assert_eq!(rebuilt, direct);
        assert!(Counts::index(HIST_MAX_NS) < COUNTS_LEN);
    }

    #[test]
    fn percentiles_and_buckets_as_redis() {
        // From redis-server: SET three times (8 µs, 8 µs, 518 µs) reports
        // p50=8.031 p99=518.143 and buckets 8 → 2, 528 → 3.
        let mut h = new_histogram();
        h.record(8_000).unwrap();
        h.record(8_010).unwrap();
        h.record(518_000).unwrap();
        assert_eq!(value_at_percentile(&h, 50.0), 8_031);
        assert_eq!(value_at_percentile(&h, 99.0), 518_143);
        assert_eq!(cumulative_buckets(&h), vec![(8, 2), (528, 3)]);
    }
}
