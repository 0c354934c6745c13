//! The slow log (Redis's slowlog.c): the latest `slowlog-max-len`
//! commands that took `slowlog-log-slower-than` microseconds or more,
//! newest first.
//!
//! Samples are taken where a command's duration is already measured:
//! dispatch (a command sent by a client), EXEC (each command it runs;
//! EXEC itself is `skip_slowlog`) and a script's `redis.call` (each
//! command, shown as run by the Lua client `?:0`, before the script's own
//! entry). Below the threshold a command costs one compare with
//! [`SlowLog::watch_us`], which is also the latency monitor's threshold
//! when that is lower; everything else is out of line.
//!
//! A blocked command (BLPOP...) is logged once, when it is served, with
//! the time its runs took (not the time it waited), as Redis's
//! updateStatsOnUnblock; one that times out or is unblocked by CLIENT
//! UNBLOCK is not logged (Redis 7.0 does not either).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

use parking_lot::Mutex;

use crate::client::Client;
use crate::command::table::{flag, Command};
use crate::server::Server;

/// At most this many arguments are kept; the last kept one then says how
/// many more there were (SLOWLOG_ENTRY_MAX_ARGC).
pub const MAX_ARGC: usize = 32;
/// Arguments are cut to this many bytes (SLOWLOG_ENTRY_MAX_STRING).
pub const MAX_STRING: usize = 128;
/// What a redacted argument (a password) shows.
pub const REDACTED: &[u8] = b"(redacted)";
/// The client a script's commands are shown as run by (Redis's Lua
/// client has no connection).
pub const SCRIPT_PEER: &str = "?:0";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    /// Unix time in seconds when it was logged.
    pub time: u64,
    /// Microseconds.
    pub duration: u64,
    pub argv: Vec<Vec<u8>>,
    /// `ip:port` (or `path:0`) of the client.
    pub peer: String,
    pub name: Vec<u8>,
}

#[derive(Default)]
struct Log {
    /// Newest first.
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// A blocked command's runs so far (logged once it ends its wait).
#[derive(Debug, Clone, Default)]
pub struct BlockedRun {
    pub argv: Vec<Vec<u8>>,
    pub us: u64,
}

pub struct SlowLog {
    /// The lower of `slowlog-log-slower-than` and the latency monitor's
    /// threshold, in microseconds (`u64::MAX`: both off). A command faster
    /// than this costs one compare.
    watch_us: AtomicU64,
    /// `slowlog-log-slower-than` (negative: off).
    slower_than: AtomicI64,
    max_len: AtomicUsize,
    log: Mutex<Log>,
}

impl Default for SlowLog {
    fn default() -> SlowLog {
        SlowLog {
            watch_us: AtomicU64::new(u64::MAX),
            slower_than: AtomicI64::new(-1),
            max_len: AtomicUsize::new(128),
            log: Mutex::new(Log {
                entries: VecDeque::new(),
                next_id: 0,
            }),
        }
    }
}

impl SlowLog {
    /// After CONFIG SET: the thresholds (`latency_ms`: the latency
    /// monitor's, 0 off). A lower `slowlog-max-len` trims the log at once
    /// while the log is on (in Redis the CONFIG SET itself is logged,
    /// which trims it); while it is off the entries stay until the next.
    pub fn configure(&self, slower_than: i64, max_len: i64, latency_ms: u64) {
        self.slower_than.store(slower_than, Relaxed);
        let max_len = max_len.max(0) as usize;
        self.max_len.store(max_len, Relaxed);
        let slow = if slower_than < 0 {
            u64::MAX
        } else {
            slower_than as u64
        };
        let latency = if latency_ms == 0 {
            u64::MAX
        } else {
            latency_ms.saturating_mul(1000)
        };
        self.watch_us.store(slow.min(latency), Relaxed);
        if slower_than >= 0 {
            self.log.lock().entries.truncate(max_len);
        }
    }

    /// Below this many microseconds a command is neither slow nor a
    /// latency event.
    #[inline]
    pub fn watch_us(&self) -> u64 {
        self.watch_us.load(Relaxed)
    }

    /// `slowlog-log-slower-than` (negative: off).
    pub fn slower_than(&self) -> i64 {
        self.slower_than.load(Relaxed)
    }

    /// Whether a command that took `us` is logged.
    #[inline]
    pub fn is_slow(&self, us: u64) -> bool {
        let t = self.slower_than.load(Relaxed);
        t >= 0 && us >= t as u64
    }

    /// Logs a command that took `us` if that is slow enough (Redis's
    /// slowlogPushEntryIfNeeded), trimming the log to its length.
    pub fn push_if_slow(&self, us: u64, argv: Vec<Vec<u8>>, peer: String, name: Vec<u8>) {
        if !self.is_slow(us) {
            return;
        }
        self.push(Entry {
            id: 0,
            time: crate::command::unix_ms() / 1000,
            duration: us,
            argv,
            peer,
            name,
        });
    }

    /// Adds `entry` (its id assigned here) as the newest.
    pub fn push(&self, mut entry: Entry) {
        let max = self.max_len.load(Relaxed);
        let mut log = self.log.lock();
        entry.id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(entry);
        log.entries.truncate(max);
    }

    pub fn len(&self) -> usize {
        self.log.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// SLOWLOG RESET: the entries go, the ids keep counting.
    pub fn reset(&self) {
        self.log.lock().entries.clear();
    }

    /// The newest `count` entries.
    pub fn newest(&self, count: usize) -> Vec<Entry> {
        self.log
            .lock()
            .entries
            .iter()
            .take(count)
            .cloned()
            .collect()
    }
}

/// The arguments as an entry keeps them (Redis's slowlogCreateEntry): at
/// most [`MAX_ARGC`], the last kept saying how many more there were; each
/// cut to [`MAX_STRING`] bytes with the number of bytes left out; what the
/// command redacts (passwords) as `(redacted)`.
pub fn entry_argv(cmd: &Command, argv: &[&[u8]]) -> Vec<Vec<u8>> {
    let redacted = redactions(cmd, argv);
    let argc = argv.len();
    let kept = argc.min(MAX_ARGC);
    (0..kept)
        .map(|j| {
            if kept != argc && j == kept - 1 {
                format!("... ({} more arguments)", argc - kept + 1).into_bytes()
            } else if redacted.contains(&j) {
                REDACTED.to_vec()
            } else if argv[j].len() > MAX_STRING {
                let mut s = argv[j][..MAX_STRING].to_vec();
                s.extend_from_slice(
                    format!("... ({} more bytes)", argv[j].len() - MAX_STRING).as_bytes(),
                );
                s
            } else {
                argv[j].to_vec()
            }
        })
        .collect()
}

/// The configuration parameters whose values CONFIG SET redacts (Redis
/// 7.0's SENSITIVE_CONFIG).
const SENSITIVE_CONFIG: [&str; 3] = ["masteruser", "masterauth", "requirepass"];

/// The positions of the arguments Redis 7.0's handlers redact
/// (redactClientCommandArgument): AUTH's, HELLO's AUTH pair, MIGRATE's
/// AUTH/AUTH2 passwords, CONFIG SET of a sensitive parameter, ACL
/// SETUSER's user and rules. Each as far as Redis gets before an error.
fn redactions(cmd: &Command, argv: &[&[u8]]) -> Vec<usize> {
    let eq = |a: &[u8], b: &str| a.eq_ignore_ascii_case(b.as_bytes());
    let argc = argv.len();
    match cmd.name.as_str() {
        // A syntax error (more than three arguments) comes first.
        "auth" if argc <= 3 => (1..argc).collect(),
        "acl|setuser" => (2..argc).collect(),
        "config|set" if argc >= 4 && argc.is_multiple_of(2) => (2..argc)
            .step_by(2)
            .filter(|&i| SENSITIVE_CONFIG.iter().any(|p| eq(argv[i], p)))
            .map(|i| i + 1)
            .collect(),
        "hello" => {
            let mut out = Vec::new();
            if argc >= 2 {
                match resp::parse_i64(argv[1]) {
                    Some(2 | 3) => {}
                    _ => return out,
                }
            }
            let mut j = 2;
            while j < argc {
                let more = argc - 1 - j;
                if eq(argv[j], "auth") && more >= 2 {
                    out.extend([j + 1, j + 2]);
                    j += 2;
                } else if eq(argv[j], "setname") && more >= 1 {
                    j += 1;
                } else {
                    break;
                }
                j += 1;
            }
            out
        }
        "migrate" => {
            let mut out = Vec::new();
            let mut j = 6;
            while j < argc {
                let more = argc - 1 - j;
                if eq(argv[j], "copy") || eq(argv[j], "replace") {
                } else if eq(argv[j], "auth") {
                    if more == 0 {
                        break;
                    }
                    j += 1;
                    out.push(j);
                } else if eq(argv[j], "auth2") {
                    if more < 2 {
                        break;
                    }
                    out.extend([j + 1, j + 2]);
                    j += 2;
                } else {
                    // KEYS (the rest are keys) or a syntax error.
                    break;
                }
                j += 1;
            }
            out
        }
        _ => Vec::new(),
    }
}

/// After a command from dispatch that took `us` microseconds, at or
/// above [`SlowLog::watch_us`] or flagged `blocking`: the latency event
/// and the slow log.
#[cold]
#[inline(never)]
/// `parked`: the command blocked (its connection waits for a key).
pub fn command_done(
    server: &Server,
    client: &mut Client,
    cmd: &Command,
    argv: &[&[u8]],
    us: u64,
    parked: bool,
) {
    if replaying(client) {
        return;
    }
    if client.woken {
        // Serving a blocked client (Redis's reply time after unblocking).
        server.latency.add_us_if_needed("command-unblocking", us);
    } else {
        server.latency.add_us_if_needed(command_event(cmd), us);
    }
    if cmd.has(flag::BLOCKING) {
        if parked {
            // Blocked: logged once it is served, with what its runs
            // took.
            match client.blocked_run.as_mut() {
                Some(run) => run.us += us,
                None if server.slowlog.slower_than() >= 0 => {
                    client.blocked_run = Some(BlockedRun {
                        argv: entry_argv(cmd, argv),
                        us,
                    })
                }
                None => {}
            }
            return;
        }
        if let Some(run) = client.blocked_run.take() {
            push(server, client, run.argv, run.us + us);
            return;
        }
    }
    if cmd.has(flag::SKIP_SLOWLOG) || !server.slowlog.is_slow(us) {
        return;
    }
    push(server, client, entry_argv(cmd, argv), us);
}

/// The AOF loader's pseudo-client (no connection): what it replays is
/// neither logged nor a latency event, as Redis's loading runs commands
/// outside call().
#[inline]
fn replaying(client: &Client) -> bool {
    client.info.fd < 0
}

fn push(server: &Server, client: &Client, argv: Vec<Vec<u8>>, us: u64) {
    let name = client.info.name.lock().clone();
    server
        .slowlog
        .push_if_slow(us, argv, client.info.addr.clone(), name);
}

/// The latency event of a command: `fast-command` for those flagged
/// `fast`, else `command`.
#[inline]
pub fn command_event(cmd: &Command) -> &'static str {
    if cmd.has(flag::FAST) {
        "fast-command"
    } else {
        "command"
    }
}

/// A command run by EXEC or (`script`) a script that took `us`: its
/// latency event and its slow-log entry (a script's wait in `client` until
/// the script ends, see [`flush_script`]).
#[inline]
pub fn inner_command_done(
    server: &Server,
    client: &mut Client,
    cmd: &Command,
    argv: &[&[u8]],
    us: u64,
    script: bool,
) {
    if us >= server.slowlog.watch_us() {
        inner_slow(server, client, cmd, argv, us, script);
    }
}

#[cold]
#[inline(never)]
fn inner_slow(
    server: &Server,
    client: &mut Client,
    cmd: &Command,
    argv: &[&[u8]],
    us: u64,
    script: bool,
) {
    if replaying(client) {
        return;
    }
    server.latency.add_us_if_needed(command_event(cmd), us);
    if cmd.has(flag::SKIP_SLOWLOG) || !server.slowlog.is_slow(us) {
        return;
    }
    let argv = entry_argv(cmd, argv);
    if script {
        client.script_slowlog.push(Entry {
            id: 0,
            time: crate::command::unix_ms() / 1000,
            duration: us,
            argv,
            peer: SCRIPT_PEER.to_string(),
            name: Vec::new(),
        });
    } else {
        push(server, client, argv, us);
    }
}

/// A script ended: the entries of its slow commands go to the log (a
/// script that restarts with more shards drops those of its first run).
#[cold]
pub fn flush_script(server: &Server, client: &mut Client) {
    for e in std::mem::take(&mut client.script_slowlog) {
        server.slowlog.push(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> crate::command::table::CommandTable {
        crate::command::build_table().unwrap()
    }

    fn argv_of(table: &crate::command::table::CommandTable, argv: &[&[u8]]) -> Vec<Vec<u8>> {
        let cmd = crate::command::resolve(table, argv).unwrap();
        entry_argv(cmd, argv)
    }

    #[test]
    fn slowlog_entry_argv_truncates_and_counts() {
        let t = table();
        let many: Vec<Vec<u8>> = (0..40).map(|i| i.to_string().into_bytes()).collect();
        let mut argv: Vec<&[u8]> = vec![b"sadd", b"k"];
        argv.extend(many.iter().map(Vec::as_slice));
        let got = argv_of(&t, &argv);
        assert_eq!(got.len(), 32);
        assert_eq!(got[31], b"... (11 more arguments)".to_vec());
        assert_eq!(got[30], b"28".to_vec());
        let long = vec![b'x'; 200];
        let got = argv_of(&t, &[b"set", b"k", &long]);
        let mut want = vec![b'x'; 128];
        want.extend_from_slice(b"... (72 more bytes)");
        assert_eq!(got[2], want);
    }

    #[test]
    fn slowlog_redactions_as_redis() {
        let t = table();
        let r = |argv: &[&[u8]]| argv_of(&t, argv);
        let red = REDACTED.to_vec();
        assert_eq!(r(&[b"auth", b"pw"])[1], red);
        assert_eq!(r(&[b"auth", b"a", b"b", b"c"])[1], b"a".to_vec());
        let h = r(&[b"hello", b"3", b"auth", b"u", b"p", b"setname", b"n"]);
        assert_eq!((&h[3], &h[4], &h[6]), (&red, &red, &b"n".to_vec()));
        assert_eq!(r(&[b"hello", b"4", b"auth", b"u", b"p"])[3], b"u".to_vec());
        let c = r(&[b"config", b"set", b"MASTERAUTH", b"x", b"maxmemory", b"1"]);
        assert_eq!((&c[3], &c[5]), (&red, &b"1".to_vec()));
        let a = r(&[b"acl", b"setuser", b"bob", b"on"]);
        assert_eq!((&a[2], &a[3]), (&red, &red));
    }

    #[test]
    fn slowlog_push_trims_and_ids_increase() {
        let s = SlowLog::default();
        s.configure(0, 2, 0);
        for i in 0..3u8 {
            s.push_if_slow(5, vec![vec![i]], "a:1".into(), Vec::new());
        }
        let got = s.newest(10);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].id, got[1].id), (2, 1));
        s.configure(-1, 1, 0);
        assert_eq!(s.len(), 2, "no trim while the log is off");
        s.configure(0, 1, 0);
        assert_eq!(s.len(), 1);
        s.configure(10, 1, 5);
        assert_eq!(s.watch_us(), 10);
        s.configure(-1, 1, 5);
        assert_eq!(s.watch_us(), 5000);
    }
}
