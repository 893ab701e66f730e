//! After the reads: missing files decided, and paired with new ones into moves.

use rusqlite::{OptionalExtension, params};

use super::Audit;
use super::walk::kind_detail;
use crate::Result;
use crate::verdict::{AuditMode, Verdict};

/// Where a missing file went: directory id, name, root, size, mtime, files row id (0 when not
/// registered).
type MoveTarget = (i64, Vec<u8>, i64, i64, i64, i64);

/// A registered file the walk did not find: files row id, directory id, name, root, size,
/// mtime, device, inode, digests, what the walk found at its name instead, if anything, and
/// whether the user's rules left it (or a directory above it) out of the walk.
type NotFound = (
    i64,
    i64,
    Vec<u8>,
    i64,
    i64,
    i64,
    u64,
    u64,
    Vec<u8>,
    Option<String>,
    bool,
);

impl Audit<'_> {
    /// After the reads: decides missing files and pairs them with new ones into moves. With
    /// `complete` false (a budget stopped the reads), a missing file that might have moved to a
    /// file not yet read is left undecided.
    pub fn settle(&mut self, complete: bool) -> Result<()> {
        if self.mode != AuditMode::Full {
            self.settle_metadata()?;
        }
        let mut after = 0i64;
        loop {
            let rows = self.not_found_after(after)?;
            let Some(last) = rows.last() else { break };
            after = last.0;
            for row in rows {
                // Left out by the user's rules: met by the walk as excluded, or matched by
                // them now that it is gone. Neither missing nor moved: left as it was.
                if row.10 || self.excluded_by_pattern(row.1, &row.2)? {
                    self.left_out += 1;
                    continue;
                }
                let (_, _, _, _, size, mtime, dev, ino, ref digests, _, _) = row;
                if !complete && self.unread_new_of_size(size)? {
                    continue;
                }
                let target = match self.mode {
                    AuditMode::Full => self.move_target_full(size, digests)?,
                    AuditMode::Metadata | AuditMode::Stored => {
                        self.move_target_inode(size, mtime, dev, ino)?
                    }
                };
                match target {
                    Some(t) => self.moved(&row, t)?,
                    None => self.missing(&row)?,
                }
                self.tick()?;
            }
        }
        self.carry_corrupt()?;
        self.commit()
    }

    /// A corrupt file this run found where it was but did not read (a metadata-only audit,
    /// `--older-than`, a budget) is reported corrupt again, as every audit reports it until its
    /// content is restored; its registration is left as it is.
    fn carry_corrupt(&mut self) -> Result<()> {
        self.cat
            .conn
            .execute(
                "INSERT OR IGNORE INTO events(run, dir, name, state, size, mtime_ns, expected, detail)
                 SELECT ?1, w.dir, w.name, 'corrupt', w.size, w.mtime_ns, f.digests,
                        'corrupt since an earlier audit, not read in this one: corrupt until its content is restored'
                 FROM walk w JOIN files f ON f.dir = w.dir AND f.name = w.name
                 WHERE w.kind = 'file' AND f.present = 1 AND f.state = 'corrupt'",
                [self.run],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Up to 1,000 registered files, by id past `after`, that the walk did not find as files:
    /// each missing, or moved.
    fn not_found_after(&self, after: i64) -> Result<Vec<NotFound>> {
        {
            let mut st = self
                .cat
                .conn
                .prepare_cached(
                    "SELECT f.id, f.dir, f.name, d.root, f.size, f.mtime_ns, f.dev, f.ino, f.digests, w.kind,
                            coalesce(w.kind = 'excluded', 0)
                            OR EXISTS (SELECT 1 FROM excluded_dirs x WHERE x.root = d.root
                                       AND substr(d.path, 1, length(x.path)) = x.path)
                     FROM files f JOIN dirs d ON d.id = f.dir
                     LEFT JOIN walk w ON w.dir = f.dir AND w.name = f.name
                     WHERE f.id > ?1 AND (f.present = 1 OR f.state = 'missing')
                       AND instr(',' || ?2 || ',', ',' || d.root || ',') > 0
                       AND (w.kind IS NULL OR w.kind NOT IN ('file', 'dirfail'))
                       AND NOT EXISTS (SELECT 1 FROM failed_dirs x WHERE x.root = d.root
                           AND substr(d.path, 1, length(x.path)) = x.path)
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
                    r.get(5)?,
                    r.get::<_, i64>(6)? as u64,
                    r.get::<_, i64>(7)? as u64,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                ))
            })
            .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.err(e))
        }
    }

    /// Whether the user's rules leave out the registered file `name` of directory `dir` (by its
    /// path below its root: the file or a directory above it matches).
    fn excluded_by_pattern(&self, dir: i64, name: &[u8]) -> Result<bool> {
        use std::os::unix::ffi::OsStrExt;
        if self.excluding.is_empty() {
            return Ok(false);
        }
        let rel = self.whole_path(dir, name)?;
        Ok(self
            .excluding
            .excludes_file(std::path::Path::new(std::ffi::OsStr::from_bytes(&rel))))
    }

    /// A file found under a new path: it keeps its identity (id, first seen, version) there.
    fn moved(&mut self, row: &NotFound, target: MoveTarget) -> Result<()> {
        let (id, dir, ref name, rid, _, _, _, _, ref digests, _, _) = *row;
        let (tdir, tname, _troot, tsize, tmtime, tid) = target;
        if self.mode == AuditMode::Full {
            // The file keeps its identity (id, first seen, version) under its new path, and
            // takes the digests read there: the same over the algorithms its row holds, and
            // those added to the catalog since it was registered.
            let conn = &self.cat.conn;
            let r = conn
                .query_row("SELECT digests FROM files WHERE id = ?1", [tid], |r| {
                    r.get::<_, Vec<u8>>(0)
                })
                .and_then(|read| {
                    conn.execute("DELETE FROM files WHERE id = ?1", [tid])?;
                    let kept = if read.len() > digests.len() {
                        &read
                    } else {
                        digests
                    };
                    // Its ctime is dropped: the row keeps the device and inode it was
                    // registered with, so no `scan --reuse` takes it until an audit reads it.
                    conn.execute(
                        "UPDATE files SET dir = ?2, name = ?3, size = ?4, mtime_ns = ?5,
                             state = 'ok', present = 1, last_verified = ?6, last_run = ?7,
                             last_verdict = 'moved', missing_since = NULL, digests = ?8,
                             ctime_ns = NULL
                         WHERE id = ?1",
                        params![id, tdir, tname, tsize, tmtime, self.now, self.run, kept],
                    )
                });
            r.map_err(|e| self.err(e))?;
        }
        let from = self.whole_path(dir, name)?;
        let detail = format!(
            "moved from {}",
            String::from_utf8_lossy(&self.joined(rid, &from)?)
        );
        self.event(
            (tdir, &tname),
            Verdict::Moved,
            Some((tsize as u64, tmtime)),
            Some(digests),
            Some(digests),
            Some((dir, name)),
            Some(&detail),
        )?;
        Ok(())
    }

    /// A file not found anywhere: missing (or forgotten, with --forget-missing).
    fn missing(&mut self, row: &NotFound) -> Result<()> {
        let (id, dir, ref name, _, size, mtime, _, _, ref digests, ref kind, _) = *row;
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
            (dir, name),
            Verdict::Missing,
            Some((size as u64, mtime)),
            Some(digests),
            None,
            None,
            detail,
        )?;
        Ok(())
    }

    pub(super) fn unread_new_of_size(&self, size: i64) -> Result<bool> {
        self.cat
            .conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM walk w WHERE w.size = ?1 AND w.kind = 'file'
                     AND NOT EXISTS (SELECT 1 FROM files f WHERE f.dir = w.dir AND f.name = w.name AND f.present = 1))",
            )
            .and_then(|mut st| st.query_row([size], |r| r.get(0)))
            .map_err(|e| self.err(e))
    }

    /// The path below its root of directory `dir` and name `name`.
    fn whole_path(&self, dir: i64, name: &[u8]) -> Result<Vec<u8>> {
        let mut p: Vec<u8> = self
            .cat
            .conn
            .prepare_cached("SELECT path FROM dirs WHERE id = ?1")
            .and_then(|mut st| st.query_row([dir], |r| r.get(0)))
            .map_err(|e| self.err(e))?;
        p.extend_from_slice(name);
        Ok(p)
    }

    /// A file registered by this run as new with the same size and digests, not yet claimed;
    /// the first in (root, path) order.
    ///
    /// The catalog keeps no index on digests (a third of its size, for a question asked only
    /// when files go missing): the first time a run asks, its own new files are indexed by
    /// their primary digest's first bytes in the scratch database.
    pub(super) fn move_target_full(
        &mut self,
        size: i64,
        digests: &[u8],
    ) -> Result<Option<MoveTarget>> {
        if !self.fresh {
            self.cat
                .conn
                .execute_batch(&format!(
                    "CREATE TABLE scratch.fresh(key BLOB NOT NULL, size INTEGER NOT NULL, id INTEGER NOT NULL);
                     INSERT INTO scratch.fresh SELECT substr(digests, 1, 8), size, id FROM files
                         WHERE first_run = {run} AND last_run = {run} AND last_verdict = 'new' AND present = 1;
                     CREATE INDEX scratch.fresh_key ON fresh(key, size);",
                    run = self.run
                ))
                .map_err(|e| self.err(e))?;
            self.fresh = true;
        }
        self.cat
            .conn
            .prepare_cached(
                "SELECT f.dir, f.name, d.root, f.size, f.mtime_ns, f.id
                 FROM fresh n JOIN files f ON f.id = n.id JOIN dirs d ON d.id = f.dir
                 WHERE n.key = substr(?1, 1, 8) AND n.size = ?2
                   AND substr(f.digests, 1, length(?1)) = ?1
                   AND f.first_run = ?3 AND f.last_run = ?3 AND f.last_verdict = 'new'
                   AND f.present = 1
                 ORDER BY d.root, CAST(d.path || f.name AS BLOB) LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![digests, size, self.run], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
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
                "SELECT w.dir, w.name, d.root, w.size, w.mtime_ns, 0 FROM walk w
                 JOIN dirs d ON d.id = w.dir
                 JOIN events e ON e.run = ?5 AND e.dir = w.dir AND e.name = w.name AND e.state = 'new'
                 WHERE w.kind = 'file' AND w.size = ?1 AND w.mtime_ns = ?2 AND w.dev = ?3 AND w.ino = ?4
                 ORDER BY d.root, CAST(d.path || w.name AS BLOB) LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![size, mtime, dev as i64, ino as i64, self.run], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// What a new path's event says reads nothing (a metadata-only audit, a no-download one),
    /// and what a changed one's says.
    fn unread_words(&self) -> (&'static str, &'static str) {
        match self.mode {
            AuditMode::Stored => (
                "a no-download audit",
                "size or mtime changed (no-download audit: content not compared)",
            ),
            _ => (
                "a metadata-only audit",
                "size or mtime changed (metadata-only audit: content not compared)",
            ),
        }
    }

    /// Metadata-only and no-download audits: new and changed paths by size and mtime, as set
    /// operations (neither reads a file, so neither registers one).
    pub(super) fn settle_metadata(&mut self) -> Result<()> {
        let conn = &self.cat.conn;
        let (audit, modified) = self.unread_words();
        let r = conn
            .execute(
                "INSERT OR REPLACE INTO events(run, dir, name, state, size, mtime_ns, detail)
                 SELECT ?1, w.dir, w.name, 'new', w.size, w.mtime_ns,
                        'not registered yet (' || ?2 || ' reads nothing; the next full audit registers it)'
                 FROM walk w LEFT JOIN files f ON f.dir = w.dir AND f.name = w.name
                 WHERE w.kind = 'file' AND (f.id IS NULL OR f.present = 0)",
                params![self.run, audit],
            )
            .and_then(|_| {
                // Content that never changes (an OCFL version's) and whose size or time did is
                // corrupt, and so recorded; any other changed file is modified.
                let (state, detail) = if self.fixed {
                    (
                        "corrupt",
                        "size or mtime changed, and its content never changes (metadata-only audit: content not compared)",
                    )
                } else {
                    ("modified", modified)
                };
                conn.execute(
                    "INSERT OR REPLACE INTO events(run, dir, name, state, size, mtime_ns, expected, detail)
                     SELECT ?1, w.dir, w.name, ?2, w.size, w.mtime_ns, f.digests, ?3
                     FROM walk w JOIN files f ON f.dir = w.dir AND f.name = w.name
                     WHERE w.kind = 'file' AND f.present = 1
                       AND (f.size != w.size OR f.mtime_ns != w.mtime_ns)",
                    rusqlite::params![self.run, state, detail],
                )?;
                if self.fixed {
                    conn.execute(
                        "UPDATE files SET state = 'corrupt', last_run = ?1, last_verdict = 'corrupt'
                         WHERE id IN (SELECT f.id FROM walk w JOIN files f
                                      ON f.dir = w.dir AND f.name = w.name
                                      WHERE w.kind = 'file' AND f.present = 1
                                        AND (f.size != w.size OR f.mtime_ns != w.mtime_ns))",
                        [self.run],
                    )?;
                }
                Ok(0)
            })
            .and_then(|_| {
                conn.query_row(
                    "SELECT count(*) FROM walk w JOIN files f ON f.dir = w.dir AND f.name = w.name
                     WHERE w.kind = 'file' AND f.present = 1 AND f.size = w.size AND f.mtime_ns = w.mtime_ns
                       AND f.state != 'corrupt'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
            });
        self.metadata_ok = r.map_err(|e| self.err(e))? as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::audit::tests::{Harness, events};
    use crate::verdict::{AuditMode, Verdict};

    /// A registered file not found where it was, and a new one of the same size and content:
    /// one move, on the new path, naming the old. Same content at another size is no move.
    #[test]
    fn a_file_under_a_new_name_with_its_size_and_content_is_one_move() {
        let mut h = Harness::new();
        h.full(&[("d/a", 5, 100, 1), ("d/b", 6, 100, 2), ("c", 7, 100, 3)]);
        assert_eq!(
            h.full(&[("e/x", 5, 300, 1), ("y", 8, 300, 2), ("c", 7, 100, 3)]),
            events(&[
                ("d/b", Verdict::Missing, None),
                ("e/x", Verdict::Moved, Some("moved from /collection/d/a")),
                ("y", Verdict::New, None),
            ])
        );
        // The moved file keeps its identity: its version, and its registration's content.
        assert_eq!(h.row("e/x"), (5, 300, vec![1; 32], "ok".into(), 1));
    }

    /// Several missing files of one content, several new ones of it: each missing file, in
    /// the order registered, takes the first unclaimed new path in byte order; the rest stay
    /// new.
    #[test]
    fn identical_files_moved_pair_in_byte_order() {
        let mut h = Harness::new();
        h.full(&[("a", 5, 100, 1), ("b", 5, 100, 1)]);
        assert_eq!(
            h.full(&[("z", 5, 100, 1), ("m", 5, 100, 1), ("Q", 5, 100, 1)]),
            events(&[
                ("Q", Verdict::Moved, Some("moved from /collection/a")),
                ("m", Verdict::Moved, Some("moved from /collection/b")),
                ("z", Verdict::New, None),
            ])
        );
    }

    /// A missing file is said missing by every audit, since which run, and found again with
    /// its registered content it is new again, saying so.
    #[test]
    fn a_missing_file_is_said_every_audit_until_it_is_back() {
        let mut h = Harness::new();
        h.full(&[("a", 5, 100, 1), ("b", 6, 100, 2)]);
        assert_eq!(
            h.full(&[("b", 6, 100, 2)]),
            events(&[("a", Verdict::Missing, None)])
        );
        assert_eq!(
            h.full(&[("b", 6, 100, 2)]),
            events(&[("a", Verdict::Missing, Some("missing since run 2"))])
        );
        assert_eq!(
            h.full(&[("a", 5, 100, 1), ("b", 6, 100, 2)]),
            events(&[(
                "a",
                Verdict::New,
                Some("back after being missing, with its registered content")
            )])
        );
        assert_eq!(h.row("a").3, "ok");
    }

    /// With --forget-missing a missing file is said once more, saying it is forgotten, and
    /// never again.
    #[test]
    fn a_forgotten_missing_file_is_said_once() {
        let mut h = Harness::new();
        h.full(&[("a", 5, 100, 1), ("b", 6, 100, 2)]);
        let forget = |a: &mut crate::Audit<'_>| a.forget_missing(true);
        assert_eq!(
            h.run(AuditMode::Full, &[("b", 6, 100, 2)], forget),
            events(&[(
                "a",
                Verdict::Missing,
                Some("forgotten (--forget-missing): not reported again")
            )])
        );
        assert_eq!(h.row("a").3, "removed");
        assert_eq!(h.full(&[("b", 6, 100, 2)]), events(&[]));
    }

    /// A metadata-only audit reads nothing: a file whose size or time changed is modified (or,
    /// where content never changes, corrupt), one not registered is new and stays unregistered,
    /// one moved is paired by device, inode, size and time.
    #[test]
    fn a_metadata_audit_judges_by_size_and_time_alone() {
        let modified = Some("size or mtime changed (metadata-only audit: content not compared)");
        let unregistered = Some(
            "not registered yet (a metadata-only audit reads nothing; the next full audit registers it)",
        );
        for fixed in [false, true] {
            let mut h = Harness::new();
            h.full(&[("a", 5, 100, 1), ("b", 6, 100, 2), ("c", 7, 100, 3)]);
            // `b`'s new time; `c` found under the name `d`, its inode (3) the same; `e` new.
            let found = [
                ("a", 5, 100, 9),
                ("b", 6, 200, 2),
                ("d", 7, 100, 3),
                ("e", 8, 100, 4),
            ];
            let got = h.run(AuditMode::Metadata, &found, |a| a.fixed_content(fixed));
            let b = if fixed {
                (
                    "b",
                    Verdict::Corrupt,
                    Some(
                        "size or mtime changed, and its content never changes (metadata-only audit: content not compared)",
                    ),
                )
            } else {
                ("b", Verdict::Modified, modified)
            };
            let mut want = events(&[b, ("e", Verdict::New, unregistered)]);
            want.extend(events(&[(
                "d",
                Verdict::Moved,
                Some("moved from /collection/c"),
            )]));
            assert_eq!(got, want, "fixed content: {fixed}");
            assert_eq!(
                h.row("b").1,
                100,
                "nothing is registered from metadata alone"
            );
        }
    }
}
