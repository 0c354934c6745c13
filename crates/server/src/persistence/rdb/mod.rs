//! Redis's RDB snapshot format: what SAVE/BGSAVE write to `dbfilename`,
//! what an AOF base (`aof-use-rdb-preamble`) holds, and what the server
//! loads at start.
//!
//! keel writes RDB version 10 (Redis 7.0) or 12 (Redis 7.4), as
//! `redis-version` presents, so a Redis server of that version loads
//! keel's files and keel loads Redis's: it reads every type and encoding
//! Redis 2.x to 7.4 write (hash-field TTLs included) (strings raw, integer and LZF; lists, sets,
//! sorted sets and hashes in their plain, ziplist, zipmap, intset,
//! quicklist and listpack forms; streams with consumer groups) and every
//! opcode but module data.
//!
//! ```text
//! file    := "REDIS" version:4 digits  item*  EOF(255) crc64:u64le
//! item    := AUX(250) string string | SELECTDB(254) len
//!          | RESIZEDB(251) len len | FUNCTION2(245) string
//!          | [EXPIRETIME_MS(252) u64le | EXPIRETIME(253) u32le]
//!            [IDLE(248) len | FREQ(249) u8]  type:u8 key:string value
//! ```
//!
//! Values are written in the encoding Redis 7.0 writes for the same
//! encoding in memory (listpack hashes and sorted sets, intsets, quicklist
//! nodes, stream node listpacks; plain forms for hash tables and
//! skiplists). The same encoder makes DUMP payloads (`dump_payload`:
//! type byte, value, RDB version, CRC64), which RESTORE reads back with
//! `restore_payload`.

mod lzf_compress;
mod packed;
mod read;
mod write;

pub use read::{
    check, functions_of_payload, load, restore_payload, restore_trusted_payload, verify_payload,
    Loaded, PayloadError, RdbError,
};
pub use write::{dump_payload, functions_payload, seal_payload, tier_payload, Writer};

/// The version keel writes when it presents Redis 7.0 (`redis-version`).
const VERSION_7_0: u32 = 10;
/// The version Redis 7.4 writes (hash-field TTLs came with it).
const VERSION_7_4: u32 = 12;
/// The newest version keel reads (Redis 7.4's).
const VERSION_READ_MAX: u32 = 12;

/// The version written in a file's header and a DUMP payload's footer,
/// and the newest a RESTORE accepts: that of the Redis version presented,
/// so a Redis 7.0 replica or RESTORE takes keel's images while keel
/// presents 7.0, and keel refuses what Redis 7.0 refuses. A hash with
/// field TTLs has no 7.0 encoding: it is written as Redis 7.4 writes it
/// (types 24, 25) whatever the version, which a 7.0 reader refuses rather
/// than losing the TTLs.
fn version_written() -> u32 {
    if crate::redis_version_num() >= 0x0007_0400 {
        VERSION_7_4
    } else {
        VERSION_7_0
    }
}

// Value types.
const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_MODULE: u8 = 6;
const TYPE_MODULE_2: u8 = 7;
const TYPE_HASH_ZIPMAP: u8 = 9;
const TYPE_LIST_ZIPLIST: u8 = 10;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_ZSET_ZIPLIST: u8 = 12;
const TYPE_HASH_ZIPLIST: u8 = 13;
const TYPE_LIST_QUICKLIST: u8 = 14;
const TYPE_STREAM_LISTPACKS: u8 = 15;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;
const TYPE_STREAM_LISTPACKS_2: u8 = 19;
const TYPE_SET_LISTPACK: u8 = 20;
const TYPE_STREAM_LISTPACKS_3: u8 = 21;
const TYPE_HASH_METADATA_PRE_GA: u8 = 22;
const TYPE_HASH_LISTPACK_EX_PRE_GA: u8 = 23;
const TYPE_HASH_METADATA: u8 = 24;
const TYPE_HASH_LISTPACK_EX: u8 = 25;

// Opcodes.
const OP_FUNCTION_2: u8 = 245;
const OP_FUNCTION_PRE_GA: u8 = 246;
const OP_MODULE_AUX: u8 = 247;
const OP_IDLE: u8 = 248;
const OP_FREQ: u8 = 249;
const OP_AUX: u8 = 250;
const OP_RESIZEDB: u8 = 251;
const OP_EXPIRETIME_MS: u8 = 252;
const OP_EXPIRETIME: u8 = 253;
const OP_SELECTDB: u8 = 254;
const OP_EOF: u8 = 255;

// Length encodings: the two top bits of the first byte.
const LEN_6BIT: u8 = 0;
const LEN_14BIT: u8 = 1;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;
const LEN_ENCVAL: u8 = 3;
// Special string encodings (after LEN_ENCVAL).
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

// Quicklist 2 node containers.
const QUICKLIST_NODE_PLAIN: u64 = 1;
const QUICKLIST_NODE_PACKED: u64 = 2;

// Stream entry flags inside a node's listpack.
const STREAM_ITEM_DELETED: i64 = 1;
const STREAM_ITEM_SAMEFIELDS: i64 = 2;

/// CRC-64/Jones as Redis's `crc64` (reflected, polynomial
/// 0xad93d23594c935a9, no final xor), table-driven 16 bytes at a time by
/// the `crc` crate.
static CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

#[cfg(test)]
mod tests;
