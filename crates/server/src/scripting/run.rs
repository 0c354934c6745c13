//! Running a script: the `Run` a script's `redis.call` works through,
//! the count hook (busy detection, SCRIPT KILL), and the relocking retry.

use super::*;
use crate::command::call::Call;
use crate::command::gates::{self, Stop};
use crate::command::{CmdError, Unresolved};
use crate::storage::keyspace::shard_of;

// ---------------------------------------------------------------------------
// Running a script.

/// Shards to add when a script must run again.
pub(super) enum Restart {
    Keys(Vec<Vec<u8>>),
    All,
}

/// One script run: what `redis.call` and the hook reach through the
/// thread's CURRENT pointer.
pub(super) struct Run<'a, 's> {
    pub(super) server: &'s Server,
    pub(super) client: &'a mut Client,
    pub(super) view: Option<View<'s>>,
    pub(super) stats: &'a ThreadStats,
    pub(super) now_ms: u64,
    pub(super) ready: &'a mut Vec<crate::command::propagate::Ready>,
    pub(super) reply: &'a mut crate::net::replies::Replies,
    pub(super) nums: &'a mut Vec<u8>,
    pub(super) argv_store: Vec<&'static [u8]>,
    /// Shards this script may touch (bit per shard).
    pub(super) mask: u64,
    /// Every shard is locked.
    pub(super) all_locked: bool,
    /// Abandoning the attempt is allowed (not inside EXEC, no write yet).
    pub(super) can_restart: bool,
    pub(super) restart: Option<Restart>,
    pub(super) read_only: bool,
    /// The script may run denyoom commands while memory is over the
    /// limit (`allow-oom`).
    pub(super) allow_oom: bool,
    /// Out of memory when the script started.
    pub(super) oom_at_start: bool,
    pub(super) wrote: bool,
    /// The protocol commands reply in (redis.setresp).
    pub(super) resp: u8,
    /// redis.set_repl: whether writes reach the append-only log.
    pub(super) repl_aof: bool,
    pub(super) start: Instant,
    pub(super) busy: Option<Arc<Running>>,
    /// When the busy duty last ran, and whether it ran at all.
    pub(super) last_duty: Instant,
    pub(super) duty_done: bool,
    /// The hook fires on every line (killed or restarting).
    pub(super) line_hook: bool,
    pub(super) is_eval: bool,
    pub(super) name: &'a str,
    pub(super) caller_argv: &'a [&'a [u8]],
}

thread_local! {
    pub(super) static CURRENT: Cell<*mut Run<'static, 'static>> = const { Cell::new(std::ptr::null_mut()) };
}

/// The script running on this thread, if any.
///
/// # Safety
/// The returned reference must not outlive the run (it lives on the
/// runner's stack while CURRENT points at it) nor be held across another
/// call to this function.
pub(super) unsafe fn current<'x>() -> Option<&'x mut Run<'static, 'static>> {
    // SAFETY: CURRENT is null or points at the `Run` on the runner's stack
    // for as long as the script runs; the caller keeps the reference
    // within that (this function's contract).
    unsafe {
        let p = CURRENT.get();
        if p.is_null() {
            None
        } else {
            Some(&mut *p)
        }
    }
}

/// Why `redis.call` did not run the command.
pub(super) enum Fail {
    /// A script error (`ERR` prepended).
    Msg(&'static [u8]),
    /// A gate refused the command (`gates::Stop::Fail`): a script error.
    Refused(CmdError),
    /// Abandon the attempt and run again with more shards.
    Restart,
}

/// The gates' view of a script's `redis.call` (`gates::Caller::Script`).
struct ScriptGates<'r, 'a, 's>(&'r Run<'a, 's>);

impl gates::World for ScriptGates<'_, '_, '_> {
    fn caller(&self) -> gates::Caller {
        gates::Caller::Script
    }

    fn read_only_script(&self) -> bool {
        self.0.read_only
    }

    fn script_wrote(&self) -> bool {
        self.0.wrote
    }

    fn readonly_replica(&self) -> bool {
        let run = self.0;
        run.server.keyspace.is_replica()
            && !run.client.from_primary
            && run.server.repl.read_only.load(Relaxed)
    }

    fn too_few_replicas(&self) -> bool {
        self.0.server.repl.too_few_replicas()
    }

    fn in_multi(&self) -> bool {
        false
    }

    fn multi_writes(&self) -> bool {
        false
    }

    fn acl_denied(&self, cmd: &Command, argv: &[&[u8]]) -> Option<CmdError> {
        let run = self.0;
        crate::command::acl::check(
            run.server,
            run.client,
            cmd,
            argv,
            crate::acl::log::Context::Lua,
        )
        .err()
        .map(|d| CmdError::new(crate::command::acl::script_denied_message(d)))
    }

    /// Redis's scriptVerifyOOM: over the limit when the script began, a
    /// denyoom command is refused until the script has written (then it
    /// must be let finish).
    fn out_of_memory(&self) -> bool {
        let run = self.0;
        run.oom_at_start && !run.allow_oom && !run.wrote
    }

    fn disk_error(&self) -> Option<CmdError> {
        crate::command::disk_error(self.0.server)
    }

    /// Redis's scriptVerifyClusterState: a script's command may touch only
    /// keys this node serves (the redirection gate decides), and not while
    /// the cluster is down.
    fn redirect(&self, call: &Call) -> Option<CmdError> {
        let run = self.0;
        if !run.server.cluster.enabled() {
            return None;
        }
        let e = crate::cluster::redirect::check(run.server, run.client, call)?;
        Some(CmdError::new(match e.0.as_ref() {
            crate::cluster::redirect::DOWN_RO => {
                "Script attempted to execute a write command while the cluster is down and readonly"
            }
            crate::cluster::redirect::DOWN => {
                "Script attempted to execute a command while the cluster is down"
            }
            _ => "Script attempted to access a non local key in a cluster node",
        }))
    }

    fn subscribed_resp2(&self) -> bool {
        false
    }

    fn busy(&self, _call: &Call) -> Option<CmdError> {
        None
    }
}

impl Run<'_, '_> {
    /// A read inside the script, for a tracking caller: every key the
    /// script declared is remembered, as Redis's call() remembers its
    /// caller's (the EVAL's or FCALL's) keys, not the command's.
    #[cold]
    fn remember_declared_keys(&self) {
        let argv = self.caller_argv;
        let Some(cmd) = argv.first().and_then(|n| self.server.commands.lookup(n)) else {
            return;
        };
        let mut pos = Vec::new();
        cmd.key_positions(argv, &mut pos);
        crate::command::remember(
            self.server,
            self.client.info.id,
            pos.iter().map(|&p| argv[p]),
        );
    }

    fn need(&mut self, r: Restart) -> Result<(), Fail> {
        if self.can_restart && !self.wrote {
            self.restart = Some(r);
            Err(Fail::Restart)
        } else {
            Err(Fail::Msg(NON_LOCAL_KEY))
        }
    }

    /// The shards the command would touch are all held.
    fn check_shards(&mut self, call: &Call) -> Result<(), Fail> {
        let cmd = call.cmd;
        // INFO, MEMORY STATS...: they read every shard, and would deadlock
        // on one the script holds; so they need them all.
        if cmd.has(flag::EVERY_SHARD) && !self.all_locked {
            return self.need(Restart::All);
        }
        match cmd.access {
            Access::None => Ok(()),
            Access::All if self.all_locked => Ok(()),
            Access::All => self.need(Restart::All),
            Access::Keys if self.all_locked => Ok(()),
            Access::Keys => {
                let missing: Vec<Vec<u8>> = call
                    .keys()
                    .iter()
                    .filter(|k| self.mask & (1u64 << shard_of(k.slot())) == 0)
                    .map(|k| call.argv[k.pos()].to_vec())
                    .collect();
                if missing.is_empty() {
                    Ok(())
                } else {
                    self.need(Restart::Keys(missing))
                }
            }
        }
    }

    /// Runs one command for the script; its reply is left in `reply`.
    fn exec(&mut self, argv: &[&[u8]]) -> Result<(), Fail> {
        let cmd = match crate::command::lookup(&self.server.commands, argv) {
            Ok(cmd) => cmd,
            Err(Unresolved::Arity(_)) => {
                return Err(Fail::Msg(
                    b"Wrong number of args calling Redis command from script",
                ))
            }
            Err(_) => return Err(Fail::Msg(b"Unknown Redis command called from script")),
        };
        let call = Call::new(cmd, argv);
        let write = cmd.has(flag::WRITE);
        match gates::check(&ScriptGates(self), &call) {
            None => {}
            Some(Stop::Fail(e)) => return Err(Fail::Refused(e)),
            // MISCONF and OOM: the command's error reply, as Redis's
            // scriptCall gives it.
            Some(Stop::Reject(e)) => {
                self.reply.clear();
                crate::command::reply_error(self.reply, self.stats, e.0.as_bytes());
                return Ok(());
            }
            Some(Stop::Queue | Stop::Postpone | Stop::Redirect(_)) => {}
        }
        self.check_shards(&call)?;
        if write {
            self.wrote = true;
            if let Some(b) = &self.busy {
                b.wrote.store(true, Relaxed);
            }
        }
        self.reply.clear();
        let caller_proto = self.client.proto;
        self.client.proto = self.resp;
        // redis.set_repl(redis.REPL_NONE): the command's own records stay
        // out of the log (keys it finds expired still leave as DEL).
        self.client.skip_records = !self.repl_aof;
        let view = self
            .view
            .take()
            .unwrap_or_else(|| self.server.keyspace.none());
        let start = Instant::now();
        // Scripts spending their time in commands reach the count hook
        // rarely: check the busy threshold here too.
        if self.busy.is_none() && start.duration_since(self.start) >= Duration::from_millis(100) {
            let threshold = busy_threshold(self.server);
            if threshold > 0 && start.duration_since(self.start) >= Duration::from_millis(threshold)
            {
                self.become_busy();
            }
        }
        self.busy_duty();
        self.client.in_script = true;
        let done = execute(
            self.server,
            self.client,
            &call,
            self.reply,
            self.stats,
            view,
            self.now_ms,
        );
        self.client.in_script = false;
        if call.cmd.has(flag::READONLY) && self.client.info.tracking.remembers() {
            self.remember_declared_keys();
        }
        self.view = Some(done.view);
        self.ready.extend(done.ready);
        // A blocking command does not block in a script: it answers as
        // if its timeout had passed.
        if let crate::command::Next::Park(req) = done.next {
            self.reply.clear();
            match req.timeout_reply {
                TimeoutReply::NullArray => encode::null_array(self.reply, self.resp),
                TimeoutReply::NullBulk => encode::null(self.reply, self.resp),
            }
        }
        self.client.proto = caller_proto;
        self.client.skip_records = false;
        let took = start.elapsed();
        self.stats.record(
            cmd.id,
            took,
            done.failed,
            self.server.stats.latency_tracking.load(Relaxed),
        );
        let us = took.as_micros() as u64;
        crate::observe::slowlog::inner_command_done(self.server, self.client, cmd, argv, us, true);
        Ok(())
    }

    /// Registers the run as busy (past `busy-reply-threshold`).
    fn become_busy(&mut self) {
        let st = state(self.server);
        let worker = self.client.info.worker.load(Relaxed);
        let shards = if self.all_locked { u64::MAX } else { self.mask };
        let r = Arc::new(Running {
            kill: AtomicBool::new(false),
            wrote: AtomicBool::new(self.wrote),
            is_eval: self.is_eval,
            name: self.name.to_string(),
            argv: self.caller_argv.iter().map(|a| a.to_vec()).collect(),
            start: self.start,
            shards,
            worker,
        });
        tracing::warn!(
            "Slow script detected: still in execution after {} milliseconds. You can try killing the script using the {} command. Script name is: {}.",
            self.start.elapsed().as_millis(),
            if self.is_eval { "SCRIPT KILL" } else { "FUNCTION KILL" },
            self.name
        );
        st.running.lock().push(r.clone());
        st.busy_shards.fetch_or(shards, Relaxed);
        ANY_BUSY.fetch_add(1, Relaxed);
        self.server.workers.set_busy(worker, true);
        self.busy = Some(r);
        self.last_duty = Instant::now();
        self.busy_duty();
    }

    /// While busy: answers the worker's other connections (see
    /// `BusyDuty`), at most every `BUSY_DUTY_EVERY`.
    fn busy_duty(&mut self) {
        let Some(duty) = BUSY_DUTY.get() else {
            return;
        };
        if self.busy.is_none() || (self.last_duty.elapsed() < BUSY_DUTY_EVERY && self.duty_done) {
            return;
        }
        self.last_duty = Instant::now();
        self.duty_done = true;
        let text = if self.is_eval {
            BUSY_EVAL
        } else {
            BUSY_FUNCTION
        };
        let worker = self.client.info.worker.load(Relaxed);
        duty(self.server, worker, text, self.stats);
    }

    fn end_busy(&mut self) {
        let Some(r) = self.busy.take() else {
            return;
        };
        let st = state(self.server);
        let mut running = st.running.lock();
        running.retain(|x| !Arc::ptr_eq(x, &r));
        let shards = running.iter().fold(0, |a, x| a | x.shards);
        st.busy_shards.store(shards, Relaxed);
        if !running.iter().any(|x| x.worker == r.worker) {
            self.server.workers.set_busy(r.worker, false);
        }
        ANY_BUSY.fetch_sub(1, Relaxed);
    }
}

/// Gives an empty vector of slices a new lifetime, keeping its allocation.
pub(super) fn recycle<'b>(mut v: Vec<&[u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter()
        .map(|_| -> &'b [u8] { unreachable!() })
        .collect()
}

lua_fn!(pub(super) fn redis_call => redis_call_impl);
pub(super) unsafe fn redis_call_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { call_generic(l, true) }
}

lua_fn!(pub(super) fn redis_pcall_cmd => redis_pcall_cmd_impl);
pub(super) unsafe fn redis_pcall_cmd_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { call_generic(l, false) }
}

/// redis.call (`raise`) and redis.pcall.
pub(super) unsafe fn call_generic(l: State, raise: bool) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let Some(run) = current() else {
            push_error(
                l,
                b"redis.call/pcall can only be called inside a script invocation",
            );
            return -1;
        };
        if run.restart.is_some() {
            push_error(l, RESTART);
            return -1;
        }
        let argc = ffi::lua_gettop(l);
        if argc == 0 {
            push_error(
                l,
                b"Please specify at least one argument for this redis lib call",
            );
            return if raise { -1 } else { 1 };
        }
        // Numbers are formatted with %.17g (Lua's own conversion loses
        // precision); strings are used in place on the Lua stack.
        run.nums.clear();
        let mut bad = false;
        for i in 1..=argc {
            match ffi::lua_type(l, i) {
                ffi::LUA_TNUMBER => {
                    lua::fmt_g(run.nums, ffi::lua_tonumber(l, i), 17);
                    run.nums.push(0);
                }
                ffi::LUA_TSTRING => {}
                _ => {
                    bad = true;
                    break;
                }
            }
        }
        if bad {
            ffi::lua_settop(l, 0);
            push_error(
                l,
                b"Lua redis lib command arguments must be strings or integers",
            );
            return if raise { -1 } else { 1 };
        }
        let nums = std::mem::take(run.nums);
        let mut argv = recycle(std::mem::take(&mut run.argv_store));
        {
            let mut rest: &[u8] = &nums;
            for i in 1..=argc {
                if ffi::lua_type(l, i) == ffi::LUA_TNUMBER {
                    let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
                    argv.push(&rest[..end]);
                    rest = rest.get(end + 1..).unwrap_or_default();
                } else {
                    // The string stays on the Lua stack until the command ran.
                    argv.push(lua::bytes(l, i).unwrap_or_default());
                }
            }
        }
        let result = run.exec(&argv);
        run.argv_store = recycle(argv);
        *run.nums = nums;
        ffi::lua_settop(l, 0);
        match result {
            Ok(()) => {
                lua::push_reply(l, run.reply, 0);
                if raise && run.reply.first() == Some(&b'-') {
                    -1
                } else {
                    1
                }
            }
            Err(Fail::Msg(m)) => {
                push_error_counted(l, m);
                if raise {
                    -1
                } else {
                    1
                }
            }
            Err(Fail::Refused(e)) => {
                push_error_counted(l, e.0.as_bytes());
                if raise {
                    -1
                } else {
                    1
                }
            }
            Err(Fail::Restart) => {
                // Unwind the script as fast as possible, even through pcall.
                ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKLINE, 0);
                run.line_hook = true;
                push_error(l, RESTART);
                -1
            }
        }
    }
}

lua_fn!(pub(super) fn redis_setresp => redis_setresp_impl);
pub(super) unsafe fn redis_setresp_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let Some(run) = current() else {
            push_error(
                l,
                b"redis.setresp can only be called inside a script invocation",
            );
            return -1;
        };
        if ffi::lua_gettop(l) != 1 {
            push_error(l, b"redis.setresp() requires one argument.");
            return -1;
        }
        let resp = ffi::lua_tonumber(l, -1) as i64;
        if resp != 2 && resp != 3 {
            push_error(l, b"RESP version must be 2 or 3.");
            return -1;
        }
        run.resp = resp as u8;
        0
    }
}

lua_fn!(pub(super) fn redis_set_repl => redis_set_repl_impl);
pub(super) unsafe fn redis_set_repl_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let Some(run) = current() else {
            push_error(
                l,
                b"redis.set_repl can only be called inside a script invocation",
            );
            return -1;
        };
        if ffi::lua_gettop(l) != 1 {
            push_error(l, b"redis.set_repl() requires two arguments.");
            return -1;
        }
        let flags = ffi::lua_tonumber(l, -1) as i64;
        if flags & !3 != 0 {
            push_error(
                l,
                b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
            );
            return -1;
        }
        run.repl_aof = flags & 1 != 0;
        0
    }
}

lua_fn!(pub(super) fn redis_acl_check_cmd => redis_acl_check_cmd_impl);
pub(super) unsafe fn redis_acl_check_cmd_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let Some(run) = current() else {
            push_error(
                l,
                b"redis.acl_check_cmd can only be called inside a script invocation",
            );
            return -1;
        };
        let argc = ffi::lua_gettop(l);
        if argc == 0 {
            push_error(
                l,
                b"Please specify at least one argument for this redis lib call",
            );
            return -1;
        }
        for i in 1..=argc {
            if ffi::lua_isstring(l, i) == 0 {
                push_error(
                    l,
                    b"Lua redis lib command arguments must be strings or integers",
                );
                return -1;
            }
        }
        let argv: Vec<&[u8]> = (1..=argc)
            .map(|i| lua::bytes(l, i).unwrap_or_default())
            .collect();
        let table = &run.server.commands;
        // Found as Redis's lookupCommand: the command or its subcommand,
        // whatever the number of arguments.
        let cmd = match table.lookup(argv[0]) {
            Some(c) if !c.subcommands.is_empty() && argv.len() >= 2 => table.subcommand(c, argv[1]),
            found => found,
        };
        let Some(cmd) = cmd else {
            push_error(l, b"Invalid command passed to redis.acl_check_cmd()");
            return -1;
        };
        // The calling user's rules, as ACLCheckAllUserCommandPerm (not
        // logged: nothing was refused).
        let allowed = match &run.client.auth.rules {
            Some(rules) => rules.check(cmd, &argv).is_ok(),
            None => true,
        };
        ffi::lua_pushboolean(l, allowed as c_int);
        1
    }
}

/// The count hook: busy detection, SCRIPT KILL, restarts, and the
/// FUNCTION LOAD timeout.
pub(super) unsafe extern "C-unwind" fn hook(l: State, _ar: *mut ffi::lua_Debug) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if hook_check(l) {
            ffi::lua_error(l);
        }
    }
}

/// True when an error was pushed and must be raised.
pub(super) unsafe fn hook_check(l: State) -> bool {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let load = LOADING.get();
        if !load.is_null() {
            if (*load).start.elapsed() > LOAD_TIMEOUT {
                ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKLINE, 0);
                push_error(l, b"FUNCTION LOAD timeout");
                return true;
            }
            return false;
        }
        let Some(run) = current() else {
            return false;
        };
        if run.restart.is_some() {
            push_error(l, RESTART);
            return true;
        }
        if run.busy.is_some() {
            // The duty may bring SCRIPT KILL from a connection of this worker.
            run.busy_duty();
            if b_killed(run) {
                if !run.line_hook {
                    tracing::warn!("Lua script killed by user with SCRIPT KILL.");
                    ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKLINE, 0);
                    run.line_hook = true;
                }
                push_error(l, KILLED);
                return true;
            }
            return false;
        }
        let threshold = busy_threshold(run.server);
        if threshold > 0 && run.start.elapsed() >= Duration::from_millis(threshold) {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.become_busy()));
        }
        false
    }
}

/// Whether the busy run was asked to stop.
pub(super) fn b_killed(run: &Run) -> bool {
    run.busy.as_ref().is_some_and(|b| b.kill.load(Relaxed))
}

pub(super) fn busy_threshold(server: &Server) -> u64 {
    server.settings().busy_reply_threshold
}

/// What the script's flags allow it.
#[derive(Clone, Copy)]
pub(super) struct Mode {
    /// `no-writes`, or called as *_RO.
    pub(super) read_only: bool,
    /// `allow-oom`: denyoom commands run while memory is over the limit.
    pub(super) allow_oom: bool,
}

/// What a script runs: an EVAL body or a function.
pub(super) enum Target<'n> {
    Eval { fref: c_int, sha: &'n str },
    Function { fref: c_int, name: &'n str },
}

pub(super) enum Outcome {
    Done,
    Restart(Restart),
}

/// Runs a script until it completes, relocking and running it again when
/// it reached for shards it does not hold (see the module docs).
pub(super) fn run_script(
    cx: &mut Ctx,
    eng: &mut Engine,
    target: Target,
    caller: &[&[u8]],
    keys: &[&[u8]],
    args: &[&[u8]],
    mode: Mode,
) -> CmdResult {
    let Mode {
        read_only,
        allow_oom,
    } = mode;
    let server = cx.server;
    let in_exec = cx.client.info.last_cmd.load(Relaxed) as usize != cx.cmd.id;
    let declared = keys.iter().fold(0u64, |m, k| m | shard_bit(k));
    let mut mask = declared;
    let mut all = false;
    let mut extra: Vec<Vec<u8>> = Vec::new();
    let hint_key = match &target {
        Target::Eval { sha, .. } => (true, Box::<str>::from(*sha)),
        Target::Function { name, .. } => (false, Box::<str>::from(*name)),
    };
    // Keys this script reached for last time without declaring them:
    // lock them up front instead of running twice.
    if !in_exec {
        if let Some(h) = eng.hints.get(&hint_key) {
            all = h.all;
            extra = h.keys.clone();
            mask = relock(cx, keys, &extra, all, declared);
        }
    }
    let own_tx = crate::command::propagate::begin_transaction(server, cx.client);
    let mut restarted = false;
    for attempt in 0.. {
        let can_restart = !in_exec && !all;
        match run_once(
            cx,
            eng,
            &target,
            caller,
            keys,
            args,
            read_only,
            allow_oom,
            mask,
            all,
            can_restart,
        )? {
            Outcome::Done => break,
            Outcome::Restart(r) => {
                restarted = true;
                // Its commands run again: shown once.
                cx.client.script_monitor_lines.clear();
                cx.client.script_slowlog.clear();
                match r {
                    Restart::All => all = true,
                    Restart::Keys(k) => extra.extend(k),
                }
                if attempt >= 2 {
                    all = true;
                }
                mask = relock(cx, keys, &extra, all, declared);
            }
        }
    }
    if restarted {
        if eng.hints.len() >= MAX_HINTS {
            eng.hints.clear();
        }
        let all = all || extra.len() > MAX_HINT_KEYS;
        if !all {
            extra.sort_unstable();
            extra.dedup();
        }
        let keys = if all { Vec::new() } else { extra };
        eng.hints.insert(hint_key, Hint { keys, all });
    }
    if own_tx {
        crate::command::propagate::end_transaction(server, cx.client);
    }
    Ok(())
}

/// Releases the shards the command holds and locks those of `keys` and
/// `extra` (or all); returns the new shard mask.
pub(super) fn relock(
    cx: &mut Ctx,
    keys: &[&[u8]],
    extra: &[Vec<u8>],
    all: bool,
    declared: u64,
) -> u64 {
    let server = cx.server;
    drop(std::mem::replace(&mut cx.view, server.keyspace.none()));
    if all {
        cx.view = server.keyspace.lock_all();
        u64::MAX
    } else {
        cx.view = server
            .keyspace
            .lock_keys(keys.iter().copied().chain(extra.iter().map(Vec::as_slice)));
        extra.iter().fold(declared, |m, k| m | shard_bit(k))
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run_once(
    cx: &mut Ctx,
    eng: &mut Engine,
    target: &Target,
    caller: &[&[u8]],
    keys: &[&[u8]],
    args: &[&[u8]],
    read_only: bool,
    allow_oom: bool,
    mask: u64,
    all_locked: bool,
    can_restart: bool,
) -> Result<Outcome, CmdError> {
    let Engine {
        eval,
        func,
        runs,
        reply,
        nums,
        ..
    } = eng;
    let (vm, is_eval, fref, name) = match target {
        Target::Eval { fref, sha } => (&eval.as_ref().ok_or_else(vm_failed)?.vm, true, *fref, *sha),
        Target::Function { fref, name } => (
            &func.as_ref().ok_or_else(vm_failed)?.vm,
            false,
            *fref,
            *name,
        ),
    };
    let l = vm.l;
    let server = cx.server;
    let db = cx.client.db;
    let proto = cx.client.proto;
    let view = std::mem::replace(&mut cx.view, server.keyspace.none());
    let mut run = Run {
        server,
        client: &mut *cx.client,
        view: Some(view),
        stats: cx.stats,
        now_ms: cx.now_ms,
        ready: &mut cx.ready,
        reply,
        nums,
        argv_store: Vec::new(),
        mask: if all_locked { u64::MAX } else { mask },
        all_locked,
        can_restart,
        restart: None,
        read_only,
        allow_oom,
        oom_at_start: crate::memory::evict::pre_command_oom(),
        wrote: false,
        resp: 2,
        repl_aof: true,
        start: Instant::now(),
        busy: None,
        last_duty: Instant::now(),
        duty_done: false,
        line_hook: false,
        is_eval,
        name,
        caller_argv: caller,
    };
    // SAFETY: CURRENT points at `run` only while Lua runs below; the Lua
    // stack is balanced on every path (settop(0) at the end).
    let rc = unsafe {
        CURRENT.set((&mut run as *mut Run<'_, '_>).cast());
        vm.push_ref(vm.handler);
        vm.push_ref(fref);
        let rc = if is_eval {
            vm.push_ref(vm.storage);
            push(l, b"KEYS");
            push_array(l, keys);
            ffi::lua_rawset(l, -3);
            push(l, b"ARGV");
            push_array(l, args);
            ffi::lua_rawset(l, -3);
            ffi::lua_pop(l, 1);
            ffi::lua_pcall(l, 0, 1, -2)
        } else {
            push_array(l, keys);
            push_array(l, args);
            ffi::lua_pcall(l, 2, 1, -4)
        };
        CURRENT.set(std::ptr::null_mut());
        rc
    };
    if run.line_hook {
        // SAFETY: plain hook reset on a live state.
        unsafe { ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKCOUNT, lua::HOOK_EVERY) };
    }
    run.end_busy();
    let restart = run.restart.take();
    let resp = run.resp;
    cx.view = run.view.take().unwrap_or_else(|| server.keyspace.none());
    drop(run);
    if cx.client.db != db {
        cx.client.set_db(db);
    }
    cx.client.proto = proto;
    *runs += 1;
    if *runs >= 50 {
        *runs = 0;
        // SAFETY: a GC step on a live state.
        unsafe { ffi::lua_gc(l, ffi::LUA_GCSTEP, 50) };
    }
    if let Some(r) = restart {
        // SAFETY: drops the result and error handler.
        unsafe { ffi::lua_settop(l, 0) };
        resume_panic();
        return Ok(Outcome::Restart(r));
    }
    // SAFETY: the result (or error) and the handler are on the stack.
    unsafe {
        if rc == 0 {
            lua::write_reply(l, cx.out, proto, resp);
        } else {
            write_script_error(l, cx.out, name);
        }
        ffi::lua_settop(l, 0);
    }
    resume_panic();
    Ok(Outcome::Done)
}

/// Pushes `items` as a Lua array.
pub(super) unsafe fn push_array(l: State, items: &[&[u8]]) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, items.len() as c_int, 0);
        for (i, it) in items.iter().enumerate() {
            push(l, it);
            ffi::lua_rawseti(l, -2, i as ffi::lua_Integer + 1);
        }
    }
}

/// The reply for a script that raised an error: `-<err> script: <name>,
/// on <source>:<line>.` from the table the error handler built.
pub(super) unsafe fn write_script_error(l: State, out: &mut Vec<u8>, name: &str) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
            let msg = lua::bytes(l, -1).unwrap_or(b"execution failure").to_vec();
            let mut m = format!("ERR Error running script {name}, ").into_bytes();
            m.extend_from_slice(&msg[..msg.len().min(100)]);
            encode::error(out, &m);
            lua::note_reply_error_text(&m);
            return;
        }
        let t = ffi::lua_gettop(l);
        let err = if lua::raw_field(l, t, c"err") == ffi::LUA_TSTRING {
            lua::bytes(l, -1).unwrap_or(b"").to_vec()
        } else {
            b"ERR unknown error".to_vec()
        };
        ffi::lua_pop(l, 1);
        let field = |f: &CStr| -> Option<Vec<u8>> {
            lua::raw_field(l, t, f);
            let v = if ffi::lua_isstring(l, -1) != 0 {
                Some(lua::bytes(l, -1).unwrap_or(b"").to_vec())
            } else {
                None
            };
            ffi::lua_pop(l, 1);
            v
        };
        let source = field(c"source");
        let line = field(c"line");
        let mut m = err;
        if let (Some(source), Some(line)) = (source, line) {
            m.extend_from_slice(b" script: ");
            m.extend_from_slice(name.as_bytes());
            m.extend_from_slice(b", on ");
            m.extend_from_slice(&source);
            m.push(b':');
            m.extend_from_slice(&line);
            m.push(b'.');
        }
        encode::error(out, &m);
        lua::note_reply_error(l, t, &m);
    }
}
