//! Worker activation and connection placement.
//!
//! `threads` workers exist, but connections are spread over only as many
//! as the load needs. One busy worker serves pipelined and concurrent
//! clients more cheaply than two half-busy ones (fewer wake-ups per
//! request), and on a small machine a second busy worker only takes CPU
//! from the clients. So a worker is activated only when every active
//! worker is saturated *and* the machine has an idle core for it; it is
//! retired when the others could absorb its load. Existing connections
//! move between workers at a batch boundary (the connection hands its
//! socket and session state to the target worker), so long-lived client
//! pools spread too, not only new connections.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

use tokio::sync::mpsc::UnboundedSender;

use super::Incoming;
use crate::server::Server;

/// Marks "no migration requested" in `ClientInfo::migrate_to`.
pub const NO_MIGRATION: usize = usize::MAX;

pub struct Workers {
    senders: OnceLock<Vec<UnboundedSender<Incoming>>>,
    /// Workers 0..active receive new connections.
    pub active: AtomicUsize,
    /// Connections per worker.
    pub conns: Vec<AtomicUsize>,
    /// Kernel thread ids, to read each worker's CPU time.
    pub tids: Vec<AtomicI32>,
    /// Workers stuck in a script past busy-reply-threshold (set by the
    /// script, on its own worker): nothing else runs there until it ends.
    busy: Vec<AtomicBool>,
    /// Each worker's share of a core over the balancer's last window, in
    /// thousandths (polling not counted), for INFO keel.
    pub load_permille: Vec<AtomicU32>,
}

impl Workers {
    /// `n` workers plus the standby one.
    pub fn new(n: usize) -> Workers {
        let all = n + 1;
        Workers {
            senders: OnceLock::new(),
            active: AtomicUsize::new(1),
            conns: (0..all).map(|_| AtomicUsize::new(0)).collect(),
            tids: (0..all).map(|_| AtomicI32::new(0)).collect(),
            busy: (0..all).map(|_| AtomicBool::new(false)).collect(),
            load_permille: (0..all).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// The workers the balancer activates (`threads`); the last thread,
    /// the standby, only takes new connections while every one of them is
    /// stuck in a busy script, so SCRIPT KILL and SHUTDOWN NOSAVE from a
    /// new connection always get through. Idle, it costs nothing.
    pub fn regular(&self) -> usize {
        self.len() - 1
    }

    pub fn set_busy(&self, worker: usize, busy: bool) {
        if let Some(b) = self.busy.get(worker) {
            b.store(busy, Relaxed);
        }
    }

    pub fn is_busy(&self, worker: usize) -> bool {
        self.busy.get(worker).is_some_and(|b| b.load(Relaxed))
    }

    pub fn set_senders(&self, senders: Vec<UnboundedSender<Incoming>>) {
        let _ = self.senders.set(senders);
    }

    pub fn len(&self) -> usize {
        self.conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// The active worker with the fewest connections.
    /// A worker stuck in a script past busy-reply-threshold is skipped
    /// (nothing else runs on it until the script ends), even if that
    /// means using an inactive one, so SCRIPT KILL can get through.
    pub fn place(&self) -> usize {
        let active = self.active.load(Relaxed).clamp(1, self.regular());
        let free = |i: &usize| !self.is_busy(*i);
        (0..active)
            .filter(free)
            .min_by_key(|&i| self.conns[i].load(Relaxed))
            .or_else(|| (0..self.len()).find(free))
            .unwrap_or(0)
    }

    pub fn send(&self, worker: usize, incoming: Incoming) {
        match self.senders.get().and_then(|s| s.get(worker)) {
            Some(tx) => {
                if tx.send(incoming).is_err() {
                    tracing::error!("worker {worker} is gone");
                }
            }
            None => tracing::error!("no worker {worker}"),
        }
    }
}

/// CPU seconds used by a thread of this process.
fn thread_cpu(tid: i32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks / hz)
}

/// (idle, total) jiffies of the whole machine.
fn machine_cpu() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((idle, v.iter().take(8).sum()))
}

/// Microseconds for which some thread of the machine was runnable but
/// waiting for a CPU, since boot (the kernel's pressure stall
/// information, `some` line of /proc/pressure/cpu; None where the kernel
/// has none).
fn cpu_stalled_us() -> Option<u64> {
    let psi = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    psi.lines()
        .find(|l| l.starts_with("some"))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// Whether workers may poll before sleeping (`idle_poll`): only while no
/// thread waits for a CPU, so polling spends idle cores and nobody's
/// time. Measured over a window at two cores: 512 clients on two client
/// threads stalled 47% of the time (the worker polling or not), 50
/// clients on one 3%, with polling on.
fn cores_free(stalled_share: Option<f64>, idle_cores: f64) -> bool {
    match stalled_share {
        Some(share) => share < STALL_MAX,
        // No pressure information: an idle core's worth of idle time.
        None => idle_cores > IDLE_NEEDED,
    }
}

/// Share of the time some thread may wait for a CPU while workers poll.
const STALL_MAX: f64 = 0.10;

/// State the balancer keeps between ticks.
pub struct Balancer {
    last_thread_cpu: Vec<f64>,
    /// Seconds each worker had spent polling before sleeping, at the
    /// last tick: that is idle time, though the kernel counts it as CPU.
    last_polled: Vec<f64>,
    last_machine: (u64, u64),
    last_stalled_us: Option<u64>,
    last_tick: std::time::Instant,
    quiet_ticks: usize,
}

/// Utilisation above which a worker counts as saturated.
const SATURATED: f64 = 0.85;
/// Idle cores the machine must have before a worker is activated.
const IDLE_NEEDED: f64 = 0.9;
/// Consecutive quiet ticks before a worker is retired.
const QUIET_TICKS: usize = 8;

impl Balancer {
    pub fn new(workers: usize) -> Balancer {
        Balancer {
            last_thread_cpu: vec![0.0; workers],
            last_polled: vec![0.0; workers],
            last_machine: machine_cpu().unwrap_or((0, 0)),
            last_stalled_us: cpu_stalled_us(),
            last_tick: std::time::Instant::now(),
            quiet_ticks: 0,
        }
    }

    /// One balancing decision, from CPU use since the last tick.
    pub fn tick(&mut self, server: &Server) {
        let w = &server.workers;
        let window = self.last_tick.elapsed().as_secs_f64();
        self.last_tick = std::time::Instant::now();
        if window <= 0.0 {
            return;
        }
        let mut polled_total = 0.0;
        let util: Vec<f64> = (0..w.len())
            .map(|i| {
                let now = thread_cpu(w.tids[i].load(Relaxed)).unwrap_or(0.0);
                let polled = super::idle_poll::polled(i).as_secs_f64();
                let polled_since = (polled - self.last_polled[i]).max(0.0);
                polled_total += polled_since;
                let u = ((now - self.last_thread_cpu[i]) - polled_since).max(0.0) / window;
                self.last_thread_cpu[i] = now;
                self.last_polled[i] = polled;
                w.load_permille[i].store((u * 1000.0).round() as u32, Relaxed);
                u
            })
            .collect();
        let machine = machine_cpu().unwrap_or(self.last_machine);
        let (didle, dtotal) = (
            machine.0.saturating_sub(self.last_machine.0),
            machine.1.saturating_sub(self.last_machine.1),
        );
        self.last_machine = machine;
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1) as f64;
        let idle_cores = if dtotal > 0 {
            didle as f64 / dtotal as f64 * cores + polled_total / window
        } else {
            0.0
        };
        let stalled = cpu_stalled_us();
        let stalled_share = match (stalled, self.last_stalled_us) {
            (Some(now), Some(then)) => Some(now.saturating_sub(then) as f64 / 1e6 / window),
            _ => None,
        };
        self.last_stalled_us = stalled;
        super::idle_poll::set_cores_free(cores_free(stalled_share, idle_cores));
        let active = w.active.load(Relaxed).clamp(1, w.regular());
        let min_active = server
            .config
            .read()
            .settings()
            .active_threads_min
            .max(1)
            .min(w.regular());
        if active < min_active {
            w.active.store(min_active, Relaxed);
            self.spread(server, min_active);
            return;
        }
        if active < w.regular()
            && util[..active].iter().all(|&u| u > SATURATED)
            && idle_cores > IDLE_NEEDED
        {
            w.active.store(active + 1, Relaxed);
            tracing::debug!(active = active + 1, idle_cores, "activating a worker");
            self.spread(server, active + 1);
            self.quiet_ticks = 0;
            return;
        }
        let load: f64 = util[..active].iter().sum();
        if active > min_active && load < 0.5 * (active - 1) as f64 {
            self.quiet_ticks += 1;
            if self.quiet_ticks >= QUIET_TICKS {
                w.active.store(active - 1, Relaxed);
                tracing::debug!(active = active - 1, "retiring a worker");
                self.spread(server, active - 1);
                self.quiet_ticks = 0;
            }
        } else {
            self.quiet_ticks = 0;
        }
    }

    /// Asks connections to move so workers 0..active hold about the same
    /// number each.
    fn spread(&self, server: &Server, active: usize) {
        let clients = server.clients.snapshot();
        let total = clients.len();
        let target = total.div_ceil(active.max(1));
        let mut counts = vec![0usize; server.workers.len()];
        for c in &clients {
            let wk = c.worker.load(Relaxed);
            if wk < counts.len() {
                counts[wk] += 1;
            }
        }
        for c in &clients {
            let from = c.worker.load(Relaxed);
            if from >= counts.len() || (from < active && counts[from] <= target) {
                continue;
            }
            if let Some(to) =
                (0..active).find(|&i| counts[i] < target && !server.workers.is_busy(i))
            {
                counts[from] -= 1;
                counts[to] += 1;
                c.migrate_to.store(to, Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_stops_while_threads_wait_for_a_cpu() {
        assert!(cores_free(Some(0.03), 0.0));
        assert!(!cores_free(Some(0.47), 0.4));
        // Without pressure information, idle time decides.
        assert!(cores_free(None, 1.2));
        assert!(!cores_free(None, 0.3));
    }
}
