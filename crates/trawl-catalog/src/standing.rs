//! What monitoring asks of a catalog besides a run's counts: when a run last went to its end,
//! how long ago the least recently verified file was read, and a run's bytes by verdict.

use rusqlite::OptionalExtension;

use crate::verdict::{AuditMode, Verdict};
use crate::{Catalog, Result};

/// The collection's standing, as the catalog records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// When the last run that went to its end (sealed `complete` or `partial`) ended.
    pub last_success: Option<i64>,
    /// The oldest verification time of a present file (None: none was ever verified).
    pub oldest_verified: Option<i64>,
    /// Present files never verified by a read.
    pub never_verified: u64,
}

impl Catalog {
    /// The collection's standing at `now` (one pass over the files). A verification later
    /// than `now` (recorded under a clock gone wrong) counts as none, as the policy's due rule
    /// counts it: it must not make the collection look freshly verified.
    pub fn standing(&self, now: i64) -> Result<Standing> {
        let c = &self.conn;
        let r = (|| -> rusqlite::Result<Standing> {
            let last_success: Option<i64> = c
                .query_row(
                    "SELECT max(finished) FROM runs WHERE status IN ('complete', 'partial')",
                    [],
                    |r| r.get::<_, Option<i64>>(0),
                )
                .optional()?
                .flatten();
            let (oldest_verified, never): (Option<i64>, i64) = c.query_row(
                "SELECT min(CASE WHEN last_verified <= ?1 THEN last_verified END),
                        count(*) - count(CASE WHEN last_verified <= ?1 THEN 1 END)
                 FROM files WHERE present = 1",
                [now],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            Ok(Standing {
                last_success,
                oldest_verified,
                never_verified: never as u64,
            })
        })();
        r.map_err(|e| self.err(e))
    }

    /// The bytes of the paths each verdict was given in `run` (the registered size of a
    /// missing file, the size found of the others): every verdict with an event, and ok. A
    /// metadata-only run's ok paths are counted, not summed: their bytes are left out.
    pub fn run_bytes(&self, run: i64) -> Result<Vec<(Verdict, u64)>> {
        let c = &self.conn;
        let r = (|| -> rusqlite::Result<Vec<(Verdict, u64)>> {
            let mode: String =
                c.query_row("SELECT mode FROM runs WHERE id = ?1", [run], |r| r.get(0))?;
            let mut st = c.prepare(
                "SELECT state, coalesce(sum(size), 0) FROM events WHERE run = ?1 GROUP BY state",
            )?;
            let mut out: Vec<(Verdict, u64)> = st
                .query_map([run], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
                })?
                .filter_map(|r| {
                    r.map(|(s, n)| Verdict::from_name(&s).map(|v| (v, n)))
                        .transpose()
                })
                .collect::<rusqlite::Result<_>>()?;
            // A full run's ok files have no event: their rows name the run.
            if AuditMode::from_name(&mode) == AuditMode::Full {
                let ok: i64 = c.query_row(
                    "SELECT coalesce(sum(size), 0) FROM files
                     WHERE last_run = ?1 AND last_verdict = 'ok'",
                    [run],
                    |r| r.get(0),
                )?;
                out.retain(|(v, _)| *v != Verdict::Ok);
                out.push((Verdict::Ok, ok as u64));
            }
            Ok(out)
        })();
        r.map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use crate::checks::tests::four_runs;
    use crate::verdict::Verdict;

    /// A run's bytes by verdict: the corrupt file's size, the ok file's (from its row, a full
    /// run's ok having no event); a metadata-only run's ok bytes are not known.
    #[test]
    fn a_runs_bytes_by_verdict() {
        let (cat, _dir) = four_runs();
        let mut third = cat.run_bytes(3).unwrap();
        third.sort_by_key(|(v, _)| v.name());
        assert_eq!(third, [(Verdict::Corrupt, 5), (Verdict::Ok, 7)]);
        assert!(
            cat.run_bytes(4)
                .unwrap()
                .iter()
                .all(|(v, _)| *v != Verdict::Ok)
        );
    }

    /// The last success is the last sealed run's end; every present file was verified.
    #[test]
    fn the_standing_names_the_last_success_and_the_oldest_verification() {
        let (cat, _dir) = four_runs();
        let s = cat.standing(crate::now_secs()).unwrap();
        let fourth = cat.run_summary(4).unwrap();
        assert_eq!(s.last_success, fourth.finished);
        assert!(s.oldest_verified.is_some());
        assert_eq!(s.never_verified, 0);
        // Seen from before every verification, none has happened yet.
        let before = cat.standing(0).unwrap();
        assert_eq!(before.oldest_verified, None);
        let present: i64 = cat
            .conn
            .query_row("SELECT count(*) FROM files WHERE present = 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(before.never_verified, present as u64);
    }
}
