//! Waiting for durability: what a connection awaits before replies that
//! acknowledge writes leave (`always`: an fsync; otherwise the OS write),
//! and each worker's relay of "durable moved".

use super::*;

/// How [`Aof::wait_durable`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durable {
    /// Durable before the call.
    Already,
    /// Durable after waiting for an fsync (or the log was turned off).
    Waited,
    /// Writing or fsyncing the log failed: the writes are not durable
    /// and must not be acknowledged.
    Failed,
}

/// Ends this worker's group commit leadership however the leader's
/// wait ends (see `Aof::wait_durable`).
pub(super) struct StandDown;

impl Drop for StandDown {
    fn drop(&mut self) {
        LEADING.with(|l| l.set(false));
    }
}

/// A worker's relay of "durable moved" to its waiting connections (see
/// `Aof::relay_durable`).
#[derive(Default)]
pub(super) struct Relay {
    /// Wakes this worker's connections waiting in `wait_durable`.
    pub(super) changed: tokio::sync::Notify,
    /// Wakes the relay when the first connection starts waiting.
    pub(super) wanted: tokio::sync::Notify,
    /// This worker's connections waiting in `wait_durable`.
    pub(super) waiters: std::cell::Cell<usize>,
}

/// Counts a connection out of its worker's `Relay::waiters`.
pub(super) struct LocalWaiter(std::rc::Rc<Relay>);

impl LocalWaiter {
    pub(super) fn arrives(relay: std::rc::Rc<Relay>) -> LocalWaiter {
        let n = relay.waiters.get() + 1;
        relay.waiters.set(n);
        if n == 1 {
            relay.wanted.notify_one();
        }
        LocalWaiter(relay)
    }
}

impl Drop for LocalWaiter {
    fn drop(&mut self) {
        self.0.waiters.set(self.0.waiters.get() - 1);
    }
}

/// Counts a connection out of `Aof::waiting` however its wait ends.
pub(super) struct WaiterGuard<'a>(&'a AtomicU64);

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

impl Aof {
    /// Before replies that acknowledge writes up to `offset` leave: under
    /// `always`, waits until the log is durable that far (every client that
    /// wrote since the last fsync waits for the same one) and returns
    /// whether it waited; if the log cannot be written, an error: the
    /// connection ends without its replies, since what they acknowledge is
    /// not on disk (Redis exits in this case). Otherwise nothing to wait for.
    pub async fn durable_before_reply(&self, offset: u64, company: bool) -> std::io::Result<bool> {
        if offset == 0 || self.fsync_policy() != Fsync::Always || !self.enabled() {
            return Ok(false);
        }
        match self.wait_durable(offset, company).await {
            Durable::Already => Ok(false),
            Durable::Waited => Ok(true),
            Durable::Failed => Err(std::io::Error::other(
                "append-only log write failed: replies withheld",
            )),
        }
    }

    /// Under everysec/no: the log is handed to the OS (written, not
    /// fsynced) up to `offset` before the replies acknowledging it leave,
    /// so a crash of the process loses nothing acknowledged.
    pub fn written_before_reply(&self, offset: u64) {
        if offset > 0 && self.enabled() && self.fsync_policy() != Fsync::Always {
            self.write_to_os(offset);
        }
    }

    /// Waits until the log is durable up to `offset` (appendfsync always).
    ///
    /// Group commit: one fsync makes durable everything appended before
    /// it, for every connection on every thread; whatever is appended
    /// during it goes into the next one.
    ///
    /// On a fast disk (an fsync under `SLOW_FSYNC`) the waiting
    /// connections elect a leader, which first lets every other ready
    /// connection of its worker run (they append their writes: the end of
    /// the event-loop round, where Redis fsyncs), then writes and fsyncs
    /// the log on its own thread while the others wait for it. Handing the
    /// fsync to another thread instead costs two cross-thread wake-ups per
    /// group, which on a fast disk cost more CPU than the fsync itself
    /// (measured: 0.67x of the no-log rate, against Redis's 0.87x).
    ///
    /// On a slow disk (a network volume) the log thread forms groups and
    /// the fsync threads overlap their fsyncs (see `gather`): the worker
    /// keeps serving while a group's fsync is in flight.
    ///
    /// `company`: the calling worker serves other connections, which may
    /// be about to append.
    pub async fn wait_durable(&self, offset: u64, company: bool) -> Durable {
        if self.durable.load(Relaxed) >= offset {
            return Durable::Already;
        }
        // On a worker, wait on its local relay (see `relay_durable`).
        let local = LOCAL_DURABLE
            .with(|l| l.borrow().clone())
            .map(LocalWaiter::arrives);
        self.waiter_arrives();
        let _left = WaiterGuard(&self.waiting);
        loop {
            let notified = match &local {
                Some(l) => l.0.changed.notified(),
                None => self.durable_changed.notified(),
            };
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.durable.load(SeqCst) >= offset || !self.enabled() {
                return Durable::Waited;
            }
            if !self.write_ok() {
                return Durable::Failed;
            }
            if self.fsync_inline() && !LEADING.with(|l| l.replace(true)) {
                let leader = StandDown;
                // Let the worker's other ready connections append first,
                // unless it has no others (then the yield is pure
                // latency). Who waits right now is no guide: the first
                // connection of a round finds nobody waiting yet, and
                // fsyncing at once would give every connection its own
                // fsync, one after another.
                if company || self.waiting.load(SeqCst) > 1 {
                    tokio::task::yield_now().await;
                }
                self.sync_inline();
                // Stand down before waking the others: one whose write
                // missed this fsync must be able to lead the next. A
                // connection that starts waiting after the load below sees
                // the new durable offset (SeqCst), or leads itself.
                drop(leader);
                if self.waiting.load(SeqCst) > 1 {
                    self.durable_changed.notify_waiters();
                }
                continue;
            }
            notified.await;
        }
    }

    /// Runs on each worker thread: relays the log thread's "durable
    /// offset moved" to the connections of this thread waiting in
    /// `wait_durable`. The log thread then wakes one task per worker per
    /// fsync (a cross-thread wake-up is an eventfd write and often a
    /// context switch) instead of one per waiting connection.
    pub async fn relay_durable(self: Arc<Self>) {
        let relay = std::rc::Rc::new(Relay::default());
        LOCAL_DURABLE.with(|l| *l.borrow_mut() = Some(relay.clone()));
        loop {
            // Listen only while a connection of this worker waits: a worker
            // without any would otherwise be woken by every fsync of the
            // others (measured: 0.4 s of CPU per 200k `always` writes on
            // the second, idle worker).
            while relay.waiters.get() == 0 {
                relay.wanted.notified().await;
            }
            let mut notified = Box::pin(self.durable_changed.notified());
            notified.as_mut().enable();
            // A waiter that checked `durable` before this registration
            // checks it again now, so no change is missed in between.
            relay.changed.notify_waiters();
            loop {
                notified.as_mut().await;
                // Register for the next change before waking the waiters:
                // a change between the two is then seen by the waiters'
                // own check of `durable`, or wakes this loop again.
                let mut next = Box::pin(self.durable_changed.notified());
                next.as_mut().enable();
                relay.changed.notify_waiters();
                // The woken waiters have not run yet: yield so that they
                // leave (or wait again) before deciding to stop listening.
                tokio::task::yield_now().await;
                if relay.waiters.get() == 0 {
                    break;
                }
                notified = next;
            }
        }
    }

    /// `everysec`/`no`: hands the log to the OS up to `offset` before the
    /// replies that acknowledge it leave, as Redis writes the log in
    /// beforeSleep, so a crash of the process (not of the machine) loses
    /// nothing acknowledged. The first connection of a round to get here
    /// writes what the whole round appended; the others find it written.
    pub fn write_to_os(&self, offset: u64) {
        if self.durable.load(Acquire) >= offset {
            return;
        }
        let sink = self.sink.lock();
        if self.durable.load(Acquire) >= offset {
            return;
        }
        self.write_out(sink, false);
    }
}
