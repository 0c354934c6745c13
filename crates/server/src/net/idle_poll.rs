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
//! `idle-poll-us` microseconds (keel's own setting, default 30; 0 turns
//! this off), while it has lately been woken soon after sleeping (a busy
//! worker); an idle one sleeps at once. The price is CPU: a worker with
//! gaps between requests spends them polling (measured: ~25% more CPU per
//! request than Redis at 50 clients, where the rps went from 0.97-1.02x
//! to 1.01-1.12x Redis's). The watch is a second epoll
//! instance per worker holding the worker's client sockets
//! (level-triggered: it reports only sockets with unread bytes), asked with
//! a zero timeout. Nothing is read here: on a hit the worker parks as
//! usual and tokio's own `epoll_wait` returns at once.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// How long a busy worker polls before sleeping (`idle-poll-us`, in
/// nanoseconds here): a few times the gap between two requests of 50
/// clients at 100k requests per second.
static BUDGET_NS: AtomicU64 = AtomicU64::new(30_000);

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

/// Sleeps in a row that were not short before polling stops.
const PATIENCE: u32 = 16;

thread_local! {
    /// This worker's watch epoll (-1: not a worker, or none could be made).
    static EPFD: Cell<RawFd> = const { Cell::new(-1) };
    /// This worker's index.
    static WORKER: Cell<usize> = const { Cell::new(0) };
    /// Polls left before the worker is considered idle.
    static CREDIT: Cell<u32> = const { Cell::new(0) };
    static PARKED_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Makes the calling worker thread's (worker `me`) watch epoll.
pub fn init_worker(me: usize) {
    if me >= MAX_WORKERS {
        return;
    }
    WORKER.with(|w| w.set(me));
    // SAFETY: epoll_create1 has no memory preconditions.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        tracing::warn!(
            "epoll_create1 for the idle poll failed: {}",
            std::io::Error::last_os_error()
        );
        return;
    }
    EPFD.with(|e| e.set(fd));
}

/// Runs just before the worker parks (tokio's `on_thread_park`).
pub fn before_park() {
    let epfd = EPFD.with(Cell::get);
    let budget = budget();
    if epfd >= 0 && CREDIT.with(Cell::get) > 0 && !budget.is_zero() {
        let started = Instant::now();
        let until = started + budget;
        let mut event = libc::epoll_event { events: 0, u64: 0 };
        loop {
            // SAFETY: one writable event slot, zero timeout.
            let n = unsafe { libc::epoll_wait(epfd, &mut event, 1, 0) };
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
/// sleep means more work was coming, which polling would have caught.
pub fn after_unpark() {
    if let Some(at) = PARKED_AT.with(|p| p.take()) {
        if at.elapsed() < budget() {
            CREDIT.with(|c| c.set(PATIENCE));
        }
    }
}

/// A client socket watched by this worker for as long as it lives (drop
/// it before the socket is closed or handed to another worker).
pub struct Watched {
    epfd: RawFd,
    fd: RawFd,
}

impl Watched {
    pub fn new(fd: RawFd) -> Watched {
        let epfd = EPFD.with(Cell::get);
        if epfd >= 0 {
            let mut event = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: fd as u64,
            };
            // SAFETY: `fd` is an open socket owned by the caller; the
            // event is copied by the kernel.
            if unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut event) } != 0 {
                return Watched { epfd: -1, fd };
            }
        }
        Watched { epfd, fd }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if self.epfd >= 0 {
            // SAFETY: removes a registration made in `new`; the socket is
            // still open (see the type's doc).
            unsafe {
                libc::epoll_ctl(
                    self.epfd,
                    libc::EPOLL_CTL_DEL,
                    self.fd,
                    std::ptr::null_mut(),
                );
            }
        }
    }
}
