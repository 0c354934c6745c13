//! The fsync threads of a slow disk under `always` (see `Aof::gather`).

use super::*;

/// Threads that fsync written groups under `always`. An fsync makes
/// durable everything written before it was called, so fsyncs of later
/// groups may overlap earlier ones and complete in any order: the durable
/// offset is the largest end of a completed fsync. On a slow disk (a
/// network volume) a client then waits for one fsync, not for the one in
/// flight plus its own.
#[derive(Default)]
pub(super) struct FsyncPool {
    pub(super) jobs: Mutex<FsyncJobs>,
    pub(super) work: Condvar,
    pub(super) slot_free: Condvar,
}

#[derive(Default)]
pub(super) struct FsyncJobs {
    pub(super) queue: std::collections::VecDeque<(Arc<File>, u64)>,
    pub(super) in_flight: usize,
    pub(super) stop: bool,
}

impl FsyncPool {
    /// Queues an fsync of `file` that makes offset `end` durable; waits
    /// while FSYNC_PARALLEL are in flight.
    pub(super) fn submit(&self, file: Arc<File>, end: u64) {
        let mut j = self.jobs.lock();
        while j.in_flight >= FSYNC_PARALLEL && !j.stop {
            self.slot_free.wait(&mut j);
        }
        j.in_flight += 1;
        j.queue.push_back((file, end));
        self.work.notify_one();
    }

    pub(super) fn next(&self) -> Option<(Arc<File>, u64)> {
        let mut j = self.jobs.lock();
        loop {
            if let Some(job) = j.queue.pop_front() {
                return Some(job);
            }
            if j.stop {
                return None;
            }
            self.work.wait(&mut j);
        }
    }

    pub(super) fn done(&self) {
        let mut j = self.jobs.lock();
        j.in_flight -= 1;
        self.slot_free.notify_one();
    }

    pub(super) fn stop(&self) {
        self.jobs.lock().stop = true;
        self.work.notify_all();
        self.slot_free.notify_all();
    }
}
