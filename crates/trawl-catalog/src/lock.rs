//! The writer's lock: an exclusive `flock` on the catalog file itself, held for the life of the
//! process. It belongs to the file (its inode), not to a name, so a second audit reaching the same
//! catalog through a symbolic or hard link is kept out just the same. The kernel drops it when the
//! process dies (even by `kill -9`), so nothing stale ever blocks anyone; a live holder's pid is
//! read from `/proc/locks` and named in the error. (`flock` and SQLite's own `fcntl` locks do
//! not interact on Linux.)

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::{CatalogError, Result};

/// The lock that keeps a second audit out of a catalog, held until dropped.
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Takes the lock on the open catalog file `file` (named `path` in errors).
    pub fn acquire(path: &Path, file: File) -> Result<Lock> {
        // SAFETY: flock on a descriptor we own.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(CatalogError::InUse {
                    path: path.into(),
                    pid: file
                        .metadata()
                        .ok()
                        .and_then(|m| flock_holder(&m))
                        .unwrap_or_else(|| "?".into()),
                });
            }
            return Err(CatalogError::Io {
                path: path.into(),
                source: err,
            });
        }
        Ok(Lock { _file: file })
    }

    /// The pid holding the writer's lock on `catalog`, if a live process holds it.
    pub fn holder(catalog: &Path) -> Option<String> {
        let file = File::open(catalog).ok()?;
        // A shared, non-blocking probe: fails only while a writer holds it.
        // SAFETY: flock on a descriptor we own; released when `file` closes.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
        if r == 0 {
            return None;
        }
        Some(
            file.metadata()
                .ok()
                .and_then(|m| flock_holder(&m))
                .unwrap_or_else(|| "?".into()),
        )
    }
}

/// The pid of an exclusive `flock` on the file `md` describes, from `/proc/locks` (lines such as
/// `1: FLOCK  ADVISORY  WRITE 4242 00:2a:123456 0 EOF`).
fn flock_holder(md: &std::fs::Metadata) -> Option<String> {
    let dev = md.dev();
    let want = format!(
        "{:02x}:{:02x}:{}",
        libc::major(dev),
        libc::minor(dev),
        md.ino()
    );
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // A blocked waiter's line has "->" after the number; holders do not.
        (f.len() >= 6 && f[1] == "FLOCK" && f[3] == "WRITE" && f[5] == want)
            .then(|| f[4].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second writer is refused while the first holds the lock, naming this process as the
    /// holder; once the first lets go, the next one takes it.
    #[test]
    fn a_second_writer_is_refused_naming_the_holder_until_the_first_lets_go() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("c.db");
        std::fs::write(&path, b"").unwrap();
        let first = Lock::acquire(&path, File::open(&path).unwrap()).unwrap();
        match Lock::acquire(&path, File::open(&path).unwrap()) {
            Err(CatalogError::InUse { path: p, pid }) => {
                assert_eq!(p, path);
                assert!(pid == std::process::id().to_string() || pid == "?", "{pid}");
            }
            other => panic!("not refused: {:?}", other.map(|_| ())),
        }
        assert!(Lock::holder(&path).is_some());
        drop(first);
        assert_eq!(Lock::holder(&path), None);
        let _again = Lock::acquire(&path, File::open(&path).unwrap()).unwrap();
    }
}
