//! The `cjson` library (lua-cjson 2.1.0, as bundled with Redis): JSON
//! encoding and decoding with the same output, limits, options and error
//! texts.

use std::ffi::{c_int, CStr};

use super::lua::{bytes, ffi, fmt_g, lua_fn, push, push_where, State};

/// Per-instance options (cjson.new() makes another instance); stored in a
/// userdata that every function of the instance holds as upvalue 1.
#[derive(Clone, Copy)]
#[repr(C)]
struct Cfg {
    sparse_convert: bool,
    sparse_ratio: i64,
    sparse_safe: i64,
    encode_max_depth: i64,
    decode_max_depth: i64,
    /// 0 off (error), 1 on (inf/nan), 2 null.
    encode_invalid: u8,
    decode_invalid: bool,
    keep_buffer: bool,
    precision: i64,
}

const DEFAULT: Cfg = Cfg {
    sparse_convert: false,
    sparse_ratio: 2,
    sparse_safe: 10,
    encode_max_depth: 1000,
    decode_max_depth: 1000,
    encode_invalid: 0,
    decode_invalid: true,
    keep_buffer: true,
    precision: 14,
};

/// Pushes the library table.
pub unsafe fn open(l: State) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        new_instance(l);
    }
}

unsafe fn new_instance(l: State) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, 0, 16);
        let t = ffi::lua_gettop(l);
        let cfg = ffi::lua_newuserdata(l, std::mem::size_of::<Cfg>()).cast::<Cfg>();
        cfg.write(DEFAULT);
        let ud = ffi::lua_gettop(l);
        let fns: [(&CStr, ffi::lua_CFunction); 10] = [
            (c"encode", encode),
            (c"decode", decode),
            (c"encode_sparse_array", encode_sparse_array),
            (c"encode_max_depth", encode_max_depth),
            (c"decode_max_depth", decode_max_depth),
            (c"encode_number_precision", encode_number_precision),
            (c"encode_keep_buffer", encode_keep_buffer),
            (c"encode_invalid_numbers", encode_invalid_numbers),
            (c"decode_invalid_numbers", decode_invalid_numbers),
            (c"new", new),
        ];
        for (name, f) in fns {
            super::lua::push_cstr(l, name);
            ffi::lua_pushvalue(l, ud);
            ffi::lua_pushcclosure(l, f, 1);
            ffi::lua_rawset(l, t);
        }
        ffi::lua_pop(l, 1);
        push(l, b"null");
        ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
        ffi::lua_rawset(l, t);
        push(l, b"_NAME");
        push(l, b"cjson");
        ffi::lua_rawset(l, t);
        push(l, b"_VERSION");
        push(l, b"2.1.0");
        ffi::lua_rawset(l, t);
    }
}

unsafe fn cfg<'a>(l: State) -> &'a mut Cfg {
    // SAFETY: upvalue 1 of the cjson functions is their Cfg userdata, and
    // `l` is the state Lua called them with (the caller's contract).
    unsafe { &mut *ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)).cast::<Cfg>() }
}

lua_fn!(fn new => new_impl);
unsafe fn new_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        new_instance(l);
        1
    }
}

// ---------------------------------------------------------------------------
// Options.

/// json_arg_init: at most `n` arguments, padded with nils.
unsafe fn arg_init(l: State, n: c_int) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_gettop(l) > n {
            ffi::luaL_argerror(l, n + 1, c"found too many arguments".as_ptr());
        }
        while ffi::lua_gettop(l) < n {
            ffi::lua_pushnil(l);
        }
    }
}

unsafe fn int_option(l: State, idx: c_int, v: &mut i64, min: i64, max: i64) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
            let n = ffi::luaL_checkinteger(l, idx);
            if n < min || n > max {
                // The message lives on the Lua stack: nothing of ours is left
                // to drop when luaL_argerror jumps.
                push(
                    l,
                    format!("expected integer between {min} and {max}").as_bytes(),
                );
                ffi::luaL_argerror(l, 1, ffi::lua_tostring(l, -1));
            }
            *v = n;
        }
        ffi::lua_pushinteger(l, *v);
    }
}

/// json_enum_option: a boolean or one of `options` (index = value).
unsafe fn enum_option(l: State, idx: c_int, v: &mut u8, options: &[&CStr]) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
            if ffi::lua_type(l, idx) == ffi::LUA_TBOOLEAN {
                *v = ffi::lua_toboolean(l, idx) as u8;
            } else {
                let mut len = 0usize;
                let p = ffi::luaL_checklstring(l, idx, &mut len);
                let name = std::slice::from_raw_parts(p.cast::<u8>(), len);
                match options.iter().position(|o| o.to_bytes() == name) {
                    Some(i) => *v = i as u8,
                    None => {
                        let mut msg = b"invalid option '".to_vec();
                        msg.extend_from_slice(name);
                        msg.push(b'\'');
                        push(l, &msg);
                        drop(msg);
                        ffi::luaL_argerror(l, idx, ffi::lua_tostring(l, -1));
                    }
                }
            }
        }
        if *v <= 1 {
            ffi::lua_pushboolean(l, *v as c_int);
        } else {
            super::lua::push_cstr(l, options[*v as usize]);
        }
    }
}

const BOOL_OPTIONS: [&CStr; 2] = [c"off", c"on"];

lua_fn!(fn encode_sparse_array => encode_sparse_array_impl);
unsafe fn encode_sparse_array_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        arg_init(l, 3);
        let c = cfg(l);
        let mut conv = c.sparse_convert as u8;
        enum_option(l, 1, &mut conv, &BOOL_OPTIONS);
        c.sparse_convert = conv != 0;
        int_option(l, 2, &mut c.sparse_ratio, 0, i32::MAX as i64);
        int_option(l, 3, &mut c.sparse_safe, 0, i32::MAX as i64);
        3
    }
}

lua_fn!(fn encode_max_depth => encode_max_depth_impl);
unsafe fn encode_max_depth_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        arg_init(l, 1);
        let c = cfg(l);
        int_option(l, 1, &mut c.encode_max_depth, 1, i32::MAX as i64);
        1
    }
}

lua_fn!(fn decode_max_depth => decode_max_depth_impl);
unsafe fn decode_max_depth_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        arg_init(l, 1);
        let c = cfg(l);
        int_option(l, 1, &mut c.decode_max_depth, 1, i32::MAX as i64);
        1
    }
}

lua_fn!(fn encode_number_precision => encode_number_precision_impl);
unsafe fn encode_number_precision_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        arg_init(l, 1);
        let c = cfg(l);
        int_option(l, 1, &mut c.precision, 1, 14);
        1
    }
}

lua_fn!(fn encode_keep_buffer => encode_keep_buffer_impl);
unsafe fn encode_keep_buffer_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        arg_init(l, 1);
        let c = cfg(l);
        let mut v = c.keep_buffer as u8;
        enum_option(l, 1, &mut v, &BOOL_OPTIONS);
        c.keep_buffer = v != 0;
        1
    }
}

lua_fn!(fn encode_invalid_numbers => encode_invalid_numbers_impl);
unsafe fn encode_invalid_numbers_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        arg_init(l, 1);
        let c = cfg(l);
        enum_option(l, 1, &mut c.encode_invalid, &[c"off", c"on", c"null"]);
        1
    }
}

lua_fn!(fn decode_invalid_numbers => decode_invalid_numbers_impl);
unsafe fn decode_invalid_numbers_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        arg_init(l, 1);
        let c = cfg(l);
        let mut v = c.decode_invalid as u8;
        enum_option(l, 1, &mut v, &BOOL_OPTIONS);
        c.decode_invalid = v != 0;
        1
    }
}

// ---------------------------------------------------------------------------
// Encoding.

lua_fn!(fn encode => encode_impl);
unsafe fn encode_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_gettop(l) != 1 {
            ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
        }
        let c = *cfg(l);
        let mut out = Vec::new();
        match append(l, &c, &mut out, 0) {
            Ok(()) => {
                push(l, &out);
                1
            }
            Err(msg) => {
                drop(out);
                push_where(l, msg.as_bytes());
                -1
            }
        }
    }
}

fn type_name(t: c_int) -> &'static str {
    match t {
        ffi::LUA_TNIL => "nil",
        ffi::LUA_TBOOLEAN => "boolean",
        ffi::LUA_TLIGHTUSERDATA | ffi::LUA_TUSERDATA => "userdata",
        ffi::LUA_TNUMBER => "number",
        ffi::LUA_TSTRING => "string",
        ffi::LUA_TTABLE => "table",
        ffi::LUA_TFUNCTION => "function",
        ffi::LUA_TTHREAD => "thread",
        _ => "no value",
    }
}

fn exception(t: c_int, reason: &str) -> String {
    format!("Cannot serialise {}: {}", type_name(t), reason)
}

/// Appends the value on top of the stack (left there).
unsafe fn append(l: State, c: &Cfg, out: &mut Vec<u8>, depth: i64) -> Result<(), String> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        match ffi::lua_type(l, -1) {
            ffi::LUA_TSTRING => append_string(out, bytes(l, -1).unwrap_or(b"")),
            ffi::LUA_TNUMBER => append_number(out, ffi::lua_tonumber(l, -1), c)?,
            ffi::LUA_TBOOLEAN => out.extend_from_slice(if ffi::lua_toboolean(l, -1) != 0 {
                b"true"
            } else {
                b"false"
            }),
            ffi::LUA_TTABLE => {
                let depth = depth + 1;
                if depth > c.encode_max_depth {
                    return Err(format!("Cannot serialise, excessive nesting ({depth})"));
                }
                if ffi::lua_checkstack(l, 3) == 0 {
                    return Err(format!("Cannot serialise, excessive nesting ({depth})"));
                }
                let len = array_length(l, c)?;
                if len > 0 {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        ffi::lua_rawgeti(l, -1, i);
                        let r = append(l, c, out, depth);
                        ffi::lua_pop(l, 1);
                        r?;
                    }
                    out.push(b']');
                } else {
                    out.push(b'{');
                    let mut first = true;
                    ffi::lua_pushnil(l);
                    while ffi::lua_next(l, -2) != 0 {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match ffi::lua_type(l, -2) {
                            ffi::LUA_TNUMBER => {
                                out.push(b'"');
                                if let Err(e) = append_number(out, ffi::lua_tonumber(l, -2), c) {
                                    ffi::lua_pop(l, 2);
                                    return Err(e);
                                }
                                out.extend_from_slice(b"\":");
                            }
                            ffi::LUA_TSTRING => {
                                append_string(out, bytes(l, -2).unwrap_or(b""));
                                out.push(b':');
                            }
                            t => {
                                ffi::lua_pop(l, 2);
                                return Err(exception(t, "table key must be a number or string"));
                            }
                        }
                        let r = append(l, c, out, depth);
                        ffi::lua_pop(l, 1);
                        if let Err(e) = r {
                            ffi::lua_pop(l, 1);
                            return Err(e);
                        }
                    }
                    out.push(b'}');
                }
            }
            ffi::LUA_TNIL => out.extend_from_slice(b"null"),
            ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
                out.extend_from_slice(b"null")
            }
            t => return Err(exception(t, "type not supported")),
        }
        Ok(())
    }
}

/// The array length of the table on top, or 0 for an object (lua-cjson's
/// lua_array_length, with its sparse-array rules).
unsafe fn array_length(l: State, c: &Cfg) -> Result<i64, String> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let (mut max, mut items) = (0i64, 0i64);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER {
                let k = ffi::lua_tonumber(l, -2);
                if k.floor() == k && k >= 1.0 {
                    if k as i64 > max {
                        max = k as i64;
                    }
                    items += 1;
                    ffi::lua_pop(l, 1);
                    continue;
                }
            }
            ffi::lua_pop(l, 2);
            return Ok(-1);
        }
        if c.sparse_ratio > 0 && max > items * c.sparse_ratio && max > c.sparse_safe {
            if !c.sparse_convert {
                return Err(exception(ffi::LUA_TTABLE, "excessively sparse array"));
            }
            return Ok(-1);
        }
        Ok(max)
    }
}

fn append_number(out: &mut Vec<u8>, n: f64, c: &Cfg) -> Result<(), String> {
    if n.is_infinite() || n.is_nan() {
        match c.encode_invalid {
            0 => return Err(exception(ffi::LUA_TNUMBER, "must not be NaN or Inf")),
            1 => {
                out.extend_from_slice(if n.is_nan() {
                    b"nan"
                } else if n > 0.0 {
                    b"inf"
                } else {
                    b"-inf"
                });
                return Ok(());
            }
            _ => {
                out.extend_from_slice(b"null");
                return Ok(());
            }
        }
    }
    fmt_g(out, n, c.precision as usize);
    Ok(())
}

fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &ch in s {
        match ch {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            8 => out.extend_from_slice(b"\\b"),
            9 => out.extend_from_slice(b"\\t"),
            10 => out.extend_from_slice(b"\\n"),
            12 => out.extend_from_slice(b"\\f"),
            13 => out.extend_from_slice(b"\\r"),
            0..=31 | 127 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(ch >> 4) as usize]);
                out.push(HEX[(ch & 15) as usize]);
            }
            _ => out.push(ch),
        }
    }
    out.push(b'"');
}

// ---------------------------------------------------------------------------
// Decoding.

#[derive(Clone, Copy, PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Num(_) => "T_NUMBER",
            Tok::Bool(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(e) => e,
        }
    }
}

struct Parser<'a> {
    /// The text up to its first NUL (lua-cjson reads a C string).
    data: &'a [u8],
    pos: usize,
    /// The last string token's value.
    tmp: Vec<u8>,
    depth: i64,
    cfg: Cfg,
}

impl Parser<'_> {
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    /// Returns the token and the index it starts at.
    fn next(&mut self) -> (Tok, usize) {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        let ch = self.at(self.pos);
        let single = match ch {
            0 => return (Tok::End, start),
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, start);
        }
        let rest = &self.data[self.pos..];
        let unknown = matches!(
            ch,
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'"' | b'+' | b'-' | b'0'..=b'9'
        );
        if !unknown {
            return (Tok::Error("invalid token"), start);
        }
        if ch == b'"' {
            let t = self.string();
            // String errors point at where the string went wrong.
            let at = if matches!(t, Tok::Error(_)) {
                self.pos
            } else {
                start
            };
            return (t, at);
        }
        if ch == b'-' || ch.is_ascii_digit() {
            if !self.cfg.decode_invalid && self.invalid_number() {
                return (Tok::Error("invalid number"), start);
            }
            return (self.number(), start);
        }
        if rest.starts_with(b"true") {
            self.pos += 4;
            return (Tok::Bool(true), start);
        }
        if rest.starts_with(b"false") {
            self.pos += 5;
            return (Tok::Bool(false), start);
        }
        if rest.starts_with(b"null") {
            self.pos += 4;
            return (Tok::Null, start);
        }
        if self.cfg.decode_invalid && self.invalid_number() {
            return (self.number(), start);
        }
        (Tok::Error("invalid token"), start)
    }

    fn invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        if self.at(p) == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        } else if self.at(p) <= b'9' {
            return false;
        }
        let r = &self.data[p.min(self.data.len())..];
        r.len() >= 3 && (r[..3].eq_ignore_ascii_case(b"inf") || r[..3].eq_ignore_ascii_case(b"nan"))
    }

    fn number(&mut self) -> Tok {
        match crate::num::strtod::strtod(&self.data[self.pos..]) {
            Some((v, n)) if n > 0 => {
                self.pos += n;
                Tok::Num(v)
            }
            _ => Tok::Error("invalid number"),
        }
    }

    fn string(&mut self) -> Tok {
        self.pos += 1;
        self.tmp.clear();
        loop {
            let ch = self.at(self.pos);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return Tok::Error("unexpected end of string");
            }
            if ch == b'\\' {
                let e = self.at(self.pos + 1);
                let c = match e {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'f' => 12,
                    b'r' => b'\r',
                    b'u' => {
                        if self.unicode_escape() {
                            continue;
                        }
                        return Tok::Error("invalid unicode escape code");
                    }
                    _ => return Tok::Error("invalid escape code"),
                };
                self.tmp.push(c);
                self.pos += 2;
                continue;
            }
            self.tmp.push(ch);
            self.pos += 1;
        }
        self.pos += 1;
        Tok::Str
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0;
        for i in 0..4 {
            let d = (self.at(at + i) as char).to_digit(16)?;
            v = (v << 4) | d;
        }
        Some(v)
    }

    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let t = &mut self.tmp;
        if cp <= 0x7F {
            t.push(cp as u8);
        } else if cp <= 0x7FF {
            t.extend_from_slice(&[(cp >> 6) as u8 | 0xC0, (cp & 0x3F) as u8 | 0x80]);
        } else if cp <= 0xFFFF {
            t.extend_from_slice(&[
                (cp >> 12) as u8 | 0xE0,
                ((cp >> 6) & 0x3F) as u8 | 0x80,
                (cp & 0x3F) as u8 | 0x80,
            ]);
        } else {
            t.extend_from_slice(&[
                (cp >> 18) as u8 | 0xF0,
                ((cp >> 12) & 0x3F) as u8 | 0x80,
                ((cp >> 6) & 0x3F) as u8 | 0x80,
                (cp & 0x3F) as u8 | 0x80,
            ]);
        }
        self.pos += len;
        true
    }
}

lua_fn!(fn decode => decode_impl);
unsafe fn decode_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_gettop(l) != 1 {
            ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
        }
        let mut len = 0usize;
        let p = ffi::luaL_checklstring(l, 1, &mut len);
        let text = std::slice::from_raw_parts(p.cast::<u8>(), len);
        if len >= 2 && (text[0] == 0 || text[1] == 0) {
            push_where(l, b"JSON parser does not support UTF-16 or UTF-32");
            return -1;
        }
        let data = &text[..text.iter().position(|&c| c == 0).unwrap_or(len)];
        let mut p = Parser {
            data,
            pos: 0,
            tmp: Vec::new(),
            depth: 0,
            cfg: *cfg(l),
        };
        let top = ffi::lua_gettop(l);
        let result = (|| {
            let (t, at) = p.next();
            value(l, &mut p, t, at)?;
            let (t, at) = p.next();
            if t != Tok::End {
                return Err(expected("the end", t, at));
            }
            Ok(())
        })();
        match result {
            Ok(()) => 1,
            Err(msg) => {
                drop(p);
                ffi::lua_settop(l, top);
                push_where(l, msg.as_bytes());
                -1
            }
        }
    }
}

fn expected(what: &str, t: Tok, at: usize) -> String {
    format!(
        "Expected {} but found {} at character {}",
        what,
        t.name(),
        at + 1
    )
}

unsafe fn descend(l: State, p: &mut Parser, slots: c_int) -> Result<(), String> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        p.depth += 1;
        if p.depth <= p.cfg.decode_max_depth && ffi::lua_checkstack(l, slots) != 0 {
            return Ok(());
        }
        Err(format!(
            "Found too many nested data structures ({}) at character {}",
            p.depth, p.pos
        ))
    }
}

unsafe fn value(l: State, p: &mut Parser, t: Tok, at: usize) -> Result<(), String> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        match t {
            Tok::Str => push(l, &p.tmp),
            Tok::Num(n) => ffi::lua_pushnumber(l, n),
            Tok::Bool(b) => ffi::lua_pushboolean(l, b as c_int),
            Tok::Null => ffi::lua_pushlightuserdata(l, std::ptr::null_mut()),
            Tok::ObjBegin => {
                descend(l, p, 3)?;
                ffi::lua_createtable(l, 0, 0);
                let (mut t, mut at) = p.next();
                if t != Tok::ObjEnd {
                    loop {
                        if t != Tok::Str {
                            return Err(expected("object key string", t, at));
                        }
                        push(l, &p.tmp);
                        let (c, cat) = p.next();
                        if c != Tok::Colon {
                            return Err(expected("colon", c, cat));
                        }
                        let (v, vat) = p.next();
                        value(l, p, v, vat)?;
                        ffi::lua_rawset(l, -3);
                        let (n, nat) = p.next();
                        if n == Tok::ObjEnd {
                            break;
                        }
                        if n != Tok::Comma {
                            return Err(expected("comma or object end", n, nat));
                        }
                        (t, at) = p.next();
                    }
                }
                p.depth -= 1;
            }
            Tok::ArrBegin => {
                descend(l, p, 2)?;
                ffi::lua_createtable(l, 0, 0);
                let (mut t, mut at) = p.next();
                if t != Tok::ArrEnd {
                    let mut i = 1;
                    loop {
                        value(l, p, t, at)?;
                        ffi::lua_rawseti(l, -2, i);
                        i += 1;
                        let (n, nat) = p.next();
                        if n == Tok::ArrEnd {
                            break;
                        }
                        if n != Tok::Comma {
                            return Err(expected("comma or array end", n, nat));
                        }
                        (t, at) = p.next();
                    }
                }
                p.depth -= 1;
            }
            t => return Err(expected("value", t, at)),
        }
        Ok(())
    }
}
