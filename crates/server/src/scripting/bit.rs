//! The `bit` library (LuaBitOp 1.0.2, as bundled with Redis): 32-bit
//! operations on Lua numbers.

use std::ffi::c_int;

use super::lua::{ffi, lua_fn, push, set_fn, State};

/// Pushes the library table.
pub unsafe fn open(l: State) {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_createtable(l, 0, 12);
        let t = ffi::lua_gettop(l);
        set_fn(l, t, c"tobit", tobit);
        set_fn(l, t, c"bnot", bnot);
        set_fn(l, t, c"band", band);
        set_fn(l, t, c"bor", bor);
        set_fn(l, t, c"bxor", bxor);
        set_fn(l, t, c"lshift", lshift);
        set_fn(l, t, c"rshift", rshift);
        set_fn(l, t, c"arshift", arshift);
        set_fn(l, t, c"rol", rol);
        set_fn(l, t, c"ror", ror);
        set_fn(l, t, c"bswap", bswap);
        set_fn(l, t, c"tohex", tohex);
    }
}

/// Argument `idx` as 32 bits: the number rounded to an integer (the
/// 2^52+2^51 trick: round half to even) and wrapped modulo 2^32.
unsafe fn barg(l: State, idx: c_int) -> u32 {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let n = ffi::lua_tonumber(l, idx) + 6_755_399_441_055_744.0;
        let b = n.to_bits() as u32;
        if b == 0 && ffi::lua_isnumber(l, idx) == 0 {
            ffi::luaL_typerror(l, idx, c"number".as_ptr());
        }
        b
    }
}

#[inline]
unsafe fn ret(l: State, b: u32) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        ffi::lua_pushnumber(l, b as i32 as f64);
        1
    }
}

lua_fn!(fn tobit => tobit_impl);
unsafe fn tobit_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { ret(l, barg(l, 1)) }
}

lua_fn!(fn bnot => bnot_impl);
unsafe fn bnot_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { ret(l, !barg(l, 1)) }
}

unsafe fn fold(l: State, f: fn(u32, u32) -> u32) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let mut b = barg(l, 1);
        let mut i = ffi::lua_gettop(l);
        while i > 1 {
            b = f(b, barg(l, i));
            i -= 1;
        }
        ret(l, b)
    }
}

lua_fn!(fn band => band_impl);
unsafe fn band_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { fold(l, |a, b| a & b) }
}

lua_fn!(fn bor => bor_impl);
unsafe fn bor_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { fold(l, |a, b| a | b) }
}

lua_fn!(fn bxor => bxor_impl);
unsafe fn bxor_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { fold(l, |a, b| a ^ b) }
}

unsafe fn shift(l: State, f: fn(u32, u32) -> u32) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let b = barg(l, 1);
        let n = barg(l, 2) & 31;
        ret(l, f(b, n))
    }
}

lua_fn!(fn lshift => lshift_impl);
unsafe fn lshift_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { shift(l, |b, n| b << n) }
}

lua_fn!(fn rshift => rshift_impl);
unsafe fn rshift_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { shift(l, |b, n| b >> n) }
}

lua_fn!(fn arshift => arshift_impl);
unsafe fn arshift_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { shift(l, |b, n| ((b as i32) >> n) as u32) }
}

lua_fn!(fn rol => rol_impl);
unsafe fn rol_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { shift(l, |b, n| b.rotate_left(n)) }
}

lua_fn!(fn ror => ror_impl);
unsafe fn ror_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { shift(l, |b, n| b.rotate_right(n)) }
}

lua_fn!(fn bswap => bswap_impl);
unsafe fn bswap_impl(l: State) -> c_int {
    // SAFETY: `l` is the live state Lua called this function with.
    unsafe { ret(l, barg(l, 1).swap_bytes()) }
}

lua_fn!(fn tohex => tohex_impl);
unsafe fn tohex_impl(l: State) -> c_int {
    // SAFETY: this function's contract (callers pass a live Lua state of
    // this thread and stack slots it holds) covers every call below.
    unsafe {
        let mut b = barg(l, 1);
        let mut n: i32 = if ffi::lua_type(l, 2) == ffi::LUA_TNONE {
            8
        } else {
            barg(l, 2) as i32
        };
        let digits: &[u8; 16] = if n < 0 {
            n = n.wrapping_neg();
            b"0123456789ABCDEF"
        } else {
            b"0123456789abcdef"
        };
        let n = (n as u32).min(8) as usize;
        let mut buf = [0u8; 8];
        for i in (0..n).rev() {
            buf[i] = digits[(b & 15) as usize];
            b >>= 4;
        }
        push(l, &buf[..n]);
        1
    }
}
