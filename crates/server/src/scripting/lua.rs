//! The Lua side of scripting: raw bindings helpers, the sandboxed
//! interpreter Redis 7.0 gives scripts, and the conversions between RESP
//! replies and Lua values.
//!
//! Everything here works on a raw `lua_State` (Lua 5.1, vendored) through
//! mlua's C bindings: scripts need Redis's C-level semantics (errors raised
//! as tables with `lua_error`, a count hook that can abort a script, a
//! replaced `pcall`), which a safe wrapper would hide.
//!
//! Redis 7.0 patches Lua so tables can be made read-only. Stock Lua has no
//! such flag, so the sandbox emulates it: every table a script can reach
//! from its globals (the globals themselves, `string`, `redis`, `cjson`...)
//! is an empty *proxy* whose metatable reads through to the real table and
//! refuses writes with Redis's error text; `rawset`, `setmetatable`,
//! `getmetatable`, `next`, `pairs`, `ipairs` and `rawget` see through
//! proxies and refuse to modify them. Binary chunks are parsed as text (as
//! Redis's patched Lua does), so bytecode can never be loaded.
//!
//! Rust functions called from Lua follow one rule: a Lua error is raised
//! only from the outermost frame ([`trampoline`]) once every Rust value is
//! dropped, because `lua_error` is a `longjmp`.

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub use mlua_sys as ffi;

pub type State = *mut ffi::lua_State;
pub type CFn = ffi::lua_CFunction;

/// Registry slots shared by the helpers (weak tables keyed by proxy).
const RO_TABLES: &CStr = c"keel.readonly";
const TARGETS: &CStr = c"keel.targets";
const META_VIEWS: &CStr = c"keel.metaviews";

thread_local! {
    /// A panic caught at a Lua → Rust boundary, re-raised by the script
    /// runner once Lua has unwound.
    pub static PANIC: std::cell::RefCell<Option<Box<dyn std::any::Any + Send>>> =
        const { std::cell::RefCell::new(None) };
}

// ---------------------------------------------------------------------------
// Small helpers over the raw API.

#[inline]
pub unsafe fn push(l: State, b: &[u8]) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_pushlstring(l, b.as_ptr().cast(), b.len());
    }
}

#[inline]
pub unsafe fn push_cstr(l: State, s: &CStr) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_pushstring(l, s.as_ptr());
    }
}

/// The bytes of the string (or number, converted in place) at `idx`.
#[inline]
pub unsafe fn bytes<'a>(l: State, idx: c_int) -> Option<&'a [u8]> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, idx, &mut len);
        if p.is_null() {
            None
        } else {
            Some(std::slice::from_raw_parts(p.cast(), len))
        }
    }
}

/// `t[name] = f` without metamethods (`t` an absolute index).
pub unsafe fn set_fn(l: State, t: c_int, name: &CStr, f: CFn) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        push_cstr(l, name);
        ffi::lua_pushcfunction(l, f);
        ffi::lua_rawset(l, t);
    }
}

pub unsafe fn set_num(l: State, t: c_int, name: &CStr, n: f64) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        push_cstr(l, name);
        ffi::lua_pushnumber(l, n);
        ffi::lua_rawset(l, t);
    }
}

pub unsafe fn set_str(l: State, t: c_int, name: &CStr, s: &[u8]) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        push_cstr(l, name);
        push(l, s);
        ffi::lua_rawset(l, t);
    }
}

/// Moves the value on top of the stack to `t[name]`, without metamethods.
pub unsafe fn set_top(l: State, t: c_int, name: &CStr) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        push_cstr(l, name);
        ffi::lua_insert(l, -2);
        ffi::lua_rawset(l, t);
    }
}

/// Pushes `t[name]` without metamethods.
pub unsafe fn raw_field(l: State, t: c_int, name: &CStr) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let t = ffi::lua_absindex(l, t);
        push_cstr(l, name);
        ffi::lua_rawget(l, t);
        ffi::lua_type(l, -1)
    }
}

/// Pushes Redis's error table `{err = "CODE message"}`. `msg` is either
/// `-CODE message` (a reply's error line) or a bare message, which gets
/// the `ERR` code (luaPushErrorBuff).
pub unsafe fn push_error(l: State, msg: &[u8]) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let (code, rest): (&[u8], &[u8]) = match msg.strip_prefix(b"-") {
            Some(body) => match body.iter().position(|&c| c == b' ') {
                Some(i) => (&body[..i], &body[i + 1..]),
                None => (b"ERR", body),
            },
            None => (b"ERR", msg),
        };
        let rest = trim_crlf(rest);
        let mut s = Vec::with_capacity(code.len() + 1 + rest.len());
        s.extend_from_slice(code);
        s.push(b' ');
        s.extend_from_slice(rest);
        ffi::lua_createtable(l, 0, 2);
        push(l, b"err");
        push(l, &s);
        ffi::lua_rawset(l, -3);
    }
}

thread_local! {
    /// Error replies written from a script's result that errorstats must
    /// count (not those a command called by the script returned, counted
    /// when it ran: their tables carry `ignore_error_stats_update`), and
    /// whether the result held any error; taken by the dispatcher after
    /// the script's command.
    static REPLY_ERRORS: std::cell::RefCell<(Vec<Vec<u8>>, bool)> =
        const { std::cell::RefCell::new((Vec::new(), false)) };
}

/// Notes an error reply written from the error table at stack index `t`.
///
/// # Safety
/// `l` is a live Lua state of this thread and `t` a table on its stack.
pub unsafe fn note_reply_error(l: State, t: c_int, msg: &[u8]) {
    // SAFETY: the caller's contract.
    let counted = unsafe {
        let counted = raw_field(l, t, c"ignore_error_stats_update") == ffi::LUA_TBOOLEAN
            && ffi::lua_toboolean(l, -1) != 0;
        ffi::lua_pop(l, 1);
        counted
    };
    REPLY_ERRORS.with(|r| {
        let mut r = r.borrow_mut();
        r.1 = true;
        if !counted {
            r.0.push(msg.to_vec());
        }
    });
}

/// Notes an error reply with no table behind it (a script's runtime
/// error): counted.
pub fn note_reply_error_text(msg: &[u8]) {
    REPLY_ERRORS.with(|r| {
        let mut r = r.borrow_mut();
        r.1 = true;
        r.0.push(msg.to_vec());
    });
}

/// The error replies the last script result wrote (to count), and
/// whether it wrote any.
pub fn take_reply_errors() -> (Vec<Vec<u8>>, bool) {
    REPLY_ERRORS.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

/// [`push_error`] for errors Redis already counted (command replies and
/// checks made while running a command): adds `ignore_error_stats_update`.
pub unsafe fn push_error_counted(l: State, msg: &[u8]) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        push_error(l, msg);
        push(l, b"ignore_error_stats_update");
        ffi::lua_pushboolean(l, 1);
        ffi::lua_rawset(l, -3);
    }
}

fn trim_crlf(mut s: &[u8]) -> &[u8] {
    while let [b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

/// Pushes `msg` prefixed with the caller's position, as `luaL_error`
/// does (`user_script:1: msg`). Return -1 from the function after it.
pub unsafe fn push_where(l: State, msg: &[u8]) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::luaL_where(l, 1);
        push(l, msg);
        ffi::lua_concat(l, 2);
    }
}

/// Runs the body of a Lua-callable Rust function: catches panics (they
/// must not unwind through Lua's C frames; the runner re-raises them) and
/// raises the Lua error the body left on the stack when it returns -1.
#[inline(always)]
pub unsafe fn trampoline(l: State, f: unsafe fn(State) -> c_int) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let r = match catch_unwind(AssertUnwindSafe(|| f(l))) {
            Ok(n) => n,
            Err(p) => {
                PANIC.with(|c| *c.borrow_mut() = Some(p));
                push_error(l, b"internal error while running the script");
                -1
            }
        };
        if r < 0 {
            ffi::lua_error(l);
        }
        r
    }
}

/// Declares `unsafe extern "C-unwind" fn $name(l) -> c_int` running
/// `$body` through [`trampoline`].
macro_rules! lua_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident => $body:path) => {
        $(#[$m])*
        $vis unsafe extern "C-unwind" fn $name(l: $crate::scripting::lua::State) -> std::ffi::c_int {
            // SAFETY: Lua calls C functions with its live state.
            unsafe {
            $crate::scripting::lua::trampoline(l, $body)
        }}
    };
}
pub(crate) use lua_fn;

// ---------------------------------------------------------------------------
// Number formatting as C's printf.

/// `(long long)d` as C on x86-64: truncation, and the "integer indefinite"
/// value for NaN and out-of-range numbers.
#[inline]
pub fn c_cast_i64(d: f64) -> i64 {
    if d.is_nan() || d >= 9_223_372_036_854_775_808.0 || d < -9_223_372_036_854_775_808.0 {
        i64::MIN
    } else {
        d as i64
    }
}

// ---------------------------------------------------------------------------
// RESP reply → Lua value.

fn line(buf: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let rest = buf.get(pos..)?;
    let cr = rest.windows(2).position(|w| w == b"\r\n")?;
    Some((&rest[..cr], pos + cr + 2))
}

fn parse_len(s: &[u8]) -> i64 {
    resp::parse_i64(s).unwrap_or(-1)
}

/// Pushes the Lua value of the reply at `buf[pos..]` (Redis's conversion
/// rules) and returns where the next reply starts. The reply comes from
/// our own encoder; anything malformed becomes nil.
pub unsafe fn push_reply(l: State, buf: &[u8], pos: usize) -> usize {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_checkstack(l, 4) == 0 {
            // The reply nests deeper than the Lua stack allows.
            return buf.len();
        }
        let Some(&tag) = buf.get(pos) else {
            ffi::lua_pushnil(l);
            return pos;
        };
        let Some((body, next)) = line(buf, pos + 1) else {
            ffi::lua_pushnil(l);
            return buf.len();
        };
        match tag {
            b':' => {
                ffi::lua_pushnumber(l, parse_len(body) as f64);
                next
            }
            b'$' | b'=' => {
                let n = parse_len(body);
                if n < 0 {
                    ffi::lua_pushboolean(l, 0);
                    return next;
                }
                let end = (next + n as usize).min(buf.len());
                let data = &buf[next..end];
                if tag == b'$' {
                    push(l, data);
                } else {
                    // Verbatim: {verbatim_string = {string = ..., format = ...}}
                    let (fmt, s) = if data.len() >= 4 {
                        (&data[..3], &data[4..])
                    } else {
                        (&b"txt"[..], data)
                    };
                    ffi::lua_createtable(l, 0, 1);
                    push(l, b"verbatim_string");
                    ffi::lua_createtable(l, 0, 2);
                    push(l, b"string");
                    push(l, s);
                    ffi::lua_rawset(l, -3);
                    push(l, b"format");
                    push(l, fmt);
                    ffi::lua_rawset(l, -3);
                    ffi::lua_rawset(l, -3);
                }
                end + 2
            }
            b'!' => {
                let n = parse_len(body).max(0) as usize;
                let end = (next + n).min(buf.len());
                let mut msg = Vec::with_capacity(n + 1);
                msg.push(b'-');
                msg.extend_from_slice(&buf[next..end]);
                push_error_counted(l, &msg);
                end + 2
            }
            b'+' => {
                ffi::lua_createtable(l, 0, 1);
                push(l, b"ok");
                push(l, body);
                ffi::lua_rawset(l, -3);
                next
            }
            b'-' => {
                let mut msg = Vec::with_capacity(body.len() + 1);
                msg.push(b'-');
                msg.extend_from_slice(body);
                push_error_counted(l, &msg);
                next
            }
            b'*' | b'~' | b'>' => {
                let n = parse_len(body);
                if n < 0 {
                    ffi::lua_pushboolean(l, 0);
                    return next;
                }
                let mut p = next;
                if tag == b'~' {
                    ffi::lua_createtable(l, 0, 1);
                    push(l, b"set");
                    ffi::lua_createtable(l, 0, n.min(1 << 16) as c_int);
                    for _ in 0..n {
                        p = push_reply(l, buf, p);
                        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
                            ffi::lua_pop(l, 1);
                        } else {
                            ffi::lua_pushboolean(l, 1);
                            ffi::lua_rawset(l, -3);
                        }
                    }
                    ffi::lua_rawset(l, -3);
                } else {
                    ffi::lua_createtable(l, n.min(1 << 16) as c_int, 0);
                    for j in 0..n {
                        p = push_reply(l, buf, p);
                        ffi::lua_rawseti(l, -2, j + 1);
                    }
                }
                p
            }
            b'%' => {
                let n = parse_len(body).max(0);
                ffi::lua_createtable(l, 0, 1);
                push(l, b"map");
                ffi::lua_createtable(l, 0, n.min(1 << 16) as c_int);
                let mut p = next;
                for _ in 0..n {
                    p = push_reply(l, buf, p);
                    p = push_reply(l, buf, p);
                    if ffi::lua_type(l, -2) == ffi::LUA_TNIL {
                        ffi::lua_pop(l, 2);
                    } else {
                        ffi::lua_rawset(l, -3);
                    }
                }
                ffi::lua_rawset(l, -3);
                p
            }
            b'|' => {
                // Attributes are not exposed to scripts: skip, then the reply.
                let n = parse_len(body).max(0);
                let mut p = next;
                for _ in 0..2 * n {
                    p = push_reply(l, buf, p);
                    ffi::lua_pop(l, 1);
                }
                push_reply(l, buf, p)
            }
            b'_' => {
                ffi::lua_pushnil(l);
                next
            }
            b'#' => {
                ffi::lua_pushboolean(l, (body == b"t") as c_int);
                next
            }
            b',' => {
                let d = parse_double(body);
                ffi::lua_createtable(l, 0, 1);
                push(l, b"double");
                ffi::lua_pushnumber(l, d);
                ffi::lua_rawset(l, -3);
                next
            }
            b'(' => {
                ffi::lua_createtable(l, 0, 1);
                push(l, b"big_number");
                push(l, body);
                ffi::lua_rawset(l, -3);
                next
            }
            _ => {
                ffi::lua_pushnil(l);
                buf.len()
            }
        }
    }
}

fn parse_double(s: &[u8]) -> f64 {
    match s {
        b"inf" | b"+inf" => f64::INFINITY,
        b"-inf" => f64::NEG_INFINITY,
        b"nan" | b"-nan" => f64::NAN,
        _ => std::str::from_utf8(s)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0),
    }
}

// ---------------------------------------------------------------------------
// Lua value → RESP reply.

/// Deepest nesting of tables converted to a reply.
const MAX_REPLY_DEPTH: usize = 1000;

/// Writes the value on top of the stack as a reply for a client speaking
/// `proto`, as Redis's luaReplyToRedisReply (`script_resp`: the protocol
/// the script chose with redis.setresp, which decides how booleans go
/// out), and pops it. Tables are read without metamethods.
pub unsafe fn write_reply(l: State, out: &mut Vec<u8>, proto: u8, script_resp: u8) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        write_value(l, out, proto, script_resp, 0);
    }
}

unsafe fn write_value(l: State, out: &mut Vec<u8>, proto: u8, script_resp: u8, depth: usize) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        use resp::encode;
        if depth > MAX_REPLY_DEPTH || ffi::lua_checkstack(l, 4) == 0 {
            encode::error(out, b"ERR reached lua stack limit");
            ffi::lua_pop(l, 1);
            return;
        }
        match ffi::lua_type(l, -1) {
            ffi::LUA_TSTRING => {
                encode::bulk(out, bytes(l, -1).unwrap_or(b""));
            }
            ffi::LUA_TBOOLEAN => {
                let b = ffi::lua_toboolean(l, -1) != 0;
                if script_resp == 2 {
                    if b {
                        encode::integer(out, 1);
                    } else {
                        encode::null(out, proto);
                    }
                } else {
                    encode::boolean(out, b, proto);
                }
            }
            ffi::LUA_TNUMBER => encode::integer(out, c_cast_i64(ffi::lua_tonumber(l, -1))),
            ffi::LUA_TTABLE => {
                write_table(l, out, proto, script_resp, depth);
                return;
            }
            _ => encode::null(out, proto),
        }
        ffi::lua_pop(l, 1);
    }
}

unsafe fn write_table(l: State, out: &mut Vec<u8>, proto: u8, script_resp: u8, depth: usize) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        use resp::encode;
        let t = ffi::lua_gettop(l);
        if raw_field(l, t, c"err") == ffi::LUA_TSTRING {
            let msg = bytes(l, -1).unwrap_or(b"");
            encode::error(out, msg);
            note_reply_error(l, t, msg);
            ffi::lua_pop(l, 2);
            return;
        }
        ffi::lua_pop(l, 1);
        if raw_field(l, t, c"ok") == ffi::LUA_TSTRING {
            let s = bytes(l, -1).unwrap_or(b"");
            let s: Vec<u8> = s
                .iter()
                .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
                .collect();
            encode::simple(out, &s);
            ffi::lua_pop(l, 2);
            return;
        }
        ffi::lua_pop(l, 1);
        if raw_field(l, t, c"double") == ffi::LUA_TNUMBER {
            write_double(out, ffi::lua_tonumber(l, -1), proto);
            ffi::lua_pop(l, 2);
            return;
        }
        ffi::lua_pop(l, 1);
        if raw_field(l, t, c"big_number") == ffi::LUA_TSTRING {
            let s: Vec<u8> = bytes(l, -1)
                .unwrap_or(b"")
                .iter()
                .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
                .collect();
            if proto >= 3 {
                out.push(b'(');
                out.extend_from_slice(&s);
                out.extend_from_slice(b"\r\n");
            } else {
                encode::bulk(out, &s);
            }
            ffi::lua_pop(l, 2);
            return;
        }
        ffi::lua_pop(l, 1);
        if raw_field(l, t, c"verbatim_string") == ffi::LUA_TTABLE {
            let v = ffi::lua_gettop(l);
            if raw_field(l, v, c"format") == ffi::LUA_TSTRING {
                if raw_field(l, v, c"string") == ffi::LUA_TSTRING {
                    let fmt = bytes(l, -2).unwrap_or(b"txt");
                    let mut f = [b' '; 3];
                    for (d, s) in f.iter_mut().zip(fmt) {
                        *d = *s;
                    }
                    encode::verbatim(out, &f, bytes(l, -1).unwrap_or(b""), proto);
                    ffi::lua_pop(l, 4);
                    return;
                }
                ffi::lua_pop(l, 1);
            }
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
        if raw_field(l, t, c"map") == ffi::LUA_TTABLE {
            let m = ffi::lua_gettop(l);
            let n = count_pairs(l, m);
            encode::map(out, n, proto);
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, m) != 0 {
                ffi::lua_pushvalue(l, -2);
                write_value(l, out, proto, script_resp, depth + 1);
                write_value(l, out, proto, script_resp, depth + 1);
            }
            ffi::lua_pop(l, 2);
            return;
        }
        ffi::lua_pop(l, 1);
        if raw_field(l, t, c"set") == ffi::LUA_TTABLE {
            let m = ffi::lua_gettop(l);
            let n = count_pairs(l, m);
            encode::set(out, n, proto);
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, m) != 0 {
                ffi::lua_pop(l, 1);
                ffi::lua_pushvalue(l, -1);
                write_value(l, out, proto, script_resp, depth + 1);
            }
            ffi::lua_pop(l, 2);
            return;
        }
        ffi::lua_pop(l, 1);
        // An array: elements 1, 2, ... up to the first nil.
        let mut n = 0;
        loop {
            ffi::lua_rawgeti(l, t, n as ffi::lua_Integer + 1);
            let nil = ffi::lua_type(l, -1) == ffi::LUA_TNIL;
            ffi::lua_pop(l, 1);
            if nil {
                break;
            }
            n += 1;
        }
        encode::array(out, n);
        for j in 1..=n {
            ffi::lua_rawgeti(l, t, j as ffi::lua_Integer);
            write_value(l, out, proto, script_resp, depth + 1);
        }
        ffi::lua_pop(l, 1);
    }
}

unsafe fn count_pairs(l: State, t: c_int) -> usize {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let mut n = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, t) != 0 {
            ffi::lua_pop(l, 1);
            n += 1;
        }
        n
    }
}

pub use crate::num::double::{fmt_g, reply_double as write_double};

// ---------------------------------------------------------------------------
// The sandbox.

/// Which interpreter to build: EVAL's, or the functions engine's.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Eval = 0,
    Function = 1,
}

/// The functions a state's `redis` table needs from the script runner.
pub struct Api {
    pub call: CFn,
    pub pcall: CFn,
    pub setresp: CFn,
    pub set_repl: CFn,
    pub acl_check_cmd: CFn,
    pub register_function: CFn,
    pub hook: ffi::lua_Hook,
}

/// A built interpreter and the registry references the runner uses.
pub struct Vm {
    pub l: State,
    /// The error handler pcall runs on failure (adds source and line).
    pub handler: c_int,
    /// The table that really holds the globals (the scripts' globals are a
    /// read-only proxy of it): where KEYS and ARGV are stored.
    pub storage: c_int,
    /// The globals proxy's metatable: FUNCTION LOAD points its `__index`
    /// at the load-time API while a library's code runs.
    pub globals_meta: c_int,
    /// The globals library code sees at load time (functions only).
    pub load_api: c_int,
}

impl Drop for Vm {
    fn drop(&mut self) {
        // SAFETY: `l` was created by `Vm::new` and is closed only here.
        unsafe { ffi::lua_close(self.l) }
    }
}

/// Instructions between two runs of the count hook (Redis's value).
pub const HOOK_EVERY: c_int = 100_000;

const ERR_HANDLER: &[u8] = b"local dbg = debug
debug = nil
local error_handler = function (err)
  local i = dbg.getinfo(2,'nSl')
  if i and i.what == 'C' then
    i = dbg.getinfo(3,'nSl')
  end
  if type(err) ~= 'table' then
    err = {err='ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
return error_handler
";

unsafe fn open_lib(l: State, f: CFn, name: &CStr) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_pushcfunction(l, f);
        push_cstr(l, name);
        ffi::lua_call(l, 1, 0);
    }
}

unsafe fn weak_table(l: State, name: &CStr) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, 0, 0);
        ffi::lua_createtable(l, 0, 1);
        push(l, b"__mode");
        push(l, b"k");
        ffi::lua_rawset(l, -3);
        ffi::lua_setmetatable(l, -2);
        ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, name.as_ptr());
    }
}

unsafe fn registry_table(l: State, name: &CStr) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, name.as_ptr());
    }
}

/// Replaces the table at `idx` (absolute) with a read-only proxy of it,
/// leaving the proxy on top of the stack.
unsafe fn push_proxy(l: State, idx: c_int) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, 0, 0);
        let proxy = ffi::lua_gettop(l);
        ffi::lua_createtable(l, 0, 3);
        push(l, b"__index");
        ffi::lua_pushvalue(l, idx);
        ffi::lua_rawset(l, -3);
        set_fn(l, proxy + 1, c"__newindex", readonly_newindex);
        push(l, b"__metatable");
        ffi::lua_pushboolean(l, 0);
        ffi::lua_rawset(l, -3);
        ffi::lua_setmetatable(l, proxy);
        registry_table(l, RO_TABLES);
        ffi::lua_pushvalue(l, proxy);
        ffi::lua_pushboolean(l, 1);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
        registry_table(l, TARGETS);
        ffi::lua_pushvalue(l, proxy);
        ffi::lua_pushvalue(l, idx);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
    }
}

/// `t.name = proxy(t.name)` for a table field (t absolute).
unsafe fn proxy_field(l: State, t: c_int, name: &CStr) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if raw_field(l, t, name) == ffi::LUA_TTABLE {
            let real = ffi::lua_gettop(l);
            push_proxy(l, real);
            set_top(l, t, name);
        }
        ffi::lua_pop(l, 1);
    }
}

/// Gives the table on top of the stack Redis's "error metatable": reading
/// a missing field raises `Script attempted to access nonexistent global
/// variable`.
unsafe fn set_error_metatable(l: State) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, 0, 1);
        set_fn(l, ffi::lua_gettop(l), c"__index", nonexistent_global);
        ffi::lua_setmetatable(l, -2);
    }
}

impl Vm {
    /// Builds the sandboxed interpreter Redis 7.0 gives EVAL scripts or
    /// functions.
    ///
    /// # Safety
    /// `api` functions must be valid Lua C functions.
    pub unsafe fn new(kind: Kind, api: &Api) -> Option<Vm> {
        // SAFETY: the new state is checked for null before use and used only
        // by this thread; `api` holds valid Lua C functions (the caller's
        // contract).
        unsafe {
            // The allocator's user data says which counter the state's
            // memory goes to.
            let l = ffi::lua_newstate(lua_alloc, kind as usize as *mut std::ffi::c_void);
            if l.is_null() {
                return None;
            }
            ffi::lua_atpanic(l, lua_panic);
            let vm = Vm {
                l,
                handler: ffi::LUA_NOREF,
                storage: ffi::LUA_NOREF,
                globals_meta: ffi::LUA_NOREF,
                load_api: ffi::LUA_NOREF,
            };
            vm.build(kind, api)
        }
    }

    unsafe fn build(mut self, kind: Kind, api: &Api) -> Option<Vm> {
        // SAFETY: `self.l` is the live state `new` just made; `api` holds valid
        // Lua C functions (the caller's contract).
        unsafe {
            let l = self.l;
            open_lib(l, ffi::luaopen_base, c"");
            open_lib(l, ffi::luaopen_table, c"table");
            open_lib(l, ffi::luaopen_string, c"string");
            open_lib(l, ffi::luaopen_math, c"math");
            open_lib(l, ffi::luaopen_debug, c"debug");
            ffi::lua_settop(l, 0);
            weak_table(l, RO_TABLES);
            weak_table(l, TARGETS);
            weak_table(l, META_VIEWS);

            ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
            let g = ffi::lua_gettop(l);
            super::cjson::open(l);
            set_top(l, g, c"cjson");
            super::structlib::open(l);
            set_top(l, g, c"struct");
            super::cmsgpack::open(l);
            set_top(l, g, c"cmsgpack");
            super::bit::open(l);
            set_top(l, g, c"bit");
            for name in [
                c"dofile",
                c"loadfile",
                c"print",
                c"getfenv",
                c"setfenv",
                c"newproxy",
            ] {
                push_cstr(l, name);
                ffi::lua_pushnil(l);
                ffi::lua_rawset(l, g);
            }

            // Base functions that must see through proxies or refuse them.
            set_fn(l, g, c"pcall", redis_pcall);
            set_fn(l, g, c"loadstring", sandbox_loadstring);
            set_fn(l, g, c"load", sandbox_load);
            set_fn(l, g, c"rawset", sandbox_rawset);
            set_fn(l, g, c"rawget", sandbox_rawget);
            set_fn(l, g, c"setmetatable", sandbox_setmetatable);
            set_fn(l, g, c"getmetatable", sandbox_getmetatable);
            set_fn(l, g, c"next", sandbox_next);
            push(l, b"pairs");
            push(l, b"next");
            ffi::lua_rawget(l, g);
            ffi::lua_pushcclosure(l, sandbox_pairs, 1);
            ffi::lua_rawset(l, g);
            push(l, b"ipairs");
            ffi::lua_pushcfunction(l, sandbox_ipairs_aux);
            ffi::lua_pushcclosure(l, sandbox_ipairs, 1);
            ffi::lua_rawset(l, g);

            // math.random / math.randomseed: Redis's deterministic generator.
            raw_field(l, g, c"math");
            let math = ffi::lua_gettop(l);
            set_fn(l, math, c"random", math_random);
            set_fn(l, math, c"randomseed", math_randomseed);
            ffi::lua_pop(l, 1);

            // The redis table.
            ffi::lua_createtable(l, 0, 32);
            let r = ffi::lua_gettop(l);
            set_fn(l, r, c"call", api.call);
            set_fn(l, r, c"pcall", api.pcall);
            register_log(l, r);
            register_version(l, r);
            set_fn(l, r, c"setresp", api.setresp);
            set_fn(l, r, c"sha1hex", redis_sha1hex);
            set_fn(l, r, c"error_reply", redis_error_reply);
            set_fn(l, r, c"status_reply", redis_status_reply);
            set_fn(l, r, c"set_repl", api.set_repl);
            set_num(l, r, c"REPL_NONE", 0.0);
            set_num(l, r, c"REPL_AOF", 1.0);
            set_num(l, r, c"REPL_SLAVE", 2.0);
            set_num(l, r, c"REPL_REPLICA", 2.0);
            set_num(l, r, c"REPL_ALL", 3.0);
            set_fn(l, r, c"acl_check_cmd", api.acl_check_cmd);
            if kind == Kind::Eval {
                set_fn(l, r, c"breakpoint", redis_breakpoint);
                set_fn(l, r, c"debug", redis_debug);
                set_fn(l, r, c"replicate_commands", redis_replicate_commands);
            }
            set_top(l, g, c"redis");

            // The error handler (needs `debug`, which it then removes).
            if ffi::luaL_loadbuffer(
                l,
                ERR_HANDLER.as_ptr().cast(),
                ERR_HANDLER.len(),
                c"@err_handler_def".as_ptr(),
            ) != 0
                || ffi::lua_pcall(l, 0, 1, 0) != 0
            {
                return None;
            }
            if kind == Kind::Eval {
                ffi::lua_pushvalue(l, -1);
                set_top(l, g, c"__redis__err__handler");
            }
            self.handler = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);

            // The load-time API of the functions engine: only `redis` with
            // register_function, log and the version.
            if kind == Kind::Function {
                ffi::lua_createtable(l, 0, 1);
                let api_t = ffi::lua_gettop(l);
                ffi::lua_createtable(l, 0, 8);
                let lr = ffi::lua_gettop(l);
                set_fn(l, lr, c"register_function", api.register_function);
                register_log(l, lr);
                register_version(l, lr);
                set_error_metatable(l);
                push_proxy(l, lr);
                set_top(l, api_t, c"redis");
                ffi::lua_pop(l, 1);
                set_error_metatable(l);
                self.load_api = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            }

            // Strings' metatable reads through the string proxy and shows a
            // read-only view of itself.
            push(l, b"");
            ffi::lua_getmetatable(l, -1);
            let smt = ffi::lua_gettop(l);
            ffi::lua_remove(l, smt - 1);
            let smt = smt - 1;

            // Library tables become read-only proxies.
            for name in [
                c"string",
                c"math",
                c"table",
                c"coroutine",
                c"cjson",
                c"struct",
                c"cmsgpack",
                c"bit",
                c"redis",
            ] {
                proxy_field(l, g, name);
            }
            push(l, b"__index");
            raw_field(l, g, c"string");
            ffi::lua_rawset(l, smt);
            push(l, b"__metatable");
            push_proxy(l, smt);
            ffi::lua_rawset(l, smt);
            ffi::lua_pop(l, 1);

            // The globals: `g` keeps every value, scripts see a proxy of it.
            set_error_metatable(l);
            push_proxy(l, g);
            let p = ffi::lua_gettop(l);
            ffi::lua_getmetatable(l, p);
            ffi::lua_pushvalue(l, -1);
            self.globals_meta = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            ffi::lua_pop(l, 1);
            push(l, b"_G");
            ffi::lua_pushvalue(l, p);
            ffi::lua_rawset(l, g);
            ffi::lua_pushvalue(l, g);
            self.storage = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            ffi::lua_pushvalue(l, p);
            ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
            ffi::lua_settop(l, 0);

            ffi::lua_sethook(l, Some(api.hook), ffi::LUA_MASKCOUNT, HOOK_EVERY);
            Some(self)
        }
    }

    /// Pushes the error handler, then the value of registry ref `r`.
    #[inline]
    pub unsafe fn push_ref(&self, r: c_int) {
        // SAFETY: `self.l` is this thread's live state; the caller leaves room
        // on its stack (this function's contract).
        unsafe {
            ffi::lua_rawgeti(self.l, ffi::LUA_REGISTRYINDEX, r as ffi::lua_Integer);
        }
    }

    /// Compiles `code` named `name`, leaving the function on the stack, or
    /// returns Lua's message. A chunk starting like bytecode is compiled
    /// as text (so it fails as in Redis, whose Lua cannot load bytecode).
    pub unsafe fn compile(&self, code: &[u8], name: &CStr) -> Result<(), Vec<u8>> {
        // SAFETY: `self.l` is this thread's live state (the caller's
        // contract).
        unsafe { load_text(self.l, code, name.as_ptr()) }
    }
}

/// Bytes held by the interpreters of each kind (eval, function), from all
/// threads: INFO's `used_memory_vm_eval` / `used_memory_vm_functions`.
static LUA_BYTES: [std::sync::atomic::AtomicIsize; 2] = [
    std::sync::atomic::AtomicIsize::new(0),
    std::sync::atomic::AtomicIsize::new(0),
];

thread_local! {
    // Per-thread deltas folded into LUA_BYTES every 16 KB, so a script's
    // many small allocations touch no shared line.
    static LUA_DELTA: [std::cell::Cell<isize>; 2] =
        const { [std::cell::Cell::new(0), std::cell::Cell::new(0)] };
}

fn count_lua(kind: usize, delta: isize) {
    let kind = kind & 1;
    LUA_DELTA.with(|d| {
        let v = d[kind].get() + delta;
        if v.abs() >= 16 * 1024 {
            LUA_BYTES[kind].fetch_add(v, std::sync::atomic::Ordering::Relaxed);
            d[kind].set(0);
        } else {
            d[kind].set(v);
        }
    });
}

/// Bytes the interpreters of `kind` hold, all threads (within 16 KB per
/// thread).
pub fn allocated(kind: Kind) -> usize {
    LUA_BYTES[kind as usize]
        .load(std::sync::atomic::Ordering::Relaxed)
        .max(0) as usize
}

/// Lua's allocator: the process allocator (jemalloc) rather than libc's,
/// with the sizes Lua passes back (sized deallocation). `ud` is the
/// state's [`Kind`], for the memory counters.
unsafe extern "C" fn lua_alloc(
    ud: *mut std::ffi::c_void,
    ptr: *mut std::ffi::c_void,
    osize: usize,
    nsize: usize,
) -> *mut std::ffi::c_void {
    let old = if ptr.is_null() { 0 } else { osize as isize };
    count_lua(ud as usize, nsize as isize - old);
    // SAFETY: Lua passes back pointers this allocator returned, with the
    // sizes it allocated them at (lua_Alloc's contract).
    unsafe {
        use std::alloc::{alloc, dealloc, realloc, Layout};
        const ALIGN: usize = 16;
        if nsize == 0 {
            if !ptr.is_null() {
                dealloc(ptr.cast(), Layout::from_size_align_unchecked(osize, ALIGN));
            }
            return std::ptr::null_mut();
        }
        if ptr.is_null() {
            alloc(Layout::from_size_align_unchecked(nsize, ALIGN)).cast()
        } else {
            realloc(
                ptr.cast(),
                Layout::from_size_align_unchecked(osize, ALIGN),
                nsize,
            )
            .cast()
        }
    }
}

/// An error outside any protected call (never expected: scripts run in
/// lua_pcall). Lua aborts the process after this returns.
unsafe extern "C-unwind" fn lua_panic(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let msg = bytes(l, -1).unwrap_or(b"");
        tracing::error!(
            "unprotected error in the Lua interpreter: {}",
            String::from_utf8_lossy(msg)
        );
        0
    }
}

/// Loads `code` as source text, even if it starts like a binary chunk.
unsafe fn load_text(l: State, code: &[u8], name: *const c_char) -> Result<(), Vec<u8>> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let rc = if code.first() == Some(&0x1b) {
            let mut padded = Vec::with_capacity(code.len() + 1);
            padded.push(b' ');
            padded.extend_from_slice(code);
            ffi::luaL_loadbuffer(l, padded.as_ptr().cast(), padded.len(), name)
        } else {
            ffi::luaL_loadbuffer(l, code.as_ptr().cast(), code.len(), name)
        };
        if rc != 0 {
            let msg = bytes(l, -1).unwrap_or(b"").to_vec();
            ffi::lua_pop(l, 1);
            return Err(msg);
        }
        Ok(())
    }
}

unsafe fn register_log(l: State, t: c_int) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        set_fn(l, t, c"log", redis_log);
        set_num(l, t, c"LOG_DEBUG", 0.0);
        set_num(l, t, c"LOG_VERBOSE", 1.0);
        set_num(l, t, c"LOG_NOTICE", 2.0);
        set_num(l, t, c"LOG_WARNING", 3.0);
    }
}

unsafe fn register_version(l: State, t: c_int) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        set_num(
            l,
            t,
            c"REDIS_VERSION_NUM",
            crate::redis_version_num() as f64,
        );
        set_str(l, t, c"REDIS_VERSION", crate::redis_version().as_bytes());
    }
}

// ---------------------------------------------------------------------------
// Sandbox functions.

/// Is the table at `idx` a read-only proxy?
unsafe fn is_readonly(l: State, idx: c_int) -> bool {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE || ffi::lua_getmetatable(l, idx) == 0 {
            return false;
        }
        ffi::lua_pop(l, 1);
        let idx = ffi::lua_absindex(l, idx);
        registry_table(l, RO_TABLES);
        ffi::lua_pushvalue(l, idx);
        ffi::lua_rawget(l, -2);
        let ro = ffi::lua_toboolean(l, -1) != 0;
        ffi::lua_pop(l, 2);
        ro
    }
}

/// Replaces the table at `idx` by the real table if it is a proxy.
unsafe fn resolve_proxy(l: State, idx: c_int) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE || ffi::lua_getmetatable(l, idx) == 0 {
            return;
        }
        ffi::lua_pop(l, 1);
        let idx = ffi::lua_absindex(l, idx);
        registry_table(l, TARGETS);
        ffi::lua_pushvalue(l, idx);
        ffi::lua_rawget(l, -2);
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_replace(l, idx);
            ffi::lua_pop(l, 1);
        } else {
            ffi::lua_pop(l, 2);
        }
    }
}

lua_fn!(fn readonly_newindex => readonly_newindex_impl);
unsafe fn readonly_newindex_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        push_where(l, b"Attempt to modify a readonly table");
        -1
    }
}

lua_fn!(fn nonexistent_global => nonexistent_global_impl);
unsafe fn nonexistent_global_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_gettop(l) != 2 {
            push_where(l, b"Wrong number of arguments to luaProtectedTableError");
            return -1;
        }
        let name = if ffi::lua_isstring(l, -1) != 0 {
            bytes(l, -1).map(<[u8]>::to_vec).unwrap_or_default()
        } else {
            push_where(
                l,
                b"Second argument to luaProtectedTableError must be a string or number",
            );
            return -1;
        };
        let mut msg = b"Script attempted to access nonexistent global variable '".to_vec();
        msg.extend_from_slice(&name);
        msg.push(b'\'');
        push_where(l, &msg);
        -1
    }
}

lua_fn!(fn sandbox_rawset => sandbox_rawset_impl);
unsafe fn sandbox_rawset_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::luaL_checkany(l, 2);
        ffi::luaL_checkany(l, 3);
        if is_readonly(l, 1) {
            push(l, b"Attempt to modify a readonly table");
            return -1;
        }
        ffi::lua_settop(l, 3);
        ffi::lua_rawset(l, 1);
        1
    }
}

lua_fn!(fn sandbox_rawget => sandbox_rawget_impl);
unsafe fn sandbox_rawget_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::luaL_checkany(l, 2);
        ffi::lua_settop(l, 2);
        resolve_proxy(l, 1);
        ffi::lua_rawget(l, 1);
        1
    }
}

lua_fn!(fn sandbox_setmetatable => sandbox_setmetatable_impl);
unsafe fn sandbox_setmetatable_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let t = ffi::lua_type(l, 2);
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        if t != ffi::LUA_TNIL && t != ffi::LUA_TTABLE {
            ffi::luaL_argerror(l, 2, c"nil or table expected".as_ptr());
        }
        if is_readonly(l, 1) {
            push(l, b"Attempt to modify a readonly table");
            return -1;
        }
        if ffi::luaL_getmetafield(l, 1, c"__metatable".as_ptr()) != 0 {
            push_where(l, b"cannot change a protected metatable");
            return -1;
        }
        ffi::lua_settop(l, 2);
        ffi::lua_setmetatable(l, 1);
        1
    }
}

lua_fn!(fn sandbox_getmetatable => sandbox_getmetatable_impl);
unsafe fn sandbox_getmetatable_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::luaL_checkany(l, 1);
        ffi::lua_settop(l, 1);
        if is_readonly(l, 1) {
            // A proxy shows a read-only view of its table's metatable.
            registry_table(l, META_VIEWS); // 2
            ffi::lua_pushvalue(l, 1);
            ffi::lua_rawget(l, 2);
            if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
                return 1;
            }
            ffi::lua_pop(l, 1);
            ffi::lua_pushvalue(l, 1); // 3
            resolve_proxy(l, 3);
            if ffi::lua_getmetatable(l, 3) == 0 {
                ffi::lua_pushnil(l);
                return 1;
            }
            push_proxy(l, 4); // 5
            ffi::lua_pushvalue(l, 1);
            ffi::lua_pushvalue(l, 5);
            ffi::lua_rawset(l, 2);
            return 1;
        }
        if ffi::lua_getmetatable(l, 1) == 0 {
            ffi::lua_pushnil(l);
            return 1;
        }
        ffi::luaL_getmetafield(l, 1, c"__metatable".as_ptr());
        1
    }
}

lua_fn!(fn sandbox_next => sandbox_next_impl);
unsafe fn sandbox_next_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::lua_settop(l, 2);
        resolve_proxy(l, 1);
        if ffi::lua_next(l, 1) != 0 {
            2
        } else {
            ffi::lua_pushnil(l);
            1
        }
    }
}

lua_fn!(fn sandbox_pairs => sandbox_pairs_impl);
unsafe fn sandbox_pairs_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushnil(l);
        3
    }
}

lua_fn!(fn sandbox_ipairs => sandbox_ipairs_impl);
unsafe fn sandbox_ipairs_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushinteger(l, 0);
        3
    }
}

lua_fn!(fn sandbox_ipairs_aux => sandbox_ipairs_aux_impl);
unsafe fn sandbox_ipairs_aux_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let i = ffi::luaL_checkinteger(l, 2) + 1;
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::lua_settop(l, 2);
        resolve_proxy(l, 1);
        ffi::lua_pushinteger(l, i);
        ffi::lua_rawgeti(l, 1, i);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            0
        } else {
            2
        }
    }
}

lua_fn!(fn sandbox_loadstring => sandbox_loadstring_impl);
unsafe fn sandbox_loadstring_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let mut len = 0usize;
        let s = ffi::luaL_checklstring(l, 1, &mut len);
        let name = ffi::luaL_optlstring(l, 2, s, std::ptr::null_mut());
        let code = std::slice::from_raw_parts(s.cast::<u8>(), len);
        load_result(l, code, name)
    }
}

unsafe fn load_result(l: State, code: &[u8], name: *const c_char) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        match load_text(l, code, name) {
            Ok(()) => 1,
            Err(msg) => {
                ffi::lua_pushnil(l);
                push(l, &msg);
                2
            }
        }
    }
}

lua_fn!(fn sandbox_load => sandbox_load_impl);
unsafe fn sandbox_load_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let name = ffi::luaL_optlstring(l, 2, c"=(load)".as_ptr(), std::ptr::null_mut());
        let cname = CStr::from_ptr(name).to_owned();
        ffi::luaL_checktype(l, 1, ffi::LUA_TFUNCTION);
        ffi::lua_settop(l, 2);
        // Collect the pieces the reader function returns, then load them as
        // text (a reader cannot smuggle bytecode in).
        let mut n = 0;
        loop {
            if ffi::lua_checkstack(l, 2) == 0 {
                push_where(l, b"reader function returned too many pieces");
                return -1;
            }
            ffi::lua_pushvalue(l, 1);
            ffi::lua_call(l, 0, 1);
            match ffi::lua_type(l, -1) {
                ffi::LUA_TNIL => {
                    ffi::lua_pop(l, 1);
                    break;
                }
                ffi::LUA_TSTRING => {
                    if ffi::lua_objlen(l, -1) == 0 {
                        ffi::lua_pop(l, 1);
                        break;
                    }
                    n += 1;
                }
                _ => {
                    push_where(l, b"reader function must return a string");
                    return -1;
                }
            }
        }
        ffi::lua_concat(l, n);
        let code = bytes(l, -1).unwrap_or(b"").to_vec();
        load_result(l, &code, cname.as_ptr())
    }
}

// Redis's `pcall`: an error raised as a table comes back as its `err`
// string, as in Redis 6, so old scripts keep working.
lua_fn!(pub fn redis_pcall => redis_pcall_impl);
unsafe fn redis_pcall_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let argc = ffi::lua_gettop(l);
        ffi::luaL_checkany(l, 1);
        ffi::lua_pushboolean(l, 1);
        ffi::lua_insert(l, 1);
        if ffi::lua_pcall(l, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
            ffi::lua_remove(l, 1);
            if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
                ffi::lua_getfield(l, -1, c"err".as_ptr());
                if ffi::lua_isstring(l, -1) != 0 {
                    ffi::lua_replace(l, -2);
                } else {
                    ffi::lua_pop(l, 1);
                }
            }
            ffi::lua_pushboolean(l, 0);
            ffi::lua_insert(l, 1);
        }
        ffi::lua_gettop(l)
    }
}

lua_fn!(fn redis_sha1hex => redis_sha1hex_impl);
unsafe fn redis_sha1hex_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_gettop(l) != 1 {
            push_error(l, b"wrong number of arguments");
            return -1;
        }
        let s = bytes(l, 1).unwrap_or(b"");
        push(l, &sha1_hex(s));
        1
    }
}

/// The lowercase hex SHA1 of `s`, as Redis names scripts.
pub fn sha1_hex(s: &[u8]) -> [u8; 40] {
    let digest = sha1_smol::Sha1::from(s).digest().bytes();
    let mut out = [0u8; 40];
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in digest.iter().enumerate() {
        out[2 * i] = HEX[(b >> 4) as usize];
        out[2 * i + 1] = HEX[(b & 15) as usize];
    }
    out
}

lua_fn!(fn redis_error_reply => redis_error_reply_impl);
unsafe fn redis_error_reply_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
            push_error(l, b"wrong number or type of arguments");
            return 1;
        }
        let s = bytes(l, -1).unwrap_or(b"");
        // Up to the first NUL, as Redis reads it as a C string.
        let s = &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())];
        if s.first() == Some(&b'-') {
            push_error(l, s);
        } else {
            let mut m = Vec::with_capacity(s.len() + 1);
            m.push(b'-');
            m.extend_from_slice(s);
            push_error(l, &m);
        }
        1
    }
}

lua_fn!(fn redis_status_reply => redis_status_reply_impl);
unsafe fn redis_status_reply_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
            push_error(l, b"wrong number or type of arguments");
            return 1;
        }
        ffi::lua_createtable(l, 0, 1);
        push(l, b"ok");
        ffi::lua_pushvalue(l, -3);
        ffi::lua_rawset(l, -3);
        1
    }
}

lua_fn!(fn redis_breakpoint => redis_breakpoint_impl);
unsafe fn redis_breakpoint_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_pushboolean(l, 0);
        1
    }
}

lua_fn!(fn redis_debug => redis_debug_impl);
unsafe fn redis_debug_impl(_l: State) -> c_int {
    0
}

lua_fn!(fn redis_replicate_commands => redis_replicate_commands_impl);
unsafe fn redis_replicate_commands_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_pushboolean(l, 1);
        1
    }
}

lua_fn!(fn redis_log => redis_log_impl);
unsafe fn redis_log_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let argc = ffi::lua_gettop(l);
        if argc < 2 {
            push_error(l, b"redis.log() requires two arguments or more.");
            return -1;
        }
        if ffi::lua_isnumber(l, -argc) == 0 {
            push_error(l, b"First argument must be a number (log level).");
            return -1;
        }
        let level = ffi::lua_tonumber(l, -argc) as i64;
        if !(0..=3).contains(&level) {
            push_error(l, b"Invalid debug level.");
            return -1;
        }
        let mut msg = Vec::new();
        for j in 1..argc {
            if let Some(s) = bytes(l, -argc + j) {
                if j != 1 {
                    msg.push(b' ');
                }
                msg.extend_from_slice(s);
            }
        }
        let msg = String::from_utf8_lossy(&msg);
        match level {
            0 => tracing::debug!(target: "keel::script", "{msg}"),
            1 => tracing::info!(target: "keel::script", "{msg}"),
            2 => tracing::info!(target: "keel::script", "{msg}"),
            _ => tracing::warn!(target: "keel::script", "{msg}"),
        }
        0
    }
}

// ---------------------------------------------------------------------------
// math.random with Redis's generator (rand48, seeded with 0), per thread.

thread_local! {
    /// drand48's default state, which Redis never reseeds at start.
    static RAND48: std::cell::Cell<u64> = const { std::cell::Cell::new(0x1234_ABCD_330E) };
}

const RAND48_MAX: i64 = i32::MAX as i64;

fn lrand48() -> i64 {
    RAND48.with(|s| {
        let x = s.get().wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB) & 0xFFFF_FFFF_FFFF;
        s.set(x);
        (x >> 17) as i64
    })
}

fn srand48(seed: i32) {
    RAND48.with(|s| s.set(((seed as u32 as u64) << 16) | 0x330E));
}

lua_fn!(fn math_random => math_random_impl);
unsafe fn math_random_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let r = (lrand48() % RAND48_MAX) as f64 / RAND48_MAX as f64;
        match ffi::lua_gettop(l) {
            0 => ffi::lua_pushnumber(l, r),
            1 => {
                let u = ffi::luaL_checkinteger(l, 1) as i32;
                if u < 1 {
                    ffi::luaL_argerror(l, 1, c"interval is empty".as_ptr());
                }
                ffi::lua_pushnumber(l, (r * u as f64).floor() + 1.0);
            }
            2 => {
                let lo = ffi::luaL_checkinteger(l, 1) as i32;
                let u = ffi::luaL_checkinteger(l, 2) as i32;
                if lo > u {
                    ffi::luaL_argerror(l, 2, c"interval is empty".as_ptr());
                }
                ffi::lua_pushnumber(l, (r * (u as f64 - lo as f64 + 1.0)).floor() + lo as f64);
            }
            _ => {
                push_where(l, b"wrong number of arguments");
                return -1;
            }
        }
        1
    }
}

lua_fn!(fn math_randomseed => math_randomseed_impl);
unsafe fn math_randomseed_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        srand48(ffi::luaL_checkinteger(l, 1) as i32);
        0
    }
}

#[cfg(test)]
#[allow(clippy::excessive_precision, clippy::approx_constant)] // exact digits are the point of these tests
mod tests {
    use super::*;

    fn g(v: f64, p: usize) -> String {
        let mut o = Vec::new();
        fmt_g(&mut o, v, p);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn printf_g() {
        assert_eq!(g(1.5, 17), "1.5");
        assert_eq!(g(0.1, 17), "0.10000000000000001");
        assert_eq!(g(1e300, 17), "1.0000000000000001e+300");
        assert_eq!(g(123456789012345.0, 17), "123456789012345");
        assert_eq!(g(1.6000000000000001, 17), "1.6000000000000001");
        assert_eq!(g(3.0, 17), "3");
        assert_eq!(g(1e17, 17), "1e+17");
        assert_eq!(g(1e16, 17), "10000000000000000");
        assert_eq!(g(0.0001, 17), "0.0001");
        assert_eq!(g(0.00001, 17), "1.0000000000000001e-05");
        assert_eq!(g(3.14, 14), "3.14");
        assert_eq!(g(f64::INFINITY, 17), "inf");
        assert_eq!(g(-f64::NAN, 17), "-nan");
    }

    #[test]
    fn c_cast() {
        assert_eq!(c_cast_i64(3.99), 3);
        assert_eq!(c_cast_i64(-3.99), -3);
        assert_eq!(c_cast_i64(1e30), i64::MIN);
        assert_eq!(c_cast_i64(f64::NAN), i64::MIN);
    }

    #[test]
    fn rand48_matches_redis() {
        // Redis 7.0: the first math.random() values after start, and
        // after math.randomseed(0).
        let seq = |n: usize| {
            (0..n)
                .map(|_| {
                    let r = (lrand48() % RAND48_MAX) as f64 / RAND48_MAX as f64;
                    let mut s = Vec::new();
                    fmt_g(&mut s, r, 14);
                    String::from_utf8(s).unwrap()
                })
                .collect::<Vec<_>>()
        };
        RAND48.with(|s| s.set(0x1234_ABCD_330E));
        assert_eq!(seq(2), ["0.39646477363839", "0.84048536971234"]);
        srand48(0);
        assert_eq!(seq(1), ["0.17082803611217"]);
    }
}
