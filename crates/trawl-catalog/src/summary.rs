//! What one audit run recorded: its status, counts and chain digest.

use rusqlite::Connection;

use crate::verdict::Verdict;

/// One run as recorded.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The run's number.
    pub id: i64,
    /// When it started (seconds since the Unix epoch).
    pub started: i64,
    /// When it was sealed, if it was.
    pub finished: Option<i64>,
    /// `running`, `complete`, `partial` (a budget stopped its reads) or `interrupted`.
    pub status: String,
    /// `full`, `metadata` or `stored`.
    pub mode: String,
    /// Files whose content it read.
    pub files_read: u64,
    /// Bytes it read.
    pub bytes_read: u64,
    /// Paths per verdict, every verdict named.
    pub counts: Vec<(Verdict, u64)>,
    /// Registered files it did not read.
    pub deferred: u64,
    /// Its seal in the hash chain.
    pub chain_digest: Option<Vec<u8>>,
}

impl RunSummary {
    /// The paths given `v`.
    pub fn count(&self, v: Verdict) -> u64 {
        self.counts
            .iter()
            .find(|(w, _)| *w == v)
            .map_or(0, |(_, n)| *n)
    }
}

pub(crate) fn run_summary(conn: &Connection, run: i64) -> rusqlite::Result<RunSummary> {
    conn.query_row(
        "SELECT id, started, finished, status, mode, files_read, bytes_read, n_ok, n_corrupt,
                n_modified, n_missing, n_new, n_moved, n_unreadable, n_deferred, chain_digest,
                (SELECT count(*) FROM events e WHERE e.run = runs.id AND e.state = 'restored'),
                (SELECT count(*) FROM events e WHERE e.run = runs.id AND e.state = 'uncompared')
         FROM runs WHERE id = ?1",
        [run],
        |r| {
            let n = |i| r.get::<_, i64>(i).map(|v| v as u64);
            Ok(RunSummary {
                id: r.get(0)?,
                started: r.get(1)?,
                finished: r.get(2)?,
                status: r.get(3)?,
                mode: r.get(4)?,
                files_read: n(5)?,
                bytes_read: n(6)?,
                counts: vec![
                    (Verdict::Ok, n(7)?),
                    (Verdict::Corrupt, n(8)?),
                    // Counted from the run's events (no column of its own): a restored file's
                    // row says `restored` as its last verdict, so `n_ok` leaves it out.
                    (Verdict::Restored, n(16)?),
                    (Verdict::Modified, n(9)?),
                    (Verdict::Missing, n(10)?),
                    (Verdict::New, n(11)?),
                    (Verdict::Moved, n(12)?),
                    (Verdict::Unreadable, n(13)?),
                    // Counted from the run's events too: only a no-download audit gives it.
                    (Verdict::Uncompared, n(17)?),
                ],
                deferred: n(14)?,
                chain_digest: r.get(15)?,
            })
        },
    )
}
