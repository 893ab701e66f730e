//! Names inside one held directory: open, stat, unlink, rename and read relative to the
//! directory's descriptor, one plain name at a time, never following a symbolic link. For code
//! that changes a tree others may write into (`bag recover`): a name swapped for a link, or a
//! directory swapped for a link to another, cannot redirect an unlink or a rename elsewhere.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What a name inside a [`DirAt`] is, as `fstatat(AT_SYMLINK_NOFOLLOW)` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// Anything else.
    Other,
}

/// Why [`DirAt::read`] (or a read through directories held open) read nothing.
#[derive(Debug, thiserror::Error)]
pub enum Unread {
    /// Nothing there.
    #[error("not there")]
    Missing,
    /// A symbolic link, on the way or at the end: not followed.
    #[error("a symbolic link: not followed")]
    Link,
    /// A directory, FIFO, device or socket.
    #[error("not a regular file: not read")]
    NotFile,
    /// Over the cap given (bytes).
    #[error("larger than {} MiB: not read", .0 >> 20)]
    TooLarge(u64),
    /// The system refused.
    #[error("{0}")]
    Io(io::Error),
}

/// For callers that answer `io::Result`: the system's own error as itself, a missing file as
/// `NotFound`, any other refusal carried typed (`get_ref()` downcasts to [`Unread`]).
impl From<Unread> for io::Error {
    fn from(u: Unread) -> io::Error {
        match u {
            Unread::Io(e) => e,
            Unread::Missing => io::Error::from(io::ErrorKind::NotFound),
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}

/// A directory held open; every operation takes one plain name in it.
pub struct DirAt {
    fd: OwnedFd,
}

/// A plain name: one component, not empty, `.` or `..`, no `/` or NUL.
pub fn is_plain_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

fn plain(name: &[u8]) -> io::Result<CString> {
    if !is_plain_name(name) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "'{}' is not a plain name in one directory",
                String::from_utf8_lossy(name)
            ),
        ));
    }
    CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl DirAt {
    /// Opens the directory the user named (`path` may pass through links: it is theirs).
    pub fn open(path: &Path) -> io::Result<DirAt> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: openat with a valid C string; the descriptor is owned below.
        let fd = unsafe {
            libc::openat(
                libc::AT_FDCWD,
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        check(fd)?;
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(DirAt { fd })
    }

    /// The directory `dir` is a descriptor of (an `O_PATH` one from
    /// [`crate::open_dir_beneath`], say), opened again to be listed: `openat(dir, ".")` resolves
    /// nothing but the directory itself.
    pub fn reopen(dir: &impl AsRawFd) -> io::Result<DirAt> {
        // SAFETY: as in `open`: a valid descriptor and a static C string.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c".".as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        check(fd)?;
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(DirAt { fd })
    }

    /// A second handle on the same directory.
    pub fn try_clone(&self) -> io::Result<DirAt> {
        Ok(DirAt {
            fd: self.fd.try_clone()?,
        })
    }

    /// Opens the subdirectory `name`, refusing a symbolic link (`ELOOP`/`ENOTDIR`).
    pub fn dir(&self, name: &[u8]) -> io::Result<DirAt> {
        let c = plain(name)?;
        // SAFETY: as in `open`.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        check(fd)?;
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(DirAt { fd })
    }

    /// What `name` is, not following a link; `None` if nothing is there.
    pub fn kind(&self, name: &[u8]) -> io::Result<Option<Kind>> {
        let c = plain(name)?;
        // SAFETY: stat is plain data, filled by the call.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid descriptor, C string and out-pointer.
        let r = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT) => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            _ => Kind::Other,
        }))
    }

    /// Makes the directory `name` (mode 0777 less the umask).
    pub fn mkdir(&self, name: &[u8]) -> io::Result<()> {
        let c = plain(name)?;
        // SAFETY: valid descriptor and C string.
        check(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) })
    }

    /// Removes the non-directory `name` (a link is removed, never what it points to).
    pub fn unlink(&self, name: &[u8]) -> io::Result<()> {
        let c = plain(name)?;
        // SAFETY: valid descriptor and C string.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) })
    }

    /// Removes the empty directory `name`.
    pub fn rmdir(&self, name: &[u8]) -> io::Result<()> {
        let c = plain(name)?;
        // SAFETY: valid descriptor and C string.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) })
    }

    /// Renames `name` here to `to_name` in `to`, refusing to replace anything there
    /// (`RENAME_NOREPLACE`); a link is moved as a link.
    pub fn rename(&self, name: &[u8], to: &DirAt, to_name: &[u8]) -> io::Result<()> {
        let a = plain(name)?;
        let b = plain(to_name)?;
        // SAFETY: valid descriptors and C strings.
        check(unsafe {
            libc::renameat2(
                self.fd.as_raw_fd(),
                a.as_ptr(),
                to.fd.as_raw_fd(),
                b.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        })
    }

    /// Opens `name` to read, not following a link (`ELOOP` for one) and never waiting on a
    /// FIFO; whatever it is, for the caller's `fstat` to judge.
    pub fn open_file(&self, name: &[u8]) -> io::Result<File> {
        let c = plain(name)?;
        // SAFETY: as in `open`.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY
                    | libc::O_NOFOLLOW
                    | libc::O_NONBLOCK
                    | libc::O_NOCTTY
                    | libc::O_CLOEXEC,
            )
        };
        check(fd)?;
        // SAFETY: a fresh descriptor nobody else owns.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Reads the regular file `name` whole, not following a link, not waiting on a FIFO, and
    /// refusing one over `cap` bytes, by its size before anything is read.
    pub fn read(&self, name: &[u8], cap: u64) -> Result<Vec<u8>, Unread> {
        let f = self.open_file(name).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Unread::Link,
            Some(libc::ENOENT) => Unread::Missing,
            _ => Unread::Io(e),
        })?;
        let m = f.metadata().map_err(Unread::Io)?;
        if !m.is_file() {
            return Err(Unread::NotFile);
        }
        if m.len() > cap {
            return Err(Unread::TooLarge(cap));
        }
        let mut v = Vec::new();
        f.take(cap + 1).read_to_end(&mut v).map_err(Unread::Io)?;
        if v.len() as u64 > cap {
            return Err(Unread::TooLarge(cap));
        }
        Ok(v)
    }

    /// The entries of this directory (`.` and `..` left out) with what each is, from the
    /// listing's own type where the file system gives one (else `fstatat`, not following a
    /// link); an entry gone since the listing is left out.
    pub fn entries(&self) -> io::Result<Vec<(Vec<u8>, Kind)>> {
        let mut out = Vec::new();
        for (name, t) in self.listing()? {
            let kind = match t {
                libc::DT_REG => Kind::File,
                libc::DT_DIR => Kind::Dir,
                libc::DT_LNK => Kind::Symlink,
                libc::DT_UNKNOWN => match self.kind(&name)? {
                    Some(k) => k,
                    None => continue,
                },
                _ => Kind::Other,
            };
            out.push((name, kind));
        }
        Ok(out)
    }

    /// The names in this directory (`.` and `..` left out).
    pub fn names(&self) -> io::Result<Vec<Vec<u8>>> {
        Ok(self.listing()?.into_iter().map(|(n, _)| n).collect())
    }

    /// The names in this directory with their `d_type`.
    fn listing(&self) -> io::Result<Vec<(Vec<u8>, u8)>> {
        // Through /proc/self/fd would depend on /proc: read the directory from a duplicate
        // descriptor instead (fdopendir takes ownership of what it is given).
        let dup = self.fd.try_clone()?;
        // SAFETY: dup is a valid directory descriptor; fdopendir owns it from here on.
        let d = unsafe { libc::fdopendir(dup.as_raw_fd()) };
        if d.is_null() {
            return Err(io::Error::last_os_error());
        }
        std::mem::forget(dup);
        // SAFETY: d is a valid stream; rewind so a second listing starts from the top.
        unsafe { libc::rewinddir(d) };
        let mut out = Vec::new();
        loop {
            // SAFETY: d is valid; readdir returns null at the end (or on error, errno set).
            let e = unsafe { libc::readdir(d) };
            if e.is_null() {
                break;
            }
            // SAFETY: d_name is a NUL-terminated array within the entry.
            let name = unsafe { std::ffi::CStr::from_ptr((*e).d_name.as_ptr()) }.to_bytes();
            if name != b"." && name != b".." {
                // SAFETY: e points at a valid entry until the next readdir.
                out.push((name.to_vec(), unsafe { (*e).d_type }));
            }
        }
        // SAFETY: d is valid and closed once (closing the duplicated descriptor).
        unsafe { libc::closedir(d) };
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_follows_a_link() {
        let t = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("victim"), b"v").unwrap();
        std::os::unix::fs::symlink(out.path(), t.path().join("x")).unwrap();
        std::os::unix::fs::symlink(out.path().join("victim"), t.path().join("l")).unwrap();
        let d = DirAt::open(t.path()).unwrap();
        assert_eq!(d.kind(b"x").unwrap(), Some(Kind::Symlink));
        assert!(d.dir(b"x").is_err(), "a linked directory is refused");
        assert!(d.read(b"l", 10).is_err(), "a linked file is refused");
        d.unlink(b"l").unwrap();
        assert!(
            out.path().join("victim").exists(),
            "the link went, not its target"
        );
        assert!(d.unlink(b"../victim").is_err());
        assert!(d.unlink(b"x/victim").is_err());
        assert!(out.path().join("victim").exists());
        let mut names = d.names().unwrap();
        names.sort();
        assert_eq!(names, [b"x".to_vec()]);
    }
}
