//! Commands that recreate a collection: what an AOF rewrite writes for each
//! key (RPUSH, HSET, SADD, ZADD in batches, as Redis's rewriteAppendOnlyFile
//! does with AOF_REWRITE_ITEMS_PER_CMD).

use resp::encode;

use crate::storage::value::Value;

/// Items per command, as Redis's AOF_REWRITE_ITEMS_PER_CMD.
const ITEMS_PER_CMD: usize = 64;

/// Appends commands building `value` under `key` (not strings).
pub fn collection(buf: &mut Vec<u8>, key: &[u8], value: &Value) {
    match value {
        // The value as it was spilled, read back for its commands.
        Value::Spilled(stub) => collection(buf, key, &crate::tier::read_back(stub)),
        Value::Str(s) => s.with_bytes(|v| encode::command(buf, &[b"SET".as_slice(), key, v])),
        Value::List(l) => {
            let items: Vec<Vec<u8>> = l.iter().map(|e| e.to_vec()).collect();
            batched(buf, b"RPUSH", key, items.iter().map(|v| vec![v.as_slice()]));
        }
        Value::Hash(h) => {
            let pairs: Vec<(Vec<u8>, Vec<u8>)> =
                h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            batched(
                buf,
                b"HSET",
                key,
                pairs.iter().map(|(f, v)| vec![f.as_slice(), v.as_slice()]),
            );
            // Field TTLs after the fields, one HPEXPIREAT each (Redis
            // writes HMSET + HPEXPIREAT per field for such a hash).
            if let Some(ttls) = h.ttls() {
                for (f, at) in ttls.iter() {
                    let at = itoa::Buffer::new().format(at).as_bytes().to_vec();
                    encode::command(
                        buf,
                        &[b"HPEXPIREAT".as_slice(), key, &at, b"FIELDS", b"1", f],
                    );
                }
            }
        }
        Value::Set(s) => {
            let members: Vec<Vec<u8>> = s.iter().map(|e| e.to_vec()).collect();
            batched(
                buf,
                b"SADD",
                key,
                members.iter().map(|m| vec![m.as_slice()]),
            );
        }
        Value::ZSet(z) => {
            let mut items: Vec<(String, Vec<u8>)> = Vec::with_capacity(z.len());
            z.for_range(0, z.len(), false, |score, member| {
                items.push((score_text(score), member.to_vec()))
            });
            batched(
                buf,
                b"ZADD",
                key,
                items.iter().map(|(s, m)| vec![s.as_bytes(), m.as_slice()]),
            );
        }
        Value::Stream(st) => st.rebuild_commands(key, |argv| encode::command(buf, argv)),
    }
}

/// A score that parses back to the same double.
fn score_text(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{v}")
    }
}

fn batched<'a>(
    buf: &mut Vec<u8>,
    cmd: &[u8],
    key: &[u8],
    items: impl Iterator<Item = Vec<&'a [u8]>>,
) {
    let mut argv: Vec<&[u8]> = vec![cmd, key];
    let mut n = 0;
    for item in items {
        argv.extend(item);
        n += 1;
        if n == ITEMS_PER_CMD {
            encode::command(buf, &argv);
            argv.truncate(2);
            n = 0;
        }
    }
    if n > 0 {
        encode::command(buf, &argv);
    }
}
