//! Reads of spilled values through an io_uring owned by each worker: the
//! worker that parks a request puts its reads in its own ring, submits
//! every read its connections asked for since the last turn in one system
//! call, and finishes each read (the value installed, the waiting
//! requests woken) on the same thread when the kernel signals completion.
//!
//! Why per worker, and not one reader thread or a pool of threads blocked
//! in `pread` (the fallback, where io_uring is not available): a read
//! handed to another thread costs two cross-thread wake-ups and that
//! thread's share of the cores the workers need; measured in
//! docs/benchmarks.md, "Tiering".

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;

use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;

use super::log::{Loc, ReadFile};

/// Reads in flight at most, per worker.
const DEPTH: usize = 128;

/// What to do with a read's bytes (the whole record, or why not).
pub type Done = Box<dyn FnOnce(io::Result<&[u8]>) + Send>;

/// One read: the record at `loc` of `file`.
pub struct Job {
    pub file: ReadFile,
    pub loc: Loc,
    pub done: Done,
}

thread_local! {
    /// Whether this thread is a worker (runs connections on a LocalSet).
    static WORKER: Cell<bool> = const { Cell::new(false) };
    /// This worker's ring, made at its first read; `Err` once making it
    /// failed.
    static RING: RefCell<Option<Result<Rc<WorkerRing>, ()>>> = const { RefCell::new(None) };
}

/// Marks the calling thread as a worker: reads started on it go through a
/// ring of its own.
pub fn on_worker() {
    WORKER.set(true);
}

/// Whether io_uring can be used on this system.
pub fn available() -> io::Result<()> {
    io_uring::IoUring::new(2).map(drop)
}

/// Starts `job` on this worker's ring; gives it back where this thread
/// has no ring (not a worker, or io_uring refused).
pub fn read(job: Job) -> Result<(), Job> {
    if !WORKER.get() {
        return Err(job);
    }
    let ring = RING.with_borrow_mut(|slot| {
        slot.get_or_insert_with(|| match WorkerRing::start() {
            Ok(r) => Ok(r),
            Err(e) => {
                tracing::warn!(
                    "Tiering: io_uring unavailable on a worker ({e}); reads use a thread pool"
                );
                Err(())
            }
        })
        .clone()
    });
    let Ok(ring) = ring else {
        return Err(job);
    };
    let mut state = ring.state.borrow_mut();
    if state.broken {
        return Err(job);
    }
    state.pending.push_back(job);
    // Submitted at the reaper's next turn, together with the reads the
    // worker's other connections ask for meanwhile: one submission tells
    // the device once (on a virtual machine, an exit to the host) for the
    // whole batch. Only when nothing is in flight is there no batch
    // worth waiting for.
    if state.free.len() == DEPTH {
        if !state.submit() {
            ring.turn_soon.notify_one();
        }
    } else {
        ring.turn_soon.notify_one();
    }
    Ok(())
}

/// Runs `job` with `pread` on the runtime's blocking pool (on this
/// thread where there is no runtime: nothing to park then).
pub fn read_off_worker(job: Job) {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn_blocking(move || read_plainly(job));
        }
        Err(_) => read_plainly(job),
    }
}

/// Runs `job` with `pread`, on this thread.
pub fn read_plainly(job: Job) {
    match job.file.read_record(job.loc) {
        Ok(record) => (job.done)(Ok(&record)),
        Err(e) => (job.done)(Err(e)),
    }
}

/// A read in flight: its job and the buffer the kernel fills, from `at`
/// (aligned for direct reads); the record starts `head` bytes in.
struct Slot {
    job: Job,
    buf: Vec<u8>,
    at: usize,
    head: usize,
}

struct WorkerRing {
    state: RefCell<State>,
    /// Reads were queued: the reaper submits them at its next turn.
    turn_soon: Notify,
}

struct State {
    ring: io_uring::IoUring,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Reads waiting for a slot or for the next submission.
    pending: VecDeque<Job>,
    /// The ring failed: every read goes through `pread`.
    broken: bool,
}

impl WorkerRing {
    /// A ring for this worker, and its reaper task on the worker's
    /// LocalSet.
    fn start() -> io::Result<Rc<WorkerRing>> {
        let ring = io_uring::IoUring::new(DEPTH as u32)?;
        // SAFETY: eventfd(2) with flags only; the descriptor is owned here.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and belongs to nothing else.
        let event = unsafe { OwnedFd::from_raw_fd(fd) };
        ring.submitter().register_eventfd(event.as_raw_fd())?;
        // SAFETY: the AsyncFd owns the OwnedFd, which stays open (and the
        // same descriptor) until the AsyncFd is dropped.
        let event = unsafe { AsyncFd::register(event) }.map_err(io::Error::from)?;
        let me = Rc::new(WorkerRing {
            state: RefCell::new(State {
                ring,
                slots: (0..DEPTH).map(|_| None).collect(),
                free: (0..DEPTH).rev().collect(),
                pending: VecDeque::new(),
                broken: false,
            }),
            turn_soon: Notify::new(),
        });
        tokio::task::spawn_local(reap(Rc::clone(&me), event));
        Ok(me)
    }
}

/// The worker's side of its ring: submits queued reads, finishes completed
/// ones, and sleeps until the kernel signals a completion (the eventfd) or
/// a request queues a read.
async fn reap(me: Rc<WorkerRing>, event: AsyncFd<OwnedFd>) {
    loop {
        let (finished, plain) = me.state.borrow_mut().turn();
        let progressed = !finished.is_empty() || !plain.is_empty();
        for (slot, result) in finished {
            finish(slot, result);
        }
        plain.into_iter().for_each(read_off_worker);
        if progressed {
            // Finished reads freed slots for queued ones.
            continue;
        }
        tokio::select! {
            _ = me.turn_soon.notified() => {}
            ready = event.readable() => match ready {
                Ok(mut guard) => {
                    let mut count = [0u8; 8];
                    // (Reading resets the counter; WouldBlock clears the
                    // readiness so the next completion wakes this task.)
                    let _ = guard.try_io(|fd| {
                        // SAFETY: reads 8 bytes into a local buffer.
                        let n = unsafe { libc::read(fd.as_raw_fd(), count.as_mut_ptr().cast(), 8) };
                        if n < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
                    });
                }
                Err(e) => {
                    tracing::warn!("Tiering: waiting on the read ring failed ({e}); reading with pread");
                    let plain: Vec<Job> = {
                        let mut state = me.state.borrow_mut();
                        state.break_down();
                        state.pending.drain(..).collect()
                    };
                    plain.into_iter().for_each(read_off_worker);
                    return;
                }
            },
        }
    }
}

/// Hands a completed read's record (or why not) to its job.
fn finish(slot: Slot, result: i32) {
    let Slot { job, buf, at, head } = slot;
    let len = job.loc.len as usize;
    if result < 0 {
        (job.done)(Err(io::Error::from_raw_os_error(-result)));
    } else if result as usize >= head + len {
        (job.done)(Ok(&buf[at + head..at + head + len]));
    } else {
        // A short read (not expected of a regular file): read it whole
        // the plain way.
        read_off_worker(job);
    }
}

impl State {
    /// Submits what is queued (as far as slots allow) and takes what
    /// completed: (completed reads with their results, reads to do with
    /// `pread` instead).
    fn turn(&mut self) -> (Vec<(Slot, i32)>, Vec<Job>) {
        if self.broken || !self.submit() {
            return (Vec::new(), self.pending.drain(..).collect());
        }
        let done: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let mut finished = Vec::with_capacity(done.len());
        for (i, result) in done {
            if let Some(slot) = self.slots.get_mut(i as usize).and_then(Option::take) {
                self.free.push(i as usize);
                finished.push((slot, result));
            }
        }
        (finished, Vec::new())
    }

    /// Submits queued reads, as far as slots allow; false if the ring
    /// failed (it is then broken: every read goes through `pread`).
    fn submit(&mut self) -> bool {
        if self.broken {
            return false;
        }
        while !self.free.is_empty() {
            let Some(job) = self.pending.pop_front() else {
                break;
            };
            if let Err(job) = self.push(job) {
                self.pending.push_front(job);
                break;
            }
        }
        if self.ring.submission().is_empty() {
            return true;
        }
        match self.ring.submit() {
            Ok(_) => true,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) =>
            {
                true
            }
            Err(e) => {
                tracing::warn!("Tiering: io_uring submit failed ({e}); reading with pread");
                self.break_down();
                false
            }
        }
    }

    /// Puts `job` in a free slot and its read in the submission queue;
    /// gives it back if there is no room (it waits for the next turn).
    fn push(&mut self, job: Job) -> Result<(), Job> {
        let Some(i) = self.free.pop() else {
            return Err(job);
        };
        let (offset, head, total) = job.file.span(job.loc);
        let (mut buf, at) = job.file.buffer(total);
        let entry = io_uring::opcode::Read::new(
            io_uring::types::Fd(job.file.file.as_raw_fd()),
            buf[at..].as_mut_ptr(),
            total as u32,
        )
        .offset(offset)
        .build()
        .user_data(i as u64);
        // SAFETY: the buffer and the file stay alive, in `slots[i]`, until
        // the read's completion is taken (a Vec's heap buffer does not
        // move when the Vec does); a broken ring leaks them instead.
        if unsafe { self.ring.submission().push(&entry) }.is_err() {
            self.free.push(i);
            return Err(job);
        }
        self.slots[i] = Some(Slot { job, buf, at, head });
        Ok(())
    }

    /// The ring failed: the reads it holds go back to the queue, for
    /// `pread`. The buffers of reads the kernel may still fill are leaked,
    /// not freed.
    fn break_down(&mut self) {
        self.broken = true;
        for slot in self.slots.iter_mut().filter_map(Option::take) {
            std::mem::forget(slot.buf);
            self.pending.push_back(slot.job);
        }
    }
}

impl Drop for State {
    /// At the thread's exit: the kernel may still be writing into the
    /// buffers of reads in flight once the ring's descriptor is closed, so
    /// they are leaked, not freed.
    fn drop(&mut self) {
        for slot in self.slots.iter_mut().filter_map(Option::take) {
            std::mem::forget(slot.buf);
        }
    }
}
