//! Every name below the path the user named, looked up one directory at a time from held
//! descriptors, never through a symbolic link: a directory swapped for a link while a storage
//! root is checked cannot lead a listing or a read outside it. Names stay bytes.

pub(crate) use trawl_read::Unread;
use trawl_read::{DirAt, EntryKind};

/// A directory entry's name, as its bytes: names are never decoded, so that two names that
/// differ only in bytes that are not UTF-8 stay two.
pub(crate) type Name = Vec<u8>;

/// What a directory entry is, never following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    /// A symbolic link, a FIFO, a device, a socket.
    Other,
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
}
