//! One verdict per file read: the read compared with its registered row, written at once.

use rusqlite::{OptionalExtension, params};
use trawl_digest::Algorithm;

use super::Audit;
use crate::Result;
use crate::source::Expected;
use crate::verdict::{AuditMode, Verdict};

/// What a read found of a file: its metadata and its digests, concatenated.
#[derive(Clone, Copy)]
struct Seen<'a> {
    size: u64,
    mtime_ns: i64,
    dev: u64,
    ino: u64,
    /// The status change time the read's `fstat` found (None: its source has none).
    ctime_ns: Option<i64>,
    digests: &'a [u8],
}

/// Whether registered digests (`old`) and the digests read now (`new`), both concatenated in
/// the catalog's algorithm order, agree, over the algorithms both hold: an algorithm added to
/// the catalog comes after the others, so a row registered before it holds a prefix of what a
/// read computes now (it gets the rest when read as registered).
pub(crate) fn same_digests(old: &[u8], new: &[u8]) -> bool {
    let n = old.len().min(new.len());
    old[..n] == new[..n] && (n > 0 || old.len() == new.len())
}

/// The verdict on a registered file read again, from its registered size, mtime and digests
/// (`old`) against what the read found, and what it says: new again (it was missing), ok,
/// corrupt (other content, same size and mtime), or modified.
fn verdict_on(
    present: bool,
    old: (i64, i64, &[u8]),
    size: u64,
    mtime_ns: i64,
    all: &[u8],
) -> (Verdict, Option<String>) {
    let (old_size, old_mtime, old_digests) = old;
    let same_meta = old_size == size as i64 && old_mtime == mtime_ns;
    let same = same_digests(old_digests, all);
    if !present {
        let d = if same {
            "back after being missing, with its registered content"
        } else {
            "back after being missing, with different content (recorded as a new version)"
        };
        (Verdict::New, Some(d.to_string()))
    } else if same {
        (Verdict::Ok, None)
    } else if same_meta {
        (
            Verdict::Corrupt,
            Some("content changed but size and mtime did not".to_string()),
        )
    } else {
        let mut d = Vec::new();
        if old_size != size as i64 {
            d.push(format!("size {old_size} -> {size}"));
        }
        if old_mtime != mtime_ns {
            d.push("mtime changed".to_string());
        }
        (Verdict::Modified, Some(d.join(", ")))
    }
}

/// When a read's digests differ from an expected one (several may be given for one algorithm,
/// each must hold) in an algorithm both have: the reference to keep, the read's digests with
/// the first expected one of each algorithm in its place.
fn differs_from(
    digests: &[(Algorithm, Vec<u8>)],
    e: Expected<'_>,
) -> Option<Vec<(Algorithm, Vec<u8>)>> {
    let want = |a: Algorithm| e.digests.iter().find(|(x, _)| *x == a).map(|(_, d)| d);
    let differs = e.digests.iter().any(|(a, w)| {
        digests
            .iter()
            .find(|(x, _)| x == a)
            .is_some_and(|(_, d)| d != w)
    });
    differs.then(|| {
        digests
            .iter()
            .map(|(a, d)| (*a, want(*a).unwrap_or(d).clone()))
            .collect()
    })
}

/// A file's registered row: its id, size, mtime, digests, whether present, the run it was
/// first seen in, and its state.
pub(super) type Registered = (i64, i64, i64, Vec<u8>, bool, i64, String);

/// A verdict, what its event says, and the digests it names as expected (the registered ones).
type Judged = (Verdict, Option<String>, Option<Vec<u8>>);

impl Audit<'_> {
    /// A file read in full (`meta`: its size, mtime, device, inode and ctime, where its source
    /// has one): compares it with its registered row, or with what its source expects of it,
    /// and records the verdict.
    pub fn record_read(
        &mut self,
        root: usize,
        rel: &[u8],
        meta: (u64, i64, u64, u64, Option<i64>),
        digests: &[(Algorithm, Vec<u8>)],
        expected: Option<Expected<'_>>,
    ) -> Result<(Verdict, Option<String>)> {
        let (size, mtime_ns, dev, ino, ctime_ns) = meta;
        self.read.0 += 1;
        self.read.1 += size;
        let rid = self.roots[root].0;
        let at = self.place(rid, rel)?;
        let all = self.concat(digests);
        let seen = Seen {
            size,
            mtime_ns,
            dev,
            ino,
            ctime_ns,
            digests: &all,
        };
        if let Some(e) = expected
            && let Some(reference) = differs_from(digests, e)
        {
            let read: Vec<Algorithm> = digests.iter().map(|(a, _)| *a).collect();
            return self.record_unexpected(at, seen, &self.concat(&reference), e, &read);
        }
        let (verdict, detail, reference) = match self.registered(at)? {
            None => self.judge_new(root, at, &seen, expected)?,
            Some(row) => self.judge_registered(at, row, &seen, expected)?,
        };
        if verdict != Verdict::Ok {
            self.event(
                at,
                verdict,
                Some((size, mtime_ns)),
                reference.as_deref(),
                Some(&all),
                None,
                detail.as_deref(),
            )?;
        }
        self.tick()?;
        Ok((verdict, detail))
    }

    /// The registered row at `at` (a directory id and a name), if any.
    pub(super) fn registered(&self, at: (i64, &[u8])) -> Result<Option<Registered>> {
        self.cat
            .conn
            .prepare_cached(
                "SELECT id, size, mtime_ns, digests, present, first_run, state FROM files WHERE dir = ?1 AND name = ?2",
            )
            .and_then(|mut st| {
                st.query_row(params![at.0, at.1], |r| {
                    let row: Registered = r.try_into()?;
                    match crate::digests::digests_fit(&self.algorithms, &row.3) {
                        true => Ok(row),
                        false => Err(crate::digests::misfit(&self.algorithms, &row.3, 3)),
                    }
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// A file not registered, registered now: new; or corrupt where its source holds the unit
    /// it is in fixed and that unit had files registered before (content was added to it).
    fn judge_new(
        &mut self,
        root: usize,
        at: (i64, &[u8]),
        seen: &Seen<'_>,
        expected: Option<Expected<'_>>,
    ) -> Result<Judged> {
        self.insert_new(at.0, at.1, seen)?;
        match expected.and_then(|e| e.fixed) {
            Some(unit) if self.registered_before(root, unit)? => {
                let id = self.cat.conn.last_insert_rowid();
                self.update_read(id, Verdict::Corrupt, seen, false, self.run)?;
                let detail = format!(
                    "new in {}, whose files were registered before and never change: content was added to it",
                    unit.display()
                );
                Ok((Verdict::Corrupt, Some(detail), None))
            }
            _ => Ok((Verdict::New, None, None)),
        }
    }

    /// A registered file read again: its verdict against its row (or against its source, which
    /// holds it fixed), its row updated; a corrupt file as registered again is restored.
    fn judge_registered(
        &mut self,
        at: (i64, &[u8]),
        row: Registered,
        seen: &Seen<'_>,
        expected: Option<Expected<'_>>,
    ) -> Result<Judged> {
        let (id, old_size, old_mtime, old_digests, present, first_run, state) = row;
        let all = seen.digests;
        let (mut verdict, mut detail) = match expected {
            // Content its source holds fixed that is not what was registered: the source's own
            // record was rewritten with it, or the file was swapped.
            Some(e) if e.fixed.is_some() && !same_digests(&old_digests, all) => (
                Verdict::Corrupt,
                Some(format!(
                    "content differs from what was registered, and {} holds it fixed (it may not change)",
                    e.from
                )),
            ),
            _ => verdict_on(
                present,
                (old_size, old_mtime, &old_digests),
                seen.size,
                seen.mtime_ns,
                all,
            ),
        };
        // Corrupt until now, and as registered again: its content was restored, which its
        // history says.
        if verdict == Verdict::Ok && state == "corrupt" {
            verdict = Verdict::Restored;
            detail = Some(self.restored_detail(at.0, at.1)?);
        }
        let first_run = if present { first_run } else { self.run };
        let changed = !same_digests(&old_digests, all);
        self.update_read(id, verdict, seen, changed, first_run)?;
        Ok((verdict, detail, Some(old_digests)))
    }

    /// A file whose content is not what its source expects: corrupt, whatever its size and
    /// time; registered (if it was not) with the expected digests as the reference, which a
    /// registered file keeps.
    fn record_unexpected(
        &mut self,
        at: (i64, &[u8]),
        seen: Seen<'_>,
        reference: &[u8],
        e: Expected<'_>,
        read: &[Algorithm],
    ) -> Result<(Verdict, Option<String>)> {
        let (dir, name) = at;
        let id: Option<i64> = self
            .cat
            .conn
            .prepare_cached("SELECT id FROM files WHERE dir = ?1 AND name = ?2")
            .and_then(|mut st| st.query_row(params![dir, name], |r| r.get(0)).optional())
            .map_err(|e| self.err(e))?;
        let id = match id {
            Some(id) => id,
            None => {
                self.insert_new(
                    dir,
                    name,
                    &Seen {
                        digests: reference,
                        ..seen
                    },
                )?;
                self.cat.conn.last_insert_rowid()
            }
        };
        self.update_read(id, Verdict::Corrupt, &seen, false, self.run)?;
        let algs: Vec<&str> = e
            .digests
            .iter()
            .filter(|(a, _)| read.contains(a))
            .map(|(a, _)| a.name())
            .collect();
        let detail = format!("content differs from {} ({})", e.from, algs.join(", "));
        self.event(
            (dir, name),
            Verdict::Corrupt,
            Some((seen.size, seen.mtime_ns)),
            Some(reference),
            Some(seen.digests),
            None,
            Some(&detail),
        )?;
        self.tick()?;
        Ok((Verdict::Corrupt, Some(detail)))
    }

    /// What a restored file's event says: since which run it was corrupt (the first corrupt
    /// event after the last one that was neither corrupt nor unreadable).
    fn restored_detail(&self, dir: i64, name: &[u8]) -> Result<String> {
        let since: Option<i64> = self
            .cat
            .conn
            .prepare_cached(
                "SELECT min(run) FROM events WHERE dir = ?1 AND name = ?2 AND state = 'corrupt'
                   AND run > coalesce((SELECT max(run) FROM events WHERE dir = ?1 AND name = ?2
                       AND run < ?3 AND state NOT IN ('corrupt', 'unreadable')), 0)",
            )
            .and_then(|mut st| st.query_row(params![dir, name, self.run], |r| r.get(0)))
            .map_err(|e| self.err(e))?;
        Ok(match since {
            Some(r) => format!("corrupt since run {r}; its content is as registered again"),
            None => "corrupt before; its content is as registered again".to_string(),
        })
    }

    /// Whether files under `unit` (a directory below root `root`) were registered in an
    /// earlier run (what this run registers does not change the answer, so it is kept).
    fn registered_before(&mut self, root: usize, unit: &std::path::Path) -> Result<bool> {
        use std::os::unix::ffi::OsStrExt;
        let rid = self.roots[root].0;
        let rel = unit
            .strip_prefix(&self.roots[root].1)
            .map(|r| r.as_os_str().as_bytes())
            .unwrap_or_else(|_| unit.as_os_str().as_bytes());
        let key = (root, rel.to_vec());
        if let Some(known) = self.units.get(&key) {
            return Ok(*known);
        }
        if self.units.len() >= 4096 {
            self.units.clear();
        }
        let low = crate::dirs::as_dir(rel);
        // Every directory path under `low` begins with it, and sorts before `low` with its
        // trailing `/` raised to the next byte.
        let mut high = low.clone();
        if let Some(last) = high.last_mut() {
            *last += 1;
        }
        let before: bool = self
            .cat
            .conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM files f JOIN dirs d ON d.id = f.dir
                 WHERE d.root = ?1 AND d.path >= ?2 AND d.path < ?3 AND f.first_run < ?4)",
            )
            .and_then(|mut st| st.query_row(params![rid, low, high, self.run], |r| r.get(0)))
            .map_err(|e| self.err(e))?;
        self.units.insert(key, before);
        Ok(before)
    }

    /// A file met for the first time: registered, new.
    fn insert_new(&self, dir: i64, name: &[u8], seen: &Seen<'_>) -> Result<()> {
        self.cat
            .conn
            .prepare_cached(
                "INSERT INTO files(dir, name, size, mtime_ns, dev, ino, digests, state,
                     present, version, first_seen, last_verified, first_run, last_run, last_verdict,
                     ctime_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'ok', 1, 1, ?8, ?8, ?9, ?9, 'new', ?10)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    dir,
                    name,
                    seen.size as i64,
                    seen.mtime_ns,
                    seen.dev as i64,
                    seen.ino as i64,
                    seen.digests,
                    self.now,
                    self.run,
                    seen.ctime_ns
                ])
            })
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A registered file read again: a corrupt one keeps its registered digests and metadata
    /// (they are the reference); any other takes what was read (`changed`: a new version).
    fn update_read(
        &self,
        id: i64,
        verdict: Verdict,
        seen: &Seen<'_>,
        changed: bool,
        first_run: i64,
    ) -> Result<()> {
        let conn = &self.cat.conn;
        if verdict == Verdict::Corrupt {
            return self.mark_corrupt(id);
        }
        conn.prepare_cached(
            "UPDATE files SET size = ?2, mtime_ns = ?3, dev = ?4, ino = ?5,
                 digests = ?6, state = 'ok', present = 1, version = version + ?7,
                 last_verified = ?8, last_run = ?9, last_verdict = ?10,
                 first_run = ?11, missing_since = NULL, ctime_ns = ?12
             WHERE id = ?1",
        )
        .and_then(|mut st| {
            st.execute(params![
                id,
                seen.size as i64,
                seen.mtime_ns,
                seen.dev as i64,
                seen.ino as i64,
                seen.digests,
                i64::from(changed),
                self.now,
                self.run,
                verdict.name(),
                first_run,
                seen.ctime_ns
            ])
        })
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A registered file found corrupt: its registered digests and metadata stay (they are the
    /// reference), its state says corrupt until an audit reads it restored.
    pub(super) fn mark_corrupt(&self, id: i64) -> Result<()> {
        self.cat
            .conn
            .prepare_cached(
                "UPDATE files SET state = 'corrupt', present = 1, missing_since = NULL, last_run = ?2,
                     last_verdict = 'corrupt' WHERE id = ?1",
            )
            .and_then(|mut st| st.execute(params![id, self.run]))
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records an event at `at` (a directory id and a name); `other` is where a moved file was.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn event(
        &mut self,
        at: (i64, &[u8]),
        verdict: Verdict,
        meta: Option<(u64, i64)>,
        expected: Option<&[u8]>,
        actual: Option<&[u8]>,
        other: Option<(i64, &[u8])>,
        detail: Option<&str>,
    ) -> Result<()> {
        self.cat
            .conn
            .prepare_cached(
                "INSERT OR REPLACE INTO events(run, dir, name, state, size, mtime_ns, expected,
                     actual, other_dir, other_name, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    self.run,
                    at.0,
                    at.1,
                    verdict.name(),
                    meta.map(|m| m.0 as i64),
                    meta.map(|m| m.1),
                    expected,
                    actual,
                    other.map(|o| o.0),
                    other.map(|o| o.1),
                    detail
                ])
            })
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A file that could not be read: it keeps its registration (size, digests), and its state
    /// becomes `unreadable` (a corrupt file stays corrupt), so that reports list it under
    /// attention until an audit reads it whole again.
    pub fn record_unreadable(&mut self, root: usize, rel: &[u8], reason: &str) -> Result<()> {
        let rid = self.roots[root].0;
        let at = self.place(rid, rel)?;
        if self.mode == AuditMode::Full {
            self.cat
                .conn
                .prepare_cached(
                    "UPDATE files SET state = CASE state WHEN 'corrupt' THEN 'corrupt'
                         ELSE 'unreadable' END, present = 1, missing_since = NULL,
                         last_run = ?3, last_verdict = 'unreadable'
                     WHERE dir = ?1 AND name = ?2 AND state <> 'removed'",
                )
                .and_then(|mut st| st.execute(params![at.0, at.1, self.run]))
                .map_err(|e| self.err(e))?;
        }
        self.event(
            at,
            Verdict::Unreadable,
            None,
            None,
            None,
            None,
            Some(reason),
        )?;
        self.tick()
    }

    /// A file the walk found that was gone when it came to be read.
    pub fn record_gone(&mut self, root: usize, rel: &[u8]) -> Result<()> {
        let rid = self.roots[root].0;
        let (dir, name) = self.place(rid, rel)?;
        self.cat
            .conn
            .prepare_cached("UPDATE walk SET kind = 'gone' WHERE dir = ?1 AND name = ?2")
            .and_then(|mut st| st.execute(params![dir, name]))
            .map_err(|e| self.err(e))?;
        self.tick()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::tests::{Harness, events};

    /// A registered file read again: its content decides first (the same: ok, whatever its
    /// size and time); other content under the same size and time is corrupt, and with a size
    /// or time of its own modified, naming what changed; a file missing before is new again,
    /// saying whether its content is the registered one.
    #[test]
    fn a_file_read_again_is_judged_by_its_content_then_its_size_and_time() {
        let reg = (5, 100, &[1u8; 32][..]);
        let (same, other) = ([1u8; 32], [2u8; 32]);
        let said = |v: Verdict, d: &str| (v, Some(d.to_string()));
        assert_eq!(verdict_on(true, reg, 5, 100, &same), (Verdict::Ok, None));
        assert_eq!(verdict_on(true, reg, 6, 999, &same), (Verdict::Ok, None));
        assert_eq!(
            verdict_on(true, reg, 5, 100, &other),
            said(
                Verdict::Corrupt,
                "content changed but size and mtime did not"
            )
        );
        assert_eq!(
            verdict_on(true, reg, 6, 100, &other),
            said(Verdict::Modified, "size 5 -> 6")
        );
        assert_eq!(
            verdict_on(true, reg, 5, 101, &other),
            said(Verdict::Modified, "mtime changed")
        );
        assert_eq!(
            verdict_on(true, reg, 4, 101, &other),
            said(Verdict::Modified, "size 5 -> 4, mtime changed")
        );
        assert_eq!(
            verdict_on(false, reg, 5, 100, &same),
            said(
                Verdict::New,
                "back after being missing, with its registered content"
            )
        );
        assert_eq!(
            verdict_on(false, reg, 5, 100, &other),
            said(
                Verdict::New,
                "back after being missing, with different content (recorded as a new version)"
            )
        );
    }

    /// What a source expects is held in the algorithms read only, each digest given for one
    /// (several may be); a difference gives the reference to keep: the read's digests with
    /// the first expected one of each algorithm in its place.
    #[test]
    fn a_sources_digests_are_held_in_the_algorithms_read() {
        let read = vec![
            (Algorithm::Sha256, vec![1u8; 32]),
            (Algorithm::Md5, vec![2u8; 16]),
        ];
        let expect = |digests: &[(Algorithm, Vec<u8>)]| {
            differs_from(
                &read,
                Expected {
                    digests,
                    from: "the inventory",
                    fixed: None,
                },
            )
        };
        assert_eq!(expect(&[(Algorithm::Sha256, vec![1; 32])]), None);
        // An algorithm not read is no difference.
        assert_eq!(expect(&[(Algorithm::Sha512, vec![0; 64])]), None);
        assert_eq!(
            expect(&[
                (Algorithm::Sha256, vec![1; 32]),
                (Algorithm::Md5, vec![9; 16])
            ]),
            Some(vec![
                (Algorithm::Sha256, vec![1; 32]),
                (Algorithm::Md5, vec![9; 16])
            ])
        );
        // Two digests for one algorithm: each must hold; the first is the reference.
        assert_eq!(
            expect(&[
                (Algorithm::Sha256, vec![7; 32]),
                (Algorithm::Sha256, vec![1; 32])
            ]),
            Some(vec![
                (Algorithm::Sha256, vec![7; 32]),
                (Algorithm::Md5, vec![2; 16])
            ])
        );
        assert_eq!(
            expect(&[
                (Algorithm::Sha256, vec![1; 32]),
                (Algorithm::Sha256, vec![7; 32])
            ])
            .map(|r| r[0].1[0]),
            Some(1)
        );
    }

    /// Corrupt is said by every audit, the registered digests kept as the reference, until
    /// the content is as registered again: restored, naming the run it was corrupt since.
    #[test]
    fn a_corrupt_file_stays_corrupt_until_its_content_is_restored() {
        let mut h = Harness::new();
        let corrupt = Some("content changed but size and mtime did not");
        assert_eq!(
            h.full(&[("a", 5, 100, 1), ("b", 6, 100, 2)]),
            events(&[("a", Verdict::New, None), ("b", Verdict::New, None)])
        );
        for _ in 0..2 {
            assert_eq!(
                h.full(&[("a", 5, 100, 9), ("b", 6, 100, 2)]),
                events(&[("a", Verdict::Corrupt, corrupt)])
            );
            assert_eq!(h.row("a").2, vec![1; 32]);
            assert_eq!(h.row("a").3, "corrupt");
        }
        assert_eq!(
            h.full(&[("a", 5, 100, 1), ("b", 6, 100, 2)]),
            events(&[(
                "a",
                Verdict::Restored,
                Some("corrupt since run 2; its content is as registered again")
            )])
        );
        assert_eq!(h.row("a").3, "ok");
        assert_eq!(h.full(&[("a", 5, 100, 1), ("b", 6, 100, 2)]), events(&[]));
    }

    /// The same content under another time is ok, and the row takes the time; other content
    /// under another size and time is a new version, which the next audit holds it to.
    #[test]
    fn a_changed_file_is_a_new_version_and_the_same_content_takes_the_new_time() {
        let mut h = Harness::new();
        h.full(&[("a", 5, 100, 1)]);
        assert_eq!(h.full(&[("a", 5, 999, 1)]), events(&[]));
        assert_eq!(h.row("a"), (5, 999, vec![1; 32], "ok".into(), 1));
        assert_eq!(
            h.full(&[("a", 6, 1000, 3)]),
            events(&[("a", Verdict::Modified, Some("size 5 -> 6, mtime changed"))])
        );
        assert_eq!(h.row("a"), (6, 1000, vec![3; 32], "ok".into(), 2));
        assert_eq!(h.full(&[("a", 6, 1000, 3)]), events(&[]));
    }

    /// Digests agree over the algorithms both hold: a row registered before an algorithm was
    /// added (a prefix of what a read computes now) agrees with a read of the same content,
    /// and a difference in the algorithms it has is a difference.
    #[test]
    fn digests_agree_over_the_algorithms_both_hold() {
        let sha = [1u8; 32];
        let both = [[1u8; 32].as_slice(), [9u8; 16].as_slice()].concat();
        assert!(same_digests(&sha, &both));
        assert!(same_digests(&both, &both));
        let mut other = both.clone();
        other[0] = 2;
        assert!(!same_digests(&sha, &other));
        other[0] = 1;
        other[40] = 0;
        assert!(!same_digests(&both, &other));
        assert!(same_digests(&[], &[]));
        assert!(!same_digests(&[], &both));
    }
}
