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
//!
//! **Layout.** Here: script flags, the shared state, the per-thread
//! interpreters; `library.rs`: shebangs, library metadata and loading;
//! `run.rs`: running a script (`redis.call`, the hook, relocking);
//! `commands.rs`: EVAL, SCRIPT and FUNCTION; `lua.rs` and the libraries
//! (`bit`, `cjson`, `cmsgpack`, `struct`) below them.

mod bit;
mod cjson;
mod cmsgpack;
mod lua;
pub(crate) use lua::take_reply_errors;
mod structlib;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use resp::encode;

use crate::client::Client;
use crate::command::error::{CmdError, CmdResult};
use crate::command::table::{flag, Access, Command, Registry, ScriptFlags};
use crate::command::{args, execute, Ctx, TimeoutReply};
use crate::observe::stats::ThreadStats;
use crate::server::Server;
use crate::storage::keyspace::{shard_of, View, SHARDS};
use lua::{ffi, lua_fn, push, push_error, push_error_counted, State, Vm};
use resp::slot::key_slot;

pub(super) fn register(r: &mut Registry) {
    r.add_flagged("eval", eval, flag::SCRIPT_CALL);
    r.add_flagged("evalsha", evalsha, flag::SCRIPT_CALL);
    r.add_flagged("eval_ro", eval_ro, flag::SCRIPT_CALL);
    r.add_flagged("evalsha_ro", evalsha_ro, flag::SCRIPT_CALL);
    r.add_flagged("fcall", fcall, flag::SCRIPT_CALL);
    r.add_flagged("fcall_ro", fcall_ro, flag::SCRIPT_CALL);
    r.add("script|load", script_load);
    r.add("script|exists", script_exists);
    r.add("script|show", script_show);
    r.add("script|flush", script_flush);
    r.add("script|kill", script_kill);
    r.while_busy("script|kill", crate::command::table::WhileBusy::Run);
    r.add("script|debug", script_debug);
    r.add("script|help", script_help);
    r.add("function|load", function_load);
    r.add("function|list", function_list);
    r.add("function|delete", function_delete);
    r.add("function|flush", function_flush);
    r.add("function|stats", function_stats);
    r.add("function|kill", function_kill);
    r.while_busy("function|stats", crate::command::table::WhileBusy::Run);
    r.while_busy("function|kill", crate::command::table::WhileBusy::Run);
    r.add("function|help", function_help);
    r.add("function|dump", function_dump);
    r.add("function|restore", function_restore);
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
/// Raised (and re-raised on every line) to unwind a script that must run
/// again with more shards locked; never reaches a client.
const RESTART: &[u8] = b"keel: script restarts with more keys locked";
const KILLED: &[u8] = b"Script killed by user with SCRIPT KILL...";
const LIB_NAME_RULE: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";
/// Longest a library's code may run at FUNCTION LOAD.
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

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

/// The flags the script a script command runs declares, if it declares
/// any (a shebang, or a function): what Redis's evalGetCommandFlags /
/// fcallGetCommandFlags read. `None` for an EVAL without a shebang (Redis
/// 6 rules: its commands are checked inside, see `run::Run::exec`) or a
/// script that is not there (the command answers that).
pub fn declared_flags(server: &Server, cmd: &Command, argv: &[&[u8]]) -> Option<ScriptFlags> {
    let st = state(server);
    let flags = match cmd.name.as_str() {
        "eval" | "eval_ro" => argv
            .get(1)
            .and_then(|b| library::eval_shebang(b).ok())
            .map(|f| f.0),
        "evalsha" | "evalsha_ro" => argv.get(1).and_then(|sha| {
            let key: [u8; 40] = sha.to_ascii_lowercase().try_into().ok()?;
            st.scripts.read().get(&key).map(|s| s.flags)
        }),
        "fcall" | "fcall_ro" => argv.get(1).and_then(|name| {
            let name = String::from_utf8_lossy(name).to_ascii_lowercase();
            let libs = st.libs.read();
            let lib = libs.libs.get(libs.functions.get(&name)?)?;
            lib.functions
                .values()
                .find(|f| f.name.eq_ignore_ascii_case(&name))
                .map(|f| f.flags)
        }),
        _ => None,
    }?;
    (flags & EVAL_COMPAT == 0).then_some(ScriptFlags {
        no_writes: flags & NO_WRITES != 0,
        allow_oom: flags & ALLOW_OOM != 0,
        allow_stale: flags & ALLOW_STALE != 0,
    })
}

/// What INFO memory reports of scripting.
pub struct ScriptMemory {
    pub scripts: usize,
    /// Bytes of cached script bodies (`used_memory_scripts_eval`).
    pub scripts_bytes: usize,
    pub functions: usize,
    pub libraries: usize,
    /// Bytes of library code (`used_memory_functions`).
    pub functions_bytes: usize,
}

pub fn memory(server: &Server) -> ScriptMemory {
    let st = state(server);
    let scripts = st.scripts.read();
    let libs = st.libs.read();
    ScriptMemory {
        scripts: scripts.len(),
        scripts_bytes: scripts.values().map(|s| s.body.len() + 40 + 64).sum(),
        functions: libs.functions.len(),
        libraries: libs.libs.len(),
        functions_bytes: libs.libs.values().map(|l| l.code.len() + 64).sum(),
    }
}

/// Bytes the Lua interpreters of all workers hold: (eval, functions).
pub fn lua_memory() -> (usize, usize) {
    (
        lua::allocated(lua::Kind::Eval),
        lua::allocated(lua::Kind::Function),
    )
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
pub fn busy_error(server: &Server, call: &crate::command::call::Call) -> Option<&'static str> {
    if ANY_BUSY.load(Relaxed) == 0 {
        return None;
    }
    let st = state(server);
    let busy = st.busy_shards.load(Relaxed);
    if busy == 0 {
        return None;
    }
    let touches = match call.cmd.access {
        Access::None => false,
        Access::All => true,
        Access::Keys => call
            .keys()
            .iter()
            .any(|k| busy & (1u64 << shard_of(k.slot())) != 0),
    };
    if !touches {
        return None;
    }
    busy_reply(server)
}

/// The BUSY error of the script running past busy-reply-threshold, if
/// one does (SHUTDOWN without NOSAVE is refused with it, as in Redis).
pub fn busy_reply(server: &Server) -> Option<&'static str> {
    if ANY_BUSY.load(Relaxed) == 0 {
        return None;
    }
    let running = state(server).running.lock();
    if running.is_empty() {
        return None;
    }
    Some(if running.iter().any(|r| r.is_eval) {
        BUSY_EVAL
    } else {
        BUSY_FUNCTION
    })
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
    reply: crate::net::replies::Replies,
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

mod commands;
mod library;
mod run;

use commands::*;
pub use commands::{flush_libraries, install_library, library_codes};
use library::*;
use run::*;

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
        // A C string: the line ends at a NUL.
        assert_eq!(
            split_args(b"#!lua name=x\0 more"),
            Some(vec![b"#!lua".to_vec(), b"name=x".to_vec()])
        );
        assert_eq!(
            library_metadata(b"#!lua \0name=x\n").err().unwrap(),
            "Library name was not given"
        );
    }
}
