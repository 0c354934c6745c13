//! A set. Pure data structure: no RESP, no I/O.
//!
//! Placeholder until the set family lands; the type exists so the
//! keyspace and `TYPE`/`OBJECT ENCODING` already know it.

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Set {}

impl Set {
    pub fn encoding(&self) -> &'static str {
        "intset"
    }
}
