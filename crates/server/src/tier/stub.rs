//! What stays in memory of a value moved to disk: where its record is,
//! and what TYPE and OBJECT ENCODING answer without reading it.
//!
//! Sixteen bytes held inside the key's `Value` (no allocation of its own),
//! so a spilled key costs its node and its table slot alone: the
//! per-key figure is in docs/tiering.md.

use super::log::Loc;

/// (type, encoding) pairs a value can have, as TYPE and OBJECT ENCODING
/// name them; a stub keeps the index.
const KINDS: [(&str, &str); 13] = [
    ("string", "int"),
    ("string", "embstr"),
    ("string", "raw"),
    ("list", "quicklist"),
    ("list", "listpack"),
    ("hash", "listpack"),
    ("hash", "hashtable"),
    ("set", "intset"),
    ("set", "listpack"),
    ("set", "hashtable"),
    ("zset", "listpack"),
    ("zset", "skiplist"),
    ("stream", "stream"),
];

/// A spilled value's place in the value log and its kind. Dropping it
/// frees the record (the key was overwritten, deleted, expired or its
/// value loaded back): exactly one stub owns a record, so a stub is never
/// copied (`Value`'s clone reads the value back instead).
#[derive(Debug, PartialEq, Eq)]
pub struct Stub {
    segment: u32,
    /// Offsets within a segment stay below 4 GB: segments are sealed at
    /// `log::SEGMENT_SIZE` and a batch is bounded (`spill::MAX_BATCH`).
    offset: u32,
    len: u32,
    kind: u8,
}

impl Stub {
    /// The stub of the record at `loc` of a value named `type_name` /
    /// `encoding`; `None` if the location or the kind does not fit.
    pub(super) fn new(loc: Loc, type_name: &str, encoding: &str) -> Option<Stub> {
        let kind = KINDS
            .iter()
            .position(|&(t, e)| t == type_name && e == encoding)?;
        Some(Stub {
            segment: loc.segment,
            offset: u32::try_from(loc.offset).ok()?,
            len: loc.len,
            kind: kind as u8,
        })
    }

    /// A stub of the same value at `loc` (compaction moved its record).
    pub(super) fn moved(&self, loc: Loc) -> Option<Stub> {
        Some(Stub {
            segment: loc.segment,
            offset: u32::try_from(loc.offset).ok()?,
            len: loc.len,
            kind: self.kind,
        })
    }

    pub fn loc(&self) -> Loc {
        Loc {
            segment: self.segment,
            len: self.len,
            offset: self.offset as u64,
        }
    }

    pub fn type_name(&self) -> &'static str {
        KINDS[self.kind as usize].0
    }

    pub fn encoding(&self) -> &'static str {
        KINDS[self.kind as usize].1
    }

    /// Bytes of the record on disk.
    pub fn disk_len(&self) -> usize {
        self.len as usize
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        super::release(self.loc());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_found_and_named() {
        for &(t, e) in &KINDS {
            let loc = Loc {
                segment: 3,
                len: 10,
                offset: 77,
            };
            let s = Stub::new(loc, t, e).map(|s| {
                let named = (s.type_name(), s.encoding(), s.loc());
                std::mem::forget(s);
                named
            });
            assert_eq!(s, Some((t, e, loc)));
        }
        let far = Loc {
            segment: 0,
            len: 1,
            offset: 1 << 33,
        };
        assert!(Stub::new(far, "string", "raw")
            .map(std::mem::forget)
            .is_none());
        let loc = Loc {
            segment: 0,
            len: 1,
            offset: 0,
        };
        assert!(Stub::new(loc, "string", "skiplist")
            .map(std::mem::forget)
            .is_none());
    }
}
