//! An open catalog and what it says about itself: its path, algorithms, roots and own files.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};
use trawl_digest::Algorithm;

use crate::{CatalogError, Result};

/// An open catalog.
pub struct Catalog {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
    /// The schema version this open upgraded the catalog from.
    pub(crate) upgraded_from: Option<i64>,
    pub(crate) _lock: Option<crate::lock::Lock>,
}

impl Catalog {
    /// The catalog's path as opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version this open upgraded the catalog from (None: it was current).
    pub fn upgraded_from(&self) -> Option<i64> {
        self.upgraded_from
    }

    pub(crate) fn err(&self, e: rusqlite::Error) -> CatalogError {
        sql(&self.path, e)
    }

    /// The algorithms this catalog records, primary first; empty before the first audit.
    pub fn algorithms(&self) -> Result<Vec<Algorithm>> {
        let v: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'algorithms'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        match v {
            None => Ok(Vec::new()),
            Some(s) => trawl_digest::parse_list(&s).map_err(|source| CatalogError::Algorithms {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// Fixes the algorithms of a new catalog.
    pub fn set_algorithms(&mut self, algs: &[Algorithm]) -> Result<()> {
        let s = algs.iter().map(|a| a.name()).collect::<Vec<_>>().join(",");
        self.conn
            .execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('algorithms', ?1)",
                [s],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The (dev, ino) of the catalog's own files, so that an audit of a tree holding the catalog
    /// leaves them out.
    pub fn own_files(&self) -> Vec<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        self.own_paths()
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|md| (md.dev(), md.ino()))
            .collect()
    }

    /// The canonical names of the catalog's own files (the database and its journals), whether
    /// they exist yet or not.
    pub fn own_paths(&self) -> Vec<PathBuf> {
        let real = self
            .path
            .canonicalize()
            .unwrap_or_else(|_| self.path.clone());
        ["", "-wal", "-shm", "-journal"]
            .iter()
            .map(|suffix| {
                let mut p = real.clone().into_os_string();
                p.push(suffix);
                PathBuf::from(p)
            })
            .collect()
    }

    /// The registered roots, by id.
    pub fn roots(&self) -> Result<Vec<(i64, PathBuf)>> {
        use std::os::unix::ffi::OsStringExt;
        let mut st = self
            .conn
            .prepare("SELECT id, path FROM roots ORDER BY id")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    PathBuf::from(std::ffi::OsString::from_vec(r.get::<_, Vec<u8>>(1)?)),
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// How many files are registered under these roots (exactly these root paths).
    pub fn files_under(&self, roots: &[PathBuf]) -> Result<i64> {
        let mut n = 0;
        for (id, path) in self.roots()? {
            if roots.contains(&path) {
                n += self
                    .conn
                    .query_row(
                        "SELECT count(*) FROM files f JOIN dirs d ON d.id = f.dir WHERE d.root = ?1",
                        [id],
                        |r| r.get::<_, i64>(0),
                    )
                    .map_err(|e| self.err(e))?;
            }
        }
        Ok(n)
    }

    /// The catalog's schema version as stored (this trawl's, or 2 for a schema-2 catalog
    /// opened to be read).
    pub fn schema_version(&self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// The SQLite connection (read-only questions beyond this crate's).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

/// SQLite's error `e`, naming the catalog at `path`.
pub(crate) fn sql(path: &Path, e: rusqlite::Error) -> CatalogError {
    CatalogError::Sqlite {
        path: path.into(),
        source: e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OpenMode;

    /// A list of algorithms in the catalog that names one this trawl does not know is an
    /// error of its own, naming the catalog and the name.
    #[test]
    fn an_unknown_algorithm_in_the_catalog_is_named() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("cat.db");
        let cat = Catalog::open(&p, OpenMode::Write).unwrap();
        cat.conn
            .execute(
                "INSERT INTO meta(key, value) VALUES ('algorithms', 'sha256,nosuch')",
                [],
            )
            .unwrap();
        match cat.algorithms() {
            Err(CatalogError::Algorithms { path, source }) => {
                assert_eq!(path, p);
                assert!(source.to_string().contains("nosuch"), "{source}");
            }
            other => panic!("{:?}", other.map_err(|e| e.to_string())),
        }
    }
}
