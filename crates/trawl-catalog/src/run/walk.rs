//! An audit's walk into the catalog's walk table: each item the source's walk hands over is
//! recorded as it comes, and a catalog error breaks the walk.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use trawl_report::ExcludedTally;
use trawl_scan::ScanConfig;
use trawl_stop::Stop;
use trawl_walk::{Excluded, ExcludedKind, FileEntry, SkipKind, WalkError, WalkItem};

use super::{AuditError, Notice, Step, rel, root_of};
use crate::audit::Audit;
use crate::source::{Source, SourceError};
use crate::{Catalog, CatalogError};

/// The files an audit leaves out as its own: the catalog's files, by identity and by name (a
/// walk done on another host may see other device numbers for the same files), and the
/// caller's outputs.
pub(super) struct Own {
    ids: Vec<(u64, u64)>,
    paths: Vec<PathBuf>,
}

impl Own {
    /// The catalog's own files, and the (device, inode) pairs `exclude` names.
    pub(super) fn of(cat: &Catalog, exclude: &[(u64, u64)]) -> Own {
        let mut ids = cat.own_files();
        ids.extend(exclude.iter().copied());
        Own {
            ids,
            paths: cat.own_paths(),
        }
    }

    /// Whether the walk's file `f` is one of them.
    fn holds(&self, f: &FileEntry) -> bool {
        self.ids.contains(&(f.dev, f.ino))
            || self
                .paths
                .iter()
                .any(|p| p.as_os_str() == f.path.as_os_str())
    }
}

/// The walk of one audit: where its items go, and what it tells on the way. A listing that
/// failed is recorded and makes `trouble`; what the user's rules left out is recorded (so that
/// none of it is called missing) and counted in `excluded`.
pub(super) struct Walk<'w, 'a> {
    audit: &'w mut Audit<'a>,
    roots: &'w [PathBuf],
    own: &'w Own,
    notice: &'w mut dyn FnMut(Notice<'_>),
    trouble: bool,
    excluded: ExcludedTally,
}

impl<'w, 'a> Walk<'w, 'a> {
    /// The walk of `roots` into `audit`, leaving out `own`, telling `notice`.
    pub(super) fn new(
        audit: &'w mut Audit<'a>,
        roots: &'w [PathBuf],
        own: &'w Own,
        notice: &'w mut dyn FnMut(Notice<'_>),
    ) -> Self {
        Walk {
            audit,
            roots,
            own,
            notice,
            trouble: false,
            excluded: ExcludedTally::default(),
        }
    }

    /// Walks the roots through `source`, recording every item; a catalog error ends it. Whether
    /// a listing failed, and what the user's rules left out.
    pub(super) fn run(
        mut self,
        source: &mut dyn Source,
        scan: &ScanConfig,
        stop: &Stop,
    ) -> Result<(bool, ExcludedTally), Step> {
        let roots = self.roots;
        let walked = source.walk(roots, &scan.walk, stop, &mut |item| match self.take(item) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        });
        match walked {
            Ok(()) => Ok((self.trouble, self.excluded)),
            Err(SourceError::Catalog(e)) => Err(Step::Fail(e.into())),
            Err(SourceError::Failed(why)) => Err(Step::Interrupt(AuditError::Source(why))),
        }
    }

    /// Records one item of the walk.
    fn take(&mut self, item: WalkItem) -> Result<(), CatalogError> {
        match item {
            WalkItem::File(f) => {
                if self.own.holds(&f) {
                    return Ok(());
                }
                let r = rel(&f.path, &self.roots[f.root]);
                self.audit
                    .walk_file(f.root, r, f.size, f.mtime_ns, f.dev, f.ino)
            }
            WalkItem::Skipped { path, kind } => self.skipped(&path, kind),
            WalkItem::Error(e) => self.failed(&e),
            WalkItem::Excluded(x) => self.left_out(&x),
        }
    }

    /// Something not a regular file: named (unless a symbolic link) and recorded as what it is.
    fn skipped(&mut self, path: &Path, kind: SkipKind) -> Result<(), CatalogError> {
        let Some(root) = root_of(self.roots, path) else {
            return Ok(());
        };
        if kind != SkipKind::Symlink {
            (self.notice)(Notice::Skipped { path, kind });
        }
        let k = if kind == SkipKind::Symlink {
            "symlink"
        } else {
            "special"
        };
        self.audit.walk_other(root, rel(path, &self.roots[root]), k)
    }

    /// A listing that failed: named, and recorded (the files under it are not called missing).
    fn failed(&mut self, e: &WalkError) -> Result<(), CatalogError> {
        self.trouble = true;
        (self.notice)(Notice::Failed(e));
        if let Some(p) = e.path()
            && let Some(root) = root_of(self.roots, p)
        {
            let r = rel(p, &self.roots[root]);
            self.audit.walk_other(root, r, "dirfail")?;
            self.audit.record_unreadable(root, r, &e.to_string())?;
        }
        Ok(())
    }

    /// What the user's rules left out: recorded and counted.
    fn left_out(&mut self, x: &Excluded) -> Result<(), CatalogError> {
        let root = x.root;
        if root >= self.roots.len() {
            return Ok(());
        }
        let directory = x.kind == ExcludedKind::Directory;
        self.audit
            .walk_excluded(root, rel(&x.path, &self.roots[root]), directory)?;
        self.excluded.add(
            &x.path,
            x.kind.name(),
            x.size,
            x.why.pattern(),
            x.why.holds(),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, dev: u64, ino: u64) -> FileEntry {
        FileEntry {
            path: path.into(),
            root: 0,
            size: 0,
            dev,
            ino,
            mtime_ns: 0,
            dir: None,
            open: None,
        }
    }

    /// The catalog's own files are known by identity (device and inode) and by name, so that
    /// a walk that sees other device numbers still leaves them out; nothing else is.
    #[test]
    fn own_files_are_known_by_identity_or_by_name() {
        let own = Own {
            ids: vec![(1, 7)],
            paths: vec!["/c/cat.db".into(), "/c/cat.db-wal".into()],
        };
        assert!(own.holds(&entry("/c/other", 1, 7)));
        assert!(own.holds(&entry("/c/cat.db-wal", 9, 9)));
        assert!(!own.holds(&entry("/c/cat.db-journal", 1, 8)));
        assert!(!own.holds(&entry("/c/cat.dbx", 2, 7)));
    }
}
