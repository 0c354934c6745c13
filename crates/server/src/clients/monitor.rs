//! MONITOR: the clients that see every command the server runs, and the
//! line each gets (Redis's replicationFeedMonitors): `+<unix secs>.<usecs>
//! [<db> <client address>|lua|unix:<path>] "arg" "arg"`, arguments quoted
//! as Redis's sdscatrepr quotes them, passwords redacted.
//!
//! The commands fed, and when, are decided in dispatch (`command::execute`):
//! after a command runs (so `SELECT 1` shows db 1 and EXEC follows the
//! commands it ran), scripts' EVAL/FCALL before they run (their commands
//! follow, from `lua`), never `admin` or `skip_monitor` commands, nor those
//! refused before running.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::client::ClientInfo;
use crate::clients::inbox::Limit;

#[derive(Default)]
pub struct Monitors {
    count: AtomicUsize,
    clients: RwLock<Vec<Arc<ClientInfo>>>,
}

/// Where a fed command came from.
pub enum Origin<'a> {
    Client(&'a ClientInfo),
    /// A script's `redis.call`.
    Lua,
}

impl Monitors {
    /// Whether any client monitors: asked once per command.
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    /// MONITOR: false if the client already monitors.
    pub fn add(&self, c: &Arc<ClientInfo>) -> bool {
        if c.monitor.swap(true, Relaxed) {
            return false;
        }
        self.clients.write().push(c.clone());
        self.count.fetch_add(1, Relaxed);
        true
    }

    /// RESET, or the connection closed.
    pub fn remove(&self, c: &ClientInfo) {
        if !c.monitor.swap(false, Relaxed) {
            return;
        }
        self.clients.write().retain(|m| m.id != c.id);
        self.count.fetch_sub(1, Relaxed);
    }

    /// The line for `argv`, run by `origin` in database `db`, now.
    pub fn line(origin: Origin, unixsocket: &str, db: usize, argv: &[&[u8]]) -> Vec<u8> {
        format_line(origin, unixsocket, db, argv, crate::command::unix_us())
    }

    /// Sends `line` to every monitor.
    pub fn send(&self, line: Vec<u8>) {
        let msg: crate::clients::inbox::Message = line.into();
        for m in self.clients.read().iter() {
            if !m.killed.load(Relaxed) {
                m.inbox.push(msg.clone(), Limit::default());
            }
        }
    }
}

fn format_line(
    origin: Origin,
    unixsocket: &str,
    db: usize,
    argv: &[&[u8]],
    now_us: u64,
) -> Vec<u8> {
    let mut out = format!("+{}.{:06} ", now_us / 1_000_000, now_us % 1_000_000).into_bytes();
    match origin {
        Origin::Lua => out.extend_from_slice(format!("[{db} lua] ").as_bytes()),
        Origin::Client(c) if c.unix => {
            out.extend_from_slice(format!("[{db} unix:{unixsocket}] ").as_bytes())
        }
        Origin::Client(c) => out.extend_from_slice(format!("[{db} {}] ", c.addr).as_bytes()),
    }
    let redacted = redacted_args(argv);
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        if redacted.contains(&i) {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            repr(&mut out, a);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The positions of passwords (and user names given with them) Redis
/// replaces by `(redacted)`: AUTH's arguments, HELLO's AUTH pair,
/// MIGRATE's AUTH password and AUTH2 pair.
fn redacted_args(argv: &[&[u8]]) -> Vec<usize> {
    let is = |a: &[u8], w: &str| a.eq_ignore_ascii_case(w.as_bytes());
    let name = argv[0];
    let mut out = Vec::new();
    if is(name, "auth") {
        out.extend(1..argv.len());
    } else if is(name, "hello") {
        let mut i = 2;
        while i < argv.len() {
            if is(argv[i], "auth") && i + 2 < argv.len() {
                out.extend([i + 1, i + 2]);
                i += 3;
            } else if is(argv[i], "setname") {
                i += 2;
            } else {
                i += 1;
            }
        }
    } else if is(name, "migrate") {
        let mut i = 6;
        while i < argv.len() {
            if is(argv[i], "keys") {
                break;
            }
            if is(argv[i], "auth") && i + 1 < argv.len() {
                out.push(i + 1);
                i += 2;
            } else if is(argv[i], "auth2") && i + 2 < argv.len() {
                out.extend([i + 1, i + 2]);
                i += 3;
            } else {
                i += 1;
            }
        }
    }
    out
}

/// Redis's sdscatrepr: quoted, with C escapes for `\\ " \n \r \t \a \b`
/// and `\xHH` for other bytes outside printable ASCII.
fn repr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format() {
        let line = format_line(
            Origin::Lua,
            "",
            3,
            &[b"SET", b"a b", b"x\x00\n\"\\\x7f\xc3"],
            1_795_678_169_000_324,
        );
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "+1795678169.000324 [3 lua] \"SET\" \"a b\" \"x\\x00\\n\\\"\\\\\\x7f\\xc3\"\r\n"
        );
        let line = format_line(
            Origin::Lua,
            "",
            0,
            &[b"HELLO", b"3", b"AUTH", b"u", b"p"],
            0,
        );
        assert!(line.ends_with(b"\"HELLO\" \"3\" \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"));
        let line = format_line(Origin::Lua, "", 0, &[b"auth", b"pw"], 0);
        assert!(line.ends_with(b"\"auth\" \"(redacted)\"\r\n"));
    }
}
