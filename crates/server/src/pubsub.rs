//! Pub/sub: who is subscribed to what, and delivery of messages.
//!
//! A subscriber is a channel into its connection task; publishing encodes
//! each message once per protocol version and hands the same bytes to every
//! subscriber. Each subscriber counts the bytes queued for it: past the
//! `client-output-buffer-limit pubsub` hard limit, or over the soft limit
//! for longer than its seconds, the client is disconnected instead of
//! letting memory grow without bound (as Redis does).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::RwLock;
use resp::encode;
use tokio::sync::mpsc;

use crate::client::ClientInfo;
use crate::glob;

pub type Message = Arc<[u8]>;

pub struct Subscriber {
    pub info: Arc<ClientInfo>,
    tx: mpsc::UnboundedSender<Message>,
    /// The subscriber's protocol version, for the shape of messages.
    pub proto: AtomicU8,
    /// Bytes queued and not yet written to the socket.
    pub pending: AtomicUsize,
    /// When the queue went over the soft limit (ms since start), 0 if not.
    soft_since: AtomicU64,
}

impl Subscriber {
    pub fn new(
        info: Arc<ClientInfo>,
        proto: u8,
    ) -> (Arc<Subscriber>, mpsc::UnboundedReceiver<Message>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let s = Subscriber {
            info,
            tx,
            proto: AtomicU8::new(proto),
            pending: AtomicUsize::new(0),
            soft_since: AtomicU64::new(0),
        };
        (Arc::new(s), rx)
    }
}

/// `client-output-buffer-limit pubsub <hard> <soft> <soft-seconds>`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limit {
    pub hard: usize,
    pub soft: usize,
    pub soft_secs: u64,
}

/// Subscribers per channel name.
type Registry = HashMap<Vec<u8>, Vec<Arc<Subscriber>>>;

#[derive(Default)]
pub struct PubSub {
    channels: RwLock<Registry>,
    patterns: RwLock<Vec<(Vec<u8>, Arc<Subscriber>)>>,
    shard_channels: RwLock<Registry>,
    limit: RwLock<Limit>,
    started: std::sync::OnceLock<std::time::Instant>,
}

/// Which namespace a subscription lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl PubSub {
    pub fn set_limit(&self, limit: Limit) {
        *self.limit.write() = limit;
    }

    fn map(&self, kind: Kind) -> &RwLock<Registry> {
        if kind == Kind::Shard {
            &self.shard_channels
        } else {
            &self.channels
        }
    }

    pub fn subscribe(&self, kind: Kind, name: &[u8], sub: &Arc<Subscriber>) {
        if kind == Kind::Pattern {
            self.patterns.write().push((name.to_vec(), sub.clone()));
        } else {
            self.map(kind)
                .write()
                .entry(name.to_vec())
                .or_default()
                .push(sub.clone());
        }
    }

    pub fn unsubscribe(&self, kind: Kind, name: &[u8], sub: &Arc<Subscriber>) {
        if kind == Kind::Pattern {
            self.patterns
                .write()
                .retain(|(p, s)| !(p == name && Arc::ptr_eq(s, sub)));
            return;
        }
        let mut map = self.map(kind).write();
        if let Some(list) = map.get_mut(name) {
            list.retain(|s| !Arc::ptr_eq(s, sub));
            if list.is_empty() {
                map.remove(name);
            }
        }
    }

    /// Sends `payload` on `channel` (or shard channel); returns how many
    /// clients received it.
    pub fn publish(&self, shard: bool, channel: &[u8], payload: &[u8]) -> usize {
        let kind: &[u8] = if shard { b"smessage" } else { b"message" };
        let mut encoded: [Option<Message>; 2] = [None, None];
        let mut receivers = 0;
        let limit = *self.limit.read();
        let map = if shard {
            &self.shard_channels
        } else {
            &self.channels
        };
        if let Some(subs) = map.read().get(channel) {
            for s in subs {
                let proto = s.proto.load(Relaxed);
                let msg = encoded[(proto >= 3) as usize]
                    .get_or_insert_with(|| {
                        let mut out = Vec::with_capacity(32 + channel.len() + payload.len());
                        encode::push(&mut out, 3, proto);
                        encode::bulk(&mut out, kind);
                        encode::bulk(&mut out, channel);
                        encode::bulk(&mut out, payload);
                        out.into()
                    })
                    .clone();
                self.deliver(s, msg, limit);
                receivers += 1;
            }
        }
        if !shard {
            for (pattern, s) in self.patterns.read().iter() {
                if glob::matches(pattern, channel, false) {
                    let proto = s.proto.load(Relaxed);
                    let mut out =
                        Vec::with_capacity(48 + pattern.len() + channel.len() + payload.len());
                    encode::push(&mut out, 4, proto);
                    encode::bulk(&mut out, b"pmessage");
                    encode::bulk(&mut out, pattern);
                    encode::bulk(&mut out, channel);
                    encode::bulk(&mut out, payload);
                    self.deliver(s, out.into(), limit);
                    receivers += 1;
                }
            }
        }
        receivers
    }

    fn now_ms(&self) -> u64 {
        self.started
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_millis() as u64
            + 1
    }

    fn deliver(&self, s: &Subscriber, msg: Message, limit: Limit) {
        if s.info.killed.load(Relaxed) {
            return;
        }
        let pending = s.pending.fetch_add(msg.len(), Relaxed) + msg.len();
        let over_hard = limit.hard > 0 && pending > limit.hard;
        let mut over_soft = false;
        if limit.soft > 0 && pending > limit.soft {
            let now = self.now_ms();
            let since = s.soft_since.load(Relaxed);
            if since == 0 {
                s.soft_since.store(now, Relaxed);
            } else if now - since > limit.soft_secs * 1000 {
                over_soft = true;
            }
        } else {
            s.soft_since.store(0, Relaxed);
        }
        if over_hard || over_soft {
            tracing::warn!(
                id = s.info.id,
                pending,
                "closing pubsub client over its output buffer limit"
            );
            s.info.kill();
            return;
        }
        let _ = s.tx.send(msg);
    }

    /// Channels (or shard channels) with at least one subscriber matching
    /// `pattern` (all when None).
    pub fn channels(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let map = if shard {
            &self.shard_channels
        } else {
            &self.channels
        };
        map.read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob::matches(p, c, false)))
            .cloned()
            .collect()
    }

    pub fn numsub(&self, shard: bool, channel: &[u8]) -> usize {
        let map = if shard {
            &self.shard_channels
        } else {
            &self.channels
        };
        map.read().get(channel).map_or(0, Vec::len)
    }

    /// Ids of the clients with a subscription `allowed(name, is_pattern)`
    /// refuses (after a user's channel permissions shrank).
    pub fn clients_violating(&self, allowed: &dyn Fn(&[u8], bool) -> bool) -> Vec<u64> {
        let mut ids = Vec::new();
        for (p, s) in self.patterns.read().iter() {
            if !allowed(p, true) {
                ids.push(s.info.id);
            }
        }
        for map in [&self.channels, &self.shard_channels] {
            for (ch, subs) in map.read().iter() {
                if !allowed(ch, false) {
                    ids.extend(subs.iter().map(|s| s.info.id));
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    pub fn numpat(&self) -> usize {
        let mut pats: Vec<Vec<u8>> = self
            .patterns
            .read()
            .iter()
            .map(|(p, _)| p.clone())
            .collect();
        pats.sort();
        pats.dedup();
        pats.len()
    }
}

/// Parses `client-output-buffer-limit` ("normal 0 0 0 slave ... pubsub
/// 33554432 8388608 60") and returns the pubsub class.
pub fn parse_limit(config: &str) -> Limit {
    let parts: Vec<&str> = config.split_whitespace().collect();
    for chunk in parts.chunks(4) {
        if chunk.len() == 4 && chunk[0].eq_ignore_ascii_case("pubsub") {
            return Limit {
                hard: chunk[1].parse().unwrap_or(0),
                soft: chunk[2].parse().unwrap_or(0),
                soft_secs: chunk[3].parse().unwrap_or(0),
            };
        }
    }
    Limit::default()
}
