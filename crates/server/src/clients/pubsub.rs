//! Pub/sub: who is subscribed to what, and delivery of messages.
//!
//! A subscriber is a client; messages go to its inbox (`crate::clients::inbox`). Publishing encodes
//! each message once per protocol version and hands the same bytes to every
//! subscriber. Each subscriber counts the bytes queued for it: past the
//! `client-output-buffer-limit pubsub` hard limit, or over the soft limit
//! for longer than its seconds, the client is disconnected instead of
//! letting memory grow without bound (as Redis does).

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use parking_lot::RwLock;
use resp::encode;

use crate::client::ClientInfo;
use crate::clients::inbox::Pushed;
pub use crate::clients::inbox::{Limit, Message};
use crate::glob;

/// A subscribed client: messages go to its inbox, shaped for its protocol.
pub type Subscriber = ClientInfo;

/// Subscribers per channel name.
type Registry = HashMap<Vec<u8>, Vec<Arc<Subscriber>>>;

#[derive(Default)]
pub struct PubSub {
    channels: RwLock<Registry>,
    patterns: RwLock<Vec<(Vec<u8>, Arc<Subscriber>)>>,
    shard_channels: RwLock<Registry>,
    limit: RwLock<Limit>,
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
                let proto = s.resp.load(Relaxed);
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
                    let proto = s.resp.load(Relaxed);
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

    fn deliver(&self, s: &Subscriber, msg: Message, limit: Limit) {
        if s.killed.load(Relaxed) {
            return;
        }
        if s.inbox.push(msg, limit) == Pushed::OverLimit {
            tracing::warn!(
                id = s.id,
                pending = s.inbox.pending(),
                "closing pubsub client over its output buffer limit"
            );
            s.kill();
        }
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
                ids.push(s.id);
            }
        }
        for map in [&self.channels, &self.shard_channels] {
            for (ch, subs) in map.read().iter() {
                if !allowed(ch, false) {
                    ids.extend(subs.iter().map(|s| s.id));
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
