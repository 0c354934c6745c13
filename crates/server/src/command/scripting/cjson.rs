//! stub
use super::lua::{ffi, State};

pub unsafe fn open(l: State) {
    ffi::lua_createtable(l, 0, 0);
}
