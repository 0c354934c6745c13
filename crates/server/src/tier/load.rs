//! Reading spilled values back for a request, off the worker.
//!
//! Dispatch asks [`missing`] which of the request's keys need their value
//! (the key specs say so: `Command::for_each_key_needing_value`) and have
//! it on disk. For those, the request does not run: its connection parks
//! (`Next::Load`) on the future this returns, while a blocking-pool
//! thread reads each record, decodes it and puts the value back in its
//! key; the worker serves its other connections meanwhile, and the
//! request runs again when every read is done. Reads of one record
//! coalesce: a second request waiting on it joins the first's read.
//!
//! A value read back is installed only if the key still holds the same
//! stub: the key may have been overwritten, deleted or renamed while the
//! read was in flight, and then the run again sees the key as it is now.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::admission::{Ticket, Tickets};
use super::log::{Loc, ReadError};
use super::Tier;
use crate::command::call::Call;
use crate::server::Server;
use crate::storage::access;
use crate::storage::keyspace::View;

/// What a parked request waits on: every read it needs, done. It holds
/// the tickets of the values read back and not admitted until it has
/// run again (`admission`).
pub type Loading = Pin<Box<dyn Future<Output = Tickets> + Send>>;

/// The reads `call` must wait for before it runs, started; `None` when
/// every value it needs is in memory. `first_look`: the request has not
/// looked before (it is not running again after its reads, and no
/// prefetch looked at it), so where its values are counts in the tier's
/// hit rate.
pub fn missing(
    server: &Server,
    db: usize,
    call: &Call,
    view: &mut View,
    now_ms: u64,
    first_look: bool,
) -> Option<Loading> {
    let loading = start_reads(server, db, call, view, now_ms, first_look)?;
    if let Some(tier) = super::active() {
        tier.stats.parked.fetch_add(1, Relaxed);
    }
    Some(loading)
}

/// Requests further down a pipeline (`requests`: the bytes received after
/// the one that just parked), up to [`PREFETCH`] of them: the reads they
/// will need start now, so that they are in flight together rather than
/// one request's at a time; each request, when it runs, finds its values
/// back or joins their read. `db` is the client's database now (a SELECT
/// in between makes a wasted read, nothing more). Returns the bytes of
/// `requests` looked at (the next prefetch starts after them). The reads
/// go in `held`, which the caller keeps until those requests have run
/// (it holds the tickets of values not admitted: `admission`).
pub fn prefetch(
    server: &Server,
    db: usize,
    requests: &[u8],
    max_bulk_len: usize,
    held: &mut Vec<Loading>,
) -> usize {
    let mut dec = resp::RequestDecoder::new(max_bulk_len);
    let mut at = 0;
    for _ in 0..PREFETCH {
        let Ok(Some(len)) = dec.decode(&requests[at..]) else {
            break;
        };
        let frame = &requests[at..at + len];
        at += len;
        let argv: Vec<&[u8]> = (0..dec.argc()).map(|i| dec.arg(frame, i)).collect();
        let Ok(call) = Call::resolve(&server.commands, &argv) else {
            continue;
        };
        let mut view = crate::command::lock_for(server, &call);
        let now = crate::command::unix_ms();
        if let Some(loading) = start_reads(server, db, &call, &mut view, now, true) {
            if let Some(tier) = super::active() {
                tier.stats.prefetched.fetch_add(1, Relaxed);
            }
            held.push(loading);
        }
    }
    at
}

/// Requests [`prefetch`] looks ahead at, at most.
const PREFETCH: usize = 64;

fn start_reads(
    server: &Server,
    db: usize,
    call: &Call,
    view: &mut View,
    now_ms: u64,
    count: bool,
) -> Option<Loading> {
    if call.cmd.args_ok.is_some_and(|ok| !ok(server, call.argv)) {
        // The handler refuses them before it reads a key.
        return None;
    }
    let mut wanted: Vec<(Vec<u8>, Loc, &'static str)> = Vec::new();
    call.cmd.for_each_key_needing_value(call.argv, |pos| {
        let key = call.argv[pos];
        if let Some((loc, encoding)) = view.value_needed(db, key, now_ms, count) {
            if !wanted.iter().any(|(_, l, _)| *l == loc) {
                wanted.push((key.to_vec(), loc, encoding));
            }
        }
    });
    if wanted.is_empty() {
        return None;
    }
    let tier = super::active()?;
    let server = server.arc()?;
    let waits: Vec<_> = wanted
        .into_iter()
        .map(|(key, loc, encoding)| fetch(tier, &server, db, key, loc, encoding))
        .collect();
    Some(Box::pin(async move {
        let mut tickets = Tickets::new();
        for w in waits {
            // (A dropped sender is a read that ended: the run again sees.)
            if let Ok(Some(ticket)) = w.await {
                tickets.push(ticket);
            }
        }
        tickets
    }))
}

/// A read of `loc` for `key`, started or joined.
fn fetch(
    tier: &'static Tier,
    server: &Arc<Server>,
    db: usize,
    key: Vec<u8>,
    loc: Loc,
    encoding: &'static str,
) -> tokio::sync::oneshot::Receiver<Option<Arc<Ticket>>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let id = (loc.segment, loc.offset);
    let first = {
        let mut in_flight = tier.in_flight.lock();
        let waiters = in_flight.entry(id).or_default();
        waiters.push(tx);
        waiters.len() == 1
    };
    if !first {
        tier.stats.coalesced.fetch_add(1, Relaxed);
        return rx;
    }
    let server = Arc::clone(server);
    let finish = move |read: Result<Vec<u8>, ReadError>| {
        let ticket = install(&server, tier, db, &key, loc, encoding, read).map(Arc::new);
        let waiters = tier.in_flight.lock().remove(&id);
        for w in waiters.into_iter().flatten() {
            let _ = w.send(ticket.clone());
        }
    };
    let Some(file) = tier.log.lock().reads(loc.segment) else {
        // (Freed, and its segment removed, since the request looked.)
        finish(Err(ReadError::NoSegment));
        return rx;
    };
    let job = super::ring::Job {
        file,
        loc,
        done: Box::new(move |record| {
            finish(
                record
                    .map_err(ReadError::Io)
                    .and_then(super::log::record_value),
            )
        }),
    };
    if tier.uring {
        if let Err(job) = super::ring::read(job) {
            super::ring::read_off_worker(job);
        }
    } else {
        super::ring::read_off_worker(job);
    }
    rx
}

/// Puts the value read from `loc` in `key` if the key still holds it;
/// the ticket of a value not admitted (`admission`).
#[allow(clippy::too_many_arguments)]
fn install(
    server: &Server,
    tier: &Tier,
    db: usize,
    key: &[u8],
    loc: Loc,
    encoding: &str,
    read: Result<Vec<u8>, ReadError>,
) -> Option<Ticket> {
    let value = match read {
        Ok(payload) => tier
            .decode(&payload, encoding)
            .map(|v| (v, super::clean::fingerprint(&payload)))
            .ok_or("an undecodable payload".to_string()),
        // The record was freed (its key overwritten or deleted) and its
        // segment removed since the request looked.
        Err(ReadError::NoSegment) => return None,
        Err(e) => Err(format!("{e:?}")),
    };
    let now = crate::command::unix_ms();
    let mut view = server.keyspace.lock_key(key);
    if view.spilled_loc(db, key, now).map(|(l, _)| l) != Some(loc) {
        return None;
    }
    let (value, fingerprint) = match value {
        Ok(v) => v,
        Err(e) => super::fatal_read(loc, &e),
    };
    let e = view.peek_meta(db, key, now)?;
    // Judged by the key's use before this read.
    let admitted = match crate::memory::evict::spill_policy(server) {
        policy if policy.is_random() => true,
        policy => tier.admits(crate::memory::evict::score_of(
            policy,
            *e.access,
            e.expire_at,
            now,
        )),
    };
    let stub = std::mem::replace(e.value, value);
    // Just used: sampling must not send it straight back (a value not
    // admitted goes back first, once its requests ran).
    access::touch(e.access, now);
    let ticket = (!admitted).then(|| tier.ticket(db, key, loc.len as u64));
    tier.stats.loads.fetch_add(1, Relaxed);
    tier.stats.loaded_bytes.fetch_add(loc.len as u64, Relaxed);
    // The record stays, as the value's clean copy.
    if let crate::storage::value::Value::Spilled(stub) = stub {
        tier.keep_copy(db, key, stub, fingerprint);
    }
    drop(view);
    ticket
}
