//! A stream. Pure data structure: no RESP, no I/O.
//!
//! Placeholder until the stream family lands; the type exists so the
//! keyspace and `TYPE`/`OBJECT ENCODING` already know it.

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stream {}
