//! Typed keyspace access for the command families: the value at a key as
//! the type a command expects, Redis's lookupKeyRead / lookupKeyWrite
//! followed by its checkType. WRONGTYPE is answered here and nowhere
//! else for a plain type mismatch.

use super::error::{self, CmdError};
use super::keys::lookup_write;
use crate::storage::hash::Hash;
use crate::storage::keyspace::View;
use crate::storage::list::List;
use crate::storage::set::Set;
use crate::storage::stream::Stream;
use crate::storage::value::{EntryMut, Str, Value};
use crate::storage::zset::ZSet;

/// A type a key can hold.
pub trait Type: Sized {
    /// The value as this type, if it is one.
    fn of(value: &mut Value) -> Option<&mut Self>;
}

macro_rules! value_type {
    ($t:ty, $variant:ident) => {
        impl Type for $t {
            #[inline]
            fn of(value: &mut Value) -> Option<&mut $t> {
                match value {
                    Value::$variant(v) => {
                        // (Through the Box, for the boxed types.)
                        let v: &mut $t = v;
                        Some(v)
                    }
                    _ => None,
                }
            }
        }
    };
}
value_type!(Str, Str);
value_type!(List, List);
value_type!(Hash, Hash);
value_type!(Set, Set);
value_type!(ZSet, ZSet);
value_type!(Stream, Stream);

/// The entry found, as `T`; WRONGTYPE for another type.
#[inline]
pub fn typed<'v, T: Type>(entry: Option<EntryMut<'v>>) -> Result<Option<&'v mut T>, CmdError> {
    match entry {
        None => Ok(None),
        Some(e) => match T::of(e.value) {
            Some(v) => Ok(Some(v)),
            None => Err(error::WRONGTYPE),
        },
    }
}

/// The `T` at `key` for a command that reads it (Redis's lookupKeyRead:
/// counts a keyspace hit or miss); WRONGTYPE for another type.
#[inline]
pub fn read<'v, T: Type>(
    view: &'v mut View,
    db: usize,
    key: &[u8],
    now: u64,
) -> Result<Option<&'v mut T>, CmdError> {
    typed(view.get(db, key, now))
}

/// The `T` at `key` for a command that writes it (Redis's lookupKeyWrite:
/// no hit or miss counted, access time updated); WRONGTYPE for another
/// type.
#[inline]
pub fn write<'v, T: Type>(
    view: &'v mut View,
    db: usize,
    key: &[u8],
    now: u64,
) -> Result<Option<&'v mut T>, CmdError> {
    typed(lookup_write(view, db, key, now))
}

/// A type a write may create at a missing key (Redis's createXObject
/// followed by dbAdd): stored only once the write has put something in it,
/// as Redis never leaves an empty collection at a key.
pub trait Collection: Type {
    fn is_empty(&self) -> bool;
    fn into_value(self) -> Value;
}

macro_rules! collection {
    ($t:ty, $make:expr) => {
        impl Collection for $t {
            #[inline]
            fn is_empty(&self) -> bool {
                <$t>::is_empty(self)
            }
            #[inline]
            fn into_value(self) -> Value {
                $make(self)
            }
        }
    };
}
collection!(List, |v| Value::List(Box::new(v)));
collection!(Hash, Value::Hash);
collection!(Set, |v| Value::Set(Box::new(v)));
collection!(ZSet, |v| Value::ZSet(Box::new(v)));
collection!(Stream, |v| Value::Stream(Box::new(v)));

/// Runs `f` on the `T` at `key` (looked up for a write), or on `make()`
/// when the key is missing, which is then stored at `key` only if `f`
/// succeeds and leaves it non-empty. One lookup either way; WRONGTYPE for
/// a key of another type.
#[inline]
pub fn create_or<T: Collection, R>(
    view: &mut View,
    db: usize,
    key: &[u8],
    now: u64,
    make: impl FnOnce() -> T,
    f: impl FnOnce(&mut T) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    if let Some(v) = write::<T>(view, db, key, now)? {
        return f(v);
    }
    let mut fresh = make();
    let r = f(&mut fresh)?;
    if !fresh.is_empty() {
        view.set(db, key, fresh.into_value(), 0, now);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::keyspace::Keyspace;

    #[test]
    fn create_or_stores_a_new_value_only_when_the_write_leaves_something() {
        let ks = Keyspace::new(1);
        let mut v = ks.lock_all();
        // Nothing added: no key left behind.
        let r = create_or(&mut v, 0, b"s", 0, Set::new, |_| Ok(7));
        assert_eq!(r, Ok(7));
        assert!(v.get(0, b"s", 0).is_none());
        // A failing write stores nothing either.
        let r: Result<(), _> = create_or(&mut v, 0, b"s", 0, Set::new, |s| {
            s.add(b"a", &Default::default());
            Err(error::SYNTAX)
        });
        assert_eq!(r, Err(error::SYNTAX));
        assert!(v.get(0, b"s", 0).is_none());
        // Added: stored, and found again by the next write.
        create_or(&mut v, 0, b"s", 0, Set::new, |s| {
            Ok(s.add(b"a", &Default::default()))
        })
        .unwrap();
        let added = create_or(
            &mut v,
            0,
            b"s",
            0,
            || unreachable!(),
            |s: &mut Set| Ok(s.add(b"b", &Default::default())),
        );
        assert_eq!(added, Ok(true));
        assert_eq!(
            read::<Set>(&mut v, 0, b"s", 0).unwrap().map(|s| s.len()),
            Some(2)
        );
        // Another type: WRONGTYPE, nothing made.
        let r = create_or(&mut v, 0, b"s", 0, || unreachable!(), |_: &mut Hash| Ok(()));
        assert_eq!(r, Err(error::WRONGTYPE));
    }
}
