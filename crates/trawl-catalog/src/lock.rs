//! The writer's lock: `CATALOG.lock` beside the catalog, held with `flock` for the life of the
//! process and holding its pid. The kernel drops the lock when the process dies (even by
//! `kill -9`), so a stale lock file never blocks anyone; a live holder is named in the error.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::{CatalogError, Result};

pub struct Lock {
    _file: File,
}

pub fn lock_path(catalog: &Path) -> PathBuf {
    let mut p = catalog.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

impl Lock {
    pub fn acquire(catalog: &Path) -> Result<Lock> {
        let path = lock_path(catalog);
        let io = |source| CatalogError::Io {
            path: path.clone(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        // SAFETY: flock on a descriptor we own.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut s = String::new();
                let _ = file.read_to_string(&mut s);
                let pid = s.trim();
                return Err(CatalogError::InUse {
                    path: catalog.into(),
                    pid: if pid.is_empty() {
                        "?".into()
                    } else {
                        pid.into()
                    },
                });
            }
            return Err(io(err));
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(Lock { _file: file })
    }

    /// The pid holding the lock on `catalog`, if a live process holds it.
    pub fn holder(catalog: &Path) -> Option<String> {
        let path = lock_path(catalog);
        let mut file = File::open(&path).ok()?;
        // A shared, non-blocking probe: fails only while a writer holds it.
        // SAFETY: flock on a descriptor we own; released when `file` closes.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
        if r == 0 {
            return None;
        }
        let mut s = String::new();
        let _ = file.read_to_string(&mut s);
        Some(s.trim().to_string())
    }
}
