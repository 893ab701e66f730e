//! Where an output goes and how it gets there without clobbering anything: a regular file (or a
//! name not yet taken) appears only once completely written (temporary file in the same directory,
//! flushed, synced and renamed over the target on `commit`); a character device or FIFO is written
//! to directly as a stream, never replaced (a FIFO once a reader has it open, as a shell's `>`
//! waits for one; [`AtomicFile::create_until`] gives up that wait, and a write's wait for a
//! reader that does not read, when a stop is requested); a
//! symbolic link is followed and its destination gets the same rule; a block device, socket or
//! directory is refused. A crate of its own so that the crates that write files (bags, the
//! command line) need no renderer to do it.

// Unsafe code only in the FIFO's fcntl and poll calls (module `fifo`) and in tests (to make
// FIFOs).
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(unsafe_code))]

use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use trawl_stop::Stop;

mod fifo;

/// Why an output could not be created. Its words leave the path out, as an I/O error's do:
/// every caller names the output it was creating (`PATH: cannot create: …`); the path is in
/// the variant for the callers that match on it.
#[derive(Debug, thiserror::Error)]
pub enum AtomicError {
    /// The system's error: following links, looking at the target, opening it or creating the
    /// temporary file beside it.
    #[error("{source}")]
    Io {
        /// The output, as given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The target is a FIFO no reader opened before the stop given to
    /// [`AtomicFile::create_until`] was requested (a signal): nothing was written.
    #[error("no reader opened the FIFO before the run was stopped")]
    Stopped {
        /// The output, as given.
        path: PathBuf,
    },
    /// The target (links followed) is a kind of file that is never written: a directory, a
    /// block device, a socket.
    #[error("{kind}")]
    Refused {
        /// The output, as given.
        path: PathBuf,
        /// What it is.
        kind: Refused,
    },
}

impl AtomicError {
    /// The output, as given.
    pub fn path(&self) -> &Path {
        match self {
            AtomicError::Io { path, .. }
            | AtomicError::Stopped { path }
            | AtomicError::Refused { path, .. } => path,
        }
    }
}

/// A kind of target an output never replaces nor writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// A directory.
    #[error("is a directory")]
    Directory,
    /// A block device (writing one would overwrite a disk).
    #[error("is a block device; trawl never writes to one")]
    BlockDevice,
    /// A socket.
    #[error("is a socket")]
    Socket,
    /// Anything else that is neither a regular file, a character device nor a FIFO.
    #[error("is not a regular file")]
    Other,
}

impl Refused {
    /// The refusal for a file type that is neither a regular file, a character device nor a
    /// FIFO.
    fn of(ft: std::fs::FileType) -> Refused {
        if ft.is_dir() {
            Refused::Directory
        } else if ft.is_block_device() {
            Refused::BlockDevice
        } else if ft.is_socket() {
            Refused::Socket
        } else {
            Refused::Other
        }
    }
}

/// An output being written; see the module documentation for the rule per kind of target.
pub struct AtomicFile {
    /// The name the user gave.
    target: PathBuf,
    inner: Option<Dest>,
}

enum Dest {
    /// A temporary file renamed over `to` on commit.
    Replace {
        to: PathBuf,
        w: BufWriter<tempfile::NamedTempFile>,
    },
    /// A character device or FIFO, written in place.
    Stream(BufWriter<fifo::StreamFile>),
}

/// How many symbolic links are followed before giving up (as the kernel's ELOOP limit).
const MAX_LINKS: usize = 40;

/// Follows `target` through symbolic links to the name that would really be written. Done by
/// hand rather than with `canonicalize` because a link may point at a name that does not exist
/// yet, which is a valid output.
fn follow_links(target: &Path) -> io::Result<PathBuf> {
    let mut p = target.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = if to.is_absolute() {
                    to
                } else {
                    p.parent().unwrap_or(Path::new(".")).join(to)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::from_raw_os_error(libc::ELOOP))
}

impl AtomicFile {
    /// A temporary file beside `target` (links followed to the file they name), which becomes
    /// `target` on commit; a character device or FIFO written in place (a FIFO once a reader
    /// has it open, however long that takes); anything else refused.
    pub fn create(target: &Path) -> Result<AtomicFile, AtomicError> {
        Self::open(target, None)
    }

    /// As [`AtomicFile::create`], a FIFO waited for only until `stop` is requested
    /// ([`AtomicError::Stopped`] then), and its writes too (an error then, once a reader that
    /// does not read has filled the pipe): a signal that requests it ends the wait.
    pub fn create_until(target: &Path, stop: &Stop) -> Result<AtomicFile, AtomicError> {
        Self::open(target, Some(stop))
    }

    fn open(target: &Path, stop: Option<&Stop>) -> Result<AtomicFile, AtomicError> {
        let io = |source| AtomicError::Io {
            path: target.to_path_buf(),
            source,
        };
        let to = follow_links(target).map_err(io)?;
        let dest = match std::fs::symlink_metadata(&to) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Self::replace(to).map_err(io)?,
            Err(e) => return Err(io(e)),
            Ok(m) => {
                let ft = m.file_type();
                if ft.is_file() {
                    Self::replace(to).map_err(io)?
                } else if ft.is_char_device() || ft.is_fifo() {
                    let f = match (ft.is_fifo(), stop) {
                        (true, Some(stop)) => match fifo::open(&to, stop).map_err(io)? {
                            Some(f) => f,
                            None => {
                                return Err(AtomicError::Stopped {
                                    path: target.to_path_buf(),
                                });
                            }
                        },
                        _ => fifo::StreamFile::blocking(open_stream(&to, 0).map_err(io)?),
                    };
                    Dest::Stream(BufWriter::with_capacity(1 << 16, f))
                } else {
                    return Err(AtomicError::Refused {
                        path: target.to_path_buf(),
                        kind: Refused::of(ft),
                    });
                }
            }
        };
        Ok(AtomicFile {
            target: target.to_path_buf(),
            inner: Some(dest),
        })
    }

    fn replace(to: PathBuf) -> io::Result<Dest> {
        let dir = match to.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = to
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".trawl-tmp")
            // Opened here as tempfile opens it (a new file, 0600), so that a failure is the
            // system's error as it is, its number kept: tempfile's own wraps it, naming the
            // temporary file (the user named `to`, which the caller's message shows) and keeping
            // the number out of reach.
            .make_in(dir, |p| {
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(p)
            })?;
        // tempfile creates 0600; the finished file gets the usual 0666 less the umask.
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o666 & !umask()))?;
        Ok(Dest::Replace {
            to,
            w: BufWriter::with_capacity(1 << 16, tmp),
        })
    }

    /// The name the user gave.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Whether this output is written in place (a device or FIFO) rather than renamed into place.
    pub fn is_stream(&self) -> bool {
        matches!(self.inner, Some(Dest::Stream(_)))
    }

    fn file(&self) -> &std::fs::File {
        match self.inner.as_ref().expect("not yet committed") {
            Dest::Replace { w, .. } => w.get_ref().as_file(),
            Dest::Stream(w) => w.get_ref().file(),
        }
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self.inner.as_mut().expect("not yet committed") {
            Dest::Replace { w, .. } => w,
            Dest::Stream(w) => w,
        }
    }

    /// Device and inode of the file being written (so a scan can leave its own outputs out).
    pub fn identity(&self) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let md = self.inner.as_ref().and(self.file().metadata().ok())?;
        Some((md.dev(), md.ino()))
    }

    /// The file being written, with everything written so far flushed to it (for copies the
    /// kernel can do, such as `copy_file_range`).
    pub fn file_mut(&mut self) -> io::Result<&mut std::fs::File> {
        match self.inner.as_mut().expect("not yet committed") {
            Dest::Replace { w, .. } => {
                w.flush()?;
                Ok(w.get_mut().as_file_mut())
            }
            Dest::Stream(w) => {
                w.flush()?;
                w.get_mut().file_mut()
            }
        }
    }

    /// Flushes, syncs and renames into place (a stream is flushed only).
    pub fn commit(self) -> io::Result<()> {
        self.commit_with(true)
    }

    /// Flushes and renames into place; `sync`: first wait for the data to reach the disk (a
    /// crash after the rename then cannot leave an empty or partial file under the name).
    pub fn commit_with(mut self, sync: bool) -> io::Result<()> {
        match self.inner.take().expect("not yet committed") {
            Dest::Replace { to, w } => {
                let tmp = w.into_inner().map_err(|e| e.into_error())?;
                if sync {
                    tmp.as_file().sync_all()?;
                }
                tmp.persist(&to).map_err(|e| e.error)?;
            }
            Dest::Stream(w) => {
                w.into_inner().map_err(|e| e.into_error())?;
            }
        }
        Ok(())
    }
}

/// Opens a character device or FIFO for writing as it is, with `flags` added: no `O_CREAT`, no
/// `O_TRUNC`, the node never replaced.
pub(crate) fn open_stream(to: &Path, flags: i32) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOCTTY | flags)
        .open(to)
}

/// The process umask, read without changing it (Linux /proc; 022 if unavailable).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:").map(|v| v.trim().to_string()))
        })
        .and_then(|v| u32::from_str_radix(&v, 8).ok())
        .unwrap_or(0o022)
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_appears_until_commit_and_drop_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("out.txt");
        let mut f = AtomicFile::create(&t).unwrap();
        f.write_all(b"hello").unwrap();
        assert!(!t.exists());
        drop(f);
        assert!(!t.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut f = AtomicFile::create(&t).unwrap();
        f.write_all(b"hello").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&t).unwrap(), b"hello");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// A file that cannot be created fails with the system's error, its number kept, in words
    /// that name no temporary file.
    #[test]
    fn a_file_that_cannot_be_created_fails_with_the_systems_error() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("no-dir/out.txt");
        let e = AtomicFile::create(&target).err().unwrap();
        assert!(!e.to_string().contains("trawl-tmp"), "{e}");
        let AtomicError::Io { path, source } = e else {
            panic!("not an I/O error: {e:?}");
        };
        assert_eq!(path, target);
        assert_eq!(source.raw_os_error(), Some(libc::ENOENT));
    }

    /// A directory and a socket are refused as such, naming the output as given (a link to a
    /// directory is refused too); the words are the refusal's, without the path.
    #[test]
    fn a_directory_or_a_socket_is_refused_by_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        for (target, want) in [
            (dir.path().to_path_buf(), Refused::Directory),
            (link, Refused::Directory),
            (sock, Refused::Socket),
        ] {
            let e = AtomicFile::create(&target).err().unwrap();
            assert_eq!(e.path(), target);
            assert_eq!(e.to_string(), want.to_string());
            match e {
                AtomicError::Refused { path, kind } => {
                    assert_eq!((path, kind), (target, want));
                }
                e => panic!("not refused: {e:?}"),
            }
        }
    }

    #[test]
    fn a_symlink_is_kept_and_its_destination_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        let dest = dir.path().join("real/out.txt");
        std::fs::write(&dest, b"old").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("real/out.txt", &link).unwrap();
        let mut f = AtomicFile::create(&link).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
        // A dangling link names the file to create.
        std::os::unix::fs::symlink("real/fresh.txt", dir.path().join("dangling")).unwrap();
        let mut f = AtomicFile::create(&dir.path().join("dangling")).unwrap();
        f.write_all(b"x").unwrap();
        f.commit().unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("real/fresh.txt")).unwrap(),
            b"x"
        );
        // A loop is an error, not a hang.
        std::os::unix::fs::symlink("loop", dir.path().join("loop")).unwrap();
        assert!(AtomicFile::create(&dir.path().join("loop")).is_err());
    }

    fn mkfifo(dir: &Path) -> PathBuf {
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        fifo
    }

    /// A FIFO whose reader comes later is written once it does (writes block as a shell's
    /// would); one no reader opens gives up when the stop is requested, writing nothing.
    #[test]
    fn a_fifo_waits_for_its_reader_until_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = mkfifo(dir.path());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                std::fs::read(fifo).unwrap()
            })
        };
        let stop = Stop::new();
        let mut f = AtomicFile::create_until(&fifo, &stop).unwrap();
        let big = vec![7u8; 1 << 20];
        f.write_all(&big).unwrap();
        f.commit().unwrap();
        assert_eq!(reader.join().unwrap(), big);
        let stopper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                stop.request(trawl_stop::Reason::Signal(libc::SIGTERM));
            })
        };
        let e = AtomicFile::create_until(&fifo, &stop).err().unwrap();
        stopper.join().unwrap();
        assert!(
            matches!(&e, AtomicError::Stopped { path } if *path == fifo),
            "{e:?}"
        );
    }

    /// A write to a FIFO whose reader does not read waits for room until the stop is
    /// requested, then fails.
    #[test]
    fn a_write_to_a_reader_that_does_not_read_ends_when_stopped() {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = mkfifo(dir.path());
        let _idle = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let stop = Stop::new();
        let mut f = AtomicFile::create_until(&fifo, &stop).unwrap();
        let stopper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                stop.request(trawl_stop::Reason::Signal(libc::SIGTERM));
            })
        };
        let e = f.write_all(&vec![7u8; 1 << 20]).and_then(|()| f.flush());
        stopper.join().unwrap();
        assert!(e.is_err_and(|e| e.to_string().contains("stopped")));
    }

    #[test]
    fn a_fifo_is_written_in_place_and_a_directory_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = mkfifo(dir.path());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let mut f = AtomicFile::create(&fifo).unwrap();
        assert!(f.is_stream());
        f.write_all(b"through the pipe").unwrap();
        f.commit().unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        assert!(AtomicFile::create(dir.path()).is_err());
    }
}
