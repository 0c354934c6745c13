//! Cluster mode: CRC16 key slots (with hash tags), the slot→master map from
//! CLUSTER SLOTS, and per-connection routes that pick keys or `{tag}`s
//! belonging to the connection's node, so load spreads across all slots.

use std::sync::{Arc, OnceLock};

use anyhow::{bail, Context, Result};
use resp::Value;

use crate::cli::Target;
use crate::server::Control;

pub use resp::slot::{crc16, SLOTS};

/// Slot of a key, honouring `{hash tags}` (the server's own function).
pub fn key_slot(key: &[u8]) -> u16 {
    resp::slot::key_slot(key) as u16
}

/// For every slot, 3 bytes that fill the `tag` of `{tag}` so the key hashes
/// to that slot. Short tags are padded with `}` as redis-benchmark does
/// (`{a}}}` hashes on "a").
pub fn tag_table() -> &'static [[u8; 3]] {
    static TABLE: OnceLock<Vec<[u8; 3]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
        let mut table = vec![[0u8; 3]; SLOTS];
        let mut found = vec![false; SLOTS];
        let mut left = SLOTS;
        let mut candidates: Vec<([u8; 3], usize)> = Vec::new();
        for &a in ALPHA {
            candidates.push(([a, b'}', b'}'], 1));
            for &b in ALPHA {
                candidates.push(([a, b, b'}'], 2));
            }
        }
        for &a in ALPHA {
            for &b in ALPHA {
                for &c in ALPHA {
                    candidates.push(([a, b, c], 3));
                }
            }
        }
        for (t, len) in candidates {
            let s = (crc16(&t[..len]) as usize) % SLOTS;
            if !found[s] {
                found[s] = true;
                table[s] = t;
                left -= 1;
                if left == 0 {
                    break;
                }
            }
        }
        table
    })
}

/// Masters and which one owns each slot.
#[derive(Debug, Clone)]
pub struct SlotMap {
    pub masters: Vec<Target>,
    pub owner: Vec<u16>,
}

impl SlotMap {
    pub fn slots_of(&self, node: usize) -> Vec<u16> {
        (0..SLOTS as u16)
            .filter(|&s| self.owner[s as usize] as usize == node)
            .collect()
    }
}

fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(i) => Some(*i),
        Value::Bulk(b) | Value::Simple(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

/// Fetches the slot map with CLUSTER SLOTS through `ctrl`.
pub fn fetch_slot_map(ctrl: &mut Control, seed: &Target) -> Result<SlotMap> {
    let reply = ctrl.call(&[b"CLUSTER", b"SLOTS"])?;
    let Value::Array(ranges) = reply else {
        bail!("CLUSTER SLOTS: unexpected reply {reply:?}");
    };
    let mut masters: Vec<Target> = Vec::new();
    let mut owner = vec![u16::MAX; SLOTS];
    for r in ranges {
        let Value::Array(items) = r else { continue };
        if items.len() < 3 {
            continue;
        }
        let (Some(from), Some(to)) = (as_int(&items[0]), as_int(&items[1])) else {
            continue;
        };
        let Value::Array(node) = &items[2] else {
            continue;
        };
        let host = match node.first() {
            Some(Value::Bulk(h)) if !h.is_empty() => String::from_utf8_lossy(h).into_owned(),
            _ => seed.host.clone(),
        };
        let port = node.get(1).and_then(as_int).unwrap_or(0) as u16;
        let t = Target {
            host,
            port,
            socket: None,
        };
        let idx = match masters.iter().position(|m| *m == t) {
            Some(i) => i,
            None => {
                masters.push(t);
                masters.len() - 1
            }
        };
        for s in from.max(0)..=to.min(SLOTS as i64 - 1) {
            owner[s as usize] = idx as u16;
        }
    }
    if masters.len() <= 1 {
        bail!("Invalid cluster: {} node(s).", masters.len());
    }
    Ok(SlotMap { masters, owner })
}

pub fn connect_and_fetch(seed: &Target, cfg: &crate::cli::Config) -> Result<SlotMap> {
    let mut ctrl = Control::connect(seed, cfg).with_context(|| {
        format!(
            "Failed to fetch cluster configuration from {}",
            seed.label()
        )
    })?;
    fetch_slot_map(&mut ctrl, seed)
}

/// Where one connection's keys must land: the slots its node owns.
#[derive(Debug, Clone)]
pub struct Route {
    pub node: usize,
    map: Arc<SlotMap>,
    slots: Arc<Vec<u16>>,
    cursor: usize,
}

impl Route {
    pub fn new(map: Arc<SlotMap>, node: usize) -> Route {
        let slots = Arc::new(map.slots_of(node));
        Route {
            node,
            map,
            slots,
            cursor: 0,
        }
    }

    /// Next hash tag, cycling through the node's slots.
    #[inline]
    pub fn next_tag(&mut self) -> [u8; 3] {
        if self.slots.is_empty() {
            return *b"}}}";
        }
        let slot = self.slots[self.cursor % self.slots.len()];
        self.cursor = self.cursor.wrapping_add(1);
        tag_table()[slot as usize]
    }

    #[inline]
    pub fn owns_key(&self, key: &[u8]) -> bool {
        self.map.owner[key_slot(key) as usize] as usize == self.node
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from the Redis Cluster specification / CLUSTER KEYSLOT.
        assert_eq!(key_slot(b"123456789"), 12739);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
    }

    #[test]
    fn tag_table_covers_every_slot() {
        let t = tag_table();
        for (slot, tag) in t.iter().enumerate() {
            let key = [b"k:{", &tag[..], b"}:x"].concat();
            assert_eq!(key_slot(&key) as usize, slot);
        }
    }
}
