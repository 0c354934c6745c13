//! Reads of spilled values through one io_uring: a reader thread takes
//! every read waiting in its queue, submits them together, and hands each
//! result on as it completes.
//!
//! Why not a pool of threads each blocked in `pread` (the fallback, where
//! io_uring is not available): with many reads in flight the pool's
//! threads and their hand-offs cost most of a read's CPU (measured in
//! docs/benchmarks.md, "Tiering"); here one thread wakes once for a whole
//! batch of submissions and completions.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;
use std::sync::Arc;

use super::log::Loc;

/// Reads in flight at most.
const DEPTH: usize = 128;

/// What to do with a read's bytes (the whole record, or why not).
pub type Done = Box<dyn FnOnce(io::Result<Vec<u8>>) + Send>;

/// One read: the record at `loc` of `file`.
pub struct Job {
    pub file: Arc<File>,
    pub loc: Loc,
    pub done: Done,
}

/// The queue of the reader thread.
pub struct Ring {
    jobs: mpsc::Sender<Job>,
}

impl Ring {
    /// Starts the reader thread; an error where io_uring is unavailable.
    pub fn start() -> io::Result<Ring> {
        let ring = io_uring::IoUring::new(DEPTH as u32)?;
        let (jobs, queue) = mpsc::channel();
        std::thread::Builder::new()
            .name("keel-tier-read".into())
            .spawn(move || run(ring, queue))?;
        Ok(Ring { jobs })
    }

    /// Queues `job`; it runs at once, on this thread, if the reader is
    /// gone.
    pub fn read(&self, job: Job) {
        if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
            let result = read_at(&job.file, job.loc);
            (job.done)(result);
        }
    }
}

/// The record at `loc`, read with `pread`.
fn read_at(file: &File, loc: Loc) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; loc.len as usize];
    file.read_exact_at(&mut buf, loc.offset)?;
    Ok(buf)
}

/// A read in flight: its job and the buffer the kernel fills.
struct Slot {
    job: Job,
    buf: Vec<u8>,
}

fn run(mut ring: io_uring::IoUring, queue: mpsc::Receiver<Job>) {
    let mut slots: Vec<Option<Slot>> = (0..DEPTH).map(|_| None).collect();
    let mut free: Vec<usize> = (0..DEPTH).rev().collect();
    let mut open = true;
    loop {
        let in_flight = DEPTH - free.len();
        if in_flight == 0 {
            if !open {
                return;
            }
            match queue.recv() {
                Ok(job) => submit(&mut ring, &mut slots, &mut free, job),
                Err(_) => return,
            }
        }
        while open && !free.is_empty() {
            match queue.try_recv() {
                Ok(job) => submit(&mut ring, &mut slots, &mut free, job),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => open = false,
            }
        }
        if DEPTH == free.len() {
            continue;
        }
        if let Err(e) = ring.submit_and_wait(1) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // The ring is broken: finish what is in flight with pread.
            tracing::warn!("Tiering: io_uring wait failed ({e}); reading with pread");
            for slot in slots.iter_mut().filter_map(Option::take) {
                let result = read_at(&slot.job.file, slot.job.loc);
                (slot.job.done)(result);
            }
            free = (0..DEPTH).rev().collect();
            continue;
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (i, result) in done {
            let Some(slot) = slots.get_mut(i as usize).and_then(Option::take) else {
                continue;
            };
            free.push(i as usize);
            let Slot { job, buf } = slot;
            let result = if result < 0 {
                Err(io::Error::from_raw_os_error(-result))
            } else if result as usize == buf.len() {
                Ok(buf)
            } else {
                // A short read (not expected of a regular file): read it
                // whole the plain way.
                read_at(&job.file, job.loc)
            };
            (job.done)(result);
        }
    }
}

/// Puts `job` in a free slot and its read in the submission queue.
fn submit(
    ring: &mut io_uring::IoUring,
    slots: &mut [Option<Slot>],
    free: &mut Vec<usize>,
    job: Job,
) {
    let Some(i) = free.pop() else {
        // (The caller takes jobs only while a slot is free.)
        let result = read_at(&job.file, job.loc);
        (job.done)(result);
        return;
    };
    let mut buf = vec![0u8; job.loc.len as usize];
    let entry = io_uring::opcode::Read::new(
        io_uring::types::Fd(job.file.as_raw_fd()),
        buf.as_mut_ptr(),
        job.loc.len,
    )
    .offset(job.loc.offset)
    .build()
    .user_data(i as u64);
    // SAFETY: the buffer and the file stay alive, in `slots[i]`, until the
    // read's completion is taken (a Vec's heap buffer does not move when
    // the Vec does).
    let pushed = unsafe { ring.submission().push(&entry) };
    if pushed.is_err() {
        // The submission queue is full: submit what is there and retry.
        let _ = ring.submit();
        // SAFETY: as above.
        if unsafe { ring.submission().push(&entry) }.is_err() {
            free.push(i);
            let result = read_at(&job.file, job.loc);
            (job.done)(result);
            return;
        }
    }
    slots[i] = Some(Slot { job, buf });
}
