//! Opening a catalog: the file resolved, taken (created only where nothing is) and locked for a
//! writer, the files SQLite would apply beside it checked, and the schema prepared.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::catalog::sql;
use crate::error::SidecarFault;
use crate::{Catalog, CatalogError, Result, lock, schema};

/// How a catalog is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Take the exclusive lock (audits); a catalog is created only where no file exists.
    Write,
    /// As `Write`, and an existing empty file may be made a catalog (an explicit `--init`).
    Init,
    /// Must exist; no lock, no writes (report, history, export, verify).
    Read,
    /// Must exist; as `Write` otherwise (an upgrade of an older catalog).
    Upgrade,
}

/// Refuses to open a catalog beside which SQLite would find a write-ahead log, a rollback
/// journal or a shared-memory index that is not the catalog's own: a link, a file with other
/// names, or a file of another owner than the catalog's. SQLite applies a log it finds on the
/// next open, so whoever can write into the catalog's directory could otherwise change its
/// contents (or its schema) without touching the file.
fn check_sidecars(real: &Path, path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(owner) = std::fs::metadata(real).map(|m| m.uid()) else {
        return Ok(());
    };
    for suffix in ["-wal", "-journal", "-shm"] {
        let mut name = real.as_os_str().to_owned();
        name.push(suffix);
        let side = PathBuf::from(name);
        let m = match std::fs::symlink_metadata(&side) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(CatalogError::Io { path: side, source }),
        };
        let fault = if !m.file_type().is_file() {
            SidecarFault::NotRegular
        } else if m.uid() != owner {
            SidecarFault::Owner {
                uid: m.uid(),
                owner,
            }
        } else if m.nlink() > 1 {
            SidecarFault::Linked
        } else {
            continue;
        };
        return Err(CatalogError::Sidecar {
            path: side,
            catalog: path.into(),
            fault,
        });
    }
    Ok(())
}

/// The file a catalog named `path` is: its canonical name, or `path` itself where nothing is
/// yet and the mode may create it.
fn resolve(path: &Path, mode: OpenMode) -> Result<PathBuf> {
    match path.canonicalize() {
        Ok(p) => Ok(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if matches!(mode, OpenMode::Read | OpenMode::Upgrade) {
                return Err(CatalogError::Missing { path: path.into() });
            }
            Ok(path.to_path_buf())
        }
        Err(source) => Err(CatalogError::Io {
            path: path.into(),
            source,
        }),
    }
}

/// A writer's hold on the file `real` (named `path`): created where nothing is, opened, checked
/// to be a regular file and locked. Also whether the schema is to be created (a file made here,
/// or an empty one `Init` may make a catalog).
fn take(real: &Path, path: &Path, mode: OpenMode) -> Result<(lock::Lock, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| CatalogError::Io {
        path: path.into(),
        source,
    };
    // Create only where nothing exists (O_EXCL), so that "new" is known, not guessed.
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_CLOEXEC)
        .mode(0o666)
        .open(real);
    let created = match created {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(io(e)),
    };
    // Opened without following a link (`real` has none left) and without blocking.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(real)
        .map_err(io)?;
    let md = file.metadata().map_err(io)?;
    if !md.is_file() {
        return Err(CatalogError::NotRegular { path: path.into() });
    }
    let lock = lock::Lock::acquire(path, file)?;
    if !created && md.len() == 0 && mode != OpenMode::Init {
        return Err(CatalogError::Empty { path: path.into() });
    }
    Ok((lock, created || md.len() == 0))
}

/// SQLite's connection to `real` (named `path`), read-write for a writer.
fn connect(real: &Path, path: &Path, write: bool) -> Result<Connection> {
    let flags = if write {
        OpenFlags::SQLITE_OPEN_READ_WRITE
    } else {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(real, flags).map_err(|e| sql(path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| sql(path, e))?;
    Ok(conn)
}

impl Catalog {
    /// Opens the catalog at `path`. A symbolic link is resolved first, so that SQLite's
    /// write-ahead log and lock files sit beside the real file whatever name reached it. An
    /// existing file is never started over: it must be a trawl catalog (an empty file is
    /// refused unless the mode is `Init`).
    pub fn open(path: &Path, mode: OpenMode) -> Result<Catalog> {
        let real = resolve(path, mode)?;
        check_sidecars(&real, path)?;
        let write = mode != OpenMode::Read;
        let (lock, created) = match write {
            true => {
                let (lock, created) = take(&real, path, mode)?;
                (Some(lock), created)
            }
            false => {
                // A reader takes no lock, but a directory or a FIFO is no catalog either (SQLite
                // says "disk I/O error" of the one, and blocks for ever opening the other).
                let regular = std::fs::metadata(&real).is_ok_and(|m| m.is_file());
                if !regular {
                    return Err(CatalogError::NotRegular { path: path.into() });
                }
                (None, false)
            }
        };
        let mut cat = Catalog {
            conn: connect(&real, path, write)?,
            path: path.into(),
            upgraded_from: None,
            _lock: lock,
        };
        match schema::prepare(&mut cat.conn, path, write, created) {
            Ok(from) => cat.upgraded_from = from,
            Err(e) => {
                if created {
                    // Leave nothing behind for a catalog that never came to be.
                    drop(cat);
                    let _ = std::fs::remove_file(&real);
                }
                return Err(e);
            }
        }
        if write {
            // We hold the lock: a run still marked running belongs to a process that is gone.
            cat.conn
                .execute(
                    "UPDATE runs SET status = 'interrupted' WHERE status = 'running'",
                    [],
                )
                .map_err(|e| cat.err(e))?;
        }
        Ok(cat)
    }
}

#[cfg(test)]
mod tests;
