//! Per-key access metadata, 24 bits in every entry as Redis's `robj.lru`:
//! under an LRU (or no) eviction policy the LRU clock (seconds) of the
//! last access; under an LFU policy 16 bits of "last decrement time" in
//! minutes and an 8-bit logarithmic access counter. The policy kind is a
//! process-wide switch set from the configuration, as Redis reads
//! `server.maxmemory_policy` in its lookups.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

static LFU: AtomicBool = AtomicBool::new(false);
static LFU_LOG_FACTOR: AtomicU32 = AtomicU32::new(10);
static LFU_DECAY_TIME: AtomicU32 = AtomicU32::new(1);

/// The counter a new key starts with (Redis's LFU_INIT_VAL), so it is not
/// evicted before it had a chance to be used.
pub const LFU_INIT_VAL: u32 = 5;

/// Applies `maxmemory-policy`: LFU or not.
pub fn configure_lfu(lfu: bool) {
    LFU.store(lfu, Relaxed);
}

/// Applies `lfu-log-factor` and `lfu-decay-time`.
pub fn configure_lfu_params(log_factor: u32, decay_time: u32) {
    LFU_LOG_FACTOR.store(log_factor, Relaxed);
    LFU_DECAY_TIME.store(decay_time, Relaxed);
}

#[inline]
pub fn is_lfu() -> bool {
    LFU.load(Relaxed)
}

/// The 24 bits of metadata; the bits above are marks that any access
/// clears ([`touch`] rewrites the whole field).
const METADATA: u32 = 0xFF_FFFF;

/// Marks a key's metadata as unused since now (the disk tier's probation:
/// `tier::admission`); the next access clears the mark.
#[inline]
pub fn mark_unused(access: &mut u32) {
    *access |= UNUSED;
}

/// Whether the key was not accessed since [`mark_unused`].
#[inline]
pub fn unused_since_marked(access: u32) -> bool {
    access & UNUSED != 0
}

const UNUSED: u32 = 1 << 31;

/// The LRU clock: seconds, 24 bits, as Redis's `LRU_CLOCK`.
#[inline]
pub fn lru_clock(now_ms: u64) -> u32 {
    ((now_ms / 1000) & 0xFF_FFFF) as u32
}

/// Minutes, 16 bits (Redis's LFUGetTimeInMinutes).
#[inline]
fn lfu_minutes(now_ms: u64) -> u32 {
    ((now_ms / 60_000) & 0xFFFF) as u32
}

/// The metadata of a key created now.
#[inline]
pub fn fresh(now_ms: u64) -> u32 {
    if is_lfu() {
        (lfu_minutes(now_ms) << 8) | LFU_INIT_VAL
    } else {
        lru_clock(now_ms)
    }
}

/// Records an access (Redis's updateLFU, or the LRU clock).
#[inline]
pub fn touch(access: &mut u32, now_ms: u64) {
    if is_lfu() {
        *access = lfu_touch(
            *access,
            now_ms,
            LFU_LOG_FACTOR.load(Relaxed),
            LFU_DECAY_TIME.load(Relaxed),
        );
    } else {
        *access = lru_clock(now_ms);
    }
}

/// The access counter decayed to now, without recording an access
/// (Redis's LFUDecrAndReturn; OBJECT FREQ).
pub fn lfu_counter(access: u32, now_ms: u64) -> u32 {
    lfu_decayed(access, now_ms, LFU_DECAY_TIME.load(Relaxed))
}

/// Redis's updateLFU with explicit parameters.
fn lfu_touch(access: u32, now_ms: u64, log_factor: u32, decay_time: u32) -> u32 {
    let counter = log_incr(lfu_decayed(access, now_ms, decay_time), log_factor);
    (lfu_minutes(now_ms) << 8) | counter
}

fn lfu_decayed(access: u32, now_ms: u64, decay_time: u32) -> u32 {
    let access = access & METADATA;
    let ldt = access >> 8;
    let counter = access & 255;
    let now = lfu_minutes(now_ms);
    let elapsed = if now >= ldt {
        now - ldt
    } else {
        65535 - ldt + now
    };
    let periods = elapsed.checked_div(decay_time).unwrap_or(0);
    counter.saturating_sub(periods)
}

thread_local! {
    static RNG: Cell<u64> = const { Cell::new(0x9E37_79B9_7F4A_7C15) };
}

/// A uniform number in [0, 1) from a per-thread xorshift: one per access
/// under LFU, where a shared generator would be a point of contention.
fn random_unit() -> f64 {
    RNG.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// Redis's LFULogIncr: the more accesses counted, the less likely the
/// next one increments the counter.
fn log_incr(counter: u32, log_factor: u32) -> u32 {
    if counter >= 255 {
        return 255;
    }
    let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
    let p = 1.0 / (base * log_factor as f64 + 1.0);
    if random_unit() < p {
        counter + 1
    } else {
        counter
    }
}

/// The metadata of a key last accessed `idle_secs` ago (RESTORE ...
/// IDLETIME, Redis's objectSetLRUOrLFU): the LRU clock moved back, wrapped
/// as Redis's 24-bit field wraps.
pub fn with_idle(idle_secs: u64, now_ms: u64) -> u32 {
    let mut abs = lru_clock(now_ms) as i64 - idle_secs.min(i64::MAX as u64) as i64;
    if abs < 0 {
        abs += 0xFF_FFFF;
    }
    (abs as u32) & 0xFF_FFFF
}

/// The LFU metadata of a key with access counter `freq` (RESTORE ... FREQ).
pub fn with_freq(freq: u8, now_ms: u64) -> u32 {
    (lfu_minutes(now_ms) << 8) | freq as u32
}

/// Seconds since the last access for OBJECT IDLETIME (LRU clock, with
/// its wrap-around).
pub fn idle_seconds(access: u32, now_ms: u64) -> u64 {
    let access = access & METADATA;
    let now = lru_clock(now_ms);
    if now >= access {
        (now - access) as u64
    } else {
        (now as u64 + 0x100_0000) - access as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lfu_counter_grows_logarithmically_and_decays() {
        let now = 10 * 60_000;
        let mut a = (lfu_minutes(now) << 8) | LFU_INIT_VAL;
        assert_eq!(lfu_decayed(a, now, 1), LFU_INIT_VAL);
        for _ in 0..100 {
            a = lfu_touch(a, now, 10, 1);
        }
        let after_100 = lfu_decayed(a, now, 1);
        assert!(after_100 > LFU_INIT_VAL && after_100 < 20, "{after_100}");
        for _ in 0..100_000 {
            a = lfu_touch(a, now, 10, 1);
        }
        let after_100k = lfu_decayed(a, now, 1);
        assert!(after_100k > after_100 + 10, "{after_100k}");
        // One period of decay per minute; none with decay time 0.
        assert_eq!(lfu_decayed(a, now + 3 * 60_000, 1), after_100k - 3);
        assert_eq!(lfu_decayed(a, now + 3 * 60_000, 0), after_100k);
        // Factor 0: every access counts.
        assert_eq!(lfu_decayed(lfu_touch(a, now, 0, 1), now, 1), after_100k + 1);
    }

    #[test]
    fn the_unused_mark_changes_no_idle_time_or_counter_and_an_access_clears_it() {
        let now = 10 * 60_000 + 5_000;
        let lru = with_idle(42, now);
        let lfu = (lfu_minutes(now - 3 * 60_000) << 8) | 17;
        for plain in [lru, lfu] {
            let mut marked = plain;
            mark_unused(&mut marked);
            assert!(unused_since_marked(marked) && !unused_since_marked(plain));
            assert_eq!(idle_seconds(marked, now), idle_seconds(plain, now));
            assert_eq!(lfu_decayed(marked, now, 1), lfu_decayed(plain, now, 1));
            assert_eq!(lfu_touch(marked, now, 0, 1), lfu_touch(plain, now, 0, 1));
        }
        assert_eq!(idle_seconds(lru | UNUSED, now), 42);
        assert_eq!(lfu_decayed(lfu | UNUSED, now, 1), 14);
        let mut a = lru;
        mark_unused(&mut a);
        touch(&mut a, now);
        assert!(!unused_since_marked(a));
    }
}
