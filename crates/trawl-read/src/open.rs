//! Opening a file for reading without changing it and without ever blocking on a FIFO or device.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::ReadError;

/// What identifies a file's state: compared before and after reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Size in bytes.
    pub size: u64,
    /// Modification time: seconds since the epoch.
    pub mtime_sec: i64,
    /// And nanoseconds.
    pub mtime_nsec: i64,
    /// Inode number.
    pub ino: u64,
    /// Device.
    pub dev: u64,
    /// Status change time (ctime), nanoseconds since the epoch: set by the kernel on every
    /// change to the inode, its contents included, and never settable from user space.
    pub ctime_ns: i64,
}

impl Stamp {
    /// The stamp of `md`.
    pub fn of(md: &std::fs::Metadata) -> Stamp {
        Stamp {
            size: md.len(),
            mtime_sec: md.mtime(),
            mtime_nsec: md.mtime_nsec(),
            ino: md.ino(),
            dev: md.dev(),
            ctime_ns: md
                .ctime()
                .wrapping_mul(1_000_000_000)
                .wrapping_add(md.ctime_nsec()),
        }
    }
}

/// A regular file as [`look`] finds it, without opening it.
#[derive(Debug, Clone, Copy)]
pub struct Looked {
    /// Its size, times and identity.
    pub stamp: Stamp,
    /// Names of its inode.
    pub nlink: u64,
    /// Bytes it takes on disk (`st_blocks` x 512).
    pub disk_bytes: u64,
}

/// What the file a reader would open is now, without opening it: by its name alone in `dir`
/// without following a link (as [`open_for_read_in`] opens it), else by its path following
/// links. None unless it is a regular file that could be looked at (the reader then says why).
pub fn look(dir: Option<&File>, path: &Path) -> Option<Looked> {
    use std::os::unix::ffi::OsStrExt;
    let md = match dir.zip(path.file_name()) {
        Some((d, n)) => return crate::beneath::stat_at(d, n.as_bytes()),
        None => std::fs::metadata(path).ok()?,
    };
    md.is_file().then(|| Looked {
        stamp: Stamp::of(&md),
        nlink: md.nlink(),
        disk_bytes: md.blocks() * 512,
    })
}

/// An open regular file and its state when opened.
pub struct OpenedFile {
    /// The file, open for reading.
    pub file: File,
    /// Its path as given.
    pub path: PathBuf,
    /// What it was when opened.
    pub stamp: Stamp,
    /// Names the inode had when opened (more than 1: hard links).
    pub nlink: u64,
    /// Bytes the file takes on disk when opened (`st_blocks` x 512).
    pub disk_bytes: u64,
}

/// Files up to this size get no read-ahead advice (they are read in one call).
const SMALL_FILE: u64 = 256 << 10;

/// Opens `path` read-only with `O_NOATIME` where permitted (so the scan changes nothing, not even
/// access times) and `O_NONBLOCK` (so that a file replaced by a FIFO after the walk cannot block us),
/// then checks with `fstat` that it is a regular file, and asks for sequential read-ahead.
pub fn open_for_read(path: &Path) -> Result<OpenedFile, ReadError> {
    open_for_read_in(None, path)
}

/// [`open_for_read`], by the file's name alone in `dir` when it is given: `dir` is the directory
/// `path` was listed from, so the kernel looks up one name instead of every component of the
/// path (a tenth of the cost of a small file).
pub fn open_for_read_in(dir: Option<&File>, path: &Path) -> Result<OpenedFile, ReadError> {
    let name = dir.zip(path.file_name());
    let open = |flags: i32| open_in(dir, path, flags);
    let file = match open(libc::O_NOATIME) {
        Ok(f) => f,
        // O_NOATIME is allowed only to the file's owner (or CAP_FOWNER).
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            open(0).map_err(|e| open_err(path, e))?
        }
        Err(e) if name.is_some() && e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ReadError::NotRegular {
                path: path.to_path_buf(),
                what: "symbolic link",
            });
        }
        Err(e) => return Err(open_err(path, e)),
    };
    opened(file, path)
}

/// Opens `path` read-only, never blocking (`O_NONBLOCK`: a name replaced by a FIFO since it was
/// listed cannot hang the caller), with `flags` besides: by its name alone in `dir` where it is
/// given, never through a link (a name swapped for a link after the listing is refused, not
/// followed), by its path otherwise. No checks: [`open_for_read_in`] makes them.
pub fn open_in(dir: Option<&File>, path: &Path, flags: i32) -> std::io::Result<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    match dir.zip(path.file_name()) {
        Some((d, n)) => crate::beneath::open_at(
            d.as_raw_fd(),
            n.as_bytes(),
            flags | libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
        .map(File::from),
        None => std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path),
    }
}

/// Reads a small input whole (a settings file handed over by another program): opened as
/// [`open_for_read`] opens a file (never waiting on a FIFO, a regular file only), and refused
/// past `cap` bytes, by its size before anything is read and by what a read finds after.
pub fn read_whole(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let f = open_for_read(path)?;
    let too_large = |size| ReadError::TooLarge {
        path: path.to_path_buf(),
        size,
        cap,
    };
    if f.stamp.size > cap {
        return Err(too_large(f.stamp.size));
    }
    let mut v = Vec::new();
    (&f.file)
        .take(cap + 1)
        .read_to_end(&mut v)
        .map_err(|e| ReadError::Read {
            path: path.to_path_buf(),
            source: e,
        })?;
    if v.len() as u64 > cap {
        return Err(too_large(v.len() as u64));
    }
    Ok(v)
}

/// [`open_for_read`] for a file its caller opened (read-only, `O_NONBLOCK`): the same checks,
/// the same read-ahead advice; an error to open it is reported for `path` (a name found to lead
/// outside its root, [`LeadsOutside`](crate::LeadsOutside), as [`ReadError::Outside`]).
pub fn open_for_read_with(
    file: std::io::Result<File>,
    path: &Path,
) -> Result<OpenedFile, ReadError> {
    match file {
        Ok(f) => opened(f, path),
        Err(e) if crate::LeadsOutside::is(&e) => Err(ReadError::Outside {
            path: path.to_path_buf(),
        }),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            what: "symbolic link",
        }),
        Err(e) => Err(open_err(path, e)),
    }
}

/// What every open goes through: `fstat`, a regular file only, read-ahead for a large one.
fn opened(file: File, path: &Path) -> Result<OpenedFile, ReadError> {
    let md = file.metadata().map_err(|e| ReadError::Read {
        path: path.to_path_buf(),
        source: e,
    })?;
    let ft = md.file_type();
    if !ft.is_file() {
        let what = if ft.is_fifo() {
            "FIFO (named pipe)"
        } else if ft.is_socket() {
            "socket"
        } else if ft.is_block_device() {
            "block device"
        } else if ft.is_char_device() {
            "character device"
        } else if ft.is_dir() {
            "directory"
        } else {
            "not a regular file"
        };
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            what,
        });
    }
    // Read-ahead advice pays only for a file that takes several reads (a buffer is 1 MiB at
    // least 4 KiB); a small file is one read, and the advice one more system call.
    if md.len() > SMALL_FILE {
        // SAFETY: plain advisory syscall on a valid descriptor; failure is harmless.
        unsafe {
            use std::os::fd::AsRawFd;
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
        }
    }
    Ok(OpenedFile {
        file,
        path: path.to_path_buf(),
        stamp: Stamp::of(&md),
        nlink: md.nlink(),
        disk_bytes: md.blocks() * 512,
    })
}

fn open_err(path: &Path, e: std::io::Error) -> ReadError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ReadError::Vanished {
            path: path.to_path_buf(),
        }
    } else {
        ReadError::Open {
            path: path.to_path_buf(),
            source: e,
        }
    }
}

impl OpenedFile {
    /// Checks, after the last byte was read, that the file is as it was when opened and that
    /// exactly `bytes_read` bytes were in it.
    pub fn check_unchanged(&self, bytes_read: u64) -> Result<(), ReadError> {
        let md = self.file.metadata().map_err(|e| ReadError::Read {
            path: self.path.clone(),
            source: e,
        })?;
        let now = Stamp::of(&md);
        let changed = |detail: String| {
            Err(ReadError::Changed {
                path: self.path.clone(),
                detail,
            })
        };
        if bytes_read != self.stamp.size {
            return changed(format!(
                "size was {} when opened, {} bytes were read",
                self.stamp.size, bytes_read
            ));
        }
        if now.size != self.stamp.size {
            return changed(format!(
                "size went from {} to {}",
                self.stamp.size, now.size
            ));
        }
        if (now.mtime_sec, now.mtime_nsec) != (self.stamp.mtime_sec, self.stamp.mtime_nsec) {
            return changed("modification time changed".to_string());
        }
        Ok(())
    }
}
