//! Client-side caching: CLIENT TRACKING, as Redis 7.0's tracking.c.
//!
//! Default mode: the keys a tracking client reads are remembered (key →
//! client ids; key names only, across databases, as Redis); the first
//! write to such a key sends each of them one invalidation and forgets the
//! key. BCAST mode: nothing is remembered; every write to a key under one
//! of a client's prefixes is announced to it. Invalidations are RESP3 push
//! messages (`invalidate [key]`), or, for a RESP2 client redirecting to a
//! subscribed connection, messages on `__redis__:invalidate`. They go to
//! the client's inbox (`crate::clients::inbox`), so one its own write caused
//! follows the reply.
//!
//! Cost for everyone else: one relaxed load per write while no client
//! tracks (`Tracking::active`).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use resp::encode;

use crate::client::{ClientInfo, Clients};
use crate::clients::inbox::Limit;

/// The flags of a client's tracking state (`ClientTracking::flags`).
pub mod flag {
    pub const ON: u8 = 1;
    pub const BCAST: u8 = 1 << 1;
    pub const OPTIN: u8 = 1 << 2;
    pub const OPTOUT: u8 = 1 << 3;
    pub const NOLOOP: u8 = 1 << 4;
    /// The redirect target went away (CLIENT LIST `R`).
    pub const BROKEN_REDIR: u8 = 1 << 5;
    /// CLIENT CACHING yes|no given for the next command.
    pub const CACHING: u8 = 1 << 6;
}

/// A client's tracking state, in its shared `ClientInfo`: invalidating
/// writers on other connections read it.
#[derive(Default)]
pub struct ClientTracking {
    pub flags: AtomicU8,
    /// Client id invalidations go to (0: the client itself).
    pub redirect: AtomicU64,
    /// BCAST prefixes, in byte order.
    pub prefixes: Mutex<Vec<Vec<u8>>>,
}

impl ClientTracking {
    #[inline]
    pub fn has(&self, f: u8) -> bool {
        self.flags.load(Relaxed) & f != 0
    }

    /// Whether a read-only command's keys are remembered for this client
    /// now (default mode; OPTIN after CACHING yes, OPTOUT unless CACHING
    /// no).
    #[inline]
    pub fn remembers(&self) -> bool {
        let f = self.flags.load(Relaxed);
        if f & flag::ON == 0 || f & flag::BCAST != 0 {
            return false;
        }
        let caching = f & flag::CACHING != 0;
        !((f & flag::OPTIN != 0 && !caching) || (f & flag::OPTOUT != 0 && caching))
    }
}

const TABLE_SHARDS: usize = 64;

/// The name of the RESP2 channel invalidations are published on.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// Keys written by the current command, for BCAST clients: announced
/// together at the end of the command (Redis: at the end of the event
/// loop round), one sorted array per prefix.
struct Broadcast {
    keys: Vec<(Vec<u8>, u64)>,
}

thread_local! {
    static BROADCAST: RefCell<Broadcast> = const { RefCell::new(Broadcast { keys: Vec::new() }) };
}

/// One shard of the default-mode table: key → ids of the clients that
/// read it.
type TableShard = Mutex<HashMap<Box<[u8]>, Vec<u64>>>;

pub struct Tracking {
    /// Clients with tracking on (INFO `tracking_clients`).
    clients: AtomicUsize,
    /// Keys read by default-mode clients → their ids, sharded by key hash.
    table: Box<[TableShard]>,
    keys: AtomicUsize,
    items: AtomicUsize,
    /// BCAST prefix → its clients.
    prefixes: RwLock<BTreeMap<Vec<u8>, Vec<Arc<ClientInfo>>>>,
    /// `tracking-table-max-keys` (0: no limit).
    pub max_keys: AtomicUsize,
    /// Where the next over-limit eviction starts looking.
    evict_cursor: AtomicUsize,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            clients: AtomicUsize::new(0),
            table: (0..TABLE_SHARDS).map(|_| Mutex::default()).collect(),
            keys: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
            prefixes: RwLock::default(),
            max_keys: AtomicUsize::new(1_000_000),
            evict_cursor: AtomicUsize::new(0),
        }
    }
}

fn shard_of(key: &[u8]) -> usize {
    resp::slot::key_slot(key) % TABLE_SHARDS
}

/// One message for `target` (tracking client `c`'s invalidation): `keys`
/// is the RESP array of keys, or a null for a flush.
enum Payload<'a> {
    Key(&'a [u8]),
    /// Already encoded (a BCAST array of keys).
    Encoded(&'a [u8]),
    Flush,
}

impl Tracking {
    /// Whether any client tracks: every write checks this first.
    #[inline]
    pub fn active(&self) -> bool {
        self.clients.load(Relaxed) > 0
    }

    pub fn clients(&self) -> usize {
        self.clients.load(Relaxed)
    }

    /// INFO's `tracking_total_keys`, `tracking_total_items`,
    /// `tracking_total_prefixes`.
    pub fn totals(&self) -> (usize, usize, usize) {
        (
            self.keys.load(Relaxed),
            self.items.load(Relaxed),
            self.prefixes.read().len(),
        )
    }

    /// CLIENT TRACKING ON with checked options (Redis's enableTracking):
    /// BCAST prefixes add to those the client has.
    pub fn enable(&self, c: &Arc<ClientInfo>, redirect: u64, options: u8, prefixes: &[Vec<u8>]) {
        let t = &c.tracking;
        let old = t.flags.load(Relaxed);
        if old & flag::ON == 0 {
            self.clients.fetch_add(1, Relaxed);
        }
        let keep = old & flag::CACHING;
        t.flags.store(flag::ON | keep | options, Relaxed);
        t.redirect.store(redirect, Relaxed);
        if options & flag::BCAST != 0 {
            let mut mine = t.prefixes.lock();
            let mut table = self.prefixes.write();
            let empty = [Vec::new()];
            let given = if prefixes.is_empty() {
                &empty[..]
            } else {
                prefixes
            };
            for p in given {
                if mine.contains(p) {
                    continue;
                }
                mine.push(p.clone());
                table.entry(p.clone()).or_default().push(c.clone());
            }
            // Listed in byte order, as Redis's radix tree lists them.
            mine.sort();
        }
    }

    /// CLIENT TRACKING OFF, RESET, or the connection closed (Redis's
    /// disableTracking). Keys it read stay in the table until written
    /// (then skipped: the client no longer tracks).
    pub fn disable(&self, c: &ClientInfo) {
        let t = &c.tracking;
        let old = t.flags.load(Relaxed);
        if old & flag::ON == 0 {
            return;
        }
        if old & flag::BCAST != 0 {
            let mine = std::mem::take(&mut *t.prefixes.lock());
            let mut table = self.prefixes.write();
            for p in mine {
                if let Some(list) = table.get_mut(&p) {
                    list.retain(|x| x.id != c.id);
                    if list.is_empty() {
                        table.remove(&p);
                    }
                }
            }
        }
        t.flags.store(0, Relaxed);
        t.redirect.store(0, Relaxed);
        self.clients.fetch_sub(1, Relaxed);
    }

    /// A read-only command's keys, remembered for client `id`
    /// (trackingRememberKeys).
    pub fn remember<'k>(&self, id: u64, keys: impl Iterator<Item = &'k [u8]>) {
        for key in keys {
            let mut shard = self.table[shard_of(key)].lock();
            match shard.get_mut(key) {
                Some(ids) => {
                    if !ids.contains(&id) {
                        ids.push(id);
                        self.items.fetch_add(1, Relaxed);
                    }
                }
                None => {
                    shard.insert(key.into(), vec![id]);
                    self.keys.fetch_add(1, Relaxed);
                    self.items.fetch_add(1, Relaxed);
                }
            }
        }
    }

    /// Over `tracking-table-max-keys`: forgets keys (invalidating them for
    /// their clients) until back under it, as Redis's
    /// trackingLimitUsedSlots (which walks at random; here a rotating
    /// table shard).
    pub fn limit(&self, clients: &Clients) {
        let max = self.max_keys.load(Relaxed);
        if max == 0 || self.keys.load(Relaxed) <= max {
            return;
        }
        let mut effort = 100;
        while effort > 0 && self.keys.load(Relaxed) > max {
            let i = self.evict_cursor.fetch_add(1, Relaxed) % TABLE_SHARDS;
            let victim = {
                let mut shard = self.table[i].lock();
                let Some(key) = shard.keys().next().cloned() else {
                    effort -= 1;
                    continue;
                };
                let ids = shard.remove(&key).unwrap_or_default();
                (key, ids)
            };
            self.forgotten(&victim.1);
            self.send_key(clients, &victim.0, &victim.1, None);
            effort -= 1;
        }
    }

    fn forgotten(&self, ids: &[u64]) {
        self.keys.fetch_sub(1, Relaxed);
        self.items.fetch_sub(ids.len(), Relaxed);
    }

    /// `key` was written (Redis's trackingInvalidateKey from
    /// signalModifiedKey): its default-mode clients get an invalidation
    /// now, BCAST clients at the end of the command
    /// ([`Tracking::flush_broadcast`]). `origin`: the client whose command
    /// wrote it (NOLOOP).
    pub fn invalidate(&self, clients: &Clients, key: &[u8], origin: Option<u64>) {
        if !self.prefixes.read().is_empty() {
            BROADCAST.with(|b| {
                b.borrow_mut()
                    .keys
                    .push((key.to_vec(), origin.unwrap_or(0)))
            });
        }
        let ids = {
            let mut shard = self.table[shard_of(key)].lock();
            match shard.remove(key) {
                Some(ids) => ids,
                None => return,
            }
        };
        self.forgotten(&ids);
        self.send_key(clients, key, &ids, origin);
    }

    fn send_key(&self, clients: &Clients, key: &[u8], ids: &[u64], origin: Option<u64>) {
        for &id in ids {
            let Some(c) = clients.get(id) else { continue };
            let f = c.tracking.flags.load(Relaxed);
            // Turned off, or switched to BCAST, since it read the key.
            if f & flag::ON == 0 || f & flag::BCAST != 0 {
                continue;
            }
            if f & flag::NOLOOP != 0 && origin == Some(id) {
                continue;
            }
            send(clients, &c, Payload::Key(key));
        }
    }

    /// Sends the keys this thread's command wrote to the BCAST clients of
    /// their prefixes: one array per prefix, sorted and without repeats
    /// (trackingBroadcastInvalidationMessages); a NOLOOP client does not
    /// hear of its own writes.
    pub fn flush_broadcast(&self, clients: &Clients) {
        let mut keys = BROADCAST.with(|b| std::mem::take(&mut b.borrow_mut().keys));
        if keys.is_empty() {
            return;
        }
        keys.sort();
        keys.dedup();
        let table = self.prefixes.read();
        for (prefix, subs) in table.iter() {
            let matching: Vec<&(Vec<u8>, u64)> =
                keys.iter().filter(|(k, _)| k.starts_with(prefix)).collect();
            if matching.is_empty() {
                continue;
            }
            let mut all: Vec<&[u8]> = matching.iter().map(|(k, _)| k.as_slice()).collect();
            all.dedup();
            let encoded = encode_keys(all.into_iter());
            for c in subs {
                if c.tracking.has(flag::NOLOOP) {
                    let mut own: Vec<&[u8]> = matching
                        .iter()
                        .filter(|(_, o)| *o != c.id)
                        .map(|(k, _)| k.as_slice())
                        .collect();
                    own.dedup();
                    if !own.is_empty() {
                        send(clients, c, Payload::Encoded(&encode_keys(own.into_iter())));
                    }
                } else {
                    send(clients, c, Payload::Encoded(&encoded));
                }
            }
        }
        // Keep the thread's buffer's allocation for the next command.
        keys.clear();
        BROADCAST.with(|b| {
            let mut b = b.borrow_mut();
            if b.keys.is_empty() {
                b.keys = keys;
            }
        });
    }

    /// FLUSHDB / FLUSHALL (trackingInvalidateKeysOnFlush): every tracking
    /// client gets a null invalidation ("everything"), and the table is
    /// emptied.
    pub fn flushed(&self, clients: &Clients) {
        if self.active() {
            for c in clients.snapshot() {
                if c.tracking.has(flag::ON) {
                    send(clients, &c, Payload::Flush);
                }
            }
        }
        for shard in self.table.iter() {
            let mut s = shard.lock();
            if !s.is_empty() {
                *s = HashMap::new();
            }
        }
        self.keys.store(0, Relaxed);
        self.items.store(0, Relaxed);
    }
}

fn encode_keys<'k>(keys: impl ExactSizeIterator<Item = &'k [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    encode::array(&mut out, keys.len());
    for k in keys {
        encode::bulk(&mut out, k);
    }
    out
}

/// One invalidation for tracking client `c` (Redis's sendTrackingMessage):
/// to its redirect target if it has one (a vanished target marks `c`'s
/// redirect broken and, for RESP3, tells `c`); as a push for RESP3, as a
/// `__redis__:invalidate` message for a subscribed RESP2 target; nothing
/// for a RESP2 client of its own.
fn send(clients: &Clients, c: &Arc<ClientInfo>, payload: Payload) {
    let redirect = c.tracking.redirect.load(Relaxed);
    let mut msg = Vec::new();
    let target = if redirect != 0 {
        match clients.get(redirect) {
            Some(t) => Some(t),
            None => {
                c.tracking.flags.fetch_or(flag::BROKEN_REDIR, Relaxed);
                if c.resp.load(Relaxed) > 2 {
                    encode::push(&mut msg, 2, 3);
                    encode::bulk(&mut msg, b"tracking-redir-broken");
                    encode::integer(&mut msg, redirect as i64);
                    deliver(c, msg);
                }
                return;
            }
        }
    } else {
        None
    };
    let to = target.as_ref().unwrap_or(c);
    if to.resp.load(Relaxed) > 2 {
        encode::push(&mut msg, 2, 3);
        encode::bulk(&mut msg, b"invalidate");
    } else if target.is_some() && to.subscribed.load(Relaxed) {
        encode::push(&mut msg, 3, 2);
        encode::bulk(&mut msg, b"message");
        encode::bulk(&mut msg, CHANNEL);
    } else {
        return;
    }
    match payload {
        Payload::Key(k) => {
            encode::array(&mut msg, 1);
            encode::bulk(&mut msg, k);
        }
        Payload::Encoded(e) => msg.extend_from_slice(e),
        // The null of the tracking client's own protocol, as Redis.
        Payload::Flush => encode::null(&mut msg, c.resp.load(Relaxed)),
    }
    deliver(to, msg);
}

fn deliver(to: &ClientInfo, msg: Vec<u8>) {
    if !to.killed.load(Relaxed) {
        to.inbox.push(msg.into(), Limit::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_by_mode() {
        let t = ClientTracking::default();
        assert!(!t.remembers());
        t.flags.store(flag::ON, Relaxed);
        assert!(t.remembers());
        t.flags.store(flag::ON | flag::OPTIN, Relaxed);
        assert!(!t.remembers());
        t.flags
            .store(flag::ON | flag::OPTIN | flag::CACHING, Relaxed);
        assert!(t.remembers());
        t.flags
            .store(flag::ON | flag::OPTOUT | flag::CACHING, Relaxed);
        assert!(!t.remembers());
        t.flags.store(flag::ON | flag::BCAST, Relaxed);
        assert!(!t.remembers());
    }
}
