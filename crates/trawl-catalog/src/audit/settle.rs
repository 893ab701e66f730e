//! After the reads: missing files decided, and paired with new ones into moves.

use rusqlite::{OptionalExtension, params};

use super::Audit;
use super::walk::kind_detail;
use crate::Result;
use crate::verdict::{AuditMode, Verdict};

/// Where a missing file went: root, path, size, mtime, files row id (0 when not registered).
type MoveTarget = (i64, Vec<u8>, i64, i64, i64);

impl Audit<'_> {
    /// After the reads: decides missing files and pairs them with new ones into moves. With
    /// `complete` false (a budget stopped the reads), a missing file that might have moved to a
    /// file not yet read is left undecided.
    pub fn settle(&mut self, complete: bool) -> Result<()> {
        if self.mode == AuditMode::Metadata {
            self.settle_metadata()?;
        }
        let mut after = 0i64;
        loop {
            type Row = (
                i64,
                i64,
                Vec<u8>,
                i64,
                i64,
                u64,
                u64,
                Vec<u8>,
                Vec<u8>,
                Option<String>,
            );
            let rows: Vec<Row> = {
                let mut st = self
                    .cat
                    .conn
                    .prepare_cached(
                        "SELECT f.id, f.root, f.path, f.size, f.mtime_ns, f.dev, f.ino, f.digest, f.digests, w.kind
                         FROM files f LEFT JOIN walk w ON w.root = f.root AND w.path = f.path
                         WHERE f.id > ?1 AND (f.present = 1 OR f.state = 'missing')
                           AND instr(',' || ?2 || ',', ',' || f.root || ',') > 0
                           AND (w.kind IS NULL OR w.kind NOT IN ('file', 'dirfail'))
                           AND NOT EXISTS (SELECT 1 FROM walk d INDEXED BY walk_kind WHERE d.kind = 'dirfail' AND d.root = f.root
                               AND substr(f.path, 1, length(d.path)) = d.path
                               AND substr(f.path, length(d.path) + 1, 1) = x'2f')
                         ORDER BY f.id LIMIT 1000",
                    )
                    .map_err(|e| self.err(e))?;
                st.query_map(params![after, self.root_list], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get::<_, i64>(5)? as u64,
                        r.get::<_, i64>(6)? as u64,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                    ))
                })
                .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.err(e))?
            };
            let Some(last) = rows.last() else { break };
            after = last.0;
            for (id, rid, path, size, mtime, dev, ino, digest, digests, kind) in rows {
                if !complete && self.unread_new_of_size(size)? {
                    continue;
                }
                let target = match self.mode {
                    AuditMode::Full => self.move_target_full(size, &digest, &digests)?,
                    AuditMode::Metadata => self.move_target_inode(size, mtime, dev, ino)?,
                };
                match target {
                    Some((trid, tpath, tsize, tmtime, tid)) => {
                        if self.mode == AuditMode::Full {
                            // The file keeps its identity (id, first seen, version) under its new path.
                            let conn = &self.cat.conn;
                            let r = conn
                                .execute("DELETE FROM files WHERE id = ?1", [tid])
                                .and_then(|_| {
                                    conn.execute(
                                        "UPDATE files SET root = ?2, path = ?3, size = ?4, mtime_ns = ?5,
                                             state = 'ok', present = 1, last_verified = ?6, last_run = ?7,
                                             last_verdict = 'moved', missing_since = NULL
                                         WHERE id = ?1",
                                        params![id, trid, tpath, tsize, tmtime, self.now, self.run],
                                    )
                                });
                            r.map_err(|e| self.err(e))?;
                        }
                        let detail = format!(
                            "moved from {}",
                            String::from_utf8_lossy(&self.joined(rid, &path))
                        );
                        self.event(
                            trid,
                            &tpath,
                            Verdict::Moved,
                            Some((tsize as u64, tmtime)),
                            Some(&digests),
                            Some(&digests),
                            Some((rid, &path)),
                            Some(&detail),
                        )?;
                    }
                    None => {
                        let since: Option<i64> = self
                            .cat
                            .conn
                            .query_row("SELECT missing_since FROM files WHERE id = ?1", [id], |r| {
                                r.get(0)
                            })
                            .map_err(|e| self.err(e))?;
                        if self.mode == AuditMode::Full {
                            self.cat
                                .conn
                                .execute(
                                    "UPDATE files SET present = 0, state = ?3, last_run = ?2,
                                         last_verdict = 'missing',
                                         missing_since = coalesce(missing_since, ?2)
                                     WHERE id = ?1",
                                    params![
                                        id,
                                        self.run,
                                        if self.forget_missing {
                                            "removed"
                                        } else {
                                            "missing"
                                        }
                                    ],
                                )
                                .map_err(|e| self.err(e))?;
                        }
                        let mut parts: Vec<String> = Vec::new();
                        if let Some(d) = kind.as_deref().and_then(kind_detail) {
                            parts.push(d.into());
                        }
                        if let Some(r) = since {
                            parts.push(format!("missing since run {r}"));
                        }
                        if self.forget_missing {
                            parts.push("forgotten (--forget-missing): not reported again".into());
                        }
                        let joined = parts.join("; ");
                        let detail = (!parts.is_empty()).then_some(joined.as_str());
                        self.event(
                            rid,
                            &path,
                            Verdict::Missing,
                            Some((size as u64, mtime)),
                            Some(&digests),
                            None,
                            None,
                            detail,
                        )?;
                    }
                }
                self.tick()?;
            }
        }
        self.commit()
    }

    pub(super) fn unread_new_of_size(&self, size: i64) -> Result<bool> {
        self.cat
            .conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM walk w WHERE w.size = ?1 AND w.kind = 'file'
                     AND NOT EXISTS (SELECT 1 FROM files f WHERE f.root = w.root AND f.path = w.path AND f.present = 1))",
            )
            .and_then(|mut st| st.query_row([size], |r| r.get(0)))
            .map_err(|e| self.err(e))
    }

    /// A file registered by this run as new with the same size and digests, not yet claimed.
    pub(super) fn move_target_full(
        &self,
        size: i64,
        digest: &[u8],
        digests: &[u8],
    ) -> Result<Option<MoveTarget>> {
        self.cat
            .conn
            .prepare_cached(
                "SELECT root, path, size, mtime_ns, id FROM files
                 WHERE digest = ?1 AND size = ?2 AND digests = ?3 AND first_run = ?4
                   AND last_run = ?4 AND last_verdict = 'new' AND present = 1
                 ORDER BY root, path LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![digest, size, digests, self.run], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Metadata-only moves: a new path with the same device, inode, size and mtime.
    pub(super) fn move_target_inode(
        &self,
        size: i64,
        mtime: i64,
        dev: u64,
        ino: u64,
    ) -> Result<Option<MoveTarget>> {
        self.cat
            .conn
            .prepare_cached(
                "SELECT w.root, w.path, w.size, w.mtime_ns, 0 FROM walk w
                 JOIN events e ON e.run = ?5 AND e.root = w.root AND e.path = w.path AND e.state = 'new'
                 WHERE w.kind = 'file' AND w.size = ?1 AND w.mtime_ns = ?2 AND w.dev = ?3 AND w.ino = ?4
                 ORDER BY w.root, w.path LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![size, mtime, dev as i64, ino as i64, self.run], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Metadata-only: new and changed paths by size and mtime, as set operations.
    pub(super) fn settle_metadata(&mut self) -> Result<()> {
        let conn = &self.cat.conn;
        let r = conn
            .execute(
                "INSERT OR REPLACE INTO events(run, root, path, state, size, mtime_ns, detail)
                 SELECT ?1, w.root, w.path, 'new', w.size, w.mtime_ns,
                        'not registered yet (a metadata-only audit reads nothing; the next full audit registers it)'
                 FROM walk w LEFT JOIN files f ON f.root = w.root AND f.path = w.path
                 WHERE w.kind = 'file' AND (f.id IS NULL OR f.present = 0)",
                [self.run],
            )
            .and_then(|_| {
                conn.execute(
                    "INSERT OR REPLACE INTO events(run, root, path, state, size, mtime_ns, expected, detail)
                     SELECT ?1, w.root, w.path, 'modified', w.size, w.mtime_ns, f.digests,
                            'size or mtime changed (metadata-only audit: content not compared)'
                     FROM walk w JOIN files f ON f.root = w.root AND f.path = w.path
                     WHERE w.kind = 'file' AND f.present = 1
                       AND (f.size != w.size OR f.mtime_ns != w.mtime_ns)",
                    [self.run],
                )
            })
            .and_then(|_| {
                conn.query_row(
                    "SELECT count(*) FROM walk w JOIN files f ON f.root = w.root AND f.path = w.path
                     WHERE w.kind = 'file' AND f.present = 1 AND f.size = w.size AND f.mtime_ns = w.mtime_ns",
                    [],
                    |r| r.get::<_, i64>(0),
                )
            });
        self.metadata_ok = r.map_err(|e| self.err(e))? as u64;
        Ok(())
    }
}
