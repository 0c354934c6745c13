//! Freeing large values on a background thread (`keel-lazyfree`), so
//! deleting a collection of millions of elements does not stall the
//! worker that deleted it: UNLINK, FLUSHALL/FLUSHDB ASYNC, and DEL,
//! eviction and expiry when their `lazyfree-lazy-*` parameter says so.
//!
//! As Redis's lazyfree.c, only values whose freeing costs more than
//! [`THRESHOLD`] elements go to the thread: handing a small value over
//! costs more than freeing it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

/// Redis's LAZYFREE_THRESHOLD: the free effort (elements, roughly) above
/// which a value is freed in the background.
pub const THRESHOLD: usize = 64;

type Garbage = Box<dyn Send>;

static QUEUE: OnceLock<Mutex<Sender<Garbage>>> = OnceLock::new();
static PENDING: AtomicUsize = AtomicUsize::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

/// The `lazyfree-lazy-*` parameters.
pub static LAZY_EVICTION: AtomicBool = AtomicBool::new(false);
pub static LAZY_EXPIRE: AtomicBool = AtomicBool::new(false);
pub static LAZY_SERVER_DEL: AtomicBool = AtomicBool::new(false);
pub static LAZY_USER_DEL: AtomicBool = AtomicBool::new(false);
pub static LAZY_USER_FLUSH: AtomicBool = AtomicBool::new(false);

fn queue() -> Option<Sender<Garbage>> {
    let q = QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Garbage>();
        let started = std::thread::Builder::new()
            .name("keel-lazyfree".into())
            .spawn(move || {
                for garbage in rx {
                    drop(garbage);
                    // The memory is back: count it at once (maxmemory).
                    super::alloc::flush_thread();
                    PENDING.fetch_sub(1, Relaxed);
                    FREED.fetch_add(1, Relaxed);
                }
            });
        if let Err(e) = started {
            tracing::warn!("lazy free thread: {e}; values are freed in place");
        }
        Mutex::new(tx)
    });
    q.lock().ok().map(|tx| tx.clone())
}

/// Frees `value` here if `effort` is small, else on the lazy free thread.
pub fn free<T: Send + 'static>(value: T, effort: usize) {
    if effort <= THRESHOLD {
        return;
    }
    free_in_background(value);
}

/// Frees `value` on the lazy free thread, whatever its size (FLUSHALL
/// ASYNC's whole maps).
pub fn free_in_background<T: Send + 'static>(value: T) {
    let Some(tx) = queue() else {
        return;
    };
    PENDING.fetch_add(1, Relaxed);
    if let Err(back) = tx.send(Box::new(value)) {
        // The thread could not start: free it here.
        PENDING.fetch_sub(1, Relaxed);
        drop(back);
    }
}

/// `lazyfree_pending_objects`.
pub fn pending() -> usize {
    PENDING.load(Relaxed)
}

/// `lazyfreed_objects`.
pub fn freed() -> u64 {
    FREED.load(Relaxed)
}
