//! Rewriting the log without fork or a second copy: the base written
//! hash slot by hash slot, commands about to touch a slot not yet written
//! writing it first (`before_execute`), and the switch to the new base.
//!
//! A slot (1/16384 of the dataset) is the unit so that no one waits for
//! much: the rewrite thread holds a shard only while it encodes one slot,
//! and a command writes only the slots of its keys (SWAPDB and flushes
//! tell the rewrite what they change instead: `persistence::capture`).

use super::*;
use crate::persistence::capture::{key_save_delay, Capture, FlushedMaps};
use crate::persistence::copied::{Batches, Copied, Item, Read, SlotCopy};
use resp::slot::SLOTS;

pub(super) struct Rewrite {
    /// The base being encoded, in memory: slots are encoded under their
    /// shard's lock, and the rewrite thread writes the bytes to `file`
    /// with no lock held (a write to a file may sleep for the kernel's
    /// writeback for hundreds of milliseconds).
    pub(super) base: Base,
    /// Taken by the rewrite thread (`finish_rewrite`), which alone writes it.
    pub(super) file: Option<BufWriter<File>>,
    pub(super) incremental_fsync: bool,
    pub(super) base_name: String,
    pub(super) base_seq: u64,
    pub(super) started: Instant,
    /// A shard a command's write made us copy could not be written.
    pub(super) failed: Option<std::io::Error>,
    /// Records on disk of the slots commands wrote (`write_slots_first`),
    /// pinned for the rewrite thread to read and encode.
    pub(super) on_disk: Vec<SlotCopy>,
}

/// The new base being encoded: commands, or (aof-use-rdb-preamble yes) an
/// RDB image, as Redis 7's `.base.aof` / `.base.rdb`.
pub(super) enum Base {
    Commands(Vec<u8>),
    Rdb(Box<crate::persistence::rdb::Writer<Vec<u8>>>),
}

/// With `aof-rewrite-incremental-fsync yes`, the new base is fsynced every
/// this many bytes (Redis's REDIS_AUTOSYNC_BYTES): a base written at disk
/// speed would otherwise fill the page cache with dirty pages until the
/// kernel throttles every writer of the process, the log's included.
const INCREMENTAL_FSYNC_BYTES: usize = 4 << 20;

/// How a rewrite writes its base.
pub struct BaseFormat {
    /// `aof-rewrite-incremental-fsync`.
    pub incremental_fsync: bool,
    /// `Some((rdbcompression, rdbchecksum))` for an RDB base.
    pub rdb: Option<(bool, bool)>,
    /// The function libraries' code, saved with the data.
    pub functions: Vec<Vec<u8>>,
}

/// The new base's file, written by the rewrite thread alone.
struct BaseFile<'f> {
    file: &'f mut BufWriter<File>,
    /// Bytes written since the last fsync.
    unsynced: usize,
    incremental_fsync: bool,
    /// `rdb-key-save-delay`, as Redis's rewrite also obeys it.
    key_save_delay: i64,
}

impl Aof {
    /// SWAPDB `a` `b` is about to run, every shard held.
    pub fn swapped(&self, a: usize, b: usize) {
        if self.rewriting.load(Relaxed) {
            self.capture.swapped(a, b);
        }
    }

    /// Database `db` was flushed into `maps`, every shard held: the
    /// rewrite keeps what it has not taken of them.
    pub fn flushed(&self, db: usize, maps: &Arc<FlushedMaps>) {
        if self.rewriting.load(Relaxed) {
            self.capture.flushed(db, maps);
        }
    }
}

impl Base {
    /// Writes the keys of `slot` (its shard held by `view`) whose values
    /// are in memory; the records of those on disk are pinned into
    /// `on_disk`, for the rewrite thread to read with others (a worker
    /// never reads the disk for the base).
    pub(super) fn write_slot(
        &mut self,
        capture: &Capture,
        view: &mut View,
        slot: usize,
        on_disk: &mut SlotCopy,
    ) -> std::io::Result<()> {
        let mut result = Ok(());
        let mut current_db = usize::MAX;
        capture.for_each_in_slot(view, slot, |db, key, entry| {
            if result.is_err() {
                return;
            }
            if entry.value.is_spilled() {
                on_disk.push((db, Box::from(key), Copied::of(entry)));
                return;
            }
            result = self.write_keys(std::iter::once((db, key, entry)), current_db);
            current_db = db;
        });
        result
    }

    /// Encodes keys the rewrite thread copied (see `finish_rewrite`), their
    /// records on disk read.
    fn write_copies(&mut self, copies: &Read) -> std::io::Result<()> {
        let mut current_db = usize::MAX;
        copies.each(|db, key, item| {
            match (&mut *self, item) {
                (
                    Base::Rdb(out),
                    Item::OnDisk {
                        expire_at, payload, ..
                    },
                ) => {
                    if db != current_db {
                        out.select_db(db)?;
                    }
                    out.payload_entry(key, expire_at, payload)?;
                }
                (
                    Base::Commands(_),
                    Item::OnDisk {
                        expire_at,
                        payload,
                        record,
                    },
                ) => {
                    let value = crate::tier::decode_pinned(record, payload);
                    let entry = EntryRef {
                        value: &value,
                        access: 0,
                        expire_at,
                        unshared: false,
                    };
                    self.write_keys(std::iter::once((db, key, entry)), current_db)?;
                }
                (_, Item::InMemory(entry)) => {
                    self.write_keys(std::iter::once((db, key, entry)), current_db)?;
                }
            }
            current_db = db;
            Ok(())
        })
    }

    /// Encodes `(db, key, entry)`s, with a SELECT where the database
    /// changes.
    /// `current_db`: the database of the key written before them (none:
    /// `usize::MAX`).
    fn write_keys<'k>(
        &mut self,
        keys: impl Iterator<Item = (usize, &'k [u8], EntryRef<'k>)>,
        mut current_db: usize,
    ) -> std::io::Result<()> {
        for (db, key, entry) in keys {
            match self {
                Base::Commands(out) => {
                    if db != current_db {
                        let dbs = db.to_string();
                        encode::command(out, &[b"SELECT".as_slice(), dbs.as_bytes()]);
                    }
                    rebuild_commands(out, key, entry);
                }
                Base::Rdb(out) => {
                    if db != current_db {
                        out.select_db(db)?;
                    }
                    out.entry(key, entry)?;
                }
            }
            current_db = db;
        }
        Ok(())
    }

    /// The bytes encoded since the last call.
    pub(super) fn drain(&mut self) -> Vec<u8> {
        match self {
            Base::Commands(b) => std::mem::take(b),
            Base::Rdb(w) => std::mem::take(w.output_mut()),
        }
    }

    /// The base's last bytes (an RDB's end mark and checksum).
    pub(super) fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Base::Commands(b) => Ok(b),
            Base::Rdb(w) => w.finish(),
        }
    }
}

/// Appends the commands that recreate `key` with `entry`'s value and TTL.
pub fn rebuild_commands(buf: &mut Vec<u8>, key: &[u8], entry: EntryRef<'_>) {
    match &entry.value {
        Value::Str(s) => s.with_bytes(|v| encode::command(buf, &[b"SET".as_slice(), key, v])),
        other => crate::persistence::rebuild::collection(buf, key, other),
    }
    if entry.expire_at != 0 {
        let at = entry.expire_at.to_string();
        encode::command(buf, &[b"PEXPIREAT".as_slice(), key, at.as_bytes()]);
    }
}

impl Aof {
    /// Before a command that may write runs in `view`: a rewrite in
    /// progress first writes into its base what the command may change,
    /// the slots of its keys when they are known (`slots`), else every
    /// untaken slot of the shards `view` holds. One load when no rewrite
    /// runs.
    #[inline]
    pub fn before_execute(&self, view: &mut View, slots: Option<&[usize]>) {
        if self.rewriting.load(Relaxed) {
            self.write_slots_first(view, slots);
        }
    }

    #[cold]
    fn write_slots_first(&self, view: &mut View, slots: Option<&[usize]>) {
        let mut wanted: Vec<usize> = match slots {
            Some(slots) => slots.to_vec(),
            None => view
                .held_shards()
                .into_iter()
                .flat_map(|shard| (shard..SLOTS).step_by(SHARDS))
                .collect(),
        };
        wanted.retain(|&slot| !self.capture.is_taken(slot));
        if wanted.is_empty() {
            return;
        }
        let mut rewrite = self.rewrite.lock();
        let Some(rw) = rewrite.as_mut() else {
            return;
        };
        for slot in wanted {
            // A slot the base misses would lose its keys once the base
            // replaces the old files: a failure fails the rewrite.
            if self.capture.take(slot) {
                let mut on_disk = Vec::new();
                if let Err(e) = rw.base.write_slot(&self.capture, view, slot, &mut on_disk) {
                    rw.failed.get_or_insert(e);
                }
                if !on_disk.is_empty() {
                    rw.on_disk.push(on_disk);
                }
            }
        }
    }

    /// BGREWRITEAOF: switches to a new incremental file now (the caller
    /// holds every shard) and returns; `finish_rewrite` writes the
    /// remaining shards and installs the new base.
    pub fn start_rewrite(&self, all_shards: &mut View, format: BaseFormat) -> Result<(), AofError> {
        std::fs::create_dir_all(&self.dir)?;
        let mut sink = self.sink.lock();
        let mut inner = self.inner.lock();
        if self.rewrite.lock().is_some() {
            return Ok(());
        }
        // Whatever was appended before the switch belongs to the old file
        // (kept in the buffer if it cannot be written: nothing is lost).
        if let Some(s) = sink.as_mut() {
            let chunk = std::mem::take(&mut inner.buf);
            if let Err((rest, e)) = s.write(chunk) {
                inner.buf = rest;
                drop(inner);
                self.write_error(&e);
                return Err(e.into());
            }
            if let Err(e) = s.file.sync_data() {
                drop(inner);
                self.fsync_error(&e);
                return Err(e.into());
            }
        }
        let mut manifest = self.manifest.lock();
        let incr_seq = manifest.next_seq('i');
        let incr = self.incr_name(incr_seq);
        let file = self.open_incr(&incr)?;
        manifest.files.push(ManifestFile {
            name: incr.clone(),
            seq: incr_seq,
            kind: 'i',
        });
        if let Err(e) = write_atomically(&self.manifest_path(), manifest.render().as_bytes()) {
            // The manifest on disk still names the current file: go on
            // writing to it.
            manifest.files.pop();
            let _ = std::fs::remove_file(self.dir.join(&incr));
            return Err(e.into());
        }
        // The old file is complete: without its preallocated zeros it is
        // plain Redis AOF (cut only now: had the switch failed, it would
        // have stayed the live file, preallocated).
        if let Some(old) = sink.replace(file) {
            if let Err(e) = old.trim() {
                tracing::warn!("cannot cut the preallocated end of the previous AOF file: {e}");
            }
        }
        // A new file replays from database 0 (and starts with its own
        // timestamp annotation, if they are on).
        inner.db = -1;
        inner.annotated_at = 0;
        let base_seq = manifest.next_seq('b').max(incr_seq);
        let base_name = self.base_name(base_seq, format.rdb.is_some());
        let file = BufWriter::new(File::create(self.dir.join(format!("{base_name}.tmp")))?);
        let base = match format.rdb {
            Some((compress, checksum)) => {
                let mut w =
                    crate::persistence::rdb::Writer::new(Vec::new(), compress, checksum, true)?;
                for code in &format.functions {
                    w.function_library(code)?;
                }
                Base::Rdb(Box::new(w))
            }
            None => {
                let mut buf = Vec::new();
                for code in &format.functions {
                    encode::command(
                        &mut buf,
                        &[b"FUNCTION".as_slice(), b"LOAD", b"REPLACE", code],
                    );
                }
                Base::Commands(buf)
            }
        };
        self.capture.start();
        *self.rewrite.lock() = Some(Rewrite {
            base,
            file: Some(file),
            incremental_fsync: format.incremental_fsync,
            base_name,
            base_seq,
            started: Instant::now(),
            failed: None,
            on_disk: Vec::new(),
        });
        self.rewriting.store(true, Relaxed);
        drop(manifest);
        let _ = all_shards;
        Ok(())
    }

    /// Writes the slots no command has written yet, one at a time (a
    /// shard is held for one slot's keys), then installs the new base and
    /// drops the files it replaces.
    /// `save_delay_config`: reads `rdb-key-save-delay`, at each slot.
    pub fn finish_rewrite(
        &self,
        keyspace: &Keyspace,
        save_delay_config: &dyn Fn() -> i64,
    ) -> Result<(), AofError> {
        let (mut file, incremental_fsync) = {
            let mut rewrite = self.rewrite.lock();
            let Some(rw) = rewrite.as_mut() else {
                return Ok(());
            };
            let Some(file) = rw.file.take() else {
                return Ok(());
            };
            (file, rw.incremental_fsync)
        };
        let mut out = BaseFile {
            file: &mut file,
            unsynced: 0,
            incremental_fsync,
            key_save_delay: 0,
        };
        // Shard by shard, one slot at a time: a command that locks every
        // shard in order (INFO, FLUSHALL, ...) waits for one slot, where
        // walking slots in their own order (each in the next shard) keeps
        // the rewrite one shard ahead of it all the way.
        let slots = (0..SHARDS).flat_map(|shard| (shard..SLOTS).step_by(SHARDS));
        let mut batches = Batches::default();
        for slot in slots {
            out.key_save_delay = save_delay_config();
            if !self.write_detached(&mut out)? {
                return Ok(());
            }
            // The slot's keys are copied while its shard is held (a copy is
            // much faster than encoding and compressing them; a value on
            // disk is pinned, not read), and encoded once it is let go.
            let copy: Option<SlotCopy> = {
                let view = keyspace.lock_shard(crate::storage::keyspace::shard_of(slot));
                self.capture.take(slot).then(|| {
                    let mut copy = Vec::new();
                    self.capture
                        .for_each_in_slot(&view, slot, |db, key, entry| {
                            copy.push((db, Box::from(key), Copied::of(entry)));
                        });
                    copy
                })
            };
            key_save_delay(out.key_save_delay, copy.as_ref().map_or(0, Vec::len));
            let copies = copy.into_iter().chain(self.take_on_disk());
            for copy in copies {
                if let Some(read) = batches.add(copy) {
                    if !self.write_read(&mut out, read)? {
                        return Ok(());
                    }
                }
            }
        }
        // Every slot is taken now, so no command pins more.
        for copy in self.take_on_disk() {
            if let Some(read) = batches.add(copy) {
                if !self.write_read(&mut out, read)? {
                    return Ok(());
                }
            }
        }
        for read in batches.rest() {
            if !self.write_read(&mut out, read)? {
                return Ok(());
            }
        }
        if !self.write_detached(&mut out)? {
            return Ok(());
        }
        let rw = {
            let mut rewrite = self.rewrite.lock();
            self.rewriting.store(false, Relaxed);
            rewrite.take()
        };
        self.capture.end();
        let Some(rw) = rw else { return Ok(()) };
        file.write_all(&rw.base.finish()?)?;
        file.flush()?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        crate::persistence::atomic_file::install(
            file,
            &self.dir.join(format!("{}.tmp", rw.base_name)),
            &self.dir.join(&rw.base_name),
        )?;
        let mut manifest = self.manifest.lock();
        let current_incr = manifest.incrs().last().cloned();
        let old: Vec<ManifestFile> = manifest
            .files
            .iter()
            .filter(|f| Some(*f) != current_incr.as_ref())
            .cloned()
            .collect();
        manifest.files = vec![ManifestFile {
            name: rw.base_name.clone(),
            seq: rw.base_seq,
            kind: 'b',
        }];
        manifest.files.extend(current_incr);
        write_atomically(&self.manifest_path(), manifest.render().as_bytes())?;
        for f in old {
            let _ = std::fs::remove_file(self.dir.join(&f.name));
        }
        self.rewrites.fetch_add(1, Relaxed);
        self.last_rewrite_secs
            .store(rw.started.elapsed().as_secs(), Relaxed);
        Ok(())
    }

    /// The records on disk commands pinned since the last call.
    fn take_on_disk(&self) -> Vec<SlotCopy> {
        self.rewrite
            .lock()
            .as_mut()
            .map(|rw| std::mem::take(&mut rw.on_disk))
            .unwrap_or_default()
    }

    /// Encodes slot copies whose records on disk are read (no lock held
    /// while they were). False: the rewrite was dropped meanwhile.
    fn write_read(&self, out: &mut BaseFile, read: Read) -> Result<bool, AofError> {
        let written = self.encode(out, |base| base.write_copies(&read))?;
        // The copies are freed here, outside every lock.
        drop(read);
        Ok(written)
    }

    /// Encodes the keys flushes handed over, a slot at a time.
    fn write_detached(&self, out: &mut BaseFile) -> Result<bool, AofError> {
        for detached in self.capture.take_detached() {
            for (db, map) in detached.maps() {
                key_save_delay(out.key_save_delay, map.len());
                let written = self.encode(out, |base| {
                    base.write_keys(map.iter().map(|(key, entry)| (db, key, entry)), usize::MAX)
                })?;
                if !written {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Encodes into the base under the rewrite's lock (`encode`), then
    /// writes what it encoded to the file with no lock held. False: the
    /// rewrite was dropped meanwhile.
    fn encode(
        &self,
        out: &mut BaseFile,
        encode: impl FnOnce(&mut Base) -> std::io::Result<()>,
    ) -> Result<bool, AofError> {
        let bytes = {
            let mut rewrite = self.rewrite.lock();
            let Some(rw) = rewrite.as_mut() else {
                return Ok(false);
            };
            if let Some(e) = rw.failed.take() {
                return Err(e.into());
            }
            encode(&mut rw.base)?;
            rw.base.drain()
        };
        out.file.write_all(&bytes)?;
        out.unsynced += bytes.len();
        if out.incremental_fsync && out.unsynced >= INCREMENTAL_FSYNC_BYTES {
            out.file.flush()?;
            out.file.get_ref().sync_data()?;
            out.unsynced = 0;
        }
        Ok(true)
    }

    pub fn abort_rewrite(&self) {
        let mut rewrite = self.rewrite.lock();
        self.rewriting.store(false, Relaxed);
        if let Some(rw) = rewrite.take() {
            let _ = std::fs::remove_file(self.dir.join(format!("{}.tmp", rw.base_name)));
        }
        drop(rewrite);
        self.capture.end();
    }
}

impl Aof {
    /// A replica's full sync replaced the dataset with `image` (an RDB):
    /// the log starts again from it, as Redis restarts the AOF after a
    /// sync. The image becomes the new base (a `.base.rdb`, which is what
    /// aof-use-rdb-preamble writes anyway) beside a new empty incremental
    /// file, named by one manifest write: a crash leaves either the old
    /// log or the new one, never the old history with the new stream.
    /// The caller holds every shard, so no command logs in between; a
    /// rewrite in progress (of the old dataset) is dropped.
    pub fn restart_from_image(&self, image: ImageSource<'_>) -> Result<(), AofError> {
        std::fs::create_dir_all(&self.dir)?;
        let mut sink = self.sink.lock();
        let mut inner = self.inner.lock();
        if let Some(rw) = self.rewrite.lock().take() {
            self.rewriting.store(false, Relaxed);
            self.capture.end();
            let _ = std::fs::remove_file(self.dir.join(format!("{}.tmp", rw.base_name)));
            tracing::warn!("AOF rewrite of the old dataset dropped: a full sync replaced it");
        }
        // The old history's last records go to the old file, so the byte
        // counts durability waits on stay whole.
        if let Some(s) = sink.as_mut() {
            let chunk = std::mem::take(&mut inner.buf);
            if let Err((rest, e)) = s.write(chunk) {
                inner.buf = rest;
                drop(inner);
                self.write_error(&e);
                return Err(e.into());
            }
        }
        let mut manifest = self.manifest.lock();
        let base_seq = manifest.next_seq('b');
        let base_name = self.base_name(base_seq, true);
        let tmp = self.dir.join(format!("{base_name}.tmp"));
        let written = match image {
            ImageSource::Bytes(bytes) => File::create(&tmp).and_then(|mut f| {
                f.write_all(bytes)?;
                crate::persistence::atomic_file::install(f, &tmp, &self.dir.join(&base_name))
            }),
            // Copied by the kernel: the image's pages never pass through
            // this process.
            ImageSource::File(mut from) => File::create(&tmp).and_then(|mut f| {
                std::io::copy(&mut from, &mut f)?;
                crate::persistence::atomic_file::install(f, &tmp, &self.dir.join(&base_name))
            }),
        };
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.into());
        }
        let incr_seq = manifest.next_seq('i');
        let incr = self.incr_name(incr_seq);
        let file = match self.open_incr(&incr) {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_file(self.dir.join(&base_name));
                return Err(e.into());
            }
        };
        let old = std::mem::replace(
            &mut manifest.files,
            vec![
                ManifestFile {
                    name: base_name.clone(),
                    seq: base_seq,
                    kind: 'b',
                },
                ManifestFile {
                    name: incr.clone(),
                    seq: incr_seq,
                    kind: 'i',
                },
            ],
        );
        if let Err(e) = write_atomically(&self.manifest_path(), manifest.render().as_bytes()) {
            // The manifest on disk still names the old log: keep writing it.
            manifest.files = old;
            let _ = std::fs::remove_file(self.dir.join(&base_name));
            let _ = std::fs::remove_file(self.dir.join(&incr));
            return Err(e.into());
        }
        if let Some(prev) = sink.replace(file) {
            let _ = prev.trim();
        }
        inner.db = -1;
        inner.annotated_at = 0;
        drop(inner);
        drop(sink);
        for f in old {
            let _ = std::fs::remove_file(self.dir.join(&f.name));
        }
        drop(manifest);
        tracing::info!("AOF restarted from the image of the full sync ({base_name})");
        Ok(())
    }
}
