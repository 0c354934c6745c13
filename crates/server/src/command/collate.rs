//! String collation for SORT ... ALPHA (without STORE): Redis compares
//! with `strcoll` under the locale `locale-collate` names (Redis 7.2; ""
//! takes it from the environment, as Redis 7.0's `setlocale(LC_COLLATE,
//! "")` at start). Like `strcoll`, a comparison stops at a NUL byte.
//!
//! Redis switches the process's locale with `setlocale`; keel's workers
//! sort concurrently, so the locale is a `locale_t` object of its own,
//! used through `strcoll_l`, swapped whole when the parameter changes. The
//! C and POSIX locales (and C.UTF-8, whose collation is code point order)
//! compare bytes, without the C library.

use std::cmp::Ordering;
use std::ffi::{c_char, c_int, CString};
use std::sync::Arc;

use arc_swap::ArcSwapOption;

extern "C" {
    // glibc's; the libc crate does not bind it.
    fn strcoll_l(a: *const c_char, b: *const c_char, locale: libc::locale_t) -> c_int;
}

/// A C library collation locale, freed when the last sort using it ends.
struct Locale(libc::locale_t);

// SAFETY: a locale_t is immutable once made; strcoll_l only reads it.
unsafe impl Send for Locale {}
// SAFETY: as above: shared use only reads it.
unsafe impl Sync for Locale {}

impl Drop for Locale {
    fn drop(&mut self) {
        // SAFETY: made by newlocale, freed once, here.
        unsafe { libc::freelocale(self.0) }
    }
}

impl Locale {
    /// `name`'s collation ("" from the environment); `None` if the C
    /// library knows no such locale.
    fn new(name: &str) -> Option<Locale> {
        let name = CString::new(name).ok()?;
        // SAFETY: a valid C string; a null base makes a new object.
        let loc =
            unsafe { libc::newlocale(libc::LC_COLLATE_MASK, name.as_ptr(), std::ptr::null_mut()) };
        // (Not `then_some`: a Locale made of a null pointer would be
        // dropped, and freed.)
        if loc.is_null() {
            None
        } else {
            Some(Locale(loc))
        }
    }
}

/// The collation in use: `None` compares bytes.
static CURRENT: ArcSwapOption<Locale> = ArcSwapOption::const_empty();

/// Whether `name` is a locale `locale-collate` may name (Redis answers
/// "Invalid locale name" otherwise).
pub fn valid(name: &str) -> bool {
    Locale::new(name).is_some()
}

/// Uses `name`'s collation from now on (an unknown name leaves it as is;
/// the configuration checked it with [`valid`]).
pub fn set(name: &str) {
    if compares_bytes(name) {
        CURRENT.store(None);
    } else if let Some(loc) = Locale::new(name) {
        CURRENT.store(Some(Arc::new(loc)));
    }
}

/// The locales whose collation is byte order: C, POSIX, C.UTF-8; "" is
/// the environment's (LC_ALL, then LC_COLLATE, then LANG, then C).
fn compares_bytes(name: &str) -> bool {
    let env = |v: &str| std::env::var(v).ok().filter(|s| !s.is_empty());
    let effective = if name.is_empty() {
        env("LC_ALL")
            .or_else(|| env("LC_COLLATE"))
            .or_else(|| env("LANG"))
            .unwrap_or_else(|| "C".into())
    } else {
        name.to_string()
    };
    matches!(
        effective.as_str(),
        "C" | "POSIX" | "C.UTF-8" | "C.utf8" | "C.UTF8" | "C.utf-8"
    )
}

/// The bytes `strcoll` sees: up to the first NUL.
fn c_str(s: &[u8]) -> &[u8] {
    s.iter().position(|&b| b == 0).map_or(s, |n| &s[..n])
}

/// Redis's `strcoll(a, b)` under the current collation.
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    let (a, b) = (c_str(a), c_str(b));
    let guard = CURRENT.load();
    let Some(loc) = guard.as_deref() else {
        return a.cmp(b);
    };
    let (Ok(ca), Ok(cb)) = (CString::new(a), CString::new(b)) else {
        return a.cmp(b);
    };
    // SAFETY: NUL-terminated strings and a live locale object.
    let c = unsafe { strcoll_l(ca.as_ptr(), cb.as_ptr(), loc.0) };
    c.cmp(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_locales_compare_up_to_the_first_nul() {
        assert!(compares_bytes("C") && compares_bytes("POSIX") && compares_bytes("C.UTF-8"));
        assert!(!compares_bytes("en_US.UTF-8"));
        assert_eq!(c_str(b"ab\0z"), b"ab");
        assert_eq!(c_str(b"ab"), b"ab");
    }

    #[test]
    fn unknown_locales_are_invalid() {
        assert!(valid("C"));
        assert!(valid("POSIX"));
        assert!(!valid("xx_YY.nothing"));
        assert!(!valid("with\0nul"));
    }
}
