//! Pure data: the sharded keyspace, values, slots. No RESP, no I/O; the
//! command layer is the only user.

pub mod keyspace;
pub mod slot;
pub mod value;
