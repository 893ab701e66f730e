//! The catalog's collection over time as one typed view (for the HTML report): every run's
//! verdict counts, the files by state, how old their verifications are, the files that want
//! attention, the policy and the files due under it, and the chain head.

use std::path::Path;

use trawl_report::{AgeBucket, CatalogView, DueRow, JsonPath, PolicyView, ProblemFile, RunRow};

use crate::summary::run_summary;
use crate::{Catalog, Result};

/// Age buckets of the last verification: (label, up to this many seconds old).
const AGES: [(&str, i64); 6] = [
    ("< 1 day", 86_400),
    ("1-7 days", 7 * 86_400),
    ("7-30 days", 30 * 86_400),
    ("30-90 days", 90 * 86_400),
    ("90-365 days", 365 * 86_400),
    ("> 1 year", i64::MAX),
];

impl Catalog {
    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<crate::summary::RunSummary>> {
        let ids: Vec<i64> = {
            let mut st = self
                .conn
                .prepare("SELECT id FROM runs ORDER BY id")
                .map_err(|e| self.err(e))?;
            st.query_map([], |r| r.get(0))
                .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.err(e))?
        };
        ids.into_iter()
            .map(|id| run_summary(&self.conn, id).map_err(|e| self.err(e)))
            .collect()
    }

    /// The view of the collection at `now` (seconds since the epoch).
    pub fn view(&self, path: &Path, now: i64) -> Result<CatalogView> {
        let report = self.report()?;
        let (problems, problem_count) = self.problems()?;
        Ok(CatalogView {
            catalog: JsonPath::new(path),
            schema: self.schema_version()? as u32,
            algorithms: self
                .algorithms()?
                .iter()
                .map(|a| a.name().to_string())
                .collect(),
            roots: self
                .roots()?
                .iter()
                .map(|(_, r)| JsonPath::new(r))
                .collect(),
            catalog_bytes: report.catalog_bytes,
            now,
            chain_head: self.chain_digests()?.last().map(hex::encode),
            runs: self.run_rows()?,
            by_state: report.by_state,
            verification_age: self.verification_ages(now)?,
            problems,
            problem_count,
            policy: self.policy_view(now)?,
        })
    }

    /// The policy and the files due under it at `now` (the first [`CatalogView::PROBLEMS`]
    /// listed, oldest verification first).
    fn policy_view(&self, now: i64) -> Result<Option<PolicyView>> {
        let Some(p) = self.policy()? else {
            return Ok(None);
        };
        let mut due = Vec::new();
        let totals = self.for_each_due(now, p.every, &mut |f| {
            if due.len() < CatalogView::PROBLEMS {
                due.push(DueRow {
                    path: JsonPath::new(&f.path),
                    size: f.size,
                    last_verified: f.last_verified,
                });
            }
        })?;
        Ok(Some(PolicyView {
            every_secs: p.every.as_secs(),
            max_bytes: p.max_bytes,
            max_time_secs: p.max_time.map(|t| t.as_secs()),
            window: p.window.map(|w| w.to_string()),
            due_files: totals.files,
            due_bytes: totals.bytes,
            due,
        }))
    }

    /// Every run as the view shows it, oldest first.
    fn run_rows(&self) -> Result<Vec<RunRow>> {
        Ok(self
            .runs()?
            .into_iter()
            .map(|r| RunRow {
                run: r.id,
                started: r.started,
                finished: r.finished,
                mode: r.mode.clone(),
                status: r.status.clone(),
                files_read: r.files_read,
                bytes_read: r.bytes_read,
                counts: r
                    .counts
                    .iter()
                    .map(|(v, n)| (v.name().to_string(), *n))
                    .collect(),
                chain_digest: r.chain_digest.as_ref().map(hex::encode),
            })
            .collect())
    }

    /// The files present, and their bytes, by how old their last verification is at `now`:
    /// never verified first, then each of [`AGES`].
    fn verification_ages(&self, now: i64) -> Result<Vec<AgeBucket>> {
        let mut ages: Vec<AgeBucket> = std::iter::once("never")
            .chain(AGES.iter().map(|(l, _)| *l))
            .map(|l| AgeBucket {
                label: l.to_string(),
                files: 0,
                bytes: 0,
            })
            .collect();
        let mut st = self
            .conn
            .prepare("SELECT last_verified, count(*), coalesce(sum(size), 0) FROM files WHERE present = 1 GROUP BY last_verified")
            .map_err(|e| self.err(e))?;
        let mut rows = st.query([]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let at: Option<i64> = r.get(0).map_err(|e| self.err(e))?;
            let files: i64 = r.get(1).map_err(|e| self.err(e))?;
            let bytes: i64 = r.get(2).map_err(|e| self.err(e))?;
            let b = match at {
                None => 0,
                Some(t) => {
                    let age = (now - t).max(0);
                    1 + AGES
                        .iter()
                        .position(|(_, max)| age < *max)
                        .unwrap_or(AGES.len() - 1)
                }
            };
            ages[b].files += files as u64;
            ages[b].bytes += bytes as u64;
        }
        Ok(ages)
    }

    /// The files that want attention (corrupt, missing, modified, unreadable), the first
    /// [`CatalogView::PROBLEMS`] of them, and how many there are.
    fn problems(&self) -> Result<(Vec<ProblemFile>, u64)> {
        let mut problems = Vec::new();
        let mut problem_count = 0u64;
        self.files_in_states(
            &["corrupt", "missing", "modified", "unreadable"],
            &mut |root, rel, size, state| {
                problem_count += 1;
                if problems.len() < CatalogView::PROBLEMS {
                    let p = root
                        .join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(rel));
                    problems.push(ProblemFile {
                        state: state.to_string(),
                        path: JsonPath::new(&p),
                        size,
                    });
                }
            },
        )?;
        Ok((problems, problem_count))
    }
}
