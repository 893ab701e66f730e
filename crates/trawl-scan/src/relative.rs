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
                Refused::Outside => trawl_read::LeadsOutside.into_io(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, symlink};

    /// A root with `sub/f` (5 bytes), a link `out` to a directory outside it and a link `in`
    /// to `sub` inside it.
    fn fixture() -> (tempfile::TempDir, std::path::PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir(t.path().join("outside")).unwrap();
        std::fs::write(root.join("sub/f"), b"12345").unwrap();
        std::fs::write(t.path().join("outside/f"), b"secret").unwrap();
        symlink(t.path().join("outside"), root.join("out")).unwrap();
        symlink("sub", root.join("in")).unwrap();
        (t, root)
    }

    #[test]
    fn an_entry_beneath_the_root_has_the_files_size_and_identity() {
        let (_t, root) = fixture();
        let mut r = RelativeEntries::open(&root).unwrap();
        let e = r.entry(b"sub/f", Path::new("x/sub/f"), 3).unwrap();
        let md = std::fs::metadata(root.join("sub/f")).unwrap();
        assert_eq!((e.size, e.dev, e.ino, e.root), (5, md.dev(), md.ino(), 3));
        assert_eq!(e.path, Path::new("x/sub/f"), "named as the caller names it");
        // A name whose directory is missing, or a path that does not end in the name.
        assert_eq!(
            r.entry(b"nope/f", Path::new("nope/f"), 0).unwrap_err(),
            NotBeneath::Missing
        );
        assert_eq!(
            r.entry(b"sub/f", Path::new("sub/g"), 0).unwrap_err(),
            NotBeneath::Missing
        );
    }

    #[test]
    fn a_name_that_leaves_the_root_gets_no_entry() {
        let (_t, root) = fixture();
        let mut r = RelativeEntries::open(&root).unwrap();
        for rel in [&b"../outside/f"[..], b"out/f", b"/etc/passwd"] {
            let path = Path::new(std::ffi::OsStr::from_bytes(rel));
            assert_eq!(
                r.entry(rel, path, 0).unwrap_err(),
                NotBeneath::Outside,
                "{path:?}"
            );
        }
        // A link that stays inside is followed.
        assert_eq!(r.entry(b"in/f", Path::new("in/f"), 0).unwrap().size, 5);
    }

    #[test]
    fn a_following_entry_opens_only_what_stays_beneath() {
        let (_t, root) = fixture();
        let mut r = RelativeEntries::open(&root).unwrap();
        let e = r
            .entry_following_inside(b"sub/f", Path::new("sub/f"), 0)
            .unwrap();
        let open = e.open.as_ref().unwrap().0.clone();
        let mut s = String::new();
        use std::io::Read;
        open().unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "12345");
        // `sub/f` swapped for a link out of the root after the entry was made: refused.
        std::fs::remove_file(root.join("sub/f")).unwrap();
        symlink(root.join("../outside/f"), root.join("sub/f")).unwrap();
        let err = open().unwrap_err();
        assert!(err.to_string().contains("leads outside the root"), "{err}");
        // The reader tells it by its type: its own error, naming the file.
        let Err(err) = trawl_read::open_for_read_with(open(), Path::new("sub/f")) else {
            panic!("opened outside the root");
        };
        assert!(
            matches!(&err, trawl_read::ReadError::Outside { path } if path == Path::new("sub/f")),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "sub/f: cannot open: leads outside the root through a symbolic link: not read"
        );
    }
}
