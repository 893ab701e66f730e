//! The catalog's fixity record, for a preservation record (PREMIS): its registered files with
//! their digests, and the checks of them it keeps, streamed one row at a time.
//!
//! What a catalog keeps of the checks: every verdict that is not plain ok, for every run (the
//! `events` table), and of the ok ones only each file's latest (its row's last run, verdict and
//! verification time: a file read ok in ten runs has one). Metadata-only runs read no content
//! and check no fixity: their verdicts are left out.

use std::io;

use trawl_report::{FixityCheck, FixityObject};

use crate::{Catalog, Result, split_digests};

/// The registered files (those dropped by `--forget-missing` aside), by root and path.
const OBJECTS: &str = "SELECT r.path, f.path, f.size, f.digests
    FROM file_paths f JOIN roots r ON r.id = f.root
    WHERE f.state <> 'removed' ORDER BY r.path, f.path";

/// The checks: the events of every run that read contents (or looked up the store's
/// checksums), at the run's start; then each file's latest ok read at its recorded time, where
/// no event of that run names it. In run order, then by path.
const CHECKS: &str = "SELECT e.run, ru.started, ru.mode, e.state, r.path, e.path, e.detail
    FROM event_paths e JOIN runs ru ON ru.id = e.run JOIN roots r ON r.id = e.root
    WHERE ru.mode <> 'metadata'
    UNION ALL
    SELECT f.last_run, f.last_verified, ru.mode, 'ok', r.path, f.path, NULL
    FROM file_paths f JOIN runs ru ON ru.id = f.last_run JOIN roots r ON r.id = f.root
    WHERE f.last_verdict = 'ok' AND f.last_verified IS NOT NULL AND ru.mode = 'full'
      AND NOT EXISTS (SELECT 1 FROM events x
                      WHERE x.run = f.last_run AND x.dir = f.dir AND x.name = f.name)
    ORDER BY 1, 5, 6";

/// A root's path and a path below it, joined with `/`, into `buf`.
fn whole_path(buf: &mut Vec<u8>, root: &[u8], rel: &[u8]) {
    buf.clear();
    buf.extend_from_slice(root);
    buf.push(b'/');
    buf.extend_from_slice(rel);
}

impl Catalog {
    /// Whether any file is registered (present or missing; not those `--forget-missing`
    /// dropped): whether [`Catalog::for_each_fixity_object`] has one to hand over.
    pub fn has_fixity_object(&self) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM files WHERE state <> 'removed')",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// Every registered file (present or missing; not those `--forget-missing` dropped) with
    /// its registered size and digests, by root and path. Stops at the first error `f`
    /// returns, and returns it.
    pub fn for_each_fixity_object(
        &self,
        f: &mut dyn FnMut(&FixityObject<'_>) -> io::Result<()>,
    ) -> Result<io::Result<()>> {
        let algs = self.algorithms()?;
        let mut st = self.conn.prepare(OBJECTS).map_err(|e| self.err(e))?;
        let mut rows = st.query([]).map_err(|e| self.err(e))?;
        let mut path = Vec::new();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let row = (|| -> rusqlite::Result<_> {
                let root = r.get_ref(0)?.as_blob()?;
                let rel = r.get_ref(1)?.as_blob()?;
                whole_path(&mut path, root, rel);
                Ok((r.get::<_, i64>(2)?, r.get_ref(3)?.as_blob()?.to_vec()))
            })();
            let (size, digests) = row.map_err(|e| self.err(e))?;
            let digests: Vec<(&'static str, Vec<u8>)> = split_digests(&algs, &digests)
                .into_iter()
                .map(|(a, d)| (a.name(), d))
                .collect();
            let object = FixityObject {
                path: &path,
                size: size as u64,
                digests: &digests,
            };
            if let Err(e) = f(&object) {
                return Ok(Err(e));
            }
        }
        Ok(Ok(()))
    }

    /// Every check the catalog keeps (see the module's words), in run order, then by path.
    /// Stops at the first error `f` returns, and returns it.
    pub fn for_each_fixity_check(
        &self,
        f: &mut dyn FnMut(&FixityCheck<'_>) -> io::Result<()>,
    ) -> Result<io::Result<()>> {
        let mut st = self.conn.prepare(CHECKS).map_err(|e| self.err(e))?;
        let mut rows = st.query([]).map_err(|e| self.err(e))?;
        let mut path = Vec::new();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let row = (|| -> rusqlite::Result<_> {
                let root = r.get_ref(4)?.as_blob()?;
                let rel = r.get_ref(5)?.as_blob()?;
                whole_path(&mut path, root, rel);
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(6)?,
                ))
            })();
            let (run, time, mode, verdict, detail) = row.map_err(|e| self.err(e))?;
            let check = FixityCheck {
                run,
                time,
                mode: &mode,
                verdict: &verdict,
                path: &path,
                detail: detail.as_deref(),
            };
            if let Err(e) = f(&check) {
                return Ok(Err(e));
            }
        }
        Ok(Ok(()))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;

    use trawl_digest::Algorithm;

    use crate::{AuditMode, Catalog};

    /// A file as a run finds it: its name below `/c`, its size, mtime and the byte its SHA-256
    /// digest is made of.
    pub(crate) type Found<'a> = (&'a str, u64, i64, u8);

    /// One run of `mode` over `found` (read in full in a full run), settled and sealed.
    pub(crate) fn run(cat: &mut Catalog, mode: AuditMode, found: &[Found<'_>]) {
        let mut a = cat
            .begin_audit(&[PathBuf::from("/c")], mode, &[Algorithm::Sha256], "", None)
            .unwrap();
        for (i, &(p, size, mtime, _)) in found.iter().enumerate() {
            a.walk_file(0, p.as_bytes(), size, mtime, 1, i as u64 + 1)
                .unwrap();
        }
        if mode == AuditMode::Full {
            for (i, &(p, size, mtime, content)) in found.iter().enumerate() {
                let digests = [(Algorithm::Sha256, vec![content; 32])];
                a.record_read(
                    0,
                    p.as_bytes(),
                    (size, mtime, 1, i as u64 + 1, None),
                    &digests,
                    None,
                )
                .unwrap();
            }
        }
        a.settle(true).unwrap();
        a.seal("complete").unwrap();
    }

    /// A collection audited four times: registered, read ok, one file corrupt, then checked by
    /// metadata only.
    pub(crate) fn four_runs() -> (Catalog, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let mut cat = Catalog::open(&dir.path().join("cat.db"), crate::OpenMode::Write).unwrap();
        let fine = [("a", 5, 10, 1), ("b", 7, 10, 2)];
        run(&mut cat, AuditMode::Full, &fine);
        run(&mut cat, AuditMode::Full, &fine);
        run(
            &mut cat,
            AuditMode::Full,
            &[("a", 5, 10, 9), ("b", 7, 10, 2)],
        );
        run(&mut cat, AuditMode::Metadata, &fine);
        (cat, dir)
    }

    /// The checks kept: each registration, the corruption, and b's latest ok read (run 3's,
    /// not run 2's); nothing of the metadata-only run. The objects: both files, a's digest the
    /// registered one.
    #[test]
    fn the_checks_kept_are_every_finding_and_each_files_latest_ok_read() {
        let (cat, _dir) = four_runs();
        let mut checks = Vec::new();
        cat.for_each_fixity_check(&mut |c| {
            let path = String::from_utf8(c.path.to_vec()).unwrap();
            checks.push((c.run, c.verdict.to_string(), path, c.mode.to_string()));
            Ok(())
        })
        .unwrap()
        .unwrap();
        let want = [
            (1, "new", "/c/a"),
            (1, "new", "/c/b"),
            (3, "corrupt", "/c/a"),
            (3, "ok", "/c/b"),
        ];
        let got: Vec<(i64, &str, &str)> = checks
            .iter()
            .map(|(r, v, p, _)| (*r, v.as_str(), p.as_str()))
            .collect();
        assert_eq!(got, want);
        assert!(checks.iter().all(|c| c.3 == "full"));
        let mut objects = Vec::new();
        cat.for_each_fixity_object(&mut |o| {
            objects.push((o.path.to_vec(), o.size, o.digests.to_vec()));
            Ok(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(objects.len(), 2);
        assert_eq!(
            objects[0],
            (b"/c/a".to_vec(), 5, vec![("sha256", vec![1; 32])])
        );
        // The callback's error stops the walk and comes back.
        let mut seen = 0;
        let r = cat.for_each_fixity_check(&mut |_| {
            seen += 1;
            Err(std::io::Error::other("full"))
        });
        assert!(r.unwrap().is_err());
        assert_eq!(seen, 1);
    }
}
