//! Server statistics. Per-command counters live per worker thread and are
//! written only by that thread, so counting a call never bounces a cache
//! line between cores; INFO sums the threads.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;

#[derive(Default)]
pub struct CmdStat {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub failed: AtomicU64,
}

pub struct ThreadStats {
    pub cmds: Vec<CmdStat>,
    pub rejected_calls: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
}

impl ThreadStats {
    pub fn new(commands: usize) -> ThreadStats {
        ThreadStats {
            cmds: (0..commands).map(|_| CmdStat::default()).collect(),
            rejected_calls: AtomicU64::new(0),
            net_input_bytes: AtomicU64::new(0),
            net_output_bytes: AtomicU64::new(0),
        }
    }

    /// Owner-thread increment: a load and a store, no locked instruction.
    #[inline]
    fn bump(a: &AtomicU64, n: u64) {
        a.store(a.load(Relaxed).wrapping_add(n), Relaxed);
    }

    #[inline]
    pub fn record(&self, id: usize, usec: u64, failed: bool) {
        if let Some(s) = self.cmds.get(id) {
            Self::bump(&s.calls, 1);
            Self::bump(&s.usec, usec);
            if failed {
                Self::bump(&s.failed, 1);
            }
        }
    }

    #[inline]
    pub fn add_net(&self, input: u64, output: u64) {
        Self::bump(&self.net_input_bytes, input);
        Self::bump(&self.net_output_bytes, output);
    }

    fn reset(&self) {
        for c in &self.cmds {
            c.calls.store(0, Relaxed);
            c.usec.store(0, Relaxed);
            c.failed.store(0, Relaxed);
        }
        self.rejected_calls.store(0, Relaxed);
        self.net_input_bytes.store(0, Relaxed);
        self.net_output_bytes.store(0, Relaxed);
    }
}

/// Totals of one command over all threads.
#[derive(Default, Clone, Copy)]
pub struct CmdTotals {
    pub calls: u64,
    pub usec: u64,
    pub failed: u64,
}

#[derive(Default)]
pub struct Stats {
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
}

impl Stats {
    pub fn register_thread(&self, commands: usize) -> Arc<ThreadStats> {
        let t = Arc::new(ThreadStats::new(commands));
        self.threads.lock().push(t.clone());
        t
    }

    pub fn command_totals(&self, commands: usize) -> Vec<CmdTotals> {
        let mut out = vec![CmdTotals::default(); commands];
        for t in self.threads.lock().iter() {
            for (o, c) in out.iter_mut().zip(&t.cmds) {
                o.calls += c.calls.load(Relaxed);
                o.usec += c.usec.load(Relaxed);
                o.failed += c.failed.load(Relaxed);
            }
        }
        out
    }

    /// (rejected calls, net input bytes, net output bytes)
    pub fn totals(&self) -> (u64, u64, u64) {
        self.threads.lock().iter().fold((0, 0, 0), |acc, t| {
            (
                acc.0 + t.rejected_calls.load(Relaxed),
                acc.1 + t.net_input_bytes.load(Relaxed),
                acc.2 + t.net_output_bytes.load(Relaxed),
            )
        })
    }

    pub fn reset(&self) {
        for t in self.threads.lock().iter() {
            t.reset();
        }
        self.connections_received.store(0, Relaxed);
        self.rejected_connections.store(0, Relaxed);
    }
}
