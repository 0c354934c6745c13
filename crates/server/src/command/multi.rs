//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Queued commands are checked (existence, arity) when queued, as Redis
//! does; EXEC then locks the shards of every queued command's keys and of
//! every watched key at once, in ascending order, so the whole transaction
//! is atomic to every other client on every thread, without a global lock.

use crate::acl::log::Context;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use resp::encode;

use super::call::Call;
use super::error::{CmdError, CmdResult};
use super::table::{flag, Access, Registry, WhileBusy};
use super::{execute, Ctx, Next, TimeoutReply};
use crate::client::{Client, Tx};
use crate::server::Server;

pub(super) fn register(r: &mut Registry) {
    r.add_flagged("multi", multi, flag::TX_CONTROL);
    r.while_busy("multi", WhileBusy::OpenTx);
    r.add_flagged("exec", exec, flag::TX_CONTROL | flag::EXEC);
    r.add_flagged("discard", discard, flag::TX_CONTROL);
    r.while_busy("discard", WhileBusy::DiscardTx);
    r.add_flagged("watch", watch, flag::TX_CONTROL);
    r.add("unwatch", unwatch);
}

/// MULTI
fn multi(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    if cx.client.tx.is_some() {
        return Err(CmdError::new("ERR MULTI calls can not be nested"));
    }
    cx.client.tx = Some(Tx::default());
    cx.client.info.multi_len.store(0, Relaxed);
    cx.ok();
    Ok(())
}

/// DISCARD
fn discard(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    if cx.client.tx.is_none() {
        return Err(CmdError::new("ERR DISCARD without MULTI"));
    }
    discard_transaction(cx.server, cx.client);
    cx.ok();
    Ok(())
}

/// Ends the client's transaction without running it (DISCARD, RESET, a
/// refused EXEC): the queue, its marks and the WATCHes go.
pub fn discard_transaction(server: &Server, client: &mut Client) {
    client.tx = None;
    client.info.multi_len.store(-1, Relaxed);
    server.watches.unwatch_all(&client.watch);
}

/// WATCH key [key ...]
fn watch(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if cx.client.tx.is_some() {
        return Err(CmdError::new("ERR WATCH inside MULTI is not allowed"));
    }
    let (db, now) = (cx.db(), cx.now_ms);
    let exists: Vec<bool> = argv[1..]
        .iter()
        .map(|key| cx.view.peek_meta(db, key, now).is_some())
        .collect();
    // A key that had already expired is deleted now: that deletion is no
    // change this client's own WATCH should see.
    cx.propagate_expired();
    for (key, exists) in argv[1..].iter().zip(exists) {
        cx.server.watches.watch(&cx.client.watch, db, key, exists);
    }
    cx.ok();
    Ok(())
}

/// UNWATCH
fn unwatch(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.server.watches.unwatch_all(&cx.client.watch);
    cx.ok();
    Ok(())
}

/// EXEC
fn exec(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let Some(tx) = cx.client.tx.take() else {
        return Err(CmdError::new("ERR EXEC without MULTI"));
    };
    cx.client.info.multi_len.store(-1, Relaxed);
    let watch = cx.client.watch.clone();
    let queued = tx.queue;
    if tx.doomed {
        cx.server.watches.unwatch_all(&watch);
        return Err(CmdError::new(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let server = cx.server;
    let table = &server.commands;
    let argvs: Vec<Vec<&[u8]>> = queued
        .iter()
        .map(|q| q.argv.iter().map(Vec::as_slice).collect())
        .collect();
    // Every command was resolved when it was queued (the table is
    // immutable).
    let calls: Vec<Call> = queued
        .iter()
        .zip(&argvs)
        .map(|(q, argv)| Call::with_keys(table.get(q.cmd), argv, q.keys.clone()))
        .collect();
    let watched: Vec<(usize, Vec<u8>, bool)> = watch.keys.lock().clone();
    // One lock set for the whole transaction: the queued commands' keys
    // and the watched keys.
    // Commands that read or lock every shard themselves (INFO, DEBUG
    // POPULATE, BGSAVE...) would deadlock on a shard the transaction holds:
    // they get all of them.
    let needs_all = calls
        .iter()
        .any(|c| c.cmd.access == Access::All || c.cmd.has(flag::EVERY_SHARD));
    let mut view = if needs_all {
        server.keyspace.lock_all()
    } else {
        let watched_slots = watched.iter().map(|(_, k, _)| resp::slot::key_slot(k));
        let queued_slots = calls.iter().flat_map(|c| c.keys().iter().map(|k| k.slot()));
        server
            .keyspace
            .lock_slots(watched_slots.chain(queued_slots))
    };
    let now = super::unix_ms();
    let aborted = watch.dirty.load(Relaxed)
        || watched
            .iter()
            .any(|(db, key, existed)| *existed && view.peek_meta(*db, key, now).is_none());
    server.watches.unwatch_all(&watch);
    if server.cluster.enabled() {
        // The gate looked at the queued keys before EXEC held them.
        if let Some(e) =
            crate::cluster::redirect::recheck_transaction(server, cx.client, &calls, &mut view)
        {
            return Err(e);
        }
    }
    if aborted {
        drop(view);
        cx.null_array();
        return Ok(());
    }
    encode::array(cx.out, calls.len());
    let mut ready = Vec::new();
    let own_tx = super::propagate::begin_transaction(server, cx.client);
    cx.client.in_exec = true;
    for call in &calls {
        let (cmd, argv) = (call.cmd, call.argv);
        // Permissions are checked again: the user's rules may have
        // changed since the command was queued.
        if let Err(d) = super::acl::check(server, cx.client, cmd, argv, Context::Multi) {
            cx.stats.rejected(Some(cmd.id));
            super::reply_error(
                cx.out,
                cx.stats,
                super::acl::exec_denied_error(d).0.as_bytes(),
            );
            continue;
        }
        let start = Instant::now();
        let run = execute(server, cx.client, call, cx.out, cx.stats, view, now);
        view = run.view;
        ready.extend(run.ready);
        cx.pushing |= run.pushing;
        // Inside a transaction a blocking command does not block: it
        // answers as if its timeout had passed.
        if let Next::Park(req) = run.next {
            match req.timeout_reply {
                TimeoutReply::NullArray => encode::null_array(cx.out, cx.client.proto),
                TimeoutReply::NullBulk => encode::null(cx.out, cx.client.proto),
            }
        }
        let took = start.elapsed();
        cx.stats.record(
            cmd.id,
            took,
            run.failed,
            server.stats.latency_tracking.load(Relaxed),
        );
        let us = took.as_micros() as u64;
        crate::observe::slowlog::inner_command_done(server, cx.client, cmd, argv, us, false);
    }
    cx.client.in_exec = false;
    if own_tx {
        super::propagate::end_transaction(server, cx.client);
    }
    drop(view);
    cx.ready.extend(ready);
    Ok(())
}
