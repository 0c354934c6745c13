//! A client's inbox: what reaches a connection besides the replies to its
//! own requests — pub/sub messages, client-side caching invalidations,
//! MONITOR lines. Other clients' commands put messages in; the connection
//! writes them out when it waits for its next request, or right after its
//! own command's reply (an invalidation its own write caused follows the
//! reply, as in Redis 7.0).
//!
//! Every connection has one, empty until used: a lock-free counter, an
//! empty queue and a `Notify` cost no allocation, so idle connections stay
//! small and the sender needs no channel set up in advance (a redirect
//! target of client tracking never asked for messages).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

pub type Message = Arc<[u8]>;

/// `client-output-buffer-limit` of the class the messages count against:
/// hard, soft, soft seconds (0: none).
#[derive(Debug, Clone, Copy, Default)]
pub struct Limit {
    pub hard: usize,
    pub soft: usize,
    pub soft_secs: u64,
}

impl From<crate::config::BufferLimit> for Limit {
    fn from(l: crate::config::BufferLimit) -> Limit {
        Limit {
            hard: usize::try_from(l.hard).unwrap_or(usize::MAX),
            soft: usize::try_from(l.soft).unwrap_or(usize::MAX),
            soft_secs: l.soft_secs,
        }
    }
}

/// What [`Inbox::push`] did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    Queued,
    /// The inbox went over its limit: the caller closes the client.
    OverLimit,
}

#[derive(Default)]
pub struct Inbox {
    queue: Mutex<Vec<Message>>,
    /// Bytes queued and not yet written to the socket.
    pending: AtomicUsize,
    /// When the queue went over the soft limit (ms on `clock`), 0 if not.
    soft_since: AtomicU64,
    notify: Notify,
}

impl Inbox {
    /// Bytes waiting to be written.
    #[inline]
    pub fn pending(&self) -> usize {
        self.pending.load(Relaxed)
    }

    /// Queues `msg` and wakes the connection, unless that takes the queue
    /// over `limit`.
    pub fn push(&self, msg: Message, limit: Limit) -> Pushed {
        let pending = self.pending.fetch_add(msg.len(), Relaxed) + msg.len();
        let over = |inbox: &Inbox| {
            inbox.pending.fetch_sub(msg.len(), Relaxed);
            Pushed::OverLimit
        };
        if limit.hard > 0 && pending > limit.hard {
            return over(self);
        }
        if limit.soft > 0 && pending > limit.soft {
            let now = clock_ms();
            match self.soft_since.load(Relaxed) {
                0 => self.soft_since.store(now, Relaxed),
                since if now - since > limit.soft_secs * 1000 => return over(self),
                _ => {}
            }
        } else {
            self.soft_since.store(0, Relaxed);
        }
        self.queue.lock().push(msg);
        self.notify.notify_one();
        Pushed::Queued
    }

    /// Moves the queued messages into `out` (stopping once it holds
    /// `max` bytes); returns the bytes moved. They stay counted as pending
    /// until [`Inbox::written`].
    pub fn take(&self, out: &mut Vec<u8>, max: usize) -> usize {
        let mut q = self.queue.lock();
        let mut bytes = 0;
        let mut n = 0;
        for m in q.iter() {
            if out.len() >= max {
                break;
            }
            out.extend_from_slice(m);
            bytes += m.len();
            n += 1;
        }
        q.drain(..n);
        if q.is_empty() && q.capacity() > 64 {
            *q = Vec::new();
        }
        bytes
    }

    /// `bytes` taken with [`Inbox::take`] left for the socket.
    pub fn written(&self, bytes: usize) {
        self.pending.fetch_sub(bytes, Relaxed);
    }

    /// Resolves once a message has been pushed since the last wait (a
    /// push while nobody waits is remembered).
    pub async fn wait(&self) {
        self.notify.notified().await
    }
}

/// Milliseconds since the first use, never 0.
fn clock_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_take_and_limits() {
        let inbox = Inbox::default();
        assert_eq!(
            inbox.push(Arc::from(&b"abc"[..]), Limit::default()),
            Pushed::Queued
        );
        assert_eq!(
            inbox.push(Arc::from(&b"de"[..]), Limit::default()),
            Pushed::Queued
        );
        let mut out = Vec::new();
        assert_eq!(inbox.take(&mut out, usize::MAX), 5);
        assert_eq!(out, b"abcde");
        assert_eq!(inbox.pending(), 5);
        inbox.written(5);
        assert_eq!(inbox.pending(), 0);
        let hard = Limit {
            hard: 4,
            ..Limit::default()
        };
        assert_eq!(
            inbox.push(Arc::from(&b"12345"[..]), hard),
            Pushed::OverLimit
        );
    }
}
