//! Entries for files named relative to a root (a manifest's, a bag's, a catalog's), each
//! carrying its parent directory opened beneath the root, so that the reader opens it by its
//! name there without following a link: a directory or name swapped for a link while a run
//! goes on cannot make it read a file outside the root.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use trawl_read::{Parents, Refused, RootDir, stat_in};
use trawl_walk::FileEntry;

/// Builds [`FileEntry`]s beneath one root.
pub struct RelativeEntries {
    parents: Parents,
}

/// Why no entry was made for a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotBeneath {
    /// It leads outside the root (through `..` or a symbolic link).
    Outside,
    /// A directory on its way is missing (or is not one).
    Missing,
}

impl RelativeEntries {
    /// `root` must be a directory.
    pub fn open(root: &Path) -> std::io::Result<RelativeEntries> {
        Ok(RelativeEntries {
            parents: Parents::new(RootDir::open(root)?),
        })
    }

    /// The entry for `rel` as [`RelativeEntries::entry`] makes it, opened by the reader in one step
    /// from the root's descriptor (`openat2` beneath it, or the component walk): links on the
    /// way and the name itself, if a link, are followed only where they stay beneath the root,
    /// so a name swapped for one that leaves it is refused whenever it is swapped.
    pub fn entry_following_inside(
        &mut self,
        rel: &[u8],
        path: &Path,
        root: usize,
    ) -> Result<FileEntry, NotBeneath> {
        let mut e = self.entry(rel, path, root)?;
        let segs = trawl_read::plain_segments(rel).ok_or(NotBeneath::Outside)?;
        let at = self.parents.root().clone();
        e.dir = None;
        e.open = Some(trawl_walk::Opener(std::sync::Arc::new(move || {
            trawl_read::open_beneath_any(&at, segs.clone()).map_err(|r| match r {
                Refused::Outside => std::io::Error::other(
                    "leads outside the root through a symbolic link: not read",
                ),
                Refused::NotFound => std::io::Error::from(std::io::ErrorKind::NotFound),
            })
        })));
        Ok(e)
    }

    /// The directory holding `rel` (relative to the root), opened beneath the root, for an entry
    /// whose size and identity the caller has already (`path` must end in `rel`'s last
    /// component).
    pub fn dir_of(
        &mut self,
        rel: &[u8],
        path: &Path,
    ) -> Result<std::sync::Arc<std::fs::File>, NotBeneath> {
        let (dir, name) = self.parents.parent(rel).map_err(|r| match r {
            Refused::Outside => NotBeneath::Outside,
            Refused::NotFound => NotBeneath::Missing,
        })?;
        if path.file_name().map(|n| n.as_bytes()) != Some(&name[..]) {
            return Err(NotBeneath::Missing);
        }
        Ok(dir)
    }

    /// The entry for `rel` (relative to the root), with `path` as its name in messages and
    /// events (it must end in `rel`'s last component) and `root` as its root's index. Its size
    /// and identity are what `fstatat` finds now, without following a link (zeros if nothing
    /// is there: the reader then says it is gone).
    pub fn entry(&mut self, rel: &[u8], path: &Path, root: usize) -> Result<FileEntry, NotBeneath> {
        let dir = self.dir_of(rel, path)?;
        let name = path.file_name().map(|n| n.as_bytes()).unwrap_or_default();
        let (size, dev, ino, mtime_ns) = stat_in(&dir, name).unwrap_or_default();
        Ok(FileEntry {
            path: path.to_path_buf(),
            root,
            size,
            dev,
            ino,
            mtime_ns,
            dir: Some(dir),
            open: None,
        })
    }
}
