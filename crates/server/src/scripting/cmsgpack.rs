//! The `cmsgpack` library (lua-cmsgpack 0.4.0, as bundled with Redis):
//! MessagePack encoding of Lua values, with the same choices of encoding
//! (smallest integer, float32 when exact, str8, array vs map detection,
//! nesting capped at 16) and the same errors.

use std::ffi::c_int;

use super::lua::{bytes, c_cast_i64, ffi, lua_fn, push, push_where, set_fn, set_str, State};

/// Tables nested deeper are encoded as nil (survives cycles).
const MAX_NESTING: usize = 16;
/// Deepest structure decoded (Lua's own C stack limit is near).
const MAX_DECODE_DEPTH: usize = 4000;

/// Pushes the library table.
pub unsafe fn open(l: State) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, 0, 8);
        let t = ffi::lua_gettop(l);
        set_fn(l, t, c"pack", pack);
        set_fn(l, t, c"unpack", unpack);
        set_fn(l, t, c"unpack_one", unpack_one);
        set_fn(l, t, c"unpack_limit", unpack_limit);
        set_str(l, t, c"_NAME", b"cmsgpack");
        set_str(l, t, c"_VERSION", b"lua-cmsgpack 0.4.0");
        set_str(
            l,
            t,
            c"_COPYRIGHT",
            b"Copyright (C) 2012, Salvatore Sanfilippo",
        );
        set_str(
            l,
            t,
            c"_DESCRIPTION",
            b"MessagePack C implementation for Lua",
        );
    }
}

// ---------------------------------------------------------------------------
// Encoding.

lua_fn!(fn pack => pack_impl);
unsafe fn pack_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let n = ffi::lua_gettop(l);
        if n == 0 {
            ffi::luaL_argerror(l, 0, c"MessagePack pack needs input.".as_ptr());
        }
        let mut out = Vec::new();
        for i in 1..=n {
            ffi::lua_pushvalue(l, i);
            encode(l, &mut out, 0);
        }
        push(l, &out);
        1
    }
}

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_number(out: &mut Vec<u8>, n: f64) {
    if !n.is_infinite() && c_cast_i64(n) as f64 == n {
        encode_int(out, c_cast_i64(n));
        return;
    }
    let f = n as f32;
    if f as f64 == n {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_len(out: &mut Vec<u8>, n: usize, fix: u8, fix_max: usize, c16: u8, c32: u8) {
    if n <= fix_max {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(c16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(c32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Encodes and pops the value on top of the stack.
unsafe fn encode(l: State, out: &mut Vec<u8>, level: usize) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let mut t = ffi::lua_type(l, -1);
        if t == ffi::LUA_TTABLE && (level == MAX_NESTING || ffi::lua_checkstack(l, 3) == 0) {
            t = ffi::LUA_TNIL;
        }
        match t {
            ffi::LUA_TSTRING => {
                let s = bytes(l, -1).unwrap_or(b"");
                if s.len() < 32 {
                    out.push(0xa0 | s.len() as u8);
                } else if s.len() <= 0xff {
                    out.extend_from_slice(&[0xd9, s.len() as u8]);
                } else {
                    encode_len(out, s.len(), 0xa0, 31, 0xda, 0xdb);
                }
                out.extend_from_slice(s);
            }
            ffi::LUA_TBOOLEAN => out.push(if ffi::lua_toboolean(l, -1) != 0 {
                0xc3
            } else {
                0xc2
            }),
            ffi::LUA_TNUMBER => encode_number(out, ffi::lua_tonumber(l, -1)),
            ffi::LUA_TTABLE => {
                if is_array(l) {
                    let len = ffi::lua_objlen(l, -1);
                    encode_len(out, len, 0x90, 15, 0xdc, 0xdd);
                    for j in 1..=len {
                        ffi::lua_rawgeti(l, -1, j as ffi::lua_Integer);
                        encode(l, out, level + 1);
                    }
                } else {
                    let mut n = 0;
                    ffi::lua_pushnil(l);
                    while ffi::lua_next(l, -2) != 0 {
                        ffi::lua_pop(l, 1);
                        n += 1;
                    }
                    encode_len(out, n, 0x80, 15, 0xde, 0xdf);
                    ffi::lua_pushnil(l);
                    while ffi::lua_next(l, -2) != 0 {
                        ffi::lua_pushvalue(l, -2);
                        encode(l, out, level + 1);
                        encode(l, out, level + 1);
                    }
                }
            }
            _ => out.push(0xc0),
        }
        ffi::lua_pop(l, 1);
    }
}

/// lua-cmsgpack's table_is_an_array: only positive integer keys, and as
/// many as the largest (so 1..n all present).
unsafe fn is_array(l: State) -> bool {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let (mut count, mut max) = (0f64, 0f64);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_pop(l, 1);
            let ok = ffi::lua_type(l, -1) == ffi::LUA_TNUMBER && {
                let n = ffi::lua_tonumber(l, -1);
                n > 0.0 && (n as i32) as f64 == n && {
                    if n > max {
                        max = n;
                    }
                    true
                }
            };
            if !ok {
                ffi::lua_pop(l, 1);
                return false;
            }
            count += 1.0;
        }
        max == count
    }
}

// ---------------------------------------------------------------------------
// Decoding.

enum DecodeError {
    Eof,
    BadFormat,
    Deep,
}

struct Cur<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.data.len() - self.pos < n {
            return Err(DecodeError::Eof);
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn be(&mut self, n: usize) -> Result<u64, DecodeError> {
        Ok(self.take(n)?.iter().fold(0u64, |a, &b| (a << 8) | b as u64))
    }
}

/// Pushes the next value. May raise Lua's "table index is nil" for a map
/// with a nil key, as lua-cmsgpack does (nothing owned is live then).
unsafe fn decode(l: State, c: &mut Cur, depth: usize) -> Result<(), DecodeError> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        if depth > MAX_DECODE_DEPTH || ffi::lua_checkstack(l, 3) == 0 {
            return Err(DecodeError::Deep);
        }
        let b = c.take(1)?[0];
        match b {
            0xcc => ffi::lua_pushnumber(l, c.be(1)? as f64),
            0xd0 => ffi::lua_pushnumber(l, c.be(1)? as u8 as i8 as f64),
            0xcd => ffi::lua_pushnumber(l, c.be(2)? as f64),
            0xd1 => ffi::lua_pushnumber(l, c.be(2)? as u16 as i16 as f64),
            0xce => ffi::lua_pushnumber(l, c.be(4)? as f64),
            0xd2 => ffi::lua_pushnumber(l, c.be(4)? as u32 as i32 as f64),
            0xcf | 0xd3 => ffi::lua_pushnumber(l, c.be(8)? as i64 as f64),
            0xc0 => ffi::lua_pushnil(l),
            0xc3 => ffi::lua_pushboolean(l, 1),
            0xc2 => ffi::lua_pushboolean(l, 0),
            0xca => ffi::lua_pushnumber(l, f32::from_bits(c.be(4)? as u32) as f64),
            0xcb => ffi::lua_pushnumber(l, f64::from_bits(c.be(8)?)),
            0xd9 => {
                let n = c.be(1)? as usize;
                push(l, c.take(n)?);
            }
            0xda => {
                let n = c.be(2)? as usize;
                push(l, c.take(n)?);
            }
            0xdb => {
                let n = c.be(4)? as usize;
                push(l, c.take(n)?);
            }
            0xdc => {
                let n = c.be(2)? as usize;
                array(l, c, n, depth)?;
            }
            0xdd => {
                let n = c.be(4)? as usize;
                array(l, c, n, depth)?;
            }
            0xde => {
                let n = c.be(2)? as usize;
                map(l, c, n, depth)?;
            }
            0xdf => {
                let n = c.be(4)? as usize;
                map(l, c, n, depth)?;
            }
            b if b & 0x80 == 0 => ffi::lua_pushnumber(l, b as f64),
            b if b & 0xe0 == 0xe0 => ffi::lua_pushnumber(l, b as i8 as f64),
            b if b & 0xe0 == 0xa0 => push(l, c.take((b & 0x1f) as usize)?),
            b if b & 0xf0 == 0x90 => array(l, c, (b & 0x0f) as usize, depth)?,
            b if b & 0xf0 == 0x80 => map(l, c, (b & 0x0f) as usize, depth)?,
            _ => return Err(DecodeError::BadFormat),
        }
        Ok(())
    }
}

unsafe fn array(l: State, c: &mut Cur, n: usize, depth: usize) -> Result<(), DecodeError> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, 0, 0);
        for j in 1..=n {
            decode(l, c, depth + 1)?;
            ffi::lua_rawseti(l, -2, j as ffi::lua_Integer);
        }
        Ok(())
    }
}

unsafe fn map(l: State, c: &mut Cur, n: usize, depth: usize) -> Result<(), DecodeError> {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, 0, 0);
        for _ in 0..n {
            decode(l, c, depth + 1)?;
            decode(l, c, depth + 1)?;
            ffi::lua_settable(l, -3);
        }
        Ok(())
    }
}

/// mp_unpack_full: decodes up to `limit` values (all when limit and
/// offset are 0) from `offset`; with a limit, the next offset (or -1)
/// comes first.
unsafe fn unpack_full(l: State, limit: i64, offset: i64) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let mut len = 0usize;
        let p = ffi::luaL_checklstring(l, 1, &mut len);
        let data = std::slice::from_raw_parts(p.cast::<u8>(), len);
        let decode_all = limit == 0 && offset == 0;
        if offset < 0 || limit < 0 {
            push_where(
                l,
                format!("Invalid request to unpack with offset of {offset} and limit of {len}.")
                    .as_bytes(),
            );
            return -1;
        }
        if offset as usize > len {
            push_where(
                l,
                format!("Start offset {offset} greater than input length {len}.").as_bytes(),
            );
            return -1;
        }
        let limit = if decode_all { i64::MAX } else { limit };
        let mut c = Cur {
            data,
            pos: offset as usize,
        };
        let mut cnt = 0;
        while c.pos < len && cnt < limit {
            if let Err(e) = decode(l, &mut c, 0) {
                let msg: &[u8] = match e {
                    DecodeError::Eof => b"Missing bytes in input.",
                    DecodeError::BadFormat => b"Bad data format in input.",
                    DecodeError::Deep => b"stack overflow (in function mp_decode_to_lua_type)",
                };
                push_where(l, msg);
                return -1;
            }
            cnt += 1;
        }
        let mut n = cnt as c_int;
        if !decode_all {
            ffi::lua_pushinteger(l, if c.pos == len { -1 } else { c.pos as i64 });
            ffi::lua_insert(l, 2);
            n += 1;
        }
        n
    }
}

lua_fn!(fn unpack => unpack_impl);
unsafe fn unpack_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { unpack_full(l, 0, 0) }
}

lua_fn!(fn unpack_one => unpack_one_impl);
unsafe fn unpack_one_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let offset = ffi::luaL_optinteger(l, 2, 0);
        ffi::lua_settop(l, 1);
        unpack_full(l, 1, offset)
    }
}

lua_fn!(fn unpack_limit => unpack_limit_impl);
unsafe fn unpack_limit_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let limit = ffi::luaL_checkinteger(l, 2);
        let offset = ffi::luaL_optinteger(l, 3, 0);
        ffi::lua_settop(l, 1);
        unpack_full(l, limit, offset)
    }
}
