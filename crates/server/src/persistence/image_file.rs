//! A persistence file opened for loading: mapped, not read into memory.
//!
//! An RDB image or an AOF base of a dataset larger than `maxmemory` (the
//! disk tier holds the rest) would otherwise be read whole into memory
//! before its first key loads. Mapped, its pages come in as the loader
//! reaches them and [`ImageFile::release_resident`] lets them go again:
//! the file is read-only and private to this process, so a page dropped
//! is read from the file again if it is touched.
//!
//! The mapping's bytes must not change while mapped: these are files the
//! server wrote and renamed into place, or received, and nothing writes
//! them while they load.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;

pub enum ImageFile {
    Mapped(memmap2::Mmap),
    Bytes(Vec<u8>),
}

impl ImageFile {
    /// The file at `path`, mapped (an empty file is just empty).
    pub fn open(path: &Path) -> io::Result<ImageFile> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            return Ok(ImageFile::Bytes(Vec::new()));
        }
        // SAFETY: the file is not written while mapped (see the module's
        // doc); the mapping is read-only.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(ImageFile::Mapped(map))
    }

    /// Bytes already in memory (an image received from a primary).
    pub fn from_vec(v: Vec<u8>) -> ImageFile {
        ImageFile::Bytes(v)
    }

    /// Drops the pages of the mapping from this process's memory; the
    /// loader reads on from the file. Nothing for bytes in memory.
    pub fn release_resident(&self) {
        if let ImageFile::Mapped(map) = self {
            // SAFETY: a private read-only file mapping: DONTNEED drops the
            // pages, and a later access reads the same bytes from the file.
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }
}

impl Deref for ImageFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            ImageFile::Mapped(m) => m,
            ImageFile::Bytes(v) => v,
        }
    }
}
