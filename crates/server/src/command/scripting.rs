//! Lua scripting and functions: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO,
//! SCRIPT, FCALL, FCALL_RO and FUNCTION, as Redis 7.0.
//!
//! **Where scripts live.** Script bodies and function libraries are shared
//! by every thread ([`Scripting`], one per server); each worker thread
//! compiles them lazily into its own Lua interpreters (one for EVAL, one
//! for functions), so scripts on different threads run in parallel with no
//! interpreter lock. An epoch counter tells a thread its compiled copies
//! are stale (SCRIPT FLUSH, FUNCTION LOAD/DELETE/FLUSH).
//!
//! **Atomicity.** A script runs inside the locks dispatch took for its
//! declared KEYS, and every `redis.call` goes through [`execute`] in that
//! same view, as EXEC's commands do: counted, propagated, atomic. A script
//! that touches a key whose shard is not locked cannot wait for that lock
//! while holding others (deadlock), so:
//! - if it has not written yet (and is not inside EXEC), the attempt is
//!   abandoned, the locks are released, and the script runs again with the
//!   missing keys' shards locked too (after a few rounds, all shards). The
//!   first attempt had no effect, and a script is deterministic given the
//!   data, so this is invisible to the client;
//! - otherwise `redis.call` fails with `Script attempted to access a non
//!   local key`. Declaring every key in KEYS (as Redis asks) avoids both.
//!
//! **Busy scripts.** A count hook runs every 100,000 Lua instructions. Past
//! `busy-reply-threshold` ms the script is registered as busy: other
//! clients touching its shards get `-BUSY` (see [`busy_error`]) and SCRIPT
//! KILL / FUNCTION KILL from another connection set a flag the hook turns
//! into an error, unless the script already wrote (`-UNKILLABLE`).

mod bit;
mod cjson;
mod cmsgpack;
mod lua;
mod structlib;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use resp::encode;

use super::error::{CmdError, CmdResult};
use super::table::{flag, Access, Command, Registry};
use super::{args, execute, Ctx, TimeoutReply};
use crate::client::Client;
use crate::server::Server;
use crate::stats::ThreadStats;
use crate::storage::keyspace::{View, SHARDS};
use lua::{ffi, lua_fn, push, push_error, push_error_counted, State, Vm};
use resp::slot::key_slot;

pub(super) fn register(r: &mut Registry) {
    r.add("eval", eval);
    r.add("evalsha", evalsha);
    r.add("eval_ro", eval_ro);
    r.add("evalsha_ro", evalsha_ro);
    r.add("fcall", fcall);
    r.add("fcall_ro", fcall_ro);
    r.add("script|load", script_load);
    r.add("script|exists", script_exists);
    r.add("script|flush", script_flush);
    r.add("script|kill", script_kill);
    r.add("script|debug", script_debug);
    r.add("script|help", script_help);
    r.add("function|load", function_load);
    r.add("function|list", function_list);
    r.add("function|delete", function_delete);
    r.add("function|flush", function_flush);
    r.add("function|stats", function_stats);
    r.add("function|kill", function_kill);
    r.add("function|help", function_help);
}

// ---------------------------------------------------------------------------
// Script flags (shebang `#!lua flags=...` and register_function's flags).

const NO_WRITES: u32 = 1;
const ALLOW_OOM: u32 = 1 << 1;
const ALLOW_STALE: u32 = 1 << 2;
const NO_CLUSTER: u32 = 1 << 3;
const ALLOW_CROSS_SLOT: u32 = 1 << 4;
/// An EVAL script without a shebang: Redis 6 rules.
const EVAL_COMPAT: u32 = 1 << 5;

const FLAG_NAMES: [(u32, &str); 5] = [
    (NO_WRITES, "no-writes"),
    (ALLOW_OOM, "allow-oom"),
    (ALLOW_STALE, "allow-stale"),
    (NO_CLUSTER, "no-cluster"),
    (ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
];

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
const RO_WITH_WRITE_FLAG: &str = "ERR Can not execute a script with write flag using *_ro command.";
const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
const NON_LOCAL_KEY: &[u8] = b"Script attempted to access a non local key (keel locks the shards of the declared KEYS: declare every key the script uses)";
/// Commands Redis flags `may_replicate` that scripts may call.
const MAY_REPLICATE: [&str; 3] = ["publish", "spublish", "pfcount"];
/// Raised (and re-raised on every line) to unwind a script that must run
/// again with more shards locked; never reaches a client.
const RESTART: &[u8] = b"keel: script restarts with more keys locked";
const KILLED: &[u8] = b"Script killed by user with SCRIPT KILL...";
const LIB_NAME_RULE: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";
/// Longest a library's code may run at FUNCTION LOAD.
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);
/// Default `busy-reply-threshold` (alias `lua-time-limit`), in ms.
const DEFAULT_BUSY_MS: u64 = 5000;

// ---------------------------------------------------------------------------
// Shared state: scripts and libraries, visible to every thread.

/// A script body known to SCRIPT LOAD / EVAL.
struct Script {
    body: Box<[u8]>,
    flags: u32,
}

struct FunctionMeta {
    name: String,
    desc: Option<Vec<u8>>,
    flags: u32,
}

struct Library {
    code: Vec<u8>,
    /// By name (case-sensitive), for FUNCTION LIST.
    functions: BTreeMap<String, FunctionMeta>,
}

#[derive(Default)]
struct Libraries {
    libs: BTreeMap<String, Library>,
    /// Lower-cased function name → library (function names are
    /// case-insensitive, as Redis's function dictionary).
    functions: HashMap<String, String>,
}

/// A script that ran past the busy threshold.
struct Running {
    kill: AtomicBool,
    wrote: AtomicBool,
    is_eval: bool,
    name: String,
    argv: Vec<Vec<u8>>,
    start: Instant,
    shards: u64,
    worker: usize,
}

/// Scripting state shared by all threads of one server.
pub struct Scripting {
    run_id: String,
    scripts: RwLock<HashMap<[u8; 40], Arc<Script>, ahash::RandomState>>,
    scripts_epoch: AtomicU64,
    libs: RwLock<Libraries>,
    functions_epoch: AtomicU64,
    running: Mutex<Vec<Arc<Running>>>,
    /// Shards held by busy scripts (bit per shard).
    busy_shards: AtomicU64,
}

/// Busy scripts in the process: lets dispatch skip the BUSY check with
/// one load of a line that is almost never written.
static ANY_BUSY: AtomicU64 = AtomicU64::new(0);
/// What a worker does from its busy script's hook for the connections
/// it cannot serve meanwhile: set once by the network layer, which owns
/// the sockets (`net::busy::answer_stuck`). Arguments: the server, the
/// worker, the BUSY error text, the worker's statistics.
pub type BusyDuty = fn(&Server, usize, &str, &ThreadStats);
static BUSY_DUTY: std::sync::OnceLock<BusyDuty> = std::sync::OnceLock::new();

/// Installs the duty of a worker stuck in a busy script.
pub fn set_busy_duty(duty: BusyDuty) {
    let _ = BUSY_DUTY.set(duty);
}

/// How often a busy script's hook answers the stuck connections.
const BUSY_DUTY_EVERY: Duration = Duration::from_millis(10);

/// The scripting state of `server`.
///
/// Kept outside `Server` (a per-process registry keyed by run id, with a
/// per-thread cache) so this module needs no field there.
fn state(server: &Server) -> &'static Scripting {
    thread_local! {
        static LAST: Cell<Option<&'static Scripting>> = const { Cell::new(None) };
    }
    if let Some(s) = LAST.get() {
        if s.run_id == server.run_id {
            return s;
        }
    }
    static ALL: Mutex<Vec<&'static Scripting>> = Mutex::new(Vec::new());
    let mut all = ALL.lock();
    let s = match all.iter().find(|s| s.run_id == server.run_id) {
        Some(s) => *s,
        None => {
            let s: &'static Scripting = Box::leak(Box::new(Scripting {
                run_id: server.run_id.clone(),
                scripts: Default::default(),
                scripts_epoch: AtomicU64::new(0),
                libs: Default::default(),
                functions_epoch: AtomicU64::new(0),
                running: Mutex::new(Vec::new()),
                busy_shards: AtomicU64::new(0),
            }));
            all.push(s);
            s
        }
    };
    LAST.set(Some(s));
    s
}

/// The `-BUSY` error for a command that would touch the shards of a
/// script running past `busy-reply-threshold`, if any (dispatch's busy
/// gate, before it locks; the gate lets `allow_busy` commands through).
/// Commands that touch none of the script's shards pass: keel can serve
/// them while the script runs.
pub fn busy_error(server: &Server, cmd: &Command, argv: &[&[u8]]) -> Option<&'static str> {
    if ANY_BUSY.load(Relaxed) == 0 {
        return None;
    }
    let st = state(server);
    let busy = st.busy_shards.load(Relaxed);
    if busy == 0 {
        return None;
    }
    let touches = match cmd.access {
        Access::None => false,
        Access::All => true,
        Access::Keys => {
            let mut pos = Vec::new();
            cmd.key_positions(argv, &mut pos);
            pos.iter().any(|&p| busy & shard_bit(argv[p]) != 0)
        }
    };
    if !touches {
        return None;
    }
    let running = st.running.lock();
    Some(if running.iter().any(|r| r.is_eval) {
        BUSY_EVAL
    } else {
        BUSY_FUNCTION
    })
}

/// The BUSY error of the script running past busy-reply-threshold, if
/// one does (SHUTDOWN without NOSAVE is refused with it, as in Redis).
pub fn busy_reply(server: &Server) -> Option<&'static str> {
    if ANY_BUSY.load(Relaxed) == 0 {
        return None;
    }
    let running = state(server).running.lock();
    running
        .first()
        .map(|r| if r.is_eval { BUSY_EVAL } else { BUSY_FUNCTION })
}

/// Whether a script anywhere runs past busy-reply-threshold (background
/// duties that would wait for every shard hold off meanwhile).
#[inline]
pub fn any_busy() -> bool {
    ANY_BUSY.load(Relaxed) != 0
}

#[inline]
fn shard_bit(key: &[u8]) -> u64 {
    1u64 << (key_slot(key) % SHARDS)
}

// ---------------------------------------------------------------------------
// Per-thread interpreters.

/// A script compiled into this thread's EVAL interpreter.
#[derive(Clone, Copy)]
struct Compiled {
    fref: c_int,
    sha: [u8; 40],
    flags: u32,
}

struct EvalVm {
    vm: Vm,
    epoch: u64,
    by_body: HashMap<Box<[u8]>, Compiled, ahash::RandomState>,
    by_sha: HashMap<[u8; 40], Compiled, ahash::RandomState>,
}

struct FuncEntry {
    fref: c_int,
    flags: u32,
    name: Box<str>,
}

struct FuncVm {
    vm: Vm,
    epoch: u64,
    /// Lower-cased name → function.
    funcs: HashMap<Vec<u8>, FuncEntry, ahash::RandomState>,
}

/// Undeclared keys a script touched on its last run (see `run_script`).
struct Hint {
    keys: Vec<Vec<u8>>,
    all: bool,
}

/// Scripts with a remembered hint, per thread.
const MAX_HINTS: usize = 1024;
/// More undeclared keys than this: lock every shard next time.
const MAX_HINT_KEYS: usize = 16;

#[derive(Default)]
struct Engine {
    /// The server whose scripts the interpreters hold.
    owner: Option<&'static Scripting>,
    eval: Option<EvalVm>,
    func: Option<FuncVm>,
    /// Scripts run since the last GC step.
    runs: u32,
    /// Reply of the command `redis.call` runs.
    reply: Vec<u8>,
    /// Number arguments of `redis.call`, formatted.
    nums: Vec<u8>,
    /// By (is EVAL, sha or function name).
    hints: HashMap<(bool, Box<str>), Hint, ahash::RandomState>,
}

thread_local! {
    static ENGINE: RefCell<Engine> = RefCell::new(Engine::default());
}

const API: lua::Api = lua::Api {
    call: redis_call,
    pcall: redis_pcall_cmd,
    setresp: redis_setresp,
    set_repl: redis_set_repl,
    acl_check_cmd: redis_acl_check_cmd,
    register_function,
    hook,
};

fn vm_failed() -> CmdError {
    CmdError::new("ERR failed to create the Lua interpreter")
}

impl Engine {
    /// Drops interpreters compiled for another server.
    fn adopt(&mut self, st: &'static Scripting) {
        if !self.owner.is_some_and(|o| std::ptr::eq(o, st)) {
            self.eval = None;
            self.func = None;
            self.hints.clear();
            self.owner = Some(st);
        }
    }

    fn eval_vm(&mut self, st: &Scripting) -> Result<&mut EvalVm, CmdError> {
        let epoch = st.scripts_epoch.load(Relaxed);
        if self.eval.as_ref().is_none_or(|e| e.epoch != epoch) {
            // SCRIPT FLUSH resets the interpreter, as Redis does.
            self.eval = None;
            // SAFETY: API holds valid Lua C functions.
            let vm = unsafe { Vm::new(lua::Kind::Eval, &API) }.ok_or_else(vm_failed)?;
            self.eval = Some(EvalVm {
                vm,
                epoch,
                by_body: Default::default(),
                by_sha: Default::default(),
            });
        }
        self.eval.as_mut().ok_or_else(vm_failed)
    }

    /// The compiled script for an EVAL body, compiling and registering it
    /// on first sight.
    fn script_by_body(&mut self, st: &Scripting, body: &[u8]) -> Result<Compiled, CmdError> {
        let ev = self.eval_vm(st)?;
        if let Some(c) = ev.by_body.get(body) {
            return Ok(*c);
        }
        let sha = lua::sha1_hex(body);
        let known = st.scripts.read().get(&sha).map(|s| s.flags);
        let (flags, skip) = match known {
            Some(flags) => (flags, shebang_len(body)),
            None => eval_shebang(body).map_err(|e| CmdError::new(format!("ERR {e}")))?,
        };
        let fref = compile_script(&ev.vm, &body[skip..])?;
        if known.is_none() {
            st.scripts.write().entry(sha).or_insert_with(|| {
                Arc::new(Script {
                    body: body.into(),
                    flags,
                })
            });
        }
        let c = Compiled { fref, sha, flags };
        ev.by_body.insert(body.into(), c);
        ev.by_sha.insert(sha, c);
        Ok(c)
    }

    /// The compiled script for EVALSHA's digest (any case).
    fn script_by_sha(&mut self, st: &Scripting, sha: &[u8]) -> Result<Compiled, CmdError> {
        let Ok(mut key) = <[u8; 40]>::try_from(sha) else {
            return Err(CmdError::new(NOSCRIPT));
        };
        key.make_ascii_lowercase();
        let ev = self.eval_vm(st)?;
        if let Some(c) = ev.by_sha.get(&key) {
            return Ok(*c);
        }
        let Some(script) = st.scripts.read().get(&key).cloned() else {
            return Err(CmdError::new(NOSCRIPT));
        };
        let fref = compile_script(&ev.vm, &script.body[shebang_len(&script.body)..])?;
        let c = Compiled {
            fref,
            sha: key,
            flags: script.flags,
        };
        ev.by_body.insert(script.body.clone(), c);
        ev.by_sha.insert(key, c);
        Ok(c)
    }

    fn func_vm(&mut self, st: &Scripting) -> Result<&mut FuncVm, CmdError> {
        let epoch = st.functions_epoch.load(Relaxed);
        if self.func.as_ref().is_none_or(|f| f.epoch != epoch) {
            self.func = None;
            // SAFETY: API holds valid Lua C functions.
            let vm = unsafe { Vm::new(lua::Kind::Function, &API) }.ok_or_else(vm_failed)?;
            let mut funcs: HashMap<Vec<u8>, FuncEntry, ahash::RandomState> = Default::default();
            let codes: Vec<(String, Vec<u8>)> = st
                .libs
                .read()
                .libs
                .iter()
                .map(|(n, l)| (n.clone(), l.code.clone()))
                .collect();
            for (name, code) in codes {
                let body = match library_metadata(&code) {
                    Ok(md) => &code[md.body..],
                    Err(_) => continue,
                };
                match load_library(&vm, body) {
                    Ok(fs) => {
                        for f in fs {
                            funcs.insert(
                                f.name.to_ascii_lowercase().into_bytes(),
                                FuncEntry {
                                    fref: f.fref,
                                    flags: f.flags,
                                    name: f.name.into(),
                                },
                            );
                        }
                    }
                    Err(e) => tracing::warn!("library {name} failed to load on this thread: {e}"),
                }
            }
            self.func = Some(FuncVm { vm, epoch, funcs });
        }
        self.func.as_mut().ok_or_else(vm_failed)
    }
}

/// Compiles an EVAL body (shebang line removed, its newline kept so line
/// numbers hold) and keeps it in the registry.
fn compile_script(vm: &Vm, code: &[u8]) -> Result<c_int, CmdError> {
    // SAFETY: `vm` is a live interpreter; the stack is balanced.
    unsafe {
        match vm.compile(code, c"@user_script") {
            Ok(()) => Ok(ffi::luaL_ref(vm.l, ffi::LUA_REGISTRYINDEX)),
            Err(msg) => Err(CmdError::new(format!(
                "ERR Error compiling script (new function): {}",
                String::from_utf8_lossy(&msg)
            ))),
        }
    }
}

// ---------------------------------------------------------------------------
// Shebangs and library metadata.

/// sdssplitargs: words separated by spaces, with "..." and '...' quoting
/// (and escapes inside double quotes). None if quotes are unbalanced.
fn split_args(s: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= s.len() {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut inq, mut insq) = (false, false);
        loop {
            if inq {
                if i >= s.len() {
                    return None;
                }
                if s[i] == b'\\' && i + 1 < s.len() {
                    i += 1;
                    cur.push(match s[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        c => c,
                    });
                } else if s[i] == b'"' {
                    if i + 1 < s.len() && !s[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(s[i]);
                }
            } else if insq {
                if i >= s.len() {
                    return None;
                }
                if s[i] == b'\\' && i + 1 < s.len() && s[i + 1] == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if s[i] == b'\'' {
                    if i + 1 < s.len() && !s[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(s[i]);
                }
            } else {
                if i >= s.len() {
                    break;
                }
                match s[i] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => cur.push(c),
                }
            }
            i += 1;
        }
        out.push(cur);
    }
}

fn shebang_len(body: &[u8]) -> usize {
    if body.starts_with(b"#!") {
        body.iter().position(|&c| c == b'\n').unwrap_or(0)
    } else {
        0
    }
}

/// evalExtractShebangFlags: the script's flags and the shebang's length.
fn eval_shebang(body: &[u8]) -> Result<(u32, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((EVAL_COMPAT, 0));
    }
    let Some(end) = body.iter().position(|&c| c == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let parts = match split_args(&body[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("Invalid engine in script shebang".into()),
    };
    if parts[0] != b"#!lua" {
        return Err(format!(
            "Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(&parts[0])
        ));
    }
    let mut flags = 0;
    for p in &parts[1..] {
        let Some(list) = p.strip_prefix(b"flags=") else {
            return Err(format!(
                "Unknown lua shebang option: {}",
                String::from_utf8_lossy(p)
            ));
        };
        if list.is_empty() {
            continue;
        }
        for f in list.split(|&c| c == b',') {
            match FLAG_NAMES.iter().find(|(_, n)| n.as_bytes() == f) {
                Some((bit, _)) => flags |= bit,
                None => {
                    return Err(format!(
                        "Unexpected flag in script shebang: {}",
                        String::from_utf8_lossy(f)
                    ))
                }
            }
        }
    }
    Ok((flags, end))
}

struct LibMeta {
    name: String,
    engine: Vec<u8>,
    /// Where the code after the metadata line starts (at its newline).
    body: usize,
}

/// functionExtractLibMetaData: `#!<engine> name=<library>` on line one.
fn library_metadata(code: &[u8]) -> Result<LibMeta, String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&c| c == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let parts = match split_args(&code[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("Invalid library metadata".into()),
    };
    let engine = parts[0].get(2..).unwrap_or_default().to_vec();
    let mut name: Option<String> = None;
    for p in &parts[1..] {
        if p.len() >= 5 && p[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(String::from_utf8_lossy(&p[5..]).into_owned());
            continue;
        }
        return Err(format!(
            "Invalid metadata value given: {}",
            String::from_utf8_lossy(p)
        ));
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    Ok(LibMeta {
        name,
        engine,
        body: end,
    })
}

fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

// ---------------------------------------------------------------------------
// Loading a library: run its code with the load-time API.

struct Registered {
    name: String,
    desc: Option<Vec<u8>>,
    fref: c_int,
    flags: u32,
}

struct LoadCtx {
    start: Instant,
    functions: Vec<Registered>,
}

thread_local! {
    static LOADING: Cell<*mut LoadCtx> = const { Cell::new(std::ptr::null_mut()) };
}

/// Runs a library's code (after its metadata line) in `vm`, returning the
/// functions it registered, or the error FUNCTION LOAD reports.
fn load_library(vm: &Vm, body: &[u8]) -> Result<Vec<Registered>, String> {
    let l = vm.l;
    // SAFETY: `vm` is a live interpreter; the stack is balanced on every
    // path; LOADING points at `ctx` only while the code runs.
    unsafe {
        if let Err(msg) = vm.compile(body, c"@user_function") {
            return Err(format!(
                "Error compiling function: {}",
                String::from_utf8_lossy(&msg)
            ));
        }
        set_globals_index(vm, vm.load_api);
        let mut ctx = LoadCtx {
            start: Instant::now(),
            functions: Vec::new(),
        };
        LOADING.set(&mut ctx);
        let rc = ffi::lua_pcall(l, 0, 0, 0);
        LOADING.set(std::ptr::null_mut());
        ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKCOUNT, lua::HOOK_EVERY);
        set_globals_index(vm, vm.storage);
        let result = if rc != 0 {
            let msg = error_message(l);
            ffi::lua_pop(l, 1);
            Err(format!(
                "Error registering functions: {}",
                String::from_utf8_lossy(&msg)
            ))
        } else {
            Ok(())
        };
        resume_panic();
        match result {
            Ok(()) => Ok(std::mem::take(&mut ctx.functions)),
            Err(e) => {
                for f in ctx.functions {
                    ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, f.fref);
                }
                Err(e)
            }
        }
    }
}

/// Points the globals proxy's reads at registry table `r`.
unsafe fn set_globals_index(vm: &Vm, r: c_int) {
    // SAFETY: `vm` is this thread's live interpreter and `r` a registry
    // reference it holds (the caller's contract).
    unsafe {
        let l = vm.l;
        vm.push_ref(vm.globals_meta);
        push(l, b"__index");
        vm.push_ref(r);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
    }
}

/// luaExtractErrorInformation's message for the error value on top.
unsafe fn error_message(l: State) -> Vec<u8> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        match ffi::lua_type(l, -1) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                let mut m = b"ERR ".to_vec();
                m.extend_from_slice(lua::bytes(l, -1).unwrap_or(b""));
                m
            }
            ffi::LUA_TTABLE => {
                let msg = if lua::raw_field(l, -1, c"err") == ffi::LUA_TSTRING {
                    lua::bytes(l, -1).unwrap_or(b"").to_vec()
                } else {
                    b"ERR unknown error".to_vec()
                };
                ffi::lua_pop(l, 1);
                msg
            }
            _ => b"ERR unknown error".to_vec(),
        }
    }
}

/// Re-raises a panic caught at a Lua → Rust boundary.
fn resume_panic() {
    if let Some(p) = lua::PANIC.with(|c| c.borrow_mut().take()) {
        std::panic::resume_unwind(p);
    }
}

lua_fn!(fn register_function => register_function_impl);
unsafe fn register_function_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let ctx = LOADING.get();
        if ctx.is_null() {
            push_error(
                l,
                b"redis.register_function can only be called on FUNCTION LOAD command",
            );
            return -1;
        }
        let ctx = &mut *ctx;
        let argc = ffi::lua_gettop(l);
        let reg = match argc {
            1 => register_named(l),
            2 => register_positional(l),
            _ => Err("wrong number of arguments to redis.register_function"),
        };
        let reg = match reg {
            Ok(r) => r,
            Err(e) => {
                push_error(l, e.as_bytes());
                return -1;
            }
        };
        let dup = ctx
            .functions
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(&reg.name));
        if !valid_name(reg.name.as_bytes()) || dup {
            ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, reg.fref);
            let msg: &[u8] = if dup {
                b"Function already exists in the library"
            } else {
                LIB_NAME_RULE.as_bytes()
            };
            push_error(l, msg);
            return -1;
        }
        ctx.functions.push(reg);
        0
    }
}

unsafe fn register_positional(l: State) -> Result<Registered, &'static str> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_isstring(l, 1) == 0 {
            return Err("first argument to redis.register_function must be a string");
        }
        let name = String::from_utf8_lossy(lua::bytes(l, 1).unwrap_or(b"")).into_owned();
        if ffi::lua_type(l, 2) != ffi::LUA_TFUNCTION {
            return Err("second argument to redis.register_function must be a function");
        }
        let fref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        Ok(Registered {
            name,
            desc: None,
            fref,
            flags: 0,
        })
    }
}

unsafe fn register_named(l: State) -> Result<Registered, &'static str> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
            return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
        }
        let mut name: Option<String> = None;
        let mut desc: Option<Vec<u8>> = None;
        let mut fref: Option<c_int> = None;
        let mut flags = 0;
        let fail = |l: State, fref: Option<c_int>, e: &'static str| {
            if let Some(r) = fref {
                ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
            }
            Err(e)
        };
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, 1) != 0 {
            if ffi::lua_type(l, -2) != ffi::LUA_TSTRING {
                return fail(
                    l,
                    fref,
                    "named argument key given to redis.register_function is not a string",
                );
            }
            let key = lua::bytes(l, -2).unwrap_or(b"").to_ascii_lowercase();
            match key.as_slice() {
                b"function_name" => {
                    if ffi::lua_isstring(l, -1) == 0 {
                        return fail(
                        l,
                        fref,
                        "function_name argument given to redis.register_function must be a string",
                    );
                    }
                    name = Some(
                        String::from_utf8_lossy(lua::bytes(l, -1).unwrap_or(b"")).into_owned(),
                    );
                }
                b"description" => {
                    if ffi::lua_isstring(l, -1) == 0 {
                        return fail(
                        l,
                        fref,
                        "description argument given to redis.register_function must be a string",
                    );
                    }
                    desc = Some(lua::bytes(l, -1).unwrap_or(b"").to_vec());
                }
                b"callback" => {
                    if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                        return fail(
                            l,
                            fref,
                            "callback argument given to redis.register_function must be a function",
                        );
                    }
                    if let Some(r) = fref.take() {
                        ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
                    }
                    fref = Some(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX));
                    continue;
                }
                b"flags" => {
                    if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
                        return fail(
                        l,
                        fref,
                        "flags argument to redis.register_function must be a table representing function flags",
                    );
                    }
                    let t = ffi::lua_gettop(l);
                    let mut j = 1;
                    loop {
                        ffi::lua_rawgeti(l, t, j);
                        j += 1;
                        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
                            ffi::lua_pop(l, 1);
                            break;
                        }
                        let found = if ffi::lua_isstring(l, -1) != 0 {
                            let f = lua::bytes(l, -1).unwrap_or(b"");
                            FLAG_NAMES
                                .iter()
                                .find(|(_, n)| n.as_bytes().eq_ignore_ascii_case(f))
                                .map(|(b, _)| *b)
                        } else {
                            None
                        };
                        ffi::lua_pop(l, 1);
                        match found {
                            Some(b) => flags |= b,
                            None => return fail(l, fref, "unknown flag given"),
                        }
                    }
                }
                _ => return fail(l, fref, "unknown argument given to redis.register_function"),
            }
            ffi::lua_pop(l, 1);
        }
        let Some(name) = name else {
            return fail(
                l,
                fref,
                "redis.register_function must get a function name argument",
            );
        };
        let Some(fref) = fref else {
            return Err("redis.register_function must get a callback argument");
        };
        Ok(Registered {
            name,
            desc,
            fref,
            flags,
        })
    }
}

// ---------------------------------------------------------------------------
// Running a script.

/// Shards to add when a script must run again.
enum Restart {
    Keys(Vec<Vec<u8>>),
    All,
}

/// One script run: what `redis.call` and the hook reach through the
/// thread's CURRENT pointer.
struct Run<'a, 's> {
    server: &'s Server,
    client: &'a mut Client,
    view: Option<View<'s>>,
    stats: &'a ThreadStats,
    now_ms: u64,
    ready: &'a mut Vec<(usize, Vec<u8>)>,
    reply: &'a mut Vec<u8>,
    nums: &'a mut Vec<u8>,
    argv_store: Vec<&'static [u8]>,
    pos: Vec<usize>,
    /// Shards this script may touch (bit per shard).
    mask: u64,
    /// Every shard is locked.
    all_locked: bool,
    /// Abandoning the attempt is allowed (not inside EXEC, no write yet).
    can_restart: bool,
    restart: Option<Restart>,
    read_only: bool,
    wrote: bool,
    /// The protocol commands reply in (redis.setresp).
    resp: u8,
    /// redis.set_repl: whether writes reach the append-only log.
    repl_aof: bool,
    start: Instant,
    busy: Option<Arc<Running>>,
    /// When the busy duty last ran, and whether it ran at all.
    last_duty: Instant,
    duty_done: bool,
    /// The hook fires on every line (killed or restarting).
    line_hook: bool,
    is_eval: bool,
    name: &'a str,
    caller_argv: &'a [&'a [u8]],
}

thread_local! {
    static CURRENT: Cell<*mut Run<'static, 'static>> = const { Cell::new(std::ptr::null_mut()) };
}

/// The script running on this thread, if any.
///
/// # Safety
/// The returned reference must not outlive the run (it lives on the
/// runner's stack while CURRENT points at it) nor be held across another
/// call to this function.
unsafe fn current<'x>() -> Option<&'x mut Run<'static, 'static>> {
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
enum Fail {
    /// A script error (`ERR` prepended).
    Msg(&'static [u8]),
    /// Abandon the attempt and run again with more shards.
    Restart,
}

impl Run<'_, '_> {
    fn need(&mut self, r: Restart) -> Result<(), Fail> {
        if self.can_restart && !self.wrote {
            self.restart = Some(r);
            Err(Fail::Restart)
        } else {
            Err(Fail::Msg(NON_LOCAL_KEY))
        }
    }

    /// The shards the command would touch are all held.
    fn check_shards(&mut self, cmd: &Command, argv: &[&[u8]]) -> Result<(), Fail> {
        match cmd.access {
            Access::None => Ok(()),
            Access::All if self.all_locked => Ok(()),
            Access::All => self.need(Restart::All),
            Access::Keys if self.all_locked => Ok(()),
            Access::Keys => {
                let mut missing: Vec<Vec<u8>> = Vec::new();
                if let Some(i) = cmd.single_key {
                    if let Some(k) = argv.get(i) {
                        if self.mask & shard_bit(k) == 0 {
                            missing.push(k.to_vec());
                        }
                    }
                } else {
                    self.pos.clear();
                    cmd.key_positions(argv, &mut self.pos);
                    for &p in &self.pos {
                        if self.mask & shard_bit(argv[p]) == 0 {
                            missing.push(argv[p].to_vec());
                        }
                    }
                }
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
        let table = &self.server.commands;
        let Some(mut cmd) = table.lookup(argv[0]) else {
            return Err(Fail::Msg(b"Unknown Redis command called from script"));
        };
        if !cmd.subcommands.is_empty() && argv.len() >= 2 {
            match table.subcommand(cmd, argv[1]) {
                Some(sub) => cmd = sub,
                None => return Err(Fail::Msg(b"Unknown Redis command called from script")),
            }
        }
        let argc = argv.len() as i64;
        if (cmd.arity > 0 && argc != cmd.arity) || argc < -cmd.arity {
            return Err(Fail::Msg(
                b"Wrong number of args calling Redis command from script",
            ));
        }
        if cmd.has(flag::NOSCRIPT) {
            return Err(Fail::Msg(b"This Redis command is not allowed from script"));
        }
        let write = cmd.has(flag::WRITE);
        // Redis's may-replicate commands count as writes for read-only
        // scripts.
        if (write || MAY_REPLICATE.contains(&cmd.name.as_str())) && self.read_only {
            return Err(Fail::Msg(
                b"Write commands are not allowed from read-only scripts.",
            ));
        }
        // Dispatch's MISCONF gate, for the script's own commands: the
        // error is the command's reply, as Redis's scriptCall gives it.
        if write {
            if let Some(e) = super::disk_error(self.server) {
                self.reply.clear();
                encode::error(self.reply, e.0.as_bytes());
                return Ok(());
            }
        }
        self.check_shards(cmd, argv)?;
        if write {
            self.wrote = true;
            if let Some(b) = &self.busy {
                b.wrote.store(true, Relaxed);
            }
        }
        self.reply.clear();
        let caller_proto = self.client.proto;
        self.client.proto = self.resp;
        let aof_mark = self.client.tx_records.as_ref().map(Vec::len);
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
        let done = execute(
            self.server,
            self.client,
            cmd,
            argv,
            self.reply,
            self.stats,
            view,
            self.now_ms,
        );
        self.view = Some(done.view);
        self.ready.extend(done.ready);
        // A blocking command does not block in a script: it answers as
        // if its timeout had passed.
        if let Some(req) = self.client.block.take() {
            self.reply.clear();
            match req.timeout_reply {
                TimeoutReply::NullArray => encode::null_array(self.reply, self.resp),
                TimeoutReply::NullBulk => encode::null(self.reply, self.resp),
            }
        }
        self.client.proto = caller_proto;
        if !self.repl_aof {
            if let (Some(mark), Some(tx)) = (aof_mark, self.client.tx_records.as_mut()) {
                tx.truncate(mark);
            }
        }
        self.stats
            .record(cmd.id, start.elapsed().as_micros() as u64, done.failed);
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
fn recycle<'b>(mut v: Vec<&[u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter()
        .map(|_| -> &'b [u8] { unreachable!() })
        .collect()
}

lua_fn!(fn redis_call => redis_call_impl);
unsafe fn redis_call_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { call_generic(l, true) }
}

lua_fn!(fn redis_pcall_cmd => redis_pcall_cmd_impl);
unsafe fn redis_pcall_cmd_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { call_generic(l, false) }
}

/// redis.call (`raise`) and redis.pcall.
unsafe fn call_generic(l: State, raise: bool) -> c_int {
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

lua_fn!(fn redis_setresp => redis_setresp_impl);
unsafe fn redis_setresp_impl(l: State) -> c_int {
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

lua_fn!(fn redis_set_repl => redis_set_repl_impl);
unsafe fn redis_set_repl_impl(l: State) -> c_int {
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

lua_fn!(fn redis_acl_check_cmd => redis_acl_check_cmd_impl);
unsafe fn redis_acl_check_cmd_impl(l: State) -> c_int {
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
        let name = lua::bytes(l, 1).unwrap_or_default();
        let table = &run.server.commands;
        let found = match table.lookup(name) {
            Some(c) if !c.subcommands.is_empty() && argc >= 2 => table
                .subcommand(c, lua::bytes(l, 2).unwrap_or_default())
                .is_some(),
            Some(_) => true,
            None => false,
        };
        if !found {
            push_error(l, b"Invalid command passed to redis.acl_check_cmd()");
            return -1;
        }
        // keel has a single, all-powerful user.
        ffi::lua_pushboolean(l, 1);
        1
    }
}

/// The count hook: busy detection, SCRIPT KILL, restarts, and the
/// FUNCTION LOAD timeout.
unsafe extern "C-unwind" fn hook(l: State, _ar: *mut ffi::lua_Debug) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if hook_check(l) {
            ffi::lua_error(l);
        }
    }
}

/// True when an error was pushed and must be raised.
unsafe fn hook_check(l: State) -> bool {
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
fn b_killed(run: &Run) -> bool {
    run.busy.as_ref().is_some_and(|b| b.kill.load(Relaxed))
}

fn busy_threshold(server: &Server) -> u64 {
    let c = server.config.read();
    let v = c.get("busy-reply-threshold");
    if v.is_empty() {
        DEFAULT_BUSY_MS
    } else {
        v.parse().unwrap_or(DEFAULT_BUSY_MS)
    }
}

/// What a script runs: an EVAL body or a function.
enum Target<'n> {
    Eval { fref: c_int, sha: &'n str },
    Function { fref: c_int, name: &'n str },
}

enum Outcome {
    Done,
    Restart(Restart),
}

/// Runs a script until it completes, relocking and running it again when
/// it reached for shards it does not hold (see the module docs).
fn run_script(
    cx: &mut Ctx,
    eng: &mut Engine,
    target: Target,
    caller: &[&[u8]],
    keys: &[&[u8]],
    args: &[&[u8]],
    read_only: bool,
) -> CmdResult {
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
    let own_tx = super::propagate::begin_transaction(server, cx.client);
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
            mask,
            all,
            can_restart,
        )? {
            Outcome::Done => break,
            Outcome::Restart(r) => {
                restarted = true;
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
        super::propagate::end_transaction(server, cx.client);
    }
    Ok(())
}

/// Releases the shards the command holds and locks those of `keys` and
/// `extra` (or all); returns the new shard mask.
fn relock(cx: &mut Ctx, keys: &[&[u8]], extra: &[Vec<u8>], all: bool, declared: u64) -> u64 {
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
fn run_once(
    cx: &mut Ctx,
    eng: &mut Engine,
    target: &Target,
    caller: &[&[u8]],
    keys: &[&[u8]],
    args: &[&[u8]],
    read_only: bool,
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
        pos: Vec::new(),
        mask: if all_locked { u64::MAX } else { mask },
        all_locked,
        can_restart,
        restart: None,
        read_only,
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
unsafe fn push_array(l: State, items: &[&[u8]]) {
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
unsafe fn write_script_error(l: State, out: &mut Vec<u8>, name: &str) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
            let msg = lua::bytes(l, -1).unwrap_or(b"execution failure").to_vec();
            let mut m = format!("ERR Error running script {name}, ").into_bytes();
            m.extend_from_slice(&msg[..msg.len().min(100)]);
            encode::error(out, &m);
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
    }
}

// ---------------------------------------------------------------------------
// EVAL family.

fn eval(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    eval_generic(cx, argv, false, false)
}

fn evalsha(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    eval_generic(cx, argv, true, false)
}

fn eval_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    eval_generic(cx, argv, false, true)
}

fn evalsha_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    eval_generic(cx, argv, true, true)
}

/// Parses numkeys as EVAL does.
fn numkeys(argv: &[&[u8]], bad: CmdError) -> Result<usize, CmdError> {
    let n = resp::parse_i64(argv[2]).ok_or(bad)?;
    if n > argv.len() as i64 - 3 {
        return Err(CmdError::new(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if n < 0 {
        return Err(CmdError::new("ERR Number of keys can't be negative"));
    }
    Ok(n as usize)
}

fn eval_generic(cx: &mut Ctx, argv: &[&[u8]], by_sha: bool, ro: bool) -> CmdResult {
    if by_sha && argv[1].len() != 40 {
        return Err(CmdError::new(NOSCRIPT));
    }
    let n = numkeys(argv, super::error::NOT_INTEGER)?;
    let st = state(cx.server);
    ENGINE.with(|e| {
        let mut eng = e.borrow_mut();
        let eng = &mut *eng;
        eng.adopt(st);
        let script = if by_sha {
            eng.script_by_sha(st, argv[1])?
        } else {
            eng.script_by_body(st, argv[1])?
        };
        let compat = script.flags & EVAL_COMPAT != 0;
        if ro && !compat && script.flags & NO_WRITES == 0 {
            return Err(CmdError::new(RO_WITH_WRITE_FLAG));
        }
        let read_only = ro || (!compat && script.flags & NO_WRITES != 0);
        // SAFETY: the digest is ASCII hex.
        let sha = std::str::from_utf8(&script.sha).unwrap_or("");
        let (keys, rest) = argv[3..].split_at(n);
        run_script(
            cx,
            eng,
            Target::Eval {
                fref: script.fref,
                sha,
            },
            argv,
            keys,
            rest,
            read_only,
        )
    })
}

fn fcall(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    fcall_generic(cx, argv, false)
}

fn fcall_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    fcall_generic(cx, argv, true)
}

fn fcall_generic(cx: &mut Ctx, argv: &[&[u8]], ro: bool) -> CmdResult {
    let st = state(cx.server);
    ENGINE.with(|e| {
        let mut eng = e.borrow_mut();
        let eng = &mut *eng;
        eng.adopt(st);
        let fv = eng.func_vm(st)?;
        let Some(f) = fv.funcs.get(&argv[1].to_ascii_lowercase()) else {
            return Err(CmdError::new("ERR Function not found"));
        };
        let (fref, flags, name) = (f.fref, f.flags, f.name.clone());
        let n = numkeys(argv, CmdError::new("ERR Bad number of keys provided"))?;
        if ro && flags & NO_WRITES == 0 {
            return Err(CmdError::new(RO_WITH_WRITE_FLAG));
        }
        let read_only = ro || flags & NO_WRITES != 0;
        let (keys, rest) = argv[3..].split_at(n);
        run_script(
            cx,
            eng,
            Target::Function { fref, name: &name },
            argv,
            keys,
            rest,
            read_only,
        )
    })
}

// ---------------------------------------------------------------------------
// SCRIPT.

fn script_load(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let st = state(cx.server);
    let sha = ENGINE.with(|e| {
        let mut eng = e.borrow_mut();
        eng.adopt(st);
        eng.script_by_body(st, argv[2]).map(|c| c.sha)
    })?;
    cx.bulk(&sha);
    Ok(())
}

fn script_exists(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let st = state(cx.server);
    let scripts = st.scripts.read();
    encode::array(cx.out, argv.len() - 2);
    for a in &argv[2..] {
        let found = <[u8; 40]>::try_from(*a).is_ok_and(|mut k| {
            k.make_ascii_lowercase();
            scripts.contains_key(&k)
        });
        encode::integer(cx.out, found as i64);
    }
    Ok(())
}

fn script_flush(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let ok = argv.len() == 2
        || (argv.len() == 3 && (args::is(argv[2], "sync") || args::is(argv[2], "async")));
    if !ok {
        return Err(CmdError::new(
            "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
        ));
    }
    let st = state(cx.server);
    let old = std::mem::take(&mut *st.scripts.write());
    st.scripts_epoch.fetch_add(1, Relaxed);
    drop(old);
    cx.ok();
    Ok(())
}

fn script_kill(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    kill(cx, true)
}

fn function_kill(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    kill(cx, false)
}

/// SCRIPT KILL / FUNCTION KILL: stops the busy scripts of that kind that
/// have not written.
fn kill(cx: &mut Ctx, is_eval: bool) -> CmdResult {
    let st = state(cx.server);
    let running = st.running.lock();
    if running.is_empty() {
        return Err(CmdError::new("NOTBUSY No scripts in execution right now."));
    }
    let mut killed = false;
    for r in running.iter() {
        if r.is_eval == is_eval && !r.wrote.load(Relaxed) {
            r.kill.store(true, Relaxed);
            killed = true;
        }
    }
    if killed {
        drop(running);
        cx.ok();
        return Ok(());
    }
    if running.iter().any(|r| r.wrote.load(Relaxed)) {
        return Err(CmdError::new(
            "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
        ));
    }
    Err(CmdError::new(if is_eval {
        BUSY_FUNCTION
    } else {
        BUSY_EVAL
    }))
}

fn script_debug(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if args::is(argv[2], "no") {
        cx.ok();
        Ok(())
    } else if args::is(argv[2], "yes") || args::is(argv[2], "sync") {
        Err(CmdError::new(
            "ERR SCRIPT DEBUG is not supported: keel has no Lua debugger",
        ))
    } else {
        Err(CmdError::new("ERR Use SCRIPT DEBUG YES/SYNC/NO"))
    }
}

fn script_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    super::keys::help_reply(
        cx,
        &[
            "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
            "HELP",
            "    Prints this help.",
        ],
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// FUNCTION.

fn function_load(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let mut replace = false;
    for a in &argv[2..argv.len() - 1] {
        if args::is(a, "replace") {
            replace = true;
            continue;
        }
        return Err(CmdError::new(format!(
            "ERR Unknown option given: {}",
            String::from_utf8_lossy(a)
        )));
    }
    let name = install_library(cx.server, argv[argv.len() - 1], replace)?;
    cx.dirty += 1;
    cx.bulk(name.as_bytes());
    Ok(())
}

/// The code of every function library, for snapshots.
pub fn library_codes(server: &Server) -> Vec<Vec<u8>> {
    let st = state(server);
    let libs = st.libs.read();
    libs.libs.values().map(|l| l.code.clone()).collect()
}

/// Compiles and registers a library (FUNCTION LOAD, and loading a
/// snapshot); returns its name.
pub fn install_library(server: &Server, code: &[u8], replace: bool) -> Result<String, CmdError> {
    let md = library_metadata(code).map_err(|e| CmdError::new(format!("ERR {e}")))?;
    if !valid_name(md.name.as_bytes()) {
        return Err(CmdError::new(format!("ERR {LIB_NAME_RULE}")));
    }
    if !md.engine.eq_ignore_ascii_case(b"lua") {
        return Err(CmdError::new(format!(
            "ERR Engine '{}' not found",
            String::from_utf8_lossy(&md.engine)
        )));
    }
    let st = state(server);
    if !replace && st.libs.read().libs.contains_key(&md.name) {
        return Err(CmdError::new(format!(
            "ERR Library '{}' already exists",
            md.name
        )));
    }
    // Validate in a fresh interpreter; threads compile it lazily.
    // SAFETY: API holds valid Lua C functions.
    let vm = unsafe { Vm::new(lua::Kind::Function, &API) }.ok_or_else(vm_failed)?;
    let registered =
        load_library(&vm, &code[md.body..]).map_err(|e| CmdError::new(format!("ERR {e}")))?;
    drop(vm);
    if registered.is_empty() {
        return Err(CmdError::new("ERR No functions registered"));
    }
    {
        let mut libs = st.libs.write();
        if !replace && libs.libs.contains_key(&md.name) {
            return Err(CmdError::new(format!(
                "ERR Library '{}' already exists",
                md.name
            )));
        }
        for f in &registered {
            if let Some(owner) = libs.functions.get(&f.name.to_ascii_lowercase()) {
                if *owner != md.name {
                    return Err(CmdError::new(format!(
                        "ERR Function {} already exists",
                        f.name
                    )));
                }
            }
        }
        if let Some(old) = libs.libs.remove(&md.name) {
            for f in old.functions.keys() {
                libs.functions.remove(&f.to_ascii_lowercase());
            }
        }
        let mut functions = BTreeMap::new();
        for f in registered {
            libs.functions
                .insert(f.name.to_ascii_lowercase(), md.name.clone());
            functions.insert(
                f.name.clone(),
                FunctionMeta {
                    name: f.name,
                    desc: f.desc,
                    flags: f.flags,
                },
            );
        }
        libs.libs.insert(
            md.name.clone(),
            Library {
                code: code.to_vec(),
                functions,
            },
        );
        st.functions_epoch.fetch_add(1, Relaxed);
    }
    Ok(md.name)
}

fn function_list(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < argv.len() {
        let a = argv[i];
        if !with_code && args::is(a, "withcode") {
            with_code = true;
        } else if pattern.is_none() && args::is(a, "libraryname") {
            if i >= argv.len() - 1 {
                return Err(CmdError::new("ERR library name argument was not given"));
            }
            i += 1;
            pattern = Some(argv[i]);
        } else {
            return Err(CmdError::new(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(a)
            )));
        }
        i += 1;
    }
    let st = state(cx.server);
    let libs = st.libs.read();
    let selected: Vec<(&String, &Library)> = libs
        .libs
        .iter()
        .filter(|(n, _)| pattern.is_none_or(|p| crate::glob::matches(p, n.as_bytes(), true)))
        .collect();
    let proto = cx.proto();
    encode::array(cx.out, selected.len());
    for (name, lib) in selected {
        encode::map(cx.out, if with_code { 4 } else { 3 }, proto);
        encode::bulk(cx.out, b"library_name");
        encode::bulk(cx.out, name.as_bytes());
        encode::bulk(cx.out, b"engine");
        encode::bulk(cx.out, b"LUA");
        encode::bulk(cx.out, b"functions");
        encode::array(cx.out, lib.functions.len());
        for f in lib.functions.values() {
            encode::map(cx.out, 3, proto);
            encode::bulk(cx.out, b"name");
            encode::bulk(cx.out, f.name.as_bytes());
            encode::bulk(cx.out, b"description");
            match &f.desc {
                Some(d) => encode::bulk(cx.out, d),
                None => encode::null(cx.out, proto),
            }
            encode::bulk(cx.out, b"flags");
            let names: Vec<&str> = FLAG_NAMES
                .iter()
                .filter(|(b, _)| f.flags & b != 0)
                .map(|(_, n)| *n)
                .collect();
            encode::set(cx.out, names.len(), proto);
            for n in names {
                encode::simple(cx.out, n.as_bytes());
            }
        }
        if with_code {
            encode::bulk(cx.out, b"library_code");
            encode::bulk(cx.out, &lib.code);
        }
    }
    Ok(())
}

fn function_delete(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let st = state(cx.server);
    let name = String::from_utf8_lossy(argv[2]).into_owned();
    {
        let mut libs = st.libs.write();
        let Some(old) = libs.libs.remove(&name) else {
            return Err(CmdError::new("ERR Library not found"));
        };
        for f in old.functions.keys() {
            libs.functions.remove(&f.to_ascii_lowercase());
        }
        st.functions_epoch.fetch_add(1, Relaxed);
    }
    cx.dirty += 1;
    cx.ok();
    Ok(())
}

fn function_flush(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len() > 3 {
        return Err(CmdError::new(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
            String::from_utf8_lossy(argv[1])
        )));
    }
    if argv.len() == 3 && !args::is(argv[2], "sync") && !args::is(argv[2], "async") {
        return Err(CmdError::new(
            "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
        ));
    }
    flush_libraries(cx.server);
    cx.dirty += 1;
    cx.ok();
    Ok(())
}

/// Drops every function library (FUNCTION FLUSH, DEBUG RELOAD).
pub fn flush_libraries(server: &Server) {
    let st = state(server);
    let old = std::mem::take(&mut *st.libs.write());
    st.functions_epoch.fetch_add(1, Relaxed);
    drop(old);
}

fn function_stats(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let st = state(cx.server);
    let running = st.running.lock().clone();
    if running.iter().any(|r| r.is_eval) {
        return Err(CmdError::new(BUSY_EVAL));
    }
    let proto = cx.proto();
    encode::map(cx.out, 2, proto);
    encode::bulk(cx.out, b"running_script");
    match running.first() {
        None => encode::null(cx.out, proto),
        Some(r) => {
            encode::map(cx.out, 3, proto);
            encode::bulk(cx.out, b"name");
            encode::bulk(cx.out, r.name.as_bytes());
            encode::bulk(cx.out, b"command");
            encode::array(cx.out, r.argv.len());
            for a in &r.argv {
                encode::bulk(cx.out, a);
            }
            encode::bulk(cx.out, b"duration_ms");
            encode::integer(cx.out, r.start.elapsed().as_millis() as i64);
        }
    }
    let (nlibs, nfuncs) = {
        let libs = st.libs.read();
        (libs.libs.len(), libs.functions.len())
    };
    encode::bulk(cx.out, b"engines");
    encode::map(cx.out, 1, proto);
    encode::bulk(cx.out, b"LUA");
    encode::map(cx.out, 2, proto);
    encode::bulk(cx.out, b"libraries_count");
    encode::integer(cx.out, nlibs as i64);
    encode::bulk(cx.out, b"functions_count");
    encode::integer(cx.out, nfuncs as i64);
    Ok(())
}

fn function_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    super::keys::help_reply(
        cx,
        &[
            "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
            "HELP",
            "    Prints this help.",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs() {
        assert_eq!(eval_shebang(b"return 1"), Ok((EVAL_COMPAT, 0)));
        assert_eq!(
            eval_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1"),
            Ok((NO_WRITES | ALLOW_OOM, 31))
        );
        assert_eq!(eval_shebang(b"#!lua\nx"), Ok((0, 5)));
        assert_eq!(
            eval_shebang(b"#!lua"),
            Err("Invalid script shebang".to_string())
        );
        assert_eq!(
            eval_shebang(b"#!luax\n"),
            Err("Unexpected engine in script shebang: #!luax".to_string())
        );
        assert_eq!(
            eval_shebang(b"#!lua flags=bad\n"),
            Err("Unexpected flag in script shebang: bad".to_string())
        );
        assert_eq!(
            eval_shebang(b"#!lua foo=bar\n"),
            Err("Unknown lua shebang option: foo=bar".to_string())
        );
        let md = library_metadata(b"#!lua name=mylib\ncode").unwrap();
        assert_eq!(
            (md.name.as_str(), md.engine.as_slice(), md.body),
            ("mylib", &b"lua"[..], 16)
        );
        assert_eq!(
            library_metadata(b"#!lua\n").err().unwrap(),
            "Library name was not given"
        );
        assert_eq!(
            library_metadata(b"return").err().unwrap(),
            "Missing library metadata"
        );
        assert_eq!(
            library_metadata(b"#!lua name=a name=b\n").err().unwrap(),
            "Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(
            split_args(b"a \"b c\" 'd'"),
            Some(vec![b"a".to_vec(), b"b c".to_vec(), b"d".to_vec()])
        );
        assert_eq!(split_args(b"a \"b"), None);
    }
}
