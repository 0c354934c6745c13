//! A list: quicklist-style nodes. Pure data structure: no RESP, no I/O.
//!
//! Placeholder until the list family lands; the type exists so the
//! keyspace and `TYPE`/`OBJECT ENCODING` already know it.

#[derive(Debug, Clone, PartialEq, Default)]
pub struct List {}

impl List {
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }
}
