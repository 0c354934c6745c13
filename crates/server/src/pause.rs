//! CLIENT PAUSE / UNPAUSE: while a pause lasts, the commands it covers
//! (every command for ALL; writes and commands that may propagate for
//! WRITE) wait before they run, as Redis 7.0's blockPostponeClient.
//! Replicas' and MONITOR's connections are never paused.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::time::Duration;

use tokio::sync::Notify;

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
