//! The `struct` library (Roberto Ierusalimschy's struct 0.2, as bundled
//! with Redis): packing Lua values into binary strings and back.
//!
//! Formats: `>`/`<` endianness (native: little), `![n]` maximum alignment,
//! `x` padding, `b/B h/H l/L T i[n]/I[n]` integers, `f d` floats, `s`
//! zero-terminated and `c[n]` fixed strings. Sizes are those of x86-64 C.

use std::ffi::c_int;

use super::lua::{c_cast_i64, ffi, lua_fn, push, push_where, set_fn, State};

const MAXINTSIZE: usize = 32;
const MAXALIGN: usize = 8;

/// Pushes the library table.
pub unsafe fn open(l: State) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, 0, 3);
        let t = ffi::lua_gettop(l);
        set_fn(l, t, c"pack", pack);
        set_fn(l, t, c"unpack", unpack);
        set_fn(l, t, c"size", size);
    }
}

#[derive(Clone, Copy)]
struct Header {
    big: bool,
    align: usize,
}

const DEFAULT: Header = Header {
    big: false,
    align: 1,
};

/// The format string up to its first NUL, read as C does.
unsafe fn format<'a>(l: State) -> &'a [u8] {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let mut len = 0usize;
        let p = ffi::luaL_checklstring(l, 1, &mut len);
        let f = std::slice::from_raw_parts(p.cast::<u8>(), len);
        &f[..f.iter().position(|&c| c == 0).unwrap_or(len)]
    }
}

/// getnum: a decimal count after an option, or `df`.
fn getnum(fmt: &[u8], i: &mut usize, df: usize) -> Result<usize, &'static str> {
    if !fmt.get(*i).is_some_and(u8::is_ascii_digit) {
        return Ok(df);
    }
    let mut a: i64 = 0;
    while let Some(&c) = fmt.get(*i).filter(|c| c.is_ascii_digit()) {
        let d = (c - b'0') as i64;
        if a > i32::MAX as i64 / 10 || a * 10 > i32::MAX as i64 - d {
            return Err("integral size overflow");
        }
        a = a * 10 + d;
        *i += 1;
    }
    Ok(a as usize)
}

fn optsize(opt: u8, fmt: &[u8], i: &mut usize) -> Result<usize, String> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'x' => 1,
        b'c' => getnum(fmt, i, 1)?,
        b'i' | b'I' => {
            let sz = getnum(fmt, i, 4)?;
            if sz > MAXINTSIZE {
                return Err(format!(
                    "integral size {sz} is larger than limit of {MAXINTSIZE}"
                ));
            }
            sz
        }
        _ => 0,
    })
}

fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let align = size.min(h.align);
    (align - (len & (align - 1))) & (align - 1)
}

enum Fail {
    /// luaL_error: positioned message.
    Msg(String),
    /// luaL_argerror(narg, msg).
    Arg(c_int, String),
}

fn controloptions(opt: u8, fmt: &[u8], i: &mut usize, h: &mut Header) -> Result<(), Fail> {
    match opt {
        b' ' => Ok(()),
        b'>' => {
            h.big = true;
            Ok(())
        }
        b'<' => {
            h.big = false;
            Ok(())
        }
        b'!' => {
            let a = getnum(fmt, i, MAXALIGN).map_err(|e| Fail::Msg(e.into()))?;
            if !a.is_power_of_two() {
                return Err(Fail::Msg(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
            Ok(())
        }
        _ => Err(Fail::Arg(
            1,
            format!("invalid format option '{}'", opt as char),
        )),
    }
}

/// Raises `f` (returns -1 for the trampoline).
unsafe fn raise(l: State, f: Fail) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        match f {
            Fail::Msg(m) => {
                push_where(l, m.as_bytes());
                -1
            }
            Fail::Arg(n, m) => {
                push(l, m.as_bytes());
                drop(m);
                ffi::luaL_argerror(l, n, ffi::lua_tostring(l, -1));
                -1
            }
        }
    }
}

/// `(Uinttype)n` (or `(Uinttype)(Inttype)n` for negatives) as x86-64 C.
fn to_u64(n: f64) -> u64 {
    if n < 0.0 {
        c_cast_i64(n) as u64
    } else if n < 9_223_372_036_854_775_808.0 {
        n as u64
    } else {
        (c_cast_i64(n - 9_223_372_036_854_775_808.0) as u64) ^ (1 << 63)
    }
}

fn put_int(out: &mut Vec<u8>, mut v: u64, big: bool, size: usize) {
    let mut buf = [0u8; MAXINTSIZE];
    for k in 0..size {
        let i = if big { size - 1 - k } else { k };
        buf[i] = v as u8;
        v = v.checked_shr(8).unwrap_or(0);
    }
    out.extend_from_slice(&buf[..size]);
}

lua_fn!(fn pack => pack_impl);
unsafe fn pack_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let fmt = format(l);
        // As struct.c: a nil separates the arguments from the result (and is
        // what a missing argument reads as).
        ffi::lua_pushnil(l);
        match pack_body(l, fmt) {
            Ok(out) => {
                push(l, &out);
                1
            }
            Err(f) => raise(l, f),
        }
    }
}

unsafe fn check_number(l: State, arg: c_int) -> Result<f64, Fail> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if ffi::lua_isnumber(l, arg) == 0 {
            return Err(Fail::Arg(
                arg,
                format!("number expected, got {}", type_name(l, arg)),
            ));
        }
        Ok(ffi::lua_tonumber(l, arg))
    }
}

unsafe fn type_name(l: State, idx: c_int) -> String {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        std::ffi::CStr::from_ptr(ffi::lua_typename(l, ffi::lua_type(l, idx)))
            .to_string_lossy()
            .into_owned()
    }
}

unsafe fn pack_body(l: State, fmt: &[u8]) -> Result<Vec<u8>, Fail> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let mut out = Vec::new();
        let mut h = DEFAULT;
        let mut arg = 2;
        let mut total = 0usize;
        let mut i = 0;
        while i < fmt.len() {
            let opt = fmt[i];
            i += 1;
            let mut size = optsize(opt, fmt, &mut i).map_err(Fail::Msg)?;
            let toalign = gettoalign(total, &h, opt, size);
            total += toalign;
            out.resize(out.len() + toalign, 0);
            match opt {
                b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                    let n = check_number(l, arg)?;
                    arg += 1;
                    put_int(&mut out, to_u64(n), h.big, size);
                }
                b'x' => out.push(0),
                b'f' => {
                    let f = check_number(l, arg)? as f32;
                    arg += 1;
                    out.extend_from_slice(&if h.big {
                        f.to_be_bytes()
                    } else {
                        f.to_le_bytes()
                    });
                }
                b'd' => {
                    let d = check_number(l, arg)?;
                    arg += 1;
                    out.extend_from_slice(&if h.big {
                        d.to_be_bytes()
                    } else {
                        d.to_le_bytes()
                    });
                }
                b'c' | b's' => {
                    if ffi::lua_isstring(l, arg) == 0 {
                        return Err(Fail::Arg(
                            arg,
                            format!("string expected, got {}", type_name(l, arg)),
                        ));
                    }
                    let s = super::lua::bytes(l, arg).unwrap_or(b"");
                    arg += 1;
                    if size == 0 {
                        size = s.len();
                    }
                    if s.len() < size {
                        return Err(Fail::Arg(arg, "string too short".into()));
                    }
                    out.extend_from_slice(&s[..size]);
                    if opt == b's' {
                        out.push(0);
                        size += 1;
                    }
                }
                _ => controloptions(opt, fmt, &mut i, &mut h)?,
            }
            total += size;
        }
        Ok(out)
    }
}

fn get_int(b: &[u8], big: bool, signed: bool, size: usize) -> f64 {
    let mut v: u64 = 0;
    for k in 0..size {
        let byte = if big { b[k] } else { b[size - 1 - k] };
        v = v.checked_shl(8).unwrap_or(0) | byte as u64;
    }
    if !signed {
        return v as f64;
    }
    let mask = u64::MAX.checked_shl((size * 8 - 1) as u32).unwrap_or(0);
    if v & mask != 0 {
        v |= mask;
    }
    v as i64 as f64
}

lua_fn!(fn unpack => unpack_impl);
unsafe fn unpack_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let fmt = format(l);
        let mut ld = 0usize;
        let p = ffi::luaL_checklstring(l, 2, &mut ld);
        let data = std::slice::from_raw_parts(p.cast::<u8>(), ld);
        let pos = ffi::luaL_optinteger(l, 3, 1);
        if pos <= 0 {
            ffi::luaL_argerror(l, 3, c"offset must be 1 or greater".as_ptr());
        }
        let mut pos = (pos - 1) as usize;
        let mut h = DEFAULT;
        let mut n: c_int = 0;
        let mut i = 0;
        while i < fmt.len() {
            let opt = fmt[i];
            i += 1;
            let mut size = match optsize(opt, fmt, &mut i) {
                Ok(s) => s,
                Err(m) => return raise(l, Fail::Msg(m)),
            };
            pos += gettoalign(pos, &h, opt, size);
            if size > ld || pos > ld - size {
                ffi::luaL_argerror(l, 2, c"data string too short".as_ptr());
            }
            ffi::luaL_checkstack(l, 2, c"too many results".as_ptr());
            match opt {
                b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                    let v = get_int(
                        &data[pos..pos + size],
                        h.big,
                        opt.is_ascii_lowercase(),
                        size,
                    );
                    ffi::lua_pushnumber(l, v);
                    n += 1;
                }
                b'x' => {}
                b'f' => {
                    let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or_default();
                    let f = if h.big {
                        f32::from_be_bytes(b)
                    } else {
                        f32::from_le_bytes(b)
                    };
                    ffi::lua_pushnumber(l, f as f64);
                    n += 1;
                }
                b'd' => {
                    let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or_default();
                    let d = if h.big {
                        f64::from_be_bytes(b)
                    } else {
                        f64::from_le_bytes(b)
                    };
                    ffi::lua_pushnumber(l, d);
                    n += 1;
                }
                b'c' => {
                    if size == 0 {
                        if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                            push_where(l, b"format 'c0' needs a previous size");
                            return -1;
                        }
                        size = ffi::lua_tonumber(l, -1) as usize;
                        ffi::lua_pop(l, 1);
                        n -= 1;
                        if size > ld || pos > ld - size {
                            ffi::luaL_argerror(l, 2, c"data string too short".as_ptr());
                        }
                    }
                    push(l, &data[pos..pos + size]);
                    n += 1;
                }
                b's' => {
                    let Some(e) = data[pos..].iter().position(|&c| c == 0) else {
                        push_where(l, b"unfinished string in data");
                        return -1;
                    };
                    push(l, &data[pos..pos + e]);
                    size = e + 1;
                    n += 1;
                }
                _ => {
                    if let Err(f) = controloptions(opt, fmt, &mut i, &mut h) {
                        return raise(l, f);
                    }
                }
            }
            pos += size;
        }
        ffi::lua_pushinteger(l, pos as ffi::lua_Integer + 1);
        n + 1
    }
}

lua_fn!(fn size => size_impl);
unsafe fn size_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let fmt = format(l);
        let mut h = DEFAULT;
        let mut pos = 0usize;
        let mut i = 0;
        while i < fmt.len() {
            let opt = fmt[i];
            i += 1;
            let size = match optsize(opt, fmt, &mut i) {
                Ok(s) => s,
                Err(m) => return raise(l, Fail::Msg(m)),
            };
            pos += gettoalign(pos, &h, opt, size);
            if opt == b's' {
                ffi::luaL_argerror(l, 1, c"option 's' has no fixed size".as_ptr());
            } else if opt == b'c' && size == 0 {
                ffi::luaL_argerror(l, 1, c"option 'c0' has no fixed size".as_ptr());
            }
            if !opt.is_ascii_alphanumeric() {
                if let Err(f) = controloptions(opt, fmt, &mut i, &mut h) {
                    return raise(l, f);
                }
            }
            pos += size;
        }
        ffi::lua_pushinteger(l, pos as ffi::lua_Integer);
        1
    }
}
