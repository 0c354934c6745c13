//! DUMP, RESTORE and MIGRATE: a key's value as Redis's DUMP payload (the
//! RDB encoding of the value, the RDB version, a CRC64; see
//! `persistence::rdb`), so payloads move between keel and Redis 7.0 both
//! ways.
//!
//! MIGRATE talks to the target with blocking socket calls from the
//! handler, bounded by its timeout: the calling worker thread waits (as
//! Redis's whole event loop does), holding only the shards of the keys it
//! moves, so commands on other keys go on from other workers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::args::{self, Args};
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::Ctx;
use crate::clients::notify;
use crate::persistence::rdb::{self, PayloadError};
use crate::storage::access;

pub(super) fn register(r: &mut Registry) {
    r.add("dump", dump);
    r.add("restore", restore);
    r.add("migrate", migrate);
    // What MIGRATE sends in cluster mode: RESTORE that a node importing
    // the key's slot takes without ASKING (the `asking` flag).
    r.add("restore-asking", restore);
}

const BUSYKEY: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "BUSYKEY Target key name already exists.",
));

/// How payloads are encoded: `rdbcompression`, and the list node size
/// (`list-max-listpack-size`).
fn payload_params(cx: &Ctx) -> (bool, i64) {
    let compress = cx.server.settings().rdbcompression;
    (compress, cx.limits().list_max_listpack_size)
}

/// DUMP key
fn dump(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let (compress, fill) = payload_params(cx);
    let Some(e) = cx.view.get(db, argv[1], now) else {
        cx.null();
        return Ok(());
    };
    let bytes = rdb::dump_payload(e.value, compress, fill);
    cx.bulk(&bytes);
    Ok(())
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds]
/// [FREQ frequency]
fn restore(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut a = Args::new(argv, 4);
    while a.more() {
        if a.word("replace") {
            replace = true;
        } else if a.word("absttl") {
            absttl = true;
        } else if let Some(v) = a.option_if(freq.is_none(), "idletime") {
            idle = a.check(args::int(v));
            if idle.is_some_and(|v| v < 0) {
                a.fail(CmdError::new("ERR Invalid IDLETIME value, must be >= 0"));
            }
        } else if let Some(v) = a.option_if(idle.is_none(), "freq") {
            freq = a.check(args::int(v));
            if freq.is_some_and(|v| !(0..=255).contains(&v)) {
                a.fail(CmdError::new(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    if !replace && super::keys::lookup_write_meta(&mut cx.view, db, key, now).is_some() {
        return Err(BUSYKEY);
    }
    let ttl = args::int(argv[2])?;
    if ttl < 0 {
        return Err(CmdError::new("ERR Invalid TTL value, must be >= 0"));
    }
    let value = rdb::restore_payload(argv[3], &cx.limits()).map_err(|e| match e {
        PayloadError::VersionOrChecksum => {
            CmdError::new("ERR DUMP payload version or checksum are wrong")
        }
        PayloadError::BadFormat => CmdError::new("ERR Bad data format"),
    })?;
    let deleted = replace && cx.view.remove(db, key, now).is_some();
    let expire_at = if ttl != 0 && !absttl {
        ttl.saturating_add(now as i64)
    } else {
        ttl
    };
    if expire_at != 0 && cx.already_expired(expire_at) {
        // Already expired: nothing is created, but a key REPLACE removed
        // is gone, and replicas and the log must hear it.
        if deleted {
            cx.propagate_instead(vec![vec![b"DEL".to_vec(), key.to_vec()]]);
            cx.notify(notify::GENERIC, "del", key);
            cx.dirty += 1;
        }
        cx.ok();
        return Ok(());
    }
    cx.view.set(db, key, value, expire_at as u64, now);
    if let Some(e) = cx.view.peek(db, key, now) {
        match (access::is_lfu(), freq, idle) {
            (true, Some(f), _) => *e.access = access::with_freq(f as u8, now),
            (false, _, Some(i)) => *e.access = access::with_idle(i as u64, now),
            _ => {}
        }
    }
    if expire_at != 0 && !absttl {
        // The log replays the TTL as an absolute time, as Redis rewrites it.
        let mut rewritten: Vec<Vec<u8>> = argv.iter().map(|a| a.to_vec()).collect();
        rewritten[2] = expire_at.to_string().into_bytes();
        rewritten.push(b"ABSTTL".to_vec());
        cx.propagate_instead(vec![rewritten]);
    }
    cx.notify(notify::GENERIC, "restore", key);
    cx.dirty += 1;
    cx.ok();
    Ok(())
}

/// How a talk with the MIGRATE target ended early.
enum IoFailure {
    Connect,
    Write,
    Read,
}

impl IoFailure {
    fn error(&self) -> CmdError {
        CmdError::new(match self {
            IoFailure::Connect => "IOERR error or timeout connecting to the client",
            IoFailure::Write => "IOERR error or timeout writing to target instance",
            IoFailure::Read => "IOERR error or timeout reading to target instance",
        })
    }
}

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
/// [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
fn migrate(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    let (mut copy, mut replace) = (false, false);
    let (mut username, mut password): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    let mut keys: &[&[u8]] = &argv[3..4];
    let mut a = Args::new(argv, 6);
    while a.more() {
        if a.word("copy") {
            copy = true;
        } else if a.word("replace") {
            replace = true;
        } else if a.word("auth") {
            password = Some(a.value());
        } else if a.word("auth2") {
            if a.left() < 2 {
                a.fail(error::SYNTAX);
            } else {
                username = Some(a.value());
                password = Some(a.value());
            }
        } else if a.word("keys") {
            if !argv[3].is_empty() {
                a.fail(CmdError::new(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            keys = a.rest();
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    let timeout = args::int(argv[5])?;
    let dbid = args::int(argv[4])?;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });

    // The RESTOREs, built while the keys are held: (key, ttl, payload).
    let (compress, fill) = payload_params(cx);
    let mut moving: Vec<(&[u8], i64, Vec<u8>)> = Vec::new();
    for key in keys {
        let Some(e) = cx.view.get(db, key, now) else {
            continue;
        };
        let ttl = if e.expire_at == 0 {
            0
        } else {
            (e.expire_at as i64 - now as i64).max(1)
        };
        moving.push((key, ttl, rdb::dump_payload(e.value, compress, fill)));
    }
    if moving.is_empty() {
        cx.simple(b"NOKEY");
        return Ok(());
    }

    let mut req = Vec::new();
    if let Some(pw) = password {
        let mut a: Vec<&[u8]> = vec![b"AUTH"];
        a.extend(username);
        a.push(pw);
        resp_command(&mut req, &a);
    }
    resp_command(&mut req, &[b"SELECT", dbid.to_string().as_bytes()]);
    for (key, ttl, bytes) in &moving {
        let ttl = ttl.to_string();
        let restore: &[u8] = if cx.server.cluster.enabled() {
            b"RESTORE-ASKING"
        } else {
            b"RESTORE"
        };
        let mut a: Vec<&[u8]> = vec![restore, key, ttl.as_bytes(), bytes];
        if replace {
            a.push(b"REPLACE");
        }
        resp_command(&mut req, &a);
    }

    let host = String::from_utf8_lossy(argv[1]);
    // As C's atoi: a port that does not parse is 0, which fails to connect.
    let port: u16 = std::str::from_utf8(argv[2])
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(0);
    let mut conn = match Target::connect(&host, port, timeout) {
        Ok(c) => c,
        Err(f) => return Err(f.error()),
    };
    if conn.stream.write_all(&req).is_err() {
        return Err(IoFailure::Write.error());
    }
    let auth_reply = match password {
        Some(_) => Some(conn.line().ok_or(IoFailure::Read.error())?),
        None => None,
    };
    let select_reply = conn.line().ok_or(IoFailure::Read.error())?;

    let mut target_error: Option<String> = None;
    let mut socket_error = false;
    let mut deleted: Vec<Vec<u8>> = Vec::new();
    for (key, _, _) in &moving {
        let Some(reply) = conn.line() else {
            socket_error = true;
            break;
        };
        let failed = [
            auth_reply.as_deref(),
            Some(&select_reply[..]),
            Some(&reply[..]),
        ]
        .into_iter()
        .flatten()
        .find(|r| r.first() == Some(&b'-'));
        if let Some(err) = failed {
            target_error.get_or_insert_with(|| String::from_utf8_lossy(&err[1..]).into_owned());
        } else if !copy && cx.view.remove(db, key, now).is_some() {
            cx.notify(notify::GENERIC, "del", key);
            cx.dirty += 1;
            deleted.push(key.to_vec());
        }
    }
    if !deleted.is_empty() {
        // The log and replicas see the keys the target acknowledged leave.
        if cx.server.cluster.enabled() {
            for key in &deleted {
                cx.server.cluster.moved_out(resp::slot::key_slot(key));
            }
        }
        let mut del = vec![b"DEL".to_vec()];
        del.extend(deleted);
        cx.propagate_instead(vec![del]);
    }
    let failure = match (target_error, socket_error) {
        (Some(e), _) => Some(CmdError::new(format!(
            "ERR Target instance replied with error: {e}"
        ))),
        (None, true) => Some(IoFailure::Read.error()),
        (None, false) => None,
    };
    match failure {
        // Keys already moved stay deleted and propagated, so the error
        // is written as a reply rather than failing the command.
        Some(e) if cx.dirty > 0 => cx.error(&e.0),
        Some(e) => return Err(e),
        None => cx.ok(),
    }
    Ok(())
}

/// A request in RESP, as the target reads it.
fn resp_command(out: &mut Vec<u8>, argv: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", argv.len()).as_bytes());
    for a in argv {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// The connection to the MIGRATE target.
struct Target {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Target {
    /// Connects within `timeout`. As Redis's non-blocking connect, only a
    /// timeout (or an address that does not resolve) fails the connect
    /// itself; a refused connection shows up as the first write failing.
    fn connect(host: &str, port: u16, timeout: Duration) -> Result<Target, IoFailure> {
        let addrs: Vec<_> = (host, port)
            .to_socket_addrs()
            .map_err(|_| IoFailure::Connect)?
            .collect();
        let mut failure = IoFailure::Connect;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    stream
                        .set_read_timeout(Some(timeout))
                        .and_then(|_| stream.set_write_timeout(Some(timeout)))
                        .map_err(|_| IoFailure::Write)?;
                    let reader = BufReader::new(stream.try_clone().map_err(|_| IoFailure::Write)?);
                    return Ok(Target { stream, reader });
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => failure = IoFailure::Connect,
                Err(_) => failure = IoFailure::Write,
            }
        }
        Err(failure)
    }

    /// One reply line without its CRLF; `None` on error, timeout or end of
    /// stream. A line is cut at 64 KB, so a hostile target cannot make us
    /// buffer without end.
    fn line(&mut self) -> Option<Vec<u8>> {
        let mut line = Vec::new();
        let n = (&mut self.reader)
            .take(64 * 1024)
            .read_until(b'\n', &mut line)
            .ok()?;
        if n == 0 || line.last() != Some(&b'\n') {
            return None;
        }
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Some(line)
    }
}
