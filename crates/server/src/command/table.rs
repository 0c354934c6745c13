//! The command table: every command's metadata (arity, flags, key specs,
//! docs) and its handler, in one place that drives dispatch, `COMMAND` and
//! key extraction.
//!
//! Metadata is Redis 7.0's own (7.4.1's under `redis-version 7.4.1`),
//! captured from `redis-server` into `redis_commands.json` (and
//! `redis74_commands.json`) by `tools/gen_command_specs.py`, so keel's COMMAND
//! replies and key positions cannot drift from Redis's. Families register
//! handlers by name; only registered commands (and subcommands) exist.

use std::collections::HashMap;

use serde_json::Value as Json;

use super::Handler;

static REDIS_COMMANDS: &str = include_str!("redis_commands.json");
/// The same from redis-server 7.4.1, served under `redis-version 7.4.1`:
/// arity, flags, ACL categories, key specs and docs as 7.4 gives them.
static REDIS_74_COMMANDS: &str = include_str!("redis74_commands.json");
/// Commands and subcommands newer than Redis 7.0 that keel implements
/// (CLIENT SETINFO, from Redis 7.2), with the metadata the newer Redis
/// gives them: `name` for a command (an `info`/`docs` entry shaped as in
/// `redis_commands.json`), `container|name` for a subcommand.
static NEWER_SUBCOMMANDS: &str = include_str!("keel_commands.json");

/// Command flags: every flag of Redis 7.0's COMMAND INFO, then keel's own
/// columns (set at registration by the family that owns the command).
/// The commands Redis 7.0 flags CMD_MAY_REPLICATE (src/commands/*.json)
/// without a `write` flag: they may propagate something although they are
/// not writes.
pub const MAY_REPLICATE_7_0: &[&str] = &[
    "eval",
    "evalsha",
    "fcall",
    "function|delete",
    "function|flush",
    "function|load",
    "function|restore",
    "pfcount",
    "publish",
    "script|flush",
    "script|load",
    "spublish",
];

/// What a script declares of itself that changes its command's flags
/// (see `Call::declare_flags`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptFlags {
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
}

pub mod flag {
    pub const WRITE: u32 = 1;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const FAST: u32 = 1 << 9;
    pub const NO_MULTI: u32 = 1 << 10;
    pub const MOVABLEKEYS: u32 = 1 << 11;
    pub const NO_AUTH: u32 = 1 << 12;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 13;
    pub const ALLOW_BUSY: u32 = 1 << 14;
    pub const ASKING: u32 = 1 << 15;
    pub const NO_ASYNC_LOADING: u32 = 1 << 16;
    pub const SKIP_MONITOR: u32 = 1 << 17;
    pub const SKIP_SLOWLOG: u32 = 1 << 18;
    pub const MAY_REPLICATE: u32 = 1 << 19;
    pub const MODULE: u32 = 1 << 20;
    pub const PROTECTED: u32 = 1 << 21;

    /// keel's column: runs at once inside MULTI instead of being queued
    /// (Redis's processCommand names EXEC, DISCARD, MULTI, WATCH, QUIT and
    /// RESET).
    pub const TX_CONTROL: u32 = 1 << 30;
    /// keel's column: allowed to a RESP2 client in subscribed mode (the
    /// (un)subscribe commands, PING, QUIT, RESET).
    pub const SUBSCRIBED_OK: u32 = 1 << 31;
    /// keel's column: EXEC, which the gates treat as a write when writes
    /// are queued (Redis's processCommand names execCommand).
    pub const EXEC: u32 = 1 << 29;
    /// keel's column: refused with MISCONF like a write (Redis's
    /// processCommand names pingCommand, so health checks see it).
    pub const MISCONF_TOO: u32 = 1 << 28;
    /// keel's column: the handler reads or locks every shard itself, not
    /// by key specs (INFO, MEMORY STATS, BGSAVE...). It runs holding no
    /// shard, or every shard: EXEC and a script lock them all for it, as
    /// it would deadlock waiting for a shard they hold.
    pub const EVERY_SHARD: u32 = 1 << 27;
    /// keel's column: EVAL, EVALSHA, FCALL and their _RO forms (MONITOR
    /// shows them before the commands they run).
    pub const SCRIPT_CALL: u32 = 1 << 26;
    /// keel's column: Redis 7.0's internal CMD_MAY_REPLICATE, which its
    /// COMMAND INFO does not show ([`super::MAY_REPLICATE_7_0`]): a
    /// replica's or MONITOR's connection may not run them.
    pub const REPLICATES: u32 = 1 << 25;

    pub fn from_name(s: &str) -> u32 {
        match s {
            "write" => WRITE,
            "readonly" => READONLY,
            "denyoom" => DENYOOM,
            "admin" => ADMIN,
            "pubsub" => PUBSUB,
            "noscript" => NOSCRIPT,
            "blocking" => BLOCKING,
            "loading" => LOADING,
            "stale" => STALE,
            "fast" => FAST,
            "no_multi" => NO_MULTI,
            "movablekeys" => MOVABLEKEYS,
            "no_auth" => NO_AUTH,
            "no_mandatory_keys" => NO_MANDATORY_KEYS,
            "allow_busy" => ALLOW_BUSY,
            "asking" => ASKING,
            "no_async_loading" => NO_ASYNC_LOADING,
            "skip_monitor" => SKIP_MONITOR,
            "skip_slowlog" => SKIP_SLOWLOG,
            "may_replicate" => MAY_REPLICATE,
            "module" => MODULE,
            "protected" => PROTECTED,
            _ => 0,
        }
    }
}

/// ACL categories (`@read`, `@write`...), one bit each, in the order of
/// Redis's ACL CAT.
pub mod category {
    pub const NAMES: [&str; 21] = [
        "keyspace",
        "read",
        "write",
        "set",
        "sortedset",
        "list",
        "hash",
        "string",
        "bitmap",
        "hyperloglog",
        "geo",
        "stream",
        "pubsub",
        "admin",
        "fast",
        "slow",
        "blocking",
        "dangerous",
        "connection",
        "transaction",
        "scripting",
    ];

    /// The bit of `@name` (or `name`); 0 for an unknown category.
    pub fn from_name(s: &str) -> u32 {
        let s = s.strip_prefix('@').unwrap_or(s);
        NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(s))
            .map_or(0, |i| 1 << i)
    }
}

/// Which shards a command locks before its handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Touches no key (PING, CONFIG, CLIENT...).
    None,
    /// The shards of the keys its key specs name.
    Keys,
    /// Every shard (KEYS, SCAN, FLUSHDB, SWAPDB...).
    All,
}

#[derive(Debug, Clone)]
enum BeginSearch {
    Index(i64),
    Keyword { keyword: String, startfrom: i64 },
    Unknown,
}

#[derive(Debug, Clone)]
enum FindKeys {
    Range {
        lastkey: i64,
        keystep: i64,
        limit: i64,
    },
    Keynum {
        keynumidx: i64,
        firstkey: i64,
        keystep: i64,
    },
    Unknown,
}

#[derive(Debug, Clone)]
struct KeySpec {
    begin: BeginSearch,
    find: FindKeys,
    /// False for read-only keys (flag RO): writes touch only the others
    /// (WATCH invalidation).
    write: bool,
    /// The key spec's flags (RO, RW, OW, RM; access, update, insert,
    /// delete...) in Redis's order, for COMMAND GETKEYSANDFLAGS.
    flags: Vec<String>,
    /// Flag `not_key`: names something else (a shard channel).
    not_key: bool,
    /// Flag `incomplete`: may not find every key.
    incomplete: bool,
    /// Flag `variable_flags`: the flags depend on other arguments.
    variable_flags: bool,
    /// What ACL key patterns must allow (`acl::READ`/`acl::WRITE`).
    acl_access: u8,
    /// The command reads or changes the key's value (see [`needs_value`]).
    needs_value: bool,
}

/// Commands whose handlers read or change only a key's metadata (expiry,
/// type, encoding, access clock), or move the entry whole, whatever their
/// key specs say (`access`, `update`, or `RO` alone): a value on disk
/// stays there.
const METADATA_ONLY: &[&str] = &[
    "exists",
    "type",
    "watch",
    "ttl",
    "pttl",
    "expiretime",
    "pexpiretime",
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "persist",
    "touch",
    "rename",
    "renamenx",
    "move",
    "object|encoding",
    "object|freq",
    "object|idletime",
];

/// Whether a key with these key-spec flags needs its value in memory for
/// the command to run: not when the command only overwrites the key
/// (`OW`: SET) or removes it without reading it (`RM` without `access`:
/// DEL). `RO` without `access` is Redis's "returns no user data", yet
/// LLEN, SCARD, STRLEN, SISMEMBER, MEMORY USAGE... read the value for
/// what they do return: those need it too, and the few that read
/// metadata alone (EXISTS, TYPE) are in [`METADATA_ONLY`]. A key whose
/// flags are unknown (a key finder's) needs it.
fn needs_value<'a>(flags: impl Iterator<Item = &'a str>) -> bool {
    let (mut ow, mut rm, mut access) = (false, false, false);
    for f in flags {
        match f {
            "OW" => ow = true,
            "RM" => rm = true,
            "access" => access = true,
            _ => {}
        }
    }
    !(ow || (rm && !access))
}

/// What a key's flags need from ACL key patterns, as Redis's
/// ACLSelectorCheckKey reads them: `access` reads, `insert`, `delete` and
/// `update` write.
fn acl_access<'a>(flags: impl Iterator<Item = &'a str>) -> u8 {
    flags.fold(0, |acc, f| match f {
        "access" => acc | crate::acl::READ,
        "insert" | "delete" | "update" => acc | crate::acl::WRITE,
        _ => acc,
    })
}

/// Redis's `getkeys_proc` for the commands keel implements that have one:
/// what COMMAND GETKEYS falls back on when the key specs cannot tell.
#[derive(Debug, Clone, Copy)]
enum KeysProc {
    /// genericGetKeys: `count` keys from `first` (the count read with
    /// atoi), then the destination at `store` if non-zero.
    Generic {
        store: usize,
        count: usize,
        first: usize,
    },
    /// xreadGetKeys: the first half of the arguments after STREAMS.
    XRead,
    /// setGetKeys: the key, RW with GET, OW without.
    Set,
    /// georadiusGetKeys: the key, then the last STORE/STOREDIST key.
    GeoRadius,
    /// sortGetKeys (`store`) and sortROGetKeys: the sorted key, then the
    /// destination of the last STORE.
    Sort { store: bool },
    /// migrateGetKeys: the key at 3, or with an empty key there the
    /// arguments after KEYS (ACL checks them too).
    Migrate,
    /// bitfieldGetKeys: the key, read-only while every operation is a
    /// GET (or OVERFLOW), else read-write.
    Bitfield,
}

/// Whether BITFIELD only reads, as bitfieldGetKeys decides: GETs and
/// OVERFLOWs with their arguments all there; a SET, an INCRBY or anything
/// else (a syntax error included) writes.
fn bitfield_read_only(argv: &[&[u8]]) -> bool {
    let mut i = 2;
    while i < argv.len() {
        let (a, rest) = (argv[i], argv.len() - i - 1);
        if a.eq_ignore_ascii_case(b"get") && rest >= 2 {
            i += 3;
        } else if a.eq_ignore_ascii_case(b"overflow") && rest >= 1 {
            i += 2;
        } else {
            return false;
        }
    }
    true
}

/// The destination SORT writes, as sortGetKeys finds it: options are
/// skipped with their arguments (LIMIT 2, GET and BY 1), anything else
/// is taken as a word alone, and the last STORE followed by an argument
/// wins.
fn sort_store_key(argv: &[&[u8]]) -> Option<usize> {
    let mut stored = None;
    let mut i = 2;
    while i < argv.len() {
        let a = argv[i];
        if a.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"store") && i + 1 < argv.len() {
            // The destination itself is looked at next, as an option.
            stored = Some(i + 1);
        }
        i += 1;
    }
    stored
}

/// The destination GEORADIUS[BYMEMBER] writes: the key after the last
/// STORE or STOREDIST (its key specs name the first of each).
fn georadius_store_key(argv: &[&[u8]]) -> Option<usize> {
    let mut stored = None;
    let mut i = 5;
    while i < argv.len() {
        let a = argv[i];
        if (a.eq_ignore_ascii_case(b"store") || a.eq_ignore_ascii_case(b"storedist"))
            && i + 1 < argv.len()
        {
            stored = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    stored
}

impl KeysProc {
    fn for_command(name: &str) -> Option<KeysProc> {
        let generic = |store, count, first| {
            Some(KeysProc::Generic {
                store,
                count,
                first,
            })
        };
        match name {
            "zunionstore" | "zinterstore" | "zdiffstore" => generic(1, 2, 3),
            "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" | "lmpop" | "zmpop" => {
                generic(0, 1, 2)
            }
            "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" | "blmpop"
            | "bzmpop" => generic(0, 2, 3),
            "xread" | "xreadgroup" => Some(KeysProc::XRead),
            "set" => Some(KeysProc::Set),
            "georadius" | "georadiusbymember" => Some(KeysProc::GeoRadius),
            "sort" => Some(KeysProc::Sort { store: true }),
            "sort_ro" => Some(KeysProc::Sort { store: false }),
            "migrate" => Some(KeysProc::Migrate),
            "bitfield" => Some(KeysProc::Bitfield),
            _ => None,
        }
    }

    /// Key positions and their flags (none, as Redis's procs give, but
    /// for SET's and SORT's).
    fn keys(self, argv: &[&[u8]]) -> Vec<(usize, Vec<&'static str>)> {
        let argc = argv.len();
        match self {
            KeysProc::Generic {
                store,
                count,
                first,
            } => {
                let Some(arg) = argv.get(count) else {
                    return Vec::new();
                };
                let num = crate::num::strtol::atoi(arg);
                if num < 1 || num as i64 > (argc as i64 - first as i64) {
                    return Vec::new();
                }
                let mut out: Vec<(usize, Vec<&str>)> =
                    (0..num as usize).map(|i| (first + i, Vec::new())).collect();
                if store != 0 {
                    out.push((store, Vec::new()));
                }
                out
            }
            KeysProc::XRead => {
                let mut streams = None;
                let mut i = 1;
                while i < argc {
                    let a = argv[i];
                    if a.eq_ignore_ascii_case(b"block") || a.eq_ignore_ascii_case(b"count") {
                        i += 1;
                    } else if a.eq_ignore_ascii_case(b"group") {
                        i += 2;
                    } else if a.eq_ignore_ascii_case(b"noack") {
                    } else if a.eq_ignore_ascii_case(b"streams") {
                        streams = Some(i);
                        break;
                    } else {
                        break;
                    }
                    i += 1;
                }
                let Some(pos) = streams else {
                    return Vec::new();
                };
                let num = argc - pos - 1;
                if num == 0 || !num.is_multiple_of(2) {
                    return Vec::new();
                }
                (pos + 1..pos + 1 + num / 2)
                    .map(|p| (p, Vec::new()))
                    .collect()
            }
            KeysProc::Migrate => {
                let (mut first, mut num) = (3, 1);
                let mut i = 6;
                while i < argc {
                    let a = argv[i];
                    if a.eq_ignore_ascii_case(b"keys") {
                        if argv[3].is_empty() {
                            first = i + 1;
                            num = argc - first;
                        } else {
                            // MIGRATE answers the syntax error itself.
                            num = 0;
                        }
                        break;
                    }
                    if a.eq_ignore_ascii_case(b"auth") {
                        i += 1;
                    } else if a.eq_ignore_ascii_case(b"auth2") {
                        i += 2;
                    }
                    i += 1;
                }
                (first..first + num)
                    .filter(|&p| p < argc)
                    .map(|p| (p, vec!["RW", "access", "delete"]))
                    .collect()
            }
            KeysProc::Bitfield => {
                let flags = if bitfield_read_only(argv) {
                    vec!["RO", "access"]
                } else {
                    vec!["RW", "access", "update"]
                };
                vec![(1, flags)]
            }
            KeysProc::Set => {
                let get = argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
                let flags = if get {
                    vec!["RW", "access", "update"]
                } else {
                    vec!["OW", "update"]
                };
                vec![(1, flags)]
            }
            KeysProc::GeoRadius => {
                let mut out = vec![(1, Vec::new())];
                out.extend(georadius_store_key(argv).map(|i| (i, Vec::new())));
                out
            }
            // Redis's sort procs give flags, as SET's.
            KeysProc::Sort { store } => {
                let mut out = vec![(1, vec!["RO", "access"])];
                if store {
                    out.extend(sort_store_key(argv).map(|i| (i, vec!["OW", "update"])));
                }
                out
            }
        }
    }
}

pub struct Command {
    /// Full lower-case name: `get`, `client|kill`.
    pub name: String,
    pub arity: i64,
    pub flags: u32,
    /// ACL categories (bits of [`category`]).
    pub acl_categories: u32,
    pub access: Access,
    pub handler: Option<Handler>,
    /// How the command is answered while a script holds its connection's
    /// worker (see `net::busy`).
    pub while_busy: WhileBusy,
    /// Index into the per-thread statistics arrays.
    pub id: usize,
    /// Index into the ACL catalog (`acl::Catalog`).
    pub acl_id: usize,
    key_specs: Vec<KeySpec>,
    /// Position of the only key, for the common one-key commands: lets
    /// dispatch lock without collecting positions.
    pub single_key: Option<usize>,
    pub subcommands: HashMap<Vec<u8>, usize>,
    /// Redis's getkeys_proc for this command, if it has one.
    keys_proc: Option<KeysProc>,
    /// The handler reads its keys' metadata only (see [`METADATA_ONLY`]).
    metadata_only: bool,
    /// keel's column: the checks the handler makes of its arguments
    /// before it reads any key (as Redis's command does), false when they
    /// fail. A request that fails them replies its error without the disk
    /// tier reading any value for it (`tier::load`): a GETBIT past the
    /// end of a 512 MB bitmap on disk reads nothing.
    pub args_ok: Option<ArgsCheck>,
    /// COMMAND INFO entry (tagged JSON), subcommands filtered to those keel
    /// implements; only while the table is built, then encoded into
    /// `info_resp` (the parsed JSON of the whole table took 14 MB, more
    /// than a million small keys' worth of the dataset).
    info: Json,
    docs: Option<Json>,
    /// The COMMAND INFO reply for RESP2 and RESP3.
    info_resp: [Box<[u8]>; 2],
    /// The COMMAND DOCS reply, RESP2 and RESP3.
    docs_resp: Option<[Box<[u8]>; 2]>,
}

impl Command {
    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// This command's COMMAND INFO entry, encoded for `proto`.
    pub fn info_reply(&self, proto: u8) -> &[u8] {
        &self.info_resp[usize::from(proto >= 3)]
    }

    /// This command's COMMAND DOCS entry, encoded for `proto`.
    pub fn docs_reply(&self, proto: u8) -> Option<&[u8]> {
        self.docs_resp
            .as_ref()
            .map(|d| &*d[usize::from(proto >= 3)])
    }

    /// Encodes the metadata replies and drops the JSON they came from.
    fn encode_metadata(&mut self) {
        let enc = |j: &Json, proto: u8| {
            let mut v = Vec::new();
            write_tagged(&mut v, j, proto);
            v.into_boxed_slice()
        };
        self.info_resp = [enc(&self.info, 2), enc(&self.info, 3)];
        self.docs_resp = self.docs.as_ref().map(|d| [enc(d, 2), enc(d, 3)]);
        self.info = Json::Null;
        self.docs = None;
    }

    /// Positions of the key arguments in `argv`, following Redis's key-spec
    /// rules (`getKeysUsingKeySpecs`). Out-of-range positions are skipped:
    /// the handler reports the syntax error.
    pub fn key_positions(&self, argv: &[&[u8]], out: &mut Vec<usize>) {
        self.positions(argv, out, false)
    }

    /// Positions of the keys this command may modify (key specs not
    /// flagged RO).
    pub fn written_key_positions(&self, argv: &[&[u8]], out: &mut Vec<usize>) {
        self.positions(argv, out, true)
    }

    /// Whether the command has key specs at all (SPUBLISH's channel
    /// counts): cluster mode routes it by them.
    pub fn has_key_specs(&self) -> bool {
        self.keys_proc.is_some() || !self.key_specs.is_empty()
    }

    /// Whether the command takes key arguments, as Redis's
    /// doesCommandHaveKeys: a key spec not flagged `not_key` (SPUBLISH's
    /// channel is not a key).
    pub fn has_key_args(&self) -> bool {
        self.keys_proc.is_some() || self.key_specs.iter().any(|s| !s.not_key)
    }

    /// Calls `f(position, access)` for each key ACL checks (the keys of
    /// [`Self::keys_with_flags`], with what each does to its key) until `f`
    /// returns false. The common one-key command costs no allocation.
    #[inline]
    pub fn for_each_key_access(&self, argv: &[&[u8]], mut f: impl FnMut(usize, u8) -> bool) {
        if let (Some(i), [spec]) = (self.single_key, self.key_specs.as_slice()) {
            if !spec.variable_flags && !spec.not_key && !spec.incomplete && self.keys_proc.is_none()
            {
                if i < argv.len() {
                    f(i, spec.acl_access);
                }
                return;
            }
        }
        // The key specs, when they all apply (what `keys_from_specs`
        // decides), walked twice rather than collected: no allocation.
        let specs = || self.key_specs.iter().filter(|s| !s.not_key);
        let argc = argv.len() as i64;
        let from_specs = !self.key_specs.iter().any(|s| s.variable_flags)
            && specs().all(|spec| match spec.range(argv) {
                SpecRange::Absent => true,
                SpecRange::Invalid => false,
                SpecRange::Keys { first, last, .. } => {
                    last < argc && last >= first && !spec.incomplete
                }
            });
        if from_specs {
            for spec in specs() {
                if let SpecRange::Keys { first, last, step } = spec.range(argv) {
                    let mut i = first;
                    while i <= last {
                        if !f(i as usize, spec.acl_access) {
                            return;
                        }
                        i += step;
                    }
                }
            }
            return;
        }
        for (pos, flags) in self.keys_with_flags(argv) {
            if !f(pos, acl_access(flags.into_iter())) {
                return;
            }
        }
    }

    /// Calls `f(position)` for each key whose value the command needs in
    /// memory (see [`needs_value`]): the disk tier loads those before the
    /// request runs. The common one-key command costs no allocation.
    pub fn for_each_key_needing_value(&self, argv: &[&[u8]], mut f: impl FnMut(usize)) {
        if self.metadata_only {
            return;
        }
        if let (Some(i), [spec]) = (self.single_key, self.key_specs.as_slice()) {
            if !spec.variable_flags && !spec.not_key && !spec.incomplete && self.keys_proc.is_none()
            {
                if i < argv.len() && spec.needs_value {
                    f(i);
                }
                return;
            }
        }
        // Each spec on its own, with the keys of those that fit (a spec
        // that does not fit names none: the handler refuses the request,
        // PFMERGE's lone destination aside, which Redis's COMMAND GETKEYS
        // refuses too). Where the flags vary with the arguments (SET,
        // BITFIELD) or a spec is incomplete, the command's key finder
        // says; without one, the widest flags the spec declares.
        let argc = argv.len() as i64;
        let finder = self.keys_proc.filter(|_| {
            self.key_specs
                .iter()
                .any(|s| !s.not_key && (s.variable_flags || s.incomplete))
        });
        for spec in self.key_specs.iter().filter(|s| !s.not_key) {
            if finder.is_some() && (spec.variable_flags || spec.incomplete) {
                continue;
            }
            if let SpecRange::Keys { first, last, step } = spec.range(argv) {
                let mut i = first;
                while i <= last && i < argc {
                    if spec.needs_value {
                        f(i as usize);
                    }
                    i += step;
                }
            }
        }
        for (pos, flags) in finder.map(|p| p.keys(argv)).unwrap_or_default() {
            if needs_value(flags.into_iter()) {
                f(pos);
            }
        }
    }

    /// The keys COMMAND GETKEYS and GETKEYSANDFLAGS report, with their
    /// flags, as Redis's getKeysFromCommandWithSpecs: from the key specs
    /// when they all apply cleanly and their flags do not vary; otherwise
    /// from the command's own key finder (whose keys have no flags, but
    /// SET's and SORT's), or none.
    pub fn keys_with_flags(&self, argv: &[&[u8]]) -> Vec<(usize, Vec<&str>)> {
        let has_varflags = self.key_specs.iter().any(|s| s.variable_flags);
        if !has_varflags {
            if let Some(keys) = self.keys_from_specs(argv) {
                return keys
                    .into_iter()
                    .map(|(p, spec)| (p, spec.flags.iter().map(String::as_str).collect()))
                    .collect();
            }
        }
        match self.keys_proc {
            Some(proc_) => proc_.keys(argv),
            None => Vec::new(),
        }
    }

    /// Redis's getKeysUsingKeySpecs without partial results: `None` when a
    /// spec does not fit the arguments (a position out of range, an
    /// unreadable key count, an incomplete spec).
    fn keys_from_specs(&self, argv: &[&[u8]]) -> Option<Vec<(usize, &KeySpec)>> {
        let mut out = Vec::new();
        for spec in self.key_specs.iter().filter(|s| !s.not_key) {
            match spec.range(argv) {
                SpecRange::Absent => continue,
                SpecRange::Invalid => return None,
                SpecRange::Keys { first, last, step } => {
                    if last >= argv.len() as i64 || last < first {
                        return None;
                    }
                    let mut i = first;
                    while i <= last {
                        out.push((i as usize, spec));
                        i += step;
                    }
                }
            }
            if spec.incomplete {
                return None;
            }
        }
        Some(out)
    }

    /// Every position the specs name that lies inside `argv` (partial
    /// results, as Redis's GET_KEYSPEC_RETURN_PARTIAL), the `not_key`
    /// specs included: what dispatch locks and what a write touches. A
    /// spec that does not fit is skipped; the handler reports the error.
    fn positions(&self, argv: &[&[u8]], out: &mut Vec<usize>, only_written: bool) {
        let argc = argv.len() as i64;
        for spec in self.key_specs.iter().filter(|s| !only_written || s.write) {
            if let SpecRange::Keys { first, last, step } = spec.range(argv) {
                let mut i = first;
                while i <= last && i < argc {
                    out.push(i as usize);
                    i += step;
                }
            }
        }
        // The destination GEORADIUS writes may be one its specs do not
        // name (STORE given twice): locked and touched all the same.
        if let Some(KeysProc::GeoRadius) = self.keys_proc {
            if let Some(i) = georadius_store_key(argv).filter(|i| !out.contains(i)) {
                out.push(i);
            }
        }
    }
}

/// Where one key spec finds its keys in an argument vector.
enum SpecRange {
    /// The spec's keyword is not there: it names no key.
    Absent,
    /// It cannot be applied (unknown type, unreadable key count, first key
    /// outside the arguments).
    Invalid,
    /// Keys at `first`, `first + step`, ... up to `last` (which may lie
    /// past the arguments: callers decide whether that is an error).
    Keys { first: i64, last: i64, step: i64 },
}

impl KeySpec {
    /// The one key-spec evaluator (Redis's getKeysUsingKeySpecs), used by
    /// locking, WATCH, COMMAND GETKEYS and, later, ACL key patterns and
    /// cluster slots. Arithmetic saturates: a key count comes from the
    /// client.
    fn range(&self, argv: &[&[u8]]) -> SpecRange {
        let argc = argv.len() as i64;
        let first = match &self.begin {
            BeginSearch::Index(i) => *i,
            BeginSearch::Keyword { keyword, startfrom } => {
                let (start, end) = if *startfrom > 0 {
                    (*startfrom, argc - 1)
                } else {
                    (argc + startfrom, 1)
                };
                // As Redis's loop: the end index itself is not tried.
                let mut found = None;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if argv[i as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
                        found = Some(i + 1);
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                match found {
                    Some(f) => f,
                    None => return SpecRange::Absent,
                }
            }
            BeginSearch::Unknown => return SpecRange::Invalid,
        };
        let (first, last, step) = match &self.find {
            FindKeys::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let last = if *lastkey >= 0 {
                    first + lastkey
                } else if *limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, *keystep)
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let idx = first + keynumidx;
                if *keynumidx >= argc || idx >= argc || idx < 0 {
                    return SpecRange::Invalid;
                }
                let Some(numkeys) = resp::parse_i64(argv[idx as usize]).filter(|n| *n >= 0) else {
                    return SpecRange::Invalid;
                };
                let f = first + firstkey;
                (f, f.saturating_add(numkeys) - 1, *keystep)
            }
            FindKeys::Unknown => return SpecRange::Invalid,
        };
        if first >= argc || first < 1 {
            return SpecRange::Invalid;
        }
        SpecRange::Keys {
            first,
            last,
            step: step.max(1),
        }
    }
}

pub struct CommandTable {
    commands: Vec<Command>,
    /// Every command Redis knows, numbered for ACL rules.
    pub acl: crate::acl::Catalog,
    /// ahash rather than SipHash: looked up once per request. The names
    /// are held inline in the map's own array, not in small allocations
    /// of their own: a name's bytes sharing a cache line with something
    /// another thread writes made every lookup of it a cache miss.
    by_name: HashMap<InlineName, usize, ahash::RandomState>,
}

/// Longest command name the table holds (Redis's longest is 20 bytes).
const MAX_NAME: usize = 32;

/// A lowercase command name, zero-padded, its length in the last byte (so
/// that `GET\0` is not `GET`).
type InlineName = [u8; MAX_NAME + 1];

/// `name` lowercased and padded; `None` past [`MAX_NAME`] bytes.
#[inline]
fn inline_name(name: &[u8]) -> Option<InlineName> {
    if name.len() > MAX_NAME {
        return None;
    }
    let mut buf = [0u8; MAX_NAME + 1];
    buf[..name.len()].copy_from_slice(name);
    buf[..name.len()].make_ascii_lowercase();
    buf[MAX_NAME] = name.len() as u8;
    Some(buf)
}

fn tagged<'a>(v: &'a Json, tag: &str) -> Option<&'a Json> {
    v.as_object()?.get(tag)
}

fn tagged_str(v: &Json) -> Option<&str> {
    tagged(v, "$")
        .or_else(|| tagged(v, "+"))
        .and_then(Json::as_str)
}

fn tagged_int(v: &Json) -> Option<i64> {
    tagged(v, ":").and_then(Json::as_i64)
}

/// Looks up `key` in a tagged RESP3 map.
fn map_get<'a>(map: &'a Json, key: &str) -> Option<&'a Json> {
    tagged(map, "%")?
        .as_array()?
        .iter()
        .find(|pair| pair.get(0).and_then(tagged_str) == Some(key))
        .and_then(|pair| pair.get(1))
}

fn parse_key_spec(spec: &Json) -> KeySpec {
    let int = |m: Option<&Json>, k: &str| {
        m.and_then(|m| map_get(m, k))
            .and_then(tagged_int)
            .unwrap_or(0)
    };
    let bs = map_get(spec, "begin_search");
    let bs_spec = bs.and_then(|b| map_get(b, "spec"));
    let begin = match bs.and_then(|b| map_get(b, "type")).and_then(tagged_str) {
        Some("index") => BeginSearch::Index(int(bs_spec, "index")),
        Some("keyword") => BeginSearch::Keyword {
            keyword: bs_spec
                .and_then(|s| map_get(s, "keyword"))
                .and_then(tagged_str)
                .unwrap_or("")
                .to_string(),
            startfrom: int(bs_spec, "startfrom"),
        },
        _ => BeginSearch::Unknown,
    };
    let fk = map_get(spec, "find_keys");
    let fk_spec = fk.and_then(|f| map_get(f, "spec"));
    let find = match fk.and_then(|f| map_get(f, "type")).and_then(tagged_str) {
        Some("range") => FindKeys::Range {
            lastkey: int(fk_spec, "lastkey"),
            keystep: int(fk_spec, "keystep"),
            limit: int(fk_spec, "limit"),
        },
        Some("keynum") => FindKeys::Keynum {
            keynumidx: int(fk_spec, "keynumidx"),
            firstkey: int(fk_spec, "firstkey"),
            keystep: int(fk_spec, "keystep"),
        },
        _ => FindKeys::Unknown,
    };
    let flags: Vec<String> = map_get(spec, "flags")
        .and_then(|f| tagged(f, "~").or_else(|| tagged(f, "*")))
        .and_then(Json::as_array)
        .map(|flags| {
            flags
                .iter()
                .filter_map(tagged_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let write = !flags.iter().any(|f| f == "RO");
    let has = |name: &str| flags.iter().any(|f| f == name);
    KeySpec {
        begin,
        find,
        write,
        acl_access: acl_access(flags.iter().map(String::as_str)),
        not_key: has("not_key"),
        incomplete: has("incomplete"),
        variable_flags: has("variable_flags"),
        needs_value: needs_value(flags.iter().map(String::as_str)),
        flags,
    }
}

/// The ACL category bits of a COMMAND INFO entry's fields (field 6).
fn acl_categories(fields: &[Json]) -> u32 {
    fields
        .get(6)
        .and_then(|v| tagged(v, "~").or_else(|| tagged(v, "*")))
        .and_then(Json::as_array)
        .map(|cats| {
            cats.iter()
                .filter_map(tagged_str)
                .fold(0, |acc, c| acc | category::from_name(c))
        })
        .unwrap_or(0)
}

/// Builds a [`Command`] from a COMMAND INFO entry (tagged JSON array).
fn command_from_info(info: &Json, docs: Option<&Json>) -> Option<Command> {
    let fields = tagged(info, "*")?.as_array()?;
    let name = tagged_str(fields.first()?)?.to_string();
    let arity = tagged_int(fields.get(1)?)?;
    let flags = tagged(fields.get(2)?, "~")?
        .as_array()?
        .iter()
        .filter_map(tagged_str)
        .fold(0, |acc, f| acc | flag::from_name(f));
    let acl_categories = acl_categories(fields);
    let key_specs: Vec<KeySpec> = fields
        .get(8)
        .and_then(|v| tagged(v, "~").or_else(|| tagged(v, "*")))
        .and_then(Json::as_array)
        .map(|specs| specs.iter().map(parse_key_spec).collect())
        .unwrap_or_default();
    let access = if key_specs.is_empty() {
        Access::None
    } else {
        Access::Keys
    };
    let single_key = match key_specs.as_slice() {
        [KeySpec {
            begin: BeginSearch::Index(i),
            find: FindKeys::Range { lastkey: 0, .. },
            ..
        }] => Some(*i as usize),
        _ => None,
    };
    Some(Command {
        single_key,
        keys_proc: KeysProc::for_command(&name),
        metadata_only: METADATA_ONLY.contains(&name.as_str()),
        args_ok: None,
        name,
        arity,
        flags,
        acl_categories,
        access,
        handler: None,
        while_busy: WhileBusy::Refuse,
        id: 0,
        acl_id: 0,
        key_specs,
        subcommands: HashMap::new(),
        info: info.clone(),
        docs: docs.cloned(),
        info_resp: Default::default(),
        docs_resp: None,
    })
}

/// The ACL catalog: every command and subcommand in the metadata, each
/// container followed by its subcommands.
/// Whether the captured table has `full` (a command, or `container|sub`).
fn known(all: &serde_json::Map<String, Json>, full: &str) -> bool {
    let Some((top, _)) = full.split_once('|') else {
        return all.contains_key(full);
    };
    all.get(top)
        .and_then(|c| c["info"].get("*"))
        .and_then(|f| f.get(9))
        .and_then(|s| s.get("*"))
        .and_then(Json::as_array)
        .is_some_and(|subs| {
            subs.iter()
                .any(|e| e.get("*").and_then(|f| f.get(0)).and_then(tagged_str) == Some(full))
        })
}

fn acl_catalog(all: &serde_json::Map<String, Json>) -> crate::acl::Catalog {
    let mut cat = crate::acl::Catalog::default();
    let fields = |info: &Json| -> Option<(String, u32, Vec<Json>)> {
        let f = tagged(info, "*")?.as_array()?;
        let name = tagged_str(f.first()?)?.to_string();
        let cats = acl_categories(f);
        let subs = f
            .get(9)
            .and_then(|s| tagged(s, "*"))
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default();
        Some((name, cats, subs))
    };
    for entry in all.values() {
        let Some((name, cats, subs)) = fields(&entry["info"]) else {
            continue;
        };
        let id = cat.push(&name, cats, None);
        for sub in &subs {
            if let Some((name, cats, _)) = fields(sub) {
                cat.push(&name, cats, Some(id));
            }
        }
    }
    cat
}

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("embedded command metadata is malformed: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no Redis metadata for command '{0}'")]
    Unknown(String),
}

/// Collects handler registrations from the command families.
#[derive(Default)]
pub struct Registry {
    handlers: Vec<(&'static str, Access, Handler, u32)>,
    while_busy: Vec<(&'static str, WhileBusy)>,
    args_checks: Vec<(&'static str, ArgsCheck)>,
}

/// See [`Command::args_ok`].
pub type ArgsCheck = fn(&crate::server::Server, &[&[u8]]) -> bool;

/// keel's column: how a command is answered while a script past
/// busy-reply-threshold holds its connection's worker, from the script's
/// hook, with the connection's task suspended (`net::busy`). Only
/// commands Redis flags `allow_busy` run; the rest get `-BUSY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhileBusy {
    /// `-BUSY` (every command without `allow_busy`).
    Refuse,
    /// Left in the socket, with what follows, for the connection once the
    /// script ends: it needs the connection's own state (AUTH, HELLO,
    /// WATCH...).
    Wait,
    /// Runs at once: it reads nothing of the connection but its protocol
    /// and database (SCRIPT KILL, SHUTDOWN...).
    Run,
    /// Opens the connection's transaction (MULTI).
    OpenTx,
    /// Ends the connection's open transaction (DISCARD; without one it
    /// waits, for the connection's own error).
    DiscardTx,
    /// Answers OK and closes the connection (QUIT).
    Close,
}

impl Registry {
    /// Registers `name` (`get`, or `client|kill` for a subcommand) with the
    /// shard access its key specs imply.
    pub fn add(&mut self, name: &'static str, handler: Handler) {
        self.handlers.push((name, Access::Keys, handler, 0));
    }

    /// Registers `name` with keel's own flag columns (`flag::TX_CONTROL`,
    /// `flag::SUBSCRIBED_OK`) beside Redis's.
    pub fn add_flagged(&mut self, name: &'static str, handler: Handler, flags: u32) {
        self.handlers.push((name, Access::Keys, handler, flags));
    }

    /// Gives `name` the checks its handler makes of its arguments before
    /// it reads any key (see [`Command::args_ok`]).
    pub fn args_checked_first(&mut self, name: &'static str, check: ArgsCheck) {
        self.args_checks.push((name, check));
    }

    /// Says how `name` is answered while its worker is busy (otherwise
    /// `Wait` if Redis flags it `allow_busy`, else `Refuse`).
    pub fn while_busy(&mut self, name: &'static str, how: WhileBusy) {
        self.while_busy.push((name, how));
    }

    /// Registers a command that must see the whole keyspace at once.
    pub fn add_all_shards(&mut self, name: &'static str, handler: Handler) {
        self.handlers.push((name, Access::All, handler, 0));
    }
}

impl CommandTable {
    pub fn build(registry: Registry) -> Result<CommandTable, TableError> {
        let captured = if crate::speaks_7_4() {
            REDIS_74_COMMANDS
        } else {
            REDIS_COMMANDS
        };
        let mut all: serde_json::Map<String, Json> = serde_json::from_str(captured)?;
        let newer: serde_json::Map<String, Json> = serde_json::from_str(NEWER_SUBCOMMANDS)?;
        for (full, entry) in newer {
            if crate::speaks_7_4() && known(&all, &full) {
                continue;
            }
            // A newer top-level command: its metadata as Redis 7.2+ gives it.
            let Some((top, _)) = full.split_once('|') else {
                all.insert(full, entry);
                continue;
            };
            let Some(container) = all.get_mut(top) else {
                continue;
            };
            if let Some(list) = container["info"]
                .get_mut("*")
                .and_then(|f| f.get_mut(9))
                .and_then(|s| s.get_mut("*"))
                .and_then(Json::as_array_mut)
            {
                list.push(entry["info"].clone());
            }
            if let Some(pairs) = container["docs"].get_mut("%").and_then(Json::as_array_mut) {
                for pair in pairs.iter_mut() {
                    if pair.get(0).and_then(tagged_str) == Some("subcommands") {
                        if let Some(list) = pair
                            .get_mut(1)
                            .and_then(|m| m.get_mut("%"))
                            .and_then(Json::as_array_mut)
                        {
                            list.push(serde_json::json!([{"$": full}, entry["docs"].clone()]));
                        }
                    }
                }
            }
        }
        let mut table = CommandTable {
            commands: Vec::new(),
            acl: acl_catalog(&all),
            by_name: HashMap::default(),
        };
        for (name, access, handler, keel_flags) in registry.handlers {
            let (top, sub) = match name.split_once('|') {
                Some((t, s)) => (t, Some(s)),
                None => (name, None),
            };
            let entry = all
                .get(top)
                .ok_or_else(|| TableError::Unknown(name.into()))?;
            let top_key =
                inline_name(top.as_bytes()).ok_or_else(|| TableError::Unknown(name.into()))?;
            let top_id = match table.by_name.get(&top_key) {
                Some(&id) => id,
                None => {
                    let mut cmd = command_from_info(
                        &entry["info"],
                        entry.get("docs").filter(|d| !d.is_null()),
                    )
                    .ok_or_else(|| TableError::Unknown(name.into()))?;
                    cmd.id = table.commands.len();
                    table.by_name.insert(top_key, cmd.id);
                    table.commands.push(cmd);
                    table.commands.len() - 1
                }
            };
            let id = match sub {
                None => top_id,
                Some(sub) => {
                    let full = format!("{top}|{sub}");
                    let info = tagged(&entry["info"], "*")
                        .and_then(|f| f.get(9))
                        .and_then(|s| tagged(s, "*"))
                        .and_then(Json::as_array)
                        .and_then(|subs| {
                            subs.iter().find(|s| {
                                tagged(s, "*")
                                    .and_then(Json::as_array)
                                    .and_then(|f| f.first())
                                    .and_then(tagged_str)
                                    == Some(full.as_str())
                            })
                        })
                        .ok_or_else(|| TableError::Unknown(full.clone()))?;
                    let docs = entry
                        .get("docs")
                        .and_then(|d| map_get(d, "subcommands"))
                        .and_then(|s| map_get(s, &full));
                    let mut cmd = command_from_info(info, docs)
                        .ok_or_else(|| TableError::Unknown(full.clone()))?;
                    cmd.id = table.commands.len();
                    table.commands[top_id]
                        .subcommands
                        .insert(sub.as_bytes().to_vec(), cmd.id);
                    table.commands.push(cmd);
                    table.commands.len() - 1
                }
            };
            let cmd = &mut table.commands[id];
            cmd.handler = Some(handler);
            cmd.flags |= keel_flags;
            if MAY_REPLICATE_7_0.contains(&name) {
                cmd.flags |= flag::REPLICATES;
            }
            if access == Access::All {
                cmd.access = Access::All;
            }
            if cmd.has(flag::ALLOW_BUSY) {
                cmd.while_busy = WhileBusy::Wait;
            }
        }
        let id_of = |table: &CommandTable, name: &str| {
            table
                .commands
                .iter()
                .position(|c| c.name == name)
                .ok_or_else(|| TableError::Unknown(name.into()))
        };
        for (name, check) in registry.args_checks {
            let id = id_of(&table, name)?;
            table.commands[id].args_ok = Some(check);
        }
        for (name, how) in registry.while_busy {
            let id = id_of(&table, name)?;
            if !table.commands[id].has(flag::ALLOW_BUSY) {
                return Err(TableError::Unknown(format!("{name} (not allow_busy)")));
            }
            table.commands[id].while_busy = how;
        }
        table.filter_subcommand_metadata();
        for cmd in &mut table.commands {
            cmd.encode_metadata();
            cmd.acl_id = table
                .acl
                .lookup(cmd.name.as_bytes())
                .ok_or_else(|| TableError::Unknown(cmd.name.clone()))?;
        }
        Ok(table)
    }

    /// Containers list only the subcommands keel implements, in COMMAND INFO
    /// and COMMAND DOCS alike.
    fn filter_subcommand_metadata(&mut self) {
        let names: Vec<(usize, Vec<String>)> = self
            .commands
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.subcommands.is_empty())
            .map(|(i, c)| {
                (
                    i,
                    c.subcommands
                        .values()
                        .map(|&s| self.commands[s].name.clone())
                        .collect(),
                )
            })
            .collect();
        for (i, subs) in names {
            let cmd = &mut self.commands[i];
            if let Some(list) = cmd
                .info
                .get_mut("*")
                .and_then(|f| f.get_mut(9))
                .and_then(|s| s.get_mut("*"))
                .and_then(Json::as_array_mut)
            {
                list.retain(|s| {
                    tagged(s, "*")
                        .and_then(Json::as_array)
                        .and_then(|f| f.first())
                        .and_then(tagged_str)
                        .is_some_and(|n| subs.iter().any(|x| x == n))
                });
            }
            if let Some(docs) = cmd.docs.as_mut() {
                if let Some(pairs) = docs.get_mut("%").and_then(Json::as_array_mut) {
                    for pair in pairs.iter_mut() {
                        if pair.get(0).and_then(tagged_str) == Some("subcommands") {
                            if let Some(list) = pair
                                .get_mut(1)
                                .and_then(|m| m.get_mut("%"))
                                .and_then(Json::as_array_mut)
                            {
                                list.retain(|p| {
                                    p.get(0)
                                        .and_then(tagged_str)
                                        .is_some_and(|n| subs.iter().any(|x| x == n))
                                });
                            }
                        }
                    }
                }
            }
        }
    }

    /// Looks a command up by name, case-insensitively, without allocating
    /// (a name longer than any command's is unknown).
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<&Command> {
        let key = inline_name(name)?;
        self.by_name.get(&key).map(|&i| &self.commands[i])
    }

    pub fn subcommand(&self, container: &Command, name: &[u8]) -> Option<&Command> {
        let lower = name.to_ascii_lowercase();
        container
            .subcommands
            .get(&lower)
            .map(|&i| &self.commands[i])
    }

    pub fn get(&self, id: usize) -> &Command {
        &self.commands[id]
    }

    /// Top-level commands in registration order.
    pub fn top_level(&self) -> impl Iterator<Item = &Command> {
        self.commands.iter().filter(|c| !c.name.contains('|'))
    }

    pub fn all(&self) -> &[Command] {
        &self.commands
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

/// Writes tagged JSON as RESP for the client's protocol version.
pub fn write_tagged(out: &mut Vec<u8>, v: &Json, proto: u8) {
    use resp::encode;
    let Some(obj) = v.as_object() else {
        encode::null(out, proto);
        return;
    };
    let Some((tag, body)) = obj.iter().next() else {
        encode::null(out, proto);
        return;
    };
    let items = || body.as_array().map(Vec::as_slice).unwrap_or(&[]);
    match tag.as_str() {
        "$" => encode::bulk(out, body.as_str().unwrap_or("").as_bytes()),
        "+" => encode::simple(out, body.as_str().unwrap_or("").as_bytes()),
        ":" => encode::integer(out, body.as_i64().unwrap_or(0)),
        "," => encode::double_text(out, body.as_str().unwrap_or("0").as_bytes(), proto),
        "*" | "~" => {
            let list = items();
            if tag == "~" {
                encode::set(out, list.len(), proto);
            } else {
                encode::array(out, list.len());
            }
            for item in list {
                write_tagged(out, item, proto);
            }
        }
        "%" => {
            let pairs = items();
            encode::map(out, pairs.len(), proto);
            for pair in pairs {
                if let Some(kv) = pair.as_array() {
                    for x in kv.iter().take(2) {
                        write_tagged(out, x, proto);
                    }
                }
            }
        }
        _ => encode::null(out, proto),
    }
}

#[cfg(test)]
mod tests {
    /// The allocation-free key walk ACL uses finds the keys, and needs,
    /// COMMAND GETKEYSANDFLAGS reports, for every command.
    #[test]
    fn key_access_matches_keys_with_flags() {
        let table = crate::command::build_table().expect("table");
        let shapes: [&[&[u8]]; 6] = [
            &[b"k1"],
            &[b"k1", b"k2"],
            &[b"k1", b"v1", b"k2", b"v2"],
            &[b"2", b"k1", b"k2", b"x"],
            &[b"GET", b"STREAMS", b"s1", b"0"],
            &[b"STORE", b"dst", b"k1", b"BY", b"w"],
        ];
        for cmd in table.all() {
            let mut parts: Vec<&[u8]> = cmd.name.split('|').map(str::as_bytes).collect();
            let base = parts.len();
            for shape in shapes {
                parts.truncate(base);
                parts.extend_from_slice(shape);
                let want: Vec<(usize, u8)> = cmd
                    .keys_with_flags(&parts)
                    .into_iter()
                    .map(|(p, f)| (p, super::acl_access(f.into_iter())))
                    .collect();
                let mut got = Vec::new();
                cmd.for_each_key_access(&parts, |p, a| {
                    got.push((p, a));
                    true
                });
                assert_eq!(got, want, "{} {:?}", cmd.name, shape);
            }
        }
    }
}
