//! `keel-server --check-aof FILE [--fix]` and `--check-rdb FILE`: offline
//! checks of persistence files, as redis-check-aof / redis-check-rdb.

use std::io::Write;
use std::path::{Path, PathBuf};

use resp::RequestDecoder;

use super::log_file::{boundary, is_incr, logical_len, Boundary};
use super::rdb;

/// Runs the check `args` asks for (`--check-aof FILE [--fix]` or
/// `--check-rdb FILE`), printing the report; the process exit code.
pub fn run(args: &[String]) -> Option<i32> {
    let pos = args
        .iter()
        .position(|a| a == "--check-aof" || a == "--check-rdb")?;
    let Some(file) = args.get(pos + 1) else {
        eprintln!("Usage: keel-server --check-aof <file.aof|file.manifest> [--fix]\n       keel-server --check-rdb <file.rdb>");
        return Some(1);
    };
    let fix = args.iter().any(|a| a == "--fix");
    let mut out = std::io::stdout();
    let ok = if args[pos] == "--check-aof" {
        check_aof_path(Path::new(file), fix, &mut out)
    } else {
        check_rdb_path(Path::new(file), &mut out)
    };
    Some(if ok { 0 } else { 1 })
}

fn check_rdb_path(path: &Path, out: &mut impl Write) -> bool {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(out, "Cannot check RDB file {}: {e}", path.display());
            return false;
        }
    };
    let _ = writeln!(out, "[offset 0] Checking RDB file {}", path.display());
    match rdb::check(&data) {
        Ok(report) => {
            let _ = write!(out, "{report}");
            let _ = writeln!(out, "\\o/ RDB looks OK! \\o/");
            true
        }
        Err((report, e)) => {
            let _ = write!(out, "{report}");
            let _ = writeln!(out, "--- RDB ERROR DETECTED ---");
            let _ = writeln!(out, "[offset {}] {}", e.offset, e.msg);
            false
        }
    }
}

/// A manifest: checks every file it lists (base, then increments), from
/// the manifest's directory; any other file is checked as one log.
fn check_aof_path(path: &Path, fix: bool, out: &mut impl Write) -> bool {
    let text = std::fs::read(path).unwrap_or_default();
    if text.starts_with(b"file ") {
        let _ = writeln!(out, "Start checking Multi Part AOF");
        let dir = path.parent().unwrap_or(Path::new("."));
        let files: Vec<PathBuf> = String::from_utf8_lossy(&text)
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some("file")).then(|| w.next()).flatten()
            })
            .map(|name| dir.join(name))
            .collect();
        let n = files.len();
        for (i, f) in files.iter().enumerate() {
            // Only the last file may be fixed (truncated), as Redis.
            if !check_one_aof(f, fix && i + 1 == n, i + 1 == n, out) {
                return false;
            }
        }
        let _ = writeln!(out, "All AOF files and manifest are valid");
        true
    } else {
        let _ = writeln!(out, "Start checking Old-Style AOF");
        check_one_aof(path, fix, true, out)
    }
}

/// Checks one log file: an RDB image (a base written with the preamble),
/// or RESP commands, possibly after an RDB preamble. A truncated tail can
/// be cut with `fix` (last file only).
fn check_one_aof(path: &Path, fix: bool, last: bool, out: &mut impl Write) -> bool {
    let mut data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(out, "Cannot open {}: {e}", path.display());
            return false;
        }
    };
    let name = path.display();
    // keel preallocates incremental files with zeros: after a crash they
    // follow the last record.
    let mut zeros = 0;
    let incr = is_incr(path);
    if incr {
        let end = logical_len(&data);
        zeros = data.len() - end;
        if zeros > 0 {
            let _ = writeln!(
                out,
                "The AOF {name} ends with {} bytes of preallocated zeros, ignored.",
                data.len() - end
            );
            data.truncate(end);
        }
    }
    let mut pos = 0;
    if data.starts_with(b"REDIS") {
        let _ = writeln!(out, "The AOF {name} appears to start with an RDB preamble.");
        match rdb::load(&data, &Default::default(), |_, _, _, _| {}, |_| {}) {
            Ok(loaded) => {
                let _ = writeln!(out, "RDB preamble is OK, proceeding with AOF tail...");
                pos = loaded.consumed;
            }
            Err(e) => {
                let _ = writeln!(out, "RDB preamble of AOF file is not sane, aborting: {e}");
                return false;
            }
        }
    }
    let mut dec = RequestDecoder::new(usize::MAX);
    let mut ok_up_to = pos;
    let mut multi_open = false;
    let mut error = None;
    while pos < data.len() {
        match boundary(&data, pos, incr) {
            Boundary::Record => {}
            Boundary::Annotation(next) => {
                pos = next;
                if !multi_open {
                    ok_up_to = pos;
                }
                continue;
            }
            Boundary::End => break,
            Boundary::Corrupt => {
                error = Some("Bad file format reading the append only file".into());
                break;
            }
        }
        match dec.decode(&data[pos..]) {
            Ok(Some(n)) => {
                let frame = &data[pos..pos + n];
                let cmd = (dec.argc() > 0).then(|| dec.arg(frame, 0).to_ascii_lowercase());
                pos += n;
                match cmd.as_deref() {
                    Some(b"multi") => multi_open = true,
                    Some(b"exec") => multi_open = false,
                    _ => {}
                }
                if !multi_open {
                    ok_up_to = pos;
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(format!("{e:?}"));
                break;
            }
        }
    }
    let diff = data.len() - ok_up_to;
    let _ = writeln!(
        out,
        "AOF analyzed: filename={name}, size={}, ok_up_to={ok_up_to}, diff={diff}",
        data.len()
    );
    if let Some(e) = &error {
        let _ = writeln!(
            out,
            "0x{ok_up_to:>16x}: Bad file format reading the append only file {name}: {e}"
        );
    }
    if diff == 0 {
        if zeros > 0 && fix {
            // Cut them, so Redis and redis-check-aof read the file too.
            let cut = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(data.len() as u64).and_then(|_| f.sync_all()));
            match cut {
                Ok(()) => {
                    let _ = writeln!(out, "Cut the preallocated zeros of AOF {name}");
                }
                Err(e) => {
                    let _ = writeln!(
                        out,
                        "Failed to cut the preallocated zeros of AOF {name}: {e}"
                    );
                    return false;
                }
            }
        }
        let _ = writeln!(out, "AOF {name} is valid");
        return true;
    }
    if !fix || !last {
        let _ = writeln!(
            out,
            "AOF {name} is not valid. Use the --fix option to try fixing it."
        );
        return false;
    }
    let _ = writeln!(
        out,
        "This will shrink the AOF {name} from {} bytes, with {diff} bytes, to {ok_up_to} bytes",
        data.len()
    );
    let truncated = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(ok_up_to as u64).and_then(|_| f.sync_all()));
    match truncated {
        Ok(()) => {
            let _ = writeln!(out, "Successfully truncated AOF {name}");
            true
        }
        Err(e) => {
            let _ = writeln!(out, "Failed to truncate AOF {name}: {e}");
            false
        }
    }
}
