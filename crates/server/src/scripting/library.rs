//! Shebangs, library metadata, and loading a library: running its code
//! with the load-time API (`redis.register_function`).

use super::*;

// ---------------------------------------------------------------------------
// Shebangs and library metadata.

/// sdssplitargs: words separated by spaces, with "..." and '...' quoting
/// (and escapes inside double quotes). None if quotes are unbalanced.
/// Redis splits the line as a C string, which ends at a NUL byte: so does
/// this (a NUL ended a word without being skipped, and the loop then
/// pushed empty words forever).
pub(super) fn split_args(s: &[u8]) -> Option<Vec<Vec<u8>>> {
    let s = &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())];
    let mut buf = Vec::new();
    let mut words = Vec::new();
    resp::request::split_args(s, &mut buf, &mut words).ok()?;
    Some(
        words
            .iter()
            .map(|&(at, len)| buf[at..at + len].to_vec())
            .collect(),
    )
}

pub(super) fn shebang_len(body: &[u8]) -> usize {
    if body.starts_with(b"#!") {
        body.iter().position(|&c| c == b'\n').unwrap_or(0)
    } else {
        0
    }
}

/// evalExtractShebangFlags: the script's flags and the shebang's length.
pub(super) fn eval_shebang(body: &[u8]) -> Result<(u32, usize), String> {
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

pub(super) struct LibMeta {
    pub(super) name: String,
    pub(super) engine: Vec<u8>,
    /// Where the code after the metadata line starts (at its newline).
    pub(super) body: usize,
}

/// functionExtractLibMetaData: `#!<engine> name=<library>` on line one.
pub(super) fn library_metadata(code: &[u8]) -> Result<LibMeta, String> {
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

pub(super) fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

// ---------------------------------------------------------------------------
// Loading a library: run its code with the load-time API.

pub(super) struct Registered {
    pub(super) name: String,
    pub(super) desc: Option<Vec<u8>>,
    pub(super) fref: c_int,
    pub(super) flags: u32,
}

pub(super) struct LoadCtx {
    pub(super) start: Instant,
    pub(super) functions: Vec<Registered>,
}

thread_local! {
    pub(super) static LOADING: Cell<*mut LoadCtx> = const { Cell::new(std::ptr::null_mut()) };
}

/// Runs a library's code (after its metadata line) in `vm`, returning the
/// functions it registered, or the error FUNCTION LOAD reports.
pub(super) fn load_library(vm: &Vm, body: &[u8]) -> Result<Vec<Registered>, String> {
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
pub(super) unsafe fn set_globals_index(vm: &Vm, r: c_int) {
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
pub(super) unsafe fn error_message(l: State) -> Vec<u8> {
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
pub(super) fn resume_panic() {
    if let Some(p) = lua::PANIC.with(|c| c.borrow_mut().take()) {
        std::panic::resume_unwind(p);
    }
}

lua_fn!(pub(super) fn register_function => register_function_impl);
pub(super) unsafe fn register_function_impl(l: State) -> c_int {
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

pub(super) unsafe fn register_positional(l: State) -> Result<Registered, &'static str> {
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

pub(super) unsafe fn register_named(l: State) -> Result<Registered, &'static str> {
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
