//! ACL LOG: the recent refusals (commands, keys, channels, failed AUTH),
//! newest first, similar ones within a minute folded into one entry with
//! a count, as Redis's addACLLogEntry.

use std::collections::VecDeque;

/// Why the entry was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command, key, channel or (for AUTH) the command name typed.
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// Unix ms of the last occurrence.
    pub ctime_ms: u64,
    /// CLIENT LIST line of the last client.
    pub client_info: String,
}

/// Entries closer in time than this are one entry (Redis's
/// ACL_LOG_GROUPING_MAX_TIME_DELTA).
const GROUPING_MS: u64 = 60_000;
/// How many recent entries a new one is compared with.
const SCAN: usize = 10;

#[derive(Default)]
pub struct AclLog {
    entries: VecDeque<Entry>,
}

impl AclLog {
    /// Adds `e` (or counts it in a similar recent entry), keeping at most
    /// `max_len` entries.
    pub fn add(&mut self, e: Entry, max_len: usize) {
        let similar = self.entries.iter().take(SCAN).position(|o| {
            o.reason == e.reason
                && o.context == e.context
                && o.ctime_ms.abs_diff(e.ctime_ms) <= GROUPING_MS
                && o.object == e.object
                && o.username == e.username
        });
        match similar.and_then(|i| self.entries.remove(i)) {
            Some(mut o) => {
                o.count += 1;
                o.ctime_ms = e.ctime_ms;
                o.client_info = e.client_info;
                self.entries.push_front(o);
            }
            None => {
                self.entries.push_front(e);
                self.entries.truncate(max_len);
            }
        }
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `acllog-max-len` lowered.
    pub fn trim(&mut self, max_len: usize) {
        self.entries.truncate(max_len);
    }
}
