//! Many records read at once, for a thread that may wait for them (a
//! snapshot being written, see `persistence::snapshot`): up to [`DEPTH`]
//! reads in flight through an io_uring of the calling thread's, submitted
//! in file order.
//!
//! Why not one `pread` after another: a random read of a record keeps the
//! disk busy with one request at a time, and a snapshot of a tiered
//! dataset is mostly such reads (docs/benchmarks.md, "Tiering"); the disk
//! serves many in flight at nearly the same latency each.

use std::cell::RefCell;
use std::io;
use std::os::fd::AsRawFd;

use super::log::{Loc, ReadFile};

/// Reads in flight at most.
pub const DEPTH: usize = 64;

thread_local! {
    /// This thread's ring, made at its first batch; `None` inside once
    /// making it failed (reads then go one by one).
    static RING: RefCell<Option<Option<io_uring::IoUring>>> = const { RefCell::new(None) };
}

/// A read in flight: the buffer the kernel fills from `at` (aligned for
/// direct reads); the record starts `head` bytes in.
struct InFlight {
    buf: Vec<u8>,
    at: usize,
    head: usize,
}

/// The whole records at `reads` (file, location), in the same order.
pub fn read_many(reads: &[(&ReadFile, Loc)]) -> Vec<io::Result<Vec<u8>>> {
    let mut out: Vec<Option<io::Result<Vec<u8>>>> = (0..reads.len()).map(|_| None).collect();
    if reads.len() > 1 {
        RING.with_borrow_mut(|slot| {
            let ring = slot.get_or_insert_with(|| match io_uring::IoUring::new(DEPTH as u32) {
                Ok(r) => Some(r),
                Err(e) => {
                    tracing::warn!("Tiering: io_uring unavailable for batched reads ({e})");
                    None
                }
            });
            if let Some(r) = ring {
                if let Err(e) = through_ring(r, reads, &mut out) {
                    tracing::warn!("Tiering: batched reads failed ({e}); reading one by one");
                    *slot = Some(None);
                }
            }
        });
    }
    out.into_iter()
        .zip(reads)
        .map(|(done, (file, loc))| done.unwrap_or_else(|| file.read_record(*loc)))
        .collect()
}

/// Reads what it can of `reads` through `ring` into `out`; an error of
/// the ring itself stops it (what is left stays `None`). Reads the kernel
/// may still fill when it stops leak their buffers.
fn through_ring(
    ring: &mut io_uring::IoUring,
    reads: &[(&ReadFile, Loc)],
    out: &mut [Option<io::Result<Vec<u8>>>],
) -> io::Result<()> {
    let mut order: Vec<usize> = (0..reads.len()).collect();
    order.sort_unstable_by_key(|&i| (reads[i].1.segment, reads[i].1.offset));
    let mut next = order.into_iter().peekable();
    let mut flight: Vec<Option<InFlight>> = (0..reads.len()).map(|_| None).collect();
    let mut in_flight = 0usize;
    let result = loop {
        while in_flight < DEPTH {
            let Some(&i) = next.peek() else { break };
            let (file, loc) = reads[i];
            let (offset, head, total) = file.span(loc);
            let (mut buf, at) = file.buffer(total);
            let entry = io_uring::opcode::Read::new(
                io_uring::types::Fd(file.file.as_raw_fd()),
                buf[at..].as_mut_ptr(),
                total as u32,
            )
            .offset(offset)
            .build()
            .user_data(i as u64);
            // SAFETY: the buffer stays alive in `flight[i]` until the
            // read's completion is taken (its heap block does not move
            // with the Vec), or is leaked if the ring fails; the file is
            // held by `reads` for the whole call.
            if unsafe { ring.submission().push(&entry) }.is_err() {
                break;
            }
            flight[i] = Some(InFlight { buf, at, head });
            in_flight += 1;
            next.next();
        }
        if in_flight == 0 {
            break Ok(());
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (i, res) in done {
            let i = i as usize;
            let Some(InFlight { buf, at, head }) = flight.get_mut(i).and_then(Option::take) else {
                continue;
            };
            in_flight -= 1;
            let len = reads[i].1.len as usize;
            out[i] = if res < 0 {
                Some(Err(io::Error::from_raw_os_error(-res)))
            } else if res as usize >= head + len {
                Some(Ok(buf[at + head..at + head + len].to_vec()))
            } else {
                // A short read (not expected of a regular file): left
                // for the plain read.
                None
            };
        }
    };
    if result.is_err() {
        for f in flight.into_iter().flatten() {
            std::mem::forget(f.buf);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::super::log::{encode_record, ValueLog};
    use super::*;

    #[test]
    fn records_read_together_come_back_in_the_order_asked() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ValueLog::with_segment_size(dir.path(), 50_000).unwrap();
        let mut locs = Vec::new();
        let mut values = Vec::new();
        for i in 0..300u32 {
            let value = vec![(i % 251) as u8; 17 * i as usize + 3];
            let mut batch = Vec::new();
            encode_record(&mut batch, &i.to_le_bytes(), &value);
            locs.extend(log.append(&batch, &[batch.len() as u32]).unwrap());
            values.push(value);
        }
        assert!(log.segment_count() > 1);
        // Asked out of file order, more than DEPTH of them.
        let files: Vec<ReadFile> = locs.iter().map(|l| log.reads(l.segment).unwrap()).collect();
        let asked: Vec<usize> = (0..300)
            .rev()
            .step_by(2)
            .chain((0..300).step_by(2))
            .collect();
        let reads: Vec<(&ReadFile, Loc)> = asked.iter().map(|&i| (&files[i], locs[i])).collect();
        let got = read_many(&reads);
        assert_eq!(got.len(), asked.len());
        for (&i, record) in asked.iter().zip(got) {
            let record = record.unwrap();
            assert_eq!(super::super::log::record_value(&record).unwrap(), values[i]);
        }
        assert!(read_many(&[]).is_empty());
    }
}
