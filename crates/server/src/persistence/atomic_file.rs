//! Replacing a file so that a crash leaves either the old one or the new
//! one, whole: write a temporary file, fsync it, rename it over the
//! target, fsync the directory (the rename is durable only once the
//! directory is). The one way keel installs a file: the log's manifest and
//! base, snapshots, CONFIG REWRITE.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Writes `data` to `path` atomically, through `path` with extension
/// `tmp_ext`.
pub fn write(path: &Path, tmp_ext: &str, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(tmp_ext);
    let mut f = File::create(&tmp)?;
    f.write_all(data)?;
    install(f, &tmp, path)
}

/// Installs `file`, fully written at `tmp`, as `target`.
pub fn install(file: File, tmp: &Path, target: &Path) -> std::io::Result<()> {
    file.sync_all()?;
    drop(file);
    std::fs::rename(tmp, target)?;
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}
