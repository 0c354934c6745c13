//! Rewriting the log without fork or a second copy: the base written
//! shard by shard, commands about to touch a shard not yet written
//! writing it first (`before_execute`), and the switch to the new base.

use super::*;

pub(super) struct Rewrite {
    pub(super) done: [bool; SHARDS],
    pub(super) base: Base,
    pub(super) base_name: String,
    pub(super) base_seq: u64,
    pub(super) started: Instant,
    /// A shard a command's write made us copy could not be written.
    pub(super) failed: Option<std::io::Error>,
}

/// The new base file being written: commands, or (aof-use-rdb-preamble
/// yes) an RDB image, as Redis 7's `.base.aof` / `.base.rdb`.
pub(super) enum Base {
    Commands(BufWriter<File>),
    Rdb(Box<crate::persistence::rdb::Writer<BufWriter<File>>>),
}

/// How a rewrite writes its base.
pub struct BaseFormat {
    /// `Some((rdbcompression, rdbchecksum))` for an RDB base.
    pub rdb: Option<(bool, bool)>,
    /// The function libraries' code, saved with the data.
    pub functions: Vec<Vec<u8>>,
}

impl Base {
    pub(super) fn write_shard(&mut self, view: &mut View, shard: usize) -> std::io::Result<()> {
        match self {
            Base::Commands(out) => write_shard(out, view, shard),
            Base::Rdb(out) => {
                let mut current_db = usize::MAX;
                let mut result = Ok(());
                view.for_each_in_shard(shard, |db, key, entry| {
                    if result.is_err() {
                        return;
                    }
                    if db != current_db {
                        current_db = db;
                        result = out.select_db(db);
                    }
                    if result.is_ok() {
                        result = out.entry(key, entry);
                    }
                });
                result
            }
        }
    }

    pub(super) fn finish(self) -> std::io::Result<File> {
        let mut buf = match self {
            Base::Commands(b) => b,
            Base::Rdb(w) => w.finish()?,
        };
        buf.flush()?;
        buf.into_inner().map_err(|e| e.into_error())
    }
}

/// Writes every key of `shard` (held by `view`) as commands that rebuild
/// it: SELECT, then per key the commands of its type and a PEXPIREAT.
pub(super) fn write_shard(
    out: &mut impl Write,
    view: &mut View,
    shard: usize,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut result = Ok(());
    let mut current_db = usize::MAX;
    view.for_each_in_shard(shard, |db, key, entry| {
        if result.is_err() {
            return;
        }
        if db != current_db {
            let dbs = db.to_string();
            encode::command(&mut buf, &[b"SELECT".as_slice(), dbs.as_bytes()]);
            current_db = db;
        }
        rebuild_commands(&mut buf, key, entry);
        if buf.len() > 64 * 1024 {
            result = out.write_all(&buf);
            buf.clear();
        }
    });
    result?;
    out.write_all(&buf)
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
    /// True if a rewrite must serialise some of `view`'s shards before a
    /// command runs in it.
    #[inline]
    pub fn before_execute(&self, view: &mut View) {
        if self.rewriting.load(Relaxed) {
            self.write_shards_first(view);
        }
    }

    #[cold]
    fn write_shards_first(&self, view: &mut View) {
        let mut inner = self.inner.lock();
        let Some(rw) = inner.rewrite.as_mut() else {
            return;
        };
        for shard in view.held_shards() {
            if !rw.done[shard] {
                // A shard the new base misses would lose its keys once the
                // base replaces the old files: the rewrite fails instead.
                if let Err(e) = rw.base.write_shard(view, shard) {
                    rw.failed.get_or_insert(e);
                }
                rw.done[shard] = true;
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
        if inner.rewrite.is_some() {
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
                let mut w = crate::persistence::rdb::Writer::new(file, compress, checksum, true)?;
                for code in &format.functions {
                    w.function_library(code)?;
                }
                Base::Rdb(Box::new(w))
            }
            None => {
                let mut file = file;
                let mut buf = Vec::new();
                for code in &format.functions {
                    encode::command(
                        &mut buf,
                        &[b"FUNCTION".as_slice(), b"LOAD", b"REPLACE", code],
                    );
                }
                file.write_all(&buf)?;
                Base::Commands(file)
            }
        };
        inner.rewrite = Some(Rewrite {
            done: [false; SHARDS],
            base,
            base_name,
            base_seq,
            started: Instant::now(),
            failed: None,
        });
        self.rewriting.store(true, Relaxed);
        drop(manifest);
        let _ = all_shards;
        Ok(())
    }

    /// Writes the shards no command has written yet, then installs the new
    /// base and drops the files it replaces.
    pub fn finish_rewrite(&self, keyspace: &Keyspace) -> Result<(), AofError> {
        for shard in 0..SHARDS {
            let mut view = keyspace.lock_shard(shard);
            let mut inner = self.inner.lock();
            let Some(rw) = inner.rewrite.as_mut() else {
                return Ok(());
            };
            if let Some(e) = rw.failed.take() {
                return Err(e.into());
            }
            if !rw.done[shard] {
                rw.base.write_shard(&mut view, shard)?;
                rw.done[shard] = true;
            }
        }
        let rw = {
            let mut inner = self.inner.lock();
            self.rewriting.store(false, Relaxed);
            inner.rewrite.take()
        };
        let Some(rw) = rw else { return Ok(()) };
        let file = rw.base.finish()?;
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

    pub fn abort_rewrite(&self) {
        let mut inner = self.inner.lock();
        self.rewriting.store(false, Relaxed);
        if let Some(rw) = inner.rewrite.take() {
            let _ = std::fs::remove_file(self.dir.join(format!("{}.tmp", rw.base_name)));
        }
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
    pub fn restart_from_image(&self, image: &[u8]) -> Result<(), AofError> {
        std::fs::create_dir_all(&self.dir)?;
        let mut sink = self.sink.lock();
        let mut inner = self.inner.lock();
        if let Some(rw) = inner.rewrite.take() {
            self.rewriting.store(false, Relaxed);
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
        let written = File::create(&tmp).and_then(|mut f| {
            f.write_all(image)?;
            crate::persistence::atomic_file::install(f, &tmp, &self.dir.join(&base_name))
        });
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
