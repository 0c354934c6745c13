//! Valkey 8.0's per-slot usage statistics (CLUSTER SLOT-STATS): with
//! `cluster-slot-stats-enabled`, the CPU time, request bytes and reply
//! bytes of every request whose keys are in one slot, added to that slot.
//!
//! What is counted follows Valkey's clusterSlotStats*: a request's own
//! time and reply once it no longer waits (a blocked command when it is
//! served), the bytes of every request including those queued in MULTI
//! and their `+QUEUED` (EXEC adds MULTI's 15), nothing for keyless
//! requests or a script's keys in several slots. Unlike Valkey, the replication stream's bytes
//! and shard-channel messages are not added to `network-bytes-out`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use keel_cluster::SLOTS;

use crate::client::Client;
use crate::command::call::Call;
use crate::command::table::flag;

/// The counters, one of each per slot.
pub struct SlotStats {
    enabled: AtomicBool,
    cpu_usec: Box<[AtomicU64]>,
    bytes_in: Box<[AtomicU64]>,
    bytes_out: Box<[AtomicU64]>,
}

impl Default for SlotStats {
    fn default() -> SlotStats {
        let column = || (0..SLOTS).map(|_| AtomicU64::new(0)).collect();
        SlotStats {
            enabled: AtomicBool::new(false),
            cpu_usec: column(),
            bytes_in: column(),
            bytes_out: column(),
        }
    }
}

/// One slot's counters as CLUSTER SLOT-STATS shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu_usec: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl SlotStats {
    /// `cluster-slot-stats-enabled`.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Relaxed);
    }

    pub fn add(&self, slot: usize, u: Usage) {
        self.cpu_usec[slot].fetch_add(u.cpu_usec, Relaxed);
        self.bytes_in[slot].fetch_add(u.bytes_in, Relaxed);
        self.bytes_out[slot].fetch_add(u.bytes_out, Relaxed);
    }

    pub fn get(&self, slot: usize) -> Usage {
        Usage {
            cpu_usec: self.cpu_usec[slot].load(Relaxed),
            bytes_in: self.bytes_in[slot].load(Relaxed),
            bytes_out: self.bytes_out[slot].load(Relaxed),
        }
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for c in [&self.cpu_usec, &self.bytes_in, &self.bytes_out] {
            c.iter().for_each(|v| v.store(0, Relaxed));
        }
    }
}

/// The slot every key of the request (of the transaction EXEC runs) is
/// in; `None` without keys or with keys in several slots.
pub fn request_slot(client: &Client, call: &Call) -> Option<usize> {
    let mut slot = None;
    let mut one = |s: usize| match slot {
        None => {
            slot = Some(s);
            true
        }
        Some(first) => first == s,
    };
    if call.cmd.has(flag::EXEC) {
        for queued in client.tx.as_ref().map_or(&[][..], |tx| &tx.queue) {
            if !queued.keys.as_slice().iter().all(|k| one(k.slot())) {
                return None;
            }
        }
    } else if !call.keys().iter().all(|k| one(k.slot())) {
        return None;
    }
    slot
}

/// The bytes a client sends for `argv` (a RESP array of bulk strings),
/// and MULTI's before an EXEC.
pub fn request_bytes(argv: &[&[u8]], exec: bool) -> u64 {
    let digits = |n: usize| n.checked_ilog10().unwrap_or(0) as u64 + 1;
    let bulks: u64 = argv
        .iter()
        .map(|a| 1 + digits(a.len()) + 2 + a.len() as u64 + 2)
        .sum();
    let multi = if exec { 15 } else { 0 };
    1 + digits(argv.len()) + 2 + bulks + multi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes_are_the_resp_array() {
        // *3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\n
        assert_eq!(
            request_bytes(&[b"SET", b"k", b"0123456789"], false),
            4 + 9 + 7 + 17
        );
        // *1\r\n$4\r\nEXEC\r\n and *1\r\n$5\r\nmulti\r\n
        assert_eq!(request_bytes(&[b"EXEC"], true), 14 + 15);
    }

    #[test]
    fn counters_add_and_reset() {
        let s = SlotStats::default();
        let u = Usage {
            cpu_usec: 3,
            bytes_in: 20,
            bytes_out: 5,
        };
        s.add(7, u);
        s.add(7, u);
        assert_eq!(s.get(7).bytes_in, 40);
        assert_eq!(s.get(8), Usage::default());
        s.reset();
        assert_eq!(s.get(7), Usage::default());
    }
}
