//! The propagation path: the one place a change leaves the command layer.
//!
//! Every execution unit reports here what it changed, while it still holds
//! the shards of the keys it changed:
//! - a command that wrote (`Ctx::dirty > 0`): the command as sent, or what
//!   it asked to log instead (`Ctx::propagate_instead`), becomes a record;
//!   its written keys (key specs not flagged RO, plus keys it named with
//!   [`Ctx::touch`]) are *changed keys*;
//! - a key found expired on access (the storage layer queues it in its
//!   shard) or removed by the cron's active expiry: an `expired` keyspace
//!   event, a changed key, and a `DEL` record;
//! - a key evicted under `maxmemory` ([`evicted`], from `memory::evict`):
//!   an `evicted` event, a changed key (WATCH), and a `DEL` record;
//! - EXEC and scripts open a transaction ([`begin_transaction`]): their
//!   commands' records are gathered and leave as one `MULTI ... EXEC`.
//!
//! The sinks, each fed from here and nowhere else:
//! - records: the append-only log and the replication stream
//!   (`crate::replication`);
//! - changed keys: WATCH invalidation at once (under the writer's shard
//!   locks, so EXEC cannot miss it), client-side caching invalidations
//!   (`crate::clients::tracking`), and clients blocked on the key,
//!   signalled once dispatch has released the shards (`Ctx::ready`). A
//!   woken client runs its command again and decides whether the key now
//!   serves it: any write to a key may, whatever command made it (RENAME,
//!   MOVE, SORT ... STORE, EXEC, ...).
//!
//! Keyspace events with per-command names (`lpush`, `rename_from`...) are
//! published by the handlers (`Ctx::notify`); this module publishes the
//! ones that are not a command's (`expired`, `evicted`).

use std::sync::atomic::Ordering::Relaxed;

use super::Ctx;
use crate::client::Client;
use crate::server::Server;
use crate::storage::keyspace::View;

/// One record of the log: database and argument vector.
pub type Record = (usize, Vec<Vec<u8>>);

/// What may now serve blocked clients, signalled once the shards are
/// released.
#[derive(Debug)]
pub enum Ready {
    /// A key of a database changed.
    Key(usize, Vec<u8>),
    /// A whole database changed (FLUSHDB, FLUSHALL, SWAPDB): every blocked
    /// client runs its command again.
    All,
}

/// Wakes the clients `ready` names (dispatch, after releasing the shards,
/// so a woken client does not wait on the locks the writer held).
pub fn wake(server: &Server, ready: Vec<Ready>) {
    for r in ready {
        match r {
            Ready::Key(db, key) => server.blocking.signal(db, &key),
            Ready::All => server.blocking.signal_all(),
        }
    }
}

/// Whether any sink takes records (the log, the replication stream). When
/// none does, no record is built.
#[inline]
pub(crate) fn records_wanted(server: &Server) -> bool {
    server.aof.enabled() || server.repl.takes_own_writes()
}

/// Opens a transaction for `client`: the records of the commands it runs
/// are gathered until [`end_transaction`]. Returns false (and opens
/// nothing) when one is already open (a script inside EXEC): the outer
/// unit closes it.
pub fn begin_transaction(server: &Server, client: &mut Client) -> bool {
    if client.tx_records.is_some() || !records_wanted(server) {
        return false;
    }
    client.tx_records = Some(Vec::new());
    true
}

/// Closes the transaction [`begin_transaction`] opened: its records leave
/// as one `MULTI ... EXEC` block (nothing if it wrote nothing).
pub fn end_transaction(server: &Server, client: &mut Client) {
    if let Some(records) = client.tx_records.take().filter(|r| !r.is_empty()) {
        to_sinks(server, client, &records);
    }
}

/// One command's records (several: one transaction) to the log and the
/// replication stream. The primary's stream applied on a replica reaches
/// the log only: the replica passes the primary's bytes on itself.
fn to_sinks(server: &Server, client: &mut Client, records: &[Record]) {
    if server.aof.enabled() {
        client.aof_offset = if records.len() > 1 {
            server.aof.append_transaction(records)
        } else {
            let (db, argv) = &records[0];
            let v: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
            server.aof.append(*db, &v)
        };
    }
    if server.repl.takes_own_writes() && !client.from_primary {
        client.repl_offset = server.repl.feed_records(records);
    }
}

/// Hands `records` to the sinks: into the client's open transaction, or
/// to the log now (several records of one command as one transaction, so
/// they replay all or nothing).
fn emit(server: &Server, client: Option<&mut Client>, records: Vec<Record>) {
    if records.is_empty() || !records_wanted(server) {
        return;
    }
    let Some(client) = client else {
        for record in &records {
            if server.aof.enabled() {
                let v: Vec<&[u8]> = record.1.iter().map(Vec::as_slice).collect();
                server.aof.append(record.0, &v);
            }
            if server.repl.takes_own_writes() {
                server.repl.feed_records(std::slice::from_ref(record));
            }
        }
        return;
    };
    match client.tx_records.as_mut() {
        Some(tx) => tx.extend(records),
        None => to_sinks(server, client, &records),
    }
}

/// A key removed because it expired: on access (`client` is the one whose
/// command found it) or by active expiry (`None`). As Redis's
/// deleteExpiredKeyAndPropagate: `expired` event, WATCH, a `DEL` record.
pub fn expired(server: &Server, client: Option<&mut Client>, db: usize, key: &[u8]) {
    server.notify(crate::clients::notify::EXPIRED, "expired", key, db);
    server.watches.touch(db, key);
    if server.tracking.active() {
        let origin = client.as_ref().map(|c| c.info.id);
        server.tracking.invalidate(&server.clients, key, origin);
    }
    if records_wanted(server) {
        emit(
            server,
            client,
            vec![(db, vec![b"DEL".to_vec(), key.to_vec()])],
        );
    }
}

/// Hash fields removed by active expiry, as Redis's hashTypeExpire: an
/// `HDEL` record each, one `hexpired` event, WATCH, and when the hash was
/// left empty (and deleted) a `del` event.
pub fn fields_expired(
    server: &Server,
    db: usize,
    key: &[u8],
    fields: &[Vec<u8>],
    key_deleted: bool,
) {
    server
        .expired_subkeys
        .fetch_add(fields.len() as u64, Relaxed);
    if records_wanted(server) {
        let records = fields
            .iter()
            .map(|f| (db, vec![b"HDEL".to_vec(), key.to_vec(), f.clone()]))
            .collect();
        emit(server, None, records);
    }
    server.notify(crate::clients::notify::HASH, "hexpired", key, db);
    if key_deleted {
        server.notify(crate::clients::notify::GENERIC, "del", key, db);
    }
    server.watches.touch(db, key);
    if server.tracking.active() {
        server.tracking.invalidate(&server.clients, key, None);
    }
}

/// A key removed by eviction (`maxmemory`), as Redis's
/// deleteEvictedKeyAndPropagate: WATCH, an `evicted` event, a `DEL`
/// record. Called under the key's shard lock.
pub fn evicted(server: &Server, db: usize, key: &[u8]) {
    server.watches.touch(db, key);
    if server.tracking.active() {
        server.tracking.invalidate(&server.clients, key, None);
    }
    server.notify(crate::clients::notify::EVICTED, "evicted", key, db);
    if records_wanted(server) {
        emit(
            server,
            None,
            vec![(db, vec![b"DEL".to_vec(), key.to_vec()])],
        );
    }
}

impl Ctx<'_, '_> {
    /// Records that `key` of database `db` changed, for a key the command's
    /// key specs do not name as written (MOVE's and COPY's destination
    /// database, SORT's STORE): WATCH now, blocked clients once the shards
    /// are released.
    pub fn touch(&mut self, db: usize, key: &[u8]) {
        self.server.watches.touch(db, key);
        if self.server.tracking.active() {
            let origin = Some(self.client.info.id);
            self.server
                .tracking
                .invalidate(&self.server.clients, key, origin);
        }
        // A client about to block runs its command once more after
        // registering, so skipping this while nobody is blocked loses
        // nothing.
        if self.server.blocking.blocked_clients() > 0 {
            self.ready.push(Ready::Key(db, key.to_vec()));
        }
    }

    /// Records that database `db` changed as a whole (FLUSHDB, FLUSHALL,
    /// SWAPDB): the WATCHed keys `affected` names are marked, and every
    /// blocked client looks again (a blocked XREADGROUP whose stream went
    /// away then gets its error, as from Redis).
    pub fn touch_db(&mut self, db: usize, mut affected: impl FnMut(&mut View, &[u8]) -> bool) {
        let view = &mut self.view;
        self.server.watches.touch_db(db, |k| affected(view, k));
        if self.server.blocking.blocked_clients() > 0 {
            self.ready.push(Ready::All);
        }
    }

    /// Propagates the keys this command found expired so far, now (WATCH
    /// does, before it registers its keys: a key already expired when
    /// watched must not mark its own watcher).
    #[inline]
    pub fn propagate_expired(&mut self) {
        if self.view.has_expired() {
            self.propagate_expired_slow();
        }
    }

    #[cold]
    fn propagate_expired_slow(&mut self) {
        for (db, key) in self.view.take_expired() {
            expired(self.server, Some(&mut *self.client), db, &key);
        }
    }

    /// The `HDEL`s of hash fields this command deleted for their TTL,
    /// ahead of the command's own `records` (one transaction when there
    /// are several).
    #[cold]
    fn propagate_field_deletions(&mut self, own: Vec<Record>) {
        let deletions = std::mem::take(&mut self.field_deletions);
        if !records_wanted(self.server) || self.client.skip_records {
            return;
        }
        let db = self.client.db;
        let mut records: Vec<Record> = deletions.into_iter().map(|c| (db, c)).collect();
        records.extend(own);
        emit(self.server, Some(&mut *self.client), records);
    }

    /// The end of every command run through `execute`, shards still held:
    /// first the keys it found expired (it ran on a keyspace without
    /// them), then, if it succeeded and wrote, its records and changed
    /// keys.
    pub(super) fn propagate(&mut self, argv: &[&[u8]], failed: bool) {
        self.propagate_expired();
        if self.dirty == 0 || failed {
            if !self.field_deletions.is_empty() {
                self.propagate_field_deletions(Vec::new());
            }
            return;
        }
        self.server.dirty.fetch_add(self.dirty, Relaxed);
        if records_wanted(self.server) && !self.client.skip_records {
            let db = self.client.db;
            let records = match self.propagate_as.take() {
                Some(cmds) => cmds.into_iter().map(|c| (db, c)).collect(),
                None => vec![(db, argv.iter().map(|a| a.to_vec()).collect())],
            };
            if self.field_deletions.is_empty() {
                emit(self.server, Some(&mut *self.client), records);
            } else {
                self.propagate_field_deletions(records);
            }
        }
        if self.server.watches.any()
            || self.server.blocking.blocked_clients() > 0
            || self.server.tracking.active()
        {
            let mut pos = Vec::new();
            self.cmd.written_key_positions(argv, &mut pos);
            let db = self.client.db;
            for p in pos {
                if p >= 64 || self.unchanged & (1 << p) == 0 {
                    self.touch(db, argv[p]);
                }
            }
        }
    }
}
