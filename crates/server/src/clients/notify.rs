//! Keyspace notifications (`notify-keyspace-events`): event classes,
//! their config syntax, and publishing `__keyspace@<db>__:<key>` /
//! `__keyevent@<db>__:<event>` messages.

pub const KEYSPACE: u32 = 1 << 0;
pub const KEYEVENT: u32 = 1 << 1;
pub const GENERIC: u32 = 1 << 2;
pub const STRING: u32 = 1 << 3;
pub const LIST: u32 = 1 << 4;
pub const SET: u32 = 1 << 5;
pub const HASH: u32 = 1 << 6;
pub const ZSET: u32 = 1 << 7;
pub const EXPIRED: u32 = 1 << 8;
pub const EVICTED: u32 = 1 << 9;
pub const STREAM: u32 = 1 << 10;
pub const KEY_MISS: u32 = 1 << 11;
pub const MODULE: u32 = 1 << 12;
pub const NEW: u32 = 1 << 13;
/// `A`: every class but key-miss, module and new-key events.
pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM;

const CLASSES: [(char, u32); 11] = [
    ('g', GENERIC),
    ('$', STRING),
    ('l', LIST),
    ('s', SET),
    ('h', HASH),
    ('z', ZSET),
    ('x', EXPIRED),
    ('e', EVICTED),
    ('t', STREAM),
    ('d', MODULE),
    ('n', NEW),
];

/// Parses the config string; None on an unknown character.
pub fn parse(s: &str) -> Option<u32> {
    let mut flags = 0;
    for c in s.chars() {
        flags |= match c {
            'A' => ALL,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            'm' => KEY_MISS,
            c => CLASSES.iter().find(|(ch, _)| *ch == c)?.1,
        };
    }
    Some(flags)
}

/// The value kept for the parameter: [`to_string`]'s, plus `n` when `A`
/// hides it (Redis shows "AKE" for "AKEn" but keeps publishing `new`).
pub fn to_stored(flags: u32) -> String {
    let mut s = to_string(flags);
    if flags & ALL == ALL && flags & NEW != 0 {
        s.push('n');
    }
    s
}

/// The canonical config string, as CONFIG GET shows it.
pub fn to_string(flags: u32) -> String {
    let mut s = String::new();
    if flags & ALL == ALL {
        s.push('A');
    } else {
        for (c, f) in CLASSES {
            if flags & f != 0 {
                s.push(c);
            }
        }
    }
    if flags & KEYSPACE != 0 {
        s.push('K');
    }
    if flags & KEYEVENT != 0 {
        s.push('E');
    }
    if flags & KEY_MISS != 0 {
        s.push('m');
    }
    s
}

/// Publishes one event if `flags` (the configured classes) select it.
pub fn publish(
    pubsub: &crate::clients::pubsub::PubSub,
    flags: u32,
    class: u32,
    event: &str,
    key: &[u8],
    db: usize,
) {
    if flags & class == 0 || flags & (KEYSPACE | KEYEVENT) == 0 {
        return;
    }
    if flags & KEYSPACE != 0 {
        let mut channel = format!("__keyspace@{db}__:").into_bytes();
        channel.extend_from_slice(key);
        pubsub.publish(false, &channel, event.as_bytes());
    }
    if flags & KEYEVENT != 0 {
        let channel = format!("__keyevent@{db}__:{event}");
        pubsub.publish(false, channel.as_bytes(), key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_strings_round_trip_as_redis() {
        assert_eq!(to_string(parse("KEA").unwrap()), "AKE");
        assert_eq!(to_string(parse("Ex").unwrap()), "xE");
        assert_eq!(to_string(parse("").unwrap()), "");
        assert_eq!(parse("KZ"), None);
    }
}
