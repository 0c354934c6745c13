//! Compaction: reclaiming the space of records no key points at.
//!
//! Overwritten, deleted and loaded-back values leave their records behind
//! as garbage; a segment is removed once nothing in it is live. While the
//! log's files hold more than [`TRIGGER`] times the live bytes, a
//! background thread takes the sealed segment with the least live share
//! (below [`MAX_LIVE_SHARE`]), reads it front to back in large reads,
//! appends its live records at the head in batches, and points their
//! keys' stubs at the new places; the old segment goes when its last
//! record is released. The thread reads and writes at most [`RATE`] bytes
//! a second, so it never takes more than that share of the disk.
//!
//! A record is live when a key of that name, in some database, holds a
//! stub pointing at it. A key renamed while spilled keeps its record
//! under its old name: compaction leaves that record (and so its segment)
//! where it is until the key lets it go.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Weak;
use std::time::{Duration, Instant};

use super::log::{decode_record, Loc, HEADER};
use super::Tier;
use crate::server::Server;
use crate::storage::value::Value;

/// Disk bytes over live bytes past which compaction runs.
pub const TRIGGER: f64 = 1.5;
/// A segment is compacted only while less than this share of it is live.
pub const MAX_LIVE_SHARE: f64 = 0.5;
/// Bytes read plus written per second, at most.
pub const RATE: u64 = 64 << 20;
/// Below this much on disk, garbage is left alone.
const MIN_DISK: u64 = 64 << 20;
/// Bytes read at once, and written at once.
const CHUNK: usize = 4 << 20;

/// Starts the compaction thread for `tier`.
pub fn start(server: Weak<Server>, tier: &'static Tier) {
    let spawned = std::thread::Builder::new()
        .name("keel-tier-compact".into())
        .spawn(move || {
            for round in 1u64.. {
                std::thread::sleep(Duration::from_millis(200));
                let Some(server) = server.upgrade() else {
                    return;
                };
                // Every 10 s: clean copies whose key went away.
                if round.is_multiple_of(50) {
                    super::clean::sweep(&server, tier);
                }
                if let Some(segment) = due(tier) {
                    compact_segment(&server, tier, segment);
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("Tiering: can't start the compaction thread: {e}");
    }
}

/// The segment to compact now, if any.
fn due(tier: &Tier) -> Option<u32> {
    let log = tier.log.lock();
    let (disk, live) = (log.disk_bytes(), log.live_bytes());
    if disk < MIN_DISK || (disk as f64) <= TRIGGER * live as f64 {
        return None;
    }
    log.compaction_candidate(MAX_LIVE_SHARE)
}

/// Holds the thread to [`RATE`].
struct Pace {
    start: Instant,
    bytes: u64,
}

impl Pace {
    fn spent(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
        let due = Duration::from_secs_f64(self.bytes as f64 / RATE as f64);
        if let Some(wait) = due.checked_sub(self.start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
}

/// Moves the live records of `segment` to the head.
fn compact_segment(server: &Server, tier: &Tier, segment: u32) {
    let Some((file, size)) = tier.log.lock().segment(segment) else {
        return;
    };
    let mut pace = Pace {
        start: Instant::now(),
        bytes: 0,
    };
    let mut at = 0u64;
    let mut buf = Vec::new();
    while at < size {
        let want = CHUNK.min((size - at) as usize);
        buf.resize(want, 0);
        if let Err(e) = std::os::unix::fs::FileExt::read_exact_at(&*file, &mut buf, at) {
            tracing::warn!("Tiering: compaction reading segment {segment}: {e}");
            return;
        }
        pace.spent(want);
        // The whole records in this chunk (one larger than a chunk is
        // read by itself).
        let mut live = Vec::new();
        let mut used = 0usize;
        loop {
            let rest = &buf[used..];
            if rest.len() < HEADER {
                break;
            }
            let len = HEADER
                + u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]) as usize
                + u32::from_le_bytes([rest[8], rest[9], rest[10], rest[11]]) as usize;
            if len > rest.len() {
                if used == 0 {
                    // A record larger than the chunk: read it whole.
                    buf.resize(len, 0);
                    if std::os::unix::fs::FileExt::read_exact_at(&*file, &mut buf, at).is_err() {
                        return;
                    }
                    continue;
                }
                break;
            }
            let record = &rest[..len];
            let loc = Loc {
                segment,
                len: len as u32,
                offset: at + used as u64,
            };
            if let Some((key, _)) = decode_record(record) {
                if let Some(db) = owner(server, key, loc) {
                    live.push((db, key.to_vec(), loc, record.to_vec()));
                }
            }
            used += len;
        }
        if used == 0 {
            tracing::warn!("Tiering: compaction found a damaged record in segment {segment}");
            return;
        }
        at += used as u64;
        let moved: usize = live.iter().map(|l| l.3.len()).sum();
        relocate(server, tier, live);
        pace.spent(moved);
    }
    tier.stats.compacted_segments.fetch_add(1, Relaxed);
}

/// The database whose `key` holds the stub of `loc`, if any.
fn owner(server: &Server, key: &[u8], loc: Loc) -> Option<usize> {
    let now = crate::command::unix_ms();
    let mut view = server.keyspace.lock_key(key);
    (0..server.keyspace.databases())
        .find(|&db| view.spilled_loc(db, key, now).map(|(l, _)| l) == Some(loc))
}

/// Appends the records of `live` at the head and points their stubs there.
fn relocate(server: &Server, tier: &Tier, live: Vec<(usize, Vec<u8>, Loc, Vec<u8>)>) {
    if live.is_empty() {
        return;
    }
    let batch: Vec<u8> = live.iter().flat_map(|l| l.3.iter().copied()).collect();
    let lens: Vec<u32> = live.iter().map(|l| l.3.len() as u32).collect();
    let locs = match tier.append(&batch, &lens) {
        Ok(locs) => locs,
        Err(e) => {
            tracing::warn!(
                "Tiering: compaction writing to {}: {e}",
                tier.dir().display()
            );
            return;
        }
    };
    let now = crate::command::unix_ms();
    for ((db, key, old, _), new) in live.into_iter().zip(locs) {
        let mut view = server.keyspace.lock_key(&key);
        let moved = match view.peek_meta(db, &key, now) {
            Some(e) => match &*e.value {
                Value::Spilled(stub) if stub.loc() == old => match stub.moved(new) {
                    Some(to) => {
                        tier.stats.spilled_keys.fetch_add(1, Relaxed);
                        // (The old stub, dropped here, frees the old record.)
                        *e.value = Value::Spilled(to);
                        tier.stats
                            .compacted_bytes
                            .fetch_add(new.len as u64, Relaxed);
                        true
                    }
                    None => false,
                },
                _ => false,
            },
            None => false,
        };
        drop(view);
        if !moved {
            // The key changed while the batch was written.
            super::release_unowned(new);
        }
    }
}
