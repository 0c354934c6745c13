//! The commands: the EVAL family, SCRIPT and FUNCTION.

use super::*;

// ---------------------------------------------------------------------------
// EVAL family.

pub(super) fn eval(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    eval_generic(cx, argv, false, false)
}

pub(super) fn evalsha(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    eval_generic(cx, argv, true, false)
}

pub(super) fn eval_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    eval_generic(cx, argv, false, true)
}

pub(super) fn evalsha_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    eval_generic(cx, argv, true, true)
}

/// Parses numkeys as EVAL does.
pub(super) fn numkeys(argv: &[&[u8]], bad: CmdError) -> Result<usize, CmdError> {
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

pub(super) fn eval_generic(cx: &mut Ctx, argv: &[&[u8]], by_sha: bool, ro: bool) -> CmdResult {
    if by_sha && argv[1].len() != 40 {
        return Err(CmdError::new(NOSCRIPT));
    }
    let n = numkeys(argv, crate::command::error::NOT_INTEGER)?;
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
        let allow_oom = !compat && script.flags & ALLOW_OOM != 0;
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
            run::Mode {
                read_only,
                allow_oom,
            },
        )
    })
}

pub(super) fn fcall(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    fcall_generic(cx, argv, false)
}

pub(super) fn fcall_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    fcall_generic(cx, argv, true)
}

pub(super) fn fcall_generic(cx: &mut Ctx, argv: &[&[u8]], ro: bool) -> CmdResult {
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
        let allow_oom = flags & ALLOW_OOM != 0;
        let (keys, rest) = argv[3..].split_at(n);
        run_script(
            cx,
            eng,
            Target::Function { fref, name: &name },
            argv,
            keys,
            rest,
            run::Mode {
                read_only,
                allow_oom,
            },
        )
    })
}

// ---------------------------------------------------------------------------
// SCRIPT.

pub(super) fn script_load(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let st = state(cx.server);
    let sha = ENGINE.with(|e| {
        let mut eng = e.borrow_mut();
        eng.adopt(st);
        eng.script_by_body(st, argv[2]).map(|c| c.sha)
    })?;
    cx.bulk(&sha);
    Ok(())
}

pub(super) fn script_exists(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
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

/// SCRIPT SHOW sha1 (Valkey 8.0): the body of a cached script.
pub(super) fn script_show(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let st = state(cx.server);
    let scripts = st.scripts.read();
    let script = <[u8; 40]>::try_from(argv[2]).ok().and_then(|mut k| {
        k.make_ascii_lowercase();
        scripts.get(&k).cloned()
    });
    match script {
        Some(script) => {
            encode::bulk(cx.out, &script.body);
            Ok(())
        }
        None => Err(CmdError::new(NOSCRIPT)),
    }
}

pub(super) fn script_flush(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
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

pub(super) fn script_kill(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    kill(cx, true)
}

pub(super) fn function_kill(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    kill(cx, false)
}

/// SCRIPT KILL / FUNCTION KILL: stops the busy scripts of that kind that
/// have not written.
pub(super) fn kill(cx: &mut Ctx, is_eval: bool) -> CmdResult {
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

pub(super) fn script_debug(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
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

pub(super) fn script_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
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
    ]);
    Ok(())
}

// ---------------------------------------------------------------------------
// FUNCTION.

pub(super) fn function_load(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
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
    let st = state(server);
    let (name, lib) = compile_library(code, |n| !replace && st.libs.read().libs.contains_key(n))?;
    let mut libs = st.libs.write();
    if !replace && libs.libs.contains_key(&name) {
        return Err(library_exists(&name));
    }
    for f in lib.functions.keys() {
        if let Some(owner) = libs.functions.get(&f.to_ascii_lowercase()) {
            if *owner != name {
                return Err(CmdError::new(format!("ERR Function {f} already exists")));
            }
        }
    }
    link(&mut libs, name.clone(), lib);
    st.functions_epoch.fetch_add(1, Relaxed);
    Ok(name)
}

fn library_exists(name: &str) -> CmdError {
    CmdError::new(format!("ERR Library '{name}' already exists"))
}

/// Checks a library's metadata and compiles it in a fresh interpreter
/// (threads compile it again lazily); `exists` refuses a name taken, before
/// the compilation, as Redis checks it.
fn compile_library(
    code: &[u8],
    exists: impl Fn(&str) -> bool,
) -> Result<(String, Library), CmdError> {
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
    if exists(&md.name) {
        return Err(library_exists(&md.name));
    }
    // SAFETY: API holds valid Lua C functions.
    let vm = unsafe { Vm::new(lua::Kind::Function, &API) }.ok_or_else(vm_failed)?;
    let registered =
        load_library(&vm, &code[md.body..]).map_err(|e| CmdError::new(format!("ERR {e}")))?;
    drop(vm);
    if registered.is_empty() {
        return Err(CmdError::new("ERR No functions registered"));
    }
    let functions = registered
        .into_iter()
        .map(|f| {
            (
                f.name.clone(),
                FunctionMeta {
                    name: f.name,
                    desc: f.desc,
                    flags: f.flags,
                },
            )
        })
        .collect();
    Ok((
        md.name,
        Library {
            code: code.to_vec(),
            functions,
        },
    ))
}

/// Registers `lib` under `name`, replacing a library of that name.
fn link(libs: &mut Libraries, name: String, lib: Library) {
    unlink(libs, &name);
    for f in lib.functions.keys() {
        libs.functions.insert(f.to_ascii_lowercase(), name.clone());
    }
    libs.libs.insert(name, lib);
}

fn unlink(libs: &mut Libraries, name: &str) {
    if let Some(old) = libs.libs.remove(name) {
        for f in old.functions.keys() {
            libs.functions.remove(&f.to_ascii_lowercase());
        }
    }
}

/// FUNCTION DUMP
pub(super) fn function_dump(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let compress = cx.server.settings().rdbcompression;
    let payload = crate::persistence::rdb::functions_payload(&library_codes(cx.server), compress);
    cx.bulk(&payload);
    Ok(())
}

/// FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
pub(super) fn function_restore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    use crate::persistence::rdb;
    if argv.len() > 4 {
        return Err(CmdError::new(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
            String::from_utf8_lossy(argv[1])
        )));
    }
    let (mut flush, mut replace) = (false, false);
    if let Some(policy) = argv.get(3) {
        if args::is(policy, "flush") {
            flush = true;
        } else if args::is(policy, "replace") {
            replace = true;
        } else if !args::is(policy, "append") {
            return Err(CmdError::new(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ));
        }
    }
    if rdb::verify_payload(argv[2]).is_err() {
        return Err(CmdError::new(
            "ERR DUMP payload version or checksum are wrong",
        ));
    }
    let codes =
        rdb::functions_of_payload(argv[2]).map_err(|e| CmdError::new(format!("ERR {e}")))?;
    // Every library compiles into a context of its own first, so a bad
    // one leaves the current libraries untouched.
    let mut restored = Libraries::default();
    for code in &codes {
        let (name, lib) = compile_library(code, |n| restored.libs.contains_key(n))?;
        for f in lib.functions.keys() {
            if restored.functions.contains_key(&f.to_ascii_lowercase()) {
                return Err(CmdError::new(format!("ERR Function {f} already exists")));
            }
        }
        link(&mut restored, name, lib);
    }
    let st = state(cx.server);
    {
        let mut libs = st.libs.write();
        if flush {
            *libs = restored;
        } else {
            if let Some(name) = restored.libs.keys().find(|n| libs.libs.contains_key(*n)) {
                if !replace {
                    return Err(CmdError::new(format!("ERR Library {name} already exists")));
                }
            }
            for lib in restored.libs.values() {
                for f in lib.functions.keys() {
                    let taken = libs
                        .functions
                        .get(&f.to_ascii_lowercase())
                        .is_some_and(|owner| !restored.libs.contains_key(owner));
                    if taken {
                        return Err(CmdError::new(format!("ERR Function {f} already exists")));
                    }
                }
            }
            for (name, lib) in restored.libs {
                link(&mut libs, name, lib);
            }
        }
        st.functions_epoch.fetch_add(1, Relaxed);
    }
    cx.dirty += 1;
    cx.ok();
    Ok(())
}

pub(super) fn function_list(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
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

pub(super) fn function_delete(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
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

pub(super) fn function_flush(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
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

pub(super) fn function_stats(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
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

pub(super) fn function_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    // Redis 7.2 dropped the description line (libraries never had one).
    let lines: Vec<&str> = FUNCTION_HELP
        .iter()
        .copied()
        .filter(|l| !(crate::speaks_7_4() && *l == "    * Library description"))
        .collect();
    cx.help(&lines);
    Ok(())
}

const FUNCTION_HELP: &[&str] = &[
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
];
