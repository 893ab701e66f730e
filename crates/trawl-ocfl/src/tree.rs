//! Where a storage root or object is read from: [`OcflTree`] and its directories
//! ([`OcflDir`]), what validation asks of a directory on disk ([`DiskTree`]) or of objects under
//! a prefix of a store. On disk every name below the path the user named is looked up one
//! directory at a time from held descriptors, never through a symbolic link: a directory
//! swapped for a link while a storage root is checked cannot lead a listing or a read outside
//! it. Names stay bytes.

use std::path::{Path, PathBuf};

pub use trawl_read::Unread;
use trawl_read::{DirAt, EntryKind};
use trawl_scan::{Links, LocalRoots, Source};

/// A directory entry's name, as its bytes: names are never decoded, so that two names that
/// differ only in bytes that are not UTF-8 stay two.
pub type Name = Vec<u8>;

/// What a directory entry is, never following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file (an object, in a store).
    File,
    /// A directory (a common prefix, in a store).
    Dir,
    /// A symbolic link, a FIFO, a device, a socket; in a store, a key that is no plain name
    /// (an empty, `.` or `..` segment, a NUL, not UTF-8 once decoded). Never followed or read.
    Other,
}

/// A storage root, object or storage hierarchy's directory as validation reads it, wherever
/// it is: one directory at a time, nothing followed.
pub trait OcflTree: Sync {
    /// The path as reports name it (a directory's path as the user named it, `s3://B/P`);
    /// each object's path is this joined with its name below.
    fn shown(&self) -> &Path;

    /// The top directory, opened.
    fn top(&self) -> std::io::Result<Box<dyn OcflDir>>;

    /// The version a storage root above the top declares (`0=ocfl_1.x`), when one does: the
    /// top is then part of its hierarchy.
    fn enclosing_root(&self) -> Option<String>;

    /// Where content is read from: root 0 is the top, each file named by its path below it.
    fn source(&self) -> &dyn Source;
}

/// One directory of an [`OcflTree`]. Every `rel` is names below it joined by `/`.
pub trait OcflDir: Send + Sync {
    /// The directory `rel` (empty: this one), each step refusing what is no directory: a
    /// link ([`Unread::Link`]), a file ([`Unread::NotFile`]), nothing ([`Unread::Missing`]).
    fn open(&self, rel: &[u8]) -> Result<Box<dyn OcflDir>, Unread>;

    /// Its entries, sorted by name (as bytes), without following links.
    fn list(&self) -> std::io::Result<Vec<(Name, Kind)>>;

    /// What `rel` is, not following a link anywhere; `None` if nothing is there (or a link
    /// is on the way).
    fn kind_of(&self, rel: &[u8]) -> Option<Kind>;

    /// The bytes of the regular file `rel`, not through a link, refused past `cap` by its
    /// size before anything is read ([`Unread::TooLarge`]).
    fn read_small(&self, rel: &[u8], cap: u64) -> Result<Vec<u8>, Unread>;
}

/// A directory on disk, as the user named it (through a link, if they named one).
pub(crate) struct DiskTree {
    path: PathBuf,
    source: LocalRoots,
}

impl DiskTree {
    pub(crate) fn new(path: &Path) -> DiskTree {
        DiskTree {
            path: path.to_path_buf(),
            // Each content file opened by its name in its directory, that directory opened
            // beneath the top.
            source: LocalRoots::new(vec![path.to_path_buf()], Links::Beneath),
        }
    }
}

impl OcflTree for DiskTree {
    fn shown(&self) -> &Path {
        &self.path
    }

    fn top(&self) -> std::io::Result<Box<dyn OcflDir>> {
        Ok(Box::new(DirAt::open(&self.path)?))
    }

    fn enclosing_root(&self) -> Option<String> {
        crate::root::enclosing_root(&self.path).map(|(_, v)| v)
    }

    fn source(&self) -> &dyn Source {
        &self.source
    }
}

impl OcflDir for DirAt {
    fn open(&self, rel: &[u8]) -> Result<Box<dyn OcflDir>, Unread> {
        Ok(Box::new(open_rel(self, rel)?))
    }

    fn list(&self) -> std::io::Result<Vec<(Name, Kind)>> {
        list(self)
    }

    fn kind_of(&self, rel: &[u8]) -> Option<Kind> {
        kind_of(self, rel)
    }

    fn read_small(&self, rel: &[u8], cap: u64) -> Result<Vec<u8>, Unread> {
        read_small(self, rel, cap)
    }
}

fn unread(e: std::io::Error) -> Unread {
    match e.raw_os_error() {
        Some(libc::ELOOP) => Unread::Link,
        Some(libc::ENOENT) => Unread::Missing,
        _ => Unread::Io(e),
    }
}

/// `a/b` of two relative names (`b` alone when `a` is empty).
pub(crate) fn join(a: &[u8], b: &[u8]) -> Name {
    if a.is_empty() {
        return b.to_vec();
    }
    let mut out = Vec::with_capacity(a.len() + 1 + b.len());
    out.extend_from_slice(a);
    out.push(b'/');
    out.extend_from_slice(b);
    out
}

/// The directory `rel` (names separated by `/`; empty: `dir` itself) below `dir`, each step
/// refusing a link.
pub(crate) fn open_rel(dir: &DirAt, rel: &[u8]) -> Result<DirAt, Unread> {
    let mut segs = rel.split(|&b| b == b'/').filter(|s| !s.is_empty());
    let Some(first) = segs.next() else {
        return dir.try_clone().map_err(Unread::Io);
    };
    let mut at = step(dir, first)?;
    for s in segs {
        at = step(&at, s)?;
    }
    Ok(at)
}

fn step(dir: &DirAt, name: &[u8]) -> Result<DirAt, Unread> {
    dir.dir(name).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOTDIR) if matches!(dir.kind(name), Ok(Some(EntryKind::Symlink))) => {
            Unread::Link
        }
        Some(libc::ENOTDIR) => Unread::NotFile,
        _ => unread(e),
    })
}

/// A directory's entries, sorted by name (as bytes), without following links.
pub(crate) fn list(dir: &DirAt) -> std::io::Result<Vec<(Name, Kind)>> {
    let mut out: Vec<(Name, Kind)> = dir
        .entries()?
        .into_iter()
        .map(|(name, k)| {
            let kind = match k {
                EntryKind::File => Kind::File,
                EntryKind::Dir => Kind::Dir,
                _ => Kind::Other,
            };
            (name, kind)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// What `rel` below `dir` is, not following a link anywhere; `None` if nothing is there (or
/// a link is on the way).
pub(crate) fn kind_of(dir: &DirAt, rel: &[u8]) -> Option<Kind> {
    let (parent, name) = split(rel);
    let d = open_rel(dir, parent).ok()?;
    match d.kind(name).ok()?? {
        EntryKind::File => Some(Kind::File),
        EntryKind::Dir => Some(Kind::Dir),
        _ => Some(Kind::Other),
    }
}

fn split(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&[], rel),
    }
}

/// The bytes of the regular file `rel` below `dir`, not through a link, never waiting on a
/// FIFO, refused past `cap` by its size before anything is read.
pub(crate) fn read_small(dir: &DirAt, rel: &[u8], cap: u64) -> Result<Vec<u8>, Unread> {
    let (parent, name) = split(rel);
    if parent.is_empty() {
        return dir.read(name, cap);
    }
    open_rel(dir, parent)?.read(name, cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_below_the_top_is_reached_through_a_link() {
        let t = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        std::fs::write(t.path().join("a/b/f"), b"in").unwrap();
        std::fs::create_dir_all(out.path().join("b")).unwrap();
        std::fs::write(out.path().join("b/f"), b"out").unwrap();
        std::os::unix::fs::symlink(out.path(), t.path().join("l")).unwrap();
        let top = DirAt::open(t.path()).unwrap();
        assert_eq!(read_small(&top, b"a/b/f", 10).unwrap(), b"in");
        assert!(matches!(read_small(&top, b"l/b/f", 10), Err(Unread::Link)));
        assert!(matches!(open_rel(&top, b"l/b"), Err(Unread::Link)));
        assert!(matches!(
            read_small(&top, b"a/nope", 10),
            Err(Unread::Missing)
        ));
        assert!(matches!(read_small(&top, b"a/b", 10), Err(Unread::NotFile)));
        assert!(matches!(
            read_small(&top, b"a/b/f", 1),
            Err(Unread::TooLarge(1))
        ));
        assert_eq!(kind_of(&top, b"l"), Some(Kind::Other));
        assert_eq!(kind_of(&top, b"l/b/f"), None);
        assert_eq!(kind_of(&top, b"a/b/f"), Some(Kind::File));
        let names: Vec<Name> = list(&top).unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, [b"a".to_vec(), b"l".to_vec()]);
    }

    /// The disk's side of the seam: a tree's top and its directories answer as the functions
    /// above do (no link followed, a file or nothing no directory), and a directory below a
    /// storage root is said to be in its hierarchy.
    #[test]
    fn a_disk_tree_answers_through_the_seam_as_its_directories_do() {
        let t = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("0=ocfl_1.0"), b"ocfl_1.0\n").unwrap();
        std::fs::create_dir_all(t.path().join("h/o/v1")).unwrap();
        std::fs::write(t.path().join("h/o/v1/inventory.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(out.path(), t.path().join("h/l")).unwrap();
        let tree = DiskTree::new(&t.path().join("h"));
        assert_eq!(tree.shown(), t.path().join("h"));
        assert_eq!(tree.enclosing_root().as_deref(), Some("1.0"));
        assert_eq!(DiskTree::new(t.path()).enclosing_root(), None);
        let top = tree.top().unwrap();
        assert_eq!(
            top.list().unwrap(),
            [(b"l".to_vec(), Kind::Other), (b"o".to_vec(), Kind::Dir)]
        );
        assert!(matches!(top.open(b"l"), Err(Unread::Link)));
        assert!(matches!(
            top.open(b"o/v1/inventory.json"),
            Err(Unread::NotFile)
        ));
        assert!(matches!(top.open(b"o/nope"), Err(Unread::Missing)));
        let o = top.open(b"o").unwrap();
        assert_eq!(o.kind_of(b"v1/inventory.json"), Some(Kind::File));
        assert_eq!(o.kind_of(b"v1"), Some(Kind::Dir));
        assert_eq!(o.read_small(b"v1/inventory.json", 2).unwrap(), b"{}");
        assert!(matches!(
            o.read_small(b"v1/inventory.json", 1),
            Err(Unread::TooLarge(1))
        ));
        assert!(matches!(o.open(b".."), Err(Unread::Io(_))));
    }
}
