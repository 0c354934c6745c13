//! The generic checks a request passes before its handler runs, in the
//! order of Redis 7.0's `processCommand`, each driven by the command's
//! flags in the table (never by a list of names):
//!
//! 1. unknown command, arity (`resolve`, before the gates);
//! 2. authentication (`no_auth`);
//! 3. `no_multi` inside MULTI;
//! 4. ACL;
//! 5. cluster redirection (MOVED/ASK/CROSSSLOT); outside cluster mode,
//!    Valkey 8.0's REDIRECT to the primary (`CLIENT CAPA redirect`);
//! 6. out of memory (`denyoom`; inside MULTI anything queued);
//! 7. disk errors, MISCONF (writes, and PING);
//! 8. too few good replicas, NOREPLICAS (`write`);
//!    read-only replica (`write`);
//! 9. RESP2 subscribed mode (keel's `SUBSCRIBED_OK` column);
//! 10. a replica's or MONITOR's connection touching the keyspace
//!     (`readonly`, `write`, and Redis's internal `may_replicate`);
//!     a stale replica, MASTERDOWN (everything but `stale`);
//! 11. loading (`loading`);
//! 12. a script past busy-reply-threshold (`allow_busy`);
//! 13. CLIENT PAUSE (everything for ALL; `write` and Redis's internal
//!     `may_replicate` for WRITE): held back until the pause ends;
//! 14. MULTI queueing (everything but keel's `TX_CONTROL` column).
//!
//! A script's `redis.call` passes the same gates in its own context
//! ([`Caller::Script`]), in the order of Redis's `scriptCall`: `noscript`;
//! ACL; a write (or `may_replicate`) from a read-only script; MISCONF
//! (writes); out of memory (`denyoom`, by the script's own rule); the
//! cluster gate. What a script is refused fails the script ([`Stop::Fail`]), except
//! MISCONF and OOM, which are the command's error reply, as in Redis.
//!
//! Each gate is a condition on the command's table columns and on what
//! [`World`] says of the server and the client, so a feature that adds a
//! refusal adds a condition here, never a step to dispatch; and the order
//! is tested without a server.

use super::call::Call;
use super::error::CmdError;
use super::table::{flag, Command};

/// Why a request does not reach its handler.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// Refused with this error; inside MULTI it also dooms the transaction
    /// (EXECABORT), as Redis's rejectCommand.
    Reject(CmdError),
    /// Inside MULTI: queued, answered `+QUEUED`.
    Queue,
    /// Held back by CLIENT PAUSE until it ends.
    Postpone,
    /// Cluster mode: served elsewhere, or not now (MOVED, ASK, CROSSSLOT,
    /// TRYAGAIN, CLUSTERDOWN). Inside MULTI it dooms the transaction; on
    /// EXEC it discards it and answers the plain error, as Redis.
    Redirect(CmdError),
    /// A script's command refused: the script fails with this error.
    Fail(CmdError),
}

/// Who sends the request (see the module's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A client's request (Redis's processCommand).
    Client,
    /// A script's `redis.call` (Redis's scriptCall).
    Script,
}

/// What the gates need to know about the server and the requesting
/// client. Conditions of features keel does not have yet default to
/// "not in that state".
pub trait World {
    fn caller(&self) -> Caller {
        Caller::Client
    }
    /// A script that may not write (`no-writes`, EVAL_RO...).
    fn read_only_script(&self) -> bool {
        false
    }
    /// The script has written already.
    fn script_wrote(&self) -> bool {
        false
    }
    fn authenticated(&self) -> bool {
        true
    }
    fn in_multi(&self) -> bool;
    /// The queued commands include a write (EXEC counts as one then).
    fn multi_writes(&self) -> bool;
    fn acl_denied(&self, _cmd: &Command, _argv: &[&[u8]]) -> Option<CmdError> {
        None
    }
    /// Cluster mode: MOVED, ASK, CROSSSLOT, TRYAGAIN or CLUSTERDOWN
    /// when this node does not serve the request's keys.
    fn redirect(&self, _call: &Call) -> Option<CmdError> {
        None
    }
    /// A replica outside cluster mode: `REDIRECT host:port` for a client
    /// that claimed `CLIENT CAPA redirect` (Valkey 8.0).
    fn primary_redirect(&self, _call: &Call) -> Option<CmdError> {
        None
    }
    /// Over `maxmemory` with nothing (more) to evict. Evicts as a side
    /// effect, so it is asked for every command, as Redis's
    /// performEvictions runs before every command.
    fn out_of_memory(&self) -> bool {
        false
    }
    /// The queued commands include one flagged `denyoom`.
    fn multi_denyoom(&self) -> bool {
        false
    }
    /// The MISCONF error while the last save or log write failed.
    fn disk_error(&self) -> Option<CmdError>;
    fn readonly_replica(&self) -> bool {
        false
    }
    /// Fewer replicas acknowledged lately than `min-replicas-to-write`.
    fn too_few_replicas(&self) -> bool {
        false
    }
    /// A replica whose link to its primary is down, with
    /// `replica-serve-stale-data no`.
    fn stale_replica(&self) -> bool {
        false
    }
    /// A RESP2 client with subscriptions.
    fn subscribed_resp2(&self) -> bool;
    /// CLIENT PAUSE holds back a request judged by `flags` (Redis's
    /// blockPostponeClient).
    fn paused(&self, _flags: u32) -> bool {
        false
    }
    /// A replica's or a MONITOR client's connection (Redis's
    /// CLIENT_SLAVE): it may not touch the keyspace.
    fn replica_client(&self) -> bool {
        false
    }
    fn loading(&self) -> bool {
        false
    }
    /// The BUSY error when `argv` would wait for a script running past
    /// busy-reply-threshold.
    fn busy(&self, call: &Call) -> Option<CmdError>;
}

pub const NOAUTH: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "NOAUTH Authentication required.",
));
pub const NOT_IN_MULTI: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "ERR Command not allowed inside a transaction",
));
pub const OOM: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "OOM command not allowed when used memory > 'maxmemory'.",
));
pub const NOREPLICAS: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "NOREPLICAS Not enough good replicas to write.",
));
pub const MASTERDOWN: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
));
pub const READONLY_REPLICA: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "READONLY You can't write against a read only replica.",
));
pub const LOADING: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "LOADING Redis is loading the dataset in memory",
));

/// Runs the gates in order; `None` lets the handler run.
#[inline]
pub fn check<W: World>(w: &W, call: &Call) -> Option<Stop> {
    if w.caller() == Caller::Script {
        return check_script(w, call);
    }
    let (cmd, argv) = (call.cmd, call.argv);
    let reject = |e| Some(Stop::Reject(e));
    if !cmd.has(flag::NO_AUTH) && !w.authenticated() {
        return reject(NOAUTH);
    }
    let in_multi = w.in_multi();
    if in_multi && cmd.has(flag::NO_MULTI) {
        return reject(NOT_IN_MULTI);
    }
    if let Some(e) = w.acl_denied(cmd, argv) {
        return reject(e);
    }
    if let Some(e) = w.redirect(call) {
        return Some(Stop::Redirect(e));
    }
    if let Some(e) = w.primary_redirect(call) {
        return Some(Stop::Redirect(e));
    }
    let queued = in_multi && !cmd.has(flag::TX_CONTROL);
    // By the request's flags: a script's declared flags change them.
    if w.out_of_memory() {
        let denyoom = call.has(flag::DENYOOM) || (cmd.has(flag::EXEC) && w.multi_denyoom());
        if denyoom || queued {
            return reject(OOM);
        }
    }
    let writes = call.has(flag::WRITE) || (cmd.has(flag::EXEC) && w.multi_writes());
    if writes || cmd.has(flag::MISCONF_TOO) {
        if let Some(e) = w.disk_error() {
            return reject(e);
        }
    }
    if writes && w.too_few_replicas() {
        return reject(NOREPLICAS);
    }
    if writes && w.readonly_replica() {
        return reject(READONLY_REPLICA);
    }
    if !cmd.has(flag::SUBSCRIBED_OK) && w.subscribed_resp2() {
        return reject(CmdError::new(format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            cmd.name
        )));
    }
    if call.has(flag::READONLY | flag::WRITE | flag::REPLICATES) && w.replica_client() {
        return reject(CmdError::new(
            "ERR Replica can't interact with the keyspace",
        ));
    }
    if !call.has(flag::STALE) && w.stale_replica() {
        return reject(MASTERDOWN);
    }
    if !cmd.has(flag::LOADING) && w.loading() {
        return reject(LOADING);
    }
    if !cmd.has(flag::ALLOW_BUSY) {
        if let Some(e) = w.busy(call) {
            return reject(e);
        }
    }
    if w.paused(call.flags) {
        return Some(Stop::Postpone);
    }
    if queued {
        return Some(Stop::Queue);
    }
    None
}

pub const NOT_FROM_SCRIPT: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "This Redis command is not allowed from script",
));
pub const WRITE_FROM_READ_ONLY_SCRIPT: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "Write commands are not allowed from read-only scripts.",
));

/// The gates of a script's `redis.call`, in Redis's scriptCall order.
fn check_script<W: World>(w: &W, call: &Call) -> Option<Stop> {
    let (cmd, argv) = (call.cmd, call.argv);
    if cmd.has(flag::NOSCRIPT) {
        return Some(Stop::Fail(NOT_FROM_SCRIPT));
    }
    if let Some(e) = w.acl_denied(cmd, argv) {
        return Some(Stop::Fail(e));
    }
    let write = cmd.has(flag::WRITE);
    // Redis's may-replicate commands count as writes for read-only
    // scripts.
    if (write || cmd.has(flag::REPLICATES)) && w.read_only_script() {
        return Some(Stop::Fail(WRITE_FROM_READ_ONLY_SCRIPT));
    }
    // Redis's scriptVerifyWriteCommandAllow: once the script has written
    // it must be let finish, whatever the server's state.
    if write && !w.script_wrote() {
        if w.readonly_replica() {
            return Some(Stop::Reject(READONLY_REPLICA));
        }
        if let Some(e) = w.disk_error() {
            return Some(Stop::Reject(e));
        }
        if w.too_few_replicas() {
            return Some(Stop::Reject(NOREPLICAS));
        }
    }
    if cmd.has(flag::DENYOOM) && w.out_of_memory() {
        return Some(Stop::Reject(OOM));
    }
    if let Some(e) = w.redirect(call) {
        return Some(Stop::Fail(e));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A world where every condition can be switched on.
    #[derive(Default, Clone)]
    struct Fake {
        unauthenticated: bool,
        multi: bool,
        multi_writes: bool,
        acl: bool,
        moved: bool,
        oom: bool,
        disk: bool,
        replica: bool,
        subscribed: bool,
        loading: bool,
        busy: bool,
        monitor: bool,
        paused: bool,
        script: bool,
        read_only_script: bool,
    }

    impl World for Fake {
        fn caller(&self) -> Caller {
            if self.script {
                Caller::Script
            } else {
                Caller::Client
            }
        }
        fn read_only_script(&self) -> bool {
            self.read_only_script
        }
        fn authenticated(&self) -> bool {
            !self.unauthenticated
        }
        fn in_multi(&self) -> bool {
            self.multi
        }
        fn multi_writes(&self) -> bool {
            self.multi_writes
        }
        fn acl_denied(&self, _: &Command, _: &[&[u8]]) -> Option<CmdError> {
            self.acl.then(|| CmdError::new("NOPERM"))
        }
        fn redirect(&self, _: &Call) -> Option<CmdError> {
            self.moved.then(|| CmdError::new("MOVED 1 127.0.0.1:7000"))
        }
        fn out_of_memory(&self) -> bool {
            self.oom
        }
        fn disk_error(&self) -> Option<CmdError> {
            self.disk.then(|| CmdError::new("MISCONF"))
        }
        fn readonly_replica(&self) -> bool {
            self.replica
        }
        fn subscribed_resp2(&self) -> bool {
            self.subscribed
        }
        fn loading(&self) -> bool {
            self.loading
        }
        fn busy(&self, _: &Call) -> Option<CmdError> {
            self.busy.then(|| CmdError::new("BUSY"))
        }
        fn replica_client(&self) -> bool {
            self.monitor
        }
        fn paused(&self, _: u32) -> bool {
            self.paused
        }
    }

    fn table() -> super::super::table::CommandTable {
        super::super::build_table().expect("table")
    }

    fn first_word(stop: Option<Stop>) -> String {
        match stop {
            None => "run".into(),
            Some(Stop::Queue) => "queued".into(),
            Some(Stop::Postpone) => "postponed".into(),
            Some(Stop::Reject(e)) | Some(Stop::Redirect(e)) | Some(Stop::Fail(e)) => {
                e.0.split(' ').next().unwrap_or_default().to_string()
            }
        }
    }

    /// Switches every condition on, then off one at a time in Redis's
    /// order: each step shows the next gate's error.
    #[test]
    fn gates_answer_in_redis_order() {
        let t = table();
        let set = t.lookup(b"set").expect("set");
        let argv: [&[u8]; 3] = [b"SET", b"k", b"v"];
        let mut w = Fake {
            unauthenticated: true,
            acl: true,
            moved: true,
            oom: true,
            disk: true,
            replica: true,
            subscribed: true,
            loading: true,
            busy: true,
            monitor: true,
            paused: true,
            ..Fake::default()
        };
        let mut seen = Vec::new();
        let steps: [fn(&mut Fake); 11] = [
            |w| w.unauthenticated = false,
            |w| w.acl = false,
            |w| w.moved = false,
            |w| w.oom = false,
            |w| w.disk = false,
            |w| w.replica = false,
            |w| w.subscribed = false,
            |w| w.monitor = false,
            |w| w.loading = false,
            |w| w.busy = false,
            |w| w.paused = false,
        ];
        seen.push(first_word(check(&w, &Call::new(set, &argv))));
        for step in steps {
            step(&mut w);
            seen.push(first_word(check(&w, &Call::new(set, &argv))));
        }
        assert_eq!(
            seen,
            [
                "NOAUTH",
                "NOPERM",
                "MOVED",
                "OOM",
                "MISCONF",
                "READONLY",
                "ERR",
                "ERR",
                "LOADING",
                "BUSY",
                "postponed",
                "run"
            ]
        );
    }

    fn stop_kind(stop: Option<Stop>) -> String {
        match stop {
            None => "run".into(),
            Some(Stop::Fail(e)) => format!("fail {}", e.0.split(' ').next().unwrap_or_default()),
            Some(Stop::Reject(e)) => {
                format!("reply {}", e.0.split(' ').next().unwrap_or_default())
            }
            Some(other) => format!("{other:?}"),
        }
    }

    /// A script's commands pass the gates of scriptCall, in its order:
    /// those a client passes (AUTH, BUSY, pause, MULTI...) do not apply,
    /// and what fails the script differs from what is a reply.
    #[test]
    fn script_gates_answer_in_redis_order() {
        let t = table();
        let set = t.lookup(b"set").expect("set");
        let argv: [&[u8]; 3] = [b"SET", b"k", b"v"];
        let mut w = Fake {
            script: true,
            unauthenticated: true,
            busy: true,
            paused: true,
            loading: true,
            multi: true,
            acl: true,
            read_only_script: true,
            disk: true,
            oom: true,
            moved: true,
            ..Fake::default()
        };
        let mut seen = vec![stop_kind(check(&w, &Call::new(set, &argv)))];
        let steps: [fn(&mut Fake); 5] = [
            |w| w.acl = false,
            |w| w.read_only_script = false,
            |w| w.disk = false,
            |w| w.oom = false,
            |w| w.moved = false,
        ];
        for step in steps {
            step(&mut w);
            seen.push(stop_kind(check(&w, &Call::new(set, &argv))));
        }
        assert_eq!(
            seen,
            [
                "fail NOPERM",
                "fail Write",
                "reply MISCONF",
                "reply OOM",
                "fail MOVED",
                "run"
            ]
        );
        // `noscript` commands fail first; reads pass a read-only script.
        let exec = t.lookup(b"exec").expect("exec");
        assert_eq!(
            stop_kind(check(&w, &Call::new(exec, &[b"EXEC"]))),
            "fail This"
        );
        let get = t.lookup(b"get").expect("get");
        w.read_only_script = true;
        w.oom = true;
        assert_eq!(
            stop_kind(check(&w, &Call::new(get, &[b"GET", b"k"]))),
            "run"
        );
    }

    #[test]
    fn multi_gates() {
        let t = table();
        let get = t.lookup(b"get").expect("get");
        let exec = t.lookup(b"exec").expect("exec");
        let watch = t.lookup(b"watch").expect("watch");
        let subscribe = t.lookup(b"subscribe").expect("subscribe");
        let multi = Fake {
            multi: true,
            ..Fake::default()
        };
        // Queued, but only after every rejecting gate.
        assert_eq!(
            check(&multi, &Call::new(get, &[b"GET", b"k"])),
            Some(Stop::Queue)
        );
        assert_eq!(check(&multi, &Call::new(exec, &[b"EXEC"])), None);
        assert_eq!(check(&multi, &Call::new(watch, &[b"WATCH", b"k"])), None);
        let busy = Fake {
            busy: true,
            ..multi.clone()
        };
        assert_eq!(
            first_word(check(&busy, &Call::new(get, &[b"GET", b"k"]))),
            "BUSY"
        );
        // Under OOM inside MULTI even a read is refused (it would queue).
        let oom = Fake {
            oom: true,
            ..multi.clone()
        };
        assert_eq!(
            first_word(check(&oom, &Call::new(get, &[b"GET", b"k"]))),
            "OOM"
        );
        assert_eq!(check(&oom, &Call::new(exec, &[b"EXEC"])), None);
        // EXEC of queued writes counts as a write for MISCONF.
        let disk = Fake {
            disk: true,
            multi_writes: true,
            ..multi.clone()
        };
        assert_eq!(
            first_word(check(&disk, &Call::new(exec, &[b"EXEC"]))),
            "MISCONF"
        );
        // Unauthenticated: NOAUTH before anything about MULTI.
        let unauth = Fake {
            unauthenticated: true,
            ..oom.clone()
        };
        assert_eq!(
            first_word(check(&unauth, &Call::new(get, &[b"GET", b"k"]))),
            "NOAUTH"
        );
        // Subscribed RESP2 clients may (un)subscribe, nothing else.
        let sub = Fake {
            subscribed: true,
            ..Fake::default()
        };
        assert_eq!(
            check(&sub, &Call::new(subscribe, &[b"SUBSCRIBE", b"c"])),
            None
        );
        assert_eq!(
            first_word(check(&sub, &Call::new(get, &[b"GET", b"k"]))),
            "ERR"
        );
    }
}
