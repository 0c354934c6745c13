//! A hash. Pure data structure: no RESP, no I/O.
//!
//! Placeholder until the hash family lands; the type exists so the
//! keyspace and `TYPE`/`OBJECT ENCODING` already know it.

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hash {}

impl Hash {
    pub fn encoding(&self) -> &'static str {
        "listpack"
    }
}
