//! A replica's `FACK` (Redis 7.2's `REPLCONF ACK <offset> FACK <offset>`):
//! how far its own AOF holds its primary's stream fsynced, which the
//! primary's WAITAOF counts.
//!
//! The log counts its own bytes, the stream its own: after each batch of
//! the stream is applied (its commands appended to the log), the replica
//! notes where the log ended and where the stream did. Once the log is
//! fsynced past a note, the stream up to the note's offset is on disk.

use std::collections::VecDeque;

/// Notes kept at most; a newer note past the limit replaces the newest
/// (its offsets only grow, so the replica reports later, never wrongly).
const NOTES: usize = 4096;

#[derive(Default)]
pub struct AofMarks {
    /// (log end, stream offset), oldest first.
    notes: VecDeque<(u64, u64)>,
    /// The stream offset known fsynced.
    fsynced: u64,
    /// The log missed this history's image (it could not start again
    /// from it): nothing of the history is reported until the next full
    /// sync.
    blind: bool,
}

impl AofMarks {
    /// The stream up to `offset` is applied, and its records end at
    /// `log_end` in the log.
    pub fn applied(&mut self, log_end: u64, offset: u64) {
        if self.notes.len() == NOTES {
            self.notes.pop_back();
        }
        self.notes.push_back((log_end, offset));
    }

    /// The stream offset the log holds fsynced, the log being fsynced
    /// through `log_fsynced`.
    pub fn fsynced(&mut self, log_fsynced: u64) -> u64 {
        if self.blind {
            return 0;
        }
        while let Some(&(end, offset)) = self.notes.front() {
            if end > log_fsynced {
                break;
            }
            self.fsynced = self.fsynced.max(offset);
            self.notes.pop_front();
        }
        self.fsynced
    }

    /// A full sync: the log starts again from the image, on disk at
    /// `offset` (`None`: the log could not take the image); what it held
    /// before is another history.
    pub fn restart(&mut self, offset: Option<u64>) {
        self.notes.clear();
        self.fsynced = offset.unwrap_or(0);
        self.blind = offset.is_none();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_counts_once_the_log_is_fsynced_past_its_records() {
        let mut m = AofMarks::default();
        m.applied(100, 1000);
        m.applied(100, 1010); // a PING: nothing logged
        m.applied(250, 1100);
        assert_eq!(m.fsynced(99), 0);
        assert_eq!(m.fsynced(100), 1010);
        assert_eq!(m.fsynced(249), 1010);
        assert_eq!(m.fsynced(300), 1100);
        m.restart(Some(5000));
        assert_eq!(m.fsynced(0), 5000);
        m.restart(None);
        m.applied(400, 6000);
        assert_eq!(m.fsynced(1000), 0, "a log without the image holds nothing");
    }

    #[test]
    fn past_the_limit_the_newest_note_grows() {
        let mut m = AofMarks::default();
        for i in 0..(NOTES as u64 + 10) {
            m.applied(i * 10, i * 100);
        }
        assert_eq!(m.fsynced(10 * (NOTES as u64 - 2)), 100 * (NOTES as u64 - 2));
        // The last notes replaced each other: the newest stands for them.
        let last = NOTES as u64 + 9;
        assert_eq!(m.fsynced(10 * last - 1), 100 * (NOTES as u64 - 2));
        assert_eq!(m.fsynced(10 * last), 100 * last);
    }
}
