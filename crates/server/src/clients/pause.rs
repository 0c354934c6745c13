//! CLIENT PAUSE / UNPAUSE: while a pause lasts, the commands it covers
//! (every command for ALL; writes and commands that may propagate for
//! WRITE) wait before they run, as Redis 7.0's blockPostponeClient.
//! Replicas' and MONITOR's connections are never paused.

use std::sync::atomic::{fence, AtomicU64, AtomicU8, Ordering, Ordering::Relaxed};
use std::time::Duration;

use tokio::sync::Notify;

/// One worker's commands past the pause gate: a count that is odd while
/// one runs. A pause is in force once every command that passed the gate
/// before it has finished: CLIENT PAUSE answers, and FAILOVER reads the
/// offset its replica must reach, only then ([`wait_passed`]); in a
/// single-threaded Redis no command is ever in flight then.
///
/// The worker's `enter` (a store, then a full fence, then the gate's read
/// of the pause) and the pauser's (the pause stored, a full fence, then
/// the counts read) cannot both miss the other's store.
#[derive(Default)]
pub struct InFlight(AtomicU64);

impl InFlight {
    /// A command starts (before the gates); false when one already runs
    /// on this worker (a nested dispatch), which then does not `leave`.
    #[inline]
    pub fn enter(&self) -> bool {
        let n = self.0.load(Relaxed);
        if n & 1 == 1 {
            return false;
        }
        self.0.store(n + 1, Relaxed);
        fence(Ordering::SeqCst);
        true
    }

    /// The command has run, its write applied and fed to the stream.
    #[inline]
    pub fn leave(&self) {
        self.0.store(self.0.load(Relaxed) + 1, Ordering::Release);
    }
}

/// Waits until every command running on `workers` when called has
/// finished (a pause was stored before: later ones see it).
pub fn wait_passed<'a>(workers: impl Iterator<Item = &'a InFlight>) {
    fence(Ordering::SeqCst);
    for w in workers {
        let n = w.0.load(Ordering::Acquire);
        if n & 1 == 0 {
            continue;
        }
        while w.0.load(Ordering::Acquire) == n {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// What a pause covers.
pub const NONE: u8 = 0;
pub const WRITE: u8 = 1;
pub const ALL: u8 = 2;

#[derive(Default)]
pub struct Pause {
    mode: AtomicU8,
    /// Unix ms when the pause ends.
    end_ms: AtomicU64,
    /// Signalled when a pause ends early (CLIENT UNPAUSE).
    ended: Notify,
}

impl Pause {
    /// The mode in force now (NONE once the end has passed).
    #[inline]
    pub fn mode(&self) -> u8 {
        let mode = self.mode.load(Relaxed);
        if mode == NONE || crate::command::unix_ms() >= self.end_ms.load(Relaxed) {
            return NONE;
        }
        mode
    }

    /// CLIENT PAUSE: a pause already in force keeps the later end and the
    /// wider mode, as Redis's pauseClients.
    pub fn pause(&self, end_ms: u64, mode: u8) {
        let current = self.mode();
        if current == NONE {
            self.end_ms.store(end_ms, Relaxed);
            self.mode.store(mode, Relaxed);
        } else {
            self.end_ms.fetch_max(end_ms, Relaxed);
            self.mode.fetch_max(mode, Relaxed);
        }
    }

    /// When the pause in force ends (unix ms; 0: none).
    pub fn end_ms(&self) -> u64 {
        if self.mode() == NONE {
            0
        } else {
            self.end_ms.load(Relaxed)
        }
    }

    /// CLIENT UNPAUSE.
    pub fn unpause(&self) {
        self.mode.store(NONE, Relaxed);
        self.ended.notify_waiters();
    }

    /// Waits until no pause is in force.
    pub async fn wait(&self) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.mode() == NONE {
                return;
            }
            let left = self
                .end_ms
                .load(Relaxed)
                .saturating_sub(crate::command::unix_ms());
            tokio::select! {
                _ = ended => {}
                _ = tokio::time::sleep(Duration::from_millis(left.max(1))) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_pauser_waits_for_the_command_in_flight_and_not_for_an_idle_worker() {
        let (busy, idle) = (Arc::new(InFlight::default()), InFlight::default());
        assert!(busy.enter());
        assert!(!busy.enter(), "a nested dispatch is not counted twice");
        // Idle workers are not waited for.
        wait_passed([&idle].into_iter());
        let left = Arc::new(AtomicBool::new(false));
        let pauser = {
            let (busy, left) = (busy.clone(), left.clone());
            std::thread::spawn(move || {
                wait_passed([&*busy].into_iter());
                left.load(Ordering::SeqCst)
            })
        };
        left.store(true, Ordering::SeqCst);
        busy.leave();
        assert!(
            pauser.join().expect("pauser"),
            "the pauser went on before the command left"
        );
        // The next command on that worker is a new one.
        assert!(busy.enter());
        busy.leave();
    }
}
