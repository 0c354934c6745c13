//! A sorted set. Pure data structure: no RESP, no I/O.
//!
//! Placeholder until the zset family lands; the type exists so the
//! keyspace and `TYPE`/`OBJECT ENCODING` already know it.

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ZSet {}

impl ZSet {
    pub fn encoding(&self) -> &'static str {
        "listpack"
    }
}
