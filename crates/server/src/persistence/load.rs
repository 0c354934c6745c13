//! Loading the append-only log at start: every command of every file of the
//! manifest is run through the ordinary dispatch, as a client whose replies
//! are discarded.

use std::path::Path;
use std::sync::Arc;

use resp::RequestDecoder;

use super::aof::{self, AofError};
use super::log_file::{boundary, is_incr, logical_len, Boundary};
use crate::client::{Client, ClientInfo};
use crate::command::{self, Clock};
use crate::observe::stats::ThreadStats;
use crate::server::Server;

/// The pseudo-client commands are replayed as.
pub fn loading_client(server: &Server) -> Client {
    let info = ClientInfo::new(
        server.clients.next_id(),
        "aof-loader".into(),
        String::new(),
        -1,
        false,
    );
    Client::new(Arc::new(info))
}

/// Replays `files` in order. A record cut short at the end of the last
/// file (a crash mid-write) is dropped and the file truncated when
/// `truncated_ok` (aof-load-truncated yes); anything else malformed stops
/// the start with the file and offset. Returns the number of commands.
pub fn replay(
    server: &Server,
    files: &[std::path::PathBuf],
    truncated_ok: bool,
) -> Result<u64, AofError> {
    let stats = server.stats.register_thread(server.commands.len());
    let mut client = loading_client(server);
    let mut count = 0;
    for (i, path) in files.iter().enumerate() {
        let last = i + 1 == files.len();
        let data = aof::read_file(path)?;
        let release = || data.release_resident();
        let done = replay_bytes(
            server,
            &mut client,
            &stats,
            &data,
            is_incr(path),
            path,
            &release,
        )?;
        count += done.commands;
        if let Some(safe_end) = done.cut_at {
            if !(last && truncated_ok) {
                return Err(AofError::Corrupt {
                    file: path.display().to_string(),
                    offset: safe_end as u64,
                    why: "unexpected end of file".into(),
                });
            }
            tracing::warn!(
                file = %path.display(),
                offset = safe_end,
                "!!! Warning: short read while loading the AOF file !!! truncating the AOF at offset {safe_end}"
            );
            client.tx = None;
            truncate(path, safe_end as u64)?;
        }
    }
    Ok(count)
}

/// What replaying one file's bytes did.
#[derive(Debug)]
pub struct Replayed {
    /// Commands run (keys, for an RDB preamble).
    pub commands: u64,
    /// The file ends early (a record cut short, or an unfinished MULTI
    /// block, which `client.tx` still holds): where the last complete
    /// record or transaction ends, for `aof-load-truncated`.
    pub cut_at: Option<usize>,
}

/// Replays one log file's contents `data` as `client` (its name `path`
/// only labels errors; `incr`: an incremental file, which may end in
/// preallocated zeros). Split from [`replay`] so the fuzz target runs the
/// loader without files.
pub fn replay_bytes(
    server: &Server,
    client: &mut Client,
    stats: &ThreadStats,
    data: &[u8],
    incr: bool,
    path: &Path,
    release: &dyn Fn(),
) -> Result<Replayed, AofError> {
    // A log cut off by a crash still has its preallocated zeros.
    let data = if incr {
        &data[..logical_len(data)]
    } else {
        data
    };
    let mut out = crate::net::replies::Replies::plain();
    let mut count = 0;
    let mut dec = RequestDecoder::new(usize::MAX);
    let mut pos = 0;
    // A base written with aof-use-rdb-preamble (by keel or Redis) is an
    // RDB image, possibly followed by commands (old single-file logs).
    if data.starts_with(b"REDIS") {
        let mut view = server.keyspace.lock_all();
        let image = super::snapshot::load_into_releasing(server, &mut view, data, path, release)
            .map_err(|why| AofError::Corrupt {
                file: path.display().to_string(),
                offset: 0,
                why,
            })?;
        count += image.keys;
        pos = image.consumed;
    }
    // Where the last complete transaction ends, to cut an unfinished
    // MULTI block on truncation: at first the end of the preamble, so a
    // record cut short right after it does not cut the image away too.
    let mut safe_end = pos;
    let mut clock = Clock::start();
    while pos < data.len() {
        match boundary(data, pos, incr) {
            Boundary::Record => {}
            Boundary::Annotation(next) => {
                pos = next;
                if client.tx.is_none() {
                    safe_end = pos;
                }
                continue;
            }
            // A cut-off tail, handled as `aof-load-truncated` says.
            Boundary::End => break,
            Boundary::Corrupt => {
                return Err(AofError::Corrupt {
                    file: path.display().to_string(),
                    offset: pos as u64,
                    why: "Bad file format reading the append only file".into(),
                })
            }
        }
        match dec.decode(&data[pos..]) {
            Ok(Some(n)) => {
                let frame = &data[pos..pos + n];
                let argv: Vec<&[u8]> = (0..dec.argc()).map(|i| dec.arg(frame, i)).collect();
                pos += n;
                if argv.is_empty() {
                    continue;
                }
                // A log replays commands, nothing waits: a blocking one
                // found nothing to serve and is not parked.
                let _ = command::dispatch(server, client, &argv, &mut out, stats, &mut clock);
                if out.first() == Some(&b'-') && !argv[0].eq_ignore_ascii_case(b"exec") {
                    tracing::warn!(
                        file = %path.display(),
                        offset = pos - n,
                        "command in the append only file failed: {}",
                        String::from_utf8_lossy(&out).trim_end()
                    );
                }
                out.clear();
                count += 1;
                if client.tx.is_none() {
                    safe_end = pos;
                }
            }
            Ok(None) => break,
            Err(e) => {
                return Err(AofError::Corrupt {
                    file: path.display().to_string(),
                    offset: pos as u64,
                    why: e.to_string(),
                })
            }
        }
    }
    let cut_at = (pos < data.len() || client.tx.is_some()).then_some(safe_end);
    Ok(Replayed {
        commands: count,
        cut_at,
    })
}

fn truncate(path: &Path, len: u64) -> std::io::Result<()> {
    let f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.set_len(len)?;
    f.sync_all()
}
