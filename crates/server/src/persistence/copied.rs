//! Keys a capture (a snapshot's image, an AOF rewrite's base) copied while
//! their shard was held, to be encoded once it is let go.
//!
//! A value on disk is not read while the shard is held: its record is
//! pinned (`tier::Pinned`, no read) and read later with the records of
//! many other copied keys at once (`tier::read_pinned`), so the disk
//! serves a snapshot of a tiered dataset many reads in flight at a time
//! instead of one, and no worker waits on the disk to copy a slot. The
//! copies go in batches ([`Batches`]): while the writer encodes one, the
//! next one's records are being read.

use crate::storage::value::{Entry, EntryRef, Value};
use crate::tier::Pinned;

/// One slot's keys as the capture took them: (database, key, value).
pub type SlotCopy = Vec<(usize, Box<[u8]>, Copied)>;

/// A key's value as the capture took it.
pub enum Copied {
    /// A copy of a value in memory.
    InMemory(Entry),
    /// A value on disk: its record held, to be read with others.
    OnDisk { expire_at: u64, record: Pinned },
}

impl Copied {
    pub fn of(entry: EntryRef<'_>) -> Copied {
        match entry.value {
            Value::Spilled(stub) => Copied::OnDisk {
                expire_at: entry.expire_at,
                record: crate::tier::pin(stub),
            },
            _ => Copied::InMemory(entry.to_entry()),
        }
    }
}

/// A copied key as its writer encodes it.
pub enum Item<'a> {
    InMemory(EntryRef<'a>),
    /// A value on disk, read: its record's DUMP payload.
    OnDisk {
        expire_at: u64,
        payload: &'a [u8],
        record: &'a Pinned,
    },
}

/// Records on disk read together at most (as many as one batch puts in
/// flight at once, `tier::read_many::DEPTH`), and their bytes.
const GATHER_RECORDS: usize = crate::tier::read_many::DEPTH;
const GATHER_BYTES: usize = 8 << 20;
/// Keys gathered at most (copies of values in memory wait with them).
const GATHER_KEYS: usize = 4096;

/// Slot copies gathered until their records on disk are worth reading
/// together.
#[derive(Default)]
struct Gathered {
    copies: Vec<SlotCopy>,
    keys: usize,
    records: usize,
    record_bytes: usize,
}

impl Gathered {
    fn add(&mut self, copy: SlotCopy) {
        self.keys += copy.len();
        for (_, _, c) in &copy {
            if let Copied::OnDisk { record, .. } = c {
                self.records += 1;
                self.record_bytes += record.disk_len();
            }
        }
        self.copies.push(copy);
    }

    /// Whether to write now: enough records to read together, or nothing
    /// on disk to wait for (a dataset in memory is written slot by slot,
    /// as before there was a tier).
    fn ready(&self) -> bool {
        self.records == 0
            || self.records >= GATHER_RECORDS
            || self.record_bytes >= GATHER_BYTES
            || self.keys >= GATHER_KEYS
    }

    fn is_empty(&self) -> bool {
        self.copies.is_empty()
    }

    /// Starts reading every record on disk the copies hold; [`Reading::done`]
    /// waits for them (no lock should be held then). Meanwhile the caller
    /// can write what it read before.
    fn start_reads(self) -> Reading {
        let records: Vec<&Pinned> = self
            .copies
            .iter()
            .flatten()
            .filter_map(|(_, _, c)| match c {
                Copied::OnDisk { record, .. } => Some(record),
                Copied::InMemory(_) => None,
            })
            .collect();
        let reads = crate::tier::read_pinned(&records);
        Reading {
            copies: self.copies,
            reads,
        }
    }
}

/// Slot copies in batches: one being gathered, the one before it being
/// read from disk while the caller writes the one before that.
#[derive(Default)]
pub struct Batches {
    gathered: Gathered,
    reading: Option<Reading>,
}

impl Batches {
    /// Adds a slot copy. Once the gathered batch is worth reading, its
    /// reads start, and the batch before it comes back read, for the
    /// caller to write while the disk serves the new one.
    pub fn add(&mut self, copy: SlotCopy) -> Option<Read> {
        self.gathered.add(copy);
        if self.gathered.ready() {
            self.next()
        } else {
            None
        }
    }

    /// Starts the gathered batch's reads; the one before, read.
    fn next(&mut self) -> Option<Read> {
        let previous = self.reading.take().map(Reading::done);
        if !self.gathered.is_empty() {
            self.reading = Some(std::mem::take(&mut self.gathered).start_reads());
        }
        previous
    }

    /// Every batch left, read (waits for the disk).
    pub fn rest(&mut self) -> Vec<Read> {
        let mut left: Vec<Read> = self.next().into_iter().collect();
        left.extend(self.reading.take().map(Reading::done));
        left
    }
}

/// Gathered copies whose records on disk are being read.
struct Reading {
    copies: Vec<SlotCopy>,
    reads: crate::tier::PinnedReads,
}

impl Reading {
    fn done(self) -> Read {
        Read {
            payloads: self.reads.payloads(),
            copies: self.copies,
        }
    }
}

/// Gathered copies whose records on disk have been read.
pub struct Read {
    copies: Vec<SlotCopy>,
    payloads: Vec<Vec<u8>>,
}

impl Read {
    /// Every key in the order taken: `f(database, key, item)`; the first
    /// error stops it.
    pub fn each(
        &self,
        mut f: impl FnMut(usize, &[u8], Item<'_>) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut payloads = self.payloads.iter();
        for (db, key, copied) in self.copies.iter().flatten() {
            let item = match copied {
                Copied::InMemory(entry) => Item::InMemory(entry.as_ref()),
                Copied::OnDisk { expire_at, record } => Item::OnDisk {
                    expire_at: *expire_at,
                    payload: payloads
                        .next()
                        .ok_or_else(|| std::io::Error::other("a record was not read"))?,
                    record,
                },
            };
            f(*db, key, item)?;
        }
        Ok(())
    }

    /// Keys read.
    pub fn keys(&self) -> u64 {
        self.copies.iter().map(|c| c.len() as u64).sum()
    }
}
