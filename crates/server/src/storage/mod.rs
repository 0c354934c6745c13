//! Pure data: the sharded keyspace, values, slots, and algorithms over them
//! (LCS). No RESP, no I/O; the
//! command layer is the only user.

pub mod access;
pub mod bitmap;
pub mod field_ttl;
pub mod geohash;
pub mod hash;
pub mod hll;
pub mod keymap;
pub mod keyspace;
pub mod lcs;
pub mod list;
pub mod set;
pub mod stream;
pub mod value;
pub mod varint;
pub mod zset;
pub mod zset_algebra;
