//! Polling briefly before a worker sleeps.
//!
//! When a request reaches a worker asleep in `epoll_wait`, the *sender*
//! pays for waking it: the kernel's `sock_def_readable` wakes the thread
//! from inside the client's `send`, an inter-processor interrupt that on a
//! virtual machine costs microseconds of the client's CPU. Measured with
//! 50 redis-benchmark connections doing LRANGE_100: the client spent 18% of
//! its CPU there against keel and 12% against Redis, because keel, faster
//! per request, had run out of work and gone to sleep 2.2x as often (42k
//! against 19k sleeps per 200k requests); the client, the bottleneck, then
//! ran 12% slower against the faster server.
//!
//! So a worker about to sleep first watches its connections for up to
//! `idle-poll-us` microseconds (keel's own setting, default 100; 0 turns
//! this off), while it has lately been woken soon after sleeping (a busy
//! worker); an idle one sleeps at once. The price is CPU: a worker with
//! gaps between requests spends them polling (measured at 50 redis-benchmark
//! clients: 19-32% more CPU per request than Redis, where the rps went
//! from 0.86-1.02x to 1.02-1.14x Redis's; see docs/benchmarks.md).
//!
//! Polling must also pay for itself where it runs: each worker judges it
//! by what it costs ([`Judge`]). Every few seconds it serves one window
//! with polling allowed and one without, compares the CPU time its thread
//! spent per socket read in each, and polls until the next trial only if
//! polling was the cheaper (with a margin, so that it does not flap);
//! `idle-poll-goal rate` polls whenever the worker is busy instead.
//! Measured at 50 redis-benchmark clients on this 2-core machine, polling
//! had come to cost 43% more CPU per request for a lower rate
//! (docs/benchmarks.md, "CPU per request").
//!
//! The watch is a zero-timeout `poll` of the worker's own tokio epoll
//! descriptor, which is readable while its ready list is not empty: it
//! consumes no event, and unlike a second epoll holding the sockets it
//! adds nothing to the path of an arriving packet. Tokio does not expose
//! that descriptor: `runtime_epoll` finds it.

use std::cell::{Cell, RefCell};
use std::os::fd::{FromRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::observe::stats::ThreadStats;

/// How long a busy worker polls before sleeping (`idle-poll-us`, in
/// nanoseconds here): longer than the gaps between requests of 50 clients
/// reading 600-element LRANGE replies (30 us left those 4-6% short).
static BUDGET_NS: AtomicU64 = AtomicU64::new(100_000);

/// Sets the polling budget (`idle-poll-us`; 0: never poll).
pub fn set_budget_us(us: u64) {
    BUDGET_NS.store(us.saturating_mul(1000), Relaxed);
}

/// Nanoseconds each worker has spent polling: the balancer counts them
/// as idle time, not load (see `net::balance`).
static POLLED_NS: [AtomicU64; MAX_WORKERS] = [const { AtomicU64::new(0) }; MAX_WORKERS];
const MAX_WORKERS: usize = 256;

/// Time worker `i` has spent polling since it started.
pub fn polled(i: usize) -> Duration {
    Duration::from_nanos(POLLED_NS.get(i).map_or(0, |n| n.load(Relaxed)))
}

fn budget() -> Duration {
    Duration::from_nanos(BUDGET_NS.load(Relaxed))
}

/// Whether polling may run at all: set by the balancer from how much the
/// machine's threads waited for a CPU over its last window (see
/// `net::balance`). A polling worker holds a core through its gaps; when
/// other threads (the clients themselves, on a shared host) are waiting
/// for one, that time is taken from them: at 512 redis-benchmark clients
/// on two cores, with the client's two threads and the worker runnable at
/// once, polling cost 6-14% more CPU per request for no gain in rate.
static CORES_FREE: AtomicBool = AtomicBool::new(true);

/// Allows or stops polling (the balancer's verdict on the machine).
pub fn set_cores_free(free: bool) {
    CORES_FREE.store(free, Relaxed);
}

/// Whether polling is allowed now, for INFO.
pub fn cores_free() -> bool {
    CORES_FREE.load(Relaxed)
}

/// What a wake-up itself adds to a measured sleep.
const WAKE_ALLOWANCE: Duration = Duration::from_micros(50);

/// Sleeps in a row that were not short before polling stops.
const PATIENCE: u32 = 16;

thread_local! {
    /// This worker's runtime epoll descriptor (-1: not a worker, or it
    /// could not be found).
    static EPFD: Cell<RawFd> = const { Cell::new(-1) };
    /// This worker's index.
    static WORKER: Cell<usize> = const { Cell::new(0) };
    /// Polls left before the worker is considered idle.
    static CREDIT: Cell<u32> = const { Cell::new(0) };
    static PARKED_AT: Cell<Option<Instant>> = const { Cell::new(None) };
    /// Whether polling pays on this worker, and the trials that judge it.
    static JUDGE: RefCell<Option<Judge>> = const { RefCell::new(None) };
}

/// Workers whose last trial found that polling pays (INFO).
static PAYING: [AtomicBool; MAX_WORKERS] = [const { AtomicBool::new(true) }; MAX_WORKERS];

/// How many workers poll by their last trial's verdict, for INFO.
pub fn paying_workers(workers: usize) -> usize {
    PAYING
        .iter()
        .take(workers)
        .filter(|p| p.load(Relaxed))
        .count()
}

/// Sets up polling for worker `me`, whose runtime's epoll descriptor is
/// `epfd` (from [`runtime_epoll`]); `stats` counts its socket reads.
pub fn init_worker(me: usize, epfd: RawFd, stats: Arc<ThreadStats>) {
    if me >= MAX_WORKERS {
        return;
    }
    WORKER.with(|w| w.set(me));
    EPFD.with(|e| e.set(epfd));
    JUDGE.with_borrow_mut(|j| *j = Some(Judge::new(stats)));
}

/// One window of a trial: how long it runs.
const WINDOW: Duration = Duration::from_millis(100);
/// Windows a verdict holds before the next trial.
const VERDICT_WINDOWS: u32 = 30;
/// Socket reads a window needs to say anything (a lighter load hardly
/// polls, and its costs are noise).
const MIN_READS: u64 = 2_000;
/// How much cheaper one way must be to change the verdict.
const MARGIN: f64 = 0.05;
/// Parks between two looks at the clock.
const PARKS_PER_LOOK: u32 = 32;

/// What a worker knows of polling's cost: alternates a trial (a window
/// polling, a window not) with a verdict held for [`VERDICT_WINDOWS`].
struct Judge {
    stats: Arc<ThreadStats>,
    /// Polling is allowed now.
    polling: bool,
    /// The trial's windows left (2: polling, 1: not, 0: holding a
    /// verdict), and the verdict's windows left.
    trial: u8,
    holding: u32,
    /// The verdict: polling paid at the last trial.
    pays: bool,
    /// CPU nanoseconds per read of the trial's polling window.
    cost_polling: f64,
    window_start: Instant,
    cpu_start: u64,
    reads_start: u64,
    parks: u32,
}

/// This thread's CPU time, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Judge {
    fn new(stats: Arc<ThreadStats>) -> Judge {
        let reads = stats.reads.load(Relaxed);
        Judge {
            stats,
            polling: true,
            trial: 2,
            holding: 0,
            pays: true,
            cost_polling: 0.0,
            window_start: Instant::now(),
            cpu_start: thread_cpu_ns(),
            reads_start: reads,
            parks: 0,
        }
    }

    /// Called at each park: every [`PARKS_PER_LOOK`], closes the window if
    /// its time is up. Returns whether polling is allowed now.
    fn tick(&mut self, me: usize) -> bool {
        self.parks += 1;
        if self.parks < PARKS_PER_LOOK {
            return self.polling;
        }
        self.parks = 0;
        if self.window_start.elapsed() < WINDOW {
            return self.polling;
        }
        let cpu = thread_cpu_ns();
        let reads = self.stats.reads.load(Relaxed);
        let (spent, served) = (cpu - self.cpu_start, reads - self.reads_start);
        self.window_start = Instant::now();
        self.cpu_start = cpu;
        self.reads_start = reads;
        let cost = (served >= MIN_READS).then(|| spent as f64 / served as f64);
        match self.trial {
            2 => match cost {
                Some(c) => {
                    self.cost_polling = c;
                    self.trial = 1;
                    self.polling = false;
                }
                // Too light a load to judge: try again next window.
                None => self.polling = true,
            },
            1 => {
                match cost {
                    Some(c) => {
                        self.pays = verdict(self.pays, self.cost_polling, c);
                        PAYING[me].store(self.pays, Relaxed);
                        self.trial = 0;
                        self.holding = VERDICT_WINDOWS;
                    }
                    // The load went away mid-trial: start over.
                    None => self.trial = 2,
                }
                self.polling = self.trial == 2 || self.pays;
            }
            _ => {
                self.holding = self.holding.saturating_sub(1);
                if self.holding == 0 {
                    self.trial = 2;
                    self.polling = true;
                }
            }
        }
        self.polling
    }
}

/// `idle-poll-goal cpu` (the default): polling only where it pays;
/// `rate`: whenever a worker is busy.
static JUDGED: AtomicBool = AtomicBool::new(true);

pub fn set_judged(judged: bool) {
    JUDGED.store(judged, Relaxed);
}

/// Whether polling pays, by a trial's costs per read with and without it:
/// the verdict changes only when the other way is cheaper by [`MARGIN`].
fn verdict(paid: bool, polling: f64, not_polling: f64) -> bool {
    let threshold = if paid { 1.0 + MARGIN } else { 1.0 - MARGIN };
    polling <= not_polling * threshold
}

/// Whether this worker's judge allows polling now (and counts the park).
fn judged_polling() -> bool {
    if !JUDGED.load(Relaxed) {
        return true;
    }
    let me = WORKER.with(Cell::get);
    JUDGE.with_borrow_mut(|j| j.as_mut().is_none_or(|j| j.tick(me)))
}

/// The epoll descriptor of runtime `rt` (tokio does not expose it):
/// registers a probe eventfd with the runtime and finds the epoll
/// descriptor whose watch list holds it. Other threads creating epolls
/// meanwhile cannot be mistaken for it.
pub fn runtime_epoll(rt: &tokio::runtime::Runtime) -> Option<RawFd> {
    // SAFETY: eventfd has no memory preconditions; the descriptor is
    // owned by `probe` from here on.
    let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if raw < 0 {
        return None;
    }
    // SAFETY: `raw` is a fresh descriptor nobody else owns.
    let probe = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
    let _in_runtime = rt.enter();
    // SAFETY: `probe` owns the open descriptor and keeps it for the
    // registration's whole life.
    let registered = unsafe { tokio::io::unix::AsyncFd::register(probe) }.ok()?;
    let found = std::fs::read_dir("/proc/self/fd").ok()?.find_map(|e| {
        let e = e.ok()?;
        if std::fs::read_link(e.path()).ok()?.as_os_str() != "anon_inode:[eventpoll]" {
            return None;
        }
        let fd: RawFd = e.file_name().to_str()?.parse().ok()?;
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
        info.lines()
            .filter_map(|l| l.strip_prefix("tfd:"))
            .any(|l| l.split_whitespace().next() == Some(raw.to_string().as_str()))
            .then_some(fd)
    });
    drop(registered);
    found
}

/// Runs just before the worker parks (tokio's `on_thread_park`).
pub fn before_park() {
    let epfd = EPFD.with(Cell::get);
    let budget = budget();
    if epfd < 0 || budget.is_zero() || !CORES_FREE.load(Relaxed) || !judged_polling() {
        // No polling: no need to time the sleep either (two clock reads
        // per sleep, a sleep per request at 50 clients).
        return;
    }
    if CREDIT.with(Cell::get) > 0 {
        let started = Instant::now();
        let until = started + budget;
        let mut watch = libc::pollfd {
            fd: epfd,
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd, zero timeout.
            let n = unsafe { libc::poll(&mut watch, 1, 0) };
            if n != 0 || Instant::now() >= until {
                break;
            }
            std::hint::spin_loop();
        }
        let spent = started.elapsed().as_nanos() as u64;
        POLLED_NS[WORKER.with(Cell::get)].fetch_add(spent, Relaxed);
        CREDIT.with(|c| c.set(c.get().saturating_sub(1)));
    }
    PARKED_AT.with(|p| p.set(Some(Instant::now())));
}

/// Runs when the worker wakes up (tokio's `on_thread_unpark`): a short
/// sleep means more work was coming soon, which polling would have caught
/// or nearly (the sleep as measured here includes the wake-up itself,
/// tens of microseconds on a VM, hence the allowance). A worker whose
/// gaps are longer (a light load) never polls, so polling costs CPU only
/// where requests come closer than that.
pub fn after_unpark() {
    if let Some(at) = PARKED_AT.with(|p| p.take()) {
        if at.elapsed() < budget() + WAKE_ALLOWANCE {
            CREDIT.with(|c| c.set(PATIENCE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::verdict;

    #[test]
    fn a_verdict_changes_only_past_the_margin() {
        // Paying: kept while polling costs at most 5% more.
        assert!(verdict(true, 104.0, 100.0));
        assert!(!verdict(true, 106.0, 100.0));
        // Not paying: polling must come out 5% cheaper.
        assert!(!verdict(false, 96.0, 100.0));
        assert!(verdict(false, 94.0, 100.0));
    }
}
