//! Entry points of the fuzz targets (`fuzz/`, cargo-fuzz) and of the
//! replay of their corpus in the test suite (`tests/fuzz_corpus.rs`): both
//! call the same functions, so every input the fuzzers kept, and every
//! input that once crashed, runs again on each `cargo test`.
//!
//! Each function takes arbitrary bytes and must return; a panic is a bug
//! (in the code under test, or a broken invariant the checks here assert).
//! The commands, the RDB and the AOF targets run against an in-process
//! [`Server`] without threads or listeners, reset after every input.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use resp::{RequestDecoder, INLINE_MAX_SIZE};

use crate::client::{Client, ClientInfo, ReplyMode};
use crate::command::{self, Clock, Next, TimeoutReply};
use crate::config::Config;
use crate::observe::stats::ThreadStats;
use crate::persistence::{load, rdb, snapshot};
use crate::server::Server;
use crate::storage::keyspace::SHARDS;
use crate::storage::value::Value;

// ---------------------------------------------------------------------
// resp_decoder

/// What decoding a whole stream produced: each request's arguments, then
/// how the stream ended (`Ok(())`: waiting for more bytes).
type Decoded = (Vec<Vec<Vec<u8>>>, Result<(), resp::DecodeError>);

/// Feeds `data` to a request decoder as the connection does, `step` bytes
/// more at a time (the decoder is asked again from the same start with
/// the longer buffer after each `Ok(None)`), with the limits of a client
/// that must still authenticate when `unauthenticated`.
fn decode_stream(data: &[u8], step: usize, unauthenticated: bool) -> Decoded {
    let mut dec = RequestDecoder::default();
    dec.set_unauthenticated(unauthenticated);
    let mut frames = Vec::new();
    let mut start = 0;
    let mut avail = step.min(data.len());
    loop {
        match dec.decode(&data[start..avail]) {
            Ok(Some(n)) => {
                assert!(n > 0 && start + n <= avail, "decoder consumed {n} bytes");
                let frame = &data[start..start + n];
                let argv: Vec<Vec<u8>> = (0..dec.argc())
                    .map(|i| dec.arg(frame, i).to_vec())
                    .collect();
                if !argv.is_empty() {
                    frames.push(argv);
                }
                start += n;
            }
            Ok(None) if avail == data.len() => return (frames, Ok(())),
            Ok(None) => avail = (avail + step).min(data.len()),
            Err(e) => return (frames, Err(e)),
        }
    }
}

/// Arbitrary bytes as client requests (multibulk and inline), and as
/// replies. Checks that a stream split anywhere decodes as it does whole,
/// that every request re-encoded decodes to the same arguments, and that
/// the reply parser and the reply skipper agree on where a reply ends.
pub fn resp_decoder(data: &[u8]) {
    // The first byte picks how the stream arrives: its low six bits the
    // size of each read, the next one whether the client has still to
    // authenticate.
    let first = data.first().copied().unwrap_or(0);
    let unauthenticated = first & 0x40 != 0;
    let whole = decode_stream(data, data.len().max(1), unauthenticated);
    // Past INLINE_MAX_SIZE a partial line is refused before its end
    // arrives, which depends on the split: only smaller streams compare.
    if data.len() <= INLINE_MAX_SIZE {
        let step = 1 + (first & 0x3f) as usize;
        let split = decode_stream(data, step, unauthenticated);
        assert_eq!(whole, split, "decoding fed {step} bytes at a time differs");
    }
    for argv in &whole.0 {
        let mut wire = Vec::new();
        resp::encode::command(&mut wire, argv);
        let again = decode_stream(&wire, wire.len(), false);
        assert_eq!(again, (vec![argv.clone()], Ok(())), "re-encoded request");
    }
    replies(data);
}

/// The reply parser and skipper on `data` agree on where a reply ends.
/// The skipper (the benchmark's hot path) does not look inside integers
/// or booleans, so it may accept what the parser refuses, never the
/// reverse.
fn replies(data: &[u8]) {
    let parsed = resp::parse_reply(data);
    let skipped = resp::skip_reply(data);
    let agree = match (&parsed, &skipped) {
        (Ok(Some((_, n))), Ok(Some(m))) => n == m,
        (Ok(None), Ok(None)) => true,
        (Err(_), _) => true,
        _ => false,
    };
    assert!(agree, "parse_reply {parsed:?} but skip_reply {skipped:?}");
}

// ---------------------------------------------------------------------
// The in-process server

/// One server per target, so the replay test's targets can run on
/// parallel threads; `lock` serialises the inputs of one target.
struct Harness {
    server: Server,
    /// The configuration every input starts from (CONFIG SET is undone).
    base: Config,
    stats: Arc<ThreadStats>,
    lock: Mutex<()>,
}

static COMMANDS: OnceLock<Harness> = OnceLock::new();
static RDB: OnceLock<Harness> = OnceLock::new();
static AOF: OnceLock<Harness> = OnceLock::new();

fn harness(cell: &'static OnceLock<Harness>) -> &'static Harness {
    cell.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("keel-fuzz-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let args: Vec<String> = [
            "--threads",
            "1",
            "--dir",
            &dir.display().to_string(),
            // Strings (SETRANGE, SETBIT, APPEND) stay small: a 512 MB
            // string is legitimate, and only slows the fuzzer down.
            "--proto-max-bulk-len",
            "1mb",
            // A looping script becomes busy soon, and is killed then
            // (`kill_busy_scripts`), as a client's SCRIPT KILL would.
            "--busy-reply-threshold",
            "20",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let base = match Config::from_args(&args) {
            Ok(c) => c,
            Err(e) => panic!("fuzz configuration: {e}"),
        };
        let server = match Server::new(base.clone()) {
            Ok(s) => s,
            Err(e) => panic!("fuzz server: {e}"),
        };
        crate::scripting::set_busy_duty(kill_busy_scripts);
        let stats = server.stats.register_thread(server.commands.len());
        Harness {
            server,
            base,
            stats,
            lock: Mutex::new(()),
        }
    })
}

/// The busy duty of a fuzzed server: what a second client sending SCRIPT
/// KILL and FUNCTION KILL would do, so a script that loops without
/// writing ends (one that wrote cannot be killed, as in Redis).
fn kill_busy_scripts(server: &Server, _worker: usize, _busy: &str, stats: &ThreadStats) {
    let mut client = new_client(server, "killer");
    let mut out = crate::net::replies::Replies::plain();
    let mut clock = Clock::start();
    for argv in [[&b"script"[..], b"kill"], [b"function", b"kill"]] {
        let _ = command::dispatch(server, &mut client, &argv, &mut out, stats, &mut clock);
    }
}

fn new_client(server: &Server, name: &str) -> Client {
    let info = ClientInfo::new(
        server.clients.next_id(),
        name.into(),
        String::new(),
        -1,
        false,
    );
    Client::new(Arc::new(info))
}

impl Harness {
    /// Runs a request as a connection would, short of waiting: a pause
    /// ends at once. (WAIT answers at once too: the fuzzed server is not
    /// shared, so `Next::Await` never comes.)
    fn run(&self, client: &mut Client, argv: &[&[u8]]) -> (Vec<u8>, Next) {
        let mut out = crate::net::replies::Replies::plain();
        let mut clock = Clock::start();
        let mut next = command::dispatch(
            &self.server,
            client,
            argv,
            &mut out,
            &self.stats,
            &mut clock,
        );
        // CLIENT PAUSE held the request back: a fuzzed server has no
        // clock to wait on; end the pause and run it.
        while let Next::Postpone = next {
            self.server.unpause_clients();
            next = command::dispatch(
                &self.server,
                client,
                argv,
                &mut out,
                &self.stats,
                &mut clock,
            );
        }
        (out.into_bytes(), next)
    }

    /// What a closing connection leaves behind, undone.
    fn close(&self, client: &mut Client) {
        self.server.clients.unregister(client.info.id);
        self.server.watches.unwatch_all(&client.watch);
        command::pubsub::unsubscribe_all(&self.server, client);
        self.server.tracking.disable(&client.info);
        self.server.monitors.remove(&client.info);
    }

    /// Back to an empty server with the base configuration and only the
    /// default user.
    fn reset(&self) {
        self.server.unpause_clients();
        *self.server.config.write() = self.base.clone();
        self.server.config_changed(None);
        self.server.shutting_down.store(false, Relaxed);
        self.server
            .acl
            .replace_all(Vec::new(), &self.server.commands.acl);
        let mut admin = new_client(&self.server, "reset");
        let steps: [&[&[u8]]; 4] = [
            &[b"flushall", b"sync"],
            &[b"script", b"flush"],
            &[b"function", b"flush"],
            &[b"acl", b"log", b"reset"],
        ];
        for argv in steps {
            let (out, _) = self.run(&mut admin, argv);
            assert!(
                out.starts_with(b"+OK"),
                "reset: {}",
                String::from_utf8_lossy(&out)
            );
        }
    }

    /// Every key written as an RDB image and read back: the same keys,
    /// types, expiries and contents (what keel holds it must be able to
    /// save, and load again).
    fn check_round_trip(&self) {
        let mut held = Vec::new();
        let image = {
            let view = self.server.keyspace.lock_all();
            let mut w = match rdb::Writer::new(Vec::new(), true, true, false) {
                Ok(w) => w,
                Err(e) => panic!("rdb writer: {e}"),
            };
            let mut current_db = 0;
            let mut failed = None;
            for shard in 0..SHARDS {
                view.for_each_in_shard(shard, |db, key, entry| {
                    held.push((db, key.to_vec(), entry.expire_at, digest(entry.value)));
                    let mut r = Ok(());
                    if db != current_db {
                        r = w.select_db(db);
                        current_db = db;
                    }
                    if let Err(e) = r.and_then(|_| w.entry(key, entry)) {
                        failed = Some(e);
                    }
                });
            }
            if let Some(e) = failed {
                panic!("writing the image: {e}");
            }
            match w.finish() {
                Ok(v) => v,
                Err(e) => panic!("writing the image: {e}"),
            }
        };
        let mut read = Vec::new();
        let limits = self.server.encoding_limits();
        if let Err(e) = rdb::load(
            &image,
            &limits,
            |db, key, value, expire_at| read.push((db, key, expire_at, digest(&value))),
            |_| {},
        ) {
            panic!("keel cannot load its own image: {e}");
        }
        held.sort();
        read.sort();
        assert!(
            held == read,
            "the image read back differs from the keyspace"
        );
    }
}

/// A value's contents in a canonical form (sets and hashes sorted), to
/// compare a value with its copy read back from an image.
fn digest(value: &Value) -> Vec<u8> {
    fn put(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
    }
    let mut out = value.type_name().as_bytes().to_vec();
    match value {
        Value::Spilled(stub) => return digest(&crate::tier::read_back(stub)),
        Value::Str(s) => s.with_bytes(|b| put(&mut out, b)),
        Value::List(l) => {
            for e in l.iter() {
                e.with_bytes(|b| put(&mut out, b));
            }
        }
        Value::Set(s) => {
            let mut m: Vec<Vec<u8>> = s.iter().map(|e| e.with_bytes(|b| b.to_vec())).collect();
            m.sort();
            for e in &m {
                put(&mut out, e);
            }
        }
        Value::Hash(h) => {
            let mut m: Vec<(Vec<u8>, Vec<u8>)> = h
                .iter()
                .map(|(f, v)| (f.with_bytes(|b| b.to_vec()), v.with_bytes(|b| b.to_vec())))
                .collect();
            m.sort();
            for (f, v) in &m {
                put(&mut out, f);
                put(&mut out, v);
            }
        }
        Value::ZSet(z) => z.for_range(0, z.len(), false, |score, member| {
            out.extend_from_slice(&score.to_bits().to_le_bytes());
            put(&mut out, member);
        }),
        Value::Stream(s) => {
            let ids = [s.last_id, s.first_id, s.max_deleted_id];
            let text = format!("{} {ids:?} {}", s.len(), s.entries_added);
            put(&mut out, text.as_bytes());
            for (name, g) in &s.groups {
                put(&mut out, name);
                let text = format!(
                    "{:?} {} {} {}",
                    g.last_id,
                    g.entries_read,
                    g.pel.len(),
                    g.consumers.len()
                );
                put(&mut out, text.as_bytes());
            }
        }
    }
    out
}

// ---------------------------------------------------------------------
// commands

/// Command names the fuzzer's lines are mapped onto (a line whose first
/// word is none of these gets one chosen by its first byte): every data
/// type's commands, transactions, scripting, pub/sub, introspection.
/// Left out: what stops the process or writes files (SHUTDOWN, DEBUG,
/// SAVE, BGSAVE, BGREWRITEAOF). Blocking commands are in: here they
/// time out at once.
const NAMES: &[&str] = &[
    // strings
    "get",
    "set",
    "setnx",
    "setex",
    "psetex",
    "getset",
    "getdel",
    "getex",
    "mget",
    "mset",
    "msetnx",
    "append",
    "strlen",
    "getrange",
    "setrange",
    "substr",
    "incr",
    "incrby",
    "decr",
    "decrby",
    "incrbyfloat",
    "lcs",
    "setbit",
    "getbit",
    "bitcount",
    "pfadd",
    "pfcount",
    "pfmerge",
    "pfdebug",
    // keys
    "del",
    "unlink",
    "exists",
    "type",
    "ttl",
    "pttl",
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "expiretime",
    "pexpiretime",
    "persist",
    "rename",
    "renamenx",
    "move",
    "copy",
    "keys",
    "scan",
    "randomkey",
    "dbsize",
    "touch",
    "object",
    "sort",
    "sort_ro",
    "flushdb",
    "flushall",
    "select",
    "swapdb",
    // lists
    "lpush",
    "rpush",
    "lpushx",
    "rpushx",
    "lpop",
    "rpop",
    "llen",
    "lrange",
    "lindex",
    "lset",
    "linsert",
    "lrem",
    "ltrim",
    "lpos",
    "lmove",
    "rpoplpush",
    "lmpop",
    "blpop",
    "brpop",
    "blmove",
    "brpoplpush",
    "blmpop",
    // hashes
    "hset",
    "hsetnx",
    "hget",
    "hmget",
    "hmset",
    "hdel",
    "hlen",
    "hstrlen",
    "hexists",
    "hkeys",
    "hvals",
    "hgetall",
    "hincrby",
    "hincrbyfloat",
    "hrandfield",
    "hscan",
    // sets
    "sadd",
    "srem",
    "smembers",
    "sismember",
    "smismember",
    "scard",
    "spop",
    "srandmember",
    "smove",
    "sinter",
    "sintercard",
    "sinterstore",
    "sunion",
    "sunionstore",
    "sdiff",
    "sdiffstore",
    "sscan",
    // sorted sets
    "zadd",
    "zincrby",
    "zrem",
    "zcard",
    "zscore",
    "zmscore",
    "zrank",
    "zrevrank",
    "zcount",
    "zlexcount",
    "zrange",
    "zrangestore",
    "zrangebyscore",
    "zrevrangebyscore",
    "zrangebylex",
    "zrevrangebylex",
    "zrevrange",
    "zremrangebyrank",
    "zremrangebyscore",
    "zremrangebylex",
    "zpopmin",
    "zpopmax",
    "bzpopmin",
    "bzpopmax",
    "zmpop",
    "bzmpop",
    "zrandmember",
    "zunion",
    "zunionstore",
    "zinter",
    "zinterstore",
    "zintercard",
    "zdiff",
    "zdiffstore",
    "zscan",
    // streams
    "xadd",
    "xlen",
    "xrange",
    "xrevrange",
    "xdel",
    "xtrim",
    "xread",
    "xreadgroup",
    "xgroup",
    "xack",
    "xpending",
    "xclaim",
    "xautoclaim",
    "xinfo",
    "xsetid",
    // transactions
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
    // scripting
    "eval",
    "eval_ro",
    "evalsha",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "script",
    "function",
    // pub/sub
    "publish",
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "ssubscribe",
    "sunsubscribe",
    "spublish",
    "pubsub",
    // connection and server
    "ping",
    "echo",
    "info",
    "config",
    "memory",
    "client",
    "command",
    "time",
    "lastsave",
    "hello",
    "reset",
    "quit",
    // the commonest ones again, so a random first byte lands on them more
    "set",
    "get",
    "del",
    "expire",
    "lpush",
    "lrange",
    "hset",
    "hget",
    "sadd",
    "smembers",
    "zadd",
    "zrange",
    "xadd",
    "xrange",
    "incr",
    "multi",
    "exec",
    "eval",
];

/// Parameters CONFIG SET may change here: encodings, notifications,
/// eviction, lazy freeing. Not files, ports, threads or persistence.
const CONFIG_SETTABLE: &[&str] = &[
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "hash-max-ziplist-entries",
    "hash-max-ziplist-value",
    "set-max-intset-entries",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "zset-max-ziplist-entries",
    "zset-max-ziplist-value",
    "list-max-listpack-size",
    "list-max-ziplist-size",
    "stream-node-max-bytes",
    "stream-node-max-entries",
    "hll-sparse-max-bytes",
    "notify-keyspace-events",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "lfu-log-factor",
    "lfu-decay-time",
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "requirepass",
];

/// One line of the input as a command: words as redis-cli and the inline
/// protocol split them (quotes, `\xHH` escapes; plain spaces if the
/// quotes do not balance), the first mapped onto [`NAMES`]. `None` for
/// what must not run here.
fn command_line(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    let mut argv: Vec<Vec<u8>> = match resp::request::split_args(line, &mut buf, &mut ranges) {
        Ok(()) => ranges
            .iter()
            .map(|&(s, l)| buf[s..s + l].to_vec())
            .collect(),
        Err(_) => line.split(|&b| b == b' ').map(<[u8]>::to_vec).collect(),
    };
    let first = argv.first()?;
    let name = NAMES
        .iter()
        .find(|n| n.as_bytes().eq_ignore_ascii_case(first))
        .copied()
        .unwrap_or_else(|| NAMES[first.first().map_or(0, |&b| b as usize) % NAMES.len()]);
    argv[0] = name.as_bytes().to_vec();
    let sub = |i: usize, w: &str| {
        argv.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()))
    };
    if name == "config" && sub(1, "set") {
        let params_ok = argv[2..].iter().step_by(2).all(|p| {
            CONFIG_SETTABLE
                .iter()
                .any(|c| c.as_bytes().eq_ignore_ascii_case(p))
        });
        if !params_ok {
            return None;
        }
    }
    // CONFIG REWRITE writes a file; MEMORY PURGE and MALLOC-STATS are
    // jemalloc's (not the allocator of a fuzz build).
    if (name == "config" && sub(1, "rewrite"))
        || (name == "memory" && (sub(1, "purge") || sub(1, "malloc-stats")))
    {
        return None;
    }
    Some(argv)
}

/// Checks the replies `out` holds: well-formed RESP, `expect` of them
/// when it is known.
fn check_replies(out: &[u8], argv: &[&[u8]], expect: Option<usize>) {
    let mut pos = 0;
    let mut n = 0;
    while pos < out.len() {
        match resp::parse_reply(&out[pos..]) {
            Ok(Some((_, len))) => pos += len,
            other => panic!(
                "malformed reply to {:?}: {other:?} in {:?}",
                String::from_utf8_lossy(&argv.join(&b' ')),
                String::from_utf8_lossy(out)
            ),
        }
        n += 1;
    }
    if let Some(want) = expect {
        assert_eq!(
            n,
            want,
            "replies to {:?}: {:?}",
            String::from_utf8_lossy(&argv.join(&b' ')),
            String::from_utf8_lossy(out)
        );
    }
}

/// Lines of words (see [`command_line`]) run as one client's commands
/// against a live keyspace. Each reply must be well-formed, and what the
/// commands leave must survive an RDB round trip.
pub fn commands(data: &[u8]) {
    let h = harness(&COMMANDS);
    let _one_at_a_time = h.lock.lock();
    // A connection's client (the default user, subject to AUTH and the
    // ACL gates), not the internal one the loader and `reset` use.
    let info = new_client(&h.server, "fuzz").info;
    let mut client = Client::connected(info, &h.server.acl);
    h.server.clients.register(client.info.clone());
    for line in data.split(|&b| b == b'\n') {
        let Some(owned) = command_line(line) else {
            continue;
        };
        let argv: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let replying = client.reply_mode == ReplyMode::On;
        let (mut out, next) = h.run(&mut client, &argv);
        let mut closing = false;
        if let Next::Close = next {
            closing = true;
        }
        if let Next::Park(req) = next {
            // The connection runs a blocked command once more before it
            // sleeps (a push may have come in between); then it waits,
            // and here its timeout passes at once.
            let rerun: Vec<Vec<u8>> = req
                .rerun
                .unwrap_or_else(|| argv.iter().map(|a| a.to_vec()).collect());
            let rerun: Vec<&[u8]> = rerun.iter().map(Vec::as_slice).collect();
            client.woken = true;
            let (again, next) = h.run(&mut client, &rerun);
            client.woken = false;
            if let Next::Park(_) = next {
                match req.timeout_reply {
                    TimeoutReply::NullArray => resp::encode::null_array(&mut out, client.proto),
                    TimeoutReply::NullBulk => resp::encode::null(&mut out, client.proto),
                }
            } else {
                out.extend_from_slice(&again);
            }
        }
        // (Un)subscribing replies once per channel; so does it inside
        // EXEC, after the array header counting one reply per command, as
        // Redis 7.0 does.
        let pushes = argv[0].ends_with(b"subscribe") || argv[0] == b"exec";
        let expect = (replying && client.reply_mode == ReplyMode::On && !pushes).then_some(1);
        check_replies(&out, &argv, expect);
        // Messages for this client (published, invalidations, MONITOR):
        // well-formed pushes.
        let mut m = Vec::new();
        let bytes = client.info.inbox.take(&mut m, usize::MAX);
        client.info.inbox.written(bytes);
        check_replies(&m, &argv, None);
        if closing || client.info.killed.load(Relaxed) {
            break;
        }
    }
    h.close(&mut client);
    h.check_round_trip();
    h.reset();
}

// ---------------------------------------------------------------------
// rdb_load

/// Arbitrary bytes as `dump.rdb` at start: a corrupt image is refused
/// with an error; `--check-rdb` must not pass an image the loader
/// refuses for its format; what loads must survive a round trip.
pub fn rdb_load(data: &[u8]) {
    let h = harness(&RDB);
    let _one_at_a_time = h.lock.lock();
    let checked = rdb::check(data);
    let image = crate::persistence::image_file::ImageFile::from_vec(data.to_vec());
    let loaded = snapshot::load_image(&h.server, &image, Path::new("fuzz.rdb"));
    if loaded.is_ok() {
        if let Err((_, e)) = checked {
            panic!("the image loads, but --check-rdb refuses it: {e}");
        }
        h.check_round_trip();
    }
    h.reset();
    // The same bytes as the value of a DUMP payload (RESTORE): refused,
    // never a panic; what is accepted dumps and restores equal.
    let limits = crate::storage::value::EncodingLimits::default();
    if let Ok(v) = rdb::restore_payload(&rdb::seal_payload(data.to_vec()), &limits) {
        let again = rdb::dump_payload(&v, true, -2);
        match rdb::restore_payload(&again, &limits) {
            Ok(back) => assert!(back == v, "a restored value dumps as another"),
            Err(e) => panic!("a restored value's own DUMP is refused: {e:?}"),
        }
    }
}

// ---------------------------------------------------------------------
// aof_load

/// Arbitrary bytes as an append-only file replayed at start (as an
/// incremental file, with its preallocated zeros, when the input ends in
/// a zero byte): a malformed file is refused or cut, never a panic; what
/// loads must survive a round trip.
pub fn aof_load(data: &[u8]) {
    let h = harness(&AOF);
    let _one_at_a_time = h.lock.lock();
    let incr = data.last() == Some(&0);
    let name = if incr {
        "fuzz.aof.1.incr.aof"
    } else {
        "fuzz.aof.1.base.aof"
    };
    let mut client = load::loading_client(&h.server);
    let replayed = load::replay_bytes(
        &h.server,
        &mut client,
        &h.stats,
        data,
        incr,
        Path::new(name),
        &|| {},
    );
    if let Ok(r) = &replayed {
        if let Some(cut) = r.cut_at {
            assert!(cut <= data.len(), "cut at {cut} past the end");
        }
    }
    h.close(&mut client);
    h.check_round_trip();
    h.reset();
}
