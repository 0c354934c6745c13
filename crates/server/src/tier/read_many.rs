//! Many records read at once, for a thread that may wait for them (a
//! snapshot being written, see `persistence::copied`): up to [`DEPTH`]
//! reads in flight through an io_uring of the calling thread's, submitted
//! in file order. [`start`] submits them and returns at once, so the
//! caller can write what it read before while the disk works;
//! [`Reading::finish`] waits for the rest.
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
pub const DEPTH: usize = 256;

/// A thread's ring, between batches.
enum Ring {
    Unmade,
    Free(Box<io_uring::IoUring>),
    /// A [`Reading`] holds it: another batch started meanwhile reads one
    /// by one.
    Lent,
    /// Making it, or using it, failed: reads go one by one.
    Failed,
}

thread_local! {
    static RING: RefCell<Ring> = const { RefCell::new(Ring::Unmade) };
}

/// This thread's ring, lent to a batch; `None` if there is none to lend.
fn borrow_ring() -> Option<io_uring::IoUring> {
    RING.with_borrow_mut(|slot| match std::mem::replace(slot, Ring::Lent) {
        Ring::Free(r) => Some(*r),
        Ring::Unmade => match io_uring::IoUring::new(DEPTH as u32) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!("Tiering: io_uring unavailable for batched reads ({e})");
                *slot = Ring::Failed;
                None
            }
        },
        other => {
            *slot = other;
            None
        }
    })
}

/// Gives a lent ring back.
fn return_ring(ring: io_uring::IoUring) {
    RING.with_borrow_mut(|slot| {
        if matches!(slot, Ring::Lent) {
            *slot = Ring::Free(Box::new(ring));
        }
    });
}

/// A read in flight: the buffer the kernel fills from `at` (aligned for
/// direct reads); the record starts `head` bytes in.
struct InFlight {
    buf: Vec<u8>,
    at: usize,
    head: usize,
}

/// Reads started by [`start`].
pub struct Reading {
    /// The thread's ring, given back when done; `None`: reads go one by
    /// one at [`Reading::finish`].
    ring: Option<io_uring::IoUring>,
    reads: Vec<(ReadFile, Loc)>,
    /// Indices of `reads` not submitted yet, in file order.
    queued: std::vec::IntoIter<usize>,
    flight: Vec<Option<InFlight>>,
    in_flight: usize,
    out: Vec<Option<io::Result<Vec<u8>>>>,
}

/// Starts reading the whole records at `reads` (file, location).
pub fn start(reads: Vec<(ReadFile, Loc)>) -> Reading {
    let ring = if reads.len() > 1 { borrow_ring() } else { None };
    let mut order: Vec<usize> = (0..reads.len()).collect();
    order.sort_unstable_by_key(|&i| (reads[i].1.segment, reads[i].1.offset));
    let n = reads.len();
    let mut reading = Reading {
        ring,
        reads,
        queued: order.into_iter(),
        flight: (0..n).map(|_| None).collect(),
        in_flight: 0,
        out: (0..n).map(|_| None).collect(),
    };
    if let Err(e) = reading.submit() {
        reading.break_down(e);
    }
    reading
}

/// The whole records at `reads`, in the same order.
pub fn read_many(reads: &[(&ReadFile, Loc)]) -> Vec<io::Result<Vec<u8>>> {
    start(reads.iter().map(|(f, l)| ((*f).clone(), *l)).collect()).finish()
}

impl Reading {
    /// Every record, in the order asked: waits for the reads in flight,
    /// and reads with `pread` what the ring could not.
    pub fn finish(mut self) -> Vec<io::Result<Vec<u8>>> {
        while self.ring.is_some() {
            if let Err(e) = self.submit() {
                self.break_down(e);
                break;
            }
            // Nothing in flight: done (what could not be submitted, if
            // anything, is read plainly below).
            if self.in_flight == 0 {
                break;
            }
            if let Err(e) = self.reap() {
                self.break_down(e);
            }
        }
        let out = std::mem::take(&mut self.out);
        out.into_iter()
            .zip(&self.reads)
            .map(|(done, (file, loc))| done.unwrap_or_else(|| file.read_record(*loc)))
            .collect()
    }

    /// Submits queued reads as far as the ring has room.
    fn submit(&mut self) -> io::Result<()> {
        let Some(ring) = self.ring.as_mut() else {
            return Ok(());
        };
        while self.in_flight < DEPTH {
            let Some(i) = self.queued.as_slice().first().copied() else {
                break;
            };
            let (file, loc) = &self.reads[i];
            let (offset, head, total) = file.span(*loc);
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
            // held by `reads` until then (Drop waits for the reads).
            if unsafe { ring.submission().push(&entry) }.is_err() {
                break;
            }
            self.flight[i] = Some(InFlight { buf, at, head });
            self.in_flight += 1;
            self.queued.next();
        }
        match ring.submit() {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Waits for at least one completion and takes every one there is.
    fn reap(&mut self) -> io::Result<()> {
        let Some(ring) = self.ring.as_mut() else {
            return Ok(());
        };
        if self.in_flight == 0 {
            return Ok(());
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (i, res) in done {
            let i = i as usize;
            let Some(InFlight { buf, at, head }) = self.flight.get_mut(i).and_then(Option::take)
            else {
                continue;
            };
            self.in_flight -= 1;
            let len = self.reads[i].1.len as usize;
            self.out[i] = if res < 0 {
                Some(Err(io::Error::from_raw_os_error(-res)))
            } else if res as usize >= head + len {
                Some(Ok(buf[at + head..at + head + len].to_vec()))
            } else {
                // A short read (not expected of a regular file): left
                // for the plain read.
                None
            };
        }
        Ok(())
    }

    /// The ring failed: what is left is read one by one, and the buffers
    /// the kernel may still fill are leaked, not freed. The thread makes
    /// no other ring.
    fn break_down(&mut self, e: io::Error) {
        tracing::warn!("Tiering: batched reads failed ({e}); reading one by one");
        for f in self.flight.iter_mut().filter_map(Option::take) {
            std::mem::forget(f.buf);
        }
        self.in_flight = 0;
        // Dropped with the ring: completions no longer matter.
        self.ring = None;
        RING.with_borrow_mut(|slot| *slot = Ring::Failed);
    }
}

impl Drop for Reading {
    /// Waits for the reads in flight (their buffers and files must outlive
    /// them), then gives the ring back to the thread.
    fn drop(&mut self) {
        while self.ring.is_some() && self.in_flight > 0 {
            if let Err(e) = self.reap() {
                self.break_down(e);
            }
        }
        if let Some(ring) = self.ring.take() {
            return_ring(ring);
        }
    }
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
        for i in 0..600u32 {
            let value = vec![(i % 251) as u8; 17 * (i % 300) as usize + 3];
            let mut batch = Vec::new();
            encode_record(&mut batch, &i.to_le_bytes(), &value);
            locs.extend(log.append(&batch, &[batch.len() as u32]).unwrap());
            values.push(value);
        }
        assert!(log.segment_count() > 1);
        // Asked out of file order, more than DEPTH of them.
        let files: Vec<ReadFile> = locs.iter().map(|l| log.reads(l.segment).unwrap()).collect();
        let asked: Vec<usize> = (0..600)
            .rev()
            .step_by(2)
            .chain((0..600).step_by(2))
            .collect();
        let reads: Vec<(&ReadFile, Loc)> = asked.iter().map(|&i| (&files[i], locs[i])).collect();
        let got = read_many(&reads);
        assert_eq!(got.len(), asked.len());
        for (&i, record) in asked.iter().zip(got) {
            let record = record.unwrap();
            assert_eq!(super::super::log::record_value(&record).unwrap(), values[i]);
        }
        assert!(read_many(&[]).is_empty());
        // Two batches on one thread: the second has no ring while the
        // first holds it, and both read everything; a batch dropped
        // unfinished waits for its reads.
        let first = start(asked.iter().map(|&i| (files[i].clone(), locs[i])).collect());
        let second = start(vec![
            (files[0].clone(), locs[0]),
            (files[1].clone(), locs[1]),
        ]);
        assert_eq!(second.finish().len(), 2);
        assert_eq!(first.finish().len(), asked.len());
        drop(start(vec![
            (files[2].clone(), locs[2]),
            (files[3].clone(), locs[3]),
        ]));
        let again = read_many(&reads[..3]);
        assert!(again.iter().all(|r| r.is_ok()));
    }
}
