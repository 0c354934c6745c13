//! Memory: what the process holds ([`alloc`]), the `maxmemory` limit and
//! its policy ([`Limits`]), eviction ([`evict`]: it deletes keys through
//! the command layer's propagation path, on the threads that run
//! commands), and freeing large values off the workers ([`lazyfree`]).

pub mod alloc;
pub mod evict;
pub mod lazyfree;

use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed,
};

/// `maxmemory-policy`, Redis's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllkeysLru,
    VolatileLru,
    AllkeysLfu,
    VolatileLfu,
    AllkeysRandom,
    VolatileRandom,
    VolatileTtl,
}

/// The order of Redis's `maxmemory_policy_enum` (its error text lists
/// them so).
pub const POLICY_NAMES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

const POLICIES: [Policy; 8] = [
    Policy::VolatileLru,
    Policy::VolatileLfu,
    Policy::VolatileRandom,
    Policy::VolatileTtl,
    Policy::AllkeysLru,
    Policy::AllkeysLfu,
    Policy::AllkeysRandom,
    Policy::NoEviction,
];

/// `maxmemory-policy` (the table admits only its names).
impl crate::config::FromValue for Policy {
    fn from_value(name: &str) -> Policy {
        Policy::parse(name).unwrap_or(Policy::NoEviction)
    }
}

impl Policy {
    pub fn parse(name: &str) -> Option<Policy> {
        POLICY_NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .map(|i| POLICIES[i])
    }

    pub fn name(self) -> &'static str {
        let i = POLICIES.iter().position(|p| *p == self).unwrap_or(7);
        POLICY_NAMES[i]
    }

    /// Only keys with a TTL may be evicted.
    pub fn volatile_only(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllkeysLfu | Policy::VolatileLfu)
    }

    pub fn is_random(self) -> bool {
        matches!(self, Policy::AllkeysRandom | Policy::VolatileRandom)
    }
}

/// Hot copies of the memory parameters (read before every command) and
/// the counters INFO reports.
pub struct Limits {
    maxmemory: AtomicU64,
    policy: AtomicU8,
    pub samples: AtomicU32,
    pub tenacity: AtomicU32,
    /// `replica-ignore-maxmemory`: a replica leaves eviction to its
    /// primary (whose DELs it applies) and never refuses a write for
    /// memory.
    pub ignore_on_replica: AtomicBool,
    /// `maxmemory-clients` in bytes (0: no limit); a percentage is
    /// resolved against `maxmemory` when set.
    pub clients: AtomicU64,
    pub evicted_keys: AtomicU64,
    pub evicted_clients: AtomicU64,
    /// Microseconds spent over the limit (`total_eviction_exceeded_time`).
    pub exceeded_us: AtomicU64,
    peak: AtomicUsize,
    startup: AtomicUsize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            maxmemory: AtomicU64::new(0),
            policy: AtomicU8::new(7),
            samples: AtomicU32::new(5),
            tenacity: AtomicU32::new(10),
            ignore_on_replica: AtomicBool::new(true),
            clients: AtomicU64::new(0),
            evicted_keys: AtomicU64::new(0),
            evicted_clients: AtomicU64::new(0),
            exceeded_us: AtomicU64::new(0),
            peak: AtomicUsize::new(0),
            startup: AtomicUsize::new(0),
        }
    }
}

impl Limits {
    /// `maxmemory` in bytes, 0 for none.
    #[inline]
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Relaxed)
    }

    pub fn policy(&self) -> Policy {
        POLICIES[self.policy.load(Relaxed) as usize % POLICIES.len()]
    }

    pub fn set(&self, maxmemory: u64, policy: Policy, samples: u32, tenacity: u32) {
        self.maxmemory.store(maxmemory, Relaxed);
        let i = POLICIES.iter().position(|p| *p == policy).unwrap_or(7);
        self.policy.store(i as u8, Relaxed);
        self.samples.store(samples, Relaxed);
        self.tenacity.store(tenacity, Relaxed);
        crate::storage::access::configure_lfu(policy.is_lfu());
    }

    /// `used_memory_peak`: the highest `used` seen by [`Limits::observe`].
    pub fn peak(&self) -> usize {
        self.peak.load(Relaxed)
    }

    /// Notes the current usage for the peak (INFO and the cron call it).
    pub fn observe(&self) -> usize {
        let used = alloc::used();
        self.peak.fetch_max(used, Relaxed);
        used
    }

    /// `used_memory_startup`: what the server held once started.
    pub fn startup(&self) -> usize {
        self.startup.load(Relaxed)
    }

    pub fn mark_startup(&self) {
        alloc::flush_thread();
        self.startup.store(alloc::used(), Relaxed);
    }

    /// CONFIG RESETSTAT: the eviction counters, and the peak starts again
    /// from the current usage (Redis resets `stat_peak_memory`).
    pub fn reset_stats(&self) {
        self.evicted_keys.store(0, Relaxed);
        self.evicted_clients.store(0, Relaxed);
        self.exceeded_us.store(0, Relaxed);
        self.peak.store(alloc::used(), Relaxed);
    }
}

/// Starts jemalloc's background purging thread, as Redis does
/// (`jemalloc-bg-thread yes`): freed pages go back to the OS as they age
/// (10 s) even while the allocator is not otherwise called.
pub fn start_background_purge() {
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(true) {
        tracing::warn!("jemalloc background thread: {e}");
    }
}

/// Under a `maxmemory` limit, what the allocator keeps resident beyond
/// what is allocated (freed pages waiting for their decay, in arenas of
/// other threads) must not take the process far past the limit: the cron
/// purges them once the allocator's resident memory exceeds the limit by
/// a twentieth.
pub fn bound_resident(maxmemory: u64) {
    use tikv_jemalloc_ctl::{epoch, stats};
    if maxmemory == 0 || epoch::advance().is_err() {
        return;
    }
    let resident = stats::resident::read().unwrap_or(0) as u64;
    if resident > maxmemory.saturating_add(maxmemory / 20) {
        purge();
    }
}

/// Returns the allocator's unused dirty pages to the OS (MEMORY PURGE;
/// also once start-up is done, which parses the command table's JSON and
/// may load a dataset: what that left behind is not kept resident).
pub fn purge() -> bool {
    // "arena.<MALLCTL_ARENAS_ALL>.purge", as Redis's jemalloc_purge.
    let name = c"arena.4096.purge";
    // SAFETY: a valid NUL-terminated name; the command reads and writes
    // nothing.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    rc == 0
}

/// Redis's `bytesToHuman` (INFO's `*_human` fields).
pub fn human(n: u64) -> String {
    let n = n as f64;
    const K: f64 = 1024.0;
    if n < K {
        format!("{n}B")
    } else if n < K * K {
        format!("{:.2}K", n / K)
    } else if n < K * K * K {
        format!("{:.2}M", n / (K * K))
    } else if n < K * K * K * K {
        format!("{:.2}G", n / (K * K * K))
    } else if n < K * K * K * K * K {
        format!("{:.2}T", n / (K * K * K * K))
    } else {
        format!("{:.2}P", n / (K * K * K * K * K))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_round_trip() {
        for name in POLICY_NAMES {
            let p = Policy::parse(name).unwrap_or(Policy::NoEviction);
            assert_eq!(p.name(), *name);
        }
        assert!(Policy::parse("allkeys-LRU") == Some(Policy::AllkeysLru));
        assert!(Policy::VolatileTtl.volatile_only() && !Policy::AllkeysLfu.volatile_only());
    }
}
